// The training phase of an op (#rdu<phase ...>) and the result roles of a
// training program round-trip; an unknown phase does not parse.
// RUN: rducc-opt --check-roundtrip %s | filecheck %s
// RUN: sed -e 's/phase backward/phase sideways/' %s | not rducc-opt 2>&1 | filecheck %s --check-prefix=BAD

// CHECK: func.func @forward(%x: tensor<4xf32>) -> (tensor<f32>, tensor<4xf32>) attributes {rdu.result_roles = ["loss", "gradient:input:x"]}
// CHECK: rdu.reduce sum %x dims [0] {rdu.phase = #rdu<phase forward>}
// CHECK: rdu.map %x {rdu.phase = #rdu<phase backward>}
// BAD: Expected `forward`, `backward`, or `optimizer`
func.func @forward(%x: tensor<4xf32>) -> (tensor<f32>, tensor<4xf32>) attributes {rdu.result_roles = ["loss", "gradient:input:x"]} {
  %loss = rdu.reduce sum %x dims [0] {rdu.phase = #rdu<phase forward>} : tensor<4xf32> -> tensor<f32>
  %grad = rdu.map %x {rdu.phase = #rdu<phase backward>} : (tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%a: f32):
    %one = arith.constant 1.000000e+00 : f32
    rdu.yield %one : f32
  }
  func.return %loss, %grad : tensor<f32>, tensor<4xf32>
}
