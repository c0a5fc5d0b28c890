"""Tensor parallelism through the backward with more ranks than key/value heads
(issue 27): the sum of a KV head's gradient over the query heads it serves is
split between the ranks that hold the head, a partial sum over those groups of
ranks (rdu-partition's `GroupPartial`), all-reduced over them where the KV
weights' gradients are made; neither the weights nor the gradients are
all-gathered, and the step trains as eager does."""

from __future__ import annotations

import copy

import pytest
import torch
from test_train_parallel import LlamaLoss
from torch import nn
from training_cases import assert_sgd_steps_match

from rducc.dialects.rdu.collectives import AllGatherOp, AllReduceOp
from rducc.training import compile_training


class HeadMapAttention(nn.Module):
    """One attention block whose 2 key/value heads are repeated for its 8 query heads
    by indexing with a head map, `k[:, arange(8) // 4]` (its backward a scatter-add
    into the KV heads), and a next-token loss."""

    def __init__(self, hidden: int = 32, heads: int = 8, kv_heads: int = 2) -> None:
        super().__init__()
        self.heads, self.kv_heads = heads, kv_heads
        self.embed, self.head = nn.Embedding(64, hidden), nn.Linear(hidden, 64, bias=False)
        self.q, self.o = nn.Linear(hidden, hidden, bias=False), nn.Linear(hidden, hidden, bias=False)
        self.k, self.v = (nn.Linear(hidden, kv_heads * hidden // heads, bias=False) for _ in range(2))

    def forward(self, ids: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        x = self.embed(ids)
        (b, s, hidden), d = x.shape, x.size(-1) // self.heads
        q, k, v = (p(x).view(b, s, -1, d).transpose(1, 2) for p in (self.q, self.k, self.v))
        head_map = torch.arange(self.heads) // (self.heads // self.kv_heads)
        weights = torch.softmax(q @ k[:, head_map].transpose(-2, -1) / d**0.5, -1)
        y = x + self.o((weights @ v[:, head_map]).transpose(1, 2).reshape(b, s, hidden))
        return nn.functional.cross_entropy(self.head(y).view(-1, 64), labels.view(-1))


@pytest.mark.parametrize(("make", "tp", "groups"), [
    (lambda: LlamaLoss(kv_heads=2), 4, ((0, 1), (2, 3))),  # grouped-query: a KV head a rank pair
    (lambda: LlamaLoss(kv_heads=1), 2, None),  # multi-query: the one KV head on every rank
    (HeadMapAttention, 4, ((0, 1), (2, 3))),  # heads repeated by a head map
], ids=["gqa", "mqa", "head-map"])
def test_tp_above_the_kv_heads_trains_as_eager_without_gathering_kv(make, tp, groups):
    """Tiny models at tp above their KV heads (a transformers Llama with 4 query
    heads, heads repeated by expand and reshape; 8 query heads repeated by a head
    map): 2 SGD steps' losses and the trained weights equal eager's; the only
    all-gather is the cross entropy's per-rank maximum over the vocabulary (one value
    a row a rank), and with a KV head held by a rank pair the KV weights' gradients
    are all-reduced over the pairs (before: the gradients and the weights were
    all-gathered)."""
    torch.manual_seed(0)
    model = make().train()
    batches = [(torch.randint(0, 64, (2, 8)), torch.randint(0, 64, (2, 8))) for _ in range(2)]
    eager = copy.deepcopy(model)
    options = {"lr": 0.05, "momentum": 0.9}
    program = compile_training(model, batches[0], optimizer="sgd", target="sn40l-8", tp=tp, **options)
    gathered = [op.operands[0].type.get_shape() for op in program.module.walk() if isinstance(op, AllGatherOp)]
    assert gathered and all(shape[-1] == 1 for shape in gathered), gathered
    pairs = {op.groups(tp) for op in program.module.walk() if isinstance(op, AllReduceOp) and op.group_size < tp}
    assert pairs == ({groups} if groups else set())
    assert_sgd_steps_match(program, eager, batches, **options)
