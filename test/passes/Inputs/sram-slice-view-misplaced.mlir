// A slice on its operand's bytes, and a value placed over the part of those
// bytes the slice reads (not its own first bytes) while it is still read:
// rdu-sram-alloc-slice-views.mlir's invalid case.
func.func @misplaced(%x: !tier.buffer<hbm, 32x32xf32>, %o: !tier.buffer<hbm, 32x16xf32>)
    attributes {tier.sram_capacity = 65536 : i64} {
  %a = tier.alloc offset 8192 : !tier.buffer<sram, 32x32xf32>
  %a_out = tier.alloc offset 12288 : !tier.buffer<sram, 32x16xf32>
  tier.dma %x -> %a : !tier.buffer<hbm, 32x32xf32> -> !tier.buffer<sram, 32x32xf32>
  tier.compute "k0" ins(%a : !tier.buffer<sram, 32x32xf32>) outs(%a_out : !tier.buffer<sram, 32x16xf32>) {
  ^bb0(%t: tensor<32x32xf32>):
    %e = rdu.map %t {tier.offset = 0 : i64} : (tensor<32x32xf32>) -> tensor<32x32xf32> {
    ^bb0(%0: f32):
      %1 = math.exp %0 : f32
      rdu.yield %1 : f32
    }
    %gate = rdu.slice %e offsets [0, 0] strides [1, 1] {tier.offset = 0 : i64} : tensor<32x32xf32> -> tensor<32x16xf32>
    %up = rdu.slice %e offsets [0, 16] strides [1, 1] {tier.offset = 0 : i64} : tensor<32x32xf32> -> tensor<32x16xf32>
    %f = rdu.map %gate {tier.offset = 2048 : i64} : (tensor<32x16xf32>) -> tensor<32x16xf32> {
    ^bb0(%0: f32):
      %1 = arith.negf %0 : f32
      rdu.yield %1 : f32
    }
    %m = rdu.map %f, %up : (tensor<32x16xf32>, tensor<32x16xf32>) -> tensor<32x16xf32> {
    ^bb0(%0: f32, %1: f32):
      %2 = arith.mulf %0, %1 : f32
      rdu.yield %2 : f32
    }
    rdu.yield %m : tensor<32x16xf32>
  }
  tier.dma %a_out -> %o : !tier.buffer<sram, 32x16xf32> -> !tier.buffer<hbm, 32x16xf32>
  tier.dealloc %a : !tier.buffer<sram, 32x32xf32>
  tier.dealloc %a_out : !tier.buffer<sram, 32x16xf32>
  func.return
}
