"""Python numbers computed by the graph, as rank-0 tensors, before import.

A model that reads tensors with `.item()` and does arithmetic on the numbers
(`x + y`, `x / y`, `-x`, `x ** 2`, ...) exports as `operator.*` nodes on
SymInt/SymFloat values. rducc computes them in the program: each number read
is its tensor reshaped to rank 0, each `operator.*` node the ATen op on rank-0
tensors in the number's Python type (int: int64, float: float64, as Python
computes; bool: bool). The outputs keep their SymInt/SymFloat signature, so
`rducc.Program` hands them back as Python numbers (`program.number_outputs`).
A number that a tensor op takes where its schema takes a Tensor (`x * a` with
`a = t.item()` a float: `aten.mul.Tensor(x, a)`) is its rank-0 tensor in the
dtype torch computes the op in (`torch.result_type` of the op's tensor and the
number), so that the promotion is the one a Python number gets. One an op takes
as a Scalar with no Tensor overload (`leaky_relu(x, a)`, `elu(x, alpha=a)`) goes
through torch's own decomposition of that op (`_decompose_with_number_tensors`),
whose ops then take it as above.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable
from typing import Any

import torch
from torch.export import ExportedProgram

from rducc.frontend.fx_emit import NodeEmitter

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
    torch.sym_max: aten.maximum.default,
    torch.sym_min: aten.minimum.default,
    torch.sym_not: aten.logical_not.default,
    operator.lt: aten.lt.Tensor,
    operator.le: aten.le.Tensor,
    operator.gt: aten.gt.Tensor,
    operator.ge: aten.ge.Tensor,
    operator.eq: aten.eq.Tensor,
    operator.ne: aten.ne.Tensor,
}
"""Python's operators on numbers as ATen ops on rank-0 tensors; None: a cast only."""
_COMPARISONS = (aten.lt.Tensor, aten.le.Tensor, aten.gt.Tensor, aten.ge.Tensor, aten.eq.Tensor, aten.ne.Tensor)
"""Ops computed on their operands' common type (float if either is), giving a bool."""
_ROUNDING = (aten.floor.default, aten.ceil.default, aten.trunc.default)
"""Ops computed on the float operand, then cast to the (int) result."""
_READS = (aten._local_scalar_dense.default, aten.item.default)
Table = dict[Any, Callable[..., Any]]
"""A decomposition table: op overload to its decomposition."""


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


def _is_number(value: Any) -> bool:
    """Whether an argument is a Python number the graph computes (a read or a number op)."""
    return (isinstance(value, Node) and _dtype_of(value.meta.get("val")) is not None
            and (value.target in _READS or _is_number_op(value)))


def _takes_tensor(argument: Any) -> bool:
    """Whether a schema argument is a Tensor or an optional Tensor."""
    kind = argument.type
    if isinstance(kind, torch.OptionalType):
        kind = kind.getElementType()
    return isinstance(kind, torch.TensorType)


def _number_positions(node: Node) -> list[int]:
    """The positions of `node`'s positional arguments that hold a Python number."""
    return [i for i, a in enumerate(node.args) if _is_number(a)]


def _tensor_overload(node: Node) -> Any:
    """The overload of `node`'s op that takes a Tensor wherever `node` passes a number
    (`gt.Tensor` for `gt.Scalar`, `clamp.Tensor` for `clamp.default`), or None."""
    target = node.target
    if not isinstance(target, torch._ops.OpOverload):
        return None
    names = [a.name for a in target._schema.arguments]
    wanted = {names[i] for i in _number_positions(node) if i < len(names)}
    wanted |= {k for k, v in node.kwargs.items() if _is_number(v)}
    passed = {names[i] for i, a in enumerate(node.args) if i < len(names) and a is not None}
    passed |= {k for k, v in node.kwargs.items() if v is not None}
    packet = target.overloadpacket
    for overload_name in packet.overloads():
        overload = getattr(packet, overload_name)
        arguments = overload._schema.arguments
        if [a.name for a in arguments] != names:
            continue
        if all(_takes_tensor(a) if a.name in wanted else (a.name not in passed or str(a.type) == str(b.type))
               for a, b in zip(arguments, target._schema.arguments)):
            return overload
    return None


def _number_args(node: Node) -> list[int | str]:
    """The positional indices and keyword names of `node`'s Tensor arguments that hold a Python number."""
    if node.op != "call_function" or not isinstance(node.target, torch._ops.OpOverload):
        return []
    arguments = {a.name: a for a in node.target._schema.arguments}
    order = list(arguments.values())
    positional = [i for i in _number_positions(node) if i < len(order) and _takes_tensor(order[i])]
    named = [k for k, v in node.kwargs.items() if _is_number(v) and k in arguments and _takes_tensor(arguments[k])]
    return [*positional, *named]


def _needs_tensor_overload(node: Node) -> bool:
    """Whether `node` passes a number where its op's schema takes a Scalar."""
    if node.op != "call_function" or not isinstance(node.target, torch._ops.OpOverload):
        return False
    passed = len(_number_positions(node)) + sum(_is_number(v) for v in node.kwargs.values())
    return passed > len(_number_args(node))


def has_python_numbers(ep: ExportedProgram) -> bool:
    """Whether the graph does arithmetic on Python numbers or hands one to a tensor op."""
    return any(_is_number_op(node) or _number_args(node) or _needs_tensor_overload(node) for node in ep.graph.nodes)


def _operand(emit: NodeEmitter, anchor: Node, value: Any, tensors: dict[Node, Node], dtype: torch.dtype) -> Node:
    """A number operand as a rank-0 tensor of `dtype`."""
    if isinstance(value, Node):
        tensor = tensors[value]
        if tensor.meta["val"].dtype == dtype:
            return tensor
        return emit(anchor, aten._to_copy.default, tensor, dtype=dtype)
    return emit(anchor, aten.scalar_tensor.default, value, dtype=dtype)


def _tensor_of_read(emit: NodeEmitter, read: Node) -> Node:
    """The rank-0 tensor a `.item()` read reads, in its number's dtype."""
    source = read.args[0]
    assert isinstance(source, Node)
    tensor = emit(read, aten.view.default, source, [])
    dtype = _dtype_of(read.meta.get("val"))
    if dtype is None or tensor.meta["val"].dtype == dtype:
        return tensor
    return emit(read, aten._to_copy.default, tensor, dtype=dtype)


def _lowered(emit: NodeEmitter, node: Node, tensors: dict[Node, Node]) -> Node:
    """The rank-0 tensor computing `node`'s number in its type."""
    dtype = _dtype_of(node.meta["val"])
    assert dtype is not None
    op = _OPS[node.target]
    if op in _ROUNDING:
        source = node.args[0]
        operand_dtype = tensors[source].meta["val"].dtype if isinstance(source, Node) else torch.float64
        rounded = emit(node, op, _operand(emit, node, source, tensors, operand_dtype))
        return rounded if operand_dtype == dtype else emit(node, aten._to_copy.default, rounded, dtype=dtype)
    if op in _COMPARISONS:
        kinds = {_dtype_of(a.meta.get("val") if isinstance(a, Node) else a) for a in node.args}
        dtype = torch.float64 if torch.float64 in kinds else torch.int64
    operands = [_operand(emit, node, a, tensors, dtype) for a in node.args]
    if op is aten.div.Tensor_mode:
        return emit(node, op, *operands, rounding_mode="floor")
    return operands[0] if op is None else emit(node, op, *operands)


def _as_tensor_operand(emit: NodeEmitter, user: Node, number: Node, tensors: dict[Node, Node]) -> Node:
    """`number`'s rank-0 tensor cast to the dtype `user` computes in with it as a Python number."""
    tensor = tensors[number]
    others = [a.meta["val"] for a in user.all_input_nodes
              if isinstance(a.meta.get("val"), torch.Tensor) and a not in tensors]
    examples: dict[torch.dtype | None, bool | int | float] = {torch.bool: True, torch.int64: 1, torch.float64: 1.0}
    example = examples[_dtype_of(number.meta["val"])]
    dtype = torch.result_type(others[0], example) if others else tensor.meta["val"].dtype
    if tensor.meta["val"].dtype == dtype:
        return tensor
    return emit(user, aten._to_copy.default, tensor, dtype=dtype)


def _pass_numbers_as_tensors(emit: NodeEmitter, node: Node, tensors: dict[Node, Node], table: Table) -> None:
    """Replace each Python number `node` takes as a Tensor argument by its rank-0 tensor
    (first switching a Scalar overload to its Tensor form, when the op has one; a fill value
    expanded; else `node` replaced by its op's decomposition, where the number is a value)."""
    if _needs_tensor_overload(node) and (overload := _tensor_overload(node)) is not None:
        node.target = overload
    elif _needs_tensor_overload(node) and _fill_argument(node) is not None:
        _fill_from_number(emit, node, tensors)
        return
    elif _needs_tensor_overload(node) and _decompose_with_number_tensors(emit, node, tensors, table):
        return
    args, kwargs = list(node.args), dict(node.kwargs)
    for key in _number_args(node):
        value = args[key] if isinstance(key, int) else kwargs[key]
        if not isinstance(value, Node) or value not in tensors:
            continue
        if isinstance(key, int):
            args[key] = _as_tensor_operand(emit, node, value, tensors)
        else:
            kwargs[key] = _as_tensor_operand(emit, node, value, tensors)
    node.args, node.kwargs = tuple(args), kwargs


def _decompose_with_number_tensors(emit: NodeEmitter, node: Node, tensors: dict[Node, Node], table: Table) -> bool:
    """`node` (an op taking a number as a Scalar, with no Tensor overload: `leaky_relu(x, a)`,
    `elu(x, alpha=a)`, `hardtanh(x, lo, hi)`, `softplus(x, beta)`) replaced by torch's own
    decomposition of its op, whose ops take the number where the op did, each then given its
    rank-0 tensor as any tensor op is (`x * a`): the number stays a value computed for every
    input. The decomposition is traced twice, each number a different stand-in constant; a
    constant that is the first stand-in in one trace and the second in the other, at the same
    place, is the number. False, `node` left as it is (the importer's error names it), where
    torch has no decomposition, or it computes with the number in Python (a constant that is
    neither) or branches on it (the traces differ)."""
    numbers = [n for n in node.all_input_nodes if n in tensors and _is_number(n)]
    if not numbers or any(_dtype_of(n.meta["val"]) is torch.bool for n in numbers):
        return False
    first, second = (_traced_with(node, numbers, stand_ins, table) for stand_ins in _STAND_INS)
    if first is None or second is None:
        return False
    places = _number_places(first, second, numbers)
    if places is None:
        return False
    added = _splice_numbers(node, first, places)
    for made in added:
        if _number_args(made) or _needs_tensor_overload(made):
            _pass_numbers_as_tensors(emit, made, tensors, table)
    return True


_STAND_INS = ((0.3183098861837907, 1.4142135623730951, 2.718281828459045, 3.141592653589793),
              (0.36787944117144233, 1.7320508075688772, 2.23606797749979, 3.3166247903554))
"""Two sets of constants a number stands in as while torch's decomposition is traced (increasing in
the argument order, as the bounds of `hardtanh`/`clamp` are; never a small integer a shape holds)."""


def _stand_in(number: Node, value: float) -> float | int:
    """`value` in the number's Python type (an int stand-in: an odd integer no shape is likely to hold)."""
    return value if _dtype_of(number.meta["val"]) is torch.float64 else int(value * 1000003) | 1


def _traced_with(node: Node, numbers: list[Node], stand_ins: tuple[float, ...],
                 table: Table) -> torch.fx.GraphModule | None:
    """torch's decomposition of `node`'s op traced on its tensors' fake values, `numbers` as constants
    (what it calls decomposed by `table`, the program's decomposition table)."""
    from torch._decomp import decomposition_table as torch_table
    from torch._guards import detect_fake_mode
    from torch.fx.experimental.proxy_tensor import make_fx

    if not isinstance(node.target, torch._ops.OpOverload):
        return None
    decomposition = torch_table.get(node.target)
    if decomposition is None or len(numbers) > len(stand_ins):
        return None
    constants = {n: _stand_in(n, v) for n, v in zip(numbers, stand_ins)}
    tensor_inputs = [n for n in node.all_input_nodes if n not in constants]
    fakes = [n.meta.get("val") for n in tensor_inputs]
    mode = detect_fake_mode(fakes)
    if mode is None or not all(isinstance(v, torch.Tensor) for v in fakes):
        return None

    def call(*values: Any) -> Any:
        given: dict[Node, Any] = {**dict(zip(tensor_inputs, values)), **constants}
        args, kwargs = torch.fx.node.map_arg((node.args, node.kwargs), given.__getitem__)
        return decomposition(*args, **kwargs)

    try:
        with mode:
            traced = make_fx(call, decomposition_table=table)(*fakes)
    except Exception:  # noqa: BLE001 - torch raises many kinds from inside its tracer
        return None
    ops = [n for n in traced.graph.nodes if n.op not in ("placeholder", "output")]
    if any(n.op != "call_function" or n.target is node.target for n in ops):
        return None
    return traced


Places = dict[tuple[int, int], Node]
"""(node index in the trace, leaf index among its flattened arguments) -> the number there."""


def _number_places(first: torch.fx.GraphModule, second: torch.fx.GraphModule, numbers: list[Node]) -> Places | None:
    """Where each number sits in the traces (see `_decompose_with_number_tensors`), or None when
    they differ otherwise."""
    one, two = list(first.graph.nodes), list(second.graph.nodes)
    if len(one) != len(two):
        return None
    position = {n: i for i, n in enumerate(one)} | {n: i for i, n in enumerate(two)}
    by_pair = {(_stand_in(n, a), _stand_in(n, b)): n for n, a, b in zip(numbers, *_STAND_INS)}
    places: Places = {}
    for index, (a, b) in enumerate(zip(one, two)):
        if a.op != b.op or a.target != b.target:
            return None
        leaves_a, leaves_b = (torch.utils._pytree.tree_leaves((n.args, n.kwargs)) for n in (a, b))
        if len(leaves_a) != len(leaves_b):
            return None
        for leaf, (x, y) in enumerate(zip(leaves_a, leaves_b)):
            if isinstance(x, Node) and isinstance(y, Node) and position[x] == position[y]:
                continue
            if not isinstance(x, Node) and (type(x), x) == (type(y), y):
                continue
            number = by_pair.get((x, y)) if isinstance(x, int | float) else None
            if number is None:
                return None
            places[(index, leaf)] = number
    return places


def _splice_numbers(node: Node, traced: torch.fx.GraphModule, places: Places) -> list[Node]:
    """`traced`'s ops in `node`'s place, each number put back where it stood in; the ops added."""
    graph, added = node.graph, []
    env: dict[Node, Node] = {}
    tensor_inputs = [n for n in node.all_input_nodes if n not in places.values()]
    placeholders = [n for n in traced.graph.nodes if n.op == "placeholder"]
    env.update(zip(placeholders, tensor_inputs))
    result: Any = None
    with graph.inserting_before(node):
        for index, inner in enumerate(traced.graph.nodes):
            if inner.op == "placeholder":
                continue
            if inner.op == "output":
                result = torch.fx.node.map_arg(inner.args[0], env.__getitem__)
                continue
            leaves, spec = torch.utils._pytree.tree_flatten((inner.args, inner.kwargs))
            leaves = [places.get((index, i), env.get(v, v) if isinstance(v, Node) else v) for i, v in enumerate(leaves)]
            args, kwargs = torch.utils._pytree.tree_unflatten(leaves, spec)
            copied = graph.call_function(inner.target, tuple(args), dict(kwargs))
            copied.meta.update({k: v for k, v in inner.meta.items() if k == "val"})
            copied.meta.update({k: v for k, v in node.meta.items() if k in ("stack_trace", "nn_module_stack")})
            env[inner] = copied
            added.append(copied)
    node.replace_all_uses_with(result)
    graph.erase_node(node)
    return added


_FILLS = ("fill_value", "s")
"""The Scalar argument a creation op fills its whole result with (`full`, `new_full`, `full_like`,
`scalar_tensor`): such an op has no Tensor overload, so it becomes the number's tensor, expanded."""


def _fill_argument(node: Node) -> int | str | None:
    """Where `node` passes a Python number as the value it fills its result with, or None."""
    names = [a.name for a in node.target._schema.arguments]  # type: ignore[union-attr]
    for index, value in enumerate(node.args):
        if index < len(names) and names[index] in _FILLS and _is_number(value):
            return index
    return next((k for k, v in node.kwargs.items() if k in _FILLS and _is_number(v)), None)


def _fill_from_number(emit: NodeEmitter, node: Node, tensors: dict[Node, Node]) -> None:
    """`full(size, n)` as n's rank-0 tensor cast to the result's dtype (as torch casts the number)
    and expanded to its shape."""
    key = _fill_argument(node)
    assert key is not None
    number = node.args[key] if isinstance(key, int) else node.kwargs[key]
    assert isinstance(number, Node)
    value = node.meta["val"]
    filled = emit(node, aten._to_copy.default, tensors[number], dtype=value.dtype)
    if value.dim():
        filled = emit(node, aten.expand.default, filled, list(value.shape))
    node.replace_all_uses_with(filled)
    node.graph.erase_node(node)


def lower_python_numbers(ep: ExportedProgram, table: Table) -> None:
    """Rewrite (in place) the graph's arithmetic on Python numbers as rank-0 tensor ops (`table`: the
    decomposition table the program was decomposed with)."""
    graph = ep.graph
    mode = next(n.meta["val"].fake_mode for n in graph.nodes if isinstance(n.meta.get("val"), torch.Tensor)
                and hasattr(n.meta["val"], "fake_mode"))
    emit = NodeEmitter(graph, mode)
    tensors: dict[Node, Node] = {}
    lowered: list[Node] = []
    for node in list(graph.nodes):
        if node.op == "call_function" and node.target in _READS:
            if any(_is_number_op(u) or _number_args(u) or _needs_tensor_overload(u) for u in node.users):
                tensors[node] = _tensor_of_read(emit, node)
            continue
        if _number_args(node) or _needs_tensor_overload(node):
            _pass_numbers_as_tensors(emit, node, tensors, table)
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
