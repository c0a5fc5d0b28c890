// RUN: rducc-opt --check-roundtrip -p 'rdu-partition{tp=2 target=sn40l-8}' %s | filecheck %s
// RUN: not rducc-opt -p 'rdu-partition{tp=3 target=sn40l-8}' %s 2>&1 | filecheck %s --check-prefix=ERR

// Tensor parallelism through convolutions, as through linear layers: a
// convolution of a weight on a replicated input splits its output channels
// (the weight's dim 0, the result's channel dim 1) over the ranks
// (column-parallel); the relu keeps the split; the next convolution reads its
// input channels split, so its weight splits along its input channels (dim 1,
// row-parallel) and each rank's result is a partial sum, all-reduced once. A
// training step's backward follows from the same dim maps: the input
// gradient's convolution contracts the split channels (a partial sum), the
// weight gradient's keeps them split, and batch norm normalizes each rank's
// channels itself (test_train_dp_tp.py's CNN against eager).

// CHECK:      tier.global @c1.weight : tensor<2x2x3x3xf32> {kind = "parameter", rdu.shard = #rdu.split<(0, 2, 1)>}
// CHECK-NEXT: tier.global @c2.weight : tensor<2x2x1x1xf32> {kind = "parameter", rdu.shard = #rdu.split<(1, 2, 1)>}
// CHECK:      %convolution = rdu.conv %x, %p_c1_weight {{.*}} : tensor<1x2x4x4xf32>, tensor<2x2x3x3xf32> -> tensor<1x2x4x4xf32>
// CHECK:      %relu = rdu.map %convolution : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
// CHECK:      %convolution_1 = rdu.conv %relu, %p_c2_weight {{.*}} : tensor<1x2x4x4xf32>, tensor<2x2x1x1xf32> -> tensor<1x2x4x4xf32>
// CHECK-NEXT: %0 = rdu.all_reduce %convolution_1 group 2
// CHECK-NEXT: func.return %0

// Channels that tp does not divide (4 and 2 over 3 ranks) are not split, and
// then nothing is: one error line.
// ERR-NOT: Traceback
// ERR:     rducc-opt: error: rdu-partition: tp=3 splits nothing in this model: no weight or input has a dimension (output columns, heads, convolution channels) that divides 3 ways

builtin.module attributes {rdu.level = #rdu<level graph>} {
  tier.global @c1.weight : tensor<4x2x3x3xf32> {kind = "parameter"}
  tier.global @c2.weight : tensor<2x4x1x1xf32> {kind = "parameter"}
  func.func @forward(%x: tensor<1x2x4x4xf32> {rdu.input = "x"}, %p_c1_weight: tensor<4x2x3x3xf32> {rdu.global = @c1.weight}, %p_c2_weight: tensor<2x4x1x1xf32> {rdu.global = @c2.weight}) -> tensor<1x2x4x4xf32> {
    %convolution = rdu.conv %x, %p_c1_weight stride [1, 1] padding [1, 1] dilation [1, 1] groups 1 : tensor<1x2x4x4xf32>, tensor<4x2x3x3xf32> -> tensor<1x4x4x4xf32>
    %relu = rdu.map %convolution : (tensor<1x4x4x4xf32>) -> tensor<1x4x4x4xf32> {
    ^bb0(%0: f32):
      %1 = arith.constant 0.000000e+00 : f32
      %2 = arith.maximumf %0, %1 : f32
      rdu.yield %2 : f32
    }
    %convolution_1 = rdu.conv %relu, %p_c2_weight stride [1, 1] padding [0, 0] dilation [1, 1] groups 1 : tensor<1x4x4x4xf32>, tensor<2x4x1x1xf32> -> tensor<1x2x4x4xf32>
    func.return %convolution_1 : tensor<1x2x4x4xf32>
  }
}
