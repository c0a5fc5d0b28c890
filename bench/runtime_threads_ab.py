"""Same-process A/B of torch's pool threads reading and writing subnormals as zero in a run (issue 32).

At more than one torch thread a run gives torch's pool threads the calling
thread's floating-point environment with the flush flags set
(`subnormals.pool_flushing`, round 15); before (main after round 14), they
kept the flags they were made with and only a softmax's probabilities were
zeroed after it (`zero_pool_subnormals`, kept here as `before` runs it): a
product's, an exp map's or a GELU's share on the pool still wrote or read
subnormals, 50-80x slower. One compiled Program per model, switched per
call (before / after), checked to give the same result both ways (to 1e-5:
bits may differ where the pool's threads wrote subnormals before) and
eager's to 1e-3; eager first at each thread count (torch's pool made as a
user's program makes it), then eager, before and after timed interleaved,
best of N: the calling thread's CPU time (load does not inflate it: the
work the calling thread does itself), the process's CPU time (all threads:
the pool's share too) and the wall time (on a loaded machine, mostly
waiting for a core). Run with `OMP_WAIT_POLICY=PASSIVE` on a loaded
machine, so that a thread waiting at the pool's barrier sleeps instead of
spinning on the CPU clock.

With `--elements N` the A/B is instead the threshold from which a map
body's float add, subtract, multiply and divide run on torch's pool
(`elementwise.TORCH_ARITHMETIC_ELEMENTS`, 32K, torch's grain): before as it
is, after from N elements (the per-op profile, bench/runtime_threads_profile.py,
at load 20-25 showed those ops on 32K-150K elements costing the calling
thread 2-4x its one-thread CPU at two threads).

With `--change copies` the A/B is instead a layout copy's place (round 15):
before, every copy (a reshape or transpose of an array with strides, a
slice, a broadcast, a compute's yield) NumPy's on the calling thread; after,
from `elementwise.TORCH_COPY_ELEMENTS` elements at more than one thread,
torch's `copy_` of the same bits on its pool (`elementwise.assign`). With
`--change broadcast`: before, a torch kernel's `out=` shape in a map body
(`elementwise.torch_arithmetic`, `torch_math`) checked by
`torch.broadcast_shapes` (10 us a call in Python); after, by NumPy's
`np.broadcast` (0.5 us). `--change all`: the three at once.

Round 16: `--change grain-copies`: before, layout copies on torch's pool
from 262,144 elements (round 15); after, from torch's grain (32,768,
`elementwise.TORCH_COPY_ELEMENTS`). `--change negation`: before, a map
body's negation NumPy's on the calling thread; after, torch's kernel on its
pool (`map_body._ARITHMETIC_ON_THREADS`). `--change round16`: both.

Run: python bench/runtime_threads_ab.py [--only NAME ...] [--threads N ...] [--calls N] [--steps N]
     [--change flags|copies|broadcast|all|grain-copies|negation|round16] [--elements N]
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import logging
import os
import time
from collections.abc import Callable, Iterator, Sequence

import numpy as np
import torch
from common import Section  # noqa: F401 - sets one BLAS thread before numpy loads
from zoo.models import FULL_SIZE

import rducc
from rducc.runtime import elementwise, engine, interpreter, kernels, map_body

_LARGEST_SUBNORMAL = float(np.nextafter(np.finfo(np.float32).tiny, np.float32(0)))


def _softmax_zeroing_pool_subnormals(softmax: Callable[..., np.ndarray]) -> Callable[..., np.ndarray]:
    """`kernels.softmax` as round 14 ran it: its probabilities' subnormals
    (the pool's share) zeroed after it at more than one thread."""
    def run(x: np.ndarray, dim: int, log: bool, out: np.ndarray) -> np.ndarray:
        result = softmax(x, dim, log, out)
        if not log and torch.get_num_threads() > 1 and out.dtype == np.float32:
            torch.ops.aten.threshold_(torch.from_numpy(out), _LARGEST_SUBNORMAL, 0.0)
        return result

    return run


@contextlib.contextmanager
def before() -> Iterator[None]:
    """Runs inside are the runtime before this round: the pool's threads with
    the flags they were made with, a softmax's subnormals zeroed after it."""
    plain_softmax, plain_flushing = kernels.softmax, engine.pool_flushing
    kernels.softmax = _softmax_zeroing_pool_subnormals(plain_softmax)  # type: ignore[assignment]
    engine.pool_flushing = contextlib.nullcontext  # type: ignore[assignment]
    try:
        yield
    finally:
        kernels.softmax, engine.pool_flushing = plain_softmax, plain_flushing  # type: ignore[assignment]


@contextlib.contextmanager
def copies_on_calling_thread() -> Iterator[None]:
    """Runs inside make every layout copy NumPy's, on the calling thread (as
    before round 15; after: `elementwise.assign` on torch's pool)."""
    plain = elementwise.TORCH_COPY_ELEMENTS
    elementwise.TORCH_COPY_ELEMENTS = 1 << 62
    try:
        yield
    finally:
        elementwise.TORCH_COPY_ELEMENTS = plain


@contextlib.contextmanager
def torch_broadcast_shapes() -> Iterator[None]:
    """Runs inside check a torch kernel's `out=` shape with
    `torch.broadcast_shapes` (as before round 15; after: NumPy's, in C)."""
    plain = elementwise._broadcast_shape  # noqa: SLF001 - the function this A/B swaps
    elementwise._broadcast_shape = lambda operands: tuple(  # type: ignore[assignment]  # noqa: SLF001
        torch.broadcast_shapes(*(np.shape(x) for x in operands)))
    try:
        yield
    finally:
        elementwise._broadcast_shape = plain  # type: ignore[assignment]  # noqa: SLF001


@contextlib.contextmanager
def round_14() -> Iterator[None]:
    """Runs inside are the runtime before round 15: without any of the three."""
    with before(), copies_on_calling_thread(), torch_broadcast_shapes():
        yield


@contextlib.contextmanager
def copies_from_256k() -> Iterator[None]:
    """Runs inside copy on torch's pool from 262,144 elements, as round 15
    did (after: from torch's grain, `elementwise.TORCH_COPY_ELEMENTS`)."""
    plain = elementwise.TORCH_COPY_ELEMENTS
    elementwise.TORCH_COPY_ELEMENTS = 1 << 18
    try:
        yield
    finally:
        elementwise.TORCH_COPY_ELEMENTS = plain


@contextlib.contextmanager
def negation_on_calling_thread() -> Iterator[None]:
    """Runs inside negate in a map body with NumPy's ufunc on the calling
    thread, as before round 16 (after: torch's kernel on its pool)."""
    map_body.arithmetic_for_threads()  # bound for this thread count now: the run's own call keeps the swap
    plain = map_body._TORCH_ARITHMETIC.negative  # noqa: SLF001 - the binding this A/B swaps
    map_body._TORCH_ARITHMETIC.negative = np.negative  # noqa: SLF001
    try:
        yield
    finally:
        map_body._TORCH_ARITHMETIC.negative = plain  # noqa: SLF001


@contextlib.contextmanager
def round_15() -> Iterator[None]:
    """Runs inside are the runtime before round 16: copies from 256K, negation NumPy's."""
    with copies_from_256k(), negation_on_calling_thread():
        yield


CHANGES = {"flags": before, "copies": copies_on_calling_thread, "broadcast": torch_broadcast_shapes, "all": round_14,
           "grain-copies": copies_from_256k, "negation": negation_on_calling_thread, "round16": round_15}
"""What `--change` takes out of `before`'s runs."""


@contextlib.contextmanager
def arithmetic_from(elements: int) -> Iterator[None]:
    """Runs inside put a body's float arithmetic on torch's pool from `elements`
    elements (`elementwise.TORCH_ARITHMETIC_ELEMENTS`) instead."""
    plain = elementwise.TORCH_ARITHMETIC_ELEMENTS
    elementwise.TORCH_ARITHMETIC_ELEMENTS = elements
    try:
        yield
    finally:
        elementwise.TORCH_ARITHMETIC_ELEMENTS = plain


def calls(model: torch.nn.Module, program: rducc.Program, inputs: tuple,
          elements: int | None = None, change: str = "flags") -> list[Callable[[], object]]:
    """eager, before and after (before without `change`, `CHANGES`); with
    `elements`, before is the runtime as it is and after the one with that
    arithmetic threshold (`arithmetic_from`)."""
    def run_before() -> object:
        with CHANGES[change]() if elements is None else contextlib.nullcontext():
            return program(*inputs)

    def run_after() -> object:
        with arithmetic_from(elements) if elements is not None else contextlib.nullcontext():
            return program(*inputs)

    return [lambda: model(*inputs), run_before, run_after]


def best_clocks(functions: list[Callable[[], object]], rounds: int) -> list[tuple[float, float, float]]:
    """Least calling-thread CPU, process CPU and wall seconds of each function
    over `rounds` interleaved rounds (the order of the last two swapped every
    other round), the garbage collector paused."""
    best = [[float("inf")] * 3 for _ in functions]
    gc.collect()
    gc.disable()
    try:
        for round_ in range(rounds):
            order = list(range(len(functions)))
            if round_ % 2:
                order[-2:] = order[-1], order[-2]
            for index in order:
                start = time.thread_time(), time.process_time(), time.perf_counter()
                functions[index]()
                end = time.thread_time(), time.process_time(), time.perf_counter()
                best[index] = [min(b, e - s) for b, s, e in zip(best[index], start, end)]
    finally:
        gc.enable()
    return [(t, p, w) for t, p, w in best]


def least_steps(functions: list[Callable[[], object]], rounds: int) -> list[float]:
    """The sum over steps of each step's least calling-thread CPU seconds
    (exclusive of nested steps) over `rounds` interleaved rounds, per
    function (eager's: 0): under load a whole call seldom runs with both
    threads on a core, but each step does in some round, so the sum is
    near a quiet machine's calling-thread time, the pool's join included."""
    plain = interpreter.run_steps
    least: list[dict[tuple[int, int], float]] = [{} for _ in functions]
    seen: dict[int, int] = {}
    nested: list[float] = []
    side: list[dict[tuple[int, int], float]] = [least[0]]

    def timed(steps: Sequence, env: list, context: object, where: str) -> None:
        for step, op in steps:
            nested.append(0.0)
            start = time.thread_time()
            step(env, context)
            spent = time.thread_time() - start
            own = spent - nested.pop()
            if nested:
                nested[-1] += spent
            key = (id(op), seen.get(id(op), 0))
            seen[id(op)] = key[1] + 1
            side[0][key] = min(side[0].get(key, float("inf")), own)

    interpreter.run_steps = timed
    try:
        for _ in range(rounds):
            for index in range(1, len(functions)):
                seen.clear()
                side[0] = least[index]
                functions[index]()
    finally:
        interpreter.run_steps = plain
    return [sum(steps.values()) for steps in least]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="+", choices=sorted(FULL_SIZE), default=sorted(FULL_SIZE))
    parser.add_argument("--threads", nargs="+", type=int, default=[1, os.cpu_count() or 1])
    parser.add_argument("--calls", type=int, default=9)
    parser.add_argument("--change", choices=sorted(CHANGES), default="flags",
                        help="flags: pool threads flushing subnormals; copies: layout copies on torch's pool; "
                        "broadcast: a torch kernel's out= shape checked by NumPy; all: the three; grain-copies: copies "
                        "on the pool from 32K elements, not 256K; negation: a body's negation on the pool; round16: "
                        "both")
    parser.add_argument("--steps", type=int, default=0, help="also: each step's least calling-thread CPU over "
                        "this many interleaved rounds, summed (before / after)")
    parser.add_argument("--elements", type=int, help="instead: after = a body's float arithmetic on torch's pool "
                        "from this many elements (TORCH_ARITHMETIC_ELEMENTS), before = as it is")
    args = parser.parse_args()
    logging.disable(logging.WARNING)
    change = args.change if args.elements is None else f"elements {args.elements}"
    print(f"change: {change}; OMP_WAIT_POLICY={os.environ.get('OMP_WAIT_POLICY', '(unset)')}; ms: calling thread's "
          "CPU / process CPU / wall\n")
    print("| model | threads | eager ms | before ms | after ms | after / before (thread CPU) "
          "| after / before (process CPU) | after / before (wall) | after / eager (thread CPU) | same |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for name in args.only:
        model, inputs = FULL_SIZE[name].build(1)
        with torch.no_grad():
            expected = model(*inputs)
            program = rducc.compile(torch.export.export(model, inputs), opt_level=2)
            functions = calls(model, program, inputs, args.elements, args.change)
            for threads in args.threads:
                torch.set_num_threads(threads)
                functions[0]()  # eager first: torch's pool made as a user's program makes it (no thread flushing)
                first, second = functions[1](), functions[2]()
                same = torch.allclose(first, second, rtol=1e-5, atol=1e-6) \
                    and torch.allclose(second, expected, rtol=1e-3, atol=1e-3)
                clocks = [[t * 1e3 for t in c] for c in best_clocks(functions, args.calls)]
                e, b, a = (" / ".join(f"{t:.1f}" for t in c) for c in clocks)
                ratios = " | ".join(f"{clocks[2][k] / clocks[1][k]:.3f}x" for k in range(3))
                print(f"| {name} | {threads} | {e} | {b} | {a} | {ratios} | {clocks[2][0] / clocks[0][0]:.3f}x "
                      f"| {same} |", flush=True)
                if args.steps:
                    _, b_steps, a_steps = least_steps(functions, args.steps)
                    print(f"|   steps, least each over {args.steps} rounds | {threads} | - | {b_steps * 1e3:.1f} "
                          f"| {a_steps * 1e3:.1f} | {a_steps / b_steps:.3f}x | | | | |", flush=True)
            torch.set_num_threads(1)


if __name__ == "__main__":
    main()
