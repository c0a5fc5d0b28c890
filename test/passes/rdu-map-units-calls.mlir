// rdu-map-units maps every kernel inside one block of remembered answers
// (rducc.dialects.unchanged): the module's calls indexed once, each
// contraction's compute element traced once. k1's matmul reads @product's
// arguments, which its callers pass. In the first module the one caller passes
// a buffer k0 widened from bf16: the matmul is priced at the bf16 peak, and the
// 256 x 256 x 256 product takes 1,019 PCUs beside the exp's 21. In the second a
// second call passes k1's own float32 result: float32, 1,034 PCUs beside 6 (the
// index holds both calls).
// RUN: rducc-opt --split-input-file -p 'rdu-map-units{target=sn40l}' %s | filecheck %s
// Diagnostic: a module not lowered to memory is refused, naming the pass.
// RUN: not rducc-opt -p 'rdu-map-units{target=sn40l}' %S/Inputs/map-units-graph-level.mlir 2>&1 | filecheck %s --check-prefix=ERR

// CHECK:      tier.compute "k1"
// CHECK-SAME: stages = [[0, 0, 0, 1019, {{[0-9]+}}], [1, 0, 1019, 21, {{[0-9]+}}]]
// CHECK:      tier.compute "k1"
// CHECK-SAME: stages = [[0, 0, 0, 1034, {{[0-9]+}}], [1, 0, 1034, 6, {{[0-9]+}}]]

// ERR-NOT: Traceback
// ERR:     rdu-map-units
// ERR-NOT: Traceback

builtin.module attributes {rdu.level = #rdu<level memory>} {
  func.func private @product(%a: !tier.buffer<sram, 256x256xf32>, %b: !tier.buffer<sram, 256x256xf32>) -> !tier.buffer<sram, 256x256xf32> {
    %y = tier.alloc : !tier.buffer<sram, 256x256xf32>
    tier.compute "k1" ins(%a, %b : !tier.buffer<sram, 256x256xf32>, !tier.buffer<sram, 256x256xf32>) outs(%y : !tier.buffer<sram, 256x256xf32>) {
    ^bb0(%x: tensor<256x256xf32>, %w: tensor<256x256xf32>):
      %p = rdu.matmul %x, %w : tensor<256x256xf32>, tensor<256x256xf32> -> tensor<256x256xf32>
      %e = rdu.map %p : (tensor<256x256xf32>) -> tensor<256x256xf32> {
      ^bb0(%0: f32):
        %1 = math.exp %0 : f32
        rdu.yield %1 : f32
      }
      rdu.yield %e : tensor<256x256xf32>
    }
    func.return %y : !tier.buffer<sram, 256x256xf32>
  }
  func.func @forward(%x: !tier.buffer<sram, 256x256xbf16> {rdu.input = "x"}) -> !tier.buffer<sram, 256x256xf32> {
    %xf = tier.alloc : !tier.buffer<sram, 256x256xf32>
    tier.compute "k0" ins(%x : !tier.buffer<sram, 256x256xbf16>) outs(%xf : !tier.buffer<sram, 256x256xf32>) {
    ^bb0(%t: tensor<256x256xbf16>):
      %f = rdu.map %t : (tensor<256x256xbf16>) -> tensor<256x256xf32> {
      ^bb0(%0: bf16):
        %1 = arith.extf %0 : bf16 to f32
        rdu.yield %1 : f32
      }
      rdu.yield %f : tensor<256x256xf32>
    }
    %y = func.call @product(%xf, %xf) : (!tier.buffer<sram, 256x256xf32>, !tier.buffer<sram, 256x256xf32>) -> !tier.buffer<sram, 256x256xf32>
    func.return %y : !tier.buffer<sram, 256x256xf32>
  }
}

// -----

builtin.module attributes {rdu.level = #rdu<level memory>} {
  func.func private @product(%a: !tier.buffer<sram, 256x256xf32>, %b: !tier.buffer<sram, 256x256xf32>) -> !tier.buffer<sram, 256x256xf32> {
    %y = tier.alloc : !tier.buffer<sram, 256x256xf32>
    tier.compute "k1" ins(%a, %b : !tier.buffer<sram, 256x256xf32>, !tier.buffer<sram, 256x256xf32>) outs(%y : !tier.buffer<sram, 256x256xf32>) {
    ^bb0(%x: tensor<256x256xf32>, %w: tensor<256x256xf32>):
      %p = rdu.matmul %x, %w : tensor<256x256xf32>, tensor<256x256xf32> -> tensor<256x256xf32>
      %e = rdu.map %p : (tensor<256x256xf32>) -> tensor<256x256xf32> {
      ^bb0(%0: f32):
        %1 = math.exp %0 : f32
        rdu.yield %1 : f32
      }
      rdu.yield %e : tensor<256x256xf32>
    }
    func.return %y : !tier.buffer<sram, 256x256xf32>
  }
  func.func @forward(%x: !tier.buffer<sram, 256x256xbf16> {rdu.input = "x"}) -> !tier.buffer<sram, 256x256xf32> {
    %xf = tier.alloc : !tier.buffer<sram, 256x256xf32>
    tier.compute "k0" ins(%x : !tier.buffer<sram, 256x256xbf16>) outs(%xf : !tier.buffer<sram, 256x256xf32>) {
    ^bb0(%t: tensor<256x256xbf16>):
      %f = rdu.map %t : (tensor<256x256xbf16>) -> tensor<256x256xf32> {
      ^bb0(%0: bf16):
        %1 = arith.extf %0 : bf16 to f32
        rdu.yield %1 : f32
      }
      rdu.yield %f : tensor<256x256xf32>
    }
    %y0 = func.call @product(%xf, %xf) : (!tier.buffer<sram, 256x256xf32>, !tier.buffer<sram, 256x256xf32>) -> !tier.buffer<sram, 256x256xf32>
    %y = func.call @product(%y0, %y0) : (!tier.buffer<sram, 256x256xf32>, !tier.buffer<sram, 256x256xf32>) -> !tier.buffer<sram, 256x256xf32>
    func.return %y : !tier.buffer<sram, 256x256xf32>
  }
}
