"""Helpers the passes share: the module's target and its forward function."""

from __future__ import annotations

from collections.abc import Iterator

from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp, StringAttr

from rducc.targets import Target, load_target

LAYER_ATTR = "rdu.layer"
"""Attribute on each imported op that ran inside a repeated block (an element
of an nn.ModuleList such as `model.layers.3`): that block's path. Fusion keeps
each layer's ops together; CSE still merges equal ops within a layer."""

CALLS_ATTR = "rdu.calls"
"""On a function `rdu-outline-layers` made: how many `func.call`s run it."""

OUTLINED_FROM_ATTR = "rdu.outlined_from"
"""On a function `rdu-outline-layers` made: the layer it was copied from."""

TARGET_ATTR = "rdu.target"
"""Module attribute naming the target (a built-in name or a target file path)."""


def module_target(module: ModuleOp, option: str = "") -> Target:
    """The pass option if given, else the module's `rdu.target`, else sn40l."""
    if option:
        return load_target(option)
    named = module.attributes.get(TARGET_ATTR)
    return load_target(named.data if isinstance(named, StringAttr) else "sn40l")


def functions(module: ModuleOp) -> Iterator[func.FuncOp]:
    """The module's functions with bodies."""
    for op in module.ops:
        if isinstance(op, func.FuncOp) and op.body.blocks:
            yield op


def callees_first(module: ModuleOp) -> list[func.FuncOp]:
    """The functions with bodies, outlined layers (`rdu.calls`) first, so that a
    pass handles a callee before the calls of it."""
    every = list(functions(module))
    return [f for f in every if CALLS_ATTR in f.attributes] + [f for f in every if CALLS_ATTR not in f.attributes]


def set_level(module: ModuleOp, level: str) -> None:
    """Record the IR level (graph, kernels, memory, placed) on the module."""
    module.attributes["rdu.level"] = StringAttr(level)


LOWERED_LEVELS = ("memory", "placed")
"""IR levels whose functions work on tier buffers rather than tensors."""


def require_tensor_program(module: ModuleOp, pass_name: str) -> None:
    """Refuse a program already lowered to buffers (rdu-insert-dma's output): the
    passes before it work on tensors only."""
    from rducc.dialects.memory import BufferType
    from rducc.errors import RduccError

    level = module.attributes.get("rdu.level")
    if isinstance(level, StringAttr) and level.data in LOWERED_LEVELS:
        raise RduccError(f"{pass_name} works on tensor programs (levels graph, kernels); "
                         f"this one is at level {level.data}")
    for function in functions(module):
        for op in function.walk():
            buffers = [v for v in (*op.operands, *op.results) if isinstance(v.type, BufferType)]
            if buffers or (op is function and any(isinstance(a.type, BufferType) for a in function.args)):
                raise RduccError(f"{pass_name} works on tensor programs (levels graph, kernels); "
                                 f"@{function.sym_name.data} already uses tier buffers ({op.name})")
