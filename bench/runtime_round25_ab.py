"""Same-process A/B of round 25's runtime change at one and two threads (issue 32).

`--change in-place`: a linear layer's GEMM (its bias in the epilogue, at the
add) wrote the add's bytes, and the activation after it (ConvNeXt's and
ViT's exact GELU) ran torch's kernel from there into its own bytes, which
the SRAM plan had put on the product's bytes, never written by the runtime:
memory untouched since the previous call. After, the GEMM writes the
product's bytes and the activation runs over them in place
(`rducc.runtime.in_place_maps`). Undone while the before program is
compiled and first run (the steps are made then):
`in_place_maps.into_own_bytes`.

Each chosen full-size zoo model is compiled twice in one process (before,
after) and both are checked against eager (the largest difference) and
against each other (the same bits at each thread count); then at each thread
count eager, before and after are timed interleaved
(`runtime_threads_ab.best_clocks`: least calling-thread CPU, process CPU and
wall over N rounds), and the changed steps (the activation maps' steps and
their linear layers' folded GEMMs: each step's least calling-thread CPU over
N calls, interleaved). Counts, a later
call: the activation maps' elements computed from their input into other
bytes, and in place. Run with `OMP_WAIT_POLICY=PASSIVE` on a loaded machine.

Run: python bench/runtime_round25_ab.py --change in-place [--only NAME ...] [--threads N ...] [--calls N]
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from functools import partial

import numpy as np
import torch
from common import Section  # noqa: F401 - sets one BLAS thread before numpy loads
from runtime_ab import least_steps, programs
from runtime_round18_ab import arguments
from runtime_round22_ab import same_bits_rows
from xdsl.ir import Operation

import rducc
from rducc.dialects.rdu import dataflow as rdu
from rducc.runtime import in_place_maps, interpreter
from rducc.runtime.registry import prepare

Change = tuple[Callable[[], contextlib.AbstractContextManager[None]], list[str]]

CHANGES: dict[str, Change] = {
    "in-place": (in_place_maps.into_own_bytes, ["convnext_t", "vit_b_16"]),
}
"""Each change: the context it is undone in (while the before program's steps
are made), the models it is for."""


def activation_maps(program: rducc.Program) -> set[Operation]:
    """The program's maps whose kernel has an in-place form (`.in_place`)."""
    return {op for op in program.module.walk()
            if isinstance(op, rdu.MapOp) and getattr(prepare(op, "round 25 A/B"), "in_place", None) is not None}


def feeding_adds(program: rducc.Program, maps: set[Operation]) -> set[Operation]:
    """The maps (a linear layer's folded bias add) one of `maps` reads through reshapes alone."""
    return {op for op in program.module.walk()
            if isinstance(op, rdu.MapOp) and in_place_maps.activation_reading(op) in maps}


def element_counts(program: rducc.Program, inputs: tuple, maps: set[Operation]) -> tuple[int, int]:
    """A later call's (not the first's) elements the activation maps' steps
    compute into other bytes than their input's, and in place."""
    own, over = [0], [0]
    plain = interpreter.run_steps

    def counting(steps: list, env: list, context: object, where: str) -> None:
        for step, op in steps:
            if op in maps:
                counter = over if getattr(step, "__name__", "") == "in_place_activation" else own
                counter[0] += int(np.prod(op.results[0].type.get_shape()))
        plain(steps, env, context, where)

    with torch.no_grad():
        program(*inputs)  # the first run, which makes the later runs' steps
    interpreter.run_steps = counting
    try:
        with torch.no_grad():
            program(*inputs)
    finally:
        interpreter.run_steps = plain
    return own[0], over[0]


def main() -> None:
    args = arguments(CHANGES, __doc__)
    undo, models = CHANGES[args.change]
    print("| model | threads | eager ms | before ms | after ms | after / before (thread CPU) | (process CPU) "
          "| (wall) | after / eager (thread CPU) | changed steps ms before -> after | same bits | off eager "
          "| activation elements into other bytes before -> after | in place before -> after |")
    print("| --- " * 14 + "|")
    for name in args.only or models:
        torch.set_num_threads(1)
        model, inputs, before, after = programs(name, undo)
        maps_b, maps_a = activation_maps(before), activation_maps(after)
        own_b, over_b = element_counts(before, inputs, maps_b)
        own_a, over_a = element_counts(after, inputs, maps_a)
        counts = f"{own_b:,} -> {own_a:,} | {over_b:,} -> {over_a:,}"
        changed = maps_b | maps_a | feeding_adds(before, maps_b) | feeding_adds(after, maps_a)
        steps = partial(least_steps, [before, after], inputs, args.calls, lambda step, op: False,
                        picked=changed.__contains__)
        same_bits_rows(name, model, inputs, (before, after), args.threads, args.calls, counts, steps)


if __name__ == "__main__":
    with contextlib.suppress(KeyboardInterrupt):
        main()
