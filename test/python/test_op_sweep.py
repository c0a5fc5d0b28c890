"""A fixed slice of the OpInfo sweep (bench/op_sweep.py): torch's own samples of
ops that rducc once refused or got wrong, each exported, compiled at -O0, run
and compared with eager. The whole sweep: python bench/op_sweep.py."""

from __future__ import annotations

import math
import sys
from pathlib import Path

import pytest
import torch

import rducc

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
import op_sweep  # noqa: E402

OPS = (
    "erfc", "put", "index_reduce.amax", "diagonal_scatter", "cummax", "median", "nanmedian",
    "linalg.solve", "linalg.inv", "linalg.cholesky", "cholesky_solve", "triangular_solve", "lu_solve",
    "addmv", "index_select", "bucketize", "view_copy", "dist", "logaddexp", "unbind_copy", "lgamma", "digamma",
)


@pytest.fixture(scope="module")
def swept() -> op_sweep.Sweep:
    return op_sweep.sweep(set(OPS), samples=1, limit=None, o2_every=0, verbose=False)


def test_every_op_of_the_slice_has_a_sample(swept: op_sweep.Sweep) -> None:
    assert {o.op for o in swept.outcomes} == set(OPS)


def test_the_slice_compiles_and_matches_eager(swept: op_sweep.Sweep) -> None:
    failures = [f"{o.op}: {o.status} {o.cause}" for o in swept.outcomes if o.status != "pass"]
    assert not failures, "\n".join(failures)


def test_causes_blur_what_varies() -> None:
    line = "UnsupportedOpsError: aten.i0.default: 2 uses, first at 'x' [3, 4]"
    assert op_sweep._cause(line) == "UnsupportedOpsError: aten.i0.default: N uses, first at '..' [..]"


class _Gamma(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return torch.lgamma(x), torch.digamma(x)


def test_lgamma_and_digamma_near_poles_and_at_infinities() -> None:
    """Reflected below 1/2 with x's distance to the nearest integer: close to the
    poles too; +inf/-inf/NaN where torch gives them."""
    x = torch.cat([torch.linspace(-20, 20, 4001), torch.tensor(
        [0.0, -1.0, -2.0, -7.0000005, -2.9999998, 1.0, 2.0, 1e-3, -1e-3, 1e3, 1e5, math.inf, -math.inf, math.nan])])
    program = rducc.compile(_Gamma(), (x,), opt_level=2)
    for got, want in zip(program(x), _Gamma()(x)):
        torch.testing.assert_close(got, want, rtol=1e-3, atol=1e-4, equal_nan=True)
