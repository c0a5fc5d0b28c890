"""Vocab-parallel reductions and indexing for `rdu-partition{tp=N}` (Megatron's
vocab-parallel cross entropy, as a rule of the general ops, not of one model).

Under tp the output layer's weight is split by output columns, so the logits
(and the log-probabilities a log_softmax makes of them) are split along the
vocabulary. The ops of a cross entropy then stay split:

- a **max or min along a split dim** (log_softmax's max for stability): each
  rank reduces its part, the small results (one per rank, size 1 along the dim)
  are all-gathered and reduced again (`rdu_partition._partition_split_extreme`);
  the sum of exps along the dim is a partial sum (all-reduced) as any sum;
- a **gather of each row's target** (torch.gather of the log-probabilities at
  the labels: an index along the split dim, ramps along the others): each rank
  gathers at `index - offset` where that lies in its part, zero elsewhere: a
  partial sum whose all-reduce (a few floats a row) gives every rank the
  targets' values;
- its backward, a **scatter into a fill along the split dim** (the one-hot of
  the targets, scatter-add or one write a row), is made by each rank for its
  part: indices outside it write nothing (their value goes to position 0 as the
  fill, or as 0 added), so the gradient of the logits stays split and the
  output layer's backward matmuls take it split (dW split as W, dX a partial sum).

The helpers below build the index arithmetic (`rdu.map`s of i64) each rank runs.
"""

from __future__ import annotations

from xdsl.dialects import arith
from xdsl.dialects.builtin import FloatAttr, IntegerAttr, IntegerType, TensorType, i1, i64
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue

from rducc.dialects.rdu.collectives import LocalPartOp
from rducc.dialects.rdu.dataflow import IotaOp, MapOp, YieldOp


def rank_offset(part: int, ranks: int) -> tuple[Operation, Operation]:
    """The first index of this rank's part of a dim split `ranks` ways in parts of
    `part`: `[0, part, 2 part, ...]` (`rdu.iota`), this rank's element (`rdu.local_part`), shape [1]."""
    ramp = IotaOp(0, part, TensorType(i64, [ranks]))
    mine = LocalPartOp(ramp.result, 0, ranks, TensorType(i64, [1]))
    return ramp, mine


def _constant(value: float | int, element: Attribute) -> arith.ConstantOp:
    if isinstance(element, IntegerType):
        return arith.ConstantOp(IntegerAttr(int(value), element))
    return arith.ConstantOp(FloatAttr(float(value), element))  # type: ignore[call-overload]


def local_index(index: SSAValue, offset: SSAValue) -> MapOp:
    """`index - offset` (i64), the index within this rank's part."""
    element = index.type.element_type  # type: ignore[attr-defined]
    block = Block(arg_types=[element, i64])
    moved = arith.SubiOp(block.args[0], block.args[1]) if element == i64 else None
    assert moved is not None, "indices are i64 after import"
    block.add_ops([moved, YieldOp(moved.result)])
    return MapOp([index, offset], index.type, Region(block))


def in_part(local: SSAValue, part: int) -> MapOp:
    """`0 <= local < part` (i1): whether an index lies in this rank's part."""
    block = Block(arg_types=[i64])
    zero, size = _constant(0, i64), _constant(part, i64)
    low = arith.CmpiOp(block.args[0], zero.result, "sge")
    high = arith.CmpiOp(block.args[0], size.result, "slt")
    both = arith.AndIOp(low.result, high.result)
    block.add_ops([zero, size, low, high, both, YieldOp(both.result)])
    return MapOp([local], TensorType(i1, local.type.get_shape()), Region(block))  # type: ignore[attr-defined]


def where(mask: SSAValue, value: SSAValue, other: float | int) -> MapOp:
    """`value` where `mask`, else the constant `other` (of `value`'s element type)."""
    element = value.type.element_type  # type: ignore[attr-defined]
    block = Block(arg_types=[i1, element])
    constant = _constant(other, element)
    chosen = arith.SelectOp(block.args[0], block.args[1], constant.result)
    block.add_ops([constant, chosen, YieldOp(chosen.result)])
    shape = value.type.get_shape()  # type: ignore[attr-defined]
    return MapOp([mask, value], TensorType(element, shape), Region(block))


__all__ = ["in_part", "local_index", "rank_offset", "where"]
