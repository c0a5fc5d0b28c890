"""Training breadth (issue 27): forms of training step no other test trains,
each against eager PyTorch on a copy with torch.optim on the same batches
(bench/train_zoo.py trains the model families).

- gradient clipping inside the step (`max_grad_norm`, as
  `torch.nn.utils.clip_grad_norm_` between backward and step), under a static
  loss scale too, and its refused forms;
- a recurrent model (nn.LSTM, which torch.export unrolls into core ops) with
  AdamW param groups as users configure them (no decay on biases and norms).
"""

from __future__ import annotations

import copy

import pytest
import torch
from torch import nn

import rducc
from rducc.errors import RduccError


class Widths(nn.Module):
    """A stack whose widths change, with a different activation after each layer."""

    def __init__(self) -> None:
        super().__init__()
        self.layers = nn.Sequential(nn.Linear(12, 24), nn.GELU(), nn.Linear(24, 8), nn.SiLU(), nn.Linear(8, 5))

    def forward(self, x: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        return nn.functional.cross_entropy(self.layers(x), labels)


def _batch(seed: int = 1) -> tuple[torch.Tensor, torch.Tensor]:
    generator = torch.Generator().manual_seed(seed)
    return torch.randn(4, 12, generator=generator) * 3, torch.randint(0, 5, (4,), generator=generator)


def _assert_state_close(program: rducc.TrainingProgram, reference: nn.Module) -> None:
    got = program.parameters()
    for name, value in reference.state_dict().items():
        torch.testing.assert_close(got[name], value, rtol=1e-4, atol=1e-5, msg=lambda m, n=name: f"{n}: {m}")


@pytest.mark.parametrize(("norm_type", "loss_scale"), [(2.0, 1.0), (float("inf"), 64.0)])
def test_clip_grad_norm_in_the_step_is_eagers(norm_type: float, loss_scale: float) -> None:
    torch.manual_seed(0)
    model = Widths()
    reference = copy.deepcopy(model)
    data = [_batch(seed) for seed in range(3)]
    program = rducc.compile_training(model, data[0], optimizer=torch.optim.SGD(model.parameters(), lr=0.3,
                                     momentum=0.9), opt_level=0, max_grad_norm=0.05, grad_norm_type=norm_type,
                                     loss_scale=loss_scale)
    optimizer = torch.optim.SGD(reference.parameters(), lr=0.3, momentum=0.9)
    for batch in data:
        got = float(program.step(*batch))
        optimizer.zero_grad()
        loss = reference(*batch)
        loss.backward()
        total = nn.utils.clip_grad_norm_(reference.parameters(), 0.05, norm_type)
        assert total > 0.05  # the clipping acts on every step
        optimizer.step()
        assert got == pytest.approx(float(loss), rel=1e-5)
    _assert_state_close(program, reference)


def test_clip_grad_norm_refused_forms_are_one_clear_error() -> None:
    model, batch = Widths(), _batch()
    with pytest.raises(RduccError, match="max_grad_norm -1: give a positive finite number"):
        rducc.compile_training(model, batch, optimizer="sgd", max_grad_norm=-1)
    with pytest.raises(RduccError, match="with dynamic loss scaling is not supported"):
        rducc.compile_training(model, batch, optimizer="sgd", max_grad_norm=1.0, loss_scale="dynamic", opt_level=0)


class Recurrent(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.embed = nn.Embedding(10, 6)
        self.rnn = nn.LSTM(6, 8, batch_first=True)
        self.norm = nn.LayerNorm(8)
        self.head = nn.Linear(8, 10)

    def forward(self, ids: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        hidden, _ = self.rnn(self.embed(ids))
        return nn.functional.cross_entropy(self.head(self.norm(hidden)).flatten(0, 1), labels.flatten())


def _groups(model: nn.Module) -> torch.optim.Optimizer:
    decay = [p for n, p in model.named_parameters() if p.ndim >= 2 and "norm" not in n]
    plain = [p for n, p in model.named_parameters() if p.ndim < 2 or "norm" in n]
    return torch.optim.AdamW([{"params": decay, "weight_decay": 0.1}, {"params": plain, "weight_decay": 0.0,
                              "lr": 3e-3}], lr=1e-2)


def test_lstm_with_adamw_param_groups_is_eagers() -> None:
    torch.manual_seed(0)
    model = Recurrent()
    reference = copy.deepcopy(model)
    generator = torch.Generator().manual_seed(3)
    data = [(torch.randint(0, 10, (2, 3), generator=generator), torch.randint(0, 10, (2, 3), generator=generator))
            for _ in range(3)]
    program = rducc.compile_training(model, data[0], optimizer=_groups(model), opt_level=0)
    optimizer = _groups(reference)
    for batch in data:
        got = float(program.step(*batch))
        optimizer.zero_grad()
        loss = reference(*batch)
        loss.backward()
        optimizer.step()
        assert got == pytest.approx(float(loss), rel=1e-5)
    _assert_state_close(program, reference)
    groups = program.state_dict()["param_groups"]
    assert [(g["weight_decay"], g["lr"]) for g in groups] == [(0.1, 1e-2), (0.0, 3e-3)]
