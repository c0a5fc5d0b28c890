// rdu-partition (tp) with more ranks than KV heads tiled, not interleaved, through the
// backward: 2 KV heads tiled for 4 query heads (`k.repeat(1, 2, 1)`: a broadcast of a new
// dim before the KV heads, query head h reads KV head h % 2), tp=4. The k weight's rows
// split over the minor factor (`(0, 2, 1)`: KV head r % 2 on rank r); the broadcast
// splits its copies over the major factor with that factor as period, so the tiled heads
// are split every way. The backward sums each KV head's gradient over its copies (a
// reshape to [copies, KV heads] and a sum over the copies, split over the major factor
// with a period): a partial sum over the ranks 2 apart (`GroupPartial`), all-reduced over
// the groups [0, 2], [1, 3] where the update needs it, split as the weight is. Nothing is
// all-gathered (before: the gradient was gathered along the copies, and the k weight).
// RUN: rducc-opt --check-roundtrip -p 'rdu-partition{tp=4}' %s | filecheck %s
//
// Diagnostic: tp=3 divides neither the heads nor the hidden size.
// RUN: not rducc-opt -p 'rdu-partition{tp=3}' %s 2>&1 | filecheck %s --check-prefix=ERR

// CHECK: tier.global @k : tensor<4x16xf32> {kind = "parameter", rdu.shard = #rdu.split<(0, 2, 1)>}
// CHECK-NOT: rdu.all_gather
// CHECK: %kb = rdu.broadcast %kh {{.*}} : tensor<4x1x1x4xf32> -> tensor<4x1x1x4xf32>
// CHECK-NOT: rdu.all_gather
// CHECK: %gs = rdu.reduce sum %g5 dims [1] keepdim {{.*}} : tensor<4x1x1x4xf32> -> tensor<4x1x1x4xf32>
// CHECK-NOT: rdu.all_gather
// CHECK: rdu.all_reduce {{.*}} group 2 groups <{{\[}}0, 2], [1, 3]>
// CHECK-NOT: rdu.all_gather

// ERR: tp=3 does not divide the 16 output columns of weight @q

builtin.module attributes {rdu.level = #rdu<level graph>, rdu.target = "sn40l-8"} {
  tier.global @q : tensor<16x16xf32> {kind = "parameter"}
  tier.global @k : tensor<8x16xf32> {kind = "parameter"}
  func.func @forward(%x: tensor<4x16xf32> {rdu.input = "x"}, %wq: tensor<16x16xf32> {rdu.global = @q}, %wk: tensor<8x16xf32> {rdu.global = @k}) -> (tensor<4x16xf32>, tensor<8x16xf32>) {
    %q = rdu.matmul %x, %wq transpose_rhs {rdu.layer = "layers.0", rdu.phase = #rdu<phase forward>} : tensor<4x16xf32>, tensor<16x16xf32> -> tensor<4x16xf32>
    %qh = rdu.reshape %q {rdu.layer = "layers.0", rdu.phase = #rdu<phase forward>} : tensor<4x16xf32> -> tensor<4x4x4xf32>
    %k = rdu.matmul %x, %wk transpose_rhs {rdu.layer = "layers.0", rdu.phase = #rdu<phase forward>} : tensor<4x16xf32>, tensor<8x16xf32> -> tensor<4x8xf32>
    %kh = rdu.reshape %k {rdu.layer = "layers.0", rdu.phase = #rdu<phase forward>} : tensor<4x8xf32> -> tensor<4x1x2x4xf32>
    %kb = rdu.broadcast %kh {rdu.layer = "layers.0", rdu.phase = #rdu<phase forward>} : tensor<4x1x2x4xf32> -> tensor<4x2x2x4xf32>
    %kr = rdu.reshape %kb {rdu.layer = "layers.0", rdu.phase = #rdu<phase forward>} : tensor<4x2x2x4xf32> -> tensor<4x4x4xf32>
    %gk = rdu.map %qh, %kr {rdu.layer = "layers.0", rdu.phase = #rdu<phase backward>} : (tensor<4x4x4xf32>, tensor<4x4x4xf32>) -> tensor<4x4x4xf32> {
    ^bb0(%a: f32, %b: f32):
      %m = arith.mulf %a, %b : f32
      rdu.yield %m : f32
    }
    %g5 = rdu.reshape %gk {rdu.layer = "layers.0", rdu.phase = #rdu<phase backward>} : tensor<4x4x4xf32> -> tensor<4x2x2x4xf32>
    %gs = rdu.reduce sum %g5 dims [1] keepdim {rdu.layer = "layers.0", rdu.phase = #rdu<phase backward>} : tensor<4x2x2x4xf32> -> tensor<4x1x2x4xf32>
    %g2 = rdu.reshape %gs {rdu.layer = "layers.0", rdu.phase = #rdu<phase backward>} : tensor<4x1x2x4xf32> -> tensor<4x8xf32>
    %gt = rdu.transpose %g2 perm [1, 0] {rdu.layer = "layers.0", rdu.phase = #rdu<phase backward>} : tensor<4x8xf32> -> tensor<8x4xf32>
    %dwk = rdu.matmul %gt, %x {rdu.layer = "layers.0", rdu.phase = #rdu<phase backward>} : tensor<8x4xf32>, tensor<4x16xf32> -> tensor<8x16xf32>
    %dxk = rdu.matmul %g2, %wk {rdu.layer = "layers.0", rdu.phase = #rdu<phase backward>} : tensor<4x8xf32>, tensor<8x16xf32> -> tensor<4x16xf32>
    func.return %dxk, %dwk : tensor<4x16xf32>, tensor<8x16xf32>
  }
}
