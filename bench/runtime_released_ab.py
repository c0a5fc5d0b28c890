"""Same-process A/B of arrays bound each run let go after their last reader (issue 32, round 15).

A fused layer norm's or convolution's result as ATen allocates it, and a
layout op's view, are bound to their slot each run; the slot kept the array
to the end of the call, so the next such allocation came from memory written
a call earlier, out of the caches. Now a compute lets go of each such array
after its last reader (`rducc.runtime.released_slots`), as eager frees a
tensor at its last use. This compiles each chosen full-size zoo model twice
in one process, before (nothing let go: `Recorder.releases` answering
nothing) and after, checks both give the same result bit for bit, and times
eager, before and after interleaved at one thread (CPU time of the calling
thread, best of N calls, the garbage collector paused), printing after /
before and each against eager measured in the same run; then the steps that
bind an array of their own (`fresh_conv`, `fresh_layer_norm`: each step's
least CPU time over N calls of each program, interleaved), which a whole
call's time at a loaded machine does not resolve.

Run: python bench/runtime_released_ab.py [--only NAME ...] [--calls N]
"""

from __future__ import annotations

import argparse
import gc
import logging
import time
from collections.abc import Callable, Sequence
from functools import partial

import numpy as np
import torch
from common import Section  # noqa: F401 - sets one BLAS thread before numpy loads
from runtime_norm_ab import best_times
from zoo.models import FULL_SIZE

import rducc
from rducc.runtime import interpreter, released_slots


def _outputs(out: object) -> list[np.ndarray]:
    return [np.asarray(o) for o in (out if isinstance(out, (tuple, list)) else (out,))]


def _programs(name: str) -> tuple[torch.nn.Module, tuple, rducc.Program, rducc.Program]:
    """The model, its inputs, and its program before (nothing let go) and after."""
    model, inputs = FULL_SIZE[name].build(1)
    with torch.no_grad():
        exported = torch.export.export(model, inputs)
    rule = released_slots.Recorder.releases
    released_slots.Recorder.releases = lambda self, start, keep: {}  # type: ignore[method-assign]
    try:
        before = rducc.compile(exported, opt_level=2)
        before(*inputs)  # its first run, which makes the plan, while the rule is off
    finally:
        released_slots.Recorder.releases = rule  # type: ignore[method-assign]
    after = rducc.compile(exported, opt_level=2)
    return model, inputs, before, after


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="+", choices=sorted(FULL_SIZE), default=sorted(FULL_SIZE))
    parser.add_argument("--calls", type=int, default=9)
    args = parser.parse_args()
    logging.disable(logging.WARNING)
    torch.set_num_threads(1)
    print("| model | eager ms | before ms | after ms | before / eager | after / eager | after / before | same bits "
          "| bound steps ms before -> after |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for name in args.only:
        model, inputs, before, after = _programs(name)
        with torch.no_grad():
            same = all(np.array_equal(b, a) for b, a in
                       zip(_outputs(before(*inputs)), _outputs(after(*inputs)), strict=True))
            times = best_times([partial(model, *inputs), partial(before, *inputs), partial(after, *inputs)],
                               args.calls)
            steps = least_steps([before, after], inputs, args.calls, lambda step, op: step.startswith("fresh_"))
        e, b, a = (t * 1e3 for t in times)
        print(f"| {name} | {e:.1f} | {b:.1f} | {a:.1f} | {b / e:.3f}x | {a / e:.3f}x | {a / b:.3f}x | {same} "
              f"| {steps[0] * 1e3:.2f} -> {steps[1] * 1e3:.2f} |", flush=True)


def least_steps(programs: list[rducc.Program], inputs: tuple, calls: int,
                chosen: Callable[[str, str], bool]) -> list[float]:
    """Each program's steps `chosen` picks by step and op name (a step that
    binds an array of its own is named `fresh_...`): the sum over them of each
    step's least CPU seconds over `calls` calls, the programs' calls interleaved."""
    least: list[dict[tuple[int, int], float]] = [{} for _ in programs]
    plain = interpreter.run_steps
    for _ in range(calls):
        for index, program in enumerate(programs):
            runs: dict[int, int] = {}

            def timed(steps: Sequence, env: list, context: object, where: str,
                      seen: dict[tuple[int, int], float] = least[index], runs: dict[int, int] = runs) -> None:
                for step, op in steps:
                    start = time.thread_time()
                    step(env, context)
                    spent = time.thread_time() - start
                    if chosen(getattr(step, "__name__", ""), op.name):
                        key = (id(op), runs.setdefault(id(op), 0))
                        runs[id(op)] += 1
                        seen[key] = min(seen.get(key, spent), spent)

            interpreter.run_steps = timed
            gc.disable()
            try:
                program(*inputs)
            finally:
                interpreter.run_steps = plain
                gc.enable()
    return [sum(seen.values()) for seen in least]


if __name__ == "__main__":
    main()
