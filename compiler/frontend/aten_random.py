"""Random ops: `rdu.random` draws (uniform [0, 1) or standard normal) and
formulas over them.

torch.rand/rand_like and randn/randn_like are one `rdu.random` each;
bernoulli with a scalar p is `uniform < p`; training-mode dropout keeps an
element where `uniform > p` and scales it by 1 / (1 - p), as torch's own
decomposition does; randperm sorts n uniform numbers and returns the order.
Each op gets its own seed (its position among the program's random ops), so
the MLIR is deterministic; the runtime draws from (seed, run number): fresh
values on every run, the same values wherever one run reads them. The numbers
are not torch's: tests check their distribution, not their values.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
from xdsl.dialects.builtin import f32, i1
from xdsl.ir import SSAValue

from rducc.dialects.rdu.dataflow import RandomOp
from rducc.dialects.shapes import is_float
from rducc.frontend.aten_build import cast, sort_along
from rducc.frontend.aten_common import fake_type, result_type, tensor_of
from rducc.frontend.converter_api import GraphImporter, converts, fake_value, node_arguments
from rducc.frontend.scalar import ScalarBuilder, opmath_type


def draw(g: GraphImporter, distribution: str, shape: Sequence[int], element: Any) -> SSAValue:
    """One `rdu.random` of `shape`, seeded by how many came before it."""
    seed = sum(isinstance(op, RandomOp) for op in g.block.ops)
    return g.emit(RandomOp(distribution, seed, tensor_of(element, shape)))


def _random_element(node: torch.fx.Node) -> Any:
    element = result_type(node).element_type
    return element if is_float(element) else f32


@converts("aten.rand.default", "aten.rand_like.default")
def convert_rand(g: GraphImporter, node: torch.fx.Node) -> SSAValue:
    out = result_type(node)
    return cast(g, draw(g, "uniform", out.get_shape(), _random_element(node)), out.element_type)


@converts("aten.randn.default", "aten.randn_like.default")
def convert_randn(g: GraphImporter, node: torch.fx.Node) -> SSAValue:
    out = result_type(node)
    return cast(g, draw(g, "normal", out.get_shape(), _random_element(node)), out.element_type)


@converts("aten.bernoulli.p")
def convert_bernoulli(g: GraphImporter, node: torch.fx.Node) -> SSAValue:
    """1 with probability p, else 0, in the input's dtype."""
    out = result_type(node)
    chance = float(node_arguments(node)["p"])
    uniform = draw(g, "uniform", out.get_shape(), f32)
    return g.map([uniform], out, lambda b, xs: b.compare("lt", xs[0], b.constant(chance, f32)))  # type: ignore[arg-type]


@converts("aten.native_dropout.default")
def convert_native_dropout(g: GraphImporter, node: torch.fx.Node) -> tuple[SSAValue, SSAValue]:
    """(input * keep / (1 - p), keep) with keep = uniform > p in training;
    (input, all true) otherwise."""
    args = node_arguments(node)
    value = g.value(args["input"])
    out, mask_type = (fake_type(f) for f in fake_value(node))
    chance, training = float(args["p"]), args["train"]
    if training is False:
        return value, g.map([], mask_type, lambda b, xs: b.constant(True, i1))
    keep = g.map(
        [draw(g, "uniform", out.get_shape(), f32)], mask_type,
        lambda b, xs: b.compare("gt", xs[0], b.constant(chance, f32)),  # type: ignore[arg-type]
    )
    compute = opmath_type(out.element_type)
    scale = 1.0 / (1.0 - chance) if chance < 1 else 0.0

    def body(b: ScalarBuilder, xs: list[Any]) -> SSAValue:
        kept = b.mul(b.cast(xs[0], compute), b.constant(scale, compute))
        return b.select(xs[1], kept, b.constant(0.0, compute))

    return g.map([value, keep], out, body), keep


@converts("aten.randperm.default")
def convert_randperm(g: GraphImporter, node: torch.fx.Node) -> SSAValue:
    """The order that sorts n uniform numbers (ties, rare, are broken by position)."""
    out = result_type(node)
    count = out.get_shape()[0]
    _, order = sort_along(g, draw(g, "uniform", [count], f32), 0, False)
    return cast(g, order, out.element_type)


__all__ = ["draw"]
