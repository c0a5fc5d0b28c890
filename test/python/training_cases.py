"""Models, batches and the eager reference for the training numerics checks
(test_training*.py and bench/training_numerics.py).

Every case is a model in train() mode, a loss and a batch maker; `train_both`
trains a copy with torch.optim in eager and the model through
`rducc.compile_training` on the same batches and returns both histories.
"""

from __future__ import annotations

import copy
import sys
from collections.abc import Callable
from contextlib import nullcontext
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import torch
from torch import nn
from torch.utils._python_dispatch import TorchDispatchMode

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples"))

import ddp_sync_norm  # noqa: E402
import models  # noqa: E402

import rducc  # noqa: E402

LOSS_RTOL, LOSS_ATOL = 1e-5, 1e-6
"""Losses, step by step: about 100 float32 ulps. rducc's backward sums in
another order than eager's CPU kernels, and torch's decompositions of lerp,
addcdiv and addcmul (the optimizer's arithmetic in the traced step) round
differently from its fused kernels; measured over 20 steps the losses differ
by at most a few 1e-7 relative (docs/training.md), well inside this."""

PARAM_RTOL, PARAM_ATOL = 1e-4, 1e-5
"""Parameters after the last step: rtol 1e-4 (the issue's bar); the atol keeps
elements that pass near zero from asking for a relative match of a rounding
difference. An element whose exact gradient is zero (GPT-2's key bias, which
softmax ignores; a convolution's bias before batch norm) gets rounding noise
as its gradient in float32, which Adam divides by its own magnitude and turns
into full steps: there eager's own float32 result is noise. Such elements
(under Adam, where the exact gradient's RMS, from float64 eager's exp_avg_sq,
is below Adam's eps: no float32 gradient resolves it) are held only to the
float64 result within what Adam can move them in the steps taken (2 lr a
step); every other element to eager's (`assert_matches`), under Adam within
the bar plus twice the distance eager's own float32 training shows from
itself started a rounding apart (`float32_spread`), or to the float64 result
within twice eager's own distance from it (`near_float64`: where eager's
float32 result is noise, the noise's size is the bar)."""



class GatedBlock(nn.Module):
    """A residual block whose normed input feeds two products: its outlined forward
    returns that one value for two saved slots of the backward."""

    def __init__(self) -> None:
        super().__init__()
        self.norm = nn.LayerNorm(64)
        self.gate = nn.Linear(64, 64)
        self.up = nn.Linear(64, 64, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.norm(x)
        return x + torch.sigmoid(self.gate(h)) * self.up(h)


class GatedStack(nn.Module):
    """`layers` gated blocks (width 64), the loss the mean square of the last's output."""

    def __init__(self, layers: int = 2) -> None:
        super().__init__()
        self.blocks = nn.ModuleList([GatedBlock() for _ in range(layers)])

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for block in self.blocks:
            x = block(x)
        return x.pow(2).mean()


def language_model_loss(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    return nn.functional.cross_entropy(logits.flatten(0, 1), labels.flatten())


def tiny_vit(seed: int = 0) -> tuple[nn.Module, tuple[torch.Tensor, ...]]:
    from transformers import ViTConfig, ViTForImageClassification

    torch.manual_seed(seed)
    config = ViTConfig(image_size=16, patch_size=4, num_channels=3, hidden_size=32, num_hidden_layers=2,
                       num_attention_heads=4, intermediate_size=64, num_labels=5)
    model = ViTForImageClassification(config)

    class Logits(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.vit = model

        def forward(self, pixels: torch.Tensor) -> torch.Tensor:
            return self.vit(pixel_values=pixels).logits

    return Logits(), (torch.randn(2, 3, 16, 16),)


def _no_dropout(model: nn.Module) -> nn.Module:
    """Dropout off (p=0), so that eager and rducc draw nothing random."""
    for module in model.modules():
        if isinstance(module, nn.Dropout):
            module.p = 0.0
    return model


@dataclass
class Case:
    build: Callable[[], tuple[nn.Module, tuple[torch.Tensor, ...]]]
    loss: Callable[..., torch.Tensor]
    classes: int
    per_token: bool = False


CASES = {
    "mlp": Case(models.mlp, nn.functional.cross_entropy, 10),
    "cnn": Case(models.cnn, nn.functional.cross_entropy, 10),
    "tiny_llama": Case(models.tiny_llama, language_model_loss, 256, per_token=True),
    "tiny_gpt2": Case(models.tiny_gpt2, language_model_loss, 256, per_token=True),
    "vit": Case(tiny_vit, nn.functional.cross_entropy, 5),
}

OPTIMIZERS = {
    "sgd": lambda params: torch.optim.SGD(params, lr=0.05, momentum=0.9, weight_decay=1e-4),
    "sgd_nesterov": lambda params: torch.optim.SGD(params, lr=0.05, momentum=0.9, nesterov=True),
    "adamw": lambda params: torch.optim.AdamW(params, lr=1e-3, weight_decay=0.1),
}


def batches(case: Case, example: torch.Tensor, count: int, seed: int = 100) -> list[tuple[torch.Tensor, torch.Tensor]]:
    made = []
    for step in range(count):
        generator = torch.Generator().manual_seed(seed + step)
        if example.is_floating_point():
            x = torch.randn(example.shape, generator=generator)
        else:
            x = torch.randint(0, 256, example.shape, generator=generator)
        shape = example.shape if case.per_token else example.shape[:1]
        made.append((x, torch.randint(0, case.classes, shape, generator=generator)))
    return made


@dataclass
class History:
    rducc_losses: list[float]
    eager_losses: list[float]
    rducc_parameters: dict[str, torch.Tensor]
    eager_parameters: dict[str, torch.Tensor]
    program: rducc.TrainingProgram
    eager_optimizer: torch.optim.Optimizer
    exact_parameters: dict[str, torch.Tensor]
    """The same training in float64 in eager."""
    unresolved: dict[str, torch.Tensor]
    """Elements whose exact gradient float32 cannot resolve (see PARAM_RTOL)."""
    lr: float
    steps: int
    spread: dict[str, torch.Tensor] = field(default_factory=dict)
    """Under Adam: how far eager's own float32 training lands from itself started
    from weights one rounding apart, per element (`float32_spread`)."""


@dataclass(frozen=True)
class Around:
    """What a user does around each step in eager: gradients accumulated over `microbatches`
    equal chunks of the batch (each chunk's loss / k), then `clip_grad_norm_(max_grad_norm)` over
    the trained parameters before the update (`compile_training(microbatches=, max_grad_norm=)`).
    `ranks` > 1: data parallel as torch's DistributedDataParallel computes it: each rank's share of
    each microbatch (rank r the r-th of `ranks` equal parts of it, as rducc's dp replica r holds them;
    which rows a rank gets is the data loader's choice) forward and backward alone, accumulated over
    the microbatches, then the ranks' gradients averaged (`_all_reduce_share`). `synced`: the
    model's batch norm couples the rows, and the ranks run it as SyncBatchNorm (`ddp_sync_norm`:
    each microbatch's statistics, and the sums its backward all-reduces, are the whole
    microbatch's)."""

    microbatches: int = 1
    max_grad_norm: float | None = None
    ranks: int = 1
    synced: bool = False

    def step(self, model: nn.Module, loss: Callable[..., torch.Tensor], optimizer: torch.optim.Optimizer,
             x: torch.Tensor, y: torch.Tensor, autocast: bool = False) -> float:
        """One eager step on batch (x, y), the forward under CPU autocast to bf16 if `autocast`;
        the loss (the chunks' mean; at `ranks` > 1 the mean of the ranks' losses, as DDP users log it)."""
        optimizer.zero_grad()
        total, summed = 0.0, dict[torch.Tensor, torch.Tensor]()
        chunks = list(zip(x.chunk(self.microbatches), y.chunk(self.microbatches), strict=True))
        parts = [list(zip(xm.chunk(self.ranks), ym.chunk(self.ranks), strict=True)) for xm, ym in chunks]
        norms = [ddp_sync_norm.batch_statistics(model, loss, xm, ym, autocast, self.ranks, self.microbatches)
                 if self.synced else None for xm, ym in chunks]
        for rank in range(self.ranks):
            for (xs, ys), sums in zip((part[rank] for part in parts), norms, strict=True):
                with (ddp_sync_norm.synced_norms(model, sums) if sums is not None else nullcontext(),
                      torch.autocast("cpu", torch.bfloat16, enabled=autocast)):
                    value = loss(model(xs), ys)
                (value / self.microbatches).backward()
                total += value.item() / self.microbatches / self.ranks
            if self.ranks > 1:
                _all_reduce_share(optimizer, summed, self.ranks)
        for parameter, gradient in summed.items():
            parameter.grad = gradient
        if self.max_grad_norm is not None:
            nn.utils.clip_grad_norm_([p for p in model.parameters() if p.requires_grad], self.max_grad_norm)
        optimizer.step()
        return total


def _all_reduce_share(optimizer: torch.optim.Optimizer, summed: dict[torch.Tensor, torch.Tensor], ranks: int) -> None:
    """DDP's gradient all-reduce, one rank at a time in one process: this rank's local
    gradients (each parameter's `.grad` in its own dtype, float32 for autocast's master
    weights) times 1/`ranks` (DDP's reducer divides each rank's gradient by the world size
    as it copies it into its bucket, `mul_out(bucket, grad, 1 / world_size)`, before the
    all-reduce's SUM) added to the earlier ranks' in `summed`, in rank order; `.grad` cleared
    for the next rank."""
    for group in optimizer.param_groups:
        for parameter in group["params"]:
            if parameter.grad is None:
                continue
            share = parameter.grad * (1.0 / ranks)
            summed[parameter] = share if parameter not in summed else summed[parameter] + share
            parameter.grad = None


class _Dtypes(TorchDispatchMode):
    """The floating dtypes of every op's results while active."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: set[torch.dtype] = set()

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        out = func(*args, **(kwargs or {}))
        for value in out if isinstance(out, tuple | list) else (out,):
            if isinstance(value, torch.Tensor) and value.is_floating_point():
                self.seen.add(value.dtype)
        return out


def copy_model(model: nn.Module) -> nn.Module:
    """A deep copy of `model` that keeps its parameters' gradient hooks (`register_hook`,
    `register_post_accumulate_grad_hook`): torch's `Parameter.__deepcopy__` makes a new
    Parameter without them, so an eager reference copied plainly would train without the
    model's hooks (round 16's `clamp_hooks`: gradients clamped through the torch.compile
    backend, unclamped in the copy). Module hooks and hooks the forward registers on
    activations are copied or re-run as they are. A hook that closes over the original
    parameter still acts on the original (no copy can know)."""
    copied = copy.deepcopy(model)
    for (name, original), (_, twin) in zip(model.named_parameters(remove_duplicate=False),
                                           copied.named_parameters(remove_duplicate=False), strict=True):
        if twin is original:
            raise ValueError(f"copy_model: parameter {name} was not copied")
        for hook in (original._backward_hooks or {}).values():
            if not (twin._backward_hooks and hook in twin._backward_hooks.values()):
                twin.register_hook(hook)
        for hook in (getattr(original, "_post_accumulate_grad_hooks", None) or {}).values():
            if not (twin._post_accumulate_grad_hooks and hook in twin._post_accumulate_grad_hooks.values()):
                twin.register_post_accumulate_grad_hook(hook)
    return copied


def rows_independent(model: nn.Module, loss: Callable[..., torch.Tensor], x: torch.Tensor, y: torch.Tensor,
                     ranks: int, synced: bool = False) -> bool:
    """Whether `model`'s gradient on batch (x, y) is the average of its gradients on the
    batch's `ranks` shards (float64, to 1e-9 relative): its rows are independent, so data
    parallelism (DDP's, rducc's dp) trains the whole batch's function. Batch norm in train
    mode couples the rows (its statistics are the batch's): rducc's dp reduces them over the
    replicas (as `nn.SyncBatchNorm`); `synced` asks whether the shards with their batch norm
    run as SyncBatchNorm (`Around(synced=True)`) train the whole batch's function.
    A model that casts to a narrower float itself (a bf16 path) rounds a sum over the rows
    there (its weight gradient) per shard as DDP does: each gradient is then held within
    twice that float's epsilon of its largest element, not 1e-9. A shard eager cannot run alone
    (a batch norm given one value per channel: timm LeViT's head on one pooled row; a buffer
    with the whole batch's rows: round 16's `vit_mae` noise) is coupled."""
    exact = copy_model(model).double()
    x = x.double() if x.is_floating_point() else x
    whole = torch.optim.SGD(exact.parameters(), lr=0.0)
    dtypes = _Dtypes()
    with dtypes:
        Around().step(exact, loss, whole, x, y)
    want = {name: p.grad.clone() for name, p in exact.named_parameters() if p.grad is not None}
    shards = torch.optim.SGD(exact.parameters(), lr=0.0)
    try:
        Around(ranks=ranks, synced=synced).step(exact, loss, shards, x, y)
    except (ValueError, RuntimeError):  # eager cannot run a shard alone: coupled rows (the docstring)
        return False
    epsilon = max(torch.finfo(dtype).eps for dtype in dtypes.seen | {torch.float64})
    if epsilon == torch.finfo(torch.float64).eps:
        return all(torch.allclose(p.grad, want[name], rtol=1e-9, atol=1e-12)
                   for name, p in exact.named_parameters() if p.grad is not None)
    return all(bool((p.grad - want[name]).abs().max() <= 2 * epsilon * want[name].abs().max())
               for name, p in exact.named_parameters() if p.grad is not None)


def dp_reference(model: nn.Module, loss: Callable[..., torch.Tensor], data: list[tuple[torch.Tensor, torch.Tensor]],
                 ranks: int, around: Around = Around()) -> Around:
    """The eager reference for rducc's dp=`ranks` training on `data`: rducc's data
    parallelism is the compiler's choice and keeps the program's meaning (the step's loss
    and gradients are the whole batch's, one socket's), so the reference is the whole
    batch (`around` as given) unless DistributedDataParallel's form (each rank's shard
    alone, gradients averaged: `Around.ranks`, with batch norm as SyncBatchNorm:
    `Around.synced`) is that same function on EVERY batch of the run (`rows_independent`);
    there DDP is what rducc's replicas compute, each one's narrow-float gradient rounded
    by its own kernel. A loss that is no mean over samples (a masked term divided by the
    batch's count of kept rows) is DDP's only on batches whose ranks keep equal counts:
    one such batch (round 16's `dataclass_heads`, its first) decides nothing."""
    for synced in (False, True):
        if all(rows_independent(model, loss, x, y, ranks, synced=synced) for x, y in data):
            return replace(around, ranks=ranks, synced=synced)
    return around


def _train_exact(model: nn.Module, loss: Callable[..., torch.Tensor], optimizer: str,
                 data: list[tuple[torch.Tensor, torch.Tensor]], around: Around = Around(),
                 ) -> tuple[dict[str, torch.Tensor], dict[str, torch.Tensor]]:
    """The parameters (and floating buffers) after training in float64, and (under Adam) which parameter
    elements' exact gradient is noise to float32."""
    exact = copy_model(model).double()
    eager = OPTIMIZERS[optimizer](exact.parameters())
    for x, y in data:
        around.step(exact, loss, eager, x.double() if x.is_floating_point() else x, y)
    unresolved = {}
    for name, parameter in exact.named_parameters():
        state = eager.state.get(parameter, {})
        if "exp_avg_sq" in state:
            group = eager.param_groups[0]
            bias = 1 - group["betas"][1] ** float(state["step"])
            unresolved[name] = (state["exp_avg_sq"] / bias).sqrt() < group["eps"]
        else:
            unresolved[name] = torch.zeros_like(parameter, dtype=torch.bool)
    trained = [*exact.named_parameters(), *((n, b) for n, b in exact.named_buffers() if b.is_floating_point())]
    return {n: p.detach().float() for n, p in trained}, unresolved


SPREAD_TWINS, SPREAD_FACTOR = 2, 2.0
"""Adam's twins and how far past their spread an element may land (`float32_spread`)."""


def float32_spread(model: nn.Module, loss: Callable[..., torch.Tensor], optimizer: str,
                   data: list[tuple[torch.Tensor, torch.Tensor]],
                   reference: dict[str, torch.Tensor], around: Around = Around()) -> dict[str, torch.Tensor]:
    """Under Adam, per element, the largest distance between eager's float32
    training and the same training started from weights one float32 rounding
    apart (each weight moved one ulp up or down at random; `SPREAD_TWINS`
    twins); empty under SGD. (Each weight times 1 +- 2^-24, the form before,
    moved only the ones multiplied by 1 - 2^-24: 1 + 2^-24 rounds to 1 in float32.)

    Adam divides each element's step by the RMS of its own gradient, so an
    element whose gradient changes sign from step to step (a rare token's
    embedding row, its output row) turns rounding-size differences in its
    gradients into parameter differences past the bar: eager's own result is
    not reproducible there to rtol 1e-4 (tiny Llama at dp=2: eager against its
    twins 1.2e-5 to 3.6e-5 in the very elements where rducc's summation order
    lands 1.1e-5 to 3.6e-5 from eager; rducc's gradients are as close to
    float64's as eager's). SGD's step is linear in the gradient: no spread.
    `model`: before training; `reference`: eager's parameters (and floating
    buffers, when given) after it."""
    if "adam" not in optimizer:
        return {}
    spread = {name: torch.zeros_like(value) for name, value in reference.items()}
    for twin_seed in range(SPREAD_TWINS):
        for name, value in _trained(rounding_twin(model, twin_seed), loss, optimizer, data, around).items():
            if name in spread:
                spread[name] = torch.maximum(spread[name], (value - reference[name]).abs())
    return spread


def rounding_twin(model: nn.Module, seed: int) -> nn.Module:
    """A copy of `model` with every parameter element moved one float32 ulp up or down (at random)."""
    twin = copy_model(model)
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for parameter in twin.parameters():
            up = torch.randint(0, 2, parameter.shape, generator=generator).bool()
            parameter.copy_(torch.nextafter(parameter, torch.where(up, torch.inf, -torch.inf)))
    return twin


def _trained(model: nn.Module, loss: Callable[..., torch.Tensor], optimizer: str,
             data: list[tuple[torch.Tensor, torch.Tensor]], around: Around = Around()) -> dict[str, torch.Tensor]:
    """The parameters and floating buffers after training `model` in eager float32 on `data`."""
    eager = OPTIMIZERS[optimizer](model.parameters())
    for x, y in data:
        around.step(model, loss, eager, x, y)
    return {name: value.detach().clone() for name, value in [*model.named_parameters(), *model.named_buffers()]
            if value.is_floating_point()}


def train_both(name: str, optimizer: str, steps: int = 20, opt_level: int = 2, seed: int = 0) -> History:
    """Train case `name` with `optimizer` for `steps` steps in eager and through rducc."""
    case = CASES[name]
    model, example = case.build()
    model = _no_dropout(model.train())
    reference = copy_model(model)
    data = batches(case, example[0], steps, seed=100 + seed)
    exact, unresolved = _train_exact(model, case.loss, optimizer, data)
    untrained = copy_model(model)
    program = rducc.compile_training(model, data[0], optimizer=OPTIMIZERS[optimizer](model.parameters()),
                                     loss_fn=case.loss, opt_level=opt_level)
    eager = OPTIMIZERS[optimizer](reference.parameters())
    ours, theirs = [], []
    for x, y in data:
        ours.append(program.step(x, y).item())
        eager.zero_grad()
        loss = case.loss(reference(x), y)
        loss.backward()
        eager.step()
        theirs.append(loss.item())
    parameters = program.parameters()
    trained = {n: p.detach().clone() for n, p in reference.named_parameters()}
    spread = float32_spread(untrained, case.loss, optimizer, data, trained)
    return History(ours, theirs, {n: parameters[n] for n, _ in reference.named_parameters()},
                   {n: p.detach().clone() for n, p in reference.named_parameters()}, program, eager, exact, unresolved,
                   max(group["lr"] for group in eager.param_groups), steps, spread)


def momentum_autocast_steps(
    model: nn.Module, image: tuple[int, ...], classes: int, steps: int, **options: Any
) -> tuple[Any, nn.Module, list[tuple[torch.Tensor, torch.Tensor]], list[float]]:
    """An image classifier trained under bf16 autocast by SGD (lr 0.1, momentum 0.9) on
    `steps` random batches of `image`-shaped inputs: eagerly on a copy of `model`, and
    compiled by rducc (mixed precision bf16, cross entropy, `options` to `compile_training`).
    (the compiled step, the eager model after the steps, the batches, eager's losses)."""
    generator = torch.Generator().manual_seed(1)
    data = [(torch.randn(image, generator=generator), torch.randint(0, classes, image[:1], generator=generator))
            for _ in range(steps)]
    eager = copy_model(model)
    momentum = torch.optim.SGD(eager.parameters(), lr=0.1, momentum=0.9)
    expected = [Around().step(eager, nn.functional.cross_entropy, momentum, x, y, autocast=True) for x, y in data]
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    program = rducc.compile_training(model, data[0], optimizer=optimizer, loss_fn=nn.functional.cross_entropy,
                                     mixed_precision="bf16", **options)
    return program, eager, data, expected


def assert_sgd_steps_match(program: Any, eager: nn.Module, batches: list[tuple[torch.Tensor, ...]],
                            rtol: float = 1e-4, optimizer: type[torch.optim.Optimizer] = torch.optim.SGD,
                            **options: float) -> None:
    """Train `eager` with torch's SGD (or `optimizer`; `options`) beside `program.step` on each batch:
    every step's loss equal within rel 1e-6, every parameter after the last within `rtol` (atol 1e-6)."""
    reference = optimizer(eager.parameters(), **options)
    for step, batch in enumerate(batches):
        reference.zero_grad()
        loss = eager(*batch)
        loss.backward()
        reference.step()
        got = float(program.step(*batch))
        assert abs(got - loss.item()) <= 1e-6 * abs(loss.item()), f"step {step}: loss {got} against eager {loss.item()}"
    trained = program.parameters()
    for name, parameter in eager.named_parameters():
        torch.testing.assert_close(torch.as_tensor(trained[name]), parameter.detach(), rtol=rtol, atol=1e-6, msg=name)


def assert_matches(history: History) -> None:
    torch.testing.assert_close(torch.tensor(history.rducc_losses), torch.tensor(history.eager_losses),
                               rtol=LOSS_RTOL, atol=LOSS_ATOL)
    for name, expected in history.eager_parameters.items():
        got, exact = history.rducc_parameters[name], history.exact_parameters[name]
        allowed = PARAM_ATOL + PARAM_RTOL * expected.abs()
        if name in history.spread:  # under Adam: where eager's own float32 result is not reproducible
            allowed = allowed + SPREAD_FACTOR * history.spread[name]
        noise = history.unresolved[name]
        failing = ~noise & ((got - expected).abs() > allowed) & ~near_float64(got, expected, exact, allowed)
        assert not failing.any(), (
            f"{name}: {int(failing.sum())} elements differ from eager by up to "
            f"{(got - expected)[failing].abs().max().item():.3g}")
        wandered = noise & ((got - exact).abs() > 2 * history.lr * history.steps + allowed)
        assert not wandered.any(), f"{name}: {int(wandered.sum())} noise-driven elements moved too far"


def near_float64(value: torch.Tensor, want: torch.Tensor, exact: torch.Tensor, allowed: torch.Tensor) -> torch.Tensor:
    """Which elements of `value` (rducc's parameter or buffer after the last step) are no farther
    from the float64 training's (`exact`) than twice eager's own distance from it (`want`: eager's
    float32), plus `allowed`; in a noise-driven tensor, one where eager's own float32 result is off
    float64's past the parameters' bar somewhere (the bar itself: `allowed`, widened by eager's twins'
    spread, can cover eager's own distance where a twin's noise happens to match it), twice eager's
    largest distance over the tensor.

    Adam turns a gradient float32 cannot resolve (a parameter whose exact gradient is zero, as a
    batch norm's bias whose output reaches the loss only through another batch norm; at the first
    step every element whose exact gradient is zero then, as a head reading features that are
    exactly a batch norm's zero bias) into full steps in a direction rounding chooses, and
    everything downstream follows the state those steps leave: running means, and parameters
    whose gradients read it. Each element of such a tensor is the same few noise sources mapped by
    the weights between, so the noise is the tensor's, and eager's one realization of it can land
    near float64's in an element where another summation order's does not. efficient_channels_last,
    AdamW one socket: two biases move +-lr a step in opposite directions in rducc and eager from the
    first step; over `blocks.2.expand.1.running_mean` rducc ends 5.3e-4 from float64, eager 6.7e-4.
    With adamw_groups over 2 microbatches of one image (the network then a function of the last
    batch norm's bias and the head only), the head's first step is noise (its features are that
    bias, zero at the start): `blocks.2.project.1.bias` ends 5.6e-5 from float64, eager 7.0e-5."""
    own, from_exact = (want - exact).abs(), (value - exact).abs()
    near = from_exact <= 2 * own + allowed
    if (own > PARAM_ATOL + PARAM_RTOL * want.abs()).any():  # the bare bar: `allowed` may hold Adam's spread
        near |= from_exact <= 2 * own.max() + allowed
    return near


def assert_buffers_match(got: dict[str, Any], expected: dict[str, torch.Tensor], exact: dict[str, torch.Tensor],
                         spread: dict[str, torch.Tensor]) -> None:
    """Floating buffers (running statistics, an EMA) after the last step: each element within the
    parameters' bar of eager's (under Adam widened by twice eager's own float32 spread,
    `float32_spread`), or `near_float64`; an infinite element (a mask buffer's -inf) only equal
    to eager's (-inf - -inf is NaN, and a relative bar of infinity passes anything)."""
    for name, want in expected.items():
        allowed = PARAM_ATOL + PARAM_RTOL * want.abs() + SPREAD_FACTOR * spread.get(name, torch.zeros_like(want))
        allowed = torch.where(want.isinf(), 0.0, allowed)
        value = torch.as_tensor(got[name]).to(want.dtype)
        off = torch.where(value == want, 0.0, (value - want).abs())
        passing = (off <= allowed) | near_float64(value, want, exact[name], allowed)
        assert passing.all(), f"buffer {name}: differs from eager by up to {off.max().item():.3g}"


@dataclass(frozen=True)
class MixedPrecisionVerdict:
    """Issue 27's bar for bf16 mixed precision: "stays within the tolerance
    eager autocast shows against float32". rducc's bf16 training is measured
    against float32 eager's on the same batches, and so is eager autocast's:
    the largest loss distance over the steps, and the largest parameter
    distance after the last (one tolerance per model, over all elements);
    rducc passes where neither is past eager autocast's, or where rducc
    equals eager autocast by the float32 cells' bar (losses within
    `LOSS_RTOL`, parameters within `PARAM_RTOL`): its distance from float32
    is then autocast's own to float32 rounding, and the comparison of the
    two a coin flip in the last bits. The distance from eager autocast is
    kept beside it (stricter: two bf16 trainings as close to float32 as each
    other can be twice the budget apart). At dp=N both eager references are
    data parallel as DDP computes it (`Around.ranks`; bench/train_matrix.py)."""

    losses: float
    """rducc's losses off float32 eager's."""
    loss_budget: float
    """Eager autocast's losses off float32 eager's."""
    losses_from_autocast: float
    parameters: float
    parameter_budget: float
    parameters_from_autocast: float
    equal_to_autocast: bool
    """rducc's losses and parameters equal eager autocast's by the float32 bar."""

    @property
    def ok(self) -> bool:
        return self.equal_to_autocast or (self.losses <= self.loss_budget and self.parameters <= self.parameter_budget)

    def text(self) -> str:
        same = ", equal to autocast" if self.equal_to_autocast else ""
        return (f"{'ok' if self.ok else 'FAIL'} (from fp32, rducc / autocast: losses {self.losses:.3g} / "
                f"{self.loss_budget:.3g}, parameters {self.parameters:.3g} / {self.parameter_budget:.3g}; "
                f"rducc from autocast: {self.losses_from_autocast:.2g}, {self.parameters_from_autocast:.2g}{same})")


TrainedRun = tuple[list[float], dict[str, torch.Tensor]]
"""Losses at every step and the parameters after the last."""


def mixed_precision_verdict(rducc_run: TrainedRun, autocast: TrainedRun, float32: TrainedRun) -> MixedPrecisionVerdict:
    """Judge `rducc_run` (bf16 mixed precision) by `MixedPrecisionVerdict`,
    against eager `autocast` and eager `float32` on the same batches."""

    def losses(a: TrainedRun, b: TrainedRun) -> float:
        return max(abs(x - y) for x, y in zip(a[0], b[0], strict=True))

    def parameters(a: TrainedRun, b: TrainedRun) -> float:
        return max((torch.as_tensor(a[1][name]).float() - want.float()).abs().max().item()
                   for name, want in b[1].items())

    def equal(a: TrainedRun, b: TrainedRun) -> bool:
        return torch.allclose(torch.tensor(a[0]), torch.tensor(b[0]), rtol=LOSS_RTOL, atol=LOSS_ATOL) and all(
            torch.allclose(torch.as_tensor(a[1][name]).float(), want.float(), rtol=PARAM_RTOL, atol=PARAM_ATOL)
            for name, want in b[1].items())

    return MixedPrecisionVerdict(losses(rducc_run, float32), losses(autocast, float32), losses(rducc_run, autocast),
                                 parameters(rducc_run, float32), parameters(autocast, float32),
                                 parameters(rducc_run, autocast), equal(rducc_run, autocast))
