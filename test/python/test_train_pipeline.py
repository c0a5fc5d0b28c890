"""Pipeline-parallel training with executed microbatches (issue 27, item 4):
`compile_training(..., pp=2, microbatches=M)` on sn40l-8 splits the batch into
M microbatches, runs them through the two stages in 1F1B order, sums their
gradients and updates once: the losses and parameters are eager's full-batch
step's, and the cost model's 1F1B schedule counts the same M. With dp=2 too,
each replica runs its share of every microbatch; a deep step outlined by
rdu-outline-layers (its layers as @layer_forward/backward/optimizer calls) is
outlined microbatch by microbatch, and pipelined alike."""

from __future__ import annotations

import copy

import pytest
import torch
from torch import nn

from rducc.dialects.contracts import (
    Phase,
    calls_of,
    executed_microbatches,
    is_outlined,
    microbatches_of,
    op_stage,
    partition_of,
    phase_of,
    spmd_ranks,
)
from rducc.dialects.program import entry_function, functions
from rducc.dialects.tier import ComputeOp
from rducc.errors import RduccError
from rducc.model.pipeline_schedule import one_f_one_b_order, stage_tasks
from rducc.model.training_speed import training_estimate
from rducc.pipeline import pipeline_text
from rducc.targets import load_target
from rducc.training import compile_training


class MLPLoss(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc1 = nn.Linear(16, 32)
        self.fc2 = nn.Linear(32, 32)
        self.fc3 = nn.Linear(32, 8)

    def forward(self, x: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        hidden = torch.relu(self.fc2(torch.relu(self.fc1(x))))
        return nn.functional.cross_entropy(self.fc3(hidden), target)


def _llama() -> nn.Module:
    from transformers import LlamaConfig, LlamaForCausalLM

    config = LlamaConfig(vocab_size=32, hidden_size=16, intermediate_size=32, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=16)
    return LlamaForCausalLM(config)


def _mlp_batches(steps: int) -> list[dict[str, torch.Tensor]]:
    return [{"x": torch.randn(8, 16), "target": torch.randint(0, 8, (8,))} for _ in range(steps)]


def _llama_batches(steps: int) -> list[dict[str, torch.Tensor]]:
    batches = []
    for _ in range(steps):
        ids = torch.randint(0, 32, (4, 4))
        batches.append({"input_ids": ids, "labels": ids})
    return batches


CASES = {
    # model, batches, optimizer, its options, split, the pipeline (None: -O0's)
    "mlp": (MLPLoss, _mlp_batches, torch.optim.AdamW, {"lr": 1e-2, "weight_decay": 0.1}, {"pp": 2}, None),
    # a 2-layer Llama outlined (as a deep one is), dp=2 x pp=2: one rdu-partition of the outlined step
    "llama": (_llama, _llama_batches, torch.optim.SGD, {"lr": 0.05, "momentum": 0.9, "weight_decay": 0.01},
              {}, "rdu-canonicalize,rdu-outline-layers{training=always},rdu-partition{pp=2 dp=2}," +
              pipeline_text(0).split("rdu-outline-layers,")[1]),
}


def _loss(output) -> torch.Tensor:
    return output.loss if hasattr(output, "loss") else output


@pytest.mark.parametrize(("case", "microbatches"), [("mlp", 4), ("llama", 2)])
def test_pipelined_microbatches_match_eager_full_batch(case, microbatches):
    torch.manual_seed(0)
    make, batches_of, optimizer_class, options, split, passes = CASES[case]
    model = make()
    eager = copy.deepcopy(model)
    batches = batches_of(3 if passes is None else 2)
    optimizer = optimizer_class(model.parameters(), **options)
    program = compile_training(model, batches[0], optimizer=optimizer, target="sn40l-8", **split,
                               microbatches=microbatches, opt_level=0, passes=passes)
    module = program.module
    assert partition_of(module) == (1, 2)
    assert microbatches_of(module) == executed_microbatches(module) == microbatches
    if passes is not None:  # every phase's layers outlined, each called once a layer and microbatch
        calls = {f.sym_name.data: calls_of(f) for f in functions(module) if is_outlined(f)}
        assert set(calls) == {"layer_forward", "layer_backward", "layer_optimizer"}, calls
        assert calls["layer_forward"] == calls["layer_backward"] == 2 * microbatches, calls
        assert spmd_ranks(module) == 2  # the dp replicas of a stage
    target = load_target("sn40l-8")
    estimate, one = training_estimate(module, target), training_estimate(module, target, microbatches=1)
    schedule = estimate.schedule
    assert schedule.microbatches == microbatches and schedule.stages == 2
    assert schedule.bubble_s == pytest.approx(sum(schedule.stage_s) - max(schedule.stage_s))
    assert 0 < schedule.bubble_fraction < one.schedule.bubble_fraction
    assert estimate.step_s >= schedule.step_s
    _assert_interleaved(module)
    reference = optimizer_class(eager.parameters(), **options)
    for step, batch in enumerate(batches):  # eager: the whole batch in one step
        reference.zero_grad()
        expected = _loss(eager(**batch))
        expected.backward()
        reference.step()
        assert float(program.step(**batch)) == pytest.approx(expected.item(), rel=1e-5, abs=1e-6), f"step {step}"
    trained = program.parameters()
    for name, parameter in eager.named_parameters():
        torch.testing.assert_close(trained[name], parameter.detach(), rtol=1e-4, atol=1e-6, msg=name)


def _assert_interleaved(module) -> None:
    """The runtime runs the placed step's kernels in order: under 1F1B a
    forward kernel runs after the first backward one (the whole batch through
    the stages would run every forward first), on both stages."""
    computes = [op for op in entry_function(module).body.block.ops if isinstance(op, ComputeOp)]
    phases = [({phase_of(inner) for inner in op.walk()} - {None}, op_stage(op)) for op in computes]
    first_backward = next(i for i, (found, _) in enumerate(phases) if Phase.BACKWARD in found)
    assert any(Phase.FORWARD in found for found, _ in phases[first_backward + 1:])
    assert {stage for _, stage in phases} == {0, 1}


def test_one_f_one_b_order_runs_each_task_after_what_it_needs():
    order = one_f_one_b_order(3, 4)
    assert sorted(order) == sorted(task for s in range(3) for task in stage_tasks(s, 3, 4))
    position = {task: index for index, task in enumerate(order)}
    for stage, microbatch, kind in order:
        if kind == "forward" and stage > 0:
            assert position[(stage - 1, microbatch, "forward")] < position[(stage, microbatch, kind)]
        if kind == "backward":
            assert position[(stage, microbatch, "forward")] < position[(stage, microbatch, kind)]
            if stage < 2:
                assert position[(stage + 1, microbatch, "backward")] < position[(stage, microbatch, kind)]
    for stage in range(3):  # each stage keeps its own 1F1B sequence, at most pp - stage forwards ahead
        assert [t for t in order if t[0] == stage] == stage_tasks(stage, 3, 4)
    assert stage_tasks(0, 2, 3) == [(0, 0, "forward"), (0, 1, "forward"), (0, 0, "backward"),
                                    (0, 2, "forward"), (0, 1, "backward"), (0, 2, "backward")]


def test_microbatches_must_divide_the_batch():
    batch = (torch.randn(6, 16), torch.randint(0, 8, (6,)))
    with pytest.raises(RduccError, match=r"microbatches 4: input #0 has batch 6, which does not split into 4"):
        compile_training(MLPLoss(), batch, optimizer="sgd", lr=0.1, target="sn40l-8", pp=2, microbatches=4)
