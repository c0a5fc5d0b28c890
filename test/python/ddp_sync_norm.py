"""DistributedDataParallel with SyncBatchNorm, in one process: the data-parallel
reference of a training step whose batch norm couples the rows (issue 27,
`training_cases.Around(synced=True)`, bench/train_matrix.py).

torch's SyncBatchNorm runs on GPUs only. What it computes: each rank
normalizes its own rows with the whole batch's mean and variance (the ranks'
sums all-reduced) and, in the backward, all-reduces the per-channel sums of dy
and dy * (x - mean), so each rank's input gradient is the whole batch's
function; its weight and bias gradients, like every other parameter's, are the
rank's own, which DDP then averages. `batch_statistics` runs the whole batch
once with eager's kernels to read those all-reduced figures for every batch-norm
layer; under `synced_norms` a rank's shard then runs forward and backward alone
with its batch-norm layers using them. Every other op is eager's own kernel on
the rank's shard, so each rank's 16-bit weight gradients are rounded as a DDP
rank's kernels round them (a bf16 matmul's sum over the shard's rows, a bf16
convolution backward adding the shard's images one by one on some CPUs), and
are added in float32 by DDP's all-reduce (`training_cases._all_reduce_share`).
The whole batch's sums of dy are each rank's loss's times `ranks` (a loss that
is a mean over the rows; `training_cases.rows_independent(synced=True)` checks
the whole construction against the whole batch in float64)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import torch
from torch import nn
from torch.nn.modules.batchnorm import _BatchNorm


@dataclass
class NormSums:
    """One batch-norm layer's all-reduced figures over the whole batch, float32 per channel."""

    mean: torch.Tensor
    var: torch.Tensor
    """Biased, as the forward normalizes with."""
    count: int
    """Rows times spatial positions over all ranks."""
    sum_dy: torch.Tensor | None = None
    sum_dy_xmu: torch.Tensor | None = None


def batch_norms(model: nn.Module) -> dict[str, _BatchNorm]:
    """The batch-norm layers that normalize with the batch's statistics (train mode)."""
    return {name: module for name, module in model.named_modules()
            if isinstance(module, _BatchNorm) and (module.training or module.running_mean is None)}


def _channel_dims(x: torch.Tensor) -> list[int]:
    return [d for d in range(x.dim()) if d != 1]


def _wide(x: torch.Tensor) -> torch.Tensor:
    """`x` in float32 or wider (SyncBatchNorm's figures are float32; float64 stays float64)."""
    return x.to(torch.promote_types(x.dtype, torch.float32))


def batch_statistics(model: nn.Module, loss: Callable[..., torch.Tensor], x: torch.Tensor, y: torch.Tensor,
                     autocast: bool, ranks: int, microbatches: int = 1) -> dict[str, NormSums]:
    """Each batch-norm layer's figures SyncBatchNorm all-reduces, from one forward and backward
    of the whole batch (x, y) by eager (under CPU autocast to bf16 if `autocast`; the loss / the
    microbatches, as `Around.step` takes it). The running statistics are updated as that forward
    updates them (SyncBatchNorm's update from the same figures); the parameters' gradients are
    left as they were."""
    sums: dict[str, NormSums] = {}
    hooks = []

    def seen(name: str, module: nn.Module, inputs: tuple[torch.Tensor, ...], output: torch.Tensor) -> None:
        wide, dims = _wide(inputs[0]), _channel_dims(inputs[0])
        var, mean = torch.var_mean(wide, dim=dims, unbiased=False)
        sums[name] = NormSums(mean, var, wide.numel() // wide.shape[1])
        shape = [1, -1] + [1] * (wide.dim() - 2)

        def backward(dy: torch.Tensor) -> None:
            dy = _wide(dy) * ranks  # each rank's loss is a mean over its 1/ranks of the rows
            sums[name].sum_dy = dy.sum(dims)
            sums[name].sum_dy_xmu = (dy * (wide - mean.reshape(shape))).sum(dims)

        output.register_hook(backward)

    for name, module in batch_norms(model).items():
        hooks.append(module.register_forward_hook(lambda m, i, o, name=name: seen(name, m, i, o)))
    kept = {p: p.grad for p in model.parameters()}
    try:
        with torch.autocast("cpu", torch.bfloat16, enabled=autocast):
            value = loss(model(x), y)
        (value / microbatches).backward()
    finally:
        for hook in hooks:
            hook.remove()
        for parameter, grad in kept.items():
            parameter.grad = grad
    return sums


@contextmanager
def synced_norms(model: nn.Module, sums: dict[str, NormSums]) -> Iterator[None]:
    """While active, each batch-norm layer of `model` is SyncBatchNorm with the all-reduced
    figures `sums` (`batch_statistics`): its rows normalized with the whole batch's mean and
    variance by torch's own kernel, its input gradient SyncBatchNorm's, its weight and bias
    gradients the shard's own; running statistics not updated (`batch_statistics` did)."""
    norms = batch_norms(model)
    for name, module in norms.items():
        module.forward = (lambda x, module=module, figures=sums[name]:  # type: ignore[method-assign]
                          _SyncedNorm.apply(x, module.weight, module.bias, figures, module.eps))
    try:
        yield
    finally:
        for module in norms.values():
            del module.forward


class _SyncedNorm(torch.autograd.Function):
    """SyncBatchNorm's forward and backward on one rank, its all-reduced figures given."""

    @staticmethod
    def forward(ctx: object, x: torch.Tensor, weight: torch.Tensor | None, bias: torch.Tensor | None,
                sums: NormSums, eps: float) -> torch.Tensor:
        ctx.save_for_backward(x, weight)  # type: ignore[attr-defined]
        ctx.sums, ctx.eps = sums, eps  # type: ignore[attr-defined]
        return nn.functional.batch_norm(x, sums.mean, sums.var, weight, bias, False, 0.0, eps)

    @staticmethod
    def backward(ctx: object, dy: torch.Tensor) -> tuple[torch.Tensor | None, ...]:
        x, weight = ctx.saved_tensors  # type: ignore[attr-defined]
        sums: NormSums = ctx.sums  # type: ignore[attr-defined]
        dims, shape = _channel_dims(x), [1, -1] + [1] * (x.dim() - 2)
        invstd = torch.rsqrt(sums.var + ctx.eps).reshape(shape)  # type: ignore[attr-defined]
        xmu, wide = _wide(x) - sums.mean.reshape(shape), _wide(dy)
        assert sums.sum_dy is not None and sums.sum_dy_xmu is not None, "batch_statistics ran no backward"
        mean_dy = (sums.sum_dy / sums.count).reshape(shape)
        mean_dy_xmu = (sums.sum_dy_xmu / sums.count).reshape(shape)
        scale = invstd if weight is None else invstd * _wide(weight).reshape(shape)
        dx = ((wide - mean_dy - xmu * invstd * invstd * mean_dy_xmu) * scale).to(x.dtype)
        dweight = (wide * xmu * invstd).sum(dims) if weight is not None else None
        dbias = wide.sum(dims) if ctx.needs_input_grad[2] else None  # type: ignore[attr-defined]
        return dx, dweight, dbias, None, None
