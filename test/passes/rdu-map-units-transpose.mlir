// A transpose computes nothing but moves every element: it spreads over PCUs
// like an elementwise op of its size, not one PCU for its 0 FLOPs.
// RUN: rducc-opt -p 'rdu-sram-alloc,rdu-map-units{target="%S/Inputs/fabric-8.toml"}' %s | filecheck %s
// Diagnostic: the transpose's input and result buffers alone need more PMUs than the chip has.
// RUN: not rducc-opt -p 'rdu-sram-alloc,rdu-map-units{target="%S/Inputs/fabric-one-pmu.toml"}' %s 2>&1 | filecheck %s --check-prefix=ERR
//
// k0 on 8 PCUs: a transpose of 64 x 64 f32 (16 KiB), then an exp of its result.
// Both stages write 4,096 elements, so each may use at most ceil(4,096 / (32
// lanes x 6 stages)) = 22 PCUs; both are fed, not computed (sn40l's
// pcu_feed_bandwidth 204.8 GB/s: 16,384 B in 80 ns a PCU), equal work, so the
// 8 PCUs split 4 and 4 (one PCU for the transpose would leave it 4x the
// slowest stage).
// CHECK: tier.compute "k0"
// CHECK-SAME: stages = [[0, 0, 0, 4, {{[0-9]+}}], [1, 0, 4, 4, {{[0-9]+}}]]

// ERR-NOT:  Traceback
// ERR:      error: rdu-map-units: no room for 'rdu.transpose' of kernel 'k0'
// ERR-NOT:  Traceback

builtin.module attributes {rdu.level = #rdu<level memory>} {
  func.func @forward(%x: !tier.buffer<hbm, 64x64xf32> {rdu.input = "x"}) -> !tier.buffer<hbm, 64x64xf32> {
    %a = tier.alloc : !tier.buffer<sram, 64x64xf32>
    %a_out = tier.alloc : !tier.buffer<sram, 64x64xf32>
    %y = tier.alloc : !tier.buffer<hbm, 64x64xf32>
    tier.dma %x -> %a : !tier.buffer<hbm, 64x64xf32> -> !tier.buffer<sram, 64x64xf32>
    tier.compute "k0" ins(%a : !tier.buffer<sram, 64x64xf32>) outs(%a_out : !tier.buffer<sram, 64x64xf32>) {
    ^bb0(%t: tensor<64x64xf32>):
      %p = rdu.transpose %t perm [1, 0] : tensor<64x64xf32> -> tensor<64x64xf32>
      %e = rdu.map %p : (tensor<64x64xf32>) -> tensor<64x64xf32> {
      ^bb0(%0: f32):
        %1 = math.exp %0 : f32
        rdu.yield %1 : f32
      }
      rdu.yield %e : tensor<64x64xf32>
    }
    tier.dma %a_out -> %y : !tier.buffer<sram, 64x64xf32> -> !tier.buffer<hbm, 64x64xf32>
    tier.dealloc %a : !tier.buffer<sram, 64x64xf32>
    tier.dealloc %a_out : !tier.buffer<sram, 64x64xf32>
    func.return %y : !tier.buffer<hbm, 64x64xf32>
  }
}
