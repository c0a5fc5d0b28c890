"""Streamed views: expanded layouts a kernel reads by address, never copies.

Grouped-query attention repeats each key/value head for the query heads of
its group before the attention products (`repeat_kv`'s expand + reshape,
`repeat_interleave`, `Tensor.repeat`, indexing by a head map, SDPA's
`enable_gqa`). On the chip the product's operand is read from the source's
PMUs by address generation: the same K/V rows are re-read for each query head
of the group. Nothing the size of the expanded tensor is ever written.

`streamed_views` finds such values among a kernel's ops: a value made by an
op that `READS_BY_ADDRESS` (a layout op: its result is elements of its first
operand) or by an elementwise map of it with scalars only (a scale, a cast:
a PCU stage in the read path), whose every reader is in the kernel and is a
product (`rdu.matmul`) or another such value, and which belongs to a chain
that reads more bytes than its source holds (an expansion: a broadcast or a
gather repeating rows). Each is mapped to its source, the value the chain
starts from, which must stay in SRAM until the last product reads it.

The fuser's working set (`rducc.model.kernel_model`), the mapper's buffers
(`rducc.model.mapping`) and `rdu-sram-alloc` all read this one rule: a
streamed view holds no SRAM of its own and keeps its source live. The
runtime still materializes it on the host (numerics are unchanged).

Updates in place: a static KV cache updated by `index_copy_`, slice
assignment or `scatter_` is an `rdu.scatter` (no reduction) of a kernel
input that nothing else reads, its result written out. On the chip the rows
are written into the input's PMUs and only they go back to HBM
(`rdu-insert-dma`'s `tier.scatter`, passes/rdu_insert_dma/write_in_place.py).
`updated_in_place` finds such results; the mapper gives them no PMUs of
their own and the fuser counts only the rows written (`replaced_bytes`).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

from xdsl.dialects.builtin import TensorType
from xdsl.ir import Operation, SSAValue

from rducc.dialects.op_facts import facts_of
from rducc.dialects.rdu.dataflow import MapOp, MatmulOp, ScatterOp
from rducc.dialects.shapes import num_elements, shape_of, value_bytes


def _scalar(value: SSAValue) -> bool:
    return isinstance(value.type, TensorType) and num_elements(shape_of(value.type)) == 1


def read_source(op: Operation) -> SSAValue | None:
    """The operand an op's result can be read through by address: a layout op's
    first operand, or a map's one non-scalar input (its other inputs scalars);
    None for any other op."""
    facts = facts_of(op)
    if facts is not None and facts.READS_BY_ADDRESS and op.operands:
        return op.operands[0]
    if isinstance(op, MapOp):
        wide = [v for v in op.inputs if not _scalar(v)]
        if len(wide) == 1:
            return wide[0]
    return None


def _streams_on(reader: Operation, value: SSAValue, members: set[Operation], candidates: set[SSAValue]) -> bool:
    """Whether `reader` takes `value` as a stream: a product in the kernel, or a
    streamed view of it (`value` is what the reader reads through)."""
    if reader not in members:
        return False
    if isinstance(reader, MatmulOp):
        return True
    return read_source(reader) is value and len(reader.results) == 1 and reader.results[0] in candidates


def streamed_views(ops: Sequence[Operation], materialized: Collection[SSAValue] = ()) -> dict[SSAValue, SSAValue]:
    """Each streamed view among the results of `ops` (module docstring), with the
    source it is read from. `materialized`: values that leave the kernel (its
    outputs), which are written whatever reads them."""
    members = set(ops)
    candidates: set[SSAValue] = set()
    for op in reversed(ops):
        if len(op.results) != 1 or read_source(op) is None:
            continue
        result = op.results[0]
        if result in materialized or not result.uses:
            continue
        if all(_streams_on(use.operation, result, members, candidates) for use in result.uses):
            candidates.add(result)
    source_of: dict[SSAValue, SSAValue] = {}
    for op in ops:
        if op.results and op.results[0] in candidates:
            source = read_source(op)
            assert source is not None
            source_of[op.results[0]] = source_of.get(source, source)
    widest: dict[SSAValue, int] = {}
    for view, source in source_of.items():
        widest[source] = max(widest.get(source, 0), value_bytes(view))
    return {view: source for view, source in source_of.items() if widest[source] > value_bytes(source)}


def updated_in_place(ops: Sequence[Operation], inputs: Collection[SSAValue]) -> dict[SSAValue, SSAValue]:
    """Each result of `ops` that is one of `inputs` with some of its elements replaced
    (an `rdu.scatter` without a reduction whose input is a kernel input read by it
    alone), with that input: the result lives in the input's PMUs (module docstring)."""
    found: dict[SSAValue, SSAValue] = {}
    for op in ops:
        if isinstance(op, ScatterOp) and op.reduce is None and op.input in inputs and op.input.has_one_use():
            found[op.result] = op.input
    return found


def replaced_bytes(result: SSAValue) -> int:
    """Bytes a result updated in place (`updated_in_place`) writes back: the elements it replaced."""
    owner = result.owner
    assert isinstance(owner, ScatterOp)
    return value_bytes(owner.source)
