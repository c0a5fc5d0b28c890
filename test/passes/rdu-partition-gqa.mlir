// Grouped-query attention with more ranks than KV heads: 2 KV heads, 4 query
// heads (2 under each), tp=4. The ranks are 2 x 2: rank r holds KV head r / 2
// (the k/v weights and the KV cache split 2 ways, stride 2: replicated over
// the pair) and query head r (its half of the heads under that KV head).
// RUN: rducc-opt --check-roundtrip -p 'rdu-partition{tp=4}' %s | filecheck %s
// tp=2: one KV head a rank, the plain split.
// RUN: rducc-opt -p 'rdu-partition{tp=2}' %s | filecheck %s --check-prefix=TP2
//
// Diagnostics: 8 ranks, 4 query heads: q splits over 4 of them, so o_proj's
// rows cannot split 8 ways; tp=3 divides neither the heads nor the hidden size.
// RUN: not rducc-opt -p 'rdu-partition{tp=8}' %s 2>&1 | filecheck %s --check-prefix=ERR-8
// RUN: not rducc-opt -p 'rdu-partition{tp=3}' %s 2>&1 | filecheck %s --check-prefix=ERR-3

builtin.module attributes {rdu.level = #rdu<level graph>, rdu.target = "sn40l-8"} {
  tier.global @q : tensor<16x16xf32> {kind = "parameter"}
  tier.global @k : tensor<8x16xf32> {kind = "parameter"}
  tier.global @v : tensor<8x16xf32> {kind = "parameter"}
  tier.global @o : tensor<16x16xf32> {kind = "parameter"}
  func.func @forward(%x: tensor<1x16xf32> {rdu.input = "x"}, %kc: tensor<2x6x4xf32> {rdu.input = "k_cache"}, %vc: tensor<2x6x4xf32> {rdu.input = "v_cache"}, %wq: tensor<16x16xf32> {rdu.global = @q}, %wk: tensor<8x16xf32> {rdu.global = @k}, %wv: tensor<8x16xf32> {rdu.global = @v}, %wo: tensor<16x16xf32> {rdu.global = @o}) -> (tensor<1x16xf32>, tensor<2x1x4xf32>) {
    %q = rdu.matmul %x, %wq transpose_rhs {rdu.layer = "layers.0"} : tensor<1x16xf32>, tensor<16x16xf32> -> tensor<1x16xf32>
    %qh = rdu.reshape %q {rdu.layer = "layers.0"} : tensor<1x16xf32> -> tensor<2x2x4xf32>
    %k = rdu.matmul %x, %wk transpose_rhs {rdu.layer = "layers.0"} : tensor<1x16xf32>, tensor<8x16xf32> -> tensor<1x8xf32>
    %kh = rdu.reshape %k {rdu.layer = "layers.0"} : tensor<1x8xf32> -> tensor<2x1x4xf32>
    %v = rdu.matmul %x, %wv transpose_rhs {rdu.layer = "layers.0"} : tensor<1x16xf32>, tensor<8x16xf32> -> tensor<1x8xf32>
    %vh = rdu.reshape %v {rdu.layer = "layers.0"} : tensor<1x8xf32> -> tensor<2x1x4xf32>
    %kt = rdu.transpose %kc perm [0, 2, 1] {rdu.layer = "layers.0"} : tensor<2x6x4xf32> -> tensor<2x4x6xf32>
    %old = rdu.matmul %qh, %kt {rdu.layer = "layers.0"} : tensor<2x2x4xf32>, tensor<2x4x6xf32> -> tensor<2x2x6xf32>
    %new = rdu.matmul %qh, %kh transpose_rhs {rdu.layer = "layers.0"} : tensor<2x2x4xf32>, tensor<2x1x4xf32> -> tensor<2x2x1xf32>
    %scores = rdu.concat %old, %new dim 2 {rdu.layer = "layers.0"} : (tensor<2x2x6xf32>, tensor<2x2x1xf32>) -> tensor<2x2x7xf32>
    %values = rdu.concat %vc, %vh dim 1 {rdu.layer = "layers.0"} : (tensor<2x6x4xf32>, tensor<2x1x4xf32>) -> tensor<2x7x4xf32>
    %attended = rdu.matmul %scores, %values {rdu.layer = "layers.0"} : tensor<2x2x7xf32>, tensor<2x7x4xf32> -> tensor<2x2x4xf32>
    %flat = rdu.reshape %attended {rdu.layer = "layers.0"} : tensor<2x2x4xf32> -> tensor<1x16xf32>
    %out = rdu.matmul %flat, %wo transpose_rhs {rdu.layer = "layers.0"} : tensor<1x16xf32>, tensor<16x16xf32> -> tensor<1x16xf32>
    func.return %out, %kh : tensor<1x16xf32>, tensor<2x1x4xf32>
  }
}

// CHECK:      tier.global @q : tensor<4x16xf32> {kind = "parameter", rdu.shard = #rdu.split<(0, 4, 1)>}
// CHECK-NEXT: tier.global @k : tensor<4x16xf32> {kind = "parameter", rdu.shard = #rdu.split<(0, 2, 2)>}
// CHECK-NEXT: tier.global @v : tensor<4x16xf32> {kind = "parameter", rdu.shard = #rdu.split<(0, 2, 2)>}
// CHECK-NEXT: tier.global @o : tensor<16x4xf32> {kind = "parameter", rdu.shard = #rdu.split<(1, 4, 1)>}
// CHECK-NEXT: func.func @forward(%x: tensor<1x16xf32> {rdu.input = "x"}, %kc: tensor<1x6x4xf32> {rdu.input = "k_cache", rdu.shard = #rdu.split<(0, 2, 2)>}, %vc: tensor<1x6x4xf32> {rdu.input = "v_cache", rdu.shard = #rdu.split<(0, 2, 2)>},
// CHECK-SAME: -> (tensor<1x16xf32>, tensor<1x1x4xf32>) attributes {rdu.result_shards = [#rdu.split<>, #rdu.split<(0, 2, 2)>]}
// CHECK:      %qh = rdu.reshape %q {{.*}} : tensor<1x4xf32> -> tensor<1x1x4xf32>
// CHECK:      %kh = rdu.reshape %k {{.*}} : tensor<1x4xf32> -> tensor<1x1x4xf32>
// CHECK:      %old = rdu.matmul %qh, %kt {{.*}} : tensor<1x1x4xf32>, tensor<1x4x6xf32> -> tensor<1x1x6xf32>
// CHECK:      %attended = rdu.matmul %scores, %values {{.*}} : tensor<1x1x7xf32>, tensor<1x7x4xf32> -> tensor<1x1x4xf32>
// CHECK-NEXT: %flat = rdu.reshape %attended {{.*}} : tensor<1x1x4xf32> -> tensor<1x4xf32>
// CHECK-NEXT: %out = rdu.matmul %flat, %wo transpose_rhs {{.*}} : tensor<1x4xf32>, tensor<16x4xf32> -> tensor<1x16xf32>
// CHECK-NEXT: %{{.*}} = rdu.all_reduce %out group 4
// CHECK-NOT:  rdu.all_gather

// TP2:      tier.global @q : tensor<8x16xf32> {kind = "parameter", rdu.shard = #rdu.split<(0, 2, 1)>}
// TP2-NEXT: tier.global @k : tensor<4x16xf32> {kind = "parameter", rdu.shard = #rdu.split<(0, 2, 1)>}
// TP2:      rdu.result_shards = [#rdu.split<>, #rdu.split<(0, 2, 1)>]

// ERR-8: error: tp=8 does not divide the heads: the 16 input rows of weight @o arrive with dim 1 split 4 ways (rank / 2), not split 8 ways
// ERR-3: error: tp=3 does not divide the 16 output columns of weight @q (heads or hidden size)
