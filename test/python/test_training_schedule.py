"""What users do around a compiled training step (issue 27): a learning-rate
schedule (torch.optim.lr_scheduler on the optimizer compile_training was
given) changes the lr between steps and the program reads it without
compiling again, param groups each with their own schedule; a change to
another hyperparameter is refused with one error."""

from __future__ import annotations

import copy

import pytest
import torch
from torch import nn

import rducc
from rducc.errors import RduccError


class Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.body = nn.Linear(6, 10)
        self.norm = nn.LayerNorm(10)
        self.head = nn.Linear(10, 3)

    def forward(self, x: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        return nn.functional.cross_entropy(self.head(self.norm(torch.tanh(self.body(x)))), labels)


def _groups(model: nn.Module, family: str) -> torch.optim.Optimizer:
    """Two param groups: decay on the weight matrices only, the rest at another lr."""
    decay = [p for n, p in model.named_parameters() if n.endswith("weight") and p.dim() == 2]
    rest = [p for n, p in model.named_parameters() if not (n.endswith("weight") and p.dim() == 2)]
    if family == "sgd":
        return torch.optim.SGD([{"params": decay, "weight_decay": 0.01}, {"params": rest, "lr": 0.2}],
                               lr=0.1, momentum=0.9)
    return torch.optim.AdamW([{"params": decay, "weight_decay": 0.1}, {"params": rest, "weight_decay": 0.0}],
                             lr=0.01)


def _batches(count: int) -> list[tuple[torch.Tensor, torch.Tensor]]:
    generator = torch.Generator().manual_seed(3)
    return [(torch.randn(4, 6, generator=generator), torch.randint(0, 3, (4,), generator=generator))
            for _ in range(count)]


@pytest.mark.parametrize("family", ["adamw"])  # SGD's lr as state: test_training_cli.py's --lr run
def test_lr_schedule_changes_the_compiled_step_as_eager(family: str) -> None:
    torch.manual_seed(0)
    model = Net()
    eager = copy.deepcopy(model)
    data = _batches(4)
    optimizer = _groups(model, family)
    program = rducc.compile_training(model, data[0], optimizer=optimizer, opt_level=0)
    schedule = torch.optim.lr_scheduler.LambdaLR(optimizer, [lambda s: 0.5 ** s, lambda s: 1.0 / (1 + s)])
    eager_optimizer = _groups(eager, family)
    eager_schedule = torch.optim.lr_scheduler.LambdaLR(eager_optimizer, [lambda s: 0.5 ** s, lambda s: 1.0 / (1 + s)])
    for x, y in data:
        ours = program.step(x, y)
        schedule.step()
        eager_optimizer.zero_grad()
        theirs = eager(x, y)
        theirs.backward()
        eager_optimizer.step()
        eager_schedule.step()
        torch.testing.assert_close(torch.as_tensor(ours), theirs.detach(), rtol=1e-6, atol=1e-7)
    got = program.parameters()
    for name, want in eager.named_parameters():
        torch.testing.assert_close(torch.as_tensor(got[name]), want.detach(), rtol=1e-5, atol=1e-7)
    assert program.lr(1) == pytest.approx(eager_optimizer.param_groups[1]["lr"])
    assert program.state_dict()["param_groups"][0]["lr"] == pytest.approx(eager_optimizer.param_groups[0]["lr"])
    program.set_lr(0.003, group=0)  # set on the program: the optimizer it follows takes it too
    assert optimizer.param_groups[0]["lr"] == 0.003 and program.lr(0) == pytest.approx(0.003)
    optimizer.param_groups[1]["momentum" if family == "sgd" else "weight_decay"] = 0.05
    with pytest.raises(RduccError, match=r"param group 1: the optimizer's (momentum|weight_decay) is now 0.05, "
                                         r"the step was compiled with 0.\d+; only lr is read at each step"):
        program.step(*data[0])
