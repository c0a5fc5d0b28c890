"""A softmax, log softmax or layer norm whose intermediates nothing else reads
runs as one step of ATen's fused kernel (issue 32, `rducc.runtime.fused_norms`).

- hand-written modules (softmax along every dim, log softmax, a masked,
  scaled attention, scaled dot product attention with a fully masked row,
  softmax written out by hand, layer norms with and
  without the affine, over one and two dims) compiled at -O2 run the
  fused step and give eager's numbers;
- the two rules that make it safe, each seen failing when forced: an
  intermediate read by another op (its bytes are never written when the
  chain is fused), and the chain's input overwritten before the last map
  (a hand-placed kernel where the allocator reused the input's bytes once
  the exp map had read it);
- a layer norm whose input's bytes the allocator gave to its square (a step
  that never runs) runs whole, as transformers ConvNeXt's do
  (test_runtime_layout_views); another step reusing them leaves it running
  from the centred value, and forced whole it reads the other step's value.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from test_interpreter import parse

import rducc
from rducc.runtime import fused_norms, interpreter
from rducc.runtime.interpreter import PlacedProgram


class _Softmaxes(torch.nn.Module):
    """torch's softmaxes over three dims, and one spelled out (`_ByHand`)."""

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> tuple[torch.Tensor, ...]:
        return torch.softmax(x, -1), torch.softmax(x, 0), torch.log_softmax(x * 3, 1), *_ByHand(False)(y)


class _Attention(torch.nn.Module):
    def forward(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        scores = q @ k.transpose(-1, -2) / 4.0
        causal = torch.ones(scores.shape[-2:], dtype=torch.bool).tril()
        return scores.masked_fill(~causal, float("-inf")).softmax(-1) @ v


class _Sdpa(torch.nn.Module):
    """Scaled dot product attention (torch's `_safe_softmax`), one query row
    fully masked, beside the masked attention written out (`_Attention`)."""

    def forward(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        mask = torch.ones(q.shape[-2], k.shape[-2], dtype=torch.bool).tril()
        mask[0] = False
        return torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=mask), _Attention()(q, k, v)


class _LayerNorms(torch.nn.Module):
    """Layer norms with and without the affine, over one and two dims, with a weight alone."""

    def __init__(self) -> None:
        super().__init__()
        self.affine, self.plain = torch.nn.LayerNorm(7), torch.nn.LayerNorm((5, 7), elementwise_affine=False)
        self.weight = torch.nn.Parameter(torch.rand(7) + 0.5)
        torch.nn.init.uniform_(self.affine.weight, 0.5, 1.5)
        torch.nn.init.uniform_(self.affine.bias, -1.0, 1.0)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        return self.affine(x), self.plain(x + 1), torch.nn.functional.layer_norm(x * 3, (7,), self.weight, eps=1e-3)


class _ByHand(torch.nn.Module):
    """Softmax spelled out, its exponentials also read by a second output when `shared`."""

    def __init__(self, shared: bool) -> None:
        super().__init__()
        self.shared = shared

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        e = (x - x.amax(-1, keepdim=True)).exp()
        p = e / e.sum(-1, keepdim=True)
        return (p, e * 2) if self.shared else (p,)


def _fused_chains(monkeypatch: pytest.MonkeyPatch, detector: type = fused_norms.NormChains) -> list[int]:
    """Count the chains each compute fuses (with `detector` standing in)."""
    found: list[int] = []

    class Counting(detector):  # type: ignore[misc, valid-type]
        def __init__(self, compute, folds=None) -> None:
            super().__init__(compute, folds)
            found.append(len(self.at_last))

    monkeypatch.setattr(interpreter, "NormChains", Counting)
    return found


def _run(model: torch.nn.Module, inputs: tuple[torch.Tensor, ...]) -> list[np.ndarray]:
    out = rducc.compile(model, inputs, opt_level=2)(*inputs)
    return [np.asarray(o) for o in (out if isinstance(out, (tuple, list)) else (out,))]


def _eager(model: torch.nn.Module, inputs: tuple[torch.Tensor, ...]) -> list[np.ndarray]:
    with torch.no_grad():
        out = model(*inputs)
    return [t.numpy() for t in (out if isinstance(out, tuple) else (out,))]


@pytest.mark.parametrize("model, shapes, chains", [
    (_Softmaxes(), [(3, 5, 7), (4, 9)], 4),
    (_LayerNorms(), [(3, 5, 7)], 3),
    (_Sdpa(), [(2, 6, 8), (2, 6, 8), (2, 6, 8)], 2),
])
def test_hand_written_softmaxes_run_fused_as_eager(monkeypatch, model, shapes, chains) -> None:
    inputs = tuple(torch.randn(*s, generator=torch.Generator().manual_seed(i)) for i, s in enumerate(shapes))
    found = _fused_chains(monkeypatch)
    for out, ref in zip(_run(model, inputs), _eager(model, inputs), strict=True):
        np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-6)
    assert sum(found) == chains


def test_an_intermediate_read_elsewhere_is_not_fused(monkeypatch) -> None:
    """`e * 2` reads the exponentials: the detector refuses; forced, `e`'s
    bytes are never written and the second output is not eager's."""
    model, inputs = _ByHand(shared=True), (torch.randn(4, 9),)
    expected = _eager(model, inputs)
    found = _fused_chains(monkeypatch)
    for out, ref in zip(_run(model, inputs), expected, strict=True):
        np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-6)
    assert sum(found) == 0
    monkeypatch.setattr(fused_norms, "_read_by_chain_alone", lambda *args: True)
    forced = _fused_chains(monkeypatch)
    outputs = _run(model, inputs)
    assert sum(forced) == 1 and not np.allclose(outputs[1], expected[1], rtol=1e-3, atol=1e-3)


_T, _R = "tensor<2x8xf32>", "tensor<2x1xf32>"


def _program(reused_offset: int) -> str:
    """softmax(x) written as e / sum(e), and 3x + 1; `%z` (3x) at `reused_offset`,
    which at 0 reuses the bytes of the softmax's input once the exp map read them."""
    def unary(name: str, source: str, body: str, offset: str = "") -> str:
        return f"""%{name} = rdu.map %{source} {offset}: ({_T}) -> {_T} {{
      ^bb0(%a0: f32):
        %k = arith.constant {body[1]} : f32
        %r = arith.{body[0]} %a0, %k : f32
        rdu.yield %r : f32
      }}"""
    return f"""
builtin.module {{
  func.func @forward(%xh: !tier.buffer<hbm, 2x8xf32> {{rdu.input = "x"}})
      -> (!tier.buffer<hbm, 2x8xf32>, !tier.buffer<hbm, 2x8xf32>) attributes {{tier.sram_capacity = 4096 : i64}} {{
    %xs = tier.alloc offset 2048 : !tier.buffer<sram, 2x8xf32>
    tier.dma %xh -> %xs : !tier.buffer<hbm, 2x8xf32> -> !tier.buffer<sram, 2x8xf32>
    %ps = tier.alloc offset 2560 : !tier.buffer<sram, 2x8xf32>
    %qs = tier.alloc offset 3072 : !tier.buffer<sram, 2x8xf32>
    tier.compute "k0" ins(%xs : !tier.buffer<sram, 2x8xf32>)
        outs(%ps, %qs : !tier.buffer<sram, 2x8xf32>, !tier.buffer<sram, 2x8xf32>) {{
    ^bb0(%x: {_T}):
      {unary("x2", "x", ("mulf", "1.0"), "{tier.offset = 0 : i64} ")}
      %m = rdu.reduce max %x2 dims [1] keepdim {{tier.offset = 256 : i64}} : {_T} -> {_R}
      %e = rdu.map %x2, %m {{tier.offset = 512 : i64}} : ({_T}, {_R}) -> {_T} {{
      ^bb0(%a0: f32, %a1: f32):
        %d = arith.subf %a0, %a1 : f32
        %r = math.exp %d : f32
        rdu.yield %r : f32
      }}
      %s = rdu.reduce sum %e dims [1] keepdim {{tier.offset = 768 : i64}} : {_T} -> {_R}
      {unary("z", "x", ("mulf", "3.0"), f"{{tier.offset = {reused_offset} : i64}} ")}
      %p = rdu.map %e, %s : ({_T}, {_R}) -> {_T} {{
      ^bb0(%a0: f32, %a1: f32):
        %r = arith.divf %a0, %a1 : f32
        rdu.yield %r : f32
      }}
      {unary("q", "z", ("addf", "1.0"))}
      rdu.yield %p, %q : {_T}, {_T}
    }}
    %p = tier.alloc : !tier.buffer<hbm, 2x8xf32>
    tier.dma %ps -> %p : !tier.buffer<sram, 2x8xf32> -> !tier.buffer<hbm, 2x8xf32>
    %q = tier.alloc : !tier.buffer<hbm, 2x8xf32>
    tier.dma %qs -> %q : !tier.buffer<sram, 2x8xf32> -> !tier.buffer<hbm, 2x8xf32>
    func.return %p, %q : !tier.buffer<hbm, 2x8xf32>, !tier.buffer<hbm, 2x8xf32>
  }}
}}
"""


X = np.random.default_rng(0).standard_normal((2, 8)).astype(np.float32)
EXPECTED = [torch.softmax(torch.from_numpy(X), -1).numpy(), 3 * X + 1]


@pytest.mark.parametrize("reused_offset, chains", [(1024, 1), (0, 0)])
def test_the_input_overwritten_before_the_last_map_is_not_fused(monkeypatch, reused_offset, chains) -> None:
    found = _fused_chains(monkeypatch)
    for out, ref in zip(PlacedProgram(parse(_program(reused_offset))).run([X], {}), EXPECTED, strict=True):
        np.testing.assert_allclose(out, ref, rtol=1e-6, atol=1e-6)
    assert found == [chains]


def test_a_chain_forced_over_its_reused_input_is_not_eagers(monkeypatch) -> None:
    """What the rule prevents: the fused step reading `x * x` where `x` was."""
    monkeypatch.setattr(fused_norms, "_kept", lambda *args: True)
    found = _fused_chains(monkeypatch)
    result = PlacedProgram(parse(_program(0))).run([X], {})[0]
    assert found == [1] and not np.allclose(result, EXPECTED[0], rtol=1e-3, atol=1e-3)


def _layer_norm_program(square_offset: int, scaled_offset: int) -> str:
    """layer_norm(x2) over 2x8 with x2 = x * 1, beside x * x + 1; the square
    `xc * xc` at `square_offset` and `x * x` (after the centering) at
    `scaled_offset`: at 0 either reuses x2's bytes once the centering read them."""
    def map_of(name: str, inputs: str, types: str, result: str, body: str, offset: int | None = None) -> str:
        placed = "" if offset is None else f"{{tier.offset = {offset} : i64}} "
        args = ", ".join(f"%a{i}: f32" for i in range(inputs.count("%")))
        return f"""%{name} = rdu.map {inputs} {placed}: ({types}) -> {result} {{
      ^bb0({args}):
        {body}
      }}"""
    scale = "%k = arith.constant {0} : f32\n        %r = arith.{1} %a0, %k : f32\n        rdu.yield %r : f32"
    binary = "%r = arith.{0} %a0, %a{1} : f32\n        rdu.yield %r : f32"
    rsqrt = """%k = arith.constant 8.0 : f32
        %e = arith.constant 1.0e-05 : f32
        %d = arith.divf %a0, %k : f32
        %s = arith.addf %d, %e : f32
        %r = math.rsqrt %s : f32
        rdu.yield %r : f32"""
    pair = f"{_T}, {_R}"
    return f"""
builtin.module {{
  func.func @forward(%xh: !tier.buffer<hbm, 2x8xf32> {{rdu.input = "x"}})
      -> (!tier.buffer<hbm, 2x8xf32>, !tier.buffer<hbm, 2x8xf32>) attributes {{tier.sram_capacity = 4096 : i64}} {{
    %xs = tier.alloc offset 2048 : !tier.buffer<sram, 2x8xf32>
    tier.dma %xh -> %xs : !tier.buffer<hbm, 2x8xf32> -> !tier.buffer<sram, 2x8xf32>
    %ys = tier.alloc offset 2560 : !tier.buffer<sram, 2x8xf32>
    %qs = tier.alloc offset 3072 : !tier.buffer<sram, 2x8xf32>
    tier.compute "k0" ins(%xs : !tier.buffer<sram, 2x8xf32>)
        outs(%ys, %qs : !tier.buffer<sram, 2x8xf32>, !tier.buffer<sram, 2x8xf32>) {{
    ^bb0(%x: {_T}):
      {map_of("x2", "%x", _T, _T, scale.format("1.0", "mulf"), 0)}
      %a = rdu.reduce sum %x2 dims [1] keepdim {{tier.offset = 256 : i64}} : {_T} -> {_R}
      {map_of("mean", "%a", _R, _R, scale.format("8.0", "divf"), 384)}
      {map_of("xc", "%x2, %mean", pair, _T, binary.format("subf", 1), 512)}
      {map_of("sq", "%xc", _T, _T, binary.format("mulf", 0), square_offset)}
      %v = rdu.reduce sum %sq dims [1] keepdim {{tier.offset = 768 : i64}} : {_T} -> {_R}
      {map_of("rs", "%v", _R, _R, rsqrt, 896)}
      {map_of("z", "%x", _T, _T, binary.format("mulf", 0), scaled_offset)}
      {map_of("y", "%xc, %rs", pair, _T, binary.format("mulf", 1))}
      {map_of("q", "%z", _T, _T, scale.format("1.0", "addf"))}
      rdu.yield %y, %q : {_T}, {_T}
    }}
    %y = tier.alloc : !tier.buffer<hbm, 2x8xf32>
    tier.dma %ys -> %y : !tier.buffer<sram, 2x8xf32> -> !tier.buffer<hbm, 2x8xf32>
    %q = tier.alloc : !tier.buffer<hbm, 2x8xf32>
    tier.dma %qs -> %q : !tier.buffer<sram, 2x8xf32> -> !tier.buffer<hbm, 2x8xf32>
    func.return %y, %q : !tier.buffer<hbm, 2x8xf32>, !tier.buffer<hbm, 2x8xf32>
  }}
}}
"""


LN_EXPECTED = [torch.nn.functional.layer_norm(torch.from_numpy(X), (8,)).numpy(),
               X * X + 1]


def layer_norm_chains(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The ops each fused layer norm chain does not run (6: all, 3: run from the
    centred value); test_runtime_layout_views counts transformers ConvNeXt's."""
    found: list[int] = []

    class Counting(fused_norms.NormChains):
        def __init__(self, compute, folds=None) -> None:
            super().__init__(compute, folds)
            found.extend(len(chain.intermediates) for chain in self.at_last.values()
                         if isinstance(chain, fused_norms.LayerNormChain))

    monkeypatch.setattr(interpreter, "NormChains", Counting)
    return found


@pytest.mark.parametrize("square_offset, scaled_offset, skipped", [(0, 1024, [6]), (1152, 0, [3])])
def test_a_layer_norm_input_reused_by_a_skipped_step_runs_whole(monkeypatch, square_offset, scaled_offset,
                                                                  skipped) -> None:
    """The square reusing x2's bytes never runs, so x2 stays for the fused step
    (the whole chain is one step); `x * x` reusing them runs, so the chain runs
    from the centred value. Both are eager's numbers."""
    found = layer_norm_chains(monkeypatch)
    program = PlacedProgram(parse(_layer_norm_program(square_offset, scaled_offset)))
    for out, ref in zip(program.run([X], {}), LN_EXPECTED, strict=True):
        np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-5)
    assert found == skipped


def test_a_layer_norm_forced_over_its_overwritten_input_is_not_eagers(monkeypatch) -> None:
    """What the rule prevents: the whole chain reading `x * x` where x2 was."""
    monkeypatch.setattr(fused_norms, "_kept", lambda *args: True)
    found = layer_norm_chains(monkeypatch)
    result = PlacedProgram(parse(_layer_norm_program(1152, 0))).run([X], {})[0]
    assert found == [6] and not np.allclose(result, LN_EXPECTED[0], rtol=1e-3, atol=1e-3)



class _NormReaders(torch.nn.Module):
    """Layer norms whose values are read in every way a body value is: by a
    product, through a reshape, a permute and a residual add, and returned (an
    output buffer); one over a permuted (channels-first) input, as ConvNeXt's."""

    def __init__(self) -> None:
        super().__init__()
        self.first, self.second, self.last = (torch.nn.LayerNorm(8) for _ in range(3))
        self.linear = torch.nn.Linear(8, 8)
        for norm in (self.first, self.second, self.last):
            torch.nn.init.uniform_(norm.weight, 0.5, 1.5)
            torch.nn.init.uniform_(norm.bias, -1.0, 1.0)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        y = self.first(x.permute(0, 2, 3, 1))  # [1, 4, 4, 8] read from channels-first
        z = self.linear(y) + y.reshape(1, 16, 8).reshape(1, 4, 4, 8)
        w = self.second(z).permute(0, 3, 1, 2) + x
        return self.last(w.permute(0, 2, 3, 1)), w


def test_a_layer_norm_read_by_its_slot_alone_is_atens_own_array(monkeypatch) -> None:
    """A layer norm whose value is read through its slot alone is the array
    ATen's kernel returns (no copy into the arena, `_norm_step`'s `fresh`); one
    an output buffer holds is computed into it. Both give eager's numbers
    call after call, as the input and a norm's weight change between calls
    (no stale array)."""
    model = _NormReaders().eval()
    generator = torch.Generator().manual_seed(0)
    inputs = (torch.randn(1, 8, 4, 4, generator=generator),)
    with torch.no_grad():
        program = rducc.compile(torch.export.export(model, inputs), opt_level=2)
    fresh: list[bool] = []
    plain = interpreter.kernels.layer_norm

    def recording(x, dims, weight, bias, eps, out):  # type: ignore[no-untyped-def]
        fresh.append(out is None)
        return plain(x, dims, weight, bias, eps, out)

    monkeypatch.setattr(interpreter.kernels, "layer_norm", recording)
    weight = next(name for name in program.weights if name.endswith("second.weight"))
    for call in range(3):
        if call == 2:  # the Program's weight changed in place, and the model's alike
            program.weights[weight][...] *= 2.0
            with torch.no_grad():
                model.second.weight.mul_(2.0)
        inputs = (torch.randn(1, 8, 4, 4, generator=generator),)
        for out, ref in zip(_run_program(program, inputs), _eager(model, inputs), strict=True):
            np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-5)
    assert fresh == [True, True, False] * 3  # each call: the two inner norms fresh, the returned one in its buffer


def _run_program(program: rducc.Program, inputs: tuple[torch.Tensor, ...]) -> list[np.ndarray]:
    out = program(*inputs)
    return [np.asarray(o) for o in (out if isinstance(out, (tuple, list)) else (out,))]


class _FusedKernels(torch.nn.Module):
    """A layer norm, a softmax, a log softmax and activations torch computes in one pass."""

    def __init__(self) -> None:
        super().__init__()
        self.norm = torch.nn.LayerNorm(16)
        torch.nn.init.uniform_(self.norm.weight, 0.5, 1.5)
        torch.nn.init.uniform_(self.norm.bias, -1.0, 1.0)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        h = self.norm(x)
        return (h.softmax(-1), (x * 2).log_softmax(0), torch.nn.functional.gelu(h),
                torch.nn.functional.gelu(x, approximate="tanh"), torch.sigmoid(h))


def test_fused_kernels_call_torchs_bindings_as_eager(monkeypatch) -> None:
    """The fused layer norm, softmaxes and activations call torch's C++
    bindings (`torch.layer_norm`, `torch._softmax`, `torch._C._nn.gelu`, ...),
    as eager does, not the Python `torch.ops.aten` op objects, which cost a
    layer norm 30-40 us more after a large product (bench/runtime_bindings_ab.py);
    the bits are eager's."""
    called: list[str] = []
    for kind in (torch._ops.OpOverload, torch._ops.OpOverloadPacket):
        plain = kind.__call__

        def recording(self, *args, _plain=plain, **kwargs):  # type: ignore[no-untyped-def]
            called.append(str(self))
            return _plain(self, *args, **kwargs)

        monkeypatch.setattr(kind, "__call__", recording)
    model = _FusedKernels().eval()
    inputs = (torch.randn(4, 6, 16, generator=torch.Generator().manual_seed(0)) * 4,)
    with torch.no_grad():
        program = rducc.compile(torch.export.export(model, inputs), opt_level=2)
    found = _fused_chains(monkeypatch)
    program(*inputs)
    called.clear()
    for out, ref in zip(_run_program(program, inputs), _eager(model, inputs), strict=True):
        np.testing.assert_array_equal(out, ref)
    assert sum(found) == 3
    kernels = ("layer_norm", "softmax", "gelu", "sigmoid")
    assert [name for name in called if any(kernel in name for kernel in kernels)] == []
