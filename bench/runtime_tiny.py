"""Runtime speed: tiny Llama and tiny GPT-2 forward through rducc.Program against eager.

A call of the compiled, placed program (-O2) in rducc's numpy runtime against
PyTorch eager's forward of the same model on the same inputs, in the same
process, one thread each (best of N calls, after a warm-up). Goal <= 1.5x.
Then where the runtime's time goes: exclusive time by op kind, measured by
timing every step the interpreter runs.

Run: python bench/runtime_tiny.py [--quick]
"""

from __future__ import annotations

import gc
import time
from collections import Counter
from collections.abc import Sequence

from common import Section, best_time, standalone

import models  # noqa: E402
import torch  # noqa: E402

import rducc  # noqa: E402
from rducc.runtime import interpreter  # noqa: E402

MODELS = {"tiny Llama": models.tiny_llama, "tiny GPT-2": models.tiny_gpt2}


def profile_by_op(program: rducc.Program, inputs: tuple, calls: int) -> tuple[Counter, float]:
    """Exclusive seconds per op name of one call, and the seconds of that call:
    each step's least exclusive time over `calls` calls, and the fastest of
    `calls` plain calls by the thread's CPU time (minima: another process's
    time slice lands in one call, not in all). The Program's own time
    (inputs, outputs, conversions, the step loop) is measured, not inferred:
    the least over the profiled calls of a call's time less its top-level
    steps' (it was once the fastest call less the sum of every step's least
    time, which is below any one call's steps by their spread: 4-10% of a
    full-size model at load 10, shown as the Program's own). So the rows sum
    to a little less than the fastest call. The timing of a nested step is
    subtracted from its parent with the step (else a kernel of 100 body ops
    would show 100 timings' cost as its own).

    Swaps the interpreter's step runner (`run_steps`) for one that times each step and
    subtracts the steps nested in it (a tile loop's body, a compute's body ops).
    """
    least: dict[tuple[int, int], float] = {}  # (op, its n-th run in a call) -> least exclusive seconds
    names: dict[int, str] = {}
    runs: Counter = Counter()
    nested: list[float] = []
    top_level = [0.0]  # seconds in the call's top-level steps (with the timing of those nested in them)
    plain = interpreter.run_steps

    def timed_block(steps: Sequence, env: list, context: object, where: str) -> None:
        for step, op in steps:
            entered = time.perf_counter()
            nested.append(0.0)
            start = time.perf_counter()
            step(env, context)
            elapsed = time.perf_counter() - start
            inner = nested.pop()
            key = (id(op), runs[id(op)])
            runs[id(op)] += 1
            names[id(op)] = op.name
            least[key] = min(least.get(key, elapsed), elapsed - inner)
            if nested:  # the parent's own time excludes this step and its timing
                nested[-1] += time.perf_counter() - entered
            else:
                top_level[0] += elapsed

    program(*inputs)  # prepared before profiling
    fastest = float("inf")
    gc.collect()
    gc.disable()  # as timeit does: no collection of other objects inside a timed step
    try:
        for _ in range(calls):  # the plain call (the per-step timing below costs about 1 us a step)
            start = time.thread_time()  # CPU time: a wait for the core is no one's time
            program(*inputs)
            fastest = min(fastest, time.thread_time() - start)
        interpreter.run_steps = timed_block
        own = float("inf")
        for _ in range(calls):
            runs.clear()
            top_level[0] = 0.0
            start = time.perf_counter()
            program(*inputs)
            own = min(own, time.perf_counter() - start - top_level[0])
    finally:
        interpreter.run_steps = plain
        gc.enable()
    totals: Counter = Counter()
    for (op, _), seconds in least.items():
        totals[names[op]] += seconds
    totals["(Program call: inputs, outputs, conversions)"] = max(own, 0.0)
    return totals, fastest


def profile_table(name: str, totals: Counter, total: float, calls: int) -> list[str]:
    rows = [f"{name}, -O2, exclusive time per call by op kind (each step's least over {calls} profiled "
            "calls; profiled, so slower than the timing above):", "",
            "| op | us per call | share |", "| --- | --- | --- |"]
    for op, seconds in totals.most_common():
        rows.append(f"| {op} | {seconds * 1e6:.1f} | {seconds / total:.1%} |")
    return [*rows, ""]


def run(quick: bool) -> Section:
    calls = 20 if quick else 100
    section = Section("Runtime: rducc.Program (-O2) vs PyTorch eager, 1 thread",
                      f"python bench/runtime_tiny.py{' --quick' if quick else ''}")
    torch.set_num_threads(1)
    for name, build in MODELS.items():
        model, inputs = build()
        program = rducc.compile(models.export(model, inputs), opt_level=2)
        with torch.no_grad():
            expected = model(*inputs)
        torch.testing.assert_close(program(*inputs), expected, rtol=1e-4, atol=1e-5)
        with torch.no_grad():
            eager = best_time(lambda: model(*inputs), calls)
        ours = best_time(lambda: program(*inputs), calls)
        ratio = ours / eager
        section.add(f"{name}: eager forward", f"{eager * 1e3:.3f} ms (best of {calls})")
        section.add(f"{name}: Program call", f"{ours * 1e3:.3f} ms (best of {calls})")
        section.add(f"{name}: Program / eager", f"{ratio:.2f}x", "<= 1.5x", ratio <= 1.5)
        section.details += profile_table(name, *profile_by_op(program, inputs, calls), calls)
    return section


if __name__ == "__main__":
    standalone(run, __doc__)
