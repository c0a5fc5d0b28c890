"""The runtime's fast paths at full size keep every result right (issue 32).

- Poison only where a read before a write is possible: an HBM buffer whose
  first use is a whole-buffer DMA into it is allocated unpoisoned, and a run
  never sees the previous run's values in it; a buffer read before anything
  writes it still reads as the poison (NaN).
- Subnormals as zero inside products, exponential maps and fused softmaxes
  (`rducc.runtime.subnormals`): the thread's flags are restored after each
  kernel (eager keeps subnormals), a caller's own flushing is left as it
  was, and a masked softmax times V (Swin's shifted windows) matches eager.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from test_interpreter import parse

import rducc
from rducc.runtime import interpreter, kernels
from rducc.runtime.interpreter import PlacedProgram
from rducc.runtime.subnormals import flushing, subnormals_as_zero

_HBM = "!tier.buffer<hbm, 4xf32>"
_SRAM = "!tier.buffer<sram, 4xf32>"

READ_BEFORE_WRITE = f"""
builtin.module {{
  func.func @forward(%x: {_HBM} {{rdu.input = "x"}}) -> ({_HBM}, {_HBM})
      attributes {{tier.sram_capacity = 256 : i64}} {{
    %y = tier.alloc : {_HBM}
    %ys = tier.alloc offset 0 : {_SRAM}
    tier.dma %y -> %ys : {_HBM} -> {_SRAM}
    %z = tier.alloc : {_HBM}
    tier.dma %ys -> %z : {_SRAM} -> {_HBM}
    %xs = tier.alloc offset 64 : {_SRAM}
    tier.dma %x -> %xs : {_HBM} -> {_SRAM}
    tier.dma %xs -> %y : {_SRAM} -> {_HBM}
    func.return %z, %y : {_HBM}, {_HBM}
  }}
}}
"""
"""%y is read (into %ys, then %z) before %x is written into it: %z must be
the poison; %z and, at its end, %y are written whole before any read."""


def test_only_buffers_read_before_written_are_poisoned(monkeypatch: pytest.MonkeyPatch) -> None:
    poisoned: list[tuple[int, ...]] = []
    plain = kernels.poisoned

    def counting(shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
        poisoned.append(tuple(shape))
        return plain(shape, dtype)

    monkeypatch.setattr(kernels, "poisoned", counting)
    module = parse(READ_BEFORE_WRITE)
    allocs = [op for op in module.walk() if op.name == "tier.alloc" and "hbm" in str(op.result.type)]
    assert [interpreter._written_whole_first(op) for op in allocs] == [False, True]
    program = PlacedProgram(module)
    for x in (np.arange(4, dtype=np.float32), -np.arange(4, dtype=np.float32) - 1):
        z, y = program.run([x])
        assert np.isnan(z).all()  # the read of unwritten %y still shows
        np.testing.assert_array_equal(y, x)  # this run's values, not the last run's
    assert poisoned == [(4,)]  # %y's template, made once; %z is never poisoned


def test_a_dma_into_a_window_first_keeps_the_poison() -> None:
    text = READ_BEFORE_WRITE.replace(
        f"tier.dma %y -> %ys : {_HBM} -> {_SRAM}",
        f"%c0 = arith.constant 0 : index\n    tier.dma %ys -> %y[%c0] : {_SRAM} -> {_HBM}\n"
        f"    tier.dma %y -> %ys : {_HBM} -> {_SRAM}")
    module = parse(text, verify=False)  # %ys is unwritten too: only the analysis is asked
    allocs = [op for op in module.walk() if op.name == "tier.alloc" and "hbm" in str(op.result.type)]
    assert not interpreter._written_whole_first(allocs[0])


def test_products_and_exponentials_flush_subnormals_only_inside() -> None:
    tiny = np.full((64, 64), 1e-42, np.float32)  # subnormal
    ones = np.ones((64, 64), np.float32)
    assert not flushing()
    np.testing.assert_array_equal(kernels.gemm(tiny, ones), np.zeros((64, 64), np.float32))
    assert not flushing()  # eager, after the kernel, keeps subnormals
    assert torch.exp(torch.tensor(-100.0)).item() > 0
    scores = np.array([[0.0, -100.0]], np.float32)  # a masked score: eager's probability 3.7e-44
    probabilities = kernels.softmax(scores, 1, False, np.empty_like(scores))  # the fused softmax chain
    assert probabilities[0, 1] == 0 < torch.softmax(torch.from_numpy(scores), 1)[0, 1].item()
    assert not flushing()
    with subnormals_as_zero():
        assert flushing()
        kernels.gemm(tiny, ones)
        assert flushing()  # a caller's own setting survives a nested use
    assert not flushing()


class MaskedAttention(torch.nn.Module):
    """Swin's shifted-window attention core: scores + a -100 mask, softmax, @ V."""

    def forward(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        scores = q @ k.transpose(-1, -2) + mask
        return torch.softmax(scores, dim=-1) @ v


def test_masked_softmax_product_matches_eager() -> None:
    torch.manual_seed(0)
    q, k, v = (torch.randn(4, 49, 16) for _ in range(3))
    mask = torch.where(torch.rand(49, 49) < 0.5, torch.tensor(-100.0), torch.tensor(0.0))
    model = MaskedAttention().eval()
    with torch.no_grad():
        expected = model(q, k, v, mask)
        program = rducc.compile(torch.export.export(model, (q, k, v, mask)), opt_level=2)
        result = program(q, k, v, mask)
    torch.testing.assert_close(torch.as_tensor(np.asarray(result)), expected, rtol=1e-5, atol=1e-5)
    assert not flushing()
