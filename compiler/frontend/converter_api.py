"""What an ATen converter is given and how it registers: `converts` fills
`CONVERTERS`; a converter reads its node's arguments (`node_arguments`,
`fake_value`) and emits ops through the `GraphImporter`.

The converter modules (`aten_*.py`) import this module and the shared helpers
(`aten_common`, `aten_build`) only; the importer imports them all.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import cache
from typing import Any

import torch
from xdsl.dialects.builtin import LocationAttr, TensorType, UnknownLoc
from xdsl.ir import Block, Operation, SSAValue

from rducc.dialects.contracts import Phase, set_layer, set_phase
from rducc.errors import RduccError
from rducc.frontend.scalar import Number, ScalarBuilder, build_map_op

Value = SSAValue | tuple[SSAValue | None, ...] | None


Converter = Callable[["GraphImporter", torch.fx.Node], Value]


Check = Callable[[torch.fx.Node], str | None]


IGNORED_TARGETS = frozenset(
    {
        "aten._assert_tensor_metadata.default",
        "aten._assert_scalar.default",
        "aten.sym_constrain_range_for_size.default",
        "aten._linalg_check_errors.default",
        "aten._assert_async.msg",
        "aten._assert_async.default",
    }
)
"""Runtime assertions that carry no value and are dropped (linalg's check of a
factorization's status: rducc's factorizations do not detect singular input;
`_assert_async`, the value checks decompositions add, as one_hot's class range:
valid inputs give eager's values, invalid ones are not detected)."""


@dataclass(frozen=True)
class ConverterEntry:
    """How one ATen overload is imported, and which of its forms are supported."""

    convert: Converter
    check: Check | None = None


CONVERTERS: dict[str, ConverterEntry] = {}
"""ATen overload name (`aten.add.Tensor`) to its converter."""


def converts(*targets: str, check: Check | None = None) -> Callable[[Converter], Converter]:
    """Register a converter for one or more ATen overloads."""

    def register(function: Converter) -> Converter:
        for target in targets:
            CONVERTERS[target] = ConverterEntry(function, check)
        return function

    return register


@cache
def _schema_arguments(target: Any) -> tuple[tuple[str, bool, Any], ...]:
    schema = target._schema
    return tuple(
        (a.name, a.has_default_value(), a.default_value if a.has_default_value() else None)
        for a in schema.arguments
    )


def node_arguments(node: torch.fx.Node) -> dict[str, Any]:
    """The node's arguments by schema name, defaults filled in."""
    values: dict[str, Any] = {}
    for index, (name, _, default) in enumerate(_schema_arguments(node.target)):
        if index < len(node.args):
            values[name] = node.args[index]
        else:
            values[name] = node.kwargs.get(name, default)
    return values


def positional(node: torch.fx.Node) -> tuple[Any, ...]:
    """The node's positional arguments, as its ATen schema types them (export
    checked them against it), not as FX's union of every argument kind."""
    return tuple(node.args)


def fake_value(arg: Any) -> Any:
    """The FakeTensor (or tuple of them) that export recorded for a node."""
    return arg.meta.get("val") if isinstance(arg, torch.fx.Node) else arg


@dataclass
class GraphImporter:
    """Walks one FX graph, emitting rducc ops into `block` in graph order."""

    block: Block
    env: dict[torch.fx.Node, Value] = field(default_factory=dict)
    location: LocationAttr = field(default_factory=UnknownLoc)
    name_hint: str | None = None
    layer: str | None = None
    phase: Phase | None = None
    """The training phase of the node being converted (a joint graph's), else None."""

    def value(self, arg: Any) -> SSAValue:
        """The SSA value of an FX node argument."""
        value = self.env[arg]
        if not isinstance(value, SSAValue):
            raise RduccError(f"node {arg.name} has no tensor value here")
        return value

    def emit(self, op: Operation) -> SSAValue:
        """Append `op` at the current location; return its first result."""
        op.location = self.location
        if self.layer:
            set_layer(op, self.layer)
        if self.phase is not None:
            set_phase(op, self.phase)
        self.block.add_op(op)
        if op.results:
            if self.name_hint and op.results[0].name_hint is None:
                op.results[0].name_hint = self.name_hint
            return op.results[0]
        return None  # type: ignore[return-value]

    def map(
        self,
        inputs: Sequence[SSAValue | Number],
        result_type: TensorType,
        body: Callable[[ScalarBuilder, list[SSAValue | Number]], SSAValue],
    ) -> SSAValue:
        """An `rdu.map`: tensor inputs become block arguments, numbers stay numbers."""
        return self.emit(build_map_op(inputs, result_type, body, self.location))


def assertion_only_nodes(graph: torch.fx.Graph) -> set[torch.fx.Node]:
    """Symbolic (non-tensor) values read only by runtime assertions, such as the
    range checks export adds after `tensor.item()`: like the assertions, they
    carry no value and are dropped."""
    dropped: set[torch.fx.Node] = set()
    for node in reversed(graph.nodes):
        if node.op != "call_function" or isinstance(node.meta.get("val"), torch.Tensor) or not node.users:
            continue
        if all(str(user.target) in IGNORED_TARGETS or user in dropped for user in node.users):
            dropped.add(node)
    return dropped

