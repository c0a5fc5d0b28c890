"""Kernels that write straight into their SRAM arena view, and the kernel paths
issue 19's speed work added (pooling on torch's kernels, pointwise convolution
as one GEMM), each against eager.

A body op of the placed-program interpreter computes into its arena view
(`registry.into_of`): an `rdu.map` body's ufuncs of the map's shape write
there (`out=`) and its dead temporaries are reused, matmul and pointwise
convolution hand the view to BLAS; a convolution PyTorch's kernel runs is
that kernel's own array where nothing reads its arena bytes. Each path is
checked against torch here, and a compiled model run twice (the second run
reuses the arena) against eager.
"""

from __future__ import annotations

import warnings

import ml_dtypes
import numpy as np
import pytest
import torch
import torch.nn.functional as F
from test_conv_batched import _calls
from xdsl.dialects import arith
from xdsl.dialects import math as xmath
from xdsl.dialects.builtin import FloatAttr, TensorType, f32
from xdsl.ir import Block, Region

import rducc
from rducc.dialects.rdu import dataflow as rdu
from rducc.dialects.tier import AllocOp, ComputeOp, DeallocOp, Tier
from rducc.passes import rdu_sram_alloc
from rducc.runtime import elementwise, epilogues, interpreter, kernels, map_body

BF16 = np.dtype(ml_dtypes.bfloat16)


def _chain_map(shapes: list[tuple[int, ...]], result: tuple[int, ...]) -> rdu.MapOp:
    """`max(exp((a - b) * c) + 0.5, a)` on f32 inputs of `shapes`: a chain of ufuncs."""
    outer = Block(arg_types=[TensorType(f32, list(s)) for s in shapes])
    body = Block(arg_types=[f32] * len(shapes))
    a, b, c = body.args
    half = arith.ConstantOp(FloatAttr(0.5, f32))
    sub = arith.SubfOp(a, b)
    mul = arith.MulfOp(sub.result, c)
    exp = xmath.ExpOp(mul.result)
    add = arith.AddfOp(exp.result, half.result)
    top = arith.MaximumfOp(add.result, a)
    body.add_ops([half, sub, mul, exp, add, top, rdu.YieldOp(top.result)])
    op = rdu.MapOp(list(outer.args), TensorType(f32, list(result)), Region(body))
    op.verify()
    return op


def test_map_computes_its_intermediates_into_out_unless_an_input_shares_it() -> None:
    """Every value of the map's shape is computed into `out` (no new array a
    call); a call whose `out` is an input's own bytes (an in-place update)
    runs the lines that keep intermediates apart, and reads the input first."""
    rng = np.random.default_rng(0)
    shapes = [(2, 3, 4), (3, 1), (4,)]
    a, b, c = (rng.standard_normal(s).astype(np.float32) for s in shapes)
    run = map_body.compile_map(_chain_map(shapes, (2, 3, 4)))
    ta, tb, tc = (torch.from_numpy(x) for x in (a, b, c))
    expected = torch.maximum(torch.exp((ta - tb) * tc) + 0.5, ta).numpy()
    np.testing.assert_allclose(run(a, b, c), expected, rtol=1e-6)
    out = np.full((2, 3, 4), np.nan, np.float32)
    run.into(out, a, b, c)  # type: ignore[attr-defined]
    np.testing.assert_allclose(out, expected, rtol=1e-6)
    lines = run.source.split("return _plain_body")[1].split("\n", 1)[1]  # type: ignore[attr-defined]
    assert lines.count("out=out)") == 5 and "out=v" not in lines  # sub, mul, exp, add, max: all into out
    shared = a.copy()
    run.into(shared, shared, b, c)  # type: ignore[attr-defined]  # `a` read after `out` is first written
    np.testing.assert_allclose(shared, expected, rtol=1e-6)


def test_map_into_broadcasts_a_smaller_result() -> None:
    """A body that depends on fewer dims than the map's shape fills `out` whole."""
    shapes = [(3, 1), (3, 1), (1,)]
    a, b, c = (np.arange(3, dtype=np.float32).reshape(3, 1) / 4, np.ones((3, 1), np.float32),
               np.full((1,), 2.0, np.float32))
    run = map_body.compile_map(_chain_map(shapes, (3, 5)))
    out = np.zeros((3, 5), np.float32)
    run.into(out, a, b, c)  # type: ignore[attr-defined]
    expected = np.maximum(np.exp((a - b) * c) + 0.5, a)
    np.testing.assert_allclose(out, np.broadcast_to(expected, (3, 5)), rtol=1e-6)
    assert "out=v" in run.source  # type: ignore[attr-defined]  # a dead temporary of the smaller shape is reused


def _affine_map(shapes: list[tuple[int, ...]], result: tuple[int, ...]) -> rdu.MapOp:
    """`(x - mean) * scale + shift`, an inference batch norm's body, on f32 inputs of `shapes`."""
    outer = Block(arg_types=[TensorType(f32, list(s)) for s in shapes])
    body = Block(arg_types=[f32] * len(shapes))
    x, mean, scale, shift = body.args
    sub = arith.SubfOp(x, mean)
    mul = arith.MulfOp(sub.result, scale)
    add = arith.AddfOp(mul.result, shift)
    body.add_ops([sub, mul, add, rdu.YieldOp(add.result)])
    op = rdu.MapOp(list(outer.args), TensorType(f32, list(result)), Region(body))
    op.verify()
    return op


@pytest.mark.parametrize("threads", [1, 2])
def test_large_map_arithmetic_runs_on_torchs_threads_with_numpys_bits(threads: int,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """A body's float arithmetic over a large array runs as torch's kernels at
    more than one thread (numpy's ufuncs at one), giving the bits numpy's
    ufuncs and eager give, into `out` and not; a changed input is read anew."""
    shapes = [(1, 64, 32, 32), (64, 1, 1), (64, 1, 1), (64, 1, 1)]
    rng = np.random.default_rng(3)
    run = map_body.compile_map(_affine_map(shapes, shapes[0]))
    assert "_ta.multiply(" in run.source  # type: ignore[attr-defined]
    tensors: list[torch.Tensor] = []
    as_torch = elementwise.as_torch
    monkeypatch.setattr(elementwise, "as_torch", lambda x: tensors.append(as_torch(x)) or tensors[-1])
    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    map_body.arithmetic_for_threads()  # as each run binds it (engine.run)
    try:
        for _ in range(2):  # new inputs each call
            x, mean, scale, shift = (rng.standard_normal(s).astype(np.float32) for s in shapes)
            expected = np.add(np.multiply(np.subtract(x, mean), scale), shift)
            eager = ((torch.from_numpy(x) - torch.from_numpy(mean)) * torch.from_numpy(scale)
                     + torch.from_numpy(shift)).numpy()
            out = np.full(shapes[0], np.nan, np.float32)
            run.into(out, x, mean, scale, shift)  # type: ignore[attr-defined]
            for got in (out, run(x, mean, scale, shift)):
                np.testing.assert_array_equal(got.view(np.int32), expected.view(np.int32))
                np.testing.assert_array_equal(got.view(np.int32), eager.view(np.int32))
    finally:
        torch.set_num_threads(before)
        map_body.arithmetic_for_threads()
    assert len(tensors) >= 2 * 2 * 3 * 2 if threads > 1 else not tensors  # calls, ways, ops, operands


def test_small_or_overlapping_map_arithmetic_stays_numpys(monkeypatch: pytest.MonkeyPatch) -> None:
    """Below `TORCH_ARITHMETIC_ELEMENTS` a body's arithmetic is numpy's
    ufunc at any thread count; so is it where `out` overlaps an
    operand in part (numpy buffers the operand; torch's kernel would read
    elements it already wrote)."""
    calls: list[object] = []
    as_torch = elementwise.as_torch
    monkeypatch.setattr(elementwise, "as_torch", lambda x: calls.append(x) or as_torch(x))
    add = elementwise.torch_arithmetic(np.add, torch.add)
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        small = np.ones((8, 8, 1), np.float32)
        np.testing.assert_array_equal(add(small, np.ones((8,), np.float32)), np.full((8, 8, 8), 2, np.float32))
        assert not calls
        values = np.arange(1 << 16, dtype=np.float32)
        expected = values[1:] + values[:-1]
        add(values[1:], values[:-1], out=values[:-1])
        np.testing.assert_array_equal(values[:-1], expected)
        assert not calls
        add(values, values, out=values)  # in place, as a body's `out=v1` of its own operand: torch's
        np.testing.assert_array_equal(values[:-1], expected * 2)
        assert calls
    finally:
        torch.set_num_threads(before)


def test_read_only_arrays_reach_torch_without_a_warning_or_a_copy() -> None:
    """A weight's read-only array is a tensor on its memory; torch's "not
    writable" warning (given once a process) is spent silently by the first."""
    weight = np.arange(6, dtype=np.float32).reshape(2, 3)
    weight.flags.writeable = False
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        tensors = [elementwise.as_torch(weight) for _ in range(3)]
    assert all(t.data_ptr() == weight.ctypes.data for t in tensors)
    assert elementwise._READ_ONLY_WARNING["spent"]


@pytest.mark.parametrize("dtype", [np.float32, np.float64, BF16], ids=str)
def test_matmul_into(dtype) -> None:
    rng = np.random.default_rng(1)
    lhs = rng.standard_normal((2, 5, 7)).astype(dtype)
    rhs = rng.standard_normal((6, 7)).astype(dtype)
    out = np.empty((2, 5, 6), dtype)
    kernels.matmul(lhs, np.broadcast_to(rhs, (2, 6, 7)), dtype, transpose_rhs=True, out=out)
    to32 = [torch.from_numpy(x.astype(np.float32)) for x in (lhs, rhs)]
    expected = (to32[0] @ to32[1].T).numpy()
    tolerance = 2e-2 if dtype == BF16 else 1e-5
    np.testing.assert_allclose(out.astype(np.float64), expected, rtol=tolerance, atol=tolerance)
    np.testing.assert_array_equal(out, kernels.matmul(lhs, rhs, dtype, transpose_rhs=True))


POINTWISE = [(2, 5, 3, 4), (1, 8, 6), (0, 3, 2, 2), (1, 4, 2, 3, 2)]


@pytest.mark.parametrize("dtype", [np.float32, np.float64, BF16], ids=str)
@pytest.mark.parametrize("shape", POINTWISE, ids=lambda s: "x".join(map(str, s)))
def test_pointwise_conv_is_one_gemm_matching_eager(shape, dtype) -> None:
    rng = np.random.default_rng(2)
    x = rng.standard_normal(shape).astype(dtype)
    w = rng.standard_normal((7, shape[1], *(1,) * (len(shape) - 2))).astype(dtype)
    spatial = len(shape) - 2
    ones, zeros = (1,) * spatial, (0,) * spatial
    assert kernels._is_pointwise(w.shape, ones, zeros, 1)
    torch_conv = {1: F.conv1d, 2: F.conv2d, 3: F.conv3d}[spatial]
    expected = torch_conv(*(torch.from_numpy(a.astype(np.float32)) for a in (x, w)))
    tolerance = 2e-2 if dtype == BF16 else 1e-5
    result = kernels.conv(x, w, ones, zeros, ones, 1)
    assert result.dtype == np.dtype(dtype) and result.shape == tuple(expected.shape)
    np.testing.assert_allclose(result.astype(np.float64), expected.numpy(), rtol=tolerance, atol=tolerance)
    out = np.empty(result.shape, dtype)
    assert kernels.conv(x, w, ones, zeros, ones, 1, out=out) is out
    np.testing.assert_array_equal(out, result)


def test_a_strided_or_padded_1x1_conv_is_not_pointwise() -> None:
    w = np.ones((4, 4, 1, 1), np.float32)
    assert not kernels._is_pointwise(w.shape, (2, 2), (0, 0), 1)
    assert not kernels._is_pointwise(w.shape, (1, 1), (1, 0), 1)
    assert not kernels._is_pointwise((4, 2, 1, 1), (1, 1), (0, 0), 2)


POOLS = [
    # (input shape, window, stride, padding, dilation, ceil_mode)
    ((2, 3, 9), (3,), (2,), (1,), (1,), False),
    ((2, 3, 10, 11), (3, 3), (2, 2), (1, 1), (1, 1), True),
    ((2, 3, 9, 8), (2, 3), (2, 2), (0, 1), (1, 1), True),  # ceil adds a partial window
    ((4, 2, 3, 7, 6), (3, 2), (1, 2), (1, 1), (1, 1), False),  # three leading dims
    ((1, 2, 4, 6, 5), (2, 2, 2), (2, 2, 1), (0, 1, 1), (1, 1, 1), True),
]


@pytest.mark.parametrize("dtype", [np.float32, np.float64, BF16], ids=str)
@pytest.mark.parametrize("case", POOLS, ids=lambda c: "x".join(map(str, c[0])) + ("-ceil" if c[5] else ""))
def test_torch_pooling_matches_the_window_path_and_eager(case, dtype) -> None:
    """Average divides by the whole window (padding and ceil's partial window
    counted), as `rdu.pool` defines: torch's kernel with a divisor, the
    strided window view, and eager's count_include_pad average with that divisor."""
    shape, window, stride, padding, dilation, ceil_mode = case
    rng = np.random.default_rng(3)
    x = rng.standard_normal(shape).astype(dtype)
    compute = np.float64 if dtype == np.float64 else np.float32
    for kind in ("max", "avg"):
        got = kernels.pool(x, kind, window, stride, padding, dilation, ceil_mode)
        geometry = kernels.PoolWindow(window, stride, padding, dilation, ceil_mode)
        via_torch = kernels._torch_pool(x.astype(compute), kind, geometry)
        assert via_torch is not None
        windowed = kernels._window_pool(x.astype(compute), kind, geometry)
        np.testing.assert_allclose(via_torch, windowed, rtol=1e-6, atol=1e-6)
        assert got.dtype == np.dtype(dtype) and got.shape == windowed.shape
        np.testing.assert_array_equal(got, via_torch.astype(dtype))
    lead = shape[: len(shape) - len(window)]
    channels = torch.from_numpy(x.astype(np.float32).reshape(1, -1, *shape[len(lead):]))
    if len(window) == 2:
        eager = F.avg_pool2d(channels, window, stride, padding, ceil_mode, True, int(np.prod(window)))
        got = kernels.pool(x, "avg", window, stride, padding, dilation, ceil_mode).astype(np.float32)
        tolerance = 2e-2 if dtype == BF16 else 1e-5
        np.testing.assert_allclose(got.reshape(eager.shape), eager.numpy(), rtol=tolerance, atol=tolerance)


def test_pooling_torch_refuses_falls_back() -> None:
    """Padding over half the window, dilated averages and integers take the window view."""
    x = np.arange(2 * 9 * 9, dtype=np.float32).reshape(2, 9, 9)
    assert kernels._torch_pool(x, "max", kernels.PoolWindow((2, 2), (1, 1), (2, 2), (1, 1))) is None
    assert kernels._torch_pool(x, "avg", kernels.PoolWindow((3, 3), (1, 1), (1, 1), (2, 2))) is None
    assert kernels._torch_pool(x.astype(np.int32), "max", kernels.PoolWindow((2, 2), (1, 1), (0, 0), (1, 1))) is None
    padded = kernels.pool(x, "max", (2, 2), (1, 1), (2, 2), (1, 1))
    assert padded.shape == (2, 12, 12) and padded[0, 0, 0] == -np.inf


@pytest.mark.parametrize("kind", ["max", "avg"])
def test_pooling_calls_do_not_grow_with_the_channels(kind) -> None:
    counts = {}
    for channels in (1, 8, 64):
        x = np.ones((2, channels, 10, 10), np.float32)
        kernels.pool(x, kind, (3, 3), (2, 2), (1, 1), (1, 1))
        counts[channels] = _calls(lambda x=x: kernels.pool(x, kind, (3, 3), (2, 2), (1, 1), (1, 1)))
    assert len(set(counts.values())) == 1, counts


class _Small(torch.nn.Module):
    """Convolutions (pointwise and 3x3), pooling, a norm and a linear layer."""

    def __init__(self) -> None:
        super().__init__()
        self.stem = torch.nn.Conv2d(3, 8, 3, padding=1)
        self.point = torch.nn.Conv2d(8, 16, 1)
        self.norm = torch.nn.GroupNorm(1, 16)
        self.head = torch.nn.Linear(16, 5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = F.max_pool2d(torch.relu(self.stem(x)), 2)
        y = F.gelu(self.norm(self.point(y))) - F.avg_pool2d(y.repeat(1, 2, 1, 1), 3, 1, 1)
        return self.head(y.mean(dim=(2, 3)))


@pytest.fixture(scope="module")
def small() -> tuple[torch.nn.Module, torch.Tensor, rducc.Program]:
    torch.manual_seed(0)
    model = _Small().eval()
    x = torch.randn(2, 3, 8, 8)
    return model, x, rducc.compile(model, (x,), opt_level=2)


def test_compiled_model_runs_twice_like_eager(small) -> None:
    """The second run reuses the arena (views bound once, kernels writing into them)."""
    model, x, program = small
    with torch.no_grad():
        expected = model(x)
    for _ in range(2):
        torch.testing.assert_close(program(x), expected, rtol=1e-4, atol=1e-5)
    other = torch.randn(2, 3, 8, 8)
    with torch.no_grad():
        torch.testing.assert_close(program(other), model(other), rtol=1e-4, atol=1e-5)


def test_one_copy_sram_buffers_take_no_steps(small) -> None:
    """Their views are bound once with the arena: no alloc or dealloc step a
    run (what is left: off-chip buffers, rotating copies, and a result's
    buffer that hands a host array of its own on: `runtime.handed_buffers`)."""
    _, _, program = small
    runner = program._runner
    one_copy = [op for _, op in runner._steps if isinstance(op, AllocOp)
                and op.result.type.tier.data == Tier.SRAM and op.copies == 1 and op.result not in runner.handed]
    assert not one_copy
    assert runner._bound
    sram_deallocs = [op for _, op in runner._steps if isinstance(op, DeallocOp)
                     and runner._copies.get(op.buffer) == 1]
    assert not sram_deallocs


class _Convolutions(torch.nn.Module):
    """Convolutions down each of `kernels.conv`'s paths with their biases:
    pointwise (one GEMM), a small 3x3 (gather and GEMM) and a depthwise 7x7
    on a larger image (torch's kernel, the bias in oneDNN's epilogue)."""

    def __init__(self) -> None:
        super().__init__()
        self.point = torch.nn.Conv2d(3, 8, 1)
        self.small = torch.nn.Conv2d(8, 8, 3, padding=1)
        self.depthwise = torch.nn.Conv2d(8, 8, 7, padding=3, groups=8)
        self.beside = torch.nn.Conv2d(3, 4, 3, padding=1)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return self.depthwise(self.small(self.point(x))).permute(0, 2, 3, 1), self.beside(x)


@pytest.mark.parametrize("epilogue_rule, where", [
    (True, ["add", "add", "add", "add"]), (False, ["add", "add", "product"])], ids=["epilogue-reads", "plain"])
def test_convolution_bias_adds_run_in_the_convolution_as_eager(monkeypatch: pytest.MonkeyPatch, epilogue_rule: bool,
                                                                 where: list[str]) -> None:
    """Placed by `rdu-sram-alloc`, which keeps a product's operands live up to
    its bias add, every add folds at the add. Placed without that rule (as a
    function that does not fit with it): folded at the add (the pointwise and
    the 3x3 beside, read from their inputs), at the product (the depthwise,
    whose `[C, 1, 1]` bias is reshaped after it: read from the input buffer),
    and not at all where the next convolution writes over the product's bytes
    while reading the add's value (the 3x3 between them, placed so)."""
    if not epilogue_rule:
        monkeypatch.setattr(rdu_sram_alloc, "PLACEMENT_RULES", rdu_sram_alloc.PLACEMENT_RULES[1:])
    folded: dict[str, str] = {}

    class Recording(epilogues.BiasFolds):
        def __init__(self, compute: ComputeOp) -> None:
            super().__init__(compute)
            for where, products in (("add", self.at_add.values()), ("product", self.at_product)):
                folded.update({str(p.weight.name_hint): where for p in products if isinstance(p, rdu.ConvOp)})

    monkeypatch.setattr(interpreter, "BiasFolds", Recording)
    torch.manual_seed(0)
    model, x = _Convolutions().eval(), torch.randn(1, 3, 40, 40)
    with torch.no_grad():
        expected = model(x)
    program = rducc.compile(model, (x,), opt_level=2)
    for got, want in zip(program(x), expected, strict=True):
        torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)
    assert sorted(folded.values()) == where, folded
    paths = {kernels.conv_plan((1, m.in_channels, 40, 40), tuple(m.weight.shape), m.stride, m.padding, m.dilation,
                               m.groups, np.dtype(np.float32)).path
             for m in (model.point, model.beside, model.depthwise)}
    assert paths == {"pointwise", "windows", "torch"}, paths


class _TorchConvolutions(torch.nn.Module):
    """Convolutions PyTorch's kernel runs (`conv_plan` path "torch"): one
    without a bias read by a batch norm (its own kernel, yielded into its
    buffer), a depthwise 7x7 with its bias (folded) read through a permute
    and a residual add, one without a bias read by a ReLU, and one whose value
    is returned (computed into its output buffer)."""

    def __init__(self) -> None:
        super().__init__()
        self.dense = torch.nn.Conv2d(16, 16, 3, padding=1, bias=False)
        self.norm = torch.nn.BatchNorm2d(16)
        self.depthwise = torch.nn.Conv2d(16, 16, 7, padding=3, groups=16)
        self.middle = torch.nn.Conv2d(16, 16, 3, padding=1, bias=False)
        self.returned = torch.nn.Conv2d(16, 8, 3, padding=1)
        torch.nn.init.uniform_(self.norm.running_var, 0.5, 1.5)
        torch.nn.init.uniform_(self.norm.running_mean, -0.5, 0.5)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        y = torch.relu(self.norm(self.dense(x)))
        z = self.depthwise(y).permute(0, 2, 3, 1) * 0.5
        w = z.permute(0, 3, 1, 2) + y
        return w, self.returned(torch.relu(self.middle(w)))


def test_a_torch_convolution_read_by_its_slot_alone_is_its_kernels_own_array(monkeypatch) -> None:
    """Such a convolution binds the array oneDNN returns (`_conv_step`'s
    `fresh`, no copy into the arena); the returned one is computed into its
    buffer. Eager's numbers call after call, as the input and a convolution's
    weight change between calls (no stale array)."""
    torch.manual_seed(0)
    model = _TorchConvolutions().eval()
    generator = torch.Generator().manual_seed(1)
    x = torch.randn(1, 16, 40, 40, generator=generator)
    with torch.no_grad():
        program = rducc.compile(torch.export.export(model, (x,)), opt_level=2)
    for m in (model.dense, model.depthwise, model.middle, model.returned):
        assert kernels.conv_plan((1, 16, 40, 40), tuple(m.weight.shape), m.stride, m.padding, m.dilation, m.groups,
                                 np.dtype(np.float32)).path == "torch"
    fresh: list[bool] = []
    plain = kernels.conv

    def recording(*args, **kwargs):  # type: ignore[no-untyped-def]
        out = args[7] if len(args) > 7 else kwargs.get("out")
        fresh.append((tuple(args[1].shape), out is None))
        return plain(*args, **kwargs)

    monkeypatch.setattr(interpreter.kernels, "conv", recording)
    weight = next(name for name in program.weights if name.endswith("depthwise.weight"))
    for call in range(3):
        if call == 2:  # the Program's weight changed in place, and the model's alike
            program.weights[weight][...] *= 2.0
            with torch.no_grad():
                model.depthwise.weight.mul_(2.0)
        x = torch.randn(1, 16, 40, 40, generator=generator)
        with torch.no_grad():
            expected = model(x)
        for got, want in zip(program(x), expected, strict=True):
            torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-4)
    # each call: the dense one (its own kernel) and the returned one in their buffers, the depthwise and middle fresh
    each = [((16, 16, 3, 3), False), ((16, 1, 7, 7), True), ((16, 16, 3, 3), True), ((8, 16, 3, 3), False)]
    assert fresh[-8:] == each * 2, fresh
