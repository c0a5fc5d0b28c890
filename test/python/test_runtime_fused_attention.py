"""Attention whose intermediates nothing else reads runs as one step of ATen's
fused kernel at its second product (issue 32, `rducc.runtime.fused_attention`).

- scaled dot product attention (a boolean mask with a fully masked row, a
  float mask, none with a scale given) and attention written out by hand (a scale after
  the product, a bias, Swin's window mask added through a reshape to more
  dims, a fully -inf row through a plain softmax: NaN as eager; Swin's
  relative-position bias and window mask summed in one map before the
  scores are added: the kernel's mask) compiled at
  -O2 run the fused step and give eager's numbers, and a second call with
  other inputs gives that call's numbers (no stale operand copied aside);
- operands whose bytes the allocator reuses before the second product are
  copied aside at their reader (transformers' ViT; taken as kept, the result
  is wrong);
- the scores read by another output are not fused (forced, that output's
  bytes are never written);
- a scale applied after the bias add (it scales the bias too) is not fused
  (placed IR with the scale and the add as maps of their own; before the add
  it is fused, as SDPA's scale);
- a mask of zeros (transformers' all-visible mask under export, an input
  mask in the call it is zero) is not passed to the kernel; the same input
  mask is when it masks;
- a fused attention read through its slot alone (the heads merged after it)
  is ATen's own result array, not copied into the arena; one yielded into an
  output buffer is computed into it.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
import torch

import rducc
from rducc.runtime import fused_attention, interpreter, layout_views

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
from test_interpreter import parse  # noqa: E402
from zoo.models import ZOO  # noqa: E402

from rducc.runtime.interpreter import PlacedProgram  # noqa: E402

F = torch.nn.functional


class _Sdpa(torch.nn.Module):
    """SDPA with a boolean mask (row 0 masked throughout), a float mask, none (a scale of its own)."""

    def forward(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
                bias: torch.Tensor) -> tuple[torch.Tensor, ...]:
        mask = torch.ones(q.shape[-2], k.shape[-2], dtype=torch.bool).tril()
        mask[0] = False
        return (F.scaled_dot_product_attention(q, k, v, attn_mask=mask),
                F.scaled_dot_product_attention(q * 2, k, v, attn_mask=bias),
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


class _Combined(torch.nn.Module):
    """transformers' Swin: a relative-position bias over the heads and the
    shifted windows' mask over the windows summed first, one SDPA mask (a map
    computing `s + (bias + mask)` once fused); `product`: the two multiplied."""

    def __init__(self, windows: int, product: bool = False) -> None:
        super().__init__()
        self.windows, self.product = windows, product

    def forward(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, bias: torch.Tensor,
                mask: torch.Tensor) -> torch.Tensor:
        batch = q.shape[0] // self.windows
        windows = mask.unsqueeze(1).unsqueeze(0).expand(batch, -1, -1, -1, -1).reshape(-1, 1, *mask.shape[-2:])
        return F.scaled_dot_product_attention(q, k, v, attn_mask=bias * windows if self.product else bias + windows)


class _Shared(torch.nn.Module):
    """Attention whose scores are also an output: the chain is not read by itself alone."""

    def forward(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        scores = q @ k.transpose(-1, -2) * 0.25
        return scores.softmax(-1) @ v, scores + 1


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
    (_Sdpa(), [(2, 3, 6, 8), (2, 3, 5, 8), (2, 3, 5, 4), (2, 3, 6, 5)], 3),
    (_ByHand(2), [(4, 6, 12), (3, 6, 6)], 1),
])
def test_attention_runs_fused_as_eager(monkeypatch, model, shapes, chains) -> None:
    found = _counted(monkeypatch)
    extra = (_window_mask(2, 6),) if isinstance(model, _ByHand) else ()
    _check(model, [(*_random(shapes, seed), *extra) for seed in (0, 10)])
    assert sum(found) == chains


def test_values_with_transposed_heads_are_read_without_a_copy(monkeypatch) -> None:
    """`_ByHand`'s values `[batch, heads, tokens, E]` are a transposed view (as
    Swin's and ViT's heads): the batched product reads them reshaped to
    `[batch * heads, tokens, E]`, which copies them every call. The fused
    kernel reads them in the scores' batch dims, strides and all, as eager's
    SDPA does: that reshape no longer runs (before, it copied)."""
    copied: list[tuple[int, ...]] = []
    plain = layout_views._reshape  # noqa: SLF001 - counting the copies a reshape view makes

    def counted(x: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
        out = plain(x, shape)
        if not np.shares_memory(out, x):
            copied.append(x.shape)
        return out

    monkeypatch.setattr(layout_views, "_reshape", counted)
    found = _counted(monkeypatch)
    inputs = (*_random([(4, 6, 12), (3, 6, 6)], 0), _window_mask(2, 6))
    _check(_ByHand(2), [inputs])
    assert sum(found) == 1 and (4, 3, 6, 4) not in copied, copied


@pytest.mark.parametrize("product, chains", [(False, 1), (True, 0)], ids=["sum", "product"])
def test_two_masks_summed_in_one_map_run_fused(monkeypatch, product, chains) -> None:
    """A bias and a window mask summed before the scores are added (one map of
    three inputs, `s + (bias + mask)`) are the kernel's mask, summed as that map
    sums them; multiplied they are no mask sum: not fused, eager's numbers either way."""
    found = _counted(monkeypatch)
    shapes = [(4, 2, 16, 8)] * 3 + [(1, 2, 16, 16)]
    _check(_Combined(2, product), [(*_random(shapes, seed), _window_mask(2, 16)) for seed in (0, 10)])
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


def _scaled_bias_program(scale_first: bool) -> str:
    """softmax(q @ k + b) * 0.5 ... as placed IR: the scores' scale (a map of
    its own) before the bias add, or after it (where it scales the bias too)."""
    s4, s8 = "tensor<4x4xf32>", "tensor<4x8xf32>"
    def buf(shape: str) -> str:
        return f"!tier.buffer<sram, {shape}xf32>"
    scale = f"""%{{0}} = rdu.map %{{1}} {{{{tier.offset = {{2}} : i64}}}} : ({s4}) -> {s4} {{{{
      ^bb0(%a0: f32):
        %c = arith.constant 0.5 : f32
        %r = arith.mulf %a0, %c : f32
        rdu.yield %r : f32
      }}}}"""
    add = f"""%{{0}} = rdu.map %{{1}}, %b {{{{tier.offset = {{2}} : i64}}}} : ({s4}, {s4}) -> {s4} {{{{
      ^bb0(%a0: f32, %a1: f32):
        %r = arith.addf %a0, %a1 : f32
        rdu.yield %r : f32
      }}}}"""
    first, second = (scale, add) if scale_first else (add, scale)
    inputs = [("q", "4x8", 0), ("k", "8x4", 128), ("v", "4x8", 256), ("b", "4x4", 384)]
    args = ", ".join(f'%{n}h: !tier.buffer<hbm, {t}xf32> {{rdu.input = "{n}"}}' for n, t, _ in inputs)
    moves = "\n".join(f"""    %{n}s = tier.alloc offset {o} : {buf(t)}
    tier.dma %{n}h -> %{n}s : !tier.buffer<hbm, {t}xf32> -> {buf(t)}""" for n, t, o in inputs)
    ins = ", ".join(f"%{n}s" for n, _, _ in inputs)
    return f"""
builtin.module {{
  func.func @forward({args}) -> !tier.buffer<hbm, 4x8xf32> attributes {{tier.sram_capacity = 4096 : i64}} {{
{moves}
    %os = tier.alloc offset 512 : {buf("4x8")}
    tier.compute "k0" ins({ins} : {", ".join(buf(t) for _, t, _ in inputs)}) outs(%os : {buf("4x8")}) {{
    ^bb0(%q: {s8}, %k: tensor<8x4xf32>, %v: {s8}, %b: {s4}):
      %s = rdu.matmul %q, %k {{tier.offset = 1024 : i64}} : {s8}, tensor<8x4xf32> -> {s4}
      {first.format("x1", "s", 1088)}
      {second.format("x", "x1", 1152)}
      %m = rdu.reduce max %x dims [1] keepdim {{tier.offset = 1216 : i64}} : {s4} -> tensor<4x1xf32>
      %e = rdu.map %x, %m {{tier.offset = 1280 : i64}} : ({s4}, tensor<4x1xf32>) -> {s4} {{
      ^bb0(%a0: f32, %a1: f32):
        %d = arith.subf %a0, %a1 : f32
        %r = math.exp %d : f32
        rdu.yield %r : f32
      }}
      %t = rdu.reduce sum %e dims [1] keepdim {{tier.offset = 1344 : i64}} : {s4} -> tensor<4x1xf32>
      %p = rdu.map %e, %t {{tier.offset = 1408 : i64}} : ({s4}, tensor<4x1xf32>) -> {s4} {{
      ^bb0(%a0: f32, %a1: f32):
        %r = arith.divf %a0, %a1 : f32
        rdu.yield %r : f32
      }}
      %o = rdu.matmul %p, %v : {s4}, {s8} -> {s8}
      rdu.yield %o : {s8}
    }}
    %o = tier.alloc : !tier.buffer<hbm, 4x8xf32>
    tier.dma %os -> %o : {buf("4x8")} -> !tier.buffer<hbm, 4x8xf32>
    func.return %o : !tier.buffer<hbm, 4x8xf32>
  }}
}}
"""


@pytest.mark.parametrize("scale_first, chains", [(True, 1), (False, 0)])
def test_a_scale_after_the_bias_is_not_fused(monkeypatch, scale_first, chains) -> None:
    """A scale before the add is SDPA's scale; after it, it scales the bias too: not fused."""
    q, k, v, b = (np.random.default_rng(i).standard_normal(s).astype(np.float32)
                  for i, s in enumerate([(4, 8), (8, 4), (4, 8), (4, 4)]))
    scores = (q @ k * 0.5 + b) if scale_first else (q @ k + b) * 0.5
    expected = torch.softmax(torch.from_numpy(scores), -1).numpy() @ v
    found = _counted(monkeypatch)
    result = PlacedProgram(parse(_scaled_bias_program(scale_first))).run([q, k, v, b], {})[0]
    np.testing.assert_allclose(result, expected, rtol=1e-5, atol=1e-6)
    assert found == [chains]


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


class _Masks(torch.nn.Module):
    """An all-visible boolean mask made in the graph (`arange >= 0`, as
    transformers makes one under export), and a float mask given as an input."""

    def forward(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
                bias: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        visible = (torch.arange(k.shape[-2]) >= 0).expand(q.shape[-2], k.shape[-2])
        return (F.scaled_dot_product_attention(q, k, v, attn_mask=visible),
                F.scaled_dot_product_attention(q, k, v, attn_mask=bias))


def test_a_mask_of_zeros_is_not_passed_to_the_kernel(monkeypatch) -> None:
    """A bias that is zero throughout in a run is left out of that run's kernel
    call (the all-visible mask every run; the input mask in the run it is
    zero, not in the run it masks): eager's numbers either way."""
    passed: list[bool] = []
    sdpa = F.scaled_dot_product_attention

    def spy(*args: object, **kwargs: object) -> torch.Tensor:
        passed.append(kwargs.get("attn_mask") is not None)
        return sdpa(*args, **kwargs)

    masked = torch.zeros(5, 6)
    masked[:, 3:] = float("-inf")
    model, found = _Masks(), _counted(monkeypatch)
    calls = [(*_random([(2, 3, 5, 8), (2, 3, 6, 8), (2, 3, 6, 4)], seed), bias)
             for seed, bias in ((0, torch.zeros(5, 6)), (10, masked))]
    program = rducc.compile(model, calls[0], opt_level=2)
    for inputs, expected_masks in zip(calls, ([False, False], [False, True]), strict=True):
        with torch.no_grad():
            expected = _outputs(model(*inputs))
        passed.clear()
        monkeypatch.setattr(F, "scaled_dot_product_attention", spy)
        results = _outputs(program(*inputs))
        monkeypatch.setattr(F, "scaled_dot_product_attention", sdpa)
        for out, ref in zip(results, expected, strict=True):
            np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-5)
        assert passed == expected_masks
    assert sum(found) == 2


class _Merged(torch.nn.Module):
    """Heads split from one input, SDPA, the heads merged back (`transpose(1, 2)`
    and a reshape, as transformers' attention layers) and read by a map; or
    (`merged` False) SDPA's result returned as it is."""

    def __init__(self, merged: bool) -> None:
        super().__init__()
        self.merged = merged

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        batch, tokens, width = x.shape
        q, k, v = ((x * s).view(batch, tokens, 2, -1).transpose(1, 2) for s in (1.0, 0.5, 2.0))
        result = F.scaled_dot_product_attention(q, k, v)
        return result.transpose(1, 2).reshape(batch, tokens, width) * 3.0 if self.merged else result


@pytest.mark.parametrize("model, shapes, fresh", [
    (_Merged(True), [(2, 5, 8)], [True]),
    (_Merged(False), [(2, 5, 8)], [False]),  # the result yielded into an output buffer
])
def test_attention_read_by_its_slot_alone_is_atens_own_array(monkeypatch, model, shapes, fresh) -> None:
    """The fused step binds the kernel's own array (no copy into the arena)
    where its value is read through its slot alone, not where it is yielded
    into an output buffer; eager's numbers call after call either way."""
    calls = [_random(shapes, seed) for seed in (0, 10)]
    program = rducc.compile(model, calls[0], opt_level=2)
    outs: list[bool] = []
    plain = interpreter.kernels.attention

    def recording(*args: object) -> np.ndarray:
        outs.append(args[-1] is None)
        return plain(*args)  # type: ignore[arg-type]

    for inputs in calls:
        with torch.no_grad():
            expected = _outputs(model(*inputs))
        monkeypatch.setattr(interpreter.kernels, "attention", recording)
        results = _outputs(program(*inputs))
        monkeypatch.setattr(interpreter.kernels, "attention", plain)
        for out, ref in zip(results, expected, strict=True):
            np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-5)
    assert outs == fresh * 2
