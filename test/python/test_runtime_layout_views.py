"""Transposes and reshapes as NumPy views (issue 32, `rducc.runtime.layout_views`
and `rdu-sram-alloc`'s view rule).

Hand-placed kernels: a transpose whose operand's bytes stay untouched while it
is read runs as a view; one whose operand's bytes are overwritten before its
reader runs stays a copy, and forcing the view there gives a wrong result. A
transpose the allocator placed on its operand's bytes must be a view: copying
it there would overwrite the operand, which a later op still reads. Then torch
modules (Swin's window partition, transformers' ConvNeXt: its permutes around
a channels-last layer norm) compiled at -O2: equal to eager,
their layout ops views.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
import transformers
from test_interpreter import parse
from test_runtime_fused_norms import layer_norm_chains

import rducc
from rducc.dialects.rdu import dataflow as rdu
from rducc.dialects.tier import ComputeOp
from rducc.runtime import interpreter, layout_views
from rducc.runtime.interpreter import PlacedProgram

_T = "tensor<4x4xf32>"


def _map(name: str, inputs: list[str], offset: int, body: str) -> str:
    args = ", ".join(f"%a{i}: f32" for i in range(len(inputs)))
    types = ", ".join([_T] * len(inputs))
    return (f"      {name} = rdu.map {', '.join(inputs)} {{tier.offset = {offset} : i64}} : ({types}) -> {_T} {{\n"
            f"      ^bb0({args}):\n{body}\n      }}\n")


_DOUBLE = "        %k = arith.constant 2.0 : f32\n        %r = arith.mulf %a0, %k : f32\n        rdu.yield %r : f32"
_PLUS5 = "        %k = arith.constant 5.0 : f32\n        %r = arith.addf %a0, %k : f32\n        rdu.yield %r : f32"
_TIMES = "        %r = arith.mulf %a0, %a1 : f32\n        rdu.yield %r : f32"


def _transpose(offset: int) -> str:
    return f"      %t = rdu.transpose %a perm [1, 0] {{tier.offset = {offset} : i64}} : {_T} -> {_T}\n"


SAFE = _map("%a", ["%x"], 64, _DOUBLE) + _transpose(128) + _map("%f", ["%x"], 192, _PLUS5) \
    + _map("%g", ["%t", "%f"], 256, _TIMES)
"""a = 2x at 64; t = a^T at 128; f = x + 5 at 192: nothing writes a's bytes while t is read."""

HAZARD = _map("%a", ["%x"], 64, _DOUBLE) + _transpose(128) + _map("%f", ["%x"], 64, _PLUS5) \
    + _map("%g", ["%t", "%f"], 256, _TIMES)
"""f overwrites a's bytes (a is dead once t is computed) before g reads t: t must be a copy."""

PLACED = _map("%a", ["%x"], 64, _DOUBLE) + _transpose(64) + _map("%f", ["%x"], 128, _PLUS5) \
    + _map("%g", ["%t", "%a"], 256, _TIMES)
"""t on a's bytes (as rdu-sram-alloc places it); g reads both t and a."""


def _program(body: str) -> str:
    return f"""
builtin.module {{
  func.func @forward(%xh: !tier.buffer<hbm, 4x4xf32> {{rdu.input = "x"}}) -> !tier.buffer<hbm, 4x4xf32>
      attributes {{tier.sram_capacity = 4096 : i64}} {{
    %xs = tier.alloc offset 0 : !tier.buffer<sram, 4x4xf32>
    tier.dma %xh -> %xs : !tier.buffer<hbm, 4x4xf32> -> !tier.buffer<sram, 4x4xf32>
    %os = tier.alloc offset 1024 : !tier.buffer<sram, 4x4xf32>
    tier.compute "k0" ins(%xs : !tier.buffer<sram, 4x4xf32>) outs(%os : !tier.buffer<sram, 4x4xf32>) {{
    ^bb0(%x: {_T}):
{body}      rdu.yield %g : {_T}
    }}
    %o = tier.alloc : !tier.buffer<hbm, 4x4xf32>
    tier.dma %os -> %o : !tier.buffer<sram, 4x4xf32> -> !tier.buffer<hbm, 4x4xf32>
    func.return %o : !tier.buffer<hbm, 4x4xf32>
  }}
}}
"""


X = np.arange(16, dtype=np.float32).reshape(4, 4) - 5


def _plans(module) -> dict[ComputeOp, layout_views.LayoutViews]:
    """The view plan `PlacedProgram` makes for each kernel of `module`."""
    made: dict[ComputeOp, layout_views.LayoutViews] = {}
    original = interpreter.LayoutViews

    class Seen(original):  # type: ignore[misc,valid-type]
        def __init__(self, op: ComputeOp, *rest: object) -> None:
            super().__init__(op, *rest)  # type: ignore[arg-type]
            made[op] = self

    interpreter.LayoutViews = Seen  # type: ignore[misc]
    try:
        PlacedProgram(module)
    finally:
        interpreter.LayoutViews = original  # type: ignore[misc]
    return made


def _plan(compute: ComputeOp) -> layout_views.LayoutViews:
    """The view plan `PlacedProgram` makes for one kernel."""
    return _plans(compute.get_toplevel_object())[compute]


def _compute(module) -> ComputeOp:
    return next(op for op in module.walk() if isinstance(op, ComputeOp))


def test_a_transpose_whose_operand_bytes_stay_runs_as_a_view() -> None:
    module = parse(_program(SAFE))
    transpose = next(op for op in _compute(module).body.block.ops if isinstance(op, rdu.TransposeOp))
    assert list(_plan(_compute(module)).source) == [transpose]
    np.testing.assert_array_equal(PlacedProgram(module).run([X], {})[0], (2 * X).T * (X + 5))


def test_no_view_where_the_operand_bytes_are_overwritten_and_a_forced_one_is_wrong(
        monkeypatch: pytest.MonkeyPatch) -> None:
    module = parse(_program(HAZARD))
    assert not _plan(_compute(module)).source
    expected = (2 * X).T * (X + 5)
    np.testing.assert_array_equal(PlacedProgram(module).run([X], {})[0], expected)
    monkeypatch.setattr(layout_views.LayoutViews, "_qualifies", lambda self, op: True)
    assert not np.array_equal(PlacedProgram(module).run([X], {})[0], expected)


def test_a_transpose_placed_on_its_operand_is_a_view_and_a_copy_there_is_wrong(
        monkeypatch: pytest.MonkeyPatch) -> None:
    module = parse(_program(PLACED))
    transpose = next(op for op in _compute(module).body.block.ops if isinstance(op, rdu.TransposeOp))
    assert layout_views.placed_views(_compute(module)) == {transpose}
    expected = (2 * X).T * (2 * X)
    np.testing.assert_array_equal(PlacedProgram(module).run([X], {})[0], expected)
    monkeypatch.setattr(layout_views.LayoutViews, "_qualifies", lambda self, op: False)
    monkeypatch.setattr(layout_views, "views_operand_bytes", lambda op: False)
    assert not np.array_equal(PlacedProgram(module).run([X], {})[0], expected)


class Windows(torch.nn.Module):
    """Swin's window partition and reverse around a per-window product."""

    def __init__(self, dim: int = 8, window: int = 4) -> None:
        super().__init__()
        self.window, self.proj = window, torch.nn.Linear(dim, dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, h, w, c = x.shape
        s = self.window
        windows = x.view(b, h // s, s, w // s, s, c).permute(0, 1, 3, 2, 4, 5).reshape(-1, s * s, c)
        scores = torch.softmax(windows @ windows.transpose(1, 2), dim=-1)
        mixed = self.proj(scores @ windows)
        back = mixed.view(b, h // s, w // s, s, s, c).permute(0, 1, 3, 2, 4, 5).reshape(b, h, w, c)
        return torch.roll(back, shifts=(-2, -2), dims=(1, 2)) + x


def _layout_views_of(program: rducc.Program) -> tuple[int, int]:
    """(layout ops run as views, layout ops) over the program's kernels."""
    viewed = total = 0
    for compute, plan in _plans(program.module).items():
        ops = [op for op in compute.body.block.ops if isinstance(op, layout_views.LAYOUT_OPS)]
        total += len(ops)
        viewed += sum(op in plan.source or op in plan.views.of_source for op in ops)
    return viewed, total


def test_swin_windows_run_as_views_and_match_eager() -> None:
    torch.manual_seed(0)
    module, x = Windows(), torch.randn(2, 8, 8, 8)
    with torch.no_grad():
        expected = module(x)
        program = rducc.compile(torch.export.export(module, (x,)), opt_level=2)
        got = program(x)
    torch.testing.assert_close(torch.as_tensor(np.asarray(got)), expected, rtol=1e-5, atol=1e-5)
    viewed, total = _layout_views_of(program)
    assert total and viewed >= total // 2, (viewed, total)


def test_transformers_convnext_matches_eager_with_views(monkeypatch) -> None:
    """Its layer norms also run whole (the square, which never runs, reuses
    their input's bytes: test_runtime_fused_norms)."""
    layer_norms = layer_norm_chains(monkeypatch)
    config = transformers.ConvNextConfig(num_channels=3, hidden_sizes=[8, 16], depths=[1, 1],
                                          num_stages=2, image_size=32)
    torch.manual_seed(0)
    model = transformers.ConvNextModel(config).eval()
    pixels = torch.randn(1, 3, 32, 32)

    class Hidden(torch.nn.Module):
        def forward(self, pixel_values: torch.Tensor) -> torch.Tensor:
            return model(pixel_values=pixel_values).last_hidden_state

    with torch.no_grad():
        expected = Hidden()(pixels)
        program = rducc.compile(torch.export.export(Hidden(), (pixels,)), opt_level=2)
        got = program(pixels)
    torch.testing.assert_close(torch.as_tensor(np.asarray(got)), expected, rtol=1e-4, atol=1e-4)
    viewed, total = _layout_views_of(program)
    assert viewed >= total // 2, (viewed, total)
    assert layer_norms and set(layer_norms) == {6}, layer_norms


_SCATTERED = """
builtin.module {
  func.func @forward(%xh: !tier.buffer<hbm, 2x6x8xf32> {rdu.input = "x"},
                     %vh: !tier.buffer<hbm, 1x2x8xf32> {rdu.input = "v"})
      -> !tier.buffer<hbm, 6x2x8xf32> attributes {tier.sram_capacity = 4096 : i64} {
    %xs = tier.alloc offset 0 : !tier.buffer<sram, 2x6x8xf32>
    %vs = tier.alloc offset 384 : !tier.buffer<sram, 1x2x8xf32>
    tier.dma %xh -> %xs : !tier.buffer<hbm, 2x6x8xf32> -> !tier.buffer<sram, 2x6x8xf32>
    tier.dma %vh -> %vs : !tier.buffer<hbm, 1x2x8xf32> -> !tier.buffer<sram, 1x2x8xf32>
    %os = tier.alloc offset 1024 : !tier.buffer<sram, 6x2x8xf32>
    tier.compute "k0" ins(%xs, %vs : !tier.buffer<sram, 2x6x8xf32>, !tier.buffer<sram, 1x2x8xf32>)
        outs(%os : !tier.buffer<sram, 6x2x8xf32>) {
    ^bb0(%x: tensor<2x6x8xf32>, %v: tensor<1x2x8xf32>):
      %t = rdu.transpose %x perm [1, 0, 2] {tier.offset = 512 : i64} : tensor<2x6x8xf32> -> tensor<6x2x8xf32>
      %i = rdu.iota start 4 step 1 {tier.offset = 896 : i64} : tensor<1xi64>
      %r = rdu.reshape %i {tier.offset = 896 : i64} : tensor<1xi64> -> tensor<1x1x1xi64>
      %b = rdu.broadcast %r {tier.offset = 1408 : i64} : tensor<1x1x1xi64> -> tensor<1x2x8xi64>
      %s = rdu.scatter %t[%b] = %v dim 0 : tensor<6x2x8xf32>, tensor<1x2x8xi64>, tensor<1x2x8xf32> -> tensor<6x2x8xf32>
      rdu.yield %s : tensor<6x2x8xf32>
    }
    %o = tier.alloc : !tier.buffer<hbm, 6x2x8xf32>
    tier.dma %os -> %o : !tier.buffer<sram, 6x2x8xf32> -> !tier.buffer<hbm, 6x2x8xf32>
    func.return %o : !tier.buffer<hbm, 6x2x8xf32>
  }
}
"""
"""index_put's row update on a transposed input buffer (`state.transpose(0, 1)[4] = v`):
the transpose reads the input buffer's bytes, which nothing writes during the
compute, so it is a view, and the scatter gets a strided operand."""


def test_a_scatter_into_a_transposed_input_buffer_view_keeps_its_rows() -> None:
    """A scatter's copy of a strided operand must be row-major, or its flat
    writes land in a temporary (the row update that came out wrong)."""
    module = parse(_SCATTERED)
    transpose = next(op for op in _compute(module).body.block.ops if isinstance(op, rdu.TransposeOp))
    assert transpose in _plan(_compute(module)).source
    x = np.arange(96, dtype=np.float32).reshape(2, 6, 8)
    v = -np.ones((1, 2, 8), np.float32)
    expected = x.transpose(1, 0, 2).copy()
    expected[4] = v[0]
    np.testing.assert_array_equal(PlacedProgram(module).run([x, v], {})[0], expected)


class GatedMlp(torch.nn.Module):
    """A gated MLP whose gate and up halves are one linear layer's (Mixtral's
    experts, Llama's fused gate_up): a layer norm, the fused product and its
    bias add, reshaped back to 3-d (fc1's reshape), the halves sliced off."""

    def __init__(self, halves: str, dim: int = 16, hidden: int = 24) -> None:
        super().__init__()
        self.halves, self.hidden = halves, hidden
        self.norm, self.gate_up = torch.nn.LayerNorm(dim), torch.nn.Linear(dim, 2 * hidden)
        self.down = torch.nn.Linear(hidden, dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        fused = self.gate_up(self.norm(x))
        if self.halves == "chunk":
            gate, up = fused.chunk(2, dim=-1)
        else:  # the halves indexed, up first
            up, gate = fused[..., self.hidden:], fused[..., :self.hidden]
        return self.down(torch.nn.functional.silu(gate) * up) + x


def _copied(program: rducc.Program) -> list[str]:
    """The layout ops whose step copies: no view of their operand's array, no
    value a producer computed into their bytes."""
    return [op.name for compute, plan in _plans(program.module).items() for op in compute.body.block.ops
            if isinstance(op, layout_views.LAYOUT_OPS)
            and not (op in plan.source or op in plan.views.of_source or op in plan.views.into.values())]


@pytest.mark.parametrize("halves", ["chunk", "indexed"])
def test_gate_and_up_halves_and_fc1s_reshape_are_views_and_match_eager(halves: str) -> None:
    """rdu-sram-alloc places the slices on the fused product's bytes and keeps
    the product's operands live up to its bias add, so the pair is computed
    into the add's bytes and the reshape after it reads them: nothing copies
    (before, both halves and the reshape were copied every call)."""
    torch.manual_seed(0)
    module, x = GatedMlp(halves).eval(), torch.randn(2, 8, 16)
    with torch.no_grad():
        expected = module(x)
        program = rducc.compile(torch.export.export(module, (x,)), opt_level=2)
        got = program(x)
    torch.testing.assert_close(torch.as_tensor(np.asarray(got)), expected, rtol=1e-5, atol=1e-5)
    assert _copied(program) == []


_T48, _T44 = "tensor<4x8xf32>", "tensor<4x4xf32>"
_HALVES = f"""
builtin.module {{
  func.func @forward(%xh: !tier.buffer<hbm, 4x8xf32> {{rdu.input = "x"}},
                     %wh: !tier.buffer<hbm, 8x8xf32> {{rdu.input = "w"}},
                     %bh: !tier.buffer<hbm, 8xf32> {{rdu.input = "b"}}) -> !tier.buffer<hbm, 4x4xf32>
      attributes {{tier.sram_capacity = 4096 : i64}} {{
    %xs = tier.alloc offset 2048 : !tier.buffer<sram, 4x8xf32>
    %ws = tier.alloc offset 2304 : !tier.buffer<sram, 8x8xf32>
    %bs = tier.alloc offset 2560 : !tier.buffer<sram, 8xf32>
    tier.dma %xh -> %xs : !tier.buffer<hbm, 4x8xf32> -> !tier.buffer<sram, 4x8xf32>
    tier.dma %wh -> %ws : !tier.buffer<hbm, 8x8xf32> -> !tier.buffer<sram, 8x8xf32>
    tier.dma %bh -> %bs : !tier.buffer<hbm, 8xf32> -> !tier.buffer<sram, 8xf32>
    %os = tier.alloc offset 1024 : !tier.buffer<sram, 4x4xf32>
    tier.compute "k0" ins(%xs, %ws, %bs : !tier.buffer<sram, 4x8xf32>, !tier.buffer<sram, 8x8xf32>,
        !tier.buffer<sram, 8xf32>) outs(%os : !tier.buffer<sram, 4x4xf32>) {{
    ^bb0(%x: {_T48}, %w: tensor<8x8xf32>, %b: tensor<8xf32>):
      %n = rdu.map %x {{tier.offset = 64 : i64}} : ({_T48}) -> {_T48} {{
      ^bb0(%a0: f32):
        %r = arith.negf %a0 : f32
        rdu.yield %r : f32
      }}
      %p = rdu.matmul %n, %w {{tier.offset = 256 : i64}} : {_T48}, tensor<8x8xf32> -> {_T48}
      %a = rdu.map %p, %b {{tier.offset = 64 : i64}} : ({_T48}, tensor<8xf32>) -> {_T48} {{
      ^bb0(%a0: f32, %a1: f32):
        %r = arith.addf %a0, %a1 : f32
        rdu.yield %r : f32
      }}
      %g = rdu.slice %a offsets [0, 0] strides [1, 1] {{tier.offset = 64 : i64}} : {_T48} -> {_T44}
      %u = rdu.slice %a offsets [0, 4] strides [1, 1] {{tier.offset = 64 : i64}} : {_T48} -> {_T44}
      %h = rdu.slice %x offsets [0, 0] strides [1, 1] {{tier.offset = 256 : i64}} : {_T48} -> {_T44}
      %m = rdu.map %g, %u, %h {{tier.offset = 512 : i64}} : ({_T44}, {_T44}, {_T44}) -> {_T44} {{
      ^bb0(%a0: f32, %a1: f32, %a2: f32):
        %r0 = arith.mulf %a0, %a1 : f32
        %r = arith.addf %r0, %a2 : f32
        rdu.yield %r : f32
      }}
      %o = rdu.map %m {{tier.offset = 768 : i64}} : ({_T44}) -> {_T44} {{
      ^bb0(%a0: f32):
        rdu.yield %a0 : f32
      }}
      rdu.yield %o : {_T44}
    }}
    %o = tier.alloc : !tier.buffer<hbm, 4x4xf32>
    tier.dma %os -> %o : !tier.buffer<sram, 4x4xf32> -> !tier.buffer<hbm, 4x4xf32>
    func.return %o : !tier.buffer<hbm, 4x4xf32>
  }}
}}
"""
"""Gate and up halves of a bias add placed on its operand's bytes, the add on
the product's lhs (as a placement without the epilogue rule puts it): the
runtime folds the pair into the product's bytes, which `%h` then overwrites
while the halves are read, so neither half is a view."""


def test_sibling_slices_of_a_value_that_lives_elsewhere_copy_apart() -> None:
    """Both halves sit on the add's placed bytes, which its value never reached:
    each copies into a host array of its own (into those shared bytes, the up
    half overwrote the gate half)."""
    module = parse(_HALVES)
    plan = _plan(_compute(module))
    halves = [op for op in _compute(module).body.block.ops if isinstance(op, rdu.SliceOp)][:2]
    assert set(halves) == set(plan.aside)
    x, w, b = (np.arange(n, dtype=np.float32).reshape(s) / 7 - 1 for n, s in ((32, (4, 8)), (64, (8, 8)), (8, (8,))))
    fused = -x @ w + b
    np.testing.assert_allclose(PlacedProgram(module).run([x, w, b], {})[0], fused[:, :4] * fused[:, 4:] + x[:, :4],
                               rtol=1e-6)
