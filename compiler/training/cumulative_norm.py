"""Batch norm keeping a cumulative average (`momentum=None`) in a training step.

torch's `_BatchNorm.forward` reads its factor `1 / num_batches_tracked` as a
Python number each call, which an exported program would freeze at its first
value. While the step is exported, each such module runs `cumulative_forward`
instead: the same batch statistics and output, the running statistics moved
by the factor computed from the `num_batches_tracked` buffer as a tensor, so
every step of the program takes the factor of its own step.
"""

from __future__ import annotations

import types
from collections.abc import Iterator
from contextlib import contextmanager

import torch
from torch.nn.modules.batchnorm import _BatchNorm


def keeps_cumulative_average(module: torch.nn.Module) -> bool:
    """A batch norm whose running statistics are a cumulative average in this mode."""
    return (isinstance(module, _BatchNorm) and module.training and module.track_running_stats
            and module.momentum is None)


def cumulative_forward(self: _BatchNorm, input: torch.Tensor) -> torch.Tensor:
    """`_BatchNorm.forward` in training mode with momentum=None, its factor a tensor."""
    self._check_input_dim(input)
    assert self.num_batches_tracked is not None and self.running_mean is not None and self.running_var is not None
    self.num_batches_tracked.add_(1)
    factor = 1.0 / self.num_batches_tracked.to(self.running_mean.dtype)
    reduced = [dim for dim in range(input.dim()) if dim != 1]
    with torch.no_grad():
        mean = input.mean(reduced)
        var = input.var(reduced, correction=1)  # running_var is unbiased, as torch's kernel keeps it
        self.running_mean.copy_(self.running_mean * (1 - factor) + mean * factor)
        self.running_var.copy_(self.running_var * (1 - factor) + var * factor)
    return torch.nn.functional.batch_norm(input, None, None, self.weight, self.bias, True, 0.0, self.eps)


@contextmanager
def cumulative_averages_traced(model: torch.nn.Module) -> Iterator[None]:
    """Within the block, every batch norm of `model` keeping a cumulative average runs `cumulative_forward`."""
    patched = [module for module in model.modules() if keeps_cumulative_average(module)]
    for module in patched:
        module.forward = types.MethodType(cumulative_forward, module)
    try:
        yield
    finally:
        for module in patched:
            del module.forward
