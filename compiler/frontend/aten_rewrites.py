"""Ops torch keeps after `run_decompositions()` that rducc rewrites, exactly,
into ATen ops it converts (`rducc.frontend.decompositions` runs them as part
of torch's decomposition, so what they emit is decomposed in turn).

Random ops draw from `rand`/`randn` (what rducc's `rdu.random` gives): the
distribution is torch's, the numbers are not.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch

from rducc.frontend.decompositions import decomposes

aten = torch.ops.aten


# --------------------------------------------------------------------------
# Creation, counting, searching
# --------------------------------------------------------------------------


@decomposes("aten.empty_permuted.default")
def empty_permuted(size: Sequence[int], physical_layout: Sequence[int], **options: Any) -> torch.Tensor:
    """Uninitialized memory in any layout: values are unspecified, so an `empty` is one."""
    options = {key: value for key, value in options.items() if key in ("dtype", "device")}
    return torch.empty(list(size), **options)


def _linspace(low: torch.Tensor, high: torch.Tensor, steps: int) -> torch.Tensor:
    """torch.linspace's formula (from both ends, halfway each) with tensor ends."""
    index = torch.arange(steps, dtype=low.dtype, device=low.device)
    step = (high - low) / (steps - 1)
    halfway = steps // 2
    return torch.where(index < halfway, low + step * index, high - step * (steps - 1 - index))


@decomposes("aten.histc.default")
def histc(self: torch.Tensor, bins: int = 100, min: float = 0, max: float = 0) -> torch.Tensor:
    """Counts per equal-width bin over [min, max] (the data's range when min == max,
    widened by 1 each way if that is empty); values outside, and NaN, are not counted."""
    values = self.flatten()
    if min == max:
        low, high = values.min(), values.max()
        empty = low == high
        low, high = torch.where(empty, low - 1, low), torch.where(empty, high + 1, high)
    else:
        low = torch.full((), float(min), dtype=self.dtype, device=self.device)
        high = torch.full((), float(max), dtype=self.dtype, device=self.device)
    edges = _linspace(low, high, bins + 1)
    inside = (values >= low) & (values <= high)
    which = (values.unsqueeze(-1) >= edges[1:-1]).sum(-1)
    one_hot = (which.unsqueeze(-1) == torch.arange(bins, device=self.device)) & inside.unsqueeze(-1)
    return one_hot.to(self.dtype).sum(0)


@decomposes("aten.take.default")
def take(self: torch.Tensor, index: torch.Tensor) -> torch.Tensor:
    """The elements of the flattened input at `index` (a negative one counting from the end), in
    `index`'s shape. torch's own decomposition indexes with a 0-d index as a number read from the
    data; a gather here takes any index shape, an index out of range failing at run time as in eager."""
    flat = self.reshape(-1)
    where = index.reshape(-1)
    where = torch.where(where < 0, where + flat.numel(), where)
    return flat.index_select(0, where).reshape(index.shape)


@decomposes("aten._histogramdd_from_bin_tensors.default")
def histogramdd_from_bin_tensors(
    self: torch.Tensor, bins: Sequence[torch.Tensor], *, weight: torch.Tensor | None = None, density: bool = False,
) -> torch.Tensor:
    """`torch.histogramdd` with given edges: each row of the last dim's D coordinates counted (or its
    weight added) in the bin its coordinates fall in, edges[i] <= x < edges[i + 1] (the last bin closed
    on the right, as torch's kernel takes it); rows with a coordinate outside the edges, or NaN, are not
    counted. With `density`, the counts over their total and each dim's bin widths."""
    values = self.reshape(-1, self.shape[-1])
    sizes = [int(edges.numel()) - 1 for edges in bins]
    total = math.prod(sizes)
    flat = torch.zeros(values.shape[0], dtype=torch.int64, device=self.device)
    inside = torch.ones(values.shape[0], dtype=torch.bool, device=self.device)
    for dim, (edges, size) in enumerate(zip(bins, sizes)):
        x = values[:, dim]
        inside = inside & (x >= edges[0]) & (x <= edges[-1])
        place = (_insertion_points(edges, x, True, False) - 1).clamp(0, max(size - 1, 0))
        flat = flat * size + place
    flat = torch.where(inside, flat, total)  # outside: one spare bin, sliced off
    added = torch.ones(values.shape[0], dtype=self.dtype, device=self.device) if weight is None \
        else weight.reshape(-1).to(self.dtype)
    spare = torch.zeros(total + 1, dtype=self.dtype, device=self.device)
    hist = spare.index_put((flat,), added, accumulate=True)[:total].reshape(sizes)
    if not density:
        return hist
    hist = hist / hist.sum()
    for dim, edges in enumerate(bins):
        shape = [1] * len(sizes)
        shape[dim] = sizes[dim]
        hist = hist / (edges[1:] - edges[:-1]).reshape(shape)
    return hist


@decomposes("aten.repeat_interleave.Tensor")
def repeat_interleave(repeats: torch.Tensor, output_size: int | None = None) -> Any:
    """The index each output position repeats: how many cumulative counts are <= it.
    Needs `output_size` (else the length depends on the counts' values)."""
    if output_size is None:
        return NotImplemented
    ends = repeats.cumsum(0)
    positions = torch.arange(output_size, device=repeats.device, dtype=ends.dtype)
    return (ends.unsqueeze(0) <= positions.unsqueeze(1)).sum(1).to(repeats.dtype)


def experts_form(self_rank: int, mat2_rank: int, offs: object, bias: object, out_dtype: object,
                 dtype: torch.dtype) -> bool:
    """Whether an `aten._grouped_mm` is a mixture of experts' rows by expert (rank-2
    rows, a rank-3 expert table, offsets; no bias, the inputs' dtype out): the form
    the importer converts (`rdu.grouped_matmul`)."""
    return (self_rank, mat2_rank) == (2, 3) and offs is not None and bias is None and out_dtype in (None, dtype)


@decomposes("aten._grouped_mm.default")
def grouped_mm(self: torch.Tensor, mat2: torch.Tensor, offs: torch.Tensor | None = None,
               bias: torch.Tensor | None = None, out_dtype: torch.dtype | None = None) -> Any:
    """torch's grouped matmul in its other forms: a batch of products (rank 3 by rank
    3, no offsets) as `bmm`; products grouped along K (rank 2 by rank 2, offsets:
    a weight's gradient per expert) as one bmm of each group's masked columns. The
    experts' form is left to the importer (`experts_form`); others are refused there."""
    if experts_form(self.dim(), mat2.dim(), offs, bias, out_dtype, self.dtype):
        return NotImplemented
    dtype = out_dtype or self.dtype
    if self.dim() == 3 and mat2.dim() == 3 and offs is None:
        product = torch.bmm(self.to(dtype), mat2.to(dtype))
        return product if bias is None else product + bias.to(dtype).unsqueeze(1)
    if self.dim() == 2 and mat2.dim() == 2 and offs is not None and bias is None:
        column = torch.arange(self.shape[1], device=self.device, dtype=offs.dtype)
        ends = offs.unsqueeze(1)
        starts = torch.cat((torch.zeros_like(offs[:1]), offs[:-1])).unsqueeze(1)
        mask = ((column >= starts) & (column < ends)).to(dtype)  # [groups, K]
        rows = self.to(dtype).unsqueeze(0) * mask.unsqueeze(1)  # [groups, M, K]
        return torch.bmm(rows, mat2.to(dtype).unsqueeze(0).expand(offs.shape[0], *mat2.shape))
    return NotImplemented


def _insertion_points(boundaries: torch.Tensor, values: torch.Tensor, right: bool, out_int32: bool) -> torch.Tensor:
    """Where each value goes in the boundaries' innermost dim (1-D, or one row per leading index of the
    values), by torch's own binary search, step for step (n.bit_length() halvings): a boundary is passed
    unless it is >= the value (> with `right`). So a nan value lands past every boundary, and a sequence
    holding nan (torch.sort puts it last) or one out of order gives eager's index, not a count."""
    n = boundaries.shape[-1]
    start = torch.zeros(values.shape, dtype=torch.int64, device=values.device)
    end = torch.full(values.shape, n, dtype=torch.int64, device=values.device)
    for _ in range(n.bit_length()):
        mid = (start + end) // 2
        probe = mid.clamp(max=n - 1)
        at_mid = boundaries.gather(0, probe.reshape(-1)).reshape(probe.shape) if boundaries.dim() == 1 \
            else boundaries.gather(-1, probe)  # (not boundaries[probe]: a 0-d index would be read as a number)
        passed = ~(at_mid > values) if right else ~(at_mid >= values)
        searching = start < end
        start = torch.where(searching & passed, mid + 1, start)
        end = torch.where(searching & ~passed, mid, end)
    return start.to(torch.int32 if out_int32 else torch.int64)


@decomposes("aten.bucketize.Tensor")
def bucketize(
    self: torch.Tensor, boundaries: torch.Tensor, *, out_int32: bool = False, right: bool = False
) -> torch.Tensor:
    """The bucket of each value: boundaries[i-1] < x <= boundaries[i] (< and <= swapped with `right`)."""
    return _insertion_points(boundaries, self, right, out_int32)


@decomposes("aten.bucketize.Scalar")
def bucketize_scalar(
    self: Any, boundaries: torch.Tensor, *, out_int32: bool = False, right: bool = False
) -> torch.Tensor:
    value = torch.full((), self, dtype=boundaries.dtype, device=boundaries.device)
    return _insertion_points(boundaries, value, right, out_int32)


@decomposes("aten.searchsorted.Tensor")
def searchsorted(
    sorted_sequence: torch.Tensor, self: torch.Tensor, *, out_int32: bool = False, right: bool = False,
    side: str | None = None, sorter: torch.Tensor | None = None,
) -> torch.Tensor:
    """Insertion points into the innermost dim of a sorted sequence (1-D, or one row per value row)."""
    if sorter is not None:
        sorted_sequence = sorted_sequence.gather(-1, sorter)
    return _insertion_points(sorted_sequence, self, right or side == "right", out_int32)


# --------------------------------------------------------------------------
# Products
# --------------------------------------------------------------------------


def _unsqueezed(value: torch.Tensor, dims: Sequence[int]) -> torch.Tensor:
    for dim in sorted(dims):
        value = value.unsqueeze(dim)
    return value


@decomposes("aten._trilinear.default")
def trilinear(
    i1: torch.Tensor, i2: torch.Tensor, i3: torch.Tensor,
    expand1: Sequence[int], expand2: Sequence[int], expand3: Sequence[int],
    sumdim: Sequence[int], unroll_dim: int = 1,
) -> torch.Tensor:
    """The product of the three inputs, each unsqueezed at its expand dims, summed over sumdim."""
    product = _unsqueezed(i1, expand1) * _unsqueezed(i2, expand2) * _unsqueezed(i3, expand3)
    return product.sum(list(sumdim), dtype=product.dtype) if sumdim else product  # an int sum stays its dtype


@decomposes("aten._int_mm.default")
def int_mm(self: torch.Tensor, mat2: torch.Tensor) -> torch.Tensor:
    """int8 x int8 with int32 accumulation."""
    return torch.mm(self.to(torch.int32), mat2.to(torch.int32))


FLOAT8_DTYPES = (torch.float8_e4m3fn, torch.float8_e5m2)


@decomposes("aten._scaled_mm.default")
def scaled_mm(
    self: torch.Tensor, mat2: torch.Tensor, scale_a: torch.Tensor, scale_b: torch.Tensor,
    bias: torch.Tensor | None = None, scale_result: torch.Tensor | None = None,
    out_dtype: torch.dtype | None = None, use_fast_accum: bool = False,
) -> torch.Tensor:
    """torch's CPU `_scaled_mm`: each operand in f32 times its scale (a scalar, or
    per row of `self` and per column of `mat2`), one f32 matmul, plus the bias,
    divided by `scale_result` when `out_dtype` is given as a float8 type (as on
    CPU; the default result type, `self`'s, ignores it), rounded once to the
    result type. `use_fast_accum` changes nothing on CPU."""
    product = torch.mm(self.to(torch.float32) * scale_a, mat2.to(torch.float32) * scale_b)
    if bias is not None:
        product = product + bias
    if scale_result is not None and out_dtype in FLOAT8_DTYPES:
        product = product / scale_result
    return product.to(self.dtype if out_dtype is None else out_dtype)


def _swap_rows(matrix: torch.Tensor, first: int, second: torch.Tensor) -> torch.Tensor:
    """`matrix` with rows `first` and `second` (a per-batch index tensor) exchanged."""
    rows = torch.arange(matrix.shape[-2], device=matrix.device)
    second = second.unsqueeze(-1)
    order = torch.where(rows == first, second, torch.where(rows == second, first, rows))
    return torch.gather(matrix, -2, order.unsqueeze(-1).expand(matrix.shape))


def _lu(a: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(LU, pivots, the row swaps' sign) by LU with partial pivoting (LAPACK getrf's
    choice: the first largest |value| of the column), unrolled over the static size; an
    m x n matrix takes min(m, n) steps (L is m x min, U min x n, packed as getrf packs them)."""
    lu = a.clone()
    sign = torch.ones(a.shape[:-2], dtype=a.dtype, device=a.device)
    pivots = []
    rows = torch.arange(a.shape[-2], device=a.device)
    columns = torch.arange(a.shape[-1], device=a.device)
    below = rows.unsqueeze(-1)  # a row index, broadcast over the columns
    for k in range(min(a.shape[-2], a.shape[-1])):
        pivot = lu[..., :, k].abs().masked_fill(rows < k, -1.0).argmax(-1)
        pivots.append(pivot + 1)
        lu = _swap_rows(lu, k, pivot)
        sign = torch.where(pivot == k, sign, -sign)
        diagonal = lu[..., k, k]
        divisor = torch.where(diagonal == 0, torch.ones_like(diagonal), diagonal)  # as getrf: no division by 0
        factors = torch.where(rows > k, lu[..., :, k] / divisor.unsqueeze(-1), torch.zeros_like(lu[..., :, k]))
        update = factors.unsqueeze(-1) * lu[..., k, :].unsqueeze(-2)
        lu = torch.where(columns > k, lu - update, lu)
        lu = torch.where((columns == k) & (below > k), factors.unsqueeze(-1), lu)
    if not pivots:  # 0 x 0 matrices: no pivots, determinant 1
        return lu, torch.zeros(*a.shape[:-2], 0, dtype=torch.int32, device=a.device), sign
    return lu, torch.stack(pivots, -1).to(torch.int32), sign


def _factored_for_det(a: torch.Tensor) -> torch.Tensor:
    """The matrix whose LU `_linalg_det` and `_linalg_slogdet` return: torch factors
    a contiguous real `a` as `a.mT` (det(a^T) = det(a), and `a.mT` is what LAPACK
    reads in place), and their backward solves with that LU as `a^T`'s: an LU of
    `a` itself gives the wrong gradient."""
    return a.mT if a.is_contiguous() and not a.is_complex() else a


@decomposes("aten._linalg_det.default")
def linalg_det(a: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(det, LU, pivots): the swaps' sign times the product of U's diagonal (the LU
    and pivots torch's kernel returns: `_factored_for_det`)."""
    lu, pivots, sign = _lu(_factored_for_det(a))
    return sign * lu.diagonal(0, -2, -1).prod(-1), lu, pivots


@decomposes("aten._linalg_slogdet.default")
def linalg_slogdet(a: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """(sign, log|det|, LU, pivots), the LU and pivots as torch's kernel returns them."""
    lu, pivots, sign = _lu(_factored_for_det(a))
    diagonal = lu.diagonal(0, -2, -1)
    return sign * diagonal.sign().prod(-1), diagonal.abs().log().sum(-1), lu, pivots


def _info(a: torch.Tensor) -> torch.Tensor:
    """LAPACK's per-matrix status: 0 (rducc does not check for singular input)."""
    return torch.zeros(a.shape[:-2], dtype=torch.int32, device=a.device)


def _substitute(t: torch.Tensor, b: torch.Tensor, lower: bool, unit: bool) -> torch.Tensor:
    """x with t x = b for a triangular t ([..., n, n]) and b ([..., n, k]), one row at a
    time over the static n (forward for lower, backward for upper)."""
    n = t.shape[-1]
    if n == 0:
        return b.clone()
    solved: dict[int, torch.Tensor] = {}
    for i in range(n) if lower else reversed(range(n)):
        known = sorted(solved)
        row = b[..., i, :]
        if known:
            coefficients = t[..., i, known[0] : known[-1] + 1]
            row = row - (coefficients.unsqueeze(-1) * torch.stack([solved[j] for j in known], -2)).sum(-2)
        solved[i] = row if unit else row / t[..., i, i : i + 1]
    return torch.stack([solved[i] for i in range(n)], -2)


def _batched(a: torch.Tensor, b: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """`a` ([..., n, n]) and `b` ([..., n, k]) with their batch dims broadcast."""
    batch = torch.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    return a.expand(*batch, *a.shape[-2:]), b.expand(*batch, *b.shape[-2:])


def _lu_solve(lu: torch.Tensor, pivots: torch.Tensor, b: torch.Tensor, transposed: bool = False) -> torch.Tensor:
    """getrs: b's rows swapped as the pivots say, then L y = b, U x = y; `transposed`
    (A^T x = b): U^T y = b, L^T w = y, then the swaps undone in reverse order."""
    lu, b = _batched(lu, b)
    pivots = pivots.expand(*lu.shape[:-2], pivots.shape[-1]).to(torch.int64) - 1
    steps = range(pivots.shape[-1])
    if transposed:
        x = _substitute(lu.mT, b, lower=True, unit=False)
        x = _substitute(lu.mT, x, lower=False, unit=True)
        for k in reversed(steps):
            x = _swap_rows(x, k, pivots[..., k])
        return x
    for k in steps:
        b = _swap_rows(b, k, pivots[..., k])
    return _substitute(lu, _substitute(lu, b, lower=True, unit=True), lower=False, unit=False)


def _as_matrix(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Whether linalg.solve reads `b` as a batch of vectors (torch's rule)."""
    return b.dim() == 1 or (b.dim() == a.dim() - 1 and b.shape == a.shape[:-1])


@decomposes("aten.linalg_lu_factor_ex.default")
def linalg_lu_factor_ex(a: torch.Tensor, pivot: bool = True, check_errors: bool = False) -> Any:
    if not pivot:
        return NotImplemented
    lu, pivots, _ = _lu(a)
    return lu, pivots, _info(a)


@decomposes("aten.linalg_lu_solve.default")
def linalg_lu_solve(lu: torch.Tensor, pivots: torch.Tensor, b: torch.Tensor, left: bool = True,
                    adjoint: bool = False) -> Any:
    if left:
        return _lu_solve(lu, pivots, b, transposed=adjoint)
    return _lu_solve(lu, pivots, b.mT, transposed=not adjoint).mT  # x A = b: A^T x^T = b^T


@decomposes("aten._linalg_solve_ex.default")
def linalg_solve_ex(a: torch.Tensor, b: torch.Tensor, left: bool = True, check_errors: bool = False) -> Any:
    """(x, LU, pivots, info) with a x = b (x a = b when not `left`)."""
    if not left:
        return NotImplemented
    lu, pivots, _ = _lu(a)
    vector = _as_matrix(a, b)
    x = _lu_solve(lu, pivots, b.unsqueeze(-1) if vector else b)
    return (x.squeeze(-1) if vector else x), lu, pivots, _info(a)


@decomposes("aten.linalg_inv_ex.default")
def linalg_inv_ex(a: torch.Tensor, check_errors: bool = False) -> tuple[torch.Tensor, torch.Tensor]:
    lu, pivots, _ = _lu(a)
    eye = torch.eye(a.shape[-1], dtype=a.dtype, device=a.device).expand(a.shape)
    return _lu_solve(lu, pivots, eye), _info(a)


@decomposes("aten.linalg_solve_triangular.default")
def linalg_solve_triangular(a: torch.Tensor, b: torch.Tensor, *, upper: bool, left: bool = True,
                            unitriangular: bool = False) -> torch.Tensor:
    """a x = b (x a = b when not `left`: a^T x^T = b^T) for a triangular a."""
    if not left:
        return linalg_solve_triangular(a.mT, b.mT, upper=not upper, unitriangular=unitriangular).mT
    a, b = _batched(a, b)
    return _substitute(a, b, lower=not upper, unit=unitriangular)


@decomposes("aten.triangular_solve.default")
def triangular_solve(b: torch.Tensor, a: torch.Tensor, upper: bool = True, transpose: bool = False,
                     unitriangular: bool = False) -> tuple[torch.Tensor, torch.Tensor]:
    """(x, a) with op(a) x = b (the legacy form: b first, a's copy returned)."""
    t = a.mT if transpose else a
    x = linalg_solve_triangular(t, b, upper=upper != transpose, unitriangular=unitriangular)
    return x, a.clone()


def _cholesky(a: torch.Tensor) -> torch.Tensor:
    """The lower Cholesky factor (a = L L^H), column by column over the static size; of a complex
    matrix, its diagonal real (the square root of the real part, as LAPACK's)."""
    n = a.shape[-1]
    if n == 0:
        return a.clone()
    rows = torch.arange(n, device=a.device)
    columns: list[torch.Tensor] = []
    for j in range(n):
        rest = a[..., :, j]
        if columns:
            done = torch.stack(columns, -1)
            rest = rest - (done * done[..., j : j + 1, :].conj()).sum(-1)
        pivot = rest[..., j : j + 1]
        diagonal = pivot.real.sqrt().to(a.dtype) if a.is_complex() else pivot.sqrt()
        columns.append(torch.where(rows > j, rest / diagonal, torch.where(rows == j, diagonal, 0.0)))
    return torch.stack(columns, -1)


@decomposes("aten.linalg_cholesky_ex.default")
def linalg_cholesky_ex(a: torch.Tensor, upper: bool = False, check_errors: bool = False) -> Any:
    factor = _cholesky(a)
    return (factor.mH if upper else factor), _info(a)


@decomposes("aten.cholesky.default")
def cholesky(a: torch.Tensor, upper: bool = False) -> torch.Tensor:
    factor = _cholesky(a)
    return factor.mH if upper else factor


@decomposes("aten.cholesky_solve.default")
def cholesky_solve(b: torch.Tensor, factor: torch.Tensor, upper: bool = False) -> torch.Tensor:
    """x with (L L^H) x = b, from the factor L (or U = L^H with `upper`)."""
    lower = factor.mH if upper else factor
    lower, b = _batched(lower, b)
    return _substitute(lower.mH, _substitute(lower, b, lower=True, unit=False), lower=False, unit=False)


@decomposes("aten.cholesky_inverse.default")
def cholesky_inverse(factor: torch.Tensor, upper: bool = False) -> torch.Tensor:
    eye = torch.eye(factor.shape[-1], dtype=factor.dtype, device=factor.device).expand(factor.shape)
    return cholesky_solve(eye, factor, upper)


@decomposes("aten.fft_fftfreq.default")
def fftfreq(n: int, d: float = 1.0, **options: Any) -> torch.Tensor:
    """The sample frequencies of an n-point DFT: [0, 1, ..., ceil(n/2) - 1, -floor(n/2), ..., -1] times
    1 / (d n), in the result's dtype (as torch's kernel scales them)."""
    order = torch.arange(n, **_creation(options, torch.get_default_dtype()))
    return torch.where(order < (n + 1) // 2, order, order - n) * (1.0 / (n * d))


@decomposes("aten.fft_rfftfreq.default")
def rfftfreq(n: int, d: float = 1.0, **options: Any) -> torch.Tensor:
    """The sample frequencies of an n-point real DFT: [0, 1, ..., n // 2] times 1 / (d n)."""
    return torch.arange(n // 2 + 1, **_creation(options, torch.get_default_dtype())) * (1.0 / (n * d))


# --------------------------------------------------------------------------
# Fake quantization (quantization-aware training's observers left in a model)
# --------------------------------------------------------------------------


def _fake_quantized(x: torch.Tensor, scale: torch.Tensor | float, zero_point: torch.Tensor | int, quant_min: int,
                    quant_max: int) -> tuple[torch.Tensor, torch.Tensor]:
    """(the value rounded to its quantization step and clamped, whether it was in range), as torch's CPU
    kernel computes it: q = zero_point + nearbyint(x * (1 / scale)) in float32, then
    (clamp(q, quant_min, quant_max) - zero_point) * scale."""
    if isinstance(scale, torch.Tensor):
        scale = scale.to(torch.float32)
        inverse: torch.Tensor | float = scale.reciprocal()
        zero: torch.Tensor | float = torch.as_tensor(zero_point).to(torch.float32)
    else:  # a number: its float32 value and reciprocal, as the kernel rounds them
        scale, inverse, zero = float(np.float32(scale)), float(np.float32(1) / np.float32(scale)), float(zero_point)
    level = torch.round(x.to(torch.float32) * inverse) + zero
    kept = (level >= quant_min) & (level <= quant_max)
    return ((level.clamp(quant_min, quant_max) - zero) * scale).to(x.dtype), kept


@decomposes("aten.fake_quantize_per_tensor_affine_cachemask.default")
def fake_quantize_per_tensor(x: torch.Tensor, scale: float, zero_point: int, quant_min: int,
                             quant_max: int) -> tuple[torch.Tensor, torch.Tensor]:
    return _fake_quantized(x, scale, zero_point, quant_min, quant_max)


@decomposes("aten._fake_quantize_per_tensor_affine_cachemask_tensor_qparams.default")
def fake_quantize_per_tensor_qparams(x: torch.Tensor, scale: torch.Tensor, zero_point: torch.Tensor,
                                     enabled: torch.Tensor, quant_min: int, quant_max: int
                                     ) -> tuple[torch.Tensor, torch.Tensor]:
    """The observer's tensor scale and zero point; `enabled` 0 passes the input through (all kept)."""
    out, kept = _fake_quantized(x, scale.reshape(()), zero_point.reshape(()), quant_min, quant_max)
    on = enabled.reshape(()) != 0
    return torch.where(on, out, x), kept | ~on


@decomposes("aten.fake_quantize_per_channel_affine_cachemask.default")
def fake_quantize_per_channel(x: torch.Tensor, scale: torch.Tensor, zero_point: torch.Tensor, axis: int,
                              quant_min: int, quant_max: int) -> tuple[torch.Tensor, torch.Tensor]:
    shape = [1] * x.dim()
    shape[axis] = -1
    return _fake_quantized(x, scale.reshape(shape), zero_point.reshape(shape), quant_min, quant_max)


# --------------------------------------------------------------------------
# Random
# --------------------------------------------------------------------------


def _creation(options: dict[str, Any], default: torch.dtype) -> dict[str, Any]:
    return {"dtype": options.get("dtype") or default, "device": options.get("device")}


@decomposes("aten.rand.generator")
def rand_generator(size: Sequence[int], generator: Any = None, **options: Any) -> torch.Tensor:
    return torch.rand(list(size), **_creation(options, torch.get_default_dtype()))


@decomposes("aten.randn.generator")
def randn_generator(size: Sequence[int], generator: Any = None, **options: Any) -> torch.Tensor:
    return torch.randn(list(size), **_creation(options, torch.get_default_dtype()))


def _uniform_integers(low: int, high: int, size: Sequence[int], options: dict[str, Any]) -> torch.Tensor:
    """Integers uniform on [low, high): floor of a uniform draw scaled to the range."""
    creation = _creation(options, torch.int64)
    uniform = torch.rand(list(size), dtype=torch.float64 if high - low > 1 << 24 else torch.float32,
                         device=creation["device"])
    drawn = (uniform * (high - low)).floor().clamp(max=high - low - 1) + low
    return drawn.to(creation["dtype"])


@decomposes("aten.randint.default", "aten.randint.generator")
def randint(high: int, size: Sequence[int], generator: Any = None, **options: Any) -> torch.Tensor:
    return _uniform_integers(0, high, size, options)


@decomposes("aten.randint.low", "aten.randint.low_generator")
def randint_low(low: int, high: int, size: Sequence[int], generator: Any = None, **options: Any) -> torch.Tensor:
    return _uniform_integers(low, high, size, options)


@decomposes("aten.randperm.generator")
def randperm_generator(n: int, generator: Any = None, **options: Any) -> torch.Tensor:
    """rducc's draws are its own (seeded per op): the generator is dropped, the dtype kept."""
    return torch.randperm(n, **_creation(options, torch.int64))


@decomposes("aten.rand_like.generator")
def rand_like_generator(self: torch.Tensor, generator: Any = None, **options: Any) -> torch.Tensor:
    """rducc's draws are its own (seeded per op), never a torch generator's: the generator is dropped."""
    return torch.rand(list(self.shape), **_creation(options, self.dtype))


@decomposes("aten.randn_like.generator")
def randn_like_generator(self: torch.Tensor, generator: Any = None, **options: Any) -> torch.Tensor:
    return torch.randn(list(self.shape), **_creation(options, self.dtype))


@decomposes("aten.randint_like.default", "aten.randint_like.generator")
def randint_like(self: torch.Tensor, high: int, generator: Any = None, **options: Any) -> torch.Tensor:
    return _uniform_integers(0, high, self.shape, {"dtype": options.get("dtype") or self.dtype})


@decomposes("aten.randint_like.low_dtype", "aten.randint_like.low_generator_dtype")
def randint_like_low(self: torch.Tensor, low: int, high: int, generator: Any = None,
                     **options: Any) -> torch.Tensor:
    return _uniform_integers(low, high, self.shape, {"dtype": options.get("dtype") or self.dtype})


@decomposes("aten.randint_like.Tensor", "aten.randint_like.Tensor_generator")
def randint_like_tensor(self: torch.Tensor, high: torch.Tensor, generator: Any = None,
                        **options: Any) -> torch.Tensor:
    """Integers uniform on [0, high) with `high` a rank-0 tensor read in the program."""
    bound = high.to(torch.float64)
    drawn = (torch.rand(list(self.shape), dtype=torch.float64) * bound).floor()
    return torch.minimum(drawn, bound - 1).to(options.get("dtype") or self.dtype)


@decomposes("aten.random.to")
def random_to(self: torch.Tensor, high: int, generator: Any = None) -> torch.Tensor:
    """`tensor.random_(to)`: integers uniform on [0, to), in the tensor's dtype."""
    return _uniform_integers(0, high, self.shape, {"dtype": self.dtype, "device": self.device})


@decomposes("aten.uniform.default")
def uniform(self: torch.Tensor, *bounds: float, generator: Any = None, **named: float) -> torch.Tensor:
    """`tensor.uniform_(from, to)`: uniform on [from, to) (`from` is a Python keyword:
    the bounds come by position or by name)."""
    low = bounds[0] if bounds else named.get("from", 0.0)
    high = bounds[1] if len(bounds) > 1 else named.get("to", 1.0)
    return torch.rand_like(self) * (high - low) + low


@decomposes("aten.normal_functional.default")
def normal_functional(self: torch.Tensor, mean: float = 0.0, std: float = 1.0, generator: Any = None) -> torch.Tensor:
    """`tensor.normal_(mean, std)`."""
    return torch.randn_like(self) * std + mean


@decomposes("aten.normal.Tensor_Tensor", "aten.normal.Tensor_float", "aten.normal.float_Tensor")
def normal_tensors(mean: torch.Tensor | float, std: torch.Tensor | float = 1.0, generator: Any = None) -> torch.Tensor:
    """`torch.normal(mean, std)`, each a tensor or a number: one draw per element of
    their broadcast shape, in the tensors' dtype."""
    tensors = [t for t in (mean, std) if isinstance(t, torch.Tensor)]
    shape = torch.broadcast_shapes(*(t.shape for t in tensors))
    noise = torch.randn(shape, dtype=tensors[0].dtype, device=tensors[0].device)
    return noise * std + mean


@decomposes("aten.normal.float_float")
def normal_numbers(mean: float, std: float, size: Sequence[int], generator: Any = None, **options: Any) -> torch.Tensor:
    """`torch.normal(mean, std, size)`."""
    return torch.randn(list(size), **_creation(options, torch.get_default_dtype())) * std + mean


@decomposes("aten.multinomial.default")
def multinomial(self: torch.Tensor, num_samples: int, replacement: bool = False, generator: Any = None) -> torch.Tensor:
    """Category indices drawn with probability proportional to the weights: with
    replacement, by inverting the cumulative distribution; without, as the top
    `num_samples` of log(weight) plus Gumbel noise (exactly sampling without replacement)."""
    weights = self.to(torch.float32)
    if replacement:
        cumulative = weights.cumsum(-1)
        total = cumulative[..., -1:]
        uniform = torch.rand((*self.shape[:-1], num_samples), device=self.device) * total
        index = (cumulative.unsqueeze(-2) <= uniform.unsqueeze(-1)).sum(-1)
        return index.clamp(max=self.shape[-1] - 1)
    uniform = torch.rand(self.shape, device=self.device).clamp(min=1e-38)
    keys = weights.log() - (-uniform.log()).log()
    return keys.topk(num_samples, -1).indices


POISSON_STEPS = 40
"""Bisection steps of `poisson`'s inversion: exact for every count below 2**40, and finer than a
float32 count's spacing above it."""


@decomposes("aten.poisson.default")
def poisson(self: torch.Tensor, generator: Any = None) -> torch.Tensor:
    """Counts drawn with rate `self`, by inverting the Poisson distribution function: the least k
    with P(X <= k) = Q(k + 1, rate) >= u for a uniform u, found by bisection over
    (-1, rate + 20 sqrt(rate) + 40] (where Q, the upper regularized incomplete gamma, is within one
    ulp of 1)."""
    rate = self.to(torch.float64 if self.dtype == torch.float64 else torch.float32)
    uniform = torch.rand(self.shape, dtype=rate.dtype, device=self.device)
    low = torch.full_like(rate, -1.0)
    high = torch.ceil(rate + 20 * rate.sqrt() + 40)
    for _ in range(POISSON_STEPS):
        middle = torch.floor((low + high) / 2)
        covers = (middle >= 0) & (torch.special.gammaincc(middle.clamp(min=0) + 1, rate) >= uniform)
        high, low = torch.where(covers, middle, high), torch.where(covers, low, middle)
    return high.to(self.dtype)


@decomposes("aten.rrelu_with_noise_functional.default")
def rrelu_with_noise(
    self: torch.Tensor, noise: torch.Tensor, lower: float = 1 / 8, upper: float = 1 / 3,
    training: bool = False, generator: Any = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """(output, noise): in training, each x <= 0 is scaled by a slope uniform on
    [lower, upper] (noise holds the slopes, 1 elsewhere); otherwise by their mean."""
    if not training:
        return torch.where(self >= 0, self, self * ((lower + upper) / 2)), noise
    slope = (torch.rand(self.shape, device=self.device) * (upper - lower) + lower).to(self.dtype)
    negative = self <= 0
    return torch.where(negative, self * slope, self), torch.where(negative, slope, torch.ones_like(slope))


# --------------------------------------------------------------------------
# Non-core ops that torch's decomposition leaves in place
# --------------------------------------------------------------------------


@decomposes("aten._convolution.default", "aten._convolution.deprecated")
def convolution_legacy(
    input: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None, stride: Sequence[int],
    padding: Sequence[int], dilation: Sequence[int], transposed: bool, output_padding: Sequence[int],
    groups: int, *flags: Any,
) -> torch.Tensor:
    """The backend flags (benchmark, deterministic, cudnn, tf32) do not change the result."""
    return aten.convolution.default(input, weight, bias, stride, padding, dilation, transposed, output_padding, groups)


def _rows_index(self: torch.Tensor, dim: int, index: torch.Tensor, source: torch.Tensor) -> torch.Tensor:
    """`index` (along `dim`) spread over `source`'s shape, as scatter takes it."""
    shape = [1] * source.dim()
    shape[dim] = -1
    return index.reshape(shape).expand(source.shape)


def _as_rows(
    self: torch.Tensor, index: torch.Tensor, source: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Rank-0 operands as one-element vectors (index_add accepts scalars)."""
    table = self.reshape(-1) if self.dim() == 0 else self
    return table, index.reshape(-1), source.reshape(-1) if source.dim() == 0 else source


@decomposes("aten.index_add.default")
def index_add(self: torch.Tensor, dim: int, index: torch.Tensor, source: torch.Tensor, *,
              alpha: Any = 1) -> torch.Tensor:
    """A scatter_add along `dim` (torch's own decomposition is an index_put, which
    takes a negative index where eager refuses it: scatter refuses it at run time)."""
    table, rows, values = _as_rows(self, index, source)
    dim = dim % max(table.dim(), 1)
    values = values * alpha if alpha != 1 else values
    result = aten.scatter_add.default(table, dim, _rows_index(table, dim, rows, values), values.to(table.dtype))
    return result.reshape(self.shape)


@decomposes("aten.index_copy.default")
def index_copy(self: torch.Tensor, dim: int, index: torch.Tensor, source: torch.Tensor) -> torch.Tensor:
    """A scatter along `dim` (an index_put in torch's decomposition, which takes a
    negative index where eager refuses it: scatter refuses it at run time)."""
    table, rows, values = _as_rows(self, index, source)
    dim = dim % max(table.dim(), 1)
    result = aten.scatter.src(table, dim, _rows_index(table, dim, rows, values), values.to(table.dtype))
    return result.reshape(self.shape)


@decomposes("aten.index_fill.int_Scalar", "aten.index_fill.int_Tensor")
def index_fill(self: torch.Tensor, dim: int, index: torch.Tensor, value: Any) -> torch.Tensor:
    """A scatter of `value` along `dim`; a negative index counts from the end, as
    in eager (torch's decomposition leaves that to index_copy's index_put)."""
    table = self.reshape(-1) if self.dim() == 0 else self
    dim = dim % table.dim()
    rows = index.reshape(-1)
    rows = torch.where(rows < 0, rows + table.shape[dim], rows)
    shape = list(table.shape)
    shape[dim] = rows.numel()
    if isinstance(value, torch.Tensor):
        fill = value.to(table.dtype).expand(shape)
    else:
        fill = torch.full(shape, value, dtype=table.dtype, device=table.device)
    return aten.scatter.src(table, dim, _rows_index(table, dim, rows, fill), fill).reshape(self.shape)


@decomposes("aten.nan_to_num.default")
def nan_to_num(self: torch.Tensor, nan: float | None = None, posinf: float | None = None,
               neginf: float | None = None) -> torch.Tensor:
    """torch's decomposition; of a complex tensor, that of its real and imaginary parts each (as
    torch's kernel computes it: torch's decomposition refuses complex), on their real pairs."""
    if self.is_complex():
        parts = aten.nan_to_num.default(torch.view_as_real(self), nan, posinf, neginf)
        return torch.view_as_complex(parts)
    return torch._refs.nan_to_num(self, nan, posinf, neginf)


@decomposes("prims.collapse.default", "prims.collapse_view.default")
def collapse(a: torch.Tensor, start: int, end: int) -> torch.Tensor:
    """Dims start..end (inclusive, as prims counts) merged into one."""
    shape = list(a.shape)
    return a.reshape(shape[:start] + [math.prod(shape[start : end + 1])] + shape[end + 1 :])


@decomposes("prims.convert_element_type.default")
def convert_element_type(a: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    return aten._to_copy.default(a, dtype=dtype)


# --------------------------------------------------------------------------
# Ops torch's tables keep or decompose into prims (found by bench/op_sweep.py)
# --------------------------------------------------------------------------


@decomposes("aten.new_empty_strided.default")
def new_empty_strided(self: torch.Tensor, size: Sequence[int], stride: Sequence[int], **options: Any) -> torch.Tensor:
    """Uninitialized memory: values are unspecified, so the strides do not matter."""
    dtype = options.get("dtype") or self.dtype
    return torch.empty(list(size), dtype=dtype, device=self.device)


@decomposes("aten.put.default")
def put(self: torch.Tensor, index: torch.Tensor, source: torch.Tensor, accumulate: bool = False) -> torch.Tensor:
    """`self` read as flat, indices counted from the end when negative."""
    flat = self.reshape(-1)
    where = index.reshape(-1) % max(flat.numel(), 1)
    return aten.index_put.default(flat, [where], source.reshape(-1), accumulate).reshape(self.shape)


@decomposes("aten.index_reduce.default")
def index_reduce(
    self: torch.Tensor, dim: int, index: torch.Tensor, source: torch.Tensor, reduce: str, include_self: bool = True
) -> torch.Tensor:
    """A scatter_reduce whose index is `index` broadcast along `dim` over `source`."""
    dim = dim % max(self.dim(), 1)
    shape = [1] * source.dim()
    if shape:
        shape[dim] = -1
    spread = index.reshape(shape).expand(source.shape) if shape else index.reshape(())
    return self.scatter_reduce(dim, spread, source, reduce, include_self=include_self)


@decomposes("aten.diagonal_scatter.default")
def diagonal_scatter(
    self: torch.Tensor, src: torch.Tensor, offset: int = 0, dim1: int = 0, dim2: int = 1
) -> torch.Tensor:
    """`src` written on the diagonal: a select between `self` and `src` spread over the
    (dim1, dim2) plane by the diagonal position of each element."""
    dim1, dim2 = dim1 % self.dim(), dim2 % self.dim()
    rows, cols = self.shape[dim1], self.shape[dim2]
    i = torch.arange(rows, device=self.device).unsqueeze(1)
    j = torch.arange(cols, device=self.device).unsqueeze(0)
    on = (j - i) == offset
    length = max(src.shape[-1], 1)
    along = (i if offset >= 0 else j).expand(rows, cols).clamp(0, length - 1).reshape(-1)
    spread = src.index_select(-1, along).reshape(*src.shape[:-1], rows, cols).movedim((-2, -1), (dim1, dim2))
    mask = on.expand(*src.shape[:-1], rows, cols).movedim((-2, -1), (dim1, dim2))
    return torch.where(mask, spread, self)


def _cumulative_extreme(self: torch.Tensor, dim: int, larger: bool) -> tuple[torch.Tensor, torch.Tensor]:
    """cummax/cummin: each position against all before it (a [n, n] lower triangle
    per row); the index is the last position holding the extreme, as torch's."""
    if self.dim() == 0:
        return self.clone(), torch.zeros((), dtype=torch.int64, device=self.device)
    moved = self.movedim(dim, -1)
    n = moved.shape[-1]
    position = torch.arange(n, device=self.device)
    before = position.unsqueeze(0) <= position.unsqueeze(1)  # [i, j]: j <= i
    rows = moved.unsqueeze(-2).expand(*moved.shape[:-1], n, n)
    if self.dtype.is_floating_point:
        fill: float | int | bool = -math.inf if larger else math.inf
    elif self.dtype == torch.bool:
        fill = not larger
    else:
        fill = torch.iinfo(self.dtype).min if larger else torch.iinfo(self.dtype).max
    candidates = torch.where(before, rows, torch.full((), fill, dtype=self.dtype, device=self.device))
    values = candidates.amax(-1) if larger else candidates.amin(-1)
    hit = before & ((rows == values.unsqueeze(-1)) | (rows.isnan() & values.isnan().unsqueeze(-1)))
    indices = torch.where(hit, position, -1).amax(-1)
    return values.movedim(-1, dim), indices.movedim(-1, dim)


@decomposes("aten.cummax.default")
def cummax(self: torch.Tensor, dim: int) -> tuple[torch.Tensor, torch.Tensor]:
    return _cumulative_extreme(self, dim, larger=True)


@decomposes("aten.cummin.default")
def cummin(self: torch.Tensor, dim: int) -> tuple[torch.Tensor, torch.Tensor]:
    return _cumulative_extreme(self, dim, larger=False)


def _lower_median(self: torch.Tensor, dim: int, skip_nan: bool) -> tuple[torch.Tensor, torch.Tensor]:
    """The lower median along `dim` and its index (sorted, NaN last): with NaN in a
    row, NaN and the first NaN's index (median) or the median of the others (nanmedian)."""
    ordered, order = torch.sort(self, dim=dim, stable=True)
    nan = self.isnan()
    if skip_nan:
        count = (~nan).sum(dim, keepdim=True)
        at = ((count - 1).clamp(min=0)) // 2
    else:
        at = torch.full_like(nan.sum(dim, keepdim=True), (self.shape[dim] - 1) // 2)
    values, indices = ordered.gather(dim, at), order.gather(dim, at)
    if not skip_nan:
        first_nan = nan.to(torch.int64).argmax(dim, keepdim=True)
        any_nan = nan.any(dim, keepdim=True)
        values = torch.where(any_nan, torch.full_like(values, math.nan), values)
        indices = torch.where(any_nan, first_nan, indices)
    return values.squeeze(dim), indices.squeeze(dim)


@decomposes("aten.median.default")
def median(self: torch.Tensor) -> torch.Tensor:
    return _lower_median(self.reshape(-1), 0, skip_nan=False)[0]


@decomposes("aten.nanmedian.default")
def nanmedian(self: torch.Tensor) -> torch.Tensor:
    return _lower_median(self.reshape(-1), 0, skip_nan=True)[0]


def _median_dim(self: torch.Tensor, dim: int, keepdim: bool, skip_nan: bool) -> tuple[torch.Tensor, torch.Tensor]:
    if self.dim() == 0:
        return self.clone(), torch.zeros((), dtype=torch.int64, device=self.device)
    values, indices = _lower_median(self, dim, skip_nan)
    if keepdim:
        values, indices = values.unsqueeze(dim), indices.unsqueeze(dim)
    return values, indices


@decomposes("aten.median.dim")
def median_dim(self: torch.Tensor, dim: int, keepdim: bool = False) -> tuple[torch.Tensor, torch.Tensor]:
    return _median_dim(self, dim, keepdim, skip_nan=False)


@decomposes("aten.nanmedian.dim")
def nanmedian_dim(self: torch.Tensor, dim: int, keepdim: bool = False) -> tuple[torch.Tensor, torch.Tensor]:
    return _median_dim(self, dim, keepdim, skip_nan=True)


__all__: list[str] = []


@decomposes("aten._neg_view.default")
def neg_view(self: torch.Tensor) -> torch.Tensor:
    """torch's lazily negated view (`z.conj().imag`): in a functional program, the negation."""
    return torch.neg(self)


@decomposes("aten._index_put_impl.default")
def index_put_impl(self: torch.Tensor, indices: Sequence[torch.Tensor | None], values: torch.Tensor,
                   accumulate: bool = False, unsafe: bool = False) -> torch.Tensor:
    """`index_put`: rducc checks every index whatever `unsafe` says."""
    return torch.ops.aten.index_put.default(self, list(indices), values, accumulate)
