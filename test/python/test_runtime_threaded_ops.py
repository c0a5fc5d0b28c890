"""The runtime's results at more than one torch thread (issue 32): a
softmax's probabilities are the same bits at two threads as at one, where
the calling thread reads and writes subnormals as zero around it: torch's
pool threads do not, so the runtime zeroes the subnormals they wrote
(`subnormals.zero_pool_subnormals`; the product reading them ran the
pool's share 50-80x slower)."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest
import torch

from rducc.runtime import kernels


@pytest.fixture(params=[1, 2])
def threads(request: pytest.FixtureRequest) -> Iterator[int]:
    before = torch.get_num_threads()
    torch.set_num_threads(request.param)
    yield request.param
    torch.set_num_threads(before)


def test_a_masked_softmax_has_no_subnormals_at_any_thread_count(threads: int) -> None:
    """Probabilities of 1e-44 (scores 100 below their row's largest, Swin's
    shifted-window mask) are zero at two threads as at one, where the calling
    thread flushes them: the pool's threads' share too
    (`subnormals.zero_pool_subnormals`); a NaN row stays NaN."""
    scores = np.random.default_rng(4).standard_normal((16, 3, 49, 49)).astype(np.float32)
    scores[..., ::2] -= 100.0
    scores[0, 0, 0, 0] = np.nan
    torch.ones(1 << 20).add_(1)  # the pool's threads exist, made while nothing flushes
    out = np.empty_like(scores)
    kernels.softmax(scores, -1, False, out)
    eager = torch.softmax(torch.from_numpy(scores), -1).numpy()
    tiny = np.finfo(np.float32).tiny
    assert not ((out > 0) & (out < tiny)).any()
    expected = np.where((eager > 0) & (eager < tiny), np.float32(0), eager)  # eager's, subnormals flushed
    np.testing.assert_array_equal(np.isnan(out), np.isnan(expected))
    assert np.isnan(out[0, 0, 0]).all()
    np.testing.assert_allclose(out, expected, rtol=2e-7, atol=0)
