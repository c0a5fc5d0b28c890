// A training step of two residual tanh layers (no bias) that runs its batch of 4
// in 2 microbatches itself (compile_training(..., microbatches=2):
// rdu.microbatches = 2, each microbatch a slice of the input), as rducc imports
// torch's joint graph. Each phase repeats once a layer and once a microbatch;
// the microbatch's period (whose slices differ) must not hide the layers: the
// phases are cut microbatch by microbatch, so @layer_forward is called once a
// layer and microbatch (4 calls), the backward's second layer once a microbatch
// (the first layer computes no input gradient and stays inline), and the
// gradients' sums over the microbatches come after the backward's calls.
// RUN: rducc-opt --check-roundtrip -p 'rdu-outline-layers{training=always}' %s | filecheck %s
// A step whose slices do not make the microbatches it claims is one error line.
// RUN: sed 's/rdu.microbatches = 2/rdu.microbatches = 3/' %s | not rducc-opt -p 'rdu-outline-layers{training=always}' 2>&1 | filecheck %s --check-prefix=ERR

// CHECK:      %slice = rdu.slice %inputs offsets [0, 0]
// CHECK-NEXT: func.call @layer_forward(%slice, %p_model_layers_0_weight) {rdu.layer = "forward.layers.0"
// CHECK-NEXT: func.call @layer_forward(%add, %p_model_layers_1_weight) {rdu.layer = "forward.layers.1"
// CHECK:      %slice_1 = rdu.slice %inputs offsets [2, 0]
// CHECK-NEXT: func.call @layer_forward(%slice_1, %p_model_layers_0_weight) {rdu.layer = "forward.layers.2"
// CHECK-NEXT: func.call @layer_forward(%add_2, %p_model_layers_1_weight) {rdu.layer = "forward.layers.3"
// CHECK:      func.call @layer_backward({{.*}}, %slice_1) {rdu.layer = "backward.layers.0"
// CHECK-NEXT: func.call @layer_backward({{.*}}, %slice) {rdu.layer = "backward.layers.1"
// CHECK:      func.call @layer_optimizer
// CHECK:      func.func private @layer_optimizer({{.*}}rdu.calls = 2 : i64
// CHECK:      func.func private @layer_backward({{.*}}rdu.calls = 2 : i64
// CHECK:      func.func private @layer_forward({{.*}}rdu.calls = 4 : i64

// ERR-NOT: Traceback
// ERR:     rducc-opt: error: rdu-outline-layers: the step runs 3 microbatches (rdu.microbatches), but its ops slice the batched inputs into parts []

builtin.module attributes {rdu.level = #rdu<level graph>, rdu.microbatches = 2 : i64, rdu.target = #rdu.target<{name = "sn40l", sockets = 1, pcus = 1040, pmus = 1040, lanes = 32, peak_flops_bf16 = 638000000000000.0, peak_flops_f32 = 159500000000000.0, peak_flops_int = 159500000000000.0, sram_bytes = 520000000, pmu_bytes = 500000, sram_bandwidth = 426000000000000.0, hbm_bytes = 64000000000, hbm_bandwidth = 1600000000000.0, ddr_bytes = 1500000000000, ddr_bandwidth = 100000000000.0, dma_latency_s = 2.0e-07, kernel_launch_s = 1.0e-06, link_bandwidth = 100000000000.0, link_latency_s = 3.0e-07, module_sockets = 2, cross_module_hops = 2, models_in_host_memory = false, kernel_looping = true, fabric_rows = 40, fabric_cols = 52, pcu_stages = 6, stage_latency_s = 6.25e-09, hop_latency_s = 6.25e-10, reconfigure_s = 5.0e-06, hbm_efficiency = 0.95, ddr_efficiency = 1.0, compute_efficiency = 0.85, pcu_feed_bandwidth = 204800000000.0, host_link_bandwidth = 32000000000.0, host_latency_s = 5.0e-05, host_bandwidth = 5000000000.0, source = "sn40l"}, hash = "181bb4069c8cd7a0">} {
  tier.global @model.layers.0.weight : tensor<4x4xf32> {kind = "parameter"}
  tier.global @model.layers.1.weight : tensor<4x4xf32> {kind = "parameter"}
  func.func @forward(%inputs: tensor<4x4xf32> {rdu.input = "inputs_0"}, %p_model_layers_0_weight: tensor<4x4xf32> {rdu.global = @model.layers.0.weight}, %p_model_layers_1_weight: tensor<4x4xf32> {rdu.global = @model.layers.1.weight}) -> (tensor<f32>, tensor<4x4xf32>, tensor<4x4xf32>) attributes {rdu.result_roles = ["loss", "", ""], rdu.result_updates = ["", "buffer:model.layers.0.weight", "buffer:model.layers.1.weight"]} {
    %slice = rdu.slice %inputs offsets [0, 0] strides [1, 1] {rdu.phase = #rdu<phase forward>} : tensor<4x4xf32> -> tensor<2x4xf32>
    %mm = rdu.matmul %slice, %p_model_layers_0_weight transpose_rhs {rdu.phase = #rdu<phase forward>} : tensor<2x4xf32>, tensor<4x4xf32> -> tensor<2x4xf32>
    %tanh = rdu.map %mm {rdu.phase = #rdu<phase forward>} : (tensor<2x4xf32>) -> tensor<2x4xf32> {
    ^bb0(%0: f32):
      %1 = math.tanh %0 : f32
      rdu.yield %1 : f32
    }
    %add = rdu.map %slice, %tanh {rdu.phase = #rdu<phase forward>} : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32> {
    ^bb0(%0: f32, %1: f32):
      %2 = arith.addf %0, %1 : f32
      rdu.yield %2 : f32
    }
    %mm_1 = rdu.matmul %add, %p_model_layers_1_weight transpose_rhs {rdu.phase = #rdu<phase forward>} : tensor<2x4xf32>, tensor<4x4xf32> -> tensor<2x4xf32>
    %tanh_1 = rdu.map %mm_1 {rdu.phase = #rdu<phase forward>} : (tensor<2x4xf32>) -> tensor<2x4xf32> {
    ^bb0(%0: f32):
      %1 = math.tanh %0 : f32
      rdu.yield %1 : f32
    }
    %add_1 = rdu.map %add, %tanh_1 {rdu.phase = #rdu<phase forward>} : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32> {
    ^bb0(%0: f32, %1: f32):
      %2 = arith.addf %0, %1 : f32
      rdu.yield %2 : f32
    }
    %sum = rdu.reduce sum %add_1 dims [0, 1] {rdu.phase = #rdu<phase forward>} : tensor<2x4xf32> -> tensor<f32>
    %div = rdu.map %sum {rdu.phase = #rdu<phase forward>} : (tensor<f32>) -> tensor<f32> {
    ^bb0(%0: f32):
      %1 = arith.constant 2.000000e+00 : f32
      %2 = arith.divf %0, %1 : f32
      rdu.yield %2 : f32
    }
    %slice_1 = rdu.slice %inputs offsets [2, 0] strides [1, 1] {rdu.phase = #rdu<phase forward>} : tensor<4x4xf32> -> tensor<2x4xf32>
    %mm_2 = rdu.matmul %slice_1, %p_model_layers_0_weight transpose_rhs {rdu.phase = #rdu<phase forward>} : tensor<2x4xf32>, tensor<4x4xf32> -> tensor<2x4xf32>
    %tanh_2 = rdu.map %mm_2 {rdu.phase = #rdu<phase forward>} : (tensor<2x4xf32>) -> tensor<2x4xf32> {
    ^bb0(%0: f32):
      %1 = math.tanh %0 : f32
      rdu.yield %1 : f32
    }
    %add_2 = rdu.map %slice_1, %tanh_2 {rdu.phase = #rdu<phase forward>} : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32> {
    ^bb0(%0: f32, %1: f32):
      %2 = arith.addf %0, %1 : f32
      rdu.yield %2 : f32
    }
    %mm_3 = rdu.matmul %add_2, %p_model_layers_1_weight transpose_rhs {rdu.phase = #rdu<phase forward>} : tensor<2x4xf32>, tensor<4x4xf32> -> tensor<2x4xf32>
    %tanh_3 = rdu.map %mm_3 {rdu.phase = #rdu<phase forward>} : (tensor<2x4xf32>) -> tensor<2x4xf32> {
    ^bb0(%0: f32):
      %1 = math.tanh %0 : f32
      rdu.yield %1 : f32
    }
    %add_3 = rdu.map %add_2, %tanh_3 {rdu.phase = #rdu<phase forward>} : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32> {
    ^bb0(%0: f32, %1: f32):
      %2 = arith.addf %0, %1 : f32
      rdu.yield %2 : f32
    }
    %sum_1 = rdu.reduce sum %add_3 dims [0, 1] {rdu.phase = #rdu<phase forward>} : tensor<2x4xf32> -> tensor<f32>
    %div_1 = rdu.map %sum_1 {rdu.phase = #rdu<phase forward>} : (tensor<f32>) -> tensor<f32> {
    ^bb0(%0: f32):
      %1 = arith.constant 2.000000e+00 : f32
      %2 = arith.divf %0, %1 : f32
      rdu.yield %2 : f32
    }
    %add_4 = rdu.map %div, %div_1 {rdu.phase = #rdu<phase forward>} : (tensor<f32>, tensor<f32>) -> tensor<f32> {
    ^bb0(%0: f32, %1: f32):
      %2 = arith.addf %0, %1 : f32
      rdu.yield %2 : f32
    }
    %div_2 = rdu.map {rdu.phase = #rdu<phase backward>} : () -> tensor<f32> {
      %0 = arith.constant 1.000000e+00 : f32
      %1 = arith.constant 2.000000e+00 : f32
      %2 = arith.divf %0, %1 : f32
      rdu.yield %2 : f32
    }
    %expand = rdu.broadcast %div_2 {rdu.phase = #rdu<phase backward>} : tensor<f32> -> tensor<2x4xf32>
    %mul = rdu.map %tanh_3, %tanh_3 {rdu.phase = #rdu<phase backward>} : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32> {
    ^bb0(%0: f32, %1: f32):
      %2 = arith.mulf %0, %1 : f32
      rdu.yield %2 : f32
    }
    %sub = rdu.map %mul {rdu.phase = #rdu<phase backward>} : (tensor<2x4xf32>) -> tensor<2x4xf32> {
    ^bb0(%0: f32):
      %1 = arith.constant 1.000000e+00 : f32
      %2 = arith.subf %1, %0 : f32
      rdu.yield %2 : f32
    }
    %mul_1 = rdu.map %expand, %sub {rdu.phase = #rdu<phase backward>} : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32> {
    ^bb0(%0: f32, %1: f32):
      %2 = arith.mulf %0, %1 : f32
      rdu.yield %2 : f32
    }
    %permute = rdu.transpose %mul_1 perm [1, 0] {rdu.phase = #rdu<phase backward>} : tensor<2x4xf32> -> tensor<4x2xf32>
    %mm_4 = rdu.matmul %permute, %add_2 {rdu.phase = #rdu<phase backward>} : tensor<4x2xf32>, tensor<2x4xf32> -> tensor<4x4xf32>
    %mm_5 = rdu.matmul %mul_1, %p_model_layers_1_weight {rdu.phase = #rdu<phase backward>} : tensor<2x4xf32>, tensor<4x4xf32> -> tensor<2x4xf32>
    %add_5 = rdu.map %expand, %mm_5 {rdu.phase = #rdu<phase backward>} : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32> {
    ^bb0(%0: f32, %1: f32):
      %2 = arith.addf %0, %1 : f32
      rdu.yield %2 : f32
    }
    %mul_2 = rdu.map %tanh_2, %tanh_2 {rdu.phase = #rdu<phase backward>} : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32> {
    ^bb0(%0: f32, %1: f32):
      %2 = arith.mulf %0, %1 : f32
      rdu.yield %2 : f32
    }
    %sub_1 = rdu.map %mul_2 {rdu.phase = #rdu<phase backward>} : (tensor<2x4xf32>) -> tensor<2x4xf32> {
    ^bb0(%0: f32):
      %1 = arith.constant 1.000000e+00 : f32
      %2 = arith.subf %1, %0 : f32
      rdu.yield %2 : f32
    }
    %mul_3 = rdu.map %add_5, %sub_1 {rdu.phase = #rdu<phase backward>} : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32> {
    ^bb0(%0: f32, %1: f32):
      %2 = arith.mulf %0, %1 : f32
      rdu.yield %2 : f32
    }
    %permute_1 = rdu.transpose %mul_3 perm [1, 0] {rdu.phase = #rdu<phase backward>} : tensor<2x4xf32> -> tensor<4x2xf32>
    %mm_6 = rdu.matmul %permute_1, %slice_1 {rdu.phase = #rdu<phase backward>} : tensor<4x2xf32>, tensor<2x4xf32> -> tensor<4x4xf32>
    %div_3 = rdu.map {rdu.phase = #rdu<phase backward>} : () -> tensor<f32> {
      %0 = arith.constant 1.000000e+00 : f32
      %1 = arith.constant 2.000000e+00 : f32
      %2 = arith.divf %0, %1 : f32
      rdu.yield %2 : f32
    }
    %expand_1 = rdu.broadcast %div_3 {rdu.phase = #rdu<phase backward>} : tensor<f32> -> tensor<2x4xf32>
    %mul_4 = rdu.map %tanh_1, %tanh_1 {rdu.phase = #rdu<phase backward>} : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32> {
    ^bb0(%0: f32, %1: f32):
      %2 = arith.mulf %0, %1 : f32
      rdu.yield %2 : f32
    }
    %sub_2 = rdu.map %mul_4 {rdu.phase = #rdu<phase backward>} : (tensor<2x4xf32>) -> tensor<2x4xf32> {
    ^bb0(%0: f32):
      %1 = arith.constant 1.000000e+00 : f32
      %2 = arith.subf %1, %0 : f32
      rdu.yield %2 : f32
    }
    %mul_5 = rdu.map %expand_1, %sub_2 {rdu.phase = #rdu<phase backward>} : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32> {
    ^bb0(%0: f32, %1: f32):
      %2 = arith.mulf %0, %1 : f32
      rdu.yield %2 : f32
    }
    %permute_2 = rdu.transpose %mul_5 perm [1, 0] {rdu.phase = #rdu<phase backward>} : tensor<2x4xf32> -> tensor<4x2xf32>
    %mm_7 = rdu.matmul %permute_2, %add {rdu.phase = #rdu<phase backward>} : tensor<4x2xf32>, tensor<2x4xf32> -> tensor<4x4xf32>
    %mm_8 = rdu.matmul %mul_5, %p_model_layers_1_weight {rdu.phase = #rdu<phase backward>} : tensor<2x4xf32>, tensor<4x4xf32> -> tensor<2x4xf32>
    %add_6 = rdu.map %expand_1, %mm_8 {rdu.phase = #rdu<phase backward>} : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32> {
    ^bb0(%0: f32, %1: f32):
      %2 = arith.addf %0, %1 : f32
      rdu.yield %2 : f32
    }
    %add_7 = rdu.map %mm_4, %mm_7 {rdu.phase = #rdu<phase backward>} : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32> {
    ^bb0(%0: f32, %1: f32):
      %2 = arith.addf %0, %1 : f32
      rdu.yield %2 : f32
    }
    %mul_6 = rdu.map %tanh, %tanh {rdu.phase = #rdu<phase backward>} : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32> {
    ^bb0(%0: f32, %1: f32):
      %2 = arith.mulf %0, %1 : f32
      rdu.yield %2 : f32
    }
    %sub_3 = rdu.map %mul_6 {rdu.phase = #rdu<phase backward>} : (tensor<2x4xf32>) -> tensor<2x4xf32> {
    ^bb0(%0: f32):
      %1 = arith.constant 1.000000e+00 : f32
      %2 = arith.subf %1, %0 : f32
      rdu.yield %2 : f32
    }
    %mul_7 = rdu.map %add_6, %sub_3 {rdu.phase = #rdu<phase backward>} : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32> {
    ^bb0(%0: f32, %1: f32):
      %2 = arith.mulf %0, %1 : f32
      rdu.yield %2 : f32
    }
    %permute_3 = rdu.transpose %mul_7 perm [1, 0] {rdu.phase = #rdu<phase backward>} : tensor<2x4xf32> -> tensor<4x2xf32>
    %mm_9 = rdu.matmul %permute_3, %slice {rdu.phase = #rdu<phase backward>} : tensor<4x2xf32>, tensor<2x4xf32> -> tensor<4x4xf32>
    %add_8 = rdu.map %mm_6, %mm_9 {rdu.phase = #rdu<phase backward>} : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32> {
    ^bb0(%0: f32, %1: f32):
      %2 = arith.addf %0, %1 : f32
      rdu.yield %2 : f32
    }
    %add_9 = rdu.map %p_model_layers_0_weight, %add_8 {rdu.phase = #rdu<phase optimizer>} : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32> {
    ^bb0(%0: f32, %1: f32):
      %2 = arith.constant -1.000000e-01 : f32
      %3 = arith.mulf %1, %2 : f32
      %4 = arith.addf %0, %3 : f32
      rdu.yield %4 : f32
    }
    %add_10 = rdu.map %p_model_layers_1_weight, %add_7 {rdu.phase = #rdu<phase optimizer>} : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32> {
    ^bb0(%0: f32, %1: f32):
      %2 = arith.constant -1.000000e-01 : f32
      %3 = arith.mulf %1, %2 : f32
      %4 = arith.addf %0, %3 : f32
      rdu.yield %4 : f32
    }
    func.return %add_4, %add_9, %add_10 : tensor<f32>, tensor<4x4xf32>, tensor<4x4xf32>
  }
}