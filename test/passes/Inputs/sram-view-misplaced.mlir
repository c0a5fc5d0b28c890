// A transpose placed half over its operand (rdu-sram-alloc places a view at
// its operand's offset exactly): rdu-sram-alloc-views.mlir's invalid case.
func.func @misplaced(%x: !tier.buffer<hbm, 32x32xf32>) attributes {tier.sram_capacity = 65536 : i64} {
  %a = tier.alloc offset 8192 : !tier.buffer<sram, 32x32xf32>
  %a_out = tier.alloc offset 12288 : !tier.buffer<sram, 32x32xf32>
  tier.dma %x -> %a : !tier.buffer<hbm, 32x32xf32> -> !tier.buffer<sram, 32x32xf32>
  tier.compute "k0" ins(%a : !tier.buffer<sram, 32x32xf32>) outs(%a_out : !tier.buffer<sram, 32x32xf32>) {
  ^bb0(%t: tensor<32x32xf32>):
    %e = rdu.map %t {tier.offset = 0 : i64} : (tensor<32x32xf32>) -> tensor<32x32xf32> {
    ^bb0(%0: f32):
      %1 = math.exp %0 : f32
      rdu.yield %1 : f32
    }
    %p = rdu.transpose %e perm [1, 0] {tier.offset = 2048 : i64} : tensor<32x32xf32> -> tensor<32x32xf32>
    %n = rdu.map %p, %e : (tensor<32x32xf32>, tensor<32x32xf32>) -> tensor<32x32xf32> {
    ^bb0(%0: f32, %1: f32):
      %2 = arith.addf %0, %1 : f32
      rdu.yield %2 : f32
    }
    rdu.yield %n : tensor<32x32xf32>
  }
  tier.dma %a_out -> %x : !tier.buffer<sram, 32x32xf32> -> !tier.buffer<hbm, 32x32xf32>
  tier.dealloc %a : !tier.buffer<sram, 32x32xf32>
  tier.dealloc %a_out : !tier.buffer<sram, 32x32xf32>
  func.return
}
