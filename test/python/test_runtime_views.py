"""Reshapes of a placed program's kernel bodies run as views (issue 32,
`rducc.runtime.views`): the producer computes into the reshape's bytes, or the
reshape's readers read its operand's bytes, only where the placement proves
no other value's write reaches those bytes meanwhile. Two kernels of one
program, hand-placed: one where the producer may compute into the reshape's
bytes, one where every view would read overwritten bytes (the copy stays).
Forcing the view there gives a wrong result: the test sees an aliased read.
"""

from __future__ import annotations

import numpy as np
import pytest
from test_interpreter import parse

from rducc.dialects.rdu import dataflow as rdu
from rducc.dialects.tier import ComputeOp
from rducc.runtime import interpreter, views
from rducc.runtime.interpreter import PlacedProgram

_T = "tensor<2x8xf32>"
_F = "tensor<16xf32>"


def _map(name: str, inputs: list[str], types: list[str], out: str, offset: int, body: str) -> str:
    args = ", ".join(f"%a{i}: f32" for i in range(len(inputs)))
    head = f"      {name} = rdu.map {', '.join(inputs)} {{tier.offset = {offset} : i64}}"
    return f"{head} : ({', '.join(types)}) -> {out} {{\n      ^bb0({args}):\n{body}\n      }}\n"


def _double() -> str:
    return "        %k = arith.constant 2.0 : f32\n        %r = arith.mulf %a0, %k : f32\n        rdu.yield %r : f32"


def _plus(value: float) -> str:
    return (f"        %k = arith.constant {value} : f32\n"
            "        %r = arith.addf %a0, %k : f32\n        rdu.yield %r : f32")


_TIMES = "        %r = arith.mulf %a0, %a1 : f32\n        rdu.yield %r : f32"

SAFE_BODY = (
    _map("%a", ["%x"], [_T], _T, 64, _double())
    + f"      %v = rdu.reshape %a {{tier.offset = 128 : i64}} : {_T} -> {_F}\n"
    + _map("%g", ["%v"], [_F], _F, 192, _plus(1.0))
)
"""a = 2x at 64; v = reshape(a) at 128; g = v + 1: a may compute at 128 directly."""

HAZARD_BODY = (
    _map("%a", ["%x"], [_T], _T, 64, _double())
    + _map("%c", ["%x"], [_T], _T, 128, _plus(3.0))
    + _map("%d", ["%c", "%c"], [_T, _T], _T, 192, _TIMES)
    + f"      %v = rdu.reshape %a {{tier.offset = 128 : i64}} : {_T} -> {_F}\n"
    + _map("%f", ["%xf"], [_F], _F, 64, _plus(5.0))
    + _map("%g", ["%v", "%f"], [_F, _F], _F, 256, _TIMES)
)
"""c is at 128 until d reads it (a cannot compute there early); f overwrites a's
bytes at 64 before g reads v (v cannot read a's bytes): v must be a copy."""


CROSSED_BODY = (
    _map("%a", ["%x"], [_T], _T, 64, _double())
    + _map("%b", ["%a"], [_T], _T, 192, _plus(1.0))
    + f"      %v = rdu.reshape %a {{tier.offset = 128 : i64}} : {_T} -> {_F}\n"
    + _map("%p", ["%x"], [_T], _T, 256, _plus(3.0))
    + _map("%w", ["%v", "%xf"], [_F, _F], _F, 320, _TIMES)
    + f"      %pr = rdu.reshape %p {{tier.offset = 64 : i64}} : {_T} -> {_F}\n"
    + f"      %bf = rdu.reshape %b {{tier.offset = 384 : i64}} : {_T} -> {_F}\n"
    + _map("%s", ["%w", "%pr"], [_F, _F], _F, 448, _TIMES)
    + _map("%g", ["%s", "%bf"], [_F, _F], _F, 576, _TIMES)
)
"""Two views that are each safe against the placement, not together (ViT at
dp=2, issue 27): v may read a's bytes at 64 until w (nothing the placement
writes there meanwhile), and p may compute into pr's bytes at 64 (the
allocator gave them to pr once a was dead, after v). Both at once, p's early
write at 64 overwrites a before w reads it through v."""

def _program(body: str) -> str:
    return f"""
builtin.module {{
  func.func @forward(%xh: !tier.buffer<hbm, 2x8xf32> {{rdu.input = "x"}},
                     %xfh: !tier.buffer<hbm, 16xf32> {{rdu.input = "xf"}}) -> !tier.buffer<hbm, 16xf32>
      attributes {{tier.sram_capacity = 4096 : i64}} {{
    %xs = tier.alloc offset 0 : !tier.buffer<sram, 2x8xf32>
    tier.dma %xh -> %xs : !tier.buffer<hbm, 2x8xf32> -> !tier.buffer<sram, 2x8xf32>
    %xfs = tier.alloc offset 1024 : !tier.buffer<sram, 16xf32>
    tier.dma %xfh -> %xfs : !tier.buffer<hbm, 16xf32> -> !tier.buffer<sram, 16xf32>
    %os = tier.alloc offset 512 : !tier.buffer<sram, 16xf32>
    tier.compute "k0" ins(%xs, %xfs : !tier.buffer<sram, 2x8xf32>, !tier.buffer<sram, 16xf32>)
        outs(%os : !tier.buffer<sram, 16xf32>) {{
    ^bb0(%x: {_T}, %xf: {_F}):
{body}      rdu.yield %g : {_F}
    }}
    %o = tier.alloc : !tier.buffer<hbm, 16xf32>
    tier.dma %os -> %o : !tier.buffer<sram, 16xf32> -> !tier.buffer<hbm, 16xf32>
    func.return %o : !tier.buffer<hbm, 16xf32>
  }}
}}
"""


X = np.arange(16, dtype=np.float32).reshape(2, 8) - 5


def _compute(module) -> ComputeOp:
    return next(op for op in module.walk() if isinstance(op, ComputeOp))


def test_a_producer_computes_into_the_reshape_where_nothing_else_uses_its_bytes() -> None:
    module = parse(_program(SAFE_BODY))
    plan = views.Views(_compute(module))
    assert [type(op) for op in plan.into.values()] == [rdu.ReshapeOp] and not plan.of_source
    np.testing.assert_array_equal(PlacedProgram(module).run([X, X.reshape(16)], {})[0], (2 * X + 1).reshape(16))


def test_no_view_where_another_value_still_uses_the_bytes() -> None:
    module = parse(_program(HAZARD_BODY))
    plan = views.Views(_compute(module))
    assert not plan.into and not plan.of_source
    expected = (2 * X).reshape(16) * (X.reshape(16) + 5)
    np.testing.assert_array_equal(PlacedProgram(module).run([X, X.reshape(16)], {})[0], expected)


def test_a_forced_view_over_overwritten_bytes_gives_a_wrong_result(monkeypatch: pytest.MonkeyPatch) -> None:
    """What the rule prevents: the reshape reading a's bytes after f overwrote them."""
    module = parse(_program(HAZARD_BODY))
    compute = _compute(module)
    reshape = next(op for op in compute.body.block.ops if isinstance(op, rdu.ReshapeOp))

    class Forced(views.Views):
        def __init__(self, op: ComputeOp, moved: frozenset = frozenset(), fused: object = None) -> None:
            self.into, self.into_bytes, self.of_source = {}, {}, {reshape: 64}

    monkeypatch.setattr(interpreter, "Views", Forced)
    expected = (2 * X).reshape(16) * (X.reshape(16) + 5)
    assert not np.array_equal(PlacedProgram(module).run([X, X.reshape(16)], {})[0], expected)


def test_views_are_checked_against_each_other() -> None:
    """The second view is refused where the first one keeps the bytes it would
    write early (`views.Timeline`); the result is the copies' result."""
    module = parse(_program(CROSSED_BODY))
    plan = views.Views(_compute(module))
    assert "v" in {r.result.name_hint for r in plan.of_source}  # v reads a's bytes ...
    assert "pr" not in {r.result.name_hint for r in plan.into.values()}  # ... so p may not compute at 64 early
    xf = X.reshape(16)
    expected = ((2 * X).reshape(16) * xf) * (X + 3).reshape(16) * (2 * X + 1).reshape(16)
    np.testing.assert_array_equal(PlacedProgram(module).run([X, xf], {})[0], expected)



YIELDED_BODY = (
    _map("%a", ["%x"], [_T], _T, 64, _double())
    + _map("%f", ["%xf"], [_F], _F, 128, _plus(5.0))
    + f"      %g = rdu.reshape %a : {_T} -> {_F}\n"
)
"""a = 2x at 64; f = xf + 5 (dead) at 128; the yielded g = reshape(a): a may
compute into the output buffer's bytes (512) unless a step between uses them."""


def test_a_yielded_reshape_is_computed_into_its_output_buffer() -> None:
    module = parse(_program(YIELDED_BODY))
    plan = views.Views(_compute(module))
    assert {op.results[0].name_hint: r.result.name_hint for op, r in plan.into.items()} == {"a": "g"}
    assert list(plan.into_bytes.values()) == [(512, 576)]  # the output buffer's bytes
    np.testing.assert_array_equal(PlacedProgram(module).run([X, X.reshape(16)], {})[0], (2 * X).reshape(16))


def test_no_yielded_view_into_a_rotating_output_buffer() -> None:
    """An output buffer of two rotating copies: which copy the yield writes is
    the run's, not a byte range the plan knows; the copy stays, eager's result."""
    module = parse(_program(YIELDED_BODY).replace("%os = tier.alloc offset 512", "%os = tier.alloc offset 512 buffers 2"))
    plan = views.Views(_compute(module))
    assert not plan.into
    np.testing.assert_array_equal(PlacedProgram(module).run([X, X.reshape(16)], {})[0], (2 * X).reshape(16))
