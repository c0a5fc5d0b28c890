"""ATen scatters (slice_scatter, scatter, scatter_add, scatter_reduce, index_put)
as `rdu.scatter`: a write or a reduction (sum, prod, max, min) at the index,
O(index) work.
"""

from __future__ import annotations

from collections.abc import Sequence
from math import prod
from typing import Any

import torch
from xdsl.dialects.builtin import i1, i64
from xdsl.ir import SSAValue

from rducc.dialects.rdu.dataflow import (
    BroadcastOp,
    ReduceKind,
    ScatterOp,
    TransposeOp,
)
from rducc.dialects.shapes import broadcast_shapes, is_bool, is_float, is_unsigned
from rducc.frontend.aten_build import along, cast, ramp, reshape, slice_dim
from rducc.frontend.aten_common import element_of, result_type, shape_of, slice_bounds, tensor_of
from rducc.frontend.converter_api import GraphImporter, converts, fake_value, node_arguments
from rducc.frontend.scalar import ScalarBuilder, opmath_type


@converts("aten.slice_scatter.default")
def convert_slice_scatter(g: GraphImporter, node: torch.fx.Node) -> SSAValue:
    """input with src written at start:end:step along dim: an `rdu.scatter` at
    the rows start, start + step, ... (the same rows everywhere else, so a
    buffer updated this way writes back only those rows; rdu-insert-dma)."""
    args = node_arguments(node)
    value, source = g.value(args["self"]), g.value(args["src"])
    shape = shape_of(value)
    rank = len(shape)
    dim = args["dim"] % max(rank, 1)
    start, _ = slice_bounds(shape[dim], args["start"], args["end"])
    count = shape_of(source)[dim]
    if count == 0:
        return value
    rows = along(g, ramp(g, count, start, args["step"]), dim, rank)
    index = g.emit(BroadcastOp(rows, tensor_of(i64, list(shape_of(source)))))
    result = g.emit(ScatterOp(value, index, cast(g, source, element_of(value)), dim))
    return cast(g, result, result_type(node).element_type)


_SCATTER_REDUCE = {
    "sum": ReduceKind.SUM,
    "mean": ReduceKind.SUM,
    "prod": ReduceKind.PROD,
    "amax": ReduceKind.MAX,
    "amin": ReduceKind.MIN,
}
"""The `rdu.scatter` reduction of each of scatter_reduce's ('mean' is a sum and a count)."""


def _scatter_form(node: torch.fx.Node, args: dict[str, Any]) -> tuple[str | None, bool]:
    """(scatter_reduce's reduction name or None for a plain write, include_self)."""
    target = str(node.target)
    if target in ("aten.scatter.src", "aten.scatter.value"):
        return None, True
    if target == "aten.scatter_add.default":
        return "sum", True
    return args["reduce"], bool(args["include_self"])


def _reduction_identity(kind: ReduceKind, element: Any) -> int | float:
    """The value a reduction starts from (the extreme integers for max and min)."""
    if kind in (ReduceKind.SUM, ReduceKind.PROD):
        return 0 if kind == ReduceKind.SUM else 1
    if is_float(element):
        return float("-inf") if kind == ReduceKind.MAX else float("inf")
    if is_bool(element):
        return int(kind == ReduceKind.MIN)
    bits = element.width.data
    low, high = (0, 2**bits - 1) if is_unsigned(element) else (-(2 ** (bits - 1)), 2 ** (bits - 1) - 1)
    return low if kind == ReduceKind.MAX else high


def _fill(g: GraphImporter, value: int | float, element: Any, shape: Sequence[int]) -> SSAValue:
    return g.map([], tensor_of(element, list(shape)), lambda b, xs: b.constant(value, element))


@converts("aten.scatter.src", "aten.scatter.value", "aten.scatter_add.default", "aten.scatter_reduce.two")
def convert_scatter(g: GraphImporter, node: torch.fx.Node) -> SSAValue:
    """scatter (src or value), scatter_add and scatter_reduce are `rdu.scatter`s:
    a write, or a reduction into the input. Without include_self a first write
    puts the reduction's identity where the index points; 'mean' divides the
    sum by a second scatter's count (plus one with include_self; floor division
    for integers) where it is not zero. An index smaller than the input outside
    `dim` scatters into that corner. Rank-0 operands scatter as one-element vectors."""
    args = node_arguments(node)
    value, index = g.value(args["self"]), cast(g, g.value(args["index"]), i64)
    source = g.value(args["src"]) if "src" in args else None
    out = result_type(node)
    if not shape_of(value):
        value, index = reshape(g, value, [1]), reshape(g, index, [1])
        source = reshape(g, source, [1]) if source is not None else None
    dim = args["dim"] % len(shape_of(value))
    reduction, include_self = _scatter_form(node, args)
    element = opmath_type(out.element_type) if reduction == "mean" else out.element_type
    source = (
        _crop(g, source, shape_of(index)) if source is not None else _fill(g, args["value"], element, shape_of(index))
    )
    source, base = cast(g, source, element), cast(g, value, element)
    kind = _SCATTER_REDUCE[reduction] if reduction is not None else None
    if kind is not None and not include_self:
        base = g.emit(
            ScatterOp(base, index, _fill(g, _reduction_identity(kind, element), element, shape_of(index)), dim)
        )
    result = g.emit(ScatterOp(base, index, source, dim, kind))
    if reduction == "mean":
        result = _scatter_mean(g, result, index, dim, include_self, out.element_type)
    return reshape(g, cast(g, result, out.element_type), out.get_shape())


def _scatter_mean(
    g: GraphImporter, total: SSAValue, index: SSAValue, dim: int, include_self: bool, element: Any
) -> SSAValue:
    """`total` divided by how many writes each position got (plus one for the
    input with include_self); positions nothing was written to keep `total`."""
    counts = g.emit(
        ScatterOp(_fill(g, 0, i64, shape_of(total)), index, _fill(g, 1, i64, shape_of(index)), dim, ReduceKind.SUM)
    )
    compute = element_of(total)

    def divide(b: ScalarBuilder, xs: list[Any]) -> SSAValue:
        count = b.add(xs[1], b.constant(1, i64)) if include_self else xs[1]
        untouched = b.compare("eq", count, b.constant(0, i64))
        divisor = b.cast(b.select(untouched, b.constant(1, i64), count), compute)  # never an integer x / 0
        quotient = b.div(xs[0], divisor) if is_float(compute) else b.floor_div(xs[0], divisor)
        return b.select(untouched, xs[0], quotient)

    return g.map([total, counts], tensor_of(element, shape_of(total)), divide)


def _check_index_put(node: torch.fx.Node) -> str | None:
    args = node_arguments(node)
    present = [i for i, index in enumerate(args["indices"]) if index is not None]
    if not present:
        return "no index tensor"
    masks = [i for i in present if fake_value(args["indices"][i]).dtype in (torch.bool, torch.uint8)]
    if masks and len(present) > 1:
        return "a boolean mask with other indices (data-dependent positions)"
    if masks:
        mask_rank = fake_value(args["indices"][present[0]]).dim()
        after = fake_value(args["self"]).dim() - present[0] - mask_rank
        if _values_per_masked_element(tuple(fake_value(args["values"]).shape), after):
            return "a boolean mask with one value per masked element (data-dependent positions)"
    return None


def _values_per_masked_element(values_shape: tuple[int, ...], after: int) -> bool:
    """Whether values broadcast to `x[mask]` ([..., count, *after dims]) have a dim of
    their own along the masked elements' count (not 1, not absent)."""
    at = len(values_shape) - 1 - after
    return at >= 0 and values_shape[at] != 1


@converts("aten.index_put.default", check=_check_index_put)
def convert_index_put(g: GraphImporter, node: torch.fx.Node) -> SSAValue:
    """x[..., i, j, ...] = v (or += with accumulate): the indexed dims move to the
    front and flatten into one, the indices into one linear index, and the put
    is a scatter along dim 0. The values broadcast to the indexing result's
    shape: the index dims in place for adjacent index tensors, first for
    non-adjacent ones (PyTorch's rule). A boolean mask with one value is a select."""
    args = node_arguments(node)
    value = g.value(args["self"])
    present = [i for i, index in enumerate(args["indices"]) if index is not None]
    first = present[0]
    indices = [g.value(args["indices"][i]) for i in present]
    if fake_value(args["indices"][first]).dtype in (torch.bool, torch.uint8):
        return _masked_put(g, node, value, indices[0], first, g.value(args["values"]), bool(args["accumulate"]))
    shape = list(shape_of(value))
    rank = len(shape)
    indexed = [shape[d] for d in present]
    index_shape = broadcast_shapes([shape_of(i) for i in indices])
    assert index_shape is not None
    rest_dims = [d for d in range(rank) if d not in present]
    rest = [shape[d] for d in rest_dims]
    perm = present + rest_dims
    moved = reshape(g, _permute(g, value, perm), [prod(indexed), *rest])
    linear = reshape(g, _linear_index(g, indices, indexed, index_shape), [prod(index_shape)])
    source = g.value(args["values"])
    adjacent = present == list(range(first, first + len(present)))
    lead = first if adjacent else 0
    placed = rest[:lead] + list(index_shape) + rest[lead:]
    if list(shape_of(source)) != placed:
        source = g.emit(BroadcastOp(source, tensor_of(element_of(source), placed)))
    spread_dims = list(range(lead, lead + len(index_shape)))
    source = _permute(g, source, spread_dims + [d for d in range(len(placed)) if d not in spread_dims])
    source = reshape(g, source, [prod(index_shape), *rest])
    put = _put_rows(g, moved, linear, source, bool(args["accumulate"]), result_type(node).element_type)
    put = reshape(g, put, indexed + rest)
    inverse = [perm.index(d) for d in range(rank)]
    return _permute(g, put, inverse)


def _permute(g: GraphImporter, value: SSAValue, perm: list[int]) -> SSAValue:
    if perm == sorted(perm):
        return value
    shape = [shape_of(value)[p] for p in perm]
    return g.emit(TransposeOp(value, perm, tensor_of(element_of(value), shape)))


def _linear_index(g: GraphImporter, indices: list[SSAValue], sizes: list[int], shape: tuple[int, ...]) -> SSAValue:
    """sum_k wrap(i_k) * stride_k over the indexed dims: a negative index counts
    from the end, as in eager; an index outside [-size, size) gives -1, which
    the scatter refuses at run time (as eager does), never another row."""
    strides = [prod(sizes[k + 1 :]) for k in range(len(sizes))]

    def body(b: ScalarBuilder, xs: list[Any]) -> SSAValue:
        total, inside = b.constant(0, i64), b.constant(True, i1)
        for x, size, stride in zip(xs, sizes, strides):
            index, extent = b.cast(x, i64), b.constant(size, i64)
            negative = b.compare("lt", index, b.constant(0, i64))
            wrapped = b.select(negative, b.add(index, extent), index)
            fits = b.logical("and", b.compare("ge", wrapped, b.constant(0, i64)), b.compare("lt", wrapped, extent))
            inside = b.logical("and", inside, fits)
            total = b.add(total, b.mul(wrapped, b.constant(stride, i64)))
        return b.select(inside, total, b.constant(-1, i64))

    return g.map(indices, tensor_of(i64, list(shape)), body)


def _put_rows(
    g: GraphImporter, value: SSAValue, index: SSAValue, source: SSAValue, accumulate: bool, element: Any
) -> SSAValue:
    """value[index[n]] = source[n] (or +=) along dim 0, for a 1-D i64 index."""
    shape = list(shape_of(value))
    count = shape_of(index)[0]
    spread = [count] + shape[1:]
    index = g.emit(BroadcastOp(reshape(g, index, [count] + [1] * (len(shape) - 1)), tensor_of(i64, spread)))
    return g.emit(
        ScatterOp(cast(g, value, element), index, cast(g, source, element), 0, ReduceKind.SUM if accumulate else None)
    )


def _masked_put(
    g: GraphImporter,
    node: torch.fx.Node,
    value: SSAValue,
    mask: SSAValue,
    first: int,
    source: SSAValue,
    accumulate: bool,
) -> SSAValue:
    """x[mask] = v (or += v): a select where the mask is set. v is the same for every
    masked element (one value, or a slice over the dims before and after the mask's,
    broadcast as `x[mask]`'s shape [*before, count, *after] takes it)."""
    shape = list(shape_of(value))
    rank, mask_rank = len(shape), len(shape_of(mask))
    mask = reshape(g, cast(g, mask, i1), [1] * first + list(shape_of(mask)) + [1] * (rank - first - mask_rank))
    before, after = shape[:first], shape[first + mask_rank :]
    if prod(shape_of(source)) == 1:
        source = reshape(g, source, [])
    else:
        placed = before + [1] + after
        if list(shape_of(source)) != placed:
            source = g.emit(BroadcastOp(source, tensor_of(element_of(source), placed)))
        source = reshape(g, source, before + [1] * mask_rank + after)
    out = result_type(node)
    compute = opmath_type(out.element_type)

    def body(b: ScalarBuilder, xs: list[Any]) -> SSAValue:
        own, new = b.cast(xs[1], compute), b.cast(xs[2], compute)
        return b.select(xs[0], b.add(own, new) if accumulate else new, own)

    return g.map([mask, value, source], out, body)


def _crop(g: GraphImporter, value: SSAValue, shape: tuple[int, ...]) -> SSAValue:
    """The leading `shape` corner of `value` (scatter reads src only where index is)."""
    for dim, size in enumerate(shape):
        value = slice_dim(g, value, dim, 0, size)
    return value
