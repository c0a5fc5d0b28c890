// The placed program re-parses: the tier verifiers find no overlap and
// nothing past tier.sram_capacity. Allocating it again changes nothing.
// RUN: rducc-opt --check-roundtrip -p rdu-sram-alloc %s | filecheck %s
// RUN: rducc-opt -p rdu-sram-alloc %s | rducc-opt -p rdu-sram-alloc | filecheck %s
// The capacity recorded is the target's.
// RUN: rducc-opt -p 'rdu-sram-alloc{target="%S/Inputs/tiny.toml"}' %s | filecheck %s --check-prefix=TINY
//
// Diagnostic: the same program on an 8 KiB SRAM, located at the first body
// value live at the peak, with the buffers live there.
// RUN: not rducc-opt -p 'rdu-sram-alloc{target="%S/Inputs/micro.toml"}' %s 2>&1 | filecheck %s --check-prefix=ERR

// CHECK:      builtin.module attributes {rdu.level = #rdu<level placed>} {
// CHECK-NEXT:   func.func @forward(%x: !tier.buffer<hbm, 32x32xf32> {rdu.input = "x"}) -> !tier.buffer<hbm, 32x32xf32> attributes {tier.sram_capacity = 520000000 : i64, tier.sram_peak = 16384 : i64, tier.sram_lower_bound = 16384 : i64} {

// k0: its two buffers, then the body values: %e1 and %e2 are live together,
// %e3 reuses %e1's bytes (%e1 is dead once %e2 is computed). %n is yielded:
// it lives in %a_out and gets no offset of its own. HBM buffers get none.
// CHECK-NEXT:     %a = tier.alloc offset 0 : !tier.buffer<sram, 32x32xf32>
// CHECK-NEXT:     %a_out = tier.alloc offset 4096 : !tier.buffer<sram, 32x32xf32>
// CHECK-NEXT:     %mid = tier.alloc : !tier.buffer<hbm, 32x32xf32>
// CHECK:          %e1 = rdu.map %t {tier.offset = 8192 : i64}
// CHECK:          %e2 = rdu.map %e1 {tier.offset = 12288 : i64}
// CHECK:          %e3 = rdu.map %e2 {tier.offset = 8192 : i64}
// CHECK:          %n = rdu.map %e3, %t : (tensor<32x32xf32>, tensor<32x32xf32>) -> tensor<32x32xf32> {
// CHECK:          tier.dealloc %a_out

// k1 runs after k0's buffers are freed and reuses their space from offset 0.
// %b reserves two copies (2 x 2048 bytes); the 4-byte buffers take 64 bytes
// each (offsets are 64-byte aligned). Peak 16384 = the most bytes live at once.
// CHECK-NEXT:     %b = tier.alloc offset 0 buffers 2 : !tier.buffer<sram, 16x32xf32>
// CHECK-NEXT:     %scale = tier.alloc offset 8192 : !tier.buffer<sram, 1xf32>
// CHECK-NEXT:     %shift = tier.alloc offset 8256 : !tier.buffer<sram, 1xf32>
// CHECK-NEXT:     %b_out = tier.alloc offset 4096 : !tier.buffer<sram, 16x32xf32>
// CHECK-NEXT:     %y = tier.alloc : !tier.buffer<hbm, 32x32xf32>
// CHECK:          scf.for
// CHECK:            %u = rdu.map %t {tier.offset = 6144 : i64}
// CHECK:            %v = rdu.map %u, %k, %h : (tensor<16x32xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<16x32xf32> {
// CHECK:          func.return %y

// TINY: func.func @forward({{.*}}) -> !tier.buffer<hbm, 32x32xf32> attributes {tier.sram_capacity = 65536 : i64, tier.sram_peak = 16384 : i64, tier.sram_lower_bound = 16384 : i64} {

// ERR-NOT:  Traceback
// ERR:      rducc-opt: error: model.py:20:3: error: SRAM exhausted: the buffers need 16384 bytes but the target has 8192 (over by 8192); live at the peak:
// ERR-NEXT:   %a (!tier.buffer<sram, 32x32xf32>, 4096 bytes) at offset 0
// ERR-NEXT:   %a_out (!tier.buffer<sram, 32x32xf32>, 4096 bytes) at offset 4096
// ERR-NEXT:   %e1 (tensor<32x32xf32>, 4096 bytes) at offset 8192
// ERR-NEXT:   %e2 (tensor<32x32xf32>, 4096 bytes) at offset 12288
// ERR-NOT:  Traceback

builtin.module attributes {rdu.level = #rdu<level memory>} {
  func.func @forward(%x: !tier.buffer<hbm, 32x32xf32> {rdu.input = "x"}) -> !tier.buffer<hbm, 32x32xf32> {
    %a = tier.alloc : !tier.buffer<sram, 32x32xf32>
    %a_out = tier.alloc : !tier.buffer<sram, 32x32xf32>
    %mid = tier.alloc : !tier.buffer<hbm, 32x32xf32>
    tier.dma %x -> %a : !tier.buffer<hbm, 32x32xf32> -> !tier.buffer<sram, 32x32xf32>
    tier.compute "k0" ins(%a : !tier.buffer<sram, 32x32xf32>) outs(%a_out : !tier.buffer<sram, 32x32xf32>) {
    ^bb0(%t: tensor<32x32xf32>):
      %e1 = rdu.map %t : (tensor<32x32xf32>) -> tensor<32x32xf32> {
      ^bb0(%0: f32):
        %1 = math.exp %0 : f32
        rdu.yield %1 : f32
      } loc("model.py":20:3)
      %e2 = rdu.map %e1 : (tensor<32x32xf32>) -> tensor<32x32xf32> {
      ^bb0(%0: f32):
        %1 = arith.negf %0 : f32
        rdu.yield %1 : f32
      }
      %e3 = rdu.map %e2 : (tensor<32x32xf32>) -> tensor<32x32xf32> {
      ^bb0(%0: f32):
        %1 = math.sqrt %0 : f32
        rdu.yield %1 : f32
      }
      %n = rdu.map %e3, %t : (tensor<32x32xf32>, tensor<32x32xf32>) -> tensor<32x32xf32> {
      ^bb0(%0: f32, %1: f32):
        %2 = arith.addf %0, %1 : f32
        rdu.yield %2 : f32
      }
      rdu.yield %n : tensor<32x32xf32>
    }
    tier.dma %a_out -> %mid : !tier.buffer<sram, 32x32xf32> -> !tier.buffer<hbm, 32x32xf32>
    tier.dealloc %a : !tier.buffer<sram, 32x32xf32>
    tier.dealloc %a_out : !tier.buffer<sram, 32x32xf32>
    %b = tier.alloc buffers 2 : !tier.buffer<sram, 16x32xf32>
    %scale = tier.alloc : !tier.buffer<sram, 1xf32>
    %shift = tier.alloc : !tier.buffer<sram, 1xf32>
    %b_out = tier.alloc : !tier.buffer<sram, 16x32xf32>
    %y = tier.alloc : !tier.buffer<hbm, 32x32xf32>
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %c16 = arith.constant 16 : index
    scf.for %i = %c0 to %c2 step %c1 {
      %off = arith.muli %i, %c16 : index
      tier.dma %mid[%off, %c0] -> %b : !tier.buffer<hbm, 32x32xf32> -> !tier.buffer<sram, 16x32xf32>
      tier.compute "k1" ins(%b, %scale, %shift : !tier.buffer<sram, 16x32xf32>, !tier.buffer<sram, 1xf32>, !tier.buffer<sram, 1xf32>) outs(%b_out : !tier.buffer<sram, 16x32xf32>) {
      ^bb0(%t: tensor<16x32xf32>, %k: tensor<1xf32>, %h: tensor<1xf32>):
        %u = rdu.map %t : (tensor<16x32xf32>) -> tensor<16x32xf32> {
        ^bb0(%0: f32):
          %1 = math.sqrt %0 : f32
          rdu.yield %1 : f32
        }
        %v = rdu.map %u, %k, %h : (tensor<16x32xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<16x32xf32> {
        ^bb0(%0: f32, %1: f32, %2: f32):
          %3 = arith.mulf %0, %1 : f32
          %4 = arith.addf %3, %2 : f32
          rdu.yield %4 : f32
        }
        rdu.yield %v : tensor<16x32xf32>
      }
      tier.dma %b_out -> %y[%off, %c0] : !tier.buffer<sram, 16x32xf32> -> !tier.buffer<hbm, 32x32xf32>
    }
    tier.dealloc %b : !tier.buffer<sram, 16x32xf32>
    tier.dealloc %scale : !tier.buffer<sram, 1xf32>
    tier.dealloc %shift : !tier.buffer<sram, 1xf32>
    tier.dealloc %b_out : !tier.buffer<sram, 16x32xf32>
    tier.dealloc %mid : !tier.buffer<hbm, 32x32xf32>
    func.return %y : !tier.buffer<hbm, 32x32xf32>
  }
}
