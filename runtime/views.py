"""Reshapes of a `tier.compute` body run as views: no copy (issue 32).

In the placed program every body value has its own bytes in the SRAM arena
(`tier.offset`), and an `rdu.reshape` copies its operand's bytes into its
own. A reshape changes no byte, only the shape read, so the runtime can have
the reshape's *producer* compute straight into the reshape's bytes and skip
the copy. That is only right where the program proves nothing else needs
those bytes meanwhile: the allocator reserved them for the reshape's value
from the reshape on, not before. `elided_reshapes` allows it for a reshape R
of a value produced by the body op S when

- S's value is read by R alone and is not yielded, and S computes into a
  view of its own (S is no reshape made a view itself); where R is yielded,
  its bytes are its output buffer's (one SRAM buffer of one copy: a model's
  logits `[tokens, vocab]` reshaped to `[1, tokens, vocab]` are computed
  into the output buffer, no copy of tens of MB);
- no op from S up to (not including) R reads bytes overlapping R's: not S's
  operands (an in-place overwrite of an input S still reads), nor those of
  the ops between, whose values would be clobbered early;
- no op strictly between S and R writes bytes overlapping R's.

From R on, the allocator's own guarantee holds: nothing overlapping R's
bytes is written while R's value is live. A body argument is an input
buffer: its bytes are its `tier.alloc`'s (all rotating copies); one whose
bytes are not known (not an SRAM allocation with an offset) counts as
overlapping everything. In-place updates and donated buffers need no rule of
their own here: they are writes into output buffers, whose bytes are checked
like any other.

The second way is a reshape R whose readers read its operand's bytes: when
R's operand is a body value (not an output buffer) and no op from R to R's
last reader writes those bytes.

Each way changes the placement the next decision must see: a producer that
computes into R's bytes writes them early (from the producer, not from R),
and readers of a reshape that reads its operand's bytes keep those bytes
after the allocator freed them (at R). So the views are decided in body
order on a `Timeline` of the actual reads, writes and such holds, those of
the fused steps (`Fused`: a folded product reading its operands at its bias
add, a norm chain at its last map) included: a view is taken only where no
write reaches a hold and no hold meets the bytes it starts to use. Checked
each alone against the placement, two views were wrong together (ViT at
dp=2, issue 27: a producer computed into a reshape's bytes that were the
bytes another reshape's readers still read as its operand's).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from xdsl.dialects.builtin import IntegerAttr, TensorType
from xdsl.ir import Block, BlockArgument, Operation, SSAValue

from rducc.dialects.contracts import BODY_OFFSET
from rducc.dialects.rdu import dataflow as rdu
from rducc.dialects.tier import AllocOp, BufferType, ComputeOp, Tier, held_range, views_operand_bytes
from rducc.runtime.dtypes import tensor_signature

Bytes = tuple[int, int]
"""A half-open byte range of the arena."""

UNKNOWN: Bytes = (0, 1 << 62)
"""The bytes of a buffer not known to be in the arena: overlapping everything."""


def _value_bytes(value: SSAValue) -> int:
    shape, dtype = tensor_signature(value.type)
    count = 1
    for size in shape:
        count *= size
    return count * dtype.itemsize


def _buffer_bytes(buffer: SSAValue) -> Bytes | None:
    """An input or output buffer's arena bytes (every rotating copy); None off
    chip (HBM and DDR are not in the arena)."""
    if isinstance(buffer.type, BufferType) and buffer.type.tier.data != Tier.SRAM:
        return None
    owner = buffer.owner
    placed = owner.byte_range if isinstance(owner, AllocOp) else None
    return UNKNOWN if placed is None else placed


def body_bytes(op: Operation) -> Bytes | None:
    """The arena bytes a body op's value is computed into at its `tier.offset`;
    a view placed on its operand's bytes (`tier.views_operand_bytes`) is read
    from its operand's (`tier.held_range`: a slice's elements lie anywhere in
    them)."""
    offset = op.attributes.get(BODY_OFFSET)
    if not isinstance(offset, IntegerAttr) or not isinstance(op.results[0].type, TensorType):
        return None
    if views_operand_bytes(op):
        return held_range(op)
    start = offset.value.data
    return start, start + _value_bytes(op.results[0])


def overlap(a: Bytes | None, b: Bytes) -> bool:
    """Whether the bytes `a` (None: not in the arena) and `b` share one."""
    return a is not None and a[0] < b[1] and b[0] < a[1]


class Placement:
    """Where each value of one compute's body lives: arena bytes, or an output buffer."""

    def __init__(self, compute: ComputeOp, moved: frozenset[Operation] = frozenset()) -> None:
        """`moved`: body ops whose value the runtime computes elsewhere than its
        own bytes (`rducc.runtime.epilogues`): no reshape of theirs is a view."""
        block = compute.body.block
        self.args = {arg: _buffer_bytes(buffer) for arg, buffer in zip(block.args, compute.ins)}
        terminator = block.last_op
        assert terminator is not None
        self.outs: dict[SSAValue, Bytes | None] = {}
        self.out_buffers: dict[SSAValue, SSAValue] = {}
        """A yielded value -> the (first) output buffer the yield writes it to."""
        for value, buffer in zip(terminator.operands, compute.outs):
            self.outs.setdefault(value, _buffer_bytes(buffer))
            self.out_buffers.setdefault(value, buffer)

    def one_copy_out(self, value: SSAValue) -> Bytes | None:
        """The arena bytes of the output buffer `value` is yielded to, when that
        is one SRAM buffer of one copy at a known offset (else None)."""
        buffer = self.out_buffers.get(value)
        owner = None if buffer is None else buffer.owner
        if not isinstance(owner, AllocOp) or owner.copies != 1 or self.outs[value] in (None, UNKNOWN):
            return None
        return self.outs[value]

    def read(self, value: SSAValue) -> Bytes | None:
        """The bytes a reader of `value` reads."""
        if isinstance(value, BlockArgument):
            return self.args.get(value, UNKNOWN)
        if value in self.outs:
            return self.outs[value]
        owner = value.owner
        return body_bytes(owner) if isinstance(owner, Operation) else UNKNOWN

    def written(self, op: Operation) -> Bytes | None:
        """The bytes a body op writes."""
        result = op.results[0]
        return self.outs[result] if result in self.outs else body_bytes(op)


def target_bytes(reshape: rdu.ReshapeOp, placement: Placement) -> Bytes | None:
    """The bytes holding `reshape`'s value: its own, or where it is yielded the
    output buffer's (one copy, known bytes; else None)."""
    if reshape.result in placement.outs:
        return placement.one_copy_out(reshape.result)
    return body_bytes(reshape)


def _candidate(reshape: rdu.ReshapeOp, placement: Placement, block: Block) -> Operation | None:
    """The producer of `reshape`'s operand when the first rule of the module holds."""
    source = reshape.input
    producer = source.owner
    if not isinstance(producer, Operation) or producer.parent_block() is not block:
        return None
    if isinstance(producer, rdu.ReshapeOp) or len(producer.results) != 1:
        return None
    if source in placement.outs or len(list(source.uses)) != 1:
        return None
    if body_bytes(producer) is None or target_bytes(reshape, placement) is None:
        return None
    return producer


@dataclass(frozen=True)
class Fused:
    """What the fused steps decided before the views (`rducc.runtime.epilogues`,
    `rducc.runtime.fused_norms`) change about the body's reads and writes."""

    silent: frozenset[Operation] = frozenset()
    """Body ops whose own step does not run: a fused step computes their value or skips it."""
    reads_at: Mapping[Operation, int] = field(default_factory=dict)
    """Body op -> the position where a fused step reads its operands (later than its own)."""
    held_in: Mapping[SSAValue, SSAValue] = field(default_factory=dict)
    """Value -> the value whose bytes hold it (a bias add computed into its product's bytes)."""


@dataclass(frozen=True)
class Hold:
    """Arena bytes that keep `value` from `start` to `end` (positions, inclusive)
    where the allocator did not reserve them for it: a view reads them, or a fused
    step or a producer computing into a reshape's bytes uses them early or late."""

    bytes: Bytes
    start: int
    end: int
    value: SSAValue


class Timeline:
    """Where the steps of one body actually read and write, as the views and
    fused steps decided so far run it, next to what the allocator planned.

    The allocator's placement proves values it knows apart; what it does not
    know are the `holds`: bytes kept for a value outside the span the
    allocator reserved them for it. A new view is taken only where no write
    reaches a hold and no hold meets the bytes it starts to use, so each
    decision is checked against all those made before it (each alone against
    the placement is not enough: a producer computing into a reshape's bytes
    early overwrote a value another reshape's readers still read in its
    operand's bytes, which the allocator had freed at that reshape)."""

    def __init__(self, ops: list[Operation], placement: Placement, fused: Fused) -> None:
        self.ops = ops
        self.position = {op: index for index, op in enumerate(ops)}
        self.placement = placement
        self.writes: dict[Operation, Bytes | None] = {
            op: None if op in fused.silent else placement.written(op) for op in ops}
        self.located: dict[SSAValue, SSAValue] = dict(fused.held_in)
        """Value -> the value whose bytes hold it."""
        self.reads_at = fused.reads_at
        self.holds: list[Hold] = []
        for op, at in fused.reads_at.items():
            for value in op.operands:
                held = self.read(value)
                if held is not None and value.owner not in fused.silent:
                    self.holds.append(Hold(held, self.position[op], at, value))
        for value, holder in fused.held_in.items():
            held = self.read(holder)
            if held is not None and isinstance(value.owner, Operation) and value.owner in self.position:
                self.holds.append(Hold(held, self.position[value.owner], self.last_read(value), holder))

    def read(self, value: SSAValue) -> Bytes | None:
        """The bytes a reader of `value` actually reads."""
        while value in self.located:
            value = self.located[value]
        return self.placement.read(value)

    def last_read(self, value: SSAValue) -> int:
        """The position of `value`'s last read (a fused step's where it reads later);
        past the body where it is yielded or read outside."""
        readers = [use.operation for use in value.uses]
        if any(reader not in self.position for reader in readers):
            return len(self.ops)
        owner = value.owner
        start = self.position[owner] if isinstance(owner, Operation) and owner in self.position else 0
        return max((self.reads_at.get(r, self.position[r]) for r in readers), default=start)

    def written_in(self, target: Bytes, first: int, last: int) -> bool:
        """Whether a step at a position in [first, last] writes bytes overlapping `target`."""
        return any(overlap(self.writes[step], target) for step in self.ops[max(first, 0):last + 1])

    def held(self, target: Bytes, first: int, last: int, value: SSAValue | None = None) -> bool:
        """Whether a hold of a value other than `value` meets `target` during [first, last]."""
        return any(hold.value is not value and hold.start <= last and hold.end >= first
                   and overlap(hold.bytes, target) for hold in self.holds)

    def may_compute_into(self, producer: Operation, reshape: rdu.ReshapeOp) -> bool:
        """Whether `producer` may compute into `reshape`'s bytes (the first way):
        from the producer to the reshape nothing reads or writes those bytes, and
        no hold meets them."""
        target = target_bytes(reshape, self.placement)
        assert target is not None
        start, end = self.position[producer], self.position[reshape]
        if any(overlap(self.read(v), target) for step in self.ops[start:end] for v in step.operands):
            return False
        return not self.written_in(target, start + 1, end - 1) and not self.held(target, start, end)

    def compute_into(self, producer: Operation, reshape: rdu.ReshapeOp) -> Bytes:
        """Records that `producer` computes into `reshape`'s bytes; those bytes."""
        target = target_bytes(reshape, self.placement)
        assert target is not None
        self.writes[producer], self.writes[reshape] = target, None
        self.located[producer.results[0]] = reshape.result
        self.holds.append(Hold(target, self.position[producer], self.position[reshape], producer.results[0]))
        return target

    def source_bytes(self, reshape: rdu.ReshapeOp) -> Bytes | None:
        """The bytes of `reshape`'s operand when its readers may read them (the
        second way): a body value's, which no step from the reshape to its last
        reader writes and no other hold meets; else None."""
        producer = reshape.input.owner
        if not isinstance(producer, Operation) or isinstance(producer, rdu.ReshapeOp) \
                or reshape.input in self.placement.outs or reshape.input in self.located:
            return None
        source = body_bytes(producer)
        start, end = self.position[reshape], self.last_read(reshape.result)
        if source is None or end >= len(self.ops):
            return None  # read by the yield (an output buffer) or outside the body
        if self.written_in(source, start + 1, end) or self.held(source, start, end, reshape.input):
            return None
        return source

    def read_source(self, reshape: rdu.ReshapeOp, source: Bytes) -> None:
        self.writes[reshape] = None
        self.located[reshape.result] = reshape.input
        self.holds.append(Hold(source, self.position[reshape], self.last_read(reshape.result), reshape.input))


class Views:
    """How each reshape of one compute's body runs without a copy (module docstring)."""

    def __init__(self, compute: ComputeOp, moved: frozenset[Operation] = frozenset(),
                 fused: Fused | None = None) -> None:
        """`moved`: body ops whose value the runtime computes elsewhere than its
        own bytes (`rducc.runtime.epilogues`) or binds as a view of its operand
        (`rducc.runtime.layout_views`): no reshape of theirs, and none of them, is
        a view here. `fused`: where those fused steps read and write instead."""
        block = compute.body.block
        placement = Placement(compute)
        ops = list(block.ops)[:-1]
        timeline = Timeline(ops, placement, fused or Fused())
        self.into: dict[Operation, rdu.ReshapeOp] = {}
        """Producer -> the reshape whose bytes it computes into."""
        self.into_bytes: dict[Operation, Bytes] = {}
        """Producer -> those bytes (the reshape's, or its output buffer's where it is yielded)."""
        self.of_source: dict[rdu.ReshapeOp, int] = {}
        """Reshapes whose value is their operand's bytes, reshaped: at this offset."""
        for op in ops:
            if not isinstance(op, rdu.ReshapeOp) or op.input.owner in moved or op in moved:
                continue
            producer = _candidate(op, placement, block)
            if producer is not None and timeline.may_compute_into(producer, op):
                self.into_bytes[producer] = timeline.compute_into(producer, op)
                self.into[producer] = op
                continue
            source = None if op.result in placement.outs else timeline.source_bytes(op)
            if source is not None:
                timeline.read_source(op, source)
                self.of_source[op] = source[0]


__all__ = ["UNKNOWN", "Bytes", "Fused", "Hold", "Placement", "Timeline", "Views", "body_bytes", "overlap",
           "target_bytes"]
