"""Same-process A/B of round 23's runtime change at one and two threads (issue 32).

`--change batch-norms`: a map body's inference batch norm (the frontend's
`x * scale + shift`, `scale = rsqrt(var + eps) * weight`, `shift = bias -
mean * scale`; ResNet-50's 53 batch norms, 49 with a ReLU after) ran op by
op: two passes over `x` (a multiply, an add) with bits that are not eager's.
After, it is torch's `native_batch_norm` on the same per-channel arrays
(`rducc.runtime.batch_norms`): one pass, eager's kernel and eager's bits.
Undone while the before program is compiled and first run (the map bodies
are made then).

Each chosen full-size zoo model is compiled twice in one process (before,
after), both checked against eager (the largest difference; after's bits are
not before's: they are eager's kernel's), then at each thread count eager,
before and after are timed interleaved (`runtime_threads_ab.best_clocks`:
least calling-thread CPU, process CPU and wall over N rounds), and the
changed steps (the map steps that run their compiled bodies, each step's
least calling-thread CPU over N calls, interleaved). Counts: the passes a
call's map bodies make over their result's elements (each op whose value has
the map's shape is one pass; a batch norm run as torch's kernel is one),
summed as elements, before and after (each map body once; a map in a layer's
callee counts once). Run with `OMP_WAIT_POLICY=PASSIVE` on a loaded machine.

Run: python bench/runtime_round23_ab.py --change batch-norms [--only NAME ...] [--threads N ...] [--calls N]
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from functools import partial

import numpy as np
import torch
from common import Section  # noqa: F401 - sets one BLAS thread before numpy loads
from runtime_ab import least_steps, outputs, programs
from runtime_round18_ab import arguments, timing_cells
from runtime_round22_ab import Change, _body_step
from xdsl.ir import Operation, SSAValue

import rducc
from rducc.runtime import batch_norms, map_body
from rducc.runtime.dtypes import tensor_signature

CHANGES: dict[str, Change] = {
    "batch-norms": (map_body.batch_norms_op_by_op, lambda step, op: _body_step(step, op), ["resnet50"]),
}
"""Each change: the context it is undone in (while the before program's steps
are made), the steps it changes (by step and op name), the models it is for."""


def _shape(value: SSAValue) -> tuple[int, ...]:
    return tuple(tensor_signature(value.type)[0])


def _full_passes(op: Operation, norms: batch_norms.BatchNorms) -> int:
    """The ops of a map's body whose value has the map's shape (a batch norm: one)."""
    block = op.regions[0].block
    result = _shape(op.results[0])
    static = batch_norms.static_shapes(block, [_shape(v) for v in op.operands])
    return sum(1 for body_op in block.ops
               if len(body_op.results) == 1 and static[body_op.results[0]] == result and body_op not in norms.inside)


def map_pass_elements(program: rducc.Program, found: bool) -> int:
    """Elements of the passes the program's map bodies make (each body once),
    its batch norms found (`found`) or not."""
    total = 0
    for op in program.module.walk():
        if op.name != "rdu.map":
            continue
        norms = batch_norms.BatchNorms()
        if found:
            shape, dtype = tensor_signature(op.results[0].type)
            norms = batch_norms.batch_norms(op.regions[0].block, [_shape(v) for v in op.operands], tuple(shape),
                                            dtype, set())
        total += _full_passes(op, norms) * int(np.prod(_shape(op.results[0])))
    return total


def _off(got: list[np.ndarray], expected: list[np.ndarray]) -> float:
    return max(float(np.abs(g - w).max()) for g, w in zip(got, expected, strict=True))


def main() -> None:
    args = arguments(CHANGES, __doc__)
    undo, changed, models = CHANGES[args.change]
    print("| model | threads | eager ms | before ms | after ms | after / before (thread CPU) | (process CPU) "
          "| (wall) | after / eager (thread CPU) | changed steps ms before -> after | off eager before, after "
          "| map pass elements before -> after |")
    print("| --- " * 12 + "|")
    for name in args.only or models:
        torch.set_num_threads(1)
        model, inputs, before, after = programs(name, undo)
        counts = f"{map_pass_elements(before, False):,} -> {map_pass_elements(after, True):,}"
        with torch.no_grad():
            expected = outputs(model(*inputs))
            off = f"{_off(outputs(before(*inputs)), expected):.1e}, {_off(outputs(after(*inputs)), expected):.1e}"
            for threads in args.threads:
                torch.set_num_threads(threads)
                steps: Callable[[], list[float]] = partial(least_steps, [before, after], inputs, args.calls, changed)
                cells = timing_cells(partial(model, *inputs), partial(before, *inputs), partial(after, *inputs),
                                     steps, args.calls)
                print(f"| {name} | {threads} | {cells} | {off} | {counts} |", flush=True)
        torch.set_num_threads(1)


if __name__ == "__main__":
    with contextlib.suppress(KeyboardInterrupt):
        main()
