"""Helpers the passes share: the level check.

Each pass declares the IR levels it accepts (`accepts`) and the level it
leaves (`produces`, None: the level it was given) and checks them on entry."""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects.builtin import ModuleOp

from rducc.dialects.contracts import LOWERED_LEVELS, TENSOR_LEVELS, Level, level_of
from rducc.dialects.program import functions
from rducc.dialects.tier import BufferType
from rducc.errors import RduccError


def require_level(module: ModuleOp, pass_name: str, accepts: Sequence[Level]) -> None:
    """Refuse a module whose `rdu.level` is not one the pass accepts (an unmarked
    module is taken as it is): one error naming the pass and both levels."""
    level = level_of(module)
    if level is not None and level not in accepts:
        raise RduccError(f"{pass_name} takes IR at level {' or '.join(accepts)}; "
                         f"this module is at level {level}")


def require_tensor_program(module: ModuleOp, pass_name: str, accepts: Sequence[Level] = TENSOR_LEVELS) -> None:
    """Refuse a program already lowered to buffers (rdu-insert-dma's output), or
    at a level the pass does not accept: the passes before it work on tensors only."""
    level = level_of(module)
    if level in LOWERED_LEVELS:
        raise RduccError(f"{pass_name} works on tensor programs (levels graph, kernels); "
                         f"this one is at level {level}")
    require_level(module, pass_name, accepts)
    for function in functions(module):
        for op in function.walk():
            buffers = [v for v in (*op.operands, *op.results) if isinstance(v.type, BufferType)]
            if buffers or (op is function and any(isinstance(a.type, BufferType) for a in function.args)):
                raise RduccError(f"{pass_name} works on tensor programs (levels graph, kernels); "
                                 f"@{function.sym_name.data} already uses tier buffers ({op.name})")
