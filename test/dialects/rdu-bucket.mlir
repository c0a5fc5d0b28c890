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
// A pass runs on each bucket as a whole program; the outer module takes the level they reach.
// RUN: rducc-opt -p 'rdu-canonicalize,rdu-outline-layers,rdu-split-contraction,cse,rdu-fuse{level=2},rdu-merge-maps,rdu-place-saved,rdu-tile,rdu-place-tiers,rdu-insert-dma{keep_on_chip=true},rdu-sram-alloc,rdu-map-units' %s | filecheck %s --check-prefix=PLACED

// CHECK:      builtin.module attributes {rdu.level = #rdu<level graph>} {
// CHECK-NEXT:   builtin.module @forward__batch1_seq8 attributes {rdu.bucket = #rdu.bucket<batch = 1, seq = 8>} {
// CHECK:          func.func @forward(%x: tensor<1x8xf32> {rdu.input = "x"}) -> tensor<1x8xf32>
// CHECK:        builtin.module @forward__batch4_seq8 attributes {rdu.bucket = #rdu.bucket<batch = 4, seq = 8>} {
// CHECK:          func.func @forward(%x: tensor<4x8xf32> {rdu.input = "x"}) -> tensor<4x8xf32>

// PLACED:      builtin.module attributes {rdu.level = #rdu<level placed>} {
// PLACED-NEXT:   builtin.module @forward__batch1_seq8 attributes {rdu.bucket = #rdu.bucket<batch = 1, seq = 8>
// PLACED:          func.func @forward(%x: !tier.buffer<hbm, 1x8xf32> {rdu.input = "x"})
// PLACED:          tier.compute "k0"
// PLACED:        builtin.module @forward__batch4_seq8 attributes {rdu.bucket = #rdu.bucket<batch = 4, seq = 8>
// PLACED:          func.func @forward(%x: !tier.buffer<hbm, 4x8xf32> {rdu.input = "x"})
// PLACED:          tier.compute "k0"

// NEGATIVE: #rdu.bucket sizes must be >= 0
// TWICE: #rdu.bucket names a dim twice
// SAME: buckets @forward__batch1_seq8 and @forward__batch4_seq8 are for the same sizes (batch=1, seq=8)
// DIMS: bucket @forward__batch4_seq8 is for dims batch, the others for batch, seq
// STRAY: a module of shape buckets holds only modules marked rdu.bucket

builtin.module attributes {rdu.level = #rdu<level graph>} {
  builtin.module @forward__batch1_seq8 attributes {rdu.bucket = #rdu.bucket<batch = 1, seq = 8>} {
    func.func @forward(%x: tensor<1x8xf32> {rdu.input = "x"}) -> tensor<1x8xf32> {
      %relu = rdu.map %x : (tensor<1x8xf32>) -> tensor<1x8xf32> {
      ^bb0(%0: f32):
        %1 = arith.constant 0.000000e+00 : f32
        %2 = arith.maximumf %0, %1 : f32
        rdu.yield %2 : f32
      }
      func.return %relu : tensor<1x8xf32>
    }
  }
  builtin.module @forward__batch4_seq8 attributes {rdu.bucket = #rdu.bucket<batch = 4, seq = 8>} {
    func.func @forward(%x: tensor<4x8xf32> {rdu.input = "x"}) -> tensor<4x8xf32> {
      %relu = rdu.map %x : (tensor<4x8xf32>) -> tensor<4x8xf32> {
      ^bb0(%0: f32):
        %1 = arith.constant 0.000000e+00 : f32
        %2 = arith.maximumf %0, %1 : f32
        rdu.yield %2 : f32
      }
      func.return %relu : tensor<4x8xf32>
    }
  }
// STRAY  func.func @stray(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
// STRAY    func.return %x : tensor<4x8xf32>
// STRAY  }
}
