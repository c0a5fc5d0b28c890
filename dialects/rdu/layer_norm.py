"""A training step's layer norm and its gradients, each result one op computed
as ATen's fused CPU kernels compute it (issue 27).

A training step saves a layer norm's per-row mean and reciprocal standard
deviation for its backward, and the backward is `native_layer_norm_backward`.
Written as sums and maps (torch's decompositions), both depart from eager's
kernels: the kernels sum rows in their own vectorized order (Welford moments,
lane-wise partial sums) and fold the gradient's arithmetic differently, so
in bf16 a third to a half of the weight gradient's elements and many input
gradient elements land a rounding away from eager autocast's (GPT-2's and
ViT's layer norms). Its output, made from
the kernel's statistics by maps, is still a rounding off the kernel's in
places (a bf16 layer of width 768: a few in 100,000), and each such element
moves the gradients after it. These ops name the computation whole; the
runtime runs torch's kernels (`rducc.runtime.kernels.layer_norm_part`,
`layer_norm_gradient`), so the output, the saved statistics and the
gradients are eager's bit for bit.

- `rdu.layer_norm "output"|"mean"|"rstd"`: one result of `native_layer_norm`
  over the last `normalized` dims of its input (with the layer's weight and
  bias, when it has them: the kernel's path for a 16-bit input with float32
  parameters differs from its plain one); the statistics shaped as torch
  returns them (the normalized dims kept as 1), in the kernel's type.
- `rdu.layer_norm_grad "input"|"weight"|"bias"`: one result of
  `native_layer_norm_backward(grad, input, mean, rstd, weight, bias)`.

Each is one op of one result, so the partitioner splits it by its dim map:
rows move whole (a row reads its own elements only), and the weight and bias
gradients sum over rows (split rows: partial sums, all-reduced).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from xdsl.dialects.builtin import I64, Float64Type, FloatAttr, IntegerAttr, StringAttr, UnitAttr, f64, i64
from xdsl.ir import Attribute, SSAValue
from xdsl.irdl import (
    IRDLOperation,
    irdl_op_definition,
    opt_prop_def,
    prop_def,
    result_def,
    traits_def,
    var_operand_def,
)
from xdsl.traits import Pure
from xdsl.utils.exceptions import VerifyException

from rducc.dialects.op_facts import Dest, Dim, DimMap, OpFacts, Shape, elements
from rducc.dialects.shapes import STATIC_TENSOR, element_of, shape_of

PARTS = ("output", "mean", "rstd")
"""The results of `native_layer_norm`, in its order."""

GRADIENTS = ("input", "weight", "bias")
"""The results of `native_layer_norm_backward`, in its order."""

PART_FLOPS = {"output": 5, "mean": 1, "rstd": 2}
"""Per input element: the output's centring, scaling and affine multiply-add
and its share of the rsqrt; the mean's row sum; the rstd's centred square and
its sum (one layer norm: 8, as its decomposition into maps and reductions)."""

GRADIENT_FLOPS = {"input": 8, "weight": 3, "bias": 1}
"""Per input element: the input gradient's two row sums of products and its
`a * dy * w + b * x + c`; the weight gradient's normalized product and sum; the
bias gradient's sum."""


def _affine_props(weight: bool, bias: bool) -> dict[str, Attribute]:
    props: dict[str, Attribute] = {}
    if weight:
        props["with_weight"] = UnitAttr()
    if bias:
        props["with_bias"] = UnitAttr()
    return props


def _verify_affine(op: IRDLOperation, params: Sequence[SSAValue], normalized: Shape) -> None:
    """The weight and bias operands: one each that the op says it has, of the normalized shape."""
    expected = int(op.properties.get("with_weight") is not None) + int(op.properties.get("with_bias") is not None)
    if len(params) != expected:
        raise VerifyException(f"'{op.name}' has {len(params)} weight/bias operands, its with_weight/with_bias "
                              f"say {expected}")
    for param in params:
        if shape_of(param.type) != normalized:
            raise VerifyException(f"'{op.name}' weight and bias must have the normalized shape {list(normalized)}, "
                                  f"got {list(shape_of(param.type))}")


def _normalized_of(op: IRDLOperation, normalized: IntegerAttr, input: SSAValue) -> tuple[Shape, Shape]:
    """(the rows' shape, the normalized shape) of `input`, checked."""
    count, shape = normalized.value.data, shape_of(input.type)
    if not 1 <= count <= len(shape):
        raise VerifyException(f"'{op.name}' normalizes {count} trailing dims of a rank-{len(shape)} input")
    return shape[:len(shape) - count], shape[len(shape) - count:]


def _rows_then(rows: int, rest: Sequence[Dest]) -> tuple[Dest, ...]:
    return (*range(rows), *rest)


@irdl_op_definition
class LayerNormOp(IRDLOperation, OpFacts):
    """One result of `native_layer_norm(input, weight, bias, eps)` (module docstring)."""

    name = "rdu.layer_norm"
    SHARDS: ClassVar[bool] = True
    inputs = var_operand_def(STATIC_TENSOR)
    part = prop_def(StringAttr)
    normalized = prop_def(IntegerAttr[I64])
    eps = prop_def(FloatAttr[Float64Type])
    with_weight = opt_prop_def(UnitAttr)
    with_bias = opt_prop_def(UnitAttr)
    result = result_def(STATIC_TENSOR)
    traits = traits_def(Pure())
    assembly_format = (
        "$part $inputs `normalized` $normalized `eps` $eps (`weight` $with_weight^)? (`bias` $with_bias^)? "
        "attr-dict `:` type($inputs) `->` type($result)"
    )

    def __init__(self, part: str, inputs: Sequence[SSAValue], normalized: int, eps: float, weight: bool,
                 bias: bool, result_type: Attribute):
        props = {"part": StringAttr(part), "normalized": IntegerAttr(normalized, i64), "eps": FloatAttr(eps, f64),
                 **_affine_props(weight, bias)}
        super().__init__(operands=[list(inputs)], result_types=[result_type], properties=props)

    def verify_(self) -> None:
        part = self.part.data
        if part not in PARTS:
            raise VerifyException(f"'rdu.layer_norm' part must be one of {list(PARTS)}, got '{part}'")
        if not self.inputs:
            raise VerifyException("'rdu.layer_norm' needs the input")
        rows, normalized = _normalized_of(self, self.normalized, self.inputs[0])
        _verify_affine(self, self.inputs[1:], normalized)
        expected = (*rows, *normalized) if part == "output" else (*rows, *[1] * len(normalized))
        if shape_of(self.result.type) != expected:
            raise VerifyException(f"'rdu.layer_norm' {part} shape {list(shape_of(self.result.type))} "
                                  f"should be {list(expected)}")

    def dims_for(self, ins: Sequence[Shape], outs: Sequence[Shape]) -> DimMap:
        """Rows move whole; a row's normalized dims are read whole (blocked); weight and bias whole."""
        count = self.normalized.value.data
        rows = len(ins[0]) - count
        operands = [_rows_then(rows, [Dim.BLOCKED] * count), *[(Dim.BLOCKED,) * count for _ in ins[1:]]]
        return DimMap(tuple(operands), frozenset(range(rows, rows + count)))

    def flops(self) -> int:
        """`PART_FLOPS[part]` per input element."""
        return PART_FLOPS[self.part.data] * elements(self.inputs[0])


@irdl_op_definition
class LayerNormGradOp(IRDLOperation, OpFacts):
    """One result of `native_layer_norm_backward(grad, input, mean, rstd, weight, bias)` (module docstring)."""

    name = "rdu.layer_norm_grad"
    SHARDS: ClassVar[bool] = True
    inputs = var_operand_def(STATIC_TENSOR)
    of = prop_def(StringAttr)
    normalized = prop_def(IntegerAttr[I64])
    with_weight = opt_prop_def(UnitAttr)
    with_bias = opt_prop_def(UnitAttr)
    result = result_def(STATIC_TENSOR)
    traits = traits_def(Pure())
    assembly_format = (
        "$of $inputs `normalized` $normalized (`weight` $with_weight^)? (`bias` $with_bias^)? "
        "attr-dict `:` type($inputs) `->` type($result)"
    )

    def __init__(self, of: str, inputs: Sequence[SSAValue], normalized: int, weight: bool, bias: bool,
                 result_type: Attribute):
        props = {"of": StringAttr(of), "normalized": IntegerAttr(normalized, i64), **_affine_props(weight, bias)}
        super().__init__(operands=[list(inputs)], result_types=[result_type], properties=props)

    def verify_(self) -> None:
        of = self.of.data
        if of not in GRADIENTS:
            raise VerifyException(f"'rdu.layer_norm_grad' of must be one of {list(GRADIENTS)}, got '{of}'")
        if len(self.inputs) < 4:
            raise VerifyException("'rdu.layer_norm_grad' needs grad, input, mean and rstd")
        grad, input, mean, rstd = self.inputs[:4]
        rows, normalized = _normalized_of(self, self.normalized, input)
        if shape_of(grad.type) != shape_of(input.type) or element_of(grad.type) != element_of(input.type):
            raise VerifyException("'rdu.layer_norm_grad' grad and input must have one type")
        for stat in (mean, rstd):
            if shape_of(stat.type) != (*rows, *[1] * len(normalized)):
                raise VerifyException(f"'rdu.layer_norm_grad' mean and rstd must have shape "
                                      f"{[*rows, *[1] * len(normalized)]}, got {list(shape_of(stat.type))}")
        _verify_affine(self, self.inputs[4:], normalized)
        if of != "input" and self.properties.get(f"with_{of}") is None:
            raise VerifyException(f"'rdu.layer_norm_grad' of {of} needs the layer's {of}")
        wanted = self._source().type
        if shape_of(self.result.type) != shape_of(wanted) or element_of(self.result.type) != element_of(wanted):
            raise VerifyException(f"'rdu.layer_norm_grad' of {of} must have the type of the {of}")

    def _source(self) -> SSAValue:
        """The operand whose gradient the op is."""
        of = self.of.data
        if of == "input":
            return self.inputs[1]
        return self.inputs[4] if of == "weight" else self.inputs[-1]

    def dims_for(self, ins: Sequence[Shape], outs: Sequence[Shape]) -> DimMap:
        """The input gradient: rows move whole, normalized dims read whole. The weight's
        and bias's: each normalized element sums its column over the rows (split rows:
        partial sums)."""
        count = self.normalized.value.data
        rows = len(ins[1]) - count
        stat = _rows_then(rows, [Dim.BROADCAST] * count)
        if self.of.data == "input":
            row = _rows_then(rows, [Dim.BLOCKED] * count)
            blocked: tuple[Dest, ...] = (Dim.BLOCKED,) * count
            return DimMap((row, row, stat, stat, *[blocked for _ in ins[4:]]), frozenset(range(rows, rows + count)))
        column: tuple[Dest, ...] = (*[Dim.REDUCED] * rows, *range(count))
        reduced_stat: tuple[Dest, ...] = (*[Dim.REDUCED] * rows, *[Dim.BROADCAST] * count)
        whole: tuple[Dest, ...] = tuple(range(count))
        return DimMap((column, column, reduced_stat, reduced_stat, *[whole for _ in ins[4:]]), sums=True)

    def flops(self) -> int:
        """`GRADIENT_FLOPS[of]` per input element."""
        return GRADIENT_FLOPS[self.of.data] * elements(self.inputs[1])


__all__ = ["GRADIENTS", "PARTS", "LayerNormGradOp", "LayerNormOp"]
