// Grouped-query attention with q, k and v fused in one weight and more ranks
// than KV heads: 4 query heads and 2 KV heads of 4 features, tp=4. The fused
// weight splits per block, each block into its own parts: q's 16 columns 4
// ways, k's and v's 8 columns 2 ways (`8:2`: rank r holds KV head r / 2,
// replicated over the pair), as separate q/k/v weights would split. Nothing in
// the layer is gathered; o_proj's rows split 4 ways and one all-reduce follows
// it. The projection's whole value, read outside the layer by a concat, is
// gathered block by block, each over the ranks that hold its parts (k's and v's
// over pairs of ranks 2 apart).
// RUN: rducc-opt --check-roundtrip -p 'rdu-partition{tp=4}' %s | filecheck %s
// tp=2: one KV head a rank, every block split 2 ways (equal parts: no `:p`).
// RUN: rducc-opt -p 'rdu-partition{tp=2}' %s | filecheck %s --check-prefix=TP2
// tp=8: the 4 query heads cannot split 8 ways, so no block split keeps whole
// heads: the fused weight splits in one piece and its result is gathered.
// RUN: rducc-opt -p 'rdu-partition{tp=8}' %s | filecheck %s --check-prefix=TP8

builtin.module attributes {rdu.level = #rdu<level graph>, rdu.target = "sn40l-8"} {
  tier.global @qkv : tensor<32x16xf32> {kind = "parameter"}
  tier.global @o : tensor<16x16xf32> {kind = "parameter"}
  func.func @forward(%x: tensor<1x16xf32> {rdu.input = "x"}, %kc: tensor<2x6x4xf32> {rdu.input = "k_cache"}, %vc: tensor<2x6x4xf32> {rdu.input = "v_cache"}, %w: tensor<32x16xf32> {rdu.global = @qkv}, %wo: tensor<16x16xf32> {rdu.global = @o}) -> (tensor<1x16xf32>, tensor<2x1x4xf32>, tensor<1x48xf32>) {
    %qkv = rdu.matmul %x, %w transpose_rhs {rdu.layer = "layers.0"} : tensor<1x16xf32>, tensor<32x16xf32> -> tensor<1x32xf32>
    %q = rdu.slice %qkv offsets [0, 0] strides [1, 1] {rdu.layer = "layers.0"} : tensor<1x32xf32> -> tensor<1x16xf32>
    %k = rdu.slice %qkv offsets [0, 16] strides [1, 1] {rdu.layer = "layers.0"} : tensor<1x32xf32> -> tensor<1x8xf32>
    %v = rdu.slice %qkv offsets [0, 24] strides [1, 1] {rdu.layer = "layers.0"} : tensor<1x32xf32> -> tensor<1x8xf32>
    %qh = rdu.reshape %q {rdu.layer = "layers.0"} : tensor<1x16xf32> -> tensor<2x2x4xf32>
    %kh = rdu.reshape %k {rdu.layer = "layers.0"} : tensor<1x8xf32> -> tensor<2x1x4xf32>
    %vh = rdu.reshape %v {rdu.layer = "layers.0"} : tensor<1x8xf32> -> tensor<2x1x4xf32>
    %kt = rdu.transpose %kc perm [0, 2, 1] {rdu.layer = "layers.0"} : tensor<2x6x4xf32> -> tensor<2x4x6xf32>
    %old = rdu.matmul %qh, %kt {rdu.layer = "layers.0"} : tensor<2x2x4xf32>, tensor<2x4x6xf32> -> tensor<2x2x6xf32>
    %new = rdu.matmul %qh, %kh transpose_rhs {rdu.layer = "layers.0"} : tensor<2x2x4xf32>, tensor<2x1x4xf32> -> tensor<2x2x1xf32>
    %scores = rdu.concat %old, %new dim 2 {rdu.layer = "layers.0"} : (tensor<2x2x6xf32>, tensor<2x2x1xf32>) -> tensor<2x2x7xf32>
    %values = rdu.concat %vc, %vh dim 1 {rdu.layer = "layers.0"} : (tensor<2x6x4xf32>, tensor<2x1x4xf32>) -> tensor<2x7x4xf32>
    %attended = rdu.matmul %scores, %values {rdu.layer = "layers.0"} : tensor<2x2x7xf32>, tensor<2x7x4xf32> -> tensor<2x2x4xf32>
    %flat = rdu.reshape %attended {rdu.layer = "layers.0"} : tensor<2x2x4xf32> -> tensor<1x16xf32>
    %out = rdu.matmul %flat, %wo transpose_rhs {rdu.layer = "layers.0"} : tensor<1x16xf32>, tensor<16x16xf32> -> tensor<1x16xf32>
    %both = rdu.concat %qkv, %x dim 1 : (tensor<1x32xf32>, tensor<1x16xf32>) -> tensor<1x48xf32>
    func.return %out, %kh, %both : tensor<1x16xf32>, tensor<2x1x4xf32>, tensor<1x48xf32>
  }
}

// CHECK:      tier.global @qkv : tensor<12x16xf32> {kind = "parameter", rdu.shard = #rdu.split<(0, 4, 1, [16, 8:2, 8:2])>}
// CHECK-NEXT: tier.global @o : tensor<16x4xf32> {kind = "parameter", rdu.shard = #rdu.split<(1, 4, 1)>}
// CHECK-NEXT: func.func @forward(%x: tensor<1x16xf32> {rdu.input = "x"}, %kc: tensor<1x6x4xf32> {rdu.input = "k_cache", rdu.shard = #rdu.split<(0, 2, 2)>}, %vc: tensor<1x6x4xf32> {rdu.input = "v_cache", rdu.shard = #rdu.split<(0, 2, 2)>},
// CHECK-SAME: -> (tensor<1x16xf32>, tensor<1x1x4xf32>, tensor<1x48xf32>) attributes {rdu.result_shards = [#rdu.split<>, #rdu.split<(0, 2, 2)>, #rdu.split<>]}
// CHECK-NOT:  rdu.all_gather
// CHECK:      %qkv = rdu.matmul {{.*}} -> tensor<1x12xf32>
// CHECK-NEXT: %[[V:.*]] = rdu.slice %qkv offsets [0, 8] {{.*}} -> tensor<1x4xf32>
// CHECK-NEXT: %[[VW:.*]] = rdu.all_gather %[[V]] dim 1 group 2 stride 2 {{.*}} -> tensor<1x8xf32>
// CHECK-NEXT: %[[K:.*]] = rdu.slice %qkv offsets [0, 4] {{.*}} -> tensor<1x4xf32>
// CHECK-NEXT: %[[KW:.*]] = rdu.all_gather %[[K]] dim 1 group 2 stride 2 {{.*}} -> tensor<1x8xf32>
// CHECK-NEXT: %[[Q:.*]] = rdu.slice %qkv offsets [0, 0] {{.*}} -> tensor<1x4xf32>
// CHECK-NEXT: %[[QW:.*]] = rdu.all_gather %[[Q]] dim 1 group 4 {{.*}} -> tensor<1x16xf32>
// CHECK-NEXT: %[[WHOLE:.*]] = rdu.concat %[[QW]], %[[KW]], %[[VW]] dim 1 {{.*}} -> tensor<1x32xf32>
// CHECK-NEXT: %q = rdu.slice %qkv offsets [0, 0] {{.*}} -> tensor<1x4xf32>
// CHECK-NEXT: %k = rdu.slice %qkv offsets [0, 4] {{.*}} -> tensor<1x4xf32>
// CHECK-NEXT: %v = rdu.slice %qkv offsets [0, 8] {{.*}} -> tensor<1x4xf32>
// CHECK:      %qh = rdu.reshape %q {{.*}} : tensor<1x4xf32> -> tensor<1x1x4xf32>
// CHECK:      %kh = rdu.reshape %k {{.*}} : tensor<1x4xf32> -> tensor<1x1x4xf32>
// CHECK:      %attended = rdu.matmul %scores, %values {{.*}} : tensor<1x1x7xf32>, tensor<1x7x4xf32> -> tensor<1x1x4xf32>
// CHECK:      %out = rdu.matmul %flat, %wo transpose_rhs {{.*}} : tensor<1x4xf32>, tensor<16x4xf32> -> tensor<1x16xf32>
// CHECK-NEXT: %{{.*}} = rdu.all_reduce %out group 4
// CHECK-NOT:  rdu.all_gather
// CHECK:      %both = rdu.concat %[[WHOLE]], %x dim 1

// TP2:      tier.global @qkv : tensor<16x16xf32> {kind = "parameter", rdu.shard = #rdu.split<(0, 2, 1, [16, 8, 8])>}
// TP2:      rdu.result_shards = [#rdu.split<>, #rdu.split<(0, 2, 1)>, #rdu.split<>]

// TP8:      tier.global @qkv : tensor<4x16xf32> {kind = "parameter", rdu.shard = #rdu.split<(0, 8, 1)>}
// TP8:      %qkv = rdu.matmul {{.*}} -> tensor<1x4xf32>
// TP8-NEXT: rdu.all_gather %qkv dim 1 group 8 {{.*}} -> tensor<1x32xf32>
