"""The runtime's one thread pool (issue 19): with more than one thread, f32/f64
products run on torch's BLAS and threads (`kernels.gemm`), the pool its
convolutions use, never on numpy's OpenBLAS beside it; at one thread on
numpy's; numpy's BLAS follows torch's thread count."""

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
@pytest.mark.parametrize("threads", [1, 2])
def test_products_match_numpy(case, dtype, threads) -> None:
    lhs_shape, rhs_shape, transpose_rhs = case
    rng = np.random.default_rng(0)
    lhs, rhs = rng.standard_normal(lhs_shape).astype(dtype), rng.standard_normal(rhs_shape).astype(dtype)
    expected = np.matmul(lhs, rhs.swapaxes(-1, -2) if transpose_rhs else rhs)
    out = np.empty(expected.shape, dtype)
    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        result = kernels.matmul(lhs, rhs, None, transpose_rhs)
        assert kernels.matmul(lhs, rhs, None, transpose_rhs, out) is out
    finally:
        torch.set_num_threads(before)
    tolerance = 1e-5 if dtype == np.float32 else 1e-12
    for got in (result, out):
        assert got.dtype == np.dtype(dtype) and got.shape == expected.shape
        np.testing.assert_allclose(got, expected, rtol=tolerance, atol=tolerance)


@pytest.fixture
def two_threads():
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    yield
    torch.set_num_threads(before)


def _numpy_matmul_dtypes(monkeypatch) -> list[np.dtype]:
    """The dtypes numpy's matmul is called with from now on."""
    calls: list[np.dtype] = []
    plain = np.matmul

    def counting(lhs, rhs, *args, **kwargs):
        calls.append(np.asarray(lhs).dtype)
        return plain(lhs, rhs, *args, **kwargs)

    monkeypatch.setattr(kernels.np, "matmul", counting)
    return calls


def _products() -> None:
    """An f32 matmul, one into an arena-like view, a pointwise and a patchwise conv."""
    lhs, rhs = np.ones((4, 3), np.float32), np.ones((3, 2), np.float32)
    kernels.matmul(lhs, rhs)
    kernels.matmul(lhs, rhs, out=np.empty((4, 2), np.float32))
    x = np.ones((1, 3, 4, 4), np.float32)
    kernels.conv(x, np.ones((5, 3, 1, 1), np.float32), (1, 1), (0, 0), (1, 1), 1)
    kernels.conv(x, np.ones((5, 3, 2, 2), np.float32), (2, 2), (0, 0), (1, 1), 1)


def test_threaded_products_stay_in_torchs_pool(monkeypatch, two_threads) -> None:
    """With more than one thread numpy's matmul (its OpenBLAS pool) is never
    reached by an f32 product; integers still take it (torch's BLAS has none)."""
    calls = _numpy_matmul_dtypes(monkeypatch)
    _products()
    assert calls == []
    ints = np.ones((4, 3), np.int64), np.ones((3, 2), np.int64)
    np.testing.assert_array_equal(kernels.matmul(*ints), np.full((4, 2), 3))
    assert calls == [np.dtype(np.int64)]


def test_one_thread_products_take_numpys_blas(monkeypatch) -> None:
    """At one thread there is no pool to share: numpy's BLAS, cheaper a call."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        calls = _numpy_matmul_dtypes(monkeypatch)
        _products()
    finally:
        torch.set_num_threads(before)
    assert calls == [np.dtype(np.float32)] * 4


def test_numpy_blas_follows_torch_threads() -> None:
    before = torch.get_num_threads()
    try:
        for count in (1, 2):
            torch.set_num_threads(count)
            assert threads.follow_torch() == count
    finally:
        torch.set_num_threads(before)
        threads.follow_torch()
