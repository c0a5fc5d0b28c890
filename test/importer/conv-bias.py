# Import of convolutions with a bias, direct and transposed. A 16-bit one
# (bf16, f16) is one rdu.conv whose bias is an operand (ATen's kernel adds it
# to the sums before the one rounding, so no map follows), a transposed one
# rdu.conv's transposed form. A float32 one keeps its bias add as an rdu.map
# after the convolution (its bits unchanged), and a transposed one is
# rdu.conv's transposed form too (ATen's kernel, eager's bits; before, a
# direct convolution of the input spread with zeros, which tp did not split). The verifier's
# invalid biases and transposed forms are in test/dialects/rdu-invalid.mlir.
# RUN: %python %s | filecheck %s

import torch
from torch import nn

from rducc.driver import import_exported, module_text


class Convs(nn.Module):
    def __init__(self, dtype: torch.dtype) -> None:
        super().__init__()
        self.conv = nn.Conv2d(4, 6, 3, stride=2, padding=1, groups=2).to(dtype)
        self.up = nn.ConvTranspose2d(6, 4, 2, stride=2).to(dtype)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.up(self.conv(x))


def imported(dtype: torch.dtype) -> str:
    model, x = Convs(dtype).eval(), torch.randn(2, 4, 8, 8).to(dtype)
    with torch.no_grad():
        return module_text(import_exported(torch.export.export(model, (x,))), locations=False)


print(imported(torch.bfloat16))
print(imported(torch.float32))

# CHECK-LABEL: func.func @forward(%x: tensor<2x4x8x8xbf16>
# CHECK:       %convolution = rdu.conv %x, %p_conv_weight bias %p_conv_bias : tensor<6xbf16> stride [2, 2] padding [1, 1] dilation [1, 1] groups 2 : tensor<2x4x8x8xbf16>, tensor<6x2x3x3xbf16> -> tensor<2x6x4x4xbf16>
# CHECK-NOT:   rdu.map %convolution,
# CHECK-NEXT:  %convolution_1 = rdu.conv %convolution, %p_up_weight bias %p_up_bias : tensor<4xbf16> stride [2, 2] padding [0, 0] dilation [1, 1] output_padding [0, 0] groups 1 transposed : tensor<2x6x4x4xbf16>, tensor<6x4x2x2xbf16> -> tensor<2x4x8x8xbf16>
# CHECK-NEXT:  func.return %convolution_1

# CHECK-LABEL: func.func @forward(%x: tensor<2x4x8x8xf32>
# CHECK:       %convolution = rdu.conv %x, %p_conv_weight stride [2, 2] padding [1, 1] dilation [1, 1] groups 2 : tensor<2x4x8x8xf32>, tensor<6x2x3x3xf32> -> tensor<2x6x4x4xf32>
# CHECK-NEXT:  %[[BIAS:.*]] = rdu.reshape %p_conv_bias : tensor<6xf32> -> tensor<6x1x1xf32>
# CHECK-NEXT:  rdu.map %convolution, %[[BIAS]] : (tensor<2x6x4x4xf32>, tensor<6x1x1xf32>) -> tensor<2x6x4x4xf32>
# CHECK-NEXT:  ^bb0
# CHECK-NEXT:    arith.addf
# CHECK-NEXT:    rdu.yield
# CHECK-NOT:   rdu.concat
# CHECK:       rdu.conv %{{.*}}, %p_up_weight stride [2, 2] padding [0, 0] dilation [1, 1] output_padding [0, 0] groups 1 transposed : tensor<2x6x4x4xf32>, tensor<6x4x2x2xf32> -> tensor<2x4x8x8xf32>
# CHECK-NEXT:  %[[UP_BIAS:.*]] = rdu.reshape %p_up_bias : tensor<4xf32> -> tensor<4x1x1xf32>
# CHECK-NEXT:  rdu.map %{{.*}}, %[[UP_BIAS]]

