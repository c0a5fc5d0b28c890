builtin.module attributes {rdu.level = #rdu<level graph>} {
  func.func @forward(%x: tensor<4x4xf32>) -> tensor<4x4xf32> {
    %y = rdu.matmul %x, %x : tensor<4x4xf32>, tensor<4x4xf32> -> tensor<4x4xf32>
    func.return %y : tensor<4x4xf32>
  }
}
