"""Convolution biases taken out of `rdu.conv` before a tp partition.

A 16-bit `rdu.conv` carries its bias as an operand (ATen's kernel adds it to
the sums before their one rounding). Split over its input channels (a tp row
split) each rank's convolution is a partial sum, and a bias inside it would
be added once a rank. Before tp partitions a program, each biased
convolution becomes what it computes: the convolution without its bias in
float32, and an `rdu.map` adding the `[C, 1, ...]` bias and rounding once to
the result's type, which the partitioner places after the all-reduce like
any bias add. Data parallelism (whole images a replica) keeps the bias in the
op, and so does a transposed convolution (its channels are never split).
"""

from __future__ import annotations

from xdsl.dialects import arith
from xdsl.dialects.builtin import Float32Type, ModuleOp, TensorType, f32
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue
from xdsl.rewriter import Rewriter

from rducc.dialects.rdu.dataflow import ConvOp, MapOp, ReshapeOp, YieldOp


def take_out_conv_biases(module: ModuleOp) -> None:
    """Rewrite every biased `rdu.conv` of `module` as a convolution and a bias add."""
    for conv in [op for op in module.walk() if isinstance(op, ConvOp) and op.bias is not None
                 and op.transposed is None]:  # a transposed one's channels are never split
        Rewriter.replace_op(conv, _unbiased(conv))


def _unbiased(conv: ConvOp) -> list[Operation]:
    """[the bias as `[C, 1, ...]`, the convolution in f32, the f32 add rounded to the result's type]."""
    assert conv.bias is not None
    result = conv.result.type
    assert isinstance(result, TensorType)
    shape = list(result.get_shape())
    bias_type = conv.bias.type
    assert isinstance(bias_type, TensorType)
    channels = ReshapeOp(conv.bias, TensorType(bias_type.element_type, [shape[1]] + [1] * (len(shape) - 2)))
    stride, padding, dilation, _, groups = conv.geometry()
    sums = ConvOp(conv.input, conv.weight, stride, padding, dilation, groups, TensorType(f32, shape))
    added = MapOp([sums.result, channels.result], result, Region(_add_block(bias_type.element_type, result)))
    for op in (channels, sums, added):  # its layer, training phase and the rest
        op.attributes.update(conv.attributes)
        op.location = conv.location
    return [channels, sums, added]


def _add_block(bias_element: Attribute, result: TensorType) -> Block:
    """`sum + extf(bias)`, truncated to the result's element type."""
    block = Block(arg_types=[f32, bias_element])
    body: list[Operation] = []
    bias: SSAValue = block.args[1]
    if not isinstance(bias_element, Float32Type):
        widened = arith.ExtFOp(bias, f32)
        body.append(widened)
        bias = widened.result
    total = arith.AddfOp(block.args[0], bias)
    body.append(total)
    value = total.result
    if not isinstance(result.element_type, Float32Type):
        narrowed = arith.TruncFOp(value, result.element_type)
        body.append(narrowed)
        value = narrowed.result
    block.add_ops([*body, YieldOp(value)])
    return block


__all__ = ["take_out_conv_biases"]
