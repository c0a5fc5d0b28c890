"""A layout copy at two torch threads: NumPy's assignment on the calling thread
against `elementwise.assign` (torch's `copy_` of the bits, split over its
pool), by size, in one process (issue 32, rounds 15 and 16).

The copy is a window partition's (`[1, H/7, 7, W/7, 7, C]` permuted to
`[1, H/7, W/7, 7, 7, C]`, Swin's), into an array made once. Two states:
`alone`, the source hot in the calling thread's cache (written there once)
and nothing reading the copy (round 15's measurement); `in a model`, the
source rewritten before each call by a map on torch's pool (as a product, a
norm or a map's arithmetic leaves it: each half in its thread's core) and a
map on the pool reading the copy after it, timed with it (round 16).
`assign` runs torch's copy at every size here. Each time is the least over
N calls of the calling thread's CPU (load does not inflate it: the work
that thread does, and its spinning at the pool's join while the other
thread fetches its half from the other core). The size from which `assign`
takes the calling thread less time than NumPy in a model is what
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


def least_cpu(function: Callable[[], object], before: Callable[[], object], calls: int) -> float:
    """Least calling-thread CPU us of `function` over `calls` calls, `before` run (untimed) before each."""
    best = float("inf")
    for _ in range(calls):
        before()
        start = time.thread_time()
        function()
        best = min(best, (time.thread_time() - start) * 1e6)
    return best


def row(side: int, channels: int, calls: int) -> str:
    """One size's four times and the calling-thread ratios."""
    base = np.random.default_rng(0).random((1, side // 7, 7, side // 7, 7, channels), np.float32)
    source, written = base.transpose(0, 1, 3, 2, 4, 5), torch.from_numpy(base)
    into = np.empty(source.shape, np.float32)
    read, reader = torch.from_numpy(into), torch.empty(source.shape)

    def numpy_copy() -> None:
        into[...] = source

    def torch_copy() -> None:
        assign(into, source)

    def in_a_model(copy: Callable[[], None]) -> Callable[[], None]:
        def run() -> None:
            copy()
            torch.add(read, 1.0, out=reader)
        return run

    def nothing() -> None:
        pass

    def pool_writes() -> None:
        torch.mul(written, 1.0, out=written)

    threshold, elementwise.TORCH_COPY_ELEMENTS = elementwise.TORCH_COPY_ELEMENTS, 0  # assign: torch's at every size
    try:
        times = [least_cpu(numpy_copy, nothing, calls), least_cpu(torch_copy, nothing, calls),
                 least_cpu(in_a_model(numpy_copy), pool_writes, calls),
                 least_cpu(in_a_model(torch_copy), pool_writes, calls)]
        assert np.array_equal(into, source)
    finally:
        elementwise.TORCH_COPY_ELEMENTS = threshold
    cells = " | ".join(f"{t:.1f}" for t in times)
    return (f"| {source.size} | {cells} | {times[1] / times[0]:.2f}x | {times[3] / times[2]:.2f}x "
            f"| {'pool' if source.size >= elementwise.TORCH_COPY_ELEMENTS else 'NumPy'} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    torch.ones(1 << 20).add_(1)  # the pool made first
    print(f"{args.threads} torch threads; us of the calling thread's CPU, least of {args.calls}\n")
    print("| elements | alone: NumPy | alone: assign | in a model: NumPy | in a model: assign "
          "| alone: assign / NumPy | in a model: assign / NumPy | the runtime copies on |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for side, channels in SHAPES:
        print(row(side, channels, args.calls), flush=True)


if __name__ == "__main__":
    main()
