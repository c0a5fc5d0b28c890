"""The runtime's threads: as many as torch's, in torch's pool.

With more than one thread the runtime's heavy kernels run on torch's CPU
kernels and its OpenMP pool: f32/f64 matmul (`kernels.gemm`; f16/bf16
products run in f32 there too), convolution, pooling. One pool doing the
work matters: OpenBLAS's workers spin after a call while torch's OpenMP team
waits for the same cores (at two threads, Program ran 10-20x eager before
matmul moved to torch; bench/notes.md). At one thread there is no pool, and
products take numpy's BLAS, the cheaper call on small ones. `follow_torch()`,
called at every run, sets numpy's BLAS threads to `torch.get_num_threads()`,
so that `torch.set_num_threads(n)` (or `OMP_NUM_THREADS=n` before start)
sets both, as it sets eager's. numpy's OpenBLAS is reached through its
`openblas_set_num_threads` entry (what threadpoolctl calls); a numpy built
on another BLAS keeps its own setting.
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable
from pathlib import Path

import numpy as np
import torch


def _openblas_setter() -> Callable[[int], None] | None:
    """`openblas_set_num_threads` of the OpenBLAS numpy loaded, if any."""
    libraries = Path(np.__file__).parent.parent / "numpy.libs"
    for path in sorted(libraries.glob("*openblas*.so*")) if libraries.is_dir() else []:
        try:
            library = ctypes.CDLL(str(path))
        except OSError:
            continue
        for name in ("scipy_openblas_set_num_threads64_", "scipy_openblas_set_num_threads",
                     "openblas_set_num_threads64_", "openblas_set_num_threads"):
            setter = getattr(library, name, None)
            if setter is not None:
                setter.argtypes = [ctypes.c_int]
                return lambda threads: setter(threads)
    return None


_SET_BLAS_THREADS = _openblas_setter()
_blas_threads: list[int] = [0]
"""The thread count last given to BLAS (0: never set)."""


def follow_torch() -> int:
    """Set numpy's BLAS threads to torch's (when they changed); returns the count."""
    threads = torch.get_num_threads()
    if threads != _blas_threads[0]:
        if _SET_BLAS_THREADS is not None:
            _SET_BLAS_THREADS(threads)
        _blas_threads[0] = threads
    return threads


__all__ = ["follow_torch"]
