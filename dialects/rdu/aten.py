"""`#rdu.aten`: one ATen overload a program calls through torch's own kernel.

Two ops call an ATen op by name: `rdu.pointwise_call` (a pointwise op, one
scalar op of an `rdu.map` body, on the chip) and `rdu.host_call` (any other
op with no chip lowering, on the host CPU). Both name it with this attribute,

    #rdu.aten<"aten::polygamma.default", {n = 2 : i64}>

(the overload's qualified name, its constant non-tensor arguments by schema
name, and `, result = 1` when a call yields another result than the first).
What such a name may be is decided here, once: an overload of the `aten`
namespace that resolves in this torch, is functional (no mutation, no alias)
and deterministic, returns tensors (`aten_overload`), and is on the allow-list
of the calling op (`admitted`): `aten_allowlist.txt` beside this file, the ops
that are pure functions of their tensor operands. The list is data, derived by
`rducc.frontend.aten_allowlist` (which also rewrites it; a test checks that it
matches) from the ops the importer routes to each op, plus reviewed additions:
no op on it takes a file name, device, generator, storage, layout or memory
format, or returns uninitialised memory; a string argument of a reviewed
addition may only be one of the values the list names, and an `unsafe` flag
(which skips torch's index checks) must stay false. The verifier of each op
refuses any other name or value with one line, so an MLIR file never runs
other code, reads or writes files, or reads memory it did not write.

A constant is held as a builtin attribute (`holds` says which fits a schema
type): an integer (`i64`; `i1` for a bool), a float (`f64`), a string (also a
memory format by name), an element type (a dtype), a list of these, or `none`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

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


ALLOWLIST = Path(__file__).with_name("aten_allowlist.txt")
"""The ops `rdu.host_call` and `rdu.pointwise_call` may name (module docstring)."""

HOST, POINTWISE = "host", "pointwise"
"""The allow-lists of `aten_allowlist.txt`: `rdu.host_call`'s and `rdu.pointwise_call`'s."""

CALLERS = {"rdu.host_call": HOST, "rdu.pointwise_call": POINTWISE}
"""Which allow-list each calling op reads."""

FORBIDDEN_ARGUMENT_TYPES = frozenset({"str", "Device", "Generator", "Storage", "Layout", "MemoryFormat", "Stream"})
"""Schema types of side arguments no listed op takes (a file name, where or how
memory is allocated, a random stream); a reviewed addition's string arguments
take only the values the list names."""


DIVISOR_ARGUMENTS = frozenset({"num_heads", "groups", "group", "chunks"})
"""Integer arguments torch's kernels divide by (a head, group or chunk count): a
call gives each at least 1 (0 stops the process with SIGFPE)."""


class NotCallable(ValueError):
    """Why a name does not resolve to an ATen overload a program may call."""


@dataclass(frozen=True)
class Admission:
    """One allow-list entry: the string values each string argument may take."""

    strings: Mapping[str, frozenset[str]]


def parse_allowlist(text: str) -> dict[str, dict[str, Admission]]:
    """`aten_allowlist.txt`: lines `KIND aten::op.overload [ARG=v1|v2 ...]`, `#` comments."""
    lists: dict[str, dict[str, Admission]] = {HOST: {}, POINTWISE: {}}
    for line in text.splitlines():
        words = line.split("#", 1)[0].split()
        if not words:
            continue
        kind, name, *values = words
        strings = {arg: frozenset(v for v in allowed.split("|") if v)
                   for arg, _, allowed in (value.partition("=") for value in values)}
        lists[kind][name] = Admission(strings)
    return lists


@cache
def allowlists() -> dict[str, dict[str, Admission]]:
    """The checked-in allow-lists, by kind (`HOST`, `POINTWISE`), then by `aten::op.overload`."""
    return parse_allowlist(ALLOWLIST.read_text(encoding="utf-8"))


def admitted(kind: str, full_name: str) -> Admission:
    """The allow-list entry of `aten::op.overload` for `kind`; `NotCallable` when it has none."""
    entry = allowlists()[kind].get(full_name)
    if entry is None:
        what = "a host call" if kind == HOST else "a pointwise call"
        raise NotCallable(f"it is not on the list of ATen ops {what} may run (rducc/dialects/rdu/{ALLOWLIST.name}: "
                          "pure functions of their tensor operands)")
    return entry


def strings_admitted(constants: Mapping[str, Attribute], admission: Admission) -> bool:
    """Whether every string constant is a value the allow-list entry names for its argument."""
    return all(not isinstance(value, StringAttr) or value.data in admission.strings.get(name, ())
               for name, value in constants.items())


def argument_base_types(argument: Any) -> frozenset[str]:
    """The base schema types an argument's real type names (`Optional[Device]` -> {Device})."""
    words = str(argument.real_type).replace("[", " ").replace("]", " ").replace(",", " ").split()
    return frozenset(words) - {"Optional", "List"}


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


class NamedOverload:
    """What an op-call attribute (`#rdu.aten`, `#rdu.custom`) is named by: its
    `qualified` op name and `overload`, and the constants it binds. The fields are
    declared for type checking only: each attribute declares its own, in its order."""

    if TYPE_CHECKING:
        qualified: StringAttr
        overload: StringAttr
        constants: DictionaryAttr

    @property
    def full_name(self) -> str:
        """`aten::polygamma.default`."""
        return f"{self.qualified.data}.{self.overload.data}"

    @property
    def op_name(self) -> str:
        """`aten.polygamma.default`, as torch and rducc's messages name ops."""
        return self.full_name.replace("::", ".", 1)


def verify_bindings(call: NamedOverload, schema: Schema, caller: str, tensors: Sequence[str]) -> None:
    """`caller` binds `tensors` (one argument name per operand) and `call`'s constants to
    `schema`'s arguments, each of its kind, leaving none required unbound; else a `VerifyException`."""
    constants = call.constants.data
    for name, constant in constants.items():
        kind = schema.types.get(name)
        if kind is None:
            raise VerifyException(f"'{call.full_name}' has no argument '{name}'")
        if name in schema.tensors and is_none(constant):
            continue  # an optional tensor given as None
        if name in schema.tensors or not holds(kind, constant):
            raise VerifyException(f"'{call.full_name}' argument '{name}' ({kind}) cannot be {constant}")
    for name in tensors:
        if name not in schema.tensors or name in constants:
            raise VerifyException(f"'{caller}' binds '{name}', not a tensor argument of {call.full_name}")
    missing = sorted(schema.required - set(tensors) - set(constants))
    if missing:
        raise VerifyException(f"'{call.full_name}' needs its argument(s) {', '.join(missing)}")


@irdl_attr_definition
class AtenOpAttr(NamedOverload, ParametrizedAttribute):
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
            admission = admitted(CALLERS[caller], self.full_name)
        except NotCallable as error:
            raise VerifyException(f"'{caller}' cannot call '{self.full_name}': {error}") from None
        self._verify_side_arguments(admission)
        verify_bindings(self, schema, caller, tensors)
        if schema.returns is not None and self.result.data >= schema.returns:
            raise VerifyException(
                f"'{self.full_name}' has {schema.returns} result(s); result = {self.result.data} is out of range"
            )

    def _verify_side_arguments(self, admission: Admission) -> None:
        """A string constant is one of the values the allow-list names; `unsafe` stays false."""
        for name, constant in self.constants.data.items():
            if isinstance(constant, StringAttr) and name in admission.strings:
                allowed = admission.strings[name]
                if constant.data not in allowed:
                    raise VerifyException(
                        f"'{self.full_name}' argument '{name}' cannot be \"{constant.data}\" "
                        f"(it may be {', '.join(sorted(allowed)) or 'none'})")
            elif isinstance(constant, StringAttr):
                raise VerifyException(f"'{self.full_name}' argument '{name}' cannot be a string")
            if name in DIVISOR_ARGUMENTS and _is_int(constant) and isinstance(constant, IntegerAttr) \
                    and constant.value.data < 1:
                raise VerifyException(f"'{self.full_name}' argument '{name}' must be at least 1 "
                                      f"(torch divides by it), got {constant.value.data}")
            if name == "unsafe" and not (isinstance(constant, IntegerAttr) and _is_bool(constant)
                                         and not constant.value.data):
                raise VerifyException(f"'{self.full_name}' argument 'unsafe' must be false "
                                      "(it skips torch's index checks)")

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
    "ALLOWLIST",
    "CALLERS",
    "DIVISOR_ARGUMENTS",
    "FORBIDDEN_ARGUMENT_TYPES",
    "HOST",
    "MEMORY_FORMATS",
    "POINTWISE",
    "Admission",
    "admitted",
    "allowlists",
    "argument_base_types",
    "parse_allowlist",
    "strings_admitted",
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
