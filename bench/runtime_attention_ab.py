"""Same-process A/B of attention run as one fused kernel (issue 32).

Scaled dot product attention (and attention written out by hand) reaches the
runtime as a product of queries and keys, a scale, a mask or bias add, a
softmax and a product with the values; the runtime ran each op, passing over
the scores five times. Where the program shows the chain's values are read by
the chain alone, the second product now runs the whole chain as ATen's fused
CPU kernel (`rducc.runtime.fused_attention`). This compiles each full-size
zoo model twice in one process, before (the rule off:
`fused_attention._attention_at` finding no chain) and after, checks both give
the same result within the runtime's tolerance, and times eager, before and
after interleaved at one thread (CPU time of the calling thread, best of N
calls, the garbage collector paused), printing after / before and each
against eager measured in the same run.

Run: python bench/runtime_attention_ab.py [--only NAME ...] [--calls N]
"""

from __future__ import annotations

import argparse
import logging
from collections.abc import Callable

import torch
from common import Section  # noqa: F401 - sets one BLAS thread before numpy loads
from runtime_norm_ab import best_times
from zoo.models import FULL_SIZE
from zoo.run import max_error

import rducc
from rducc.runtime import fused_attention


def _programs(name: str) -> tuple[Callable[[], object], Callable[[], object], Callable[[], object], str]:
    """Eager, before and after as calls on the model's inputs; each one's largest
    difference from eager."""
    model, inputs = FULL_SIZE[name].build(1)
    with torch.no_grad():
        expected = model(*inputs)
        exported = torch.export.export(model, inputs)
    rule = fused_attention._attention_at
    fused_attention._attention_at = lambda op, placement: None
    try:
        before = rducc.compile(exported, opt_level=2)
        before(*inputs)  # prepared while the rule is off
    finally:
        fused_attention._attention_at = rule
    after = rducc.compile(exported, opt_level=2)
    errors = [max_error(program(*inputs), expected) for program in (before, after)]
    within = all(ok for _, ok in errors)
    summary = f"{errors[0][0]:.1e} / {errors[1][0]:.1e}{'' if within else ' NOT within tolerance'}"
    return (lambda: model(*inputs)), (lambda: before(*inputs)), (lambda: after(*inputs)), summary


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="+", choices=sorted(FULL_SIZE), default=["vit_b_16", "swin_t", "gpt2_small"])
    parser.add_argument("--calls", type=int, default=9)
    args = parser.parse_args()
    logging.disable(logging.WARNING)
    torch.set_num_threads(1)
    print("| model | eager ms | before ms | after ms | before / eager | after / eager | after / before "
          "| error before / after |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for name in args.only:
        eager, before, after, errors = _programs(name)
        with torch.no_grad():
            times = best_times([eager, before, after], args.calls)
        e, b, a = (t * 1e3 for t in times)
        print(f"| {name} | {e:.1f} | {b:.1f} | {a:.1f} | {b / e:.3f}x | {a / e:.3f}x | {a / b:.3f}x | {errors} |",
              flush=True)


if __name__ == "__main__":
    main()
