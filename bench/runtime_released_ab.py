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
import contextlib
import logging
from collections.abc import Iterator
from functools import partial

import torch
from common import Section  # noqa: F401 - sets one BLAS thread before numpy loads
from runtime_ab import least_steps, programs, same_bits
from runtime_norm_ab import best_times
from zoo.models import FULL_SIZE

from rducc.runtime import released_slots


@contextlib.contextmanager
def _nothing_let_go() -> Iterator[None]:
    """The before program: `Recorder.releases` answering nothing while its plan is made."""
    rule = released_slots.Recorder.releases
    released_slots.Recorder.releases = lambda self, start, keep: {}  # type: ignore[method-assign]
    try:
        yield
    finally:
        released_slots.Recorder.releases = rule  # type: ignore[method-assign]


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
        model, inputs, before, after = programs(name, _nothing_let_go)
        with torch.no_grad():
            same = same_bits(partial(before, *inputs), partial(after, *inputs))
            times = best_times([partial(model, *inputs), partial(before, *inputs), partial(after, *inputs)],
                               args.calls)
            steps = least_steps([before, after], inputs, args.calls, lambda step, op: step.startswith("fresh_"))
        e, b, a = (t * 1e3 for t in times)
        print(f"| {name} | {e:.1f} | {b:.1f} | {a:.1f} | {b / e:.3f}x | {a / e:.3f}x | {a / b:.3f}x | {same} "
              f"| {steps[0] * 1e3:.2f} -> {steps[1] * 1e3:.2f} |", flush=True)



if __name__ == "__main__":
    main()
