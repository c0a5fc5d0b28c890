"""Training through linear algebra: a trained matrix solved, inverted, factored or
taken the determinant of gets eager's gradients (issue 27).

`linalg.solve`, `inv` and `lu_factor` are differentiated through rducc's own
decompositions (`rducc.training.linalg_gradients`): torch's joint graph cannot
take their `*_ex` forms. `linalg.cholesky` checks its factorization by an op torch
registers as a side effect, traced as an ordinary op for the joint graph.
`_linalg_det` and `_linalg_slogdet` return the LU that their backward solves
with, which torch takes of `a.mT` for a contiguous `a`
(`aten_rewrites._factored_for_det`)."""

from __future__ import annotations

import copy
from collections.abc import Callable

import pytest
import torch

import rducc
from rducc.errors import RduccError

Form = Callable[[torch.Tensor, torch.Tensor], torch.Tensor]


def _cholesky_whitened(factor: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    """x whitened by a Cholesky factor (solve_triangular) plus x times the inverse it factors."""
    return torch.linalg.solve_triangular(factor, x.mT, upper=False).mT + x @ torch.cholesky_inverse(factor)


def _complex_factored(a: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    """A trained matrix made complex, through complex QR, singular values and a Hermitian eigendecomposition
    (torch's complex kernels on the host), by functions of them that are not phase-dependent. (`eigvals`
    trains too, but its backward triples this compile's time.)"""
    z = torch.complex(a, a.mT)
    r = torch.linalg.qr(z)[1]
    w, v = torch.linalg.eigh(z @ z.mH)
    spread = ((v * w.to(v.dtype)) @ v.mH).real * 0.1 + (r * r.conj()).real
    return x @ spread + x * torch.linalg.svdvals(z).sum() * 0.1


FORMS: dict[str, Form] = {
    "solve": lambda a, x: torch.linalg.solve(a, x.mT).mT,
    "solve_right": lambda a, x: torch.linalg.solve(a, x, left=False),
    "inv": lambda a, x: x @ torch.linalg.inv(a),
    "det": lambda a, x: x * torch.linalg.det(a),
    "slogdet": lambda a, x: x * torch.linalg.slogdet(a)[1],
    "batched_det": lambda a, x: x * torch.linalg.det(torch.stack([a, a @ a])).sum(),
    "lu_factor_solve": lambda a, x: torch.linalg.lu_solve(*torch.linalg.lu_factor(a), x.mT).mT,
    "complex_factorizations": _complex_factored,
    "cholesky": lambda a, x: _cholesky_whitened(torch.linalg.cholesky(a @ a.mT + 0.1 * torch.eye(4)), x),
}


class Whitened(torch.nn.Module):
    """A loss through one trained 4 x 4 matrix and a linear head."""

    def __init__(self, form: Form) -> None:
        super().__init__()
        self.matrix = torch.nn.Parameter(torch.eye(4) + 0.2 * torch.randn(4, 4))
        self.head = torch.nn.Linear(4, 4)
        self.form = form

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return ((self.head(self.form(self.matrix, x)) - y) ** 2).mean()


@pytest.mark.parametrize("name", sorted(FORMS))
def test_gradients_through_linear_algebra_are_eagers(name: str) -> None:
    torch.manual_seed(0)
    model, x, y = Whitened(FORMS[name]), torch.randn(8, 4), torch.randn(8, 4)
    reference = copy.deepcopy(model)
    program = rducc.compile_training(model, (x, y), optimizer=None)
    loss, *gradients = program.step(x, y)
    expected = reference(x, y)
    expected.backward()
    torch.testing.assert_close(torch.as_tensor(loss), expected.detach(), rtol=1e-5, atol=1e-6)
    for gradient, (parameter_name, parameter) in zip(gradients, reference.named_parameters(), strict=True):
        torch.testing.assert_close(torch.as_tensor(gradient), parameter.grad, rtol=1e-4, atol=1e-5,
                                   msg=f"{name}: {parameter_name}")


def test_a_determinant_returns_the_lu_torch_returns() -> None:
    """The LU and pivots next to the determinant are torch's kernel's (of `a.mT` for a
    contiguous `a`, of `a` otherwise): its backward reads them."""
    from rducc.frontend.aten_rewrites import linalg_det, linalg_slogdet

    torch.manual_seed(1)
    a = torch.randn(3, 5, 5)
    for matrix in (a, a.mT):
        det, lu, pivots = torch.ops.aten._linalg_det(matrix)
        ours = linalg_det(matrix)
        torch.testing.assert_close(ours[0], det, rtol=1e-5, atol=1e-5)
        torch.testing.assert_close(ours[1], lu, rtol=1e-5, atol=1e-5)
        assert torch.equal(ours[2], pivots)
        torch.testing.assert_close(linalg_slogdet(matrix)[2], torch.ops.aten._linalg_slogdet(matrix)[2],
                                   rtol=1e-5, atol=1e-5)


def test_torch_compile_trains_through_a_cholesky_factor() -> None:
    """The torch.compile backend: AOT autograd traces with linalg's check an ordinary op, so
    neither graph takes an effect token as an input (the importer had a token input it
    dropped: KeyError 'tensors_0'); both graphs run as rducc programs, with eager's gradients."""
    torch._dynamo.reset()
    from rducc.tools import dynamo

    torch.manual_seed(0)
    model, x, y = Whitened(FORMS["cholesky"]), torch.randn(8, 4), torch.randn(8, 4)
    reference = copy.deepcopy(model)
    torch.compile(model, backend="rducc", options={"opt_level": 0})(x, y).backward()
    reference(x, y).backward()
    for (name, got), want in zip(model.named_parameters(), reference.parameters(), strict=True):
        torch.testing.assert_close(got.grad, want.grad, rtol=1e-4, atol=1e-5, msg=name)
    forward, backward = dynamo.TRAINING_PARTS
    assert len(forward) == len(backward) == 1, "one rducc program for each of the forward and backward graphs"


def test_complex_singular_vectors_in_a_loss_are_refused_with_the_reason() -> None:
    """torch's backward of a complex SVD's vectors checks their phases on the values (`allclose`),
    which no traced graph can: one error naming it and what trains instead."""
    def reconstructed(a: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        u, s, vh = torch.linalg.svd(torch.complex(a, a.mT))
        return x @ ((u * s.to(u.dtype)) @ vh).real

    x = torch.randn(8, 4)
    with pytest.raises(RduccError, match=r"aten\.allclose.*phases.*`svdvals`"):
        rducc.compile_training(Whitened(reconstructed), (x, x), optimizer=None)
