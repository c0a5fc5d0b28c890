"""Training steps through rducc (issue 27): `rducc.compile_training` against
eager PyTorch and torch.optim, step by step; state_dict round trips; frozen
layers; the errors. The heavier models are in test_training_models.py."""

from __future__ import annotations

import copy

import pytest
import torch
from torch import nn
from training_cases import LOSS_ATOL, LOSS_RTOL, assert_matches, models, rounding_twin, train_both

import rducc
from rducc.dialects.contracts import Phase, phase_of, result_updates
from rducc.dialects.program import entry_function
from rducc.errors import RduccError


@pytest.mark.parametrize(("optimizer", "opt_level"), [("sgd_nesterov", 2), ("adamw", 2)])
def test_mlp_twenty_steps_match_eager(optimizer: str, opt_level: int) -> None:
    """20 steps of Nesterov SGD and of AdamW at -O2. (SGD at -O0 is checked by
    test_training_models.py on tiny Llama, and the MLP's 20 SGD steps at -O0 by
    bench/train_matrix.py; AdamW at -O0 against eager step by step by
    test_named_optimizer_and_program_structure and, with loss scaling and
    microbatches, by test_training_usability.py.)"""
    assert_matches(train_both("mlp", optimizer, steps=20, opt_level=opt_level))


class Classifier(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.embed = nn.Linear(6, 12)
        self.body = nn.Linear(12, 12)
        self.head = nn.Linear(12, 3)

    def forward(self, x: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        hidden = torch.tanh(self.body(torch.relu(self.embed(x))))
        return nn.functional.cross_entropy(self.head(hidden), labels)


def _data(steps: int, seed: int = 1) -> list[tuple[torch.Tensor, torch.Tensor]]:
    generator = torch.Generator().manual_seed(seed)
    return [(torch.randn(4, 6, generator=generator), torch.randint(0, 3, (4,), generator=generator))
            for _ in range(steps)]


def _eager_steps(model: nn.Module, optimizer: torch.optim.Optimizer, data) -> list[float]:
    losses = []
    for x, y in data:
        optimizer.zero_grad()
        loss = model(x, y)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return losses


def test_named_optimizer_and_program_structure() -> None:
    """`optimizer="adamw", lr=...`: the step's ops carry their phase, and its results
    are the loss, then the updates of every parameter and its AdamW state."""
    torch.manual_seed(0)
    model = Classifier()
    reference = copy.deepcopy(model)
    data = _data(4)
    program = rducc.compile_training(model, data[0], optimizer="adamw", lr=1e-2, weight_decay=0.05, opt_level=0)
    eager = torch.optim.AdamW(reference.parameters(), lr=1e-2, weight_decay=0.05)
    expected = _eager_steps(reference, eager, data)
    losses = [program.step(x, y).item() for x, y in data]
    torch.testing.assert_close(torch.tensor(losses), torch.tensor(expected), rtol=LOSS_RTOL, atol=LOSS_ATOL)
    forward = entry_function(program.module)
    phases = {phase_of(op) for op in forward.walk()} - {None}
    assert phases == {Phase.FORWARD, Phase.BACKWARD, Phase.OPTIMIZER}
    updates = result_updates(forward)
    assert updates[0] is None  # the loss
    names = {u.name for u in updates[1:] if u is not None}
    assert {"head.weight", "optimizer.exp_avg_sq.head.weight", "optimizer.step.body.bias"} <= names


def test_state_dict_round_trips_with_torch_optim() -> None:
    """After some steps the program's state loads into torch.optim, and torch.optim's into the
    program: training continued on either side gives the same losses."""
    torch.manual_seed(0)
    model = Classifier()
    reference = copy.deepcopy(model)
    data = _data(6)
    program = rducc.compile_training(model, data[0], optimizer=torch.optim.AdamW(model.parameters(), lr=5e-3))
    for x, y in data[:3]:
        program.step(x, y)
    state = program.state_dict()
    eager = torch.optim.AdamW(reference.parameters(), lr=5e-3)
    reference.load_state_dict(program.parameters())
    eager.load_state_dict(state)
    assert set(state["state"]) == {0, 1, 2, 3, 4, 5}
    assert float(state["state"][0]["step"]) == 3.0
    expected = _eager_steps(reference, eager, data[3:])
    ours = [program.step(x, y).item() for x, y in data[3:]]
    torch.testing.assert_close(torch.tensor(ours), torch.tensor(expected), rtol=LOSS_RTOL, atol=LOSS_ATOL)
    # and back: torch.optim's state (and the model's parameters) into a fresh program
    fresh = rducc.compile_training(Classifier(), data[0], optimizer="adamw", lr=5e-3, weight_decay=0.01)
    fresh.load_parameters(reference.state_dict())
    fresh.load_state_dict(eager.state_dict())
    for name, tensor in fresh.state_dict()["state"][2].items():
        torch.testing.assert_close(tensor, eager.state_dict()["state"][2][name])
    again = _eager_steps(reference, eager, data[:2])
    torch.testing.assert_close(torch.tensor([fresh.step(x, y).item() for x, y in data[:2]]), torch.tensor(again),
                               rtol=LOSS_RTOL, atol=LOSS_ATOL)


def test_state_dict_with_other_hyperparameters_is_refused() -> None:
    torch.manual_seed(0)
    data = _data(1)
    program = rducc.compile_training(Classifier(), data[0], optimizer="sgd", lr=0.1, momentum=0.9, opt_level=0)
    other = torch.optim.SGD(Classifier().parameters(), lr=0.2, momentum=0.8)
    with pytest.raises(RduccError, match="momentum is 0.8, the program was compiled with 0.9"):
        program.load_state_dict(other.state_dict())
    scheduled = torch.optim.SGD(Classifier().parameters(), lr=0.2, momentum=0.9)  # lr is state: loaded
    program.load_state_dict(scheduled.state_dict())
    assert program.lr() == 0.2


def test_frozen_layers_are_not_updated() -> None:
    """Parameters that do not require grad (a frozen layer) are left alone, as torch.optim leaves them."""
    torch.manual_seed(0)
    model = Classifier()
    model.embed.requires_grad_(False)
    reference = copy.deepcopy(model)
    data = _data(5)
    program = rducc.compile_training(model, data[0], optimizer=torch.optim.SGD(model.parameters(), lr=0.1,
                                                                              momentum=0.9), opt_level=2)
    eager = torch.optim.SGD(reference.parameters(), lr=0.1, momentum=0.9)
    expected = _eager_steps(reference, eager, data)
    ours = [program.step(x, y).item() for x, y in data]
    torch.testing.assert_close(torch.tensor(ours), torch.tensor(expected), rtol=LOSS_RTOL, atol=LOSS_ATOL)
    trained = program.parameters()
    assert torch.equal(trained["embed.weight"], model.embed.weight.detach())
    torch.testing.assert_close(trained["head.weight"], reference.head.weight.detach(), rtol=1e-4, atol=1e-6)
    assert "embed.weight" not in program.trained
    assert not any(name.endswith("embed.weight") for name in program.weights if name.startswith("optimizer."))
    assert set(program.state_dict()["state"]) == {2, 3, 4, 5}
    assert set(eager.state_dict()["state"]) == {2, 3, 4, 5}


class TiedHead(nn.Module):
    """An embedding that is also the output head, registered again as `head` after a position table:
    torch.export reads the tied weight through the last name, model.parameters() lists it first."""

    def __init__(self) -> None:
        super().__init__()
        self.embed, self.positions = nn.Embedding(11, 6), nn.Embedding(4, 6)
        self.head = nn.Linear(6, 11, bias=False)
        self.head.weight = self.embed.weight

    def forward(self, ids: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        logits = self.head(self.embed(ids) + self.positions.weight)
        return nn.functional.cross_entropy(logits.flatten(0, 1), labels.flatten())


def test_no_optimizer_returns_loss_and_gradients_in_model_order() -> None:
    """With a tied weight too (its gradient where model.parameters() lists it)."""
    torch.manual_seed(0)
    model, ids, labels = TiedHead(), torch.randint(0, 11, (2, 4)), torch.randint(0, 11, (2, 4))
    reference = copy.deepcopy(model)
    program = rducc.compile_training(model, (ids, labels), optimizer=None, opt_level=0)
    loss, *gradients = program.step(ids, labels)
    expected = reference(ids, labels)
    expected.backward()
    torch.testing.assert_close(torch.as_tensor(loss), expected.detach())
    for gradient, (name, parameter) in zip(gradients, reference.named_parameters(), strict=True):
        torch.testing.assert_close(torch.as_tensor(gradient), parameter.grad, rtol=1e-5, atol=1e-7, msg=name)
    assert program.trained == ["head.weight", "positions.weight"]  # the names the program reads
    # other weights loaded by `named_parameters()`, which names the tied one `embed.weight` only
    other = TiedHead()
    program.load_parameters(dict(other.named_parameters()))
    torch.testing.assert_close(torch.as_tensor(program.step(ids, labels)[0]), other(ids, labels).detach())


def test_batch_norm_running_statistics_follow_eager() -> None:
    """A CNN with batch norm in train mode: its running statistics (buffers the
    forward updates) are written back every step, as eager updates them."""
    history = train_both("cnn", "adamw", steps=5, opt_level=2)
    assert_matches(history)
    buffers = dict(history.program.parameters())
    reference = history.eager_optimizer
    assert reference is not None
    model_buffers = [name for name in buffers if name.endswith("running_mean")]
    assert model_buffers
    for name in model_buffers:
        assert not torch.equal(buffers[name], torch.zeros_like(buffers[name]))


# -- errors -------------------------------------------------------------------


def test_loss_that_is_not_a_scalar() -> None:
    class PerSample(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.fc = nn.Linear(4, 2)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.fc(x).pow(2).sum(1)

    with pytest.raises(RduccError, match=r"the loss is a tensor of shape \[3\], not a floating-point scalar"):
        rducc.compile_training(PerSample(), (torch.randn(3, 4),))


def test_unsupported_optimizer_is_named() -> None:
    with pytest.raises(RduccError, match="optimizer 'lamb' is not supported; rducc compiles adam, adamw, sgd"):
        rducc.compile_training(Classifier(), _data(1)[0], optimizer="lamb")
    with pytest.raises(RduccError, match="optimizer 'RMSprop' is not supported"):
        model = Classifier()
        rducc.compile_training(model, _data(1)[0], optimizer=torch.optim.RMSprop(model.parameters()))
    with pytest.raises(RduccError, match="optimizer 'sgd' has no option betas"):
        rducc.compile_training(Classifier(), _data(1)[0], optimizer="sgd", betas=(0.9, 0.99))


def test_nothing_requires_grad() -> None:
    model = Classifier().requires_grad_(False)
    with pytest.raises(RduccError, match="no parameter of the model requires grad"):
        rducc.compile_training(model, _data(1)[0])


def test_optimizer_over_foreign_tensors() -> None:
    model = Classifier()
    stray = nn.Parameter(torch.zeros(3))
    with pytest.raises(RduccError, match="not parameters of the model"):
        rducc.compile_training(model, _data(1)[0], optimizer=torch.optim.SGD([*model.parameters(), stray], lr=0.1))


# -- bf16 mixed precision (against eager autocast: test_training_precision.py) --


def test_unsupported_mixed_precision_is_named() -> None:
    with pytest.raises(RduccError, match="mixed_precision 'fp8' is not supported; rducc compiles bf16"):
        rducc.compile_training(Classifier(), _data(1)[0], mixed_precision="fp8")


def test_meta_device_model_compiles_without_weights() -> None:
    """A model on the meta device (a full-size config) compiles a step with no data;
    cross_entropy there is refused with what to write instead."""

    class OneHotLoss(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.body = nn.Linear(32, 64)
            self.head = nn.Linear(64, 16)

        def forward(self, x: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
            log_probs = self.head(torch.relu(self.body(x))).log_softmax(-1)
            hot = labels[:, None] == torch.arange(16, device=labels.device)
            return -(log_probs * hot).sum(-1).mean()

    with torch.device("meta"):
        model = OneHotLoss()
    example = (torch.randn(8, 32, device="meta"), torch.zeros(8, dtype=torch.long, device="meta"))
    program = rducc.compile_training(model, example, optimizer="adamw", opt_level=2)
    assert program.weights == {}
    phases = {phase_of(op) for op in entry_function(program.module).walk()} - {None}
    assert Phase.OPTIMIZER in phases
    assert program.simulate().modeled_time_s > 0

    class CrossEntropy(OneHotLoss):
        def forward(self, x: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
            return nn.functional.cross_entropy(self.head(torch.relu(self.body(x))), labels, ignore_index=-100)

    with torch.device("meta"):
        other = CrossEntropy()
    meta = rducc.compile_training(other, example, optimizer="sgd", opt_level=0)
    on_cpu = rducc.compile_training(CrossEntropy(), tuple(torch.zeros_like(t, device="cpu") for t in example),
                                    optimizer="sgd", opt_level=0)
    assert _op_names(meta.module) == _op_names(on_cpu.module)  # the same step, with the same backward


def _op_names(module) -> list[str]:
    return sorted(op.name for op in entry_function(module).walk())


def test_adam_spread_twins_move_every_weight_one_ulp() -> None:
    """The Adam widening (`training_cases.float32_spread`) is measured from twins one
    float32 rounding apart: every weight moves exactly one ulp, up or down. (The
    form before, each weight times 1 +- 2^-24, moved only half of them: 1 + 2^-24
    rounds to 1 in float32, so the spread missed the upward half.)"""
    model, _ = models.mlp()
    twin = rounding_twin(model, seed=0)
    for (name, before), after in zip(model.named_parameters(), twin.parameters()):
        moved = after.detach() - before.detach()
        ulp = torch.nextafter(before.detach().abs(), torch.tensor(torch.inf)) - before.detach().abs()
        assert (moved.abs() > 0).all(), f"{name}: some weights did not move"
        assert (moved.abs() <= ulp).all(), f"{name}: a weight moved more than one ulp"
        assert (moved > 0).any() and (moved < 0).any(), f"{name}: weights moved one way only"
