"""Sizes that torch.export left to the data, compiled for the example's values
and checked when the program runs.

torch.export records a size it cannot know from the input shapes as an
unbacked symbol (`u0`): `bincount`'s length, the number of elements a boolean
mask selects (`x[mask]`, `nonzero`), a size read with `.item()` (`x.view(n.item(), -1)`,
`x.narrow(0, start.item(), 2)`, `x.split(counts.tolist())`), with the bounds it
could prove as `_assert_scalar` nodes. rducc compiles static shapes, so it
compiles such a program for the values the example inputs give (the archive
keeps them: `ExportedProgram.example_inputs`) and guards every op whose shape
rests on one with `rducc::check` (imported as `rdu.check`):

- an op that makes a data-dependent size becomes its static form with the
  example's size (where `rducc.frontend.capacity` does not pad it to a
  capacity): `nonzero` is `nonzero_static`; a boolean mask index (in
  `x[mask]` and in `index_put`, the values one per masked element) is the
  mask's `nonzero_static` positions; `bincount` is an accumulating
  `index_put` into zeros; `unique(sorted=True)` the first element of each run
  of the sorted input (with counts and inverse), `unique(dim=d)` that of its
  slices in lexicographic order, `unique_consecutive` that of
  the input as it is (or of its slices along `dim`); `repeat_interleave(repeats)`
  the count of running sums at or below each position. Its result is checked: the input must give that
  size again (`mask.sum()`, `max(x) + 1` against `minlength`);
- a pointwise update through a mask (`y[mask] += 1`) is a `where` over the
  whole tensor, for every mask (`rducc.frontend.masked_updates`);
- a size read with `.item()` becomes the example's number in every size
  argument it reaches (after the arithmetic torch recorded on it), and each op
  taking it checks that the tensor read holds that number again (a slice whose
  bounds are read so, as `tensor_split` by a tensor of indices is traced, too, where
  `rducc.frontend.capacity` does not pad it;
  a size computed from a float read, `torch.sym_int(x.max().item() * 3)`, is
  checked as that number itself, and as a value it is computed for every input);
  a slice of static length at a start so read (`x.narrow(0, i.item(), 2)`) is
  no size at all: it gathers the rows at the start computed for every input.

A different value at run time is one `RduccError` naming the torch op and its
source line, never a result of another size. Python numbers that are not
sizes (floats, numbers returned by the model) are `rducc.frontend.python_numbers`'.
"""

from __future__ import annotations

import operator
from typing import Any

import sympy
import torch
from torch.export import ExportedProgram
from torch.export.graph_signature import InputKind
from torch.fx.experimental.symbolic_shapes import free_unbacked_symbols
from xdsl.dialects.builtin import TensorType

from rducc.dialects.rdu.checks import CheckOp
from rducc.errors import RduccError
from rducc.frontend.capacity import pad_counts, padded_stand_ins, plan_capacity, repeat_positions
from rducc.frontend.converter_api import GraphImporter, converts, fake_value, positional
from rducc.frontend.fx_emit import emit_node
from rducc.frontend.locations import describe_location, source_line
from rducc.frontend.masked_updates import whole_tensor_mask_updates
from rducc.frontend.types import tensor_type_of

aten = torch.ops.aten
Node = torch.fx.Node


@torch.library.custom_op("rducc::check", mutates_args=())
def check(value: torch.Tensor, condition: torch.Tensor, message: str) -> torch.Tensor:
    """`value`, once every element of `condition` holds (the graph form of `rdu.check`)."""
    if not bool(condition.all()):
        raise RuntimeError(message)
    return value.clone()


@check.register_fake
def _check_fake(value: torch.Tensor, condition: torch.Tensor, message: str) -> torch.Tensor:
    return torch.empty_like(value)


CHECK = torch.ops.rducc.check.default
_READS = (aten._local_scalar_dense.default, aten.item.default)
_ASSERTS = ("aten._assert_scalar.default", "aten.sym_constrain_range_for_size.default",
            "aten.sym_constrain_range.default", "aten._assert_async.msg")
_MASKS = (torch.bool, torch.uint8)


@converts("rducc.check.default")
def convert_check(g: GraphImporter, node: Node) -> Any:
    value, condition, message = positional(node)[:3]
    result_type = tensor_type_of(fake_value(node))
    assert isinstance(result_type, TensorType)
    return g.emit(CheckOp(g.value(value), g.value(condition), str(message), result_type))


# --------------------------------------------------------------------------
# Which programs, and the example's values
# --------------------------------------------------------------------------


def _unbacked(value: Any) -> bool:
    try:
        return bool(free_unbacked_symbols(value))
    except Exception:  # noqa: BLE001 - values torch's walker does not know hold no symbol
        return False


def _mask_index(node: Node) -> int | None:
    """The position of the boolean mask among an `index`/`index_put` node's indices, if any."""
    if node.op != "call_function" or node.target not in (aten.index.Tensor, aten.index_put.default):
        return None
    for position, index in enumerate(node.args[1]):  # type: ignore[arg-type]
        if isinstance(index, Node) and index.meta["val"].dtype in _MASKS:
            return position
    return None


def _per_element_mask_put(node: Node) -> bool:
    """An `index_put` through a mask whose values are one per masked element
    (a scalar or one slice for all is a select the importer takes as it is)."""
    if node.target is not aten.index_put.default or _mask_index(node) is None:
        return False
    from rducc.frontend.aten_scatter import _check_index_put

    return _check_index_put(node) is not None


def has_data_sizes(ep: ExportedProgram) -> bool:
    """Whether the program has a size the data decides (or a per-element mask put)."""
    return any(_unbacked(n.meta.get("val")) or _per_element_mask_put(n) for n in ep.graph.nodes)


def _placeholder_values(ep: ExportedProgram) -> list[Any] | None:
    """The graph's inputs in placeholder order: weights from the program, user inputs
    from its example; None when the program carries no example."""
    if ep.example_inputs is None:
        return None
    args, kwargs = ep.example_inputs
    users = iter(torch.utils._pytree.tree_leaves((args, kwargs)))
    values: list[Any] = []
    for spec in ep.graph_signature.input_specs:
        if spec.kind == InputKind.USER_INPUT:
            value = next(users)
            values.append(value.clone() if isinstance(value, torch.Tensor) else value)
        elif spec.kind in (InputKind.PARAMETER, InputKind.BUFFER, InputKind.CONSTANT_TENSOR):
            target = str(spec.target)
            values.append(ep.state_dict[target] if target in ep.state_dict else ep.constants[target])
        else:
            return None
    return values


def _example_values(ep: ExportedProgram) -> dict[Node, Any] | None:
    """Every node's value on the example inputs (None without an example, or when
    torch fails on it: the importer then refuses the sizes as before)."""
    inputs = _placeholder_values(ep)
    if inputs is None:
        return None
    values: dict[Node, Any] = {}

    class Recorder(torch.fx.Interpreter):
        def run_node(self, n: Node) -> Any:
            if n.target is aten._assert_scalar.default:  # torch's bounds (masked_select's is the input's
                return None  # numel, not the broadcast's): rducc checks the sizes it compiles itself
            values[n] = result = super().run_node(n)
            return result

    try:
        with torch.no_grad():
            Recorder(ep.graph_module).run(*inputs)
    except Exception:  # noqa: BLE001 - an example eager refuses: no values to compile for
        return None
    return values


def _bindings(graph: torch.fx.Graph, values: dict[Node, Any]) -> dict[sympy.Symbol, int]:
    """Each unbacked symbol's value on the example, read where torch bound it."""
    bound: dict[sympy.Symbol, int] = {}
    for node in graph.nodes:
        for symbol, path in (node.meta.get("unbacked_bindings") or {}).items():
            value = torch.utils._pytree.key_get(values[node], path)
            bound[symbol] = int(value)
    return bound


# --------------------------------------------------------------------------
# Rewriting the graph
# --------------------------------------------------------------------------


class _Rewriter:
    """Emits nodes before an anchor, their values computed on fakes of static shape."""

    def __init__(self, ep: ExportedProgram, values: dict[Node, Any], bound: dict[sympy.Symbol, int]) -> None:
        self.graph, self.values, self.bound = ep.graph, values, bound
        self.mode = next(n.meta["val"].fake_mode for n in ep.graph.nodes
                         if isinstance(n.meta.get("val"), torch.Tensor) and hasattr(n.meta["val"], "fake_mode"))

    def static(self, value: Any, real: Any) -> Any:
        """A fake of `real`'s static shape for a tensor; the number itself for a size."""
        if isinstance(value, torch.Tensor) and isinstance(real, torch.Tensor):
            with self.mode:
                return torch.empty_strided(tuple(real.shape), tuple(real.stride()), dtype=value.dtype,
                                           device=value.device)
        if isinstance(value, list | tuple) and isinstance(real, list | tuple):
            return type(value)(self.static(v, r) for v, r in zip(value, real))
        if isinstance(value, torch.SymInt | torch.SymBool) and _unbacked(value):
            return real
        return value

    def emit(self, anchor: Node, target: Any, *args: Any, **kwargs: Any) -> Node:
        return emit_node(self.graph, self.mode, anchor, target, *args, **kwargs)

    def _message(self, anchor: Node, why: str) -> str:
        name = getattr(anchor.target, "__name__", str(anchor.target)).split(".")[0]
        return f"'{name}': {why} (rducc compiled the program for the example's value)"

    def guard(self, anchor: Node, value: Node, condition: Node, why: str) -> Node:
        """`value` checked by `condition` at run time, the message naming `anchor`'s op and line."""
        checked = self.emit(value.next, CHECK, value, condition, self._message(anchor, why))
        value.replace_all_uses_with(checked, delete_user_cb=lambda user: user is not checked)
        return checked

    def checked_input(self, anchor: Node, value: Node, condition: Node, why: str) -> Node:
        """`value` checked by `condition` before `anchor` reads it (`anchor`'s other uses unchanged)."""
        return self.emit(anchor, CHECK, value, condition, self._message(anchor, why))

    def all_of(self, anchor: Node, conditions: list[Node]) -> Node:
        condition = conditions[0]
        for other in conditions[1:]:
            condition = self.emit(anchor, aten.logical_and.default, condition, other)
        return condition

    def count_equals(self, anchor: Node, mask: Node, count: int) -> Node:
        """`mask.sum() == count` (the number of true elements)."""
        if mask.meta["val"].dtype != torch.bool:
            mask = self.emit(anchor, aten.ne.Scalar, mask, 0)
        total = self.emit(anchor, aten.sum.default, mask)
        return self.emit(anchor, aten.eq.Scalar, total, count)

    def positions(self, anchor: Node, mask: Node, count: int) -> list[Node]:
        """The mask's true positions, one i64 index vector per mask dim, `count` long."""
        found = self.emit(anchor, aten.nonzero_static.default, mask, size=count)
        return [self.emit(anchor, aten.select.int, found, 1, d) for d in range(mask.meta["val"].dim())]


def _nonzero(r: _Rewriter, node: Node) -> None:
    count = int(r.values[node].shape[0])
    source = node.args[0]
    assert isinstance(source, Node)
    source = r.checked_input(node, source, r.count_equals(node, source, count),
                             f"the input has another number of nonzero elements than the {count} compiled for")
    found = r.emit(node, aten.nonzero_static.default, source, size=count)
    node.replace_all_uses_with(found)
    r.graph.erase_node(node)


def _mask_indexing(r: _Rewriter, node: Node) -> None:
    """`x[mask]` and `index_put` through a mask: the mask's `count` positions instead."""
    at = _mask_index(node)
    assert at is not None
    indices = list(node.args[1])  # type: ignore[arg-type]
    mask = indices[at]
    assert isinstance(mask, Node)
    count = int(r.values[mask].count_nonzero())
    mask = r.checked_input(node, mask, r.count_equals(node, mask, count),
                           f"the mask selects another number of elements than the {count} compiled for")
    replaced = r.emit(node, node.target, node.args[0], [*indices[:at], *r.positions(node, mask, count),
                                                        *indices[at + 1:]], *node.args[2:], **node.kwargs)
    node.replace_all_uses_with(replaced)
    r.graph.erase_node(node)


def _bincount(r: _Rewriter, node: Node) -> None:
    """`bincount` as an accumulating `index_put` into `length` zeros, checked to have that length."""
    args: dict[str, Any] = dict(zip(("self", "weights", "minlength"), node.args)) | dict(node.kwargs)
    source, weights, minlength = args["self"], args.get("weights"), int(args.get("minlength") or 0)
    assert isinstance(source, Node)
    length, dtype = int(r.values[node].shape[0]), r.values[node].dtype
    if source.meta["val"].numel():  # (an empty input's length is minlength, known from the shapes)
        top = r.emit(node, aten.add.Tensor, r.emit(node, aten.amax.default, source), 1)
        size = r.emit(node, aten.clamp_min.default, top, minlength)
        conditions = [r.emit(node, aten.eq.Scalar, size, length),
                      r.emit(node, aten.ge.Scalar, r.emit(node, aten.amin.default, source), 0)]
        source = r.checked_input(node, source, r.all_of(node, conditions),
                                 f"the input gives another length than the {length} compiled for (or a negative value)")
    zeros = r.emit(node, aten.zeros.default, [length], dtype=dtype)
    if isinstance(weights, Node):
        added = r.emit(node, aten._to_copy.default, weights, dtype=dtype)
    else:
        added = r.emit(node, aten.ones.default, list(source.meta["val"].shape), dtype=dtype)
    counted = r.emit(node, aten.index_put.default, zeros, [source], added, True)
    node.replace_all_uses_with(counted)
    r.graph.erase_node(node)


def _masked_select(r: _Rewriter, node: Node) -> None:
    """`masked_select`: the broadcast input at the broadcast mask's `count` positions."""
    source, mask = node.args[:2]
    assert isinstance(source, Node) and isinstance(mask, Node)
    shape = list(torch.broadcast_shapes(source.meta["val"].shape, mask.meta["val"].shape))
    source, mask = (r.emit(node, aten.expand.default, v, shape) for v in (source, mask))
    count = int(r.values[node].shape[0])
    mask = r.checked_input(node, mask, r.count_equals(node, mask, count),
                           f"the mask selects another number of elements than the {count} compiled for")
    selected = r.emit(node, aten.index.Tensor, source, r.positions(node, mask, count))
    node.replace_all_uses_with(selected)
    r.graph.erase_node(node)


def _parts_replace(r: _Rewriter, node: Node, parts: list[Node]) -> None:
    """Replace a tuple-valued `node`'s `getitem` users by `parts`, then `node` itself."""
    for user in list(node.users):
        assert user.target is operator.getitem
        user.replace_all_uses_with(parts[user.args[1]])  # type: ignore[index]
        r.graph.erase_node(user)
    r.graph.erase_node(node)


def _schema_arguments(node: Node) -> dict[str, Any]:
    """`node`'s arguments by their schema's names, defaults filled in (positional or keyword alike)."""
    arguments = node.target._schema.arguments  # type: ignore[union-attr]
    named = {a.name: a.default_value for a in arguments if a.has_default_value()}
    return named | dict(zip((a.name for a in arguments), node.args)) | dict(node.kwargs)


def _unique(r: _Rewriter, node: Node) -> None:
    """`unique(sorted=True)` (`_unique2`, and `torch._unique`'s `_unique`, which has no counts):
    the sorted input's first elements of each run, `count` of them (the example's number of
    distinct values, checked), their counts and the inverse.
    `sorted=False` leaves the order to torch's kernel; its CPU kernel sorts anyway (faster
    than a hash table, Unique.cpp says), so it compiles alike where the example's eager
    result is in ascending order, and is refused where it is not."""
    args = _schema_arguments(node)
    source, ordered = args["self"], bool(args["sorted"])
    assert isinstance(source, Node)
    example = r.values[node][0]
    if not ordered and not bool((example[1:] >= example[:-1]).all()):
        raise RduccError(f"{describe_location(node)}: unique(sorted=False) has no static form in rducc "
                         "(its order is torch's implementation's); use sorted=True")
    count, total = int(r.values[node][0].shape[0]), int(source.meta["val"].numel())
    flat = r.emit(node, aten.reshape.default, source, [total])
    ordered_pair = r.emit(node, aten.sort.default, flat)
    values, order = (r.emit(node, operator.getitem, ordered_pair, i) for i in (0, 1))
    wants = (bool(args["return_inverse"]), bool(args.get("return_counts", False)))
    _runs(r, node, values, order, count, wants, "distinct values")


def _runs(r: _Rewriter, node: Node, values: Node, order: Node | None, count: int, wants: tuple[bool, bool],
          what: str, dim: int = 0) -> None:
    """Replace `node` (a unique op's (values, inverse, counts)) by the first slice of each run of equal
    neighbouring slices of `values` along `dim` (`count` of them, the example's, checked), the run each
    slice falls in (at its place before `order` sorted it, when given; shaped as the input when the
    input was flattened) and the runs' lengths (`what` the runs are, for the check's message)."""
    source, total = node.args[0], int(values.meta["val"].shape[dim])
    assert isinstance(source, Node)
    head = r.emit(node, aten.ones.default, [min(total, 1)], dtype=torch.bool)
    later = r.emit(node, aten.ne.Tensor, r.emit(node, aten.slice.Tensor, values, dim, 1, total),
                   r.emit(node, aten.slice.Tensor, values, dim, 0, max(total - 1, 0)))
    others = [d for d in range(values.meta["val"].dim()) if d != dim]
    if others:  # a slice differs where any of its elements does
        later = r.emit(node, aten.gt.Scalar, r.emit(node, aten.sum.dim_IntList, later, others), 0)
    first = r.emit(node, aten.cat.default, [head, later])
    first = r.checked_input(node, first, r.count_equals(node, first, count),
                            f"the input holds another number of {what} than the {count} compiled for")
    at = r.positions(node, first, count)[0]
    group = r.emit(node, aten.sub.Tensor, r.emit(node, aten.cumsum.default, first, 0, dtype=torch.int64), 1)
    ones = r.emit(node, aten.ones.default, [total], dtype=torch.int64)
    counts = r.emit(node, aten.index_put.default, r.emit(node, aten.zeros.default, [count], dtype=torch.int64),
                    [group], ones, True)
    inverse = group if order is None else r.emit(
        node, aten.index_put.default, r.emit(node, aten.zeros.default, [total], dtype=torch.int64), [order], group)
    empty = r.emit(node, aten.zeros.default, [0], dtype=torch.int64)
    shape = list(source.meta["val"].shape) if values.meta["val"].dim() == 1 else [total]
    parts = [r.emit(node, aten.index_select.default, values, dim, at),
             r.emit(node, aten.reshape.default, inverse, shape) if wants[0] else empty,
             counts if wants[1] else empty]
    _parts_replace(r, node, parts)


def _unique_consecutive(r: _Rewriter, node: Node) -> None:
    """`unique_consecutive`: the first element (along `dim`, slice) of each run (the example's number
    of runs, checked), the inverse and the counts."""
    args: dict[str, Any] = dict(zip(("self", "return_inverse", "return_counts", "dim"), node.args)) | node.kwargs
    source, dim = args["self"], args.get("dim")
    assert isinstance(source, Node)
    rank = source.meta["val"].dim()
    values = r.emit(node, aten.reshape.default, source, [int(source.meta["val"].numel())]) if dim is None else source
    count = int(r.values[node][0].shape[0 if dim is None else dim])
    wants = (bool(args.get("return_inverse")), bool(args.get("return_counts")))
    _runs(r, node, values, None, count, wants, "runs of equal values", 0 if dim is None else dim % max(rank, 1))


def _unique_dim(r: _Rewriter, node: Node) -> None:
    """`unique(dim=d)`: the slices along `d` in lexicographic order (stable sorts by each of their
    elements, last to first, as torch compares them flattened), then the first of each run of equal
    slices (the example's number of distinct slices, checked), the inverse and the counts."""
    args: dict[str, Any] = dict(zip(("self", "dim", "sorted", "return_inverse", "return_counts"), node.args))
    args |= node.kwargs
    source = args["self"]
    assert isinstance(source, Node)
    shape = list(source.meta["val"].shape)
    dim = int(args["dim"]) % max(len(shape), 1)
    total = int(shape[dim])
    order_dims = [dim, *(d for d in range(len(shape)) if d != dim)]
    keys = r.emit(node, aten.reshape.default, r.emit(node, aten.permute.default, source, order_dims), [total, -1])
    order = r.emit(node, aten.arange.default, total, dtype=torch.int64)
    for column in reversed(range(int(keys.meta["val"].shape[1]))):
        key = r.emit(node, aten.index_select.default, r.emit(node, aten.select.int, keys, 1, column), 0, order)
        ranked = r.emit(node, aten.sort.stable, key, stable=True)
        order = r.emit(node, aten.index_select.default, order, 0, r.emit(node, operator.getitem, ranked, 1))
    values = r.emit(node, aten.index_select.default, source, dim, order)
    count = int(r.values[node][0].shape[dim])
    wants = (bool(args.get("return_inverse")), bool(args.get("return_counts")))
    _runs(r, node, values, order, count, wants, "distinct slices", dim)


def _repeat_interleave(r: _Rewriter, node: Node) -> None:
    """`repeat_interleave(repeats)`: each position i repeated repeats[i] times, `total`
    positions (the example's sum, checked): position j is the number of running sums <= j
    (`capacity.repeat_positions`)."""
    repeats = node.args[0]
    assert isinstance(repeats, Node)
    total = int(r.values[node].shape[0])
    summed = r.emit(node, aten.sum.default, repeats)
    conditions = [r.emit(node, aten.eq.Scalar, summed, total)]
    if repeats.meta["val"].numel():
        conditions.append(r.emit(node, aten.ge.Scalar, r.emit(node, aten.amin.default, repeats), 0))
    repeats = r.checked_input(node, repeats, r.all_of(node, conditions),
                              f"the repeats sum to another length than the {total} compiled for (or one is negative)")
    index = repeat_positions(r, node, repeats, total)
    node.replace_all_uses_with(index)
    r.graph.erase_node(node)


SIZED_OPS = ("aten.bincount.default", "aten.masked_select.default", "aten.nonzero.default",
             "aten._unique.default", "aten._unique2.default", "aten.repeat_interleave.Tensor",
             "aten.unique_consecutive.default", "aten.unique_dim.default")
"""The ops of data-dependent result size this module compiles for the example's size."""

_STATIC_FORMS = {
    aten.masked_select.default: _masked_select,
    aten.nonzero.default: _nonzero,
    aten.bincount.default: _bincount,
    aten._unique.default: _unique,
    aten._unique2.default: _unique,
    aten.repeat_interleave.Tensor: _repeat_interleave,
    aten.unique_consecutive.default: _unique_consecutive,
    aten.unique_dim.default: _unique_dim,
}


def _size_nodes(node: Node, original: dict[Node, Any], read_symbols: set[sympy.Symbol]) -> list[Node]:
    """The integer nodes `node` takes as sizes (sizes, starts, lengths), by their traced values.
    A number computed from `.item()` reads only that the schema takes as a Tensor or a Scalar
    (`x * n`) is a value, not a size: `rducc.frontend.python_numbers` computes it in the program
    for every input. A size of a tensor there (`picked.numel()`) is the example's, as its op is."""
    found: list[Node] = []
    for argument, is_value in _arguments(node):
        nodes: list[Node] = []
        torch.fx.node.map_arg(argument, nodes.append)
        found += [n for n in nodes if isinstance(original.get(n), torch.SymInt)
                  and not (is_value and free_unbacked_symbols(original[n]) <= read_symbols)]
    return found


def _arguments(node: Node) -> list[tuple[Any, bool]]:
    """`node`'s arguments, each with whether its schema takes a value there (not a size)."""
    schema = getattr(node.target, "_schema", None)
    if schema is None:
        return [(node.args, False), (node.kwargs, False)]
    kinds = {a.name: str(a.type) for a in schema.arguments}
    names = [a.name for a in schema.arguments]
    named = [*zip(names, node.args), *node.kwargs.items()]
    return [(value, _is_value_type(kinds.get(name, ""))) for name, value in named]


def _is_value_type(kind: str) -> bool:
    """A schema type that takes a value (a Tensor or a Scalar), not a size."""
    return kind.removesuffix("?") in ("Tensor", "Scalar", "float", "bool", "number")


def _with_numbers(node: Node, numbers: dict[Node, int]) -> None:
    def number(arg: Any) -> Any:
        if isinstance(arg, Node):
            return numbers.get(arg, arg)
        if isinstance(arg, list | tuple):
            return type(arg)(number(a) for a in arg)
        return arg

    node.args = number(node.args)
    node.kwargs = number(node.kwargs)


def _read_sizes(r: _Rewriter, original: dict[Node, Any], padded: set[sympy.Symbol]) -> None:
    """Sizes from `.item()` reads become the example's numbers; each op taking one is checked
    (a padded count, `rducc.frontend.capacity`'s, is checked against its capacity instead)."""
    reads = {original[n].node.expr: n for n in r.graph.nodes
             if n.op == "call_function" and n.target in _READS and isinstance(original.get(n), torch.SymInt)
             and isinstance(original[n].node.expr, sympy.Symbol)}
    float_reads = {original[n].node.expr: n for n in r.graph.nodes  # `torch.sym_int(x.max().item() * 10)`
                   if n.target in _READS and isinstance(original.get(n), torch.SymFloat)}
    binders = _binders(r.graph)
    for node in list(r.graph.nodes):
        if node.op != "call_function" or not isinstance(node.target, torch._ops.OpOverload) \
                or node.target in _READS or str(node.target) in _ASSERTS or node.target is CHECK:
            continue
        if _is_window(node, original):
            _window(r, node)
            continue
        # (a value computed from padded counts reads them at run time: `capacity`'s count_read)
        sizes = [n for n in _size_nodes(node, original, {*reads, *float_reads, *padded}) if _unbacked(original[n])]
        if not sizes:
            continue
        symbols = set().union(*(free_unbacked_symbols(original[n]) for n in sizes))
        _with_numbers(node, {n: int(r.values[n]) for n in sizes})
        conditions, read_values = [], []
        for symbol in sorted(symbols - padded, key=str):
            read = reads.get(symbol)
            if read is None:  # a size of another op's result: that op is checked, once something reads it
                conditions += _reading(r, node, binders.get(symbol))
                continue
            source = read.args[0]
            assert isinstance(source, Node)
            conditions.append(r.emit(node, aten.eq.Scalar, source, r.bound[symbol]))
            read_values.append(f"{source.name}.item() is not {r.bound[symbol]}")  # the example's
        for size in sizes:  # a size computed from a float read: the number itself checked
            floats = [float_reads[s] for s in free_unbacked_symbols(original[size]) if s in float_reads]
            if floats:
                number = r.emit(node, aten.scalar_tensor.default, size, dtype=torch.float64)
                conditions.append(r.emit(node, aten.eq.Scalar, number, int(r.values[size])))
                read_values.append(f"the size computed from {floats[0].args[0].name}.item() "
                                   f"is not {int(r.values[size])}")
        why = _read_size_reason(node, read_values, [int(r.values[n]) for n in sizes])
        if conditions and isinstance(node.meta.get("val"), torch.Tensor):
            r.guard(node, node, r.all_of(node, conditions), why)
        elif conditions:
            for user in [u for u in node.users if u.target is operator.getitem]:
                r.guard(node, user, r.all_of(user, conditions), why)


def _binders(graph: torch.fx.Graph) -> dict[sympy.Symbol, Node]:
    """The tensor whose size each unbacked symbol is (a tuple op's part by its getitem)."""
    found: dict[sympy.Symbol, Node] = {}
    for node in graph.nodes:
        for symbol, path in (node.meta.get("unbacked_bindings") or {}).items():
            if isinstance(node.meta.get("val"), torch.Tensor):
                found[symbol] = node
                continue
            index = getattr(path[0], "idx", None) if path else None
            parts = [u for u in node.users if u.target is operator.getitem and u.args[1] == index]
            if parts:
                found[symbol] = parts[0]
    return found


def _reading(r: _Rewriter, anchor: Node, result: Node | None) -> list[Node]:
    """A condition that always holds but reads `result` (a data-dependent op's tensor whose size `anchor`
    takes as a number): without it, a result read only by its sizes would be dead, and its check with it,
    so the example's size would be used unchecked. Empty when `result` is read otherwise already."""
    if result is None or any(user.target not in _SIZE_READS for user in result.users):
        return []
    same = r.emit(anchor, aten.eq.Tensor, result, result)  # (NaN too: counted as not equal, and >= 0 holds)
    return [r.emit(anchor, aten.ge.Scalar, r.emit(anchor, aten.sum.default, same), 0)]


def _is_window(node: Node, original: dict[Node, Any]) -> bool:
    """A slice whose start is read from the data but whose length is not (`x.narrow(0, i.item(), 2)`)."""
    if node.target is not aten.slice.Tensor or len(node.args) < 3:
        return False
    source, dim, start = node.args[:3]
    step = node.args[4] if len(node.args) > 4 else 1
    value = original.get(node)
    if step != 1 or not isinstance(source, Node) or not isinstance(value, torch.Tensor):
        return False
    assert isinstance(dim, int)
    read = original.get(start) if isinstance(start, Node) else None
    return (_static_int(value.shape[dim]) is not None and _static_int(source.meta["val"].shape[dim]) is not None
            and isinstance(read, torch.SymInt) and _unbacked(read))


def _static_int(size: Any) -> int | None:
    """A size that is a number (an int, or a SymInt whose expression torch simplified to one)."""
    if isinstance(size, int):
        return size
    if isinstance(size, torch.SymInt) and getattr(size.node.expr, "is_number", False):
        return int(size.node.expr)
    return None


def _window(r: _Rewriter, node: Node) -> None:
    """A slice of static length at a start read from the data: the rows at start + arange(length) (a
    negative start counting from the end, as slice's does), computed for every input. torch.export made
    the length static by assuming the window inside the input (eager's `narrow` raises otherwise): a start
    that puts it outside is one error naming the op and its line, never rows clamped into range."""
    source, dim, start = node.args[:3]
    assert isinstance(source, Node) and isinstance(dim, int)
    length, size = _static_int(node.meta["val"].shape[dim]), _static_int(source.meta["val"].shape[dim])
    assert length is not None and size is not None
    first = r.emit(node, aten.scalar_tensor.default, start, dtype=torch.int64)
    wrapped = r.emit(node, aten.where.self, r.emit(node, aten.lt.Scalar, first, 0),
                     r.emit(node, aten.add.Tensor, first, size), first)
    inside = r.all_of(node, [r.emit(node, aten.ge.Scalar, wrapped, 0),
                             r.emit(node, aten.le.Scalar, wrapped, size - length)])
    name = getattr(node.target, "__name__", str(node.target)).split(".")[0]
    wrapped = r.emit(node, CHECK, wrapped, inside, f"'{name}': the start read with .item() puts the window of "
                     f"{length} outside the {size} elements along dim {dim}")
    first = r.emit(node, aten.clamp.default, wrapped, 0, max(size - length, 0))
    index = r.emit(node, aten.add.Tensor, r.emit(node, aten.arange.default, length, dtype=torch.int64), first)
    picked = r.emit(node, aten.index_select.default, source, dim, index)
    node.replace_all_uses_with(picked)
    r.graph.erase_node(node)


def _read_size_reason(node: Node, read_values: list[str], sizes: list[int]) -> str:
    """Why a size read with `.item()` fails at run time: which read, the value it was compiled
    for and the statement as the user wrote it (`narrow` is `slice` once traced)."""
    where = source_line(node)
    written = f" in `{where.code}`" if where is not None and where.code else ""
    return (f"{' or '.join(read_values)}{written}, the value its sizes ({', '.join(map(str, sizes))}) "
            "were compiled for")


def _sized_by_reads(node: Node) -> bool:
    """An op whose result size is fixed by the size arguments it takes, some read from the data
    (`x[:, a:b]` with `a, b = idx.tolist()`, as `tensor_split` by a tensor is traced): `_read_sizes`
    gives it the example's numbers and checks each read."""
    return any(isinstance(arg.meta.get("val"), torch.SymInt) and _unbacked(arg.meta["val"])
               for arg in node.all_input_nodes)


def _refuse_unknown(graph: torch.fx.Graph) -> None:
    """A size made by an op with no static form stays the importer's error."""
    known = (*_STATIC_FORMS, *_READS)
    for node in graph.nodes:
        bindings = node.meta.get("unbacked_bindings") or {}
        makes_size = any(getattr(key, "name", None) == "size" for path in bindings.values() for key in path)
        if makes_size and node.target not in known and _mask_index(node) is None and not _sized_by_reads(node):
            raise RduccError(
                f"{describe_location(node)}: data-dependent shape on '{node.name}' (its size depends on "
                "the tensor's values); rducc compiles such sizes, for the example's values, for bincount, "
                "nonzero, unique, unique_consecutive, repeat_interleave by a tensor, boolean masks, "
                "masked_select and sizes read with .item() (tensor_split by a tensor of indices) only"
            )


_SIZE_READS = (aten.sym_size.int, aten.sym_numel.default)


def _sizes_as_numbers(graph: torch.fx.Graph) -> None:
    """A size of a data-dependent result (`picked.numel()`, returned or computed with) is now the
    example's number: its uses read that number, which the check on the result makes true at run time
    (only where the result is read by more than its sizes: otherwise nothing would run its check)."""
    for node in list(graph.nodes):
        value, source = node.meta.get("val"), node.args[0] if node.args else None
        if node.target not in _SIZE_READS or not isinstance(value, int) or not isinstance(source, Node):
            continue
        if all(user.target in _SIZE_READS for user in source.users):
            continue
        _read_as(node, value)
        graph.erase_node(node)


def _read_as(node: Node, number: int) -> None:
    """Every use of `node` reads `number` instead."""
    def swap(arg: Node) -> Any:
        return number if arg is node else arg

    for user in list(node.users):
        user.args = torch.fx.node.map_arg(user.args, swap)
        user.kwargs = torch.fx.node.map_arg(user.kwargs, swap)


def specialize_data_sizes(ep: ExportedProgram, capacity_bound: int | None = None) -> None:
    """Rewrite (in place) the program's data-dependent sizes as the example's, checked (module docstring);
    per-expert counts padded to their capacity (at most `capacity_bound` when given) where
    `rducc.frontend.capacity` can. Without example inputs nothing changes (the importer then
    refuses the sizes)."""
    graph = ep.graph
    whole_tensor_mask_updates(ep)  # `y[mask] += 1`: no data-dependent size at all
    _refuse_unknown(graph)
    values = _example_values(ep)
    if values is None:
        return
    bound = _bindings(graph, values)
    r = _Rewriter(ep, values, bound)
    original = {n: n.meta.get("val") for n in graph.nodes}
    capacity = plan_capacity(graph, original, capacity_bound)
    stand_ins = padded_stand_ins(original, values, capacity)
    for node in graph.nodes:
        if node in values:
            node.meta["val"] = r.static(node.meta.get("val"), stand_ins.get(node, values[node]))
    pad_counts(r, original, capacity)
    _read_sizes(r, original, set(capacity).union(*(c.free_symbols for c in capacity)))  # (`u0` of `u0 - 1`)
    for node in list(graph.nodes):
        if node.op != "call_function":
            continue
        if node.target in _STATIC_FORMS:
            _STATIC_FORMS[node.target](r, node)
        elif _mask_index(node) is not None and (node.target is aten.index.Tensor or _per_element_mask_put(node)):
            _mask_indexing(r, node)
    for node in list(graph.nodes):
        if str(node.target) in _ASSERTS:
            graph.erase_node(node)
    _sizes_as_numbers(graph)
    graph.eliminate_dead_code()
    graph.lint()
    ep.graph_module.recompile()


__all__ = ["CHECK", "SIZED_OPS", "has_data_sizes", "specialize_data_sizes"]
