"""Representative ops on every dtype the OpInfo sweep tries (`bench/op_sweep.py
--dtype`): f16, bf16, f64, int64, int32, int8, uint8 and bool tensors, Python
numbers mixed in, and odd shapes (rank 0, size-0 dims, non-contiguous and
broadcast inputs), each at -O0 and -O2 against eager.

One program per dtype holds all of its ops (one export, one compile per level);
outputs are compared one by one with `torch.testing.assert_close`'s defaults
for their dtype (exact for integers and bool).
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
import torch

import rducc

Op = Callable[..., torch.Tensor]

torch.manual_seed(0)
_HALF = (torch.randn(4, 6) * 3).clamp(-8, 8)
_POSITIVE = torch.rand(4, 6) + 0.5
_WIDE = torch.randn(2000)
_FLOOR_PAIRS = (
    torch.tensor([1.0, -1.0, 7.5, -7.5, 0.0, -0.0, 3.0, 5.0, 2.5]),
    torch.tensor([0.1, 0.1, -2.0, 2.0, -3.0, 3.0, 0.0, 0.75, -0.5]),
)

REDUCED_FLOAT_OPS: dict[str, Op] = {
    # a Python number meets an f16/bf16 tensor: rounded to its dtype first
    # (add, sub, rsub, remainder, fmod, pow, comparisons), read in f32 (mul, div)
    "add_number": lambda x, p: x + 1.1,
    "sub_number": lambda x, p: x - 1.1,
    "rsub_number": lambda x, p: 1.1 - x,
    "mul_number": lambda x, p: x * 1.1,
    "div_number": lambda x, p: x / 1.1,
    "floor_div_number": lambda x, p: x // 1.1,
    "remainder_number": lambda x, p: x % 1.1,
    "fmod_number": lambda x, p: torch.fmod(x, 1.1),
    "pow_number": lambda x, p: p**1.1,
    "number_pow": lambda x, p: 1.1**x,
    "eq_number": lambda x, p: x == 1.1,
    "leaky_relu": lambda x, p: torch.nn.functional.leaky_relu(x, 0.3),
    "sum": lambda x, p: (x * 30).sum(),
    "mean": lambda x, p: x.mean(1),
    "var": lambda x, p: x.var(0),
    "softmax": lambda x, p: x.softmax(-1),
    "cumsum": lambda x, p: x.cumsum(1),
    "matmul": lambda x, p: x @ p.T,
    "to_int": lambda x, p: (x * 10).to(torch.int32),
    "argmax": lambda x, p: x.argmax(1),
    "where_number": lambda x, p: torch.where(x > 0, x, 0.7),
}

FLOAT_OPS: dict[str, Op] = {
    "floor_divide": lambda a, b: a // b,
    "floor_mode": lambda a, b: torch.div(a, b, rounding_mode="floor"),
    "trunc_mode": lambda a, b: torch.div(a, b, rounding_mode="trunc"),
    "remainder": lambda a, b: torch.remainder(a, b),
}

INT_OPS: dict[str, Op] = {
    "floor_divide": lambda a, b: a // b,
    "true_divide": lambda a, b: a / b,
    "trunc_mode": lambda a, b: torch.div(a, b, rounding_mode="trunc"),
    "remainder": lambda a, b: a % b,
    "fmod": lambda a, b: torch.fmod(a, b),
    "remainder_number": lambda a, b: a % -3,
    "mul_float": lambda a, b: a * 2.5,
    "add_bool": lambda a, b: a + True,
    "shift_left": lambda a, b: a << b.abs(),
    "shift_right": lambda a, b: a >> b.abs(),
    "pow": lambda a, b: a**2,
    "sum": lambda a, b: a.sum(),
    "prod": lambda a, b: a.prod(1),
    "cumsum": lambda a, b: a.cumsum(0),
    "max_dim": lambda a, b: a.max(1).values,
    "abs": lambda a, b: (-a).abs(),
    "clamp_float": lambda a, b: a.clamp(-2.5, 2.5),
    "sqrt": lambda a, b: a.abs().sqrt(),
    "median": lambda a, b: a.median(),  # decomposes into a NaN-filled integer tensor
    "floor": lambda a, b: torch.floor(a),
    "one_hot": lambda a, b: torch.nn.functional.one_hot(b.abs().long(), 8),  # its class-range asserts are dropped
    # _trilinear's sum keeps the int dtype (torch's sum would promote an int32 one to int64)
    "bilinear": lambda a, b: torch.nn.functional.bilinear(a, a, torch.ones(2, a.shape[-1], a.shape[-1], dtype=a.dtype)),
}

BOOL_OPS: dict[str, Op] = {
    "sum": lambda a, b: a.sum(),
    "add": lambda a, b: a + b,
    "mul": lambda a, b: a * b,
    "and_not": lambda a, b: a & ~b,
    "xor": lambda a, b: a ^ b,
    "any": lambda a, b: a.any(),
    "all": lambda a, b: a.all(1),
    "max": lambda a, b: a.max(),
    "cumsum": lambda a, b: a.cumsum(0),
    "where": lambda a, b: torch.where(a, 1.5, 2),
    "minus_int": lambda a, b: a.int() - b.long(),
}

SHAPE_OPS: dict[str, Op] = {
    "rank0": lambda s, e, t, b: s * 2 + 1,
    "rank0_sum": lambda s, e, t, b: s.sum(0),
    "size0_sum": lambda s, e, t, b: e.sum(0),
    "size0_pointwise": lambda s, e, t, b: (e + 1) * 2,
    "transposed": lambda s, e, t, b: t.exp(),
    "broadcast": lambda s, e, t, b: t + b,
    "rank0_promotes": lambda s, e, t, b: torch.tensor([1, 2, 3]) + s,
    "rank0_gather": lambda s, e, t, b: s.gather(0, torch.tensor([0])),
    "empty_index_gather": lambda s, e, t, b: b.flatten().gather(0, torch.zeros(2, 0, dtype=torch.int64)),
    "empty_matmul": lambda s, e, t, b: e.T @ e,
}


class Ops(torch.nn.Module):
    """Every op of a table on the same inputs, one output each."""

    def __init__(self, ops: dict[str, Op]) -> None:
        super().__init__()
        self.ops = ops

    def forward(self, *inputs: torch.Tensor) -> tuple[torch.Tensor, ...]:
        return tuple(op(*inputs) for op in self.ops.values())


def _ints(dtype: torch.dtype) -> tuple[torch.Tensor, torch.Tensor]:
    a = torch.tensor([[7, -7, 3, 100], [-3, 0, 5, -100]]).to(dtype)  # uint8 wraps
    b = torch.tensor([[2, 2, -2, 3], [2, 3, -3, -7]]).to(dtype)
    return a, b


def _some(ops: dict[str, Op], *names: str) -> dict[str, Op]:
    return {name: ops[name] for name in names}


PROGRAMS: dict[str, tuple[dict[str, Op], tuple[torch.Tensor, ...]]] = {
    "float16": (REDUCED_FLOAT_OPS, (_HALF.half(), _POSITIVE.half())),
    "bfloat16": (REDUCED_FLOAT_OPS, (_HALF.bfloat16(), _POSITIVE.bfloat16())),
    "float32_floor": (FLOAT_OPS, _FLOOR_PAIRS),
    "float16_floor": (FLOAT_OPS, tuple(t.half() for t in _FLOOR_PAIRS)),
    "float64_floor": (FLOAT_OPS, tuple(t.double() for t in _FLOOR_PAIRS)),
    # by a full tensor, f16/bf16 rounding division rounds each step to the half type
    "bfloat16_divide": (FLOAT_OPS, ((_WIDE * 5).bfloat16(), (_WIDE.flip(0) * 0.05).bfloat16())),
    "float16_divide": (FLOAT_OPS, ((_WIDE * 5).half(), (_WIDE.flip(0) * 0.05).half())),
    "int64": (INT_OPS, _ints(torch.int64)),
    "int32": (INT_OPS, _ints(torch.int32)),
    "int8": (_some(INT_OPS, "floor_divide", "remainder", "mul_float", "sum", "median"), _ints(torch.int8)),
    "uint8": (_some(INT_OPS, "floor_divide", "true_divide", "mul_float", "sum", "cumsum"), _ints(torch.uint8)),
    "bool": (BOOL_OPS, (torch.tensor([[True, False, True], [False, False, True]]), torch.tensor([True, True, False]))),
    "shapes": (SHAPE_OPS, (torch.tensor(1.5), torch.zeros(0, 3), torch.randn(4, 3).T, torch.randn(3, 1))),
}


@pytest.fixture(scope="module", params=list(PROGRAMS))
def exported(request: pytest.FixtureRequest) -> tuple[str, dict[str, Op], torch.export.ExportedProgram, tuple]:
    ops, inputs = PROGRAMS[request.param]
    return request.param, ops, torch.export.export(Ops(ops), inputs), inputs


@pytest.mark.parametrize("opt_level", [0, 2])
def test_ops_match_eager(exported: tuple, opt_level: int) -> None:
    name, ops, program, inputs = exported
    expected = Ops(ops)(*inputs)
    actual = rducc.compile(program, opt_level=opt_level)(*inputs)
    wrong = []
    for op, want, got in zip(ops, expected, actual, strict=True):
        try:
            assert got.dtype == want.dtype and got.shape == want.shape, f"{got.dtype}{list(got.shape)}"
            torch.testing.assert_close(got, want, equal_nan=True)
        except AssertionError as error:
            wrong.append(f"{op}: {str(error).strip().splitlines()[0]}")
    assert not wrong, f"{name} -O{opt_level}: " + "; ".join(wrong)
