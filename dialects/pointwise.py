"""`rdu.pointwise_call`: an ATen pointwise op as one scalar op of an `rdu.map` body.

An elementwise ATen op that rducc has no formula for (lgamma, digamma,
polygamma, the Bessel functions, zeta, igamma, nextafter, ...) is imported
generically: a map whose body calls the op, named by a typed attribute,

    %y = rdu.pointwise_call #rdu.aten<"aten::polygamma.default", {n = 2 : i64}> (%x) : (f32) -> f32

The attribute holds the overload's qualified name, the op's constant
non-tensor arguments by schema name (a number, bool, string or `none`) and
which of its results the call yields (`result = 1` for frexp's exponent);
the operands fill its tensor arguments in schema order. The map fuses with
its neighbours like any elementwise op; the runtime runs torch's own CPU
kernel on whole arrays (`rducc.runtime.elementwise.pointwise_call`).

Only ops of the `aten` namespace tagged `torch.Tag.pointwise` with a
functional schema (no mutation, no alias, tensor results) can be named: the
verifier refuses any other name, so an MLIR file never runs other code.

Cost: the chip would evaluate such a function as a polynomial or rational
approximation with a range reduction; the cost model counts one call as
`ASSUMED_ALU_OPS` arithmetic ops of its map (docs/cost-model.md).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import cache
from typing import Any, ClassVar

from xdsl.dialects.builtin import (
    DictionaryAttr,
    FloatAttr,
    IntAttr,
    IntegerAttr,
    IntegerType,
    NoneType,
    StringAttr,
    TensorType,
    i1,
    i64,
)
from xdsl.ir import Attribute, ParametrizedAttribute, SSAValue
from xdsl.irdl import (
    IRDLOperation,
    irdl_attr_definition,
    irdl_op_definition,
    prop_def,
    result_def,
    traits_def,
    var_operand_def,
)
from xdsl.parser import AttrParser
from xdsl.printer import Printer
from xdsl.traits import Pure
from xdsl.utils.exceptions import VerifyException

from rducc.dialects.op_facts import NoCompute
from rducc.dialects.shapes import is_float, is_integer

ASSUMED_ALU_OPS = 24
"""Arithmetic ops one `rdu.pointwise_call` is counted as (per element) in its map's
FLOPs, and so in the PCU work of the map's stage: an assumption, not a
measurement. A special function on a SIMD ALU is a range reduction plus a
polynomial or rational approximation (Cephes' lgamma, digamma, i0, j0 use
degree 6 to 12 polynomials): about 2 x 10 multiply-adds, a division and a few
selects. The real count differs per function (a Chebyshev polynomial of a
tensor degree loops), so the model treats all alike."""

Constant = bool | int | float | str | None
"""A constant non-tensor argument of an ATen op."""


class NotPointwise(ValueError):
    """Why a name does not resolve to a functional pointwise ATen op."""


def _is_tensor(argument_type: Any) -> bool:
    """Whether a schema type is `Tensor` or `Tensor?`."""
    text = str(argument_type)
    return text in ("Tensor", "Optional[Tensor]")


@cache
def resolve(qualified: str, overload: str) -> Any:
    """The `torch._ops.OpOverload` that `aten::NAME` `OVERLOAD` names, when it is a
    functional pointwise op of the `aten` namespace; else `NotPointwise`."""
    import torch

    namespace, _, name = qualified.partition("::")
    if namespace != "aten" or not name:
        raise NotPointwise("it is not an op of the aten namespace")
    packet = getattr(torch.ops.aten, name, None)
    op = getattr(packet, overload, None) if packet is not None and overload in packet.overloads() else None
    if op is None:
        raise NotPointwise("there is no such ATen op overload")
    if torch.Tag.pointwise not in op.tags:
        raise NotPointwise("it is not tagged pointwise")
    schema = op._schema
    if schema.is_mutable or any(a.alias_info is not None for a in (*schema.arguments, *schema.returns)):
        raise NotPointwise("it mutates or aliases its arguments (not functional)")
    if not schema.returns or any(str(r.type) != "Tensor" for r in schema.returns):
        raise NotPointwise("it does not return only tensors")
    return op


def tensor_arguments(op: Any) -> list[str]:
    """The names of the op's tensor arguments (`Tensor`, `Tensor?`), in schema order."""
    return [a.name for a in op._schema.arguments if _is_tensor(a.type)]


def constant_attr(value: Constant) -> Attribute:
    """The attribute holding one constant argument."""
    if value is None:
        return NoneType()  # `none`, as MLIR text reads it back
    if isinstance(value, bool):
        return IntegerAttr(int(value), i1)
    if isinstance(value, int):
        return IntegerAttr(value, i64)
    if isinstance(value, float):
        return FloatAttr(value, 64)
    if isinstance(value, str):
        return StringAttr(value)
    raise TypeError(f"{value!r} is no constant argument of a pointwise op")


def constant_value(attr: Attribute) -> Constant:
    """The Python value of a constant argument's attribute (`VerifyException` for another attribute)."""
    if isinstance(attr, NoneType):
        return None
    if isinstance(attr, IntegerAttr) and isinstance(attr.type, IntegerType):
        value = attr.value.data
        return bool(value) if attr.type.width.data == 1 else int(value)
    if isinstance(attr, FloatAttr):
        return float(attr.value.data)
    if isinstance(attr, StringAttr):
        return attr.data
    raise VerifyException(f"{attr} is not a constant argument (a number, bool, string or none)")


_KINDS: dict[str, tuple[type, ...]] = {
    "int": (int,),
    "float": (int, float),
    "number": (bool, int, float),
    "bool": (bool,),
    "str": (str,),
}


def _check_constant(op_name: str, argument: Any, value: Constant) -> None:
    """`value` fits the schema argument's type (`Optional[T]` also takes None)."""
    text = str(argument.type)
    optional = text.startswith("Optional[")
    base = text.removeprefix("Optional[").removesuffix("]") if optional else text
    if value is None:
        if optional:
            return
        raise VerifyException(f"'{op_name}' argument '{argument.name}' ({text}) cannot be none")
    kinds = _KINDS.get(base)
    if kinds is None or _is_tensor(argument.type):
        raise VerifyException(f"'{op_name}' argument '{argument.name}' of type {text} cannot be a constant")
    if not isinstance(value, kinds) or (base == "int" and isinstance(value, bool)):
        raise VerifyException(f"'{op_name}' argument '{argument.name}' ({text}) cannot be {value!r}")


@irdl_attr_definition
class AtenOpAttr(ParametrizedAttribute):
    """An ATen overload, its constant arguments and the result a call takes:
    `#rdu.aten<"aten::polygamma.default", {n = 2 : i64}>` (`, result = 1` for another result)."""

    name = "rdu.aten"
    qualified: StringAttr
    overload: StringAttr
    constants: DictionaryAttr
    result: IntAttr

    @staticmethod
    def of(qualified: str, overload: str, constants: Mapping[str, Constant], result: int = 0) -> AtenOpAttr:
        return AtenOpAttr(
            StringAttr(qualified),
            StringAttr(overload),
            DictionaryAttr({name: constant_attr(value) for name, value in constants.items()}),
            IntAttr(result),
        )

    @property
    def full_name(self) -> str:
        """`aten::polygamma.default`."""
        return f"{self.qualified.data}.{self.overload.data}"

    def arguments(self) -> dict[str, Constant]:
        """The constant arguments by schema name."""
        return {name: constant_value(attr) for name, attr in self.constants.data.items()}

    def print_parameters(self, printer: Printer) -> None:
        printer.print_string(f'<"{self.full_name}"')
        if self.constants.data:
            printer.print_string(", ")
            printer.print_attr_dict(self.constants.data)
        if self.result.data:
            printer.print_string(f", result = {self.result.data}")
        printer.print_string(">")

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> list[Attribute]:
        constants: dict[str, Attribute] = {}
        result = 0
        with parser.in_angle_brackets():
            full = parser.parse_str_literal("an ATen overload, such as \"aten::lgamma.default\"")
            qualified, dot, overload = full.rpartition(".")
            if not dot or not qualified:
                parser.raise_error(f"'{full}' is not NAMESPACE::OP.OVERLOAD")
            while parser.parse_optional_punctuation(","):
                if parser.parse_optional_keyword("result"):
                    parser.parse_punctuation("=")
                    result = parser.parse_integer(allow_negative=False)
                else:
                    constants = parser.parse_optional_dictionary_attr_dict()
        return [StringAttr(qualified), StringAttr(overload), DictionaryAttr(constants), IntAttr(result)]


def _is_scalar(attr: Attribute) -> bool:
    return not isinstance(attr, TensorType) and (is_float(attr) or is_integer(attr))


@irdl_op_definition
class PointwiseCallOp(IRDLOperation, NoCompute):
    """One result of an ATen pointwise op on scalars, inside an `rdu.map` body.

    Operands fill the op's tensor arguments in schema order; the callee holds
    the rest. Counted by its map (`ASSUMED_ALU_OPS` ops an element).
    """

    name = "rdu.pointwise_call"
    callee = prop_def(AtenOpAttr)
    args = var_operand_def()
    result = result_def()
    traits = traits_def(Pure())
    assembly_format = "qualified($callee) `(` $args `)` attr-dict `:` functional-type($args, $result)"

    ALU_OPS: ClassVar[int] = ASSUMED_ALU_OPS

    def __init__(self, callee: AtenOpAttr, args: Sequence[SSAValue], result_type: Attribute):
        super().__init__(operands=[args], result_types=[result_type], properties={"callee": callee})

    def overload(self) -> Any:
        """The torch op overload it calls (after verification: a functional pointwise aten op)."""
        try:
            return resolve(self.callee.qualified.data, self.callee.overload.data)
        except NotPointwise as error:
            raise VerifyException(f"'rdu.pointwise_call' cannot call '{self.callee.full_name}': {error}") from None

    def verify_(self) -> None:
        for index, scalar in enumerate([*self.args, self.result]):
            if not _is_scalar(scalar.type):
                raise VerifyException(f"'rdu.pointwise_call' value #{index} is {scalar.type}, not a scalar")
        op = self.overload()
        schema = op._schema
        constants = self.callee.arguments()
        known = {a.name: a for a in schema.arguments}
        for name, value in constants.items():
            if name not in known:
                raise VerifyException(f"'{self.callee.full_name}' has no argument '{name}'")
            _check_constant(self.callee.full_name, known[name], value)
        missing = [a.name for a in schema.arguments
                   if not _is_tensor(a.type) and a.name not in constants and not a.has_default_value()]
        if missing:
            raise VerifyException(f"'{self.callee.full_name}' needs its argument(s) {', '.join(missing)}")
        tensors = [name for name in tensor_arguments(op) if name not in constants]
        if len(tensors) != len(self.args):
            raise VerifyException(
                f"'{self.callee.full_name}' takes {len(tensors)} tensor operand(s) "
                f"({', '.join(tensors)}) but the call has {len(self.args)}"
            )
        if self.callee.result.data >= len(schema.returns):
            raise VerifyException(
                f"'{self.callee.full_name}' has {len(schema.returns)} result(s); "
                f"result = {self.callee.result.data} is out of range"
            )


__all__ = [
    "ASSUMED_ALU_OPS",
    "AtenOpAttr",
    "Constant",
    "NotPointwise",
    "PointwiseCallOp",
    "constant_attr",
    "constant_value",
    "resolve",
    "tensor_arguments",
]
