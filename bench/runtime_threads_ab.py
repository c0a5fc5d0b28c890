"""Same-process A/B of whole-array ops on torch's pool at several threads (issue 32, round 14).

At more than one torch thread (1) a map body's negation and its maximum or
minimum against a scalar (a ReLU, a clamp) run as torch's kernels
(`elementwise.THREADED_UFUNCS`); before, numpy's ufuncs on the calling
thread (runtime13's float add, subtract, multiply and divide were on torch's
pool already, and stay so in both); (2) a softmax's probabilities that
torch's pool threads wrote as subnormals are zeroed (`subnormals.
zero_pool_subnormals`), as the calling thread flushes its own; before, the
product reading them ran the pool's share 50-80x slower (Swin-T's masked
windows). One
compiled Program per model, switched per call (before / after), checked to
give the same bits both ways and eager's to 1e-3; eager, before and after
timed interleaved at each thread count, best of N: the calling thread's CPU
time (load does not inflate it: the work the calling thread does itself,
what a quiet machine's wall time follows when the pool's threads split the
rest) and the wall time (on a loaded machine, mostly waiting for a core).
Run with `OMP_WAIT_POLICY=PASSIVE` on a loaded machine, so that a thread
waiting at the pool's barrier sleeps instead of spinning on the CPU clock.

Run: python bench/runtime_threads_ab.py [--only NAME ...] [--threads N ...] [--calls N]
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
from collections.abc import Callable, Iterator

import numpy as np
import torch
from common import Section  # noqa: F401 - sets one BLAS thread before numpy loads
from runtime_norm_ab import best_times
from zoo.models import FULL_SIZE

import rducc
from rducc.runtime import kernels, map_body

ADDED = ("negative", "maximum", "minimum")
"""The body ufuncs this round put on torch's pool (runtime13's four stay there)."""


@contextlib.contextmanager
def before() -> Iterator[None]:
    """Runs inside are the runtime before this round: the `ADDED` ufuncs
    numpy's at any thread count, no subnormals zeroed after a softmax (the run's binding, `map_body.arithmetic_for_threads`,
    leaves them while the thread count stays)."""
    map_body.arithmetic_for_threads()  # bound for the thread count now, as the run binds it
    bound = {name: getattr(map_body._TORCH_ARITHMETIC, name) for name in ADDED}
    for name in ADDED:
        setattr(map_body._TORCH_ARITHMETIC, name, getattr(np, name))
    zeroing = kernels.zero_pool_subnormals
    kernels.zero_pool_subnormals = lambda values: None  # type: ignore[assignment]
    try:
        yield
    finally:
        kernels.zero_pool_subnormals = zeroing  # type: ignore[assignment]
        for name, function in bound.items():
            setattr(map_body._TORCH_ARITHMETIC, name, function)


def calls(model: torch.nn.Module, program: rducc.Program, inputs: tuple) -> list[Callable[[], object]]:
    def run_before() -> object:
        with before():
            return program(*inputs)

    return [lambda: model(*inputs), run_before, lambda: program(*inputs)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="+", choices=sorted(FULL_SIZE), default=sorted(FULL_SIZE))
    parser.add_argument("--threads", nargs="+", type=int, default=[1, os.cpu_count() or 1])
    parser.add_argument("--calls", type=int, default=9)
    args = parser.parse_args()
    logging.disable(logging.WARNING)
    print(f"OMP_WAIT_POLICY={os.environ.get('OMP_WAIT_POLICY', '(unset)')}; ms: calling thread's CPU / wall\n")
    print("| model | threads | eager ms | before ms | after ms | after / before (CPU) | after / eager (CPU) "
          "| after / before (wall) | same bits |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for name in args.only:
        model, inputs = FULL_SIZE[name].build(1)
        with torch.no_grad():
            expected = model(*inputs)
            program = rducc.compile(torch.export.export(model, inputs), opt_level=2)
            functions = calls(model, program, inputs)
            for threads in args.threads:
                torch.set_num_threads(threads)
                first, second = functions[1](), functions[2]()
                same = torch.equal(first, second) and torch.allclose(second, expected, rtol=1e-3, atol=1e-3)
                # (a result may differ from `before` in bits only where the pool's threads wrote subnormals)
                cpu = [t * 1e3 for t in best_times(functions, args.calls)]
                wall = [t * 1e3 for t in best_times(functions, args.calls, wall=True)]
                e, b, a = (f"{c:.1f} / {w:.1f}" for c, w in zip(cpu, wall))
                print(f"| {name} | {threads} | {e} | {b} | {a} | {cpu[2] / cpu[1]:.3f}x | {cpu[2] / cpu[0]:.3f}x "
                      f"| {wall[2] / wall[1]:.3f}x | {same} |", flush=True)
            torch.set_num_threads(1)


if __name__ == "__main__":
    main()
