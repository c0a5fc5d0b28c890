// A program compiled for several shapes (`rducc --shapes`): one module holding a
// named module per bucket, each marked with its sizes (#rdu.bucket). It
// round-trips; a bad bucket attribute, a second bucket for the same sizes, a
// bucket for other dims or anything beside the buckets is refused.
// RUN: rducc-opt --check-roundtrip %s | filecheck %s
// RUN: sed -e 's/batch = 4, seq = 8/batch = -4, seq = 8/' %s | not rducc-opt 2>&1 | filecheck %s --check-prefix=NEGATIVE
// RUN: sed -e 's/batch = 4, seq = 8/batch = 4, batch = 8/' %s | not rducc-opt 2>&1 | filecheck %s --check-prefix=TWICE
// RUN: sed -e 's/batch = 4, seq = 8/batch = 1, seq = 8/' %s | not rducc-opt 2>&1 | filecheck %s --check-prefix=SAME
// RUN: sed -e 's/batch = 4, seq = 8/batch = 4/' %s | not rducc-opt 2>&1 | filecheck %s --check-prefix=DIMS
// RUN: sed -e 's|^// STRAY||' %s | not rducc-opt 2>&1 | filecheck %s --check-prefix=STRAY

// CHECK:      builtin.module attributes {rdu.level = #rdu<level graph>} {
// CHECK-NEXT:   builtin.module @forward__batch1_seq8 attributes {rdu.bucket = #rdu.bucket<batch = 1, seq = 8>} {
// CHECK:          func.func @forward(%x: tensor<1x8xf32> {rdu.input = "x"}) -> tensor<1x8xf32>
// CHECK:        builtin.module @forward__batch4_seq8 attributes {rdu.bucket = #rdu.bucket<batch = 4, seq = 8>} {
// CHECK:          func.func @forward(%x: tensor<4x8xf32> {rdu.input = "x"}) -> tensor<4x8xf32>

// NEGATIVE: #rdu.bucket sizes must be >= 0
// TWICE: #rdu.bucket names a dim twice
// SAME: buckets @forward__batch1_seq8 and @forward__batch4_seq8 are for the same sizes (batch=1, seq=8)
// DIMS: bucket @forward__batch4_seq8 is for dims batch, the others for batch, seq
// STRAY: a module of shape buckets holds only modules marked rdu.bucket

builtin.module attributes {rdu.level = #rdu<level graph>} {
  builtin.module @forward__batch1_seq8 attributes {rdu.bucket = #rdu.bucket<batch = 1, seq = 8>} {
    func.func @forward(%x: tensor<1x8xf32> {rdu.input = "x"}) -> tensor<1x8xf32> {
      func.return %x : tensor<1x8xf32>
    }
  }
  builtin.module @forward__batch4_seq8 attributes {rdu.bucket = #rdu.bucket<batch = 4, seq = 8>} {
    func.func @forward(%x: tensor<4x8xf32> {rdu.input = "x"}) -> tensor<4x8xf32> {
      func.return %x : tensor<4x8xf32>
    }
  }
// STRAY  func.func @stray(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
// STRAY    func.return %x : tensor<4x8xf32>
// STRAY  }
}
