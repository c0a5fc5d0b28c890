"""Same-process A/B of maps over a permuted view computed in its memory order (issue 32, round 16).

transformers' ConvNeXt adds each block's result, permuted back from
`[N, H, W, C]`, to the block's input. The runtime computed the add into its
arena bytes in row-major `[N, C, H, W]` order, so the next block's depthwise
convolution ran PyTorch's channels-first kernel and its layer norm read a
permuted view, where eager's whole trunk is channels-last. Now such a map's
value is a new array in its permuted operand's memory order
(`rducc.runtime.ordered_maps`), and a convolution reads a channels-last view
whose batch dim of 1 has a small stride as channels-last
(`kernels._outermost_ones`). This compiles each chosen full-size zoo model
twice in one process, before (both off: the rule while it is compiled, the
strides around each of its calls) and after, compares each with eager
(results differ from before's by the convolutions' summation order:
channels-last, as eager's), and times eager, before and after interleaved at
one thread (CPU time of the calling thread, best of N calls, the garbage
collector paused); then the convolutions, maps and layer norms alone (each
step's least CPU time over N calls of each program, interleaved).

Run: python bench/runtime_ordered_ab.py [--only NAME ...] [--calls N]
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
from runtime_ab import around, least_steps, outputs, programs
from runtime_norm_ab import best_times
from zoo.models import FULL_SIZE

from rducc.runtime import interpreter, kernels


@contextlib.contextmanager
def _row_major() -> Iterator[None]:
    """Before: every map into its arena bytes, a convolution's input strides as given."""
    rule, strides = interpreter.ordered, kernels._outermost_ones
    interpreter.ordered = lambda into, checked, *rest: checked  # type: ignore[assignment]
    kernels._outermost_ones = lambda t: t  # type: ignore[assignment]
    try:
        yield
    finally:
        interpreter.ordered, kernels._outermost_ones = rule, strides  # type: ignore[assignment]


def _changed(step: str, op: str) -> bool:
    """Convolutions, maps and layer norms: the steps whose operands' layout changes."""
    return "conv" in step or "layer_norm" in step or op == "rdu.map"


def _off_eager(model: torch.nn.Module, inputs: tuple, call: partial) -> float:
    """The largest absolute difference of a call's results from eager's."""
    return max(float(np.abs(got - want).max()) for got, want in
               zip(outputs(call()), outputs(model(*inputs)), strict=True))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="+", choices=sorted(FULL_SIZE), default=["convnext_t", "swin_t", "resnet50"])
    parser.add_argument("--calls", type=int, default=9)
    args = parser.parse_args()
    logging.disable(logging.WARNING)
    torch.set_num_threads(1)
    print("| model | eager ms | before ms | after ms | before / eager | after / eager | after / before "
          "| off eager before, after | changed steps ms before -> after |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for name in args.only:
        model, inputs, before, after = programs(name, _row_major)
        with torch.no_grad():
            old = around(before, inputs, _row_major)
            off = _off_eager(model, inputs, old), _off_eager(model, inputs, partial(after, *inputs))
            times = best_times([partial(model, *inputs), old, partial(after, *inputs)], args.calls)
            steps = least_steps([before, after], inputs, args.calls, _changed, [_row_major, contextlib.nullcontext])
        e, b, a = (t * 1e3 for t in times)
        print(f"| {name} | {e:.1f} | {b:.1f} | {a:.1f} | {b / e:.3f}x | {a / e:.3f}x | {a / b:.3f}x "
              f"| {off[0]:.1e}, {off[1]:.1e} | {steps[0] * 1e3:.2f} -> {steps[1] * 1e3:.2f} |", flush=True)


if __name__ == "__main__":
    main()
