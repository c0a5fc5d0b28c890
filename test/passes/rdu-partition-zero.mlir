// RUN: rducc-opt --check-roundtrip -p 'rdu-partition{dp=2 zero=1 target=sn40l-8}' %s | filecheck %s --check-prefix=STAGE1
// RUN: rducc-opt --check-roundtrip -p 'rdu-partition{dp=2 zero=2 target=sn40l-8}' %s | filecheck %s --check-prefix=STAGE2
// RUN: rducc-opt --check-roundtrip -p 'rdu-partition{dp=2 zero=3 target=sn40l-8}' %s | filecheck %s --check-prefix=STAGE3
// RUN: not rducc-opt -p 'rdu-partition{dp=2 zero=4 target=sn40l-8}' %s 2>&1 | filecheck %s --check-prefix=ERR-STAGE
// RUN: not rducc-opt -p 'rdu-partition{tp=2 zero=2 target=sn40l-8}' %s 2>&1 | filecheck %s --check-prefix=ERR-DP

// A Linear(4, 2) + MSE training step with AdamW at batch 4 (`rducc lin.pt2
// --train --optimizer adamw --pass-pipeline rdu-canonicalize`). ZeRO at dp=2:
// each replica holds half of every moment (the sharded globals, rdu.shard),
// the step counts (scalars) stay whole. Stage 1 all-reduces each gradient
// where the backward makes it (held whole, deferred under the backward) and
// the update cuts the replica's part (rdu.local_part, optimizer phase); stage
// 2 reduce-scatters it there instead (only the part is held). Both cut the
// parameter locally and all-gather the updated one. Stage 3 holds the
// parameters split too: each is all-gathered just before the forward reads
// it (this step's backward reads no weight: x needs no gradient), updated on
// the replica's part and written back split, never gathered after the
// update. An unknown stage is refused, and ZeRO without replicas.

// STAGE1:      rdu.partition = {tp = 1 : i64, pp = 1 : i64, dp = 2 : i64, zero = 1 : i64}
// STAGE1:      tier.global @optimizer.step.fc.weight : tensor<f32> {kind = "buffer"}
// STAGE1-NEXT: tier.global @optimizer.exp_avg.fc.weight : tensor<1x4xf32> {kind = "buffer", rdu.shard = #rdu.split<(0, 2, 1)>}
// STAGE1-NEXT: tier.global @optimizer.exp_avg_sq.fc.weight : tensor<1x4xf32> {kind = "buffer", rdu.shard = #rdu.split<(0, 2, 1)>}
// STAGE1:      tier.global @optimizer.exp_avg.fc.bias : tensor<1xf32> {kind = "buffer", rdu.shard = #rdu.split<(0, 2, 1)>}
// STAGE1-NOT:  rdu.reduce_scatter
// STAGE1:      %[[W:.*]] = rdu.all_reduce %mm group 2 {rdu.phase = #rdu<phase backward>, rdu.deferred} : tensor<2x4xf32> -> tensor<2x4xf32>
// STAGE1-NEXT: rdu.local_part %[[W]] dim 0 group 2 {rdu.phase = #rdu<phase optimizer>} : tensor<2x4xf32> -> tensor<1x4xf32>
// The bias gradient is a view of a partial sum: the sum is all-reduced once and the
// view reads the reduced sum (`_view_of_reduced`); the view of the partial sum,
// read by nothing then, is erased.
// STAGE1:      %[[S:.*]] = rdu.all_reduce %sum group 2 {rdu.phase = #rdu<phase backward>, rdu.deferred} : tensor<1x2xf32> -> tensor<1x2xf32>
// STAGE1-NOT:  rdu.reshape %sum {
// STAGE1:      %[[B:.*]] = rdu.reshape %[[S]] {rdu.phase = #rdu<phase backward>} : tensor<1x2xf32> -> tensor<2xf32>
// STAGE1-NEXT: rdu.local_part %[[B]] dim 0 group 2 {rdu.phase = #rdu<phase optimizer>} : tensor<2xf32> -> tensor<1xf32>
// STAGE1-NOT:  rdu.reduce_scatter
// STAGE1:      rdu.all_gather %{{.*}} dim 0 group 2 {rdu.phase = #rdu<phase optimizer>} : tensor<1x4xf32> -> tensor<2x4xf32>
// STAGE1:      rdu.all_gather %{{.*}} dim 0 group 2 {rdu.phase = #rdu<phase optimizer>} : tensor<1xf32> -> tensor<2xf32>

// STAGE2:      rdu.partition = {tp = 1 : i64, pp = 1 : i64, dp = 2 : i64, zero = 2 : i64}
// STAGE2:      tier.global @optimizer.exp_avg.fc.weight : tensor<1x4xf32> {kind = "buffer", rdu.shard = #rdu.split<(0, 2, 1)>}
// STAGE2:      rdu.all_reduce %mean group 2
// STAGE2-NOT:  rdu.all_reduce
// STAGE2:      rdu.reduce_scatter %mm dim 0 group 2 {rdu.phase = #rdu<phase backward>, rdu.deferred} : tensor<2x4xf32> -> tensor<1x4xf32>
// STAGE2-NOT:  rdu.all_reduce
// STAGE2:      rdu.reduce_scatter %view dim 0 group 2 {rdu.phase = #rdu<phase backward>, rdu.deferred} : tensor<2xf32> -> tensor<1xf32>
// STAGE2-NOT:  rdu.all_reduce
// STAGE2:      rdu.all_gather %{{.*}} dim 0 group 2 {rdu.phase = #rdu<phase optimizer>} : tensor<1x4xf32> -> tensor<2x4xf32>
// STAGE2:      rdu.all_gather %{{.*}} dim 0 group 2 {rdu.phase = #rdu<phase optimizer>} : tensor<1xf32> -> tensor<2xf32>

// STAGE3:      rdu.partition = {tp = 1 : i64, pp = 1 : i64, dp = 2 : i64, zero = 3 : i64}
// STAGE3:      tier.global @fc.weight : tensor<1x4xf32> {kind = "parameter", rdu.shard = #rdu.split<(0, 2, 1)>}
// STAGE3-NEXT: tier.global @fc.bias : tensor<1xf32> {kind = "parameter", rdu.shard = #rdu.split<(0, 2, 1)>}
// STAGE3:      %[[W:.*]] = rdu.all_gather %p_fc_weight dim 0 group 2 {rdu.phase = #rdu<phase forward>} : tensor<1x4xf32> -> tensor<2x4xf32>
// STAGE3-NEXT: rdu.matmul %x, %[[W]] transpose_rhs
// STAGE3:      %[[B:.*]] = rdu.all_gather %p_fc_bias dim 0 group 2 {rdu.phase = #rdu<phase forward>} : tensor<1xf32> -> tensor<2xf32>
// STAGE3-NEXT: rdu.map %[[B]], %addmm
// STAGE3:      rdu.reduce_scatter %mm dim 0 group 2 {rdu.phase = #rdu<phase backward>, rdu.deferred}
// STAGE3-NOT:  rdu.all_gather
// STAGE3-NOT:  rdu.local_part %p_fc
// STAGE3:      func.return %mean_1, %{{.*}}, %{{.*}}, {{.*}} : tensor<f32>, tensor<1x4xf32>, tensor<1xf32>,

// ERR-STAGE: rdu-partition: zero=4 is not a ZeRO stage: 1 (optimizer state sharded), 2 (and gradients) or 3 (and parameters)
// ERR-DP: rdu-partition: zero shards the optimizer state over the data-parallel replicas: it needs dp >= 2, got dp=0

builtin.module attributes {rdu.level = #rdu<level graph>} {
  tier.global @fc.weight : tensor<2x4xf32> {kind = "parameter"}
  tier.global @fc.bias : tensor<2xf32> {kind = "parameter"}
  tier.global @optimizer.step.fc.weight : tensor<f32> {kind = "buffer"}
  tier.global @optimizer.exp_avg.fc.weight : tensor<2x4xf32> {kind = "buffer"}
  tier.global @optimizer.exp_avg_sq.fc.weight : tensor<2x4xf32> {kind = "buffer"}
  tier.global @optimizer.step.fc.bias : tensor<f32> {kind = "buffer"}
  tier.global @optimizer.exp_avg.fc.bias : tensor<2xf32> {kind = "buffer"}
  tier.global @optimizer.exp_avg_sq.fc.bias : tensor<2xf32> {kind = "buffer"}
  func.func @forward(%x: tensor<4x4xf32> {rdu.input = "x"}, %y: tensor<4x2xf32> {rdu.input = "y"}, %p_fc_weight: tensor<2x4xf32> {rdu.global = @fc.weight}, %p_fc_bias: tensor<2xf32> {rdu.global = @fc.bias}, %0: tensor<f32> {rdu.global = @optimizer.step.fc.weight}, %1: tensor<2x4xf32> {rdu.global = @optimizer.exp_avg.fc.weight}, %2: tensor<2x4xf32> {rdu.global = @optimizer.exp_avg_sq.fc.weight}, %3: tensor<f32> {rdu.global = @optimizer.step.fc.bias}, %4: tensor<2xf32> {rdu.global = @optimizer.exp_avg.fc.bias}, %5: tensor<2xf32> {rdu.global = @optimizer.exp_avg_sq.fc.bias}) -> (tensor<f32>, tensor<2x4xf32>, tensor<2xf32>, tensor<f32>, tensor<2x4xf32>, tensor<2x4xf32>, tensor<f32>, tensor<2xf32>, tensor<2xf32>) attributes {rdu.result_roles = ["loss", "", "", "", "", "", "", "", ""], rdu.result_updates = ["", "buffer:fc.weight", "buffer:fc.bias", "buffer:optimizer.step.fc.weight", "buffer:optimizer.exp_avg.fc.weight", "buffer:optimizer.exp_avg_sq.fc.weight", "buffer:optimizer.step.fc.bias", "buffer:optimizer.exp_avg.fc.bias", "buffer:optimizer.exp_avg_sq.fc.bias"]} {
    %addmm = rdu.matmul %x, %p_fc_weight transpose_rhs {rdu.phase = #rdu<phase forward>} : tensor<4x4xf32>, tensor<2x4xf32> -> tensor<4x2xf32>
    %addmm_1 = rdu.map %p_fc_bias, %addmm {rdu.phase = #rdu<phase forward>} : (tensor<2xf32>, tensor<4x2xf32>) -> tensor<4x2xf32> {
    ^bb0(%6: f32, %7: f32):
      %8 = arith.addf %7, %6 : f32
      rdu.yield %8 : f32
    }
    %sub = rdu.map %addmm_1, %y {rdu.phase = #rdu<phase forward>} : (tensor<4x2xf32>, tensor<4x2xf32>) -> tensor<4x2xf32> {
    ^bb0(%6: f32, %7: f32):
      %8 = arith.subf %6, %7 : f32
      rdu.yield %8 : f32
    }
    %pow = rdu.map %sub {rdu.phase = #rdu<phase forward>} : (tensor<4x2xf32>) -> tensor<4x2xf32> {
    ^bb0(%6: f32):
      %7 = arith.constant 1.000000e+00 : f32
      %8 = arith.mulf %7, %6 : f32
      %9 = arith.mulf %8, %6 : f32
      rdu.yield %9 : f32
    }
    %mean = rdu.reduce sum %pow dims [0, 1] {rdu.phase = #rdu<phase forward>} : tensor<4x2xf32> -> tensor<f32>
    %mean_1 = rdu.map %mean {rdu.phase = #rdu<phase forward>} : (tensor<f32>) -> tensor<f32> {
    ^bb0(%6: f32):
      %7 = arith.constant 8.000000e+00 : f32
      %8 = arith.divf %6, %7 : f32
      rdu.yield %8 : f32
    }
    %sub_1 = rdu.map %addmm_1, %y {rdu.phase = #rdu<phase backward>} : (tensor<4x2xf32>, tensor<4x2xf32>) -> tensor<4x2xf32> {
    ^bb0(%6: f32, %7: f32):
      %8 = arith.subf %6, %7 : f32
      rdu.yield %8 : f32
    }
    %mul = rdu.map %sub_1 {rdu.phase = #rdu<phase backward>} : (tensor<4x2xf32>) -> tensor<4x2xf32> {
    ^bb0(%6: f32):
      %7 = arith.constant 2.500000e-01 : f32
      %8 = arith.mulf %6, %7 : f32
      rdu.yield %8 : f32
    }
    %mul_1 = rdu.map %mul {rdu.phase = #rdu<phase backward>} : (tensor<4x2xf32>) -> tensor<4x2xf32> {
    ^bb0(%6: f32):
      %7 = arith.constant 1.000000e+00 : f32
      %8 = arith.mulf %6, %7 : f32
      rdu.yield %8 : f32
    }
    %permute = rdu.transpose %mul_1 perm [1, 0] {rdu.phase = #rdu<phase backward>} : tensor<4x2xf32> -> tensor<2x4xf32>
    %mm = rdu.matmul %permute, %x {rdu.phase = #rdu<phase backward>} : tensor<2x4xf32>, tensor<4x4xf32> -> tensor<2x4xf32>
    %sum = rdu.reduce sum %mul_1 dims [0] keepdim {rdu.phase = #rdu<phase backward>} : tensor<4x2xf32> -> tensor<1x2xf32>
    %view = rdu.reshape %sum {rdu.phase = #rdu<phase backward>} : tensor<1x2xf32> -> tensor<2xf32>
    %add = rdu.map %0 {rdu.phase = #rdu<phase optimizer>} : (tensor<f32>) -> tensor<f32> {
    ^bb0(%6: f32):
      %7 = arith.constant 1.000000e+00 : f32
      %8 = arith.addf %6, %7 : f32
      rdu.yield %8 : f32
    }
    %mul_2 = rdu.map %p_fc_weight {rdu.phase = #rdu<phase optimizer>} : (tensor<2x4xf32>) -> tensor<2x4xf32> {
    ^bb0(%6: f32):
      %7 = arith.constant 9.999000e-01 : f32
      %8 = arith.mulf %6, %7 : f32
      rdu.yield %8 : f32
    }
    %abs = rdu.map {rdu.phase = #rdu<phase optimizer>} : () -> tensor<f32> {
      %6 = arith.constant 1.000000e-01 : f32
      %7 = math.absf %6 : f32
      rdu.yield %7 : f32
    }
    %ge = rdu.map %abs {rdu.phase = #rdu<phase optimizer>} : (tensor<f32>) -> tensor<i1> {
    ^bb0(%6: f32):
      %7 = arith.constant 5.000000e-01 : f32
      %8 = arith.cmpf oge, %6, %7 : f32
      rdu.yield %8 : i1
    }
    %sub_2 = rdu.map {rdu.phase = #rdu<phase optimizer>} : () -> tensor<f32> {
      %6 = arith.constant 1.000000e-01 : f32
      %7 = arith.constant 1.000000e+00 : f32
      %8 = arith.subf %6, %7 : f32
      rdu.yield %8 : f32
    }
    %where = rdu.map %ge, %sub_2 {rdu.phase = #rdu<phase optimizer>} : (tensor<i1>, tensor<f32>) -> tensor<f32> {
    ^bb0(%6: i1, %7: f32):
      %8 = arith.constant 1.000000e-01 : f32
      %9 = arith.select %6, %7, %8 : f32
      rdu.yield %9 : f32
    }
    %where_1 = rdu.map %ge, %mm, %1 {rdu.phase = #rdu<phase optimizer>} : (tensor<i1>, tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32> {
    ^bb0(%6: i1, %7: f32, %8: f32):
      %9 = arith.select %6, %7, %8 : f32
      rdu.yield %9 : f32
    }
    %sub_3 = rdu.map %mm, %1 {rdu.phase = #rdu<phase optimizer>} : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32> {
    ^bb0(%6: f32, %7: f32):
      %8 = arith.subf %6, %7 : f32
      rdu.yield %8 : f32
    }
    %mul_3 = rdu.map %where, %sub_3 {rdu.phase = #rdu<phase optimizer>} : (tensor<f32>, tensor<2x4xf32>) -> tensor<2x4xf32> {
    ^bb0(%6: f32, %7: f32):
      %8 = arith.mulf %6, %7 : f32
      rdu.yield %8 : f32
    }
    %add_1 = rdu.map %mul_3, %where_1 {rdu.phase = #rdu<phase optimizer>} : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32> {
    ^bb0(%6: f32, %7: f32):
      %8 = arith.addf %6, %7 : f32
      rdu.yield %8 : f32
    }
    %mul_4 = rdu.map %2 {rdu.phase = #rdu<phase optimizer>} : (tensor<2x4xf32>) -> tensor<2x4xf32> {
    ^bb0(%6: f32):
      %7 = arith.constant 9.990000e-01 : f32
      %8 = arith.mulf %6, %7 : f32
      rdu.yield %8 : f32
    }
    %mul_5 = rdu.map %mm {rdu.phase = #rdu<phase optimizer>} : (tensor<2x4xf32>) -> tensor<2x4xf32> {
    ^bb0(%6: f32):
      %7 = arith.constant 1.000000e-03 : f32
      %8 = arith.mulf %6, %7 : f32
      rdu.yield %8 : f32
    }
    %mul_6 = rdu.map %mul_5, %mm {rdu.phase = #rdu<phase optimizer>} : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32> {
    ^bb0(%6: f32, %7: f32):
      %8 = arith.mulf %6, %7 : f32
      rdu.yield %8 : f32
    }
    %add_2 = rdu.map %mul_4, %mul_6 {rdu.phase = #rdu<phase optimizer>} : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32> {
    ^bb0(%6: f32, %7: f32):
      %8 = arith.addf %6, %7 : f32
      rdu.yield %8 : f32
    }
    %pow_1 = rdu.map %add {rdu.phase = #rdu<phase optimizer>} : (tensor<f32>) -> tensor<f32> {
    ^bb0(%6: f32):
      %7 = arith.constant 9.000000e-01 : f32
      %8 = math.powf %7, %6 : f32
      rdu.yield %8 : f32
    }
    %sub_4 = rdu.map %pow_1 {rdu.phase = #rdu<phase optimizer>} : (tensor<f32>) -> tensor<f32> {
    ^bb0(%6: f32):
      %7 = arith.constant 1.000000e+00 : f32
      %8 = arith.subf %7, %6 : f32
      rdu.yield %8 : f32
    }
    %pow_2 = rdu.map %add {rdu.phase = #rdu<phase optimizer>} : (tensor<f32>) -> tensor<f32> {
    ^bb0(%6: f32):
      %7 = arith.constant 9.990000e-01 : f32
      %8 = math.powf %7, %6 : f32
      rdu.yield %8 : f32
    }
    %sub_5 = rdu.map %pow_2 {rdu.phase = #rdu<phase optimizer>} : (tensor<f32>) -> tensor<f32> {
    ^bb0(%6: f32):
      %7 = arith.constant 1.000000e+00 : f32
      %8 = arith.subf %7, %6 : f32
      rdu.yield %8 : f32
    }
    %reciprocal = rdu.map %sub_4 {rdu.phase = #rdu<phase optimizer>} : (tensor<f32>) -> tensor<f32> {
    ^bb0(%6: f32):
      %7 = arith.constant 1.000000e+00 : f32
      %8 = arith.divf %7, %6 : f32
      rdu.yield %8 : f32
    }
    %mul_7 = rdu.map %reciprocal {rdu.phase = #rdu<phase optimizer>} : (tensor<f32>) -> tensor<f32> {
    ^bb0(%6: f32):
      %7 = arith.constant 1.000000e-02 : f32
      %8 = arith.mulf %6, %7 : f32
      rdu.yield %8 : f32
    }
    %neg = rdu.map %mul_7 {rdu.phase = #rdu<phase optimizer>} : (tensor<f32>) -> tensor<f32> {
    ^bb0(%6: f32):
      %7 = arith.negf %6 : f32
      rdu.yield %7 : f32
    }
    %sqrt = rdu.map %sub_5 {rdu.phase = #rdu<phase optimizer>} : (tensor<f32>) -> tensor<f32> {
    ^bb0(%6: f32):
      %7 = math.sqrt %6 : f32
      rdu.yield %7 : f32
    }
    %sqrt_1 = rdu.map %add_2 {rdu.phase = #rdu<phase optimizer>} : (tensor<2x4xf32>) -> tensor<2x4xf32> {
    ^bb0(%6: f32):
      %7 = math.sqrt %6 : f32
      rdu.yield %7 : f32
    }
    %mul_8 = rdu.map %sqrt, %neg {rdu.phase = #rdu<phase optimizer>} : (tensor<f32>, tensor<f32>) -> tensor<f32> {
    ^bb0(%6: f32, %7: f32):
      %8 = arith.mulf %6, %7 : f32
      rdu.yield %8 : f32
    }
    %div = rdu.map %sqrt_1, %mul_8 {rdu.phase = #rdu<phase optimizer>} : (tensor<2x4xf32>, tensor<f32>) -> tensor<2x4xf32> {
    ^bb0(%6: f32, %7: f32):
      %8 = arith.divf %6, %7 : f32
      rdu.yield %8 : f32
    }
    %reciprocal_1 = rdu.map %neg {rdu.phase = #rdu<phase optimizer>} : (tensor<f32>) -> tensor<f32> {
    ^bb0(%6: f32):
      %7 = arith.constant 1.000000e+00 : f32
      %8 = arith.divf %7, %6 : f32
      rdu.yield %8 : f32
    }
    %mul_9 = rdu.map %reciprocal_1 {rdu.phase = #rdu<phase optimizer>} : (tensor<f32>) -> tensor<f32> {
    ^bb0(%6: f32):
      %7 = arith.constant 1.000000e-08 : f32
      %8 = arith.mulf %6, %7 : f32
      rdu.yield %8 : f32
    }
    %add_3 = rdu.map %div, %mul_9 {rdu.phase = #rdu<phase optimizer>} : (tensor<2x4xf32>, tensor<f32>) -> tensor<2x4xf32> {
    ^bb0(%6: f32, %7: f32):
      %8 = arith.addf %6, %7 : f32
      rdu.yield %8 : f32
    }
    %mul_10 = rdu.map %add_1 {rdu.phase = #rdu<phase optimizer>} : (tensor<2x4xf32>) -> tensor<2x4xf32> {
    ^bb0(%6: f32):
      %7 = arith.constant 1.000000e+00 : f32
      %8 = arith.mulf %6, %7 : f32
      rdu.yield %8 : f32
    }
    %div_1 = rdu.map %mul_10, %add_3 {rdu.phase = #rdu<phase optimizer>} : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32> {
    ^bb0(%6: f32, %7: f32):
      %8 = arith.divf %6, %7 : f32
      rdu.yield %8 : f32
    }
    %add_4 = rdu.map %mul_2, %div_1 {rdu.phase = #rdu<phase optimizer>} : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32> {
    ^bb0(%6: f32, %7: f32):
      %8 = arith.addf %6, %7 : f32
      rdu.yield %8 : f32
    }
    %add_5 = rdu.map %3 {rdu.phase = #rdu<phase optimizer>} : (tensor<f32>) -> tensor<f32> {
    ^bb0(%6: f32):
      %7 = arith.constant 1.000000e+00 : f32
      %8 = arith.addf %6, %7 : f32
      rdu.yield %8 : f32
    }
    %mul_11 = rdu.map %p_fc_bias {rdu.phase = #rdu<phase optimizer>} : (tensor<2xf32>) -> tensor<2xf32> {
    ^bb0(%6: f32):
      %7 = arith.constant 9.999000e-01 : f32
      %8 = arith.mulf %6, %7 : f32
      rdu.yield %8 : f32
    }
    %abs_1 = rdu.map {rdu.phase = #rdu<phase optimizer>} : () -> tensor<f32> {
      %6 = arith.constant 1.000000e-01 : f32
      %7 = math.absf %6 : f32
      rdu.yield %7 : f32
    }
    %ge_1 = rdu.map %abs_1 {rdu.phase = #rdu<phase optimizer>} : (tensor<f32>) -> tensor<i1> {
    ^bb0(%6: f32):
      %7 = arith.constant 5.000000e-01 : f32
      %8 = arith.cmpf oge, %6, %7 : f32
      rdu.yield %8 : i1
    }
    %sub_6 = rdu.map {rdu.phase = #rdu<phase optimizer>} : () -> tensor<f32> {
      %6 = arith.constant 1.000000e-01 : f32
      %7 = arith.constant 1.000000e+00 : f32
      %8 = arith.subf %6, %7 : f32
      rdu.yield %8 : f32
    }
    %where_2 = rdu.map %ge_1, %sub_6 {rdu.phase = #rdu<phase optimizer>} : (tensor<i1>, tensor<f32>) -> tensor<f32> {
    ^bb0(%6: i1, %7: f32):
      %8 = arith.constant 1.000000e-01 : f32
      %9 = arith.select %6, %7, %8 : f32
      rdu.yield %9 : f32
    }
    %where_3 = rdu.map %ge_1, %view, %4 {rdu.phase = #rdu<phase optimizer>} : (tensor<i1>, tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32> {
    ^bb0(%6: i1, %7: f32, %8: f32):
      %9 = arith.select %6, %7, %8 : f32
      rdu.yield %9 : f32
    }
    %sub_7 = rdu.map %view, %4 {rdu.phase = #rdu<phase optimizer>} : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32> {
    ^bb0(%6: f32, %7: f32):
      %8 = arith.subf %6, %7 : f32
      rdu.yield %8 : f32
    }
    %mul_12 = rdu.map %where_2, %sub_7 {rdu.phase = #rdu<phase optimizer>} : (tensor<f32>, tensor<2xf32>) -> tensor<2xf32> {
    ^bb0(%6: f32, %7: f32):
      %8 = arith.mulf %6, %7 : f32
      rdu.yield %8 : f32
    }
    %add_6 = rdu.map %mul_12, %where_3 {rdu.phase = #rdu<phase optimizer>} : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32> {
    ^bb0(%6: f32, %7: f32):
      %8 = arith.addf %6, %7 : f32
      rdu.yield %8 : f32
    }
    %mul_13 = rdu.map %5 {rdu.phase = #rdu<phase optimizer>} : (tensor<2xf32>) -> tensor<2xf32> {
    ^bb0(%6: f32):
      %7 = arith.constant 9.990000e-01 : f32
      %8 = arith.mulf %6, %7 : f32
      rdu.yield %8 : f32
    }
    %mul_14 = rdu.map %view {rdu.phase = #rdu<phase optimizer>} : (tensor<2xf32>) -> tensor<2xf32> {
    ^bb0(%6: f32):
      %7 = arith.constant 1.000000e-03 : f32
      %8 = arith.mulf %6, %7 : f32
      rdu.yield %8 : f32
    }
    %mul_15 = rdu.map %mul_14, %view {rdu.phase = #rdu<phase optimizer>} : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32> {
    ^bb0(%6: f32, %7: f32):
      %8 = arith.mulf %6, %7 : f32
      rdu.yield %8 : f32
    }
    %add_7 = rdu.map %mul_13, %mul_15 {rdu.phase = #rdu<phase optimizer>} : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32> {
    ^bb0(%6: f32, %7: f32):
      %8 = arith.addf %6, %7 : f32
      rdu.yield %8 : f32
    }
    %pow_3 = rdu.map %add_5 {rdu.phase = #rdu<phase optimizer>} : (tensor<f32>) -> tensor<f32> {
    ^bb0(%6: f32):
      %7 = arith.constant 9.000000e-01 : f32
      %8 = math.powf %7, %6 : f32
      rdu.yield %8 : f32
    }
    %sub_8 = rdu.map %pow_3 {rdu.phase = #rdu<phase optimizer>} : (tensor<f32>) -> tensor<f32> {
    ^bb0(%6: f32):
      %7 = arith.constant 1.000000e+00 : f32
      %8 = arith.subf %7, %6 : f32
      rdu.yield %8 : f32
    }
    %pow_4 = rdu.map %add_5 {rdu.phase = #rdu<phase optimizer>} : (tensor<f32>) -> tensor<f32> {
    ^bb0(%6: f32):
      %7 = arith.constant 9.990000e-01 : f32
      %8 = math.powf %7, %6 : f32
      rdu.yield %8 : f32
    }
    %sub_9 = rdu.map %pow_4 {rdu.phase = #rdu<phase optimizer>} : (tensor<f32>) -> tensor<f32> {
    ^bb0(%6: f32):
      %7 = arith.constant 1.000000e+00 : f32
      %8 = arith.subf %7, %6 : f32
      rdu.yield %8 : f32
    }
    %reciprocal_2 = rdu.map %sub_8 {rdu.phase = #rdu<phase optimizer>} : (tensor<f32>) -> tensor<f32> {
    ^bb0(%6: f32):
      %7 = arith.constant 1.000000e+00 : f32
      %8 = arith.divf %7, %6 : f32
      rdu.yield %8 : f32
    }
    %mul_16 = rdu.map %reciprocal_2 {rdu.phase = #rdu<phase optimizer>} : (tensor<f32>) -> tensor<f32> {
    ^bb0(%6: f32):
      %7 = arith.constant 1.000000e-02 : f32
      %8 = arith.mulf %6, %7 : f32
      rdu.yield %8 : f32
    }
    %neg_1 = rdu.map %mul_16 {rdu.phase = #rdu<phase optimizer>} : (tensor<f32>) -> tensor<f32> {
    ^bb0(%6: f32):
      %7 = arith.negf %6 : f32
      rdu.yield %7 : f32
    }
    %sqrt_2 = rdu.map %sub_9 {rdu.phase = #rdu<phase optimizer>} : (tensor<f32>) -> tensor<f32> {
    ^bb0(%6: f32):
      %7 = math.sqrt %6 : f32
      rdu.yield %7 : f32
    }
    %sqrt_3 = rdu.map %add_7 {rdu.phase = #rdu<phase optimizer>} : (tensor<2xf32>) -> tensor<2xf32> {
    ^bb0(%6: f32):
      %7 = math.sqrt %6 : f32
      rdu.yield %7 : f32
    }
    %mul_17 = rdu.map %sqrt_2, %neg_1 {rdu.phase = #rdu<phase optimizer>} : (tensor<f32>, tensor<f32>) -> tensor<f32> {
    ^bb0(%6: f32, %7: f32):
      %8 = arith.mulf %6, %7 : f32
      rdu.yield %8 : f32
    }
    %div_2 = rdu.map %sqrt_3, %mul_17 {rdu.phase = #rdu<phase optimizer>} : (tensor<2xf32>, tensor<f32>) -> tensor<2xf32> {
    ^bb0(%6: f32, %7: f32):
      %8 = arith.divf %6, %7 : f32
      rdu.yield %8 : f32
    }
    %reciprocal_3 = rdu.map %neg_1 {rdu.phase = #rdu<phase optimizer>} : (tensor<f32>) -> tensor<f32> {
    ^bb0(%6: f32):
      %7 = arith.constant 1.000000e+00 : f32
      %8 = arith.divf %7, %6 : f32
      rdu.yield %8 : f32
    }
    %mul_18 = rdu.map %reciprocal_3 {rdu.phase = #rdu<phase optimizer>} : (tensor<f32>) -> tensor<f32> {
    ^bb0(%6: f32):
      %7 = arith.constant 1.000000e-08 : f32
      %8 = arith.mulf %6, %7 : f32
      rdu.yield %8 : f32
    }
    %add_8 = rdu.map %div_2, %mul_18 {rdu.phase = #rdu<phase optimizer>} : (tensor<2xf32>, tensor<f32>) -> tensor<2xf32> {
    ^bb0(%6: f32, %7: f32):
      %8 = arith.addf %6, %7 : f32
      rdu.yield %8 : f32
    }
    %mul_19 = rdu.map %add_6 {rdu.phase = #rdu<phase optimizer>} : (tensor<2xf32>) -> tensor<2xf32> {
    ^bb0(%6: f32):
      %7 = arith.constant 1.000000e+00 : f32
      %8 = arith.mulf %6, %7 : f32
      rdu.yield %8 : f32
    }
    %div_3 = rdu.map %mul_19, %add_8 {rdu.phase = #rdu<phase optimizer>} : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32> {
    ^bb0(%6: f32, %7: f32):
      %8 = arith.divf %6, %7 : f32
      rdu.yield %8 : f32
    }
    %add_9 = rdu.map %mul_11, %div_3 {rdu.phase = #rdu<phase optimizer>} : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32> {
    ^bb0(%6: f32, %7: f32):
      %8 = arith.addf %6, %7 : f32
      rdu.yield %8 : f32
    }
    func.return %mean_1, %add_4, %add_9, %add, %add_1, %add_2, %add_5, %add_6, %add_7 : tensor<f32>, tensor<2x4xf32>, tensor<2xf32>, tensor<f32>, tensor<2x4xf32>, tensor<2x4xf32>, tensor<f32>, tensor<2xf32>, tensor<2xf32>
  }
}
