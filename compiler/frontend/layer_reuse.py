"""Import identical decoder layers once: `rdu-outline-layers` done on the FX graph.

`rdu-outline-layers` outlines identical layers after import, so import, the
verify after it and the layer comparison stay linear in the layers. This is
the same outlining decided before import, on the Core ATen FX graph: the
first layer's nodes are imported once; every other layer is only checked to
be the first with other weights (the same targets, argument structure,
non-tensor arguments, shapes and dtypes, each node reading the node at the
same place in its own layer or, one to one, a node from outside of the same
shape and dtype) and becomes
a `func.call @layer` with its own values.

The result is the IR `rdu-outline-layers` gives on the inline import (a test
compares the printed modules): the same `@layer` (`rdu.outlined_from`,
`rdu.calls`, argument kinds), the same calls, names and locations. When the
layers are not all alike (or are interleaved with other nodes, or a check on
the built IR fails), `NotReusable` is raised and the importer imports every
layer inline, leaving the outlining to the pass, as before.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import torch
from xdsl.dialects import func
from xdsl.dialects.builtin import LocationAttr, ModuleOp
from xdsl.ir import Block, Operation, OpResult, SSAValue

from rducc.dialects.contracts import LAYER
from rducc.frontend.converter_api import positional
from rducc.passes.rdu_canonicalize import folds_across
from rducc.passes.rdu_outline_layers import Correspondence, Layer, Outlining

Node = torch.fx.Node


class NotReusable(Exception):
    """The layers cannot be imported once: import them inline."""


@dataclass
class FxLayer:
    """The FX nodes of one decoder layer, in graph order."""

    key: str
    nodes: list[Node]
    position: dict[Node, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.position = {node: index for index, node in enumerate(self.nodes)}


@dataclass
class LayerPlan:
    """Layers that all match the first, and what each reads from outside."""

    layers: list[FxLayer]
    outside: list[dict[Node, Node]]
    """Per layer: the first layer's outside node -> this layer's."""
    escapes: set[tuple[int, int | None]]
    """(position, tuple index or None) of the values read outside their layer."""
    layer_of_node: dict[Node, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for index, layer in enumerate(self.layers):
            for node in layer.nodes:
                self.layer_of_node[node] = index


# -- the plan: FX-level matching -----------------------------------------------


def _meta_signature(value: Any) -> Any:
    """What the importer reads of a node's recorded value: shapes and dtypes."""
    if isinstance(value, torch.Tensor):
        return ("tensor", tuple(value.shape), value.dtype)
    if isinstance(value, list | tuple):
        return (type(value).__name__, tuple(_meta_signature(v) for v in value))
    return (type(value).__name__, str(value))


def _getitem_uses(node: Node) -> list[int]:
    """Which tuple elements getitem users read (multi-result converters look at it)."""
    return sorted(int(positional(u)[1]) for u in node.users if u.target is operator.getitem)


@dataclass
class _Matcher:
    """Compares one layer with the first, pairing outside nodes one to one."""

    first: FxLayer
    other: FxLayer
    forward: dict[Node, Node] = field(default_factory=dict)
    backward: dict[Node, Node] = field(default_factory=dict)

    def node_arg(self, a: Node, b: Node) -> bool:
        at_a, at_b = self.first.position.get(a), self.other.position.get(b)
        if at_a is not None or at_b is not None:
            return at_a == at_b
        known_a, known_b = self.forward.get(a), self.backward.get(b)
        if known_a is None and known_b is None:
            if _meta_signature(a.meta.get("val")) != _meta_signature(b.meta.get("val")):
                return False  # an input of another shape or dtype: another layer
            self.forward[a], self.backward[b] = b, a
            return True
        return known_a is b and known_b is a

    def same(self, a: Any, b: Any) -> bool:
        if isinstance(a, Node) or isinstance(b, Node):
            return isinstance(a, Node) and isinstance(b, Node) and self.node_arg(a, b)
        if isinstance(a, list | tuple):
            return type(a) is type(b) and len(a) == len(b) and all(self.same(x, y) for x, y in zip(a, b))
        if isinstance(a, dict):
            return (isinstance(b, dict) and list(a) == list(b)
                    and all(self.same(a[k], b[k]) for k in a))
        return type(a) is type(b) and a == b

    def same_node(self, a: Node, b: Node) -> bool:
        return (
            a.target is b.target
            and _meta_signature(a.meta.get("val")) == _meta_signature(b.meta.get("val"))
            and _getitem_uses(a) == _getitem_uses(b)
            and self.same(a.args, b.args)
            and self.same(a.kwargs, b.kwargs)
        )

    def match(self) -> dict[Node, Node] | None:
        if len(self.first.nodes) != len(self.other.nodes):
            return None
        if all(self.same_node(a, b) for a, b in zip(self.first.nodes, self.other.nodes)):
            return self.forward
        return None


def _layers(nodes: list[Node], layer_of: Callable[[Node], str | None]) -> list[FxLayer] | None:
    """The layers of the imported nodes, each contiguous in graph order, else None."""
    groups: dict[str, list[int]] = {}
    for index, node in enumerate(nodes):
        key = layer_of(node)
        if key is not None:
            groups.setdefault(key, []).append(index)
    for indices in groups.values():
        if indices[-1] - indices[0] + 1 != len(indices):
            return None  # interleaved with other nodes: leave it to the pass
    spans = list(groups.values())
    if any(after[0] != before[-1] + 1 for before, after in zip(spans, spans[1:])):
        return None  # the parent runs nodes between layers (a residual add): the pass finds the boundary
    return [FxLayer(key, [nodes[i] for i in indices]) for key, indices in groups.items()]


def _escapes(layer: FxLayer, imported: set[Node]) -> Iterable[tuple[int, int | None]]:
    for index, node in enumerate(layer.nodes):
        for user in node.users:
            if user in layer.position or (user.op != "output" and user not in imported):
                continue
            element = int(positional(user)[1]) if user.target is operator.getitem else None
            yield index, element


def plan_layers(nodes: list[Node], layer_of: Callable[[Node], str | None]) -> LayerPlan | None:
    """A plan when there are at least two layers and each matches the first, else None.
    `nodes`: the call_function nodes the importer converts, in graph order."""
    layers = _layers(nodes, layer_of)
    if layers is None or len(layers) < 2:
        return None
    outside: list[dict[Node, Node]] = [{}]
    for other in layers[1:]:
        pairs = _Matcher(layers[0], other).match()
        if pairs is None:
            return None
        outside.append(pairs)
    imported = set(nodes)
    escapes = {e for layer in layers for e in _escapes(layer, imported)}
    return LayerPlan(layers, outside, escapes)


# -- building the calls while importing ----------------------------------------------


def _leaves(value: Any) -> list[SSAValue]:
    if isinstance(value, SSAValue):
        return [value]
    if isinstance(value, tuple):
        return [v for v in value if isinstance(v, SSAValue)]
    return []


@dataclass
class LayerReuse:
    """Drives the importer's loop: the first layer imported inline, then made
    `@layer` and a call; each later layer a call without importing its nodes
    (both by `rdu-outline-layers`' `Outlining`)."""

    plan: LayerPlan
    block: Block
    env: dict[Node, Any]
    location_of: Callable[[Node], LocationAttr]
    emitted_by: dict[Operation, int] = field(default_factory=dict)
    first: Layer | None = None
    outlining: Outlining | None = None
    first_values: list[Any] = field(default_factory=list)
    """The first layer's values, node by node, as imported inline."""
    _mark: Operation | None = None

    def skip(self, node: Node) -> bool:
        """Whether the importer skips `node` (a later layer's), making its call first."""
        index = self.plan.layer_of_node.get(node)
        if index is None or index == 0:
            if index == 0:
                self._mark = self.block.last_op
            return False
        layer = self.plan.layers[index]
        if node is layer.nodes[0]:
            if self.first is None:
                self._outline_first()
            self._call(index)
        return True

    def converted(self, node: Node) -> None:
        """After the importer converted a node: note which ops the first layer's nodes made."""
        at = self.plan.layers[0].position.get(node)
        if at is None:
            return
        op = self._mark.next_op if self._mark is not None else self.block.first_op
        while op is not None:
            self.emitted_by[op] = at
            op = op.next_op

    def _outline_first(self) -> None:
        """Move the inline first layer into @layer and call it in its place."""
        layer0 = self.plan.layers[0]
        ops = [op for op in self.block.ops if op in self.emitted_by]
        if not ops:
            raise NotReusable("the first layer imported to no ops")
        self.first = Layer(layer0.key, ops)
        self.first_values = [self.env.get(node) for node in layer0.nodes]
        escaping = {v for at, element in self.plan.escapes
                    for v in self._escaping(self.first_values[at], element)}
        outputs = [r for op in ops for r in op.results if r in escaping]
        self.outlining = Outlining.of_first(self.first, outputs, len(self.plan.layers))
        self._remap(0, self.outlining.calls[0], Correspondence())

    @staticmethod
    def _escaping(value: Any, element: int | None) -> list[SSAValue]:
        if element is not None and isinstance(value, tuple):
            return _leaves(value[element])
        return _leaves(value)

    def _correspondence(self, index: int) -> Correspondence:
        """The first layer's outside values -> layer `index`'s, one to one, same types."""
        values = Correspondence()
        for node0, node in self.plan.outside[index].items():
            ours, theirs = self.env.get(node0), self.env.get(node)
            if isinstance(ours, tuple) != isinstance(theirs, tuple):
                raise NotReusable(f"{node.name} differs in kind from {node0.name}")
            pairs = zip(ours, theirs) if isinstance(ours, tuple) and isinstance(theirs, tuple) else [(ours, theirs)]
            for a, b in pairs:
                if isinstance(a, SSAValue) != isinstance(b, SSAValue):
                    raise NotReusable(f"{node.name} differs in kind from {node0.name}")
                if isinstance(a, SSAValue) and isinstance(b, SSAValue) and (a.type != b.type or not values.pair(a, b)):
                    raise NotReusable(f"{node.name} does not correspond to {node0.name}")
        return values

    def _call(self, index: int) -> None:
        layer = self.plan.layers[index]
        values = self._correspondence(index)
        assert self.first is not None and self.outlining is not None
        try:
            arguments = [values.forward[v] for v in self.outlining.inputs]
        except KeyError as missing:
            raise NotReusable(f"an input of {layer.key} has no counterpart") from missing
        first_at = self.emitted_by[self.first.ops[0]]  # the node whose op the call replaces
        call = self.outlining.call(layer.key, arguments, self.location_of(layer.nodes[first_at]), self.block)
        self._remap(index, call, values)

    def _remap(self, index: int, call: func.CallOp, outside: Correspondence) -> None:
        """Point the env of layer `index`'s nodes at the call's results."""
        assert self.outlining is not None
        outputs = self.outlining.outputs
        layer0, layer = self.plan.layers[0], self.plan.layers[index]
        results = dict(zip(outputs, call.res))
        origin = {r: self.emitted_by[r.owner] for r in outputs if isinstance(r.owner, Operation)}
        for result, value in zip(outputs, call.res):
            hint = result.name_hint
            if hint is not None and hint == layer0.nodes[origin[result]].name:
                hint = layer.nodes[origin[result]].name
            value.name_hint = hint

        def translate(value: Any) -> Any:
            if isinstance(value, tuple):
                return tuple(translate(v) for v in value)
            if not isinstance(value, SSAValue):
                return value
            if value in results:
                return results[value]
            if index == 0:  # the first layer's own values are gone but for its outputs
                return None if self.first is not None and self.first.defines(value) else value
            return outside.forward.get(value)

        for value, node in zip(self.first_values, layer.nodes):
            self.env[node] = translate(value)

    def finish(self, module: ModuleOp, function: func.FuncOp) -> None:
        """Add @layer after @forward, once every caller passes what the first layer
        passes (a weight, an input-dependent value or another value) at each argument."""
        if self.outlining is None:
            raise NotReusable("no layer was reached")
        kinds = self.outlining.kinds(function)
        if kinds is None:
            raise NotReusable("a layer passes other kinds of values than the first")
        self._check_no_fold_across_calls()
        self.outlining.install(module, function, kinds)

    def _check_no_fold_across_calls(self) -> None:
        """`rdu-canonicalize` runs before `rdu-outline-layers` in the pipelines: it
        must not have folded an op of a layer with one outside it (a reshape of a
        reshape, a fill into a map...; its patterns say, `folds_across`) nor
        removed a dead op of a layer, or the outlined program would differ."""
        assert self.outlining is not None
        callee = self.outlining.callee
        if any(op.results and not any(r.uses for r in op.results) for op in callee.body.block.ops):
            raise NotReusable("@layer has an op whose results are unread")  # its inputs' producers may die too
        params = callee.body.block.args
        returned = callee.body.block.last_op
        assert isinstance(returned, func.ReturnOp)
        crossings: dict[tuple[SSAValue, Operation, SSAValue], bool] = {}

        def folds(source: SSAValue, consumer: Operation, read_as: SSAValue) -> bool:
            key = (source, consumer, read_as)  # the same across calls: asked once
            if key not in crossings:
                crossings[key] = folds_across(source, consumer, read_as)
            return crossings[key]

        for call in self.outlining.calls:
            for value, param in zip(call.arguments, params):
                if isinstance(value, OpResult) and isinstance(value.op, func.CallOp):  # the layer before
                    value = returned.arguments[value.index]
                if any(folds(value, u.operation, param) for u in param.uses):
                    raise NotReusable(f"{call.attributes[LAYER]}: an argument folds into @layer")
            for result, inner in zip(call.res, returned.arguments):
                readers = [u.operation for u in result.uses if not isinstance(u.operation, func.CallOp)]
                if any(folds(inner, reader, result) for reader in readers):  # a call's reads: at its parameters
                    raise NotReusable(f"{call.attributes[LAYER]}: a result folds into its reader")
