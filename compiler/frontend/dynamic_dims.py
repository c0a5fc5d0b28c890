"""The dynamic dims of a program exported with `dynamic_shapes`, and its
specialization to one size of each (a shape bucket, `rducc --shapes`).

torch.export records each dynamic dim as a sympy symbol of the program's shape
environment (`s17`), its range in `range_constraints` (derived dims such as
`2*seq` have their own range), and the checks it made on the inputs' sizes in
`_guards_code` (`L['y'].size()[1] == 2*L['x'].size()[1]`). A saved archive
keeps no `Dim` names, so a dim is named, in this order, by:

- the `Dim` name, when the program still has its shape environment (an
  ExportedProgram made in this process);
- `batch` for a dim that is dim 0 of a user input, `seq` for one that is dim 1
  of a user input (the usual layout of token and activation inputs);
- always also `INPUT.DIM` (`input_ids.1`: the input's name and the dim) and the
  symbol itself (`s17`); and when one name given matches no dim and one dim is
  left without sizes, that name is that dim's (the `Dim` name the archive lost).

`specialize` checks each value against the ranges and the recorded guards,
then re-exports the program's module with inputs of those sizes: a static
program, which the normal pipeline compiles.
"""

from __future__ import annotations

import ast
import itertools
import operator
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch
from torch.export import ExportedProgram
from torch.export.graph_signature import InputKind
from torch.utils import _pytree as pytree

from rducc.errors import RduccError


@dataclass
class DynamicDim:
    """One root symbol of the shape environment: its names, where it appears, its range."""

    symbol: str
    """The shape environment's symbol (`s17`)."""
    name: str
    """The name reports and buckets use (the Dim's name, `batch`, `seq` or `INPUT.DIM`)."""
    places: list[str] = field(default_factory=list)
    """`INPUT.DIM` of every input dim that is exactly this symbol."""
    low: int = 0
    high: int | None = None
    """The range torch recorded (None: no upper bound)."""

    @property
    def aliases(self) -> list[str]:
        """Every name the dim may be given by."""
        return list(dict.fromkeys([self.name, *self.places, self.symbol]))

    def describe(self) -> str:
        shown = f"{self.low}..{self.high if self.high is not None else 'inf'}"
        also = [a for a in self.places if a != self.name] or ([self.symbol] if self.symbol != self.name else [])
        return f"{self.name} ({', '.join([*also, shown])})"


@dataclass
class InputShape:
    """A user input's shape as sympy expressions of the root symbols (ints where static)."""

    label: str
    sizes: list[Any]
    dtype: torch.dtype | None
    """None: not a tensor (a constant input, kept as exported)."""
    value: Any = None
    device: torch.device | None = None


def _is_dynamic_size(size: Any) -> bool:
    return isinstance(size, torch.SymInt) and not isinstance(size.node.expr, int) and not size.node.expr.is_number


def _symbolic_node(size: Any) -> Any:
    """The symbolic node behind a SymInt (its expression and shape environment)."""
    return size.node


def _symbolic(size: Any) -> Any:
    """A SymInt's sympy expression."""
    return _symbolic_node(size).expr


def user_input_shapes(ep: ExportedProgram) -> list[InputShape]:
    """Every user input of the program, in order, with its symbolic shape."""
    nodes = {n.name: n for n in ep.graph.nodes if n.op == "placeholder"}
    shapes = []
    for spec in ep.graph_signature.input_specs:
        if spec.kind != InputKind.USER_INPUT:
            continue
        name = getattr(spec.arg, "name", None)
        value = nodes[name].meta.get("val") if name in nodes else getattr(spec.arg, "value", None)
        if isinstance(value, torch.Tensor):
            sizes = [_symbolic(s) if _is_dynamic_size(s) else int(s) for s in value.shape]
            shapes.append(InputShape(str(name), sizes, value.dtype, device=value.device))
        else:
            shapes.append(InputShape(str(name), [], None, value))
    return shapes


def _dim_names_from_shape_env(ep: ExportedProgram) -> dict[str, str]:
    """The `Dim` names torch still knows (an in-memory program): symbol -> name."""
    env = None
    for node in ep.graph.nodes:
        value = node.meta.get("val")
        if isinstance(value, torch.Tensor):
            for size in value.shape:
                if _is_dynamic_size(size):
                    env = _symbolic_node(size).shape_env
                    break
        if env is not None:
            break
    if env is None:
        return {}
    debug = getattr(env, "source_name_to_debug_name", {}) or {}
    to_var = getattr(env, "source_to_var", {}) or {}
    replacements = getattr(env, "replacements", {}) or {}
    names: dict[str, str] = {}
    for source, name in debug.items():
        var = to_var.get(source)
        if var is None:
            continue
        root = replacements.get(var, var)
        if getattr(root, "is_Symbol", False) and _NAME.fullmatch(name):
            names.setdefault(str(root), name)
    return names


_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def dynamic_dims(ep: ExportedProgram) -> list[DynamicDim]:
    """The program's dynamic dims (root symbols), in the order the inputs first use them."""
    found: dict[str, DynamicDim] = {}
    for shape in user_input_shapes(ep):
        for index, size in enumerate(shape.sizes):
            if isinstance(size, int):
                continue
            for symbol in sorted(size.free_symbols, key=str):
                dim = found.setdefault(str(symbol), DynamicDim(str(symbol), str(symbol)))
                if size == symbol:
                    dim.places.append(f"{shape.label}.{index}")
    ranges = {str(k): v for k, v in ep.range_constraints.items()}
    for dim in found.values():
        bounds = ranges.get(dim.symbol)
        if bounds is not None:
            dim.low, dim.high = _bound(bounds.lower) or 0, _bound(bounds.upper)
    _name_dims(list(found.values()), _dim_names_from_shape_env(ep))
    return list(found.values())


def _name_dims(dims: Sequence[DynamicDim], known: Mapping[str, str]) -> None:
    """Give each dim its report name: its Dim name, else batch/seq by position, else INPUT.DIM."""
    taken: set[str] = set()
    for dim in dims:
        if dim.symbol in known:
            dim.name = known[dim.symbol]
            taken.add(dim.name)
    for dim in dims:
        if dim.symbol in known:
            continue
        positions = {int(place.rsplit(".", 1)[1]) for place in dim.places}
        conventional = "batch" if 0 in positions else "seq" if 1 in positions else None
        if conventional is not None and conventional not in taken:
            dim.name = conventional
        elif dim.places:
            dim.name = dim.places[0]
        taken.add(dim.name)


def _bound(value: Any) -> int | None:
    """A range bound as an int; None for an infinite one (torch's `int_oo`, sympy's `oo`)."""
    try:
        number = int(value)
    except (TypeError, ValueError, OverflowError, AttributeError):
        return None
    return number if abs(number) < 1 << 62 else None


def is_dynamic(ep: ExportedProgram) -> bool:
    """Whether a user input has a dynamic dim."""
    return any(not isinstance(s, int) for shape in user_input_shapes(ep) for s in shape.sizes)


def dynamic_help(dims: Sequence[DynamicDim], api: str = "rducc.compile") -> str:
    """What to say about a dynamic export: its dims and how to compile it (`api`: the
    Python call that takes `shapes=`)."""
    listed = ", ".join(dim.describe() for dim in dims)
    example = " ".join(f"{dim.name}={_example_sizes(dim)}" for dim in dims)
    python = ", ".join(f"'{dim.name}': [{_example_sizes(dim)}]" for dim in dims)
    return (f"the program was exported with dynamic dims: {listed}; rducc compiles static shapes, one "
            f"program per size: give the sizes to compile with --shapes {example} "
            f"({api}(..., shapes={{{python}}}))")


def _example_sizes(dim: DynamicDim) -> str:
    low = max(dim.low, 1)
    high = dim.high if dim.high is not None else low * 4
    return f"{low},{high}" if high != low else str(low)


# --------------------------------------------------------------------------
# --shapes: which sizes to compile
# --------------------------------------------------------------------------


def parse_shapes_flags(items: Sequence[str]) -> dict[str, list[int]]:
    """`["batch=1,4", "seq=128,512"]` (the CLI's --shapes) as {name: sizes}."""
    spec: dict[str, list[int]] = {}
    for item in items:
        name, equals, sizes = item.partition("=")
        if not equals or not name.strip() or not sizes.strip():
            raise RduccError(f"--shapes {item}: write NAME=SIZE[,SIZE...] (batch=1,4 seq=128,512)")
        try:
            values = [int(s) for s in sizes.split(",")]
        except ValueError:
            raise RduccError(f"--shapes {item}: sizes must be whole numbers separated by commas") from None
        if name.strip() in spec:
            raise RduccError(f"--shapes names '{name.strip()}' twice")
        spec[name.strip()] = values
    return spec


def buckets_of(dims: Sequence[DynamicDim], spec: Mapping[str, Sequence[int]]) -> list[dict[str, int]]:
    """Every combination of the given sizes, as {dim name: size} in the dims' order."""
    by_alias = {alias: dim for dim in dims for alias in dim.aliases}
    unknown = [name for name in spec if name not in by_alias]
    named = {by_alias[name].symbol for name in spec if name in by_alias}
    unnamed = [dim for dim in dims if dim.symbol not in named]
    if len(unknown) == 1 and len(unnamed) == 1 and _NAME.fullmatch(unknown[0]):
        unnamed[0].name = unknown[0]  # the one dim left is the one name left (a Dim name the archive lost)
        by_alias[unknown[0]] = unnamed[0]
    chosen: dict[str, list[int]] = {}
    for name, sizes in spec.items():
        dim = by_alias.get(name)
        if dim is None:
            raise RduccError(f"shapes: the program has no dynamic dim '{name}'; its dynamic dims are "
                             f"{', '.join(d.describe() for d in dims) or 'none (it has static shapes)'}")
        if dim.name in chosen:
            raise RduccError(f"shapes: '{name}' and another name both give the sizes of dim {dim.name}")
        values = list(dict.fromkeys(int(s) for s in sizes))
        if not values:
            raise RduccError(f"shapes: no sizes given for '{name}'")
        chosen[dim.name] = values
    missing = [dim for dim in dims if dim.name not in chosen]
    if missing:
        raise RduccError("shapes: no sizes for the dynamic dim" + ("s " if len(missing) > 1 else " ")
                         + ", ".join(d.describe() for d in missing)
                         + "; give each one (" + " ".join(f"{d.name}=N,..." for d in missing) + ")")
    names = [dim.name for dim in dims]
    return [dict(zip(names, combo)) for combo in itertools.product(*(chosen[n] for n in names))]


def bucket_label(values: Mapping[str, int]) -> str:
    """`batch=1 seq=128`: a bucket as messages show it."""
    return " ".join(f"{name}={size}" for name, size in values.items())


# --------------------------------------------------------------------------
# checking and specializing one bucket
# --------------------------------------------------------------------------


def _symbols(dims: Sequence[DynamicDim], values: Mapping[str, int]) -> dict[str, int]:
    return {dim.symbol: values[dim.name] for dim in dims}


def _evaluate(expr: Any, by_symbol: Mapping[str, int]) -> int:
    if isinstance(expr, int):
        return expr
    return int(expr.subs({s: by_symbol[str(s)] for s in expr.free_symbols}))


def check_bucket(ep: ExportedProgram, dims: Sequence[DynamicDim], values: Mapping[str, int]) -> None:
    """Each value within its dim's range, each derived size within its range, and
    every guard torch recorded true at these sizes; else one error naming it."""
    label = bucket_label(values)
    for dim in dims:
        size = values[dim.name]
        if size < dim.low or (dim.high is not None and size > dim.high):
            raise RduccError(f"shapes: {dim.name}={size} is outside the range the program was exported for "
                             f"({dim.low}..{dim.high if dim.high is not None else 'inf'})")
    by_symbol = _symbols(dims, values)
    for expr, bounds in ep.range_constraints.items():
        if getattr(expr, "is_Symbol", False) or not set(map(str, expr.free_symbols)) <= set(by_symbol):
            continue
        size = _evaluate(expr, by_symbol)
        low, high = _bound(bounds.lower) or 0, _bound(bounds.upper)
        if size < low or (high is not None and size > high):
            shown = _with_names(str(expr), dims)
            raise RduccError(f"shapes: at {label} the derived size {shown} = {size} is outside its range "
                             f"({low}..{high if high is not None else 'inf'})")
    sizes = {shape.label: [_evaluate(s, by_symbol) for s in shape.sizes] for shape in user_input_shapes(ep)}
    for guard in getattr(ep, "_guards_code", None) or []:
        if guard_holds(guard, sizes) is False:
            raise RduccError(f"shapes: at {label} the inputs' sizes break a check torch.export recorded: {guard}")


def _with_names(text: str, dims: Sequence[DynamicDim]) -> str:
    for dim in sorted(dims, key=lambda d: -len(d.symbol)):
        text = re.sub(rf"\b{re.escape(dim.symbol)}\b", dim.name, text)
    return text


_SIZE_READ = re.compile(r"L\['([^'\]]+)'\]\.size\(\)\[(\d+)\]")
_BINARY: dict[type, Callable[[Any, Any], Any]] = {
    ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod, ast.Pow: operator.pow,
}
_COMPARE: dict[type, Callable[[Any, Any], bool]] = {
    ast.Eq: operator.eq, ast.NotEq: operator.ne, ast.Lt: operator.lt, ast.LtE: operator.le, ast.Gt: operator.gt,
    ast.GtE: operator.ge,
}


def guard_holds(guard: str, sizes: Mapping[str, Sequence[int]]) -> bool | None:
    """A recorded guard (`L['x'].size()[0] == L['y'].size()[0]`) at these input
    sizes: True, False, or None when it reads something other than sizes (then
    torch's own checks at the re-export decide). Parsed, never executed."""

    def size_of(match: re.Match[str]) -> str:
        shape = sizes.get(match.group(1))
        index = int(match.group(2))
        if shape is None or index >= len(shape):
            raise KeyError(match.group(0))
        return str(shape[index])

    try:
        text = _SIZE_READ.sub(size_of, guard)
        value = _arithmetic(ast.parse(text, mode="eval").body)
    except (KeyError, SyntaxError, ValueError, ZeroDivisionError, OverflowError):
        return None
    return bool(value)


def _arithmetic(node: ast.AST) -> Any:
    """Integer arithmetic, comparisons and and/or/not over constants; anything else is a ValueError."""
    if isinstance(node, ast.Constant) and isinstance(node.value, int | bool):
        return node.value
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        left, right = _arithmetic(node.left), _arithmetic(node.right)
        if isinstance(node.op, ast.Pow) and abs(right) > 64:
            raise ValueError("exponent too large")
        return _BINARY[type(node.op)](left, right)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.Not):
        operand = _arithmetic(node.operand)
        return -operand if isinstance(node.op, ast.USub) else not operand
    if isinstance(node, ast.BoolOp):
        values = [_arithmetic(v) for v in node.values]
        return all(values) if isinstance(node.op, ast.And) else any(values)
    if isinstance(node, ast.Compare) and all(type(op) in _COMPARE for op in node.ops):
        left = _arithmetic(node.left)
        for op, comparator in zip(node.ops, node.comparators):
            right = _arithmetic(comparator)
            if not _COMPARE[type(op)](left, right):
                return False
            left = right
        return True
    raise ValueError(f"not a size check: {ast.dump(node)}")


def concrete_inputs(ep: ExportedProgram, dims: Sequence[DynamicDim], values: Mapping[str, int]) -> tuple[tuple, dict]:
    """(args, kwargs) of zero tensors of the bucket's sizes, in the exported structure."""
    by_symbol = _symbols(dims, values)
    leaves = []
    for shape in user_input_shapes(ep):
        if shape.dtype is None:
            leaves.append(shape.value)
        else:
            sizes = [_evaluate(s, by_symbol) for s in shape.sizes]
            leaves.append(torch.zeros(sizes, dtype=shape.dtype, device=shape.device))
    args, kwargs = pytree.tree_unflatten(leaves, ep.call_spec.in_spec)
    return tuple(args), dict(kwargs)


def specialize(ep: ExportedProgram, dims: Sequence[DynamicDim], values: Mapping[str, int]) -> ExportedProgram:
    """The program with each dynamic dim fixed to its bucket's value: checked
    (`check_bucket`), then re-exported from the program's own module with inputs
    of those sizes, so every size inside it is static."""
    from rducc.frontend.loader import export_model

    check_bucket(ep, dims, values)
    args, kwargs = concrete_inputs(ep, dims, values)
    try:
        return export_model(ep.module(), args, kwargs=kwargs)
    except RduccError as error:
        raise RduccError(f"shapes: at {bucket_label(values)}: {error}") from None


__all__ = [
    "DynamicDim",
    "InputShape",
    "bucket_label",
    "buckets_of",
    "check_bucket",
    "concrete_inputs",
    "dynamic_dims",
    "dynamic_help",
    "guard_holds",
    "is_dynamic",
    "parse_shapes_flags",
    "specialize",
    "user_input_shapes",
]
