"""PT2E quantization ops (`quantized_decomposed.*`): quantize and dequantize,
per tensor and per channel, as `rdu.map`s with the reference formulas of
`torch.ao.quantization.fx._decomposed`:

    quantize:   clamp(round(x * (1 / scale)) + zero_point, qmin, qmax).to(dtype)
    dequantize: (q - zero_point) * scale   (f32, or out_dtype)

in f32, as the reference computes (rounding half to even), for int8, uint8,
int16 and int32 results (uint8 with a zero point such as 128).
"""

from __future__ import annotations

from typing import Any

import torch
import torch.ao.quantization.fx._decomposed  # noqa: F401  (registers the ops)
from xdsl.dialects.builtin import f32, f64
from xdsl.ir import SSAValue

from rducc.frontend.aten_build import reshape
from rducc.frontend.aten_common import result_type, shape_of
from rducc.frontend.converter_api import GraphImporter, converts, node_arguments
from rducc.frontend.scalar import ScalarBuilder


def _per_channel(g: GraphImporter, value: SSAValue, params: SSAValue, axis: int) -> SSAValue:
    """A per-channel parameter vector shaped to broadcast along `axis` of `value`."""
    shape = [1] * len(shape_of(value))
    shape[axis] = shape_of(params)[0]
    return reshape(g, params, shape)


def _quantize(
    b: ScalarBuilder, x: SSAValue, inverse_scale: SSAValue, zero_point: SSAValue, low: int, high: int
) -> SSAValue:
    shifted = b.add(b.unary("round", b.mul(b.cast(x, f32), inverse_scale)), b.cast(zero_point, f32))
    return b.minimum(b.maximum(shifted, b.constant(low, f32)), b.constant(high, f32))


@converts("quantized_decomposed.quantize_per_tensor.default")
def convert_quantize_per_tensor(g: GraphImporter, node: torch.fx.Node) -> SSAValue:
    args = node_arguments(node)
    inverse, zero, low, high = 1.0 / args["scale"], args["zero_point"], args["quant_min"], args["quant_max"]
    return g.map(
        [g.value(args["input"])], result_type(node),
        lambda b, xs: _quantize(b, xs[0], b.constant(inverse, f32), b.constant(zero, f32), low, high),  # type: ignore[arg-type]
    )


@converts("quantized_decomposed.quantize_per_channel.default")
def convert_quantize_per_channel(g: GraphImporter, node: torch.fx.Node) -> SSAValue:
    args = node_arguments(node)
    value = g.value(args["input"])
    axis = args["axis"] % len(shape_of(value))
    scales = _per_channel(g, value, g.value(args["scales"]), axis)
    zeros = _per_channel(g, value, g.value(args["zero_points"]), axis)
    low, high = args["quant_min"], args["quant_max"]

    def body(b: ScalarBuilder, xs: list[Any]) -> SSAValue:
        scale = b.cast(xs[1], f32)
        inverse = b.div(b.constant(1.0, scale.type), scale)
        return _quantize(b, xs[0], inverse, xs[2], low, high)

    return g.map([value, scales, zeros], result_type(node), body)


@converts("quantized_decomposed.dequantize_per_tensor.default")
def convert_dequantize_per_tensor(g: GraphImporter, node: torch.fx.Node) -> SSAValue:
    args = node_arguments(node)
    scale, zero = args["scale"], args["zero_point"]

    def body(b: ScalarBuilder, xs: list[Any]) -> SSAValue:
        return b.mul(b.sub(b.cast(xs[0], f32), b.constant(zero, f32)), b.constant(scale, f32))

    return g.map([g.value(args["input"])], result_type(node), body)


@converts("quantized_decomposed.dequantize_per_channel.default")
def convert_dequantize_per_channel(g: GraphImporter, node: torch.fx.Node) -> SSAValue:
    """(q - zero_point) in the zero points' integer type, times the scales."""
    args = node_arguments(node)
    value = g.value(args["input"])
    axis = args["axis"] % len(shape_of(value))
    inputs = [value, _per_channel(g, value, g.value(args["scales"]), axis)]
    if args["zero_points"] is not None:
        inputs.append(_per_channel(g, value, g.value(args["zero_points"]), axis))

    def body(b: ScalarBuilder, xs: list[Any]) -> SSAValue:
        scale = xs[1] if xs[1].type == f64 else b.cast(xs[1], f32)
        if len(xs) == 3:
            wide = xs[2].type
            centered = b.sub(b.cast(xs[0], wide), xs[2])
        else:
            centered = xs[0]
        return b.mul(b.cast(centered, scale.type), scale)

    return g.map(inputs, result_type(node), body)
