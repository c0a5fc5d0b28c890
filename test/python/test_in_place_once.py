"""`written_in_place` finds each kernel's dims and its block's order once, not once
per global it updates (a training step fused into few kernels updates many
globals in each: held:widths at dp=2 with AdamW, 320 questions of 3 kernels), with
the same answer as asking afresh."""

from __future__ import annotations

from pathlib import Path

import pytest
from xdsl.context import Context
from xdsl.dialects import arith, builtin, func
from xdsl.parser import Parser

from rducc.dialects.program import find_entry
from rducc.dialects.rdu.dataflow import Dataflow, KernelOp
from rducc.dialects.tier import Memory
from rducc.dialects.unchanged import afresh
from rducc.model import in_place
from rducc.pipeline import parse_passes, run_passes

STEP = Path(__file__).resolve().parents[1] / "passes" / "rdu-place-saved-in-place.mlir"


def test_each_kernel_is_asked_once(monkeypatch: pytest.MonkeyPatch) -> None:
    context = Context()
    for dialect in (builtin.Builtin, func.Func, arith.Arith, Dataflow, Memory):
        context.load_dialect(dialect)
    module = Parser(context, STEP.read_text()).parse_module()
    run_passes(module, parse_passes("rdu-fuse{level=2}"))
    entry = find_entry(module)
    assert entry is not None
    asked: list[KernelOp] = []
    loops = in_place.candidate_loops

    def counted(group):  # type: ignore[no-untyped-def]
        asked.append(group.ops[0].parent_op())
        return loops(group)

    monkeypatch.setattr(in_place, "candidate_loops", counted)
    gathered: list[object] = []
    gathers = in_place.gathered_inputs

    def counted_gathers(group):  # type: ignore[no-untyped-def]
        gathered.append(group.ops[0].parent_op())
        return gathers(group)

    monkeypatch.setattr(in_place, "gathered_inputs", counted_gathers)
    found = in_place.written_in_place(entry)
    assert len(found) > len(set(asked)) >= 1  # several updates of one kernel
    assert len(asked) == len(set(asked))
    assert len(gathered) == len(set(gathered)) >= 1  # each kernel's gathered inputs found once too
    with afresh():
        again = in_place.written_in_place(entry)
    assert again == found and len(asked) > 2 * len(set(asked))
