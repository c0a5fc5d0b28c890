"""Data movement on torch's kernels: gathers and copies aside that ran in NumPy.

NumPy's fancy indexing and `np.copyto` run on the calling thread alone;
eager's `index` / `index_select` and copies run torch's loops, split over
its pool at more than one thread. Two of the runtime's moves now take
torch's:

- a gather by one index array (`rdu.gather`, `tier.gather`: Swin-T's
  relative-position tables, its rolls that are no rotated range, Mixtral's
  expert rows) writes the destination's bytes with torch's `index_select`
  (`index_select`, from `TORCH_GATHER_ELEMENTS`): its row loop is 1.3-3x
  NumPy's at one thread, and no temporary is copied after it;
- an attention chain's operands copied aside (`copy`) go through
  `elementwise.assign` (torch's `copy_` over its pool from
  `TORCH_COPY_ELEMENTS` elements at more than one thread).

Elements move as their bits (an integer view of the same size), so the
result is NumPy's bit for bit. `as_numpy()` gives the NumPy forms back: the
reference `test_runtime_threaded_moves.py` and `bench/runtime_round27_ab.py`
compare against. Host tuning, not a chip figure.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import numpy as np
import torch

from rducc.runtime.elementwise import as_torch, assign

TORCH_GATHER_ELEMENTS = 1 << 15
"""Elements of a gather's result from which it runs as torch's `index_select`:
torch's parallel grain, as for copies (`elementwise.TORCH_COPY_ELEMENTS`).
Below it the Python around the call (about 5 us) is most of what torch's
loop saves, and inside a model no difference showed (Swin-T's 28,812-element
table gathers); above it torch's loop was 1.3-3x NumPy's indexing at one
thread (rows of 768 floats: 512 rows 63 against 95 us, 2,048 rows 231
against 974 us, caches warm; 409 against 472 and 1,090 against 1,546 us
cold). Host tuning, not a chip figure."""

_BITS = {1: np.uint8, 2: np.int16, 4: np.int32, 8: np.int64}
"""The integer type of each element size: a gather moves an element's bits."""

_NUMPY = [False]
"""Whether the moves run NumPy's forms (`as_numpy`)."""


@contextlib.contextmanager
def as_numpy() -> Iterator[None]:
    """Inside, gathers index with NumPy and copies aside are `np.copyto`:
    the forms before torch's (a test's or an A/B's reference)."""
    saved = _NUMPY[0]
    _NUMPY[0] = True
    try:
        yield
    finally:
        _NUMPY[0] = saved


def index_select(source: np.ndarray, index: np.ndarray, dim: int, out: np.ndarray, wraps: bool = False) -> bool:
    """Write `source`'s entries at `index` (integers, range-checked by the
    caller; negatives count from the end where `wraps`) along `dim` into
    `out` (the gather's result: `source.shape[:dim] + index.shape +
    source.shape[dim + 1:]`, of `source`'s dtype) with torch's
    `index_select`. False, with nothing written, where it does not apply
    (inside `as_numpy`, a result under `TORCH_GATHER_ELEMENTS`, another
    shape or dtype, an element size without an integer type, `out` not
    C-contiguous and writable, or sharing memory with `source`, negative
    strides)."""
    if _NUMPY[0] or out.size < TORCH_GATHER_ELEMENTS or index.dtype.kind not in "iu":
        return False
    bits = _BITS.get(source.dtype.itemsize)
    if bits is None or out.dtype != source.dtype or not 0 <= dim < source.ndim \
            or out.shape != source.shape[:dim] + index.shape + source.shape[dim + 1:]:
        return False
    if not (out.flags.c_contiguous and out.flags.writeable) or min(source.strides) < 0 \
            or np.may_share_memory(out, source):
        return False
    flat = index if index.ndim == 1 and index.dtype == np.int64 else index.reshape(-1).astype(np.int64)
    if wraps and flat.size and flat.min() < 0:  # an index from the end
        flat = np.where(flat < 0, flat + source.shape[dim], flat)
    rows = out if index.ndim == 1 else out.reshape(source.shape[:dim] + (flat.size,) + source.shape[dim + 1:])
    torch.index_select(as_torch(source.view(bits)), dim, as_torch(flat), out=torch.from_numpy(rows.view(bits)))
    return True


def copy(out: np.ndarray, x: np.ndarray) -> None:
    """`np.copyto(out, x)` of one dtype: `elementwise.assign` (torch's copy
    over its pool where that applies), NumPy's inside `as_numpy`."""
    if _NUMPY[0]:
        np.copyto(out, x)
    else:
        assign(out, x)


__all__ = ["TORCH_GATHER_ELEMENTS", "as_numpy", "copy", "index_select"]
