"""A 16-bit convolution's gradients through rducc equal torch's
`convolution_backward` bit for bit (`rdu.conv_grad`, issue 27).

torch's bf16 convolution backward is not "f32, rounded once": on a CPU
without oneDNN's bf16 kernels it rounds the input gradient's overlapping taps
and the weight gradient's per-image sums to bf16 one by one, and elsewhere
oneDNN sums in its own order. rducc runs torch's kernel on the 16-bit
operands, so the bits are eager's on whatever CPU runs the test. Decomposed
into f32 convolutions rounded once, about a third of the gradient elements
were a bf16 rounding away on an AVX2 machine.
"""

from __future__ import annotations

import pytest
import torch

import rducc

aten = torch.ops.aten

GEOMETRIES = [
    # batch, in, out, spatial sizes, kernel, stride, padding, dilation, groups, transposed, output padding
    (2, 4, 6, (8, 8), 3, 1, 1, 1, 1, False, 0),
    (3, 4, 6, (9, 9), 3, 2, 1, 1, 2, False, 0),  # strided, grouped
    (2, 3, 4, (7, 7), 2, 1, 0, 2, 1, False, 0),  # dilated
    (2, 4, 4, (8, 8), 3, 1, 1, 1, 4, False, 0),  # depthwise
    (2, 4, 6, (10,), 3, 3, 2, 2, 1, False, 0),  # 1d
    (2, 4, 6, (5, 5), 3, 2, 1, 1, 2, True, 1),  # transposed, output padding
]


class Backward(torch.nn.Module):
    def __init__(self, geometry, mask):
        super().__init__()
        self.geometry, self.mask = geometry, mask
        self.read = [index for index, wanted in enumerate(mask) if wanted]

    def forward(self, g, x, w):
        stride, padding, dilation, transposed, extra, groups, bias = self.geometry
        results = aten.convolution_backward(g, x, w, bias, stride, padding, dilation, transposed, extra, groups,
                                            self.mask)
        return tuple(results[index] for index in self.read)


def _case(case, dtype):
    batch, cin, cout, sizes, kernel, stride, padding, dilation, groups, transposed, extra = case
    spatial = len(sizes)
    generator = torch.Generator().manual_seed(len(str(case)))
    x = torch.randn(batch, cin, *sizes, generator=generator).to(dtype)
    shape = (cin, cout // groups) if transposed else (cout, cin // groups)
    w = torch.randn(*shape, *[kernel] * spatial, generator=generator).to(dtype)
    window = [[v] * spatial for v in (stride, padding, dilation)]
    y = aten.convolution(x, w, None, *window, transposed, [extra] * spatial, groups)
    g = torch.randn(y.shape, generator=generator).to(dtype)
    return (*window, transposed, [extra] * spatial, groups, [cout]), (g, x, w)


CASES = [(case, torch.bfloat16) for case in GEOMETRIES] + [(GEOMETRIES[1], torch.float16)]


@pytest.mark.parametrize(("case", "dtype"), CASES, ids=lambda c: str(c).removeprefix("torch.") if
                         isinstance(c, torch.dtype) else f"{len(c[3])}d-s{c[5]}-d{c[7]}-g{c[8]}{'-T' if c[9] else ''}")
def test_half_convolution_gradients_are_eager_bits(case, dtype):
    geometry, inputs = _case(case, dtype)
    module = Backward(geometry, [True, True, True])
    expected = module(*inputs)
    actual = rducc.compile(module, inputs)(*inputs)
    for want, got in zip(expected, actual):
        assert got.dtype == want.dtype and got.shape == want.shape
        assert torch.equal(got.view(torch.int16), want.contiguous().view(torch.int16))


def test_output_mask_gives_only_the_weight_gradient_at_O2():
    geometry, inputs = _case(GEOMETRIES[1], torch.bfloat16)
    module = Backward(geometry, [False, True, False])
    (want,) = module(*inputs)
    got = rducc.compile(module, inputs, opt_level=2)(*inputs)
    got = got[0] if isinstance(got, tuple | list) else got
    assert torch.equal(got.view(torch.int16), want.contiguous().view(torch.int16))
