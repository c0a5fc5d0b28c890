"""Values of constants and shapes alone, computed once (issue 32).

Some body values depend on nothing a call passes: transformers' Swin builds
its shifted windows' mask from `arange`s, comparisons and `masked_fill`
every forward (12 maps, reshapes and transposes a shifted layer, about
1.5 ms a call at Swin-T's size), and each `torch.roll` is a gather whose
indices are `(arange(n) + shift) % n`. An op is *constant* here when it is
a pure op (`_PURE`: iotas, maps, layout ops, gathers, concatenations) whose
operands are all constant: an iota is the seed. A compute's body arguments
never are (a weight, a buffer or an input is something the user can change),
nor is a reduction or a product (their float sums may round otherwise at
another thread count), so a cached value is what the op would compute on
any later run, bit for bit.

Each constant op whose step computes its value (the interpreter's plain
kernel step, or a layout op's view) is a candidate. After a compute's
first run, which runs every step as before:

- a candidate whose readers are all candidates that no longer run their
  kernel needs no step (`DROP`);
- one that some other step reads, of at most `CACHED_BYTES`, is a copy of
  its first run's value that the program keeps: bound to its slot every run
  (`BIND`) where the value has its own arena bytes, read through its slot
  alone, in a compute whose placement verifies (the conditions under which
  the interpreter binds a fused step's own array), else copied into the
  array its step writes, at its step (`COPY`: a reshape reading its arena
  bytes, an output buffer);
- any other (a layout op's view; a value whose step binds an array of its
  own, a larger one) runs its step as before (`RUN`).

A gather whose one index is constant reads the same rows every run. Where
its first run's indices are a rotated range (`(a + arange(m)) % n`: a
`torch.roll`, or a slice), the later runs copy those rows as at most two
slices (`elementwise.assign`: torch's copy over its pool at more than one
thread, as eager's `roll`) instead of gathering them into a temporary and
copying that: the same elements, so the same bits.
"""

from __future__ import annotations

from collections.abc import Iterable
from enum import Enum

import numpy as np
from xdsl.ir import Block, Operation, SSAValue

from rducc.dialects.rdu import dataflow as rdu
from rducc.runtime.context import RunContext
from rducc.runtime.dtypes import tensor_signature
from rducc.runtime.elementwise import assign
from rducc.runtime.engine import Env, Step

_PURE: tuple[type[Operation], ...] = (
    rdu.IotaOp, rdu.MapOp, rdu.ReshapeOp, rdu.TransposeOp, rdu.BroadcastOp, rdu.SliceOp, rdu.ConcatOp, rdu.GatherOp,
)
"""Body ops whose value is a function of their operands and attributes alone,
the same bits at every thread count."""

CACHED_BYTES = 16 << 20
"""The largest constant value a program keeps a copy of (a causal mask of
2048x2048 f32); a larger one is computed every run, as before."""


class State(Enum):
    """What a constant op's step does on the runs after its compute's first."""

    DROP = "drop"
    BIND = "bind"
    COPY = "copy"
    RUN = "run"


_KEPT = (State.DROP, State.BIND, State.COPY)
"""The states in which a candidate reads no operand on later runs."""


def constant_values(block: Block) -> set[SSAValue]:
    """The values of `block`'s ops computed from constants and shapes alone."""
    constant: set[SSAValue] = set()
    for op in block.ops:
        if isinstance(op, _PURE) and len(op.results) == 1 and all(v in constant for v in op.operands):
            constant.add(op.results[0])
    return constant


def _noop(env: Env, context: RunContext) -> None:
    """A dropped constant op's step: its value is no longer read."""


class ConstantSteps:
    """The candidates of one compute's body, noted as its steps are made
    (`note`), their states decided once all are (`decide`)."""

    def __init__(self, block: Block) -> None:
        self.constant = constant_values(block)
        self._kept: dict[Operation, State] = {}  # candidate -> its state where some other step reads it
        self.states: dict[Operation, State] = {}

    def is_constant(self, op: Operation) -> bool:
        """Whether `op` computes a constant value."""
        return len(op.results) == 1 and op.results[0] in self.constant

    def note(self, op: Operation, checked: Step, dest: int, bindable: bool | None,
             later: list[tuple[Step, Operation]], index: int) -> Step:
        """The first-run step of a candidate `op` (its step `checked`, its
        later one `later[index]`), computing into the slot `dest`; `bindable`:
        its own arena bytes, read through its slot alone, a sound placement
        (None: a layout op's view, which is never kept)."""
        shape, dtype = tensor_signature(op.results[0].type)
        small = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize <= CACHED_BYTES
        self._kept[op] = State.RUN if bindable is None or not small else State.BIND if bindable else State.COPY

        def first_constant(env: Env, context: RunContext) -> None:
            checked(env, context)
            state = self.states.get(op, State.RUN)
            if state is State.DROP:
                later[index] = (_noop, op)
            elif state is State.BIND:
                kept = np.array(env[dest], order="K")  # a copy of its own, in the value's memory order
                env[dest] = kept
                later[index] = (_bound(kept, dest), op)
            elif state is State.COPY:  # (a step binding an array of its own, an ordered map, is bindable)
                later[index] = (_copied(np.array(env[dest], order="K"), dest), op)

        first_constant.__name__ = getattr(checked, "__name__", "first_constant")
        return first_constant

    def decide(self) -> None:
        """Each candidate's state, from the last op back: `DROP` where every
        reader is a candidate that reads no operand on later runs, else the
        state it may be kept in (`note`)."""
        for op in reversed(list(self._kept)):
            readers = {use.operation for use in op.results[0].uses}
            self.states[op] = State.DROP if all(self.states.get(r) in _KEPT for r in readers) else self._kept[op]


def _bound(kept: np.ndarray, dest: int) -> Step:
    def constant(env: Env, context: RunContext) -> None:
        env[dest] = kept

    return constant


def _copied(kept: np.ndarray, dest: int) -> Step:
    def copied_constant(env: Env, context: RunContext) -> None:
        assign(env[dest], kept)

    return copied_constant


def rotated_range(index: np.ndarray, size: int, wraps: bool) -> tuple[int, int] | None:
    """(start, length) where the 1-d `index` into a dim of `size` is
    `(start + arange(length)) % size` with `length <= size`; None otherwise."""
    if index.ndim != 1 or not 0 < index.size <= size or index.dtype.kind not in "iu":
        return None
    rows = index.astype(np.int64) % size if wraps else index.astype(np.int64)
    start = int(rows[0])
    if not 0 <= start < size or not np.array_equal(rows, (start + np.arange(index.size)) % size):
        return None
    return start, index.size


def rolled_gather(checked: Step, source: int, index: int, dest: int, dim: int, wraps: bool, op: Operation,
                  later: list[tuple[Step, Operation]], position: int) -> Step:
    """The first-run step of a gather whose one index is constant: `checked`,
    then, where the index is a rotated range (`rotated_range`), the later
    runs' step (`later[position]`) copies the range's rows as two slices
    (the gather's own step where the result shares memory with the source)."""

    def first_gather(env: Env, context: RunContext) -> None:
        checked(env, context)
        found = rotated_range(np.asarray(env[index]), env[source].shape[dim], wraps)
        if found is not None:
            pieces = _pieces(*found, env[source].shape[dim])
            later[position] = (_slices_step(pieces, source, dest, dim, later[position][0]), op)

    first_gather.__name__ = getattr(checked, "__name__", "first_gather")
    return first_gather


def _pieces(start: int, length: int, size: int) -> list[tuple[slice, slice]]:
    """(rows of the result, rows of the source) copied for a rotated range."""
    head = min(length, size - start)
    pieces = [(slice(0, head), slice(start, start + head))]
    if head < length:
        pieces.append((slice(head, length), slice(0, length - head)))
    return pieces


def _slices_step(pieces: Iterable[tuple[slice, slice]], source: int, dest: int, dim: int, gather: Step) -> Step:
    lead = (slice(None),) * dim
    keys = [(lead + (to,), lead + (of,)) for to, of in pieces]

    def rolled_gather(env: Env, context: RunContext) -> None:
        out, x = env[dest], env[source]
        if np.may_share_memory(out, x):
            gather(env, context)
            return
        for to, of in keys:
            assign(out[to], x[of])

    return rolled_gather

__all__ = ["CACHED_BYTES", "ConstantSteps", "State", "constant_values", "rolled_gather", "rotated_range"]
