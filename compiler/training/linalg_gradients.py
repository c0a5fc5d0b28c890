"""Linear algebra that a training step differentiates through rducc's own decompositions.

`torch.linalg.solve`, `inv` and `lu_factor` are composite ops: torch lowers them to
`_linalg_solve_ex`, `linalg_inv_ex` and `linalg_lu_factor_ex`, whose autograd
formulas sit beside outputs that take no gradient (LU, pivots, LAPACK's info).
torch's joint-graph export fails on those ("Expected positional argument for
parameter tangents_1"). Before the joint graph is built, a program that calls
them has them replaced by rducc's exact decompositions into differentiable ATen
ops (LU with partial pivoting unrolled over the static size, then substitution:
`rducc.frontend.aten_rewrites`), so autograd differentiates the elimination
itself. The gradient is the analytic one in exact arithmetic; the pivot choice
takes none (as for any argmax).

The other composites (`linalg.cholesky`, `cholesky_inverse` of it, ...) check
LAPACK's info by `_linalg_check_errors`, which torch registers as a side effect:
functionalization threads an effect token through it, and torch's joint graph
takes that token for a forward output needing a tangent (the same "tangents_1"
error). rducc's factorizations report no failure and its importer drops the
check (`converter_api.IGNORED_TARGETS`), so the joint graph (and the
torch.compile backend's AOT autograd, `rducc.tools.dynamo`) is traced with the
check an ordinary op (`checks_without_effects`): it returns nothing and is
traced away.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import torch
from torch.export import ExportedProgram

from rducc.frontend.aten_rewrites import linalg_inv_ex, linalg_lu_factor_ex, linalg_solve_ex

aten = torch.ops.aten


def _solve(a: torch.Tensor, b: torch.Tensor, *, left: bool = True) -> torch.Tensor:
    """x with a x = b (x a = b when not `left`: a^T x^T = b^T)."""
    if left:
        return linalg_solve_ex(a, b)[0]
    return linalg_solve_ex(a.mT, b.mT)[0].mT


def _inverse(a: torch.Tensor) -> torch.Tensor:
    return linalg_inv_ex(a)[0]


def _lu_factor(a: torch.Tensor, *, pivot: bool = True) -> Any:
    if not pivot:
        return NotImplemented
    lu, pivots, _ = linalg_lu_factor_ex(a)
    return lu, pivots


DIFFERENTIATED_AS_DECOMPOSED: dict[torch._ops.OpOverload, Callable[..., Any]] = {
    aten.linalg_solve.default: _solve,
    aten.linalg_inv.default: _inverse,
    aten.linalg_lu_factor.default: _lu_factor,
}
"""Each composite op whose gradient torch's joint graph cannot take, with the
decomposition a training step differentiates instead."""


def linalg_decomposed(ep: ExportedProgram) -> ExportedProgram:
    """`ep` with its calls of `DIFFERENTIATED_AS_DECOMPOSED`'s ops decomposed
    (nothing else); `ep` itself when it calls none."""
    called = {node.target for node in ep.graph.nodes if node.op == "call_function"}
    table = {op: function for op, function in DIFFERENTIATED_AS_DECOMPOSED.items() if op in called}
    return ep.run_decompositions(table) if table else ep


_CHECK = "aten::_linalg_check_errors"
"""linalg's check of a factorization's status, registered by torch as a side effect."""


@contextmanager
def checks_without_effects() -> Iterator[None]:
    """While inside, `_CHECK` is not a side effect (no effect token is threaded
    through it); its registration is restored after."""
    from torch._higher_order_ops.effects import _get_effect, _register_effectful_op

    previous = _get_effect(_CHECK)
    _register_effectful_op(_CHECK, None)
    try:
        yield
    finally:
        _register_effectful_op(_CHECK, previous)
