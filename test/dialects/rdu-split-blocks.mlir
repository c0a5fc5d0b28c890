// A split in unequal consecutive blocks (a fused grouped-query q/k/v projection:
// each block split across the ranks) round-trips beside the other forms; a
// block the parts do not divide, an empty block list, a block list in another
// place than the period's, and parts below 1 are refused. A negative block is
// held whole by every rank (multi-query k/v beside q split by heads); a split of
// only such blocks is refused. A block `size:p` splits into its own p parts, a
// factor of the entry's (grouped-query k and v beside q with more ranks than KV
// heads); p not a factor of the parts, or not dividing the size, is refused.
// Blocks adding up to less than the dim repeat along it (q/k/v fused per KV
// group): a global's part holds whole runs of the blocks' parts, and one that
// does not (10 rows, not a multiple of a run's 12) is refused.
// RUN: rducc-opt --check-roundtrip %s | filecheck %s
// RUN: printf 'tier.global @qkv : tensor<10x16xf32> {rdu.shard = #rdu.split<(0, 4, 1, [8:2, -4, -4])>}' | not rducc-opt 2>&1 | filecheck %s --check-prefix=RUNS
// RUN: echo '"test.op"() {a = #rdu.split<(2, 2, 1, [64, 31])>} : () -> ()' | not rducc-opt 2>&1 | filecheck %s --check-prefix=ODD
// RUN: echo '"test.op"() {a = #rdu.split<(2, 2, 1, [])>} : () -> ()' | not rducc-opt 2>&1 | filecheck %s --check-prefix=EMPTY
// RUN: echo '"test.op"() {a = #rdu.split<(2, 2, [1], 4)>} : () -> ()' | not rducc-opt 2>&1 | filecheck %s --check-prefix=PLACE
// RUN: echo '"test.op"() {a = #rdu.split<(2, 0, 1)>} : () -> ()' | not rducc-opt 2>&1 | filecheck %s --check-prefix=PARTS
// RUN: echo '"test.op"() {a = #rdu.split<(2, 2, 1, [-16, -16])>} : () -> ()' | not rducc-opt 2>&1 | filecheck %s --check-prefix=ALLWHOLE
// RUN: echo '"test.op"() {a = #rdu.split<(2, 4, 1, [64, 32:3])>} : () -> ()' | not rducc-opt 2>&1 | filecheck %s --check-prefix=OWNPARTS
// RUN: echo '"test.op"() {a = #rdu.split<(2, 4, 1, [64, 6:4])>} : () -> ()' | not rducc-opt 2>&1 | filecheck %s --check-prefix=OWNSIZE

// CHECK: "test.op"() {gqa = #rdu.split<(1, 16, 1, [4096, 1024:8, 1024:8])>, mqa = #rdu.split<(0, 2, 1, [64, -16, -16])>, qkv = #rdu.split<(0, 2, 1, [64, 32, 32])>, heads = #rdu.split<(0, 4, 2, 8), (1, 2, 1, [4, 2])>, whole = #rdu.split<>} : () -> ()
"test.op"() {gqa = #rdu.split<(1, 16, 1, [4096, 1024:8, 1024:8])>, mqa = #rdu.split<(0, 2, 1, [64, -16, -16])>, qkv = #rdu.split<(0, 2, 1, [64, 32, 32])>, heads = #rdu.split<(0, 4, 2, 8), (1, 2, 1, [4, 2])>, whole = #rdu.split<>} : () -> ()

// CHECK: tier.global @grouped : tensor<12x16xf32> {rdu.shard = #rdu.split<(0, 4, 1, [8:2, -4, -4])>}
tier.global @grouped : tensor<12x16xf32> {rdu.shard = #rdu.split<(0, 4, 1, [8:2, -4, -4])>}

// RUNS: error: 'tier.global' @qkv of [10, 16] is no rank's part of a whole split with dim 0 split 4 ways in blocks ['8 split 2 ways', '4 held whole', '4 held whole'] repeated, the runs split 2 ways
// ODD: rducc-opt: error: stdin:1:1: error: split blocks [64, 31] must be sizes > 0 that 2 parts divide
// EMPTY: rducc-opt: error: stdin:1:1: error: split blocks [] must be sizes > 0 that 2 parts divide
// ALLWHOLE: error: split blocks [-16, -16] must be sizes > 0 that 2 parts divide (or < 0: held whole; size:p: split p ways, p a factor of 2), at least one split
// OWNPARTS: error: split blocks [64, 32:3] must be sizes > 0 that 4 parts divide (or < 0: held whole; size:p: split p ways, p a factor of 4), at least one split
// OWNSIZE: error: split blocks [64, 6:4] must be sizes > 0
// PLACE: error: a split entry is (dim, parts, stride), (dim, parts, stride, period) or (dim, parts, stride, [block sizes])
// PARTS: rducc-opt: error: stdin:1:1: error: a split entry needs dim >= 0, parts >= 1 and stride >= 1, got (2, 0, 1)
