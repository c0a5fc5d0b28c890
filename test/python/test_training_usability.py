"""Training as users run it (issue 27): dynamic loss scaling against
torch.amp.GradScaler (a planted overflow step skipped), gradient accumulation
over microbatches against eager's, transformers' LlamaForCausalLM given
`labels` (cross_entropy with ignore_index -100; on the meta device:
test_training.py), through the Python API and the CLI."""

from __future__ import annotations

import copy
from pathlib import Path

import numpy as np
import pytest
import torch
from torch import nn

import rducc
from rducc.errors import RduccError
from rducc.tools import cli, run


class Classifier(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.body = nn.Linear(6, 12)
        self.head = nn.Linear(12, 3)

    def forward(self, x: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        return nn.functional.cross_entropy(self.head(torch.tanh(self.body(x))), labels)


def _batches(count: int, overflow_at: int | None = None, rows: int = 4) -> list[tuple[torch.Tensor, torch.Tensor]]:
    generator = torch.Generator().manual_seed(1)
    data = [(torch.randn(rows, 6, generator=generator), torch.randint(0, 3, (rows,), generator=generator))
            for _ in range(count)]
    if overflow_at is not None:  # inputs near float32's largest: the scaled gradients overflow
        data[overflow_at] = (data[overflow_at][0] * 3e38, data[overflow_at][1])
    return data


def _eager_scaled(model: nn.Module, data, microbatches: int = 1) -> tuple[list[float], list[float]]:
    """AdamW with torch.amp.GradScaler (init 1024, growth every 2 good steps),
    accumulating `microbatches` per step; the losses and the scale after each step."""
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
    scaler = torch.amp.GradScaler("cpu", init_scale=1024.0, growth_interval=2)
    losses, scales = [], []
    for x, y in data:
        optimizer.zero_grad()
        total = 0.0
        for part_x, part_y in zip(x.chunk(microbatches), y.chunk(microbatches)):
            loss = model(part_x, part_y) / microbatches
            scaler.scale(loss).backward()
            total += loss.item()
        scaler.step(optimizer)
        scaler.update()
        losses.append(total)
        scales.append(scaler.get_scale())
    return losses, scales


def test_dynamic_loss_scaling_is_grad_scalers_and_skips_an_overflow_step() -> None:
    torch.manual_seed(0)
    model = Classifier()
    data = _batches(6, overflow_at=3)
    expected_losses, expected_scales = _eager_scaled(copy.deepcopy(model), data)
    scaler = torch.amp.GradScaler("cpu", init_scale=1024.0, growth_interval=2)
    program = rducc.compile_training(model, data[0], optimizer="adamw", lr=1e-2, loss_scale=scaler, opt_level=0)
    losses, scales = [], []
    for number, batch in enumerate(data):
        before = program.parameters()
        losses.append(float(program.step(*batch)))
        scales.append(program.grad_scale)
        if number == 3:  # the overflow: no update, the scale halved, the growth count restarted
            assert all(torch.equal(before[name], value) for name, value in program.parameters().items())
            assert program.scaler_state_dict()["_growth_tracker"] == 0
    assert scales == expected_scales == [1024.0, 2048.0, 2048.0, 1024.0, 1024.0, 2048.0]
    np.testing.assert_allclose(losses, expected_losses, rtol=1e-5, atol=1e-6)  # nan at the overflow in both
    reference = copy.deepcopy(model)
    _eager_scaled(reference, data)
    for name, value in reference.state_dict().items():
        torch.testing.assert_close(program.parameters()[name], value, rtol=1e-4, atol=1e-5)


def test_microbatches_accumulate_gradients_as_eager_llama_with_labels() -> None:
    """LlamaForCausalLM(input_ids, labels=...) (its own shifted cross_entropy,
    ignore_index -100), 2 microbatches a step, AdamW: eager's accumulation."""
    from transformers import LlamaConfig, LlamaForCausalLM

    config = LlamaConfig(vocab_size=64, hidden_size=32, intermediate_size=64, num_hidden_layers=1,
                         num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=16)
    torch.manual_seed(0)
    model = LlamaForCausalLM(config).train()
    reference = copy.deepcopy(model)
    generator = torch.Generator().manual_seed(1)
    data = []
    for _ in range(2):
        ids = torch.randint(0, 64, (4, 8), generator=generator)
        labels = ids.clone()
        labels[:, :3] = -100  # the prompt: no loss
        data.append({"input_ids": ids, "labels": labels})
    program = rducc.compile_training(model, data[0], optimizer="adamw", lr=1e-3, microbatches=2, opt_level=0)
    optimizer = torch.optim.AdamW(reference.parameters(), lr=1e-3)
    for batch in data:
        optimizer.zero_grad()
        expected = 0.0
        for half in range(2):
            part = {name: value[2 * half:2 * half + 2] for name, value in batch.items()}
            loss = reference(**part).loss / 2
            loss.backward()
            expected += loss.item()
        optimizer.step()
        assert float(program.step(**batch)) == pytest.approx(expected, rel=1e-5)
    trained = program.parameters()
    for name, value in reference.state_dict().items():
        torch.testing.assert_close(trained[name], value, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize(("options", "message"), [
    ({"microbatches": 3}, "microbatches 3: input #0 has batch 4, which does not split into 3 equal microbatches"),
    ({"microbatches": 0}, "microbatches 0: give a whole number of at least 1"),
    ({"loss_scale": "sometimes"}, "loss_scale 'sometimes': give a number"),
    ({"loss_scale": "dynamic", "optimizer": None}, "dynamic loss scaling needs an optimizer"),
])
def test_bad_training_options_are_named(options: dict, message: str) -> None:
    with pytest.raises(RduccError, match=message):
        rducc.compile_training(Classifier(), _batches(1)[0], **({"optimizer": "sgd"} | options))


@pytest.fixture(scope="module")
def exported(tmp_path_factory) -> tuple[Path, Classifier]:
    directory = tmp_path_factory.mktemp("usab")
    torch.manual_seed(0)
    model = Classifier()
    torch.export.save(torch.export.export(model, _batches(1, rows=4)[0]), str(directory / "loss.pt2"))
    return directory, model


def test_cli_dynamic_loss_scale_and_microbatches_train_as_eager(exported, capsys) -> None:
    """rducc --train --loss-scale dynamic --microbatches 2, then rducc-run
    --microbatches 2 on a file of microbatches: eager's GradScaler and accumulation."""
    directory, model = exported
    step = str(directory / "step.mlir")
    assert cli.main([str(directory / "loss.pt2"), "--train", "--lr", "0.01", "--loss-scale", "dynamic",
                     "--init-scale", "1024", "--growth-interval", "2", "--microbatches", "2", "-q", "-o", step]) == 0
    data = _batches(4, overflow_at=2)
    micro_x = np.concatenate([x.numpy().reshape(2, 2, 6) for x, _ in data])
    micro_y = np.concatenate([y.numpy().reshape(2, 2) for _, y in data])
    np.savez(directory / "micro.npz", x=micro_x, labels=micro_y)
    assert run.main([step, "--train", "--microbatches", "2", "--data", str(directory / "micro.npz"),
                     "--output", str(directory / "out.npz")]) == 0
    printed = [line for line in capsys.readouterr().out.splitlines() if line.startswith("step ")]
    assert len(printed) == 4
    expected, scales = _eager_scaled(copy.deepcopy(model), data, microbatches=2)
    with np.load(directory / "out.npz") as results:
        np.testing.assert_allclose(results["loss"], expected, rtol=1e-5, atol=1e-6)
        assert float(results["buffer:grad_scale"]) == scales[-1]


def test_cli_mixed_precision_computes_in_bf16(exported) -> None:
    directory, _ = exported
    step = directory / "bf16.mlir"
    assert cli.main([str(directory / "loss.pt2"), "--train", "--mixed-precision", "bf16", "--loss-scale", "128",
                     "-O0", "-q", "-o", str(step)]) == 0
    text = step.read_text()
    assert "bf16" in text and "f32" in text  # bf16 compute, float32 master weights


@pytest.mark.parametrize(("argv", "message"), [
    (["--microbatches", "2"], "--microbatches needs --train"),
    (["--train", "--growth-interval", "5"], "--growth-interval needs --loss-scale dynamic"),
    (["--train", "--loss-scale", "-2"], "--loss-scale -2: give a positive finite number or 'dynamic'"),
    (["--train", "--mixed-precision", "fp8"], "--mixed-precision fp8 is not supported; rducc compiles bf16"),
    (["--train", "--microbatches", "3"], "microbatches 3: input #0 has batch 4"),
])
def test_cli_bad_training_flags_get_one_line(exported, argv: list[str], message: str, capsys) -> None:
    directory, _ = exported
    assert cli.main([str(directory / "loss.pt2"), *argv, "-q", "-o", str(directory / "bad.mlir")]) == 1
    error = capsys.readouterr().err.strip()
    assert message in error and len(error.splitlines()) == 1
    assert not (directory / "bad.mlir").exists()
