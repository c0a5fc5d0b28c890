// A lookup whose row index the kernel computes (a vocab-parallel embedding's
// rank-local row, an index offset or clamped in the model's code) reads its
// table by an indexed DMA only when the index is a kernel input
// (`gathered_inputs`): rdu-fuse weighs a gathered table as rdu-insert-dma lowers
// it (no buffer, the gather no stage, its rows an input) and tries a cut before
// each gather whose index the group computes (passes/rdu_fuse.py, `index_cuts`).
// RUN: rducc-opt --split-input-file -p 'rdu-fuse{level=2}' %s | filecheck %s
//
// Computed index, 8 MiB table (4,096 x 1,024 bf16): fused whole, the gather
// streams the table through one PCU (41 us at the feed bandwidth) beside its
// HBM read; cut before the gather, the index is its own kernel (a launch) and
// the table is read by rows. Two kernels.
// CHECK-LABEL: func.func @computed_index
// CHECK:         rdu.kernel "k0"
// CHECK-NEXT:    ^bb0
// CHECK-NEXT:      rdu.map
// CHECK:           rdu.yield
// CHECK:         rdu.kernel "k1"
// CHECK-NEXT:    ^bb0
// CHECK-NEXT:      rdu.gather
// CHECK-NEXT:      rdu.map
// CHECK-NOT:     rdu.kernel "k2"

func.func @computed_index(%table: tensor<4096x1024xbf16> {rdu.input = "table"}, %ids: tensor<1xi64> {rdu.input = "ids"}, %offset: tensor<1xi64> {rdu.input = "offset"}) -> tensor<1x1024xbf16> {
    %local = rdu.map %ids, %offset : (tensor<1xi64>, tensor<1xi64>) -> tensor<1xi64> {
    ^bb0(%a: i64, %b: i64):
      %s = arith.subi %a, %b : i64
      rdu.yield %s : i64
    }
    %rows = rdu.gather %table[%local] dim 0 : tensor<4096x1024xbf16>, tensor<1xi64> -> tensor<1x1024xbf16>
    %y = rdu.map %rows : (tensor<1x1024xbf16>) -> tensor<1x1024xbf16> {
    ^bb0(%r: bf16):
      %t = arith.addf %r, %r : bf16
      rdu.yield %t : bf16
    }
    func.return %y : tensor<1x1024xbf16>
}

// -----

// The negative case: a 16-row table (32 KiB) costs less streamed whole than a
// second launch, so the computed index stays in the lookup's kernel.
// CHECK-LABEL: func.func @small_table
// CHECK:         rdu.kernel "k0"
// CHECK-NEXT:    ^bb0
// CHECK-NEXT:      rdu.map
// CHECK:           rdu.gather
// CHECK-NOT:     rdu.kernel "k1"

func.func @small_table(%table: tensor<16x1024xbf16> {rdu.input = "table"}, %ids: tensor<1xi64> {rdu.input = "ids"}, %offset: tensor<1xi64> {rdu.input = "offset"}) -> tensor<1x1024xbf16> {
    %local = rdu.map %ids, %offset : (tensor<1xi64>, tensor<1xi64>) -> tensor<1xi64> {
    ^bb0(%a: i64, %b: i64):
      %s = arith.subi %a, %b : i64
      rdu.yield %s : i64
    }
    %rows = rdu.gather %table[%local] dim 0 : tensor<16x1024xbf16>, tensor<1xi64> -> tensor<1x1024xbf16>
    %y = rdu.map %rows : (tensor<1x1024xbf16>) -> tensor<1x1024xbf16> {
    ^bb0(%r: bf16):
      %t = arith.addf %r, %r : bf16
      rdu.yield %t : bf16
    }
    func.return %y : tensor<1x1024xbf16>
}
