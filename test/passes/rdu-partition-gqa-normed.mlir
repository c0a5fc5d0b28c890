// Grouped-query attention with more ranks than KV heads (2 KV heads, 4 query
// heads, tp=4), where the k projection reaches its reshape into heads through
// five maps of its shape (a norm over the whole projection before the heads,
// Olmo2's k_norm: cast, square, scale, cast back, weight). The look-ahead from
// the projection to its heads passes them (`LOOK_AHEAD`), so k splits by KV
// heads over a pair of ranks, as without the maps (rdu-partition-gqa.mlir).
// RUN: rducc-opt --check-roundtrip -p 'rdu-partition{tp=4}' %s | filecheck %s
//
// Diagnostics: 8 ranks, 4 query heads: o_proj's rows cannot split 8 ways.
// RUN: not rducc-opt -p 'rdu-partition{tp=8}' %s 2>&1 | filecheck %s --check-prefix=ERR-8

builtin.module attributes {rdu.level = #rdu<level graph>, rdu.target = "sn40l-8"} {
  tier.global @q : tensor<16x16xf32> {kind = "parameter"}
  tier.global @k : tensor<8x16xf32> {kind = "parameter"}
  tier.global @v : tensor<8x16xf32> {kind = "parameter"}
  tier.global @o : tensor<16x16xf32> {kind = "parameter"}
  func.func @forward(%x: tensor<1x16xf32> {rdu.input = "x"}, %kc: tensor<2x6x4xf32> {rdu.input = "k_cache"}, %vc: tensor<2x6x4xf32> {rdu.input = "v_cache"}, %wq: tensor<16x16xf32> {rdu.global = @q}, %wk: tensor<8x16xf32> {rdu.global = @k}, %wv: tensor<8x16xf32> {rdu.global = @v}, %wo: tensor<16x16xf32> {rdu.global = @o}) -> (tensor<1x16xf32>, tensor<2x1x4xf32>) {
    %q = rdu.matmul %x, %wq transpose_rhs {rdu.layer = "layers.0"} : tensor<1x16xf32>, tensor<16x16xf32> -> tensor<1x16xf32>
    %qh = rdu.reshape %q {rdu.layer = "layers.0"} : tensor<1x16xf32> -> tensor<2x2x4xf32>
    %k = rdu.matmul %x, %wk transpose_rhs {rdu.layer = "layers.0"} : tensor<1x16xf32>, tensor<8x16xf32> -> tensor<1x8xf32>
    %k0 = rdu.map %k {rdu.layer = "layers.0"} : (tensor<1x8xf32>) -> tensor<1x8xf32> {
    ^bb0(%a: f32):
      %b = arith.mulf %a, %a : f32
      rdu.yield %b : f32
    }
    %k1 = rdu.map %k0 {rdu.layer = "layers.0"} : (tensor<1x8xf32>) -> tensor<1x8xf32> {
    ^bb0(%a: f32):
      %b = arith.addf %a, %a : f32
      rdu.yield %b : f32
    }
    %k2 = rdu.map %k1 {rdu.layer = "layers.0"} : (tensor<1x8xf32>) -> tensor<1x8xf32> {
    ^bb0(%a: f32):
      %b = arith.mulf %a, %a : f32
      rdu.yield %b : f32
    }
    %k3 = rdu.map %k2 {rdu.layer = "layers.0"} : (tensor<1x8xf32>) -> tensor<1x8xf32> {
    ^bb0(%a: f32):
      %b = arith.addf %a, %a : f32
      rdu.yield %b : f32
    }
    %k4 = rdu.map %k3 {rdu.layer = "layers.0"} : (tensor<1x8xf32>) -> tensor<1x8xf32> {
    ^bb0(%a: f32):
      %b = arith.mulf %a, %a : f32
      rdu.yield %b : f32
    }
    %kh = rdu.reshape %k4 {rdu.layer = "layers.0"} : tensor<1x8xf32> -> tensor<2x1x4xf32>
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
// CHECK:      %k4 = rdu.map %k3 {{.*}} : (tensor<1x4xf32>) -> tensor<1x4xf32>
// CHECK:      %kh = rdu.reshape %k4 {{.*}} : tensor<1x4xf32> -> tensor<1x1x4xf32>
// CHECK:      %{{.*}} = rdu.all_reduce %out group 4
// CHECK-NOT:  rdu.all_gather

// ERR-8: error: tp=8 does not divide the heads
