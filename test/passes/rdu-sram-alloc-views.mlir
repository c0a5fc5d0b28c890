// A reshape or transpose of a body value is placed on its operand's bytes
// (one buffer for both, live until the later one's last reader): the runtime
// reads it as a NumPy view, the chip by address; nothing copies it.
// RUN: rducc-opt --check-roundtrip -p rdu-sram-alloc %s | filecheck %s
// Allocating the placed program again changes nothing.
// RUN: rducc-opt -p rdu-sram-alloc %s | rducc-opt -p rdu-sram-alloc | filecheck %s
//
// Invalid: the verifier lets a view share its operand's bytes only at the same
// offset; a transpose placed half over its (live) operand is an overlap.
// RUN: rducc-opt %S/Inputs/sram-view-misplaced.mlir --verify-diagnostics | filecheck %s --check-prefix=ERR

// %e is 4096 bytes at 8192; %r (its reshape) and %p (a transpose of %r) sit on
// the same bytes. %f is computed after %e's own last reader, while %p is still
// read: it may not take those bytes (before this rule it would have: %e is dead
// once %r is computed). %s reshapes the body argument: an input buffer's bytes
// are not a body value's, so it keeps bytes of its own.
// CHECK:      tier.sram_peak = 24576 : i64
// CHECK:      %e = rdu.map %t {tier.offset = 8192 : i64}
// CHECK:      %r = rdu.reshape %e {tier.offset = 8192 : i64}
// CHECK:      %p = rdu.transpose %r perm [1, 0] {tier.offset = 8192 : i64}
// CHECK:      %f = rdu.map %t {tier.offset = 12288 : i64}
// CHECK:      %s = rdu.reshape %t {tier.offset = 16384 : i64}
// CHECK:      %g = rdu.map %p, %s {tier.offset = 20480 : i64}
// CHECK:      %h = rdu.reshape %g {tier.offset = 20480 : i64}

// ERR: 'rdu.transpose' value at [2048, 6144) in 'tier.compute' overlaps a live buffer at [0, 4096)

builtin.module attributes {rdu.level = #rdu<level memory>} {
  func.func @forward(%x: !tier.buffer<hbm, 32x32xf32> {rdu.input = "x"}) -> !tier.buffer<hbm, 32x32xf32> {
    %a = tier.alloc : !tier.buffer<sram, 32x32xf32>
    %a_out = tier.alloc : !tier.buffer<sram, 32x32xf32>
    %y = tier.alloc : !tier.buffer<hbm, 32x32xf32>
    tier.dma %x -> %a : !tier.buffer<hbm, 32x32xf32> -> !tier.buffer<sram, 32x32xf32>
    tier.compute "k0" ins(%a : !tier.buffer<sram, 32x32xf32>) outs(%a_out : !tier.buffer<sram, 32x32xf32>) {
    ^bb0(%t: tensor<32x32xf32>):
      %e = rdu.map %t : (tensor<32x32xf32>) -> tensor<32x32xf32> {
      ^bb0(%0: f32):
        %1 = math.exp %0 : f32
        rdu.yield %1 : f32
      }
      %r = rdu.reshape %e : tensor<32x32xf32> -> tensor<16x64xf32>
      %p = rdu.transpose %r perm [1, 0] : tensor<16x64xf32> -> tensor<64x16xf32>
      %f = rdu.map %t : (tensor<32x32xf32>) -> tensor<32x32xf32> {
      ^bb0(%0: f32):
        %1 = arith.negf %0 : f32
        rdu.yield %1 : f32
      }
      %s = rdu.reshape %t : tensor<32x32xf32> -> tensor<64x16xf32>
      %g = rdu.map %p, %s : (tensor<64x16xf32>, tensor<64x16xf32>) -> tensor<64x16xf32> {
      ^bb0(%0: f32, %1: f32):
        %2 = arith.addf %0, %1 : f32
        rdu.yield %2 : f32
      }
      %h = rdu.reshape %g : tensor<64x16xf32> -> tensor<32x32xf32>
      %n = rdu.map %h, %f : (tensor<32x32xf32>, tensor<32x32xf32>) -> tensor<32x32xf32> {
      ^bb0(%0: f32, %1: f32):
        %2 = arith.addf %0, %1 : f32
        rdu.yield %2 : f32
      }
      rdu.yield %n : tensor<32x32xf32>
    }
    tier.dma %a_out -> %y : !tier.buffer<sram, 32x32xf32> -> !tier.buffer<hbm, 32x32xf32>
    tier.dealloc %a : !tier.buffer<sram, 32x32xf32>
    tier.dealloc %a_out : !tier.buffer<sram, 32x32xf32>
    func.return %y : !tier.buffer<hbm, 32x32xf32>
  }
}
