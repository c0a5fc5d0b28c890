"""Test helper: undo rdu-outline-layers on a placed program, to compare the
outlined program with the same program inline."""

from __future__ import annotations

from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import SSAValue

from rducc.dialects.contracts import is_outlined
from rducc.dialects.program import functions
from rducc.dialects.unchanged import unchanged


def inline_calls(module: ModuleOp) -> ModuleOp:
    """A copy of a placed module with every call replaced by its callee's body
    (SRAM offsets kept: no caller buffer is live across a call)."""
    module = module.clone()
    callees = {f.sym_name.data: f for f in functions(module) if is_outlined(f)}
    for function in functions(module):
        for call in [op for op in function.body.block.ops if isinstance(op, func.CallOp)]:
            callee = callees[call.callee.string_value()]
            mapping: dict[SSAValue, SSAValue] = dict(zip(callee.body.block.args, call.arguments))
            block = call.parent_block()
            assert block is not None
            for op in callee.body.block.ops:
                if isinstance(op, func.ReturnOp):
                    for result, value in zip(call.res, op.arguments):
                        result.replace_all_uses_with(mapping[value])
                    break
                block.insert_op_before(op.clone(value_mapper=mapping), call)
            block.erase_op(call)
    for callee in callees.values():
        module.body.block.erase_op(callee)
    with unchanged():  # verifiers read the IR: a block's SRAM sweep once, not once a buffer
        module.verify()
    return module
