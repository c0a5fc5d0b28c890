"""Numpy implementations of the collectives (`rdu.all_reduce`, `rdu.all_gather`,
`rdu.reduce_scatter`, `rdu.local_part`, `rdu.send_recv`, `rdu.all_to_all`): the ranks of the run context's socket
group meet and each combines the arrays of its replica group (`op.groups`: the
explicit `#rdu.groups`, else `group` ranks `stride` apart) in group order, so
every rank of a group gets the same bits."""

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
    group_of,
)
from rducc.errors import RduccError
from rducc.runtime.context import RunContext, SocketGroup
from rducc.runtime.registry import Kernel, implements

GroupedOp = AllReduceOp | AllGatherOp | ReduceScatterOp | LocalPartOp | AllToAllOp


def _members(context: RunContext, op: GroupedOp) -> tuple[SocketGroup, tuple[int, ...]]:
    """The run's sockets and the ranks of this rank's replica group (`op.groups`),
    in part order; an error when the op's groups do not fit the run's ranks (an
    all-reduce or all-to-all without explicit groups spans every rank)."""
    group = context.socket_group()
    try:
        groups = op.groups(group.size)
    except ValueError:
        groups = ()
    spans_all = isinstance(op, AllReduceOp | AllToAllOp) and op.replica_groups is None
    if not groups or sum(map(len, groups)) != group.size or (spans_all and op.group_size != group.size):
        over = f"group {op.group_size}" + (f" stride {op.stride_size}" if op.stride_size != 1 else "")
        if op.replica_groups is not None:
            over = f"replica groups over {op.replica_groups.ranks} ranks"
        raise RduccError(f"a collective of {over} ran in a group of {group.size} sockets")
    return group, group_of(groups, context.rank)


def _sum(values: list[np.ndarray]) -> np.ndarray:
    """Rank-order sum; floats narrower than f32 (bf16, f16) add in f32 and round once.
    A rank-0 sum (a loss, a count) stays an array, not a numpy scalar."""
    dtype = values[0].dtype
    wide = np.float64 if dtype == np.float64 else np.float32 if dtype.kind in "fV" else dtype
    total = values[0].astype(wide)
    for value in values[1:]:
        total = total + value.astype(wide)
    return np.asarray(total).astype(dtype)


def all_reduce(x: np.ndarray, op: AllReduceOp, context: RunContext) -> np.ndarray:
    """The rank-order sum of the `x` of every rank of this rank's group."""
    sockets, members = _members(context, op)
    return sockets.exchange(context.rank, x, lambda values: _sum([values[r] for r in members]))


def all_gather(x: np.ndarray, op: AllGatherOp, context: RunContext) -> np.ndarray:
    """The `x` of this rank's group joined along the op's `dim` in group order."""
    sockets, members = _members(context, op)
    dim = op.dim.value.data
    return sockets.exchange(context.rank, x, lambda values: np.concatenate([values[r] for r in members], axis=dim))


def reduce_scatter(x: np.ndarray, op: ReduceScatterOp, context: RunContext) -> np.ndarray:
    """This rank's part (its place in its group, along `dim`) of its group's sum of `x`."""
    sockets, members = _members(context, op)
    dim, part = op.dim.value.data, members.index(context.rank)
    return sockets.exchange(context.rank, x, lambda values: np.split(
        _sum([values[r] for r in members]), len(members), axis=dim)[part].copy())


def local_part(x: np.ndarray, op: LocalPartOp, context: RunContext) -> np.ndarray:
    """This rank's part along `dim` of `x`, which every rank holds whole: no exchange."""
    _, members = _members(context, op)
    return np.split(x, len(members), axis=op.dim.value.data)[members.index(context.rank)].copy()


def all_to_all(x: np.ndarray, op: AllToAllOp, context: RunContext) -> np.ndarray:
    """Part `place` (along `split_dim`) of the `x` of every rank of this rank's group
    (`place` this rank's position in it), joined along `concat_dim` in group order."""
    sockets, members = _members(context, op)
    (split_dim, concat_dim), place = op.dims, members.index(context.rank)
    return sockets.exchange(context.rank, x, lambda values: np.concatenate(
        [np.split(values[r], len(members), axis=split_dim)[place] for r in members], axis=concat_dim))


@implements(AllReduceOp)
def _prepare_all_reduce(op: Operation) -> Kernel:
    assert isinstance(op, AllReduceOp)
    return lambda context, x: all_reduce(x, op, context)


@implements(AllGatherOp)
def _prepare_all_gather(op: Operation) -> Kernel:
    assert isinstance(op, AllGatherOp)
    return lambda context, x: all_gather(x, op, context)


@implements(ReduceScatterOp)
def _prepare_reduce_scatter(op: Operation) -> Kernel:
    assert isinstance(op, ReduceScatterOp)
    return lambda context, x: reduce_scatter(x, op, context)


@implements(LocalPartOp)
def _prepare_local_part(op: Operation) -> Kernel:
    assert isinstance(op, LocalPartOp)
    return lambda context, x: local_part(x, op, context)


@implements(AllToAllOp)
def _prepare_all_to_all(op: Operation) -> Kernel:
    assert isinstance(op, AllToAllOp)
    return lambda context, x: all_to_all(x, op, context)


@implements(SendRecvOp)
def _prepare_send_recv(op: Operation) -> Kernel:
    return lambda context, x: np.array(x, copy=True)  # one thread runs both sockets


__all__ = ["all_gather", "all_reduce", "all_to_all", "local_part", "reduce_scatter"]
