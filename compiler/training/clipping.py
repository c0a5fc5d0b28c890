"""Gradient clipping in the compiled step, as `torch.nn.utils.clip_grad_norm_`
runs between `loss.backward()` and `optimizer.step()`.

The step's gradients of every trained parameter (unscaled first under a
static loss scale, as `GradScaler.unscale_` precedes clipping) are scaled by
`min(1, max_norm / (total_norm + 1e-6))`, where total_norm is the norm of the
per-gradient norms (`norm_type`, 2 by default; `inf` the largest magnitude),
torch's own arithmetic (`torch.nn.utils.get_total_norm` and
`clip_grads_with_norm_`), traced as one program; the optimizer's updates then
read the clipped gradients.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch
from torch import nn

from rducc.errors import RduccError


class ClipError(RduccError):
    """Gradient clipping asked for in a form rducc does not compile."""


def check_clip(max_grad_norm: float | None, norm_type: float) -> None:
    """One clear error for a max norm or norm type clip_grad_norm_ would not take here."""
    if max_grad_norm is None:
        return
    if not isinstance(max_grad_norm, float | int) or not 0 < max_grad_norm < math.inf:
        raise ClipError(f"max_grad_norm {max_grad_norm}: give a positive finite number")
    if not isinstance(norm_type, float | int) or not (norm_type > 0):
        raise ClipError(f"grad_norm_type {norm_type}: give a positive number or inf")


class GradientClip(nn.Module):
    """`forward(*gradients)` returns the gradients, each times `unscale`, clipped together to `max_norm`."""

    def __init__(self, max_norm: float, norm_type: float = 2.0, unscale: float = 1.0):
        super().__init__()
        self.max_norm = float(max_norm)
        self.norm_type = float(norm_type)
        self.unscale = unscale

    def forward(self, *gradients: torch.Tensor) -> tuple[torch.Tensor, ...]:
        if self.unscale != 1.0:
            gradients = tuple(gradient * self.unscale for gradient in gradients)
        norms = [torch.linalg.vector_norm(gradient, self.norm_type) for gradient in gradients]
        total = torch.linalg.vector_norm(torch.stack(norms), self.norm_type)
        coefficient = torch.clamp(self.max_norm / (total + 1e-6), max=1.0)
        return tuple(gradient * coefficient for gradient in gradients)


def clip_program(max_norm: float, norm_type: float, examples: Sequence[torch.Tensor],
                 unscale: float = 1.0) -> torch.export.ExportedProgram:
    """The clipping of gradients shaped as `examples` (`GradientClip`), exported."""
    inputs = tuple(torch.zeros_like(e, memory_format=torch.contiguous_format) for e in examples)
    return torch.export.export(GradientClip(max_norm, norm_type, unscale), inputs, strict=False)
