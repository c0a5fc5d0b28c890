// RUN: rducc-opt --load-pass-plugin %S/../../examples/silu_plugin/rducc_silu/fuse_silu.py -p fuse-silu --split-input-file %s | filecheck %s

// x * sigmoid(x) becomes one map of x; the sigmoid map is gone.
// CHECK-LABEL: func.func @silu
// CHECK-NEXT:    %mul = rdu.map %x : (tensor<4x32xf32>) -> tensor<4x32xf32> {
// CHECK:           math.exp
// CHECK:           arith.mulf
// CHECK-NOT:     rdu.map
// CHECK:         func.return %mul
func.func @silu(%x: tensor<4x32xf32>) -> tensor<4x32xf32> {
  %sigmoid = rdu.map %x : (tensor<4x32xf32>) -> tensor<4x32xf32> {
  ^bb0(%0: f32):
    %1 = arith.constant 1.000000e+00 : f32
    %2 = arith.negf %0 : f32
    %3 = math.exp %2 : f32
    %4 = arith.addf %1, %3 : f32
    %5 = arith.divf %1, %4 : f32
    rdu.yield %5 : f32
  }
  %mul = rdu.map %x, %sigmoid : (tensor<4x32xf32>, tensor<4x32xf32>) -> tensor<4x32xf32> {
  ^bb0(%0: f32, %1: f32):
    %2 = arith.mulf %0, %1 : f32
    rdu.yield %2 : f32
  }
  func.return %mul : tensor<4x32xf32>
}

// -----

// x * sigmoid(y) is not silu: both maps stay.
// CHECK-LABEL: func.func @not_silu
// CHECK:         %sigmoid = rdu.map %y
// CHECK:         %mul = rdu.map %x, %sigmoid
func.func @not_silu(%x: tensor<4x32xf32>, %y: tensor<4x32xf32>) -> tensor<4x32xf32> {
  %sigmoid = rdu.map %y : (tensor<4x32xf32>) -> tensor<4x32xf32> {
  ^bb0(%0: f32):
    %1 = arith.constant 1.000000e+00 : f32
    %2 = arith.negf %0 : f32
    %3 = math.exp %2 : f32
    %4 = arith.addf %1, %3 : f32
    %5 = arith.divf %1, %4 : f32
    rdu.yield %5 : f32
  }
  %mul = rdu.map %x, %sigmoid : (tensor<4x32xf32>, tensor<4x32xf32>) -> tensor<4x32xf32> {
  ^bb0(%0: f32, %1: f32):
    %2 = arith.mulf %0, %1 : f32
    rdu.yield %2 : f32
  }
  func.return %mul : tensor<4x32xf32>
}
