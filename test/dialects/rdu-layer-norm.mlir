// RUN: rducc-opt --check-roundtrip %s | filecheck %s
// RUN: rducc-opt %s --print-op-generic | rducc-opt | filecheck %s

// A layer norm's saved statistics and its gradients as ATen's fused kernels compute them
// (rducc.dialects.rdu.layer_norm): a bf16 input with float32 weight and bias, as under autocast.

%dy, %x, %w, %b = "test.op"() : () -> (tensor<2x3x8xbf16>, tensor<2x3x8xbf16>, tensor<8xf32>, tensor<8xf32>)
// CHECK: %mean = rdu.layer_norm "mean" %x, %w, %b normalized 1 eps 1.000000e-05 weight bias : tensor<2x3x8xbf16>, tensor<8xf32>, tensor<8xf32> -> tensor<2x3x1xf32>
%mean = rdu.layer_norm "mean" %x, %w, %b normalized 1 eps 1.0e-05 weight bias : tensor<2x3x8xbf16>, tensor<8xf32>, tensor<8xf32> -> tensor<2x3x1xf32>
// CHECK: %rstd = rdu.layer_norm "rstd" %x normalized 2 eps 1.000000e-12 : tensor<2x3x8xbf16> -> tensor<2x1x1xf32>
%rstd = rdu.layer_norm "rstd" %x normalized 2 eps 1.0e-12 : tensor<2x3x8xbf16> -> tensor<2x1x1xf32>
%rstd1 = rdu.layer_norm "rstd" %x, %w, %b normalized 1 eps 1.0e-05 weight bias : tensor<2x3x8xbf16>, tensor<8xf32>, tensor<8xf32> -> tensor<2x3x1xf32>
// CHECK: %dx = rdu.layer_norm_grad "input" %dy, %x, %mean, %rstd1, %w, %b normalized 1 weight bias : {{.*}} -> tensor<2x3x8xbf16>
%dx = rdu.layer_norm_grad "input" %dy, %x, %mean, %rstd1, %w, %b normalized 1 weight bias : tensor<2x3x8xbf16>, tensor<2x3x8xbf16>, tensor<2x3x1xf32>, tensor<2x3x1xf32>, tensor<8xf32>, tensor<8xf32> -> tensor<2x3x8xbf16>
// CHECK: %dw = rdu.layer_norm_grad "weight" %dy, %x, %mean, %rstd1, %w normalized 1 weight : {{.*}} -> tensor<8xf32>
%dw = rdu.layer_norm_grad "weight" %dy, %x, %mean, %rstd1, %w normalized 1 weight : tensor<2x3x8xbf16>, tensor<2x3x8xbf16>, tensor<2x3x1xf32>, tensor<2x3x1xf32>, tensor<8xf32> -> tensor<8xf32>
// CHECK: %db = rdu.layer_norm_grad "bias" %dy, %x, %mean, %rstd1, %b normalized 1 bias : {{.*}} -> tensor<8xf32>
%db = rdu.layer_norm_grad "bias" %dy, %x, %mean, %rstd1, %b normalized 1 bias : tensor<2x3x8xbf16>, tensor<2x3x8xbf16>, tensor<2x3x1xf32>, tensor<2x3x1xf32>, tensor<8xf32> -> tensor<8xf32>
// CHECK: %y = rdu.layer_norm "output" %x, %w, %b normalized 1 eps 1.000000e-05 weight bias : tensor<2x3x8xbf16>, tensor<8xf32>, tensor<8xf32> -> tensor<2x3x8xbf16>
%y = rdu.layer_norm "output" %x, %w, %b normalized 1 eps 1.0e-05 weight bias : tensor<2x3x8xbf16>, tensor<8xf32>, tensor<8xf32> -> tensor<2x3x8xbf16>
