"""A map over a permuted view computes its result in that view's memory order
(issue 32, `rducc.runtime.ordered_maps`), and a convolution reads a
channels-last view as channels-last (`kernels._outermost_ones`).

- a ConvNeXt-like trunk (a depthwise 7x7 convolution, permutes around a
  channels-last layer norm and its two linear layers, a residual add of the
  permuted result) compiled at -O2 gives eager's numbers, and the residual
  add's value, which the next block's convolution reads, is a channels-last
  array: that convolution runs channels-last, as eager's does;
- the memory order rule on arrays: a permutation of a C-contiguous array
  gives its order, anything else none;
- a channels-last view with a batch dim of 1 whose stride is small (a layout
  view's) runs PyTorch's channels-last convolution: its bits are those of
  the same convolution on a channels-last tensor.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

import rducc
from rducc.runtime import kernels, ordered_maps


class _Block(nn.Module):
    """transformers' ConvNeXt layer, written out."""

    def __init__(self, channels: int) -> None:
        super().__init__()
        self.dw = nn.Conv2d(channels, channels, 7, padding=3, groups=channels)
        self.norm = nn.LayerNorm(channels)
        self.up, self.down = nn.Linear(channels, 4 * channels), nn.Linear(4 * channels, channels)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.dw(x).permute(0, 2, 3, 1)
        h = self.down(nn.functional.gelu(self.up(self.norm(h))))
        return x + h.permute(0, 3, 1, 2)


class _Trunk(nn.Module):
    """A block, then the next block's depthwise convolution."""

    def __init__(self, channels: int) -> None:
        super().__init__()
        self.block = _Block(channels)
        self.tail = nn.Conv2d(channels, channels, 7, padding=3, groups=channels)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.tail(self.block(x))


def test_a_residual_add_of_a_permuted_block_keeps_its_order_for_the_next_convolution(monkeypatch) -> None:
    torch.manual_seed(0)
    model = _Trunk(16).eval()
    inputs = (torch.randn(1, 16, 14, 14),)
    with torch.no_grad():
        program = rducc.compile(torch.export.export(model, inputs), opt_level=2)
        expected = model(*inputs).numpy()
    read: list[tuple[int, ...]] = []
    plain = kernels.conv

    def recording(x, weight, *args, **kwargs):  # type: ignore[no-untyped-def]
        read.append(ordered_maps.memory_order([x], x.shape) or tuple(range(x.ndim)))
        return plain(x, weight, *args, **kwargs)

    monkeypatch.setattr(kernels, "conv", recording)
    for _ in range(2):
        read.clear()
        np.testing.assert_allclose(np.asarray(program(*inputs)), expected, rtol=1e-5, atol=1e-5)
        assert read == [(0, 1, 2, 3), (0, 2, 3, 1)]  # the input as given, then the add's value channels-last


def test_the_memory_order_of_a_permuted_array_alone() -> None:
    nhwc = np.zeros((2, 5, 6, 3), np.float32)
    assert ordered_maps.memory_order([nhwc.transpose(0, 3, 1, 2)], (2, 3, 5, 6)) == (0, 2, 3, 1)
    assert ordered_maps.memory_order([np.zeros((2, 3, 5, 6), np.float32)], (2, 3, 5, 6)) is None
    assert ordered_maps.memory_order([nhwc.transpose(0, 3, 1, 2)[:, :, ::2]], (2, 3, 3, 6)) is None  # not dense
    assert ordered_maps.memory_order([nhwc.transpose(0, 3, 1, 2)], (1, 3, 5, 6)) is None  # another shape
    made = ordered_maps.in_order((2, 3, 5, 6), np.dtype(np.float32), (0, 2, 3, 1))
    assert made.shape == (2, 3, 5, 6) and ordered_maps.memory_order([made], made.shape) == (0, 2, 3, 1)


def test_a_channels_last_view_of_batch_one_runs_channels_last() -> None:
    generator = torch.Generator().manual_seed(0)
    image = torch.randn(14, 14, 16, generator=generator).numpy()
    weight = torch.randn(16, 1, 7, 7, generator=generator).numpy()
    view = image.transpose(2, 0, 1)[None]  # [1, 16, 14, 14], the batch dim's stride 0
    got = kernels.conv(view, weight, (1, 1), (3, 3), (1, 1), 16)
    channels_last = torch.from_numpy(view.copy()).contiguous(memory_format=torch.channels_last)
    expected = torch.nn.functional.conv2d(channels_last, torch.from_numpy(weight), None, 1, 3, 1, 16).numpy()
    assert ordered_maps.memory_order([got], got.shape) == (0, 2, 3, 1)
    np.testing.assert_array_equal(got, expected)
