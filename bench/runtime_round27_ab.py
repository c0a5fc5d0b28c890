"""Same-process A/B of round 27's runtime change at one and two threads (issue 32).

`--change moves`: a gather by one index array (`rdu.gather`, `tier.gather`)
indexed with NumPy on the calling thread into a temporary and copied that
into its bytes; an attention chain's operands were copied aside with
`np.copyto`. After, the gather is torch's `index_select` into the
destination, the copy `elementwise.assign` (torch's pool at two threads):
`rducc.runtime.threaded_moves`. One compiled program, called inside
`threaded_moves.as_numpy()` (before) and outside (after), interleaved with
eager; same bits, largest difference from eager; the changed steps are the
gathers' and the copies aside. Counts, a later call: elements gathered and
copied aside by NumPy on the calling thread, and by torch's kernels. Run
with `OMP_WAIT_POLICY=PASSIVE` on a loaded machine.

Run: python bench/runtime_round27_ab.py --change moves [--only NAME ...] [--threads N ...] [--calls N]
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from functools import partial
from typing import Any

import numpy as np
import torch
from common import Section  # noqa: F401 - sets one BLAS thread before numpy loads
from runtime_ab import least_steps
from runtime_round18_ab import arguments
from runtime_round22_ab import same_bits_rows
from zoo.models import FULL_SIZE

import rducc
from rducc.runtime import elementwise, kernels, threaded_moves

CHANGES: dict[str, list[str]] = {"moves": ["swin_t", "gpt2_small", "mixtral_100m"]}
"""Each change and the models it is for (those with gathers or copies aside)."""

MOVING_STEPS = ("gather", "copy_aside")
"""The changed steps' names (`tier.gather`'s step and an attention chain's copies aside)."""


def with_numpy_moves(program: rducc.Program) -> Callable[..., Any]:
    """`program` called inside `threaded_moves.as_numpy()`: the before."""

    def call(*inputs: Any) -> Any:
        with threaded_moves.as_numpy():
            return program(*inputs)

    return call


def moved_elements(program: Callable[..., Any], inputs: tuple) -> tuple[int, int]:
    """A later call's elements gathered or copied aside on the calling thread
    alone (NumPy), and by torch's kernels (`index_select`, or a copy on the pool)."""
    counts = [0, 0]
    gather, copy = kernels.gather, threaded_moves.copy

    def counted_gather(source: np.ndarray, indices: Any, dim: int, wraps: bool = False,
                       out: np.ndarray | None = None) -> np.ndarray:
        result = gather(source, indices, dim, wraps, out)
        counts[out is not None and result is out] += result.size
        return result

    def counted_copy(out: np.ndarray, x: np.ndarray) -> None:
        copy(out, x)
        counts[not threaded_moves._NUMPY[0] and elementwise.copies_on_torch(out.size)] += out.size

    with torch.no_grad():
        program(*inputs)
        kernels.gather, threaded_moves.copy = counted_gather, counted_copy  # type: ignore[assignment]
        try:
            program(*inputs)
        finally:
            kernels.gather, threaded_moves.copy = gather, copy  # type: ignore[assignment]
    return counts[0], counts[1]


def main() -> None:
    args = arguments(CHANGES, __doc__)
    print("| model | threads | eager ms | before ms | after ms | after / before (thread CPU) | (process CPU) "
          "| (wall) | after / eager (thread CPU) | changed steps ms before -> after | same bits | off eager "
          "| calling-thread elements before -> after | torch-kernel elements before -> after |")
    print("| --- " * 14 + "|")
    for name in args.only or CHANGES[args.change]:
        torch.set_num_threads(1)
        model, inputs = FULL_SIZE[name].build(1)
        with torch.no_grad():
            program = rducc.compile(torch.export.export(model, inputs), opt_level=2)
        before = with_numpy_moves(program)
        for threads in args.threads:
            torch.set_num_threads(threads)
            alone_b, torch_b = moved_elements(before, inputs)
            alone_a, torch_a = moved_elements(program, inputs)
            counts = f"{alone_b:,} -> {alone_a:,} | {torch_b:,} -> {torch_a:,}"
            steps = partial(least_steps, [program, program], inputs, args.calls,
                            lambda step, op: step in MOVING_STEPS or op == "rdu.gather",
                            [threaded_moves.as_numpy, contextlib.nullcontext])
            same_bits_rows(name, model, inputs, (before, program), [threads], args.calls, counts, steps)


if __name__ == "__main__":
    with contextlib.suppress(KeyboardInterrupt):
        main()
