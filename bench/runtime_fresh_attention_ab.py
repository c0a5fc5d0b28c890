"""Same-process A/B of the fused attention's result bound as ATen's own array (issue 32, round 15).

ATen's fused attention kernel returns `[..., heads, L, Ev]` with its memory in
`[..., L, heads, Ev]` order; the runtime copied it into the value's arena
bytes in `[heads, L, Ev]` order, and the heads' merge after it
(`transpose(1, 2)`, a reshape to `[L, heads * Ev]`) copied it back: two
transposing copies a layer where eager makes none. Where the value is read
through its slot alone (a fused layer norm's conditions), the step now binds
the kernel's own array (`interpreter._attention_step`'s `fresh`): the merge
reads it in order. This compiles each chosen full-size zoo model twice in
one process, before (never `fresh`) and after, checks both give the same
result bit for bit, and times eager, before and after interleaved at one
thread (CPU time of the calling thread, best of N calls, the garbage
collector paused); then the attention steps and the reshapes that copy
(each step's least CPU time over N calls of each program, interleaved),
which a whole call's time at a loaded machine does not resolve.

Run: python bench/runtime_fresh_attention_ab.py [--only NAME ...] [--calls N]
"""

from __future__ import annotations

import argparse
import contextlib
import logging
from collections.abc import Iterator
from functools import partial

import torch
from common import Section  # noqa: F401 - sets one BLAS thread before numpy loads
from runtime_ab import least_steps, programs, same_bits
from runtime_norm_ab import best_times
from zoo.models import FULL_SIZE

from rducc.runtime.interpreter import PlacedProgram


@contextlib.contextmanager
def _copied_into_arena() -> Iterator[None]:
    """The before program: the attention's result copied into the arena (never `fresh`)."""
    rule = PlacedProgram._attention_step
    PlacedProgram._attention_step = (  # type: ignore[method-assign]
        lambda self, chain, dest, aside, fresh=None: rule(self, chain, dest, aside, None))
    try:
        yield
    finally:
        PlacedProgram._attention_step = rule  # type: ignore[method-assign]


def _merge_steps(step: str, op: str) -> bool:
    """The attention steps and the copies a reshape or transpose makes (`step1`; a view is `bind`)."""
    return step in ("attention", "fresh_attention") or (op in ("rdu.reshape", "rdu.transpose") and step == "step1")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="+", choices=sorted(FULL_SIZE),
                        default=["vit_b_16", "gpt2_small", "mixtral_100m", "swin_t"])
    parser.add_argument("--calls", type=int, default=9)
    args = parser.parse_args()
    logging.disable(logging.WARNING)
    torch.set_num_threads(1)
    print("| model | eager ms | before ms | after ms | before / eager | after / eager | after / before | same bits "
          "| attention and copying layout steps ms before -> after |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for name in args.only:
        model, inputs, before, after = programs(name, _copied_into_arena)
        with torch.no_grad():
            same = same_bits(partial(before, *inputs), partial(after, *inputs))
            times = best_times([partial(model, *inputs), partial(before, *inputs), partial(after, *inputs)],
                               args.calls)
            steps = least_steps([before, after], inputs, args.calls, _merge_steps)
        e, b, a = (t * 1e3 for t in times)
        print(f"| {name} | {e:.1f} | {b:.1f} | {a:.1f} | {b / e:.3f}x | {a / e:.3f}x | {a / b:.3f}x | {same} "
              f"| {steps[0] * 1e3:.2f} -> {steps[1] * 1e3:.2f} |", flush=True)


if __name__ == "__main__":
    main()
