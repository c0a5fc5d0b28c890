"""The data-parallel reference of the training matrix (issue 27): eager as
torch's DistributedDataParallel computes a step (`training_cases.Around.ranks`:
each rank's shard forward and backward alone under autocast, the gradients
times 1/world size and summed), and rducc's dp=2 mixed-precision step held to
it (`rdu_partition.training.ddp_gradient`)."""

from __future__ import annotations

import copy

import pytest
import torch
from test_training_precision import SmallMlp
from torch import nn
from training_cases import Around, copy_model, dp_reference, mixed_precision_verdict, rows_independent

import rducc
from rducc.passes import rdu_partition


class _Normed(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc, self.norm, self.head = nn.Linear(32, 16), nn.BatchNorm1d(16), nn.Linear(16, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(torch.relu(self.norm(self.fc(x))))


def _sgd(parameters: object) -> torch.optim.Optimizer:
    return torch.optim.SGD(parameters, lr=0.05, momentum=0.9)  # type: ignore[arg-type]


def _data(steps: int) -> list[tuple[torch.Tensor, torch.Tensor]]:
    generator = torch.Generator().manual_seed(1)
    return [(torch.randn(8, 32, generator=generator), torch.randint(0, 10, (8,), generator=generator))
            for _ in range(steps)]


class _Bf16Path(nn.Module):
    """One weight in a float32 and a bf16 path (round 8's mixed_paths): the rows are
    independent, the bf16 path's weight gradient a bf16 sum over them."""

    def __init__(self) -> None:
        super().__init__()
        self.fc, self.shared, self.head = nn.Linear(32, 16), nn.Parameter(torch.randn(16, 16) / 4), nn.Linear(16, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.relu(self.fc(x))
        low = (h.bfloat16() @ self.shared.bfloat16().t()).to(h.dtype)
        return self.head(torch.tanh(h @ self.shared.t()) + torch.sigmoid(low))


class _NormedBf16(_Normed):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return super().forward(x.bfloat16().to(x.dtype))


@pytest.mark.parametrize("build, independent", [(SmallMlp, True), (_Normed, False), (_Bf16Path, True),
                                                (_NormedBf16, False)],
                         ids=["mlp", "batch-norm", "bf16-path", "batch-norm-bf16-input"])
def test_ddp_reference_averages_the_ranks_gradients(build: type[nn.Module], independent: bool) -> None:
    """In float64 DDP's average of the ranks' gradients is the whole batch's where rows are
    independent; batch norm's statistics couple them (rducc's dp then reduces the statistics
    over the replicas, as SyncBatchNorm: the whole batch stays the reference). A bf16 path's
    weight gradient, rounded per shard, is no coupling; batch norm still is, after a bf16 cast."""
    torch.manual_seed(0)
    model = build().train()
    x, y = _data(1)[0]
    assert rows_independent(model, nn.functional.cross_entropy, x, y, 2) is independent


def test_a_shard_eager_cannot_run_alone_couples_the_rows() -> None:
    """Batch norm over one row per rank (timm LeViT's head at dp=2 on 2 images): eager refuses the shard
    alone ("Expected more than 1 value per channel"), so the rows are coupled, not an error; the shards
    with their batch norm as SyncBatchNorm (the whole batch's statistics) train the whole batch's function."""
    torch.manual_seed(0)
    model = _Normed().train()
    x, y = torch.randn(2, 32), torch.tensor([1, 3])
    assert not rows_independent(model, nn.functional.cross_entropy, x, y, 2)
    assert rows_independent(model, nn.functional.cross_entropy, x, y, 2, synced=True)


class _WholeBatchNoise(nn.Module):
    """A buffer with one row per sample of the whole batch (ViT-MAE's masking noise, round 16's `vit_mae`)."""

    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(32, 10)
        self.register_buffer("noise", torch.randn(8, 32))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(x + self.noise)


def test_a_shard_that_cannot_meet_a_whole_batch_buffer_couples_the_rows() -> None:
    """A rank's 4 rows against the buffer's 8 (eager raises a RuntimeError on the shard, not a ValueError):
    the rows are coupled and the whole batch is the dp reference, not a crash of the harness."""
    torch.manual_seed(0)
    model = _WholeBatchNoise().train()
    assert dp_reference(model, nn.functional.cross_entropy, _data(1), 2).ranks == 1


def test_dp2_bf16_steps_are_ddp_autocasts_and_the_whole_batchs_rounding_fails_the_bar() -> None:
    """5 bf16 SGD steps at dp=2: rducc's losses and parameters equal eager autocast's as
    DDP over 2 ranks (each replica's bf16 weight gradient rounded by its kernel, cast up
    and all-reduced in f32), and pass the matrix's dp=2 bar (`mixed_precision_verdict`
    against eager DDP autocast and eager DDP float32). The same step with the replicas'
    gradients kept f32 and rounded once after the all-reduce (the whole batch's rounding,
    rducc's dp before) is judged by the same bar and fails it."""
    torch.manual_seed(0)
    model = SmallMlp()
    data = _data(5)

    def eager(autocast: bool) -> tuple[list[float], dict[str, torch.Tensor]]:
        trained = copy.deepcopy(model)
        optimizer = _sgd(trained.parameters())
        losses = [Around(ranks=2).step(trained, nn.functional.cross_entropy, optimizer, x, y, autocast)
                  for x, y in data]
        return losses, {n: p.detach() for n, p in trained.named_parameters()}

    def rducc_run() -> tuple[list[float], dict[str, torch.Tensor]]:
        trained = copy.deepcopy(model)
        program = rducc.compile_training(trained, data[0], optimizer=_sgd(trained.parameters()),
                                         loss_fn=nn.functional.cross_entropy, mixed_precision="bf16",
                                         opt_level=0, target="sn40l-8", dp=2)
        return [program.step(x, y).item() for x, y in data], program.parameters()

    autocast, full = eager(True), eager(False)
    verdict = mixed_precision_verdict(rducc_run(), autocast, full)
    assert verdict.ok and verdict.equal_to_autocast, verdict.text()
    assert verdict.parameters_from_autocast < 1e-7, verdict.text()
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(rdu_partition._TensorPartitioner, "_rank_rounded", lambda self, value: False)
        whole = mixed_precision_verdict(rducc_run(), autocast, full)
    assert not whole.ok, whole.text()


class _ConvNormed(nn.Module):
    """A convolution, batch norm in train mode (the rows coupled) and a linear head."""

    def __init__(self) -> None:
        super().__init__()
        self.conv, self.norm, self.head = nn.Conv2d(3, 4, 3, padding=1), nn.BatchNorm2d(4), nn.Linear(4, 5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(torch.relu(self.norm(self.conv(x))).mean((2, 3)))


def test_dp2_bf16_gradients_with_coupled_rows_are_ddp_with_sync_batch_norms() -> None:
    """Batch norm couples the rows (rducc's dp all-reduces its statistics, as SyncBatchNorm), and
    the reference is DDP with SyncBatchNorm (`Around(synced=True)`, `ddp_sync_norm`: in float64 it
    is the whole batch's function). rducc's bf16 weight gradients at dp=2 are each replica's own,
    rounded by its kernel and all-reduced in f32, as DDP's ranks': equal to that reference bit for
    bit (batch norm's float32 gradients to float32 rounding). Before, the convolution's per-replica
    bf16 gradients were all-reduced in bf16 (one more rounding) and the head's kept f32 and rounded
    once; the whole batch's (eager's convolution backward adds the images one by one into its bf16
    sum on some CPUs) has no parallel form."""
    torch.manual_seed(0)
    model = _ConvNormed().train()
    generator = torch.Generator().manual_seed(2)
    x, y = torch.randn(4, 3, 6, 6, generator=generator), torch.randint(0, 5, (4,), generator=generator)
    assert not rows_independent(model, nn.functional.cross_entropy, x, y, 2)
    assert rows_independent(model, nn.functional.cross_entropy, x, y, 2, synced=True)
    eager = copy.deepcopy(model)
    Around(ranks=2, synced=True).step(eager, nn.functional.cross_entropy, _sgd(eager.parameters()), x, y,
                                      autocast=True)
    program = rducc.compile_training(copy.deepcopy(model), (x, y), optimizer=None,
                                     loss_fn=nn.functional.cross_entropy, mixed_precision="bf16", opt_level=0,
                                     target="sn40l-8", dp=2)
    _, *gradients = program.step(x, y)
    parameters = dict(eager.named_parameters())
    for gradient, name in zip(gradients, program.trained, strict=True):
        want = parameters[name.removeprefix(program.prefix)].grad
        atol = 1e-7 if "norm" in name else 0.0
        torch.testing.assert_close(torch.as_tensor(gradient).float(), want, rtol=0, atol=atol, msg=name)


def _masked_mean(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """Cross entropy plus a squared error over the rows whose label is below 3, divided by
    their count (round 16's `dataclass_heads`): no mean over samples."""
    keep = labels < 3
    squared = (logits[:, 0] - labels.to(logits.dtype) / 4).pow(2)
    kept = torch.where(keep, squared, torch.zeros_like(squared)).sum() / keep.sum().clamp_min(1)
    return nn.functional.cross_entropy(logits, labels) + kept


def test_the_dp_reference_is_the_whole_batchs_loss_when_it_is_no_per_sample_mean() -> None:
    """rducc's dp=2 step computes the whole batch's loss and gradients (the program's meaning). A
    masked mean is DDP's mean of the ranks' losses only on a batch whose ranks keep as many rows:
    the first batch here (2 and 2 kept) is such a batch, the second (4 and 3) is not, so the
    reference is the whole batch (its losses the whole batch's, not DDP's per-rank mean); a per-sample
    mean stays DDP's form (its per-replica rounding). Before, the first batch alone decided."""
    torch.manual_seed(0)
    model = SmallMlp()
    (x, _), (x2, _) = _data(2)
    balanced = torch.tensor([0, 1, 4, 5, 2, 0, 7, 9])
    unbalanced = torch.tensor([0, 1, 2, 0, 1, 2, 9, 0])
    data = [(x, balanced), (x2, unbalanced)]
    assert dp_reference(model, nn.functional.cross_entropy, data, 2).ranks == 2
    around = dp_reference(model, _masked_mean, data, 2)
    whole, reference = copy_model(model), copy_model(model)
    want = [Around().step(whole, _masked_mean, _sgd(whole.parameters()), *batch) for batch in data]
    optimizer = _sgd(reference.parameters())
    got = [around.step(reference, _masked_mean, optimizer, *batch) for batch in data]
    assert got == pytest.approx(want, rel=1e-6), (around, got, want)


def test_the_reference_copy_keeps_a_parameters_gradient_hooks() -> None:
    """torch's deepcopy of a Parameter drops its hooks (round 16's `clamp_hooks` through the
    torch.compile backend was compared with an unclamped eager): `copy_model` keeps them."""
    torch.manual_seed(0)
    model = nn.Linear(32, 10)
    model.weight.register_hook(lambda grad: grad.clamp(-1e-3, 1e-3))
    seen: list[str] = []
    model.bias.register_post_accumulate_grad_hook(lambda parameter: seen.append("bias"))
    twin = copy_model(model)
    x, y = _data(1)[0]
    nn.functional.cross_entropy(twin(x), y).backward()
    assert twin.weight.grad is not None and twin.weight.grad.abs().max() <= 1e-3
    assert seen == ["bias"]
