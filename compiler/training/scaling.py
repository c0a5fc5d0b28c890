"""Dynamic loss scaling in the compiled step, as `torch.amp.GradScaler` does it.

The loss is multiplied by the scale (a program state value, `grad_scale`)
before the backward. After it, the step checks every gradient for inf and nan
(`found_inf`) and unscales them (times 1/scale, as GradScaler's
`unscale_`); the optimizer's update of each parameter and its state is kept
only without `found_inf` (GradScaler skips `optimizer.step()`); the scale is
then updated in place as `torch._amp_update_scale_` does: halved (times
`backoff_factor`) on an overflow, grown (times `growth_factor`) after
`growth_interval` steps in a row without one. The step returns the unscaled
loss.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

from rducc.errors import RduccError

SCALE = "grad_scale"
"""The global holding the current scale (a float32 scalar): the loss wrapper's buffer."""
GROWTH_TRACKER = "amp.growth_tracker"
"""The global counting the steps since the last overflow or growth (float32 scalar)."""


@dataclass(frozen=True)
class DynamicScale:
    """GradScaler's settings (its defaults)."""

    init_scale: float = 2.0**16
    growth_factor: float = 2.0
    backoff_factor: float = 0.5
    growth_interval: int = 2000

    def check(self) -> DynamicScale:
        if not (0 < self.init_scale < float("inf")):
            raise RduccError(f"dynamic loss scaling: init_scale {self.init_scale}: give a positive finite number")
        if not self.growth_factor > 1.0:
            raise RduccError(f"dynamic loss scaling: growth_factor {self.growth_factor} must be > 1")
        if not 0.0 < self.backoff_factor < 1.0:
            raise RduccError(f"dynamic loss scaling: backoff_factor {self.backoff_factor} must be in (0, 1)")
        if self.growth_interval < 1:
            raise RduccError(f"dynamic loss scaling: growth_interval {self.growth_interval} must be at least 1")
        return self


def dynamic_scale_of(loss_scale: Any) -> DynamicScale | None:
    """The dynamic scaling `loss_scale` asks for: "dynamic" (GradScaler's
    defaults), a `torch.amp.GradScaler` (its settings and current scale), else None."""
    if isinstance(loss_scale, str):
        if loss_scale != "dynamic":
            raise RduccError(f"loss_scale '{loss_scale}': give a number (static scaling) or 'dynamic'")
        return DynamicScale().check()
    if isinstance(loss_scale, torch.amp.GradScaler):
        if not loss_scale.is_enabled():
            return None
        scale = loss_scale._scale
        init = float(scale.item()) if scale is not None else float(loss_scale._init_scale)
        return DynamicScale(init, float(loss_scale._growth_factor), float(loss_scale._backoff_factor),
                            int(loss_scale._growth_interval)).check()
    return None


class ScaleUpdate(nn.Module):
    """Buffers `scale` and `tracker`; `forward(loss, *gradients)` returns the
    unscaled loss, 1/scale and found_inf, and updates the scale in place
    (the module docstring)."""

    def __init__(self, settings: DynamicScale):
        super().__init__()
        self.settings = settings
        self.register_buffer("scale", torch.ones(()))
        self.register_buffer("tracker", torch.zeros(()))

    def forward(self, loss: torch.Tensor, *gradients: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        settings = self.settings
        scale, tracker = self.get_buffer("scale"), self.get_buffer("tracker")
        inverse = scale.reciprocal()
        found_inf = torch.stack([torch.isfinite(g).logical_not().any() for g in gradients]).any()
        successful = tracker + 1
        grow = successful >= settings.growth_interval
        grown = scale * settings.growth_factor
        grown = torch.where(torch.isfinite(grown), grown, scale)
        new_scale = torch.where(found_inf, scale * settings.backoff_factor, torch.where(grow, grown, scale))
        new_tracker = torch.where(found_inf | grow, torch.zeros_like(tracker), successful)
        scale.copy_(new_scale)
        tracker.copy_(new_tracker)
        return loss * inverse, inverse, found_inf


def scale_update_program(settings: DynamicScale, loss: torch.Tensor,
                         gradients: list[torch.Tensor]) -> torch.export.ExportedProgram:
    """`ScaleUpdate` exported for these gradients' shapes and dtypes."""
    examples = [torch.zeros_like(g, memory_format=torch.contiguous_format) for g in gradients]
    return torch.export.export(ScaleUpdate(settings), (torch.zeros_like(loss), *examples), strict=False)


__all__ = ["GROWTH_TRACKER", "SCALE", "DynamicScale", "ScaleUpdate", "dynamic_scale_of", "scale_update_program"]
