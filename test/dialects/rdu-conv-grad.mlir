// RUN: rducc-opt --check-roundtrip %s | filecheck %s
// RUN: rducc-opt %s --print-op-generic | rducc-opt | filecheck %s

// A bf16 convolution's gradients, each as torch's convolution_backward computes it
// (rducc.dialects.rdu.conv_grad): a strided grouped convolution, and a transposed one.

%dy, %x, %w = "test.op"() : () -> (tensor<2x6x5x5xbf16>, tensor<2x4x9x9xbf16>, tensor<6x2x3x3xbf16>)
// CHECK: %dx = rdu.conv_grad "input" %dy, %x, %w stride [2, 2] padding [1, 1] dilation [1, 1] output_padding [0, 0] groups 2 : tensor<2x6x5x5xbf16>, tensor<2x4x9x9xbf16>, tensor<6x2x3x3xbf16> -> tensor<2x4x9x9xbf16>
%dx = rdu.conv_grad "input" %dy, %x, %w stride [2, 2] padding [1, 1] dilation [1, 1] output_padding [0, 0] groups 2 : tensor<2x6x5x5xbf16>, tensor<2x4x9x9xbf16>, tensor<6x2x3x3xbf16> -> tensor<2x4x9x9xbf16>
// CHECK: %dw = rdu.conv_grad "weight" %dy, %x, %w {{.*}} groups 2 : {{.*}} -> tensor<6x2x3x3xbf16>
%dw = rdu.conv_grad "weight" %dy, %x, %w stride [2, 2] padding [1, 1] dilation [1, 1] output_padding [0, 0] groups 2 : tensor<2x6x5x5xbf16>, tensor<2x4x9x9xbf16>, tensor<6x2x3x3xbf16> -> tensor<6x2x3x3xbf16>
// CHECK: %db = rdu.conv_grad "bias" %dy, %x, %w {{.*}} -> tensor<6xbf16>
%db = rdu.conv_grad "bias" %dy, %x, %w stride [2, 2] padding [1, 1] dilation [1, 1] output_padding [0, 0] groups 2 : tensor<2x6x5x5xbf16>, tensor<2x4x9x9xbf16>, tensor<6x2x3x3xbf16> -> tensor<6xbf16>

%ty, %tx, %tw = "test.op"() : () -> (tensor<2x6x10x10xbf16>, tensor<2x4x5x5xbf16>, tensor<4x3x3x3xbf16>)
// CHECK: %tdx = rdu.conv_grad "input" %ty, %tx, %tw {{.*}} output_padding [1, 1] groups 2 transposed : {{.*}} -> tensor<2x4x5x5xbf16>
%tdx = rdu.conv_grad "input" %ty, %tx, %tw stride [2, 2] padding [1, 1] dilation [1, 1] output_padding [1, 1] groups 2 transposed : tensor<2x6x10x10xbf16>, tensor<2x4x5x5xbf16>, tensor<4x3x3x3xbf16> -> tensor<2x4x5x5xbf16>

// A tp partial sum of a mixed-precision step's input gradient, kept in f32 (rounded once after its all-reduce).
// CHECK: %wide = rdu.conv_grad "input" %dy, %x, %w {{.*}} -> tensor<2x4x9x9xf32>
%wide = rdu.conv_grad "input" %dy, %x, %w stride [2, 2] padding [1, 1] dilation [1, 1] output_padding [0, 0] groups 2 : tensor<2x6x5x5xbf16>, tensor<2x4x9x9xbf16>, tensor<6x2x3x3xbf16> -> tensor<2x4x9x9xf32>
