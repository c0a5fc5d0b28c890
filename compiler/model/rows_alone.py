"""Kernels that write rows into a buffer they read for nothing else: the rows alone.

A kernel whose result is a buffer with some rows replaced (`rdu.scatter` of a row
list, no reduction) is written back in place, those rows only (`tier.scatter`,
passes/rdu_insert_dma/write_in_place.py). When the kernel reads the buffer's old
value only to scatter the rows into it and yields the result only to be written
back, it need not hold the buffer at all: it computes the rows and writes them
(`tier.scatter {rows_only}`). Every layer's rows of a KV cache stacked over the
layers, written after the layers, are such a kernel: without this it loads the
whole stack to write a few KB.

One rule, asked by `rdu-fuse` (which weighs a group of ops that would be such a
kernel by its rows, so a stack that does not fit SRAM keeps its row write with the
ops computing the rows and their positions: `rows_alone_ops`), by `rdu-tile` (which
weighs such a kernel by its rows, so it is not tiled: `rows_alone_group`) and by
`rdu-insert-dma` (which lowers it so): `rows_alone_scatter` on a kernel body, and
`rows_alone_outputs` for the updates of a function that the lowering writes in place.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

from xdsl.dialects import func
from xdsl.ir import Block, BlockArgument, Operation, SSAValue

from rducc.dialects.contracts import arg_attrs, global_of, input_label, result_updates
from rducc.dialects.liveness import positions
from rducc.dialects.rdu.dataflow import BroadcastOp, KernelOp, MapOp, ScatterOp
from rducc.dialects.shapes import shape_of
from rducc.model.kernel_model import Group


def row_list(index: SSAValue, dim: int) -> SSAValue | None:
    """A value whose elements, in order, are the rows a scatter along `dim` writes,
    when its index is the same everywhere but along `dim` (a broadcast, perhaps
    through several, of a value of size 1 in every other dim); else None."""
    shape = shape_of(index.type)
    count, rank = shape[dim], len(shape)
    value = index
    while True:
        current = shape_of(value.type)
        at = dim - (rank - len(current))
        others_one = all(size == 1 for d, size in enumerate(current) if d != at)
        if others_one and (0 <= at < len(current) and current[at] == count or count == 1):
            return value
        owner = value.owner
        if isinstance(owner, MapOp) and not owner.inputs and 0 <= at < len(current) and current[at] == count:
            return value  # a fill (`torch.full`): the same everywhere; `_add_output` takes one line of it
        if not isinstance(owner, BroadcastOp):
            return None
        value = owner.input


def rows_alone_scatter(yielded: SSAValue, body: Block) -> ScatterOp | None:
    """The scatter that `yielded` (a value `body`'s terminator yields) is, when it writes
    rows (a row list, no reduction) into a block argument of `body` read by it alone,
    its result yielded once and used by nothing else, its rows of the index's shape and
    the buffer's but along the scattered dim: the kernel may yield the rows alone."""
    scatter = yielded.owner
    if not isinstance(scatter, ScatterOp) or not _writes_rows(scatter):
        return None
    old, uses = scatter.input, list(scatter.result.uses)
    if not isinstance(old, BlockArgument) or old.block is not body or len(list(old.uses)) != 1 \
            or len(uses) != 1 or uses[0].operation is not body.last_op:
        return None
    return scatter if row_list(scatter.index, scatter.dim.value.data) is not None else None


def _writes_rows(scatter: ScatterOp) -> bool:
    """Whether `scatter` replaces rows (no reduction) with rows of its index's shape,
    the buffer's but along the scattered dim."""
    dim = scatter.dim.value.data
    index, rows, whole = shape_of(scatter.index.type), shape_of(scatter.source.type), shape_of(scatter.result.type)
    return scatter.reduce is None and list(index) == list(rows) \
        and all(a == b for d, (a, b) in enumerate(zip(index, whole)) if d != dim)


def rows_alone_ops(ops: Sequence[Operation]) -> list[ScatterOp]:
    """The scatters of `ops` (a contiguous run of a function's block, before `rdu-fuse`
    makes it a kernel) that the kernel of those ops would write rows alone by
    (`rows_alone_outputs` once it is one): each writes a row list the ops compute into a
    global or input of the function that no other of the ops reads, its result the
    function's update of that buffer, returned once, and nothing after the ops reads
    the buffer."""
    block = ops[0].parent_block() if ops else None
    function = block.parent_op() if block is not None else None
    if not isinstance(function, func.FuncOp) or block is not function.body.block:
        return []
    members = set(ops)
    candidates = [op for op in ops if isinstance(op, ScatterOp) and op.result.has_one_use()
                  and next(iter(op.result.uses)).operation is block.last_op and _writes_rows(op)
                  and _row_list_within(op, members)]
    if not candidates:  # the function-wide questions below only where a scatter may answer them
        return []
    updated = _updated_buffers(function)
    order = positions(block)
    found = []
    for op in candidates:
        old: SSAValue = op.input
        if updated.get(next(iter(op.result.uses)).index) is old and not _read_after(old, ops[-1], order) \
                and not any(use.operation in members and use.operation is not op for use in old.uses):
            found.append(op)
    return found


def _row_list_within(scatter: ScatterOp, members: Collection[Operation]) -> bool:
    """Whether the scatter's row list (`row_list`) is computed by `members` (or is a row
    list as it reaches them): so it is one in the kernel of `members`, not an input of
    the index's whole shape."""
    dim = scatter.dim.value.data
    row = row_list(scatter.index, dim)
    if row is None:
        return False
    value = scatter.index
    while value is not row:
        if value.owner not in members:
            return False
        owner = value.owner
        assert isinstance(owner, BroadcastOp)
        value = owner.input
    fill = isinstance(row.owner, MapOp) and not row.owner.inputs
    return row.owner in members or not fill


def rows_alone_group(group: Group, scatters: Sequence[ScatterOp]) -> Group:
    """`group` as the kernel runs once its `scatters` write their rows alone: without the
    scatters and the old values they read, yielding the rows."""
    rows: dict[SSAValue, SSAValue] = {scatter.result: scatter.source for scatter in scatters}
    olds = {scatter.input for scatter in scatters}
    return Group([op for op in group.ops if op not in scatters], [v for v in group.inputs if v not in olds],
                 [rows.get(v, v) for v in group.outputs])


def rows_alone_outputs(function: func.FuncOp) -> dict[KernelOp, list[ScatterOp]]:
    """The kernels of `function`'s block (before lowering) whose results are updates the
    function returns once, of a global or input that the kernel takes as the scatter's
    old value and nothing reads after it: each with those scatters (`rows_alone_scatter`)."""
    block = function.body.block
    returned = block.last_op
    order = positions(block)
    found: dict[KernelOp, list[ScatterOp]] = {}
    for at, target in _updated_buffers(function).items():
        assert returned is not None
        value = returned.operands[at]
        kernel = value.owner
        if not isinstance(kernel, KernelOp) or kernel.parent_block() is not block:
            continue
        body = kernel.body.block
        yielded = body.last_op
        scatter = rows_alone_scatter(yielded.operands[kernel.results.index(value)], body) if yielded else None
        old = scatter.input if scatter is not None else None
        if not isinstance(old, BlockArgument) or kernel.inputs[old.index] != target \
                or list(kernel.inputs).count(target) != 1 or _read_after(target, kernel, order):
            continue
        assert scatter is not None
        found.setdefault(kernel, []).append(scatter)
    return found


def _updated_buffers(function: func.FuncOp) -> dict[int, SSAValue]:
    """Per position of `function`'s returned values that is an update of one of its
    globals or inputs (`result_updates`) and returns a value no other position does:
    that global's or input's argument."""
    returned = function.body.block.last_op
    if not isinstance(returned, func.ReturnOp):
        return {}
    buffers = {}
    for arg, attrs in zip(function.args, arg_attrs(function)):
        name = global_of(attrs)
        buffers[("buffer", name) if name is not None else ("input", input_label(attrs))] = arg
    values = list(returned.arguments)
    found: dict[int, SSAValue] = {}
    for at, (value, update) in enumerate(zip(values, result_updates(function))):
        target = buffers.get((update.kind, update.name)) if update is not None else None
        if target is not None and values.count(value) == 1:
            found[at] = target
    return found


def _read_after(value: SSAValue, last: Operation, order: dict[Operation, int]) -> bool:
    """Whether an op of `last`'s block after it uses `value`."""
    block = last.parent_block()
    at = order[last]
    for use in value.uses:
        op = use.operation
        while op is not None and op.parent_block() is not block:
            op = op.parent_op()
        if op is not None and order.get(op, -1) > at:
            return True
    return False


__all__ = ["row_list", "rows_alone_group", "rows_alone_ops", "rows_alone_outputs", "rows_alone_scatter"]
