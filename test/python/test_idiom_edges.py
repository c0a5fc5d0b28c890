"""Issue 30, round 22 (gen27): what bench/heldout_sweep.py's `idioms` (small programs of real-code idioms)
found refused or wrong, each checked against eager.

- `searchsorted`/`bucketize` of nan: torch's binary search puts a nan value past every boundary and counts a
  nan boundary (sorted last) below every value; rducc counted `boundary < value`, 0 for a nan value.
- `torch.linalg.lstsq` (CPU's default driver, gelsy): torch's fake kernel declares its output shapes
  data-dependent for every driver and torch.export refused it; `torch.combinations`: torch's composite picks
  the tuples by `masked_select` ("Pending unbacked symbols"). Both are torch corrections now
  (`rducc.frontend.torch_corrections`); lstsq's other drivers are refused by name.
- A batched matmul whose rhs is empty (`b.mT @ b` of a [2, 0, 4] tensor) crashed the runtime's one-GEMM
  path (numpy strides an empty array's outer dim 0, which looked like a broadcast rhs).
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch import nn

import rducc
from rducc.errors import RduccError
from rducc.frontend import aten_rewrites
from rducc.runtime import kernels

NAN, INF = float("nan"), float("inf")


def test_searchsorted_and_bucketize_of_nan_as_eager() -> None:
    sorted_rows = torch.tensor([[1.0, 3.0, 3.0, 7.0], [0.0, 2.0, NAN, NAN]])
    values = torch.tensor([[NAN, -INF, INF, 3.0, 0.5], [NAN, 1.0, 2.0, INF, -1.0]])
    for right in (False, True):
        torch.testing.assert_close(aten_rewrites.searchsorted(sorted_rows, values, right=right),
                                   torch.searchsorted(sorted_rows, values, right=right))
        torch.testing.assert_close(aten_rewrites.bucketize(values, sorted_rows[1], right=right),
                                   torch.bucketize(values, sorted_rows[1], right=right))


class LeastSquaresAndPairs(nn.Module):
    def forward(self, a, b, v):
        fit = torch.linalg.lstsq(a, b)
        return (fit.solution, fit.rank, fit.residuals, torch.linalg.lstsq(a.mT, b[..., :3, :], rcond=1e-4).solution,
                torch.combinations(v), torch.combinations(v, 3, with_replacement=True), torch.combinations(v, 0),
                torch.bucketize(v[0], v.sort().values, right=True))  # a 0-d value (no index read as a number)


def test_lstsq_and_combinations_match_eager() -> None:
    """Full-rank and rank-deficient batches (the minimum-norm solution, the rank), wide and tall."""
    gen = torch.Generator().manual_seed(0)
    example = (torch.randn(2, 5, 3, generator=gen), torch.randn(2, 5, 2, generator=gen), torch.randn(4, generator=gen))
    program = rducc.compile(LeastSquaresAndPairs(), example, opt_level=0)
    deficient = example[0].clone()
    deficient[..., 2] = deficient[..., 0] - deficient[..., 1]
    for inputs in (example, (deficient, example[1], example[2] * 3)):
        got, want = program(*inputs), LeastSquaresAndPairs()(*inputs)
        assert len(got) == len(want)
        for g, w in zip(got, want):
            assert g.dtype == w.dtype and g.shape == w.shape, (g.dtype, w.dtype, g.shape, w.shape)
            torch.testing.assert_close(g, w, rtol=1e-4, atol=1e-4)


def test_lstsq_driver_with_data_dependent_residuals_refused_by_name() -> None:
    class Fit(nn.Module):
        def forward(self, a, b):
            return torch.linalg.lstsq(a, b, driver="gelsd").solution

    with pytest.raises(RduccError, match=r"lstsq with driver='gelsd': its residuals' size depends"):
        rducc.compile(Fit(), (torch.randn(5, 3), torch.randn(5, 2)))


@pytest.mark.parametrize(("lhs", "rhs"), [((2, 4, 0), (2, 0, 4)), ((2, 3, 0), (1, 0, 5)), ((0, 0, 3), (0, 3, 2))])
def test_batched_matmul_with_an_empty_operand(lhs: tuple[int, ...], rhs: tuple[int, ...]) -> None:
    a, b = np.ones(lhs, np.float32), np.ones(rhs, np.float32)
    np.testing.assert_array_equal(kernels.matmul(a, b), torch.matmul(torch.from_numpy(a), torch.from_numpy(b)).numpy())
