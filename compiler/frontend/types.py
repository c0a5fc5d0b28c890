"""Mapping between torch dtypes/tensors and rducc's tensor types."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

import torch
from xdsl.dialects.builtin import (
    Float8E4M3FNType,
    Float8E5M2Type,
    IntegerType,
    Signedness,
    TensorType,
    bf16,
    f16,
    f32,
    f64,
    i1,
    i8,
    i16,
    i32,
    i64,
)
from xdsl.ir import Attribute

from rducc.errors import RduccError

_ELEMENT_TYPES: dict[torch.dtype, Attribute] = {
    torch.float64: f64,
    torch.float32: f32,
    torch.float16: f16,
    torch.bfloat16: bf16,
    torch.float8_e4m3fn: Float8E4M3FNType(),
    torch.float8_e5m2: Float8E5M2Type(),
    torch.int64: i64,
    torch.int32: i32,
    torch.int16: i16,
    torch.int8: i8,
    torch.uint8: IntegerType(8, Signedness.UNSIGNED),
    torch.bool: i1,
}

_DTYPES: dict[Attribute, torch.dtype] = {v: k for k, v in _ELEMENT_TYPES.items()}


_F64_DEMOTED: ContextVar[bool] = ContextVar("rducc_f64_demoted", default=False)


@contextmanager
def f64_demoted() -> Iterator[None]:
    """Inside, float64 maps to f32 (the `--f64 demote` policy's import)."""
    token = _F64_DEMOTED.set(True)
    try:
        yield
    finally:
        _F64_DEMOTED.reset(token)


def demoting_f64() -> bool:
    """Whether float64 maps to f32 here (inside `f64_demoted`)."""
    return _F64_DEMOTED.get()


def element_type_of(dtype: torch.dtype, what: str = "value") -> Attribute:
    """rducc's element type for a torch dtype, or a clear error."""
    if dtype == torch.float64 and _F64_DEMOTED.get():
        return f32
    try:
        return _ELEMENT_TYPES[dtype]
    except KeyError:
        names = ", ".join(str(d).removeprefix("torch.") for d in _ELEMENT_TYPES)
        wider_unsigned = (
            "; of the unsigned types rducc has uint8 only (torch itself has few ops for the wider ones)"
            if dtype in (torch.uint16, torch.uint32, torch.uint64)
            else ""
        )
        raise RduccError(
            f"{what} has dtype {str(dtype).removeprefix('torch.')}, which rducc does not "
            f"support (supported: {names}){wider_unsigned}"
        ) from None


def dtype_of(element_type: Attribute) -> torch.dtype:
    """The torch dtype of one of rducc's element types."""
    return _DTYPES[element_type]


def tensor_type_of(value: Any, what: str = "value") -> TensorType:
    """The static tensor type of a (fake or meta) tensor."""
    if not isinstance(value, torch.Tensor):
        raise RduccError(f"{what} is a {type(value).__name__}, expected a tensor")
    return TensorType(element_type_of(value.dtype, what), [int(d) for d in value.shape])
