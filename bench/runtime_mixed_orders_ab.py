"""Same-process A/B of maps over operands of mixed memory orders on torch's kernels at one thread (issue 32).

ConvNeXt-T's first block of stages 1-3 adds its input, the downsampling
convolution's channels-first value, to its permuted channels-last result,
into a new channels-last array (`rducc.runtime.ordered_maps`). NumPy's ufunc
iterates operands of different memory orders 3-6x slower than torch's
TensorIterator (an add of 1x192x28x28: 461 against 76 us), and at one thread
a map body's arithmetic was NumPy's. Now such a map (an operand or its result
in another memory order than the others: `ordered_maps.orders_differ`, decided
on the first run) runs its arithmetic as torch's kernels at one thread too
(`map_body.arithmetic_on_torch`; at more threads it did already, from
torch's grain). This compiles each chosen full-size zoo model twice in one
process, before (the rule off while it is compiled and first run) and after,
checks both give the same bits (one IEEE rounding either way) and eager's
result to 1e-4, and at each thread count times eager, before and after
interleaved (CPU time of the calling thread, best of N calls, the garbage
collector paused); then the maps computed in a permuted operand's order
alone (each step's least CPU time over N calls of each program, interleaved).

Run: python bench/runtime_mixed_orders_ab.py [--only NAME ...] [--threads N ...] [--calls N]
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
from runtime_ab import least_steps, outputs, programs, same_bits
from runtime_norm_ab import best_times
from zoo.models import FULL_SIZE

from rducc.runtime import ordered_maps


@contextlib.contextmanager
def _numpys() -> Iterator[None]:
    """Before: every map's arithmetic NumPy's at one thread."""
    rule = ordered_maps.orders_differ
    ordered_maps.orders_differ = lambda arrays, shape: False  # type: ignore[assignment]
    try:
        yield
    finally:
        ordered_maps.orders_differ = rule  # type: ignore[assignment]


def _ordered(step: str, op: str) -> bool:
    """The maps computed in a permuted operand's memory order."""
    return "ordered_map" in step


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="+", choices=sorted(FULL_SIZE), default=["convnext_t", "swin_t"])
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--calls", type=int, default=9)
    args = parser.parse_args()
    logging.disable(logging.WARNING)
    print("| model | threads | eager ms | before ms | after ms | before / eager | after / eager | after / before "
          "| ordered maps ms before -> after | same bits, off eager |")
    print("| --- " * 10 + "|")
    for name in args.only:
        torch.set_num_threads(1)
        model, inputs, before, after = programs(name, _numpys)
        with torch.no_grad():
            same = same_bits(partial(before, *inputs), partial(after, *inputs))
            off = max(float(np.abs(got - want).max()) for got, want in
                      zip(outputs(after(*inputs)), outputs(model(*inputs)), strict=True))
            for threads in args.threads:
                torch.set_num_threads(threads)
                times = best_times([partial(model, *inputs), partial(before, *inputs), partial(after, *inputs)],
                                   args.calls)
                steps = least_steps([before, after], inputs, args.calls, _ordered)
                e, b, a = (t * 1e3 for t in times)
                print(f"| {name} | {threads} | {e:.1f} | {b:.1f} | {a:.1f} | {b / e:.3f}x | {a / e:.3f}x "
                      f"| {a / b:.3f}x | {steps[0] * 1e3:.2f} -> {steps[1] * 1e3:.2f} | {same}, {off:.1e} |",
                      flush=True)
        torch.set_num_threads(1)


if __name__ == "__main__":
    main()
