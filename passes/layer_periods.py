"""Decoder layers found by structure: the period of a function's op sequence.

A decoder stack runs the same ops once per layer, whatever the source code
looks like (layers called as modules or from the parent's forward, residual
adds in the layer or in the parent, norms at either end). `periodic_units`
finds that repetition in a block's top-level ops, by the ops alone:

1. Each op gets a *shape signature*: its name, its operand and result types
   and the same of the ops in its regions (not its properties: a stacked
   cache's window `kv[i]` has the layer's own offsets, which outlining turns
   into an argument).
2. For each period P, the longest run of ops equal to the op P places later
   makes a periodic stretch of `run + P` ops; the period kept is the one whose
   stretch holds the most ops in whole periods (the shortest such period: a
   layer, not two).
3. The boundary inside the period is *rotated*: of the P places a unit can
   start at, those giving the most whole units are kept, and of them the one
   where the fewest values cross from one unit into the next (the residual
   stream alone, between the last residual add and the next layer's norm:
   the add belongs to the layer that makes it, the norm to the layer that
   reads it).

`rdu-outline-layers` then compares the units op by op (`match_layer`), so a
unit found here is only a candidate: the signature is coarse on purpose.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass

import numpy as np
from xdsl.ir import Block, Operation

MIN_UNITS = 2
"""Fewer repetitions are no layer stack."""


@dataclass(frozen=True)
class Periodic:
    """A periodic stretch `[start, end)` of a block's ops with period `period`."""

    start: int
    end: int
    period: int

    @property
    def whole(self) -> int:
        """Ops in whole periods."""
        return (self.end - self.start) // self.period * self.period


def _signature(op: Operation) -> Hashable:
    """What an op is, shapes included, properties and attributes left out."""
    inner = tuple(_signature(nested) for region in op.regions for nested in region.walk())
    return (op.name, tuple(v.type for v in op.operands), tuple(r.type for r in op.results), inner)


def signatures(ops: Sequence[Operation]) -> np.ndarray:
    """One integer per op: equal integers for ops of equal signature."""
    ids: dict[Hashable, int] = {}
    return np.array([ids.setdefault(_signature(op), len(ids)) for op in ops], dtype=np.int64)


def _longest_run(equal: np.ndarray) -> tuple[int, int]:
    """(start, length) of the longest run of True in `equal` ((0, 0) when none)."""
    edges = np.diff(np.concatenate(([0], equal.astype(np.int8), [0])))
    starts, ends = np.flatnonzero(edges == 1), np.flatnonzero(edges == -1)
    if not len(starts):
        return 0, 0
    longest = int(np.argmax(ends - starts))
    return int(starts[longest]), int(ends[longest] - starts[longest])


def best_period(sig: np.ndarray) -> Periodic | None:
    """The periodic stretch that holds the most ops in whole periods (the shortest period on a tie)."""
    best: Periodic | None = None
    count = len(sig)
    for period in range(1, count // MIN_UNITS + 1):
        if best is not None and (count // period) * period < best.whole:
            continue  # cannot hold more
        start, run = _longest_run(sig[:-period] == sig[period:])
        found = Periodic(start, start + run + period, period)
        if run and (found.end - found.start) // period >= MIN_UNITS and (best is None or found.whole > best.whole):
            best = found
    return best


def _crossing(ops: Sequence[Operation], start: int, stretch: Periodic, index: dict[Operation, int]) -> int:
    """How many values the unit at `start` makes that a later unit of the stretch reads."""
    end = start + stretch.period
    crossing = 0
    for op in ops[start:end]:
        for result in op.results:
            if any(end <= _top(use.operation, index) < stretch.end for use in result.uses):
                crossing += 1
    return crossing


def _top(op: Operation, index: dict[Operation, int]) -> int:
    """The block position of `op` or of the top-level op holding it (-1 elsewhere)."""
    current: Operation | None = op
    while current is not None and current not in index:
        current = current.parent_op()
    return -1 if current is None else index[current]


def rotated_start(ops: Sequence[Operation], stretch: Periodic) -> int:
    """Where the first unit starts: most whole units, then fewest crossing values, then earliest."""
    index = {op: i for i, op in enumerate(ops)}
    choices = range(stretch.start, stretch.start + stretch.period)
    most = max((stretch.end - at) // stretch.period for at in choices)
    candidates = [at for at in choices if (stretch.end - at) // stretch.period == most]
    return min(candidates, key=lambda at: (_crossing(ops, at, stretch, index), at))


def periodic_units(block: Block) -> list[list[Operation]]:
    """The block's repeated units (each a list of consecutive top-level ops), or []
    when nothing repeats at least `MIN_UNITS` times."""
    ops = list(block.ops)
    stretch = best_period(signatures(ops))
    if stretch is None:
        return []
    start = rotated_start(ops, stretch)
    count = (stretch.end - start) // stretch.period
    return [ops[start + k * stretch.period : start + (k + 1) * stretch.period] for k in range(count)]


__all__ = ["Periodic", "best_period", "periodic_units", "rotated_start", "signatures"]
