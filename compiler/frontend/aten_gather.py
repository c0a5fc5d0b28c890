"""ATen data movement as `rdu.gather` by index tensors built from `rdu.iota`
ramps and `rdu.map` (index_select, flip, gather, diagonal, unfold, as_strided,
padding, repeat, tril/triu_indices, embedding_bag). Every index tensor is a
small i64 ramp or map that the fusion passes place next to the gather.
"""

from __future__ import annotations

from math import prod
from typing import Any

import torch
from xdsl.dialects.builtin import i1, i64
from xdsl.ir import SSAValue

from rducc.dialects.rdu.dataflow import (
    BroadcastOp,
    ConcatOp,
    GatherOp,
    ReduceKind,
    TransposeOp,
)
from rducc.frontend.aten_build import (
    along,
    cast,
    gather_dim,
    move_dim,
    pad_dim,
    ramp,
    reduce,
    reshape,
    slice_dim,
    take_along,
    triangle_indices,
)
from rducc.frontend.aten_common import (
    element_of,
    normalize_dims,
    result_type,
    shape_of,
    tensor_of,
    used_outputs,
)
from rducc.frontend.converter_api import GraphImporter, converts, fake_value, node_arguments, positional
from rducc.frontend.scalar import ScalarBuilder, opmath_type
from rducc.frontend.types import tensor_type_of


@converts("aten.index_select.default")
def convert_index_select(g: GraphImporter, node: torch.fx.Node) -> SSAValue:
    value, index = g.value(positional(node)[0]), g.value(positional(node)[2])
    dim = positional(node)[1] % max(len(shape_of(value)), 1)
    flat = reshape(g, cast(g, index, i64), [prod(shape_of(index))])
    if not shape_of(value):  # a rank-0 tensor is read as one element (eager's result is rank 0)
        picked = gather_dim(g, reshape(g, value, [1]), flat, 0)
        return reshape(g, picked, list(fake_value(node).shape))
    return gather_dim(g, value, flat, dim)


@converts("aten.flip.default")
def convert_flip(g: GraphImporter, node: torch.fx.Node) -> SSAValue:
    """Each flipped dim is a gather by a descending ramp."""
    value = g.value(positional(node)[0])
    rank = len(shape_of(value))
    for dim in normalize_dims(positional(node)[1], rank) if positional(node)[1] else []:
        size = shape_of(value)[dim]
        value = gather_dim(g, value, ramp(g, size, size - 1, -1), dim)
    return value


@converts("aten.gather.default")
def convert_gather(g: GraphImporter, node: torch.fx.Node) -> SSAValue:
    """out[i][j][k] = x[i][index[i][j][k]][k] (dim 1): an rdu.gather of every dim,
    by `index` along `dim` and by ramps along the others."""
    args = node_arguments(node)
    value, index = g.value(args["self"]), g.value(args["index"])
    rank = len(shape_of(value))
    dim = args["dim"] % max(rank, 1)
    if rank == 0:  # the index's shape, [] or [1]
        return reshape(g, value, result_type(node).get_shape())
    return take_along(g, value, cast(g, index, i64), dim)


@converts("aten.diagonal.default")
def convert_diagonal(g: GraphImporter, node: torch.fx.Node) -> SSAValue:
    """The two dims move to the front, a two-index gather takes the diagonal,
    and the diagonal dim moves to the end (as torch.diagonal returns it)."""
    args = node_arguments(node)
    value = g.value(args["self"])
    rank = len(shape_of(value))
    first, second, offset = args["dim1"] % rank, args["dim2"] % rank, args["offset"]
    length = result_type(node).get_shape()[-1]
    value = move_dim(g, value, first, 0)
    value = move_dim(g, value, second if second > first else second + 1, 1)
    rows = ramp(g, length, max(0, -offset))
    cols = ramp(g, length, max(0, offset))
    rest = list(shape_of(value)[2:])
    diagonal = g.emit(GatherOp(value, [rows, cols], 0, tensor_of(element_of(value), [length, *rest])))
    return move_dim(g, diagonal, 0, rank - 2)


@converts("aten.unfold.default")
def convert_unfold(g: GraphImporter, node: torch.fx.Node) -> SSAValue:
    """Windows of `size` every `step` along `dim`, the window dim appended last."""
    value = g.value(positional(node)[0])
    rank = len(shape_of(value))
    if rank == 0:
        return reshape(g, value, [1])
    dim, size, step = positional(node)[1] % rank, positional(node)[2], positional(node)[3]
    count = (shape_of(value)[dim] - size) // step + 1
    starts = reshape(g, ramp(g, count, 0, step), [count, 1])
    offsets = reshape(g, ramp(g, size), [1, size])
    index = g.map([starts, offsets], tensor_of(i64, [count, size]), lambda b, xs: b.add(xs[0], xs[1]))  # type: ignore[arg-type]
    shape = list(shape_of(value))
    windows = g.emit(
        GatherOp(value, [index], dim, tensor_of(element_of(value), shape[:dim] + [count, size] + shape[dim + 1 :]))
    )
    return move_dim(g, windows, dim + 1, rank)


def _owns_storage(value: torch.Tensor, is_input: bool) -> bool:
    """Whether `value` is its whole storage, in any dim order (row-major, channels-last, ...).
    A program input is taken as its storage (the program receives nothing more; torch's
    fake storage of a permuted input can be larger than the tensor)."""
    dense = value.is_contiguous() or torch._prims_common.is_non_overlapping_and_dense_or_false(value)
    whole = value.numel() * value.element_size()
    nbytes = value.untyped_storage().nbytes()
    return dense and value.storage_offset() == 0 and (nbytes == whole or is_input and nbytes >= whole)


def memory_order(value: torch.Tensor) -> list[int]:
    """The dims from the slowest to the fastest in memory: permuted so, the value
    is its storage in row-major order (the identity for a contiguous tensor)."""
    if value.is_contiguous():
        return list(range(value.dim()))
    return sorted(range(value.dim()), key=lambda d: (-value.stride()[d], -d))


def _storage_owner(node: torch.fx.Node) -> torch.fx.Node | None:
    """The node whose value is the whole storage that as_strided's input views
    (the input itself, or the earlier node it is a view of), if there is one."""
    source = positional(node)[0]
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
            and _owns_storage(value, candidate.op == "placeholder")
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
    order = memory_order(fake_value(owner))
    if order != sorted(order):  # channels-last and other dense layouts: the storage's order first
        shape = shape_of(value)
        value = g.emit(TransposeOp(value, order, tensor_of(element_of(value), [shape[d] for d in order])))
    size, stride = list(args["size"]), list(args["stride"])
    offset = args["storage_offset"]
    if offset is None:  # torch's default: the input view's own offset into the storage
        offset = fake_value(args["self"]).storage_offset()
    flat = reshape(g, value, [prod(shape_of(value))])
    if not size:
        index = g.map([], tensor_of(i64, []), lambda b, xs: b.constant(offset, i64))
        return reshape(g, gather_dim(g, flat, reshape(g, index, [1]), 0), [])
    terms = [along(g, ramp(g, n, 0, s), d, len(size)) for d, (n, s) in enumerate(zip(size, stride))]

    def body(b: ScalarBuilder, xs: list[Any]) -> SSAValue:
        total = b.constant(offset, i64)
        for term in xs:
            total = b.add(total, term)
        return total

    index = g.map(terms, tensor_of(i64, size), body)
    return g.emit(GatherOp(flat, [index], 0, result_type(node)))


@converts("aten.constant_pad_nd.default")
def convert_constant_pad(g: GraphImporter, node: torch.fx.Node) -> SSAValue:
    """Pads (before, after) pairs from the last dim backwards: negative pads
    slice, positive ones concatenate a fill."""
    args = node_arguments(node)
    value = g.value(args["self"])
    rank = len(shape_of(value))
    pads = list(args["pad"])
    fill_value = args["value"]
    for i in range(len(pads) // 2):
        value = pad_dim(g, value, rank - 1 - i, pads[2 * i], pads[2 * i + 1], fill_value)
    return value


@converts("aten.repeat.default")
def convert_repeat(g: GraphImporter, node: torch.fx.Node) -> SSAValue:
    """Tiles: [s0, s1] -> [1, s0, 1, s1] -> broadcast [r0, s0, r1, s1] -> [r0*s0, r1*s1]."""
    value = g.value(positional(node)[0])
    repeats = list(positional(node)[1])
    shape = [1] * (len(repeats) - len(shape_of(value))) + list(shape_of(value))
    interleaved = [n for size in shape for n in (1, size)]
    tiled = [n for r, size in zip(repeats, shape) for n in (r, size)]
    spread = reshape(g, value, interleaved)
    if tiled != interleaved:
        spread = g.emit(BroadcastOp(spread, tensor_of(element_of(value), tiled)))
    return reshape(g, spread, result_type(node).get_shape())


@converts("aten.tril_indices.default", "aten.triu_indices.default")
def convert_triangle_indices(g: GraphImporter, node: torch.fx.Node) -> SSAValue:
    args = node_arguments(node)
    out = result_type(node)
    lower = str(node.target) == "aten.tril_indices.default"
    return triangle_indices(g, args["row"], args["col"], args["offset"], lower, out.get_shape()[1], out.element_type)


def _check_embedding_bag(node: torch.fx.Node) -> str | None:
    if fake_value(positional(node)[1]).dim() != 1:
        return "2-D indices"
    forward_only = str(node.target) == "aten._embedding_bag_forward_only.default"
    if forward_only and node_arguments(node)["include_last_offset"] and used_outputs(node) & {2, 3}:
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
    weight, indices, offsets = (
        g.value(args["weight"]),
        cast(g, g.value(args["indices"]), i64),
        cast(g, g.value(args["offsets"]), i64),
    )
    out = tensor_type_of(fake_value(node)[0])
    bags, width = out.get_shape()
    count = shape_of(indices)[0]
    compute = opmath_type(out.element_type)
    starts = slice_dim(g, offsets, 0, 0, bags)
    if args["include_last_offset"]:
        ends = slice_dim(g, offsets, 0, 1, bags)
    else:
        last = g.map([], tensor_of(i64, [1]), lambda b, xs: b.constant(count, i64))
        ends = (
            g.emit(ConcatOp([slice_dim(g, offsets, 0, 1, bags - 1), last], 0, tensor_of(i64, [bags])))
            if bags > 1
            else last
        )
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
        tensor_of(i1, [bags, count]), member,
    )
    rows = cast(g, gather_dim(g, weight, indices, 0), compute)
    if args["per_sample_weights"] is not None:
        scale = reshape(g, cast(g, g.value(args["per_sample_weights"]), compute), [count, 1])
        rows = g.map([rows, scale], rows.type, lambda b, xs: b.mul(xs[0], xs[1]))  # type: ignore[arg-type]
    mode = args["mode"]
    identity = float("-inf") if mode == 2 else 0.0
    spread = g.map(
        [reshape(g, members, [bags, count, 1]), reshape(g, rows, [1, count, width])],
        tensor_of(compute, [bags, count, width]),
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
    used = used_outputs(node)
    types = [tensor_type_of(f) for f in fake_value(node)]
    offset2bag = _bag_of_each_index(g, offsets, count, bags, types[1]) if 1 in used else None
    bag_size = (
        (_zeros(g, types[2]) if mode == 0 else cast(g, reshape(g, sizes, [bags]), types[2].element_type))
        if 2 in used
        else None
    )
    max_indices = None
    if 3 in used:  # torch's: zeros for sum, the bag sizes for mean
        if mode == 2:
            max_indices = _max_rows(g, spread, indices, sizes, types[3])
        else:
            max_indices = (
                _zeros(g, types[3]) if mode == 0 else cast(g, reshape(g, sizes, [bags]), types[3].element_type)
            )
    return result, offset2bag, bag_size, max_indices


def _zeros(g: GraphImporter, tensor_type: Any) -> SSAValue:
    return g.map([], tensor_type, lambda b, xs: b.constant(0, tensor_type.element_type))


def _bag_of_each_index(g: GraphImporter, offsets: SSAValue, count: int, bags: int, out: Any) -> SSAValue:
    """offset2bag: for index i, how many of offsets[1:] are <= i, at most bags - 1
    (empty when torch's is: sum mode without padding)."""
    if not out.get_shape()[0]:
        return _zeros(g, out)
    bounds = shape_of(offsets)[0] - 1
    if bounds == 0:
        return _zeros(g, out)
    later = reshape(g, slice_dim(g, offsets, 0, 1, bounds), [1, bounds])
    passed = g.map(
        [later, reshape(g, ramp(g, count), [count, 1])], tensor_of(i64, [count, bounds]),
        lambda b, xs: b.cast(b.compare("le", xs[0], xs[1]), i64),  # type: ignore[arg-type]
    )
    total = reduce(g, ReduceKind.SUM, passed, [1], False)
    return g.map([total], out, lambda b, xs: b.cast(b.minimum(xs[0], b.constant(bags - 1, i64)), out.element_type))  # type: ignore[arg-type]


def _max_rows(g: GraphImporter, spread: SSAValue, indices: SSAValue, sizes: SSAValue, out: Any) -> SSAValue:
    """max_indices: per bag and column, the index (a weight row) of the first
    member holding the maximum; 0 for an empty bag."""
    position = reduce(g, ReduceKind.ARGMAX, spread, [1], False, i64)
    rows = gather_dim(g, indices, reshape(g, position, [prod(shape_of(position))]), 0)
    rows = reshape(g, rows, shape_of(position))

    def pick(b: ScalarBuilder, xs: list[Any]) -> SSAValue:
        empty = b.compare("eq", xs[1], b.constant(0, i64))
        return b.cast(b.select(empty, b.constant(0, i64), xs[0]), out.element_type)

    return g.map([rows, sizes], out, pick)
