// RUN: rducc-opt --split-input-file -p rdu-tile %s | filecheck %s --check-prefix=TILE
// RUN: rducc-opt --split-input-file -p rdu-tile,rdu-place-tiers,rdu-insert-dma %s | filecheck %s --check-prefix=DMA

// A KV cache stacked over 64 layers, 537 MB (sn40l has 520 MB of SRAM), whose
// new rows (one position of every layer) a kernel scatters into it after the
// layers, reading it for nothing else (rducc.model.rows_alone): rdu-tile weighs
// the kernel by those rows, not by the cache in and out (1 GB), so it stays
// untiled and rdu-insert-dma makes it yield the rows alone, written in place
// (`tier.scatter {rows_only}`), the cache never loaded.
// TILE:      %new = rdu.kernel "k0"(%rows, %pos, %b_cache) {rdu.tile_plan = #rdu.tile_plan<tiles = 1, size = 0, in = [-1, -1, -1], out = [-1], working_set = 2097280>}
// DMA-LABEL: func.func @forward
// DMA-NOT:   tier.dma %b_cache ->
// DMA:       tier.scatter %{{.+}} -> %b_cache[%{{.+}}] dim 2 {rows_only} : !tier.buffer<sram, 2x64x1x1024xf32>, !tier.buffer<sram, 1xi64> -> !tier.buffer<hbm, 2x64x1024x1024xf32>

builtin.module attributes {rdu.level = #rdu<level kernels>} {
  tier.global @cache : tensor<2x64x1024x1024xf32> {kind = "buffer"}
  func.func @forward(%rows: tensor<2x64x1x1024xf32> {rdu.input = "rows"}, %pos: tensor<1xi64> {rdu.input = "pos"}, %b_cache: tensor<2x64x1024x1024xf32> {rdu.global = @cache}) -> tensor<2x64x1024x1024xf32> attributes {rdu.result_updates = ["buffer:cache"]} {
    %new = rdu.kernel "k0"(%rows, %pos, %b_cache) : (tensor<2x64x1x1024xf32>, tensor<1xi64>, tensor<2x64x1024x1024xf32>) -> tensor<2x64x1024x1024xf32> {
    ^bb0(%r: tensor<2x64x1x1024xf32>, %p: tensor<1xi64>, %c: tensor<2x64x1024x1024xf32>):
      %row = rdu.reshape %p : tensor<1xi64> -> tensor<1x1x1x1xi64>
      %index = rdu.broadcast %row : tensor<1x1x1x1xi64> -> tensor<2x64x1x1024xi64>
      %c2 = rdu.scatter %c[%index] = %r dim 2 : tensor<2x64x1024x1024xf32>, tensor<2x64x1x1024xi64>, tensor<2x64x1x1024xf32> -> tensor<2x64x1024x1024xf32>
      rdu.yield %c2 : tensor<2x64x1024x1024xf32>
    }
    func.return %new : tensor<2x64x1024x1024xf32>
  }
}

// -----

// Left alone: the same kernel returning the new cache as a plain result (not
// the buffer's update, so not written in place): weighed whole, tiled, and
// written back whole tile by tile.
// TILE:      %new = rdu.kernel "k0"(%rows, %pos, %b_cache) {rdu.tile_plan = #rdu.tile_plan<tiles = {{[1-9][0-9]*}}, size = {{[0-9]+}}
// TILE-NOT:  tiles = 1,
// DMA-LABEL: func.func @forward
// DMA-NOT:   rows_only

builtin.module attributes {rdu.level = #rdu<level kernels>} {
  tier.global @cache : tensor<2x64x1024x1024xf32> {kind = "buffer"}
  func.func @forward(%rows: tensor<2x64x1x1024xf32> {rdu.input = "rows"}, %pos: tensor<1xi64> {rdu.input = "pos"}, %b_cache: tensor<2x64x1024x1024xf32> {rdu.global = @cache}) -> tensor<2x64x1024x1024xf32> {
    %new = rdu.kernel "k0"(%rows, %pos, %b_cache) : (tensor<2x64x1x1024xf32>, tensor<1xi64>, tensor<2x64x1024x1024xf32>) -> tensor<2x64x1024x1024xf32> {
    ^bb0(%r: tensor<2x64x1x1024xf32>, %p: tensor<1xi64>, %c: tensor<2x64x1024x1024xf32>):
      %row = rdu.reshape %p : tensor<1xi64> -> tensor<1x1x1x1xi64>
      %index = rdu.broadcast %row : tensor<1x1x1x1xi64> -> tensor<2x64x1x1024xi64>
      %c2 = rdu.scatter %c[%index] = %r dim 2 : tensor<2x64x1024x1024xf32>, tensor<2x64x1x1024xi64>, tensor<2x64x1x1024xf32> -> tensor<2x64x1024x1024xf32>
      rdu.yield %c2 : tensor<2x64x1024x1024xf32>
    }
    func.return %new : tensor<2x64x1024x1024xf32>
  }
}
