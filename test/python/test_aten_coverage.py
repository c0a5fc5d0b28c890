"""Core ATen coverage: one tiny model per op case, compiled and run, against eager.

Each case is a function of tensors written from PyTorch's documentation of
the op (its arguments, dtypes, broadcasting, negative dims, keepdim, rank-0
and zero-size forms). It is exported once, compiled by `rducc.compile` at
-O0 (every op its own kernel) and -O2 (fused), both through the whole
pipeline (fusion, tiling, placement, SRAM allocation) and run in the
runtime. Integer and bool results must equal eager bit for bit; float
results are compared with `torch.testing.assert_close`'s per-dtype
tolerances.

Ops rducc does not cover yet are listed in docs/aten-coverage.md; the tests at
the end check that list against the code and that each gives the
unsupported-operator error.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
import torch
import torch.ao.quantization.fx._decomposed  # noqa: F401  (registers quantized_decomposed)
import torch.nn.functional as F

import rducc
from rducc.errors import UnsupportedOpsError
from rducc.frontend.importer import supported_ops
from rducc.tools.coverage import MISSING_OPS, PARTIAL_FORMS, core_aten_supported, coverage_markdown

REPO = Path(__file__).resolve().parents[2]
GENERATOR = torch.Generator().manual_seed(6)


# --------------------------------------------------------------------------
# Inputs
# --------------------------------------------------------------------------


def floats(*shape: int, dtype: torch.dtype = torch.float32, low: float = -3.0, high: float = 3.0) -> torch.Tensor:
    """Uniform values in [low, high), made in f32 and rounded to `dtype`."""
    return (torch.rand(shape, generator=GENERATOR) * (high - low) + low).to(dtype)


def ints(*shape: int, dtype: torch.dtype = torch.int64, low: int = -9, high: int = 10) -> torch.Tensor:
    return torch.randint(low, high, shape, generator=GENERATOR).to(dtype)


def nonzero_ints(*shape: int, dtype: torch.dtype = torch.int64) -> torch.Tensor:
    values = ints(*shape, dtype=dtype, low=1, high=7)
    signs = torch.randint(0, 2, shape, generator=GENERATOR).to(dtype) * 2 - 1
    return values * signs


def bools(*shape: int) -> torch.Tensor:
    return torch.rand(shape, generator=GENERATOR) > 0.5


def special(*shape: int, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """Floats with NaN, +-inf, -0 and exact halves mixed in."""
    values = floats(*shape, dtype=torch.float32).flatten()
    extras = torch.tensor([math.nan, math.inf, -math.inf, -0.0, 0.0, 2.5, -1.5, 0.5])
    values[: min(len(extras), values.numel())] = extras[: values.numel()]
    return values.reshape(shape).to(dtype)


# --------------------------------------------------------------------------
# Cases
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class Case:
    """One op form: `fn(*inputs)` is the model's forward."""

    name: str
    fn: Callable[..., object]
    inputs: tuple[torch.Tensor, ...]


class Model(torch.nn.Module):
    def __init__(self, fn: Callable[..., object]):
        super().__init__()
        self.fn = fn

    def forward(self, *inputs: torch.Tensor) -> object:
        return self.fn(*inputs)


CASES: list[Case] = []


def _setitem(a: torch.Tensor, mask: torch.Tensor, value: float | torch.Tensor) -> torch.Tensor:
    """`a[mask] = value` on a copy (a masked_fill written as indexing)."""
    a = a.clone()
    a[mask] = value
    return a


def case(name: str, fn: Callable[..., object], *inputs: torch.Tensor) -> None:
    CASES.append(Case(name, fn, inputs))


def group(name: str, fns: dict[str, Callable[..., object]], *inputs: torch.Tensor) -> None:
    """One case computing several ops on the same inputs, returned as {op name: result}."""
    case(name, lambda *xs: {key: fn(*xs) for key, fn in fns.items()}, *inputs)


HALVES = {"f16": torch.float16, "bf16": torch.bfloat16}
X = floats(3, 5)
POSITIVE = floats(3, 5, low=0.1, high=4.0)
UNIT = floats(3, 5, low=-0.95, high=0.95)

# -- elementwise unary -----------------------------------------------------
# A group is one model returning {op name: result}, so a mismatch names its op.

_UNARY = {
    "abs": torch.abs, "neg": torch.neg, "sign": torch.sign, "signbit": torch.signbit,
    "exp": torch.exp, "exp2": torch.exp2, "expm1": torch.expm1, "sin": torch.sin, "cos": torch.cos,
    "tan": lambda x: torch.tan(x * 0.4), "atan": torch.atan, "sinh": torch.sinh, "cosh": torch.cosh,
    "tanh": torch.tanh, "asinh": torch.asinh, "erf": torch.erf, "sigmoid": torch.sigmoid,
    "gelu": F.gelu, "gelu_tanh": lambda x: F.gelu(x, approximate="tanh"), "silu": F.silu,
    "elu": F.elu, "elu_alpha": lambda x: F.elu(x, alpha=0.5), "selu": F.selu, "celu": F.celu,
    "leaky_relu": F.leaky_relu, "leaky_relu_slope": lambda x: F.leaky_relu(x, 0.2),
    "hardtanh": F.hardtanh, "hardtanh_bounds": lambda x: F.hardtanh(x, -0.5, 2.0), "relu6": F.relu6,
    "hardsigmoid": F.hardsigmoid, "hardswish": F.hardswish, "relu": torch.relu,
    "floor": torch.floor, "ceil": torch.ceil, "round": torch.round, "trunc": torch.trunc,
    "round_decimals": lambda x: torch.round(x, decimals=2), "round_neg_decimals": lambda x: torch.round(x * 100, decimals=-1),
    "frac": torch.frac, "reciprocal": torch.reciprocal, "square": torch.square, "softplus": F.softplus,
    "mish": F.mish, "logsigmoid": F.logsigmoid,
}  # fmt: skip
_UNARY_NAMES = list(_UNARY)
for _part in range(3):
    _names = _UNARY_NAMES[_part::3]
    group(f"unary-f32-{_part}", {n: _UNARY[n] for n in _names}, X)
_HALF_UNARY = ("abs", "neg", "exp", "sigmoid", "gelu", "silu", "tanh", "floor", "round", "relu", "erf", "elu", "sign", "signbit")
# torch's half-precision gelu gives nan at +inf on CPUs whose vectorized path
# it takes (the scalar path gives inf): compare gelu on finite values here, and
# check its infinities against the documented x * Phi(x) in test_gelu_at_infinities.
_HALF_UNARY_OPS = {n: _UNARY[n] for n in _HALF_UNARY} | {"gelu": lambda x: F.gelu(x.nan_to_num(posinf=0.0, neginf=0.0))}
for _tag, _dtype in HALVES.items():
    group(f"unary-{_tag}", _HALF_UNARY_OPS | {"isnan": torch.isnan, "isinf": torch.isinf}, special(3, 5, dtype=_dtype))
    group(f"unary-positive-{_tag}", {"sqrt": torch.sqrt, "log": torch.log, "rsqrt": torch.rsqrt}, POSITIVE.to(_dtype))

group("unary-positive-f32", {
    "log": torch.log, "log1p": torch.log1p, "log2": torch.log2, "log10": torch.log10,
    "sqrt": torch.sqrt, "rsqrt": torch.rsqrt, "acosh": lambda x: torch.acosh(x + 1),
}, POSITIVE)  # fmt: skip
group("unary-unit-f32", {"asin": torch.asin, "acos": torch.acos, "atanh": torch.atanh, "erfinv": torch.erfinv}, UNIT)
group("erfinv", {
    "f32": torch.erfinv, "tail_f32": lambda a: torch.erfinv(a.clamp(-1, 1) * 0.999), "bf16": lambda a: torch.erfinv(a.bfloat16()),
    "f16": lambda a: torch.erfinv(a.half()), "f64": lambda a: torch.erfinv(a.double() * 0.9), "int_promotes": lambda a: torch.erfinv((a * 0).long()),
}, torch.tensor([-1.0, 1.0, 1.5, -2.0, 0.0, -0.0, 0.5, -0.69, 0.71, 0.999, -0.9999, 0.3, math.nan]))  # fmt: skip
group("unary-special", {
    "isnan": torch.isnan, "isinf": torch.isinf, "isfinite": torch.isfinite,
    "nan_to_num": lambda x: torch.nan_to_num(x, posinf=9.0, neginf=-9.0), "abs": torch.abs,
    "sign": torch.sign, "signbit": torch.signbit, "logical_not": torch.logical_not, "relu": torch.relu,
}, special(3, 4))  # fmt: skip
group("unary-bool", {"logical_not": torch.logical_not, "bitwise_not": torch.bitwise_not, "sign": torch.sign}, bools(3, 4))
for _dtype in (torch.int64, torch.int32, torch.int8):
    group(f"unary-{_dtype}", {
        "abs": torch.abs, "neg": torch.neg, "sign": torch.sign, "bitwise_not": torch.bitwise_not,
        "isnan": torch.isnan, "signbit": torch.signbit, "relu": torch.relu,
    }, ints(3, 4, dtype=_dtype))  # fmt: skip

group("unary-forms", {
    "exp_int_promotes": lambda x, i, z, r, h: torch.exp(i), "sqrt_rank0": lambda x, i, z, r, h: torch.sqrt(r),
    "exp_zero_size": lambda x, i, z, r, h: torch.exp(z), "sin_noncontiguous": lambda x, i, z, r, h: torch.sin(x.t()),
    "round_halves": lambda x, i, z, r, h: torch.round(h),
}, X, ints(3, 4), floats(0, 3), torch.tensor(2.0), torch.tensor([0.5, 1.5, 2.5, -0.5, -2.5, 3.7]))  # fmt: skip

# -- elementwise binary and ternary ----------------------------------------

Y = floats(3, 5)
ROW = floats(5)
group("add-sub-f32", {
    "add_alpha": lambda a, b: torch.add(a, b, alpha=2), "add_broadcast": lambda a, b: a + b[0],
    "add_scalar": lambda a, b: a + 1.5, "sub_alpha": lambda a, b: torch.sub(a, b, alpha=0.5),
    "rsub_scalar": lambda a, b: 2 - a, "mul": torch.mul, "div": torch.div,
}, X, Y)  # fmt: skip
# (x, y, i64, non-zero i64, bool, i8, i32, f16, bf16, small i64, non-negative i64)
_MIXED = (X, Y, ints(3, 5), nonzero_ints(3, 5), bools(3, 5), ints(3, 5, dtype=torch.int8), ints(3, 5, dtype=torch.int32),
          X.to(torch.float16), X.to(torch.bfloat16), ints(3, 5, low=-3, high=4), ints(3, 5, low=0, high=5))  # fmt: skip
group("promotion", {
    "add_int_float": lambda x, y, i, nz, b, i8, i32, h, bf, s, n: i + y, "add_int8_int32": lambda x, y, i, nz, b, i8, i32, h, bf, s, n: i8 + i32,
    "add_bool": lambda x, y, i, nz, b, i8, i32, h, bf, s, n: b + b, "add_f16_f32": lambda x, y, i, nz, b, i8, i32, h, bf, s, n: h + y,
    "add_bf16_scalar": lambda x, y, i, nz, b, i8, i32, h, bf, s, n: bf + 3, "add_int_scalar_float": lambda x, y, i, nz, b, i8, i32, h, bf, s, n: i + 0.5,
    "mul_int": lambda x, y, i, nz, b, i8, i32, h, bf, s, n: i * nz, "mul_bool_int": lambda x, y, i, nz, b, i8, i32, h, bf, s, n: b * i,
    "div_int_true": lambda x, y, i, nz, b, i8, i32, h, bf, s, n: i / nz, "pow_int": lambda x, y, i, nz, b, i8, i32, h, bf, s, n: s**n,
    "ldexp": lambda x, y, i, nz, b, i8, i32, h, bf, s, n: torch.ldexp(x, s), "lerp_tensor_weight": lambda x, y, i, nz, b, i8, i32, h, bf, s, n: torch.lerp(x, y, x.sigmoid()),
    "where": lambda x, y, i, nz, b, i8, i32, h, bf, s, n: torch.where(b, x, y), "where_scalar": lambda x, y, i, nz, b, i8, i32, h, bf, s, n: torch.where(b, x, 0.0),
    "where_promotes": lambda x, y, i, nz, b, i8, i32, h, bf, s, n: torch.where(b, i, y), "masked_fill": lambda x, y, i, nz, b, i8, i32, h, bf, s, n: x.masked_fill(b, -1.0),
    "clamp_int": lambda x, y, i, nz, b, i8, i32, h, bf, s, n: torch.clamp(i, -2, 3), "clamp_i8": lambda x, y, i, nz, b, i8, i32, h, bf, s, n: torch.clamp(i8, max=0),
}, *_MIXED)  # fmt: skip
_MODES = {
    "floor": lambda a, b: torch.div(a, b, rounding_mode="floor"),
    "trunc": lambda a, b: torch.div(a, b, rounding_mode="trunc"),
    "floor_scalar": lambda a, b: torch.div(a, -4, rounding_mode="floor"),
    "trunc_scalar": lambda a, b: torch.div(a, -4, rounding_mode="trunc"),
    "remainder": torch.remainder, "fmod": torch.fmod,
    "remainder_scalar": lambda a, b: torch.remainder(a, -3), "fmod_scalar": lambda a, b: torch.fmod(a, -3),
}
group("div-modes-f32", _MODES | {"remainder_scalar_frac": lambda a, b: torch.remainder(a, 1.5)}, X, Y)
group("div-modes-f32-exact", _MODES, torch.tensor([-3.0, 3.0, -0.0, 7.5, -7.5, 1e-3]), torch.tensor([2.0, -2.0, 2.0, 2.5, 2.5, -1.0]))
group("div-modes-int", _MODES, ints(3, 5), nonzero_ints(3, 5))
group("div-modes-i8", _MODES, ints(3, 5, dtype=torch.int8), nonzero_ints(3, 5, dtype=torch.int8))
group("pow", {
    "tensor": lambda a, b: torch.pow(a.abs() + 0.1, b), "tensor_scalar": lambda a, b: torch.pow(a, 3),
    "tensor_scalar_frac": lambda a, b: torch.pow(a.abs(), 1.7), "tensor_scalar_neg": lambda a, b: torch.pow(a.abs() + 0.1, -2),
    "scalar_tensor": lambda a, b: torch.pow(2.0, a), "sqrt": lambda a, b: torch.pow(a.abs(), 0.5),
}, X, Y)  # fmt: skip
group("binary-math", {
    "atan2": torch.atan2, "hypot": torch.hypot, "logaddexp": torch.logaddexp,
    "copysign": torch.copysign, "copysign_scalar": lambda a, b: torch.copysign(a, -1.0),
    "xlogy": lambda a, b: torch.xlogy(a, b.abs()), "lerp": lambda a, b: torch.lerp(a, b, 0.3),
    "addcmul": lambda a, b: torch.addcmul(a, b, b, value=0.5), "addcdiv": lambda a, b: torch.addcdiv(a, b, b.abs() + 1, value=2),
}, X, special(3, 5))  # fmt: skip
group("max-min", {
    "maximum": torch.maximum, "minimum": torch.minimum, "fmax": torch.fmax, "fmin": torch.fmin,
}, special(3, 4), special(4).flip(0))  # fmt: skip
group("max-min-int", {"maximum": torch.maximum, "minimum": torch.minimum, "fmax": torch.fmax}, ints(3, 5), ints(3, 5))

_BITWISE = {
    f"{kind}": getattr(torch, f"bitwise_{kind}") for kind in ("and", "or", "xor")
} | {f"logical_{kind}": getattr(torch, f"logical_{kind}") for kind in ("and", "or", "xor")}
group("bitwise-i32", _BITWISE, ints(3, 5, dtype=torch.int32), ints(3, 5, dtype=torch.int32))
group("bitwise-bool", _BITWISE, bools(3, 5), bools(3, 5))
group("bitwise-scalar", {kind: lambda a, k=kind: getattr(torch, f"bitwise_{k}")(a, 6) for kind in ("and", "or", "xor")}, ints(3, 5))
group("logical-f32", {kind: getattr(torch, f"logical_{kind}") for kind in ("and", "or", "xor")}, X, special(3, 5))
group("shift", {"left": lambda a, b: a << 2, "right": lambda a, b: a >> 1, "left_tensor": lambda a, b: a << b,
                "right_tensor": lambda a, b: a >> b}, ints(3, 5, dtype=torch.int32), ints(3, 5, dtype=torch.int32, low=0, high=5))  # fmt: skip
group("shift-past-width", {"left": lambda a, b: a << b, "right": lambda a, b: a >> b},
      ints(4, 5, dtype=torch.int32), torch.tensor([-1, 0, 31, 32, 40], dtype=torch.int32))  # fmt: skip
_COMPARE = ("eq", "ne", "lt", "le", "gt", "ge")
group("compare-tensor", {op: getattr(torch, op) for op in _COMPARE}, special(3, 4), special(4))
group("compare-scalar", {op: lambda a, _op=op: getattr(torch, _op)(a, 0.5) for op in _COMPARE}, special(3, 4))
group("compare-int-float", {op: getattr(torch, op) for op in _COMPARE}, ints(3, 4, low=-2, high=2), floats(3, 4, low=-2, high=2))
group("compare-bool", {op: getattr(torch, op) for op in _COMPARE}, bools(3, 4), bools(3, 4))
group("clamp", {
    "scalar": lambda a, lo, hi: torch.clamp(a, -1, 2), "min_only": lambda a, lo, hi: torch.clamp(a, min=0.5),
    "tensor": torch.clamp, "tensor_max_only": lambda a, lo, hi: torch.clamp(a, max=hi),
    "crossed": lambda a, lo, hi: torch.clamp(a, hi, lo),
}, special(3, 5), floats(3, 5, low=-3, high=0), ROW)  # fmt: skip

_CAST_DTYPES = {
    "f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16, "i64": torch.int64,
    "i32": torch.int32, "i16": torch.int16, "i8": torch.int8, "bool": torch.bool,
}  # fmt: skip
_CAST_SOURCES = {
    "f32": floats(3, 4, low=-100, high=100), "bf16": floats(3, 4, low=-100, high=100).to(torch.bfloat16),
    "f16": floats(3, 4, low=-100, high=100).to(torch.float16), "i32": ints(3, 4, dtype=torch.int32, low=-100, high=100),
    "i8": ints(3, 4, dtype=torch.int8, low=-100, high=100), "bool": bools(3, 4),
}  # fmt: skip
for _from, _source in _CAST_SOURCES.items():
    group(f"cast-from-{_from}", {to: lambda a, _t=dtype: a.to(_t) for to, dtype in _CAST_DTYPES.items() if to != _from}, _source)

# -- reductions and scans ------------------------------------------------

R = floats(2, 3, 4)
group("reductions-mixed", {
    "sum_int": lambda i, b, r, z, s, sp: torch.sum(i, 1), "sum_bool": lambda i, b, r, z, s, sp: torch.sum(b),
    "sum_bf16": lambda i, b, r, z, s, sp: torch.sum(r, -1), "sum_zero_size": lambda i, b, r, z, s, sp: torch.sum(z, 0),
    "prod_int": lambda i, b, r, z, s, sp: torch.prod(s), "any_f32": lambda i, b, r, z, s, sp: torch.any(sp, -1),
    "cumsum_int": lambda i, b, r, z, s, sp: torch.cumsum(i, 0), "softmax_dim0_bf16": lambda i, b, r, z, s, sp: torch.softmax(r, 0),
}, ints(2, 3, 4, dtype=torch.int32), bools(3, 4), floats(2, 3, 4, dtype=torch.bfloat16), floats(0, 3),
   ints(2, 3, low=-3, high=4), torch.tensor([[0.0, 0.0], [0.0, -1.0], [math.nan, 0.0]]))  # fmt: skip
group("sum-mean-prod", {
    "sum_all": torch.sum, "sum_dims_keepdim": lambda a: torch.sum(a, (0, -1), keepdim=True),
    "mean_dim": lambda a: torch.mean(a, -2), "mean_all_keepdim": lambda a: torch.mean(a, (0, 1, 2), keepdim=True),
    "prod": lambda a: torch.prod(a, 1),
}, R)  # fmt: skip
group("extremes", {
    "amax": lambda a: torch.amax(a, (0, 2)), "amin_keepdim": lambda a: torch.amin(a, -1, keepdim=True),
    "max_all": torch.max, "min_all": torch.min, "max_dim": lambda a: torch.max(a, 1),
    "min_dim_keepdim": lambda a: torch.min(a, -1, keepdim=True), "argmax": lambda a: torch.argmax(a, 1),
    "argmin_all": torch.argmin, "argmax_keepdim": lambda a: torch.argmax(a, -1, keepdim=True),
}, R)  # fmt: skip
group("extremes-int", {"max_all": torch.max, "min_dim": lambda a: torch.min(a, 0), "argmax": lambda a: torch.argmax(a, 1)}, ints(3, 4))
group("any-all", {"any": lambda a: torch.any(a, 1), "all": torch.all, "any_all": torch.any}, bools(3, 4))
group("var-std", {
    "var": lambda a: torch.var(a, 1), "var_correction0": lambda a: torch.var(a, (0, 2), correction=0, keepdim=True),
    "var_unbiased_false": lambda a: torch.var(a, 1, unbiased=False), "std": lambda a: torch.std(a, -1),
    "var_mean": lambda a: torch.var_mean(a, 1), "var_mean_correction": lambda a: torch.var_mean(a, -1, correction=0, keepdim=True),
    "std_mean": lambda a: torch.std_mean(a, 0),
}, R)  # fmt: skip
group("vector-norm", {
    "ord2": lambda a: torch.linalg.vector_norm(a, 2, -1), "ord1": lambda a: torch.linalg.vector_norm(a, 1, (0, 1)),
    "ord3_keepdim": lambda a: torch.linalg.vector_norm(a, 3, 1, keepdim=True), "inf": lambda a: torch.linalg.vector_norm(a, math.inf),
    "neginf": lambda a: torch.linalg.vector_norm(a, -math.inf, 0), "ord0": lambda a: torch.linalg.vector_norm(a.round(), 0, 1),
}, R)  # fmt: skip
group("scans", {"cumsum": lambda a: torch.cumsum(a, -1), "cumprod": lambda a: torch.cumprod(a, 1)}, floats(2, 4, low=0.5, high=1.5))
group("logcumsumexp", {
    "dim1": lambda a, s: torch.logcumsumexp(a, 1), "far_apart": lambda a, s: torch.logcumsumexp(a * 200, -1),
    "special": lambda a, s: torch.logcumsumexp(s, 0), "bf16": lambda a, s: torch.logcumsumexp(a.bfloat16(), 0),
}, R, torch.tensor([[-math.inf, 1.0], [-math.inf, math.inf], [2.0, math.nan], [-math.inf, 0.0]]))  # fmt: skip
group("sort", {
    "sort": lambda a, t, i: torch.sort(a, 1), "sort_descending": lambda a, t, i: torch.sort(a, -1, descending=True),
    "sort_stable_ties": lambda a, t, i: torch.sort(t, dim=0, stable=True), "sort_stable_ties_descending": lambda a, t, i: torch.sort(t, dim=1, descending=True, stable=True),
    "sort_int": lambda a, t, i: torch.sort(i, dim=1, stable=True), "topk": lambda a, t, i: torch.topk(a, 2),
    "topk_smallest_dim0": lambda a, t, i: torch.topk(a, 2, 0, largest=False), "kthvalue": lambda a, t, i: torch.kthvalue(a, 2, 1),
    "kthvalue_keepdim": lambda a, t, i: torch.kthvalue(a, 3, -1, keepdim=True),
}, R, torch.tensor([[1.0, math.nan, 1.0, -math.inf], [0.0, 1.0, math.nan, 0.0], [math.inf, 1.0, -0.0, 0.0]]), ints(3, 6))  # fmt: skip
group("softmax", {
    "softmax": lambda a: torch.softmax(a, -1), "log_softmax": lambda a: torch.log_softmax(a, 1),
    "logsumexp": lambda a: torch.logsumexp(a, 1),
}, R)  # fmt: skip

# -- matrix ops ----------------------------------------------------------


group("matmul", {
    "mm": lambda a, b, c, d, e, f: torch.mm(a, b), "bmm": lambda a, b, c, d, e, f: torch.bmm(c, d),
    "addmm": lambda a, b, c, d, e, f: torch.addmm(b[0], a, b, beta=0.5, alpha=2),
    "baddbmm": lambda a, b, c, d, e, f: torch.baddbmm(e, c, d, beta=2, alpha=0.5),
    "addbmm": lambda a, b, c, d, e, f: torch.addbmm(e[0], c, d, beta=0.5, alpha=2),
    "matmul_broadcast": lambda a, b, c, d, e, f: torch.matmul(c[:, None], d), "matmul_vector": lambda a, b, c, d, e, f: torch.matmul(a, b[:, 0]),
    "linear": lambda a, b, c, d, e, f: F.linear(a, b.t(), b[0]), "mm_int": lambda a, b, c, d, e, f: torch.mm(f, f.t()),
    "matmul_bf16": lambda a, b, c, d, e, f: torch.matmul(a.bfloat16(), b.bfloat16()),
}, floats(3, 4), floats(4, 5), floats(2, 3, 4), floats(2, 4, 5), floats(2, 3, 5), ints(3, 4))  # fmt: skip

group("distance", {
    "cdist": lambda a, b, c: torch.cdist(a, b), "cdist_p1_batched": lambda a, b, c: torch.cdist(c, c[:, :2], p=1),
    "cdist_p3": lambda a, b, c: torch.cdist(a, b, p=3), "cdist_inf": lambda a, b, c: torch.cdist(a, b, p=math.inf),
    "cdist_p0": lambda a, b, c: torch.cdist(a.round(), b.round(), p=0),
    "pdist": lambda a, b, c: F.pdist(a), "pdist_p1": lambda a, b, c: F.pdist(b, p=1), "pdist_p_half": lambda a, b, c: F.pdist(a, p=0.5),
}, floats(4, 5), floats(3, 5), floats(2, 3, 4))  # fmt: skip

# -- normalization -------------------------------------------------------


group("norms", {
    "layer_norm": lambda r, w, b, g, m, v: F.layer_norm(r, (4,), w, b), "layer_norm_2d_noaffine": lambda r, w, b, g, m, v: F.layer_norm(r, (3, 4)),
    "batch_norm": lambda r, w, b, g, m, v: F.batch_norm(g, m, v, w[:3], b[:3], eps=1e-3),
    "group_norm": lambda r, w, b, g, m, v: F.group_norm(r.transpose(1, 2), 2, w, b), "group_norm_4d": lambda r, w, b, g, m, v: F.group_norm(g[:, :, None], 1),
    "rms_norm": lambda r, w, b, g, m, v: F.rms_norm(r, (4,), w),
    "batch_norm_batch_stats": lambda r, w, b, g, m, v: F.batch_norm(g, None, None, w[:3], b[:3], training=True, eps=1e-3),
    "instance_norm": lambda r, w, b, g, m, v: F.instance_norm(g, weight=w[:3], bias=b[:3]),
    "instance_norm_2d_bf16": lambda r, w, b, g, m, v: F.instance_norm(r[None].bfloat16()),
    "batch_norm_inference_saved_stats": lambda r, w, b, g, m, v: torch.ops.aten._native_batch_norm_legit_no_training(g, w[:3], b[:3], m, v, 0.1, 1e-5),
    "batch_norm_saved_stats": lambda r, w, b, g, m, v: torch.ops.aten._native_batch_norm_legit.no_stats(r, w[:3], None, True, 0.1, 1e-5),
}, R, floats(4), floats(4), floats(2, 3, 4), floats(3), POSITIVE[0, :3])  # fmt: skip

# -- convolution and pooling ---------------------------------------------

group("conv", {
    "conv1d": lambda a, b, c, w1, w2, w3, bias: F.conv1d(a, w1, bias, stride=2, padding=1),
    "conv2d_dilation_groups": lambda a, b, c, w1, w2, w3, bias: F.conv2d(b, w2, dilation=2, groups=2),
    "conv3d": lambda a, b, c, w1, w2, w3, bias: F.conv3d(c, w3, padding=1),
}, floats(1, 2, 7), floats(1, 4, 6, 6), floats(1, 2, 3, 3, 3), floats(3, 2, 3), floats(2, 2, 2, 2), floats(2, 2, 2, 2, 2), floats(3))  # fmt: skip
group("pool", {
    "max_pool1d": lambda a, b: F.max_pool1d(a[0], 2), "max_pool2d": lambda a, b: F.max_pool2d(a, 3, 2, padding=1),
    "max_pool3d": lambda a, b: F.max_pool3d(b, 2), "avg_pool1d": lambda a, b: F.avg_pool1d(a[0], 2),
    "avg_pool2d": lambda a, b: F.avg_pool2d(a, 2, padding=1), "adaptive_avg_pool2d": lambda a, b: F.adaptive_avg_pool2d(a, (3, 2)),
    "adaptive_max_pool2d": lambda a, b: F.adaptive_max_pool2d(a, (2, 3)),
    "avg_pool2d_exclude_pad": lambda a, b: F.avg_pool2d(a, 3, 2, padding=1, count_include_pad=False),
    "avg_pool2d_divisor": lambda a, b: F.avg_pool2d(a, 2, divisor_override=3),
    "avg_pool3d": lambda a, b: F.avg_pool3d(b, 2, padding=1), "avg_pool3d_exclude_pad": lambda a, b: F.avg_pool3d(b, 3, 1, 1, count_include_pad=False),
    "adaptive_avg_pool3d": lambda a, b: F.adaptive_avg_pool3d(b, 2),
}, floats(1, 2, 6, 6), floats(1, 2, 4, 4, 4))  # fmt: skip
group("pool-indices", {
    "max_pool1d": lambda a, b: F.max_pool1d(a[0], 2, return_indices=True),
    "max_pool2d_pad_dilation": lambda a, b: F.max_pool2d(a, 3, 2, padding=1, dilation=1, return_indices=True),
    "max_pool2d_ceil": lambda a, b: F.max_pool2d(a, 2, 2, dilation=2, ceil_mode=True, return_indices=True),
    "max_pool3d": lambda a, b: F.max_pool3d(b, 2, 1, padding=1, return_indices=True),
    "adaptive_max_pool1d": lambda a, b: F.adaptive_max_pool1d(a[0], 4, return_indices=True),
    "adaptive_max_pool2d_uneven": lambda a, b: F.adaptive_max_pool2d(a, (4, 5), return_indices=True),
    "adaptive_max_pool2d_values": lambda a, b: F.adaptive_max_pool2d(a, 4),
    "adaptive_max_pool3d": lambda a, b: F.adaptive_max_pool3d(b, (3, 2, 4), return_indices=True),
}, floats(1, 2, 7, 6), floats(1, 2, 4, 5, 5))  # fmt: skip
group("pool-ceil-adaptive", {
    "avg_pool1d_ceil": lambda a, b: F.avg_pool1d(a[0], 2, ceil_mode=True),
    "avg_pool2d_ceil": lambda a, b: F.avg_pool2d(a, 3, 2, ceil_mode=True),
    "avg_pool2d_ceil_pad": lambda a, b: F.avg_pool2d(a, 3, 2, padding=1, ceil_mode=True),
    "avg_pool2d_ceil_exclude_pad": lambda a, b: F.avg_pool2d(a, 3, 2, padding=1, ceil_mode=True, count_include_pad=False),
    "avg_pool2d_ceil_divisor": lambda a, b: F.avg_pool2d(a, 2, ceil_mode=True, divisor_override=3),
    "avg_pool3d_ceil": lambda a, b: F.avg_pool3d(b, 2, ceil_mode=True),
    "adaptive_avg_pool1d_uneven": lambda a, b: F.adaptive_avg_pool1d(a[0], 4),
    "adaptive_avg_pool2d_uneven": lambda a, b: F.adaptive_avg_pool2d(a, (5, 4)),
    "adaptive_avg_pool3d_uneven": lambda a, b: F.adaptive_avg_pool3d(b, (3, 2, 3)),
    "adaptive_avg_pool2d_bf16": lambda a, b: F.adaptive_avg_pool2d(a.bfloat16(), 4),
}, floats(1, 2, 7, 6), floats(1, 2, 4, 5, 5))  # fmt: skip
group("conv-transpose", {
    "conv_transpose1d": lambda a, b, c, w1, w2, w3, bias: F.conv_transpose1d(a, w1, bias, stride=2, padding=1, output_padding=1),
    "conv_transpose2d": lambda a, b, c, w1, w2, w3, bias: F.conv_transpose2d(b, w2, stride=(2, 1), padding=(0, 1), dilation=(1, 2)),
    "conv_transpose2d_groups": lambda a, b, c, w1, w2, w3, bias: F.conv_transpose2d(b, w2[:, :1].repeat(1, 2, 1, 1), bias[:2].repeat(2), stride=2, output_padding=1, groups=2),
    "conv_transpose2d_big_padding": lambda a, b, c, w1, w2, w3, bias: F.conv_transpose2d(b, w2, padding=2, dilation=1),
    "conv_transpose3d": lambda a, b, c, w1, w2, w3, bias: F.conv_transpose3d(c, w3, stride=2, padding=1),
}, floats(1, 2, 5), floats(1, 4, 3, 4), floats(1, 2, 3, 2, 3), floats(2, 3, 3), floats(4, 2, 3, 2), floats(2, 2, 2, 2, 2), floats(3))  # fmt: skip
group("upsample", {
    "nearest_scale": lambda a: F.interpolate(a, scale_factor=2), "nearest_size": lambda a: F.interpolate(a, size=(5, 4)),
    "bilinear_scale": lambda a: F.interpolate(a, scale_factor=2, mode="bilinear"),
    "bilinear_size": lambda a: F.interpolate(a, size=(5, 3), mode="bilinear"),
    "bilinear_aligned": lambda a: F.interpolate(a, size=(4, 5), mode="bilinear", align_corners=True),
    "bilinear_down": lambda a: F.interpolate(a, size=(2, 1), mode="bilinear"),
}, floats(1, 2, 3, 2))  # fmt: skip

group("grid-sample", {
    "bilinear": lambda a, g: F.grid_sample(a, g, align_corners=False),
    "bilinear_aligned": lambda a, g: F.grid_sample(a, g, align_corners=True),
    "nearest": lambda a, g: F.grid_sample(a, g, mode="nearest", align_corners=False),
    "nearest_aligned_border": lambda a, g: F.grid_sample(a, g, mode="nearest", padding_mode="border", align_corners=True),
    "bilinear_border": lambda a, g: F.grid_sample(a, g, padding_mode="border", align_corners=False),
    "bilinear_reflection": lambda a, g: F.grid_sample(a, g * 2.5, padding_mode="reflection", align_corners=False),
    "bilinear_reflection_aligned": lambda a, g: F.grid_sample(a, g * 2.5, padding_mode="reflection", align_corners=True),
    "nearest_reflection": lambda a, g: F.grid_sample(a, g * 2.5, mode="nearest", padding_mode="reflection", align_corners=False),
    "bicubic": lambda a, g: F.grid_sample(a, g, mode="bicubic", align_corners=False),
    "bicubic_aligned": lambda a, g: F.grid_sample(a, g, mode="bicubic", align_corners=True),
    "bicubic_border": lambda a, g: F.grid_sample(a, g * 1.5, mode="bicubic", padding_mode="border", align_corners=False),
    "bicubic_border_aligned": lambda a, g: F.grid_sample(a, g * 1.5, mode="bicubic", padding_mode="border", align_corners=True),
    "bicubic_reflection": lambda a, g: F.grid_sample(a, g * 2.5, mode="bicubic", padding_mode="reflection", align_corners=False),
    "bicubic_reflection_aligned": lambda a, g: F.grid_sample(a, g * 2.5, mode="bicubic", padding_mode="reflection", align_corners=True),
    "bicubic_f64": lambda a, g: F.grid_sample(a.double(), g.double(), mode="bicubic", align_corners=True),
}, floats(2, 3, 4, 5), floats(2, 3, 2, 2, low=-1.2, high=1.2))  # fmt: skip

# -- data movement and indexing --------------------------------------------

group("layout", {
    "view": lambda a, b: b.view(4, 6) * 2, "reshape_noncontiguous": lambda a, b: b.transpose(0, 2).reshape(12, 2),
    "permute": lambda a, b: b.permute(2, 0, 1) + 1, "expand": lambda a, b: a[:, :1].expand(3, 5) + 0,
    "squeeze_unsqueeze": lambda a, b: a[:1].unsqueeze(-1).squeeze(0) * 2, "slice_step": lambda a, b: a[:, 1::2] * 1,
    "slice_negative": lambda a, b: a[-2:, :-1] * 1, "select": lambda a, b: a[:, -1] * 1, "select_rank0": lambda a, b: a[1, 2] * 1,
    "slice_empty": lambda a, b: a[:, 5:] * 1,
}, X, R)  # fmt: skip
group("join-split", {
    "cat": lambda a, b, c: torch.cat([a, b[:, :2]], -1), "cat_promotes": lambda a, b, c: torch.cat([c, b]),
    "split": lambda a, b, c: torch.split(a, 2, 1), "stack": lambda a, b, c: torch.stack([a, b], 1),
    "chunk": lambda a, b, c: torch.chunk(a, 2, 0),
}, X, Y, ints(2, 5))  # fmt: skip
group("reorder", {
    "flip": lambda a, b: torch.flip(b, [0, -1]), "roll": lambda a, b: torch.roll(a, 2, -1),
    "roll_flat": lambda a, b: torch.roll(a, -1), "diagonal": lambda a, b: torch.diagonal(a),
    "diagonal_offset_dims": lambda a, b: torch.diagonal(b, -1, 0, 2), "unfold": lambda a, b: a.unfold(1, 2, 2),
    "repeat": lambda a, b: a[:2, :3].repeat(2, 1, 3), "tril": lambda a, b: torch.tril(a, -1),
    "triu": lambda a, b: torch.triu(a, 1),
}, X, R)  # fmt: skip
case("as_strided", lambda a: {
    "own": torch.as_strided(a, (2, 3), (1, 2), 1), "slice": torch.as_strided(a[1:], (2, 3), (1, 2), 1),
    "transposed_intermediate": torch.as_strided((a * 2).t(), (2, 2), (2, 1)),
    "slice_of_transpose": torch.as_strided(a.t()[1:], (2, 2), (2, 1), 3),
}, X)  # fmt: skip
group("pad", {
    "constant": lambda a, b: F.pad(a, (1, 2, 0, 1), value=0.5), "negative": lambda a, b: F.pad(a, (-1, 1)),
    "reflect": lambda a, b: F.pad(b, (2, 1), mode="reflect"), "replicate": lambda a, b: F.pad(b[None], (1, 2, 2, 0), mode="replicate"),
}, X, R)  # fmt: skip
group("index", {
    "index": lambda a, b, i, j: a[i], "index_two": lambda a, b, i, j: b[:, i[:2], j[:2]],
    "index_select": lambda a, b, i, j: torch.index_select(a, -1, j), "gather": lambda a, b, i, j: torch.gather(a, 1, j[None].expand(3, 3)),
    "gather_dim0": lambda a, b, i, j: torch.gather(a, 0, i[:, None].expand(3, 4)), "embedding": lambda a, b, i, j: F.embedding(j, a.t()),
}, X, R, torch.tensor([2, 0, 2]), torch.tensor([3, 1, 0]))  # fmt: skip
_EMBEDDING_BAG = torch.ops.aten._embedding_bag.default  # all four outputs: (result, offset2bag, bag_size, max_indices)
_EMBEDDING_BAG_FORWARD = torch.ops.aten._embedding_bag_forward_only.default
group("embedding-bag", {
    "sum": lambda w, i, o, p: F.embedding_bag(i, w, o, mode="sum"), "mean": lambda w, i, o, p: F.embedding_bag(i, w, o),
    "max": lambda w, i, o, p: F.embedding_bag(i, w, o, mode="max"),
    "include_last_offset": lambda w, i, o, p: F.embedding_bag(i, w, o, mode="sum", include_last_offset=True),
    "per_sample_weights": lambda w, i, o, p: F.embedding_bag(i, w, o, mode="sum", per_sample_weights=p),
    "padding_idx": lambda w, i, o, p: F.embedding_bag(i, w, o, mode="mean", padding_idx=3),
    "all_outputs_sum": lambda w, i, o, p: _EMBEDDING_BAG(w, i, o, False, 0, False, None, False, -1),
    "all_outputs_sum_padding": lambda w, i, o, p: _EMBEDDING_BAG(w, i, o, False, 0, False, None, False, 3),
    "all_outputs_mean_last": lambda w, i, o, p: _EMBEDDING_BAG(w, i, torch.cat([o[:-1], o[-1:] + 2]), False, 1, False, None, True, -1),
    "all_outputs_max": lambda w, i, o, p: _EMBEDDING_BAG(w, i, o, False, 2, False, None, False, 3),
    "all_outputs_max_last": lambda w, i, o, p: _EMBEDDING_BAG(w, i, torch.cat([o[:-1], o[-1:] + 2]), False, 2, False, None, True, -1),
    "forward_only_outputs_max": lambda w, i, o, p: _EMBEDDING_BAG_FORWARD(w, i, o, False, 2, False, None, False, -1),
}, floats(6, 3), torch.tensor([1, 3, 3, 0, 5, 2, 4]), torch.tensor([0, 2, 2, 5]), floats(7))  # fmt: skip
group("scatter-slices", {
    "select_scatter": lambda a, s: torch.select_scatter(a, s[0], 0, 1),
    "slice_scatter": lambda a, s: torch.slice_scatter(a, s[:, :2], 1, 1, 3),
    "slice_scatter_step": lambda a, s: torch.slice_scatter(a, s[:, :2], 1, 0, 5, 3),
}, X, Y)  # fmt: skip

_SCATTER_INDEX = torch.tensor([[0, 4, 0, 1, 4], [2, 2, 2, 2, 2], [3, 1, 0, 3, 1]])
group("scatter", {
    "src": lambda a, i, s: torch.scatter(a, 1, i, s), "src_dim0": lambda a, i, s: torch.scatter(a, 0, i[:2] % 3, s),
    "value": lambda a, i, s: torch.scatter(a, 1, i, 1.5), "add": lambda a, i, s: torch.scatter_add(a, 1, i, s),
    "add_dim0": lambda a, i, s: torch.scatter_add(a, 0, i[:2] % 3, s),
    "amax": lambda a, i, s: torch.scatter_reduce(a, 1, i, s, "amax"),
    "amin_no_self": lambda a, i, s: torch.scatter_reduce(a, 1, i, s, "amin", include_self=False),
    "sum_no_self": lambda a, i, s: torch.scatter_reduce(a, -1, i, s, "sum", include_self=False),
    "prod": lambda a, i, s: torch.scatter_reduce(a, 1, i, s, "prod"),
    "prod_no_self": lambda a, i, s: torch.scatter_reduce(a, 1, i, s, "prod", include_self=False),
    "amax_no_self_dim0": lambda a, i, s: torch.scatter_reduce(a, 0, i[:2] % 3, s, "amax", include_self=False),
    "amin": lambda a, i, s: torch.scatter_reduce(a, 1, i, s, "amin"),
    "mean": lambda a, i, s: torch.scatter_reduce(a, 1, i, s, "mean"),
    "mean_no_self": lambda a, i, s: torch.scatter_reduce(a, 1, i, s, "mean", include_self=False),
    "mean_corner_dim0": lambda a, i, s: torch.scatter_reduce(a, 0, i[:2, :3] % 3, s, "mean", include_self=False),
}, X, _SCATTER_INDEX, Y)  # fmt: skip
group("scatter-reduce-int", {
    "mean_floor": lambda a, i, s: torch.scatter_reduce(a, 1, i, s, "mean"),
    "mean_no_self": lambda a, i, s: torch.scatter_reduce(a, 1, i, s, "mean", include_self=False),
    "amax_no_self": lambda a, i, s: torch.scatter_reduce(a, 1, i, s, "amax", include_self=False),
    "amin_no_self_u8": lambda a, i, s: torch.scatter_reduce(a.to(torch.uint8), 1, i, s.to(torch.uint8), "amin", include_self=False),
    "prod": lambda a, i, s: torch.scatter_reduce(a, -1, i, s, "prod"),
}, ints(3, 5), _SCATTER_INDEX, ints(3, 5))  # fmt: skip
case("scatter_reduce_f16", lambda a, i, s: {
    "amax_no_self": torch.scatter_reduce(a.half(), 1, i, s.half(), "amax", include_self=False),
    "mean": torch.scatter_reduce(a.bfloat16(), 1, i, s.bfloat16(), "mean"),
}, X, _SCATTER_INDEX, Y)  # fmt: skip
group("index_put", {
    "put": lambda a, i, v: a.index_put((i,), v), "accumulate": lambda a, i, v: a.index_put((i,), v, accumulate=True),
    "broadcast_row": lambda a, i, v: a.index_put((i,), v[0], accumulate=True), "negative": lambda a, i, v: a.index_put((i - 3,), v),
}, X, torch.tensor([0, 2, 0, 1]), floats(4, 5))  # fmt: skip
case("scatter-add-int", lambda a, i, s: torch.scatter_add(a, 1, i, s), ints(3, 5), _SCATTER_INDEX, ints(3, 5))
_QUANTIZED = torch.cat([floats(120, low=-20.0, high=20.0), torch.arange(20) * 0.05 + 0.025]).view(4, 35)  # halfway steps too
group("fake-quantize", {
    "per_tensor": lambda x: torch.fake_quantize_per_tensor_affine(x, 0.1, 2, -128, 127),
    "per_tensor_qparams": lambda x: torch.fake_quantize_per_tensor_affine(x, torch.tensor(0.03), torch.tensor(1), 0, 255),
    "per_channel": lambda x: torch.fake_quantize_per_channel_affine(
        x, torch.tensor([0.05, 0.1, 0.02, 0.2]), torch.tensor([0, 1, -2, 5], dtype=torch.int32), 0, -128, 127),
}, _QUANTIZED)  # fmt: skip
group("fft-frequencies", {
    "fftfreq_odd": lambda x: torch.fft.fftfreq(7, 0.3), "fftfreq_scaled": lambda x: torch.fft.fftfreq(5) * x[0],
    "rfftfreq_f64": lambda x: torch.fft.rfftfreq(8, dtype=torch.float64), "rfftfreq": lambda x: torch.fft.rfftfreq(9, 2.5) + x[1, 0],
}, X)  # fmt: skip
group("scatter-rank0", {
    "src": lambda a, i, s: torch.scatter(a, 0, i, s), "value": lambda a, i, s: torch.scatter(a, -1, i, 1.5),
    "add": lambda a, i, s: torch.scatter_add(a, 0, i, s), "amax": lambda a, i, s: torch.scatter_reduce(a, 0, i, s, "amax"),
    "mean_no_self": lambda a, i, s: torch.scatter_reduce(a, 0, i, s, "mean", include_self=False),
    "prod": lambda a, i, s: torch.scatter_reduce(a, 0, i, s, "prod"),
}, torch.tensor(2.5), torch.tensor(0), torch.tensor(-4.0))  # fmt: skip
group("scatter-small-index", {
    "src": lambda a, i, s, b: torch.scatter(a, 1, i, s), "value": lambda a, i, s, b: torch.scatter(a, 0, i % 3, -2.0),
    "add": lambda a, i, s, b: torch.scatter_add(a, 1, i, s), "amax_3d": lambda a, i, s, b: torch.scatter_reduce(b, 1, i[None] % 3, s[None], "amax"),
    "mean": lambda a, i, s, b: torch.scatter_reduce(a, 1, i, s, "mean"),
    "mean_no_self": lambda a, i, s, b: torch.scatter_reduce(a, 1, i, s, "mean", include_self=False),
}, X, _SCATTER_INDEX[:2, :3], Y, floats(2, 4, 5))  # fmt: skip
group("scatter-mean", {
    "mean": lambda a, i, s, ai, si: torch.scatter_reduce(a, 1, i, s, "mean"),
    "mean_no_self_dim0": lambda a, i, s, ai, si: torch.scatter_reduce(a, 0, i[:2] % 3, s, "mean", include_self=False),
    "mean_int": lambda a, i, s, ai, si: torch.scatter_reduce(ai, 1, i, si, "mean"),
}, X, _SCATTER_INDEX, Y, ints(3, 5), ints(3, 5))  # fmt: skip
group("index_put-multi", {
    "two_indices": lambda a, i, j, v, m: a.index_put((i, j), v[:, 0]),
    "two_indices_accumulate": lambda a, i, j, v, m: a.index_put((i, j), v[:, 0], accumulate=True),
    "inner_dims_broadcast": lambda a, i, j, v, m: torch.ops.aten.index_put(a[None].expand(2, 3, 5), [None, i[:, None] % 3, j[None, :2]], v[0, :2], True),
    "negative_two_indices": lambda a, i, j, v, m: a.index_put((i - 3, -1 - j), v[0, :1]),
    "bool_mask": lambda a, i, j, v, m: a.index_put((m,), torch.tensor(2.5)),
    "bool_mask_accumulate": lambda a, i, j, v, m: a.index_put((m,), torch.tensor(-1.0), accumulate=True),
    "bool_mask_rows": lambda a, i, j, v, m: a.index_put((m[:, 0],), torch.tensor(7.0)),
    "bool_mask_rows_row_values": lambda a, i, j, v, m: a.index_put((m[:, 0],), v[0]),
    "bool_mask_rows_row_accumulate": lambda a, i, j, v, m: a.index_put((m[:, 0],), v[1:2], accumulate=True),
    "bool_mask_columns_per_row": lambda a, i, j, v, m: torch.ops.aten.index_put(a, [None, m[0]], v[:3, :1]),
    "bool_mask_3d_slice": lambda a, i, j, v, m: a[None].expand(2, 3, 5).index_put((m[None, :, 0].expand(2, 3),), v[0, :5]),
    "setitem_mask_rows": lambda a, i, j, v, m: _setitem(a, m[:, 1], v[2]),
    "setitem_mask": lambda a, i, j, v, m: _setitem(a, m, 0.0),
}, X, torch.tensor([0, 2, 0, 1]), torch.tensor([1, 4, 1, 0]), floats(4, 5), bools(3, 5))  # fmt: skip

# Non-adjacent index tensors: PyTorch puts their broadcast dims first.
_INDEX_PUT = torch.ops.aten.index_put.default  # takes None for a dim not indexed
group("index-non-adjacent", {
    "get_i_colon_j": lambda a, i, j, v, w: a[i, :, j], "get_broadcast": lambda a, i, j, v, w: a[i[:, None], :, j[:3]],
    "get_4d_middle": lambda a, i, j, v, w: a.reshape(2, 3, 2, 5)[:, i % 3, :, j], "get_negative": lambda a, i, j, v, w: a[-i - 1, :, j],
    "put": lambda a, i, j, v, w: _INDEX_PUT(a, [i, None, j], v), "put_scalar": lambda a, i, j, v, w: _INDEX_PUT(a, [i, None, j], torch.tensor(-5.0)),
    "put_accumulate": lambda a, i, j, v, w: _INDEX_PUT(a, [i, None, j], v, True), "put_broadcast_values": lambda a, i, j, v, w: _INDEX_PUT(a, [i, None, j], w),
    "setitem": lambda a, i, j, v, w: _setitem_at(a, (i, slice(None), j), w), "setitem_4d": lambda a, i, j, v, w: _setitem_at(a.reshape(3, 2, 2, 5), (slice(None), i % 2, slice(None), j), 0.5),
}, floats(3, 4, 5), torch.tensor([0, 2, 1, 2]), torch.tensor([4, 0, -1, 2]), floats(4, 4), floats(4))  # fmt: skip


def _setitem_at(a: torch.Tensor, key: tuple[object, ...], value: torch.Tensor) -> torch.Tensor:
    """`a[key] = value` on a copy."""
    a = a.clone()
    a[key] = value
    return a


# -- creation --------------------------------------------------------------

group("creation", {
    "arange": lambda a: a + torch.arange(5), "arange_float_step": lambda a: a + torch.arange(-1, 1.5, 0.5),
    "full": lambda a: a * torch.full((3, 5), 2.5), "zeros_ones": lambda a: a + torch.zeros(5) + torch.ones(3, 1),
    "empty_filled": lambda a: torch.empty(3, 5).fill_(2.0) * a,
    "linspace": lambda a: a + torch.linspace(-1, 1, 5), "scalar_tensor": lambda a: torch.where(a > 0, a, torch.scalar_tensor(-2.0)),
}, X)  # fmt: skip
case("full_like-int", lambda a: torch.full_like(a, 7), ints(3, 5))
group("eye", {
    "eye": lambda a: a + torch.eye(5), "eye_rect_int": lambda a: torch.eye(3, 5, dtype=torch.int32),
    "eye_bool": lambda a: torch.eye(4, 2, dtype=torch.bool), "eye_bf16": lambda a: torch.eye(2, dtype=torch.bfloat16),
}, floats(5, 5))  # fmt: skip
group("triangle-indices", {
    "tril": lambda a: a + torch.tril_indices(3, 3), "tril_offset_wide": lambda a: torch.tril_indices(3, 5, 1) * a[0],
    "triu": lambda a: torch.triu_indices(4, 3) - a[0], "triu_negative_offset": lambda a: torch.triu_indices(3, 4, -1) + a[0],
}, ints(2, 1))  # fmt: skip

# -- quantization (PT2E's quantized_decomposed ops) -------------------------

_QD = torch.ops.quantized_decomposed
group("quantize", {
    "per_tensor": lambda x, s, z: _QD.quantize_per_tensor(x, 0.05, 3, -128, 127, torch.int8),
    "per_tensor_roundtrip": lambda x, s, z: _QD.dequantize_per_tensor(_QD.quantize_per_tensor(x, 0.05, 3, -128, 127, torch.int8), 0.05, 3, -128, 127, torch.int8),
    "per_tensor_narrow": lambda x, s, z: _QD.quantize_per_tensor(x, 0.01, -5, -20, 20, torch.int8),
    "per_channel": lambda x, s, z: _QD.quantize_per_channel(x, s, z, 1, -128, 127, torch.int8),
    "per_channel_roundtrip": lambda x, s, z: _QD.dequantize_per_channel(_QD.quantize_per_channel(x, s, z, 1, -128, 127, torch.int8), s, z, 1, -128, 127, torch.int8),
    "per_channel_axis0_i16": lambda x, s, z: _QD.quantize_per_channel(x.t(), s, z, 0, -1000, 1000, torch.int16),
}, torch.tensor([[0.025, 0.075, -0.125, 3.0, -9.0], [1.0, -1.0, 0.0, 0.5, 100.0], [0.1, 0.2, 0.3, 0.4, 0.6]]) * 1.0 + X * 0.01,
   floats(5, low=0.01, high=0.1), ints(5, low=-3, high=4))  # fmt: skip

# -- uint8 (ui8: torch's wrap-around arithmetic, promotion and casts) --------

U8_A = torch.tensor([[0, 1, 7, 128, 200], [255, 250, 3, 64, 99], [17, 254, 0, 129, 5]], dtype=torch.uint8)
U8_B = torch.tensor([[1, 255, 9, 128, 100], [2, 10, 3, 255, 200], [31, 2, 7, 1, 77]], dtype=torch.uint8)
U8_SHIFT = torch.tensor([[0, 1, 7, 8, 9], [3, 255, 2, 31, 64], [6, 4, 5, 1, 0]], dtype=torch.uint8)
group("uint8-arithmetic", {
    "add_wraps": lambda a, b, s: a + b, "sub_below_zero": lambda a, b, s: a - b, "mul_wraps": lambda a, b, s: a * b,
    "add_scalar_wraps": lambda a, b, s: a + 300, "add_negative_scalar": lambda a, b, s: a + (-1), "rsub": lambda a, b, s: 5 - a,
    "add_alpha": lambda a, b, s: torch.add(a, b, alpha=3), "neg": lambda a, b, s: -a, "abs": lambda a, b, s: a.abs(),
    "sign": lambda a, b, s: a.sign(), "signbit": lambda a, b, s: a.signbit(), "square": lambda a, b, s: a * a,
    "div_true": lambda a, b, s: a / b, "div_floor": lambda a, b, s: torch.div(a, b, rounding_mode="floor"),
    "div_trunc_scalar": lambda a, b, s: torch.div(a, 7, rounding_mode="trunc"), "remainder": lambda a, b, s: a % b,
    "fmod_scalar": lambda a, b, s: torch.fmod(a, 9), "pow_scalar": lambda a, b, s: a**3, "pow_tensor": lambda a, b, s: a ** (s % 5),
    "relu": lambda a, b, s: torch.relu(a), "exp_promotes": lambda a, b, s: torch.exp(a.float() / 64),
}, U8_A, U8_B, U8_SHIFT)  # fmt: skip
group("uint8-bitwise", {
    "and": lambda a, b, s: a & b, "or": lambda a, b, s: a | b, "xor": lambda a, b, s: a ^ b, "not": lambda a, b, s: ~a,
    "and_scalar": lambda a, b, s: a & 0x0F, "xor_minus_one": lambda a, b, s: a ^ -1, "shl_scalar": lambda a, b, s: a << 3,
    "shr_scalar": lambda a, b, s: a >> 2, "shl_tensor": lambda a, b, s: a << s, "shr_tensor": lambda a, b, s: a >> s,
    "shl_past_width": lambda a, b, s: torch.bitwise_left_shift(a, 9), "shr_past_width": lambda a, b, s: torch.bitwise_right_shift(a, 8),
}, U8_A, U8_B, U8_SHIFT)  # fmt: skip
group("uint8-compare-select", {
    "lt": lambda a, b: a < b, "le": lambda a, b: a <= b, "gt": lambda a, b: a > b, "ge": lambda a, b: a >= b,
    "eq": lambda a, b: a == b, "ne": lambda a, b: a != b, "gt_scalar": lambda a, b: a > 127,
    "lt_wrapped_scalar": lambda a, b: a < 300, "ge_negative_scalar": lambda a, b: a >= -1, "eq_float_scalar": lambda a, b: a == 7.0,
    "where": lambda a, b: torch.where(a > b, a, b), "where_scalar": lambda a, b: torch.where(a > 100, a, 255),
    "clamp": lambda a, b: torch.clamp(a, 10, 200), "clamp_min_tensor": lambda a, b: torch.clamp(a, min=b),
    "maximum": torch.maximum, "minimum": torch.minimum, "fmax": torch.fmax,
    "max": lambda a, b: a.max(), "min_dim": lambda a, b: a.min(1), "max_dim_keepdim": lambda a, b: a.max(0, keepdim=True),
    "masked_fill": lambda a, b: a.masked_fill(a > b, 255), "logical_and": lambda a, b: torch.logical_and(a, b),
}, U8_A, U8_B)  # fmt: skip
group("uint8-promotion", {
    "with_int8": lambda a, i8, b, i, f: a + i8, "with_bool": lambda a, i8, b, i, f: a + b, "mul_bool": lambda a, i8, b, i, f: a * b,
    "with_python_int": lambda a, i8, b, i, f: a * 2, "with_int64": lambda a, i8, b, i, f: a - i,
    "with_float": lambda a, i8, b, i, f: a * f, "with_python_float": lambda a, i8, b, i, f: a * 0.5,
    "with_f16": lambda a, i8, b, i, f: a + f.half(), "bool_where": lambda a, i8, b, i, f: torch.where(b, a, i8),
}, U8_A, ints(3, 5, dtype=torch.int8, low=-128, high=128), bools(3, 5), ints(3, 5, low=-300, high=300), X)  # fmt: skip
_CAST_TARGETS = {"i8": torch.int8, "i16": torch.int16, "i32": torch.int32, "i64": torch.int64, "bool": torch.bool,
                 "f16": torch.float16, "bf16": torch.bfloat16, "f32": torch.float32, "f64": torch.float64}  # fmt: skip
group("uint8-casts", {
    **{f"to_{tag}": (lambda a, f, i, b, _d=d: a.to(_d)) for tag, d in _CAST_TARGETS.items()},
    **{f"from_{tag}": (lambda a, f, i, b, _d=d: (f if _d.is_floating_point else i).to(_d).to(torch.uint8)) for tag, d in _CAST_TARGETS.items() if d != torch.bool},
    "from_bool": lambda a, f, i, b: b.to(torch.uint8), "from_i64_wide": lambda a, f, i, b: (i * 1000).to(torch.uint8),
}, U8_A, torch.tensor([[-1.5, 300.7, -300.2, 255.9, 0.4], [-0.5, 127.5, 128.0, 1000.0, -129.0], [2.0, 77.7, -77.7, 511.0, 256.0]]),
   ints(3, 5, low=-300, high=300), bools(3, 5))  # fmt: skip
group("uint8-reductions", {
    "sum": lambda a: a.sum(), "sum_dim_keepdim": lambda a: a.sum(-1, keepdim=True), "prod_dim": lambda a: a.prod(0),
    "amax": lambda a: a.amax(1), "amin_all": lambda a: a.amin(), "argmax": lambda a: a.argmax(1), "argmin": lambda a: a.argmin(),
    "cumsum": lambda a: a.cumsum(1), "cumprod": lambda a: a.cumprod(0), "any": lambda a: a.any(1), "all": lambda a: a.all(),
    "sort": lambda a: torch.sort(a, 1, descending=True), "topk": lambda a: torch.topk(a, 2), "kthvalue": lambda a: torch.kthvalue(a, 2, 1),
}, U8_A)  # fmt: skip
group("uint8-indexing", {
    "index": lambda a, b, i: a[:, i], "index_rows": lambda a, b, i: a[i[1::2] % 3], "index_select": lambda a, b, i: torch.index_select(a, 1, i),
    "gather": lambda a, b, i: torch.gather(a, 1, i.expand(3, 4)), "cat": lambda a, b, i: torch.cat([a, b], 1),
    "stack": lambda a, b, i: torch.stack([a, b]), "slice_step": lambda a, b, i: a[::2, 1::2], "flip": lambda a, b, i: a.flip(-1),
    "pad": lambda a, b, i: F.pad(a, (1, 2), value=9), "transpose": lambda a, b, i: a.t(), "tril": lambda a, b, i: torch.tril(a),
    "index_put": lambda a, b, i: a.index_put((i[1::2] % 3,), b[0]), "index_put_accumulate_wraps": lambda a, b, i: a.index_put((i[:2] % 3,), b[0], accumulate=True),
    "scatter": lambda a, b, i: torch.scatter(a, 1, i[None, :2].expand(3, 2), b), "scatter_add_wraps": lambda a, b, i: torch.scatter_add(a, 1, i[None, :3].expand(3, 3), b),
    "embedding": lambda a, b, i: F.embedding(i, a.t()), "roll": lambda a, b, i: torch.roll(a, 2, 1),
}, U8_A, U8_B, torch.tensor([3, 0, 3, 1]))  # fmt: skip
group("uint8-creation", {
    "eye": lambda a: torch.eye(4, dtype=torch.uint8), "eye_rect": lambda a: torch.eye(3, 5, dtype=torch.uint8) * a,
    "arange_wraps": lambda a: torch.arange(250, 260, dtype=torch.uint8), "full": lambda a: torch.full((2, 3), 255, dtype=torch.uint8),
    "full_minus_one": lambda a: torch.full((2,), -1, dtype=torch.uint8), "zeros_like": lambda a: torch.zeros_like(a) + a[0],
    "ones": lambda a: torch.ones(5, dtype=torch.uint8) - a[1], "linspace": lambda a: torch.linspace(0, 255, 5, dtype=torch.uint8),
}, U8_A)  # fmt: skip
group("uint8-quantize", {
    "per_tensor": lambda x, s, z: _QD.quantize_per_tensor(x, 0.05, 128, 0, 255, torch.uint8),
    "per_tensor_roundtrip": lambda x, s, z: _QD.dequantize_per_tensor(_QD.quantize_per_tensor(x, 0.05, 128, 0, 255, torch.uint8), 0.05, 128, 0, 255, torch.uint8),
    "per_tensor_narrow": lambda x, s, z: _QD.quantize_per_tensor(x, 0.02, 100, 10, 200, torch.uint8),
    "per_channel": lambda x, s, z: _QD.quantize_per_channel(x, s, z, 1, 0, 255, torch.uint8),
    "per_channel_roundtrip": lambda x, s, z: _QD.dequantize_per_channel(_QD.quantize_per_channel(x, s, z, 1, 0, 255, torch.uint8), s, z, 1, 0, 255, torch.uint8),
    "per_channel_axis0": lambda x, s, z: _QD.quantize_per_channel(x.t(), s, z, 0, 0, 255, torch.uint8),
    "dequantize_f16_out": lambda x, s, z: _QD.dequantize_per_tensor(_QD.quantize_per_tensor(x, 0.05, 128, 0, 255, torch.uint8), 0.05, 128, 0, 255, torch.uint8, out_dtype=torch.float16),
}, torch.tensor([[0.025, 0.075, -0.125, 3.0, -9.0], [1.0, -1.0, 0.0, 0.5, 100.0], [0.1, 0.2, 0.3, 0.4, 0.6]]) * 1.0 + X * 0.01,
   floats(5, low=0.01, high=0.1), ints(5, low=100, high=156))  # fmt: skip

# -- f64 (emulated: computed exactly by the runtime) ------------------------

group("f64", {
    "exp": lambda a, b: torch.exp(a), "div": torch.div, "sum": lambda a, b: a.sum(1),
    "matmul": lambda a, b: a @ b.t(), "softmax": lambda a, b: torch.softmax(a, -1), "to_f32": lambda a, b: a.float(),
}, X.double(), Y.double())  # fmt: skip
case("f32-to-f64", lambda a: a.double() * 3, X)

# -- ops rducc decomposes itself (rducc.frontend.aten_rewrites) --------------

SQUARES = floats(2, 4, 4)
group("searching-counting", {
    "bucketize": lambda a, b: torch.bucketize(a, torch.tensor([-1.0, 0.0, 1.0])),
    "bucketize_right_int32": lambda a, b: torch.bucketize(a, b[0].sort().values, right=True, out_int32=True),
    "bucketize_ties": lambda a, b: torch.bucketize(a.round(), torch.tensor([-1.0, 0.0, 1.0])),
    "searchsorted_rows": lambda a, b: torch.searchsorted(b.sort(-1).values, a),
    "searchsorted_side_right": lambda a, b: torch.searchsorted(b[0].sort().values, a.round(), side="right"),
    "histc_range": lambda a, b: torch.histc(a, bins=5, min=-2, max=2),
    "histc_data_range": lambda a, b: torch.histc(a, bins=7),
    "histc_constant": lambda a, b: torch.histc(a * 0 + 1, bins=4),
    "histc_f64": lambda a, b: torch.histc(a.double(), bins=3, min=-1, max=1),
    "histogramdd_edges": lambda a, b: torch.histogramdd(torch.cat([a.reshape(-1, 3), torch.tensor([[2.0, 1.0, -2.0]])]), bins=[torch.tensor([-1.0, 0.0, 0.5, 2.0]), torch.tensor([-2.0, 0.0, 1.0]), torch.tensor([-3.0, 3.0])]).hist,
    "histogramdd_weight_density": lambda a, b: torch.histogramdd(a.reshape(-1, 3)[:, :2], bins=[torch.tensor([-2.0, -0.5, 0.0, 3.0]), torch.tensor([-1.0, 1.0])], weight=b.reshape(-1, 3)[:, 0].abs(), density=True).hist,
    "take_scalar_index": lambda a, b: torch.take(a, torch.tensor(-3)) + torch.take(a, torch.tensor([[0, 14], [-1, 7]])).sum(),
    "repeat_interleave_tensor": lambda a, b: a.repeat_interleave(torch.tensor([1, 0, 3]), dim=0, output_size=4),
    "repeat_interleave_int": lambda a, b: a.repeat_interleave(2, dim=1),
    "repeat_interleave_flat": lambda a, b: a.repeat_interleave(3),
    "empty_permuted": lambda a, b: torch.empty_permuted((3, 5), (1, 0)).fill_(2.0) + a,
}, X, Y)  # fmt: skip
group("products-linalg", {
    "det": lambda m, a, b, w: torch.linalg.det(m), "det_3x3": lambda m, a, b, w: torch.linalg.det(m[0, :3, :3]),
    "det_singular": lambda m, a, b, w: torch.linalg.det(torch.ones(3, 3) + m[0, :3, :3] * 0),
    "det_needs_pivot": lambda m, a, b, w: torch.linalg.det(torch.tensor([[0.0, 1.0], [2.0, 3.0]]) + m[0, :2, :2] * 0),
    "slogdet": lambda m, a, b, w: torch.linalg.slogdet(m), "det_f64": lambda m, a, b, w: torch.linalg.det(m.double()),
    "det_empty": lambda m, a, b, w: torch.linalg.det(m[:, :0, :0]), "slogdet_empty": lambda m, a, b, w: torch.linalg.slogdet(m[0, :0, :0]),
    "logdet_empty": lambda m, a, b, w: torch.logdet(m[0, :0, :0]),
    "bilinear": lambda m, a, b, w: F.bilinear(a, b, w, w[:, 0, 0]),
    "bilinear_batched": lambda m, a, b, w: F.bilinear(a[None].expand(2, 3, 5), b[None].expand(2, 3, 5), w[:1], None),
}, SQUARES, X, Y, floats(2, 5, 5))  # fmt: skip
group("lu-rectangular", {  # getrf's packing of a wide and a tall matrix (min(m, n) steps)
    "lu_factor_wide": lambda m: torch.linalg.lu_factor(m[0, :3, :]), "lu_factor_tall": lambda m: torch.linalg.lu_factor(m[:, :, :3]),
}, SQUARES)  # fmt: skip
group("int-mm", {
    "int_mm": lambda a, b: torch._int_mm(a, b), "int_mm_t": lambda a, b: torch._int_mm(a, b.t().contiguous()),
}, ints(16, 24, dtype=torch.int8, low=-128, high=128), ints(24, 24, dtype=torch.int8, low=-128, high=128))  # fmt: skip
group("prims-and-legacy", {
    "collapse": lambda a, w: torch.ops.prims.collapse(a, 1, 3), "collapse_first": lambda a, w: torch.ops.prims.collapse(a, 0, 1),
    "convert_element_type": lambda a, w: torch.ops.prims.convert_element_type(a, torch.float16),
    "convert_element_type_int": lambda a, w: torch.ops.prims.convert_element_type(a * 3, torch.int32),
    "_convolution": lambda a, w: torch.ops.aten._convolution(a, w, None, [1, 1], [1, 1], [1, 1], False, [0, 0], 1, False, False, True, True),
    "_convolution_transposed": lambda a, w: torch.ops.aten._convolution(a, w.transpose(0, 1)[:2], None, [2, 2], [0, 0], [1, 1], True, [1, 1], 1, False, False, True, True),
}, floats(1, 2, 5, 6), floats(3, 2, 3, 3))  # fmt: skip

_A = torch.ops.aten
group("upsample-nearest-overloads", {
    "1d": lambda a: _A.upsample_nearest1d.default(a[0], [9]), "1d_scale": lambda a: _A.upsample_nearest1d.default(a[0], [7], 1.5),
    "1d_vec": lambda a: _A.upsample_nearest1d.vec(a[0], None, [2.0]), "2d": lambda a: _A.upsample_nearest2d.default(a, [7, 9]),
    "2d_scales": lambda a: _A.upsample_nearest2d.default(a, [6, 8], 1.5, 1.7), "2d_vec_size": lambda a: _A.upsample_nearest2d.vec(a, [3, 11], None),
    "3d": lambda a: _A.upsample_nearest3d.default(a[None], [3, 5, 7]), "3d_vec": lambda a: _A.upsample_nearest3d.vec(a[None], None, [2.0, 1.5, 2.0]),
    "exact1d": lambda a: _A._upsample_nearest_exact1d.default(a[0], [9]), "exact2d_vec": lambda a: _A._upsample_nearest_exact2d.vec(a, None, [1.5, 2.5]),
    "exact3d": lambda a: _A._upsample_nearest_exact3d.default(a[None], [2, 6, 3]), "interpolate_exact": lambda a: F.interpolate(a, size=(7, 3), mode="nearest-exact"),
    "interpolate_1d": lambda a: F.interpolate(a[0], scale_factor=3), "interpolate_3d_f16": lambda a: F.interpolate(a[None].half(), size=(2, 8, 10)),
}, floats(1, 2, 4, 5))  # fmt: skip

# -- complex values as pairs of reals, FFT as DFTs ------------------------------

SIGNAL = floats(2, 3, 8)
_SPECTRAL_WEIGHTS = torch.complex(floats(3, 4, 3), floats(3, 4, 3))  # a complex constant: stored as its pairs
group("complex-more", {
    "fno_einsum_constant_weights": lambda x, t: torch.fft.irfft(torch.einsum("bix,iox->box", torch.fft.rfft(x)[..., :3], _SPECTRAL_WEIGHTS), n=8),
    "mm": lambda x, t: torch.view_as_real(torch.fft.fft(x)[0].T @ torch.complex(t, -t)),
    "bmm_of_a_real_cast": lambda x, t: torch.view_as_real(torch.fft.fft(x).transpose(1, 2) @ t[None].expand(2, 3, 4).to(torch.cfloat)),
    "complex_of_parts": lambda x, t: torch.view_as_real(torch.complex(t, t.flip(0)) * torch.complex(t[0], t[1])),
    "reciprocal": lambda x, t: torch.view_as_real(torch.fft.fft(x).reciprocal()),
    "powers": lambda x, t: (lambda z: torch.view_as_real(torch.cat([z**2, z.pow(3), z.pow(-2), z**0.5, z.pow(-1.5)], -1)))(torch.complex(t, t.flip(0))),
    "sgn_where": lambda x, t: torch.view_as_real(torch.fft.fft(x * (x > 0)).sgn()),
}, SIGNAL, floats(3, 4))  # fmt: skip
group("complex", {
    "view_as_complex_real": lambda x, t: torch.view_as_real(torch.view_as_complex(x.reshape(2, 3, 4, 2)) * 2),
    "rope": lambda x, t: torch.view_as_real(torch.view_as_complex(x.reshape(2, 3, 4, 2)) * torch.polar(torch.ones_like(t), t)).flatten(2),
    "polar": lambda x, t: torch.view_as_real(torch.polar(t.abs(), t)),
    "mul_div_add_sub": lambda x, t: torch.view_as_real((lambda z: z * z.conj() - z / (z + 1) + 0.5 * z - 1)(torch.view_as_complex(x.reshape(2, 3, 4, 2)))),
    "abs_angle": lambda x, t: (lambda z: (z.abs(), z.angle(), z.real, z.imag))(torch.view_as_complex(x.reshape(2, 3, 4, 2))),
    "exp": lambda x, t: torch.view_as_real(torch.view_as_complex(x.reshape(2, 3, 4, 2)).exp()),
    "layout": lambda x, t: torch.view_as_real(torch.cat([(z := torch.view_as_complex(x.reshape(2, 3, 4, 2))).transpose(0, 1)[1:, :, None].squeeze(2), z.permute(1, 0, 2)], 0).sum(-1)),
}, SIGNAL, floats(3, 4))  # fmt: skip
group("fft", {
    "rfft": lambda x: torch.view_as_real(torch.fft.rfft(x)), "rfft_abs": lambda x: torch.fft.rfft(x).abs(),
    "rfft_ortho_dim1": lambda x: torch.view_as_real(torch.fft.rfft(x, dim=1, norm="ortho")),
    "irfft": lambda x: torch.fft.irfft(torch.fft.rfft(x)), "irfft_n": lambda x: torch.fft.irfft(torch.fft.rfft(x) * 2, n=7, norm="forward"),
    "fft": lambda x: torch.view_as_real(torch.fft.fft(torch.view_as_complex(x.reshape(2, 3, 4, 2)), norm="ortho")),
    "ifft2": lambda x: torch.view_as_real(torch.fft.ifft2(torch.fft.fft2(x))),
    "rfft2": lambda x: torch.view_as_real(torch.fft.rfft2(x)), "irfftn": lambda x: torch.fft.irfftn(torch.fft.rfftn(x, dim=(0, 2)), s=(2, 8), dim=(0, 2)),
    "hfft": lambda x: torch.fft.hfft(torch.view_as_complex(x.reshape(2, 3, 4, 2)), n=6),
    "fft_odd": lambda x: torch.view_as_real(torch.fft.fft(x[..., :5])),
    "fft2_padded": lambda x: torch.view_as_real(torch.fft.fft2(x, s=(5, 9))),
    "pad_flip": lambda x: torch.view_as_real(torch.nn.functional.pad(torch.fft.fft(x), (1, 2)).flip(0)),
}, SIGNAL)  # fmt: skip

# -- bugs found (issue 17 item 7) -----------------------------------------------

_INTS = ints(3, 4)
group("rounding-integers", {
    "floor_i64": lambda i: torch.floor(i), "ceil_i32": lambda i: torch.ceil(i.int()), "round_i8": lambda i: torch.round(i.to(torch.int8)),
    "trunc_i16": lambda i: torch.trunc(i.short()), "fix_i64": lambda i: torch.fix(i), "round_u8": lambda i: torch.round(i.abs().to(torch.uint8)),
}, _INTS)  # fmt: skip
group("rank0-reductions", {
    "mean_dim0": lambda a: a.sum().mean(0), "mean_dim_neg_keepdim": lambda a: a.sum().mean(-1, keepdim=True),
    "sum_dim0": lambda a: a.sum().sum(0), "amax": lambda a: a.sum().amax(0), "argmax": lambda a: a.sum().argmax(0),
    "argmin_keepdim": lambda a: a.sum().argmin(0, keepdim=True), "prod": lambda a: a.sum().prod(0),
    "var": lambda a: a.sum().var(0, correction=0), "logsumexp": lambda a: a.sum().logsumexp(0), "std_empty_dims": lambda a: a.sum().std(dim=[], correction=0),
}, X)  # fmt: skip
group("as_strided-of-views", {
    "slice": lambda a: torch.as_strided(a[1:], (2, 2), (1, 2)), "select": lambda a: torch.as_strided(a[1], (2, 2), (1, 2)),
    "narrow": lambda a: torch.as_strided(a.narrow(1, 2, 3), (3, 2), (2, 1)), "explicit_offset": lambda a: torch.as_strided(a[:, 3:], (2, 2), (1, 3), 5),
    "expand": lambda a: torch.as_strided(a[2:, 1:].expand(2, 1, 4), (2, 2), (1, 1)), "transposed_slice": lambda a: torch.as_strided(a.t()[1:], (2, 2), (1, 1)),
}, X)  # fmt: skip
group("unfold-empty-window", {
    "size0": lambda a: a.unfold(1, 0, 2), "size0_dim0": lambda a: a.unfold(0, 0, 1), "size0_then_add": lambda a: a.unfold(-1, 0, 3) + 1,
    "size0_sum": lambda a: a.unfold(1, 0, 1).sum(-1), "size0_empty_dim": lambda a: a[:, :0].unfold(1, 0, 1),
}, X)  # fmt: skip

# -- outputs -----------------------------------------------------------------

case("output-named-tuple", lambda a: torch.max(a, 0), X)
case("output-nested", lambda a: {"double": a * 2, "pair": (a.sum(), a.amax()), "list": [a + 1]}, X)
case("output-python-numbers", lambda a: {
    "item_float": a.sum().item(), "tensor": a * 2, "item_int": a.argmax().item(), "item_bool": (a > -5).all().item(),
    "constant_int": 3, "constant_float": 2.5, "constant_bool": True, "in_tuple": (a.amax().item(), a + 1),
}, X)  # fmt: skip


# --------------------------------------------------------------------------
# Running a case
# --------------------------------------------------------------------------

_EXPORTED: dict[str, torch.export.ExportedProgram] = {}


def exported(one: Case) -> torch.export.ExportedProgram:
    """The case's exported program, made once for both opt levels."""
    if one.name not in _EXPORTED:
        with torch.no_grad():
            _EXPORTED[one.name] = torch.export.export(Model(one.fn), one.inputs)
    return _EXPORTED[one.name]


def assert_matches(actual: object, expected: object, where: str = "result") -> None:
    """Same structure; ints/bools bit for bit, floats within the dtype's tolerance."""
    if isinstance(expected, torch.Tensor):
        assert isinstance(actual, torch.Tensor), f"{where}: {type(actual).__name__}, expected a tensor"
        assert actual.dtype == expected.dtype, f"{where}: dtype {actual.dtype}, expected {expected.dtype}"
        assert actual.shape == expected.shape, f"{where}: shape {actual.shape}, expected {expected.shape}"
        if expected.is_floating_point():
            torch.testing.assert_close(actual, expected, equal_nan=True, msg=lambda m: f"{where}: {m}")
        else:
            assert torch.equal(actual, expected), f"{where}: {actual} != {expected}"
        return
    if isinstance(expected, bool | int | float):
        assert type(actual) is type(expected), f"{where}: {type(actual).__name__}, expected {type(expected).__name__}"
        assert actual == pytest.approx(expected, rel=1e-5), f"{where}: {actual} != {expected}"
        return
    if isinstance(expected, dict):
        assert isinstance(actual, dict) and actual.keys() == expected.keys(), where
        for key in expected:
            assert_matches(actual[key], expected[key], f"{where}[{key!r}]")
        return
    assert isinstance(actual, tuple | list) and type(actual) is type(expected), (
        f"{where}: {type(actual).__name__}, expected {type(expected).__name__}"
    )
    assert len(actual) == len(expected), where
    for index, (a, e) in enumerate(zip(actual, expected)):
        assert_matches(a, e, f"{where}[{index}]")


@pytest.mark.parametrize("opt_level", [0, 2])
@pytest.mark.parametrize("one", CASES, ids=[c.name for c in CASES])
def test_op_matches_eager(one: Case, opt_level: int) -> None:
    program = rducc.compile(exported(one), opt_level=opt_level)
    with torch.no_grad():
        expected = one.fn(*one.inputs)
    assert_matches(program(*one.inputs), expected)


@pytest.mark.parametrize("approximate", ["none", "tanh"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16])
def test_gelu_at_infinities(dtype: torch.dtype, approximate: str) -> None:
    """gelu(x) = x * Phi(x), as torch documents it: inf at +inf, nan at -inf (-inf * 0),
    whichever path this CPU's eager kernel takes."""
    x = torch.tensor([math.inf, -math.inf, 1.0], dtype=dtype)
    program = rducc.compile(torch.export.export(Model(lambda v: F.gelu(v, approximate=approximate)), (x,)))
    result = program(x)
    assert result[0].item() == math.inf and math.isnan(result[1].item())
    torch.testing.assert_close(result[2:], F.gelu(x[2:], approximate=approximate))


@pytest.mark.parametrize("activation", ["gelu", "gelu_tanh", "silu"])
def test_recognised_activations_at_non_finite(activation: str) -> None:
    """The runtime runs an f32 map body that computes GELU or SiLU on torch's
    kernel (`map_body._known_activation`); where the input is not finite it keeps
    the formula, x * Phi(x) or x * sigmoid(x): inf at +inf, nan at -inf and nan.
    64 elements: torch's vectorised kernel, which gives nan at +inf for exact GELU."""
    fn = {"gelu": F.gelu, "gelu_tanh": lambda v: F.gelu(v, approximate="tanh"), "silu": F.silu}[activation]
    x = torch.linspace(-6.0, 6.0, 64)
    x[[3, 17, 40]] = torch.tensor([math.inf, -math.inf, math.nan])
    result = rducc.compile(torch.export.export(Model(fn), (x,)))(x)
    assert result[3].item() == math.inf and math.isnan(result[17].item()) and math.isnan(result[40].item())
    finite = torch.isfinite(x)
    torch.testing.assert_close(result[finite], fn(x)[finite])


def test_sort_tiles_along_its_other_dims() -> None:
    """rdu.argsort keeps the sorted dim whole; a target with little SRAM tiles the rows."""
    import dataclasses

    from rducc.targets import load_target

    small = dataclasses.replace(load_target("sn40l"), name="small", sram_bytes=60_000, pmu_bytes=500, pmus=200)
    x = floats(256, 40)
    program = rducc.compile(Model(lambda a: torch.sort(a, dim=1, descending=True)), (x,), target=small)
    assert "scf.for" in program.mlir and "rdu.argsort" in program.mlir
    assert_matches(program(x), torch.sort(x, dim=1, descending=True))


def test_scatter_is_one_op_and_tiles_along_its_other_dims() -> None:
    """scatter_add, index_put accumulate and scatter_reduce are `rdu.scatter`s (no
    [..., J] match mask); a target with little SRAM tiles them along the dims the
    index spans."""
    import dataclasses

    from rducc.targets import load_target

    small = dataclasses.replace(load_target("sn40l"), name="small", sram_bytes=60_000, pmu_bytes=500, pmus=200)
    x, source = floats(256, 40), floats(256, 12)
    index = torch.randint(0, 40, (256, 12), generator=GENERATOR)
    rows = torch.randint(-256, 256, (30,), generator=GENERATOR)

    def fn(a: torch.Tensor, i: torch.Tensor, s: torch.Tensor, r: torch.Tensor) -> tuple[torch.Tensor, ...]:
        return (
            torch.scatter_add(a, 1, i, s), a.index_put((r,), s[:30, :1], accumulate=True),
            torch.scatter_reduce(a, 1, i, s, "amax", include_self=False), torch.scatter_reduce(a, 1, i, s, "mean"),
        )

    program = rducc.compile(Model(fn), (x, index, source, rows), target=small)
    assert "scf.for" in program.mlir and program.mlir.count("rdu.scatter") >= 5
    assert "reduce max" in program.mlir and "reduce sum" in program.mlir
    assert "xi1>" not in program.mlir, "a match mask is back"
    assert_matches(program(x, index, source, rows), fn(x, index, source, rows))


@pytest.mark.parametrize("opt_level", [0, 2])
def test_embedding_bag_exported_with_gradients(opt_level: int) -> None:
    """nn.EmbeddingBag exported outside torch.no_grad calls aten._embedding_bag
    (not the forward-only overload); it imports the same way."""

    class Bags(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.bags = torch.nn.ModuleList(torch.nn.EmbeddingBag(6, 3, mode=mode) for mode in ("sum", "mean", "max"))

        def forward(self, i: torch.Tensor, o: torch.Tensor) -> tuple[torch.Tensor, ...]:
            return tuple(bag(i, o) for bag in self.bags)

    torch.manual_seed(6)
    model = Bags()
    indices, offsets = torch.tensor([1, 3, 3, 0, 5, 2, 4]), torch.tensor([0, 2, 2, 5])
    program = torch.export.export(model, (indices, offsets))
    assert "aten._embedding_bag.default" in {str(n.target) for n in program.run_decompositions().graph.nodes}
    with torch.no_grad():
        expected = model(indices, offsets)
    assert_matches(rducc.compile(program, opt_level=opt_level)(indices, offsets), expected)


def test_case_names_are_unique() -> None:
    names = [c.name for c in CASES]
    assert len(names) == len(set(names))


# --------------------------------------------------------------------------
# The f64 policy
# --------------------------------------------------------------------------


def test_f64_is_marked_emulated_in_the_report() -> None:
    from rducc.tools.report import compile_report, report_dict

    program = rducc.compile(exported(next(c for c in CASES if c.name == "f64")))
    text = compile_report(program.module, program.report)
    assert "float64, which the chip cannot compute: emulated" in text
    assert report_dict(program.module, program.report)["f64_emulated_values"] > 0
    f32 = rducc.compile(exported(next(c for c in CASES if c.name == "softmax")))
    assert "float64" not in compile_report(f32.module, f32.report)


F64_TYPE = re.compile(r"(x|<|: )f64\b")
"""An f64 element type in MLIR text (tensor<3xf64>, tensor<f64>, : f64)."""


@pytest.mark.parametrize("opt_level", [0, 2])
def test_f64_demoted_on_request(opt_level: int) -> None:
    """--f64 demote: the program computes in f32 (no f64 in its MLIR), takes and
    returns float64 tensors through rducc.Program, and the report says so."""
    from rducc.tools.report import compile_report, report_dict

    one = next(c for c in CASES if c.name == "f64")
    program = rducc.compile(exported(one), opt_level=opt_level, f64="demote")
    assert not F64_TYPE.search(program.mlir)
    with torch.no_grad():
        expected = one.fn(*one.inputs)
    actual = program(*one.inputs)
    assert all(value.dtype == expected[key].dtype for key, value in actual.items())
    as_f32 = {key: value.float() for key, value in actual.items()}
    assert_matches(as_f32, {key: value.float() for key, value in expected.items()})
    assert "demoted (computed in float32, --f64 demote" in compile_report(program.module, program.report)
    assert report_dict(program.module, program.report)["f64_demoted_values"] > 0


def test_f64_refused_on_request(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from rducc.errors import RduccError
    from rducc.tools.cli import main

    program = exported(next(c for c in CASES if c.name == "f32-to-f64"))
    with pytest.raises(RduccError, match=r"'_to_copy' is float64.*--f64 refuse"):
        rducc.compile(program, f64="refuse")
    archive = tmp_path / "f64.pt2"
    torch.export.save(program, archive)
    out = tmp_path / "out.mlir"
    assert main([str(archive), "--f64", "refuse", "-o", str(out)]) == 1
    assert "is float64, which the target cannot compute" in capsys.readouterr().err
    assert not out.exists()
    assert main([str(archive), "-o", str(out), "-q"]) == 0
    assert F64_TYPE.search(out.read_text())
    assert main([str(archive), "--f64", "demote", "-o", str(out), "-q"]) == 0
    assert not F64_TYPE.search(out.read_text())


def test_rducc_run_demotes_f64_npy_inputs(tmp_path: Path) -> None:
    """rducc-run on a program compiled with --f64 demote takes float64 .npy inputs
    (rounded to the program's float32), as rducc.Program does."""
    import numpy as np

    from rducc.tools.cli import main
    from rducc.tools.run import main as run_main

    one = next(c for c in CASES if c.name == "f64")
    archive, out = tmp_path / "f64.pt2", tmp_path / "out.mlir"
    torch.export.save(exported(one), archive)
    assert main([str(archive), "--f64", "demote", "-o", str(out), "-q"]) == 0
    inputs = []
    for index, tensor in enumerate(one.inputs):
        inputs += ["--input", str(tmp_path / f"in{index}.npy")]
        np.save(tmp_path / f"in{index}.npy", tensor.numpy())
    assert run_main([str(out), *inputs, "--output", str(tmp_path / "out.npz")]) == 0
    results = np.load(tmp_path / "out.npz")
    with torch.no_grad():
        expected = list(one.fn(*one.inputs).values())
    for index, value in enumerate(expected):
        got = torch.from_numpy(results[f"output_{index}"])
        assert got.dtype == torch.float32
        assert_matches(got, value.float(), f"output_{index}")


# --------------------------------------------------------------------------
# The documented list of what is missing
# --------------------------------------------------------------------------

REFUSED_FORMS: dict[str, tuple[Callable[..., object], tuple[torch.Tensor, ...], str]] = {
    "item-used-inside": (lambda a: torch.ops.aten.elu.default(a, 2.0, a.sum().item()), (X,), "aten._local_scalar_dense.default (a tensor read back as a Python number and passed to aten.elu.default as a Scalar"),
    "embedding_bag-last-offset-sizes": (lambda w, i, o: _EMBEDDING_BAG_FORWARD(w, i, o, False, 1, False, None, True, -1)[2], (floats(6, 3), torch.tensor([1, 3, 0]), torch.tensor([0, 2, 3])), "aten._embedding_bag_forward_only.default (bag_size or max_indices used with include_last_offset"),
    "as_strided-view-input": (lambda a: torch.as_strided(a, (2, 2), (2, 1)), (floats(3, 10)[:, ::2],), "aten.as_strided.default (input that is a view of a storage no node of the graph holds"),
    "index_put-mask-values": (lambda a, m, v: a.index_put((m,), v), (X, bools(3, 5), floats(15)), "aten.index_put.default (a boolean mask with one value per masked element"),
    "index_put-mask-and-index": (lambda a, m, i: _INDEX_PUT(a, [i, m[0]], torch.tensor(1.0)), (X, bools(3, 5), torch.tensor([0, 2])), "aten.index_put.default (a boolean mask with other indices"),
}  # fmt: skip


def _all_in_one(examples: list[tuple[Callable[..., object], tuple[torch.Tensor, ...]]]) -> torch.export.ExportedProgram:
    """One model running every example on its own inputs (one export and compile for all)."""
    inputs = tuple(t for _, example_inputs in examples for t in example_inputs)

    def forward(*xs: torch.Tensor) -> tuple[object, ...]:
        results, start = [], 0
        for fn, example_inputs in examples:
            results.append(fn(*xs[start : start + len(example_inputs)]))
            start += len(example_inputs)
        return tuple(results)

    with torch.no_grad():
        return torch.export.export(Model(forward), inputs)


def test_refused_forms_give_the_unsupported_error() -> None:
    """Every refused form in one model: the one error counts them and names each,
    with the reason and the source line of its first use."""
    program = _all_in_one([(fn, inputs) for fn, inputs, _ in REFUSED_FORMS.values()])
    with pytest.raises(UnsupportedOpsError) as error:
        rducc.compile(program)
    lines = str(error.value).splitlines()
    assert lines[0] == f"the model uses {len(REFUSED_FORMS)} operators rducc cannot import:"
    for _, _, message in REFUSED_FORMS.values():
        assert any(line.strip().startswith(message) and "first at" in line and "test_aten_coverage.py:" in line
                   for line in lines), message


def test_missing_list_matches_the_code() -> None:
    supported = set(supported_ops())
    assert not supported & set(MISSING_OPS), "an op listed as missing is supported"
    assert set(PARTIAL_FORMS) <= supported, "an op listed with refused forms is not supported at all"


def test_coverage_doc_is_generated_from_the_code() -> None:
    doc = (REPO / "docs" / "aten-coverage.md").read_text()
    assert doc == coverage_markdown(), "regenerate with: python -m rducc.tools.coverage > docs/aten-coverage.md"


def test_supported_overload_count() -> None:
    """The issue's goal: at least 180 distinct overloads of decomposed (Core ATen) programs."""
    core = core_aten_supported()
    assert set(core) <= set(supported_ops())
    assert len(supported_ops()) >= 180, f"{len(supported_ops())} overloads supported"
    assert len(core) >= 155, f"{len(core)} overloads with torch's core tag"


@pytest.mark.parametrize("dtype", [torch.uint16, torch.uint32, torch.uint64])
def test_wider_unsigned_dtypes_are_a_clear_error(dtype: torch.dtype) -> None:
    from rducc.errors import RduccError

    program = torch.export.export(Model(lambda a: a.to(dtype)), (U8_A,))
    name = str(dtype).removeprefix("torch.")
    with pytest.raises(RduccError, match=rf"has dtype {name}, which rducc does not support .*uint8 only"):
        rducc.compile(program)


class SpectralConv(torch.nn.Module):
    """A Fourier neural operator layer: a complex parameter and buffer mixing the lowest modes."""

    def __init__(self) -> None:
        super().__init__()
        self.weights = torch.nn.Parameter(torch.complex(floats(3, 4, 5), floats(3, 4, 5)))
        self.register_buffer("shift", torch.complex(floats(4, 1), floats(4, 1)))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        modes = torch.fft.rfft(x)[..., :5]
        return torch.fft.irfft(torch.einsum("bix,iox->box", modes, self.weights) + self.shift, n=x.shape[-1])


@pytest.mark.parametrize("opt_level", [0, 2])
def test_complex_parameters_and_buffers_are_pairs(opt_level: int) -> None:
    model, x = SpectralConv(), floats(2, 3, 16)
    with torch.no_grad():
        program = rducc.compile(torch.export.export(model, (x,)), opt_level=opt_level)
        assert "tensor<3x4x5x2xf32>" in program.mlir
        assert_matches(program(x), model(x))


def test_complex_without_a_pair_form_is_refused_and_a_complex_output_returned() -> None:
    """Complex values are pairs of reals: a complex op torch itself refuses (a reduction by order) is one
    unsupported-operator error naming it; a complex model output (issue 30) is
    written as its pair and handed back complex."""
    as_complex = lambda a: torch.view_as_complex(a.reshape(3, 4, 2))  # noqa: E731
    slots = lambda a: as_complex(a).index_reduce(0, torch.tensor([0, 0, 1]), as_complex(a), "amax")  # noqa: E731
    no_pair_form = torch.export.export(Model(lambda a: torch.view_as_real(slots(a))), (floats(3, 8),))
    with pytest.raises(UnsupportedOpsError, match=r"aten\.scatter_reduce\.two \(reduce='amax' on complex values, "
                                                  r"which have no order"):
        rducc.compile(no_pair_form)
    x = floats(3, 8)
    complex_output = torch.export.export(Model(lambda a: as_complex(a) * 2), (x,))
    result = rducc.compile(complex_output)(x)
    assert result.dtype == torch.complex64
    torch.testing.assert_close(result, as_complex(x) * 2)
