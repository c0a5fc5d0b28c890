// A training step (forward, backward, SGD) of three residual tanh layers, as
// rducc imports torch's joint graph: no rdu.layer marks, a phase on each op.
// Its layers are found by structure, phase by phase: one function per phase,
// called once per layer (the backward of the first layer computes no input
// gradient, so it differs and stays inline).
// RUN: rducc-opt --check-roundtrip --split-input-file -p 'rdu-outline-layers{training=always}' %s | filecheck %s
// By default (training=auto) the step is outlined when its tensors do not fit
// the target's SRAM at once: on micro (8 KiB) they do not (the same functions
// and calls); on sn40l they do, and the step stays inline (-O2 fuses across its
// layers, which it never does across calls: modeled faster, and it compiles fast).
// RUN: rducc-opt --split-input-file -p 'rdu-outline-layers{target="%S/Inputs/micro.toml"}' %s | filecheck %s
// RUN: rducc-opt --split-input-file -p rdu-outline-layers %s | filecheck %s --check-prefix=INLINE
// INLINE-NOT:  func.call
// INLINE-NOT:  func.func private @layer_
// RUN: not rducc-opt -p 'rdu-outline-layers{training=sometimes}' %s 2>&1 | filecheck %s --check-prefix=ERR-OPTION
// ERR-OPTION-NOT: Traceback
// ERR-OPTION:     rducc-opt: error: rdu-outline-layers: training=sometimes is not one of auto, always, never
// What the backward reads from the forward is a forward call's result, which
// rdu-place-saved places like any saved value, and the whole pipeline lowers it.
// RUN: rducc-opt --split-input-file -p 'rdu-canonicalize,rdu-outline-layers{training=always},cse,rdu-fuse{level=2},rdu-merge-maps,rdu-place-saved,rdu-tile,rdu-place-tiers,rdu-insert-dma,rdu-sram-alloc' %s | filecheck %s --check-prefix=LOWERED
// A second run leaves the outlined step as it is.
// RUN: rducc-opt --split-input-file -p 'rdu-outline-layers{training=always},rdu-outline-layers{training=always}' %s | filecheck %s
// A module whose own function has a phase's callee name is refused.
// RUN: not rducc-opt -p 'rdu-outline-layers{training=always}' %S/Inputs/outline-training-name-taken.mlir 2>&1 | filecheck %s --check-prefix=ERR-TAKEN
// ERR-TAKEN-NOT: Traceback
// ERR-TAKEN:     rducc-opt: error: rdu-outline-layers: the module already has a function @layer_backward that is not an outlined layer (no rdu.calls); rename it

// CHECK-LABEL: func.func @forward
// CHECK:         %permute, %tanh, %add = func.call @layer_forward(%p_model_layers_0_fc_weight, %inputs) {rdu.layer = "forward.layers.0", rdu.phase = #rdu<phase forward>}
// CHECK-NEXT:    %permute_1, %tanh_1, %add_1 = func.call @layer_forward(%p_model_layers_1_fc_weight, %add) {rdu.layer = "forward.layers.1", rdu.phase = #rdu<phase forward>}
// CHECK-NEXT:    %permute_2, %tanh_2, %add_2 = func.call @layer_forward(%p_model_layers_2_fc_weight, %add_1) {rdu.layer = "forward.layers.2", rdu.phase = #rdu<phase forward>}
// CHECK:         %add_3, %permute_3 = func.call @layer_backward(%tanh_2, %mul_1, %add_1, %permute_2) {rdu.layer = "backward.layers.0", rdu.phase = #rdu<phase backward>}
// CHECK-NEXT:    %add_4, %permute_4 = func.call @layer_backward(%tanh_1, %add_3, %add, %permute_1) {rdu.layer = "backward.layers.1", rdu.phase = #rdu<phase backward>}
// CHECK-NOT:     func.call @layer_backward
// CHECK:         rdu.matmul %permute_5, %inputs {rdu.phase = #rdu<phase backward>}
// CHECK:         %add_5 = func.call @layer_optimizer(%p_model_layers_0_fc_weight, %permute_7) {rdu.layer = "optimizer.layers.0", rdu.phase = #rdu<phase optimizer>}
// CHECK-NEXT:    %add_6 = func.call @layer_optimizer(%p_model_layers_1_fc_weight, %permute_4)
// CHECK-NEXT:    %add_7 = func.call @layer_optimizer(%p_model_layers_2_fc_weight, %permute_3)
// CHECK-NEXT:    func.return %mean_1, %add_5, %add_6, %add_7
// CHECK:       func.func private @layer_optimizer({{.*}}) -> tensor<8x8xf32> attributes {rdu.outlined_from = "optimizer.layers.0", rdu.calls = 3 : i64}
// CHECK:       func.func private @layer_backward({{.*}}) -> (tensor<4x8xf32>, tensor<8x8xf32>) attributes {rdu.outlined_from = "backward.layers.0", rdu.calls = 2 : i64}
// CHECK:       func.func private @layer_forward(%p_model_layers_0_fc_weight: tensor<8x8xf32> {rdu.weight}, %inputs: tensor<4x8xf32> {rdu.input = "inputs"}) -> (tensor<8x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>) attributes {rdu.outlined_from = "forward.layers.0", rdu.calls = 3 : i64}
// CHECK-NEXT:    rdu.transpose %p_model_layers_0_fc_weight perm [1, 0] {rdu.phase = #rdu<phase forward>, rdu.layer = "forward.layers.0"}

// LOWERED:     %tanh, %add = func.call @layer_forward(%inputs, %p_model_layers_0_fc_weight) {rdu.layer = "forward.layers.0", rdu.phase = #rdu<phase forward>, rdu.saved = ["hbm", "hbm"]}
// LOWERED:     func.call @layer_backward({{.*}}) {rdu.layer = "backward.layers.0", rdu.phase = #rdu<phase backward>, rdu.saved = ["hbm", ""]}
// LOWERED:     func.func private @layer_optimizer
// LOWERED:     func.func private @layer_backward
// LOWERED:     func.func private @layer_forward({{.*}}) -> (!tier.buffer<hbm, 4x8xf32>, !tier.buffer<hbm, 4x8xf32>) attributes {rdu.outlined_from = "forward.layers.0", rdu.calls = 3 : i64, tier.sram_capacity

builtin.module attributes {rdu.level = #rdu<level graph>} {
  tier.global @model.layers.0.fc.weight : tensor<8x8xf32> {kind = "parameter"}
  tier.global @model.layers.1.fc.weight : tensor<8x8xf32> {kind = "parameter"}
  tier.global @model.layers.2.fc.weight : tensor<8x8xf32> {kind = "parameter"}
  func.func @forward(%inputs: tensor<4x8xf32> {rdu.input = "inputs_0"}, %inputs_1: tensor<4x8xf32> {rdu.input = "inputs_1"}, %p_model_layers_0_fc_weight: tensor<8x8xf32> {rdu.global = @model.layers.0.fc.weight}, %p_model_layers_1_fc_weight: tensor<8x8xf32> {rdu.global = @model.layers.1.fc.weight}, %p_model_layers_2_fc_weight: tensor<8x8xf32> {rdu.global = @model.layers.2.fc.weight}) -> (tensor<f32>, tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>) attributes {rdu.result_roles = ["loss", "", "", ""], rdu.result_updates = ["", "buffer:model.layers.0.fc.weight", "buffer:model.layers.1.fc.weight", "buffer:model.layers.2.fc.weight"]} {
    %permute = rdu.transpose %p_model_layers_0_fc_weight perm [1, 0] {rdu.phase = #rdu<phase forward>} : tensor<8x8xf32> -> tensor<8x8xf32>
    %mm = rdu.matmul %inputs, %permute {rdu.phase = #rdu<phase forward>} : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32>
    %tanh = rdu.map %mm {rdu.phase = #rdu<phase forward>} : (tensor<4x8xf32>) -> tensor<4x8xf32> {
    ^bb0(%0: f32):
      %1 = math.tanh %0 : f32
      rdu.yield %1 : f32
    }
    %add = rdu.map %inputs, %tanh {rdu.phase = #rdu<phase forward>} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32> {
    ^bb0(%0: f32, %1: f32):
      %2 = arith.addf %0, %1 : f32
      rdu.yield %2 : f32
    }
    %permute_1 = rdu.transpose %p_model_layers_1_fc_weight perm [1, 0] {rdu.phase = #rdu<phase forward>} : tensor<8x8xf32> -> tensor<8x8xf32>
    %mm_1 = rdu.matmul %add, %permute_1 {rdu.phase = #rdu<phase forward>} : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32>
    %tanh_1 = rdu.map %mm_1 {rdu.phase = #rdu<phase forward>} : (tensor<4x8xf32>) -> tensor<4x8xf32> {
    ^bb0(%0: f32):
      %1 = math.tanh %0 : f32
      rdu.yield %1 : f32
    }
    %add_1 = rdu.map %add, %tanh_1 {rdu.phase = #rdu<phase forward>} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32> {
    ^bb0(%0: f32, %1: f32):
      %2 = arith.addf %0, %1 : f32
      rdu.yield %2 : f32
    }
    %permute_2 = rdu.transpose %p_model_layers_2_fc_weight perm [1, 0] {rdu.phase = #rdu<phase forward>} : tensor<8x8xf32> -> tensor<8x8xf32>
    %mm_2 = rdu.matmul %add_1, %permute_2 {rdu.phase = #rdu<phase forward>} : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32>
    %tanh_2 = rdu.map %mm_2 {rdu.phase = #rdu<phase forward>} : (tensor<4x8xf32>) -> tensor<4x8xf32> {
    ^bb0(%0: f32):
      %1 = math.tanh %0 : f32
      rdu.yield %1 : f32
    }
    %add_2 = rdu.map %add_1, %tanh_2 {rdu.phase = #rdu<phase forward>} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32> {
    ^bb0(%0: f32, %1: f32):
      %2 = arith.addf %0, %1 : f32
      rdu.yield %2 : f32
    }
    %sub = rdu.map %add_2, %inputs_1 {rdu.phase = #rdu<phase forward>} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32> {
    ^bb0(%0: f32, %1: f32):
      %2 = arith.subf %0, %1 : f32
      rdu.yield %2 : f32
    }
    %pow = rdu.map %sub {rdu.phase = #rdu<phase forward>} : (tensor<4x8xf32>) -> tensor<4x8xf32> {
    ^bb0(%0: f32):
      %1 = arith.constant 1.000000e+00 : f32
      %2 = arith.mulf %1, %0 : f32
      %3 = arith.mulf %2, %0 : f32
      rdu.yield %3 : f32
    }
    %mean = rdu.reduce sum %pow dims [0, 1] {rdu.phase = #rdu<phase forward>} : tensor<4x8xf32> -> tensor<f32>
    %mean_1 = rdu.map %mean {rdu.phase = #rdu<phase forward>} : (tensor<f32>) -> tensor<f32> {
    ^bb0(%0: f32):
      %1 = arith.constant 3.200000e+01 : f32
      %2 = arith.divf %0, %1 : f32
      rdu.yield %2 : f32
    }
    %full_like = rdu.map {rdu.phase = #rdu<phase backward>} : () -> tensor<f32> {
      %0 = arith.constant 1.000000e+00 : f32
      rdu.yield %0 : f32
    }
    %sub_1 = rdu.map %add_2, %inputs_1 {rdu.phase = #rdu<phase backward>} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32> {
    ^bb0(%0: f32, %1: f32):
      %2 = arith.subf %0, %1 : f32
      rdu.yield %2 : f32
    }
    %mul = rdu.map %sub_1 {rdu.phase = #rdu<phase backward>} : (tensor<4x8xf32>) -> tensor<4x8xf32> {
    ^bb0(%0: f32):
      %1 = arith.constant 6.250000e-02 : f32
      %2 = arith.mulf %0, %1 : f32
      rdu.yield %2 : f32
    }
    %mul_1 = rdu.map %mul, %full_like {rdu.phase = #rdu<phase backward>} : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32> {
    ^bb0(%0: f32, %1: f32):
      %2 = arith.mulf %0, %1 : f32
      rdu.yield %2 : f32
    }
    %mul_2 = rdu.map %tanh_2, %tanh_2 {rdu.phase = #rdu<phase backward>} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32> {
    ^bb0(%0: f32, %1: f32):
      %2 = arith.mulf %0, %1 : f32
      rdu.yield %2 : f32
    }
    %sub_2 = rdu.map %mul_2 {rdu.phase = #rdu<phase backward>} : (tensor<4x8xf32>) -> tensor<4x8xf32> {
    ^bb0(%0: f32):
      %1 = arith.constant 1.000000e+00 : f32
      %2 = arith.subf %1, %0 : f32
      rdu.yield %2 : f32
    }
    %mul_3 = rdu.map %mul_1, %sub_2 {rdu.phase = #rdu<phase backward>} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32> {
    ^bb0(%0: f32, %1: f32):
      %2 = arith.mulf %0, %1 : f32
      rdu.yield %2 : f32
    }
    %permute_3 = rdu.transpose %mul_3 perm [1, 0] {rdu.phase = #rdu<phase backward>} : tensor<4x8xf32> -> tensor<8x4xf32>
    %mm_3 = rdu.matmul %permute_3, %add_1 {rdu.phase = #rdu<phase backward>} : tensor<8x4xf32>, tensor<4x8xf32> -> tensor<8x8xf32>
    %permute_4 = rdu.transpose %mm_3 perm [1, 0] {rdu.phase = #rdu<phase backward>} : tensor<8x8xf32> -> tensor<8x8xf32>
    %permute_5 = rdu.transpose %permute_2 perm [1, 0] {rdu.phase = #rdu<phase backward>} : tensor<8x8xf32> -> tensor<8x8xf32>
    %mm_4 = rdu.matmul %mul_3, %permute_5 {rdu.phase = #rdu<phase backward>} : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32>
    %add_3 = rdu.map %mul_1, %mm_4 {rdu.phase = #rdu<phase backward>} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32> {
    ^bb0(%0: f32, %1: f32):
      %2 = arith.addf %0, %1 : f32
      rdu.yield %2 : f32
    }
    %permute_6 = rdu.transpose %permute_4 perm [1, 0] {rdu.phase = #rdu<phase backward>} : tensor<8x8xf32> -> tensor<8x8xf32>
    %mul_4 = rdu.map %tanh_1, %tanh_1 {rdu.phase = #rdu<phase backward>} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32> {
    ^bb0(%0: f32, %1: f32):
      %2 = arith.mulf %0, %1 : f32
      rdu.yield %2 : f32
    }
    %sub_3 = rdu.map %mul_4 {rdu.phase = #rdu<phase backward>} : (tensor<4x8xf32>) -> tensor<4x8xf32> {
    ^bb0(%0: f32):
      %1 = arith.constant 1.000000e+00 : f32
      %2 = arith.subf %1, %0 : f32
      rdu.yield %2 : f32
    }
    %mul_5 = rdu.map %add_3, %sub_3 {rdu.phase = #rdu<phase backward>} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32> {
    ^bb0(%0: f32, %1: f32):
      %2 = arith.mulf %0, %1 : f32
      rdu.yield %2 : f32
    }
    %permute_7 = rdu.transpose %mul_5 perm [1, 0] {rdu.phase = #rdu<phase backward>} : tensor<4x8xf32> -> tensor<8x4xf32>
    %mm_5 = rdu.matmul %permute_7, %add {rdu.phase = #rdu<phase backward>} : tensor<8x4xf32>, tensor<4x8xf32> -> tensor<8x8xf32>
    %permute_8 = rdu.transpose %mm_5 perm [1, 0] {rdu.phase = #rdu<phase backward>} : tensor<8x8xf32> -> tensor<8x8xf32>
    %permute_9 = rdu.transpose %permute_1 perm [1, 0] {rdu.phase = #rdu<phase backward>} : tensor<8x8xf32> -> tensor<8x8xf32>
    %mm_6 = rdu.matmul %mul_5, %permute_9 {rdu.phase = #rdu<phase backward>} : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32>
    %add_4 = rdu.map %add_3, %mm_6 {rdu.phase = #rdu<phase backward>} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32> {
    ^bb0(%0: f32, %1: f32):
      %2 = arith.addf %0, %1 : f32
      rdu.yield %2 : f32
    }
    %permute_10 = rdu.transpose %permute_8 perm [1, 0] {rdu.phase = #rdu<phase backward>} : tensor<8x8xf32> -> tensor<8x8xf32>
    %mul_6 = rdu.map %tanh, %tanh {rdu.phase = #rdu<phase backward>} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32> {
    ^bb0(%0: f32, %1: f32):
      %2 = arith.mulf %0, %1 : f32
      rdu.yield %2 : f32
    }
    %sub_4 = rdu.map %mul_6 {rdu.phase = #rdu<phase backward>} : (tensor<4x8xf32>) -> tensor<4x8xf32> {
    ^bb0(%0: f32):
      %1 = arith.constant 1.000000e+00 : f32
      %2 = arith.subf %1, %0 : f32
      rdu.yield %2 : f32
    }
    %mul_7 = rdu.map %add_4, %sub_4 {rdu.phase = #rdu<phase backward>} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32> {
    ^bb0(%0: f32, %1: f32):
      %2 = arith.mulf %0, %1 : f32
      rdu.yield %2 : f32
    }
    %permute_11 = rdu.transpose %mul_7 perm [1, 0] {rdu.phase = #rdu<phase backward>} : tensor<4x8xf32> -> tensor<8x4xf32>
    %mm_7 = rdu.matmul %permute_11, %inputs {rdu.phase = #rdu<phase backward>} : tensor<8x4xf32>, tensor<4x8xf32> -> tensor<8x8xf32>
    %permute_12 = rdu.transpose %mm_7 perm [1, 0] {rdu.phase = #rdu<phase backward>} : tensor<8x8xf32> -> tensor<8x8xf32>
    %permute_13 = rdu.transpose %permute_12 perm [1, 0] {rdu.phase = #rdu<phase backward>} : tensor<8x8xf32> -> tensor<8x8xf32>
    %add_5 = rdu.map %p_model_layers_0_fc_weight, %permute_13 {rdu.phase = #rdu<phase optimizer>} : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32> {
    ^bb0(%0: f32, %1: f32):
      %2 = arith.constant -1.000000e-01 : f32
      %3 = arith.mulf %1, %2 : f32
      %4 = arith.addf %0, %3 : f32
      rdu.yield %4 : f32
    }
    %add_6 = rdu.map %p_model_layers_1_fc_weight, %permute_10 {rdu.phase = #rdu<phase optimizer>} : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32> {
    ^bb0(%0: f32, %1: f32):
      %2 = arith.constant -1.000000e-01 : f32
      %3 = arith.mulf %1, %2 : f32
      %4 = arith.addf %0, %3 : f32
      rdu.yield %4 : f32
    }
    %add_7 = rdu.map %p_model_layers_2_fc_weight, %permute_6 {rdu.phase = #rdu<phase optimizer>} : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32> {
    ^bb0(%0: f32, %1: f32):
      %2 = arith.constant -1.000000e-01 : f32
      %3 = arith.mulf %1, %2 : f32
      %4 = arith.addf %0, %3 : f32
      rdu.yield %4 : f32
    }
    func.return %mean_1, %add_5, %add_6, %add_7 : tensor<f32>, tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>
  }
}
