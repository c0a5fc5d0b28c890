// The memory-level program re-parses and verifies (DMA windows, tiers, compute bodies).
// RUN: rducc-opt --check-roundtrip --split-input-file -p 'rdu-insert-dma{target="%S/Inputs/tiny.toml"}' %s | filecheck %s
// Without keep_on_chip every value crossing kernels goes through HBM.
// RUN: rducc-opt --split-input-file -p 'rdu-insert-dma{keep_on_chip=false}' %s | filecheck %s --check-prefix=NOKEEP
//
// Diagnostics: kernels without their tiling, globals without a tier.
// RUN: sed -e 's/{rdu.tile_plan = [^}]*} //' %s | not rducc-opt --split-input-file -p rdu-insert-dma 2>&1 | filecheck %s --check-prefix=ERR-TILE
// RUN: sed -e 's/^\(  tier.global @[^ ]*\) in [a-z]*/\1/' %s | not rducc-opt --split-input-file -p rdu-insert-dma 2>&1 | filecheck %s --check-prefix=ERR-TIER

// ERR-TILE-NOT: Traceback
// ERR-TILE:     rducc-opt: error: model.py:7:5: error: kernel k0 has no 'rdu.tile_plan': run rdu-tile first
// ERR-TILE-NOT: Traceback
// ERR-TIER-NOT: Traceback
// ERR-TIER:     rducc-opt: error: global @w has no tier: run rdu-place-tiers first
// ERR-TIER-NOT: Traceback

// Three kernels, with the tiling rdu-tile records for Inputs/tiny.toml (64 KiB
// of SRAM) and the tiers rdu-place-tiers chose (the embedding table in DDR).
//
// @forward now takes and returns HBM buffers; the weights come from
// tier.get_global in their tier and are no longer arguments.
// CHECK:      builtin.module attributes {rdu.level = #rdu<level memory>} {
// CHECK-NEXT:   tier.global @w in hbm : tensor<64x64xf32> {kind = "parameter"}
// CHECK-NEXT:   tier.global @embed in ddr : tensor<1000x64xf32> {kind = "parameter"}
// CHECK-NEXT:   func.func @forward(%x: !tier.buffer<hbm, 128x64xf32> {rdu.input = "x"}, %ids: !tier.buffer<hbm, 1x8xi64> {rdu.input = "ids"}, %tokens: !tier.buffer<hbm, 1x512xi64> {rdu.input = "tokens"}) -> (!tier.buffer<hbm, 128xf32>, !tier.buffer<hbm, 1x8x64xf32>, !tier.buffer<hbm, 1x512x64xf32>) {
// CHECK-NEXT:     %p_w = tier.get_global @w : !tier.buffer<hbm, 64x64xf32>
// CHECK-NEXT:     %p_embed = tier.get_global @embed : !tier.buffer<ddr, 1000x64xf32>

// k0, 4 tiles of 32 rows: the tiled input is double-buffered (buffers 2), the
// untiled weight is resident and copied in once before the loop; each
// iteration brings in the window of x at row i * 32, computes the kernel body
// on tiles and writes the output tile to the same window of the HBM result.
// CHECK-NEXT:     %[[X_T:[^ ]+]] = tier.alloc buffers 2 : !tier.buffer<sram, 32x64xf32>
// CHECK-NEXT:     %[[W_S:[^ ]+]] = tier.alloc : !tier.buffer<sram, 64x64xf32>
// CHECK-NEXT:     %y = tier.alloc : !tier.buffer<hbm, 128x64xf32>
// CHECK-NEXT:     %[[Y_T:[^ ]+]] = tier.alloc : !tier.buffer<sram, 32x64xf32>
// CHECK-NEXT:     tier.dma %p_w -> %[[W_S]] : !tier.buffer<hbm, 64x64xf32> -> !tier.buffer<sram, 64x64xf32>
// CHECK-NEXT:     %[[C0:[^ ]+]] = arith.constant 0 : index
// CHECK-NEXT:     %[[C1:[^ ]+]] = arith.constant 1 : index
// CHECK-NEXT:     %[[C4:[^ ]+]] = arith.constant 4 : index
// CHECK-NEXT:     %[[C32:[^ ]+]] = arith.constant 32 : index
// CHECK-NEXT:     scf.for %[[I:[^ ]+]] = %[[C0]] to %[[C4]] step %[[C1]] {
// CHECK-NEXT:       %[[OFF:[^ ]+]] = arith.muli %[[I]], %[[C32]] : index
// CHECK-NEXT:       tier.dma %x[%[[OFF]], %[[C0]]] -> %[[X_T]] : !tier.buffer<hbm, 128x64xf32> -> !tier.buffer<sram, 32x64xf32>
// CHECK-NEXT:       tier.compute "k0" ins(%[[X_T]], %[[W_S]] : !tier.buffer<sram, 32x64xf32>, !tier.buffer<sram, 64x64xf32>) outs(%[[Y_T]] : !tier.buffer<sram, 32x64xf32>) attributes {tiles = 4 : i64} {
// CHECK-NEXT:       ^bb0(%[[XA:[^:]+]]: tensor<32x64xf32>, %[[WA:[^:]+]]: tensor<64x64xf32>):
// CHECK-NEXT:         %[[MM:[^ ]+]] = rdu.matmul %[[XA]], %[[WA]] transpose_rhs : tensor<32x64xf32>, tensor<64x64xf32> -> tensor<32x64xf32>
// CHECK-NEXT:         %[[RELU:[^ ]+]] = rdu.map %[[MM]] : (tensor<32x64xf32>) -> tensor<32x64xf32> {
// CHECK:                arith.maximumf
// CHECK:              rdu.yield %[[RELU]] : tensor<32x64xf32>
// CHECK-NEXT:       }
// CHECK-NEXT:       tier.dma %[[Y_T]] -> %y[%[[OFF]], %[[C0]]] : !tier.buffer<sram, 32x64xf32> -> !tier.buffer<hbm, 128x64xf32>
// CHECK-NEXT:     }
// CHECK-NEXT:     tier.dealloc %[[X_T]] : !tier.buffer<sram, 32x64xf32>
// CHECK-NEXT:     tier.dealloc %[[W_S]] : !tier.buffer<sram, 64x64xf32>
// CHECK-NEXT:     tier.dealloc %[[Y_T]] : !tier.buffer<sram, 32x64xf32>

// k1, one tile: no loop. It reads k0's result from HBM, which is freed right
// after its last read. The embedding table stays off chip: tier.gather brings
// in just the indexed rows, and the body starts from them (no rdu.gather).
// Two outputs, two HBM results.
// CHECK-NEXT:     %[[Y_S:[^ ]+]] = tier.alloc : !tier.buffer<sram, 128x64xf32>
// CHECK-NEXT:     %[[IDS_S:[^ ]+]] = tier.alloc : !tier.buffer<sram, 1x8xi64>
// CHECK-NEXT:     %[[EMB_S:[^ ]+]] = tier.alloc : !tier.buffer<sram, 1x8x64xf32>
// CHECK-NEXT:     %s = tier.alloc : !tier.buffer<hbm, 128xf32>
// CHECK-NEXT:     %e = tier.alloc : !tier.buffer<hbm, 1x8x64xf32>
// CHECK-NEXT:     %[[S_S:[^ ]+]] = tier.alloc : !tier.buffer<sram, 128xf32>
// CHECK-NEXT:     %[[E_S:[^ ]+]] = tier.alloc : !tier.buffer<sram, 1x8x64xf32>
// CHECK-NEXT:     tier.dma %y -> %[[Y_S]] : !tier.buffer<hbm, 128x64xf32> -> !tier.buffer<sram, 128x64xf32>
// CHECK-NEXT:     tier.dealloc %y : !tier.buffer<hbm, 128x64xf32>
// CHECK-NEXT:     tier.dma %ids -> %[[IDS_S]] : !tier.buffer<hbm, 1x8xi64> -> !tier.buffer<sram, 1x8xi64>
// CHECK-NEXT:     tier.gather %p_embed[%[[IDS_S]]] -> %[[EMB_S]] : !tier.buffer<ddr, 1000x64xf32>, !tier.buffer<sram, 1x8xi64> -> !tier.buffer<sram, 1x8x64xf32>
// CHECK-NEXT:     tier.compute "k1" ins(%[[Y_S]], %[[IDS_S]], %[[EMB_S]] : !tier.buffer<sram, 128x64xf32>, !tier.buffer<sram, 1x8xi64>, !tier.buffer<sram, 1x8x64xf32>) outs(%[[S_S]], %[[E_S]] : !tier.buffer<sram, 128xf32>, !tier.buffer<sram, 1x8x64xf32>) attributes {tiles = 1 : i64} {
// CHECK-NEXT:     ^bb0(%[[YA:[^:]+]]: tensor<128x64xf32>, %{{[^:]+}}: tensor<1x8xi64>, %[[ROWS:[^:]+]]: tensor<1x8x64xf32>):
// CHECK-NEXT:       %[[SUM:[^ ]+]] = rdu.reduce sum %[[YA]] dims [1] : tensor<128x64xf32> -> tensor<128xf32>
// CHECK-NEXT:       %[[SCALED:[^ ]+]] = rdu.map %[[ROWS]] : (tensor<1x8x64xf32>) -> tensor<1x8x64xf32> {
// CHECK:            rdu.yield %[[SUM]], %[[SCALED]] : tensor<128xf32>, tensor<1x8x64xf32>
// CHECK-NEXT:     }
// CHECK-NEXT:     tier.dma %[[S_S]] -> %s : !tier.buffer<sram, 128xf32> -> !tier.buffer<hbm, 128xf32>
// CHECK-NEXT:     tier.dma %[[E_S]] -> %e : !tier.buffer<sram, 1x8x64xf32> -> !tier.buffer<hbm, 1x8x64xf32>
// CHECK-NEXT:     tier.dealloc %[[Y_S]]
// CHECK-NEXT:     tier.dealloc %[[IDS_S]]
// CHECK-NEXT:     tier.dealloc %[[EMB_S]]
// CHECK-NEXT:     tier.dealloc %[[S_S]]
// CHECK-NEXT:     tier.dealloc %[[E_S]]

// k2, a tiled embedding lookup (8 tiles of 64 tokens): the token ids and the
// gathered rows are both double-buffered, and the indexed DMA runs inside
// the loop, one tile of rows at a time.
// CHECK-NEXT:     %[[TOK_T:[^ ]+]] = tier.alloc buffers 2 : !tier.buffer<sram, 1x64xi64>
// CHECK-NEXT:     %[[ROWS_T:[^ ]+]] = tier.alloc buffers 2 : !tier.buffer<sram, 1x64x64xf32>
// CHECK-NEXT:     %t = tier.alloc : !tier.buffer<hbm, 1x512x64xf32>
// CHECK-NEXT:     %[[T_T:[^ ]+]] = tier.alloc : !tier.buffer<sram, 1x64x64xf32>
// CHECK-NEXT:     %[[Z:[^ ]+]] = arith.constant 0 : index
// CHECK-NEXT:     %[[ONE:[^ ]+]] = arith.constant 1 : index
// CHECK-NEXT:     %[[C8:[^ ]+]] = arith.constant 8 : index
// CHECK-NEXT:     %[[C64:[^ ]+]] = arith.constant 64 : index
// CHECK-NEXT:     scf.for %[[J:[^ ]+]] = %[[Z]] to %[[C8]] step %[[ONE]] {
// CHECK-NEXT:       %[[OFF2:[^ ]+]] = arith.muli %[[J]], %[[C64]] : index
// CHECK-NEXT:       tier.dma %tokens[%[[Z]], %[[OFF2]]] -> %[[TOK_T]] : !tier.buffer<hbm, 1x512xi64> -> !tier.buffer<sram, 1x64xi64>
// CHECK-NEXT:       tier.gather %p_embed[%[[TOK_T]]] -> %[[ROWS_T]] : !tier.buffer<ddr, 1000x64xf32>, !tier.buffer<sram, 1x64xi64> -> !tier.buffer<sram, 1x64x64xf32>
// CHECK-NEXT:       tier.compute "k2" ins(%[[TOK_T]], %[[ROWS_T]] : !tier.buffer<sram, 1x64xi64>, !tier.buffer<sram, 1x64x64xf32>) outs(%[[T_T]] : !tier.buffer<sram, 1x64x64xf32>) attributes {tiles = 8 : i64} {
// CHECK-NEXT:       ^bb0(%{{[^:]+}}: tensor<1x64xi64>, %[[TROWS:[^:]+]]: tensor<1x64x64xf32>):
// CHECK-NEXT:         rdu.yield %[[TROWS]] : tensor<1x64x64xf32>
// CHECK-NEXT:       }
// CHECK-NEXT:       tier.dma %[[T_T]] -> %t[%[[Z]], %[[OFF2]], %[[Z]]] : !tier.buffer<sram, 1x64x64xf32> -> !tier.buffer<hbm, 1x512x64xf32>
// CHECK-NEXT:     }
// CHECK-NEXT:     tier.dealloc %[[TOK_T]]
// CHECK-NEXT:     tier.dealloc %[[ROWS_T]]
// CHECK-NEXT:     tier.dealloc %[[T_T]]
// The results are returned, not freed.
// CHECK-NEXT:     func.return %s, %e, %t : !tier.buffer<hbm, 128xf32>, !tier.buffer<hbm, 1x8x64xf32>, !tier.buffer<hbm, 1x512x64xf32>
// CHECK-NEXT:   }
// CHECK-NEXT: }

builtin.module attributes {rdu.level = #rdu<level kernels>} {
  tier.global @w in hbm : tensor<64x64xf32> {kind = "parameter"}
  tier.global @embed in ddr : tensor<1000x64xf32> {kind = "parameter"}
  func.func @forward(%x: tensor<128x64xf32> {rdu.input = "x"}, %ids: tensor<1x8xi64> {rdu.input = "ids"}, %tokens: tensor<1x512xi64> {rdu.input = "tokens"}, %p_w: tensor<64x64xf32> {rdu.global = @w}, %p_embed: tensor<1000x64xf32> {rdu.global = @embed}) -> (tensor<128xf32>, tensor<1x8x64xf32>, tensor<1x512x64xf32>) {
    %y = rdu.kernel "k0"(%x, %p_w) {rdu.tile_plan = #rdu.tile_plan<tiles = 4, size = 32, in = [0, -1], out = [0], working_set = 49152>} : (tensor<128x64xf32>, tensor<64x64xf32>) -> tensor<128x64xf32> {
    ^bb0(%x_1: tensor<128x64xf32>, %p_w_1: tensor<64x64xf32>):
      %mm = rdu.matmul %x_1, %p_w_1 transpose_rhs : tensor<128x64xf32>, tensor<64x64xf32> -> tensor<128x64xf32>
      %y_1 = rdu.map %mm : (tensor<128x64xf32>) -> tensor<128x64xf32> {
      ^bb0(%0: f32):
        %1 = arith.constant 0.000000e+00 : f32
        %2 = arith.maximumf %0, %1 : f32
        rdu.yield %2 : f32
      }
      rdu.yield %y_1 : tensor<128x64xf32>
    } loc("model.py":7:5)
    %s, %e = rdu.kernel "k1"(%y, %p_embed, %ids) {rdu.tile_plan = #rdu.tile_plan<tiles = 1, size = 0, in = [-1, -1, -1], out = [-1, -1], working_set = 37440>} : (tensor<128x64xf32>, tensor<1000x64xf32>, tensor<1x8xi64>) -> (tensor<128xf32>, tensor<1x8x64xf32>) {
    ^bb0(%y_1: tensor<128x64xf32>, %p_embed_1: tensor<1000x64xf32>, %ids_1: tensor<1x8xi64>):
      %s_1 = rdu.reduce sum %y_1 dims [1] : tensor<128x64xf32> -> tensor<128xf32>
      %emb = rdu.gather %p_embed_1[%ids_1] dim 0 : tensor<1000x64xf32>, tensor<1x8xi64> -> tensor<1x8x64xf32>
      %e_1 = rdu.map %emb : (tensor<1x8x64xf32>) -> tensor<1x8x64xf32> {
      ^bb0(%0: f32):
        %1 = arith.constant 8.000000e+00 : f32
        %2 = arith.mulf %0, %1 : f32
        rdu.yield %2 : f32
      }
      rdu.yield %s_1, %e_1 : tensor<128xf32>, tensor<1x8x64xf32>
    }
    %t = rdu.kernel "k2"(%p_embed, %tokens) {rdu.tile_plan = #rdu.tile_plan<tiles = 8, size = 64, in = [-1, 1], out = [1], working_set = 33792>} : (tensor<1000x64xf32>, tensor<1x512xi64>) -> tensor<1x512x64xf32> {
    ^bb0(%p_embed_1: tensor<1000x64xf32>, %tokens_1: tensor<1x512xi64>):
      %rows = rdu.gather %p_embed_1[%tokens_1] dim 0 : tensor<1000x64xf32>, tensor<1x512xi64> -> tensor<1x512x64xf32>
      rdu.yield %rows : tensor<1x512x64xf32>
    }
    func.return %s, %e, %t : tensor<128xf32>, tensor<1x8x64xf32>, tensor<1x512x64xf32>
  }
}

// -----

// Untiled neighbours. k0's result is read only by k1 and both working sets
// fit the SRAM together, so it stays in k0's SRAM output buffer: k1 reads it
// in place and frees it. k1's result is returned too, so it goes to HBM (and
// is not freed), and k2 reads it back from there.
// CHECK-LABEL: func.func @forward(%v: !tier.buffer<hbm, 4x16xf32> {rdu.input = "v"}) -> (!tier.buffer<hbm, 4x16xf32>, !tier.buffer<hbm, 4x16xf32>) {
// CHECK:         tier.dma %v -> %[[V_S:[^ ]+]] : !tier.buffer<hbm, 4x16xf32> -> !tier.buffer<sram, 4x16xf32>
// CHECK-NEXT:    tier.compute "k0" ins(%[[V_S]] : !tier.buffer<sram, 4x16xf32>) outs(%[[R:[^ ]+]] : !tier.buffer<sram, 4x16xf32>)
// CHECK-NOT:     tier.dma %[[R]]
// CHECK-NOT:     tier.dealloc %[[R]]
// CHECK:         %e = tier.alloc : !tier.buffer<hbm, 4x16xf32>
// CHECK-NEXT:    %[[E_S:[^ ]+]] = tier.alloc : !tier.buffer<sram, 4x16xf32>
// CHECK-NEXT:    tier.compute "k1" ins(%[[R]] : !tier.buffer<sram, 4x16xf32>) outs(%[[E_S]] : !tier.buffer<sram, 4x16xf32>)
// CHECK:         tier.dma %[[E_S]] -> %e : !tier.buffer<sram, 4x16xf32> -> !tier.buffer<hbm, 4x16xf32>
// CHECK-NEXT:    tier.dealloc %[[R]] : !tier.buffer<sram, 4x16xf32>
// CHECK:         tier.dma %e -> %[[E_IN:[^ ]+]] : !tier.buffer<hbm, 4x16xf32> -> !tier.buffer<sram, 4x16xf32>
// CHECK-NEXT:    tier.compute "k2" ins(%[[E_IN]] : !tier.buffer<sram, 4x16xf32>)
// CHECK-NOT:     tier.dealloc %e
// CHECK:         func.return %e, %f : !tier.buffer<hbm, 4x16xf32>, !tier.buffer<hbm, 4x16xf32>

// NOKEEP-LABEL: func.func @forward(%v: !tier.buffer<hbm, 4x16xf32> {rdu.input = "v"})
// NOKEEP:         %r = tier.alloc : !tier.buffer<hbm, 4x16xf32>
// NOKEEP:         tier.compute "k0" ins(%{{[^ ]+}} : !tier.buffer<sram, 4x16xf32>) outs(%[[R_S:[^ ]+]] : !tier.buffer<sram, 4x16xf32>)
// NOKEEP:         tier.dma %[[R_S]] -> %r : !tier.buffer<sram, 4x16xf32> -> !tier.buffer<hbm, 4x16xf32>
// NOKEEP:         tier.dma %r -> %[[R_IN:[^ ]+]] : !tier.buffer<hbm, 4x16xf32> -> !tier.buffer<sram, 4x16xf32>
// NOKEEP-NEXT:    tier.dealloc %r : !tier.buffer<hbm, 4x16xf32>
// NOKEEP-NEXT:    tier.compute "k1" ins(%[[R_IN]] : !tier.buffer<sram, 4x16xf32>)
builtin.module attributes {rdu.level = #rdu<level kernels>} {
  func.func @forward(%v: tensor<4x16xf32> {rdu.input = "v"}) -> (tensor<4x16xf32>, tensor<4x16xf32>) {
    %r = rdu.kernel "k0"(%v) {rdu.tile_plan = #rdu.tile_plan<tiles = 1, size = 0, in = [-1], out = [-1], working_set = 512>} : (tensor<4x16xf32>) -> tensor<4x16xf32> {
    ^bb0(%a: tensor<4x16xf32>):
      %0 = rdu.map %a : (tensor<4x16xf32>) -> tensor<4x16xf32> {
      ^bb0(%s: f32):
        %c = arith.constant 0.000000e+00 : f32
        %m = arith.maximumf %s, %c : f32
        rdu.yield %m : f32
      }
      rdu.yield %0 : tensor<4x16xf32>
    }
    %e = rdu.kernel "k1"(%r) {rdu.tile_plan = #rdu.tile_plan<tiles = 1, size = 0, in = [-1], out = [-1], working_set = 512>} : (tensor<4x16xf32>) -> tensor<4x16xf32> {
    ^bb0(%a: tensor<4x16xf32>):
      %0 = rdu.map %a : (tensor<4x16xf32>) -> tensor<4x16xf32> {
      ^bb0(%s: f32):
        %x = math.exp %s : f32
        rdu.yield %x : f32
      }
      rdu.yield %0 : tensor<4x16xf32>
    }
    %f = rdu.kernel "k2"(%e) {rdu.tile_plan = #rdu.tile_plan<tiles = 1, size = 0, in = [-1], out = [-1], working_set = 512>} : (tensor<4x16xf32>) -> tensor<4x16xf32> {
    ^bb0(%a: tensor<4x16xf32>):
      %0 = rdu.map %a : (tensor<4x16xf32>) -> tensor<4x16xf32> {
      ^bb0(%s: f32):
        %n = arith.negf %s : f32
        rdu.yield %n : f32
      }
      rdu.yield %0 : tensor<4x16xf32>
    }
    func.return %e, %f : tensor<4x16xf32>, tensor<4x16xf32>
  }
}

// -----

// Tiled kernels (Inputs/tiny.toml: 64 KiB of SRAM). k0's result %w is read
// whole by k1 (untiled there): both kernels hold it whole anyway, so it stays
// in k0's output buffer although their working sets (40,000 + 30,000 bytes)
// exceed the SRAM together. k1's result is tiled on both sides: it stays in
// one SRAM buffer of its whole shape (32 KiB, which fits beside either
// kernel's working set), filled tile by tile by an SRAM-to-SRAM copy, and
// k2's loop copies its windows into k2's tile buffers; it is freed after k2.
// CHECK-LABEL: func.func @forward(%x: !tier.buffer<hbm, 128x64xf32> {rdu.input = "x"}, %v: !tier.buffer<hbm, 64x64xf32> {rdu.input = "v"}) -> !tier.buffer<hbm, 128x64xf32> {
// CHECK:         tier.compute "k0" ins(%{{[^ ]+}} : !tier.buffer<sram, 64x64xf32>) outs(%[[W:[^ ]+]] : !tier.buffer<sram, 64x64xf32>)
// CHECK-NOT:     tier.dma %[[W]]
// CHECK:         %[[Y_WHOLE:[^ ]+]] = tier.alloc : !tier.buffer<sram, 128x64xf32>
// CHECK-NEXT:    %[[Y_T:[^ ]+]] = tier.alloc : !tier.buffer<sram, 32x64xf32>
// CHECK:         scf.for
// CHECK:           tier.compute "k1" ins(%{{[^ ]+}}, %[[W]] : !tier.buffer<sram, 32x64xf32>, !tier.buffer<sram, 64x64xf32>) outs(%[[Y_T]] : !tier.buffer<sram, 32x64xf32>)
// CHECK:           tier.dma %[[Y_T]] -> %[[Y_WHOLE]][%{{.+}}] : !tier.buffer<sram, 32x64xf32> -> !tier.buffer<sram, 128x64xf32>
// CHECK-NEXT:    }
// CHECK:         tier.dealloc %[[W]] : !tier.buffer<sram, 64x64xf32>
// CHECK-NOT:     tier.dealloc %[[Y_WHOLE]] :
// CHECK:         %[[Y_IN:[^ ]+]] = tier.alloc buffers 2 : !tier.buffer<sram, 32x64xf32>
// CHECK:         scf.for
// CHECK:           tier.dma %[[Y_WHOLE]][%{{.+}}] -> %[[Y_IN]] : !tier.buffer<sram, 128x64xf32> -> !tier.buffer<sram, 32x64xf32>
// CHECK-NEXT:      tier.compute "k2" ins(%[[Y_IN]] : !tier.buffer<sram, 32x64xf32>)
// CHECK:         tier.dealloc %[[Y_IN]]
// CHECK-NEXT:    tier.dealloc %[[Y_WHOLE]] : !tier.buffer<sram, 128x64xf32>
// CHECK-NOT:     !tier.buffer<hbm, 64x64xf32>
// CHECK:         func.return %z : !tier.buffer<hbm, 128x64xf32>
// The only HBM buffer it allocates is the result.
// RUN: rducc-opt --split-input-file -p 'rdu-insert-dma{target="%S/Inputs/tiny.toml"}' %s | filecheck %s --check-prefix=TRAFFIC
// TRAFFIC-LABEL: func.func @forward(%x: !tier.buffer<hbm, 128x64xf32> {rdu.input = "x"}, %v: !tier.buffer<hbm, 64x64xf32>
// TRAFFIC-COUNT-1: tier.alloc : !tier.buffer<hbm, 128x64xf32>
// TRAFFIC-NOT:   tier.alloc : !tier.buffer<hbm
// TRAFFIC:       func.return %z
// With 64 PMUs of 1 KiB (Inputs/tiny-pmus.toml) k1's result does not fit:
// its 32 whole PMUs on top of the 40 that k1's tile buffers and %w take are past
// 64, though the bytes would fit. It goes through HBM; %w still stays on chip.
// RUN: rducc-opt --split-input-file -p 'rdu-insert-dma{target="%S/Inputs/tiny-pmus.toml"}' %s | filecheck %s --check-prefix=PMUS
// PMUS-LABEL: func.func @forward(%x: !tier.buffer<hbm, 128x64xf32> {rdu.input = "x"}, %v: !tier.buffer<hbm, 64x64xf32>
// PMUS:         tier.compute "k0" ins(%{{[^ ]+}} : !tier.buffer<sram, 64x64xf32>) outs(%[[W:[^ ]+]] : !tier.buffer<sram, 64x64xf32>)
// PMUS:         %y = tier.alloc : !tier.buffer<hbm, 128x64xf32>
// PMUS:           tier.compute "k1" ins(%{{[^ ]+}}, %[[W]] :
// PMUS:           tier.dma %{{[^ ]+}} -> %y[%{{.+}}] : !tier.buffer<sram, 32x64xf32> -> !tier.buffer<hbm, 128x64xf32>
// PMUS:           tier.dma %y[%{{.+}}] -> %{{[^ ]+}} : !tier.buffer<hbm, 128x64xf32> -> !tier.buffer<sram, 32x64xf32>
// PMUS-NEXT:      tier.compute "k2"
builtin.module attributes {rdu.level = #rdu<level kernels>} {
  func.func @forward(%x: tensor<128x64xf32> {rdu.input = "x"}, %v: tensor<64x64xf32> {rdu.input = "v"}) -> tensor<128x64xf32> {
    %w = rdu.kernel "k0"(%v) {rdu.tile_plan = #rdu.tile_plan<tiles = 1, size = 0, in = [-1], out = [-1], working_set = 40000>} : (tensor<64x64xf32>) -> tensor<64x64xf32> {
    ^bb0(%a: tensor<64x64xf32>):
      %0 = rdu.map %a : (tensor<64x64xf32>) -> tensor<64x64xf32> {
      ^bb0(%s: f32):
        %n = arith.negf %s : f32
        rdu.yield %n : f32
      }
      rdu.yield %0 : tensor<64x64xf32>
    }
    %y = rdu.kernel "k1"(%x, %w) {rdu.tile_plan = #rdu.tile_plan<tiles = 4, size = 32, in = [0, -1], out = [0], working_set = 30000>} : (tensor<128x64xf32>, tensor<64x64xf32>) -> tensor<128x64xf32> {
    ^bb0(%a: tensor<128x64xf32>, %b: tensor<64x64xf32>):
      %mm = rdu.matmul %a, %b transpose_rhs : tensor<128x64xf32>, tensor<64x64xf32> -> tensor<128x64xf32>
      rdu.yield %mm : tensor<128x64xf32>
    }
    %z = rdu.kernel "k2"(%y) {rdu.tile_plan = #rdu.tile_plan<tiles = 4, size = 32, in = [0], out = [0], working_set = 24576>} : (tensor<128x64xf32>) -> tensor<128x64xf32> {
    ^bb0(%a: tensor<128x64xf32>):
      %0 = rdu.map %a : (tensor<128x64xf32>) -> tensor<128x64xf32> {
      ^bb0(%s: f32):
        %e = math.exp %s : f32
        rdu.yield %e : f32
      }
      rdu.yield %0 : tensor<128x64xf32>
    }
    func.return %z : tensor<128x64xf32>
  }
}

// -----

// The same tiled neighbours, but k2's working set (40,000 bytes) leaves no room
// for k1's whole result (32 KiB) beside it: the result goes through HBM.
// CHECK-LABEL: func.func @forward(%x: !tier.buffer<hbm, 128x64xf32> {rdu.input = "x"}, %w: !tier.buffer<hbm, 64x64xf32> {rdu.input = "w"})
// CHECK:         %y = tier.alloc : !tier.buffer<hbm, 128x64xf32>
// CHECK:           tier.dma %{{[^ ]+}} -> %y[%{{.+}}] : !tier.buffer<sram, 32x64xf32> -> !tier.buffer<hbm, 128x64xf32>
// CHECK:           tier.dma %y[%{{.+}}] -> %{{[^ ]+}} : !tier.buffer<hbm, 128x64xf32> -> !tier.buffer<sram, 32x64xf32>
// CHECK-NOT:     !tier.buffer<sram, 128x64xf32>
// CHECK:         func.return
builtin.module attributes {rdu.level = #rdu<level kernels>} {
  func.func @forward(%x: tensor<128x64xf32> {rdu.input = "x"}, %w: tensor<64x64xf32> {rdu.input = "w"}) -> tensor<128x64xf32> {
    %y = rdu.kernel "k1"(%x, %w) {rdu.tile_plan = #rdu.tile_plan<tiles = 4, size = 32, in = [0, -1], out = [0], working_set = 30000>} : (tensor<128x64xf32>, tensor<64x64xf32>) -> tensor<128x64xf32> {
    ^bb0(%a: tensor<128x64xf32>, %b: tensor<64x64xf32>):
      %mm = rdu.matmul %a, %b transpose_rhs : tensor<128x64xf32>, tensor<64x64xf32> -> tensor<128x64xf32>
      rdu.yield %mm : tensor<128x64xf32>
    }
    %z = rdu.kernel "k2"(%y) {rdu.tile_plan = #rdu.tile_plan<tiles = 4, size = 32, in = [0], out = [0], working_set = 40000>} : (tensor<128x64xf32>) -> tensor<128x64xf32> {
    ^bb0(%a: tensor<128x64xf32>):
      %0 = rdu.map %a : (tensor<128x64xf32>) -> tensor<128x64xf32> {
      ^bb0(%s: f32):
        %e = math.exp %s : f32
        rdu.yield %e : f32
      }
      rdu.yield %0 : tensor<128x64xf32>
    }
    func.return %z : tensor<128x64xf32>
  }
}
