"""Operators that show a model was exported in training mode, not `eval()`.

The one place that decides "this node is a random draw of a torch.nn module
left in training mode": dropout (and rrelu) with `train=True` made by a
torch.nn module (nn.Dropout, nn.AlphaDropout, nn.RReLU left in training mode;
an explicit `F.dropout(x, p, training=True)` is a random op the frontend
compiles). Its numbers change on every call, which a model compiled for
inference never wants, so the importer refuses such a program before
anything else about its operators, naming each op, why, and the source line
of its first use. Batch norm in training mode is not refused: it normalizes
with the batch's statistics and its running statistics are buffer updates
(torch's decomposition of `_native_batch_norm_legit_functional`), compiled.
A training program (a joint graph with a loss output) is not refused: there
dropout and RReLU in training mode are what the user asks for, and run on
rducc's random ops (`rdu.random`), their masks saved for the backward.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable

import torch
from torch.export import ExportedProgram

from rducc.errors import RduccError
from rducc.frontend.joint_graph import is_joint
from rducc.frontend.locations import describe_location


class TrainingModeError(RduccError):
    """The program was exported from a model in training mode."""


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


def check_eval_mode(ep: ExportedProgram) -> None:
    """Refuse a program exported in training mode, listing each op with its first use.
    A training program (a joint graph: its outputs are a loss and gradients) is
    meant to run in training mode: its dropout and RReLU draw, on rducc's random ops."""
    if is_joint(ep):
        return
    counts: Counter[str] = Counter()
    first: dict[str, str] = {}
    for node in ep.graph.nodes:
        reason = training_mode_reason(node)
        if reason is None:
            continue
        key = f"{node.target} ({reason})"
        counts[key] += 1
        first.setdefault(key, describe_location(node))
    if counts:
        lines = [f"  {key}: {n} use{'s' if n > 1 else ''}, first at {first[key]}" for key, n in sorted(counts.items())]
        raise TrainingModeError(
            "the model was exported in training mode; export the model in eval() mode "
            "(torch.export.export(model.eval(), ...)):\n" + "\n".join(lines)
        )
