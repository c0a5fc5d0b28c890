// A head split through reshapes that drop and add unit dims: the query heads
// (8 of 8 features, batch 2) are split 2 ways by q's columns, reshaped to
// batch x heads with a unit token dim ([16, 1, 8]: the heads of each batch row
// split, in every 8), and back to [2, 64] in ONE reshape (rdu-canonicalize
// composes the attention's view, unit-dim transpose and view into it). The
// split lands on the innermost result dim in whole heads (rank r holds heads
// 4r..4r+3 of each row): no gather, o_proj's rows split 2 ways.
// RUN: rducc-opt --check-roundtrip -p 'rdu-partition{tp=2}' %s | filecheck %s
//
// tp=16 cannot keep whole heads (8 heads): an error at the layer's op.
// RUN: not rducc-opt -p 'rdu-partition{tp=16}' %s 2>&1 | filecheck %s --check-prefix=ERR-16

builtin.module attributes {rdu.level = #rdu<level graph>, rdu.target = "sn40l-16"} {
  tier.global @q : tensor<64x64xf32> {kind = "parameter"}
  tier.global @o : tensor<64x64xf32> {kind = "parameter"}
  func.func @forward(%x: tensor<2x64xf32> {rdu.input = "x"}, %wq: tensor<64x64xf32> {rdu.global = @q}, %wo: tensor<64x64xf32> {rdu.global = @o}) -> tensor<2x64xf32> {
    %q = rdu.matmul %x, %wq transpose_rhs {rdu.layer = "layers.0"} : tensor<2x64xf32>, tensor<64x64xf32> -> tensor<2x64xf32>
    %heads = rdu.reshape %q {rdu.layer = "layers.0"} : tensor<2x64xf32> -> tensor<16x1x8xf32>
    %scaled = rdu.map %heads, %heads {rdu.layer = "layers.0"} : (tensor<16x1x8xf32>, tensor<16x1x8xf32>) -> tensor<16x1x8xf32> {
    ^bb0(%a: f32, %b: f32):
      %p = arith.mulf %a, %b : f32
      rdu.yield %p : f32
    }
    %flat = rdu.reshape %scaled {rdu.layer = "layers.0"} : tensor<16x1x8xf32> -> tensor<2x64xf32>
    %out = rdu.matmul %flat, %wo transpose_rhs {rdu.layer = "layers.0"} : tensor<2x64xf32>, tensor<64x64xf32> -> tensor<2x64xf32>
    func.return %out : tensor<2x64xf32>
  }
}

// CHECK:      tier.global @q : tensor<32x64xf32> {kind = "parameter", rdu.shard = #rdu.split<(0, 2, 1)>}
// CHECK-NEXT: tier.global @o : tensor<64x32xf32> {kind = "parameter", rdu.shard = #rdu.split<(1, 2, 1)>}
// CHECK-NOT:  rdu.all_gather
// CHECK:      %heads = rdu.reshape %q {{.*}} : tensor<2x32xf32> -> tensor<8x1x8xf32>
// CHECK:      %flat = rdu.reshape %scaled {{.*}} : tensor<8x1x8xf32> -> tensor<2x32xf32>
// CHECK-NEXT: %out = rdu.matmul %flat, %wo transpose_rhs {{.*}} : tensor<2x32xf32>, tensor<64x32xf32> -> tensor<2x64xf32>
// CHECK-NEXT: rdu.all_reduce %out group 2
// CHECK-NOT:  rdu.all_gather

// ERR-16: error: tp=16 does not divide the heads
