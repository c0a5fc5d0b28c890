// Kernel looping of a layer of several kernels (compiler/model/kernel_looping.py,
// cost_model.settle_loops). Each layer is two products, the second contracting
// over the first's output features; on a 1,152-byte SRAM (Inputs/loop-small-sram.toml)
// rdu-fuse cannot hold both weights and no tile loop runs through both, so @layer
// is two kernels. Its three calls are a candidate loop whose body is the two
// kernels in order, each loading its configuration every iteration. The input is
// the stack as rdu-outline-layers outlines it (three calls of @layer), with the target set.
// RUN: sed -e 's|TARGET|%S/Inputs/loop-small-sram.toml|' %s | rducc-opt -p 'rdu-fuse{level=2},rdu-merge-maps,rdu-tile,rdu-place-tiers,rdu-insert-dma,rdu-sram-alloc' > %t
// RUN: filecheck %s --check-prefix=IR < %t
// RUN: rducc-run --simulate --ranges %t | filecheck %s

// IR: func.func @forward(
// IR-COUNT-3: func.call @layer(
// IR: func.func private @layer(
// IR: tier.compute "k0"
// IR: tier.compute "k1"
// IR-NOT: tier.compute

// A configuration load costs a launch (sn40l's reconfigure_s, 1 us): a later
// iteration saves each kernel's DMA start-up and pays its load in place of its
// launch, so the loop pays. The later calls' kernels are launched no more
// (2 + 2 x 2 = 6 kernels, 4 launches saved).
// CHECK: cost model: target loop-small-sram, 6 kernels
// CHECK: layer[0].k0
// CHECK: layer[2].k1
// CHECK: modeled time      7.08 us
// CHECK: kernel looping    3 calls of @layer as one loop: 4 launches saved (0.80 us of launch and DMA start-up, less 2 configuration loads an iteration)
// The units cannot hold the two configurations side by side (compiler/model/shared_configuration.py):
// CHECK-SAME: ; not one configuration: its 2 configurations need 4 PCUs and 12 PMUs at once, more than target loop-small-sram's 1040 and 9

// Invalid as a loop: at the top of reconfigure_s's range (20 us) the loads cost
// more than the launches they replace and the calls run one by one, 7.88 us (the
// 7.08 us with the 0.80 us the loop saved paid back; looped at 20 us a load it
// would be 7.08 + 4 x 19 us); at its low (0.2 us) the 4 loads cost 3.2 us less.
// CHECK: tornado: modeled time (us)
// CHECK: reconfigure_s 2e-07 2e-05 3.87845 7.879

builtin.module attributes {rdu.level = #rdu<level graph>, rdu.target = "TARGET"} {
  func.func @forward(%x: tensor<4x16xf32> {rdu.input = "x"}, %u0: tensor<16x16xf32> {rdu.input = "u0"}, %d0: tensor<16x16xf32> {rdu.input = "d0"}, %u1: tensor<16x16xf32> {rdu.input = "u1"}, %d1: tensor<16x16xf32> {rdu.input = "d1"}, %u2: tensor<16x16xf32> {rdu.input = "u2"}, %d2: tensor<16x16xf32> {rdu.input = "d2"}) -> tensor<4x16xf32> {
    %h0 = func.call @layer(%x, %u0, %d0) {rdu.layer = "layers.0"} : (tensor<4x16xf32>, tensor<16x16xf32>, tensor<16x16xf32>) -> tensor<4x16xf32>
    %h1 = func.call @layer(%h0, %u1, %d1) {rdu.layer = "layers.1"} : (tensor<4x16xf32>, tensor<16x16xf32>, tensor<16x16xf32>) -> tensor<4x16xf32>
    %h2 = func.call @layer(%h1, %u2, %d2) {rdu.layer = "layers.2"} : (tensor<4x16xf32>, tensor<16x16xf32>, tensor<16x16xf32>) -> tensor<4x16xf32>
    func.return %h2 : tensor<4x16xf32>
  }
  func.func private @layer(%x: tensor<4x16xf32> {rdu.input = "x"}, %u0: tensor<16x16xf32> {rdu.input = "u0"}, %d0: tensor<16x16xf32> {rdu.input = "d0"}) -> tensor<4x16xf32> attributes {rdu.outlined_from = "layers.0", rdu.calls = 3 : i64} {
    %n0 = rdu.map %x {rdu.layer = "layers.0"} : (tensor<4x16xf32>) -> tensor<4x16xf32> {
    ^bb0(%a: f32):
      %m = arith.mulf %a, %a : f32
      rdu.yield %m : f32
    }
    %p0 = rdu.matmul %n0, %u0 transpose_rhs {rdu.layer = "layers.0"} : tensor<4x16xf32>, tensor<16x16xf32> -> tensor<4x16xf32>
    %q0 = rdu.matmul %p0, %d0 transpose_rhs {rdu.layer = "layers.0"} : tensor<4x16xf32>, tensor<16x16xf32> -> tensor<4x16xf32>
    %h0 = rdu.map %x, %q0 {rdu.layer = "layers.0"} : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32> {
    ^bb0(%a: f32, %b: f32):
      %s = arith.addf %a, %b : f32
      rdu.yield %s : f32
    }
    func.return %h0 : tensor<4x16xf32>
  }
}

