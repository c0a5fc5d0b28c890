"""Training across sockets (issue 27, item 4): a training step split across
the batch (dp, data-parallel replicas) or across the weights (tp, through the
backward's transposed splits) on sn40l-8 gives eager's losses and parameters,
step after step, at -O0 and -O2; the split program really is split (the
replicas' inputs are halves of the batch, the gradients are all-reduced)."""

from __future__ import annotations

import copy

import pytest
import torch
from torch import nn

from rducc.api import after
from rducc.dialects.rdu.collectives import AllGatherOp, AllReduceOp
from rducc.dialects.contracts import arg_attrs, data_parallel_of, is_input, shard_of
from rducc.dialects.program import entry_function
from rducc.errors import RduccError
from rducc.passes.rdu_partition import RduPartition
from rducc.training import compile_training


class MLPLoss(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc1 = nn.Linear(16, 32)
        self.fc2 = nn.Linear(32, 8)

    def forward(self, x: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        return nn.functional.cross_entropy(self.fc2(torch.relu(self.fc1(x))), target)


class LlamaLoss(nn.Module):
    """A one-layer Llama (transformers) whose forward returns the next-token loss."""

    def __init__(self) -> None:
        super().__init__()
        from transformers import LlamaConfig, LlamaForCausalLM

        config = LlamaConfig(vocab_size=64, hidden_size=32, intermediate_size=64, num_hidden_layers=1,
                             num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=32)
        self.model = LlamaForCausalLM(config)

    def forward(self, ids: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        logits = self.model(input_ids=ids, use_cache=False).logits
        return nn.functional.cross_entropy(logits.flatten(0, 1), labels.flatten())


OPTIMIZERS = {
    "sgd": (torch.optim.SGD, {"lr": 0.05, "momentum": 0.9, "weight_decay": 0.01, "nesterov": True}),
    "adamw": (torch.optim.AdamW, {"lr": 1e-2, "weight_decay": 0.1}),
}


def _split(dp: int = 0, tp: int = 0) -> list:
    return [after("rdu-canonicalize", RduPartition(dp=dp, tp=tp, pp=1))]


def _train_both(model: nn.Module, batches: list, optimizer: str, opt_level: int, dp: int = 0, tp: int = 0):
    """Train a copy eagerly and the model through rducc on sn40l-8; yield both losses each step."""
    eager = copy.deepcopy(model)
    cls, options = OPTIMIZERS[optimizer]
    program = compile_training(model, batches[0], optimizer=optimizer, target="sn40l-8", opt_level=opt_level,
                               passes=_split(dp, tp), **options)
    reference = cls(eager.parameters(), **options)
    losses = []
    for batch in batches:
        reference.zero_grad()
        loss = eager(*batch)
        loss.backward()
        reference.step()
        losses.append((float(program.step(*batch)), loss.item()))
    return program, eager, losses


@pytest.mark.parametrize(("dp", "tp", "optimizer", "opt_level"), [
    (2, 0, "sgd", 0), (2, 0, "adamw", 2), (0, 2, "adamw", 0), (0, 2, "sgd", 2),
])
def test_mlp_twenty_steps_split_match_eager(dp, tp, optimizer, opt_level):
    torch.manual_seed(0)
    model = MLPLoss()
    batches = [(torch.randn(4, 16), torch.randint(0, 8, (4,))) for _ in range(20)]
    program, eager, losses = _train_both(model, batches, optimizer, opt_level, dp, tp)
    for step, (got, want) in enumerate(losses):
        assert got == pytest.approx(want, rel=1e-5, abs=1e-6), f"step {step}"
    trained = program.parameters()
    for name, parameter in eager.named_parameters():
        torch.testing.assert_close(trained[name], parameter.detach(), rtol=1e-4, atol=1e-6, msg=name)


def test_data_parallel_program_splits_the_batch_and_reduces_gradients():
    torch.manual_seed(0)
    model = MLPLoss()
    batch = (torch.randn(4, 16), torch.randint(0, 8, (4,)))
    program = compile_training(copy.deepcopy(model), batch, optimizer=None, target="sn40l-8", opt_level=0,
                               passes=_split(dp=2))
    module = program.module
    assert data_parallel_of(module) == 2
    forward = entry_function(module)
    inputs = [(arg.type.get_shape(), shard_of(attrs)) for arg, attrs in zip(forward.args, arg_attrs(forward))
              if is_input(attrs)]
    assert [shape[0] for shape, _ in inputs] == [2, 2]  # each replica holds half the batch
    assert all(split is not None and split.dims() == {0} for _, split in inputs)
    collectives = [op for op in module.walk() if isinstance(op, AllReduceOp | AllGatherOp)]
    assert not any(isinstance(op, AllGatherOp) for op in collectives)
    assert sum(isinstance(op, AllReduceOp) for op in collectives) >= 4  # a gradient each, and the loss's sums
    loss, *grads = program.step(*batch)
    expected = model(*batch)
    expected.backward()
    assert float(loss) == pytest.approx(float(expected), rel=1e-6)
    for got, (name, parameter) in zip(grads, model.named_parameters()):
        torch.testing.assert_close(got, parameter.grad, rtol=1e-5, atol=1e-7, msg=name)


def _run_joint_graph(joint: torch.export.ExportedProgram, inputs: tuple) -> list[torch.Tensor]:
    """torch's joint graph run eagerly: the loss and the gradients, flat."""
    import torch.utils._pytree as pytree

    count = len(joint.graph_signature.output_specs)
    joint._module_call_graph[0].signature.out_spec = pytree.tree_flatten(tuple(range(count)))[1]
    return list(joint.module()(*inputs))


@pytest.mark.parametrize(("dp", "tp"), [(2, 0), (0, 2)])
def test_llama_gradients_split_match_torch_joint_graph(dp, tp):
    """Loss and every gradient of a one-layer Llama at dp=2 and tp=2 equal those of
    torch's own joint graph run eagerly (the backward torch exports)."""
    from torch.export.experimental import _export_forward_backward

    torch.manual_seed(0)
    model = LlamaLoss().train()
    batch = (torch.randint(0, 64, (2, 8)), torch.randint(0, 64, (2, 8)))
    program = compile_training(model, batch, optimizer=None, target="sn40l-8", opt_level=0, passes=_split(dp, tp))
    loss, *grads = program.step(*batch)
    expected = _run_joint_graph(_export_forward_backward(torch.export.export(model, batch)), batch)
    assert len(grads) == len(expected) - 1
    torch.testing.assert_close(torch.as_tensor(loss), expected[0], rtol=1e-5, atol=1e-6)
    for got, want in zip(grads, expected[1:]):
        torch.testing.assert_close(torch.as_tensor(got), want, rtol=1e-4, atol=1e-6)


def test_data_parallel_must_divide_the_batch():
    torch.manual_seed(0)
    batch = (torch.randn(3, 16), torch.randint(0, 8, (3,)))
    with pytest.raises(RduccError, match=r"dp=2 does not divide the batch of 3 \(input 'x'"):
        compile_training(MLPLoss(), batch, optimizer="sgd", lr=0.1, target="sn40l-8", passes=_split(dp=2))
