"""Same-process A/B of attention masks of zeros left out of the kernel call (issue 32, round 15).

transformers makes an all-visible attention mask under export (`arange >= 0`,
added as 0 where True) that eager never passes to its attention kernel; the
runtime passed it, and ATen's fused kernel reads a mask block by block. Now
a bias that is zero throughout a run is left out of that run's call
(`interpreter.adds_something`). This compiles each chosen full-size zoo model
once, runs each call before (every bias passed: `adds_something` answering
yes) or after, checks both give the same result bit for bit, and times eager,
before and after interleaved at one thread (CPU time of the calling thread,
best of N calls, the garbage collector paused), printing after / before and
each against eager measured in the same run; then the products' exclusive
time (`rdu.matmul`, where the fused attention step runs: each step's least
over N profiled calls, `runtime_tiny.profile_by_op`) before and after, which
a whole call's time at a loaded machine does not resolve.

Run: python bench/runtime_zero_mask_ab.py [--only NAME ...] [--calls N]
"""

from __future__ import annotations

import argparse
import logging
from collections.abc import Callable
from functools import partial

import numpy as np
import torch
from common import Section  # noqa: F401 - sets one BLAS thread before numpy loads
from runtime_norm_ab import best_times
from runtime_tiny import profile_by_op
from zoo.models import FULL_SIZE

import rducc
from rducc.runtime import interpreter


def _switched(call: Callable[[], object], every_bias: bool) -> Callable[[], object]:
    """`call` run with every bias passed (before) or with zero biases left out (after)."""
    rule = interpreter.adds_something

    def run() -> object:
        if every_bias:
            interpreter.adds_something = lambda bias: True
        try:
            return call()
        finally:
            interpreter.adds_something = rule

    return run


def _outputs(out: object) -> list[np.ndarray]:
    return [np.asarray(o) for o in (out if isinstance(out, (tuple, list)) else (out,))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="+", choices=sorted(FULL_SIZE), default=["vit_b_16", "gpt2_small"])
    parser.add_argument("--calls", type=int, default=9)
    args = parser.parse_args()
    logging.disable(logging.WARNING)
    torch.set_num_threads(1)
    print("| model | eager ms | before ms | after ms | before / eager | after / eager | after / before | same bits "
          "| `rdu.matmul` ms before -> after |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for name in args.only:
        model, inputs = FULL_SIZE[name].build(1)
        with torch.no_grad():
            program = rducc.compile(torch.export.export(model, inputs), opt_level=2)
            before, after = (_switched(partial(program, *inputs), every) for every in (True, False))
            same = all(np.array_equal(b, a) for b, a in zip(_outputs(before()), _outputs(after()), strict=True))
            times = best_times([partial(model, *inputs), before, after], args.calls)
            products = [_products(program, inputs, args.calls, every) for every in (True, False)]
        e, b, a = (t * 1e3 for t in times)
        print(f"| {name} | {e:.1f} | {b:.1f} | {a:.1f} | {b / e:.3f}x | {a / e:.3f}x | {a / b:.3f}x | {same} "
              f"| {products[0] * 1e3:.2f} -> {products[1] * 1e3:.2f} |", flush=True)


def _products(program: rducc.Program, inputs: tuple, calls: int, every_bias: bool) -> float:
    """The products' exclusive seconds a call (the fused attention steps among them)."""
    rule = interpreter.adds_something
    if every_bias:
        interpreter.adds_something = lambda bias: True
    try:
        return profile_by_op(program, inputs, calls)[0]["rdu.matmul"]
    finally:
        interpreter.adds_something = rule


if __name__ == "__main__":
    main()
