// GPTBigCode's multi-query attention: one fused q/k/v projection (`c_attn`) of
// 6 query heads of 4 features, then ONE k head and ONE v head, sliced apart.
// At tp=2 the fused weight splits per block: q's block by heads, the single
// k and v blocks held whole on every rank (`[24, -4, -4]`): no all-gather of
// c_attn's output, one all-reduce after the output projection.
// RUN: rducc-opt --check-roundtrip -p 'rdu-partition{tp=2}' %s | filecheck %s
//
// tp=4 does not divide the 6 query heads: the fused projection is not split
// per block and its output is gathered whole before it is sliced.
// RUN: rducc-opt -p 'rdu-partition{tp=4}' %s | filecheck %s --check-prefix=TP4

builtin.module attributes {rdu.level = #rdu<level graph>, rdu.target = "sn40l-8"} {
  tier.global @c_attn : tensor<32x24xf32> {kind = "parameter"}
  tier.global @c_proj : tensor<24x24xf32> {kind = "parameter"}
  func.func @forward(%x: tensor<2x24xf32> {rdu.input = "x"}, %w: tensor<32x24xf32> {rdu.global = @c_attn}, %wo: tensor<24x24xf32> {rdu.global = @c_proj}) -> tensor<2x24xf32> {
    %qkv = rdu.matmul %x, %w transpose_rhs {rdu.layer = "layers.0"} : tensor<2x24xf32>, tensor<32x24xf32> -> tensor<2x32xf32>
    %q = rdu.slice %qkv offsets [0, 0] strides [1, 1] {rdu.layer = "layers.0"} : tensor<2x32xf32> -> tensor<2x24xf32>
    %k = rdu.slice %qkv offsets [0, 24] strides [1, 1] {rdu.layer = "layers.0"} : tensor<2x32xf32> -> tensor<2x4xf32>
    %v = rdu.slice %qkv offsets [0, 28] strides [1, 1] {rdu.layer = "layers.0"} : tensor<2x32xf32> -> tensor<2x4xf32>
    %qs = rdu.reshape %q {rdu.layer = "layers.0"} : tensor<2x24xf32> -> tensor<2x6x4xf32>
    %qh = rdu.transpose %qs perm [1, 0, 2] {rdu.layer = "layers.0"} : tensor<2x6x4xf32> -> tensor<6x2x4xf32>
    %ks = rdu.reshape %k {rdu.layer = "layers.0"} : tensor<2x4xf32> -> tensor<2x1x4xf32>
    %kh = rdu.transpose %ks perm [1, 0, 2] {rdu.layer = "layers.0"} : tensor<2x1x4xf32> -> tensor<1x2x4xf32>
    %kr = rdu.broadcast %kh {rdu.layer = "layers.0"} : tensor<1x2x4xf32> -> tensor<6x2x4xf32>
    %vs = rdu.reshape %v {rdu.layer = "layers.0"} : tensor<2x4xf32> -> tensor<2x1x4xf32>
    %vh = rdu.transpose %vs perm [1, 0, 2] {rdu.layer = "layers.0"} : tensor<2x1x4xf32> -> tensor<1x2x4xf32>
    %vr = rdu.broadcast %vh {rdu.layer = "layers.0"} : tensor<1x2x4xf32> -> tensor<6x2x4xf32>
    %scores = rdu.matmul %qh, %kr transpose_rhs {rdu.layer = "layers.0"} : tensor<6x2x4xf32>, tensor<6x2x4xf32> -> tensor<6x2x2xf32>
    %attended = rdu.matmul %scores, %vr {rdu.layer = "layers.0"} : tensor<6x2x2xf32>, tensor<6x2x4xf32> -> tensor<6x2x4xf32>
    %back = rdu.transpose %attended perm [1, 0, 2] {rdu.layer = "layers.0"} : tensor<6x2x4xf32> -> tensor<2x6x4xf32>
    %flat = rdu.reshape %back {rdu.layer = "layers.0"} : tensor<2x6x4xf32> -> tensor<2x24xf32>
    %out = rdu.matmul %flat, %wo transpose_rhs {rdu.layer = "layers.0"} : tensor<2x24xf32>, tensor<24x24xf32> -> tensor<2x24xf32>
    func.return %out : tensor<2x24xf32>
  }
}

// CHECK:      tier.global @c_attn : tensor<20x24xf32> {kind = "parameter", rdu.shard = #rdu.split<(0, 2, 1, [24, -4, -4])>}
// CHECK-NEXT: tier.global @c_proj : tensor<24x12xf32> {kind = "parameter", rdu.shard = #rdu.split<(1, 2, 1)>}
// CHECK-NOT:  rdu.all_gather
// CHECK:      %qkv = rdu.matmul {{.*}} -> tensor<2x20xf32>
// CHECK-NEXT: %q = rdu.slice %qkv offsets [0, 0] {{.*}} -> tensor<2x12xf32>
// CHECK-NEXT: %k = rdu.slice %qkv offsets [0, 12] {{.*}} -> tensor<2x4xf32>
// CHECK-NEXT: %v = rdu.slice %qkv offsets [0, 16] {{.*}} -> tensor<2x4xf32>
// CHECK:      %kr = rdu.broadcast %kh {{.*}} : tensor<1x2x4xf32> -> tensor<3x2x4xf32>
// CHECK:      %out = rdu.matmul %flat, %wo transpose_rhs {{.*}} : tensor<2x12xf32>, tensor<24x12xf32> -> tensor<2x24xf32>
// CHECK-NEXT: rdu.all_reduce %out group 2
// CHECK-NOT:  rdu.all_gather

// TP4:      tier.global @c_attn : tensor<8x24xf32> {kind = "parameter", rdu.shard = #rdu.split<(0, 4, 1)>}
// TP4:      %qkv = rdu.matmul {{.*}} -> tensor<2x8xf32>
// TP4-NEXT: %[[WHOLE:.*]] = rdu.all_gather %qkv dim 1 group 4 {{.*}} -> tensor<2x32xf32>
// TP4-NEXT: %q = rdu.slice %[[WHOLE]] offsets [0, 0]
