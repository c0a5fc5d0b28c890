"""Vectorized scalar semantics that NumPy lacks, for compiled `rdu.map` bodies.

arith's integer division and remainder (signed, floor, ceil, unsigned; a
divisor of 0 anywhere is an error naming the division, as torch's integer
`//`, `div(rounding_mode=...)`, `remainder` and `fmod` raise ZeroDivisionError
where arith leaves it undefined), unsigned comparisons and extremes by reinterpreting the bits, i1
read as signed (true is -1), integer powers, round half away from zero, and
erf (torch's), `rdu.pointwise_call`: an ATen pointwise op run by torch's
own CPU kernel, and the runtime's whole-array copies (`assign`: on torch's
pool at more than one thread). Every function takes and returns whole arrays.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import torch
from xdsl.utils.exceptions import VerifyException

from rducc.dialects.rdu.pointwise import PointwiseCallOp, tensor_operands
from rducc.errors import RduccError
from rducc.runtime.call_limits import check_call, run_in_chunks
from rducc.runtime.dtypes import BF16, F16, F32, F64, HALF_DTYPES, UINT_DTYPES
from rducc.runtime.host_calls import call_constants


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


DIVISIONS = {
    "div": "integer division rounded toward zero (div rounding_mode='trunc')",
    "floordiv": "integer floor division (//, floor_divide, div rounding_mode='floor')",
    "ceil": "integer ceiling division",
    "rem": "integer remainder (%, remainder, fmod)",
}
"""What each arith division computes, for the error of a zero divisor."""


def check_divisor(divisor: np.ndarray, kind: str) -> None:
    """Refuse a zero divisor anywhere (torch raises ZeroDivisionError there)."""
    if not np.all(divisor):
        raise RduccError(f"{DIVISIONS[kind]} by zero (torch raises ZeroDivisionError)")


def divsi(a: Any, b: Any) -> Any:
    """Signed division truncating toward zero."""
    a, b = np.asarray(a), np.asarray(b)
    check_divisor(b, "div")
    quotient = np.floor_divide(a, b)
    remainder = a - quotient * b
    fix = (remainder != 0) & ((a < 0) != (b < 0))
    return quotient + fix.astype(quotient.dtype)


def floordivsi(a: Any, b: Any) -> Any:
    a, b = np.asarray(a), np.asarray(b)
    check_divisor(b, "floordiv")
    return np.floor_divide(a, b)


def ceildivsi(a: Any, b: Any) -> Any:
    a, b = np.asarray(a), np.asarray(b)
    check_divisor(b, "ceil")
    quotient = np.floor_divide(a, b)
    return quotient + (a - quotient * b != 0).astype(quotient.dtype)


def remsi(a: Any, b: Any) -> Any:
    """Remainder with the sign of the dividend (C semantics)."""
    a, b = np.asarray(a), np.asarray(b)
    check_divisor(b, "rem")
    return np.fmod(a, b)


def unsigned_division(kind: str) -> Callable[[Any, Any], Any]:
    """divui, remui, ceildivui: the bits read as unsigned."""

    def apply(a: Any, b: Any) -> Any:
        a = np.asarray(a)
        ua, ub = unsigned(a), unsigned(np.asarray(b, dtype=a.dtype))
        check_divisor(ub, kind)
        quotient = np.floor_divide(ua, ub)
        if kind == "div":
            result = quotient
        elif kind == "rem":
            result = np.remainder(ua, ub)
        else:
            result = quotient + (np.remainder(ua, ub) != 0).astype(ua.dtype)
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


def as_torch(x: Any) -> torch.Tensor:
    """A torch tensor on the array's memory (zero copy; bf16 through its bits; a
    contiguous copy only for negative strides). torch only reads it."""
    if type(x) is np.ndarray and x.flags.writeable and x.dtype is not BF16:
        try:  # the common case first: no checks torch makes itself (a map body calls this 3 times an op)
            return torch.from_numpy(x)
        except ValueError:  # a negative stride
            pass
    x = np.asarray(x)
    if x.strides and min(x.strides) < 0:
        x = np.ascontiguousarray(x)
    bits = x.dtype == BF16
    if bits:
        x = x.view(np.int16)
    if x.flags.writeable or _READ_ONLY_WARNING["spent"]:
        tensor = torch.from_numpy(x)
    else:
        with warnings.catch_warnings():  # "not writable": torch only reads it
            warnings.simplefilter("ignore")
            tensor = torch.from_numpy(x)
        _READ_ONLY_WARNING["spent"] = True
    return tensor.view(torch.bfloat16) if bits else tensor


_READ_ONLY_WARNING = {"spent": False}
"""Whether torch's "The given NumPy array is not writable" warning has been
given: torch gives it once a process (TORCH_WARN_ONCE), so `as_torch`
silences only its first read-only array (catching warnings costs about
10 us a call, a map body's arithmetic on a weight a few)."""


def _as_numpy(tensor: torch.Tensor, dtype: np.dtype) -> np.ndarray:
    """The tensor as an array of `dtype` (bf16 as ml_dtypes.bfloat16)."""
    if dtype == BF16:
        return tensor.to(torch.bfloat16).view(torch.int16).numpy().view(BF16)
    return tensor.numpy().astype(dtype, copy=False)


def _widened(arrays: tuple[Any, ...]) -> tuple[Any, ...]:
    """f16/bf16 arrays as f32 (for an op torch's CPU build has no half kernel for)."""
    return tuple(np.asarray(a).astype(F32) if np.asarray(a).dtype in HALF_DTYPES else a for a in arrays)


def _broadcast_shape(operands: tuple[Any, ...]) -> tuple[int, ...]:
    """The shape the operands (arrays, scalars) broadcast to: NumPy's, in C
    (0.5 us of the calling thread's CPU a call; `torch.broadcast_shapes` runs
    torch's symbolic-shape guards in Python: 10 us)."""
    return np.broadcast(*operands).shape


def torch_math(function: Callable[..., torch.Tensor]) -> Callable[..., np.ndarray]:
    """A float math op (`torch.exp`, ...) on whole arrays as torch's CPU kernel
    computes it: what eager's ATen op gives, bit for bit (MKL's or SLEEF's
    vectorized transcendentals; NumPy's differ from them in the last bits of
    10-40% of float32 elements). f16/bf16 arrays run as torch's kernel of that
    type (float32 inside, rounded once, as eager). The arrays broadcast; with
    `out=` (an array of the result's shape and dtype) the kernel writes there."""

    def run(*operands: Any, out: np.ndarray | None = None) -> np.ndarray:
        tensors = [as_torch(x) for x in operands]
        if out is None:
            result = function(*tensors)
            return result.view(torch.int16).numpy().view(BF16) if result.dtype == torch.bfloat16 else result.numpy()
        if _broadcast_shape(operands) == out.shape and out.flags.writeable and min(out.strides, default=0) >= 0:
            function(*tensors, out=as_torch(out))
        else:
            out[...] = run(*operands)
        return out

    return run


TORCH_ARITHMETIC_ELEMENTS = 1 << 15
"""Elements from which a body's float add, subtract, multiply, divide or
negation may run as torch's kernel (`torch_arithmetic`): torch's parallel
grain (below it torch runs on one thread too, and its call costs about 2 us
more than numpy's). Host tuning, not a chip figure."""


def torch_arithmetic(ufunc: np.ufunc, function: Callable[..., torch.Tensor],
                     always: bool = False) -> Callable[..., np.ndarray]:
    """A map body's float arithmetic ufunc (add, subtract, multiply, divide,
    negative) that runs as torch's CPU kernel `function` when torch has more
    than one thread (with `always`, at one too: `map_body.arithmetic_on_torch`),
    on f32 or f64 arrays of one dtype and at least
    `TORCH_ARITHMETIC_ELEMENTS` elements: numpy's ufuncs run on the calling
    thread alone, torch's split over its pool, as eager's do. Else (one
    thread: torch's kernels were no faster there, bench/runtime_arith_ab.py)
    numpy's ufunc. Both round each element once (IEEE; a negation flips
    the sign bit, a NaN's too), so the result is the same bit for bit either
    way; in a run, torch's pool threads read and write subnormals as zero
    (`subnormals.pool_flushing`), so inside a body that flushes (an
    exponential's) the pool's share is the calling thread's bits too."""

    def run(*operands: Any, out: np.ndarray | None = None) -> np.ndarray:
        if (always or torch.get_num_threads() > 1) and _on_torch(operands, out):  # else numpy's, at once
            tensors = [as_torch(x) for x in operands]
            if out is None:
                return function(*tensors).numpy()
            if _broadcast_shape(operands) == out.shape:
                function(*tensors, out=torch.from_numpy(out))  # writable, forwards: `_on_torch`
                return out
        return ufunc(*operands) if out is None else ufunc(*operands, out=out)

    return run


_BITS = {1: np.uint8, 2: np.int16, 4: np.int32, 8: np.int64}
"""The integer type of each element size: a copy moves an element's bits."""


TORCH_COPY_ELEMENTS = TORCH_ARITHMETIC_ELEMENTS
"""Elements from which a layout copy runs as torch's `copy_` on its pool
(`assign`): torch's parallel grain, as for a body's arithmetic (below it
torch's copy runs on one thread too). Host tuning, not a chip figure. In a
model a copy's source was last written split over the pool (a product, a
norm, a map's arithmetic) and its reader reads it split again: NumPy's copy
on the calling thread reads the pool thread's half from the other core's
cache and leaves the whole result in its own, where the reader's pool thread
fetches its half while the calling thread waits at the join. Measured at two
threads in that state (bench/runtime_copy_threads.py, a window partition's
copy and a pool map reading it, least calling-thread CPU, torch's against
NumPy's): 37K elements 0.84x, 75K 0.67x, 150K 0.52x, 301K 0.40x; with the
source hot in the calling thread's cache and no reader (round 15's
measurement, which set 256K): 37K 2.39x, 75K 1.63x, 150K 1.10x, 301K 0.43x."""


def copies_on_torch(size: int) -> bool:
    """Whether a layout copy of `size` elements runs on torch's pool (`assign`)."""
    return size >= TORCH_COPY_ELEMENTS and torch.get_num_threads() > 1


def assign(out: np.ndarray, x: np.ndarray) -> None:
    """`out[...] = x` (`x` of `out`'s dtype, broadcast to its shape): a layout
    copy (a reshape or transpose of an array with strides, a slice, a
    broadcast, a compute's yield). At more than one torch thread and from
    `TORCH_COPY_ELEMENTS` elements it is torch's `copy_` of the
    elements' bits, split over torch's pool as eager's copies are (NumPy's
    copy runs on the calling thread alone); else, or where the arrays share
    memory or run backwards, NumPy's assignment. The same bits either way."""
    if copies_on_torch(out.size) and isinstance(x, np.ndarray) and x.dtype == out.dtype \
            and out.dtype.itemsize in _BITS and out.flags.writeable and min(out.strides) >= 0 \
            and min(x.strides, default=0) >= 0 and not np.may_share_memory(out, x):
        bits = _BITS[out.dtype.itemsize]
        torch.from_numpy(out.view(bits)).copy_(as_torch(x.view(bits)))
        return
    out[...] = x


def _on_torch(operands: tuple[Any, ...], out: np.ndarray | None) -> bool:
    """Whether `torch_arithmetic` runs these operands on torch at more than one thread (its docstring).
    The size is looked at first: a map body's small operands (a norm's per-channel
    terms) go to NumPy's ufunc after one comparison."""
    if out is not None and out.size < TORCH_ARITHMETIC_ELEMENTS:
        return False
    arrays = [x for x in operands if isinstance(x, np.ndarray) and x.ndim]
    if not arrays or (out is None and max(a.size for a in arrays) < TORCH_ARITHMETIC_ELEMENTS):
        return False
    dtype = arrays[0].dtype
    if dtype not in (F32, F64) or any(np.asarray(x).dtype != dtype for x in operands):
        return False
    if out is not None and (out.dtype != dtype or not out.flags.writeable or min(out.strides) < 0
                            or any(a is not out and np.may_share_memory(a, out) for a in arrays)):
        return False  # an operand overlapping `out` other than as itself: numpy's ufunc buffers it
    return True


def pointwise_call(op: PointwiseCallOp, result: np.dtype) -> Callable[..., np.ndarray]:
    """`rdu.pointwise_call` on whole arrays: torch's CPU kernel of the ATen op the
    call names (only an op on the pointwise allow-list resolves), its tensor
    arguments the (broadcasting) arrays, its other arguments the callee's
    constants; the chosen result cast to `result`. An op torch has no f16/bf16
    kernel for runs in f32, rounded once. The call's limits
    (`rducc.runtime.call_limits`) are checked first; an op whose work grows
    with an argument's value runs in chunks that Ctrl-C can stop between."""
    try:
        overload = op.overload()
        op.verify()
    except VerifyException as error:  # an unverified module: the runtime calls no other op
        raise RduccError(str(error)) from None
    name = op.callee.full_name
    constants = call_constants(op.callee)
    names = tensor_operands(op.callee)
    which = op.callee.result.data
    multiple = len(overload._schema.returns) > 1
    what = f"'rdu.pointwise_call' of {name}"

    def run(arrays: tuple[Any, ...]) -> np.ndarray:
        out = overload(**constants, **{name: as_torch(a) for name, a in zip(names, arrays)})
        return _as_numpy(out[which] if multiple else out, result)

    def limited(arrays: tuple[Any, ...]) -> np.ndarray:
        steps = check_call(name, {**constants, **dict(zip(names, arrays))}, what)
        return run_in_chunks(run, arrays, steps) if steps > 1 else run(arrays)

    def call(*arrays: Any) -> np.ndarray:
        try:
            return limited(arrays)
        except (RuntimeError, NotImplementedError) as error:
            if any(np.asarray(a).dtype in (F16, BF16) for a in arrays) and "not implemented for" in str(error):
                return limited(_widened(arrays))
            reason = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
            raise RduccError(f"{what} failed: {reason}") from None

    return call


__all__ = [
    "as_torch", "assign", "ceildivsi", "copies_on_torch", "divsi", "erf", "floordivsi", "i1_signed", "ipowi",
    "pointwise_call", "remsi", "round_half_away", "signed", "torch_math", "unsigned", "unsigned_division",
    "unsigned_extreme",
]
