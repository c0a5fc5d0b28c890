"""`#rdu.aten`: one ATen overload a program calls through torch's own kernel.

Two ops call an ATen op by name: `rdu.pointwise_call` (a pointwise op, one
scalar op of an `rdu.map` body, on the chip) and `rdu.host_call` (any other
op with no chip lowering, on the host CPU). Both name it with this attribute,

    #rdu.aten<"aten::polygamma.default", {n = 2 : i64}>

(the overload's qualified name, its constant non-tensor arguments by schema
name, and `, result = 1` when a call yields another result than the first).
What such a name may be is decided here, once (`aten_overload`): an overload
of the `aten` namespace that resolves in this torch, is functional (no
mutation, no alias) and deterministic, and returns tensors. The verifier of
each op refuses any other name, so an MLIR file never runs other code.

A constant is held as a builtin attribute (`holds` says which fits a schema
type): an integer (`i64`; `i1` for a bool), a float (`f64`), a string (also a
memory format by name), an element type (a dtype), a list of these, or `none`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any

from xdsl.dialects.builtin import (
    ArrayAttr,
    DictionaryAttr,
    FloatAttr,
    IntAttr,
    IntegerAttr,
    IntegerType,
    NoneAttr,
    NoneType,
    StringAttr,
)
from xdsl.ir import Attribute, ParametrizedAttribute, TypeAttribute
from xdsl.irdl import irdl_attr_definition
from xdsl.parser import AttrParser
from xdsl.printer import Printer
from xdsl.utils.exceptions import VerifyException

NAMESPACE = "aten"
"""The only namespace a program may call ops of."""

MEMORY_FORMATS = ("contiguous_format", "channels_last", "channels_last_3d", "preserve_format")
"""The torch memory formats a constant may name (as a string)."""


class NotCallable(ValueError):
    """Why a name does not resolve to an ATen overload a program may call."""


def is_tensor_type(schema_type: str) -> bool:
    """`Tensor` or `Tensor?`: an argument a call binds to an operand, not a constant."""
    return schema_type in ("Tensor", "Optional[Tensor]")


@cache
def aten_overload(qualified: str, overload: str) -> Any:
    """The `torch._ops.OpOverload` that `aten::OP` `OVERLOAD` names, when a program
    may call it (module docstring); else `NotCallable` saying why."""
    import torch

    namespace, _, name = qualified.partition("::")
    if namespace != NAMESPACE or not name:
        raise NotCallable("it is not an op of the aten namespace")
    packet = getattr(torch.ops.aten, name, None)
    op = getattr(packet, overload, None) if packet is not None and overload in packet.overloads() else None
    if op is None:
        raise NotCallable("there is no such ATen op overload")
    schema = op._schema
    if schema.is_mutable or any(a.alias_info is not None for a in (*schema.arguments, *schema.returns)):
        raise NotCallable("it mutates or aliases its arguments (not functional)")
    if torch.Tag.nondeterministic_seeded in op.tags:
        raise NotCallable("it is random (random ops have their own lowering)")
    kinds = [str(r.type) for r in schema.returns]
    if not kinds or (any(k != "Tensor" for k in kinds) and kinds != ["List[Tensor]"]):
        raise NotCallable("it does not return only tensors")
    return op


@dataclass(frozen=True)
class Schema:
    """What the verifiers and the runtime need of an overload's schema."""

    tensors: tuple[str, ...]
    """Arguments of type Tensor or Tensor?, in schema order."""
    types: Mapping[str, str]
    """Each argument's schema type (`int`, `Optional[List[float]]`, ...), by name, in order."""
    required: frozenset[str]
    """Arguments without a default."""
    returns: int | None
    """How many tensors it returns; None for a list of tensors (any number)."""


@cache
def schema_of(qualified: str, overload: str) -> Schema:
    """The schema facts of a callable overload (`aten_overload` checks it)."""
    schema = aten_overload(qualified, overload)._schema
    return Schema(
        tuple(a.name for a in schema.arguments if is_tensor_type(str(a.type))),
        {a.name: str(a.type) for a in schema.arguments},
        frozenset(a.name for a in schema.arguments if not a.has_default_value()),
        None if [str(r.type) for r in schema.returns] == ["List[Tensor]"] else len(schema.returns),
    )


def is_none(attr: Attribute) -> bool:
    """`none` (MLIR text reads it back as the none type)."""
    return isinstance(attr, NoneAttr | NoneType)


def _is_int(attr: Attribute) -> bool:
    return isinstance(attr, IntegerAttr) and attr.type != IntegerType(1)


def _is_bool(attr: Attribute) -> bool:
    return isinstance(attr, IntegerAttr) and attr.type == IntegerType(1)


def _is_number(attr: Attribute) -> bool:
    return _is_int(attr) or isinstance(attr, FloatAttr)


_KINDS = {
    "int": lambda a: _is_int(a) or (isinstance(a, StringAttr) and a.data in MEMORY_FORMATS),
    "SymInt": _is_int, "bool": _is_bool, "float": _is_number, "number": lambda a: _is_number(a) or _is_bool(a),
    "str": lambda a: isinstance(a, StringAttr), "ScalarType": lambda a: isinstance(a, TypeAttribute),
}
"""What attribute holds a constant of each schema type (lists: `List[...]` of these)."""


def holds(schema_type: str, attr: Attribute) -> bool:
    """Whether `attr` is a constant of the schema type (`Optional[...]`: also none)."""
    if schema_type.startswith("Optional[") and schema_type.endswith("]"):
        return is_none(attr) or holds(schema_type[len("Optional["):-1], attr)
    if schema_type.startswith("List[") and schema_type.endswith("]"):
        inner = schema_type[len("List["):-1]
        return isinstance(attr, ArrayAttr) and all(holds(inner, a) for a in attr.data)
    kind = _KINDS.get(schema_type)
    return kind is not None and kind(attr)


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
    def of(qualified: str, overload: str, constants: Mapping[str, Attribute], result: int = 0) -> AtenOpAttr:
        return AtenOpAttr(StringAttr(qualified), StringAttr(overload), DictionaryAttr(dict(constants)), IntAttr(result))

    @property
    def full_name(self) -> str:
        """`aten::polygamma.default`."""
        return f"{self.qualified.data}.{self.overload.data}"

    @property
    def op_name(self) -> str:
        """`aten.polygamma.default`, as torch and rducc's messages name ops."""
        return self.full_name.replace("::", ".", 1)

    def torch_op(self) -> Any:
        """The torch overload (`NotCallable` for a name a program may not call)."""
        return aten_overload(self.qualified.data, self.overload.data)

    def schema(self) -> Schema:
        return schema_of(self.qualified.data, self.overload.data)

    def verify_call(self, caller: str, tensors: Sequence[str]) -> None:
        """`caller` (an op's name) may call this overload, binding `tensors` (argument
        names, one per operand) and the constants; else a `VerifyException`."""
        try:
            schema = self.schema()
        except NotCallable as error:
            raise VerifyException(f"'{caller}' cannot call '{self.full_name}': {error}") from None
        for name, constant in self.constants.data.items():
            kind = schema.types.get(name)
            if kind is None:
                raise VerifyException(f"'{self.full_name}' has no argument '{name}'")
            if name in schema.tensors and is_none(constant):
                continue  # an optional tensor given as None
            if name in schema.tensors or not holds(kind, constant):
                raise VerifyException(f"'{self.full_name}' argument '{name}' ({kind}) cannot be {constant}")
        for name in tensors:
            if name not in schema.tensors or name in self.constants.data:
                raise VerifyException(f"'{caller}' binds '{name}', not a tensor argument of {self.full_name}")
        missing = sorted(schema.required - set(tensors) - set(self.constants.data))
        if missing:
            raise VerifyException(f"'{self.full_name}' needs its argument(s) {', '.join(missing)}")
        if schema.returns is not None and self.result.data >= schema.returns:
            raise VerifyException(
                f"'{self.full_name}' has {schema.returns} result(s); result = {self.result.data} is out of range"
            )

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


__all__ = [
    "MEMORY_FORMATS",
    "NAMESPACE",
    "AtenOpAttr",
    "NotCallable",
    "Schema",
    "aten_overload",
    "holds",
    "is_none",
    "is_tensor_type",
    "schema_of",
]
