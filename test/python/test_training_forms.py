"""Training programs written in forms the other training tests do not write
(issue 27, held-out models): a forward returning its loss in a tuple beside
its logits (transformers' `return_dict=False`), keyword inputs that are not
tensors, SGD with momentum and dampening (torch.optim's undamped first
step), each against eager on the same batches (the CLI's:
test_training_cli.py); the full-precision loss region is no autocast
region, and views in a bf16 autocast region survive torch tracing it again
(GPT-2's merged heads); a batch norm keeping a cumulative average
(momentum=None) trains as eager's."""

from __future__ import annotations

import copy

import numpy as np
import pytest
import torch
from torch import nn
from training_cases import assert_sgd_steps_match

import rducc
from rducc.errors import RduccError
from rducc.training.program import export_for_training


class TwoHeads(nn.Module):
    """A trunk, a class head and a regression head; returns (loss, logits) as
    transformers does with return_dict=False, the regression loss weighted by
    a keyword that is not a tensor."""

    def __init__(self) -> None:
        super().__init__()
        self.trunk = nn.Linear(6, 12)
        self.classes = nn.Linear(12, 3)
        self.value = nn.Linear(12, 1)

    def forward(self, x: torch.Tensor, labels: torch.Tensor, target: torch.Tensor,
                value_weight: float = 1.0, return_logits: bool = True) -> tuple[torch.Tensor, ...]:
        hidden = torch.tanh(self.trunk(x))
        logits = self.classes(hidden)
        loss = (nn.functional.cross_entropy(logits, labels)
                + value_weight * nn.functional.smooth_l1_loss(self.value(hidden).squeeze(-1), target))
        return (loss, logits) if return_logits else (loss,)


def _batch(seed: int, rows: int = 4) -> dict[str, torch.Tensor]:
    generator = torch.Generator().manual_seed(seed)
    return {"x": torch.randn(rows, 6, generator=generator), "labels": torch.randint(0, 3, (rows,), generator=generator),
            "target": torch.randn(rows, generator=generator)}


def _damped_sgd(model: nn.Module) -> torch.optim.SGD:
    """Two param groups, both with momentum and dampening (the second Nesterov-free, with decay)."""
    return torch.optim.SGD([{"params": model.trunk.parameters(), "lr": 0.05},
                            {"params": [*model.classes.parameters(), *model.value.parameters()],
                             "weight_decay": 0.01}], lr=0.1, momentum=0.9, dampening=0.3)


def test_tuple_loss_constant_keywords_and_damped_sgd_train_as_eager() -> None:
    torch.manual_seed(0)
    model = TwoHeads()
    eager = copy.deepcopy(model)
    optimizer = _damped_sgd(eager)
    batches = [_batch(seed) for seed in range(3)]
    constants = {"value_weight": 0.5, "return_logits": True}
    want = []
    for batch in batches:
        optimizer.zero_grad()
        loss = eager(**batch, **constants)[0]
        loss.backward()
        optimizer.step()
        want.append(loss.item())
    program = rducc.compile_training(model, {**batches[0], **constants}, optimizer=_damped_sgd(model), opt_level=0)
    got = [float(program.step(**batch, **constants)) for batch in batches[:2]]
    got.append(float(program.step(**batches[2])))  # the constants may be left out: they are compiled in
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    trained = program.parameters()
    for name, value in eager.state_dict().items():
        torch.testing.assert_close(trained[name], value, rtol=1e-4, atol=1e-5, msg=name)
    state = program.state_dict()  # torch.optim's format: only the momentum buffers, no program flag
    assert all(set(entry) == {"momentum_buffer"} for entry in state["state"].values())
    for index, parameter in enumerate(p for group in optimizer.param_groups for p in group["params"]):
        torch.testing.assert_close(state["state"][index]["momentum_buffer"],
                                   optimizer.state[parameter]["momentum_buffer"], rtol=1e-4, atol=1e-6)
    with pytest.raises(RduccError, match="input 'value_weight': the step was compiled with value_weight=0.5"):
        program.step(**batches[0], value_weight=2.0)

    # a state with no momentum buffers makes the next step a first step again (undamped)
    fresh = _damped_sgd(model)
    program.load_state_dict(fresh.state_dict())
    program.load_parameters(model.state_dict())
    loss = float(program.step(**batches[1]))
    expected = model(**batches[1], **constants)[0]
    expected.backward()
    fresh.step()
    assert loss == pytest.approx(expected.item(), rel=1e-5)
    for name, value in model.state_dict().items():
        torch.testing.assert_close(program.parameters()[name], value, rtol=1e-4, atol=1e-5, msg=name)


def test_full_precision_loss_is_no_autocast_region() -> None:
    """torch.export records even a disabled autocast as a `wrap_with_autocast`
    region, inside which the joint export mis-traced GPT-2's merged heads
    (`view` of a strided tensor); the wrapper enters autocast only under mixed precision."""
    model, batch = TwoHeads(), _batch(0)
    plain = export_for_training(model, batch, None, loss_scale=4.0)[0]
    assert not [n for n in plain.graph.nodes if "autocast" in str(n.target).lower()]
    mixed = export_for_training(model, batch, None, mixed_precision="bf16")[0]
    assert [n for n in mixed.graph.nodes if "autocast" in str(n.target).lower()]


class MergedHeads(nn.Module):
    """Attention whose merged heads are flattened with `view` into an addmm, as
    GPT-2's Conv1D does: at export CPU flash attention's output makes that view
    legal; traced again inside the bf16 autocast region its math's output does not."""

    def __init__(self) -> None:
        super().__init__()
        self.qkv = nn.Linear(16, 48)
        self.out = nn.Linear(16, 5)

    def forward(self, x: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        b, t, _ = x.shape
        q, k, v = (h.view(b, t, 2, 8).transpose(1, 2) for h in self.qkv(x).split(16, -1))
        merged = nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True).transpose(1, 2).reshape(b, t, 16)
        logits = torch.addmm(self.out.bias, merged.view(-1, 16), self.out.weight.t())
        return nn.functional.cross_entropy(logits, labels.view(-1))


def test_merged_heads_train_under_bf16_as_eager_autocast() -> None:
    torch.manual_seed(0)
    model = MergedHeads()
    eager, full = copy.deepcopy(model), copy.deepcopy(model)
    x, labels = torch.randn(2, 4, 16), torch.randint(0, 5, (2, 4))

    def train(module: nn.Module, autocast: bool) -> list[float]:
        optimizer, losses = torch.optim.SGD(module.parameters(), lr=0.1), []
        for _ in range(2):
            optimizer.zero_grad()
            with torch.autocast("cpu", torch.bfloat16, enabled=autocast):
                loss = module(x, labels)
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
        return losses

    program = rducc.compile_training(model, (x, labels), optimizer="sgd", lr=0.1, mixed_precision="bf16", opt_level=0)
    got = [float(program.step(x, labels)) for _ in range(2)]
    want, float32 = train(eager, True), train(full, False)
    budget = max(abs(a - b) for a, b in zip(want, float32))  # eager autocast's own distance from float32
    assert budget > 1e-5  # bf16 is visible
    # within twice that: CPU flash attention accumulates in float32 inside its kernel, the attention's
    # math rducc differentiates runs its matmuls in bf16 under autocast
    assert max(abs(a - b) for a, b in zip(got, want)) <= 2 * budget


def test_positional_number_is_refused_with_its_keyword() -> None:
    batch = _batch(0)
    with pytest.raises(RduccError, match=r"example input #3 is a float \(0.5\), not a tensor; pass it by keyword "
                                         r"\(value_weight=0.5, in a dict of inputs\)"):
        rducc.compile_training(TwoHeads(), (batch["x"], batch["labels"], batch["target"], 0.5))


class CumulativeNorm(nn.Module):
    """A batch norm keeping a cumulative average (momentum=None: the factor 1/num_batches_tracked
    changes every step) over a (batch, channels, length) input; returns the loss."""

    def __init__(self) -> None:
        super().__init__()
        self.fc, self.bn = nn.Linear(3, 4, bias=False), nn.BatchNorm1d(4, momentum=None)

    def forward(self, x: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        return nn.functional.mse_loss(self.bn(self.fc(x).transpose(1, 2)), target)


def test_cumulative_batch_norm_trains_as_eager() -> None:
    torch.manual_seed(0)
    model = CumulativeNorm().train()
    eager = copy.deepcopy(model)
    data = [(torch.randn(4, 5, 3) + step, torch.randn(4, 4, 5)) for step in range(3)]
    program = rducc.compile_training(model, data[0], optimizer="sgd", lr=0.1, opt_level=0)
    assert_sgd_steps_match(program, eager, data, lr=0.1)
    state = program.parameters()
    for name, buffer in eager.named_buffers():  # each step's factor its own: 1, 1/2, 1/3
        torch.testing.assert_close(torch.as_tensor(state[name]), buffer, rtol=1e-5, atol=1e-6, msg=name)
