"""Running a partitioned program (rdu-partition) on every socket, with real collectives.

A partitioned module is one SPMD program for the `tp` ranks of a
tensor-parallel group (`rdu.partition = {tp, pp}`). `run_partitioned` runs it
once per rank, each rank in its own thread with its own runner (its own SRAM
arena) and its own part of every split input and weight (`rdu.shard`), in
lockstep: a collective (`rdu.all_reduce`, `rdu.all_gather`,
`rdu.reduce_scatter`) waits for every rank of the group and combines their
arrays in rank order (those of its sub-group, for a `stride`d gather), so
every rank gets the same bits. With pipeline stages
(pp > 1) the thread of rank r runs the sockets `s * tp + r` of every stage s
one after the other (a token goes through the stages in order anyway), and
`rdu.send_recv` hands the value from one stage's socket to the next. Results
that stay split (`rdu.result_shards`) are joined in rank order.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
from xdsl.dialects.builtin import ModuleOp

from rducc.dialects.collectives import AllGatherOp, AllReduceOp, ReduceScatterOp, SendRecvOp
from rducc.dialects.contracts import Split, arg_attrs, is_input, partition_of, result_shards, shard_of
from rducc.dialects.memory import GlobalOp
from rducc.dialects.program import ENTRY, entry_function
from rducc.errors import RduccError

_current = threading.local()


class SocketGroup:
    """The ranks of one tensor-parallel group, meeting at each collective."""

    def __init__(self, size: int):
        self.size = size
        self._barrier = threading.Barrier(size)
        self._slots: list[np.ndarray | None] = [None] * size

    def exchange(self, rank: int, value: np.ndarray, combine: Callable[[list[np.ndarray]], np.ndarray]) -> np.ndarray:
        """`combine` of every rank's `value` in rank order (every rank must call it).
        A rank's value may be a view of its SRAM arena: every rank combines
        before any rank goes on to overwrite it."""
        self._slots[rank] = value
        self._barrier.wait()
        result = combine(list(self._slots))  # type: ignore[arg-type]
        self._barrier.wait()
        return result

    def abort(self) -> None:
        """Release the other ranks when one fails."""
        self._barrier.abort()


def _rank() -> tuple[SocketGroup, int]:
    group = getattr(_current, "group", None)
    if group is None:
        raise RduccError(
            "a collective ran outside a multi-socket run: run a partitioned program with "
            "rducc.runtime.sockets.run_partitioned (rducc-run and rducc.Program do)"
        )
    return group, _current.rank


def _check_group(op_group: int, stride: int | None = None) -> tuple[SocketGroup, int]:
    """The group and rank; a collective over every rank (stride None) must name the
    group's size, one over a factor (`stride`) a factor of it."""
    group, rank = _rank()
    if op_group != group.size if stride is None else group.size % (op_group * stride):
        over = f"group {op_group}" + ("" if stride is None else f" stride {stride}")
        raise RduccError(f"a collective of {over} ran in a group of {group.size} sockets")
    return group, rank


def _subgroup(values: list[np.ndarray], rank: int, parts: int, stride: int) -> list[np.ndarray]:
    """The values of the ranks in `rank`'s group of `parts` ranks `stride` apart, in order."""
    base = rank - ((rank // stride) % parts) * stride
    return [values[base + index * stride] for index in range(parts)]


def _sum(values: list[np.ndarray]) -> np.ndarray:
    """Rank-order sum; floats narrower than f32 (bf16, f16) add in f32 and round once."""
    dtype = values[0].dtype
    wide = np.float64 if dtype == np.float64 else np.float32 if dtype.kind in "fV" else dtype
    total = values[0].astype(wide)
    for value in values[1:]:
        total = total + value.astype(wide)
    return total.astype(dtype)


def all_reduce(x: np.ndarray, group: int) -> np.ndarray:
    sockets, rank = _check_group(group)
    return sockets.exchange(rank, x, _sum)


def all_gather(x: np.ndarray, dim: int, group: int, stride: int = 1) -> np.ndarray:
    sockets, rank = _check_group(group, stride)
    return sockets.exchange(
        rank, x, lambda values: np.concatenate(_subgroup(values, rank, group, stride), axis=dim))


def reduce_scatter(x: np.ndarray, dim: int, group: int, stride: int = 1) -> np.ndarray:
    sockets, rank = _check_group(group, stride)
    part = (rank // stride) % group
    return sockets.exchange(
        rank, x, lambda values: np.split(_sum(_subgroup(values, rank, group, stride)), group, axis=dim)[part].copy())


def collective_kernel(op: Any) -> Callable[..., np.ndarray]:
    """The NumPy kernel of a collective op (for the executor and the interpreter)."""
    if isinstance(op, AllReduceOp):
        return lambda x: all_reduce(x, op.group_size)
    if isinstance(op, AllGatherOp):
        dim, stride = op.dim.value.data, op.stride_size
        return lambda x: all_gather(x, dim, op.group_size, stride)
    if isinstance(op, ReduceScatterOp):
        dim, stride = op.dim.value.data, op.stride_size
        return lambda x: reduce_scatter(x, dim, op.group_size, stride)
    if isinstance(op, SendRecvOp):
        return lambda x: np.array(x, copy=True)  # this thread runs both sockets
    raise RduccError(f"'{op.name}' is not a collective")


def _part(array: np.ndarray, split: Split | None, rank: int) -> np.ndarray:
    if split is None:
        return array
    for dim, parts, _ in split.entries:
        if dim >= array.ndim or array.shape[dim] % parts:
            raise RduccError(f"an array of shape {list(array.shape)} cannot be split {parts} ways along dim {dim}")
    return array[split.slices(array.shape, rank)]


def _join(parts: list[np.ndarray], split: Split | None) -> np.ndarray:
    """The whole array from every rank's part (ranks holding the same part agree)."""
    if split is None:
        return parts[0]
    shape = list(parts[0].shape)
    for dim, count, _ in split.entries:
        shape[dim] *= count
    whole = np.empty(shape, parts[0].dtype)
    for rank, part in enumerate(parts):
        whole[split.slices(shape, rank)] = part
    return whole


def shard_specs(module: ModuleOp, entry: str = ENTRY):
    """(per user input, by weight name, per result) the (dim, parts) each is split by, or None."""
    function = entry_function(module, entry)
    inputs = [shard_of(a) for a in arg_attrs(function) if is_input(a)]
    weights = {g.sym_name.data: split for g in module.ops
               if isinstance(g, GlobalOp) and (split := shard_of(g)) is not None}
    return inputs, weights, result_shards(function)


def run_partitioned(
    module: ModuleOp,
    runners: Sequence[Callable[[list[np.ndarray], dict[str, np.ndarray]], list[np.ndarray]]],
    inputs: Sequence[np.ndarray],
    weights: Mapping[str, np.ndarray],
    entry: str = ENTRY,
) -> list[np.ndarray]:
    """Run the partitioned `module` on all its tp ranks, `runners[r]` running rank r's
    program on its parts. The results are the whole tensors, as one socket would give."""
    tp = len(runners)
    input_specs, weight_specs, result_splits = shard_specs(module, entry)
    group = SocketGroup(tp)
    outputs: list[list[np.ndarray] | None] = [None] * tp
    errors: list[BaseException] = []

    def rank_main(rank: int, runner: Any) -> None:
        _current.group, _current.rank = group, rank
        try:
            rank_inputs = [_part(np.asarray(x), spec, rank)
                           for x, spec in zip(inputs, input_specs + [None] * len(inputs))]
            rank_weights = {name: _part(np.asarray(value), weight_specs.get(name), rank)
                            for name, value in weights.items()}
            outputs[rank] = runner(rank_inputs, rank_weights)
        except threading.BrokenBarrierError:
            pass
        except BaseException as error:  # noqa: BLE001 - re-raised by the caller's thread
            errors.append(error)
            group.abort()

    threads = [threading.Thread(target=rank_main, args=(r, runners[r]), daemon=True) for r in range(tp)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if errors:
        raise errors[0]
    ranks = [o for o in outputs if o is not None]
    return [_join([r[index] for r in ranks], result_splits[index] if index < len(result_splits) else None)
            for index in range(len(ranks[0]))]


class PartitionedProgram:
    """A placed, partitioned program ready to run on all its sockets (one runner a rank)."""

    def __init__(self, module: ModuleOp):
        from rducc.runtime.interpreter import PlacedProgram

        self.module = module
        self.tp, self.pp = partition_of(module)
        self._ranks = [PlacedProgram(module) for _ in range(self.tp)]
        self.inputs = self._ranks[0].inputs
        """One rank's arguments (their dtypes are the whole inputs' dtypes)."""

    def run(self, inputs: Sequence[np.ndarray], weights: Mapping[str, np.ndarray] | None = None) -> list[np.ndarray]:
        """The whole outputs for the whole inputs and weights (as a one-socket program takes them)."""
        return run_partitioned(self.module, [r.run for r in self._ranks], inputs, weights or {})

    __call__ = run


def placed_runner(module: ModuleOp) -> Any:
    """The runner of a placed program: `PlacedProgram`, or `PartitionedProgram` when it is split."""
    if partition_of(module)[0] > 1:
        return PartitionedProgram(module)
    from rducc.runtime.interpreter import PlacedProgram

    return PlacedProgram(module)


__all__ = ["SocketGroup", "PartitionedProgram", "collective_kernel", "placed_runner", "run_partitioned",
           "shard_specs"]
