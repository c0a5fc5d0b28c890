// A module that has a function @layer of its own (not an outlined layer).
builtin.module attributes {rdu.level = #rdu<level graph>} {
  func.func @forward(%x: tensor<4xf32> {rdu.input = "x"}) -> tensor<4xf32> {
    %y = func.call @layer(%x) : (tensor<4xf32>) -> tensor<4xf32>
    func.return %y : tensor<4xf32>
  }
  func.func private @layer(%x: tensor<4xf32>) -> tensor<4xf32> {
    func.return %x : tensor<4xf32>
  }
}
