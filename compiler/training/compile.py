"""Compiling a training step: a model whose forward returns a loss, to a placed
program that runs forward, backward and the optimizer's update.

    exported (forward -> loss)
      -> torch.export.experimental._export_forward_backward  (the joint graph)
      -> import (loss + gradients, phases forward / backward)
      -> append the optimizer's update (phase optimizer; `step.append_optimizer`)
      -> the -O pipeline, as for inference
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch
from torch.export.graph_signature import OutputKind
from xdsl.dialects.builtin import ModuleOp

from rducc.dialects.contracts import result_roles
from rducc.dialects.program import entry_function
from rducc.driver import CompileOptions, decompose_and_import, lower
from rducc.errors import RduccError
from rducc.frontend.locations import describe_location
from rducc.targets import load_target
from rducc.training.optimizers import OptimizerSpec, Trained, update_program
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


def check_loss(ep: torch.export.ExportedProgram) -> None:
    """The forward must return one floating scalar: the loss."""
    output = next(n for n in ep.graph.nodes if n.op == "output")
    specs = ep.graph_signature.output_specs
    user = [(s, r) for s, r in zip(specs, output.args[0]) if s.kind == OutputKind.USER_OUTPUT]
    if len(user) != 1:
        raise TrainingError(
            f"the model's forward returns {len(user)} outputs; a training step needs one: the loss (a scalar)"
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


def joint_graph(ep: torch.export.ExportedProgram) -> torch.export.ExportedProgram:
    """torch's joint graph (forward and backward) of a program returning a loss."""
    from torch.export.experimental import _export_forward_backward

    check_loss(ep)
    if not any(p.requires_grad for p in ep.state_dict.values() if isinstance(p, torch.nn.Parameter)):
        raise TrainingError("no parameter of the model requires grad: there is nothing to train")
    try:
        return _export_forward_backward(ep)
    except Exception as error:  # torch's own refusal, named
        raise TrainingError(f"torch could not build the joint graph: {str(error).splitlines()[0]}") from None


def _trained_parameters(module: ModuleOp) -> list[str]:
    roles = result_roles(entry_function(module))
    return [r.name for r in roles if r is not None and r.kind == "gradient" and r.of == "parameter"]


def compile_step(
    ep: torch.export.ExportedProgram, groups: Sequence[ParamGroup] | None, options: CompileOptions
) -> TrainingStep:
    """Compile the training step of `ep` (forward returning a loss) with the
    optimizer's `groups` (None: no optimizer; the step returns the loss and the
    gradients). Parameters with no gradient (frozen) are left alone, as torch.optim does."""
    target = load_target(options.target)
    times = options.times
    module, decomposed = decompose_and_import(joint_graph(ep), times, options.f64, False, options.host_ops)
    weights = program_weights(decomposed)
    trained = _trained_parameters(module)
    chosen = [ParamGroup(g.spec, list(g.names)) for g in groups or []]
    if groups is not None:
        covered = [Trained(g.spec, [n for n in g.names if n in trained]) for g in chosen]
        covered = [t for t in covered if t.names]
        parameters = {name: ep.state_dict[name] for t in covered for name in t.names}
        with times.stage("optimizer"):
            initial = append_optimizer(module, update_program(covered, parameters), covered) if covered else {}
        if weights:
            weights.update({name: t.detach() for name, t in initial.items()})
    lower(module, target, options.opt_level, options.emit, times, passes=options.passes,
          verify_each=options.verify_each, split=options.split)
    return TrainingStep(module, weights, chosen, trained, ep)


def parameter_names(ep: torch.export.ExportedProgram) -> list[str]:
    """The program's parameters, in the order `model.parameters()` lists them."""
    return [str(s.target) for s in ep.graph_signature.input_specs if s.kind.name == "PARAMETER"]


def single_group(spec: OptimizerSpec, ep: torch.export.ExportedProgram) -> list[ParamGroup]:
    """One param group over every parameter (`Optimizer(model.parameters(), ...)`)."""
    return [ParamGroup(spec, parameter_names(ep))]


LossFn = Callable[..., torch.Tensor]


class WithLoss(torch.nn.Module):
    """`loss_fn(model(*inputs), *targets)` as one module: the last `targets`
    inputs go to the loss, the rest to the model."""

    def __init__(self, model: torch.nn.Module, loss_fn: LossFn, targets: int = 1):
        super().__init__()
        self.model = model
        self.loss_fn = loss_fn
        self.targets = targets

    def forward(self, *inputs: Any) -> torch.Tensor:
        split = len(inputs) - self.targets
        return self.loss_fn(self.model(*inputs[:split]), *inputs[split:])
