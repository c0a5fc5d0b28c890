// The differential attention of rdu-partition-chunked-heads.mlir at a hidden size of
// 262,144 (only its types: nothing runs), at tp=4 on sn40l-8. Its head-pair split holds each
// KV head on a pair of ranks, so every rank reads half of k's weight (8 MB) where a
// consecutive split reads a quarter; the exchange of the attention output's heads (an
// all-gather of 64 floats a rank, each rank keeping its part of both chunks) is hidden
// by the cost model's schedule behind the load of o_proj's 8 MB a rank that waits for it,
// and costs less than those 4 MB of HBM reads, so rdu-partition takes it
// (`_exchange_pays`): q and k split in consecutive heads (rank r: query heads 2r, 2r + 1
// and KV head r), v's KV heads r % 2 and 2 + r % 2 (the minor stride: what the tiled
// values of the consecutive query heads read), the output gathered and cut to each
// rank's heads of both chunks, o_proj by rows, one all-reduce. At the hidden size of 16
// (rdu-partition-chunked-heads.mlir) the exchange costs more than the reads it saves and
// the head-pair split stays. (tp=2 against eager: test_held_out_layouts.py.)
// RUN: rducc-opt --check-roundtrip -p 'rdu-partition{tp=4}' %s | filecheck %s

builtin.module attributes {rdu.level = #rdu<level graph>, rdu.target = "sn40l-8"} {
  tier.global @q : tensor<32x262144xf32> {kind = "parameter"}
  tier.global @k : tensor<16x262144xf32> {kind = "parameter"}
  tier.global @v : tensor<16x262144xf32> {kind = "parameter"}
  tier.global @o : tensor<262144x32xf32> {kind = "parameter"}
  func.func @forward(%x: tensor<1x262144xf32> {rdu.input = "x"}, %wq: tensor<32x262144xf32> {rdu.global = @q}, %wk: tensor<16x262144xf32> {rdu.global = @k}, %wv: tensor<16x262144xf32> {rdu.global = @v}, %wo: tensor<262144x32xf32> {rdu.global = @o}) -> tensor<1x262144xf32> {
    %q = rdu.matmul %x, %wq transpose_rhs {rdu.layer = "layers.0"} : tensor<1x262144xf32>, tensor<32x262144xf32> -> tensor<1x32xf32>
    %qh = rdu.reshape %q {rdu.layer = "layers.0"} : tensor<1x32xf32> -> tensor<8x1x4xf32>
    %k = rdu.matmul %x, %wk transpose_rhs {rdu.layer = "layers.0"} : tensor<1x262144xf32>, tensor<16x262144xf32> -> tensor<1x16xf32>
    %kh = rdu.reshape %k {rdu.layer = "layers.0"} : tensor<1x16xf32> -> tensor<4x1x1x4xf32>
    %kb = rdu.broadcast %kh {rdu.layer = "layers.0"} : tensor<4x1x1x4xf32> -> tensor<4x2x1x4xf32>
    %keys = rdu.reshape %kb {rdu.layer = "layers.0"} : tensor<4x2x1x4xf32> -> tensor<8x1x4xf32>
    %v = rdu.matmul %x, %wv transpose_rhs {rdu.layer = "layers.0"} : tensor<1x262144xf32>, tensor<16x262144xf32> -> tensor<1x16xf32>
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
    %out = rdu.matmul %flat, %wo transpose_rhs {rdu.layer = "layers.0"} : tensor<1x32xf32>, tensor<262144x32xf32> -> tensor<1x262144xf32>
    func.return %out : tensor<1x262144xf32>
  }
}

// CHECK:      tier.global @q : tensor<8x262144xf32> {kind = "parameter", rdu.shard = #rdu.split<(0, 4, 1)>}
// CHECK-NEXT: tier.global @k : tensor<4x262144xf32> {kind = "parameter", rdu.shard = #rdu.split<(0, 4, 1)>}
// CHECK-NEXT: tier.global @v : tensor<8x262144xf32> {kind = "parameter", rdu.shard = #rdu.split<(0, 2, 1, 8)>}
// CHECK-NEXT: tier.global @o : tensor<262144x8xf32> {kind = "parameter", rdu.shard = #rdu.split<(1, 4, 1)>}
// CHECK:      %v1 = rdu.slice %vh offsets [0, 0, 0] {{.*}} : tensor<2x1x4xf32> -> tensor<1x1x4xf32>
// CHECK:      %scores = rdu.matmul %qh, %keys transpose_rhs {{.*}} : tensor<2x1x4xf32>, tensor<2x1x4xf32> -> tensor<2x1x1xf32>
// CHECK:      %[[ALL:.*]] = rdu.all_gather %both dim 0 group 4 {{.*}} : tensor<2x1x8xf32> -> tensor<8x1x8xf32>
// CHECK-NEXT: %[[RUNS:.*]] = rdu.reshape %[[ALL]] {{.*}} : tensor<8x1x8xf32> -> tensor<2x4x1x8xf32>
// CHECK-NEXT: %[[MINE:.*]] = rdu.local_part %[[RUNS]] dim 1 group 4 {{.*}} : tensor<2x4x1x8xf32> -> tensor<2x1x1x8xf32>
// CHECK-NEXT: %[[HEADS:.*]] = rdu.reshape %[[MINE]] {{.*}} : tensor<2x1x1x8xf32> -> tensor<2x1x8xf32>
// CHECK-NEXT: %first = rdu.slice %[[HEADS]] offsets [0, 0, 0] {{.*}} : tensor<2x1x8xf32> -> tensor<1x1x8xf32>
// CHECK-NEXT: %second = rdu.slice %[[HEADS]] offsets [1, 0, 0] {{.*}} : tensor<2x1x8xf32> -> tensor<1x1x8xf32>
// CHECK:      %out = rdu.matmul %flat, %wo transpose_rhs {{.*}} : tensor<1x8xf32>, tensor<262144x8xf32> -> tensor<1x262144xf32>
// CHECK-NEXT: %{{.*}} = rdu.all_reduce %out group 4
// CHECK-NOT:  rdu.all_gather
