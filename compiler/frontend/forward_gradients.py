"""Finding a gradient the forward takes itself, after torch.export failed.

A forward that calls `torch.autograd.grad` (a gradient penalty, WGAN-GP's
norm of the critic's input gradient) or `.backward()` runs autograd's engine
during tracing; torch.export does not trace what the engine computes, so the
result comes back as a tensor outside the graph and torch fails late, on "a
fake tensor in the exported program constant's list", naming neither the
call nor the line. `gradient_call` traces the model once more under a torch
function mode that stops at the first such call and says where it is.
"""

from __future__ import annotations

import traceback
from pathlib import Path
from typing import Any

import torch
from torch.overrides import TorchFunctionMode

_GRADIENT_CALLS = {torch.autograd.grad: "torch.autograd.grad", torch.autograd.backward: "torch.autograd.backward",
                   torch.Tensor.backward: "Tensor.backward"}
"""The calls that run autograd's engine inside a forward."""

UNTRACED_SYMPTOM = "fake tensor in the exported program constant's list"
"""torch.export's failure when the forward computed a tensor outside its trace."""


class _GradientCall(Exception):
    """Raised by `_StopAtGradients` with ` at FILE:LINE` of the call (or '') and its name."""


class _StopAtGradients(TorchFunctionMode):
    def __torch_function__(self, func: Any, types: Any, args: tuple = (), kwargs: dict | None = None) -> Any:
        name = _GRADIENT_CALLS.get(func)
        if name is not None:
            raise _GradientCall(f"{name}{_caller()}")
        return func(*args, **(kwargs or {}))


def user_location(frames: list[traceback.FrameSummary]) -> str:
    """` at FILE:LINE` of the innermost of `frames` outside torch and rducc (the user's code), or ''."""
    outside = (str(Path(torch.__file__).parent), str(Path(__file__).parent.parent))
    user = [f for f in frames if not f.filename.startswith(outside)]
    return f" at {user[-1].filename}:{user[-1].lineno}" if user else ""


def _caller() -> str:
    """` at FILE:LINE` of the innermost frame on the stack outside torch and rducc, or ''."""
    return user_location(traceback.extract_stack())


def gradient_call(model: torch.nn.Module, example_inputs: tuple, kwargs: dict | None, grad: bool,
                  dynamic_shapes: Any = None) -> str | None:
    """The first gradient call the model's forward makes while torch.export traces it ('torch.autograd.grad
    at FILE:LINE'), or None (the export then fails for some other reason, or not at all)."""
    try:
        with torch.set_grad_enabled(grad), _StopAtGradients():
            torch.export.export(model, example_inputs, kwargs=kwargs, dynamic_shapes=dynamic_shapes)
    except _GradientCall as call:
        return str(call)
    except Exception:  # noqa: BLE001 - any other failure is the first export's to report
        return None
    return None
