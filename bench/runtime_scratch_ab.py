"""Same-process A/B of the runtime's map and convolution changes of issue 32 (round 12).

Two changes, each switchable here: (1) `scratch`: a map body's intermediate
values of the map's shape and dtype are computed into the map's result array
(`map_body._Lines`) instead of a new array a call (a batch norm's
`x * scale + shift` and its ReLU); (2) `fresh`: a convolution run by
PyTorch's kernel, whose value every reader reads through its slot, is the
kernel's own output array instead of a copy into the arena
(`PlacedProgram._conv_step`). This compiles each chosen full-size zoo model
with the chosen change off (before) and on (after) in one process, checks
both give eager's result and the same result, and times eager, before and
after interleaved at one thread (CPU time of the calling thread, best of N
calls, the garbage collector paused), printing after / before and each
against eager measured in the same run; then the exclusive time of the op
kinds the change runs (`rdu.map`, `rdu.conv`: each step's least over N
profiled calls, `runtime_tiny.profile_by_op`) before and after, which a
whole call's noise on a shared machine hides.

Run: python bench/runtime_scratch_ab.py [--change scratch|fresh|both] [--only NAME ...] [--calls N]
"""

from __future__ import annotations

import argparse
import contextlib
import logging
from collections.abc import Callable, Iterator

import torch
from common import Section  # noqa: F401 - sets one BLAS thread before numpy loads
from runtime_norm_ab import best_times
from runtime_tiny import profile_by_op
from zoo.models import FULL_SIZE

import rducc
from rducc.runtime import interpreter, map_body


@contextlib.contextmanager
def change_off(change: str) -> Iterator[None]:
    """The runtime as before the change(s) while inside (a program prepares its steps on its first call)."""
    compile_body, fresh_conv = map_body.compile_body, interpreter._fresh_conv
    if change in ("scratch", "both"):
        map_body.compile_body = lambda block, shapes=None, result=None: compile_body(block, shapes)
    if change in ("fresh", "both"):
        interpreter._fresh_conv = lambda conv, plan: False
    try:
        yield
    finally:
        map_body.compile_body, interpreter._fresh_conv = compile_body, fresh_conv


def _programs(name: str, change: str) -> tuple[list[Callable[[], object]], list[rducc.Program], tuple, bool]:
    """Eager, before and after as calls on the model's inputs; the two
    programs and the inputs; whether both equal eager's result and each other."""
    model, inputs = FULL_SIZE[name].build(1)
    with torch.no_grad():
        exported = torch.export.export(model, inputs)
        expected = model(*inputs)
    with change_off(change):
        before = rducc.compile(exported, opt_level=2)
        first = before(*inputs)  # prepared while the change is off
    after = rducc.compile(exported, opt_level=2)
    second = after(*inputs)
    same = torch.equal(first, second) and torch.allclose(second, expected, rtol=1e-3, atol=1e-3)
    return [lambda: model(*inputs), lambda: before(*inputs), lambda: after(*inputs)], [before, after], inputs, same


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--change", choices=("scratch", "fresh", "both"), default="both")
    parser.add_argument("--only", nargs="+", choices=sorted(FULL_SIZE), default=["resnet50", "convnext_t"])
    parser.add_argument("--calls", type=int, default=9)
    args = parser.parse_args()
    logging.disable(logging.WARNING)
    torch.set_num_threads(1)
    print(f"change: {args.change}")
    print("| model | eager ms | before ms | after ms | before / eager | after / eager | after / before | same |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    kinds: list[str] = []
    for name in args.only:
        calls, programs, inputs, same = _programs(name, args.change)
        with torch.no_grad():
            times = best_times(calls, args.calls)
            for program in programs:
                totals, _ = profile_by_op(program, inputs, args.calls)
                kinds.append(f"| {name} | {'before' if program is programs[0] else 'after'} | "
                             + " | ".join(f"{totals[k] * 1e3:.2f}" for k in ("rdu.map", "rdu.conv")) + " |")
        e, b, a = (t * 1e3 for t in times)
        print(f"| {name} | {e:.1f} | {b:.1f} | {a:.1f} | {b / e:.3f}x | {a / e:.3f}x | {a / b:.3f}x | {same} |",
              flush=True)
    print("\nexclusive ms per call by op kind (least of each step over the profiled calls):\n")
    print("| model | runtime | rdu.map | rdu.conv |\n| --- | --- | --- | --- |")
    print("\n".join(kinds))


if __name__ == "__main__":
    main()
