"""Joint graphs (`_export_forward_backward`): rducc imports and runs the loss and
the gradients, equal to eager's, at -O0 and -O2."""

from __future__ import annotations

import pytest
import torch
from torch import nn
from torch.export.experimental import _export_forward_backward

import rducc
from rducc.dialects.contracts import Phase, ResultRole, phase_of, result_roles
from rducc.dialects.program import entry_function
from rducc.driver import import_exported


class MLPLoss(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc1 = nn.Linear(8, 16)
        self.fc2 = nn.Linear(16, 4)

    def forward(self, x: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        return nn.functional.cross_entropy(self.fc2(nn.functional.gelu(self.fc1(x))), target)


def _joint(model: nn.Module, inputs: tuple) -> torch.export.ExportedProgram:
    return _export_forward_backward(torch.export.export(model, inputs))


@pytest.mark.parametrize("opt_level", [0, 2])
def test_joint_mlp_matches_eager_gradients(opt_level: int) -> None:
    torch.manual_seed(0)
    model = MLPLoss()
    inputs = (torch.randn(5, 8), torch.tensor([0, 1, 2, 3, 1]))
    loss, *grads = rducc.compile(_joint(model, inputs), opt_level=opt_level)(*inputs)
    expected = model(*inputs)
    expected.backward()
    torch.testing.assert_close(loss, expected.detach(), rtol=1e-6, atol=1e-7)
    assert len(grads) == 4
    for got, (name, parameter) in zip(grads, model.named_parameters()):
        torch.testing.assert_close(got, parameter.grad, rtol=1e-5, atol=1e-7, msg=name)


def test_joint_roles_and_phases() -> None:
    torch.manual_seed(0)
    inputs = (torch.randn(5, 8), torch.tensor([0, 1, 2, 3, 1]))
    module = import_exported(_joint(MLPLoss(), inputs))
    forward = entry_function(module)
    roles = result_roles(forward)
    assert roles[0] == ResultRole("loss")
    assert [r.name for r in roles[1:] if r] == ["fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"]
    phases = [phase_of(op) for op in forward.body.block.ops if op.name != "func.return"]
    assert None not in phases
    # the forward comes first in graph order, then the backward; both are present
    first_backward = phases.index(Phase.BACKWARD)
    assert Phase.FORWARD in phases[:first_backward]
    assert Phase.FORWARD not in phases[first_backward:]


def test_gradient_to_user_input() -> None:
    """A joint graph that also wants the gradient of an input (GRADIENT_TO_USER_INPUT)."""
    torch.manual_seed(0)

    class Scale(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.weight = nn.Parameter(torch.randn(4, 3))

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return (torch.tanh(x @ self.weight) ** 2).sum()

    model = Scale()
    x = torch.randn(2, 4, requires_grad=True)
    joint = _joint(model, (x,))
    kinds = [spec.kind.name for spec in joint.graph_signature.output_specs]
    assert "GRADIENT_TO_USER_INPUT" in kinds
    loss, *grads = rducc.compile(joint, opt_level=2)(x.detach())
    expected = model(x)
    expected.backward()
    torch.testing.assert_close(loss, expected.detach(), rtol=1e-6, atol=1e-6)
    roles = result_roles(entry_function(rducc.compile(joint, opt_level=0).module))
    by_role = dict(zip([(r.of, r.name) for r in roles[1:] if r], grads))
    torch.testing.assert_close(by_role[("parameter", "weight")], model.weight.grad, rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(by_role[("input", "x")], x.grad, rtol=1e-5, atol=1e-6)
