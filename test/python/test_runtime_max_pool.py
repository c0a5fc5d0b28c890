"""Max pooling runs one spatial dim at a time (`kernels._separable_max_pool`,
issue 32): exact against PyTorch's kernels over random geometries (padding,
stride, dilation, ceil mode, 1-3 spatial dims, NaN), integers against the
window-view reduction (a compiled max pool against eager:
test_runtime_into.py::test_compiled_model_runs_twice_like_eager)."""

from __future__ import annotations

import numpy as np
import torch

from rducc.runtime import kernels

_TORCH = {1: torch.nn.functional.max_pool1d, 2: torch.nn.functional.max_pool2d, 3: torch.nn.functional.max_pool3d}


def _geometry(rng: np.random.Generator, spatial: int) -> tuple[list[int], ...]:
    window = [int(rng.integers(1, 5)) for _ in range(spatial)]
    stride = [int(rng.integers(1, 4)) for _ in range(spatial)]
    padding = [int(rng.integers(0, k // 2 + 1)) for k in window]
    dilation = [int(rng.integers(1, 3)) for _ in range(spatial)]
    return window, stride, padding, dilation


def test_separable_max_pool_is_torchs_bit_for_bit() -> None:
    rng = np.random.default_rng(0)
    for case in range(40):
        spatial = case % 3 + 1
        window, stride, padding, dilation = _geometry(rng, spatial)
        ceil_mode = bool(rng.integers(0, 2))
        sizes = [int(rng.integers(max(window_span, 1), 13)) for window_span in
                 ((k - 1) * d + 1 for k, d in zip(window, dilation))]
        x = rng.standard_normal((2, 3, *sizes)).astype(np.float32)
        if case % 5 == 0:
            x.flat[rng.integers(0, x.size)] = np.nan
        expected = _TORCH[spatial](torch.from_numpy(x), window, stride, padding, dilation, ceil_mode).numpy()
        got = kernels.pool(x, "max", window, stride, padding, dilation, ceil_mode)
        assert got.shape == expected.shape
        np.testing.assert_array_equal(got, expected, err_msg=f"{window} {stride} {padding} {dilation} {ceil_mode}")


def test_integer_max_pool_is_the_window_reduction() -> None:
    rng = np.random.default_rng(7)
    x = rng.integers(-100, 100, (2, 5, 9, 11)).astype(np.int32)
    geometry = kernels.PoolWindow((3, 2), (2, 3), (1, 1), (1, 2), True)
    expected = kernels._window_pool(x, "max", geometry)
    np.testing.assert_array_equal(kernels.pool(x, "max", *geometry), expected)


def _bits(x: np.ndarray) -> np.ndarray:
    return x.view(np.uint32 if x.dtype == np.float32 else np.uint64)


def test_threaded_max_pool_is_numpys_bit_for_bit() -> None:
    """At two torch threads a float max pool's taps run as `torch.maximum` on
    torch's pool (issue 32): the same bits as NumPy's taps on ties (equal
    values, infinities); an input holding -0.0 (a tie with +0.0 that torch's
    scalar loop breaks the other way) or a NaN (torch writes its own NaN
    bits) stays on NumPy's."""
    rng = np.random.default_rng(3)
    values = np.array([0x00000000, 0x7F800000, 0xFF800000, 0x3F800000], dtype=np.uint32).view(np.float32)
    specials = np.array([0x80000000, 0x7FC02345, 0xFFC00000, 0x7F800001], dtype=np.uint32).view(np.float32)
    plain = rng.choice(values, (1, 32, 64, 64)).astype(np.float32)  # taps of 32K elements and more: on torch
    signed_zeros = np.where(rng.random(plain.shape) < 0.3, np.float32(-0.0), plain)
    with_nans = plain.copy()
    with_nans.flat[rng.integers(0, plain.size, 5)] = rng.choice(specials[1:], 5)
    threads = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        assert kernels._maximum_on_torch(plain) and kernels._maximum_on_torch(plain.astype(np.float64))
        with np.errstate(invalid="ignore"):  # a signalling NaN cast to f64
            wide_nans = with_nans.astype(np.float64)
        for x in (plain, signed_zeros, with_nans, signed_zeros.astype(np.float64), wide_nans):
            for geometry in (kernels.PoolWindow((3, 3), (2, 2), (1, 1), (1, 1), False),
                             kernels.PoolWindow((2, 3), (1, 2), (0, 1), (2, 1), True)):
                expected = kernels._separable_max_pool(x, geometry, threaded=False)
                got = kernels.pool(x, "max", *geometry)
                np.testing.assert_array_equal(_bits(got), _bits(expected), err_msg=f"{x.dtype} {geometry}")
    finally:
        torch.set_num_threads(threads)
