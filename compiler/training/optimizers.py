"""The optimizer of a compiled training step: torch.optim's own arithmetic.

An optimizer is named (`sgd`, `adam`, `adamw`, with torch.optim's options
and defaults) or given as a `torch.optim` instance (its param groups and
their hyperparameters). `update_program` traces torch.optim's functional
single-tensor implementation (`torch.optim.sgd.sgd`, `torch.optim.adam.adam`
with `foreach=False`, in its tensor-step form, the form torch.compile traces)
into an ExportedProgram whose buffers are the parameters and the optimizer
state and whose inputs are the gradients: the update is written in place,
as torch.optim writes it, and export turns each write into a
BUFFER_MUTATION. The training wing appends that program to the joint graph.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import nn
from torch.optim.adam import adam as functional_adam
from torch.optim.sgd import sgd as functional_sgd

from rducc.errors import RduccError

OPTIMIZERS: dict[str, type[torch.optim.Optimizer]] = {
    "sgd": torch.optim.SGD,
    "adam": torch.optim.Adam,
    "adamw": torch.optim.AdamW,
}
"""The optimizers rducc compiles, by the name `--optimizer` takes."""

HYPERPARAMETERS = {
    "sgd": ("lr", "momentum", "dampening", "weight_decay", "nesterov", "maximize"),
    "adam": ("lr", "betas", "eps", "weight_decay", "amsgrad", "maximize", "decoupled_weight_decay"),
}
"""The options of each family that change the arithmetic (the rest, as foreach
or fused, only choose an implementation of the same update)."""

STATE_PREFIX = "optimizer"
"""Optimizer state lives in globals named `optimizer.STATE.PARAMETER`."""


class OptimizerError(RduccError):
    """An optimizer rducc does not compile, or options it does not accept."""


def _family(name: str) -> str:
    return "sgd" if name == "sgd" else "adam"


@dataclass(frozen=True)
class OptimizerSpec:
    """One param group's optimizer: its family and hyperparameters (torch's names)."""

    name: str
    options: tuple[tuple[str, Any], ...]

    @property
    def hyper(self) -> dict[str, Any]:
        return dict(self.options)

    def state_names(self) -> tuple[str, ...]:
        """The per-parameter state torch.optim keeps, in its order."""
        hyper = self.hyper
        if self.name == "sgd":
            return ("momentum_buffer",) if hyper["momentum"] != 0 else ()
        names = ("step", "exp_avg", "exp_avg_sq")
        return names + ("max_exp_avg_sq",) if hyper["amsgrad"] else names


def _torch_name(optimizer_class: type) -> str | None:
    for name, known in OPTIMIZERS.items():
        if optimizer_class is known:
            return name
    return None


def _spec_of_group(name: str, group: dict[str, Any]) -> OptimizerSpec:
    family = _family(name)
    options = []
    for key in HYPERPARAMETERS[family]:
        value = group.get(key, False if key == "decoupled_weight_decay" else None)
        if isinstance(value, torch.Tensor):
            value = value.item() if value.numel() == 1 else tuple(v.item() for v in value)
        if key == "betas":
            value = tuple(float(v.item() if isinstance(v, torch.Tensor) else v) for v in value)
        options.append((key, value))
    if name == "adamw":
        options = [(k, True if k == "decoupled_weight_decay" else v) for k, v in options]
    spec = OptimizerSpec("adamw" if family == "adam" and dict(options)["decoupled_weight_decay"] else name,
                         tuple(options))
    if family == "sgd" and spec.hyper["nesterov"] and (spec.hyper["momentum"] <= 0 or spec.hyper["dampening"] != 0):
        raise OptimizerError("SGD with nesterov=True needs a momentum and zero dampening (as torch.optim.SGD says)")
    return spec


def named_optimizer(name: str, options: dict[str, Any]) -> OptimizerSpec:
    """The spec of optimizer `name` with `options` (torch.optim's defaults for the rest)."""
    key = name.lower()
    if key not in OPTIMIZERS:
        raise OptimizerError(
            f"optimizer '{name}' is not supported; rducc compiles {', '.join(sorted(OPTIMIZERS))}"
        )
    allowed = HYPERPARAMETERS[_family(key)]
    unknown = sorted(set(options) - set(allowed))
    if unknown:
        raise OptimizerError(
            f"optimizer '{key}' has no option {', '.join(unknown)}; its options are {', '.join(allowed)}"
        )
    try:
        probe = OPTIMIZERS[key]([nn.Parameter(torch.zeros(1))], **options)
    except (ValueError, TypeError) as error:
        raise OptimizerError(f"optimizer '{key}': {error}") from None
    return _spec_of_group(key, probe.param_groups[0])


def torch_optimizer_groups(optimizer: torch.optim.Optimizer) -> list[tuple[OptimizerSpec, list[torch.Tensor]]]:
    """Each param group of a torch.optim optimizer: its spec and its parameters."""
    name = _torch_name(type(optimizer))
    if name is None:
        raise OptimizerError(
            f"optimizer '{type(optimizer).__name__}' is not supported; rducc compiles "
            "torch.optim.SGD, torch.optim.Adam and torch.optim.AdamW"
        )
    return [(_spec_of_group(name, group), list(group["params"])) for group in optimizer.param_groups]


def torch_group(spec: OptimizerSpec, indices: Sequence[int]) -> dict[str, Any]:
    """A param group as torch.optim's `state_dict()` writes it."""
    family = OPTIMIZERS[_family(spec.name)]  # Adam takes decoupled_weight_decay, as AdamW's groups hold it
    probe = family([nn.Parameter(torch.zeros(1))], **spec.hyper)
    group = {k: v for k, v in probe.param_groups[0].items() if k != "params"}
    return {**group, "params": list(indices)}


def state_global(state: str, parameter: str) -> str:
    """The global that holds `state` (exp_avg, ...) of `parameter`."""
    return f"{STATE_PREFIX}.{state}.{parameter}"


def initial_state(state: str, parameter: torch.Tensor) -> torch.Tensor:
    """Optimizer state before the first step: zeros (the step count a float32 scalar, as torch keeps it)."""
    if state == "step":
        return torch.zeros((), dtype=torch.float32, device=parameter.device)
    return torch.zeros_like(parameter, memory_format=torch.contiguous_format)


@dataclass
class Trained:
    """The parameters one param group's update covers, by global name."""

    spec: OptimizerSpec
    names: list[str] = field(default_factory=list)


class _Update(nn.Module):
    """The update of every trained parameter: buffers `p{i}` (parameter i) and
    `s{i}_{state}` (its state); `forward(*gradients)` updates them in place with
    torch.optim's functional code."""

    def __init__(self, groups: Sequence[Trained], parameters: dict[str, torch.Tensor]):
        super().__init__()
        index = 0
        self.layout: list[tuple[OptimizerSpec, list[int]]] = []
        for group in groups:
            indices = []
            for name in group.names:
                self.register_buffer(f"p{index}", parameters[name].detach().clone())
                for state in group.spec.state_names():
                    self.register_buffer(f"s{index}_{state}", initial_state(state, parameters[name]))
                indices.append(index)
                index += 1
            self.layout.append((group.spec, indices))

    def _buffers_of(self, indices: Sequence[int], state: str) -> list[torch.Tensor]:
        return [getattr(self, f"s{i}_{state}") for i in indices]

    def forward(self, *gradients: torch.Tensor) -> None:
        for spec, indices in self.layout:
            params = [getattr(self, f"p{i}") for i in indices]
            grads = [gradients[i] for i in indices]
            if spec.name == "sgd":
                self._sgd(spec, indices, params, grads)
            else:
                self._adam(spec, indices, params, grads)

    def _sgd(self, spec: OptimizerSpec, indices: Sequence[int], params: list, grads: list) -> None:
        hyper = spec.hyper
        momentum = hyper["momentum"] != 0
        buffers: list[torch.Tensor | None] = self._buffers_of(indices, "momentum_buffer") if momentum else [None] * len(indices)
        functional_sgd(
            params, grads, buffers, foreach=False, weight_decay=hyper["weight_decay"], momentum=hyper["momentum"],
            lr=hyper["lr"], dampening=hyper["dampening"], nesterov=hyper["nesterov"], maximize=hyper["maximize"],
        )

    def _adam(self, spec: OptimizerSpec, indices: Sequence[int], params: list, grads: list) -> None:
        hyper = spec.hyper
        beta1, beta2 = hyper["betas"]
        functional_adam(
            params, grads, self._buffers_of(indices, "exp_avg"), self._buffers_of(indices, "exp_avg_sq"),
            self._buffers_of(indices, "max_exp_avg_sq") if hyper["amsgrad"] else [],
            self._buffers_of(indices, "step"), foreach=False, capturable=True, differentiable=False,
            decoupled_weight_decay=bool(hyper["decoupled_weight_decay"]), amsgrad=bool(hyper["amsgrad"]),
            beta1=beta1, beta2=beta2, lr=hyper["lr"], weight_decay=hyper["weight_decay"], eps=hyper["eps"],
            maximize=bool(hyper["maximize"]),
        )


def update_program(groups: Sequence[Trained], parameters: dict[str, torch.Tensor]) -> torch.export.ExportedProgram:
    """The optimizer's update as an ExportedProgram (see the module docstring):
    buffers `p{i}` and `s{i}_{state}`, inputs the gradients in parameter order."""
    module = _Update(groups, parameters)
    names = [name for group in groups for name in group.names]
    gradients = tuple(torch.zeros_like(parameters[name]) for name in names)
    return torch.export.export(module, gradients, strict=False)


def check_sgd_first_step(groups: Sequence[Trained]) -> None:
    """SGD's first step sets its momentum buffer to the gradient itself; from a
    zero buffer the traced update gives exactly that only without dampening."""
    for group in groups:
        hyper = group.spec.hyper
        if group.spec.name == "sgd" and hyper["momentum"] != 0 and hyper["dampening"] != 0:
            raise OptimizerError(
                f"SGD with dampening={hyper['dampening']} is not supported (its first step differs from "
                "later ones); rducc compiles SGD with dampening=0"
            )
