// The gradient of an embedding tied to the LM head (rdu-partition tp, a training
// step): the head splits the shared table by vocabulary rows, so its gradient
// dy^T x comes out split so; the embedding's gradient, a scatter-add of the rows'
// gradients into zeros, is scattered split too (`_partition_split_scatter`: each
// rank adds the rows it owns), and the two add up split, as the update of the
// table and its momentum (optimizer state, read by the update alone, which follows
// its parameter) does. Nothing is all-gathered (before: the momentum, a whole
// table-shaped global, kept the scatter whole, so the head's gradient and the
// table were gathered for the sum and the update).
// RUN: rducc-opt --check-roundtrip -p 'rdu-partition{tp=2 target=sn40l-8}' --split-input-file %s | filecheck %s

builtin.module attributes {rdu.level = #rdu<level graph>} {
  tier.global @w : tensor<8x4xf32> {kind = "parameter"}
  tier.global @m : tensor<8x4xf32> {kind = "buffer"}
  func.func @forward(%ids: tensor<6xi64> {rdu.input = "ids"}, %x: tensor<6x4xf32> {rdu.input = "x"}, %de: tensor<6x4xf32> {rdu.input = "de"}, %w: tensor<8x4xf32> {rdu.global = @w}, %m: tensor<8x4xf32> {rdu.global = @m}) -> (tensor<6x4xf32>, tensor<8x4xf32>) {
    %emb = rdu.gather %w[%ids] dim 0 {rdu.phase = #rdu<phase forward>} : tensor<8x4xf32>, tensor<6xi64> -> tensor<6x4xf32>
    %logits = rdu.matmul %x, %w transpose_rhs {rdu.phase = #rdu<phase forward>} : tensor<6x4xf32>, tensor<8x4xf32> -> tensor<6x8xf32>
    %dy = rdu.map %logits {rdu.phase = #rdu<phase backward>} : (tensor<6x8xf32>) -> tensor<6x8xf32> {
    ^bb0(%0: f32):
      %1 = arith.constant 2.000000e+00 : f32
      %2 = arith.mulf %0, %1 : f32
      rdu.yield %2 : f32
    }
    %dyt = rdu.transpose %dy perm [1, 0] {rdu.phase = #rdu<phase backward>} : tensor<6x8xf32> -> tensor<8x6xf32>
    %dw = rdu.matmul %dyt, %x {rdu.phase = #rdu<phase backward>} : tensor<8x6xf32>, tensor<6x4xf32> -> tensor<8x4xf32>
    %zeros = rdu.map {rdu.phase = #rdu<phase backward>} : () -> tensor<8x4xf32> {
      %0 = arith.constant 0.000000e+00 : f32
      rdu.yield %0 : f32
    }
    %rows = rdu.reshape %ids {rdu.phase = #rdu<phase backward>} : tensor<6xi64> -> tensor<6x1xi64>
    %index = rdu.broadcast %rows {rdu.phase = #rdu<phase backward>} : tensor<6x1xi64> -> tensor<6x4xi64>
    %ge = rdu.scatter %zeros[%index] = %de dim 0 reduce sum {rdu.phase = #rdu<phase backward>} : tensor<8x4xf32>, tensor<6x4xi64>, tensor<6x4xf32> -> tensor<8x4xf32>
    %g = rdu.map %dw, %ge {rdu.phase = #rdu<phase backward>} : (tensor<8x4xf32>, tensor<8x4xf32>) -> tensor<8x4xf32> {
    ^bb0(%0: f32, %1: f32):
      %2 = arith.addf %0, %1 : f32
      rdu.yield %2 : f32
    }
    %new = rdu.map %m, %g {rdu.phase = #rdu<phase optimizer>} : (tensor<8x4xf32>, tensor<8x4xf32>) -> tensor<8x4xf32> {
    ^bb0(%0: f32, %1: f32):
      %2 = arith.addf %0, %1 : f32
      rdu.yield %2 : f32
    }
    func.return %emb, %new : tensor<6x4xf32>, tensor<8x4xf32>
  }
}

// CHECK:      tier.global @w : tensor<4x4xf32> {kind = "parameter", rdu.shard = #rdu.split<(0, 2, 1)>}
// CHECK-NEXT: tier.global @m : tensor<4x4xf32> {kind = "buffer", rdu.shard = #rdu.split<(0, 2, 1)>}
// CHECK-NOT:  rdu.all_gather
// CHECK:      %dw = rdu.matmul %dyt, %x {{.*}} : tensor<4x6xf32>, tensor<6x4xf32> -> tensor<4x4xf32>
// CHECK-NOT:  rdu.all_gather
// CHECK:      %ge = rdu.scatter %{{.*}}[%{{.*}}] = %{{.*}} dim 0 reduce sum {{.*}} : tensor<4x4xf32>, tensor<6x4xi64>, tensor<6x4xf32> -> tensor<4x4xf32>
// CHECK-NEXT: %g = rdu.map %dw, %ge {{.*}} : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
// CHECK-NOT:  rdu.all_gather
// CHECK:      %new = rdu.map %m, %g {{.*}} : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
// CHECK-NOT:  rdu.all_gather

// -----

// Where the rule must not fire: a whole table-shaped global read outside the
// update (here by the forward) keeps the scatter whole, as an untied embedding's
// gradient stays as its whole table is.

builtin.module attributes {rdu.level = #rdu<level graph>} {
  tier.global @w : tensor<8x4xf32> {kind = "parameter"}
  tier.global @m : tensor<8x4xf32> {kind = "buffer"}
  func.func @forward(%ids: tensor<6xi64> {rdu.input = "ids"}, %x: tensor<6x4xf32> {rdu.input = "x"}, %de: tensor<6x4xf32> {rdu.input = "de"}, %w: tensor<8x4xf32> {rdu.global = @w}, %m: tensor<8x4xf32> {rdu.global = @m}) -> (tensor<6x4xf32>, tensor<8x4xf32>) {
    %emb = rdu.gather %m[%ids] dim 0 {rdu.phase = #rdu<phase forward>} : tensor<8x4xf32>, tensor<6xi64> -> tensor<6x4xf32>
    %logits = rdu.matmul %x, %w transpose_rhs {rdu.phase = #rdu<phase forward>} : tensor<6x4xf32>, tensor<8x4xf32> -> tensor<6x8xf32>
    %dyt = rdu.transpose %logits perm [1, 0] {rdu.phase = #rdu<phase backward>} : tensor<6x8xf32> -> tensor<8x6xf32>
    %dw = rdu.matmul %dyt, %x {rdu.phase = #rdu<phase backward>} : tensor<8x6xf32>, tensor<6x4xf32> -> tensor<8x4xf32>
    %zeros = rdu.map {rdu.phase = #rdu<phase backward>} : () -> tensor<8x4xf32> {
      %0 = arith.constant 0.000000e+00 : f32
      rdu.yield %0 : f32
    }
    %rows = rdu.reshape %ids {rdu.phase = #rdu<phase backward>} : tensor<6xi64> -> tensor<6x1xi64>
    %index = rdu.broadcast %rows {rdu.phase = #rdu<phase backward>} : tensor<6x1xi64> -> tensor<6x4xi64>
    %ge = rdu.scatter %zeros[%index] = %de dim 0 reduce sum {rdu.phase = #rdu<phase backward>} : tensor<8x4xf32>, tensor<6x4xi64>, tensor<6x4xf32> -> tensor<8x4xf32>
    func.return %emb, %ge : tensor<6x4xf32>, tensor<8x4xf32>
  }
}

// CHECK:      tier.global @m : tensor<8x4xf32> {kind = "buffer"}
// CHECK:      %ge = rdu.scatter %zeros[%index] = %de dim 0 reduce sum {{.*}} : tensor<8x4xf32>, tensor<6x4xi64>, tensor<6x4xf32> -> tensor<8x4xf32>
