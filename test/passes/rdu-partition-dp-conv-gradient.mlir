// RUN: rducc-opt --check-roundtrip -p 'rdu-partition{dp=2 target=sn40l-8}' %s | filecheck %s
// RUN: not rducc-opt -p 'rdu-partition{dp=3 target=sn40l-8}' %s 2>&1 | filecheck %s --check-prefix=ERR

// A mixed-precision training step (a float32 master weight, updated) at dp=2:
// a convolution's weight gradient under autocast, the bf16 convolution of the
// batch's inputs with its output gradients (the batch is the contraction), is
// a partial sum of each replica's half of the batch. As DistributedDataParallel
// computes it, each replica's gradient is rounded to bf16 by its own kernel,
// cast up to f32 and all-reduced in f32 (`training.ddp_gradient`: the bf16
// result, transposed, is only cast up), before the optimizer's update reads
// it; no bf16 all-reduce. dp=3 does not divide the batch of 4.

builtin.module attributes {rdu.level = #rdu<level graph>} {
  tier.global @c.weight : tensor<2x3x1x1xf32> {kind = "parameter"}
  func.func @forward(%input: tensor<4x3x2x2xbf16> {rdu.input = "x"}, %out: tensor<4x2x2x2xbf16> {rdu.input = "dy"}, %w: tensor<2x3x1x1xf32> {rdu.global = @c.weight}) -> (tensor<f32>, tensor<2x3x1x1xf32>) attributes {rdu.result_roles = ["loss", ""], rdu.result_updates = ["", "buffer:c.weight"]} {
    %x = rdu.transpose %input perm [1, 0, 2, 3] {rdu.phase = #rdu<phase backward>} : tensor<4x3x2x2xbf16> -> tensor<3x4x2x2xbf16>
    %dy = rdu.transpose %out perm [1, 0, 2, 3] {rdu.phase = #rdu<phase backward>} : tensor<4x2x2x2xbf16> -> tensor<2x4x2x2xbf16>
    %grad = rdu.conv %x, %dy stride [1, 1] padding [0, 0] dilation [1, 1] groups 1 {rdu.phase = #rdu<phase backward>} : tensor<3x4x2x2xbf16>, tensor<2x4x2x2xbf16> -> tensor<3x2x1x1xbf16>
    %gradt = rdu.transpose %grad perm [1, 0, 2, 3] {rdu.phase = #rdu<phase backward>} : tensor<3x2x1x1xbf16> -> tensor<2x3x1x1xbf16>
    %wide = rdu.map %gradt {rdu.phase = #rdu<phase optimizer>} : (tensor<2x3x1x1xbf16>) -> tensor<2x3x1x1xf32> {
    ^bb0(%0: bf16):
      %1 = arith.extf %0 : bf16 to f32
      rdu.yield %1 : f32
    }
    %new = rdu.map %w, %wide {rdu.phase = #rdu<phase optimizer>} : (tensor<2x3x1x1xf32>, tensor<2x3x1x1xf32>) -> tensor<2x3x1x1xf32> {
    ^bb0(%0: f32, %1: f32):
      %2 = arith.subf %0, %1 : f32
      rdu.yield %2 : f32
    }
    %loss = rdu.reduce sum %w dims [0, 1, 2, 3] : tensor<2x3x1x1xf32> -> tensor<f32>
    func.return %loss, %new : tensor<f32>, tensor<2x3x1x1xf32>
  }
}

// CHECK:      %grad = rdu.conv {{.*}} : tensor<3x2x2x2xbf16>, tensor<2x2x2x2xbf16> -> tensor<3x2x1x1xbf16>
// CHECK-NEXT: %gradt = rdu.transpose %grad {{.*}} -> tensor<2x3x1x1xbf16>
// CHECK-NEXT: %wide = rdu.map %gradt {{.*}} -> tensor<2x3x1x1xf32>
// CHECK:      %[[SUM:.*]] = rdu.all_reduce %wide group 2 {{.*}} : tensor<2x3x1x1xf32> -> tensor<2x3x1x1xf32>
// CHECK-NEXT: %new = rdu.map %w, %[[SUM]]
// CHECK-NOT:  rdu.all_reduce {{.*}}xbf16>

// ERR: dp=3 does not divide the batch of 4
