// A cache updated in place lives in its input's PMUs (dialects/streamed.py,
// "Updates in place"): rdu-fuse weighs an `rdu.scatter` of a kernel input that
// nothing else reads as the input's buffer with rows replaced, and counts only
// the rows written back, as rdu-insert-dma lowers it (a `tier.scatter` of the rows).
// RUN: rducc-opt --split-input-file -p 'rdu-fuse{level=2 target="%S/Inputs/fuse-few-pmus.toml"}' %s | filecheck %s
//
// The target has 10 PMUs of 4 KiB, free launches and a 1 ms reconfiguration.
// The cache (64x64 f32, 16 KiB) takes 4 PMUs; the row list, the row, q and the
// scores one each. Updated in place, the new cache is the old one's PMUs
// (the fuser's working set counts none for it, the mapper 1 for its output's
// handle): 9 PMUs, one section, one kernel. Given PMUs of its own (4 more), it
// would need 12, more than the target has, and the update and the scores would
// be two kernels (as GPT-NeoX's layer was, 8B at one
// socket: its 32 KV heads' caches took 128 PMUs more than the chip has beside
// the weights).
// CHECK-LABEL: func.func @updated_in_place
// CHECK:         rdu.kernel "k0"
// CHECK:           rdu.scatter
// CHECK-NEXT:      rdu.matmul
// CHECK-NOT:     rdu.kernel "k1"

func.func @updated_in_place(%cache: tensor<64x64xf32> {rdu.input = "cache"}, %rows: tensor<1x64xi64> {rdu.input = "rows"}, %row: tensor<1x64xf32> {rdu.input = "row"}, %q: tensor<1x64xf32> {rdu.input = "q"}) -> (tensor<64x64xf32>, tensor<1x64xf32>) {
    %new = rdu.scatter %cache[%rows] = %row dim 0 : tensor<64x64xf32>, tensor<1x64xi64>, tensor<1x64xf32> -> tensor<64x64xf32>
    %s = rdu.matmul %q, %new transpose_rhs : tensor<1x64xf32>, tensor<64x64xf32> -> tensor<1x64xf32>
    func.return %new, %s : tensor<64x64xf32>, tensor<1x64xf32>
}

// -----

// Not in place: the old cache is read again after the update (its scores beside
// the new one's), so the new cache needs PMUs of its own: 13 PMUs at once, more
// than the target has, and the update, its scores and the old cache's scores
// are three kernels.
// CHECK-LABEL: func.func @old_value_read_after
// CHECK:         rdu.kernel "k0"
// CHECK-NEXT:    ^bb0
// CHECK-NEXT:      rdu.scatter
// CHECK-NEXT:      rdu.yield
// CHECK:         rdu.kernel "k1"
// CHECK:         rdu.kernel "k2"

func.func @old_value_read_after(%cache: tensor<64x64xf32> {rdu.input = "cache"}, %rows: tensor<1x64xi64> {rdu.input = "rows"}, %row: tensor<1x64xf32> {rdu.input = "row"}, %q: tensor<1x64xf32> {rdu.input = "q"}) -> (tensor<64x64xf32>, tensor<1x64xf32>, tensor<1x64xf32>) {
    %new = rdu.scatter %cache[%rows] = %row dim 0 : tensor<64x64xf32>, tensor<1x64xi64>, tensor<1x64xf32> -> tensor<64x64xf32>
    %s = rdu.matmul %q, %new transpose_rhs : tensor<1x64xf32>, tensor<64x64xf32> -> tensor<1x64xf32>
    %t = rdu.matmul %q, %cache transpose_rhs : tensor<1x64xf32>, tensor<64x64xf32> -> tensor<1x64xf32>
    func.return %new, %s, %t : tensor<64x64xf32>, tensor<1x64xf32>, tensor<1x64xf32>
}
