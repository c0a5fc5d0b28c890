// A training step (its ops carry phases) with a function of its own named
// @layer_backward, the name rdu-outline-layers gives an outlined backward layer.
builtin.module {
  func.func @forward(%x: tensor<4xf32> {rdu.input = "x"}) -> tensor<4xf32> {
    %y = rdu.map %x {rdu.phase = #rdu<phase forward>} : (tensor<4xf32>) -> tensor<4xf32> {
    ^bb0(%0: f32):
      %1 = math.tanh %0 : f32
      rdu.yield %1 : f32
    }
    func.return %y : tensor<4xf32>
  }
  func.func @layer_backward(%x: tensor<4xf32>) -> tensor<4xf32> {
    func.return %x : tensor<4xf32>
  }
}
