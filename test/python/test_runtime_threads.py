"""The runtime's one thread pool (issue 19): at any thread count, f32/f64
products of at least `threads.PARALLEL_MACS` multiply-adds run on torch's
BLAS and threads (`kernels.gemm`), the pool its convolutions use; smaller
ones on numpy's BLAS on the calling thread; numpy's BLAS never runs a pool of its own beside torch's."""

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


SMALL = (np.ones((4, 3), np.float32), np.ones((3, 2), np.float32))
LARGE = (np.ones((128, 128), np.float32), np.ones((128, 128), np.float32))  # 2M multiply-adds


def _products(lhs: np.ndarray, rhs: np.ndarray) -> None:
    """Products of these operands: plain, into an arena-like view, as a
    pointwise and as a patchwise conv of the same matrices."""
    m, k = lhs.shape
    n = rhs.shape[1]
    kernels.matmul(lhs, rhs)
    kernels.matmul(lhs, rhs, out=np.empty((m, n), np.float32))
    image = np.ones((1, k, m, 1), np.float32)  # k channels, m positions: the same [n, k] x [k, m] GEMM
    kernels.conv(image, np.ones((n, k, 1, 1), np.float32), (1, 1), (0, 0), (1, 1), 1)
    patches = np.ones((1, k, 2 * m, 2), np.float32)  # m 2x2 patches of k channels: [m, 4k] x [4k, n]
    kernels.conv(patches, np.ones((n, k, 2, 2), np.float32), (2, 2), (0, 0), (1, 1), 1)


def test_large_threaded_products_stay_in_torchs_pool(monkeypatch, two_threads) -> None:
    """With more than one thread numpy's matmul is never reached by an f32
    product of PARALLEL_MACS multiply-adds or more; integers still take it
    (torch's BLAS has none)."""
    assert kernels._multiply_adds(*LARGE) >= threads.PARALLEL_MACS
    calls = _numpy_matmul_dtypes(monkeypatch)
    _products(*LARGE)
    assert calls == []
    ints = np.ones((4, 3), np.int64), np.ones((3, 2), np.int64)
    np.testing.assert_array_equal(kernels.matmul(*ints), np.full((4, 2), 3))
    assert calls == [np.dtype(np.int64)]


def test_small_threaded_products_run_on_the_calling_thread(monkeypatch, two_threads) -> None:
    """A product too small to pay for a team runs in numpy's BLAS even with two threads."""
    assert kernels._multiply_adds(*SMALL) < threads.PARALLEL_MACS
    calls = _numpy_matmul_dtypes(monkeypatch)
    _products(*SMALL)
    assert calls == [np.dtype(np.float32)] * 4


def test_one_thread_products_size_picks_the_blas(monkeypatch) -> None:
    """At one thread too a large f32 product runs on torch's BLAS (faster than
    numpy's on linear layers, `threads` docstring), a small one on numpy's."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        calls = _numpy_matmul_dtypes(monkeypatch)
        _products(*LARGE)
        assert calls == []
        _products(*SMALL)
    finally:
        torch.set_num_threads(before)
    assert calls == [np.dtype(np.float32)] * 4


def test_multiply_adds_count_the_broadcast_batch() -> None:
    lhs, rhs = np.ones((3, 1, 4, 5), np.float32), np.ones((2, 5, 6), np.float32)
    assert kernels._multiply_adds(lhs, rhs) == 3 * 2 * 4 * 5 * 6


def test_numpy_blas_is_set_to_one_thread_once(monkeypatch) -> None:
    """numpy's BLAS is set to one thread (no second pool beside torch's), once a process."""
    counts: list[int] = []
    monkeypatch.setattr(threads, "_SET_BLAS_THREADS", counts.append)
    monkeypatch.setattr(threads, "_blas_pinned", [False])
    threads.single_threaded_numpy_blas()
    threads.single_threaded_numpy_blas()
    assert counts == [1]
