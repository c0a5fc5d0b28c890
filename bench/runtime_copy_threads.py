"""A layout copy at two torch threads: NumPy's assignment on the calling thread
against `elementwise.assign` (torch's `copy_` of the bits, split over its
pool), by size, in one process (issue 32, round 15).

The copy is a window partition's (`[1, H/7, 7, W/7, 7, C]` permuted to
`[1, H/7, W/7, 7, 7, C]`, Swin's), into an array made once (`into`) and
into a fresh one (`fresh`, as a reshape of an array with strides makes);
`assign` runs torch's copy at every size here.
Each time is the least over N calls of the calling thread's CPU (load does
not inflate it: the work that thread does), the process's CPU (the pool's
share too) and the wall time; on a loaded machine run with
`OMP_WAIT_POLICY=PASSIVE`, so that a waiting thread sleeps. The size from
which `assign` takes the calling thread less time than NumPy is what
`elementwise.TORCH_COPY_ELEMENTS` is set from.

Run: python bench/runtime_copy_threads.py [--calls N] [--threads N]
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

import common  # noqa: F401 - numpy's BLAS on one thread
import numpy as np
import torch

from rducc.runtime import elementwise
from rducc.runtime.elementwise import assign

SHAPES = ((7, 768), (14, 384), (28, 192), (56, 96), (56, 192), (112, 96), (112, 192))
"""(H = W, C) of each window partition timed."""


def clocks(function: Callable[[], object], calls: int) -> tuple[float, float, float]:
    """Least calling-thread CPU, process CPU and wall ms over `calls` calls."""
    best = [float("inf")] * 3
    for _ in range(calls):
        start = time.thread_time(), time.process_time(), time.perf_counter()
        function()
        end = time.thread_time(), time.process_time(), time.perf_counter()
        best = [min(b, (e - s) * 1e3) for b, s, e in zip(best, start, end)]
    return best[0], best[1], best[2]


def row(side: int, channels: int, calls: int) -> str:
    """One size's four times and the calling-thread ratios."""
    source = np.random.default_rng(0).random((1, side // 7, 7, side // 7, 7, channels), np.float32)
    source = source.transpose(0, 1, 3, 2, 4, 5)
    into = np.empty(source.shape, np.float32)

    def numpy_into() -> None:
        into[...] = source

    def fresh() -> np.ndarray:
        dense = np.empty(source.shape, np.float32)
        assign(dense, source)
        return dense

    threshold, elementwise.TORCH_COPY_ELEMENTS = elementwise.TORCH_COPY_ELEMENTS, 0  # assign: torch's at every size
    try:
        times = [clocks(f, calls) for f in (numpy_into, lambda: assign(into, source), source.copy, fresh)]
        assert np.array_equal(fresh(), source)
    finally:
        elementwise.TORCH_COPY_ELEMENTS = threshold
    cells = " | ".join(" / ".join(f"{t:.3f}" for t in c) for c in times)
    return (f"| {source.size} | {cells} | {times[1][0] / times[0][0]:.2f}x | {times[3][0] / times[2][0]:.2f}x "
            f"| {'pool' if source.size >= elementwise.TORCH_COPY_ELEMENTS else 'NumPy'} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=60)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    print(f"{args.threads} torch threads; ms: calling thread's CPU / process CPU / wall, least of {args.calls}\n")
    print("| elements | into: NumPy | into: assign | fresh: NumPy | fresh: assign | into: assign / NumPy "
          "(thread CPU) | fresh: assign / NumPy (thread CPU) | the runtime copies on |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for side, channels in SHAPES:
        print(row(side, channels, args.calls), flush=True)


if __name__ == "__main__":
    main()
