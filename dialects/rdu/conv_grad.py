"""A 16-bit convolution's gradients, each one op computed as ATen's CPU kernel
`convolution_backward` computes it (issue 27).

rducc writes a convolution's backward as convolutions (`rducc.frontend.
aten_backward.convolution_backward`), and a float32 one is eager's that way.
In bf16 (f16) it is not, and how it differs depends on the CPU: where oneDNN
has no bf16 kernels (AVX2 without AVX512-BF16) torch runs the slow
im2col/col2im path, which rounds the input gradient's overlapping taps and
the weight gradient's per-image sums to bf16 one by one (a third of a
step's conv gradient elements a rounding away from "f32, rounded once");
where it has them, oneDNN's own order. These ops name the gradient whole and
the runtime calls torch's `convolution_backward` on the 16-bit operands
(`rducc.runtime.kernels.conv_gradient`), so the bits are eager autocast's on
whatever CPU runs it.

- `rdu.conv_grad "input"|"weight"|"bias"`: one result of
  `convolution_backward(grad, input, weight, ...)` of the convolution (or,
  with `transposed`, the transposed convolution) of the op's stride,
  padding, dilation, output padding and groups; the input's and weight's
  gradients have their types, the bias's is `[channels of grad]` in grad's
  element type.

One op of one result, so the partitioner splits it by its dim map: the input
gradient image by image; the weight and bias gradients sum over the batch
(split batch: partial sums, all-reduced). A dense one's channels move as the
convolution's (tp's splits through the backward, `weight_channel_dims`: a
transposed convolution's weight is [in, out], a direct one's [out, in]): the
input gradient sums the output channels (split: partial sums) and keeps the
input channels; the weight gradient keeps both; the bias gradient keeps the
output channels, its input and weight read for their shapes alone
(`rdu_partition.conv_grads`). A grouped one's dim map reads its channels
whole; the partitioner splits them by whole groups alone
(`rdu_partition.conv_grads.by_whole_groups`). A partial sum of 16-bit operands may have an
f32 result (a mixed-precision step's, rounded once after its all-reduce):
the kernel then runs on the operands cast up, its sums not rounded.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import ClassVar

from xdsl.dialects.builtin import I64, DenseArrayBase, IntegerAttr, StringAttr, UnitAttr, f32, i64
from xdsl.ir import Attribute, SSAValue
from xdsl.irdl import (
    IRDLOperation,
    irdl_op_definition,
    operand_def,
    opt_prop_def,
    prop_def,
    result_def,
    traits_def,
)
from xdsl.traits import Pure
from xdsl.utils.exceptions import VerifyException

from rducc.dialects.op_facts import Dest, Dim, DimMap, OpFacts, Shape, elements
from rducc.dialects.shapes import STATIC_TENSOR, element_of, shape_of

CONV_GRADIENTS = ("input", "weight", "bias")
"""The results of `convolution_backward`, in its order."""

_WINDOW_ATTRS = ("stride", "padding", "dilation", "output_padding")


@irdl_op_definition
class ConvGradOp(IRDLOperation, OpFacts):
    """One result of `convolution_backward(grad, input, weight, ...)` (module docstring)."""

    name = "rdu.conv_grad"
    SHARDS: ClassVar[bool] = True
    grad = operand_def(STATIC_TENSOR)
    input = operand_def(STATIC_TENSOR)
    weight = operand_def(STATIC_TENSOR)
    of = prop_def(StringAttr)
    stride = prop_def(DenseArrayBase.constr(I64))
    padding = prop_def(DenseArrayBase.constr(I64))
    dilation = prop_def(DenseArrayBase.constr(I64))
    output_padding = prop_def(DenseArrayBase.constr(I64))
    groups = prop_def(IntegerAttr[I64])
    transposed = opt_prop_def(UnitAttr)
    result = result_def(STATIC_TENSOR)
    traits = traits_def(Pure())
    assembly_format = (
        "$of $grad `,` $input `,` $weight `stride` $stride `padding` $padding `dilation` $dilation "
        "`output_padding` $output_padding `groups` $groups (`transposed` $transposed^)? attr-dict `:` "
        "type($grad) `,` type($input) `,` type($weight) `->` type($result)"
    )

    def __init__(self, of: str, grad: SSAValue, input: SSAValue, weight: SSAValue, stride: Sequence[int],
                 padding: Sequence[int], dilation: Sequence[int], output_padding: Sequence[int], groups: int,
                 transposed: bool, result_type: Attribute):
        props: dict[str, Attribute] = {"of": StringAttr(of), "groups": IntegerAttr(groups, i64)}
        for label, values in zip(_WINDOW_ATTRS, (stride, padding, dilation, output_padding)):
            props[label] = DenseArrayBase.from_list(i64, list(values))
        if transposed:
            props["transposed"] = UnitAttr()
        super().__init__(operands=[grad, input, weight], result_types=[result_type], properties=props)

    def window(self, label: str) -> tuple[int, ...]:
        """One of the window attributes (stride, padding, dilation, output_padding) as ints."""
        return tuple(getattr(self, label).get_values())

    def verify_(self) -> None:
        of = self.of.data
        if of not in CONV_GRADIENTS:
            raise VerifyException(f"'rdu.conv_grad' of must be one of {list(CONV_GRADIENTS)}, got '{of}'")
        grad, x, w = (shape_of(v.type) for v in (self.grad, self.input, self.weight))
        if len(x) < 3 or len(grad) != len(x) or len(w) != len(x):
            raise VerifyException("'rdu.conv_grad' grad, input and weight need equal rank >= 3")
        for label in _WINDOW_ATTRS:
            if len(self.window(label)) != len(x) - 2:
                raise VerifyException(f"'rdu.conv_grad' {label} has {len(self.window(label))} entries, "
                                      f"expected {len(x) - 2}")
        if len({element_of(v.type) for v in (self.grad, self.input, self.weight)}) != 1:
            raise VerifyException("'rdu.conv_grad' grad, input and weight must have one element type")
        groups = self.groups.value.data
        channels_in, channels_out = (w[0], w[1] * groups) if self.transposed else (w[1] * groups, w[0])
        if groups < 1 or x[1] != channels_in or grad[1] != channels_out or grad[0] != x[0]:
            raise VerifyException(f"'rdu.conv_grad' channels do not match: input {list(x)}, weight {list(w)}, "
                                  f"grad {list(grad)}, {groups} groups")
        wanted = (shape_of(self.grad.type)[1:2], element_of(self.grad.type)) if of == "bias" else \
            (shape_of(self._source().type), element_of(self._source().type))
        got = (shape_of(self.result.type), element_of(self.result.type))
        if got != wanted and got != (wanted[0], f32):  # f32: a partial sum kept wide
            raise VerifyException(f"'rdu.conv_grad' of {of} must have type {list(wanted[0])} x {wanted[1]} "
                                  "(or f32)")

    def _source(self) -> SSAValue:
        """The operand whose gradient the op is (the grad itself for the bias's)."""
        return {"input": self.input, "weight": self.weight}.get(self.of.data, self.grad)

    def weight_channel_dims(self) -> tuple[int, int]:
        """(the weight's output-channel dim, its input-channel dim): (0, 1), a transposed one's (1, 0)."""
        return (1, 0) if self.transposed is not None else (0, 1)

    def dims_for(self, ins: Sequence[Shape], outs: Sequence[Shape]) -> DimMap:
        """The input gradient: image by image; the weight's and bias's: sums over
        the images (split batch: partial sums). A dense convolution's channels
        move too (the module docstring); a grouped one's are read whole."""
        grad, image, weight = (list[Dest]([Dim.BLOCKED] * len(shape)) for shape in ins)
        of, dense = self.of.data, self.groups.value.data == 1
        outputs, inputs = self.weight_channel_dims()
        if of == "input":
            grad[0] = image[0] = 0
            if dense:
                grad[1], image[1], weight[outputs], weight[inputs] = Dim.REDUCED, 1, Dim.REDUCED, 1
            return DimMap((tuple(grad), tuple(image), tuple(weight)),
                          frozenset(range(2 if dense else 1, len(outs[0]))), sums=dense)
        grad[0] = image[0] = Dim.REDUCED
        if dense and of == "weight":
            grad[1], image[1], weight[outputs], weight[inputs] = outputs, inputs, outputs, inputs
        elif dense:
            grad[1] = weight[outputs] = 0
        kept = {outputs, inputs} if of == "weight" else {0}
        return DimMap((tuple(grad), tuple(image), tuple(weight)),
                      frozenset(range(len(outs[0]))) - (kept if dense else set()), sums=True)

    def flops(self) -> int:
        """The input's and weight's: 2 x the direct convolution's output elements x
        its multiply-adds per output (as `rdu.conv`); the bias's: one per grad element."""
        if self.of.data == "bias":
            return elements(self.grad)
        direct = self.input if self.transposed else self.grad
        weight = shape_of(self.weight.type)
        return 2 * elements(direct) * weight[1] * math.prod(weight[2:])


__all__ = ["CONV_GRADIENTS", "ConvGradOp"]
