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
    Groups,
    LocalPartOp,
    ReduceScatterOp,
    SendRecvOp,
    group_of,
    strided_groups,
)
from rducc.errors import RduccError
from rducc.runtime.context import RunContext, SocketGroup
from rducc.runtime.registry import Kernel, implements

GroupedOp = AllReduceOp | AllGatherOp | ReduceScatterOp | LocalPartOp | AllToAllOp


def _members(context: RunContext, group: int, stride: int | None = 1, groups: Groups | None = None
             ) -> tuple[SocketGroup, tuple[int, ...]]:
    """The run's sockets and the ranks of this rank's replica group, in part order:
    of explicit `groups`, else of `group` ranks `stride` apart (stride None: every
    rank, an all-reduce or all-to-all without groups). An error when they do not
    fit the run's ranks."""
    sockets = context.socket_group()
    found: Groups = ()
    if groups is not None:
        found = groups
    elif stride is None:
        found = ((*range(sockets.size),),) if group == sockets.size else ()
    elif sockets.size % (group * stride) == 0:
        found = strided_groups(group, stride, sockets.size)
    if not found or sum(map(len, found)) != sockets.size:
        over = (f"replica groups over {sum(map(len, groups))} ranks" if groups is not None
                else f"group {group}" + (f" stride {stride}" if stride not in (None, 1) else ""))
        raise RduccError(f"a collective of {over} ran in a group of {sockets.size} sockets")
    return sockets, group_of(found, context.rank)


def _sum(values: list[np.ndarray]) -> np.ndarray:
    """Rank-order sum; floats narrower than f32 (bf16, f16) add in f32 and round once.
    A rank-0 sum (a loss, a count) stays an array, not a numpy scalar."""
    dtype = values[0].dtype
    wide = np.float64 if dtype == np.float64 else np.float32 if dtype.kind in "fV" else dtype
    total = values[0].astype(wide)
    for value in values[1:]:
        total = total + value.astype(wide)
    return np.asarray(total).astype(dtype)


def all_reduce(x: np.ndarray, group: int, context: RunContext, groups: Groups | None = None) -> np.ndarray:
    """The rank-order sum of the `x` of every rank of this rank's group (every rank without `groups`)."""
    sockets, members = _members(context, group, None, groups)
    return sockets.exchange(context.rank, x, lambda values: _sum([values[r] for r in members]))


def all_gather(x: np.ndarray, dim: int, group: int, context: RunContext, stride: int = 1,
               groups: Groups | None = None) -> np.ndarray:
    """The `x` of this rank's group (`group` ranks `stride` apart, or its explicit
    `groups` one) joined along `dim` in group order."""
    sockets, members = _members(context, group, stride, groups)
    return sockets.exchange(context.rank, x, lambda values: np.concatenate([values[r] for r in members], axis=dim))


def reduce_scatter(x: np.ndarray, dim: int, group: int, context: RunContext, stride: int = 1,
                   groups: Groups | None = None) -> np.ndarray:
    """This rank's part (its place in its group, along `dim`) of its group's sum of `x`."""
    sockets, members = _members(context, group, stride, groups)
    part = members.index(context.rank)
    return sockets.exchange(context.rank, x, lambda values: np.split(
        _sum([values[r] for r in members]), len(members), axis=dim)[part].copy())


def local_part(x: np.ndarray, dim: int, group: int, context: RunContext, stride: int = 1,
               groups: Groups | None = None) -> np.ndarray:
    """This rank's part along `dim` of `x`, which every rank holds whole: no exchange."""
    _, members = _members(context, group, stride, groups)
    return np.split(x, len(members), axis=dim)[members.index(context.rank)].copy()


def all_to_all(x: np.ndarray, split_dim: int, concat_dim: int, group: int, context: RunContext,
               groups: Groups | None = None) -> np.ndarray:
    """Part `place` (along `split_dim`) of the `x` of every rank of this rank's group
    (`place` this rank's position in it), joined along `concat_dim` in group order."""
    sockets, members = _members(context, group, None, groups)
    place = members.index(context.rank)
    return sockets.exchange(context.rank, x, lambda values: np.concatenate(
        [np.split(values[r], len(members), axis=split_dim)[place] for r in members], axis=concat_dim))


def _explicit(op: GroupedOp) -> Groups | None:
    return op.replica_groups.value() if op.replica_groups is not None else None


@implements(AllReduceOp)
def _prepare_all_reduce(op: Operation) -> Kernel:
    assert isinstance(op, AllReduceOp)
    group, groups = op.group_size, _explicit(op)
    return lambda context, x: all_reduce(x, group, context, groups)


@implements(AllGatherOp)
def _prepare_all_gather(op: Operation) -> Kernel:
    assert isinstance(op, AllGatherOp)
    dim, group, stride, groups = op.dim.value.data, op.group_size, op.stride_size, _explicit(op)
    return lambda context, x: all_gather(x, dim, group, context, stride, groups)


@implements(ReduceScatterOp)
def _prepare_reduce_scatter(op: Operation) -> Kernel:
    assert isinstance(op, ReduceScatterOp)
    dim, group, stride, groups = op.dim.value.data, op.group_size, op.stride_size, _explicit(op)
    return lambda context, x: reduce_scatter(x, dim, group, context, stride, groups)


@implements(LocalPartOp)
def _prepare_local_part(op: Operation) -> Kernel:
    assert isinstance(op, LocalPartOp)
    dim, group, stride, groups = op.dim.value.data, op.group_size, op.stride_size, _explicit(op)
    return lambda context, x: local_part(x, dim, group, context, stride, groups)


@implements(AllToAllOp)
def _prepare_all_to_all(op: Operation) -> Kernel:
    assert isinstance(op, AllToAllOp)
    (split_dim, concat_dim), group, groups = op.dims, op.group_size, _explicit(op)
    return lambda context, x: all_to_all(x, split_dim, concat_dim, group, context, groups)


@implements(SendRecvOp)
def _prepare_send_recv(op: Operation) -> Kernel:
    return lambda context, x: np.array(x, copy=True)  # one thread runs both sockets


__all__ = ["all_gather", "all_reduce", "all_to_all", "local_part", "reduce_scatter"]
