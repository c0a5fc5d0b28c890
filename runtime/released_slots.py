"""Arrays a compute's steps bind each run, let go after their last reader (issue 32).

Some steps bind a new array to their value's slot every run instead of
writing into the value's arena bytes: a fused layer norm's or a
convolution's result as ATen allocates it (`interpreter._norm_step`,
`_conv_step`: `fresh`), a layout op's view of its operand
(`rducc.runtime.layout_views`). The slot kept that array to the end of the
call, so each such allocation was served from memory the previous call had
written, long out of the caches: ATen's kernels then wrote their results
through cache misses (ViT-B/16's layer norms 0.24 ms each in the program
against 0.11 ms in eager, 0.05 ms on memory just freed). Eager frees a
tensor at its last use, and its allocator hands that memory, still cached,
to the next op.

The first run of a compute's body records which slots each step reads and
which it binds (`Recorder`; a step that reads the table otherwise than by
index makes the record void: nothing is let go). Every later run, right
after the last step that reads or binds a slot some step bound, puts back
the array the slot held when the body started (its arena view, or nothing),
so the bound array is freed there (`released`). Not let go: a slot read
before the body binds it (its value comes from outside the body), and the
slots the compute reads after its steps (`keep`: the yields copied into
their outputs). The steps and the slots they touch are the same every run
(the program's shapes are static).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Any, SupportsIndex

from xdsl.ir import Operation

from rducc.runtime.context import RunContext
from rducc.runtime.engine import Env, Step


class Recorder(list[Any]):
    """A run's value table that records, per step (`step`: the index of the
    step running), the slots read by index and the slots bound."""

    def __init__(self, env: Env) -> None:
        super().__init__(env)
        self.step = 0
        self.reads: dict[int, int] = {}
        """Slot -> the last step that read it."""
        self.first_read: dict[int, int] = {}
        self.binds: dict[int, int] = {}
        """Slot -> the first step that bound it."""
        self.void = False

    def __getitem__(self, index: Any) -> Any:
        if isinstance(index, SupportsIndex) and not isinstance(index, bool):
            slot = index.__index__()
            self.reads[slot] = self.step
            self.first_read.setdefault(slot, self.step)
        else:
            self.void = True
        return super().__getitem__(index)

    def __setitem__(self, index: Any, value: Any) -> None:
        if isinstance(index, SupportsIndex) and not isinstance(index, bool):
            self.binds.setdefault(index.__index__(), self.step)
        else:
            self.void = True
        super().__setitem__(index, value)

    def __iter__(self) -> Any:
        self.void = True
        return super().__iter__()

    def releases(self, start: Env, keep: Collection[int]) -> dict[int, list[tuple[int, Any]]]:
        """Step index -> the (slot, array at the body's start) to put back after it."""
        if self.void:
            return {}
        after: dict[int, list[tuple[int, Any]]] = {}
        for slot, bound in self.binds.items():
            if slot in keep or self.first_read.get(slot, bound) < bound:
                continue
            last = max(bound, self.reads.get(slot, bound))
            after.setdefault(last, []).append((slot, start[slot]))
        return after


def released(steps: Sequence[tuple[Step, Operation]],
             after: dict[int, list[tuple[int, Any]]]) -> list[tuple[Step, Operation]]:
    """`steps`, each followed by putting back the arrays `after` names for it."""
    return [(step if index not in after else _then_put_back(step, after[index]), op)
            for index, (step, op) in enumerate(steps)]


def _then_put_back(step: Step, slots: list[tuple[int, Any]]) -> Step:
    def put_back(env: Env, context: RunContext) -> None:
        step(env, context)
        for slot, array in slots:
            env[slot] = array

    put_back.__name__ = getattr(step, "__name__", "put_back")  # profiles name the step it wraps
    return put_back


def recorded(steps: Sequence[tuple[Step, Operation]], recorder: Recorder) -> list[tuple[Step, Operation]]:
    """`steps`, each telling `recorder` its index before it runs."""
    return [(_numbered(step, index, recorder), op) for index, (step, op) in enumerate(steps)]


def _numbered(step: Step, index: int, recorder: Recorder) -> Step:
    def numbered(env: Env, context: RunContext) -> None:
        recorder.step = index
        step(env, context)

    numbered.__name__ = getattr(step, "__name__", "numbered")
    return numbered


__all__ = ["Recorder", "recorded", "released"]
