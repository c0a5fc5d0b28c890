"""Boolean-mask updates computed over the whole tensor, before any size is specialized.

`y[mask] += 1`, `y[mask] = torch.sigmoid(x[mask]) * w`, `y[mask] = y[mask].clamp(0)`
export as `index_put(base, [mask], f(index(src, [mask]), ...))` where `f` only works
position by position. The number of elements the mask selects is data-dependent
(`rducc.frontend.data_sizes` would compile it for the example's count), but the
update is not: it is `where(mask, f(src), base)` over the whole tensor (with
`accumulate=True`, `where(mask, base + f(src), base)`), of static shape, and right
for every mask. This module rewrites each such update that way; an `index` whose
rows reach anything else (a reduction, a matmul, an output) stays data-dependent.
"""

from __future__ import annotations

from typing import Any

import torch
from torch.export import ExportedProgram

from rducc.frontend.fx_emit import NodeEmitter

aten = torch.ops.aten
Node = torch.fx.Node

_MASKS = (torch.bool, torch.uint8)
_PASS_THROUGH = (aten._to_copy.default, aten.clone.default, aten.alias.default)
"""Ops outside torch's `pointwise` tag that still work position by position."""


def _sole_mask(node: Node) -> Node | None:
    """The boolean mask `node` (an `index` or `index_put`) indexes by, when it is the only index."""
    indices = node.args[1]
    if not isinstance(indices, list | tuple) or len(indices) != 1 or not isinstance(indices[0], Node):
        return None
    mask = indices[0]
    return mask if mask.meta["val"].dtype in _MASKS else None


def _same_value(a: Any, b: Any, depth: int = 8) -> bool:
    """Whether two arguments compute the same value: the same node, or the same
    deterministic op on the same arguments (`x[x < 0]` written twice computes its
    mask twice)."""
    if a is b:
        return True
    if not isinstance(a, Node) or not isinstance(b, Node):
        if isinstance(a, list | tuple) and isinstance(b, list | tuple):
            return len(a) == len(b) and all(_same_value(x, y, depth) for x, y in zip(a, b))
        return not isinstance(a, Node) and not isinstance(b, Node) and type(a) is type(b) and a == b
    if depth == 0 or a.op != "call_function" or a.target != b.target or a.kwargs.keys() != b.kwargs.keys():
        return False
    target = a.target
    if isinstance(target, torch._ops.OpOverload) and torch.Tag.nondeterministic_seeded in target.tags:
        return False
    return _same_value(list(a.args), list(b.args), depth - 1) and all(
        _same_value(a.kwargs[k], b.kwargs[k], depth - 1) for k in a.kwargs)


def _indexes_by(node: Node, mask: Node) -> bool:
    """Whether `node` is `index(src, [m])` with `m` computing `mask`'s value."""
    if node.target is not aten.index.Tensor:
        return False
    own = _sole_mask(node)
    return own is not None and _same_value(own, mask)


def _is_pointwise(node: Node) -> bool:
    target = node.target
    return isinstance(target, torch._ops.OpOverload) and (
        torch.Tag.pointwise in target.tags or target in _PASS_THROUGH)


def _rows_free(value: Any, rest: int) -> bool:
    """Whether an operand other than the masked rows broadcasts over them unchanged
    (a number, or a tensor of at most the rows' trailing dims)."""
    if not isinstance(value, Node):
        return True
    fake = value.meta.get("val")
    return isinstance(fake, torch.Tensor) and fake.dim() <= rest


def _masked_leaves(values: Node, mask: Node, rest: int) -> list[Node] | None:
    """The `index(src, [mask])` nodes `values` computes from position by position,
    the nodes between them in graph order; None if it reads anything else through them."""
    order: list[Node] = []
    seen: set[Node] = set()

    def visit(node: Node) -> bool:
        if node in seen:
            return True
        seen.add(node)
        if _indexes_by(node, mask):
            order.append(node)
            return True
        if node.op != "call_function" or not _is_pointwise(node):
            return False
        for operand in node.all_input_nodes:
            if operand.target is aten.index.Tensor or _reads_rows(operand, mask):
                if not visit(operand):
                    return False
            elif not _rows_free(operand, rest):
                return False
        order.append(node)
        return True

    found = visit(values)
    return order if found and any(n.target is aten.index.Tensor for n in order) else None


def _reads_rows(node: Node, mask: Node) -> bool:
    """Whether `node` is computed from an `index` by `mask` (through any ops)."""
    stack, seen = [node], set()
    while stack:
        current = stack.pop()
        if current in seen:
            continue
        seen.add(current)
        if _indexes_by(current, mask):
            return True
        stack.extend(current.all_input_nodes)
    return False


def _whole_tensor_update(emit: NodeEmitter, put: Node, mask: Node, order: list[Node]) -> Node:
    """`where(mask, f(src), base)` for the update `put` (f: the pointwise nodes `order`)."""
    whole: dict[Node, Node] = {}
    for node in order:
        if node.target is aten.index.Tensor:
            whole[node] = node.args[0]  # type: ignore[assignment]
            continue
        args, kwargs = torch.fx.node.map_arg((node.args, node.kwargs), lambda n: whole.get(n, n))
        whole[node] = emit(put, node.target, *args, **kwargs)
    base = put.args[0]
    assert isinstance(base, Node)
    updated = whole[order[-1]]
    if len(put.args) > 3 and put.args[3]:
        updated = emit(put, aten.add.Tensor, base, updated)
    base_fake = base.meta["val"]
    if updated.meta["val"].dtype != base_fake.dtype:
        updated = emit(put, aten._to_copy.default, updated, dtype=base_fake.dtype)
    if list(updated.meta["val"].shape) != list(base_fake.shape):
        updated = emit(put, aten.expand.default, updated, list(base_fake.shape))
    rest = base_fake.dim() - mask.meta["val"].dim()
    condition = mask if mask.meta["val"].dtype == torch.bool else emit(put, aten.ne.Scalar, mask, 0)
    if rest:
        condition = emit(put, aten.view.default, condition, [*mask.meta["val"].shape, *[1] * rest])
    return emit(put, aten.where.self, condition, updated, base)


def _rewrite(emit: NodeEmitter, put: Node) -> bool:
    mask = _sole_mask(put)
    values = put.args[2] if len(put.args) > 2 else None
    if mask is None or not isinstance(values, Node):
        return False
    rest = put.args[0].meta["val"].dim() - mask.meta["val"].dim()  # type: ignore[union-attr]
    order = _masked_leaves(values, mask, rest)
    if order is None:
        return False
    put.replace_all_uses_with(_whole_tensor_update(emit, put, mask, order))
    emit.graph.erase_node(put)
    return True


def whole_tensor_mask_updates(ep: ExportedProgram) -> None:
    """Rewrite (in place) each pointwise boolean-mask update as a `where` over the whole tensor."""
    graph = ep.graph
    puts = [n for n in graph.nodes if n.op == "call_function" and n.target is aten.index_put.default]
    if not puts:
        return
    mode = next(n.meta["val"].fake_mode for n in graph.nodes
                if isinstance(n.meta.get("val"), torch.Tensor) and hasattr(n.meta["val"], "fake_mode"))
    emit = NodeEmitter(graph, mode)
    if any([_rewrite(emit, put) for put in puts]):
        graph.eliminate_dead_code()
        graph.lint()
        ep.graph_module.recompile()


__all__ = ["whole_tensor_mask_updates"]
