"""A model exported without .eval() (issue 20, item 13): training-mode ops are
named, with the source line, and the fix ("export the model in eval() mode").
What is not training mode (an explicit random dropout, a BatchNorm without
running statistics, anything after .eval()) passes the check."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from torch import nn

import rducc
from rducc.frontend.importer import decompose
from rducc.frontend.training_mode import TrainingModeError, check_eval_mode


class ExplicitDropout(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.dropout(x, 0.5, training=True)  # a random op the model asks for


def _exported(model: nn.Module) -> torch.export.ExportedProgram:
    with torch.no_grad():
        return decompose(torch.export.export(model, (torch.randn(4, 8),)))


@pytest.mark.parametrize(
    "layer, op",
    [
        (nn.Dropout(0.2), "aten.native_dropout.default (dropout with train=True, in nn.Dropout)"),
        (nn.AlphaDropout(0.2), "aten.bernoulli.p (a random draw of nn.AlphaDropout in training mode)"),
        (nn.BatchNorm1d(8), "aten._native_batch_norm_legit_functional.default (batch norm with training=True)"),
        (nn.RReLU(), "aten.rand.default (a random draw of nn.RReLU in training mode)"),
    ],
)
def test_training_mode_ops_are_named_with_their_line(layer, op):
    model = nn.Sequential(nn.Linear(8, 8), layer)
    with pytest.raises(TrainingModeError) as error:
        check_eval_mode(_exported(model))
    message = str(error.value)
    assert "export the model in eval() mode" in message and op in message, message
    assert "first at " in message


@pytest.mark.parametrize(
    "model",
    [
        nn.Sequential(nn.Linear(8, 8), nn.Dropout(0.2), nn.BatchNorm1d(8), nn.RReLU()).eval(),
        nn.Sequential(nn.Linear(8, 8), nn.BatchNorm1d(8, track_running_stats=False)).eval(),
        ExplicitDropout(),
    ],
    ids=["eval", "batch-statistics-norm", "explicit-dropout"],
)
def test_inference_programs_pass(model):
    check_eval_mode(_exported(model))


def test_rducc_compile_of_a_training_module_says_eval():
    model = nn.Sequential(nn.Linear(8, 8), nn.Dropout(0.1))
    with pytest.raises(TrainingModeError, match=r"eval\(\) mode"):
        rducc.compile(model, (torch.randn(4, 8),))
