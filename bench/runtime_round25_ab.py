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

Each chosen full-size zoo model is compiled before and after in one
process, checked and timed as `runtime_round24_ab.py` does (eager, before
and after interleaved; same bits, largest difference from eager); the
changed steps are the activation maps' and their linear layers' folded
GEMMs' (each group also on a line of its own). Counts, a later call: the
activation maps' elements computed from their input into other bytes, and
in place. Run with `OMP_WAIT_POLICY=PASSIVE` on a loaded machine.

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
from runtime_round24_ab import later_call
from xdsl.ir import Operation

import rducc
from rducc.dialects.rdu import dataflow as rdu
from rducc.runtime import in_place_maps
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

    def counting(step: Callable, op: Operation) -> None:
        if op in maps:
            counter = over if getattr(step, "__name__", "") == "in_place_activation" else own
            counter[0] += int(np.prod(op.results[0].type.get_shape()))

    later_call(program, inputs, counting)
    return own[0], over[0]


def split_steps(pair: list[rducc.Program], inputs: tuple, calls: int, maps: set[Operation],
                gemms: set[Operation]) -> list[float]:
    """The changed steps' least CPU seconds, before and after (the activation
    maps' and their GEMMs'); each group's printed on a line of its own."""
    least = {group: least_steps(pair, inputs, calls, lambda step, op: False, picked=ops.__contains__)
             for group, ops in (("activation", maps), ("GEMM", gemms))}
    print("(" + "; ".join(f"{group} steps {b * 1e3:.2f} -> {a * 1e3:.2f} ms" for group, (b, a) in least.items())
          + ")", flush=True)
    return [sum(times[k] for times in least.values()) for k in range(2)]


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
        steps = partial(split_steps, [before, after], inputs, args.calls, maps_b | maps_a,
                        feeding_adds(before, maps_b) | feeding_adds(after, maps_a))
        same_bits_rows(name, model, inputs, (before, after), args.threads, args.calls, counts, steps)


if __name__ == "__main__":
    with contextlib.suppress(KeyboardInterrupt):
        main()
