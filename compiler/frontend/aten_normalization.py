"""ATen softmax and normalization (softmax, log_softmax, layer, batch and group
norm), expanded into `rdu.reduce` and `rdu.map` so later passes fuse them like
any other chain; their arithmetic runs in the opmath type (f32 for f16/bf16).
"""

from __future__ import annotations

from collections.abc import Callable
from math import prod
from typing import Any

import torch
from xdsl.dialects.builtin import TensorType, bf16, f16, f32
from xdsl.ir import Attribute, SSAValue

from rducc.dialects.rdu.dataflow import (
    MapOp,
    ReduceKind,
)
from rducc.dialects.rdu.layer_norm import GRADIENTS, PARTS, LayerNormGradOp, LayerNormOp
from rducc.dialects.shapes import element_of
from rducc.frontend.aten_build import cast, mean_over, reduce, reshape, square, variance_over
from rducc.frontend.aten_common import fake_type, result_type, shape_of, tensor_of, used_outputs
from rducc.frontend.converter_api import GraphImporter, converts, fake_value, node_arguments, positional
from rducc.frontend.scalar import Number, ScalarBuilder, opmath_type


def _softmax_parts(g: GraphImporter, node: torch.fx.Node) -> tuple[SSAValue, SSAValue, SSAValue, Attribute]:
    """(x, max, sum of exp) along the softmax dim, in the opmath type."""
    value = g.value(positional(node)[0])
    dim = positional(node)[1] % max(len(shape_of(value)), 1)
    compute = opmath_type(result_type(node).element_type)
    peak = reduce(g, ReduceKind.MAX, value, [dim], True)
    exps = g.map(
        [value, peak],
        tensor_of(compute, shape_of(value)),
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
    """x - max - log(sum of exp(x - max)) in the opmath type, rounded once to
    the result type; along the last dim of a 16-bit tensor the sum and its log
    are rounded to that type first, as eager's CPU kernel does (`_rounded_log`)."""
    value, peak, total, compute = _softmax_parts(g, node)
    rounded = _rounded_log(g, node, total, compute)

    def body(b: ScalarBuilder, xs: list[Any]) -> SSAValue:
        shifted = b.sub(b.cast(xs[0], compute), b.cast(xs[1], compute))
        return b.sub(shifted, xs[2] if rounded is not None else b.unary("log", xs[2]))

    return g.map([value, peak, total if rounded is None else rounded], result_type(node), body)


def _rounded_log(g: GraphImporter, node: torch.fx.Node, total: SSAValue, compute: Attribute) -> SSAValue | None:
    """log(`total`) as eager's CPU log_softmax along the last dim of a bf16/f16
    tensor computes it (`serial_vec_log_softmax_lastdim_range`, ATen's
    LogSoftmaxKernelImpl.h): it keeps the max and the sum of exps in the
    tensor's own type, so it rounds the sum to that type, takes the log and
    rounds that too before x - max - log; None where eager keeps them in
    float32 (another dim, a rank-0 tensor, a 32- or 64-bit one). Autocast
    computes log_softmax in its input's type (it is on neither of its lists),
    so a bf16 step's log_softmax is this kernel's."""
    element = result_type(node).element_type
    rank = len(shape_of(g.value(positional(node)[0])))
    if element == compute or rank == 0 or positional(node)[1] % rank != rank - 1:
        return None
    assert isinstance(total.type, TensorType)

    def body(b: ScalarBuilder, xs: list[Any]) -> SSAValue:
        return b.cast(b.cast(b.unary("log", b.cast(b.cast(xs[0], element), compute)), element), compute)

    return g.map([total], total.type, body)


def _standardize(
    g: GraphImporter, value: SSAValue, dims: list[int], eps: float, compute: Any
) -> tuple[SSAValue, SSAValue, SSAValue]:
    """(x - mean, mean, rsqrt(biased var + eps)) over `dims` (kept as size 1), in `compute`."""
    count = prod(shape_of(value)[d] for d in dims)
    mean = mean_over(g, value, dims, True, compute)
    centered = g.map(
        [value, mean], tensor_of(compute, shape_of(value)),
        lambda b, xs: b.sub(b.cast(xs[0], compute), xs[1]),  # type: ignore[arg-type]
    )
    squares = g.map([centered], centered.type, lambda b, xs: square(b, xs[0]))  # type: ignore[arg-type]
    total = reduce(g, ReduceKind.SUM, squares, dims, True)
    assert isinstance(total.type, TensorType)
    rstd = g.map(
        [total], total.type,
        lambda b, xs: b.unary("rsqrt", b.add(b.div(xs[0], b.constant(count, compute)), b.constant(eps, compute))),  # type: ignore[arg-type]
    )
    return centered, mean, rstd


LAYER_NORM_AS_EAGER = ("aten.native_layer_norm_backward.default",)
"""Converted whole, as torch's fused CPU kernel computes it (`rdu.layer_norm_grad`),
not decomposed (a training step's layer norm gradient: `rducc.training.compile`)."""


@converts("aten.native_layer_norm.default")
def convert_layer_norm(g: GraphImporter, node: torch.fx.Node) -> tuple[SSAValue | None, ...]:
    """(y, mean, rstd) with y = (x - mean) * rstd * weight + bias over the trailing dims.
    Where the mean or rstd is read (saved for a backward), each result is the
    kernel's (`_as_kernel`: what eager's forward computes and saves)."""
    args = node_arguments(node)
    value = g.value(args["input"])
    rank = len(shape_of(value))
    dims = list(range(rank - len(args["normalized_shape"]), rank))
    out_types = [tensor_type for tensor_type in map(fake_type, fake_value(node))]
    compute = opmath_type(out_types[0].element_type)
    affine = [g.value(args[k]) for k in ("weight", "bias") if args[k] is not None]
    has_weight, has_bias = args["weight"] is not None, args["bias"] is not None
    used = used_outputs(node)
    if used & {1, 2}:
        return _as_kernel(g, node, value, affine, out_types, used)
    centered, mean, rstd = _standardize(g, value, dims, args["eps"], compute)

    def body(b: ScalarBuilder, xs: list[Any]) -> SSAValue:
        y = b.mul(xs[0], xs[1])
        rest = iter(xs[2:])
        if has_weight:
            y = b.mul(y, b.cast(next(rest), compute))
        if has_bias:
            y = b.add(y, b.cast(next(rest), compute))
        return y

    y = g.map([centered, rstd, *affine], out_types[0], body)
    return (
        y,
        cast(g, mean, out_types[1].element_type) if 1 in used else None,
        cast(g, rstd, out_types[2].element_type) if 2 in used else None,
    )


def _as_kernel(g: GraphImporter, node: torch.fx.Node, value: SSAValue, affine: list[SSAValue],
               out_types: list[TensorType], used: set[int]) -> tuple[SSAValue | None, ...]:
    """A layer norm whose statistics a backward reads: each used result one
    `rdu.layer_norm` (the kernel's output, and its mean and rstd in the kernel's
    type, `_statistic_type`, cast to the type torch declares)."""
    args = node_arguments(node)
    saved = _statistic_type(value, affine, out_types[1].element_type)
    results: list[SSAValue | None] = []
    for index, part in enumerate(PARTS):
        if index and index not in used:
            results.append(None)
            continue
        kind = out_types[0] if index == 0 else tensor_of(saved, out_types[index].get_shape())
        result = g.emit(LayerNormOp(part, [value, *affine], len(args["normalized_shape"]), args["eps"],
                                    args["weight"] is not None, args["bias"] is not None, kind))
        results.append(result if index == 0 else cast(g, result, out_types[index].element_type))
    return tuple(results)


def _statistic_type(value: SSAValue, affine: list[SSAValue], declared: Attribute) -> Attribute:
    """The element type ATen's CPU kernel gives a layer norm's mean and rstd: float32
    for a 16-bit input with float32 weight and bias (its mixed-type path, as under
    autocast; torch's meta kernel declares the input's type), else `declared`."""
    element = element_of(value.type)
    if affine and element in (bf16, f16) and all(element_of(p.type) == f32 for p in affine):
        return f32
    return declared


def _as_kernel_saved(g: GraphImporter, value: SSAValue, input: SSAValue, affine: list[SSAValue]) -> SSAValue:
    """A layer norm's saved statistic as its kernel gives it: the `rdu.layer_norm`
    a cast to the declared type was made from (`_statistic_type`), else `value`
    in the kernel's type (a statistic the program receives: a backward graph's input)."""
    owner = value.owner
    if isinstance(owner, MapOp) and len(owner.inputs) == 1 and isinstance(owner.inputs[0].owner, LayerNormOp):
        return owner.inputs[0]
    return cast(g, value, _statistic_type(input, affine, element_of(value.type)))


@converts(*LAYER_NORM_AS_EAGER)
def convert_layer_norm_backward(g: GraphImporter, node: torch.fx.Node) -> tuple[SSAValue | None, ...]:
    """(input, weight, bias gradients), each one `rdu.layer_norm_grad`: torch's
    fused kernel, as eager's backward runs it; a result not asked for (the
    output mask) or not read is None."""
    args = node_arguments(node)
    value = g.value(args["input"])
    affine = [g.value(args[k]) for k in ("weight", "bias") if args[k] is not None]
    tensors = [g.value(args["grad_out"]), value, *(_as_kernel_saved(g, g.value(args[k]), value, affine)
                                                  for k in ("mean", "rstd"))]
    has = {"weight": args["weight"] is not None, "bias": args["bias"] is not None}
    count = len(args["normalized_shape"])
    used, fakes = used_outputs(node), fake_value(node)
    return tuple(
        g.emit(LayerNormGradOp(of, [*tensors, *affine], count, has["weight"], has["bias"], fake_type(fakes[index])))
        if index in used and args["output_mask"][index] and (of == "input" or has[of]) else None
        for index, of in enumerate(GRADIENTS)
    )


@converts("aten._native_batch_norm_legit_no_training.default")
def convert_batch_norm(g: GraphImporter, node: torch.fx.Node) -> tuple[SSAValue | None, ...]:
    """Inference batch norm over dim 1 as torch's CPU kernel computes it:
    x * scale + shift, scale = rsqrt(var + eps) * weight and shift = bias -
    mean * scale. scale and shift read only the `[C, 1, ...]` parameters, so
    they are computed on those (per channel, not per element): two passes over
    x instead of four. (ATen's vectorized kernel rounds these terms otherwise,
    fused multiply-adds in places, so op by op 10-40% of elements differ from
    eager's in the last bit: the runtime runs this body as `native_batch_norm`
    itself, `rducc.runtime.batch_norms`.) The saved mean and invstd are what torch
    returns for them: empty tensors."""
    args = node_arguments(node)
    value = g.value(args["input"])
    shape = shape_of(value)
    channel_shape = [shape[1]] + [1] * (len(shape) - 2)
    out, *saved_types = (fake_type(f) for f in fake_value(node))
    compute = opmath_type(out.element_type)
    eps = args["eps"]
    names = ["running_mean", "running_var", "weight", "bias"]
    present = [n for n in names if args[n] is not None]
    params = [reshape(g, g.value(args[n]), channel_shape) for n in present]

    def body(b: ScalarBuilder, xs: list[Any]) -> SSAValue:
        named = dict(zip(present, (b.cast(x, compute) for x in xs[1:])))
        scale = b.unary("rsqrt", b.add(named["running_var"], b.constant(eps, compute))) \
            if "running_var" in named else None
        if "weight" in named:
            scale = named["weight"] if scale is None else b.mul(scale, named["weight"])
        shift = named.get("bias")
        if "running_mean" in named:
            centre = named["running_mean"] if scale is None else b.mul(named["running_mean"], scale)
            shift = b.neg(centre) if shift is None else b.sub(shift, centre)
        y = b.cast(xs[0], compute)
        y = y if scale is None else b.mul(y, scale)
        return y if shift is None else b.add(y, shift)

    used = used_outputs(node)
    saved = [
        g.map([], saved_type, _zeros(saved_type.element_type)) if index in used else None
        for index, saved_type in enumerate(saved_types, start=1)
    ]
    return g.map([value, *params], out, body), *saved


def _zeros(element: Attribute) -> Callable[[ScalarBuilder, list[SSAValue | Number]], SSAValue]:
    """A map body for a tensor of zeros of the element type."""
    return lambda b, xs: b.constant(0, element)


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
    shape = shape_of(value)
    dims = [0, *range(2, len(shape))]
    channel_shape = [shape[1]] + [1] * (len(shape) - 2)
    out_types = [fake_type(f) for f in fake_value(node)]
    compute = opmath_type(out_types[0].element_type)
    centered, mean, rstd = _standardize(g, value, dims, args["eps"], compute)
    present = [n for n in ("weight", "bias") if args[n] is not None]
    params = [reshape(g, g.value(args[n]), channel_shape) for n in present]

    def body(b: ScalarBuilder, xs: list[Any]) -> SSAValue:
        named = dict(zip(present, (b.cast(x, compute) for x in xs[2:])))
        return _scale_and_shift(b, b.mul(xs[0], xs[1]), named)

    used = used_outputs(node)

    def saved(stat: SSAValue, index: int) -> SSAValue | None:
        if index not in used:
            return None
        return reshape(g, cast(g, stat, out_types[index].element_type), out_types[index].get_shape())

    return g.map([centered, rstd, *params], out_types[0], body), saved(mean, 1), saved(rstd, 2)


@converts("aten.native_group_norm.default")
def convert_group_norm(g: GraphImporter, node: torch.fx.Node) -> tuple[SSAValue | None, ...]:
    """(y, mean, rstd): statistics over each group of C/G channels and all positions."""
    args = node_arguments(node)
    value = g.value(args["input"])
    shape = shape_of(value)
    batch, channels, groups = shape[0], shape[1], args["group"]
    out_types = [fake_type(f) for f in fake_value(node)]
    compute = opmath_type(out_types[0].element_type)
    grouped = reshape(g, value, [batch, groups, prod(shape) // max(batch * groups, 1)])
    variance, mean = variance_over(g, grouped, [2], True, 0, compute)
    eps = args["eps"]
    rstd = g.map([variance], variance.type, lambda b, xs: b.unary("rsqrt", b.add(xs[0], b.constant(eps, compute))))  # type: ignore[arg-type]
    normalized = g.map(
        [grouped, mean, rstd], tensor_of(compute, shape_of(grouped)),
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
    used = used_outputs(node)
    return (
        y,
        reshape(g, cast(g, mean, out_types[1].element_type), out_types[1].get_shape()) if 1 in used else None,
        reshape(g, cast(g, rstd, out_types[2].element_type), out_types[2].get_shape()) if 2 in used else None,
    )
