// RUN: rducc-opt --check-roundtrip -p 'rdu-partition{tp=2 sequence_parallel=true target=sn40l-8}' %s | filecheck %s
// RUN: rducc-opt -p 'rdu-partition{tp=2 target=sn40l-8}' %s | filecheck %s --check-prefix=PLAIN
// RUN: not rducc-opt -p 'rdu-partition{dp=2 sequence_parallel=true target=sn40l-8}' %s 2>&1 | filecheck %s --check-prefix=ERR

// Sequence parallelism with a layer norm run as its kernel (rdu.layer_norm,
// rdu.layer_norm_grad: row by row, as the maps of a decomposed norm). The
// row-split matmul's partial sum is reduce-scattered along the tokens and the
// norm runs on 4 tokens a rank; its weight gradient, summed over the tokens,
// is a partial sum, all-reduced. Without sequence parallelism the partial sum
// is all-reduced and the norm runs whole on every rank (PLAIN).

builtin.module attributes {rdu.level = #rdu<level graph>} {
  func.func @forward(%x: tensor<8x16xf32> {rdu.input = "x"}, %w1: tensor<16x32xf32> {rdu.weight}, %w2: tensor<32x16xf32> {rdu.weight}, %g: tensor<16xf32> {rdu.weight}, %dy: tensor<8x16xf32> {rdu.input = "dy"}) -> (tensor<8x16xf32>, tensor<16xf32>) {
    %h = rdu.matmul %x, %w1 : tensor<8x16xf32>, tensor<16x32xf32> -> tensor<8x32xf32>
    %o = rdu.matmul %h, %w2 : tensor<8x32xf32>, tensor<32x16xf32> -> tensor<8x16xf32>
    %mean = rdu.layer_norm "mean" %o, %g normalized 1 eps 1.0e-05 weight : tensor<8x16xf32>, tensor<16xf32> -> tensor<8x1xf32>
    %rstd = rdu.layer_norm "rstd" %o, %g normalized 1 eps 1.0e-05 weight : tensor<8x16xf32>, tensor<16xf32> -> tensor<8x1xf32>
    %dg = rdu.layer_norm_grad "weight" %dy, %o, %mean, %rstd, %g normalized 1 weight : tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x1xf32>, tensor<8x1xf32>, tensor<16xf32> -> tensor<16xf32>
    %y = rdu.layer_norm "output" %o, %g normalized 1 eps 1.0e-05 weight : tensor<8x16xf32>, tensor<16xf32> -> tensor<8x16xf32>
    func.return %y, %dg : tensor<8x16xf32>, tensor<16xf32>
  }
}

// CHECK:      %o = rdu.matmul %h, %w2 : tensor<8x16xf32>, tensor<16x16xf32> -> tensor<8x16xf32>
// CHECK-NEXT: %[[SCATTERED:.*]] = rdu.reduce_scatter %o dim 0 group 2 : tensor<8x16xf32> -> tensor<4x16xf32>
// CHECK:      %mean = rdu.layer_norm "mean" %[[SCATTERED]], %g {{.*}} -> tensor<4x1xf32>
// CHECK:      %dg = rdu.layer_norm_grad "weight" {{.*}} -> tensor<16xf32>
// CHECK-NEXT: %{{.*}} = rdu.all_reduce %dg group 2 : tensor<16xf32> -> tensor<16xf32>
// CHECK:      %y = rdu.layer_norm "output" %[[SCATTERED]], %g {{.*}} -> tensor<4x16xf32>

// PLAIN:      %[[SUM:.*]] = rdu.all_reduce %o group 2 : tensor<8x16xf32> -> tensor<8x16xf32>
// PLAIN-NEXT: %mean = rdu.layer_norm "mean" %[[SUM]], %g {{.*}} -> tensor<8x1xf32>
// PLAIN-NOT:  rdu.reduce_scatter

// ERR: sequence_parallel splits the activations between the tensor-parallel regions: it needs tp >= 2, got tp=0
