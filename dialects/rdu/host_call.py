"""`rdu.host_call`: an ATen op the chip cannot run, or a user's custom op, run on the host CPU.

As the toolchains of real dataflow accelerators do, an operator with no
lowering to the chip (a linalg factorization, `mode`, `histc`, ...) runs on
the host, through torch's own CPU kernel: its operands go to the host over
the host link, its results come back. The op names the ATen overload and
its constant arguments with `#rdu.aten` (`rducc.dialects.rdu.aten`, which also
names the pointwise ops of map bodies) and binds each tensor operand to a
schema argument (`tensors`). A model file never runs code: only a name that
`#rdu.aten` lets a program call (a functional, deterministic `aten` overload
that resolves in the loading process) verifies. A user's `torch.library`
custom op that cannot be traced into ATen is named with `#rdu.custom`
instead (`rducc.dialects.rdu.custom_op`: its qualified name, schema and
constants); it runs only once the user named the module that registers it.

Operands and results are tensors at the graph and kernel levels and
off-chip buffers (HBM/DDR) once `rdu-insert-dma` lowers the program: the op
is a kernel boundary of its own, never fused, tiled or placed in SRAM.

A complex operand or result (rducc holds complex values as real pairs, a
trailing dim of 2: `rducc.frontend.complex_pairs`) is named in `pairs`: the
host reads such an operand as the complex tensor whose `view_as_real` it is
and writes such a result as its `view_as_real` pair, so torch's complex
kernel (a complex QR, SVD, eigendecomposition) runs whole on the host.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from xdsl.dialects.builtin import ArrayAttr, IntegerAttr, StringAttr, TensorType, f32, f64, i64
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.irdl import (
    IRDLOperation,
    base,
    irdl_op_definition,
    opt_prop_def,
    prop_def,
    var_operand_def,
    var_result_def,
)
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.utils.exceptions import VerifyException

from rducc.dialects.contracts import calls_of, is_outlined
from rducc.dialects.op_facts import DimMap, OpFacts, Shape, opaque
from rducc.dialects.rdu.aten import AtenOpAttr, NotCallable
from rducc.dialects.rdu.custom_op import CustomOpAttr
from rducc.dialects.shapes import value_bytes, verify_static
from rducc.dialects.tier import BufferType, Tier


def _verify_value_type(kind: Attribute, what: str) -> None:
    if isinstance(kind, TensorType):
        verify_static(kind, what)
    elif isinstance(kind, BufferType):
        if kind.tier.data == Tier.SRAM:
            raise VerifyException(f"'rdu.host_call' {what} is in sram: host calls read and write off-chip memory")
    else:
        raise VerifyException(f"'rdu.host_call' {what} must be a tensor or an off-chip buffer, got {kind}")


def _verify_pair_type(kind: Attribute, what: str) -> None:
    """A complex value's pair: f32 or f64 (complex64, complex128) with a trailing dim of 2."""
    assert isinstance(kind, TensorType | BufferType)
    shape = kind.get_shape()
    if not shape or shape[-1] != 2 or kind.element_type not in (f32, f64):
        raise VerifyException(f"'rdu.host_call' {what} is a complex pair, so it must be f32 or f64 with a "
                              f"trailing dim of 2 (real, imaginary), got {kind}")


@irdl_op_definition
class HostCallOp(IRDLOperation, OpFacts):
    """One ATen op run on the host CPU by torch's kernel, or a user's custom op (module docstring).

    Its chip FLOPs are 0: the cost model charges the host round trip (operands
    and results over the host link, the host's compute) from the target's host
    figures instead. It needs its operands whole (opaque dims, no sharding):
    `rdu-partition` gathers split operands first and runs it on every rank.
    """

    name = "rdu.host_call"
    callee = prop_def(base(AtenOpAttr) | base(CustomOpAttr))
    tensors = prop_def(ArrayAttr[StringAttr])
    pair_operands = opt_prop_def(ArrayAttr[StringAttr])
    """The tensor arguments read as complex tensors (the operand is their `view_as_real` pair)."""
    pair_results = opt_prop_def(ArrayAttr[IntegerAttr])
    """The results written as `view_as_real` pairs of the kernel's complex results."""
    inputs = var_operand_def()
    outputs = var_result_def()

    def print(self, printer: Printer) -> None:
        """`#rdu.aten<"aten::op.overload", {...}>(%a, ...) tensors ["self", ...] : (types) -> (types)`
        (`#rdu.custom<...>` for a custom op); complex pairs after the tensors: `pairs ["self"] -> [0, 1]`."""
        printer.print_string(" ")
        printer.print_attribute(self.callee)
        printer.print_operands(self.inputs)
        printer.print_string(" tensors ")
        printer.print_attribute(self.tensors)
        if self.pair_operands is not None or self.pair_results is not None:
            printer.print_string(" pairs ")
            printer.print_attribute(ArrayAttr(StringAttr(n) for n in self.pair_operand_names()))
            printer.print_string(f" -> [{', '.join(map(str, self.pair_result_indices()))}]")
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : ")
        printer.print_function_type([v.type for v in self.inputs], [r.type for r in self.outputs])

    @classmethod
    def parse(cls, parser: Parser) -> HostCallOp:
        callee = parser.parse_attribute()
        operands = parser.parse_comma_separated_list(parser.Delimiter.PAREN, parser.parse_unresolved_operand)
        parser.parse_keyword("tensors")
        tensors = parser.parse_attribute()
        pair_operands: list[str] = []
        pair_results: list[int] = []
        if parser.parse_optional_keyword("pairs") is not None:
            paired = parser.parse_attribute()
            if not isinstance(paired, ArrayAttr) or not all(isinstance(t, StringAttr) for t in paired.data):
                parser.raise_error("'rdu.host_call' pairs must be a list of argument names")
            pair_operands = [t.data for t in paired.data if isinstance(t, StringAttr)]
            parser.parse_punctuation("->")
            pair_results = parser.parse_comma_separated_list(parser.Delimiter.SQUARE, parser.parse_integer)
        attributes = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        function_type = parser.parse_function_type()
        inputs = parser.resolve_operands(operands, function_type.inputs.data, parser.pos)
        if not isinstance(callee, AtenOpAttr | CustomOpAttr):
            parser.raise_error("'rdu.host_call' needs its callee, an #rdu.aten<...> or #rdu.custom<...> attribute")
        if not isinstance(tensors, ArrayAttr) or not all(isinstance(t, StringAttr) for t in tensors.data):
            parser.raise_error("'rdu.host_call' tensors must be a list of argument names")
        names = [t.data for t in tensors.data if isinstance(t, StringAttr)]
        op = cls(callee, inputs, names, function_type.outputs.data, pair_operands, pair_results)
        op.attributes |= attributes
        return op

    def __init__(
        self, callee: AtenOpAttr | CustomOpAttr, inputs: Sequence[SSAValue], tensors: Sequence[str],
        result_types: Sequence[Attribute], pair_operands: Sequence[str] = (), pair_results: Sequence[int] = (),
    ):
        properties: dict[str, Attribute] = {"callee": callee, "tensors": ArrayAttr(StringAttr(t) for t in tensors)}
        if pair_operands or pair_results:
            properties["pair_operands"] = ArrayAttr(StringAttr(n) for n in pair_operands)
            properties["pair_results"] = ArrayAttr(IntegerAttr(i, i64) for i in pair_results)
        super().__init__(operands=[list(inputs)], result_types=[list(result_types)], properties=properties)

    @property
    def is_custom(self) -> bool:
        """Whether it calls a user's custom op (`#rdu.custom`), not an ATen op."""
        return isinstance(self.callee, CustomOpAttr)

    @property
    def overload(self) -> str:
        """The op's name as torch and the report print it: `aten.linalg_qr.default`."""
        return self.callee.op_name

    def tensor_names(self) -> list[str]:
        return [t.data for t in self.tensors.data]

    def pair_operand_names(self) -> list[str]:
        """The tensor arguments read as complex (their operands are `view_as_real` pairs)."""
        return [] if self.pair_operands is None else [t.data for t in self.pair_operands.data]

    def pair_result_indices(self) -> list[int]:
        """The results that are `view_as_real` pairs of the kernel's complex results."""
        return [] if self.pair_results is None else [i.value.data for i in self.pair_results.data]

    def verify_(self) -> None:
        parent = self.parent_op()
        if parent is not None and parent.name in ("rdu.kernel", "tier.compute", "rdu.map"):
            raise VerifyException(f"'rdu.host_call' runs on the host: it cannot be inside '{parent.name}'")
        names = self.tensor_names()
        if len(names) != len(self.inputs):
            raise VerifyException(
                f"'rdu.host_call' has {len(self.inputs)} operands but binds {len(names)} tensor arguments"
            )
        self.callee.verify_call(self.name, names)
        try:
            returns = self.callee.schema().returns
        except NotCallable as error:
            raise VerifyException(f"'rdu.host_call' cannot call '{self.callee.full_name}': {error}") from None
        if returns is not None and len(self.outputs) != returns:
            raise VerifyException(
                f"'rdu.host_call' has {len(self.outputs)} results; {self.overload} returns {returns}"
            )
        kinds = {isinstance(v.type, TensorType) for v in (*self.inputs, *self.outputs)}
        if len(kinds) > 1:
            raise VerifyException("'rdu.host_call' operands and results must be all tensors or all buffers")
        for index, value in enumerate(self.inputs):
            _verify_value_type(value.type, f"operand #{index}")
        for index, value in enumerate(self.outputs):
            _verify_value_type(value.type, f"result #{index}")
        self._verify_pairs(names)

    def _verify_pairs(self, names: list[str]) -> None:
        """Each complex pair names a bound tensor argument or a result, and is typed as a pair."""
        for name in self.pair_operand_names():
            if name not in names:
                raise VerifyException(f"'rdu.host_call' pairs names '{name}', which is not one of its tensors {names}")
            _verify_pair_type(self.inputs[names.index(name)].type, f"operand '{name}'")
        for index in self.pair_result_indices():
            if not 0 <= index < len(self.outputs):
                raise VerifyException(f"'rdu.host_call' pairs names result #{index}; it has {len(self.outputs)}")
            _verify_pair_type(self.outputs[index].type, f"result #{index}")

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
    "HostCallOp",
    "host_op_counts",
    "host_ops_warning",
]
