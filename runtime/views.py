"""Reshapes of a `tier.compute` body run as views: no copy (issue 32).

In the placed program every body value has its own bytes in the SRAM arena
(`tier.offset`), and an `rdu.reshape` copies its operand's bytes into its
own. A reshape changes no byte, only the shape read, so the runtime can have
the reshape's *producer* compute straight into the reshape's bytes and skip
the copy. That is only right where the program proves nothing else needs
those bytes meanwhile: the allocator reserved them for the reshape's value
from the reshape on, not before. `elided_reshapes` allows it for a reshape R
of a value produced by the body op S when

- S's value is read by R alone and neither is yielded (a yield writes an
  output buffer, not the arena view), and S computes into a view of its own
  (S is no reshape made a view itself);
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
"""

from __future__ import annotations

from xdsl.dialects.builtin import IntegerAttr, TensorType
from xdsl.ir import Block, BlockArgument, Operation, SSAValue

from rducc.dialects.contracts import BODY_OFFSET
from rducc.dialects.rdu import dataflow as rdu
from rducc.dialects.tier import AllocOp, BufferType, ComputeOp, Tier
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
    """The arena bytes a body op's value is computed into at its `tier.offset`."""
    offset = op.attributes.get(BODY_OFFSET)
    if not isinstance(offset, IntegerAttr) or not isinstance(op.results[0].type, TensorType):
        return None
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
        for value, buffer in zip(terminator.operands, compute.outs):
            self.outs.setdefault(value, _buffer_bytes(buffer))

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


def _candidate(reshape: rdu.ReshapeOp, placement: Placement, block: Block) -> Operation | None:
    """The producer of `reshape`'s operand when the first rule of the module holds."""
    source = reshape.input
    producer = source.owner
    if not isinstance(producer, Operation) or producer.parent_block() is not block:
        return None
    if isinstance(producer, rdu.ReshapeOp) or len(producer.results) != 1:
        return None
    if source in placement.outs or reshape.result in placement.outs or len(list(source.uses)) != 1:
        return None
    if body_bytes(producer) is None or body_bytes(reshape) is None:
        return None
    return producer


def _into_reshape(reshape: rdu.ReshapeOp, producer: Operation, ops: list[Operation],
                  placement: Placement) -> bool:
    """Whether `producer` may compute into `reshape`'s bytes (the first way)."""
    target = body_bytes(reshape)
    assert target is not None
    span = ops[ops.index(producer):ops.index(reshape)]
    if any(overlap(placement.read(v), target) for step in span for v in step.operands):
        return False
    return not any(overlap(placement.written(step), target) for step in span[1:])


def _reads_source(reshape: rdu.ReshapeOp, ops: list[Operation], placement: Placement) -> int | None:
    """The offset of `reshape`'s operand when its readers may read the operand's
    bytes (the second way): a body value's, which nothing from the reshape to the
    reshape's last reader writes; else None."""
    producer = reshape.input.owner
    if not isinstance(producer, Operation) or isinstance(producer, rdu.ReshapeOp) \
            or reshape.input in placement.outs:
        return None
    source = body_bytes(producer)
    uses = [use.operation for use in reshape.result.uses]
    if source is None or not all(user in ops for user in uses):
        return None  # read by the yield (an output buffer) or outside the body
    index = ops.index(reshape)
    last = max((ops.index(user) for user in uses), default=index)
    if any(overlap(placement.written(step), source) for step in ops[index + 1:last + 1]):
        return None
    return source[0]


class Views:
    """How each reshape of one compute's body runs without a copy (module docstring)."""

    def __init__(self, compute: ComputeOp, moved: frozenset[Operation] = frozenset()) -> None:
        """`moved`: body ops whose value the runtime computes elsewhere than its
        own bytes (`rducc.runtime.epilogues`) or binds as a view of its operand
        (`rducc.runtime.layout_views`): no reshape of theirs, and none of them, is
        a view here."""
        block = compute.body.block
        placement = Placement(compute)
        ops = list(block.ops)[:-1]
        self.into: dict[Operation, rdu.ReshapeOp] = {}
        """Producer -> the reshape whose bytes it computes into."""
        self.of_source: dict[rdu.ReshapeOp, int] = {}
        """Reshapes whose value is their operand's bytes, reshaped: at this offset."""
        for op in ops:
            if not isinstance(op, rdu.ReshapeOp) or op.result in placement.outs or op.input.owner in moved \
                    or op in moved:
                continue
            producer = _candidate(op, placement, block)
            if producer is not None and _into_reshape(op, producer, ops, placement):
                self.into[producer] = op
                continue
            offset = _reads_source(op, ops, placement)
            if offset is not None:
                self.of_source[op] = offset


__all__ = ["UNKNOWN", "Bytes", "Placement", "Views", "body_bytes", "overlap"]
