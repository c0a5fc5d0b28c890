"""Random ops in training mode (issue 30's random-ops item, issue 27's dropout):
their numbers are not torch's, so these tests check distributions, with
bounds of five standard errors and a Kolmogorov-Smirnov test at sqrt(n) * D
< 2.7 (each exceeded by a correct draw with probability about 1e-6; the
helpers are test_random_ops.py's).

- nn.Dropout and nn.RReLU left in training mode inside a training program
  (a joint graph from `_export_forward_backward`) are compiled, not refused:
  the keep fraction is 1 - p, kept values are scaled by 1 / (1 - p), the
  gradient uses the same mask as the loss, and every run draws a new mask;
  RReLU's negative slopes are uniform on [lower, upper] and its gradient is
  the slope drawn in the same run.
- `native_dropout(x, p, train=True)` returns its mask, the positions kept.
- rand/randn/rand_like/randn_like with dtype, device and generator arguments
  have the dtype asked for and the distribution.
- The checks fail on a wrong distribution (planted: a skewed uniform, a
  normal of the wrong scale, a uniform with a normal's mean and variance
  that only the KS test catches, a dropout at the wrong rate).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from test_random_ops import _check_normal, _check_ones_with_rate, _check_uniform
from torch import nn
from torch.export.experimental import _export_forward_backward

import rducc

N = 4000


class DropoutLoss(nn.Module):
    """loss = sum(dropout(x) * w): d(loss)/dw is dropout(x) itself."""

    def __init__(self, p: float) -> None:
        super().__init__()
        self.dropout = nn.Dropout(p)
        self.weight = nn.Parameter(torch.randn(N))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return (self.dropout(x) * self.weight).sum()


@pytest.mark.parametrize("opt_level", [0, 2])
def test_dropout_in_a_training_program_keeps_1_minus_p_and_its_gradient_uses_the_same_mask(opt_level: int) -> None:
    torch.manual_seed(0)
    p = 0.4
    model = DropoutLoss(p).train()
    x = torch.ones(N)
    program = rducc.compile(_export_forward_backward(torch.export.export(model, (x,))), opt_level=opt_level)
    loss, grad = program(x)
    values = grad.numpy()
    assert set(np.unique(values)) <= {0.0, np.float32(1 / (1 - p))}, "kept values are scaled by 1 / (1 - p)"
    _check_ones_with_rate((values != 0).astype(np.float32), 1 - p, "dropout keep rate in training")
    torch.testing.assert_close(loss, (grad * model.weight.detach()).sum(), rtol=1e-5, atol=1e-4)
    _, again = program(x)
    assert not torch.equal(grad, again), "every step draws a new mask"


def test_rrelu_in_a_training_program_draws_uniform_slopes_and_differentiates_them() -> None:
    torch.manual_seed(1)
    lower, upper = 0.1, 0.3

    class RReLULoss(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.act = nn.RReLU(lower, upper)
            self.weight = nn.Parameter(torch.ones(N))

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return (self.act(x * self.weight)).sum()

    model = RReLULoss().train()
    x = -torch.rand(N) - 1  # negative: every element draws a slope
    loss, grad = rducc.compile(_export_forward_backward(torch.export.export(model, (x,))), opt_level=0)(x)
    slopes = (grad / x).numpy()  # d(loss)/dw = slope * x
    assert slopes.min() >= lower and slopes.max() <= upper
    _check_uniform((slopes - lower) / (upper - lower), "rrelu slopes in training")
    torch.testing.assert_close(loss, (grad * 1.0).sum(), rtol=1e-5, atol=1e-3)


class Draws(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.generator = torch.Generator().manual_seed(7)

    def forward(self, x: torch.Tensor, ones: torch.Tensor) -> dict[str, torch.Tensor]:
        return {
            "rand_f64": torch.rand(N, dtype=torch.float64, device="cpu"),
            "randn_f16": torch.randn(N, dtype=torch.float16),
            "rand_like_f64": torch.rand_like(x, dtype=torch.float64),
            "randn_like_bf16": torch.randn_like(x, dtype=torch.bfloat16),
            "rand_generator": torch.rand(N, generator=self.generator),
            "randn_generator": torch.randn(40, N // 40, generator=self.generator),
            "native_dropout": torch.ops.aten.native_dropout(ones, 0.25, True),
        }


@pytest.mark.parametrize("opt_level", [0, 2])
def test_random_ops_with_dtype_device_and_generator_arguments(opt_level: int) -> None:
    x, ones = torch.randn(50, 80), torch.ones(50, 80)
    draws = rducc.compile(torch.export.export(Draws(), (x, ones)), opt_level=opt_level)(x, ones)
    expected = Draws()(x, ones)
    for name, value in draws.items():
        if isinstance(value, tuple):
            assert [v.dtype for v in value] == [v.dtype for v in expected[name]], name
        else:
            assert value.dtype == expected[name].dtype and value.shape == expected[name].shape, name
    _check_uniform(draws["rand_f64"].numpy(), "rand float64")
    _check_uniform(draws["rand_like_f64"].numpy(), "rand_like float64")
    _check_uniform(draws["rand_generator"].numpy(), "rand with a generator")
    _check_normal(draws["randn_f16"].float().numpy(), "randn float16")
    _check_normal(draws["randn_like_bf16"].float().numpy(), "randn_like bfloat16")
    _check_normal(draws["randn_generator"].numpy(), "randn with a generator")
    output, mask = draws["native_dropout"]
    assert mask.dtype == torch.bool
    torch.testing.assert_close(output, mask.float() / 0.75), "the output is the kept positions, scaled"
    _check_ones_with_rate(mask.float().numpy(), 0.75, "native_dropout keep rate")


def test_the_checks_fail_on_a_wrong_distribution() -> None:
    """Planted wrong distributions: each check must reject them."""
    rng = np.random.default_rng(0)
    with pytest.raises(AssertionError):
        _check_uniform(rng.uniform(0, 1, N) ** 1.2, "a skewed uniform")
    with pytest.raises(AssertionError):
        _check_normal(rng.normal(0, 1.1, N), "a normal of std 1.1")
    flat = (rng.uniform(0, 1, N) - 0.5) * math.sqrt(12)  # mean 0, variance 1: only the KS test can tell
    with pytest.raises(AssertionError):
        _check_normal(flat, "a uniform with a normal's mean and variance")
    with pytest.raises(AssertionError):
        _check_ones_with_rate((rng.uniform(0, 1, N) < 0.55).astype(np.float32), 0.6, "keep rate 0.55, not 0.6")
    _check_normal(rng.normal(0, 1, N), "a true normal passes")
