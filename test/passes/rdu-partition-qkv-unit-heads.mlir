// q, k and v fused in one weight, whose result is viewed as heads with a unit
// dim after them, [1, 8, 1, 4] (`view(1, heads + 2 kv, 1, dim)`), and sliced
// along the heads (`narrow`): 4 query heads and 2 KV heads of 4 features. The
// blocks are found through that reshape (its major dim is the heads one, a
// head 4 columns), so at tp=2 the weight splits per block, q's 16 columns and
// k's and v's 8 each 2 ways, as separate weights would: nothing is gathered.
// RUN: rducc-opt --check-roundtrip -p 'rdu-partition{tp=2}' %s | filecheck %s
// tp=8: the 4 query heads cannot split 8 ways: the weight splits in one piece
// and its result is gathered.
// RUN: rducc-opt -p 'rdu-partition{tp=8}' %s | filecheck %s --check-prefix=TP8

builtin.module attributes {rdu.level = #rdu<level graph>, rdu.target = "sn40l-8"} {
  tier.global @qkv : tensor<32x16xf32> {kind = "parameter"}
  tier.global @o : tensor<16x16xf32> {kind = "parameter"}
  func.func @forward(%x: tensor<1x16xf32> {rdu.input = "x"}, %w: tensor<32x16xf32> {rdu.global = @qkv}, %wo: tensor<16x16xf32> {rdu.global = @o}) -> tensor<1x16xf32> {
    %qkv = rdu.matmul %x, %w transpose_rhs {rdu.layer = "layers.0"} : tensor<1x16xf32>, tensor<32x16xf32> -> tensor<1x32xf32>
    %heads = rdu.reshape %qkv {rdu.layer = "layers.0"} : tensor<1x32xf32> -> tensor<1x8x1x4xf32>
    %q = rdu.slice %heads offsets [0, 0, 0, 0] strides [1, 1, 1, 1] {rdu.layer = "layers.0"} : tensor<1x8x1x4xf32> -> tensor<1x4x1x4xf32>
    %k = rdu.slice %heads offsets [0, 4, 0, 0] strides [1, 1, 1, 1] {rdu.layer = "layers.0"} : tensor<1x8x1x4xf32> -> tensor<1x2x1x4xf32>
    %v = rdu.slice %heads offsets [0, 6, 0, 0] strides [1, 1, 1, 1] {rdu.layer = "layers.0"} : tensor<1x8x1x4xf32> -> tensor<1x2x1x4xf32>
    %qh = rdu.reshape %q {rdu.layer = "layers.0"} : tensor<1x4x1x4xf32> -> tensor<2x2x4xf32>
    %kh = rdu.reshape %k {rdu.layer = "layers.0"} : tensor<1x2x1x4xf32> -> tensor<2x1x4xf32>
    %vh = rdu.reshape %v {rdu.layer = "layers.0"} : tensor<1x2x1x4xf32> -> tensor<2x1x4xf32>
    %scores = rdu.matmul %qh, %kh transpose_rhs {rdu.layer = "layers.0"} : tensor<2x2x4xf32>, tensor<2x1x4xf32> -> tensor<2x2x1xf32>
    %attended = rdu.matmul %scores, %vh {rdu.layer = "layers.0"} : tensor<2x2x1xf32>, tensor<2x1x4xf32> -> tensor<2x2x4xf32>
    %flat = rdu.reshape %attended {rdu.layer = "layers.0"} : tensor<2x2x4xf32> -> tensor<1x16xf32>
    %out = rdu.matmul %flat, %wo transpose_rhs {rdu.layer = "layers.0"} : tensor<1x16xf32>, tensor<16x16xf32> -> tensor<1x16xf32>
    func.return %out : tensor<1x16xf32>
  }
}

// CHECK:      tier.global @qkv : tensor<16x16xf32> {kind = "parameter", rdu.shard = #rdu.split<(0, 2, 1, [16, 8, 8])>}
// CHECK-NEXT: tier.global @o : tensor<16x8xf32> {kind = "parameter", rdu.shard = #rdu.split<(1, 2, 1)>}
// CHECK-NOT:  rdu.all_gather
// CHECK:      %heads = rdu.reshape %qkv {{.*}} : tensor<1x16xf32> -> tensor<1x4x1x4xf32>
// CHECK:      %q = rdu.slice %heads offsets [0, 0, 0, 0] {{.*}} -> tensor<1x2x1x4xf32>
// CHECK-NEXT: %k = rdu.slice %heads offsets [0, 2, 0, 0] {{.*}} -> tensor<1x1x1x4xf32>
// CHECK-NEXT: %v = rdu.slice %heads offsets [0, 3, 0, 0] {{.*}} -> tensor<1x1x1x4xf32>
// CHECK:      %out = rdu.matmul %flat, %wo transpose_rhs {{.*}} : tensor<1x8xf32>, tensor<16x8xf32> -> tensor<1x16xf32>
// CHECK-NEXT: %{{.*}} = rdu.all_reduce %out group 2
// CHECK-NOT:  rdu.all_gather

// TP8:      tier.global @qkv : tensor<4x16xf32> {kind = "parameter", rdu.shard = #rdu.split<(0, 8, 1)>}
// TP8:      %heads = rdu.reshape %qkv {{.*}} : tensor<1x4xf32> -> tensor<1x1x1x4xf32>
// TP8-NEXT: rdu.all_gather %heads dim 1 group 8 {{.*}} -> tensor<1x8x1x4xf32>
