"""`rdu.pointwise_call`: an ATen pointwise op as one scalar op of an `rdu.map` body.

An elementwise ATen op that rducc has no formula for (lgamma, digamma,
polygamma, the Bessel functions, zeta, igamma, nextafter, ...) is imported
generically: a map whose body calls the op, named by a typed attribute,

    %y = rdu.pointwise_call #rdu.aten<"aten::polygamma.default", {n = 2 : i64}> (%x) : (f32) -> f32

The attribute holds the overload's qualified name, the op's constant
non-tensor arguments by schema name (a number, bool, string or `none`) and
which of its results the call yields (`result = 1` for frexp's exponent);
the operands fill its tensor arguments in schema order. The map fuses with
its neighbours like any elementwise op; the runtime runs torch's own CPU
kernel on whole arrays (`rducc.runtime.elementwise.pointwise_call`).

Only ops that `#rdu.aten` lets a program call (`rducc.dialects.rdu.aten`: the
`aten` namespace, functional, deterministic) and that torch tags
`torch.Tag.pointwise` can be named: the verifier refuses any other name, so
an MLIR file never runs other code.

Cost: the chip would evaluate such a function as a polynomial or rational
approximation with a range reduction; the cost model counts one call as
`ASSUMED_ALU_OPS` arithmetic ops of its map (docs/cost-model.md).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

from xdsl.dialects.builtin import TensorType
from xdsl.ir import Attribute, SSAValue
from xdsl.irdl import (
    IRDLOperation,
    irdl_op_definition,
    prop_def,
    result_def,
    traits_def,
    var_operand_def,
)
from xdsl.traits import Pure
from xdsl.utils.exceptions import VerifyException

from rducc.dialects.op_facts import NoCompute
from rducc.dialects.rdu.aten import AtenOpAttr, NotCallable
from rducc.dialects.shapes import is_float, is_integer

ASSUMED_ALU_OPS = 24
"""Arithmetic ops one `rdu.pointwise_call` is counted as (per element) in its map's
FLOPs, and so in the PCU work of the map's stage: an assumption, not a
measurement. A special function on a SIMD ALU is a range reduction plus a
polynomial or rational approximation (Cephes' lgamma, digamma, i0, j0 use
degree 6 to 12 polynomials): about 2 x 10 multiply-adds, a division and a few
selects. The real count differs per function (a Chebyshev polynomial of a
tensor degree loops), so the model treats all alike."""


def pointwise_overload(callee: AtenOpAttr) -> Any:
    """The torch overload `callee` names, when a program may call it
    (`aten_overload`) and it is tagged pointwise with only tensor results; else
    `NotCallable`."""
    import torch

    op = callee.torch_op()
    if torch.Tag.pointwise not in op.tags:
        raise NotCallable("it is not tagged pointwise")
    if any(str(r.type) != "Tensor" for r in op._schema.returns):
        raise NotCallable("it does not return only tensors")
    return op


def tensor_operands(callee: AtenOpAttr) -> list[str]:
    """The tensor arguments a call's operands fill, in schema order: those the
    callee's constants do not give."""
    return [name for name in callee.schema().tensors if name not in callee.constants.data]


def _is_scalar(attr: Attribute) -> bool:
    return not isinstance(attr, TensorType) and (is_float(attr) or is_integer(attr))


@irdl_op_definition
class PointwiseCallOp(IRDLOperation, NoCompute):
    """One result of an ATen pointwise op on scalars, inside an `rdu.map` body.

    Operands fill the op's tensor arguments in schema order; the callee holds
    the rest. Counted by its map (`ASSUMED_ALU_OPS` ops an element).
    """

    name = "rdu.pointwise_call"
    callee = prop_def(AtenOpAttr)
    args = var_operand_def()
    result = result_def()
    traits = traits_def(Pure())
    assembly_format = "qualified($callee) `(` $args `)` attr-dict `:` functional-type($args, $result)"

    ALU_OPS: ClassVar[int] = ASSUMED_ALU_OPS

    def __init__(self, callee: AtenOpAttr, args: Sequence[SSAValue], result_type: Attribute):
        super().__init__(operands=[args], result_types=[result_type], properties={"callee": callee})

    def overload(self) -> Any:
        """The torch op overload it calls (after verification: a functional pointwise aten op)."""
        try:
            return pointwise_overload(self.callee)
        except NotCallable as error:
            raise VerifyException(f"'rdu.pointwise_call' cannot call '{self.callee.full_name}': {error}") from None

    def verify_(self) -> None:
        for index, scalar in enumerate([*self.args, self.result]):
            if not _is_scalar(scalar.type):
                raise VerifyException(f"'rdu.pointwise_call' value #{index} is {scalar.type}, not a scalar")
        self.overload()
        tensors = tensor_operands(self.callee)
        if len(tensors) != len(self.args):
            raise VerifyException(
                f"'{self.callee.full_name}' takes {len(tensors)} tensor operand(s) "
                f"({', '.join(tensors)}) but the call has {len(self.args)}"
            )
        self.callee.verify_call(self.name, tensors)


__all__ = [
    "ASSUMED_ALU_OPS",
    "PointwiseCallOp",
    "pointwise_overload",
    "tensor_operands",
]
