// rdu-partition (tp) of the backward of a gather by a grouped-query head map
// (`k[:, arange(8) // 4]`: 8 query heads over 2 KV heads): a scatter-add of the
// query heads' gradients (split by heads over every rank) into zeros of the 2 KV
// heads, by an index whose values are known. At tp=4 each rank's heads go to
// one KV head, held by a rank pair: each rank adds its heads into its own KV
// head's zeros by its part of the index less the head's first index, a partial
// sum over the pair, all-reduced over the pairs (replica groups [0, 1], [2, 3])
// and returned split by KV heads. Nothing is all-gathered.
// RUN: rducc-opt --check-roundtrip -p 'rdu-partition{tp=4}' %s | filecheck %s
// tp=2: a KV head a rank, no partial sum.
// RUN: rducc-opt -p 'rdu-partition{tp=2}' %s | filecheck %s --check-prefix=TP2
//
// Diagnostic: tp=3 divides neither the heads nor the hidden size.
// RUN: not rducc-opt -p 'rdu-partition{tp=3}' %s 2>&1 | filecheck %s --check-prefix=ERR

builtin.module attributes {rdu.level = #rdu<level graph>, rdu.target = "sn40l-8"} {
  tier.global @q : tensor<32x16xf32> {kind = "parameter"}
  func.func @forward(%x: tensor<4x16xf32> {rdu.input = "x"}, %wq: tensor<32x16xf32> {rdu.global = @q}) -> tensor<2x4x4xf32> {
    %g = rdu.matmul %x, %wq transpose_rhs {rdu.layer = "layers.0", rdu.phase = #rdu<phase backward>} : tensor<4x16xf32>, tensor<32x16xf32> -> tensor<4x32xf32>
    %gh = rdu.reshape %g {rdu.layer = "layers.0", rdu.phase = #rdu<phase backward>} : tensor<4x32xf32> -> tensor<4x8x4xf32>
    %gt = rdu.transpose %gh perm [1, 0, 2] {rdu.layer = "layers.0", rdu.phase = #rdu<phase backward>} : tensor<4x8x4xf32> -> tensor<8x4x4xf32>
    %heads = rdu.iota start 0 step 1 {rdu.layer = "layers.0", rdu.phase = #rdu<phase backward>} : tensor<8xi64>
    %kv = rdu.map %heads {rdu.layer = "layers.0", rdu.phase = #rdu<phase backward>} : (tensor<8xi64>) -> tensor<8xi64> {
    ^bb0(%h: i64):
      %four = arith.constant 4 : i64
      %d = arith.divsi %h, %four : i64
      rdu.yield %d : i64
    }
    %kv3 = rdu.reshape %kv {rdu.layer = "layers.0", rdu.phase = #rdu<phase backward>} : tensor<8xi64> -> tensor<8x1x1xi64>
    %index = rdu.broadcast %kv3 {rdu.layer = "layers.0", rdu.phase = #rdu<phase backward>} : tensor<8x1x1xi64> -> tensor<8x4x4xi64>
    %zeros = rdu.map {rdu.layer = "layers.0", rdu.phase = #rdu<phase backward>} : () -> tensor<2x4x4xf32> {
      %z = arith.constant 0.000000e+00 : f32
      rdu.yield %z : f32
    }
    %dk = rdu.scatter %zeros[%index] = %gt dim 0 reduce sum {rdu.layer = "layers.0", rdu.phase = #rdu<phase backward>} : tensor<2x4x4xf32>, tensor<8x4x4xi64>, tensor<8x4x4xf32> -> tensor<2x4x4xf32>
    func.return %dk : tensor<2x4x4xf32>
  }
}

// CHECK:      tier.global @q : tensor<8x16xf32> {kind = "parameter", rdu.shard = #rdu.split<(0, 4, 1)>}
// CHECK-NOT:  rdu.all_gather
// CHECK:      %[[MINE:.*]] = rdu.local_part %index dim 0 group 4 {{.*}} : tensor<8x4x4xi64> -> tensor<2x4x4xi64>
// CHECK:      %[[RAMP:.*]] = rdu.iota start 0 step 1 {{.*}} : tensor<2xi64>
// CHECK-NEXT: %[[FIRST:.*]] = rdu.local_part %[[RAMP]] dim 0 group 2 stride 2 {{.*}} : tensor<2xi64> -> tensor<1xi64>
// CHECK-NEXT: %[[OFFSET:.*]] = rdu.reshape %[[FIRST]] {{.*}} : tensor<1xi64> -> tensor<1x1x1xi64>
// CHECK-NEXT: %[[LOCAL:.*]] = rdu.map %[[MINE]], %[[OFFSET]]
// CHECK:      %[[ZEROS:.*]] = rdu.map {{.*}} : () -> tensor<1x4x4xf32>
// CHECK:      %dk = rdu.scatter %[[ZEROS]][%[[LOCAL]]] = %gt dim 0 reduce sum {{.*}} : tensor<1x4x4xf32>, tensor<2x4x4xi64>, tensor<2x4x4xf32> -> tensor<1x4x4xf32>
// CHECK-NEXT: %[[SUM:.*]] = rdu.all_reduce %dk group 2 groups <[0, 1], [2, 3]> {{.*}} : tensor<1x4x4xf32> -> tensor<1x4x4xf32>
// CHECK-NOT:  rdu.all_gather
// CHECK:      func.return %[[SUM]] : tensor<1x4x4xf32>

// TP2:      %dk = rdu.scatter {{.*}} : tensor<1x4x4xf32>, tensor<4x4x4xi64>, tensor<4x4x4xf32> -> tensor<1x4x4xf32>
// TP2-NOT:  rdu.all_reduce
// TP2-NOT:  rdu.all_gather
// TP2:      func.return %dk : tensor<1x4x4xf32>

// ERR: tp=3 does not divide the 32 output columns of weight @q
