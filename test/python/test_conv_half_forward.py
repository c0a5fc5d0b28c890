"""A 16-bit convolution's forward through rducc equals torch's kernel on the
16-bit operands bit for bit (`kernels.conv` -> `_half_conv`, issue 27).

torch's bf16 convolution does not compute "f32 sums, rounded once" in one
fixed order: on a CPU without oneDNN's bf16 kernels it runs im2col and a
16-bit GEMM that accumulates in f32 in its own order, elsewhere oneDNN's
kernels. rducc computed f32 sums (oneDNN's f32 order) rounded once, which put
1 to 3 outputs in 10^4 a bf16 rounding away from eager autocast's on larger
shapes (an AVX2 machine); torch's kernel on the 16-bit operands is eager's on
whatever CPU runs the test. With a bias, eager's kernel adds it to the sums
before their one rounding: `rdu.conv` carries it as an operand and the kernel
gets it (before, rducc added it to f32 sums in its own order, then rounded:
a bf16 output in 10^4 and 290 of 7,200 f16 ones off on this machine). One
program with every geometry, without and with a bias, compiled once a type.
"""

from __future__ import annotations

import pytest
import torch
from torch import nn

import rducc

GEOMETRIES = {
    # name: (input shape, weight shape, stride, padding, dilation, groups)
    "3x3": ((8, 16, 32, 32), (32, 16, 3, 3), 1, 1, 1, 1),
    "strided": ((4, 32, 28, 28), (64, 32, 3, 3), 2, 1, 1, 1),
    "dilated-grouped": ((4, 16, 30, 30), (32, 8, 3, 3), 1, 2, 2, 2),
    "7x7-stem": ((2, 3, 64, 64), (16, 3, 7, 7), 2, 3, 1, 1),
    "pointwise": ((2, 64, 16, 16), (64, 64, 1, 1), 1, 0, 1, 1),
    "depthwise": ((4, 32, 28, 28), (32, 1, 3, 3), 1, 1, 1, 32),
    "1d": ((4, 64, 256), (64, 64, 5), 1, 2, 1, 1),
}


class Convolutions(nn.Module):
    """Every geometry's convolution of its own input by a 16-bit weight: first
    without a bias, then with one."""

    def __init__(self, dtype: torch.dtype) -> None:
        super().__init__()
        generator = torch.Generator().manual_seed(0)
        self.weights = nn.ParameterList(
            nn.Parameter((torch.randn(w, generator=generator) / 8).to(dtype), requires_grad=False)
            for _, w, *_ in GEOMETRIES.values())
        self.biases = nn.ParameterList(
            nn.Parameter(torch.randn(w[0], generator=generator).to(dtype), requires_grad=False)
            for _, w, *_ in GEOMETRIES.values())

    def forward(self, *inputs: torch.Tensor) -> tuple[torch.Tensor, ...]:
        convolve = {3: nn.functional.conv1d, 4: nn.functional.conv2d}
        geometries = list(zip(inputs, self.weights, self.biases, GEOMETRIES.values(), strict=True))
        return tuple(convolve[x.dim()](x, w, b if biased else None, s, p, d, g)
                     for biased in (False, True) for x, w, b, (_, _, s, p, d, g) in geometries)


@pytest.fixture(scope="module", params=[torch.bfloat16, torch.float16], ids=["bf16", "f16"])
def compiled(request: pytest.FixtureRequest) -> tuple[tuple[torch.Tensor, ...], tuple, tuple]:
    generator = torch.Generator().manual_seed(1)
    inputs = tuple(torch.randn(x, generator=generator).to(request.param) for x, *_ in GEOMETRIES.values())
    model = Convolutions(request.param).eval()
    program = rducc.compile(model, inputs, opt_level=0)
    return inputs, program(*inputs), model(*inputs)


@pytest.mark.parametrize("biased", [False, True], ids=["", "bias"])
@pytest.mark.parametrize("index, name", list(enumerate(GEOMETRIES)))
def test_half_convolution_forward_is_torchs_kernel_bit_for_bit(compiled: tuple, index: int, name: str,
                                                               biased: bool) -> None:
    _, got, want = compiled
    at = index + len(GEOMETRIES) * biased
    result = torch.as_tensor(got[at])
    assert result.dtype == want[at].dtype
    off = int((result != want[at]).sum())
    assert off == 0, f"{name}: {off} of {want[at].numel()} outputs differ from torch's kernel"
