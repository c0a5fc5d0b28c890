"""A 16-bit convolution's forward through rducc equals torch's kernel on the
16-bit operands bit for bit (`kernels.conv` -> `_half_conv`,
`kernels.conv_transpose`, issue 27).

torch's bf16 convolution does not compute "f32 sums, rounded once" in one
fixed order: on a CPU without oneDNN's bf16 kernels it runs im2col and a
16-bit GEMM that accumulates in f32 in its own order, elsewhere oneDNN's
kernels. rducc computed f32 sums (oneDNN's f32 order) rounded once, which put
1 to 3 outputs in 10^4 a bf16 rounding away from eager autocast's on larger
shapes (an AVX2 machine); torch's kernel on the 16-bit operands is eager's on
whatever CPU runs the test. With a bias, eager's kernel adds it to the sums
before their one rounding: `rdu.conv` carries it as an operand and the kernel
gets it (before, rducc added it to f32 sums in its own order, then rounded:
8 of the 14 biased cases here off). A transposed convolution is `rdu.conv`'s
transposed form, ATen's kernel too (before, a direct convolution of the
input spread with zeros). One program with every geometry, direct and
transposed, without and with a bias, compiled once a type.
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

TRANSPOSED = {
    # name: (input shape, weight shape, stride, padding, output padding, dilation, groups)
    "up-2x2": ((4, 32, 14, 14), (32, 16, 2, 2), 2, 0, 0, 1, 1),
    "up-3x3-output-padding": ((2, 32, 15, 15), (32, 16, 3, 3), 2, 1, 1, 1, 1),
    "dilated-grouped": ((2, 16, 12, 12), (16, 8, 3, 3), 1, 2, 0, 2, 2),
    "1d": ((4, 32, 64), (32, 16, 4), 2, 1, 0, 1, 1),
}

CASES = [f"{name}{suffix}" for table, kind in ((GEOMETRIES, ""), (TRANSPOSED, "transposed-"))
         for suffix in ("", "-bias") for name in (f"{kind}{n}" for n in table)]
"""Every output of `Convolutions.forward`, in its order."""


def _parameters(shapes: list[tuple[int, ...]], dtype: torch.dtype, generator: torch.Generator,
                scale: float = 1.0) -> nn.ParameterList:
    return nn.ParameterList(nn.Parameter((torch.randn(s, generator=generator) * scale).to(dtype), requires_grad=False)
                            for s in shapes)


class Convolutions(nn.Module):
    """Every geometry's convolution of its own input by a 16-bit weight, the
    direct ones, then the transposed ones, each first without a bias, then
    with one."""

    def __init__(self, dtype: torch.dtype) -> None:
        super().__init__()
        generator = torch.Generator().manual_seed(0)
        weights = [w for _, w, *_ in (*GEOMETRIES.values(), *TRANSPOSED.values())]
        self.weights = _parameters(weights, dtype, generator, 1 / 8)
        self.biases = _parameters([(w[0],) for _, w, *_ in GEOMETRIES.values()]
                                  + [(w[1] * t[-1],) for t in TRANSPOSED.values() for w in [t[1]]], dtype, generator)

    def forward(self, *inputs: torch.Tensor) -> tuple[torch.Tensor, ...]:
        direct = {3: nn.functional.conv1d, 4: nn.functional.conv2d}
        transposed = {3: nn.functional.conv_transpose1d, 4: nn.functional.conv_transpose2d}
        cases = list(zip(inputs, self.weights, self.biases, strict=True))
        first, rest = cases[:len(GEOMETRIES)], cases[len(GEOMETRIES):]
        return (*(direct[x.dim()](x, w, b if biased else None, s, p, d, g) for biased in (False, True)
                  for (x, w, b), (_, _, s, p, d, g) in zip(first, GEOMETRIES.values(), strict=True)),
                *(transposed[x.dim()](x, w, b if biased else None, s, p, e, g, d) for biased in (False, True)
                  for (x, w, b), (_, _, s, p, e, d, g) in zip(rest, TRANSPOSED.values(), strict=True)))


@pytest.fixture(scope="module", params=[torch.bfloat16, torch.float16], ids=["bf16", "f16"])
def compiled(request: pytest.FixtureRequest) -> tuple[tuple[torch.Tensor, ...], tuple, tuple]:
    generator = torch.Generator().manual_seed(1)
    shapes = [x for x, *_ in (*GEOMETRIES.values(), *TRANSPOSED.values())]
    inputs = tuple(torch.randn(x, generator=generator).to(request.param) for x in shapes)
    model = Convolutions(request.param).eval()
    program = rducc.compile(model, inputs, opt_level=0)
    return inputs, program(*inputs), model(*inputs)


@pytest.mark.parametrize("index, name", list(enumerate(CASES)))
def test_half_convolution_forward_is_torchs_kernel_bit_for_bit(compiled: tuple, index: int, name: str) -> None:
    _, got, want = compiled
    result = torch.as_tensor(got[index])
    assert result.dtype == want[index].dtype
    off = int((result != want[index]).sum())
    assert off == 0, f"{name}: {off} of {want[index].numel()} outputs differ from torch's kernel"
