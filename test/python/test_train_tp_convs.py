"""16-bit convolutions under tensor parallelism (issue 27, item 4): a biased
convolution and a transposed one, forward and through the backward.

- A convolution of a replicated input splits its output channels (a column
  split) and keeps its slice of the bias in `rdu.conv`: each rank runs torch's
  bf16 kernel with its bias, eager's bits (before: every bias was taken out
  under tp, f32 sums plus the bias rounded once, some outputs a bf16 ulp off).
- A transposed convolution splits as a direct one with its weight's channel
  roles swapped ([in, out, ...]): its output channels (weight dim 1) on a
  replicated input, its input channels (weight dim 0, a partial sum whose bias
  is added once after the f32 all-reduce) on split ones (before: replicated,
  its operands all-gathered).
- Their gradients (`rdu.conv_grad`) move the same channels, so a tp=2 training
  step gathers nothing (before: every convolution gradient ran whole).

A row split's partial sums are added in another order than eager's one
kernel, so outputs that pass through one are compared within a bf16 rounding;
the rest bit for bit.
"""

from __future__ import annotations

import pytest
import torch
from torch import nn
from training_cases import momentum_autocast_steps

import rducc
from rducc.api import after
from rducc.dialects.rdu.collectives import AllGatherOp
from rducc.dialects.rdu.conv_grad import ConvGradOp
from rducc.dialects.rdu.dataflow import ConvOp
from rducc.passes.rdu_partition import RduPartition


class Upsampler(nn.Module):
    """Three outputs of one bf16 image: a strided biased convolution and a
    biased 2x2 transposed convolution of it (both column splits at tp=2), and
    a biased convolution of the upsampled channels (a row split)."""

    def __init__(self) -> None:
        super().__init__()
        self.down = nn.Conv2d(32, 64, 3, stride=2, padding=1)
        self.up = nn.ConvTranspose2d(32, 16, 2, stride=2)
        self.mix = nn.Conv2d(16, 8, 3, padding=1)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        up = self.up(x)
        return self.down(x), up, self.mix(torch.relu(up))


@pytest.mark.parametrize("opt_level", [0, 2], ids=["O0", "O2"])
def test_bf16_biased_and_transposed_convolutions_forward_at_tp2(opt_level: int) -> None:
    """At tp=2 on sn40l-8 the strided and transposed convolutions are column
    splits that keep their biases: their outputs equal eager bf16's bit for
    bit (before: the strided one's bias taken out, 6 of 50,176 outputs a bf16
    ulp off on this CPU, and the transposed one run whole). The row-split
    convolution after the transposed one: within one bf16 rounding."""
    torch.manual_seed(0)
    model = Upsampler().bfloat16().eval()
    x = torch.randn(4, 32, 28, 28, generator=torch.Generator().manual_seed(1)).bfloat16()
    program = rducc.compile(model, (x,), target="sn40l-8", opt_level=opt_level,
                            passes=[after("rdu-canonicalize", RduPartition(tp=2))])
    assert not any(isinstance(op, AllGatherOp) for op in program.module.walk())
    transposed = [op for op in program.module.walk() if isinstance(op, ConvOp) and op.transposed is not None]
    assert [op.weight.type.get_shape()[1] for op in transposed] == [8]  # the up weight's 16 out channels split
    down, up, mixed = (torch.as_tensor(t) for t in program(x))
    with torch.no_grad():
        want = model(x)
    for name, got, expected in (("down", down, want[0]), ("up", up, want[1])):
        assert int((got != expected).sum()) == 0, f"{name}: {int((got != expected).sum())} outputs off eager's"
    torch.testing.assert_close(mixed, want[2], rtol=2 ** -7, atol=2 ** -7)


class Decoder(nn.Module):
    """A tiny UNet-like decoder stage: a biased stem, a biased 2x upsampling
    transposed convolution, a biased 3x3 mix, pooled into a classifier."""

    def __init__(self) -> None:
        super().__init__()
        self.stem = nn.Conv2d(8, 16, 3, padding=1)
        self.up = nn.ConvTranspose2d(16, 16, 2, stride=2)
        self.mix = nn.Conv2d(16, 8, 3, padding=1)
        self.head = nn.Linear(8, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        features = torch.relu(self.up(torch.relu(self.stem(x))))
        return self.head(self.mix(features).mean((2, 3)))


@pytest.mark.parametrize("opt_level", [0, 2], ids=["O0", "O2"])
def test_bf16_decoder_with_transposed_convolution_trains_at_tp2(opt_level: int) -> None:
    """3 SGD steps (momentum) under bf16 autocast with float32 master weights at
    tp=2 on sn40l-8: every convolution and its gradients split by channels and
    nothing is all-gathered (before: the transposed convolution and every
    `rdu.conv_grad` ran whole, their operands gathered); the losses and
    parameters are eager autocast's within a bf16 rounding of the row split's
    sums (the up convolution's, added in f32 once after the all-reduce)."""
    torch.manual_seed(0)
    program, eager, data, expected = momentum_autocast_steps(Decoder(), (4, 8, 8, 8), 4, 3, opt_level=opt_level,
                                                             target="sn40l-8", tp=2)
    assert not any(isinstance(op, AllGatherOp) for op in program.module.walk())
    transposed = [op for op in program.module.walk() if isinstance(op, ConvOp | ConvGradOp) and op.transposed]
    assert len(transposed) == 4  # the forward, the input, weight and bias gradients
    assert all(tuple(op.weight.type.get_shape())[:2] == (8, 16) for op in transposed)  # its input channels split
    losses = [program.step(x, y).item() for x, y in data]
    assert losses == pytest.approx(expected, rel=1e-5)
    got = program.parameters()
    for name, parameter in eager.named_parameters():
        torch.testing.assert_close(got[name], parameter.detach(), rtol=2 ** -7, atol=1e-5, msg=name)
