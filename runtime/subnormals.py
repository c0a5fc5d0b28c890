"""Subnormal floats read and written as zero inside the runtime's slow spots.

x86 cores take a microcode assist (about 100 cycles) on every operation whose
operand or result is subnormal (a float32 below 2**-126 = 1.18e-38): a BLAS
product or a NumPy `exp` over such values runs 5-80x slower than over normal
ones. Real models make them: a softmax whose masked scores sit 100 below the
row's largest (Swin's shifted windows add -100) gives probabilities of 4e-44.
Measured at one thread on Swin-T's attention: the `probabilities @ V` product
4.8 ms instead of 0.06 ms, the `exp(x - max) / sum` map 1.3 ms instead of
0.27 ms; eager's fused attention never forms them.

`subnormals_as_zero()` sets the calling thread's DAZ and FTZ flags (through
`torch.set_flush_denormal`) for its body and restores them after; the runtime
uses it around products (`kernels.gemm`), around maps that compute an
exponential (`map_body.compile_map`) and around fused softmaxes
(`kernels.softmax`: Swin-T's masked one 4-6x faster), the ops where they arise. A value it
reads or writes as zero differs from eager's by less than 1.2e-38, and a
product's entry by less than K * 1.2e-38 * max|other operand|: nothing a
float32 result can hold beside a normal value. Worker threads of torch's
pool (more than one thread) keep their own flags: a softmax's probabilities
that its pool threads wrote kept their subnormals, and the product reading
them ran its pool threads' share 50-80x slower (Swin-T at two threads: 17 ms
more CPU a call on the pool's thread, the calling thread waiting for it;
bench/runtime_threads_ab.py). So where
the calling thread flushes, `zero_pool_subnormals` zeroes those (one pass on
the pool): the result is the one-thread result, bit for bit.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import numpy as np
import torch

_SUBNORMAL = np.float32(1e-44)
"""A subnormal float32: its product with 1 is 0 when the calling thread
already flushes subnormals."""


def flushing() -> bool:
    """Whether the calling thread already reads and writes subnormals as zero."""
    return bool(_SUBNORMAL * np.float32(1.0) == 0)


@contextlib.contextmanager
def subnormals_as_zero() -> Iterator[None]:
    """The calling thread treats subnormal operands and results as zero inside,
    and is as it was after (module docstring)."""
    if flushing() or not torch.set_flush_denormal(True):
        yield
        return
    try:
        yield
    finally:
        torch.set_flush_denormal(False)


_LARGEST_SUBNORMAL = {np.dtype(np.float32): float(np.nextafter(np.finfo(np.float32).tiny, np.float32(0))),
                      np.dtype(np.float64): float(np.nextafter(np.finfo(np.float64).tiny, 0.0))}
"""The largest subnormal of each float type: `x <= it` is zero or subnormal for x >= 0."""


def zero_pool_subnormals(values: np.ndarray) -> None:
    """Zero the subnormals of `values`, an f32/f64 array of results that are
    not negative (a softmax's probabilities; NaN stays), in place, when
    torch's pool has more than one thread and the calling thread flushes
    (inside `subnormals_as_zero` where the CPU has the flags): its own share
    is zero already, the pool threads' not (module docstring). One
    `threshold_` (`x <= largest subnormal ? 0 : x`) on the pool, run with the
    calling thread's flags off (they would read the limit itself as 0)."""
    if torch.get_num_threads() > 1 and values.dtype in _LARGEST_SUBNORMAL and flushing():
        torch.set_flush_denormal(False)
        try:
            torch.ops.aten.threshold_(torch.from_numpy(values), _LARGEST_SUBNORMAL[values.dtype], 0.0)
        finally:
            torch.set_flush_denormal(True)


__all__ = ["flushing", "subnormals_as_zero", "zero_pool_subnormals"]
