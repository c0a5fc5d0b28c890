"""Partial sums over groups of ranks for `rdu-partition{tp=N}` (`GroupPartial`).

A sum along a dim split over a factor of the ranks, not over all of them,
is a partial sum over that factor's groups only: with more ranks than
grouped-query KV heads (16 ranks, 8 KV heads, a KV head held by a rank pair)
the backward sums each KV head's gradient over the query heads it serves,
split between the pair, so the pair's two values add up to the KV head's
gradient (and the 8 pairs hold the 8 heads). `GroupPartial` is that layout:
the whole value laid out as `split` over the other factors, summed over the
`parts` ranks `stride` apart. It flows through ops linear in it (`linear_in`:
reshapes, transposes, slices, maps that add, negate or scale it, a scatter
into zeros, a matmul or sum), meets a contraction over the KV heads (the
input gradient through k and v: the factors combine, a partial sum over every
rank, `combined`) and is made whole where an op needs it so by one
`rdu.all_reduce` over its groups (replica groups of `parts` ranks `stride`
apart): the KV weights' gradients are all-reduced over the pair, split as
the weights are, and neither they nor the weights are all-gathered.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from xdsl.ir import Operation, SSAValue

from rducc.dialects.rdu.dataflow import (
    BroadcastOp,
    ConcatOp,
    MapOp,
    MatmulOp,
    ReduceKind,
    ReduceOp,
    ReshapeOp,
    ScatterOp,
    SliceOp,
    TransposeOp,
)
from rducc.dialects.split import Split
from rducc.passes.rdu_partition.training import fill_value


@dataclass(frozen=True)
class GroupPartial:
    """A partial sum over groups of ranks: adding the values of the `parts` ranks
    `stride` apart (rank r's group: the ranks whose `(rank // stride) % parts`
    differs and the rest is r's) gives the whole value, held as `split` (None:
    replicated) over the ranks' other factors."""

    split: Split | None
    parts: int
    stride: int

    def describe(self) -> str:
        held = self.split.describe() if self.split is not None else "replicated"
        return f"a partial sum over {self.parts} ranks {self.stride} apart, {held}"


def disjoint(split: Split | None, parts: int, stride: int, tp: int) -> bool:
    """Whether the factor (`parts`, `stride`) of `tp` ranks is one `split` does not use."""
    entries = [*(split.entries if split is not None else ()), (-1, parts, stride, 0)]
    return parts > 1 and Split(tuple(sorted(entries))).valid(tp)


def combined(first: tuple[int, int], second: tuple[int, int]) -> tuple[int, int] | None:
    """The one factor (parts, stride) two adjacent factors of the ranks make, else None."""
    (low_parts, low_stride), (high_parts, high_stride) = sorted((first, second), key=lambda f: f[1])
    return (low_parts * high_parts, low_stride) if low_stride * low_parts == high_stride else None


def linear_in(op: Operation, partial: Sequence[int]) -> bool:
    """Whether `op`'s result is linear in its operands at positions `partial` (the
    partial sums), the others held equal over their groups: the sum over a group
    of the results is then the result of the sums. Layout ops of one operand; a
    sum; a matmul of one partial operand; a concatenation of partial operands; a
    scatter of a partial source into zeros or a partial input; a map whose body
    only adds, subtracts and negates partial values, casts them, and multiplies
    or divides them by values that do not depend on them."""
    count = len(op.operands)
    if isinstance(op, ReshapeOp | TransposeOp | SliceOp | BroadcastOp):
        return list(partial) == [0]
    if isinstance(op, ReduceOp):
        return op.kind.data == ReduceKind.SUM
    if isinstance(op, MatmulOp):
        return len(partial) == 1
    if isinstance(op, ConcatOp):
        return len(partial) == count
    if isinstance(op, ScatterOp):
        zeros = fill_value(op.input) == 0.0
        return op.reduce is None and 2 in partial and 1 not in partial and (0 in partial or zeros)
    if isinstance(op, MapOp):
        return _linear_body(op, set(partial))
    return False


_ADDITIVE = ("arith.addf", "arith.subf")
_CASTS = ("arith.extf", "arith.truncf", "arith.negf")
_SCALES = ("arith.mulf", "arith.divf")


def _linear_body(op: MapOp, partial: set[int]) -> bool:
    """Whether a map's yielded value is linear in the block arguments at `partial` (see `linear_in`)."""
    block = op.body.block
    linear: set[SSAValue] = {block.args[i] for i in partial}
    tainted = set(linear)
    for inner in list(block.ops)[:-1]:
        reads = [v in tainted for v in inner.operands]
        if not any(reads):
            continue
        lin = [v in linear for v in inner.operands]
        if inner.name in _ADDITIVE and all(lin):
            linear.add(inner.results[0])
        elif inner.name in _CASTS and all(lin):
            linear.add(inner.results[0])
        elif inner.name in _SCALES and lin[0] and not reads[1]:
            linear.add(inner.results[0])
        elif inner.name == "arith.mulf" and lin[1] and not reads[0]:
            linear.add(inner.results[0])
        tainted.update(inner.results)
    yielded = block.last_op
    return yielded is not None and len(yielded.operands) == 1 and yielded.operands[0] in linear
