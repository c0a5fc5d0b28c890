"""Building `rdu.map` bodies: scalar `arith`/`math` code on one element.

`ScalarBuilder` appends ops to a map's block and knows how to convert
between rducc's element types, so the ATen converters read like formulas.

Unsigned values (ui8, torch.uint8) are computed in i32, their "opmath" type:
a map reads a ui8 input with `arith.extui` to i32, computes with the signed
ops (exact: every ui8 value is a non-negative i32) and stores its result with
`arith.trunci`, which wraps modulo 256 as torch's uint8 arithmetic does.
`arith.constant` takes signless integers only, so a ui8 constant is an i32
constant (the value modulo 256) truncated to ui8. The builder's ops also take
ui8 operands directly and then use arith's unsigned forms (`cmpi ult`,
`divui`, `remui`, `maxui`, `shrui`, `uitofp`).
"""

from __future__ import annotations

import math as pymath
from collections.abc import Callable, Sequence

from xdsl.dialects import arith, math
from xdsl.dialects.builtin import (
    AnyFloat,
    BFloat16Type,
    Float16Type,
    FloatAttr,
    IntegerAttr,
    IntegerType,
    LocationAttr,
    TensorType,
    f32,
    i1,
    i32,
    i64,
)
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue

from rducc.dialects.rdu.dataflow import MapOp, RemFOp, YieldOp
from rducc.dialects.shapes import is_bool, is_float, is_integer, is_unsigned

Number = bool | int | float


def opmath_type(element_type: Attribute) -> Attribute:
    """The type arithmetic runs in: f32 for f16/bf16 (as PyTorch's CPU kernels do),
    i32 for ui8 (exact, and wrapped back to 0..255 by the final `trunci`)."""
    if isinstance(element_type, Float16Type | BFloat16Type):
        return f32
    if is_unsigned(element_type):
        return i32
    return element_type


def _unsigned_compare(element_type: Attribute) -> bool:
    """i1 and ui8 order their values as unsigned numbers."""
    return is_bool(element_type) or is_unsigned(element_type)


def _int_width(element_type: Attribute) -> int:
    assert isinstance(element_type, IntegerType)
    return element_type.width.data


def wrap_integer(value: int, element_type: Attribute) -> int:
    """`value` as an integer type holds it (modulo 2**width; a float or i1 type
    leaves it as it is)."""
    if is_float(element_type) or is_bool(element_type):
        return value
    width = _int_width(element_type)
    wrapped = value % (1 << width)
    if not is_unsigned(element_type) and wrapped >= 1 << (width - 1):
        wrapped -= 1 << width
    return wrapped


def _float_width(element_type: Attribute) -> int:
    assert isinstance(element_type, AnyFloat)
    return element_type.bitwidth


class ScalarBuilder:
    """Appends scalar ops, located at `location`, to the end of `block`."""

    def __init__(self, block: Block, location: LocationAttr):
        self.block = block
        self.location = location

    def emit(self, op: Operation) -> SSAValue:
        op.location = self.location
        self.block.add_op(op)
        return op.results[0]

    # -- constants and conversions -------------------------------------------

    def constant(self, value: Number, element_type: Attribute) -> SSAValue:
        """A scalar constant of the given element type."""
        if is_float(element_type):
            return self.emit(arith.ConstantOp(FloatAttr(float(value), element_type)))
        assert isinstance(element_type, IntegerType)
        if is_bool(element_type):
            return self.emit(arith.ConstantOp(IntegerAttr(int(bool(value)), i1)))
        if is_unsigned(element_type):
            wrapped = wrap_integer(int(value), element_type)
            return self.emit(arith.TruncIOp(self.constant(wrapped, i32), element_type))
        return self.emit(arith.ConstantOp(IntegerAttr(int(value), element_type)))

    def cast(self, value: SSAValue, to: Attribute) -> SSAValue:
        """Convert with PyTorch's semantics (float to int truncates; to bool is != 0;
        to ui8 wraps modulo 256, from a float through int64 as torch does)."""
        source = value.type
        if source == to:
            return value
        if is_unsigned(to):
            return self._to_unsigned(value, to)
        if is_unsigned(source) and is_integer(to) and (is_bool(to) or _int_width(to) <= _int_width(source)):
            return self.cast(self.emit(arith.ExtUIOp(value, i32)), to)
        if is_bool(to):
            zero = self.constant(0, source)
            if is_float(source):
                return self.emit(arith.CmpfOp(value, zero, "une"))
            return self.emit(arith.CmpiOp(value, zero, "ne"))
        if is_float(source) and is_float(to):
            if _float_width(to) > _float_width(source):
                return self.emit(arith.ExtFOp(value, to))
            if _float_width(to) < _float_width(source):
                return self.emit(arith.TruncFOp(value, to))
            return self.emit(arith.TruncFOp(self.emit(arith.ExtFOp(value, f32)), to))
        if is_integer(source) and is_float(to):
            if _unsigned_compare(source):
                return self.emit(arith.UIToFPOp(value, to))
            return self.emit(arith.SIToFPOp(value, to))
        if is_float(source) and is_integer(to):
            return self.emit(arith.FPToSIOp(value, to))
        assert isinstance(source, IntegerType) and isinstance(to, IntegerType)
        if to.width.data > source.width.data:
            extend = arith.ExtUIOp if _unsigned_compare(source) else arith.ExtSIOp
            return self.emit(extend(value, to))
        return self.emit(arith.TruncIOp(value, to))

    def _to_unsigned(self, value: SSAValue, to: IntegerType) -> SSAValue:
        """The low bits of the value: torch's wrap-around to uint8 (a float is
        first truncated to int64, as c10's `static_cast_with_inter_type` does)."""
        source = value.type
        if is_float(source):
            value = self.cast(value, i64)
        elif is_bool(source) or is_unsigned(source) or _int_width(source) <= _int_width(to):
            value = self.cast(value, i32)
        return self.emit(arith.TruncIOp(value, to))

    def operand(
        self,
        value: SSAValue | Number,
        element_type: Attribute,
        holder: Attribute | None = None,
        round_to_holder: bool = True,
    ) -> SSAValue:
        """A block value cast to `element_type`, or a Python number as a constant;
        a number is first converted to `holder`, the dtype torch converts it to:
        an integer wraps (`uint8_tensor < 300` compares with 44) and, unless
        `round_to_holder` is False (torch's mul and div read the number in
        opmath), a number for an f16/bf16 holder is rounded to it
        (`bf16_tensor + 1.1` adds 1.1015625)."""
        if isinstance(value, SSAValue):
            return self.cast(value, element_type)
        if holder is not None and isinstance(value, int) and not isinstance(value, bool):
            value = wrap_integer(value, holder)
        if round_to_holder and isinstance(holder, Float16Type | BFloat16Type) and holder != element_type:
            return self.cast(self.constant(value, holder), element_type)
        return self.constant(value, element_type)

    # -- arithmetic ----------------------------------------------------------

    def _binary(
        self,
        a: SSAValue,
        b: SSAValue,
        float_op: Callable[[SSAValue, SSAValue], Operation],
        int_op: Callable[[SSAValue, SSAValue], Operation],
    ) -> SSAValue:
        return self.emit(float_op(a, b) if is_float(a.type) else int_op(a, b))

    def add(self, a: SSAValue, b: SSAValue) -> SSAValue:
        if is_bool(a.type):
            return self.emit(arith.OrIOp(a, b))
        return self._binary(a, b, arith.AddfOp, arith.AddiOp)

    def sub(self, a: SSAValue, b: SSAValue) -> SSAValue:
        return self._binary(a, b, arith.SubfOp, arith.SubiOp)

    def mul(self, a: SSAValue, b: SSAValue) -> SSAValue:
        if is_bool(a.type):
            return self.emit(arith.AndIOp(a, b))
        return self._binary(a, b, arith.MulfOp, arith.MuliOp)

    def multiply_add(self, a: SSAValue, b: SSAValue, c: SSAValue) -> SSAValue:
        """`a * b + c`; for floats one fused multiply-add (`math.fma`, one
        rounding), as torch's vectorized CPU kernels compute `add(alpha=)`,
        `lerp` and `addcmul`."""
        if is_float(a.type):
            return self.emit(math.FmaOp(a, b, c))
        return self.add(self.mul(a, b), c)

    def div(self, a: SSAValue, b: SSAValue) -> SSAValue:
        return self._binary(a, b, arith.DivfOp, arith.DivUIOp if is_unsigned(a.type) else arith.DivSIOp)

    def _rounded(self, value: SSAValue, holder: Attribute | None) -> SSAValue:
        """`value` rounded to `holder` and back (unchanged when holder is None)."""
        return value if holder is None else self.cast(self.cast(value, holder), value.type)

    def floor_div(self, a: SSAValue, b: SSAValue, holder: Attribute | None = None) -> SSAValue:
        """Floor division; `holder`: each float step rounds to it (torch's f16/bf16
        kernels compute in the half type when the divisor is a full tensor)."""
        if is_float(a.type):
            return self._floor_div_float(a, b, holder)
        if is_unsigned(a.type):
            return self.div(a, b)
        return self.emit(arith.FloorDivSIOp(a, b))

    def _floor_div_float(self, a: SSAValue, b: SSAValue, holder: Attribute | None) -> SSAValue:
        """c10's `div_floor_floating`: (a - fmod(a, b)) / b, one less when the
        remainder's sign differs from b's, rounded to the nearest integer; a
        signed zero when that is 0, a / b when b is 0 (`1.0 // 0.1` is 9, not
        floor(1.0 / 0.1) = 10)."""
        zero = self.constant(0, a.type)
        quotient = self._rounded(self.div(a, b), holder)
        mod = self._rounded(self.fmod(a, b), holder)
        div = self._rounded(self.div(self._rounded(self.sub(a, mod), holder), b), holder)
        signs_differ = self.compare("ne", self.compare("lt", b, zero), self.compare("lt", mod, zero))
        fix = self.logical("and", self.compare("ne", mod, zero), signs_differ)
        div = self.select(fix, self._rounded(self.sub(div, self.constant(1, a.type)), holder), div)
        floored = self.unary("floor", div)
        up = self.compare("gt", self._rounded(self.sub(div, floored), holder), self.constant(0.5, a.type))
        floored = self.select(up, self._rounded(self.add(floored, self.constant(1, a.type)), holder), floored)
        floored = self.select(self.compare("ne", div, zero), floored, self.binary("copysign", zero, quotient))
        return self.select(self.compare("eq", b, zero), quotient, floored)

    def trunc_div(self, a: SSAValue, b: SSAValue, holder: Attribute | None = None) -> SSAValue:
        """Division rounded toward zero; `holder` as for `floor_div` (the quotient
        is rounded to it before the truncation)."""
        if is_float(a.type):
            return self.emit(math.TruncOp(self._rounded(self.div(a, b), holder)))
        return self.div(a, b)

    def fmod(self, a: SSAValue, b: SSAValue) -> SSAValue:
        """C `fmod`: the remainder takes the dividend's sign (torch.fmod)."""
        if is_float(a.type):
            return self.emit(RemFOp(a, b))
        return self.emit(arith.RemUIOp(a, b) if is_unsigned(a.type) else arith.RemSIOp(a, b))

    def remainder(self, a: SSAValue, b: SSAValue) -> SSAValue:
        """Python's `%`: the remainder takes the divisor's sign (torch.remainder)."""
        if is_unsigned(a.type):
            return self.fmod(a, b)
        rest = self.fmod(a, b)
        zero = self.constant(0, a.type)
        signs_differ = self.compare("ne", self.compare("lt", rest, zero), self.compare("lt", b, zero))
        fix = self.logical("and", self.compare("ne", rest, zero), signs_differ)
        return self.select(fix, self.add(rest, b), rest)

    def shift(self, direction: str, a: SSAValue, b: SSAValue) -> SSAValue:
        """`a << b` or arithmetic `a >> b`; shifts past the width give 0 (or -1 for
        negative `a >> b`), as torch's CPU kernels do."""
        width = self.constant(a.type.width.data, a.type)  # type: ignore[attr-defined]
        too_far = self.logical("or", self.compare("lt", b, self.constant(0, a.type)), self.compare("ge", b, width))
        if direction == "left":
            return self.select(too_far, self.constant(0, a.type), self.emit(arith.ShLIOp(a, b)))
        if is_unsigned(a.type):
            return self.select(too_far, self.constant(0, a.type), self.emit(arith.ShRUIOp(a, b)))
        capped = self.select(too_far, self.constant(a.type.width.data - 1, a.type), b)  # type: ignore[attr-defined]
        return self.emit(arith.ShRSIOp(a, capped))

    def sign(self, a: SSAValue) -> SSAValue:
        """-1, 0 or 1 (0 for NaN and -0.0, as torch.sign gives)."""
        if is_bool(a.type):
            return a
        zero = self.constant(0, a.type)
        positive = self.cast(self.compare("gt", a, zero), a.type)
        negative = self.cast(self.compare("lt", a, zero), a.type)
        return self.sub(positive, negative)

    def signbit(self, a: SSAValue) -> SSAValue:
        """The sign bit (true for -0.0 and negative NaNs)."""
        if is_bool(a.type):
            return self.constant(False, i1)
        if is_float(a.type):
            bits = IntegerType(_float_width(a.type))
            a = self.emit(arith.BitcastOp(a, bits))
        return self.compare("lt", a, self.constant(0, a.type))

    def isnan(self, a: SSAValue) -> SSAValue:
        if not is_float(a.type):
            return self.constant(False, i1)
        return self.emit(arith.CmpfOp(a, a, "uno"))

    def isinf(self, a: SSAValue) -> SSAValue:
        if not is_float(a.type):
            return self.constant(False, i1)
        return self.emit(arith.CmpfOp(self.abs(a), self.constant(pymath.inf, a.type), "oeq"))

    def neg(self, a: SSAValue) -> SSAValue:
        if is_float(a.type):
            return self.emit(arith.NegfOp(a))
        return self.sub(self.constant(0, a.type), a)

    def maximum(self, a: SSAValue, b: SSAValue) -> SSAValue:
        # i1 compares unsigned: read as signed, true would be -1
        return self._binary(a, b, arith.MaximumfOp, arith.MaxUIOp if _unsigned_compare(a.type) else arith.MaxSIOp)

    def minimum(self, a: SSAValue, b: SSAValue) -> SSAValue:
        return self._binary(a, b, arith.MinimumfOp, arith.MinUIOp if _unsigned_compare(a.type) else arith.MinSIOp)

    def torch_extreme(self, a: SSAValue, b: SSAValue, largest: bool) -> SSAValue:
        """torch.maximum / torch.minimum: NaN when either is NaN, else the larger
        (smaller), and on a tie the first operand, as torch's kernels pick
        (`std::max`): `maximum(+0.0, -0.0)` is +0.0, `maximum(-0.0, +0.0)` is -0.0
        (arith.maximumf would give +0.0 for both)."""
        extreme = self.maximum(a, b) if largest else self.minimum(a, b)
        if not is_float(a.type):
            return extreme
        return self.select(self.compare("eq", a, b), a, extreme)

    def compare(self, predicate: str, a: SSAValue, b: SSAValue) -> SSAValue:
        """`predicate` is one of eq, ne, lt, le, gt, ge (ordered for floats; ne unordered)."""
        if is_float(a.type):
            name = "une" if predicate == "ne" else "o" + predicate
            return self.emit(arith.CmpfOp(a, b, name))
        if predicate in ("eq", "ne"):
            return self.emit(arith.CmpiOp(a, b, predicate))
        return self.emit(arith.CmpiOp(a, b, ("u" if _unsigned_compare(a.type) else "s") + predicate))

    def select(self, condition: SSAValue, a: SSAValue, b: SSAValue) -> SSAValue:
        return self.emit(arith.SelectOp(condition, a, b))

    def logical(self, kind: str, a: SSAValue, b: SSAValue) -> SSAValue:
        """Bitwise and/or/xor (logical on i1)."""
        ops = {"and": arith.AndIOp, "or": arith.OrIOp, "xor": arith.XOrIOp}
        return self.emit(ops[kind](a, b))

    def logical_not(self, a: SSAValue) -> SSAValue:
        return self.emit(arith.XOrIOp(a, self.constant(True, i1)))

    def bitwise_not(self, a: SSAValue) -> SSAValue:
        if is_bool(a.type):
            return self.logical_not(a)
        return self.emit(arith.XOrIOp(a, self.constant(-1, a.type)))

    # -- math ----------------------------------------------------------------

    def unary(self, name: str, a: SSAValue) -> SSAValue:
        """A `math` dialect unary op by its short name (exp, log, tanh, ...)."""
        return self.emit(_MATH_UNARY[name](a))

    def binary(self, name: str, a: SSAValue, b: SSAValue) -> SSAValue:
        """A `math` dialect binary op by its short name (atan2, copysign)."""
        return self.emit(_MATH_BINARY[name](a, b))

    def fmax(self, a: SSAValue, b: SSAValue) -> SSAValue:
        """Maximum that ignores a NaN operand (torch.fmax)."""
        return self._binary(a, b, arith.MaxnumfOp, arith.MaxUIOp if _unsigned_compare(a.type) else arith.MaxSIOp)

    def fmin(self, a: SSAValue, b: SSAValue) -> SSAValue:
        """Minimum that ignores a NaN operand (torch.fmin)."""
        return self._binary(a, b, arith.MinnumfOp, arith.MinUIOp if _unsigned_compare(a.type) else arith.MinSIOp)

    def abs(self, a: SSAValue) -> SSAValue:
        if is_float(a.type):
            return self.emit(math.AbsFOp(a))
        if _unsigned_compare(a.type):
            return a
        return self.emit(math.AbsIOp(a))

    def pow(self, a: SSAValue, b: SSAValue | Number) -> SSAValue:
        """a ** b; small integer exponents become multiplications."""
        if not isinstance(b, SSAValue) and float(b).is_integer() and 0 <= b <= 4:
            result = self.constant(1, a.type)
            for _ in range(int(b)):
                result = self.mul(result, a)
            return result if int(b) else self.constant(1, a.type)
        if not isinstance(b, SSAValue) and b == 0.5 and is_float(a.type):
            return self.unary("sqrt", a)
        exponent = self.operand(b, a.type)
        if is_float(a.type):
            return self.emit(math.PowFOp(a, exponent))
        return self.emit(math.IPowIOp(a, exponent))

    def sigmoid(self, a: SSAValue) -> SSAValue:
        one = self.constant(1.0, a.type)
        return self.div(one, self.add(one, self.unary("exp", self.neg(a))))

    def gelu(self, a: SSAValue, approximate: str) -> SSAValue:
        """GELU, exact (erf) or the tanh approximation, as PyTorch defines them."""
        half = self.constant(0.5, a.type)
        one = self.constant(1.0, a.type)
        if approximate == "tanh":
            cube = self.mul(self.mul(a, a), a)
            inner = self.add(a, self.mul(self.constant(0.044715, a.type), cube))
            scaled = self.mul(self.constant(pymath.sqrt(2.0 / pymath.pi), a.type), inner)
            return self.mul(self.mul(half, a), self.add(one, self.unary("tanh", scaled)))
        scaled = self.mul(a, self.constant(1.0 / pymath.sqrt(2.0), a.type))
        return self.mul(self.mul(half, a), self.add(one, self.unary("erf", scaled)))


_MATH_UNARY: dict[str, Callable[[SSAValue], Operation]] = {
    "exp": math.ExpOp,
    "exp2": math.Exp2Op,
    "expm1": math.ExpM1Op,
    "log": math.LogOp,
    "log2": math.Log2Op,
    "log10": math.Log10Op,
    "log1p": math.Log1pOp,
    "sqrt": math.SqrtOp,
    "rsqrt": math.RsqrtOp,
    "tanh": math.TanhOp,
    "erf": math.ErfOp,
    "sin": math.SinOp,
    "cos": math.CosOp,
    "tan": math.TanOp,
    "asin": math.AsinOp,
    "atan": math.AtanOp,
    "acos": math.AcosOp,
    "acosh": math.AcoshOp,
    "sinh": math.SinhOp,
    "cosh": math.CoshOp,
    "asinh": math.AsinhOp,
    "atanh": math.AtanhOp,
    "floor": math.FloorOp,
    "ceil": math.CeilOp,
    "trunc": math.TruncOp,
    "round": math.RoundEvenOp,
}

_MATH_BINARY: dict[str, Callable[[SSAValue, SSAValue], Operation]] = {
    "atan2": math.Atan2Op,
    "copysign": math.CopySignOp,
}

MapBody = Callable[[ScalarBuilder, list[SSAValue | Number]], SSAValue]
"""Builds a map's scalar body: from the builder and one scalar per input
(a block argument for a tensor input, the number itself for a number)."""


def build_map_op(
    inputs: Sequence[SSAValue | Number], result_type: TensorType, body: MapBody, location: LocationAttr
) -> MapOp:
    """An `rdu.map` (not inserted anywhere): tensor inputs become block
    arguments, numbers stay numbers, the body's value is cast to the result's
    element type, and every op of the body is at `location`."""
    tensors = [v for v in inputs if isinstance(v, SSAValue)]
    block = Block(arg_types=[v.type.element_type for v in tensors])  # type: ignore[attr-defined]
    for arg in block.args:
        arg.location = location
    args = iter(block.args)
    scalars: list[SSAValue | Number] = [next(args) if isinstance(v, SSAValue) else v for v in inputs]
    builder = ScalarBuilder(block, location)
    result = builder.cast(body(builder, scalars), result_type.element_type)
    yield_op = YieldOp(result)
    yield_op.location = location
    block.add_op(yield_op)
    map_op = MapOp(tensors, result_type, Region(block))
    map_op.location = location
    return map_op
