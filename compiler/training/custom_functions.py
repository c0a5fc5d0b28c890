"""Custom `torch.autograd.Function`s on a loss's gradient path, refused by name.

torch.export records a custom Function's forward ops only: its own backward
is not in the program, and the joint graph differentiates the forward's ops
instead (a straight-through `round` would train with round's zero gradient).
While rducc exports a model to train, a torch function mode looks at every
op's tensor arguments: one whose `grad_fn` is a custom Function's backward
(`BackwardCFunction`, torch's own record of the call) is a Function on the
gradient path. Functions defined inside torch itself are left alone (their
backward is their forward's gradient), but for the reentrant checkpoint,
whose region export records with grad mode off: refused, naming
`use_reentrant=False`, which trains (also where none of its inputs
requires grad and so its result has no grad_fn: its call is noted).
"""

from __future__ import annotations

import inspect
import traceback
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import torch
from torch.autograd.function import BackwardCFunction
from torch.overrides import TorchFunctionMode
from torch.utils._pytree import tree_leaves
from torch.utils.checkpoint import CheckpointFunction

from rducc.errors import RduccError

_SKIPPED = (str(Path(torch.__file__).parent), str(Path(__file__).resolve().parents[1]))
"""Frames of torch and of rducc itself: not the user's line."""


_REENTRANT = CheckpointFunction
"""torch.utils.checkpoint(use_reentrant=True)'s Function: export records its region with grad mode off."""


class CustomBackwardError(RduccError):
    """A custom autograd.Function whose backward a training step would not use."""


def user_line() -> str:
    """`file:line: code` of the innermost frame outside torch and rducc."""
    frames = [f for f in traceback.extract_stack() if not f.filename.startswith(_SKIPPED)]
    if not frames:
        return "an unknown line"
    frame = frames[-1]
    return f"{frame.filename}:{frame.lineno}: {(frame.line or '').strip()}"


class _CustomFunctions(TorchFunctionMode):
    """Records the first custom Function whose output an op reads, and where."""

    def __init__(self) -> None:
        super().__init__()
        self.found: tuple[type, str] | None = None

    def __torch_function__(self, func: Any, types: Any, args: tuple = (), kwargs: dict | None = None) -> Any:
        if self.found is None:
            for value in tree_leaves((args, kwargs or {})):
                if isinstance(value, torch.Tensor) and isinstance(value.grad_fn, BackwardCFunction):
                    function = type(value.grad_fn)._forward_cls
                    if function is _REENTRANT or not function.__module__.startswith("torch."):
                        self.found = (function, user_line())
                        break
        return func(*args, **(kwargs or {}))


def _defined_at(function: type) -> str:
    try:
        return f"{inspect.getsourcefile(function)}:{inspect.getsourcelines(function)[1]}"
    except (OSError, TypeError):
        return function.__module__


@contextmanager
def _reentrant_checkpoints_noted(mode: _CustomFunctions) -> Iterator[None]:
    """For the duration, a reentrant checkpoint called with grad mode on notes itself in `mode` with the user's
    line: where none of its inputs requires grad its outputs have no grad_fn for the mode to see, yet export
    still records the rest of the forward with grad mode off (torch's joint graph then found a loss without
    gradients)."""
    own = CheckpointFunction.__dict__.get("apply")
    apply = CheckpointFunction.apply

    def noted(*args: Any) -> Any:
        if mode.found is None and torch.is_grad_enabled():
            mode.found = (_REENTRANT, user_line())
        return apply(*args)

    CheckpointFunction.apply = noted  # type: ignore[method-assign]
    try:
        yield
    finally:
        if own is None:
            del CheckpointFunction.apply
        else:
            CheckpointFunction.apply = own  # type: ignore[method-assign]


@contextmanager
def custom_backwards_refused() -> Iterator[None]:
    """Around the export of a model to train: refuse a custom autograd.Function
    on the gradient path once the export is done, naming it and the line that
    reads its result."""
    mode = _CustomFunctions()
    with mode, _reentrant_checkpoints_noted(mode):
        yield
    if mode.found is not None:
        function, line = mode.found
        if function is _REENTRANT:
            raise CustomBackwardError(
                f"{line}: calls torch.utils.checkpoint with use_reentrant=True, which torch.export "
                "traces with grad mode off (its gradient would be lost); give use_reentrant=False, which "
                "trains (rducc's activation planner decides what the backward recomputes)")
        raise CustomBackwardError(
            f"{line}: reads the result of the custom torch.autograd.Function {function.__qualname__} "
            f"(defined at {_defined_at(function)}), whose gradient flows to the loss; torch.export keeps "
            "its forward only, so the step would differentiate the forward's ops instead of calling its "
            "backward. rducc does not train custom backward functions: write it with ops autograd "
            "differentiates, or detach its input if it needs no gradient"
        )
