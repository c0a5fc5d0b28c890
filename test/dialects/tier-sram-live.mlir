// RUN: rducc-opt %s --split-input-file --verify-diagnostics | filecheck %s

// The SRAM overlap verifier sees every op that runs while a buffer is live:
// the values of later kernels, buffers allocated inside later loops, and what
// the functions it is live across place. One chunk a shape of overlap, then a
// valid program.

// (a) A kernel's value placed over a buffer that is live across the kernel.
func.func @body_value(%x: !tier.buffer<hbm, 4xf32>) attributes {tier.sram_capacity = 1024 : i64} {
  %keep = tier.alloc offset 0 : !tier.buffer<sram, 4xf32>
  %in = tier.alloc offset 64 : !tier.buffer<sram, 4xf32>
  %out = tier.alloc offset 128 : !tier.buffer<sram, 4xf32>
  tier.dma %x -> %keep : !tier.buffer<hbm, 4xf32> -> !tier.buffer<sram, 4xf32>
  tier.dma %x -> %in : !tier.buffer<hbm, 4xf32> -> !tier.buffer<sram, 4xf32>
  tier.compute "k0" ins(%in : !tier.buffer<sram, 4xf32>) outs(%out : !tier.buffer<sram, 4xf32>) {
  ^bb0(%t: tensor<4xf32>):
    %e = rdu.map %t {tier.offset = 0 : i64} : (tensor<4xf32>) -> tensor<4xf32> {
    ^bb0(%0: f32):
      %1 = math.exp %0 : f32
      rdu.yield %1 : f32
    } loc("model.py":7:1)
    %n = rdu.map %e : (tensor<4xf32>) -> tensor<4xf32> {
    ^bb0(%0: f32):
      %1 = arith.negf %0 : f32
      rdu.yield %1 : f32
    }
    rdu.yield %n : tensor<4xf32>
  }
  tier.dma %keep -> %x : !tier.buffer<sram, 4xf32> -> !tier.buffer<hbm, 4xf32>
  tier.dealloc %keep : !tier.buffer<sram, 4xf32>
  tier.dealloc %in : !tier.buffer<sram, 4xf32>
  tier.dealloc %out : !tier.buffer<sram, 4xf32>
  func.return
}
// CHECK: Operation does not verify: 'tier.alloc' buffer [0, 16) overlaps the 'rdu.map' value at [0, 16) at model.py:7:1 in 'tier.compute' "body_value.k0" while it is live across the kernel

// -----

// (b) A caller's buffer live across a call of a function that allocates over it.
func.func private @layer(%x: !tier.buffer<hbm, 4xf32>) attributes {tier.sram_capacity = 1024 : i64} {
  %s = tier.alloc offset 8 : !tier.buffer<sram, 4xf32>
  tier.dma %x -> %s : !tier.buffer<hbm, 4xf32> -> !tier.buffer<sram, 4xf32>
  tier.dealloc %s : !tier.buffer<sram, 4xf32>
  func.return
}
func.func @across_call(%x: !tier.buffer<hbm, 4xf32>) attributes {tier.sram_capacity = 1024 : i64} {
  %keep = tier.alloc offset 0 : !tier.buffer<sram, 4xf32>
  tier.dma %x -> %keep : !tier.buffer<hbm, 4xf32> -> !tier.buffer<sram, 4xf32>
  func.call @layer(%x) : (!tier.buffer<hbm, 4xf32>) -> () loc("model.py":9:2)
  tier.dma %keep -> %x : !tier.buffer<sram, 4xf32> -> !tier.buffer<hbm, 4xf32>
  tier.dealloc %keep : !tier.buffer<sram, 4xf32>
  func.return
}
// CHECK: Operation does not verify: 'tier.alloc' buffer [0, 16) overlaps [8, 24), which @layer places, while it is live across the call at model.py:9:2

// -----

// (c) A buffer allocated inside a loop over one that is live around the loop.
func.func @in_loop(%x: !tier.buffer<hbm, 4xf32>) attributes {tier.sram_capacity = 1024 : i64} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %keep = tier.alloc offset 0 : !tier.buffer<sram, 4xf32>
  tier.dma %x -> %keep : !tier.buffer<hbm, 4xf32> -> !tier.buffer<sram, 4xf32>
  scf.for %i = %c0 to %c1 step %c1 {
    %tmp = tier.alloc offset 0 : !tier.buffer<sram, 4xf32>
    tier.dma %x -> %tmp : !tier.buffer<hbm, 4xf32> -> !tier.buffer<sram, 4xf32>
    tier.dealloc %tmp : !tier.buffer<sram, 4xf32>
  } loc("model.py":11:3)
  tier.dma %keep -> %x : !tier.buffer<sram, 4xf32> -> !tier.buffer<hbm, 4xf32>
  tier.dealloc %keep : !tier.buffer<sram, 4xf32>
  func.return
}
// CHECK: Operation does not verify: 'tier.alloc' buffer [0, 16) overlaps the buffer [0, 16) allocated inside 'scf.for' at model.py:11:3 while it is live around it

// -----

// A buffer live across a kernel, around a loop and across a call, with
// nothing placed over it: valid.
func.func private @layer(%x: !tier.buffer<hbm, 4xf32>) attributes {tier.sram_capacity = 1024 : i64} {
  %s = tier.alloc offset 0 : !tier.buffer<sram, 4xf32>
  tier.dma %x -> %s : !tier.buffer<hbm, 4xf32> -> !tier.buffer<sram, 4xf32>
  tier.dealloc %s : !tier.buffer<sram, 4xf32>
  func.return
}
func.func @valid(%x: !tier.buffer<hbm, 4xf32>) attributes {tier.sram_capacity = 1024 : i64} {
  %keep = tier.alloc offset 512 : !tier.buffer<sram, 4xf32>
  %in = tier.alloc offset 64 : !tier.buffer<sram, 4xf32>
  %out = tier.alloc offset 128 : !tier.buffer<sram, 4xf32>
  tier.dma %x -> %keep : !tier.buffer<hbm, 4xf32> -> !tier.buffer<sram, 4xf32>
  tier.dma %x -> %in : !tier.buffer<hbm, 4xf32> -> !tier.buffer<sram, 4xf32>
  tier.compute "k0" ins(%in : !tier.buffer<sram, 4xf32>) outs(%out : !tier.buffer<sram, 4xf32>) {
  ^bb0(%t: tensor<4xf32>):
    %e = rdu.map %t {tier.offset = 0 : i64} : (tensor<4xf32>) -> tensor<4xf32> {
    ^bb0(%0: f32):
      %1 = math.exp %0 : f32
      rdu.yield %1 : f32
    }
    %n = rdu.map %e : (tensor<4xf32>) -> tensor<4xf32> {
    ^bb0(%0: f32):
      %1 = arith.negf %0 : f32
      rdu.yield %1 : f32
    }
    rdu.yield %n : tensor<4xf32>
  }
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  scf.for %i = %c0 to %c1 step %c1 {
    %tmp = tier.alloc offset 0 : !tier.buffer<sram, 4xf32>
    tier.dealloc %tmp : !tier.buffer<sram, 4xf32>
  }
  func.call @layer(%x) : (!tier.buffer<hbm, 4xf32>) -> ()
  tier.dma %keep -> %x : !tier.buffer<sram, 4xf32> -> !tier.buffer<hbm, 4xf32>
  tier.dealloc %keep : !tier.buffer<sram, 4xf32>
  tier.dealloc %in : !tier.buffer<sram, 4xf32>
  tier.dealloc %out : !tier.buffer<sram, 4xf32>
  func.return
}
// CHECK: func.func @valid
// CHECK-NOT: does not verify
