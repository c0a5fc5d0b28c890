// RUN: rducc-opt --check-roundtrip --split-input-file -p rdu-outline-layers %s | filecheck %s
// RUN: rducc-opt --split-input-file -p 'rdu-canonicalize,rdu-outline-layers,cse,rdu-fuse{level=2},rdu-merge-maps,rdu-tile,rdu-place-tiers,rdu-insert-dma,rdu-sram-alloc' %s | filecheck %s --check-prefix=LOWERED

// Layers found by structure: no op is marked with a layer (the layers' math
// written in the parent's forward), and each layer's residual add comes after
// its matmul. The period of the ops is 3 (norm, matmul, add); the boundary
// is where one value alone (the residual stream) crosses, so each @layer
// call ends with its add.
builtin.module attributes {rdu.level = #rdu<level graph>} {
  func.func @forward(%x: tensor<4x8xf32> {rdu.input = "x"}, %w0: tensor<8x8xf32> {rdu.input = "w0"}, %w1: tensor<8x8xf32> {rdu.input = "w1"}, %w2: tensor<8x8xf32> {rdu.input = "w2"}) -> tensor<4x8xf32> {
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
      %m = arith.mulf %a, %a : f32
      rdu.yield %m : f32
    }
    %mm2 = rdu.matmul %n2, %w2 transpose_rhs : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32>
    %h2 = rdu.map %h1, %mm2 : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32> {
    ^bb0(%a: f32, %b: f32):
      %s = arith.addf %a, %b : f32
      rdu.yield %s : f32
    }
    func.return %h2 : tensor<4x8xf32>
  }
}
// CHECK-LABEL: func.func @forward
// CHECK-NEXT:    %h0 = func.call @layer(%x, %w0) {rdu.layer = "layers.0"}
// CHECK-NEXT:    %h1 = func.call @layer(%h0, %w1) {rdu.layer = "layers.1"}
// CHECK-NEXT:    %h2 = func.call @layer(%h1, %w2) {rdu.layer = "layers.2"}
// CHECK-NEXT:    func.return %h2
// CHECK:       func.func private @layer(%x: tensor<4x8xf32> {rdu.input = "x"}, %w0: tensor<8x8xf32> {rdu.input = "w0"}) -> tensor<4x8xf32> attributes {rdu.outlined_from = "layers.0", rdu.calls = 3 : i64}
// CHECK-NEXT:    %n0 = rdu.map %x
// CHECK:         %mm0 = rdu.matmul %n0, %w0
// CHECK-NEXT:    %h0 = rdu.map %x, %mm0
// CHECK:         func.return %h0

// Lowered: the three calls of one one-kernel @layer (what kernel looping loops).
// LOWERED:       %h0 = func.call @layer
// LOWERED:       %h1 = func.call @layer
// LOWERED:       %h2 = func.call @layer
// LOWERED:       func.func private @layer
// LOWERED:         tier.compute "k0"
// LOWERED-NOT:     tier.compute
// LOWERED:       func.func @forward

// -----

// Marked by module paths with the residual add left out of each module (the
// parent adds): the period moves the add into the layer it ends, and the
// calls keep the module paths as their names.
builtin.module attributes {rdu.level = #rdu<level graph>} {
  func.func @forward(%x: tensor<4x8xf32> {rdu.input = "x"}, %w0: tensor<8x8xf32> {rdu.input = "w0"}, %w1: tensor<8x8xf32> {rdu.input = "w1"}) -> tensor<4x8xf32> {
    %mm0 = rdu.matmul %x, %w0 transpose_rhs {rdu.layer = "model.layers.0"} : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32>
    %h0 = rdu.map %x, %mm0 : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32> {
    ^bb0(%a: f32, %b: f32):
      %s = arith.addf %a, %b : f32
      rdu.yield %s : f32
    }
    %mm1 = rdu.matmul %h0, %w1 transpose_rhs {rdu.layer = "model.layers.1"} : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32>
    %h1 = rdu.map %h0, %mm1 : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32> {
    ^bb0(%a: f32, %b: f32):
      %s = arith.addf %a, %b : f32
      rdu.yield %s : f32
    }
    func.return %h1 : tensor<4x8xf32>
  }
}
// CHECK-LABEL: func.func @forward
// CHECK-NEXT:    %h0 = func.call @layer(%x, %w0) {rdu.layer = "model.layers.0"}
// CHECK-NEXT:    %h1 = func.call @layer(%h0, %w1) {rdu.layer = "model.layers.1"}
// CHECK:       func.func private @layer
// CHECK-NEXT:    %mm0 = rdu.matmul
// CHECK-NEXT:    %h0 = rdu.map %x, %mm0
// CHECK:         func.return %h0

// -----

// Invalid as a layer stack: the ops repeat by shape, but the second matmul
// does not transpose its weight, so the two units differ and nothing is
// outlined (the units keep their marks: a pipeline split still sees them).
builtin.module attributes {rdu.level = #rdu<level graph>} {
  func.func @forward(%x: tensor<4x8xf32> {rdu.input = "x"}, %w0: tensor<8x8xf32> {rdu.input = "w0"}, %w1: tensor<8x8xf32> {rdu.input = "w1"}) -> tensor<4x8xf32> {
    %mm0 = rdu.matmul %x, %w0 transpose_rhs : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32>
    %h0 = rdu.map %x, %mm0 : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32> {
    ^bb0(%a: f32, %b: f32):
      %s = arith.addf %a, %b : f32
      rdu.yield %s : f32
    }
    %mm1 = rdu.matmul %h0, %w1 : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32>
    %h1 = rdu.map %h0, %mm1 : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32> {
    ^bb0(%a: f32, %b: f32):
      %s = arith.addf %a, %b : f32
      rdu.yield %s : f32
    }
    func.return %h1 : tensor<4x8xf32>
  }
}
// CHECK-LABEL: func.func @forward
// CHECK-NOT:     func.call
// CHECK:         %mm1 = rdu.matmul %h0, %w1 {rdu.layer = "layers.1"} :
// CHECK-NOT:   func.func private @layer
