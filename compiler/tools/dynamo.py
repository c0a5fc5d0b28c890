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
- rducc runs inference only: an input that requires grad while grad mode is
  on is refused (its gradient would be lost), never silently detached.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import torch

from rducc.errors import RduccError
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


def refuse_grad(graph: torch.fx.GraphModule, example_inputs: Sequence[Any]) -> None:
    """An input that requires grad, with grad mode on, would lose its gradient: refuse it."""
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
        self.inner = graph
        self.fixed = [None if isinstance(a, torch.Tensor) else a for a in args]

    def forward(self, *tensors: torch.Tensor) -> Any:
        given = iter(tensors)
        return self.inner(*[next(given) if value is None else value for value in self.fixed])


def _key(args: Sequence[Any]) -> tuple:
    return tuple((tuple(a.shape), a.dtype) if isinstance(a, torch.Tensor) else a for a in args)


def rducc_backend(
    graph: torch.fx.GraphModule,
    example_inputs: Sequence[Any],
    *,
    options: dict[str, Any] | None = None,
    mode: str | None = None,
) -> Callable[..., Any]:
    """Compile one Dynamo graph with rducc (see the module's docstring for options)."""
    from rducc.program import compile as rducc_compile

    settings = backend_options(options, mode)
    refuse_grad(graph, example_inputs)
    compiled: dict[tuple, Callable[..., Any]] = {}

    def program_for(args: Sequence[Any]) -> Callable[..., Any]:
        key = _key(args)
        if key not in compiled:
            tensors = tuple(a for a in args if isinstance(a, torch.Tensor))
            compiled[key] = rducc_compile(_Specialized(graph, args), tensors, **settings)
        return compiled[key]

    if all(_is_static(value) for value in example_inputs):
        program_for(example_inputs)  # compile now: errors surface at the first call

    def run(*args: Any) -> Any:
        refuse_grad(graph, args)
        return program_for(args)(*[a for a in args if isinstance(a, torch.Tensor)])

    run.programs = compiled  # type: ignore[attr-defined] # the Programs by input shapes, for tests
    return run
