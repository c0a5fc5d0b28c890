// rdu-partition (tp) through the backward of a fused q/k/v projection stored [in, out]
// (transformers' Conv1D: GPT-2's `c_attn`, sliced into q, k and v by `split`): the
// weight splits by column blocks, each block by heads (`(1, 2, 1, 16)`), and the
// gradients of q, k and v, each split by heads, are joined by `rdu.concat` into the
// projection's gradient split the same way (each rank joins its parts: a block a
// value, `_blocks_joined`). The weight's gradient (x^T g), the bias's (a sum over the
// rows) and the input's (g W^T: summed over the split blocks, a partial sum) take it
// as it is: nothing is all-gathered (before: q's, k's and v's gradients, then the
// weight and the bias for the update). A weight left whole on every rank (a gain
// scaling the whole input gradient) is marked with the op that first reads it whole,
// past its reshape (`rdu.whole_reader`, for the report).
// RUN: rducc-opt --check-roundtrip -p 'rdu-partition{tp=2}' %s | filecheck %s
//
// Diagnostic: tp=3 divides none of the weight's blocks or heads.
// RUN: not rducc-opt -p 'rdu-partition{tp=3}' %s 2>&1 | filecheck %s --check-prefix=ERR

// CHECK:      tier.global @w : tensor<16x24xf32> {kind = "parameter", rdu.shard = #rdu.split<(1, 2, 1, 16)>}
// CHECK-NEXT: tier.global @b : tensor<24xf32> {kind = "parameter", rdu.shard = #rdu.split<(0, 2, 1, 16)>}
// CHECK-NEXT: tier.global @gain : tensor<16xf32> {kind = "parameter", rdu.whole_reader = ["rdu.map", ""]}
// CHECK-NEXT: func.func @forward(
// CHECK-SAME: attributes {rdu.result_shards = [#rdu.split<(1, 2, 1, 16)>, #rdu.split<(0, 2, 1, 16)>, #rdu.split<>]}
// CHECK-NOT:  rdu.all_gather
// CHECK:      %g = rdu.concat %gq2, %gk2, %gv2 dim 1 {{.*}} : (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x24xf32>
// CHECK:      %dw = rdu.matmul %xt, %g {{.*}} : tensor<16x4xf32>, tensor<4x24xf32> -> tensor<16x24xf32>
// CHECK-NEXT: %db = rdu.reduce sum %g dims [0] {{.*}} : tensor<4x24xf32> -> tensor<24xf32>
// CHECK-NEXT: %dx = rdu.matmul %g, %w transpose_rhs {{.*}} : tensor<4x24xf32>, tensor<16x24xf32> -> tensor<4x16xf32>
// CHECK-NEXT: %[[DX:.*]] = rdu.all_reduce %dx group 2
// CHECK-NOT:  rdu.all_gather
// CHECK:      %dxg = rdu.map %[[DX]], %gt
// CHECK:      func.return %dw, %db, %dxg

// ERR: tp=3 splits nothing in this model

builtin.module attributes {rdu.level = #rdu<level graph>, rdu.target = "sn40l-8"} {
  tier.global @w : tensor<16x48xf32> {kind = "parameter"}
  tier.global @b : tensor<48xf32> {kind = "parameter"}
  tier.global @gain : tensor<16xf32> {kind = "parameter"}
  func.func @forward(%x: tensor<4x16xf32> {rdu.input = "x"}, %w: tensor<16x48xf32> {rdu.global = @w}, %bias: tensor<48xf32> {rdu.global = @b}, %gain: tensor<16xf32> {rdu.global = @gain}) -> (tensor<16x48xf32>, tensor<48xf32>, tensor<4x16xf32>) {
    %qkv0 = rdu.matmul %x, %w {rdu.phase = #rdu<phase forward>} : tensor<4x16xf32>, tensor<16x48xf32> -> tensor<4x48xf32>
    %qkv = rdu.map %qkv0, %bias {rdu.phase = #rdu<phase forward>} : (tensor<4x48xf32>, tensor<48xf32>) -> tensor<4x48xf32> {
    ^bb0(%a: f32, %c: f32):
      %s = arith.addf %a, %c : f32
      rdu.yield %s : f32
    }
    %q = rdu.slice %qkv offsets [0, 0] strides [1, 1] {rdu.phase = #rdu<phase forward>} : tensor<4x48xf32> -> tensor<4x16xf32>
    %k = rdu.slice %qkv offsets [0, 16] strides [1, 1] {rdu.phase = #rdu<phase forward>} : tensor<4x48xf32> -> tensor<4x16xf32>
    %v = rdu.slice %qkv offsets [0, 32] strides [1, 1] {rdu.phase = #rdu<phase forward>} : tensor<4x48xf32> -> tensor<4x16xf32>
    %qh = rdu.reshape %q {rdu.phase = #rdu<phase forward>} : tensor<4x16xf32> -> tensor<4x2x8xf32>
    %kh = rdu.reshape %k {rdu.phase = #rdu<phase forward>} : tensor<4x16xf32> -> tensor<4x2x8xf32>
    %vh = rdu.reshape %v {rdu.phase = #rdu<phase forward>} : tensor<4x16xf32> -> tensor<4x2x8xf32>
    %qt = rdu.transpose %qh perm [1, 0, 2] {rdu.phase = #rdu<phase forward>} : tensor<4x2x8xf32> -> tensor<2x4x8xf32>
    %kt = rdu.transpose %kh perm [1, 0, 2] {rdu.phase = #rdu<phase forward>} : tensor<4x2x8xf32> -> tensor<2x4x8xf32>
    %vt = rdu.transpose %vh perm [1, 0, 2] {rdu.phase = #rdu<phase forward>} : tensor<4x2x8xf32> -> tensor<2x4x8xf32>
    %s = rdu.matmul %qt, %kt transpose_rhs {rdu.phase = #rdu<phase forward>} : tensor<2x4x8xf32>, tensor<2x4x8xf32> -> tensor<2x4x4xf32>
    %gq = rdu.matmul %s, %kt {rdu.phase = #rdu<phase backward>} : tensor<2x4x4xf32>, tensor<2x4x8xf32> -> tensor<2x4x8xf32>
    %gk = rdu.matmul %s, %qt {rdu.phase = #rdu<phase backward>} : tensor<2x4x4xf32>, tensor<2x4x8xf32> -> tensor<2x4x8xf32>
    %gv = rdu.matmul %s, %vt {rdu.phase = #rdu<phase backward>} : tensor<2x4x4xf32>, tensor<2x4x8xf32> -> tensor<2x4x8xf32>
    %gqt = rdu.transpose %gq perm [1, 0, 2] {rdu.phase = #rdu<phase backward>} : tensor<2x4x8xf32> -> tensor<4x2x8xf32>
    %gkt = rdu.transpose %gk perm [1, 0, 2] {rdu.phase = #rdu<phase backward>} : tensor<2x4x8xf32> -> tensor<4x2x8xf32>
    %gvt = rdu.transpose %gv perm [1, 0, 2] {rdu.phase = #rdu<phase backward>} : tensor<2x4x8xf32> -> tensor<4x2x8xf32>
    %gq2 = rdu.reshape %gqt {rdu.phase = #rdu<phase backward>} : tensor<4x2x8xf32> -> tensor<4x16xf32>
    %gk2 = rdu.reshape %gkt {rdu.phase = #rdu<phase backward>} : tensor<4x2x8xf32> -> tensor<4x16xf32>
    %gv2 = rdu.reshape %gvt {rdu.phase = #rdu<phase backward>} : tensor<4x2x8xf32> -> tensor<4x16xf32>
    %g = rdu.concat %gq2, %gk2, %gv2 dim 1 {rdu.phase = #rdu<phase backward>} : (tensor<4x16xf32>, tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x48xf32>
    %xt = rdu.transpose %x perm [1, 0] {rdu.phase = #rdu<phase backward>} : tensor<4x16xf32> -> tensor<16x4xf32>
    %dw = rdu.matmul %xt, %g {rdu.phase = #rdu<phase backward>} : tensor<16x4xf32>, tensor<4x48xf32> -> tensor<16x48xf32>
    %db = rdu.reduce sum %g dims [0] {rdu.phase = #rdu<phase backward>} : tensor<4x48xf32> -> tensor<48xf32>
    %dx = rdu.matmul %g, %w transpose_rhs {rdu.phase = #rdu<phase backward>} : tensor<4x48xf32>, tensor<16x48xf32> -> tensor<4x16xf32>
    %gt = rdu.reshape %gain {rdu.phase = #rdu<phase backward>} : tensor<16xf32> -> tensor<1x16xf32>
    %dxg = rdu.map %dx, %gt {rdu.phase = #rdu<phase backward>} : (tensor<4x16xf32>, tensor<1x16xf32>) -> tensor<4x16xf32> {
    ^bb0(%a: f32, %c: f32):
      %m = arith.mulf %a, %c : f32
      rdu.yield %m : f32
    }
    func.return %dw, %db, %dxg : tensor<16x48xf32>, tensor<48xf32>, tensor<4x16xf32>
  }
}
