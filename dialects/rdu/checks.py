"""`rdu.check`: a value the program compiled for, checked when it runs.

torch.export leaves some sizes to the data: `bincount`'s length, the number
of elements a boolean mask selects, a size read with `.item()`. rducc
compiles such a program for the example's value (`rducc.frontend.data_sizes`)
and guards the op that depends on it: `rdu.check` passes `input` through when
every element of `condition` is true and stops the run with its `message`
(which names the torch op and its source line) when one is not, so a
different value is an error, never a result of the wrong size.
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects.builtin import StringAttr, TensorType, i1
from xdsl.ir import Attribute, SSAValue
from xdsl.irdl import IRDLOperation, irdl_op_definition, operand_def, prop_def, result_def, traits_def
from xdsl.traits import Pure
from xdsl.utils.exceptions import VerifyException

from rducc.dialects.op_facts import DimMap, OpFacts, Shape, identity
from rducc.dialects.shapes import STATIC_TENSOR


@irdl_op_definition
class CheckOp(IRDLOperation, OpFacts):
    """`input`, once every element of the i1 `condition` holds; else the run
    stops with `message` (module docstring). No FLOPs: a compare the
    condition's ops already counted."""

    name = "rdu.check"
    input = operand_def(STATIC_TENSOR)
    condition = operand_def(STATIC_TENSOR)
    message = prop_def(StringAttr)
    result = result_def(STATIC_TENSOR)
    traits = traits_def(Pure())
    assembly_format = (
        "$input `if` $condition `else` $message attr-dict `:` type($input) `,` type($condition) `->` type($result)"
    )

    def __init__(self, input: SSAValue, condition: SSAValue, message: str, result_type: Attribute | None = None):
        super().__init__(
            operands=[input, condition],
            result_types=[result_type or input.type],
            properties={"message": StringAttr(message)},
        )

    def verify_(self) -> None:
        if self.result.type != self.input.type:
            raise VerifyException("'rdu.check' result must have its input's type")
        assert isinstance(self.condition.type, TensorType)
        if self.condition.type.element_type != i1:
            raise VerifyException("'rdu.check' condition must be i1")

    def dims_for(self, ins: Sequence[Shape], outs: Sequence[Shape]) -> DimMap:
        """The input passes through; the condition is read whole."""
        return DimMap((identity(len(ins[0])), identity(len(ins[1]), list(range(len(ins[1]))))),
                      frozenset())

    def flops(self) -> int:
        return 0


__all__ = ["CheckOp"]
