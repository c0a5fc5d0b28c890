"""ATen reductions and scans (sum, prod, amax, amin, any, all, argmax, max,
mean, var, var_mean, vector norms, cumsum, cumprod) as `rdu.reduce`/`rdu.scan`;
their arithmetic runs in the opmath type (f32 for f16/bf16).
"""

from __future__ import annotations

from math import prod
from typing import Any

import torch
from xdsl.dialects.builtin import i1, i64
from xdsl.ir import SSAValue

from rducc.dialects.rdu.dataflow import (
    ReduceKind,
    ScanKind,
    ScanOp,
)
from rducc.frontend.aten_build import cast, mean_over, reduce, reshape, variance_over
from rducc.frontend.aten_common import (
    fake_type,
    normalize_dims,
    result_type,
    shape_of,
    tensor_of,
    used_outputs,
)
from rducc.frontend.converter_api import GraphImporter, converts, fake_value, node_arguments, positional
from rducc.frontend.scalar import ScalarBuilder, opmath_type


def _reduce_node(g: GraphImporter, node: torch.fx.Node, kind: ReduceKind) -> SSAValue:
    args = node_arguments(node)
    value = g.value(args["self"])
    dims = normalize_dims(args.get("dim"), len(shape_of(value)))
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
        value = reshape(g, value, [prod(shape_of(value))])
        flat = reduce(g, kind, value, [0], False, i64)
        return reshape(g, flat, result_type(node).get_shape())
    dims = normalize_dims(args["dim"], len(shape_of(value)))
    return reduce(g, kind, value, dims, bool(args["keepdim"]), i64)


@converts("aten.max.dim", "aten.min.dim")
def convert_max_dim(g: GraphImporter, node: torch.fx.Node) -> tuple[SSAValue | None, ...]:
    value = g.value(positional(node)[0])
    dims = normalize_dims(positional(node)[1], len(shape_of(value)))
    keepdim = bool(positional(node)[2]) if len(positional(node)) > 2 else False
    is_max = str(node.target) == "aten.max.dim"
    used = used_outputs(node)
    values = (
        reduce(g, ReduceKind.MAX if is_max else ReduceKind.MIN, value, dims, keepdim)
        if 0 in used
        else None
    )
    kind = ReduceKind.ARGMAX if is_max else ReduceKind.ARGMIN
    indices = reduce(g, kind, value, dims, keepdim, i64) if 1 in used else None
    return values, indices


@converts("aten.mean.dim", "aten.mean.default")
def convert_mean(g: GraphImporter, node: torch.fx.Node) -> SSAValue:
    args = node_arguments(node)
    value = g.value(args["self"])
    dims = normalize_dims(args.get("dim"), len(shape_of(value)))
    return mean_over(g, value, dims, bool(args.get("keepdim")), result_type(node).element_type)


@converts("aten.var.correction")
def convert_var(g: GraphImporter, node: torch.fx.Node) -> SSAValue:
    args = node_arguments(node)
    value = g.value(args["self"])
    dims = normalize_dims(args["dim"], len(shape_of(value)))
    correction = 1 if args["correction"] is None else args["correction"]
    return variance_over(g, value, dims, bool(args["keepdim"]), correction, result_type(node).element_type)[0]


@converts("aten.cumsum.default", "aten.cumprod.default")
def convert_cumsum(g: GraphImporter, node: torch.fx.Node) -> SSAValue:
    value = g.value(positional(node)[0])
    dim = positional(node)[1] % max(len(shape_of(value)), 1)
    out = result_type(node)
    kind = ScanKind.SUM if "cumsum" in str(node.target) else ScanKind.PROD
    return g.emit(ScanOp(kind, cast(g, value, out.element_type), dim, out))


@converts("aten.max.default", "aten.min.default")
def convert_max_all(g: GraphImporter, node: torch.fx.Node) -> SSAValue:
    value = g.value(positional(node)[0])
    kind = ReduceKind.MAX if str(node.target) == "aten.max.default" else ReduceKind.MIN
    return reduce(g, kind, value, list(range(len(shape_of(value)))), False)


@converts("aten.var_mean.correction")
def convert_var_mean(g: GraphImporter, node: torch.fx.Node) -> tuple[SSAValue, SSAValue]:
    args = node_arguments(node)
    value = g.value(args["self"])
    dims = normalize_dims(args["dim"], len(shape_of(value)))
    var_type, mean_type = (fake_type(f) for f in fake_value(node))
    correction = 1 if args["correction"] is None else args["correction"]
    variance, mean = variance_over(g, value, dims, bool(args["keepdim"]), correction, var_type.element_type)
    return variance, reshape(g, cast(g, mean, mean_type.element_type), mean_type.get_shape())


@converts("aten.var.dim")
def convert_var_dim(g: GraphImporter, node: torch.fx.Node) -> SSAValue:
    args = node_arguments(node)
    value = g.value(args["self"])
    dims = normalize_dims(args["dim"], len(shape_of(value)))
    correction = 1 if args["unbiased"] else 0
    return variance_over(g, value, dims, bool(args["keepdim"]), correction, result_type(node).element_type)[0]


@converts("aten.linalg_vector_norm.default")
def convert_vector_norm(g: GraphImporter, node: torch.fx.Node) -> SSAValue:
    """sum(|x|^ord)^(1/ord); ord inf/-inf is amax/amin of |x|, ord 0 counts non-zeros."""
    args = node_arguments(node)
    value = g.value(args["self"])
    dims = normalize_dims(args["dim"], len(shape_of(value)))
    keepdim = bool(args["keepdim"])
    out = result_type(node)
    compute = opmath_type(out.element_type)
    order = float(args["ord"])
    wide = tensor_of(compute, shape_of(value))
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
    return g.map([total], out, root)
