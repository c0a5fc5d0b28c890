// Multi-query attention after rdu-canonicalize: the one KV head's
// `view(b, l, 1, d).transpose(1, 2)` is one reshape `[b*l, d] -> [b, 1, l, d]`
// (the transpose of a unit dim folded into it; the unit head dim sits before the
// tokens, not beside the features). 4 query heads share it at tp=2: the k/v
// projections (one head of 4 features) stay whole on every rank (a split of their
// columns would cut the head), q splits by heads, o_proj by rows: one all-reduce,
// no gather.
// RUN: rducc-opt --check-roundtrip --split-input-file -p 'rdu-partition{tp=2}' %s | filecheck %s

builtin.module attributes {rdu.level = #rdu<level graph>, rdu.target = "sn40l-8"} {
  tier.global @q : tensor<16x16xf32> {kind = "parameter"}
  tier.global @k : tensor<4x16xf32> {kind = "parameter"}
  tier.global @v : tensor<4x16xf32> {kind = "parameter"}
  tier.global @o : tensor<16x16xf32> {kind = "parameter"}
  func.func @forward(%x: tensor<4x16xf32> {rdu.input = "x"}, %wq: tensor<16x16xf32> {rdu.global = @q}, %wk: tensor<4x16xf32> {rdu.global = @k}, %wv: tensor<4x16xf32> {rdu.global = @v}, %wo: tensor<16x16xf32> {rdu.global = @o}) -> tensor<4x16xf32> {
    %q = rdu.matmul %x, %wq transpose_rhs {rdu.layer = "layers.0"} : tensor<4x16xf32>, tensor<16x16xf32> -> tensor<4x16xf32>
    %qs = rdu.reshape %q {rdu.layer = "layers.0"} : tensor<4x16xf32> -> tensor<2x2x4x4xf32>
    %qh = rdu.transpose %qs perm [0, 2, 1, 3] {rdu.layer = "layers.0"} : tensor<2x2x4x4xf32> -> tensor<2x4x2x4xf32>
    %k = rdu.matmul %x, %wk transpose_rhs {rdu.layer = "layers.0"} : tensor<4x16xf32>, tensor<4x16xf32> -> tensor<4x4xf32>
    %kh = rdu.reshape %k {rdu.layer = "layers.0"} : tensor<4x4xf32> -> tensor<2x1x2x4xf32>
    %kr = rdu.broadcast %kh {rdu.layer = "layers.0"} : tensor<2x1x2x4xf32> -> tensor<2x4x2x4xf32>
    %v = rdu.matmul %x, %wv transpose_rhs {rdu.layer = "layers.0"} : tensor<4x16xf32>, tensor<4x16xf32> -> tensor<4x4xf32>
    %vh = rdu.reshape %v {rdu.layer = "layers.0"} : tensor<4x4xf32> -> tensor<2x1x2x4xf32>
    %vr = rdu.broadcast %vh {rdu.layer = "layers.0"} : tensor<2x1x2x4xf32> -> tensor<2x4x2x4xf32>
    %scores = rdu.matmul %qh, %kr transpose_rhs {rdu.layer = "layers.0"} : tensor<2x4x2x4xf32>, tensor<2x4x2x4xf32> -> tensor<2x4x2x2xf32>
    %attended = rdu.matmul %scores, %vr {rdu.layer = "layers.0"} : tensor<2x4x2x2xf32>, tensor<2x4x2x4xf32> -> tensor<2x4x2x4xf32>
    %back = rdu.transpose %attended perm [0, 2, 1, 3] {rdu.layer = "layers.0"} : tensor<2x4x2x4xf32> -> tensor<2x2x4x4xf32>
    %flat = rdu.reshape %back {rdu.layer = "layers.0"} : tensor<2x2x4x4xf32> -> tensor<4x16xf32>
    %out = rdu.matmul %flat, %wo transpose_rhs {rdu.layer = "layers.0"} : tensor<4x16xf32>, tensor<16x16xf32> -> tensor<4x16xf32>
    func.return %out : tensor<4x16xf32>
  }
}

// CHECK:      tier.global @q : tensor<8x16xf32> {kind = "parameter", rdu.shard = #rdu.split<(0, 2, 1)>}
// CHECK-NEXT: tier.global @k : tensor<4x16xf32> {kind = "parameter", rdu.whole_reader = ["rdu.matmul", ""]}
// CHECK-NEXT: tier.global @v : tensor<4x16xf32> {kind = "parameter", rdu.whole_reader = ["rdu.matmul", ""]}
// CHECK-NEXT: tier.global @o : tensor<16x8xf32> {kind = "parameter", rdu.shard = #rdu.split<(1, 2, 1)>}
// CHECK:      %kh = rdu.reshape %k {{.*}} : tensor<4x4xf32> -> tensor<2x1x2x4xf32>
// CHECK-NEXT: %kr = rdu.broadcast %kh {{.*}} : tensor<2x1x2x4xf32> -> tensor<2x2x2x4xf32>
// CHECK:      %scores = rdu.matmul %qh, %kr transpose_rhs {{.*}} : tensor<2x2x2x4xf32>, tensor<2x2x2x4xf32> -> tensor<2x2x2x2xf32>
// CHECK:      %out = rdu.matmul %flat, %wo transpose_rhs {{.*}} : tensor<4x8xf32>, tensor<16x8xf32> -> tensor<4x16xf32>
// CHECK-NEXT: %{{.*}} = rdu.all_reduce %out group 2
// CHECK-NOT:  rdu.all_gather

// -----

// Refused: a unit dim added only in front is a batch of one (`[4, 4] -> [1, 4, 4]`),
// not a head: the projection's columns split (the result is returned split).

// CHECK:      tier.global @q_batch : tensor<8x16xf32>
// CHECK-NEXT: tier.global @k_batch : tensor<2x16xf32> {kind = "parameter", rdu.shard = #rdu.split<(0, 2, 1)>}
// CHECK:      %kb = rdu.reshape %k {{.*}} : tensor<4x2xf32> -> tensor<1x4x2xf32>
// CHECK-NEXT: func.return %qs, %kb : tensor<2x2x2x4xf32>, tensor<1x4x2xf32>
builtin.module attributes {rdu.level = #rdu<level graph>, rdu.target = "sn40l-8"} {
  tier.global @q_batch : tensor<16x16xf32> {kind = "parameter"}
  tier.global @k_batch : tensor<4x16xf32> {kind = "parameter"}
  func.func @forward(%x: tensor<4x16xf32> {rdu.input = "x"}, %wq: tensor<16x16xf32> {rdu.global = @q_batch}, %wk: tensor<4x16xf32> {rdu.global = @k_batch}) -> (tensor<2x2x4x4xf32>, tensor<1x4x4xf32>) {
    %q = rdu.matmul %x, %wq transpose_rhs {rdu.layer = "layers.0"} : tensor<4x16xf32>, tensor<16x16xf32> -> tensor<4x16xf32>
    %qs = rdu.reshape %q {rdu.layer = "layers.0"} : tensor<4x16xf32> -> tensor<2x2x4x4xf32>
    %k = rdu.matmul %x, %wk transpose_rhs {rdu.layer = "layers.0"} : tensor<4x16xf32>, tensor<4x16xf32> -> tensor<4x4xf32>
    %kb = rdu.reshape %k {rdu.layer = "layers.0"} : tensor<4x4xf32> -> tensor<1x4x4xf32>
    func.return %qs, %kb : tensor<2x2x4x4xf32>, tensor<1x4x4xf32>
  }
}
