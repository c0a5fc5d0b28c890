"""rducc's decompositions of ops whose decomposition in torch computes something else than torch's
kernel (eager), or cannot be traced (a C++ composite that branches on a tensor's value), used
instead of torch's wherever a trace reaches them (`corrected_kernels`: torch.export, the training
joint graph) and in every decomposition table rducc builds (`torch_corrections`).

- `multilabel_margin_loss_forward`: torch's decomposition (2.13; also its Autograd kernel under
  tracing) sums the positions after a row's first -1 as target 0's margins.
- `cov`: torch's C++ composite checks `norm_factor <= 0` on the tensor's value (torch.export
  refused torch.cov: "aten.equal.default").
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import torch

from rducc.registration import registering

Decomposition = Callable[..., Any]

TORCH_CORRECTIONS: dict[str, Decomposition] = {}
"""ATen overload name to rducc's decomposition of it, in place of torch's."""


def corrects_torch(*targets: str) -> Callable[[Decomposition], Decomposition]:
    """Register `function` as the decomposition of each of `targets`, in place of torch's."""
    return registering(TORCH_CORRECTIONS, targets, lambda function: function)


def _overload(name: str) -> torch._ops.OpOverload | None:
    namespace, op, variant = name.split(".")
    return getattr(getattr(getattr(torch.ops, namespace), op, None), variant, None)


def torch_corrections() -> dict[Any, Decomposition]:
    """The corrected decompositions by op overload (for a table built from torch's own)."""
    return {op: function for name, function in TORCH_CORRECTIONS.items() if (op := _overload(name)) is not None}


@contextmanager
def corrected_kernels() -> Iterator[None]:
    """For the duration, each corrected op runs rducc's decomposition where a trace reaches torch's:
    at the Autograd key where torch decomposes it there (`py_impl`, what a trace with gradients on
    runs whatever the decomposition table says), at the CompositeImplicitAutograd key where torch's
    composite is C++ (a trace follows it). torch's kernels are restored after."""
    from torch._C import DispatchKey

    replaced: dict[tuple[torch._ops.OpOverload, DispatchKey], Any] = {}
    for op, function in torch_corrections().items():
        keys = [DispatchKey.Autograd] if DispatchKey.Autograd in op.py_kernels else []
        if torch._C._dispatch_has_kernel_for_dispatch_key(op.name(), "CompositeImplicitAutograd"):
            keys.append(DispatchKey.CompositeImplicitAutograd)
        for key in keys:
            replaced[op, key] = op.py_kernels.get(key)
            op.py_kernels[key] = function
            op._dispatch_cache.clear()
    try:
        yield
    finally:
        for (op, key), kernel in replaced.items():
            if kernel is None:
                op.py_kernels.pop(key, None)
            else:
                op.py_kernels[key] = kernel
            op._dispatch_cache.clear()


@corrects_torch("aten.multilabel_margin_loss_forward.default")
def multilabel_margin_loss_forward(input: torch.Tensor, target: torch.Tensor,
                                   reduction: int) -> tuple[torch.Tensor, torch.Tensor]:
    """sum over the sample's targets k (its labels before the first -1) and the classes j that are
    no target of max(0, 1 - (x[y_k] - x[j])) / C, as torch's kernel. torch's decomposition (2.13)
    also sums the positions after the first -1, each as target 0's margin: it adds C - 1 terms per
    padding position whenever a row lists fewer than C targets."""
    rows, labels = torch.atleast_2d(input), torch.atleast_2d(target)
    classes = rows.shape[1]
    index = torch.arange(classes, device=target.device)
    end = torch.amin(torch.where(labels == -1, index, classes), dim=-1, keepdim=True)
    listed = index < end                                                           # (n, k): a target position
    picked = torch.gather(rows, -1, torch.where(listed, labels, 0))                 # (n, k): x[y_k]
    is_target = (index == torch.where(listed, labels, -1).unsqueeze(-1)).any(1)     # (n, j)
    margins = (1.0 - picked.unsqueeze(-1) + rows.unsqueeze(1)).clamp_min(0) / classes  # (n, k, j)
    kept = listed.unsqueeze(-1) & ~is_target.unsqueeze(1)
    per_row = torch.where(kept, margins, 0).sum((1, 2))
    loss = per_row.mean() if reduction == 1 else per_row.sum() if reduction == 2 else per_row.reshape(
        target.shape[:-1])
    return loss, is_target.to(input.dtype).reshape(target.shape)


@corrects_torch("aten.cov.default")
def cov(input: torch.Tensor, correction: int = 1, fweights: torch.Tensor | None = None,
        aweights: torch.Tensor | None = None) -> torch.Tensor:
    """torch.cov's formula (rows are variables, columns observations; frequency and analytic weights)
    without its C++ composite's check of the degrees of freedom (`norm_factor <= 0`, a branch on a
    tensor's value torch.export cannot trace); a factor at or below 0 is 0, as torch's makes it."""
    x = input if input.dim() == 2 else input.reshape(1, -1)
    weights = fweights if aweights is None else aweights if fweights is None else fweights * aweights
    if weights is None:
        centred = x - x.mean(1, keepdim=True)
        return (centred @ centred.transpose(0, 1).conj() / max(x.shape[1] - correction, 0)).squeeze()
    weights = weights.to(x.dtype)
    total = weights.sum()
    centred = x - (x * weights).sum(1, keepdim=True) / total
    if correction == 0:
        factor = total
    elif aweights is None:
        factor = total - correction
    else:
        factor = total - correction * (weights * aweights).sum() / total
    return ((centred * weights) @ centred.transpose(0, 1).conj() / factor.clamp_min(0)).squeeze()
