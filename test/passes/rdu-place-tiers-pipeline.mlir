// A pipelined step of outlined layers (rdu-partition pp=2 of GatedStack(2) from
// test/python/training_cases.py, no optimizer: `rducc --train --optimizer none
// --pp 2 --target Inputs/train-pp.toml --emit kernels -O2`): @layer_forward and
// @layer_backward run once on each stage, so each weight parameter's group (the
// two layers' globals, placed together) has half its bytes on each stage's
// socket. rdu-place-saved and rdu-place-tiers count each global on its own
// stage (`global_homes`, `stage_parts`), so what the planner leaves in HBM,
// rdu-place-tiers keeps there: its spread over the groups is per stage, each
// group's bytes on that stage (counted whole against one stage, every weight
// group's spread gave 9,728 bytes a stage to DDR at 180 kB and 16,896 at 150 kB).
// RUN: sed 's/^hbm_bytes = .*/hbm_bytes = 180_000/' %S/Inputs/train-pp.toml > %t-180k.toml
// RUN: rducc-opt --check-roundtrip -p 'rdu-place-saved{target="%t-180k.toml"},rdu-tile,rdu-place-tiers{target="%t-180k.toml"}' %s | filecheck %s --check-prefix=FITS
// RUN: sed 's/^hbm_bytes = .*/hbm_bytes = 150_000/' %S/Inputs/train-pp.toml > %t-150k.toml
// RUN: rducc-opt -p 'rdu-place-saved{target="%t-150k.toml"},rdu-tile,rdu-place-tiers{target="%t-150k.toml"}' %s | filecheck %s --check-prefix=SPILL
// Invalid: a socket too small for stage 0's activations, even with every value
// and global the planner may move in DDR.
// RUN: sed 's/^hbm_bytes = .*/hbm_bytes = 20_000/' %S/Inputs/train-pp.toml > %t-20k.toml
// RUN: not rducc-opt -p 'rdu-place-saved{target="%t-20k.toml"},rdu-tile,rdu-place-tiers{target="%t-20k.toml"}' %s 2>&1 | filecheck %s --check-prefix=ERR

// 180 kB a socket: the whole step (67.1 kB of weights, a peak of 214.0 kB of
// activations) exceeds it, each stage (33.5 kB of weights and a peak of 132.1
// kB of activations on stage 0) does not: nothing in DDR.
// FITS:      activations.ddr = 0 : i64
// FITS-SAME: gradients.ddr = 0 : i64
// FITS-SAME: tier.ddr_weight_bytes = 0 : i64
// FITS-SAME: tier.hbm_weight_bytes_by_stage = array<i64: 33536, 33536>, tier.ddr_weight_bytes_by_stage = array<i64: 0, 0>
// FITS-NOT:  in ddr

// 150 kB a socket: the planner puts the two gate weights (16 kB each, one a
// stage) in DDR and keeps the gradients in HBM (a tile loop's DDR reads priced
// under its compute, as the cost model times them); rdu-place-tiers keeps
// exactly those in DDR, 16,384 bytes on each stage's socket: the totals are
// those two weights' bytes, so no other weight is in DDR.
// SPILL:      gradients.ddr = 0 : i64
// SPILL-SAME: tier.ddr_weight_bytes = 32768 : i64
// SPILL-SAME: tier.ddr_weight_bytes_by_stage = array<i64: 16384, 16384>
// SPILL-DAG:  tier.global @blocks.0.gate.weight in ddr
// SPILL-DAG:  tier.global @blocks.1.gate.weight in ddr

// ERR: error: the model does not fit train-pp: {{.*}} bytes of activations (pipeline stage 0's sockets), against 20000 bytes of HBM

builtin.module attributes {rdu.level = #rdu<level kernels>, rdu.partition = {tp = 1 : i64, pp = 2 : i64, microbatches = 8 : i64}} {
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
  func.func @forward(%x: tensor<64x64xf32> {rdu.input = "x"}, %p_blocks_0_norm_weight: tensor<64xf32> {rdu.global = @blocks.0.norm.weight}, %p_blocks_0_norm_bias: tensor<64xf32> {rdu.global = @blocks.0.norm.bias}, %p_blocks_0_gate_weight: tensor<64x64xf32> {rdu.global = @blocks.0.gate.weight}, %p_blocks_0_gate_bias: tensor<64xf32> {rdu.global = @blocks.0.gate.bias}, %p_blocks_0_up_weight: tensor<64x64xf32> {rdu.global = @blocks.0.up.weight}, %p_blocks_1_norm_weight: tensor<64xf32> {rdu.global = @blocks.1.norm.weight}, %p_blocks_1_norm_bias: tensor<64xf32> {rdu.global = @blocks.1.norm.bias}, %p_blocks_1_gate_weight: tensor<64x64xf32> {rdu.global = @blocks.1.gate.weight}, %p_blocks_1_gate_bias: tensor<64xf32> {rdu.global = @blocks.1.gate.bias}, %p_blocks_1_up_weight: tensor<64x64xf32> {rdu.global = @blocks.1.up.weight}) -> (tensor<f32>, tensor<64xf32>, tensor<64xf32>, tensor<64x64xf32>, tensor<64xf32>, tensor<64x64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64x64xf32>, tensor<64xf32>, tensor<64x64xf32>) attributes {rdu.result_roles = ["loss", "gradient:parameter:blocks.0.norm.weight", "gradient:parameter:blocks.0.norm.bias", "gradient:parameter:blocks.0.gate.weight", "gradient:parameter:blocks.0.gate.bias", "gradient:parameter:blocks.0.up.weight", "gradient:parameter:blocks.1.norm.weight", "gradient:parameter:blocks.1.norm.bias", "gradient:parameter:blocks.1.gate.weight", "gradient:parameter:blocks.1.gate.bias", "gradient:parameter:blocks.1.up.weight"]} {
    %native_layer_norm, %native_layer_norm_1, %native_layer_norm_2, %sigmoid, %mm, %add = func.call @layer_forward(%x, %p_blocks_0_norm_weight, %p_blocks_0_norm_bias, %p_blocks_0_gate_weight, %p_blocks_0_gate_bias, %p_blocks_0_up_weight) {rdu.layer = "forward.layers.0", rdu.phase = #rdu<phase forward>, rdu.stage = 0 : i64} : (tensor<64x64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64x64xf32>, tensor<64xf32>, tensor<64x64xf32>) -> (tensor<64x64xf32>, tensor<64x1xf32>, tensor<64x1xf32>, tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>)
    %0 = rdu.kernel "k0"(%add) : (tensor<64x64xf32>) -> tensor<64x64xf32> {
    ^bb0(%add_1: tensor<64x64xf32>):
      %1 = rdu.send_recv %add_1 from 0 to 1 {rdu.phase = #rdu<phase forward>, rdu.stage = 1 : i64} : tensor<64x64xf32> -> tensor<64x64xf32>
      rdu.yield %1 : tensor<64x64xf32>
    }
    %native_layer_norm_3, %native_layer_norm_4, %native_layer_norm_5, %sigmoid_1, %mm_1, %add_1 = func.call @layer_forward(%0, %p_blocks_1_norm_weight, %p_blocks_1_norm_bias, %p_blocks_1_gate_weight, %p_blocks_1_gate_bias, %p_blocks_1_up_weight) {rdu.layer = "forward.layers.1", rdu.phase = #rdu<phase forward>, rdu.stage = 1 : i64} : (tensor<64x64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64x64xf32>, tensor<64xf32>, tensor<64x64xf32>) -> (tensor<64x64xf32>, tensor<64x1xf32>, tensor<64x1xf32>, tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>)
    %mean, %mul = rdu.kernel "k1"(%add_1) : (tensor<64x64xf32>) -> (tensor<f32>, tensor<64x64xf32>) {
    ^bb0(%add_2: tensor<64x64xf32>):
      %pow = rdu.map %add_2 {rdu.phase = #rdu<phase forward>, rdu.stage = 1 : i64} : (tensor<64x64xf32>) -> tensor<64x64xf32> {
      ^bb0(%1: f32):
        %2 = arith.constant 1.000000e+00 : f32
        %3 = arith.mulf %2, %1 : f32
        %4 = arith.mulf %3, %1 : f32
        rdu.yield %4 : f32
      }
      %mean_1 = rdu.reduce sum %pow dims [0, 1] {rdu.phase = #rdu<phase forward>, rdu.stage = 1 : i64} : tensor<64x64xf32> -> tensor<f32>
      %mean_2 = rdu.map %mean_1 {rdu.phase = #rdu<phase forward>, rdu.stage = 1 : i64} : (tensor<f32>) -> tensor<f32> {
      ^bb0(%1: f32):
        %2 = arith.constant 4.096000e+03 : f32
        %3 = arith.divf %1, %2 : f32
        rdu.yield %3 : f32
      }
      %mul_1 = rdu.map %add_2 {rdu.phase = #rdu<phase backward>, rdu.stage = 1 : i64} : (tensor<64x64xf32>) -> tensor<64x64xf32> {
      ^bb0(%1: f32):
        %2 = arith.constant 1.000000e+00 : f32
        %3 = arith.mulf %2, %1 : f32
        %4 = arith.constant 2.000000e+00 : f32
        %5 = arith.mulf %3, %4 : f32
        rdu.yield %5 : f32
      }
      rdu.yield %mean_2, %mul_1 : tensor<f32>, tensor<64x64xf32>
    }
    %mul_1 = rdu.kernel "k2"(%mul) : (tensor<64x64xf32>) -> tensor<64x64xf32> {
    ^bb0(%mul_2: tensor<64x64xf32>):
      %mul_3 = rdu.map %mul_2 {rdu.phase = #rdu<phase backward>, rdu.stage = 1 : i64} : (tensor<64x64xf32>) -> tensor<64x64xf32> {
      ^bb0(%1: f32):
        %2 = arith.constant 1.000000e+00 : f32 loc("full_like")
        %3 = arith.constant 4.096000e+03 : f32
        %4 = arith.divf %2, %3 : f32
        %5 = arith.mulf %4, %1 : f32
        rdu.yield %5 : f32
      }
      rdu.yield %mul_3 : tensor<64x64xf32>
    }
    %mul_2 = func.call @layer_backward(%mul_1, %sigmoid_1) {rdu.layer = "backward.layers.1", rdu.phase = #rdu<phase backward>, rdu.stage = 1 : i64} : (tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<64x64xf32>
    %mul_3 = func.call @layer_backward(%mul_1, %mm_1) {rdu.layer = "backward.layers.2", rdu.phase = #rdu<phase backward>, rdu.stage = 1 : i64} : (tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<64x64xf32>
    %mm_2 = rdu.kernel "k3"(%mul_2, %native_layer_norm_3) : (tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<64x64xf32> {
    ^bb0(%mul_4: tensor<64x64xf32>, %native_layer_norm_6: tensor<64x64xf32>):
      %permute = rdu.transpose %mul_4 perm [1, 0] {rdu.phase = #rdu<phase backward>, rdu.stage = 1 : i64} : tensor<64x64xf32> -> tensor<64x64xf32>
      %mm_3 = rdu.matmul %permute, %native_layer_norm_6 {rdu.phase = #rdu<phase backward>, rdu.stage = 1 : i64} : tensor<64x64xf32>, tensor<64x64xf32> -> tensor<64x64xf32>
      rdu.yield %mm_3 : tensor<64x64xf32>
    }
    %mm_3 = rdu.kernel "k4"(%mul_2, %p_blocks_1_up_weight) : (tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<64x64xf32> {
    ^bb0(%mul_4: tensor<64x64xf32>, %p_blocks_1_up_weight_1: tensor<64x64xf32>):
      %mm_4 = rdu.matmul %mul_4, %p_blocks_1_up_weight_1 {rdu.phase = #rdu<phase backward>, rdu.stage = 1 : i64} : tensor<64x64xf32>, tensor<64x64xf32> -> tensor<64x64xf32>
      rdu.yield %mm_4 : tensor<64x64xf32>
    }
    %mul_4, %mm_4 = rdu.kernel "k5"(%sigmoid_1, %mul_3, %p_blocks_1_gate_weight) : (tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>) -> (tensor<64x64xf32>, tensor<64x64xf32>) {
    ^bb0(%sigmoid_2: tensor<64x64xf32>, %mul_5: tensor<64x64xf32>, %p_blocks_1_gate_weight_1: tensor<64x64xf32>):
      %mul_6 = rdu.map %mul_5, %sigmoid_2, %sigmoid_2 {rdu.phase = #rdu<phase backward>, rdu.stage = 1 : i64} : (tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<64x64xf32> {
      ^bb0(%1: f32, %2: f32, %3: f32):
        %4 = arith.constant 1.000000e+00 : f32
        %5 = arith.subf %4, %3 : f32
        %6 = arith.mulf %2, %5 : f32
        %7 = arith.mulf %1, %6 : f32
        rdu.yield %7 : f32
      }
      %mm_5 = rdu.matmul %mul_6, %p_blocks_1_gate_weight_1 {rdu.phase = #rdu<phase backward>, rdu.stage = 1 : i64} : tensor<64x64xf32>, tensor<64x64xf32> -> tensor<64x64xf32>
      rdu.yield %mul_6, %mm_5 : tensor<64x64xf32>, tensor<64x64xf32>
    }
    %mm_5, %view = rdu.kernel "k6"(%mul_4, %native_layer_norm_3) : (tensor<64x64xf32>, tensor<64x64xf32>) -> (tensor<64x64xf32>, tensor<64xf32>) {
    ^bb0(%mul_5: tensor<64x64xf32>, %native_layer_norm_6: tensor<64x64xf32>):
      %permute = rdu.transpose %mul_5 perm [1, 0] {rdu.phase = #rdu<phase backward>, rdu.stage = 1 : i64} : tensor<64x64xf32> -> tensor<64x64xf32>
      %mm_6 = rdu.matmul %permute, %native_layer_norm_6 {rdu.phase = #rdu<phase backward>, rdu.stage = 1 : i64} : tensor<64x64xf32>, tensor<64x64xf32> -> tensor<64x64xf32>
      %sum = rdu.reduce sum %mul_5 dims [0] keepdim {rdu.phase = #rdu<phase backward>, rdu.stage = 1 : i64} : tensor<64x64xf32> -> tensor<1x64xf32>
      %view_1 = rdu.reshape %sum {rdu.phase = #rdu<phase backward>, rdu.stage = 1 : i64} : tensor<1x64xf32> -> tensor<64xf32>
      rdu.yield %mm_6, %view_1 : tensor<64x64xf32>, tensor<64xf32>
    }
    %add_2 = rdu.kernel "k7"(%mm_3, %mm_4) : (tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<64x64xf32> {
    ^bb0(%mm_6: tensor<64x64xf32>, %mm_7: tensor<64x64xf32>):
      %add_3 = rdu.map %mm_6, %mm_7 {rdu.phase = #rdu<phase backward>, rdu.stage = 1 : i64} : (tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<64x64xf32> {
      ^bb0(%1: f32, %2: f32):
        %3 = arith.addf %1, %2 : f32
        rdu.yield %3 : f32
      }
      rdu.yield %add_3 : tensor<64x64xf32>
    }
    %1, %2, %3 = rdu.kernel "k8"(%add_2, %native_layer_norm_4, %native_layer_norm_5) : (tensor<64x64xf32>, tensor<64x1xf32>, tensor<64x1xf32>) -> (tensor<64x64xf32>, tensor<64x1xf32>, tensor<64x1xf32>) {
    ^bb0(%add_3: tensor<64x64xf32>, %native_layer_norm_6: tensor<64x1xf32>, %native_layer_norm_7: tensor<64x1xf32>):
      %4 = rdu.send_recv %add_3 from 1 to 0 {rdu.phase = #rdu<phase backward>, rdu.stage = 0 : i64} : tensor<64x64xf32> -> tensor<64x64xf32>
      %5 = rdu.send_recv %native_layer_norm_6 from 1 to 0 {rdu.phase = #rdu<phase backward>, rdu.stage = 0 : i64} : tensor<64x1xf32> -> tensor<64x1xf32>
      %6 = rdu.send_recv %native_layer_norm_7 from 1 to 0 {rdu.phase = #rdu<phase backward>, rdu.stage = 0 : i64} : tensor<64x1xf32> -> tensor<64x1xf32>
      rdu.yield %4, %5, %6 : tensor<64x64xf32>, tensor<64x1xf32>, tensor<64x1xf32>
    }
    %native_layer_norm_backward, %native_layer_norm_backward_1, %native_layer_norm_backward_2 = rdu.kernel "k9"(%1, %add, %2, %3, %p_blocks_1_norm_weight, %p_blocks_1_norm_bias) : (tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x1xf32>, tensor<64x1xf32>, tensor<64xf32>, tensor<64xf32>) -> (tensor<64x64xf32>, tensor<64xf32>, tensor<64xf32>) {
    ^bb0(%4: tensor<64x64xf32>, %add_3: tensor<64x64xf32>, %5: tensor<64x1xf32>, %6: tensor<64x1xf32>, %p_blocks_1_norm_weight_1: tensor<64xf32>, %p_blocks_1_norm_bias_1: tensor<64xf32>):
      %native_layer_norm_backward_3 = rdu.layer_norm_grad "input" %4, %add_3, %5, %6, %p_blocks_1_norm_weight_1, %p_blocks_1_norm_bias_1 normalized 1 weight bias {rdu.phase = #rdu<phase backward>, rdu.stage = 0 : i64} : tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x1xf32>, tensor<64x1xf32>, tensor<64xf32>, tensor<64xf32> -> tensor<64x64xf32>
      %native_layer_norm_backward_4 = rdu.layer_norm_grad "weight" %4, %add_3, %5, %6, %p_blocks_1_norm_weight_1, %p_blocks_1_norm_bias_1 normalized 1 weight bias {rdu.phase = #rdu<phase backward>, rdu.stage = 0 : i64} : tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x1xf32>, tensor<64x1xf32>, tensor<64xf32>, tensor<64xf32> -> tensor<64xf32>
      %native_layer_norm_backward_5 = rdu.layer_norm_grad "bias" %4, %add_3, %5, %6, %p_blocks_1_norm_weight_1, %p_blocks_1_norm_bias_1 normalized 1 weight bias {rdu.phase = #rdu<phase backward>, rdu.stage = 0 : i64} : tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x1xf32>, tensor<64x1xf32>, tensor<64xf32>, tensor<64xf32> -> tensor<64xf32>
      rdu.yield %native_layer_norm_backward_3, %native_layer_norm_backward_4, %native_layer_norm_backward_5 : tensor<64x64xf32>, tensor<64xf32>, tensor<64xf32>
    }
    %add_3 = rdu.kernel "k10"(%mul_1, %native_layer_norm_backward) : (tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<64x64xf32> {
    ^bb0(%mul_5: tensor<64x64xf32>, %native_layer_norm_backward_3: tensor<64x64xf32>):
      %4 = rdu.send_recv %mul_5 from 1 to 0 {rdu.phase = #rdu<phase backward>, rdu.stage = 0 : i64} : tensor<64x64xf32> -> tensor<64x64xf32>
      %add_4 = rdu.map %4, %native_layer_norm_backward_3 {rdu.phase = #rdu<phase backward>, rdu.stage = 0 : i64} : (tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<64x64xf32> {
      ^bb0(%5: f32, %6: f32):
        %7 = arith.addf %5, %6 : f32
        rdu.yield %7 : f32
      }
      rdu.yield %add_4 : tensor<64x64xf32>
    }
    %mul_5, %mul_6, %mm_6 = rdu.kernel "k11"(%add_3, %sigmoid, %mm, %native_layer_norm) : (tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>) -> (tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>) {
    ^bb0(%add_4: tensor<64x64xf32>, %sigmoid_2: tensor<64x64xf32>, %mm_7: tensor<64x64xf32>, %native_layer_norm_6: tensor<64x64xf32>):
      %mul_7 = rdu.map %add_4, %sigmoid_2 {rdu.phase = #rdu<phase backward>, rdu.stage = 0 : i64} : (tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<64x64xf32> {
      ^bb0(%4: f32, %5: f32):
        %6 = arith.mulf %4, %5 : f32
        rdu.yield %6 : f32
      }
      %mul_8 = rdu.map %add_4, %mm_7 {rdu.phase = #rdu<phase backward>, rdu.stage = 0 : i64} : (tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<64x64xf32> {
      ^bb0(%4: f32, %5: f32):
        %6 = arith.mulf %4, %5 : f32
        rdu.yield %6 : f32
      }
      %permute = rdu.transpose %mul_7 perm [1, 0] {rdu.phase = #rdu<phase backward>, rdu.stage = 0 : i64} : tensor<64x64xf32> -> tensor<64x64xf32>
      %mm_8 = rdu.matmul %permute, %native_layer_norm_6 {rdu.phase = #rdu<phase backward>, rdu.stage = 0 : i64} : tensor<64x64xf32>, tensor<64x64xf32> -> tensor<64x64xf32>
      rdu.yield %mul_7, %mul_8, %mm_8 : tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>
    }
    %mm_7 = rdu.kernel "k12"(%mul_5, %p_blocks_0_up_weight) : (tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<64x64xf32> {
    ^bb0(%mul_7: tensor<64x64xf32>, %p_blocks_0_up_weight_1: tensor<64x64xf32>):
      %mm_8 = rdu.matmul %mul_7, %p_blocks_0_up_weight_1 {rdu.phase = #rdu<phase backward>, rdu.stage = 0 : i64} : tensor<64x64xf32>, tensor<64x64xf32> -> tensor<64x64xf32>
      rdu.yield %mm_8 : tensor<64x64xf32>
    }
    %mul_7, %mm_8 = rdu.kernel "k13"(%sigmoid, %mul_6, %p_blocks_0_gate_weight) : (tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>) -> (tensor<64x64xf32>, tensor<64x64xf32>) {
    ^bb0(%sigmoid_2: tensor<64x64xf32>, %mul_8: tensor<64x64xf32>, %p_blocks_0_gate_weight_1: tensor<64x64xf32>):
      %mul_9 = rdu.map %mul_8, %sigmoid_2, %sigmoid_2 {rdu.phase = #rdu<phase backward>, rdu.stage = 0 : i64} : (tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<64x64xf32> {
      ^bb0(%4: f32, %5: f32, %6: f32):
        %7 = arith.constant 1.000000e+00 : f32
        %8 = arith.subf %7, %6 : f32
        %9 = arith.mulf %5, %8 : f32
        %10 = arith.mulf %4, %9 : f32
        rdu.yield %10 : f32
      }
      %mm_9 = rdu.matmul %mul_9, %p_blocks_0_gate_weight_1 {rdu.phase = #rdu<phase backward>, rdu.stage = 0 : i64} : tensor<64x64xf32>, tensor<64x64xf32> -> tensor<64x64xf32>
      rdu.yield %mul_9, %mm_9 : tensor<64x64xf32>, tensor<64x64xf32>
    }
    %mm_9, %view_1 = rdu.kernel "k14"(%mul_7, %native_layer_norm) : (tensor<64x64xf32>, tensor<64x64xf32>) -> (tensor<64x64xf32>, tensor<64xf32>) {
    ^bb0(%mul_8: tensor<64x64xf32>, %native_layer_norm_6: tensor<64x64xf32>):
      %permute = rdu.transpose %mul_8 perm [1, 0] {rdu.phase = #rdu<phase backward>, rdu.stage = 0 : i64} : tensor<64x64xf32> -> tensor<64x64xf32>
      %mm_10 = rdu.matmul %permute, %native_layer_norm_6 {rdu.phase = #rdu<phase backward>, rdu.stage = 0 : i64} : tensor<64x64xf32>, tensor<64x64xf32> -> tensor<64x64xf32>
      %sum = rdu.reduce sum %mul_8 dims [0] keepdim {rdu.phase = #rdu<phase backward>, rdu.stage = 0 : i64} : tensor<64x64xf32> -> tensor<1x64xf32>
      %view_2 = rdu.reshape %sum {rdu.phase = #rdu<phase backward>, rdu.stage = 0 : i64} : tensor<1x64xf32> -> tensor<64xf32>
      rdu.yield %mm_10, %view_2 : tensor<64x64xf32>, tensor<64xf32>
    }
    %native_layer_norm_backward_3, %native_layer_norm_backward_4 = rdu.kernel "k15"(%mm_7, %mm_8, %x, %native_layer_norm_1, %native_layer_norm_2, %p_blocks_0_norm_weight, %p_blocks_0_norm_bias) : (tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x1xf32>, tensor<64x1xf32>, tensor<64xf32>, tensor<64xf32>) -> (tensor<64xf32>, tensor<64xf32>) {
    ^bb0(%mm_10: tensor<64x64xf32>, %mm_11: tensor<64x64xf32>, %x_1: tensor<64x64xf32>, %native_layer_norm_6: tensor<64x1xf32>, %native_layer_norm_7: tensor<64x1xf32>, %p_blocks_0_norm_weight_1: tensor<64xf32>, %p_blocks_0_norm_bias_1: tensor<64xf32>):
      %add_4 = rdu.map %mm_10, %mm_11 {rdu.phase = #rdu<phase backward>, rdu.stage = 0 : i64} : (tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<64x64xf32> {
      ^bb0(%4: f32, %5: f32):
        %6 = arith.addf %4, %5 : f32
        rdu.yield %6 : f32
      }
      %native_layer_norm_backward_5 = rdu.layer_norm_grad "weight" %add_4, %x_1, %native_layer_norm_6, %native_layer_norm_7, %p_blocks_0_norm_weight_1, %p_blocks_0_norm_bias_1 normalized 1 weight bias {rdu.phase = #rdu<phase backward>, rdu.stage = 0 : i64} : tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x1xf32>, tensor<64x1xf32>, tensor<64xf32>, tensor<64xf32> -> tensor<64xf32>
      %native_layer_norm_backward_6 = rdu.layer_norm_grad "bias" %add_4, %x_1, %native_layer_norm_6, %native_layer_norm_7, %p_blocks_0_norm_weight_1, %p_blocks_0_norm_bias_1 normalized 1 weight bias {rdu.phase = #rdu<phase backward>, rdu.stage = 0 : i64} : tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x1xf32>, tensor<64x1xf32>, tensor<64xf32>, tensor<64xf32> -> tensor<64xf32>
      rdu.yield %native_layer_norm_backward_5, %native_layer_norm_backward_6 : tensor<64xf32>, tensor<64xf32>
    }
    func.return %mean, %native_layer_norm_backward_3, %native_layer_norm_backward_4, %mm_9, %view_1, %mm_6, %native_layer_norm_backward_1, %native_layer_norm_backward_2, %mm_5, %view, %mm_2 : tensor<f32>, tensor<64xf32>, tensor<64xf32>, tensor<64x64xf32>, tensor<64xf32>, tensor<64x64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64x64xf32>, tensor<64xf32>, tensor<64x64xf32> loc("output")
  }
  func.func private @layer_backward(%mul: tensor<64x64xf32> {rdu.input = "mul"}, %sigmoid: tensor<64x64xf32> {rdu.input = "sigmoid"}) -> tensor<64x64xf32> attributes {rdu.outlined_from = "backward.layers.1", rdu.calls = 2 : i64} {
    %mul_1 = rdu.kernel "k0"(%mul, %sigmoid) {rdu.layer = "backward.layers.1"} : (tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<64x64xf32> {
    ^bb0(%mul_2: tensor<64x64xf32>, %sigmoid_1: tensor<64x64xf32>):
      %mul_3 = rdu.map %mul_2, %sigmoid_1 {rdu.phase = #rdu<phase backward>, rdu.layer = "backward.layers.1"} : (tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<64x64xf32> {
      ^bb0(%0: f32, %1: f32):
        %2 = arith.mulf %0, %1 : f32
        rdu.yield %2 : f32
      }
      rdu.yield %mul_3 : tensor<64x64xf32>
    }
    func.return %mul_1 : tensor<64x64xf32>
  }
  func.func private @layer_forward(%x: tensor<64x64xf32> {rdu.input = "x"}, %p_blocks_0_norm_weight: tensor<64xf32> {rdu.weight}, %p_blocks_0_norm_bias: tensor<64xf32> {rdu.weight}, %p_blocks_0_gate_weight: tensor<64x64xf32> {rdu.weight}, %p_blocks_0_gate_bias: tensor<64xf32> {rdu.weight}, %p_blocks_0_up_weight: tensor<64x64xf32> {rdu.weight}) -> (tensor<64x64xf32>, tensor<64x1xf32>, tensor<64x1xf32>, tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>) attributes {rdu.outlined_from = "forward.layers.0", rdu.calls = 2 : i64} {
    %native_layer_norm, %native_layer_norm_1, %native_layer_norm_2, %sigmoid, %mm, %add = rdu.kernel "k0"(%x, %p_blocks_0_norm_weight, %p_blocks_0_norm_bias, %p_blocks_0_gate_weight, %p_blocks_0_gate_bias, %p_blocks_0_up_weight) {rdu.layer = "forward.layers.0"} : (tensor<64x64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64x64xf32>, tensor<64xf32>, tensor<64x64xf32>) -> (tensor<64x64xf32>, tensor<64x1xf32>, tensor<64x1xf32>, tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>) {
    ^bb0(%x_1: tensor<64x64xf32>, %p_blocks_0_norm_weight_1: tensor<64xf32>, %p_blocks_0_norm_bias_1: tensor<64xf32>, %p_blocks_0_gate_weight_1: tensor<64x64xf32>, %p_blocks_0_gate_bias_1: tensor<64xf32>, %p_blocks_0_up_weight_1: tensor<64x64xf32>):
      %native_layer_norm_3 = rdu.layer_norm "output" %x_1, %p_blocks_0_norm_weight_1, %p_blocks_0_norm_bias_1 normalized 1 eps 1.000000e-05 weight bias {rdu.phase = #rdu<phase forward>, rdu.layer = "forward.layers.0"} : tensor<64x64xf32>, tensor<64xf32>, tensor<64xf32> -> tensor<64x64xf32>
      %native_layer_norm_4 = rdu.layer_norm "mean" %x_1, %p_blocks_0_norm_weight_1, %p_blocks_0_norm_bias_1 normalized 1 eps 1.000000e-05 weight bias {rdu.phase = #rdu<phase forward>, rdu.layer = "forward.layers.0"} : tensor<64x64xf32>, tensor<64xf32>, tensor<64xf32> -> tensor<64x1xf32>
      %native_layer_norm_5 = rdu.layer_norm "rstd" %x_1, %p_blocks_0_norm_weight_1, %p_blocks_0_norm_bias_1 normalized 1 eps 1.000000e-05 weight bias {rdu.phase = #rdu<phase forward>, rdu.layer = "forward.layers.0"} : tensor<64x64xf32>, tensor<64xf32>, tensor<64xf32> -> tensor<64x1xf32>
      %addmm = rdu.matmul %native_layer_norm_3, %p_blocks_0_gate_weight_1 transpose_rhs {rdu.phase = #rdu<phase forward>, rdu.layer = "forward.layers.0"} : tensor<64x64xf32>, tensor<64x64xf32> -> tensor<64x64xf32>
      %sigmoid_1 = rdu.map %p_blocks_0_gate_bias_1, %addmm {rdu.phase = #rdu<phase forward>, rdu.layer = "forward.layers.0"} : (tensor<64xf32>, tensor<64x64xf32>) -> tensor<64x64xf32> {
      ^bb0(%0: f32, %1: f32):
        %2 = arith.addf %1, %0 : f32
        %3 = arith.constant 1.000000e+00 : f32
        %4 = arith.negf %2 : f32
        %5 = math.exp %4 : f32
        %6 = arith.addf %3, %5 : f32
        %7 = arith.divf %3, %6 : f32
        rdu.yield %7 : f32
      }
      %mm_1 = rdu.matmul %native_layer_norm_3, %p_blocks_0_up_weight_1 transpose_rhs {rdu.phase = #rdu<phase forward>, rdu.layer = "forward.layers.0"} : tensor<64x64xf32>, tensor<64x64xf32> -> tensor<64x64xf32>
      %add_1 = rdu.map %x_1, %sigmoid_1, %mm_1 {rdu.phase = #rdu<phase forward>, rdu.layer = "forward.layers.0"} : (tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<64x64xf32> {
      ^bb0(%0: f32, %1: f32, %2: f32):
        %3 = arith.mulf %1, %2 : f32
        %4 = arith.addf %0, %3 : f32
        rdu.yield %4 : f32
      }
      rdu.yield %native_layer_norm_3, %native_layer_norm_4, %native_layer_norm_5, %sigmoid_1, %mm_1, %add_1 : tensor<64x64xf32>, tensor<64x1xf32>, tensor<64x1xf32>, tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>
    }
    func.return %native_layer_norm, %native_layer_norm_1, %native_layer_norm_2, %sigmoid, %mm, %add : tensor<64x64xf32>, tensor<64x1xf32>, tensor<64x1xf32>, tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>
  }
}
