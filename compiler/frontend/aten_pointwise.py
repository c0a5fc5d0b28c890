"""Any ATen pointwise op without a converter of its own, imported generically.

An op of the `aten` namespace that torch tags `torch.Tag.pointwise`, with a
functional schema, tensor inputs of the result's shape (or broadcasting to
it) and constant other arguments becomes one `rdu.map` per result whose
body is an `rdu.pointwise_call` of the op (`rducc.dialects.rdu.pointwise`): it
fuses with its neighbours like any elementwise op, and the runtime runs
torch's own kernel on whole arrays. The special functions (lgamma, digamma,
polygamma, mvlgamma, i0/i1, the Bessel functions and orthogonal
polynomials, zeta, igamma, erfcx, ndtri, nextafter, ...) come in this way.
A multi-result op (frexp) is one map per result, each calling the op.

`pointwise_entry` is what the importer asks for a node no converter claims.
"""

from __future__ import annotations

from typing import Any

import torch
from xdsl.dialects.builtin import TensorType
from xdsl.ir import Attribute, SSAValue

from rducc.dialects.rdu.aten import POINTWISE, AtenOpAttr, NotCallable, admitted, is_tensor_type, strings_admitted
from rducc.dialects.rdu.pointwise import PointwiseCallOp, pointwise_overload
from rducc.frontend.converter_api import ConverterEntry, GraphImporter, fake_value, node_arguments
from rducc.frontend.host_ops import constant_attribute
from rducc.frontend.scalar import Number, ScalarBuilder
from rducc.frontend.types import tensor_type_of

_CONSTANT = (bool, int, float, str, type(None))


def _overload(node: torch.fx.Node) -> Any:
    """The node's functional pointwise aten overload, or `NotCallable`."""
    target = node.target
    if not isinstance(target, torch._ops.OpOverload):
        raise NotCallable("it is not an ATen op")
    return pointwise_overload(AtenOpAttr.of(target._schema.name, target._overloadname, {}))


def _results(node: torch.fx.Node) -> list[Any]:
    value = fake_value(node)
    return list(value) if isinstance(value, tuple | list) else [value]


def check_pointwise(node: torch.fx.Node) -> str | None:
    """Why the generic pointwise import cannot take this node (None: it can)."""
    try:
        op = _overload(node)
        admission = admitted(POINTWISE, f"{op._schema.name}.{op._overloadname}")
    except NotCallable as error:
        return str(error)
    arguments = node_arguments(node)
    strings = {name: constant_attribute(value) for name, value in arguments.items() if isinstance(value, str)}
    if not strings_admitted({k: v for k, v in strings.items() if v is not None}, admission):
        return "a string argument that is not one of the values rducc's pointwise allow-list names"
    shapes = []
    for argument in op._schema.arguments:
        value = arguments[argument.name]
        if is_tensor_type(str(argument.type)) and value is not None:
            fake = fake_value(value) if isinstance(value, torch.fx.Node) else None
            if not isinstance(fake, torch.Tensor):
                return f"argument '{argument.name}' is not a tensor"
            if fake.is_complex():
                return f"complex argument '{argument.name}'"
            shapes.append(tuple(fake.shape))
        elif not isinstance(value, _CONSTANT):
            return f"argument '{argument.name}' is not a constant number, bool or string"
    results = _results(node)
    if not all(isinstance(r, torch.Tensor) and not r.is_complex() for r in results):
        return "a result that is not a real tensor"
    broadcast = tuple(torch.broadcast_shapes(*shapes)) if shapes else ()
    if any(tuple(r.shape) != broadcast for r in results):
        return "a result whose shape is not the inputs' broadcast shape"
    return None


def convert_pointwise(g: GraphImporter, node: torch.fx.Node) -> SSAValue | tuple[SSAValue, ...]:
    """One `rdu.map` per result, its body one `rdu.pointwise_call`."""
    op = _overload(node)
    arguments = node_arguments(node)
    inputs: list[SSAValue | Number] = []
    constants: dict[str, Attribute] = {}
    for argument in op._schema.arguments:
        value = arguments[argument.name]
        if is_tensor_type(str(argument.type)) and value is not None:
            inputs.append(g.value(value))
        else:
            attr = constant_attribute(value)
            assert attr is not None  # check_pointwise took only numbers, bools, strings and None
            constants[argument.name] = attr
    maps = []
    for index, result in enumerate(_results(node)):
        callee = AtenOpAttr.of(op._schema.name, op._overloadname, constants, index)
        maps.append(_call_map(g, inputs, callee, tensor_type_of(result, what=f"result of '{node.name}'")))
    return maps[0] if len(maps) == 1 else tuple(maps)


def _call_map(g: GraphImporter, inputs: list[SSAValue | Number], callee: AtenOpAttr, result: TensorType) -> SSAValue:
    """A map whose body calls `callee` on its inputs' elements."""

    def body(b: ScalarBuilder, scalars: list[SSAValue | Number]) -> SSAValue:
        tensors = [s for s in scalars if isinstance(s, SSAValue)]
        return b.emit(PointwiseCallOp(callee, tensors, result.element_type))

    return g.map(inputs, result, body)


_ENTRY = ConverterEntry(convert_pointwise, check_pointwise)


def pointwise_entry(node: torch.fx.Node) -> ConverterEntry | None:
    """The generic import of a node whose target is an aten op tagged pointwise
    (its `check` says which forms it refuses), else None."""
    target = node.target
    if isinstance(target, torch._ops.OpOverload) and target.namespace == "aten" and torch.Tag.pointwise in target.tags:
        return _ENTRY
    return None


__all__ = ["check_pointwise", "convert_pointwise", "pointwise_entry"]
