// RUN: rducc-opt --check-roundtrip -p 'rdu-partition{tp=2 sequence_parallel=true target=sn40l-8}' --split-input-file %s | filecheck %s

// A layer norm's weight gradient sums over [batch, tokens]. Under sequence
// parallelism the normed value arrives split by tokens (the row-split matmul's
// partial sum reduce-scattered along dim 1), so the weight gradient is a
// partial sum over the tokens; its operand that arrives whole (the incoming
// gradient %dy, a user input: its `rdu.shard`) is split along the same summed
// axis, the tokens (dim 1), not along its first summed dim, the batch
// (`_split_summed_ordinal`): each rank sums its own tokens of every operand.
// Split by batch, a rank would pair its tokens of the norm's input with
// another part of %dy.

builtin.module attributes {rdu.level = #rdu<level graph>} {
  func.func @forward(%x: tensor<2x4x8xf32> {rdu.input = "x"}, %w1: tensor<8x16xf32> {rdu.weight}, %w2: tensor<16x8xf32> {rdu.weight}, %g: tensor<8xf32> {rdu.weight}, %dy: tensor<2x4x8xf32> {rdu.input = "dy"}) -> (tensor<2x4x8xf32>, tensor<8xf32>) {
    %h = rdu.matmul %x, %w1 : tensor<2x4x8xf32>, tensor<8x16xf32> -> tensor<2x4x16xf32>
    %o = rdu.matmul %h, %w2 : tensor<2x4x16xf32>, tensor<16x8xf32> -> tensor<2x4x8xf32>
    %mean = rdu.layer_norm "mean" %o, %g normalized 1 eps 1.0e-05 weight : tensor<2x4x8xf32>, tensor<8xf32> -> tensor<2x4x1xf32>
    %rstd = rdu.layer_norm "rstd" %o, %g normalized 1 eps 1.0e-05 weight : tensor<2x4x8xf32>, tensor<8xf32> -> tensor<2x4x1xf32>
    %dg = rdu.layer_norm_grad "weight" %dy, %o, %mean, %rstd, %g normalized 1 weight : tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x1xf32>, tensor<2x4x1xf32>, tensor<8xf32> -> tensor<8xf32>
    %y = rdu.layer_norm "output" %o, %g normalized 1 eps 1.0e-05 weight : tensor<2x4x8xf32>, tensor<8xf32> -> tensor<2x4x8xf32>
    func.return %y, %dg : tensor<2x4x8xf32>, tensor<8xf32>
  }
}

// CHECK:      %dy: tensor<2x2x8xf32> {rdu.input = "dy", rdu.shard = #rdu.split<(1, 2, 1)>}
// CHECK:      %[[SCATTERED:.*]] = rdu.reduce_scatter %o dim 1 group 2 : tensor<2x4x8xf32> -> tensor<2x2x8xf32>
// CHECK:      %dg = rdu.layer_norm_grad "weight" %dy, %[[SCATTERED]], %mean, %rstd, %g {{.*}} : tensor<2x2x8xf32>, tensor<2x2x8xf32>, tensor<2x2x1xf32>, tensor<2x2x1xf32>, tensor<8xf32> -> tensor<8xf32>
// CHECK-NEXT: rdu.all_reduce %dg group 2

// -----

// The same step with one token a row: the tokens cannot be split, so the
// reduce-scatter cuts the batch (dim 0), and %dy follows that axis, dim 0 (the rule takes the split operand's summed axis, not a fixed one).

builtin.module attributes {rdu.level = #rdu<level graph>} {
  func.func @forward(%x: tensor<4x1x8xf32> {rdu.input = "x"}, %w1: tensor<8x16xf32> {rdu.weight}, %w2: tensor<16x8xf32> {rdu.weight}, %g: tensor<8xf32> {rdu.weight}, %dy: tensor<4x1x8xf32> {rdu.input = "dy"}) -> (tensor<4x1x8xf32>, tensor<8xf32>) {
    %h = rdu.matmul %x, %w1 : tensor<4x1x8xf32>, tensor<8x16xf32> -> tensor<4x1x16xf32>
    %o = rdu.matmul %h, %w2 : tensor<4x1x16xf32>, tensor<16x8xf32> -> tensor<4x1x8xf32>
    %mean = rdu.layer_norm "mean" %o, %g normalized 1 eps 1.0e-05 weight : tensor<4x1x8xf32>, tensor<8xf32> -> tensor<4x1x1xf32>
    %rstd = rdu.layer_norm "rstd" %o, %g normalized 1 eps 1.0e-05 weight : tensor<4x1x8xf32>, tensor<8xf32> -> tensor<4x1x1xf32>
    %dg = rdu.layer_norm_grad "weight" %dy, %o, %mean, %rstd, %g normalized 1 weight : tensor<4x1x8xf32>, tensor<4x1x8xf32>, tensor<4x1x1xf32>, tensor<4x1x1xf32>, tensor<8xf32> -> tensor<8xf32>
    %y = rdu.layer_norm "output" %o, %g normalized 1 eps 1.0e-05 weight : tensor<4x1x8xf32>, tensor<8xf32> -> tensor<4x1x8xf32>
    func.return %y, %dg : tensor<4x1x8xf32>, tensor<8xf32>
  }
}

// CHECK:      %dy: tensor<2x1x8xf32> {rdu.input = "dy", rdu.shard = #rdu.split<(0, 2, 1)>}
// CHECK:      %[[SCATTERED:.*]] = rdu.reduce_scatter %o dim 0 group 2 : tensor<4x1x8xf32> -> tensor<2x1x8xf32>
// CHECK:      %dg = rdu.layer_norm_grad "weight" %dy, %[[SCATTERED]], %mean, %rstd, %g {{.*}} -> tensor<8xf32>
