// RUN: rducc-opt --check-roundtrip %s --split-input-file | filecheck %s
// RUN: not rducc-opt %S/Inputs/mapping-unit-twice.mlir 2>&1 | filecheck %s --check-prefix=TWICE
// RUN: not rducc-opt %S/Inputs/mapping-off-grid.mlir 2>&1 | filecheck %s --check-prefix=GRID

// `#rdu.mapping` (rdu-map-units) prints and parses back the same: a 4 x 8
// grid (16 PCU sites, 16 PMU sites), two sections; section 1 reuses the units
// of section 0 (the chip is reconfigured between them).
"test.op"() {m = #rdu.mapping<grid = [4, 8], sections = 2, stages = [[0, 0, 0, 2, 1], [1, 0, 2, 14, 5], [2, 1, 0, 16, 3]], buffers = [[0, 0, 0, 3], [1, 1, 0, 16]]>} : () -> ()
// CHECK: "test.op"() {m = #rdu.mapping<grid = [4, 8], sections = 2, stages = [[0, 0, 0, 2, 1], [1, 0, 2, 14, 5], [2, 1, 0, 16, 3]], buffers = [[0, 0, 0, 3], [1, 1, 0, 16]]>} : () -> ()

// The verifier: a PCU given to two stages of one section.
// TWICE: PCU 1 is used twice in section 0
// TWICE-NOT: Traceback

// A PMU past the grid's 16.
// GRID: PMU 16 is outside the 4x8 grid (16 PMUs)
// GRID-NOT: Traceback
