"""Which ops use torch's threads: per op kind, the CPU time of all the
process's threads against the calling thread's, in the Program and in eager.

An op that runs on torch's pool costs the calling thread about half its
one-thread CPU time at two threads, one on the calling thread alone the
same; the process's CPU time (all threads) shows what the pool's threads
did (the kernel adds another thread's time late, so a short op's share can
land in the next op's row: read the sums). CPU times are not broken by a
loaded machine as wall times are; run with `OMP_WAIT_POLICY=PASSIVE` there,
so that a thread waiting at the pool's barrier sleeps instead of spinning.
The Program's steps are timed as `runtime_tiny.profile_by_op` times them
(exclusive of nested steps; a fused step is named after its function:
`linear`, `softmax`, ...); eager's ATen ops under a `TorchDispatchMode`.
torch's pool is made first, with nothing flushing subnormals (its threads
keep the flags they were made with), as a program that ran eager first has it.

Run: python bench/runtime_threads_profile.py [--only NAME ...] [--threads N] [--calls N] [--top N]
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import logging
import time
from collections import defaultdict
from collections.abc import Sequence
from typing import Any

import common  # noqa: F401 - numpy's BLAS on one thread
import torch
from runtime_threads_ab import before
from torch.utils._python_dispatch import TorchDispatchMode
from zoo.models import FULL_SIZE

import rducc
from rducc.runtime import interpreter

Clocks = dict[str, list[float]]
"""Op kind -> [thread CPU seconds, process CPU seconds, count] of one call (least over calls)."""


def describe(op: Any) -> str:
    """An op's kind; a map's with its body's ops and its result's element count."""
    if op.name != "rdu.map":
        return op.name
    body = ",".join(sorted({o.name.split(".")[-1] for o in op.regions[0].block.ops} - {"yield", "constant"}))
    size = 1
    for d in op.results[0].type.get_shape():
        size *= d
    return f"rdu.map[{body}] {size}"


Steps = dict[tuple[Any, int], tuple[str, float, float]]
"""(op, its n-th run in a call) -> (kind, thread CPU seconds, process CPU seconds), least over calls."""


def program_steps(program: Any, inputs: tuple, calls: int) -> Steps:
    """Each step's exclusive thread and process CPU time, least over `calls` (by thread CPU)."""
    least: dict[tuple[int, int], list[float]] = {}
    names: dict[int, str] = {}
    runs: dict[int, int] = defaultdict(int)
    nested: list[list[float]] = []
    plain = interpreter.run_steps

    def timed(steps: Sequence, env: list, context: object, where: str) -> None:
        for step, op in steps:
            nested.append([0.0, 0.0])
            t0, p0 = time.thread_time(), time.process_time()
            step(env, context)
            t1, p1 = time.thread_time(), time.process_time()
            inner = nested.pop()
            key = (id(op), runs[id(op)])
            runs[id(op)] += 1
            names[id(op)] = f"{describe(op)} ({getattr(step, '__name__', '?')})"
            own = [t1 - t0 - inner[0], p1 - p0 - inner[1]]
            old = least.get(key)
            least[key] = own if old is None or own[0] < old[0] else old
            if nested:
                nested[-1][0] += time.thread_time() - t0
                nested[-1][1] += time.process_time() - p0

    program(*inputs)
    interpreter.run_steps = timed
    gc.collect()
    gc.disable()
    try:
        for _ in range(calls):
            runs.clear()
            program(*inputs)
    finally:
        interpreter.run_steps = plain
        gc.enable()
    return {key: (names[key[0]], thread, process) for key, (thread, process) in least.items()}


def by_kind(steps: Steps) -> Clocks:
    """Steps summed by kind: [thread CPU, process CPU, count]."""
    totals: Clocks = defaultdict(lambda: [0.0, 0.0, 0])
    for name, thread, process in steps.values():
        row = totals[name]
        row[0] += thread
        row[1] += process
        row[2] += 1
    return totals


def program_clocks(program: Any, inputs: tuple, calls: int) -> Clocks:
    """Each step's exclusive thread and process CPU time, least over `calls`, summed by op name."""
    return by_kind(program_steps(program, inputs, calls))


class _Timed(TorchDispatchMode):
    def __init__(self) -> None:
        super().__init__()
        self.least: dict[tuple[str, int], list[float]] = {}
        self.runs: dict[str, int] = defaultdict(int)

    def __torch_dispatch__(self, func: Any, types: Any, args: tuple = (), kwargs: dict | None = None) -> Any:
        t0, p0 = time.thread_time(), time.process_time()
        out = func(*args, **(kwargs or {}))
        t1, p1 = time.thread_time(), time.process_time()
        name = str(func.overloadpacket.__name__)
        key = (name, self.runs[name])
        self.runs[name] += 1
        own = [t1 - t0, p1 - p0]
        old = self.least.get(key)
        self.least[key] = own if old is None or own[0] < old[0] else old
        return out


def eager_steps(model: Any, inputs: tuple, calls: int) -> Steps:
    """Each ATen op call's thread and process CPU time, least over `calls` (by thread CPU)."""
    mode = _Timed()
    model(*inputs)
    gc.collect()
    gc.disable()
    try:
        for _ in range(calls):
            mode.runs.clear()
            with mode:
                model(*inputs)
    finally:
        gc.enable()
    return {key: (key[0], thread, process) for key, (thread, process) in mode.least.items()}


def eager_clocks(model: Any, inputs: tuple, calls: int) -> Clocks:
    """Each ATen op's thread and process CPU time, least over `calls`, summed by op name."""
    return by_kind(eager_steps(model, inputs, calls))


def table(title: str, by_threads: dict[int, Clocks], top: int) -> list[str]:
    """One row per op kind: its calling thread's CPU ms at each thread count, and the process's at the last."""
    counts = sorted(by_threads)
    last = by_threads[counts[-1]]
    sums = {n: sum(r[0] for r in c.values()) for n, c in by_threads.items()}
    rows = [f"{title}: thread CPU " + ", ".join(f"{sums[n] * 1e3:.1f} ms at {n}t" for n in counts)
            + f"; process CPU {sum(r[1] for r in last.values()) * 1e3:.1f} ms at {counts[-1]}t", "",
            "| op | count | " + " | ".join(f"thread ms {n}t" for n in counts) + f" | process ms {counts[-1]}t |"
            + f" thread {counts[-1]}t / {counts[0]}t |", "| --- " * (len(counts) + 4) + "|"]
    for name, (t, p, n) in sorted(last.items(), key=lambda kv: -kv[1][0])[:top]:
        first = by_threads[counts[0]].get(name, [0.0])[0]
        cells = " | ".join(f"{by_threads[c].get(name, [0.0])[0] * 1e3:.2f}" for c in counts)
        rows.append(f"| {name} | {n} | {cells} | {p * 1e3:.2f} | {t / max(first, 1e-9):.2f} |")
    return [*rows, ""]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="+", choices=sorted(FULL_SIZE), default=["swin_t"])
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--calls", type=int, default=5)
    parser.add_argument("--top", type=int, default=25)
    parser.add_argument("--side", choices=["both", "eager", "program"], default="both")
    parser.add_argument("--before", action="store_true", help="the Program as before round 14 (runtime_threads_ab)")
    args = parser.parse_args()
    logging.disable(logging.WARNING)
    torch.set_num_threads(max(args.threads))
    torch.ones(1 << 20).add_(1)  # the pool made now (module docstring)
    torch.set_num_threads(1)
    for name in args.only:
        model, inputs = FULL_SIZE[name].build(1)
        with torch.no_grad():
            program = rducc.compile(torch.export.export(model, inputs), opt_level=2)
            eager: dict[int, Clocks] = {}
            ours: dict[int, Clocks] = {}
            for threads in args.threads:
                torch.set_num_threads(threads)
                if args.side != "program":
                    eager[threads] = eager_clocks(model, inputs, args.calls)
                if args.side != "eager":
                    with before() if args.before else contextlib.nullcontext():
                        ours[threads] = program_clocks(program, inputs, args.calls)
            torch.set_num_threads(1)
        if eager:
            print("\n".join(table(f"{name} eager", eager, args.top)))
        if ours:
            print("\n".join(table(f"{name} Program", ours, args.top)), flush=True)


if __name__ == "__main__":
    main()
