"""Canonicalization patterns of the `rdu` dialect, attached to their ops.

Each op that has patterns carries `RduCanonicalization` (xDSL's
`HasCanonicalizationPatternsTrait`), so the stock `canonicalize` pass and
`rdu-canonicalize` both apply them:

- layout ops that do nothing are removed (same-type reshape/broadcast,
  identity transpose); chains of reshapes, of transposes or of slices become
  one (a slice of a slice reads one window of the input); a slice of a
  reshape that only adds or drops dims of size 1 slices before it (`kv[i, 0]`
  of a stacked cache: one window of `kv`, which rdu-partition splits by heads);
  a scatter of such a reshape scatters before it (`cache[:, pos] = k` on a
  cache [1, positions, ...]: an update of the cache itself);
  a transpose of a value with dims of size 1 transposes only the other dims,
  between reshapes (an einsum's `unsqueeze, permute, permute, view` before a
  product becomes a reshape and, at most, a swap of the last two dims);
- a concat drops its operands with no elements (one left: that operand); a
  concat of copies of one value is a broadcast of it between reshapes (`cat([k] * g)`
  is `k.repeat`, `stack([k] * g)` a broadcast of a unit dim); a sum of the
  consecutive equal slices that tile a dim is a sum over a new dim of their
  count (the gradient of those copies: autograd adds up the copies' slices);
- a transpose of a matmul's (or grouped matmul's) rhs that swaps its last two
  dims folds into it as `transpose_rhs` (the PMU transpose crossbar reads it
  for free); a batched matmul whose rhs is one matrix broadcast over the batch
  (torch's `x @ w.T` on a 3-d `x` it does not fold: transpose, expand, bmm)
  is one matmul of the batch's rows by that matrix, between reshapes (no
  copy of the weight per batch entry); a rhs reshaped only to add unit batch
  dims (an einsum's weight viewed [1, K, N]) is read as the weight itself;
- constants fold: a fill (an input-less `rdu.map`) read by a map becomes a
  constant in that map's body; a layout op of a fill is a fill.
"""

from __future__ import annotations

from functools import cache

from xdsl.dialects import arith
from xdsl.dialects.builtin import TensorType
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue
from xdsl.pattern_rewriter import (
    PatternRewriter,
    RewritePattern,
    op_type_rewrite_pattern,
)

from rducc.dialects.rdu.dataflow import (
    BroadcastOp,
    ConcatOp,
    GroupedMatmulOp,
    MapOp,
    MatmulOp,
    ReduceKind,
    ReduceOp,
    ReshapeOp,
    ScatterOp,
    SliceOp,
    TransposeOp,
    YieldOp,
    register_canonicalization,
)
from rducc.dialects.shapes import element_of, shape_of


def _copy_attributes(source: Operation, target: Operation) -> Operation:
    target.attributes.update(source.attributes)
    target.location = source.location
    return target


class RemoveIdentityLayout(RewritePattern):
    """reshape/broadcast to the same type, or an identity transpose, is its input."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if isinstance(op, ReshapeOp | BroadcastOp) and op.input.type == op.result.type:
            rewriter.replace_op(op, [], [op.input])
        elif isinstance(op, TransposeOp) and list(op.perm.get_values()) == sorted(op.perm.get_values()):
            rewriter.replace_op(op, [], [op.input])


class ComposeReshapes(RewritePattern):
    """reshape(reshape(x)) -> reshape(x)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: ReshapeOp, rewriter: PatternRewriter) -> None:
        inner = op.input.owner
        if isinstance(inner, ReshapeOp):
            rewriter.replace_op(op, _copy_attributes(op, ReshapeOp(inner.input, op.result.type)))


class ComposeTransposes(RewritePattern):
    """transpose(transpose(x, p), q) -> transpose(x, p[q])."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: TransposeOp, rewriter: PatternRewriter) -> None:
        inner = op.input.owner
        if isinstance(inner, TransposeOp):
            first = inner.perm.get_values()
            perm = [first[p] for p in op.perm.get_values()]
            rewriter.replace_op(op, _copy_attributes(op, TransposeOp(inner.input, perm, op.result.type)))


class ComposeSlices(RewritePattern):
    """slice(slice(x, o1, s1), o2, s2) -> slice(x, o1 + o2 * s1, s1 * s2)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: SliceOp, rewriter: PatternRewriter) -> None:
        inner = op.input.owner
        if isinstance(inner, SliceOp):
            o1, s1 = inner.offsets.get_values(), inner.strides.get_values()
            o2, s2 = op.offsets.get_values(), op.strides.get_values()
            offsets = [int(a + b * s) for a, b, s in zip(o1, o2, s1)]
            strides = [int(a * b) for a, b in zip(s1, s2)]
            rewriter.replace_op(op, _copy_attributes(op, SliceOp(inner.input, offsets, strides, op.result.type)))


def _non_unit(shape: tuple[int, ...]) -> list[int]:
    return [dim for dim, size in enumerate(shape) if size != 1]


class SliceBeforeUnitReshape(RewritePattern):
    """slice(reshape(x)) -> reshape(slice(x)) when the reshape only adds or drops
    dims of size 1 (`kv[i, 0]`: a select is a slice and such a reshape), so that
    chained selects of a stacked input become one slice of it (`ComposeSlices`)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: SliceOp, rewriter: PatternRewriter) -> None:
        inner = op.input.owner
        middle_type, result_type = op.input.type, op.result.type
        if not isinstance(inner, ReshapeOp) or not isinstance(inner.input.type, TensorType):
            return
        if not isinstance(middle_type, TensorType) or not isinstance(result_type, TensorType):
            return
        source, middle = tuple(inner.input.type.get_shape()), tuple(middle_type.get_shape())
        kept_in, kept_mid = _non_unit(source), _non_unit(middle)
        if [source[d] for d in kept_in] != [middle[d] for d in kept_mid]:
            return  # the reshape regroups elements
        offsets, strides = op.offsets.get_values(), op.strides.get_values()
        sizes = result_type.get_shape()
        new_offsets, new_strides, new_sizes = [0] * len(source), [1] * len(source), list(source)
        for dim_in, dim_mid in zip(kept_in, kept_mid):
            new_offsets[dim_in], new_strides[dim_in] = int(offsets[dim_mid]), int(strides[dim_mid])
            new_sizes[dim_in] = sizes[dim_mid]
        window = SliceOp(inner.input, new_offsets, new_strides, TensorType(result_type.element_type, new_sizes))
        _copy_attributes(op, window)
        rewriter.replace_op(op, [window, _copy_attributes(op, ReshapeOp(window.result, result_type))])


class TransposeWithoutUnitDims(RewritePattern):
    """A transpose of a value with dims of size 1 (an einsum's unsqueezes and
    permutes) -> reshape (the unit dims dropped), transpose of the other dims,
    reshape (to the result): the unit dims' moves do nothing, and the reshapes
    compose with their neighbours (`ComposeReshapes`), so that a chain such as
    torch.einsum's `unsqueeze, permute, permute, view` feeding a product becomes
    one reshape and a transpose of the non-unit dims (`FoldTransposeIntoMatmul`
    when it swaps the last two; none when it is the identity)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: TransposeOp, rewriter: PatternRewriter) -> None:
        source_type, result_type = op.input.type, op.result.type
        if not isinstance(source_type, TensorType) or not isinstance(result_type, TensorType):
            return
        shape = tuple(source_type.get_shape())
        kept = _non_unit(shape)
        if not kept or len(kept) == len(shape):
            return
        perm = [int(p) for p in op.perm.get_values()]
        order = [kept.index(p) for p in perm if shape[p] != 1]
        squeezed = TensorType(source_type.element_type, [shape[d] for d in kept])
        new_ops: list[Operation] = [_copy_attributes(op, ReshapeOp(op.input, squeezed))]
        if order != sorted(order):
            moved = TensorType(source_type.element_type, [shape[kept[i]] for i in order])
            new_ops.append(_copy_attributes(op, TransposeOp(new_ops[-1].results[0], order, moved)))
        new_ops.append(_copy_attributes(op, ReshapeOp(new_ops[-1].results[0], result_type)))
        rewriter.replace_op(op, new_ops)


class ScatterBeforeUnitReshape(RewritePattern):
    """scatter(reshape(x), index, source) -> reshape(scatter(x, index', source')) when
    the reshape only adds, drops or moves dims of size 1 and the scattered dim is
    not one of them (`cache[:, pos] = k` on a [1, positions, heads, dim] cache
    imports as a scatter along dim 0 of the cache viewed [positions, 1, ...]):
    the index and source take x's layout by the same kind of reshape, so the
    update is a scatter of x itself (an update in place, `rducc.dialects.streamed`)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: ScatterOp, rewriter: PatternRewriter) -> None:
        inner = op.input.owner
        if not isinstance(inner, ReshapeOp) or not all(isinstance(t, TensorType) for t in (
                inner.input.type, op.input.type, op.index.type, op.source.type)):
            return
        source, middle, index = shape_of(inner.input.type), shape_of(op.input.type), shape_of(op.index.type)
        kept_in, kept_mid, dim = _non_unit(source), _non_unit(middle), op.dim.value.data
        if ([source[d] for d in kept_in] != [middle[d] for d in kept_mid] or dim not in kept_mid
                or any(index[d] != 1 for d in range(len(middle)) if d not in kept_mid)):
            return
        sizes = [1] * len(source)
        for dim_in, dim_mid in zip(kept_in, kept_mid):
            sizes[dim_in] = index[dim_mid]
        new_ops: list[Operation] = [
            _copy_attributes(op, ReshapeOp(operand, TensorType(element_of(operand.type), sizes)))
            for operand in (op.index, op.source)]
        new_dim = kept_in[kept_mid.index(dim)]
        new_ops.append(_copy_attributes(op, ScatterOp(inner.input, new_ops[0].results[0], new_ops[1].results[0],
                                                      new_dim, op.reduce.data if op.reduce else None)))
        new_ops.append(_copy_attributes(op, ReshapeOp(new_ops[-1].results[0], op.result.type)))
        rewriter.replace_op(op, new_ops)


class DropEmptyConcatOperands(RewritePattern):
    """concat(a, empty, b) -> concat(a, b); a concat left with one operand is it."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: ConcatOp, rewriter: PatternRewriter) -> None:
        kept = [v for v in op.inputs if isinstance(v.type, TensorType) and 0 not in v.type.get_shape()]
        if len(kept) == len(op.inputs) or not kept:
            return
        if len(kept) == 1:
            rewriter.replace_op(op, [], [kept[0]])
        else:
            rewriter.replace_op(op, _copy_attributes(op, ConcatOp(kept, op.dim.value.data, op.result.type)))


class ConcatOfCopiesIsBroadcast(RewritePattern):
    """concat(x, x, ..., x) along dim d -> reshape(broadcast(reshape(x))): the n copies
    a new dim of n before d, merged into it (`torch.cat([k] * g, 1)` is `k.repeat(1, g,
    1, 1)`, `torch.stack([k] * g, 2)` a broadcast of a unit dim), so every spelling of a
    tiled repeat is the one the partitioner splits (heads tiled for grouped-query attention)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: ConcatOp, rewriter: PatternRewriter) -> None:
        first = op.inputs[0]
        if len(op.inputs) < 2 or any(v is not first for v in op.inputs) or not isinstance(first.type, TensorType):
            return
        dim, shape = op.dim.value.data, shape_of(first.type)
        element = element_of(first.type)
        unit = ReshapeOp(first, TensorType(element, [*shape[:dim], 1, *shape[dim:]]))
        copies = BroadcastOp(unit.result, TensorType(element, [*shape[:dim], len(op.inputs), *shape[dim:]]))
        ops = [_copy_attributes(op, unit), _copy_attributes(op, copies),
               _copy_attributes(op, ReshapeOp(copies.result, op.result.type))]
        rewriter.replace_op(op, ops)


def _adds_inputs(op: MapOp) -> bool:
    """Whether a map's body adds up its inputs, each once (a tree of `arith.addf`)."""
    block = op.body.block
    *body, last = list(block.ops)
    adds = [add for add in body if isinstance(add, arith.AddfOp)]
    if not adds or len(adds) != len(body) or len(adds) != len(block.args) - 1 or not isinstance(last, YieldOp):
        return False
    read = [v for add in adds for v in add.operands] + [last.values[0]]
    return len(set(read)) == len(read) and set(read) == {*block.args, *(add.result for add in adds)}


def _summands(op: MapOp) -> list[SSAValue]:
    """The values a sum of maps adds up: its inputs, and those of the sums it reads that nothing else reads."""
    found: list[SSAValue] = []
    for value in op.inputs:
        inner = value.owner
        if (isinstance(inner, MapOp) and value.has_one_use() and value.type == op.result.type
                and _adds_inputs(inner)):
            found.extend(_summands(inner))
        else:
            found.append(value)
    return found


def _window(value: SSAValue) -> tuple[SliceOp, Attribute | None] | None:
    """(the slice, the type it is reshaped to or None) when `value` is a slice or a reshape of one."""
    owner = value.owner
    if isinstance(owner, ReshapeOp) and isinstance(owner.input.owner, SliceOp):
        return owner.input.owner, owner.result.type
    return (owner, None) if isinstance(owner, SliceOp) else None


def _tiled_dim(slices: list[SliceOp]) -> tuple[int, int] | None:
    """(dim, length) when the slices, unit-strided windows of one value whole but along
    one dim, are its consecutive blocks of that length, each once, tiling the dim."""
    source = shape_of(slices[0].input.type)
    cut: set[int] = set()
    starts = []
    for window in slices:
        sizes, offsets = shape_of(window.result.type), window.offsets.get_values()
        if window.input is not slices[0].input or any(s != 1 for s in window.strides.get_values()):
            return None
        dims = [d for d, (a, b) in enumerate(zip(source, sizes)) if a != b]
        if len(dims) != 1 or any(offsets[d] for d in range(len(source)) if d != dims[0]):
            return None
        cut.add(dims[0])
        starts.append(int(offsets[dims[0]]))
    if len(cut) != 1:
        return None
    dim = cut.pop()
    length = shape_of(slices[0].result.type)[dim]
    if sorted(starts) != list(range(0, source[dim], length)) or length * len(slices) != source[dim]:
        return None
    return dim, length


class SumOfSlicesIsReduce(RewritePattern):
    """add(x[.., 0:L], x[.., L:2L], ..., x[.., (g-1)L:gL]) (each slice perhaps reshaped
    alike, a `select`'s dropped unit dim) -> reduce-sum over g of x viewed [.., g, L, ..]:
    the gradient of g copies joined by `cat([k] * g)` or `stack` (autograd adds up each
    copy's slice of the joined gradient) is the sum a broadcast's gradient is, so that
    rdu-partition sums the copies a rank holds and all-reduces over the ranks holding
    the others (as for `ConcatOfCopiesIsBroadcast`'s forward), not gathering the slices."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: MapOp, rewriter: PatternRewriter) -> None:
        if not _adds_inputs(op):
            return
        values = _summands(op)
        windows = [_window(v) for v in values]
        if len(values) < 2 or any(w is None or v.type != op.result.type for v, w in zip(values, windows)):
            return
        slices = [w[0] for w in windows if w is not None]
        if len({w[1] for w in windows if w is not None}) != 1 or (tiled := _tiled_dim(slices)) is None:
            return
        dim, length = tiled
        source = slices[0].input
        shape, element = shape_of(source.type), element_of(source.type)
        copies = ReshapeOp(source, TensorType(element, [*shape[:dim], len(slices), length, *shape[dim + 1:]]))
        summed = ReduceOp(ReduceKind.SUM, copies.result, [dim], False, slices[0].result.type)
        ops: list[Operation] = [_copy_attributes(op, copies), _copy_attributes(op, summed)]
        if summed.result.type != op.result.type:
            ops.append(_copy_attributes(op, ReshapeOp(summed.result, op.result.type)))
        rewriter.replace_op(op, ops)


def _swaps_last_two(perm: tuple[int, ...]) -> bool:
    rank = len(perm)
    return rank >= 2 and list(perm) == [*range(rank - 2), rank - 1, rank - 2]


class FoldTransposeIntoMatmul(RewritePattern):
    """matmul(a, transpose(b) swapping the last two dims) -> matmul(a, b) transpose_rhs."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: MatmulOp, rewriter: PatternRewriter) -> None:
        producer = op.rhs.owner
        if not isinstance(producer, TransposeOp) or not _swaps_last_two(producer.perm.get_values()):
            return
        transposed = op.transpose_rhs is None
        replacement = MatmulOp(op.lhs, producer.input, op.result.type, transpose_rhs=transposed)
        rewriter.replace_op(op, _copy_attributes(op, replacement))


class DropUnitBatchOfRhs(RewritePattern):
    """matmul(a, reshape(w)) where the reshape only adds or drops unit batch dims
    of w (torch.einsum's `bsh,oh->bso`: the weight viewed [1, K, N] for a bmm)
    and a's batch is the result's -> matmul(a, w): a rhs with unit batch dims is
    shared by every batch entry either way, and the product then reads the
    weight itself (a transpose of it folds in, `FoldTransposeIntoMatmul`)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: MatmulOp, rewriter: PatternRewriter) -> None:
        producer = op.rhs.owner
        if not isinstance(producer, ReshapeOp) or not all(isinstance(t, TensorType) for t in (
                producer.input.type, producer.result.type, op.lhs.type, op.result.type)):
            return
        weight, rhs = shape_of(producer.input.type), shape_of(producer.result.type)
        lhs, result = shape_of(op.lhs.type), shape_of(op.result.type)
        if (len(weight) < 2 or weight[-2:] != rhs[-2:] or any(size != 1 for size in (*weight[:-2], *rhs[:-2]))
                or len(weight) > len(lhs) or lhs[:-2] != result[:-2]):
            return
        replacement = MatmulOp(op.lhs, producer.input, op.result.type, transpose_rhs=op.transpose_rhs is not None)
        rewriter.replace_op(op, _copy_attributes(op, replacement))


class FoldTransposeIntoGroupedMatmul(RewritePattern):
    """grouped_matmul(a, transpose(b) swapping the last two dims) -> grouped_matmul(a, b) transpose_rhs."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: GroupedMatmulOp, rewriter: PatternRewriter) -> None:
        producer = op.rhs.owner
        if not isinstance(producer, TransposeOp) or not _swaps_last_two(producer.perm.get_values()):
            return
        transposed = op.transpose_rhs is None
        replacement = GroupedMatmulOp(op.lhs, producer.input, op.offsets, op.result.type, transpose_rhs=transposed)
        rewriter.replace_op(op, _copy_attributes(op, replacement))


class FoldBroadcastRhsIntoMatmul(RewritePattern):
    """matmul(a [b.., M, K], broadcast(w) [b.., K, N]) where the broadcast only
    adds or expands batch dims (w is one [K, N] matrix, maybe with unit batch
    dims) -> reshape(matmul(reshape(a) [b.. * M, K], w [K, N]) [b.. * M, N]):
    every batch entry multiplies by the same matrix, so the batch's rows are one
    product's rows (also with `transpose_rhs`, w given as [N, K])."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: MatmulOp, rewriter: PatternRewriter) -> None:
        producer = op.rhs.owner
        lhs_type, result_type = op.lhs.type, op.result.type
        if not isinstance(producer, BroadcastOp) or not isinstance(lhs_type, TensorType) or not isinstance(
                result_type, TensorType) or not isinstance(producer.input.type, TensorType):
            return
        weight_shape = tuple(producer.input.type.get_shape())
        rhs_shape = tuple(producer.result.type.get_shape())
        lhs_shape = tuple(lhs_type.get_shape())
        if len(rhs_shape) < 3 or len(weight_shape) < 2 or weight_shape[-2:] != rhs_shape[-2:] or any(
                size != 1 for size in weight_shape[:-2]) or lhs_shape[:-2] != tuple(result_type.get_shape())[:-2]:
            return  # a weight's rows expanded too, or an lhs broadcast over the batch
        element = lhs_type.element_type
        rows = TensorType(element, [_product(lhs_shape[:-1]), lhs_shape[-1]])
        new_ops: list[Operation] = [_copy_attributes(producer, ReshapeOp(op.lhs, rows))]
        weight = producer.input
        if len(weight_shape) > 2:
            new_ops.append(_copy_attributes(producer, ReshapeOp(weight, TensorType(
                producer.input.type.element_type, list(weight_shape[-2:])))))
            weight = new_ops[-1].results[0]
        product_type = TensorType(result_type.element_type, [rows.get_shape()[0], result_type.get_shape()[-1]])
        new_ops.append(_copy_attributes(op, MatmulOp(new_ops[0].results[0], weight, product_type,
                                                     transpose_rhs=op.transpose_rhs is not None)))
        new_ops.append(_copy_attributes(op, ReshapeOp(new_ops[-1].results[0], result_type)))
        rewriter.replace_op(op, new_ops)


def _product(sizes: tuple[int, ...]) -> int:
    total = 1
    for size in sizes:
        total *= size
    return total


def _fill_value(value: SSAValue) -> arith.ConstantOp | None:
    """The constant of a fill (`rdu.map` with no inputs yielding a constant)."""
    owner = value.owner
    if not isinstance(owner, MapOp) or owner.inputs:
        return None
    ops = list(owner.body.block.ops)
    if len(ops) == 2 and isinstance(ops[0], arith.ConstantOp) and isinstance(ops[1], YieldOp):
        return ops[0]
    return None


class InlineFills(RewritePattern):
    """A fill read by a map becomes a constant inside that map's body."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: MapOp, rewriter: PatternRewriter) -> None:
        fills = [(i, c) for i, v in enumerate(op.inputs) if (c := _fill_value(v)) is not None]
        if not fills:
            return
        old_block = op.body.block
        keep = [i for i in range(len(op.inputs)) if i not in dict(fills)]
        block = Block(arg_types=[old_block.args[i].type for i in keep])
        for new_arg, i in zip(block.args, keep):
            new_arg.location = old_block.args[i].location
            new_arg.name_hint = old_block.args[i].name_hint
        mapping: dict[SSAValue, SSAValue] = dict(zip((old_block.args[i] for i in keep), block.args))
        for i, constant in fills:
            clone = constant.clone()
            block.add_op(clone)
            mapping[old_block.args[i]] = clone.result
        for body_op in old_block.ops:
            block.add_op(body_op.clone(value_mapper=mapping))
        new = MapOp([op.inputs[i] for i in keep], op.result.type, Region(block))
        rewriter.replace_op(op, _copy_attributes(op, new))


class ReshapeFills(RewritePattern):
    """A layout op of a fill is a fill of the new shape."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if not isinstance(op, ReshapeOp | BroadcastOp | TransposeOp):
            return
        constant = _fill_value(op.input)
        if constant is None:
            return
        block = Block()
        block.add_op(constant.clone())
        block.add_op(YieldOp(block.last_op.results[0]))  # type: ignore[union-attr]
        assert isinstance(op.result.type, TensorType)
        rewriter.replace_op(op, _copy_attributes(op, MapOp([], op.result.type, Region(block))))


CANONICALIZATION_PATTERNS: tuple[type[RewritePattern], ...] = (
    RemoveIdentityLayout,
    ComposeReshapes,
    ComposeTransposes,
    ComposeSlices,
    SliceBeforeUnitReshape,
    ScatterBeforeUnitReshape,
    DropEmptyConcatOperands,
    ConcatOfCopiesIsBroadcast,
    SumOfSlicesIsReduce,
    FoldTransposeIntoMatmul,
    FoldBroadcastRhsIntoMatmul,
    DropUnitBatchOfRhs,
    FoldTransposeIntoGroupedMatmul,
    InlineFills,
    ReshapeFills,
    TransposeWithoutUnitDims,
)
"""Every pattern, in the order a greedy applier tries them."""

_ROOTS: dict[type[RewritePattern], tuple[type[Operation], ...]] = {
    RemoveIdentityLayout: (ReshapeOp, BroadcastOp, TransposeOp),
    ComposeReshapes: (ReshapeOp,),
    ComposeTransposes: (TransposeOp,),
    ComposeSlices: (SliceOp,),
    SliceBeforeUnitReshape: (SliceOp,),
    ScatterBeforeUnitReshape: (ScatterOp,),
    DropEmptyConcatOperands: (ConcatOp,),
    ConcatOfCopiesIsBroadcast: (ConcatOp,),
    SumOfSlicesIsReduce: (MapOp,),
    FoldTransposeIntoMatmul: (MatmulOp,),
    FoldBroadcastRhsIntoMatmul: (MatmulOp,),
    DropUnitBatchOfRhs: (MatmulOp,),
    FoldTransposeIntoGroupedMatmul: (GroupedMatmulOp,),
    InlineFills: (MapOp,),
    ReshapeFills: (ReshapeOp, BroadcastOp, TransposeOp),
    TransposeWithoutUnitDims: (TransposeOp,),
}
"""The ops each pattern is rooted at (xDSL's trait wants patterns per op)."""


@cache
def patterns_for(op_type: type[Operation]) -> tuple[RewritePattern, ...]:
    """The patterns rooted at ops of `op_type`, in `CANONICALIZATION_PATTERNS` order."""
    return tuple(pattern() for pattern in CANONICALIZATION_PATTERNS
                 if issubclass(op_type, _ROOTS[pattern]))


for _op in (ReshapeOp, BroadcastOp, TransposeOp, SliceOp, ConcatOp, MatmulOp, GroupedMatmulOp, MapOp, ScatterOp):
    register_canonicalization(_op, patterns_for(_op))
