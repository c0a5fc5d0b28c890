// RUN: rducc-opt --check-roundtrip -p 'rdu-partition{tp=2 target=sn40l-8}' %s | filecheck %s
// RUN: not rducc-opt -p 'rdu-partition{tp=3 target=sn40l-8}' %s 2>&1 | filecheck %s --check-prefix=ERR

// Transposed convolutions under tp, forward and backward. A transposed
// convolution's weight is [in, out / groups, ...]: the channel roles of its
// dims swap (`weight_channel_dims`), and a dense one splits as a direct one.
// `up1` reads a replicated input: its output channels split (the weight's
// dim 1, a column split) and it keeps its slice of the bias in the op (torch's
// kernel with the bias, no collective). `up2` reads those channels split: its
// weight splits along dim 0 (a row split), its result is a partial sum, so its
// bias comes out of the op and is added once after the f32 all-reduce. The
// grouped `up3` stays whole: its input y2 is an activation of a training
// step, so split by groups its input gradient would be all-gathered, which
// costs more than running it whole (`_split_groups`). The backward's `rdu.conv_grad`s move the same
// channels: up1's input gradient sums its split output channels (a partial
// sum, all-reduced), its weight gradient keeps the split; up2's input and
// weight gradients keep its split input channels, and its bias gradient
// (independent of them) keeps its input and weight as they are held, nothing
// gathered.

// CHECK:      tier.global @up1.weight : tensor<4x4x2x2xbf16> {kind = "parameter", rdu.shard = #rdu.split<(1, 2, 1)>}
// CHECK-NEXT: tier.global @up1.bias : tensor<4xbf16> {kind = "parameter", rdu.shard = #rdu.split<(0, 2, 1)>}
// CHECK-NEXT: tier.global @up2.weight : tensor<4x4x3x3xbf16> {kind = "parameter", rdu.shard = #rdu.split<(0, 2, 1)>}
// CHECK-NEXT: tier.global @up2.bias : tensor<4xbf16> {kind = "parameter", rdu.whole_reader = ["rdu.map", ""]}
// CHECK-NEXT: tier.global @up3.weight : tensor<4x2x2x2xbf16> {kind = "parameter", rdu.whole_reader = ["rdu.conv", ""]}
// CHECK-NOT:  rdu.all_gather
// CHECK:      %y1 = rdu.conv %x, %w1 bias %b1 : tensor<4xbf16> {{.*}} groups 1 transposed {{.*}} : tensor<2x4x5x5xbf16>, tensor<4x4x2x2xbf16> -> tensor<2x4x10x10xbf16>
// CHECK-NEXT: %[[BIAS2:.*]] = rdu.reshape %b2 {{.*}} : tensor<4xbf16> -> tensor<4x1x1xbf16>
// CHECK-NEXT: %[[SUMS2:.*]] = rdu.conv %y1, %w2 stride [1, 1] {{.*}} transposed {{.*}} : tensor<2x4x10x10xbf16>, tensor<4x4x3x3xbf16> -> tensor<2x4x10x10xf32>
// CHECK-NEXT: %[[WHOLE2:.*]] = rdu.all_reduce %[[SUMS2]] group 2 {{.*}} -> tensor<2x4x10x10xf32>
// CHECK-NEXT: %[[Y2:.*]] = rdu.map %[[WHOLE2]], %[[BIAS2]] {{.*}} -> tensor<2x4x10x10xbf16>
// CHECK:      %y3 = rdu.conv %[[Y2]], %w3 {{.*}} groups 2 transposed {{.*}} : tensor<2x4x10x10xbf16>, tensor<4x2x2x2xbf16> -> tensor<2x4x20x20xbf16>
// CHECK-NEXT: %dx = rdu.conv_grad "input" %dy1, %x, %w1 {{.*}} : tensor<2x4x10x10xbf16>, tensor<2x4x5x5xbf16>, tensor<4x4x2x2xbf16> -> tensor<2x4x5x5xbf16>
// CHECK-NEXT: %[[DX:.*]] = rdu.all_reduce %dx group 2 {{.*}} -> tensor<2x4x5x5xbf16>
// CHECK-NEXT: %dw1 = rdu.conv_grad "weight" %dy1, %x, %w1 {{.*}} -> tensor<4x4x2x2xbf16>
// CHECK-NEXT: %dy1b = rdu.conv_grad "input" %dy2, %y1, %w2 {{.*}} : tensor<2x4x10x10xbf16>, tensor<2x4x10x10xbf16>, tensor<4x4x3x3xbf16> -> tensor<2x4x10x10xbf16>
// CHECK-NEXT: %dw2 = rdu.conv_grad "weight" %dy2, %y1, %w2 {{.*}} -> tensor<4x4x3x3xbf16>
// CHECK-NEXT: %db2 = rdu.conv_grad "bias" %dy2, %y1, %w2 {{.*}} : tensor<2x4x10x10xbf16>, tensor<2x4x10x10xbf16>, tensor<4x4x3x3xbf16> -> tensor<4xbf16>
// CHECK-NEXT: func.return %y3, %[[DX]], %dw1, %dy1b, %dw2, %db2

// Channels that tp does not divide (8 and 4 over 3 ranks): one error line.
// ERR-NOT: Traceback
// ERR:     rducc-opt: error: rdu-partition: tp=3 splits nothing in this model

builtin.module attributes {rdu.level = #rdu<level graph>} {
  tier.global @up1.weight : tensor<4x8x2x2xbf16> {kind = "parameter"}
  tier.global @up1.bias : tensor<8xbf16> {kind = "parameter"}
  tier.global @up2.weight : tensor<8x4x3x3xbf16> {kind = "parameter"}
  tier.global @up2.bias : tensor<4xbf16> {kind = "parameter"}
  tier.global @up3.weight : tensor<4x2x2x2xbf16> {kind = "parameter"}
  func.func @forward(%x: tensor<2x4x5x5xbf16> {rdu.input = "x"}, %dy1: tensor<2x8x10x10xbf16> {rdu.input = "dy1"}, %dy2: tensor<2x4x10x10xbf16> {rdu.input = "dy2"}, %w1: tensor<4x8x2x2xbf16> {rdu.global = @up1.weight}, %b1: tensor<8xbf16> {rdu.global = @up1.bias}, %w2: tensor<8x4x3x3xbf16> {rdu.global = @up2.weight}, %b2: tensor<4xbf16> {rdu.global = @up2.bias}, %w3: tensor<4x2x2x2xbf16> {rdu.global = @up3.weight}) -> (tensor<2x4x20x20xbf16>, tensor<2x4x5x5xbf16>, tensor<4x8x2x2xbf16>, tensor<2x8x10x10xbf16>, tensor<8x4x3x3xbf16>, tensor<4xbf16>) {
    %y1 = rdu.conv %x, %w1 bias %b1 : tensor<8xbf16> stride [2, 2] padding [0, 0] dilation [1, 1] output_padding [0, 0] groups 1 transposed {rdu.phase = #rdu<phase forward>} : tensor<2x4x5x5xbf16>, tensor<4x8x2x2xbf16> -> tensor<2x8x10x10xbf16>
    %y2 = rdu.conv %y1, %w2 bias %b2 : tensor<4xbf16> stride [1, 1] padding [1, 1] dilation [1, 1] output_padding [0, 0] groups 1 transposed {rdu.phase = #rdu<phase forward>} : tensor<2x8x10x10xbf16>, tensor<8x4x3x3xbf16> -> tensor<2x4x10x10xbf16>
    %y3 = rdu.conv %y2, %w3 stride [2, 2] padding [0, 0] dilation [1, 1] output_padding [0, 0] groups 2 transposed {rdu.phase = #rdu<phase forward>} : tensor<2x4x10x10xbf16>, tensor<4x2x2x2xbf16> -> tensor<2x4x20x20xbf16>
    %dx = rdu.conv_grad "input" %dy1, %x, %w1 stride [2, 2] padding [0, 0] dilation [1, 1] output_padding [0, 0] groups 1 transposed {rdu.phase = #rdu<phase backward>} : tensor<2x8x10x10xbf16>, tensor<2x4x5x5xbf16>, tensor<4x8x2x2xbf16> -> tensor<2x4x5x5xbf16>
    %dw1 = rdu.conv_grad "weight" %dy1, %x, %w1 stride [2, 2] padding [0, 0] dilation [1, 1] output_padding [0, 0] groups 1 transposed {rdu.phase = #rdu<phase backward>} : tensor<2x8x10x10xbf16>, tensor<2x4x5x5xbf16>, tensor<4x8x2x2xbf16> -> tensor<4x8x2x2xbf16>
    %dy1b = rdu.conv_grad "input" %dy2, %y1, %w2 stride [1, 1] padding [1, 1] dilation [1, 1] output_padding [0, 0] groups 1 transposed {rdu.phase = #rdu<phase backward>} : tensor<2x4x10x10xbf16>, tensor<2x8x10x10xbf16>, tensor<8x4x3x3xbf16> -> tensor<2x8x10x10xbf16>
    %dw2 = rdu.conv_grad "weight" %dy2, %y1, %w2 stride [1, 1] padding [1, 1] dilation [1, 1] output_padding [0, 0] groups 1 transposed {rdu.phase = #rdu<phase backward>} : tensor<2x4x10x10xbf16>, tensor<2x8x10x10xbf16>, tensor<8x4x3x3xbf16> -> tensor<8x4x3x3xbf16>
    %db2 = rdu.conv_grad "bias" %dy2, %y1, %w2 stride [1, 1] padding [1, 1] dilation [1, 1] output_padding [0, 0] groups 1 transposed {rdu.phase = #rdu<phase backward>} : tensor<2x4x10x10xbf16>, tensor<2x8x10x10xbf16>, tensor<8x4x3x3xbf16> -> tensor<4xbf16>
    func.return %y3, %dx, %dw1, %dy1b, %dw2, %db2 : tensor<2x4x20x20xbf16>, tensor<2x4x5x5xbf16>, tensor<4x8x2x2xbf16>, tensor<2x8x10x10xbf16>, tensor<8x4x3x3xbf16>, tensor<4xbf16>
  }
}
