// The whole -O2 pipeline (compiler/pipeline.py) on a two-layer MLP as the
// importer writes it, to the placed level; the result re-parses and verifies.
// RUN: rducc-opt --check-roundtrip -p 'rdu-canonicalize,cse,rdu-fuse{level=2},rdu-tile,rdu-place-tiers,rdu-insert-dma,rdu-sram-alloc' %s | filecheck %s
// The same with the pipeline text compiler/pipeline.py builds today (-O2, -O1, -O0).
// (The -O pipelines end in rdu-map-units: the same program with each kernel's #rdu.mapping.)
// RUN: %python -c "import sys; from rducc.pipeline import pipeline_text; from rducc.tools.opt import main; sys.exit(main(['--check-roundtrip', '-p', pipeline_text(2), sys.argv[1]]))" %s | filecheck %s
// RUN: %python -c "import sys; from rducc.pipeline import pipeline_text; from rducc.tools.opt import main; sys.exit(main(['--check-roundtrip', '-p', pipeline_text(1), sys.argv[1]]))" %s | filecheck %s --check-prefix=O1
// RUN: %python -c "import sys; from rducc.pipeline import pipeline_text; from rducc.tools.opt import main; sys.exit(main(['--check-roundtrip', '-p', pipeline_text(0), sys.argv[1]]))" %s | filecheck %s --check-prefix=O0
// Every pass reads the target from the module's rdu.target: on a 64 KiB SRAM
// the fused kernel runs in 8 tiles.
// RUN: sed -e 's|rdu.level = #rdu<level graph>|rdu.level = #rdu<level graph>, rdu.target = "%S/Inputs/tiny.toml"|' %s | rducc-opt --check-roundtrip -p 'rdu-canonicalize,cse,rdu-fuse{level=2},rdu-tile,rdu-place-tiers,rdu-insert-dma,rdu-sram-alloc' | filecheck %s --check-prefix=TINY
// On an 8 KiB SRAM the first matmul cannot be tiled: a located error.
// RUN: sed -e 's|rdu.level = #rdu<level graph>|rdu.level = #rdu<level graph>, rdu.target = "%S/Inputs/micro.toml"|' %s | not rducc-opt -p 'rdu-canonicalize,cse,rdu-fuse{level=2},rdu-tile,rdu-place-tiers,rdu-insert-dma,rdu-sram-alloc' 2>&1 | filecheck %s --check-prefix=ERR

// sn40l: canonicalize folds both weight transposes into the matmuls, fusion
// makes one kernel, which fits whole: no loop, one DMA per input.
// CHECK:      builtin.module attributes {rdu.level = #rdu<level placed>, tier.hbm_weight_bytes = 20800 : i64, tier.ddr_weight_bytes = 0 : i64, tier.activation_bytes = 81920 : i64} {
// CHECK-NEXT:   tier.global @fc1.weight in hbm : tensor<64x64xf32> {kind = "parameter"}
// CHECK-NEXT:   tier.global @fc1.bias in hbm : tensor<64xf32> {kind = "parameter"}
// CHECK-NEXT:   tier.global @fc2.weight in hbm : tensor<16x64xf32> {kind = "parameter"}
// CHECK-NEXT:   tier.global @fc2.bias in hbm : tensor<16xf32> {kind = "parameter"}
// CHECK-NEXT:   func.func @forward(%x: !tier.buffer<hbm, 256x64xf32> {rdu.input = "x"}) -> !tier.buffer<hbm, 256x16xf32> attributes {tier.sram_capacity = 520000000 : i64, tier.sram_peak = 233792 : i64, tier.sram_lower_bound = 233792 : i64} {
// CHECK-COUNT-4:  tier.get_global
// CHECK-NEXT:     %[[X_S:[^ ]+]] = tier.alloc offset 0 : !tier.buffer<sram, 256x64xf32>
// CHECK-COUNT-4:  tier.alloc offset {{[0-9]+}} : !tier.buffer<sram
// CHECK-NEXT:     %addmm = tier.alloc : !tier.buffer<hbm, 256x16xf32>
// CHECK-NEXT:     %[[OUT_S:[^ ]+]] = tier.alloc offset {{[0-9]+}} : !tier.buffer<sram, 256x16xf32>
// CHECK-NEXT:     tier.dma %x -> %[[X_S]] : !tier.buffer<hbm, 256x64xf32> -> !tier.buffer<sram, 256x64xf32>
// CHECK-COUNT-4:  tier.dma %p_
// CHECK-NEXT:     tier.compute "k0" ins(%[[X_S]], {{.*}}) outs(%[[OUT_S]] : !tier.buffer<sram, 256x16xf32>) attributes {tiles = 1 : i64{{(, rdu.mapping = #rdu.mapping<.*>)?}}} {
// CHECK:            rdu.matmul {{.*}} transpose_rhs {tier.offset = {{[0-9]+}} : i64} : tensor<256x64xf32>, tensor<64x64xf32> -> tensor<256x64xf32>
// CHECK:            rdu.matmul {{.*}} transpose_rhs {tier.offset = {{[0-9]+}} : i64} : tensor<256x64xf32>, tensor<16x64xf32> -> tensor<256x16xf32>
// CHECK-NOT:        rdu.transpose
// CHECK:          tier.dma %[[OUT_S]] -> %addmm : !tier.buffer<sram, 256x16xf32> -> !tier.buffer<hbm, 256x16xf32>
// CHECK-COUNT-6:  tier.dealloc
// CHECK-NEXT:     func.return %addmm : !tier.buffer<hbm, 256x16xf32>
// CHECK-NOT:    tier.compute

// -O1: the two linear layers are two kernels; relu's output stays in SRAM
// for the second (both fit together), so it never goes to HBM.
// O1:       func.func @forward
// O1:         tier.compute "k0" ins({{.*}}) outs(%[[RELU:[^ ]+]] : !tier.buffer<sram, 256x64xf32>)
// O1-NOT:     tier.dma %[[RELU]]
// O1-NOT:     tier.alloc : !tier.buffer<hbm, 256x64xf32>
// O1-NOT:     tier.dealloc %[[RELU]]
// O1:         tier.compute "k1" ins(%[[RELU]], {{.*}}) outs(
// O1:         tier.dealloc %[[RELU]] : !tier.buffer<sram, 256x64xf32>
// O1:         func.return

// -O0: one kernel per op (the transposes were folded: 5 ops); every
// intermediate goes out to HBM and back in, and each HBM buffer is freed
// right after its last read.
// O0:         tier.compute "k0"
// O0:         tier.dma %{{[^ ]+}} -> %[[H0:[^ ]+]] : !tier.buffer<sram, 256x64xf32> -> !tier.buffer<hbm, 256x64xf32>
// O0:         tier.dma %[[H0]] -> %{{[^ ]+}} : !tier.buffer<hbm, 256x64xf32> -> !tier.buffer<sram, 256x64xf32>
// O0-NEXT:    tier.dealloc %[[H0]] : !tier.buffer<hbm, 256x64xf32>
// O0-NEXT:    tier.compute "k1"
// O0:         tier.compute "k2"
// O0:         tier.compute "k3"
// O0:         tier.compute "k4"
// O0-NOT:     tier.compute
// O0:         func.return

// TINY:      func.func @forward(%x: !tier.buffer<hbm, 256x64xf32> {rdu.input = "x"}) -> !tier.buffer<hbm, 256x16xf32> attributes {tier.sram_capacity = 65536 : i64, tier.sram_peak = 55616 : i64, tier.sram_lower_bound = 55616 : i64} {
// TINY:        %[[X_T:[^ ]+]] = tier.alloc offset 0 buffers 2 : !tier.buffer<sram, 32x64xf32>
// TINY:        %[[OUT_T:[^ ]+]] = tier.alloc offset {{[0-9]+}} : !tier.buffer<sram, 32x16xf32>
// TINY:        scf.for %[[I:[^ ]+]] = %{{[^ ]+}} to %{{[^ ]+}} step
// TINY-NEXT:     %[[OFF:[^ ]+]] = arith.muli %[[I]], %{{[^ ]+}} : index
// TINY-NEXT:     tier.dma %x[%[[OFF]], %{{[^ ]+}}] -> %[[X_T]] : !tier.buffer<hbm, 256x64xf32> -> !tier.buffer<sram, 32x64xf32>
// TINY-NEXT:     tier.compute "k0" ins(%[[X_T]], {{.*}}) outs(%[[OUT_T]] : !tier.buffer<sram, 32x16xf32>) attributes {tiles = 8 : i64} {
// TINY:          tier.dma %[[OUT_T]] -> %addmm[%[[OFF]], %{{[^ ]+}}] : !tier.buffer<sram, 32x16xf32> -> !tier.buffer<hbm, 256x16xf32>
// TINY-NEXT:   }

// ERR-NOT: Traceback
// ERR:     rducc-opt: error: mlp.py:10:9: error: kernel k0 cannot be tiled to fit micro: untiled it needs 147456 bytes of SRAM
// ERR-NOT: Traceback

builtin.module attributes {rdu.level = #rdu<level graph>} {
  tier.global @fc1.weight : tensor<64x64xf32> {kind = "parameter"}
  tier.global @fc1.bias : tensor<64xf32> {kind = "parameter"}
  tier.global @fc2.weight : tensor<16x64xf32> {kind = "parameter"}
  tier.global @fc2.bias : tensor<16xf32> {kind = "parameter"}
  func.func @forward(%x: tensor<256x64xf32> {rdu.input = "x"}, %p_fc1_weight: tensor<64x64xf32> {rdu.global = @fc1.weight}, %p_fc1_bias: tensor<64xf32> {rdu.global = @fc1.bias}, %p_fc2_weight: tensor<16x64xf32> {rdu.global = @fc2.weight}, %p_fc2_bias: tensor<16xf32> {rdu.global = @fc2.bias}) -> tensor<256x16xf32> {
    %permute = rdu.transpose %p_fc1_weight perm [1, 0] : tensor<64x64xf32> -> tensor<64x64xf32> loc("mlp.py":10:9)
    %addmm = rdu.matmul %x, %permute : tensor<256x64xf32>, tensor<64x64xf32> -> tensor<256x64xf32> loc("mlp.py":10:9)
    %addmm_1 = rdu.map %p_fc1_bias, %addmm : (tensor<64xf32>, tensor<256x64xf32>) -> tensor<256x64xf32> {
    ^bb0(%0: f32, %1: f32):
      %2 = arith.addf %1, %0 : f32
      rdu.yield %2 : f32
    } loc("mlp.py":10:9)
    %relu = rdu.map %addmm_1 : (tensor<256x64xf32>) -> tensor<256x64xf32> {
    ^bb0(%0: f32):
      %1 = arith.constant 0.000000e+00 : f32
      %2 = arith.maximumf %0, %1 : f32
      rdu.yield %2 : f32
    } loc("mlp.py":11:9)
    %permute_1 = rdu.transpose %p_fc2_weight perm [1, 0] : tensor<16x64xf32> -> tensor<64x16xf32> loc("mlp.py":12:9)
    %addmm_2 = rdu.matmul %relu, %permute_1 : tensor<256x64xf32>, tensor<64x16xf32> -> tensor<256x16xf32> loc("mlp.py":12:9)
    %addmm_3 = rdu.map %p_fc2_bias, %addmm_2 : (tensor<16xf32>, tensor<256x16xf32>) -> tensor<256x16xf32> {
    ^bb0(%0: f32, %1: f32):
      %2 = arith.addf %1, %0 : f32
      rdu.yield %2 : f32
    } loc("mlp.py":12:9)
    func.return %addmm_3 : tensor<256x16xf32> loc("output")
  }
}
