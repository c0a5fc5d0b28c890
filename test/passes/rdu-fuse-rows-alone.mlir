// RUN: rducc-opt --split-input-file -p 'rdu-fuse{level=2 target="%S/Inputs/sram-110k.toml"}' %s | filecheck %s
// RUN: rducc-opt --split-input-file -p 'rdu-fuse{level=2 target="%S/Inputs/sram-110k.toml"},rdu-tile,rdu-place-tiers,rdu-insert-dma' %s | filecheck %s --check-prefix=DMA

// A cache (128 KiB, more than the target's 110,000 bytes of SRAM) whose new rows
// a scatter writes after they are computed, the cache read for nothing else and
// returned as its buffer's update: the kernel will write the rows alone
// (rducc.model.rows_alone, `tier.scatter {rows_only}`), the cache never held.
// rdu-fuse weighs the group by those rows (`planned_group`), so the row list
// (the position broadcast over the rows) stays in the scatter's kernel. Weighed
// with the cache in and out, the scatter did not fit with them: it was a kernel
// of its own whose index was a kernel input, no row list, so it was tiled and
// read and wrote the whole cache (a 32-layer stacked cache on one socket).
// CHECK-LABEL: func.func @forward
// CHECK:         %new = rdu.kernel "k1"(%mm, %pos, %b_cache)
// CHECK:           %index = rdu.broadcast
// CHECK-NEXT:      %new_1 = rdu.scatter %b_cache_1[%index] = %rows dim 2
// CHECK-NOT:     rdu.kernel "k2"
// DMA-LABEL:   func.func @forward
// DMA-NOT:       tier.dma %b_cache ->
// DMA:           tier.scatter %{{.+}} -> %b_cache[%{{.+}}] dim 2 {rows_only}

builtin.module {
  tier.global @cache : tensor<2x4x64x64xf32> {kind = "buffer"}
  func.func @forward(%h: tensor<1x64xf32> {rdu.input = "h"}, %w: tensor<512x64xf32> {rdu.input = "w"}, %pos: tensor<1xi64> {rdu.input = "pos"}, %b_cache: tensor<2x4x64x64xf32> {rdu.global = @cache}) -> (tensor<1x512xf32>, tensor<2x4x64x64xf32>) attributes {rdu.result_updates = ["", "buffer:cache"]} {
    %mm = rdu.matmul %h, %w transpose_rhs : tensor<1x64xf32>, tensor<512x64xf32> -> tensor<1x512xf32>
    %rows = rdu.reshape %mm : tensor<1x512xf32> -> tensor<2x4x1x64xf32>
    %row = rdu.reshape %pos : tensor<1xi64> -> tensor<1x1x1x1xi64>
    %index = rdu.broadcast %row : tensor<1x1x1x1xi64> -> tensor<2x4x1x64xi64>
    %new = rdu.scatter %b_cache[%index] = %rows dim 2 : tensor<2x4x64x64xf32>, tensor<2x4x1x64xi64>, tensor<2x4x1x64xf32> -> tensor<2x4x64x64xf32>
    func.return %mm, %new : tensor<1x512xf32>, tensor<2x4x64x64xf32>
  }
}

// -----

// Left alone: the same scatter whose new cache is a plain result (not the
// buffer's update, so not written in place: the kernel holds the whole cache).
// Weighed whole, it does not fit with the ops computing the rows and their
// positions, and is a kernel of its own, its index an input.
// CHECK-LABEL: func.func @forward
// CHECK:         %rows, %index = rdu.kernel "k1"(%mm, %pos)
// CHECK:         %new = rdu.kernel "k2"(%b_cache, %index, %rows)
// CHECK-NEXT:    ^bb0
// CHECK-NEXT:      rdu.scatter
// CHECK-NEXT:      rdu.yield
// DMA-LABEL:   func.func @forward
// DMA-NOT:       rows_only

builtin.module {
  tier.global @cache : tensor<2x4x64x64xf32> {kind = "buffer"}
  func.func @forward(%h: tensor<1x64xf32> {rdu.input = "h"}, %w: tensor<512x64xf32> {rdu.input = "w"}, %pos: tensor<1xi64> {rdu.input = "pos"}, %b_cache: tensor<2x4x64x64xf32> {rdu.global = @cache}) -> (tensor<1x512xf32>, tensor<2x4x64x64xf32>) {
    %mm = rdu.matmul %h, %w transpose_rhs : tensor<1x64xf32>, tensor<512x64xf32> -> tensor<1x512xf32>
    %rows = rdu.reshape %mm : tensor<1x512xf32> -> tensor<2x4x1x64xf32>
    %row = rdu.reshape %pos : tensor<1xi64> -> tensor<1x1x1x1xi64>
    %index = rdu.broadcast %row : tensor<1x1x1x1xi64> -> tensor<2x4x1x64xi64>
    %new = rdu.scatter %b_cache[%index] = %rows dim 2 : tensor<2x4x64x64xf32>, tensor<2x4x1x64xi64>, tensor<2x4x1x64xf32> -> tensor<2x4x64x64xf32>
    func.return %mm, %new : tensor<1x512xf32>, tensor<2x4x64x64xf32>
  }
}
