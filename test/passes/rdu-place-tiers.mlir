// RUN: rducc-opt -p rdu-place-tiers %s | filecheck %s --check-prefix=SN40L
// Placed globals re-parse (`in hbm`, `in ddr`).
// RUN: rducc-opt --check-roundtrip -p 'rdu-place-tiers{target="%S/Inputs/small-hbm.toml"}' %s | filecheck %s --check-prefix=SPILL
//
// Diagnostics: a model that fits neither HBM nor DDR, a target file with a
// negative bandwidth, a module whose rdu.target names no target.
// RUN: not rducc-opt -p 'rdu-place-tiers{target="%S/Inputs/no-room.toml"}' %s 2>&1 | filecheck %s --check-prefix=ERR
// RUN: not rducc-opt -p 'rdu-place-tiers{target="%S/Inputs/bad-negative-bandwidth.toml"}' %s 2>&1 | filecheck %s --check-prefix=ERR-BW
// RUN: sed -e 's/rdu.level = #rdu<level kernels>/rdu.level = #rdu<level kernels>, rdu.target = "sn41"/' %s | not rducc-opt -p rdu-place-tiers 2>&1 | filecheck %s --check-prefix=ERR-NAME

// Sizes: fc1.weight 8192 bytes, fc1.bias 256, fc2.weight 4096, unused 32;
// 12576 bytes of weights. tier.activation_bytes is the most bytes of
// @forward's inputs and kernel outputs live at once: x, %relu and %mm2 while
// k1 runs, 1792 bytes here (rdu-place-tiers-liveness.mlir: dead ones reused).

// On sn40l every global goes to HBM; nothing else changes.
// SN40L:      builtin.module attributes {rdu.level = #rdu<level kernels>, tier.hbm_weight_bytes = 12576 : i64, tier.ddr_weight_bytes = 0 : i64, tier.activation_bytes = 1792 : i64} {
// SN40L-NEXT:   tier.global @fc2.weight in hbm : tensor<16x64xf32> {kind = "parameter"}
// SN40L-NEXT:   tier.global @unused in hbm : tensor<8xf32> {kind = "buffer"}
// SN40L-NEXT:   tier.global @fc1.weight in hbm : tensor<64x32xf32> {kind = "parameter"}
// SN40L-NEXT:   tier.global @fc1.bias in hbm : tensor<64xf32> {kind = "parameter"}
// SN40L-NEXT:   func.func @forward(%x: tensor<4x32xf32> {rdu.input = "x"}, %p_fc1_weight: tensor<64x32xf32> {rdu.global = @fc1.weight}, %p_fc1_bias: tensor<64xf32> {rdu.global = @fc1.bias}, %p_fc2_weight: tensor<16x64xf32> {rdu.global = @fc2.weight}) -> tensor<4x16xf32> {
// SN40L-NEXT:     %relu = rdu.kernel "k0"(%x, %p_fc1_weight, %p_fc1_bias)
// SN40L:          %mm2 = rdu.kernel "k1"(%relu, %p_fc2_weight)
// SN40L:          func.return %mm2 : tensor<4x16xf32>

// With 8 KiB of HBM, 8192 - 1792 = 6400 bytes are left for weights. They
// are placed hottest first (the bytes a step reads of each per byte it
// holds: 1 for fc1.weight, fc1.bias and fc2.weight, each read whole once;
// 0 for unused). fc1.weight does not fit whole after fc2.weight: the heat
// where the weights stop fitting (1) is the margin, and the weights of that
// heat whose rows can be split (fc1.weight, fc2.weight) keep one share of
// their rows in HBM, what is left after those that cannot (fc1.bias, a
// vector): (6400 - 256) / (8192 + 4096) = 1/2: 32 of fc1.weight's 64 rows and 8
// of fc2.weight's 16 (`tier.hbm_rows`; a whole read takes that share from
// HBM), the rest in DDR. HBM is full, and each kernel reads both tiers at
// once. Before residency by reads, fc1.weight went to DDR whole and 2016
// bytes of HBM stayed empty.
// SPILL:      builtin.module attributes {rdu.level = #rdu<level kernels>, tier.hbm_weight_bytes = 6400 : i64, tier.ddr_weight_bytes = 6176 : i64, tier.activation_bytes = 1792 : i64} {
// SPILL-NEXT:   tier.global @fc2.weight in ddr : tensor<16x64xf32> {kind = "parameter", tier.hbm_rows = 8 : i64}
// SPILL-NEXT:   tier.global @unused in ddr : tensor<8xf32> {kind = "buffer"}
// SPILL-NEXT:   tier.global @fc1.weight in ddr : tensor<64x32xf32> {kind = "parameter", tier.hbm_rows = 32 : i64}
// SPILL-NEXT:   tier.global @fc1.bias in hbm : tensor<64xf32> {kind = "parameter"}

// ERR-NOT: Traceback
// ERR:     rducc-opt: error: the model does not fit no-room: 12576 bytes of weights and 1792 bytes of activations, against 4096 bytes of HBM and 4096 bytes of DDR
// ERR-NOT: Traceback
// ERR-BW-NOT:  Traceback
// ERR-BW:      rducc-opt: error: target file {{.*}}Inputs/bad-negative-bandwidth.toml: field 'hbm_bandwidth' must be > 0, got -1600000000000.0
// ERR-BW-NOT:  Traceback
// ERR-NAME-NOT: Traceback
// ERR-NAME:     rducc-opt: error: unknown target 'sn41': use one of sn40l, sn40l-8, sn40l-16 or a .toml/.json target file
// ERR-NAME-NOT: Traceback

builtin.module attributes {rdu.level = #rdu<level kernels>} {
  tier.global @fc2.weight : tensor<16x64xf32> {kind = "parameter"}
  tier.global @unused : tensor<8xf32> {kind = "buffer"}
  tier.global @fc1.weight : tensor<64x32xf32> {kind = "parameter"}
  tier.global @fc1.bias : tensor<64xf32> {kind = "parameter"}
  func.func @forward(%x: tensor<4x32xf32> {rdu.input = "x"}, %p_fc1_weight: tensor<64x32xf32> {rdu.global = @fc1.weight}, %p_fc1_bias: tensor<64xf32> {rdu.global = @fc1.bias}, %p_fc2_weight: tensor<16x64xf32> {rdu.global = @fc2.weight}) -> tensor<4x16xf32> {
    %relu = rdu.kernel "k0"(%x, %p_fc1_weight, %p_fc1_bias) : (tensor<4x32xf32>, tensor<64x32xf32>, tensor<64xf32>) -> tensor<4x64xf32> {
    ^bb0(%x_1: tensor<4x32xf32>, %w: tensor<64x32xf32>, %b: tensor<64xf32>):
      %mm = rdu.matmul %x_1, %w transpose_rhs : tensor<4x32xf32>, tensor<64x32xf32> -> tensor<4x64xf32>
      %bias = rdu.map %b, %mm : (tensor<64xf32>, tensor<4x64xf32>) -> tensor<4x64xf32> {
      ^bb0(%0: f32, %1: f32):
        %2 = arith.addf %1, %0 : f32
        %3 = arith.constant 0.000000e+00 : f32
        %4 = arith.maximumf %2, %3 : f32
        rdu.yield %4 : f32
      }
      rdu.yield %bias : tensor<4x64xf32>
    }
    %mm2 = rdu.kernel "k1"(%relu, %p_fc2_weight) : (tensor<4x64xf32>, tensor<16x64xf32>) -> tensor<4x16xf32> {
    ^bb0(%r: tensor<4x64xf32>, %w2: tensor<16x64xf32>):
      %mm = rdu.matmul %r, %w2 transpose_rhs : tensor<4x64xf32>, tensor<16x64xf32> -> tensor<4x16xf32>
      rdu.yield %mm : tensor<4x16xf32>
    }
    func.return %mm2 : tensor<4x16xf32>
  }
}
