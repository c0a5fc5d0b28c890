"""Whether an attention's mask in a traced graph is one eager never passes
(issue 27, bf16 mixed precision: `attention.group_repeated_heads`).

transformers passes sdpa no mask where the mask would keep every key, or
every key up to the query's own position (plain causal), and nothing pads:
it calls sdpa with `is_causal` instead and, for grouped-query attention,
with `enable_gqa=True` on the key/value heads themselves. Everywhere else
(a sliding window shorter than the keys, padding) it repeats the key/value
heads and passes the mask. Under torch.export it builds every layer's mask
in the graph, so the graph alone does not say which masks eager dropped;
their values do. A mask that reads no input of its graph (positions from
`arange`, compared) has one value, computed here at compile time on the
CPU; a mask that reads an input (a padding mask, a shape that varies) or
anything random is not known, and counts as kept."""

from __future__ import annotations

import math
from typing import Any

import torch

MOST_ELEMENTS = 1 << 26
"""The largest intermediate a mask's compile-time evaluation computes (a
[1, 1, 4096, 4096] causal mask is 1 << 24); above, the mask counts as unknown."""

Values = dict[torch.fx.Node, torch.Tensor | None]


def eager_passes_no_mask(attention: torch.fx.Node, values: Values) -> bool:
    """Whether eager calls the scaled_dot_product_attention node `attention`
    with no mask: it has none, or its mask is known at compile time and
    keeps every key or exactly the causal triangle (`is_plain`). `values`:
    the graph's compile-time values found so far (layers share masks)."""
    mask = attention.args[3] if len(attention.args) > 3 else attention.kwargs.get("attn_mask")
    if mask is None:
        return True
    value = compile_time_value(mask, values) if isinstance(mask, torch.fx.Node) else None
    shapes = [_shape(node) for node in attention.args[:2]]
    if value is None or shapes[0] is None or shapes[1] is None:
        return False
    return is_plain(value, shapes[0][-2], shapes[1][-2])


def is_plain(mask: torch.Tensor, length: int, source: int) -> bool:
    """Whether `mask` (boolean: True keeps; or additive: 0 keeps, -inf or the
    dtype's lowest value drops) keeps, in every batch and head, all
    `source` keys for each of `length` queries or exactly sdpa's `is_causal`
    triangle (query i keeps keys 0..i)."""
    if mask.dtype == torch.bool:
        kept = mask
    else:
        lowest = torch.finfo(mask.dtype).min
        if not bool(((mask == 0) | (mask == float("-inf")) | (mask == lowest)).all()):
            return False
        kept = mask == 0
    try:
        kept = kept.expand(*kept.shape[:-2], length, source)
    except RuntimeError:
        return False
    causal = torch.ones(length, source, dtype=torch.bool).tril()
    return bool(kept.all()) or bool((kept == causal).all())


def compile_time_value(node: torch.fx.Node, values: Values) -> torch.Tensor | None:
    """`node`'s value when it reads no input of its graph (no placeholder,
    no attribute, no random op), computed on the CPU; else None."""
    order = _unknown_ancestors(node, values)
    if order is None:
        values[node] = None
    for each in order or ():
        known = all(values[n] is not None for n in each.all_input_nodes)
        values[each] = _evaluated(each, values) if known else None
    return values[node]


def _unknown_ancestors(node: torch.fx.Node, values: Values) -> list[torch.fx.Node] | None:
    """`node` and the ancestors not in `values`, inputs first; None once one
    is not computable or known not to be."""
    order: list[torch.fx.Node] = []
    pending: list[tuple[torch.fx.Node, bool]] = [(node, False)]
    seen: set[torch.fx.Node] = set()
    while pending:
        each, inputs_done = pending.pop()
        if inputs_done:
            order.append(each)
            continue
        if each in seen or each in values:
            if each in values and values[each] is None:
                return None
            continue
        if not _computable(each):
            return None
        seen.add(each)
        pending.append((each, True))
        pending.extend((n, False) for n in each.all_input_nodes)
    return order


def _evaluated(node: torch.fx.Node, values: Values) -> torch.Tensor | None:
    """`node`'s op run on its inputs' values (all known), on the CPU."""
    args, kwargs = torch.fx.node.map_arg((node.args, node.kwargs), values.__getitem__)
    if "device" in kwargs:  # a meta-device trace's mask is computed all the same
        kwargs = {**kwargs, "device": torch.device("cpu")}
    from torch._subclasses.fake_tensor import unset_fake_temporarily

    try:
        with unset_fake_temporarily(), torch.no_grad():
            result = node.target(*args, **kwargs)  # type: ignore[operator]
    except (RuntimeError, TypeError, ValueError, NotImplementedError):  # an op the CPU does not run: unknown
        return None
    return result if isinstance(result, torch.Tensor) else None


def _computable(node: torch.fx.Node) -> bool:
    """An op whose value follows from its inputs alone, of at most
    `MOST_ELEMENTS` elements, that nothing changes in place."""
    shape = _shape(node)
    if node.op != "call_function" or shape is None or math.prod(shape) > MOST_ELEMENTS:
        return False
    return _pure(node.target) and not any(_mutates(user.target) for user in node.users)


def _pure(target: Any) -> bool:
    return (isinstance(target, torch._ops.OpOverload) and not _mutates(target)
            and torch.Tag.nondeterministic_seeded not in target.tags)


def _mutates(target: Any) -> bool:
    return isinstance(target, torch._ops.OpOverload) and target._schema.is_mutable


def _shape(node: Any) -> tuple[int, ...] | None:
    """The static shape of the tensor `node` computes, or None (not a tensor, or symbolic)."""
    value = node.meta.get("val") if isinstance(node, torch.fx.Node) else None
    if not isinstance(value, torch.Tensor) or not all(isinstance(size, int) for size in value.shape):
        return None
    return tuple(value.shape)

