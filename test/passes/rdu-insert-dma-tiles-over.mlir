// A tiled optimizer update is written over its global exactly when the planner
// counts it so: one rule (`rducc.model.in_place.tiles_over`) asked by
// rdu-place-saved and rdu-place-tiers (no second copy) and by rdu-insert-dma
// (the tile loop writes the global's buffer). With 12 kB of SRAM kernel k6 (the
// new momentum: its old value's first 16 rows decayed, the gradient's last 16,
// plus the gradient) is tiled along dim 1. Each tile reads its columns of the
// old value's window (16 rows) and writes the same columns of all 32 rows: the
// windows differ, but no tile reads columns another tile writes, so it is in
// place (the planner counted it before, the lowering did not).
// RUN: sed -e 's/sram_bytes = 65_536/sram_bytes = 12_000/' %S/Inputs/train-in-place.toml > %t.tiles.toml
// RUN: rducc-opt -p 'rdu-place-saved{target="%t.tiles.toml"},rdu-tile{target="%t.tiles.toml"},rdu-place-tiers{target="%t.tiles.toml"}' %s | filecheck %s --check-prefix=PEAK
// RUN: rducc-opt -p 'rdu-place-saved{target="%t.tiles.toml"},rdu-tile{target="%t.tiles.toml"},rdu-place-tiers{target="%t.tiles.toml"},rdu-insert-dma' %s | filecheck %s --check-prefix=OVER
// The old value read transposed: tiles of the new value's columns read rows of
// the old one, which other tiles write. Neither counts it in place: the planner
// counts the copy (4 kB more) and the lowering gives it a buffer of its own.
// RUN: sed -e 's/%%top = rdu.slice %%m offsets/%%turned = rdu.transpose %%m perm [1, 0] : tensor<32x32xf32> -> tensor<32x32xf32>\n      %%top = rdu.slice %%turned offsets/' %s > %t.turned.mlir
// RUN: rducc-opt -p 'rdu-place-saved{target="%t.tiles.toml"},rdu-tile{target="%t.tiles.toml"},rdu-place-tiers{target="%t.tiles.toml"}' %t.turned.mlir | filecheck %s --check-prefix=PEAK-COPY
// RUN: rducc-opt -p 'rdu-place-saved{target="%t.tiles.toml"},rdu-tile{target="%t.tiles.toml"},rdu-place-tiers{target="%t.tiles.toml"},rdu-insert-dma' %t.turned.mlir | filecheck %s --check-prefix=OWN
// Invalid: rdu-insert-dma before fusion (level graph).
// RUN: sed -e 's/level kernels/level graph/' %s | not rducc-opt -p rdu-insert-dma 2>&1 | filecheck %s --check-prefix=ERR

// PEAK:      tier.activation_bytes = 4112
// PEAK-COPY: tier.activation_bytes = 8204

// OVER:      %[[M:.+]] = tier.get_global @optimizer.momentum_buffer.p : !tier.buffer<hbm, 32x32xf32>
// OVER-NOT:  tier.alloc : !tier.buffer<hbm, 32x32xf32>
// OVER:      scf.for
// OVER:        tier.dma %[[M]][%[[Z:.+]], %[[J:.+]]] -> %{{.+}} : !tier.buffer<hbm, 32x32xf32> -> !tier.buffer<sram, 16x8xf32>
// OVER:        tier.dma %{{.+}} -> %[[M]][%[[Z]], %[[J]]] : !tier.buffer<sram, 32x8xf32> -> !tier.buffer<hbm, 32x32xf32>
// OVER:      func.return %mul, %{{.+}}, %[[M]] :

// OWN:       %[[M:.+]] = tier.get_global @optimizer.momentum_buffer.p : !tier.buffer<hbm, 32x32xf32>
// OWN:       %[[NEW:.+]] = tier.alloc : !tier.buffer<hbm, 32x32xf32>
// OWN:       scf.for
// OWN:         tier.dma %{{.+}} -> %[[NEW]][%{{.+}}, %{{.+}}] : !tier.buffer<sram, 32x8xf32> -> !tier.buffer<hbm, 32x32xf32>
// OWN:       func.return %mul, %{{.+}}, %[[NEW]] :

// ERR: rdu-insert-dma takes IR at level kernels; this module is at level graph

builtin.module attributes {rdu.level = #rdu<level kernels>} {
  tier.global @p : tensor<32x32xf32> {kind = "parameter"}
  tier.global @optimizer.momentum_buffer.p : tensor<32x32xf32> {kind = "buffer"}
  func.func @forward(%x: tensor<2xf32> {rdu.input = "x"}, %p_p: tensor<32x32xf32> {rdu.global = @p}, %0: tensor<32x32xf32> {rdu.global = @optimizer.momentum_buffer.p}) -> (tensor<f32>, tensor<32x32xf32>, tensor<32x32xf32>) attributes {rdu.result_roles = ["loss", "", ""], rdu.result_updates = ["", "buffer:p", "buffer:optimizer.momentum_buffer.p"]} {
    %sum = rdu.kernel "k0"(%p_p) : (tensor<32x32xf32>) -> tensor<f32> {
    ^bb0(%p_p_1: tensor<32x32xf32>):
      %sum_1 = rdu.reduce sum %p_p_1 dims [0, 1] {rdu.phase = #rdu<phase forward>} : tensor<32x32xf32> -> tensor<f32>
      rdu.yield %sum_1 : tensor<f32>
    }
    %sum_1 = rdu.kernel "k1"(%x) : (tensor<2xf32>) -> tensor<f32> {
    ^bb0(%x_1: tensor<2xf32>):
      %sum_2 = rdu.reduce sum %x_1 dims [0] {rdu.phase = #rdu<phase forward>} : tensor<2xf32> -> tensor<f32>
      rdu.yield %sum_2 : tensor<f32>
    }
    %mul = rdu.kernel "k2"(%sum, %sum_1) : (tensor<f32>, tensor<f32>) -> tensor<f32> {
    ^bb0(%sum_2: tensor<f32>, %sum_3: tensor<f32>):
      %mul_1 = rdu.map %sum_2, %sum_3 {rdu.phase = #rdu<phase forward>} : (tensor<f32>, tensor<f32>) -> tensor<f32> {
      ^bb0(%1: f32, %2: f32):
        %3 = arith.mulf %1, %2 : f32
        rdu.yield %3 : f32
      }
      rdu.yield %mul_1 : tensor<f32>
    }
    %full_like = rdu.kernel "k3"() : () -> tensor<f32> {
      %full_like_1 = rdu.map {rdu.phase = #rdu<phase backward>} : () -> tensor<f32> {
        %1 = arith.constant 1.000000e+00 : f32
        rdu.yield %1 : f32
      }
      rdu.yield %full_like_1 : tensor<f32>
    }
    %mul_1 = rdu.kernel "k4"(%full_like, %sum_1) : (tensor<f32>, tensor<f32>) -> tensor<f32> {
    ^bb0(%full_like_1: tensor<f32>, %sum_2: tensor<f32>):
      %mul_2 = rdu.map %full_like_1, %sum_2 {rdu.phase = #rdu<phase backward>} : (tensor<f32>, tensor<f32>) -> tensor<f32> {
      ^bb0(%1: f32, %2: f32):
        %3 = arith.mulf %1, %2 : f32
        rdu.yield %3 : f32
      }
      rdu.yield %mul_2 : tensor<f32>
    }
    %expand = rdu.kernel "k5"(%mul_1) : (tensor<f32>) -> tensor<32x32xf32> {
    ^bb0(%mul_2: tensor<f32>):
      %expand_1 = rdu.broadcast %mul_2 {rdu.phase = #rdu<phase backward>} : tensor<f32> -> tensor<32x32xf32>
      rdu.yield %expand_1 : tensor<32x32xf32>
    }
    %add = rdu.kernel "k6"(%0, %expand) : (tensor<32x32xf32>, tensor<32x32xf32>) -> tensor<32x32xf32> {
    ^bb0(%m: tensor<32x32xf32>, %g: tensor<32x32xf32>):
      %top = rdu.slice %m offsets [0, 0] strides [1, 1] {rdu.phase = #rdu<phase optimizer>} : tensor<32x32xf32> -> tensor<16x32xf32>
      %decayed = rdu.map %top {rdu.phase = #rdu<phase optimizer>} : (tensor<16x32xf32>) -> tensor<16x32xf32> {
      ^bb0(%2: f32):
        %3 = arith.constant 9.000000e-01 : f32
        %4 = arith.mulf %2, %3 : f32
        rdu.yield %4 : f32
      }
      %low = rdu.slice %g offsets [16, 0] strides [1, 1] {rdu.phase = #rdu<phase optimizer>} : tensor<32x32xf32> -> tensor<16x32xf32>
      %kept = rdu.concat %decayed, %low dim 0 {rdu.phase = #rdu<phase optimizer>} : (tensor<16x32xf32>, tensor<16x32xf32>) -> tensor<32x32xf32>
      %new = rdu.map %kept, %g {rdu.phase = #rdu<phase optimizer>} : (tensor<32x32xf32>, tensor<32x32xf32>) -> tensor<32x32xf32> {
      ^bb0(%1: f32, %2: f32):
        %3 = arith.addf %1, %2 : f32
        rdu.yield %3 : f32
      }
      rdu.yield %new : tensor<32x32xf32>
    }
    %add_1 = rdu.kernel "k11"(%p_p, %add) : (tensor<32x32xf32>, tensor<32x32xf32>) -> tensor<32x32xf32> {
    ^bb0(%p_p_1: tensor<32x32xf32>, %add_2: tensor<32x32xf32>):
      %add_3 = rdu.map %p_p_1, %add_2 {rdu.phase = #rdu<phase optimizer>} : (tensor<32x32xf32>, tensor<32x32xf32>) -> tensor<32x32xf32> {
      ^bb0(%1: f32, %2: f32):
        %3 = arith.constant -1.000000e-01 : f32
        %4 = arith.mulf %2, %3 : f32
        %5 = arith.addf %1, %4 : f32
        rdu.yield %5 : f32
      }
      rdu.yield %add_3 : tensor<32x32xf32>
    }
    func.return %mul, %add_1, %add : tensor<f32>, tensor<32x32xf32>, tensor<32x32xf32>
  }
}

