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
float32 result can hold beside a normal value.

The flags are per thread, and torch's OpenMP pool threads keep the ones they
were made with: at more than one thread the pool's share of a softmax, an
exp map or a product wrote and read subnormals where the calling thread's
share did not, and ran 50-80x slower (Swin-T at two threads: 17 ms more CPU
a call on the pool's thread, the calling thread waiting for it). So a run at
more than one thread is inside `pool_flushing()`: one OpenMP parallel region
(`GOMP_parallel`, the entry libgomp and Intel's libiomp5 both export, of the
runtime torch loaded) gives every thread of the calling thread's team the
calling thread's floating-point environment with the flags set (C's
`fesetenv` as the region's body: no Python on the pool), and one more at
the end gives them the calling thread's own (so eager's ops after a run
find the flags as the calling thread has them: off unless the caller set
them); 2-10 us a region on the development machine. Every op on the pool then flushes: a product, an
exp map, a softmax give the one-thread result bit for bit; an op the
calling thread runs without the flags (a convolution, a map's arithmetic
without exponential) may read or write a subnormal as zero on the pool's
share where one thread keeps it (eager keeps every subnormal, on every
thread): less than 1.2e-38 a value, as above.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import re
import threading
from collections.abc import Callable, Iterator

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


def _openmp_parallel() -> Callable[[int, int, int, int], None] | None:
    """`GOMP_parallel(body, data, threads, flags)` of the OpenMP runtime this
    process loaded (torch's: libgomp or libiomp5), None where there is none."""
    try:
        with open("/proc/self/maps") as maps:
            paths = sorted({line.split()[-1] for line in maps if re.search(r"/lib(gomp|iomp5)[^/]*\.so", line)})
    except OSError:
        return None
    for path in paths:
        entry = getattr(ctypes.CDLL(path), "GOMP_parallel", None)
        if entry is not None:
            entry.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_uint, ctypes.c_uint]
            entry.restype = None
            return entry
    return None


def _libm() -> ctypes.CDLL | None:
    """The C math library (`fegetenv`, `fesetenv`), None where it is not found."""
    name = ctypes.util.find_library("m")
    return ctypes.CDLL(name) if name else None


_FENV_BYTES = 64
"""Room for C's `fenv_t` (32 bytes on x86-64, 8 on AArch64)."""


class _PoolFlags(threading.local):
    """Per calling thread: how many `pool_flushing` bodies it is inside."""

    depth = 0


_PARALLEL = _openmp_parallel()
_LIBM = _libm()
_FESETENV = ctypes.cast(_LIBM.fesetenv, ctypes.c_void_p).value if _LIBM is not None else None
_INSIDE = _PoolFlags()
_CPU_HAS_FLAGS = torch.set_flush_denormal(flushing())
"""Whether this CPU has the flags (torch answers while leaving them as they are)."""


def pool_flags_settable() -> bool:
    """Whether `pool_flushing` can set the pool threads' flags here (a CPU
    with them, an OpenMP runtime with `GOMP_parallel`, C's `fesetenv`)."""
    return _CPU_HAS_FLAGS and _PARALLEL is not None and _FESETENV is not None


def _environment(flushing_: bool) -> ctypes.Array[ctypes.c_char]:
    """The calling thread's floating-point environment with the flags set or
    cleared as `flushing_` says; the calling thread's own is left as it was."""
    assert _LIBM is not None
    was = flushing()
    if was != flushing_:
        torch.set_flush_denormal(flushing_)
    environment = ctypes.create_string_buffer(_FENV_BYTES)
    _LIBM.fegetenv(environment)
    if was != flushing_:
        torch.set_flush_denormal(was)
    return environment


def _give_pool(environment: ctypes.Array[ctypes.c_char], threads: int) -> None:
    """Every thread of the calling thread's team of `threads` takes
    `environment` (one parallel region running `fesetenv`); the calling
    thread, a member of the team, then takes back its own."""
    assert _PARALLEL is not None and _LIBM is not None and _FESETENV is not None
    own = _environment(flushing())
    _PARALLEL(_FESETENV, ctypes.addressof(environment), threads, 0)
    _LIBM.fesetenv(own)


@contextlib.contextmanager
def pool_flushing() -> Iterator[None]:
    """Inside, at more than one torch thread, torch's pool threads read and
    write subnormals as zero in every op; after, they have the calling
    thread's flags (module docstring). The calling thread's own flags are not
    changed. Nested bodies set nothing."""
    threads = torch.get_num_threads()
    if threads < 2 or _INSIDE.depth or not pool_flags_settable():
        yield
        return
    _INSIDE.depth += 1
    try:
        _give_pool(_environment(True), threads)
        yield
    finally:
        _give_pool(_environment(flushing()), threads)
        _INSIDE.depth -= 1


__all__ = ["flushing", "pool_flags_settable", "pool_flushing", "subnormals_as_zero"]
