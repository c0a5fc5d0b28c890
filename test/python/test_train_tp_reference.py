"""The eager tensor-parallel reference of the training matrix's tp cells
(tp_reference.py, bench/train_matrix.py): torch's styles read from the split
rducc's tp step compiles. The reference's own training (two gloo processes) runs
in the bench only; here, that the split it reads is rducc's. And the split-sum
reference (`split_sums`, one process): each split sum as float32 partials added
and rounded once, as rducc's tp step computes it."""

from __future__ import annotations

import copy

import pytest
import torch
from torch import nn
from tp_reference import TpPlan, Unexpressible, split_parameters, split_sums, tp_plan

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


def _plan(ranks: int) -> TpPlan:
    return TpPlan((("down", "rowwise"), ("head", "colwise"), ("up", "colwise")), (), "head", ranks)


def _step(model: nn.Module, ids: torch.Tensor, labels: torch.Tensor, autocast: bool) -> dict[str, torch.Tensor]:
    with torch.autocast("cpu", dtype=torch.bfloat16, enabled=autocast):
        loss = _loss(model(ids), labels)
    loss.backward()
    return {"loss": loss.detach(), **{name: p.grad for name, p in model.named_parameters()}}


@pytest.mark.parametrize("autocast", [True, False])
def test_split_sums_on_one_rank_is_eager(autocast: bool) -> None:
    """With nothing split (one rank) the reference computes eager's loss and gradients bit for bit,
    under autocast and in float32: every value it does not split is eager's own kernel's."""
    torch.manual_seed(0)
    model, ids, labels = TinyLm(), torch.randint(0, VOCAB, (2, 8)), torch.randint(0, VOCAB, (2, 8))
    want = _step(copy.deepcopy(model), ids, labels, autocast)
    got = _step(split_sums(copy.deepcopy(model), _plan(1)), ids, labels, autocast)
    assert all(torch.equal(got[name], value) for name, value in want.items())


def test_split_sums_round_each_split_sum_once() -> None:
    """At two ranks under autocast, a row-split layer's output is bf16 of the two float32 partial
    products added with the bias (not each partial rounded to bf16 first, as torch's TP all-reduces),
    and a column-split layer's input gradient bf16 of its two float32 partials added."""
    torch.manual_seed(0)
    down = nn.Linear(64, 32)
    x = torch.randn(16, 64).bfloat16().requires_grad_()
    model = split_sums(nn.ModuleDict({"down": down, "up": nn.Linear(32, 64)}), TpPlan(
        (("down", "rowwise"), ("up", "colwise")), (), None, 2))
    with torch.autocast("cpu", dtype=torch.bfloat16):
        y = model["down"](x)
    w, b = down.weight.bfloat16(), down.bias.bfloat16()
    halves = [xr.float() @ wr.float().T for xr, wr in zip(x.chunk(2, -1), w.chunk(2, -1), strict=True)]
    assert torch.equal(y, (halves[0] + halves[1] + b.float()).bfloat16())
    rounded_first = (halves[0].bfloat16() + halves[1].bfloat16() + b).bfloat16()
    assert not torch.equal(y, rounded_first)
    h = torch.randn(16, 32).bfloat16().requires_grad_()
    with torch.autocast("cpu", dtype=torch.bfloat16):
        out = model["up"](h)
    dy = torch.randn_like(out)
    out.backward(dy)
    w = model["up"].weight.bfloat16()
    partials = [dr.float() @ wr.float() for dr, wr in zip(dy.chunk(2, -1), w.chunk(2), strict=True)]
    assert torch.equal(h.grad, (partials[0] + partials[1]).bfloat16())
