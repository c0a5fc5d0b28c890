"""Core ATen ops that are not elementwise: layout, indexing, matmul,
reductions, normalization, convolution and pooling.

Composite ops (softmax, layer norm, batch norm, mean, var) are expanded
into `rdu.reduce` and `rdu.map` here, so later passes fuse them like any
other chain. Their arithmetic runs in the opmath type (f32 for f16/bf16).
"""

from __future__ import annotations

from collections.abc import Sequence
from math import prod
from typing import Any

import torch
from xdsl.dialects.builtin import TensorType, i1, i64
from xdsl.ir import Attribute, SSAValue

from rducc.frontend.aten_elementwise import result_type
from rducc.dialects.dataflow import (
    BroadcastOp,
    ConcatOp,
    GatherOp,
    IotaOp,
    MatmulOp,
    ReduceKind,
    ReduceOp,
    ReshapeOp,
    ScanKind,
    ScanOp,
    SliceOp,
    TransposeOp,
)
from rducc.dialects.shapes import broadcast_shapes, is_float
from rducc.frontend.importer import GraphImporter, assertion_only_nodes, converts, fake_value, node_arguments
from rducc.frontend.scalar import ScalarBuilder, opmath_type
from rducc.frontend.types import tensor_type_of

INT64_MAX = 2**63 - 1


def _shape(value: SSAValue) -> tuple[int, ...]:
    assert isinstance(value.type, TensorType)
    return tuple(value.type.get_shape())


def _element(value: SSAValue) -> Attribute:
    assert isinstance(value.type, TensorType)
    return value.type.element_type


def _dims(dims: Any, rank: int) -> list[int]:
    """Sorted non-negative dims; None or [] means every dim (PyTorch's convention)."""
    if dims is None or (isinstance(dims, Sequence) and len(dims) == 0):
        return list(range(rank))
    if isinstance(dims, int):
        dims = [dims]
    return sorted({d % max(rank, 1) for d in dims})


def _used_outputs(node: torch.fx.Node) -> set[int]:
    """Which elements of a multi-result node's tuple are read by getitem users."""
    return {int(user.args[1]) for user in node.users}


def reshape(g: GraphImporter, value: SSAValue, shape: Sequence[int]) -> SSAValue:
    if _shape(value) == tuple(shape):
        return value
    return g.emit(ReshapeOp(value, TensorType(_element(value), list(shape))))


def cast(g: GraphImporter, value: SSAValue, element_type: Attribute) -> SSAValue:
    if _element(value) == element_type:
        return value
    out = TensorType(element_type, list(_shape(value)))
    return g.map([value], out, lambda b, xs: xs[0])  # type: ignore[arg-type, return-value]


def reduce(
    g: GraphImporter, kind: ReduceKind, value: SSAValue, dims: Sequence[int], keepdim: bool,
    element_type: Attribute | None = None,
) -> SSAValue:
    shape = _shape(value)
    if keepdim:
        out_shape = [1 if i in dims else s for i, s in enumerate(shape)]
    else:
        out_shape = [s for i, s in enumerate(shape) if i not in dims]
    out = TensorType(element_type or _element(value), out_shape)
    return g.emit(ReduceOp(kind, value, list(dims), keepdim, out))


def _tensor(element_type: Attribute, shape: Sequence[int]) -> TensorType:
    return TensorType(element_type, list(shape))


# --------------------------------------------------------------------------
# Layout
# --------------------------------------------------------------------------


@converts(
    "aten.view.default",
    "aten._unsafe_view.default",
    "aten.reshape.default",
    "aten.unsqueeze.default",
    "aten.squeeze.dim",
    "aten.squeeze.dims",
    "aten.squeeze.default",
    "aten.flatten.using_ints",
)
def convert_reshape(g: GraphImporter, node: torch.fx.Node) -> SSAValue:
    return reshape(g, g.value(node.args[0]), result_type(node).get_shape())


def _check_scalar_read(node: torch.fx.Node) -> str | None:
    dropped = assertion_only_nodes(node.graph)
    if any(user.op != "output" and user not in dropped for user in node.users):
        return "a tensor read back as a Python number used inside the graph (data-dependent)"
    return None


@converts("aten._local_scalar_dense.default", check=_check_scalar_read)
def convert_scalar_read(g: GraphImporter, node: torch.fx.Node) -> SSAValue:
    """`tensor.item()` returned by the model: the rank-0 tensor itself (rducc.Program
    hands it back as a Python number)."""
    return reshape(g, g.value(node.args[0]), [])


@converts("aten.permute.default")
def convert_permute(g: GraphImporter, node: torch.fx.Node) -> SSAValue:
    value = g.value(node.args[0])
    perm = [d % max(len(_shape(value)), 1) for d in node.args[1]]
    if perm == sorted(perm):
        return value
    return g.emit(TransposeOp(value, perm, result_type(node)))


@converts("aten.transpose.int", "aten.t.default")
def convert_transpose(g: GraphImporter, node: torch.fx.Node) -> SSAValue:
    value = g.value(node.args[0])
    rank = len(_shape(value))
    if rank < 2:
        return value
    a, b = (node.args[1], node.args[2]) if len(node.args) > 2 else (0, 1)
    perm = list(range(rank))
    perm[a % rank], perm[b % rank] = perm[b % rank], perm[a % rank]
    return g.emit(TransposeOp(value, perm, result_type(node)))


@converts("aten.expand.default")
def convert_expand(g: GraphImporter, node: torch.fx.Node) -> SSAValue:
    value = g.value(node.args[0])
    if _shape(value) == tuple(result_type(node).get_shape()):
        return value
    return g.emit(BroadcastOp(value, result_type(node)))


def _slice_bounds(size: int, start: int | None, end: int | None) -> tuple[int, int]:
    start = 0 if start is None else start
    end = size if end is None or end >= INT64_MAX else end
    start = start + size if start < 0 else start
    end = end + size if end < 0 else end
    start = min(max(start, 0), size)
    return start, min(max(end, start), size)


def slice_dim(
    g: GraphImporter, value: SSAValue, dim: int, start: int, size: int, step: int = 1
) -> SSAValue:
    shape = list(_shape(value))
    if start == 0 and size == shape[dim] and step == 1:
        return value
    offsets = [0] * len(shape)
    strides = [1] * len(shape)
    offsets[dim], strides[dim], shape[dim] = start, step, size
    return g.emit(SliceOp(value, offsets, strides, _tensor(_element(value), shape)))


@converts("aten.slice.Tensor")
def convert_slice(g: GraphImporter, node: torch.fx.Node) -> SSAValue:
    args = node_arguments(node)
    value = g.value(args["self"])
    shape = _shape(value)
    dim = args["dim"] % len(shape)
    start, end = _slice_bounds(shape[dim], args["start"], args["end"])
    step = args["step"]
    size = max(0, -(-(end - start) // step))
    return slice_dim(g, value, dim, start if size else 0, size, step)


@converts("aten.select.int")
def convert_select(g: GraphImporter, node: torch.fx.Node) -> SSAValue:
    value = g.value(node.args[0])
    shape = _shape(value)
    dim = node.args[1] % len(shape)
    index = node.args[2] % shape[dim]
    return reshape(g, slice_dim(g, value, dim, index, 1), result_type(node).get_shape())


@converts("aten.cat.default")
def convert_cat(g: GraphImporter, node: torch.fx.Node) -> SSAValue:
    out = result_type(node)
    rank = len(out.get_shape())
    dim = (node.args[1] if len(node.args) > 1 else 0) % max(rank, 1)
    # PyTorch lets legacy 1-D empty tensors join anything; they add nothing.
    values = [cast(g, g.value(v), out.element_type) for v in node.args[0] if fake_value(v).shape != (0,) or rank == 1]
    if len(values) == 1:
        return values[0]
    return g.emit(ConcatOp(values, dim, out))


@converts("aten.split_with_sizes.default", "aten.split.Tensor")
def convert_split(g: GraphImporter, node: torch.fx.Node) -> tuple[SSAValue, ...]:
    value = g.value(node.args[0])
    shape = _shape(value)
    dim = (node.args[2] if len(node.args) > 2 else 0) % len(shape)
    pieces = [tuple(f.shape)[dim] for f in fake_value(node)]
    results, start = [], 0
    for size in pieces:
        results.append(slice_dim(g, value, dim, start, size))
        start += size
    return tuple(results)


# --------------------------------------------------------------------------
# Indexing and ramps
# --------------------------------------------------------------------------


@converts("aten.embedding.default")
def convert_embedding(g: GraphImporter, node: torch.fx.Node) -> SSAValue:
    weight, indices = g.value(node.args[0]), g.value(node.args[1])
    return g.emit(GatherOp(weight, [indices], 0, result_type(node)))


def _check_index(node: torch.fx.Node) -> str | None:
    present = [i for i, index in enumerate(node.args[1]) if index is not None]
    if not present:
        return "no index tensor"
    if any(fake_value(node.args[1][i]).dtype in (torch.bool, torch.uint8) for i in present):
        return "boolean mask index (data-dependent shape; a uint8 index is a mask too)"
    return None


@converts("aten.index.Tensor", check=_check_index)
def convert_index(g: GraphImporter, node: torch.fx.Node) -> SSAValue:
    """source[..., i, j, ...]: adjacent index tensors gather in place. Non-adjacent
    ones put their broadcast dims first (PyTorch's rule): the indexed dims move
    to the front of the source and the gather is at dim 0."""
    source = g.value(node.args[0])
    present = [i for i, index in enumerate(node.args[1]) if index is not None]
    indices = [g.value(node.args[1][i]) for i in present]
    if present == list(range(present[0], present[-1] + 1)):
        return g.emit(GatherOp(source, indices, present[0], result_type(node)))
    shape = _shape(source)
    perm = present + [d for d in range(len(shape)) if d not in present]
    moved = g.emit(TransposeOp(source, perm, TensorType(_element(source), [shape[d] for d in perm])))
    return g.emit(GatherOp(moved, indices, 0, result_type(node)))


@converts("aten.arange.start_step", "aten.arange.default", "aten.arange.start")
def convert_arange(g: GraphImporter, node: torch.fx.Node) -> SSAValue:
    out = result_type(node)
    args = node_arguments(node)
    start = args.get("start", 0) if str(node.target) != "aten.arange.default" else 0
    step = args.get("step", 1) or 1
    if not is_float(out.element_type):
        start, step = int(start), int(step)
    else:
        start, step = float(start), float(step)
    return g.emit(IotaOp(start, step, out))


# --------------------------------------------------------------------------
# Matrix products
# --------------------------------------------------------------------------


@converts("aten.mm.default", "aten.bmm.default")
def convert_mm(g: GraphImporter, node: torch.fx.Node) -> SSAValue:
    lhs, rhs = g.value(node.args[0]), g.value(node.args[1])
    return g.emit(MatmulOp(lhs, rhs, result_type(node)))


@converts("aten.addmm.default")
def convert_addmm(g: GraphImporter, node: torch.fx.Node) -> SSAValue:
    """beta * bias + alpha * (mat1 @ mat2): a matmul with its bias epilogue."""
    args = node_arguments(node)
    out = result_type(node)
    compute = opmath_type(out.element_type)
    # the product stays in the opmath type so the bias add rounds once, as torch does
    wide = TensorType(compute, out.get_shape())
    product = g.emit(MatmulOp(g.value(args["mat1"]), g.value(args["mat2"]), wide))
    beta, alpha = args["beta"], args["alpha"]

    def body(b: ScalarBuilder, xs: list[Any]) -> SSAValue:
        bias, mm = b.cast(xs[0], compute), b.cast(xs[1], compute)
        if beta != 1:
            bias = b.mul(bias, b.constant(beta, compute))
        if alpha != 1:
            mm = b.mul(mm, b.constant(alpha, compute))
        return b.add(mm, bias)

    return g.map([g.value(args["self"]), product], out, body)


# --------------------------------------------------------------------------
# Reductions and scans
# --------------------------------------------------------------------------


def _reduce_node(g: GraphImporter, node: torch.fx.Node, kind: ReduceKind) -> SSAValue:
    args = node_arguments(node)
    value = g.value(args["self"])
    dims = _dims(args.get("dim"), len(_shape(value)))
    out = result_type(node)
    if kind in (ReduceKind.ANY, ReduceKind.ALL):
        # torch's any/all of uint8 give uint8 (0 or 1), of anything else bool
        reduced = reduce(g, kind, cast(g, value, i1), dims, bool(args.get("keepdim")), i1)
        return cast(g, reduced, out.element_type)
    if kind in (ReduceKind.SUM, ReduceKind.PROD):
        value = cast(g, value, out.element_type)
    return reduce(g, kind, value, dims, bool(args.get("keepdim")), out.element_type)


@converts("aten.sum.dim_IntList", "aten.sum.default")
def convert_sum(g: GraphImporter, node: torch.fx.Node) -> SSAValue:
    return _reduce_node(g, node, ReduceKind.SUM)


@converts("aten.prod.dim_int", "aten.prod.default")
def convert_prod(g: GraphImporter, node: torch.fx.Node) -> SSAValue:
    return _reduce_node(g, node, ReduceKind.PROD)


@converts("aten.amax.default")
def convert_amax(g: GraphImporter, node: torch.fx.Node) -> SSAValue:
    return _reduce_node(g, node, ReduceKind.MAX)


@converts("aten.amin.default")
def convert_amin(g: GraphImporter, node: torch.fx.Node) -> SSAValue:
    return _reduce_node(g, node, ReduceKind.MIN)


@converts("aten.any.dim", "aten.any.dims", "aten.any.default")
def convert_any(g: GraphImporter, node: torch.fx.Node) -> SSAValue:
    return _reduce_node(g, node, ReduceKind.ANY)


@converts("aten.all.dim", "aten.all.dims", "aten.all.default")
def convert_all(g: GraphImporter, node: torch.fx.Node) -> SSAValue:
    return _reduce_node(g, node, ReduceKind.ALL)


@converts("aten.argmax.default", "aten.argmin.default")
def convert_argmax(g: GraphImporter, node: torch.fx.Node) -> SSAValue:
    args = node_arguments(node)
    value = g.value(args["self"])
    kind = ReduceKind.ARGMAX if "argmax" in str(node.target) else ReduceKind.ARGMIN
    if args["dim"] is None:
        value = reshape(g, value, [prod(_shape(value))])
        flat = reduce(g, kind, value, [0], False, i64)
        return reshape(g, flat, result_type(node).get_shape())
    dims = _dims(args["dim"], len(_shape(value)))
    return reduce(g, kind, value, dims, bool(args["keepdim"]), i64)


@converts("aten.max.dim", "aten.min.dim")
def convert_max_dim(g: GraphImporter, node: torch.fx.Node) -> tuple[SSAValue | None, ...]:
    value = g.value(node.args[0])
    dims = _dims(node.args[1], len(_shape(value)))
    keepdim = bool(node.args[2]) if len(node.args) > 2 else False
    is_max = str(node.target) == "aten.max.dim"
    used = _used_outputs(node)
    values = (
        reduce(g, ReduceKind.MAX if is_max else ReduceKind.MIN, value, dims, keepdim)
        if 0 in used
        else None
    )
    kind = ReduceKind.ARGMAX if is_max else ReduceKind.ARGMIN
    indices = reduce(g, kind, value, dims, keepdim, i64) if 1 in used else None
    return values, indices


def _mean(g: GraphImporter, value: SSAValue, dims: list[int], keepdim: bool, out: Attribute) -> SSAValue:
    """sum / count, summed in the opmath type and rounded once to `out`."""
    compute = opmath_type(out)
    total = reduce(g, ReduceKind.SUM, cast(g, value, compute), dims, keepdim)
    count = prod(_shape(value)[d] for d in dims)
    result = _tensor(out, _shape(total))
    return g.map([total], result, lambda b, xs: b.div(xs[0], b.constant(count, compute)))  # type: ignore[arg-type]


@converts("aten.mean.dim", "aten.mean.default")
def convert_mean(g: GraphImporter, node: torch.fx.Node) -> SSAValue:
    args = node_arguments(node)
    value = g.value(args["self"])
    dims = _dims(args.get("dim"), len(_shape(value)))
    return _mean(g, value, dims, bool(args.get("keepdim")), result_type(node).element_type)


def _variance(
    g: GraphImporter, value: SSAValue, dims: list[int], keepdim: bool, correction: float, out: Attribute
) -> tuple[SSAValue, SSAValue]:
    """(sum((x - mean)^2) / (count - correction), mean kept as 1-dims), in the opmath type."""
    compute = opmath_type(out)
    count = prod(_shape(value)[d] for d in dims)
    mean = _mean(g, value, dims, True, compute)
    squares = g.map(
        [value, mean],
        _tensor(compute, _shape(value)),
        lambda b, xs: _square(b, b.sub(b.cast(xs[0], compute), xs[1])),  # type: ignore[arg-type]
    )
    total = reduce(g, ReduceKind.SUM, squares, dims, keepdim)
    divisor = max(count - correction, 0)
    variance = g.map(
        [total],
        _tensor(out, _shape(total)),
        lambda b, xs: b.div(xs[0], b.constant(divisor, compute)),  # type: ignore[arg-type]
    )
    return variance, mean


@converts("aten.var.correction")
def convert_var(g: GraphImporter, node: torch.fx.Node) -> SSAValue:
    args = node_arguments(node)
    value = g.value(args["self"])
    dims = _dims(args["dim"], len(_shape(value)))
    correction = 1 if args["correction"] is None else args["correction"]
    return _variance(g, value, dims, bool(args["keepdim"]), correction, result_type(node).element_type)[0]


def _square(b: ScalarBuilder, value: SSAValue) -> SSAValue:
    return b.mul(value, value)


@converts("aten.cumsum.default", "aten.cumprod.default")
def convert_cumsum(g: GraphImporter, node: torch.fx.Node) -> SSAValue:
    value = g.value(node.args[0])
    dim = node.args[1] % max(len(_shape(value)), 1)
    out = result_type(node)
    kind = ScanKind.SUM if "cumsum" in str(node.target) else ScanKind.PROD
    return g.emit(ScanOp(kind, cast(g, value, out.element_type), dim, out))


# --------------------------------------------------------------------------
# Softmax and normalization
# --------------------------------------------------------------------------


def _softmax_parts(g: GraphImporter, node: torch.fx.Node) -> tuple[SSAValue, SSAValue, SSAValue, Attribute]:
    """(x, max, sum of exp) along the softmax dim, in the opmath type."""
    value = g.value(node.args[0])
    dim = node.args[1] % max(len(_shape(value)), 1)
    compute = opmath_type(result_type(node).element_type)
    peak = reduce(g, ReduceKind.MAX, value, [dim], True)
    exps = g.map(
        [value, peak],
        _tensor(compute, _shape(value)),
        lambda b, xs: b.unary("exp", b.sub(b.cast(xs[0], compute), b.cast(xs[1], compute))),  # type: ignore[arg-type]
    )
    return value, peak, reduce(g, ReduceKind.SUM, exps, [dim], True), compute


@converts("aten._softmax.default")
def convert_softmax(g: GraphImporter, node: torch.fx.Node) -> SSAValue:
    value, peak, total, compute = _softmax_parts(g, node)

    def body(b: ScalarBuilder, xs: list[Any]) -> SSAValue:
        shifted = b.sub(b.cast(xs[0], compute), b.cast(xs[1], compute))
        return b.div(b.unary("exp", shifted), xs[2])

    return g.map([value, peak, total], result_type(node), body)


@converts("aten._log_softmax.default")
def convert_log_softmax(g: GraphImporter, node: torch.fx.Node) -> SSAValue:
    value, peak, total, compute = _softmax_parts(g, node)

    def body(b: ScalarBuilder, xs: list[Any]) -> SSAValue:
        shifted = b.sub(b.cast(xs[0], compute), b.cast(xs[1], compute))
        return b.sub(shifted, b.unary("log", xs[2]))

    return g.map([value, peak, total], result_type(node), body)


def _standardize(g: GraphImporter, value: SSAValue, dims: list[int], eps: float, compute: Any) -> tuple[SSAValue, SSAValue, SSAValue]:
    """(x - mean, mean, rsqrt(biased var + eps)) over `dims` (kept as size 1), in `compute`."""
    count = prod(_shape(value)[d] for d in dims)
    mean = _mean(g, value, dims, True, compute)
    centered = g.map(
        [value, mean], _tensor(compute, _shape(value)),
        lambda b, xs: b.sub(b.cast(xs[0], compute), xs[1]),  # type: ignore[arg-type]
    )
    squares = g.map([centered], centered.type, lambda b, xs: _square(b, xs[0]))  # type: ignore[arg-type]
    total = reduce(g, ReduceKind.SUM, squares, dims, True)
    rstd = g.map(
        [total], total.type,
        lambda b, xs: b.unary("rsqrt", b.add(b.div(xs[0], b.constant(count, compute)), b.constant(eps, compute))),  # type: ignore[arg-type]
    )
    return centered, mean, rstd


@converts("aten.native_layer_norm.default")
def convert_layer_norm(g: GraphImporter, node: torch.fx.Node) -> tuple[SSAValue | None, ...]:
    """(y, mean, rstd) with y = (x - mean) * rstd * weight + bias over the trailing dims."""
    args = node_arguments(node)
    value = g.value(args["input"])
    rank = len(_shape(value))
    dims = list(range(rank - len(args["normalized_shape"]), rank))
    out_types = [tensor_type for tensor_type in map(_fake_type, fake_value(node))]
    compute = opmath_type(out_types[0].element_type)
    centered, mean, rstd = _standardize(g, value, dims, args["eps"], compute)
    affine = [g.value(args[k]) for k in ("weight", "bias") if args[k] is not None]
    has_weight, has_bias = args["weight"] is not None, args["bias"] is not None

    def body(b: ScalarBuilder, xs: list[Any]) -> SSAValue:
        y = b.mul(xs[0], xs[1])
        rest = iter(xs[2:])
        if has_weight:
            y = b.mul(y, b.cast(next(rest), compute))
        if has_bias:
            y = b.add(y, b.cast(next(rest), compute))
        return y

    y = g.map([centered, rstd, *affine], out_types[0], body)
    used = _used_outputs(node)
    return (
        y,
        cast(g, mean, out_types[1].element_type) if 1 in used else None,
        cast(g, rstd, out_types[2].element_type) if 2 in used else None,
    )


def _fake_type(fake: torch.Tensor) -> TensorType:
    return tensor_type_of(fake)


@converts("aten._native_batch_norm_legit_no_training.default")
def convert_batch_norm(g: GraphImporter, node: torch.fx.Node) -> tuple[SSAValue | None, ...]:
    """Inference batch norm over dim 1: (x - mean) * rsqrt(var + eps) * weight + bias.
    The saved mean and invstd are what torch returns for them: empty tensors."""
    args = node_arguments(node)
    value = g.value(args["input"])
    shape = _shape(value)
    channel_shape = [shape[1]] + [1] * (len(shape) - 2)
    out, *saved_types = (_fake_type(f) for f in fake_value(node))
    compute = opmath_type(out.element_type)
    eps = args["eps"]
    names = ["running_mean", "running_var", "weight", "bias"]
    present = [n for n in names if args[n] is not None]
    params = [reshape(g, g.value(args[n]), channel_shape) for n in present]

    def body(b: ScalarBuilder, xs: list[Any]) -> SSAValue:
        named = dict(zip(present, (b.cast(x, compute) for x in xs[1:])))
        y = b.cast(xs[0], compute)
        if "running_mean" in named:
            y = b.sub(y, named["running_mean"])
        if "running_var" in named:
            y = b.mul(y, b.unary("rsqrt", b.add(named["running_var"], b.constant(eps, compute))))
        return _scale_and_shift(b, y, named)

    used = _used_outputs(node)
    saved = [
        g.map([], saved_type, lambda b, xs, element=saved_type.element_type: b.constant(0, element)) if index in used else None
        for index, saved_type in enumerate(saved_types, start=1)
    ]
    return g.map([value, *params], out, body), *saved


def _scale_and_shift(b: ScalarBuilder, y: SSAValue, named: dict[str, SSAValue]) -> SSAValue:
    """y * weight + bias, with whichever of the two a batch norm has (`named`)."""
    if "weight" in named:
        y = b.mul(y, named["weight"])
    if "bias" in named:
        y = b.add(y, named["bias"])
    return y


@converts("aten._native_batch_norm_legit.no_stats")
def convert_batch_norm_batch_stats(g: GraphImporter, node: torch.fx.Node) -> tuple[SSAValue | None, ...]:
    """Batch norm with the batch's own statistics (training, or no running stats:
    instance norm decomposes to it): (x - mean) * rsqrt(biased var + eps) * weight
    + bias over every dim but 1, and the saved mean and invstd per channel."""
    args = node_arguments(node)
    value = g.value(args["input"])
    shape = _shape(value)
    dims = [0, *range(2, len(shape))]
    channel_shape = [shape[1]] + [1] * (len(shape) - 2)
    out_types = [_fake_type(f) for f in fake_value(node)]
    compute = opmath_type(out_types[0].element_type)
    centered, mean, rstd = _standardize(g, value, dims, args["eps"], compute)
    present = [n for n in ("weight", "bias") if args[n] is not None]
    params = [reshape(g, g.value(args[n]), channel_shape) for n in present]

    def body(b: ScalarBuilder, xs: list[Any]) -> SSAValue:
        named = dict(zip(present, (b.cast(x, compute) for x in xs[2:])))
        return _scale_and_shift(b, b.mul(xs[0], xs[1]), named)

    used = _used_outputs(node)

    def saved(stat: SSAValue, index: int) -> SSAValue | None:
        if index not in used:
            return None
        return reshape(g, cast(g, stat, out_types[index].element_type), out_types[index].get_shape())

    return g.map([centered, rstd, *params], out_types[0], body), saved(mean, 1), saved(rstd, 2)


# --------------------------------------------------------------------------
# More reductions and matrix products
# --------------------------------------------------------------------------


@converts("aten.max.default", "aten.min.default")
def convert_max_all(g: GraphImporter, node: torch.fx.Node) -> SSAValue:
    value = g.value(node.args[0])
    kind = ReduceKind.MAX if str(node.target) == "aten.max.default" else ReduceKind.MIN
    return reduce(g, kind, value, list(range(len(_shape(value)))), False)


@converts("aten.var_mean.correction")
def convert_var_mean(g: GraphImporter, node: torch.fx.Node) -> tuple[SSAValue, SSAValue]:
    args = node_arguments(node)
    value = g.value(args["self"])
    dims = _dims(args["dim"], len(_shape(value)))
    var_type, mean_type = (_fake_type(f) for f in fake_value(node))
    correction = 1 if args["correction"] is None else args["correction"]
    variance, mean = _variance(g, value, dims, bool(args["keepdim"]), correction, var_type.element_type)
    return variance, reshape(g, cast(g, mean, mean_type.element_type), mean_type.get_shape())


@converts("aten.var.dim")
def convert_var_dim(g: GraphImporter, node: torch.fx.Node) -> SSAValue:
    args = node_arguments(node)
    value = g.value(args["self"])
    dims = _dims(args["dim"], len(_shape(value)))
    correction = 1 if args["unbiased"] else 0
    return _variance(g, value, dims, bool(args["keepdim"]), correction, result_type(node).element_type)[0]


@converts("aten.linalg_vector_norm.default")
def convert_vector_norm(g: GraphImporter, node: torch.fx.Node) -> SSAValue:
    """sum(|x|^ord)^(1/ord); ord inf/-inf is amax/amin of |x|, ord 0 counts non-zeros."""
    args = node_arguments(node)
    value = g.value(args["self"])
    dims = _dims(args["dim"], len(_shape(value)))
    keepdim = bool(args["keepdim"])
    out = result_type(node)
    compute = opmath_type(out.element_type)
    order = float(args["ord"])
    wide = _tensor(compute, _shape(value))
    if order in (float("inf"), float("-inf")):
        magnitude = g.map([value], wide, lambda b, xs: b.abs(b.cast(xs[0], compute)))  # type: ignore[arg-type]
        kind = ReduceKind.MAX if order > 0 else ReduceKind.MIN
        return cast(g, reduce(g, kind, magnitude, dims, keepdim), out.element_type)

    def power(b: ScalarBuilder, xs: list[Any]) -> SSAValue:
        x = b.cast(xs[0], compute)
        if order == 0:
            return b.cast(b.compare("ne", x, b.constant(0, compute)), compute)
        return b.pow(b.abs(x), order) if order != 2 else b.mul(x, x)

    total = reduce(g, ReduceKind.SUM, g.map([value], wide, power), dims, keepdim)
    if order in (0, 1):
        return cast(g, total, out.element_type)
    root = (lambda b, xs: b.unary("sqrt", xs[0])) if order == 2 else (lambda b, xs: b.pow(xs[0], 1.0 / order))
    return g.map([total], out, root)  # type: ignore[arg-type]


@converts("aten.addbmm.default")
def convert_addbmm(g: GraphImporter, node: torch.fx.Node) -> SSAValue:
    """beta * self + alpha * sum_b(batch1[b] @ batch2[b])."""
    args = node_arguments(node)
    out = result_type(node)
    compute = opmath_type(out.element_type)
    lhs, rhs = g.value(args["batch1"]), g.value(args["batch2"])
    batch, rows, cols = _shape(lhs)[0], _shape(lhs)[1], _shape(rhs)[2]
    product = g.emit(MatmulOp(lhs, rhs, _tensor(compute, [batch, rows, cols])))
    total = reduce(g, ReduceKind.SUM, product, [0], False)
    beta, alpha = args["beta"], args["alpha"]

    def body(b: ScalarBuilder, xs: list[Any]) -> SSAValue:
        scaled = b.mul(xs[1], b.constant(alpha, compute)) if alpha != 1 else xs[1]
        if beta == 0:
            return scaled
        bias = b.cast(xs[0], compute)
        return b.add(scaled, b.mul(bias, b.constant(beta, compute)) if beta != 1 else bias)

    return g.map([g.value(args["self"]), total], out, body)


# --------------------------------------------------------------------------
# More normalization, pooling and resampling
# --------------------------------------------------------------------------


@converts("aten.native_group_norm.default")
def convert_group_norm(g: GraphImporter, node: torch.fx.Node) -> tuple[SSAValue | None, ...]:
    """(y, mean, rstd): statistics over each group of C/G channels and all positions."""
    args = node_arguments(node)
    value = g.value(args["input"])
    shape = _shape(value)
    batch, channels, groups = shape[0], shape[1], args["group"]
    out_types = [_fake_type(f) for f in fake_value(node)]
    compute = opmath_type(out_types[0].element_type)
    grouped = reshape(g, value, [batch, groups, prod(shape) // max(batch * groups, 1)])
    variance, mean = _variance(g, grouped, [2], True, 0, compute)
    eps = args["eps"]
    rstd = g.map([variance], variance.type, lambda b, xs: b.unary("rsqrt", b.add(xs[0], b.constant(eps, compute))))  # type: ignore[arg-type]
    normalized = g.map(
        [grouped, mean, rstd], _tensor(compute, _shape(grouped)),
        lambda b, xs: b.mul(b.sub(b.cast(xs[0], compute), xs[1]), xs[2]),  # type: ignore[arg-type]
    )
    normalized = reshape(g, normalized, shape)
    channel_shape = [channels] + [1] * (len(shape) - 2)
    affine = [reshape(g, g.value(args[k]), channel_shape) for k in ("weight", "bias") if args[k] is not None]
    has_weight, has_bias = args["weight"] is not None, args["bias"] is not None

    def body(b: ScalarBuilder, xs: list[Any]) -> SSAValue:
        y, rest = xs[0], iter(xs[1:])
        if has_weight:
            y = b.mul(y, b.cast(next(rest), compute))
        if has_bias:
            y = b.add(y, b.cast(next(rest), compute))
        return y

    y = g.map([normalized, *affine], out_types[0], body)
    used = _used_outputs(node)
    return (
        y,
        reshape(g, cast(g, mean, out_types[1].element_type), out_types[1].get_shape()) if 1 in used else None,
        reshape(g, cast(g, rstd, out_types[2].element_type), out_types[2].get_shape()) if 2 in used else None,
    )


__all__ = ["reshape", "cast", "reduce", "slice_dim", "broadcast_shapes"]
