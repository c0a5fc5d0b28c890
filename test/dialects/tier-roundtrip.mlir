// RUN: rducc-opt --check-roundtrip %s | filecheck %s
// RUN: rducc-opt %s --print-op-generic | rducc-opt | filecheck %s

// Every `tier` op, type and attribute. The module's capacity bounds @big; the
// func's own (smaller) capacity bounds @small. All SRAM allocs below that are
// live at the same time are disjoint, so the allocator verifier accepts them.

builtin.module attributes {tier.sram_capacity = 16384 : i64} {
  tier.global @weight : tensor<64x64xbf16>
  tier.global @bias in hbm : tensor<4xf32> = dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf32>
  tier.global @table in ddr : tensor<2x3xi64> {kind = "buffer"}
  tier.global @scale in hbm : tensor<f32> = dense<5.000000e-01> : tensor<f32>
  tier.global @mask : tensor<2xi1> = dense<[true, false]> : tensor<2xi1>
  tier.global @levels in hbm : tensor<2xui8> = dense<[0, 255]> : tensor<2xui8>
  "test.op"() {tier = #tier<tier sram>, buf = !tier.buffer<ddr, 0x8xi1>} : () -> ()

  func.func @small(%arg : !tier.buffer<sram, 4xf32>) attributes {tier.sram_capacity = 1024 : i64} {
    %b = tier.get_global @bias : !tier.buffer<hbm, 4xf32>
    %w = tier.get_global @weight : !tier.buffer<hbm, 64x64xbf16>
    %t = tier.get_global @table : !tier.buffer<ddr, 2x3xi64>
    %s = tier.get_global @scale : !tier.buffer<hbm, f32>
    %a0 = tier.alloc offset 0 : !tier.buffer<sram, 4xf32>
    %a1 = tier.alloc offset 16 : !tier.buffer<sram, 2x3xi64>
    %a2 = tier.alloc offset 64 {note = "tail"} : !tier.buffer<sram, 240xf32>
    tier.dma %b -> %a0 : !tier.buffer<hbm, 4xf32> -> !tier.buffer<sram, 4xf32>
    tier.dma %t -> %a1 : !tier.buffer<ddr, 2x3xi64> -> !tier.buffer<sram, 2x3xi64>
    tier.dma %a0 -> %arg : !tier.buffer<sram, 4xf32> -> !tier.buffer<sram, 4xf32>
    tier.dealloc %a0 : !tier.buffer<sram, 4xf32>
    %a3 = tier.alloc offset 0 : !tier.buffer<sram, 2xf64>
    tier.dealloc %a3 : !tier.buffer<sram, 2xf64>
    tier.dealloc %a1 : !tier.buffer<sram, 2x3xi64>
    tier.dealloc %a2 : !tier.buffer<sram, 240xf32>
    %h = tier.alloc : !tier.buffer<hbm, 64x64xbf16>
    %d = tier.alloc : !tier.buffer<ddr, 4xf32>
    %u = tier.alloc : !tier.buffer<sram, 64x64xbf16>
    tier.dma %w -> %u : !tier.buffer<hbm, 64x64xbf16> -> !tier.buffer<sram, 64x64xbf16>
    tier.dma %u -> %h : !tier.buffer<sram, 64x64xbf16> -> !tier.buffer<hbm, 64x64xbf16>
    tier.dma %d -> %b : !tier.buffer<ddr, 4xf32> -> !tier.buffer<hbm, 4xf32>
    tier.dealloc %u : !tier.buffer<sram, 64x64xbf16>
    func.return
  }

  func.func @big() {
    %w = tier.get_global @weight : !tier.buffer<hbm, 64x64xbf16>
    %lo = tier.alloc offset 0 : !tier.buffer<sram, 64x64xbf16>
    %hi = tier.alloc offset 8192 : !tier.buffer<sram, 64x64xbf16>
    tier.dma %w -> %lo : !tier.buffer<hbm, 64x64xbf16> -> !tier.buffer<sram, 64x64xbf16>
    tier.dma %lo -> %hi : !tier.buffer<sram, 64x64xbf16> -> !tier.buffer<sram, 64x64xbf16>
    tier.dealloc %lo : !tier.buffer<sram, 64x64xbf16>
    tier.dealloc %hi : !tier.buffer<sram, 64x64xbf16>
    func.return
  }

  func.func @window(%cache : !tier.buffer<hbm, 4x2x8x16xf32>, %x : !tier.buffer<hbm, 8x16xf32>) {
    %c0 = arith.constant 0 : index
    %c2 = arith.constant 2 : index
    %k = tier.view %cache[%c2, %c0, %c0, %c0] sizes [1, 2, 8, 16] : !tier.buffer<hbm, 4x2x8x16xf32> -> !tier.buffer<hbm, 2x8x16xf32>
    %s = tier.alloc offset 0 : !tier.buffer<sram, 4x8xf32>
    tier.dma %x[%c0, %c2] -> %s strides [2, 1] : !tier.buffer<hbm, 8x16xf32> -> !tier.buffer<sram, 4x8xf32>
    tier.dealloc %s : !tier.buffer<sram, 4x8xf32>
    func.return
  }

  func.func @rows(%cache : !tier.buffer<hbm, 2x8x16xf32>, %pos : !tier.buffer<hbm, 2xi32>) {
    %s = tier.alloc offset 0 : !tier.buffer<sram, 2x8x16xf32>
    %r = tier.alloc offset 1024 : !tier.buffer<sram, 2xi32>
    tier.dma %cache -> %s : !tier.buffer<hbm, 2x8x16xf32> -> !tier.buffer<sram, 2x8x16xf32>
    tier.dma %pos -> %r : !tier.buffer<hbm, 2xi32> -> !tier.buffer<sram, 2xi32>
    tier.scatter %s -> %cache[%r] dim 1 : !tier.buffer<sram, 2x8x16xf32>, !tier.buffer<sram, 2xi32> -> !tier.buffer<hbm, 2x8x16xf32>
    tier.dealloc %r : !tier.buffer<sram, 2xi32>
    tier.dealloc %s : !tier.buffer<sram, 2x8x16xf32>
    func.return
  }

  // the rows alone (two along dim 1, one an index), the cache not loaded for them
  func.func @rows_only(%cache : !tier.buffer<hbm, 2x8x16xf32>, %new : !tier.buffer<hbm, 2x2x16xf32>, %pos : !tier.buffer<hbm, 2xi32>) {
    %v = tier.alloc offset 0 : !tier.buffer<sram, 2x2x16xf32>
    %r = tier.alloc offset 1024 : !tier.buffer<sram, 2xi32>
    tier.dma %new -> %v : !tier.buffer<hbm, 2x2x16xf32> -> !tier.buffer<sram, 2x2x16xf32>
    tier.dma %pos -> %r : !tier.buffer<hbm, 2xi32> -> !tier.buffer<sram, 2xi32>
    tier.scatter %v -> %cache[%r] dim 1 {rows_only} : !tier.buffer<sram, 2x2x16xf32>, !tier.buffer<sram, 2xi32> -> !tier.buffer<hbm, 2x8x16xf32>
    tier.dealloc %r : !tier.buffer<sram, 2xi32>
    tier.dealloc %v : !tier.buffer<sram, 2x2x16xf32>
    func.return
  }

  // each row's target from logits that stay off chip: two index buffers, dims 0 and 1
  func.func @targets(%logits : !tier.buffer<hbm, 4x100xf32>, %ids : !tier.buffer<hbm, 4x1xi64>) {
    %rows = tier.alloc offset 0 : !tier.buffer<sram, 4x1xi64>
    %cols = tier.alloc offset 64 : !tier.buffer<sram, 4x1xi64>
    tier.dma %ids -> %rows : !tier.buffer<hbm, 4x1xi64> -> !tier.buffer<sram, 4x1xi64>
    tier.dma %ids -> %cols : !tier.buffer<hbm, 4x1xi64> -> !tier.buffer<sram, 4x1xi64>
    %picked = tier.alloc offset 128 : !tier.buffer<sram, 4x1xf32>
    tier.gather %logits[%rows, %cols] -> %picked : !tier.buffer<hbm, 4x100xf32>, !tier.buffer<sram, 4x1xi64>, !tier.buffer<sram, 4x1xi64> -> !tier.buffer<sram, 4x1xf32>
    tier.dealloc %rows : !tier.buffer<sram, 4x1xi64>
    tier.dealloc %cols : !tier.buffer<sram, 4x1xi64>
    tier.dealloc %picked : !tier.buffer<sram, 4x1xf32>
    func.return
  }
}

// CHECK:      builtin.module attributes {tier.sram_capacity = 16384 : i64} {
// CHECK-NEXT:   tier.global @weight : tensor<64x64xbf16>
// CHECK-NEXT:   tier.global @bias in hbm : tensor<4xf32> = dense<[1.000000e+00, 2.000000e+00, 3.000000e+00, 4.000000e+00]> : tensor<4xf32>
// CHECK-NEXT:   tier.global @table in ddr : tensor<2x3xi64> {kind = "buffer"}
// CHECK-NEXT:   tier.global @scale in hbm : tensor<f32> = dense<5.000000e-01> : tensor<f32>
// CHECK-NEXT:   tier.global @mask : tensor<2xi1> = dense<[true, false]> : tensor<2xi1>
// CHECK-NEXT:   tier.global @levels in hbm : tensor<2xui8> = dense<[0, 255]> : tensor<2xui8>
// CHECK-NEXT:   "test.op"() {tier = #tier<tier sram>, buf = !tier.buffer<ddr, 0x8xi1>} : () -> ()
// CHECK-NEXT:   func.func @small(%arg: !tier.buffer<sram, 4xf32>) attributes {tier.sram_capacity = 1024 : i64} {
// CHECK-NEXT:     %b = tier.get_global @bias : !tier.buffer<hbm, 4xf32>
// CHECK-NEXT:     %w = tier.get_global @weight : !tier.buffer<hbm, 64x64xbf16>
// CHECK-NEXT:     %t = tier.get_global @table : !tier.buffer<ddr, 2x3xi64>
// CHECK-NEXT:     %s = tier.get_global @scale : !tier.buffer<hbm, f32>
// CHECK-NEXT:     %a0 = tier.alloc offset 0 : !tier.buffer<sram, 4xf32>
// CHECK-NEXT:     %a1 = tier.alloc offset 16 : !tier.buffer<sram, 2x3xi64>
// CHECK-NEXT:     %a2 = tier.alloc offset 64 {note = "tail"} : !tier.buffer<sram, 240xf32>
// CHECK-NEXT:     tier.dma %b -> %a0 : !tier.buffer<hbm, 4xf32> -> !tier.buffer<sram, 4xf32>
// CHECK-NEXT:     tier.dma %t -> %a1 : !tier.buffer<ddr, 2x3xi64> -> !tier.buffer<sram, 2x3xi64>
// CHECK-NEXT:     tier.dma %a0 -> %arg : !tier.buffer<sram, 4xf32> -> !tier.buffer<sram, 4xf32>
// CHECK-NEXT:     tier.dealloc %a0 : !tier.buffer<sram, 4xf32>
// CHECK-NEXT:     %a3 = tier.alloc offset 0 : !tier.buffer<sram, 2xf64>
// CHECK-NEXT:     tier.dealloc %a3 : !tier.buffer<sram, 2xf64>
// CHECK-NEXT:     tier.dealloc %a1 : !tier.buffer<sram, 2x3xi64>
// CHECK-NEXT:     tier.dealloc %a2 : !tier.buffer<sram, 240xf32>
// CHECK-NEXT:     %h = tier.alloc : !tier.buffer<hbm, 64x64xbf16>
// CHECK-NEXT:     %d = tier.alloc : !tier.buffer<ddr, 4xf32>
// CHECK-NEXT:     %u = tier.alloc : !tier.buffer<sram, 64x64xbf16>
// CHECK-NEXT:     tier.dma %w -> %u : !tier.buffer<hbm, 64x64xbf16> -> !tier.buffer<sram, 64x64xbf16>
// CHECK-NEXT:     tier.dma %u -> %h : !tier.buffer<sram, 64x64xbf16> -> !tier.buffer<hbm, 64x64xbf16>
// CHECK-NEXT:     tier.dma %d -> %b : !tier.buffer<ddr, 4xf32> -> !tier.buffer<hbm, 4xf32>
// CHECK-NEXT:     tier.dealloc %u : !tier.buffer<sram, 64x64xbf16>
// CHECK-NEXT:     func.return
// CHECK-NEXT:   }
// CHECK-NEXT:   func.func @big() {
// CHECK-NEXT:     %w = tier.get_global @weight : !tier.buffer<hbm, 64x64xbf16>
// CHECK-NEXT:     %lo = tier.alloc offset 0 : !tier.buffer<sram, 64x64xbf16>
// CHECK-NEXT:     %hi = tier.alloc offset 8192 : !tier.buffer<sram, 64x64xbf16>
// CHECK-NEXT:     tier.dma %w -> %lo : !tier.buffer<hbm, 64x64xbf16> -> !tier.buffer<sram, 64x64xbf16>
// CHECK-NEXT:     tier.dma %lo -> %hi : !tier.buffer<sram, 64x64xbf16> -> !tier.buffer<sram, 64x64xbf16>
// CHECK-NEXT:     tier.dealloc %lo : !tier.buffer<sram, 64x64xbf16>
// CHECK-NEXT:     tier.dealloc %hi : !tier.buffer<sram, 64x64xbf16>
// CHECK-NEXT:     func.return
// CHECK-NEXT:   }
// CHECK-NEXT:   func.func @window(%cache: !tier.buffer<hbm, 4x2x8x16xf32>, %x: !tier.buffer<hbm, 8x16xf32>) {
// CHECK-NEXT:     %c0 = arith.constant 0 : index
// CHECK-NEXT:     %c2 = arith.constant 2 : index
// CHECK-NEXT:     %k = tier.view %cache[%c2, %c0, %c0, %c0] sizes [1, 2, 8, 16] : !tier.buffer<hbm, 4x2x8x16xf32> -> !tier.buffer<hbm, 2x8x16xf32>
// CHECK-NEXT:     %s = tier.alloc offset 0 : !tier.buffer<sram, 4x8xf32>
// CHECK-NEXT:     tier.dma %x[%c0, %c2] -> %s strides [2, 1] : !tier.buffer<hbm, 8x16xf32> -> !tier.buffer<sram, 4x8xf32>
// CHECK-NEXT:     tier.dealloc %s : !tier.buffer<sram, 4x8xf32>
// CHECK-NEXT:     func.return
// CHECK-NEXT:   }
// CHECK-NEXT:   func.func @rows(%cache: !tier.buffer<hbm, 2x8x16xf32>, %pos: !tier.buffer<hbm, 2xi32>) {
// CHECK:          tier.scatter %s -> %cache[%r] dim 1 : !tier.buffer<sram, 2x8x16xf32>, !tier.buffer<sram, 2xi32> -> !tier.buffer<hbm, 2x8x16xf32>
// CHECK:        }
// CHECK-NEXT:   func.func @rows_only(%cache: !tier.buffer<hbm, 2x8x16xf32>, %new: !tier.buffer<hbm, 2x2x16xf32>, %pos: !tier.buffer<hbm, 2xi32>) {
// CHECK:          tier.scatter %v -> %cache[%r] dim 1 {rows_only} : !tier.buffer<sram, 2x2x16xf32>, !tier.buffer<sram, 2xi32> -> !tier.buffer<hbm, 2x8x16xf32>
// CHECK:        }
// CHECK-NEXT:   func.func @targets(%logits: !tier.buffer<hbm, 4x100xf32>, %ids: !tier.buffer<hbm, 4x1xi64>) {
// CHECK:          tier.gather %logits[%rows, %cols] -> %picked : !tier.buffer<hbm, 4x100xf32>, !tier.buffer<sram, 4x1xi64>, !tier.buffer<sram, 4x1xi64> -> !tier.buffer<sram, 4x1xf32>
// CHECK:        }
// CHECK-NEXT: }
