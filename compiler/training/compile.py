"""Compiling a training step: a model whose forward returns a loss, to a placed
program that runs forward, backward and the optimizer's update.

    exported (forward -> loss)
      -> torch.export.experimental._export_forward_backward  (the joint graph)
      -> import (loss + gradients, phases forward / backward)
      -> append the optimizer's update (phase optimizer; `step.append_optimizer`)
      -> the -O pipeline, as for inference
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch
from torch.export.graph_signature import InputKind, OutputKind
from xdsl.dialects.builtin import ModuleOp

from rducc.dialects.contracts import result_roles, set_executed_microbatches
from rducc.dialects.program import entry_function
from rducc.driver import CompileOptions, decompose_and_import, lower
from rducc.errors import RduccError
from rducc.frontend.aten_normalization import LAYER_NORM_AS_EAGER
from rducc.frontend.decompositions import overload
from rducc.frontend.dynamic_dims import dynamic_dims, dynamic_help, is_dynamic
from rducc.frontend.joint_graph import gradient_ancestors
from rducc.frontend.locations import describe_location, replay, trace_line
from rducc.frontend.torch_corrections import corrected_kernels, torch_corrections
from rducc.targets import load_target
from rducc.training.attention import attention_as_eager, group_repeated_heads, prepare_autocast
from rducc.training.autocast_cache import shared_autocast_casts
from rducc.training.linalg_gradients import checks_without_effects, linalg_decomposed
from rducc.training.optimizers import OptimizerSpec, Trained
from rducc.training.scaling import SCALE, DynamicScale
from rducc.training.step import append_optimizer
from rducc.weights import program_weights


class TrainingError(RduccError):
    """A model or optimizer rducc cannot compile a training step for."""


@dataclass
class ParamGroup:
    """An optimizer param group: its spec and every parameter (global name) in it, as ordered."""

    spec: OptimizerSpec
    names: list[str] = field(default_factory=list)


@dataclass
class TrainingStep:
    """A compiled training step: its module, weights (parameters, buffers and
    optimizer state, by global name) and what the optimizer covers."""

    module: ModuleOp
    weights: dict[str, torch.Tensor]
    groups: list[ParamGroup]
    trained: list[str]
    """The parameters that get gradients (the others are frozen), in program order."""
    exported: torch.export.ExportedProgram
    aliases: dict[str, str] = field(default_factory=dict)
    """Tied parameters the graph does not read, to the name it reads them through."""
    dynamic: DynamicScale | None = None
    """Dynamic loss scaling's settings, when the step scales dynamically."""


def check_loss(ep: torch.export.ExportedProgram) -> None:
    """The forward must return one floating scalar: the loss."""
    output = next(n for n in ep.graph.nodes if n.op == "output")
    specs = ep.graph_signature.output_specs
    user = [(s, r) for s, r in zip(specs, output.args[0]) if s.kind == OutputKind.USER_OUTPUT]
    if len(user) != 1:
        raise TrainingError(
            f"the model's forward returns {len(user)} outputs; a training step needs the loss (a scalar) alone, "
            "first in a tuple, or as 'loss' in a mapping"
        )
    node = user[0][1]
    value = node.meta.get("val") if isinstance(node, torch.fx.Node) else node
    if not isinstance(value, torch.Tensor) or value.dim() != 0 or not value.is_floating_point():
        what = (f"a tensor of shape {list(value.shape)}" if isinstance(value, torch.Tensor) and value.dim()
                else f"a {value.dtype} scalar" if isinstance(value, torch.Tensor) else repr(value))
        where = describe_location(node) if isinstance(node, torch.fx.Node) else "the output"
        raise TrainingError(
            f"{where}: the loss is {what}, not a floating-point scalar; reduce it "
            "(loss.mean() or loss.sum()) before returning it"
        )


class _SiluAsEager(torch.autograd.Function):
    """SiLU whose gradient rounds as eager's backward rounds it.

    autograd's formula for silu picks `silu_backward` (one fused CPU kernel:
    float32 inside, one rounding for 16-bit inputs) when grad mode is off, as
    in eager's backward, but its twice-differentiable composite (`sigmoid`,
    `sub`, `mul`, `add`, each rounded to bf16 in turn) while torch traces the
    joint graph, where grad mode is on; and `aten.silu_backward` itself is
    CompositeImplicitAutograd, which export expands into the same bf16 ops.
    The gradient here is torch's Python decomposition of `silu_backward`
    (`pw_cast_for_opmath`: float32 inside, one rounding), as the kernel."""

    @staticmethod
    def forward(ctx: Any, input: torch.Tensor) -> torch.Tensor:
        ctx.save_for_backward(input)
        return torch.ops.aten.silu.default(input)

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> torch.Tensor:
        (input,) = ctx.saved_tensors
        from torch._decomp.decompositions import silu_backward

        return silu_backward(grad, input)


def _silu_as_eager(input: torch.Tensor) -> torch.Tensor:
    return _SiluAsEager.apply(input)


def _with_eager_gradients(ep: torch.export.ExportedProgram) -> torch.export.ExportedProgram:
    """`ep` (a copy, changed in place) with each op of `_DIFFERENTIATED_AS`
    calling its stand-in, in autocast regions too, so that the joint graph's
    own trace differentiates the stand-in (decomposed with the rest: no
    retrace of the whole program for it)."""
    prepare_autocast(_autocast_regions(ep))
    for module in ep.graph_module.modules():
        if not isinstance(module, torch.fx.GraphModule):
            continue
        grouped = group_repeated_heads(module.graph)
        found = [node for node in module.graph.nodes if node.target in _DIFFERENTIATED_AS]
        for node in found:
            node.target = _DIFFERENTIATED_AS[node.target]
        if found or grouped:
            module.recompile()
    return ep


def _autocast_regions(ep: torch.export.ExportedProgram) -> list[tuple[str, torch.dtype]]:
    """The (device, dtype) of each enabled autocast region torch.export recorded."""
    autocast = torch.ops.higher_order.wrap_with_autocast
    return [(str(node.args[0]), node.args[1]) for module in ep.graph_module.modules()
            if isinstance(module, torch.fx.GraphModule)
            for node in module.graph.nodes
            if node.target is autocast and node.args[2] and isinstance(node.args[1], torch.dtype)]


_DIFFERENTIATED_AS: dict[object, Callable[..., torch.Tensor]] = {
    # autograd would differentiate CPU flash attention, whose backward is one opaque fused op: its
    # math instead, rounded where the fused kernel rounds (`rducc.training.attention`)
    torch.ops.aten.scaled_dot_product_attention.default: attention_as_eager,
    # silu's gradient rounds once, as eager's fused kernel (`_SiluAsEager`)
    torch.ops.aten.silu.default: _silu_as_eager,
}
"""The ops whose gradient the joint graph takes from a stand-in (`_with_eager_gradients`)."""


def unused_parameters(ep: torch.export.ExportedProgram) -> list[str]:
    """Parameters the loss does not depend on: they get no gradient (eager leaves
    their `.grad` None and torch.optim skips them). Never read, read only by
    values the loss does not use (a last block's residual branch whose sum is
    dropped) or only through a detach or an integer value; a tied weight
    (GPT-2's `wte` and `lm_head`) is lifted under both names and read through
    one of them."""
    output = next(n for n in ep.graph.nodes if n.op == "output")
    losses = [value for spec, value in zip(ep.graph_signature.output_specs, output.args[0])
              if spec.kind in (OutputKind.USER_OUTPUT, OutputKind.LOSS_OUTPUT) and isinstance(value, torch.fx.Node)]
    needed = gradient_ancestors(losses)
    placeholders = {n.name: n for n in ep.graph.nodes if n.op == "placeholder"}
    return [str(s.target) for s in ep.graph_signature.input_specs
            if s.kind.name == "PARAMETER" and placeholders[s.arg.name] not in needed]


def _without_unused_gradients(ep: torch.export.ExportedProgram) -> torch.export.ExportedProgram:
    """The program with its unread parameters not requiring grad (torch's joint
    export refuses a parameter that requires grad and receives none)."""
    from torch.export.experimental import _copy_graph_module_and_signature

    unused = unused_parameters(ep)
    graph_module, signature = _copy_graph_module_and_signature(ep)
    if not unused:
        return ep._update(graph_module, signature)
    names = {str(s.target): s.arg.name for s in signature.input_specs}
    wanted = {names[name] for name in unused}
    for node in graph_module.graph.nodes:
        if node.op == "placeholder" and node.name in wanted:
            node.meta["val"] = node.meta["val"].detach()
    return ep._update(graph_module, signature)


def _reshapes_in_autocast(ep: torch.export.ExportedProgram) -> torch.export.ExportedProgram:
    """`ep` (a copy, changed in place) with every `view` inside an autocast
    region a `reshape`. torch.export keeps an autocast region as a
    `wrap_with_autocast` subgraph, traced again for the joint graph, where an
    op's output may get other strides than at export (CPU flash attention's
    output is laid out [batch, tokens, heads, dim], its math's is not), so a
    view that was legal at export fails (GPT-2's merged heads under bf16);
    reshape is the same view where the strides allow it, a copy where not."""
    autocast = torch.ops.higher_order.wrap_with_autocast
    for node in ep.graph.nodes:
        if node.target is autocast:
            body = getattr(ep.graph_module, node.args[4].target)
            for inner in body.graph.nodes:
                if inner.target is torch.ops.aten.view.default:
                    inner.target = torch.ops.aten.reshape.default
            body.recompile()
    return ep


def _on_meta(ep: torch.export.ExportedProgram) -> bool:
    return any(isinstance(t, torch.Tensor) and t.device.type == "meta" for t in ep.state_dict.values())


@contextlib.contextmanager
def _composite_gradients_on_meta(on_meta: bool) -> Iterator[None]:
    """While torch builds a joint graph on the meta device: autograd through
    the CompositeImplicitAutograd decomposition of every op that has one.

    torch registers its Python references (`torch._refs`, as
    `aten.nll_loss`'s, which `cross_entropy` calls) as Python Meta kernels
    (`torch._meta_registrations.activate_meta`), also for composite ops. Under
    the Python dispatcher, which export traces with, such a kernel counts as a
    backend kernel for AutogradMeta, so the op skips its composite
    decomposition and runs with no autograd formula: its inputs get no
    gradient. Hiding those Meta kernels while the joint graph is traced lets the
    decomposition run (its parts have autograd formulas and C++ meta kernels),
    as it does on the CPU."""
    if not on_meta:
        yield
        return
    from torch._C import DispatchKey
    from torch._decomp import global_decomposition_table

    hidden: dict[torch._ops.OpOverload, Any] = {}
    for table in global_decomposition_table.values():
        for op in table:
            if (isinstance(op, torch._ops.OpOverload) and DispatchKey.Meta in op.py_kernels
                    and torch._C._dispatch_has_kernel_for_dispatch_key(op.name(), "CompositeImplicitAutograd")):
                hidden[op] = op.py_kernels.pop(DispatchKey.Meta)
                op._dispatch_cache.clear()
    try:
        yield
    finally:
        for op, kernel in hidden.items():
            op.py_kernels[DispatchKey.Meta] = kernel
            op._dispatch_cache.clear()


@contextlib.contextmanager
def _node_meta_through_flattening() -> Iterator[None]:
    """While torch builds a joint graph: its nodes keep the stack traces of the
    nodes they come from, the user's lines (a backward node the line of its
    forward node, as AOT autograd records it).

    AOT autograd traces the joint graph with each node's meta carried (forward
    nodes from the exported program's, backward nodes from their forward
    node's), then traces that graph once more, calling its generated code, to
    drop the tangents (`aot_export_module`'s `flattened_joint`); that trace
    records the generated code's line (`<eval_with_key>`) for every node. Here
    the joint graph AOT autograd returns is called node by node with each
    node's meta current (`locations.replay`), so the second trace keeps it."""
    from torch._functorch import aot_autograd

    export_function = aot_autograd._aot_export_function

    def replayed(*args: Any, **kwargs: Any) -> Any:
        graph, *rest = export_function(*args, **kwargs)
        if not kwargs.get("trace_joint") or not isinstance(graph, torch.fx.GraphModule):
            return (graph, *rest)  # only the joint graph is traced again
        return (functools.partial(replay, graph), *rest)

    aot_autograd._aot_export_function = replayed
    try:
        yield
    finally:
        aot_autograd._aot_export_function = export_function


def _view_base(node: torch.fx.Node) -> torch.fx.Node:
    """The node `node` is a view or alias of (through detach, view, slice, ...), by the ops' schemas."""
    while node.op == "call_function" and node.args and isinstance(node.args[0], torch.fx.Node):
        schema = getattr(node.target, "_schema", None)
        first = schema.arguments[0].alias_info if schema is not None and schema.arguments else None
        if first is None or first.is_write:
            break
        node = node.args[0]
    return node


def _writes(module: torch.fx.GraphModule) -> Iterator[tuple[torch.fx.Node, torch.fx.Node]]:
    """Each (writing node, node written) of `module`'s graph: an op whose schema writes its argument, the
    written value taken to its view base; writes inside a higher-order op's subgraph (a
    `torch.no_grad()` block: wrap_with_set_grad_enabled) mapped to the operands it was called with."""
    for node in module.graph.nodes:
        if node.op != "call_function":
            continue
        if isinstance(node.target, torch._ops.HigherOrderOperator):
            yield from _subgraph_writes(module, node)
            continue
        schema = getattr(node.target, "_schema", None)
        for argument, value in zip(schema.arguments if schema is not None else [], node.args):
            if argument.alias_info is not None and argument.alias_info.is_write and isinstance(value, torch.fx.Node):
                yield node, _view_base(value)


def _subgraph_writes(module: torch.fx.GraphModule, call: torch.fx.Node) -> Iterator[tuple[torch.fx.Node,
                                                                                            torch.fx.Node]]:
    """`_writes` of the subgraph a higher-order op calls (its first get_attr argument; the operands after it)."""
    for position, argument in enumerate(call.args):
        sub = getattr(module, str(argument.target), None) if isinstance(argument, torch.fx.Node) \
            and argument.op == "get_attr" else None
        if isinstance(sub, torch.fx.GraphModule):
            placeholders = [n for n in sub.graph.nodes if n.op == "placeholder"]
            operands = dict(zip(placeholders, call.args[position + 1:], strict=False))
            for writer, written in _writes(sub):
                outer = operands.get(written)
                if isinstance(outer, torch.fx.Node):
                    yield writer, _view_base(outer)
            return


def _parameter_writes(ep: torch.export.ExportedProgram) -> Iterator[tuple[torch.fx.Node, str, torch.Tensor]]:
    """Each (node, parameter name, parameter) where the node writes a parameter in place (through any
    view of the parameter, in a no_grad block too)."""
    parameters = ep.graph_signature.inputs_to_parameters
    for node, written in _writes(ep.graph_module):
        name = parameters.get(written.name)
        tensor = ep.state_dict.get(name) if name else None
        if isinstance(tensor, torch.Tensor):
            yield node, name, tensor


def frozen_writes_as_buffers(ep: torch.export.ExportedProgram) -> torch.export.ExportedProgram:
    """`ep` with each frozen parameter (requires_grad=False) that the forward writes in place (MoCo's
    momentum encoder moved toward the trained one, an EMA of weights) relabeled a persistent buffer:
    program state the step updates in place, as a buffer the forward writes. torch's joint export
    refuses to mutate any parameter input, frozen or not. The caller's `ep` is left as it was."""
    from torch.export.experimental import _copy_graph_module_and_signature

    frozen = {name for _, name, tensor in _parameter_writes(ep) if not tensor.requires_grad}
    if not frozen:
        return ep
    graph_module, signature = _copy_graph_module_and_signature(ep)
    for spec in signature.input_specs:
        if spec.kind == InputKind.PARAMETER and spec.target in frozen:
            spec.kind, spec.persistent = InputKind.BUFFER, True
    return ep._update(graph_module, signature)


def check_no_parameter_writes(ep: torch.export.ExportedProgram) -> None:
    """Refuse a forward that writes a trained parameter in place (by an op whose
    schema writes its argument, through any view of the parameter):
    nn.Embedding(max_norm=...) renormalizes the rows it reads. torch's joint
    export cannot differentiate a graph input it mutates."""
    for node, name, tensor in _parameter_writes(ep):
        if tensor.requires_grad:
            raise TrainingError(
                f"{describe_location(node)}: {node.target} writes the trained parameter '{name}' in place in "
                "the forward (as nn.Embedding(max_norm=...) renormalizes the rows it reads); a training step "
                "cannot differentiate a parameter its forward mutates: renormalize outside the step "
                "(max_norm=None) or freeze the parameter")


_ANOMALY = "Traceback of forward call that caused the error:"
"""How autograd's anomaly mode (on while AOT autograd traces) begins the
forward line of a backward that failed, in the warning it gives."""


def _forward_call(caught: list[warnings.WarningMessage]) -> str:
    """`file:line:col: code: ` of the forward call whose backward failed, from
    anomaly mode's last warning; '' without one."""
    for warning in reversed(caught):
        text = str(warning.message)
        if _ANOMALY in text:
            where = trace_line(text.split(_ANOMALY, 1)[1].split(" (Triggered internally", 1)[0])
            if where is not None:
                return f"{where}: {where.code}: " if where.code else f"{where}: "
    return ""


_VALUE_CHECKS = {
    "aten.allclose": (
        " (torch's backward of the singular or eigen vectors of a complex matrix, `linalg.svd` or `linalg.eig`, "
        "checks on the values that the loss does not depend on the vectors' phases, which no traced graph can; "
        "a loss through `svdvals`, `eigvals`, a Hermitian `eigh` or a complex QR trains)"),
}
"""Ops torch's backward formulas call on values (a check a graph cannot trace), and what refuses them."""


def _why_refused(first: str) -> str:
    """The reason a joint graph refused at an op of `_VALUE_CHECKS`, or nothing."""
    return next((why for name, why in _VALUE_CHECKS.items() if name in first), "")


def joint_graph(ep: torch.export.ExportedProgram) -> torch.export.ExportedProgram:
    """torch's joint graph (forward and backward; LOSS_OUTPUT and gradient
    outputs) of a program returning a loss: what
    `torch.export.experimental._export_forward_backward` builds, with the
    attention's math differentiated, silu's gradient rounded as eager's
    kernel (`_with_eager_gradients`), autocast's weight cache written out
    (`shared_autocast_casts`) and layer norm's backward kept whole
    (`LAYER_NORM_AS_EAGER`: converted as torch's fused kernel)."""
    from torch._decomp import core_aten_decompositions
    from torch.export.experimental import _copy_graph_module_and_signature, _remove_detach_pass
    from torch.export.exported_program import _decompose_exported_program

    check_loss(ep)
    if not any(p.requires_grad for p in ep.state_dict.values() if isinstance(p, torch.nn.Parameter)):
        raise TrainingError("no parameter of the model requires grad: there is nothing to train")
    check_no_parameter_writes(ep)
    ep = frozen_writes_as_buffers(ep)
    try:
        with (_composite_gradients_on_meta(_on_meta(ep)), _node_meta_through_flattening(), checks_without_effects(),
              corrected_kernels(), warnings.catch_warnings(record=True) as caught):
            warnings.simplefilter("always")
            traced = _with_eager_gradients(shared_autocast_casts(_reshapes_in_autocast(
                _without_unused_gradients(linalg_decomposed(ep)))))
            table = {**core_aten_decompositions(), **torch_corrections()}
            for name in LAYER_NORM_AS_EAGER:  # converted whole, as torch's kernel computes it
                table.pop(overload(name), None)
            joint = _decompose_exported_program(
                traced, cia_to_decomp={},
                python_decomp_table=table,
                joint_loss_index=0, decompose_custom_triton_ops=False,
            )
    except Exception as error:  # torch's own refusal, named (at the forward line autograd's anomaly mode names)
        first = str(error).strip().splitlines()[0]
        raise TrainingError(f"{_forward_call(caught)}torch could not build the joint graph: {first}"
                            f"{_why_refused(first)}") from None
    for warning in caught:
        if _ANOMALY not in str(warning.message):
            warnings.warn_explicit(warning.message, warning.category, warning.filename, warning.lineno)
    graph_module, signature = _copy_graph_module_and_signature(joint)
    _remove_detach_pass(graph_module, signature)
    return joint._update(graph_module, signature)


def canonical_names(ep: torch.export.ExportedProgram, names: Sequence[str], trained: Sequence[str]) -> list[str]:
    """`names` with each tied parameter the graph does not read replaced by the
    name it is read through (the same tensor), so its update is the trained one's;
    each name once (a weight tied three ways is one parameter, updated once, as
    `model.parameters()` lists it once)."""
    state = ep.state_dict
    result = []
    for name in names:
        if name not in trained:
            name = next((t for t in trained if state.get(t) is state.get(name)), name)
        result.append(name)
    return list(dict.fromkeys(result))


def _trained_parameters(module: ModuleOp) -> list[str]:
    roles = result_roles(entry_function(module))
    return [r.name for r in roles if r is not None and r.kind == "gradient" and r.of == "parameter"]


def compile_step(
    ep: torch.export.ExportedProgram, groups: Sequence[ParamGroup] | None, options: CompileOptions,
    loss_scale: float = 1.0, dynamic: DynamicScale | None = None, clip: tuple[float, float] | None = None,
    microbatches: int = 1,
) -> TrainingStep:
    """Compile the training step of `ep` (forward returning a loss) with the
    optimizer's `groups` (None: no optimizer; the step returns the loss and the
    gradients). Parameters with no gradient (frozen) are left alone, as torch.optim does.
    `loss_scale`: the static scale the loss was multiplied by; `dynamic`: the
    loss was multiplied by the global `grad_scale` (dynamic loss scaling);
    `clip`: (max_norm, norm_type), clip_grad_norm_ before the update;
    `microbatches`: the microbatches `ep` runs itself (`TrainingForward`),
    recorded for rdu-partition's 1F1B schedule and the cost model."""
    if dynamic is not None and groups is None:
        raise TrainingError("dynamic loss scaling needs an optimizer (it skips the update on an overflow)")
    if clip is not None and groups is None:
        raise TrainingError("gradient clipping (max_grad_norm) needs an optimizer: the step without one "
                            "returns the gradients unclipped")
    if clip is not None and dynamic is not None:
        raise TrainingError("gradient clipping (max_grad_norm) with dynamic loss scaling is not supported; "
                            "use a static loss_scale")
    if is_dynamic(ep):  # compiled per size (`rducc.training.buckets`)
        raise TrainingError(dynamic_help(dynamic_dims(ep), "rducc.compile_training"))
    target = load_target(options.target)
    times = options.times
    with times.stage("joint graph"):
        joint = joint_graph(ep)
    module, decomposed = decompose_and_import(joint, times, options.f64, False, options.host_ops)
    weights = program_weights(decomposed)
    trained = _trained_parameters(module)
    set_executed_microbatches(module, microbatches)
    chosen = [ParamGroup(g.spec, canonical_names(ep, g.names, trained)) for g in groups or []]
    if groups is not None:
        covered = [Trained(g.spec, [n for n in g.names if n in trained], i) for i, g in enumerate(chosen)]
        covered = [t for t in covered if t.names]
        parameters = {name: ep.state_dict[name] for t in covered for name in t.names}
        with times.stage("optimizer"):
            initial = append_optimizer(module, covered, parameters, 1.0 / loss_scale, dynamic, clip) if covered else {}
        if weights:
            weights.update({name: t.detach() for name, t in initial.items()})
    lower(module, target, options.opt_level, options.emit, times, passes=options.passes,
          verify_each=options.verify_each, split=options.split)
    aliases = {name: alias for name in unused_parameters(ep)
               for alias in canonical_names(ep, [name], trained) if alias != name}
    return TrainingStep(module, weights, chosen, trained, ep, aliases, dynamic)


def parameter_names(ep: torch.export.ExportedProgram) -> list[str]:
    """The program's parameters, in the order `model.parameters()` lists them."""
    return [str(s.target) for s in ep.graph_signature.input_specs if s.kind.name == "PARAMETER"]


def single_group(spec: OptimizerSpec, ep: torch.export.ExportedProgram) -> list[ParamGroup]:
    """One param group over every parameter (`Optimizer(model.parameters(), ...)`)."""
    return [ParamGroup(spec, parameter_names(ep))]


LossFn = Callable[..., torch.Tensor]


class TrainingForward(torch.nn.Module):
    """The loss a training step differentiates: the model's own output (its
    `loss` when it returns a mapping, as transformers' models given `labels`
    do), or `loss_fn(model(*inputs[:-1]), inputs[-1])`; computed under CPU
    autocast to `compute_dtype` when given (mixed precision: the parameters,
    the master weights, stay float32; autocast casts what it computes in bf16)
    and multiplied by `loss_scale` (static loss scaling: the gradients come out
    scaled, the optimizer's update unscales them first) or, with `dynamic`, by
    the buffer `grad_scale` (dynamic loss scaling, `scaling`).

    With `microbatches` k > 1 every batched input is split along its first
    dimension into k microbatches and the loss is the sum of each
    microbatch's loss / k: the gradients are eager's accumulated over k
    `(loss / k).backward()` calls before one optimizer step. `constants`:
    keyword inputs that are not tensors (`return_dict=False`), passed to the
    model every call (torch's joint export takes tensor inputs only)."""

    def __init__(self, model: torch.nn.Module, loss_fn: LossFn | None = None,
                 compute_dtype: torch.dtype | None = None, loss_scale: float = 1.0,
                 dynamic: DynamicScale | None = None, microbatches: int = 1, input_names: Sequence[str] = (),
                 constants: Mapping[str, Any] | None = None):
        super().__init__()
        if input_names:  # the inputs keep the names they had (export names them by the forward's signature)
            self.forward = _named(self.forward, input_names)  # type: ignore[method-assign]
        self.model = model
        self.loss_fn = loss_fn
        self.compute_dtype = compute_dtype
        self.loss_scale = loss_scale
        self.microbatches = microbatches
        self.constants = dict(constants or {})
        if dynamic is not None:
            self.register_buffer(SCALE, torch.full((), dynamic.init_scale))

    def forward(self, *inputs: Any, **named: Any) -> torch.Tensor:
        named = {**named, **self.constants}
        if self.microbatches == 1:
            loss = self._loss(inputs, named)
        else:
            parts = [self._loss(*_microbatch(inputs, named, self.microbatches, i)) / self.microbatches
                     for i in range(self.microbatches)]
            loss = parts[0]
            for part in parts[1:]:
                loss = loss + part
        if hasattr(self, SCALE):
            return loss * self.get_buffer(SCALE)
        return loss * self.loss_scale if self.loss_scale != 1.0 else loss

    def _autocast(self) -> contextlib.AbstractContextManager[Any]:
        """CPU autocast to the compute dtype; no context at all in full precision
        (export records even a disabled autocast as a `wrap_with_autocast` region,
        inside which torch's joint export mis-traces views of strided tensors)."""
        if self.compute_dtype is None:
            return contextlib.nullcontext()
        return torch.autocast("cpu", dtype=self.compute_dtype)

    def _loss(self, inputs: tuple, named: dict[str, Any]) -> torch.Tensor:
        with self._autocast():
            if self.loss_fn is None:
                loss = self.model(*inputs, **named)
            else:
                loss = self.loss_fn(self.model(*inputs[:-1], **named), inputs[-1])
        if isinstance(loss, Mapping) and "loss" in loss:
            loss = loss["loss"]
        elif self.loss_fn is None and isinstance(loss, tuple | list) and loss:  # (loss, logits, ...)
            loss = loss[0]
        return loss


def _named(forward: Callable[..., torch.Tensor], names: Sequence[str]) -> Callable[..., torch.Tensor]:
    """`forward(*inputs)` with the signature `(name_0, name_1, ...)`."""
    def named_forward(*inputs: Any) -> torch.Tensor:
        return forward(*inputs)

    kind = inspect.Parameter.POSITIONAL_OR_KEYWORD
    named_forward.__signature__ = inspect.Signature([inspect.Parameter(n, kind) for n in names])  # type: ignore
    return named_forward


def _microbatch(inputs: tuple, named: dict[str, Any], count: int, index: int) -> tuple[tuple, dict[str, Any]]:
    """Microbatch `index` of `count`: every tensor input's rows index*B/count..(index+1)*B/count."""
    def part(value: Any) -> Any:
        if isinstance(value, torch.Tensor) and value.dim() > 0:
            size = value.shape[0] // count
            return value[index * size:(index + 1) * size]
        return value
    return tuple(part(v) for v in inputs), {k: part(v) for k, v in named.items()}


def check_microbatches(count: int, inputs: Sequence[Any]) -> None:
    """`count` microbatches divide every batched input's first dimension."""
    if not isinstance(count, int) or count < 1:
        raise TrainingError(f"microbatches {count}: give a whole number of at least 1")
    for index, value in enumerate(inputs):
        if count > 1 and isinstance(value, torch.Tensor):
            if value.dim() == 0 or value.shape[0] % count:
                size = "a scalar" if value.dim() == 0 else f"batch {value.shape[0]}"
                raise TrainingError(f"microbatches {count}: input #{index} has {size}, which does not split "
                                    f"into {count} equal microbatches along its first dimension")
