"""Compile time of a training step by layer: what one more decoder layer costs.

Llama 3.1 8B's joint graph (forward, loss, backward; bench/train_llama.py's
step, meta device, sequence 4,096) is compiled at -O1 for sn40l with 2 and
with 4 decoder layers, each twice in the same run: with the scaling
mechanisms on, and off:

- decompose: only the joint graph's nodes that torch's table decomposes are
  traced (`rducc.frontend.local_decompose`), where torch's
  `run_decompositions` retraces the whole graph (off: always the latter);
- rdu-fuse: each distinct candidate group is weighed once
  (`rducc.model.group_signature`; off: every group is weighed);
- rdu-outline-layers: each phase's repeated layers become one function
  called once per layer (`rdu_outline_layers.outline_training_step`), so rdu-fuse,
  rdu-tile, rdu-place-tiers, rdu-insert-dma and rdu-sram-alloc work on one
  layer of each phase (off: every layer inline).

A stage's cost per layer is (its seconds at 4 layers - at 2) / 2; the
ratios off / on are measured in the same run on the same machine. The
compiled IR is the same either way (test_train_scale.py checks rdu-fuse's).

Depth: the Llama 3.1 70B AdamW step (bench/train_llama.py's
`70b:sn40l-16:adamw`, rducc.compile_training's step, -O2, sn40l-16) compiled
and costed at several depths (2, 8 and 16 decoder layers; --quick: 1 and 2;
--depths N ...: those): the seconds of each stage that grows with depth,
export and torch's joint graph included, the cost model's walk of the
lowered step (its ranges: one walk per end of each ranged figure) apart, and
what one more layer costs between each two depths given, with the process's
CPU seconds (the machine is shared: its wall seconds are noisy). A stage
whose seconds a layer grow with depth is one that is not linear in it.

Run: python bench/train_compile_scaling.py [--quick]   (--quick: 1 and 2 layers)
     python bench/train_compile_scaling.py --layers 4 8
     python bench/train_compile_scaling.py --depths 2 8 16   (the depth table alone)
"""

from __future__ import annotations

import itertools
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

import train_llama  # noqa: E402
from common import Section, standalone

import rducc.frontend.decompositions as decompositions  # noqa: E402
import rducc.passes.rdu_fuse as fuse  # noqa: E402
import rducc.passes.rdu_outline_layers as outline_layers  # noqa: E402
from rducc.driver import CompileOptions, StageTimes, compile_module  # noqa: E402

STAGES = ("decompose", "rdu-fuse", "rdu-tile", "rdu-place-tiers", "rdu-insert-dma", "rdu-sram-alloc")
"""The stages the mechanisms speed up; the total is every stage's."""


@contextmanager
def mechanisms(on: bool) -> Iterator[None]:
    """The scaling mechanisms as they are (on), or replaced by the per-node behaviour (off)."""
    local, signature = decompositions.decompose_locally, fuse.group_signature
    outline = outline_layers.outline_training_step
    if not on:
        fresh = itertools.count()
        decompositions.decompose_locally = lambda ep, table: None  # type: ignore[assignment]
        fuse.group_signature = lambda ops: next(fresh)  # type: ignore[assignment]
        outline_layers.outline_training_step = lambda module, function: {}  # type: ignore[assignment]
    try:
        yield
    finally:
        decompositions.decompose_locally, fuse.group_signature = local, signature  # type: ignore[assignment]
        outline_layers.outline_training_step = outline  # type: ignore[assignment]


def stage_seconds(layers: int, on: bool) -> dict[str, float]:
    """Seconds by stage compiling the `layers`-layer 8B step (export excluded)."""
    joint = train_llama.joint_step("8b", layers)
    times = StageTimes()
    with mechanisms(on):
        compile_module(joint, CompileOptions(target="sn40l", opt_level=1, times=times))
    found = {stage: times.seconds.get(stage, 0.0) for stage in STAGES}
    found["total"] = sum(times.seconds.values())
    return found


def run_by_layer(quick: bool, layers: tuple[int, int] | None = None) -> Section:
    """The 8B joint graph at two depths, the mechanisms off and on (module docstring)."""
    small, large = layers or ((1, 2) if quick else (2, 4))
    command = "python bench/train_compile_scaling.py" + (" --quick" if quick and not layers else "")
    if layers:
        command += f" --layers {small} {large}"
    section = Section("Training step compile time by layer: Llama 3.1 8B joint graph, seq 4,096, -O1, sn40l", command)
    measured = {(n, on): stage_seconds(n, on) for on in (False, True) for n in (small, large)}
    rows = [f"| stage | off: {small} layers | off: {large} | off: a layer | on: {small} layers | on: {large} "
            "| on: a layer | off / on a layer |", "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    for stage in (*STAGES, "total"):
        per = {on: (measured[large, on][stage] - measured[small, on][stage]) / (large - small) for on in (False, True)}
        ratio = per[False] / per[True] if per[True] > 0 else float("inf")
        off = f"{measured[small, False][stage]:.2f} s | {measured[large, False][stage]:.2f} s | {per[False]:.2f} s"
        on = f"{measured[small, True][stage]:.2f} s | {measured[large, True][stage]:.2f} s | {per[True]:.2f} s"
        rows.append(f"| {stage} | {off} | {on} | {ratio:.1f}x |")
        print(rows[-1], file=sys.stderr, flush=True)
        section.add(f"{stage}: seconds a decoder layer, mechanisms off / on", f"{per[False]:.2f} / {per[True]:.2f} s")
    section.details += rows
    return section


DEPTH_STAGES = ("export", "joint graph", "decompose", "import", "verify", "optimizer", "rdu-outline-layers",
                "rdu-partition", "rdu-fuse", "rdu-place-saved", "rdu-place-tiers", "rdu-insert-dma",
                "rdu-sram-alloc", "cost model")
"""The 70B step's stages shown by depth (the total is every stage's)."""


def depth_seconds(layers: int) -> dict[str, float]:
    """Seconds by stage compiling and costing the `layers`-layer 70B AdamW step on
    sn40l-16 (wall), with the process's CPU seconds for all of it (`cpu`: what
    the other sessions' load on the shared machine does not inflate)."""
    cpu = time.process_time()
    times = train_llama.compile_step("70b", layers, "sn40l-16", "adamw")[5]  # its stage times
    found = {stage: times.seconds.get(stage, 0.0) for stage in DEPTH_STAGES}
    found["total"] = sum(times.seconds.values())
    found["cpu"] = time.process_time() - cpu
    return found


def per_layer(measured: dict[int, dict[str, float]], stage: str, small: int, large: int) -> float:
    """What one more decoder layer costs a stage between two depths."""
    return (measured[large][stage] - measured[small][stage]) / (large - small)


def depth_rows(depths: Sequence[int]) -> tuple[list[str], dict[str, float]]:
    """The depth table (seconds by stage at each depth, then a layer's between
    each two depths in turn) and the total CPU seconds at each depth. A stage
    linear in depth costs the same a layer in every interval; one that grows
    faster costs more a layer in the later ones (the last column: the last
    interval's seconds a layer over the first's)."""
    measured = {n: depth_seconds(n) for n in depths}
    pairs = list(itertools.pairwise(depths))
    header = " | ".join(f"{n} layers" for n in depths) + " | " + " | ".join(f"a layer, {a} -> {b}" for a, b in pairs)
    rows = [f"| stage | {header} | last / first a layer |", "| --- |" + " --- |" * (len(depths) + len(pairs) + 1)]
    for stage in (*DEPTH_STAGES, "total", "cpu"):
        steps = [per_layer(measured, stage, a, b) for a, b in pairs]
        growth = f"{steps[-1] / steps[0]:.2f}" if len(steps) > 1 and steps[0] > 0.05 else "-"
        name = "total (CPU seconds of the process)" if stage == "cpu" else stage
        rows.append(f"| {name} | " + " | ".join(f"{measured[n][stage]:.1f} s" for n in depths) + " | "
                    + " | ".join(f"{step:.2f} s" for step in steps) + f" | {growth} |")
        print(rows[-1], file=sys.stderr, flush=True)
    return rows, {str(n): measured[n]["cpu"] for n in depths}


def run_depths(quick: bool, depths: Sequence[int] | None = None) -> Section:
    """The 70B AdamW step's compile seconds by depth (module docstring)."""
    chosen = tuple(depths or ((1, 2) if quick else (2, 8, 16)))
    command = "python bench/train_compile_scaling.py --depths " + " ".join(map(str, chosen))
    section = Section("Training step compile time by depth: Llama 3.1 70B + AdamW, seq 4,096, -O2, sn40l-16", command)
    rows, totals = depth_rows(chosen)
    for n, seconds in totals.items():
        section.add(f"compile and cost, {n} decoder layers (CPU seconds)", f"{seconds:.1f} s")
    section.details += rows
    return section


def run(quick: bool) -> Section:
    """By layer (mechanisms off and on), then by depth (the 70B step)."""
    section = run_by_layer(quick)
    depth = run_depths(quick)
    section.figures += depth.figures
    section.details += ["", f"{depth.title} (`{depth.command}`):", "", *depth.details]
    return section


def main() -> None:
    if "--depths" in sys.argv:
        at = sys.argv.index("--depths")
        depths = [int(n) for n in sys.argv[at + 1:] if n.isdigit()]
        del sys.argv[at:at + 1 + len(depths)]
        if len(depths) < 2:
            sys.exit("--depths: give at least two depths (e.g. --depths 2 8 16)")
        standalone(lambda quick: run_depths(quick, depths), __doc__ or "")
    elif "--layers" in sys.argv:
        at = sys.argv.index("--layers")
        small, large = int(sys.argv[at + 1]), int(sys.argv[at + 2])
        del sys.argv[at : at + 3]
        standalone(lambda quick: run_by_layer(quick, (small, large)), __doc__ or "")
    else:
        standalone(run, __doc__ or "")


if __name__ == "__main__":
    main()
