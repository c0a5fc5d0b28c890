"""Joint graphs (`torch.export.experimental._export_forward_backward`): what
the importer needs to know about a program whose outputs are a loss and
gradients (LOSS_OUTPUT, GRADIENT_TO_PARAMETER, GRADIENT_TO_USER_INPUT).

The phase of each node is defined structurally: the forward is what the
loss (and the buffers the forward updates, as batch norm's running
statistics) depends on; every other node computes gradients, the backward.
"""

from __future__ import annotations

import operator
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
    """`roots` and every node they depend on (the inputs of a node `through`
    accepts). A node reading a tensor also depends on every in-place write to
    that tensor's storage (through any view of it, `out[:, t] = value`'s
    `copy_` into a `select`) earlier in the graph; a root is read at the end."""
    if not roots:
        return set()
    order = {node: index for index, node in enumerate(roots[0].graph.nodes)}
    writes = _storage_writes(roots[0].graph)
    seen: set[torch.fx.Node] = set()
    stack = [write for root in roots for write in writes.read(root, len(order))] + list(roots)
    while stack:
        node = stack.pop()
        if node in seen:
            continue
        seen.add(node)
        if through(node):
            for value in node.all_input_nodes:
                stack.append(value)
                stack.extend(writes.read(value, order[node]))
    return seen


class _StorageWrites:
    """Per storage (a node that is no view of another), the nodes writing it in place, in graph order."""

    def __init__(self) -> None:
        self.base: dict[torch.fx.Node, torch.fx.Node] = {}
        self.writers: dict[torch.fx.Node, list[tuple[int, torch.fx.Node]]] = {}

    def read(self, value: torch.fx.Node, before: int) -> list[torch.fx.Node]:
        """The writes to `value`'s storage that come before position `before`."""
        return [w for index, w in self.writers.get(self.base.get(value, value), []) if index < before]


def _storage_writes(graph: torch.fx.Graph) -> _StorageWrites:
    """Which storage each node's tensor lives in (a view's, or an in-place op's
    returned self, is its source's: the ops' schemas' alias annotations) and
    the in-place writes to each (arguments annotated `Tensor(a!)`)."""
    result = _StorageWrites()
    for index, node in enumerate(graph.nodes):
        source = _aliased_argument(node)
        if isinstance(source, torch.fx.Node):
            result.base[node] = result.base.get(source, source)
        for written in _written_arguments(node):
            base = result.base.get(written, written)
            result.writers.setdefault(base, []).append((index, node))
    return result


def _schema_arguments(node: torch.fx.Node) -> list[tuple[torch._C.Argument, object]]:
    """(schema argument, its value) of an ATen op's call; [] for another node."""
    schema = getattr(node.target, "_schema", None) if node.op == "call_function" else None
    if schema is None:
        return []
    return [(argument, node.args[i] if i < len(node.args) else node.kwargs.get(argument.name))
            for i, argument in enumerate(schema.arguments)]


def _aliased_argument(node: torch.fx.Node) -> object:
    """The argument `node`'s result is a view of (or, for an in-place op, is), or None;
    an item of a list of views (`split`, `unbind`) is a view of the same source."""
    if node.target is operator.getitem and isinstance(node.args[0], torch.fx.Node):
        return node.args[0] if _aliased_argument(node.args[0]) is not None else None
    schema = getattr(node.target, "_schema", None) if node.op == "call_function" else None
    if schema is None or not schema.returns or schema.returns[0].alias_info is None:
        return None
    wanted = set(schema.returns[0].alias_info.before_set)
    aliased = [(set(argument.alias_info.before_set), value) for argument, value in _schema_arguments(node)
               if argument.alias_info is not None]
    return next((value for sets, value in aliased if sets & wanted), aliased[0][1] if aliased else None)


def _written_arguments(node: torch.fx.Node) -> list[torch.fx.Node]:
    """The tensors `node` writes in place (its schema's `Tensor(a!)` arguments)."""
    return [value for argument, value in _schema_arguments(node)
            if argument.alias_info is not None and argument.alias_info.is_write and isinstance(value, torch.fx.Node)]


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
