"""Core ATen data movement expressed as index arithmetic: `rdu.gather` by index
tensors built from `rdu.iota` ramps and `rdu.map`, plus concat, broadcast and
reshape (flip, gather, index_select, diagonal, unfold, as_strided, padding,
repeat, slice_scatter, nearest and bilinear upsampling, scatter, index_put,
sort, topk, kthvalue, logcumsumexp, tril_indices, triu_indices, embedding_bag,
grid_sample).

Every index tensor is a small i64 ramp or map that the fusion passes place
next to the gather that reads it. Scatters (scatter, scatter_add,
scatter_reduce, index_put) are `rdu.scatter`s: a write or a reduction (sum,
prod, max, min) at the index, O(index) work. Sorts are an `rdu.argsort` (a
stable sort's order) and a gather by it.
"""

from __future__ import annotations

from collections.abc import Sequence
from math import prod
from typing import Any

import torch
from xdsl.dialects.builtin import f32, i1, i64
from xdsl.ir import SSAValue

from rducc.frontend.aten_elementwise import result_type
from rducc.frontend.aten_structural import (
    _dims,
    _used_outputs,
    _element,
    _shape,
    _slice_bounds,
    _tensor,
    cast,
    reduce,
    reshape,
    slice_dim,
)
from rducc.dialects.dataflow import ArgsortOp, BroadcastOp, ConcatOp, GatherOp, IotaOp, ReduceKind, ScanKind, ScanOp, ScatterOp, TransposeOp
from rducc.dialects.shapes import broadcast_shapes, is_bool, is_float, is_unsigned
from rducc.frontend.importer import GraphImporter, converts, fake_value, node_arguments
from rducc.frontend.scalar import ScalarBuilder, opmath_type
from rducc.frontend.types import tensor_type_of


def ramp(g: GraphImporter, size: int, start: int = 0, step: int = 1) -> SSAValue:
    """i64 [start, start + step, ...] of `size` elements."""
    return g.emit(IotaOp(start, step, _tensor(i64, [size])))


def along(g: GraphImporter, value: SSAValue, dim: int, rank: int) -> SSAValue:
    """A rank-1 value reshaped to lie along `dim` of a rank-`rank` shape (1 elsewhere)."""
    shape = [1] * rank
    shape[dim] = _shape(value)[0]
    return reshape(g, value, shape)


def gather_dim(g: GraphImporter, value: SSAValue, index: SSAValue, dim: int) -> SSAValue:
    """`value` indexed along `dim` by the rank-1 i64 `index` (torch.index_select)."""
    shape = list(_shape(value))
    shape[dim] = _shape(index)[0]
    return g.emit(GatherOp(value, [index], dim, _tensor(_element(value), shape)))


def _move_dim(g: GraphImporter, value: SSAValue, source: int, destination: int) -> SSAValue:
    rank = len(_shape(value))
    perm = [d for d in range(rank) if d != source]
    perm.insert(destination, source)
    if perm == list(range(rank)):
        return value
    shape = [_shape(value)[p] for p in perm]
    return g.emit(TransposeOp(value, perm, _tensor(_element(value), shape)))


@converts("aten.index_select.default")
def convert_index_select(g: GraphImporter, node: torch.fx.Node) -> SSAValue:
    value, index = g.value(node.args[0]), g.value(node.args[2])
    dim = node.args[1] % max(len(_shape(value)), 1)
    return gather_dim(g, value, reshape(g, cast(g, index, i64), [prod(_shape(index))]), dim)


@converts("aten.flip.default")
def convert_flip(g: GraphImporter, node: torch.fx.Node) -> SSAValue:
    """Each flipped dim is a gather by a descending ramp."""
    value = g.value(node.args[0])
    rank = len(_shape(value))
    for dim in _dims(node.args[1], rank) if node.args[1] else []:
        size = _shape(value)[dim]
        value = gather_dim(g, value, ramp(g, size, size - 1, -1), dim)
    return value


@converts("aten.gather.default")
def convert_gather(g: GraphImporter, node: torch.fx.Node) -> SSAValue:
    """out[i][j][k] = x[i][index[i][j][k]][k] (dim 1): an rdu.gather of every dim,
    by `index` along `dim` and by ramps along the others."""
    args = node_arguments(node)
    value, index = g.value(args["self"]), g.value(args["index"])
    rank = len(_shape(value))
    dim = args["dim"] % max(rank, 1)
    if rank == 0:
        return value
    return take_along(g, value, cast(g, index, i64), dim)


def take_along(g: GraphImporter, value: SSAValue, index: SSAValue, dim: int) -> SSAValue:
    """torch.gather: an rdu.gather of every dim, by the i64 `index` along `dim`
    and by ramps along the others; the result has the index's shape."""
    index_shape = list(_shape(index))
    rank = len(index_shape)
    indices = [index if d == dim else along(g, ramp(g, index_shape[d]), d, rank) for d in range(rank)]
    return g.emit(GatherOp(value, indices, 0, _tensor(_element(value), index_shape)))


@converts("aten.diagonal.default")
def convert_diagonal(g: GraphImporter, node: torch.fx.Node) -> SSAValue:
    """The two dims move to the front, a two-index gather takes the diagonal,
    and the diagonal dim moves to the end (as torch.diagonal returns it)."""
    args = node_arguments(node)
    value = g.value(args["self"])
    rank = len(_shape(value))
    first, second, offset = args["dim1"] % rank, args["dim2"] % rank, args["offset"]
    length = result_type(node).get_shape()[-1]
    value = _move_dim(g, value, first, 0)
    value = _move_dim(g, value, second if second > first else second + 1, 1)
    rows = ramp(g, length, max(0, -offset))
    cols = ramp(g, length, max(0, offset))
    rest = list(_shape(value)[2:])
    diagonal = g.emit(GatherOp(value, [rows, cols], 0, _tensor(_element(value), [length, *rest])))
    return _move_dim(g, diagonal, 0, rank - 2)


@converts("aten.unfold.default")
def convert_unfold(g: GraphImporter, node: torch.fx.Node) -> SSAValue:
    """Windows of `size` every `step` along `dim`, the window dim appended last."""
    value = g.value(node.args[0])
    rank = len(_shape(value))
    if rank == 0:
        return reshape(g, value, [1])
    dim, size, step = node.args[1] % rank, node.args[2], node.args[3]
    count = (_shape(value)[dim] - size) // step + 1
    starts = reshape(g, ramp(g, count, 0, step), [count, 1])
    offsets = reshape(g, ramp(g, size), [1, size])
    index = g.map([starts, offsets], _tensor(i64, [count, size]), lambda b, xs: b.add(xs[0], xs[1]))  # type: ignore[arg-type]
    shape = list(_shape(value))
    windows = g.emit(GatherOp(value, [index], dim, _tensor(_element(value), shape[:dim] + [count, size] + shape[dim + 1 :])))
    return _move_dim(g, windows, dim + 1, rank)


def _owns_storage(value: torch.Tensor) -> bool:
    """Whether `value` is its whole storage in row-major order (its flat values are the storage)."""
    return (
        value.is_contiguous()
        and value.storage_offset() == 0
        and value.untyped_storage().nbytes() == value.numel() * value.element_size()
    )


def _storage_owner(node: torch.fx.Node) -> torch.fx.Node | None:
    """The node whose value is the whole storage that as_strided's input views
    (the input itself, or the earlier node it is a view of), if there is one."""
    source = node.args[0]
    assert isinstance(source, torch.fx.Node)
    viewed = fake_value(source)
    storage = viewed.untyped_storage()._cdata
    for candidate in node.graph.nodes:
        if candidate is node:
            return None
        value = candidate.meta.get("val")
        if (
            isinstance(value, torch.Tensor)
            and value.dtype == viewed.dtype
            and value.untyped_storage()._cdata == storage
            and _owns_storage(value)
        ):
            return candidate
    return None


def _check_as_strided(node: torch.fx.Node) -> str | None:
    if _storage_owner(node) is None:
        return "input that is a view of a storage no node of the graph holds (as_strided reads its storage)"
    return None


@converts("aten.as_strided.default", check=_check_as_strided)
def convert_as_strided(g: GraphImporter, node: torch.fx.Node) -> SSAValue:
    """A gather of the flattened storage at offset + sum(i_d * stride_d); the
    storage is the input's, or, for a view (a slice, a transpose), that of the
    node it views."""
    args = node_arguments(node)
    owner = _storage_owner(node)
    assert owner is not None
    value = g.value(owner)
    size, stride = list(args["size"]), list(args["stride"])
    offset = args["storage_offset"] or 0
    flat = reshape(g, value, [prod(_shape(value))])
    if not size:
        index = g.map([], _tensor(i64, []), lambda b, xs: b.constant(offset, i64))
        return reshape(g, gather_dim(g, flat, reshape(g, index, [1]), 0), [])
    terms = [along(g, ramp(g, n, 0, s), d, len(size)) for d, (n, s) in enumerate(zip(size, stride))]

    def body(b: ScalarBuilder, xs: list[Any]) -> SSAValue:
        total = b.constant(offset, i64)
        for term in xs:
            total = b.add(total, term)
        return total

    index = g.map(terms, _tensor(i64, size), body)
    return g.emit(GatherOp(flat, [index], 0, result_type(node)))


@converts("aten.constant_pad_nd.default")
def convert_constant_pad(g: GraphImporter, node: torch.fx.Node) -> SSAValue:
    """Pads (before, after) pairs from the last dim backwards: negative pads
    slice, positive ones concatenate a fill."""
    args = node_arguments(node)
    value = g.value(args["self"])
    rank = len(_shape(value))
    pads = list(args["pad"])
    fill_value = args["value"]
    for i in range(len(pads) // 2):
        value = pad_dim(g, value, rank - 1 - i, pads[2 * i], pads[2 * i + 1], fill_value)
    return value


def pad_dim(g: GraphImporter, value: SSAValue, dim: int, before: int, after: int, fill: float | int = 0) -> SSAValue:
    """`fill` added `before` and `after` along `dim` (a negative width crops instead)."""
    element = _element(value)
    size = _shape(value)[dim]
    start, stop = max(0, -before), size - max(0, -after)
    value = slice_dim(g, value, dim, start, max(0, stop - start))
    pieces = []
    for width in (before, None, after):
        if width is None:
            pieces.append(value)
        elif width > 0:
            shape = list(_shape(value))
            shape[dim] = width
            pieces.append(g.map([], _tensor(element, shape), lambda b, xs: b.constant(fill, element)))
    if len(pieces) == 1:
        return value
    shape = list(_shape(value))
    shape[dim] = sum(_shape(p)[dim] for p in pieces)
    return g.emit(ConcatOp(pieces, dim, _tensor(element, shape)))


@converts("aten.repeat.default")
def convert_repeat(g: GraphImporter, node: torch.fx.Node) -> SSAValue:
    """Tiles: [s0, s1] -> [1, s0, 1, s1] -> broadcast [r0, s0, r1, s1] -> [r0*s0, r1*s1]."""
    value = g.value(node.args[0])
    repeats = list(node.args[1])
    shape = [1] * (len(repeats) - len(_shape(value))) + list(_shape(value))
    interleaved = [n for size in shape for n in (1, size)]
    tiled = [n for r, size in zip(repeats, shape) for n in (r, size)]
    spread = reshape(g, value, interleaved)
    if tiled != interleaved:
        spread = g.emit(BroadcastOp(spread, _tensor(_element(value), tiled)))
    return reshape(g, spread, result_type(node).get_shape())


@converts("aten.slice_scatter.default")
def convert_slice_scatter(g: GraphImporter, node: torch.fx.Node) -> SSAValue:
    """input with src written at start:end:step along dim: a gather of src
    placed by a position mask."""
    args = node_arguments(node)
    value, source = g.value(args["self"]), g.value(args["src"])
    shape = _shape(value)
    rank = len(shape)
    dim = args["dim"] % max(rank, 1)
    start, end = _slice_bounds(shape[dim], args["start"], args["end"])
    step = args["step"]
    count = _shape(source)[dim]
    if count == 0:
        return value
    positions = ramp(g, shape[dim])
    index = g.map(
        [positions], _tensor(i64, [shape[dim]]),
        lambda b, xs: b.minimum(b.maximum(b.floor_div(b.sub(xs[0], b.constant(start, i64)), b.constant(step, i64)), b.constant(0, i64)), b.constant(count - 1, i64)),  # type: ignore[arg-type]
    )
    placed = gather_dim(g, source, index, dim)

    def chosen(b: ScalarBuilder, xs: list[Any]) -> SSAValue:
        offset = b.sub(xs[0], b.constant(start, i64))
        inside = b.logical("and", b.compare("ge", xs[0], b.constant(start, i64)), b.compare("lt", xs[0], b.constant(end, i64)))
        on_step = b.compare("eq", b.remainder(offset, b.constant(step, i64)), b.constant(0, i64))
        return b.logical("and", inside, on_step)

    mask = along(g, g.map([positions], _tensor(i1, [shape[dim]]), chosen), dim, rank)
    return g.map([mask, placed, value], result_type(node), lambda b, xs: b.select(xs[0], xs[1], xs[2]))  # type: ignore[arg-type]


@converts("aten.upsample_nearest2d.vec")
def convert_upsample_nearest(g: GraphImporter, node: torch.fx.Node) -> SSAValue:
    """Each spatial dim gathers source row min(floor(i * scale), size - 1), with
    torch's f32 scale: 1/scale_factor when given, else in/out."""
    args = node_arguments(node)
    value = g.value(args["input"])
    rank = len(_shape(value))
    out_sizes = result_type(node).get_shape()[-2:]
    factors = args["scale_factors"]
    for axis in range(2):
        dim = rank - 2 + axis
        size, out_size = _shape(value)[dim], out_sizes[axis]
        scale = 1.0 / factors[axis] if factors else size / out_size

        def source_row(b: ScalarBuilder, xs: list[Any], scale: float = scale, size: int = size) -> SSAValue:
            row = b.unary("floor", b.mul(b.cast(xs[0], f32), b.constant(scale, f32)))
            return b.minimum(b.cast(row, i64), b.constant(size - 1, i64))

        index = g.map([ramp(g, out_size)], _tensor(i64, [out_size]), source_row)
        value = gather_dim(g, value, index, dim)
    return value


@converts("aten.upsample_bilinear2d.vec")
def convert_upsample_bilinear(g: GraphImporter, node: torch.fx.Node) -> SSAValue:
    """Per spatial dim, gathers of the two neighbouring source rows blended by
    their distances, with torch's source coordinate (align_corners or half-pixel)
    computed in f32 as its CPU kernel does."""
    args = node_arguments(node)
    value = g.value(args["input"])
    out = result_type(node)
    compute = opmath_type(out.element_type)
    value = cast(g, value, compute)
    rank = len(_shape(value))
    factors, aligned = args["scale_factors"], bool(args["align_corners"])
    for axis in range(2):
        dim = rank - 2 + axis
        size, out_size = _shape(value)[dim], out.get_shape()[dim]
        if aligned:
            scale = (size - 1) / (out_size - 1) if out_size > 1 else 0.0
        else:
            scale = 1.0 / factors[axis] if factors else size / out_size
        value = _blend_rows(g, value, dim, size, out_size, scale, aligned)
    return cast(g, value, out.element_type)


def _blend_rows(
    g: GraphImporter, value: SSAValue, dim: int, size: int, out_size: int, scale: float, aligned: bool
) -> SSAValue:
    """Linear interpolation of `value` along `dim` from `size` to `out_size` rows."""

    def source(b: ScalarBuilder, xs: list[Any]) -> SSAValue:
        position = b.cast(xs[0], f32)
        if aligned:
            return b.mul(position, b.constant(scale, f32))
        half = b.constant(0.5, f32)
        shifted = b.sub(b.mul(b.add(position, half), b.constant(scale, f32)), half)
        return b.maximum(shifted, b.constant(0.0, f32))

    where = g.map([ramp(g, out_size)], _tensor(f32, [out_size]), source)
    low = g.map([where], _tensor(i64, [out_size]), lambda b, xs: b.minimum(b.cast(xs[0], i64), b.constant(size - 1, i64)))  # type: ignore[arg-type]
    high = g.map([low], low.type, lambda b, xs: b.minimum(b.add(xs[0], b.constant(1, i64)), b.constant(size - 1, i64)))  # type: ignore[arg-type]
    element = _element(value)
    weight = g.map([where, low], _tensor(element, [out_size]), lambda b, xs: b.cast(b.sub(xs[0], b.cast(xs[1], f32)), element))  # type: ignore[arg-type]
    rank = len(_shape(value))
    below, above = gather_dim(g, value, low, dim), gather_dim(g, value, high, dim)

    def blend(b: ScalarBuilder, xs: list[Any]) -> SSAValue:
        near, far, t = xs
        return b.add(b.mul(b.sub(b.constant(1.0, element), t), near), b.mul(t, far))

    return g.map([below, above, along(g, weight, dim, rank)], below.type, blend)


# --------------------------------------------------------------------------
# Scatter: one `rdu.scatter` (written, or combined by a reduction)
# --------------------------------------------------------------------------

_SCATTER_REDUCE = {"sum": ReduceKind.SUM, "mean": ReduceKind.SUM, "prod": ReduceKind.PROD, "amax": ReduceKind.MAX, "amin": ReduceKind.MIN}
"""The `rdu.scatter` reduction of each of scatter_reduce's ('mean' is a sum and a count)."""


def _to_last(g: GraphImporter, value: SSAValue, dim: int) -> SSAValue:
    """`value` with `dim` moved last and a size-1 axis left in its place."""
    moved = _move_dim(g, value, dim, len(_shape(value)) - 1)
    shape = list(_shape(moved))
    return reshape(g, moved, shape[:dim] + [1] + shape[dim:])


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
    return g.map([], _tensor(element, list(shape)), lambda b, xs: b.constant(value, element))


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
    if not _shape(value):
        value, index = reshape(g, value, [1]), reshape(g, index, [1])
        source = reshape(g, source, [1]) if source is not None else None
    dim = args["dim"] % len(_shape(value))
    reduction, include_self = _scatter_form(node, args)
    element = opmath_type(out.element_type) if reduction == "mean" else out.element_type
    source = _crop(g, source, _shape(index)) if source is not None else _fill(g, args["value"], element, _shape(index))
    source, base = cast(g, source, element), cast(g, value, element)
    kind = _SCATTER_REDUCE[reduction] if reduction is not None else None
    if kind is not None and not include_self:
        base = g.emit(ScatterOp(base, index, _fill(g, _reduction_identity(kind, element), element, _shape(index)), dim))
    result = g.emit(ScatterOp(base, index, source, dim, kind))
    if reduction == "mean":
        result = _scatter_mean(g, result, index, dim, include_self, out.element_type)
    return reshape(g, cast(g, result, out.element_type), out.get_shape())


def _scatter_mean(g: GraphImporter, total: SSAValue, index: SSAValue, dim: int, include_self: bool, element: Any) -> SSAValue:
    """`total` divided by how many writes each position got (plus one for the
    input with include_self); positions nothing was written to keep `total`."""
    counts = g.emit(ScatterOp(_fill(g, 0, i64, _shape(total)), index, _fill(g, 1, i64, _shape(index)), dim, ReduceKind.SUM))
    compute = _element(total)

    def divide(b: ScalarBuilder, xs: list[Any]) -> SSAValue:
        count = b.add(xs[1], b.constant(1, i64)) if include_self else xs[1]
        divisor = b.cast(count, compute)
        quotient = b.div(xs[0], divisor) if is_float(compute) else b.floor_div(xs[0], divisor)
        return b.select(b.compare("eq", count, b.constant(0, i64)), xs[0], quotient)

    return g.map([total, counts], _tensor(element, _shape(total)), divide)


def _check_index_put(node: torch.fx.Node) -> str | None:
    args = node_arguments(node)
    present = [i for i, index in enumerate(args["indices"]) if index is not None]
    if not present:
        return "no index tensor"
    masks = [i for i in present if fake_value(args["indices"][i]).dtype in (torch.bool, torch.uint8)]
    if masks and (len(present) > 1 or fake_value(args["values"]).numel() != 1):
        return "a boolean mask with other indices or more than one value (data-dependent positions)"
    return None


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
    shape = list(_shape(value))
    rank = len(shape)
    indexed = [shape[d] for d in present]
    index_shape = broadcast_shapes([_shape(i) for i in indices])
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
    if list(_shape(source)) != placed:
        source = g.emit(BroadcastOp(source, _tensor(_element(source), placed)))
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
    shape = [_shape(value)[p] for p in perm]
    return g.emit(TransposeOp(value, perm, _tensor(_element(value), shape)))


def _linear_index(g: GraphImporter, indices: list[SSAValue], sizes: list[int], shape: tuple[int, ...]) -> SSAValue:
    """sum_k wrap(i_k) * stride_k over the indexed dims (negative indices wrap)."""
    strides = [prod(sizes[k + 1 :]) for k in range(len(sizes))]

    def body(b: ScalarBuilder, xs: list[Any]) -> SSAValue:
        total = b.constant(0, i64)
        for x, size, stride in zip(xs, sizes, strides):
            wrapped = b.remainder(b.cast(x, i64), b.constant(size, i64))
            total = b.add(total, b.mul(wrapped, b.constant(stride, i64)))
        return total

    return g.map(indices, _tensor(i64, list(shape)), body)


def _put_rows(g: GraphImporter, value: SSAValue, index: SSAValue, source: SSAValue, accumulate: bool, element: Any) -> SSAValue:
    """value[index[n]] = source[n] (or +=) along dim 0, for a 1-D i64 index."""
    shape = list(_shape(value))
    count = _shape(index)[0]
    spread = [count] + shape[1:]
    index = g.emit(BroadcastOp(reshape(g, index, [count] + [1] * (len(shape) - 1)), _tensor(i64, spread)))
    return g.emit(ScatterOp(cast(g, value, element), index, cast(g, source, element), 0, ReduceKind.SUM if accumulate else None))


def _masked_put(g: GraphImporter, node: torch.fx.Node, value: SSAValue, mask: SSAValue, first: int, source: SSAValue, accumulate: bool) -> SSAValue:
    """x[mask] = v (or += v) for one value: a select where the mask is set."""
    rank, mask_rank = len(_shape(value)), len(_shape(mask))
    mask = reshape(g, cast(g, mask, i1), [1] * first + list(_shape(mask)) + [1] * (rank - first - mask_rank))
    source = reshape(g, source, [])
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


@converts("aten.logcumsumexp.default")
def convert_logcumsumexp(g: GraphImporter, node: torch.fx.Node) -> SSAValue:
    """log(sum_{j<=i} exp(x_j)), stable: each prefix i is shifted by its own max
    M_i, taken over a [..., J] mask of j <= i (O(n^2) along `dim`, like a scatter)."""
    value = g.value(node.args[0])
    out = result_type(node)
    rank = len(_shape(value))
    if rank == 0:
        return cast(g, value, out.element_type)
    dim = node.args[1] % rank
    size = _shape(value)[dim]
    compute = opmath_type(out.element_type)
    spread = _tensor(compute, list(_shape(value)) + [size])
    rows, cols = along(g, ramp(g, size), dim, rank + 1), along(g, ramp(g, size), rank, rank + 1)
    minus_inf = float("-inf")

    def prefix(b: ScalarBuilder, xs: list[Any]) -> SSAValue:
        return b.select(b.compare("le", xs[2], xs[1]), b.cast(xs[0], compute), b.constant(minus_inf, compute))

    masked = g.map([_to_last(g, value, dim), rows, cols], spread, prefix)
    peak = reduce(g, ReduceKind.MAX, masked, [rank], True)

    def shifted(b: ScalarBuilder, xs: list[Any]) -> SSAValue:
        outside = b.compare("eq", xs[0], b.constant(minus_inf, compute))
        return b.select(outside, b.constant(0, compute), b.unary("exp", b.sub(xs[0], xs[1])))

    total = reduce(g, ReduceKind.SUM, g.map([masked, peak], spread, shifted), [rank], False)
    peak = reshape(g, peak, _shape(total))

    def finish(b: ScalarBuilder, xs: list[Any]) -> SSAValue:
        infinite = b.compare("eq", xs[0], b.constant(float("inf"), compute))
        return b.select(infinite, xs[0], b.add(xs[0], b.unary("log", xs[1])))

    return g.map([peak, total], out, finish)


# --------------------------------------------------------------------------
# Sorting: rdu.argsort, then a gather by the order
# --------------------------------------------------------------------------


def sort_along(g: GraphImporter, value: SSAValue, dim: int, descending: bool) -> tuple[SSAValue, SSAValue]:
    """(values, i64 indices) sorted along `dim`, stable, NaN largest (as torch)."""
    order = g.emit(ArgsortOp(value, dim, descending, _tensor(i64, _shape(value))))
    return take_along(g, value, order, dim), order


@converts("aten.sort.default", "aten.sort.stable")
def convert_sort(g: GraphImporter, node: torch.fx.Node) -> tuple[SSAValue, SSAValue]:
    args = node_arguments(node)
    value = g.value(args["self"])
    rank = len(_shape(value))
    if rank == 0:
        return value, g.map([], _tensor(i64, []), lambda b, xs: b.constant(0, i64))
    return sort_along(g, value, args["dim"] % rank, bool(args["descending"]))


@converts("aten.topk.default")
def convert_topk(g: GraphImporter, node: torch.fx.Node) -> tuple[SSAValue, SSAValue]:
    """The first k of a sort (descending for the largest); always sorted."""
    args = node_arguments(node)
    value = g.value(args["self"])
    dim = args["dim"] % max(len(_shape(value)), 1)
    values, indices = sort_along(g, value, dim, bool(args["largest"]))
    return slice_dim(g, values, dim, 0, args["k"]), slice_dim(g, indices, dim, 0, args["k"])


@converts("aten.kthvalue.default")
def convert_kthvalue(g: GraphImporter, node: torch.fx.Node) -> tuple[SSAValue, SSAValue]:
    """The k-th smallest (1-based) along dim and its index."""
    args = node_arguments(node)
    value = g.value(args["self"])
    dim = args["dim"] % max(len(_shape(value)), 1)
    values, indices = sort_along(g, value, dim, False)
    out_shapes = [tuple(f.shape) for f in fake_value(node)]
    return (
        reshape(g, slice_dim(g, values, dim, args["k"] - 1, 1), out_shapes[0]),
        reshape(g, slice_dim(g, indices, dim, args["k"] - 1, 1), out_shapes[1]),
    )


@converts("aten.tril_indices.default", "aten.triu_indices.default")
def convert_triangle_indices(g: GraphImporter, node: torch.fx.Node) -> SSAValue:
    args = node_arguments(node)
    out = result_type(node)
    lower = str(node.target) == "aten.tril_indices.default"
    return triangle_indices(g, args["row"], args["col"], args["offset"], lower, out.get_shape()[1], out.element_type)


def triangle_indices(g: GraphImporter, rows: int, cols: int, offset: int, lower: bool, count: int, element: Any) -> SSAValue:
    """[2, count] (row, col) of the lower (upper) triangle in row-major order: each
    grid position's rank among the kept ones (a cumsum), then slot k takes the
    position of rank k (O(count x rows x cols) work)."""
    grid = ramp(g, rows * cols)

    def kept(b: ScalarBuilder, xs: list[Any]) -> SSAValue:
        width = b.constant(cols, i64)
        diagonal = b.sub(b.remainder(xs[0], width), b.floor_div(xs[0], width))
        return b.cast(b.compare("le" if lower else "ge", diagonal, b.constant(offset, i64)), i64)

    keep = g.map([grid], _tensor(i64, [rows * cols]), kept)
    ranks = g.emit(ScanOp(ScanKind.SUM, keep, 0, keep.type))
    slots = reshape(g, ramp(g, count), [count, 1])

    def numbered(b: ScalarBuilder, xs: list[Any]) -> SSAValue:
        hit = b.logical("and", b.compare("ne", xs[0], b.constant(0, i64)), b.compare("eq", b.sub(xs[1], b.constant(1, i64)), xs[2]))
        return b.select(hit, xs[3], b.constant(-1, i64))

    matches = g.map([keep, ranks, slots, grid], _tensor(i64, [count, rows * cols]), numbered)
    chosen = reduce(g, ReduceKind.MAX, matches, [1], True)
    row = g.map([chosen], _tensor(element, [count, 1]), lambda b, xs: b.floor_div(xs[0], b.constant(cols, i64)))  # type: ignore[arg-type]
    col = g.map([chosen], _tensor(element, [count, 1]), lambda b, xs: b.remainder(xs[0], b.constant(cols, i64)))  # type: ignore[arg-type]
    pair = g.emit(ConcatOp([row, col], 1, _tensor(element, [count, 2])))
    return _move_dim(g, pair, 1, 0)


def _check_embedding_bag(node: torch.fx.Node) -> str | None:
    if fake_value(node.args[1]).dim() != 1:
        return "2-D indices"
    forward_only = str(node.target) == "aten._embedding_bag_forward_only.default"
    if forward_only and node_arguments(node)["include_last_offset"] and _used_outputs(node) & {2, 3}:
        return "bag_size or max_indices used with include_last_offset (torch's own shapes for them disagree)"
    return None


@converts("aten._embedding_bag_forward_only.default", "aten._embedding_bag.default", check=_check_embedding_bag)
def convert_embedding_bag(g: GraphImporter, node: torch.fx.Node) -> tuple[SSAValue | None, ...]:
    """(`_embedding_bag` is what a model exported with gradients on, such as an
    nn.EmbeddingBag outside torch.no_grad, calls; same schema and first output.)
    Bag b reduces the looked-up rows offsets[b] <= i < offsets[b + 1]: a
    [bags, N] membership mask over the N gathered rows (sum, mean or max; an
    empty bag gives zeros, as torch's does). The other outputs, when used, are
    torch's CPU ones: each index's bag, each bag's size (padding left out) and,
    for max, the index of the row each maximum came from (for mean, the sizes
    again); zeros (or empty) where torch gives zeros."""
    args = node_arguments(node)
    weight, indices, offsets = g.value(args["weight"]), cast(g, g.value(args["indices"]), i64), cast(g, g.value(args["offsets"]), i64)
    out = tensor_type_of(fake_value(node)[0])
    bags, width = out.get_shape()
    count = _shape(indices)[0]
    compute = opmath_type(out.element_type)
    starts = slice_dim(g, offsets, 0, 0, bags)
    if args["include_last_offset"]:
        ends = slice_dim(g, offsets, 0, 1, bags)
    else:
        last = g.map([], _tensor(i64, [1]), lambda b, xs: b.constant(count, i64))
        ends = g.emit(ConcatOp([slice_dim(g, offsets, 0, 1, bags - 1), last], 0, _tensor(i64, [bags]))) if bags > 1 else last
    padding = args["padding_idx"]
    position = reshape(g, ramp(g, count), [1, count])

    def member(b: ScalarBuilder, xs: list[Any]) -> SSAValue:
        start, end, i, index = xs
        inside = b.logical("and", b.compare("ge", i, start), b.compare("lt", i, end))
        if padding is not None and padding >= 0:
            inside = b.logical("and", inside, b.compare("ne", index, b.constant(padding, i64)))
        return inside

    members = g.map(
        [reshape(g, starts, [bags, 1]), reshape(g, ends, [bags, 1]), position, reshape(g, indices, [1, count])],
        _tensor(i1, [bags, count]), member,
    )
    rows = cast(g, gather_dim(g, weight, indices, 0), compute)
    if args["per_sample_weights"] is not None:
        scale = reshape(g, cast(g, g.value(args["per_sample_weights"]), compute), [count, 1])
        rows = g.map([rows, scale], rows.type, lambda b, xs: b.mul(xs[0], xs[1]))  # type: ignore[arg-type]
    mode = args["mode"]
    identity = float("-inf") if mode == 2 else 0.0
    spread = g.map(
        [reshape(g, members, [bags, count, 1]), reshape(g, rows, [1, count, width])], _tensor(compute, [bags, count, width]),
        lambda b, xs: b.select(xs[0], xs[1], b.constant(identity, compute)),  # type: ignore[arg-type]
    )
    combined = reduce(g, ReduceKind.MAX if mode == 2 else ReduceKind.SUM, spread, [1], False)
    sizes = reduce(g, ReduceKind.SUM, cast(g, members, i64), [1], True)

    def finish(b: ScalarBuilder, xs: list[Any]) -> SSAValue:
        total, size = xs[0], b.cast(xs[1], compute)
        empty = b.compare("eq", xs[1], b.constant(0, i64))
        value = b.div(total, size) if mode == 1 else total
        return b.select(empty, b.constant(0, compute), value)

    result = g.map([combined, sizes], out, finish)
    used = _used_outputs(node)
    types = [tensor_type_of(f) for f in fake_value(node)]
    offset2bag = _bag_of_each_index(g, offsets, count, bags, types[1]) if 1 in used else None
    bag_size = (_zeros(g, types[2]) if mode == 0 else cast(g, reshape(g, sizes, [bags]), types[2].element_type)) if 2 in used else None
    max_indices = None
    if 3 in used:  # torch's: zeros for sum, the bag sizes for mean
        if mode == 2:
            max_indices = _max_rows(g, spread, indices, sizes, types[3])
        else:
            max_indices = _zeros(g, types[3]) if mode == 0 else cast(g, reshape(g, sizes, [bags]), types[3].element_type)
    return result, offset2bag, bag_size, max_indices


def _zeros(g: GraphImporter, tensor_type: Any) -> SSAValue:
    return g.map([], tensor_type, lambda b, xs: b.constant(0, tensor_type.element_type))


def _bag_of_each_index(g: GraphImporter, offsets: SSAValue, count: int, bags: int, out: Any) -> SSAValue:
    """offset2bag: for index i, how many of offsets[1:] are <= i, at most bags - 1
    (empty when torch's is: sum mode without padding)."""
    if not out.get_shape()[0]:
        return _zeros(g, out)
    bounds = _shape(offsets)[0] - 1
    if bounds == 0:
        return _zeros(g, out)
    later = reshape(g, slice_dim(g, offsets, 0, 1, bounds), [1, bounds])
    passed = g.map(
        [later, reshape(g, ramp(g, count), [count, 1])], _tensor(i64, [count, bounds]),
        lambda b, xs: b.cast(b.compare("le", xs[0], xs[1]), i64),  # type: ignore[arg-type]
    )
    total = reduce(g, ReduceKind.SUM, passed, [1], False)
    return g.map([total], out, lambda b, xs: b.cast(b.minimum(xs[0], b.constant(bags - 1, i64)), out.element_type))  # type: ignore[arg-type]


def _max_rows(g: GraphImporter, spread: SSAValue, indices: SSAValue, sizes: SSAValue, out: Any) -> SSAValue:
    """max_indices: per bag and column, the index (a weight row) of the first
    member holding the maximum; 0 for an empty bag."""
    position = reduce(g, ReduceKind.ARGMAX, spread, [1], False, i64)
    rows = gather_dim(g, indices, reshape(g, position, [prod(_shape(position))]), 0)
    rows = reshape(g, rows, _shape(position))

    def pick(b: ScalarBuilder, xs: list[Any]) -> SSAValue:
        empty = b.compare("eq", xs[1], b.constant(0, i64))
        return b.cast(b.select(empty, b.constant(0, i64), xs[0]), out.element_type)

    return g.map([rows, sizes], out, pick)


_GRID_MODES = {0: "bilinear", 1: "nearest", 2: "bicubic"}
_GRID_PADDING = {0: "zeros", 1: "border", 2: "reflection"}
_BICUBIC_A = -0.75
"""The cubic convolution constant torch's bicubic sampling and upsampling use."""


@converts("aten.grid_sampler_2d.default")
def convert_grid_sampler(g: GraphImporter, node: torch.fx.Node) -> SSAValue:
    """Sampling at the grid's (x, y), unnormalized and, for border and
    reflection padding, clipped or reflected into the input as torch does.
    Bilinear: four gathers at data-dependent corners (clamped into range,
    zeroed outside it), blended by area weights in f32 in torch's order
    (north-west, north-east, south-west, south-east). Nearest: one gather at
    the rounded (half to even) position, zero outside the input. Bicubic: the
    4x4 points around the unpadded position, each padded on its own (see
    `_grid_bicubic`)."""
    args = node_arguments(node)
    value, grid = g.value(args["input"]), g.value(args["grid"])
    batch, channels, height, width = _shape(value)
    out = result_type(node)
    out_h, out_w = out.get_shape()[2:]
    aligned = bool(args["align_corners"])
    padding = _GRID_PADDING[args["padding_mode"]]
    compute = opmath_type(out.element_type)
    where_shape = [batch, 1, out_h, out_w]

    mode = _GRID_MODES[args["interpolation_mode"]]

    def coordinate(axis: int, size: int) -> SSAValue:
        part = reshape(g, slice_dim(g, grid, 3, axis, 1), where_shape)

        def source_index(b: ScalarBuilder, xs: list[Any]) -> SSAValue:
            one, half = b.constant(1.0, compute), b.constant(0.5, compute)
            c = b.cast(xs[0], compute)
            if aligned:
                c = b.mul(b.mul(b.add(c, one), half), b.constant(size - 1, compute))
            else:
                c = b.mul(b.sub(b.mul(b.add(c, one), b.constant(size, compute)), one), half)
            return c if mode == "bicubic" else _pad_coordinate(b, c, size, padding, aligned)

        return g.map([part], _tensor(compute, where_shape), source_index)

    x, y = coordinate(0, width), coordinate(1, height)
    batch_index = along(g, ramp(g, batch), 0, 4)
    channel_index = along(g, ramp(g, channels), 1, 4)
    source = cast(g, value, compute)
    if mode == "nearest":
        return _grid_nearest(g, source, x, y, width, height, batch_index, channel_index, out)
    if mode == "bicubic":
        taps_x = _bicubic_taps(g, x, width, padding, aligned)
        taps_y = _bicubic_taps(g, y, height, padding, aligned)
        return _grid_bicubic(g, source, x, y, taps_x, taps_y, batch_index, channel_index, out)
    total = None
    for dy, dx in ((0, 0), (0, 1), (1, 0), (1, 1)):
        total = _grid_corner(g, source, x, y, dx, dy, width, height, batch_index, channel_index, total, out, compute)
    assert total is not None
    return total


def _pad_coordinate(b: ScalarBuilder, c: SSAValue, size: int, padding: str, aligned: bool) -> SSAValue:
    """torch's compute_coordinates: `c` reflected (reflection padding) and clipped
    into [0, size - 1] (border and reflection padding); unchanged for zeros."""
    if padding == "reflection":
        c = _reflect(b, c, 0 if aligned else -1, 2 * (size - 1) if aligned else 2 * size - 1)
    if padding != "zeros":
        c = b.minimum(b.maximum(c, b.constant(0.0, c.type)), b.constant(size - 1, c.type))
    return c


def _reflect(b: ScalarBuilder, c: SSAValue, twice_low: int, twice_high: int) -> SSAValue:
    """torch's reflect_coordinates: `c` reflected off low and high (given doubled)
    until it lies between them."""
    if twice_low == twice_high:
        return b.constant(0.0, c.type)
    low, span = b.constant(twice_low / 2, c.type), b.constant((twice_high - twice_low) / 2, c.type)
    distance = b.abs(b.sub(c, low))
    extra = b.fmod(distance, span)
    flips = b.unary("floor", b.div(distance, span))
    two = b.constant(2.0, c.type)
    even = b.compare("eq", b.sub(flips, b.mul(two, b.unary("floor", b.div(flips, two)))), b.constant(0.0, c.type))
    return b.select(even, b.add(extra, low), b.add(b.sub(span, extra), low))


def _grid_nearest(
    g: GraphImporter, source: SSAValue, x: SSAValue, y: SSAValue, width: int, height: int,
    batch_index: SSAValue, channel_index: SSAValue, out: Any,
) -> SSAValue:
    """source at the nearest (half to even) position, zero outside the input."""
    where = _shape(x)

    def rounded(size: int) -> Any:
        def index(b: ScalarBuilder, xs: list[Any]) -> SSAValue:
            at = b.cast(b.unary("round", xs[0]), i64)
            return b.minimum(b.maximum(at, b.constant(0, i64)), b.constant(size - 1, i64))

        return index

    ix = g.map([x], _tensor(i64, where), rounded(width))
    iy = g.map([y], _tensor(i64, where), rounded(height))
    compute = _element(source)
    picked = g.emit(GatherOp(source, [batch_index, channel_index, iy, ix], 0, _tensor(compute, [*_shape(source)[:2], *where[2:]])))

    def keep(b: ScalarBuilder, xs: list[Any]) -> SSAValue:
        inside = b.constant(True, i1)
        for position, size in ((xs[0], width), (xs[1], height)):
            r = b.unary("round", position)
            inside = b.logical("and", inside, b.logical("and", b.compare("ge", r, b.constant(0.0, compute)), b.compare("le", r, b.constant(size - 1, compute))))
        return b.select(inside, xs[2], b.constant(0.0, compute))

    return g.map([x, y, picked], out, keep)


def _grid_corner(
    g: GraphImporter, source: SSAValue, x: SSAValue, y: SSAValue, dx: int, dy: int, width: int, height: int,
    batch_index: SSAValue, channel_index: SSAValue, total: SSAValue | None, out: Any, compute: Any,
) -> SSAValue:
    """total + weight * source[corner] for one corner of each sample's cell."""
    where = _shape(x)

    def corner(size: int, offset: int) -> Any:
        def index(b: ScalarBuilder, xs: list[Any]) -> SSAValue:
            at = b.add(b.cast(b.unary("floor", xs[0]), i64), b.constant(offset, i64))
            return b.minimum(b.maximum(at, b.constant(0, i64)), b.constant(size - 1, i64))

        return index

    ix = g.map([x], _tensor(i64, where), corner(width, dx))
    iy = g.map([y], _tensor(i64, where), corner(height, dy))
    picked = g.emit(GatherOp(source, [batch_index, channel_index, iy, ix], 0, _tensor(compute, [*_shape(source)[:2], *where[2:]])))

    def blend(b: ScalarBuilder, xs: list[Any]) -> SSAValue:
        px, py, v = xs[0], xs[1], xs[2]
        fx, fy = b.unary("floor", px), b.unary("floor", py)
        cx, cy = b.add(fx, b.constant(dx, compute)), b.add(fy, b.constant(dy, compute))
        wx = b.sub(px, fx) if dx else b.sub(b.add(fx, b.constant(1.0, compute)), px)
        wy = b.sub(py, fy) if dy else b.sub(b.add(fy, b.constant(1.0, compute)), py)
        inside = b.logical(
            "and",
            b.logical("and", b.compare("ge", cx, b.constant(0, compute)), b.compare("lt", cx, b.constant(width, compute))),
            b.logical("and", b.compare("ge", cy, b.constant(0, compute)), b.compare("lt", cy, b.constant(height, compute))),
        )
        term = b.select(inside, b.mul(v, b.mul(wx, wy)), b.constant(0.0, compute))
        return b.add(xs[3], term) if len(xs) > 3 else term

    inputs = [x, y, picked] + ([total] if total is not None else [])
    last = (dy, dx) == (1, 1)
    return g.map(inputs, out if last else _tensor(compute, _shape(picked)), blend)


def _bicubic_taps(g: GraphImporter, position: SSAValue, size: int, padding: str, aligned: bool) -> list[tuple[SSAValue, SSAValue]]:
    """For k = 0..3, (padded coordinate, clamped i64 index) of the tap
    floor(position) - 1 + k: the coordinate says whether the tap is inside the
    input (zeros padding leaves it outside), the index is where to gather."""
    where, compute = _shape(position), _element(position)

    def clamped(b: ScalarBuilder, xs: list[Any]) -> SSAValue:
        at = b.cast(xs[0], i64)
        return b.minimum(b.maximum(at, b.constant(0, i64)), b.constant(size - 1, i64))

    taps = []
    for k in range(4):

        def padded(b: ScalarBuilder, xs: list[Any], offset: int = k - 1) -> SSAValue:
            tap = b.add(b.unary("floor", xs[0]), b.constant(float(offset), compute))
            return _pad_coordinate(b, tap, size, padding, aligned)

        coordinate = g.map([position], _tensor(compute, where), padded)
        taps.append((coordinate, g.map([coordinate], _tensor(i64, where), clamped)))
    return taps


def _cubic_weights(b: ScalarBuilder, t: SSAValue) -> list[SSAValue]:
    """torch's get_cubic_upsample_coefficients: the weights of the taps at
    distance 1 + t, t, 1 - t and 2 - t from a sample with fractional part t."""
    one, a = b.constant(1.0, t.type), b.constant(_BICUBIC_A, t.type)

    def near(x: SSAValue) -> SSAValue:  # ((A + 2) x - (A + 3)) x x + 1 for |x| <= 1
        inner = b.sub(b.mul(b.constant(_BICUBIC_A + 2, t.type), x), b.constant(_BICUBIC_A + 3, t.type))
        return b.add(b.mul(b.mul(inner, x), x), one)

    def far(x: SSAValue) -> SSAValue:  # ((A x - 5 A) x + 8 A) x - 4 A for 1 < |x| < 2
        inner = b.sub(b.mul(a, x), b.constant(5 * _BICUBIC_A, t.type))
        return b.sub(b.mul(b.add(b.mul(inner, x), b.constant(8 * _BICUBIC_A, t.type)), x), b.constant(4 * _BICUBIC_A, t.type))

    rest = b.sub(one, t)
    return [far(b.add(t, one)), near(t), near(rest), far(b.add(rest, one))]


def _cubic_blend(b: ScalarBuilder, position: SSAValue, values: list[SSAValue]) -> SSAValue:
    """sum_k weight_k * value_k, in torch's order, for the fractional part of `position`."""
    weights = _cubic_weights(b, b.sub(position, b.unary("floor", position)))
    total = b.mul(weights[0], values[0])
    for weight, value in zip(weights[1:], values[1:]):
        total = b.add(total, b.mul(weight, value))
    return total


def _grid_bicubic(
    g: GraphImporter, source: SSAValue, x: SSAValue, y: SSAValue, taps_x: list[tuple[SSAValue, SSAValue]],
    taps_y: list[tuple[SSAValue, SSAValue]], batch_index: SSAValue, channel_index: SSAValue, out: Any,
) -> SSAValue:
    """torch's bicubic grid sampling (A = -0.75): for each of the 4 rows of taps,
    4 gathers blended along x (a tap outside the input reads 0), then the 4 rows
    blended along y."""
    height, width = _shape(source)[2:]
    compute = _element(source)
    blended_shape = [*_shape(source)[:2], *_shape(x)[2:]]

    def inside(b: ScalarBuilder, coordinate: SSAValue, size: int) -> SSAValue:
        return b.logical("and", b.compare("ge", coordinate, b.constant(0.0, compute)), b.compare("le", coordinate, b.constant(size - 1, compute)))

    def row_blend(b: ScalarBuilder, xs: list[Any]) -> SSAValue:
        position, row, columns, picked = xs[0], xs[1], xs[2:6], xs[6:10]
        row_inside = inside(b, row, height)
        values = [
            b.select(b.logical("and", row_inside, inside(b, column, width)), value, b.constant(0.0, compute))
            for column, value in zip(columns, picked)
        ]
        return _cubic_blend(b, position, values)

    rows = []
    for row, row_index in taps_y:
        picked = [
            g.emit(GatherOp(source, [batch_index, channel_index, row_index, column_index], 0, _tensor(compute, blended_shape)))
            for _, column_index in taps_x
        ]
        rows.append(g.map([x, row, *[column for column, _ in taps_x], *picked], _tensor(compute, blended_shape), row_blend))
    return g.map([y, *rows], out, lambda b, xs: _cubic_blend(b, xs[0], xs[1:]))  # type: ignore[arg-type]


__all__ = ["ramp", "along", "gather_dim", "take_along", "sort_along", "triangle_indices"]
