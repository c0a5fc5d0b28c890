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
(split batch: partial sums, all-reduced).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import ClassVar

from xdsl.dialects.builtin import I64, DenseArrayBase, IntegerAttr, StringAttr, UnitAttr, i64
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
        if (shape_of(self.result.type), element_of(self.result.type)) != wanted:
            raise VerifyException(f"'rdu.conv_grad' of {of} must have type {list(wanted[0])} x {wanted[1]}")

    def _source(self) -> SSAValue:
        """The operand whose gradient the op is (the grad itself for the bias's)."""
        return {"input": self.input, "weight": self.weight}.get(self.of.data, self.grad)

    def dims_for(self, ins: Sequence[Shape], outs: Sequence[Shape]) -> DimMap:
        """The input gradient: image by image, the rest read whole. The weight's
        and bias's: sums over the images (split batch: partial sums)."""
        grad, image, weight = ((Dim.BLOCKED,) * len(shape) for shape in ins)
        if self.of.data == "input":
            per_image: tuple[Dest, ...] = (0, *grad[1:])
            return DimMap((per_image, (0, *image[1:]), weight), frozenset(range(1, len(outs[0]))))
        summed: tuple[Dest, ...] = (Dim.REDUCED, *grad[1:])
        return DimMap((summed, (Dim.REDUCED, *image[1:]), weight), frozenset(range(len(outs[0]))), sums=True)

    def flops(self) -> int:
        """The input's and weight's: 2 x the direct convolution's output elements x
        its multiply-adds per output (as `rdu.conv`); the bias's: one per grad element."""
        if self.of.data == "bias":
            return elements(self.grad)
        direct = self.input if self.transposed else self.grad
        weight = shape_of(self.weight.type)
        return 2 * elements(direct) * weight[1] * math.prod(weight[2:])


__all__ = ["CONV_GRADIENTS", "ConvGradOp"]
