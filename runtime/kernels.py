"""NumPy tensor kernels for the `rdu` dialect: one function per op.

Every kernel works on whole NumPy arrays (never element by element) and
returns a fresh array or a read-only view of its input; no kernel writes into
its arguments, so the engine can share arrays between values freely.
Attributes come as plain Python values; `rducc.runtime.implementations` binds
an op's attributes to its kernel.

Numerics follow PyTorch's CPU kernels where the IR leaves room:

- f16/bf16 arithmetic (matmul, conv, pooling, reductions and scans) runs in
  f32 and is rounded once to the result type, except where torch's kernel
  rounds otherwise and runs here on the 16-bit operands (a 16-bit product,
  `_torch_matmul`; a convolution's gradients, `conv_gradient`);
- f32 sums, products and scans accumulate in f64 and round once (torch's CPU
  cumsum does the same; for sums it is at least as accurate as torch's
  cascade sum); f64 stays f64; integer reductions wrap in their own type;
- max/min reductions propagate NaN like `torch.amax` and, of +0 and -0,
  give the first in reduction order (as torch.amax/amin pick the first of
  equal elements); argmax/argmin return the first NaN or the first extreme.

Kernels run under the runner's `np.errstate(all="ignore")` (inf and NaN are
values here, as in torch); called directly, NumPy may warn.

Element dtypes are in `rducc.runtime.dtypes`, the `rdu.map` body compiler in
`rducc.runtime.map_body`.
"""

from __future__ import annotations

import functools
import itertools
import math as pymath
import warnings
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import ml_dtypes
import numpy as np
import torch
from numpy.lib.stride_tricks import sliding_window_view

from rducc.dialects.shapes import window_output_size, window_span
from rducc.errors import RduccError
from rducc.runtime.dtypes import BF16, BOOL, F16, F32, F64, HALF_DTYPES, I64, accumulator, compute_dtype, saturated
from rducc.runtime.elementwise import TORCH_ARITHMETIC_ELEMENTS, as_torch, assign
from rducc.runtime.subnormals import subnormals_as_zero
from rducc.runtime.threads import PARALLEL_MACS


def matmul(
    lhs: np.ndarray,
    rhs: np.ndarray,
    dtype: np.dtype | None = None,
    transpose_rhs: bool = False,
    out: np.ndarray | None = None,
) -> np.ndarray:
    """Batched `[..., M, K] x [..., K, N]`, batch dims broadcast; with
    `transpose_rhs` the rhs is given as `[..., N, K]`.

    f16/bf16/f8 operands are multiplied in f32 and rounded once to `dtype` (the
    result element type, default the operands'); a wider result (bf16 x bf16
    -> f32) is the unrounded f32 product. With `out` (a C-contiguous array of
    the result's shape and dtype) the product is written there; BLAS writes it
    directly when no rounding follows.
    """
    dtype = lhs.dtype if dtype is None else np.dtype(dtype)
    if transpose_rhs:
        rhs = rhs.swapaxes(-1, -2)
    if lhs.dtype in _TORCH_PRODUCTS and rhs.dtype == lhs.dtype == dtype:
        return _torch_matmul(lhs, rhs, out)
    if lhs.dtype in HALF_DTYPES:
        lhs, rhs = lhs.astype(F32), rhs.astype(F32)
    direct = out is not None and lhs.dtype == dtype and rhs.dtype == dtype
    product = _one_gemm(lhs, rhs, out if direct else None)
    if out is None:
        return saturated(product, dtype).astype(dtype, copy=False)
    if not direct:
        out[...] = saturated(product, dtype)
    return out


_TORCH_PRODUCTS = frozenset((np.dtype(np.float16), np.dtype(ml_dtypes.bfloat16)))
"""16-bit products rounded to 16 bits that run as torch's kernel (`_torch_matmul`)."""


def _torch_matmul(lhs: np.ndarray, rhs: np.ndarray, out: np.ndarray | None) -> np.ndarray:
    """A bf16 (f16) product rounded to bf16 as torch's CPU kernel computes it
    (oneDNN's 16-bit GEMM): eager's bit for bit. Widened to f32, multiplied
    by OpenBLAS and rounded, one element in about a thousand of a training
    step's products was a bf16 ulp off eager's (f32 sums in another order)."""
    product = torch.matmul(as_torch(lhs), as_torch(rhs))
    result = product.view(torch.int16).numpy().view(lhs.dtype) if product.dtype == torch.bfloat16 \
        else product.numpy()
    if out is None:
        return result
    out[...] = result
    return out


def _one_gemm(lhs: np.ndarray, rhs: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """The batched product (into `out` when given), as one 2-d GEMM when the
    rhs is the same matrix for every batch (a linear layer on `[..., M, K]`):
    a batched matmul would run one small GEMM per batch. An empty rhs (numpy gives a dim before a 0-size
    one stride 0, which is no broadcast) is np.matmul's."""
    if lhs.ndim <= 2 or rhs.ndim < 2 or rhs.size == 0 or \
            not all(n == 1 or s == 0 for n, s in zip(rhs.shape[:-2], rhs.strides[:-2])):
        return gemm(lhs, rhs, out)
    matrix = rhs[(0,) * (rhs.ndim - 2)]
    batch = np.broadcast_shapes(lhs.shape[:-2], rhs.shape[:-2])
    rows = np.broadcast_to(lhs, (*batch, *lhs.shape[-2:])).reshape(-1, lhs.shape[-1])
    if out is not None:
        gemm(rows, matrix, out.reshape(rows.shape[0], matrix.shape[-1]))
        return out
    return gemm(rows, matrix).reshape(*batch, lhs.shape[-2], matrix.shape[-1])


def gemm(lhs: np.ndarray, rhs: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """`np.matmul(lhs, rhs, out=out)`, on the calling thread (numpy's BLAS at
    one thread, `threads.single_threaded_numpy_blas`); an f32/f64 product of
    at least `threads.PARALLEL_MACS` multiply-adds runs on torch's BLAS and
    pool instead, at any thread count: the one pool the convolutions and
    eager use, and at one thread 10-30% faster than numpy's OpenBLAS on the
    linear layers of ViT-B/16 and GPT-2 (`threads` module docstring). `out`,
    when given, is C-contiguous. Subnormal operands count as zero
    (`rducc.runtime.subnormals`: BLAS runs 50-80x slower on them)."""
    with subnormals_as_zero():
        if lhs.dtype != rhs.dtype or lhs.dtype not in (F32, F64) or not lhs.size or not rhs.size \
                or _multiply_adds(lhs, rhs) < PARALLEL_MACS:
            return np.matmul(lhs, rhs, out=out)
        if out is None:
            return torch.matmul(_tensor(lhs), _tensor(rhs)).numpy()
        torch.matmul(_tensor(lhs), _tensor(rhs), out=torch.from_numpy(out))
        return out


def linear(lhs: np.ndarray, rhs: np.ndarray, bias: np.ndarray, transpose_rhs: bool, out: np.ndarray) -> np.ndarray:
    """`out = lhs @ rhs + bias` (`[..., M, K] x [K, N]`, `[N, K]` with
    `transpose_rhs`; `bias` `[N]` added to every row) as one `torch.addmm`:
    what eager's `F.linear` runs, the bias added by the GEMM's epilogue instead
    of a second pass over the product. f32/f64 operands of one dtype; `out` is
    C-contiguous. Subnormal operands count as zero, as in `gemm`. bf16 (f16)
    operands, bias and `out` run as eager's 16-bit `addmm` (`_linear_16_bit`)."""
    if lhs.dtype in _TORCH_PRODUCTS:
        return _linear_16_bit(lhs, rhs, bias, transpose_rhs, out)
    rows = lhs.reshape(-1, lhs.shape[-1])
    weight = _tensor(rhs).T if transpose_rhs else _tensor(rhs)
    with subnormals_as_zero():
        torch.addmm(_tensor(bias.reshape(-1)), _tensor(rows), weight,
                    out=torch.from_numpy(out.reshape(rows.shape[0], -1)))
    return out


def _linear_16_bit(lhs: np.ndarray, rhs: np.ndarray, bias: np.ndarray, transpose_rhs: bool,
                   out: np.ndarray) -> np.ndarray:
    """`kernels.linear` of bf16 (f16) operands as torch's 16-bit `addmm`
    (oneDNN's GEMM: the f32 sum of the products and the bias, rounded once),
    eager's `F.linear` bit for bit (issue 27). The product widened to f32 on
    numpy's BLAS sums in another order: where eager's sum is a 16-bit tie
    (rounded to even) and numpy's an f32 ulp above, it rounded the other way."""
    rows = as_torch(lhs.reshape(-1, lhs.shape[-1]))
    weight = as_torch(rhs).T if transpose_rhs else as_torch(rhs)
    result = torch.addmm(as_torch(bias.reshape(-1)), rows, weight)
    out.reshape(result.shape)[...] = _from_torch(result)
    return out


def softmax(x: np.ndarray, dim: int, log: bool, out: np.ndarray) -> np.ndarray:
    """`out = softmax(x, dim)` (`log`: its log) as ATen's one fused CPU kernel,
    what eager's `torch.softmax` runs (`rducc.runtime.fused_norms`). f32/f64;
    `out` is C-contiguous; where it shares bytes with `x` the result is made
    apart and copied in. Subnormal results are zero (`subnormals_as_zero`: a
    masked row's probabilities of 4e-44, Swin's shifted windows, took the
    exponential 4-6x longer through x86's microcode assists), on torch's pool
    threads too in a run (`subnormals.pool_flushing`)."""
    kernel = torch._log_softmax if log else torch._softmax  # C++ bindings (`layer_norm`)
    source = _tensor(x)
    with subnormals_as_zero():
        if np.may_share_memory(x, out):
            np.copyto(out, kernel(source, dim, False).numpy(), casting="no")
        else:
            kernel(source, dim, False, out=torch.from_numpy(out))
    return out


def attention(q: np.ndarray, k: np.ndarray, v: np.ndarray, mask: np.ndarray | None, scale: float, safe: bool,
              out: np.ndarray | None) -> np.ndarray:
    """`out = softmax(q @ k^T * scale + mask) @ v` (`q` `[..., L, E]`, `k`
    `[..., S, E]`, `v` `[..., S, Ev]`, `mask` broadcast to `[..., L, S]`) as
    ATen's fused CPU kernel, what eager's `F.scaled_dot_product_attention`
    runs (`rducc.runtime.fused_attention`), written into `out` (its elements
    in `[..., L, Ev]` order); with `out` None, the kernel's own `[..., L, Ev]`
    array (its memory in `[..., L, heads, Ev]` order: no copy). A row whose mask is -inf throughout is zero with
    `safe` (`_safe_softmax`: what ATen's kernel gives), else NaN (a plain
    softmax's 0/0, written here). f32/f64. An
    operand whose rows are not contiguous (keys as a transposed view) is
    copied: the kernel reads such rows 2-3x slower than the copy costs."""
    mask_tensor = None if mask is None else _tensor(mask)
    q, k, v = (x if x.strides[-1] == x.itemsize else np.ascontiguousarray(x) for x in (q, k, v))
    with subnormals_as_zero():
        result = torch.nn.functional.scaled_dot_product_attention(
            _tensor(q), _tensor(k), _tensor(v), attn_mask=mask_tensor, scale=scale)
    if out is None:
        out = result.numpy()
    else:
        np.copyto(out, result.numpy().reshape(out.shape), casting="no")
    if mask is not None and not safe:
        masked = np.isneginf(mask).all(axis=-1, keepdims=True)
        if masked.any():
            rows = np.broadcast_to(masked, (*result.shape[:-1], 1)).reshape(*out.shape[:-1], -1)
            np.copyto(out, np.nan, where=np.broadcast_to(rows, out.shape))
    return out


def layer_norm(x: np.ndarray, dims: int, weight: np.ndarray | None, bias: np.ndarray | None, eps: float,
               out: np.ndarray | None) -> np.ndarray:
    """`out = layer_norm(x)` over its last `dims` dims (optional affine `weight`,
    `bias`) as ATen's one fused CPU kernel, what eager's `F.layer_norm` runs
    (`rducc.runtime.fused_norms`). f32/f64; `out` C-contiguous; where it shares
    bytes with `x` the result is made apart and copied in. With `out` None,
    the kernel's own new array (no copy).

    Called as eager calls it: `torch.layer_norm`, torch's C++ binding, which
    runs `native_layer_norm`'s CPU kernel (the same bits). Through the Python
    `torch.ops.aten` op objects the call ran 30-40 us longer a layer norm after
    a large product had pushed their code and data out of the caches
    (`bench/runtime_bindings_ab.py`); `native_layer_norm.out` is that kernel
    into a temporary, then a copy."""
    normed = torch.layer_norm(_tensor(x), x.shape[x.ndim - dims:], None if weight is None else _tensor(weight),
                              None if bias is None else _tensor(bias), eps).numpy()
    if out is None:
        return normed
    np.copyto(out, normed, casting="no")
    return out


def layer_norm_part(x: np.ndarray, dims: int, weight: np.ndarray | None, bias: np.ndarray | None, eps: float,
                    part: str) -> np.ndarray:
    """One result (`part`: output, mean or rstd) of ATen's fused
    `native_layer_norm` over `x`'s last `dims` dims, as eager's forward
    computes and saves it (`rdu.layer_norm`)."""
    shape = list(x.shape[x.ndim - dims:])
    params = [None if p is None else as_torch(p) for p in (weight, bias)]
    results = torch.ops.aten.native_layer_norm(as_torch(x), shape, *params, eps)
    return _from_torch(results[("output", "mean", "rstd").index(part)])


def layer_norm_gradient(grad: np.ndarray, x: np.ndarray, mean: np.ndarray, rstd: np.ndarray, dims: int,
                        weight: np.ndarray | None, bias: np.ndarray | None, of: str) -> np.ndarray:
    """One result (`of`: input, weight or bias) of ATen's fused
    `native_layer_norm_backward`, what eager's backward of a layer norm runs
    (`rdu.layer_norm_grad`)."""
    index = ("input", "weight", "bias").index(of)
    shape = list(x.shape[x.ndim - dims:])
    params = [None if p is None else as_torch(p) for p in (weight, bias)]
    mask = [i == index for i in range(3)]
    results = torch.ops.aten.native_layer_norm_backward(as_torch(grad), as_torch(x), shape, as_torch(mean),
                                                        as_torch(rstd), *params, mask)
    return _from_torch(results[index])


class ConvGeometry(NamedTuple):
    """A convolution's attributes, as `convolution_backward` takes them."""

    stride: tuple[int, ...]
    padding: tuple[int, ...]
    dilation: tuple[int, ...]
    transposed: bool
    output_padding: tuple[int, ...]
    groups: int


def conv_gradient(grad: np.ndarray, x: np.ndarray, weight: np.ndarray, geometry: ConvGeometry,
                  of: str, dtype: np.dtype | None = None) -> np.ndarray:
    """One result (`of`: input, weight or bias) of ATen's `convolution_backward`
    on the operands as they are (16-bit ones stay 16-bit): the kernel eager's
    backward of the convolution runs on this CPU, so its bits (`rdu.conv_grad`).
    A wider result `dtype` (a tp partial sum kept in f32) runs the kernel on the
    operands cast up to it: its sums not rounded to 16 bits."""
    index = ("input", "weight", "bias").index(of)
    bias_sizes = [grad.shape[1]] if of == "bias" else None
    mask = [i == index for i in range(3)]
    if dtype is not None and np.dtype(dtype) != grad.dtype:
        grad, x, weight = (a.astype(dtype) for a in (grad, x, weight))
    results = torch.ops.aten.convolution_backward(as_torch(grad), as_torch(x), as_torch(weight), bias_sizes,
                                                  *geometry, mask)
    return _from_torch(results[index])


def _from_torch(tensor: torch.Tensor) -> np.ndarray:
    """A kernel's result as an array on its memory (bf16 through its bits)."""
    if tensor.dtype == torch.bfloat16:
        return tensor.view(torch.int16).numpy().view(BF16)
    return tensor.numpy()


def grouped_matmul(
    lhs: np.ndarray,
    rhs: np.ndarray,
    offsets: np.ndarray,
    dtype: np.dtype | None = None,
    transpose_rhs: bool = False,
    out: np.ndarray | None = None,
) -> np.ndarray:
    """A mixture of experts' grouped product (`rdu.grouped_matmul`): `lhs` `[S, K]`
    rows sorted by expert, `rhs` `[E, K, N]` (`[E, N, K]` with `transpose_rhs`),
    `offsets` the cumulative row counts. Expert e's rows `start:offsets[e]` are
    multiplied by its matrix alone, as transformers' grouped_mm_fallback loops
    (Python slice rules; an expert whose offset equals `start` is skipped); rows no
    expert takes are zero. f32/f64 operands of the result's dtype run each
    expert's rows as torch's `mm` into its rows of the result, whatever their
    count: eager's `torch._grouped_mm` on the CPU (ATen's fallback loops
    `mm_out` over the groups), bit for bit; `matmul`'s numpy path for a small
    group gave other bits. Other dtypes: `matmul`'s numerics."""
    dtype = lhs.dtype if dtype is None else np.dtype(dtype)
    result = np.empty((lhs.shape[0], rhs.shape[2] if not transpose_rhs else rhs.shape[1]), dtype) \
        if out is None else out
    ends = offsets.tolist()
    result[_rows_taken(ends, result.shape[0]):] = 0
    if lhs.dtype == rhs.dtype == dtype and dtype in (F32, F64) and lhs.size and rhs.size:
        return _grouped_mm(lhs, rhs, ends, transpose_rhs, result)
    start = 0
    for expert, end in enumerate(ends):
        if start == end:
            continue
        rows = result[start:end]
        if rows.shape[0]:
            matmul(lhs[start:end], rhs[expert], dtype, transpose_rhs, out=rows)
        start = end
    return result


def _rows_taken(ends: Sequence[int], rows: int) -> int:
    """How many leading rows of a grouped product's `rows` the experts' slices
    (`start:end`, from 0, `ends` in order) write: all up to the last end when
    the ends rise from 0 (cumulative counts), else 0 (every row zeroed first,
    then written where a slice takes it)."""
    if any(end < 0 for end in ends) or any(later < earlier for earlier, later in zip(ends, ends[1:])):
        return 0
    return min(ends[-1], rows) if ends else 0


def _grouped_mm(lhs: np.ndarray, rhs: np.ndarray, ends: Sequence[int], transpose_rhs: bool,
                result: np.ndarray) -> np.ndarray:
    """`grouped_matmul`'s loop as torch's `mm` into `result`'s rows (a
    C-contiguous f32/f64 array of the operands' dtype)."""
    rows, weights, into = _tensor(lhs), _tensor(rhs), torch.from_numpy(result)
    start = 0
    with subnormals_as_zero():
        for expert, end in enumerate(ends):
            if start == end:
                continue
            taken = into[start:end]
            if taken.shape[0]:
                weight = weights[expert]
                torch.mm(rows[start:end], weight.T if transpose_rhs else weight, out=taken)
            start = end
    return result


def _multiply_adds(lhs: np.ndarray, rhs: np.ndarray) -> int:
    """Multiply-adds of the batched product `[..., M, K] x [..., K, N]` (batch
    dims broadcast; operands have elements)."""
    if lhs.ndim < 2 or rhs.ndim < 2:
        return max(lhs.size, rhs.size)
    batch = 1
    for left, right in itertools.zip_longest(reversed(lhs.shape[:-2]), reversed(rhs.shape[:-2]), fillvalue=1):
        batch *= max(left, right)
    return batch * lhs.shape[-2] * lhs.shape[-1] * rhs.shape[-1]


def _axes(x: np.ndarray, dims: Sequence[int]) -> tuple[int, ...]:
    """Reduction axes; a rank-0 tensor reduces over nothing (its single element)."""
    return tuple(dims) if x.ndim else ()


def _max_identity(dtype: np.dtype, largest: bool) -> Any:
    if dtype == BOOL:
        return not largest
    if dtype.kind == "f":
        return -np.inf if largest else np.inf
    info = np.iinfo(dtype)
    return info.min if largest else info.max


def reduce(
    x: np.ndarray, kind: str, dims: Sequence[int], keepdim: bool = False, out: np.ndarray | None = None
) -> np.ndarray:
    """`rdu.reduce`: sum, prod, max, min, any, all, argmax, argmin over `dims`.

    Empty max/min reductions give the identity (-inf/+inf or the integer
    limits); argmax/argmin of an empty dim raise, as in PyTorch. With `out`
    (an array of the result's shape and x's dtype), a sum, product, max or
    min is rounded straight into it (no rounded temporary) and `out` returned;
    any other kind returns its result (the caller assigns it).
    """
    kind = str(kind)
    axes = _axes(x, dims)
    dtype = x.dtype
    if kind == "sum" and dtype in _TORCH_SUMS and x.size and axes:
        return _torch_sum(x, axes, keepdim, out)
    if kind in ("sum", "prod"):
        accumulate: Any = np.add.reduce if kind == "sum" else np.multiply.reduce
        # the ufunc casts to the accumulator as it goes (no widened copy of x)
        return _rounded(accumulate(x, axis=axes, keepdims=keepdim, dtype=accumulator(dtype)), dtype, out)
    if kind in ("max", "min"):
        compute = compute_dtype(dtype)
        source = x.astype(compute) if compute != dtype else x
        largest = kind == "max"
        function = np.max if largest else np.min
        result = function(source, axis=axes, initial=_max_identity(compute, largest))
        result = _first_zero(source, axes, np.asarray(result))
        return _rounded(np.expand_dims(result, axes) if keepdim else result, dtype, out)
    if kind in ("any", "all"):
        logical = np.any if kind == "any" else np.all
        return np.asarray(logical(x.astype(BOOL, copy=False), axis=axes, keepdims=keepdim))
    if kind in ("argmax", "argmin"):
        if len(dims) != 1:
            raise RduccError(f"'rdu.reduce {kind}' reduces exactly one dim")
        if x.ndim == 0:
            return np.zeros((), dtype=I64)
        compute = compute_dtype(dtype)
        source = x.astype(compute) if compute != dtype else x
        arg = np.argmax if kind == "argmax" else np.argmin
        return np.asarray(arg(source, axis=dims[0], keepdims=keepdim)).astype(I64)
    raise RduccError(f"unknown reduction kind '{kind}'")


_TORCH_SUMS = frozenset((F64, F32, np.dtype(np.float16), np.dtype(ml_dtypes.bfloat16)))
"""The float types whose sums run as torch's kernel (`_torch_sum`)."""


def _torch_sum(x: np.ndarray, axes: tuple[int, ...], keepdim: bool, out: np.ndarray | None) -> np.ndarray:
    """A float sum as torch's CPU kernel adds it (its order, in the input's type
    for f32 and f64, in f32 rounded once for f16/bf16): eager's `aten.sum` bit for
    bit. A sum in another order (NumPy's pairwise one, or f32 summed in f64) is
    an ulp off eager's in some elements, which a bf16 rounding or Adam's update
    can make a bf16 ulp (docs/training.md, "Where rducc rounds as eager")."""
    summed = torch.sum(as_torch(x), dim=axes, keepdim=keepdim)
    result = summed.view(torch.int16).numpy().view(x.dtype) if summed.dtype == torch.bfloat16 else summed.numpy()
    if out is None:
        return result
    out[...] = result
    return out


def _first_zero(source: np.ndarray, axes: tuple[int, ...], extreme: np.ndarray) -> np.ndarray:
    """A max/min reduction's result with each zero taking the sign of the first
    zero along the reduced axes (in row-major order), as torch.amax/amin pick
    the first of equal elements: [+0, -0] gives +0, [-0, +0] gives -0."""
    if source.dtype.kind != "f" or not axes or source.size == 0 or not np.any(extreme == 0):
        return extreme
    moved = np.moveaxis(source, axes, tuple(range(-len(axes), 0)))
    rows = moved.reshape(*extreme.shape, -1)
    first = np.take_along_axis(rows, np.argmax(rows == 0, axis=-1)[..., None], axis=-1)[..., 0]
    return np.where(extreme == 0, first, extreme)


def _rounded(result: Any, dtype: np.dtype, out: np.ndarray | None) -> np.ndarray:
    """A reduction's accumulated `result` rounded once to `dtype`: into `out` when given."""
    if out is None:
        return np.asarray(result).astype(dtype)
    out[...] = result  # assignment casts as astype does (round to nearest)
    return out


def scan(x: np.ndarray, kind: str, dim: int) -> np.ndarray:
    """`rdu.scan`: inclusive cumulative sum or product along `dim`."""
    kind = str(kind)
    if x.ndim == 0:
        return x
    acc = accumulator(x.dtype)
    functions: dict[str, Callable[..., np.ndarray]] = {"sum": np.cumsum, "prod": np.cumprod}
    function = functions.get(kind)
    if function is None:
        raise RduccError(f"unknown scan kind '{kind}'")
    source = x.astype(acc) if acc != x.dtype else x
    with np.errstate(all="ignore"):
        return function(source, axis=dim, dtype=acc).astype(x.dtype)


def _windows(
    x: np.ndarray,
    window: Sequence[int],
    stride: Sequence[int],
    padding: Sequence[int],
    dilation: Sequence[int],
    ceil_mode: bool,
    fill: Any,
) -> np.ndarray:
    """View of shape `lead + out + window`: every window of the trailing dims of x.

    The input is padded with `fill` (more on the right where ceil mode adds a
    partial window); windows are dilated and strided.
    """
    spatial = len(window)
    lead = x.ndim - spatial
    sizes = x.shape[lead:]
    outs = [
        max(window_output_size(n, k, s, p, d, ceil_mode), 0)
        for n, k, s, p, d in zip(sizes, window, stride, padding, dilation)
    ]
    spans = [window_span(k, d) for k, d in zip(window, dilation)]
    pads = [
        (p, max(p, (o - 1) * s + span - n - p, 0))
        for n, o, s, p, span in zip(sizes, outs, stride, padding, spans)
    ]
    if any(p for pair in pads for p in pair):
        x = np.pad(x, [(0, 0)] * lead + pads, constant_values=fill)
    if any(o == 0 for o in outs) or any(span > n for span, n in zip(spans, x.shape[lead:])):
        return np.zeros(x.shape[:lead] + tuple(outs) + tuple(window), dtype=x.dtype)
    views = sliding_window_view(x, spans, axis=tuple(range(lead, x.ndim)))
    picks = (
        (slice(None),) * lead
        + tuple(slice(0, (o - 1) * s + 1, s) for o, s in zip(outs, stride))
        + tuple(slice(None, None, d) for d in dilation)
    )
    return views[picks]


def conv(
    x: np.ndarray,
    weight: np.ndarray,
    stride: Sequence[int],
    padding: Sequence[int],
    dilation: Sequence[int],
    groups: int,
    dtype: np.dtype | None = None,
    out: np.ndarray | None = None,
    plan: ConvPlan | None = None,
    bias: np.ndarray | None = None,
) -> np.ndarray:
    """N-d convolution (cross-correlation, as PyTorch) of NC[spatial] by O(C/groups)[kernel],
    plus `bias` (`[O, 1, ...]` or `[O]`, f32/f64 as the result) where given.

    All groups at once, by the path `conv_plan` chooses from the geometry (the
    op's kernel passes the plan it made when prepared): a pointwise convolution
    is one GEMM (`_pointwise_conv`); a small one, or one whose windows do not
    overlap, is one gather of its windows and one GEMM batched over the groups
    (`_window_conv`); any other of 1-3 spatial dims in f32/f64 runs PyTorch's
    own CPU convolution (`torch.nn.functional.conv{1,2,3}d`, on the arrays'
    memory: oneDNN's direct kernels, on torch's threads). f16/bf16 operands
    whose result is their type run as torch's convolution on the 16-bit
    operands, with their bias (`_half_conv`): eager autocast's kernel, so its
    bits, the bias added before its one rounding; with another `dtype` (f32)
    they run in f32 and round once to `dtype`. With `out` (a C-contiguous array
    of the result's shape and dtype) the result is written there. The bias is
    oneDNN's epilogue on torch's path (eager's `F.conv2d` with its bias), one
    in-place add after the GEMM on the others (`rducc.runtime.epilogues`).
    """
    dtype = x.dtype if dtype is None else np.dtype(dtype)
    if x.dtype == weight.dtype == dtype and dtype in (BF16, F16) and x.ndim - 2 in _TORCH_CONV:
        return _half_conv(x, weight, bias, stride, padding, dilation, groups, out)
    compute = compute_dtype(dtype)
    source, w = x.astype(compute, copy=False), weight.astype(compute, copy=False)
    bias = None if bias is None else bias.astype(compute, copy=False)
    if plan is None or plan.shapes != (x.shape, weight.shape):  # a plan is for the shapes it was made for
        plan = conv_plan(x.shape, weight.shape, tuple(stride), tuple(padding), tuple(dilation), groups, compute)
    direct = out if compute == dtype else None
    if plan.path == "pointwise" or plan.windows is not None:
        if plan.windows is None:
            result = _pointwise_conv(source, w, direct)
        else:
            result = _window_conv(source, w, groups, plan.windows, direct)
        if bias is not None:
            result += bias.reshape((-1,) + (1,) * (x.ndim - 2))
    else:
        channels = None if bias is None else _tensor(bias.reshape(-1))
        result = _TORCH_CONV[x.ndim - 2](_outermost_ones(_tensor(source)), _tensor(w), channels, tuple(stride),
                                         tuple(padding), tuple(dilation), groups).numpy()
    if out is None:  # torch's in the memory order it chose (channels-last for such an input, as eager's)
        return result.astype(dtype, copy=False) if plan.path == "torch" else \
            np.ascontiguousarray(result.astype(dtype, copy=False))
    if result is not out:
        out[...] = result
    return out


def conv_transpose(x: np.ndarray, weight: np.ndarray, bias: np.ndarray | None, geometry: ConvGeometry,
                   dtype: np.dtype, out: np.ndarray | None = None) -> np.ndarray:
    """A transposed convolution (`rdu.conv` with `transposed`) as ATen's
    `convolution` kernel with its bias, eager's call: 16-bit operands whose
    result is their type stay 16-bit (the bias added before the one
    rounding, as eager autocast's); any other result computes in its opmath
    type and rounds once to `dtype`."""
    compute = dtype if x.dtype == weight.dtype == dtype and dtype in HALF_DTYPES else compute_dtype(dtype)
    operands = [None if a is None else as_torch(a.astype(compute, copy=False)) for a in (x, weight, bias)]
    result = _from_torch(torch.ops.aten.convolution(*operands, *geometry)).astype(dtype, copy=False)
    if out is None:
        return result
    out[...] = result
    return out


def _half_conv(x: np.ndarray, weight: np.ndarray, bias: np.ndarray | None, stride: Sequence[int],
               padding: Sequence[int], dilation: Sequence[int], groups: int, out: np.ndarray | None) -> np.ndarray:
    """A bf16/f16 convolution as torch's kernel on the 16-bit operands and bias
    (eager autocast's call): how its sums are ordered and rounded depends on
    the CPU (oneDNN's bf16 kernels, or im2col and a 16-bit GEMM that
    accumulates in f32 in its own order), so f32 sums rounded once differ from
    it in about one output in 10^4 on larger shapes, and a bias added after a
    rounding in more (rdu.conv_grad does the same for the backward)."""
    channels = None if bias is None else as_torch(bias.reshape(-1))
    result = _from_torch(_TORCH_CONV[x.ndim - 2](_outermost_ones(as_torch(x)), as_torch(weight), channels,
                                                 tuple(stride), tuple(padding), tuple(dilation), groups))
    if out is None:
        return result
    out[...] = result
    return out


def _outermost_ones(t: torch.Tensor) -> torch.Tensor:
    """`t` with each size-1 dim's stride set as if it were outermost: such a
    stride addresses nothing, but torch reads the strides to choose a
    convolution's memory format, and a channels-last view whose batch dim of
    1 has a small stride (a layout view's) ran channels-first."""
    if 1 not in t.shape or t.is_contiguous():
        return t
    outer = max((stride * size for size, stride in zip(t.shape, t.stride()) if size != 1), default=1)
    return t.as_strided(t.shape, [outer if size == 1 else stride for size, stride in zip(t.shape, t.stride())])


WINDOW_BUDGET = 1 << 17
"""The most elements a convolution's window matrix (im2col: every input
element each window reads, `N * C * taps * positions`) may have for the
convolution to run as one gather and one GEMM when its windows overlap (f32:
512 KiB, within L2). Below it that costs less than oneDNN's fixed cost a call:
input, weight and output reordered to blocked layouts and a JIT kernel run,
50-60 us at one thread called alone (bench/conv_paths.py) and 90-125 us
inside a program, whose other ops evict its code and data from the caches
between calls (the gather and GEMM cost the same either way). Above it
oneDNN's direct kernels win, most of all for a depthwise convolution, whose
window matrix is as large as its arithmetic."""


class ConvWindows(NamedTuple):
    """A convolution's windows as one gather (im2col) from the flattened image.

    `taps[t, p]` is the flat input position that kernel tap `t` reads for
    output position `p`, or the image size (one past its end, a zero) where
    the tap falls in the padding; only the taps that touch the image for some
    output are kept (`kernel`, the weight's slice of them: a 7x7 depthwise
    kernel on a 2x2 image keeps 3x3)."""

    taps: np.ndarray
    kernel: tuple[slice, ...]
    out: tuple[int, ...]
    padded: bool
    tiles: bool = False
    """The windows tile the image (stride the window, no padding or
    dilation): the window matrix is a transposed view of it (`_tiled_windows`)."""


class ConvPlan(NamedTuple):
    """How a convolution of input and weight `shapes` runs: `pointwise` (one
    GEMM), `windows` (one gather, one GEMM: `windows` says how) or `torch`
    (PyTorch's CPU convolution)."""

    path: str
    shapes: tuple[tuple[int, ...], tuple[int, ...]]
    windows: ConvWindows | None = None


@functools.lru_cache(maxsize=512)
def conv_plan(
    x_shape: tuple[int, ...],
    w_shape: tuple[int, ...],
    stride: tuple[int, ...],
    padding: tuple[int, ...],
    dilation: tuple[int, ...],
    groups: int,
    compute: np.dtype,
) -> ConvPlan:
    """The path of a convolution, from its shapes and attributes alone (the
    same every call, no timing): pointwise when it is one; else the windows
    when its window matrix is at most `WINDOW_BUDGET` elements, or no larger
    than the input (windows that do not overlap: a ViT's patches, a ConvNeXt
    stem), or torch has no kernel for it (other ranks, integer or empty
    arrays); else torch."""
    window = w_shape[2:]
    if _is_pointwise(w_shape, stride, padding, groups):
        return ConvPlan("pointwise", (x_shape, w_shape))
    taps = _used_taps(x_shape[2:], window, stride, padding, dilation)
    elements = x_shape[0] * x_shape[1] * pymath.prod(len(range(*t)) * o for t, o in taps)
    torch_runs = len(window) in _TORCH_CONV and compute in (F32, F64) and \
        pymath.prod(x_shape) > 0 and pymath.prod(w_shape) > 0
    if torch_runs and elements > max(WINDOW_BUDGET, pymath.prod(x_shape)):
        return ConvPlan("torch", (x_shape, w_shape))
    return ConvPlan("windows", (x_shape, w_shape), conv_windows(x_shape[2:], window, stride, padding, dilation))


def _is_pointwise(w_shape: Sequence[int], stride: Sequence[int], padding: Sequence[int], groups: int) -> bool:
    """A 1x1 convolution of one group, stride 1, no padding: a linear layer over channels."""
    return groups == 1 and set(w_shape[2:]) <= {1} and set(stride) <= {1} and not any(padding)


def _used_taps(
    sizes: Sequence[int], window: Sequence[int], stride: Sequence[int], padding: Sequence[int],
    dilation: Sequence[int],
) -> list[tuple[tuple[int, int], int]]:
    """Per spatial dim, the range of kernel taps that read the image for some
    output position (the others only ever read padding), and the output size."""
    used = []
    for n, k, s, p, d in zip(sizes, window, stride, padding, dilation):
        outputs = max((n + 2 * p - d * (k - 1) - 1) // s + 1, 0)
        reads = np.arange(outputs)[:, None] * s - p + np.arange(k)[None, :] * d  # (out, tap)
        touching = np.flatnonzero(((reads >= 0) & (reads < n)).any(axis=0))
        first, last = (int(touching[0]), int(touching[-1]) + 1) if touching.size else (0, 0)
        used.append(((first, last), outputs))
    return used


@functools.lru_cache(maxsize=512)
def conv_windows(
    sizes: tuple[int, ...], window: tuple[int, ...], stride: tuple[int, ...], padding: tuple[int, ...],
    dilation: tuple[int, ...],
) -> ConvWindows:
    """The gather that makes a convolution's window matrix (`ConvWindows`)."""
    spatial = len(sizes)
    used = _used_taps(sizes, window, stride, padding, dilation)
    flat = np.zeros((1,) * 2 * spatial, np.intp)
    inside = np.ones((1,) * 2 * spatial, bool)
    for axis, (((first, last), outputs), n, s, p, d) in enumerate(zip(used, sizes, stride, padding, dilation)):
        shape = [1] * 2 * spatial
        shape[axis], shape[spatial + axis] = last - first, outputs
        reads = (np.arange(first, last)[:, None] * d + np.arange(outputs)[None, :] * s - p).reshape(shape)
        inside = inside & (reads >= 0) & (reads < n)
        flat = flat + reads * pymath.prod(sizes[axis + 1:])
    kept = pymath.prod(last - first for (first, last), _ in used)
    positions = pymath.prod(outputs for _, outputs in used)  # every tap may read only padding: kept = 0
    taps = np.where(inside, flat, pymath.prod(sizes)).reshape(kept, positions)
    taps.flags.writeable = False
    kernel = tuple(slice(first, last) for (first, last), _ in used)
    tiles = stride == window and not any(padding) and set(dilation) <= {1} and positions > 0
    return ConvWindows(taps, kernel, tuple(o for _, o in used), not inside.all(), tiles)


def _window_conv(
    x: np.ndarray, w: np.ndarray, groups: int, windows: ConvWindows, out: np.ndarray | None = None,
) -> np.ndarray:
    """Convolution as one gather and one GEMM batched over the groups: the
    window matrix `[N, G, C/G * taps, positions]` (`_gathered_windows`, or one
    transposed copy where the windows tile the image: `_tiled_windows`) times
    the weight as `[G, O/G, C/G * taps]` (BLAS; into `out` when given), in
    `x`'s dtype; eager's `_slow_conv2d_forward` is the same for one group."""
    batch, channels = x.shape[:2]
    taps, positions = windows.taps.shape
    per_group = channels // groups * taps
    columns = (_tiled_windows(x, windows) if windows.tiles else _gathered_windows(x, windows)) \
        .reshape(batch, groups, per_group, positions)
    rows = w[(slice(None), slice(None), *windows.kernel)].reshape(groups, w.shape[0] // groups, per_group)
    into = None if out is None else out.reshape(batch, groups, w.shape[0] // groups, positions)
    return gemm(rows, columns, into).reshape(batch, w.shape[0], *windows.out)


def _gathered_windows(x: np.ndarray, windows: ConvWindows) -> np.ndarray:
    """The window matrix `[N, C, taps, positions]` as one gather (`np.take`)
    from the flattened image, a zero appended where a tap reads padding."""
    batch, channels = x.shape[:2]
    image = x.reshape(batch, channels, pymath.prod(x.shape[2:]))
    if windows.padded:
        source = np.empty((batch, channels, image.shape[2] + 1), x.dtype)
        source[..., :-1] = image
        source[..., -1] = 0
    else:
        source = image
    return np.take(source, windows.taps, axis=2)


def _tiled_windows(x: np.ndarray, windows: ConvWindows) -> np.ndarray:
    """The window matrix of windows that tile the image (`ConvWindows.tiles`),
    the same elements as the gather's: each spatial dim split into (output,
    tap), the taps moved before the outputs, one copy (`elementwise.assign`:
    on torch's pool from its grain at more threads). Read in the image's own
    memory order, where the gather first copied a channels-last view into
    channels-first order (ConvNeXt's downsampling: 1.9 against 0.37 ms)."""
    batch, channels = x.shape[:2]
    spatial = len(windows.out)
    window = tuple(s.stop - s.start for s in windows.kernel)
    kept = x[(slice(None), slice(None), *(slice(0, o * k) for o, k in zip(windows.out, window)))]
    split = kept.reshape(batch, channels, *(n for pair in zip(windows.out, window) for n in pair))
    order = (0, 1, *(3 + 2 * d for d in range(spatial)), *(2 + 2 * d for d in range(spatial)))
    columns = np.empty((batch, channels, *window, *windows.out), x.dtype)
    assign(columns, split.transpose(order))
    return columns.reshape(batch, channels, pymath.prod(window), pymath.prod(windows.out))


def _pointwise_conv(x: np.ndarray, w: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """A pointwise convolution as one GEMM per image, batched (BLAS, into `out`
    when given): `[O, C] x [N, C, positions]`. oneDNN's direct kernel costs
    far more per call on the small images of the zoo than the GEMM itself."""
    batch, channels = x.shape[:2]
    positions = pymath.prod(x.shape[2:])
    columns = x.reshape(batch, channels, positions)
    matrix = w.reshape(w.shape[0], channels)
    if out is not None:
        gemm(matrix, columns, out.reshape(batch, w.shape[0], positions))
        return out
    return gemm(matrix, columns).reshape(batch, w.shape[0], *x.shape[2:])


_TORCH_CONV: dict[int, Callable[..., Any]] = {
    1: torch.nn.functional.conv1d, 2: torch.nn.functional.conv2d, 3: torch.nn.functional.conv3d,
}
"""PyTorch's CPU convolution by number of spatial dims."""


def _silence_read_only_warning() -> None:
    """torch warns, once a process, that a tensor on a read-only array could be
    written; the runtime's kernels only read theirs, so that one warning is
    spent here, unseen."""
    read_only = np.zeros(1, F32)
    read_only.flags.writeable = False
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.from_numpy(read_only)


_silence_read_only_warning()


def _tensor(x: np.ndarray) -> torch.Tensor:
    """A torch tensor on `x`'s memory (a contiguous copy when its strides are
    negative or not whole elements); torch only reads it."""
    if x.strides and min(x.strides) < 0:
        x = np.ascontiguousarray(x)
    return torch.from_numpy(x)


class PoolWindow(NamedTuple):
    """Where a pooling window goes: its size, stride, padding and dilation per
    spatial dim, and whether a partial last window counts (ceil mode)."""

    window: Sequence[int]
    stride: Sequence[int]
    padding: Sequence[int]
    dilation: Sequence[int]
    ceil_mode: bool = False


def pool(
    x: np.ndarray,
    kind: str,
    window: Sequence[int],
    stride: Sequence[int],
    padding: Sequence[int],
    dilation: Sequence[int],
    ceil_mode: bool = False,
) -> np.ndarray:
    """Max or average pooling over the trailing `len(window)` dims.

    Max pads with -inf (the integer minimum); average pads with zeros and
    divides by the full window size (padding counted), as `rdu.pool` defines.
    Max pooling runs one spatial dim at a time (`_separable_max_pool`, any
    dtype and geometry). Float average pooling of 1 to 3 dims that PyTorch
    accepts (padding at most half the window, no dilation) runs PyTorch's CPU
    kernel on the whole array (`_torch_pool`); any other the strided window view.
    """
    kind = str(kind)
    dtype = x.dtype
    compute = compute_dtype(dtype)
    source = x.astype(compute, copy=False)
    if kind not in ("max", "avg"):
        raise RduccError(f"unknown pooling kind '{kind}'")
    geometry = PoolWindow(window, stride, padding, dilation, ceil_mode)
    pooled = _separable_max_pool(source, geometry) if kind == "max" else _torch_pool(source, kind, geometry)
    if pooled is None:
        pooled = _window_pool(source, kind, geometry)
    return pooled.astype(dtype, copy=False)


def _separable_max_pool(x: np.ndarray, geometry: PoolWindow, threaded: bool | None = None) -> np.ndarray:
    """Max pooling one spatial dim at a time (`_pass_order`): along each dim,
    each of the window's `k` taps is one strided slice of the input, combined
    by `np.maximum` into the outputs whose window it falls in (the padding
    taps, -inf or the integer minimum, are the initial fill). A window's max
    is the max over its rows of each row's max, so the result is exact in any
    dtype (NaN propagates, as in torch's kernel). PyTorch's channels-first
    CPU kernel walks each window element by element: ResNet-50's 3x3/2 pool
    of 64x112x112 took about 19 ms at one thread, this about 2 ms.

    At more than one torch thread, f32/f64 taps of `TORCH_ARITHMETIC_ELEMENTS`
    elements and more run as `torch.maximum` on the same buffers, split over
    torch's pool (`_maximum_on_torch`). `threaded` False: NumPy's alone."""
    window, stride, padding, dilation, ceil_mode = geometry
    lead = x.ndim - len(window)
    outs = [window_output_size(n, k, s, p, d, ceil_mode)
            for n, k, s, p, d in zip(x.shape[lead:], window, stride, padding, dilation)]
    if x.size == 0 or any(out < 1 for out in outs):
        return np.zeros(x.shape[:lead] + tuple(max(out, 0) for out in outs), dtype=x.dtype)
    threaded = _maximum_on_torch(x) if threaded is None else threaded
    pooled = x
    for dim in _pass_order(len(window), threaded):
        pooled = _max_along(pooled, lead + dim, outs[dim], (window[dim], stride[dim], padding[dim], dilation[dim]),
                            threaded)
    return pooled


def _pass_order(spatial: int, threaded: bool) -> Sequence[int]:
    """The spatial dims in the order a separable max pool reduces them:
    innermost first on NumPy's taps (each later pass reads fewer elements);
    on torch's (`threaded`), outermost first, so the passes whose taps read
    whole rows (torch's vector loop on its pool) come before the innermost
    dim's strided taps, which then read the fewest elements (NumPy's loop).
    Without NaN or -0.0 (`_maximum_on_torch`) equal values have equal bits,
    so any order gives the same result."""
    return range(spatial) if threaded else range(spatial - 1, -1, -1)


def _maximum_on_torch(x: np.ndarray) -> bool:
    """Whether a max pool of `x` takes its taps' maxima on torch's pool: f32/f64,
    more than one torch thread, at least `TORCH_ARITHMETIC_ELEMENTS` elements,
    and no NaN or -0.0 in `x` (two reductions on torch's pool, no temporaries:
    the max propagates a NaN, -0.0's bits are the least integer). `torch.maximum`
    picks as `np.maximum` but for those: a NaN comes out as all ones (its
    vector loop) or the canonical NaN (its scalar loop), NumPy's keeps the NaN
    operand's bits; on a tie of +0.0 and -0.0 its vector loop takes the second
    operand (as NumPy) and its scalar loop (a strided tap, the vector loop's
    tail) the first. In a run at more than one thread the pool's threads read
    subnormals as zero (`subnormals.pool_flushing`), as for a map's arithmetic
    and its maxima against a constant (`rducc.runtime.extremes`)."""
    if x.dtype not in (F32, F64) or x.size < TORCH_ARITHMETIC_ELEMENTS or torch.get_num_threads() < 2:
        return False
    bits = x.view(np.int32 if x.dtype == F32 else np.int64)
    negative_zero = -(1 << (8 * x.dtype.itemsize - 1))  # the sign bit alone
    return not bool(torch.isnan(torch.max(as_torch(x)))) and int(torch.min(as_torch(bits))) != negative_zero


def _max_along(x: np.ndarray, axis: int, out: int, taps_step_left_spread: tuple[int, int, int, int],
               threaded: bool) -> np.ndarray:
    """Max over each window of one dim of `x` (`out` windows of `taps` taps,
    `spread` apart, every `step`, starting `left` before the first element);
    with `threaded`, the taps of `TORCH_ARITHMETIC_ELEMENTS` elements and more
    whose innermost dim is unit-stride on torch's pool (`_maximum_on_torch`):
    there torch runs its vector loop; a strided innermost read (the last
    dim's taps at a stride above 1) takes its scalar loop, slower split over
    two threads than NumPy's strided loop on one (ResNet-50's pool: 0.20 ms
    of the calling thread's CPU a tap against NumPy's 0.16; a row's tap 0.02
    against 0.05)."""
    taps, step, left, spread = taps_step_left_spread
    shape = list(x.shape)
    shape[axis] = out
    pooled = np.full(shape, _max_identity(x.dtype, True), dtype=x.dtype)
    lead = (slice(None),) * axis
    for tap in range(taps):
        offset = tap * spread - left  # output j reads input j * step + offset
        first, end = max(0, -(offset // step)), min(out, (x.shape[axis] - 1 - offset) // step + 1)
        if first >= end:
            continue
        reads = slice(first * step + offset, (end - 1) * step + offset + 1, step)
        target = pooled[lead + (slice(first, end),)]
        source = x[lead + (reads,)]
        if threaded and target.size >= TORCH_ARITHMETIC_ELEMENTS and _unit_inner_stride(target, source):
            destination = torch.from_numpy(target)
            torch.maximum(destination, as_torch(source), out=destination)
        else:
            np.maximum(target, source, out=target)
    return pooled


def _unit_inner_stride(*arrays: np.ndarray) -> bool:
    """Whether each array's last dim steps one element (torch's vector loop reads it)."""
    return all(a.shape[-1] == 1 or a.strides[-1] == a.itemsize for a in arrays)


def _window_pool(x: np.ndarray, kind: str, geometry: PoolWindow) -> np.ndarray:
    """Pooling as one reduction over the strided window view, in `x`'s dtype
    (an average's sum accumulated wider)."""
    window, stride, padding, dilation, ceil_mode = geometry
    axes = tuple(range(-len(window), 0))
    with np.errstate(all="ignore"):
        if kind == "max":
            fill = _max_identity(x.dtype, True)
            views = _windows(x, window, stride, padding, dilation, ceil_mode, fill)
            if 0 in views.shape:
                return np.zeros(views.shape[: -len(window)], dtype=x.dtype)
            return views.max(axis=axes)
        views = _windows(x, window, stride, padding, dilation, ceil_mode, 0)
        total = views.sum(axis=axes, dtype=accumulator(x.dtype))
        return (total / pymath.prod(window)).astype(x.dtype)


def _torch_pool(x: np.ndarray, kind: str, geometry: PoolWindow) -> np.ndarray | None:
    """Pooling by PyTorch's CPU kernel (`max_pool{1,2,3}d`, or `avg_pool{2,3}d`
    dividing by the whole window: `divisor_override`, a 1-d window as 2-d),
    every leading dim as one channel dim; None where torch has no such kernel."""
    window, stride, padding, dilation, ceil_mode = geometry
    spatial = len(window)
    if x.dtype not in (F32, F64) or not 1 <= spatial <= 3 or not x.size:
        return None
    if any(2 * p > k for p, k in zip(padding, window)) or any(s < 1 for s in stride):
        return None
    sizes = x.shape[x.ndim - spatial :]
    if any(window_output_size(*args, ceil_mode) < 1 for args in zip(sizes, window, stride, padding, dilation)):
        return None
    lead = x.shape[: x.ndim - spatial]
    channels = x.reshape(1, pymath.prod(lead), *x.shape[x.ndim - spatial :])
    if kind == "max":
        result = _TORCH_MAX_POOL[spatial](_tensor(channels), tuple(window), tuple(stride), tuple(padding),
                                          tuple(dilation), ceil_mode)
    else:
        if any(d != 1 for d in dilation):
            return None
        window, stride, padding = tuple(window), tuple(stride), tuple(padding)
        if spatial == 1:
            channels, window, stride, padding = channels[..., None, :], (1, *window), (1, *stride), (0, *padding)
        pooled = _TORCH_AVG_POOL[len(window)](_tensor(channels), window, stride, padding, ceil_mode, True,
                                              pymath.prod(window))
        result = pooled[..., 0, :] if spatial == 1 else pooled
    return result.numpy().reshape(*lead, *result.shape[2:])


_TORCH_MAX_POOL: dict[int, Callable[..., Any]] = {
    1: torch.max_pool1d, 2: torch.max_pool2d, 3: torch.max_pool3d,  # no return_indices dispatch
}
_TORCH_AVG_POOL: dict[int, Callable[..., Any]] = {
    2: torch.nn.functional.avg_pool2d, 3: torch.nn.functional.avg_pool3d,
}
"""PyTorch's CPU pooling by number of spatial dims (average: 2 and 3, which take a divisor)."""


# --------------------------------------------------------------------------
# Layout and data movement
# --------------------------------------------------------------------------


def reshape(x: np.ndarray, shape: Sequence[int]) -> np.ndarray:
    """Same elements in row-major order, new shape."""
    return x.reshape(tuple(shape))


def transpose(x: np.ndarray, perm: Sequence[int]) -> np.ndarray:
    """Result dim i is input dim perm[i]."""
    return x.transpose(tuple(perm))


def broadcast(x: np.ndarray, shape: Sequence[int]) -> np.ndarray:
    """A read-only view expanding size-1 and missing leading dims."""
    return np.broadcast_to(x, tuple(shape))


def slice_(
    x: np.ndarray, offsets: Sequence[int], strides: Sequence[int], sizes: Sequence[int]
) -> np.ndarray:
    """result[i] = x[offsets + i * strides] for i < sizes (a view)."""
    return x[slice_index(offsets, strides, sizes)]


def slice_index(offsets: Sequence[int], strides: Sequence[int], sizes: Sequence[int]) -> tuple[slice, ...]:
    """The index of `slice_`'s window (made once, applied on every run)."""
    return tuple(
        slice(o, o + (n - 1) * s + 1, s) if n > 0 else slice(0, 0)
        for o, s, n in zip(offsets, strides, sizes)
    )


def concat(inputs: Sequence[np.ndarray], dim: int) -> np.ndarray:
    """Joins along `dim`."""
    return np.concatenate(list(inputs), axis=dim)


def gather(source: np.ndarray, indices: Sequence[np.ndarray], dim: int, wraps: bool = False) -> np.ndarray:
    """Advanced indexing of dims [dim, dim + len(indices)) by broadcast index arrays.

    Result shape: source.shape[:dim] + broadcast(indices) + source.shape[dim + k:].
    Each index must lie in [0, size), or in [-size, size) when `wraps`, where a
    negative one counts from the end (as in PyTorch's `index`); any other is an
    error, as in eager, never a wrap to another row.
    """
    arrays = tuple(np.asarray(i) for i in indices)
    for k, index in enumerate(arrays):
        check_index_range(index, source.shape[dim + k], dim + k, wraps, "rdu.gather")
    key = (slice(None),) * dim + arrays
    try:
        return source[key]
    except IndexError as error:
        raise RduccError(f"rdu.gather: {error}") from None


def check_index_range(index: np.ndarray, size: int, dim: int, wraps: bool, what: str) -> None:
    """Raise when an index (whole array at once) is outside [0, size), or
    [-size, size) when negatives count from the end; memory nothing wrote
    (the interpreter's poison bytes) read as an index is named as such."""
    if not index.size:
        return
    low = -size if wraps else 0
    outside = (index < low) | (index >= size)
    if not outside.any():
        return
    bad = int(index[outside].flat[0])
    unwritten = " (never written: the bytes are the poison of fresh memory)" if is_poison(bad, index.dtype) else ""
    raise RduccError(f"{what}: index {bad}{unwritten} is out of bounds for dim {dim} of size {size} "
                     f"(indices must be in [{low}, {size}))")


POISON_WORD = 0x7FFF
"""Fresh memory's bytes, as little-endian 16-bit words (0xFF, 0x7F, ...): NaN in
f16, bf16, f32 and f64, and in i16, i32 and i64 the largest positive values
(0x7FFF..., never a valid index), so reading bytes nothing wrote shows."""


def poisoned(shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
    """An array of `shape` and `dtype` holding the poison bytes."""
    array = np.empty(shape, dtype)
    fill_poison(array.reshape(-1).view(np.uint8))
    return array


def fill_poison(raw: np.ndarray) -> None:
    """Fill a byte array with the poison pattern (from an even byte)."""
    raw[0::2] = POISON_WORD & 0xFF
    raw[1::2] = POISON_WORD >> 8


def is_poison(value: int, dtype: np.dtype) -> bool:
    """Whether an integer is what the poison bytes read as in `dtype` (of 2 bytes
    or more: a 1-byte integer reads them as -1 or 127, too common to tell)."""
    return np.dtype(dtype).itemsize >= 2 and value == int(poisoned((1,), np.dtype(dtype))[0])


SCATTER_UFUNCS = {"sum": np.add, "prod": np.multiply, "max": np.maximum, "min": np.minimum}
"""The ufunc whose `.at` combines an `rdu.scatter`'s writes, by its `reduce`."""


def scatter(x: np.ndarray, index: np.ndarray, source: np.ndarray, dim: int, reduce: str | None) -> np.ndarray:
    """`rdu.scatter`: `source` written into a copy of `x` along `dim` at `index`,
    on whole arrays: the reduction's `ufunc.at` with `reduce` (np.add.at for
    sum; f16/bf16 combined in f32, rounded once; NaN propagates through max
    and min, as torch's), else one assignment of each position's last write.
    `x` may have any strides (a layout view: `rducc.runtime.layout_views`); the
    copy is made row-major, the order of the flat positions written into it."""
    index = np.asarray(index).astype(I64, copy=False)
    size = x.shape[dim]
    if index.size and (index.min() < 0 or index.max() >= size):
        raise RduccError(f"rdu.scatter: an index is out of range [0, {size}) along dim {dim}")
    positions: list[np.ndarray] = list(np.indices(index.shape, sparse=True))
    positions[dim] = index
    flat = np.ravel_multi_index(np.broadcast_arrays(*positions), x.shape).reshape(-1)
    values = np.asarray(source).reshape(-1)
    out = x.astype(compute_dtype(x.dtype), order="C")  # row-major: `out.reshape(-1)` is a view of it
    with np.errstate(all="ignore"):
        if reduce is not None:
            SCATTER_UFUNCS[reduce].at(out.reshape(-1), flat, values.astype(out.dtype))
        else:
            written, first_from_end = np.unique(flat[::-1], return_index=True)
            out.reshape(-1)[written] = values[len(flat) - 1 - first_from_end]
    return out.astype(x.dtype, copy=False)


def iota(size: int, start: int | float, step: int | float, dtype: np.dtype) -> np.ndarray:
    """[start + i * step for i < size], computed in f64 (floats) or i64 and rounded once."""
    if dtype.kind == "f" or dtype in HALF_DTYPES:
        return (float(start) + np.arange(size, dtype=F64) * float(step)).astype(dtype)
    with np.errstate(all="ignore"):
        return (int(start) + np.arange(size, dtype=I64) * int(step)).astype(dtype)


def argsort(x: np.ndarray, dim: int, descending: bool) -> np.ndarray:
    """`rdu.argsort`: a stable sort's order along `dim` (NaN largest, as torch;
    descending puts NaN first and keeps equal elements in their order)."""
    keys = np.moveaxis(x, dim, -1)
    if keys.dtype.kind == "f" or keys.dtype in HALF_DTYPES:
        keys = keys.astype(F64 if keys.dtype == F64 else F32)
    if not descending:
        order = np.argsort(keys, axis=-1, kind="stable")
    elif keys.dtype.kind == "f":
        order = np.lexsort((-keys, ~np.isnan(keys)), axis=-1)
    else:
        order = np.argsort(~keys if keys.dtype.kind in "iub" else -keys, axis=-1, kind="stable")
    return np.moveaxis(order, -1, dim).astype(I64)


def random(shape: Sequence[int], dtype: np.dtype, distribution: str, seed: int, run: int) -> np.ndarray:
    """`rdu.random`: uniform [0, 1) or standard normal numbers, drawn in f64 by
    numpy's PCG64 from the op's seed and the run number (`RunContext.run`) and
    rounded once to `dtype`. Within one run the same op gives the same values
    (on every socket); a uniform value that rounds up to 1.0 becomes the
    largest value below it."""
    generator = np.random.default_rng([seed, run])
    shape = tuple(shape)
    if distribution == "normal":
        return generator.standard_normal(shape).astype(dtype)
    below_one = np.array(1.0 - float(ml_dtypes.finfo(dtype).epsneg), dtype=dtype)
    return np.minimum(generator.random(shape).astype(dtype), below_one)


__all__ = [
    "SCATTER_UFUNCS", "argsort", "broadcast", "concat", "conv", "gather", "iota", "matmul", "pool",
    "random", "reduce", "reshape", "scan", "scatter", "slice_", "slice_index", "transpose",
]
