"""The NumPy kernels and the level-1 executor, checked against PyTorch eager.

Four layers:
- the four small models end to end (import, run with the program's weights,
  compare with eager), in f32 and the MLP in bf16;
- single ATen ops imported and run (a numerical check of the importer);
- every kernel against torch on random data, several dtypes, broadcasting,
  zero-size and rank-0 tensors;
- the executor's interface: argument checks, inline constants, rdu.kernel.
"""

from __future__ import annotations

import copy
import math

import ml_dtypes
import numpy as np
import pytest
import torch
import torch.nn.functional as F
from xdsl.context import Context
from xdsl.dialects import arith, builtin, func
from xdsl.dialects import math as xmath
from xdsl.dialects.builtin import (
    FloatAttr,
    IntegerAttr,
    TensorType,
    bf16,
    f16,
    f32,
    f64,
    i1,
    i8,
    i16,
    i32,
    i64,
)
from xdsl.ir import Block, Region
from xdsl.parser import Parser

from rducc.dialects.rdu import dataflow as rdu
from rducc.dialects.rdu.dataflow import Dataflow
from rducc.dialects.tier import Memory
from rducc.driver import import_exported
from rducc.errors import RduccError
from rducc.runtime import elementwise, kernels, map_body
from rducc.runtime.executor import GraphExecutor, to_numpy, weights_of

BF16 = np.dtype(ml_dtypes.bfloat16)
ELEMENT = {
    np.dtype(np.float64): f64,
    np.dtype(np.float32): f32,
    np.dtype(np.float16): f16,
    BF16: bf16,
    np.dtype(np.int64): i64,
    np.dtype(np.int32): i32,
    np.dtype(np.int16): i16,
    np.dtype(np.int8): i8,
    np.dtype(np.bool_): i1,
}
FLOATS = [np.float64, np.float32, np.float16, BF16]
INTS = [np.int64, np.int32, np.int16, np.int8]


def from_numpy(array: np.ndarray) -> torch.Tensor:
    array = np.ascontiguousarray(array)
    if array.dtype == BF16:
        return torch.from_numpy(array.view(np.int16).copy()).view(torch.bfloat16)
    return torch.from_numpy(array.copy())


def assert_same(actual: np.ndarray, expected: torch.Tensor | np.ndarray) -> None:
    """Bit-for-bit equal (NaN equals NaN), same dtype and shape."""
    expected = to_numpy(expected) if isinstance(expected, torch.Tensor) else expected
    assert actual.dtype == expected.dtype, (actual.dtype, expected.dtype)
    assert actual.shape == expected.shape, (actual.shape, expected.shape)
    if actual.dtype.kind == "f" or actual.dtype == BF16:
        a, e = actual.astype(np.float64), expected.astype(np.float64)
        same = (a == e) | (np.isnan(a) & np.isnan(e))
        assert same.all(), f"{(~same).sum()} of {same.size} differ: {a[~same][:5]} vs {e[~same][:5]}"
    else:
        np.testing.assert_array_equal(actual, expected)


def assert_close(
    actual: np.ndarray,
    expected: torch.Tensor | np.ndarray,
    ulps: float = 4,
    scaled: bool = True,
) -> None:
    """Equal dtype/shape; values within `ulps` units of the dtype's precision,
    relative to each value and (absolute) to the largest expected magnitude
    when `scaled` (for results of sums, where errors follow the operands), else
    to 1."""
    expected = to_numpy(expected) if isinstance(expected, torch.Tensor) else expected
    assert actual.dtype == expected.dtype, (actual.dtype, expected.dtype)
    assert actual.shape == expected.shape, (actual.shape, expected.shape)
    eps = {np.float64: 2.0**-52, np.float32: 2.0**-23, np.float16: 2.0**-10}.get(
        actual.dtype.type, 2.0**-7
    )
    wide = expected.astype(np.float64)
    finite = np.abs(wide[np.isfinite(wide)])
    scale = max(1.0, float(finite.max(initial=0))) if scaled else 1.0
    np.testing.assert_allclose(
        actual.astype(np.float64), wide, rtol=ulps * eps, atol=ulps * eps * scale, equal_nan=True
    )


def random(shape, dtype, rng: np.random.Generator, special: bool = False, low=None, high=None):
    """Random data of any supported dtype; `special` mixes in NaN, +-inf and -0."""
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return rng.random(shape) > 0.5
    if dtype.kind == "i":
        info = np.iinfo(dtype)
        lo = info.min if low is None else low
        hi = info.max if high is None else high
        return rng.integers(lo, hi, size=shape, endpoint=True, dtype=dtype)
    values = rng.standard_normal(shape) * 3
    if low is not None:
        values = rng.uniform(low, high, size=shape)
    if special and values.size >= 4:
        flat = values.reshape(-1)
        picks = rng.choice(flat.size, size=max(4, flat.size // 8), replace=False)
        flat[picks] = rng.choice([np.nan, np.inf, -np.inf, -0.0, 0.0], size=picks.size)
    return values.astype(dtype)


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(1234)


# --------------------------------------------------------------------------
# End to end: the small models
# --------------------------------------------------------------------------


def _eager(model: torch.nn.Module, inputs: tuple) -> list[torch.Tensor]:
    """The model's outputs, flattened (export flattens nested tuples the same way)."""
    with torch.no_grad():
        return torch.utils._pytree.tree_leaves(model(*inputs))


def _run_program(program: torch.export.ExportedProgram, inputs: tuple) -> list[np.ndarray]:
    executor = GraphExecutor(import_exported(program))
    return executor.run([to_numpy(i) for i in inputs], weights_of(program))


@pytest.mark.parametrize("name", ["mlp", "cnn", "tiny_llama", "tiny_gpt2"])
def test_small_model_matches_eager(exported_small, name: str) -> None:
    model, inputs, program = exported_small[name]
    outputs = _run_program(program, inputs)
    expected = _eager(model, inputs)
    assert len(outputs) == len(expected)
    for out, ref in zip(outputs, expected):
        assert out.dtype == np.float32 and out.shape == tuple(ref.shape)
        np.testing.assert_allclose(out, ref.numpy(), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("name", ["mlp", "cnn", "tiny_llama", "tiny_gpt2"])
def test_canonicalized_and_fused_models_match_eager(exported_small, name: str) -> None:
    """Level 2: rdu-canonicalize then rdu-fuse at each level still computes the
    model (and the executor runs rdu.kernel, single- and multi-result)."""
    from rducc.passes.rdu_canonicalize import RduCanonicalize
    from rducc.passes.rdu_fuse import RduFuse

    model, inputs, program = exported_small[name]
    expected = _eager(model, inputs)[0].numpy()
    imported = import_exported(program)
    weights = weights_of(program)
    for level in (0, 1, 2):
        module = imported.clone()
        RduCanonicalize().apply(Context(), module)
        RduFuse(level=level).apply(Context(), module)
        module.verify()
        assert any(isinstance(op, rdu.KernelOp) for op in module.walk())
        out = GraphExecutor(module).run([to_numpy(i) for i in inputs], weights)[0]
        np.testing.assert_allclose(out, expected, rtol=1e-4, atol=1e-5, err_msg=f"level {level}")


def test_wrong_weights_are_detected(exported_small) -> None:
    """The comparison is sensitive: one perturbed weight breaks it."""
    model, inputs, program = exported_small["mlp"]
    weights = weights_of(program)
    weights["fc2.bias"] = weights["fc2.bias"] + np.float32(0.01)
    out = GraphExecutor(import_exported(program)).run([to_numpy(inputs[0])], weights)[0]
    assert not np.allclose(out, _eager(model, inputs)[0].numpy(), rtol=1e-4, atol=1e-5)


def test_prepare_once_run_many(exported_small) -> None:
    model, inputs, program = exported_small["tiny_llama"]
    executor = GraphExecutor(import_exported(program))
    weights = weights_of(program)
    for seed in range(3):
        ids = torch.randint(0, 256, (1, 8), generator=torch.Generator().manual_seed(seed))
        out = executor.run([to_numpy(ids)], weights)[0]
        np.testing.assert_allclose(out, _eager(model, (ids,))[0].numpy(), rtol=1e-4, atol=1e-5)


def _bf16_mlp():
    import models  # examples/models.py, on sys.path through conftest

    model, (x,) = models.mlp()
    model = copy.deepcopy(model).to(torch.bfloat16)
    inputs = (x.to(torch.bfloat16),)
    return model, inputs, models.export(model, inputs)


def test_mlp_bf16_matches_eager() -> None:
    """bf16 end to end: within a few bf16 ulps of eager, and as close to the f32
    result as eager bf16 is (up to a small factor)."""
    model, inputs, program = _bf16_mlp()
    out = _run_program(program, inputs)[0]
    assert out.dtype == BF16
    ref = _eager(model, inputs)[0].float().numpy()
    got = out.astype(np.float32)
    scale = float(np.abs(ref).max())
    np.testing.assert_allclose(got, ref, rtol=2**-6, atol=2**-6 * scale)
    exact = _eager(copy.deepcopy(model).float(), (inputs[0].float(),))[0].numpy()
    ours, eager = np.abs(got - exact).max(), np.abs(ref - exact).max()
    assert ours <= 3 * eager + 1e-6, (ours, eager)


def test_mlp_bf16_bit_exact() -> None:
    model, inputs, program = _bf16_mlp()
    assert_same(_run_program(program, inputs)[0], _eager(model, inputs)[0])


# --------------------------------------------------------------------------
# The importer, one ATen op at a time
# --------------------------------------------------------------------------


class _Fn(torch.nn.Module):
    def __init__(self, function):
        super().__init__()
        self.function = function

    def forward(self, *inputs):
        return self.function(*inputs)


_G = torch.Generator().manual_seed(7)


def _r(*shape, dtype=torch.float32):
    return torch.randn(*shape, generator=_G).to(dtype)


def _ri(*shape, lo=-50, hi=50, dtype=torch.int64):
    return torch.randint(lo, hi, shape, generator=_G).to(dtype)


def _rb(*shape):
    return torch.rand(*shape, generator=_G) > 0.5


_NAN = float("nan")
ATEN_CASES = {
    "add_broadcast_alpha": (lambda a, b: torch.add(a, b, alpha=2.5), (_r(3, 4), _r(4))),
    "add_int_bool": (lambda a, b, c: a + b + (c + c), (_ri(3, 4), _ri(3, 1), _rb(3, 4))),
    "rsub_mul_bool": (lambda a, b: (1 - a) * b, (_r(5), _rb(5))),
    "div_modes_int": (
        lambda a, b: (a / b, torch.div(a, b, rounding_mode="trunc"), torch.div(a, b, rounding_mode="floor")),
        (_ri(40), torch.tensor([1, -1, 3, -3, 7, -7, 2, -2] * 5)),
    ),
    "div_modes_float": (
        lambda a, b: (torch.div(a, b, rounding_mode="trunc"), torch.div(a, b, rounding_mode="floor")),
        (_r(30) * 10, _r(30)),
    ),
    "pow": (lambda a, b: (a**3, a**0.5, a**2.5, torch.pow(a, b), 2**b), (_r(8).abs(), _r(8))),
    "max_min_nan": (
        lambda a, b: (torch.maximum(a, b), torch.minimum(a, b)),
        (torch.tensor([1.0, _NAN, 3, -1]), torch.tensor([_NAN, 2, 1, -2.0])),
    ),
    "clamp": (lambda a, b: (torch.clamp(a, -0.5, 0.7), torch.clamp(b, -5, 7)), (_r(10), _ri(10))),
    "unary_math": (
        lambda a: [f(a) for f in (torch.exp, torch.sin, torch.cos, torch.tanh, torch.erf,
                                  torch.sigmoid, torch.expm1, torch.exp2, torch.atan, torch.sinh,
                                  torch.cosh, torch.asinh)],  # fmt: skip
        (_r(64),),
    ),
    "unary_positive": (
        lambda a: [f(a) for f in (torch.log, torch.log2, torch.log10, torch.log1p, torch.sqrt, torch.rsqrt)],
        (_r(64).abs() + 0.01,),
    ),
    "unary_bounded": (lambda a: (torch.asin(a), torch.acos(a), torch.atanh(a)), (torch.rand(64, generator=_G) * 1.8 - 0.9,)),
    "rounding": (
        lambda a: (torch.round(a), torch.floor(a), torch.ceil(a), torch.trunc(a)),
        (torch.tensor([0.5, 1.5, 2.5, -0.5, -1.5, 0.49, -2.7, 3.2]),),
    ),
    "activations": (
        lambda a: (F.relu(a), F.silu(a), F.gelu(a), F.gelu(a, approximate="tanh")),
        (_r(32),),
    ),
    "compare_nan": (
        lambda a, b: (a < b, a <= b, a > b, a >= b, a == b, a != b),
        (torch.tensor([1.0, _NAN, 2, 2]), torch.tensor([2.0, 1, _NAN, 2])),
    ),
    "compare_mixed_types": (lambda a, b: (a < b, a == 3, b >= 0.5), (_ri(10, dtype=torch.int32), _r(10))),
    "logic_bitwise": (
        lambda a, b, c, d: (torch.logical_xor(a, b) | ~a, (c & d) | (c ^ 7) | ~d, torch.logical_not(c.float())),
        (_rb(8), _rb(8), _ri(8), _ri(8)),
    ),
    "where": (
        lambda c, a, b, i: (torch.where(c, a, b), torch.where(c, a, 0.0), torch.where(c, i, b)),
        (_rb(3, 4), _r(4), _r(3, 1), _ri(3, 4)),
    ),
    "casts": (
        lambda a, n, i: (a.to(torch.int32), a.to(torch.int8), n.to(torch.bool), i.to(torch.float32),
                         n.to(torch.bfloat16), n.to(torch.float16), i.to(torch.bool)),  # fmt: skip
        (_r(20) * 50, torch.cat([_r(20) * 50, torch.tensor([0.0, -0.0, _NAN, float("inf")])]), _ri(20)),
    ),
    "fills": (
        lambda a: a + torch.full((3, 4), 2.0) + torch.ones(4) + torch.zeros_like(a) + torch.full_like(a, 7),
        (_r(3, 4),),
    ),
    "rank0": (lambda a, b, c: (a * b + 1, a * c, (c * b).sum()), (torch.tensor(2.5), torch.tensor(-1.5), _r(3, 2))),
    "zero_size": (lambda a, b: ((a + b).sum(0), torch.cat([a, b[None]], 0)), (_r(0, 3), _r(3))),
    "sum_mean_prod": (
        lambda a, i: (a.sum(1), a.mean((0, 2), keepdim=True), a.sum(), a.prod(1), i.sum(0), i.prod(1)),
        (_r(4, 5, 6), _ri(4, 5, lo=-3, hi=4, dtype=torch.int32)),
    ),
    "amax_any_all": (
        lambda a, b: (a.amax(1), a.amin((0, 1)), b.any(1), b.all(0), b.sum(1), a.any()),
        (_r(3, 4, 5), _rb(4, 4)),
    ),
    "arg_max_min": (
        lambda a: (a.argmax(1), a.argmin(0, keepdim=True), a.argmax(), a.max(1), a.min(0, keepdim=True)),
        (torch.tensor([[1.0, _NAN, -3.0, 2.0], [2.0, 0.0, 5.0, 5.0], [-1.0, -1.0, 0.0, 0.0]]),),
    ),
    "var": (lambda a: (a.var(1), a.var(0, correction=0), a.var(), a.var(1, keepdim=True, correction=2)), (_r(4, 5),)),
    "scans": (
        lambda a, i, b: (a.cumsum(1), a.cumprod(0), i.cumsum(0), b.cumsum(1)),
        (_r(4, 5), _ri(5, 3), _rb(3, 5)),
    ),
    "softmax": (lambda a: (F.softmax(a, -1), F.log_softmax(a, 0)), (_r(3, 7),)),
    "layer_norm": (lambda a, w, b: (F.layer_norm(a, (6,), w, b), F.layer_norm(a, (5, 6))), (_r(4, 5, 6), _r(6), _r(6))),
    "batch_norm": (
        lambda a, m, v, w, b: F.batch_norm(a, m, v, w, b, False, 0.1, 1e-5),
        (_r(2, 3, 4, 4), _r(3), torch.rand(3, generator=_G) + 0.5, _r(3), _r(3)),
    ),
    "conv1d_groups": (
        lambda a, w, b: F.conv1d(a, w, b, stride=2, padding=2, dilation=2, groups=2),
        (_r(2, 4, 17), _r(6, 2, 3), _r(6)),
    ),
    "conv2d": (
        lambda a, w: F.conv2d(a, w, None, stride=(1, 2), padding=(2, 1), dilation=(1, 2)),
        (_r(2, 3, 9, 11), _r(5, 3, 3, 2)),
    ),
    "conv3d_groups": (lambda a, w, b: F.conv3d(a, w, b, padding=1, groups=3), (_r(1, 3, 5, 6, 4), _r(6, 1, 3, 3, 3), _r(6))),
    "max_pool": (
        lambda a, c: (F.max_pool2d(a, 3, 2, 1),
                      F.max_pool2d(a, (2, 3), (2, 2), (1, 0), dilation=(1, 2), ceil_mode=True),
                      F.max_pool3d(c, 2)),  # fmt: skip
        (_r(2, 3, 10, 11), _r(1, 2, 4, 6, 4)),
    ),
    "avg_pool": (
        lambda a: (F.avg_pool2d(a, 3, 2, 1), F.avg_pool2d(a, (2, 3)), F.adaptive_avg_pool2d(a, (2, 3))),
        (_r(2, 3, 8, 9),),
    ),
    "matmuls": (
        lambda a, b, c, bias, d, e: (a @ b, torch.bmm(c, c.transpose(1, 2)),
                                     torch.addmm(bias, a, b, beta=0.5, alpha=2.0), d @ e),  # fmt: skip
        (_r(3, 4), _r(4, 5), _r(2, 3, 4), _r(5), _r(2, 1, 3, 4), _r(3, 4, 5)),
    ),
    "linear_3d": (lambda a, w, b: F.linear(a, w, b), (_r(2, 3, 4), _r(5, 4), _r(5))),
    "layout": (
        lambda a, b: (a.permute(2, 0, 1).reshape(6, -1).t().unsqueeze(0).expand(3, -1, -1).flatten(0, 1),
                      b.transpose(0, 2).squeeze(1).squeeze()),  # fmt: skip
        (_r(2, 4, 3), _r(1, 1, 4)),
    ),
    "slicing": (
        lambda a: (a[1:, ::2], a[:-1, 1::2], a[-3:, -4:-1:2], a[5:], a[:, 2],
                   *a.split(4, 1), *a.split([1, 5], 1)),  # fmt: skip
        (_r(4, 6),),
    ),
    "cat": (lambda a, b, i: (torch.cat([a, b, a], 1), torch.cat([i, a[0]])), (_r(2, 3), _r(2, 1), _ri(3))),
    "embedding_index": (
        lambda w, i, a, j, k: (F.embedding(i, w), a[:, j, k], a[j]),
        (_r(10, 4), _ri(2, 3, lo=0, hi=10), _r(3, 5, 6), _ri(2, 1, lo=-3, hi=3), _ri(4, lo=0, hi=6)),
    ),
    "arange": (
        lambda a, b: (a + torch.arange(5), a + torch.arange(1, 11, 2), a + torch.arange(5, 0, -1),
                      b * torch.arange(0.1, 1.0, 0.3), b + torch.arange(1.0, -0.5, -0.5)),  # fmt: skip
        (_ri(5), _r(3)),
    ),
    "half_and_double": (
        lambda a, b, c, d: ((a * b + a.exp()).sum(0) / 3, c * d + 1, torch.erf(d.double()) * d.double().exp()),
        (_r(4, 5, dtype=torch.float16), _r(5, dtype=torch.float16), _r(4, 5, dtype=torch.bfloat16), _r(5)),
    ),
    "small_ints": (
        lambda a, b, c: (a * b + a, -a, a.abs(), (c * 300).to(torch.int16) // 7),
        (_ri(20, lo=-128, hi=127, dtype=torch.int8), _ri(20, lo=-128, hi=127, dtype=torch.int8),
         _ri(20, dtype=torch.int16)),  # fmt: skip
    ),
    "bool_maximum": (
        lambda a, b: (torch.maximum(a, b), torch.minimum(a, b)),
        (torch.tensor([True, True, False, False]), torch.tensor([True, False, True, False])),
    ),
}


def _case(name):
    case = ATEN_CASES[name]
    if hasattr(case, "marks"):  # already a pytest.param (a named tuple itself)
        return pytest.param(*case.values, marks=case.marks, id=name)
    return pytest.param(*case, id=name)


@pytest.mark.parametrize("function, inputs", [_case(n) for n in ATEN_CASES])
def test_aten_op_matches_eager(function, inputs) -> None:
    """Export one small function, import it, run it, compare with eager: integers
    and booleans exactly, floats to a few ulps (f16/bf16: to one ulp)."""
    model = _Fn(function).eval()
    expected = _eager(model, inputs)
    program = torch.export.export(model, inputs)
    outputs = _run_program(program, inputs)
    assert len(outputs) == len(expected)
    for out, ref in zip(outputs, expected):
        if ref.dtype.is_floating_point:
            assert_close(out, ref, ulps=1 if ref.dtype in (torch.float16, torch.bfloat16) else 16)
        else:
            assert_same(out, ref)


# --------------------------------------------------------------------------
# Kernels: rdu.map bodies
# --------------------------------------------------------------------------


def run_map(build, inputs: list[np.ndarray], shape=None) -> np.ndarray:
    """Compile and run an `rdu.map` whose body is `build(*scalar_args)` -> [ops]
    (the last op's result is yielded); the result shape defaults to the inputs'
    broadcast shape."""
    inputs = [np.asarray(a) for a in inputs]
    in_types = [TensorType(ELEMENT[a.dtype], a.shape) for a in inputs]
    outer = Block(arg_types=in_types)
    body = Block(arg_types=[t.element_type for t in in_types])
    ops = build(*body.args)
    body.add_ops([*ops, rdu.YieldOp(ops[-1].results[0])])
    if shape is None:
        shape = np.broadcast_shapes(*(a.shape for a in inputs))
    op = rdu.MapOp(list(outer.args), TensorType(ops[-1].results[0].type, list(shape)), Region(body))
    op.verify()
    result = map_body.compile_map(op)(*inputs)
    assert result.shape == tuple(shape)
    return result


def binary(op_class, *extra):
    return lambda a, b: [op_class(a, b, *extra)]


FLOAT_BINARY_EXACT = [
    (arith.AddfOp, torch.add),
    (arith.SubfOp, torch.sub),
    (arith.MulfOp, torch.mul),
    (arith.DivfOp, torch.div),
    (arith.MaximumfOp, torch.maximum),
    (arith.MinimumfOp, torch.minimum),
    (arith.MaxnumfOp, torch.fmax),
    (arith.MinnumfOp, torch.fmin),
    (xmath.CopySignOp, torch.copysign),
    (rdu.RemFOp, torch.fmod),
]


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@pytest.mark.parametrize("op_class, reference", FLOAT_BINARY_EXACT, ids=lambda x: getattr(x, "__name__", ""))
def test_float_binary_bit_exact(rng, op_class, reference, dtype) -> None:
    """+-*/ max min: correctly rounded, NaN propagation as torch; broadcasting."""
    a = random((3, 1, 4), dtype, rng, special=True)
    b = random((5, 1), dtype, rng, special=True)
    assert_same(run_map(binary(op_class), [a, b]), reference(from_numpy(a), from_numpy(b)))


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_float_power_and_atan2(rng, dtype) -> None:
    a = random((6, 7), dtype, rng, low=0.1, high=4.0)
    b = random((7,), dtype, rng, low=-3.0, high=3.0)
    ta, tb = from_numpy(a), from_numpy(b)
    assert_close(run_map(binary(xmath.PowFOp), [a, b]), torch.pow(ta, tb), ulps=8)
    assert_close(run_map(binary(xmath.Atan2Op), [a, b]), torch.atan2(ta, tb), ulps=4)


UNARY = [
    (xmath.ExpOp, torch.exp, None),
    (xmath.Exp2Op, torch.exp2, None),
    (xmath.ExpM1Op, torch.expm1, None),
    (xmath.LogOp, torch.log, (0.01, 20)),
    (xmath.Log2Op, torch.log2, (0.01, 20)),
    (xmath.Log10Op, torch.log10, (0.01, 20)),
    (xmath.Log1pOp, torch.log1p, (-0.9, 20)),
    (xmath.SqrtOp, torch.sqrt, (0, 20)),
    (xmath.RsqrtOp, torch.rsqrt, (0.01, 20)),
    (xmath.TanhOp, torch.tanh, None),
    (xmath.ErfOp, torch.erf, None),
    (xmath.SinOp, torch.sin, None),
    (xmath.CosOp, torch.cos, None),
    (xmath.TanOp, torch.tan, (-1.4, 1.4)),
    (xmath.AsinOp, torch.asin, (-1, 1)),
    (xmath.AcosOp, torch.acos, (-1, 1)),
    (xmath.AtanOp, torch.atan, None),
    (xmath.SinhOp, torch.sinh, None),
    (xmath.CoshOp, torch.cosh, None),
    (xmath.AsinhOp, torch.asinh, None),
    (xmath.AcoshOp, torch.acosh, (1, 20)),
    (xmath.AtanhOp, torch.atanh, (-0.99, 0.99)),
    (xmath.AbsFOp, torch.abs, None),
    (arith.NegfOp, torch.neg, None),
    (xmath.FloorOp, torch.floor, None),
    (xmath.CeilOp, torch.ceil, None),
    (xmath.TruncOp, torch.trunc, None),
    (xmath.RoundEvenOp, torch.round, None),
]


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@pytest.mark.parametrize("op_class, reference, domain", UNARY, ids=lambda x: getattr(x, "__name__", ""))
def test_math_unary(rng, op_class, reference, domain, dtype) -> None:
    """Within a few ulps of torch (exact for rounding, abs, neg); NaN in, NaN out."""
    x = random((64,), dtype, rng, low=None if domain is None else domain[0],
               high=None if domain is None else domain[1])  # fmt: skip
    x[0] = np.nan
    if domain is None:
        x[1], x[2] = np.inf, -np.inf
    result = run_map(lambda a: [op_class(a)], [x])
    expected = reference(from_numpy(x))
    if op_class in (xmath.AbsFOp, arith.NegfOp, xmath.FloorOp, xmath.CeilOp, xmath.TruncOp, xmath.RoundEvenOp):
        assert_same(result, expected)
    else:
        assert_close(result, expected, ulps=1 if dtype in (np.float16, BF16) else 8, scaled=False)


def test_erf_accuracy() -> None:
    """Cody's erf in f64 against math.erf: a few ulps everywhere, exact limits."""
    x = np.concatenate([np.linspace(-30, 30, 20001), np.logspace(-300, 1.5, 2000)])
    x = np.concatenate([x, -x, [0.0, -0.0, np.inf, -np.inf]])
    reference = np.array([math.erf(v) for v in x])
    got = elementwise.erf(x)
    relative = np.abs(got - reference) / np.maximum(np.abs(reference), 1e-300)
    assert relative.max() < 2e-15
    assert np.isnan(elementwise.erf(np.array([np.nan]))[0])
    x32 = np.linspace(-5, 5, 10001, dtype=np.float32)
    assert_close(elementwise.erf(x32), torch.erf(torch.from_numpy(x32)), ulps=2)


def test_math_round_half_away() -> None:
    x = np.array([0.5, 1.5, 2.5, -0.5, -2.5, 0.49999997, -0.49999997, 3.7, -3.2, np.nan], np.float32)
    expected = np.array([1, 2, 3, -1, -3, 0, -0.0, 4, -3, np.nan], np.float32)
    assert_same(run_map(lambda a: [xmath.RoundOp(a)], [x]), expected)


def test_fma_and_fpowi(rng) -> None:
    a, b, c = (random((10,), np.float32, rng) for _ in range(3))
    expected = (a.astype(np.float64) * b + c).astype(np.float32)
    assert_same(run_map(lambda x, y, z: [xmath.FmaOp(x, y, z)], [a, b, c]), expected)
    e = np.array([0, 1, 2, 3, -1, -2, 5, 4, 2, 1], np.int32)
    assert_close(run_map(binary(xmath.FPowIOp), [a, e]), torch.pow(torch.from_numpy(a), torch.from_numpy(e).float()))


INT_BINARY = [
    (arith.AddiOp, torch.add),
    (arith.SubiOp, torch.sub),
    (arith.MuliOp, torch.mul),
    (arith.DivSIOp, lambda a, b: torch.div(a, b, rounding_mode="trunc")),
    (arith.FloorDivSIOp, lambda a, b: torch.div(a, b, rounding_mode="floor")),
    (arith.RemSIOp, torch.fmod),
    (arith.MaxSIOp, torch.maximum),
    (arith.MinSIOp, torch.minimum),
    (arith.AndIOp, torch.bitwise_and),
    (arith.OrIOp, torch.bitwise_or),
    (arith.XOrIOp, torch.bitwise_xor),
]


@pytest.mark.parametrize("dtype", INTS, ids=str)
@pytest.mark.parametrize("op_class, reference", INT_BINARY, ids=lambda x: getattr(x, "__name__", ""))
def test_int_binary(rng, op_class, reference, dtype) -> None:
    """Two's-complement wrapping, truncating/flooring division, C remainder."""
    a = random((4, 1, 5), dtype, rng)
    b = random((3, 5), dtype, rng)
    if op_class in (arith.DivSIOp, arith.FloorDivSIOp, arith.RemSIOp):
        # no x / 0, and no INT_MIN / -1 (torch itself traps on it)
        lowest = np.iinfo(dtype).min
        a[a == lowest] = lowest + 1
        b[b == 0] = 3
        b[:, 0] = np.where(b[:, 0] == -1, 5, b[:, 0])
        b[0, 1:3] = [-1, 1]
        a[0, 0, :3] = [lowest, -7, 7]
    expected = reference(from_numpy(a), from_numpy(b))
    assert_same(run_map(binary(op_class), [a, b]), expected)


@pytest.mark.parametrize("dtype", INTS, ids=str)
def test_int_shifts_and_powers(rng, dtype) -> None:
    bits = np.dtype(dtype).itemsize * 8
    a = random((20,), dtype, rng)
    s = random((20,), dtype, rng, low=0, high=bits - 1)
    ta, ts = from_numpy(a), from_numpy(s)
    assert_same(run_map(binary(arith.ShLIOp), [a, s]), torch.bitwise_left_shift(ta, ts))
    assert_same(run_map(binary(arith.ShRSIOp), [a, s]), torch.bitwise_right_shift(ta, ts))
    unsigned = np.dtype(f"uint{bits}")
    assert_same(run_map(binary(arith.ShRUIOp), [a, s]), (a.view(unsigned) >> s.astype(unsigned)).view(dtype))
    base = random((20,), dtype, rng, low=-4, high=4)
    exponent = random((20,), dtype, rng, low=0, high=5)
    assert_same(run_map(binary(xmath.IPowIOp), [base, exponent]), torch.pow(from_numpy(base), from_numpy(exponent)))
    negative = run_map(binary(xmath.IPowIOp), [np.array([1, -1, -1, 2, 0], dtype), np.array([-3, -3, -2, -1, 2], dtype)])
    assert_same(negative, np.array([1, -1, 1, 0, 0], dtype))


def test_unsigned_integer_ops() -> None:
    a = np.array([-1, -128, 7, 100, -6], np.int8)  # as u8: 255 128 7 100 250
    b = np.array([2, 3, -1, 7, 5], np.int8)  # as u8: 2 3 255 7 5
    assert_same(run_map(binary(arith.DivUIOp), [a, b]), np.array([127, 42, 0, 14, 50], np.int8))
    assert_same(run_map(binary(arith.RemUIOp), [a, b]), np.array([1, 2, 7, 2, 0], np.int8))
    assert_same(run_map(binary(arith.CeilDivUIOp), [a, b]), np.array([-128, 43, 1, 15, 50], np.int8))
    assert_same(run_map(binary(arith.CeilDivSIOp), [a, b]), np.array([0, -42, -7, 15, -1], np.int8))
    assert_same(run_map(binary(arith.MaxUIOp), [a, b]), np.array([-1, -128, -1, 100, -6], np.int8))
    assert_same(run_map(binary(arith.MinUIOp), [a, b]), np.array([2, 3, 7, 7, 5], np.int8))
    assert_same(run_map(binary(arith.CmpiOp, "ult"), [a, b]), np.array([0, 0, 1, 0, 0], bool))
    assert_same(run_map(lambda x: [arith.ExtUIOp(x, i32)], [a]), np.array([255, 128, 7, 100, 250], np.int32))
    assert_same(run_map(lambda x: [arith.UIToFPOp(x, f32)], [a]), np.array([255, 128, 7, 100, 250], np.float32))


@pytest.mark.parametrize("op_class, named", [
    (arith.DivSIOp, "integer division rounded toward zero"), (arith.FloorDivSIOp, "integer floor division"),
    (arith.CeilDivSIOp, "integer ceiling division"), (arith.RemSIOp, "integer remainder"),
    (arith.DivUIOp, "integer division rounded toward zero"), (arith.RemUIOp, "integer remainder"),
    (arith.CeilDivUIOp, "integer ceiling division"),
], ids=lambda x: getattr(x, "__name__", ""))
def test_integer_division_by_zero_is_an_error(op_class, named) -> None:
    """A zero divisor anywhere is one error naming the division (torch raises
    ZeroDivisionError for integer //, div rounding, remainder and fmod), never 0."""
    from rducc.errors import RduccError

    a = np.array([7, -7, 5, 1], np.int32)
    with pytest.raises(RduccError, match=f"{named} .*by zero \\(torch raises ZeroDivisionError\\)"):
        run_map(binary(op_class), [a, np.array([2, 3, 0, 1], np.int32)])
    with pytest.raises(RduccError, match="by zero"):
        run_map(binary(op_class), [a, np.zeros((), np.int32)])


def test_scalar_builder_on_ui8_operands() -> None:
    """ScalarBuilder's ops on ui8 values (arith's unsigned forms: cmpi ult, divui,
    remui, maxui, shrui, extui, uitofp; ui8 constants as truncated i32) run as
    torch's uint8 ops do."""
    from rducc.frontend.scalar import build_map_op
    from rducc.frontend.types import element_type_of

    ui8 = element_type_of(torch.uint8)
    a = np.array([0, 1, 7, 128, 200, 255, 99], np.uint8)
    b = np.array([1, 255, 9, 128, 3, 2, 8], np.uint8)
    ta, tb = torch.from_numpy(a), torch.from_numpy(b)
    cases = {
        "lt": (lambda s, x, y: s.compare("lt", x, y), ta < tb),
        "ge": (lambda s, x, y: s.compare("ge", x, y), ta >= tb),
        "maximum": (lambda s, x, y: s.maximum(x, y), torch.maximum(ta, tb)),
        "minimum": (lambda s, x, y: s.minimum(x, y), torch.minimum(ta, tb)),
        "add_wraps": (lambda s, x, y: s.add(x, y), ta + tb),
        "sub_wraps": (lambda s, x, y: s.sub(x, y), ta - tb),
        "mul_wraps": (lambda s, x, y: s.mul(x, y), ta * tb),
        "floor_div": (lambda s, x, y: s.floor_div(x, y), torch.div(ta, tb, rounding_mode="floor")),
        "remainder": (lambda s, x, y: s.remainder(x, y), ta % tb),
        "shift_right": (lambda s, x, y: s.shift("right", x, y), ta >> tb),
        "shift_left": (lambda s, x, y: s.shift("left", x, y), ta << tb),
        "neg": (lambda s, x, y: s.neg(x), -ta),
        "abs": (lambda s, x, y: s.abs(x), ta.abs()),
        "sign": (lambda s, x, y: s.sign(x), ta.sign()),
        "bitwise_not": (lambda s, x, y: s.bitwise_not(x), ~ta),
        "plus_wrapped_constant": (lambda s, x, y: s.add(x, s.constant(300, ui8)), ta + 300),
        "to_f32": (lambda s, x, y: s.cast(x, f32), ta.float()),
        "to_i8": (lambda s, x, y: s.cast(x, i8), ta.to(torch.int8)),
        "to_i64": (lambda s, x, y: s.cast(x, i64), ta.long()),
        "to_bool": (lambda s, x, y: s.cast(x, i1), ta.bool()),
    }
    for name, (formula, expected) in cases.items():
        outer = Block(arg_types=[TensorType(ui8, [7])] * 2)
        result_type = TensorType(element_type_of(expected.dtype), [7])
        op = build_map_op(list(outer.args), result_type, lambda s, xs, f=formula: f(s, *xs), builtin.UnknownLoc())
        op.verify()
        got = map_body.compile_map(op)(a, b)
        assert got.dtype == expected.numpy().dtype and np.array_equal(got, expected.numpy()), name


def test_i1_semantics() -> None:
    """i1 is a 1-bit integer: add/sub are xor, mul is and, signed true is -1."""
    t = np.array([True, True, False, False])
    u = np.array([True, False, True, False])
    assert_same(run_map(binary(arith.AddiOp), [t, u]), t ^ u)
    assert_same(run_map(binary(arith.SubiOp), [t, u]), t ^ u)
    assert_same(run_map(binary(arith.MuliOp), [t, u]), t & u)
    assert_same(run_map(binary(arith.MaxSIOp), [t, u]), t & u)  # -1 < 0
    assert_same(run_map(binary(arith.MaxUIOp), [t, u]), t | u)
    assert_same(run_map(binary(arith.CmpiOp, "slt"), [t, u]), t & ~u)
    assert_same(run_map(binary(arith.CmpiOp, "ult"), [t, u]), ~t & u)
    assert_same(run_map(lambda x: [arith.ExtSIOp(x, i32)], [t]), np.array([-1, -1, 0, 0], np.int32))
    assert_same(run_map(lambda x: [arith.ExtUIOp(x, i64)], [t]), np.array([1, 1, 0, 0], np.int64))
    assert_same(run_map(lambda x: [arith.SIToFPOp(x, f32)], [t]), np.array([-1, -1, 0, 0], np.float32))
    assert_same(run_map(lambda x: [arith.UIToFPOp(x, bf16)], [t]), np.array([1, 1, 0, 0], BF16))
    assert_same(run_map(lambda x: [arith.TruncIOp(x, i1)], [np.array([2, 3, -1, 0], np.int8)]),
                np.array([False, True, True, False]))  # fmt: skip
    floats = np.array([0.5, -1.0, 0.0, -0.7, 3.0], np.float32)  # truncated first: -1 is true
    assert_same(run_map(lambda x: [arith.FPToSIOp(x, i1)], [floats]), np.array([False, True, False, False, True]))


CMPF_REFERENCE = {
    "false": lambda a, b: torch.zeros(torch.broadcast_shapes(a.shape, b.shape), dtype=torch.bool),
    "oeq": torch.eq, "ogt": torch.gt, "oge": torch.ge, "olt": torch.lt, "ole": torch.le,
    "one": lambda a, b: torch.lt(a, b) | torch.gt(a, b),
    "ord": lambda a, b: ~(a.isnan() | b.isnan()),
    "ueq": lambda a, b: torch.eq(a, b) | a.isnan() | b.isnan(),
    "ugt": lambda a, b: torch.gt(a, b) | a.isnan() | b.isnan(),
    "uge": lambda a, b: torch.ge(a, b) | a.isnan() | b.isnan(),
    "ult": lambda a, b: torch.lt(a, b) | a.isnan() | b.isnan(),
    "ule": lambda a, b: torch.le(a, b) | a.isnan() | b.isnan(),
    "une": torch.ne,
    "uno": lambda a, b: a.isnan() | b.isnan(),
    "true": lambda a, b: torch.ones(torch.broadcast_shapes(a.shape, b.shape), dtype=torch.bool),
}  # fmt: skip


@pytest.mark.parametrize("dtype", [np.float32, BF16, np.float64], ids=str)
@pytest.mark.parametrize("predicate", list(CMPF_REFERENCE))
def test_cmpf_predicates(rng, predicate, dtype) -> None:
    values = np.array([np.nan, -np.inf, -1.0, -0.0, 0.0, 1.0, np.inf], dtype)
    a, b = values[:, None], values[None, :]
    expected = CMPF_REFERENCE[predicate](from_numpy(a), from_numpy(b))
    assert_same(run_map(binary(arith.CmpfOp, predicate), [a, b]), expected)


@pytest.mark.parametrize("dtype", INTS, ids=str)
@pytest.mark.parametrize("predicate", ["eq", "ne", "slt", "sle", "sgt", "sge", "ult", "ule", "ugt", "uge"])
def test_cmpi_predicates(rng, predicate, dtype) -> None:
    a = random((6, 1), dtype, rng)
    b = np.concatenate([a[:2, 0], random((4,), dtype, rng)])
    ua, ub = a.view(f"uint{np.dtype(dtype).itemsize * 8}"), b.view(f"uint{np.dtype(dtype).itemsize * 8}")
    x, y = (ua, ub) if predicate[0] == "u" else (a, b)
    name = predicate if predicate in ("eq", "ne") else predicate[1:]
    expected = {"eq": np.equal, "ne": np.not_equal, "lt": np.less, "le": np.less_equal,
                "gt": np.greater, "ge": np.greater_equal}[name](x, y)  # fmt: skip
    assert_same(run_map(binary(arith.CmpiOp, predicate), [a, b]), expected)


CASTS = [
    (np.float32, BF16, arith.TruncFOp),
    (np.float32, np.float16, arith.TruncFOp),
    (np.float64, np.float32, arith.TruncFOp),
    (BF16, np.float32, arith.ExtFOp),
    (np.float16, np.float64, arith.ExtFOp),
    (np.float32, np.int32, arith.FPToSIOp),
    (BF16, np.int64, arith.FPToSIOp),
    (np.float64, np.int8, arith.FPToSIOp),
    (np.int64, np.float32, arith.SIToFPOp),
    (np.int32, BF16, arith.SIToFPOp),
    (np.int8, np.float16, arith.SIToFPOp),
    (np.int8, np.int64, arith.ExtSIOp),
    (np.int64, np.int16, arith.TruncIOp),
    (np.int32, np.int8, arith.TruncIOp),
]


@pytest.mark.parametrize("source, target, op_class", CASTS, ids=lambda x: getattr(x, "__name__", str(x)))
def test_casts_match_torch(rng, source, target, op_class) -> None:
    """Conversions as torch's .to(): round to nearest even, truncate toward zero, wrap."""
    source_is_float = np.dtype(source).kind == "f" or source == BF16
    if not source_is_float:
        x = random((200,), source, rng)
    elif np.dtype(target).kind == "i":  # stay in the target's range (else undefined)
        limit = min(float(np.iinfo(target).max), 1e4 if source == BF16 else 1e12)
        x = random((200,), source, rng, low=-limit, high=limit)
    else:
        x = (random((200,), np.float64, rng) * 20).astype(source)
    if source_is_float:
        x[:4] = np.array([0.5, -0.5, 1.9999, -2.5]).astype(source)
        if np.dtype(target).kind != "i":
            x[4:7] = np.array([np.nan, np.inf, -0.0]).astype(source)
    if op_class is arith.SIToFPOp and source == np.int64:
        x[:3] = [2**24 + 1, -(2**53) - 1, 2**62 + 12345]
    expected = from_numpy(x).to(from_numpy(np.zeros(0, target)).dtype)
    assert_same(run_map(lambda a: [op_class(a, ELEMENT[np.dtype(target)])], [x]), expected)


def test_bitcast_select_and_constants() -> None:
    x = np.array([1.0, -2.0, np.inf], np.float32)
    assert_same(run_map(lambda a: [arith.BitcastOp(a, i32)], [x]), x.view(np.int32))
    condition = np.array([[True], [False]])
    a, b = np.array([1, 2, 3], np.int16), np.array([[7], [8]], np.int16)
    assert_same(run_map(lambda c, x, y: [arith.SelectOp(c, x, y)], [condition, a, b]),
                np.where(condition, a, b))  # fmt: skip
    constants = [
        (FloatAttr(0.1, bf16), np.array(0.1, BF16)),
        (FloatAttr(1 / 3, f16), np.array(1 / 3, np.float16)),
        (FloatAttr(float("-inf"), f32), np.array(-np.inf, np.float32)),
        (IntegerAttr(255, i8), np.array(-1, np.int8)),
        (IntegerAttr(-1, i1), np.array(True)),
        (IntegerAttr(2**40, i64), np.array(2**40, np.int64)),
    ]
    for attr, expected in constants:
        assert_same(run_map(lambda: [arith.ConstantOp(attr)], [], shape=(2, 3)), np.broadcast_to(expected, (2, 3)))


def test_map_rank0_zero_size_and_fill() -> None:
    add = binary(arith.AddfOp)
    assert_same(run_map(add, [np.float32(1.5), np.float32(2.0)]), np.array(3.5, np.float32))
    assert_same(run_map(add, [np.zeros((0, 3), np.float32), np.ones(3, np.float32)]), np.zeros((0, 3), np.float32))
    result = run_map(add, [np.float32(1.0), np.ones((2, 1), np.float32)], shape=(4, 2, 3))
    assert_same(result, np.full((4, 2, 3), 2.0, np.float32))


def test_importer_style_bf16_body_rounds_once() -> None:
    """extf -> f32 math -> truncf: the bf16 pattern the importer emits, vs torch."""
    rng = np.random.default_rng(5)
    a, b = random((64,), BF16, rng), random((64,), BF16, rng)

    def body(x, y):
        ops = [arith.ExtFOp(x, f32), arith.ExtFOp(y, f32)]
        ops.append(arith.MulfOp(ops[0], ops[1]))
        ops.append(xmath.ExpOp(ops[0]))
        ops.append(arith.AddfOp(ops[2], ops[3]))
        ops.append(arith.TruncFOp(ops[4], bf16))
        return ops

    ta, tb = from_numpy(a).float(), from_numpy(b).float()
    assert_close(run_map(body, [a, b]), (ta * tb + ta.exp()).bfloat16(), ulps=1)


def test_unsupported_body_op_is_reported() -> None:
    with pytest.raises(RduccError, match="math.ctpop"):
        run_map(lambda a: [xmath.CtPopOp(a)], [np.array([3], np.int32)])


# --------------------------------------------------------------------------
# Kernels: compute
# --------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.float16, BF16, np.int64, np.int32], ids=str)
@pytest.mark.parametrize("shapes", [((4, 5), (5, 3)), ((2, 1, 3, 4), (5, 4, 2)), ((3, 0), (0, 2)), ((0, 2, 3), (3, 4))])
def test_matmul(rng, dtype, shapes) -> None:
    small = np.dtype(dtype).kind == "i"
    a = random(shapes[0], dtype, rng, low=-9 if small else None, high=9 if small else None)
    b = random(shapes[1], dtype, rng, low=-9 if small else None, high=9 if small else None)
    result = kernels.matmul(a, b)
    expected = torch.matmul(from_numpy(a), from_numpy(b))
    if small:
        assert_same(result, expected)
    else:
        assert_close(result, expected, ulps=1 if dtype in (np.float16, BF16) else 64)


def test_matmul_transpose_rhs(rng) -> None:
    a, w = random((2, 3, 4), np.float32, rng), random((5, 4), np.float32, rng)
    assert_close(kernels.matmul(a, w, transpose_rhs=True), F.linear(from_numpy(a), from_numpy(w)), ulps=16)


def test_matmul_wider_result(rng) -> None:
    """bf16 x bf16 -> f32: the unrounded f32 product (what an fused epilogue wants)."""
    a, b = random((4, 8), BF16, rng), random((8, 3), BF16, rng)
    expected = torch.matmul(from_numpy(a).float(), from_numpy(b).float())
    assert_close(kernels.matmul(a, b, np.float32), expected)


REDUCE_TORCH = {
    "sum": lambda t, d, k: torch.sum(t, d, keepdim=k, dtype=t.dtype),
    "prod": lambda t, d, k: torch.prod(t, d[0], keepdim=k, dtype=t.dtype),
    "max": lambda t, d, k: torch.amax(t, d, keepdim=k),
    "min": lambda t, d, k: torch.amin(t, d, keepdim=k),
    "argmax": lambda t, d, k: torch.argmax(t, d[0], keepdim=k),
    "argmin": lambda t, d, k: torch.argmin(t, d[0], keepdim=k),
    "any": lambda t, d, k: torch.any(t, d, keepdim=k),
    "all": lambda t, d, k: torch.all(t, d, keepdim=k),
}


REDUCE_DTYPES = [np.float64, np.float32, np.float16, BF16, np.int64, np.int32, np.int8]
REDUCE_CASES = [
    pytest.param(kind, dtype, dims, id=f"{kind}-{np.dtype(dtype).name}-{''.join(map(str, dims))}")
    for kind in REDUCE_TORCH
    for dtype in ([np.bool_] if kind in ("any", "all") else REDUCE_DTYPES)
    for dims in ([(0,), (1,), (2,)] if kind in ("prod", "argmax", "argmin") else [(0,), (2,), (0, 2), (0, 1, 2)])
]


@pytest.mark.parametrize("keepdim", [False, True])
@pytest.mark.parametrize("kind, dtype, dims", REDUCE_CASES)
def test_reduce(rng, kind, dtype, dims, keepdim) -> None:
    """Every reduction vs torch: floats to an ulp (sums order differently), ints
    exactly (wrapping in their own type), NaN propagation of max/min/argmax."""
    floats = np.dtype(dtype).kind == "f" or dtype == BF16
    if kind == "prod" and floats:
        x = random((4, 5, 6), dtype, rng, low=0.5, high=1.5)  # no overflow to inf
    else:
        x = random((4, 5, 6), dtype, rng, special=kind in ("max", "min", "argmax", "argmin"))
    result = kernels.reduce(x, kind, dims, keepdim)
    expected = REDUCE_TORCH[kind](from_numpy(x), list(dims), keepdim)
    if kind in ("sum", "prod") and result.dtype.kind != "i":
        assert_close(result, expected, ulps=2 if dtype in (np.float16, BF16) else 64)
    else:
        assert_same(result, expected)


def test_reduce_zero_size_and_rank0() -> None:
    empty = np.zeros((3, 0), np.float32)
    assert_same(kernels.reduce(empty, "sum", [1]), np.zeros(3, np.float32))
    assert_same(kernels.reduce(empty, "prod", [1], True), np.ones((3, 1), np.float32))
    assert_same(kernels.reduce(empty, "max", [1]), np.full(3, -np.inf, np.float32))
    assert_same(kernels.reduce(np.zeros((2, 0), bool), "all", [1]), np.ones(2, bool))
    assert_same(kernels.reduce(np.zeros((2, 0), np.int32), "min", [1]), np.full(2, np.iinfo(np.int32).max, np.int32))
    scalar = np.array(2.5, BF16)
    for kind in ("sum", "prod", "max", "min"):
        assert_same(kernels.reduce(scalar, kind, [0]), scalar)
    assert_same(kernels.reduce(scalar, "argmax", [0]), np.array(0, np.int64))


def test_bf16_sum_accumulates_in_f32() -> None:
    """1 + 2^-9 * 512 in bf16: a bf16 accumulator would stay at 1."""
    x = np.concatenate([[1.0], np.full(512, 2.0**-9)]).astype(BF16)
    assert_same(kernels.reduce(x, "sum", [0]), np.array(2.0, BF16))
    assert_same(kernels.reduce(x, "sum", [0]), torch.sum(from_numpy(x)))


@pytest.mark.parametrize("dtype", [np.float64, np.float32, BF16, np.float16, np.int64, np.int32], ids=str)
@pytest.mark.parametrize("kind", ["sum", "prod"])
@pytest.mark.parametrize("dim", [0, 1, 2])
def test_scan(rng, kind, dtype, dim) -> None:
    ints = np.dtype(dtype).kind == "i"
    x = random((3, 4, 5), dtype, rng, low=-3 if ints else 0.6, high=3 if ints else 1.4)
    t = from_numpy(x)
    expected = (torch.cumsum(t, dim) if kind == "sum" else torch.cumprod(t, dim)).to(t.dtype)
    result = kernels.scan(x, kind, dim)
    if ints:
        assert_same(result, expected)
    else:
        assert_close(result, expected, ulps=1 if dtype in (BF16, np.float16) else 8)


def test_scan_rank0_and_bool() -> None:
    assert_same(kernels.scan(np.array(3, np.int32), "sum", 0), np.array(3, np.int32))
    assert_same(kernels.scan(np.zeros((0, 3), np.float32), "prod", 0), np.zeros((0, 3), np.float32))


CONV_CASES = [
    # (input shape, weight shape, stride, padding, dilation, groups)
    ((2, 4, 17), (6, 2, 3), (2,), (2,), (2,), 2),
    ((1, 3, 8), (5, 3, 1), (1,), (0,), (1,), 1),
    ((2, 3, 9, 11), (5, 3, 3, 2), (1, 2), (2, 1), (1, 2), 1),
    ((2, 4, 6, 6), (4, 1, 3, 3), (1, 1), (1, 1), (1, 1), 4),
    ((1, 3, 5, 6, 4), (6, 1, 3, 3, 3), (1, 2, 1), (1, 1, 1), (1, 1, 2), 3),
    ((0, 2, 5, 5), (3, 2, 2, 2), (1, 1), (0, 0), (1, 1), 1),
]
CONV_TORCH = {3: F.conv1d, 4: F.conv2d, 5: F.conv3d}


@pytest.mark.parametrize("dtype", [np.float64, np.float32, BF16], ids=str)
@pytest.mark.parametrize("case", CONV_CASES, ids=lambda c: "x".join(map(str, c[0])) + f"-g{c[5]}")
def test_conv(rng, case, dtype) -> None:
    x_shape, w_shape, stride, padding, dilation, groups = case
    x, w = random(x_shape, dtype, rng), random(w_shape, dtype, rng)
    result = kernels.conv(x, w, stride, padding, dilation, groups)
    expected = CONV_TORCH[len(x_shape)](from_numpy(x), from_numpy(w), None, stride, padding, dilation, groups)
    assert_close(result, expected, ulps=1 if dtype == BF16 else 64)


POOL_CASES = [
    # (input shape, window, stride, padding, dilation, ceil_mode)
    ((2, 3, 9), (3,), (2,), (1,), (1,), False),
    ((2, 3, 10, 11), (3, 3), (2, 2), (1, 1), (1, 1), False),
    ((2, 3, 10, 11), (2, 3), (2, 2), (1, 0), (1, 2), True),
    ((3, 8, 9), (2, 3), (2, 3), (0, 1), (1, 1), False),  # no batch dim
    ((1, 2, 4, 6, 5), (2, 2, 2), (2, 2, 1), (0, 1, 1), (1, 1, 1), True),
    ((2, 3, 9, 8), (2, 3), (2, 2), (0, 1), (1, 1), True),  # ceil adds a partial window
    ((1, 2, 7), (3,), (3,), (1,), (1,), True),
]
MAX_POOL = {1: F.max_pool1d, 2: F.max_pool2d, 3: F.max_pool3d}
AVG_POOL = {1: F.avg_pool1d, 2: F.avg_pool2d, 3: F.avg_pool3d}


@pytest.mark.parametrize("dtype", [np.float32, np.float64, BF16], ids=str)
@pytest.mark.parametrize("case", POOL_CASES, ids=lambda c: "x".join(map(str, c[0])) + ("-ceil" if c[5] else ""))
def test_max_pool(rng, case, dtype) -> None:
    shape, window, stride, padding, dilation, ceil_mode = case
    x = random(shape, dtype, rng, special=True)
    result = kernels.pool(x, "max", window, stride, padding, dilation, ceil_mode)
    expected = MAX_POOL[len(window)](from_numpy(x), window, stride, padding, dilation, ceil_mode)
    assert_same(result, expected)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, BF16], ids=str)
@pytest.mark.parametrize("case", [c for c in POOL_CASES if c[4] == (1,) * len(c[1]) and not c[5]],
                         ids=lambda c: "x".join(map(str, c[0])))  # fmt: skip
def test_avg_pool(rng, case, dtype) -> None:
    """Divides by the full window, padding counted (count_include_pad=True)."""
    shape, window, stride, padding, _, _ = case
    x = random(shape, dtype, rng)
    result = kernels.pool(x, "avg", window, stride, padding, (1,) * len(window))
    expected = AVG_POOL[len(window)](from_numpy(x), window, stride, padding, count_include_pad=True)
    assert_close(result, expected, ulps=1 if dtype == BF16 else 8)


def test_max_pool_ints() -> None:
    x = np.arange(16, dtype=np.int32).reshape(1, 4, 4) - 20
    expected = np.array([[[-15, -13], [-7, -5]]], np.int32)
    assert_same(kernels.pool(x, "max", (2, 2), (2, 2), (0, 0), (1, 1)), expected)
    padded = kernels.pool(x, "max", (2, 2), (2, 2), (1, 1), (1, 1))
    assert_same(padded, np.array([[[-20, -18, -17], [-12, -10, -9], [-8, -6, -5]]], np.int32))


# --------------------------------------------------------------------------
# Kernels: layout and data movement
# --------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [np.float32, BF16, np.int8, np.bool_], ids=str)
def test_layout_kernels(rng, dtype) -> None:
    x = random((2, 3, 4), dtype, rng)
    t = from_numpy(x)
    assert_same(kernels.reshape(x, (4, 6)), t.reshape(4, 6))
    assert_same(kernels.reshape(np.zeros((0, 3), dtype), (3, 0)), np.zeros((3, 0), dtype))
    assert_same(kernels.transpose(x, (2, 0, 1)), t.permute(2, 0, 1))
    assert_same(kernels.broadcast(x[:, :1], (5, 2, 3, 4)), t[:, :1].expand(5, 2, 3, 4))
    assert_same(kernels.broadcast(np.array(7, dtype), (2, 2)), np.full((2, 2), 7, dtype))
    assert_same(kernels.slice_(x, (1, 0, 1), (1, 2, 2), (1, 2, 2)), t[1:, ::2, 1::2])
    assert_same(kernels.slice_(x, (0, 3, 0), (1, 1, 1), (2, 0, 4)), t[:, 3:])
    y = random((2, 1, 4), dtype, rng)
    assert_same(kernels.concat([x, y, x[:, :0]], 1), torch.cat([t, from_numpy(y)], 1))


@pytest.mark.parametrize("index_dtype", [np.int64, np.int32, np.int8], ids=str)
def test_gather(rng, index_dtype) -> None:
    source = random((3, 5, 6, 2), np.float32, rng)
    t = from_numpy(source)
    i = random((2, 1), index_dtype, rng, low=-5, high=4)  # negative: from the end
    j = random((4,), index_dtype, rng, low=0, high=5)
    k = random((3, 2), index_dtype, rng, low=-3, high=2)
    ti, tj, tk = (from_numpy(v).long() for v in (i, j, k))
    assert_same(kernels.gather(source, [i, j], 1, wraps=True), t[:, ti, tj])
    assert_same(kernels.gather(source, [k], 0, wraps=True), t[tk])
    table = random((10, 4), BF16, rng)
    ids = random((2, 3), index_dtype, rng, low=0, high=9)
    assert_same(kernels.gather(table, [ids], 0), F.embedding(from_numpy(ids).long(), from_numpy(table)))
    assert_same(kernels.gather(source, [np.zeros((0, 2), index_dtype)], 2), t[:, :, torch.zeros((0, 2), dtype=torch.long)])
    assert_same(kernels.gather(source, [np.array(1, index_dtype)], 3), t[:, :, :, 1])
    with pytest.raises(RduccError, match="out of bounds"):
        kernels.gather(table, [np.array([3, 10])], 0)
    with pytest.raises(RduccError, match=r"index -1 is out of bounds for dim 1 of size 5 \(indices must be in \[0, 5\)\)"):
        kernels.gather(source, [i.clip(-1, -1), j], 1)  # negative without wraps: as embedding, index_select
    with pytest.raises(RduccError, match=r"index -11 is out of bounds .* \[-10, 10\)"):
        kernels.gather(table, [np.array([0, -11])], 0, wraps=True)


@pytest.mark.parametrize(
    "start, end, step, dtype",
    [(0, 8, 1, torch.int64), (5, -7, -3, torch.int32), (0.1, 1.0, 0.3, torch.float32),
     (1.0, -2.0, -0.25, torch.float64), (0.0, 3.0, 0.1, torch.bfloat16)],  # fmt: skip
)
def test_iota(start, end, step, dtype) -> None:
    expected = torch.arange(start, end, step, dtype=dtype)
    result = kernels.iota(len(expected), start, step, to_numpy(expected).dtype)
    assert_same(result, expected)


# --------------------------------------------------------------------------
# The executor's interface
# --------------------------------------------------------------------------


def parse(text: str) -> builtin.ModuleOp:
    ctx = Context()
    for dialect in (builtin.Builtin, func.Func, arith.Arith, xmath.Math, Dataflow, Memory):
        ctx.load_dialect(dialect)
    module = Parser(ctx, text).parse_module()
    module.verify()
    return module


AFFINE = """
builtin.module {
  tier.global @w : tensor<3xf32> {kind = "parameter"}
  tier.global @c : tensor<3xi32> = dense<[1, -2, 3]> : tensor<3xi32> {kind = "constant"}
  func.func @forward(%x: tensor<2x3xf32> {rdu.input = "x"}, %w: tensor<3xf32> {rdu.global = @w},
                     %c: tensor<3xi32> {rdu.global = @c}) -> tensor<2x3xf32> {
    %y = rdu.map %x, %w, %c : (tensor<2x3xf32>, tensor<3xf32>, tensor<3xi32>) -> tensor<2x3xf32> {
    ^bb0(%a: f32, %b: f32, %k: i32):
      %f = arith.sitofp %k : i32 to f32
      %m = arith.mulf %a, %b : f32
      %s = arith.addf %m, %f : f32
      rdu.yield %s : f32
    }
    func.return %y : tensor<2x3xf32>
  }
}
"""


def test_inline_constant_and_weights() -> None:
    executor = GraphExecutor(parse(AFFINE))
    assert executor.weight_names == ["w", "c"]
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    w = np.array([1.0, 2.0, 3.0], np.float32)
    out = executor.run([x], {"w": w})[0]
    assert_same(out, x * w + np.array([1, -2, 3], np.float32))
    override = executor.run([x], {"w": w, "c": np.zeros(3, np.int32)})[0]
    assert_same(override, x * w)


@pytest.mark.parametrize(
    "inputs, weights, message",
    [
        ([], {"w": np.ones(3, np.float32)}, r"takes 1 input \(x: float32\[2, 3\]\), got 0"),
        ([np.ones((3, 2), np.float32)], {"w": np.ones(3, np.float32)}, r"input #0 \('x'\) has shape \[3, 2\], expected \[2, 3\]"),
        ([np.ones((2, 3), np.float64)], {"w": np.ones(3, np.float32)}, r"dtype float64, expected float32"),
        ([torch.ones(2, 3)], {"w": np.ones(3, np.float32)}, r"is a Tensor, expected a numpy array"),
        ([np.ones((2, 3), np.float32)], {}, r"missing weight: w"),
        ([np.ones((2, 3), np.float32)], {"w": np.ones(3, BF16)}, r"weight 'w' has dtype bfloat16, expected float32"),
    ],
)
def test_argument_errors(inputs, weights, message) -> None:
    executor = GraphExecutor(parse(AFFINE))
    with pytest.raises(RduccError, match=message):
        executor.run(inputs, weights)


KERNEL = """
builtin.module {
  func.func @forward(%x: tensor<4x8xbf16> {rdu.input = "x"}, %i: tensor<3xi64> {rdu.input = "i"})
      -> (tensor<4xf32>, tensor<3x8xbf16>, tensor<2xi64>) {
    %cst = arith.constant dense<[1.5, -2.0]> : tensor<2xf32>
    %r, %g = rdu.kernel "k0" (%x, %i) : (tensor<4x8xbf16>, tensor<3xi64>) -> (tensor<4xf32>, tensor<3x8xbf16>) {
    ^bb0(%a: tensor<4x8xbf16>, %idx: tensor<3xi64>):
      %e = rdu.map %a : (tensor<4x8xbf16>) -> tensor<4x8xf32> {
      ^bb1(%v: bf16):
        %w = arith.extf %v : bf16 to f32
        %ex = math.exp %w : f32
        rdu.yield %ex : f32
      }
      %s = rdu.reduce sum %e dims [1] : tensor<4x8xf32> -> tensor<4xf32>
      %t = rdu.gather %a[%idx] dim 0 : tensor<4x8xbf16>, tensor<3xi64> -> tensor<3x8xbf16>
      rdu.yield %s, %t : tensor<4xf32>, tensor<3x8xbf16>
    }
    %n = rdu.kernel "k1" (%cst) : (tensor<2xf32>) -> tensor<2xi64> {
    ^bb2(%c: tensor<2xf32>):
      %m = rdu.map %c : (tensor<2xf32>) -> tensor<2xi64> {
      ^bb3(%q: f32):
        %z = arith.fptosi %q : f32 to i64
        rdu.yield %z : i64
      }
      rdu.yield %m : tensor<2xi64>
    }
    func.return %r, %g, %n : tensor<4xf32>, tensor<3x8xbf16>, tensor<2xi64>
  }
}
"""


def test_rdu_kernel_and_tensor_constant(rng) -> None:
    executor = GraphExecutor(parse(KERNEL))
    x = random((4, 8), BF16, rng)
    i = np.array([3, 0, 3])
    total, rows, ints = executor.run([x, i])
    assert_close(total, torch.exp(from_numpy(x).float()).sum(1), ulps=8)
    assert_same(rows, x[i])
    assert_same(ints, np.array([1, -2], np.int64))
    with pytest.raises(RduccError, match=r"'rdu.gather'.*out of bounds"):
        executor.run([x, np.array([0, 4, 1])])


def test_outputs_do_not_alias_inputs() -> None:
    module = parse(
        """
        builtin.module {
          func.func @forward(%x: tensor<3xf32> {rdu.input = "x"}) -> (tensor<3xf32>, tensor<1x3xf32>) {
            %r = rdu.reshape %x : tensor<3xf32> -> tensor<1x3xf32>
            func.return %x, %r : tensor<3xf32>, tensor<1x3xf32>
          }
        }
        """
    )
    x = np.ones(3, np.float32)
    same, reshaped = GraphExecutor(module).run([x])
    same[0] = 5.0
    reshaped[0, 1] = 7.0
    assert_same(x, np.ones(3, np.float32))


def test_unsupported_op_is_reported_at_prepare() -> None:
    module = parse(
        """
        builtin.module {
          func.func @forward(%x: tensor<3xf32> {rdu.input = "x"}) -> tensor<3xf32> {
            func.return %x : tensor<3xf32>
          }
        }
        """
    )
    GraphExecutor(module)
    forward = next(op for op in module.ops if isinstance(op, func.FuncOp))
    block = forward.body.block
    from xdsl.dialects.test import TestOp

    bad = TestOp([block.args[0]], [block.args[0].type])
    block.insert_op_before(bad, block.first_op)
    with pytest.raises(RduccError, match="cannot run 'test.op'"):
        GraphExecutor(module)
    bad.detach()
    bad.erase()
    missing = func.CallOp("helper", [block.args[0]], [block.args[0].type])  # calls are run; this one has no callee
    block.insert_op_before(missing, block.first_op)
    with pytest.raises(RduccError, match="the module has no 'func.func @helper'"):
        GraphExecutor(module)


def test_describe_op_names_its_location() -> None:
    """An op of a model exported without source lines carries the FX node's name."""
    from xdsl.dialects.builtin import FileLineColLoc, IntAttr, NameLoc, NoneAttr, StringAttr

    from rducc.runtime.executor import describe_op

    op = arith.ConstantOp(IntegerAttr(1, i64))
    assert describe_op(op) == "'arith.constant'"
    op.location = NameLoc(StringAttr("add_1"), NoneAttr())
    assert describe_op(op) == "'arith.constant' at add_1"
    op.location = FileLineColLoc(StringAttr("model.py"), IntAttr(3), IntAttr(5))
    assert describe_op(op) == "'arith.constant' at model.py:3:5"
