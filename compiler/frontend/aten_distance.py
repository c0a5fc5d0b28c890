"""p-norm distances between rows: torch.cdist and F.pdist.

Both are the p-norm of row differences, computed directly (not through
torch's matmul form of the Euclidean distance, which rounds differently):
cdist broadcasts [..., P, 1, M] against [..., 1, R, M]; pdist gathers the
row pairs i < j (row-major, as torch orders them) and takes their norms.
"""

from __future__ import annotations

import math
from typing import Any

import torch
from xdsl.dialects.builtin import TensorType, i64
from xdsl.ir import SSAValue

from rducc.dialects.rdu.dataflow import ReduceKind
from rducc.frontend.aten_build import gather_dim, reduce, reshape, slice_dim, triangle_indices
from rducc.frontend.aten_common import result_type, shape_of, tensor_of
from rducc.frontend.converter_api import GraphImporter, converts, node_arguments
from rducc.frontend.scalar import ScalarBuilder, opmath_type


def _difference_norm(g: GraphImporter, a: SSAValue, b: SSAValue, order: float, out: TensorType) -> SSAValue:
    """||a - b||_order over the last dim, a and b broadcasting to out.shape + [M]."""
    compute = opmath_type(out.element_type)
    width = max(shape_of(a)[-1], shape_of(b)[-1])
    spread = tensor_of(compute, [*out.get_shape(), width])

    def term(builder: ScalarBuilder, xs: list[Any]) -> SSAValue:
        d = builder.abs(builder.sub(builder.cast(xs[0], compute), builder.cast(xs[1], compute)))
        if order == 0:
            return builder.cast(builder.compare("ne", d, builder.constant(0, compute)), compute)
        if math.isinf(order):
            return d
        return builder.mul(d, d) if order == 2 else builder.pow(d, order)

    terms = g.map([a, b], spread, term)
    last = len(out.get_shape())
    if math.isinf(order):
        kind = ReduceKind.MAX if order > 0 else ReduceKind.MIN
        return g.map([reduce(g, kind, terms, [last], False)], out, lambda builder, xs: xs[0])  # type: ignore[arg-type, return-value]
    total = reduce(g, ReduceKind.SUM, terms, [last], False)
    if order in (0, 1):
        return g.map([total], out, lambda builder, xs: xs[0])  # type: ignore[arg-type, return-value]
    if order == 2:
        return g.map([total], out, lambda builder, xs: builder.unary("sqrt", xs[0]))  # type: ignore[arg-type]
    return g.map([total], out, lambda builder, xs: builder.pow(xs[0], 1.0 / order))  # type: ignore[arg-type]


@converts("aten._cdist_forward.default")
def convert_cdist(g: GraphImporter, node: torch.fx.Node) -> SSAValue:
    """out[..., i, j] = ||x1[..., i, :] - x2[..., j, :]||_p."""
    args = node_arguments(node)
    x1, x2 = g.value(args["x1"]), g.value(args["x2"])
    first, second = list(shape_of(x1)), list(shape_of(x2))
    rows = reshape(g, x1, first[:-1] + [1, first[-1]])
    cols = reshape(g, x2, second[:-2] + [1] + second[-2:])
    return _difference_norm(g, rows, cols, float(args["p"]), result_type(node))


@converts("aten._pdist_forward.default")
def convert_pdist(g: GraphImporter, node: torch.fx.Node) -> SSAValue:
    """||x[i] - x[j]||_p for every row pair i < j, in row-major order of (i, j)."""
    args = node_arguments(node)
    value = g.value(args["self"])
    count_rows = shape_of(value)[0]
    out = result_type(node)
    pairs = out.get_shape()[0]
    if pairs == 0:
        return g.map([], out, lambda builder, xs: builder.constant(0, out.element_type))
    index = triangle_indices(g, count_rows, count_rows, 1, False, pairs, i64)
    left = gather_dim(g, value, reshape(g, slice_dim(g, index, 0, 0, 1), [pairs]), 0)
    right = gather_dim(g, value, reshape(g, slice_dim(g, index, 0, 1, 1), [pairs]), 0)
    return _difference_norm(g, left, right, float(args["p"]), out)


__all__ = ["convert_cdist", "convert_pdist"]
