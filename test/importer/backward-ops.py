# Import of backward ops that Core ATen keeps in joint graphs, as rducc's
# decompositions (rducc.frontend.aten_backward) write them in forward ops:
# convolution_backward is a transposed convolution (rdu.conv's transposed
# form) for the input, a convolution with
# batch and channels swapped (stride and dilation exchanged, groups kept) for
# the weight, and a sum for the bias; avg_pool2d_backward is one matmul per
# spatial dim by its window matrix (built from iota, no constant data).
# A weight gradient convolves only the input rows the forward's windows reach:
# where the stride leaves rows past the last window (3x3 stride 2 padding 1 on 8
# rows: the high padding row; 1x1 stride 2 on 8 rows: the last input row) the
# input is padded less on that side, or sliced, and the convolution gives the
# kernel's taps, none computed and cut off.
# The invalid case: attention's backward with dropout is one clear error.
# RUN: %python %s | filecheck %s
# RUN: %python %s dropout 2>&1 | filecheck %s --check-prefix=ERR

import sys

import torch

from rducc.driver import import_exported, module_text
from rducc.errors import RduccError

aten = torch.ops.aten


class Backward(torch.nn.Module):
    def forward(self, g, x, w, gp):
        gi, gw, gb = aten.convolution_backward(g, x, w, [6], [2, 2], [1, 1], [1, 1], False, [0, 0], 2,
                                               [True, True, True])
        gx = aten.avg_pool2d_backward(gp, x, [3, 3], [2, 2], [1, 1], True, False, None)
        return gi, gw, gb, gx


class StridedWeightGradients(torch.nn.Module):
    def forward(self, g, x, w, g1, w1):
        _, padded, _ = aten.convolution_backward(g, x, w, None, [2, 2], [1, 1], [1, 1], False, [0, 0], 1,
                                                 [False, True, False])
        _, cut, _ = aten.convolution_backward(g1, x, w1, None, [2, 2], [0, 0], [1, 1], False, [0, 0], 1,
                                              [False, True, False])
        return padded, cut


class AttentionWithDropout(torch.nn.Module):
    def forward(self, q):
        out, lse = aten._scaled_dot_product_flash_attention_for_cpu(q, q, q, 0.0, False)
        return aten._scaled_dot_product_flash_attention_for_cpu_backward(q, q, q, q, out, lse, 0.1, False)


if sys.argv[1:] == ["dropout"]:
    try:
        import_exported(torch.export.export(AttentionWithDropout(), (torch.randn(1, 2, 4, 8),)))
    except RduccError as error:
        print(f"error: {error}")
    sys.exit(0)

inputs = (torch.randn(2, 6, 5, 5), torch.randn(2, 4, 9, 9), torch.randn(6, 2, 3, 3), torch.randn(2, 4, 5, 5))
print(module_text(import_exported(torch.export.export(Backward(), inputs)), locations=False))
strided = (torch.randn(2, 6, 4, 4), torch.randn(2, 4, 8, 8), torch.randn(6, 4, 3, 3), torch.randn(2, 6, 4, 4),
           torch.randn(6, 4, 1, 1))
print(module_text(import_exported(torch.export.export(StridedWeightGradients(), strided)), locations=False))

# CHECK:      func.func @forward(%g: tensor<2x6x5x5xf32> {{.*}}, %x: tensor<2x4x9x9xf32> {{.*}}, %w: tensor<6x2x3x3xf32>
# The input gradient: the transposed convolution of g by the weight, one rdu.conv in its transposed form
# (ATen's kernel at run time; before, g spread with zeros and padded, by the flipped, swapped weight).
# CHECK-NOT:  rdu.concat
# CHECK:      %[[GRAD_INPUT:.*]] = rdu.conv %g, %w stride [2, 2] padding [1, 1] dilation [1, 1] output_padding [0, 0] groups 2 transposed : tensor<2x6x5x5xf32>, tensor<6x2x3x3xf32> -> tensor<2x4x9x9xf32>
# The weight gradient: x as [C/g, g*N, H, W] by g as [O, N, Ho, Wo]; stride 2 becomes dilation 2.
# CHECK:      rdu.transpose %{{.*}} perm [2, 1, 0, 3, 4] : tensor<2x2x2x9x9xf32> -> tensor<2x2x2x9x9xf32>
# CHECK:      rdu.conv %{{.*}}, %{{.*}} stride [1, 1] padding [1, 1] dilation [2, 2] groups 2 : tensor<2x4x9x9xf32>, tensor<6x2x5x5xf32> -> tensor<2x6x3x3xf32>
# CHECK:      %[[GRAD_WEIGHT:.*]] = rdu.transpose %{{.*}} perm [1, 0, 2, 3] : tensor<2x6x3x3xf32> -> tensor<6x2x3x3xf32>
# CHECK:      %[[GRAD_BIAS:.*]] = rdu.reduce sum %g dims [0, 2, 3] : tensor<2x6x5x5xf32> -> tensor<6xf32>
# The average pool's gradient: a [5, 9] window matrix from iota ramps, one product per spatial dim.
# CHECK:      rdu.iota start 0 step 1 : tensor<9xi64>
# CHECK:      rdu.matmul %{{.*}}, %{{.*}} : tensor<40x5xf32>, tensor<5x9xf32> -> tensor<40x9xf32>
# CHECK:      rdu.matmul %{{.*}}, %{{.*}} : tensor<72x5xf32>, tensor<5x9xf32> -> tensor<72x9xf32>
# CHECK:      func.return %[[GRAD_INPUT]], %[[GRAD_WEIGHT]], %[[GRAD_BIAS]], %{{.*}} : tensor<2x4x9x9xf32>, tensor<6x2x3x3xf32>, tensor<6xf32>, tensor<2x4x9x9xf32>

# ERR: error: {{.*}}attention with dropout_p=0.1 in training: its random mask is drawn inside torch's fused kernel and not saved for the backward

# The 3x3 stride-2 weight gradient on 8x8: the input padded 1 low, 0 high (9 rows the
# windows reach), a 3x3 result (a 4x4 one cropped before: 12,288 FLOPs for 6,912).
# CHECK:      func.func @forward(%g: tensor<2x6x4x4xf32>
# CHECK:      rdu.concat {{.*}} -> tensor<2x4x8x9xf32>
# CHECK:      rdu.concat {{.*}} -> tensor<2x4x9x9xf32>
# CHECK:      rdu.conv %{{.*}}, %{{.*}} stride [1, 1] padding [0, 0] dilation [2, 2] groups 1 : tensor<4x2x9x9xf32>, tensor<6x2x4x4xf32> -> tensor<4x6x3x3xf32>
# The 1x1 stride-2 one: the last row and column sliced off, a 1x1 result (2x2 before).
# CHECK:      rdu.slice %x {{.*}} -> tensor<2x4x7x8xf32>
# CHECK:      rdu.conv %{{.*}}, %{{.*}} stride [1, 1] padding [0, 0] dilation [2, 2] groups 1 : tensor<4x2x7x7xf32>, tensor<6x2x4x4xf32> -> tensor<4x6x1x1xf32>
# CHECK-NOT:  rdu.slice
# CHECK:      func.return
