"""What every benchmark shares: figures with their goals, timing, the machine.

A benchmark module has `run(quick: bool) -> Section` and a `main()` that
prints its section; `bench/run_all.py` runs them all and writes
BENCHMARKS.md from the sections.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

# numpy's BLAS on one thread, as torch is told in the runtime benchmark: same threads
# on both sides (set before numpy is first imported)
for _variable in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_variable, "1")

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "examples"))
warnings.filterwarnings("ignore", category=FutureWarning)
warnings.filterwarnings("ignore", category=UserWarning)


@dataclass
class Figure:
    """One measured or modeled figure, beside its goal (if it has one)."""

    name: str
    value: str
    goal: str = ""
    met: bool | None = None  # None: no goal, just a figure

    @property
    def verdict(self) -> str:
        return "" if self.met is None else ("met" if self.met else "NOT met")


Modeled = Callable[[Any], float]
"""A modeled headline as a function of the target (a `rducc.targets.Target`): the
program compiled once, at the target's nominal figures, costed again on the
target given (`estimate(module, target)`, about 0.05 s)."""


@dataclass
class Section:
    """A benchmark's results: its figures, then free text (tables, profiles, notes)."""

    title: str
    command: str
    figures: list[Figure] = field(default_factory=list)
    details: list[str] = field(default_factory=list)
    seconds: float = 0.0
    modeled: dict[str, tuple[Modeled, Any]] = field(default_factory=dict)
    """Each modeled headline's name -> (its value on any target, the target it was
    modeled on): `markdown` shows it as a range over that target's assumed figures."""

    def add(self, name: str, value: str, goal: str = "", met: bool | None = None) -> None:
        self.figures.append(Figure(name, value, goal, met))

    def model(self, name: str, headline: Modeled, target: Any) -> None:
        """Register a modeled headline, to be shown as a range (`ranges_table`)."""
        self.modeled[name] = (headline, target)

    def ranges_table(self) -> list[str]:
        """Each modeled headline as low..high over its target's ranged figures (each at
        its low and its high, one at a time: compiler/model/ranges.py) and the figure it is
        most sensitive to."""
        from rducc.model.ranges import headline_ranges

        if not self.modeled:
            return []
        lines = ["Modeled headlines as ranges over the target's assumed and derived figures (each figure at "
                 "its low and its high, one at a time; compiler/targets/sn40l.toml gives the ranges):", "",
                 "| headline | value | low..high | most sensitive to (headline at its low..high) |",
                 "| --- | --- | --- | --- |"]
        for name, (headline, target) in self.modeled.items():
            ranged = headline_ranges(headline, target, {name: lambda value: value}).headlines[0]
            top = ranged.tornado[0] if ranged.tornado else None
            sensitive = f"`{top.figure}` ({top.at_low:.4g}..{top.at_high:.4g})" if top else "-"
            lines.append(f"| {name} | {ranged.value:.4g} | {ranged.low:.4g}..{ranged.high:.4g} | {sensitive} |")
        return lines

    def text(self) -> str:
        """Plain text for a terminal."""
        lines = [f"== {self.title}  ({self.command})"]
        width = max((len(f.name) for f in self.figures), default=0)
        for f in self.figures:
            goal = f"  goal {f.goal}: {f.verdict}" if f.goal else ""
            lines.append(f"  {f.name:<{width}}  {f.value}{goal}")
        lines += ["", *self.details] if self.details else []
        return "\n".join(lines)

    def markdown(self) -> str:
        """A markdown section: the figures as a table, the details below it."""
        lines = [f"## {self.title}", "", f"`{self.command}` ({self.seconds:.0f} s)", ""]
        lines += ["| figure | result | goal | |", "| --- | --- | --- | --- |"]
        lines += [f"| {f.name} | {f.value} | {f.goal or '-'} | {f.verdict} |" for f in self.figures]
        ranges = self.ranges_table()
        if ranges:
            lines += ["", *ranges]
        if self.details:
            lines += ["", *self.details]
        return "\n".join(lines) + "\n"


def best_time(function: Callable[[], object], calls: int) -> float:
    """Best wall time of `calls` calls, after one warm-up call."""
    function()
    best = float("inf")
    for _ in range(calls):
        start = time.perf_counter()
        function()
        best = min(best, time.perf_counter() - start)
    return best


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def machine() -> str:
    """The machine and versions a run was measured on, one line."""
    import torch
    import xdsl
    from importlib.metadata import version

    return (
        f"{os.cpu_count()} cores ({cpu_model()}, {platform.machine()}), "
        f"Python {platform.python_version()}, torch {torch.__version__}, "
        f"xdsl {getattr(xdsl, '__version__', None) or version('xdsl')}, numpy {version('numpy')}"
    )


def ratio_goal(value: float, limit: float, at_most: bool = True) -> tuple[str, bool]:
    """`value` as `1.23x` and whether it meets `<= limit` (or `>= limit`)."""
    return f"{value:.2f}x", (value <= limit if at_most else value >= limit)


def standalone(run: Callable[[bool], Section], doc: str) -> None:
    """The `main()` of a benchmark run alone: `--quick`, then print its section."""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer layers and repeats")
    args = parser.parse_args()
    start = time.perf_counter()
    section = run(args.quick)
    section.seconds = time.perf_counter() - start
    print(section.text())


def looping_figure(looped, unlooped, roofline_s: float) -> str:
    """Kernel looping in one line: the launches, what the loops saved, and the
    same program's time and roofline ratio costed with `kernel_looping = false`
    (`looped` and `unlooped` are cost-model Reports of one module)."""
    loops = "; ".join(f"{loop.calls} calls of @{loop.callee} " + ("one loop" if loop.looped else "not looped")
                      for loop in looped.loops) or "no run of calls"
    return (f"{looped.kernel_launches} launches for {len(looped.kernels)} kernels ({loops}: "
            f"{looped.launches_saved} launch{'' if looped.launches_saved == 1 else 'es'} saved); without kernel looping "
            f"{unlooped.modeled_time_s * 1e3:.3f} ms, {roofline_s / unlooped.modeled_time_s:.1%} of roofline")


_DECOMPOSED: dict[Any, tuple[Any, float]] = {}
"""Each model a run compiles: its Core ATen program and the seconds its decomposition took."""


def import_once(key: Any, export: Callable[[], Any]) -> tuple[Any, float]:
    """Verified level-1 IR of the program `export()` gives, as `rducc.driver.import_exported`
    makes it, and the seconds that took. The program is exported and decomposed once per
    `key` for the whole run: every target and opt level a benchmark compiles it for imports
    the same Core ATen program (decomposition is most of a full-size compile, and it does not
    depend on the target). The seconds include the decomposition's, so a compile time
    reported from them is that of a compile from the exported program, as before."""
    from rducc.driver import verify
    from rducc.frontend.importer import decompose, import_program

    if key not in _DECOMPOSED:
        exported = export()
        start = time.perf_counter()
        _DECOMPOSED[key] = (decompose(exported), time.perf_counter() - start)
    program, decompose_s = _DECOMPOSED[key]
    start = time.perf_counter()
    module = import_program(program)
    verify(module)
    return module, decompose_s + time.perf_counter() - start
