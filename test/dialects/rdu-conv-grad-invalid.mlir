// RUN: rducc-opt %s --split-input-file --verify-diagnostics | filecheck %s

// The verifier errors of rdu.conv_grad, one per chunk.

%dy, %x, %w = "test.op"() : () -> (tensor<2x6x5x5xbf16>, tensor<2x4x9x9xbf16>, tensor<6x2x3x3xbf16>)
%g = rdu.conv_grad "output" %dy, %x, %w stride [2, 2] padding [1, 1] dilation [1, 1] output_padding [0, 0] groups 2 : tensor<2x6x5x5xbf16>, tensor<2x4x9x9xbf16>, tensor<6x2x3x3xbf16> -> tensor<2x4x9x9xbf16>
// CHECK: Operation does not verify: 'rdu.conv_grad' of must be one of ['input', 'weight', 'bias'], got 'output'

// -----

%dy, %x, %w = "test.op"() : () -> (tensor<2x6x5x5xbf16>, tensor<2x4x9x9xbf16>, tensor<6x2x3x3xbf16>)
%g = rdu.conv_grad "input" %dy, %x, %w stride [2] padding [1, 1] dilation [1, 1] output_padding [0, 0] groups 2 : tensor<2x6x5x5xbf16>, tensor<2x4x9x9xbf16>, tensor<6x2x3x3xbf16> -> tensor<2x4x9x9xbf16>
// CHECK: Operation does not verify: 'rdu.conv_grad' stride has 1 entries, expected 2

// -----

%dy, %x, %w = "test.op"() : () -> (tensor<2x6x5x5xbf16>, tensor<2x4x9x9xbf16>, tensor<6x2x3x3xbf16>)
%g = rdu.conv_grad "input" %dy, %x, %w stride [2, 2] padding [1, 1] dilation [1, 1] output_padding [0, 0] groups 1 : tensor<2x6x5x5xbf16>, tensor<2x4x9x9xbf16>, tensor<6x2x3x3xbf16> -> tensor<2x4x9x9xbf16>
// CHECK: Operation does not verify: 'rdu.conv_grad' channels do not match: input [2, 4, 9, 9], weight [6, 2, 3, 3], grad [2, 6, 5, 5], 1 groups

// -----

%dy, %x, %w = "test.op"() : () -> (tensor<2x6x5x5xf32>, tensor<2x4x9x9xbf16>, tensor<6x2x3x3xbf16>)
%g = rdu.conv_grad "input" %dy, %x, %w stride [2, 2] padding [1, 1] dilation [1, 1] output_padding [0, 0] groups 2 : tensor<2x6x5x5xf32>, tensor<2x4x9x9xbf16>, tensor<6x2x3x3xbf16> -> tensor<2x4x9x9xbf16>
// CHECK: Operation does not verify: 'rdu.conv_grad' grad, input and weight must have one element type

// -----

%dy, %x, %w = "test.op"() : () -> (tensor<2x6x5x5xbf16>, tensor<2x4x9x9xbf16>, tensor<6x2x3x3xbf16>)
%g = rdu.conv_grad "weight" %dy, %x, %w stride [2, 2] padding [1, 1] dilation [1, 1] output_padding [0, 0] groups 2 : tensor<2x6x5x5xbf16>, tensor<2x4x9x9xbf16>, tensor<6x2x3x3xbf16> -> tensor<6x2x3x3xf16>
// CHECK: Operation does not verify: 'rdu.conv_grad' of weight must have type [6, 2, 3, 3] x bf16 (or f32)
