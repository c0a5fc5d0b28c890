// RUN: rducc-opt --split-input-file -p rdu-tile %s | filecheck %s --check-prefix=TILE
// RUN: rducc-opt --split-input-file -p rdu-tile,rdu-place-tiers,rdu-insert-dma %s | filecheck %s --check-prefix=DMA
// RUN: not rducc-opt -p rdu-tile %S/Inputs/gather-computed-index.mlir 2>&1 | filecheck %s --check-prefix=ERR

// Kernels over Llama 3.1's 4,096 x 128,256 float32 logits (2.1 GB) on sn40l
// (520 MB of SRAM): ops along a large dim tile like the other ops.
//
// A loss's target gather, logits[rows, targets] (two index tensors, dims 0
// and 1): the logits stay off chip and an indexed DMA brings in the 4,096
// picked elements, so the kernel fits whole.
// TILE:      %picked = rdu.kernel "k0"(%logits, %rows, %targets) {rdu.tile_plan = #rdu.tile_plan<tiles = 1, size = 0, in = [-1, -1, -1], out = [-1], working_set = 98304>}
// DMA:       tier.gather %logits[%r_sram, %t_sram] -> %g_sram : !tier.buffer<hbm, 4096x128256xf32>, !tier.buffer<sram, 4096x1xi64>, !tier.buffer<sram, 4096x1xi64> -> !tier.buffer<sram, 4096x1xf32>
// DMA-NOT:   tier.dma %logits

builtin.module attributes {rdu.level = #rdu<level kernels>} {
  func.func @forward(%logits: tensor<4096x128256xf32> {rdu.input = "logits"}, %rows: tensor<4096x1xi64> {rdu.input = "rows"}, %targets: tensor<4096x1xi64> {rdu.input = "targets"}) -> tensor<4096x1xf32> {
    %picked = rdu.kernel "k0"(%logits, %rows, %targets) : (tensor<4096x128256xf32>, tensor<4096x1xi64>, tensor<4096x1xi64>) -> tensor<4096x1xf32> {
    ^bb0(%l: tensor<4096x128256xf32>, %r: tensor<4096x1xi64>, %t: tensor<4096x1xi64>):
      %g = rdu.gather %l[%r, %t] dim 0 : tensor<4096x128256xf32>, tensor<4096x1xi64>, tensor<4096x1xi64> -> tensor<4096x1xf32>
      rdu.yield %g : tensor<4096x1xf32>
    }
    func.return %picked : tensor<4096x1xf32>
  }
}

// -----

// The logits split over 16 sockets' vocabulary, gathered whole (rdu-partition's
// all_gather before a reduction over the vocabulary): the joined dim stays
// whole, the rows tile (8 tiles of 512 rows, the input double-buffered).
// TILE:      %whole = rdu.kernel "k0"(%part) {rdu.tile_plan = #rdu.tile_plan<tiles = 8, size = 512, in = [0], out = [0], working_set = 295501824>}
// DMA:       scf.for
// DMA:         rdu.all_gather %{{[^ ]+}} dim 1 group 16 : tensor<512x8016xf32> -> tensor<512x128256xf32>

builtin.module attributes {rdu.level = #rdu<level kernels>} {
  func.func @forward(%part: tensor<4096x8016xf32> {rdu.input = "part"}) -> tensor<4096x128256xf32> {
    %whole = rdu.kernel "k0"(%part) : (tensor<4096x8016xf32>) -> tensor<4096x128256xf32> {
    ^bb0(%p: tensor<4096x8016xf32>):
      %g = rdu.all_gather %p dim 1 group 16 : tensor<4096x8016xf32> -> tensor<4096x128256xf32>
      rdu.yield %g : tensor<4096x128256xf32>
    }
    func.return %whole : tensor<4096x128256xf32>
  }
}
// ERR-NOT: Traceback
// ERR: rducc-opt: error: loss.py:7:3: error: kernel k0 cannot be tiled to fit sn40l: untiled it needs 2101428224 bytes
