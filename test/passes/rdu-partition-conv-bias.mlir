// RUN: rducc-opt --check-roundtrip -p 'rdu-partition{tp=2 target=sn40l-8}' %s | filecheck %s
// RUN: rducc-opt --check-roundtrip -p 'rdu-partition{dp=2 target=sn40l-8}' %s | filecheck %s --check-prefix=DP
// RUN: not rducc-opt -p 'rdu-partition{tp=3 target=sn40l-8}' %s 2>&1 | filecheck %s --check-prefix=ERR

// A 16-bit convolution carries its bias (rounded once with the sums, as
// ATen's kernel). The column-split c1 (output channels split, its input
// replicated) keeps its bias in the op, split with its channels: each rank
// runs torch's kernel with its slice of the bias, eager autocast's bits, no
// collective (before, every bias was taken out under tp: f32 sums plus the
// bias, rounded once, a rounding off eager's kernel in places); so does the
// grouped g, split by whole groups (a group a rank, its bias with its output
// channels). The row-split
// c2's result is a partial sum, and a bias inside it would be added once a
// rank: its bias is taken out (`conv_bias.py`): the convolution in f32 and a
// map adding the `[C, 1, 1]` bias and rounding once to bf16, after the f32
// all-reduce. dp (whole images a replica) keeps the bias in the op.

// CHECK:      tier.global @c1.bias : tensor<2xbf16> {kind = "parameter", rdu.shard = #rdu.split<(0, 2, 1)>}
// CHECK:      tier.global @g.bias : tensor<2xbf16> {kind = "parameter", rdu.shard = #rdu.split<(0, 2, 1)>}
// CHECK:      tier.global @c2.bias : tensor<2xbf16> {kind = "parameter", rdu.whole_reader = ["rdu.map", ""]}
// CHECK:      %convolution = rdu.conv %x, %p_c1_weight bias %p_c1_bias : tensor<2xbf16> stride {{.*}} : tensor<2x2x4x4xbf16>, tensor<2x2x3x3xbf16> -> tensor<2x2x4x4xbf16>
// CHECK-NEXT: %grouped = rdu.conv %convolution, %p_g_weight bias %p_g_bias : tensor<2xbf16> {{.*}} groups 1 : tensor<2x2x4x4xbf16>, tensor<2x2x3x3xbf16> -> tensor<2x2x4x4xbf16>
// CHECK-NEXT: %[[BIAS2:.*]] = rdu.reshape %p_c2_bias : tensor<2xbf16> -> tensor<2x1x1xbf16>
// CHECK-NEXT: %[[SUMS2:.*]] = rdu.conv %grouped, %p_c2_weight {{.*}} -> tensor<2x2x4x4xf32>
// CHECK-NEXT: %[[WHOLE:.*]] = rdu.all_reduce %[[SUMS2]] group 2 : tensor<2x2x4x4xf32> -> tensor<2x2x4x4xf32>
// CHECK-NEXT: %[[OUT:.*]] = rdu.map %[[WHOLE]], %[[BIAS2]] : (tensor<2x2x4x4xf32>, tensor<2x1x1xbf16>) -> tensor<2x2x4x4xbf16>
// CHECK:        arith.extf
// CHECK-NEXT:   arith.addf
// CHECK-NEXT:   arith.truncf
// CHECK:      func.return %[[OUT]]

// DP:         %convolution = rdu.conv %x, %p_c1_weight bias %p_c1_bias : tensor<4xbf16> {{.*}} -> tensor<1x4x4x4xbf16>
// DP-NEXT:    %grouped = rdu.conv %convolution, %p_g_weight bias %p_g_bias : tensor<4xbf16> {{.*}} groups 2 : tensor<1x4x4x4xbf16>, tensor<4x2x3x3xbf16> -> tensor<1x4x4x4xbf16>
// DP-NEXT:    %convolution_1 = rdu.conv %grouped, %p_c2_weight bias %p_c2_bias : tensor<2xbf16> {{.*}} -> tensor<1x2x4x4xbf16>

// Channels that tp does not divide (4 and 2 over 3 ranks): one error line.
// ERR-NOT: Traceback
// ERR:     rducc-opt: error: rdu-partition: tp=3 splits nothing in this model

builtin.module attributes {rdu.level = #rdu<level graph>} {
  tier.global @c1.weight : tensor<4x2x3x3xbf16> {kind = "parameter"}
  tier.global @c1.bias : tensor<4xbf16> {kind = "parameter"}
  tier.global @g.weight : tensor<4x2x3x3xbf16> {kind = "parameter"}
  tier.global @g.bias : tensor<4xbf16> {kind = "parameter"}
  tier.global @c2.weight : tensor<2x4x1x1xbf16> {kind = "parameter"}
  tier.global @c2.bias : tensor<2xbf16> {kind = "parameter"}
  func.func @forward(%x: tensor<2x2x4x4xbf16> {rdu.input = "x"}, %p_c1_weight: tensor<4x2x3x3xbf16> {rdu.global = @c1.weight}, %p_c1_bias: tensor<4xbf16> {rdu.global = @c1.bias}, %p_g_weight: tensor<4x2x3x3xbf16> {rdu.global = @g.weight}, %p_g_bias: tensor<4xbf16> {rdu.global = @g.bias}, %p_c2_weight: tensor<2x4x1x1xbf16> {rdu.global = @c2.weight}, %p_c2_bias: tensor<2xbf16> {rdu.global = @c2.bias}) -> tensor<2x2x4x4xbf16> {
    %convolution = rdu.conv %x, %p_c1_weight bias %p_c1_bias : tensor<4xbf16> stride [1, 1] padding [1, 1] dilation [1, 1] groups 1 : tensor<2x2x4x4xbf16>, tensor<4x2x3x3xbf16> -> tensor<2x4x4x4xbf16>
    %grouped = rdu.conv %convolution, %p_g_weight bias %p_g_bias : tensor<4xbf16> stride [1, 1] padding [1, 1] dilation [1, 1] groups 2 : tensor<2x4x4x4xbf16>, tensor<4x2x3x3xbf16> -> tensor<2x4x4x4xbf16>
    %convolution_1 = rdu.conv %grouped, %p_c2_weight bias %p_c2_bias : tensor<2xbf16> stride [1, 1] padding [0, 0] dilation [1, 1] groups 1 : tensor<2x4x4x4xbf16>, tensor<2x4x1x1xbf16> -> tensor<2x2x4x4xbf16>
    func.return %convolution_1 : tensor<2x2x4x4xbf16>
  }
}
