// RUN: rducc-opt --check-roundtrip -p 'rdu-partition{pp=2 dp=2 target=sn40l-8}' %s | filecheck %s
// RUN: not rducc-opt -p 'rdu-partition{pp=2 dp=4 target=sn40l-8}' %s 2>&1 | filecheck %s --check-prefix=ERR

// rdu-partition-microbatches.mlir's step (a batch of 4 run in 2 microbatches
// itself, rdu.microbatches) at dp=2 x pp=2: each replica runs its share of
// every microbatch. Each batched input is split with period 2 (a microbatch):
// replica r holds row r of each microbatch, so microbatch 1's slice (rows 2-3
// of the whole batch) is the local slice at row 1 of each replica's 2 rows, no
// gather. The loss's parts are summed over the replicas, and each weight's
// gradient is all-reduced once, after its sum over the microbatches (deferred
// under the rest of the backward).

// CHECK: rdu.partition = {tp = 1 : i64, pp = 2 : i64, dp = 2 : i64, microbatches = 2 : i64}
// CHECK: func.func @forward(%inputs: tensor<2x4xf32> {rdu.input = "inputs_0", rdu.shard = #rdu.split<(0, 2, 1, 2)>}, %inputs_1: tensor<2x2xf32> {rdu.input = "inputs_1", rdu.shard = #rdu.split<(0, 2, 1, 2)>}
// CHECK-NOT: rdu.all_gather
// CHECK: %slice = rdu.slice %inputs offsets [0, 0] strides [1, 1] {{.*}} : tensor<2x4xf32> -> tensor<1x4xf32>
// CHECK: %slice_2 = rdu.slice %inputs offsets [1, 0] strides [1, 1] {{.*}} : tensor<2x4xf32> -> tensor<1x4xf32>
// CHECK: rdu.all_reduce %sum group 2 {rdu.phase = #rdu<phase forward>
// CHECK: rdu.all_reduce %sum_1 group 2 {rdu.phase = #rdu<phase forward>
// CHECK: rdu.all_reduce %add_1 group 2 {rdu.phase = #rdu<phase backward>, rdu.stage = 1 : i64, rdu.deferred}
// CHECK: rdu.all_reduce %add_2 group 2 {rdu.phase = #rdu<phase backward>, rdu.stage = 0 : i64, rdu.deferred}
// CHECK-NOT: rdu.all_gather

// ERR: rdu-partition: dp=4 does not divide a microbatch of 2 (input 'inputs_0', batch 4 in 2 microbatches); use a dp that divides it, or fewer microbatches

builtin.module attributes {rdu.level = #rdu<level graph>, rdu.microbatches = 2 : i64} {
  tier.global @model.a.weight : tensor<4x4xf32> {kind = "parameter"}
  tier.global @model.b.weight : tensor<2x4xf32> {kind = "parameter"}
  func.func @forward(%inputs: tensor<4x4xf32> {rdu.input = "inputs_0"}, %inputs_1: tensor<4x2xf32> {rdu.input = "inputs_1"}, %p_model_a_weight: tensor<4x4xf32> {rdu.global = @model.a.weight}, %p_model_b_weight: tensor<2x4xf32> {rdu.global = @model.b.weight}) -> (tensor<f32>, tensor<4x4xf32>, tensor<2x4xf32>) attributes {rdu.result_roles = ["loss", "", ""], rdu.result_updates = ["", "buffer:model.a.weight", "buffer:model.b.weight"]} {
    %slice = rdu.slice %inputs offsets [0, 0] strides [1, 1] {rdu.phase = #rdu<phase forward>} : tensor<4x4xf32> -> tensor<2x4xf32>
    %slice_1 = rdu.slice %inputs_1 offsets [0, 0] strides [1, 1] {rdu.phase = #rdu<phase forward>} : tensor<4x2xf32> -> tensor<2x2xf32>
    %mm = rdu.matmul %slice, %p_model_a_weight transpose_rhs {rdu.phase = #rdu<phase forward>} : tensor<2x4xf32>, tensor<4x4xf32> -> tensor<2x4xf32>
    %relu = rdu.map %mm {rdu.phase = #rdu<phase forward>} : (tensor<2x4xf32>) -> tensor<2x4xf32> {
    ^bb0(%0: f32):
      %1 = arith.constant 0.000000e+00 : f32
      %2 = arith.maximumf %0, %1 : f32
      rdu.yield %2 : f32
    }
    %mm_1 = rdu.matmul %relu, %p_model_b_weight transpose_rhs {rdu.phase = #rdu<phase forward>} : tensor<2x4xf32>, tensor<2x4xf32> -> tensor<2x2xf32>
    %sub = rdu.map %mm_1, %slice_1 {rdu.phase = #rdu<phase forward>} : (tensor<2x2xf32>, tensor<2x2xf32>) -> tensor<2x2xf32> {
    ^bb0(%0: f32, %1: f32):
      %2 = arith.subf %0, %1 : f32
      rdu.yield %2 : f32
    }
    %pow = rdu.map %sub {rdu.phase = #rdu<phase forward>} : (tensor<2x2xf32>) -> tensor<2x2xf32> {
    ^bb0(%0: f32):
      %1 = arith.constant 1.000000e+00 : f32
      %2 = arith.mulf %1, %0 : f32
      %3 = arith.mulf %2, %0 : f32
      rdu.yield %3 : f32
    }
    %sum = rdu.reduce sum %pow dims [0, 1] {rdu.phase = #rdu<phase forward>} : tensor<2x2xf32> -> tensor<f32>
    %div = rdu.map %sum {rdu.phase = #rdu<phase forward>} : (tensor<f32>) -> tensor<f32> {
    ^bb0(%0: f32):
      %1 = arith.constant 2.000000e+00 : f32
      %2 = arith.divf %0, %1 : f32
      rdu.yield %2 : f32
    }
    %slice_2 = rdu.slice %inputs offsets [2, 0] strides [1, 1] {rdu.phase = #rdu<phase forward>} : tensor<4x4xf32> -> tensor<2x4xf32>
    %slice_3 = rdu.slice %inputs_1 offsets [2, 0] strides [1, 1] {rdu.phase = #rdu<phase forward>} : tensor<4x2xf32> -> tensor<2x2xf32>
    %mm_2 = rdu.matmul %slice_2, %p_model_a_weight transpose_rhs {rdu.phase = #rdu<phase forward>} : tensor<2x4xf32>, tensor<4x4xf32> -> tensor<2x4xf32>
    %relu_1 = rdu.map %mm_2 {rdu.phase = #rdu<phase forward>} : (tensor<2x4xf32>) -> tensor<2x4xf32> {
    ^bb0(%0: f32):
      %1 = arith.constant 0.000000e+00 : f32
      %2 = arith.maximumf %0, %1 : f32
      rdu.yield %2 : f32
    }
    %mm_3 = rdu.matmul %relu_1, %p_model_b_weight transpose_rhs {rdu.phase = #rdu<phase forward>} : tensor<2x4xf32>, tensor<2x4xf32> -> tensor<2x2xf32>
    %sub_1 = rdu.map %mm_3, %slice_3 {rdu.phase = #rdu<phase forward>} : (tensor<2x2xf32>, tensor<2x2xf32>) -> tensor<2x2xf32> {
    ^bb0(%0: f32, %1: f32):
      %2 = arith.subf %0, %1 : f32
      rdu.yield %2 : f32
    }
    %pow_1 = rdu.map %sub_1 {rdu.phase = #rdu<phase forward>} : (tensor<2x2xf32>) -> tensor<2x2xf32> {
    ^bb0(%0: f32):
      %1 = arith.constant 1.000000e+00 : f32
      %2 = arith.mulf %1, %0 : f32
      %3 = arith.mulf %2, %0 : f32
      rdu.yield %3 : f32
    }
    %sum_1 = rdu.reduce sum %pow_1 dims [0, 1] {rdu.phase = #rdu<phase forward>} : tensor<2x2xf32> -> tensor<f32>
    %div_1 = rdu.map %sum_1 {rdu.phase = #rdu<phase forward>} : (tensor<f32>) -> tensor<f32> {
    ^bb0(%0: f32):
      %1 = arith.constant 2.000000e+00 : f32
      %2 = arith.divf %0, %1 : f32
      rdu.yield %2 : f32
    }
    %add = rdu.map %div, %div_1 {rdu.phase = #rdu<phase forward>} : (tensor<f32>, tensor<f32>) -> tensor<f32> {
    ^bb0(%0: f32, %1: f32):
      %2 = arith.addf %0, %1 : f32
      rdu.yield %2 : f32
    }
    %div_2 = rdu.map {rdu.phase = #rdu<phase backward>} : () -> tensor<f32> {
      %0 = arith.constant 1.000000e+00 : f32
      %1 = arith.constant 2.000000e+00 : f32
      %2 = arith.divf %0, %1 : f32
      rdu.yield %2 : f32
    }
    %expand = rdu.broadcast %div_2 {rdu.phase = #rdu<phase backward>} : tensor<f32> -> tensor<2x2xf32>
    %pow_2 = rdu.map %sub_1 {rdu.phase = #rdu<phase backward>} : (tensor<2x2xf32>) -> tensor<2x2xf32> {
    ^bb0(%0: f32):
      %1 = arith.constant 1.000000e+00 : f32
      %2 = arith.mulf %1, %0 : f32
      rdu.yield %2 : f32
    }
    %mul = rdu.map %pow_2 {rdu.phase = #rdu<phase backward>} : (tensor<2x2xf32>) -> tensor<2x2xf32> {
    ^bb0(%0: f32):
      %1 = arith.constant 2.000000e+00 : f32
      %2 = arith.mulf %0, %1 : f32
      rdu.yield %2 : f32
    }
    %mul_1 = rdu.map %expand, %mul {rdu.phase = #rdu<phase backward>} : (tensor<2x2xf32>, tensor<2x2xf32>) -> tensor<2x2xf32> {
    ^bb0(%0: f32, %1: f32):
      %2 = arith.mulf %0, %1 : f32
      rdu.yield %2 : f32
    }
    %permute = rdu.transpose %mul_1 perm [1, 0] {rdu.phase = #rdu<phase backward>} : tensor<2x2xf32> -> tensor<2x2xf32>
    %mm_4 = rdu.matmul %permute, %relu_1 {rdu.phase = #rdu<phase backward>} : tensor<2x2xf32>, tensor<2x4xf32> -> tensor<2x4xf32>
    %mm_5 = rdu.matmul %mul_1, %p_model_b_weight {rdu.phase = #rdu<phase backward>} : tensor<2x2xf32>, tensor<2x4xf32> -> tensor<2x4xf32>
    %le = rdu.map %relu_1 {rdu.phase = #rdu<phase backward>} : (tensor<2x4xf32>) -> tensor<2x4xi1> {
    ^bb0(%0: f32):
      %1 = arith.constant 0.000000e+00 : f32
      %2 = arith.cmpf ole, %0, %1 : f32
      rdu.yield %2 : i1
    }
    %where = rdu.map %le, %mm_5 {rdu.phase = #rdu<phase backward>} : (tensor<2x4xi1>, tensor<2x4xf32>) -> tensor<2x4xf32> {
    ^bb0(%0: i1, %1: f32):
      %2 = arith.constant 0.000000e+00 : f32
      %3 = arith.select %0, %2, %1 : f32
      rdu.yield %3 : f32
    }
    %permute_1 = rdu.transpose %where perm [1, 0] {rdu.phase = #rdu<phase backward>} : tensor<2x4xf32> -> tensor<4x2xf32>
    %mm_6 = rdu.matmul %permute_1, %slice_2 {rdu.phase = #rdu<phase backward>} : tensor<4x2xf32>, tensor<2x4xf32> -> tensor<4x4xf32>
    %div_3 = rdu.map {rdu.phase = #rdu<phase backward>} : () -> tensor<f32> {
      %0 = arith.constant 1.000000e+00 : f32
      %1 = arith.constant 2.000000e+00 : f32
      %2 = arith.divf %0, %1 : f32
      rdu.yield %2 : f32
    }
    %expand_1 = rdu.broadcast %div_3 {rdu.phase = #rdu<phase backward>} : tensor<f32> -> tensor<2x2xf32>
    %pow_3 = rdu.map %sub {rdu.phase = #rdu<phase backward>} : (tensor<2x2xf32>) -> tensor<2x2xf32> {
    ^bb0(%0: f32):
      %1 = arith.constant 1.000000e+00 : f32
      %2 = arith.mulf %1, %0 : f32
      rdu.yield %2 : f32
    }
    %mul_2 = rdu.map %pow_3 {rdu.phase = #rdu<phase backward>} : (tensor<2x2xf32>) -> tensor<2x2xf32> {
    ^bb0(%0: f32):
      %1 = arith.constant 2.000000e+00 : f32
      %2 = arith.mulf %0, %1 : f32
      rdu.yield %2 : f32
    }
    %mul_3 = rdu.map %expand_1, %mul_2 {rdu.phase = #rdu<phase backward>} : (tensor<2x2xf32>, tensor<2x2xf32>) -> tensor<2x2xf32> {
    ^bb0(%0: f32, %1: f32):
      %2 = arith.mulf %0, %1 : f32
      rdu.yield %2 : f32
    }
    %permute_2 = rdu.transpose %mul_3 perm [1, 0] {rdu.phase = #rdu<phase backward>} : tensor<2x2xf32> -> tensor<2x2xf32>
    %mm_7 = rdu.matmul %permute_2, %relu {rdu.phase = #rdu<phase backward>} : tensor<2x2xf32>, tensor<2x4xf32> -> tensor<2x4xf32>
    %mm_8 = rdu.matmul %mul_3, %p_model_b_weight {rdu.phase = #rdu<phase backward>} : tensor<2x2xf32>, tensor<2x4xf32> -> tensor<2x4xf32>
    %add_1 = rdu.map %mm_4, %mm_7 {rdu.phase = #rdu<phase backward>} : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32> {
    ^bb0(%0: f32, %1: f32):
      %2 = arith.addf %0, %1 : f32
      rdu.yield %2 : f32
    }
    %le_1 = rdu.map %relu {rdu.phase = #rdu<phase backward>} : (tensor<2x4xf32>) -> tensor<2x4xi1> {
    ^bb0(%0: f32):
      %1 = arith.constant 0.000000e+00 : f32
      %2 = arith.cmpf ole, %0, %1 : f32
      rdu.yield %2 : i1
    }
    %where_1 = rdu.map %le_1, %mm_8 {rdu.phase = #rdu<phase backward>} : (tensor<2x4xi1>, tensor<2x4xf32>) -> tensor<2x4xf32> {
    ^bb0(%0: i1, %1: f32):
      %2 = arith.constant 0.000000e+00 : f32
      %3 = arith.select %0, %2, %1 : f32
      rdu.yield %3 : f32
    }
    %permute_3 = rdu.transpose %where_1 perm [1, 0] {rdu.phase = #rdu<phase backward>} : tensor<2x4xf32> -> tensor<4x2xf32>
    %mm_9 = rdu.matmul %permute_3, %slice {rdu.phase = #rdu<phase backward>} : tensor<4x2xf32>, tensor<2x4xf32> -> tensor<4x4xf32>
    %add_2 = rdu.map %mm_6, %mm_9 {rdu.phase = #rdu<phase backward>} : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32> {
    ^bb0(%0: f32, %1: f32):
      %2 = arith.addf %0, %1 : f32
      rdu.yield %2 : f32
    }
    %add_3 = rdu.map %p_model_a_weight, %add_2 {rdu.phase = #rdu<phase optimizer>} : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32> {
    ^bb0(%0: f32, %1: f32):
      %2 = arith.constant -1.000000e-01 : f32
      %3 = arith.mulf %1, %2 : f32
      %4 = arith.addf %0, %3 : f32
      rdu.yield %4 : f32
    }
    %add_4 = rdu.map %p_model_b_weight, %add_1 {rdu.phase = #rdu<phase optimizer>} : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32> {
    ^bb0(%0: f32, %1: f32):
      %2 = arith.constant -1.000000e-01 : f32
      %3 = arith.mulf %1, %2 : f32
      %4 = arith.addf %0, %3 : f32
      rdu.yield %4 : f32
    }
    func.return %add, %add_3, %add_4 : tensor<f32>, tensor<4x4xf32>, tensor<2x4xf32>
  }
}
