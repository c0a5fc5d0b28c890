"""Random ops (rand, randn, rand_like, randn_like, bernoulli, training-mode
dropout, randperm) run in rducc's runtime: their numbers are not torch's, so
these tests check their distributions, as PyTorch documents them.

- torch.rand: uniform on [0, 1); torch.randn: standard normal. Checked by mean,
  variance and a Kolmogorov-Smirnov test, each with bounds a correct draw
  exceeds with probability about 1e-6.
- torch.bernoulli(x, p): 1 with probability p; F.dropout(x, p, training=True):
  zeroes each element with probability p and scales the rest by 1 / (1 - p).
- torch.randperm(n): a permutation of 0..n-1.
- torch.randint (and tensor.random_(to)): each integer of [low, high) equally
  often; uniform_(a, b) and torch.normal / normal_ (tensor or number mean and
  std): uniform and normal after rescaling; multinomial: each
  category at its weight's share (without replacement: never twice, zero
  weights last); rrelu in training: slopes uniform on [lower, upper];
  poisson: each rate's counts at their probabilities (mean and variance the rate).

Each program is compiled at -O0 and -O2 (the whole pipeline) and run twice:
a run draws fresh numbers; within one run, every tile of a tiled kernel reads
the same ones (checked on a target whose SRAM forces a tile loop).
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F

import rducc
from rducc.targets import load_target

N = 4000
"""Samples per distribution: the mean of a uniform within 5 standard errors is within 0.023."""

KS_CRITICAL = 2.7
"""sqrt(n) times the Kolmogorov-Smirnov statistic exceeds this with probability about 1e-6."""


class Draws(torch.nn.Module):
    def forward(self, x: torch.Tensor, ones: torch.Tensor) -> dict[str, torch.Tensor]:
        return {
            "rand": torch.rand(N),
            "randn": torch.randn(40, N // 40),
            "rand_like_bf16": torch.rand_like(x.bfloat16()),
            "randn_like": torch.randn_like(x),
            "bernoulli_p": torch.bernoulli(x, 0.3),
            "bernoulli_tensor": torch.bernoulli(torch.full_like(x, 0.8)),
            "dropout": F.dropout(ones, 0.4, training=True),
            "randperm": torch.randperm(60),
            "randperm_int32_generator": torch.randperm(60, dtype=torch.int32, generator=torch.Generator().manual_seed(1)),
        }


def _ks_statistic(samples: np.ndarray, cdf) -> float:
    """Kolmogorov-Smirnov distance between the samples' empirical CDF and `cdf`."""
    values = np.sort(samples.astype(np.float64))
    expected = np.array([cdf(v) for v in values])
    n = len(values)
    above = np.arange(1, n + 1) / n - expected
    below = expected - np.arange(0, n) / n
    return float(max(above.max(), below.max()))


def _normal_cdf(v: float) -> float:
    return 0.5 * (1 + math.erf(v / math.sqrt(2)))


def _check_uniform(values: np.ndarray, what: str) -> None:
    """Bounds of about five standard errors (and the KS test at alpha ~ 1e-6):
    the numbers depend on how many runs came before, so no draw may fail."""
    n = values.size
    assert values.min() >= 0 and values.max() < 1, what
    assert abs(values.mean() - 0.5) < 5 * math.sqrt(1 / 12 / n), f"{what}: mean {values.mean()}"
    assert abs(values.var() - 1 / 12) < 5 * math.sqrt((1 / 80 - 1 / 144) / n), f"{what}: variance {values.var()}"
    assert _ks_statistic(values.ravel(), lambda v: min(max(v, 0.0), 1.0)) < KS_CRITICAL / math.sqrt(n), what


def _check_normal(values: np.ndarray, what: str) -> None:
    n = values.size
    assert abs(values.mean()) < 5 / math.sqrt(n), f"{what}: mean {values.mean()}"
    assert abs(values.std() - 1) < 5 / math.sqrt(2 * n), f"{what}: std {values.std()}"
    assert _ks_statistic(values.ravel(), _normal_cdf) < KS_CRITICAL / math.sqrt(n), what


def _check_ones_with_rate(values: np.ndarray, rate: float, what: str) -> None:
    n = values.size
    assert set(np.unique(values)) <= {0.0, 1.0}, what
    bound = 5 * math.sqrt(rate * (1 - rate) / n)
    assert abs(values.mean() - rate) < bound, f"{what}: rate {values.mean()}, expected {rate}"


@pytest.fixture(scope="module")
def exported() -> torch.export.ExportedProgram:
    x = torch.randn(50, 60)
    return torch.export.export(Draws(), (x, torch.ones(50, 60)))


@pytest.mark.parametrize("opt_level", [0, 2])
def test_random_ops_have_their_distributions(exported: torch.export.ExportedProgram, opt_level: int) -> None:
    program = rducc.compile(exported, opt_level=opt_level)
    x, ones = torch.randn(50, 60), torch.ones(50, 60)
    first, second = program(x, ones), program(x, ones)
    for name in first:
        assert first[name].shape == Draws()(x, ones)[name].shape, name
        assert not torch.equal(first[name], second[name]), f"{name}: two runs drew the same numbers"
    _check_uniform(first["rand"].numpy(), "rand")
    _check_uniform(first["rand_like_bf16"].float().numpy(), "rand_like bf16")
    assert first["rand_like_bf16"].dtype == torch.bfloat16
    _check_normal(first["randn"].numpy(), "randn")
    _check_normal(first["randn_like"].numpy(), "randn_like")
    _check_ones_with_rate(first["bernoulli_p"].numpy(), 0.3, "bernoulli p=0.3")
    _check_ones_with_rate(first["bernoulli_tensor"].numpy(), 0.8, "bernoulli of a tensor of 0.8")
    dropped = first["dropout"].numpy()
    assert set(np.unique(dropped)) <= {0.0, np.float32(1 / 0.6)}, "dropout scales kept values by 1 / (1 - p)"
    _check_ones_with_rate((dropped != 0).astype(np.float32), 0.6, "dropout keep rate")
    assert sorted(first["randperm"].tolist()) == list(range(60))
    assert first["randperm"].tolist() != list(range(60))
    assert first["randperm_int32_generator"].dtype == torch.int32
    assert sorted(first["randperm_int32_generator"].tolist()) == list(range(60))


class SharedNoise(torch.nn.Module):
    """One random row added to every row of x: every row of the result minus x
    must show the same noise, however the kernel is tiled."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + torch.rand(x.shape[1])


def test_one_run_reads_the_same_draw_in_every_tile() -> None:
    small = dataclasses.replace(load_target("sn40l"), name="small", sram_bytes=12_000, pmu_bytes=500, pmus=24)
    x = torch.zeros(64, 128)
    program = rducc.compile(SharedNoise(), (x,), target=small, opt_level=2)
    assert "scf.for" in program.mlir, "the target should force a tile loop"
    noise = program(x)
    assert torch.equal(noise, noise[:1].expand_as(noise))
    _check_uniform(noise[0].numpy(), "rand row")


def test_dropout_outside_training_is_the_identity() -> None:
    class Eval(torch.nn.Module):
        def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
            return torch.ops.aten.native_dropout(x, 0.5, False)

    x = torch.randn(3, 4)
    out, mask = rducc.compile(Eval(), (x,))(x)
    assert torch.equal(out, x) and bool(mask.all())


class MoreDraws(torch.nn.Module):
    """The random ops rducc decomposes itself (rducc.frontend.aten_rewrites)."""

    def forward(self, x: torch.Tensor, weights: torch.Tensor) -> dict[str, torch.Tensor]:
        generator = None
        return {
            "randint": torch.randint(0, 10, (N,)),
            "randint_low_i32": torch.randint(-3, 4, (40, N // 40), dtype=torch.int32),
            "randint_like": torch.randint_like(x, 5, 9),
            "randn_generator": torch.randn((N,), generator=generator),
            "rand_generator": torch.rand((N,), generator=generator),
            "rand_like_generator": torch.rand_like(x, generator=torch.Generator().manual_seed(1)),
            "randn_like_generator": torch.randn_like(x, generator=torch.Generator().manual_seed(2)),
            "randint_like_generator": torch.randint_like(x, 7, generator=torch.Generator().manual_seed(3)),
            "multinomial_replacement": torch.multinomial(weights, 200, replacement=True),
            "multinomial": torch.multinomial(weights, 3),
            "rrelu": F.rrelu(-x.abs() - 1, 0.1, 0.3, training=True),
            "rrelu_eval": F.rrelu(x, 0.1, 0.3, training=False),
            "uniform_": torch.empty(N).uniform_(-2.0, 6.0),
            "normal_": torch.empty(N).normal_(3.0, 0.5),
            "normal_tensors": torch.normal(x * 0 + 1.0, torch.full((50, 60), 2.0)),
            "normal_tensor_number": torch.normal(torch.full((40, N // 40), -1.0), 0.25),
            "normal_number_tensor": torch.normal(5.0, torch.full((N,), 3.0)),
            "normal_numbers": torch.normal(0.5, 4.0, (N,)),
            "random_to": torch.empty(N).random_(6),
        }


WEIGHTS = torch.tensor([[1.0, 0.0, 3.0, 4.0], [0.0, 0.0, 1.0, 1.0]]).repeat(20, 1)
"""Rows of category weights (zeros included): 40 rows x 200 draws with replacement."""


def _check_counts(values: np.ndarray, probabilities: np.ndarray, what: str) -> None:
    """Each category's frequency within five standard errors of its probability."""
    n = values.size
    for category, p in enumerate(probabilities):
        rate = float((values == category).mean())
        assert abs(rate - p) <= 5 * math.sqrt(p * (1 - p) / n) + 1e-12, f"{what}: category {category} rate {rate}, expected {p}"


@pytest.mark.parametrize("opt_level", [0, 2])
def test_decomposed_random_ops_have_their_distributions(opt_level: int) -> None:
    x = torch.randn(50, 60)
    program = rducc.compile(torch.export.export(MoreDraws(), (x, WEIGHTS)), opt_level=opt_level)
    first, second = program(x, WEIGHTS), program(x, WEIGHTS)
    expected = MoreDraws()(x, WEIGHTS)
    for name in first:
        assert first[name].shape == expected[name].shape and first[name].dtype == expected[name].dtype, name
    for name in ("randint", "randn_generator", "multinomial_replacement", "rrelu", "uniform_", "normal_tensors"):
        assert not torch.equal(first[name], second[name]), f"{name}: two runs drew the same numbers"
    _check_counts(first["randint"].numpy(), np.full(10, 0.1), "randint(0, 10)")
    _check_counts(first["randint_low_i32"].numpy() + 3, np.full(7, 1 / 7), "randint(-3, 4)")
    drawn = first["randint_like"].numpy()
    assert drawn.min() >= 5 and drawn.max() <= 8 and set(np.unique(drawn)) == {5, 6, 7, 8}
    _check_normal(first["randn_generator"].numpy(), "randn with a generator")
    _check_uniform(first["rand_generator"].numpy(), "rand with a generator")
    _check_uniform(first["rand_like_generator"].numpy().ravel(), "rand_like with a generator")
    _check_normal(first["randn_like_generator"].numpy().ravel(), "randn_like with a generator")
    _check_counts(first["randint_like_generator"].numpy().ravel(), np.full(7, 1 / 7), "randint_like with a generator")
    rows = first["multinomial_replacement"].numpy()
    _check_counts(rows[0::2], np.array([1, 0, 3, 4]) / 8, "multinomial with replacement")
    _check_counts(rows[1::2], np.array([0, 0, 1, 1]) / 2, "multinomial with replacement, zero weights")
    without = first["multinomial"].numpy()
    assert all(len(set(row)) == 3 for row in without), "without replacement, no category twice"
    assert all(sorted(row[:2]) == [2, 3] for row in without[1::2]), "the two positive weights come first"
    assert (without[0::2] != 1).all(), "a zero-weight category is drawn only when nothing else is left"
    slopes = (first["rrelu"] / (-x.abs() - 1)).numpy()
    assert slopes.min() >= 0.1 and slopes.max() <= 0.3
    assert abs(slopes.mean() - 0.2) < 5 * 0.2 / math.sqrt(12 * slopes.size)
    torch.testing.assert_close(first["rrelu_eval"], expected["rrelu_eval"])
    _check_uniform((first["uniform_"].numpy() + 2) / 8, "uniform_(-2, 6)")
    for name, mean, std in (("normal_", 3.0, 0.5), ("normal_tensors", 1.0, 2.0), ("normal_tensor_number", -1.0, 0.25),
                            ("normal_number_tensor", 5.0, 3.0), ("normal_numbers", 0.5, 4.0)):
        _check_normal((first[name].numpy() - mean) / std, name)
    _check_counts(first["random_to"].numpy(), np.full(6, 1 / 6), "random_(6)")


RATES = (0.5, 4.0, 30.0)


class Counts(torch.nn.Module):
    def forward(self, rates: torch.Tensor) -> torch.Tensor:
        return torch.poisson(rates)


def _check_poisson(values: np.ndarray, rate: float, what: str) -> None:
    """Mean and variance within five standard errors of `rate`, and each count's frequency of its
    probability (counts of probability over 1e-3)."""
    n = values.size
    assert (values == np.round(values)).all() and values.min() >= 0, f"{what}: not counts"
    assert abs(values.mean() - rate) < 5 * math.sqrt(rate / n), f"{what}: mean {values.mean()}"
    assert abs(values.var() - rate) < 5 * math.sqrt((rate + 2 * rate**2) / n), f"{what}: variance {values.var()}"
    counts = np.arange(int(rate + 10 * math.sqrt(rate) + 10))
    pmf = np.exp(counts * math.log(rate) - rate - np.array([math.lgamma(k + 1) for k in counts]))
    for count, p in zip(counts, pmf):
        if p > 1e-3:
            rate_seen = float((values == count).mean())
            assert abs(rate_seen - p) <= 5 * math.sqrt(p * (1 - p) / n), f"{what}: count {count} at {rate_seen}, expected {p}"


@pytest.mark.parametrize("opt_level", [0, 2])
def test_poisson_draws_counts_of_each_rate(opt_level: int) -> None:
    """torch.poisson (aten_rewrites.poisson: the distribution function inverted by bisection):
    rate 0 draws 0, each rate's counts have its distribution, two runs differ."""
    rates = torch.tensor([0.0, *RATES]).repeat_interleave(N)
    program = rducc.compile(Counts(), (rates,), opt_level=opt_level)
    first, second = program(rates), program(rates)
    assert first.dtype == torch.float32 and first.shape == rates.shape and not torch.equal(first, second)
    drawn = first.view(len(RATES) + 1, N).numpy()
    assert (drawn[0] == 0).all(), "rate 0"
    for row, rate in zip(drawn[1:], RATES):
        _check_poisson(row, rate, f"poisson({rate})")


def test_the_poisson_check_fails_on_a_wrong_distribution() -> None:
    """Planted: counts of rate 0.6 for 0.5; a rounded normal with rate 4's mean and variance."""
    rng = np.random.default_rng(0)
    with pytest.raises(AssertionError):
        _check_poisson(rng.poisson(0.6, N).astype(np.float64), 0.5, "rate 0.6, not 0.5")
    with pytest.raises(AssertionError):
        _check_poisson(np.clip(np.round(rng.normal(4, 2, N)), 0, None), 4.0, "a rounded normal")
    for rate in RATES:
        _check_poisson(rng.poisson(rate, N).astype(np.float64), rate, "a true Poisson passes")
