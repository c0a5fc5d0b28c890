"""The runtime's threads: torch's count, in torch's one pool, for work big enough.

With more than one torch thread the runtime's heavy kernels run on torch's
CPU kernels and its OpenMP pool: convolution and pooling always (oneDNN
decides how to split them), f32/f64 products (`kernels.gemm`) when they have
at least `PARALLEL_MACS` multiply-adds, and a map body's float add, subtract,
multiply and divide over large arrays (`elementwise.torch_arithmetic`). A smaller product runs on the calling
thread in numpy's BLAS: there a team's fork and join costs more than the
second thread saves, and numpy's call costs about half of torch's
(`torch.from_numpy` on each operand, MKL's small GEMM). Measured on the
2-core development machine, best of N, one BLAS thread against torch at two:
0.3M multiply-adds 6.2 us vs 10.5 us, 1.0M 23.4 vs 20.4, 2.1M 43.2 vs 27.8,
16.8M 323 vs 177 (bench/notes.md). At one torch thread, too, a product of
at least `PARALLEL_MACS` runs on torch's BLAS: measured the same way at one
thread each, torch / numpy time was 0.80x at 1M multiply-adds, 0.85-0.90x on
ViT-B/16's and GPT-2's linear layers (116M-465M) and 0.89x on GPT-2's
vocabulary projection (4.9G).

numpy's BLAS itself runs at one thread whenever the runtime runs
(`single_threaded_numpy_blas`, called at every run): a second pool (OpenBLAS's
workers spin after each call) beside torch's OpenMP team took the cores that
team waited for, and two-thread runs were 10-20x slower (bench/notes.md). So
`torch.set_num_threads(n)` (or `OMP_NUM_THREADS=n` before start) sets the
runtime's threads as it sets eager's. numpy's OpenBLAS is reached through its
`openblas_set_num_threads` entry (what threadpoolctl calls); a numpy built on
another BLAS keeps its own setting.
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable
from pathlib import Path

import numpy as np

PARALLEL_MACS = 1 << 20
"""Multiply-adds from which a product runs on torch's BLAS and pool (below
it: numpy's BLAS on the calling thread). Host tuning,
not a chip figure: the crossover measured on the development machine is
0.5M-1M (module docstring)."""


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
_blas_pinned: list[bool] = [False]


def single_threaded_numpy_blas() -> None:
    """Set numpy's BLAS to one thread (once a process; cheap to call again)."""
    if not _blas_pinned[0]:
        if _SET_BLAS_THREADS is not None:
            _SET_BLAS_THREADS(1)
        _blas_pinned[0] = True


__all__ = ["PARALLEL_MACS", "single_threaded_numpy_blas"]
