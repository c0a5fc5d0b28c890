"""Padding an input up to a larger bucket: which dynamic dims may be padded, and
how a call is padded and its outputs cut back (docs/shapes.md, "Padding").

A dim may be padded when the program never lets a padded position reach a real
one. `padding_plan` decides it per dim from the dynamic program itself (its
Core ATen graph, with torch's symbolic sizes): padding dim `s` at the end is
safe when every op either

- works position by position (`torch.Tag.pointwise`, broadcasting included),
- only moves values (permute, expand, squeeze, unsqueeze, copies), or a view
  that keeps `s` the outermost factor of the dims it merges or splits (so the
  padded positions stay one block at the end of every dim that carries `s`),
- or reduces, sorts, contracts, gathers or normalizes over dims that do not
  carry `s` (a batched matmul's batch dim, a layer norm's rows, ...),

and no size of `s` is read as a value (`x / x.shape[0]`). A reduction or a
contraction along `s` reads its operand through a hidden validity input
(`MaskSite`, `specialize_masked`); so does a fused attention whose keys carry
`s` (`scaled_dot_product_attention`, as torch's `MultiheadAttention` calls it):
a padded key gets -inf before the softmax, a padded query row is cut. Any other op over a dim carrying `s` (cat,
flip or a slice along it) makes `s` unsafe, and an op the rules do not know makes it unsafe too: the
answer is never a guess. A dim the user vouches for (`--pad-dims seq`: a
sequence whose padding an attention mask hides, or a causal model padded at
the end) skips the op rules; its inputs and outputs must still carry it as a
whole dim. Padded positions are zeros (a padded attention mask masks them), or,
where a max, min, argmax, argmin, cummax, cummin, product, logsumexp or softmax
reads an input along the padded dim through value-preserving moves only, that
op's neutral value (`_NEUTRAL`).
"""

from __future__ import annotations

import math
import operator
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import sympy
import torch
from torch.export import ExportedProgram
from torch.export.graph_signature import InputKind, OutputKind
from torch.utils import _pytree as pytree

from rducc.dialects.contracts import PAD_VALID
from rducc.errors import RduccError
from rducc.frontend.dynamic_dims import DynamicDim, bucket_label

aten = torch.ops.aten


@dataclass
class PadPlan:
    """Which dynamic dims a call may pad, and where each sits in the inputs and outputs."""

    dims: list[str] = field(default_factory=list)
    """The dims that may be padded (by name)."""
    inputs: list[list[str]] = field(default_factory=list)
    """Per user input, per dim: the padded dim it is ("" for none)."""
    outputs: list[list[str]] = field(default_factory=list)
    """Per user output, per dim: the padded dim it carries as its outermost factor ("" for none)."""
    refused: dict[str, str] = field(default_factory=dict)
    """Each dynamic dim that may not be padded, and why."""
    fills: list[str] = field(default_factory=list)
    """Per user input, the value its padded positions hold ("" for zero; else a key of `_NEUTRAL`'s values:
    "-inf", "inf", "1", when its padded dim meets a max, min or product; docs/shapes.md). After the user
    inputs, one `VALID` entry per dim of `masks`: a hidden validity input (`inputs` names its dim)."""
    masks: dict[str, list[MaskSite]] = field(default_factory=dict)
    """Per padded dim, the reductions along it that read a computed value or a parameter: each reads its
    operand through a `where` on the dim's hidden validity input (compile time only, not recorded)."""

    def validity_dims(self) -> list[str]:
        """The dims whose hidden validity input follows the user inputs, in order."""
        return [row[0] for row, fill in zip(self.inputs, self.fills) if fill == VALID]


VALID = PAD_VALID
"""The fill of a hidden validity input (`PadPlan.fills`): true at the real positions of its dim, false
(zero) at the padded ones; made by the caller (`validity_inputs`), never by the user."""


@dataclass(frozen=True)
class MaskSite:
    """A reduction or contraction along a padded dim whose operand is not a user input (or needs a fill no
    padding of the input gives): the node reads `where(valid, operand, fill)`."""

    node: str
    """The reduction's node in the exported graph."""
    dims: tuple[tuple[int, int], ...]
    """(operand dim, inner factor) per masked dim: position i is real when i // inner < the real length."""
    fill: str
    """The value the operand's padded positions are given (a value of `_MASKED`)."""
    operand: tuple[int, ...] = (0,)
    """Where the operand sits in the node's arguments (`(1, 0)`: the first tensor of a list argument)."""


# --------------------------------------------------------------------------
# deciding, per dim
# --------------------------------------------------------------------------


def padding_plan(ep: ExportedProgram, dims: Sequence[DynamicDim], vouched: Iterable[str] = ()) -> PadPlan:
    """Which of `dims` the program lets a call pad (`vouched`: names the user
    vouches for, checked for structure only); the others with the reason."""
    by_alias = {alias: dim for dim in dims for alias in dim.aliases}
    vouched_names = set()
    for name in vouched:
        if name not in by_alias:
            raise RduccError(f"--pad-dims: the program has no dynamic dim '{name}'; its dynamic dims are "
                             f"{', '.join(d.name for d in dims)}")
        vouched_names.add(by_alias[name].name)
    plan = PadPlan()
    mutated = [spec for spec in ep.graph_signature.output_specs
               if spec.kind in (OutputKind.BUFFER_MUTATION, OutputKind.USER_INPUT_MUTATION)]
    reason = "the program updates a buffer or an input in place" if mutated else ""
    graphs = _Graphs(ep)
    names = _user_input_names(ep)
    fills: dict[str, str] = {}
    for dim in dims:
        checked = dim.name not in vouched_names
        wanted: dict[str, str] = {}
        masks: list[MaskSite] = []
        why = reason or _unsafe_reason(graphs, ep, dim, dims, checked, wanted, masks)
        why = why or _fill_conflict(wanted, fills, names, ep, dim, dims, vouched_names)
        if why:
            plan.refused[dim.name] = why
            if dim.name in vouched_names:
                raise RduccError(f"--pad-dims {dim.name}: {why}")
        else:
            plan.dims.append(dim.name)
            fills.update(wanted)
            if masks:
                plan.masks[dim.name] = masks
    plan.fills = [fills.get(name, "") for name in names] + [VALID] * len(plan.masks)
    plan.inputs = [_dim_names(_sizes(value), dims, plan.dims) for value in _user_input_values(ep)]
    plan.inputs += [[name] for name in plan.masks]
    plan.outputs = [_dim_names(_sizes(value), dims, plan.dims) for value in _user_output_values(ep)]
    return plan


def _fill_conflict(wanted: Mapping[str, str], fills: Mapping[str, str], names: Sequence[str], ep: ExportedProgram,
                   dim: DynamicDim, dims: Sequence[DynamicDim], vouched: set[str]) -> str:
    """Why the fills padding `dim` needs clash with those of the dims taken before it
    (or with a dim the user vouched for, whose padding must stay zeros)."""
    values = _user_input_values(ep)
    for name, fill in wanted.items():
        if fills.get(name, fill) != fill:
            return f"needs input {name} padded with {fill}, another padded dim needs {fills[name]}"
        carried = {d.name for d in dims for size in _sizes(values[names.index(name)]) if _has(size, d.symbol)}
        zeros = sorted(carried & vouched)
        if zeros:
            return f"needs input {name} padded with {fill}, but --pad-dims {zeros[0]} pads it with zeros"
    return ""


_UNKNOWN = "is not an op rducc knows keeps padded positions apart"


class _Graphs:
    """The program's graph as exported (ATen ops, read first) and, only when an op
    there is not one the rules know, its Core ATen decomposition (made once)."""

    def __init__(self, ep: ExportedProgram):
        self.exported = ep.graph
        self._ep = ep
        self._core: Any = None
        self.unread = ""

    def core(self) -> Any:
        if self._core is None and not self.unread:
            try:
                self._core = self._ep.run_decompositions().graph
            except Exception as error:  # noqa: BLE001 - any failure only means "do not pad it unvouched"
                first = str(error).strip().splitlines()[0][:160] if str(error).strip() else ""
                self.unread = (f"rducc cannot read its Core ATen graph at symbolic sizes "
                               f"({type(error).__name__}: {first})")
        return self._core


def _graph_reason(graph: Any, symbol: str, inputs: Sequence[str], fills: dict[str, str],
                  masks: list[MaskSite] | None = None) -> str:
    """The first op of `graph` that could let a padded position reach a real one, and why
    (`fills`: set to the fill each input of `inputs` needs for the reductions it meets;
    `masks`: given, gets the reductions of other values, read through a validity mask)."""
    layouts = _Layouts(symbol)
    for node in graph.nodes:
        if node.op != "call_function":
            continue
        why = _op_reason(node, symbol)
        if why.startswith(_ATTENDS) and masks is not None:
            site = _attention_site(node, symbol, layouts)
            masks.extend([site] if site else [])
            why = "" if site else why
        if why.startswith(_IGNORES) and masks is not None:
            sites = _ignored_sites(node, symbol, layouts)
            masks.extend(layouts.masking(node, sites or []))
            why = "" if sites else why
        if why.startswith("contracts") and masks is not None:
            sites = _contraction_sites(node, symbol, layouts)
            masks.extend(layouts.masking(node, sites or []))
            why = "" if sites else why
        if not why and masks is not None:
            masks.extend(layouts.masking(node, _prefix_sites(node, symbol, layouts)))
        if why.startswith("reads across"):
            inside = _index_inside(node, symbol, layouts)  # renumbered through the mask, never filled
            filled = None if inside else _neutral_fill(node, symbol, inputs, fills)
            site = _mask_site(node, symbol, layouts) if filled != "" and masks is not None else None
            if site is not None:
                assert masks is not None
                masks.extend(layouts.masking(node, [site]))
                filled = ""
            why = why if filled is None else filled
        why = why or layouts.step(node)
        if why:
            return f"{_op_name(node)}{_source_line(node)} {why}"
    output = next(n for n in graph.nodes if n.op == "output")
    for index, value in enumerate(output.args[0]):
        for axis, layout in enumerate(layouts.of(value)):
            if not _is_lead(layout, symbol):
                return (f"output {index}'s dim {axis} holds the padded dim inside another "
                        "(its padded positions are not one block at the end)")
    return ""


def _unsafe_reason(graphs: _Graphs, ep: ExportedProgram, dim: DynamicDim, dims: Sequence[DynamicDim],
                   checked: bool, fills: dict[str, str], masks: list[MaskSite]) -> str:
    """Why padding `dim` could change a real result ("" when it cannot); `fills`: set to
    the fill each input needs (by name) where the padded dim meets a max, min or product;
    `masks`: the reductions of computed values along it (read through a validity mask;
    only on the exported graph, whose nodes the bucket's module keeps)."""
    symbol = dim.symbol
    for index, value in enumerate(_user_input_values(ep)):
        for axis, size in enumerate(_sizes(value)):
            if _has(size, symbol) and str(size) != symbol:
                return f"input {index}'s dim {axis} is {_named(size, dims)}, not {dim.name} itself"
    for index, value in enumerate(_user_output_values(ep)):
        for axis, size in enumerate(_sizes(value)):
            if _has(size, symbol) and (_outer_factor(size, symbol) is None or (not checked and str(size) != symbol)):
                return f"output {index}'s dim {axis} is {_named(size, dims)}, not {dim.name} itself"
            others = [d.name for d in dims if d is not dim and _has(size, d.symbol)]
            if _has(size, symbol) and others:
                return f"output {index}'s dim {axis} ({_named(size, dims)}) also carries {', '.join(others)}"
    if not checked:
        return ""
    inputs = _user_input_names(ep)
    why = _graph_reason(graphs.exported, symbol, inputs, fills, masks)
    if why.endswith(_UNKNOWN):  # an op the rules do not know: read its Core ATen decomposition instead
        core = graphs.core()
        fills.clear()
        masks.clear()
        why = graphs.unread if core is None else _graph_reason(core, symbol, inputs, fills)
    return why



def _neutral_fill(node: torch.fx.Node, symbol: str, inputs: Sequence[str], fills: dict[str, str]) -> str | None:
    """"" when `node` reduces along the padded dim of a user input it reaches only
    through value-preserving moves, so that padding that input with the op's neutral
    value keeps its result (recorded in `fills`); why not when the input already
    needs another fill; None when the rule does not apply."""
    target = node.target
    name = target._overloadpacket.__name__ if isinstance(target, torch._ops.OpOverload) else ""
    fill = _NEUTRAL.get(name)
    if name in _NEEDS_DIM and _arg(node, 1, "dim") is None:
        return None
    source = node.args[0] if node.args else None
    while fill is not None and isinstance(source, torch.fx.Node) and source.op == "call_function":
        moved = source.target
        value = _val(source)
        if (not isinstance(moved, torch._ops.OpOverload) or moved._overloadpacket.__name__ not in _KEEPS_VALUES
                or _op_reason(source, symbol) or not _keeps_fill(value, fill)):
            return None
        source = source.args[0]
    if fill is None or not isinstance(source, torch.fx.Node) or source.name not in inputs:
        return None
    if not _keeps_fill(_val(source), fill):
        return None
    if fills.get(source.name, fill) != fill:
        return (f"reads input {source.name} along the padded dim, needing it padded with {fill}; "
                f"another op needs {fills[source.name]}")
    fills[source.name] = fill
    return ""


def _index_inside(node: torch.fx.Node, symbol: str, layouts: _Layouts) -> bool:
    """Whether `node` returns positions (`_INDEXED`) along a dim the padded one sits inside."""
    target = node.target
    name = target._overloadpacket.__name__ if isinstance(target, torch._ops.OpOverload) else ""
    operand = node.args[0] if node.args else None
    if name not in _INDEXED or not isinstance(operand, torch.fx.Node):
        return False
    sizes, laid = _sizes(_val(operand)), layouts.of(operand)
    return any(_has(size, symbol) and not _is_lead(layout, symbol) for size, layout in zip(sizes, laid))


def _mask_site(node: torch.fx.Node, symbol: str, layouts: _Layouts) -> MaskSite | None:
    """The mask that makes `node`'s reduction along the padded dim exact whatever its operand's
    padded positions hold; None when the op is not one `_MASKED` knows (or cannot be masked)."""
    target = node.target
    name = target._overloadpacket.__name__ if isinstance(target, torch._ops.OpOverload) else ""
    fill = _MASKED.get(name)
    operand = node.args[0] if node.args else None
    value = _val(operand)
    if fill is None or not isinstance(operand, torch.fx.Node) or not isinstance(value, torch.Tensor):
        return None
    if name in _SPREADS and (value.is_complex() or not value.dtype.is_floating_point):
        return None
    if name == "linalg_vector_norm" and not _positive_order(node):
        return None
    dims = _masked_axes(operand, symbol, layouts, range(value.dim()))
    return MaskSite(node.name, dims, fill) if dims else None


def _prefix_sites(node: torch.fx.Node, symbol: str, layouts: _Layouts) -> list[MaskSite]:
    """A running op (`_PREFIX`) along a dim the padded one is laid inside (pads between real positions):
    its operand read with the op's neutral value at the pads (`_PREFIX_FILL`), so each real position
    sums, multiplies or compares its real predecessors only; [] along a dim holding the pads at its end
    (they follow every real position) or one a mask cannot follow."""
    target = node.target
    name = target._overloadpacket.__name__ if isinstance(target, torch._ops.OpOverload) else ""
    operand = node.args[0] if node.args else None
    value = _val(operand)
    if name not in _PREFIX_FILL or not isinstance(operand, torch.fx.Node) or not isinstance(value, torch.Tensor):
        return []
    axis = _arg(node, 1, "dim") % max(value.dim(), 1)
    if _is_lead(layouts.of(operand)[axis] if value.dim() else None, symbol):
        return []
    dims = _masked_axes(operand, symbol, layouts, [axis])
    return [MaskSite(node.name, dims, _PREFIX_FILL[name])] if dims else []


def _masked_axes(operand: torch.fx.Node, symbol: str, layouts: _Layouts, axes: Iterable[int]
                 ) -> tuple[tuple[int, int], ...] | None:
    """(axis, inner factor) of each of `axes` carrying the padded dim: position i is padded when
    (i // inner) % the padded size >= the real one (the padded dim outermost, or laid inside an outer
    factor by a view: `[b, s] -> [b*s]`); None when a static inner factor does not say which."""
    sizes, laid = _sizes(_val(operand)), layouts.of(operand)
    dims = []
    for axis in axes:
        size, layout = sizes[axis], laid[axis]
        if not _has(size, symbol):
            continue
        if layout == ANY:
            layout = layouts._lead(size)
        if not isinstance(layout, tuple):
            return None
        at = next((i for i, factor in enumerate(layout) if str(factor) == symbol), None)
        if at is None or at > 1:
            return None
        inner = sympy.Mul(*layout[at + 1:])
        if not inner.is_Integer:
            return None
        dims.append((axis, int(inner)))
    return tuple(dims)


def _contraction_sites(node: torch.fx.Node, symbol: str, layouts: _Layouts) -> list[MaskSite] | None:
    """Masks that zero each operand of a contraction (a matmul, linear or einsum) along the contracted
    dims carrying the padded dim, so its padded positions add nothing (both operands: a pad holding
    inf or nan times zero is nan); None when a contracted dim cannot be masked."""
    contracted = _contracted(node)
    if contracted is None:
        return None
    sites = []
    for path, axes in contracted:
        operand = _at(node.args, path)
        if not isinstance(operand, torch.fx.Node) or not isinstance(_val(operand), torch.Tensor):
            return None
        dims = _masked_axes(operand, symbol, layouts, axes)
        if dims is None:
            return None
        if dims:
            sites.append(MaskSite(node.name, dims, "0", path))
    return sites or None


_ATTENDS = "attends over its keys' dim"


def _attention_reason(node: torch.fx.Node, symbol: str) -> str:
    """aten.scaled_dot_product_attention(q, k, v, attn_mask, ...): its batch and head dims never meet
    and each query row is its own, but every key reaches every query: a padded key dim is read through
    the dim's validity mask (`_attention_site`); the padded dim in a feature dim is refused."""
    args: Any = node.args
    for at, operand in enumerate(args[:3]):
        value = _val(operand)
        rank = value.dim()
        carried = set(_carries(value, symbol)) - set(range(rank - 2))
        if rank - 1 in carried:
            return f"contracts its dim {rank - 1} (features), which carries the padded dim"
        if carried and at > 0:
            return f"{_ATTENDS} ({rank - 2} of its {'key' if at == 1 else 'value'}), which carries the padded dim"
    return ""


def _attention_site(node: torch.fx.Node, symbol: str, layouts: _Layouts) -> MaskSite | None:
    """The mask that hides an attention's padded keys from every query (`_attention_of_real_keys`):
    None when the key and value dims do not hold the padded dim as one block at the end alike."""
    args: Any = node.args
    key, value = args[1], args[2]
    found = [_masked_axes(operand, symbol, layouts, [_val(operand).dim() - 2]) for operand in (key, value)]
    if not found[0] or found[0] != found[1]:
        return None
    return MaskSite(node.name, found[0], ATTENTION, (1,))


_IGNORES = "averages over its targets"


def _cross_entropy_reason(node: torch.fx.Node, symbol: str) -> str:
    """aten.cross_entropy_loss(input, target, weight, reduction, ignore_index, ...): class-index targets
    along the padded dim are read through the validity mask (a padded target is `ignore_index`,
    `_ignored_sites`), for a mean, a sum or a per-position loss (reduction none, laid out as its
    targets: `_Layouts.step`); so are probability targets (`_soft_cross_entropy`); the padded dim among the
    classes is not read here."""
    args: Any = node.args
    source, target = _val(args[0]), _val(args[1])
    classes = 1 if source.dim() > 1 else 0
    if classes in _carries(source, symbol):
        return f"reads across its dim {classes} (classes), which carries the padded dim"
    return f"{_IGNORES}, whose dims carry the padded dim" if _carries(target, symbol) else ""


def _ignored_sites(node: torch.fx.Node, symbol: str, layouts: _Layouts) -> list[MaskSite] | None:
    """A padded target reads as `ignore_index` (no weight, not counted by the mean) and its input row as
    zeros; None when a mask cannot say which positions are padded."""
    args: Any = node.args
    ignore = _arg(node, 4, "ignore_index")
    target = _val(args[1])
    soft = target.dtype.is_floating_point  # probabilities: the target has the input's shape, classes and all
    axes = [axis for axis in range(target.dim()) if not (soft and axis == 1)]
    target_dims = _masked_axes(args[1], symbol, layouts, axes)
    source_axes = axes if soft else [axis if axis == 0 else axis + 1 for axis in axes]
    source_dims = _masked_axes(args[0], symbol, layouts, [a for a in source_axes if a < _val(args[0]).dim()])
    if not target_dims or source_dims is None:
        return None
    fill = SOFT_TARGETS if soft else str(-100 if ignore is None else ignore)
    sites = [MaskSite(node.name, target_dims, fill, (1,))]
    return sites + ([MaskSite(node.name, source_dims, "0", (0,))] if source_dims else [])


SOFT_TARGETS = "soft"
"""The `MaskSite.fill` of a cross entropy with probability targets along a padded dim: the per-position
losses of the real positions only, summed or averaged over their count (`_soft_cross_entropy`)."""
ATTENTION = "keys"
"""The `MaskSite.fill` of an attention whose padded keys the validity mask hides (`_attention_of_real_keys`)."""


def _contracted(node: torch.fx.Node) -> list[tuple[tuple[int, ...], list[int]]] | None:
    """Per operand of a contraction, where it sits in the arguments and the dims it contracts; None
    for another op."""
    target = node.target
    name = target._overloadpacket.__name__ if isinstance(target, torch._ops.OpOverload) else ""
    args: Any = node.args
    if name in _CONTRACTS:
        first = 1 if name in ("addmm", "baddbmm", "addmv") else 0
        return [((first + i,), list(axes)) for i, axes in enumerate(_CONTRACTS[name])]
    if name == "matmul":
        left, right = _val(args[0]).dim(), _val(args[1]).dim()
        return [((0,), [left - 1]), ((1,), [max(right - 2, 0)])]
    if name == "linear":
        return [((0,), [_val(args[0]).dim() - 1]), ((1,), [_val(args[1]).dim() - 1])]
    if name == "einsum":
        terms = _einsum_terms(node)
        if terms is None:
            return None
        ins, out = terms
        return [((1, i), [axis for axis, letter in enumerate(term) if letter not in out])
                for i, term in enumerate(ins)]
    return None


def _einsum_terms(node: torch.fx.Node) -> tuple[list[str], str] | None:
    """An einsum's operand subscripts and its output's (implicit output spelled out, `...` spelled as
    letters the equation does not use); None when an operand's rank is not known."""
    args: Any = node.args
    equation = str(args[0]).replace(" ", "")
    ins_text, arrow, out = equation.partition("->")
    ins = ins_text.split(",")
    values = [_val(operand) for operand in args[1]]
    ranks = [value.dim() for value in values if isinstance(value, torch.Tensor)]
    if "..." in equation:
        if len(ranks) != len(ins):
            return None
        spare = [c for c in "ABCDEFGHIJKLMNOPQRSTUVWXYZ" if c not in equation]
        widths = [rank - len(term.replace("...", "")) for term, rank in zip(ins, ranks) if "..." in term]
        batch = "".join(spare[: max(widths)])
        ins = [term.replace("...", batch[len(batch) - rank + len(term) - 3:]) if "..." in term else term
               for term, rank in zip(ins, ranks)]
        out = out.replace("...", batch) if arrow else batch
    if not arrow:
        letters = "".join(ins)
        out += "".join(sorted(c for c in set(letters) if letters.count(c) == 1 and c not in out))
    return ins, out


def _at(args: Sequence[Any], path: tuple[int, ...]) -> Any:
    """The argument at `path` (an index, then an index into a list argument)."""
    value: Any = args
    for index in path:
        value = value[index]
    return value


def _replaced(args: Sequence[Any], path: tuple[int, ...], new: Any) -> Any:
    """`args` with the argument at `path` replaced by `new`."""
    items = list(args)
    items[path[0]] = new if len(path) == 1 else _replaced(items[path[0]], path[1:], new)
    return tuple(items) if isinstance(args, tuple) else items


def _positive_order(node: torch.fx.Node) -> bool:
    """A vector norm whose order is above 0 (|0| adds nothing to it)."""
    order = _arg(node, 1, "ord")
    return order is None or (isinstance(order, int | float) and order > 0)


def _arg(node: torch.fx.Node, index: int, name: str) -> Any:
    """`node`'s argument at `index` or by `name` (None when not given)."""
    return node.args[index] if len(node.args) > index else node.kwargs.get(name)


def _keeps_fill(value: Any, fill: str) -> bool:
    """A tensor of a dtype that holds `fill` (+-inf only in floating dtypes)."""
    return isinstance(value, torch.Tensor) and (fill == "1" or value.dtype.is_floating_point)


def _source_line(node: torch.fx.Node) -> str:
    trace = node.meta.get("stack_trace") or ""
    lines = [line.strip() for line in trace.strip().splitlines() if line.strip().startswith("File ")]
    if not lines:
        return ""
    parts = lines[-1].split('"')
    line = lines[-1].split("line ")[-1].split(",")[0] if "line " in lines[-1] else "?"
    return f" (at {parts[1].rsplit('/', 1)[-1]}:{line})" if len(parts) > 1 else ""


def _op_name(node: torch.fx.Node) -> str:
    target = node.target
    return f"aten.{target._overloadpacket.__name__}" if isinstance(target, torch._ops.OpOverload) else str(target)


# --------------------------------------------------------------------------
# sizes
# --------------------------------------------------------------------------


def _expr(size: Any) -> Any:
    """A size as a sympy expression (an int as it is)."""
    if isinstance(size, torch.SymInt):
        return size.node.expr
    return size


def _sizes(value: Any) -> list[Any]:
    return [_expr(s) for s in value.shape] if isinstance(value, torch.Tensor) else []


def _has(size: Any, symbol: str) -> bool:
    return isinstance(size, sympy.Basic) and symbol in {str(s) for s in size.free_symbols}


def _outer_factor(size: Any, symbol: str) -> Any:
    """K where `size` is symbol*K and K does not read the symbol; else None."""
    sym = next(s for s in size.free_symbols if str(s) == symbol)
    factor = sympy.simplify(size / sym)
    if sym in factor.free_symbols or not factor.is_polynomial() or factor.as_numer_denom()[1] != 1:
        return None
    return factor


def _named(size: Any, dims: Sequence[DynamicDim]) -> str:
    text = str(size)
    for dim in sorted(dims, key=lambda d: -len(d.symbol)):
        text = text.replace(dim.symbol, dim.name)
    return text


def _dim_names(sizes: Sequence[Any], dims: Sequence[DynamicDim], padded: Sequence[str]) -> list[str]:
    names = []
    for size in sizes:
        carried = [d.name for d in dims if d.name in padded and _has(size, d.symbol)]
        names.append(carried[0] if len(carried) == 1 else "")
    return names


def _user_input_values(ep: ExportedProgram) -> list[Any]:
    nodes = {n.name: n for n in ep.graph.nodes if n.op == "placeholder"}
    return [nodes[spec.arg.name].meta.get("val") for spec in ep.graph_signature.input_specs
            if spec.kind == InputKind.USER_INPUT and getattr(spec.arg, "name", None) in nodes]


def _user_input_names(ep: ExportedProgram) -> list[str]:
    """The placeholder names of the user inputs, in order."""
    nodes = {n.name for n in ep.graph.nodes if n.op == "placeholder"}
    return [spec.arg.name for spec in ep.graph_signature.input_specs
            if spec.kind == InputKind.USER_INPUT and getattr(spec.arg, "name", None) in nodes]


def _user_output_values(ep: ExportedProgram) -> list[Any]:
    output = next(n for n in ep.graph.nodes if n.op == "output")
    values = output.args[0]
    return [v.meta.get("val") if isinstance(v, torch.fx.Node) else v
            for v, spec in zip(values, ep.graph_signature.output_specs) if spec.kind == OutputKind.USER_OUTPUT]


# --------------------------------------------------------------------------
# the op rules
# --------------------------------------------------------------------------

_MOVES = {"permute", "transpose", "t", "unsqueeze", "squeeze", "expand", "expand_as", "dropout", "clone",
          "_to_copy", "alias", "detach",
          "lift_fresh_copy", "copy", "contiguous", "_assert_tensor_metadata", "to", "type_as", "full_like",
          "zeros_like", "ones_like", "empty_like", "_native_batch_norm_legit_no_training"}
"""Ops that only move, copy or cast values (no position reads another)."""
_VIEWS = {"view", "_unsafe_view", "reshape", "flatten", "unflatten", "view_as", "reshape_as"}
_CREATES = {"full", "zeros", "ones", "empty", "arange", "scalar_tensor", "new_zeros", "new_ones", "new_full",
            "new_empty", "empty_strided"}
_BY_INDEX = {"triu", "tril"}
"""Ops whose every position reads only itself and its own indices (a causal mask's triu), which padding
at the end leaves as they are (`_Layouts.step` still wants the padded dims outermost)."""
_NEUTRAL = {"amax": "-inf", "max": "-inf", "amin": "inf", "min": "inf", "prod": "1", "logsumexp": "-inf",
            "softmax": "-inf", "_softmax": "-inf", "log_softmax": "-inf", "_log_softmax": "-inf",
            "argmax": "-inf", "argmin": "inf", "cummax": "-inf", "cummin": "inf"}
"""Ops along a padded dim that padded positions holding this value leave exact (max(x, -inf) = x,
x * 1 = x, exp(-inf) = 0; argmax never picks a -inf pad after the real positions, as the first of
tied maxima wins; a running max at a real position never reads a later pad): the one table of the
fills a padded input may get."""
_SPREADS = {"var", "std", "var_mean", "std_mean"}
"""Spreads: the masked second moment about the masked mean, over the real count less the correction."""
_COUNTED = {"mean", *_SPREADS}
"""Reductions whose result also reads the count of real positions (`_counted_reduction`)."""
_MASKED = {**_NEUTRAL, "sum": "0", "nansum": "0", "count_nonzero": "0", "any": "0", "all": "1",
           "linalg_vector_norm": "0", **dict.fromkeys(_COUNTED, "0")}
"""Reductions along a padded dim of a computed value or a parameter, which read their operand through
`where(valid, operand, fill)` (a hidden validity input): the value the padded positions get; those of
`_COUNTED`, and an argmax or argmin over every dim (an index into the flattened real positions), are
computed from the masked operand and the mask (`_counted_reduction`). The one table of what a validity
mask makes exact."""
_RUNNING_INDICES = {"cummax", "cummin"}
"""Running ops that return positions along their dim: through a mask (`_prefix_sites`) each is renumbered
among the real positions (`_running_indexed`)."""
_INDEXED = {"argmax", "argmin", "max", "min"}
"""Reductions of `_MASKED` that return positions along the reduced dim: through a mask, each position is
renumbered among the real ones (`_indexed_reduction`), wherever the padded positions sit."""
_PREFIX = {"cumsum", "cumprod", "logcumsumexp", "cummax", "cummin"}
"""Ops along a dim whose position i reads positions 0..i only: the pads at the end reach no real one."""
_PREFIX_FILL = {"cumsum": "0", "cumprod": "1", "logcumsumexp": "-inf", "cummax": "-inf", "cummin": "inf"}
"""The value a running op's pads get where they sit between real positions (`_prefix_sites`): one that
leaves every running result exact (x + 0, x * 1, exp(-inf) = 0; a running max never picks a -inf pad
over a real position after it, as a tie moves the index to the later position)."""
_NEEDS_DIM = {"argmax", "argmin"}
"""Ops of `_NEUTRAL` whose result without a `dim` (an index into the flattened input) counts the
padded positions: padded only along a named dim."""
_KEEPS_VALUES = {"permute", "transpose", "t", "unsqueeze", "squeeze", "expand", "expand_as", "clone", "_to_copy",
                 "alias", "detach", "lift_fresh_copy", "contiguous", "to", "type_as", "slice", "select", "narrow",
                 *_VIEWS}
"""Ops whose every output position holds the value of one input position (args[0]'s): a fill passes through."""
_SIZE_ARGS = {"size", "shape", "end", "stride"}
"""Arguments a size may be given to (a shape, or arange's end: position i holds i either way)."""
_ALONG_DIM = {"amax", "amin", "sum", "mean", "prod", "var", "var_mean", "std", "std_mean", "argmax", "argmin",
              "max", "min", "any", "all", "_softmax", "_log_softmax", "softmax", "log_softmax", "cumsum",
              "cumprod", "cummax", "cummin", "logcumsumexp", "sort", "topk", "logsumexp", "linalg_vector_norm",
              "norm", "median", "mode", "kthvalue", "flip", "cat", "stack", "index_select", "gather", "scatter",
              "scatter_add", "scatter_reduce", "select_scatter", "slice_scatter", "narrow", "split",
              "split_with_sizes", "unbind", "roll", "nansum", "count_nonzero", "aminmax", "select", "slice",
              "unfold", "diff", "repeat_interleave", "chunk",
              "tensor_split", "argsort", "nanmean", "cumulative_trapezoid"}
"""Ops that read or reorder positions along the dims their `dim`/`dims` names (all dims when None)."""
_CONTRACTS = {"mm": ((1,), (0,)), "addmm": ((1,), (0,)), "bmm": ((2,), (1,)), "baddbmm": ((2,), (1,)),
              "dot": ((0,), (0,)), "mv": ((1,), (0,)), "addmv": ((1,), (0,))}
"""Matmuls: the dims of their two matrix operands they contract."""
_WHOLE_BATCH_ONLY = {"convolution", "max_pool2d_with_indices", "max_pool3d_with_indices", "avg_pool2d",
                     "avg_pool3d", "_adaptive_avg_pool2d", "adaptive_avg_pool2d", "_adaptive_avg_pool3d",
                     "upsample_nearest2d", "upsample_bilinear2d", "native_group_norm", "_native_batch_norm_legit",
                     "_native_batch_norm_legit_functional", "_scaled_dot_product_flash_attention_for_cpu",
                     "scaled_dot_product_attention", "_scaled_dot_product_efficient_attention",
                     "max_pool1d", "avg_pool1d", "adaptive_max_pool2d", "pixel_shuffle", "conv1d", "conv2d",
                     "conv3d", "group_norm", "max_pool2d", "adaptive_avg_pool1d", "instance_norm"}
"""Ops whose samples (dim 0; the heads of an attention too) never meet, and whose other dims mix."""
def _linear_reason(node: torch.fx.Node, symbol: str) -> str:
    """aten.linear(x, w, b): contracts x's last dim; any padded dim of w is read whole."""
    args: Any = node.args
    source = _val(args[0])
    why = _mixes(_carries(source, symbol), [source.dim() - 1], "contracts")
    return why or ("reads a padded weight" if _carries(_val(args[1]), symbol) else "")


def _matmul_reason(node: torch.fx.Node, symbol: str) -> str:
    """aten.matmul(a, b): contracts a's last dim and b's second to last (its only, when 1-D)."""
    args: Any = node.args
    left, right = _val(args[0]), _val(args[1])
    why = _mixes(_carries(left, symbol), [left.dim() - 1], "contracts")
    return why or _mixes(_carries(right, symbol), [max(right.dim() - 2, 0)], "contracts")


def _batch_norm_reason(node: torch.fx.Node, symbol: str) -> str:
    """aten.batch_norm: with running statistics (eval) each channel's values alone; training reads the batch."""
    args: Any = node.args
    training = args[5] if len(args) > 5 else node.kwargs.get("training", False)
    source = _val(args[0])
    mixed = [d for d in range(source.dim()) if d != 1] if training else []
    return _mixes(_carries(source, symbol), mixed, "normalizes over")


def _einsum_reason(node: torch.fx.Node, symbol: str) -> str:
    """aten.einsum: contracts the dims whose letter the output lacks; a letter repeated in one
    operand (a diagonal) of a padded dim is not read here (its Core ATen graph is)."""
    terms = _einsum_terms(node)
    if terms is None:
        return _UNKNOWN
    ins, out = terms
    operands: Any = node.args[1]
    for term, operand in zip(ins, operands):
        for axis in _carries(_val(operand), symbol):
            if term.count(term[axis]) > 1:
                return f"reads the diagonal of its dim {axis}, which carries the padded dim"
            if term[axis] not in out:
                return f"contracts its dim {axis}, which carries the padded dim"
    return ""


_HIGHER_LEVEL = {"linear": _linear_reason, "matmul": _matmul_reason, "batch_norm": _batch_norm_reason,
                 "einsum": _einsum_reason}
"""Ops of an exported (not yet decomposed) program, read directly so no decomposition is needed."""

_SYMBOLIC_ONLY: set[Any] = {operator.mul, operator.add, operator.sub, operator.floordiv, operator.mod,
                             operator.truediv, operator.neg, operator.pow, operator.eq, operator.ne, operator.lt,
                             operator.le, operator.gt, operator.ge, operator.getitem, torch.sym_float, torch.sym_int,
                             torch.sym_max, torch.sym_min, torch.sym_not, torch.sym_sqrt}
"""Size arithmetic and tuple reads: their uses are what is checked."""
_SYMBOLIC_ATEN = {"sym_size", "sym_numel", "sym_stride", "sym_storage_offset", "_assert_scalar",
                  "sym_constrain_range_for_size", "sym_constrain_range", "_assert_async"}


def _carries(value: Any, symbol: str) -> list[int]:
    """The dims of a tensor value whose size reads `symbol`."""
    return [i for i, s in enumerate(_sizes(value)) if _has(s, symbol)]


def _val(arg: Any) -> Any:
    return arg.meta.get("val") if isinstance(arg, torch.fx.Node) else None


def _op_reason(node: torch.fx.Node, symbol: str) -> str:
    """Why `node` could let a padded position of `symbol` reach a real one ("" when it cannot)."""
    target = node.target
    value = node.meta.get("val")
    if target in _SYMBOLIC_ONLY or (isinstance(target, torch._ops.OpOverload)
                                    and target._overloadpacket.__name__ in _SYMBOLIC_ATEN):
        return ""  # size arithmetic: its uses are checked where they read it
    for out in (value if isinstance(value, tuple | list) else [value]):
        for size in _sizes(out):
            if _has(size, symbol) and _outer_factor(size, symbol) is None:
                return f"makes a dim of size {size} (the padded size is not its outermost factor)"
    bad_use = _size_as_value(node, symbol)
    if bad_use:
        return bad_use
    inputs = [a for a in _tensor_args(node) if _carries(_val(a), symbol)]
    if not inputs:
        return ""
    if not isinstance(target, torch._ops.OpOverload):
        return _UNKNOWN
    name = target._overloadpacket.__name__
    if _is_pointwise(target) or name in _MOVES or name in _CREATES or name in _BY_INDEX:
        return ""
    if name in _VIEWS:
        return ""  # the layout walk (`_Layouts.step`) decides views
    if name in _CONTRACTS:
        return _contract_reason(node, name, symbol)
    args: Any = node.args
    if name in _HIGHER_LEVEL:
        return _HIGHER_LEVEL[name](node, symbol)
    if name == "scaled_dot_product_attention":
        return _attention_reason(node, symbol)
    if name == "cross_entropy_loss":
        return _cross_entropy_reason(node, symbol)
    if name in ("native_layer_norm", "layer_norm"):
        normalized = len(args[1])
        rank = len(_val(node.args[0]).shape)
        return _mixes(_carries(_val(node.args[0]), symbol), range(rank - normalized, rank), "normalizes over")
    if name == "embedding":
        return "indexes rows of a padded table" if _carries(_val(node.args[0]), symbol) else ""
    if name in ("index", "index_put"):
        return _index_reason(node, symbol)
    if name == "constant_pad_nd":
        pads = list(args[1])
        rank = len(_val(node.args[0]).shape)
        padded = [rank - 1 - i // 2 for i, p in enumerate(pads) if p != 0]
        return _mixes(_carries(_val(node.args[0]), symbol), padded, "pads")
    if name in _WHOLE_BATCH_ONLY:
        for arg in inputs:  # attention: every dim but the last two (query/key positions, features) is a batch dim
            rank = _val(arg).dim()
            keep = set(range(rank - 2)) if "attention" in name else {0}
            if set(_carries(_val(arg), symbol)) - keep:
                return "mixes positions of the padded dim (only its batch dim may be padded)"
        return ""
    if name in _ALONG_DIM:
        return _along_dim_reason(node, symbol)
    return _UNKNOWN


def _is_pointwise(target: torch._ops.OpOverload) -> bool:
    """A pointwise op (`torch.Tag.pointwise`), or the in-place form of one (`masked_fill_`, whose
    tags torch leaves off: those of its functional overload)."""
    if torch.Tag.pointwise in target.tags:
        return True
    name = target._overloadpacket.__name__
    functional = getattr(getattr(torch.ops.aten, name[:-1], None), target._overloadname, None) \
        if name.endswith("_") and not name.startswith("_") else None
    return isinstance(functional, torch._ops.OpOverload) and torch.Tag.pointwise in functional.tags


def _tensor_args(node: torch.fx.Node) -> list[torch.fx.Node]:
    found: list[torch.fx.Node] = []
    for arg in [*node.args, *node.kwargs.values()]:
        for leaf in arg if isinstance(arg, list | tuple) else [arg]:
            if isinstance(leaf, torch.fx.Node) and isinstance(_val(leaf), torch.Tensor):
                found.append(leaf)
    return found


def _size_as_value(node: torch.fx.Node, symbol: str) -> str:
    """A size reading `symbol` given to the op as a value (not a shape)."""
    target = node.target
    schema = target._schema if isinstance(target, torch._ops.OpOverload) else None
    names = [a.name for a in schema.arguments] if schema else []
    bound = list(zip(names, node.args)) + list(node.kwargs.items())
    for name, arg in bound:
        for leaf in arg if isinstance(arg, list | tuple) else [arg]:
            value = _val(leaf)
            if isinstance(value, torch.SymInt | torch.SymFloat | torch.SymBool) and _has(_expr(value), symbol):
                allowed = name in _SIZE_ARGS
                if not allowed:
                    return f"reads the padded size as a value ({name} = {_expr(value)})"
    return ""


def _mixes(carried: Sequence[int], mixed: Iterable[int], verb: str) -> str:
    hit = sorted(set(carried) & set(mixed))
    return f"{verb} its dim {hit[0]}, which carries the padded dim" if hit else ""


def _along_dim_reason(node: torch.fx.Node, symbol: str) -> str:
    target = node.target
    assert isinstance(target, torch._ops.OpOverload)
    names = [a.name for a in target._schema.arguments]
    defaults = {a.name: a.default_value for a in target._schema.arguments if a.has_default_value()}
    bound: dict[str, Any] = defaults | dict(zip(names, node.args)) | dict(node.kwargs)  # unbind's dim=0
    name = target._overloadpacket.__name__
    first = bound.get(names[0])
    sources = first if isinstance(first, list | tuple) else [first]
    dim_arg = bound.get("dim", bound.get("dims", None if ("dim" in names or "dims" in names) else "all"))
    if (name == "slice" and _slice_is_whole(bound, symbol)) or name in _PREFIX:
        return ""
    for source in sources:
        value = _val(source)
        if not isinstance(value, torch.Tensor):
            continue
        rank = max(value.dim(), 1)
        if dim_arg in (None, "all") or dim_arg == []:
            mixed: list[int] = list(range(rank))
        else:
            mixed = [d % rank for d in (dim_arg if isinstance(dim_arg, list | tuple) else [dim_arg])]
        why = _mixes(_carries(value, symbol), mixed, "reads across")
        if why:
            return why
    return ""


def _slice_is_whole(bound: Mapping[str, Any], symbol: str) -> bool:
    """A slice along a padded dim that keeps all of it (`x[:, :]`)."""
    value = _val(bound.get("self"))
    if not isinstance(value, torch.Tensor):
        return False
    dim = bound.get("dim", 0) % value.dim()
    start, step, end = bound.get("start"), bound.get("step", 1), bound.get("end")
    size = _expr(value.shape[dim])
    end_value = _expr(_val(end)) if isinstance(end, torch.fx.Node) else end
    whole_end = end_value is None or (isinstance(end_value, int) and end_value >= 2**62) or end_value == size
    return start in (None, 0) and step in (None, 1) and bool(whole_end)


def _contract_reason(node: torch.fx.Node, name: str, symbol: str) -> str:
    left_dims, right_dims = _CONTRACTS[name]
    operands = node.args[1:3] if name in ("addmm", "baddbmm", "addmv") else node.args[:2]
    for operand, contracted in zip(operands, (left_dims, right_dims)):
        why = _mixes(_carries(_val(operand), symbol), contracted, "contracts")
        if why:
            return why
    return ""


def _index_reason(node: torch.fx.Node, symbol: str) -> str:
    args: Any = node.args
    source, indices = args[0], args[1]
    indexed = [i for i, index in enumerate(indices) if index is not None]
    why = _mixes(_carries(_val(source), symbol), indexed, "indexes")
    if why:
        return why
    if node.target._overloadpacket.__name__ == "index_put":  # type: ignore[union-attr]
        if any(_carries(_val(i), symbol) for i in indices if i is not None):
            return "writes at padded indices"
    return ""


# --------------------------------------------------------------------------
# layouts: where a padded dim's positions sit inside the dims that carry it
# --------------------------------------------------------------------------

_FILLS = {"full", "zeros", "ones", "empty", "new_zeros", "new_ones", "new_full", "new_empty", "full_like",
          "zeros_like", "ones_like", "empty_like", "scalar_tensor", "empty_strided"}
ANY = "any"
"""A dim whose values do not depend on the position along it (a broadcast, a fill): any layout fits it."""
Layout = tuple[Any, ...] | str | None
"""A dim's factors, outermost first (`(s, 8)`: the padded dim outermost, its padded positions one block
at the end; `(seq, s)`: inside another), ANY, or None for a dim that does not carry the padded dim."""


def _is_lead(layout: Layout, symbol: str) -> bool:
    return layout is None or layout == ANY or (isinstance(layout, tuple) and str(layout[0]) == symbol)


def _divides(whole: Any, part: Any) -> Any:
    """whole / part when it is a whole product (no denominator), else None."""
    ratio = sympy.simplify(sympy.sympify(whole) / sympy.sympify(part))
    return ratio if ratio.as_numer_denom()[1] == 1 else None


class _Layouts:
    """Each value's layout per dim along a graph (`step`, one node at a time). Position
    by position the padded and the real program agree when the padded dim is each
    dim's outermost factor; a view may lay it inside another dim (a linear over
    `[seq, batch, h]` merges `seq*batch` rows) as long as nothing but row-wise ops
    read that dim until a view lays it outermost again."""

    def __init__(self, symbol: str):
        self.symbol = symbol
        self.known: dict[torch.fx.Node, Any] = {}
        self.masked: dict[torch.fx.Node, dict[Any, set[int]]] = {}
        """Per node, the dims of each operand it reads through a validity mask (any layout: the mask
        follows the padded dim wherever a view laid it)."""

    def masking(self, node: torch.fx.Node, sites: Sequence[MaskSite]) -> Sequence[MaskSite]:
        """`sites` (masks of `node`'s operands), noted so `step` lets those dims be laid inside others."""
        for site in sites:
            axes = self.masked.setdefault(node, {}).setdefault(_at(node.args, site.operand), set())
            axes.update(axis for axis, _ in site.dims)
        return sites

    def _lead_but_masked(self, node: torch.fx.Node, arg: Any, axes: Iterable[int] | None = None) -> bool:
        """Whether `arg`'s dims (of `axes`; all when None) hold the padded dim outermost, but for those
        `node` reads through a validity mask."""
        laid = self.of(arg)
        masked = self.masked.get(node, {}).get(arg, set())
        return all(_is_lead(laid[axis], self.symbol) or axis in masked
                   for axis in (range(len(laid)) if axes is None else axes))

    def of(self, arg: Any) -> list[Layout]:
        """The layouts of a value (a node's tensor), by dim."""
        if isinstance(arg, torch.fx.Node) and arg in self.known:
            found = self.known[arg]
            return found if isinstance(found, list) else []
        return self._default(_val(arg))

    def _default(self, value: Any) -> list[Layout]:
        """A value nothing was recorded for: the padded dim outermost in each dim carrying it."""
        return [self._lead(size) for size in _sizes(value)] if isinstance(value, torch.Tensor) else []

    def _lead(self, size: Any) -> Layout:
        if not _has(size, self.symbol):
            return None
        sym = next(s for s in size.free_symbols if str(s) == self.symbol)
        return _normal([sym, sympy.simplify(size / sym)], self.symbol)

    def step(self, node: torch.fx.Node) -> str:
        """Record `node`'s layouts; why not, when its op reads a dim laid out inside another."""
        target, value = node.target, node.meta.get("val")
        if target is operator.getitem:
            source = self.known.get(node.args[0]) if isinstance(node.args[0], torch.fx.Node) else None
            if isinstance(source, tuple):
                self.known[node] = source[node.args[1]]  # type: ignore[index]
            return ""
        name = target._overloadpacket.__name__ if isinstance(target, torch._ops.OpOverload) else ""
        if name in _PREFIX and isinstance(node.args[0], torch.fx.Node):
            return self._running(node, value)
        if isinstance(value, tuple | list):
            self.known[node] = tuple(self._default(v) for v in value)
            return self._all_lead(node)
        if not isinstance(value, torch.Tensor):
            return ""
        args: Any = node.args
        first = self.of(args[0]) if args and isinstance(args[0], torch.fx.Node) else []
        out_sizes = _sizes(value)
        if name in _VIEWS:
            laid = self._view(first, _sizes(_val(args[0])), out_sizes)
            if laid is None:
                return "reshapes the padded dim across dims it cannot follow"
            self.known[node] = laid
            return ""
        moved = self._moved(name, node, first, len(out_sizes))
        if moved is not None:
            self.known[node] = moved
            return ""
        if isinstance(target, torch._ops.OpOverload) and _is_pointwise(target):
            return self._pointwise(node, out_sizes)
        if name in ("mm", "addmm", "linear"):
            rows, cols = (args[1], args[2]) if name == "addmm" else (args[0], args[1])
            left = self.of(rows)
            if not (self._lead_but_masked(node, rows, range(len(left))[-1:]) and self._lead_but_masked(node, cols)):
                return "contracts a dim laid out inside another"
            self.known[node] = [*left[:-1], None] if name == "linear" else [left[0], self.of(cols)[-1]]
            return ""
        if name == "cross_entropy_loss" and value.dim() == _val(args[1]).dim():
            self.known[node] = self.of(args[1])  # a per-position loss (reduction none): its targets' layout
            return self._all_lead(node)
        if name == "cross_entropy_loss" and value.dim() and value.dim() == _val(args[1]).dim() - 1:
            laid = self.of(args[1])  # per position of probability targets: their layout less the classes
            self.known[node] = [laid[0], *laid[2:]]
            return self._all_lead(node)
        fill = name in _FILLS  # every position the same value: any layout fits
        if not fill:
            why = self._all_lead(node)
            if why:
                return why
        self.known[node] = [ANY if fill and _has(size, self.symbol) else layout
                            for size, layout in zip(out_sizes, self._default(value))]
        return ""

    def _running(self, node: torch.fx.Node, value: Any) -> str:
        """A running op (`_PREFIX`): position by position its operand's layout (values and indices alike),
        when its dim holds the pads at its end or is read through a validity mask."""
        source: Any = node.args[0]
        laid = self.of(source)
        axis = _arg(node, 1, "dim") % max(len(laid), 1)
        if laid and not self._lead_but_masked(node, source, [axis]):
            return "runs along a dim whose padded positions a view laid inside another dim"
        self.known[node] = tuple(list(laid) for _ in value) if isinstance(value, tuple | list) else list(laid)
        return ""

    def _all_lead(self, node: torch.fx.Node) -> str:
        for arg in _tensor_args(node):
            if not self._lead_but_masked(node, arg):
                return "reads a dim whose padded positions a view laid inside another dim"
        return ""

    def _moved(self, name: str, node: torch.fx.Node, first: list[Layout], rank: int) -> list[Layout] | None:
        """The layouts after an op that only moves or copies values; None for another op."""
        args: Any = node.args
        if name in ("clone", "_to_copy", "alias", "detach", "lift_fresh_copy", "contiguous", "to", "type_as",
                    "dropout", "_native_batch_norm_legit_no_training", "native_layer_norm", "layer_norm",
                    "_softmax", "_log_softmax", "softmax", "log_softmax") and len(first) == rank:
            return list(first)  # the norms and softmaxes read across other dims (checked in `_op_reason`)
        if name == "permute":
            return [first[d] for d in args[1]]
        if name in ("transpose", "t"):
            laid = list(first)
            a, b = (args[1] % rank, args[2] % rank) if name == "transpose" else (0, rank - 1)
            laid[a], laid[b] = laid[b], laid[a]
            return laid
        if name == "unsqueeze":
            laid = list(first)
            laid.insert(args[1] % rank, None)
            return laid
        if name == "squeeze":
            sizes = _sizes(_val(args[0]))
            kept = [layout for layout, size in zip(first, sizes) if size != 1]
            return kept if len(kept) == rank else None
        if name in ("expand", "expand_as"):
            sizes = _sizes(_val(args[0]))
            pad = rank - len(first)
            return [ANY if i < pad or sizes[i - pad] == 1 else first[i - pad] for i in range(rank)]
        return None

    def _pointwise(self, node: torch.fx.Node, out_sizes: list[Any]) -> str:
        """Broadcast inputs must lay each padded dim out alike."""
        rank = len(out_sizes)
        laid: list[Layout] = [None] * rank
        for arg in _tensor_args(node):
            layouts, sizes = self.of(arg), _sizes(_val(arg))
            for i, (layout, size) in enumerate(zip(layouts, sizes)):
                at = rank - len(layouts) + i
                if size == 1 or layout is None:
                    continue
                if laid[at] in (None, ANY):
                    laid[at] = layout
                elif layout != ANY and layout != laid[at]:
                    return "combines values whose padded positions are laid out differently"
        self.known[node] = laid
        return ""

    def _view(self, first: list[Layout], before: list[Any], after: list[Any]) -> list[Layout] | None:
        """The layouts after a view (row-major), or None when a dim carrying the
        padded dim is split where its factors cannot follow."""
        factors: list[Any] = []
        for layout, size in zip(first, before):
            if isinstance(layout, tuple):
                factors += list(layout)
            elif layout == ANY:
                factors += list(self._lead(size) or (size,))
            elif size != 1:
                factors.append(size)
        laid: list[Layout] = []
        for size in after:
            taken: list[Any] = []
            need = sympy.sympify(size)
            while need != 1:
                if not factors:
                    return None
                factor = factors.pop(0)
                rest = _divides(need, factor)
                if rest is not None:
                    taken.append(factor)
                    need = rest
                    continue
                if _has(factor, self.symbol) and str(factor) != self.symbol:
                    return None
                if str(factor) == self.symbol or _divides(factor, need) is None:
                    return None
                taken.append(need)  # split a factor that does not carry the padded dim
                factors.insert(0, _divides(factor, need))
                need = sympy.Integer(1)
            laid.append(_normal(taken, self.symbol) if any(_has(f, self.symbol) for f in taken) else None)
        return laid if all(sympy.sympify(f) == 1 for f in factors) else None


def _normal(factors: Sequence[Any], symbol: str) -> tuple[Any, ...]:
    """A layout as (the product of the factors outside it, the padded dim, the product
    inside it), ones left out: the layouts that place real positions alike compare equal."""
    at = next(i for i, f in enumerate(factors) if str(f) == symbol)
    outer, inner = sympy.Mul(*factors[:at]), sympy.Mul(*factors[at + 1:])
    return tuple(f for f in (outer, factors[at], inner) if f != 1)


# --------------------------------------------------------------------------
# masked reductions: the bucket's program with its hidden validity inputs
# --------------------------------------------------------------------------


def specialize_masked(ep: ExportedProgram, dims: Sequence[DynamicDim], values: Mapping[str, int],
                      plan: PadPlan) -> ExportedProgram:
    """The program at one bucket's sizes (as `specialize`), each reduction of `plan.masks`
    reading its operand through its dim's validity input, which follow the user inputs
    (flattened): `where(valid, operand, neutral)`."""
    from rducc.frontend.dynamic_dims import check_bucket, concrete_inputs
    from rducc.frontend.loader import export_model

    check_bucket(ep, dims, values)
    args, kwargs = concrete_inputs(ep, dims, values)
    flat = pytree.tree_leaves((args, kwargs))
    valid = [torch.ones(values[name], dtype=torch.bool) for name in plan.masks]
    try:
        return export_model(_MaskedModule(ep, plan), (*flat, *valid))
    except RduccError as error:
        raise RduccError(f"shapes: at {bucket_label(values)}: {error}") from None


class _MaskedModule(torch.nn.Module):
    """The exported program's module taking its user inputs flat and then one validity input
    per masked dim; each masked node reads `where(valid, operand, fill)` (the mask of every padded
    dim the operand carries, together)."""

    def __init__(self, ep: ExportedProgram, plan: PadPlan):
        super().__init__()
        self.inner = ep.module()
        self.inner._forward_pre_hooks.clear()  # checks the nested input structure, now flat
        self.out_spec = ep.call_spec.out_spec
        graph = self.inner.graph
        placeholders = [n for n in graph.nodes if n.op == "placeholder"]
        by_name = {n.name: n for n in graph.nodes}
        with graph.inserting_after(placeholders[-1]):
            valid = {name: graph.placeholder(f"valid_{name}") for name in reversed(list(plan.masks))}
        grouped: dict[tuple[str, tuple[int, ...]], list[tuple[torch.fx.Node, MaskSite]]] = {}
        for name, sites in plan.masks.items():
            for site in sites:
                grouped.setdefault((site.node, site.operand), []).append((valid[name], site))
        for (node, _), group in grouped.items():
            _mask_node(graph, by_name[node], group)
        graph._codegen = torch.fx.graph.CodeGen()  # flat inputs and outputs
        self.inner.recompile()

    def forward(self, *flat: torch.Tensor) -> Any:
        outputs = self.inner(*flat)
        return pytree.tree_unflatten(list(outputs), self.out_spec)


def _mask_node(graph: torch.fx.Graph, node: torch.fx.Node, group: Sequence[tuple[torch.fx.Node, MaskSite]]) -> None:
    """Make `node` read its operand masked by the validity inputs of `group` (its sites on one operand);
    a reduction that counts the real positions (`_counted_reduction`) reads the mask too, an attention
    the mask of its real keys (`_attention_of_real_keys`)."""
    path, fill = group[0][1].operand, group[0][1].fill
    operand = _at(node.args, path)
    valids = tuple(valid for valid, _ in group)
    dims = tuple(site.dims for _, site in group)
    with graph.inserting_before(node):
        mask = graph.call_function(_mask_of, (operand, valids, dims))
    if fill == ATTENTION:
        target = node.target
        assert isinstance(target, torch._ops.OpOverload)
        names = [a.name for a in target._schema.arguments]
        bound = dict(zip(names, node.args)) | dict(node.kwargs)
        node.target = _attention_of_real_keys
        node.args = (*node.args[:3], mask)
        node.kwargs = {key: value for key, value in bound.items() if key not in names[:3]}
        return
    if fill == SOFT_TARGETS:
        target = node.target
        assert isinstance(target, torch._ops.OpOverload)
        names = [a.name for a in target._schema.arguments]
        node.target = _soft_cross_entropy
        node.kwargs = dict(zip(names[2:], node.args[2:])) | dict(node.kwargs)
        node.args = (node.args[0], operand, mask)
        return
    with graph.inserting_before(node):
        masked = graph.call_function(_masked, (operand, mask, fill))
    node.args = _replaced(node.args, path, masked)
    target = node.target
    name = target._overloadpacket.__name__ if isinstance(target, torch._ops.OpOverload) else ""
    if isinstance(target, torch._ops.OpOverload) and (
            name in _COUNTED or (name in _NEEDS_DIM and _arg(node, 1, "dim") is None)):
        names = [a.name for a in target._schema.arguments]
        bound = dict(zip(names[1:], node.args[1:])) | dict(node.kwargs)
        node.target = _counted_reduction
        node.args = (masked, mask)
        node.kwargs = {"op": name, **bound}
    elif isinstance(target, torch._ops.OpOverload) and name in _RUNNING_INDICES:
        kwargs = {"op": name, "dim": _arg(node, 1, "dim")}
        node.target = _running_indexed
        node.args = (masked, mask)
        node.kwargs = kwargs
    elif isinstance(target, torch._ops.OpOverload) and name in _INDEXED and _arg(node, 1, "dim") is not None:
        kwargs = {"op": name, "dim": _arg(node, 1, "dim"), "keepdim": bool(_arg(node, 2, "keepdim"))}
        node.target = _indexed_reduction
        node.args = (masked, mask)
        node.kwargs = kwargs


def _mask_of(operand: torch.Tensor, valids: Sequence[torch.Tensor], dims: Sequence[tuple[tuple[int, int], ...]]
             ) -> torch.Tensor:
    """True at the operand's real positions along every masked dim (broadcast over the others)."""
    mask = torch.ones((), dtype=torch.bool)
    for valid, along in zip(valids, dims):
        mask = mask & _valid_along(operand, valid, along)
    return mask


def _valid_along(operand: torch.Tensor, valid: torch.Tensor, dims: tuple[tuple[int, int], ...]) -> torch.Tensor:
    """True at the operand's real positions along each masked dim of one validity input."""
    mask = torch.ones((), dtype=torch.bool)
    for axis, inner in dims:
        along = valid.unsqueeze(1).expand(-1, inner).reshape(-1)
        if operand.shape[axis] != along.numel():  # laid inside an outer factor by a view
            along = along.repeat(operand.shape[axis] // along.numel())
        shape = [1] * operand.dim()
        shape[axis] = -1
        mask = mask & along.reshape(shape)
    return mask


def _attention_of_real_keys(query: torch.Tensor, key: torch.Tensor, value: torch.Tensor, keys_valid: torch.Tensor,
                            attn_mask: torch.Tensor | None = None, dropout_p: float = 0.0, is_causal: bool = False,
                            scale: float | None = None, enable_gqa: bool = False) -> torch.Tensor:
    """`scaled_dot_product_attention` whose padded keys (false in `keys_valid`, shaped [..., keys, 1])
    no query sees: a padded key gets -inf before the softmax (with the causal mask and the model's own
    mask, where given); padded keys and values read as zeros (0 * a non-finite pad would be nan). A
    padded query row is computed as any other and cut from the result."""
    key = torch.where(keys_valid, key, torch.zeros((), dtype=key.dtype))
    value = torch.where(keys_valid, value, torch.zeros((), dtype=value.dtype))
    seen = keys_valid.transpose(-1, -2)
    if is_causal:
        seen = seen & torch.ones(query.shape[-2], key.shape[-2], dtype=torch.bool).tril()
    if attn_mask is None:
        mask = seen
    elif attn_mask.dtype == torch.bool:
        mask = attn_mask & seen
    else:
        mask = torch.where(seen, attn_mask, torch.tensor(float("-inf"), dtype=attn_mask.dtype))
    return torch.nn.functional.scaled_dot_product_attention(query, key, value, attn_mask=mask, dropout_p=dropout_p,
                                                            scale=scale, enable_gqa=enable_gqa)


def _soft_cross_entropy(source: torch.Tensor, target: torch.Tensor, mask: torch.Tensor, weight: Any = None,
                        reduction: int = 1, ignore_index: int = -100, label_smoothing: float = 0.0) -> torch.Tensor:
    """`cross_entropy_loss` with probability targets over the real positions of `mask` (shaped as the
    targets, true at the real ones): each position's loss as torch computes it (padded targets read as
    zeros, their losses dropped), then none, the sum, or the mean over the count of real positions
    (torch's mean of probability targets divides by that count, whatever the class weights)."""
    target = torch.where(mask, target, torch.zeros((), dtype=target.dtype))
    losses = torch.nn.functional.cross_entropy(source, target, weight, reduction="none",
                                               label_smoothing=label_smoothing)
    real = mask.expand(target.shape)
    real = real.select(1, 0) if target.dim() > 1 else real.all()
    losses = torch.where(real, losses, torch.zeros((), dtype=losses.dtype))
    if reduction == 0:
        return losses
    total = losses.sum()
    return total if reduction == 2 else total / real.sum().to(total.dtype)


def _masked(operand: torch.Tensor, mask: torch.Tensor, fill: str) -> torch.Tensor:
    """`operand` with its padded positions holding `fill` (its dtype's nearest value)."""
    return torch.where(mask, operand, _fill_value(operand.dtype, fill))


def _fill_value(dtype: torch.dtype, fill: str) -> torch.Tensor:
    """`fill` ("0", "1", "-inf", "inf") as a 0-d tensor of `dtype` (an int's min or max for the infinities)."""
    if dtype == torch.bool:
        return torch.tensor(fill in ("1", "inf"))
    if fill in ("-inf", "inf") and not dtype.is_floating_point:
        info = torch.iinfo(dtype)
        return torch.tensor(info.min if fill == "-inf" else info.max, dtype=dtype)
    return torch.tensor(float(fill), dtype=dtype)


def _counted_reduction(masked: torch.Tensor, mask: torch.Tensor, *, op: str, dim: Any = None,
                       keepdim: bool = False, dtype: torch.dtype | None = None, unbiased: bool | None = None,
                       correction: float | None = None) -> Any:
    """`op` (a key of `_COUNTED`, or a flat argmax/argmin) of the real positions of an operand
    already masked (zeros; +-inf for the arg-reductions) by `mask`."""
    rank = masked.dim()
    axes = list(range(rank)) if dim is None or dim == [] else [
        d % max(rank, 1) for d in (dim if isinstance(dim, list | tuple) else [dim])]
    count = mask.expand(masked.shape).sum(axes, keepdim=True)
    if op in _NEEDS_DIM:
        return _flat_index(masked, mask, op, keepdim)
    total = masked.sum(axes, keepdim=True, dtype=dtype)
    mean = total / count.to(total.dtype)
    kept = mean if keepdim else mean.squeeze(axes)
    if op == "mean":
        return kept
    dropped = (1 if unbiased is None or unbiased else 0) if correction is None else correction
    centred = torch.where(mask, masked - mean, torch.zeros((), dtype=masked.dtype))
    spread = (centred * centred).sum(axes, keepdim=True) / (count - dropped).clamp_min(0).to(masked.dtype)
    spread = spread.sqrt() if op in ("std", "std_mean") else spread
    spread = spread if keepdim else spread.squeeze(axes)
    return (spread, kept) if op in ("var_mean", "std_mean") else spread


def _flat_index(masked: torch.Tensor, mask: torch.Tensor, op: str, keepdim: bool) -> torch.Tensor:
    """argmax/argmin over every dim: the padded program's flat index, renumbered over the real sizes
    (the real positions keep their row-major order, so the first of tied extremes stays first)."""
    padded = (masked.argmax() if op == "argmax" else masked.argmin()).reshape(())
    full = mask.expand(masked.shape)
    index = torch.zeros((), dtype=torch.long)
    stride = torch.ones((), dtype=torch.long)
    for axis in reversed(range(masked.dim())):
        real = _real_along(full, axis)
        index = index + _rank_among_real(real)[(padded % masked.shape[axis]).reshape(1)].reshape(()) * stride
        stride = stride * real.sum()
        padded = padded // masked.shape[axis]
    return index.reshape([1] * masked.dim()) if keepdim else index


def _indexed_reduction(masked: torch.Tensor, mask: torch.Tensor, *, op: str, dim: int, keepdim: bool = False) -> Any:
    """argmax/argmin/max/min along `dim` of an operand masked (+-inf) by `mask`: each index renumbered
    among the real positions along `dim` (the pads may sit between them: a dim laid inside another)."""
    result = getattr(torch, op)(masked, dim, keepdim)
    rank = _rank_among_real(_real_along(mask.expand(masked.shape), dim % max(masked.dim(), 1)))
    if op in ("argmax", "argmin"):
        return rank[result]
    return result[0], rank[result[1]]


def _running_indexed(masked: torch.Tensor, mask: torch.Tensor, *, op: str, dim: int) -> Any:
    """cummax/cummin along `dim` of an operand masked (+-inf) by `mask`: each running index renumbered
    among the real positions along `dim` (at a real position it is never a pad's: `_PREFIX_FILL`)."""
    values, indices = getattr(torch, op)(masked, dim)
    rank = _rank_among_real(_real_along(mask.expand(masked.shape), dim % max(masked.dim(), 1)))
    return values, rank.clamp_min(0)[indices]


def _real_along(full: torch.Tensor, axis: int) -> torch.Tensor:
    """True at the real positions along `axis` of a mask as large as its operand."""
    others = [d for d in range(full.dim()) if d != axis]
    return (full.sum(others) > 0) if others else full


def _rank_among_real(real: torch.Tensor) -> torch.Tensor:
    """Each position's index among the real positions before it (a real position's index in the call's
    unpadded tensor)."""
    return real.long().cumsum(0) - 1


def validity_inputs(plan: PadPlan, real: Mapping[str, int]) -> list[np.ndarray]:
    """The hidden validity inputs of a call whose padded dims have these real sizes (true over
    each; `pad_arrays` pads them with false up to the bucket)."""
    return [np.ones(real[name], dtype=np.bool_) for name in plan.validity_dims()]


# --------------------------------------------------------------------------
# running a padded call
# --------------------------------------------------------------------------


@dataclass
class PaddedCall:
    """The bucket a call runs and how its inputs are padded to it."""

    index: int
    real: dict[str, int]
    """The real size of each padded dim (as the inputs have it)."""
    bucket: dict[str, int]


def choose_bucket(buckets: Sequence[tuple[dict[str, int], Sequence[tuple[int, ...]]]],
                  shapes: Sequence[tuple[int, ...]], plan: PadPlan | None) -> PaddedCall | None:
    """The smallest bucket whose inputs cover `shapes`, padding only the dims
    `plan` allows; None when none does (an exact match is always the smallest)."""
    best: PaddedCall | None = None
    best_volume = math.inf
    for index, (values, declared) in enumerate(buckets):
        real = _covers(declared, shapes, plan)
        if real is None:
            continue
        volume = sum(math.prod(s) for s in declared)
        if volume < best_volume:
            best, best_volume = PaddedCall(index, real, dict(values)), volume
    return best


def _covers(declared: Sequence[tuple[int, ...]], shapes: Sequence[tuple[int, ...]],
            plan: PadPlan | None) -> dict[str, int] | None:
    """The real size of each padded dim when these inputs fit this bucket; else None."""
    hidden = len(plan.validity_dims()) if plan else 0
    if len(declared) != len(shapes) + hidden:
        return None
    real: dict[str, int] = {}
    for index, (want, given) in enumerate(zip(declared, shapes)):  # the user inputs (not the hidden ones)
        if len(want) != len(given):
            return None
        names = plan.inputs[index] if plan and index < len(plan.inputs) else [""] * len(want)
        for name, w, g in zip(names, want, given):
            if name and plan and name in plan.dims:
                if g > w or real.setdefault(name, g) != g or g < 1:
                    return None
            elif w != g:
                return None
    return real


def pad_arrays(arrays: Sequence[Any], declared: Sequence[tuple[int, ...]], fills: Sequence[str] = ()) -> list[Any]:
    """Each array (numpy or torch) padded at the end of each dim up to the bucket's
    shape with its fill (`PadPlan.fills`; zeros when none) (a complex input's
    trailing pair dim is kept)."""
    padded = []
    for index, (array, want) in enumerate(zip(arrays, declared)):
        fill = float(fills[index]) if index < len(fills) and fills[index] not in ("", VALID) else 0.0
        shape = tuple(want) + tuple(array.shape[len(want):])
        if tuple(array.shape) == shape:
            padded.append(array)
            continue
        out = (array.new_full(shape, fill) if isinstance(array, torch.Tensor)
               else np.full(shape, fill, dtype=array.dtype))
        out[tuple(slice(0, size) for size in array.shape)] = array
        padded.append(out)
    return padded


def cut_outputs(outputs: Sequence[Any], plan: PadPlan, call: PaddedCall) -> list[Any]:
    """The user outputs cut back to the real sizes (a dim carrying padded dim `d`
    as its outermost factor keeps size * real / bucket)."""
    cut = []
    for index, output in enumerate(outputs):
        names = plan.outputs[index] if index < len(plan.outputs) else []
        shape = getattr(output, "shape", None)
        if shape is None or not any(names):
            cut.append(output)
            continue
        region = tuple(slice(0, size * call.real[name] // call.bucket[name]) if name in call.real else slice(None)
                       for name, size in zip(names, shape))
        cut.append(output[region])
    return cut


def plan_of(module: Any) -> PadPlan | None:
    """The padding a bucket module records (`rdu.padding`), or None."""
    from rducc.dialects.contracts import padding_of

    found = padding_of(module)
    return PadPlan(*found) if found is not None else None


def record_plan(module: Any, plan: PadPlan) -> None:
    """Put the plan on the bucket module (`rdu.padding`)."""
    from rducc.dialects.contracts import set_padding

    set_padding(module, plan.dims, plan.inputs, plan.outputs, plan.refused, plan.fills)


def padded_label(call: PaddedCall) -> str:
    """`batch=3 padded to 4`: what a padded call ran."""
    padded = [f"{name}={call.real[name]} padded to {call.bucket[name]}" for name in call.real
              if call.real[name] != call.bucket[name]]
    return "; ".join(padded) or bucket_label(call.bucket)


__all__ = ["VALID", "MaskSite", "PadPlan", "PaddedCall", "choose_bucket", "cut_outputs", "pad_arrays",
           "padded_label", "padding_plan", "plan_of", "record_plan", "specialize_masked", "validity_inputs"]
