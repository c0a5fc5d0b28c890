"""Joint graphs (`torch.export.experimental._export_forward_backward`): what
the importer needs to know about a program whose outputs are a loss and
gradients (LOSS_OUTPUT, GRADIENT_TO_PARAMETER, GRADIENT_TO_USER_INPUT).

The phase of each node is defined structurally: the forward is what the
loss (and the buffers the forward updates, as batch norm's running
statistics) depends on; every other node computes gradients, the backward.
"""

from __future__ import annotations

import re
from collections.abc import Callable

import torch
from torch.export import ExportedProgram
from torch.export.graph_signature import InputKind, OutputKind

from rducc.dialects.contracts import Phase, ResultRole

GRADIENT_KINDS = (OutputKind.GRADIENT_TO_PARAMETER, OutputKind.GRADIENT_TO_USER_INPUT)
FORWARD_OUTPUT_KINDS = (OutputKind.LOSS_OUTPUT, OutputKind.USER_OUTPUT, OutputKind.BUFFER_MUTATION,
                        OutputKind.USER_INPUT_MUTATION)


def is_joint(ep: ExportedProgram) -> bool:
    """Whether the program is a joint graph (it has a LOSS_OUTPUT)."""
    return any(spec.kind == OutputKind.LOSS_OUTPUT for spec in ep.graph_signature.output_specs)


_FLAT_ARG = re.compile(r"^arg(\d+)_\d+$")


def gradient_role(ep: ExportedProgram, kind: OutputKind, target: str | None) -> ResultRole:
    """The result role of a gradient output of this kind, for `target`: a
    parameter's name, or the user input torch names by its position among the
    program's inputs (`arg1_1`), given by the input's label."""
    if kind == OutputKind.GRADIENT_TO_PARAMETER:
        return ResultRole("gradient", "parameter", str(target))
    specs = ep.graph_signature.input_specs
    match = _FLAT_ARG.match(str(target))
    label = str(target)
    if match and int(match.group(1)) < len(specs) and specs[int(match.group(1))].kind == InputKind.USER_INPUT:
        label = specs[int(match.group(1))].arg.name
    return ResultRole("gradient", "input", label)


def ancestors(roots: list[torch.fx.Node],
              through: Callable[[torch.fx.Node], bool] = lambda node: True) -> set[torch.fx.Node]:
    """`roots` and every node they depend on (the inputs of a node `through` accepts)."""
    seen: set[torch.fx.Node] = set()
    stack = list(roots)
    while stack:
        node = stack.pop()
        if node in seen:
            continue
        seen.add(node)
        if through(node):
            stack.extend(node.all_input_nodes)
    return seen


_STOPS_GRADIENT = (torch.ops.aten.detach.default,)


def _carries_gradient(node: torch.fx.Node) -> bool:
    """Whether a gradient flows through `node` to its inputs: not a detach, and
    not a value autograd never differentiates (integer or bool tensors, sizes)."""
    if node.target in _STOPS_GRADIENT:
        return False
    value = node.meta.get("val")
    if isinstance(value, torch.Tensor):
        return value.is_floating_point() or value.is_complex()
    return not isinstance(value, int | bool | torch.SymInt | torch.SymBool)


def gradient_ancestors(roots: list[torch.fx.Node]) -> set[torch.fx.Node]:
    """`roots` and every node a gradient from them reaches (`ancestors`, not
    through a detach or an integer or bool value)."""
    return ancestors(roots, _carries_gradient)


def node_phases(ep: ExportedProgram) -> dict[torch.fx.Node, Phase]:
    """Per call_function node of a joint graph, its phase; {} for another program."""
    if not is_joint(ep):
        return {}
    output = next(n for n in ep.graph.nodes if n.op == "output")
    roots = [
        result for spec, result in zip(ep.graph_signature.output_specs, output.args[0])
        if spec.kind in FORWARD_OUTPUT_KINDS and isinstance(result, torch.fx.Node)
    ]
    forward = ancestors(roots)
    return {
        node: Phase.FORWARD if node in forward else Phase.BACKWARD
        for node in ep.graph.nodes if node.op == "call_function"
    }
