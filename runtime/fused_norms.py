"""Softmax chains run as one torch CPU kernel (issue 32).

`torch.softmax` and `torch.log_softmax` decompose into a max reduce, a map
`exp(x - max)`, a sum reduce and a map that divides by the sum (or subtracts
its log), so the runtime made four passes over the scores, computing the
exponential twice. Where the program shows the chain's intermediate values
are read by the chain alone, `SoftmaxChains` runs the whole chain as one step
at the last map, into the last map's bytes, with ATen's fused CPU kernel
(`kernels.softmax`), as eager does.

A chain is recognized from what its ops compute, not from names:

- `m = rdu.reduce max x dims [d] keepdim`;
- `e = rdu.map(x, m)` computing `exp(x - m)`;
- `s = rdu.reduce sum e dims [d] keepdim`;
- the last map computing `exp(x - m) / s` or `e / s` (softmax) or
  `(x - m) - log(s)` (log softmax), its result `x`'s type.

It runs as one step only when `m`, `e` and `s` are read by no op outside the
chain and yielded by none (no output buffer), `x`, the last map's result and
the intermediates are f32 or f64 of one dtype, and no op from the max up to
the last map writes `x`'s bytes (the placement's bytes,
`rducc.runtime.views.Placement`): the fused step reads `x` later than the max
would have. The intermediates' steps do not run; nothing reads their bytes.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.dialects import arith
from xdsl.dialects import math as xmath
from xdsl.dialects.builtin import Float32Type, Float64Type, TensorType
from xdsl.ir import Operation, SSAValue

from rducc.dialects.rdu import dataflow as rdu
from rducc.dialects.shapes import element_of
from rducc.dialects.tier import ComputeOp
from rducc.runtime.views import Placement, overlap

Expr = str | tuple[object, ...]
"""A map body's value as an expression over named map inputs."""

_SCALAR_OPS: dict[type[Operation], str] = {
    arith.SubfOp: "sub", arith.DivfOp: "div", xmath.ExpOp: "exp", xmath.LogOp: "log",
}

_EXP = ("exp", ("sub", "x", "m"))
_SOFTMAX = ("div", _EXP, "s")
_LOG_SOFTMAX = ("sub", ("sub", "x", "m"), ("log", "s"))


@dataclass(frozen=True)
class SoftmaxChain:
    """One recognized chain: the last map computes `softmax(x, dim)` (or its log)."""

    x: SSAValue
    dim: int
    log: bool
    intermediates: tuple[Operation, ...]
    """The max, the exp map and the sum: their steps do not run."""


def _expression(map_op: rdu.MapOp, names: dict[SSAValue, Expr]) -> Expr | None:
    """What `map_op` yields as an expression over `names` of its inputs (None
    when an input is unnamed or the body has an op other than sub, div, exp, log)."""
    block = map_op.body.block
    values: dict[SSAValue, Expr] = {}
    for arg, operand in zip(block.args, map_op.inputs):
        if operand not in names:
            return None
        values[arg] = names[operand]
    for op in list(block.ops)[:-1]:
        kind = _SCALAR_OPS.get(type(op))
        if kind is None or len(op.results) != 1 or any(v not in values for v in op.operands):
            return None
        values[op.results[0]] = (kind, *(values[v] for v in op.operands))
    terminator = block.last_op
    if not isinstance(terminator, rdu.YieldOp) or len(terminator.operands) != 1:
        return None
    return values.get(terminator.operands[0])


def _reduce_of(op: Operation | None, kind: rdu.ReduceKind, source: SSAValue) -> rdu.ReduceOp | None:
    """`op` as `reduce kind source dims [d] keepdim`, else None."""
    if not isinstance(op, rdu.ReduceOp) or op.kind.data != kind or op.input is not source \
            or op.keepdim is None or len(op.dims.get_values()) != 1:
        return None
    return op


def _wide_float(value: SSAValue, element: object) -> bool:
    return isinstance(value.type, TensorType) and isinstance(element_of(value.type), Float32Type | Float64Type) \
        and element_of(value.type) == element


def _chain_at(max_op: rdu.ReduceOp, placement: Placement) -> tuple[rdu.MapOp, SoftmaxChain] | None:
    """The softmax chain starting at `max_op` and its last map, if it is one."""
    x, m = max_op.input, max_op.result
    dim = max_op.dims.get_values()[0]
    exp_maps = [u.operation for u in m.uses if isinstance(u.operation, rdu.MapOp)
                and _expression(u.operation, {x: "x", m: "m"}) == _EXP]
    if len(exp_maps) != 1:
        return None
    exp_map = exp_maps[0]
    assert isinstance(exp_map, rdu.MapOp)
    e = exp_map.result
    sums = [r for u in e.uses if (r := _reduce_of(u.operation, rdu.ReduceKind.SUM, e)) is not None]
    if len(sums) != 1 or sums[0].dims.get_values()[0] != dim:
        return None
    s = sums[0].result
    users = {u.operation for u in s.uses}
    last = users.pop() if len(users) == 1 else None
    if not isinstance(last, rdu.MapOp) or last.result.type != x.type:
        return None
    found = _expression(last, {x: "x", m: "m", s: "s", e: _EXP})
    if found not in (_SOFTMAX, _LOG_SOFTMAX):
        return None
    chain = (max_op, exp_map, sums[0])
    element = element_of(x.type)
    if not all(_wide_float(v, element) for v in (x, m, e, s, last.result)) \
            or not _read_by_chain_alone(chain, last, placement):
        return None
    return last, SoftmaxChain(x, dim, found == _LOG_SOFTMAX, chain)


def _read_by_chain_alone(chain: tuple[Operation, ...], last: Operation, placement: Placement) -> bool:
    """The chain's intermediate values are read by the chain's ops alone and
    yielded by none: skipping their steps changes nothing another op reads."""
    inside = {*chain, last}
    values = [op.results[0] for op in chain]
    return not any(v in placement.outs or any(u.operation not in inside for u in v.uses) for v in values)


def _x_kept(max_op: rdu.ReduceOp, last: rdu.MapOp, ops: list[Operation], placement: Placement) -> bool:
    """Nothing from the max up to (not including) the last map writes `x`'s bytes."""
    if max_op not in ops or last not in ops or ops.index(last) < ops.index(max_op):
        return False
    source = placement.read(max_op.input)
    span = ops[ops.index(max_op) + 1:ops.index(last)]
    return source is None or not any(overlap(placement.written(step), source) for step in span)


class SoftmaxChains:
    """The softmax chains of one compute's body that run as one step (module docstring)."""

    def __init__(self, compute: ComputeOp) -> None:
        placement = Placement(compute)
        ops = list(compute.body.block.ops)[:-1]
        self.at_last: dict[rdu.MapOp, SoftmaxChain] = {}
        """Last map -> its chain: the map's step computes the whole chain into its bytes."""
        for op in ops:
            if not isinstance(op, rdu.ReduceOp) or _reduce_of(op, rdu.ReduceKind.MAX, op.input) is None:
                continue
            found = _chain_at(op, placement)
            if found is not None and found[0] not in self.at_last and _x_kept(op, found[0], ops, placement):
                self.at_last[found[0]] = found[1]

    def skipped(self) -> frozenset[Operation]:
        """The chains' intermediate ops, whose steps do not run."""
        return frozenset(op for chain in self.at_last.values() for op in chain.intermediates)


__all__ = ["SoftmaxChain", "SoftmaxChains"]
