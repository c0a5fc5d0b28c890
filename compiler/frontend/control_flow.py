"""`torch.cond` as dataflow: both branches computed, each result selected by the predicate.

torch.export keeps `torch.cond(pred, true_fn, false_fn, operands)` as the
higher-order op `higher_order.cond` calling two subgraphs. A dataflow program
has no branches; rducc inlines both subgraphs into the program (nested conds
first) and selects each result with `aten.where(pred, true_result,
false_result)`, as the chip predicates. torch guarantees what makes this exact:
the branches are functional (no input or buffer is mutated) and return tensors
of the same shapes and dtypes. A value one branch computes and the predicate
does not select (a nan, an inf) is never read. A predicate export found constant
(a Python bool) inlines its branch alone; a symbolic one (a comparison of a
dynamic size) stays a `cond`, which the importer refuses naming it.
"""

from __future__ import annotations

import operator
from typing import Any

import torch
from torch.export import ExportedProgram

_COND = torch.ops.higher_order.cond


def has_cond(ep: ExportedProgram) -> bool:
    return any(node.target is _COND for node in ep.graph.nodes)


def inline_conds(ep: ExportedProgram) -> ExportedProgram:
    """A copy of `ep` whose tensor-predicated conds are both branches and a `where` per result."""
    from torch.export.experimental import _copy_graph_module_and_signature

    graph_module, signature = _copy_graph_module_and_signature(ep)
    _inline_all(graph_module)
    outputs: Any = graph_module.graph.output_node().args[0]
    for spec, value in zip(signature.output_specs, outputs, strict=True):  # a result now a where's
        if isinstance(value, torch.fx.Node) and hasattr(spec.arg, "name"):
            spec.arg.name = value.name
    return ep._update(graph_module, signature)


def _inline_all(module: torch.fx.GraphModule) -> None:
    """Inline every cond of `module` whose predicate is a tensor (those of its branches first)."""
    for node in [n for n in module.graph.nodes if n.target is _COND]:
        pred = node.args[0]
        tensor = isinstance(pred, torch.fx.Node) and isinstance(pred.meta.get("val"), torch.Tensor)
        if isinstance(pred, bool) or tensor:
            _inline(module, node)
    module.graph.lint()
    module.recompile()


def _inline(module: torch.fx.GraphModule, node: torch.fx.Node) -> None:
    graph = module.graph
    args: Any = node.args
    pred, true_ref, false_ref, operands = args[:4]
    branches = [getattr(module, str(ref.target)) for ref in (true_ref, false_ref)]
    for branch in branches:
        _inline_all(branch)
    with graph.inserting_before(node):
        if isinstance(pred, bool):  # a predicate export found constant (a specialized size): that branch alone
            selected = _copy_branch(graph, branches[0 if pred else 1].graph, operands)
        else:
            selected = _selected(graph, node, [_copy_branch(graph, branch.graph, operands) for branch in branches])
    for user in list(node.users):
        assert user.target is operator.getitem, f"a cond result read by {user.target}"
        user.replace_all_uses_with(selected[user.args[1]])  # type: ignore[index]
        graph.erase_node(user)
    graph.erase_node(node)
    for ref in (true_ref, false_ref):
        if isinstance(ref, torch.fx.Node) and not ref.users:
            graph.erase_node(ref)
            delattr(module, str(ref.target))


def _selected(graph: torch.fx.Graph, node: torch.fx.Node, outs: list[list[torch.fx.Node]]) -> list[torch.fx.Node]:
    """Each result of `node` as `where(pred, true branch's, false branch's)`."""
    selected = []
    for index, (when_true, when_false) in enumerate(zip(*outs, strict=True)):
        where = graph.call_function(torch.ops.aten.where.self, (node.args[0], when_true, when_false))
        where.meta.update({key: value for key, value in node.meta.items() if key != "val"})
        where.meta["val"] = node.meta["val"][index]
        selected.append(where)
    return selected


def _copy_branch(graph: torch.fx.Graph, branch: torch.fx.Graph, operands: Any) -> list[torch.fx.Node]:
    """`branch`'s nodes copied into `graph` reading `operands`; its results."""
    placeholders = [n for n in branch.nodes if n.op == "placeholder"]
    values: dict[torch.fx.Node, Any] = dict(zip(placeholders, operands, strict=True))
    out: Any = graph.graph_copy(branch, values)
    return list(out) if isinstance(out, tuple | list) else [out]


__all__ = ["has_cond", "inline_conds"]
