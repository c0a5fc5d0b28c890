"""Same-process A/B of round 22's runtime changes at one and two threads (issue 32).

`--change extremes`: a map body's float maximum or minimum of an array and a
constant (ResNet-50's ReLU after each batch norm: `max(x * s + b, 0)`) ran
NumPy's ufunc, whose loop against a scalar is slow (296 us for 802,816
float32 elements at one thread, torch's `threshold` 39 us) and runs on the
calling thread alone while the map's multiply and add before it run split
over torch's pool at two threads. After, it is torch's `threshold`,
`clamp_min` or `clamp_max`, whichever selects as NumPy's ufunc does
(`rducc.runtime.extremes`: the same bits), from 8K elements. Undone while
the before program is compiled and first run (the map bodies are made then).

Each chosen full-size zoo model is compiled twice in one process (before,
after) and both are checked against eager (the largest difference) and
against each other (the same bits at each thread count); then at each
thread count eager, before and after are timed interleaved
(`runtime_threads_ab.best_clocks`: least calling-thread CPU, process CPU and
wall over N rounds), and the changed steps (the map steps that run their
compiled bodies, `_body_step`: each step's least calling-thread CPU over N
calls, interleaved). Counts: the elements a call's
map bodies take a maximum or minimum of on the calling thread with NumPy
(each map body once; a map in a layer's callee counts once), before and after.
Run with `OMP_WAIT_POLICY=PASSIVE` on a loaded machine.

Run: python bench/runtime_round22_ab.py --change extremes [--only NAME ...] [--threads N ...] [--calls N]
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from functools import partial

import numpy as np
import torch
from common import Section  # noqa: F401 - sets one BLAS thread before numpy loads
from runtime_ab import least_steps, outputs, programs, same_bits
from runtime_round18_ab import arguments, timing_cells

import rducc
from rducc.runtime import map_body


def _body_step(step: str, op: str) -> bool:
    """A map step that runs its compiled body (`step`, `step1`, ..., `ordered_map`; not a
    product, convolution or norm run as one kernel with the map folded in)."""
    return op == "rdu.map" and (step.startswith("step") or step.endswith("ordered_map"))


Change = tuple[Callable[[], contextlib.AbstractContextManager[None]], Callable[[str, str], bool], list[str]]

CHANGES: dict[str, Change] = {
    "extremes": (map_body.extremes_as_numpy, lambda step, op: _body_step(step, op), ["resnet50"]),
}
"""Each change: the context it is undone in (while the before program's steps
are made), the steps it changes (by step and op name), the models it is for."""


def numpy_extreme_elements(program: rducc.Program, context: Callable[[], contextlib.AbstractContextManager[None]]
                           ) -> int:
    """Elements of the program's map bodies' NumPy maximum/minimum calls (each
    body once), the bodies compiled inside `context()`."""
    total = 0
    with context():
        for op in program.module.walk():
            if op.name == "rdu.map":
                source = map_body.compile_map(op).source  # type: ignore[attr-defined]
                calls = source.count("np.maximum(") + source.count("np.minimum(")
                total += calls * int(np.prod(op.results[0].type.get_shape()))
    return total


def main() -> None:
    args = arguments(CHANGES, __doc__)
    undo, changed, models = CHANGES[args.change]
    print("| model | threads | eager ms | before ms | after ms | after / before (thread CPU) | (process CPU) "
          "| (wall) | after / eager (thread CPU) | changed steps ms before -> after | same bits | off eager "
          "| NumPy extreme elements before -> after |")
    print("| --- " * 13 + "|")
    for name in args.only or models:
        torch.set_num_threads(1)
        model, inputs, before, after = programs(name, undo)
        plain = numpy_extreme_elements(after, contextlib.nullcontext)
        counts = f"{numpy_extreme_elements(before, undo):,} -> {plain:,}"
        same_bits_rows(name, model, inputs, (before, after), args.threads, args.calls, counts,
                       partial(least_steps, [before, after], inputs, args.calls, changed))


def same_bits_rows(name: str, model: torch.nn.Module, inputs: tuple, pair: tuple[rducc.Program, rducc.Program],
                   thread_counts: list[int], calls: int, counts: str, steps: Callable[[], list[float]]) -> None:
    """One row per thread count: `timing_cells` (`steps()`: the changed steps' ms),
    whether before and after give the same bits, after's largest difference
    from eager, and `counts` (round 24's A/B reuses it)."""
    before, after = pair
    with torch.no_grad():
        expected = outputs(model(*inputs))
        got = outputs(after(*inputs))
        off = max(float(np.abs(g - w).max()) for g, w in zip(got, expected, strict=True))
        for threads in thread_counts:
            torch.set_num_threads(threads)
            same = same_bits(partial(before, *inputs), partial(after, *inputs))
            cells = timing_cells(partial(model, *inputs), partial(before, *inputs), partial(after, *inputs), steps,
                                 calls)
            print(f"| {name} | {threads} | {cells} | {same} | {off:.1e} | {counts} |", flush=True)
    torch.set_num_threads(1)


if __name__ == "__main__":
    main()
