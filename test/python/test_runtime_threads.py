"""The runtime's one thread pool (issue 19): f32/f64 products run on torch's
BLAS and threads (`kernels.gemm`), the pool its convolutions use, never on
numpy's OpenBLAS beside it; numpy's BLAS follows torch's thread count."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from rducc.runtime import kernels, threads

CASES = [
    # (lhs shape, rhs shape, transpose_rhs)
    ((5, 7), (7, 3), False),
    ((2, 4, 6), (6, 5), False),  # a linear layer: one 2-d GEMM
    ((3, 4, 6), (3, 6, 2), False),  # batched
    ((2, 3, 4, 8), (1, 3, 5, 8), True),  # broadcast batch, rhs given transposed
]


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=str)
@pytest.mark.parametrize("case", CASES, ids=lambda c: "x".join(map(str, c[0])) + "@" + "x".join(map(str, c[1])))
def test_products_match_numpy(case, dtype) -> None:
    lhs_shape, rhs_shape, transpose_rhs = case
    rng = np.random.default_rng(0)
    lhs, rhs = rng.standard_normal(lhs_shape).astype(dtype), rng.standard_normal(rhs_shape).astype(dtype)
    expected = np.matmul(lhs, rhs.swapaxes(-1, -2) if transpose_rhs else rhs)
    result = kernels.matmul(lhs, rhs, None, transpose_rhs)
    out = np.empty(expected.shape, dtype)
    assert kernels.matmul(lhs, rhs, None, transpose_rhs, out) is out
    tolerance = 1e-5 if dtype == np.float32 else 1e-12
    for got in (result, out):
        assert got.dtype == np.dtype(dtype) and got.shape == expected.shape
        np.testing.assert_allclose(got, expected, rtol=tolerance, atol=tolerance)


def test_numpy_blas_is_not_called_for_floats(monkeypatch) -> None:
    """numpy's matmul (its OpenBLAS pool) is never reached by an f32 product,
    into an arena view or not; integers still take it (torch's BLAS has none)."""
    calls: list[np.dtype] = []
    plain = np.matmul

    def counting(lhs, rhs, *args, **kwargs):
        calls.append(np.asarray(lhs).dtype)
        return plain(lhs, rhs, *args, **kwargs)

    monkeypatch.setattr(kernels.np, "matmul", counting)
    lhs, rhs = np.ones((4, 3), np.float32), np.ones((3, 2), np.float32)
    kernels.matmul(lhs, rhs)
    kernels.matmul(lhs, rhs, out=np.empty((4, 2), np.float32))
    kernels.conv(np.ones((1, 3, 4, 4), np.float32), np.ones((5, 3, 1, 1), np.float32), (1, 1), (0, 0), (1, 1), 1)
    assert calls == []
    np.testing.assert_array_equal(kernels.matmul(lhs.astype(np.int64), rhs.astype(np.int64)), np.full((4, 2), 3))
    assert calls == [np.dtype(np.int64)]


def test_numpy_blas_follows_torch_threads() -> None:
    before = torch.get_num_threads()
    try:
        for count in (1, 2):
            torch.set_num_threads(count)
            assert threads.follow_torch() == count
    finally:
        torch.set_num_threads(before)
        threads.follow_torch()
