// A slice of a body value is placed on its operand's bytes, as a reshape or
// transpose is (rdu-sram-alloc-views.mlir): the operand stays live until the
// slice's last reader, and the runtime reads the slice as a NumPy view
// (Mixtral's gate and up halves of one grouped product). A product's bias add
// runs in the product's epilogue, so the product's operands stay live up to
// the add: the add never takes their bytes (ConvNeXt's fc1: the runtime
// computes the pair into the add's bytes, and the reshape after it is a view).
// RUN: rducc-opt --check-roundtrip -p rdu-sram-alloc %s | filecheck %s
// Allocating the placed program again changes nothing.
// RUN: rducc-opt -p rdu-sram-alloc %s | rducc-opt -p rdu-sram-alloc | filecheck %s
//
// On a 64 KiB SRAM, @held's first row of %e would keep all of %e live past the
// capacity: that function is placed again with its slices copied.
// RUN: rducc-opt -p 'rdu-sram-alloc{target="%S/Inputs/tiny.toml"}' %s | filecheck %s --check-prefix=TINY
//
// Invalid: a slice reads anywhere in its operand's bytes, not only in its own
// first bytes; a value placed over the upper half while %up is read overlaps.
// RUN: rducc-opt %S/Inputs/sram-slice-view-misplaced.mlir --verify-diagnostics | filecheck %s --check-prefix=ERR

// %gate and %up sit on %e's bytes (without the rule each had bytes of its own,
// and the runtime copied both halves).
// CHECK:      @forward
// CHECK:      %e = rdu.map %t {tier.offset = 4096 : i64}
// CHECK:      %gate = rdu.slice %e offsets [0, 0] strides [1, 1] {tier.offset = 4096 : i64}
// CHECK:      %up = rdu.slice %e offsets [0, 16] strides [1, 1] {tier.offset = 4096 : i64}

// %fc1 does not take %normed's bytes: the product %p reads %normed in the
// add's epilogue (without the rule it did, the runtime computed the pair into
// %p's bytes, and %r, placed on %fc1's, was a copy).
// CHECK:      @fc1
// CHECK-SAME: tier.sram_peak = 11328 : i64
// CHECK:      %normed = rdu.map %t {tier.offset = 4096 : i64}
// CHECK:      %p = rdu.matmul %normed, %wt {tier.offset = 6144 : i64}
// CHECK:      %fc1 = rdu.map %p, %bt {tier.offset = 8192 : i64}
// CHECK:      %r = rdu.reshape %fc1 {tier.offset = 8192 : i64}
// CHECK:      %act = rdu.map %r {tier.offset = 4096 : i64}

// A 16-bit linear layer (issue 27): the bf16 product widened to f32 and the
// add of the bf16 bias rounded once, eager's `addmm`, run as one torch.addmm at
// the add: %fc1 does not take %normed's bytes either (without the rule it did).
// CHECK:      @fc1_bf16
// CHECK:      %normed = rdu.map %t {tier.offset = 4096 : i64}
// CHECK:      %p = rdu.matmul %normed, %wt {tier.offset = 0 : i64}
// CHECK:      %fc1 = rdu.map %bt, %p {tier.offset = 5120 : i64}
// Not a bias add in the product's epilogue: the product rounded to bf16 before
// the add (two roundings, not eager's addmm); %fc1 takes %normed's bytes.
// CHECK:      @fc1_bf16_rounded_first
// CHECK:      %normed = rdu.map %t {tier.offset = 4096 : i64}
// CHECK:      %fc1 = rdu.map %bt, %p {tier.offset = 4096 : i64}

// CHECK:      @held
// CHECK-SAME: tier.sram_peak = 65792 : i64
// CHECK:      %row = rdu.slice %e offsets [0, 0] strides [1, 1] {tier.offset = 16384 : i64}

// TINY:       @forward
// TINY:       %up = rdu.slice %e offsets [0, 16] strides [1, 1] {tier.offset = 4096 : i64}
// TINY:       @held
// TINY-SAME:  tier.sram_peak = 49664 : i64
// TINY:       %e = rdu.map %t {tier.offset = 16384 : i64}
// TINY:       %row = rdu.slice %e offsets [0, 0] strides [1, 1] {tier.offset = 49408 : i64}

// ERR: 'rdu.map' value at [2048, 4096) in 'tier.compute' overlaps a live buffer at [0, 4096)

builtin.module attributes {rdu.level = #rdu<level memory>} {
  func.func @forward(%x: !tier.buffer<hbm, 32x32xf32> {rdu.input = "x"}, %wh: !tier.buffer<hbm, 16x16xf32> {rdu.input = "w"}, %bh: !tier.buffer<hbm, 16xf32> {rdu.input = "b"}) -> !tier.buffer<hbm, 32x16xf32> {
    %a = tier.alloc : !tier.buffer<sram, 32x32xf32>
    %w = tier.alloc : !tier.buffer<sram, 16x16xf32>
    %b = tier.alloc : !tier.buffer<sram, 16xf32>
    %a_out = tier.alloc : !tier.buffer<sram, 32x16xf32>
    %y = tier.alloc : !tier.buffer<hbm, 32x16xf32>
    tier.dma %x -> %a : !tier.buffer<hbm, 32x32xf32> -> !tier.buffer<sram, 32x32xf32>
    tier.dma %wh -> %w : !tier.buffer<hbm, 16x16xf32> -> !tier.buffer<sram, 16x16xf32>
    tier.dma %bh -> %b : !tier.buffer<hbm, 16xf32> -> !tier.buffer<sram, 16xf32>
    tier.compute "k0" ins(%a, %w, %b : !tier.buffer<sram, 32x32xf32>, !tier.buffer<sram, 16x16xf32>, !tier.buffer<sram, 16xf32>) outs(%a_out : !tier.buffer<sram, 32x16xf32>) {
    ^bb0(%t: tensor<32x32xf32>, %wt: tensor<16x16xf32>, %bt: tensor<16xf32>):
      %e = rdu.map %t : (tensor<32x32xf32>) -> tensor<32x32xf32> {
      ^bb0(%0: f32):
        %1 = math.exp %0 : f32
        rdu.yield %1 : f32
      }
      %gate = rdu.slice %e offsets [0, 0] strides [1, 1] : tensor<32x32xf32> -> tensor<32x16xf32>
      %up = rdu.slice %e offsets [0, 16] strides [1, 1] : tensor<32x32xf32> -> tensor<32x16xf32>
      %m = rdu.map %gate, %up : (tensor<32x16xf32>, tensor<32x16xf32>) -> tensor<32x16xf32> {
      ^bb0(%0: f32, %1: f32):
        %2 = arith.mulf %0, %1 : f32
        rdu.yield %2 : f32
      }
      rdu.yield %m : tensor<32x16xf32>
    }
    tier.dma %a_out -> %y : !tier.buffer<sram, 32x16xf32> -> !tier.buffer<hbm, 32x16xf32>
    tier.dealloc %a : !tier.buffer<sram, 32x32xf32>
    tier.dealloc %w : !tier.buffer<sram, 16x16xf32>
    tier.dealloc %b : !tier.buffer<sram, 16xf32>
    tier.dealloc %a_out : !tier.buffer<sram, 32x16xf32>
    func.return %y : !tier.buffer<hbm, 32x16xf32>
  }
  func.func @fc1(%x: !tier.buffer<hbm, 32x16xf32> {rdu.input = "x"}, %wh: !tier.buffer<hbm, 16x16xf32> {rdu.input = "w"}, %bh: !tier.buffer<hbm, 16xf32> {rdu.input = "b"}) -> !tier.buffer<hbm, 32x16xf32> {
    %a = tier.alloc : !tier.buffer<sram, 32x16xf32>
    %w = tier.alloc : !tier.buffer<sram, 16x16xf32>
    %b = tier.alloc : !tier.buffer<sram, 16xf32>
    %a_out = tier.alloc : !tier.buffer<sram, 32x16xf32>
    %y = tier.alloc : !tier.buffer<hbm, 32x16xf32>
    tier.dma %x -> %a : !tier.buffer<hbm, 32x16xf32> -> !tier.buffer<sram, 32x16xf32>
    tier.dma %wh -> %w : !tier.buffer<hbm, 16x16xf32> -> !tier.buffer<sram, 16x16xf32>
    tier.dma %bh -> %b : !tier.buffer<hbm, 16xf32> -> !tier.buffer<sram, 16xf32>
    tier.compute "k2" ins(%a, %w, %b : !tier.buffer<sram, 32x16xf32>, !tier.buffer<sram, 16x16xf32>, !tier.buffer<sram, 16xf32>) outs(%a_out : !tier.buffer<sram, 32x16xf32>) {
    ^bb0(%t: tensor<32x16xf32>, %wt: tensor<16x16xf32>, %bt: tensor<16xf32>):
      %normed = rdu.map %t : (tensor<32x16xf32>) -> tensor<32x16xf32> {
      ^bb0(%0: f32):
        %1 = arith.negf %0 : f32
        rdu.yield %1 : f32
      }
      %p = rdu.matmul %normed, %wt : tensor<32x16xf32>, tensor<16x16xf32> -> tensor<32x16xf32>
      %fc1 = rdu.map %p, %bt : (tensor<32x16xf32>, tensor<16xf32>) -> tensor<32x16xf32> {
      ^bb0(%0: f32, %1: f32):
        %2 = arith.addf %0, %1 : f32
        rdu.yield %2 : f32
      }
      %r = rdu.reshape %fc1 : tensor<32x16xf32> -> tensor<2x16x16xf32>
      %act = rdu.map %r : (tensor<2x16x16xf32>) -> tensor<2x16x16xf32> {
      ^bb0(%0: f32):
        %1 = math.tanh %0 : f32
        rdu.yield %1 : f32
      }
      %n = rdu.reshape %act : tensor<2x16x16xf32> -> tensor<32x16xf32>
      rdu.yield %n : tensor<32x16xf32>
    }
    tier.dma %a_out -> %y : !tier.buffer<sram, 32x16xf32> -> !tier.buffer<hbm, 32x16xf32>
    tier.dealloc %a : !tier.buffer<sram, 32x16xf32>
    tier.dealloc %w : !tier.buffer<sram, 16x16xf32>
    tier.dealloc %b : !tier.buffer<sram, 16xf32>
    tier.dealloc %a_out : !tier.buffer<sram, 32x16xf32>
    func.return %y : !tier.buffer<hbm, 32x16xf32>
  }
  func.func @fc1_bf16(%x: !tier.buffer<hbm, 32x16xbf16> {rdu.input = "x"}, %wh: !tier.buffer<hbm, 16x16xbf16> {rdu.input = "w"}, %bh: !tier.buffer<hbm, 16xbf16> {rdu.input = "b"}) -> !tier.buffer<hbm, 32x16xbf16> {
    %a = tier.alloc : !tier.buffer<sram, 32x16xbf16>
    %w = tier.alloc : !tier.buffer<sram, 16x16xbf16>
    %b = tier.alloc : !tier.buffer<sram, 16xbf16>
    %a_out = tier.alloc : !tier.buffer<sram, 32x16xbf16>
    %y = tier.alloc : !tier.buffer<hbm, 32x16xbf16>
    tier.dma %x -> %a : !tier.buffer<hbm, 32x16xbf16> -> !tier.buffer<sram, 32x16xbf16>
    tier.dma %wh -> %w : !tier.buffer<hbm, 16x16xbf16> -> !tier.buffer<sram, 16x16xbf16>
    tier.dma %bh -> %b : !tier.buffer<hbm, 16xbf16> -> !tier.buffer<sram, 16xbf16>
    tier.compute "k3" ins(%a, %w, %b : !tier.buffer<sram, 32x16xbf16>, !tier.buffer<sram, 16x16xbf16>, !tier.buffer<sram, 16xbf16>) outs(%a_out : !tier.buffer<sram, 32x16xbf16>) {
    ^bb0(%t: tensor<32x16xbf16>, %wt: tensor<16x16xbf16>, %bt: tensor<16xbf16>):
      %normed = rdu.map %t : (tensor<32x16xbf16>) -> tensor<32x16xbf16> {
      ^bb0(%0: bf16):
        %1 = arith.negf %0 : bf16
        rdu.yield %1 : bf16
      }
      %p = rdu.matmul %normed, %wt : tensor<32x16xbf16>, tensor<16x16xbf16> -> tensor<32x16xf32>
      %fc1 = rdu.map %bt, %p : (tensor<16xbf16>, tensor<32x16xf32>) -> tensor<32x16xbf16> {
      ^bb0(%0: bf16, %1: f32):
        %2 = arith.extf %0 : bf16 to f32
        %3 = arith.addf %1, %2 : f32
        %4 = arith.truncf %3 : f32 to bf16
        rdu.yield %4 : bf16
      }
      %act = rdu.map %fc1 : (tensor<32x16xbf16>) -> tensor<32x16xbf16> {
      ^bb0(%0: bf16):
        %1 = arith.negf %0 : bf16
        rdu.yield %1 : bf16
      }
      rdu.yield %act : tensor<32x16xbf16>
    }
    tier.dma %a_out -> %y : !tier.buffer<sram, 32x16xbf16> -> !tier.buffer<hbm, 32x16xbf16>
    tier.dealloc %a : !tier.buffer<sram, 32x16xbf16>
    tier.dealloc %w : !tier.buffer<sram, 16x16xbf16>
    tier.dealloc %b : !tier.buffer<sram, 16xbf16>
    tier.dealloc %a_out : !tier.buffer<sram, 32x16xbf16>
    func.return %y : !tier.buffer<hbm, 32x16xbf16>
  }
  func.func @fc1_bf16_rounded_first(%x: !tier.buffer<hbm, 32x16xbf16> {rdu.input = "x"}, %wh: !tier.buffer<hbm, 16x16xbf16> {rdu.input = "w"}, %bh: !tier.buffer<hbm, 16xbf16> {rdu.input = "b"}) -> !tier.buffer<hbm, 32x16xbf16> {
    %a = tier.alloc : !tier.buffer<sram, 32x16xbf16>
    %w = tier.alloc : !tier.buffer<sram, 16x16xbf16>
    %b = tier.alloc : !tier.buffer<sram, 16xbf16>
    %a_out = tier.alloc : !tier.buffer<sram, 32x16xbf16>
    %y = tier.alloc : !tier.buffer<hbm, 32x16xbf16>
    tier.dma %x -> %a : !tier.buffer<hbm, 32x16xbf16> -> !tier.buffer<sram, 32x16xbf16>
    tier.dma %wh -> %w : !tier.buffer<hbm, 16x16xbf16> -> !tier.buffer<sram, 16x16xbf16>
    tier.dma %bh -> %b : !tier.buffer<hbm, 16xbf16> -> !tier.buffer<sram, 16xbf16>
    tier.compute "k4" ins(%a, %w, %b : !tier.buffer<sram, 32x16xbf16>, !tier.buffer<sram, 16x16xbf16>, !tier.buffer<sram, 16xbf16>) outs(%a_out : !tier.buffer<sram, 32x16xbf16>) {
    ^bb0(%t: tensor<32x16xbf16>, %wt: tensor<16x16xbf16>, %bt: tensor<16xbf16>):
      %normed = rdu.map %t : (tensor<32x16xbf16>) -> tensor<32x16xbf16> {
      ^bb0(%0: bf16):
        %1 = arith.negf %0 : bf16
        rdu.yield %1 : bf16
      }
      %p = rdu.matmul %normed, %wt : tensor<32x16xbf16>, tensor<16x16xbf16> -> tensor<32x16xf32>
      %fc1 = rdu.map %bt, %p : (tensor<16xbf16>, tensor<32x16xf32>) -> tensor<32x16xbf16> {
      ^bb0(%0: bf16, %1: f32):
        %2 = arith.truncf %1 : f32 to bf16
        %3 = arith.addf %2, %0 : bf16
        rdu.yield %3 : bf16
      }
      %act = rdu.map %fc1 : (tensor<32x16xbf16>) -> tensor<32x16xbf16> {
      ^bb0(%0: bf16):
        %1 = arith.negf %0 : bf16
        rdu.yield %1 : bf16
      }
      rdu.yield %act : tensor<32x16xbf16>
    }
    tier.dma %a_out -> %y : !tier.buffer<sram, 32x16xbf16> -> !tier.buffer<hbm, 32x16xbf16>
    tier.dealloc %a : !tier.buffer<sram, 32x16xbf16>
    tier.dealloc %w : !tier.buffer<sram, 16x16xbf16>
    tier.dealloc %b : !tier.buffer<sram, 16xbf16>
    tier.dealloc %a_out : !tier.buffer<sram, 32x16xbf16>
    func.return %y : !tier.buffer<hbm, 32x16xbf16>
  }
  func.func @held(%x: !tier.buffer<hbm, 64x64xf32> {rdu.input = "x"}) -> !tier.buffer<hbm, 1x64xf32> {
    %a = tier.alloc : !tier.buffer<sram, 64x64xf32>
    %a_out = tier.alloc : !tier.buffer<sram, 1x64xf32>
    %y = tier.alloc : !tier.buffer<hbm, 1x64xf32>
    tier.dma %x -> %a : !tier.buffer<hbm, 64x64xf32> -> !tier.buffer<sram, 64x64xf32>
    tier.compute "k1" ins(%a : !tier.buffer<sram, 64x64xf32>) outs(%a_out : !tier.buffer<sram, 1x64xf32>) {
    ^bb0(%t: tensor<64x64xf32>):
      %e = rdu.map %t : (tensor<64x64xf32>) -> tensor<64x64xf32> {
      ^bb0(%0: f32):
        %1 = math.exp %0 : f32
        rdu.yield %1 : f32
      }
      %row = rdu.slice %e offsets [0, 0] strides [1, 1] : tensor<64x64xf32> -> tensor<1x64xf32>
      %f = rdu.map %t : (tensor<64x64xf32>) -> tensor<64x64xf32> {
      ^bb0(%0: f32):
        %1 = arith.negf %0 : f32
        rdu.yield %1 : f32
      }
      %g = rdu.map %f : (tensor<64x64xf32>) -> tensor<64x64xf32> {
      ^bb0(%0: f32):
        %1 = math.exp %0 : f32
        rdu.yield %1 : f32
      }
      %first = rdu.slice %g offsets [0, 0] strides [1, 1] : tensor<64x64xf32> -> tensor<1x64xf32>
      %n = rdu.map %row, %first : (tensor<1x64xf32>, tensor<1x64xf32>) -> tensor<1x64xf32> {
      ^bb0(%0: f32, %1: f32):
        %2 = arith.mulf %0, %1 : f32
        rdu.yield %2 : f32
      }
      rdu.yield %n : tensor<1x64xf32>
    }
    tier.dma %a_out -> %y : !tier.buffer<sram, 1x64xf32> -> !tier.buffer<hbm, 1x64xf32>
    tier.dealloc %a : !tier.buffer<sram, 64x64xf32>
    tier.dealloc %a_out : !tier.buffer<sram, 1x64xf32>
    func.return %y : !tier.buffer<hbm, 1x64xf32>
  }
}
