"""Attention whose intermediates nothing else reads runs as one step of ATen's
fused kernel at its second product (issue 32, `rducc.runtime.fused_attention`).

- scaled dot product attention (a boolean mask with a fully masked row, a
  float mask, causal, none) and attention written out by hand (a scale after
  the product, a bias, Swin's window mask added through a reshape to more
  dims, a fully -inf row through a plain softmax: NaN as eager) compiled at
  -O2 run the fused step and give eager's numbers, and a second call with
  other inputs gives that call's numbers (no stale operand copied aside);
- operands whose bytes the allocator reuses before the second product are
  copied aside at their reader (transformers' ViT; taken as kept, the result
  is wrong);
- the scores read by another output are not fused (forced, that output's
  bytes are never written);
- a scale applied after the bias add (it scales the bias too) is not fused.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
import torch

import rducc
from rducc.runtime import fused_attention, interpreter

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
from zoo.models import ZOO  # noqa: E402

F = torch.nn.functional


class _Sdpa(torch.nn.Module):
    """SDPA with a boolean mask (row 0 masked throughout), a float mask, causal and plain."""

    def forward(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
                bias: torch.Tensor) -> tuple[torch.Tensor, ...]:
        mask = torch.ones(q.shape[-2], k.shape[-2], dtype=torch.bool).tril()
        mask[0] = False
        return (F.scaled_dot_product_attention(q, k, v, attn_mask=mask),
                F.scaled_dot_product_attention(q * 2, k, v, attn_mask=bias),
                F.scaled_dot_product_attention(q, k + 1, v, is_causal=True),
                F.scaled_dot_product_attention(q - 1, k, v * 3, scale=0.3))


class _ByHand(torch.nn.Module):
    """Attention written out: heads from one projection, scores divided by a
    constant, a bias over the heads, and a window mask added in a view with the
    windows split off (as Swin's shifted windows), a plain softmax."""

    def __init__(self, windows: int) -> None:
        super().__init__()
        self.windows = windows

    def forward(self, x: torch.Tensor, bias: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        batch, tokens, width = x.shape
        heads = bias.shape[0]
        q, k, v = ((x * s).view(batch, tokens, heads, -1).transpose(1, 2) for s in (1.0, 0.5, 2.0))
        scores = q @ k.transpose(-1, -2) / 3.0 + bias
        scores = scores.view(batch // self.windows, self.windows, heads, tokens, tokens) + mask[None, :, None]
        probabilities = scores.view(batch, heads, tokens, tokens).softmax(-1)
        return (probabilities @ v).transpose(1, 2).reshape(batch, tokens, width)


class _Shared(torch.nn.Module):
    """Attention whose scores are also an output: the chain is not read by itself alone."""

    def forward(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        scores = q @ k.transpose(-1, -2) * 0.25
        return scores.softmax(-1) @ v, scores + 1


class _ScaledBias(torch.nn.Module):
    """The scale after the bias add: it scales the bias too."""

    def forward(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
        return ((q @ k.transpose(-1, -2) + bias) * 0.25).softmax(-1) @ v


def _counted(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The chains each compute fuses."""
    found: list[int] = []

    class Counting(fused_attention.AttentionChains):
        def __init__(self, *args: object) -> None:
            super().__init__(*args)  # type: ignore[arg-type]
            found.append(len(self.at_product))

    monkeypatch.setattr(interpreter, "AttentionChains", Counting)
    return found


def _outputs(out: object) -> list[np.ndarray]:
    return [np.asarray(o) for o in (out if isinstance(out, (tuple, list)) else (out,))]


def _random(shapes: list[tuple[int, ...]], seed: int) -> tuple[torch.Tensor, ...]:
    return tuple(torch.randn(*s, generator=torch.Generator().manual_seed(seed + i)) for i, s in enumerate(shapes))


def _check(model: torch.nn.Module, calls: list[tuple[torch.Tensor, ...]], exported: object = None) -> None:
    """The program compiled for the first inputs (or from `exported`) gives eager's numbers on each."""
    program = rducc.compile(exported or model, *(() if exported else (calls[0],)), opt_level=2)
    for inputs in calls:
        with torch.no_grad():
            expected = _outputs(model(*inputs))
        for out, ref in zip(_outputs(program(*inputs)), expected, strict=True):
            np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-5)


def _window_mask(windows: int, tokens: int) -> torch.Tensor:
    """Swin's shifted-window mask (0 or -100), window 0 with a token masked throughout (-inf)."""
    mask = torch.zeros(windows, tokens, tokens)
    mask[1:, : tokens // 2, tokens // 2:] = -100.0
    mask[0, 1] = float("-inf")
    return mask


@pytest.mark.parametrize("model, shapes, chains", [
    (_Sdpa(), [(2, 3, 6, 8), (2, 3, 5, 8), (2, 3, 5, 4), (2, 3, 6, 5)], 4),
    (_ByHand(2), [(4, 6, 12), (3, 6, 6)], 1),
])
def test_attention_runs_fused_as_eager(monkeypatch, model, shapes, chains) -> None:
    found = _counted(monkeypatch)
    extra = (_window_mask(2, 6),) if isinstance(model, _ByHand) else ()
    _check(model, [(*_random(shapes, seed), *extra) for seed in (0, 10)])
    assert sum(found) == chains


def test_scores_read_elsewhere_are_not_fused(monkeypatch) -> None:
    """The scores are an output too: refused; forced, their bytes are never written."""
    model, calls = _Shared(), [_random([(2, 5, 4)] * 3, seed) for seed in (0, 10)]
    found = _counted(monkeypatch)
    _check(model, calls)
    assert sum(found) == 0
    monkeypatch.setattr(fused_attention, "_read_by_chain_alone", lambda *args: True)
    forced = _counted(monkeypatch)
    with pytest.raises(AssertionError):
        _check(model, calls)
    assert sum(forced) == 1


def test_a_scale_after_the_bias_is_not_fused(monkeypatch) -> None:
    found = _counted(monkeypatch)
    _check(_ScaledBias(), [_random([(2, 5, 4), (2, 5, 4), (2, 5, 4), (5, 5)], seed) for seed in (0, 10)])
    assert sum(found) == 0


def test_operands_the_allocator_reuses_are_copied_aside(monkeypatch) -> None:
    """transformers' ViT (the zoo's small config): the allocator gives the keys'
    bytes to a later value once the first product has read them, so the fused
    step reads a copy made at that product's step; taken as kept, it reads
    the later value and is not eager's."""
    model, inputs = ZOO["vit"].build(1)
    calls = [inputs, tuple(torch.randn_like(x) for x in inputs)]
    with torch.no_grad():
        exported = torch.export.export(model, inputs)
    saved: list[int] = []

    class Saving(fused_attention.AttentionChains):
        def __init__(self, *args: object) -> None:
            super().__init__(*args)  # type: ignore[arg-type]
            saved.extend(len(chain.saved) for chain in self.at_product.values())

    monkeypatch.setattr(interpreter, "AttentionChains", Saving)
    _check(model, calls, exported)
    assert saved and all(saved)
    monkeypatch.setattr(fused_attention, "_kept", lambda *args: True)
    with pytest.raises(AssertionError):
        _check(model, calls, exported)
