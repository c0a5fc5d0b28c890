"""Compile time of a training step with the IR's answers remembered and afresh, same run.

`rducc.dialects.unchanged`: while nothing rewrites the IR (the cost model's
estimates and their ranges, rdu-fuse weighing one function's groups,
rdu-map-units), each op's compute element, the module's call index, a body's
streamed views and an op's or a kernel's work before the target's figures are
worked out once. This compiles bench/train_llama.py's step (`compile_step`:
export, joint graph, AdamW, -O2, and the cost model's step and MFU range, 49
estimates on sn40l-16) with every question answered afresh (`afresh()`) and
with the answers remembered, alternating, and prints each stage's seconds, the
ratios afresh / remembered and whether the modeled figures are the same.

Run: python bench/train_compile_memo.py [--quick] [--rounds N] [--only MODEL:TARGET]
(default 70b:sn40l-16 at 2 decoder layers; --quick: 1 layer)
"""

from __future__ import annotations

import argparse
import time
from contextlib import nullcontext

import train_llama  # noqa: E402
from common import Section

from rducc.dialects.unchanged import afresh  # noqa: E402

STAGES = ("rdu-fuse", "cost model", "rdu-map-units", "rdu-partition")
"""The stages that ask the remembered questions (rdu-partition's split chooser runs the cost model)."""


def compiled(size: str, target: str, layers: int, fresh: bool) -> tuple[dict[str, float], float, tuple]:
    """Stage seconds, the whole compile's seconds and the modeled figures of one compile."""
    start = time.perf_counter()
    with afresh() if fresh else nullcontext():
        speed, _, _, split, mfu, times, _ = train_llama.compile_step(size, layers, target, "adamw")
    figures = (speed.step_s, tuple(sorted(speed.phase_s.items())), speed.ddr_bytes, split, mfu)
    return dict(times.seconds), time.perf_counter() - start, figures


def run(quick: bool, rounds: int = 1, only: str = "70b:sn40l-16") -> Section:
    size, target = only.split(":")
    layers = 1 if quick else 2
    section = Section(f"Training step compile time, answers remembered: {size} AdamW, {layers} layers, {target}",
                      f"python bench/train_compile_memo.py{' --quick' if quick else ''} --rounds {rounds} "
                      f"--only {only}")
    runs: dict[bool, list[tuple[dict[str, float], float]]] = {True: [], False: []}
    figures = set()
    for _ in range(rounds):
        for fresh in (True, False):
            seconds, whole, found = compiled(size, target, layers, fresh)
            runs[fresh].append((seconds, whole))
            figures.add(found)
            label = "afresh" if fresh else "remembered"
            print(f"{label}: {whole:.1f} s; " + ", ".join(f"{s} {seconds.get(s, 0.0):.1f} s" for s in STAGES),
                  flush=True)
    rows = ["| stage | afresh (s) | remembered (s) | afresh / remembered |", "| --- | --- | --- | --- |"]
    for stage in (*STAGES, "whole compile"):
        best = {fresh: min(w if stage == "whole compile" else s.get(stage, 0.0) for s, w in runs[fresh])
                for fresh in (True, False)}
        ratio = best[True] / best[False] if best[False] > 0 else float("nan")
        rows.append(f"| {stage} | {best[True]:.1f} | {best[False]:.1f} | {ratio:.2f}x |")
        if stage in ("rdu-fuse", "cost model", "whole compile"):
            section.add(f"{stage}: afresh / remembered", f"{ratio:.2f}x")
    section.add("modeled figures the same both ways", "yes" if len(figures) == 1 else f"NO: {sorted(figures)}")
    section.details += rows
    return section


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="1 decoder layer")
    parser.add_argument("--rounds", type=int, default=1, help="afresh / remembered pairs (the best of each kept)")
    parser.add_argument("--only", default="70b:sn40l-16", metavar="MODEL:TARGET")
    args = parser.parse_args()
    start = time.perf_counter()
    section = run(args.quick, args.rounds, args.only)
    section.seconds = time.perf_counter() - start
    print(section.text())


if __name__ == "__main__":
    main()
