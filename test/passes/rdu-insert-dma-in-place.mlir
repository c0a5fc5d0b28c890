// rdu-insert-dma writes back an update that replaces rows of its buffer (a
// static KV cache's index_copy_) in place, those rows only (tier.scatter), and
// returns the buffer itself (a kernel that reads the old value only to scatter the
// rows into it yields the rows alone and never loads the buffer: `rows_only`); any other update of a global is written whole
// over it (rdu-insert-dma-whole-in-place.mlir), of an input it keeps its own
// buffer and whole write-back.
// RUN: rducc-opt --check-roundtrip --split-input-file -p rdu-insert-dma %s | filecheck %s
// A buffer rdu-place-tiers put in DDR is written in place the same way: its rows
// go into the DDR buffer (the result and the buffer differ only in tier).
// RUN: sed -e 's/tier.global @a in hbm/tier.global @a in ddr/' %s | rducc-opt --check-roundtrip --split-input-file -p rdu-insert-dma | filecheck %s --check-prefix=DDR
// DDR-LABEL: func.func @forward
// DDR:         %b_a = tier.get_global @a : !tier.buffer<ddr, 2x4x8xf32>
// DDR-NOT:     %new_a = tier.alloc
// DDR:         tier.scatter %a2_sram_rows -> %b_a[%{{.+}}] dim 1 {rows_only} : !tier.buffer<sram, 2x1x8xf32>, !tier.buffer<sram, 1xi64> -> !tier.buffer<ddr, 2x4x8xf32>

// @a: rows at an input position, written in place; the kernel also yields the
// row list, and (@a read only by the scatter) the rows alone, @a not loaded. @b: the index is a kernel input, so its rows may differ across the
// other dims: whole, over the global. @c: the whole buffer changes: whole, over
// the global. @d: rows, but the old value is returned too (read after the
// write): whole, into a buffer of its own. The input `state`: rows.
// CHECK-LABEL: func.func @forward
// CHECK:         %b_a = tier.get_global @a
// CHECK-NOT:     %new_a = tier.alloc
// CHECK-NOT:     %new_b = tier.alloc
// CHECK-NOT:     %new_c = tier.alloc
// CHECK-NOT:     tier.dma %b_a ->
// CHECK-NOT:     tier.dma %state ->
// CHECK:         %new_d = tier.alloc : !tier.buffer<hbm, 2x4x8xf32>
// CHECK:         %[[AVALS:.+]] = tier.alloc : !tier.buffer<sram, 2x1x8xf32>
// CHECK-NEXT:    %[[AROWS:.+]] = tier.alloc : !tier.buffer<sram, 1xi64>
// CHECK-NEXT:    %[[SVALS:.+]] = tier.alloc : !tier.buffer<sram, 1x8xf32>
// CHECK-NEXT:    %[[SROWS:.+]] = tier.alloc : !tier.buffer<sram, 1xi64>
// CHECK-NEXT:    tier.compute "k0" {{.*}} outs(%[[AVALS]], %b2_sram, %c2_sram, %d2_sram, %[[SVALS]], %[[AROWS]], %[[SROWS]] :
// CHECK:           %[[L1:.+]] = rdu.reshape %row : tensor<1x1x1xi64> -> tensor<1xi64>
// CHECK-NEXT:      %[[L2:.+]] = rdu.reshape %srow : tensor<1x1xi64> -> tensor<1xi64>
// CHECK-NEXT:      rdu.yield %xs, %b2, %c2, %d2, %ys, %[[L1]], %[[L2]] :
// CHECK-NEXT:    }
// CHECK-NEXT:    tier.scatter %[[AVALS]] -> %b_a[%[[AROWS]]] dim 1 {rows_only} : !tier.buffer<sram, 2x1x8xf32>, !tier.buffer<sram, 1xi64> -> !tier.buffer<hbm, 2x4x8xf32>
// CHECK-NEXT:    tier.dealloc %[[AROWS]]
// CHECK-NEXT:    tier.dealloc %[[AVALS]]
// CHECK-NEXT:    tier.dma %b2_sram -> %b_b : !tier.buffer<sram, 2x4x8xf32> -> !tier.buffer<hbm, 2x4x8xf32>
// CHECK-NEXT:    tier.dma %c2_sram -> %b_c
// CHECK-NEXT:    tier.dma %d2_sram -> %new_d
// CHECK-NEXT:    tier.scatter %[[SVALS]] -> %state[%[[SROWS]]] dim 0 {rows_only} : !tier.buffer<sram, 1x8xf32>, !tier.buffer<sram, 1xi64> -> !tier.buffer<hbm, 4x8xf32>
// CHECK:         func.return %b_d, %b_a, %b_b, %b_c, %new_d, %state :

builtin.module attributes {rdu.level = #rdu<level kernels>} {
  tier.global @a in hbm : tensor<2x4x8xf32> {kind = "buffer"}
  tier.global @b in hbm : tensor<2x4x8xf32> {kind = "buffer"}
  tier.global @c in hbm : tensor<2x4x8xf32> {kind = "buffer"}
  tier.global @d in hbm : tensor<2x4x8xf32> {kind = "buffer"}
  func.func @forward(%x: tensor<2x1x8xf32> {rdu.input = "x"}, %y: tensor<1x8xf32> {rdu.input = "y"}, %pos: tensor<1xi64> {rdu.input = "pos"}, %idx: tensor<2x1x8xi64> {rdu.input = "idx"}, %state: tensor<4x8xf32> {rdu.input = "state"}, %b_a: tensor<2x4x8xf32> {rdu.global = @a}, %b_b: tensor<2x4x8xf32> {rdu.global = @b}, %b_c: tensor<2x4x8xf32> {rdu.global = @c}, %b_d: tensor<2x4x8xf32> {rdu.global = @d}) -> (tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<4x8xf32>) attributes {rdu.result_updates = ["", "buffer:a", "buffer:b", "buffer:c", "buffer:d", "input:state"]} {
    %new_a, %new_b, %new_c, %new_d, %new_state = rdu.kernel "k0"(%x, %y, %pos, %idx, %state, %b_a, %b_b, %b_c, %b_d) {rdu.tile_plan = #rdu.tile_plan<tiles = 1, size = 0, in = [-1, -1, -1, -1, -1, -1, -1, -1, -1], out = [-1, -1, -1, -1, -1], working_set = 4096>} : (tensor<2x1x8xf32>, tensor<1x8xf32>, tensor<1xi64>, tensor<2x1x8xi64>, tensor<4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> (tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<4x8xf32>) {
    ^bb0(%xs: tensor<2x1x8xf32>, %ys: tensor<1x8xf32>, %p: tensor<1xi64>, %i: tensor<2x1x8xi64>, %s: tensor<4x8xf32>, %a: tensor<2x4x8xf32>, %b: tensor<2x4x8xf32>, %c: tensor<2x4x8xf32>, %d: tensor<2x4x8xf32>):
      %row = rdu.reshape %p : tensor<1xi64> -> tensor<1x1x1xi64>
      %rows = rdu.broadcast %row : tensor<1x1x1xi64> -> tensor<2x1x8xi64>
      %a2 = rdu.scatter %a[%rows] = %xs dim 1 : tensor<2x4x8xf32>, tensor<2x1x8xi64>, tensor<2x1x8xf32> -> tensor<2x4x8xf32>
      %b2 = rdu.scatter %b[%i] = %xs dim 1 : tensor<2x4x8xf32>, tensor<2x1x8xi64>, tensor<2x1x8xf32> -> tensor<2x4x8xf32>
      %c2 = rdu.map %c : (tensor<2x4x8xf32>) -> tensor<2x4x8xf32> {
      ^bb1(%v: f32):
        %two = arith.constant 2.000000e+00 : f32
        %m = arith.mulf %v, %two : f32
        rdu.yield %m : f32
      }
      %d2 = rdu.scatter %d[%rows] = %xs dim 1 : tensor<2x4x8xf32>, tensor<2x1x8xi64>, tensor<2x1x8xf32> -> tensor<2x4x8xf32>
      %srow = rdu.reshape %p : tensor<1xi64> -> tensor<1x1xi64>
      %srows = rdu.broadcast %srow : tensor<1x1xi64> -> tensor<1x8xi64>
      %s2 = rdu.scatter %s[%srows] = %ys dim 0 : tensor<4x8xf32>, tensor<1x8xi64>, tensor<1x8xf32> -> tensor<4x8xf32>
      rdu.yield %a2, %b2, %c2, %d2, %s2 : tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<4x8xf32>
    }
    func.return %b_d, %new_a, %new_b, %new_c, %new_d, %new_state : tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<4x8xf32>
  }
}

// -----

// An outlined layer called once per cache, each call's result the update of
// the cache it is passed: rewritten inside the layer, which returns its argument.
// CHECK-LABEL: func.func @forward
// CHECK:         %n0 = func.call @layer(%y, %pos, %b_k0)
// CHECK-NEXT:    %n1 = func.call @layer(%y, %pos, %b_k1)
// CHECK-NEXT:    func.return %n0, %n1 :
// CHECK-LABEL: func.func private @layer
// CHECK-NOT:     tier.alloc : !tier.buffer<hbm
// CHECK:         tier.scatter %c2_sram_rows -> %cache[%cache_rows_sram] dim 0 {rows_only}
// CHECK:         func.return %cache : !tier.buffer<hbm, 4x8xf32>

builtin.module attributes {rdu.level = #rdu<level kernels>} {
  tier.global @k0 in hbm : tensor<4x8xf32> {kind = "buffer"}
  tier.global @k1 in hbm : tensor<4x8xf32> {kind = "buffer"}
  func.func @forward(%y: tensor<1x8xf32> {rdu.input = "y"}, %pos: tensor<1xi64> {rdu.input = "pos"}, %b_k0: tensor<4x8xf32> {rdu.global = @k0}, %b_k1: tensor<4x8xf32> {rdu.global = @k1}) -> (tensor<4x8xf32>, tensor<4x8xf32>) attributes {rdu.result_updates = ["buffer:k0", "buffer:k1"]} {
    %n0 = func.call @layer(%y, %pos, %b_k0) : (tensor<1x8xf32>, tensor<1xi64>, tensor<4x8xf32>) -> tensor<4x8xf32>
    %n1 = func.call @layer(%y, %pos, %b_k1) : (tensor<1x8xf32>, tensor<1xi64>, tensor<4x8xf32>) -> tensor<4x8xf32>
    func.return %n0, %n1 : tensor<4x8xf32>, tensor<4x8xf32>
  }
  func.func private @layer(%ys: tensor<1x8xf32> {rdu.input = "y"}, %p: tensor<1xi64> {rdu.input = "pos"}, %cache: tensor<4x8xf32> {rdu.weight, tier.tier = #tier<tier hbm>}) -> tensor<4x8xf32> attributes {rdu.calls = 2 : i64} {
    %new = rdu.kernel "k0"(%ys, %p, %cache) {rdu.tile_plan = #rdu.tile_plan<tiles = 1, size = 0, in = [-1, -1, -1], out = [-1], working_set = 512>} : (tensor<1x8xf32>, tensor<1xi64>, tensor<4x8xf32>) -> tensor<4x8xf32> {
    ^bb0(%y1: tensor<1x8xf32>, %p1: tensor<1xi64>, %c1: tensor<4x8xf32>):
      %row = rdu.reshape %p1 : tensor<1xi64> -> tensor<1x1xi64>
      %rows = rdu.broadcast %row : tensor<1x1xi64> -> tensor<1x8xi64>
      %c2 = rdu.scatter %c1[%rows] = %y1 dim 0 : tensor<4x8xf32>, tensor<1x8xi64>, tensor<1x8xf32> -> tensor<4x8xf32>
      rdu.yield %c2 : tensor<4x8xf32>
    }
    func.return %new : tensor<4x8xf32>
  }
}

// -----

// The same layer, but @forward also returns @k1's old value after the second
// call: not every call agrees, so the layer keeps its whole write-back.
// CHECK-LABEL: func.func private @layer
// CHECK:         %new = tier.alloc : !tier.buffer<hbm, 4x8xf32>
// CHECK-NOT:     tier.scatter
// CHECK:         tier.dma %c2_sram -> %new : !tier.buffer<sram, 4x8xf32> -> !tier.buffer<hbm, 4x8xf32>
// CHECK-NOT:     tier.scatter
// CHECK:         func.return %new : !tier.buffer<hbm, 4x8xf32>

builtin.module attributes {rdu.level = #rdu<level kernels>} {
  tier.global @k0 in hbm : tensor<4x8xf32> {kind = "buffer"}
  tier.global @k1 in hbm : tensor<4x8xf32> {kind = "buffer"}
  func.func @forward(%y: tensor<1x8xf32> {rdu.input = "y"}, %pos: tensor<1xi64> {rdu.input = "pos"}, %b_k0: tensor<4x8xf32> {rdu.global = @k0}, %b_k1: tensor<4x8xf32> {rdu.global = @k1}) -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>) attributes {rdu.result_updates = ["buffer:k0", "buffer:k1", ""]} {
    %n0 = func.call @layer(%y, %pos, %b_k0) : (tensor<1x8xf32>, tensor<1xi64>, tensor<4x8xf32>) -> tensor<4x8xf32>
    %n1 = func.call @layer(%y, %pos, %b_k1) : (tensor<1x8xf32>, tensor<1xi64>, tensor<4x8xf32>) -> tensor<4x8xf32>
    func.return %n0, %n1, %b_k1 : tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>
  }
  func.func private @layer(%ys: tensor<1x8xf32> {rdu.input = "y"}, %p: tensor<1xi64> {rdu.input = "pos"}, %cache: tensor<4x8xf32> {rdu.weight, tier.tier = #tier<tier hbm>}) -> tensor<4x8xf32> attributes {rdu.calls = 2 : i64} {
    %new = rdu.kernel "k0"(%ys, %p, %cache) {rdu.tile_plan = #rdu.tile_plan<tiles = 1, size = 0, in = [-1, -1, -1], out = [-1], working_set = 512>} : (tensor<1x8xf32>, tensor<1xi64>, tensor<4x8xf32>) -> tensor<4x8xf32> {
    ^bb0(%y1: tensor<1x8xf32>, %p1: tensor<1xi64>, %c1: tensor<4x8xf32>):
      %row = rdu.reshape %p1 : tensor<1xi64> -> tensor<1x1xi64>
      %rows = rdu.broadcast %row : tensor<1x1xi64> -> tensor<1x8xi64>
      %c2 = rdu.scatter %c1[%rows] = %y1 dim 0 : tensor<4x8xf32>, tensor<1x8xi64>, tensor<1x8xf32> -> tensor<4x8xf32>
      rdu.yield %c2 : tensor<4x8xf32>
    }
    func.return %new : tensor<4x8xf32>
  }
}

// -----

// The index a fill (`torch.full((2, 1, 8), pos)`: a map of no input), the same
// everywhere: rows, written in place; the kernel yields one line of the fill
// as the row list. A fill whose value differs along nothing but is scattered
// with a reduction is a whole update (@e), written whole over its global.
// CHECK-LABEL: func.func @forward
// CHECK-NOT:     %new_e = tier.alloc
// CHECK-NOT:     %new_f = tier.alloc
// CHECK:         %[[FROWS:.+]] = tier.alloc : !tier.buffer<sram, 1xi64>
// CHECK:           %[[LINE:.+]] = rdu.slice %fill offsets [0, 0, 0] strides [1, 1, 1] : tensor<2x1x8xi64> -> tensor<1x1x1xi64>
// CHECK-NEXT:      %[[LIST:.+]] = rdu.reshape %[[LINE]] : tensor<1x1x1xi64> -> tensor<1xi64>
// CHECK-NEXT:      rdu.yield %e2, %xs, %[[LIST]] :
// CHECK:         tier.dma %e2_sram -> %b_e
// CHECK-NEXT:    tier.scatter %f2_sram_rows -> %b_f[%[[FROWS]]] dim 1 {rows_only} : !tier.buffer<sram, 2x1x8xf32>, !tier.buffer<sram, 1xi64> -> !tier.buffer<hbm, 2x4x8xf32>

builtin.module attributes {rdu.level = #rdu<level kernels>} {
  tier.global @e in hbm : tensor<2x4x8xf32> {kind = "buffer"}
  tier.global @f in hbm : tensor<2x4x8xf32> {kind = "buffer"}
  func.func @forward(%x: tensor<2x1x8xf32> {rdu.input = "x"}, %b_e: tensor<2x4x8xf32> {rdu.global = @e}, %b_f: tensor<2x4x8xf32> {rdu.global = @f}) -> (tensor<2x4x8xf32>, tensor<2x4x8xf32>) attributes {rdu.result_updates = ["buffer:e", "buffer:f"]} {
    %new_e, %new_f = rdu.kernel "k0"(%x, %b_e, %b_f) {rdu.tile_plan = #rdu.tile_plan<tiles = 1, size = 0, in = [-1, -1, -1], out = [-1, -1], working_set = 4096>} : (tensor<2x1x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> (tensor<2x4x8xf32>, tensor<2x4x8xf32>) {
    ^bb0(%xs: tensor<2x1x8xf32>, %e: tensor<2x4x8xf32>, %f: tensor<2x4x8xf32>):
      %fill = rdu.map : () -> tensor<2x1x8xi64> {
        %three = arith.constant 3 : i64
        rdu.yield %three : i64
      }
      %e2 = rdu.scatter %e[%fill] = %xs dim 1 reduce sum : tensor<2x4x8xf32>, tensor<2x1x8xi64>, tensor<2x1x8xf32> -> tensor<2x4x8xf32>
      %f2 = rdu.scatter %f[%fill] = %xs dim 1 : tensor<2x4x8xf32>, tensor<2x1x8xi64>, tensor<2x1x8xf32> -> tensor<2x4x8xf32>
      rdu.yield %e2, %f2 : tensor<2x4x8xf32>, tensor<2x4x8xf32>
    }
    func.return %new_e, %new_f : tensor<2x4x8xf32>, tensor<2x4x8xf32>
  }
}

// -----

// The kernel also reads the new value (an attention over the cache it wrote
// the rows into): the whole new value is in SRAM anyway, the rows are written
// from it (not `rows_only`), the old value loaded whole.
// CHECK-LABEL: func.func @forward
// CHECK:         tier.dma %b_g -> %g_sram : !tier.buffer<hbm, 2x4x8xf32> -> !tier.buffer<sram, 2x4x8xf32>
// CHECK:         rdu.yield %g2, %sum, %{{.+}} :
// CHECK-NOT:     rows_only
// CHECK:         tier.scatter %g2_sram -> %b_g[%{{.+}}] dim 1 : !tier.buffer<sram, 2x4x8xf32>, !tier.buffer<sram, 1xi64> -> !tier.buffer<hbm, 2x4x8xf32>

builtin.module attributes {rdu.level = #rdu<level kernels>} {
  tier.global @g in hbm : tensor<2x4x8xf32> {kind = "buffer"}
  func.func @forward(%x: tensor<2x1x8xf32> {rdu.input = "x"}, %pos: tensor<1xi64> {rdu.input = "pos"}, %b_g: tensor<2x4x8xf32> {rdu.global = @g}) -> (tensor<2x4x8xf32>, tensor<2x4x8xf32>) attributes {rdu.result_updates = ["buffer:g", ""]} {
    %new_g, %out = rdu.kernel "k0"(%x, %pos, %b_g) {rdu.tile_plan = #rdu.tile_plan<tiles = 1, size = 0, in = [-1, -1, -1], out = [-1, -1], working_set = 4096>} : (tensor<2x1x8xf32>, tensor<1xi64>, tensor<2x4x8xf32>) -> (tensor<2x4x8xf32>, tensor<2x4x8xf32>) {
    ^bb0(%xs: tensor<2x1x8xf32>, %p: tensor<1xi64>, %g: tensor<2x4x8xf32>):
      %row = rdu.reshape %p : tensor<1xi64> -> tensor<1x1x1xi64>
      %rows = rdu.broadcast %row : tensor<1x1x1xi64> -> tensor<2x1x8xi64>
      %g2 = rdu.scatter %g[%rows] = %xs dim 1 : tensor<2x4x8xf32>, tensor<2x1x8xi64>, tensor<2x1x8xf32> -> tensor<2x4x8xf32>
      %sum = rdu.map %g2, %g2 : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32> {
      ^bb1(%u: f32, %v: f32):
        %w = arith.addf %u, %v : f32
        rdu.yield %w : f32
      }
      rdu.yield %g2, %sum : tensor<2x4x8xf32>, tensor<2x4x8xf32>
    }
    func.return %new_g, %out : tensor<2x4x8xf32>, tensor<2x4x8xf32>
  }
}
