"""PyTorch importer: a Core ATen `ExportedProgram` to level-1 rducc IR.

The result is a module holding one `tier.global` per weight, buffer and
lifted constant, and `func.func @forward` whose arguments are the user
inputs followed by the weights (each weight argument names its global with
`rdu.global`). Every op carries the FX node's source location.
"""

from __future__ import annotations

import operator
import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import torch
from torch.export import ExportedProgram
from torch.export.graph_signature import InputKind, OutputKind
from xdsl.dialects import func
from xdsl.dialects.builtin import (
    ArrayAttr,
    DenseIntOrFPElementsAttr,
    DictionaryAttr,
    ModuleOp,
    NameLoc,
    NoneAttr,
    StringAttr,
    TensorType,
    f32,
    i1,
    i64,
)
from xdsl.ir import Block, Region, SSAValue

from rducc.dialects.contracts import (
    Level,
    Phase,
    ResultRole,
    Update,
    input_arg,
    set_complex_edges,
    set_f64_demoted,
    set_level,
    set_output_edges,
    set_result_roles,
    set_result_updates,
    weight_arg,
)
from rducc.dialects.program import ENTRY
from rducc.dialects.tier import GlobalOp
from rducc.errors import RduccError, UnsupportedOpsError
from rducc.frontend import (  # noqa: F401  (the converter families register themselves)
    aten_backward,
    aten_conv_pool,
    aten_distance,
    aten_elementwise,
    aten_gather,
    aten_layout,
    aten_matmul,
    aten_normalization,
    aten_quantized,
    aten_random,
    aten_reduction,
    aten_resample,
    aten_rewrites,
    aten_scatter,
    aten_sort_scan,
    aten_storage,
)
from rducc.frontend.aten_pointwise import pointwise_entry
from rducc.frontend.complex_pairs import HOST_PAIRS, complex_edges
from rducc.frontend.converter_api import (
    CONVERTERS,
    IGNORED_TARGETS,
    ConverterEntry,
    GraphImporter,
    assertion_only_nodes,
    converts,
    fake_value,
    node_arguments,
    positional,
)
from rducc.frontend.data_sizes import SIZED_OPS
from rducc.frontend.decompositions import decompose, extra_supported_ops
from rducc.frontend.dynamic_dims import dynamic_dims, dynamic_help, is_dynamic
from rducc.frontend.f64 import check_f64, f64_node_count
from rducc.frontend.host_ops import host_fallback
from rducc.frontend.joint_graph import GRADIENT_KINDS, gradient_role, node_phases
from rducc.frontend.layer_reuse import LayerPlan, LayerReuse, NotReusable, plan_layers
from rducc.frontend.locations import describe_location, location_of
from rducc.frontend.output_edges import lowered_output_edges
from rducc.frontend.training_mode import warn_training_mode
from rducc.frontend.types import element_type_of, f64_demoted, tensor_type_of

INLINE_CONSTANT_LIMIT = 64
"""Lifted constants with at most this many elements carry their value inline;
parameters and buffers never do (they go to the weights sidecar)."""


def supported_ops() -> list[str]:
    """Every ATen overload the importer handles (converted, or decomposed by rducc first), sorted."""
    converted = (name for name in CONVERTERS if not name.startswith("rducc."))  # rducc's own graph ops
    return sorted({*converted, *extra_supported_ops(), *SIZED_OPS})


# --------------------------------------------------------------------------
# Layers
# --------------------------------------------------------------------------


_LAYER_PATH = re.compile(r"^(.*?\.\d+)(?:\.|$)")


def layer_of(node: torch.fx.Node) -> str | None:
    """The repeated block (`model.layers.3`) a node ran in, if any."""
    stack = node.meta.get("nn_module_stack")
    if not stack:
        return None
    match = _LAYER_PATH.match(list(stack.values())[-1][0])
    return match.group(1) if match else None


# --------------------------------------------------------------------------
# The importer
# --------------------------------------------------------------------------


def _check_static(ep: ExportedProgram) -> None:
    """Refuse dynamic shapes: an export with dynamic dims is told how to compile it
    (`--shapes`, `rducc.frontend.dynamic_dims`); else the first node that has one is named."""
    if is_dynamic(ep):
        raise RduccError(dynamic_help(dynamic_dims(ep)))
    for node in ep.graph.nodes:
        values = fake_value(node)
        for value in values if isinstance(values, tuple | list) else [values]:
            if isinstance(value, torch.Tensor) and any(
                not isinstance(d, int) for d in value.shape
            ):
                if _data_dependent(value):
                    raise RduccError(
                        f"{describe_location(node)}: data-dependent shape {list(value.shape)} on "
                        f"'{node.name}' (its size depends on the tensor's values, as nonzero, "
                        "masked_select or unique give); rducc compiles static shapes only"
                    )
                raise RduccError(
                    f"{describe_location(node)}: dynamic shape {list(value.shape)} on "
                    f"'{node.name}'; rducc compiles static shapes only (export without "
                    "dynamic_shapes)"
                )


def _data_dependent(value: torch.Tensor) -> bool:
    """Whether a shape has an unbacked size (one known only from the data)."""
    from torch.fx.experimental.symbolic_shapes import free_unbacked_symbols

    return bool(free_unbacked_symbols(value.shape))


def _check_supported(ep: ExportedProgram, host_ops: bool = True) -> None:
    """Raise one error listing every unsupported op, its count and first location
    (with `host_ops`, an op the host can run is supported: `host_ops.host_fallback`)."""
    counts: Counter[str] = Counter()
    first: dict[str, str] = {}
    dropped = assertion_only_nodes(ep.graph)
    for node in ep.graph.nodes:
        if node.op != "call_function":
            continue
        target = str(node.target)
        if target in IGNORED_TARGETS or node.target is operator.getitem or node in dropped:
            continue
        entry = _entry(node, host_ops)
        reason = None if entry is None else (entry.check(node) if entry.check else None)
        if entry is not None and reason is None:
            continue
        key = target if entry is None else f"{target} ({reason})"
        counts[key] += 1
        first.setdefault(key, describe_location(node))
    if counts:
        lines = [
            f"  {name}: {count} use{'s' if count > 1 else ''}, first at {first[name]}"
            for name, count in sorted(counts.items())
        ]
        total = len(counts)
        raise UnsupportedOpsError(
            f"the model uses {total} operator{'s' if total > 1 else ''} rducc cannot "
            "import:\n" + "\n".join(lines)
        )


def _weight_kind(kind: InputKind) -> str:
    return {
        InputKind.PARAMETER: "parameter",
        InputKind.BUFFER: "buffer",
        InputKind.CONSTANT_TENSOR: "constant",
    }[kind]


def _inline_value(tensor: torch.Tensor | None, tensor_type: TensorType) -> Any:
    """A dense attribute for a small real constant, else None (it goes to the sidecar)."""
    if tensor is None or tensor.device.type == "meta" or tensor.numel() > INLINE_CONSTANT_LIMIT:
        return None
    values = tensor.detach().to(torch.float64 if tensor.is_floating_point() else torch.int64)
    return DenseIntOrFPElementsAttr.from_list(tensor_type, values.flatten().tolist())


def _inlined(ep: ExportedProgram, spec: Any) -> bool:
    """Whether a weight's value goes inline (when small and real): a constant, or an
    integer buffer the state dict does not hold and the step never writes (an index
    map such as a grouped-query head map, `arange(heads) // group`), whose values
    passes may read (rdu-partition splits a gather by such a map per rank)."""
    if spec.kind == InputKind.CONSTANT_TENSOR:
        return True
    tensor = _tensor_for(ep, spec.target)
    return (spec.kind == InputKind.BUFFER and spec.persistent is False and tensor is not None
            and not tensor.is_floating_point() and not tensor.is_complex() and tensor.dtype != torch.bool
            and spec.target not in ep.graph_signature.buffers_to_mutate.values())


@dataclass
class _Signature:
    """The forward function's arguments: user inputs first, then weights."""
    arg_nodes: list[torch.fx.Node] = field(default_factory=list)
    arg_attrs: list[DictionaryAttr] = field(default_factory=list)
    globals: list[GlobalOp] = field(default_factory=list)


def _tensor_for(ep: ExportedProgram, target: str) -> torch.Tensor | None:
    if target in ep.state_dict:
        return ep.state_dict[target]
    value = ep.constants.get(target)
    return value if isinstance(value, torch.Tensor) else None


def _signature(ep: ExportedProgram) -> _Signature:
    placeholders = {n.name: n for n in ep.graph.nodes if n.op == "placeholder"}
    signature = _Signature()
    weights: list[tuple[torch.fx.Node, DictionaryAttr]] = []
    for spec in ep.graph_signature.input_specs:
        node = placeholders[spec.arg.name]
        if spec.kind == InputKind.USER_INPUT:
            if not isinstance(fake_value(node), torch.Tensor):
                raise RduccError(
                    f"input '{node.name}' is a {type(fake_value(node)).__name__}, not a "
                    "tensor; rducc compiles tensor inputs only"
                )
            signature.arg_nodes.append(node)
            signature.arg_attrs.append(DictionaryAttr(input_arg(node.name)))
            continue
        if spec.kind not in (InputKind.PARAMETER, InputKind.BUFFER, InputKind.CONSTANT_TENSOR):
            raise RduccError(f"input '{node.name}' of kind {spec.kind.name} is not supported")
        tensor_type = tensor_type_of(fake_value(node), what=f"weight '{spec.target}'")
        signature.globals.append(
            GlobalOp(
                spec.target,
                tensor_type,
                initial_value=(
                    _inline_value(_tensor_for(ep, spec.target), tensor_type)
                    if _inlined(ep, spec)
                    else None
                ),
                kind=_weight_kind(spec.kind),
            )
        )
        weights.append((node, DictionaryAttr(weight_arg(spec.target))))
    for node, attrs in weights:
        signature.arg_nodes.append(node)
        signature.arg_attrs.append(attrs)
    return signature


@dataclass
class _Outputs:
    """The results the program returns, in order: the loss (a joint graph's
    LOSS_OUTPUT), the user outputs, the gradients (GRADIENT_TO_PARAMETER,
    GRADIENT_TO_USER_INPUT), then the new value of each buffer, parameter or
    user input it updates in place (BUFFER_MUTATION, PARAMETER_MUTATION,
    USER_INPUT_MUTATION), with what each writes back and each one's training role."""

    values: list[Any] = field(default_factory=list)
    updates: list[Update | None] = field(default_factory=list)
    roles: list[ResultRole | None] = field(default_factory=list)


_UPDATE_KINDS = {
    OutputKind.BUFFER_MUTATION: "buffer",
    OutputKind.PARAMETER_MUTATION: "buffer",  # a parameter is a global, written back as a buffer is
    OutputKind.USER_INPUT_MUTATION: "input",
}


def _outputs(ep: ExportedProgram) -> _Outputs:
    output_node = next(n for n in ep.graph.nodes if n.op == "output")
    loss: list[Any] = []
    user: list[Any] = []
    gradients: list[tuple[Any, ResultRole]] = []
    writes: list[tuple[Any, Update]] = []
    for spec, result in zip(ep.graph_signature.output_specs, output_node.args[0]):
        if spec.kind == OutputKind.LOSS_OUTPUT:
            loss.append(result)
        elif spec.kind == OutputKind.USER_OUTPUT:
            user.append(result)
        elif spec.kind in GRADIENT_KINDS:
            gradients.append((result, gradient_role(ep, spec.kind, spec.target)))
        elif spec.kind in _UPDATE_KINDS:
            writes.append((result, Update(_UPDATE_KINDS[spec.kind], str(spec.target))))
        else:
            raise RduccError(
                f"the model's output '{spec.arg}' is a {spec.kind.name}; rducc compiles user outputs, "
                "losses, gradients and updates of buffers, parameters and inputs"
            )
    found = _Outputs()
    found.values = loss + user + [g for g, _ in gradients] + [w for w, _ in writes]
    found.updates = [None] * (len(loss) + len(user) + len(gradients)) + [u for _, u in writes]
    found.roles = [ResultRole("loss")] * len(loss) + [None] * len(user) + [r for _, r in gradients]
    found.roles += [None] * len(writes)
    return found


def _entry(node: torch.fx.Node, host_ops: bool = True) -> ConverterEntry | None:
    """The node's converter, else the generic import of a pointwise ATen op
    (`aten_pointwise`), else (with `host_ops`) its host call (`host_ops`), else None."""
    if HOST_PAIRS in node.meta:  # torch's complex kernel on the host (`complex_pairs`), never a chip converter
        return host_fallback(node) if host_ops else None
    entry = CONVERTERS.get(str(node.target)) or pointwise_entry(node)
    if entry is None and host_ops:
        entry = host_fallback(node)
    return entry


def _converted_nodes(ep: ExportedProgram) -> list[torch.fx.Node]:
    """The call_function nodes the importer converts (getitem included), in graph order."""
    dropped = assertion_only_nodes(ep.graph)
    return [
        node for node in ep.graph.nodes
        if node.op == "call_function" and str(node.target) not in IGNORED_TARGETS and node not in dropped
    ]


def _no_elements(node: torch.fx.Node) -> bool:
    """Whether the node's one result is a tensor with a size-0 dim."""
    value = node.meta.get("val")
    return isinstance(value, torch.Tensor) and value.numel() == 0


def _convert_nodes(
    importer: GraphImporter, nodes: list[torch.fx.Node], reuse: LayerReuse | None,
    phases: dict[torch.fx.Node, Phase] | None = None,
) -> None:
    for node in nodes:
        if reuse is not None and reuse.skip(node):
            continue  # a later layer's node: its layer is a call of @layer
        if node.target is operator.getitem:
            container, index = positional(node)
            value = importer.env[container]
            assert isinstance(value, tuple)
            importer.env[node] = value[index]
            continue
        importer.location = location_of(node)
        importer.name_hint = node.name
        importer.layer = layer_of(node)
        importer.phase = phases.get(node) if phases else None
        if _no_elements(node):  # whatever the op, an empty result has no values to compute
            importer.env[node] = aten_elementwise.fill(importer, node, 0)
        else:
            entry = _entry(node)
            assert entry is not None  # _check_supported refused the rest
            importer.env[node] = entry.convert(importer, node)
        if reuse is not None:
            reuse.converted(node)


def _return_values(importer: GraphImporter, outputs: list[Any]) -> list[SSAValue]:
    values: list[SSAValue] = []
    for index, output in enumerate(outputs):
        if isinstance(output, bool | int | float):
            values.append(_constant_output(importer, output))
            continue
        if not isinstance(output, torch.fx.Node):
            raise RduccError(f"output #{index} is a constant {output!r}, not a tensor or a number")
        value = importer.env.get(output)
        if not isinstance(value, SSAValue):
            raise RduccError(
                f"{describe_location(output)}: output #{index} ('{output.name}') uses a "
                "result rducc does not produce (for example the indices of max_pool)"
            )
        values.append(value)
    return values


def _constant_output(importer: GraphImporter, number: bool | int | float) -> SSAValue:
    """A rank-0 result holding a number the model returns as it is (i1, i64 or f32);
    `rducc.Program` hands back the number itself."""
    element = {bool: i1, int: i64}.get(type(number), f32)
    return importer.map([], TensorType(element, []), lambda b, xs: b.constant(number, element))


def import_program(
    ep: ExportedProgram, f64: str = "emulate", outline_layers: bool = False, host_ops: bool = True
) -> ModuleOp:
    """Level-1 rducc IR for an already decomposed (Core ATen) program.

    `f64` is the f64 policy (`rducc.frontend.f64`): `emulate` keeps f64, `refuse` rejects
    it, `demote` imports it as f32. With `outline_layers`, decoder layers that
    all match the first are imported once, as `rdu-outline-layers` would
    outline them (`rducc.frontend.layer_reuse`); otherwise every layer is inline.
    With `host_ops`, an op with no converter that the host can run becomes an
    `rdu.host_call` (`rducc.frontend.host_ops`); without, it is refused.
    """
    inputs, outputs = complex_edges(ep)
    if f64 != "demote":
        module = _import_program(ep, f64, outline_layers, host_ops)
        set_complex_edges(module, inputs, outputs)
        set_output_edges(module, lowered_output_edges(ep))
        return module
    with f64_demoted():
        module = _import_program(ep, f64, outline_layers, host_ops)
    set_complex_edges(module, inputs, outputs)
    set_output_edges(module, lowered_output_edges(ep))
    count = f64_node_count(ep)
    if count:
        set_f64_demoted(module, count)
    return module


def _import_program(ep: ExportedProgram, f64: str, outline_layers: bool, host_ops: bool) -> ModuleOp:
    _check_static(ep)
    warn_training_mode(ep)  # compiled on rducc's random ops, but said: rarely meant for inference
    check_f64(ep, f64)
    _check_supported(ep, host_ops)
    nodes = _converted_nodes(ep)
    plan = plan_layers(nodes, layer_of) if outline_layers else None
    if plan is not None:
        try:
            return _build_module(ep, nodes, plan)
        except NotReusable:
            pass  # import every layer inline; rdu-outline-layers decides on the IR
    return _build_module(ep, nodes, None)


def import_into(
    ep: ExportedProgram, block: Block, bindings: dict[str, SSAValue], phase: Phase | None = None
) -> dict[str, SSAValue]:
    """Append the ops of an already decomposed program to `block`, its inputs
    bound by target (parameters and buffers) or name (user inputs) to the
    values in `bindings`; every op gets `phase`. Returns the program's outputs
    by target (updates) or name (user outputs). The training wing appends the
    optimizer's update to a joint graph's function this way."""
    _check_static(ep)
    _check_supported(ep)
    importer = GraphImporter(block)
    placeholders = {n.name: n for n in ep.graph.nodes if n.op == "placeholder"}
    for spec in ep.graph_signature.input_specs:
        importer.env[placeholders[spec.arg.name]] = bindings[str(spec.target or spec.arg.name)]
    nodes = _converted_nodes(ep)
    _convert_nodes(importer, nodes, None, dict.fromkeys(nodes, phase) if phase else None)
    output = next(n for n in ep.graph.nodes if n.op == "output")
    returned = [(spec, result) for spec, result in zip(ep.graph_signature.output_specs, output.args[0])
                if result is not None]  # a forward that returns nothing
    values = _return_values(importer, [result for _, result in returned])
    return {
        str(spec.target or spec.arg.name): value
        for (spec, _), value in zip(returned, values)
    }


def _build_module(ep: ExportedProgram, nodes: list[torch.fx.Node], plan: LayerPlan | None) -> ModuleOp:
    signature = _signature(ep)
    outputs = _outputs(ep)
    arg_types = [tensor_type_of(fake_value(n), what=f"input '{n.name}'") for n in signature.arg_nodes]
    block = Block(arg_types=arg_types)
    importer = GraphImporter(block)
    for node, arg in zip(signature.arg_nodes, block.args):
        arg.name_hint = node.name
        importer.env[node] = arg
    reuse = LayerReuse(plan, block, importer.env, location_of) if plan is not None else None
    _convert_nodes(importer, nodes, reuse, node_phases(ep))
    results = _return_values(importer, outputs.values)
    importer.location = NameLoc(StringAttr("output"), NoneAttr())
    importer.name_hint = None
    importer.layer = None
    importer.phase = None
    importer.emit(func.ReturnOp(*results))
    forward = func.FuncOp(
        ENTRY,
        (arg_types, [r.type for r in results]),
        Region(block),
        arg_attrs=ArrayAttr(signature.arg_attrs),
    )
    set_result_updates(forward, outputs.updates)
    set_result_roles(forward, outputs.roles)
    module = ModuleOp([*signature.globals, forward])
    if reuse is not None:
        reuse.finish(module, forward)
    set_level(module, Level.GRAPH)
    return module


__all__ = [
    "CONVERTERS",
    "GraphImporter",
    "converts",
    "decompose",
    "import_into",
    "import_program",
    "node_arguments",
    "fake_value",
    "supported_ops",
    "element_type_of",
]
