// rdu-place-saved recomputes an outlined layer's saved values by running its forward
// call again in the backward (activation checkpointing per layer call), when the cost
// model finds that cheaper than spilling them: the step of rdu-place-saved-outlined.mlir
// (two gated residual blocks, @layer_forward called twice) on a target with 110 kB of
// HBM and a DDR of 1 GB/s (train-slow-ddr-110k.toml). Each forward call's saved results are marked "recompute";
// a clone of the call (phase backward, rdu.recomputes) runs from the same layer input
// and weights right before the first backward op that reads them, and that op reads
// the clone's result. The layer's output that the next layer reads stays in HBM (the
// next layer's clone reads it), and a clone that need not give it calls the callee cut
// to the saved results (@layer_forward_recompute). With a fast DDR (train-hbm.toml) spilling is cheaper
// and no call is cloned. The lowered step verifies (tiers, DMA, calls).
// RUN: rducc-opt --check-roundtrip -p 'rdu-fuse{level=0},rdu-merge-maps,rdu-place-saved{target="%S/Inputs/train-slow-ddr-110k.toml"}' %s | filecheck %s --check-prefix=RECOMPUTE
// RUN: rducc-opt -p 'rdu-fuse{level=0},rdu-merge-maps,rdu-place-saved{target="%S/Inputs/train-slow-ddr-110k.toml"},rdu-tile{target="%S/Inputs/train-slow-ddr-110k.toml"},rdu-place-tiers{target="%S/Inputs/train-slow-ddr-110k.toml"},rdu-insert-dma{keep_on_chip=false}' %s | filecheck %s --check-prefix=LOWERED
// RUN: rducc-opt -p 'rdu-fuse{level=0},rdu-merge-maps,rdu-place-saved{target="%S/Inputs/train-hbm.toml"}' %s | filecheck %s --check-prefix=SPILL
// With 80 kB of HBM, a DDR of 90 GB/s and a DMA start-up of 1 ns
// (train-blocked-fast-dma.toml) two slots that one op reads (%sigmoid and %view_2)
// spill for every call (the callee writes them to DDR; the two norm slots it spilled
// too while the peak was higher go back to HBM once the step fits). The two slots
// the callee returns twice (no DDR placement holds them) could be recomputed for the
// first call (the callee cut to them), but the plan with recomputes, priced from its
// final placements (`plan_price`), adds 4.04 us against the spills' 3.30 us: nothing
// is recomputed, and the lowered step reads the DDR slots in @layer_backward.
// A recompute is priced as the cost model times its kernels (DMA start-up and
// launch included): with train-blocked.toml's 1 us start-up a layer call's
// kernels cost more than any spill, so nothing is recomputed there (NOBLOCKED).
// RUN: rducc-opt -p 'rdu-fuse{level=0},rdu-merge-maps,rdu-place-saved{target="%S/Inputs/train-blocked-fast-dma.toml"}' %s | filecheck %s --check-prefix=BLOCKED
// RUN: rducc-opt -p 'rdu-fuse{level=0},rdu-merge-maps,rdu-place-saved{target="%S/Inputs/train-blocked-fast-dma.toml"},rdu-tile{target="%S/Inputs/train-blocked-fast-dma.toml"},rdu-place-tiers{target="%S/Inputs/train-blocked-fast-dma.toml"},rdu-insert-dma{keep_on_chip=false}' %s | filecheck %s --check-prefix=BLOCKED-LOWERED
// RUN: rducc-opt -p 'rdu-fuse{level=0},rdu-merge-maps,rdu-place-saved{target="%S/Inputs/train-blocked.toml"}' %s | filecheck %s --check-prefix=NOBLOCKED
// A layer call's recompute blocked by some of its slots is made for the rest
// (`_narrowed`): with a DDR of 20 GB/s (train-narrowed.toml) the layer norm's two
// slots go to DDR for every call while the peak is high, which blocks the recompute
// of whole calls; each call is then recomputed for its other slots, by a callee cut
// to them (@layer_forward_recompute gives slots 2-6 of the last call,
// @layer_forward_recompute_1 slots 2-5 of the first: not the norm's, not the output
// the next layer's clone reads). Once the step fits the norm's slots go back to HBM.
// Without the narrowing, both calls spill slots 3 and 5 and nothing is recomputed.
// RUN: rducc-opt -p 'rdu-fuse{level=0},rdu-merge-maps,rdu-place-saved{target="%S/Inputs/train-narrowed.toml"}' %s | filecheck %s --check-prefix=NARROWED
// Invalid: the step before fusion (level graph): its layer calls' callees are not kernels yet.
// RUN: not rducc-opt -p 'rdu-place-saved{target="%S/Inputs/train-slow-ddr.toml"}' %s 2>&1 | filecheck %s --check-prefix=ERR

// The optimizer's new weights (SGD's updates) are written over their globals
// (rducc.model.in_place.written_in_place): no second copy to spill; the four weight
// gradients they read (4 x 64 x 64 x 4 bytes) go to DDR instead. The plan is priced
// from its final placements (every call's value of a spilled slot), each spill by
// what it adds to the kernels that write and read it (their time with its bytes at
// DDR), and the values the fitted step does not need in DDR go back to HBM
// (`_keep_values`). Counting each layer call's own peak from the first round, the
// step fits in one round (161.9 us priced) with every weight in HBM.
// RECOMPUTE:      activations.ddr = 0 : i64, activations.recompute = 37120 : i64, {{.*}}gradients.hbm = 1536 : i64, gradients.ddr = 65536 : i64
// RECOMPUTE-NOT:  weights.ddr
// RECOMPUTE-NOT:  in ddr
// RECOMPUTE:      %native_layer_norm, %native_layer_norm_1, %view, %sigmoid, %view_1, %view_2, %add = func.call @layer_forward(%x, {{.*}}rdu.saved = ["recompute", "recompute", "recompute", "recompute", "recompute", "recompute", "hbm"]}
// RECOMPUTE-NEXT: %native_layer_norm_2, {{.*}}, %add_1 = func.call @layer_forward(%add, {{.*}}rdu.saved = ["recompute", "recompute", "recompute", "recompute", "recompute", "recompute", "recompute"]}
// RECOMPUTE:      %native_layer_norm_4, %native_layer_norm_5, %view_6, %sigmoid_2, %view_7, %view_8, %add_2 = func.call @layer_forward(%add, %p_blocks_1_norm_weight, {{.*}}rdu.phase = #rdu<phase backward>, rdu.recomputes = "layer_forward"}
// RECOMPUTE-NEXT: rdu.kernel {{.*}}(%add_2)
// RECOMPUTE:      func.call @layer_backward(%mul_1, %sigmoid_2)
// RECOMPUTE-NEXT: func.call @layer_backward(%mul_1, %view_8)
// RECOMPUTE:      %native_layer_norm_6, %native_layer_norm_7, %view_14, %sigmoid_3, %view_15, %view_16 = func.call @layer_forward_recompute(%x, %p_blocks_0_norm_weight, {{.*}}rdu.phase = #rdu<phase backward>, rdu.recomputes = "layer_forward"}
// RECOMPUTE-NEXT: rdu.kernel {{.*}}, %sigmoid_3)
// RECOMPUTE-NOT:  rdu.recomputes
// The first layer's output is kept (the second layer's input): its recompute calls
// @layer_forward cut to the six saved results, without the residual add only the
// output needs. The last layer's recompute gives its output too (the loss's backward
// reads it), so it calls @layer_forward itself.
// RECOMPUTE:      func.func private @layer_forward(
// RECOMPUTE:      %add = rdu.kernel
// RECOMPUTE:      func.return %native_layer_norm_1, %native_layer_norm_5, %view, %sigmoid, %view, %view_2, %add :
// RECOMPUTE:      func.func private @layer_forward_recompute({{.*}}rdu.outlined_from = "forward.layers.0", rdu.calls = 1 : i64}
// RECOMPUTE-NOT:  %add = rdu.kernel
// RECOMPUTE:      func.return %native_layer_norm_1, %native_layer_norm_5, %view, %sigmoid, %view, %view_2 :

// LOWERED:        func.call @layer_forward({{.*}}rdu.phase = #rdu<phase backward>, rdu.recomputes = "layer_forward"}
// LOWERED:        func.call @layer_backward
// LOWERED:        func.call @layer_forward_recompute({{.*}}rdu.phase = #rdu<phase backward>, rdu.recomputes = "layer_forward"}
// LOWERED:        func.func private @layer_forward_recompute({{.*}}!tier.buffer

// SPILL:          activations.recompute = 0 : i64
// The globals spill by the groups rdu-place-tiers places together (one parameter of
// @layer_forward receives both layers' gate weights): both in DDR, the biases and
// norms in HBM.
// SPILL:          tier.global @blocks.0.norm.weight : tensor<64xf32>
// SPILL-NEXT:     tier.global @blocks.0.norm.bias : tensor<64xf32>
// SPILL-NEXT:     tier.global @blocks.0.gate.weight in ddr : tensor<64x64xf32>
// SPILL-NEXT:     tier.global @blocks.0.gate.bias : tensor<64xf32>
// SPILL-NEXT:     tier.global @blocks.0.up.weight : tensor<64x64xf32>
// SPILL:          tier.global @blocks.1.gate.weight in ddr : tensor<64x64xf32>
// SPILL-NEXT:     tier.global @blocks.1.gate.bias : tensor<64xf32>
// SPILL-NOT:      rdu.recomputes

// BLOCKED:        activations.recompute = 0 : i64
// BLOCKED:        func.call @layer_forward(%x, {{.*}}rdu.saved = ["hbm", "hbm", "hbm", "ddr", "hbm", "ddr", "hbm"]}
// BLOCKED-NEXT:   func.call @layer_forward(%add, {{.*}}rdu.saved = ["hbm", "hbm", "hbm", "ddr", "hbm", "ddr", "hbm"]}
// BLOCKED-NOT:    rdu.recomputes
// BLOCKED:        func.func private @layer_backward({{.*}}tier.tier = #tier<tier ddr>

// BLOCKED-LOWERED: func.func private @layer_backward({{.*}}%sigmoid: !tier.buffer<ddr, 2x8x64xf32> {{.*}}tier.tier = #tier<tier ddr>

// NOBLOCKED:      activations.recompute = 0 : i64
// NOBLOCKED-NOT:  rdu.recomputes

// NARROWED:       activations.ddr = 0 : i64, activations.recompute = 36864 : i64
// NARROWED:       func.call @layer_forward(%x, {{.*}}rdu.saved = ["hbm", "hbm", "recompute", "recompute", "recompute", "recompute", "hbm"]}
// NARROWED-NEXT:  func.call @layer_forward(%add, {{.*}}rdu.saved = ["hbm", "hbm", "recompute", "recompute", "recompute", "recompute", "recompute"]}
// NARROWED:       %view_6, %sigmoid_2, %view_7, %view_8, %add_2 = func.call @layer_forward_recompute(%add, {{.*}}rdu.recomputes = "layer_forward"} : {{.*}} -> (tensor<16x64xf32>, tensor<2x8x64xf32>, tensor<16x64xf32>, tensor<2x8x64xf32>, tensor<2x8x64xf32>)
// NARROWED:       %view_14, %sigmoid_3, %view_15, %view_16 = func.call @layer_forward_recompute_1(%x, {{.*}}rdu.recomputes = "layer_forward"} : {{.*}} -> (tensor<16x64xf32>, tensor<2x8x64xf32>, tensor<16x64xf32>, tensor<2x8x64xf32>)

// ERR: rducc-opt: error: rdu-place-saved takes IR at level kernels; this module is at level graph

builtin.module attributes {rdu.level = #rdu<level graph>} {
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
  func.func @forward(%x: tensor<2x8x64xf32> {rdu.input = "x"}, %p_blocks_0_norm_weight: tensor<64xf32> {rdu.global = @blocks.0.norm.weight}, %p_blocks_0_norm_bias: tensor<64xf32> {rdu.global = @blocks.0.norm.bias}, %p_blocks_0_gate_weight: tensor<64x64xf32> {rdu.global = @blocks.0.gate.weight}, %p_blocks_0_gate_bias: tensor<64xf32> {rdu.global = @blocks.0.gate.bias}, %p_blocks_0_up_weight: tensor<64x64xf32> {rdu.global = @blocks.0.up.weight}, %p_blocks_1_norm_weight: tensor<64xf32> {rdu.global = @blocks.1.norm.weight}, %p_blocks_1_norm_bias: tensor<64xf32> {rdu.global = @blocks.1.norm.bias}, %p_blocks_1_gate_weight: tensor<64x64xf32> {rdu.global = @blocks.1.gate.weight}, %p_blocks_1_gate_bias: tensor<64xf32> {rdu.global = @blocks.1.gate.bias}, %p_blocks_1_up_weight: tensor<64x64xf32> {rdu.global = @blocks.1.up.weight}) -> (tensor<f32>, tensor<64xf32>, tensor<64xf32>, tensor<64x64xf32>, tensor<64xf32>, tensor<64x64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64x64xf32>, tensor<64xf32>, tensor<64x64xf32>) attributes {rdu.result_roles = ["loss", "", "", "", "", "", "", "", "", "", ""], rdu.result_updates = ["", "buffer:blocks.0.norm.weight", "buffer:blocks.0.norm.bias", "buffer:blocks.0.gate.weight", "buffer:blocks.0.gate.bias", "buffer:blocks.0.up.weight", "buffer:blocks.1.norm.weight", "buffer:blocks.1.norm.bias", "buffer:blocks.1.gate.weight", "buffer:blocks.1.gate.bias", "buffer:blocks.1.up.weight"]} {
    %native_layer_norm, %native_layer_norm_1, %view, %sigmoid, %view_1, %view_2, %add = func.call @layer_forward(%x, %p_blocks_0_norm_weight, %p_blocks_0_norm_bias, %p_blocks_0_gate_weight, %p_blocks_0_gate_bias, %p_blocks_0_up_weight) {rdu.layer = "forward.layers.0", rdu.phase = #rdu<phase forward>} : (tensor<2x8x64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64x64xf32>, tensor<64xf32>, tensor<64x64xf32>) -> (tensor<2x8x1xf32>, tensor<2x8x1xf32>, tensor<16x64xf32>, tensor<2x8x64xf32>, tensor<16x64xf32>, tensor<2x8x64xf32>, tensor<2x8x64xf32>)
    %native_layer_norm_2, %native_layer_norm_3, %view_3, %sigmoid_1, %view_4, %view_5, %add_1 = func.call @layer_forward(%add, %p_blocks_1_norm_weight, %p_blocks_1_norm_bias, %p_blocks_1_gate_weight, %p_blocks_1_gate_bias, %p_blocks_1_up_weight) {rdu.layer = "forward.layers.1", rdu.phase = #rdu<phase forward>} : (tensor<2x8x64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64x64xf32>, tensor<64xf32>, tensor<64x64xf32>) -> (tensor<2x8x1xf32>, tensor<2x8x1xf32>, tensor<16x64xf32>, tensor<2x8x64xf32>, tensor<16x64xf32>, tensor<2x8x64xf32>, tensor<2x8x64xf32>)
    %pow = rdu.map %add_1 {rdu.phase = #rdu<phase forward>} : (tensor<2x8x64xf32>) -> tensor<2x8x64xf32> {
    ^bb0(%0: f32):
      %1 = arith.constant 1.000000e+00 : f32
      %2 = arith.mulf %1, %0 : f32
      %3 = arith.mulf %2, %0 : f32
      rdu.yield %3 : f32
    }
    %mean = rdu.reduce sum %pow dims [0, 1, 2] {rdu.phase = #rdu<phase forward>} : tensor<2x8x64xf32> -> tensor<f32>
    %mean_1 = rdu.map %mean {rdu.phase = #rdu<phase forward>} : (tensor<f32>) -> tensor<f32> {
    ^bb0(%0: f32):
      %1 = arith.constant 1.024000e+03 : f32
      %2 = arith.divf %0, %1 : f32
      rdu.yield %2 : f32
    }
    %div = rdu.map {rdu.phase = #rdu<phase backward>} : () -> tensor<2x8x64xf32> {
      %0 = arith.constant 1.000000e+00 : f32
      %1 = arith.constant 1.024000e+03 : f32
      %2 = arith.divf %0, %1 : f32
      rdu.yield %2 : f32
    }
    %pow_1 = rdu.map %add_1 {rdu.phase = #rdu<phase backward>} : (tensor<2x8x64xf32>) -> tensor<2x8x64xf32> {
    ^bb0(%0: f32):
      %1 = arith.constant 1.000000e+00 : f32
      %2 = arith.mulf %1, %0 : f32
      rdu.yield %2 : f32
    }
    %mul = rdu.map %pow_1 {rdu.phase = #rdu<phase backward>} : (tensor<2x8x64xf32>) -> tensor<2x8x64xf32> {
    ^bb0(%0: f32):
      %1 = arith.constant 2.000000e+00 : f32
      %2 = arith.mulf %0, %1 : f32
      rdu.yield %2 : f32
    }
    %mul_1 = rdu.map %div, %mul {rdu.phase = #rdu<phase backward>} : (tensor<2x8x64xf32>, tensor<2x8x64xf32>) -> tensor<2x8x64xf32> {
    ^bb0(%0: f32, %1: f32):
      %2 = arith.mulf %0, %1 : f32
      rdu.yield %2 : f32
    }
    %mul_2 = func.call @layer_backward(%mul_1, %sigmoid_1) {rdu.layer = "backward.layers.1", rdu.phase = #rdu<phase backward>} : (tensor<2x8x64xf32>, tensor<2x8x64xf32>) -> tensor<2x8x64xf32>
    %mul_3 = func.call @layer_backward(%mul_1, %view_5) {rdu.layer = "backward.layers.2", rdu.phase = #rdu<phase backward>} : (tensor<2x8x64xf32>, tensor<2x8x64xf32>) -> tensor<2x8x64xf32>
    %view_6 = rdu.reshape %mul_2 {rdu.phase = #rdu<phase backward>} : tensor<2x8x64xf32> -> tensor<16x64xf32>
    %permute = rdu.transpose %view_6 perm [1, 0] {rdu.phase = #rdu<phase backward>} : tensor<16x64xf32> -> tensor<64x16xf32>
    %mm = rdu.matmul %permute, %view_4 {rdu.phase = #rdu<phase backward>} : tensor<64x16xf32>, tensor<16x64xf32> -> tensor<64x64xf32>
    %mm_1 = rdu.matmul %view_6, %p_blocks_1_up_weight {rdu.phase = #rdu<phase backward>} : tensor<16x64xf32>, tensor<64x64xf32> -> tensor<16x64xf32>
    %view_7 = rdu.reshape %mm_1 {rdu.phase = #rdu<phase backward>} : tensor<16x64xf32> -> tensor<2x8x64xf32>
    %sub = rdu.map %sigmoid_1 {rdu.phase = #rdu<phase backward>} : (tensor<2x8x64xf32>) -> tensor<2x8x64xf32> {
    ^bb0(%0: f32):
      %1 = arith.constant 1.000000e+00 : f32
      %2 = arith.subf %1, %0 : f32
      rdu.yield %2 : f32
    }
    %mul_4 = rdu.map %sigmoid_1, %sub {rdu.phase = #rdu<phase backward>} : (tensor<2x8x64xf32>, tensor<2x8x64xf32>) -> tensor<2x8x64xf32> {
    ^bb0(%0: f32, %1: f32):
      %2 = arith.mulf %0, %1 : f32
      rdu.yield %2 : f32
    }
    %mul_5 = rdu.map %mul_3, %mul_4 {rdu.phase = #rdu<phase backward>} : (tensor<2x8x64xf32>, tensor<2x8x64xf32>) -> tensor<2x8x64xf32> {
    ^bb0(%0: f32, %1: f32):
      %2 = arith.mulf %0, %1 : f32
      rdu.yield %2 : f32
    }
    %view_8 = rdu.reshape %mul_5 {rdu.phase = #rdu<phase backward>} : tensor<2x8x64xf32> -> tensor<16x64xf32>
    %mm_2 = rdu.matmul %view_8, %p_blocks_1_gate_weight {rdu.phase = #rdu<phase backward>} : tensor<16x64xf32>, tensor<64x64xf32> -> tensor<16x64xf32>
    %permute_1 = rdu.transpose %view_8 perm [1, 0] {rdu.phase = #rdu<phase backward>} : tensor<16x64xf32> -> tensor<64x16xf32>
    %mm_3 = rdu.matmul %permute_1, %view_3 {rdu.phase = #rdu<phase backward>} : tensor<64x16xf32>, tensor<16x64xf32> -> tensor<64x64xf32>
    %sum = rdu.reduce sum %view_8 dims [0] keepdim {rdu.phase = #rdu<phase backward>} : tensor<16x64xf32> -> tensor<1x64xf32>
    %view_9 = rdu.reshape %sum {rdu.phase = #rdu<phase backward>} : tensor<1x64xf32> -> tensor<64xf32>
    %view_10 = rdu.reshape %mm_2 {rdu.phase = #rdu<phase backward>} : tensor<16x64xf32> -> tensor<2x8x64xf32>
    %add_2 = rdu.map %view_7, %view_10 {rdu.phase = #rdu<phase backward>} : (tensor<2x8x64xf32>, tensor<2x8x64xf32>) -> tensor<2x8x64xf32> {
    ^bb0(%0: f32, %1: f32):
      %2 = arith.addf %0, %1 : f32
      rdu.yield %2 : f32
    }
    %sub_1 = rdu.map %add, %native_layer_norm_2 {rdu.phase = #rdu<phase backward>} : (tensor<2x8x64xf32>, tensor<2x8x1xf32>) -> tensor<2x8x64xf32> {
    ^bb0(%0: f32, %1: f32):
      %2 = arith.subf %0, %1 : f32
      rdu.yield %2 : f32
    }
    %mul_6 = rdu.map %sub_1, %native_layer_norm_3 {rdu.phase = #rdu<phase backward>} : (tensor<2x8x64xf32>, tensor<2x8x1xf32>) -> tensor<2x8x64xf32> {
    ^bb0(%0: f32, %1: f32):
      %2 = arith.mulf %0, %1 : f32
      rdu.yield %2 : f32
    }
    %mul_7 = rdu.map %add_2, %p_blocks_1_norm_weight {rdu.phase = #rdu<phase backward>} : (tensor<2x8x64xf32>, tensor<64xf32>) -> tensor<2x8x64xf32> {
    ^bb0(%0: f32, %1: f32):
      %2 = arith.mulf %0, %1 : f32
      rdu.yield %2 : f32
    }
    %mul_8 = rdu.map %mul_7 {rdu.phase = #rdu<phase backward>} : (tensor<2x8x64xf32>) -> tensor<2x8x64xf32> {
    ^bb0(%0: f32):
      %1 = arith.constant 6.400000e+01 : f32
      %2 = arith.mulf %0, %1 : f32
      rdu.yield %2 : f32
    }
    %sum_1 = rdu.reduce sum %mul_7 dims [2] keepdim {rdu.phase = #rdu<phase backward>} : tensor<2x8x64xf32> -> tensor<2x8x1xf32>
    %mul_9 = rdu.map %mul_7, %mul_6 {rdu.phase = #rdu<phase backward>} : (tensor<2x8x64xf32>, tensor<2x8x64xf32>) -> tensor<2x8x64xf32> {
    ^bb0(%0: f32, %1: f32):
      %2 = arith.mulf %0, %1 : f32
      rdu.yield %2 : f32
    }
    %sum_2 = rdu.reduce sum %mul_9 dims [2] keepdim {rdu.phase = #rdu<phase backward>} : tensor<2x8x64xf32> -> tensor<2x8x1xf32>
    %mul_10 = rdu.map %mul_6, %sum_2 {rdu.phase = #rdu<phase backward>} : (tensor<2x8x64xf32>, tensor<2x8x1xf32>) -> tensor<2x8x64xf32> {
    ^bb0(%0: f32, %1: f32):
      %2 = arith.mulf %0, %1 : f32
      rdu.yield %2 : f32
    }
    %sub_2 = rdu.map %mul_8, %sum_1 {rdu.phase = #rdu<phase backward>} : (tensor<2x8x64xf32>, tensor<2x8x1xf32>) -> tensor<2x8x64xf32> {
    ^bb0(%0: f32, %1: f32):
      %2 = arith.subf %0, %1 : f32
      rdu.yield %2 : f32
    }
    %sub_3 = rdu.map %sub_2, %mul_10 {rdu.phase = #rdu<phase backward>} : (tensor<2x8x64xf32>, tensor<2x8x64xf32>) -> tensor<2x8x64xf32> {
    ^bb0(%0: f32, %1: f32):
      %2 = arith.subf %0, %1 : f32
      rdu.yield %2 : f32
    }
    %div_1 = rdu.map %native_layer_norm_3 {rdu.phase = #rdu<phase backward>} : (tensor<2x8x1xf32>) -> tensor<2x8x1xf32> {
    ^bb0(%0: f32):
      %1 = arith.constant 6.400000e+01 : f32
      %2 = arith.divf %0, %1 : f32
      rdu.yield %2 : f32
    }
    %mul_11 = rdu.map %div_1, %sub_3 {rdu.phase = #rdu<phase backward>} : (tensor<2x8x1xf32>, tensor<2x8x64xf32>) -> tensor<2x8x64xf32> {
    ^bb0(%0: f32, %1: f32):
      %2 = arith.mulf %0, %1 : f32
      rdu.yield %2 : f32
    }
    %mul_12 = rdu.map %add_2, %mul_6 {rdu.phase = #rdu<phase backward>} : (tensor<2x8x64xf32>, tensor<2x8x64xf32>) -> tensor<2x8x64xf32> {
    ^bb0(%0: f32, %1: f32):
      %2 = arith.mulf %0, %1 : f32
      rdu.yield %2 : f32
    }
    %sum_3 = rdu.reduce sum %mul_12 dims [0, 1] {rdu.phase = #rdu<phase backward>} : tensor<2x8x64xf32> -> tensor<64xf32>
    %sum_4 = rdu.reduce sum %add_2 dims [0, 1] {rdu.phase = #rdu<phase backward>} : tensor<2x8x64xf32> -> tensor<64xf32>
    %add_3 = rdu.map %mul_1, %mul_11 {rdu.phase = #rdu<phase backward>} : (tensor<2x8x64xf32>, tensor<2x8x64xf32>) -> tensor<2x8x64xf32> {
    ^bb0(%0: f32, %1: f32):
      %2 = arith.addf %0, %1 : f32
      rdu.yield %2 : f32
    }
    %mul_13 = rdu.map %add_3, %sigmoid {rdu.phase = #rdu<phase backward>} : (tensor<2x8x64xf32>, tensor<2x8x64xf32>) -> tensor<2x8x64xf32> {
    ^bb0(%0: f32, %1: f32):
      %2 = arith.mulf %0, %1 : f32
      rdu.yield %2 : f32
    }
    %mul_14 = rdu.map %add_3, %view_2 {rdu.phase = #rdu<phase backward>} : (tensor<2x8x64xf32>, tensor<2x8x64xf32>) -> tensor<2x8x64xf32> {
    ^bb0(%0: f32, %1: f32):
      %2 = arith.mulf %0, %1 : f32
      rdu.yield %2 : f32
    }
    %view_11 = rdu.reshape %mul_13 {rdu.phase = #rdu<phase backward>} : tensor<2x8x64xf32> -> tensor<16x64xf32>
    %permute_2 = rdu.transpose %view_11 perm [1, 0] {rdu.phase = #rdu<phase backward>} : tensor<16x64xf32> -> tensor<64x16xf32>
    %mm_4 = rdu.matmul %permute_2, %view_1 {rdu.phase = #rdu<phase backward>} : tensor<64x16xf32>, tensor<16x64xf32> -> tensor<64x64xf32>
    %mm_5 = rdu.matmul %view_11, %p_blocks_0_up_weight {rdu.phase = #rdu<phase backward>} : tensor<16x64xf32>, tensor<64x64xf32> -> tensor<16x64xf32>
    %view_12 = rdu.reshape %mm_5 {rdu.phase = #rdu<phase backward>} : tensor<16x64xf32> -> tensor<2x8x64xf32>
    %sub_4 = rdu.map %sigmoid {rdu.phase = #rdu<phase backward>} : (tensor<2x8x64xf32>) -> tensor<2x8x64xf32> {
    ^bb0(%0: f32):
      %1 = arith.constant 1.000000e+00 : f32
      %2 = arith.subf %1, %0 : f32
      rdu.yield %2 : f32
    }
    %mul_15 = rdu.map %sigmoid, %sub_4 {rdu.phase = #rdu<phase backward>} : (tensor<2x8x64xf32>, tensor<2x8x64xf32>) -> tensor<2x8x64xf32> {
    ^bb0(%0: f32, %1: f32):
      %2 = arith.mulf %0, %1 : f32
      rdu.yield %2 : f32
    }
    %mul_16 = rdu.map %mul_14, %mul_15 {rdu.phase = #rdu<phase backward>} : (tensor<2x8x64xf32>, tensor<2x8x64xf32>) -> tensor<2x8x64xf32> {
    ^bb0(%0: f32, %1: f32):
      %2 = arith.mulf %0, %1 : f32
      rdu.yield %2 : f32
    }
    %view_13 = rdu.reshape %mul_16 {rdu.phase = #rdu<phase backward>} : tensor<2x8x64xf32> -> tensor<16x64xf32>
    %mm_6 = rdu.matmul %view_13, %p_blocks_0_gate_weight {rdu.phase = #rdu<phase backward>} : tensor<16x64xf32>, tensor<64x64xf32> -> tensor<16x64xf32>
    %permute_3 = rdu.transpose %view_13 perm [1, 0] {rdu.phase = #rdu<phase backward>} : tensor<16x64xf32> -> tensor<64x16xf32>
    %mm_7 = rdu.matmul %permute_3, %view {rdu.phase = #rdu<phase backward>} : tensor<64x16xf32>, tensor<16x64xf32> -> tensor<64x64xf32>
    %sum_5 = rdu.reduce sum %view_13 dims [0] keepdim {rdu.phase = #rdu<phase backward>} : tensor<16x64xf32> -> tensor<1x64xf32>
    %view_14 = rdu.reshape %sum_5 {rdu.phase = #rdu<phase backward>} : tensor<1x64xf32> -> tensor<64xf32>
    %view_15 = rdu.reshape %mm_6 {rdu.phase = #rdu<phase backward>} : tensor<16x64xf32> -> tensor<2x8x64xf32>
    %add_4 = rdu.map %view_12, %view_15 {rdu.phase = #rdu<phase backward>} : (tensor<2x8x64xf32>, tensor<2x8x64xf32>) -> tensor<2x8x64xf32> {
    ^bb0(%0: f32, %1: f32):
      %2 = arith.addf %0, %1 : f32
      rdu.yield %2 : f32
    }
    %sub_5 = rdu.map %x, %native_layer_norm {rdu.phase = #rdu<phase backward>} : (tensor<2x8x64xf32>, tensor<2x8x1xf32>) -> tensor<2x8x64xf32> {
    ^bb0(%0: f32, %1: f32):
      %2 = arith.subf %0, %1 : f32
      rdu.yield %2 : f32
    }
    %mul_17 = rdu.map %sub_5, %native_layer_norm_1 {rdu.phase = #rdu<phase backward>} : (tensor<2x8x64xf32>, tensor<2x8x1xf32>) -> tensor<2x8x64xf32> {
    ^bb0(%0: f32, %1: f32):
      %2 = arith.mulf %0, %1 : f32
      rdu.yield %2 : f32
    }
    %mul_18 = rdu.map %add_4, %mul_17 {rdu.phase = #rdu<phase backward>} : (tensor<2x8x64xf32>, tensor<2x8x64xf32>) -> tensor<2x8x64xf32> {
    ^bb0(%0: f32, %1: f32):
      %2 = arith.mulf %0, %1 : f32
      rdu.yield %2 : f32
    }
    %sum_6 = rdu.reduce sum %mul_18 dims [0, 1] {rdu.phase = #rdu<phase backward>} : tensor<2x8x64xf32> -> tensor<64xf32>
    %sum_7 = rdu.reduce sum %add_4 dims [0, 1] {rdu.phase = #rdu<phase backward>} : tensor<2x8x64xf32> -> tensor<64xf32>
    %add_5, %add_6, %add_7, %add_8, %add_9 = func.call @layer_optimizer(%p_blocks_0_norm_weight, %sum_6, %p_blocks_0_norm_bias, %sum_7, %p_blocks_0_gate_weight, %mm_7, %p_blocks_0_gate_bias, %view_14, %p_blocks_0_up_weight, %mm_4) {rdu.layer = "optimizer.layers.0", rdu.phase = #rdu<phase optimizer>} : (tensor<64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64x64xf32>, tensor<64x64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64x64xf32>, tensor<64x64xf32>) -> (tensor<64xf32>, tensor<64xf32>, tensor<64x64xf32>, tensor<64xf32>, tensor<64x64xf32>)
    %add_10, %add_11, %add_12, %add_13, %add_14 = func.call @layer_optimizer(%p_blocks_1_norm_weight, %sum_3, %p_blocks_1_norm_bias, %sum_4, %p_blocks_1_gate_weight, %mm_3, %p_blocks_1_gate_bias, %view_9, %p_blocks_1_up_weight, %mm) {rdu.layer = "optimizer.layers.1", rdu.phase = #rdu<phase optimizer>} : (tensor<64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64x64xf32>, tensor<64x64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64x64xf32>, tensor<64x64xf32>) -> (tensor<64xf32>, tensor<64xf32>, tensor<64x64xf32>, tensor<64xf32>, tensor<64x64xf32>)
    func.return %mean_1, %add_5, %add_6, %add_7, %add_8, %add_9, %add_10, %add_11, %add_12, %add_13, %add_14 : tensor<f32>, tensor<64xf32>, tensor<64xf32>, tensor<64x64xf32>, tensor<64xf32>, tensor<64x64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64x64xf32>, tensor<64xf32>, tensor<64x64xf32>
  }
  func.func private @layer_optimizer(%p_blocks_0_norm_weight: tensor<64xf32> {rdu.weight}, %sum: tensor<64xf32> {rdu.input = "sum"}, %p_blocks_0_norm_bias: tensor<64xf32> {rdu.weight}, %sum_1: tensor<64xf32> {rdu.input = "sum"}, %p_blocks_0_gate_weight: tensor<64x64xf32> {rdu.weight}, %mm: tensor<64x64xf32> {rdu.input = "mm"}, %p_blocks_0_gate_bias: tensor<64xf32> {rdu.weight}, %view: tensor<64xf32> {rdu.input = "view"}, %p_blocks_0_up_weight: tensor<64x64xf32> {rdu.weight}, %mm_1: tensor<64x64xf32> {rdu.input = "mm"}) -> (tensor<64xf32>, tensor<64xf32>, tensor<64x64xf32>, tensor<64xf32>, tensor<64x64xf32>) attributes {rdu.outlined_from = "optimizer.layers.0", rdu.calls = 2 : i64} {
    %add = rdu.map %p_blocks_0_norm_weight, %sum {rdu.phase = #rdu<phase optimizer>, rdu.layer = "optimizer.layers.0"} : (tensor<64xf32>, tensor<64xf32>) -> tensor<64xf32> {
    ^bb0(%0: f32, %1: f32):
      %2 = arith.constant -1.000000e-02 : f32
      %3 = arith.mulf %1, %2 : f32
      %4 = arith.addf %0, %3 : f32
      rdu.yield %4 : f32
    }
    %add_1 = rdu.map %p_blocks_0_norm_bias, %sum_1 {rdu.phase = #rdu<phase optimizer>, rdu.layer = "optimizer.layers.0"} : (tensor<64xf32>, tensor<64xf32>) -> tensor<64xf32> {
    ^bb0(%0: f32, %1: f32):
      %2 = arith.constant -1.000000e-02 : f32
      %3 = arith.mulf %1, %2 : f32
      %4 = arith.addf %0, %3 : f32
      rdu.yield %4 : f32
    }
    %add_2 = rdu.map %p_blocks_0_gate_weight, %mm {rdu.phase = #rdu<phase optimizer>, rdu.layer = "optimizer.layers.0"} : (tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<64x64xf32> {
    ^bb0(%0: f32, %1: f32):
      %2 = arith.constant -1.000000e-02 : f32
      %3 = arith.mulf %1, %2 : f32
      %4 = arith.addf %0, %3 : f32
      rdu.yield %4 : f32
    }
    %add_3 = rdu.map %p_blocks_0_gate_bias, %view {rdu.phase = #rdu<phase optimizer>, rdu.layer = "optimizer.layers.0"} : (tensor<64xf32>, tensor<64xf32>) -> tensor<64xf32> {
    ^bb0(%0: f32, %1: f32):
      %2 = arith.constant -1.000000e-02 : f32
      %3 = arith.mulf %1, %2 : f32
      %4 = arith.addf %0, %3 : f32
      rdu.yield %4 : f32
    }
    %add_4 = rdu.map %p_blocks_0_up_weight, %mm_1 {rdu.phase = #rdu<phase optimizer>, rdu.layer = "optimizer.layers.0"} : (tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<64x64xf32> {
    ^bb0(%0: f32, %1: f32):
      %2 = arith.constant -1.000000e-02 : f32
      %3 = arith.mulf %1, %2 : f32
      %4 = arith.addf %0, %3 : f32
      rdu.yield %4 : f32
    }
    func.return %add, %add_1, %add_2, %add_3, %add_4 : tensor<64xf32>, tensor<64xf32>, tensor<64x64xf32>, tensor<64xf32>, tensor<64x64xf32>
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

