"""Integer division by zero and signed zeros, against eager (issue 31, item 7).

Eager raises (RuntimeError: ZeroDivisionError) for an integer `//`,
`div(rounding_mode=...)`, `remainder`, `%` and `fmod` with a zero divisor
anywhere, whatever the integer dtype: a compiled program raises one RduccError
naming the division and the source line, never returns 0. `maximum`, `minimum`,
`amax` and `amin` give the signed zero eager gives (the first of equal values)
and propagate NaN.
"""

from __future__ import annotations

import pytest
import torch

import rducc
from rducc.errors import RduccError


class Binary(torch.nn.Module):
    def __init__(self, name: str) -> None:
        super().__init__()
        self.name = name

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return DIVISIONS[self.name][0](a, b)


DIVISIONS = {
    "floor_divide": (lambda a, b: a // b, "integer floor division"),
    "div_floor": (lambda a, b: torch.div(a, b, rounding_mode="floor"), "integer floor division"),
    "div_trunc": (lambda a, b: torch.div(a, b, rounding_mode="trunc"), "integer division rounded toward zero"),
    "remainder": (lambda a, b: a % b, "integer remainder"),
    "fmod": (torch.fmod, "integer remainder"),
}


CASES = [*[(name, torch.int64) for name in sorted(DIVISIONS)],
         ("floor_divide", torch.uint8), ("div_trunc", torch.int32), ("fmod", torch.int8)]


@pytest.mark.parametrize(("name", "dtype"), CASES, ids=str)
def test_integer_division_by_zero_raises_as_eager(name, dtype):
    a = torch.tensor([[7, 9, 5], [3, 2, 100]], dtype=dtype)
    b = torch.tensor([[2, 3, 4], [1, 7, 9]], dtype=dtype)
    zero = b.clone()
    zero[1, 2] = 0
    model = Binary(name)
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        model(a, zero)
    for level in (0, 2):
        program = rducc.compile(model, (a, b), opt_level=level)
        torch.testing.assert_close(program(a, b), model(a, b), rtol=0, atol=0)
        with pytest.raises(RduccError, match=rf"test_division_and_extremes.py:\d+:\d+: {DIVISIONS[name][1]} .*by zero"):
            program(a, zero)


class ByNumber(torch.nn.Module):
    def forward(self, a: torch.Tensor) -> torch.Tensor:
        return a // 0


def test_integer_division_by_a_zero_number_raises():
    a = torch.tensor([1, 2, 3])
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        ByNumber()(a)
    with pytest.raises(RduccError, match="integer floor division .*by zero"):
        rducc.compile(ByNumber(), (a,), opt_level=2)(a)


class ScatterMean(torch.nn.Module):
    def forward(self, x: torch.Tensor, index: torch.Tensor, source: torch.Tensor) -> torch.Tensor:
        return x.scatter_reduce(0, index, source, "mean", include_self=False)


def test_integer_scatter_mean_leaves_untouched_positions_without_dividing_by_zero():
    """rducc's own division by a count never divides by 0 (positions nothing was
    written to keep their value, as in eager)."""
    x, index, source = torch.arange(6) * 10, torch.tensor([0, 0, 2]), torch.tensor([3, 4, 9])
    for level in (0, 2):
        got = rducc.compile(ScatterMean(), (x, index, source), opt_level=level)(x, index, source)
        torch.testing.assert_close(got, ScatterMean()(x, index, source), rtol=0, atol=0)


# -- signed zeros and NaN ----------------------------------------------------------
#
# torch's CPU kernels pick the first of two equal values (`std::max`): maximum(+0,
# -0) is +0, maximum(-0, +0) is -0, amax([+0, -0]) is +0. Its vectorized loops
# (8 doubles or 16 floats at a time with AVX-512) pick by the instruction's rule
# instead, so eager itself gives the other zero there: the cases stay below 8
# elements, where eager runs the scalar kernel that rducc follows everywhere.

NAN = float("nan")


class Extreme(torch.nn.Module):
    def __init__(self, kind: str) -> None:
        super().__init__()
        self.kind = kind

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> tuple[torch.Tensor, ...]:
        if self.kind == "maximum":
            return torch.maximum(a, b), torch.maximum(b, a)
        if self.kind == "minimum":
            return torch.minimum(a, b), torch.minimum(b, a)
        if self.kind == "amax":
            return a.amax(1), a.amax(0), b.amax(), b.amax(-1, keepdim=True)
        return a.amin(1), a.amin(0), b.amin(), b.amin(-1, keepdim=True)


def _bitwise_equal(got: torch.Tensor, expected: torch.Tensor) -> None:
    """Same values, NaN where eager has NaN, and the same sign of every zero."""
    assert got.dtype == expected.dtype and got.shape == expected.shape
    nan = torch.isnan(expected)
    assert torch.equal(torch.isnan(got), nan), (got, expected)
    assert torch.equal(torch.signbit(got[~nan]), torch.signbit(expected[~nan])), (got, expected)
    torch.testing.assert_close(got, expected, rtol=0, atol=0, equal_nan=True)


SIGNED_A = [[0.0, -0.0, NAN], [-0.0, 1.0, 0.0]]
SIGNED_B = [[-0.0, 0.0, 1.0], [0.0, NAN, 0.0]]


@pytest.mark.parametrize(("kind", "dtype"), [
    *[(kind, torch.float32) for kind in ("maximum", "minimum", "amax", "amin")],
    ("maximum", torch.bfloat16), ("amin", torch.bfloat16), ("minimum", torch.float64), ("amax", torch.float64),
], ids=str)
def test_maximum_minimum_amax_amin_pick_eagers_signed_zero(kind, dtype):
    a, b = torch.tensor(SIGNED_A, dtype=dtype), torch.tensor(SIGNED_B, dtype=dtype)
    if kind in ("amax", "amin"):  # zeros only (and a NaN row), each order of signs
        a = torch.tensor([[0.0, -0.0, -0.0], [-0.0, 0.0, 0.0], [-0.0, NAN, 0.0]], dtype=dtype)
        b = torch.tensor([[-0.0, 0.0, -0.0], [0.0, -0.0, 0.0]], dtype=dtype)
    model = Extreme(kind)
    expected = model(a, b)
    zeros = torch.cat([e[e == 0] for e in expected])
    assert torch.signbit(zeros).any() and not torch.signbit(zeros).all(), "the cases need zeros of both signs"
    for level in (0, 2):
        got = rducc.compile(model, (a, b), opt_level=level)(a, b)
        for g, e in zip(got, expected, strict=True):
            _bitwise_equal(g, e)
