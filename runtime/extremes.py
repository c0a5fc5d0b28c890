"""A map body's float maximum or minimum against a constant (a ReLU, a clamp)
as torch's CPU kernel, where that kernel gives NumPy's bits.

A body's `arith.maximumf` / `arith.minimumf` is NumPy's `np.maximum` /
`np.minimum` (NaN propagated: the NaN operand itself; on a tie of two zeros,
the second operand). Against a scalar NumPy takes a slow loop: a ReLU of
802,816 float32 elements (ResNet-50's 1x256x56x56) costs 296 us of the
calling thread against torch's `threshold` 39 us at one thread (array
against array: 113 us), and at more threads it stays on the calling thread
while the map's arithmetic around it runs split over torch's pool
(`elementwise.torch_arithmetic`), so each ReLU also moves the array between
the cores' caches twice. torch's kernels here select one of their operands
(no rounding), so where they pick the same operand as NumPy they give its
bits:

- `np.maximum(x, k)` is `x <= k ? k : x`: `torch.threshold(x, k, k)`;
- `np.maximum(k, x)` and `np.minimum(k, x)` keep `x` on a tie and a NaN
  `x`: `torch.clamp_min(x, k)` and `torch.clamp_max(x, k)`;
- `np.minimum(x, k)` is `torch.clamp_max(x, k)` but where `x` and `k` are
  zeros of opposite signs (a zero `k` is left to NumPy).

Whether this CPU's kernels pick as listed is checked once per kind, dtype
and constant on a probe (`agrees`: ties of both zeros, NaNs with payloads,
infinities, subnormals, in the vector loop and its tail); where they do not,
the body keeps NumPy's ufunc. f32 and f64 only (f16/bf16 bodies compute in
f32 and round, `map_body._float_op`). In a run at more than one thread the
pool's threads read subnormals as zero (`subnormals.pool_flushing`), as for
the body's arithmetic there: a subnormal element of their share compares as
zero, which the arithmetic before it on the same share had already written
as zero.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import numpy as np
import torch

from rducc.runtime.dtypes import F32, F64
from rducc.runtime.elementwise import as_torch

TORCH_EXTREME_ELEMENTS = 1 << 13
"""Elements from which a maximum or minimum against a constant runs as
torch's kernel (`on_torch`): at one thread NumPy's scalar loop is faster
below (1K elements 1.7 against 3.1 us, 4K 2.8 against 3.4; 16K 7.3 against
4.3, 64K 25.3 against 8.4: torch's call costs about 2 us more); torch splits
it over its pool from its grain, 32K. Host tuning, not a chip figure."""

Kernel = Callable[[torch.Tensor, float, torch.Tensor | None], torch.Tensor]


def _threshold(x: torch.Tensor, k: float, out: torch.Tensor | None) -> torch.Tensor:
    return torch.threshold(x, k, k) if out is None else torch.threshold(x, k, k, out=out)


def _clamp_min(x: torch.Tensor, k: float, out: torch.Tensor | None) -> torch.Tensor:
    return torch.clamp_min(x, k) if out is None else torch.clamp_min(x, k, out=out)


def _clamp_max(x: torch.Tensor, k: float, out: torch.Tensor | None) -> torch.Tensor:
    return torch.clamp_max(x, k) if out is None else torch.clamp_max(x, k, out=out)


KINDS: dict[tuple[str, bool], tuple[np.ufunc, Kernel]] = {
    ("maximum", False): (np.maximum, _threshold),
    ("maximum", True): (np.maximum, _clamp_min),
    ("minimum", True): (np.minimum, _clamp_max),
    ("minimum", False): (np.minimum, _clamp_max),
}
"""(extreme, constant first) -> NumPy's ufunc the body computes and the torch
kernel of the array `x` and the constant `k` that selects as it does."""


def _numpy(ufunc: np.ufunc, constant_first: bool, x: Any, k: np.generic, out: np.ndarray | None) -> Any:
    operands = (k, x) if constant_first else (x, k)
    return ufunc(*operands) if out is None else ufunc(*operands, out=out)


def _probe(dtype: np.dtype, k: np.generic) -> np.ndarray:
    """Values where a maximum or minimum may pick either operand: zeros of both
    signs, the constant and its neighbours, NaNs (quiet, signalling, negative,
    with payloads), infinities, subnormals; 1,037 elements (vector loop and tail)."""
    if dtype == F32:
        nan_bits = np.array([0x7FC00000, 0x7FC02345, 0xFFC00000, 0x7F800001, 0xFF800123], dtype=np.uint32)
    else:
        nan_bits = np.array([0x7FF8000000000000, 0x7FF8000000002345, 0xFFF8000000000000, 0x7FF0000000000001,
                             0xFFF0000000000123], dtype=np.uint64)
    nans = nan_bits.view(dtype)
    tiny = np.finfo(dtype).smallest_subnormal
    bound = float(k)
    special = np.array([0.0, -0.0, np.inf, -np.inf, 1.0, -1.0, tiny, -tiny, bound, -bound,
                        np.nextafter(k, dtype.type(np.inf)), np.nextafter(k, dtype.type(-np.inf))], dtype=dtype)
    values = np.concatenate([special, nans])
    return np.resize(values, 1037)


@functools.lru_cache(maxsize=256)
def agrees(extreme: str, constant_first: bool, dtype: np.dtype, k_bits: int) -> bool:
    """Whether torch's kernel of `(extreme, constant_first)` (`KINDS`) gives
    NumPy's bits for every probe value against the constant of these bits."""
    k = np.array([k_bits], dtype=np.uint32 if dtype == F32 else np.uint64).view(dtype)[0]
    if np.isnan(k):
        return False  # torch's clamps and threshold do not propagate a NaN bound as NumPy does
    ufunc, kernel = KINDS[(extreme, constant_first)]
    x = _probe(dtype, k)
    expected = _numpy(ufunc, constant_first, x, k, None)
    with torch.inference_mode():
        got = kernel(torch.from_numpy(x), float(k), None).numpy()
    view = np.uint32 if dtype == F32 else np.uint64
    return bool(np.array_equal(expected.view(view), got.view(view)))


def constant_bits(k: np.generic) -> int:
    """The constant's bits as an integer (`agrees`' cache key: +0.0 and -0.0 differ)."""
    return int(np.asarray(k).view(np.uint32 if k.dtype == F32 else np.uint64))


def usable(extreme: str, constant_first: bool, k: np.generic) -> bool:
    """Whether a body's `extreme` of an array and the constant `k` may run as
    torch's kernel (`against_constant`): f32/f64, and the kernel agrees."""
    dtype = np.dtype(k.dtype)
    return dtype in (F32, F64) and agrees(extreme, constant_first, dtype, constant_bits(k))


def _on_torch(x: Any, k: np.generic, out: np.ndarray | None) -> bool:
    """Whether this call runs on torch: an array of the constant's dtype, of
    `TORCH_EXTREME_ELEMENTS` or more, and `out` (if any) of its shape, writable,
    forwards, and either `x` itself or apart from it."""
    if not isinstance(x, np.ndarray) or x.dtype != k.dtype or x.size < TORCH_EXTREME_ELEMENTS \
            or min(x.strides, default=0) < 0:
        return False
    if out is None:
        return True
    return out.shape == x.shape and out.dtype == x.dtype and out.flags.writeable \
        and min(out.strides, default=0) >= 0 and (out is x or not np.may_share_memory(out, x))


def against_constant(extreme: str, constant_first: bool) -> Callable[..., Any]:
    """NumPy's `extreme` of an array and a constant (in the body's operand order),
    run as torch's kernel (`KINDS`) when `_on_torch` says so, else the ufunc.
    Emit it only where `usable` holds for the constant."""
    ufunc, kernel = KINDS[(extreme, constant_first)]

    def run(a: Any, b: Any, out: np.ndarray | None = None) -> Any:
        x, k = (b, a) if constant_first else (a, b)
        if not _on_torch(x, k, out):
            return _numpy(ufunc, constant_first, x, k, out)
        result = kernel(as_torch(x), float(k), None if out is None else torch.from_numpy(out))
        return out if out is not None else result.numpy()

    return run


__all__ = ["KINDS", "TORCH_EXTREME_ELEMENTS", "against_constant", "agrees", "usable"]
