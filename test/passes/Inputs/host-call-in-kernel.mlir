builtin.module attributes {rdu.level = #rdu<level kernels>} {
  func.func @forward(%x: tensor<4x3xf32> {rdu.input = "x"}) -> tensor<3x3xf32> {
    %r = rdu.kernel "k0"(%x) : (tensor<4x3xf32>) -> tensor<3x3xf32> {
    ^bb0(%a: tensor<4x3xf32>):
      %q, %r1 = rdu.host_call #rdu.aten<"aten::linalg_qr.default">(%a) tensors ["A"] : (tensor<4x3xf32>) -> (tensor<4x3xf32>, tensor<3x3xf32>)
      rdu.yield %r1 : tensor<3x3xf32>
    }
    func.return %r : tensor<3x3xf32>
  }
}
