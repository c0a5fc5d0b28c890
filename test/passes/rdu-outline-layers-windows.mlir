// RUN: rducc-opt --split-input-file -p rdu-outline-layers %s | filecheck %s
// RUN: rducc-opt --split-input-file -p 'rdu-canonicalize,rdu-outline-layers,cse,rdu-fuse{level=2},rdu-merge-maps,rdu-tile,rdu-place-tiers,rdu-insert-dma,rdu-sram-alloc' %s | filecheck %s --check-prefix=LOWERED

// Two layers that differ only in which part of a stacked input they read
// (`cache[i]`): the windows move out before each layer, and each call passes
// its own; once lowered, each window is a tier.view of the stacked input.
builtin.module attributes {rdu.level = #rdu<level graph>} {
  func.func @forward(%x: tensor<4x8xf32> {rdu.input = "x"}, %cache: tensor<2x4x8xf32> {rdu.input = "cache"}) -> tensor<4x8xf32> {
    %w0 = rdu.slice %cache offsets [0, 0, 0] strides [1, 1, 1] {rdu.layer = "layers.0"} : tensor<2x4x8xf32> -> tensor<1x4x8xf32>
    %r0 = rdu.reshape %w0 {rdu.layer = "layers.0"} : tensor<1x4x8xf32> -> tensor<4x8xf32>
    %y0 = rdu.map %x, %r0 {rdu.layer = "layers.0"} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32> {
    ^bb0(%a: f32, %b: f32):
      %s = arith.addf %a, %b : f32
      rdu.yield %s : f32
    }
    %w1 = rdu.slice %cache offsets [1, 0, 0] strides [1, 1, 1] {rdu.layer = "layers.1"} : tensor<2x4x8xf32> -> tensor<1x4x8xf32>
    %r1 = rdu.reshape %w1 {rdu.layer = "layers.1"} : tensor<1x4x8xf32> -> tensor<4x8xf32>
    %y1 = rdu.map %y0, %r1 {rdu.layer = "layers.1"} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32> {
    ^bb0(%a: f32, %b: f32):
      %s = arith.addf %a, %b : f32
      rdu.yield %s : f32
    }
    func.return %y1 : tensor<4x8xf32>
  }
}
// CHECK-LABEL: func.func @forward
// CHECK-NEXT:    %w0 = rdu.slice %cache offsets [0, 0, 0] strides [1, 1, 1] : tensor<2x4x8xf32> -> tensor<1x4x8xf32>
// CHECK-NEXT:    %r0 = rdu.reshape %w0 : tensor<1x4x8xf32> -> tensor<4x8xf32>
// CHECK-NEXT:    %y0 = func.call @layer(%x, %r0) {rdu.layer = "layers.0"}
// CHECK-NEXT:    %w1 = rdu.slice %cache offsets [1, 0, 0] strides [1, 1, 1] : tensor<2x4x8xf32> -> tensor<1x4x8xf32>
// CHECK-NEXT:    %r1 = rdu.reshape %w1 : tensor<1x4x8xf32> -> tensor<4x8xf32>
// CHECK-NEXT:    %y1 = func.call @layer(%y0, %r1) {rdu.layer = "layers.1"}
// CHECK:       func.func private @layer(%x: tensor<4x8xf32> {rdu.input = "x"}, %r0: tensor<4x8xf32> {rdu.input = "r0"}) -> tensor<4x8xf32> attributes {rdu.outlined_from = "layers.0", rdu.calls = 2 : i64} {
// CHECK-NEXT:    %y0 = rdu.map %x, %r0

// LOWERED-LABEL: func.func @forward
// LOWERED:       %r0 = tier.view %cache[{{.*}}] sizes [1, 4, 8] : !tier.buffer<hbm, 2x4x8xf32> -> !tier.buffer<hbm, 4x8xf32>
// LOWERED-NEXT:  %y0 = func.call @layer(%x, %r0)
// LOWERED:       %r1 = tier.view %cache[{{.*}}] sizes [1, 4, 8] : !tier.buffer<hbm, 2x4x8xf32> -> !tier.buffer<hbm, 4x8xf32>
// LOWERED-NEXT:  %y1 = func.call @layer(%y0, %r1)

// -----

// Layers that differ in a slice of a value they compute themselves differ in
// what they compute: nothing moves out, and they stay inline.
builtin.module attributes {rdu.level = #rdu<level graph>} {
  func.func @forward(%x: tensor<4x8xf32> {rdu.input = "x"}) -> tensor<4x4xf32> {
    %a0 = rdu.map %x {rdu.layer = "layers.0"} : (tensor<4x8xf32>) -> tensor<4x8xf32> {
    ^bb0(%a: f32):
      %s = arith.addf %a, %a : f32
      rdu.yield %s : f32
    }
    %h0 = rdu.slice %a0 offsets [0, 0] strides [1, 1] {rdu.layer = "layers.0"} : tensor<4x8xf32> -> tensor<4x4xf32>
    %a1 = rdu.map %h0 {rdu.layer = "layers.1"} : (tensor<4x4xf32>) -> tensor<4x4xf32> {
    ^bb0(%a: f32):
      %s = arith.addf %a, %a : f32
      rdu.yield %s : f32
    }
    %h1 = rdu.slice %a1 offsets [0, 0] strides [1, 1] {rdu.layer = "layers.1"} : tensor<4x4xf32> -> tensor<4x4xf32>
    func.return %h1 : tensor<4x4xf32>
  }
}
// CHECK-LABEL: func.func @forward
// CHECK-NOT:   func.call
// CHECK:       %h1 = rdu.slice %a1 offsets [0, 0] strides [1, 1] {rdu.layer = "layers.1"}
// CHECK-NOT:   func.func private @layer

// -----

// A weight stacked over the layers (`w[i]`): each call passes its window of
// the global, and @layer takes it as a weight (`rdu.weight`, as a per-layer
// global would be), so rdu-partition splits it as a weight.
builtin.module attributes {rdu.level = #rdu<level graph>} {
  tier.global @w : tensor<2x4x8xf32> {kind = "parameter"}
  func.func @forward(%x: tensor<4x8xf32> {rdu.input = "x"}, %ws: tensor<2x4x8xf32> {rdu.global = @w}) -> tensor<4x8xf32> {
    %w0 = rdu.slice %ws offsets [0, 0, 0] strides [1, 1, 1] {rdu.layer = "layers.0"} : tensor<2x4x8xf32> -> tensor<1x4x8xf32>
    %r0 = rdu.reshape %w0 {rdu.layer = "layers.0"} : tensor<1x4x8xf32> -> tensor<4x8xf32>
    %y0 = rdu.map %x, %r0 {rdu.layer = "layers.0"} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32> {
    ^bb0(%a: f32, %b: f32):
      %s = arith.mulf %a, %b : f32
      rdu.yield %s : f32
    }
    %w1 = rdu.slice %ws offsets [1, 0, 0] strides [1, 1, 1] {rdu.layer = "layers.1"} : tensor<2x4x8xf32> -> tensor<1x4x8xf32>
    %r1 = rdu.reshape %w1 {rdu.layer = "layers.1"} : tensor<1x4x8xf32> -> tensor<4x8xf32>
    %y1 = rdu.map %y0, %r1 {rdu.layer = "layers.1"} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32> {
    ^bb0(%a: f32, %b: f32):
      %s = arith.mulf %a, %b : f32
      rdu.yield %s : f32
    }
    func.return %y1 : tensor<4x8xf32>
  }
}
// CHECK-LABEL: func.func @forward
// CHECK:         %y0 = func.call @layer(%x, %r0) {rdu.layer = "layers.0"}
// CHECK:         %y1 = func.call @layer(%y0, %r1) {rdu.layer = "layers.1"}
// CHECK:       func.func private @layer(%x: tensor<4x8xf32> {rdu.input = "x"}, %r0: tensor<4x8xf32> {rdu.weight}) -> tensor<4x8xf32>
