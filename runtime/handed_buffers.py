"""SRAM buffers whose only reader is one whole-buffer DMA out to a fresh off-chip buffer.

A placed program computes its result (a model's logits, 16-26 MB a call at
full size) into an SRAM buffer and copies it out whole with one `tier.dma`
into an off-chip `tier.alloc`, which the run hands to the caller. Where the
SRAM buffer is written only by computes before that DMA, read by nothing
else, and the placement verifies (no other SRAM value shares its bytes while
it is live: `PlacedProgram._resolve_aliases` decides, as for a weight's
DMA), the interpreter gives the buffer a host array of its own each run
instead of its arena bytes: the computes write there and the DMA hands that
array on, with no copy. The bytes are the same either way; the first run's
array holds the poison bytes, as the arena does.
"""

from __future__ import annotations

import numpy as np
from xdsl.dialects import func
from xdsl.ir import Block, Operation, SSAValue

from rducc.dialects.tier import AllocOp, BufferType, ComputeOp, DeallocOp, DmaOp, Tier
from rducc.runtime import kernels


class HandedBuffer:
    """An SRAM buffer that may live in a host array of its own each run: its
    byte span, its slot, the arena views of its bytes (slot, offset in the
    buffer, bytes, dtype, shape) made while its writers were prepared."""

    __slots__ = ("alloc", "allowed", "dma", "dtype", "end", "first", "partial", "shape", "slot", "start", "views",
                 "writers")

    def __init__(self, alloc: AllocOp, dma: DmaOp, start: int, size: int, slot: int,
                 shape: tuple[int, ...], dtype: np.dtype):
        self.alloc, self.dma = alloc, dma
        self.start, self.end = start, start + size
        self.slot, self.shape, self.dtype = slot, shape, dtype
        self.views: list[tuple[int, int, int, np.dtype, tuple[int, ...]]] = []
        self.writers = [use.operation for use in alloc.result.uses if isinstance(use.operation, ComputeOp)]
        self.partial = False  # a view reaches across the buffer's edge: it stays in the arena
        self.allowed = False
        self.first = True

    def record(self, slot: int, offset: int, nbytes: int, dtype: np.dtype, shape: tuple[int, ...]) -> None:
        """An arena view made while a writer was prepared: rebound with the buffer when inside it."""
        if offset >= self.end or offset + nbytes <= self.start:
            return
        if offset < self.start or offset + nbytes > self.end:
            self.partial = True
            return
        self.views.append((slot, offset - self.start, nbytes, dtype, shape))

    def bind(self, env: list) -> None:
        """Give the buffer and its views a new host array (poisoned on the first run)."""
        array = kernels.poisoned(self.shape, self.dtype) if self.first else np.empty(self.shape, self.dtype)
        self.first = False
        env[self.slot] = array
        raw = array.reshape(-1).view(np.uint8)
        for slot, offset, nbytes, dtype, shape in self.views:
            env[slot] = raw[offset : offset + nbytes].view(dtype).reshape(shape)


def handed_dma(alloc: AllocOp, order: dict[Operation, int]) -> DmaOp | None:
    """The whole-buffer DMA out of the SRAM buffer `alloc` makes that may hand
    its bytes on, or None. It qualifies when every use of the buffer is in its
    block, the computes writing it (never reading it) come before the one DMA
    out of it, its deallocs aside; the DMA's destination is an off-chip
    one-copy `tier.alloc` of the block that nothing touches before the DMA
    and that is only read, returned or freed after it (`order`: each op of
    the block's position)."""
    buffer = alloc.result
    users = [use.operation for use in buffer.uses]
    dmas = [op for op in users if isinstance(op, DmaOp)]
    if len(dmas) != 1 or any(op not in order for op in users):
        return None
    dma = dmas[0]
    if dma.source is not buffer or dma.dest is buffer or dma.src_offsets or dma.dst_offsets:
        return None
    for op in users:
        if op is dma or isinstance(op, DeallocOp):
            continue
        if not (isinstance(op, ComputeOp) and buffer in op.outs and buffer not in op.ins
                and order[op] < order[dma]):
            return None
    return dma if _fresh_destination(dma.dest, dma, order) else None


def _fresh_destination(dest: SSAValue, dma: DmaOp, order: dict[Operation, int]) -> bool:
    """`dest` is an off-chip one-copy alloc of the DMA's block, used before the
    DMA by nothing, and after it only read (DMAs out, compute `ins`), returned or freed."""
    owner = dest.owner
    if not isinstance(owner, AllocOp) or owner.copies != 1 or owner not in order:
        return False
    if not isinstance(dest.type, BufferType) or dest.type.tier.data == Tier.SRAM:
        return False
    for use in dest.uses:
        op = use.operation
        if op is dma:
            continue
        anchor = _in_block(op, dma.parent_block())
        if anchor is None or order[anchor] <= order[dma]:
            return False
        reads = (isinstance(op, DmaOp) and op.source is dest and op.dest is not dest) or (
            isinstance(op, ComputeOp) and dest in op.ins and dest not in op.outs)
        if not (reads or isinstance(op, DeallocOp | func.ReturnOp)):
            return False
    return True


def _in_block(op: Operation, block: Block | None) -> Operation | None:
    """`op` or the ancestor of it that is an op of `block` (None when outside it)."""
    ancestor: Operation | None = op
    while ancestor is not None and ancestor.parent_block() is not block:
        ancestor = ancestor.parent_op()
    return ancestor


__all__ = ["HandedBuffer", "handed_dma"]
