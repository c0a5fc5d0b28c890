"""Answers remembered while nothing rewrites the IR (`rducc.dialects.unchanged`): the
same program and the same modeled figures as answering every question afresh, one
index of the module's calls a block, and nothing stale after a rewrite."""

from __future__ import annotations

import dataclasses
from contextlib import nullcontext

import pytest
import torch
from test_mapping import SN40L, parse_module
from test_precision import _across_calls, _matmul
from torch import nn
from xdsl.dialects import func
from xdsl.dialects.builtin import BFloat16Type, Float32Type, ModuleOp

import rducc
import rducc.dialects.precision as precision
from rducc.dialects.precision import compute_element
from rducc.dialects.unchanged import afresh, unchanged
from rducc.model.cost_model import estimate
from rducc.model.training_speed import training_ranges, training_speed
from rducc.pipeline import pipeline_text
from rducc.targets import load_target


def test_a_call_added_between_blocks_is_seen() -> None:
    """@product's argument is bf16 widened by its one caller; a second call passing it a
    float32 product makes it float32: a block after the rewrite (and a question outside
    any block) sees the new call, not the index of the block before."""
    module = parse_module(_across_calls(True))
    matmul = _matmul(module)
    with unchanged():
        assert isinstance(compute_element(matmul), BFloat16Type)
        assert isinstance(compute_element(matmul), BFloat16Type)
    first = next(op for op in module.walk() if isinstance(op, func.CallOp) and op.callee.string_value() == "product")
    again = func.CallOp("product", [first.results[0]], [first.results[0].type])
    block = first.parent_block()
    assert block is not None
    block.insert_op_after(again, first)
    assert isinstance(compute_element(matmul), Float32Type)
    with unchanged():
        assert isinstance(compute_element(matmul), Float32Type)


def test_a_block_indexes_the_module_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """Inside one block the functions and calls are indexed once however many questions
    cross a call; outside, once a question."""
    module = parse_module(_across_calls(True))
    matmul = _matmul(module)
    indexed: list[object] = []
    real = precision._module_index

    def counted(top):  # type: ignore[no-untyped-def]
        indexed.append(top)
        return real(top)

    monkeypatch.setattr(precision, "_module_index", counted)
    with unchanged():
        for _ in range(3):
            compute_element(matmul)
    assert len(indexed) == 1
    compute_element(matmul)
    compute_element(matmul)
    assert len(indexed) == 3


class _Block(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.up, self.down = nn.Linear(16, 32), nn.Linear(32, 16)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.down(nn.functional.gelu(self.up(x)))


class _Stack(nn.Module):
    """Two identical blocks (outlined: one layer function, called twice) and a loss."""

    def __init__(self) -> None:
        super().__init__()
        self.layers = nn.ModuleList([_Block(), _Block()])

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for layer in self.layers:
            x = layer(x)
        return x.pow(2).mean()


def test_remembered_answers_give_the_same_program_and_figures(monkeypatch: pytest.MonkeyPatch) -> None:
    """A bf16 mixed-precision AdamW step of two blocks, outlined (the
    contractions' widened operands traced across calls), lowered and costed with
    remembered answers and afresh (the one imported module lowered twice): the same
    IR, the same modeled step, phases and ranges (over three of the target's figures:
    each a full estimate at its ends)."""
    import rducc.training.compile as training_compile

    imported: list[tuple[ModuleOp, tuple, dict]] = []
    lower = training_compile.lower

    def kept(module, *args, **kwargs):  # type: ignore[no-untyped-def]
        imported.append((module.clone(), args, kwargs))
        return lower(module, *args, **kwargs)

    monkeypatch.setattr(training_compile, "lower", kept)
    torch.manual_seed(11)
    outlined = pipeline_text(2).replace("rdu-outline-layers", "rdu-outline-layers{training=always}")
    step = rducc.compile_training(_Stack(), (torch.randn(4, 16),), optimizer="adamw", mixed_precision="bf16",
                                  target="sn40l", passes=outlined)
    ((again, args, kwargs),) = imported
    with afresh():
        lower(again, *args, **kwargs)
    assert any(isinstance(op, func.CallOp) for op in again.walk())
    assert str(step.module) == str(again)

    target = load_target("sn40l")
    ranged = dataclasses.replace(target, ranges=tuple((n, f) for n, f in target.ranges
                                                      if n in ("hbm_bandwidth", "compute_efficiency", "ddr_bandwidth")))
    found = []
    for fresh in (False, True):
        with afresh() if fresh else nullcontext():
            speed = training_speed(step.module, target)
            ranges = training_ranges(step.module, ranged, speed).to_dict()
            found.append((speed.step_s, dict(speed.phase_s), ranges, estimate(step.module, SN40L).modeled_time_s))
    assert len(found[1][2]["headlines"][0]["tornado"]) == 3
    assert found[0] == found[1]
