// Differential attention (DiffLlama's): 8 query heads over 4 KV heads of 4
// features; the values' KV heads chunked in halves (`chunk(v, 2, dim=1)`, each
// half tiled back to 4 heads and repeated to the query heads), two attention
// products, and the output's heads chunked in halves and subtracted, head h
// paired with h + 4. A consecutive split of the query heads would put heads h
// and h + 4 on different ranks, and one of the values' KV heads would cut a
// chunk: each projection instead splits with a period of one chunk, a rank
// holding its share of both halves, and nothing is gathered; the chunks'
// slices take the rank's part of each half. At tp=4 a chunk of the values
// holds 2 KV heads, fewer than the ranks: k and v split 2 ways with a period of
// a chunk (a KV head a pair of ranks, widened back to 4 by the repeat to the
// query heads), q 4 ways. (tp=2, against eager: test_held_out_layouts.py.) The
// exchange of the output's heads that would let k and q split consecutively (each KV
// head on one rank) costs more here than the reads of k it saves (o_proj's load, which
// would hide it, is tiny): not taken (taken at a hidden size of 262,144:
// rdu-partition-chunked-exchange.mlir).
// RUN: rducc-opt --check-roundtrip -p 'rdu-partition{tp=4}' %s | filecheck %s
// tp=8: 4 heads in a chunk cannot split 8 ways: no period keeps the chunks,
// q splits in one piece and what the chunks cut is gathered (correct, slower).
// RUN: rducc-opt -p 'rdu-partition{tp=8}' %s | filecheck %s --check-prefix=TP8

builtin.module attributes {rdu.level = #rdu<level graph>, rdu.target = "sn40l-8"} {
  tier.global @q : tensor<32x16xf32> {kind = "parameter"}
  tier.global @k : tensor<16x16xf32> {kind = "parameter"}
  tier.global @v : tensor<16x16xf32> {kind = "parameter"}
  tier.global @o : tensor<16x32xf32> {kind = "parameter"}
  func.func @forward(%x: tensor<1x16xf32> {rdu.input = "x"}, %wq: tensor<32x16xf32> {rdu.global = @q}, %wk: tensor<16x16xf32> {rdu.global = @k}, %wv: tensor<16x16xf32> {rdu.global = @v}, %wo: tensor<16x32xf32> {rdu.global = @o}) -> tensor<1x16xf32> {
    %q = rdu.matmul %x, %wq transpose_rhs {rdu.layer = "layers.0"} : tensor<1x16xf32>, tensor<32x16xf32> -> tensor<1x32xf32>
    %qh = rdu.reshape %q {rdu.layer = "layers.0"} : tensor<1x32xf32> -> tensor<8x1x4xf32>
    %k = rdu.matmul %x, %wk transpose_rhs {rdu.layer = "layers.0"} : tensor<1x16xf32>, tensor<16x16xf32> -> tensor<1x16xf32>
    %kh = rdu.reshape %k {rdu.layer = "layers.0"} : tensor<1x16xf32> -> tensor<4x1x1x4xf32>
    %kb = rdu.broadcast %kh {rdu.layer = "layers.0"} : tensor<4x1x1x4xf32> -> tensor<4x2x1x4xf32>
    %keys = rdu.reshape %kb {rdu.layer = "layers.0"} : tensor<4x2x1x4xf32> -> tensor<8x1x4xf32>
    %v = rdu.matmul %x, %wv transpose_rhs {rdu.layer = "layers.0"} : tensor<1x16xf32>, tensor<16x16xf32> -> tensor<1x16xf32>
    %vh = rdu.reshape %v {rdu.layer = "layers.0"} : tensor<1x16xf32> -> tensor<4x1x4xf32>
    %v1 = rdu.slice %vh offsets [0, 0, 0] strides [1, 1, 1] {rdu.layer = "layers.0"} : tensor<4x1x4xf32> -> tensor<2x1x4xf32>
    %v2 = rdu.slice %vh offsets [2, 0, 0] strides [1, 1, 1] {rdu.layer = "layers.0"} : tensor<4x1x4xf32> -> tensor<2x1x4xf32>
    %v1r = rdu.reshape %v1 {rdu.layer = "layers.0"} : tensor<2x1x4xf32> -> tensor<1x2x1x4xf32>
    %v1t = rdu.broadcast %v1r {rdu.layer = "layers.0"} : tensor<1x2x1x4xf32> -> tensor<2x2x1x4xf32>
    %v1k = rdu.reshape %v1t {rdu.layer = "layers.0"} : tensor<2x2x1x4xf32> -> tensor<4x1x1x4xf32>
    %v1b = rdu.broadcast %v1k {rdu.layer = "layers.0"} : tensor<4x1x1x4xf32> -> tensor<4x2x1x4xf32>
    %vals1 = rdu.reshape %v1b {rdu.layer = "layers.0"} : tensor<4x2x1x4xf32> -> tensor<8x1x4xf32>
    %v2r = rdu.reshape %v2 {rdu.layer = "layers.0"} : tensor<2x1x4xf32> -> tensor<1x2x1x4xf32>
    %v2t = rdu.broadcast %v2r {rdu.layer = "layers.0"} : tensor<1x2x1x4xf32> -> tensor<2x2x1x4xf32>
    %v2k = rdu.reshape %v2t {rdu.layer = "layers.0"} : tensor<2x2x1x4xf32> -> tensor<4x1x1x4xf32>
    %v2b = rdu.broadcast %v2k {rdu.layer = "layers.0"} : tensor<4x1x1x4xf32> -> tensor<4x2x1x4xf32>
    %vals2 = rdu.reshape %v2b {rdu.layer = "layers.0"} : tensor<4x2x1x4xf32> -> tensor<8x1x4xf32>
    %scores = rdu.matmul %qh, %keys transpose_rhs {rdu.layer = "layers.0"} : tensor<8x1x4xf32>, tensor<8x1x4xf32> -> tensor<8x1x1xf32>
    %out1 = rdu.matmul %scores, %vals1 {rdu.layer = "layers.0"} : tensor<8x1x1xf32>, tensor<8x1x4xf32> -> tensor<8x1x4xf32>
    %out2 = rdu.matmul %scores, %vals2 {rdu.layer = "layers.0"} : tensor<8x1x1xf32>, tensor<8x1x4xf32> -> tensor<8x1x4xf32>
    %both = rdu.concat %out1, %out2 dim 2 {rdu.layer = "layers.0"} : (tensor<8x1x4xf32>, tensor<8x1x4xf32>) -> tensor<8x1x8xf32>
    %first = rdu.slice %both offsets [0, 0, 0] strides [1, 1, 1] {rdu.layer = "layers.0"} : tensor<8x1x8xf32> -> tensor<4x1x8xf32>
    %second = rdu.slice %both offsets [4, 0, 0] strides [1, 1, 1] {rdu.layer = "layers.0"} : tensor<8x1x8xf32> -> tensor<4x1x8xf32>
    %diff = rdu.map %first, %second {rdu.layer = "layers.0"} : (tensor<4x1x8xf32>, tensor<4x1x8xf32>) -> tensor<4x1x8xf32> {
    ^bb0(%0: f32, %1: f32):
      %2 = arith.subf %0, %1 : f32
      rdu.yield %2 : f32
    }
    %flat = rdu.reshape %diff {rdu.layer = "layers.0"} : tensor<4x1x8xf32> -> tensor<1x32xf32>
    %out = rdu.matmul %flat, %wo transpose_rhs {rdu.layer = "layers.0"} : tensor<1x32xf32>, tensor<16x32xf32> -> tensor<1x16xf32>
    func.return %out : tensor<1x16xf32>
  }
}

// CHECK:      tier.global @q : tensor<8x16xf32> {kind = "parameter", rdu.shard = #rdu.split<(0, 4, 1, 16)>}
// CHECK-NEXT: tier.global @k : tensor<8x16xf32> {kind = "parameter", rdu.shard = #rdu.split<(0, 2, 2, 8)>}
// CHECK-NEXT: tier.global @v : tensor<8x16xf32> {kind = "parameter", rdu.shard = #rdu.split<(0, 2, 2, 8)>}
// CHECK-NEXT: tier.global @o : tensor<16x8xf32> {kind = "parameter", rdu.shard = #rdu.split<(1, 4, 1)>}
// CHECK-NOT:  rdu.all_gather
// CHECK:      %v1 = rdu.slice %vh offsets [0, 0, 0] {{.*}} : tensor<2x1x4xf32> -> tensor<1x1x4xf32>
// CHECK-NEXT: %v2 = rdu.slice %vh offsets [1, 0, 0] {{.*}} : tensor<2x1x4xf32> -> tensor<1x1x4xf32>
// CHECK:      %first = rdu.slice %both offsets [0, 0, 0] {{.*}} : tensor<2x1x8xf32> -> tensor<1x1x8xf32>
// CHECK-NEXT: %second = rdu.slice %both offsets [1, 0, 0] {{.*}} : tensor<2x1x8xf32> -> tensor<1x1x8xf32>
// CHECK:      %out = rdu.matmul %flat, %wo transpose_rhs {{.*}} : tensor<1x8xf32>, tensor<16x8xf32> -> tensor<1x16xf32>
// CHECK-NEXT: %{{.*}} = rdu.all_reduce %out group 4
// CHECK-NOT:  rdu.all_gather
// CHECK-NOT:  rdu.local_part

// TP8:      tier.global @q : tensor<4x16xf32> {kind = "parameter", rdu.shard = #rdu.split<(0, 8, 1)>}
// TP8:      rdu.all_gather
