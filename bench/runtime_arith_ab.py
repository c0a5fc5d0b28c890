"""Same-process A/B of a map body's float arithmetic on torch's kernels (issue 32, round 13).

A map body's float add, subtract, multiply and divide run as torch's CPU
kernels on large arrays when torch has more than one thread
(`elementwise.torch_arithmetic`), numpy's ufuncs before. This
compiles each chosen full-size zoo model with the change off (before: every
body's arithmetic numpy's ufunc) and on (after) in one process, checks both
give the same result bit for bit and eager's to 1e-3, and times eager,
before and after interleaved at each thread count (one thread: CPU time of
the calling thread; more: wall time, as bench/runtime_zoo.py), best of N,
the garbage collector paused, printing after / before and each against
eager measured in the same run; then the exclusive time of the maps
(`rdu.map`, least of each step over N profiled calls at one thread).

Run: python bench/runtime_arith_ab.py [--only NAME ...] [--threads N ...] [--calls N]
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
from collections.abc import Iterator
from types import SimpleNamespace

import numpy as np
import torch
from common import Section  # noqa: F401 - sets one BLAS thread before numpy loads
from runtime_norm_ab import best_times
from runtime_tiny import profile_by_op
from zoo.models import FULL_SIZE

import rducc
from rducc.runtime import map_body


@contextlib.contextmanager
def numpy_arithmetic() -> Iterator[None]:
    """Bodies compiled inside run their float arithmetic as numpy's ufuncs (the runtime before)."""
    torch_arithmetic = map_body._TORCH_ARITHMETIC
    map_body._TORCH_ARITHMETIC = SimpleNamespace(add=np.add, subtract=np.subtract, multiply=np.multiply,
                                                 divide=np.divide)
    try:
        yield
    finally:
        map_body._TORCH_ARITHMETIC = torch_arithmetic


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="+", choices=sorted(FULL_SIZE), default=["resnet50", "convnext_t"])
    parser.add_argument("--threads", nargs="+", type=int, default=[1, os.cpu_count() or 1])
    parser.add_argument("--calls", type=int, default=9)
    args = parser.parse_args()
    logging.disable(logging.WARNING)
    print("| model | threads | eager ms | before ms | after ms | before / eager | after / eager | after / before "
          "| same bits |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    maps = []
    for name in args.only:
        model, inputs = FULL_SIZE[name].build(1)
        with torch.no_grad():
            exported = torch.export.export(model, inputs)
            expected = model(*inputs)
            with numpy_arithmetic():
                before = rducc.compile(exported, opt_level=2)
                first = before(*inputs)  # prepared while the change is off
            after = rducc.compile(exported, opt_level=2)
            second = after(*inputs)
            same = torch.equal(first, second) and torch.allclose(second, expected, rtol=1e-3, atol=1e-3)
            for threads in args.threads:
                torch.set_num_threads(threads)
                times = best_times([lambda: model(*inputs), lambda: before(*inputs), lambda: after(*inputs)],
                                   args.calls, wall=threads > 1)
                e, b, a = (t * 1e3 for t in times)
                print(f"| {name} | {threads} | {e:.1f} | {b:.1f} | {a:.1f} | {b / e:.3f}x | {a / e:.3f}x | "
                      f"{a / b:.3f}x | {same} |", flush=True)
            torch.set_num_threads(1)
            spent = [profile_by_op(program, inputs, args.calls)[0]["rdu.map"] * 1e3 for program in (before, after)]
            maps.append(f"| {name} | {spent[0]:.2f} | {spent[1]:.2f} | {spent[1] / spent[0]:.3f}x |")
    print("\nexclusive ms per call in rdu.map steps at one thread (least of each step over the profiled calls):\n")
    print("| model | before | after | after / before |\n| --- | --- | --- | --- |")
    print("\n".join(maps))


if __name__ == "__main__":
    main()
