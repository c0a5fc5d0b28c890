"""Convolution, pooling and resampling on whole arrays (issue 19).

`kernels.conv` runs every group of a grouped or depthwise convolution at once
(PyTorch's CPU kernel, or the windows path: one gather and one matmul
batched over the groups; test_conv_paths checks the choice): both paths
against eager over strides, padding, dilation and groups = 1, C and others;
a profile that fails if the calls made grow with the group count; and
compiled transposed, dilated, depthwise convolutions, pooling and
resampling against eager at -O0 and -O2.
"""

from __future__ import annotations

import cProfile
import pstats

import ml_dtypes
import numpy as np
import pytest
import torch
import torch.nn.functional as F

import rducc
from rducc.runtime import kernels

CASES = [
    # (input shape, weight shape, stride, padding, dilation, groups)
    ((2, 4, 17), (6, 2, 3), (2,), (2,), (2,), 2),
    ((1, 3, 8), (5, 3, 1), (1,), (0,), (1,), 1),
    ((2, 3, 9, 11), (5, 3, 3, 2), (1, 2), (2, 1), (1, 2), 1),
    ((2, 4, 6, 6), (4, 1, 3, 3), (1, 1), (1, 1), (1, 1), 4),  # depthwise
    ((1, 8, 7, 7), (16, 1, 3, 3), (2, 2), (1, 1), (1, 1), 8),  # depthwise, multiplier 2
    ((2, 6, 9, 11), (9, 2, 3, 2), (2, 1), (2, 1), (1, 2), 3),
    ((1, 3, 5, 6, 4), (6, 1, 3, 3, 3), (1, 2, 1), (1, 1, 1), (1, 1, 2), 3),
    ((0, 2, 5, 5), (3, 2, 2, 2), (1, 1), (0, 0), (1, 1), 1),
    ((2, 3, 16, 17), (4, 3, 4, 4), (4, 4), (0, 0), (1, 1), 1),  # patchwise (one GEMM), a partial last column
    ((2, 4, 9), (6, 4, 3), (3,), (0,), (1,), 1),  # patchwise, 1-d
]
TORCH_CONV = {3: F.conv1d, 4: F.conv2d, 5: F.conv3d}
BF16 = np.dtype(ml_dtypes.bfloat16)


def _eager(x: np.ndarray, w: np.ndarray, case: tuple) -> np.ndarray:
    _, _, stride, padding, dilation, groups = case
    as_torch = [torch.from_numpy(a.astype(np.float32) if a.dtype == BF16 else a) for a in (x, w)]
    return TORCH_CONV[x.ndim](*as_torch, None, stride, padding, dilation, groups).numpy()


def _windows_path(x: np.ndarray, w: np.ndarray, stride, padding, dilation, groups: int) -> np.ndarray:
    """`kernels.conv` on the windows path (one gather, one batched GEMM) whatever the size."""
    windows = kernels.conv_windows(x.shape[2:], w.shape[2:], tuple(stride), tuple(padding), tuple(dilation))
    plan = kernels.ConvPlan("windows", (x.shape, w.shape), windows)
    return kernels.conv(x, w, stride, padding, dilation, groups, plan=plan)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, BF16], ids=str)
@pytest.mark.parametrize("case", CASES, ids=lambda c: "x".join(map(str, c[0])) + f"-g{c[5]}")
def test_both_conv_paths_match_eager(case, dtype) -> None:
    """The default path and the batched-matmul path, against torch's convolution."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal(case[0]).astype(dtype)
    w = rng.standard_normal(case[1]).astype(dtype)
    expected = _eager(x, w, case)
    tolerance = 2e-2 if dtype == BF16 else 1e-5
    default = kernels.conv(x, w, *case[2:])
    assert default.dtype == np.dtype(dtype) and default.shape == expected.shape
    np.testing.assert_allclose(default.astype(np.float64), expected, rtol=tolerance, atol=tolerance)
    compute = np.float64 if dtype == np.float64 else np.float32
    batched = _windows_path(x.astype(compute), w.astype(compute), *case[2:])
    assert batched.shape == expected.shape
    np.testing.assert_allclose(batched, expected, rtol=1e-4, atol=1e-4)


def test_four_spatial_dims_take_the_batched_path() -> None:
    """No torch kernel for 4 spatial dims: the batched matmul, against a sum of
    3-d convolutions (one per tap of the 4th dim)."""
    rng = np.random.default_rng(1)
    x = rng.standard_normal((1, 4, 5, 4, 4, 6)).astype(np.float32)
    w = rng.standard_normal((6, 2, 2, 2, 2, 3)).astype(np.float32)
    result = kernels.conv(x, w, (1, 1, 1, 2), (0, 1, 0, 1), (1, 1, 1, 1), 2)
    tx, tw = torch.from_numpy(x), torch.from_numpy(w)
    padded = F.pad(tx, (1, 1))
    width = result.shape[-1]
    expected = torch.stack([
        sum(F.conv3d(padded[..., 2 * o + t], tw[..., t], None, 1, (0, 1, 0), 1, 2) for t in range(3))
        for o in range(width)
    ], dim=-1)
    np.testing.assert_allclose(result, expected.numpy(), rtol=1e-4, atol=1e-4)


def _calls(function) -> int:
    """Every Python and builtin call `function()` makes, counted by cProfile."""
    profile = cProfile.Profile()
    profile.runcall(function)
    return pstats.Stats(profile).total_calls  # type: ignore[attr-defined]


@pytest.mark.parametrize("blas", ["numpy", "torch"])
@pytest.mark.parametrize("path", ["default", "batched"])
def test_calls_do_not_grow_with_the_groups(path, blas, monkeypatch) -> None:
    """A 64-channel convolution with 1, 4, 16 and 64 groups makes the same calls:
    no Python loop over groups or channels. A product's size picks its BLAS
    (`kernels.gemm`: torch's from `PARALLEL_MACS` multiply-adds, at any thread
    count), and the work here shrinks with the groups, so the calls would
    differ by the work, not by the groups: each run sends every product to
    one BLAS, numpy's or torch's."""
    monkeypatch.setattr(kernels, "PARALLEL_MACS", 1 << 62 if blas == "numpy" else 0)
    rng = np.random.default_rng(2)
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    x = rng.standard_normal((2, 64, 12, 12)).astype(np.float32)
    convolve = kernels.conv if path == "default" else _windows_path
    counts = {}
    try:
        for groups in (1, 4, 16, 64):
            w = rng.standard_normal((64, 64 // groups, 3, 3)).astype(np.float32)
            convolve(x, w, (1, 1), (1, 1), (1, 1), groups)  # warm: imports, caches
            counts[groups] = _calls(lambda w=w, groups=groups: convolve(x, w, (1, 1), (1, 1), (1, 1), groups))
    finally:
        torch.set_num_threads(before)
    assert len(set(counts.values())) == 1, counts


class _Resample(torch.nn.Module):
    """Transposed (output_padding, groups, dilation), dilated and depthwise
    convolutions, pooling and resampling in one small image model."""

    def __init__(self) -> None:
        super().__init__()
        self.up = torch.nn.ConvTranspose2d(4, 6, 3, stride=2, padding=1, output_padding=1, groups=2, dilation=1)
        self.up_dilated = torch.nn.ConvTranspose2d(6, 4, 3, stride=2, padding=2, dilation=2, output_padding=1)
        self.depthwise = torch.nn.Conv2d(4, 8, 3, padding=2, dilation=2, groups=4)
        self.pointwise = torch.nn.Conv2d(8, 4, 1)
        self.line = torch.nn.ConvTranspose1d(4, 4, 4, stride=3, padding=1, output_padding=2, groups=4)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        y = self.up_dilated(torch.relu(self.up(x)))
        y = self.pointwise(self.depthwise(y))
        y = F.max_pool2d(y, 3, stride=2, padding=1) + F.avg_pool2d(y, 2, ceil_mode=False)[..., :1, :1]
        y = F.interpolate(y, scale_factor=2, mode="bilinear") + F.interpolate(y, scale_factor=2, mode="nearest")
        line = self.line(y.mean(dim=2))
        return F.adaptive_avg_pool2d(y, (3, 5)), line


@pytest.mark.parametrize("opt_level", [0, 2])
def test_compiled_resampling_matches_eager(opt_level) -> None:
    torch.manual_seed(0)
    model = _Resample().eval()
    x = torch.randn(2, 4, 7, 9)
    program = rducc.compile(model, (x,), opt_level=opt_level)
    with torch.no_grad():
        expected = model(x)
    for got, want in zip(program(x), expected):
        torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-5)
