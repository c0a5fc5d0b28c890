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
program. In-place ops on values the program made itself (DeepSeek-V3's key
states filled by `copy_` into slices of a `new_empty`, its routing's
`scatter_` and `div_`) are first rewritten as functional ops
(`functionalize_intermediates`: the functional op, a `slice_scatter` into
the base for a slice, later readers rerouted), as a retrace's
functionalization would; any other in-place op still declines.
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


def decompose_only(ep: ExportedProgram, table: dict[Any, Callable[..., Any]],
                   chosen: Callable[[torch.fx.Node], bool]) -> ExportedProgram:
    """A copy of `ep` with each node `chosen` picks replaced by its trace through `table` (`ep`
    itself when none is picked): ops a whole-program retrace cannot take, such as the view prims,
    whose aliasing results torch's functionalization refuses. A node that does not trace stays."""
    from torch.export.experimental import _copy_graph_module_and_signature

    if not any(chosen(node) for node in ep.graph.nodes):
        return ep
    graph_module, signature = _copy_graph_module_and_signature(ep)
    copy = ep._update(graph_module, signature)
    for node in [n for n in copy.graph.nodes if chosen(n)]:
        traced = _trace(node, table)
        if traced is not None:
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


def _repeated_nodes(ep: ExportedProgram, table: dict[Any, Callable[..., Any]],
                    in_place: bool = False) -> list[torch.fx.Node] | None:
    """The nodes `decompose_repeated` traces; None when it declines (a call that only a
    retrace handles: a higher-order op, a mutating op, a call that is no ATen overload).
    `in_place`: count past the in-place ops that `functionalize_intermediates` rewrites."""
    found: list[torch.fx.Node] = []
    for node in ep.graph.nodes:
        if node.op != "call_function" or node.target is operator.getitem:
            continue
        if in_place and _functional_of(node.target) is not None and _view_target(node) is not None:
            found.append(node)
            continue
        if not isinstance(node.target, torch._ops.OpOverload) or node.target._schema.is_mutable:
            return None
        if node.target in table or _composite(node):
            found.append(node)
    return found


def decompose_repeated(ep: ExportedProgram, table: dict[Any, Callable[..., Any]]) -> ExportedProgram | None:
    """A copy of `ep` with its in-place ops on its own intermediates made functional
    (`functionalize_intermediates`, as a retrace's functionalization would) and each
    node that a retrace would decompose replaced by its trace, one trace per signature
    (see the module docstring); None when the program has fewer than `REPEATED_MIN`
    such nodes or one that only a retrace handles."""
    from torch.export.experimental import _copy_graph_module_and_signature

    found = _repeated_nodes(ep, table, in_place=True)
    if found is None or len(found) < REPEATED_MIN:
        return None
    graph_module, signature = _copy_graph_module_and_signature(ep)
    copy = ep._update(graph_module, signature)
    if not functionalize_intermediates(copy):
        return None
    nodes = _repeated_nodes(copy, table)
    if nodes is None:
        return None
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


# -- in-place ops on a program's own intermediates --------------------------------


def _is_view(node: torch.fx.Node) -> bool:
    """A call whose result aliases its first input (a view op: slice, expand, ...)."""
    target = node.target
    return (node.op == "call_function" and isinstance(target, torch._ops.OpOverload)
            and bool(target._schema.returns) and target._schema.returns[0].alias_info is not None
            and not target._schema.is_mutable)


def _fresh(node: Any) -> bool:
    """A value the program itself made (a call that is neither a view nor in place):
    no input, parameter or buffer, and no alias of one."""
    return (isinstance(node, torch.fx.Node) and node.op == "call_function"
            and isinstance(node.target, torch._ops.OpOverload) and not node.target._schema.is_mutable
            and not _is_view(node))


def _functional_of(target: Any) -> Any:
    """The functional overload of an in-place ATen overload (`div_.Tensor` ->
    `div.Tensor`, `copy_` -> `copy`), or None."""
    if not isinstance(target, torch._ops.OpOverload) or not target._schema.is_mutable:
        return None
    name = target._schema.name.split("::")[-1]
    if not name.endswith("_") or name.endswith("__"):
        return None
    packet = getattr(torch.ops.aten, name[:-1], None)
    functional = getattr(packet, target._overloadname, None) if packet is not None else None
    if not isinstance(functional, torch._ops.OpOverload) or functional._schema.is_mutable:
        return None
    return functional


def _view_target(node: torch.fx.Node) -> tuple[torch.fx.Node, torch.fx.Node | None] | None:
    """(base, slice) an in-place op writes: its first argument when the program made
    it, or a `slice.Tensor` of such a value; None for anything else."""
    written = node.args[0] if node.args else None
    if _fresh(written):
        assert isinstance(written, torch.fx.Node)
        return written, None
    if (isinstance(written, torch.fx.Node) and written.target is torch.ops.aten.slice.Tensor
            and _fresh(written.args[0])):
        base = written.args[0]
        assert isinstance(base, torch.fx.Node)
        return base, written
    return None


def _traced_value(made: torch.fx.Node, like: torch.fx.Node) -> bool:
    """Give `made` the meta of `like` with its own value, computed by its op on its
    inputs' fake values; False when they have none."""
    from torch._guards import detect_fake_mode

    fakes = [n.meta.get("val") for n in made.all_input_nodes]
    mode = detect_fake_mode(fakes)
    if mode is None or not all(isinstance(v, torch.Tensor) for v in fakes):
        return False
    args, kwargs = torch.fx.node.map_arg((made.args, made.kwargs), lambda n: n.meta["val"])
    with mode:
        value = made.target(*args, **kwargs)  # type: ignore[operator]
    made.meta = {**like.meta, "val": value}
    return True


def _functionalize_one(node: torch.fx.Node, order: dict[torch.fx.Node, int]) -> bool:
    """Replace the in-place `node` by its functional op (and a `slice_scatter` into the
    base when it writes a slice); every later reader of the base, of its views and of
    `node` reads the new values. False (nothing changed) when that cannot be done
    exactly: an output or a view other than a slice in the way."""
    functional = _functional_of(node.target)
    written = _view_target(node)
    if functional is None or written is None:
        return False
    base, piece = written
    later = order[node]
    views = [v for v in base.users if v is not node and _is_view(v)
             and any(order.get(u, -1) > later for u in v.users)]
    if any(v.target is not torch.ops.aten.slice.Tensor for v in views):
        return False
    if any(u.op == "output" for v in (base, node, *views) for u in v.users):
        return False
    if piece is not None and piece.kwargs:
        return False
    graph = node.graph
    with graph.inserting_after(node):
        result = graph.call_function(functional, node.args, node.kwargs)
    if not _traced_value(result, node):
        graph.erase_node(result)
        return False
    new_base = result
    if piece is not None:
        dim, start, end, step = (list(piece.args[1:]) + [0, None, None, 1][len(piece.args) - 1:])[:4]
        with graph.inserting_after(result):
            new_base = graph.call_function(torch.ops.aten.slice_scatter.default, (base, result, dim, start, end, step))
        if not _traced_value(new_base, base):
            graph.erase_node(new_base)
            graph.erase_node(result)
            return False
    anchor = new_base
    for view in views:
        with graph.inserting_after(anchor):
            again = graph.node_copy(view, lambda n: new_base if n is base else n)
        for user in [u for u in view.users if order.get(u, -1) > later]:
            user.replace_input_with(view, again)
        anchor = again
    for user in [u for u in base.users if order.get(u, -1) > later]:
        user.replace_input_with(base, new_base)
    node.replace_all_uses_with(result)
    graph.erase_node(node)
    return True


def functionalize_intermediates(ep: ExportedProgram) -> bool:
    """Rewrite `ep`'s in-place ops on values the program made itself (DeepSeek-V3's
    `new_empty` filled by `copy_` into slices, its routing's `scatter_` into
    `zeros_like` and `div_` of gathered weights) as functional ops, in place; False
    when some in-place op is not of that kind (the program may be half rewritten:
    call it on a copy)."""
    for node in [n for n in ep.graph.nodes if n.op == "call_function"
                 and isinstance(n.target, torch._ops.OpOverload) and n.target._schema.is_mutable]:
        order = {n: i for i, n in enumerate(ep.graph.nodes)}
        if not _functionalize_one(node, order):
            return False
    return True
