// ZeRO stage 3 prefetch: each parameter's all-gather whose first reader is a call of
// an outlined layer runs one layer call early, before the previous call of its phase,
// so that the links gather layer 1's weights while layer 0 computes (the cost model's
// schedule runs a layer call beside a collective it does not read). The step: two
// gated residual blocks outlined (@layer_forward called twice), SGD with momentum,
// batch 2 (`rdu-canonicalize,rdu-outline-layers{training=always},cse` of
// test_place_saved.py's GatedStack). Layer 0's weights are gathered first (nothing runs
// before it), then layer 1's, then the two calls; each call reads its own gathers.
// This step's backward reads the weights inline (no layer call), so those gathers stay
// before their readers. ZeRO without replicas is refused.
// RUN: rducc-opt --check-roundtrip -p 'rdu-partition{dp=2 zero=3 target=sn40l-8}' %s | filecheck %s
// RUN: rducc-opt -p 'rdu-partition{dp=2 zero=2 target=sn40l-8}' %s | filecheck %s --check-prefix=STAGE2
// RUN: not rducc-opt -p 'rdu-partition{tp=2 zero=3 target=sn40l-8}' %s 2>&1 | filecheck %s --check-prefix=ERR

// CHECK:      %[[N0:.*]] = rdu.all_gather %p_blocks_0_norm_weight dim 0 group 2
// CHECK:      %[[U0:.*]] = rdu.all_gather %p_blocks_0_up_weight dim 0 group 2
// CHECK-NEXT: %[[N1:.*]] = rdu.all_gather %p_blocks_1_norm_weight dim 0 group 2 {rdu.layer = "forward.layers.1", rdu.phase = #rdu<phase forward>}
// CHECK:      %[[U1:.*]] = rdu.all_gather %p_blocks_1_up_weight dim 0 group 2
// CHECK-NEXT: func.call @layer_forward(%x, %[[N0]], {{.*}}, %[[U0]])
// CHECK-NEXT: func.call @layer_forward(%add, %[[N1]], {{.*}}, %[[U1]])
// CHECK:      func.call @layer_backward
// CHECK:      rdu.all_gather %p_blocks_1_up_weight dim 0 group 2 {rdu.phase = #rdu<phase backward>}
// CHECK-NEXT: rdu.matmul

// Stage 2 holds the parameters whole: nothing is gathered before the calls.
// STAGE2-NOT:  rdu.all_gather %p_blocks
// STAGE2:      func.call @layer_forward(%x, %p_blocks_0_norm_weight

// ERR: zero shards the optimizer state over the data-parallel replicas

builtin.module attributes {rdu.level = #rdu<level graph>, rdu.target = #rdu.target<{name = "sn40l", sockets = 1, pcus = 1040, pmus = 1040, lanes = 32, peak_flops_bf16 = 638000000000000.0, peak_flops_f32 = 159500000000000.0, peak_flops_int = 159500000000000.0, sram_bytes = 520000000, pmu_bytes = 500000, sram_bandwidth = 426000000000000.0, hbm_bytes = 64000000000, hbm_bandwidth = 1600000000000.0, ddr_bytes = 1500000000000, ddr_bandwidth = 100000000000.0, dma_latency_s = 2.0e-07, kernel_launch_s = 1.0e-06, link_bandwidth = 100000000000.0, link_latency_s = 3.0e-07, module_sockets = 2, cross_module_hops = 2, models_in_host_memory = false, kernel_looping = true, fabric_rows = 40, fabric_cols = 52, pcu_stages = 6, stage_latency_s = 6.25e-09, hop_latency_s = 6.25e-10, reconfigure_s = 5.0e-06, hbm_efficiency = 0.95, ddr_efficiency = 1.0, compute_efficiency = 0.85, pcu_feed_bandwidth = 204800000000.0, host_link_bandwidth = 32000000000.0, host_latency_s = 5.0e-05, host_bandwidth = 5000000000.0, source = "sn40l"}, hash = "181bb4069c8cd7a0">} {
  tier.global @blocks.0.norm.weight : tensor<64xf32> {kind = "parameter"}
  tier.global @blocks.0.norm.bias : tensor<64xf32> {kind = "parameter"}
  tier.global @blocks.0.gate.weight : tensor<64x64xf32> {kind = "parameter"}
  tier.global @blocks.0.gate.bias : tensor<64xf32> {kind = "parameter"}
  tier.global @blocks.0.up.weight : tensor<64x64xf32> {kind = "parameter"}
  tier.global @blocks.1.norm.weight : tensor<64xf32> {kind = "parameter"}
  tier.global @blocks.1.norm.bias : tensor<64xf32> {kind = "parameter"}
  tier.global @blocks.1.gate.weight : tensor<64x64xf32> {kind = "parameter"}
  tier.global @blocks.1.gate.bias : tensor<64xf32> {kind = "parameter"}
  tier.global @blocks.1.up.weight : tensor<64x64xf32> {kind = "parameter"}
  tier.global @optimizer.momentum_buffer.blocks.0.norm.weight : tensor<64xf32> {kind = "buffer"}
  tier.global @optimizer.momentum_buffer.blocks.0.norm.bias : tensor<64xf32> {kind = "buffer"}
  tier.global @optimizer.momentum_buffer.blocks.0.gate.weight : tensor<64x64xf32> {kind = "buffer"}
  tier.global @optimizer.momentum_buffer.blocks.0.gate.bias : tensor<64xf32> {kind = "buffer"}
  tier.global @optimizer.momentum_buffer.blocks.0.up.weight : tensor<64x64xf32> {kind = "buffer"}
  tier.global @optimizer.momentum_buffer.blocks.1.norm.weight : tensor<64xf32> {kind = "buffer"}
  tier.global @optimizer.momentum_buffer.blocks.1.norm.bias : tensor<64xf32> {kind = "buffer"}
  tier.global @optimizer.momentum_buffer.blocks.1.gate.weight : tensor<64x64xf32> {kind = "buffer"}
  tier.global @optimizer.momentum_buffer.blocks.1.gate.bias : tensor<64xf32> {kind = "buffer"}
  tier.global @optimizer.momentum_buffer.blocks.1.up.weight : tensor<64x64xf32> {kind = "buffer"}
  func.func @forward(%x: tensor<2x8x64xf32> {rdu.input = "x"}, %p_blocks_0_norm_weight: tensor<64xf32> {rdu.global = @blocks.0.norm.weight}, %p_blocks_0_norm_bias: tensor<64xf32> {rdu.global = @blocks.0.norm.bias}, %p_blocks_0_gate_weight: tensor<64x64xf32> {rdu.global = @blocks.0.gate.weight}, %p_blocks_0_gate_bias: tensor<64xf32> {rdu.global = @blocks.0.gate.bias}, %p_blocks_0_up_weight: tensor<64x64xf32> {rdu.global = @blocks.0.up.weight}, %p_blocks_1_norm_weight: tensor<64xf32> {rdu.global = @blocks.1.norm.weight}, %p_blocks_1_norm_bias: tensor<64xf32> {rdu.global = @blocks.1.norm.bias}, %p_blocks_1_gate_weight: tensor<64x64xf32> {rdu.global = @blocks.1.gate.weight}, %p_blocks_1_gate_bias: tensor<64xf32> {rdu.global = @blocks.1.gate.bias}, %p_blocks_1_up_weight: tensor<64x64xf32> {rdu.global = @blocks.1.up.weight}, %0: tensor<64xf32> {rdu.global = @optimizer.momentum_buffer.blocks.0.norm.weight}, %1: tensor<64xf32> {rdu.global = @optimizer.momentum_buffer.blocks.0.norm.bias}, %2: tensor<64x64xf32> {rdu.global = @optimizer.momentum_buffer.blocks.0.gate.weight}, %3: tensor<64xf32> {rdu.global = @optimizer.momentum_buffer.blocks.0.gate.bias}, %4: tensor<64x64xf32> {rdu.global = @optimizer.momentum_buffer.blocks.0.up.weight}, %5: tensor<64xf32> {rdu.global = @optimizer.momentum_buffer.blocks.1.norm.weight}, %6: tensor<64xf32> {rdu.global = @optimizer.momentum_buffer.blocks.1.norm.bias}, %7: tensor<64x64xf32> {rdu.global = @optimizer.momentum_buffer.blocks.1.gate.weight}, %8: tensor<64xf32> {rdu.global = @optimizer.momentum_buffer.blocks.1.gate.bias}, %9: tensor<64x64xf32> {rdu.global = @optimizer.momentum_buffer.blocks.1.up.weight}) -> (tensor<f32>, tensor<64xf32>, tensor<64xf32>, tensor<64x64xf32>, tensor<64xf32>, tensor<64x64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64x64xf32>, tensor<64xf32>, tensor<64x64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64x64xf32>, tensor<64xf32>, tensor<64x64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64x64xf32>, tensor<64xf32>, tensor<64x64xf32>) attributes {rdu.result_roles = ["loss", "", "", "", "", "", "", "", "", "", "", "", "", "", "", "", "", "", "", "", ""], rdu.result_updates = ["", "buffer:blocks.0.norm.weight", "buffer:blocks.0.norm.bias", "buffer:blocks.0.gate.weight", "buffer:blocks.0.gate.bias", "buffer:blocks.0.up.weight", "buffer:blocks.1.norm.weight", "buffer:blocks.1.norm.bias", "buffer:blocks.1.gate.weight", "buffer:blocks.1.gate.bias", "buffer:blocks.1.up.weight", "buffer:optimizer.momentum_buffer.blocks.0.norm.weight", "buffer:optimizer.momentum_buffer.blocks.0.norm.bias", "buffer:optimizer.momentum_buffer.blocks.0.gate.weight", "buffer:optimizer.momentum_buffer.blocks.0.gate.bias", "buffer:optimizer.momentum_buffer.blocks.0.up.weight", "buffer:optimizer.momentum_buffer.blocks.1.norm.weight", "buffer:optimizer.momentum_buffer.blocks.1.norm.bias", "buffer:optimizer.momentum_buffer.blocks.1.gate.weight", "buffer:optimizer.momentum_buffer.blocks.1.gate.bias", "buffer:optimizer.momentum_buffer.blocks.1.up.weight"]} {
    %native_layer_norm, %native_layer_norm_1, %view, %sigmoid, %view_1, %view_2, %add = func.call @layer_forward(%x, %p_blocks_0_norm_weight, %p_blocks_0_norm_bias, %p_blocks_0_gate_weight, %p_blocks_0_gate_bias, %p_blocks_0_up_weight) {rdu.layer = "forward.layers.0", rdu.phase = #rdu<phase forward>} : (tensor<2x8x64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64x64xf32>, tensor<64xf32>, tensor<64x64xf32>) -> (tensor<2x8x1xf32>, tensor<2x8x1xf32>, tensor<16x64xf32>, tensor<2x8x64xf32>, tensor<16x64xf32>, tensor<2x8x64xf32>, tensor<2x8x64xf32>)
    %native_layer_norm_2, %native_layer_norm_3, %view_3, %sigmoid_1, %view_4, %view_5, %add_1 = func.call @layer_forward(%add, %p_blocks_1_norm_weight, %p_blocks_1_norm_bias, %p_blocks_1_gate_weight, %p_blocks_1_gate_bias, %p_blocks_1_up_weight) {rdu.layer = "forward.layers.1", rdu.phase = #rdu<phase forward>} : (tensor<2x8x64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64x64xf32>, tensor<64xf32>, tensor<64x64xf32>) -> (tensor<2x8x1xf32>, tensor<2x8x1xf32>, tensor<16x64xf32>, tensor<2x8x64xf32>, tensor<16x64xf32>, tensor<2x8x64xf32>, tensor<2x8x64xf32>)
    %pow = rdu.map %add_1 {rdu.phase = #rdu<phase forward>} : (tensor<2x8x64xf32>) -> tensor<2x8x64xf32> {
    ^bb0(%10: f32):
      %11 = arith.constant 1.000000e+00 : f32
      %12 = arith.mulf %11, %10 : f32
      %13 = arith.mulf %12, %10 : f32
      rdu.yield %13 : f32
    }
    %mean = rdu.reduce sum %pow dims [0, 1, 2] {rdu.phase = #rdu<phase forward>} : tensor<2x8x64xf32> -> tensor<f32>
    %mean_1 = rdu.map %mean {rdu.phase = #rdu<phase forward>} : (tensor<f32>) -> tensor<f32> {
    ^bb0(%10: f32):
      %11 = arith.constant 1.024000e+03 : f32
      %12 = arith.divf %10, %11 : f32
      rdu.yield %12 : f32
    }
    %div = rdu.map {rdu.phase = #rdu<phase backward>} : () -> tensor<2x8x64xf32> {
      %10 = arith.constant 1.000000e+00 : f32
      %11 = arith.constant 1.024000e+03 : f32
      %12 = arith.divf %10, %11 : f32
      rdu.yield %12 : f32
    }
    %pow_1 = rdu.map %add_1 {rdu.phase = #rdu<phase backward>} : (tensor<2x8x64xf32>) -> tensor<2x8x64xf32> {
    ^bb0(%10: f32):
      %11 = arith.constant 1.000000e+00 : f32
      %12 = arith.mulf %11, %10 : f32
      rdu.yield %12 : f32
    }
    %mul = rdu.map %pow_1 {rdu.phase = #rdu<phase backward>} : (tensor<2x8x64xf32>) -> tensor<2x8x64xf32> {
    ^bb0(%10: f32):
      %11 = arith.constant 2.000000e+00 : f32
      %12 = arith.mulf %10, %11 : f32
      rdu.yield %12 : f32
    }
    %mul_1 = rdu.map %div, %mul {rdu.phase = #rdu<phase backward>} : (tensor<2x8x64xf32>, tensor<2x8x64xf32>) -> tensor<2x8x64xf32> {
    ^bb0(%10: f32, %11: f32):
      %12 = arith.mulf %10, %11 : f32
      rdu.yield %12 : f32
    }
    %mul_2 = func.call @layer_backward(%mul_1, %sigmoid_1) {rdu.layer = "backward.layers.1", rdu.phase = #rdu<phase backward>} : (tensor<2x8x64xf32>, tensor<2x8x64xf32>) -> tensor<2x8x64xf32>
    %mul_3 = func.call @layer_backward(%mul_1, %view_5) {rdu.layer = "backward.layers.2", rdu.phase = #rdu<phase backward>} : (tensor<2x8x64xf32>, tensor<2x8x64xf32>) -> tensor<2x8x64xf32>
    %view_6 = rdu.reshape %mul_2 {rdu.phase = #rdu<phase backward>} : tensor<2x8x64xf32> -> tensor<16x64xf32>
    %permute = rdu.transpose %view_6 perm [1, 0] {rdu.phase = #rdu<phase backward>} : tensor<16x64xf32> -> tensor<64x16xf32>
    %mm = rdu.matmul %permute, %view_4 {rdu.phase = #rdu<phase backward>} : tensor<64x16xf32>, tensor<16x64xf32> -> tensor<64x64xf32>
    %mm_1 = rdu.matmul %view_6, %p_blocks_1_up_weight {rdu.phase = #rdu<phase backward>} : tensor<16x64xf32>, tensor<64x64xf32> -> tensor<16x64xf32>
    %view_7 = rdu.reshape %mm_1 {rdu.phase = #rdu<phase backward>} : tensor<16x64xf32> -> tensor<2x8x64xf32>
    %sub = rdu.map %sigmoid_1 {rdu.phase = #rdu<phase backward>} : (tensor<2x8x64xf32>) -> tensor<2x8x64xf32> {
    ^bb0(%10: f32):
      %11 = arith.constant 1.000000e+00 : f32
      %12 = arith.subf %11, %10 : f32
      rdu.yield %12 : f32
    }
    %mul_4 = rdu.map %sigmoid_1, %sub {rdu.phase = #rdu<phase backward>} : (tensor<2x8x64xf32>, tensor<2x8x64xf32>) -> tensor<2x8x64xf32> {
    ^bb0(%10: f32, %11: f32):
      %12 = arith.mulf %10, %11 : f32
      rdu.yield %12 : f32
    }
    %mul_5 = rdu.map %mul_3, %mul_4 {rdu.phase = #rdu<phase backward>} : (tensor<2x8x64xf32>, tensor<2x8x64xf32>) -> tensor<2x8x64xf32> {
    ^bb0(%10: f32, %11: f32):
      %12 = arith.mulf %10, %11 : f32
      rdu.yield %12 : f32
    }
    %view_8 = rdu.reshape %mul_5 {rdu.phase = #rdu<phase backward>} : tensor<2x8x64xf32> -> tensor<16x64xf32>
    %mm_2 = rdu.matmul %view_8, %p_blocks_1_gate_weight {rdu.phase = #rdu<phase backward>} : tensor<16x64xf32>, tensor<64x64xf32> -> tensor<16x64xf32>
    %permute_1 = rdu.transpose %view_8 perm [1, 0] {rdu.phase = #rdu<phase backward>} : tensor<16x64xf32> -> tensor<64x16xf32>
    %mm_3 = rdu.matmul %permute_1, %view_3 {rdu.phase = #rdu<phase backward>} : tensor<64x16xf32>, tensor<16x64xf32> -> tensor<64x64xf32>
    %sum = rdu.reduce sum %view_8 dims [0] keepdim {rdu.phase = #rdu<phase backward>} : tensor<16x64xf32> -> tensor<1x64xf32>
    %view_9 = rdu.reshape %sum {rdu.phase = #rdu<phase backward>} : tensor<1x64xf32> -> tensor<64xf32>
    %view_10 = rdu.reshape %mm_2 {rdu.phase = #rdu<phase backward>} : tensor<16x64xf32> -> tensor<2x8x64xf32>
    %add_2 = rdu.map %view_7, %view_10 {rdu.phase = #rdu<phase backward>} : (tensor<2x8x64xf32>, tensor<2x8x64xf32>) -> tensor<2x8x64xf32> {
    ^bb0(%10: f32, %11: f32):
      %12 = arith.addf %10, %11 : f32
      rdu.yield %12 : f32
    }
    %sub_1 = rdu.map %add, %native_layer_norm_2 {rdu.phase = #rdu<phase backward>} : (tensor<2x8x64xf32>, tensor<2x8x1xf32>) -> tensor<2x8x64xf32> {
    ^bb0(%10: f32, %11: f32):
      %12 = arith.subf %10, %11 : f32
      rdu.yield %12 : f32
    }
    %mul_6 = rdu.map %sub_1, %native_layer_norm_3 {rdu.phase = #rdu<phase backward>} : (tensor<2x8x64xf32>, tensor<2x8x1xf32>) -> tensor<2x8x64xf32> {
    ^bb0(%10: f32, %11: f32):
      %12 = arith.mulf %10, %11 : f32
      rdu.yield %12 : f32
    }
    %mul_7 = rdu.map %add_2, %p_blocks_1_norm_weight {rdu.phase = #rdu<phase backward>} : (tensor<2x8x64xf32>, tensor<64xf32>) -> tensor<2x8x64xf32> {
    ^bb0(%10: f32, %11: f32):
      %12 = arith.mulf %10, %11 : f32
      rdu.yield %12 : f32
    }
    %mul_8 = rdu.map %mul_7 {rdu.phase = #rdu<phase backward>} : (tensor<2x8x64xf32>) -> tensor<2x8x64xf32> {
    ^bb0(%10: f32):
      %11 = arith.constant 6.400000e+01 : f32
      %12 = arith.mulf %10, %11 : f32
      rdu.yield %12 : f32
    }
    %sum_1 = rdu.reduce sum %mul_7 dims [2] keepdim {rdu.phase = #rdu<phase backward>} : tensor<2x8x64xf32> -> tensor<2x8x1xf32>
    %mul_9 = rdu.map %mul_7, %mul_6 {rdu.phase = #rdu<phase backward>} : (tensor<2x8x64xf32>, tensor<2x8x64xf32>) -> tensor<2x8x64xf32> {
    ^bb0(%10: f32, %11: f32):
      %12 = arith.mulf %10, %11 : f32
      rdu.yield %12 : f32
    }
    %sum_2 = rdu.reduce sum %mul_9 dims [2] keepdim {rdu.phase = #rdu<phase backward>} : tensor<2x8x64xf32> -> tensor<2x8x1xf32>
    %mul_10 = rdu.map %mul_6, %sum_2 {rdu.phase = #rdu<phase backward>} : (tensor<2x8x64xf32>, tensor<2x8x1xf32>) -> tensor<2x8x64xf32> {
    ^bb0(%10: f32, %11: f32):
      %12 = arith.mulf %10, %11 : f32
      rdu.yield %12 : f32
    }
    %sub_2 = rdu.map %mul_8, %sum_1 {rdu.phase = #rdu<phase backward>} : (tensor<2x8x64xf32>, tensor<2x8x1xf32>) -> tensor<2x8x64xf32> {
    ^bb0(%10: f32, %11: f32):
      %12 = arith.subf %10, %11 : f32
      rdu.yield %12 : f32
    }
    %sub_3 = rdu.map %sub_2, %mul_10 {rdu.phase = #rdu<phase backward>} : (tensor<2x8x64xf32>, tensor<2x8x64xf32>) -> tensor<2x8x64xf32> {
    ^bb0(%10: f32, %11: f32):
      %12 = arith.subf %10, %11 : f32
      rdu.yield %12 : f32
    }
    %div_1 = rdu.map %native_layer_norm_3 {rdu.phase = #rdu<phase backward>} : (tensor<2x8x1xf32>) -> tensor<2x8x1xf32> {
    ^bb0(%10: f32):
      %11 = arith.constant 6.400000e+01 : f32
      %12 = arith.divf %10, %11 : f32
      rdu.yield %12 : f32
    }
    %mul_11 = rdu.map %div_1, %sub_3 {rdu.phase = #rdu<phase backward>} : (tensor<2x8x1xf32>, tensor<2x8x64xf32>) -> tensor<2x8x64xf32> {
    ^bb0(%10: f32, %11: f32):
      %12 = arith.mulf %10, %11 : f32
      rdu.yield %12 : f32
    }
    %mul_12 = rdu.map %add_2, %mul_6 {rdu.phase = #rdu<phase backward>} : (tensor<2x8x64xf32>, tensor<2x8x64xf32>) -> tensor<2x8x64xf32> {
    ^bb0(%10: f32, %11: f32):
      %12 = arith.mulf %10, %11 : f32
      rdu.yield %12 : f32
    }
    %sum_3 = rdu.reduce sum %mul_12 dims [0, 1] {rdu.phase = #rdu<phase backward>} : tensor<2x8x64xf32> -> tensor<64xf32>
    %sum_4 = rdu.reduce sum %add_2 dims [0, 1] {rdu.phase = #rdu<phase backward>} : tensor<2x8x64xf32> -> tensor<64xf32>
    %add_3 = rdu.map %mul_1, %mul_11 {rdu.phase = #rdu<phase backward>} : (tensor<2x8x64xf32>, tensor<2x8x64xf32>) -> tensor<2x8x64xf32> {
    ^bb0(%10: f32, %11: f32):
      %12 = arith.addf %10, %11 : f32
      rdu.yield %12 : f32
    }
    %mul_13 = rdu.map %add_3, %sigmoid {rdu.phase = #rdu<phase backward>} : (tensor<2x8x64xf32>, tensor<2x8x64xf32>) -> tensor<2x8x64xf32> {
    ^bb0(%10: f32, %11: f32):
      %12 = arith.mulf %10, %11 : f32
      rdu.yield %12 : f32
    }
    %mul_14 = rdu.map %add_3, %view_2 {rdu.phase = #rdu<phase backward>} : (tensor<2x8x64xf32>, tensor<2x8x64xf32>) -> tensor<2x8x64xf32> {
    ^bb0(%10: f32, %11: f32):
      %12 = arith.mulf %10, %11 : f32
      rdu.yield %12 : f32
    }
    %view_11 = rdu.reshape %mul_13 {rdu.phase = #rdu<phase backward>} : tensor<2x8x64xf32> -> tensor<16x64xf32>
    %permute_2 = rdu.transpose %view_11 perm [1, 0] {rdu.phase = #rdu<phase backward>} : tensor<16x64xf32> -> tensor<64x16xf32>
    %mm_4 = rdu.matmul %permute_2, %view_1 {rdu.phase = #rdu<phase backward>} : tensor<64x16xf32>, tensor<16x64xf32> -> tensor<64x64xf32>
    %mm_5 = rdu.matmul %view_11, %p_blocks_0_up_weight {rdu.phase = #rdu<phase backward>} : tensor<16x64xf32>, tensor<64x64xf32> -> tensor<16x64xf32>
    %view_12 = rdu.reshape %mm_5 {rdu.phase = #rdu<phase backward>} : tensor<16x64xf32> -> tensor<2x8x64xf32>
    %sub_4 = rdu.map %sigmoid {rdu.phase = #rdu<phase backward>} : (tensor<2x8x64xf32>) -> tensor<2x8x64xf32> {
    ^bb0(%10: f32):
      %11 = arith.constant 1.000000e+00 : f32
      %12 = arith.subf %11, %10 : f32
      rdu.yield %12 : f32
    }
    %mul_15 = rdu.map %sigmoid, %sub_4 {rdu.phase = #rdu<phase backward>} : (tensor<2x8x64xf32>, tensor<2x8x64xf32>) -> tensor<2x8x64xf32> {
    ^bb0(%10: f32, %11: f32):
      %12 = arith.mulf %10, %11 : f32
      rdu.yield %12 : f32
    }
    %mul_16 = rdu.map %mul_14, %mul_15 {rdu.phase = #rdu<phase backward>} : (tensor<2x8x64xf32>, tensor<2x8x64xf32>) -> tensor<2x8x64xf32> {
    ^bb0(%10: f32, %11: f32):
      %12 = arith.mulf %10, %11 : f32
      rdu.yield %12 : f32
    }
    %view_13 = rdu.reshape %mul_16 {rdu.phase = #rdu<phase backward>} : tensor<2x8x64xf32> -> tensor<16x64xf32>
    %mm_6 = rdu.matmul %view_13, %p_blocks_0_gate_weight {rdu.phase = #rdu<phase backward>} : tensor<16x64xf32>, tensor<64x64xf32> -> tensor<16x64xf32>
    %permute_3 = rdu.transpose %view_13 perm [1, 0] {rdu.phase = #rdu<phase backward>} : tensor<16x64xf32> -> tensor<64x16xf32>
    %mm_7 = rdu.matmul %permute_3, %view {rdu.phase = #rdu<phase backward>} : tensor<64x16xf32>, tensor<16x64xf32> -> tensor<64x64xf32>
    %sum_5 = rdu.reduce sum %view_13 dims [0] keepdim {rdu.phase = #rdu<phase backward>} : tensor<16x64xf32> -> tensor<1x64xf32>
    %view_14 = rdu.reshape %sum_5 {rdu.phase = #rdu<phase backward>} : tensor<1x64xf32> -> tensor<64xf32>
    %view_15 = rdu.reshape %mm_6 {rdu.phase = #rdu<phase backward>} : tensor<16x64xf32> -> tensor<2x8x64xf32>
    %add_4 = rdu.map %view_12, %view_15 {rdu.phase = #rdu<phase backward>} : (tensor<2x8x64xf32>, tensor<2x8x64xf32>) -> tensor<2x8x64xf32> {
    ^bb0(%10: f32, %11: f32):
      %12 = arith.addf %10, %11 : f32
      rdu.yield %12 : f32
    }
    %sub_5 = rdu.map %x, %native_layer_norm {rdu.phase = #rdu<phase backward>} : (tensor<2x8x64xf32>, tensor<2x8x1xf32>) -> tensor<2x8x64xf32> {
    ^bb0(%10: f32, %11: f32):
      %12 = arith.subf %10, %11 : f32
      rdu.yield %12 : f32
    }
    %mul_17 = rdu.map %sub_5, %native_layer_norm_1 {rdu.phase = #rdu<phase backward>} : (tensor<2x8x64xf32>, tensor<2x8x1xf32>) -> tensor<2x8x64xf32> {
    ^bb0(%10: f32, %11: f32):
      %12 = arith.mulf %10, %11 : f32
      rdu.yield %12 : f32
    }
    %mul_18 = rdu.map %add_4, %mul_17 {rdu.phase = #rdu<phase backward>} : (tensor<2x8x64xf32>, tensor<2x8x64xf32>) -> tensor<2x8x64xf32> {
    ^bb0(%10: f32, %11: f32):
      %12 = arith.mulf %10, %11 : f32
      rdu.yield %12 : f32
    }
    %sum_6 = rdu.reduce sum %mul_18 dims [0, 1] {rdu.phase = #rdu<phase backward>} : tensor<2x8x64xf32> -> tensor<64xf32>
    %sum_7 = rdu.reduce sum %add_4 dims [0, 1] {rdu.phase = #rdu<phase backward>} : tensor<2x8x64xf32> -> tensor<64xf32>
    %add_5, %add_6, %add_7, %add_8, %add_9, %add_10, %add_11, %add_12, %add_13, %add_14 = func.call @layer_optimizer(%0, %sum_6, %p_blocks_0_norm_weight, %1, %sum_7, %p_blocks_0_norm_bias, %2, %mm_7, %p_blocks_0_gate_weight, %3, %view_14, %p_blocks_0_gate_bias, %4, %mm_4, %p_blocks_0_up_weight) {rdu.layer = "optimizer.layers.0", rdu.phase = #rdu<phase optimizer>} : (tensor<64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>) -> (tensor<64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64x64xf32>, tensor<64x64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64x64xf32>, tensor<64x64xf32>)
    %add_15, %add_16, %add_17, %add_18, %add_19, %add_20, %add_21, %add_22, %add_23, %add_24 = func.call @layer_optimizer(%5, %sum_3, %p_blocks_1_norm_weight, %6, %sum_4, %p_blocks_1_norm_bias, %7, %mm_3, %p_blocks_1_gate_weight, %8, %view_9, %p_blocks_1_gate_bias, %9, %mm, %p_blocks_1_up_weight) {rdu.layer = "optimizer.layers.1", rdu.phase = #rdu<phase optimizer>} : (tensor<64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>) -> (tensor<64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64x64xf32>, tensor<64x64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64x64xf32>, tensor<64x64xf32>)
    func.return %mean_1, %add_6, %add_8, %add_10, %add_12, %add_14, %add_16, %add_18, %add_20, %add_22, %add_24, %add_5, %add_7, %add_9, %add_11, %add_13, %add_15, %add_17, %add_19, %add_21, %add_23 : tensor<f32>, tensor<64xf32>, tensor<64xf32>, tensor<64x64xf32>, tensor<64xf32>, tensor<64x64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64x64xf32>, tensor<64xf32>, tensor<64x64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64x64xf32>, tensor<64xf32>, tensor<64x64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64x64xf32>, tensor<64xf32>, tensor<64x64xf32>
  }
  func.func private @layer_optimizer(%0: tensor<64xf32> {rdu.weight}, %sum: tensor<64xf32> {rdu.input = "sum"}, %p_blocks_0_norm_weight: tensor<64xf32> {rdu.weight}, %1: tensor<64xf32> {rdu.weight}, %sum_1: tensor<64xf32> {rdu.input = "sum"}, %p_blocks_0_norm_bias: tensor<64xf32> {rdu.weight}, %2: tensor<64x64xf32> {rdu.weight}, %mm: tensor<64x64xf32> {rdu.input = "mm"}, %p_blocks_0_gate_weight: tensor<64x64xf32> {rdu.weight}, %3: tensor<64xf32> {rdu.weight}, %view: tensor<64xf32> {rdu.input = "view"}, %p_blocks_0_gate_bias: tensor<64xf32> {rdu.weight}, %4: tensor<64x64xf32> {rdu.weight}, %mm_1: tensor<64x64xf32> {rdu.input = "mm"}, %p_blocks_0_up_weight: tensor<64x64xf32> {rdu.weight}) -> (tensor<64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64x64xf32>, tensor<64x64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64x64xf32>, tensor<64x64xf32>) attributes {rdu.outlined_from = "optimizer.layers.0", rdu.calls = 2 : i64} {
    %mul = rdu.map %0 {rdu.phase = #rdu<phase optimizer>, rdu.layer = "optimizer.layers.0"} : (tensor<64xf32>) -> tensor<64xf32> {
    ^bb0(%5: f32):
      %6 = arith.constant 9.000000e-01 : f32
      %7 = arith.mulf %5, %6 : f32
      rdu.yield %7 : f32
    }
    %add = rdu.map %mul, %sum {rdu.phase = #rdu<phase optimizer>, rdu.layer = "optimizer.layers.0"} : (tensor<64xf32>, tensor<64xf32>) -> tensor<64xf32> {
    ^bb0(%5: f32, %6: f32):
      %7 = arith.addf %5, %6 : f32
      rdu.yield %7 : f32
    }
    %add_1 = rdu.map %p_blocks_0_norm_weight, %add {rdu.phase = #rdu<phase optimizer>, rdu.layer = "optimizer.layers.0"} : (tensor<64xf32>, tensor<64xf32>) -> tensor<64xf32> {
    ^bb0(%5: f32, %6: f32):
      %7 = arith.constant -1.000000e-02 : f32
      %8 = arith.mulf %6, %7 : f32
      %9 = arith.addf %5, %8 : f32
      rdu.yield %9 : f32
    }
    %mul_1 = rdu.map %1 {rdu.phase = #rdu<phase optimizer>, rdu.layer = "optimizer.layers.0"} : (tensor<64xf32>) -> tensor<64xf32> {
    ^bb0(%5: f32):
      %6 = arith.constant 9.000000e-01 : f32
      %7 = arith.mulf %5, %6 : f32
      rdu.yield %7 : f32
    }
    %add_2 = rdu.map %mul_1, %sum_1 {rdu.phase = #rdu<phase optimizer>, rdu.layer = "optimizer.layers.0"} : (tensor<64xf32>, tensor<64xf32>) -> tensor<64xf32> {
    ^bb0(%5: f32, %6: f32):
      %7 = arith.addf %5, %6 : f32
      rdu.yield %7 : f32
    }
    %add_3 = rdu.map %p_blocks_0_norm_bias, %add_2 {rdu.phase = #rdu<phase optimizer>, rdu.layer = "optimizer.layers.0"} : (tensor<64xf32>, tensor<64xf32>) -> tensor<64xf32> {
    ^bb0(%5: f32, %6: f32):
      %7 = arith.constant -1.000000e-02 : f32
      %8 = arith.mulf %6, %7 : f32
      %9 = arith.addf %5, %8 : f32
      rdu.yield %9 : f32
    }
    %mul_2 = rdu.map %2 {rdu.phase = #rdu<phase optimizer>, rdu.layer = "optimizer.layers.0"} : (tensor<64x64xf32>) -> tensor<64x64xf32> {
    ^bb0(%5: f32):
      %6 = arith.constant 9.000000e-01 : f32
      %7 = arith.mulf %5, %6 : f32
      rdu.yield %7 : f32
    }
    %add_4 = rdu.map %mul_2, %mm {rdu.phase = #rdu<phase optimizer>, rdu.layer = "optimizer.layers.0"} : (tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<64x64xf32> {
    ^bb0(%5: f32, %6: f32):
      %7 = arith.addf %5, %6 : f32
      rdu.yield %7 : f32
    }
    %add_5 = rdu.map %p_blocks_0_gate_weight, %add_4 {rdu.phase = #rdu<phase optimizer>, rdu.layer = "optimizer.layers.0"} : (tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<64x64xf32> {
    ^bb0(%5: f32, %6: f32):
      %7 = arith.constant -1.000000e-02 : f32
      %8 = arith.mulf %6, %7 : f32
      %9 = arith.addf %5, %8 : f32
      rdu.yield %9 : f32
    }
    %mul_3 = rdu.map %3 {rdu.phase = #rdu<phase optimizer>, rdu.layer = "optimizer.layers.0"} : (tensor<64xf32>) -> tensor<64xf32> {
    ^bb0(%5: f32):
      %6 = arith.constant 9.000000e-01 : f32
      %7 = arith.mulf %5, %6 : f32
      rdu.yield %7 : f32
    }
    %add_6 = rdu.map %mul_3, %view {rdu.phase = #rdu<phase optimizer>, rdu.layer = "optimizer.layers.0"} : (tensor<64xf32>, tensor<64xf32>) -> tensor<64xf32> {
    ^bb0(%5: f32, %6: f32):
      %7 = arith.addf %5, %6 : f32
      rdu.yield %7 : f32
    }
    %add_7 = rdu.map %p_blocks_0_gate_bias, %add_6 {rdu.phase = #rdu<phase optimizer>, rdu.layer = "optimizer.layers.0"} : (tensor<64xf32>, tensor<64xf32>) -> tensor<64xf32> {
    ^bb0(%5: f32, %6: f32):
      %7 = arith.constant -1.000000e-02 : f32
      %8 = arith.mulf %6, %7 : f32
      %9 = arith.addf %5, %8 : f32
      rdu.yield %9 : f32
    }
    %mul_4 = rdu.map %4 {rdu.phase = #rdu<phase optimizer>, rdu.layer = "optimizer.layers.0"} : (tensor<64x64xf32>) -> tensor<64x64xf32> {
    ^bb0(%5: f32):
      %6 = arith.constant 9.000000e-01 : f32
      %7 = arith.mulf %5, %6 : f32
      rdu.yield %7 : f32
    }
    %add_8 = rdu.map %mul_4, %mm_1 {rdu.phase = #rdu<phase optimizer>, rdu.layer = "optimizer.layers.0"} : (tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<64x64xf32> {
    ^bb0(%5: f32, %6: f32):
      %7 = arith.addf %5, %6 : f32
      rdu.yield %7 : f32
    }
    %add_9 = rdu.map %p_blocks_0_up_weight, %add_8 {rdu.phase = #rdu<phase optimizer>, rdu.layer = "optimizer.layers.0"} : (tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<64x64xf32> {
    ^bb0(%5: f32, %6: f32):
      %7 = arith.constant -1.000000e-02 : f32
      %8 = arith.mulf %6, %7 : f32
      %9 = arith.addf %5, %8 : f32
      rdu.yield %9 : f32
    }
    func.return %add, %add_1, %add_2, %add_3, %add_4, %add_5, %add_6, %add_7, %add_8, %add_9 : tensor<64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64x64xf32>, tensor<64x64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64x64xf32>, tensor<64x64xf32>
  }
  func.func private @layer_backward(%mul: tensor<2x8x64xf32> {rdu.input = "mul"}, %sigmoid: tensor<2x8x64xf32> {rdu.input = "sigmoid"}) -> tensor<2x8x64xf32> attributes {rdu.outlined_from = "backward.layers.1", rdu.calls = 2 : i64} {
    %mul_1 = rdu.map %mul, %sigmoid {rdu.phase = #rdu<phase backward>, rdu.layer = "backward.layers.1"} : (tensor<2x8x64xf32>, tensor<2x8x64xf32>) -> tensor<2x8x64xf32> {
    ^bb0(%0: f32, %1: f32):
      %2 = arith.mulf %0, %1 : f32
      rdu.yield %2 : f32
    }
    func.return %mul_1 : tensor<2x8x64xf32>
  }
  func.func private @layer_forward(%x: tensor<2x8x64xf32> {rdu.input = "x"}, %p_blocks_0_norm_weight: tensor<64xf32> {rdu.weight}, %p_blocks_0_norm_bias: tensor<64xf32> {rdu.weight}, %p_blocks_0_gate_weight: tensor<64x64xf32> {rdu.weight}, %p_blocks_0_gate_bias: tensor<64xf32> {rdu.weight}, %p_blocks_0_up_weight: tensor<64x64xf32> {rdu.weight}) -> (tensor<2x8x1xf32>, tensor<2x8x1xf32>, tensor<16x64xf32>, tensor<2x8x64xf32>, tensor<16x64xf32>, tensor<2x8x64xf32>, tensor<2x8x64xf32>) attributes {rdu.outlined_from = "forward.layers.0", rdu.calls = 2 : i64} {
    %native_layer_norm = rdu.reduce sum %x dims [2] keepdim {rdu.phase = #rdu<phase forward>, rdu.layer = "forward.layers.0"} : tensor<2x8x64xf32> -> tensor<2x8x1xf32>
    %native_layer_norm_1 = rdu.map %native_layer_norm {rdu.phase = #rdu<phase forward>, rdu.layer = "forward.layers.0"} : (tensor<2x8x1xf32>) -> tensor<2x8x1xf32> {
    ^bb0(%0: f32):
      %1 = arith.constant 6.400000e+01 : f32
      %2 = arith.divf %0, %1 : f32
      rdu.yield %2 : f32
    }
    %native_layer_norm_2 = rdu.map %x, %native_layer_norm_1 {rdu.phase = #rdu<phase forward>, rdu.layer = "forward.layers.0"} : (tensor<2x8x64xf32>, tensor<2x8x1xf32>) -> tensor<2x8x64xf32> {
    ^bb0(%0: f32, %1: f32):
      %2 = arith.subf %0, %1 : f32
      rdu.yield %2 : f32
    }
    %native_layer_norm_3 = rdu.map %native_layer_norm_2 {rdu.phase = #rdu<phase forward>, rdu.layer = "forward.layers.0"} : (tensor<2x8x64xf32>) -> tensor<2x8x64xf32> {
    ^bb0(%0: f32):
      %1 = arith.mulf %0, %0 : f32
      rdu.yield %1 : f32
    }
    %native_layer_norm_4 = rdu.reduce sum %native_layer_norm_3 dims [2] keepdim {rdu.phase = #rdu<phase forward>, rdu.layer = "forward.layers.0"} : tensor<2x8x64xf32> -> tensor<2x8x1xf32>
    %native_layer_norm_5 = rdu.map %native_layer_norm_4 {rdu.phase = #rdu<phase forward>, rdu.layer = "forward.layers.0"} : (tensor<2x8x1xf32>) -> tensor<2x8x1xf32> {
    ^bb0(%0: f32):
      %1 = arith.constant 6.400000e+01 : f32
      %2 = arith.divf %0, %1 : f32
      %3 = arith.constant 1.000000e-05 : f32
      %4 = arith.addf %2, %3 : f32
      %5 = math.rsqrt %4 : f32
      rdu.yield %5 : f32
    }
    %native_layer_norm_6 = rdu.map %native_layer_norm_2, %native_layer_norm_5, %p_blocks_0_norm_weight, %p_blocks_0_norm_bias {rdu.phase = #rdu<phase forward>, rdu.layer = "forward.layers.0"} : (tensor<2x8x64xf32>, tensor<2x8x1xf32>, tensor<64xf32>, tensor<64xf32>) -> tensor<2x8x64xf32> {
    ^bb0(%0: f32, %1: f32, %2: f32, %3: f32):
      %4 = arith.mulf %0, %1 : f32
      %5 = arith.mulf %4, %2 : f32
      %6 = arith.addf %5, %3 : f32
      rdu.yield %6 : f32
    }
    %view = rdu.reshape %native_layer_norm_6 {rdu.phase = #rdu<phase forward>, rdu.layer = "forward.layers.0"} : tensor<2x8x64xf32> -> tensor<16x64xf32>
    %addmm = rdu.matmul %view, %p_blocks_0_gate_weight transpose_rhs {rdu.phase = #rdu<phase forward>, rdu.layer = "forward.layers.0"} : tensor<16x64xf32>, tensor<64x64xf32> -> tensor<16x64xf32>
    %addmm_1 = rdu.map %p_blocks_0_gate_bias, %addmm {rdu.phase = #rdu<phase forward>, rdu.layer = "forward.layers.0"} : (tensor<64xf32>, tensor<16x64xf32>) -> tensor<16x64xf32> {
    ^bb0(%0: f32, %1: f32):
      %2 = arith.addf %1, %0 : f32
      rdu.yield %2 : f32
    }
    %view_1 = rdu.reshape %addmm_1 {rdu.phase = #rdu<phase forward>, rdu.layer = "forward.layers.0"} : tensor<16x64xf32> -> tensor<2x8x64xf32>
    %sigmoid = rdu.map %view_1 {rdu.phase = #rdu<phase forward>, rdu.layer = "forward.layers.0"} : (tensor<2x8x64xf32>) -> tensor<2x8x64xf32> {
    ^bb0(%0: f32):
      %1 = arith.constant 1.000000e+00 : f32
      %2 = arith.negf %0 : f32
      %3 = math.exp %2 : f32
      %4 = arith.addf %1, %3 : f32
      %5 = arith.divf %1, %4 : f32
      rdu.yield %5 : f32
    }
    %mm = rdu.matmul %view, %p_blocks_0_up_weight transpose_rhs {rdu.phase = #rdu<phase forward>, rdu.layer = "forward.layers.0"} : tensor<16x64xf32>, tensor<64x64xf32> -> tensor<16x64xf32>
    %view_2 = rdu.reshape %mm {rdu.phase = #rdu<phase forward>, rdu.layer = "forward.layers.0"} : tensor<16x64xf32> -> tensor<2x8x64xf32>
    %mul = rdu.map %sigmoid, %view_2 {rdu.phase = #rdu<phase forward>, rdu.layer = "forward.layers.0"} : (tensor<2x8x64xf32>, tensor<2x8x64xf32>) -> tensor<2x8x64xf32> {
    ^bb0(%0: f32, %1: f32):
      %2 = arith.mulf %0, %1 : f32
      rdu.yield %2 : f32
    }
    %add = rdu.map %x, %mul {rdu.phase = #rdu<phase forward>, rdu.layer = "forward.layers.0"} : (tensor<2x8x64xf32>, tensor<2x8x64xf32>) -> tensor<2x8x64xf32> {
    ^bb0(%0: f32, %1: f32):
      %2 = arith.addf %0, %1 : f32
      rdu.yield %2 : f32
    }
    func.return %native_layer_norm_1, %native_layer_norm_5, %view, %sigmoid, %view, %view_2, %add : tensor<2x8x1xf32>, tensor<2x8x1xf32>, tensor<16x64xf32>, tensor<2x8x64xf32>, tensor<16x64xf32>, tensor<2x8x64xf32>, tensor<2x8x64xf32>
  }
}

