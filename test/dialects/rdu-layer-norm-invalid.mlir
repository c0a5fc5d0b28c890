// RUN: rducc-opt %s --split-input-file --verify-diagnostics | filecheck %s

// The verifier errors of rdu.layer_norm and rdu.layer_norm_grad, one per chunk.

%x = "test.op"() : () -> tensor<2x3x8xbf16>
%s = rdu.layer_norm "var" %x normalized 1 eps 1.0e-05 : tensor<2x3x8xbf16> -> tensor<2x3x1xf32>
// CHECK: Operation does not verify: 'rdu.layer_norm' part must be one of ['output', 'mean', 'rstd'], got 'var'

// -----

%x = "test.op"() : () -> tensor<2x3x8xbf16>
%s = rdu.layer_norm "mean" %x normalized 1 eps 1.0e-05 : tensor<2x3x8xbf16> -> tensor<2x3xf32>
// CHECK: Operation does not verify: 'rdu.layer_norm' mean shape [2, 3] should be [2, 3, 1]

// -----

%x = "test.op"() : () -> tensor<2x3x8xbf16>
%s = rdu.layer_norm "mean" %x normalized 4 eps 1.0e-05 : tensor<2x3x8xbf16> -> tensor<1x1x1xf32>
// CHECK: Operation does not verify: 'rdu.layer_norm' normalizes 4 trailing dims of a rank-3 input

// -----

%x, %w = "test.op"() : () -> (tensor<2x3x8xbf16>, tensor<3x8xf32>)
%s = rdu.layer_norm "mean" %x, %w normalized 1 eps 1.0e-05 weight : tensor<2x3x8xbf16>, tensor<3x8xf32> -> tensor<2x3x1xf32>
// CHECK: Operation does not verify: 'rdu.layer_norm' weight and bias must have the normalized shape [8], got [3, 8]

// -----

%x, %w = "test.op"() : () -> (tensor<2x3x8xbf16>, tensor<8xf32>)
%s = rdu.layer_norm "mean" %x, %w normalized 1 eps 1.0e-05 : tensor<2x3x8xbf16>, tensor<8xf32> -> tensor<2x3x1xf32>
// CHECK: Operation does not verify: 'rdu.layer_norm' has 1 weight/bias operands, its with_weight/with_bias say 0

// -----

%dy, %x, %m = "test.op"() : () -> (tensor<2x3x8xbf16>, tensor<2x3x8xbf16>, tensor<2x3x1xf32>)
%g = rdu.layer_norm_grad "weight" %dy, %x, %m, %m normalized 1 : tensor<2x3x8xbf16>, tensor<2x3x8xbf16>, tensor<2x3x1xf32>, tensor<2x3x1xf32> -> tensor<8xf32>
// CHECK: Operation does not verify: 'rdu.layer_norm_grad' of weight needs the layer's weight

// -----

%dy, %x, %m = "test.op"() : () -> (tensor<2x3x8xf32>, tensor<2x3x8xbf16>, tensor<2x3x1xf32>)
%g = rdu.layer_norm_grad "input" %dy, %x, %m, %m normalized 1 : tensor<2x3x8xf32>, tensor<2x3x8xbf16>, tensor<2x3x1xf32>, tensor<2x3x1xf32> -> tensor<2x3x8xbf16>
// CHECK: Operation does not verify: 'rdu.layer_norm_grad' grad and input must have one type

// -----

%dy, %x, %m = "test.op"() : () -> (tensor<2x3x8xbf16>, tensor<2x3x8xbf16>, tensor<2x1xf32>)
%g = rdu.layer_norm_grad "input" %dy, %x, %m, %m normalized 1 : tensor<2x3x8xbf16>, tensor<2x3x8xbf16>, tensor<2x1xf32>, tensor<2x1xf32> -> tensor<2x3x8xbf16>
// CHECK: Operation does not verify: 'rdu.layer_norm_grad' mean and rstd must have shape [2, 3, 1], got [2, 1]

// -----

%dy, %x, %m = "test.op"() : () -> (tensor<2x3x8xbf16>, tensor<2x3x8xbf16>, tensor<2x3x1xf32>)
%g = rdu.layer_norm_grad "input" %dy, %x, %m, %m normalized 1 : tensor<2x3x8xbf16>, tensor<2x3x8xbf16>, tensor<2x3x1xf32>, tensor<2x3x1xf32> -> tensor<2x3x8xf32>
// CHECK: Operation does not verify: 'rdu.layer_norm_grad' of input must have the type of the input
