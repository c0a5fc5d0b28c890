"""Same-process A/B of results handed on from SRAM without a copy (issue 32, round 14).

A placed program computes its result (a model's logits: 16 MB a call for
the 100 M Mixtral, 26 MB for GPT-2 small) into an SRAM buffer and copies it
whole with one `tier.dma` into the off-chip buffer the run hands to the
caller. Where nothing else reads that SRAM buffer and its placement
verifies, the buffer now lives in a host array of its own each run, which
the DMA hands on (`rducc.runtime.handed_buffers`). This compiles each chosen
full-size zoo model twice in one process, before (the rule off:
`interpreter.handed_dma` answering no) and after, checks both give the same
result bit for bit, and times eager, before and after interleaved at one
thread (CPU time of the calling thread, best of N calls, the garbage
collector paused), printing after / before and each against eager measured
in the same run; then the exclusive time of the DMAs (`tier.dma`, least of
each step over N profiled calls).

Run: python bench/runtime_handed_ab.py [--only NAME ...] [--calls N]
"""

from __future__ import annotations

import argparse
import logging
from functools import partial

import torch
from common import Section  # noqa: F401 - sets one BLAS thread before numpy loads
from runtime_norm_ab import best_times
from runtime_tiny import profile_by_op
from zoo.models import FULL_SIZE

import rducc
from rducc.runtime import interpreter


def _programs(name: str) -> tuple[torch.nn.Module, tuple, rducc.Program, rducc.Program]:
    """The model, its inputs, and its program before (no buffer handed on) and after."""
    model, inputs = FULL_SIZE[name].build(1)
    with torch.no_grad():
        exported = torch.export.export(model, inputs)
    rule = interpreter.handed_dma
    interpreter.handed_dma = lambda alloc, order: None
    try:
        before = rducc.compile(exported, opt_level=2)
        before(*inputs)  # prepared while the rule is off
    finally:
        interpreter.handed_dma = rule
    after = rducc.compile(exported, opt_level=2)
    return model, inputs, before, after


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="+", choices=sorted(FULL_SIZE), default=["mixtral_100m", "gpt2_small"])
    parser.add_argument("--calls", type=int, default=9)
    args = parser.parse_args()
    logging.disable(logging.WARNING)
    torch.set_num_threads(1)
    print("| model | eager ms | before ms | after ms | before / eager | after / eager | after / before | same bits "
          "| tier.dma ms before -> after |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for name in args.only:
        model, inputs, before, after = _programs(name)
        same = torch.equal(before(*inputs), after(*inputs))
        with torch.no_grad():
            times = best_times([partial(model, *inputs), partial(before, *inputs), partial(after, *inputs)],
                               args.calls)
        dma = [profile_by_op(program, inputs, args.calls)[0]["tier.dma"] * 1e3 for program in (before, after)]
        e, b, a = (t * 1e3 for t in times)
        print(f"| {name} | {e:.1f} | {b:.1f} | {a:.1f} | {b / e:.3f}x | {a / e:.3f}x | {a / b:.3f}x | {same} "
              f"| {dma[0]:.2f} -> {dma[1]:.2f} |", flush=True)


if __name__ == "__main__":
    main()
