"""The `tier` memory-tier dialect: where every byte lives.

A tier attribute (`sram`, `hbm`, `ddr`), buffer types that carry tier, shape
and element type, weight globals, allocation (with an SRAM offset once
allocated), and DMA between tiers. Verifiers reject what the chip cannot do.
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects.builtin import (
    I64,
    ArrayAttr,
    DenseIntOrFPElementsAttr,
    IntAttr,
    IntegerAttr,
    StringAttr,
    SymbolNameConstraint,
    SymbolRefAttr,
    TensorType,
    i64,
)
from xdsl.dialects.utils import EnumAttribute
from xdsl.ir import (
    Attribute,
    Dialect,
    Operation,
    ParametrizedAttribute,
    SSAValue,
    SpacedOpaqueSyntaxAttribute,
    TypeAttribute,
)
from xdsl.irdl import (
    IRDLOperation,
    irdl_attr_definition,
    irdl_op_definition,
    operand_def,
    opt_prop_def,
    param_def,
    prop_def,
    result_def,
    traits_def,
)
from xdsl.parser import AttrParser
from xdsl.printer import Printer
from xdsl.traits import (
    MemoryAllocEffect,
    MemoryFreeEffect,
    MemoryReadEffect,
    MemoryWriteEffect,
    SymbolOpInterface,
    SymbolTable,
)
from xdsl.utils.exceptions import VerifyException
from xdsl.utils.str_enum import StrEnum

from rducc.dialects.shapes import byte_width, num_elements, verify_element_type

SRAM_CAPACITY_ATTR = "tier.sram_capacity"
"""Attribute (bytes, on a func or module) that bounds every SRAM offset below it."""


class Tier(StrEnum):
    """The three memory tiers of the chip."""

    SRAM = "sram"
    HBM = "hbm"
    DDR = "ddr"


@irdl_attr_definition
class TierAttr(EnumAttribute[Tier], SpacedOpaqueSyntaxAttribute):
    """`#tier<tier sram>`; inside op formats it prints as the bare word (`in hbm`)."""

    name = "tier.tier"


@irdl_attr_definition
class BufferType(ParametrizedAttribute, TypeAttribute):
    """`!tier.buffer<hbm, 64x128xbf16>`: a dense row-major buffer in one tier."""

    name = "tier.buffer"

    tier: TierAttr = param_def()
    shape: ArrayAttr[IntAttr] = param_def()
    element_type: Attribute = param_def()

    def __init__(self, tier: Tier, shape: Sequence[int], element_type: Attribute):
        super().__init__(
            TierAttr(tier), ArrayAttr(IntAttr(d) for d in shape), element_type
        )

    def get_shape(self) -> tuple[int, ...]:
        return tuple(d.data for d in self.shape.data)

    @property
    def size_in_bytes(self) -> int:
        return num_elements(self.get_shape()) * byte_width(self.element_type)

    def print_parameters(self, printer: Printer) -> None:
        with printer.in_angle_brackets():
            printer.print_string(self.tier.data.value + ", ")
            for dim in self.get_shape():
                printer.print_string(f"{dim}x")
            printer.print_attribute(self.element_type)

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> Sequence[Attribute]:
        with parser.in_angle_brackets():
            tier = parser.parse_str_enum(Tier)
            parser.parse_punctuation(",")
            shape, element_type = parser.parse_ranked_shape()
        return (TierAttr(tier), ArrayAttr(IntAttr(d) for d in shape), element_type)

    def verify(self) -> None:
        if any(d.data < 0 for d in self.shape.data):
            raise VerifyException("tier.buffer dims must be static and >= 0 (no '?')")


def _tier_of(value: SSAValue) -> Tier:
    assert isinstance(value.type, BufferType)
    return value.type.tier.data


def _verify_buffer(value: SSAValue, what: str) -> BufferType:
    buffer = value.type
    assert isinstance(buffer, BufferType)
    verify_element_type(buffer.element_type, what)
    return buffer


@irdl_op_definition
class GlobalOp(IRDLOperation):
    """A named weight, buffer or constant of the model.

    `in hbm` appears once tier placement has chosen where it lives; small
    constants may carry their value inline, weights come from the sidecar.
    """

    name = "tier.global"
    sym_name = prop_def(SymbolNameConstraint())
    global_type = prop_def(TensorType)
    tier = opt_prop_def(TierAttr)
    initial_value = opt_prop_def(DenseIntOrFPElementsAttr)
    traits = traits_def(SymbolOpInterface())
    assembly_format = (
        "$sym_name (`in` $tier^)? `:` $global_type (`=` $initial_value^)? attr-dict"
    )

    def __init__(
        self,
        name: str,
        global_type: TensorType,
        tier: Tier | None = None,
        initial_value: DenseIntOrFPElementsAttr | None = None,
        kind: str | None = None,
    ):
        props: dict[str, Attribute] = {
            "sym_name": StringAttr(name),
            "global_type": global_type,
        }
        if tier is not None:
            props["tier"] = TierAttr(tier)
        if initial_value is not None:
            props["initial_value"] = initial_value
        attributes = {"kind": StringAttr(kind)} if kind else {}
        super().__init__(properties=props, attributes=attributes)

    def verify_(self) -> None:
        shape = self.global_type.get_shape()
        if any(d < 0 for d in shape):
            raise VerifyException(f"'tier.global' @{self.sym_name.data} must be static")
        verify_element_type(self.global_type.element_type, f"global @{self.sym_name.data}")
        if self.tier is not None and self.tier.data == Tier.SRAM:
            raise VerifyException(
                f"'tier.global' @{self.sym_name.data} cannot live in sram: "
                "globals live off chip (hbm or ddr)"
            )
        if self.initial_value is not None and self.initial_value.type != self.global_type:
            raise VerifyException(
                f"'tier.global' @{self.sym_name.data} value has type "
                f"{self.initial_value.type}, expected {self.global_type}"
            )


@irdl_op_definition
class GetGlobalOp(IRDLOperation):
    """The buffer that holds a global, in the tier it was placed in."""

    name = "tier.get_global"
    global_name = prop_def(SymbolRefAttr)
    result = result_def(BufferType)
    traits = traits_def(MemoryReadEffect())
    assembly_format = "$global_name attr-dict `:` type($result)"

    def __init__(self, global_name: str, result_type: BufferType):
        super().__init__(
            properties={"global_name": SymbolRefAttr(global_name)},
            result_types=[result_type],
        )

    def verify_(self) -> None:
        target = SymbolTable.lookup_symbol(self, self.global_name)
        if not isinstance(target, GlobalOp):
            raise VerifyException(
                f"'tier.get_global' refers to @{self.global_name.root_reference.data}, "
                "which is not a 'tier.global'"
            )
        buffer = self.result.type
        assert isinstance(buffer, BufferType)
        expected = target.global_type
        if (
            buffer.get_shape() != tuple(expected.get_shape())
            or buffer.element_type != expected.element_type
        ):
            raise VerifyException(
                f"'tier.get_global' type {buffer} does not match the global's {expected}"
            )
        if buffer.tier.data == Tier.SRAM:
            raise VerifyException(
                f"'tier.get_global' cannot read @{target.sym_name.data} as sram: globals "
                "live off chip; DMA them into an sram buffer"
            )
        if target.tier is not None and target.tier.data != buffer.tier.data:
            raise VerifyException(
                f"'tier.get_global' reads @{target.sym_name.data} from "
                f"{buffer.tier.data.value}, but it lives in {target.tier.data.value}"
            )


def _sram_capacity(op: Operation) -> int | None:
    """The closest enclosing `tier.sram_capacity`, if any."""
    parent = op.parent_op()
    while parent is not None:
        capacity = parent.attributes.get(SRAM_CAPACITY_ATTR)
        if isinstance(capacity, IntegerAttr):
            return capacity.value.data
        parent = parent.parent_op()
    return None


@irdl_op_definition
class AllocOp(IRDLOperation):
    """A buffer, live until its `tier.dealloc` (or the end of its block).

    An SRAM buffer gets `offset N` (bytes into the socket's SRAM arena) from
    the SRAM allocator; the verifier rejects an offset past capacity and any
    overlap with another allocated buffer live at the same time.
    """

    name = "tier.alloc"
    offset = opt_prop_def(IntegerAttr[I64])
    result = result_def(BufferType)
    traits = traits_def(MemoryAllocEffect())
    assembly_format = "(`offset` $offset^)? attr-dict `:` type($result)"

    def __init__(self, buffer_type: BufferType, offset: int | None = None):
        props = {} if offset is None else {"offset": IntegerAttr(offset, i64)}
        super().__init__(result_types=[buffer_type], properties=props)

    @property
    def byte_range(self) -> tuple[int, int] | None:
        """[start, end) in the SRAM arena, once allocated."""
        if self.offset is None:
            return None
        start = self.offset.value.data
        buffer = self.result.type
        assert isinstance(buffer, BufferType)
        return start, start + buffer.size_in_bytes

    def verify_(self) -> None:
        buffer = _verify_buffer(self.result, "'tier.alloc' buffer")
        if self.offset is None:
            return
        if buffer.tier.data != Tier.SRAM:
            raise VerifyException(
                f"'tier.alloc' offset is only meaningful in sram, not {buffer.tier.data.value}"
            )
        start, end = self.byte_range or (0, 0)
        if start < 0:
            raise VerifyException(f"'tier.alloc' offset {start} is negative")
        capacity = _sram_capacity(self)
        if capacity is not None and end > capacity:
            raise VerifyException(
                f"'tier.alloc' buffer [{start}, {end}) ends past the SRAM capacity "
                f"of {capacity} bytes by {end - capacity}"
            )
        self._verify_no_overlap(start, end)

    def _verify_no_overlap(self, start: int, end: int) -> None:
        """Walk forward while this buffer is live; no later alloc may overlap it."""
        op = self.next_op
        while op is not None:
            if isinstance(op, DeallocOp) and op.buffer == self.result:
                return
            if isinstance(op, AllocOp) and (other := op.byte_range) is not None:
                if other[0] < end and start < other[1] and other[0] < other[1]:
                    raise VerifyException(
                        f"'tier.alloc' buffer [{start}, {end}) overlaps the live "
                        f"buffer [{other[0]}, {other[1]}) allocated after it"
                    )
            op = op.next_op


@irdl_op_definition
class DeallocOp(IRDLOperation):
    """Ends a buffer's live range."""

    name = "tier.dealloc"
    buffer = operand_def(BufferType)
    traits = traits_def(MemoryFreeEffect())
    assembly_format = "$buffer attr-dict `:` type($buffer)"

    def __init__(self, buffer: SSAValue):
        super().__init__(operands=[buffer])

    def verify_(self) -> None:
        if not isinstance(self.buffer.owner, AllocOp):
            raise VerifyException("'tier.dealloc' must free the result of a 'tier.alloc'")


@irdl_op_definition
class DmaOp(IRDLOperation):
    """Copies a whole buffer from one tier to another."""

    name = "tier.dma"
    source = operand_def(BufferType)
    dest = operand_def(BufferType)
    traits = traits_def(MemoryReadEffect(), MemoryWriteEffect())
    assembly_format = "$source `->` $dest attr-dict `:` type($source) `->` type($dest)"

    def __init__(self, source: SSAValue, dest: SSAValue):
        super().__init__(operands=[source, dest])

    def verify_(self) -> None:
        src = _verify_buffer(self.source, "'tier.dma' source")
        dst = _verify_buffer(self.dest, "'tier.dma' destination")
        if src.get_shape() != dst.get_shape() or src.element_type != dst.element_type:
            raise VerifyException(
                f"'tier.dma' source {src} and destination {dst} differ in shape or "
                "element type"
            )
        if src.tier.data == dst.tier.data and src.tier.data != Tier.SRAM:
            raise VerifyException(
                f"'tier.dma' from {src.tier.data.value} to itself moves nothing; only "
                "sram-to-sram (PMU to PMU) copies are meaningful"
            )


Memory = Dialect(
    "tier",
    [GlobalOp, GetGlobalOp, AllocOp, DeallocOp, DmaOp],
    [TierAttr, BufferType],
)

__all__ = [
    "Memory",
    "Tier",
    "TierAttr",
    "BufferType",
    "GlobalOp",
    "GetGlobalOp",
    "AllocOp",
    "DeallocOp",
    "DmaOp",
    "SRAM_CAPACITY_ATTR",
]
