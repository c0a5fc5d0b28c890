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
  the same convolution on a channels-last tensor;
- a map whose operands and result are in different memory orders runs its
  arithmetic as torch's kernels at one thread too, NumPy's bits.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from torch import nn
from torch.utils._python_dispatch import TorchDispatchMode

import rducc
from rducc.runtime import kernels, map_body, ordered_maps


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


class _AddsOut(TorchDispatchMode):
    """Counts torch's `add.out` calls inside."""

    def __init__(self) -> None:
        super().__init__()
        self.adds = 0

    def __torch_dispatch__(self, func: Any, types: Any, args: tuple = (), kwargs: dict | None = None) -> Any:
        self.adds += str(func) == "aten.add.out"
        return func(*args, **(kwargs or {}))


def test_a_residual_add_of_a_permuted_block_keeps_its_order_for_the_next_convolution(monkeypatch) -> None:
    """The add's value is channels-last for the next convolution; its operands
    being the input as given (channels-first) and the permuted result
    (channels-last), it runs torch's kernel at one thread
    (`map_body.arithmetic_on_torch`: NumPy's ufunc iterates mixed orders 3-6x
    slower)."""
    torch.manual_seed(0)
    model = _Trunk(32).eval()
    inputs = (torch.randn(1, 32, 32, 32),)  # 32K elements: torch's grain
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    with torch.no_grad():
        program = rducc.compile(torch.export.export(model, inputs), opt_level=2)
        expected = model(*inputs).numpy()
    read: list[tuple[int, ...]] = []
    plain = kernels.conv

    def recording(x, weight, *args, **kwargs):  # type: ignore[no-untyped-def]
        read.append(ordered_maps.memory_order([x], x.shape) or tuple(range(x.ndim)))
        return plain(x, weight, *args, **kwargs)

    monkeypatch.setattr(kernels, "conv", recording)
    try:
        for _ in range(2):
            read.clear()
            with _AddsOut() as calls:
                np.testing.assert_allclose(np.asarray(program(*inputs)), expected, rtol=1e-5, atol=1e-5)
            assert read == [(0, 1, 2, 3), (0, 2, 3, 1)]  # the input as given, then the add's value channels-last
            assert calls.adds == 1
    finally:
        torch.set_num_threads(threads)


def test_the_memory_order_of_a_permuted_array_alone() -> None:
    nhwc = np.zeros((2, 5, 6, 3), np.float32)
    assert ordered_maps.memory_order([nhwc.transpose(0, 3, 1, 2)], (2, 3, 5, 6)) == (0, 2, 3, 1)
    assert ordered_maps.memory_order([np.zeros((2, 3, 5, 6), np.float32)], (2, 3, 5, 6)) is None
    assert ordered_maps.memory_order([nhwc.transpose(0, 3, 1, 2)[:, :, ::2]], (2, 3, 3, 6)) is None  # not dense
    assert ordered_maps.memory_order([nhwc.transpose(0, 3, 1, 2)], (1, 3, 5, 6)) is None  # another shape


def test_orders_differ_over_the_dims_of_more_than_one_element() -> None:
    nchw, nhwc = np.zeros((1, 3, 5, 6), np.float32), np.zeros((1, 5, 6, 3), np.float32).transpose(0, 3, 1, 2)
    bias = np.zeros((1, 3, 1, 1), np.float32)
    assert ordered_maps.orders_differ([nchw, nhwc], (1, 3, 5, 6))
    assert not ordered_maps.orders_differ([nhwc, nhwc.copy(order="K"), bias], (1, 3, 5, 6))  # a broadcast: no order
    assert ordered_maps.orders_differ([nchw, np.asfortranarray(nchw)], (1, 3, 5, 6))
    squeezed = np.zeros((3, 1, 5), np.float32)  # the size-1 dim's stride tells nothing
    assert not ordered_maps.orders_differ([squeezed, squeezed.transpose(1, 0, 2).reshape(1, 3, 5).transpose(1, 0, 2)],
                                          (3, 1, 5))
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


def test_a_maps_arithmetic_on_torch_gives_numpys_bits_on_mixed_orders() -> None:
    """`map_body.arithmetic_on_torch` at one thread: torch's add of a
    channels-first and a channels-last array into a channels-last one, NaN
    and signed zeros included, is NumPy's bit for bit."""
    generator = np.random.default_rng(7)
    nchw = generator.standard_normal((1, 32, 32, 32), np.float32)
    nhwc = generator.standard_normal((1, 32, 32, 32), np.float32).transpose(0, 3, 1, 2)
    nchw[0, 0, 0, :3], nhwc[0, 0, 0, :3] = (np.nan, -0.0, 0.0), (1.0, -0.0, -0.0)
    want, got = (np.empty((1, 32, 32, 32), np.float32).transpose(0, 3, 1, 2) for _ in range(2))
    np.add(nchw, nhwc, out=want)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        with map_body.arithmetic_on_torch(), _AddsOut() as calls:
            map_body._TORCH_ARITHMETIC.add(nchw, nhwc, out=got)
    finally:
        torch.set_num_threads(threads)
    assert calls.adds == 1 and map_body._TORCH_ARITHMETIC.add is np.add
    np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32))
