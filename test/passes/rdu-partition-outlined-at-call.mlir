// rdu-partition (tp) partitions an outlined layer at its first call, taking a
// value its caller computes in the layout the caller holds it in: here the
// backward of two projections (k and v, outlined as one @layer_backward) reads
// gradients the caller made split by heads (by columns, as the forward split
// the weights), as a grouped-query attention's backward sums the gradient of
// its repeated heads over each group. The layer takes that gradient split
// (rdu.shard on %g), so neither it nor the weight it multiplies is gathered;
// partitioned before its caller, it took the gradient whole and both were
// all-gathered. A training step's layer returns its input gradient as a
// partial sum: the caller adds the two calls' sums before one all-reduce.
// RUN: rducc-opt --check-roundtrip -p 'rdu-partition{tp=2}' %s | filecheck %s
//
// Diagnostic: tp=3 divides no width of the model.
// RUN: not rducc-opt -p 'rdu-partition{tp=3}' %s 2>&1 | filecheck %s --check-prefix=ERR

builtin.module attributes {rdu.level = #rdu<level graph>, rdu.target = "sn40l-8"} {
  tier.global @k : tensor<8x16xf32> {kind = "parameter"}
  tier.global @v : tensor<8x16xf32> {kind = "parameter"}
  func.func @forward(%x: tensor<4x16xf32> {rdu.input = "x"}, %wk: tensor<8x16xf32> {rdu.global = @k}, %wv: tensor<8x16xf32> {rdu.global = @v}) -> (tensor<4x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>) {
    %k = rdu.matmul %x, %wk transpose_rhs {rdu.phase = #rdu<phase forward>} : tensor<4x16xf32>, tensor<8x16xf32> -> tensor<4x8xf32>
    %v = rdu.matmul %x, %wv transpose_rhs {rdu.phase = #rdu<phase forward>} : tensor<4x16xf32>, tensor<8x16xf32> -> tensor<4x8xf32>
    %gk = rdu.map %k, %v {rdu.phase = #rdu<phase backward>} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32> {
    ^bb0(%a: f32, %b: f32):
      %m = arith.mulf %a, %b : f32
      rdu.yield %m : f32
    }
    %gv = rdu.map %k {rdu.phase = #rdu<phase backward>} : (tensor<4x8xf32>) -> tensor<4x8xf32> {
    ^bb0(%a: f32):
      %m = arith.mulf %a, %a : f32
      rdu.yield %m : f32
    }
    %dwk, %dxk = func.call @layer_backward(%gk, %x, %wk) {rdu.layer = "backward.layers.0", rdu.phase = #rdu<phase backward>} : (tensor<4x8xf32>, tensor<4x16xf32>, tensor<8x16xf32>) -> (tensor<8x16xf32>, tensor<4x16xf32>)
    %dwv, %dxv = func.call @layer_backward(%gv, %x, %wv) {rdu.layer = "backward.layers.1", rdu.phase = #rdu<phase backward>} : (tensor<4x8xf32>, tensor<4x16xf32>, tensor<8x16xf32>) -> (tensor<8x16xf32>, tensor<4x16xf32>)
    %dx = rdu.map %dxk, %dxv {rdu.phase = #rdu<phase backward>} : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32> {
    ^bb0(%a: f32, %b: f32):
      %s = arith.addf %a, %b : f32
      rdu.yield %s : f32
    }
    func.return %dx, %dwk, %dwv : tensor<4x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>
  }
  func.func private @layer_backward(%g: tensor<4x8xf32> {rdu.input = "g"}, %in: tensor<4x16xf32> {rdu.input = "x"}, %w: tensor<8x16xf32> {rdu.weight}) -> (tensor<8x16xf32>, tensor<4x16xf32>) attributes {rdu.outlined_from = "backward.layers.0", rdu.calls = 2 : i64} {
    %gt = rdu.transpose %g perm [1, 0] {rdu.phase = #rdu<phase backward>} : tensor<4x8xf32> -> tensor<8x4xf32>
    %dw = rdu.matmul %gt, %in {rdu.phase = #rdu<phase backward>} : tensor<8x4xf32>, tensor<4x16xf32> -> tensor<8x16xf32>
    %dx = rdu.matmul %g, %w {rdu.phase = #rdu<phase backward>} : tensor<4x8xf32>, tensor<8x16xf32> -> tensor<4x16xf32>
    func.return %dw, %dx : tensor<8x16xf32>, tensor<4x16xf32>
  }
}

// CHECK:      tier.global @k : tensor<4x16xf32> {kind = "parameter", rdu.shard = #rdu.split<(0, 2, 1)>}
// CHECK-NEXT: tier.global @v : tensor<4x16xf32> {kind = "parameter", rdu.shard = #rdu.split<(0, 2, 1)>}
// CHECK-NOT:  rdu.all_gather
// CHECK:      %dwk, %dxk = func.call @layer_backward(%gk, %x, %wk) {{.*}} : (tensor<4x4xf32>, tensor<4x16xf32>, tensor<4x16xf32>) -> (tensor<4x16xf32>, tensor<4x16xf32>)
// CHECK-NEXT: %dwv, %dxv = func.call @layer_backward(%gv, %x, %wv) {{.*}} : (tensor<4x4xf32>, tensor<4x16xf32>, tensor<4x16xf32>) -> (tensor<4x16xf32>, tensor<4x16xf32>)
// CHECK-NEXT: %dx = rdu.map %dxk, %dxv
// CHECK:      %[[SUM:.*]] = rdu.all_reduce %dx group 2
// CHECK-NEXT: func.return %[[SUM]], %dwk, %dwv
// CHECK:      func.func private @layer_backward(%g: tensor<4x4xf32> {rdu.input = "g", rdu.shard = #rdu.split<(1, 2, 1)>}, %in: tensor<4x16xf32> {rdu.input = "x"}, %w: tensor<4x16xf32> {rdu.weight, rdu.shard = #rdu.split<(0, 2, 1)>})
// CHECK-NOT:  rdu.all_gather
// CHECK-NOT:  rdu.all_reduce
// CHECK:      func.return %dw, %dx : tensor<4x16xf32>, tensor<4x16xf32>

// ERR: rdu-partition: tp=3 splits nothing in this model
