"""`rdu.host_call`: an ATen op the chip cannot run, run on the host CPU.

As the toolchains of real dataflow accelerators do, an operator with no
lowering to the chip (a linalg factorization, `mode`, `histc`, ...) runs on
the host, through torch's own CPU kernel: its operands go to the host over
the host link, its results come back. The op names the ATen overload
(`#rdu.aten<"aten._linalg_svd.default">`), binds each tensor operand to a
schema argument (`tensors`), and carries every other argument as a constant
(`args`). A model file never runs code: only a functional, deterministic
`aten` overload that resolves in the loading process verifies.

Operands and results are tensors at the graph and kernel levels and
off-chip buffers (HBM/DDR) once `rdu-insert-dma` lowers the program: the op
is a kernel boundary of its own, never fused, tiled or placed in SRAM.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any

from xdsl.dialects.builtin import (
    ArrayAttr,
    DictionaryAttr,
    FloatAttr,
    IntegerAttr,
    IntegerType,
    NoneAttr,
    StringAttr,
    TensorType,
)
from xdsl.ir import Attribute, Operation, ParametrizedAttribute, SSAValue, TypeAttribute
from xdsl.irdl import (
    IRDLOperation,
    irdl_attr_definition,
    irdl_op_definition,
    prop_def,
    var_operand_def,
    var_result_def,
)
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.utils.exceptions import VerifyException

from rducc.dialects.contracts import calls_of, is_outlined
from rducc.dialects.memory import BufferType, Tier
from rducc.dialects.op_facts import DimMap, OpFacts, Shape, opaque
from rducc.dialects.shapes import value_bytes, verify_static

NAMESPACE = "aten"
"""The only namespace a host call may name."""


@irdl_attr_definition
class AtenOverloadAttr(ParametrizedAttribute):
    """`#rdu.aten<"aten.linalg_qr.default">`: one ATen overload, by its qualified name."""

    name = "rdu.aten"

    overload: StringAttr

    def verify(self) -> None:
        parts = self.overload.data.split(".")
        if len(parts) != 3 or not all(parts):
            raise VerifyException(
                f"'{self.overload.data}' is not an overload name 'namespace.op.overload'"
            )


def _is_int(attr: Attribute) -> bool:
    return isinstance(attr, IntegerAttr) and attr.type != IntegerType(1)


def _is_bool(attr: Attribute) -> bool:
    return isinstance(attr, IntegerAttr) and attr.type == IntegerType(1)


def _is_number(attr: Attribute) -> bool:
    return _is_int(attr) or isinstance(attr, FloatAttr)


MEMORY_FORMATS = ("contiguous_format", "channels_last", "channels_last_3d", "preserve_format")
"""The torch memory formats a host call may name (as a string)."""

def _is_enum(attr: Attribute) -> bool:
    """An int argument that is one of torch's enums: a memory format, by name."""
    return _is_int(attr) or (isinstance(attr, StringAttr) and attr.data in MEMORY_FORMATS)


_KINDS = {
    "int": _is_enum, "SymInt": _is_int, "bool": _is_bool, "float": _is_number, "number": _is_number,
    "str": lambda a: isinstance(a, StringAttr), "ScalarType": lambda a: isinstance(a, TypeAttribute),
}
"""What attribute holds a constant of each schema type (lists: `List[...]` of these)."""


def holds(schema_type: str, attr: Attribute) -> bool:
    """Whether `attr` is a constant of the schema type (`Optional[...]`: also none)."""
    if schema_type.startswith("Optional[") and schema_type.endswith("]"):
        return isinstance(attr, NoneAttr) or holds(schema_type[len("Optional["):-1], attr)
    if schema_type.startswith("List[") and schema_type.endswith("]"):
        inner = schema_type[len("List["):-1]
        return isinstance(attr, ArrayAttr) and all(holds(inner, a) for a in attr.data)
    kind = _KINDS.get(schema_type)
    return kind is not None and kind(attr)


@dataclass(frozen=True)
class Schema:
    """What the verifier and the runtime need of an overload's schema."""

    tensors: frozenset[str]
    """Arguments of type Tensor or Tensor? (an absent optional tensor is None in `args`)."""
    arguments: frozenset[str]
    types: tuple[tuple[str, str], ...]
    """Each argument's schema type (`int`, `Optional[List[float]]`, ...), by name."""
    required: frozenset[str]
    """Arguments without a default."""
    returns: int | None
    """How many tensors it returns; None for a list of tensors (any number)."""


@cache
def overload_of(name: str) -> Any:
    """The torch OpOverload named `aten.op.overload`; VerifyException when it is
    none, or when it may not run on the host (mutating, aliasing, random)."""
    import torch

    namespace, op, overload = name.split(".")
    if namespace != NAMESPACE:
        raise VerifyException(f"'{name}' is not an aten overload: rdu.host_call runs aten ops only")
    try:
        found = getattr(getattr(torch.ops.aten, op), overload)
    except (AttributeError, RuntimeError):
        raise VerifyException(f"'{name}' is no ATen overload of this torch") from None
    schema = found._schema
    if schema.is_mutable or any(r.alias_info is not None for r in schema.returns):
        raise VerifyException(f"'{name}' mutates or aliases its operands: a host call must be functional")
    if torch.Tag.nondeterministic_seeded in found.tags:
        raise VerifyException(f"'{name}' is random: random ops have their own lowering")
    kinds = [str(r.type) for r in schema.returns]
    if any(k != "Tensor" for k in kinds) and kinds != ["List[Tensor]"]:
        raise VerifyException(f"'{name}' returns other than tensors")
    return found


@cache
def schema_of(name: str) -> Schema:
    """The schema facts of a host-callable overload (`overload_of` checks it)."""
    schema = overload_of(name)._schema
    tensors = frozenset(a.name for a in schema.arguments if str(a.type) in ("Tensor", "Optional[Tensor]"))
    return Schema(
        tensors,
        frozenset(a.name for a in schema.arguments),
        tuple((a.name, str(a.type)) for a in schema.arguments),
        frozenset(a.name for a in schema.arguments if not a.has_default_value()),
        None if [str(r.type) for r in schema.returns] == ["List[Tensor]"] else len(schema.returns),
    )


def _verify_value_type(kind: Attribute, what: str) -> None:
    if isinstance(kind, TensorType):
        verify_static(kind, what)
    elif isinstance(kind, BufferType):
        if kind.tier.data == Tier.SRAM:
            raise VerifyException(f"'rdu.host_call' {what} is in sram: host calls read and write off-chip memory")
    else:
        raise VerifyException(f"'rdu.host_call' {what} must be a tensor or an off-chip buffer, got {kind}")


@irdl_op_definition
class HostCallOp(IRDLOperation, OpFacts):
    """One ATen op run on the host CPU by torch's kernel (module docstring).

    Its chip FLOPs are 0: the cost model charges the host round trip (operands
    and results over the host link, the host's compute) from the target's host
    figures instead. It needs its operands whole (opaque dims, no sharding):
    `rdu-partition` gathers split operands first and runs it on every rank.
    """

    name = "rdu.host_call"
    callee = prop_def(AtenOverloadAttr)
    tensors = prop_def(ArrayAttr[StringAttr])
    args = prop_def(DictionaryAttr)
    inputs = var_operand_def()
    outputs = var_result_def()

    def print(self, printer: Printer) -> None:
        """`"aten.op.overload"(%a, ...) tensors ["self", ...] args {...} : (types) -> (types)`."""
        printer.print_string(" ")
        printer.print_string_literal(self.overload)
        printer.print_operands(self.inputs)
        printer.print_string(" tensors ")
        printer.print_attribute(self.tensors)
        printer.print_string(" args ")
        printer.print_attribute(self.args)
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : ")
        printer.print_function_type([v.type for v in self.inputs], [r.type for r in self.outputs])

    @classmethod
    def parse(cls, parser: Parser) -> HostCallOp:
        overload = parser.parse_str_literal("the ATen overload a host call runs")
        operands = parser.parse_comma_separated_list(parser.Delimiter.PAREN, parser.parse_unresolved_operand)
        parser.parse_keyword("tensors")
        tensors = parser.parse_attribute()
        parser.parse_keyword("args")
        args = parser.parse_attribute()
        attributes = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        function_type = parser.parse_function_type()
        inputs = parser.resolve_operands(operands, function_type.inputs.data, parser.pos)
        if not isinstance(tensors, ArrayAttr) or not all(isinstance(t, StringAttr) for t in tensors.data):
            parser.raise_error("'rdu.host_call' tensors must be a list of argument names")
        if not isinstance(args, DictionaryAttr):
            parser.raise_error("'rdu.host_call' args must be a dictionary")
        names = [t.data for t in tensors.data if isinstance(t, StringAttr)]
        op = cls(overload, inputs, names, dict(args.data), function_type.outputs.data)
        op.attributes |= attributes
        return op

    def __init__(
        self, overload: str, inputs: Sequence[SSAValue], tensors: Sequence[str],
        args: dict[str, Attribute], result_types: Sequence[Attribute],
    ):
        super().__init__(
            operands=[list(inputs)],
            result_types=[list(result_types)],
            properties={
                "callee": AtenOverloadAttr(StringAttr(overload)),
                "tensors": ArrayAttr(StringAttr(t) for t in tensors),
                "args": DictionaryAttr(args),
            },
        )

    @property
    def overload(self) -> str:
        return self.callee.overload.data

    def tensor_names(self) -> list[str]:
        return [t.data for t in self.tensors.data]

    def verify_(self) -> None:
        parent = self.parent_op()
        if parent is not None and parent.name in ("rdu.kernel", "tier.compute", "rdu.map"):
            raise VerifyException(f"'rdu.host_call' runs on the host: it cannot be inside '{parent.name}'")
        schema = schema_of(self.overload)
        names = self.tensor_names()
        if len(names) != len(self.inputs):
            raise VerifyException(
                f"'rdu.host_call' has {len(self.inputs)} operands but binds {len(names)} tensor arguments"
            )
        for name in names:
            if name not in schema.tensors:
                raise VerifyException(f"'rdu.host_call' binds '{name}', not a tensor argument of {self.overload}")
        for name, constant in self.args.data.items():
            if name in schema.tensors and isinstance(constant, NoneAttr):
                continue  # an optional tensor given as None
            if name not in schema.arguments or name in schema.tensors:
                raise VerifyException(f"'rdu.host_call' arg '{name}' is not a non-tensor argument of {self.overload}")
            kind = dict(schema.types)[name]
            if not holds(kind, constant):
                raise VerifyException(f"'rdu.host_call' arg '{name}' of {self.overload} is {kind}, not {constant}")
        missing = schema.required - set(names) - set(self.args.data)
        if missing:
            raise VerifyException(f"'rdu.host_call' misses the arguments {sorted(missing)} of {self.overload}")
        if schema.returns is not None and len(self.outputs) != schema.returns:
            raise VerifyException(
                f"'rdu.host_call' has {len(self.outputs)} results; {self.overload} returns {schema.returns}"
            )
        kinds = {isinstance(v.type, TensorType) for v in (*self.inputs, *self.outputs)}
        if len(kinds) > 1:
            raise VerifyException("'rdu.host_call' operands and results must be all tensors or all buffers")
        for index, value in enumerate(self.inputs):
            _verify_value_type(value.type, f"operand #{index}")
        for index, value in enumerate(self.outputs):
            _verify_value_type(value.type, f"result #{index}")

    def dims_for(self, ins: Sequence[Shape], outs: Sequence[Shape]) -> DimMap:
        """Every dim blocked: torch's kernel needs its operands whole."""
        return opaque(ins, outs)

    def flops(self) -> int:
        """None on the chip: the host computes (the cost model's host figures)."""
        return 0

    def bytes_read(self) -> int:
        """The operands' bytes, which cross the host link to the host."""
        return sum(value_bytes(v) for v in self.inputs)

    def bytes_written(self) -> int:
        """The results' bytes, which cross the host link back."""
        return sum(value_bytes(v) for v in self.outputs)


def host_op_counts(module: Operation) -> Counter[str]:
    """How many host calls of each ATen overload a run of the module makes (an
    outlined layer's once per call of it)."""
    counts: Counter[str] = Counter()
    for op in module.walk():
        if isinstance(op, HostCallOp):
            function = op.parent_op()
            while function is not None and function.name != "func.func":
                function = function.parent_op()
            counts[op.overload] += calls_of(function) if function is not None and is_outlined(function) else 1
    return counts


def host_ops_warning(module: Operation) -> str | None:
    """The one line a compile that runs ops on the host prints, or None when it runs none."""
    counts = host_op_counts(module)
    if not counts:
        return None
    ops = ", ".join(f"{name} x{count}" for name, count in sorted(counts.items()))
    total = sum(counts.values())
    return (f"warning: {total} op{'s' if total > 1 else ''} run on the host CPU (no chip lowering; "
            f"operands and results cross the host link): {ops}")


__all__ = [
    "MEMORY_FORMATS",
    "AtenOverloadAttr",
    "HostCallOp",
    "Schema",
    "holds",
    "host_op_counts",
    "host_ops_warning",
    "overload_of",
    "schema_of",
]
