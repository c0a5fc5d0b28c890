"""Gathers and copies aside on torch's kernels (`rducc.runtime.threaded_moves`,
issue 32): NumPy's bits (elements moved as their bits: NaN payloads, -0,
16-bit floats, integers, booleans, indices from the end), at one thread and
on torch's pool, and a program's gathers run there."""

from __future__ import annotations

from collections.abc import Iterator

import ml_dtypes
import numpy as np
import pytest
import torch

import rducc
from rducc.runtime import kernels, threaded_moves


@pytest.fixture(params=[1, 2], ids=["1-thread", "2-threads"])
def threads(request: pytest.FixtureRequest) -> Iterator[int]:
    before = torch.get_num_threads()
    torch.set_num_threads(request.param)
    yield request.param
    torch.set_num_threads(before)


def _random_bits(shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
    """Random bytes as `dtype` (floats: NaNs with payloads, -0, subnormals among them)."""
    size = int(np.prod(shape)) * np.dtype(dtype).itemsize
    raw = np.random.default_rng(3).integers(0, 256, size, dtype=np.uint8)
    if np.dtype(dtype) == np.bool_:
        raw &= 1
    return raw.view(dtype).reshape(shape)


CASES = [
    # (source shape, dtype, index shape, dim, wraps)
    ((169, 24), np.float32, (2401,), 0, True),  # Swin-T's relative-position table
    ((1, 14, 14, 384), np.float32, (14,), 1, False),  # a roll that is no rotated range
    ((1, 14, 14, 384), np.float32, (14,), 2, False),
    ((64, 384), ml_dtypes.bfloat16, (8, 16), 0, False),  # a 2-d index
    ((512, 96), np.float16, (70,), 1, True),
    ((50, 640), np.int64, (64,), 0, False),
    ((300, 200), np.bool_, (200,), 0, False),
    ((2, 130, 700), np.float64, (33,), 1, True),
]


@pytest.mark.parametrize(("shape", "dtype", "index_shape", "dim", "wraps"), CASES)
def test_index_select_gives_numpys_bits(threads: int, shape: tuple[int, ...], dtype: type,
                                        index_shape: tuple[int, ...], dim: int, wraps: bool) -> None:
    """torch's `index_select` writes what NumPy's indexing gives, bit for bit,
    from a strided source too, and from indices counting from the end."""
    source = _random_bits(shape, np.dtype(dtype))
    size = shape[dim]
    index = np.random.default_rng(5).integers(-size if wraps else 0, size, index_shape)
    for view in (source, np.flip(source.T, 0).T if source.ndim > 1 else source):
        view = view if min(view.strides) >= 0 else np.ascontiguousarray(view)
        key = (slice(None),) * dim + (index,)
        expected = view[key]
        out = np.empty(expected.shape, expected.dtype)
        assert out.size >= threaded_moves.TORCH_GATHER_ELEMENTS
        assert kernels.gather(view, [index], dim, wraps, out) is out  # torch's path taken
        assert np.array_equal(out.view(np.uint8), np.ascontiguousarray(expected).view(np.uint8))


def test_index_select_leaves_what_it_does_not_apply_to() -> None:
    """Nothing written where torch's path does not apply: NumPy's then."""
    source = np.arange(64 * 800, dtype=np.float32).reshape(64, 800)
    index = np.arange(60)
    assert not threaded_moves.index_select(source, index, 0, np.empty((60, 800), np.float64))  # another dtype
    assert not threaded_moves.index_select(source, index, 0, np.empty((800, 60), np.float32).T)  # not C-contiguous
    assert not threaded_moves.index_select(source, index[:4], 0, np.empty((4, 800), np.float32))  # small
    assert not threaded_moves.index_select(source, index > 3, 0, np.empty((60, 800), np.float32))  # a mask
    with threaded_moves.as_numpy():
        assert not threaded_moves.index_select(source, index, 0, np.empty((60, 800), np.float32))
    overlapping = np.empty((128, 800), np.float32)
    assert not threaded_moves.index_select(overlapping[:64], index, 0, overlapping[30:90])  # shares memory
    assert threaded_moves.index_select(source, index, 0, np.empty((60, 800), np.float32))  # applies


def test_copy_gives_numpys_bits(threads: int) -> None:
    """A copy aside (torch's `copy_` on the pool at two threads) is `np.copyto`'s bits."""
    source = _random_bits((4, 49, 384), np.dtype(np.float32)).transpose(1, 0, 2)
    out, expected = np.empty(source.shape, np.float32), np.empty(source.shape, np.float32)
    threaded_moves.copy(out, source)
    with threaded_moves.as_numpy():
        threaded_moves.copy(expected, source)
    assert np.array_equal(out.view(np.uint32), expected.view(np.uint32))


class _Gathers(torch.nn.Module):
    """A table's rows by indices from the end too (a `tier.gather` of a
    weight) and an activation's columns (an `rdu.gather`)."""

    def __init__(self) -> None:
        super().__init__()
        self.table = torch.nn.Parameter(torch.randn(169, 32, generator=torch.Generator().manual_seed(0)))

    def forward(self, x: torch.Tensor, columns: torch.Tensor, rows: torch.Tensor) -> tuple[torch.Tensor, ...]:
        return torch.index_select(x * 2, 1, columns), self.table[rows] + 1


def test_a_programs_gathers_run_as_torchs_and_give_numpys_bits(monkeypatch: pytest.MonkeyPatch) -> None:
    """Both gathers of a program take torch's `index_select` at two threads
    and give the bits of the NumPy forms (`as_numpy`) and eager's values."""
    generator = torch.Generator().manual_seed(1)
    inputs = (torch.randn(1, 14, 14, 192, generator=generator), torch.randint(0, 14, (14,), generator=generator),
              torch.randint(-169, 169, (2401,), generator=generator))
    model = _Gathers()
    with torch.no_grad():
        program = rducc.compile(torch.export.export(model, inputs), opt_level=2)
        eager = model(*inputs)
    taken: list[bool] = []
    plain = threaded_moves.index_select

    def spied(*args: object) -> bool:
        taken.append(plain(*args))  # type: ignore[arg-type]
        return taken[-1]

    before = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        program(*inputs)
        with threaded_moves.as_numpy():
            reference = program(*inputs)
        monkeypatch.setattr(threaded_moves, "index_select", spied)
        results = program(*inputs)
    finally:
        torch.set_num_threads(before)
    assert taken.count(True) == 2
    for result, numpy_form, value in zip(results, reference, eager, strict=True):
        assert np.array_equal(np.asarray(result), np.asarray(numpy_form))
        assert np.array_equal(np.asarray(result), value.numpy())
