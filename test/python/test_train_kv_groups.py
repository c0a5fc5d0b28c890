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

from rducc.dialects.rdu.collectives import AllGatherOp, AllReduceOp
from rducc.training import compile_training


@pytest.mark.parametrize(("kv_heads", "tp", "groups"), [
    (2, 4, ((0, 1), (2, 3))),  # grouped-query: a KV head a rank pair
    (1, 2, None),  # multi-query: the one KV head on every rank
])
def test_tp_above_the_kv_heads_trains_as_eager_without_gathering_kv(kv_heads, tp, groups):
    """A tiny transformers Llama (4 query heads) at tp above its KV heads: 2 SGD
    steps' losses and the trained weights equal eager's; the only all-gather is the
    cross entropy's per-rank maximum over the vocabulary (one value a row a rank),
    and with a KV head held by a rank pair the KV weights' gradients are all-reduced
    over the pairs (before: both the gradients and the weights were all-gathered)."""
    torch.manual_seed(0)
    model = LlamaLoss(kv_heads=kv_heads).train()
    batches = [(torch.randint(0, 64, (2, 8)), torch.randint(0, 64, (2, 8))) for _ in range(2)]
    eager = copy.deepcopy(model)
    options = {"lr": 0.05, "momentum": 0.9}
    program = compile_training(model, batches[0], optimizer="sgd", target="sn40l-8", tp=tp, **options)
    gathered = [op.operands[0].type.get_shape() for op in program.module.walk() if isinstance(op, AllGatherOp)]
    assert gathered and all(shape[-1] == 1 for shape in gathered), gathered
    pairs = {op.groups(tp) for op in program.module.walk() if isinstance(op, AllReduceOp) and op.group_size < tp}
    assert pairs == ({groups} if groups else set())
    reference = torch.optim.SGD(eager.parameters(), **options)
    for step, batch in enumerate(batches):
        reference.zero_grad()
        loss = eager(*batch)
        loss.backward()
        reference.step()
        assert float(program.step(*batch)) == pytest.approx(loss.item(), rel=1e-6), f"step {step}"
    trained = program.parameters()
    for name, parameter in eager.named_parameters():
        torch.testing.assert_close(trained[name], parameter.detach(), rtol=1e-4, atol=1e-6, msg=name)
