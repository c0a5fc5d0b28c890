// RUN: rducc-opt --split-input-file -p rdu-outline-layers %s | filecheck %s
// RUN: rducc-opt --split-input-file -p 'rdu-canonicalize,rdu-outline-layers,cse,rdu-fuse{level=2},rdu-merge-maps,rdu-tile,rdu-place-tiers,rdu-insert-dma,rdu-sram-alloc' %s | filecheck %s --check-prefix=LOWERED

// Two layers that differ only in a scalar constant of an elementwise body (a
// per-layer scale, as GPT-2's 1/(layer index + 1)): each constant becomes a
// rank-0 value made before the first layer, and each call passes its own. The
// calls stay back to back once fused (the constants are one kernel before them,
// not a kernel between the calls), so kernel looping can loop them.
builtin.module attributes {rdu.level = #rdu<level graph>} {
  func.func @forward(%x: tensor<4x8xf32> {rdu.input = "x"}) -> tensor<4x8xf32> {
    %y0 = rdu.map %x {rdu.layer = "layers.0"} : (tensor<4x8xf32>) -> tensor<4x8xf32> {
    ^bb0(%a: f32):
      %c = arith.constant 1.000000e+00 : f32
      %s = arith.mulf %a, %c : f32
      rdu.yield %s : f32
    }
    %y1 = rdu.map %y0 {rdu.layer = "layers.1"} : (tensor<4x8xf32>) -> tensor<4x8xf32> {
    ^bb0(%a: f32):
      %c = arith.constant 5.000000e-01 : f32
      %s = arith.mulf %a, %c : f32
      rdu.yield %s : f32
    }
    func.return %y1 : tensor<4x8xf32>
  }
}
// CHECK-LABEL: func.func @forward
// CHECK-NEXT:    %constant = rdu.map : () -> tensor<f32> {
// CHECK-NEXT:      %c = arith.constant 1.000000e+00 : f32
// CHECK-NEXT:      rdu.yield %c : f32
// CHECK-NEXT:    }
// CHECK-NEXT:    %constant_1 = rdu.map : () -> tensor<f32> {
// CHECK-NEXT:      %c = arith.constant 5.000000e-01 : f32
// CHECK-NEXT:      rdu.yield %c : f32
// CHECK-NEXT:    }
// CHECK-NEXT:    %y0 = func.call @layer(%x, %constant) {rdu.layer = "layers.0"}
// CHECK-NEXT:    %y1 = func.call @layer(%y0, %constant_1) {rdu.layer = "layers.1"}
// CHECK:       func.func private @layer(%x: tensor<4x8xf32> {rdu.input = "x"}, %constant: tensor<f32> {rdu.value}) -> tensor<4x8xf32> attributes {rdu.outlined_from = "layers.0", rdu.calls = 2 : i64} {
// CHECK-NEXT:    %y0 = rdu.map %x, %constant {rdu.layer = "layers.0"} : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32> {
// CHECK-NEXT:    ^bb0(%a: f32, %{{.*}}: f32):
// CHECK-NEXT:      %s = arith.mulf %a, %{{.*}} : f32

// LOWERED-LABEL: func.func @forward
// LOWERED:       tier.compute "k0" ins(:) outs(%constant_sram, %constant_sram_1
// LOWERED:       func.call @layer(%x, %constant)
// LOWERED-NOT:   tier.compute
// LOWERED:       func.call @layer(%y0, %constant_1)
// LOWERED:       func.func private @layer

// -----

// Layers that differ in an op, not only in a constant's value, stay inline.
builtin.module attributes {rdu.level = #rdu<level graph>} {
  func.func @forward(%x: tensor<4x8xf32> {rdu.input = "x"}) -> tensor<4x8xf32> {
    %y0 = rdu.map %x {rdu.layer = "layers.0"} : (tensor<4x8xf32>) -> tensor<4x8xf32> {
    ^bb0(%a: f32):
      %c = arith.constant 1.000000e+00 : f32
      %s = arith.mulf %a, %c : f32
      rdu.yield %s : f32
    }
    %y1 = rdu.map %y0 {rdu.layer = "layers.1"} : (tensor<4x8xf32>) -> tensor<4x8xf32> {
    ^bb0(%a: f32):
      %c = arith.constant 5.000000e-01 : f32
      %s = arith.addf %a, %c : f32
      rdu.yield %s : f32
    }
    func.return %y1 : tensor<4x8xf32>
  }
}
// CHECK-LABEL: func.func @forward
// CHECK-NOT:   func.call
// CHECK:       arith.constant 1.000000e+00
// CHECK:       arith.constant 5.000000e-01
// CHECK-NOT:   func.func private @layer
