"""NumPy execution kernels for the `rdu` dialect: one function per op.

Every kernel works on whole NumPy arrays (never element by element) and
returns a fresh array or a read-only view of its input; no kernel writes into
its arguments, so the executor can share arrays between values freely.

Element types map to NumPy dtypes one to one (`element_dtype`): f64, f32,
f16, bf16 (`ml_dtypes.bfloat16`), i64, i32, i16, i8, ui8 (NumPy uint8) and
i1 (NumPy bool). Signless integers are stored as signed NumPy integers; ops
that read them as unsigned (`divui`, `cmpi ult`, `extui`, ...) reinterpret
the bits. ui8 is unsigned already, so those ops read it as it is.

Numerics follow PyTorch's CPU kernels where the IR leaves room:

- f16/bf16 arithmetic (in map bodies, matmul, conv, pooling, reductions and
  scans) runs in f32 and is rounded once to the result type;
- f32 sums, products and scans accumulate in f64 and round once (torch's CPU
  cumsum does the same; for sums it is at least as accurate as torch's
  cascade sum); f64 stays f64; integer reductions wrap in their own type;
- max/min (elementwise and reductions) propagate NaN like `torch.maximum`
  and `torch.amax`; argmax/argmin return the first NaN or the first extreme.

`rdu.map` bodies are compiled once (`compile_map`) into a Python function:
every `arith`/`math` op becomes one NumPy ufunc call on the broadcast input
arrays, `arith.constant` becomes a NumPy scalar of its type, and the result is
broadcast to the map's shape. The generated source is kept on the function
(`.source`) for debugging.
"""

from __future__ import annotations

import math as pymath
from collections.abc import Callable, Sequence
from typing import Any

import ml_dtypes
import numpy as np
from numpy.lib.stride_tricks import sliding_window_view
from xdsl.dialects.builtin import (
    BFloat16Type,
    DenseIntOrFPElementsAttr,
    Float16Type,
    Float32Type,
    Float64Type,
    FloatAttr,
    IntegerAttr,
    IntegerType,
    Signedness,
    TensorType,
)
from xdsl.ir import Attribute, Block, Operation, SSAValue

from rducc.errors import RduccError

BF16 = np.dtype(ml_dtypes.bfloat16)
F16 = np.dtype(np.float16)
F32 = np.dtype(np.float32)
F64 = np.dtype(np.float64)
BOOL = np.dtype(np.bool_)
I64 = np.dtype(np.int64)
U8 = np.dtype(np.uint8)
HALF_DTYPES = (F16, BF16)

_INT_DTYPES = {8: np.dtype(np.int8), 16: np.dtype(np.int16), 32: np.dtype(np.int32), 64: I64}
_UINT_DTYPES = {
    np.dtype(np.int8): np.dtype(np.uint8),
    np.dtype(np.int16): np.dtype(np.uint16),
    np.dtype(np.int32): np.dtype(np.uint32),
    I64: np.dtype(np.uint64),
    U8: U8,
}


# --------------------------------------------------------------------------
# Element types
# --------------------------------------------------------------------------


def element_dtype(element_type: Attribute) -> np.dtype:
    """The NumPy dtype of one of rducc's element types."""
    if isinstance(element_type, Float64Type):
        return F64
    if isinstance(element_type, Float32Type):
        return F32
    if isinstance(element_type, Float16Type):
        return F16
    if isinstance(element_type, BFloat16Type):
        return BF16
    if isinstance(element_type, IntegerType):
        width = element_type.width.data
        if element_type.signedness.data == Signedness.UNSIGNED:
            if width == 8:
                return U8
        elif width == 1:
            return BOOL
        elif width in _INT_DTYPES:
            return _INT_DTYPES[width]
    raise RduccError(
        f"element type {element_type} has no NumPy equivalent "
        "(supported: f64, f32, f16, bf16, i64, i32, i16, i8, ui8, i1)"
    )


def tensor_signature(tensor_type: Attribute) -> tuple[tuple[int, ...], np.dtype]:
    """(shape, dtype) of a static tensor type."""
    assert isinstance(tensor_type, TensorType), tensor_type
    return tuple(tensor_type.get_shape()), element_dtype(tensor_type.element_type)


def compute_dtype(dtype: np.dtype) -> np.dtype:
    """Where arithmetic on `dtype` runs: f32 for f16/bf16, else the type itself."""
    return F32 if dtype in HALF_DTYPES else dtype


def _accumulator(dtype: np.dtype) -> np.dtype:
    """Accumulator of sums, products and scans: f16/bf16 -> f32, f32 -> f64."""
    if dtype in HALF_DTYPES:
        return F32
    if dtype == F32:
        return F64
    return dtype


def dense_to_array(attr: DenseIntOrFPElementsAttr) -> np.ndarray:
    """The value of a dense tensor attribute as an array of its element type."""
    shape, dtype = tensor_signature(attr.type)
    values = attr.get_values()
    if dtype.kind == "f" or dtype == BF16:
        flat = np.array(values, dtype=F64)
    else:
        flat = np.array(values, dtype=I64)
        flat = flat != 0 if dtype == BOOL else flat
    count = pymath.prod(shape)
    if flat.size == 1 and count != 1:
        flat = np.repeat(flat, count)
    return flat.astype(dtype).reshape(shape)


def scalar_constant(attr: Attribute, dtype: np.dtype) -> np.generic:
    """A NumPy scalar of `dtype` holding an integer or float attribute's value."""
    if isinstance(attr, FloatAttr):
        return dtype.type(attr.value.data)
    if isinstance(attr, IntegerAttr):
        value = attr.value.data
        if dtype == BOOL:
            return np.bool_(value != 0)
        return np.array(value, dtype=I64).astype(dtype)[()]
    raise RduccError(f"cannot use {attr} as a scalar constant")


# --------------------------------------------------------------------------
# Scalar helpers used by compiled map bodies (all vectorized)
# --------------------------------------------------------------------------

_ERF_A = (3.1611237438705656, 113.864154151050156, 377.485237685302021,
          3209.37758913846947, 0.185777706184603153)  # fmt: skip
_ERF_B = (23.6012909523441209, 244.024637934444173, 1282.61652607737228,
          2844.23683343917062)  # fmt: skip
_ERF_C = (0.564188496988670089, 8.88314979438837594, 66.1191906371416295,
          298.635138197400131, 881.95222124176909, 1712.04761263407058,
          2051.07837782607147, 1230.33935479799725, 2.15311535474403846e-8)  # fmt: skip
_ERF_D = (15.7449261107098347, 117.693950891312499, 537.181101862009858,
          1621.38957456669019, 3290.79923573345963, 4362.61909014324716,
          3439.36767414372164, 1230.33935480374942)  # fmt: skip
_ERF_P = (0.305326634961232344, 0.360344899949804439, 0.125781726111229246,
          0.0160837851487422766, 6.58749161529837803e-4, 0.0163153871373020978)  # fmt: skip
_ERF_Q = (2.56852019228982242, 1.87295284992346047, 0.527905102951428412,
          0.0605183413124413191, 0.00233520497626869185)  # fmt: skip
_ONE_OVER_SQRT_PI = 0.56418958354775628695


def _erf_f64(x: np.ndarray) -> np.ndarray:
    """erf in f64 by W. J. Cody's rational Chebyshev approximations (Math. Comp.
    1969): erf directly for |x| <= 0.46875, else 1 - erfc with erfc from two
    rational fits (|x| <= 4 and beyond). Accurate to a few f64 ulps."""
    with np.errstate(all="ignore"):
        y = np.abs(x)
        ysq = y * y
        num, den = _ERF_A[4] * ysq, ysq
        for a, b in zip(_ERF_A[:3], _ERF_B[:3]):
            num, den = (num + a) * ysq, (den + b) * ysq
        near_zero = x * (num + _ERF_A[3]) / (den + _ERF_B[3])

        num, den = _ERF_C[8] * y, y
        for c, d in zip(_ERF_C[:7], _ERF_D[:7]):
            num, den = (num + c) * y, (den + d) * y
        middle = (num + _ERF_C[7]) / (den + _ERF_D[7])

        z = 1.0 / ysq
        num, den = _ERF_P[5] * z, z
        for p, q in zip(_ERF_P[:4], _ERF_Q[:4]):
            num, den = (num + p) * z, (den + q) * z
        tail = (_ONE_OVER_SQRT_PI - z * (num + _ERF_P[4]) / (den + _ERF_Q[4])) / y

        # exp(-y*y) without the cancellation of forming y*y directly
        head = np.trunc(y * 16.0) / 16.0
        scale = np.exp(-head * head) * np.exp(-(y - head) * (y + head))
        erfc = np.where(y <= 4.0, middle, tail) * scale
        erfc = np.where(y >= 26.543, 0.0, erfc)
        far = np.copysign((0.5 - erfc) + 0.5, x)
        return np.where(y <= 0.46875, near_zero, far)


def erf(x: Any) -> np.ndarray:
    """Vectorized error function, computed in f64 and rounded to x's dtype."""
    x = np.asarray(x)
    return _erf_f64(x.astype(F64)).astype(x.dtype)


def _round_half_away(x: Any) -> Any:
    """math.round: to nearest, ties away from zero."""
    whole = np.trunc(x)
    return np.where(np.abs(x - whole) >= 0.5, whole + np.sign(x), whole)


def _unsigned(x: Any) -> np.ndarray:
    x = np.asarray(x)
    return x.view(_UINT_DTYPES[x.dtype])


def _signed(x: Any, dtype: np.dtype) -> np.ndarray:
    return np.asarray(x).view(dtype)


def _divsi(a: Any, b: Any) -> Any:
    """Signed division truncating toward zero (x / 0 gives 0: arith leaves it undefined)."""
    a, b = np.asarray(a), np.asarray(b)
    safe = np.where(b == 0, np.ones_like(b), b)
    quotient = np.floor_divide(a, safe)
    remainder = a - quotient * safe
    fix = (remainder != 0) & ((a < 0) != (safe < 0))
    return np.where(b == 0, np.zeros_like(quotient), quotient + fix.astype(quotient.dtype))


def _floordivsi(a: Any, b: Any) -> Any:
    a, b = np.asarray(a), np.asarray(b)
    safe = np.where(b == 0, np.ones_like(b), b)
    return np.where(b == 0, np.zeros_like(a), np.floor_divide(a, safe))


def _ceildivsi(a: Any, b: Any) -> Any:
    a, b = np.asarray(a), np.asarray(b)
    safe = np.where(b == 0, np.ones_like(b), b)
    quotient = np.floor_divide(a, safe)
    bump = (a - quotient * safe != 0).astype(quotient.dtype)
    return np.where(b == 0, np.zeros_like(quotient), quotient + bump)


def _remsi(a: Any, b: Any) -> Any:
    """Remainder with the sign of the dividend (C semantics)."""
    a, b = np.asarray(a), np.asarray(b)
    safe = np.where(b == 0, np.ones_like(b), b)
    return np.where(b == 0, np.zeros_like(a), np.fmod(a, safe))


def _unsigned_division(kind: str) -> Callable[[Any, Any], Any]:
    """divui, remui, ceildivui: the bits read as unsigned (x / 0 gives 0)."""

    def apply(a: Any, b: Any) -> Any:
        a = np.asarray(a)
        ua, ub = _unsigned(a), _unsigned(np.asarray(b, dtype=a.dtype))
        safe = np.where(ub == 0, np.ones_like(ub), ub)
        quotient = np.floor_divide(ua, safe)
        if kind == "div":
            result = quotient
        elif kind == "rem":
            result = np.remainder(ua, safe)
        else:
            result = quotient + (np.remainder(ua, safe) != 0).astype(ua.dtype)
        result = np.where(ub == 0, np.zeros_like(result), result)
        return np.asarray(result).astype(ua.dtype).view(a.dtype)

    return apply


def _unsigned_extreme(largest: bool) -> Callable[[Any, Any], Any]:
    """maxui, minui."""

    def apply(a: Any, b: Any) -> Any:
        a = np.asarray(a)
        ua, ub = _unsigned(a), _unsigned(np.asarray(b, dtype=a.dtype))
        return (np.maximum if largest else np.minimum)(ua, ub).view(a.dtype)

    return apply


def _ipowi(a: Any, b: Any) -> Any:
    """Integer power; negative exponents give 0 except for bases 1 and -1."""
    a, b = np.asarray(a), np.asarray(b)
    positive = np.power(a, np.where(b < 0, np.zeros_like(b), b))
    one = np.ones_like(positive)
    odd = (b % 2) != 0
    negative = np.where(a == 1, one, np.where(a == -1, np.where(odd, -one, one), 0 * one))
    return np.where(b < 0, negative, positive).astype(a.dtype)


def _i1_signed(x: Any) -> np.ndarray:
    """An i1 read as a signed number: true is -1."""
    return np.negative(np.asarray(x).astype(np.int8))


# --------------------------------------------------------------------------
# rdu.map: compiling scalar bodies into vectorized functions
# --------------------------------------------------------------------------


class _BodyCompiler:
    """Turns a map body into Python source over NumPy; one line per op."""

    def __init__(self) -> None:
        self.namespace: dict[str, Any] = {
            "np": np,
            "_F32": F32,
            "_erf": erf,
            "_round": _round_half_away,
            "_u": _unsigned,
            "_s": _signed,
            "_divsi": _divsi,
            "_floordivsi": _floordivsi,
            "_ceildivsi": _ceildivsi,
            "_remsi": _remsi,
            "_divui": _unsigned_division("div"),
            "_remui": _unsigned_division("rem"),
            "_ceildivui": _unsigned_division("ceil"),
            "_maxui": _unsigned_extreme(True),
            "_minui": _unsigned_extreme(False),
            "_ipowi": _ipowi,
            "_i1s": _i1_signed,
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


def _dtype_of(value: SSAValue) -> np.dtype:
    return element_dtype(value.type)


def _float_op(ufunc: str, arity: int) -> Callable[[_BodyCompiler, Operation, list[str]], str]:
    """A float op that runs in f32 for f16/bf16 and rounds back once."""

    def emit(c: _BodyCompiler, op: Operation, a: list[str]) -> str:
        dtype = _dtype_of(op.results[0])
        args = a[:arity]
        if dtype in HALF_DTYPES:
            widened = ", ".join(f"{x}.astype(_F32)" for x in args)
            return f"{ufunc}({widened}).astype({c.dtype_name(dtype)})"
        return f"{ufunc}({', '.join(args)})"

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


def _emit_maxmin_int(kind: str) -> Callable[[_BodyCompiler, Operation, list[str]], str]:
    """maxsi/minsi/maxui/minui; on i1 the signed order is true(-1) < false(0)."""

    def emit(c: _BodyCompiler, op: Operation, a: list[str]) -> str:
        if _dtype_of(op.results[0]) == BOOL:
            bool_ufunc = {"maxsi": "np.logical_and", "minsi": "np.logical_or",
                          "maxui": "np.logical_or", "minui": "np.logical_and"}[kind]  # fmt: skip
            return f"{bool_ufunc}({a[0]}, {a[1]})"
        if kind == "maxsi":
            return f"np.maximum({a[0]}, {a[1]})"
        if kind == "minsi":
            return f"np.minimum({a[0]}, {a[1]})"
        return f"_{kind}({a[0]}, {a[1]})"

    return emit


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
        return f"np.asarray({x}).astype({to})"
    if kind in ("fptosi", "fptoui"):
        wide = f"np.asarray({x}).astype(_F32)" if source in HALF_DTYPES else f"np.asarray({x})"
        if target == BOOL:
            return f"(np.trunc({wide}) != 0)"
        if kind == "fptoui":
            unsigned = c.dtype_name(_UINT_DTYPES[target])
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
            return f"{value}.astype(_F32).astype({to})"
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
    return f"{base}.astype({c.dtype_name(dtype)})"


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
    return f"{out}.astype({c.dtype_name(dtype)})" if dtype in HALF_DTYPES else out


def _emit_erf(c: _BodyCompiler, op: Operation, a: list[str]) -> str:
    return f"_erf({a[0]})"


def _emit_fma(c: _BodyCompiler, op: Operation, a: list[str]) -> str:
    dtype = _dtype_of(op.results[0])
    wide = c.dtype_name(F64)
    x, y, z = (f"np.asarray({v}).astype({wide})" for v in a)
    return f"({x} * {y} + {z}).astype({c.dtype_name(dtype)})"


def _emit_round(c: _BodyCompiler, op: Operation, a: list[str]) -> str:
    dtype = _dtype_of(op.results[0])
    if dtype in HALF_DTYPES:
        return f"_round({a[0]}.astype(_F32)).astype({c.dtype_name(dtype)})"
    return f"_round({a[0]})"


_EMITTERS: dict[str, Callable[[_BodyCompiler, Operation, list[str]], str]] = {
    "arith.constant": _emit_constant,
    # float arithmetic
    "arith.addf": _float_op("np.add", 2),
    "arith.subf": _float_op("np.subtract", 2),
    "arith.mulf": _float_op("np.multiply", 2),
    "arith.divf": _float_op("np.divide", 2),
    "arith.negf": _float_op("np.negative", 1),
    "arith.maximumf": _float_op("np.maximum", 2),
    "arith.minimumf": _float_op("np.minimum", 2),
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
    "arith.maxsi": _emit_maxmin_int("maxsi"),
    "arith.minsi": _emit_maxmin_int("minsi"),
    "arith.maxui": _emit_maxmin_int("maxui"),
    "arith.minui": _emit_maxmin_int("minui"),
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
    "math.exp": _float_op("np.exp", 1),
    "math.exp2": _float_op("np.exp2", 1),
    "math.expm1": _float_op("np.expm1", 1),
    "math.log": _float_op("np.log", 1),
    "math.log2": _float_op("np.log2", 1),
    "math.log10": _float_op("np.log10", 1),
    "math.log1p": _float_op("np.log1p", 1),
    "math.sqrt": _float_op("np.sqrt", 1),
    "math.rsqrt": _emit_rsqrt,
    "math.cbrt": _float_op("np.cbrt", 1),
    "math.sin": _float_op("np.sin", 1),
    "math.cos": _float_op("np.cos", 1),
    "math.tan": _float_op("np.tan", 1),
    "math.asin": _float_op("np.arcsin", 1),
    "math.acos": _float_op("np.arccos", 1),
    "math.atan": _float_op("np.arctan", 1),
    "math.sinh": _float_op("np.sinh", 1),
    "math.cosh": _float_op("np.cosh", 1),
    "math.tanh": _float_op("np.tanh", 1),
    "math.asinh": _float_op("np.arcsinh", 1),
    "math.acosh": _float_op("np.arccosh", 1),
    "math.atanh": _float_op("np.arctanh", 1),
    "math.atan2": _float_op("np.arctan2", 2),
    "math.copysign": _float_op("np.copysign", 2),
    "math.powf": _float_op("np.power", 2),
    "math.erf": _emit_erf,
    "math.fpowi": _emit_fpowi,
    "math.ipowi": _int_op("_ipowi"),
    "math.fma": _emit_fma,
    "rdu.remf": _float_op("np.fmod", 2),
}


def map_body_ops() -> list[str]:
    """The `arith`/`math` ops (and `rdu.remf`) a map body may use."""
    return sorted(_EMITTERS)


def compile_body(block: Block) -> Callable[..., Any]:
    """A Python function of one array per block argument returning the yielded value.

    The function computes on whatever (broadcast-compatible) shapes it gets and
    returns an array or NumPy scalar of the yielded element type.
    """
    c = _BodyCompiler()
    params = []
    for index, arg in enumerate(block.args):
        name = f"a{index}"
        c.names[arg] = name
        params.append(name)
    *body, terminator = list(block.ops)
    if terminator.name != "rdu.yield" or len(terminator.operands) != 1:
        raise RduccError("an 'rdu.map' body must end in 'rdu.yield' of one value")
    for index, op in enumerate(body):
        emit = _EMITTERS.get(op.name)
        if emit is None:
            raise RduccError(
                f"the executor cannot run '{op.name}' inside an 'rdu.map' body "
                f"(supported: {', '.join(map_body_ops())})"
            )
        if len(op.results) != 1:
            raise RduccError(f"'{op.name}' in an 'rdu.map' body must have one result")
        element_dtype(op.results[0].type)  # reject unsupported scalar types early
        expression = emit(c, op, [c.names[v] for v in op.operands])
        name = f"v{index}"
        c.names[op.results[0]] = name
        c.lines.append(f"    {name} = {expression}")
    c.lines.append(f"    return {c.names[terminator.operands[0]]}")
    source = f"def body({', '.join(params)}):\n" + "\n".join(c.lines) + "\n"
    exec(compile(source, "<rdu.map body>", "exec"), c.namespace)  # noqa: S102
    function = c.namespace["body"]
    function.source = source  # type: ignore[attr-defined]
    return function


def compile_map(op: Operation) -> Callable[..., np.ndarray]:
    """An `rdu.map` as a function of its input arrays returning the result array.

    Inputs broadcast to the result by NumPy rules; the result may be a
    read-only broadcast view when the body does not depend on every input dim
    (a fill is a single scalar broadcast to the whole shape).
    """
    body = compile_body(op.regions[0].block)
    shape, dtype = tensor_signature(op.results[0].type)

    def run_map(*inputs: np.ndarray) -> np.ndarray:
        with np.errstate(all="ignore"):
            result = np.asarray(body(*inputs))
        if result.dtype != dtype:
            raise AssertionError(
                f"rdu.map body computed {result.dtype}, expected {dtype}:\n{body.source}"  # type: ignore[attr-defined]
            )
        if result.shape != shape:
            result = np.broadcast_to(result, shape)
        return result

    run_map.source = body.source  # type: ignore[attr-defined]
    return run_map


# --------------------------------------------------------------------------
# Compute
# --------------------------------------------------------------------------


def matmul(
    lhs: np.ndarray,
    rhs: np.ndarray,
    dtype: np.dtype | None = None,
    transpose_rhs: bool = False,
) -> np.ndarray:
    """Batched `[..., M, K] x [..., K, N]`, batch dims broadcast; with
    `transpose_rhs` the rhs is given as `[..., N, K]`.

    f16/bf16 operands are multiplied in f32 and rounded once to `dtype` (the
    result element type, default the operands'); a wider result (bf16 x bf16
    -> f32) is the unrounded f32 product.
    """
    dtype = lhs.dtype if dtype is None else np.dtype(dtype)
    if transpose_rhs:
        rhs = np.swapaxes(rhs, -1, -2)
    with np.errstate(all="ignore"):
        if lhs.dtype in HALF_DTYPES:
            return np.matmul(lhs.astype(F32), rhs.astype(F32)).astype(dtype, copy=False)
        return np.matmul(lhs, rhs).astype(dtype, copy=False)


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


def reduce(x: np.ndarray, kind: str, dims: Sequence[int], keepdim: bool = False) -> np.ndarray:
    """`rdu.reduce`: sum, prod, max, min, any, all, argmax, argmin over `dims`.

    Empty max/min reductions give the identity (-inf/+inf or the integer
    limits); argmax/argmin of an empty dim raise, as in PyTorch.
    """
    kind = str(kind)
    axes = _axes(x, dims)
    dtype = x.dtype
    with np.errstate(all="ignore"):
        if kind in ("sum", "prod"):
            accumulate = np.sum if kind == "sum" else np.prod
            acc = _accumulator(dtype)
            source = x.astype(acc) if acc != dtype else x
            result = accumulate(source, axis=axes, keepdims=keepdim, dtype=acc)
            return np.asarray(result).astype(dtype)
        if kind in ("max", "min"):
            compute = compute_dtype(dtype)
            source = x.astype(compute) if compute != dtype else x
            largest = kind == "max"
            function = np.max if largest else np.min
            result = function(
                source, axis=axes, keepdims=keepdim, initial=_max_identity(compute, largest)
            )
            return np.asarray(result).astype(dtype)
        if kind in ("any", "all"):
            function = np.any if kind == "any" else np.all
            return np.asarray(function(x.astype(BOOL, copy=False), axis=axes, keepdims=keepdim))
        if kind in ("argmax", "argmin"):
            if len(dims) != 1:
                raise RduccError(f"'rdu.reduce {kind}' reduces exactly one dim")
            if x.ndim == 0:
                return np.zeros((), dtype=I64)
            compute = compute_dtype(dtype)
            source = x.astype(compute) if compute != dtype else x
            function = np.argmax if kind == "argmax" else np.argmin
            return np.asarray(function(source, axis=dims[0], keepdims=keepdim)).astype(I64)
    raise RduccError(f"unknown reduction kind '{kind}'")


def scan(x: np.ndarray, kind: str, dim: int) -> np.ndarray:
    """`rdu.scan`: inclusive cumulative sum or product along `dim`."""
    kind = str(kind)
    if x.ndim == 0:
        return x
    acc = _accumulator(x.dtype)
    function = {"sum": np.cumsum, "prod": np.cumprod}.get(kind)
    if function is None:
        raise RduccError(f"unknown scan kind '{kind}'")
    source = x.astype(acc) if acc != x.dtype else x
    with np.errstate(all="ignore"):
        return function(source, axis=dim, dtype=acc).astype(x.dtype)


def window_output_size(
    size: int, window: int, stride: int, pad: int, dilation: int, ceil_mode: bool
) -> int:
    """Output length of a sliding window (PyTorch's formula, ceil_mode included)."""
    span = dilation * (window - 1) + 1
    numerator = size + 2 * pad - span
    out = (-(-numerator // stride) if ceil_mode else numerator // stride) + 1
    if ceil_mode and (out - 1) * stride >= size + pad:
        out -= 1
    return max(out, 0)


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
        window_output_size(n, k, s, p, d, ceil_mode)
        for n, k, s, p, d in zip(sizes, window, stride, padding, dilation)
    ]
    spans = [d * (k - 1) + 1 for k, d in zip(window, dilation)]
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
) -> np.ndarray:
    """N-d convolution (cross-correlation, as PyTorch) of NC[spatial] by O(C/groups)[kernel].

    im2col by a strided sliding-window view, then one tensordot (BLAS) per
    group; f16/bf16 run in f32 and round once to `dtype` (the result element
    type, default the input's; f32 for a bf16 conv keeps the f32 sums).
    """
    dtype = x.dtype if dtype is None else np.dtype(dtype)
    compute = compute_dtype(dtype)
    spatial = x.ndim - 2
    kernel = weight.shape[2:]
    windows = _windows(
        x.astype(compute, copy=False), kernel, stride, padding, dilation, False, 0
    )  # (N, C, *out, *kernel)
    w = weight.astype(compute, copy=False)
    channels_in = x.shape[1] // groups
    channels_out = weight.shape[0] // groups
    x_axes = [1, *range(2 + spatial, 2 + 2 * spatial)]
    w_axes = [1, *range(2, 2 + spatial)]
    parts = []
    with np.errstate(all="ignore"):
        for g in range(groups):
            xg = windows[:, g * channels_in : (g + 1) * channels_in]
            wg = w[g * channels_out : (g + 1) * channels_out]
            product = np.tensordot(xg, wg, axes=(x_axes, w_axes))  # (N, *out, O/g)
            parts.append(np.moveaxis(product, -1, 1))
    result = parts[0] if groups == 1 else np.concatenate(parts, axis=1)
    return result.astype(dtype, copy=False)


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
    """
    kind = str(kind)
    dtype = x.dtype
    compute = compute_dtype(dtype)
    source = x.astype(compute, copy=False)
    axes = tuple(range(-len(window), 0))
    with np.errstate(all="ignore"):
        if kind == "max":
            fill = _max_identity(compute, True)
            views = _windows(source, window, stride, padding, dilation, ceil_mode, fill)
            if 0 in views.shape:
                return np.zeros(views.shape[: -len(window)], dtype=dtype)
            return views.max(axis=axes).astype(dtype, copy=False)
        if kind == "avg":
            views = _windows(source, window, stride, padding, dilation, ceil_mode, 0)
            total = views.sum(axis=axes, dtype=_accumulator(compute))
            return (total / pymath.prod(window)).astype(dtype)
    raise RduccError(f"unknown pooling kind '{kind}'")


# --------------------------------------------------------------------------
# Layout and data movement
# --------------------------------------------------------------------------


def reshape(x: np.ndarray, shape: Sequence[int]) -> np.ndarray:
    """Same elements in row-major order, new shape."""
    return np.reshape(x, tuple(shape))


def transpose(x: np.ndarray, perm: Sequence[int]) -> np.ndarray:
    """Result dim i is input dim perm[i]."""
    return np.transpose(x, tuple(perm))


def broadcast(x: np.ndarray, shape: Sequence[int]) -> np.ndarray:
    """A read-only view expanding size-1 and missing leading dims."""
    return np.broadcast_to(x, tuple(shape))


def slice_(
    x: np.ndarray, offsets: Sequence[int], strides: Sequence[int], sizes: Sequence[int]
) -> np.ndarray:
    """result[i] = x[offsets + i * strides] for i < sizes (a view)."""
    index = tuple(
        slice(o, o + (n - 1) * s + 1, s) if n > 0 else slice(0, 0)
        for o, s, n in zip(offsets, strides, sizes)
    )
    return x[index]


def concat(inputs: Sequence[np.ndarray], dim: int) -> np.ndarray:
    """Joins along `dim`."""
    return np.concatenate(list(inputs), axis=dim)


def gather(source: np.ndarray, indices: Sequence[np.ndarray], dim: int) -> np.ndarray:
    """Advanced indexing of dims [dim, dim + len(indices)) by broadcast index arrays.

    Result shape: source.shape[:dim] + broadcast(indices) + source.shape[dim + k:].
    Negative indices count from the end (as in PyTorch's `index`).
    """
    key = (slice(None),) * dim + tuple(np.asarray(i) for i in indices)
    try:
        return source[key]
    except IndexError as error:
        raise RduccError(f"rdu.gather: {error}") from None


SCATTER_UFUNCS = {"sum": np.add, "prod": np.multiply, "max": np.maximum, "min": np.minimum}
"""The ufunc whose `.at` combines an `rdu.scatter`'s writes, by its `reduce`."""


def scatter(x: np.ndarray, index: np.ndarray, source: np.ndarray, dim: int, reduce: str | None) -> np.ndarray:
    """`rdu.scatter`: `source` written into a copy of `x` along `dim` at `index`,
    on whole arrays: the reduction's `ufunc.at` with `reduce` (np.add.at for
    sum; f16/bf16 combined in f32, rounded once; NaN propagates through max
    and min, as torch's), else one assignment of each position's last write."""
    index = np.asarray(index).astype(I64, copy=False)
    size = x.shape[dim]
    if index.size and (index.min() < 0 or index.max() >= size):
        raise RduccError(f"rdu.scatter: an index is out of range [0, {size}) along dim {dim}")
    positions = list(np.indices(index.shape, sparse=True))
    positions[dim] = index
    flat = np.ravel_multi_index(tuple(np.broadcast_arrays(*positions)), x.shape).reshape(-1)
    values = np.asarray(source).reshape(-1)
    out = x.astype(compute_dtype(x.dtype))
    with np.errstate(all="ignore"):
        if reduce is not None:
            SCATTER_UFUNCS[reduce].at(out.reshape(-1), flat, values.astype(out.dtype))
        else:
            written, first_from_end = np.unique(flat[::-1], return_index=True)
            out.reshape(-1)[written] = values[len(flat) - 1 - first_from_end]
    return out.astype(x.dtype, copy=False)


def iota(size: int, start: int | float, step: int | float, dtype: np.dtype) -> np.ndarray:
    """[start + i * step for i < size], computed in f64 (floats) or i64 and rounded once."""
    if dtype.kind == "f" or dtype == BF16:
        return (float(start) + np.arange(size, dtype=F64) * float(step)).astype(dtype)
    with np.errstate(all="ignore"):
        return (int(start) + np.arange(size, dtype=I64) * int(step)).astype(dtype)


def argsort(x: np.ndarray, dim: int, descending: bool) -> np.ndarray:
    """`rdu.argsort`: a stable sort's order along `dim` (NaN largest, as torch;
    descending puts NaN first and keeps equal elements in their order)."""
    keys = np.moveaxis(x, dim, -1)
    if keys.dtype.kind == "f" or keys.dtype == BF16:
        keys = keys.astype(F64 if keys.dtype == F64 else F32)
    if not descending:
        order = np.argsort(keys, axis=-1, kind="stable")
    elif keys.dtype.kind == "f":
        order = np.lexsort((-keys, ~np.isnan(keys)), axis=-1)
    else:
        order = np.argsort(~keys if keys.dtype.kind in "iub" else -keys, axis=-1, kind="stable")
    return np.moveaxis(order, -1, dim).astype(I64)


class _RunCounter:
    """How many program runs have started in this process (see `random`)."""

    runs = 0


def start_run() -> None:
    """Called once at the start of every program run: random ops draw anew."""
    _RunCounter.runs += 1


def random(shape: Sequence[int], dtype: np.dtype, distribution: str, seed: int) -> np.ndarray:
    """`rdu.random`: uniform [0, 1) or standard normal numbers, drawn in f64 by
    numpy's PCG64 from the op's seed and the current run number and rounded
    once to `dtype`. Within one run the same op gives the same values; a
    uniform value that rounds up to 1.0 becomes the largest value below it."""
    generator = np.random.default_rng([seed, _RunCounter.runs])
    shape = tuple(shape)
    if distribution == "normal":
        return generator.standard_normal(shape).astype(dtype)
    below_one = np.array(1.0 - float(ml_dtypes.finfo(dtype).epsneg), dtype=dtype)
    return np.minimum(generator.random(shape).astype(dtype), below_one)


__all__ = [
    "BF16",
    "argsort",
    "broadcast",
    "compile_body",
    "compile_map",
    "concat",
    "conv",
    "dense_to_array",
    "element_dtype",
    "erf",
    "gather",
    "iota",
    "map_body_ops",
    "matmul",
    "pool",
    "random",
    "reduce",
    "reshape",
    "scalar_constant",
    "scan",
    "scatter",
    "slice_",
    "start_run",
    "tensor_signature",
    "transpose",
    "window_output_size",
]
