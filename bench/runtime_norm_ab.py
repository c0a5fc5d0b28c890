"""Same-process A/B of the layer norm that is ATen's own array (issue 32).

ATen has no layer norm into a given array (`native_layer_norm.out` computes
apart and copies), so the runtime's fused layer norm step copied its value
into the SRAM arena. Where every reader reads the value through its slot and
the compute's placement verifies, the value is now the kernel's own array
(`PlacedProgram._norm_step`'s `fresh`). This compiles each full-size zoo model
twice in one process, before (the rule off: `interpreter._read_by_slot`
answering no) and after, checks both give the same result, and times eager,
before and after interleaved at one thread (CPU time of the calling thread,
best of N calls, the garbage collector paused), printing after / before and
each against eager measured in the same run.

Run: python bench/runtime_norm_ab.py [--only NAME ...] [--calls N]
"""

from __future__ import annotations

import argparse
import gc
import logging
import time
from collections.abc import Callable

import torch
from common import Section  # noqa: F401 - sets one BLAS thread before numpy loads
from zoo.models import FULL_SIZE

import rducc
from rducc.runtime import interpreter


def _programs(name: str) -> tuple[Callable[[], object], Callable[[], object], Callable[[], object], bool]:
    """Eager, before and after as calls on the model's inputs; whether before equals after."""
    model, inputs = FULL_SIZE[name].build(1)
    with torch.no_grad():
        exported = torch.export.export(model, inputs)
    rule = interpreter._read_by_slot
    interpreter._read_by_slot = lambda value, views: False
    try:
        before = rducc.compile(exported, opt_level=2)
        before(*inputs)  # prepared while the rule is off
    finally:
        interpreter._read_by_slot = rule
    after = rducc.compile(exported, opt_level=2)
    same = torch.equal(before(*inputs), after(*inputs))
    return (lambda: model(*inputs)), (lambda: before(*inputs)), (lambda: after(*inputs)), same


def best_times(calls: list[Callable[[], object]], rounds: int, wall: bool = False) -> list[float]:
    """Least seconds of each function over `rounds` interleaved rounds (CPU time
    of the calling thread, or wall time), the order of the last two swapped
    every other round."""
    clock = time.perf_counter if wall else time.thread_time
    best = [float("inf")] * len(calls)
    gc.collect()
    gc.disable()
    try:
        for round_ in range(rounds):
            order = list(range(len(calls)))
            if round_ % 2:
                order[-2:] = order[-1], order[-2]
            for index in order:
                start = clock()
                calls[index]()
                best[index] = min(best[index], clock() - start)
    finally:
        gc.enable()
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="+", choices=sorted(FULL_SIZE), default=["convnext_t", "swin_t", "vit_b_16"])
    parser.add_argument("--calls", type=int, default=9)
    args = parser.parse_args()
    logging.disable(logging.WARNING)
    torch.set_num_threads(1)
    print("| model | eager ms | before ms | after ms | before / eager | after / eager | after / before | same |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for name in args.only:
        eager, before, after, same = _programs(name)
        with torch.no_grad():
            times = best_times([eager, before, after], args.calls)
        e, b, a = (t * 1e3 for t in times)
        print(f"| {name} | {e:.1f} | {b:.1f} | {a:.1f} | {b / e:.3f}x | {a / e:.3f}x | {a / b:.3f}x | {same} |",
              flush=True)


if __name__ == "__main__":
    main()
