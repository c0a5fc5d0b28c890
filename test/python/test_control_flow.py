"""torch.cond as dataflow (rducc.frontend.control_flow): both branches computed,
each result selected by the predicate. One program compiled at -O0 and -O2
runs either branch as eager does, nested conds and parameters included; a
branch's nan where it is not selected is never read; a predicate on a
dynamic size is constant in each shape bucket. Other control-flow
higher-order ops (while_loop) stay one clear error naming the op."""

from __future__ import annotations

import pytest
import torch
from torch import nn
from torch.export import Dim

import rducc
from rducc.errors import RduccError


class Gated(nn.Module):
    """A cond on a computed predicate over a parameterized branch (a nested cond inside it) and a branch
    whose log is nan where it is not taken; two results."""

    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.lin = nn.Linear(4, 4)

    def forward(self, x: torch.Tensor, gate: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        def taken(a: torch.Tensor, g: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
            inner = torch.cond(g.amax() > 1, lambda b: b.relu(), lambda b: b.sin(), (self.lin(a),))
            return inner * 2, a.log()

        def other(a: torch.Tensor, g: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
            return a - g.mean(), a.abs()

        return torch.cond(gate.sum() > 0, taken, other, (x, gate))


@pytest.mark.parametrize("opt_level", [0, 2])
def test_one_program_runs_either_branch_as_eager(opt_level: int) -> None:
    model = Gated().eval()
    x = torch.randn(3, 4).abs()
    program = rducc.compile(model, (x, torch.tensor([2.0, 0.0])), opt_level=opt_level)
    for gate in ([2.0, 0.0], [0.5, 0.1], [-1.0, 0.0]):  # true branch (inner true), true (inner false), false
        x = torch.randn(3, 4).abs() * (1 if gate[0] > 0 else -1)  # the untaken branch's log is nan
        for have, want in zip(program(x, torch.tensor(gate)), model(x, torch.tensor(gate)), strict=True):
            torch.testing.assert_close(have, want, msg=str(gate))


def test_a_predicate_on_a_dynamic_size_is_constant_in_each_bucket() -> None:
    class BySize(nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return torch.cond(x.shape[0] > 4, lambda a: a * 2, lambda a: a - 1, (x,))

    batch = Dim("batch", min=2, max=16)
    program = rducc.compile(BySize(), (torch.randn(3, 4),), dynamic_shapes=({0: batch},), shapes={"batch": [2, 8]})
    for rows in (2, 8):
        x = torch.randn(rows, 4)
        torch.testing.assert_close(program(x), BySize()(x))


def test_a_while_loop_is_one_error_naming_it() -> None:
    class Loop(nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return torch._higher_order_ops.while_loop(lambda i, a: i < 3, lambda i, a: (i + 1, a * 2),
                                                      (torch.tensor(0), x))[1]

    with pytest.raises(RduccError, match="while_loop"):
        rducc.compile(Loop(), (torch.randn(2),))
