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
pool (more than one thread) keep their own flags.
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


__all__ = ["flushing", "subnormals_as_zero"]
