"""`rducc model.pt2 --train ... -o step.mlir` and `rducc-run step.mlir --train
--data batches.npz`: the losses printed step by step are eager's. The model
returns (loss, logits), and SGD has momentum with dampening, whose undamped
first step is program state (`optimizer.momentum_started.*`) that a saved
weights file carries into the next run."""

from __future__ import annotations

import copy
from pathlib import Path

import numpy as np
import pytest
import torch
from torch import nn

from rducc.tools import cli, run
from rducc.weights import load_weights


class LossOf(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc1 = nn.Linear(8, 16)
        self.fc2 = nn.Linear(16, 4)

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        logits = self.fc2(torch.relu(self.fc1(x)))
        return nn.functional.cross_entropy(logits, y, label_smoothing=0.1), logits


@pytest.fixture(scope="module")
def trained(tmp_path_factory) -> tuple[Path, nn.Module, np.ndarray, np.ndarray]:
    directory = tmp_path_factory.mktemp("train")
    torch.manual_seed(0)
    model = LossOf()
    example = (torch.randn(3, 8), torch.tensor([0, 1, 2]))
    torch.export.save(torch.export.export(model, example), str(directory / "loss.pt2"))
    assert cli.main([str(directory / "loss.pt2"), "--train", "--optimizer", "sgd", "--lr", "0.1", "--momentum", "0.9",
                     "--dampening", "0.5", "-q", "-o", str(directory / "step.mlir")]) == 0
    rng = np.random.default_rng(0)
    x, y = rng.standard_normal((4, 3, 8)).astype(np.float32), rng.integers(0, 4, (4, 3))
    np.savez(directory / "batches.npz", x=x, y=y)
    return directory, model, x, y


def test_rducc_run_train_prints_eager_losses(trained, capsys) -> None:
    directory, model, x, y = trained
    reference = copy.deepcopy(model)
    eager = torch.optim.SGD(reference.parameters(), lr=0.1, momentum=0.9, dampening=0.5)
    expected = []
    for step in range(6):  # 6 steps over 4 batches: the batches repeat
        eager.zero_grad()
        loss = reference(torch.from_numpy(x[step % 4]), torch.from_numpy(y[step % 4]))[0]
        loss.backward()
        eager.step()
        expected.append(loss.item())
    status = run.main([str(directory / "step.mlir"), "--train", "--steps", "6",
                       "--data", str(directory / "batches.npz"), "--output", str(directory / "out.npz"),
                       "--save-weights", str(directory / "trained.safetensors")])
    assert status == 0
    printed = capsys.readouterr()
    lines = [line for line in printed.out.splitlines() if line.startswith("step ")]
    assert [line.split(":")[0] for line in lines] == [f"step {i}/6" for i in range(1, 7)]
    losses = [float(line.rsplit(" ", 1)[1]) for line in lines]
    np.testing.assert_allclose(losses, expected, rtol=1e-5)
    assert "6 training steps in" in printed.err
    with np.load(directory / "out.npz") as results:
        np.testing.assert_allclose(results["loss"], expected, rtol=1e-5)
        np.testing.assert_allclose(results["buffer:fc2.weight"], reference.fc2.weight.detach().numpy(), rtol=1e-4,
                                   atol=1e-6)
    state = load_weights(directory / "trained.safetensors")
    np.testing.assert_allclose(state["fc1.bias"], reference.fc1.bias.detach().numpy(), rtol=1e-4, atol=1e-6)
    momentum = eager.state[reference.fc1.weight]["momentum_buffer"].numpy()
    np.testing.assert_allclose(state["optimizer.momentum_buffer.fc1.weight"], momentum, rtol=1e-4, atol=1e-6)


def test_training_continues_from_saved_weights(trained, capsys) -> None:
    """Two runs of 2 steps, the second from the first's --save-weights, are one run of 4."""
    directory, *_ = trained
    step, data = str(directory / "step.mlir"), str(directory / "batches.npz")
    assert run.main([step, "--train", "--steps", "4", "--data", data]) == 0
    whole = [line for line in capsys.readouterr().out.splitlines() if line.startswith("step ")]
    first_half = np.savez  # the first two batches, then the last two
    with np.load(data) as batches:
        first_half(directory / "first.npz", x=batches["x"][:2], y=batches["y"][:2])
        first_half(directory / "second.npz", x=batches["x"][2:], y=batches["y"][2:])
    assert run.main([step, "--train", "--data", str(directory / "first.npz"),
                     "--save-weights", str(directory / "half.safetensors")]) == 0
    assert run.main([step, "--train", "--data", str(directory / "second.npz"),
                     "--weights", str(directory / "half.safetensors")]) == 0
    halves = [line for line in capsys.readouterr().out.splitlines() if line.startswith("step ")]
    assert [line.split(": ")[1] for line in halves] == [line.split(": ")[1] for line in whole]


def test_lr_given_to_a_run_changes_the_step_without_compiling(trained, capsys) -> None:
    """`rducc-run --lr`: a second run at half the learning rate, from the first's saved weights, is eager's
    SGD with its param group's lr halved after two steps (the learning rate is program state)."""
    directory, model, x, y = trained
    step, data = str(directory / "step.mlir"), str(directory / "batches.npz")
    with np.load(data) as batches:
        np.savez(directory / "early.npz", x=batches["x"][:2], y=batches["y"][:2])
        np.savez(directory / "late.npz", x=batches["x"][2:], y=batches["y"][2:])
    assert run.main([step, "--train", "--data", str(directory / "early.npz"),
                     "--save-weights", str(directory / "early.safetensors")]) == 0
    assert run.main([step, "--train", "--lr", "0.05", "--data", str(directory / "late.npz"),
                     "--weights", str(directory / "early.safetensors"), "--output", str(directory / "late_out.npz")
                     ]) == 0
    capsys.readouterr()
    reference = copy.deepcopy(model)
    eager = torch.optim.SGD(reference.parameters(), lr=0.1, momentum=0.9, dampening=0.5)
    for i in range(4):
        if i == 2:
            eager.param_groups[0]["lr"] = 0.05
        eager.zero_grad()
        reference(torch.from_numpy(x[i]), torch.from_numpy(y[i]))[0].backward()
        eager.step()
    with np.load(directory / "late_out.npz") as results:
        np.testing.assert_allclose(results["buffer:fc1.weight"], reference.fc1.weight.detach().numpy(), rtol=1e-5,
                                   atol=1e-7)
        assert float(results["buffer:optimizer.lr.0"]) == 0.05
