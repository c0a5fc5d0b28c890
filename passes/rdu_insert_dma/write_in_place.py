"""The last step of `rdu-insert-dma`: write back only the rows an update replaced.

A program that updates a buffer or input in place (a static KV cache's
`index_copy_`, torch.export's BUFFER_MUTATION / USER_INPUT_MUTATION) returns
its new value (`rdu.result_updates`). Lowered as any result, that is a fresh
HBM buffer the whole new value is written to. When the new value is the old
buffer with some rows replaced, that is

    %new = tier.alloc : !tier.buffer<hbm, ...>
    tier.dma %cache -> %cache_sram                    the old value, whole
    tier.compute ins(%cache_sram, ...) outs(%new_sram, ...) {
      %rows = rdu.broadcast %pos : 1x1x1x1 -> 2x4x1x8  (the same row everywhere along dim 2)
      %s = rdu.scatter %old[%rows] = %upd dim 2 ...   %old is %cache_sram's
      rdu.yield %s, ...
    }
    tier.dma %new_sram -> %new                        the whole cache, written back

it becomes an in-place write of those rows into the buffer itself, and the
buffer is the result (it aliases the input buffer):

    tier.compute ... outs(%new_sram, ..., %rows_sram) { ... rdu.yield %s, ..., %row_list }
    tier.scatter %new_sram -> %cache[%rows_sram] dim 2

The rule: the result is written once, whole, from a `tier.compute` output
(not in a tile loop) that is an `rdu.scatter` without a reduction, whose
input is the buffer's old value (one whole DMA of it) and whose index is the
same in every position but along the scattered dim (a broadcast of a row
list; the row list may be anything the kernel computes, a program input or a
constant included; or a fill, `torch.full`, of which one line is taken); and
nothing reads the old value after the write. A result returned by an
outlined layer is rewritten inside the layer when every call of it passes
the updated buffer in the same argument.

Any other update of a global (the whole buffer changes: an optimizer's new
weight or moment, a scatter whose rows differ across the other dims, a
reduction) is written whole over the global itself (`rewrite_whole`) when
`rducc.model.in_place.written_in_place` says so, the rule `rdu-place-saved`
and `rdu-place-tiers` count one copy by (asked before the kernels are
lowered): the kernel's one whole write-back DMA, from an untiled
`tier.compute`, targets the global's buffer, which the function returns. A
global in DDR takes its new value there (the function's result type
follows, and its calls'). A tile loop writes each tile over the slab of the
tiled dim it read the old value from (`_tile_loop_writing`). Any other tiled update, or an update
of a user input, keeps its own buffer and whole write-back. Transposes around the scatter that undo each
other (how `index_put_` at `[:, pos]` imports) are looked through.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from xdsl.dialects import func, scf
from xdsl.dialects.builtin import FunctionType, ModuleOp, TensorType, UnitAttr
from xdsl.ir import Block, BlockArgument, Operation, SSAValue

from rducc.dialects.contracts import Update, arg_attrs, input_label, result_updates
from rducc.dialects.liveness import BlockOrder, in_block, positions
from rducc.dialects.program import find_entry, functions
from rducc.dialects.rdu.dataflow import BroadcastOp, ReshapeOp, ScatterOp, SliceOp, TransposeOp, YieldOp
from rducc.dialects.shapes import element_of, num_elements, shape_of
from rducc.dialects.tier import (
    ROWS_ONLY,
    AllocOp,
    BufferType,
    ComputeOp,
    DeallocOp,
    DmaOp,
    GetGlobalOp,
    ScatterDmaOp,
    Tier,
    ViewOp,
)
from rducc.model.in_place import written_in_place
from rducc.model.rows_alone import row_list, rows_alone_scatter


def write_back_in_place(module: ModuleOp, whole_over: frozenset[int] = frozenset()) -> None:
    """Rewrite each update of `@forward` that replaces rows of its buffer into an
    in-place `tier.scatter` of those rows, and each other update of a global whose
    result position is in `whole_over` (`whole_positions`, asked before lowering)
    into a whole write over it (see the module docstring)."""
    forward = find_entry(module)
    if forward is None:
        return
    updates = result_updates(forward)
    returned = forward.body.block.last_op
    if not updates or not isinstance(returned, func.ReturnOp):
        return
    proposals: dict[func.CallOp, set[tuple[int, int, bool]]] = {}
    reads = _global_reads(forward)
    orders = Orders()
    for position, (update, result) in enumerate(zip(updates, returned.arguments)):
        target = _updated_buffer(forward, update, reads) if update is not None else None
        if target is None:
            continue
        whole = update is not None and update.kind == "buffer" and position in whole_over
        if isinstance(result.owner, func.CallOp):
            _propose(result.owner, result, target, proposals, whole, orders)
        elif not rewrite_rows(forward.body.block, result, target, orders) and whole:
            rewrite_whole(forward.body.block, result, target, orders, retype=False)
    _rewrite_callees(module, proposals, orders)
    _retype_results(forward.body.block)  # a call's result may be a global's buffer in DDR now


def whole_positions(module: ModuleOp) -> frozenset[int]:
    """The result positions of `@forward` (at the kernel level, before lowering) whose
    new global values are written over the global (`written_in_place`)."""
    forward = find_entry(module)
    returned = forward.body.block.last_op if forward is not None else None
    if forward is None or not isinstance(returned, func.ReturnOp):
        return frozenset()
    over = written_in_place(forward)
    return frozenset(i for i, value in enumerate(returned.arguments) if value in over)


class Orders(dict[Block, BlockOrder]):
    """Each block's `BlockOrder`, made on first use: one rewrite's order questions
    (what reads a buffer before or after a write) for every updated global, over
    the one order (the rewrites insert and erase ops, and move none)."""

    def __missing__(self, block: Block) -> BlockOrder:
        self[block] = BlockOrder(block)
        return self[block]


def _global_reads(function: func.FuncOp) -> dict[str, list[SSAValue]]:
    """The `tier.get_global`s of `function`'s block by global name (one walk for
    every update: a training step updates every parameter and optimizer state)."""
    reads: dict[str, list[SSAValue]] = {}
    for op in function.body.block.ops:
        if isinstance(op, GetGlobalOp):
            reads.setdefault(op.global_name.root_reference.data, []).append(op.result)
    return reads


def _updated_buffer(function: func.FuncOp, update: Update, reads: dict[str, list[SSAValue]]) -> SSAValue | None:
    """The buffer `update` names: the global's `tier.get_global` (`reads`), or the input argument."""
    block = function.body.block
    if update.kind == "buffer":
        found = reads.get(update.name, [])
        return found[0] if len(found) == 1 else None
    labelled = [arg for arg, attrs in zip(block.args, arg_attrs(function)) if input_label(attrs) == update.name]
    return labelled[0] if len(labelled) == 1 else None


def _propose(call: func.CallOp, result: SSAValue, target: SSAValue,
             proposals: dict[func.CallOp, set[tuple[int, int, bool]]], whole: bool, orders: Orders) -> None:
    """Record that `call`'s result #j is the new value of its argument #i (when the
    call passes `target` once and nothing reads `target` after the call); `whole`:
    the argument is a global's buffer, which a whole update may overwrite."""
    passed = [i for i, value in enumerate(call.arguments) if value == target]
    block = call.parent_block()
    pairs = proposals.setdefault(call, set())
    if len(passed) == 1 and block is not None and not _read_after(target, call, orders[block]):
        pairs.add((_result_index(call, result), passed[0], whole))


def _result_index(op: Operation, result: SSAValue) -> int:
    return next(i for i, r in enumerate(op.results) if r == result)


def _rewrite_callees(module: ModuleOp, proposals: dict[func.CallOp, set[tuple[int, int, bool]]],
                     orders: Orders) -> None:
    """Rewrite inside each outlined layer the (result, argument) pairs every call of it agrees on."""
    calls: dict[str, list[func.CallOp]] = {}
    for function in functions(module):
        for op in function.walk():
            if isinstance(op, func.CallOp):
                calls.setdefault(op.callee.string_value(), []).append(op)
    for function in functions(module):
        sites = calls.get(function.sym_name.data, [])
        agreed = set.intersection(*(proposals.get(call, set()) for call in sites)) if sites else set()
        block = function.body.block
        for result_index, arg_index, whole in sorted(agreed):
            returned = block.last_op
            assert isinstance(returned, func.ReturnOp)
            result, target = returned.arguments[result_index], block.args[arg_index]
            if not rewrite_rows(block, result, target, orders) and whole:
                rewrite_whole(block, result, target, orders, retype=False)
        if agreed:
            _retype_results(block)  # an argument's buffer in DDR returned where an HBM buffer was


@dataclass(frozen=True)
class _RowUpdate:
    """What `rewrite_rows` found: the write-back DMA, the kernel, its scatter and the row list."""

    write: DmaOp
    compute: ComputeOp
    scatter: ScatterOp
    rows: SSAValue
    dim: int
    """The buffer's dim the rows are along (the scatter's, through any transposes)."""


def rewrite_rows(block: Block, result: SSAValue, target: SSAValue, orders: Orders | None = None) -> bool:
    """Make `result` (an HBM buffer of `block` holding `target` with rows replaced)
    an in-place write of those rows into `target`; False (nothing changed) when
    the pattern or its safety conditions do not hold (`orders`: the blocks' orders
    the caller holds across its rewrites)."""
    found = _row_update(block, result, target, (orders if orders is not None else Orders())[block])
    if found is None:
        return False
    write, compute, dim = found.write, found.compute, found.dim
    count = shape_of(found.scatter.index.type)[found.scatter.dim.value.data]
    element = element_of(found.rows.type)
    rows_only = _rows_only(found, target)
    source = _compute_rows_only(block, found) if rows_only else write.source
    compute = _writer_of(source, block) or compute
    rows_buffer = AllocOp(BufferType(Tier.SRAM, [count], element))
    rows_buffer.result.name_hint = f"{target.name_hint or 'updated'}_rows_sram"
    block.insert_op_before(rows_buffer, compute)
    _add_output(compute, found.rows, count, rows_buffer.result)
    scatter = ScatterDmaOp(source, rows_buffer.result, target, dim)
    if rows_only:
        scatter.attributes[ROWS_ONLY] = UnitAttr()
    frees = [DeallocOp(rows_buffer.result), *([DeallocOp(source)] if rows_only else [])]
    for op in (rows_buffer, scatter, *frees):
        op.location = write.location
    block.insert_ops_after([scatter, *frees], write)
    write.detach()
    write.erase()
    if rows_only:
        _erase_buffer(found.write.source)  # the whole new value, written back no more
    for use in list(result.uses):
        if isinstance(use.operation, DeallocOp):
            use.operation.detach()
            use.operation.erase()
    result.replace_all_uses_with(target)
    owner = result.owner
    assert isinstance(owner, Operation)
    owner.detach()
    owner.erase()
    return True


def _rows_only(found: _RowUpdate, target: SSAValue) -> bool:
    """Whether the kernel reads the old value only to scatter the rows into it and yields the
    result only to be written back (no transposes around it: `rows_alone_scatter`): it may
    compute and move the rows alone."""
    scatter, compute = found.scatter, found.compute
    old = scatter.input
    if rows_alone_scatter(scatter.result, compute.body.block) is not scatter or found.dim != scatter.dim.value.data:
        return False
    assert isinstance(old, BlockArgument)
    loaded, written = compute.ins[old.index], found.write.source
    return list(compute.outs).count(written) == 1 and compute.ins.count(loaded) == 1 \
        and _only_moved(loaded, compute) and _only_moved(written, compute) and loaded != target


def _only_moved(buffer: SSAValue, compute: ComputeOp) -> bool:
    """Whether SRAM `buffer` is used only by `compute`, DMAs and its allocation's free."""
    return all(use.operation is compute or isinstance(use.operation, DmaOp | DeallocOp) for use in buffer.uses)


def _compute_rows_only(block: Block, found: _RowUpdate) -> SSAValue:
    """Make the kernel of `found` yield the scattered rows alone into a new SRAM buffer of
    their shape, drop its input of the old value (and that value's load), and return that
    buffer (`_rows_only` says when)."""
    compute, scatter = found.compute, found.scatter
    old = scatter.input
    assert isinstance(old, BlockArgument)
    loaded, written = compute.ins[old.index], found.write.source
    rows_values = AllocOp(BufferType(Tier.SRAM, shape_of(scatter.source.type), element_of(scatter.source.type)))
    rows_values.result.name_hint = f"{written.name_hint or 'updated'}_rows"
    rows_values.location = compute.location
    block.insert_op_before(rows_values, compute)
    body = compute.body.block
    yielded = body.last_op
    assert isinstance(yielded, YieldOp)
    yielded.operands = [scatter.source if v == scatter.result else v for v in yielded.operands]
    index = scatter.index
    scatter.detach()
    scatter.erase()
    if isinstance(index.owner, BroadcastOp) and not index.uses:
        index.owner.detach()
        index.owner.erase()
    body.erase_arg(old)
    ins = [v for i, v in enumerate(compute.ins) if i != old.index]
    outs = [rows_values.result if v == written else v for v in compute.outs]
    _replace_compute(compute, ins, outs)
    _erase_buffer(loaded)
    return rows_values.result


def _erase_buffer(buffer: SSAValue) -> None:
    """Erase SRAM `buffer` with the DMAs into it and its free, once nothing else uses it."""
    if any(not isinstance(use.operation, DmaOp | DeallocOp) for use in buffer.uses):
        return
    for use in list(buffer.uses):
        use.operation.detach()
        use.operation.erase()
    if isinstance(buffer.owner, AllocOp):
        buffer.owner.detach()
        buffer.owner.erase()


def rewrite_whole(block: Block, result: SSAValue, target: SSAValue, orders: Orders | None = None,
                  retype: bool = True) -> bool:
    """Make `result` (an HBM buffer of `block`, the whole new value of the global
    buffer `target`) `target` itself: the kernel's write-back DMA writes over the
    old value, so the step never holds two copies (an optimizer's update of a
    weight or of a moment). Only when the one write is a whole DMA of an untiled
    `tier.compute`'s output in `block` and nothing reads `target` after it, or the
    writes are a tile loop's windows that the loop reads the old value through
    alike (`_tile_loop_writing`); False (nothing changed) otherwise (`orders`: as
    `rewrite_rows`'). The function's result types then follow what it returns
    (`_retype_results`), unless `retype` is off: a caller rewriting many updates of
    one block retypes it once after them (each retype compares every result type and
    may walk the module for the calls: once per update was quadratic in a deep
    step's updates)."""
    order = (orders if orders is not None else Orders())[block]
    alloc = result.owner
    if not isinstance(alloc, AllocOp) or alloc.parent_block() is not block or not _same_but_tier(result, target):
        return False
    writes = [use.operation for use in result.uses
              if isinstance(use.operation, DmaOp) and use.operation.dest == result
              or isinstance(use.operation, ScatterDmaOp) and use.operation.dest == result
              or isinstance(use.operation, ComputeOp) and result in use.operation.outs]
    if not writes or not all(isinstance(w, DmaOp) and w.dest == result for w in writes):
        return False
    dmas = [w for w in writes if isinstance(w, DmaOp)]
    if len(dmas) == 1 and not dmas[0].dst_offsets and dmas[0].parent_block() is block:
        write: Operation = dmas[0]
        if _writer_of(dmas[0].source, block) is None or any(_read_after(a, write, order) for a in _aliases(target)):
            return False
    else:
        loop = _tile_loop_writing(dmas, target, order)
        if loop is None:
            return False
        write = loop
    if _read_before(result, write, order):
        return False
    for use in list(result.uses):
        if isinstance(use.operation, DeallocOp):
            use.operation.detach()
            use.operation.erase()
    result.replace_all_uses_with(target)
    alloc.detach()
    alloc.erase()
    if retype:
        _retype_results(block)
    return True


def _tile_loop_writing(writes: list[DmaOp], target: SSAValue, order: BlockOrder) -> Operation | None:
    """The tile loop of `order`'s block (an `scf.for`) whose window DMAs `writes` write the
    new value, when the old value `target` is read there only by window DMAs of the
    slab of the tiled dim that a write writes (`_slab`), each before that write in
    the loop's body, and not after the loop: tile i reads its slab of the old value
    before writing it, and no other tile reads that slab; else None."""
    block = order.block
    loops = {in_block(w, block) for w in writes}
    loop = loops.pop() if len(loops) == 1 else None
    if not isinstance(loop, scf.ForOp) or any(not w.dst_offsets or w.parent_block() is not loop.body.block
                                              for w in writes):
        return None
    body = positions(loop.body.block)
    slabs = {_slab(loop, w.dst_offsets, w.source.type.get_shape()): body[w] for w in writes}  # type: ignore[attr-defined]
    at = order[loop]
    for alias in _aliases(target):
        for use in alias.uses:
            top = in_block(use.operation, block)
            if top is None or order[top] < at:
                continue
            read = use.operation
            if top is not loop or alias is not target or not isinstance(read, DmaOp) or read.source != target \
                    or read.parent_block() is not loop.body.block:
                return None
            key = _slab(loop, read.src_offsets, read.dest.type.get_shape())  # type: ignore[attr-defined]
            if not key or key not in slabs or body[read] > slabs[key]:
                return None
    return loop


def _slab(loop: scf.ForOp, offsets: Sequence[SSAValue], shape: Sequence[int]) -> tuple[tuple[int, SSAValue, int], ...]:
    """The dims of a window DMA whose offset the tile `loop` computes (its tiled
    dim), with that offset and the window's extent there."""
    inner = loop.body.block
    return tuple((d, offset, shape[d]) for d, offset in enumerate(offsets)
                 if offset.owner is inner or isinstance(offset.owner, Operation) and in_block(offset.owner, inner))


def _same_but_tier(a: SSAValue, b: SSAValue) -> bool:
    """Whether buffers `a` and `b` have one shape and element type (a global `rdu-place-tiers`
    put in DDR takes its new value there: the function's result type follows)."""
    return (isinstance(a.type, BufferType) and isinstance(b.type, BufferType)
            and a.type.get_shape() == b.type.get_shape() and a.type.element_type == b.type.element_type)


def _retype_results(block: Block) -> None:
    """The function of `block` returns what its `func.return` returns (a global's
    buffer in DDR where an HBM buffer was), and every call of it gives those types."""
    function, returned = block.parent_op(), block.last_op
    if not isinstance(function, func.FuncOp) or not isinstance(returned, func.ReturnOp):
        return
    types = [v.type for v in returned.arguments]
    if list(function.function_type.outputs.data) == types:
        return
    function.function_type = FunctionType.from_lists(list(function.function_type.inputs.data), types)
    module = function.parent_op()
    if module is None:
        return
    for op in list(module.walk()):
        if isinstance(op, func.CallOp) and op.callee.string_value() == function.sym_name.data:
            call = func.CallOp(op.callee, list(op.arguments), types)
            call.attributes.update(op.attributes)
            call.location = op.location
            for old, new in zip(op.results, call.results):
                new.name_hint = old.name_hint
            caller = op.parent_block()
            assert caller is not None
            caller.insert_op_before(call, op)
            for old, new in zip(op.results, call.results):
                old.replace_all_uses_with(new)
            op.detach()
            op.erase()


def _aliases(buffer: SSAValue) -> list[SSAValue]:
    """`buffer` and the `tier.view`s of it (a reshape's view reads its bytes)."""
    found, index = [buffer], 0
    while index < len(found):
        found.extend(use.operation.result for use in found[index].uses if isinstance(use.operation, ViewOp))
        index += 1
    return found


def _read_before(value: SSAValue, op: Operation, order: BlockOrder) -> bool:
    """Whether an op of `order`'s block before `op` (or nested in one) uses `value`."""
    at = order[op]
    return any((top := in_block(use.operation, order.block)) is not None and order.get(top, at) < at
               for use in value.uses)


def _row_update(block: Block, result: SSAValue, target: SSAValue, order: BlockOrder) -> _RowUpdate | None:
    """The rewrite's pattern and safety conditions (module docstring), or None."""
    alloc = result.owner
    if not isinstance(alloc, AllocOp) or alloc.parent_block() is not block or not _same_but_tier(result, target):
        return None
    writes = [use.operation for use in result.uses if isinstance(use.operation, DmaOp) and use.operation.dest == result]
    if len(writes) != 1 or writes[0].dst_offsets or writes[0].parent_block() is not block:
        return None
    write = writes[0]
    compute = _writer_of(write.source, block)
    if compute is None:
        return None
    yielded = compute.body.block.last_op
    assert yielded is not None
    written, to_scatter = _through_transposes(yielded.operands[list(compute.outs).index(write.source)])
    scatter = written.owner
    if not isinstance(scatter, ScatterOp) or scatter.reduce is not None:
        return None
    old, to_old = _through_transposes(scatter.input)
    if not isinstance(old, BlockArgument) or old.block is not compute.body.block:
        return None
    if [to_old[d] for d in to_scatter] != list(range(len(to_scatter))):
        return None  # the transposes around the scatter do not undo each other
    if not _loads_whole(compute.ins[old.index], target, block):
        return None
    rows = row_list(scatter.index, scatter.dim.value.data)
    if rows is None or _read_after(target, write, order):
        return None
    return _RowUpdate(write, compute, scatter, rows, to_scatter.index(scatter.dim.value.data))


def _through_transposes(value: SSAValue) -> tuple[SSAValue, list[int]]:
    """The value under a chain of `rdu.transpose`s of `value`, and for each dim of
    `value` the dim of that value it is."""
    dims = list(range(len(shape_of(value.type))))
    while isinstance(value.owner, TransposeOp):
        perm = [int(p) for p in value.owner.perm.get_values()]
        dims = [perm[d] for d in dims]
        value = value.owner.input
    return value, dims


def _writer_of(buffer: SSAValue, block: Block) -> ComputeOp | None:
    """The untiled `tier.compute` of `block` that is the only writer of SRAM `buffer`."""
    writers = [use.operation for use in buffer.uses
               if isinstance(use.operation, ComputeOp) and buffer in use.operation.outs
               or isinstance(use.operation, DmaOp) and use.operation.dest == buffer]
    if len(writers) != 1 or not isinstance(writers[0], ComputeOp) or writers[0].parent_block() is not block:
        return None
    return writers[0]


def _loads_whole(buffer: SSAValue, target: SSAValue, block: Block) -> bool:
    """Whether SRAM `buffer` holds `target` whole: one DMA of it, in `block`, writes it."""
    writers = [use.operation for use in buffer.uses
               if isinstance(use.operation, DmaOp) and use.operation.dest == buffer
               or isinstance(use.operation, ComputeOp) and buffer in use.operation.outs]
    return (len(writers) == 1 and isinstance(writers[0], DmaOp) and writers[0].source == target
            and not writers[0].src_offsets and writers[0].parent_block() is block)


def _read_after(value: SSAValue, op: Operation, order: BlockOrder) -> bool:
    """Whether an op of `order`'s block after `op` (or nested in one) uses `value`."""
    at = order[op]
    return any((top := in_block(use.operation, order.block)) is not None and order.get(top, -1) > at
               for use in value.uses)


def _add_output(compute: ComputeOp, rows: SSAValue, count: int, buffer: SSAValue) -> None:
    """Let `compute` also yield `rows` (reshaped to a list of `count`) into `buffer`."""
    body = compute.body.block
    yielded = body.last_op
    assert isinstance(yielded, YieldOp)
    if num_elements(shape_of(rows.type)) != count:  # a fill: one line of it along the scattered dim
        line = [1] * len(shape_of(rows.type))
        if count > 1:  # every element is the same row: any dim of `count` is a row list
            line[list(shape_of(rows.type)).index(count)] = count
        one = SliceOp(rows, [0] * len(line), [1] * len(line), TensorType(element_of(rows.type), line))
        body.insert_op_before(one, yielded)
        rows = one.result
    listed = ReshapeOp(rows, TensorType(element_of(rows.type), [count]))
    listed.result.name_hint = "rows"
    body.insert_op_before(listed, yielded)
    new_yield = YieldOp(*yielded.operands, listed.result)
    body.insert_op_before(new_yield, yielded)
    yielded.detach()
    yielded.erase()
    _replace_compute(compute, list(compute.ins), [*compute.outs, buffer])


def _replace_compute(compute: ComputeOp, ins: list[SSAValue], outs: list[SSAValue]) -> None:
    """Replace `compute` by one of its body over `ins` and `outs`."""
    replacement = ComputeOp(compute.sym_name.data, ins, outs, compute.detach_region(compute.body))
    replacement.attributes.update(compute.attributes)
    replacement.location = compute.location
    block = compute.parent_block()
    assert block is not None
    block.insert_op_before(replacement, compute)
    compute.detach()
    compute.erase()


__all__: Sequence[str] = ["row_list", "rewrite_rows", "rewrite_whole", "whole_positions", "write_back_in_place"]
