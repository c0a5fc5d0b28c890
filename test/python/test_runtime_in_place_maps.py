"""A linear layer's activation computed in place over the product's bytes
(issue 32, `rducc.runtime.in_place_maps`).

- a ConvNeXt-like block (GELU between two linear layers) compiled at -O2:
  the GELU runs over the bytes its linear layer's GEMM wrote (torch's kernel
  with `out=` its input), and the results are the bits of the same program
  prepared without (`into_own_bytes`), within eager's tolerance; a second
  linear layer whose value another op reads too keeps its GELU as before;
- a map's `.in_place` gives the bits its own-bytes form gives, where the
  input is not finite too (the op-by-op values, read before the kernel
  overwrites them).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import torch
from torch import nn
from torch.utils._python_dispatch import TorchDispatchMode

import rducc
from rducc.dialects.rdu.dataflow import MapOp
from rducc.runtime import in_place_maps
from rducc.runtime.registry import prepare


class _Block(nn.Module):
    """transformers' ConvNeXt layer's pointwise half, written out; beside it
    a second one whose first linear layer's value is read twice."""

    def __init__(self, channels: int) -> None:
        super().__init__()
        self.up, self.down = nn.Linear(channels, 4 * channels), nn.Linear(4 * channels, channels)
        self.up2, self.down2 = nn.Linear(channels, 4 * channels), nn.Linear(4 * channels, channels)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        read_twice = self.up2(x)
        second = self.down2(nn.functional.gelu(read_twice)) * read_twice.mean(-1, keepdim=True)
        return x + self.down(nn.functional.gelu(self.up(x))) + second


class _Gelus(TorchDispatchMode):
    """Records whether each torch GELU inside wrote over its input."""

    def __init__(self) -> None:
        super().__init__()
        self.over_input: list[bool] = []

    def __torch_dispatch__(self, func: Any, types: Any, args: tuple = (), kwargs: dict | None = None) -> Any:
        if "gelu" in str(func):
            out = (kwargs or {}).get("out")
            self.over_input.append(out is not None and out.data_ptr() == args[0].data_ptr())
        return func(*args, **(kwargs or {}))


@pytest.fixture(scope="module")
def compiled() -> tuple[nn.Module, tuple[torch.Tensor], rducc.Program, rducc.Program]:
    """The block, its input (32K elements through each GELU), and its program
    prepared (compiled and first run) into own bytes, then as is."""
    torch.manual_seed(0)
    model = _Block(32).eval()
    inputs = (torch.randn(1, 256, 32),)
    with torch.no_grad():
        exported = torch.export.export(model, inputs)
        with in_place_maps.into_own_bytes():
            own = rducc.compile(exported, opt_level=2)
            own(*inputs)
        over = rducc.compile(exported, opt_level=2)
    return model, inputs, own, over


def test_the_gelu_runs_over_its_linear_layers_bytes_with_the_same_bits(compiled) -> None:
    model, inputs, own, over = compiled
    with torch.no_grad():
        expected = model(*inputs).numpy()
        with _Gelus() as own_gelus:
            before = np.asarray(own(*inputs)).copy()
        for _ in range(2):
            with _Gelus() as gelus:
                got = np.asarray(over(*inputs)).copy()
            np.testing.assert_array_equal(got, before)
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)
    assert sorted(gelus.over_input) == [False, True]  # the value read twice keeps its GELU apart
    assert own_gelus.over_input == [False, False]


def test_a_maps_new_array_form_gives_its_arena_forms_bits_off_finite_too(compiled) -> None:
    program = compiled[3]
    gelu = next(op for op in program.module.walk()
                if isinstance(op, MapOp) and getattr(prepare(op, "test"), "in_place", None) is not None)
    kernel = prepare(gelu, "test")
    shape = tuple(gelu.results[0].type.get_shape())
    x = np.random.default_rng(0).standard_normal(shape).astype(np.float32) * 8
    x.reshape(-1)[[3, 40, 41, 1000]] = [np.inf, -np.inf, np.nan, np.inf]
    out = np.empty_like(x)
    kernel.into(None, out, x)
    kernel.in_place(x)
    np.testing.assert_array_equal(x, out)
    assert np.isinf(x.reshape(-1)[3])  # the formula's value at +inf (AVX-512's kernel gives nan)
