// RUN: rducc-opt --check-roundtrip -p 'rdu-partition{dp=2 target=sn40l-8}' %s | filecheck %s --check-prefix=DP
// RUN: rducc-opt --check-roundtrip -p 'rdu-partition{tp=2 target=sn40l-8}' %s | filecheck %s --check-prefix=TP
// RUN: rducc-opt --check-roundtrip -p 'rdu-partition{target=sn40l-8}' %s | filecheck %s --check-prefix=CHOOSE
// RUN: not rducc-opt -p 'rdu-partition{dp=8 target=sn40l-8}' %s 2>&1 | filecheck %s --check-prefix=ERR-BATCH
// RUN: rducc-opt --check-roundtrip -p 'rdu-partition{dp=2 tp=2 target=sn40l-8}' %s | filecheck %s --check-prefix=DPTP
// RUN: not rducc-opt -p 'rdu-partition{dp=2 ep=2 target=sn40l-8}' %s 2>&1 | filecheck %s --check-prefix=ERR-EP

// The joint graph (loss and gradients) of a two-layer MLP with an MSE loss at
// batch 4 (test/importer/joint-mlp.py's way, canonicalized). At dp=2 each
// replica takes half the batch (the inputs' rdu.shard), the weights stay
// whole, and every sum over the batch is a partial sum made whole by an
// all-reduce: the loss's sum before its division by the full count (8), each
// weight's gradient (x^T dy) and each bias's (a sum over the rows). Nothing is
// gathered. At tp=2 the weights split instead (fc1 by output columns, fc2 by
// its input rows: the transposed split of the backward). At dp=2 x tp=2 (4
// ranks, rank r = replica r // 2, tp rank r % 2) both: the weights split as at
// tp=2 (rdu.shard strides 1), the inputs' batch over the replicas (stride 2);
// tp's all-reduce of fc2's partial sum spans the consecutive ranks (replica
// groups [0, 1], [2, 3]), the loss's and the gradients' sums over the batch
// the replicas (groups [0, 2], [1, 3]). dp=8 does not divide the batch of 4;
// dp with ep is refused. With no split given the
// pass weighs every candidate from one profile of the step and records the
// table (rdu.split_choice): this step is a few microseconds of DMA start-ups,
// so one socket wins; dp x tp candidates are modeled and compiled (no ZeRO
// candidate: the step has no optimizer state); dp=8 cannot split a batch of 4.

builtin.module attributes {rdu.level = #rdu<level graph>} {
  tier.global @fc1.weight : tensor<8x4xf32> {kind = "parameter"}
  tier.global @fc1.bias : tensor<8xf32> {kind = "parameter"}
  tier.global @fc2.weight : tensor<2x8xf32> {kind = "parameter"}
  tier.global @fc2.bias : tensor<2xf32> {kind = "parameter"}
  func.func @forward(%x: tensor<4x4xf32> {rdu.input = "x"}, %target: tensor<4x2xf32> {rdu.input = "target"}, %p_fc1_weight: tensor<8x4xf32> {rdu.global = @fc1.weight}, %p_fc1_bias: tensor<8xf32> {rdu.global = @fc1.bias}, %p_fc2_weight: tensor<2x8xf32> {rdu.global = @fc2.weight}, %p_fc2_bias: tensor<2xf32> {rdu.global = @fc2.bias}) -> (tensor<f32>, tensor<8x4xf32>, tensor<8xf32>, tensor<2x8xf32>, tensor<2xf32>) attributes {rdu.result_roles = ["loss", "gradient:parameter:fc1.weight", "gradient:parameter:fc1.bias", "gradient:parameter:fc2.weight", "gradient:parameter:fc2.bias"]} {
    %addmm = rdu.matmul %x, %p_fc1_weight transpose_rhs {rdu.phase = #rdu<phase forward>} : tensor<4x4xf32>, tensor<8x4xf32> -> tensor<4x8xf32>
    %addmm_1 = rdu.map %p_fc1_bias, %addmm {rdu.phase = #rdu<phase forward>} : (tensor<8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32> {
    ^bb0(%0: f32, %1: f32):
      %2 = arith.addf %1, %0 : f32
      rdu.yield %2 : f32
    }
    %relu = rdu.map %addmm_1 {rdu.phase = #rdu<phase forward>} : (tensor<4x8xf32>) -> tensor<4x8xf32> {
    ^bb0(%0: f32):
      %1 = arith.constant 0.000000e+00 : f32
      %2 = arith.maximumf %0, %1 : f32
      rdu.yield %2 : f32
    }
    %addmm_2 = rdu.matmul %relu, %p_fc2_weight transpose_rhs {rdu.phase = #rdu<phase forward>} : tensor<4x8xf32>, tensor<2x8xf32> -> tensor<4x2xf32>
    %addmm_3 = rdu.map %p_fc2_bias, %addmm_2 {rdu.phase = #rdu<phase forward>} : (tensor<2xf32>, tensor<4x2xf32>) -> tensor<4x2xf32> {
    ^bb0(%0: f32, %1: f32):
      %2 = arith.addf %1, %0 : f32
      rdu.yield %2 : f32
    }
    %sub = rdu.map %addmm_3, %target {rdu.phase = #rdu<phase forward>} : (tensor<4x2xf32>, tensor<4x2xf32>) -> tensor<4x2xf32> {
    ^bb0(%0: f32, %1: f32):
      %2 = arith.subf %0, %1 : f32
      rdu.yield %2 : f32
    }
    %pow = rdu.map %sub {rdu.phase = #rdu<phase forward>} : (tensor<4x2xf32>) -> tensor<4x2xf32> {
    ^bb0(%0: f32):
      %1 = arith.constant 1.000000e+00 : f32
      %2 = arith.mulf %1, %0 : f32
      %3 = arith.mulf %2, %0 : f32
      rdu.yield %3 : f32
    }
    %mean = rdu.reduce sum %pow dims [0, 1] {rdu.phase = #rdu<phase forward>} : tensor<4x2xf32> -> tensor<f32>
    %mean_1 = rdu.map %mean {rdu.phase = #rdu<phase forward>} : (tensor<f32>) -> tensor<f32> {
    ^bb0(%0: f32):
      %1 = arith.constant 8.000000e+00 : f32
      %2 = arith.divf %0, %1 : f32
      rdu.yield %2 : f32
    }
    %sub_1 = rdu.map %addmm_3, %target {rdu.phase = #rdu<phase backward>} : (tensor<4x2xf32>, tensor<4x2xf32>) -> tensor<4x2xf32> {
    ^bb0(%0: f32, %1: f32):
      %2 = arith.subf %0, %1 : f32
      rdu.yield %2 : f32
    }
    %mul = rdu.map %sub_1 {rdu.phase = #rdu<phase backward>} : (tensor<4x2xf32>) -> tensor<4x2xf32> {
    ^bb0(%0: f32):
      %1 = arith.constant 2.500000e-01 : f32
      %2 = arith.mulf %0, %1 : f32
      rdu.yield %2 : f32
    }
    %mul_1 = rdu.map %mul {rdu.phase = #rdu<phase backward>} : (tensor<4x2xf32>) -> tensor<4x2xf32> {
    ^bb0(%0: f32):
      %1 = arith.constant 1.000000e+00 : f32
      %2 = arith.mulf %0, %1 : f32
      rdu.yield %2 : f32
    }
    %mm = rdu.matmul %mul_1, %p_fc2_weight {rdu.phase = #rdu<phase backward>} : tensor<4x2xf32>, tensor<2x8xf32> -> tensor<4x8xf32>
    %permute = rdu.transpose %mul_1 perm [1, 0] {rdu.phase = #rdu<phase backward>} : tensor<4x2xf32> -> tensor<2x4xf32>
    %mm_1 = rdu.matmul %permute, %relu {rdu.phase = #rdu<phase backward>} : tensor<2x4xf32>, tensor<4x8xf32> -> tensor<2x8xf32>
    %sum = rdu.reduce sum %mul_1 dims [0] keepdim {rdu.phase = #rdu<phase backward>} : tensor<4x2xf32> -> tensor<1x2xf32>
    %view = rdu.reshape %sum {rdu.phase = #rdu<phase backward>} : tensor<1x2xf32> -> tensor<2xf32>
    %le = rdu.map %relu {rdu.phase = #rdu<phase backward>} : (tensor<4x8xf32>) -> tensor<4x8xi1> {
    ^bb0(%0: f32):
      %1 = arith.constant 0.000000e+00 : f32
      %2 = arith.cmpf ole, %0, %1 : f32
      rdu.yield %2 : i1
    }
    %where = rdu.map %le, %mm {rdu.phase = #rdu<phase backward>} : (tensor<4x8xi1>, tensor<4x8xf32>) -> tensor<4x8xf32> {
    ^bb0(%0: i1, %1: f32):
      %2 = arith.constant 0.000000e+00 : f32
      %3 = arith.select %0, %2, %1 : f32
      rdu.yield %3 : f32
    }
    %permute_1 = rdu.transpose %where perm [1, 0] {rdu.phase = #rdu<phase backward>} : tensor<4x8xf32> -> tensor<8x4xf32>
    %mm_2 = rdu.matmul %permute_1, %x {rdu.phase = #rdu<phase backward>} : tensor<8x4xf32>, tensor<4x4xf32> -> tensor<8x4xf32>
    %sum_1 = rdu.reduce sum %where dims [0] keepdim {rdu.phase = #rdu<phase backward>} : tensor<4x8xf32> -> tensor<1x8xf32>
    %view_1 = rdu.reshape %sum_1 {rdu.phase = #rdu<phase backward>} : tensor<1x8xf32> -> tensor<8xf32>
    func.return %mean_1, %mm_2, %view_1, %mm_1, %view : tensor<f32>, tensor<8x4xf32>, tensor<8xf32>, tensor<2x8xf32>, tensor<2xf32>
  }
}


// DP:      rdu.partition = {tp = 1 : i64, pp = 1 : i64, dp = 2 : i64}
// DP:      tier.global @fc1.weight : tensor<8x4xf32> {kind = "parameter"}
// DP:      func.func @forward(%x: tensor<2x4xf32> {rdu.input = "x", rdu.shard = #rdu.split<(0, 2, 1)>}, %target: tensor<2x2xf32> {rdu.input = "target", rdu.shard = #rdu.split<(0, 2, 1)>}, %p_fc1_weight: tensor<8x4xf32> {rdu.global = @fc1.weight}
// DP-SAME:   rdu.result_shards = [#rdu.split<>, #rdu.split<>, #rdu.split<>, #rdu.split<>, #rdu.split<>]
// DP:      %mean = rdu.reduce sum %pow dims [0, 1] {{.*}} : tensor<2x2xf32> -> tensor<f32>
// the loss's all-reduce is read by the forward (not deferred); the gradients' only by the results
// DP-NEXT: %[[LOSS:.*]] = rdu.all_reduce %mean group 2 {rdu.phase = #rdu<phase forward>} : tensor<f32> -> tensor<f32>
// DP-NEXT: %mean_1 = rdu.map %[[LOSS]]
// DP:      arith.constant 8.000000e+00 : f32
// DP:      %mm_1 = rdu.matmul %permute, %relu {{.*}} : tensor<2x2xf32>, tensor<2x8xf32> -> tensor<2x8xf32>
// DP-NEXT: %[[G2:.*]] = rdu.all_reduce %mm_1 group 2 {rdu.phase = #rdu<phase backward>, rdu.deferred} : tensor<2x8xf32> -> tensor<2x8xf32>
// a view of a partial sum reads the sum all-reduced once (`_view_of_reduced`); the view
// of the partial sum itself, read by nothing then, is erased
// DP:      %sum = rdu.reduce sum
// DP-NEXT: %[[S2:.*]] = rdu.all_reduce %sum group 2
// DP-NOT:  rdu.reshape %sum {
// DP:      %[[B2:.*]] = rdu.reshape %[[S2]]
// DP:      %mm_2 = rdu.matmul %permute_1, %x {{.*}} : tensor<8x2xf32>, tensor<2x4xf32> -> tensor<8x4xf32>
// DP-NEXT: %[[G1:.*]] = rdu.all_reduce %mm_2 group 2
// DP:      %sum_1 = rdu.reduce sum
// DP-NEXT: %[[S1:.*]] = rdu.all_reduce %sum_1 group 2
// DP-NOT:  rdu.reshape %sum_1 {
// DP:      %[[B1:.*]] = rdu.reshape %[[S1]]
// DP:      func.return %mean_1, %[[G1]], %[[B1]], %[[G2]], %[[B2]]
// DP-NOT:  rdu.all_gather

// TP:      tier.global @fc1.weight : tensor<4x4xf32> {kind = "parameter", rdu.shard = #rdu.split<(0, 2, 1)>}
// TP:      tier.global @fc2.weight : tensor<2x4xf32> {kind = "parameter", rdu.shard = #rdu.split<(1, 2, 1)>}
// TP:      rdu.result_shards = [#rdu.split<>, #rdu.split<(0, 2, 1)>, #rdu.split<(0, 2, 1)>, #rdu.split<(1, 2, 1)>, #rdu.split<>]
// TP:      rdu.all_reduce %addmm_2 group 2 {rdu.phase = #rdu<phase forward>} : tensor<4x2xf32> -> tensor<4x2xf32>
// TP:      %mm_2 = rdu.matmul %permute_1, %x {{.*}} : tensor<4x4xf32>, tensor<4x4xf32> -> tensor<4x4xf32>
// TP-NOT:  rdu.all_gather

// CHOOSE:      rdu.partition = {tp = 1 : i64, pp = 1 : i64}
// CHOOSE-SAME: rdu.split_choice = ["split candidates (modeled, fastest first; chosen: dp=1 tp=1 pp=1):", "  dp=1 tp=1 pp=1 {{ +}}[[T:[0-9.]+]] us: pipeline
// CHOOSE-SAME: "  dp=2 tp=4 pp=1 {{ +}}{{[0-9.]+}} us: pipeline {{[^"]*}} HBM", "
// CHOOSE-SAME: "  dp=8 tp=1 pp=1       -- dp=8 does not divide the batch of 4"
// CHOOSE-SAME: "  dp=1 tp=1 pp=1 beats dp=1 tp=8 pp=1 by
// CHOOSE:      func.func @forward(%x: tensor<4x4xf32> {rdu.input = "x"}
// CHOOSE-NOT:  rdu.all_reduce

// ERR-BATCH: error: rdu-partition: dp=8 does not divide the batch of 4 (input 'x', shape [4, 4]); use a dp that divides it
// DPTP:      rdu.partition = {tp = 2 : i64, pp = 1 : i64, dp = 2 : i64}
// DPTP:      tier.global @fc1.weight : tensor<4x4xf32> {kind = "parameter", rdu.shard = #rdu.split<(0, 2, 1)>}
// DPTP:      tier.global @fc2.weight : tensor<2x4xf32> {kind = "parameter", rdu.shard = #rdu.split<(1, 2, 1)>}
// DPTP:      func.func @forward(%x: tensor<2x4xf32> {rdu.input = "x", rdu.shard = #rdu.split<(0, 2, 2)>}, %target: tensor<2x2xf32> {rdu.input = "target", rdu.shard = #rdu.split<(0, 2, 2)>}
// DPTP-SAME:   rdu.result_shards = [#rdu.split<>, #rdu.split<(0, 2, 1)>, #rdu.split<(0, 2, 1)>, #rdu.split<(1, 2, 1)>, #rdu.split<>]
// DPTP:      %addmm_2 = rdu.matmul %relu, %p_fc2_weight transpose_rhs {{.*}} : tensor<2x4xf32>, tensor<2x4xf32> -> tensor<2x2xf32>
// DPTP-NEXT: rdu.all_reduce %addmm_2 group 2 groups <[0, 1], [2, 3]> {rdu.phase = #rdu<phase forward>} : tensor<2x2xf32> -> tensor<2x2xf32>
// DPTP:      %mean = rdu.reduce sum %pow dims [0, 1] {{.*}} : tensor<2x2xf32> -> tensor<f32>
// DPTP-NEXT: %[[LOSS:.*]] = rdu.all_reduce %mean group 2 groups <[0, 2], [1, 3]> {rdu.phase = #rdu<phase forward>} : tensor<f32> -> tensor<f32>
// DPTP:      %mm_1 = rdu.matmul %permute, %relu {{.*}} : tensor<2x2xf32>, tensor<2x4xf32> -> tensor<2x4xf32>
// DPTP-NEXT: %[[G2:.*]] = rdu.all_reduce %mm_1 group 2 groups <[0, 2], [1, 3]> {rdu.phase = #rdu<phase backward>, rdu.deferred} : tensor<2x4xf32> -> tensor<2x4xf32>
// DPTP:      %sum = rdu.reduce sum
// DPTP-NEXT: %[[S2:.*]] = rdu.all_reduce %sum group 2 groups <[0, 2], [1, 3]>
// DPTP-NOT:  rdu.reshape %sum {
// DPTP:      %[[B2:.*]] = rdu.reshape %[[S2]]
// DPTP:      %mm_2 = rdu.matmul %permute_1, %x {{.*}} : tensor<4x2xf32>, tensor<2x4xf32> -> tensor<4x4xf32>
// DPTP-NEXT: %[[G1:.*]] = rdu.all_reduce %mm_2 group 2 groups <[0, 2], [1, 3]>
// DPTP:      %sum_1 = rdu.reduce sum
// DPTP-NEXT: %[[S1:.*]] = rdu.all_reduce %sum_1 group 2 groups <[0, 2], [1, 3]>
// DPTP-NOT:  rdu.reshape %sum_1 {
// DPTP:      %[[B1:.*]] = rdu.reshape %[[S1]]
// DPTP:      func.return %mean_1, %[[G1]], %[[B1]], %[[G2]], %[[B2]]
// DPTP-NOT:  rdu.all_gather

// ERR-EP: error: rdu-partition: dp=2 with ep=2 is not supported
