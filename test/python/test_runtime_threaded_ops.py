"""The runtime at more than one torch thread (issue 32): the same bits as at
one thread where the calling thread reads and writes subnormals as zero (a
softmax, a product, a map with an exponential), on torch's pool threads too.
The pool's threads keep the flags they were made with, so a run gives them
the calling thread's environment with the flags set
(`subnormals.pool_flushing`); before, their share of such an op wrote
subnormals the calling thread's did not (and ran 50-80x slower). Layout
copies run on the pool as eager's do (`elementwise.assign`), an attention
chain's operands copied aside too."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
import torch
from torch.utils._python_dispatch import TorchDispatchMode

import rducc
from rducc.runtime import interpreter, subnormals

TINY = np.finfo(np.float32).tiny


class _TinyResults(torch.nn.Module):
    """Three ops whose results are subnormal in part: a masked softmax (Swin's
    shifted windows add -100: probabilities of 4e-44) and the product reading
    it, a product of 1e-20-sized operands (1e-40), and a map whose
    exponential is normal (9e-37) but whose product after it is not."""

    def forward(self, scores: torch.Tensor, v: torch.Tensor, a: torch.Tensor, b: torch.Tensor,
                x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        probabilities = torch.softmax(scores, -1)
        return probabilities, probabilities @ v, a @ b, torch.exp(x) * 1e-4


@pytest.fixture(scope="module")
def compiled() -> tuple[torch.nn.Module, tuple[torch.Tensor, ...], rducc.Program]:
    generator = torch.Generator().manual_seed(4)
    scores = torch.randn(16, 3, 49, 49, generator=generator)
    scores[..., ::2] -= 100.0
    inputs = (scores, torch.randn(16, 3, 49, 32, generator=generator),
              torch.rand(256, 128, generator=generator) * 1e-20, torch.rand(128, 256, generator=generator) * 1e-20,
              torch.rand(256, 256, generator=generator) - 83.5)
    model = _TinyResults()
    with torch.no_grad():
        program = rducc.compile(torch.export.export(model, inputs), opt_level=2)
    return model, inputs, program


@pytest.fixture()
def threads() -> Iterator[None]:
    before = torch.get_num_threads()
    yield
    torch.set_num_threads(before)


@pytest.mark.usefixtures("threads")
def test_subnormal_results_are_the_same_bits_at_two_threads_as_at_one(compiled: tuple) -> None:
    """Each result has no subnormal at one thread or two, the same bits both
    ways, and is eager's (which keeps its subnormals) to 1.2e-38."""
    if not subnormals.pool_flags_settable():
        pytest.skip("no OpenMP runtime or floating-point flags to set on this host")
    model, inputs, program = compiled
    torch.set_num_threads(2)
    torch.ones(1 << 20).add_(1)  # the pool's threads exist, made while nothing flushes
    with torch.no_grad():
        expected = model(*inputs)
    results = {}
    for count in (1, 2):
        torch.set_num_threads(count)
        results[count] = [torch.as_tensor(r).numpy() for r in program(*inputs)]
    for one, two, eager in zip(results[1], results[2], expected):
        assert not ((np.abs(two) > 0) & (np.abs(two) < TINY)).any()
        np.testing.assert_array_equal(two, one)
        np.testing.assert_allclose(two, eager.numpy(), rtol=2e-6, atol=TINY)
    assert (np.abs(expected[2].numpy()) < TINY).mean() > 0.9  # eager's product is subnormal: a case to catch


def test_the_pool_flags_last_only_as_long_as_a_run(compiled: tuple, threads: None) -> None:
    """After a run at two threads, an eager product on the pool keeps its
    subnormals as before it (the pool's threads have the calling thread's
    flags back)."""
    if not subnormals.pool_flags_settable():
        pytest.skip("no OpenMP runtime or floating-point flags to set on this host")
    _, inputs, program = compiled
    torch.set_num_threads(2)
    a, b = inputs[2], inputs[3]
    before = int(((a @ b) != 0).sum())
    program(*inputs)
    assert int(((a @ b) != 0).sum()) == before > 0


class _ShiftedWindows(torch.nn.Module):
    """Swin's shifted-window partition and its inverse: a roll, a view of a
    permutation reshaped (NumPy must copy), a map, and back."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        channels = x.shape[-1]
        x = torch.roll(x, (-3, -3), (1, 2))
        windows = x.view(1, 8, 7, 8, 7, channels).permute(0, 1, 3, 2, 4, 5).reshape(64, 49, channels) * 2.0
        x = windows.view(1, 8, 8, 7, 7, channels).permute(0, 1, 3, 2, 4, 5).reshape(1, 56, 56, channels)
        return torch.roll(x, (3, 3), (1, 2)) + 1.0


class _AtenCalls(TorchDispatchMode):
    """Counts the ATen ops called inside, by name."""

    def __init__(self) -> None:
        super().__init__()
        self.counts: dict[str, int] = {}

    def __torch_dispatch__(self, func: Any, types: Any, args: tuple = (), kwargs: dict | None = None) -> Any:
        self.counts[str(func)] = self.counts.get(str(func), 0) + 1
        return func(*args, **(kwargs or {}))


@pytest.mark.usefixtures("threads")
@pytest.mark.parametrize("channels", [192, 12])
def test_layout_copies_run_on_torchs_pool_at_two_threads(channels: int) -> None:
    """At two threads the window partitions' copies (from
    `elementwise.TORCH_COPY_ELEMENTS`, torch's grain: 602K elements, and 38K,
    Swin's last stage's size) are torch's `copy_` (split over its pool,
    `elementwise.assign`), at one NumPy's; eager's bits either way."""
    x = torch.randn(1, 56, 56, channels, generator=torch.Generator().manual_seed(5))
    x[0, 0, 0, :2] = torch.tensor([float("nan"), -0.0])
    model = _ShiftedWindows()
    with torch.no_grad():
        program = rducc.compile(torch.export.export(model, (x,)), opt_level=2)
        expected = model(x)
    copies = {}
    for count in (1, 2):
        torch.set_num_threads(count)
        program(x)
        with _AtenCalls() as calls:
            result = torch.as_tensor(program(x))
        assert torch.equal(result.nan_to_num(), expected.nan_to_num()) and result.isnan().equal(expected.isnan())
        copies[count] = calls.counts.get("aten.copy_.default", 0)
    assert copies[1] == 0 and copies[2] >= 2, copies


@pytest.mark.usefixtures("threads")
def test_attention_operands_copied_aside_on_torchs_pool_at_two_threads() -> None:
    """An attention chain's operands copied aside (`interpreter._copies_aside`:
    GPT-2's scaled queries, 98K elements a layer; Swin-T's 37-301K) are a
    layout copy: torch's `copy_` on its pool at two threads, NumPy's at one,
    the source's bits either way (random bits, NaN payloads among them, from
    a strided source)."""
    raw = np.random.default_rng(2).integers(0, 2**32, 4 * 49 * 384, dtype=np.uint64).astype(np.uint32)
    source = raw.view(np.float32).reshape(4, 49, 384).transpose(1, 0, 2)
    step = interpreter._copies_aside([(0, 1)])
    copies = {}
    for count in (1, 2):
        torch.set_num_threads(count)
        env = [source, np.empty(source.shape, np.float32)]
        with _AtenCalls() as calls:
            step(env, None)
        assert np.array_equal(env[1].view(np.uint32), source.view(np.uint32))
        copies[count] = calls.counts.get("aten.copy_.default", 0)
    assert copies == {1: 0, 2: 1}, copies


class _Negations(torch.nn.Module):
    """A map body negating an operand between two multiplies (Mixtral's
    `x / (1 + exp(-x))` negates between pool ops too)."""

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return -(x * y) * y


@pytest.mark.usefixtures("threads")
def test_a_bodys_negation_runs_on_torchs_pool_at_two_threads() -> None:
    """At two threads a body's negation of 38K elements is torch's kernel on
    its pool (as its multiplies are), at one NumPy's; the same bits either
    way, a NaN's and a zero's sign bits too."""
    generator = torch.Generator().manual_seed(6)
    x, y = torch.randn(196, 192, generator=generator), torch.randn(196, 192, generator=generator)
    x[0, :4] = torch.tensor([float("nan"), -float("nan"), 0.0, -0.0])
    model = _Negations()
    with torch.no_grad():
        program = rducc.compile(torch.export.export(model, (x, y)), opt_level=2)
        expected = model(x, y).numpy().view(np.uint32)
    negations, bits = {}, {}
    for count in (1, 2):
        torch.set_num_threads(count)
        program(x, y)
        with _AtenCalls() as calls:
            bits[count] = torch.as_tensor(program(x, y)).numpy().view(np.uint32)
        negations[count] = calls.counts.get("aten.neg.out", 0)
    np.testing.assert_array_equal(bits[2], bits[1])
    assert np.array_equal(bits[1], expected)
    assert negations == {1: 0, 2: 1}, negations
