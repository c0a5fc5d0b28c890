// RUN: rducc-opt --check-roundtrip -p 'rdu-partition{tp=2 target=sn40l-8}' --split-input-file %s | filecheck %s

// A cross entropy's one-hot (a scatter of -1 at each token's label into zeros,
// tokens x vocabulary) meets the vocabulary-split logits' gradient, so it is
// scattered split (`_partition_split_scatter`), though a whole weight has its
// shape (@kv, 6 x 8: one K/V head's projection, held whole by every rank). The
// one-hot is read by a matmul, not by an update: it is no weight's gradient
// (`_updates_weights`), so the weight's shape does not keep it whole. Before,
// the shape alone kept it whole: the logits' gradient and the head were gathered.

builtin.module attributes {rdu.level = #rdu<level graph>} {
  tier.global @head : tensor<8x4xf32> {kind = "parameter"}
  tier.global @kv : tensor<6x8xf32> {kind = "parameter"}
  func.func @forward(%x: tensor<6x4xf32> {rdu.input = "x"}, %labels: tensor<6x1xi64> {rdu.input = "labels"}, %head: tensor<8x4xf32> {rdu.global = @head}, %kv: tensor<6x8xf32> {rdu.global = @kv}) -> (tensor<f32>, tensor<6x4xf32>) {
    %logits = rdu.matmul %x, %head transpose_rhs {rdu.phase = #rdu<phase forward>} : tensor<6x4xf32>, tensor<8x4xf32> -> tensor<6x8xf32>
    %kvsum = rdu.reduce sum %kv dims [0, 1] {rdu.phase = #rdu<phase forward>} : tensor<6x8xf32> -> tensor<f32>
    %zeros = rdu.map {rdu.phase = #rdu<phase backward>} : () -> tensor<6x8xf32> {
      %0 = arith.constant 0.000000e+00 : f32
      rdu.yield %0 : f32
    }
    %minus = rdu.map {rdu.phase = #rdu<phase backward>} : () -> tensor<6x1xf32> {
      %0 = arith.constant -1.000000e+00 : f32
      rdu.yield %0 : f32
    }
    %onehot = rdu.scatter %zeros[%labels] = %minus dim 1 {rdu.phase = #rdu<phase backward>} : tensor<6x8xf32>, tensor<6x1xi64>, tensor<6x1xf32> -> tensor<6x8xf32>
    %dy = rdu.map %logits, %onehot {rdu.phase = #rdu<phase backward>} : (tensor<6x8xf32>, tensor<6x8xf32>) -> tensor<6x8xf32> {
    ^bb0(%0: f32, %1: f32):
      %2 = arith.addf %0, %1 : f32
      rdu.yield %2 : f32
    }
    %dx = rdu.matmul %dy, %head {rdu.phase = #rdu<phase backward>} : tensor<6x8xf32>, tensor<8x4xf32> -> tensor<6x4xf32>
    func.return %kvsum, %dx : tensor<f32>, tensor<6x4xf32>
  }
}

// CHECK:      tier.global @head : tensor<4x4xf32> {kind = "parameter", rdu.shard = #rdu.split<(0, 2, 1)>}
// CHECK-NEXT: tier.global @kv : tensor<6x8xf32> {kind = "parameter"
// CHECK:      %logits = rdu.matmul {{.*}} -> tensor<6x4xf32>
// CHECK:      %onehot = rdu.scatter {{.*}} dim 1 {{.*}} -> tensor<6x4xf32>
// CHECK-NOT:  rdu.all_gather
// CHECK:      %dx = rdu.matmul %dy, %head {{.*}} : tensor<6x4xf32>, tensor<4x4xf32> -> tensor<6x4xf32>
// CHECK-NEXT: rdu.all_reduce
// CHECK-NOT:  rdu.all_gather

// -----

// Where the rule must not fire: the scatter's result is the update of the whole
// weight of its shape (it is that weight's gradient), so it stays whole as its
// weight is.

builtin.module attributes {rdu.level = #rdu<level graph>} {
  tier.global @head : tensor<8x4xf32> {kind = "parameter"}
  tier.global @kv : tensor<6x8xf32> {kind = "parameter"}
  func.func @forward(%x: tensor<6x4xf32> {rdu.input = "x"}, %labels: tensor<6x1xi64> {rdu.input = "labels"}, %head: tensor<8x4xf32> {rdu.global = @head}, %kv: tensor<6x8xf32> {rdu.global = @kv}) -> (tensor<f32>, tensor<6x8xf32>) {
    %logits = rdu.matmul %x, %head transpose_rhs {rdu.phase = #rdu<phase forward>} : tensor<6x4xf32>, tensor<8x4xf32> -> tensor<6x8xf32>
    %kvsum = rdu.reduce sum %kv dims [0, 1] {rdu.phase = #rdu<phase forward>} : tensor<6x8xf32> -> tensor<f32>
    %zeros = rdu.map {rdu.phase = #rdu<phase backward>} : () -> tensor<6x8xf32> {
      %0 = arith.constant 0.000000e+00 : f32
      rdu.yield %0 : f32
    }
    %minus = rdu.map {rdu.phase = #rdu<phase backward>} : () -> tensor<6x1xf32> {
      %0 = arith.constant -1.000000e+00 : f32
      rdu.yield %0 : f32
    }
    %onehot = rdu.scatter %zeros[%labels] = %minus dim 1 {rdu.phase = #rdu<phase backward>} : tensor<6x8xf32>, tensor<6x1xi64>, tensor<6x1xf32> -> tensor<6x8xf32>
    %new = rdu.map %kv, %onehot {rdu.phase = #rdu<phase optimizer>} : (tensor<6x8xf32>, tensor<6x8xf32>) -> tensor<6x8xf32> {
    ^bb0(%0: f32, %1: f32):
      %2 = arith.subf %0, %1 : f32
      rdu.yield %2 : f32
    }
    func.return %kvsum, %new : tensor<f32>, tensor<6x8xf32>
  }
}

// CHECK:      tier.global @kv : tensor<6x8xf32> {kind = "parameter"
// CHECK:      %onehot = rdu.scatter {{.*}} dim 1 {{.*}} -> tensor<6x8xf32>
// CHECK:      %new = rdu.map %kv, %onehot {{.*}} -> tensor<6x8xf32>
