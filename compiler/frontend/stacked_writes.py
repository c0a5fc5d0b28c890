"""A buffer stacked over layers and written a slot at a time: per-slot values, one row write.

A model may keep every layer's KV cache in one tensor `[layers, 2, ...]` updated in place
per layer through a view with a constant index (`cache[i][0].index_copy_(2, pos, k)`,
`cache[i][0, :, pos] = k`, `cache[i, 0, :, :, pos] = k`). torch functionalizes each such write
into a `select_scatter` of the slot into the whole buffer (decomposed into a `where` over
it), and each later read of a slot into a `select` of that new whole value. Every layer
then reads and writes the whole stack, threaded from layer to layer, each with its own
constant index: no two layers' bodies match, and each moves the whole buffer.

`fold_stacked_writes` follows the writes of such a buffer (a BUFFER_MUTATION or
USER_INPUT_MUTATION placeholder) as writes to its slots, each slot a path of constant
indices along the leading dims:

- a read of a slot (`select`, or a unit slice `x[i:i + 1]` squeezed or selected at 0:
  `unbind(0)`'s pieces, `x.narrow(0, i, 1)[0]`) is the value last written to it (or a
  `select` of that value when a write covered a shorter path), else a `select` of the
  buffer's old value (a window); a unit slice read as it is, that value unsqueezed;
- a write through a unit slice (`x.narrow(0, i, 1)[0][0].index_copy_(..)`: a `select_scatter`
  into the unit slice at 0, written back by `slice_scatter`) writes slot i;
- the new buffer, returned as the update, is one `scatter` into the old buffer of every
  slot's new rows when every slot was written once as rows written into its old value (a
  `scatter`, or an `index_put` of a row list at one dim), all by the same row index: the
  layers' new rows stacked in slot order, written after the last layer (an in-place write
  of those rows, as `rdu-insert-dma` lowers it).

Each layer then reads only its own windows and writes only its own rows: the layers match.
Anything else (a slot index not constant, a read of a slot part of whose rows another
write replaced, a slot written twice, whole or not at all, different row indices, a
`slice_scatter` of more than one slot) leaves the program as it is.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import torch
from torch.export import ExportedProgram
from torch.export.graph_signature import InputKind, OutputKind
from torch.fx import Node

from rducc.frontend.fx_emit import NodeEmitter

aten = torch.ops.aten

Path = tuple[int, ...]
"""A slot of the stacked buffer: constant indices along its leading dims."""

_SAME_SHAPE_VIEWS = (aten.view.default, aten.reshape.default, aten.alias.default)
_MAX_INDEX_NODES = 16
"""The most nodes a row index's computation may have to be copied for the combined write."""


def _stack_dim_index(node: Node) -> tuple[Node, int] | None:
    """(x, i) when `node` is `select(x, 0, i)` with a constant i (made non-negative)."""
    if node.op != "call_function" or node.target is not aten.select.int or len(node.args) != 3:
        return None
    base, dim, index = node.args
    if not isinstance(base, Node) or dim != 0 or not isinstance(index, int):
        return None
    size = base.meta["val"].shape[0]
    return base, index + size if index < 0 else index


def _unit_slice(node: Node) -> tuple[Node, int] | None:
    """(x, i) when `node` is `x[i:i + 1]` along dim 0: slot i with a unit dim before it (how
    `unbind(0)` decomposes, each piece `squeeze(slice(x, 0, i, i + 1), [0])`, and
    `x.narrow(0, i, 1)`, whose pieces are then selected at 0)."""
    if node.op != "call_function" or node.target is not aten.slice.Tensor or len(node.args) < 4:
        return None
    base, dim, start, end, *step = node.args
    if not isinstance(base, Node) or dim != 0 or not isinstance(start, int) or step not in ([], [1]):
        return None
    size = base.meta["val"].shape[0]
    start = start + size if start < 0 else start
    if end != start + 1 or not 0 <= start < size:
        return None
    return base, start


def _slice_scatter(node: Node) -> tuple[Node, Node, int] | None:
    """(base, src, i) when `node` writes `src` into `base[i:i + 1]` along dim 0 (`slice_scatter`,
    how a write through `x.narrow(0, i, 1)` functionalizes)."""
    if node.op != "call_function" or node.target is not aten.slice_scatter.default or len(node.args) < 5:
        return None
    base, src, dim, start, end, *step = node.args
    if not isinstance(base, Node) or not isinstance(src, Node) or dim != 0 or not isinstance(start, int) \
            or step not in ([], [1]):
        return None
    size = base.meta["val"].shape[0]
    start = start + size if start < 0 else start
    return (base, src, start) if end == start + 1 and 0 <= start < size else None


def _squeezes_first(node: Node) -> bool:
    """Whether `node` squeezes dim 0 alone."""
    if node.op != "call_function" or len(node.args) != 2:
        return False
    dims = node.args[1]
    if node.target is aten.squeeze.dims:
        return isinstance(dims, list | tuple) and list(dims) == [0]
    return node.target is aten.squeeze.dim and isinstance(dims, int) and dims == 0


def _mask_index(mask: Any, base: Node) -> int | None:
    """i when `mask` is `arange(n).view([-1, 1, ...]) == i` over `base`'s leading dim (torch's
    decomposition of `select_scatter` at dim 0)."""
    if not isinstance(mask, Node) or mask.target is not aten.eq.Scalar or not isinstance(mask.args[1], int):
        return None
    shaped = mask.args[0]
    if not isinstance(shaped, Node) or shaped.target is not aten.view.default:
        return None
    ramp = shaped.args[0]
    if not isinstance(ramp, Node) or ramp.target not in (aten.arange.start_step, aten.arange.default,
                                                         aten.arange.start):
        return None
    size = base.meta["val"].shape[0]
    mask_shape = shaped.args[1]
    if tuple(ramp.meta["val"].shape) != (size,) or not isinstance(mask_shape, list | tuple) \
            or list(mask_shape)[1:] != [1] * (base.meta["val"].dim() - 1):
        return None
    start = ramp.args[0] if ramp.target is not aten.arange.default else 0
    step = ramp.args[2] if ramp.target is aten.arange.start_step and len(ramp.args) > 2 else 1
    if start != 0 or step != 1:
        return None
    index = mask.args[1]
    return index + size if index < 0 else index


def _select_scatter(node: Node) -> tuple[Node, Node, int] | None:
    """(base, src, i) when `node` writes `src` into `base[i]` along dim 0: `select_scatter`,
    or torch's decomposition of it, `where(arange == i, src.unsqueeze(0).expand(...), base)`."""
    if node.op != "call_function":
        return None
    if node.target is aten.select_scatter.default:
        base, src, dim, index = node.args
        if dim != 0 or not isinstance(index, int) or not isinstance(base, Node) or not isinstance(src, Node):
            return None
        size = base.meta["val"].shape[0]
        return base, src, index + size if index < 0 else index
    if node.target is not aten.where.self:
        return None
    mask, spread, base = node.args
    if not isinstance(base, Node) or not isinstance(spread, Node) or spread.target is not aten.expand.default:
        return None
    raised = spread.args[0]
    if not isinstance(raised, Node) or raised.target is not aten.unsqueeze.default or raised.args[1] != 0:
        return None
    index = _mask_index(mask, base)
    src = raised.args[0]
    if index is None or not isinstance(src, Node):
        return None
    if tuple(node.meta["val"].shape) != tuple(base.meta["val"].shape):
        return None
    return base, src, index


class _NotFolded(Exception):
    """The buffer's accesses are not all per-slot: the program stays as it is."""


@dataclass
class _Plan:
    """What folding one stacked buffer changes (nothing is changed until it is complete)."""

    buffer: Node
    writes: list[tuple[Path, Node]] = field(default_factory=list)
    views: dict[Node, tuple[int, Path]] = field(default_factory=dict)
    units: set[Node] = field(default_factory=set)
    """The views that hold their slot with a unit dim before it (`x[i:i + 1]`)."""
    reads: list[tuple[Node, Node, int, Path]] = field(default_factory=list)
    """(reader, stack view it reads, version, path): each use of a slot by another op."""
    scrapped: list[Node] = field(default_factory=list)
    """The stack's views and whole-buffer writes, dead once the reads are replaced."""

    def source(self, version: int, path: Path) -> tuple[Node, Path]:
        """(value, rest): the slot `path` at `version` is `value` selected at `rest` (the
        buffer's old value when no write covers it)."""
        for written, value in reversed(self.writes[:version]):
            if written == path[:len(written)]:
                return value, path[len(written):]
            if path == written[:len(path)]:
                raise _NotFolded("a read of a slot part of which a write replaced")
        return self.buffer, path


def _plan(graph: torch.fx.Graph, buffer: Node, update: Node) -> _Plan:
    """Follow `buffer`'s slot reads and writes through the graph (`_NotFolded` where one is
    not per-slot); `update` is the value returned as its new value."""
    plan = _Plan(buffer)
    plan.views[buffer] = (0, ())
    for node in graph.nodes:
        if node.op == "output":
            for arg in node.all_input_nodes:
                if arg in plan.views and arg is not update:
                    raise _NotFolded("a slot returned")
            continue
        if not any(arg in plan.views for arg in node.all_input_nodes):
            continue
        if _follow(plan, node):
            plan.scrapped.append(node)
            continue
        if _spreads_into_write(plan, node):
            continue
        for arg in node.all_input_nodes:
            if arg in plan.views:
                version, path = plan.views[arg]
                plan.reads.append((node, arg, version, path))
    if plan.views.get(update) != (len(plan.writes), ()):
        raise _NotFolded("the update is not the stack's last value")
    return plan


def _spreads_into_write(plan: _Plan, node: Node) -> bool:
    """Whether `node` is `unsqueeze(src, 0)` spread only into the `where` that is torch's
    `select_scatter` of src (part of the write, not a read of src)."""
    if node.target is not aten.unsqueeze.default or len(node.users) != 1:
        return False
    (spread,) = node.users
    if spread.target is not aten.expand.default or len(spread.users) != 1:
        return False
    (write,) = spread.users
    parts = _select_scatter(write)
    return parts is not None and parts[0] in plan.views and parts[1] is node.args[0] and write.args[1] is spread


def _follow(plan: _Plan, node: Node) -> bool:
    """Record `node` if it is a view of a slot or a write of one (True), else False (a read)."""
    if _follow_view(plan, node):
        return True
    written = _select_scatter(node)
    if written is not None and written[0] in plan.views:
        base, src, index = written
        version, path = plan.views[base]
        if base in plan.units:  # the unit dim's only element: the slot itself
            if index != 0:
                raise _NotFolded("a write outside a unit slice")
            slot = path
            plan.units.add(node)
        else:
            slot = (*path, index)
        _follow_write(plan, node, slot, src, (version, path), unit_src=False)
        return True
    sliced_back = _slice_scatter(node)
    if sliced_back is None or sliced_back[0] not in plan.views or sliced_back[1] not in plan.units:
        return False
    base, src, index = sliced_back  # a unit slice's view written back into its place
    version, path = plan.views[base]
    _follow_write(plan, node, (*path, index), src, (version, path), unit_src=True)
    return True


def _follow_view(plan: _Plan, node: Node) -> bool:
    """Record `node` if it is a view of a slot (a select, a unit slice or its squeeze)."""
    selected = _stack_dim_index(node)
    if selected is not None and selected[0] in plan.units:
        if selected[1] != 0:
            raise _NotFolded("a select outside a unit slice")
        plan.views[node] = plan.views[selected[0]]  # the unit slice's only element: its slot
        return True
    if selected is not None and selected[0] in plan.views:
        version, path = plan.views[selected[0]]
        plan.views[node] = (version, (*path, selected[1]))
        return True
    unit = _unit_slice(node)
    if unit is not None and unit[0] in plan.views:
        if unit[0] in plan.units:
            raise _NotFolded("a unit slice of a unit slice")
        version, path = plan.views[unit[0]]
        plan.views[node] = (version, (*path, unit[1]))
        plan.units.add(node)
        return True
    sliced = node.args[0] if node.args else None
    if isinstance(sliced, Node) and _squeezes_first(node) and sliced in plan.units:
        plan.views[node] = plan.views[sliced]  # the unit slice's squeeze: the selected slot
        return True
    return False


def _follow_write(plan: _Plan, node: Node, slot: Path, src: Node, base: tuple[int, Path], unit_src: bool) -> None:
    """Record `node`, a write of `src` into `slot` of the stack's view `base` (version, path);
    `unit_src`: `src` holds the slot with a unit dim before it (a `slice_scatter`'s)."""
    version, path = base
    if src in plan.views:  # a slot's view written back into its place: its writes are the stack's
        src_version, src_path = plan.views[src]
        if src_path != slot or (src in plan.units) != unit_src \
                or any(p[:len(slot)] != slot for p, _ in plan.writes[version:src_version]):
            raise _NotFolded("a view written into another slot")
        plan.views[node] = (src_version, path)
        return
    if version != len(plan.writes) or src.meta["val"].shape != plan.buffer.meta["val"].shape[len(slot):]:
        raise _NotFolded("a write into an older value of the stack, or of a unit slice's shape")
    plan.writes.append((slot, src))
    plan.views[node] = (len(plan.writes), path)


def _unviewed(node: Node) -> Node:
    """`node` without same-shape views on it."""
    while (node.op == "call_function" and node.target in _SAME_SHAPE_VIEWS and isinstance(node.args[0], Node)
           and tuple(node.args[0].meta["val"].shape) == tuple(node.meta["val"].shape)):
        node = node.args[0]
    return node


@dataclass(frozen=True)
class _RowWrite:
    """A slot's new value: rows written into its old value along `dim` at `index`, by
    `scatter(old, dim, index, rows)` (`put` False) or `index_put(old, [None, .., index], rows)`
    (`put` True; `rows` then of the indexed shape)."""

    put: bool
    dim: int
    index: Node
    rows: Node


def _written_rows(node: Node) -> tuple[Any, _RowWrite] | None:
    """(old value, its row write) when `node` writes rows into one value, else None."""
    if node.op != "call_function":
        return None
    if node.target is aten.scatter.src and len(node.args) == 4 and not node.kwargs:
        old, dim, index, rows = node.args
        if isinstance(index, Node) and isinstance(rows, Node) and isinstance(dim, int):
            return old, _RowWrite(False, dim % node.meta["val"].dim(), index, rows)
    if node.target is aten.index_put.default and len(node.args) == 3 and not node.kwargs:
        old, indices, rows = node.args
        given = [(i, index) for i, index in enumerate(indices or ()) if index is not None] \
            if isinstance(indices, list | tuple) else []
        if len(given) == 1 and isinstance(rows, Node) and _row_list(given[0][1]):
            at, index = given[0]
            assert isinstance(index, Node)
            return old, _RowWrite(True, at, index, rows)
    return None


def _row_list(index: Any) -> bool:
    """Whether `index` is a 1-d integer tensor (rows, not a mask)."""
    return isinstance(index, Node) and index.meta["val"].dim() == 1 and index.meta["val"].dtype != torch.bool


def _row_write(plan: _Plan, path: Path, value: Node) -> _RowWrite:
    """`value` as rows written into the old value of slot `path` (`_NotFolded` otherwise)."""
    writer = _unviewed(value)
    written = _written_rows(writer)
    if written is None:
        raise _NotFolded("a slot's new value is not rows written into it")
    old, write = written
    reads = {(reader, arg): (version, read) for reader, arg, version, read in plan.reads}
    if (writer, old) not in reads:
        raise _NotFolded("a slot's rows written into another value")
    version, read = reads[(writer, old)]
    if read != path or plan.source(version, read) != (plan.buffer, path):
        raise _NotFolded("a slot's rows written into another value")
    return write


def _same_value(a: Any, b: Any, depth: int = 0) -> bool:
    """Whether `a` and `b` compute the same value: the same node, or the same op of the
    same arguments (constants equal), to a few levels."""
    if a is b:
        return True
    if not isinstance(a, Node) or not isinstance(b, Node):
        if isinstance(a, list | tuple) and isinstance(b, list | tuple):
            return len(a) == len(b) and all(_same_value(x, y, depth) for x, y in zip(a, b))
        return not isinstance(a, Node) and not isinstance(b, Node) and a == b
    if depth > _MAX_INDEX_NODES or a.op != "call_function" or a.target != b.target or a.kwargs != b.kwargs:
        return False
    if torch.Tag.nondeterministic_seeded in getattr(a.target, "tags", ()):
        return False  # two draws of the same op are different values
    return len(a.args) == len(b.args) and all(_same_value(x, y, depth + 1) for x, y in zip(a.args, b.args))


def _slots(shape: tuple[int, ...]) -> list[Path]:
    """Every slot of leading dims `shape`, in row-major order."""
    slots: list[Path] = [()]
    for size in shape:
        slots = [(*slot, i) for slot in slots for i in range(size)]
    return slots


def _row_writes(plan: _Plan) -> dict[Path, _RowWrite]:
    """Each slot's row write, every slot of the stacked dims written once, all by the same
    row index along the same dim (`_NotFolded` otherwise)."""
    paths = [path for path, _ in plan.writes]
    depth = len(paths[0])
    stacked = tuple(plan.buffer.meta["val"].shape[:depth])
    if len(paths) != math.prod(stacked) or sorted(paths) != _slots(stacked):
        raise _NotFolded("the slots are not each written once")
    writes = {path: _row_write(plan, path, value) for path, value in plan.writes}
    first = writes[paths[0]]
    if _computation_size(first.index, set()) > _MAX_INDEX_NODES:
        raise _NotFolded("a row index computed by too many ops")
    for write in writes.values():
        if (write.put, write.dim) != (first.put, first.dim) or not _same_value(write.index, first.index) or \
                (not write.put and write.rows.meta["val"].shape != first.rows.meta["val"].shape):
            raise _NotFolded("the slots' rows are written at different places")
    return writes


def _computation_size(node: Any, seen: set[Node]) -> int:
    """How many ops compute `node` (placeholders and constants not counted), up to a bound."""
    if not isinstance(node, Node) or node.op != "call_function" or node in seen or len(seen) > _MAX_INDEX_NODES:
        return len(seen)
    seen.add(node)
    for arg in node.all_input_nodes:
        _computation_size(arg, seen)
    return len(seen)


def _copied(emit: NodeEmitter, anchor: Node, node: Any, copies: dict[Node, Node]) -> Any:
    """`node`'s computation emitted again before `anchor` (placeholders and constants shared)."""
    if not isinstance(node, Node) or node.op != "call_function":
        return node
    if node not in copies:
        args = torch.fx.node.map_aggregate(node.args, lambda a: _copied(emit, anchor, a, copies))
        copies[node] = emit(anchor, node.target, *args, **node.kwargs)
    return copies[node]


def _indexed_shape(plan: _Plan, depth: int, write: _RowWrite) -> list[int]:
    """The shape `index_put` writes into a slot: the slot's with the indexed dim the index's length."""
    shape = list(plan.buffer.meta["val"].shape[depth:])
    shape[write.dim] = write.index.meta["val"].shape[0]
    return shape


def _combined_write(emit: NodeEmitter, plan: _Plan, writes: dict[Path, _RowWrite], anchor: Node) -> Node:
    """One write into the old buffer of every slot's rows, stacked in slot order."""
    paths = sorted(writes)
    depth = len(paths[0])
    stacked = list(plan.buffer.meta["val"].shape[:depth])
    first = writes[paths[0]]
    rows_shape = _indexed_shape(plan, depth, first) if first.put else list(first.rows.meta["val"].shape)
    flat = [emit(anchor, aten.view.default, _spread(emit, anchor, writes[path].rows, rows_shape), [1, *rows_shape])
            for path in paths]
    rows = emit(anchor, aten.view.default, emit(anchor, aten.cat.default, flat, 0), [*stacked, *rows_shape])
    rows_index = _copied(emit, anchor, first.index if first.put else _unspread(first.index), {})
    if first.put:  # index_put of a row list at a dim is a scatter of those rows there
        index_shape = rows_shape
        line = [1] * len(rows_shape)
        line[first.dim] = rows_shape[first.dim]
        raised = emit(anchor, aten.view.default, rows_index, [1] * depth + line)
    else:
        index_shape = list(first.index.meta["val"].shape)
        raised = emit(anchor, aten.view.default, rows_index, [1] * depth + list(rows_index.meta["val"].shape))
    spread = emit(anchor, aten.expand.default, raised, [*stacked, *index_shape])
    return emit(anchor, aten.scatter.src, plan.buffer, first.dim + depth, spread, rows)


def _unspread(index: Node) -> Node:
    """`index` without the `expand`s that spread it (the row list a scatter's index
    broadcasts: spread once more over the stacked dims, it stays one broadcast of it)."""
    while index.op == "call_function" and index.target is aten.expand.default and isinstance(index.args[0], Node) \
            and index.args[0].meta["val"].dim() == index.meta["val"].dim():
        index = index.args[0]
    return index


def _spread(emit: NodeEmitter, anchor: Node, rows: Node, shape: list[int]) -> Node:
    """`rows` broadcast to `shape` (itself when it has that shape)."""
    if list(rows.meta["val"].shape) == shape:
        return rows
    return emit(anchor, aten.expand.default, rows, shape)


def _emit_select_path(emit: NodeEmitter, anchor: Node, value: Node, rest: Path) -> Node:
    for index in rest:
        value = emit(anchor, aten.select.int, value, 0, index)
    return value


def _apply(ep: ExportedProgram, plan: _Plan, output: Node, update: Node) -> None:
    """Replace each slot read by its value and the update by the combined row write."""
    writes = _row_writes(plan)
    emit = NodeEmitter(ep.graph, _fake_mode(ep))
    combined = _combined_write(emit, plan, writes, output)
    for reader, arg, version, path in plan.reads:
        value, rest = plan.source(version, path)
        value = _emit_select_path(emit, reader, value, rest)
        if arg in plan.units:  # `x[i:i + 1]` read as it is: the slot with its unit dim
            value = emit(reader, aten.unsqueeze.default, value, 0)
        reader.replace_input_with(arg, value)
    output.replace_input_with(update, combined)
    erased: set[Node] = set()
    for node in reversed(plan.scrapped):
        _erase_dead(ep.graph, node, erased)


def _erase_dead(graph: torch.fx.Graph, node: Node, erased: set[Node]) -> None:
    """Erase `node` and the ops only it used, once nothing uses them."""
    if node in erased or node.users or node.op != "call_function":
        return
    inputs = node.all_input_nodes
    graph.erase_node(node)
    erased.add(node)
    for arg in inputs:
        _erase_dead(graph, arg, erased)


def _fake_mode(ep: ExportedProgram) -> Any:
    return next(n.meta["val"].fake_mode for n in ep.graph.nodes
                if isinstance(n.meta.get("val"), torch.Tensor) and hasattr(n.meta["val"], "fake_mode"))


def _updated_buffers(ep: ExportedProgram) -> list[tuple[Node, Node]]:
    """(placeholder, its new value) for each buffer or user input updated in place."""
    signature = ep.graph_signature
    placeholders = {n.name: n for n in ep.graph.nodes if n.op == "placeholder"}
    by_target = {spec.target: spec.arg.name for spec in signature.input_specs
                 if spec.kind is InputKind.BUFFER and spec.target is not None}
    output = next(n for n in ep.graph.nodes if n.op == "output")
    values = list(output.args[0])
    pairs = []
    for spec, value in zip(signature.output_specs, values):
        if spec.kind is OutputKind.BUFFER_MUTATION:
            name = by_target.get(spec.target)
        elif spec.kind is OutputKind.USER_INPUT_MUTATION:
            name = spec.target
        else:
            continue
        if name in placeholders and isinstance(value, Node):
            pairs.append((placeholders[name], value))
    return pairs


def fold_stacked_writes(ep: ExportedProgram) -> bool:
    """Fold the per-slot writes of each stacked buffer `ep` updates in place (see the module
    docstring), in place; whether any was folded."""
    output = next(n for n in ep.graph.nodes if n.op == "output")
    folded = False
    for buffer, update in _updated_buffers(ep):
        if buffer.meta["val"].dim() < 2 or (_select_scatter(update) or _slice_scatter(update)) is None:
            continue  # its new value is not a slot written into it
        try:
            plan = _plan(ep.graph, buffer, update)
            if not plan.writes:
                continue
            _row_writes(plan)  # refuses before anything changes
            _apply(ep, plan, output, update)
        except _NotFolded:
            continue
        folded = True
    if folded:
        ep.graph.lint()
        ep.graph_module.recompile()
    return folded


__all__ = ["fold_stacked_writes"]
