"""A convolution's bias taken out of `rdu.conv` where tp sums its ranks' parts.

A 16-bit `rdu.conv` carries its bias as an operand (ATen's kernel adds it to
the sums before their one rounding). Split over its output channels (a tp
column split) each rank's convolution carries its slice of the bias, still
torch's kernel with its bias: eager autocast's bits, no collective. Split
over its input channels (a row split, direct or transposed) each rank's
convolution is a partial sum, and a bias inside it would be added once a
rank; the partitioner (`_TensorPartitioner._partition_summed_conv`) then
takes the bias out of that one op: the convolution without its bias in
float32, and an `rdu.map` adding the `[C, 1, ...]` bias and rounding once to
the result's type, which it places after the f32 all-reduce like any bias
add (the one rounding kept; the sums' order is the ranks' parts added, so not
eager's kernel's bits). Data parallelism (whole images a replica) keeps the
bias in the op.
"""

from __future__ import annotations

from xdsl.dialects import arith
from xdsl.dialects.builtin import Float32Type, TensorType, f32
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue
from xdsl.rewriter import Rewriter

from rducc.dialects.rdu.dataflow import ConvOp, MapOp, ReshapeOp, YieldOp


def take_out_conv_bias(conv: ConvOp) -> list[Operation]:
    """Replace the biased `conv` by what it computes (its bias as `[C, 1, ...]`,
    the convolution in f32, the f32 add rounded to the result's type); those ops."""
    ops = _unbiased(conv)
    Rewriter.replace_op(conv, ops)
    return ops


def _unbiased(conv: ConvOp) -> list[Operation]:
    """[the bias as `[C, 1, ...]`, the convolution in f32, the f32 add rounded to the result's type]."""
    assert conv.bias is not None
    result = conv.result.type
    assert isinstance(result, TensorType)
    shape = list(result.get_shape())
    bias_type = conv.bias.type
    assert isinstance(bias_type, TensorType)
    channels = ReshapeOp(conv.bias, TensorType(bias_type.element_type, [shape[1]] + [1] * (len(shape) - 2)))
    stride, padding, dilation, extra, groups = conv.geometry()
    sums = ConvOp(conv.input, conv.weight, stride, padding, dilation, groups, TensorType(f32, shape),
                  output_padding=extra if conv.transposed is not None else None)
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


__all__ = ["take_out_conv_bias"]
