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

import copy

import pytest
import torch
from torch import nn
from training_cases import assert_sgd_steps_match, momentum_autocast_steps

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


class WithLoss(nn.Module):
    """A classifier and its cross entropy: the step `compile_training` takes whole."""

    def __init__(self, model: nn.Module) -> None:
        super().__init__()
        self.model = model

    def forward(self, x: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        return nn.functional.cross_entropy(self.model(x), labels)


class Float32Upsampler(nn.Module):
    """Two float32 transposed convolutions: a strided biased one with output
    padding on the image (a column split at tp=2) and a 2x2 one of its split
    channels (a row split, its bias added after the all-reduce)."""

    def __init__(self) -> None:
        super().__init__()
        self.up = nn.ConvTranspose2d(3, 8, 3, stride=2, padding=1, output_padding=1)
        self.mix = nn.ConvTranspose2d(8, 4, 2, stride=2)
        self.head = nn.Linear(4, 5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.mix(torch.relu(self.up(x))).mean((2, 3)))


class GroupedUpsampler(nn.Module):
    """A pointwise stem (a column split at tp=2), a depthwise convolution and a
    transposed convolution of 4 groups reading its split channels, a head."""

    def __init__(self) -> None:
        super().__init__()
        self.stem = nn.Conv2d(3, 8, 1)
        self.depthwise = nn.Conv2d(8, 8, 3, padding=1, groups=8)
        self.up = nn.ConvTranspose2d(8, 8, 2, stride=2, groups=4)
        self.head = nn.Linear(8, 5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.relu(self.depthwise(torch.relu(self.stem(x))))
        return self.head(torch.relu(self.up(h)).mean((2, 3)))


def _transposed_weights(program) -> list[tuple[int, ...]]:
    """The weight shapes of a program's transposed convolutions (forward ones and gradients)."""
    return [tuple(op.weight.type.get_shape()) for op in program.module.walk()
            if isinstance(op, ConvOp | ConvGradOp) and op.transposed]


def _train_f32_at_tp2(model: nn.Module, opt_level: int):
    """Two SGD steps (momentum) of `model` through rducc at tp=2 on sn40l-8 and
    eagerly: equal losses and parameters (`assert_sgd_steps_match`); the step."""
    batches = [(torch.randn(2, 3, 4, 4, generator=torch.Generator().manual_seed(seed)), torch.tensor([1, 3]))
               for seed in (1, 2)]
    eager = copy.deepcopy(model)
    program = rducc.compile_training(model, batches[0], optimizer="sgd", target="sn40l-8", tp=2, lr=0.1,
                                     momentum=0.9, opt_level=opt_level)
    assert_sgd_steps_match(program, eager, batches, lr=0.1, momentum=0.9)
    return program


@pytest.mark.parametrize("opt_level", [0, 2], ids=["O0", "O2"])
def test_float32_transposed_convolutions_split_at_tp2(opt_level: int) -> None:
    """float32 transposed convolutions are `rdu.conv`'s transposed form, so tp
    splits them as the 16-bit ones (before: a direct convolution of the input
    spread with zeros by a weight computed from the parameter, run whole): at
    tp=2 the forward equals eager's and 2 SGD steps train as eager's, every
    transposed convolution split by channels, nothing all-gathered."""
    torch.manual_seed(0)
    model = Float32Upsampler()
    x = torch.randn(2, 3, 4, 4, generator=torch.Generator().manual_seed(3))
    forward = rducc.compile(model, (x,), target="sn40l-8", opt_level=opt_level,
                            passes=[after("rdu-canonicalize", RduPartition(tp=2))])
    assert _transposed_weights(forward) == [(3, 4, 3, 3), (4, 4, 2, 2)]  # up's outputs, mix's inputs halved
    with torch.no_grad():
        torch.testing.assert_close(torch.as_tensor(forward(x)), model(x), rtol=1e-5, atol=1e-6)
    program = _train_f32_at_tp2(WithLoss(model), opt_level)
    assert not any(isinstance(op, AllGatherOp) for op in program.module.walk())
    assert (3, 4, 3, 3) in _transposed_weights(program) and (4, 4, 2, 2) in _transposed_weights(program)


@pytest.mark.parametrize("opt_level", [0, 2], ids=["O0", "O2"])
def test_grouped_transposed_and_depthwise_convolutions_split_by_groups_at_tp2(opt_level: int) -> None:
    """A depthwise convolution and a 4-group transposed one reading the stem's
    split channels run whole groups a rank at tp=2 (`groups` halved, no
    collective): the float32 forward equals eager's, and 2 SGD steps under
    bf16 autocast, whose gradients are grouped `rdu.conv_grad`s, train as
    eager autocast's (before: every grouped `rdu.conv_grad` ran whole, its
    operands all-gathered; the float32 training step is
    `test_train_tp_forms.py::test_grouped_convolutions_split_by_whole_groups`)."""
    torch.manual_seed(0)
    model = GroupedUpsampler()
    x = torch.randn(2, 3, 4, 4, generator=torch.Generator().manual_seed(3))
    forward = rducc.compile(model, (x,), target="sn40l-8", opt_level=opt_level,
                            passes=[after("rdu-canonicalize", RduPartition(tp=2))])
    assert _transposed_weights(forward) == [(4, 2, 2, 2)]  # up's 2 groups a rank
    with torch.no_grad():
        torch.testing.assert_close(torch.as_tensor(forward(x)), model(x), rtol=1e-5, atol=1e-6)
    program, eager, data, expected = momentum_autocast_steps(model, (2, 3, 4, 4), 5, 2, opt_level=opt_level,
                                                             target="sn40l-8", tp=2)
    assert not any(isinstance(op, AllGatherOp) for op in program.module.walk())
    grads = {(op.of.data, op.groups.value.data) for op in program.module.walk() if isinstance(op, ConvGradOp)}
    assert {("input", 4), ("weight", 4), ("input", 2), ("weight", 2), ("bias", 2)} <= grads, grads
    losses = [program.step(x, y).item() for x, y in data]
    assert losses == pytest.approx(expected, rel=1e-5)
    got = program.parameters()
    for name, parameter in eager.named_parameters():
        torch.testing.assert_close(got[name], parameter.detach(), rtol=2 ** -7, atol=1e-5, msg=name)
