// Vocab-parallel cross entropy (passes/rdu_partition/vocab.py): an output layer split
// by its vocabulary columns keeps its logits split through log_softmax, the gather of
// each row's label and its backward; only per-row figures cross sockets.
// RUN: rducc-opt --check-roundtrip -p 'rdu-partition{tp=2 target=sn40l-8}' --split-input-file %s | filecheck %s
// RUN: rducc-opt -p 'rdu-partition{tp=2 target=sn40l-8}' --split-input-file %s | filecheck %s --check-prefix=WIDE

builtin.module attributes {rdu.level = #rdu<level graph>} {
  tier.global @lm_head.weight : tensor<8x4xf32> {kind = "parameter"}
  func.func @forward(%x: tensor<3x4xf32> {rdu.input = "x"}, %labels: tensor<3xi64> {rdu.input = "labels"}, %p_lm_head_weight: tensor<8x4xf32> {rdu.global = @lm_head.weight}) -> (tensor<f32>, tensor<8x4xf32>) attributes {rdu.result_roles = ["loss", "gradient:parameter:lm_head.weight"]} {
    %mm = rdu.matmul %x, %p_lm_head_weight transpose_rhs {rdu.phase = #rdu<phase forward>} : tensor<3x4xf32>, tensor<8x4xf32> -> tensor<3x8xf32>
    %_log_softmax = rdu.reduce max %mm dims [1] keepdim {rdu.phase = #rdu<phase forward>} : tensor<3x8xf32> -> tensor<3x1xf32>
    %_log_softmax_1 = rdu.map %mm, %_log_softmax {rdu.phase = #rdu<phase forward>} : (tensor<3x8xf32>, tensor<3x1xf32>) -> tensor<3x8xf32> {
    ^bb0(%0: f32, %1: f32):
      %2 = arith.subf %0, %1 : f32
      %3 = math.exp %2 : f32
      rdu.yield %3 : f32
    }
    %_log_softmax_2 = rdu.reduce sum %_log_softmax_1 dims [1] keepdim {rdu.phase = #rdu<phase forward>} : tensor<3x8xf32> -> tensor<3x1xf32>
    %_log_softmax_3 = rdu.map %mm, %_log_softmax, %_log_softmax_2 {rdu.phase = #rdu<phase forward>} : (tensor<3x8xf32>, tensor<3x1xf32>, tensor<3x1xf32>) -> tensor<3x8xf32> {
    ^bb0(%0: f32, %1: f32, %2: f32):
      %3 = arith.subf %0, %1 : f32
      %4 = math.log %2 : f32
      %5 = arith.subf %3, %4 : f32
      rdu.yield %5 : f32
    }
    %ne = rdu.map %labels {rdu.phase = #rdu<phase forward>} : (tensor<3xi64>) -> tensor<3xi1> {
    ^bb0(%0: i64):
      %1 = arith.constant -100 : i64
      %2 = arith.cmpi ne, %0, %1 : i64
      rdu.yield %2 : i1
    }
    %where = rdu.map %ne, %labels {rdu.phase = #rdu<phase forward>} : (tensor<3xi1>, tensor<3xi64>) -> tensor<3xi64> {
    ^bb0(%0: i1, %1: i64):
      %2 = arith.constant 0 : i64
      %3 = arith.select %0, %1, %2 : i64
      rdu.yield %3 : i64
    }
    %unsqueeze = rdu.reshape %where {rdu.phase = #rdu<phase forward>} : tensor<3xi64> -> tensor<3x1xi64>
    %gather = rdu.iota start 0 step 1 {rdu.phase = #rdu<phase forward>} : tensor<3xi64>
    %gather_1 = rdu.reshape %gather {rdu.phase = #rdu<phase forward>} : tensor<3xi64> -> tensor<3x1xi64>
    %gather_2 = rdu.gather %_log_softmax_3[%gather_1, %unsqueeze] dim 0 {rdu.phase = #rdu<phase forward>} : tensor<3x8xf32>, tensor<3x1xi64>, tensor<3x1xi64> -> tensor<3x1xf32>
    %squeeze = rdu.reshape %gather_2 {rdu.phase = #rdu<phase forward>} : tensor<3x1xf32> -> tensor<3xf32>
    %neg = rdu.map %squeeze {rdu.phase = #rdu<phase forward>} : (tensor<3xf32>) -> tensor<3xf32> {
    ^bb0(%0: f32):
      %1 = arith.negf %0 : f32
      rdu.yield %1 : f32
    }
    %ne_1 = rdu.map %labels {rdu.phase = #rdu<phase forward>} : (tensor<3xi64>) -> tensor<3xi1> {
    ^bb0(%0: i64):
      %1 = arith.constant -100 : i64
      %2 = arith.cmpi ne, %0, %1 : i64
      rdu.yield %2 : i1
    }
    %where_1 = rdu.map %ne_1, %neg {rdu.phase = #rdu<phase forward>} : (tensor<3xi1>, tensor<3xf32>) -> tensor<3xf32> {
    ^bb0(%0: i1, %1: f32):
      %2 = arith.constant 0.000000e+00 : f32
      %3 = arith.select %0, %1, %2 : f32
      rdu.yield %3 : f32
    }
    %ne_2 = rdu.map %labels {rdu.phase = #rdu<phase forward>} : (tensor<3xi64>) -> tensor<3xi1> {
    ^bb0(%0: i64):
      %1 = arith.constant -100 : i64
      %2 = arith.cmpi ne, %0, %1 : i64
      rdu.yield %2 : i1
    }
    %sum = rdu.map %ne_2 {rdu.phase = #rdu<phase forward>} : (tensor<3xi1>) -> tensor<3xi64> {
    ^bb0(%0: i1):
      %1 = arith.extui %0 : i1 to i64
      rdu.yield %1 : i64
    }
    %sum_1 = rdu.reduce sum %sum dims [0] {rdu.phase = #rdu<phase forward>} : tensor<3xi64> -> tensor<i64>
    %_to_copy = rdu.map %sum_1 {rdu.phase = #rdu<phase forward>} : (tensor<i64>) -> tensor<f32> {
    ^bb0(%0: i64):
      %1 = arith.sitofp %0 : i64 to f32
      rdu.yield %1 : f32
    }
    %sum_2 = rdu.reduce sum %where_1 dims [0] {rdu.phase = #rdu<phase forward>} : tensor<3xf32> -> tensor<f32>
    %div = rdu.map %sum_2, %_to_copy {rdu.phase = #rdu<phase forward>} : (tensor<f32>, tensor<f32>) -> tensor<f32> {
    ^bb0(%0: f32, %1: f32):
      %2 = arith.divf %0, %1 : f32
      rdu.yield %2 : f32
    }
    %div_1 = rdu.map %_to_copy {rdu.phase = #rdu<phase backward>} : (tensor<f32>) -> tensor<f32> {
    ^bb0(%0: f32):
      %1 = arith.constant 1.000000e+00 : f32
      %2 = arith.divf %1, %0 : f32
      rdu.yield %2 : f32
    }
    %unsqueeze_1 = rdu.reshape %labels {rdu.phase = #rdu<phase backward>} : tensor<3xi64> -> tensor<3x1xi64>
    %ne_3 = rdu.map %unsqueeze_1 {rdu.phase = #rdu<phase backward>} : (tensor<3x1xi64>) -> tensor<3x1xi1> {
    ^bb0(%0: i64):
      %1 = arith.constant -100 : i64
      %2 = arith.cmpi ne, %0, %1 : i64
      rdu.yield %2 : i1
    }
    %where_2 = rdu.map %ne_3, %unsqueeze_1 {rdu.phase = #rdu<phase backward>} : (tensor<3x1xi1>, tensor<3x1xi64>) -> tensor<3x1xi64> {
    ^bb0(%0: i1, %1: i64):
      %2 = arith.constant 0 : i64
      %3 = arith.select %0, %1, %2 : i64
      rdu.yield %3 : i64
    }
    %full_like = rdu.map {rdu.phase = #rdu<phase backward>} : () -> tensor<3x8xf32> {
      %0 = arith.constant 0.000000e+00 : f32
      rdu.yield %0 : f32
    }
    %scatter = rdu.map {rdu.phase = #rdu<phase backward>} : () -> tensor<3x1xf32> {
      %0 = arith.constant -1.000000e+00 : f32
      rdu.yield %0 : f32
    }
    %scatter_1 = rdu.scatter %full_like[%where_2] = %scatter dim 1 {rdu.phase = #rdu<phase backward>} : tensor<3x8xf32>, tensor<3x1xi64>, tensor<3x1xf32> -> tensor<3x8xf32>
    %ne_4 = rdu.map %unsqueeze_1 {rdu.phase = #rdu<phase backward>} : (tensor<3x1xi64>) -> tensor<3x1xi1> {
    ^bb0(%0: i64):
      %1 = arith.constant -100 : i64
      %2 = arith.cmpi ne, %0, %1 : i64
      rdu.yield %2 : i1
    }
    %where_3 = rdu.map %ne_4, %div_1 {rdu.phase = #rdu<phase backward>} : (tensor<3x1xi1>, tensor<f32>) -> tensor<3x1xf32> {
    ^bb0(%0: i1, %1: f32):
      %2 = arith.constant 0.000000e+00 : f32
      %3 = arith.select %0, %1, %2 : f32
      rdu.yield %3 : f32
    }
    %mul = rdu.map %scatter_1, %where_3 {rdu.phase = #rdu<phase backward>} : (tensor<3x8xf32>, tensor<3x1xf32>) -> tensor<3x8xf32> {
    ^bb0(%0: f32, %1: f32):
      %2 = arith.mulf %0, %1 : f32
      rdu.yield %2 : f32
    }
    %exp = rdu.map %_log_softmax_3 {rdu.phase = #rdu<phase backward>} : (tensor<3x8xf32>) -> tensor<3x8xf32> {
    ^bb0(%0: f32):
      %1 = math.exp %0 : f32
      rdu.yield %1 : f32
    }
    %sum_3 = rdu.reduce sum %mul dims [1] keepdim {rdu.phase = #rdu<phase backward>} : tensor<3x8xf32> -> tensor<3x1xf32>
    %mul_1 = rdu.map %exp, %sum_3 {rdu.phase = #rdu<phase backward>} : (tensor<3x8xf32>, tensor<3x1xf32>) -> tensor<3x8xf32> {
    ^bb0(%0: f32, %1: f32):
      %2 = arith.mulf %0, %1 : f32
      rdu.yield %2 : f32
    }
    %sub = rdu.map %mul, %mul_1 {rdu.phase = #rdu<phase backward>} : (tensor<3x8xf32>, tensor<3x8xf32>) -> tensor<3x8xf32> {
    ^bb0(%0: f32, %1: f32):
      %2 = arith.subf %0, %1 : f32
      rdu.yield %2 : f32
    }
    %permute = rdu.transpose %sub perm [1, 0] {rdu.phase = #rdu<phase backward>} : tensor<3x8xf32> -> tensor<8x3xf32>
    %mm_1 = rdu.matmul %permute, %x {rdu.phase = #rdu<phase backward>} : tensor<8x3xf32>, tensor<3x4xf32> -> tensor<8x4xf32>
    func.return %div, %mm_1 : tensor<f32>, tensor<8x4xf32>
  }
}

// The max over the vocabulary: each rank's, the two all-gathered, their max.
// CHECK:      tier.global @lm_head.weight : tensor<4x4xf32> {{.*}}rdu.shard = #rdu.split<(0, 2, 1)>
// CHECK:      %mm = rdu.matmul {{.*}} -> tensor<3x4xf32>
// CHECK-NEXT: %[[LOCAL:.*]] = rdu.reduce max %mm dims [1] keepdim {{.*}} : tensor<3x4xf32> -> tensor<3x1xf32>
// CHECK-NEXT: %[[MAXES:.*]] = rdu.all_gather %[[LOCAL]] dim 1 group 2 {{.*}} : tensor<3x1xf32> -> tensor<3x2xf32>
// CHECK-NEXT: %_log_softmax = rdu.reduce max %[[MAXES]] dims [1] keepdim {{.*}} : tensor<3x2xf32> -> tensor<3x1xf32>
// the sum of exps: a partial sum
// CHECK:      rdu.all_reduce %_log_softmax_2 group 2 {{.*}} : tensor<3x1xf32> -> tensor<3x1xf32>
// the label's log-probability: gathered where the label is in this rank's 4 columns, 0 elsewhere, all-reduced
// CHECK:      %[[RAMP:.*]] = rdu.iota start 0 step 4 {{.*}} : tensor<2xi64>
// CHECK-NEXT: %[[OFFSET:.*]] = rdu.local_part %[[RAMP]] dim 0 group 2 {{.*}} : tensor<2xi64> -> tensor<1xi64>
// CHECK-NEXT: %[[LOCALID:.*]] = rdu.map %unsqueeze, %[[OFFSET]]
// CHECK:      arith.subi
// CHECK:      %[[INSIDE:.*]] = rdu.map %[[LOCALID]]
// CHECK:      %[[SAFE:.*]] = rdu.map %[[INSIDE]], %[[LOCALID]]
// CHECK:      %gather_2 = rdu.gather %_log_softmax_3[%gather_1, %[[SAFE]]] dim 0 {{.*}} : tensor<3x4xf32>, tensor<3x1xi64>, tensor<3x1xi64> -> tensor<3x1xf32>
// CHECK-NEXT: %[[PICKED:.*]] = rdu.map %[[INSIDE]], %gather_2
// CHECK:      %squeeze = rdu.reshape %[[PICKED]]
// CHECK:      rdu.all_reduce %neg group 2 {{.*}} : tensor<3xf32> -> tensor<3xf32>
// the backward's one-hot: each rank scatters into its part
// CHECK:      %scatter_1 = rdu.scatter {{.*}} dim 1 {{.*}} : tensor<3x4xf32>, tensor<3x1xi64>, tensor<3x1xf32> -> tensor<3x4xf32>
// CHECK:      rdu.all_reduce %sum_3 group 2 {{.*}} : tensor<3x1xf32> -> tensor<3x1xf32>
// the output layer's gradient, split as its weight
// CHECK:      %mm_1 = rdu.matmul %permute, %x {{.*}} : tensor<4x3xf32>, tensor<3x4xf32> -> tensor<4x4xf32>
// CHECK:      func.return %div, %mm_1 : tensor<f32>, tensor<4x4xf32>

// nothing of the vocabulary's width (8) is gathered
// WIDE-NOT:   rdu.all_gather {{.*}} -> tensor<{{.*}}8xf32>
// WIDE:       func.return %div, %mm_1

// -----

// Where the rewrite must not fire: an argmax over the split vocabulary (not a max:
// the index of the largest needs it whole), and a scatter into a value that is not
// a constant fill (each rank cannot make its part alone): both take their operand whole.
builtin.module attributes {rdu.level = #rdu<level graph>} {
  tier.global @w : tensor<8x4xf32> {kind = "parameter"}
  func.func @forward(%x: tensor<3x4xf32> {rdu.input = "x"}, %base: tensor<3x8xf32> {rdu.input = "base"}, %ids: tensor<3x1xi64> {rdu.input = "ids"}, %w: tensor<8x4xf32> {rdu.global = @w}) -> (tensor<3xi64>, tensor<3x8xf32>) {
    %mm = rdu.matmul %x, %w transpose_rhs : tensor<3x4xf32>, tensor<8x4xf32> -> tensor<3x8xf32>
    %best = rdu.reduce argmax %mm dims [1] : tensor<3x8xf32> -> tensor<3xi64>
    %ones = rdu.map : () -> tensor<3x1xf32> {
      %0 = arith.constant 1.000000e+00 : f32
      rdu.yield %0 : f32
    }
    %hot = rdu.scatter %base[%ids] = %ones dim 1 : tensor<3x8xf32>, tensor<3x1xi64>, tensor<3x1xf32> -> tensor<3x8xf32>
    %mixed = rdu.map %hot, %mm : (tensor<3x8xf32>, tensor<3x8xf32>) -> tensor<3x8xf32> {
    ^bb0(%0: f32, %1: f32):
      %2 = arith.mulf %0, %1 : f32
      rdu.yield %2 : f32
    }
    func.return %best, %mixed : tensor<3xi64>, tensor<3x8xf32>
  }
}

// CHECK:      %mm = rdu.matmul {{.*}} -> tensor<3x4xf32>
// CHECK-NEXT: %[[WHOLE:.*]] = rdu.all_gather %mm dim 1 group 2 {{.*}} -> tensor<3x8xf32>
// CHECK-NEXT: %best = rdu.reduce argmax %[[WHOLE]] dims [1]
// CHECK:      %hot = rdu.scatter %base[%ids] = %ones dim 1 : tensor<3x8xf32>, tensor<3x1xi64>, tensor<3x1xf32> -> tensor<3x8xf32>
// CHECK:      %mixed = rdu.map %hot, %[[WHOLE]]


// -----

// A scatter-add shaped as a weight held whole (an embedding's gradient, [8, 4] like @emb) stays
// whole, though the output layer's weight of that shape is split along the scattered dim.
builtin.module attributes {rdu.level = #rdu<level graph>} {
  tier.global @emb : tensor<8x4xf32> {kind = "parameter"}
  tier.global @w : tensor<8x4xf32> {kind = "parameter"}
  func.func @forward(%ids: tensor<3xi64> {rdu.input = "ids"}, %idx: tensor<3x4xi64> {rdu.input = "idx"}, %src: tensor<3x4xf32> {rdu.input = "src"}, %emb: tensor<8x4xf32> {rdu.global = @emb}, %w: tensor<8x4xf32> {rdu.global = @w}) -> (tensor<3x8xf32>, tensor<8x4xf32>) {
    %rows = rdu.gather %emb[%ids] dim 0 : tensor<8x4xf32>, tensor<3xi64> -> tensor<3x4xf32>
    %mm = rdu.matmul %rows, %w transpose_rhs : tensor<3x4xf32>, tensor<8x4xf32> -> tensor<3x8xf32>
    %zeros = rdu.map : () -> tensor<8x4xf32> {
      %0 = arith.constant 0.000000e+00 : f32
      rdu.yield %0 : f32
    }
    %grad = rdu.scatter %zeros[%idx] = %src dim 0 reduce sum : tensor<8x4xf32>, tensor<3x4xi64>, tensor<3x4xf32> -> tensor<8x4xf32>
    func.return %mm, %grad : tensor<3x8xf32>, tensor<8x4xf32>
  }
}

// CHECK:      tier.global @emb : tensor<8x4xf32> {kind = "parameter", rdu.whole_reader = ["rdu.gather", ""]}
// CHECK:      tier.global @w : tensor<4x4xf32> {kind = "parameter", rdu.shard = #rdu.split<(0, 2, 1)>}
// CHECK:      %grad = rdu.scatter %zeros[%idx] = %src dim 0 reduce sum : tensor<8x4xf32>, tensor<3x4xi64>, tensor<3x4xf32> -> tensor<8x4xf32>
// CHECK-NEXT: func.return %mm, %grad : tensor<3x4xf32>, tensor<8x4xf32>
