"""Numpy implementations of the collectives (`rdu.all_reduce`, `rdu.all_gather`,
`rdu.reduce_scatter`, `rdu.local_part`, `rdu.send_recv`, `rdu.all_to_all`): the ranks of the run context's socket
group meet and combine their arrays in rank order, so every rank gets the
same bits."""

from __future__ import annotations

import numpy as np
from xdsl.ir import Operation

from rducc.dialects.rdu.collectives import (
    AllGatherOp,
    AllReduceOp,
    AllToAllOp,
    LocalPartOp,
    ReduceScatterOp,
    SendRecvOp,
)
from rducc.errors import RduccError
from rducc.runtime.context import RunContext, SocketGroup
from rducc.runtime.registry import Kernel, implements


def _check_group(context: RunContext, op_group: int, stride: int | None = None) -> SocketGroup:
    """The run's group; a collective over every rank (stride None) must name the
    group's size, one over a factor (`stride`) a factor of it."""
    group = context.socket_group()
    if op_group != group.size if stride is None else group.size % (op_group * stride):
        over = f"group {op_group}" + ("" if stride is None else f" stride {stride}")
        raise RduccError(f"a collective of {over} ran in a group of {group.size} sockets")
    return group


def _subgroup(values: list[np.ndarray], rank: int, parts: int, stride: int) -> list[np.ndarray]:
    """The values of the ranks in `rank`'s group of `parts` ranks `stride` apart, in order."""
    base = rank - ((rank // stride) % parts) * stride
    return [values[base + index * stride] for index in range(parts)]


def _sum(values: list[np.ndarray]) -> np.ndarray:
    """Rank-order sum; floats narrower than f32 (bf16, f16) add in f32 and round once.
    A rank-0 sum (a loss, a count) stays an array, not a numpy scalar."""
    dtype = values[0].dtype
    wide = np.float64 if dtype == np.float64 else np.float32 if dtype.kind in "fV" else dtype
    total = values[0].astype(wide)
    for value in values[1:]:
        total = total + value.astype(wide)
    return np.asarray(total).astype(dtype)


def all_reduce(x: np.ndarray, group: int, context: RunContext) -> np.ndarray:
    """The rank-order sum of every rank's `x`."""
    return _check_group(context, group).exchange(context.rank, x, _sum)


def all_gather(x: np.ndarray, dim: int, group: int, context: RunContext, stride: int = 1) -> np.ndarray:
    """The `x` of the `group` ranks `stride` apart, joined along `dim` in rank order."""
    rank = context.rank
    return _check_group(context, group, stride).exchange(
        rank, x, lambda values: np.concatenate(_subgroup(values, rank, group, stride), axis=dim))


def reduce_scatter(x: np.ndarray, dim: int, group: int, context: RunContext, stride: int = 1) -> np.ndarray:
    """This rank's part (along `dim`) of the sum of its sub-group's `x`."""
    rank = context.rank
    part = (rank // stride) % group
    return _check_group(context, group, stride).exchange(
        rank, x, lambda values: np.split(_sum(_subgroup(values, rank, group, stride)), group, axis=dim)[part].copy())


def local_part(x: np.ndarray, dim: int, group: int, context: RunContext, stride: int = 1) -> np.ndarray:
    """This rank's part along `dim` of `x`, which every rank holds whole: no exchange."""
    _check_group(context, group, stride)
    return np.split(x, group, axis=dim)[(context.rank // stride) % group].copy()


def all_to_all(x: np.ndarray, split_dim: int, concat_dim: int, group: int, context: RunContext) -> np.ndarray:
    """Part `rank` (along `split_dim`) of every rank's `x`, joined along `concat_dim` in rank order."""
    rank = context.rank
    return _check_group(context, group).exchange(
        rank, x, lambda values: np.concatenate([np.split(v, group, axis=split_dim)[rank] for v in values],
                                               axis=concat_dim))


@implements(AllReduceOp)
def _prepare_all_reduce(op: Operation) -> Kernel:
    assert isinstance(op, AllReduceOp)
    group = op.group_size
    return lambda context, x: all_reduce(x, group, context)


@implements(AllGatherOp)
def _prepare_all_gather(op: Operation) -> Kernel:
    assert isinstance(op, AllGatherOp)
    dim, group, stride = op.dim.value.data, op.group_size, op.stride_size
    return lambda context, x: all_gather(x, dim, group, context, stride)


@implements(ReduceScatterOp)
def _prepare_reduce_scatter(op: Operation) -> Kernel:
    assert isinstance(op, ReduceScatterOp)
    dim, group, stride = op.dim.value.data, op.group_size, op.stride_size
    return lambda context, x: reduce_scatter(x, dim, group, context, stride)


@implements(LocalPartOp)
def _prepare_local_part(op: Operation) -> Kernel:
    assert isinstance(op, LocalPartOp)
    dim, group, stride = op.dim.value.data, op.group_size, op.stride_size
    return lambda context, x: local_part(x, dim, group, context, stride)


@implements(AllToAllOp)
def _prepare_all_to_all(op: Operation) -> Kernel:
    assert isinstance(op, AllToAllOp)
    (split_dim, concat_dim), group = op.dims, op.group_size
    return lambda context, x: all_to_all(x, split_dim, concat_dim, group, context)


@implements(SendRecvOp)
def _prepare_send_recv(op: Operation) -> Kernel:
    return lambda context, x: np.array(x, copy=True)  # one thread runs both sockets


__all__ = ["all_gather", "all_reduce", "all_to_all", "local_part", "reduce_scatter"]
