"""The eager tensor-parallel reference of the training matrix's tp cells
(tp_reference.py, bench/train_matrix.py): torch's styles read from the split
rducc's tp step compiles. The reference's own training (two gloo processes) runs
in the bench only; here, that the split it reads is rducc's."""

from __future__ import annotations

import pytest
import torch
from torch import nn
from tp_reference import Unexpressible, split_parameters, tp_plan

from rducc.training import compile_training

HIDDEN, VOCAB = 32, 64


class TinyLm(nn.Module):
    """An embedding, a residual MLP (up, down) and a vocabulary head."""

    def __init__(self) -> None:
        super().__init__()
        self.embed, self.norm = nn.Embedding(VOCAB, HIDDEN), nn.LayerNorm(HIDDEN)
        self.up, self.down = nn.Linear(HIDDEN, 2 * HIDDEN), nn.Linear(2 * HIDDEN, HIDDEN)
        self.head = nn.Linear(HIDDEN, VOCAB, bias=False)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        x = self.embed(ids)
        x = x + self.down(nn.functional.gelu(self.up(self.norm(x))))
        return self.head(x)


def _loss(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    return nn.functional.cross_entropy(logits.flatten(0, 1), labels.flatten())


def test_reference_splits_as_rduccs_tp_step() -> None:
    """rducc's tp=2 step splits up by columns, down by rows and the head by its vocabulary:
    torch's ColwiseParallel, RowwiseParallel and a colwise head whose output is the model's
    (its loss under loss_parallel); the embedding and the norm whole in both."""
    torch.manual_seed(0)
    model = TinyLm()
    ids = torch.randint(0, VOCAB, (2, 8))
    program = compile_training(model, (ids, torch.randint(0, VOCAB, (2, 8))), optimizer="sgd", lr=0.05,
                               loss_fn=_loss, target="sn40l-8", tp=2)
    plan = tp_plan(split_parameters(program.module, program.prefix), model, (ids,))
    assert dict(plan.styles) == {"up": "colwise", "down": "rowwise", "head": "colwise"}
    assert dict(plan.shards) == {"up.weight": 0, "up.bias": 0, "down.weight": 1, "head.weight": 0}
    assert plan.head == "head" and plan.ranks == 2


@pytest.mark.parametrize(("splits", "message"), [
    ({"up.weight": (0, 2, 16)}, "up.weight: Linear split along dim 0 in periodic blocks"),
    ({"down.weight": (1, 2, 0), "down.bias": (0, 2, 0)}, "down.bias: Linear split along dim 0: no torch parallel"),
])
def test_splits_torch_cannot_express_are_named(splits: dict[str, tuple[int, int, int]], message: str) -> None:
    """A split with no torch style (a fused q/k/v's periodic blocks, a bias split by columns whose
    weight is split by rows) is named, so the bench keeps the one-socket bar for that model."""
    with pytest.raises(Unexpressible, match=message):
        tp_plan(splits, TinyLm(), (torch.randint(0, VOCAB, (2, 8)),))
