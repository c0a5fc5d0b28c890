// The invalid case of rdu-tile-large-dims.mlir: a gather whose index is computed
// inside the kernel cannot be an indexed DMA of an off-chip source, so the 2.1 GB
// of logits would have to be on chip whole: no tiling fits.
builtin.module attributes {rdu.level = #rdu<level kernels>} {
  func.func @forward(%logits: tensor<4096x128256xf32> {rdu.input = "logits"}, %rows: tensor<4096x1xi64> {rdu.input = "rows"}) -> tensor<4096x1xf32> {
    %picked = rdu.kernel "k0"(%logits, %rows) : (tensor<4096x128256xf32>, tensor<4096x1xi64>) -> tensor<4096x1xf32> {
    ^bb0(%l: tensor<4096x128256xf32>, %r: tensor<4096x1xi64>):
      %t = rdu.map %r : (tensor<4096x1xi64>) -> tensor<4096x1xi64> {
      ^bb0(%0: i64):
        rdu.yield %0 : i64
      } loc("loss.py":7:3)
      %g = rdu.gather %l[%r, %t] dim 0 : tensor<4096x128256xf32>, tensor<4096x1xi64>, tensor<4096x1xi64> -> tensor<4096x1xf32>
      rdu.yield %g : tensor<4096x1xf32>
    }
    func.return %picked : tensor<4096x1xf32>
  }
}
