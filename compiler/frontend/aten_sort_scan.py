"""ATen sorts (sort, topk, kthvalue: an `rdu.argsort`, a stable sort's order,
then a gather by it) and logcumsumexp (an `rdu.scan`).
"""

from __future__ import annotations

from typing import Any

import torch
from xdsl.dialects.builtin import i64
from xdsl.ir import SSAValue

from rducc.dialects.rdu.dataflow import (
    ReduceKind,
)
from rducc.frontend.aten_build import along, cast, move_dim, ramp, reduce, reshape, slice_dim, sort_along
from rducc.frontend.aten_common import result_type, shape_of, tensor_of
from rducc.frontend.converter_api import GraphImporter, converts, fake_value, node_arguments, positional
from rducc.frontend.scalar import ScalarBuilder, opmath_type


@converts("aten.logcumsumexp.default")
def convert_logcumsumexp(g: GraphImporter, node: torch.fx.Node) -> SSAValue:
    """log(sum_{j<=i} exp(x_j)), stable: each prefix i is shifted by its own max
    M_i, taken over a [..., J] mask of j <= i (O(n^2) along `dim`, like a scatter)."""
    value = g.value(positional(node)[0])
    out = result_type(node)
    rank = len(shape_of(value))
    if rank == 0:
        return cast(g, value, out.element_type)
    dim = positional(node)[1] % rank
    size = shape_of(value)[dim]
    compute = opmath_type(out.element_type)
    spread = tensor_of(compute, list(shape_of(value)) + [size])
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
    peak = reshape(g, peak, shape_of(total))

    def finish(b: ScalarBuilder, xs: list[Any]) -> SSAValue:
        infinite = b.compare("eq", xs[0], b.constant(float("inf"), compute))
        return b.select(infinite, xs[0], b.add(xs[0], b.unary("log", xs[1])))

    return g.map([peak, total], out, finish)


def _to_last(g: GraphImporter, value: SSAValue, dim: int) -> SSAValue:
    """`value` with `dim` moved last and a size-1 axis left in its place."""
    moved = move_dim(g, value, dim, len(shape_of(value)) - 1)
    shape = list(shape_of(moved))
    return reshape(g, moved, shape[:dim] + [1] + shape[dim:])


@converts("aten.sort.default", "aten.sort.stable")
def convert_sort(g: GraphImporter, node: torch.fx.Node) -> tuple[SSAValue, SSAValue]:
    args = node_arguments(node)
    value = g.value(args["self"])
    rank = len(shape_of(value))
    if rank == 0:
        return value, g.map([], tensor_of(i64, []), lambda b, xs: b.constant(0, i64))
    return sort_along(g, value, args["dim"] % rank, bool(args["descending"]))


@converts("aten.topk.default")
def convert_topk(g: GraphImporter, node: torch.fx.Node) -> tuple[SSAValue, SSAValue]:
    """The first k of a sort (descending for the largest); always sorted."""
    args = node_arguments(node)
    value = g.value(args["self"])
    dim = args["dim"] % max(len(shape_of(value)), 1)
    values, indices = sort_along(g, value, dim, bool(args["largest"]))
    return slice_dim(g, values, dim, 0, args["k"]), slice_dim(g, indices, dim, 0, args["k"])


@converts("aten.kthvalue.default")
def convert_kthvalue(g: GraphImporter, node: torch.fx.Node) -> tuple[SSAValue, SSAValue]:
    """The k-th smallest (1-based) along dim and its index."""
    args = node_arguments(node)
    value = g.value(args["self"])
    dim = args["dim"] % max(len(shape_of(value)), 1)
    values, indices = sort_along(g, value, dim, False)
    out_shapes = [tuple(f.shape) for f in fake_value(node)]
    return (
        reshape(g, slice_dim(g, values, dim, args["k"] - 1, 1), out_shapes[0]),
        reshape(g, slice_dim(g, indices, dim, args["k"] - 1, 1), out_shapes[1]),
    )
