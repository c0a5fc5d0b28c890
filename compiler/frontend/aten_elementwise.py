"""Core ATen elementwise ops, each imported as one `rdu.map`.

Arithmetic runs in the result's "opmath" type (f32 for f16/bf16, as
PyTorch's CPU kernels do; i32 for uint8, wrapped back to 0..255 once) and is
rounded to the result type once; comparisons run in the promoted type of
their operands, as `torch.result_type` says.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import torch
from xdsl.dialects.builtin import BFloat16Type, Float16Type, i1
from xdsl.ir import Attribute, SSAValue

from rducc.dialects.shapes import is_float
from rducc.frontend.aten_common import result_type
from rducc.frontend.converter_api import GraphImporter, converts, fake_value, node_arguments, positional
from rducc.frontend.scalar import Number, ScalarBuilder, opmath_type
from rducc.frontend.types import element_type_of

Formula = Callable[[ScalarBuilder, list[SSAValue]], SSAValue]


def _value_or_number(g: GraphImporter, arg: Any) -> SSAValue | Number:
    if isinstance(arg, torch.fx.Node):
        return g.value(arg)
    if isinstance(arg, bool | int | float):
        return arg
    raise TypeError(f"unexpected elementwise argument {arg!r}")


def elementwise(
    g: GraphImporter,
    node: torch.fx.Node,
    inputs: list[Any],
    formula: Formula,
    compute: Attribute | None = None,
    numbers_in_opmath: bool = False,
) -> SSAValue:
    """One `rdu.map` applying `formula` to inputs converted to the opmath type of
    `compute` (default: the result's type); a number operand is first converted
    to `compute` as torch converts it (an f16/bf16 `compute` rounds it, unless
    `numbers_in_opmath`: torch's mul and div kernels read it in f32)."""
    out = result_type(node)
    promoted = compute or out.element_type
    compute_type = opmath_type(promoted)
    values = [_value_or_number(g, arg) for arg in inputs]

    def body(builder: ScalarBuilder, scalars: list[SSAValue | Number]) -> SSAValue:
        return formula(builder, [builder.operand(s, compute_type, promoted, not numbers_in_opmath) for s in scalars])

    return g.map(values, out, body)


def _promoted_element(a: Any, b: Any) -> Attribute:
    """torch's promoted dtype of two operands (tensors by dtype and rank, or scalars)."""

    def probe(arg: Any) -> Any:
        if isinstance(arg, torch.fx.Node):
            fake = fake_value(arg)
            return torch.empty(fake.shape, dtype=fake.dtype, device="meta")
        return arg

    return element_type_of(torch.result_type(probe(a), probe(b)))


# --------------------------------------------------------------------------
# Unary
# --------------------------------------------------------------------------

_UNARY_MATH = [
    "exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "sqrt", "rsqrt", "tanh",
    "erf", "sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "asinh",
    "atanh", "acosh", "floor", "ceil", "trunc",
]  # fmt: skip


_ROUNDING = frozenset({"aten.floor.default", "aten.ceil.default", "aten.trunc.default", "aten.round.default"})
"""Identity on integer and bool tensors (torch returns the input's values)."""


def _register_unary(target: str, formula: Formula) -> None:
    @converts(target)
    def convert(g: GraphImporter, node: torch.fx.Node) -> SSAValue:
        source = positional(node)[0]
        if target in _ROUNDING and not fake_value(source).dtype.is_floating_point:
            return g.value(source)
        return elementwise(g, node, [source], formula)



def _unary_math(name: str) -> Formula:
    return lambda b, xs: b.unary(name, xs[0])


for _name in _UNARY_MATH:
    _register_unary(f"aten.{_name}.default", _unary_math(_name))

_UNARY_FORMULAS: dict[str, Formula] = {
    "aten.neg.default": lambda b, xs: b.neg(xs[0]),
    "aten.abs.default": lambda b, xs: b.abs(xs[0]),
    "aten.sigmoid.default": lambda b, xs: b.sigmoid(xs[0]),
    "aten.silu.default": lambda b, xs: b.mul(xs[0], b.sigmoid(xs[0])),
    "aten.relu.default": lambda b, xs: b.maximum(xs[0], b.constant(0, xs[0].type)),
    "aten.reciprocal.default": lambda b, xs: b.div(b.constant(1, xs[0].type), xs[0]),
    "aten.round.default": lambda b, xs: b.unary("round", xs[0]),
    "aten.sign.default": lambda b, xs: b.sign(xs[0]),
}
for _target, _formula in _UNARY_FORMULAS.items():
    _register_unary(_target, _formula)


_ERFINV_CENTRAL: tuple[tuple[float, ...], tuple[float, ...]] = (
    (0.886226899, -1.645349621, 0.914624893, -0.140543331),
    (-2.118377725, 1.442710462, -0.329097515, 0.012229801),
)
_ERFINV_TAIL: tuple[tuple[float, ...], tuple[float, ...]] = (
    (-1.970840454, -1.624906493, 3.429567803, 1.641345311),
    (3.543889200, 1.637067800),
)


def _polynomial(b: ScalarBuilder, z: SSAValue, coefficients: tuple[float, ...]) -> SSAValue:
    """c0 + c1 z + c2 z^2 + ... by Horner's rule."""
    total = b.constant(coefficients[-1], z.type)
    for c in reversed(coefficients[:-1]):
        total = b.add(b.mul(total, z), b.constant(c, z.type))
    return total


def _erfinv(b: ScalarBuilder, y: SSAValue) -> SSAValue:
    """torch's calc_erfinv: a rational first guess (central |y| <= 0.7, else the
    tail), two Newton steps on erf(x) = y; +-inf at +-1, NaN past it."""
    one = b.constant(1.0, y.type)
    magnitude = b.abs(y)
    z = b.mul(y, y)
    numerator, denominator = _ERFINV_CENTRAL
    central = b.div(b.mul(y, _polynomial(b, z, numerator)), b.add(b.mul(_polynomial(b, z, denominator), z), one))
    t = b.unary("sqrt", b.neg(b.unary("log", b.div(b.sub(one, magnitude), b.constant(2.0, y.type)))))
    numerator, denominator = _ERFINV_TAIL
    tail = b.div(
        b.binary("copysign", _polynomial(b, t, numerator), y), b.add(b.mul(_polynomial(b, t, denominator), t), one)
    )
    x = b.select(b.compare("le", magnitude, b.constant(0.7, y.type)), central, tail)
    slope = b.constant(2.0 / math.sqrt(math.pi), y.type)
    for _ in range(2):
        x = b.sub(x, b.div(b.sub(b.unary("erf", x), y), b.mul(slope, b.unary("exp", b.neg(b.mul(x, x))))))
    infinite = b.binary("copysign", b.constant(math.inf, y.type), y)
    x = b.select(b.compare("eq", magnitude, one), infinite, x)
    return b.select(b.compare("gt", magnitude, one), b.constant(math.nan, y.type), x)


_register_unary("aten.erfinv.default", lambda b, xs: _erfinv(b, xs[0]))


@converts("aten.gelu.default")
def convert_gelu(g: GraphImporter, node: torch.fx.Node) -> SSAValue:
    approximate = node_arguments(node)["approximate"]
    return elementwise(g, node, [positional(node)[0]], lambda b, xs: b.gelu(xs[0], approximate))


@converts("aten.elu.default")
def convert_elu(g: GraphImporter, node: torch.fx.Node) -> SSAValue:
    """x * scale where x > 0, else alpha * scale * expm1(x * input_scale)."""
    args = node_arguments(node)
    alpha, scale, input_scale = args["alpha"], args["scale"], args["input_scale"]

    def formula(b: ScalarBuilder, xs: list[SSAValue]) -> SSAValue:
        x = xs[0]
        positive = b.mul(x, b.constant(scale, x.type))
        curve = b.unary("expm1", b.mul(x, b.constant(input_scale, x.type)))
        negative = b.mul(curve, b.constant(alpha * scale, x.type))
        return b.select(b.compare("gt", x, b.constant(0, x.type)), positive, negative)

    return elementwise(g, node, [args["self"]], formula)


@converts("aten.leaky_relu.default")
def convert_leaky_relu(g: GraphImporter, node: torch.fx.Node) -> SSAValue:
    slope = node_arguments(node)["negative_slope"]

    def formula(b: ScalarBuilder, xs: list[SSAValue]) -> SSAValue:
        x = xs[0]
        return b.select(b.compare("gt", x, b.constant(0, x.type)), x, b.mul(x, b.constant(slope, x.type)))

    return elementwise(g, node, [positional(node)[0]], formula)


@converts("aten.round.decimals")
def convert_round_decimals(g: GraphImporter, node: torch.fx.Node) -> SSAValue:
    """Half-to-even rounding at 10**-decimals, scaled as torch's kernel scales."""
    decimals = node_arguments(node)["decimals"]
    scale = 10.0 ** abs(decimals)

    def formula(b: ScalarBuilder, xs: list[SSAValue]) -> SSAValue:
        x, factor = xs[0], b.constant(scale, xs[0].type)
        if decimals >= 0:
            return b.div(b.unary("round", b.mul(x, factor)), factor)
        return b.mul(b.unary("round", b.div(x, factor)), factor)

    return elementwise(g, node, [positional(node)[0]], formula)


def _input_element(node: torch.fx.Node, index: int = 0) -> Attribute:
    return element_type_of(fake_value(positional(node)[index]).dtype)


@converts("aten.isnan.default", "aten.isinf.default", "aten.signbit.default")
def convert_float_test(g: GraphImporter, node: torch.fx.Node) -> SSAValue:
    """Tests of a value in its own type (an integer is never NaN or infinite)."""
    test = {"isnan": ScalarBuilder.isnan, "isinf": ScalarBuilder.isinf, "signbit": ScalarBuilder.signbit}
    formula = test[str(node.target).split(".")[1]]
    return elementwise(g, node, [positional(node)[0]], lambda b, xs: formula(b, xs[0]), _input_element(node))


@converts("aten.logical_not.default")
def convert_logical_not(g: GraphImporter, node: torch.fx.Node) -> SSAValue:
    return elementwise(g, node, [positional(node)[0]], lambda b, xs: b.logical_not(xs[0]), i1)


@converts("aten.bitwise_not.default")
def convert_bitwise_not(g: GraphImporter, node: torch.fx.Node) -> SSAValue:
    out = result_type(node).element_type
    return elementwise(g, node, [positional(node)[0]], lambda b, xs: b.bitwise_not(xs[0]), out)


# --------------------------------------------------------------------------
# Binary arithmetic
# --------------------------------------------------------------------------


def _alpha(b: ScalarBuilder, alpha: Number, like: SSAValue, node: torch.fx.Node) -> SSAValue:
    """alpha converted to the result's type first, as torch's add reads it."""
    return b.operand(alpha, like.type, result_type(node).element_type)


_ADD_SUB = {"add": (False, False), "sub": (True, False), "rsub": (True, True)}
"""By op name: (subtracts, swaps its operands): `self + alpha * other`,
`self - alpha * other`, `other - alpha * self`."""


@converts("aten.add.Tensor", "aten.add.Scalar", "aten.sub.Tensor", "aten.sub.Scalar",
          "aten.rsub.Scalar", "aten.rsub.Tensor")
def convert_add_sub(g: GraphImporter, node: torch.fx.Node) -> SSAValue:
    """add, sub and rsub: `x +/- alpha * y`, alpha in the result's type as torch's
    kernels take it; with an alpha, one multiply-add (`fma(+/-alpha, y, x)`, one
    rounding), as torch's vectorized kernel computes it (SGD's weight decay and
    momentum, `grad.add(param, alpha=wd)`: two roundings were an ulp off eager's
    in 0.03% of elements, `sub` in 18%)."""
    args = node_arguments(node)
    alpha = args.get("alpha", 1)
    subtracts, swapped = _ADD_SUB[str(node.target).split(".")[1]]  # aten.rsub.Scalar: rsub
    x, y = (1, 0) if swapped else (0, 1)

    def formula(b: ScalarBuilder, xs: list[SSAValue]) -> SSAValue:
        combine = b.sub if subtracts else b.add
        if alpha == 1:
            return combine(xs[x], xs[y])
        if is_float(xs[y].type):
            return b.multiply_add(_alpha(b, -alpha if subtracts else alpha, xs[y], node), xs[y], xs[x])
        return combine(xs[x], b.mul(xs[y], _alpha(b, alpha, xs[y], node)))

    return elementwise(g, node, [args["self"], args["other"]], formula)


FUSED_AS_EAGER = ("aten.lerp.Scalar", "aten.lerp.Tensor", "aten.addcmul.default", "aten.addcdiv.default")
"""Ops converted as torch's CPU kernel computes them, not decomposed (torch's
decompositions round `lerp` and `addcmul` twice where the kernel's fused
multiply-add rounds once, and divide before scaling in `addcdiv`: 11%, 0.2%
and 0.3% of float32 elements an ulp off eager's; AdamW's update is
`lerp_`, `addcmul_` and `addcdiv_`)."""


@converts("aten.lerp.Scalar", "aten.lerp.Tensor")
def convert_lerp(g: GraphImporter, node: torch.fx.Node) -> SSAValue:
    """`start + weight * (end - start)` as torch's vectorized kernel: one
    multiply-add `fma(weight, end - start, start)` where |weight| < 0.5, else
    `fma(weight - 1, end - start, end)`; a number weight read in opmath."""
    args = node_arguments(node)

    def formula(b: ScalarBuilder, xs: list[SSAValue]) -> SSAValue:
        start, end, weight = xs
        small = b.compare("lt", b.abs(weight), b.constant(0.5, weight.type))
        coefficient = b.select(small, weight, b.sub(weight, b.constant(1.0, weight.type)))
        return b.multiply_add(coefficient, b.sub(end, start), b.select(small, start, end))

    return elementwise(g, node, [args["self"], args["end"], args["weight"]], formula, numbers_in_opmath=True)


@converts("aten.addcmul.default", "aten.addcdiv.default")
def convert_addcmul_addcdiv(g: GraphImporter, node: torch.fx.Node) -> SSAValue:
    """`self + value * t1 * t2` as torch's kernel: `fma(value * t1, t2, self)`;
    `self + value * t1 / t2` as `self + (value * t1) / t2`; value in the
    result's type."""
    args = node_arguments(node)
    value = args.get("value", 1)
    divides = str(node.target) == "aten.addcdiv.default"

    def formula(b: ScalarBuilder, xs: list[SSAValue]) -> SSAValue:
        base, first, second = xs
        scaled = first if value == 1 else b.mul(_alpha(b, value, first, node), first)
        if divides:
            return b.add(base, b.div(scaled, second))
        return b.multiply_add(scaled, second, base)

    return elementwise(g, node, [args["self"], args["tensor1"], args["tensor2"]], formula)


@converts("aten.mul.Tensor", "aten.mul.Scalar")
def convert_mul(g: GraphImporter, node: torch.fx.Node) -> SSAValue:
    """A number factor is read in opmath (f32 for f16/bf16), as torch's mul kernel reads it."""
    return elementwise(g, node, list(positional(node)[:2]), lambda b, xs: b.mul(xs[0], xs[1]), numbers_in_opmath=True)


_BINARY_FORMULAS: dict[str, Formula] = {
    "aten.maximum.default": lambda b, xs: b.torch_extreme(xs[0], xs[1], largest=True),
    "aten.minimum.default": lambda b, xs: b.torch_extreme(xs[0], xs[1], largest=False),
    "aten.pow.Tensor_Tensor": lambda b, xs: b.pow(xs[0], xs[1]),
    "aten.pow.Scalar": lambda b, xs: b.pow(xs[0], xs[1]),
}
for _target, _formula in _BINARY_FORMULAS.items():

    @converts(_target)
    def _convert_binary(
        g: GraphImporter, node: torch.fx.Node, _formula: Formula = _formula
    ) -> SSAValue:
        return elementwise(g, node, [positional(node)[0], positional(node)[1]], _formula)


for _target, _formula in {
    "aten.remainder.Tensor": lambda b, xs: b.remainder(xs[0], xs[1]),
    "aten.remainder.Scalar": lambda b, xs: b.remainder(xs[0], xs[1]),
    "aten.fmod.Tensor": lambda b, xs: b.fmod(xs[0], xs[1]),
    "aten.fmod.Scalar": lambda b, xs: b.fmod(xs[0], xs[1]),
    "aten.atan2.default": lambda b, xs: b.binary("atan2", xs[0], xs[1]),
    "aten.copysign.Tensor": lambda b, xs: b.binary("copysign", xs[0], xs[1]),
    "aten.copysign.Scalar": lambda b, xs: b.binary("copysign", xs[0], xs[1]),
    "aten.fmax.default": lambda b, xs: b.fmax(xs[0], xs[1]),
    "aten.fmin.default": lambda b, xs: b.fmin(xs[0], xs[1]),
    "aten.hypot.default": lambda b, xs: b.unary("sqrt", b.add(b.mul(xs[0], xs[0]), b.mul(xs[1], xs[1]))),
    "aten.ldexp.Tensor": lambda b, xs: b.mul(xs[0], b.unary("exp2", xs[1])),
}.items():

    @converts(_target)
    def _convert_math_binary(
        g: GraphImporter, node: torch.fx.Node, _formula: Formula = _formula
    ) -> SSAValue:
        return elementwise(g, node, [positional(node)[0], positional(node)[1]], _formula)


_SHIFTS = {
    "aten.__lshift__.Scalar": "left", "aten.__lshift__.Tensor": "left",
    "aten.bitwise_left_shift.Tensor": "left", "aten.bitwise_left_shift.Tensor_Scalar": "left",
    "aten.__rshift__.Scalar": "right", "aten.__rshift__.Tensor": "right",
    "aten.bitwise_right_shift.Tensor": "right", "aten.bitwise_right_shift.Tensor_Scalar": "right",
}  # fmt: skip


@converts(*_SHIFTS)
def convert_shift(g: GraphImporter, node: torch.fx.Node) -> SSAValue:
    direction = _SHIFTS[str(node.target)]
    out = result_type(node).element_type
    return elementwise(
        g, node, [positional(node)[0], positional(node)[1]], lambda b, xs: b.shift(direction, xs[0], xs[1]), out
    )


@converts("aten.pow.Tensor_Scalar")
def convert_pow_scalar(g: GraphImporter, node: torch.fx.Node) -> SSAValue:
    """A float exponent is rounded to an f16/bf16 result's dtype first, as torch does.
    On bf16 torch's CPU kernel computes a cube as `x * x * x` and the power -2
    as `1 / (x * x)` in bf16, so the square is rounded to bf16 first (GPT-2's
    tanh GELU cubes its bf16 input under autocast)."""
    base, exponent = positional(node)[0], positional(node)[1]
    dtype = fake_value(node).dtype
    if isinstance(exponent, float) and dtype in (torch.float16, torch.bfloat16):
        exponent = float(torch.tensor(exponent).to(dtype))
    if dtype == torch.bfloat16 and isinstance(exponent, (int, float)) and exponent in (3, -2):
        return elementwise(g, node, [base], _bf16_rounded_power(result_type(node).element_type, exponent))
    return elementwise(g, node, [base], lambda b, xs: b.pow(xs[0], exponent))


def _bf16_rounded_power(half: Attribute, exponent: float) -> Formula:
    """x ** 3 or x ** -2 with the square rounded to the 16-bit type `half` first."""

    def formula(b: ScalarBuilder, xs: list[SSAValue]) -> SSAValue:
        square = b.cast(b.cast(b.mul(xs[0], xs[0]), half), xs[0].type)
        return b.mul(square, xs[0]) if exponent == 3 else b.div(b.constant(1.0, xs[0].type), square)

    return formula


@converts("aten.div.Tensor", "aten.div.Scalar", "aten.div.Tensor_mode", "aten.div.Scalar_mode")
def convert_div(g: GraphImporter, node: torch.fx.Node) -> SSAValue:
    """A number divisor is read in opmath (f32 for f16/bf16), as torch's div kernels
    read a CPU scalar. Rounding division of f16/bf16 by a tensor of rank > 0
    rounds each step to the half type, as torch's kernels compute it there."""
    args = node_arguments(node)
    mode, divisor = args.get("rounding_mode"), args["other"]
    out = result_type(node).element_type
    full = isinstance(divisor, torch.fx.Node) and fake_value(divisor).dim() > 0
    holder = out if mode and full and isinstance(out, Float16Type | BFloat16Type) else None
    if mode is None:
        return elementwise(g, node, [args["self"], divisor], lambda b, xs: b.div(xs[0], xs[1]), numbers_in_opmath=True)
    divide = {"floor": ScalarBuilder.floor_div, "trunc": ScalarBuilder.trunc_div}[mode]
    return elementwise(
        g, node, [args["self"], divisor], lambda b, xs: divide(b, xs[0], xs[1], holder), numbers_in_opmath=True
    )


@converts("aten.clamp.default", "aten.clamp.Tensor", "aten.hardtanh.default")
def convert_clamp(g: GraphImporter, node: torch.fx.Node) -> SSAValue:
    """min(max(x, low), high) with scalar or tensor bounds (NaN propagates)."""
    args = node_arguments(node)
    if str(node.target) == "aten.hardtanh.default":
        low, high = args["min_val"], args["max_val"]
    else:
        low, high = args["min"], args["max"]
    bounds = [bound for bound in (low, high) if bound is not None]

    def formula(b: ScalarBuilder, xs: list[SSAValue]) -> SSAValue:
        value, rest = xs[0], iter(xs[1:])
        if low is not None:
            value = b.maximum(value, next(rest))
        if high is not None:
            value = b.minimum(value, next(rest))
        return value

    return elementwise(g, node, [args["self"], *bounds], formula)


# --------------------------------------------------------------------------
# Comparison, logic, selection
# --------------------------------------------------------------------------

_PREDICATES = {"eq": "eq", "ne": "ne", "lt": "lt", "le": "le", "gt": "gt", "ge": "ge"}
for _op, _predicate in _PREDICATES.items():

    @converts(f"aten.{_op}.Tensor", f"aten.{_op}.Scalar")
    def _convert_compare(
        g: GraphImporter, node: torch.fx.Node, _predicate: str = _predicate
    ) -> SSAValue:
        a, b = positional(node)[0], positional(node)[1]
        promoted = _promoted_element(a, b)
        return elementwise(g, node, [a, b], lambda sb, xs: sb.compare(_predicate, xs[0], xs[1]), promoted)


for _kind in ("and", "or", "xor"):

    @converts(f"aten.logical_{_kind}.default")
    def _convert_logical(g: GraphImporter, node: torch.fx.Node, _kind: str = _kind) -> SSAValue:
        return elementwise(
            g, node, [positional(node)[0], positional(node)[1]], lambda b, xs: b.logical(_kind, xs[0], xs[1]), i1
        )

    @converts(f"aten.bitwise_{_kind}.Tensor", f"aten.bitwise_{_kind}.Scalar")
    def _convert_bitwise(g: GraphImporter, node: torch.fx.Node, _kind: str = _kind) -> SSAValue:
        out = result_type(node).element_type
        return elementwise(
            g, node, [positional(node)[0], positional(node)[1]], lambda b, xs: b.logical(_kind, xs[0], xs[1]), out
        )


@converts("aten.where.self")
def convert_where(g: GraphImporter, node: torch.fx.Node) -> SSAValue:
    condition, a, b = positional(node)[0], positional(node)[1], positional(node)[2]
    holder = result_type(node).element_type
    out = opmath_type(holder)
    values = [_value_or_number(g, x) for x in (condition, a, b)]

    def body(sb: ScalarBuilder, scalars: list[SSAValue | Number]) -> SSAValue:
        return sb.select(
            sb.operand(scalars[0], i1), sb.operand(scalars[1], out, holder), sb.operand(scalars[2], out, holder)
        )

    return g.map(values, result_type(node), body)


# --------------------------------------------------------------------------
# Copies, casts and fills
# --------------------------------------------------------------------------


@converts(
    "aten.clone.default",
    "aten.alias.default",
    "aten.lift_fresh_copy.default",
    "aten.contiguous.default",
    "aten.detach.default",
)
def convert_identity(g: GraphImporter, node: torch.fx.Node) -> SSAValue:
    return g.value(positional(node)[0])


@converts("aten._to_copy.default", "aten.copy.default")
def convert_to_copy(g: GraphImporter, node: torch.fx.Node) -> SSAValue:
    """A dtype cast (or a broadcasting copy); a device/layout-only copy is free."""
    source = positional(node)[1] if str(node.target) == "aten.copy.default" else positional(node)[0]
    value = g.value(source)
    if value.type == result_type(node):
        return value
    return g.map([value], result_type(node), lambda b, xs: xs[0])  # type: ignore[arg-type, return-value]


def fill(g: GraphImporter, node: torch.fx.Node, fill_value: Number) -> SSAValue:
    """A tensor of one value: an input-less `rdu.map`, however large. A float
    value for an integer or bool tensor is converted as torch's cast converts
    it (NaN and out-of-range values included)."""
    out = result_type(node)
    if isinstance(fill_value, float) and not fake_value(node).dtype.is_floating_point:
        fill_value = torch.tensor(fill_value).to(fake_value(node).dtype).item()
    return g.map([], out, lambda b, xs: b.constant(fill_value, out.element_type))


@converts("aten.full.default")
def convert_full(g: GraphImporter, node: torch.fx.Node) -> SSAValue:
    return fill(g, node, node_arguments(node)["fill_value"])


@converts("aten.fill.Scalar")
def convert_fill(g: GraphImporter, node: torch.fx.Node) -> SSAValue:
    return fill(g, node, node_arguments(node)["value"])


@converts("aten.empty.memory_format", "aten.empty_strided.default")
def convert_empty(g: GraphImporter, node: torch.fx.Node) -> SSAValue:
    """Uninitialized memory in PyTorch; rducc gives zeros (any value is correct)."""
    return fill(g, node, 0)


@converts("aten.full_like.default")
def convert_full_like(g: GraphImporter, node: torch.fx.Node) -> SSAValue:
    return fill(g, node, node_arguments(node)["fill_value"])


@converts("aten.scalar_tensor.default")
def convert_scalar_tensor(g: GraphImporter, node: torch.fx.Node) -> SSAValue:
    return fill(g, node, node_arguments(node)["s"])


@converts("aten.zeros.default", "aten.zeros_like.default")
def convert_zeros(g: GraphImporter, node: torch.fx.Node) -> SSAValue:
    return fill(g, node, 0)


@converts("aten.ones.default", "aten.ones_like.default")
def convert_ones(g: GraphImporter, node: torch.fx.Node) -> SSAValue:
    return fill(g, node, 1)
