"""Decomposing only the nodes that need it, when they are few.

`ExportedProgram.run_decompositions` retraces the whole program, whatever
it decomposes: about 2.3 s a decoder layer of Llama 3.1 8B's joint graph at
sequence 4,096 on this repository's machine, where the joint graph
(`_export_forward_backward`, decomposed by torch already) holds two nodes
of one op left to decompose (`empty_permuted`). `decompose_locally` traces
just those nodes, each through `make_fx` with the same table (so a
decomposition that calls another decomposes that too), and splices each
trace in place of its node: the cost is per node decomposed, not per node
of the program. It declines (returns None, and the caller runs torch's
whole-program decomposition) on anything that retracing itself changes:
higher-order ops, ops that mutate, CompositeImplicitAutograd ops, calls that
are not ATen overloads, a
trace that makes constants, or more nodes to decompose than `LOCAL_LIMIT`.

A large program of identical layers (a 126-layer Llama 3.1 405B decode
step, DeepSeek-V3's 61 layers) has thousands of such nodes, most of them
CompositeImplicitAutograd ops that export keeps (`linear`, `matmul`, `to`,
`softmax`, `reshape`), so it used to be retraced whole (about 80% of its
compile). `decompose_repeated` takes it when it has at least `REPEATED_MIN`
nodes to decompose: each node whose op the table decomposes, or a
CompositeImplicitAutograd op (which a retrace decomposes too), is traced
once per signature (its op, its inputs' shapes, dtypes and strides, its
other arguments) and the trace spliced in place of every node of that
signature: the cost is per distinct node of one layer, not per node of the
program.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Any

import torch
from torch.export import ExportedProgram

LOCAL_LIMIT = 64
"""At most this many nodes are decomposed one by one; more: the whole program is retraced."""

REPEATED_MIN = 512
"""From this many nodes to decompose (counting CompositeImplicitAutograd ones), a
program is decomposed by `decompose_repeated`, one trace per distinct node."""


def _plain_call(node: torch.fx.Node) -> bool:
    """A call whose meaning retracing keeps: a getitem, or a functional ATen overload
    that is not CompositeImplicitAutograd (retracing decomposes those, table or not)."""
    target = node.target
    if target is operator.getitem:
        return True
    if not isinstance(target, torch._ops.OpOverload) or target._schema.is_mutable:
        return False
    return not torch._C._dispatch_has_kernel_for_dispatch_key(target.name(), "CompositeImplicitAutograd")


def nodes_to_decompose(ep: ExportedProgram, table: dict[Any, Callable[..., Any]]) -> list[torch.fx.Node] | None:
    """The call nodes whose op `table` decomposes; None when the program has a
    call that only a whole-program retrace handles (see the module docstring)."""
    found: list[torch.fx.Node] = []
    for node in ep.graph.nodes:
        if node.op != "call_function":
            continue
        if not _plain_call(node):
            return None
        if node.target in table:
            found.append(node)
    return found if len(found) <= LOCAL_LIMIT else None


def _trace(node: torch.fx.Node, table: dict[Any, Callable[..., Any]]) -> torch.fx.GraphModule | None:
    """`node`'s op traced on its inputs' fake values, through `table`."""
    from torch._guards import detect_fake_mode
    from torch.fx.experimental.proxy_tensor import make_fx

    inputs = list(node.all_input_nodes)
    target = node.target
    assert callable(target)

    def call(*values: Any) -> Any:
        given = dict(zip(inputs, values))
        args, kwargs = torch.fx.node.map_arg((node.args, node.kwargs), given.__getitem__)
        return target(*args, **kwargs)

    fakes = [n.meta.get("val") for n in inputs]
    mode = detect_fake_mode(fakes) if fakes else None
    if any(not isinstance(v, torch.Tensor) for v in fakes) or (fakes and mode is None):
        return None
    try:
        with mode if mode is not None else torch._subclasses.FakeTensorMode():
            traced = make_fx(call, decomposition_table=table)(*fakes)
    except Exception:  # noqa: BLE001 - torch raises many kinds from inside its tracer
        return None
    if any(n.op not in ("placeholder", "call_function", "output") for n in traced.graph.nodes):
        return None  # constants (get_attr) or submodules: not spliced
    return traced


def _spliceable(traced: torch.fx.GraphModule, table: dict[Any, Callable[..., Any]]) -> bool:
    """Whether a trace calls only plain ops that `table` does not decompose further."""
    calls = [n for n in traced.graph.nodes if n.op == "call_function"]
    return all(_plain_call(n) and n.target not in table for n in calls)


def _splice(node: torch.fx.Node, traced: torch.fx.GraphModule) -> None:
    """Put `traced`'s nodes before `node`, in its place (its users read theirs)."""
    graph = node.graph
    placeholders = [n for n in traced.graph.nodes if n.op == "placeholder"]
    env: dict[torch.fx.Node, Any] = dict(zip(placeholders, node.all_input_nodes))
    result: Any = None
    with graph.inserting_before(node):
        for inner in traced.graph.nodes:
            if inner.op == "placeholder":
                continue
            if inner.op == "output":
                result = torch.fx.node.map_arg(inner.args[0], env.__getitem__)
                continue
            copied = graph.node_copy(inner, env.__getitem__)
            for key in ("stack_trace", "nn_module_stack", "seq_nr", "source_fn_stack"):
                if key in node.meta:
                    copied.meta[key] = node.meta[key]
            env[inner] = copied
    if isinstance(result, list | tuple):
        for user in list(node.users):
            index = user.args[1]
            assert user.target is operator.getitem and isinstance(index, int)
            user.replace_all_uses_with(result[index])
            graph.erase_node(user)
    else:
        node.replace_all_uses_with(result)
    graph.erase_node(node)


def decompose_locally(ep: ExportedProgram, table: dict[Any, Callable[..., Any]]) -> ExportedProgram | None:
    """A copy of `ep` with only its nodes that `table` decomposes replaced by
    their traces; None when the whole program must be retraced instead."""
    from torch.export.experimental import _copy_graph_module_and_signature

    if nodes_to_decompose(ep, table) is None:
        return None
    graph_module, signature = _copy_graph_module_and_signature(ep)
    copy = ep._update(graph_module, signature)
    nodes = nodes_to_decompose(copy, table)
    assert nodes is not None
    traces = [_trace(node, table) for node in nodes]
    if not all(traced is not None and _spliceable(traced, table) for traced in traces):
        return None
    for node, traced in zip(nodes, traces):
        assert traced is not None
        _splice(node, traced)
    copy.graph.lint()
    copy.graph_module.recompile()
    return copy


def _composite(node: torch.fx.Node) -> bool:
    """A functional ATen overload that a retrace decomposes whatever the table
    (CompositeImplicitAutograd)."""
    target = node.target
    return (isinstance(target, torch._ops.OpOverload) and not target._schema.is_mutable
            and torch._C._dispatch_has_kernel_for_dispatch_key(target.name(), "CompositeImplicitAutograd"))


def _signature(node: torch.fx.Node) -> tuple[Any, ...] | None:
    """What a node's trace depends on: its op, each input's shape, dtype, strides
    and device, and its other arguments; None when an input has no tensor value."""
    inputs: list[torch.fx.Node] = list(node.all_input_nodes)
    described: list[tuple[Any, ...]] = []
    for value in (n.meta.get("val") for n in inputs):
        if not isinstance(value, torch.Tensor):
            return None
        described.append((tuple(value.shape), value.dtype, tuple(value.stride()), str(value.device)))
    slots = {n: f"input{i}" for i, n in enumerate(inputs)}
    args, kwargs = torch.fx.node.map_arg((node.args, node.kwargs), slots.__getitem__)
    return (node.target, tuple(described), repr(args), repr(sorted(kwargs.items())))


def _repeated_nodes(ep: ExportedProgram, table: dict[Any, Callable[..., Any]]) -> list[torch.fx.Node] | None:
    """The nodes `decompose_repeated` traces; None when it declines (a call that only a
    retrace handles: a higher-order op, a mutating op, a call that is no ATen overload)."""
    found: list[torch.fx.Node] = []
    for node in ep.graph.nodes:
        if node.op != "call_function" or node.target is operator.getitem:
            continue
        if not isinstance(node.target, torch._ops.OpOverload) or node.target._schema.is_mutable:
            return None
        if node.target in table or _composite(node):
            found.append(node)
    return found


def decompose_repeated(ep: ExportedProgram, table: dict[Any, Callable[..., Any]]) -> ExportedProgram | None:
    """A copy of `ep` with each node that a retrace would decompose replaced by its
    trace, one trace per signature (see the module docstring); None when the program
    has fewer than `REPEATED_MIN` such nodes or one that only a retrace handles."""
    from torch.export.experimental import _copy_graph_module_and_signature

    found = _repeated_nodes(ep, table)
    if found is None or len(found) < REPEATED_MIN:
        return None
    graph_module, signature = _copy_graph_module_and_signature(ep)
    copy = ep._update(graph_module, signature)
    nodes = _repeated_nodes(copy, table)
    assert nodes is not None
    traces: dict[tuple[Any, ...], torch.fx.GraphModule | None] = {}
    planned: list[tuple[torch.fx.Node, torch.fx.GraphModule]] = []
    for node in nodes:
        key = _signature(node)
        if key is None:
            return None
        if key not in traces:
            traced = _trace(node, table)
            traces[key] = traced if traced is not None and _spliceable_repeated(traced, table) else None
        if (traced := traces[key]) is None:
            return None
        planned.append((node, traced))
    for node, traced in planned:
        _splice(node, traced)
    copy.graph.lint()
    copy.graph_module.recompile()
    return copy


def _spliceable_repeated(traced: torch.fx.GraphModule, table: dict[Any, Callable[..., Any]]) -> bool:
    """Whether a trace calls only ATen overloads left as they are: none the table or a
    retrace would decompose further."""
    calls = [n for n in traced.graph.nodes if n.op == "call_function" and n.target is not operator.getitem]
    return all(isinstance(n.target, torch._ops.OpOverload) and not n.target._schema.is_mutable
               and n.target not in table and not _composite(n) for n in calls)
