"""Running a partitioned program (rdu-partition) on every socket, with real collectives.

A partitioned module is one SPMD program for the `tp` ranks of a
tensor-parallel group (`rdu.partition = {tp, pp}`). `run_partitioned` runs it
once per rank, each rank in its own thread with its own runner (its own SRAM
arena) and its own part of every split input and weight (`rdu.shard`), in
lockstep: each rank's `RunContext` names the call's run number (one for all
ranks), the group and the rank; a collective (`rducc.runtime.collectives`)
waits for every rank of the group and combines their arrays in rank order
(those of its sub-group, for a `stride`d gather), so every rank gets the
same bits. With pipeline stages
(pp > 1) the thread of rank r runs the sockets `s * tp + r` of every stage s
one after the other (a token goes through the stages in order anyway), and
`rdu.send_recv` hands the value from one stage's socket to the next. Results
that stay split (`rdu.result_shards`) are joined in rank order.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace

import numpy as np
from xdsl.dialects.builtin import ModuleOp

from rducc.dialects.contracts import arg_attrs, is_input, partition_of, result_shards, shard_of, spmd_ranks
from rducc.dialects.program import ENTRY, entry_function
from rducc.dialects.split import Split
from rducc.dialects.tier import GlobalOp
from rducc.errors import RduccError
from rducc.runtime.context import RunContext, RunCounter, SocketGroup
from rducc.runtime.engine import Argument
from rducc.runtime.interpreter import PlacedProgram

Runner = Callable[[list[np.ndarray], dict[str, np.ndarray], RunContext], list[np.ndarray]]
"""Runs one rank's program on its parts: `runner(inputs, weights, context)`."""


def _window(split: Split, shape: Sequence[int], rank: int) -> tuple[np.ndarray, ...]:
    """The open mesh of indices of a whole array of `shape` that `rank` holds (`np.ix_`).
    A dim split by two entries (dp's replicas' blocks of the batch x heads that tp
    splits by heads) holds the indices both give it."""
    axes = [np.arange(n) for n in shape]
    for dim, runs in split.indices(shape, rank):
        held = np.concatenate([np.arange(start, start + length) for start, length in runs])
        axes[dim] = held if len(axes[dim]) == shape[dim] else np.intersect1d(axes[dim], held)
    return np.ix_(*axes)


def _part(array: np.ndarray, split: Split | None, rank: int) -> np.ndarray:
    if split is None:
        return array
    if not split.fits(array.shape):
        raise RduccError(f"an array of shape {list(array.shape)} cannot be split as {split.describe()}")
    return array[_window(split, array.shape, rank)]


def _join(parts: list[np.ndarray], split: Split | None) -> np.ndarray:
    """The whole array from every rank's part (ranks holding the same part agree)."""
    if split is None:
        return parts[0]
    shape = split.whole_shape(parts[0].shape)
    whole = np.empty(shape, parts[0].dtype)
    for rank, part in enumerate(parts):
        whole[_window(split, shape, rank)] = part
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
    runners: Sequence[Runner],
    inputs: Sequence[np.ndarray],
    weights: Mapping[str, np.ndarray],
    entry: str = ENTRY,
    run: int = 1,
) -> list[np.ndarray]:
    """Run the partitioned `module` on all its tp ranks, `runners[r]` running rank r's
    program on its parts in the context of call number `run` (the same on every
    rank, so a replicated random tensor is the same on every rank). The results
    are the whole tensors, as one socket would give."""
    tp = len(runners)
    input_specs, weight_specs, result_splits = shard_specs(module, entry)
    group = SocketGroup(tp)
    outputs: list[list[np.ndarray] | None] = [None] * tp
    errors: list[BaseException] = []

    def rank_main(rank: int, runner: Runner) -> None:
        context = RunContext(run, group, rank)
        try:
            rank_inputs = [_part(np.asarray(x), spec, rank)
                           for x, spec in zip(inputs, input_specs + [None] * len(inputs))]
            rank_weights = {name: _part(np.asarray(value), weight_specs.get(name), rank)
                            for name, value in weights.items()}
            outputs[rank] = runner(rank_inputs, rank_weights, context)
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
        self.module = module
        self.tp, self.pp = partition_of(module)
        self.ranks = spmd_ranks(module)
        """The SPMD ranks of a stage: tp sockets, or dp data-parallel replicas."""
        self._ranks = [PlacedProgram(module) for _ in range(self.ranks)]
        self._runs = RunCounter()
        self.inputs = self._ranks[0].inputs
        """One rank's arguments (their dtypes are the whole inputs' dtypes)."""

    def run(self, inputs: Sequence[np.ndarray], weights: Mapping[str, np.ndarray] | None = None) -> list[np.ndarray]:
        """The whole outputs for the whole inputs and weights (as a one-socket program takes them)."""
        return run_partitioned(self.module, [r.run for r in self._ranks], inputs, weights or {},
                               run=self._runs.next_run())

    __call__ = run


def _whole(argument: Argument, split: Split | None) -> Argument:
    """The whole argument of which `argument` is one rank's part under `split`."""
    if split is None:
        return argument
    return replace(argument, shape=tuple(split.whole_shape(argument.shape)))


def declared_arguments(runner: PlacedProgram | PartitionedProgram) -> tuple[list[Argument], list[Argument]]:
    """The whole inputs and weights `runner.run` takes (a partitioned program's
    split ones made whole), to check files against before reading them."""
    if isinstance(runner, PlacedProgram):
        return runner.inputs, runner.weights
    input_specs, weight_specs, _ = shard_specs(runner.module)
    rank = runner._ranks[0]
    inputs = [_whole(a, s) for a, s in zip(rank.inputs, input_specs + [None] * len(rank.inputs))]
    return inputs, [_whole(w, weight_specs.get(w.name)) for w in rank.weights]


def placed_runner(module: ModuleOp) -> PlacedProgram | PartitionedProgram:
    """The runner of a placed program: `PlacedProgram`, or `PartitionedProgram` when it is split."""
    if spmd_ranks(module) > 1:
        return PartitionedProgram(module)
    return PlacedProgram(module)


__all__ = [
    "PartitionedProgram", "Runner", "SocketGroup", "declared_arguments", "placed_runner", "run_partitioned",
    "shard_specs",
]
