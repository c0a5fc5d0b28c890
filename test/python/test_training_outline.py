"""A training step's repeated layers are outlined by structure, phase by phase
(`rdu_outline_layers.outline_training_step`): torch's joint graph has no module paths, so
the forward, backward and optimizer layers are found by the period of each
phase's ops. A Llama step has one function per phase, each called
once per layer, and it trains as eager does."""

from __future__ import annotations

import copy
from collections import Counter

import pytest
import torch
from training_cases import LOSS_ATOL, LOSS_RTOL, PARAM_ATOL, PARAM_RTOL, language_model_loss
from xdsl.dialects import func

import rducc
from rducc.dialects.contracts import (
    arg_attrs,
    calls_of,
    data_parallel_of,
    is_outlined,
    microbatches_of,
    op_stage,
    partition_of,
    phase_of,
    result_shards,
    shard_of,
)
from rducc.dialects.program import find_entry, functions
from rducc.model.cost_model import estimate
from rducc.model.training_speed import training_estimate
from rducc.passes import rdu_partition
from rducc.pipeline import pipeline_text
from rducc.targets import load_target


def _tiny_llama(layers: int) -> torch.nn.Module:
    from models import LogitsOnly
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    config = LlamaConfig(vocab_size=64, hidden_size=32, intermediate_size=64, num_hidden_layers=layers,
                         num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=32)
    return LogitsOnly(LlamaForCausalLM(config)).train()


def _outlining(opt_level: int, sockets: int = 1, split: tuple[int, ...] = (0, 0)) -> str:
    """The -O pipeline with the step outlined whatever its size (a tiny step is
    kept inline by default: `rdu_outline_layers.outlines_training_step`)."""
    return pipeline_text(opt_level, sockets=sockets, split=split).replace(
        "rdu-outline-layers", "rdu-outline-layers{training=always}")


def test_pipelined_step_is_outlined_per_phase_staged_by_layer_and_trains_as_eager() -> None:
    """A 4-layer Llama step on sn40l-8 at pp=2: outlined per phase before rdu-partition
    (`@layer_forward`, `@layer_backward`, `@layer_optimizer`, one call a layer, in
    phase order), each call whole on one stage (`training_stages`): layers 0-1 on
    stage 0 and 2-3 on stage 1, the backward and optimizer calls of a layer on its
    forward's stage (the backward runs the layers last to first); the modeled step is
    1F1B over the stages' times; two steps give eager's losses and parameters."""
    layers = 4
    model = _tiny_llama(layers)
    reference = copy.deepcopy(model)
    ids, labels = torch.randint(0, 64, (2, 6)), torch.randint(0, 64, (2, 6))
    program = rducc.compile_training(model, (ids, labels), optimizer=torch.optim.SGD(model.parameters(), lr=0.5),
                                     loss_fn=language_model_loss, opt_level=0, target="sn40l-8",
                                     passes=_outlining(0, sockets=8, split=(1, 2)))
    assert partition_of(program.module) == (1, 2)
    outlined = {f.sym_name.data: f for f in program.module.ops if isinstance(f, func.FuncOp) and is_outlined(f)}
    assert {name: calls_of(f) for name, f in outlined.items()} == {
        "layer_forward": layers, "layer_backward": layers, "layer_optimizer": layers}
    entry = find_entry(program.module)
    assert entry is not None
    calls = [op for op in entry.body.block.ops if isinstance(op, func.CallOp)]
    assert [(op.callee.string_value(), phase_of(op), op_stage(op)) for op in calls] == [
        *[("layer_forward", "forward", s) for s in (0, 0, 1, 1)],
        *[("layer_backward", "backward", s) for s in (1, 1, 0, 0)],
        *[("layer_optimizer", "optimizer", s) for s in (0, 0, 1, 1)]]
    step = training_estimate(program.module, load_target("sn40l-8"))
    schedule = step.schedule
    # the schedule reads the cost model's settled loops: each stage's layer loops (held as one
    # configuration, forms22) launched once on their stage, no launch counted twice or missed
    report = estimate(program.module, load_target("sn40l-8"))
    held = [loop for loop in report.loops if loop.looped and loop.shared]
    assert {loop.callee for loop in held} == {"layer_forward", "layer_backward"} and len(held) == 4
    assert sum(step.launches) == report.kernel_launches == len(report.kernels) - sum(
        loop.launches_saved for loop in report.loops)
    m = microbatches_of(program.module)
    assert schedule.stages == 2 and schedule.microbatches == m == 2 and min(schedule.stage_s) > 0
    assert schedule.bubble_s == pytest.approx(sum(schedule.stage_s) - max(schedule.stage_s))  # (m - 1) max cancels
    # each stage costs its own layers' kernels (an outlined layer's at its call's stage): stages of
    # two layers each, the embedding on one and the head and loss on the other (not looped: each
    # pays its launch, where a held layer body is launched once), so the bubble is near 1F1B's
    # (pp - 1) / (m + pp - 1) of the step (forms22's held bodies made the layers' share smaller, so
    # the stages' other kernels part them more: 62 and 78 us modeled, were 358 and 374)
    assert min(schedule.stage_s) > 0.6 * max(schedule.stage_s)
    assert 0.2 < schedule.bubble_fraction <= 1 / 3 + 1e-12
    _trains_as_eager(program, reference, ids, labels, steps=2)


def _trains_as_eager(program, reference: torch.nn.Module, ids: torch.Tensor, labels: torch.Tensor,
                     steps: int) -> None:
    """`steps` SGD steps (lr 0.5) of the compiled step give eager's loss at each step
    and eager's parameters after the last."""
    eager = torch.optim.SGD(reference.parameters(), lr=0.5)
    for _ in range(steps):
        loss = program.step(ids, labels)
        eager.zero_grad()
        expected = language_model_loss(reference(ids), labels)
        expected.backward()
        eager.step()
        torch.testing.assert_close(loss.float(), expected.detach(), rtol=LOSS_RTOL, atol=LOSS_ATOL)
    ours = program.parameters()
    for name, parameter in reference.named_parameters():
        torch.testing.assert_close(ours[name], parameter.detach(), rtol=PARAM_RTOL, atol=PARAM_ATOL)


def _visits(monkeypatch: pytest.MonkeyPatch) -> Counter:
    """Count the ops rdu-partition visits, by the function that holds them."""
    visits: Counter = Counter()
    original = rdu_partition._TensorPartitioner._partition_op

    def counting(self, op):  # type: ignore[no-untyped-def]
        visits[self.function.sym_name.data] += 1
        return original(self, op)

    monkeypatch.setattr(rdu_partition._TensorPartitioner, "_partition_op", counting)
    return visits


@pytest.mark.parametrize("dp, tp", [(2, 1), (1, 2)])
def test_partitioned_step_keeps_its_outlined_layers(dp: int, tp: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """On sn40l-8 the -O pipeline outlines the step's layers before rdu-partition
    (`pipeline.with_partition`): each of @layer_forward/@layer_backward/@layer_optimizer
    is partitioned once (its ops visited once, not once a call, none inline in the
    step), still called once per layer, and the split step trains as eager does."""
    layers = 2
    model = _tiny_llama(layers)
    reference = copy.deepcopy(model)
    ids, labels = torch.randint(0, 64, (2, 6)), torch.randint(0, 64, (2, 6))
    visits = _visits(monkeypatch)
    program = rducc.compile_training(model, (ids, labels), optimizer=torch.optim.SGD(model.parameters(), lr=0.5),
                                     loss_fn=language_model_loss, opt_level=0, target="sn40l-8",
                                     passes=_outlining(0, sockets=8, split=(tp, 1, dp)))
    assert partition_of(program.module) == (tp, 1) and data_parallel_of(program.module) == dp
    outlined = {f.sym_name.data: f for f in functions(program.module) if is_outlined(f)}
    assert {name: calls_of(f) for name, f in outlined.items()} == {
        "layer_forward": layers, "layer_backward": layers, "layer_optimizer": layers}
    entry = find_entry(program.module)
    assert entry is not None
    calls = Counter(op.callee.string_value() for op in entry.body.walk() if isinstance(op, func.CallOp))
    assert calls == {name: layers for name in outlined}
    collectives = Counter(op.name for f in outlined.values() for op in f.body.walk() if "all_" in op.name)
    assert collectives["rdu.all_reduce"] > 0  # the layers themselves are split (tp: rows; dp: gradients)
    for name, callee in outlined.items():
        if name != "layer_optimizer" or tp > 1:
            assert 0 < visits[name] <= sum(1 for _ in callee.body.walk()), name  # once, not once a call
    inline_ops = sum(layers * sum(1 for _ in f.body.walk()) for f in outlined.values())
    assert visits[entry.sym_name.data] < inline_ops  # the layers' ops were not partitioned inline
    if tp > 1:
        _splits_through_the_backward(outlined, entry)
    _trains_as_eager(program, reference, ids, labels, steps=2)


def _splits_through_the_backward(outlined: dict[str, func.FuncOp], entry: func.FuncOp) -> None:
    """tp through an outlined backward and optimizer (`rdu_partition.callee_seeds`):
    the backward layer takes the forward's saved values and weights split as the
    forward made them, so it gathers nothing, and its input gradients' partial
    sums are added before their all-reduce: as many all-reduces as the forward
    (Megatron's two a layer); every matrix gradient it returns is split, and the
    optimizer layer updates split weights with split gradients, gathering nothing;
    no layer call's result or weight is gathered in the step between the calls."""
    counts = {name: Counter(op.name for op in f.body.walk()) for name, f in outlined.items()}
    assert counts["layer_backward"]["rdu.all_gather"] == 0 and counts["layer_optimizer"]["rdu.all_gather"] == 0
    assert counts["layer_backward"]["rdu.all_reduce"] == counts["layer_forward"]["rdu.all_reduce"] == 2
    backward = outlined["layer_backward"]
    ret = backward.body.block.last_op
    assert isinstance(ret, func.ReturnOp)
    matrices = [i for i, v in enumerate(ret.operands) if len(v.type.get_shape()) == 2]  # type: ignore[attr-defined]
    shards = result_shards(backward)
    assert matrices and all(shards[i] is not None for i in matrices)  # the weight gradients, split
    weights = [attrs for arg, attrs in zip(backward.args, arg_attrs(backward))
               if "rdu.weight" in attrs and len(arg.type.get_shape()) == 2]  # type: ignore[attr-defined]
    assert weights and all(shard_of(attrs) is not None for attrs in weights)  # its matmuls read split weights
    layer_values = {v for op in entry.body.walk() if isinstance(op, func.CallOp) for v in (*op.results, *op.operands)}
    gathered = [op for op in entry.body.walk() if op.name == "rdu.all_gather" and op.operands[0] in layer_values]
    assert not gathered, gathered
    # vocab-parallel cross entropy: neither the logits nor the output layer's weight is gathered
    # over the vocabulary (64), only each rank's row maxima
    wide = [op for op in entry.body.walk() if op.name == "rdu.all_gather" and 64 in op.results[0].type.get_shape()]
    assert not wide and any(op.name == "rdu.all_gather" for op in entry.body.walk()), wide
