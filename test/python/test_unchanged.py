"""Answers remembered while nothing rewrites the IR (`rducc.dialects.unchanged`): the
same program and the same modeled figures as answering every question afresh, one
index of the module's calls a block, and nothing stale after a rewrite."""

from __future__ import annotations

from contextlib import nullcontext

import pytest
import torch
from test_precision import _across_calls, _matmul
from test_mapping import SN40L, parse_module
from xdsl.dialects import func
from xdsl.dialects.builtin import BFloat16Type, Float32Type

import rducc
import rducc.dialects.precision as precision
from rducc.dialects.precision import compute_element
from rducc.dialects.unchanged import afresh, unchanged
from rducc.model.cost_model import estimate
from rducc.pipeline import pipeline_text
from rducc.model.training_speed import training_ranges, training_speed
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


def _tiny_llama() -> tuple[torch.nn.Module, tuple[torch.Tensor, torch.Tensor]]:
    from models import LogitsOnly
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(11)
    config = LlamaConfig(vocab_size=64, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=32)
    return LogitsOnly(LlamaForCausalLM(config)).train(), (torch.randint(0, 64, (2, 6)), torch.randint(0, 64, (2, 6)))


def test_remembered_answers_give_the_same_program_and_figures() -> None:
    """A bf16 mixed-precision two-layer Llama AdamW step, its layers outlined (the
    contractions' widened operands traced across calls), compiled and costed with
    remembered answers and afresh: the same IR, the same modeled step, phases and
    ranges over the target's figures."""
    from training_cases import language_model_loss

    target = load_target("sn40l")
    outlined = pipeline_text(2).replace("rdu-outline-layers", "rdu-outline-layers{training=always}")
    found = []
    for fresh in (False, True):
        model, inputs = _tiny_llama()
        with afresh() if fresh else nullcontext():
            step = rducc.compile_training(model, inputs, optimizer="adamw", loss_fn=language_model_loss,
                                          mixed_precision="bf16", target="sn40l", passes=outlined)
            assert any(isinstance(op, func.CallOp) for op in step.module.walk())
            speed = training_speed(step.module, target)
            ranges = training_ranges(step.module, target, speed).to_dict()
            found.append((str(step.module), speed.step_s, dict(speed.phase_s), ranges,
                          estimate(step.module, SN40L).modeled_time_s))
    assert found[0][0] == found[1][0]
    assert found[0][1:] == found[1][1:]
