"""Training steps per shape bucket (`compile_training(..., dynamic_shapes=...,
shapes=...)`, `rducc --train --shapes`, `rducc-run --train` over batches of
several shapes, docs/training.md): one step a bucket, all on ONE state, so
steps alternating between buckets are eager's steps on the same sequence of
batches (losses, parameters, optimizer state)."""

from __future__ import annotations

import copy

import numpy as np
import pytest
import torch
from torch import nn
from torch.export import Dim

import rducc
from rducc.errors import RduccError
from rducc.tools import cli, run


class MLPLoss(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc1, self.fc2 = nn.Linear(8, 16), nn.Linear(16, 4)

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return nn.functional.cross_entropy(self.fc2(torch.relu(self.fc1(x))), y)


class TinyLM(nn.Module):
    """Token and learned position embeddings (read up to the sequence's length), one
    causal attention head and a head: the next token's loss."""

    def __init__(self, vocab: int = 11, width: int = 8, positions: int = 8) -> None:
        super().__init__()
        self.embed = nn.Embedding(vocab, width)
        self.pos = nn.Parameter(torch.randn(positions, width) * 0.1)
        self.qkv = nn.Linear(width, 3 * width, bias=False)
        self.head = nn.Linear(width, vocab)

    def forward(self, ids: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        h = self.embed(ids) + self.pos[: ids.shape[1]]
        q, k, v = self.qkv(h).chunk(3, -1)
        h = h + nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
        return nn.functional.cross_entropy(self.head(h).flatten(0, 1), targets.flatten())


def _eager(model: nn.Module, optimizer: str, batches: list[tuple[torch.Tensor, ...]], **options: float):
    """Eager's losses, model and optimizer after one step per batch."""
    reference = copy.deepcopy(model)
    chosen = {"sgd": torch.optim.SGD, "adamw": torch.optim.AdamW}[optimizer](reference.parameters(), **options)
    losses = []
    for batch in batches:
        chosen.zero_grad()
        loss = reference(*batch)
        loss.backward()
        chosen.step()
        losses.append(loss.item())
    return losses, reference, chosen


@pytest.mark.parametrize(("optimizer", "level", "options"), [
    ("sgd", 0, {"lr": 0.1, "momentum": 0.9}),
    ("adamw", 2, {"lr": 0.01, "weight_decay": 0.1}),
])
def test_steps_alternating_two_batch_buckets_are_eagers(optimizer, level, options) -> None:
    """Batches of 2, 3 and 2 rows run the batch=2, batch=3 and batch=2 steps; each step
    updates the one state the next reads, so all is eager's; batch 4 is one error."""
    torch.manual_seed(0)
    model = MLPLoss()
    batch = Dim("batch", min=1, max=16)
    program = rducc.compile_training(model, (torch.randn(3, 8), torch.tensor([0, 1, 2])), optimizer=optimizer,
                                     opt_level=level, dynamic_shapes=({0: batch}, {0: batch}),
                                     shapes={"batch": [2, 3]}, **options)
    assert isinstance(program, rducc.BucketedTrainingProgram)
    assert program.buckets == [{"batch": 2}, {"batch": 3}]
    batches = [(torch.randn(n, 8), torch.randint(0, 4, (n,))) for n in (2, 3, 2)]
    losses = [float(program.step(*b)) for b in batches]
    expected, reference, eager = _eager(model, optimizer, batches, **options)
    np.testing.assert_allclose(losses, expected, rtol=1e-5)
    for name, value in program.parameters().items():
        np.testing.assert_allclose(value, reference.get_parameter(name).detach(), rtol=1e-5, atol=1e-6)
    state = program.state_dict()["state"]
    key = "momentum_buffer" if optimizer == "sgd" else "exp_avg_sq"
    for index, entry in eager.state_dict()["state"].items():
        np.testing.assert_allclose(state[index][key], entry[key], rtol=1e-5, atol=1e-8)
    with pytest.raises(RduccError, match=r"no compiled shape takes inputs of shape \[4, 8\], \[4\]: the program "
                                         r"was compiled for batch=2 \(inputs \[2, 8\], \[2\]\); batch=3"):
        program.step(torch.randn(4, 8), torch.tensor([0, 1, 2, 3]))
    if level == 2:  # the cost report covers each bucket (its step's phases too)
        reports = program.simulate()
        assert list(reports) == ["batch=2", "batch=3"]
        assert 0 < reports["batch=2"].modeled_time_s < reports["batch=3"].modeled_time_s


def test_rducc_trains_a_transformer_over_sequence_buckets(tmp_path, capsys) -> None:
    """`rducc --train --shapes seq=3,5` of a saved archive (its Dim names lost: dim 1 is `seq`), then
    `rducc-run --train` on batches of sequence 3, 5 and 3 in one file (`NAME.K`): eager's SGD steps.
    (A batch no bucket takes: error_cases.py.)"""
    torch.manual_seed(0)
    model = TinyLM()
    ids = torch.randint(0, 11, (2, 4))
    seq = Dim("seq", min=2, max=8)
    exported = torch.export.export(model, (ids, ids.roll(-1, 1)), dynamic_shapes=({1: seq}, {1: seq}))
    torch.export.save(exported, str(tmp_path / "lm.pt2"))
    step = tmp_path / "step.mlir"
    assert cli.main([str(tmp_path / "lm.pt2"), "--train", "--shapes", "seq=3,5", "--optimizer", "sgd", "--lr", "0.1",
                     "--momentum", "0.9", "-q", "-o", str(step)]) == 0
    rng = np.random.default_rng(0)
    tokens = [rng.integers(0, 11, (2, n)) for n in (3, 5, 3)]
    np.savez(tmp_path / "batches.npz", **{f"ids.{k}": t for k, t in enumerate(tokens)},
             **{f"targets.{k}": np.roll(t, -1, 1) for k, t in enumerate(tokens)})
    assert run.main([str(step), "--train", "--data", str(tmp_path / "batches.npz"),
                     "--output", str(tmp_path / "out.npz")]) == 0
    batches = [(torch.from_numpy(t), torch.from_numpy(np.roll(t, -1, 1))) for t in tokens]
    expected, reference, _ = _eager(model, "sgd", batches, lr=0.1, momentum=0.9)
    with np.load(tmp_path / "out.npz") as results:
        np.testing.assert_allclose(results["loss"], expected, rtol=1e-5)
        for name, parameter in reference.named_parameters():
            np.testing.assert_allclose(results[f"buffer:{name}"], parameter.detach(), rtol=1e-5, atol=1e-6)
