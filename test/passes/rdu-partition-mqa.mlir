// Multi-query attention: 4 query heads share one KV head, tp=2. The k/v
// projections (one head of 4 features) stay whole on every rank (a split of
// their columns would cut the head), q splits by heads, each rank broadcasts
// the KV head to its own query heads, o_proj splits by rows: one all-reduce,
// no gather.
// RUN: rducc-opt --check-roundtrip -p 'rdu-partition{tp=2}' %s | filecheck %s
//
// Diagnostics: 8 ranks, 4 query heads: q splits over 4 of them, so o_proj's
// rows cannot split 8 ways.
// RUN: not rducc-opt -p 'rdu-partition{tp=8}' %s 2>&1 | filecheck %s --check-prefix=ERR-8

builtin.module attributes {rdu.level = #rdu<level graph>, rdu.target = "sn40l-8"} {
  tier.global @q : tensor<16x16xf32> {kind = "parameter"}
  tier.global @k : tensor<4x16xf32> {kind = "parameter"}
  tier.global @v : tensor<4x16xf32> {kind = "parameter"}
  tier.global @o : tensor<16x16xf32> {kind = "parameter"}
  func.func @forward(%x: tensor<2x16xf32> {rdu.input = "x"}, %wq: tensor<16x16xf32> {rdu.global = @q}, %wk: tensor<4x16xf32> {rdu.global = @k}, %wv: tensor<4x16xf32> {rdu.global = @v}, %wo: tensor<16x16xf32> {rdu.global = @o}) -> tensor<2x16xf32> {
    %q = rdu.matmul %x, %wq transpose_rhs {rdu.layer = "layers.0"} : tensor<2x16xf32>, tensor<16x16xf32> -> tensor<2x16xf32>
    %qs = rdu.reshape %q {rdu.layer = "layers.0"} : tensor<2x16xf32> -> tensor<2x4x4xf32>
    %qh = rdu.transpose %qs perm [1, 0, 2] {rdu.layer = "layers.0"} : tensor<2x4x4xf32> -> tensor<4x2x4xf32>
    %k = rdu.matmul %x, %wk transpose_rhs {rdu.layer = "layers.0"} : tensor<2x16xf32>, tensor<4x16xf32> -> tensor<2x4xf32>
    %ks = rdu.reshape %k {rdu.layer = "layers.0"} : tensor<2x4xf32> -> tensor<2x1x4xf32>
    %kh = rdu.transpose %ks perm [1, 0, 2] {rdu.layer = "layers.0"} : tensor<2x1x4xf32> -> tensor<1x2x4xf32>
    %kr = rdu.broadcast %kh {rdu.layer = "layers.0"} : tensor<1x2x4xf32> -> tensor<4x2x4xf32>
    %v = rdu.matmul %x, %wv transpose_rhs {rdu.layer = "layers.0"} : tensor<2x16xf32>, tensor<4x16xf32> -> tensor<2x4xf32>
    %vs = rdu.reshape %v {rdu.layer = "layers.0"} : tensor<2x4xf32> -> tensor<2x1x4xf32>
    %vh = rdu.transpose %vs perm [1, 0, 2] {rdu.layer = "layers.0"} : tensor<2x1x4xf32> -> tensor<1x2x4xf32>
    %vr = rdu.broadcast %vh {rdu.layer = "layers.0"} : tensor<1x2x4xf32> -> tensor<4x2x4xf32>
    %scores = rdu.matmul %qh, %kr transpose_rhs {rdu.layer = "layers.0"} : tensor<4x2x4xf32>, tensor<4x2x4xf32> -> tensor<4x2x2xf32>
    %attended = rdu.matmul %scores, %vr {rdu.layer = "layers.0"} : tensor<4x2x2xf32>, tensor<4x2x4xf32> -> tensor<4x2x4xf32>
    %back = rdu.transpose %attended perm [1, 0, 2] {rdu.layer = "layers.0"} : tensor<4x2x4xf32> -> tensor<2x4x4xf32>
    %flat = rdu.reshape %back {rdu.layer = "layers.0"} : tensor<2x4x4xf32> -> tensor<2x16xf32>
    %out = rdu.matmul %flat, %wo transpose_rhs {rdu.layer = "layers.0"} : tensor<2x16xf32>, tensor<16x16xf32> -> tensor<2x16xf32>
    func.return %out : tensor<2x16xf32>
  }
}

// CHECK:      tier.global @q : tensor<8x16xf32> {kind = "parameter", rdu.shard = #rdu.split<(0, 2, 1)>}
// CHECK-NEXT: tier.global @k : tensor<4x16xf32> {kind = "parameter", rdu.whole_reader = ["rdu.matmul", ""]}
// CHECK-NEXT: tier.global @v : tensor<4x16xf32> {kind = "parameter", rdu.whole_reader = ["rdu.matmul", ""]}
// CHECK-NEXT: tier.global @o : tensor<16x8xf32> {kind = "parameter", rdu.shard = #rdu.split<(1, 2, 1)>}
// CHECK:      %k = rdu.matmul {{.*}} -> tensor<2x4xf32>
// CHECK:      %kr = rdu.broadcast %kh {{.*}} : tensor<1x2x4xf32> -> tensor<2x2x4xf32>
// CHECK:      %scores = rdu.matmul %qh, %kr transpose_rhs {{.*}} : tensor<2x2x4xf32>, tensor<2x2x4xf32> -> tensor<2x2x2xf32>
// CHECK:      %out = rdu.matmul %flat, %wo transpose_rhs {{.*}} : tensor<2x8xf32>, tensor<16x8xf32> -> tensor<2x16xf32>
// CHECK-NEXT: %{{.*}} = rdu.all_reduce %out group 2
// CHECK-NOT:  rdu.all_gather

// ERR-8: error: tp=8 does not divide the heads
