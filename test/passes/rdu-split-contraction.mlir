// rdu-split-contraction: a matmul no tile plan fits becomes partial products
// over chunks of its contraction dim (K), summed in f32 and rounded once.
// RUN: rducc-opt --check-roundtrip -p 'rdu-split-contraction{target="%S/Inputs/tiny.toml"}' %s | filecheck %s
// On sn40l (520 MB of SRAM) both matmuls tile as they are: nothing changes.
// RUN: rducc-opt -p rdu-split-contraction %s | filecheck %s --check-prefix=SN40L
// The split program goes through the rest of the pipeline on the tiny target.
// RUN: rducc-opt -p 'rdu-split-contraction{target="%S/Inputs/tiny.toml"},rdu-fuse{level=1},rdu-tile{target="%S/Inputs/tiny.toml"}' %s | filecheck %s --check-prefix=TILED
// Without the split, the big matmul cannot be tiled into tiny's 64 KiB of SRAM.
// RUN: not rducc-opt -p 'rdu-fuse{level=1},rdu-tile{target="%S/Inputs/tiny.toml"}' %s 2>&1 | filecheck %s --check-prefix=ERR
// Invalid: a program lowered past the graph level.
// RUN: not rducc-opt -p 'rdu-fuse{level=1},rdu-split-contraction' %s 2>&1 | filecheck %s --check-prefix=ERR-LEVEL

// %big: [64, 1024] x [1024, 64] in bf16 (the rhs transposed): tiled along M
// it keeps its whole rhs (128 kB), along N its whole lhs (128 kB), against
// 64 KiB. Each chunk's kept operand may take 64 KiB / 4: 64 x 1024 x 2 B /
// 16 KiB = 8 chunks of K = 128.
// CHECK:      %big_k0 = rdu.slice %a offsets [0, 0] strides [1, 1] {rdu.phase = #rdu<phase backward>} : tensor<64x1024xbf16> -> tensor<64x128xbf16>
// CHECK-NEXT: %big_k1 = rdu.slice %b offsets [0, 0] strides [1, 1] {rdu.phase = #rdu<phase backward>} : tensor<64x1024xbf16> -> tensor<64x128xbf16>
// CHECK-NEXT: %big_k2 = rdu.matmul %big_k0, %big_k1 transpose_rhs {rdu.phase = #rdu<phase backward>} : tensor<64x128xbf16>, tensor<64x128xbf16> -> tensor<64x64xf32>
// CHECK-NEXT: %big_k3 = rdu.slice %a offsets [0, 128] strides [1, 1]
// CHECK-NEXT: %big_k4 = rdu.slice %b offsets [0, 128] strides [1, 1]
// CHECK-NEXT: %big_k5 = rdu.matmul %big_k3, %big_k4 transpose_rhs
// CHECK-NEXT: %big_k6 = rdu.map %big_k2, %big_k5 {rdu.phase = #rdu<phase backward>} : (tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<64x64xf32> {
// CHECK:        arith.addf
// CHECK-COUNT-6: rdu.matmul {{.*}} -> tensor<64x64xf32>
// CHECK-NOT:  rdu.matmul {{.*}} -> tensor<64x64xf32>
// CHECK:      %[[LAST:.*]] = rdu.map {{.*}} -> tensor<64x64xf32>
// CHECK:      %[[SUM:.*]] = rdu.map %[[LAST]] {rdu.phase = #rdu<phase backward>} : (tensor<64x64xf32>) -> tensor<64x64xbf16> {
// CHECK:        arith.truncf {{.*}} : f32 to bf16
// CHECK:      %small = rdu.matmul %c, %c : tensor<64x64xbf16>, tensor<64x64xbf16> -> tensor<64x64xbf16>
// CHECK:      func.return %[[SUM]], %small

// SN40L:      %big = rdu.matmul %a, %b transpose_rhs
// SN40L-NOT:  rdu.slice

// TILED:      rdu.tile_plan

// ERR:        error: kernel k0 cannot be tiled to fit tiny
// ERR-LEVEL:  rducc-opt: error: rdu-split-contraction takes IR at level graph; this module is at level kernels

builtin.module attributes {rdu.level = #rdu<level graph>} {
  func.func @forward(%a: tensor<64x1024xbf16> {rdu.input = "a"}, %b: tensor<64x1024xbf16> {rdu.input = "b"}, %c: tensor<64x64xbf16> {rdu.input = "c"}) -> (tensor<64x64xbf16>, tensor<64x64xbf16>) {
    %big = rdu.matmul %a, %b transpose_rhs {rdu.phase = #rdu<phase backward>} : tensor<64x1024xbf16>, tensor<64x1024xbf16> -> tensor<64x64xbf16>
    %small = rdu.matmul %c, %c : tensor<64x64xbf16>, tensor<64x64xbf16> -> tensor<64x64xbf16>
    func.return %big, %small : tensor<64x64xbf16>, tensor<64x64xbf16>
  }
}
