// `rdu.host_call` (an ATen op run on the host CPU) through the lowering: a
// kernel boundary of its own. rdu-fuse never puts it in a kernel, so the maps
// before and after it stay two kernels even at level 2; rdu-insert-dma gives
// it the HBM buffers of its operands and HBM result buffers (nothing of it in
// SRAM), which are freed after their last reader. A call on complex pairs keeps
// its `pairs` through the lowering.
// RUN: rducc-opt -p 'rdu-fuse{level=2}' %s | filecheck %s --check-prefix=FUSE
// RUN: rducc-opt -p 'rdu-canonicalize,rdu-outline-layers,cse,rdu-fuse{level=2},rdu-merge-maps,rdu-tile,rdu-place-tiers,rdu-insert-dma{keep_on_chip=true},rdu-sram-alloc,rdu-map-units' %s | filecheck %s --check-prefix=PLACED
//
// Diagnostics: a host call is never a kernel's body op (a kernel written by
// hand with one inside is refused before the passes run).
// RUN: not rducc-opt -p 'rdu-tile,rdu-place-tiers,rdu-insert-dma' %S/Inputs/host-call-in-kernel.mlir 2>&1 | filecheck %s --check-prefix=ERR
// ERR-NOT: Traceback
// ERR:     error: 'rdu.host_call' runs on the host: it cannot be inside 'rdu.kernel'

builtin.module attributes {rdu.level = #rdu<level graph>} {
  func.func @forward(%x: tensor<4x3xf32> {rdu.input = "x"}, %c: tensor<4x3x2xf64> {rdu.input = "c"}) -> (tensor<3x3xf32>, tensor<3x3x2xf64>) {
    %y = rdu.map %x : (tensor<4x3xf32>) -> tensor<4x3xf32> {
    ^bb0(%0: f32):
      %1 = arith.constant 2.000000e+00 : f32
      %2 = arith.mulf %0, %1 : f32
      rdu.yield %2 : f32
    }
  %q, %r = rdu.host_call #rdu.aten<"aten::linalg_qr.default">(%y) tensors ["A"] : (tensor<4x3xf32>) -> (tensor<4x3xf32>, tensor<3x3xf32>)
    %z = rdu.map %r : (tensor<3x3xf32>) -> tensor<3x3xf32> {
    ^bb0(%0: f32):
      %1 = arith.constant 1.000000e+00 : f32
      %2 = arith.addf %0, %1 : f32
      rdu.yield %2 : f32
    }
    %cq, %cr = rdu.host_call #rdu.aten<"aten::linalg_qr.default">(%c) tensors ["A"] pairs ["A"] -> [0, 1] : (tensor<4x3x2xf64>) -> (tensor<4x3x2xf64>, tensor<3x3x2xf64>)
    func.return %z, %cr : tensor<3x3xf32>, tensor<3x3x2xf64>
  }
}

// FUSE:      rdu.kernel "k0"
// FUSE:      rdu.host_call #rdu.aten<"aten::linalg_qr.default">(%{{.*}}) tensors ["A"] : (tensor<4x3xf32>) -> (tensor<4x3xf32>, tensor<3x3xf32>)
// FUSE-NEXT: rdu.kernel "k1"

// PLACED:      tier.compute "k0"
// PLACED:      tier.dma %{{.*}} -> %y : !tier.buffer<sram, 4x3xf32> -> !tier.buffer<hbm, 4x3xf32>
// PLACED:      %q, %r = rdu.host_call #rdu.aten<"aten::linalg_qr.default">(%y) tensors ["A"] : (!tier.buffer<hbm, 4x3xf32>) -> (!tier.buffer<hbm, 4x3xf32>, !tier.buffer<hbm, 3x3xf32>)
// PLACED-DAG:  tier.dealloc %q : !tier.buffer<hbm, 4x3xf32>
// PLACED-DAG:  tier.dealloc %y : !tier.buffer<hbm, 4x3xf32>
// PLACED:      tier.dma %r -> %{{.*}} : !tier.buffer<hbm, 3x3xf32> -> !tier.buffer<sram, 3x3xf32>
// PLACED:      tier.dealloc %r : !tier.buffer<hbm, 3x3xf32>
// PLACED:      tier.compute "k1"
// PLACED:      rdu.host_call #rdu.aten<"aten::linalg_qr.default">(%c) tensors ["A"] pairs ["A"] -> [0, 1] : (!tier.buffer<hbm, 4x3x2xf64>) -> (!tier.buffer<hbm, 4x3x2xf64>, !tier.buffer<hbm, 3x3x2xf64>)
