// RUN: rducc-opt --split-input-file --check-roundtrip -p 'rdu-partition{tp=2 target=sn40l-8}' %s | filecheck %s

// A grouped convolution on a replicated input (a depthwise one on a network's
// residual stream: ConvNeXt, ConvMixer) splits by whole groups where that pays
// (`_split_groups`, grouped_convs.py): each rank cuts its channels of the
// input (`rdu.local_part` of an activation, or the caller's part of an
// input, as here; no collective), takes the weight's rows of its
// groups (dim 0, group-major) and its slice of the bias, and convolves
// `groups / tp` groups; the result is split by channels. Before, every
// grouped convolution on a replicated input ran whole on every rank.
//
// It pays where the split channels meet no collective of the result's size:
// the first module's depthwise 7x7 is pooled over space into an [n, c] vector, summed
// by the next product (a row split: an all-reduce of [2, 5]), and running the
// 2x8x128x128 convolution whole would cost more than that all-reduce by the
// target's figures. The second's (a ConvNeXt block's: a layer norm over the
// channels right after it) would pay an all-gather of its whole result, which
// by the same figures costs more than running it whole (a depthwise
// convolution's 2 x 49 FLOPs an output are cheap beside moving the output
// over the links), so it stays whole. The third: tp does not divide its 3
// groups, whole.

// CHECK:      tier.global @dw.weight : tensor<4x1x7x7xf32> {kind = "parameter", rdu.shard = #rdu.split<(0, 2, 1)>}
// CHECK-NEXT: tier.global @dw.bias : tensor<4xf32> {kind = "parameter", rdu.shard = #rdu.split<(0, 2, 1)>}
// CHECK:       func.func @forward(%x: tensor<2x4x128x128xf32> {rdu.input = "x", rdu.shard = #rdu.split<(1, 2, 1)>}
// CHECK-NEXT:  %dw = rdu.conv %x, %p_dw_weight bias %p_dw_bias : tensor<4xf32> {{.*}} groups 4 : tensor<2x4x128x128xf32>, tensor<4x1x7x7xf32> -> tensor<2x4x128x128xf32>
// CHECK-NOT:   rdu.all_gather
// CHECK:       %logits = rdu.matmul %pooled, %p_head_weight : tensor<2x4xf32>, tensor<4x5xf32> -> tensor<2x5xf32>
// CHECK-NEXT:  %{{.*}} = rdu.all_reduce %logits group 2

// CHECK-LABEL: tier.global @cn.weight : tensor<8x1x7x7xf32> {kind = "parameter", rdu.whole_reader
// CHECK-NOT:   rdu.local_part
// CHECK:       %dw = rdu.conv %x, %p_cn_weight {{.*}} groups 8 : tensor<1x8x4x4xf32>, tensor<8x1x7x7xf32> -> tensor<1x8x4x4xf32>
// CHECK-NEXT:  %channels_last = rdu.transpose %dw

// CHECK-LABEL: tier.global @g3.weight : tensor<6x2x3x3xf32> {kind = "parameter", rdu.whole_reader
// CHECK:       %g3 = rdu.conv %x, %p_g3_weight {{.*}} groups 3 : tensor<1x6x4x4xf32>, tensor<6x2x3x3xf32> -> tensor<1x6x4x4xf32>

builtin.module attributes {rdu.level = #rdu<level graph>} {
  tier.global @dw.weight : tensor<8x1x7x7xf32> {kind = "parameter"}
  tier.global @dw.bias : tensor<8xf32> {kind = "parameter"}
  tier.global @head.weight : tensor<8x5xf32> {kind = "parameter"}
  func.func @forward(%x: tensor<2x8x128x128xf32> {rdu.input = "x"}, %p_dw_weight: tensor<8x1x7x7xf32> {rdu.global = @dw.weight}, %p_dw_bias: tensor<8xf32> {rdu.global = @dw.bias}, %p_head_weight: tensor<8x5xf32> {rdu.global = @head.weight}) -> tensor<2x5xf32> {
    %dw = rdu.conv %x, %p_dw_weight bias %p_dw_bias : tensor<8xf32> stride [1, 1] padding [3, 3] dilation [1, 1] groups 8 : tensor<2x8x128x128xf32>, tensor<8x1x7x7xf32> -> tensor<2x8x128x128xf32>
    %pooled = rdu.reduce sum %dw dims [2, 3] : tensor<2x8x128x128xf32> -> tensor<2x8xf32>
    %logits = rdu.matmul %pooled, %p_head_weight : tensor<2x8xf32>, tensor<8x5xf32> -> tensor<2x5xf32>
    func.return %logits : tensor<2x5xf32>
  }
}

// -----

builtin.module attributes {rdu.level = #rdu<level graph>} {
  tier.global @cn.weight : tensor<8x1x7x7xf32> {kind = "parameter"}
  tier.global @ln.weight : tensor<8xf32> {kind = "parameter"}
  tier.global @up.weight : tensor<8x32xf32> {kind = "parameter"}
  func.func @forward(%x: tensor<1x8x4x4xf32> {rdu.input = "x"}, %p_cn_weight: tensor<8x1x7x7xf32> {rdu.global = @cn.weight}, %p_ln_weight: tensor<8xf32> {rdu.global = @ln.weight}, %p_up_weight: tensor<8x32xf32> {rdu.global = @up.weight}) -> tensor<1x4x4x32xf32> {
    %dw = rdu.conv %x, %p_cn_weight stride [1, 1] padding [3, 3] dilation [1, 1] groups 8 : tensor<1x8x4x4xf32>, tensor<8x1x7x7xf32> -> tensor<1x8x4x4xf32>
    %channels_last = rdu.transpose %dw perm [0, 2, 3, 1] : tensor<1x8x4x4xf32> -> tensor<1x4x4x8xf32>
    %normed = rdu.layer_norm "output" %channels_last, %p_ln_weight normalized 1 eps 1.0e-06 weight : tensor<1x4x4x8xf32>, tensor<8xf32> -> tensor<1x4x4x8xf32>
    %up = rdu.matmul %normed, %p_up_weight : tensor<1x4x4x8xf32>, tensor<8x32xf32> -> tensor<1x4x4x32xf32>
    func.return %up : tensor<1x4x4x32xf32>
  }
}

// -----

builtin.module attributes {rdu.level = #rdu<level graph>} {
  tier.global @g3.weight : tensor<6x2x3x3xf32> {kind = "parameter"}
  tier.global @w.weight : tensor<6x4xf32> {kind = "parameter"}
  func.func @forward(%x: tensor<1x6x4x4xf32> {rdu.input = "x"}, %p_g3_weight: tensor<6x2x3x3xf32> {rdu.global = @g3.weight}, %w: tensor<6x4xf32> {rdu.global = @w.weight}) -> tensor<1x4xf32> {
    %g3 = rdu.conv %x, %p_g3_weight stride [1, 1] padding [1, 1] dilation [1, 1] groups 3 : tensor<1x6x4x4xf32>, tensor<6x2x3x3xf32> -> tensor<1x6x4x4xf32>
    %pooled = rdu.reduce sum %g3 dims [2, 3] : tensor<1x6x4x4xf32> -> tensor<1x6xf32>
    %y = rdu.matmul %pooled, %w : tensor<1x6xf32>, tensor<6x4xf32> -> tensor<1x4xf32>
    func.return %y : tensor<1x4xf32>
  }
}
