"""Shape and element-type helpers shared by rducc's dialects."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from math import prod
from typing import TypeGuard

from typing_extensions import TypeVar
from xdsl.dialects.builtin import (
    BFloat16Type,
    Float8E4M3FNType,
    Float8E5M2Type,
    Float16Type,
    Float32Type,
    Float64Type,
    IntegerType,
    Signedness,
    TensorType,
)
from xdsl.ir import Attribute, SSAValue
from xdsl.irdl import AttrConstraint, IntConstraint, VerificationContext
from xdsl.utils.exceptions import VerifyException

SUPPORTED_ELEMENT_TYPES = "f64, f32, f16, bf16, f8E4M3FN, f8E5M2, i64, i32, i16, i8, ui8, i1"


FloatElementType = Float64Type | Float32Type | Float16Type | BFloat16Type | Float8E4M3FNType | Float8E5M2Type
"""The floating-point element types rducc supports (the float8 ones as torch's
float8_e4m3fn and float8_e5m2: stored in one byte, computed in f32)."""


def is_float(element_type: Attribute) -> TypeGuard[FloatElementType]:
    """True for the floating-point element types rducc supports."""
    return isinstance(element_type, FloatElementType)


def is_float8(element_type: Attribute) -> TypeGuard[Float8E4M3FNType | Float8E5M2Type]:
    """True for f8E4M3FN and f8E5M2."""
    return isinstance(element_type, Float8E4M3FNType | Float8E5M2Type)


def is_integer(element_type: Attribute) -> TypeGuard[IntegerType]:
    """True for integer element types (i1 and ui8 included)."""
    return isinstance(element_type, IntegerType)


def is_unsigned(element_type: Attribute) -> TypeGuard[IntegerType]:
    """True for unsigned integer types (ui8, torch.uint8: values 0..255)."""
    return isinstance(element_type, IntegerType) and element_type.signedness.data == Signedness.UNSIGNED


def is_bool(element_type: Attribute) -> TypeGuard[IntegerType]:
    """True for i1, rducc's boolean."""
    return isinstance(element_type, IntegerType) and element_type.width.data == 1


def byte_width(element_type: Attribute) -> int:
    """Bytes one element occupies in memory (i1 is stored as one byte)."""
    if isinstance(element_type, Float64Type):
        return 8
    if isinstance(element_type, Float32Type):
        return 4
    if isinstance(element_type, Float16Type | BFloat16Type):
        return 2
    if is_float8(element_type):
        return 1
    if isinstance(element_type, IntegerType):
        return max(1, element_type.width.data // 8)
    raise VerifyException(
        f"unsupported element type {element_type}; "
        f"supported: {SUPPORTED_ELEMENT_TYPES}"
    )


def verify_element_type(element_type: Attribute, what: str) -> None:
    """Raise if the element type is not one rducc can compute with."""
    if is_float(element_type):
        return
    if (
        isinstance(element_type, IntegerType)
        and element_type.signedness.data == Signedness.SIGNLESS
        and element_type.width.data in (1, 8, 16, 32, 64)
    ):
        return
    if is_unsigned(element_type) and element_type.width.data == 8:
        return
    raise VerifyException(
        f"{what} has unsupported element type {element_type}; "
        f"supported: {SUPPORTED_ELEMENT_TYPES}"
    )


def shape_of(tensor_type: Attribute) -> tuple[int, ...]:
    """The static shape of a tensor type."""
    assert isinstance(tensor_type, TensorType)
    return tuple(tensor_type.get_shape())


def element_of(tensor_type: Attribute) -> Attribute:
    """The element type of a tensor type."""
    assert isinstance(tensor_type, TensorType)
    return tensor_type.element_type


def num_elements(shape: Sequence[int]) -> int:
    """Number of elements of a static shape (1 for rank 0)."""
    return prod(shape)


def value_bytes(kind: Attribute | SSAValue) -> int:
    """Bytes of a tensor or buffer (a type, or a value of that type): elements x
    `byte_width`. 0 for anything without a shape (a scalar, an index, a token)."""
    if isinstance(kind, SSAValue):
        kind = kind.type
    get_shape = getattr(kind, "get_shape", None)
    element_type = getattr(kind, "element_type", None)
    if get_shape is None or element_type is None:
        return 0
    return num_elements(get_shape()) * byte_width(element_type)


def verify_static(tensor_type: Attribute, what: str) -> None:
    """Raise if a tensor type has a dynamic dimension."""
    if any(d < 0 for d in shape_of(tensor_type)):
        raise VerifyException(f"{what} must have a static shape, got {tensor_type}")


@dataclass(frozen=True)
class StaticTensorConstraint(AttrConstraint[TensorType]):
    """IRDL constraint: a tensor type with a static shape and an element type
    rducc computes with (`verify_element_type`). Operand and result defs of the
    `rdu` ops use it (`STATIC_TENSOR`), so their verifiers need not check it."""

    def verify(self, attr: Attribute, constraint_context: VerificationContext) -> None:
        if not isinstance(attr, TensorType):
            raise VerifyException(f"{attr} should be of base attribute {TensorType.name}")
        verify_static(attr, "an rdu tensor")
        verify_element_type(attr.element_type, f"{attr}")

    def get_bases(self) -> set[type[Attribute]] | None:
        return {TensorType}

    def mapping_type_vars(
        self, type_var_mapping: Mapping[TypeVar, AttrConstraint | IntConstraint]
    ) -> StaticTensorConstraint:
        return self


STATIC_TENSOR = StaticTensorConstraint()
"""The constraint of every tensor operand and result of the `rdu` ops."""


def broadcast_shapes(shapes: Sequence[Sequence[int]]) -> tuple[int, ...] | None:
    """NumPy/PyTorch broadcast of shapes, or None when they do not broadcast."""
    rank = max((len(s) for s in shapes), default=0)
    result: list[int] = []
    for axis in range(rank):
        sizes = {s[len(s) - rank + axis] for s in shapes if len(s) - rank + axis >= 0}
        sizes.discard(1)
        if len(sizes) > 1:
            return None
        result.append(sizes.pop() if sizes else 1)
    return tuple(result)


def broadcasts_to(shape: Sequence[int], target: Sequence[int]) -> bool:
    """True when `shape` broadcasts to exactly `target`."""
    if len(shape) > len(target):
        return False
    offset = len(target) - len(shape)
    return all(s in (1, target[offset + i]) for i, s in enumerate(shape))


def normalize_dim(dim: int, rank: int, what: str) -> int:
    """Turn a possibly negative dimension index into 0..rank-1, or raise."""
    if not -max(rank, 1) <= dim < max(rank, 1):
        raise VerifyException(f"{what} {dim} is out of range for rank {rank}")
    return dim % max(rank, 1)


def reshape_groups(
    source: Sequence[int], result: Sequence[int]
) -> list[tuple[list[int], list[int]]]:
    """The dims of a reshape in minimal groups of equal size: the one pairing of a
    reshape's dims that tiling and sharding both read.

    Size-1 dims belong to no group (they carry no data, so nothing can be split
    along them); a group of one dim on each side is a dim the reshape keeps
    whole. Raises ValueError when the sizes do not multiply to the same total.
    """
    src = [d for d, n in enumerate(source) if n != 1]
    res = [d for d, n in enumerate(result) if n != 1]
    groups: list[tuple[list[int], list[int]]] = []
    i = j = 0
    while i < len(src) and j < len(res):
        group_src, group_res = [src[i]], [res[j]]
        size_src, size_res = source[src[i]], result[res[j]]
        i, j = i + 1, j + 1
        while size_src != size_res:
            if size_src < size_res and i < len(src):
                group_src.append(src[i])
                size_src, i = size_src * source[src[i]], i + 1
            elif size_res < size_src and j < len(res):
                group_res.append(res[j])
                size_res, j = size_res * result[res[j]], j + 1
            else:
                raise ValueError(f"reshape {list(source)} -> {list(result)} changes the number of elements")
        groups.append((group_src, group_res))
    return groups


def window_span(window: int, dilation: int) -> int:
    """Input elements one dilated window covers."""
    return dilation * (window - 1) + 1


def window_output_size(size: int, window: int, stride: int, pad: int, dilation: int, ceil_mode: bool) -> int:
    """Output length of a sliding window over `size` elements padded by `pad` each
    side (PyTorch's formula, ceil_mode included): the one home of the formula that
    conv and pool verifiers and kernels read; 0 or less when no window fits."""
    numerator = size + 2 * pad - window_span(window, dilation)
    out = (-(-numerator // stride) if ceil_mode else numerator // stride) + 1
    if ceil_mode and (out - 1) * stride >= size + pad:
        out -= 1
    return out
