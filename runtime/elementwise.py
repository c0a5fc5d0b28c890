"""Vectorized scalar semantics that NumPy lacks, for compiled `rdu.map` bodies.

arith's integer division and remainder (signed, floor, ceil, unsigned; x / 0
gives 0), unsigned comparisons and extremes by reinterpreting the bits, i1
read as signed (true is -1), integer powers, round half away from zero, and
erf (torch's). Every function takes and returns whole arrays.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import torch

from rducc.runtime.dtypes import F32, F64, UINT_DTYPES


def erf(x: Any) -> np.ndarray:
    """Vectorized error function: torch's own (what eager's erf and exact gelu
    compute), in f32 (f16/bf16 too, rounded once) or f64."""
    x = np.asarray(x)
    compute = F64 if x.dtype == F64 else F32
    source = np.asarray(x, dtype=compute, order="C")
    return torch.erf(torch.from_numpy(source)).numpy().astype(x.dtype, copy=False)


def round_half_away(x: Any) -> Any:
    """math.round: to nearest, ties away from zero."""
    whole = np.trunc(x)
    return np.where(np.abs(x - whole) >= 0.5, whole + np.sign(x), whole)


def unsigned(x: Any) -> np.ndarray:
    x = np.asarray(x)
    return x.view(UINT_DTYPES[x.dtype])


def signed(x: Any, dtype: np.dtype) -> np.ndarray:
    return np.asarray(x).view(dtype)


def divsi(a: Any, b: Any) -> Any:
    """Signed division truncating toward zero (x / 0 gives 0: arith leaves it undefined)."""
    a, b = np.asarray(a), np.asarray(b)
    safe = np.where(b == 0, np.ones_like(b), b)
    quotient = np.floor_divide(a, safe)
    remainder = a - quotient * safe
    fix = (remainder != 0) & ((a < 0) != (safe < 0))
    return np.where(b == 0, np.zeros_like(quotient), quotient + fix.astype(quotient.dtype))


def floordivsi(a: Any, b: Any) -> Any:
    a, b = np.asarray(a), np.asarray(b)
    safe = np.where(b == 0, np.ones_like(b), b)
    return np.where(b == 0, np.zeros_like(a), np.floor_divide(a, safe))


def ceildivsi(a: Any, b: Any) -> Any:
    a, b = np.asarray(a), np.asarray(b)
    safe = np.where(b == 0, np.ones_like(b), b)
    quotient = np.floor_divide(a, safe)
    bump = (a - quotient * safe != 0).astype(quotient.dtype)
    return np.where(b == 0, np.zeros_like(quotient), quotient + bump)


def remsi(a: Any, b: Any) -> Any:
    """Remainder with the sign of the dividend (C semantics)."""
    a, b = np.asarray(a), np.asarray(b)
    safe = np.where(b == 0, np.ones_like(b), b)
    return np.where(b == 0, np.zeros_like(a), np.fmod(a, safe))


def unsigned_division(kind: str) -> Callable[[Any, Any], Any]:
    """divui, remui, ceildivui: the bits read as unsigned (x / 0 gives 0)."""

    def apply(a: Any, b: Any) -> Any:
        a = np.asarray(a)
        ua, ub = unsigned(a), unsigned(np.asarray(b, dtype=a.dtype))
        safe = np.where(ub == 0, np.ones_like(ub), ub)
        quotient = np.floor_divide(ua, safe)
        if kind == "div":
            result = quotient
        elif kind == "rem":
            result = np.remainder(ua, safe)
        else:
            result = quotient + (np.remainder(ua, safe) != 0).astype(ua.dtype)
        result = np.where(ub == 0, np.zeros_like(result), result)
        return np.asarray(result).astype(ua.dtype).view(a.dtype)

    return apply


def unsigned_extreme(largest: bool) -> Callable[[Any, Any], Any]:
    """maxui, minui."""

    def apply(a: Any, b: Any) -> Any:
        a = np.asarray(a)
        ua, ub = unsigned(a), unsigned(np.asarray(b, dtype=a.dtype))
        return (np.maximum if largest else np.minimum)(ua, ub).view(a.dtype)

    return apply


def ipowi(a: Any, b: Any) -> Any:
    """Integer power; negative exponents give 0 except for bases 1 and -1."""
    a, b = np.asarray(a), np.asarray(b)
    positive = np.power(a, np.where(b < 0, np.zeros_like(b), b))
    one = np.ones_like(positive)
    odd = (b % 2) != 0
    negative = np.where(a == 1, one, np.where(a == -1, np.where(odd, -one, one), 0 * one))
    return np.where(b < 0, negative, positive).astype(a.dtype)


def i1_signed(x: Any) -> np.ndarray:
    """An i1 read as a signed number: true is -1."""
    return np.negative(np.asarray(x).astype(np.int8))



__all__ = [
    "ceildivsi", "divsi", "erf", "floordivsi", "i1_signed", "ipowi", "remsi", "round_half_away",
    "signed", "unsigned", "unsigned_division", "unsigned_extreme",
]
