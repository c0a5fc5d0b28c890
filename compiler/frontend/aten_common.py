"""Facts about FX nodes and SSA values that every ATen converter reads: shapes,
element types, dims, used outputs and the result type export recorded.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
from xdsl.dialects.builtin import TensorType
from xdsl.ir import Attribute, SSAValue

from rducc.frontend.converter_api import fake_value, positional
from rducc.frontend.types import tensor_type_of

INT64_MAX = 2**63 - 1


def shape_of(value: SSAValue) -> tuple[int, ...]:
    """The static shape of a tensor value."""
    assert isinstance(value.type, TensorType)
    return tuple(value.type.get_shape())


def element_of(value: SSAValue) -> Attribute:
    """The element type of a tensor value."""
    assert isinstance(value.type, TensorType)
    return value.type.element_type


def normalize_dims(dims: Any, rank: int) -> list[int]:
    """Sorted non-negative dims; None or [] means every dim (PyTorch's convention)."""
    if rank == 0:
        return []  # a rank-0 tensor has no dims: dim 0 and -1 name the tensor itself
    if dims is None or (isinstance(dims, Sequence) and len(dims) == 0):
        return list(range(rank))
    if isinstance(dims, int):
        dims = [dims]
    return sorted({d % max(rank, 1) for d in dims})


def used_outputs(node: torch.fx.Node) -> set[int]:
    """Which elements of a multi-result node's tuple are read by getitem users."""
    return {int(positional(user)[1]) for user in node.users}


def tensor_of(element_type: Attribute, shape: Sequence[int]) -> TensorType:
    """A tensor type of `element_type` and `shape`."""
    return TensorType(element_type, list(shape))


def slice_bounds(size: int, start: int | None, end: int | None) -> tuple[int, int]:
    """torch's [start, end) clamped to a dim of `size` (negatives count from the end)."""
    start = 0 if start is None else start
    end = size if end is None or end >= INT64_MAX else end
    start = start + size if start < 0 else start
    end = end + size if end < 0 else end
    start = min(max(start, 0), size)
    return start, min(max(end, start), size)


def fake_type(fake: torch.Tensor) -> TensorType:
    """The tensor type of a FakeTensor export recorded."""
    return tensor_type_of(fake)


def result_type(node: torch.fx.Node) -> TensorType:
    """The node's (single) result type, from export's fake tensor."""
    return tensor_type_of(fake_value(node), what=f"result of '{node.name}'")


__all__ = [
    "INT64_MAX",
    "shape_of",
    "element_of",
    "normalize_dims",
    "used_outputs",
    "tensor_of",
    "slice_bounds",
    "fake_type",
    "result_type",
]
