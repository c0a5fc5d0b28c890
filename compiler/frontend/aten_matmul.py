"""ATen matrix products: mm, bmm, addmm, addbmm as `rdu.matmul`; transformers'
grouped expert product as `rdu.grouped_matmul`.
"""

from __future__ import annotations

from typing import Any

import torch
from xdsl.dialects.builtin import TensorType
from xdsl.ir import SSAValue

from rducc.dialects.rdu.dataflow import (
    GroupedMatmulOp,
    MatmulOp,
    ReduceKind,
)
from rducc.frontend.aten_build import reduce
from rducc.frontend.aten_common import result_type, shape_of, tensor_of
from rducc.frontend.aten_rewrites import experts_form
from rducc.frontend.converter_api import GraphImporter, converts, fake_value, node_arguments, positional
from rducc.frontend.scalar import ScalarBuilder, opmath_type


@converts("aten.mm.default", "aten.bmm.default")
def convert_mm(g: GraphImporter, node: torch.fx.Node) -> SSAValue:
    lhs, rhs = g.value(positional(node)[0]), g.value(positional(node)[1])
    return g.emit(MatmulOp(lhs, rhs, result_type(node)))


@converts("transformers.grouped_mm_fallback.default")
def convert_grouped_mm_fallback(g: GraphImporter, node: torch.fx.Node) -> SSAValue:
    """transformers' grouped matmul (a mixture of experts' rows sorted by expert,
    `offs` the cumulative counts): each row multiplied by its own expert only."""
    args = node_arguments(node)
    lhs, rhs, offsets = g.value(args["input"]), g.value(args["weight"]), g.value(args["offs"])
    return g.emit(GroupedMatmulOp(lhs, rhs, offsets, result_type(node)))


def _check_grouped_mm(node: torch.fx.Node) -> str | None:
    """`aten._grouped_mm`'s one form the importer takes (the others are decomposed,
    `aten_rewrites.grouped_mm`): rows grouped by expert."""
    args = node_arguments(node)
    lhs, rhs = fake_value(args["self"]), fake_value(args["mat2"])
    if not experts_form(lhs.dim(), rhs.dim(), args["offs"], args["bias"], args["out_dtype"], lhs.dtype):
        return ("a form other than rank-2 rows by a rank-3 expert table with offsets, no bias and no other "
                "output dtype")
    return None


@converts("aten._grouped_mm.default", check=_check_grouped_mm)
def convert_grouped_mm(g: GraphImporter, node: torch.fx.Node) -> SSAValue:
    """torch's grouped matmul of a mixture of experts (transformers' default experts
    on bf16: rows sorted by expert, `offs` the cumulative counts): each row by its own
    expert only, as transformers' fallback (`rdu.grouped_matmul`)."""
    args = node_arguments(node)
    lhs, rhs, offsets = g.value(args["self"]), g.value(args["mat2"]), g.value(args["offs"])
    return g.emit(GroupedMatmulOp(lhs, rhs, offsets, result_type(node)))


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


@converts("aten.addbmm.default")
def convert_addbmm(g: GraphImporter, node: torch.fx.Node) -> SSAValue:
    """beta * self + alpha * sum_b(batch1[b] @ batch2[b])."""
    args = node_arguments(node)
    out = result_type(node)
    compute = opmath_type(out.element_type)
    lhs, rhs = g.value(args["batch1"]), g.value(args["batch2"])
    batch, rows, cols = shape_of(lhs)[0], shape_of(lhs)[1], shape_of(rhs)[2]
    product = g.emit(MatmulOp(lhs, rhs, tensor_of(compute, [batch, rows, cols])))
    total = reduce(g, ReduceKind.SUM, product, [0], False)
    beta, alpha = args["beta"], args["alpha"]

    def body(b: ScalarBuilder, xs: list[Any]) -> SSAValue:
        scaled = b.mul(xs[1], b.constant(alpha, compute)) if alpha != 1 else xs[1]
        if beta == 0:
            return scaled
        bias = b.cast(xs[0], compute)
        return b.add(scaled, b.mul(bias, b.constant(beta, compute)) if beta != 1 else bias)

    return g.map([g.value(args["self"]), total], out, body)
