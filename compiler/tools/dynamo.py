"""`torch.compile(model, backend="rducc")`: the TorchDynamo backend.

Registered through torch's `torch_dynamo_backends` entry point. Dynamo hands
over each captured FX graph with example inputs; rducc exports it, compiles
it and returns a function that runs the placed program in rducc's runtime.

- `options=` (`torch.compile(m, backend="rducc", options={...})`) takes
  `target` (a name or a target file), `opt_level` (0, 1 or 2) and `f64`
  (emulate, refuse or demote); any other key or value is an error.
- rducc compiles static shapes: when Dynamo hands over a graph with symbolic
  sizes (a second input shape makes it mark the dimension dynamic), the
  graph is compiled once per concrete shape it is called with, and cached.
- Training: a graph that needs grad (an input or parameter that requires
  grad, with grad mode on) goes through AOT autograd
  (`torch._dynamo.backends.common.aot_autograd`): its forward and backward
  graphs, in Core ATen, are each compiled by rducc as a static program, so
  `loss.backward()` gives eager's gradients computed in rducc's runtime (a
  dropout's mask is a forward output the backward reads). A graph rducc
  cannot compile for training falls back to eager with one warning naming
  the reason, rather than failing the user's step: a refused forward runs
  the whole graph in eager; a refused backward (AOT autograd compiles it at
  the first `loss.backward()`) runs that backward graph in eager, its
  forward staying in rducc; a shape first seen at a later call and refused
  runs that call's part in eager. Each part warns once.
- Shapes: rducc compiles static shapes. `torch.compile(dynamic=True)` hands
  over graphs with symbolic sizes; each is compiled per concrete shape it is
  called with (the sizes become constants), and a graph whose symbolic sizes
  cannot be fixed is one error saying rducc compiles static shapes.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from typing import Any

import torch

from rducc.errors import RduccError
from rducc.frontend.locations import replay
from rducc.targets import DEFAULT_TARGET

OPTIONS = {"target": DEFAULT_TARGET, "opt_level": 2, "f64": "emulate"}
"""The options the backend takes, with their defaults."""

F64_POLICIES = ("emulate", "refuse", "demote")


def backend_options(options: dict[str, Any] | None, mode: str | None = None) -> dict[str, Any]:
    """`options=` checked and completed with the defaults (the target loaded)."""
    from rducc.targets import load_target

    if mode not in (None, "default"):
        raise RduccError(f"the rducc backend has no mode {mode!r}; use options={{'opt_level': 0, 1 or 2}}")
    given = dict(options or {})
    unknown = sorted(set(given) - set(OPTIONS))
    if unknown:
        raise RduccError(
            f"unknown rducc backend option(s) {', '.join(map(repr, unknown))}; "
            f"the options are {', '.join(OPTIONS)}"
        )
    settings = {**OPTIONS, **given}
    level = settings["opt_level"]
    if isinstance(level, bool) or level not in (0, 1, 2):
        raise RduccError(f"rducc backend option opt_level must be 0, 1 or 2, got {level!r}")
    if settings["f64"] not in F64_POLICIES:
        raise RduccError(f"rducc backend option f64 must be one of {', '.join(F64_POLICIES)}, got {settings['f64']!r}")
    settings["target"] = load_target(settings["target"])  # an unknown target fails here
    return settings


def needs_grad(example_inputs: Sequence[Any]) -> bool:
    """Whether grad mode is on and an input (or parameter) of the graph requires grad."""
    return torch.is_grad_enabled() and any(isinstance(v, torch.Tensor) and v.requires_grad for v in example_inputs)


def refuse_grad(graph: torch.fx.GraphModule, example_inputs: Sequence[Any]) -> None:
    """An input that requires grad, with grad mode on, would lose its gradient: refuse it
    (a graph compiled for inference called with inputs that require grad)."""
    if not torch.is_grad_enabled():
        return
    names = [node.name for node in graph.graph.nodes if node.op == "placeholder"]
    for index, value in enumerate(example_inputs):
        if isinstance(value, torch.Tensor) and value.requires_grad:
            name = f" ({names[index]})" if index < len(names) else ""
            raise RduccError(
                f"input #{index}{name} of the compiled graph, shape {list(value.shape)}, requires grad "
                "(a parameter or input), "
                "and rducc compiles inference only: its gradient would be lost. Call the model "
                "under torch.no_grad() or torch.inference_mode() (or detach the input)"
            )


def _is_static(value: Any) -> bool:
    if isinstance(value, torch.SymInt | torch.SymFloat | torch.SymBool):
        return False
    if isinstance(value, torch.Tensor):
        return not any(isinstance(d, torch.SymInt) for d in (*value.shape, *value.stride()))
    return True


class _Specialized(torch.nn.Module):
    """The graph with its non-tensor inputs (sizes) fixed: takes the tensors only."""

    def __init__(self, graph: torch.fx.GraphModule, args: Sequence[Any]):
        super().__init__()
        self.inner = _constants_as_buffers(graph)
        self.fixed = [None if isinstance(a, torch.Tensor) else a for a in args]
        self.absent = absent_outputs(graph)

    def forward(self, *tensors: torch.Tensor) -> Any:
        """The graph's results; run node by node (`locations.replay`), so that
        export gives each node the user's line the graph's node has (AOT
        autograd's backward nodes that of their forward node), not the graph's
        generated code."""
        given = iter(tensors)
        result = replay(self.inner, *[next(given) if value is None else value for value in self.fixed])
        if self.absent:  # the program returns the others; `with_absent` puts the Nones back
            return tuple(value for index, value in enumerate(result) if index not in self.absent)
        return result


def _constants_as_buffers(graph: torch.fx.GraphModule) -> torch.fx.GraphModule:
    """The graph's tensor constants (`get_attr` of a plain tensor attribute, as AOT
    autograd leaves `torch.tensor([])`) registered as buffers, so that export lifts
    them instead of meeting a real tensor inside its fake mode."""
    for node in graph.graph.nodes:
        if node.op != "get_attr" or "." in str(node.target):
            continue
        value = getattr(graph, str(node.target), None)
        if isinstance(value, torch.Tensor) and not isinstance(value, torch.nn.Parameter) \
                and str(node.target) not in dict(graph.named_buffers()):
            delattr(graph, str(node.target))
            graph.register_buffer(str(node.target), value.detach().clone(), persistent=False)
    return graph


def absent_outputs(graph: torch.fx.GraphModule) -> frozenset[int]:
    """Positions of a tuple result that are None in the graph (a backward graph's
    gradient of an input that needs none)."""
    results = graph.graph.output_node().args[0]
    if not isinstance(results, tuple | list):
        return frozenset()
    return frozenset(index for index, value in enumerate(results) if value is None)


def with_absent(values: Any, absent: frozenset[int]) -> Any:
    """The program's results with None put back at the `absent` positions."""
    if not absent:
        return values
    given = iter(values)
    return tuple(None if index in absent else next(given) for index in range(len(values) + len(absent)))


def _key(args: Sequence[Any]) -> tuple:
    return tuple((tuple(a.shape), a.dtype) if isinstance(a, torch.Tensor) else a for a in args)


Refusal = Callable[[torch.fx.GraphModule, RduccError], Callable[..., Any]]
"""What a training part does with a graph rducc refuses: warn, and give the function that runs it instead."""


def _static_compiler(settings: dict[str, Any], on_refusal: Refusal | None = None) \
        -> Callable[[torch.fx.GraphModule, Sequence[Any]], Callable[..., Any]]:
    """A compiler of one graph: a static rducc program per concrete input shape, cached. With
    `on_refusal`, a shape first compiled at a call and refused runs as `on_refusal` says."""

    def compile_graph(graph: torch.fx.GraphModule, example_inputs: Sequence[Any]) -> Callable[..., Any]:
        from rducc.program import compile as rducc_compile

        compiled: dict[tuple, Callable[..., Any]] = {}

        def program_for(args: Sequence[Any]) -> Callable[..., Any]:
            key = _key(args)
            if key not in compiled:
                tensors = tuple(a for a in args if isinstance(a, torch.Tensor))
                try:
                    with _outside_tracing():  # a new shape compiles at its first call, maybe inside AOT's wrappers
                        compiled[key] = rducc_compile(_Specialized(graph, args), tensors, **settings)
                except RduccError as error:
                    if any(not _is_static(a) for a in args):
                        raise RduccError(f"rducc compiles static shapes; this graph's sizes are symbolic ({error})") \
                            from None
                    raise
            return compiled[key]

        if all(_is_static(value) for value in example_inputs):
            program_for(example_inputs)  # compile now: errors surface at the first call

        absent = absent_outputs(graph)

        def run(*args: Any) -> Any:
            try:
                program = program_for(args)
            except RduccError as error:
                if on_refusal is None:
                    raise
                return on_refusal(graph, error)(*args)
            return with_absent(program(*[a for a in args if isinstance(a, torch.Tensor)]), absent)

        run.programs = compiled  # type: ignore[attr-defined] # the Programs by input shapes, for tests
        return run

    return compile_graph


def _outside_tracing() -> Any:
    """No torch dispatch mode active (AOT autograd's fake or functional mode)."""
    from torch.utils._python_dispatch import _disable_current_modes

    return _disable_current_modes()


def _boxed(compiler: Callable[[torch.fx.GraphModule, Sequence[Any]], Callable[..., Any]]) \
        -> Callable[[torch.fx.GraphModule, Sequence[Any]], Callable[..., Any]]:
    """AOT autograd calls a compiled part with one list of arguments (boxed)."""
    from torch._functorch.aot_autograd import make_boxed_func

    def compile_boxed(graph: torch.fx.GraphModule, example_inputs: Sequence[Any]) -> Callable[..., Any]:
        with _outside_tracing():  # AOT autograd calls its compilers inside its fake mode
            run = compiler(graph, example_inputs)
        boxed = make_boxed_func(run)
        boxed.programs = run.programs  # type: ignore[attr-defined]
        return boxed

    return compile_boxed


TRAINING_PARTS: list[dict[tuple, Callable[..., Any]]] = []
"""The Programs of the last training compile's parts (forward, then backward), for tests."""


def _training_backend(graph: torch.fx.GraphModule, example_inputs: Sequence[Any],
                      settings: dict[str, Any]) -> Callable[..., Any]:
    """Forward and backward graphs (Core ATen, from AOT autograd) each compiled by rducc."""
    from torch._dynamo.backends.common import aot_autograd

    from rducc.training.autocast_cache import shared_autocast_casts_in_graph
    from rducc.training.linalg_gradients import checks_without_effects
    from rducc.training.saved_statistics import partition_recomputing_statistics

    def part(name: str, fallback: bool) -> Callable[[torch.fx.GraphModule, Sequence[Any]], Callable[..., Any]]:
        refusal = eager_once(name)
        compiler = _boxed(_static_compiler(settings, refusal))

        def recorded(graph: torch.fx.GraphModule, example_inputs: Sequence[Any]) -> Callable[..., Any]:
            try:
                compiled = compiler(graph, example_inputs)
            except RduccError as error:
                if not fallback:
                    raise
                from torch._functorch.aot_autograd import make_boxed_func

                compiled = make_boxed_func(refusal(graph, error))
                compiled.programs = {}  # type: ignore[attr-defined]
            TRAINING_PARTS.append(compiled.programs)  # type: ignore[attr-defined]
            return compiled

        return recorded

    TRAINING_PARTS.clear()
    # a refused forward raises to `rducc_backend`, which runs the whole graph in eager
    backend = aot_autograd(fw_compiler=part("forward", fallback=False), bw_compiler=part("backward", fallback=True),
                           decompositions=_backward_decompositions(), partition_fn=partition_recomputing_statistics)
    # AOT autograd traces with autocast's weight cache off: a weight autocast casts several times is cast once
    shared_autocast_casts_in_graph(graph)
    _attention_as_eager(graph)
    with checks_without_effects():  # no effect token as a graph input (rducc drops linalg's checks)
        return backend(graph, example_inputs)


def _attention_as_eager(graph: torch.fx.GraphModule) -> None:
    """Dynamo's `scaled_dot_product_attention` calls traced as `compile_training`'s joint graph traces them
    (`rducc.training.attention.attention_as_eager`: autocast's casts, then float32 math or, on 16-bit inputs,
    the fused CPU kernel's roundings), not as AOT autograd's flash-attention op and its opaque backward: under
    bf16 autocast those were a bf16 rounding off eager's forward and gradients."""
    from rducc.training.attention import attention_as_eager, prepare_autocast

    found = [node for node in graph.graph.nodes
             if node.op == "call_function" and node.target is torch.nn.functional.scaled_dot_product_attention]
    if not found:
        return
    regions = [(device, torch.get_autocast_dtype(device)) for device in ("cpu", "cuda")
               if torch.is_autocast_enabled(device)]
    regions += [(str(node.args[0]), node.args[1]) for node in graph.graph.nodes
                if node.target is torch.amp.autocast_mode._enter_autocast and isinstance(node.args[1], torch.dtype)]
    with _outside_tracing():
        prepare_autocast(regions)
    for node in found:
        node.target = attention_as_eager
    graph.recompile()


def _backward_decompositions() -> dict[Any, Callable[..., Any]]:
    """torch.export's default table for AOT autograd, less the backward ops rducc converts whole as torch's
    fused kernel computes them (`LAYER_NORM_AS_EAGER`), as `compile_training`'s joint graph keeps them:
    decomposed, a 16-bit layer norm's weight and bias gradients were a bf16 rounding off eager's kernel."""
    from rducc.frontend.aten_normalization import LAYER_NORM_AS_EAGER
    from rducc.frontend.decompositions import overload

    table = dict(torch.export.default_decompositions())
    for name in LAYER_NORM_AS_EAGER:
        table.pop(overload(name), None)
    return table


def eager_once(part: str) -> Refusal:
    """A refusal that runs the refused graph in eager, warning once (at the first refusal) with its reason."""
    warned: list[bool] = []

    def refused(graph: torch.fx.GraphModule, error: RduccError) -> Callable[..., Any]:
        if not warned:
            warned.append(True)
            reason = str(error).splitlines()[0]
            warnings.warn(f"rducc: the {part} graph of this training step could not be compiled ({reason}); "
                          "it runs in eager", stacklevel=2)
        return graph

    return refused


def rducc_backend(
    graph: torch.fx.GraphModule,
    example_inputs: Sequence[Any],
    *,
    options: dict[str, Any] | None = None,
    mode: str | None = None,
) -> Callable[..., Any]:
    """Compile one Dynamo graph with rducc (see the module's docstring for options)."""
    settings = backend_options(options, mode)
    if needs_grad(example_inputs):
        try:
            return _training_backend(graph, example_inputs, settings)
        except RduccError as error:
            reason = str(error).splitlines()[0]
            warnings.warn(f"rducc: this graph needs grad and could not be compiled for training ({reason}); "
                          "it runs in eager", stacklevel=2)
            return graph.forward
    inference = _static_compiler(settings)(graph, example_inputs)

    def run(*args: Any) -> Any:
        refuse_grad(graph, args)
        return inference(*args)

    run.programs = inference.programs  # type: ignore[attr-defined] # the Programs by input shapes, for tests
    return run
