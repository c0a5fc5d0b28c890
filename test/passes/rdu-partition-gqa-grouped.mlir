// Grouped-query attention with q, k and v fused per KV group (Falcon's layout:
// the projection viewed [groups, q heads + 2, head_dim], sliced along the
// middle dim), and more ranks than groups: 4 query heads and 2 KV heads of 4
// features, tp=4. The fused weight's 32 columns are 2 runs of blocks [8, 4, 4];
// the runs split over the major factor (a group a rank pair) and, in each, q's
// block over the minor one while k's and v's are held whole by the pair:
// `[8:2, -4, -4]`, as separate k and v weights would split `(0, 2, 2)`. The
// view moves the blocks onto its middle dim (`[2, -1, -1]`) and the runs onto
// the groups; nothing in the layer is gathered. The projection's whole value,
// read outside the layer by a concat, is gathered run by run: its blocks over
// the pair (q's), then the runs over the groups.
// RUN: rducc-opt --check-roundtrip -p 'rdu-partition{tp=4}' %s | filecheck %s
// tp=2: as many ranks as groups: a group a rank, the columns in one piece.
// RUN: rducc-opt -p 'rdu-partition{tp=2}' %s | filecheck %s --check-prefix=TP2
// Invalid: tp=8 over the 4 query heads: q's block keeps whole heads only 2
// ways a group, so o_proj's rows arrive split 4 ways, an error naming it.
// RUN: not rducc-opt -p 'rdu-partition{tp=8}' %s 2>&1 | filecheck %s --check-prefix=BAD

builtin.module attributes {rdu.level = #rdu<level graph>, rdu.target = "sn40l-8"} {
  tier.global @qkv : tensor<32x16xf32> {kind = "parameter"}
  tier.global @o : tensor<16x16xf32> {kind = "parameter"}
  func.func @forward(%x: tensor<1x16xf32> {rdu.input = "x"}, %kc: tensor<2x6x4xf32> {rdu.input = "k_cache"}, %vc: tensor<2x6x4xf32> {rdu.input = "v_cache"}, %w: tensor<32x16xf32> {rdu.global = @qkv}, %wo: tensor<16x16xf32> {rdu.global = @o}) -> (tensor<1x16xf32>, tensor<2x1x4xf32>, tensor<1x48xf32>) {
    %qkv = rdu.matmul %x, %w transpose_rhs {rdu.layer = "layers.0"} : tensor<1x16xf32>, tensor<32x16xf32> -> tensor<1x32xf32>
    %grouped = rdu.reshape %qkv {rdu.layer = "layers.0"} : tensor<1x32xf32> -> tensor<2x4x4xf32>
    %qh = rdu.slice %grouped offsets [0, 0, 0] strides [1, 1, 1] {rdu.layer = "layers.0"} : tensor<2x4x4xf32> -> tensor<2x2x4xf32>
    %kh = rdu.slice %grouped offsets [0, 2, 0] strides [1, 1, 1] {rdu.layer = "layers.0"} : tensor<2x4x4xf32> -> tensor<2x1x4xf32>
    %vh = rdu.slice %grouped offsets [0, 3, 0] strides [1, 1, 1] {rdu.layer = "layers.0"} : tensor<2x4x4xf32> -> tensor<2x1x4xf32>
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

// CHECK:      tier.global @qkv : tensor<12x16xf32> {kind = "parameter", rdu.shard = #rdu.split<(0, 4, 1, [8:2, -4, -4])>}
// CHECK-NEXT: tier.global @o : tensor<16x4xf32> {kind = "parameter", rdu.shard = #rdu.split<(1, 4, 1)>}
// CHECK-NEXT: func.func @forward(%x: tensor<1x16xf32> {rdu.input = "x"}, %kc: tensor<1x6x4xf32> {rdu.input = "k_cache", rdu.shard = #rdu.split<(0, 2, 2)>}, %vc: tensor<1x6x4xf32> {rdu.input = "v_cache", rdu.shard = #rdu.split<(0, 2, 2)>},
// CHECK-SAME: -> (tensor<1x16xf32>, tensor<1x1x4xf32>, tensor<1x48xf32>) attributes {rdu.result_shards = [#rdu.split<>, #rdu.split<(0, 2, 2)>, #rdu.split<>]}
// CHECK:      %qkv = rdu.matmul {{.*}} -> tensor<1x12xf32>
// CHECK-NEXT: %[[HELD:.*]] = rdu.reshape %qkv {{.*}} : tensor<1x12xf32> -> tensor<1x1x12xf32>
// CHECK-NEXT: %[[V:.*]] = rdu.slice %[[HELD]] offsets [0, 0, 8] {{.*}} -> tensor<1x1x4xf32>
// CHECK-NEXT: %[[K:.*]] = rdu.slice %[[HELD]] offsets [0, 0, 4] {{.*}} -> tensor<1x1x4xf32>
// CHECK-NEXT: %[[Q:.*]] = rdu.slice %[[HELD]] offsets [0, 0, 0] {{.*}} -> tensor<1x1x4xf32>
// CHECK-NEXT: %[[QW:.*]] = rdu.all_gather %[[Q]] dim 2 group 2 {{.*}} -> tensor<1x1x8xf32>
// CHECK-NEXT: %[[ONE:.*]] = rdu.concat %[[QW]], %[[K]], %[[V]] dim 2 {{.*}} -> tensor<1x1x16xf32>
// CHECK-NEXT: %[[RUNS:.*]] = rdu.all_gather %[[ONE]] dim 1 group 2 stride 2 {{.*}} -> tensor<1x2x16xf32>
// CHECK-NEXT: %[[WHOLE:.*]] = rdu.reshape %[[RUNS]] {{.*}} -> tensor<1x32xf32>
// CHECK-NEXT: %grouped = rdu.reshape %qkv {{.*}} : tensor<1x12xf32> -> tensor<1x3x4xf32>
// CHECK-NEXT: %qh = rdu.slice %grouped offsets [0, 0, 0] {{.*}} -> tensor<1x1x4xf32>
// CHECK-NEXT: %kh = rdu.slice %grouped offsets [0, 1, 0] {{.*}} -> tensor<1x1x4xf32>
// CHECK-NEXT: %vh = rdu.slice %grouped offsets [0, 2, 0] {{.*}} -> tensor<1x1x4xf32>
// CHECK-NOT:  rdu.all_gather
// CHECK:      %attended = rdu.matmul %scores, %values {{.*}} : tensor<1x1x7xf32>, tensor<1x7x4xf32> -> tensor<1x1x4xf32>
// CHECK:      %out = rdu.matmul %flat, %wo transpose_rhs {{.*}} : tensor<1x4xf32>, tensor<16x4xf32> -> tensor<1x16xf32>
// CHECK-NEXT: %{{.*}} = rdu.all_reduce %out group 4
// CHECK-NOT:  rdu.all_gather
// CHECK:      %both = rdu.concat %[[WHOLE]], %x dim 1

// TP2:      tier.global @qkv : tensor<16x16xf32> {kind = "parameter", rdu.shard = #rdu.split<(0, 2, 1)>}
// TP2:      rdu.result_shards = [#rdu.split<>, #rdu.split<(0, 2, 1)>, #rdu.split<>]
// TP2:      %qkv = rdu.matmul {{.*}} -> tensor<1x16xf32>
// TP2-NEXT: rdu.all_gather %qkv dim 1 group 2 {{.*}} -> tensor<1x32xf32>
// TP2-NOT:  rdu.all_gather

// BAD: error: tp=8 does not divide the heads: the 16 input rows of weight @o arrive with dim 1 split 4 ways (rank / 2), not split 8 ways
