"""Python numbers computed by the graph, as rank-0 tensors, before import.

A model that reads tensors with `.item()` and does arithmetic on the numbers
(`x + y`, `x / y`, `-x`, `x ** 2`, ...) exports as `operator.*` nodes on
SymInt/SymFloat values. rducc computes them in the program: each number read
is its tensor reshaped to rank 0, each `operator.*` node the ATen op on rank-0
tensors in the number's Python type (int: int64, float: float64, as Python
computes; bool: bool). The outputs keep their SymInt/SymFloat signature, so
`rducc.Program` hands them back as Python numbers (`program.number_outputs`).
"""

from __future__ import annotations

import math
import operator
from typing import Any

import torch
from torch.export import ExportedProgram

aten = torch.ops.aten
Node = torch.fx.Node

_OPS: dict[Any, Any] = {
    operator.add: aten.add.Tensor,
    operator.sub: aten.sub.Tensor,
    operator.mul: aten.mul.Tensor,
    operator.truediv: aten.div.Tensor,
    operator.floordiv: aten.div.Tensor_mode,
    operator.mod: aten.remainder.Tensor,
    operator.pow: aten.pow.Tensor_Tensor,
    operator.neg: aten.neg.default,
    operator.abs: aten.abs.default,
    math.floor: aten.floor.default,
    math.ceil: aten.ceil.default,
    math.trunc: aten.trunc.default,
    torch.sym_float: None,
    torch.sym_int: aten.trunc.default,
}
"""Python's operators on numbers as ATen ops on rank-0 tensors; None: a cast only."""
_ROUNDING = (aten.floor.default, aten.ceil.default, aten.trunc.default)
"""Ops computed on the float operand, then cast to the (int) result."""
_READS = (aten._local_scalar_dense.default, aten.item.default)


def _dtype_of(value: Any) -> torch.dtype | None:
    """The tensor dtype a Python number (or its symbol) is computed in."""
    if isinstance(value, bool | torch.SymBool):
        return torch.bool
    if isinstance(value, int | torch.SymInt):
        return torch.int64
    if isinstance(value, float | torch.SymFloat):
        return torch.float64
    return None


def _is_number_op(node: Node) -> bool:
    return node.op == "call_function" and node.target in _OPS and _dtype_of(node.meta.get("val")) is not None


def has_python_numbers(ep: ExportedProgram) -> bool:
    """Whether the graph does arithmetic on Python numbers."""
    return any(_is_number_op(node) for node in ep.graph.nodes)


class _Emitter:
    def __init__(self, graph: torch.fx.Graph, mode: Any) -> None:
        self.graph, self.mode = graph, mode

    def __call__(self, anchor: Node, target: Any, *args: Any, **kwargs: Any) -> Node:
        with self.graph.inserting_before(anchor):
            node = self.graph.call_function(target, args, kwargs)
        values = torch.fx.node.map_arg((args, kwargs), lambda n: n.meta["val"])
        with self.mode:
            node.meta["val"] = target(*values[0], **values[1])
        for key in ("stack_trace", "nn_module_stack"):
            if key in anchor.meta:
                node.meta[key] = anchor.meta[key]
        return node


def _operand(emit: _Emitter, anchor: Node, value: Any, tensors: dict[Node, Node], dtype: torch.dtype) -> Node:
    """A number operand as a rank-0 tensor of `dtype`."""
    if isinstance(value, Node):
        tensor = tensors[value]
        if tensor.meta["val"].dtype == dtype:
            return tensor
        return emit(anchor, aten._to_copy.default, tensor, dtype=dtype)
    return emit(anchor, aten.scalar_tensor.default, value, dtype=dtype)


def _tensor_of_read(emit: _Emitter, read: Node) -> Node:
    """The rank-0 tensor a `.item()` read reads, in its number's dtype."""
    source = read.args[0]
    assert isinstance(source, Node)
    tensor = emit(read, aten.view.default, source, [])
    dtype = _dtype_of(read.meta.get("val"))
    if dtype is None or tensor.meta["val"].dtype == dtype:
        return tensor
    return emit(read, aten._to_copy.default, tensor, dtype=dtype)


def _lowered(emit: _Emitter, node: Node, tensors: dict[Node, Node]) -> Node:
    """The rank-0 tensor computing `node`'s number in its type."""
    dtype = _dtype_of(node.meta["val"])
    assert dtype is not None
    op = _OPS[node.target]
    if op in _ROUNDING:
        source = node.args[0]
        operand_dtype = tensors[source].meta["val"].dtype if isinstance(source, Node) else torch.float64
        rounded = emit(node, op, _operand(emit, node, source, tensors, operand_dtype))
        return rounded if operand_dtype == dtype else emit(node, aten._to_copy.default, rounded, dtype=dtype)
    operands = [_operand(emit, node, a, tensors, dtype) for a in node.args]
    if op is aten.div.Tensor_mode:
        return emit(node, op, *operands, rounding_mode="floor")
    return operands[0] if op is None else emit(node, op, *operands)


def lower_python_numbers(ep: ExportedProgram) -> None:
    """Rewrite (in place) the graph's arithmetic on Python numbers as rank-0 tensor ops."""
    graph = ep.graph
    mode = next(n.meta["val"].fake_mode for n in graph.nodes if isinstance(n.meta.get("val"), torch.Tensor)
                and hasattr(n.meta["val"], "fake_mode"))
    emit = _Emitter(graph, mode)
    tensors: dict[Node, Node] = {}
    lowered: list[Node] = []
    for node in list(graph.nodes):
        if node.op == "call_function" and node.target in _READS:
            if any(_is_number_op(user) for user in node.users):
                tensors[node] = _tensor_of_read(emit, node)
            continue
        if not _is_number_op(node) or not all(a in tensors for a in node.all_input_nodes):
            continue
        tensors[node] = _lowered(emit, node, tensors)
        lowered.append(node)
    output = next(n for n in graph.nodes if n.op == "output")
    output.args = (type(output.args[0])(tensors.get(a, a) if a in lowered else a for a in output.args[0]),
                   *output.args[1:])
    for node in reversed(lowered):
        if not node.users:
            graph.erase_node(node)
    graph.lint()
