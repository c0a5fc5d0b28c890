"""Same-process A/B of a mixture of experts' grouped product as torch._grouped_mm (issue 32, round 17).

`kernels.grouped_matmul` multiplied each expert's rows by its matrix in a
Python loop, one `matmul` (a product's setup, torch's Python binding) an
expert; eager's Mixtral calls `torch._grouped_mm`, the same GEMM an expert
in C++. Now f32 operands the kernel takes (`kernels._grouped_on_torch`) run
as `torch._grouped_mm`, eager's bits. This compiles each chosen full-size zoo
model twice in one process and runs one as before (the loop, switched
around each of its calls: the kernel chooses on every call), checks both
give the same bits and eager's result to 1e-4, and at each thread count
times eager, before and after interleaved (CPU time of the calling thread,
best of N calls, the garbage collector paused); then the grouped products
alone (each step's least CPU time over N calls of each program, interleaved).

Run: python bench/runtime_grouped_ab.py [--only NAME ...] [--threads N ...] [--calls N]
"""

from __future__ import annotations

import argparse
import contextlib
import logging
from collections.abc import Iterator
from functools import partial

import numpy as np
import torch
from common import Section  # noqa: F401 - sets one BLAS thread before numpy loads
from runtime_ab import around, least_steps, outputs, programs, same_bits
from runtime_norm_ab import best_times
from zoo.models import FULL_SIZE

from rducc.runtime import kernels


@contextlib.contextmanager
def _loop() -> Iterator[None]:
    """Before: every grouped product the loop over experts."""
    rule = kernels._grouped_on_torch
    kernels._grouped_on_torch = lambda *args: False  # type: ignore[assignment]
    try:
        yield
    finally:
        kernels._grouped_on_torch = rule  # type: ignore[assignment]


def _grouped(step: str, op: str) -> bool:
    return op == "rdu.grouped_matmul"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="+", choices=sorted(FULL_SIZE), default=["mixtral_100m"])
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--calls", type=int, default=9)
    args = parser.parse_args()
    logging.disable(logging.WARNING)
    print("| model | threads | eager ms | before ms | after ms | before / eager | after / eager | after / before "
          "| grouped products ms before -> after | same bits, off eager |")
    print("| --- " * 10 + "|")
    for name in args.only:
        torch.set_num_threads(1)
        model, inputs, before, after = programs(name)
        old = around(before, inputs, _loop)
        with torch.no_grad():
            same = same_bits(old, partial(after, *inputs))
            off = max(float(np.abs(got - want).max()) for got, want in
                      zip(outputs(after(*inputs)), outputs(model(*inputs)), strict=True))
            for threads in args.threads:
                torch.set_num_threads(threads)
                times = best_times([partial(model, *inputs), old, partial(after, *inputs)], args.calls)
                steps = least_steps([before, after], inputs, args.calls, _grouped, [_loop, contextlib.nullcontext])
                e, b, a = (t * 1e3 for t in times)
                print(f"| {name} | {threads} | {e:.1f} | {b:.1f} | {a:.1f} | {b / e:.3f}x | {a / e:.3f}x "
                      f"| {a / b:.3f}x | {steps[0] * 1e3:.2f} -> {steps[1] * 1e3:.2f} | {same}, {off:.1e} |",
                      flush=True)
        torch.set_num_threads(1)


if __name__ == "__main__":
    main()
