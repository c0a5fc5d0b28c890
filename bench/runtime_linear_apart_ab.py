"""Same-process A/B of a linear layer folded at its product computing into an array of its own (issue 32, round 17).

ConvNeXt's pointwise fc1 (`[HW, C] -> [HW, 4C]`) folds its bias add at the
product (`epilogues.BiasFolds.at_product`: the add's bytes are the input's),
so the add's value lived in the product's arena bytes. The reshape to
`[1, H, W, 4C]` after it could not view those bytes (the allocator gives
them to the GELU that reads the reshape) and copied the value into its own
every block: 0.4-0.6 ms a block at stage 0. Now such a product, read
through its slot alone in a compute whose placement verifies, computes into
a host array of its own, made once on huge pages
(`PlacedProgram._products_apart`), and the reshape views it
(`layout_views.LayoutViews`). This compiles each chosen full-size zoo model
twice in one process, before (the rule off while it is compiled and first
run) and after, checks both give the same bits and eager's result to 1e-4,
and at each thread count times eager, before and after interleaved (the
CPU time of the calling thread, best of N calls, the garbage collector
paused: on a loaded machine the wall time is mostly waiting for a core);
then the changed steps alone (the products folded at their own step, and
the reshapes: each step's least CPU time over N calls of each program,
interleaved).

Run: python bench/runtime_linear_apart_ab.py [--only NAME ...] [--threads N ...] [--calls N]
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

from rducc.runtime import interpreter


@contextlib.contextmanager
def _in_the_arena() -> Iterator[None]:
    """Before: every folded product computes into its arena bytes."""
    rule = interpreter.PlacedProgram.__dict__["_products_apart"]
    interpreter.PlacedProgram._products_apart = staticmethod(lambda *args: frozenset())  # type: ignore[method-assign]
    try:
        yield
    finally:
        interpreter.PlacedProgram._products_apart = rule  # type: ignore[method-assign]


def _products(step: str, op: str) -> bool:
    """Linear layers folded at their product (the step on the matmul): those whose array changes."""
    return "linear" in step and op == "rdu.matmul"


def _reshapes(step: str, op: str) -> bool:
    """Reshapes: a copy before, a view after where the change applies."""
    return op == "rdu.reshape"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="+", choices=sorted(FULL_SIZE), default=["convnext_t", "swin_t"])
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--calls", type=int, default=9)
    args = parser.parse_args()
    logging.disable(logging.WARNING)
    print("| model | threads | eager ms | before ms | after ms | before / eager | after / eager | after / before "
          "| products at their step ms before -> after | reshapes ms before -> after | same bits, off eager |")
    print("| --- " * 11 + "|")
    for name in args.only:
        torch.set_num_threads(1)
        model, inputs, before, after = programs(name, _in_the_arena)
        with torch.no_grad():
            same = same_bits(partial(before, *inputs), partial(after, *inputs))
            off = max(float(np.abs(got - want).max()) for got, want in
                      zip(outputs(after(*inputs)), outputs(model(*inputs)), strict=True))
            for threads in args.threads:
                torch.set_num_threads(threads)
                times = best_times([partial(model, *inputs), partial(before, *inputs), partial(after, *inputs)],
                                   args.calls)
                products = least_steps([before, after], inputs, args.calls, _products)
                reshapes = least_steps([before, after], inputs, args.calls, _reshapes)
                e, b, a = (t * 1e3 for t in times)
                print(f"| {name} | {threads} | {e:.1f} | {b:.1f} | {a:.1f} | {b / e:.3f}x | {a / e:.3f}x "
                      f"| {a / b:.3f}x | {products[0] * 1e3:.2f} -> {products[1] * 1e3:.2f} "
                      f"| {reshapes[0] * 1e3:.2f} -> {reshapes[1] * 1e3:.2f} | {same}, {off:.1e} |",
                      flush=True)
        torch.set_num_threads(1)


if __name__ == "__main__":
    main()
