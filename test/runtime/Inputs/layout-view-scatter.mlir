// index_put's row update through a transposed input buffer (`state.transpose(0, 1)[4] = v`),
// placed: the transpose reads bytes nothing writes during the compute, so the
// runtime binds it as a NumPy view and the scatter gets a strided operand.
// Run by ../layout-view-scatter.py.
builtin.module attributes {rdu.level = #rdu<level placed>} {
  func.func @forward(%xh: !tier.buffer<hbm, 2x6x8xf32> {rdu.input = "x"}, %vh: !tier.buffer<hbm, 1x2x8xf32> {rdu.input = "v"})
      -> !tier.buffer<hbm, 6x2x8xf32> attributes {tier.sram_capacity = 4096 : i64} {
    %xs = tier.alloc offset 0 : !tier.buffer<sram, 2x6x8xf32>
    %vs = tier.alloc offset 384 : !tier.buffer<sram, 1x2x8xf32>
    tier.dma %xh -> %xs : !tier.buffer<hbm, 2x6x8xf32> -> !tier.buffer<sram, 2x6x8xf32>
    tier.dma %vh -> %vs : !tier.buffer<hbm, 1x2x8xf32> -> !tier.buffer<sram, 1x2x8xf32>
    %os = tier.alloc offset 1024 : !tier.buffer<sram, 6x2x8xf32>
    tier.compute "k0" ins(%xs, %vs : !tier.buffer<sram, 2x6x8xf32>, !tier.buffer<sram, 1x2x8xf32>)
        outs(%os : !tier.buffer<sram, 6x2x8xf32>) {
    ^bb0(%x: tensor<2x6x8xf32>, %v: tensor<1x2x8xf32>):
      %t = rdu.transpose %x perm [1, 0, 2] {tier.offset = 512 : i64} : tensor<2x6x8xf32> -> tensor<6x2x8xf32>
      %i = rdu.iota start 4 step 1 {tier.offset = 896 : i64} : tensor<1xi64>
      %r = rdu.reshape %i {tier.offset = 896 : i64} : tensor<1xi64> -> tensor<1x1x1xi64>
      %b = rdu.broadcast %r {tier.offset = 1408 : i64} : tensor<1x1x1xi64> -> tensor<1x2x8xi64>
      %s = rdu.scatter %t[%b] = %v dim 0 : tensor<6x2x8xf32>, tensor<1x2x8xi64>, tensor<1x2x8xf32> -> tensor<6x2x8xf32>
      rdu.yield %s : tensor<6x2x8xf32>
    }
    %o = tier.alloc : !tier.buffer<hbm, 6x2x8xf32>
    tier.dma %os -> %o : !tier.buffer<sram, 6x2x8xf32> -> !tier.buffer<hbm, 6x2x8xf32>
    func.return %o : !tier.buffer<hbm, 6x2x8xf32>
  }
}
