"""A map body's float ufuncs on torch's pool at more than one thread (issue
32): arithmetic, negation, and a maximum or minimum against a scalar (a ReLU,
a clamp) run as torch's kernels there (`elementwise.THREADED_UFUNCS`),
numpy's at one thread, with the same bits; a compiled model of window
shuffles, rolls, a ReLU and a clamp equals eager at both counts. A masked
softmax's probabilities are the same bits at two threads as at one: the
pool's threads do not flush subnormals, so the runtime zeroes theirs."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest
import torch

import rducc
from rducc.runtime import elementwise, kernels

SIZE = elementwise.TORCH_ARITHMETIC_ELEMENTS


@pytest.fixture
def torch_calls(monkeypatch: pytest.MonkeyPatch) -> list[np.ndarray]:
    """The arrays handed to torch from now on (`elementwise.as_torch`)."""
    calls: list[np.ndarray] = []
    as_torch = elementwise.as_torch
    monkeypatch.setattr(elementwise, "as_torch", lambda x: calls.append(x) or as_torch(x))
    return calls


@pytest.fixture(params=[1, 2])
def threads(request: pytest.FixtureRequest) -> Iterator[int]:
    before = torch.get_num_threads()
    torch.set_num_threads(request.param)
    yield request.param
    torch.set_num_threads(before)


def _edge_values(shape: tuple[int, ...], seed: int) -> np.ndarray:
    """Normal values with zeros of both signs, infinities and NaN among them."""
    values = np.random.default_rng(seed).standard_normal(shape).astype(np.float32)
    flat = values.reshape(-1)
    flat[::7], flat[3::11], flat[5::13], flat[::101], flat[::997] = 0.0, -0.0, np.inf, -np.inf, np.nan
    return values


def _same_bits(got: np.ndarray, expected: np.ndarray) -> None:
    """Equal bit for bit, a NaN's payload aside."""
    assert got.dtype == expected.dtype and got.shape == expected.shape
    nan = np.isnan(expected)
    np.testing.assert_array_equal(np.isnan(got), nan)
    np.testing.assert_array_equal(got[~nan].view(np.int32), expected[~nan].view(np.int32))


@pytest.mark.parametrize("name", sorted(elementwise.THREADED_UFUNCS))
def test_threaded_ufuncs_give_numpys_bits(name: str, threads: int, torch_calls: list[np.ndarray]) -> None:
    """Each threaded ufunc gives numpy's bits (the sign of a zero maximum or
    minimum too: numpy's picks the second of equal operands), into `out` and
    not, with a broadcast operand; on torch at two threads only. A maximum
    or minimum of two arrays stays numpy's (torch's picks either of equal
    zeros, by position)."""
    ufunc = getattr(np, name)
    run = elementwise.torch_arithmetic(ufunc, elementwise.THREADED_UFUNCS[name])
    a, b = _edge_values((4, SIZE // 2), 0), _edge_values((SIZE // 2,), 1)
    zero, negative_zero = np.float32(0.0), np.float32(-0.0)
    extreme = name in ("maximum", "minimum")
    cases = {1: [(a,)], 2: [(a, zero), (negative_zero, a), (a, np.float32(0.5)), (zero, a)] if extreme
             else [(a, b), (b, a), (a, -a)]}[ufunc.nin]
    for operands in cases:
        expected = ufunc(*operands)
        _same_bits(run(*operands), expected)
        out = np.full(expected.shape, 7.0, np.float32)
        assert run(*operands, out=out) is out
        _same_bits(out, expected)
    assert bool(torch_calls) == (threads > 1)
    if extreme:
        torch_calls.clear()
        for operands in [(a, b), (a, np.float32(np.nan))]:
            _same_bits(run(*operands), ufunc(*operands))
        assert len(torch_calls) == 4 * (threads > 1)  # two operands twice, handed to torch, which declines


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


class Clamps(torch.nn.Module):
    """A ReLU, clamps from above and below, and a negation."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(x - 0.5).clamp(max=2.0) * x + torch.clamp(-x, min=-1.0)


@pytest.fixture(scope="module")
def clamps() -> tuple[Clamps, torch.Tensor, rducc.Program]:
    torch.manual_seed(0)
    model = Clamps().eval()
    x = torch.randn(1, 32, 32, 32)  # 32K elements: on torch's pool at two threads
    x.view(-1)[::9] = 0.5  # a zero ReLU input, and -0.0 from it
    with torch.no_grad():
        return model, x, rducc.compile(torch.export.export(model, (x,)), opt_level=2)


def test_clamps_equal_eager_at_any_thread_count(clamps: tuple[Clamps, torch.Tensor, rducc.Program],
                                                threads: int, torch_calls: list[np.ndarray]) -> None:
    """The compiled model equals eager at one and two threads, twice in a
    row; at two its extremes and negation run on torch's pool."""
    model, x, program = clamps
    with torch.no_grad():
        expected = model(x)
    for _ in range(2):
        torch.testing.assert_close(program(x), expected, rtol=0, atol=0)
    assert any(np.ndim(a) == 0 for a in torch_calls) == (threads > 1)  # a clamp's scalar, handed to torch
