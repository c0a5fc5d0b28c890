"""The convolution paths `kernels.conv_plan` chooses (issue 19): each path
against eager on depthwise, grouped, dense, strided, dilated, 1-d and 3-d
convolutions in f32, f64, f16 and bf16; the choice made from the geometry
alone, the same every time; the kernel cropped to the taps that touch the
image."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
import torch
import torch.nn.functional as F

from rducc.runtime import kernels

CASES = {
    # name: (input shape, weight shape, stride, padding, dilation, groups)
    "depthwise-7x7-tiny": ((1, 12, 2, 2), (12, 1, 7, 7), (1, 1), (3, 3), (1, 1), 12),
    "depthwise-3x3-strided": ((2, 8, 9, 8), (8, 1, 3, 3), (2, 2), (1, 1), (1, 1), 8),
    "depthwise-multiplier": ((1, 4, 6, 6), (8, 1, 3, 3), (1, 1), (2, 2), (2, 2), 4),
    "grouped": ((1, 6, 7, 5), (9, 2, 3, 2), (2, 1), (1, 0), (1, 2), 3),
    "dense-strided": ((1, 5, 8, 8), (7, 5, 3, 3), (2, 2), (1, 1), (1, 1), 1),
    "dense-patches": ((2, 3, 9, 8), (4, 3, 4, 4), (4, 4), (0, 0), (1, 1), 1),
    "pointwise": ((2, 5, 3, 4), (6, 5, 1, 1), (1, 1), (0, 0), (1, 1), 1),
    "1d-grouped-dilated": ((1, 8, 21), (8, 2, 5), (1,), (4,), (2,), 4),
    "3d-grouped": ((1, 4, 4, 5, 3), (6, 2, 3, 3, 2), (1, 2, 1), (1, 1, 0), (1, 1, 2), 2),
    "padding-only-image": ((1, 2, 1, 1), (3, 2, 3, 3), (1, 1), (2, 2), (1, 1), 1),
    # no tap ever reads the image (stride and dilation step over it): every output is 0
    "no-tap-reads-the-image": ((2, 1, 1), (2, 1, 3), (2,), (4,), (3,), 1),
    "no-tap-reads-the-image-2d": ((1, 2, 6, 2), (1, 2, 5, 1), (3, 3), (4, 4), (3, 1), 1),
}
F16, BF16 = np.dtype(np.float16), np.dtype(ml_dtypes.bfloat16)
EAGER = {3: F.conv1d, 4: F.conv2d, 5: F.conv3d}


def _plans(case: tuple, compute: np.dtype) -> dict[str, kernels.ConvPlan]:
    """Every path that can run this case: the chosen one, the windows and torch."""
    x_shape, w_shape, stride, padding, dilation, groups = case
    chosen = kernels.conv_plan(x_shape, w_shape, stride, padding, dilation, groups, compute)
    shapes = (x_shape, w_shape)
    plans = {"chosen": chosen, "windows": kernels.ConvPlan(
        "windows", shapes, kernels.conv_windows(x_shape[2:], w_shape[2:], stride, padding, dilation))}
    if compute in (np.float32, np.float64):
        plans["torch"] = kernels.ConvPlan("torch", shapes)
    return plans


@pytest.mark.parametrize("dtype", [np.dtype(np.float32), np.dtype(np.float64), F16, BF16], ids=str)
@pytest.mark.parametrize("name", CASES)
def test_every_path_matches_eager(name: str, dtype: np.dtype) -> None:
    """Each path (and the one chosen) against eager's f32/f64 convolution,
    rounded once to the half types."""
    case = CASES[name]
    rng = np.random.default_rng(0)
    x = rng.standard_normal(case[0]).astype(dtype)
    w = rng.standard_normal(case[1]).astype(dtype)
    wide = np.float64 if dtype == np.float64 else np.float32
    expected = EAGER[x.ndim](torch.from_numpy(x.astype(wide)), torch.from_numpy(w.astype(wide)), None,
                             *case[2:]).numpy()
    tolerance = 1e-5 if dtype in (np.float32, np.float64) else 2e-2
    for path, plan in _plans(case, np.dtype(wide)).items():
        result = kernels.conv(x, w, *case[2:], plan=plan)
        assert result.dtype == dtype and result.shape == expected.shape, path
        np.testing.assert_allclose(result.astype(np.float64), expected, rtol=tolerance, atol=tolerance,
                                   err_msg=path)
        out = np.empty(expected.shape, dtype)
        assert kernels.conv(x, w, *case[2:], out=out, plan=plan) is out
        np.testing.assert_array_equal(out, result, err_msg=path)


def test_paths_follow_the_geometry() -> None:
    """Pointwise is one GEMM; a small convolution, or one whose windows do not
    overlap, takes the windows; a large depthwise one, torch; integers and 4
    spatial dims (no torch kernel) the windows whatever their size."""
    f32 = np.dtype(np.float32)

    def path(x, w, stride, padding, groups, compute=f32):
        spatial = len(x) - 2
        return kernels.conv_plan(x, w, stride, padding, (1,) * spatial, groups, compute).path

    assert path((1, 16, 8, 8), (32, 16, 1, 1), (1, 1), (0, 0), 1) == "pointwise"
    assert path((1, 128, 2, 2), (128, 1, 7, 7), (1, 1), (3, 3), 128) == "windows"
    assert path((1, 40, 4, 4), (64, 40, 3, 3), (2, 2), (1, 1), 1) == "windows"
    assert path((1, 3, 224, 224), (64, 3, 16, 16), (16, 16), (0, 0), 1) == "windows"  # patches: no overlap
    assert path((1, 64, 32, 32), (64, 1, 3, 3), (1, 1), (1, 1), 64) == "torch"
    assert path((1, 64, 32, 32), (64, 1, 3, 3), (1, 1), (1, 1), 64, np.dtype(np.int64)) == "windows"
    assert path((1, 2, 9, 9, 9, 9), (2, 2, 3, 3, 3, 3), (1,) * 4, (1,) * 4, 1) == "windows"


def test_the_choice_is_the_same_every_time() -> None:
    """The plan depends on the shapes and attributes alone: made again from a
    cleared cache it takes the same path with the same gather."""
    args = [(*CASES[name], np.dtype(np.float32)) for name in CASES]
    first = [kernels.conv_plan(*a) for a in args]
    kernels.conv_plan.cache_clear()
    kernels.conv_windows.cache_clear()
    again = [kernels.conv_plan(*a) for a in args]
    for one, other in zip(first, again):
        assert (one.path, one.shapes) == (other.path, other.shapes)
        assert (one.windows is None) == (other.windows is None)
        if one.windows is not None:
            np.testing.assert_array_equal(one.windows.taps, other.windows.taps)
            assert one.windows[1:] == other.windows[1:]


def test_taps_that_only_read_padding_are_dropped() -> None:
    """A 7x7 kernel padded by 3 on a 2x2 image reads it with its middle 3x3
    taps only: 9 taps by 4 positions, the weight sliced to them."""
    windows = kernels.conv_windows((2, 2), (7, 7), (1, 1), (3, 3), (1, 1))
    assert windows.taps.shape == (9, 4) and windows.kernel == (slice(2, 5), slice(2, 5))
    assert windows.padded and windows.out == (2, 2)
    assert not kernels.conv_windows((8, 8), (4, 4), (4, 4), (0, 0), (1, 1)).padded
    assert kernels.conv_windows((1,), (3,), (2,), (4,), (3,)).taps.shape == (0, 2)  # no tap at all


@pytest.mark.parametrize("sizes, window, layout", [
    ((8, 6), (2, 2), "channels-last"),  # ConvNeXt's downsampling: a permuted layer norm's output
    ((9, 7), (4, 2), "row-major"),  # rows and columns past the last window (unread)
    ((10,), (5,), "row-major"),
    ((4, 6, 3), (2, 3, 3), "channels-last"),
])
def test_tiling_windows_are_the_gathers_matrix(sizes: tuple, window: tuple, layout: str) -> None:
    """Windows that tile the image (stride the window, no padding) take their
    matrix as a transposed view of it, in its own memory order: the gather's
    elements, so the convolution's bits are the gather's."""
    windows = kernels.conv_windows(sizes, window, window, (0,) * len(sizes), (1,) * len(sizes))
    assert windows.tiles and not kernels.conv_windows(sizes, window, window, (1,) * len(sizes),
                                                      (1,) * len(sizes)).tiles
    rng = np.random.default_rng(5)
    x = rng.standard_normal((2, 3, *sizes)).astype(np.float32)
    if layout == "channels-last":
        x = np.ascontiguousarray(np.moveaxis(x, 1, -1)).transpose(0, x.ndim - 1, *range(1, x.ndim - 1))
    tiled = kernels._tiled_windows(x, windows)  # noqa: SLF001
    gathered = kernels._gathered_windows(x, windows)  # noqa: SLF001
    assert tiled.shape == gathered.shape and np.array_equal(tiled, gathered)
    w = rng.standard_normal((4, 3, *window)).astype(np.float32)
    plan = kernels.ConvPlan("windows", (x.shape, w.shape), windows)
    expected = EAGER[x.ndim](torch.from_numpy(np.ascontiguousarray(x)), torch.from_numpy(w), None, window).numpy()
    np.testing.assert_allclose(kernels.conv(x, w, window, (0,) * len(sizes), (1,) * len(sizes), 1, plan=plan),
                               expected, rtol=1e-5, atol=1e-5)


def test_a_plan_for_other_shapes_is_not_used() -> None:
    """A plan made for other shapes (a kernel called on arrays its op did not
    describe) is made again for the arrays given."""
    x = np.ones((1, 2, 5, 5), np.float32)
    w = np.ones((2, 1, 3, 3), np.float32)
    stale = kernels.conv_plan((1, 2, 3, 3), (2, 1, 3, 3), (1, 1), (1, 1), (1, 1), 2, np.dtype(np.float32))
    result = kernels.conv(x, w, (1, 1), (1, 1), (1, 1), 2, plan=stale)
    expected = F.conv2d(torch.from_numpy(x), torch.from_numpy(w), None, 1, 1, 1, 2).numpy()
    np.testing.assert_allclose(result, expected, rtol=1e-6)


def _random_geometry(rng: np.random.Generator) -> tuple:
    """A convolution of 1-3 spatial dims with at least one output position:
    (input shape, weight shape, stride, padding, dilation, groups)."""
    while True:
        spatial, groups = int(rng.integers(1, 4)), int(rng.choice([1, 1, 2, 3]))
        per_group, outputs = int(rng.integers(1, 4)), int(rng.integers(1, 4))
        sizes, window = rng.integers(1, 8, spatial), rng.integers(1, 5, spatial)
        stride, dilation = rng.integers(1, 4, spatial), rng.integers(1, 4, spatial)
        padding = rng.integers(0, 5, spatial)
        out = (sizes + 2 * padding - dilation * (window - 1) - 1) // stride + 1
        if out.min() > 0:
            return ((int(rng.integers(1, 3)), per_group * groups, *sizes.tolist()),
                    (outputs * groups, per_group, *window.tolist()),
                    tuple(stride.tolist()), tuple(padding.tolist()), tuple(dilation.tolist()), groups)


def test_random_geometries_match_eager() -> None:
    """200 seeded random geometries (strides and dilations that step over the
    image, padding wider than the kernel) on every path, against eager."""
    rng = np.random.default_rng(19)
    for _ in range(200):
        case = _random_geometry(rng)
        x = rng.standard_normal(case[0]).astype(np.float32)
        w = rng.standard_normal(case[1]).astype(np.float32)
        expected = EAGER[x.ndim](torch.from_numpy(x), torch.from_numpy(w), None, *case[2:]).numpy()
        for name, plan in _plans(case, np.dtype(np.float32)).items():
            result = kernels.conv(x, w, *case[2:], plan=plan)
            np.testing.assert_allclose(result, expected, rtol=1e-4, atol=1e-4, err_msg=f"{name}: {case}")
