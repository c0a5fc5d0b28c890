"""The `tier` memory-tier dialect: where every byte lives.

A tier attribute (`sram`, `hbm`, `ddr`), buffer types that carry tier, shape
and element type, weight globals, allocation (with an SRAM offset once
allocated), and DMA between tiers. Verifiers reject what the chip cannot do.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterator, Sequence

from xdsl.dialects import func
from xdsl.dialects.builtin import (
    I64,
    ArrayAttr,
    DenseArrayBase,
    DenseIntOrFPElementsAttr,
    IndexType,
    IntAttr,
    IntegerAttr,
    IntegerType,
    StringAttr,
    SymbolNameConstraint,
    SymbolRefAttr,
    TensorType,
    UnitAttr,
    i64,
)
from xdsl.dialects.utils import EnumAttribute
from xdsl.ir import (
    Attribute,
    Block,
    Dialect,
    Operation,
    ParametrizedAttribute,
    Region,
    SpacedOpaqueSyntaxAttribute,
    SSAValue,
    TypeAttribute,
)
from xdsl.irdl import (
    AttrSizedOperandSegments,
    IRDLOperation,
    irdl_attr_definition,
    irdl_op_definition,
    operand_def,
    opt_prop_def,
    param_def,
    prop_def,
    region_def,
    result_def,
    traits_def,
    var_operand_def,
)
from xdsl.parser import AttrParser
from xdsl.printer import Printer
from xdsl.traits import (
    IsolatedFromAbove,
    IsTerminator,
    MemoryAllocEffect,
    MemoryFreeEffect,
    MemoryReadEffect,
    MemoryWriteEffect,
    SymbolOpInterface,
    SymbolTable,
)
from xdsl.utils.exceptions import VerifyException
from xdsl.utils.str_enum import StrEnum

from rducc.diagnostics import format_location
from rducc.dialects import contracts
from rducc.dialects.liveness import in_block, live_end, positions
from rducc.dialects.op_facts import NoCompute
from rducc.dialects.program import kernel_name
from rducc.dialects.shapes import broadcast_shapes, value_bytes, verify_element_type
from rducc.dialects.unchanged import holding, remembered


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

    tier: TierAttr
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
        return value_bytes(self)

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
class GlobalOp(IRDLOperation, NoCompute):
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
        split = contracts.shard_of(self)
        if split is not None and not split.holds_part(shape):
            raise VerifyException(f"'tier.global' @{self.sym_name.data} of {list(shape)} is no rank's part of a whole "
                                  f"split with {split.describe()}")
        hot = contracts.hbm_rows(self.attributes)
        rows = contracts.table_rows(shape)
        if hot and (self.tier is None or self.tier.data != Tier.DDR or not 0 < hot < rows):
            raise VerifyException(
                f"'tier.global' @{self.sym_name.data}: {contracts.HBM_ROWS} = {hot} needs a global in ddr "
                f"with more rows than that (it has {rows} rows of its last dim)"
            )

    def resident_bytes(self) -> tuple[int, int]:
        """(bytes in HBM, bytes in DDR): a global in DDR holds its `HBM_ROWS` leading
        rows (`table_rows`) in HBM; one not placed yet counts as HBM."""
        size = value_bytes(self.global_type)
        if self.tier is None or self.tier.data != Tier.DDR:
            return size, 0
        rows = contracts.table_rows(self.global_type.get_shape())
        hot = size * min(contracts.hbm_rows(self.attributes), rows) // rows
        return hot, size - hot


@irdl_op_definition
class GetGlobalOp(IRDLOperation, NoCompute):
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
        target = lookup_symbol(self, self.global_name)
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
    """The closest enclosing `tier.sram_capacity`, if any; never more than the
    SRAM of the target the module carries (the runtime's arena is bounded by it)."""
    parent = op.parent_op()
    while parent is not None:
        capacity = parent.attributes.get(contracts.SRAM_CAPACITY)
        if isinstance(capacity, IntegerAttr):
            limit = _target_figure(parent, "sram_bytes")
            if limit is not None and capacity.value.data > limit:
                raise VerifyException(f"tier.sram_capacity {capacity.value.data} exceeds the "
                                      f"target's sram_bytes {limit}")
            return capacity.value.data
        parent = parent.parent_op()
    return None


def _target_figure(op: Operation, name: str) -> int | None:
    """An integer figure of the target the enclosing module carries, if any."""
    while op.parent_op() is not None:
        op = op.parent_op()  # type: ignore[assignment]
    target = op.attributes.get(contracts.TARGET)
    if not isinstance(target, contracts.TargetAttr):
        return None
    value = target.values().get(name)
    return value if isinstance(value, int) and not isinstance(value, bool) else None


@irdl_op_definition
class AllocOp(IRDLOperation, NoCompute):
    """A buffer, live until its `tier.dealloc` (or the end of its block).

    `buffers N` reserves N rotating copies (double buffering: a DMA fills one
    while compute reads the other); each DMA into the buffer moves to the next
    copy. An SRAM buffer gets `offset B` (bytes into the socket's SRAM arena)
    from the SRAM allocator; the verifier rejects an offset past capacity and
    any overlap with another allocated buffer live at the same time.
    """

    name = "tier.alloc"
    offset = opt_prop_def(IntegerAttr[I64])
    buffers = opt_prop_def(IntegerAttr[I64])
    result = result_def(BufferType)
    traits = traits_def(MemoryAllocEffect())
    assembly_format = (
        "(`offset` $offset^)? (`buffers` $buffers^)? attr-dict `:` type($result)"
    )

    def __init__(
        self, buffer_type: BufferType, offset: int | None = None, buffers: int = 1
    ):
        props: dict[str, Attribute] = {}
        if offset is not None:
            props["offset"] = IntegerAttr(offset, i64)
        if buffers != 1:
            props["buffers"] = IntegerAttr(buffers, i64)
        super().__init__(result_types=[buffer_type], properties=props)

    @property
    def copies(self) -> int:
        """How many rotating copies of the buffer type are reserved."""
        return 1 if self.buffers is None else self.buffers.value.data

    @property
    def reserved_bytes(self) -> int:
        buffer = self.result.type
        assert isinstance(buffer, BufferType)
        return buffer.size_in_bytes * self.copies

    @property
    def byte_range(self) -> tuple[int, int] | None:
        """[start, end) in the SRAM arena, once allocated."""
        if self.offset is None:
            return None
        start = self.offset.value.data
        return start, start + self.reserved_bytes

    def verify_(self) -> None:
        buffer = _verify_buffer(self.result, "'tier.alloc' buffer")
        if self.copies < 1:
            raise VerifyException(f"'tier.alloc' buffers must be >= 1, got {self.copies}")
        self._verify_written_before_read()
        if buffer.tier.data != Tier.SRAM:
            self._verify_fits_off_chip(buffer)
        if self.offset is None:
            return
        if buffer.tier.data != Tier.SRAM:
            raise VerifyException(
                f"'tier.alloc' offset is only meaningful in sram, not {buffer.tier.data.value}"
            )
        start, end = self.byte_range or (0, 0)
        if start < 0:
            raise VerifyException(f"'tier.alloc' offset {start} is negative")
        verify_within_capacity(self, start, end, "'tier.alloc' buffer")
        self._verify_no_overlap(start, end)

    def _verify_written_before_read(self) -> None:
        """An SRAM buffer's first user in its block writes it: one that only reads it
        (a DMA from it, a kernel input, a gather's table or indices, the function's
        return) would read never-written memory, which the runtime returns as
        NaN or poison, silently. A first user that may do either (a loop, a call,
        a view) is accepted."""
        block = self.parent_block()
        if block is None or not self.result.uses or _tier_of(self.result) != Tier.SRAM:
            return
        users: set[Operation] = set()
        for use in self.result.uses:
            user: Operation | None = use.operation
            while user is not None and user.parent_block() is not block:
                user = user.parent_op()
            if user is not None:
                users.add(user)
        first = self.next_op
        while first is not None and first not in users:
            first = first.next_op
        if first is not None and _only_reads(first, self.result):
            raise VerifyException(
                f"'{first.name}' reads the buffer of this 'tier.alloc' before anything writes it"
            )

    def _verify_fits_off_chip(self, buffer: BufferType) -> None:
        """An HBM or DDR buffer fits its tier's capacity on the module's target."""
        limit = _target_figure(self, f"{buffer.tier.data.value}_bytes")
        if limit is not None and self.reserved_bytes > limit:
            raise VerifyException(f"'tier.alloc' {buffer.tier.data.value} buffer of {self.reserved_bytes} "
                                  f"bytes exceeds the target's {buffer.tier.data.value}_bytes {limit}")

    def _verify_no_overlap(self, start: int, end: int) -> None:
        """Nothing placed in SRAM while this buffer is live shares its bytes: the
        later buffers of its block, the buffers and kernel values inside later
        loops and kernels, and what the functions it is live across place (the
        first such placement, as `sram_overlaps` finds it for its whole block)."""
        block = self.parent_block()
        if block is None:
            return
        found = remembered(("sram overlaps", block), lambda: sram_overlaps(block)).get(self)
        if found is not None:
            raise VerifyException(f"'tier.alloc' buffer [{start}, {end}) overlaps {found}")


def sram_overlaps(block: Block) -> dict[AllocOp, str]:
    """Each placed `tier.alloc` of `block` that shares bytes with something placed
    in SRAM while it is live (`ops_while_live`: up to its block's `tier.dealloc` of
    it), with the first such placement in program order described. One sweep of
    the block: the live buffers no placement has met yet share no byte (a later
    buffer sharing one would have met the earlier), so each placement finds the
    buffers it overlaps by bisection over their starts."""
    found: dict[AllocOp, str] = {}
    live = _LiveRanges()
    for top in block.ops:
        if isinstance(top, DeallocOp):
            live.remove(top.buffer.owner)
        for op in top.walk():
            for placed, spared, what in _placements(op, block):
                for alloc in live.overlapping(placed, spared):
                    found[alloc] = what.format(f"[{placed[0]}, {placed[1]})")
                    live.remove(alloc)
        if isinstance(top, AllocOp) and (own := top.byte_range) is not None:
            live.add(own, top)
    return found


class _LiveRanges:
    """Live placed buffers of one block, no two sharing a byte, sorted by start."""

    def __init__(self) -> None:
        self.starts: list[int] = []
        self.held: list[tuple[int, AllocOp]] = []

    def add(self, placed: tuple[int, int], alloc: AllocOp) -> None:
        if placed[0] < placed[1]:  # an empty buffer shares no byte
            at = bisect.bisect_right(self.starts, placed[0])
            self.starts.insert(at, placed[0])
            self.held.insert(at, (placed[1], alloc))

    def remove(self, alloc: object) -> None:
        range_ = alloc.byte_range if isinstance(alloc, AllocOp) else None
        if range_ is None:
            return
        at = bisect.bisect_left(self.starts, range_[0])
        while at < len(self.starts) and self.starts[at] == range_[0]:
            if self.held[at][1] is alloc:
                del self.starts[at], self.held[at]
                return
            at += 1

    def overlapping(self, placed: tuple[int, int], spared: Sequence[SSAValue]) -> list[AllocOp]:
        """The live buffers sharing a byte with `placed`, but those whose result is in `spared`."""
        if placed[0] >= placed[1]:
            return []
        at = max(bisect.bisect_right(self.starts, placed[0]) - 1, 0)
        found: list[AllocOp] = []
        while at < len(self.starts) and self.starts[at] < placed[1]:
            end, alloc = self.held[at]
            if end > placed[0] and alloc.result not in spared:
                found.append(alloc)
            at += 1
        return found


def _placements(op: Operation, block: Block) -> Iterator[tuple[tuple[int, int], Sequence[SSAValue], str]]:
    """The SRAM bytes `op` places, each with the buffers of `block` it may share bytes
    with (a kernel's own operands, for its body values) and what to call them (`{}`
    stands for the byte range), as a buffer of `block` live across `op` names them."""
    if isinstance(op, AllocOp) and (placed := op.byte_range) is not None:
        if op.parent_block() is block:
            yield placed, (), "the live buffer {} allocated after it"
        else:
            holder = in_block(op, block) or op
            yield placed, (), (f"the buffer {{}} allocated inside '{holder.name}'{_at(holder)} "
                               "while it is live around it")
    elif (placed := body_value_range(op)) is not None:
        compute = op.parent_op()
        if isinstance(compute, ComputeOp):
            yield placed, compute.operands, (f"the '{op.name}' value at {{}}{_at(op)} in 'tier.compute' "
                                             f"\"{kernel_name(compute)}\" while it is live across the kernel")
    elif isinstance(op, func.CallOp):
        callee = op.callee.string_value()
        for placed in remembered(("callee sram", op.callee, _top(op)), lambda: list(callee_sram(op))):
            yield placed, (), f"{{}}, which @{callee} places, while it is live across the call{_at(op)}"


def lookup_symbol(op: Operation, name: SymbolRefAttr) -> Operation | None:
    """`SymbolTable.lookup_symbol`; inside `unchanged()`, from an index of the nearest
    symbol table's symbols made once (each lookup walks the table's ops: a verify
    of a deep training step's `tier.get_global`s, one a weight, was quadratic)."""
    table: Operation | None = op
    while table is not None and not table.has_trait(SymbolTable):
        table = table.parent_op()
    if table is None or not holding() or name.nested_references.data:
        return SymbolTable.lookup_symbol(op, name)
    anchor = table
    return remembered(("symbols", anchor), lambda: _symbols(anchor)).get(name.root_reference.data)


def _symbols(table: Operation) -> dict[str, Operation]:
    """The symbols `table` defines by name (the first of a name, as `SymbolTable.lookup_symbol` finds)."""
    found: dict[str, Operation] = {}
    for op in table.regions[0].block.ops:
        interface = op.get_trait(SymbolOpInterface)
        name = interface.get_sym_attr_name(op) if interface is not None else None
        if name is not None:
            found.setdefault(name.data, op)
    return found


def _top(op: Operation) -> Operation:
    """The outermost op holding `op` (the module)."""
    while (parent := op.parent_op()) is not None:
        op = parent
    return op


def callee_sram(call: func.CallOp, seen: frozenset[str] = frozenset()) -> Iterator[tuple[int, int]]:
    """The SRAM byte ranges the function `call` runs places (its buffers and kernel
    values, and those of the functions it calls, at the offsets they were given)."""
    name = call.callee.string_value()
    callee = lookup_symbol(call, call.callee)
    if not isinstance(callee, func.FuncOp) or name in seen:
        return
    for op in callee.walk():
        if isinstance(op, AllocOp) and (placed := op.byte_range) is not None:
            yield placed
        elif (placed := body_value_range(op)) is not None:
            yield placed
        elif isinstance(op, func.CallOp):
            yield from callee_sram(op, seen | {name})


def _at(op: Operation) -> str:
    """` at file:line:col` when the op has a source location."""
    where = format_location(op.location)
    return f" at {where}" if where else ""


def ranges_overlap(a: tuple[int, int], b: tuple[int, int]) -> bool:
    """True when two non-empty byte ranges [start, end) share a byte."""
    return a[0] < a[1] and b[0] < b[1] and a[0] < b[1] and b[0] < a[1]


def verify_within_capacity(op: Operation, start: int, end: int, what: str) -> None:
    """Raise if [start, end) passes the closest enclosing `tier.sram_capacity`."""
    capacity = _sram_capacity(op)
    if capacity is not None and end > capacity:
        raise VerifyException(
            f"{what} [{start}, {end}) ends past the SRAM capacity of {capacity} "
            f"bytes by {end - capacity}"
        )


@irdl_op_definition
class DeallocOp(IRDLOperation, NoCompute):
    """Ends a buffer's live range."""

    name = "tier.dealloc"
    buffer = operand_def(BufferType)
    traits = traits_def(MemoryFreeEffect())
    assembly_format = "$buffer attr-dict `:` type($buffer)"

    def __init__(self, buffer: SSAValue):
        super().__init__(operands=[buffer])

    def verify_(self) -> None:
        owner = self.buffer.owner
        if isinstance(owner, Operation) and owner.name in ("func.call", "rdu.host_call"):
            return  # a buffer an outlined layer or a host call allocated and gave its caller
        if not isinstance(owner, AllocOp):
            raise VerifyException(
                "'tier.dealloc' must free the result of a 'tier.alloc', 'func.call' or 'rdu.host_call'"
            )
        self._verify_no_use_after()

    def _verify_no_use_after(self) -> None:
        """No use of the buffer (nested ops included) comes after the dealloc in its
        block: one walk back from the dealloc to the buffer's definition (or the
        block's start) meets the op holding each earlier use; a use it does not
        meet is after the dealloc. (One walk of the live range a dealloc, not one
        a use: a training step's saved activations live from the forward to the
        backward and have several readers.)"""
        block = self.parent_block()
        buffer = self.buffer  # read once: an operand's accessor costs more than a step of the walk
        later: dict[Operation, Operation] = {}
        for use in sorted(buffer.uses, key=lambda use: isinstance(use.operation, DeallocOp)):
            user: Operation | None = use.operation
            if user is self:
                continue
            while user is not None and user.parent_block() is not block:
                user = user.parent_op()
            if user is not None:
                later.setdefault(user, use.operation)
        current, owner = self.prev_op, buffer.owner
        while later and current is not None and current is not owner:
            later.pop(current, None)
            current = current.prev_op
        if later:
            kind = next(iter(later.values()))
            what = "freed again" if isinstance(kind, DeallocOp) else f"used by '{kind.name}'"
            raise VerifyException(f"'tier.dealloc' frees a buffer that is {what} after it")


def _only_reads(op: Operation, buffer: SSAValue) -> bool:
    """Whether `op` certainly reads `buffer` without writing it (see
    AllocOp._verify_written_before_read); False when it writes it or when
    what it does with it is not known here."""
    if isinstance(op, DmaOp | GatherDmaOp | ScatterDmaOp):
        return op.dest != buffer and buffer in op.operands
    if isinstance(op, ComputeOp):
        return buffer in op.ins and buffer not in op.outs
    return op.name == "func.return"


def _verify_window(
    op: IRDLOperation,
    whole: BufferType,
    window: BufferType,
    offsets: Sequence[SSAValue],
    side: str,
    strides: Sequence[int] = (),
) -> None:
    if len(offsets) != len(whole.get_shape()):
        raise VerifyException(
            f"'{op.name}' has {len(offsets)} {side} offsets for a rank-"
            f"{len(whole.get_shape())} buffer"
        )
    strides = list(strides) or [1] * len(whole.get_shape())
    if len(strides) != len(whole.get_shape()) or any(s < 1 for s in strides):
        raise VerifyException(f"'{op.name}' strides {strides} should be {len(whole.get_shape())} values >= 1")
    if len(window.get_shape()) != len(whole.get_shape()) or any(
        w and (w - 1) * s + 1 > d for w, d, s in zip(window.get_shape(), whole.get_shape(), strides)
    ):
        raise VerifyException(
            f"'{op.name}' window {list(window.get_shape())} does not fit in the {side} "
            f"buffer {list(whole.get_shape())}"
        )


def window_strides(op: DmaOp) -> tuple[int, ...]:
    """The strides of a DMA's window (1 in every dim when it has none)."""
    rank = len(op.window_side().get_shape())
    return (1,) * rank if op.strides is None else tuple(int(v) for v in op.strides.get_values())


@irdl_op_definition
class DmaOp(IRDLOperation, NoCompute):
    """Copies a buffer, or a window of one, from one tier to another.

    `tier.dma %hbm[%i, %c0] -> %sram` reads the window of %hbm at those offsets
    that has %sram's shape; `tier.dma %sram -> %hbm[%i, %c0]` writes one. With
    `strides [s0, s1]` the window is strided: element `offsets + i * strides`
    of the windowed side (a strided slice of an off-chip tensor moves only the
    elements it reads).
    """

    name = "tier.dma"
    source = operand_def(BufferType)
    src_offsets = var_operand_def(IndexType)
    dest = operand_def(BufferType)
    dst_offsets = var_operand_def(IndexType)
    strides = opt_prop_def(DenseArrayBase.constr(I64))
    irdl_options = (AttrSizedOperandSegments(as_property=True),)
    traits = traits_def(MemoryReadEffect(), MemoryWriteEffect())
    assembly_format = (
        "$source (`[` $src_offsets^ `]`)? `->` $dest (`[` $dst_offsets^ `]`)? (`strides` $strides^)? "
        "attr-dict `:` type($source) `->` type($dest)"
    )

    def __init__(
        self,
        source: SSAValue,
        dest: SSAValue,
        src_offsets: Sequence[SSAValue] = (),
        dst_offsets: Sequence[SSAValue] = (),
        strides: Sequence[int] = (),
    ):
        properties: dict[str, Attribute] = {}
        if any(s != 1 for s in strides):
            properties["strides"] = DenseArrayBase.from_list(i64, list(strides))
        super().__init__(operands=[source, list(src_offsets), dest, list(dst_offsets)], properties=properties)

    def window_side(self) -> BufferType:
        """The buffer the offsets index (the whole one), or the source when there are none."""
        side = self.dest if self.dst_offsets else self.source
        assert isinstance(side.type, BufferType)
        return side.type

    def verify_(self) -> None:
        src = _verify_buffer(self.source, "'tier.dma' source")
        dst = _verify_buffer(self.dest, "'tier.dma' destination")
        if src.element_type != dst.element_type:
            raise VerifyException(
                f"'tier.dma' source {src} and destination {dst} differ in element type"
            )
        if self.src_offsets and self.dst_offsets:
            raise VerifyException("'tier.dma' takes a window on one side only")
        strides = window_strides(self) if self.strides is not None else ()
        if self.src_offsets:
            _verify_window(self, src, dst, self.src_offsets, "source", strides)
        elif self.dst_offsets:
            _verify_window(self, dst, src, self.dst_offsets, "destination", strides)
        elif self.strides is not None:
            raise VerifyException("'tier.dma' strides need offsets on one side")
        elif src.get_shape() != dst.get_shape():
            raise VerifyException(
                f"'tier.dma' source {src} and destination {dst} differ in shape"
            )
        if src.tier.data == dst.tier.data and src.tier.data != Tier.SRAM:
            raise VerifyException(
                f"'tier.dma' from {src.tier.data.value} to itself moves nothing; only "
                "sram-to-sram (PMU to PMU) copies are meaningful"
            )


def is_contiguous_window(whole: Sequence[int], sizes: Sequence[int]) -> bool:
    """Whether a stride-1 window of a row-major buffer is one contiguous run of memory:
    size 1 in every dim before some dim k, the whole extent in every dim after it."""
    rank = len(whole)
    k = next((d for d in range(rank) if sizes[d] != 1), rank)
    return all(sizes[d] == whole[d] for d in range(k + 1, rank))


@irdl_op_definition
class ViewOp(IRDLOperation, NoCompute):
    """A contiguous window of an off-chip buffer, as a buffer of its own: no data moves.

    `tier.view %k_cache[%i, %c0, ...] sizes [1, 8, 4096, 128] : !tier.buffer<hbm, 32x8x4096x128xbf16>
    -> !tier.buffer<hbm, 8x4096x128xbf16>` is layer `i`'s part of a stacked cache,
    which a kernel then reads by DMA like any HBM buffer. The window (`sizes` at
    the offsets, in the source's rank) must be one contiguous run of memory; the
    result holds its elements in order, in any shape of the same element count.
    The source must outlive every reader of the view (`rdu-insert-dma` frees a
    buffer only after the last reader of any view of it).
    """

    name = "tier.view"
    source = operand_def(BufferType)
    offsets = var_operand_def(IndexType)
    sizes = prop_def(DenseArrayBase.constr(I64))
    result = result_def(BufferType)
    assembly_format = "$source `[` $offsets `]` `sizes` $sizes attr-dict `:` type($source) `->` type($result)"

    def __init__(self, source: SSAValue, offsets: Sequence[SSAValue], sizes: Sequence[int], result_type: BufferType):
        super().__init__(
            operands=[source, list(offsets)],
            result_types=[result_type],
            properties={"sizes": DenseArrayBase.from_list(i64, list(sizes))},
        )

    @property
    def window_sizes(self) -> tuple[int, ...]:
        return tuple(int(v) for v in self.sizes.get_values())

    def verify_(self) -> None:
        src = _verify_buffer(self.source, "'tier.view' source")
        dst = _verify_buffer(self.result, "'tier.view' result")
        if src.tier.data == Tier.SRAM or dst.tier.data != src.tier.data:
            raise VerifyException("'tier.view' views an off-chip buffer in its own tier")
        if src.element_type != dst.element_type:
            raise VerifyException(f"'tier.view' source {src} and result {dst} differ in element type")
        sizes = self.window_sizes
        window = BufferType(src.tier.data, sizes, src.element_type)
        _verify_window(self, src, window, self.offsets, "source")
        count = 1
        for size in sizes:
            count *= size
        result_count = 1
        for size in dst.get_shape():
            result_count *= size
        if count != result_count:
            raise VerifyException(f"'tier.view' window {list(sizes)} and result {dst} differ in element count")
        if not is_contiguous_window(src.get_shape(), sizes):
            raise VerifyException(
                f"'tier.view' window {list(sizes)} of {list(src.get_shape())} is not contiguous in memory"
            )


def _indexed_buffers(op: IRDLOperation, source: SSAValue, indices: SSAValue, dest: SSAValue
                     ) -> tuple[BufferType, BufferType, BufferType]:
    """The buffer types of an indexed DMA (`tier.gather`, `tier.scatter`), its indices integers."""
    src = _verify_buffer(source, f"'{op.name}' source")
    idx = _verify_buffer(indices, f"'{op.name}' indices")
    dst = _verify_buffer(dest, f"'{op.name}' destination")
    if not isinstance(idx.element_type, IntegerType) or idx.element_type.width.data == 1:
        raise VerifyException(f"'{op.name}' indices must be integers")
    return src, idx, dst


@irdl_op_definition
class GatherDmaOp(IRDLOperation, NoCompute):
    """Indexed DMA: `source[indices...]` (k index buffers indexing dims 0..k-1,
    broadcast against one another) into an SRAM buffer.

    How an embedding lookup reads a few rows of a table that stays off chip,
    and how a loss reads each row's target from logits that stay off chip
    (`logits[rows, targets]`). The destination has shape
    `broadcast(indices shapes) + source.shape[k:]`. Indices lie in [0, size),
    or in [-size, size) with `wraps` (as `rdu.gather`'s); any other is an
    error at run time.
    """

    name = "tier.gather"
    source = operand_def(BufferType)
    indices = var_operand_def(BufferType)
    dest = operand_def(BufferType)
    wraps = opt_prop_def(UnitAttr)
    traits = traits_def(MemoryReadEffect(), MemoryWriteEffect())
    assembly_format = (
        "$source `[` $indices `]` `->` $dest (`wraps` $wraps^)? attr-dict "
        "`:` type($source) `,` type($indices) `->` type($dest)"
    )

    def __init__(self, source: SSAValue, indices: SSAValue | Sequence[SSAValue], dest: SSAValue,
                 wraps: bool = False):
        listed = [indices] if isinstance(indices, SSAValue) else list(indices)
        super().__init__(operands=[source, listed, dest], properties={"wraps": UnitAttr()} if wraps else {})

    def verify_(self) -> None:
        if not 1 <= len(self.indices) <= len(_verify_buffer(self.source, "'tier.gather' source").get_shape()):
            raise VerifyException(f"'tier.gather' takes 1 to rank-of-source index buffers, got {len(self.indices)}")
        shapes = []
        for index in self.indices:
            src, idx, dst = _indexed_buffers(self, self.source, index, self.dest)
            if idx.tier.data != Tier.SRAM or dst.tier.data != Tier.SRAM:
                raise VerifyException("'tier.gather' indices and destination must be in sram")
            shapes.append(tuple(idx.get_shape()))
        window = broadcast_shapes(shapes)
        if window is None:
            raise VerifyException(f"'tier.gather' index shapes {[list(s) for s in shapes]} do not broadcast")
        expected = (*window, *src.get_shape()[len(shapes):])
        if tuple(dst.get_shape()) != expected or dst.element_type != src.element_type:
            raise VerifyException(
                f"'tier.gather' destination {dst} should have shape {list(expected)} "
                f"and element type {src.element_type}"
            )


ROWS_ONLY = "rows_only"
"""`tier.scatter`'s attribute: its source holds only the rows it writes (`ScatterDmaOp.rows_only`)."""


@irdl_op_definition
class ScatterDmaOp(IRDLOperation, NoCompute):
    """Indexed DMA out, in place: rows `indices` along `dim` of an SRAM buffer
    written into the same rows of an off-chip buffer of its shape.

    `tier.scatter %new_sram -> %cache[%rows] dim 2` is how a kernel that
    replaced a few rows of a buffer (a static KV cache's `index_copy_` at the
    decode position) writes back only those rows: the other rows of `%cache`
    already hold what `%new_sram` holds there. `indices` is a 1-d integer
    SRAM buffer; each lies in [0, size of `dim`), any other is an error at
    run time. The off-chip buffer is updated in place (`rdu-insert-dma`).

    With `rows_only` (`tier.scatter %rows_sram -> %cache[%rows] dim 2 {rows_only}`)
    the source holds only the new rows, one along `dim` for each index, in
    order (its shape the destination's with `dim` the indices' length): a
    kernel that writes rows into a buffer it does not otherwise read (every
    layer's rows of a KV cache stacked over the layers) computes and moves only
    those rows, never loading the buffer.
    """

    name = "tier.scatter"
    source = operand_def(BufferType)
    indices = operand_def(BufferType)
    dest = operand_def(BufferType)
    dim = prop_def(IntegerAttr[I64])
    traits = traits_def(MemoryReadEffect(), MemoryWriteEffect())
    assembly_format = (
        "$source `->` $dest `[` $indices `]` `dim` $dim attr-dict "
        "`:` type($source) `,` type($indices) `->` type($dest)"
    )

    def __init__(self, source: SSAValue, indices: SSAValue, dest: SSAValue, dim: int):
        super().__init__(operands=[source, indices, dest], properties={"dim": IntegerAttr(dim, i64)})

    @property
    def axis(self) -> int:
        return self.dim.value.data

    def rows(self) -> int:
        """How many rows the transfer writes (the length of `indices`)."""
        idx = self.indices.type
        assert isinstance(idx, BufferType)
        return idx.get_shape()[0]

    @property
    def rows_only(self) -> bool:
        """Whether the source holds only the written rows, in the indices' order."""
        return ROWS_ONLY in self.attributes

    def verify_(self) -> None:
        src, idx, dst = _indexed_buffers(self, self.source, self.indices, self.dest)
        if src.tier.data != Tier.SRAM or idx.tier.data != Tier.SRAM:
            raise VerifyException("'tier.scatter' source and indices must be in sram")
        if dst.tier.data == Tier.SRAM:
            raise VerifyException("'tier.scatter' writes an off-chip buffer, not sram")
        if len(idx.get_shape()) != 1:
            raise VerifyException(f"'tier.scatter' indices must be 1-d, not {list(idx.get_shape())}")
        if not 0 <= self.axis < len(dst.get_shape()):
            raise VerifyException(f"'tier.scatter' dim {self.axis} is out of range for rank {len(dst.get_shape())}")
        expected = list(dst.get_shape())
        if self.rows_only:
            expected[self.axis] = idx.get_shape()[0]
        if list(src.get_shape()) != expected or src.element_type != dst.element_type:
            raise VerifyException(f"'tier.scatter' source {src} and destination {dst} differ in shape or type"
                                  + (" (rows_only: the source is the destination's rows at the indices)"
                                     if self.rows_only else ""))


@irdl_op_definition
class ComputeOp(IRDLOperation, NoCompute):
    """One tile of a kernel: its body runs on the chip over SRAM buffers.

    Block arguments are the `ins` buffers read as tensors; the body yields
    one tensor per `outs` buffer. Every value defined in the body lives in
    SRAM too: the SRAM allocator gives each body op a `tier.offset`.
    """

    name = "tier.compute"
    sym_name = prop_def(StringAttr)
    ins = var_operand_def(BufferType)
    outs = var_operand_def(BufferType)
    body = region_def("single_block")
    irdl_options = (AttrSizedOperandSegments(as_property=True),)
    traits = traits_def(IsolatedFromAbove(), MemoryReadEffect(), MemoryWriteEffect())
    assembly_format = (
        "$sym_name `ins` `(` $ins `:` type($ins) `)` `outs` `(` $outs `:` type($outs) `)` "
        "attr-dict-with-keyword $body"
    )

    def __init__(
        self, name: str, ins: Sequence[SSAValue], outs: Sequence[SSAValue], body: Region
    ):
        super().__init__(
            operands=[list(ins), list(outs)],
            properties={"sym_name": StringAttr(name)},
            regions=[body],
        )

    def verify_(self) -> None:
        for what, values in (("input", self.ins), ("output", self.outs)):
            for i, value in enumerate(values):
                buffer = _verify_buffer(value, f"'tier.compute' {what} #{i}")
                if buffer.tier.data != Tier.SRAM:
                    raise VerifyException(
                        f"'tier.compute' {what} #{i} is in {buffer.tier.data.value}: "
                        "compute reads and writes sram only"
                    )
        block = self.body.block
        expected_args = [_as_tensor(v.type) for v in self.ins]
        if [a.type for a in block.args] != expected_args:
            raise VerifyException(
                "'tier.compute' block arguments must be the input buffers as tensors"
            )
        terminator = block.last_op
        yielded = [v.type for v in terminator.operands] if terminator else []
        if terminator is None or not terminator.has_trait(IsTerminator) or yielded != [
            _as_tensor(v.type) for v in self.outs
        ]:
            raise VerifyException(
                "'tier.compute' body must end in 'rdu.yield' of one tensor per output buffer"
            )
        self._verify_body_offsets()

    def _verify_body_offsets(self) -> None:
        """Allocated body values fit and never overlap a live value or buffer."""
        fixed = [r for v in (*self.ins, *self.outs) if (r := _alloc_range(v)) is not None]
        live: list[tuple[tuple[int, int], Operation]] = []
        block = self.body.block
        position = positions(block)
        last_use = {op: live_end(op, block, position) for op in block.ops}
        for index, op in enumerate(block.ops):
            live = [(r, o) for r, o in live if last_use[o] >= index]
            placed = body_value_range(op)
            if placed is None:
                continue
            verify_within_capacity(self, *placed, f"'{op.name}' value in 'tier.compute'")
            if views_operand_bytes(op):  # its operand's bytes, already checked, read another way
                live.append((held_range(op) or placed, op))  # a slice reads anywhere in them
                continue
            for other in fixed + [r for r, _ in live]:
                if ranges_overlap(placed, other):
                    raise VerifyException(
                        f"'{op.name}' value at [{placed[0]}, {placed[1]}) in 'tier.compute' "
                        f"overlaps a live buffer at [{other[0]}, {other[1]})"
                    )
            live.append((placed, op))


OPERAND_VIEW_OPS = frozenset({"rdu.reshape", "rdu.transpose", "rdu.slice"})
"""Ops whose value `rdu-sram-alloc` may place on its operand's bytes: the same
elements (a slice: some of them), read in another shape or order or at an
offset and with strides (an address pattern, no copy)."""


def views_operand_bytes(op: Operation) -> bool:
    """Whether a `tier.compute` body value sits on its operand's bytes, placed
    there by `rdu-sram-alloc`: a reshape, transpose or slice whose operand is a
    body value at the same offset (a slice's value no larger than what its
    operand holds). Such a value is a view: nothing writes it; its readers read
    the operand's bytes in its shape or order, a slice's elements where they lie
    in them (`held_range`)."""
    if op.name not in OPERAND_VIEW_OPS or not op.operands:
        return False
    source = op.operands[0].owner
    placed = body_value_range(op)
    if placed is None or not isinstance(source, Operation) or source.parent_block() is not op.parent_block():
        return False
    held = held_range(source)
    return held is not None and held[0] == placed[0] and placed[1] <= held[1]


def held_range(op: Operation) -> tuple[int, int] | None:
    """[start, end) of the bytes a `tier.compute` body value is read from: a view
    placed on its operand's bytes (`views_operand_bytes`) reads anywhere in
    the bytes its operand is read from (a slice's elements lie between the
    first and the last of them, not in its own first bytes); any other value
    its own (`body_value_range`)."""
    if views_operand_bytes(op):
        source = op.operands[0].owner
        assert isinstance(source, Operation)
        return held_range(source)
    return body_value_range(op)


def body_value_range(op: Operation) -> tuple[int, int] | None:
    """[start, end) of a `tier.compute` body value, once the allocator placed it."""
    offset = op.attributes.get(contracts.BODY_OFFSET)
    if not isinstance(offset, IntegerAttr) or not op.results:
        return None
    assert isinstance(op.results[0].type, TensorType)
    return offset.value.data, offset.value.data + value_bytes(op.results[0])


def _alloc_range(value: SSAValue) -> tuple[int, int] | None:
    owner = value.owner
    return owner.byte_range if isinstance(owner, AllocOp) else None


def _as_tensor(buffer: Attribute) -> TensorType:
    assert isinstance(buffer, BufferType)
    return TensorType(buffer.element_type, list(buffer.get_shape()))


Memory = Dialect(
    "tier",
    [GlobalOp, GetGlobalOp, AllocOp, DeallocOp, DmaOp, ViewOp, GatherDmaOp, ScatterDmaOp, ComputeOp],
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
    "ViewOp",
    "GatherDmaOp",
    "ROWS_ONLY",
    "ScatterDmaOp",
    "is_contiguous_window",
    "window_strides",
    "ComputeOp",
    "OPERAND_VIEW_OPS",
    "body_value_range",
    "held_range",
    "views_operand_bytes",
]
