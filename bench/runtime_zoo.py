"""Runtime speed on the model zoo: rducc.Program (-O2) against eager, every model.

For each model of `bench/zoo/models.py` (batch 1), the small-config zoo
(`ZOO`) and the models at their library's own default configuration
(`FULL_SIZE`: ResNet-50, ViT-B/16, Swin-T, ConvNeXt-T, GPT-2 small, a 100 M
Mixtral; 25-125 M parameters, issue 32): compiled at -O2 for one
sn40l socket, checked against eager, then timed at one thread and at all
threads (torch.set_num_threads; the runtime follows torch's count), best of N
calls of each side interleaved (eager, Program, eager, ...: the machine is
shared and noisy), the garbage collector paused while timing (as timeit
does). At one thread a call's time is the CPU time of the calling thread
(`time.thread_time`: every op runs on it), not its wall time: on a machine
with more runnable processes than cores the scheduler takes the core away
for 4-8 ms every few ms, so the longer side's best wall time of N often
holds such a wait and the ratio swings 1x-6x from process to process
(bench/notes.md); the wall times are shown beside. At all threads the
times are wall times (the pool's other threads work too). Then the ops
where the runtime's time goes (exclusive time by op kind, as
runtime_tiny.py measures it). Goals: on the small zoo (issue 19) median
Program / eager <= 1.1x and worst <= 1.5x; at full size (issue 32) median
<= 1.0x and worst <= 1.3x; at one thread and at all threads.

Run: python bench/runtime_zoo.py [--quick] [--sizes small full] [--only NAME ...] [--threads N ...] [--calls N]
(--quick: the CI subset of the small zoo and ConvNeXt-T at full size, 5 calls)
"""

from __future__ import annotations

import argparse
import gc
import logging
import os
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import torch  # noqa: E402
from common import Section
from runtime_tiny import profile_by_op  # noqa: E402
from zoo.models import FULL_SIZE, QUICK, ZOO, ZooModel  # noqa: E402
from zoo.run import max_error, one_line  # noqa: E402

import rducc  # noqa: E402


@dataclass
class Timing:
    """One model's figures: eager and Program seconds by thread count (CPU time
    of the calling thread at one thread, wall time at more; `wall` keeps the
    one-thread wall times), the top ops."""

    name: str
    eager: dict[int, float] = field(default_factory=dict)
    ours: dict[int, float] = field(default_factory=dict)
    wall: tuple[float, float] = (0.0, 0.0)
    top: str = ""
    failure: str = ""

    def ratio(self, threads: int) -> float:
        return self.ours[threads] / self.eager[threads]

    def wall_ratio(self) -> float:
        return self.wall[1] / self.wall[0]


def interleaved(first: Callable[[], object], second: Callable[[], object],
                calls: int) -> tuple[tuple[float, float], tuple[float, float]]:
    """Best wall time and best CPU time of the calling thread of each of two
    functions over `calls` alternating calls (after a warm-up), with Python's
    garbage collector paused, as `timeit` does: a collection over the
    compile's objects (hundreds of thousands) otherwise lands in one side's
    calls, whichever allocates at that moment."""
    first(), second()
    wall, cpu = [float("inf")] * 2, [float("inf")] * 2
    gc.collect()
    gc.disable()
    try:
        for _ in range(calls):
            for index, function in enumerate((first, second)):
                start, start_cpu = time.perf_counter(), time.thread_time()
                function()
                cpu[index] = min(cpu[index], time.thread_time() - start_cpu)
                wall[index] = min(wall[index], time.perf_counter() - start)
    finally:
        gc.enable()
    return (wall[0], wall[1]), (cpu[0], cpu[1])


def measure(name: str, thread_counts: tuple[int, ...], calls: int) -> Timing:
    timing = Timing(name)
    try:
        model, inputs = EVERY[name].build(1)
        with torch.no_grad():
            expected = model(*inputs)
            exported = torch.export.export(model, inputs)
        program = rducc.compile(exported, opt_level=2)
        error, within = max_error(program(*inputs), expected)
        if not within:
            timing.failure = f"differs from eager by {error:.1e}"
            return timing
    except Exception as error:  # noqa: BLE001 - a failing model is a row
        timing.failure = one_line(error)
        return timing
    with torch.no_grad():
        for threads in thread_counts:
            torch.set_num_threads(threads)
            wall, cpu = interleaved(lambda: model(*inputs), lambda: program(*inputs), calls)
            timing.eager[threads], timing.ours[threads] = cpu if threads == 1 else wall
            if threads == 1:
                timing.wall = wall
        torch.set_num_threads(1)
        totals, total = profile_by_op(program, inputs, max(calls // 2, 2))
    timing.top = ", ".join(f"{op} {seconds / total:.0%}" for op, seconds in totals.most_common(3))
    return timing


def _median_worst(values: list[float]) -> tuple[float, float]:
    return statistics.median(values), max(values)


EVERY: dict[str, ZooModel] = {**ZOO, **FULL_SIZE}
"""Every model this benchmark can time, by name."""


@dataclass(frozen=True)
class Group:
    """Models timed together, with the goals of their median and worst ratio."""

    label: str
    names: tuple[str, ...]
    median_goal: float
    worst_goal: float


def groups(quick: bool, sizes: tuple[str, ...], only: list[str] | None) -> list[Group]:
    """The small-config zoo (issue 19's goals) and the full-size models (issue 32's)."""
    small = tuple(QUICK if quick else ZOO)
    full = ("convnext_t",) if quick else tuple(FULL_SIZE)
    chosen = [Group("small configs", small, 1.1, 1.5)] if "small" in sizes else []
    chosen += [Group("full size", full, 1.0, 1.3)] if "full" in sizes else []
    if only:
        chosen = [Group(g.label, tuple(n for n in g.names if n in only), g.median_goal, g.worst_goal)
                  for g in chosen]
    return [g for g in chosen if g.names]


def run(quick: bool, names: list[str] | None = None, threads: tuple[int, ...] | None = None,
        calls: int | None = None, sizes: tuple[str, ...] = ("small", "full")) -> Section:
    logging.disable(logging.WARNING)
    calls = calls or (5 if quick else 15)
    everyone = os.cpu_count() or 1
    thread_counts = threads or ((1,) if everyone == 1 else (1, everyone))
    section = Section("Runtime on the model zoo: rducc.Program (-O2) vs PyTorch eager",
                      f"python bench/runtime_zoo.py{' --quick' if quick else ''}")
    timings = []
    for group in groups(quick, sizes, names):
        measured = []
        for name in group.names:
            timing = measure(name, thread_counts, calls)
            timings.append(timing)
            shown = timing.failure or "  ".join(f"{t} thread(s) {timing.ratio(t):.2f}x" for t in thread_counts)
            print(f"  {name}: {shown}", file=sys.stderr, flush=True)
            if not timing.failure:
                measured.append(timing)
        add_figures(section, group, measured, thread_counts)
    section.details += table(timings, thread_counts, calls)
    return section


def add_figures(section: Section, group: Group, measured: list[Timing], thread_counts: tuple[int, ...]) -> None:
    """The group's median and worst ratio at each thread count, beside its goals."""
    for threads in thread_counts:
        if not measured:
            break
        median, worst = _median_worst([t.ratio(threads) for t in measured])
        slowest = max(measured, key=lambda t: t.ratio(threads)).name
        label = f"{group.label}, " + ("1 thread (CPU time)" if threads == 1 else f"{threads} threads (wall time)")
        section.add(f"{label}: median Program / eager", f"{median:.2f}x over {len(measured)} models",
                    f"<= {group.median_goal}x", median <= group.median_goal)
        section.add(f"{label}: worst Program / eager", f"{worst:.2f}x ({slowest})", f"<= {group.worst_goal}x",
                    worst <= group.worst_goal)
        if threads == 1:
            median, worst = _median_worst([t.wall_ratio() for t in measured])
            slowest = max(measured, key=lambda t: t.wall_ratio()).name
            section.add(f"{group.label}, 1 thread (wall time): median / worst Program / eager",
                        f"{median:.2f}x / {worst:.2f}x ({slowest})")


def table(timings: list[Timing], thread_counts: tuple[int, ...], calls: int) -> list[str]:
    header = " | ".join(f"eager ms ({t}t) | Program ms ({t}t) | ratio ({t}t)" for t in thread_counts)
    lines = [f"Every model at batch 1, -O2, best of {calls} interleaved calls: at one thread the CPU time "
             "of the calling thread (wall: the best wall times' ratio), at more threads wall time; "
             "top ops: exclusive share of the Program's time at one thread.", "",
             f"| model | {header} | wall ratio (1t) | top ops |",
             "| --- |" + " --- |" * (3 * len(thread_counts) + 2)]
    for timing in timings:
        if timing.failure:
            lines.append(f"| {timing.name} |" + " - |" * (3 * len(thread_counts) + 1)
                         + f" not timed: {timing.failure.replace('|', '/')[:120]} |")
            continue
        cells = " | ".join(f"{timing.eager[t] * 1e3:.3f} | {timing.ours[t] * 1e3:.3f} | {timing.ratio(t):.2f}x"
                           for t in thread_counts)
        wall = f"{timing.wall_ratio():.2f}x" if timing.wall[0] else "-"
        lines.append(f"| {timing.name} | {cells} | {wall} | {timing.top} |")
    return [*lines, ""]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="the CI subset, fewer calls")
    parser.add_argument("--only", nargs="+", choices=sorted(EVERY), help="just these models")
    parser.add_argument("--sizes", nargs="+", choices=("small", "full"), default=("small", "full"),
                        help="the small-config zoo, the full-size models, or both (default)")
    parser.add_argument("--threads", nargs="+", type=int, help="thread counts to time (default: 1 and all)")
    parser.add_argument("--calls", type=int, help="interleaved calls of each side (default 15, --quick 5)")
    args = parser.parse_args()
    start = time.perf_counter()
    section = run(args.quick, args.only, tuple(args.threads) if args.threads else None, args.calls,
                  tuple(args.sizes))
    section.seconds = time.perf_counter() - start
    print(section.text())


if __name__ == "__main__":
    main()
