// RUN: rducc-opt --check-roundtrip --split-input-file -p rdu-outline-layers %s | filecheck %s
// RUN: rducc-opt --split-input-file -p 'rdu-canonicalize,rdu-outline-layers,cse,rdu-fuse{level=2},rdu-merge-maps,rdu-tile,rdu-place-tiers,rdu-insert-dma,rdu-sram-alloc' %s | filecheck %s --check-prefix=LOWERED
// RUN: rducc-opt --check-roundtrip --split-input-file -p 'rdu-outline-layers{target="%S/Inputs/fabric-one-pmu.toml"},cse,rdu-fuse{level=2 target="%S/Inputs/fabric-one-pmu.toml"}' %s | filecheck %s --check-prefix=FEW

// Layer periods: layers of two kinds that alternate (sliding-window and global
// attention, every k-th layer without rotary), no op marked with a layer. The
// period of the ops is a group of layers: here kind A (a squaring norm) then
// kind B (a negating one), each followed by its matmul and residual add. The
// group is one @layer holding both kinds, called once per period (3 calls for
// 6 layers), each call reading the residual stream of the one before it (the
// carried value kernel looping loops over).
builtin.module attributes {rdu.level = #rdu<level graph>} {
  func.func @forward(%x: tensor<4x8xf32> {rdu.input = "x"}, %w0: tensor<8x8xf32> {rdu.input = "w0"}, %w1: tensor<8x8xf32> {rdu.input = "w1"}, %w2: tensor<8x8xf32> {rdu.input = "w2"}, %w3: tensor<8x8xf32> {rdu.input = "w3"}, %w4: tensor<8x8xf32> {rdu.input = "w4"}, %w5: tensor<8x8xf32> {rdu.input = "w5"}) -> tensor<4x8xf32> {
    %n0 = rdu.map %x : (tensor<4x8xf32>) -> tensor<4x8xf32> {
    ^bb0(%a: f32):
      %m = arith.mulf %a, %a : f32
      rdu.yield %m : f32
    }
    %mm0 = rdu.matmul %n0, %w0 transpose_rhs : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32>
    %h0 = rdu.map %x, %mm0 : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32> {
    ^bb0(%a: f32, %b: f32):
      %s = arith.addf %a, %b : f32
      rdu.yield %s : f32
    }
    %n1 = rdu.map %h0 : (tensor<4x8xf32>) -> tensor<4x8xf32> {
    ^bb0(%a: f32):
      %m = arith.negf %a : f32
      rdu.yield %m : f32
    }
    %mm1 = rdu.matmul %n1, %w1 transpose_rhs : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32>
    %h1 = rdu.map %h0, %mm1 : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32> {
    ^bb0(%a: f32, %b: f32):
      %s = arith.addf %a, %b : f32
      rdu.yield %s : f32
    }
    %n2 = rdu.map %h1 : (tensor<4x8xf32>) -> tensor<4x8xf32> {
    ^bb0(%a: f32):
      %m = arith.mulf %a, %a : f32
      rdu.yield %m : f32
    }
    %mm2 = rdu.matmul %n2, %w2 transpose_rhs : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32>
    %h2 = rdu.map %h1, %mm2 : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32> {
    ^bb0(%a: f32, %b: f32):
      %s = arith.addf %a, %b : f32
      rdu.yield %s : f32
    }
    %n3 = rdu.map %h2 : (tensor<4x8xf32>) -> tensor<4x8xf32> {
    ^bb0(%a: f32):
      %m = arith.negf %a : f32
      rdu.yield %m : f32
    }
    %mm3 = rdu.matmul %n3, %w3 transpose_rhs : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32>
    %h3 = rdu.map %h2, %mm3 : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32> {
    ^bb0(%a: f32, %b: f32):
      %s = arith.addf %a, %b : f32
      rdu.yield %s : f32
    }
    %n4 = rdu.map %h3 : (tensor<4x8xf32>) -> tensor<4x8xf32> {
    ^bb0(%a: f32):
      %m = arith.mulf %a, %a : f32
      rdu.yield %m : f32
    }
    %mm4 = rdu.matmul %n4, %w4 transpose_rhs : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32>
    %h4 = rdu.map %h3, %mm4 : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32> {
    ^bb0(%a: f32, %b: f32):
      %s = arith.addf %a, %b : f32
      rdu.yield %s : f32
    }
    %n5 = rdu.map %h4 : (tensor<4x8xf32>) -> tensor<4x8xf32> {
    ^bb0(%a: f32):
      %m = arith.negf %a : f32
      rdu.yield %m : f32
    }
    %mm5 = rdu.matmul %n5, %w5 transpose_rhs : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32>
    %h5 = rdu.map %h4, %mm5 : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32> {
    ^bb0(%a: f32, %b: f32):
      %s = arith.addf %a, %b : f32
      rdu.yield %s : f32
    }
    func.return %h5 : tensor<4x8xf32>
  }
}
// CHECK-LABEL: func.func @forward
// CHECK-NEXT:    %h1 = func.call @layer(%x, %w0, %w1) {rdu.layer = "layers.0"}
// CHECK-NEXT:    %h3 = func.call @layer(%h1, %w2, %w3) {rdu.layer = "layers.1"}
// CHECK-NEXT:    %h5 = func.call @layer(%h3, %w4, %w5) {rdu.layer = "layers.2"}
// CHECK-NEXT:    func.return %h5
// CHECK:       func.func private @layer({{.*}}) -> tensor<4x8xf32> attributes {rdu.outlined_from = "layers.0", rdu.calls = 3 : i64}
// CHECK:         arith.mulf
// CHECK:         %mm0 = rdu.matmul
// CHECK:         arith.negf
// CHECK:         %mm1 = rdu.matmul
// CHECK:         func.return %h1

// On a target whose fuser cuts the period into several kernels (one PMU: each
// op its own), the period is still one @layer, called once a period: a period
// is found by structure, whatever number of kernels it lowers to (a callee of
// several kernels loops as a body of its kernels).
// FEW-LABEL: func.func @forward
// FEW-NEXT:    %h1 = func.call @layer(%x, %w0, %w1) {rdu.layer = "layers.0"}
// FEW-NEXT:    %h3 = func.call @layer(%h1, %w2, %w3) {rdu.layer = "layers.1"}
// FEW-NEXT:    %h5 = func.call @layer(%h3, %w4, %w5) {rdu.layer = "layers.2"}
// FEW-NEXT:    func.return %h5
// FEW:       func.func private @layer({{.*}}) -> tensor<4x8xf32> attributes {rdu.outlined_from = "layers.0", rdu.calls = 3 : i64}
// FEW-COUNT-4: rdu.kernel
// FEW:         func.return %h1
// FEW-NOT:     func.func private @layer_1

// Lowered: one kernel a period, called three times in a row (what kernel looping loops).
// LOWERED-LABEL: func.func @forward
// LOWERED-COUNT-3: func.call @layer
// LOWERED:       func.func private @layer
// LOWERED-COUNT-1: tier.compute
// LOWERED-NOT:   tier.compute
// LOWERED:       func.return

// -----

// Every third layer different (A A B): period 3, two calls for six layers.
builtin.module attributes {rdu.level = #rdu<level graph>} {
  func.func @forward(%x: tensor<4x8xf32> {rdu.input = "x"}, %w0: tensor<8x8xf32> {rdu.input = "w0"}, %w1: tensor<8x8xf32> {rdu.input = "w1"}, %w2: tensor<8x8xf32> {rdu.input = "w2"}, %w3: tensor<8x8xf32> {rdu.input = "w3"}, %w4: tensor<8x8xf32> {rdu.input = "w4"}, %w5: tensor<8x8xf32> {rdu.input = "w5"}) -> tensor<4x8xf32> {
    %n0 = rdu.map %x : (tensor<4x8xf32>) -> tensor<4x8xf32> {
    ^bb0(%a: f32):
      %m = arith.mulf %a, %a : f32
      rdu.yield %m : f32
    }
    %mm0 = rdu.matmul %n0, %w0 transpose_rhs : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32>
    %h0 = rdu.map %x, %mm0 : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32> {
    ^bb0(%a: f32, %b: f32):
      %s = arith.addf %a, %b : f32
      rdu.yield %s : f32
    }
    %n1 = rdu.map %h0 : (tensor<4x8xf32>) -> tensor<4x8xf32> {
    ^bb0(%a: f32):
      %m = arith.mulf %a, %a : f32
      rdu.yield %m : f32
    }
    %mm1 = rdu.matmul %n1, %w1 transpose_rhs : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32>
    %h1 = rdu.map %h0, %mm1 : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32> {
    ^bb0(%a: f32, %b: f32):
      %s = arith.addf %a, %b : f32
      rdu.yield %s : f32
    }
    %n2 = rdu.map %h1 : (tensor<4x8xf32>) -> tensor<4x8xf32> {
    ^bb0(%a: f32):
      %m = arith.negf %a : f32
      rdu.yield %m : f32
    }
    %mm2 = rdu.matmul %n2, %w2 transpose_rhs : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32>
    %h2 = rdu.map %h1, %mm2 : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32> {
    ^bb0(%a: f32, %b: f32):
      %s = arith.addf %a, %b : f32
      rdu.yield %s : f32
    }
    %n3 = rdu.map %h2 : (tensor<4x8xf32>) -> tensor<4x8xf32> {
    ^bb0(%a: f32):
      %m = arith.mulf %a, %a : f32
      rdu.yield %m : f32
    }
    %mm3 = rdu.matmul %n3, %w3 transpose_rhs : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32>
    %h3 = rdu.map %h2, %mm3 : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32> {
    ^bb0(%a: f32, %b: f32):
      %s = arith.addf %a, %b : f32
      rdu.yield %s : f32
    }
    %n4 = rdu.map %h3 : (tensor<4x8xf32>) -> tensor<4x8xf32> {
    ^bb0(%a: f32):
      %m = arith.mulf %a, %a : f32
      rdu.yield %m : f32
    }
    %mm4 = rdu.matmul %n4, %w4 transpose_rhs : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32>
    %h4 = rdu.map %h3, %mm4 : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32> {
    ^bb0(%a: f32, %b: f32):
      %s = arith.addf %a, %b : f32
      rdu.yield %s : f32
    }
    %n5 = rdu.map %h4 : (tensor<4x8xf32>) -> tensor<4x8xf32> {
    ^bb0(%a: f32):
      %m = arith.negf %a : f32
      rdu.yield %m : f32
    }
    %mm5 = rdu.matmul %n5, %w5 transpose_rhs : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32>
    %h5 = rdu.map %h4, %mm5 : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32> {
    ^bb0(%a: f32, %b: f32):
      %s = arith.addf %a, %b : f32
      rdu.yield %s : f32
    }
    func.return %h5 : tensor<4x8xf32>
  }
}
// CHECK-LABEL: func.func @forward
// CHECK-NEXT:    %h2 = func.call @layer(%x, %w0, %w1, %w2) {rdu.layer = "layers.0"}
// CHECK-NEXT:    %h5 = func.call @layer(%h2, %w3, %w4, %w5) {rdu.layer = "layers.1"}
// CHECK-NEXT:    func.return %h5
// CHECK:       func.func private @layer({{.*}}) -> tensor<4x8xf32> attributes {rdu.outlined_from = "layers.0", rdu.calls = 2 : i64}

// LOWERED-LABEL: func.func @forward
// LOWERED-COUNT-2: func.call @layer

// Every third layer different, on the one-PMU target: one @layer of the whole
// period (two calls, six kernels), not a callee per distinct layer.
// FEW-LABEL: func.func @forward
// FEW-NEXT:    %h2 = func.call @layer(%x, %w0, %w1, %w2) {rdu.layer = "layers.0"}
// FEW-NEXT:    %h5 = func.call @layer(%h2, %w3, %w4, %w5) {rdu.layer = "layers.1"}
// FEW-NEXT:    func.return %h5
// FEW:       func.func private @layer({{.*}}) -> tensor<4x8xf32> attributes {rdu.outlined_from = "layers.0", rdu.calls = 2 : i64}
// FEW-COUNT-6: rdu.kernel
// FEW:         func.return %h2
// FEW-NOT:     func.func private @layer_1

// -----

// Not a period: A B A C repeats no group of layers twice (the fourth layer is
// of a third kind), so nothing is outlined: no layer of one kind is called in
// place of a layer of another.
builtin.module attributes {rdu.level = #rdu<level graph>} {
  func.func @forward(%x: tensor<4x8xf32> {rdu.input = "x"}, %w0: tensor<8x8xf32> {rdu.input = "w0"}, %w1: tensor<8x8xf32> {rdu.input = "w1"}, %w2: tensor<8x8xf32> {rdu.input = "w2"}, %w3: tensor<8x8xf32> {rdu.input = "w3"}) -> tensor<4x8xf32> {
    %n0 = rdu.map %x : (tensor<4x8xf32>) -> tensor<4x8xf32> {
    ^bb0(%a: f32):
      %m = arith.mulf %a, %a : f32
      rdu.yield %m : f32
    }
    %mm0 = rdu.matmul %n0, %w0 transpose_rhs : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32>
    %h0 = rdu.map %x, %mm0 : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32> {
    ^bb0(%a: f32, %b: f32):
      %s = arith.addf %a, %b : f32
      rdu.yield %s : f32
    }
    %n1 = rdu.map %h0 : (tensor<4x8xf32>) -> tensor<4x8xf32> {
    ^bb0(%a: f32):
      %m = arith.negf %a : f32
      rdu.yield %m : f32
    }
    %mm1 = rdu.matmul %n1, %w1 transpose_rhs : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32>
    %h1 = rdu.map %h0, %mm1 : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32> {
    ^bb0(%a: f32, %b: f32):
      %s = arith.addf %a, %b : f32
      rdu.yield %s : f32
    }
    %n2 = rdu.map %h1 : (tensor<4x8xf32>) -> tensor<4x8xf32> {
    ^bb0(%a: f32):
      %m = arith.mulf %a, %a : f32
      rdu.yield %m : f32
    }
    %mm2 = rdu.matmul %n2, %w2 transpose_rhs : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32>
    %h2 = rdu.map %h1, %mm2 : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32> {
    ^bb0(%a: f32, %b: f32):
      %s = arith.addf %a, %b : f32
      rdu.yield %s : f32
    }
    %n3 = rdu.map %h2 : (tensor<4x8xf32>) -> tensor<4x8xf32> {
    ^bb0(%a: f32):
      %m = arith.subf %a, %a : f32
      rdu.yield %m : f32
    }
    %mm3 = rdu.matmul %n3, %w3 transpose_rhs : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32>
    %h3 = rdu.map %h2, %mm3 : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32> {
    ^bb0(%a: f32, %b: f32):
      %s = arith.addf %a, %b : f32
      rdu.yield %s : f32
    }
    func.return %h3 : tensor<4x8xf32>
  }
}
// CHECK-LABEL: func.func @forward
// CHECK-NOT:     func.call
// CHECK-NOT:     func.func private @layer
// CHECK:         arith.subf
// CHECK:         func.return %h3

// Nor on the one-PMU target: every op its own kernel, none called.
// FEW-LABEL: func.func @forward
// FEW-NOT:     func.call
// FEW:         func.return %h3
// FEW-NOT:     func.func private @layer
