// An optimizer's elementwise update of a global whose old value nothing reads
// after it (SGD with momentum here: the new momentum and the new weight) is
// written over the global itself: rdu-place-saved and rdu-place-tiers count no
// second copy (`rducc.model.in_place.written_in_place`), and rdu-insert-dma's
// write-back DMA writes the global's own buffer (`rewrite_whole`), which the
// step returns. The SGD step of `p.sum() * x.sum()` (p: 32x32 f32, momentum
// 0.9), from `rducc --train --optimizer sgd --momentum 0.9 -O0 --emit graph`.
// RUN: rducc-opt --check-roundtrip -p 'rdu-fuse{level=0},rdu-place-saved{target="%S/Inputs/train-in-place.toml"}' %s | filecheck %s --check-prefix=FITS
// RUN: rducc-opt -p 'rdu-fuse{level=0},rdu-place-saved{target="%S/Inputs/train-in-place.toml"},rdu-tile,rdu-place-tiers,rdu-insert-dma' %s | filecheck %s --check-prefix=DMA
// With 12 kB of HBM the momentum goes to DDR, and its new value is written there.
// RUN: sed -e 's/hbm_bytes = 17_000/hbm_bytes = 12_000/' %S/Inputs/train-in-place.toml > %t.12kb.toml
// RUN: rducc-opt -p 'rdu-fuse{level=0},rdu-place-saved{target="%t.12kb.toml"},rdu-tile,rdu-place-tiers,rdu-insert-dma' %s | filecheck %s --check-prefix=DDR
// With 12 kB of SRAM rdu-tile splits the updates into tile loops: each tile of
// the new weight is written over the tile of the old one it was computed from.
// RUN: sed -e 's/sram_bytes = 65_536/sram_bytes = 12_000/' %S/Inputs/train-in-place.toml > %t.tiles.toml
// RUN: rducc-opt -p 'rdu-fuse{level=0},rdu-place-saved{target="%t.tiles.toml"},rdu-tile{target="%t.tiles.toml"},rdu-place-tiers{target="%t.tiles.toml"},rdu-insert-dma' %s | filecheck %s --check-prefix=TILES
// The old momentum also returned (read after its update): the new one keeps a
// buffer of its own, the peak holds both, and with 17 kB of HBM the old
// momentum goes to DDR (one kernel reads it there, a latency-bound one: less
// than a spill of the gradient %expand, written and read back).
// RUN: sed -e 's/-> (tensor<f32>, tensor<32x32xf32>, tensor<32x32xf32>) attributes {rdu.result_roles = \["loss", "", ""\], rdu.result_updates = \["", "buffer:p", "buffer:optimizer.momentum_buffer.p"\]}/-> (tensor<f32>, tensor<32x32xf32>, tensor<32x32xf32>, tensor<32x32xf32>) attributes {rdu.result_roles = ["loss", "", "", ""], rdu.result_updates = ["", "buffer:p", "buffer:optimizer.momentum_buffer.p", ""]}/' -e 's/func.return %%mul, %%add_1, %%add : tensor<f32>, tensor<32x32xf32>, tensor<32x32xf32>/func.return %%mul, %%add_1, %%add, %%0 : tensor<f32>, tensor<32x32xf32>, tensor<32x32xf32>, tensor<32x32xf32>/' %s > %t.read-after.mlir
// RUN: rducc-opt -p 'rdu-fuse{level=0},rdu-place-saved{target="%S/Inputs/train-in-place.toml"}' %t.read-after.mlir | filecheck %s --check-prefix=SPILL
// RUN: rducc-opt -p 'rdu-fuse{level=0},rdu-place-saved{target="%S/Inputs/train-in-place.toml"},rdu-tile,rdu-place-tiers,rdu-insert-dma' %t.read-after.mlir | filecheck %s --check-prefix=OWN
// The activation peak rdu-place-tiers counts: the gradient and the decayed
// momentum (8 kB), plus the new momentum (4 kB) only when it is a copy.
// RUN: rducc-opt -p 'rdu-fuse{level=0},rdu-place-saved,rdu-tile,rdu-place-tiers' %s | filecheck %s --check-prefix=PEAK
// RUN: rducc-opt -p 'rdu-fuse{level=0},rdu-place-saved,rdu-tile,rdu-place-tiers' %t.read-after.mlir | filecheck %s --check-prefix=PEAK-COPY
// Invalid: rdu-place-saved before fusion (level graph).
// RUN: not rducc-opt -p rdu-place-saved %s 2>&1 | filecheck %s --check-prefix=ERR

// FITS:      rdu.training_memory = {activations.sram = 0 : i64, activations.hbm = 4 : i64, activations.ddr = 0 : i64, activations.recompute = 0 : i64, gradients.sram = 0 : i64, gradients.hbm = 4096 : i64, gradients.ddr = 0 : i64, gradients.recompute = 0 : i64}
// FITS-NOT:  in ddr
// FITS-NOT:  "ddr"

// DMA:       %[[W:.+]] = tier.get_global @p : !tier.buffer<hbm, 32x32xf32>
// DMA-NEXT:  %[[M:.+]] = tier.get_global @optimizer.momentum_buffer.p : !tier.buffer<hbm, 32x32xf32>
// DMA:       %expand = tier.alloc : !tier.buffer<hbm, 32x32xf32>
// DMA-NOT:   tier.alloc : !tier.buffer<hbm, 32x32xf32>
// DMA:       tier.dma %{{.+}} -> %[[M]] : !tier.buffer<sram, 32x32xf32> -> !tier.buffer<hbm, 32x32xf32>
// DMA-NOT:   tier.alloc : !tier.buffer<hbm, 32x32xf32>
// DMA:       tier.dma %{{.+}} -> %[[W]] : !tier.buffer<sram, 32x32xf32> -> !tier.buffer<hbm, 32x32xf32>
// DMA:       func.return %mul, %[[W]], %[[M]] :

// DDR:       tier.global @optimizer.momentum_buffer.p in ddr
// DDR:       func.func @forward({{.*}}) -> (!tier.buffer<hbm, f32>, !tier.buffer<hbm, 32x32xf32>, !tier.buffer<ddr, 32x32xf32>)
// DDR:       %[[M:.+]] = tier.get_global @optimizer.momentum_buffer.p : !tier.buffer<ddr, 32x32xf32>
// DDR:       tier.dma %{{.+}} -> %[[M]] : !tier.buffer<sram, 32x32xf32> -> !tier.buffer<ddr, 32x32xf32>
// DDR:       func.return %mul, %{{.+}}, %[[M]] :

// TILES:     %[[W:.+]] = tier.get_global @p : !tier.buffer<hbm, 32x32xf32>
// TILES:     scf.for
// TILES:     scf.for
// TILES:       tier.dma %[[W]][%[[I:.+]], %[[J:.+]]] -> %{{.+}} : !tier.buffer<hbm, 32x32xf32> -> !tier.buffer<sram, 16x32xf32>
// TILES:       tier.dma %{{.+}} -> %[[W]][%[[I]], %[[J]]] : !tier.buffer<sram, 16x32xf32> -> !tier.buffer<hbm, 32x32xf32>
// TILES:     func.return %mul, %[[W]], %{{.+}} :

// SPILL:     tier.global @optimizer.momentum_buffer.p in ddr
// SPILL:     %expand = rdu.kernel "k5"(%mul_1) {rdu.saved = ["hbm"], rdu.phase = #rdu<phase backward>}

// OWN:       %[[W:.+]] = tier.get_global @p : !tier.buffer<hbm, 32x32xf32>
// OWN-NEXT:  %[[M:.+]] = tier.get_global @optimizer.momentum_buffer.p : !tier.buffer<ddr, 32x32xf32>
// OWN:       %[[NEW:add]] = tier.alloc : !tier.buffer<hbm, 32x32xf32>
// OWN:       tier.dma %{{.+}} -> %[[NEW]] : !tier.buffer<sram, 32x32xf32> -> !tier.buffer<hbm, 32x32xf32>
// OWN:       tier.dma %{{.+}} -> %[[W]] : !tier.buffer<sram, 32x32xf32> -> !tier.buffer<hbm, 32x32xf32>
// OWN:       func.return %mul, %[[W]], %[[NEW]], %[[M]] :

// PEAK:      tier.activation_bytes = 8204
// PEAK-COPY: tier.activation_bytes = 12300

// ERR: rdu-place-saved takes IR at level kernels; this module is at level graph

builtin.module attributes {rdu.level = #rdu<level graph>} {
  tier.global @p : tensor<32x32xf32> {kind = "parameter"}
  tier.global @optimizer.momentum_buffer.p : tensor<32x32xf32> {kind = "buffer"}
  func.func @forward(%x: tensor<2xf32> {rdu.input = "x"}, %p_p: tensor<32x32xf32> {rdu.global = @p}, %0: tensor<32x32xf32> {rdu.global = @optimizer.momentum_buffer.p}) -> (tensor<f32>, tensor<32x32xf32>, tensor<32x32xf32>) attributes {rdu.result_roles = ["loss", "", ""], rdu.result_updates = ["", "buffer:p", "buffer:optimizer.momentum_buffer.p"]} {
    %sum = rdu.reduce sum %p_p dims [0, 1] {rdu.phase = #rdu<phase forward>} : tensor<32x32xf32> -> tensor<f32>
    %sum_1 = rdu.reduce sum %x dims [0] {rdu.phase = #rdu<phase forward>} : tensor<2xf32> -> tensor<f32>
    %mul = rdu.map %sum, %sum_1 {rdu.phase = #rdu<phase forward>} : (tensor<f32>, tensor<f32>) -> tensor<f32> {
    ^bb0(%1: f32, %2: f32):
      %3 = arith.mulf %1, %2 : f32
      rdu.yield %3 : f32
    }
    %full_like = rdu.map {rdu.phase = #rdu<phase backward>} : () -> tensor<f32> {
      %1 = arith.constant 1.000000e+00 : f32
      rdu.yield %1 : f32
    }
    %mul_1 = rdu.map %full_like, %sum_1 {rdu.phase = #rdu<phase backward>} : (tensor<f32>, tensor<f32>) -> tensor<f32> {
    ^bb0(%1: f32, %2: f32):
      %3 = arith.mulf %1, %2 : f32
      rdu.yield %3 : f32
    }
    %expand = rdu.broadcast %mul_1 {rdu.phase = #rdu<phase backward>} : tensor<f32> -> tensor<32x32xf32>
    %mul_2 = rdu.map %0 {rdu.phase = #rdu<phase optimizer>} : (tensor<32x32xf32>) -> tensor<32x32xf32> {
    ^bb0(%1: f32):
      %2 = arith.constant 9.000000e-01 : f32
      %3 = arith.mulf %1, %2 : f32
      rdu.yield %3 : f32
    }
    %add = rdu.map %mul_2, %expand {rdu.phase = #rdu<phase optimizer>} : (tensor<32x32xf32>, tensor<32x32xf32>) -> tensor<32x32xf32> {
    ^bb0(%1: f32, %2: f32):
      %3 = arith.addf %1, %2 : f32
      rdu.yield %3 : f32
    }
    %add_1 = rdu.map %p_p, %add {rdu.phase = #rdu<phase optimizer>} : (tensor<32x32xf32>, tensor<32x32xf32>) -> tensor<32x32xf32> {
    ^bb0(%1: f32, %2: f32):
      %3 = arith.constant -1.000000e-01 : f32
      %4 = arith.mulf %2, %3 : f32
      %5 = arith.addf %1, %4 : f32
      rdu.yield %5 : f32
    }
    func.return %mul, %add_1, %add : tensor<f32>, tensor<32x32xf32>, tensor<32x32xf32>
  }
}
