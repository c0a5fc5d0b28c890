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


def set_level(module: ModuleOp, level: str) -> None:
    """Record the IR level (graph, kernels, memory, placed) on the module."""
    module.attributes["rdu.level"] = StringAttr(level)
