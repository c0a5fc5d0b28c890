// Each pass declares the IR levels it accepts; IR at another level is one
// clear error naming the pass and both levels (no traceback).
// RUN: not rducc-opt -p rdu-tile %s 2>&1 | filecheck %s --check-prefix=TILE
// RUN: not rducc-opt -p rdu-sram-alloc %s 2>&1 | filecheck %s --check-prefix=ALLOC
// RUN: not rducc-opt -p rdu-insert-dma %s 2>&1 | filecheck %s --check-prefix=DMA
// The level round-trips as a typed attribute; a string from an older file is read too.
// RUN: rducc-opt %s | filecheck %s --check-prefix=PRINT
// RUN: sed -e 's/#rdu<level graph>/"graph"/' %s | not rducc-opt -p rdu-tile 2>&1 | filecheck %s --check-prefix=TILE

// TILE-NOT:  Traceback
// TILE:      rducc-opt: error: rdu-tile takes IR at level kernels; this module is at level graph
// ALLOC-NOT: Traceback
// ALLOC:     rducc-opt: error: rdu-sram-alloc takes IR at level memory or placed; this module is at level graph
// DMA:       rducc-opt: error: rdu-insert-dma takes IR at level kernels; this module is at level graph
// PRINT:     builtin.module attributes {rdu.level = #rdu<level graph>}

builtin.module attributes {rdu.level = #rdu<level graph>} {
  func.func @forward(%x: tensor<4xf32> {rdu.input = "x"}) -> tensor<4xf32> {
    func.return %x : tensor<4xf32>
  }
}
