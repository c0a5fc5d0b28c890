// rdu-partition (tp) with more ranks than grouped-query KV heads, through the
// backward: 2 KV heads repeated for 4 query heads (broadcast and reshape), tp=4,
// a KV head held by a rank pair (the k weight split (0, 2, 2)). The backward sums
// each KV head's gradient over its repeated heads, split within the pair: a partial
// sum over the pair (`GroupPartial`), carried through the reshape, transpose and
// matmuls linear in it. The k weight's gradient is all-reduced over the pairs
// (replica groups [0, 1], [2, 3]) split as the weight is; the input gradient through
// k contracts the KV heads too, a partial sum over every rank, all-reduced once.
// Nothing is all-gathered: neither the gradient nor the k weight (the step returns
// the summed gradient split as the weight, joined by the caller).
// RUN: rducc-opt --check-roundtrip -p 'rdu-partition{tp=4}' %s | filecheck %s
//
// Diagnostic: tp=3 divides neither the heads nor the hidden size.
// RUN: not rducc-opt -p 'rdu-partition{tp=3}' %s 2>&1 | filecheck %s --check-prefix=ERR

builtin.module attributes {rdu.level = #rdu<level graph>, rdu.target = "sn40l-8"} {
  tier.global @q : tensor<16x16xf32> {kind = "parameter"}
  tier.global @k : tensor<8x16xf32> {kind = "parameter"}
  func.func @forward(%x: tensor<4x16xf32> {rdu.input = "x"}, %wq: tensor<16x16xf32> {rdu.global = @q}, %wk: tensor<8x16xf32> {rdu.global = @k}) -> (tensor<4x16xf32>, tensor<8x16xf32>) {
    %q = rdu.matmul %x, %wq transpose_rhs {rdu.layer = "layers.0", rdu.phase = #rdu<phase forward>} : tensor<4x16xf32>, tensor<16x16xf32> -> tensor<4x16xf32>
    %qh = rdu.reshape %q {rdu.layer = "layers.0", rdu.phase = #rdu<phase forward>} : tensor<4x16xf32> -> tensor<4x4x4xf32>
    %k = rdu.matmul %x, %wk transpose_rhs {rdu.layer = "layers.0", rdu.phase = #rdu<phase forward>} : tensor<4x16xf32>, tensor<8x16xf32> -> tensor<4x8xf32>
    %kh = rdu.reshape %k {rdu.layer = "layers.0", rdu.phase = #rdu<phase forward>} : tensor<4x8xf32> -> tensor<4x2x1x4xf32>
    %kb = rdu.broadcast %kh {rdu.layer = "layers.0", rdu.phase = #rdu<phase forward>} : tensor<4x2x1x4xf32> -> tensor<4x2x2x4xf32>
    %kr = rdu.reshape %kb {rdu.layer = "layers.0", rdu.phase = #rdu<phase forward>} : tensor<4x2x2x4xf32> -> tensor<4x4x4xf32>
    %gk = rdu.map %qh, %kr {rdu.layer = "layers.0", rdu.phase = #rdu<phase backward>} : (tensor<4x4x4xf32>, tensor<4x4x4xf32>) -> tensor<4x4x4xf32> {
    ^bb0(%a: f32, %b: f32):
      %m = arith.mulf %a, %b : f32
      rdu.yield %m : f32
    }
    %g5 = rdu.reshape %gk {rdu.layer = "layers.0", rdu.phase = #rdu<phase backward>} : tensor<4x4x4xf32> -> tensor<4x2x2x4xf32>
    %gs = rdu.reduce sum %g5 dims [2] keepdim {rdu.layer = "layers.0", rdu.phase = #rdu<phase backward>} : tensor<4x2x2x4xf32> -> tensor<4x2x1x4xf32>
    %g2 = rdu.reshape %gs {rdu.layer = "layers.0", rdu.phase = #rdu<phase backward>} : tensor<4x2x1x4xf32> -> tensor<4x8xf32>
    %gt = rdu.transpose %g2 perm [1, 0] {rdu.layer = "layers.0", rdu.phase = #rdu<phase backward>} : tensor<4x8xf32> -> tensor<8x4xf32>
    %dwk = rdu.matmul %gt, %x {rdu.layer = "layers.0", rdu.phase = #rdu<phase backward>} : tensor<8x4xf32>, tensor<4x16xf32> -> tensor<8x16xf32>
    %dxk = rdu.matmul %g2, %wk {rdu.layer = "layers.0", rdu.phase = #rdu<phase backward>} : tensor<4x8xf32>, tensor<8x16xf32> -> tensor<4x16xf32>
    func.return %dxk, %dwk : tensor<4x16xf32>, tensor<8x16xf32>
  }
}

// CHECK:      tier.global @q : tensor<4x16xf32> {kind = "parameter", rdu.shard = #rdu.split<(0, 4, 1)>}
// CHECK-NEXT: tier.global @k : tensor<4x16xf32> {kind = "parameter", rdu.shard = #rdu.split<(0, 2, 2)>}
// CHECK-NOT:  rdu.all_gather
// CHECK:      %gs = rdu.reduce sum %g5 dims [2] keepdim {{.*}} : tensor<4x1x1x4xf32> -> tensor<4x1x1x4xf32>
// CHECK:      %dwk = rdu.matmul %gt, %x {{.*}} : tensor<4x4xf32>, tensor<4x16xf32> -> tensor<4x16xf32>
// CHECK-NEXT: %[[DW:.*]] = rdu.all_reduce %dwk group 2 groups <[0, 1], [2, 3]> {{.*}} : tensor<4x16xf32> -> tensor<4x16xf32>
// CHECK-NEXT: %dxk = rdu.matmul %g2, %wk {{.*}} : tensor<4x4xf32>, tensor<4x16xf32> -> tensor<4x16xf32>
// CHECK-NEXT: %[[DX:.*]] = rdu.all_reduce %dxk group 4 {{.*}} : tensor<4x16xf32> -> tensor<4x16xf32>
// CHECK-NOT:  rdu.all_gather
// CHECK:      func.return %[[DX]], %[[DW]] : tensor<4x16xf32>, tensor<4x16xf32>

// ERR: tp=3 does not divide the 16 output columns of weight @q
