"""IR-building helpers shared by the ATen converters: reshape, cast, reduce,
slices, pads, i64 ramps and gathers along a dim, sorts, mean and variance.
"""

from __future__ import annotations

from collections.abc import Sequence
from math import prod
from typing import Any

from xdsl.dialects.builtin import TensorType, i64
from xdsl.ir import Attribute, SSAValue

from rducc.dialects.rdu.dataflow import (
    ArgsortOp,
    ConcatOp,
    GatherOp,
    IotaOp,
    ReduceKind,
    ReduceOp,
    ReshapeOp,
    ScanKind,
    ScanOp,
    SliceOp,
    TransposeOp,
)
from rducc.frontend.aten_common import element_of, shape_of, tensor_of
from rducc.frontend.converter_api import GraphImporter
from rducc.frontend.scalar import ScalarBuilder, opmath_type


def reshape(g: GraphImporter, value: SSAValue, shape: Sequence[int]) -> SSAValue:
    """`value` reshaped to `shape` (itself when the shape already matches)."""
    if shape_of(value) == tuple(shape):
        return value
    return g.emit(ReshapeOp(value, TensorType(element_of(value), list(shape))))


def cast(g: GraphImporter, value: SSAValue, element_type: Attribute) -> SSAValue:
    """`value` converted to `element_type` by an `rdu.map` (itself when it already is)."""
    if element_of(value) == element_type:
        return value
    out = TensorType(element_type, list(shape_of(value)))
    return g.map([value], out, lambda b, xs: xs[0])  # type: ignore[arg-type, return-value]


def reduce(
    g: GraphImporter, kind: ReduceKind, value: SSAValue, dims: Sequence[int], keepdim: bool,
    element_type: Attribute | None = None,
) -> SSAValue:
    """An `rdu.reduce` of `value` over `dims` (kept as 1s when `keepdim`)."""
    shape = shape_of(value)
    if keepdim:
        out_shape = [1 if i in dims else s for i, s in enumerate(shape)]
    else:
        out_shape = [s for i, s in enumerate(shape) if i not in dims]
    out = TensorType(element_type or element_of(value), out_shape)
    if not dims and not shape:  # a rank-0 tensor reduced over its no dims: itself (index 0)
        if kind in (ReduceKind.ARGMAX, ReduceKind.ARGMIN):
            return g.map([], out, lambda b, xs: b.constant(0, out.element_type))
        return cast(g, value, out.element_type)
    return g.emit(ReduceOp(kind, value, list(dims), keepdim, out))


def slice_dim(
    g: GraphImporter, value: SSAValue, dim: int, start: int, size: int, step: int = 1
) -> SSAValue:
    """`size` elements of `value` along `dim` from `start`, every `step`-th."""
    shape = list(shape_of(value))
    if start == 0 and size == shape[dim] and step == 1:
        return value
    offsets = [0] * len(shape)
    strides = [1] * len(shape)
    offsets[dim], strides[dim], shape[dim] = start, step, size
    return g.emit(SliceOp(value, offsets, strides, tensor_of(element_of(value), shape)))


def ramp(g: GraphImporter, size: int, start: int = 0, step: int = 1) -> SSAValue:
    """i64 [start, start + step, ...] of `size` elements."""
    return g.emit(IotaOp(start, step, tensor_of(i64, [size])))


def along(g: GraphImporter, value: SSAValue, dim: int, rank: int) -> SSAValue:
    """A rank-1 value reshaped to lie along `dim` of a rank-`rank` shape (1 elsewhere)."""
    shape = [1] * rank
    shape[dim] = shape_of(value)[0]
    return reshape(g, value, shape)


def gather_dim(g: GraphImporter, value: SSAValue, index: SSAValue, dim: int) -> SSAValue:
    """`value` indexed along `dim` by the rank-1 i64 `index` (torch.index_select)."""
    shape = list(shape_of(value))
    shape[dim] = shape_of(index)[0]
    return g.emit(GatherOp(value, [index], dim, tensor_of(element_of(value), shape)))


def move_dim(g: GraphImporter, value: SSAValue, source: int, destination: int) -> SSAValue:
    """`value` transposed so that dim `source` becomes dim `destination`."""
    rank = len(shape_of(value))
    perm = [d for d in range(rank) if d != source]
    perm.insert(destination, source)
    if perm == list(range(rank)):
        return value
    shape = [shape_of(value)[p] for p in perm]
    return g.emit(TransposeOp(value, perm, tensor_of(element_of(value), shape)))


def take_along(g: GraphImporter, value: SSAValue, index: SSAValue, dim: int) -> SSAValue:
    """torch.gather: an rdu.gather of every dim, by the i64 `index` along `dim`
    and by ramps along the others; the result has the index's shape."""
    index_shape = list(shape_of(index))
    rank = len(index_shape)
    indices = [index if d == dim else along(g, ramp(g, index_shape[d]), d, rank) for d in range(rank)]
    return g.emit(GatherOp(value, indices, 0, tensor_of(element_of(value), index_shape)))


def pad_dim(g: GraphImporter, value: SSAValue, dim: int, before: int, after: int, fill: float | int = 0) -> SSAValue:
    """`fill` added `before` and `after` along `dim` (a negative width crops instead)."""
    element = element_of(value)
    size = shape_of(value)[dim]
    start, stop = max(0, -before), size - max(0, -after)
    value = slice_dim(g, value, dim, start, max(0, stop - start))
    pieces = []
    for width in (before, None, after):
        if width is None:
            pieces.append(value)
        elif width > 0:
            shape = list(shape_of(value))
            shape[dim] = width
            pieces.append(g.map([], tensor_of(element, shape), lambda b, xs: b.constant(fill, element)))
    if len(pieces) == 1:
        return value
    shape = list(shape_of(value))
    shape[dim] = sum(shape_of(p)[dim] for p in pieces)
    return g.emit(ConcatOp(pieces, dim, tensor_of(element, shape)))


def sort_along(g: GraphImporter, value: SSAValue, dim: int, descending: bool) -> tuple[SSAValue, SSAValue]:
    """(values, i64 indices) sorted along `dim`, stable, NaN largest (as torch)."""
    order = g.emit(ArgsortOp(value, dim, descending, tensor_of(i64, shape_of(value))))
    return take_along(g, value, order, dim), order


def triangle_indices(
    g: GraphImporter, rows: int, cols: int, offset: int, lower: bool, count: int, element: Any
) -> SSAValue:
    """[2, count] (row, col) of the lower (upper) triangle in row-major order: each
    grid position's rank among the kept ones (a cumsum), then slot k takes the
    position of rank k (O(count x rows x cols) work)."""
    grid = ramp(g, rows * cols)

    def kept(b: ScalarBuilder, xs: list[Any]) -> SSAValue:
        width = b.constant(cols, i64)
        diagonal = b.sub(b.remainder(xs[0], width), b.floor_div(xs[0], width))
        return b.cast(b.compare("le" if lower else "ge", diagonal, b.constant(offset, i64)), i64)

    keep = g.map([grid], tensor_of(i64, [rows * cols]), kept)
    ranks = g.emit(ScanOp(ScanKind.SUM, keep, 0, keep.type))
    slots = reshape(g, ramp(g, count), [count, 1])

    def numbered(b: ScalarBuilder, xs: list[Any]) -> SSAValue:
        hit = b.logical(
            "and", b.compare("ne", xs[0], b.constant(0, i64)), b.compare("eq", b.sub(xs[1], b.constant(1, i64)), xs[2])
        )
        return b.select(hit, xs[3], b.constant(-1, i64))

    matches = g.map([keep, ranks, slots, grid], tensor_of(i64, [count, rows * cols]), numbered)
    chosen = reduce(g, ReduceKind.MAX, matches, [1], True)
    row = g.map([chosen], tensor_of(element, [count, 1]), lambda b, xs: b.floor_div(xs[0], b.constant(cols, i64)))  # type: ignore[arg-type]
    col = g.map([chosen], tensor_of(element, [count, 1]), lambda b, xs: b.remainder(xs[0], b.constant(cols, i64)))  # type: ignore[arg-type]
    pair = g.emit(ConcatOp([row, col], 1, tensor_of(element, [count, 2])))
    return move_dim(g, pair, 1, 0)


def mean_over(g: GraphImporter, value: SSAValue, dims: list[int], keepdim: bool, out: Attribute) -> SSAValue:
    """sum / count, summed in the opmath type and rounded once to `out`."""
    compute = opmath_type(out)
    total = reduce(g, ReduceKind.SUM, cast(g, value, compute), dims, keepdim)
    count = prod(shape_of(value)[d] for d in dims)
    result = tensor_of(out, shape_of(total))
    return g.map([total], result, lambda b, xs: b.div(xs[0], b.constant(count, compute)))  # type: ignore[arg-type]


def variance_over(
    g: GraphImporter, value: SSAValue, dims: list[int], keepdim: bool, correction: float, out: Attribute
) -> tuple[SSAValue, SSAValue]:
    """(sum((x - mean)^2) / (count - correction), mean kept as 1-dims), in the opmath type."""
    compute = opmath_type(out)
    count = prod(shape_of(value)[d] for d in dims)
    mean = mean_over(g, value, dims, True, compute)
    squares = g.map(
        [value, mean],
        tensor_of(compute, shape_of(value)),
        lambda b, xs: square(b, b.sub(b.cast(xs[0], compute), xs[1])),  # type: ignore[arg-type]
    )
    total = reduce(g, ReduceKind.SUM, squares, dims, keepdim)
    divisor = max(count - correction, 0)
    variance = g.map(
        [total],
        tensor_of(out, shape_of(total)),
        lambda b, xs: b.div(xs[0], b.constant(divisor, compute)),  # type: ignore[arg-type]
    )
    return variance, mean


def square(b: ScalarBuilder, value: SSAValue) -> SSAValue:
    """value * value."""
    return b.mul(value, value)


__all__ = [
    "reshape",
    "cast",
    "reduce",
    "slice_dim",
    "ramp",
    "along",
    "gather_dim",
    "move_dim",
    "take_along",
    "pad_dim",
    "sort_along",
    "triangle_indices",
    "mean_over",
    "variance_over",
    "square",
]
