"""The `rdu.map` body compiler: a scalar body becomes one vectorized Python function.

`compile_map` compiles a map once: every `arith`/`math` op of its body (and
`rdu.remf`) becomes one NumPy ufunc call (or a helper of
`rducc.runtime.elementwise`: float add/sub/mul/div run on torch's threads
when it has several; a maximum or minimum against a constant as torch's
clamp or threshold, `rducc.runtime.extremes`) on the broadcast input arrays (an
inference batch norm the frontend spelled out is one call of torch's kernel,
`rducc.runtime.batch_norms`), an
`rdu.pointwise_call` one call of torch's kernel of that ATen op, `arith.constant`
becomes a NumPy scalar of its type, and the result is broadcast to the map's
shape. f16/bf16/f8 arithmetic runs in f32 and is rounded once to the result
type (f8E4M3FN saturating at +-448, as torch); max/min propagate NaN like `torch.maximum`. The generated source is
kept on the function (`.source`) for debugging.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Sequence
from types import SimpleNamespace
from typing import Any

import numpy as np
import torch
from xdsl.dialects.builtin import DenseIntOrFPElementsAttr
from xdsl.ir import Block, Operation, SSAValue

from rducc.dialects.rdu.pointwise import PointwiseCallOp
from rducc.errors import RduccError
from rducc.runtime import activations, batch_norms, elementwise, extremes
from rducc.runtime.dtypes import (
    BF16,
    BOOL,
    F8E4M3FN,
    F16,
    F32,
    F64,
    HALF_DTYPES,
    UINT_DTYPES,
    compute_dtype,
    element_dtype,
    rounded,
    scalar_constant,
    tensor_signature,
)
from rducc.runtime.subnormals import subnormals_as_zero


class _BodyCompiler:
    """Turns a map body into Python source over NumPy; one line per op."""

    def __init__(self) -> None:
        self.namespace: dict[str, Any] = {
            "np": np,
            "_F32": F32,
            "_rounded": rounded,
            "_erf": elementwise.erf,
            "_round": elementwise.round_half_away,
            "_u": elementwise.unsigned,
            "_s": elementwise.signed,
            "_divsi": elementwise.divsi,
            "_floordivsi": elementwise.floordivsi,
            "_ceildivsi": elementwise.ceildivsi,
            "_remsi": elementwise.remsi,
            "_divui": elementwise.unsigned_division("div"),
            "_remui": elementwise.unsigned_division("rem"),
            "_ceildivui": elementwise.unsigned_division("ceil"),
            "_maxui": elementwise.unsigned_extreme(True),
            "_minui": elementwise.unsigned_extreme(False),
            "_ipowi": elementwise.ipowi,
            "_i1s": elementwise.i1_signed,
            "_tm": _TORCH_MATH,
            "_ta": _TORCH_ARITHMETIC,
            "_tk": activations.ON_ARRAYS,
            "_tx": _TORCH_EXTREMES,
            "_tb": batch_norms.ON_ARRAYS,
        }
        self.names: dict[SSAValue, str] = {}
        self.lines: list[str] = []
        self._constants: dict[tuple[str, Any], str] = {}

    def bind(self, value: Any, hint: str) -> str:
        """A namespace name for a Python object (dtype, constant, ...)."""
        key = (hint, repr(value) if not isinstance(value, np.dtype) else str(value))
        if key in self._constants:
            return self._constants[key]
        name = f"_{hint}{len(self.namespace)}"
        self.namespace[name] = value
        self._constants[key] = name
        return name

    def dtype_name(self, dtype: np.dtype) -> str:
        return self.bind(dtype, "dt")

    def rounded(self, expression: str, dtype: np.dtype) -> str:
        """`expression` rounded to `dtype` (f8E4M3FN saturating, as torch rounds)."""
        if dtype == F8E4M3FN:
            return f"_rounded({expression}, {self.dtype_name(dtype)})"
        return f"{expression}.astype({self.dtype_name(dtype)})"


def _dtype_of(value: SSAValue) -> np.dtype:
    return element_dtype(value.type)


def _float_op(ufunc: str, arity: int) -> Callable[[_BodyCompiler, Operation, list[str]], str]:
    """A float op that runs in f32 for f16/bf16 and rounds back once."""

    def emit(c: _BodyCompiler, op: Operation, a: list[str]) -> str:
        dtype = _dtype_of(op.results[0])
        args = a[:arity]
        if dtype in HALF_DTYPES:
            widened = ", ".join(f"{x}.astype(_F32)" for x in args)
            return c.rounded(f"{ufunc}({widened})", dtype)
        return f"{ufunc}({', '.join(args)})"

    return emit


_TORCH_MATH = SimpleNamespace(**{
    name: elementwise.torch_math(getattr(torch, name))
    for name in ("exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "sqrt", "sin", "cos", "tan", "asin",
                 "acos", "atan", "sinh", "cosh", "tanh", "asinh", "acosh", "atanh", "atan2", "pow")
})
"""The float math ops a body runs as torch's CPU kernels (`elementwise.torch_math`),
by torch's name: what eager's op of that name computes, bit for bit."""


_ARITHMETIC_ON_THREADS = {
    name: elementwise.torch_arithmetic(getattr(np, name), function)
    for name, function in (("add", torch.add), ("subtract", torch.sub), ("multiply", torch.mul),
                           ("divide", torch.div), ("negative", torch.neg))
}
"""A body's float arithmetic when torch has more than one thread: torch's
kernel on its threads for large arrays (`elementwise.torch_arithmetic`).
Negation too (the sign bit flipped, NaN's included, both ways): alone on the
calling thread between ops on the pool it moved each array between the two
cores' caches (Mixtral's `x / (1 + exp(-x))`)."""

_TORCH_ARITHMETIC = SimpleNamespace(**{name: getattr(np, name) for name in _ARITHMETIC_ON_THREADS})
"""A body's float add, subtract, multiply, divide and negation (`_ta.NAME`): numpy's
ufunc at one torch thread (no Python frame between a body and the ufunc), the
entries of `_ARITHMETIC_ON_THREADS` above one (`arithmetic_for_threads` binds
them at each run); the same bits either way."""


_ARITHMETIC_ON_TORCH = {
    name: elementwise.torch_arithmetic(getattr(np, name), function, always=True)
    for name, function in (("add", torch.add), ("subtract", torch.sub), ("multiply", torch.mul),
                           ("divide", torch.div), ("negative", torch.neg))
}
"""A body's float arithmetic as torch's kernel at any thread count (`arithmetic_on_torch`)."""


@contextlib.contextmanager
def arithmetic_on_torch() -> Iterator[None]:
    """Inside, a body's float add, subtract, multiply, divide and negation run
    as torch's kernels (`_ARITHMETIC_ON_TORCH`) at one thread too: on operands
    whose memory orders differ (a channels-last view and a channels-first
    array) NumPy's ufunc iterates 3-6x slower than torch's TensorIterator
    (an add of 1x192x28x28: 461 against 76 us into a channels-last array,
    `rducc.runtime.ordered_maps`). The same bits (one IEEE rounding)."""
    saved = {name: getattr(_TORCH_ARITHMETIC, name) for name in _ARITHMETIC_ON_TORCH}
    for name, dispatch in _ARITHMETIC_ON_TORCH.items():
        setattr(_TORCH_ARITHMETIC, name, dispatch)
    try:
        yield
    finally:
        for name, bound in saved.items():
            setattr(_TORCH_ARITHMETIC, name, bound)


@contextlib.contextmanager
def extremes_as_numpy() -> Iterator[None]:
    """Inside, bodies compiled take every float maximum and minimum as
    NumPy's ufunc (`np.maximum`, `np.minimum`), none as torch's kernel
    (`_emit_extreme`): the reference a test or an A/B compares against."""
    plain = {name: _EMITTERS[name] for name in ("arith.maximumf", "arith.minimumf")}
    _EMITTERS["arith.maximumf"] = _float_op("np.maximum", 2)
    _EMITTERS["arith.minimumf"] = _float_op("np.minimum", 2)
    try:
        yield
    finally:
        _EMITTERS.update(plain)


_BATCH_NORMS = {"find": batch_norms.batch_norms}
"""How `compile_map` finds a body's batch norms (`batch_norms_op_by_op` finds none)."""


@contextlib.contextmanager
def batch_norms_op_by_op() -> Iterator[None]:
    """Inside, bodies compiled run an inference batch norm op by op (a
    multiply and an add of per-channel terms), none as torch's kernel
    (`rducc.runtime.batch_norms`): the reference a test or an A/B compares against."""
    _BATCH_NORMS["find"] = lambda *args: batch_norms.BatchNorms()
    try:
        yield
    finally:
        _BATCH_NORMS["find"] = batch_norms.batch_norms


def arithmetic_for_threads() -> None:
    """Bind a body's arithmetic (`_TORCH_ARITHMETIC`) for torch's thread count
    now: called at every run (cheap when the count has not changed)."""
    threaded = torch.get_num_threads() > 1
    if (_TORCH_ARITHMETIC.add is not np.add) != threaded:
        for name, dispatch in _ARITHMETIC_ON_THREADS.items():
            setattr(_TORCH_ARITHMETIC, name, dispatch if threaded else getattr(np, name))


def _torch_op(name: str, arity: int) -> Callable[[_BodyCompiler, Operation, list[str]], str]:
    """A float math op as torch's kernel on the whole arrays (`_TORCH_MATH`):
    f16/bf16 as torch's kernel of that type (float32 inside, one rounding, as
    eager's), f8 in f32 rounded once."""

    def emit(c: _BodyCompiler, op: Operation, a: list[str]) -> str:
        dtype = _dtype_of(op.results[0])
        args = a[:arity]
        if dtype in HALF_DTYPES and dtype not in (F16, BF16):
            widened = ", ".join(f"{x}.astype(_F32)" for x in args)
            return c.rounded(f"_tm.{name}({widened})", dtype)
        return f"_tm.{name}({', '.join(args)})"

    return emit


def _int_op(ufunc: str, bool_ufunc: str | None = None) -> Callable[[_BodyCompiler, Operation, list[str]], str]:
    """A binary integer op; `bool_ufunc` is its meaning on i1 (None: not defined there)."""

    def emit(c: _BodyCompiler, op: Operation, a: list[str]) -> str:
        if _dtype_of(op.results[0]) == BOOL:
            if bool_ufunc is None:
                raise RduccError(f"'{op.name}' on i1 is not supported by the executor")
            return f"{bool_ufunc}({a[0]}, {a[1]})"
        return f"{ufunc}({a[0]}, {a[1]})"

    return emit


_CMPF = {
    "oeq": "np.equal({0}, {1})",
    "ogt": "np.greater({0}, {1})",
    "oge": "np.greater_equal({0}, {1})",
    "olt": "np.less({0}, {1})",
    "ole": "np.less_equal({0}, {1})",
    "one": "(np.less({0}, {1}) | np.greater({0}, {1}))",
    "ord": "np.logical_not(np.isnan({0}) | np.isnan({1}))",
    "ueq": "np.logical_not(np.less({0}, {1}) | np.greater({0}, {1}))",
    "ugt": "np.logical_not(np.less_equal({0}, {1}))",
    "uge": "np.logical_not(np.less({0}, {1}))",
    "ult": "np.logical_not(np.greater_equal({0}, {1}))",
    "ule": "np.logical_not(np.greater({0}, {1}))",
    "une": "np.not_equal({0}, {1})",
    "uno": "(np.isnan({0}) | np.isnan({1}))",
    "false": "np.zeros(np.broadcast_shapes(np.shape({0}), np.shape({1})), dtype=bool)",
    "true": "np.ones(np.broadcast_shapes(np.shape({0}), np.shape({1})), dtype=bool)",
}
_CMPF_ORDER = [
    "false", "oeq", "ogt", "oge", "olt", "ole", "one", "ord",
    "ueq", "ugt", "uge", "ult", "ule", "une", "uno", "true",
]  # fmt: skip  (arith's predicate numbering)
_CMPI_ORDER = ["eq", "ne", "slt", "sle", "sgt", "sge", "ult", "ule", "ugt", "uge"]
_CMPI_UFUNC = {"eq": "np.equal", "ne": "np.not_equal", "lt": "np.less", "le": "np.less_equal",
               "gt": "np.greater", "ge": "np.greater_equal"}  # fmt: skip


def _emit_cmpf(c: _BodyCompiler, op: Operation, a: list[str]) -> str:
    predicate = _CMPF_ORDER[op.predicate.value.data]  # type: ignore[attr-defined]
    x, y = a
    if _dtype_of(op.operands[0]) in HALF_DTYPES:
        x, y = f"{x}.astype(_F32)", f"{y}.astype(_F32)"
    return _CMPF[predicate].format(x, y)


def _emit_cmpi(c: _BodyCompiler, op: Operation, a: list[str]) -> str:
    predicate = _CMPI_ORDER[op.predicate.value.data]  # type: ignore[attr-defined]
    x, y = a
    is_bool = _dtype_of(op.operands[0]) == BOOL
    if predicate in ("eq", "ne"):
        return f"{_CMPI_UFUNC[predicate]}({x}, {y})"
    signed, base = predicate[0] == "s", predicate[1:]
    if is_bool and signed:
        x, y = f"_i1s({x})", f"_i1s({y})"
    elif not is_bool and not signed:
        x, y = f"_u({x})", f"_u({y})"
    return f"{_CMPI_UFUNC[base]}({x}, {y})"


def _emit_constant(c: _BodyCompiler, op: Operation, a: list[str]) -> str:
    value = op.value  # type: ignore[attr-defined]
    if isinstance(value, DenseIntOrFPElementsAttr):
        raise RduccError("'arith.constant' of a tensor cannot appear in an 'rdu.map' body")
    return c.bind(scalar_constant(value, _dtype_of(op.results[0])), "k")


def _emit_cast(c: _BodyCompiler, op: Operation, a: list[str]) -> str:
    """Conversions with arith's semantics (fptosi truncates, extui/uitofp read unsigned)."""
    source, target = _dtype_of(op.operands[0]), _dtype_of(op.results[0])
    x, to = a[0], c.dtype_name(target)
    kind = op.name.removeprefix("arith.")
    if kind in ("extf", "truncf"):
        return c.rounded(f"np.asarray({x})", target)
    if kind in ("fptosi", "fptoui"):
        wide = f"np.asarray({x}).astype(_F32)" if source in HALF_DTYPES else f"np.asarray({x})"
        if target == BOOL:
            return f"(np.trunc({wide}) != 0)"
        if kind == "fptoui":
            unsigned = c.dtype_name(UINT_DTYPES[target])
            return f"_s({wide}.astype({unsigned}), {to})"
        # out-of-range values are undefined in arith; a direct C cast gives what
        # torch's CPU kernels give (NaN -> INT_MIN for i32/i64)
        return f"{wide}.astype({to})"
    if kind in ("sitofp", "uitofp"):
        if source == BOOL:
            value = f"np.asarray({x})" if kind == "uitofp" else f"_i1s({x})"
        else:
            value = f"_u({x})" if kind == "uitofp" else f"np.asarray({x})"
        if target in HALF_DTYPES:
            return c.rounded(f"{value}.astype(_F32)", target)
        return f"{value}.astype({to})"
    if kind in ("extsi", "extui"):
        if source == BOOL:
            return f"np.asarray({x}).astype({to})" if kind == "extui" else f"_i1s({x}).astype({to})"
        if kind == "extui":
            return f"_u({x}).astype({to})"
        return f"np.asarray({x}).astype({to})"
    if kind == "trunci":
        if target == BOOL:
            return f"((np.asarray({x}) & 1) != 0)"
        return f"np.asarray({x}).astype({to})"
    if kind == "bitcast":
        return f"np.asarray({x}).view({to})"
    raise AssertionError(kind)


def _emit_select(c: _BodyCompiler, op: Operation, a: list[str]) -> str:
    return f"np.where({a[0]}, {a[1]}, {a[2]})"


def _emit_fpowi(c: _BodyCompiler, op: Operation, a: list[str]) -> str:
    dtype = _dtype_of(op.results[0])
    compute = c.dtype_name(compute_dtype(dtype))
    base = f"np.power({a[0]}.astype({compute}), np.asarray({a[1]}).astype({compute}))"
    return c.rounded(base, dtype)


def _emit_shift(kind: str) -> Callable[[_BodyCompiler, Operation, list[str]], str]:
    def emit(c: _BodyCompiler, op: Operation, a: list[str]) -> str:
        dtype = _dtype_of(op.results[0])
        if dtype == BOOL:
            raise RduccError(f"'{op.name}' on i1 is not supported by the executor")
        if kind == "shli":
            return f"np.left_shift({a[0]}, {a[1]})"
        if kind == "shrsi":
            return f"np.right_shift({a[0]}, {a[1]})"
        return f"_s(np.right_shift(_u({a[0]}), _u({a[1]})), {c.dtype_name(dtype)})"

    return emit


def _emit_abs(c: _BodyCompiler, op: Operation, a: list[str]) -> str:
    return f"np.abs({a[0]})"


def _emit_rsqrt(c: _BodyCompiler, op: Operation, a: list[str]) -> str:
    dtype = _dtype_of(op.results[0])
    x = f"{a[0]}.astype(_F32)" if dtype in HALF_DTYPES else a[0]
    out = f"np.reciprocal(np.sqrt({x}))"
    return c.rounded(out, dtype) if dtype in HALF_DTYPES else out


def _emit_erf(c: _BodyCompiler, op: Operation, a: list[str]) -> str:
    return f"_erf({a[0]})"


def _emit_fma(c: _BodyCompiler, op: Operation, a: list[str]) -> str:
    dtype = _dtype_of(op.results[0])
    wide = c.dtype_name(F64)
    x, y, z = (f"np.asarray({v}).astype({wide})" for v in a)
    return c.rounded(f"({x} * {y} + {z})", dtype)


def _constant_operand(op: Operation) -> tuple[int, np.generic] | None:
    """The index and value of the one float `arith.constant` operand of a binary body op, if it has one."""
    found = [(index, operand.owner) for index, operand in enumerate(op.operands)
             if isinstance(operand.owner, Operation) and operand.owner.name == "arith.constant"]
    if len(found) != 1:
        return None
    index, constant = found[0]
    value = constant.value  # type: ignore[attr-defined]
    if isinstance(value, DenseIntOrFPElementsAttr):
        return None
    return index, scalar_constant(value, _dtype_of(constant.results[0]))


def _emit_extreme(extreme: str) -> Callable[[_BodyCompiler, Operation, list[str]], str]:
    """`np.maximum` / `np.minimum`; of an f32/f64 value and a constant, as
    torch's kernel where it gives NumPy's bits (`rducc.runtime.extremes`:
    NumPy's loop against a scalar is slow, and on the calling thread alone)."""
    plain = _float_op(f"np.{extreme}", 2)

    def emit(c: _BodyCompiler, op: Operation, a: list[str]) -> str:
        constant = _constant_operand(op)
        if constant is None or _dtype_of(op.results[0]) not in (F32, F64):
            return plain(c, op, a)
        index, value = constant
        if not extremes.usable(extreme, index == 0, value):
            return plain(c, op, a)
        return f"_tx.{extreme}_{'left' if index == 0 else 'right'}({a[0]}, {a[1]})"

    return emit


_TORCH_EXTREMES = SimpleNamespace(**{
    f"{extreme}_{'left' if first else 'right'}": extremes.against_constant(extreme, first)
    for extreme, first in extremes.KINDS
})
"""A body's maximum or minimum of an array and a constant as torch's kernel
(`_tx.maximum_right(x, k)` is `np.maximum(x, k)`; `left`: the constant first)."""


def _emit_pointwise_call(c: _BodyCompiler, op: Operation, a: list[str]) -> str:
    """torch's own kernel of the ATen op, on the whole (broadcasting) arrays."""
    assert isinstance(op, PointwiseCallOp)
    call = c.bind(elementwise.pointwise_call(op, _dtype_of(op.results[0])), "pw")
    return f"{call}({', '.join(a)})"


def _emit_round(c: _BodyCompiler, op: Operation, a: list[str]) -> str:
    dtype = _dtype_of(op.results[0])
    if dtype in HALF_DTYPES:
        return c.rounded(f"_round({a[0]}.astype(_F32))", dtype)
    return f"_round({a[0]})"


_EMITTERS: dict[str, Callable[[_BodyCompiler, Operation, list[str]], str]] = {
    "arith.constant": _emit_constant,
    # float arithmetic
    "arith.addf": _float_op("_ta.add", 2),
    "arith.subf": _float_op("_ta.subtract", 2),
    "arith.mulf": _float_op("_ta.multiply", 2),
    "arith.divf": _float_op("_ta.divide", 2),
    "arith.negf": _float_op("_ta.negative", 1),
    "arith.maximumf": _emit_extreme("maximum"),
    "arith.minimumf": _emit_extreme("minimum"),
    "arith.maxnumf": _float_op("np.fmax", 2),
    "arith.minnumf": _float_op("np.fmin", 2),
    # integer arithmetic (i1: add/sub are xor, mul is and)
    "arith.addi": _int_op("np.add", "np.logical_xor"),
    "arith.subi": _int_op("np.subtract", "np.logical_xor"),
    "arith.muli": _int_op("np.multiply", "np.logical_and"),
    "arith.divsi": _int_op("_divsi"),
    "arith.divui": _int_op("_divui"),
    "arith.floordivsi": _int_op("_floordivsi"),
    "arith.ceildivsi": _int_op("_ceildivsi"),
    "arith.ceildivui": _int_op("_ceildivui"),
    "arith.remsi": _int_op("_remsi"),
    "arith.remui": _int_op("_remui"),
    # extremes; on i1 the signed order is true (-1) < false (0)
    "arith.maxsi": _int_op("np.maximum", "np.logical_and"),
    "arith.minsi": _int_op("np.minimum", "np.logical_or"),
    "arith.maxui": _int_op("_maxui", "np.logical_or"),
    "arith.minui": _int_op("_minui", "np.logical_and"),
    "arith.andi": _int_op("np.bitwise_and", "np.logical_and"),
    "arith.ori": _int_op("np.bitwise_or", "np.logical_or"),
    "arith.xori": _int_op("np.bitwise_xor", "np.logical_xor"),
    "arith.shli": _emit_shift("shli"),
    "arith.shrsi": _emit_shift("shrsi"),
    "arith.shrui": _emit_shift("shrui"),
    # comparison and selection
    "arith.cmpf": _emit_cmpf,
    "arith.cmpi": _emit_cmpi,
    "arith.select": _emit_select,
    # conversions
    **{
        f"arith.{name}": _emit_cast
        for name in ("extf", "truncf", "fptosi", "fptoui", "sitofp", "uitofp",
                     "extsi", "extui", "trunci", "bitcast")  # fmt: skip
    },
    # math
    "math.absf": _float_op("np.abs", 1),
    "math.absi": _emit_abs,
    "math.ceil": _float_op("np.ceil", 1),
    "math.floor": _float_op("np.floor", 1),
    "math.trunc": _float_op("np.trunc", 1),
    "math.roundeven": _float_op("np.rint", 1),
    "math.round": _emit_round,
    "math.exp": _torch_op("exp", 1),
    "math.exp2": _torch_op("exp2", 1),
    "math.expm1": _torch_op("expm1", 1),
    "math.log": _torch_op("log", 1),
    "math.log2": _torch_op("log2", 1),
    "math.log10": _torch_op("log10", 1),
    "math.log1p": _torch_op("log1p", 1),
    "math.sqrt": _torch_op("sqrt", 1),
    "math.rsqrt": _emit_rsqrt,
    "math.cbrt": _float_op("np.cbrt", 1),
    "math.sin": _torch_op("sin", 1),
    "math.cos": _torch_op("cos", 1),
    "math.tan": _torch_op("tan", 1),
    "math.asin": _torch_op("asin", 1),
    "math.acos": _torch_op("acos", 1),
    "math.atan": _torch_op("atan", 1),
    "math.sinh": _torch_op("sinh", 1),
    "math.cosh": _torch_op("cosh", 1),
    "math.tanh": _torch_op("tanh", 1),
    "math.asinh": _torch_op("asinh", 1),
    "math.acosh": _torch_op("acosh", 1),
    "math.atanh": _torch_op("atanh", 1),
    "math.atan2": _torch_op("atan2", 2),
    "math.copysign": _float_op("np.copysign", 2),
    "math.powf": _torch_op("pow", 2),
    "math.erf": _emit_erf,
    "math.fpowi": _emit_fpowi,
    "math.ipowi": _int_op("_ipowi"),
    "math.fma": _emit_fma,
    "rdu.remf": _float_op("np.fmod", 2),
    "rdu.pointwise_call": _emit_pointwise_call,
}


def map_body_ops() -> list[str]:
    """The `arith`/`math` ops (and `rdu.remf`) a map body may use."""
    return sorted(_EMITTERS)


def _outer_ufunc(expression: str) -> bool:
    """Whether `expression` is one call `np.NAME(...)` of a NumPy ufunc,
    `_tm.NAME(...)` of a torch kernel (`_TORCH_MATH`) or `_ta.NAME(...)` of
    a body's arithmetic (`_TORCH_ARITHMETIC`), which take `out=`."""
    head, paren, _ = expression.partition("(")
    ufunc = head.startswith("np.") and isinstance(getattr(np, head[3:], None), np.ufunc)
    torch_kernel = any(head.startswith(f"{prefix}.") and hasattr(kernels, head[4:])
                       for prefix, kernels in (("_tm", _TORCH_MATH), ("_ta", _TORCH_ARITHMETIC),
                                               ("_tk", activations.ON_ARRAYS), ("_tx", _TORCH_EXTREMES),
                                               ("_tb", batch_norms.ON_ARRAYS)))
    if not paren or not (ufunc or torch_kernel):
        return False
    depth = 0
    for position, char in enumerate(expression[len(head):]):
        depth += {"(": 1, ")": -1}.get(char, 0)
        if depth == 0:
            return position == len(expression) - len(head) - 1
    return False


def _last_uses(body: Sequence[Operation], yielded: SSAValue) -> dict[SSAValue, int]:
    """The index of the last body op reading each value (the yielded value: past the end)."""
    last: dict[SSAValue, int] = {}
    for index, op in enumerate(body):
        for operand in op.operands:
            last[operand] = index
    last[yielded] = len(body)
    return last


def compile_body(
    block: Block,
    shapes: Sequence[tuple[int, ...]] | None = None,
    result: tuple[tuple[int, ...], np.dtype] | None = None,
    cones: activations.Cones | None = None,
    norms: batch_norms.BatchNorms | None = None,
) -> Callable[..., Any]:
    """A Python function of one array per block argument returning the yielded value.

    The function computes on whatever (broadcast-compatible) shapes it gets and
    returns an array or NumPy scalar of the yielded element type. With `out=`
    (an array of the map's shape and type) it writes the result there: the
    last ufunc of the yielded value writes straight into it; `.kernel_into(context,
    out, *arrays)` runs the same lines with `out` given. With the static
    `shapes` of the arguments, a ufunc writes into a temporary of its own
    shape and type that no later op reads (`out=`), instead of a new array:
    a long elementwise chain makes few temporaries. With the map's `result`
    shape and dtype too, a value of that shape and dtype no dead temporary
    takes is computed into `out` itself while `out` holds nothing live
    (`_Lines.scratch`: a batch norm's `x * scale + shift` then its ReLU are three passes
    over `out`, no new array a call); a call whose `out` shares memory with
    an input runs the lines without that (the input's bytes would be
    overwritten before they are read).
    `cones`: parts of the body that compute an activation of one input
    (`activations.cones`), each one call of torch's kernel; `norms`: parts
    that compute an inference batch norm (`batch_norms.batch_norms`), each
    one call of torch's kernel.
    """
    params = [f"a{index}" for index in range(len(block.args))]
    cones = cones or activations.Cones()
    norms = norms or batch_norms.BatchNorms()
    plain = _Lines(block, shapes, None, cones, norms)
    source = f"def body({', '.join([*params, 'out=None'])}):\n" + plain.text
    # the same lines as a runtime kernel's `into(context, out, *inputs)`: no wrapper frames per call
    into_source = f"def into(_context, {', '.join(['out', *params])}):\n" + plain.text
    namespace = plain.c.namespace
    scratch = _Lines(block, shapes, result, cones, norms) if result is not None else None
    if scratch is not None and scratch.scratch:
        namespace = {**plain.c.namespace, **scratch.c.namespace, "_plain_body": None, "_plain_into": None}
        exec(compile(source + "\n" + into_source, "<rdu.map body>", "exec"), namespace)  # noqa: S102
        namespace["_plain_body"], namespace["_plain_into"] = namespace["body"], namespace["into"]
        overlap = " or ".join(f"np.may_share_memory(out, {a})" for a in params) or "False"
        guard = f"    if out is not None and ({overlap}):\n"
        source = (f"def body({', '.join([*params, 'out=None'])}):\n{guard}"
                  f"        return _plain_body({', '.join([*params, 'out=out'])})\n" + scratch.text)
        into_source = (f"def into(_context, {', '.join(['out', *params])}):\n{guard}"
                       f"        return _plain_into(_context, {', '.join(['out', *params])})\n" + scratch.text)
    exec(compile(source + "\n" + into_source, "<rdu.map body>", "exec"), namespace)  # noqa: S102
    function = namespace["body"]
    function.source = source
    function.kernel_into = namespace["into"]
    return function


class _Lines:
    """A map body's lines of Python (`compile_body`). With the map's `result`
    shape and dtype, `out` is one more temporary: a ufunc of that shape and
    dtype writes there when no dead temporary takes its result and the value
    `out` holds is read by no later op; a value in `out` read by an expression
    other than a ufunc that writes elsewhere (which may return a view of it:
    `astype(copy=False)`) keeps `out` for good. `scratch` says whether a value
    other than the yielded one is computed into `out`. The ops of a cone
    (`activations.Cones`) or a batch norm (`batch_norms.BatchNorms`) are one
    line: its root's, a call of torch's kernel."""

    def __init__(self, block: Block, shapes: Sequence[tuple[int, ...]] | None,
                 result: tuple[tuple[int, ...], np.dtype] | None, cones: activations.Cones,
                 norms: batch_norms.BatchNorms) -> None:
        c = self.c = _BodyCompiler()
        for index, arg in enumerate(block.args):
            c.names[arg] = f"a{index}"
        *body, terminator = list(block.ops)
        if terminator.name != "rdu.yield" or len(terminator.operands) != 1:
            raise RduccError("an 'rdu.map' body must end in 'rdu.yield' of one value")
        yielded = terminator.operands[0]
        static: dict[SSAValue, tuple[int, ...]] = dict(zip(block.args, shapes)) if shapes is not None else {}
        last = _last_uses(body, yielded)
        temporaries: set[SSAValue] = set()  # arrays a ufunc of this body made, of a known shape
        writes_out = False  # the yielded value's ufunc writes into `out`
        held: SSAValue | None = None  # the value computed into `out` (with `result`)
        kept = result is None  # `out` is no temporary (or may be aliased by a live value)
        self.scratch = False
        for index, op in enumerate(body):
            if op in cones.inside or op in norms.inside:
                continue
            emit = _EMITTERS.get(op.name)
            if emit is None:
                raise RduccError(
                    f"the executor cannot run '{op.name}' inside an 'rdu.map' body "
                    f"(supported: {', '.join(map_body_ops())})"
                )
            if len(op.results) != 1:
                raise RduccError(f"'{op.name}' in an 'rdu.map' body must have one result")
            value = op.results[0]
            dtype = element_dtype(value.type)  # rejects unsupported scalar types early
            if op in cones.roots:
                activation, arg = cones.roots[op]
                call = c.bind(cones.guarded[op], "tkg") if op in cones.guarded else f"_tk.{activation}"
                expression = f"{call}({c.names[arg]})"
                if arg in static:
                    static[value] = static[arg]
            elif op in norms.roots:
                expression = _batch_norm_call(c, norms.roots[op])
                if norms.roots[op].x in static:
                    static[value] = static[norms.roots[op].x]
            else:
                expression = emit(c, op, [c.names[v] for v in op.operands])
                if op.name == "arith.constant":
                    static[value] = ()
                elif all(v in static for v in op.operands):
                    static[value] = np.broadcast_shapes(*(static[v] for v in op.operands))
            outer = _outer_ufunc(expression)
            if held is not None and held in op.operands and not outer:
                kept = True
            if outer:
                target = "out" if value == yielded else _dead_temporary(op, index, value, dtype, static,
                                                                        temporaries, last, c)
                if target is None and not kept and result is not None and (static.get(value), dtype) == result \
                        and (held is None or last.get(held, -1) <= index):
                    target, self.scratch = "out", True
                if target is not None:
                    expression = f"{expression[:-1]}, out={target})"
                writes_out |= value == yielded
                if target == "out":
                    held = value
                elif static.get(value):
                    temporaries.add(value)
            name = f"v{index}"
            c.names[value] = name
            c.lines.append(f"    {name} = {expression}")
        result_name = c.names[yielded]
        if not writes_out:
            c.lines.append(f"    if out is not None:\n        out[...] = {result_name}\n        return out")
        c.lines.append(f"    return {result_name}")
        self.text = "\n".join(c.lines) + "\n"


def _batch_norm_call(c: _BodyCompiler, norm: batch_norms.BatchNorm) -> str:
    """The line of a batch norm's root: one call of torch's kernel (`batch_norms.batch_norm`)."""
    operands = [c.names[a] if a is not None else "None" for a in (norm.x, norm.mean, norm.var, norm.weight, norm.bias)]
    return f"_tb.batch_norm({', '.join(operands)}, {c.bind(norm.eps, 'eps')})"


def _dead_temporary(
    op: Operation,
    index: int,
    result: SSAValue,
    dtype: np.dtype,
    static: dict[SSAValue, tuple[int, ...]],
    temporaries: set[SSAValue],
    last: dict[SSAValue, int],
    c: _BodyCompiler,
) -> str | None:
    """The name of an operand temporary this op reads last, of the result's
    shape and dtype: the ufunc may write its result there."""
    shape = static.get(result)
    if not shape:
        return None
    for operand in op.operands:
        if (operand in temporaries and last.get(operand) == index and static.get(operand) == shape
                and element_dtype(operand.type) == dtype):
            temporaries.discard(operand)
            return c.names[operand]
    return None


def compile_map(op: Operation) -> Callable[..., np.ndarray]:
    """An `rdu.map` as a function of its input arrays returning the result array.

    Inputs broadcast to the result by NumPy rules; the result may be a
    read-only broadcast view when the body does not depend on every input dim
    (a fill is a single scalar broadcast to the whole shape). `.into(out,
    *inputs)` writes the result into `out` instead (an array of the map's
    shape and type no input overlaps); `.kernel_into(context, out, *inputs)`
    is the same as a runtime kernel's `into` (`rducc.runtime.registry`).
    """
    shapes = [tensor_signature(v.type)[0] for v in op.operands]
    shape, dtype = tensor_signature(op.results[0].type)
    block = op.regions[0].block
    first = [list(op.operands).index(value) for value in op.operands]
    cones = activations.cones(block, first, compile_body)
    norms = _BATCH_NORMS["find"](block, shapes, shape, dtype, cones.inside | set(cones.roots))
    body = compile_body(block, shapes, (shape, dtype), cones, norms)
    known = _known_activation(body, block, shapes, shape, dtype)
    if known is not None:
        body = known
    elif any(o.name in _EXPONENTIALS and o not in cones.inside and o not in cones.roots for o in block.ops):
        body = _flushing_subnormals(body)

    def run_map(*inputs: np.ndarray) -> np.ndarray:
        result = np.asarray(body(*inputs))  # under the run's np.errstate(all="ignore")
        if result.dtype != dtype:
            raise AssertionError(
                f"rdu.map body computed {result.dtype}, expected {dtype}:\n{body.source}"  # type: ignore[attr-defined]
            )
        if result.shape != shape:
            result = np.broadcast_to(result, shape)
        return result

    def into(out: np.ndarray, *inputs: np.ndarray) -> None:
        body(*inputs, out=out)

    run_map.source = body.source  # type: ignore[attr-defined]
    run_map.into = into  # type: ignore[attr-defined]
    run_map.kernel_into = body.kernel_into  # type: ignore[attr-defined]
    run_map.in_place = getattr(body, "in_place", None)  # type: ignore[attr-defined]
    return run_map


_EXPONENTIALS = ("math.exp", "math.exp2", "math.expm1")
"""Body ops whose results are subnormal for a large range of inputs (exp of
-88 to -104 in float32: a masked softmax's far-below-the-max scores). One
inside an activation run as torch's kernel is not: the kernel reads and
writes subnormals as eager's does."""


def _flushing_subnormals(body: Callable[..., Any]) -> Callable[..., Any]:
    """`body` (and its `kernel_into`) run with subnormals read and written as
    zero (`rducc.runtime.subnormals`: NumPy's exp and the ops after it take
    ~5x longer on them)."""
    plain, plain_into = body, body.kernel_into  # type: ignore[attr-defined]

    def flushed(*inputs: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
        with subnormals_as_zero():
            return plain(*inputs, out=out)

    def kernel_into(context: Any, out: np.ndarray, *inputs: np.ndarray) -> None:
        with subnormals_as_zero():
            plain_into(context, out, *inputs)

    flushed.source = "# subnormals as zero\n" + body.source  # type: ignore[attr-defined]
    flushed.kernel_into = kernel_into  # type: ignore[attr-defined]
    return flushed


# --------------------------------------------------------------------------
# bodies that compute one of torch's activations: torch's one-pass kernel
# --------------------------------------------------------------------------

def _known_activation(
    body: Callable[..., Any], block: Block, shapes: Sequence[tuple[int, ...]], shape: tuple[int, ...],
    dtype: np.dtype,
) -> Callable[..., Any] | None:
    """`body` as torch's kernel of the activation it computes
    (`rducc.runtime.activations`), if it is a one-input f32 body of several
    ops that agrees with one on `activations.PROBE`; else None."""
    computing = [op for op in block.ops if op.name not in ("arith.constant", "rdu.yield")]
    if dtype != F32 or len(block.args) != 1 or tuple(shapes[0]) != tuple(shape) \
            or len(computing) < activations.MIN_OPS or element_dtype(block.args[0].type) != F32:
        return None
    name = activations.matching(body)
    if name is None:
        return None
    return _torch_body(activations.KERNELS[name], body, name, not activations.agrees_off_finite(name, body))


def _torch_body(kernel: Callable[..., Any], op_by_op: Callable[..., Any], name: str,
                guarded: bool) -> Callable[..., Any]:
    """A map body (`body(a0, out=None)` and `.kernel_into(context, out, a0)`)
    running torch's kernel of an activation on one array.

    `guarded`: where this CPU's kernel does not keep the body's values at
    inputs that are not finite (`activations.agrees_off_finite`: exact GELU
    gives nan at +inf with AVX-512, where `x * Phi(x)` is inf), elements that
    are not finite take `op_by_op`, the body's own decomposition
    (`activations.patch_off_finite`: one pass over the input). Unguarded
    (the kernel agrees), no such pass.

    The kernel writes straight into `out` (a C-contiguous array of the map's
    shape no input overlaps), no temporary copied after it. `.in_place(x)`
    computes the same values over `x` itself (a writable array of positive
    strides; the off-finite inputs read before the kernel overwrites them):
    `rducc.runtime.in_place_maps`."""

    def body(x: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
        x = x if x.flags.c_contiguous else np.ascontiguousarray(x)  # (never a rank-0 one: it would get rank 1)
        result = np.empty(x.shape, x.dtype) if out is None else out
        written = torch.from_numpy(result)
        kernel(torch.from_numpy(x), out=written)
        if guarded:
            activations.patch_off_finite(result, x, op_by_op)
        return result

    def kernel_into(context: Any, out: np.ndarray, x: np.ndarray) -> None:
        body(x, out)

    def in_place(x: np.ndarray) -> None:
        off = activations.off_finite(x, x.shape) if guarded else None  # read before the kernel overwrites them
        tensor = torch.from_numpy(x)
        kernel(tensor, out=tensor)
        if off is not None:
            activations.patch(x, off, op_by_op)

    where = "does where x is not finite" if guarded else "keeps the same values where x is not finite"
    header = f"# torch's {name} (the body below computes it op by op, and {where})\n"
    body.source = header + op_by_op.source  # type: ignore[attr-defined]
    body.kernel_into = kernel_into  # type: ignore[attr-defined]
    body.in_place = in_place  # type: ignore[attr-defined]
    return body


__all__ = ["compile_body", "compile_map", "map_body_ops"]
