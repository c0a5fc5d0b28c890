"""Decomposing a program to the ATen rducc imports: torch's own
`run_decompositions()`, plus a table of rducc's exact decompositions for ops
outside Core ATen (`decomposes`), plus the traced implementation of each
`torch.library` custom op the program calls.

- `EXTRA_DECOMPOSITIONS`: ops torch keeps after decomposition (`histc`,
  `_trilinear`, `_int_mm`, random ops with a generator, ...) written as the
  ATen ops rducc converts. Each is exact (the random ones draw from the same
  distribution; their numbers are not torch's).
- Custom ops (`torch.library.custom_op`): their Python implementation is
  traced into ATen with the program; one that cannot be traced (it reads
  tensor values, calls numpy: its implementation, traced alone on the
  node's fake inputs, fails) stays in the program, where the importer makes
  it a host call (`rducc.frontend.host_ops`; refused by name without host ops).
- torch's fallback decompositions: an op the default decomposition keeps that
  rducc neither converts nor decomposes itself (`addmv`, `diagonal_scatter`,
  `as_strided_copy`, `i0`, `logaddexp`, `_upsample_bilinear2d_aa`, ...) is
  decomposed with torch's own entry for it in `torch._decomp`'s full table,
  when it has one (the random training-mode ops of torch.nn modules excepted:
  those are refused by name; training-mode batch norm is decomposed this way).
- `torch.cond` with a tensor predicate: both branches inlined, each result
  selected by `where` (`rducc.frontend.control_flow`), before decomposing.
- A buffer stacked over the layers and written a slot at a time through views
  with constant indices (one KV cache `[layers, 2, ...]`): per-slot values and one
  row write after the layers (`rducc.frontend.stacked_writes`), after decomposing.
- A failure inside torch's decomposition is reported as that, naming the op
  and the user's source line. torch re-derives strides while it decomposes,
  and a `view` that export accepted can then fail (GPT-2's Conv1D after
  attention at batch > 1): views are retried as reshapes, which mean the
  same in a functional program.
"""

from __future__ import annotations

import contextlib
import re
import warnings
import weakref
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import torch
from torch.export import ExportedProgram

from rducc.errors import RduccError
from rducc.frontend.aten_elementwise import FUSED_AS_EAGER
from rducc.frontend.aten_normalization import LAYER_NORM_AS_EAGER
from rducc.frontend.complex_pairs import has_complex, lower_complex
from rducc.frontend.control_flow import has_cond, inline_conds
from rducc.frontend.converter_api import CONVERTERS, IGNORED_TARGETS
from rducc.frontend.data_sizes import has_data_sizes, specialize_data_sizes
from rducc.frontend.loader import captured_torch_logs
from rducc.frontend.local_decompose import decompose_locally, decompose_only, decompose_repeated
from rducc.frontend.locations import describe_location
from rducc.frontend.output_edges import lower_output_edges, without_sparse_outputs
from rducc.frontend.python_numbers import has_python_numbers, lower_python_numbers
from rducc.frontend.stacked_writes import fold_stacked_writes
from rducc.frontend.torch_corrections import torch_corrections
from rducc.frontend.training_mode import TRAINING_CHECKS
from rducc.registration import registering

Decomposition = Callable[..., Any]

EXTRA_DECOMPOSITIONS: dict[str, Decomposition] = {}
"""ATen overload name to rducc's decomposition of it (into ops rducc converts)."""

CORE_NAMESPACES = frozenset({"aten", "prims", "quantized_decomposed"})
"""Namespaces of torch's own ops; any other namespace is a custom op's package."""


def decomposes(*targets: str) -> Callable[[Decomposition], Decomposition]:
    """Register `function` as the decomposition of each of `targets`."""
    return registering(EXTRA_DECOMPOSITIONS, targets, _itself)


def _itself(function: Decomposition) -> Decomposition:
    return function


def overload(name: str) -> torch._ops.OpOverload | None:
    """The op overload `namespace.op.overload`, or None if this process does not define it."""
    namespace, op, variant = name.split(".")
    try:
        return getattr(getattr(getattr(torch.ops, namespace), op), variant)
    except (AttributeError, RuntimeError):
        return None


# --------------------------------------------------------------------------
# Custom ops
# --------------------------------------------------------------------------


class CustomOpNotTraceable(RduccError):
    """A custom op's implementation could not be traced into ATen."""


def _namespace(target: Any) -> str | None:
    return target.namespace if isinstance(target, torch._ops.OpOverload) else None


def _traced_implementation(op: torch._ops.OpOverload) -> Decomposition | None:
    """The Python implementation of a `torch.library.custom_op`, wrapped so a failure names the op."""
    from torch._library.custom_ops import OPDEFS
    from torch._subclasses.functional_tensor import FunctionalTensorMode, dispatch_functionalize

    definition = OPDEFS.get(op._schema.name)
    function = getattr(definition, "_init_fn", None)
    if function is None:
        return None
    name = op._schema.name

    def traced(*args: Any, **kwargs: Any) -> Any:
        try:
            with torch.no_grad():
                return dispatch_functionalize(function, FunctionalTensorMode())(*args, **kwargs)
        except Exception as error:  # anything the implementation does that tracing cannot follow
            text = str(error).strip().splitlines()
            reason = text[0] if text else type(error).__name__
            raise CustomOpNotTraceable(
                f"custom op {name} cannot be traced into ATen ({reason}); "
                "register a decomposition for it or rewrite it without data-dependent control flow"
            ) from None

    return traced


def custom_op_decompositions(ep: ExportedProgram) -> dict[Any, Decomposition]:
    """For each custom op the program calls that the importer does not convert itself:
    rducc's decomposition, else its implementation when it traces. A custom op with
    neither is left for the importer (a host call, or refused)."""
    table: dict[Any, Decomposition] = {}
    seen: set[Any] = set()
    for node in ep.graph.nodes:
        namespace = _namespace(node.target)
        if node.op != "call_function" or namespace is None or namespace in CORE_NAMESPACES \
                or node.target in seen or str(node.target) in CONVERTERS:
            continue  # a core op, one seen, or a custom op the importer converts itself
        seen.add(node.target)
        own = EXTRA_DECOMPOSITIONS.get(str(node.target))
        implementation = own or _traced_implementation(node.target)
        if implementation is not None and (own is not None or _trace_alone(node, implementation) is not None):
            table[node.target] = implementation
    return table


# --------------------------------------------------------------------------
# Running the decomposition
# --------------------------------------------------------------------------


_DECOMPOSED: weakref.WeakKeyDictionary[ExportedProgram, ExportedProgram] = weakref.WeakKeyDictionary()
"""Each program's Core ATen form, kept while the program lives: compiling one
program for several opt levels or targets decomposes it once (torch's
decomposition costs far more than rducc's import and passes on small models)."""


_DEFAULT_TABLE: dict[tuple[int, int], dict[Any, Decomposition]] = {}


def default_table() -> dict[Any, Decomposition]:
    """`torch.export.default_decompositions()`, built once per set of registered
    ops: torch walks every op namespace to build it (about 1.5 s a call), and a
    training step decomposes one update program per parameter shape."""
    registered = torch._C._dispatch_get_registrations_for_dispatch_key("CompositeImplicitAutograd")
    key = (len(torch.ops._dir), len(registered))  # a newly registered op or namespace: built again
    if key not in _DEFAULT_TABLE:
        _DEFAULT_TABLE.clear()
        _DEFAULT_TABLE[key] = dict(torch.export.default_decompositions())
    return _DEFAULT_TABLE[key]


def decomposition_table(ep: ExportedProgram) -> dict[Any, Decomposition]:
    """torch's default table, rducc's extra decompositions and the program's custom ops."""
    table = dict(default_table())
    for name, function in EXTRA_DECOMPOSITIONS.items():
        op = overload(name)
        if op is not None and _namespace(op) in CORE_NAMESPACES:
            table[op] = function
    table.update(torch_corrections())
    table.update(custom_op_decompositions(ep))
    for name in (*FUSED_AS_EAGER, *LAYER_NORM_AS_EAGER):  # converted as torch's kernel computes them
        table.pop(overload(name), None)
    return table


@contextmanager
def _views_as_reshapes(ep: ExportedProgram) -> Iterator[None]:
    """Every `aten.view` of the graph a `reshape` for the duration (restored after)."""
    views = [n for n in ep.graph.nodes if n.target is torch.ops.aten.view.default]
    for node in views:
        node.target = torch.ops.aten.reshape.default
    try:
        yield
    finally:
        for node in views:
            node.target = torch.ops.aten.view.default


_FAILED_NODE = re.compile(r"While executing %(\w+)")


def _failure(ep: ExportedProgram, error: Exception) -> RduccError:
    """torch's decomposition failed: name the op and the user's line it came from."""
    text = str(error)
    match = _FAILED_NODE.search(text)
    node = next((n for n in ep.graph.nodes if match and n.name == match.group(1)), None)
    own = next((c for c in _causes(error) if isinstance(c, RduccError)), None)
    if own is not None:  # torch appends its own trace to the message: keep the first line
        where = describe_location(node) if node is not None else "the program"
        return RduccError(f"{where}: {str(own).splitlines()[0]}")
    first = next((line for line in text.splitlines() if line.strip()), type(error).__name__)
    where = f"{node.target} at {describe_location(node)}" if node is not None else "the program"
    return RduccError(f"torch's decomposition (run_decompositions) failed on {where}: {first.strip()}")


def _causes(error: BaseException) -> Iterator[BaseException]:
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        yield current
        current = current.__cause__ or current.__context__


def _touches_complex(node: torch.fx.Node) -> bool:
    values = [node.meta.get("val"), *(a.meta.get("val") for a in node.all_input_nodes)]
    return any(isinstance(v, torch.Tensor) and v.is_complex() for v in values)


def _unconverted(ep: ExportedProgram) -> Iterator[torch._ops.OpOverload]:
    for node in ep.graph.nodes:
        target = node.target
        if node.op != "call_function" or not isinstance(target, torch._ops.OpOverload):
            continue
        name = str(target)
        if _touches_complex(node):
            continue  # complex ops become pairs of reals (`complex_pairs`), after decomposition
        if name not in CONVERTERS and name not in IGNORED_TARGETS and name not in TRAINING_CHECKS:
            yield target


def torch_fallbacks(ep: ExportedProgram, tried: set[Any]) -> dict[Any, Decomposition]:
    """torch's own decomposition of each op of `ep` that rducc does not convert, where
    it has one (not tried already)."""
    from torch._decomp import decomposition_table as torch_table

    return {op: torch_table[op] for op in _unconverted(ep) if op in torch_table and op not in tried}


def _with_fallbacks(ep: ExportedProgram, table: dict[Any, Decomposition]) -> ExportedProgram:
    """`ep` with each of torch's fallback decompositions run that works and leaves
    no op rducc does not convert (some of torch's are not functional, some end in
    prims rducc has no converter for: those ops go to the unsupported-op error)."""
    tried: set[Any] = set()
    for _ in range(3):  # a fallback's ops may have fallbacks of their own
        fallbacks = torch_fallbacks(ep, tried)
        if not fallbacks:
            break
        tried.update(fallbacks)
        usable = {op: f for op, f in fallbacks.items()
                  if not _calls_unconvertible(ep, op, f, table) and _decomposes_to_converted(ep, {**table, op: f})}
        if not usable:
            break
        ep = _decomposed(ep, {**table, **usable})
    return ep


def _calls_unconvertible(ep: ExportedProgram, op: Any, fallback: Decomposition, table: dict[Any, Decomposition]) \
        -> bool:
    """Whether `fallback`, traced alone on the fake inputs of `op`'s first node (milliseconds,
    not a whole-program decomposition), calls an op that rducc neither converts nor
    decomposes further and that the program does not already call, so that
    `_decomposes_to_converted` would say no: torch's decompositions of the special
    functions (lgamma, i0, zeta, ...) are `prims` ops, which the generic pointwise
    import does not need. False when the trace fails (the whole-program check decides)."""
    node = next(n for n in ep.graph.nodes if n.op == "call_function" and n.target is op)
    graph = _trace_alone(node, fallback)
    if graph is None:
        return False
    present = set(_unconverted(ep))
    return any(
        isinstance(n.target, torch._ops.OpOverload) and str(n.target) not in CONVERTERS
        and str(n.target) not in IGNORED_TARGETS and n.target not in table and n.target not in present
        for n in graph.nodes if n.op == "call_function"
    )


def _trace_alone(node: torch.fx.Node, function: Decomposition) -> torch.fx.Graph | None:
    """The graph of `function` called as `node` calls its op, traced on the node's fake
    inputs (milliseconds); None when the trace fails."""
    from torch._guards import detect_fake_mode
    from torch.fx.experimental.proxy_tensor import make_fx

    inputs: list[torch.fx.Node] = list(node.all_input_nodes)

    def call(*values: Any) -> Any:
        given = dict(zip(inputs, values))
        args, kwargs = torch.fx.node.map_arg((node.args, node.kwargs), given.__getitem__)
        return function(*args, **kwargs)

    try:
        fakes = [n.meta["val"] for n in inputs]
        with detect_fake_mode(fakes) or contextlib.nullcontext(), captured_torch_logs():
            return make_fx(call)(*fakes).graph
    except Exception:  # torch raises many kinds from inside its tracer
        return None


def _decomposes_to_converted(ep: ExportedProgram, table: dict[Any, Decomposition]) -> bool:
    """Whether decomposing `ep` with `table` works and adds no op rducc does not convert."""
    before = set(_unconverted(ep))
    try:
        after = set(_unconverted(_decomposed(ep, table)))
    except Exception:  # torch raises many kinds from inside its tracer
        return False
    return after < before


_TORCH_INTERNAL_NOTICES = (r"`isinstance\(treespec, LeafSpec\)` is deprecated",)
"""FutureWarnings torch raises inside its own code on rducc's calls (run_decompositions
copies the call spec, whose unpickling checks `isinstance(treespec, LeafSpec)`):
nothing the user or rducc can change."""


def _decomposed(ep: ExportedProgram, table: dict[Any, Decomposition]) -> ExportedProgram:
    """`ep.run_decompositions(table)` without torch's notices about its own internals, under rducc's corrected
    kernels (torch's metadata pass runs each op's fake kernel before the table decomposes it: `linalg_lstsq`'s
    refuses)."""
    from rducc.frontend.torch_corrections import corrected_kernels

    with warnings.catch_warnings(), corrected_kernels():
        for message in _TORCH_INTERNAL_NOTICES:
            warnings.filterwarnings("ignore", message=message, category=FutureWarning)
        return ep.run_decompositions(table)


def _run(ep: ExportedProgram, table: dict[Any, Decomposition]) -> ExportedProgram:
    try:
        return _decomposed(ep, table)
    except Exception as error:  # torch raises many kinds from inside its tracer
        if any(isinstance(c, RduccError) for c in _causes(error)):
            raise _failure(ep, error) from None
        try:
            with _views_as_reshapes(ep):
                return _decomposed(ep, table)
        except Exception:
            raise _failure(ep, error) from None


def _without_effect_tokens(ep: ExportedProgram) -> ExportedProgram:
    """Side-effect ops (linalg's `_linalg_check_errors`) called directly, without the
    tokens torch.export threads through them (the importer drops the checks)."""
    if not any(n.target is torch.ops.higher_order.with_effects for n in ep.graph.nodes):
        return ep
    from torch.export._remove_effect_tokens_pass import _remove_effect_tokens

    return _remove_effect_tokens(ep)


_BOUNDED: weakref.WeakKeyDictionary[ExportedProgram, dict[int, ExportedProgram]] = weakref.WeakKeyDictionary()
"""Programs decomposed with a user's capacity bound, by that bound (see `decompose`)."""


def decompose(ep: ExportedProgram, capacity: int | None = None) -> ExportedProgram:
    """The program in the ATen rducc imports (see the module's docstring). `capacity`
    bounds each per-expert count `rducc.frontend.capacity` pads (None: the bound
    torch.export recorded, every token to one expert)."""
    if capacity is not None:
        bounded = _BOUNDED.setdefault(ep, {})
        if capacity not in bounded:
            bounded[capacity] = _decompose(ep, capacity)
        return bounded[capacity]
    if ep not in _DECOMPOSED:
        _DECOMPOSED[ep] = _decompose(ep, None)
    return _DECOMPOSED[ep]


VIEW_PRIMS = frozenset({"prims.transpose.default", "prims.squeeze.default", "prims.broadcast_in_dim.default",
                        "prims.split_dim.default", "prims.view_of.default"})
"""The view prims (results aliasing their input) that rducc decomposes into ATen views before torch's
whole-program decomposition, which cannot functionalize them."""


def _is_view_prim(node: torch.fx.Node) -> bool:
    return node.op == "call_function" and str(node.target) in VIEW_PRIMS


def _decompose(ep: ExportedProgram, capacity: int | None) -> ExportedProgram:
    """`decompose`'s work, uncached."""
    if has_cond(ep):
        ep = inline_conds(ep)  # both branches and a select: decomposed as any other op
    ep, sparse = without_sparse_outputs(ep)
    table = decomposition_table(ep)
    ep = decompose_only(ep, table, _is_view_prim)  # torch's functionalization refuses their aliasing results
    with captured_torch_logs():  # its tracebacks: rducc reports the error itself
        local = decompose_locally(ep, table)  # a few nodes to decompose: those alone
        if local is None:  # many, of identical layers: one trace a distinct node
            local = decompose_repeated(ep, table)
        decomposed = local if local is not None else _run(ep, table)
        result = _without_effect_tokens(_with_fallbacks(decomposed, table))
    if has_data_sizes(result):
        specialize_data_sizes(result, capacity)
    if has_complex(result):
        lower_complex(result)
    if has_python_numbers(result):
        lower_python_numbers(result, table)
    lower_output_edges(result, sparse)
    fold_stacked_writes(result)  # a buffer stacked over layers, written a slot at a time
    return result


def extra_supported_ops() -> list[str]:
    """The overloads that rducc decomposes itself (and so imports), sorted."""
    return sorted(EXTRA_DECOMPOSITIONS)


__all__ = ["EXTRA_DECOMPOSITIONS", "decompose", "decomposes", "extra_supported_ops", "overload"]
