"""A custom op of data-dependent result size that rducc has no static form for (its
implementation, by numpy, cannot be traced; its fake kernel makes a new dynamic size):
the test models' example of a size rducc refuses (test_data_sizes.py, test_host_ops.py)."""

from __future__ import annotations

import torch


@torch.library.custom_op("rducc_test::positives", mutates_args=())
def positives(x: torch.Tensor) -> torch.Tensor:
    """The positive elements, by numpy."""
    return torch.from_numpy(x.numpy()[x.numpy() > 0].copy())


@positives.register_fake
def _positives_fake(x: torch.Tensor) -> torch.Tensor:
    return x.new_empty(torch.library.get_ctx().new_dynamic_size())
