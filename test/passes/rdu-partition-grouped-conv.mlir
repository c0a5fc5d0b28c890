// RUN: rducc-opt --check-roundtrip -p 'rdu-partition{tp=2 target=sn40l-8}' %s | filecheck %s
// RUN: rducc-opt -p 'rdu-partition{tp=4 target=sn40l-8}' %s | filecheck %s --check-prefix=CUT
// RUN: not rducc-opt -p 'rdu-partition{tp=3 target=sn40l-8}' %s 2>&1 | filecheck %s --check-prefix=ERR

// A grouped convolution reading channels split across the ranks: each group's
// input channels make only its own output channels, so a split along whole
// groups (the input's channels and the weight's output channels cut alike) is
// each rank convolving its own groups, its result split by output channels and
// its `groups` the groups it holds; no partial sum, no collective. Before, the
// input channels were taken as one contraction (a dense convolution's): the
// weight split along its per-group channels (dim 1) and each rank's result
// all-reduced, which mixes one group's channels with another's (a wrong result:
// `grouped_convs` at tp=2 was 4.9e-3 off eager).

// CHECK:      tier.global @g4.weight : tensor<4x2x3x3xf32> {kind = "parameter", rdu.shard = #rdu.split<(0, 2, 1)>}
// CHECK-NEXT: tier.global @g2.weight : tensor<2x4x1x1xf32> {kind = "parameter", rdu.shard = #rdu.split<(0, 2, 1)>}
// CHECK:      %grouped = rdu.conv %stem, %p_g4_weight {{.*}} groups 2 : tensor<1x4x4x4xf32>, tensor<4x2x3x3xf32> -> tensor<1x4x4x4xf32>
// CHECK-NEXT: %paired = rdu.conv %grouped, %p_g2_weight {{.*}} groups 1 : tensor<1x4x4x4xf32>, tensor<2x4x1x1xf32> -> tensor<1x2x4x4xf32>
// CHECK-NOT:  rdu.all_reduce
// CHECK:      func.return

// At tp=4 the 4 groups of the first grouped convolution are one a rank (groups
// 1), but the 2 groups of the second do not divide 4 ways: its input is
// gathered (correct, slower) rather than cut inside a group.

// CUT:      %grouped = rdu.conv %stem, %p_g4_weight {{.*}} groups 1 : tensor<1x2x4x4xf32>, tensor<2x2x3x3xf32> -> tensor<1x2x4x4xf32>
// CUT-NEXT: %[[WHOLE:.*]] = rdu.all_gather %grouped dim 1 group 4 {{.*}} -> tensor<1x8x4x4xf32>
// CUT:      %paired = rdu.conv %[[WHOLE]], %p_g2_weight {{.*}} groups 2 : tensor<1x8x4x4xf32>, tensor<4x4x1x1xf32> -> tensor<1x4x4x4xf32>

// ERR-NOT: Traceback
// ERR:     rducc-opt: error: rdu-partition: tp=3 splits nothing in this model

builtin.module attributes {rdu.level = #rdu<level graph>} {
  tier.global @stem.weight : tensor<8x2x3x3xf32> {kind = "parameter"}
  tier.global @g4.weight : tensor<8x2x3x3xf32> {kind = "parameter"}
  tier.global @g2.weight : tensor<4x4x1x1xf32> {kind = "parameter"}
  func.func @forward(%x: tensor<1x2x4x4xf32> {rdu.input = "x"}, %p_stem_weight: tensor<8x2x3x3xf32> {rdu.global = @stem.weight}, %p_g4_weight: tensor<8x2x3x3xf32> {rdu.global = @g4.weight}, %p_g2_weight: tensor<4x4x1x1xf32> {rdu.global = @g2.weight}) -> tensor<1x4x4x4xf32> {
    %stem = rdu.conv %x, %p_stem_weight stride [1, 1] padding [1, 1] dilation [1, 1] groups 1 : tensor<1x2x4x4xf32>, tensor<8x2x3x3xf32> -> tensor<1x8x4x4xf32>
    %grouped = rdu.conv %stem, %p_g4_weight stride [1, 1] padding [1, 1] dilation [1, 1] groups 4 : tensor<1x8x4x4xf32>, tensor<8x2x3x3xf32> -> tensor<1x8x4x4xf32>
    %paired = rdu.conv %grouped, %p_g2_weight stride [1, 1] padding [0, 0] dilation [1, 1] groups 2 : tensor<1x8x4x4xf32>, tensor<4x4x1x1xf32> -> tensor<1x4x4x4xf32>
    func.return %paired : tensor<1x4x4x4xf32>
  }
}
