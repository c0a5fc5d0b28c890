"""Transposes, broadcasts, slices and reshapes as NumPy views (issue 32).

A layout op (`rdu.transpose`, `rdu.broadcast`, `rdu.slice`, `rdu.reshape`)
changes no element, only where each is read. Its step copied its operand
into its own arena bytes (or, for a streamed view, into a host array) every
call: at ViT-B/16, Swin-T and ConvNeXt-T sizes 10-15 ms of transposes and
reshapes a call (a ConvNeXt block permutes to channels-last and back; Swin
reshapes and permutes its windows). `LayoutViews` lets such an op's step
bind its value to a view of its operand's array instead (strides, no copy);
its own bytes go unused.

`rdu-sram-alloc` places a reshape, transpose or slice of a body value on its
operand's bytes (`tier.views_operand_bytes`; a slice's elements anywhere in
them, `tier.held_range`), the one buffer live until the later value's last
reader: such an op is always a view here (a copy onto its operand's bytes
would overwrite the operand), unless its operand's value lives elsewhere (a
bias add computed into its product's bytes, in a program placed without the
allocator's epilogue rule): then it is a view by the rule below, or copies
into a host array (`aside`: views of one operand share its bytes, so a copy
into them would overwrite a sibling's).

Any other layout op (a broadcast, a slice, a reshape of an input buffer, a
program placed before this rule) is a view only while its operand's bytes
keep the operand's value: the allocator reserved the view's own bytes, not
the operand's, for the view's lifetime. So such an op runs as a view when

- its value is not yielded (an output buffer is written, not viewed) and
  every reader is a body op;
- its operand holds its value in known bytes: a body value computed into its
  own arena bytes (or a host array: a streamed value without a `tier.offset`),
  a reshape made a view by `rducc.runtime.views` (its operand's bytes), or
  another layout view (its operand's bytes, again), or an input buffer of
  the compute (its `tier.alloc`'s bytes; unknown bytes overlap everything);
  not a value a fused step computes elsewhere or skips
  (`rducc.runtime.epilogues`, `rducc.runtime.fused_norms`);
- no reader needs the op's own bytes (a reshape `rducc.runtime.views` reads
  at an offset, or computes into);
- no op from the view up to the last step that reads it writes bytes
  overlapping the operand's bytes: a fused step reads its operands where it
  runs (a folded product at its bias add, a norm chain at its last map),
  which can be later than the reader's own position; an op writes its own
  bytes, an output buffer, or (a reshape's producer, `views.into`) the
  reshape's bytes.

Readers get arrays with strides (any kernel reads those; torch's products
read a transposed operand without a copy) and write only their own bytes.
No compute writes an input buffer: a row update "in place" is a `tier.scatter`
of the compute's output into the off-chip buffer after the compute, and a
compute whose output buffer is its input's shares its bytes, which the
overlap rule sees. (Views of input buffers were refused for a while: a row
update read through a transpose came out wrong. The cause was `kernels.scatter`
writing through `reshape(-1)` of a copy that kept the view's strides, i.e.
into a temporary; test/runtime/layout-view-scatter.mlir and
test_runtime_layout_views.py hold that case, test_runtime_layout_updates.py
random programs of layout views and in-place updates against eager.)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

import numpy as np
from xdsl.dialects.builtin import TensorType
from xdsl.ir import BlockArgument, Operation, SSAValue

from rducc.dialects.rdu import dataflow as rdu
from rducc.dialects.shapes import shape_of
from rducc.dialects.tier import ComputeOp, views_operand_bytes
from rducc.runtime.elementwise import assign, copies_on_torch
from rducc.runtime.epilogues import BiasFolds
from rducc.runtime.fused_norms import NormChains
from rducc.runtime.kernels import slice_index
from rducc.runtime.views import UNKNOWN, Bytes, Fused, Placement, Views, body_bytes, overlap


class LaterChains(Protocol):
    """Fused steps beside the norms' (`rducc.runtime.fused_attention.AttentionChains`):
    the ops whose steps do not run, and the ops whose operands each step reads
    at its own position, by the op running the step."""

    def skipped(self) -> frozenset[Operation]: ...

    def late_reads(self) -> dict[Operation, tuple[Operation, ...]]: ...

LAYOUT_OPS = (rdu.TransposeOp, rdu.BroadcastOp, rdu.SliceOp, rdu.ReshapeOp)
"""The ops whose value is a view of their operand's array."""

View = Callable[[np.ndarray], np.ndarray]


def view_of(op: Operation) -> View:
    """The function making `op`'s value from its operand's array without a copy
    (a reshape of an array with strides copies, as NumPy must)."""
    shape = tuple(shape_of(op.results[0].type))
    if isinstance(op, rdu.TransposeOp):
        perm = tuple(op.perm.get_values())
        return lambda x: x.transpose(perm)
    if isinstance(op, rdu.SliceOp):
        index = slice_index(op.offsets.get_values(), op.strides.get_values(), shape)
        return lambda x: x[index]
    if isinstance(op, rdu.BroadcastOp):
        return lambda x: _broadcast(x, shape)
    return lambda x: x.reshape(shape) if x.flags.c_contiguous else _reshape(x, shape)


def _reshape(x: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """`x.reshape(shape)` of an array with strides: a view where they allow
    one; else a copy, on torch's pool at more than one thread
    (`elementwise.assign`)."""
    if copies_on_torch(x.size):
        try:
            return np.reshape(x, shape, copy=False)
        except TypeError:  # NumPy before 2.1: no `copy`
            return x.reshape(shape)
        except ValueError:  # NumPy would copy: one copy of the same bits on the pool
            dense = np.empty(x.shape, x.dtype)
            assign(dense, x)
            return dense.reshape(shape)
    return x.reshape(shape)


def _broadcast(x: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """`np.broadcast_to` as a writable view (torch warns on read-only arrays;
    no reader writes its operands)."""
    strides = (0,) * (len(shape) - x.ndim) + tuple(
        0 if size == 1 and wanted != 1 else stride for size, wanted, stride in zip(x.shape, shape[-x.ndim:], x.strides)
    ) if x.ndim else (0,) * len(shape)
    return np.lib.stride_tricks.as_strided(x, shape, strides)


class LayoutViews:
    """The layout ops of one compute's body whose step binds a view (module docstring)."""

    def __init__(self, compute: ComputeOp, folds: BiasFolds, norms: NormChains, views: Views,
                 attention: LaterChains | None = None) -> None:
        self.placement = Placement(compute)
        self.ops = list(compute.body.block.ops)[:-1]
        self.position = {op: index for index, op in enumerate(self.ops)}
        self.views = views
        self.reads_at = _fused_read_positions(folds, norms, self.position, attention)
        self.in_product = {add: matmul for matmul, add in folds.at_product.items()}
        """Bias adds computed into their product's bytes."""
        self.skipped = norms.skipped() | (frozenset() if attention is None else attention.skipped())
        self.excluded = folds.moved() | self.skipped | frozenset(views.into) \
            | frozenset(views.into.values())
        """Ops that are no view: fused or computed elsewhere, or a reshape view's producer."""
        self.source: dict[Operation, SSAValue] = {}
        """Layout op -> the operand it views."""
        for op in self.ops:
            if not isinstance(op, LAYOUT_OPS) or op in views.of_source or op in self.skipped:
                continue  # a fused step's intermediate is not bound: the step reads what it views
            if views_operand_bytes(op) and self._bytes(op.operands[0]) == body_bytes(op) or self._qualifies(op):
                self.source[op] = op.operands[0]
        self.aside = frozenset(op for op in placed_views(compute) if op not in self.source and op not in self.skipped)
        """Views placed on their operand's bytes whose operand lives elsewhere and
        which are no view here: copied into a host array (siblings, the gate and
        up slices of one value, share those bytes: a copy there would clobber one)."""

    def _bytes(self, value: SSAValue) -> Bytes | None:
        """The bytes holding `value` while it is read (None: a host array, no arena
        bytes; `UNKNOWN`: not proved, overlapping everything)."""
        owner = value.owner
        if isinstance(value, BlockArgument) or not isinstance(owner, Operation):
            found = self.placement.read(value)
            return UNKNOWN if found is None else found  # an off-chip buffer: not proved
        if owner in self.source:
            return self._bytes(self.source[owner])
        if isinstance(owner, rdu.ReshapeOp) and owner in self.views.of_source:
            return self._bytes(owner.input)
        if isinstance(owner, rdu.MapOp) and owner in self.in_product:
            return body_bytes(self.in_product[owner])
        if owner in self.skipped or owner in self.views.into:
            return UNKNOWN  # not computed, or computed into its reshape's bytes
        if value in self.placement.outs:
            return self.placement.outs[value] or UNKNOWN
        return body_bytes(owner)

    def _written(self, op: Operation) -> list[Bytes]:
        """The bytes `op`'s step may write."""
        found = [b for b in (self.placement.written(op),) if b is not None]
        into = self.views.into_bytes.get(op)
        if into is not None:
            found.append(into)
        return found

    def _qualifies(self, op: Operation) -> bool:
        result = op.results[0]
        if op in self.excluded or result in self.placement.outs or not isinstance(result.type, TensorType):
            return False
        readers = [use.operation for use in result.uses]
        if not readers or any(r not in self.position or r in self.views.of_source or r in self.views.into.values()
                              for r in readers):
            return False
        held = self._bytes(op.operands[0])
        if held is None:
            return True  # a host array: written by its own step alone
        start = self.position[op]
        last = max(self.reads_at.get(r, self.position[r]) for r in readers)
        return not any(overlap(b, held) for step in self.ops[start + 1:last + 1] for b in self._written(step))


def placed_views(compute: ComputeOp) -> frozenset[Operation]:
    """The body's reshapes, transposes and slices `rdu-sram-alloc` placed on their
    operand's bytes (`tier.views_operand_bytes`): views, never copies, unless
    their operand's value lives elsewhere (`LayoutViews`)."""
    return frozenset(op for op in compute.body.block.ops if views_operand_bytes(op))


def fused_steps(compute: ComputeOp, folds: BiasFolds, norms: NormChains,
                attention: LaterChains | None = None) -> Fused:
    """Where the fused steps of one body read and write instead of their ops'
    own steps (`rducc.runtime.views.Fused`): a folded product runs at its bias
    add or computes the add's value into its own bytes, a norm chain runs at
    its last map, an attention chain at its second product."""
    ops = list(compute.body.block.ops)[:-1]
    position = {op: index for index, op in enumerate(ops)}
    attended = frozenset() if attention is None else attention.skipped()
    silent = frozenset([*folds.at_add.values(), *folds.at_product.values(), *norms.skipped(), *attended])
    held_in: dict[SSAValue, SSAValue] = {add.results[0]: matmul.result for matmul, add in folds.at_product.items()}
    return Fused(silent, _fused_read_positions(folds, norms, position, attention), held_in)


def _fused_read_positions(folds: BiasFolds, norms: NormChains, position: dict[Operation, int],
                          attention: LaterChains | None = None) -> dict[Operation, int]:
    """Body ops whose operands a fused step reads later than the op's own
    position: a folded product at its bias add, a norm chain's ops at its last
    map, an attention chain's at its second product."""
    later: dict[Operation, int] = {}
    for add, matmul in folds.at_add.items():
        later[matmul] = position[add]
    chains: list[tuple[Operation, tuple[Operation, ...]]] = [(last, c.intermediates)
                                                             for last, c in norms.at_last.items()]
    chains += [] if attention is None else list(attention.late_reads().items())
    for at, members in chains:
        for member in members:
            if member in position:
                later[member] = max(position[at], position[member], later.get(member, 0))
    return later


__all__ = ["LAYOUT_OPS", "LayoutViews", "View", "fused_steps", "placed_views", "view_of"]
