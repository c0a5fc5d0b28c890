"""A product and the bias add that is its only use run as one `torch.addmm`
(issue 32, `rducc.runtime.epilogues`), where the placement proves the step
reads the product's operands before anything overwrites them.

A linear stack whose SRAM placement puts a bias add's result on the bytes of
its product's input (the allocator reuses bytes as soon as a value dies): the
fold runs at the product there, and forcing it to run at the add (into the
add's bytes, over the input it still reads) gives a wrong result, so the test
sees a fold that reads overwritten operands.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

import rducc
from rducc.dialects.tier import ComputeOp
from rducc.runtime import epilogues, interpreter


class Mlp(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.up = torch.nn.Linear(32, 64)
        self.down = torch.nn.Linear(64, 32)
        self.out = torch.nn.Linear(32, 16)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        hidden = torch.nn.functional.gelu(self.up(x))
        return self.out(self.down(hidden) + x).reshape(-1, 4, 4)


@pytest.fixture(scope="module")
def mlp() -> tuple[Mlp, torch.Tensor, torch.Tensor, rducc.Program]:
    torch.manual_seed(0)
    model, x = Mlp().eval(), torch.randn(2, 8, 32)
    with torch.no_grad():
        expected = model(x)
        program = rducc.compile(torch.export.export(model, (x,)), opt_level=2)
    return model, x, expected, program


def _folds(program: rducc.Program) -> list[epilogues.BiasFolds]:
    return [epilogues.BiasFolds(op) for op in program.module.walk() if isinstance(op, ComputeOp)]


def test_every_bias_add_folds_and_matches_eager(mlp) -> None:
    _, x, expected, program = mlp
    folds = _folds(program)
    assert sum(len(f.at_add) + len(f.at_product) for f in folds) >= 2  # `down`'s add may merge with the residual
    torch.testing.assert_close(torch.as_tensor(np.asarray(program(x))), expected, rtol=1e-6, atol=1e-6)


def test_a_fold_forced_over_its_operands_bytes_gives_a_wrong_result(mlp, monkeypatch: pytest.MonkeyPatch) -> None:
    """The folds that run at the product do so because the add's bytes are the
    product's input's: run at the add, the GEMM reads what it is writing."""
    _, x, expected, program = mlp
    assert any(f.at_product for f in _folds(program))

    class AtTheAdd(epilogues.BiasFolds):
        def __init__(self, compute: ComputeOp) -> None:
            super().__init__(compute)
            self.at_add.update({add: matmul for matmul, add in self.at_product.items()})
            self.at_product = {}

    plain = interpreter.PlacedProgram(program.module).run([x.numpy()], program.weights)[0]
    np.testing.assert_allclose(plain.reshape(expected.shape), expected.numpy(), rtol=1e-6, atol=1e-6)
    monkeypatch.setattr(interpreter, "BiasFolds", AtTheAdd)
    forced = interpreter.PlacedProgram(program.module).run([x.numpy()], program.weights)[0]
    assert not np.allclose(forced.reshape(expected.shape), expected.numpy(), rtol=1e-4, atol=1e-4)
