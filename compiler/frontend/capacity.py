"""Per-expert capacity: data-dependent counts compiled padded to a bound and
masked, so a program runs for any counts that fit (mixture-of-experts routing).

Token routing splits tokens by per-expert counts the data decides:
`torch.where(choice == e)` (a `nonzero`), `x[choice == e]` (a boolean
mask; `h[attention_mask.bool()]` one of two dims), `x.masked_select(mask)`,
`rows.repeat_interleave(counts, dim=0)`, `tokens.split(counts.tolist())` (a `split_with_sizes` of sizes read
with `.item()`); a slice whose bounds are computed from `.item()` reads (`x[:n]`, `x[1:n]`, `x[a:b]`,
`narrow(x, 0, 1, n)`), `torch.topk(x, k.item())` and a split whose sizes are so computed (`[n, 6 - n]`)
make such counts too: any size that is an affine function of one such count (`u0 - 1`), or one clamped
by `Min`/`Max` as slicing clamps (`Min(6, u0)`), is a count of its own. torch.export records each
count as an unbacked symbol with the bound it proved (`u0 <= tokens`: every
token to one expert; `repeat_interleave`'s total has none unless the model
bounds it with `torch._check`). Where every op that touches such a count is one this
module understands, rducc compiles the count as its *capacity* (that bound, or
the user's smaller `capacity`; the user's alone where none is recorded) instead of the example's value:

- the op making the count pads its result to capacity: `nonzero` is
  `nonzero_static(size=capacity, fill_value=0)` (pad positions index element 0),
  so are a boolean mask's `x[mask]` (and an `index_put` through the same mask,
  of any number of dims: its positions' first vector sends the pad past, the
  others hold 0 there) and `masked_select` (the broadcast mask's positions);
  `repeat_interleave(repeats)`'s position j is the number of running sums at or
  below j, the pad (past the total) clamped to the last index,
  a split's piece `i` is the rows `offset_i + arange(capacity)` (clamped into
  range); a slice is capacity rows from its start (a static slice, or gathered at a start read at run
  time, clamped into range), `topk` the
  capacity largest (their first k are eager's, in order), their count computed from the read
  tensor (the end as Python's slicing takes it) and checked between torch's recorded bounds;
  the count itself is a tensor of the program (`mask.sum()`, the tensor
  read with `.item()`), checked against the capacity at run time (an overflow
  is one `rdu.check` error naming the op and its source line);
- ops that keep the padded dim as a whole dim and do not combine along it
  (pointwise, row-wise matmuls, gathers through padded indices, views) compute
  the pad rows like any row (replicas of real rows: finite where those are);
- the ops where a padded dim ends are masked: a scatter or `index_put`
  through padded indices writes its pad positions into one extra row that is
  sliced off (an `index_put` through several index vectors of one count, as
  `out[w[:, 0], w[:, 1]]` of an argwhere: the first sends the pad past, the
  others send it to 0), `sum` over a padded dim adds zeros for the pad, `mean` divides
  that sum by the real count, `any` sees the pad as false, `softmax` and
  `log_softmax` along a padded dim give the pad no weight (its logits the
  lowest finite value), `amax`/`amin` see the pad as -inf/+inf (a count of 0,
  which eager refuses, is a run-time error), a matmul contracting a padded dim (attention's weights times
  its values, keys padded along the sequence) zeroes the pad rows of its
  operand, and `cat` of padded pieces compacts them to the concatenation's
  size on the example (its total checked at run time: a split's pieces
  always sum to their input).

The conditions torch.export recorded on a padded count or a read it is computed from
(`_assert_scalar`: a `torch._check(n % 2 == 0)`, or what an op assumed, as narrow's `n <= 5`) no longer
hold by the example alone: each is checked at run time, one error naming the condition as Python
writes it (`n.item() % 2 == 0`) and the line that read the count (checked on the read itself, before any
op uses it, where the condition is on that read alone; else on the program's first output), once where
torch recorded it twice in two forms (`n >= 1`, `0 < n`). A condition on selections' counts that holds from 0
to torch's recorded bound is that bound restated (`u0 <= 5` for a mask of 5), the capacity's: not checked
again (torch's bound is short for `masked_select` of an input broadcast against a larger mask). A condition
rducc cannot compute (one not from reads and sizes of padded results) keeps the exact path. A user's
capacity below the least count torch.export recorded (`torch._check(n >= 4)`, `capacity=2`) is one
compile error: no input could run.

A size of a padded result used as a number (`w.shape[0]` or `rows.numel()`
returned, in Python arithmetic, or taken by an op as a Scalar or Tensor value)
is the count read at run time (`_local_scalar_dense` of the count tensor, times
the result's other static dims); where an op takes it as a size it is the
capacity. A count used any other way (reduced otherwise, in arithmetic on
sizes) keeps `rducc.frontend.data_sizes`' exact compile for the example's
value, so nothing that compiled before changes meaning.
"""

from __future__ import annotations

import math
import operator
from dataclasses import dataclass, field
from typing import Any, Protocol

import sympy
import torch
from sympy.printing.str import StrPrinter
from torch.utils._sympy.value_ranges import ValueRanges, bound_sympy

from rducc.errors import RduccError
from rducc.frontend.fx_emit import LOCATION_KEYS
from rducc.frontend.locations import describe_location

aten = torch.ops.aten
Node = torch.fx.Node

_READS = (aten._local_scalar_dense.default, aten.item.default)
_SCATTERS = (aten.scatter.src, aten.scatter.value, aten.scatter_add.default, aten.scatter_reduce.two)
_SCALAR_NODES = (aten.sym_size.int, aten._assert_scalar.default, aten.sym_constrain_range_for_size.default,
                 aten.sym_constrain_range.default, aten._assert_tensor_metadata.default, *_READS,
                 aten.sym_storage_offset.default)  # (torch's record of a slice's offset, for its asserts)


class Emitter(Protocol):
    """What this module needs of `rducc.frontend.data_sizes`' graph rewriter."""

    graph: torch.fx.Graph

    def emit(self, anchor: Node, target: Any, *args: Any, **kwargs: Any) -> Node: ...

    def all_of(self, anchor: Node, conditions: list[Node]) -> Node: ...


def repeat_positions(r: Emitter, anchor: Node, repeats: Node, length: int) -> Node:
    """The first `length` positions of `repeat_interleave(repeats)`: position j is the
    number of running sums of `repeats` at or below j. Counted in time and memory
    linear in `length` and the repeats, not as a [length, repeats] comparison: each
    running sum marks its position (one accumulating `index_put`, the sums at or past
    `length` on a spare last slot), and the marks' running sum is the index."""
    sums = r.emit(anchor, aten.cumsum.default, repeats, 0, dtype=torch.int64)
    ends = r.emit(anchor, aten.clamp.default, sums, 0, length)
    marks = r.emit(anchor, aten.zeros.default, [length + 1], dtype=torch.int64)
    marks = r.emit(anchor, aten.index_put.default, marks, [ends], r.emit(anchor, aten.ones_like.default, ends), True)
    return r.emit(anchor, aten.cumsum.default, r.emit(anchor, aten.slice.Tensor, marks, 0, 0, length), 0)


# --------------------------------------------------------------------------
# Shapes read from the traced (symbolic) values
# --------------------------------------------------------------------------


def _exprs(value: Any) -> list[Any]:
    """A tensor's dims as sympy expressions (a static dim as its int)."""
    return [d.node.expr if isinstance(d, torch.SymInt) else int(d) for d in value.shape]


def _tensors(value: Any) -> list[torch.Tensor]:
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, list | tuple):
        return [t for v in value for t in _tensors(v)]
    return []


def _free(expr: Any) -> set[sympy.Symbol]:
    return set(expr.free_symbols) if isinstance(expr, sympy.Basic) else set()


def _is_count(expr: Any, capacity: dict[sympy.Expr, int]) -> bool:
    """Whether a dim's expression is one padded count (a key of `capacity`)."""
    return isinstance(expr, sympy.Expr) and not expr.is_number and expr in capacity


def _affine(expr: Any) -> bool:
    """Whether `expr` is a count of one unbacked symbol rducc can pad: an affine function `a * u + b`
    (integers), or one clamped by `Min`/`Max` with numbers as Python's slicing clamps (`x[1:n.item()]`
    is `u0 - 1` rows once `n` is checked, `Min(6, u0)` without a bound)."""
    return isinstance(expr, sympy.Expr) and len(expr.free_symbols) == 1 and _piecewise_linear(expr)


def _piecewise_linear(expr: Any) -> bool:
    if expr.is_Integer or expr.is_Symbol:
        return True
    if isinstance(expr, sympy.Add) or type(expr).__name__ in ("Min", "Max"):  # (torch's own Min/Max too)
        return all(_piecewise_linear(a) for a in expr.args)
    if isinstance(expr, sympy.Mul):
        others = [a for a in expr.args if not a.is_Integer]
        return len(others) == 1 and _piecewise_linear(others[0])
    return False


@dataclass
class _Shapes:
    """Which dims of the traced values are padded counts, for one candidate set."""

    original: dict[Node, Any]
    capacity: dict[sympy.Expr, int]
    compacted: set[Any] = field(default_factory=set)
    masks: dict[Node, sympy.Expr] = field(default_factory=dict)
    """The padded boolean masks (`x[mask]`), by the mask node: their count."""

    fed: dict[sympy.Symbol, set[sympy.Expr]] = field(default_factory=dict)
    """The padded counts computed from each number read with `.item()` (`x[a.item():b.item()]`: `a`'s and
    `b`'s symbols, each to the slice's count): such a read is no longer the example's value."""

    selected: set[sympy.Expr] = field(default_factory=set)
    """The padded counts a selection makes (`nonzero`, `masked_select`, `repeat_interleave`, `x[mask]`):
    never negative, and checked against the capacity by their padding."""

    def __post_init__(self) -> None:
        for node, value in self.original.items():
            found = _mask_source(node, self.original) if isinstance(value, torch.Tensor) else None
            if found is not None:
                expr = _exprs(value)[found[0]]
                if isinstance(expr, sympy.Symbol) and expr in self.capacity:
                    self.masks[found[1]] = expr
                    self.selected.add(expr)
            if node.target in _SELECTIONS and isinstance(value, torch.Tensor) and _exprs(value)[0] in self.capacity:
                self.selected.add(_exprs(value)[0])
            for number, count in _counts_read(node, self.original):
                if count in self.capacity:
                    for symbol in _read_symbols(number, self.original):
                        self.fed.setdefault(symbol, set()).add(count)

    def conditioned(self, expr: Any) -> set[sympy.Expr]:
        """The padded counts a condition on `expr` is about: those whose symbols it involves, and those
        computed from the reads it involves."""
        return self.keys_of(expr).union(*(self.fed.get(s, set()) for s in _free(expr)))

    def padded(self, node: Any) -> dict[int, sympy.Expr]:
        """`node`'s dims that are exactly one padded count (a tensor node; else none)."""
        value = self.original.get(node) if isinstance(node, Node) else None
        if not isinstance(value, torch.Tensor):
            return {}
        return {d: e for d, e in enumerate(_exprs(value)) if _is_count(e, self.capacity)}

    def exact(self, value: Any) -> set[sympy.Expr]:
        return {e for t in _tensors(value) for e in _exprs(t) if _is_count(e, self.capacity)}

    def keys_of(self, expr: Any) -> set[sympy.Expr]:
        """The padded counts whose symbols `expr` involves."""
        symbols = _free(expr)
        return {k for k in self.capacity if _free(k) & symbols} if symbols else set()

    def mixed(self, value: Any) -> set[sympy.Expr]:
        """Padded counts inside dims of another expression (not compacted by a cat)."""
        found: set[sympy.Expr] = set()
        for t in _tensors(value):
            for e in _exprs(t):
                if not _is_count(e, self.capacity) and e not in self.compacted:
                    found |= self.keys_of(e)
        return found


def _arg_nodes(node: Node) -> list[Node]:
    found: list[Node] = []
    torch.fx.node.map_arg((node.args, node.kwargs), found.append)
    return found


_PLACING = (aten.unsqueeze.default, aten.squeeze.dim, aten.squeeze.dims, aten.select.int, aten.transpose.int,
            aten.permute.default, aten.movedim.int, aten.unflatten.int)
"""Ops whose `dim` places or picks a dim rather than working along it (dropping a
padded dim, as `select` or `squeeze` would, drops its count from the result: refused so)."""


def _dim_arguments(node: Node) -> list[int]:
    """The dims an op works along (its `dim`/`dims` arguments)."""
    target = node.target
    if not isinstance(target, torch._ops.OpOverload) or target in _PLACING:
        return []
    dims: list[int] = []
    for argument, value in zip(target._schema.arguments, node.args):
        if argument.name in ("dim", "dims", "dimension"):
            dims += [int(v) for v in (value if isinstance(value, list | tuple) else [value])
                     if isinstance(v, int)]
    for name in ("dim", "dims"):
        value = node.kwargs.get(name)
        dims += [int(v) for v in (value if isinstance(value, list | tuple) else [value]) if isinstance(v, int)]
    return dims


# --------------------------------------------------------------------------
# Which counts are padded
# --------------------------------------------------------------------------


def _split_sizes(node: Node, original: dict[Node, Any]) -> list[Any] | None:
    """A split's sizes, each an int or the affine count (`_affine`) of a number computed from
    `.item()` reads (`_read_number`); None for any other split, or one of static sizes only."""
    if node.target is not aten.split_with_sizes.default or not isinstance(node.args[1], list | tuple):
        return None
    sizes: list[Any] = []
    for size in node.args[1]:
        value = original.get(size) if isinstance(size, Node) else size
        if isinstance(value, int):
            sizes.append(value)
        elif isinstance(value, torch.SymInt) and _read_number(size) and _affine(value.node.expr):
            sizes.append(value.node.expr)
        else:
            return None
    return sizes if any(not isinstance(size, int) for size in sizes) else None


def _split_counts(node: Node, original: dict[Node, Any]) -> list[sympy.Expr] | None:
    """A split's counts (its sizes that are not static: `_split_sizes`), of a static length or of the
    length its sizes sum to (the same counts splitting again: JetMoE's two expert linears); None otherwise."""
    sizes = _split_sizes(node, original)
    if sizes is None:
        return None
    dim = node.args[2] if len(node.args) > 2 else node.kwargs.get("dim", 0)
    source = original.get(node.args[0])  # type: ignore[arg-type]
    if not isinstance(source, torch.Tensor) or not isinstance(dim, int):
        return None
    counts = [size for size in sizes if not isinstance(size, int)]
    length = source.shape[dim]
    if isinstance(length, torch.SymInt) and sympy.expand(length.node.expr - sum(sizes)) == 0:
        return counts  # split again by the counts that made it (a cat of the first split's pieces, compacted)
    return counts if isinstance(length, int) else None


def _read_number(node: Any) -> bool:
    """A Python integer computed only from `.item()` reads and constants by Python's operators
    (`n.item()`, `1 + n.item()`, `6 - n.item()`): a number the program computes from its inputs."""
    if not isinstance(node, Node):
        return isinstance(node, int)
    if node.target in _READS:
        return isinstance(node.meta.get("val"), torch.SymInt | int) and isinstance(node.args[0], Node)
    if node.op != "call_function" or isinstance(node.target, torch._ops.OpOverload) or node.target is operator.getitem:
        return False
    return all(_read_number(a) for a in (*node.args, *node.kwargs.values()))


def _read_tensor(size: Any) -> Node | None:
    """The 0-d tensor a size was read from with `.item()` (None for any other size)."""
    if isinstance(size, Node) and size.target in _READS and isinstance(size.args[0], Node):
        return size.args[0]
    return None


def _static_bound(bound: Any, length: int, default: int) -> int | None:
    """A slice's static start or end as Python's slicing takes it (negative from the end, clamped into
    the input); None for a bound the data decides."""
    if bound is None:
        return default
    return min(max(bound + length if bound < 0 else bound, 0), length) if isinstance(bound, int) else None


def _slice_bounds(node: Node, original: dict[Node, Any]) -> tuple[Any, Any] | None:
    """A slice's (start, end), step 1, when one or both are numbers computed from `.item()` reads
    (`_read_number`) and the other static; None otherwise."""
    if node.target is not aten.slice.Tensor or len(node.args) < 3:
        return None
    start = node.args[2]
    end = node.args[3] if len(node.args) > 3 else None
    step = node.args[4] if len(node.args) > 4 else 1
    bounds = [b for b in (start, end) if b is not None]
    if step != 1 or not all(_read_number(b) for b in bounds) or not any(isinstance(b, Node) for b in bounds):
        return None
    return start, end


def _read_bounded(node: Node, original: dict[Node, Any]) -> tuple[int, sympy.Expr, int] | None:
    """A slice or topk whose result size along one dim is an affine count (`_affine`) of numbers read
    with `.item()`: `x[a:b]` (step 1, either bound or both computed from reads: `x[1:n]`, `narrow(x, 0,
    1, n)`) or a sorted `topk(x, k)`. Returns (the dim, the count, the most it can be: the rows from a
    static start to the end of the input, or all of them)."""
    value = original.get(node)
    source = node.args[0] if node.args else None
    if not isinstance(source, Node) or not isinstance(original.get(source), torch.Tensor):
        return None
    if _slice_bounds(node, original) is not None and isinstance(value, torch.Tensor):
        dim, (start, _) = node.args[1], _slice_bounds(node, original)  # type: ignore[misc]
        length = original[source].shape[dim] if isinstance(dim, int) else None
        first = _static_bound(start, length, 0) if isinstance(length, int) else None
        limit = length - (first or 0) if isinstance(length, int) else None
    elif node.target is aten.topk.default and isinstance(value, tuple) and isinstance(node.args[1], Node) \
            and _read_number(node.args[1]) \
            and (node.args[4] if len(node.args) > 4 else node.kwargs.get("sorted", True)):  # (unsorted: any k)
        dim = node.args[2] if len(node.args) > 2 else node.kwargs.get("dim", -1)
        limit = original[source].shape[dim] if isinstance(dim, int) else None
        value = value[0]
    else:
        return None
    if not isinstance(dim, int) or not isinstance(limit, int) or limit < 1:
        return None
    count = _exprs(value)[dim]
    return (dim % value.dim(), count, limit) if _affine(count) else None


def _mask_source(node: Node, original: dict[Node, Any]) -> tuple[int, Node] | None:
    """`x[mask]` through one boolean mask (other indices None; a mask of k dims covers
    k dims of `x`, which become one): (its place, the mask)."""
    if node.target is not aten.index.Tensor:
        return None
    indices = node.args[1]
    present = [(p, i) for p, i in enumerate(indices) if i is not None]  # type: ignore[arg-type]
    if len(present) != 1 or not isinstance(present[0][1], Node):
        return None
    mask = original.get(present[0][1])
    if not isinstance(mask, torch.Tensor) or mask.dtype not in (torch.bool, torch.uint8) or mask.dim() < 1:
        return None
    return present[0][0], present[0][1]


def _mask_puts(node: Node, original: dict[Node, Any], masks: dict[Node, sympy.Expr]) -> sympy.Expr | None:
    """The padded count of the mask an index_put writes through (a mask some `x[mask]` padded)."""
    if node.target is not aten.index_put.default:
        return None
    found = [masks[i] for i in node.args[1] if isinstance(i, Node) and i in masks]  # type: ignore[union-attr]
    return found[0] if len(found) == 1 else None


def _candidates(graph: torch.fx.Graph, original: dict[Node, Any],
                user_capacity: int | None) -> tuple[dict[sympy.Expr, int], dict[sympy.Expr, frozenset]]:
    """Counts made by `nonzero` or read for a split, with their capacities and groups
    (a split's counts are padded together or not at all)."""
    capacity: dict[sympy.Expr, int] = {}
    groups: dict[sympy.Expr, frozenset] = {}
    for node in graph.nodes:
        value = original.get(node)
        if node.target in _SELECTIONS and isinstance(value, torch.Tensor):
            expr = _exprs(value)[0]
            symbols = [expr] if isinstance(expr, sympy.Symbol) else []
        elif _mask_source(node, original) is not None and isinstance(value, torch.Tensor):
            expr = _exprs(value)[_mask_source(node, original)[0]]  # type: ignore[index]
            symbols = [expr] if isinstance(expr, sympy.Symbol) else []
            value = original[_mask_source(node, original)[1]]  # type: ignore[index]
        elif _read_bounded(node, original) is not None:
            _, symbol, limit = _read_bounded(node, original)  # type: ignore[misc]
            symbols = [symbol]
        else:
            symbols = _split_counts(node, original) or []
        if node.target is aten.split_with_sizes.default:
            value = original[node.args[0]]
        bounds = [_recorded_bound(value, s) for s in symbols]
        if node.target is aten.masked_select.default:
            bounds = [_broadcast_count(node, original)] * len(symbols)
        if _read_bounded(node, original) is not None:  # (torch records no bound for an unchecked `.item()`)
            bounds = [min(_recorded_bound(_first_tensor(value), s) or limit, limit) for s in symbols]
        length = _split_length(node, original)
        if length is not None:  # (a piece holds at most the whole input)
            bounds = [min(b or length, length) for b in bounds]
        known = [min(b, user_capacity) if b and user_capacity else b or user_capacity for b in bounds]
        if not symbols or any(k is None for k in known):
            continue  # (no bound recorded, as for `repeat_interleave`'s total, and no capacity given)
        for symbol, bound in zip(symbols, known):
            assert bound is not None
            _refuse_below_lower(node, _recorded_lower(_first_tensor(value), symbol), bound, user_capacity)
            capacity[symbol] = min(bound, capacity.get(symbol, bound))
            groups[symbol] = groups.get(symbol, frozenset()) | frozenset(symbols)
    return capacity, groups


def _split_length(node: Node, original: dict[Node, Any]) -> int | None:
    """A split's static length along its dim (None for another op, or a length the data decides)."""
    if node.target is not aten.split_with_sizes.default:
        return None
    dim = node.args[2] if len(node.args) > 2 else node.kwargs.get("dim", 0)
    length = original[node.args[0]].shape[dim]  # type: ignore[index]
    return length if isinstance(length, int) else None


def _refuse_below_lower(node: Node, lower: int, bound: int, user_capacity: int | None) -> None:
    """A user's capacity below the least a count can be (a `torch._check(n >= 4)` on it): no input could
    run, one compile error."""
    if user_capacity is not None and lower > bound:
        raise RduccError(
            f"{describe_location(node)}: the capacity of {user_capacity} is below the {lower} rows torch.export "
            f"requires of the data-dependent count of '{node.name}' (a torch._check on it): no input could run; "
            f"compile with a capacity of at least {lower}")


def _broadcast_count(node: Node, original: dict[Node, Any]) -> int | None:
    """The elements `masked_select`'s input and mask broadcast to, the most it selects (torch records the
    input's own count, too few where the input broadcasts against a larger mask)."""
    shapes = [original[a].shape for a in node.args[:2]
              if isinstance(a, Node) and isinstance(original.get(a), torch.Tensor)]
    try:
        count = math.prod(int(size) for size in torch.broadcast_shapes(*shapes))
    except (TypeError, RuntimeError):  # a symbolic size: torch's record stands
        return _recorded_bound(original.get(node), _exprs(original.get(node))[0])
    return count if count > 0 else None


def _first_tensor(value: Any) -> Any:
    return value[0] if isinstance(value, tuple) and value else value


def _recorded_lower(value: Any, symbol: sympy.Expr) -> int:
    """The lower bound torch.export proved for `symbol` (a `torch._check(n >= 2)`), at least 0."""
    shape_env = getattr(getattr(value, "fake_mode", None), "shape_env", None)
    lower = shape_env.bound_sympy(symbol).lower if shape_env is not None else 0
    return max(int(lower), 0) if isinstance(lower, sympy.Integer) else 0


def _recorded_bound(value: Any, symbol: sympy.Expr) -> int | None:
    """The upper bound torch.export proved for `symbol` (every token to one expert)."""
    shape_env = getattr(getattr(value, "fake_mode", None), "shape_env", None)
    if shape_env is None:
        return None
    upper = shape_env.bound_sympy(symbol).upper
    return int(upper) if isinstance(upper, sympy.Integer) and int(upper) > 0 else None  # (not torch's int_oo)


def _node_failures(node: Node, shapes: _Shapes) -> set[sympy.Expr]:
    """The padded counts `node` cannot take padded (empty when it takes them all)."""
    if node.op == "output":  # a padded tensor returned keeps the exact path; a count returned is read
        returned = {s for a in _arg_nodes(node) if isinstance(shapes.original.get(a), torch.SymInt)
                    and not _counted_number(a, shapes) for s in shapes.keys_of(shapes.original[a].node.expr)}
        return shapes.exact(shapes.original.get(node)) | (returned & set(shapes.capacity)) | {
            s for a in _arg_nodes(node) for s in shapes.exact(shapes.original.get(a))}
    if node.target is aten._assert_scalar.default:
        return _unchecked_condition(node, shapes)
    if node.op != "call_function" or node.target in _SCALAR_NODES or node.target is operator.getitem:
        return set()
    if not isinstance(node.target, torch._ops.OpOverload):
        return set()  # Python arithmetic on numbers (sizes): the asserts' and the exact path's
    inputs = set().union(*(set(shapes.padded(a).values()) for a in _arg_nodes(node)))
    outputs = shapes.exact(shapes.original.get(node))
    numbers = set().union(*(shapes.keys_of(shapes.original[a].node.expr) for a in _arg_nodes(node)
                            if isinstance(shapes.original.get(a), torch.SymInt)
                            and shapes.original[a].node.expr not in shapes.compacted
                            and not (_takes_as_value(node, a) and _counted_number(a, shapes))))
    # (a number computed from counts, taken as a value (`x / max(rows.shape[0], 1)`), reads the counts at run time)
    involved = (inputs | outputs | shapes.mixed(shapes.original.get(node)) | numbers) & set(shapes.capacity)
    if not involved:
        return set()
    if node.target in _SELECTIONS or _split_counts(node, shapes.original) \
            or _mask_source(node, shapes.original) is not None or _read_bounded(node, shapes.original) is not None:
        return set() if not any(shapes.padded(a) for a in _arg_nodes(node)) else involved
    through = _mask_puts(node, shapes.original, shapes.masks)
    if through is not None:
        fits = not shapes.padded(node.args[0]) and set(shapes.padded(node.args[2]).values()) <= {through}
        return set() if fits else involved
    if node.target in _SCATTERS or node.target is aten.index_put.default:
        return set() if _written_through(node, shapes) is not None else involved
    if node.target in (aten.sum.dim_IntList, aten.sum.default):
        return set()
    if node.target in _MASKED_REDUCTIONS or node.target in _MATMULS:
        return set() if _masks_its_operand(node, shapes, inputs, outputs) else involved
    if node.target is aten.cat.default:
        return set() if _compacts(node, shapes) or _joins_beside(node, shapes) else involved
    return set() if _row_wise(node, shapes, inputs, outputs, numbers) else involved


def _condition(node: Node, shapes: _Shapes) -> Any:
    """An `_assert_scalar`'s condition (torch.export's record of a `torch._check`, or of what an op
    assumed) as a sympy expression, when it involves a padded count or a read one is computed from;
    else None."""
    condition = node.args[0] if node.args else None
    value = shapes.original.get(condition) if isinstance(condition, Node) else None
    if not isinstance(value, torch.SymBool) or not shapes.conditioned(value.node.expr) \
            or _holds_up_to_recorded_bound(value, shapes):
        return None
    return value.node.expr


def _holds_up_to_recorded_bound(condition: torch.SymBool, shapes: _Shapes) -> bool:
    """Whether a recorded condition is on selections' counts only and holds for every count from 0 to the
    bound torch.export recorded for it: torch's range of a count restated where the count is made (`u0 >= 0`,
    `u0 <= 5` for a mask of 5 elements), or a `torch._check` bounding it from above, which the bound (so the
    capacity, that the padding checks) already is. Checking it again would be redundant, and wrong where
    the capacity replaces torch's bound (`masked_select` of an input broadcast against a larger mask: torch
    bounds the count by the input's elements alone). A least count above 0 stays a condition."""
    symbols = _free(condition.node.expr)
    if not symbols or not symbols <= shapes.selected:
        return False
    recorded = condition.node.shape_env.var_to_range
    if not symbols <= set(recorded):
        return False
    ranges = {s: ValueRanges(0, recorded[s].upper) for s in symbols}
    return bound_sympy(condition.node.expr, ranges).lower is sympy.true


def _unchecked_condition(node: Node, shapes: _Shapes) -> set[sympy.Expr]:
    """The padded counts of a condition torch.export recorded on them that rducc cannot check at run
    time (one not computed from `.item()` reads and sizes of padded results): those keep the exact path."""
    condition = _condition(node, shapes)
    if condition is None or _counted_number(node.args[0], shapes):  # type: ignore[arg-type]
        return set()
    return shapes.conditioned(condition)


def _counts_read(node: Node, original: dict[Node, Any]) -> list[tuple[Any, sympy.Expr]]:
    """The numbers a padded source computes its counts from (a slice's bounds, topk's k, a split's
    sizes), each with the count: [(number node, count)]."""
    found = _read_bounded(node, original)
    if found is not None:
        numbers = list(_slice_bounds(node, original) or ()) if node.target is aten.slice.Tensor else [node.args[1]]
        return [(n, found[1]) for n in numbers if isinstance(n, Node)]
    sizes = _split_sizes(node, original)
    if sizes is None:
        return []
    return [(n, size) for n, size in zip(node.args[1], sizes) if isinstance(n, Node)]  # type: ignore[arg-type]


def _read_symbols(number: Node, original: dict[Node, Any]) -> set[sympy.Symbol]:
    """The symbols of the `.item()` reads a number is computed from (`_read_number`)."""
    if number.target in _READS:
        value = original.get(number)
        return set(_free(value.node.expr)) if isinstance(value, torch.SymInt) else set()
    return set().union(*(_read_symbols(a, original) for a in _arg_nodes(number)))


_SIZE_READS = (aten.sym_size.int, aten.sym_numel.default)
_SELECTIONS = (aten.nonzero.default, aten.masked_select.default, aten.repeat_interleave.Tensor)
"""Ops whose result's first dim is a count the data decides (padded by `_Padder`)."""


def _count_size(node: Node, shapes: _Shapes) -> tuple[sympy.Expr, int] | None:
    """A size read (`rows.shape[0]`, `picked.numel()`) of a padded result that is one padded count
    times a static number: (the count, the number); None for any other node."""
    value = shapes.original.get(node)
    if node.target not in _SIZE_READS or not isinstance(value, torch.SymInt):
        return None
    for key in shapes.keys_of(value.node.expr):
        factor = sympy.cancel(value.node.expr / key)
        if factor.is_Integer:
            return key, int(factor)
    return None


def _takes_as_value(user: Node, node: Node) -> bool:
    """`user` (an ATen op) takes `node` where its schema takes a value (a Tensor or a Scalar), not a size."""
    schema = user.target._schema  # type: ignore[union-attr]
    named = [*zip((a.name for a in schema.arguments), user.args), *user.kwargs.items()]
    kinds = {a.name: str(a.type).removesuffix("?") for a in schema.arguments}
    return any(value is node and kinds.get(name) in ("Tensor", "Scalar", "float", "bool", "number")
               for name, value in named)


def _counted_number(node: Node, shapes: _Shapes) -> bool:
    """A Python number computed (by Python's operators) only from size reads of padded results
    (`_count_size`), `.item()` reads and constants: each size read becomes the count read at run time."""
    if _count_size(node, shapes) is not None or node.target in _READS or node.op == "placeholder":
        return True
    if node.op != "call_function" or isinstance(node.target, torch._ops.OpOverload):
        return False
    return all(_counted_number(a, shapes) for a in _arg_nodes(node))


_CONTRACTING = {aten.mm.default: 1, aten.bmm.default: 1, aten.matmul.default: 1, aten.linear.default: 1,
                aten.addmm.default: 2, aten.baddbmm.default: 2}
"""Matmuls, by the operand whose rows they contract (which must not be padded)."""


_LOWEST = "lowest"
_BELOW_ALL, _ABOVE_ALL = "below all", "above all"
_MASKED_REDUCTIONS: dict[Any, float | bool | str] = {
    aten.mean.dim: 0.0, aten.mean.default: 0.0,
    aten.amax.default: _BELOW_ALL, aten.amin.default: _ABOVE_ALL,
    aten._softmax.default: _LOWEST, aten._log_softmax.default: _LOWEST,
    aten.any.dim: False, aten.any.dims: False, aten.any.default: False,
    aten.var.correction: 0.0, aten.linalg_vector_norm.default: 0.0,
}
"""Ops that combine along a dim, by the value a pad position takes first so that
it does not reach the result (a mean's sum is then divided by the real count).
A softmax's pad logits are the dtype's lowest finite value, not -inf: the pad
gets no weight beside any real position, and a count of 0 gives finite weights
that the pad rows zeroed in the following contraction (attention's values)
turn into eager's zeros, not NaN. `amax`'s pad is -inf (an integer's lowest value),
`amin`'s +inf: the neutral value of each, so the result is the real rows' exactly;
torch refuses an empty reduction there, so a count of 0 is a run-time error. A vector
norm of an order of 0 or more gets zeros (a zero adds nothing to any such norm); a
variance is the real rows' sum of squared deviations from their mean over the real count
less the correction."""
_NEEDS_A_ROW = (aten.amax.default, aten.amin.default)
"""Masked reductions torch refuses over no element (a padded count of 0 is checked)."""


def _mean_dims(node: Node, rank: int) -> list[int]:
    """The dims a `mean` reduces (all of them for `mean.default` or `dim=None`)."""
    dims = node.args[1] if len(node.args) > 1 else node.kwargs.get("dim")
    if not isinstance(dims, list | tuple):
        return list(range(rank))
    return [int(d) for d in dims if isinstance(d, int)]


def _stand_in(target: Any, dtype: torch.dtype) -> float | bool:
    value = _MASKED_REDUCTIONS[target]
    if value == _LOWEST:
        return float(torch.finfo(dtype).min)
    if value in (_BELOW_ALL, _ABOVE_ALL):
        low = value == _BELOW_ALL
        if dtype.is_floating_point:
            return float("-inf") if low else float("inf")
        return int(torch.iinfo(dtype).min if low else torch.iinfo(dtype).max)
    return value  # type: ignore[return-value]

_MATMULS = (aten.mm.default, aten.bmm.default)
"""Contractions (matmul decomposes to these): a padded contracted dim is zeroed in one operand."""


def _masks_its_operand(node: Node, shapes: _Shapes, inputs: set, outputs: set) -> bool:
    """A masked reduction or contraction (module docstring) whose padded counts all come
    from its tensor operands, none mixed into another size, and whose result's counts
    are its operands' (floating point values: the pad's stand-in is -inf or 0)."""
    if shapes.mixed(shapes.original.get(node)) or not outputs <= inputs:
        return False
    operands = [a for a in node.args if isinstance(a, Node)]
    if any(not isinstance(shapes.original.get(a), torch.Tensor) for a in operands):
        return False
    if node.target in _MATMULS:
        return len(operands) == 2 and all(shapes.original[a].dtype.is_floating_point for a in operands)
    if len(operands) != 1 or operands[0] is not node.args[0]:
        return False
    dtype = shapes.original[operands[0]].dtype
    if node.target in _NEEDS_A_ROW:
        return dtype != torch.bool
    if node.target is aten.linalg_vector_norm.default:
        order = node.args[1] if len(node.args) > 1 else node.kwargs.get("ord", 2)
        return dtype.is_floating_point and isinstance(order, int | float) and order >= 0
    return dtype == torch.bool if isinstance(_MASKED_REDUCTIONS[node.target], bool) else dtype.is_floating_point


def _row_wise(node: Node, shapes: _Shapes, inputs: set, outputs: set, numbers: set) -> bool:
    """An op that keeps each padded dim whole and does not combine along it."""
    if shapes.mixed(shapes.original.get(node)) or not inputs <= outputs:
        return False
    contracted = _CONTRACTING.get(node.target)  # type: ignore[call-overload]
    if contracted is not None and len(node.args) > contracted and shapes.padded(node.args[contracted]):
        return False
    if "attention" in str(node.target):
        return False  # keys and values padded along the sequence would be attended to
    exact_numbers = all(_is_count(shapes.original[a].node.expr, shapes.capacity) for a in _arg_nodes(node)
                        if isinstance(shapes.original.get(a), torch.SymInt)
                        and shapes.keys_of(shapes.original[a].node.expr))
    if numbers and not exact_numbers:
        return False
    first = node.args[0] if node.args else None
    padded = shapes.padded(first)
    if not padded or not isinstance(first, Node):
        return True
    rank = len(shapes.original[first].shape)
    return not any(d % max(rank, 1) in padded for d in _dim_arguments(node))


def _written_through(node: Node, shapes: _Shapes) -> tuple[int, Node] | None:
    """For a scatter or index_put whose indices are padded: (the dest dim that
    the pad positions are sent past, the index node redirected); None when the
    pad cannot be redirected so (the destination itself padded, the values
    padded along dims the index has not)."""
    destination = node.args[0]
    if shapes.padded(destination):
        return None
    if node.target is aten.index_put.default:
        indices, values = node.args[1], node.args[2]
        present = [(p, i) for p, i in enumerate(indices) if isinstance(i, Node)]  # type: ignore[arg-type]
        padded = [(p, i) for p, i in present if shapes.padded(i)]
        counts = {frozenset(shapes.padded(i).values()) for _, i in padded}
        if len(counts) != 1 or not set(shapes.padded(values).values()) <= set(next(iter(counts))):
            return None  # (several padded indices of one count, as `out[rows, cols]` of one argwhere: fine)
        return padded[0]
    dim, index = node.args[1], node.args[2]
    source = node.args[3] if len(node.args) > 3 else None
    if not isinstance(dim, int) or not isinstance(index, Node) or not shapes.padded(index):
        return None
    if isinstance(source, Node) and not set(shapes.padded(source).values()) <= set(shapes.padded(index).values()):
        return None
    return dim, index


def _compacts(node: Node, shapes: _Shapes) -> bool:
    """A cat along dim 0 of pieces padded only along that dim."""
    pieces, dim = node.args[0], node.args[1] if len(node.args) > 1 else node.kwargs.get("dim", 0)
    if not isinstance(pieces, list | tuple) or not all(isinstance(p, Node) for p in pieces):
        return False
    first = pieces[0] if pieces else None
    if not isinstance(dim, int) or not isinstance(first, Node) or dim % len(shapes.original[first].shape) != 0:
        return False
    for piece in pieces:
        padded = shapes.padded(piece)
        if set(padded) - {0}:
            return False
    return True


def _cat_dim(node: Node) -> Any:
    return node.args[1] if len(node.args) > 1 else node.kwargs.get("dim", 0)


def _joins_beside(node: Node, shapes: _Shapes) -> bool:
    """A cat along a dim no piece is padded in, of pieces padded alike (`torch.stack(torch.where(m), -1)`):
    row-wise, each padded row stays one row."""
    pieces, dim = node.args[0], _cat_dim(node)
    if not isinstance(pieces, list | tuple) or not pieces or not all(isinstance(p, Node) for p in pieces):
        return False
    first: Any = pieces[0]
    rank = len(shapes.original[first].shape)
    padded = [shapes.padded(p) for p in pieces]
    return isinstance(dim, int) and all(p == padded[0] for p in padded) and dim % max(rank, 1) not in padded[0]


def plan_capacity(graph: torch.fx.Graph, original: dict[Node, Any],
                  user_capacity: int | None = None) -> dict[sympy.Expr, int]:
    """The counts this module pads, with their capacities (see the module docstring)."""
    capacity, groups = _candidates(graph, original, user_capacity)
    while capacity:
        shapes = _Shapes(original, capacity)
        shapes.compacted = {_exprs(original[n])[0] for n in graph.nodes
                            if n.target is aten.cat.default and isinstance(original.get(n), torch.Tensor)
                            and _compacts(n, shapes) and not isinstance(_exprs(original[n])[0], int)}
        failed = set().union(*(_node_failures(n, shapes) for n in graph.nodes))
        if not failed:
            break
        dropped = set().union(*(groups[s] for s in failed))
        capacity = {s: c for s, c in capacity.items() if s not in dropped}
    return capacity


def padded_stand_ins(original: dict[Node, Any], values: dict[Node, Any],
                     capacity: dict[sympy.Expr, int]) -> dict[Node, Any]:
    """For each node with a padded dim: an empty tensor (or list) of its compiled shape."""
    def stand_in(value: Any, real: Any) -> Any:
        if isinstance(value, torch.Tensor) and isinstance(real, torch.Tensor):
            shape = [capacity[e] if _is_count(e, capacity) else int(n)
                     for e, n in zip(_exprs(value), real.shape)]
            return torch.empty(shape, dtype=real.dtype)
        if isinstance(value, list | tuple) and isinstance(real, list | tuple):
            return type(real)(stand_in(v, r) for v, r in zip(value, real))
        return real

    shapes = _Shapes(original, capacity)
    return {n: stand_in(original[n], values[n]) for n in values
            if n in original and shapes.exact(original[n])}


# --------------------------------------------------------------------------
# Rewriting
# --------------------------------------------------------------------------


class _Padder:
    """Rewrites the padded counts' sources and sinks (after the meta values are padded)."""

    def __init__(self, r: Emitter, original: dict[Node, Any], capacity: dict[sympy.Expr, int]) -> None:
        self.r, self.capacity = r, capacity
        self.shapes = _Shapes(original, capacity)
        self.counts: dict[sympy.Expr, Node] = {}
        self.reads: dict[Node, Node] = {}
        """Each `.item()` read a padded count is computed from, as a rank-0 int64 tensor (`number`)."""
        self.order: dict[Node, int] = {}
        self.pending: list[Node] = []
        """The conditions recorded on padded counts (`_assert_scalar`s) not checked yet."""
        self.valid: dict[sympy.Expr, Node] = {}
        self.positions: dict[Node, tuple[list[Node], sympy.Expr]] = {}
        """A padded boolean mask's positions (one index vector per dim it covers) and its count,
        by the mask node."""

    def check(self, anchor: Node, value: Node, condition: Node, why: str, hint: bool = True) -> Node:
        name = getattr(anchor.target, "__name__", str(anchor.target)).split(".")[0]
        message = f"'{name}': {why}" + (" (rducc pads each data-dependent count to its capacity; "
                                        "compile with a larger capacity)" if hint else "")
        return self.r.emit(anchor, torch.ops.rducc.check.default, value, condition, message)  # data_sizes' op

    def valid_rows(self, anchor: Node, symbol: sympy.Expr) -> Node:
        """`arange(capacity) < count`: which of a padded dim's positions are real."""
        if symbol not in self.valid:
            positions = self.r.emit(anchor, aten.arange.default, self.capacity[symbol], dtype=torch.int64)
            self.valid[symbol] = self.r.emit(anchor, aten.lt.Tensor, positions, self.counts[symbol])
        return self.valid[symbol]

    def valid_of(self, anchor: Node, node: Node) -> Node:
        """A bool tensor broadcastable to `node`: true at its real positions."""
        rank = len(self.shapes.original[node].shape)
        result: Node | None = None
        for dim, symbol in sorted(self.shapes.padded(node).items()):
            shape = [1] * rank
            shape[dim] = self.capacity[symbol]
            part = self.r.emit(anchor, aten.view.default, self.valid_rows(anchor, symbol), shape)
            result = part if result is None else self.r.emit(anchor, aten.logical_and.default, result, part)
        assert result is not None
        return result

    def _replace(self, node: Node, new: Node) -> None:
        """`new` in place of `node`, standing for the same traced value (its padded dims)."""
        if node in self.shapes.original:
            self.shapes.original[new] = self.shapes.original[node]
        node.replace_all_uses_with(new)
        self.r.graph.erase_node(node)

    # sources --------------------------------------------------------------

    def nonzero(self, node: Node) -> None:
        source = node.args[0]
        assert isinstance(source, Node)
        symbol = _exprs(self.shapes.original[node])[0]
        capacity = self.capacity[symbol]
        flags = source if source.meta["val"].dtype == torch.bool else self.r.emit(node, aten.ne.Scalar, source, 0)
        count = self.r.emit(node, aten.sum.default, flags)
        fits = self.r.emit(node, aten.le.Scalar, count, capacity)
        why = f"more elements are selected than the capacity of {capacity} compiled for"
        source = self.check(node, source, fits, why)
        found = self.r.emit(node, aten.nonzero_static.default, source, size=capacity, fill_value=0)
        self.counts[symbol] = count
        self._replace(node, found)

    def _mask_positions(self, node: Node, mask: Node, symbol: sympy.Expr) -> list[Node]:
        """A boolean mask's true positions padded to `symbol`'s capacity (pad positions 0), one index
        vector per mask dim; its count checked against the capacity."""
        capacity = self.capacity[symbol]
        flags = mask if mask.meta["val"].dtype == torch.bool else self.r.emit(node, aten.ne.Scalar, mask, 0)
        count = self.r.emit(node, aten.sum.default, flags)
        fits = self.r.emit(node, aten.le.Scalar, count, capacity)
        checked = self.check(node, mask, fits, f"the mask selects more elements than the capacity of {capacity} "
                             "compiled for")
        found_at = self.r.emit(node, aten.nonzero_static.default, checked, size=capacity, fill_value=0)
        self.counts[symbol] = count
        return [self.r.emit(node, aten.select.int, found_at, 1, d) for d in range(mask.meta["val"].dim())]

    def masked(self, node: Node) -> None:
        """`x[mask]` through a boolean mask: the mask's positions padded to capacity (a mask
        of k dims: k index vectors, one per dim it covers)."""
        found = _mask_source(node, self.shapes.original)
        assert found is not None
        place, mask = found
        symbol = _exprs(self.shapes.original[node])[place]
        columns = self._mask_positions(node, mask, symbol)
        indices = list(node.args[1])  # type: ignore[arg-type]
        indices[place:place + 1] = columns
        self.positions[mask] = (columns, symbol)
        replaced = self.r.emit(node, aten.index.Tensor, node.args[0], indices)
        self._replace(node, replaced)

    def masked_select(self, node: Node) -> None:
        """`masked_select`: the broadcast input at the broadcast mask's padded positions."""
        source, mask = node.args[:2]
        assert isinstance(source, Node) and isinstance(mask, Node)
        shape = list(torch.broadcast_shapes(source.meta["val"].shape, mask.meta["val"].shape))
        source, mask = (self.r.emit(node, aten.expand.default, v, shape) for v in (source, mask))
        columns = self._mask_positions(node, mask, _exprs(self.shapes.original[node])[0])
        self._replace(node, self.r.emit(node, aten.index.Tensor, source, columns))

    def repeated(self, node: Node) -> None:
        """`repeat_interleave(repeats)` padded: position j of the capacity is the number of running
        sums at or below j (`repeat_positions`; the pad, past the total, clamped to the last
        index); the total checked."""
        repeats = node.args[0]
        assert isinstance(repeats, Node)
        symbol = _exprs(self.shapes.original[node])[0]
        capacity, length = self.capacity[symbol], int(repeats.meta["val"].numel())
        count = self.r.emit(node, aten.sum.default, repeats)
        conditions = [self.r.emit(node, aten.le.Scalar, count, capacity)]
        if length:
            conditions.append(self.r.emit(node, aten.ge.Scalar, self.r.emit(node, aten.amin.default, repeats), 0))
        repeats = self.check(node, repeats, self.r.all_of(node, conditions),
                             f"the repeats sum to more than the capacity of {capacity} compiled for (or one is "
                             "negative)")
        index = repeat_positions(self.r, node, repeats, capacity)
        self.counts[symbol] = count
        self._replace(node, self.r.emit(node, aten.clamp.default, index, 0, max(length - 1, 0)))

    def number(self, anchor: Node, number: Any) -> Node:
        """A Python integer the program computes (`_read_number`; or a constant) as a rank-0 int64 tensor:
        a read is its tensor, arithmetic on reads is left to `rducc.frontend.python_numbers`."""
        read = _read_tensor(number)
        if read is None:
            return self.r.emit(anchor, aten.scalar_tensor.default, number, dtype=torch.int64)
        if number not in self.reads:  # the read's own conditions (`torch._check(n >= 1)`) checked first
            value = self.r.emit(anchor, aten._to_copy.default, self.r.emit(anchor, aten.view.default, read, []),
                                dtype=torch.int64)
            symbol = self.shapes.original[number].node.expr
            for node in [n for n in self.pending if _condition(n, self.shapes).free_symbols == {symbol}
                         and self.order.get(n.args[0], len(self.order)) < self.order.get(anchor, 0)]:  # type: ignore[arg-type]
                value = self.condition_checked(anchor, value, node)
            self.reads[number] = value
        return self.reads[number]

    def split(self, node: Node) -> None:
        """A split by sizes computed from `.item()` reads (`_split_sizes`): piece i is the rows
        `offset_i + arange(its capacity)` (a static size: that many rows), clamped into range; each
        size checked between 0 and its capacity, their total against the length."""
        sizes = _split_sizes(node, self.shapes.original)
        assert sizes is not None
        source, given = node.args[0], node.args[1]
        dim = node.args[2] if len(node.args) > 2 else node.kwargs.get("dim", 0)
        assert isinstance(source, Node) and isinstance(given, list | tuple) and isinstance(dim, int)
        length = int(source.meta["val"].shape[dim])
        counts = [self.number(node, size) for size in given]
        rows = [size if isinstance(size, int) else self.capacity[size] for size in sizes]
        conditions, total = [], None
        for count, most in zip(counts, rows):
            conditions += [self.r.emit(node, aten.le.Scalar, count, most), self.r.emit(node, aten.ge.Scalar, count, 0)]
            total = count if total is None else self.r.emit(node, aten.add.Tensor, total, count)
        conditions.append(self.r.emit(node, aten.eq.Scalar, total, length))
        capacities = sorted({self.capacity[s] for s in sizes if not isinstance(s, int)})
        source = self.check(node, source, self.r.all_of(node, conditions),
                            f"a split size exceeds the capacity of {'/'.join(map(str, capacities))} compiled for "
                            f"(or the sizes do not sum to {length})")
        pieces, offset = [], None
        for count, most, size in zip(counts, rows, sizes):
            index = self.r.emit(node, aten.arange.default, most, dtype=torch.int64)
            if offset is not None:
                index = self.r.emit(node, aten.add.Tensor, index, offset)
            index = self.r.emit(node, aten.clamp.default, index, 0, max(length - 1, 0))
            pieces.append(self.r.emit(node, aten.index_select.default, source, dim, index))
            if not isinstance(size, int):
                self.counts[size] = count
            offset = count if offset is None else self.r.emit(node, aten.add.Tensor, offset, count)
        for user in list(node.users):
            assert user.target is operator.getitem
            self._replace(user, pieces[user.args[1]])  # type: ignore[index]
        self.r.graph.erase_node(node)

    def _slice_bound(self, anchor: Node, bound: Any, length: int, default: int) -> Node:
        """A slice's start or end as Python's slicing takes it (negative from the end, clamped into the
        input), as a rank-0 int64 tensor computed at run time."""
        static = _static_bound(bound, length, default)
        if static is not None:
            return self.r.emit(anchor, aten.scalar_tensor.default, static, dtype=torch.int64)
        value = self.number(anchor, bound)
        negative = self.r.emit(anchor, aten.lt.Scalar, value, 0)
        value = self.r.emit(anchor, aten.where.self, negative, self.r.emit(anchor, aten.add.Scalar, value, length),
                            value)
        return self.r.emit(anchor, aten.clamp.default, value, 0, length)

    def read_bounded(self, node: Node) -> None:
        """`x[a:b]` or `topk(x, k)` with a count computed from `.item()` reads: the op at the capacity (the
        capacity's rows from the start, gathered where the start is read; or the capacity's largest), the
        count computed at run time (a slice's as Python's slicing takes its bounds: negative from the end,
        clamped into the input), checked against the capacity and the least torch.export recorded."""
        found = _read_bounded(node, self.shapes.original)
        assert found is not None
        dim, symbol, limit = found
        capacity = self.capacity[symbol]
        lower = _recorded_lower(_first_tensor(self.shapes.original[node]), symbol)
        source = node.args[0]
        assert isinstance(source, Node)
        hint = capacity < limit  # (a larger capacity cannot help past the input's rows)
        if node.target is aten.slice.Tensor:
            bounds = _slice_bounds(node, self.shapes.original)
            assert bounds is not None
            length = int(source.meta["val"].shape[dim])
            start = self._slice_bound(node, bounds[0], length, 0)
            end = self._slice_bound(node, bounds[1], length, length)
            count = self.r.emit(node, aten.clamp_min.default, self.r.emit(node, aten.sub.Tensor, end, start), 0)
            why = (f"the slice read with .item() holds more rows than the capacity of {capacity} compiled for"
                   + (f" (or fewer than the {lower} torch.export checked)" if lower else ""))
            fits = self.r.all_of(node, [self.r.emit(node, aten.le.Scalar, count, capacity),
                                        self.r.emit(node, aten.ge.Scalar, count, lower)])
            source = self.check(node, source, fits, why, hint)
            first = _static_bound(bounds[0], length, 0)
            if first is not None:
                replaced = self.r.emit(node, aten.slice.Tensor, source, dim, first, first + capacity)
            else:
                index = self.r.emit(node, aten.add.Tensor,
                                    self.r.emit(node, aten.arange.default, capacity, dtype=torch.int64), start)
                index = self.r.emit(node, aten.clamp.default, index, 0, max(length - 1, 0))
                replaced = self.r.emit(node, aten.index_select.default, source, dim, index)
        else:
            count = self.number(node, node.args[1])
            fits = self.r.all_of(node, [self.r.emit(node, aten.le.Scalar, count, capacity),
                                        self.r.emit(node, aten.ge.Scalar, count, lower)])
            why = (f"k read with .item() is more than the capacity of {capacity} compiled for (or less than "
                   f"{lower}{', which torch.export checked' if lower else ''})")
            source = self.check(node, source, fits, why, hint)
            replaced = self.r.emit(node, aten.topk.default, source, capacity, *node.args[2:], **node.kwargs)
        self.counts[symbol] = count
        self._replace(node, replaced)

    # sinks ----------------------------------------------------------------

    def written(self, node: Node, through_mask: tuple[int, list[Node], Node] | None = None) -> None:
        """A scatter or index_put through padded indices: the pad sent to one extra row, sliced off
        (`through_mask`: an index_put through a padded boolean mask, as (its place among the
        indices, its padded positions, one vector per dim the mask covers, which of them are real):
        the first vector sends the pad past, the others hold 0 there)."""
        columns: list[Node] = []
        if through_mask is None:
            found = _written_through(node, self.shapes)
            assert found is not None
            dim, index = found
            valid = self.valid_of(node, index)
        else:
            dim, (index, *columns), valid = through_mask
        place = dim
        destination = node.args[0]
        assert isinstance(destination, Node)
        shape = list(destination.meta["val"].shape)
        rank, length = len(shape), shape[dim]
        dim %= rank
        extra = self.r.emit(node, aten.zeros.default, [*shape[:dim], 1, *shape[dim + 1:]],
                            dtype=destination.meta["val"].dtype)
        widened = self.r.emit(node, aten.cat.default, [destination, extra], dim)
        if node.target is aten.index_put.default:  # a negative index counts from the end of the real rows
            negative = self.r.emit(node, aten.lt.Scalar, index, 0)
            index = self.r.emit(node, aten.where.self, negative,
                                self.r.emit(node, aten.add.Scalar, index, length), index)
        past = self.r.emit(node, aten.full.default, [], length, dtype=index.meta["val"].dtype)
        redirected = self.r.emit(node, aten.where.self, valid, index, past)
        if node.target is aten.index_put.default:
            indices = list(node.args[1])  # type: ignore[arg-type]
            indices[place:place + 1] = [redirected, *columns]  # (their pad is `nonzero_static`'s fill, 0)
            for other, index_node in enumerate(indices):  # other padded indices: the pad at 0, in range
                if other != place and isinstance(index_node, Node) and self.shapes.padded(index_node):
                    zero = self.r.emit(node, aten.full.default, [], 0, dtype=index_node.meta["val"].dtype)
                    indices[other] = self.r.emit(node, aten.where.self, valid, index_node, zero)
            args: tuple = (widened, indices, *node.args[2:])
        else:
            args = (widened, node.args[1], redirected, *node.args[3:])
        written = self.r.emit(node, node.target, *args, **node.kwargs)
        result = self.r.emit(node, aten.slice.Tensor, written, dim, 0, length)
        self._replace(node, result)

    def _through_mask(self, node: Node) -> tuple[int, list[Node], Node] | None:
        """An index_put through a mask this module padded: (its place, positions, valid)."""
        for place, index in enumerate(node.args[1]):  # type: ignore[arg-type]
            if isinstance(index, Node) and index in self.positions:
                positions, symbol = self.positions[index]
                return place, positions, self.valid_rows(node, symbol)
        return None

    def summed(self, node: Node) -> None:
        """`sum` with the pad positions zero."""
        source = node.args[0]
        assert isinstance(source, Node)
        if not self.shapes.padded(source):
            return
        zero = self.r.emit(node, aten.full.default, [], 0, dtype=source.meta["val"].dtype)
        masked = self.r.emit(node, aten.where.self, self.valid_of(node, source), source, zero)
        node.args = (masked, *node.args[1:])

    def reduced(self, node: Node) -> None:
        """A masked reduction: the pad positions set to the value that does not reach
        the result (`_MASKED_REDUCTIONS`); a mean's sum divided by the real count."""
        source = node.args[0]
        assert isinstance(source, Node)
        if not self.shapes.padded(source):
            return
        dtype = source.meta["val"].dtype
        valid = self.valid_of(node, source)
        if node.target in _NEEDS_A_ROW:
            source = self._some_row(node, source)
        stand_in = self.r.emit(node, aten.full.default, [], _stand_in(node.target, dtype), dtype=dtype)
        masked = self.r.emit(node, aten.where.self, valid, source, stand_in)
        if node.target not in (aten.mean.dim, aten.mean.default, aten.var.correction):
            node.args = (masked, *node.args[1:])
            return
        shape = [int(size) for size in source.meta["val"].shape]
        reduced = sorted({d % max(len(shape), 1) for d in _mean_dims(node, len(shape))})
        keepdim = bool(node.args[2]) if len(node.args) > 2 else bool(node.kwargs.get("keepdim", False))
        if node.target is aten.var.correction:
            self._replace(node, self._variance(node, masked, valid, reduced, keepdim))
            return
        dtype_kwarg = {"dtype": node.kwargs["dtype"]} if node.kwargs.get("dtype") is not None else {}
        summed = self.r.emit(node, aten.sum.dim_IntList, masked, reduced, keepdim, **dtype_kwarg)
        self._replace(node, self._over_count(node, summed, self._real_count(node, source, reduced)))

    def _real_count(self, node: Node, source: Node, reduced: list[int]) -> Node | int:
        """How many real elements a reduction of `source` over `reduced` reads: the padded dims'
        counts (read at run time) times the other dims' sizes."""
        shape = [int(size) for size in source.meta["val"].shape]
        padded = self.shapes.padded(source)
        static = 1
        for dim in reduced:
            static *= 1 if dim in padded else shape[dim]
        counts = [self.counts[padded[dim]] for dim in reduced if dim in padded]
        if not counts:
            return static
        count = counts[0]
        for other in counts[1:]:
            count = self.r.emit(node, aten.mul.Tensor, count, other)
        return count if static == 1 else self.r.emit(node, aten.mul.Scalar, count, static)

    def _over_count(self, node: Node, summed: Node, count: Node | int) -> Node:
        if isinstance(count, int):
            return self.r.emit(node, aten.div.Scalar, summed, count)
        return self.r.emit(node, aten.div.Tensor, summed, count)

    def _variance(self, node: Node, masked: Node, valid: Node, reduced: list[int], keepdim: bool) -> Node:
        """`var` over padded dims: the real elements' squared deviations from their mean, summed,
        over the real count less the correction (eager's NaN or inf where that is 0 or less)."""
        source = node.args[0]
        assert isinstance(source, Node)
        count = self._real_count(node, source, reduced)
        mean = self._over_count(node, self.r.emit(node, aten.sum.dim_IntList, masked, reduced, True), count)
        deviation = self.r.emit(node, aten.sub.Tensor, masked, mean)
        zero = self.r.emit(node, aten.full.default, [], 0.0, dtype=source.meta["val"].dtype)
        deviation = self.r.emit(node, aten.where.self, valid, deviation, zero)
        squares = self.r.emit(node, aten.sum.dim_IntList, self.r.emit(node, aten.mul.Tensor, deviation, deviation),
                              reduced, keepdim)
        given: Any = node.kwargs.get("correction")
        correction = 1 if given is None else given
        if isinstance(count, int):
            return self.r.emit(node, aten.div.Scalar, squares, count - correction)
        return self.r.emit(node, aten.div.Tensor, squares, self.r.emit(node, aten.sub.Scalar, count, correction))

    def _some_row(self, node: Node, source: Node) -> Node:
        """`source` checked to hold at least one real row along each padded dim `node` reduces
        (torch.export's `u0 >= 1` guard: eager refuses an empty `amax`)."""
        padded = self.shapes.padded(source)
        rank = len(source.meta["val"].shape)
        reduced = {d % max(rank, 1) for d in _mean_dims(node, rank)} or set(range(rank))
        counts = [self.counts[padded[d]] for d in sorted(reduced) if d in padded and padded[d] in self.counts]
        if not counts:
            return source
        conditions = [self.r.emit(node, aten.ge.Scalar, count, 1) for count in counts]
        return self.check(node, source, self.r.all_of(node, conditions),
                          "a data-dependent count is 0: the reduction has no element (as in eager)", hint=False)

    def contracted(self, node: Node) -> None:
        """A matmul over a padded dim: the pad rows of its second operand zeroed (and the
        pad columns of its first, when only it is padded there), so the pad adds nothing."""
        first, second = node.args[0], node.args[1]
        assert isinstance(first, Node) and isinstance(second, Node)
        for place, operand in ((1, second), (0, first)):
            if not self.shapes.padded(operand):
                continue
            zero = self.r.emit(node, aten.full.default, [], 0.0, dtype=operand.meta["val"].dtype)
            masked = self.r.emit(node, aten.where.self, self.valid_of(node, operand), operand, zero)
            args = list(node.args)
            args[place] = masked
            node.args = tuple(args)
            return

    def cat(self, node: Node) -> None:
        """Padded pieces compacted: each real row to its place, the pad to one extra row."""
        pieces = list(node.args[0])  # type: ignore[arg-type]
        if not any(self.shapes.padded(p) for p in pieces) or _joins_beside(node, self.shapes):
            return
        length = int(node.meta["val"].shape[0])
        positions, offset = [], None
        for piece in pieces:
            assert isinstance(piece, Node)
            rows = int(piece.meta["val"].shape[0])
            place = self.r.emit(node, aten.arange.default, rows, dtype=torch.int64)
            if offset is not None:
                place = self.r.emit(node, aten.add.Tensor, place, offset)
            symbol = self.shapes.padded(piece).get(0)
            if symbol is not None:
                past = self.r.emit(node, aten.full.default, [], length, dtype=torch.int64)
                place = self.r.emit(node, aten.where.self, self.valid_rows(node, symbol), place, past)
                count = self.counts[symbol]
            else:
                count = self.r.emit(node, aten.full.default, [], rows, dtype=torch.int64)
            positions.append(place)
            offset = count if offset is None else self.r.emit(node, aten.add.Tensor, offset, count)
        assert offset is not None
        joined = self.r.emit(node, aten.cat.default, pieces, 0)
        joined = self.check(node, joined, self.r.emit(node, aten.eq.Scalar, offset, length),
                            f"the pieces hold another number of rows than the {length} compiled for (the "
                            "example's total: padded pieces are compacted to the concatenation's size on the "
                            "example)", hint=False)
        shape = list(node.meta["val"].shape)
        zeros = self.r.emit(node, aten.zeros.default, [length + 1, *shape[1:]], dtype=node.meta["val"].dtype)
        placed = self.r.emit(node, aten.index_put.default, zeros,
                             [self.r.emit(node, aten.cat.default, positions)], joined)
        result = self.r.emit(node, aten.slice.Tensor, placed, 0, 0, length)
        self._replace(node, result)

    def run(self) -> None:
        self.order = {n: i for i, n in enumerate(self.r.graph.nodes)}
        conditions = {n: _condition(n, self.shapes) for n in self.r.graph.nodes
                      if n.target is aten._assert_scalar.default}
        once = {_normal_form(c): n for n, c in reversed(conditions.items()) if c is not None}
        self.pending = [n for n in conditions if n in once.values()]  # (torch records some twice)
        for node in list(self.r.graph.nodes):
            if node.op != "call_function":
                continue
            value = self.shapes.original.get(node)
            if node.target is aten.nonzero.default and self.shapes.exact(value):
                self.nonzero(node)
            elif _mask_source(node, self.shapes.original) is not None and self.shapes.exact(value):
                self.masked(node)
            elif node.target is aten.masked_select.default and self.shapes.exact(value):
                self.masked_select(node)
            elif node.target is aten.repeat_interleave.Tensor and self.shapes.exact(value):
                self.repeated(node)
            elif node.target is aten.index_put.default and self._through_mask(node) is not None:
                self.written(node, self._through_mask(node))
            elif _split_counts(node, self.shapes.original) and self.shapes.exact(value):
                self.split(node)
            elif _read_bounded(node, self.shapes.original) is not None and self.shapes.exact(value):
                self.read_bounded(node)
            elif (node.target in _SCATTERS or node.target is aten.index_put.default) \
                    and any(self.shapes.padded(a) for a in _arg_nodes(node)):
                self.written(node)
            elif node.target in (aten.sum.dim_IntList, aten.sum.default):
                self.summed(node)
            elif node.target in _MASKED_REDUCTIONS:
                self.reduced(node)
            elif node.target in _MATMULS:
                self.contracted(node)
            elif node.target is aten.cat.default:
                self.cat(node)
            elif _count_size(node, self.shapes) is not None:
                self.count_read(node)
            else:
                self.numbers(node)
        for node in list(self.pending):
            self.kept(node)

    def kept(self, node: Node) -> None:
        """A condition torch.export recorded on a padded count (`_assert_scalar`: a `torch._check`, or what
        an op assumed of the count) that no read of its count checked (`number`): checked at run time,
        gating the program's first tensor output."""
        output = next(n for n in self.r.graph.nodes if n.op == "output")
        results = list(output.args[0])
        gated = next((i for i, r in enumerate(results) if isinstance(r, Node)
                      and isinstance(r.meta.get("val"), torch.Tensor)), None)
        if gated is None:
            return  # (a program returning numbers only: nothing to gate)
        results[gated] = self.condition_checked(output, results[gated], node)
        output.args = (type(output.args[0])(results), *output.args[1:])

    def condition_checked(self, anchor: Node, value: Node, node: Node) -> Node:
        """`value` once the condition of the `_assert_scalar` `node` holds, which the example alone no longer
        makes true: the message names it, the location is the line that read its count."""
        self.pending.remove(node)
        condition = node.args[0]
        assert isinstance(condition, Node)
        text = _ConditionPrinter(_number_names(self.r.graph, self.shapes)).doprint(_condition(node, self.shapes))
        holds = self.r.emit(anchor, aten.scalar_tensor.default, condition, dtype=torch.bool)
        checked = self.r.emit(anchor, torch.ops.rducc.check.default, value, holds,
                              f"the condition {text} does not hold (torch.export recorded it on a data-dependent "
                              "count: a torch._check, or what an op assumed of the count)")
        origin = _origin(condition)
        for key in LOCATION_KEYS:
            if key in origin.meta:
                checked.meta[key] = origin.meta[key]
        return checked

    def count_read(self, node: Node) -> None:
        """A size read of a padded result used as a number (returned, Python arithmetic, a Scalar
        argument): the count read at run time; where it is a size (`zeros(n)`) it stays the capacity."""
        found = _count_size(node, self.shapes)
        assert found is not None
        symbol, factor = found
        numbers = [u for u in node.users if not isinstance(u.target, torch._ops.OpOverload)
                   or _takes_as_value(u, node)]
        if not numbers or symbol not in self.counts:
            return
        count = self.counts[symbol]
        if factor != 1:
            count = self.r.emit(node, aten.mul.Scalar, count, factor)
        read = self.r.emit(node, aten._local_scalar_dense.default, count)
        for user in numbers:
            user.args = torch.fx.node.map_arg(user.args, lambda a: read if a is node else a)
            user.kwargs = torch.fx.node.map_arg(user.kwargs, lambda a: read if a is node else a)

    def numbers(self, node: Node) -> None:
        """Size arguments of an ATen op that are exactly a padded count become its capacity (a number
        computed from it by Python's operators, or taken as a value, is computed at run time)."""
        if not isinstance(node.target, torch._ops.OpOverload):
            return

        def number(arg: Any) -> Any:
            if isinstance(arg, Node):
                value = self.shapes.original.get(arg)
                if isinstance(value, torch.SymInt) and value.node.expr in self.capacity \
                        and not _takes_as_value(node, arg):
                    return self.capacity[value.node.expr]
                return arg
            if isinstance(arg, list | tuple):
                return type(arg)(number(a) for a in arg)
            return arg

        node.args, node.kwargs = number(node.args), number(node.kwargs)


def _normal_form(condition: Any) -> Any:
    """A relation between integers as the expression it says is at least 0 (`0 < n` and `n >= 1` alike:
    `n - 1`), so that a condition torch.export recorded twice, in two forms, is checked once; any other
    condition as it is."""
    if not all(getattr(side, "is_integer", False) for side in getattr(condition, "args", ())):
        return condition
    forms = {sympy.GreaterThan: (1, 0), sympy.StrictGreaterThan: (1, 1), sympy.LessThan: (-1, 0),
             sympy.StrictLessThan: (-1, 1)}
    if type(condition) not in forms:
        return condition
    sign, strict = forms[type(condition)]
    return sympy.expand(sign * (condition.lhs - condition.rhs) - strict)


def _origin(number: Node) -> Node:
    """The first `.item()` read or size read a number is computed from (its line: where the count is read)."""
    if number.target in _READS or number.target in _SIZE_READS:
        return number
    found = [_origin(a) for a in _arg_nodes(number)]
    return next((f for f in found if f.target in _READS or f.target in _SIZE_READS), number)


def _number_names(graph: torch.fx.Graph, shapes: _Shapes) -> dict[sympy.Symbol, sympy.Symbol]:
    """Each symbol read with `.item()` (`n.item()`) or as a size (`idx.shape[0]`), by the user's names."""
    names: dict[sympy.Symbol, sympy.Symbol] = {}
    for node in graph.nodes:
        value = shapes.original.get(node)
        if not isinstance(value, torch.SymInt) or not isinstance(value.node.expr, sympy.Symbol) \
                or not isinstance(node.args[0] if node.args else None, Node):
            continue
        if node.target in _READS:
            names.setdefault(value.node.expr, sympy.Symbol(f"{node.args[0].name}.item()"))
        elif node.target is aten.sym_size.int:
            names.setdefault(value.node.expr, sympy.Symbol(f"{node.args[0].name}.shape[{node.args[1]}]"))
    return names


class _ConditionPrinter(StrPrinter):
    """A recorded condition as Python writes it (`n.item() % 2 == 0`, not `Eq(Mod(u0, 2), 0)`)."""

    def __init__(self, names: dict[sympy.Symbol, sympy.Symbol]) -> None:
        super().__init__()
        self.names = names

    def _print_Symbol(self, expr: sympy.Symbol) -> str:
        return str(self.names.get(expr, expr))

    def _relation(self, expr: Any, op: str) -> str:
        return f"{self._print(expr.lhs)} {op} {self._print(expr.rhs)}"

    def _print_Equality(self, expr: Any) -> str:
        return self._relation(expr, "==")

    def _print_Unequality(self, expr: Any) -> str:
        return self._relation(expr, "!=")

    def _binary(self, expr: Any, op: str) -> str:
        return f"{self.parenthesize(expr.args[0], 60)} {op} {self.parenthesize(expr.args[1], 60)}"

    def _print_Mod(self, expr: Any) -> str:
        return self._binary(expr, "%")

    def _print_PythonMod(self, expr: Any) -> str:
        return self._binary(expr, "%")

    def _print_FloorDiv(self, expr: Any) -> str:
        return self._binary(expr, "//")


def pad_counts(r: Emitter, original: dict[Node, Any], capacity: dict[sympy.Expr, int]) -> None:
    """Rewrite the padded counts' sources and sinks in `r`'s graph (module docstring)."""
    if capacity:
        _Padder(r, original, capacity).run()


__all__ = ["pad_counts", "padded_stand_ins", "plan_capacity", "repeat_positions"]
