"""The optimizer of a compiled training step: torch.optim's own arithmetic.

An optimizer is named (`sgd`, `adam`, `adamw`, with torch.optim's options
and defaults) or given as a `torch.optim` instance (its param groups and
their hyperparameters). `update_program` traces torch.optim's functional
single-tensor implementation (`torch.optim.adam.adam` with `foreach=False`,
in its tensor-step form, the form torch.compile traces; SGD's single-tensor
code written out line for line) into an ExportedProgram whose buffers are a
parameter, its optimizer state and its group's learning rate (`LR`: state,
so a schedule changes it between steps) and whose input is its gradient:
the update is written in place,
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

LR = "lr"
"""A param group's learning rate is program state, not a constant: the global
`optimizer.lr.GROUP` (a float64 scalar, as torch.optim keeps it in a Python
float), read by every update of the group, so a learning-rate schedule changes
it between steps without compiling again (`TrainingProgram.step` copies the
torch.optim optimizer's current `lr` into it)."""

MOMENTUM_STARTED = "momentum_started"
"""Program state of SGD with momentum and dampening, not torch.optim's: 1 once the
momentum buffer holds a gradient (torch.optim's buffer is None before the first
step, which copies the gradient into it undamped)."""


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

    def program_state_names(self) -> tuple[str, ...]:
        """The per-parameter state the compiled step keeps: torch.optim's, and for
        SGD with momentum and dampening whether its momentum buffer has started."""
        if self.name == "sgd" and self.hyper["momentum"] != 0 and self.hyper["dampening"] != 0:
            return (*self.state_names(), MOMENTUM_STARTED)
        return self.state_names()


def _torch_name(optimizer_class: type) -> str | None:
    for name, known in OPTIMIZERS.items():
        if optimizer_class is known:
            return name
    return None


def _spec_of_group(name: str, group: dict[str, Any]) -> OptimizerSpec:
    family = _family(name)
    options: list[tuple[str, Any]] = []
    for key in HYPERPARAMETERS[family]:
        value: Any = group.get(key, False if key == "decoupled_weight_decay" else None)
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


def lr_global(group: int) -> str:
    """The global that holds param group `group`'s learning rate (`LR`)."""
    return f"{STATE_PREFIX}.{LR}.{group}"


def is_lr_global(name: str) -> bool:
    """Whether global `name` holds a param group's learning rate (`lr_global`)."""
    return name.startswith(f"{STATE_PREFIX}.{LR}.")


def lr_value(lr: float) -> torch.Tensor:
    """A learning rate as the program holds it: a float64 scalar."""
    return torch.tensor(float(lr), dtype=torch.float64)


def initial_state(state: str, parameter: torch.Tensor) -> torch.Tensor:
    """Optimizer state before the first step: zeros (the step count a float32 scalar, as torch keeps it)."""
    if state in ("step", MOMENTUM_STARTED):
        return torch.zeros((), dtype=torch.float32, device=parameter.device)
    return torch.zeros_like(parameter, memory_format=torch.contiguous_format)


@dataclass
class Trained:
    """The parameters one param group's update covers, by global name; `group`:
    the group's index among the optimizer's (its learning rate's global, `lr_global`)."""

    spec: OptimizerSpec
    names: list[str] = field(default_factory=list)
    group: int = 0


class _Update(nn.Module):
    """The update of one parameter: buffers `p0` (the parameter), `s0_{state}`
    (its state) and `lr` (its group's learning rate, read only: `LR`);
    `forward(gradient)` updates them in place with torch.optim's functional
    code, as `Optimizer.step()` runs it for each parameter."""

    def __init__(self, spec: OptimizerSpec, parameter: torch.Tensor, unscale: float = 1.0):
        super().__init__()
        self.spec = spec
        self.unscale = unscale
        self.state_names = spec.program_state_names()
        self.register_buffer("p0", torch.zeros_like(parameter, memory_format=torch.contiguous_format))
        self.register_buffer(LR, lr_value(spec.hyper["lr"]).to(parameter.device))
        for state in self.state_names:
            self.register_buffer(f"s0_{state}", initial_state(state, parameter))

    def _state(self, name: str) -> list[torch.Tensor]:
        return [self.get_buffer(f"s0_{name}")]

    @property
    def parameter(self) -> torch.Tensor:
        return self.get_buffer("p0")

    @property
    def learning_rate(self) -> torch.Tensor:
        """The group's learning rate (a float64 scalar buffer)."""
        return self.get_buffer(LR)

    def forward(self, gradient: torch.Tensor) -> None:
        if self.unscale != 1.0:  # as torch.amp.GradScaler unscales: times the inverse scale
            gradient = gradient * self.unscale
        self.update(gradient)

    def update(self, gradient: torch.Tensor) -> None:
        hyper = self.spec.hyper
        if self.spec.name == "sgd":
            if MOMENTUM_STARTED in self.state_names:
                self._damped_sgd(gradient)
                return
            momentum = hyper["momentum"] != 0
            buffers: list[torch.Tensor | None] = [*self._state("momentum_buffer")] if momentum else [None]
            self._sgd(self.parameter, gradient, buffers)
            return
        beta1, beta2 = hyper["betas"]
        if self.parameter.dtype in (torch.bfloat16, torch.float16):
            self._adam_rounded_as_eager(gradient)
            return
        if self.parameter.dtype == torch.float32:
            self._adam_scalars_as_eager(gradient)
            return
        functional_adam(
            [self.parameter], [gradient], self._state("exp_avg"), self._state("exp_avg_sq"),
            self._state("max_exp_avg_sq") if hyper["amsgrad"] else [], self._state("step"),
            foreach=False, capturable=True, differentiable=False,
            decoupled_weight_decay=bool(hyper["decoupled_weight_decay"]), amsgrad=bool(hyper["amsgrad"]),
            beta1=beta1, beta2=beta2, lr=self.learning_rate, weight_decay=hyper["weight_decay"], eps=hyper["eps"],
            maximize=bool(hyper["maximize"]),
        )


    def _adam_rounded_as_eager(self, gradient: torch.Tensor) -> None:
        """Adam and AdamW on 16-bit parameters and state (no float32 master
        weights), rounded where eager's torch.optim rounds: its single-tensor
        step (`foreach=False`, the step count a Python number) runs one CPU
        kernel per in-place op, each computing in float32 and rounding its
        result to the parameter's dtype once (`lerp_`, `mul_`, `addcmul_`,
        `sqrt`, the division by the bias correction, `add_(eps)`, `addcdiv_`).
        The tensor-step form traced for float32 parameters divides by
        `bias_correction2_sqrt * -step_size` instead, which rounds the
        denominator at another scale: about one bf16 step off eager. Here each
        op is written as its kernel computes it; the step's scalars (bias
        corrections, step size) are float32 values of the step count."""
        hyper = self.spec.hyper
        beta1, beta2 = hyper["betas"]
        weight_decay, eps = hyper["weight_decay"], hyper["eps"]
        dtype, wide = self.parameter.dtype, torch.float32
        lr = self.learning_rate  # float64, as eager's Python number: each use rounds it where its kernel does
        parameter, (exp_avg,), (exp_avg_sq,), (step,) = (self.parameter, self._state("exp_avg"),
                                                         self._state("exp_avg_sq"), self._state("step"))
        grad = -gradient if hyper["maximize"] else gradient
        step.add_(1)
        if weight_decay != 0 and hyper["decoupled_weight_decay"]:
            parameter.copy_((parameter.to(wide) * (1 - lr * weight_decay).to(wide)).to(dtype))
        elif weight_decay != 0:  # grad.add(param, alpha=weight_decay): the CPU kernel rounds alpha to the dtype
            alpha = float(torch.tensor(weight_decay, dtype=dtype))
            grad = (grad.to(wide) + alpha * parameter.to(wide)).to(dtype)
        wide_grad = grad.to(wide)
        exp_avg.copy_(_lerp(exp_avg.to(wide), wide_grad, 1 - beta1).to(dtype))
        decayed = (exp_avg_sq.to(wide) * beta2).to(dtype)
        exp_avg_sq.copy_((decayed.to(wide) + (1 - beta2) * wide_grad * wide_grad).to(dtype))
        second = exp_avg_sq
        if hyper["amsgrad"]:
            (max_exp_avg_sq,) = self._state("max_exp_avg_sq")
            max_exp_avg_sq.copy_(torch.maximum(max_exp_avg_sq, exp_avg_sq))
            second = max_exp_avg_sq
        bias_correction1 = 1 - torch.pow(beta1, step)
        bias_correction2_sqrt = (1 - torch.pow(beta2, step)).sqrt()
        step_size = lr.to(wide) / bias_correction1
        root = second.to(wide).sqrt().to(dtype)
        denom = ((root.to(wide) / bias_correction2_sqrt).to(dtype).to(wide) + eps).to(dtype)
        parameter.copy_((parameter.to(wide) + -step_size * exp_avg.to(wide) / denom.to(wide)).to(dtype))

    def _adam_scalars_as_eager(self, gradient: torch.Tensor) -> None:
        """Adam and AdamW on float32 parameters (master weights) as eager's
        torch.optim computes them: its single-tensor step on the CPU
        (`foreach=False`, not capturable) takes the step count as a Python
        number, so the bias corrections and the step size are float64 values
        rounded to float32 where the kernels take them (`addcdiv_`'s value,
        the division by `bias_correction2 ** 0.5`). The tensor-step form
        (capturable) computes them in float32 from a float32 step: `1 - 0.999
        ** step` is then off by up to 1e-5 relative, and every update by a
        few float32 ulps. Harmless in float32 training, but under bf16
        autocast a master weight an ulp to the other side of a bf16 rounding
        boundary rounds to another bf16 weight in the next forward: out of
        eager autocast's own distance from float32 (the batch-norm CNN's
        AdamW). Here the step count is read as float64 for those scalars
        (0-d values: what the host computes for the chip); the tensor ops are
        torch.optim's own."""
        hyper = self.spec.hyper
        beta1, beta2 = hyper["betas"]
        weight_decay, eps = hyper["weight_decay"], hyper["eps"]
        lr = self.learning_rate
        parameter, (exp_avg,), (exp_avg_sq,), (step,) = (self.parameter, self._state("exp_avg"),
                                                         self._state("exp_avg_sq"), self._state("step"))
        grad = -gradient if hyper["maximize"] else gradient
        step.add_(1)
        if weight_decay != 0 and hyper["decoupled_weight_decay"]:  # a float64 factor rounded to float32 once
            parameter.mul_((1 - lr * weight_decay).to(parameter.dtype))
        elif weight_decay != 0:
            grad = grad.add(parameter, alpha=weight_decay)
        exp_avg.lerp_(grad, 1 - beta1)
        exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
        second = exp_avg_sq
        if hyper["amsgrad"]:
            (max_exp_avg_sq,) = self._state("max_exp_avg_sq")
            max_exp_avg_sq.copy_(torch.maximum(max_exp_avg_sq, exp_avg_sq))
            second = max_exp_avg_sq
        count = step.to(torch.float64)
        step_size = (lr / (1 - torch.pow(beta1, count))).to(parameter.dtype)
        bias_correction2_sqrt = (1 - torch.pow(beta2, count)).sqrt().to(parameter.dtype)
        denom = (second.sqrt() / bias_correction2_sqrt).add_(eps)
        parameter.add_(-step_size * exp_avg / denom)

    def _sgd(self, parameter: torch.Tensor, gradient: torch.Tensor, buffers: list[torch.Tensor | None]) -> None:
        """torch.optim's single-tensor SGD (`torch.optim.sgd._single_tensor_sgd`),
        line for line, with the learning rate a tensor (`learning_rate`): torch's functional
        code reads lr as a Python number (`_to_scalar`), which a traced step
        cannot change. `add_(grad, alpha=-lr)` rounds lr to the parameter's dtype
        and adds -lr * grad in one fused multiply-add; so does the last line
    here (`addcmul_`, compiled as one `math.fma`). A None in `buffers` (no
        momentum yet) is replaced by the new buffer, as torch's code does."""
        hyper = self.spec.hyper
        momentum, dampening = hyper["momentum"], hyper["dampening"]
        grad = -gradient if hyper["maximize"] else gradient
        if hyper["weight_decay"] != 0:
            grad = grad.add(parameter, alpha=hyper["weight_decay"])
        if momentum != 0:
            buf = buffers[0]
            if buf is None:
                buf = grad.detach().clone()
                buffers[0] = buf
            else:
                buf.mul_(momentum).add_(grad, alpha=1 - dampening)
            grad = grad.add(buf, alpha=momentum) if hyper["nesterov"] else buf
        parameter.addcmul_(grad, self.learning_rate.to(parameter.dtype), value=-1)  # one rounding, as add_'s alpha

    def _damped_sgd(self, gradient: torch.Tensor) -> None:
        """SGD with momentum and dampening: torch.optim's first step (a None
        buffer: the gradient copied in, undamped) and its later steps (the
        buffer damped), both traced, the first chosen until `momentum_started`."""
        started = self.get_buffer(f"s0_{MOMENTUM_STARTED}")
        buffer = self.get_buffer("s0_momentum_buffer")
        first: list[torch.Tensor | None] = [None]
        first_parameter = self.parameter.clone()
        self._sgd(first_parameter, gradient, first)
        self._sgd(self.parameter, gradient, [buffer])
        later = started > 0
        self.parameter.copy_(torch.where(later, self.parameter, first_parameter))
        assert first[0] is not None
        buffer.copy_(torch.where(later, buffer, first[0]))
        started.fill_(1.0)


def _lerp(start: torch.Tensor, end: torch.Tensor, weight: float) -> torch.Tensor:
    """`start.lerp_(end, weight)` as ATen's CPU kernel computes it (from the end for a weight of 0.5 or more)."""
    if abs(weight) < 0.5:
        return start + weight * (end - start)
    return end - (end - start) * (1 - weight)


class _SkippableUpdate(_Update):
    """The update under dynamic loss scaling: `forward(gradient, inverse_scale,
    found_inf)` unscales the gradient and keeps the parameter and its state as
    they were where `found_inf` (torch.amp.GradScaler skips `optimizer.step()`)."""

    def forward(self, gradient: torch.Tensor, inverse_scale: torch.Tensor,  # type: ignore[override]
                found_inf: torch.Tensor) -> None:
        names = ["p0", *(f"s0_{state}" for state in self.state_names)]
        before = {name: self.get_buffer(name).clone() for name in names}
        self.update(gradient * inverse_scale)
        for name in names:
            buffer = self.get_buffer(name)
            buffer.copy_(torch.where(found_inf, before[name], buffer))


_TRACED: dict[tuple[OptimizerSpec, tuple[int, ...], torch.dtype, str, float | None], torch.export.ExportedProgram] = {}


def update_program(spec: OptimizerSpec, parameter: torch.Tensor, unscale: float | None = 1.0
                   ) -> torch.export.ExportedProgram:
    """The optimizer's update of one parameter of this shape and dtype, as an
    ExportedProgram (see the module docstring): buffers `p0` and `s0_{state}`,
    input the gradient (times `unscale` first). `unscale` None: dynamic loss
    scaling (`_SkippableUpdate`: inputs the gradient, 1/scale and found_inf).
    Traced once per spec, shape and dtype."""
    key = (spec, tuple(parameter.shape), parameter.dtype, parameter.device.type, unscale)
    if key not in _TRACED:
        example = torch.zeros_like(parameter, memory_format=torch.contiguous_format)
        if unscale is None:
            inputs: tuple[torch.Tensor, ...] = (example, torch.ones((), device=parameter.device),
                                                torch.zeros((), dtype=torch.bool, device=parameter.device))
            _TRACED[key] = torch.export.export(_SkippableUpdate(spec, parameter), inputs, strict=False)
        else:
            _TRACED[key] = torch.export.export(_Update(spec, parameter, unscale), (example,), strict=False)
    return _TRACED[key]
