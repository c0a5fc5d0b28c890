"""Training mode.

Batch norm in training mode (a BatchNorm left in train(), or
`F.batch_norm(..., training=True)`) is compiled: the batch's statistics
normalize, and the running mean, running variance and `num_batches_tracked`
are updated as torch.export's mutation semantics say (the buffers for the
next call, a user input in place), matching eager over several calls.

A torch.nn module that draws random numbers only in training (nn.Dropout,
nn.AlphaDropout, nn.RReLU) left in training mode is refused (issue 20, item
13), named with the source line and the fix ("export the model in eval()
mode"): its numbers change on every call, which an inference compile never
wants. The same ops called explicitly (`F.dropout(x, p, training=True)`) are
random ops the frontend compiles.
"""

from __future__ import annotations

import copy

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from torch import nn

import rducc
from rducc.dialects.contracts import Update, result_updates
from rducc.dialects.program import entry_function
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
        (nn.RReLU(), "aten.rand.default (a random draw of nn.RReLU in training mode)"),
    ],
)
def test_random_training_mode_modules_are_named_with_their_line(layer, op):
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
        nn.Sequential(nn.Linear(8, 8), nn.BatchNorm1d(8)),
        ExplicitDropout(),
    ],
    ids=["eval", "batch-statistics-norm", "training-batch-norm", "explicit-dropout"],
)
def test_programs_that_compile_pass_the_check(model):
    check_eval_mode(_exported(model))


def test_rducc_compile_of_a_training_dropout_module_says_eval():
    model = nn.Sequential(nn.Linear(8, 8), nn.Dropout(0.1))
    with pytest.raises(TrainingModeError, match=r"eval\(\) mode"):
        rducc.compile(model, (torch.randn(4, 8),))


# --------------------------------------------------------------------------
# Batch norm in training mode
# --------------------------------------------------------------------------


class FunctionalBatchNorm(nn.Module):
    """`F.batch_norm(training=True)` on buffers of the module's own, and
    `F.instance_norm` with running statistics (their mean over the batch)."""

    def __init__(self, channels: int):
        super().__init__()
        for prefix in ("bn", "inorm"):
            self.register_buffer(f"{prefix}_mean", torch.randn(channels))
            self.register_buffer(f"{prefix}_var", torch.rand(channels) + 0.5)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        batch = F.batch_norm(x, self.bn_mean, self.bn_var, training=True, momentum=0.3, eps=1e-3)
        instance = F.instance_norm(x, self.inorm_mean, self.inorm_var, use_input_stats=True, momentum=0.2)
        return batch, instance


class TrainingNorms(nn.Module):
    """Batch norms left in train(), one input each: a conv + BatchNorm2d, a BatchNorm1d
    without affine parameters, a BatchNorm1d over sequences with its own momentum and
    eps, and the functional forms."""

    SHAPES = ((2, 3, 6, 6), (7, 6), (4, 3, 5), (2, 3, 4))

    def __init__(self) -> None:
        super().__init__()
        self.conv_bn2d = nn.Sequential(nn.Conv2d(3, 4, 3), nn.BatchNorm2d(4), nn.ReLU())
        self.linear_bn1d_no_affine = nn.Sequential(nn.Linear(6, 5), nn.BatchNorm1d(5, affine=False))
        self.bn1d_sequence_momentum = nn.BatchNorm1d(3, momentum=0.5, eps=1e-2)
        self.functional = FunctionalBatchNorm(3)

    def forward(self, *xs: torch.Tensor) -> dict[str, object]:
        layers = (self.conv_bn2d, self.linear_bn1d_no_affine, self.bn1d_sequence_momentum, self.functional)
        names = ("conv_bn2d", "linear_bn1d_no_affine", "bn1d_sequence_momentum", "functional")
        return {name: layer(x) for name, layer, x in zip(names, layers, xs)}


@pytest.mark.parametrize("opt_level", [0, 2])
def test_training_batch_norm_matches_eager_with_its_running_statistics(opt_level: int) -> None:
    torch.manual_seed(3)
    model = TrainingNorms()  # left in train()
    eager = copy.deepcopy(model)
    example = tuple(torch.randn(shape) for shape in TrainingNorms.SHAPES)
    program = rducc.compile(torch.export.export(model, example), opt_level=opt_level)
    buffers = dict(eager.named_buffers())
    assert {u.name for u in result_updates(entry_function(program.module)) if u is not None} == set(buffers)
    generator = torch.Generator().manual_seed(4)
    for _ in range(2):
        xs = tuple(torch.randn(shape, generator=generator) * 2 + 1 for shape in TrainingNorms.SHAPES)
        torch.testing.assert_close(program(*xs), eager(*xs))
        for buffer, value in eager.named_buffers():
            torch.testing.assert_close(torch.from_numpy(np.asarray(program.weights[buffer])), value, msg=buffer)


def test_training_batch_norm_on_user_inputs_updates_them_in_place() -> None:
    """Running statistics passed as inputs are updated in the caller's tensors, as eager does."""

    class OnInputs(nn.Module):
        def forward(self, x: torch.Tensor, mean: torch.Tensor, var: torch.Tensor) -> torch.Tensor:
            return F.batch_norm(x, mean, var, training=True, momentum=0.25)

    x, mean, var = torch.randn(5, 3), torch.zeros(3), torch.ones(3)
    program = rducc.compile(torch.export.export(OnInputs(), (x, mean.clone(), var.clone())), opt_level=2)
    assert Update("input", "mean") in result_updates(entry_function(program.module))
    ours, theirs = (mean.clone(), var.clone()), (mean.clone(), var.clone())
    for _ in range(2):
        torch.testing.assert_close(program(x, *ours), OnInputs()(x, *theirs))
        torch.testing.assert_close(ours, theirs)
