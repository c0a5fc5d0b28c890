"""The host fallback: an ATen op with no converter runs on the host CPU.

As real dataflow toolchains do, an operator the chip has no lowering for (a
linalg factorization, `mode`, `histc`, `segment_reduce`, ...) becomes one
`rdu.host_call` that torch's CPU kernel runs, when it is

- an `aten` overload with no converter, not tagged pointwise (pointwise ops
  are imported as scalar ops inside `rdu.map` bodies instead),
- one a host call may run: on the host allow-list of `rducc.dialects.rdu.aten`
  (a pure function of its tensor operands), with its string arguments values
  the list names,
- of static result shapes, known from the FX node's `meta['val']` (a
  data-dependent size is refused before this, as before),
- with every non-tensor argument a constant an attribute can hold.

A user's `torch.library` custom op left in the program (its implementation
could not be traced into ATen: `rducc.frontend.decompositions`) becomes an
`rdu.host_call` of `#rdu.custom` (its qualified name, schema and constants)
under the same conditions: functional, returning tensors of static shapes
(its fake kernel's, recorded in `meta['val']`), constant non-tensor arguments.

A node `rducc.frontend.complex_pairs` marked with `HOST_PAIRS` (an op on
complex values, now on their real pairs) becomes a host call whose `pairs`
name the complex operands and results: the host runs torch's complex kernel.

The importer asks `host_fallback(node)` only for a node no converter takes (or one so marked),
and only when host ops are on (`host_ops=True`, the default; `rducc
--no-host-ops` keeps the operator error).
"""

from __future__ import annotations

from typing import Any

import torch
from xdsl.dialects.builtin import (
    ArrayAttr,
    FloatAttr,
    IntegerAttr,
    NoneType,
    StringAttr,
    f64,
    i1,
    i64,
)
from xdsl.ir import Attribute, SSAValue

from rducc.dialects.rdu.aten import (
    HOST,
    MEMORY_FORMATS,
    AtenOpAttr,
    NotCallable,
    Schema,
    admitted,
    aten_overload,
    holds,
    schema_of,
    strings_admitted,
)
from rducc.dialects.rdu.custom_op import TORCH_NAMESPACES, CustomOpAttr, schema_facts
from rducc.dialects.rdu.host_call import HostCallOp
from rducc.errors import RduccError
from rducc.frontend.complex_pairs import HOST_PAIRS
from rducc.frontend.converter_api import ConverterEntry, GraphImporter, Value, fake_value, node_arguments
from rducc.frontend.types import element_type_of, tensor_type_of


def host_fallback(node: torch.fx.Node) -> ConverterEntry | None:
    """How `node` is imported as a host call, or None when it cannot run on the host."""
    target = node.target
    if not isinstance(target, torch._ops.OpOverload):
        return None
    if target.namespace not in CORE_NAMESPACES:
        return _custom_fallback(node, target)
    if target.namespace != "aten":
        return None
    if torch.Tag.pointwise in target.tags:
        return None  # the pointwise path's (a scalar op in a map body)
    try:
        aten_overload(target._schema.name, target._overloadname)
        admission = admitted(HOST, f"{target._schema.name}.{target._overloadname}")
    except NotCallable:
        return None
    constants = _constants(node, schema_of(target._schema.name, target._overloadname))
    if _results(node) is None or constants is None or not strings_admitted(constants, admission):
        return None
    return ConverterEntry(convert_host_call)


CORE_NAMESPACES = TORCH_NAMESPACES | {"quantized_decomposed"}
"""torch's namespaces: an op of any other is a custom op."""


def _custom_fallback(node: torch.fx.Node, target: torch._ops.OpOverload) -> ConverterEntry | None:
    """A custom op's host call (module docstring), or None when it cannot be one."""
    try:
        schema = schema_facts(target._schema)
    except NotCallable:
        return None
    if _results(node) is None or _constants(node, schema) is None:
        return None
    return ConverterEntry(convert_host_call)


def _callee(target: torch._ops.OpOverload, constants: dict[str, Attribute]) -> AtenOpAttr | CustomOpAttr:
    if target.namespace in CORE_NAMESPACES:
        return AtenOpAttr.of(target._schema.name, target._overloadname, constants)
    return CustomOpAttr.of(target._schema.name, target._overloadname, str(target._schema), constants)


def _schema(target: torch._ops.OpOverload) -> Schema:
    if target.namespace in CORE_NAMESPACES:
        return schema_of(target._schema.name, target._overloadname)
    return schema_facts(target._schema)


def _results(node: torch.fx.Node) -> list[Attribute] | None:
    """The result types from the node's recorded values; None unless all are static tensors."""
    values = fake_value(node)
    values = list(values) if isinstance(values, tuple | list) else [values]
    if not all(isinstance(v, torch.Tensor) and v.layout == torch.strided for v in values):
        return None  # a sparse or other non-dense result has no tensor type here
    try:
        return [tensor_type_of(v) for v in values]
    except RduccError:
        return None


def _constants(node: torch.fx.Node, schema: Schema) -> dict[str, Attribute] | None:
    """The non-tensor arguments that differ from their defaults, as attributes;
    None when one has no attribute form (a device, a layout, a tensor list)."""
    target = node.target
    assert isinstance(target, torch._ops.OpOverload)
    defaults = {a.name: a.default_value for a in target._schema.arguments if a.has_default_value()}
    tensors, types = schema.tensors, schema.types
    constants: dict[str, Attribute] = {}
    for name, value in node_arguments(node).items():
        if name in tensors:
            if value is None and name not in defaults:
                constants[name] = NoneType()  # an optional tensor the schema wants given, as None
            elif value is not None and not isinstance(value, torch.fx.Node):
                return None
            continue
        if name in defaults and _same(value, defaults[name]):
            continue
        attr = constant_attribute(value)
        if attr is None or not holds(types[name], attr):
            return None  # no attribute form the verifier accepts for this argument
        constants[name] = attr
    return constants


def _same(value: Any, default: Any) -> bool:
    try:
        return type(value) is type(default) and bool(value == default)
    except Exception:  # noqa: BLE001 - values that do not compare are not the default
        return False


def constant_attribute(value: Any) -> Attribute | None:
    """The attribute holding a constant argument of an ATen op (`rducc.dialects.rdu.aten`:
    a dtype as its element type, a memory format by name), or None when none can."""
    if isinstance(value, bool):
        return IntegerAttr(int(value), i1)
    if isinstance(value, int):
        return IntegerAttr(value, i64)
    if isinstance(value, float):
        return FloatAttr(value, f64)
    if isinstance(value, str):
        return StringAttr(value)
    if value is None:
        return NoneType()
    if isinstance(value, torch.memory_format):
        name = str(value).removeprefix("torch.")
        return StringAttr(name) if name in MEMORY_FORMATS else None
    if isinstance(value, torch.dtype):
        try:
            return element_type_of(value, "a host call's dtype argument")
        except RduccError:
            return None
    if isinstance(value, list | tuple):
        items = [constant_attribute(v) for v in value]
        kept = [i for i in items if i is not None and not isinstance(i, ArrayAttr)]
        return ArrayAttr(kept) if len(kept) == len(items) else None
    return None


def convert_host_call(g: GraphImporter, node: torch.fx.Node) -> Value:
    """`rdu.host_call` of the node's overload (an ATen op or a custom op) on its tensor operands."""
    target = node.target
    assert isinstance(target, torch._ops.OpOverload)
    schema = _schema(target)
    tensors = schema.tensors
    names: list[str] = []
    inputs: list[SSAValue] = []
    for name, value in node_arguments(node).items():
        if name in tensors and isinstance(value, torch.fx.Node):
            names.append(name)
            inputs.append(g.value(value))
    constants, results = _constants(node, schema), _results(node)
    assert constants is not None and results is not None
    paired, pair_results = node.meta.get(HOST_PAIRS, ((), ()))
    op = HostCallOp(_callee(target, constants), inputs, names, results, paired, pair_results)
    g.emit(op)
    outputs = tuple(op.outputs)
    return outputs[0] if not isinstance(fake_value(node), tuple | list) else outputs


__all__ = ["constant_attribute", "convert_host_call", "host_fallback"]
