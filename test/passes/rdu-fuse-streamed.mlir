// Grouped-query heads repeated before the attention products (transformers'
// repeat_kv: reshape + broadcast + reshape of K and V over the cache) are
// streamed views (dialects/streamed.py): the products read the 2 cached KV
// heads by address for each of the 8 query heads, nothing the size of the
// repeated K and V (2 x 32 KiB, and K's transpose) is held in SRAM.
// RUN: rducc-opt -p 'rdu-fuse{level=2 target="%S/Inputs/sram-110k.toml"}' %s | filecheck %s
// RUN: rducc-opt -p 'rdu-fuse{level=2 target="%S/Inputs/sram-110k.toml"},rdu-tile,rdu-place-tiers,rdu-insert-dma,rdu-sram-alloc' %s | filecheck %s --check-prefix=ALLOC
//
// On a 110,000-byte SRAM the layer's sources (K and V: 16 KiB, the output
// projection: 64 KiB) fit as one kernel with the products reading the
// repeated heads by address.
// CHECK-LABEL: func.func @gqa
// CHECK:         rdu.kernel "k0"
// CHECK-COUNT-2:   rdu.broadcast
// CHECK:           rdu.matmul %{{.*}}, %{{.*}} transpose_rhs : tensor<1x128xf32>, tensor<128x128xf32>
// CHECK-NOT:     rdu.kernel "k1"
//
// Placed, the repeated K and V (and K's transpose) have no SRAM offset of their own.
// ALLOC-LABEL: func.func @gqa
// ALLOC:         %k5 = rdu.reshape %k_1 : tensor
// ALLOC-NEXT:    %kb = rdu.broadcast %k5 : tensor
// ALLOC-NEXT:    %kr = rdu.reshape %kb : tensor
// ALLOC-NEXT:    %kt = rdu.transpose %kr perm [0, 1, 3, 2] : tensor
// ALLOC-NEXT:    %s = rdu.matmul %q_1, %kt {tier.offset = {{[0-9]+}} : i64}
// ALLOC:         %vb = rdu.broadcast %v5 : tensor
// ALLOC-NEXT:    %vr = rdu.reshape %vb : tensor
// ALLOC-NEXT:    %a = rdu.matmul %p, %vr {tier.offset = {{[0-9]+}} : i64}
//
// Negative: the same repeated K also leaves the kernel (it is returned), so it
// is written whole: it is no streamed view, and the layer no longer fits one kernel.
// CHECK-LABEL: func.func @gqa_repeated_kept
// CHECK:         rdu.kernel "k0"
// CHECK:         rdu.kernel "k1"

func.func @gqa(%q: tensor<1x8x1x16xf32> {rdu.input = "q"}, %k: tensor<1x2x64x16xf32> {rdu.input = "k"},
               %v: tensor<1x2x64x16xf32> {rdu.input = "v"}, %wo: tensor<128x128xf32> {rdu.input = "wo"}) -> tensor<1x128xf32> {
  %k5 = rdu.reshape %k : tensor<1x2x64x16xf32> -> tensor<1x2x1x64x16xf32>
  %kb = rdu.broadcast %k5 : tensor<1x2x1x64x16xf32> -> tensor<1x2x4x64x16xf32>
  %kr = rdu.reshape %kb : tensor<1x2x4x64x16xf32> -> tensor<1x8x64x16xf32>
  %kt = rdu.transpose %kr perm [0, 1, 3, 2] : tensor<1x8x64x16xf32> -> tensor<1x8x16x64xf32>
  %s = rdu.matmul %q, %kt : tensor<1x8x1x16xf32>, tensor<1x8x16x64xf32> -> tensor<1x8x1x64xf32>
  %m = rdu.reduce max %s dims [3] keepdim : tensor<1x8x1x64xf32> -> tensor<1x8x1x1xf32>
  %e = rdu.map %s, %m : (tensor<1x8x1x64xf32>, tensor<1x8x1x1xf32>) -> tensor<1x8x1x64xf32> {
  ^bb0(%0: f32, %1: f32):
    %2 = arith.subf %0, %1 : f32
    %3 = math.exp %2 : f32
    rdu.yield %3 : f32
  }
  %z = rdu.reduce sum %e dims [3] keepdim : tensor<1x8x1x64xf32> -> tensor<1x8x1x1xf32>
  %p = rdu.map %e, %z : (tensor<1x8x1x64xf32>, tensor<1x8x1x1xf32>) -> tensor<1x8x1x64xf32> {
  ^bb0(%0: f32, %1: f32):
    %2 = arith.divf %0, %1 : f32
    rdu.yield %2 : f32
  }
  %v5 = rdu.reshape %v : tensor<1x2x64x16xf32> -> tensor<1x2x1x64x16xf32>
  %vb = rdu.broadcast %v5 : tensor<1x2x1x64x16xf32> -> tensor<1x2x4x64x16xf32>
  %vr = rdu.reshape %vb : tensor<1x2x4x64x16xf32> -> tensor<1x8x64x16xf32>
  %a = rdu.matmul %p, %vr : tensor<1x8x1x64xf32>, tensor<1x8x64x16xf32> -> tensor<1x8x1x16xf32>
  %flat = rdu.reshape %a : tensor<1x8x1x16xf32> -> tensor<1x128xf32>
  %o = rdu.matmul %flat, %wo transpose_rhs : tensor<1x128xf32>, tensor<128x128xf32> -> tensor<1x128xf32>
  func.return %o : tensor<1x128xf32>
}

func.func @gqa_repeated_kept(%q: tensor<1x8x1x16xf32> {rdu.input = "q"}, %k: tensor<1x2x64x16xf32> {rdu.input = "k"},
               %v: tensor<1x2x64x16xf32> {rdu.input = "v"}, %wo: tensor<128x128xf32> {rdu.input = "wo"}) -> (tensor<1x128xf32>, tensor<1x8x64x16xf32>) {
  %k5 = rdu.reshape %k : tensor<1x2x64x16xf32> -> tensor<1x2x1x64x16xf32>
  %kb = rdu.broadcast %k5 : tensor<1x2x1x64x16xf32> -> tensor<1x2x4x64x16xf32>
  %kr = rdu.reshape %kb : tensor<1x2x4x64x16xf32> -> tensor<1x8x64x16xf32>
  %kt = rdu.transpose %kr perm [0, 1, 3, 2] : tensor<1x8x64x16xf32> -> tensor<1x8x16x64xf32>
  %s = rdu.matmul %q, %kt : tensor<1x8x1x16xf32>, tensor<1x8x16x64xf32> -> tensor<1x8x1x64xf32>
  %m = rdu.reduce max %s dims [3] keepdim : tensor<1x8x1x64xf32> -> tensor<1x8x1x1xf32>
  %e = rdu.map %s, %m : (tensor<1x8x1x64xf32>, tensor<1x8x1x1xf32>) -> tensor<1x8x1x64xf32> {
  ^bb0(%0: f32, %1: f32):
    %2 = arith.subf %0, %1 : f32
    %3 = math.exp %2 : f32
    rdu.yield %3 : f32
  }
  %z = rdu.reduce sum %e dims [3] keepdim : tensor<1x8x1x64xf32> -> tensor<1x8x1x1xf32>
  %p = rdu.map %e, %z : (tensor<1x8x1x64xf32>, tensor<1x8x1x1xf32>) -> tensor<1x8x1x64xf32> {
  ^bb0(%0: f32, %1: f32):
    %2 = arith.divf %0, %1 : f32
    rdu.yield %2 : f32
  }
  %v5 = rdu.reshape %v : tensor<1x2x64x16xf32> -> tensor<1x2x1x64x16xf32>
  %vb = rdu.broadcast %v5 : tensor<1x2x1x64x16xf32> -> tensor<1x2x4x64x16xf32>
  %vr = rdu.reshape %vb : tensor<1x2x4x64x16xf32> -> tensor<1x8x64x16xf32>
  %a = rdu.matmul %p, %vr : tensor<1x8x1x64xf32>, tensor<1x8x64x16xf32> -> tensor<1x8x1x16xf32>
  %flat = rdu.reshape %a : tensor<1x8x1x16xf32> -> tensor<1x128xf32>
  %o = rdu.matmul %flat, %wo transpose_rhs : tensor<1x128xf32>, tensor<128x128xf32> -> tensor<1x128xf32>
  func.return %o, %kr : tensor<1x128xf32>, tensor<1x8x64x16xf32>
}
