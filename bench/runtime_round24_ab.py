"""Same-process A/B of round 24's runtime change at one and two threads (issue 32).

`--change constants`: values of constants and shapes alone (Swin's shifted
windows' mask: `arange`s, comparisons, `masked_fill`, its window partition;
each roll's indices `(arange(n) + shift) % n`; a decoder's causal mask) were
computed on every call, on the calling thread. After, a compute's first run
keeps a copy of each such value some other step reads and binds it every
later run; the steps before it no longer run (`rducc.runtime.constant_values`).
A gather whose one index is constant and a rotated range (Swin-T's 20 roll
gathers: a gather into a temporary, then a copy) copies its rows as two
slices instead. Undone while the before program is compiled and first run
(the steps are made then): no value is constant.

Each chosen full-size zoo model is compiled twice in one process (before,
after) and both are checked against eager (the largest difference) and
against each other (the same bits at each thread count); then at each thread
count eager, before and after are timed interleaved
(`runtime_threads_ab.best_clocks`: least calling-thread CPU, process CPU and
wall over N rounds), and the changed steps (the constant ops' and the
gathers with a constant index: each step's least calling-thread CPU over N
calls, interleaved). Counts, a later call (not the first): the elements the
constant ops' steps compute (a bound value's step and a layout op's view
compute none), those they
copy from a kept value, and the elements gathered into a temporary by a
gather step. Run with `OMP_WAIT_POLICY=PASSIVE` on a
loaded machine.

Run: python bench/runtime_round24_ab.py --change constants [--only NAME ...] [--threads N ...] [--calls N]
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from functools import partial

import numpy as np
import torch
from common import Section  # noqa: F401 - sets one BLAS thread before numpy loads
from runtime_ab import least_steps, programs
from runtime_round18_ab import arguments
from runtime_round22_ab import same_bits_rows
from xdsl.ir import Operation

import rducc
from rducc.dialects.rdu import dataflow as rdu
from rducc.runtime import constant_values, interpreter


@contextlib.contextmanager
def no_constants() -> Iterator[None]:
    """Before: no body value counts as constant."""
    plain = constant_values.constant_values
    constant_values.constant_values = lambda block: set()
    try:
        yield
    finally:
        constant_values.constant_values = plain


Change = tuple[Callable[[], contextlib.AbstractContextManager[None]], list[str]]

CHANGES: dict[str, Change] = {
    "constants": (no_constants, ["swin_t", "gpt2_small", "convnext_t"]),
}
"""Each change: the context it is undone in (while the before program's steps
are made), the models it is for."""


def changed_ops(program: rducc.Program) -> tuple[set[Operation], set[Operation]]:
    """The program's constant body ops, and its gathers with a constant index."""
    constant_ops: set[Operation] = set()
    gathers: set[Operation] = set()
    for op in program.module.walk():
        if op.name == "tier.compute":
            block = op.regions[0].block
            constant = constant_values.constant_values(block)
            constant_ops |= {o for o in block.ops if o.results and o.results[0] in constant}
            gathers |= {o for o in block.ops if isinstance(o, rdu.GatherOp) and len(o.indices) == 1
                        and o.indices[0] in constant and o not in constant_ops}
    return constant_ops, gathers


def element_counts(program: rducc.Program, inputs: tuple, constant_ops: set[Operation], gathers: set[Operation]
                   ) -> tuple[int, int, int]:
    """A later call's (not the first's) elements computed by the constant ops'
    steps, copied by them from a kept value, and gathered into a temporary by
    the gathers with a constant index."""
    computed, copied, gathered = [0], [0], [0]

    def counting(step: Callable, op: Operation) -> None:
        name = getattr(step, "__name__", "")
        if op in gathers and name != "rolled_gather":
            gathered[0] += int(np.prod(op.results[0].type.get_shape()))
        elif op in constant_ops and name not in ("constant", "_noop", "bind"):  # bind: a layout op's view
            counter = copied if name == "copied_constant" else computed
            counter[0] += int(np.prod(op.results[0].type.get_shape()))

    later_call(program, inputs, counting)
    return computed[0], copied[0], gathered[0]


def later_call(program: rducc.Program, inputs: tuple, seen: Callable[[Callable, Operation], None]) -> None:
    """The program's first call (which runs every step and makes the later
    calls' steps), then a later one calling `seen(step, op)` before each of
    its steps (round 25's A/B reuses it)."""
    plain = interpreter.run_steps

    def watched(steps: list, env: list, context: object, where: str) -> None:
        for step, op in steps:
            seen(step, op)
        plain(steps, env, context, where)

    with torch.no_grad():
        program(*inputs)
    interpreter.run_steps = watched
    try:
        with torch.no_grad():
            program(*inputs)
    finally:
        interpreter.run_steps = plain


def main() -> None:
    args = arguments(CHANGES, __doc__)
    undo, models = CHANGES[args.change]
    print("| model | threads | eager ms | before ms | after ms | after / before (thread CPU) | (process CPU) "
          "| (wall) | after / eager (thread CPU) | changed steps ms before -> after | same bits | off eager "
          "| constant elements computed before -> after | copied from a kept value "
          "| gathered elements before -> after |")
    print("| --- " * 15 + "|")
    for name in args.only or models:
        torch.set_num_threads(1)
        model, inputs, before, after = programs(name, undo)
        (constant_b, gathers_b), (constant_a, gathers_a) = changed_ops(before), changed_ops(after)
        ops = constant_b | gathers_b | constant_a | gathers_a
        computed_b, copied_b, gathered_b = element_counts(before, inputs, constant_b, gathers_b)
        computed_a, copied_a, gathered_a = element_counts(after, inputs, constant_a, gathers_a)
        counts = f"{computed_b:,} -> {computed_a:,} | {copied_b:,} -> {copied_a:,} | {gathered_b:,} -> {gathered_a:,}"
        steps = partial(least_steps, [before, after], inputs, args.calls, lambda step, op: False,
                        picked=ops.__contains__)
        same_bits_rows(name, model, inputs, (before, after), args.threads, args.calls, counts, steps)


if __name__ == "__main__":
    with contextlib.suppress(KeyboardInterrupt):
        main()
