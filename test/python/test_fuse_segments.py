"""rdu-fuse's `pattern_segments` and `merged_segments` grow each group with a
`GrowingGroup` bound: the same groups as asking `_fits` of every longer one (the
plain definition, quadratic in a group's length), from few of those questions, and
a bound that is never below the working set it stands for."""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Sequence

import pytest
import torch
from torch import nn
from torch.export.experimental import _export_forward_backward
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation

from rducc.dialects.contracts import set_target
from rducc.dialects.program import functions
from rducc.dialects.shapes import value_bytes
from rducc.driver import import_exported
from rducc.model.kernel_model import GrowingGroup, last_reads, make_group, untiled, working_set
from rducc.passes import rdu_fuse
from rducc.pipeline import default_passes, run_passes
from rducc.targets import Target, load_target


class TinyLM(nn.Module):
    """An embedding (a gather), a norm, a gated MLP and a loss: long elementwise runs."""

    def __init__(self) -> None:
        super().__init__()
        self.embed = nn.Embedding(32, 16)
        self.norm = nn.LayerNorm(16)
        self.up = nn.Linear(16, 32)
        self.down = nn.Linear(32, 16)
        self.head = nn.Linear(16, 32)

    def forward(self, ids: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        x = self.embed(ids)
        h = self.up(self.norm(x))
        x = x + self.down(nn.functional.gelu(h) * torch.sigmoid(h))
        return nn.functional.cross_entropy(self.head(x).flatten(0, 1), labels.flatten())


def segments_by_definition(ops: Sequence[Operation], target: Target) -> list[list[Operation]]:
    """The definition: `_fits` asked of the segment with each next op."""
    segments: list[list[Operation]] = []
    current = rdu_fuse._Segment([])
    position = {op: at for at, op in enumerate(ops)}  # what follows a break: the ops from it on
    for index, op in enumerate(ops):
        joins = True
        if isinstance(op, rdu_fuse.HEAVY_OPS):
            joins = rdu_fuse._joins_heavy(current, op)
        elif isinstance(op, rdu_fuse.ReduceOp):
            joins = rdu_fuse._joins_reduce(current, op)
        if current.ops and rdu_fuse.stage_of(op) != rdu_fuse.stage_of(current.ops[0]):
            joins = False
        if joins and current.ops and not rdu_fuse._fits([*current.ops, op], target):
            joins = False
        if not joins and current.ops:
            pulls = isinstance(op, (*rdu_fuse.HEAVY_OPS, rdu_fuse.ReduceOp))
            moved = rdu_fuse._pull_back(current, position, index) if pulls else []
            kept = current.ops[: len(current.ops) - len(moved)]
            if kept:
                segments.append(kept)
            current = rdu_fuse._Segment(moved)
        current.ops.append(op)
    if current.ops:
        segments.append(current.ops)
    return segments


def crossing_bytes(run: list[Operation], cut: int) -> int:
    """Bytes of the values ops before `cut` make that ops from `cut` on, or ops outside
    the run, read."""
    later, members = set(run[cut:]), set(run)
    return sum(value_bytes(r) for op in run[:cut] for r in op.results
               if any(u.operation in later or u.operation not in members for u in r.uses))


def merged_by_definition(segments: list[list[Operation]], target: Target) -> list[list[Operation]]:
    """The definition of -O2's merge: `_fits` asked of each neighbour joined; where it
    does not fit, the kernel takes the neighbour's ops up to its first matmul or conv
    that leave the fewest bytes crossing, fewer than at its start, when they fit."""
    run = [op for segment in segments for op in segment]
    merged: list[list[Operation]] = []
    for segment in segments:
        same_stage = merged and rdu_fuse.stage_of(merged[-1][0]) == rdu_fuse.stage_of(segment[0])
        if same_stage and rdu_fuse._segment_key(merged[-1]) == rdu_fuse._segment_key(segment):
            if rdu_fuse._fits(merged[-1] + segment, target):
                merged[-1] = merged[-1] + segment
                continue
            start = run.index(segment[0])
            heavy = next((at for at, op in enumerate(segment) if isinstance(op, rdu_fuse.HEAVY_OPS)),
                         len(segment) - 1)
            fewer = [stop for stop in range(1, heavy + 1)
                     if crossing_bytes(run, start + stop) < crossing_bytes(run, start)]
            best = min(fewer, key=lambda stop: (crossing_bytes(run, start + stop), stop), default=0)
            if best and rdu_fuse._fits(merged[-1] + segment[:best], target):
                merged[-1], segment = merged[-1] + segment[:best], segment[best:]
        merged.append(list(segment))
    return merged


@pytest.fixture(scope="module")
def runs() -> list[list[Operation]]:
    """The op runs rdu-fuse segments in a tiny LM's training step (its joint graph)."""
    torch.manual_seed(0)
    batch = (torch.randint(0, 32, (2, 8)), torch.randint(0, 32, (2, 8)))
    module: ModuleOp = import_exported(_export_forward_backward(torch.export.export(TinyLM(), batch)))
    set_target(module, load_target("sn40l"))
    passes = default_passes(1)
    run_passes(module, passes[: [p.name for p in passes].index("rdu-fuse")])
    found = [run for function in functions(module) for run in rdu_fuse.runs_between_calls(function.body.block)]
    assert max(len(run) for run in found) > 100
    return found


def small_targets(count: int) -> list[Target]:
    """Targets whose limits cut a tiny model's runs: few PCUs, PMUs and SRAM bytes."""
    chip, draw = load_target("sn40l"), random.Random(0)
    return [dataclasses.replace(chip, pcus=draw.randint(8, 120), pmus=draw.randint(8, 120),
                                sram_bytes=draw.randint(4_000, 60_000), pmu_bytes=draw.choice([512, 2048, 8192]))
            for _ in range(count)]


def test_segments_equal_the_definition_from_few_fits_questions(
        runs: list[list[Operation]], monkeypatch: pytest.MonkeyPatch) -> None:
    asked = {"definition": 0, "bound": 0}
    fits = rdu_fuse._fits

    def counting(who: str) -> None:
        def counted(ops: Sequence[Operation], target: Target) -> bool:
            asked[who] += 1
            return fits(ops, target)
        monkeypatch.setattr(rdu_fuse, "_fits", counted)

    cuts = merges = merged_cuts = 0
    for target in [load_target("sn40l"), *small_targets(4)]:
        for run in runs:
            rdu_fuse._ANSWERS.clear()
            counting("definition")
            want = segments_by_definition(run, target)
            want_merged = merged_by_definition(want, target)
            counting("bound")
            got = rdu_fuse.pattern_segments(run, target)
            assert got == want
            assert rdu_fuse.merged_segments(got, target) == want_merged
            cuts += len(want) - 1
            merges += len(want) - len(want_merged)
            merged_cuts += len(want_merged) - 1
    rdu_fuse._ANSWERS.clear()
    assert cuts > 4 * 8 * len(runs) and merges > 0 and merged_cuts > 0  # the targets' limits do cut
    assert asked["bound"] * 8 < asked["definition"]


def test_bound_is_never_below_the_working_set(runs: list[list[Operation]]) -> None:
    target = small_targets(1)[0]
    draw = random.Random(1)
    for run in runs:
        last_read, position = last_reads(run), {op: at for at, op in enumerate(run)}
        for start in sorted(draw.sample(range(len(run)), min(4, len(run)))):
            group = GrowingGroup(last_read, position, start)
            for end in range(start, min(start + 60, len(run))):
                group.add(run[end], target)
                bound = group.bound(target)
                exact = working_set(make_group(run[start:end + 1]), untiled(), target)
                assert bound.total_bytes >= exact.total_bytes
                assert bound.pmus >= exact.pmus
                assert bound.stages == exact.stages
                whole = make_group(run[start:end + 1])
                assert (group.inputs, group.outputs) == (set(whole.inputs), set(whole.outputs))
