"""NumPy dtypes of rducc's element types, and constants as arrays.

Element types map to NumPy dtypes one to one (`element_dtype`): f64, f32,
f16, bf16 (`ml_dtypes.bfloat16`), f8E4M3FN and f8E5M2 (`ml_dtypes.float8_e4m3fn`,
`float8_e5m2`), i64, i32, i16, i8, ui8 (NumPy uint8) and i1 (NumPy bool).
Signless integers are stored as signed NumPy integers; ops that read them as
unsigned (`divui`, `cmpi ult`, `extui`, ...) reinterpret
the bits (`UINT_DTYPES`). ui8 is unsigned already, so those ops read it as
it is. f16/bf16/f8 arithmetic runs in f32 (`compute_dtype`); sums, products and
scans accumulate wider (`accumulator`). Rounding to f8E4M3FN saturates at
+-448 (infinities too), as torch's conversions do (`rounded`).
"""

from __future__ import annotations

import math as pymath
from typing import cast

import ml_dtypes
import numpy as np
from xdsl.dialects.builtin import (
    BFloat16Type,
    DenseIntOrFPElementsAttr,
    Float8E4M3FNType,
    Float8E5M2Type,
    Float16Type,
    Float32Type,
    Float64Type,
    FloatAttr,
    IntegerAttr,
    IntegerType,
    Signedness,
    TensorType,
)
from xdsl.ir import Attribute

from rducc.errors import RduccError

BF16 = np.dtype(ml_dtypes.bfloat16)
F16 = np.dtype(np.float16)
F32 = np.dtype(np.float32)
F64 = np.dtype(np.float64)
BOOL = np.dtype(np.bool_)
I64 = np.dtype(np.int64)
U8 = np.dtype(np.uint8)
F8E4M3FN = np.dtype(ml_dtypes.float8_e4m3fn)
F8E5M2 = np.dtype(ml_dtypes.float8_e5m2)
HALF_DTYPES = frozenset((F16, BF16, F8E4M3FN, F8E5M2))
"""The floats narrower than f32 (f16, bf16 and the f8s), whose arithmetic runs in
f32 (a set: `dtype in HALF_DTYPES` hashes once instead of comparing each)."""

F8E4M3FN_MAX = float(ml_dtypes.finfo(ml_dtypes.float8_e4m3fn).max)
"""448: torch rounds anything larger (inf too) to it, keeping the sign."""

_INT_DTYPES: dict[int, np.dtype] = {8: np.dtype(np.int8), 16: np.dtype(np.int16), 32: np.dtype(np.int32), 64: I64}
UINT_DTYPES: dict[np.dtype, np.dtype] = {
    np.dtype(np.int8): np.dtype(np.uint8),
    np.dtype(np.int16): np.dtype(np.uint16),
    np.dtype(np.int32): np.dtype(np.uint32),
    I64: np.dtype(np.uint64),
    U8: U8,
}



def element_dtype(element_type: Attribute) -> np.dtype:
    """The NumPy dtype of one of rducc's element types."""
    if isinstance(element_type, Float64Type):
        return F64
    if isinstance(element_type, Float32Type):
        return F32
    if isinstance(element_type, Float16Type):
        return F16
    if isinstance(element_type, BFloat16Type):
        return BF16
    if isinstance(element_type, Float8E4M3FNType):
        return F8E4M3FN
    if isinstance(element_type, Float8E5M2Type):
        return F8E5M2
    if isinstance(element_type, IntegerType):
        width = element_type.width.data
        if element_type.signedness.data == Signedness.UNSIGNED:
            if width == 8:
                return U8
        elif width == 1:
            return BOOL
        elif width in _INT_DTYPES:
            return _INT_DTYPES[width]
    raise RduccError(
        f"element type {element_type} has no NumPy equivalent "
        "(supported: f64, f32, f16, bf16, f8E4M3FN, f8E5M2, i64, i32, i16, i8, ui8, i1)"
    )


def tensor_signature(tensor_type: Attribute) -> tuple[tuple[int, ...], np.dtype]:
    """(shape, dtype) of a static tensor type."""
    assert isinstance(tensor_type, TensorType), tensor_type
    return tuple(tensor_type.get_shape()), element_dtype(tensor_type.element_type)


def saturated(values: np.ndarray | np.generic, dtype: np.dtype) -> np.ndarray | np.generic:
    """`values` (wider floats) ready to round to `dtype` as torch rounds: clipped to
    +-448 for f8E4M3FN, which has no infinity (NumPy would give NaN; NaN stays NaN),
    else as they are (no copy)."""
    if dtype == F8E4M3FN:
        return np.clip(values, -F8E4M3FN_MAX, F8E4M3FN_MAX)
    return values


def rounded(values: np.ndarray | np.generic, dtype: np.dtype) -> np.ndarray:
    """`values` rounded to `dtype` (to nearest, ties to even; `saturated` first)."""
    return np.asarray(saturated(values, dtype)).astype(dtype)


def compute_dtype(dtype: np.dtype) -> np.dtype:
    """Where arithmetic on `dtype` runs: f32 for f16/bf16/f8, else the type itself."""
    return F32 if dtype in HALF_DTYPES else dtype


def accumulator(dtype: np.dtype) -> np.dtype:
    """Accumulator of sums, products and scans: f16/bf16/f8 -> f32, f32 -> f64."""
    if dtype in HALF_DTYPES:
        return F32
    if dtype == F32:
        return F64
    return dtype


def dense_to_array(attr: DenseIntOrFPElementsAttr) -> np.ndarray:
    """The value of a dense tensor attribute as an array of its element type."""
    shape, dtype = tensor_signature(attr.type)
    values = attr.get_values()
    if dtype.kind == "f" or dtype in HALF_DTYPES:
        flat = np.array(values, dtype=F64)
    else:
        flat = np.array(values, dtype=I64)
        flat = flat != 0 if dtype == BOOL else flat
    count = pymath.prod(shape)
    if flat.size == 1 and count != 1:
        flat = np.repeat(flat, count)
    return flat.astype(dtype).reshape(shape)


def scalar_constant(attr: Attribute, dtype: np.dtype) -> np.generic:
    """A NumPy scalar of `dtype` holding an integer or float attribute's value."""
    if isinstance(attr, FloatAttr):
        return dtype.type(attr.value.data)
    if isinstance(attr, IntegerAttr):
        value = attr.value.data
        if dtype == BOOL:
            return np.bool_(value != 0)
        return cast(np.generic, np.array(value, dtype=I64).astype(dtype)[()])
    raise RduccError(f"cannot use {attr} as a scalar constant")



__all__ = [
    "BF16", "BOOL", "F8E4M3FN", "F8E4M3FN_MAX", "F8E5M2", "F16", "F32", "F64", "HALF_DTYPES", "I64", "U8",
    "UINT_DTYPES", "accumulator", "compute_dtype", "dense_to_array", "element_dtype", "rounded", "saturated",
    "scalar_constant", "tensor_signature",
]


_COMPLEX_OF_REAL: dict[np.dtype, np.dtype] = {
    np.dtype(np.float32): np.dtype(np.complex64),
    np.dtype(np.float64): np.dtype(np.complex128),
}


def complex_dtype_of(real: np.dtype) -> np.dtype:
    """The complex dtype whose parts are `real` (float32: complex64, float64: complex128)."""
    return _COMPLEX_OF_REAL[np.dtype(real)]


def complex_to_pair(array: np.ndarray) -> np.ndarray:
    """A complex array as its real pair (trailing dim 2: real, imaginary), `view_as_real`'s layout."""
    contiguous = np.ascontiguousarray(array)  # at least 1-d: a rank-0 array's pair is [2]
    return contiguous.view(contiguous.real.dtype).reshape(*np.shape(array), 2)


def pair_to_complex(array: np.ndarray) -> np.ndarray:
    """A real pair (trailing dim 2) as the complex array it holds, `view_as_complex`'s reading."""
    complex_dtype = _COMPLEX_OF_REAL.get(array.dtype)
    if complex_dtype is None or array.ndim == 0 or array.shape[-1] != 2:
        raise RduccError(f"a complex output's pair must be float32 or float64 with a trailing dim of 2, "
                         f"not {array.dtype} {list(array.shape)}")
    return np.ascontiguousarray(array).view(complex_dtype)[..., 0]
