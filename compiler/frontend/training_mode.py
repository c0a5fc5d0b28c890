"""Operators that show a model was exported in training mode, not `eval()`.

The one place that decides "this node is a random draw of a torch.nn module
left in training mode": dropout (and rrelu) with `train=True` made by a
torch.nn module (nn.Dropout, nn.AlphaDropout, nn.RReLU left in training mode;
an explicit `F.dropout(x, p, training=True)` is a random op the model asks for).

Such a program is compiled (issue 30): its draws run on rducc's random ops
(`rdu.random`, the same kernels a training program's dropout uses), checked as
distributions, not bits. Its numbers change on every call, which a model
compiled for inference rarely wants, so the importer warns once
(`TrainingModeWarning`, printed by the CLIs as `rducc: warning:`), naming each
op, why, the source line of its first use and the fix (export in eval() mode).
Batch norm in training mode is compiled without a warning: it normalizes with
the batch's statistics and its running statistics are buffer updates. A
training program (a joint graph with a loss output) gets no warning: there
dropout and RReLU in training mode are what the user asks for.
"""

from __future__ import annotations

import warnings
from collections import Counter
from collections.abc import Callable

import torch
from torch.export import ExportedProgram

from rducc.errors import RduccWarning
from rducc.frontend.joint_graph import is_joint
from rducc.frontend.locations import describe_location


class TrainingModeWarning(RduccWarning):
    """The program was exported from a model in training mode: its random layers draw."""


def _arg(node: torch.fx.Node, index: int, name: str, default: object = None) -> object:
    if len(node.args) > index:
        return node.args[index]
    return node.kwargs.get(name, default)


def in_torch_module(node: torch.fx.Node) -> str | None:
    """The torch.nn module class (e.g. torch.nn.modules.dropout.Dropout) whose
    forward made `node`, when the innermost module is one of torch's own."""
    stack = node.meta.get("nn_module_stack") or {}
    if not stack:
        return None
    innermost = str(list(stack.values())[-1][1])
    innermost = innermost.removeprefix("<class '").removesuffix("'>")
    return innermost if innermost.startswith("torch.nn.modules.") else None


def _dropout(train_index: int) -> Callable[[torch.fx.Node], str | None]:
    """Dropout of a torch.nn Dropout module left in training mode. A model that
    calls F.dropout(x, p, training=True) itself asks for a random op: that is
    rducc's random-op converter's to compile, not a training-mode model."""

    def check(node: torch.fx.Node) -> str | None:
        train = _arg(node, train_index, "train", None)
        module = in_torch_module(node)
        if (train is None or train is True) and module is not None:
            return f"dropout with train=True, in nn.{module.rsplit('.', 1)[-1]}"
        return None

    return check


def _rrelu(node: torch.fx.Node) -> str | None:
    training = _arg(node, 4, "training", False) is True
    return "rrelu with training=True" if training and in_torch_module(node) is not None else None


TRAINING_CHECKS: dict[str, Callable[[torch.fx.Node], str | None]] = {
    "aten.dropout.default": _dropout(2),
    "aten.feature_dropout.default": _dropout(2),
    "aten.alpha_dropout.default": _dropout(2),
    "aten.feature_alpha_dropout.default": _dropout(2),
    "aten.native_dropout.default": _dropout(2),
    "aten.rrelu_with_noise.default": _rrelu,
    "aten.rrelu_with_noise_functional.default": _rrelu,
}
"""Per operator: why a node of it runs in training mode, or None."""


RANDOM_OPS = ("aten.bernoulli.", "aten.rand", "aten.uniform.", "aten.normal.")
"""Random draws: in a torch.nn dropout or RReLU module (AlphaDropout decomposes to
bernoulli, RReLU's noise to uniform draws) they are training mode."""

RANDOM_IN_TRAINING = ("Dropout", "RReLU")
"""torch.nn modules (by class name) that draw random numbers only in training mode."""


def _random_draw_of_dropout(node: torch.fx.Node) -> str | None:
    module = in_torch_module(node)
    if module is None or not any(name in module.rsplit(".", 1)[-1] for name in RANDOM_IN_TRAINING):
        return None
    if not str(node.target).startswith(RANDOM_OPS):
        return None
    return f"a random draw of nn.{module.rsplit('.', 1)[-1]} in training mode"


def training_mode_reason(node: torch.fx.Node) -> str | None:
    """Why `node` runs in training mode (e.g. "dropout with train=True"), or None."""
    if node.op != "call_function":
        return None
    check = TRAINING_CHECKS.get(str(node.target))
    return check(node) if check is not None else _random_draw_of_dropout(node)


def training_mode_uses(ep: ExportedProgram) -> list[str]:
    """Each training-mode op of `ep` (a non-joint program) as "target (reason): N uses,
    first at LOCATION", sorted; empty for a program in eval() mode or a joint graph."""
    if is_joint(ep):
        return []
    counts: Counter[str] = Counter()
    first: dict[str, str] = {}
    for node in ep.graph.nodes:
        reason = training_mode_reason(node)
        if reason is None:
            continue
        key = f"{node.target} ({reason})"
        counts[key] += 1
        first.setdefault(key, describe_location(node))
    return [f"{key}: {n} use{'s' if n > 1 else ''}, first at {first[key]}" for key, n in sorted(counts.items())]


def warn_training_mode(ep: ExportedProgram) -> None:
    """Warn once (`TrainingModeWarning`) when `ep` was exported in training mode: it
    compiles, and its dropout and RReLU draw fresh numbers on every call."""
    uses = training_mode_uses(ep)
    if uses:
        warnings.warn(TrainingModeWarning(
            "the model was exported in training mode: its random layers draw fresh numbers on every "
            "call (" + "; ".join(uses) + "); for inference, export the model in eval() mode "
            "(torch.export.export(model.eval(), ...))"), stacklevel=2)
