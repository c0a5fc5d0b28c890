// RUN: rducc-opt --check-roundtrip -p 'rdu-partition{tp=2 target=sn40l-8}' %s | filecheck %s
// RUN: rducc-opt -p 'rdu-partition{tp=4 target=sn40l-8}' %s | filecheck %s --check-prefix=CUT
// RUN: not rducc-opt -p 'rdu-partition{tp=3 target=sn40l-8}' %s 2>&1 | filecheck %s --check-prefix=ERR

// A grouped transposed convolution and grouped convolution gradients
// (`rdu.conv_grad`) reading channels split by whole groups. Each group's
// output channels are made from its own input channels alone, so a rank that
// holds whole groups (the input's channels and the weight's dim 0, group-major
// in a transposed weight [in, out / groups] as in a direct one [out, in /
// groups]) computes its groups with `groups` its share: no partial sum, no
// collective. `up` (2 groups, transposed) reads the stem's split channels;
// the depthwise `dw` reads up's. Their gradients keep the same split: dw's
// weight and input gradients, up's input, weight and bias gradients, each with
// its rank's groups. Before, the grouped transposed convolution and every
// grouped convolution gradient were read whole (their dim maps block grouped
// channels): the stem's and up's results all-gathered and each run whole.

// CHECK:      tier.global @up.weight : tensor<4x4x2x2xbf16> {kind = "parameter", rdu.shard = #rdu.split<(0, 2, 1)>}
// CHECK-NEXT: tier.global @dw.weight : tensor<4x1x3x3xbf16> {kind = "parameter", rdu.shard = #rdu.split<(0, 2, 1)>}
// CHECK-NOT:  rdu.all_gather
// CHECK-NOT:  rdu.all_reduce
// CHECK:      %up = rdu.conv %stem, %p_up_weight {{.*}} groups 1 transposed {{.*}} : tensor<1x4x4x4xbf16>, tensor<4x4x2x2xbf16> -> tensor<1x4x8x8xbf16>
// CHECK-NEXT: %dw = rdu.conv %up, %p_dw_weight {{.*}} groups 4 {{.*}} : tensor<1x4x8x8xbf16>, tensor<4x1x3x3xbf16> -> tensor<1x4x8x8xbf16>
// CHECK-NEXT: %ddw = rdu.conv_grad "weight" %dw, %up, %p_dw_weight {{.*}} groups 4 {{.*}} -> tensor<4x1x3x3xbf16>
// CHECK-NEXT: %dup = rdu.conv_grad "input" %dw, %up, %p_dw_weight {{.*}} groups 4 {{.*}} -> tensor<1x4x8x8xbf16>
// CHECK-NEXT: %dstem = rdu.conv_grad "input" %dup, %stem, %p_up_weight {{.*}} groups 1 transposed {{.*}} : tensor<1x4x8x8xbf16>, tensor<1x4x4x4xbf16>, tensor<4x4x2x2xbf16> -> tensor<1x4x4x4xbf16>
// CHECK-NEXT: %dwup = rdu.conv_grad "weight" %dup, %stem, %p_up_weight {{.*}} groups 1 transposed {{.*}} -> tensor<4x4x2x2xbf16>
// CHECK-NEXT: %dbup = rdu.conv_grad "bias" %dup, %stem, %p_up_weight {{.*}} groups 1 transposed {{.*}} -> tensor<4xbf16>
// CHECK-NOT:  rdu.all_gather
// CHECK:      func.return

// At tp=4 up's 2 groups do not divide 4 ways: the stem's channels are gathered
// for it (correct, slower) rather than cut inside a group; what follows reads
// a replicated value and runs whole.

// CUT:      %[[WHOLE:.*]] = rdu.all_gather %stem dim 1 group 4 {{.*}} -> tensor<1x8x4x4xbf16>
// CUT-NEXT: %up = rdu.conv %[[WHOLE]], %p_up_weight {{.*}} groups 2 transposed {{.*}} : tensor<1x8x4x4xbf16>, tensor<8x4x2x2xbf16> -> tensor<1x8x8x8xbf16>
// CUT:      %dstem = rdu.conv_grad "input" %dup, %[[WHOLE]], %p_up_weight {{.*}} groups 2 transposed {{.*}} -> tensor<1x8x4x4xbf16>

// Channels that tp does not divide (8 over 3 ranks): one error line.
// ERR-NOT: Traceback
// ERR:     rducc-opt: error: rdu-partition: tp=3 splits nothing in this model

builtin.module attributes {rdu.level = #rdu<level graph>} {
  tier.global @stem.weight : tensor<8x2x3x3xbf16> {kind = "parameter"}
  tier.global @up.weight : tensor<8x4x2x2xbf16> {kind = "parameter"}
  tier.global @dw.weight : tensor<8x1x3x3xbf16> {kind = "parameter"}
  func.func @forward(%x: tensor<1x2x4x4xbf16> {rdu.input = "x"}, %p_stem_weight: tensor<8x2x3x3xbf16> {rdu.global = @stem.weight}, %p_up_weight: tensor<8x4x2x2xbf16> {rdu.global = @up.weight}, %p_dw_weight: tensor<8x1x3x3xbf16> {rdu.global = @dw.weight}) -> (tensor<1x8x8x8xbf16>, tensor<1x8x4x4xbf16>, tensor<8x4x2x2xbf16>, tensor<8xbf16>, tensor<8x1x3x3xbf16>, tensor<1x8x8x8xbf16>) {
    %stem = rdu.conv %x, %p_stem_weight stride [1, 1] padding [1, 1] dilation [1, 1] groups 1 {rdu.phase = #rdu<phase forward>} : tensor<1x2x4x4xbf16>, tensor<8x2x3x3xbf16> -> tensor<1x8x4x4xbf16>
    %up = rdu.conv %stem, %p_up_weight stride [2, 2] padding [0, 0] dilation [1, 1] output_padding [0, 0] groups 2 transposed {rdu.phase = #rdu<phase forward>} : tensor<1x8x4x4xbf16>, tensor<8x4x2x2xbf16> -> tensor<1x8x8x8xbf16>
    %dw = rdu.conv %up, %p_dw_weight stride [1, 1] padding [1, 1] dilation [1, 1] groups 8 {rdu.phase = #rdu<phase forward>} : tensor<1x8x8x8xbf16>, tensor<8x1x3x3xbf16> -> tensor<1x8x8x8xbf16>
    %ddw = rdu.conv_grad "weight" %dw, %up, %p_dw_weight stride [1, 1] padding [1, 1] dilation [1, 1] output_padding [0, 0] groups 8 {rdu.phase = #rdu<phase backward>} : tensor<1x8x8x8xbf16>, tensor<1x8x8x8xbf16>, tensor<8x1x3x3xbf16> -> tensor<8x1x3x3xbf16>
    %dup = rdu.conv_grad "input" %dw, %up, %p_dw_weight stride [1, 1] padding [1, 1] dilation [1, 1] output_padding [0, 0] groups 8 {rdu.phase = #rdu<phase backward>} : tensor<1x8x8x8xbf16>, tensor<1x8x8x8xbf16>, tensor<8x1x3x3xbf16> -> tensor<1x8x8x8xbf16>
    %dstem = rdu.conv_grad "input" %dup, %stem, %p_up_weight stride [2, 2] padding [0, 0] dilation [1, 1] output_padding [0, 0] groups 2 transposed {rdu.phase = #rdu<phase backward>} : tensor<1x8x8x8xbf16>, tensor<1x8x4x4xbf16>, tensor<8x4x2x2xbf16> -> tensor<1x8x4x4xbf16>
    %dwup = rdu.conv_grad "weight" %dup, %stem, %p_up_weight stride [2, 2] padding [0, 0] dilation [1, 1] output_padding [0, 0] groups 2 transposed {rdu.phase = #rdu<phase backward>} : tensor<1x8x8x8xbf16>, tensor<1x8x4x4xbf16>, tensor<8x4x2x2xbf16> -> tensor<8x4x2x2xbf16>
    %dbup = rdu.conv_grad "bias" %dup, %stem, %p_up_weight stride [2, 2] padding [0, 0] dilation [1, 1] output_padding [0, 0] groups 2 transposed {rdu.phase = #rdu<phase backward>} : tensor<1x8x8x8xbf16>, tensor<1x8x4x4xbf16>, tensor<8x4x2x2xbf16> -> tensor<8xbf16>
    func.return %dw, %dstem, %dwup, %dbup, %ddw, %dup : tensor<1x8x8x8xbf16>, tensor<1x8x4x4xbf16>, tensor<8x4x2x2xbf16>, tensor<8xbf16>, tensor<8x1x3x3xbf16>, tensor<1x8x8x8xbf16>
  }
}
