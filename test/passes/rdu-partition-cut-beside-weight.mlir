// RUN: rducc-opt --check-roundtrip -p 'rdu-partition{tp=2 target=sn40l-8}' --split-input-file %s | filecheck %s

// A training step's linear layer on a replicated input splits its weight @w by
// output columns; its output meets a whole value %r (a skip projection added to a
// row-split layer's whole output) and is gathered there. Its gradient %g is then
// whole, and the backward's input gradient %g @ w reads @w split along the
// contraction: each rank cuts its part of %g (`rdu.local_part`, no exchange) rather
// than gather the weight (`_cuts_beside_weight`: the product's all-reduce, 4x8, costs
// less than gathering @w's half, 8x8, and running the product whole, by sn40l's
// figures), and the product is a partial sum, all-reduced once for both its views
// (`_view_of_reduced`: the reshape and the transpose of the partial sum read the
// reduced sum's views; the views of the partial sum itself, read by nothing then,
// are erased). The whole weight gradient %dw is cut to @w's rows for the update, so
// @w stays split. Before, @w was gathered for the product and the update ran whole.

builtin.module attributes {rdu.level = #rdu<level graph>} {
  tier.global @w : tensor<16x8xf32> {kind = "parameter"}
  func.func @forward(%x: tensor<4x8xf32> {rdu.input = "x"}, %r0: tensor<4x16xf32> {rdu.input = "r0"}, %dy: tensor<4x16xf32> {rdu.input = "dy"}, %w: tensor<16x8xf32> {rdu.global = @w}) -> (tensor<4x16xf32>, tensor<2x2x8xf32>, tensor<8x4xf32>, tensor<16x8xf32>) {
    %s = rdu.matmul %x, %w transpose_rhs {rdu.phase = #rdu<phase forward>} : tensor<4x8xf32>, tensor<16x8xf32> -> tensor<4x16xf32>
    %r = rdu.map %r0, %dy {rdu.phase = #rdu<phase forward>} : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32> {
    ^bb0(%0: f32, %1: f32):
      %2 = arith.mulf %0, %1 : f32
      rdu.yield %2 : f32
    }
    %y = rdu.map %s, %r {rdu.phase = #rdu<phase forward>} : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32> {
    ^bb0(%0: f32, %1: f32):
      %2 = arith.addf %0, %1 : f32
      rdu.yield %2 : f32
    }
    %g = rdu.map %dy, %r {rdu.phase = #rdu<phase backward>} : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32> {
    ^bb0(%0: f32, %1: f32):
      %2 = arith.mulf %0, %1 : f32
      rdu.yield %2 : f32
    }
    %dx = rdu.matmul %g, %w {rdu.phase = #rdu<phase backward>} : tensor<4x16xf32>, tensor<16x8xf32> -> tensor<4x8xf32>
    %dx3 = rdu.reshape %dx {rdu.phase = #rdu<phase backward>} : tensor<4x8xf32> -> tensor<2x2x8xf32>
    %dxt = rdu.transpose %dx perm [1, 0] {rdu.phase = #rdu<phase backward>} : tensor<4x8xf32> -> tensor<8x4xf32>
    %gt = rdu.transpose %g perm [1, 0] {rdu.phase = #rdu<phase backward>} : tensor<4x16xf32> -> tensor<16x4xf32>
    %dw = rdu.matmul %gt, %x {rdu.phase = #rdu<phase backward>} : tensor<16x4xf32>, tensor<4x8xf32> -> tensor<16x8xf32>
    %new = rdu.map %w, %dw {rdu.phase = #rdu<phase optimizer>} : (tensor<16x8xf32>, tensor<16x8xf32>) -> tensor<16x8xf32> {
    ^bb0(%0: f32, %1: f32):
      %2 = arith.subf %0, %1 : f32
      rdu.yield %2 : f32
    }
    func.return %y, %dx3, %dxt, %new : tensor<4x16xf32>, tensor<2x2x8xf32>, tensor<8x4xf32>, tensor<16x8xf32>
  }
}

// CHECK:      tier.global @w : tensor<8x8xf32> {kind = "parameter", rdu.shard = #rdu.split<(0, 2, 1)>}
// CHECK:      %s = rdu.matmul %x, %w transpose_rhs {{.*}} -> tensor<4x8xf32>
// CHECK-NEXT: rdu.all_gather %s dim 1 group 2
// CHECK-NOT:  rdu.all_gather
// CHECK:      %[[MINE:.*]] = rdu.local_part %g dim 1 group 2 {{.*}} : tensor<4x16xf32> -> tensor<4x8xf32>
// CHECK-NEXT: %dx = rdu.matmul %[[MINE]], %w {{.*}} : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32>
// CHECK-NEXT: %[[SUM:.*]] = rdu.all_reduce %dx group 2
// CHECK-NOT:  rdu.all_reduce
// CHECK-NOT:  rdu.reshape %dx {
// CHECK-NOT:  rdu.transpose %dx perm
// CHECK:      rdu.reshape %[[SUM]] {{.*}} : tensor<4x8xf32> -> tensor<2x2x8xf32>
// CHECK-NOT:  rdu.all_reduce
// CHECK:      rdu.transpose %[[SUM]] perm [1, 0] {{.*}} : tensor<4x8xf32> -> tensor<8x4xf32>
// CHECK-NOT:  rdu.all_reduce
// CHECK:      %dw = rdu.matmul %gt, %x {{.*}} -> tensor<16x8xf32>
// CHECK-NEXT: %[[PART:.*]] = rdu.local_part %dw dim 0 group 2 {{.*}} : tensor<16x8xf32> -> tensor<8x8xf32>
// CHECK-NEXT: %new = rdu.map %w, %[[PART]] {{.*}} -> tensor<8x8xf32>
// CHECK-NOT:  rdu.all_gather

// -----

// The same step with many tokens (64) beside a small weight (6x8): the product's
// all-reduce (64x8) costs more than gathering @w's half (3x8) and running the
// product whole, so @w is gathered for %g @ w and nothing is cut there; the update
// still cuts %dw to @w's rows (its result split: no collective), so @w stays split.

builtin.module attributes {rdu.level = #rdu<level graph>} {
  tier.global @w : tensor<6x8xf32> {kind = "parameter"}
  func.func @forward(%x: tensor<64x8xf32> {rdu.input = "x"}, %r0: tensor<64x6xf32> {rdu.input = "r0"}, %dy: tensor<64x6xf32> {rdu.input = "dy"}, %w: tensor<6x8xf32> {rdu.global = @w}) -> (tensor<64x6xf32>, tensor<64x8xf32>, tensor<6x8xf32>) {
    %s = rdu.matmul %x, %w transpose_rhs {rdu.phase = #rdu<phase forward>} : tensor<64x8xf32>, tensor<6x8xf32> -> tensor<64x6xf32>
    %r = rdu.map %r0, %dy {rdu.phase = #rdu<phase forward>} : (tensor<64x6xf32>, tensor<64x6xf32>) -> tensor<64x6xf32> {
    ^bb0(%0: f32, %1: f32):
      %2 = arith.mulf %0, %1 : f32
      rdu.yield %2 : f32
    }
    %y = rdu.map %s, %r {rdu.phase = #rdu<phase forward>} : (tensor<64x6xf32>, tensor<64x6xf32>) -> tensor<64x6xf32> {
    ^bb0(%0: f32, %1: f32):
      %2 = arith.addf %0, %1 : f32
      rdu.yield %2 : f32
    }
    %g = rdu.map %dy, %r {rdu.phase = #rdu<phase backward>} : (tensor<64x6xf32>, tensor<64x6xf32>) -> tensor<64x6xf32> {
    ^bb0(%0: f32, %1: f32):
      %2 = arith.mulf %0, %1 : f32
      rdu.yield %2 : f32
    }
    %dx = rdu.matmul %g, %w {rdu.phase = #rdu<phase backward>} : tensor<64x6xf32>, tensor<6x8xf32> -> tensor<64x8xf32>
    %gt = rdu.transpose %g perm [1, 0] {rdu.phase = #rdu<phase backward>} : tensor<64x6xf32> -> tensor<6x64xf32>
    %dw = rdu.matmul %gt, %x {rdu.phase = #rdu<phase backward>} : tensor<6x64xf32>, tensor<64x8xf32> -> tensor<6x8xf32>
    %new = rdu.map %w, %dw {rdu.phase = #rdu<phase optimizer>} : (tensor<6x8xf32>, tensor<6x8xf32>) -> tensor<6x8xf32> {
    ^bb0(%0: f32, %1: f32):
      %2 = arith.subf %0, %1 : f32
      rdu.yield %2 : f32
    }
    func.return %y, %dx, %new : tensor<64x6xf32>, tensor<64x8xf32>, tensor<6x8xf32>
  }
}

// CHECK:      tier.global @w : tensor<3x8xf32> {kind = "parameter", rdu.shard = #rdu.split<(0, 2, 1)>}
// CHECK:      %s = rdu.matmul %x, %w transpose_rhs {{.*}} -> tensor<64x3xf32>
// CHECK-NEXT: rdu.all_gather %s dim 1 group 2
// CHECK:      %[[W:.*]] = rdu.all_gather %w dim 0 group 2 {{.*}} : tensor<3x8xf32> -> tensor<6x8xf32>
// CHECK-NOT:  rdu.local_part %g
// CHECK:      %dx = rdu.matmul %g, %[[W]] {{.*}} : tensor<64x6xf32>, tensor<6x8xf32> -> tensor<64x8xf32>
// CHECK-NOT:  rdu.all_reduce
// CHECK:      %[[PART:.*]] = rdu.local_part %dw dim 0 group 2 {{.*}} : tensor<6x8xf32> -> tensor<3x8xf32>
// CHECK-NEXT: %new = rdu.map %w, %[[PART]] {{.*}} -> tensor<3x8xf32>


// -----

// Where the rule must not fire: the operand held split along the contraction is
// an activation (%s transposed), not a weight, so the whole operand %g is not cut
// and %st is gathered for the product, as before.

builtin.module attributes {rdu.level = #rdu<level graph>} {
  tier.global @w : tensor<6x8xf32> {kind = "parameter"}
  func.func @forward(%x: tensor<4x8xf32> {rdu.input = "x"}, %r0: tensor<4x6xf32> {rdu.input = "r0"}, %dy: tensor<4x6xf32> {rdu.input = "dy"}, %w: tensor<6x8xf32> {rdu.global = @w}) -> (tensor<4x4xf32>) {
    %s = rdu.matmul %x, %w transpose_rhs {rdu.phase = #rdu<phase forward>} : tensor<4x8xf32>, tensor<6x8xf32> -> tensor<4x6xf32>
    %st = rdu.transpose %s perm [1, 0] {rdu.phase = #rdu<phase forward>} : tensor<4x6xf32> -> tensor<6x4xf32>
    %g = rdu.map %dy, %r0 {rdu.phase = #rdu<phase backward>} : (tensor<4x6xf32>, tensor<4x6xf32>) -> tensor<4x6xf32> {
    ^bb0(%0: f32, %1: f32):
      %2 = arith.mulf %0, %1 : f32
      rdu.yield %2 : f32
    }
    %z = rdu.matmul %g, %st {rdu.phase = #rdu<phase backward>} : tensor<4x6xf32>, tensor<6x4xf32> -> tensor<4x4xf32>
    func.return %z : tensor<4x4xf32>
  }
}

// CHECK:      %st = rdu.transpose %s perm [1, 0] {{.*}} : tensor<4x3xf32> -> tensor<3x4xf32>
// CHECK-NOT:  rdu.local_part
// CHECK:      %[[WHOLE:.*]] = rdu.all_gather %st dim 0 group 2 {{.*}} : tensor<3x4xf32> -> tensor<6x4xf32>
// CHECK:      %z = rdu.matmul %g, %[[WHOLE]] {{.*}} : tensor<4x6xf32>, tensor<6x4xf32> -> tensor<4x4xf32>
