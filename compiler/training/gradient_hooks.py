"""Gradient hooks on a model to train, refused by name.

A hook on a gradient is Python that autograd calls during the backward:
`Tensor.register_hook` on a parameter (per-parameter gradient clipping:
`p.register_hook(lambda g: g.clamp(-c, c))`) or on an activation inside the
forward, `register_post_accumulate_grad_hook`, and a module's
`register_full_backward_hook` / `register_full_backward_pre_hook` (or the
global ones). torch.export records none of them and torch's joint graph
differentiates the forward's ops alone, so a step compiled from such a model
would silently compute other gradients than eager's. Before the export, the
parameters and modules are looked at; while the forward is exported, a
`register_hook` call from the user's code on a tensor that requires grad is
noted with its line. Either is refused, naming the hook and
`compile_training(max_grad_norm=...)`, the clipping that the step does
compute.
"""

from __future__ import annotations

import inspect
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import torch
from torch.nn.modules import module as torch_module

from rducc.training.custom_functions import CustomBackwardError, user_line

_TORCH = str(Path(torch.__file__).parent)

_ADVICE = ("torch.export records no gradient hook, so the compiled step would compute the gradients without it "
           "(unlike eager). Remove the hook; clip gradients with compile_training(max_grad_norm=...), or write "
           "the change into the forward or the loss")


class GradientHookError(CustomBackwardError):
    """A hook on a gradient that a compiled training step would not call."""


def _hook_named(hook: Callable[..., Any]) -> str:
    name = getattr(hook, "__qualname__", type(hook).__name__)
    try:
        return f"{name} (defined at {inspect.getsourcefile(hook)}:{inspect.getsourcelines(hook)[1]})"
    except (OSError, TypeError):
        return name


def _parameter_hooks(model: torch.nn.Module) -> Iterator[str]:
    """`parameter 'name' has ...` for each trained parameter's gradient or post-accumulate hook."""
    for name, parameter in model.named_parameters():
        for kind, hooks in (("a gradient hook (Tensor.register_hook)", parameter._backward_hooks),
                            ("a post-accumulate-grad hook", parameter._post_accumulate_grad_hooks)):
            for hook in (hooks or {}).values():
                yield f"parameter '{name}' has {kind}: {_hook_named(hook)}"


def _module_hooks(model: torch.nn.Module) -> Iterator[str]:
    """`module 'name' has ...` for each module's (and the global) full backward (pre) hooks."""
    for name, module in model.named_modules():
        for kind, hooks in (("a full backward hook", module._backward_hooks),
                            ("a full backward pre-hook", module._backward_pre_hooks)):
            for hook in (hooks or {}).values():
                yield f"module '{name or type(module).__name__}' has {kind}: {_hook_named(hook)}"
    for kind, hooks in (("a global module backward hook", torch_module._global_backward_hooks),
                        ("a global module backward pre-hook", torch_module._global_backward_pre_hooks)):
        for hook in hooks.values():
            yield f"{kind} is registered: {_hook_named(hook)}"


def check_no_gradient_hooks(model: torch.nn.Module) -> None:
    """Refuse the first gradient hook on `model`'s parameters or modules (or a global module one)."""
    for found in (*_parameter_hooks(model), *_module_hooks(model)):
        raise GradientHookError(f"{found}; {_ADVICE}")


@contextmanager
def _forward_hooks_noted(found: list[str]) -> Iterator[None]:
    """For the duration, `Tensor.register_hook` called from outside torch on a tensor that requires grad
    appends the user's line to `found` (and registers the hook as usual)."""
    register = torch.Tensor.register_hook

    def noted(tensor: torch.Tensor, hook: Callable[..., Any]) -> Any:
        if tensor.requires_grad and not sys._getframe(1).f_code.co_filename.startswith(_TORCH):
            found.append(user_line())
        return register(tensor, hook)

    torch.Tensor.register_hook = noted  # type: ignore[method-assign]
    try:
        yield
    finally:
        torch.Tensor.register_hook = register  # type: ignore[method-assign]


@contextmanager
def gradient_hooks_refused(model: torch.nn.Module) -> Iterator[None]:
    """Around the export of `model` to train: refuse a gradient hook on it at once, and one the forward
    registers on a tensor once the export is done, naming its line."""
    check_no_gradient_hooks(model)
    found: list[str] = []
    with _forward_hooks_noted(found):
        yield
    if found:
        raise GradientHookError(f"{found[0]}: registers a hook on a tensor's gradient in the forward; {_ADVICE}")
