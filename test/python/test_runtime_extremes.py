"""A map body's maximum or minimum against a constant as torch's kernel
(`rducc.runtime.extremes`, issue 32): NumPy's bits (its NaN, its zero on a
tie), at one thread and on torch's pool, and the body runs it there (a ReLU
after a batch norm, a clamp)."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest
import torch

import rducc
from rducc.runtime import extremes, map_body

SPECIALS = [0.0, -0.0, np.inf, -np.inf, 1.0, -1.0, 6.0, -1.5, 5e-324, -5e-324, 1e-40, -1e-40]
NAN_BITS = {np.float32: [0x7FC00000, 0x7FC02345, 0xFFC00000], np.float64: [0x7FF8000000000000, 0xFFF8000000000001]}


def _values(dtype: type, size: int) -> np.ndarray:
    """`size` values: random ones, the specials, NaNs with payloads and signs."""
    bits = np.uint32 if dtype == np.float32 else np.uint64
    nans = np.array(NAN_BITS[dtype], dtype=bits).view(dtype)
    values = np.random.default_rng(0).normal(size=size).astype(dtype) * 4
    special = np.concatenate([np.array(SPECIALS, dtype=dtype), nans])
    values[::7][: size // 7] = np.resize(special, size // 7 + 1)[: size // 7]
    return values


def _bits(x: np.ndarray) -> np.ndarray:
    return x.view(np.uint32 if x.dtype == np.float32 else np.uint64)


@pytest.fixture()
def two_threads() -> Iterator[None]:
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    yield
    torch.set_num_threads(before)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize(("extreme", "constant_first"), sorted(extremes.KINDS))
@pytest.mark.parametrize("constant", [0.0, -0.0, 6.0, -1.5])
@pytest.mark.usefixtures("two_threads")
def test_against_constant_gives_numpys_bits(dtype: type, extreme: str, constant_first: bool, constant: float) -> None:
    """Where `usable` holds, torch's kernel gives the ufunc's bits: a new
    array, into another, and in place; where it does not (a minimum of an
    array and a zero: torch keeps the array's zero on a tie), it is not used."""
    k = dtype(constant)
    ufunc = getattr(np, extreme)
    x = _values(dtype, 3 * extremes.TORCH_EXTREME_ELEMENTS + 5)
    expected = ufunc(k, x) if constant_first else ufunc(x, k)
    usable = extremes.usable(extreme, constant_first, k)
    assert usable == (extreme == "maximum" or constant_first or constant != 0.0)
    if not usable:
        return
    run = extremes.against_constant(extreme, constant_first)
    operands = (k, x) if constant_first else (x, k)
    np.testing.assert_array_equal(_bits(run(*operands)), _bits(expected))
    out = np.full_like(x, 7.0)
    assert run(*operands, out=out) is out
    np.testing.assert_array_equal(_bits(out), _bits(expected))
    inplace = x.copy()
    run(*((k, inplace) if constant_first else (inplace, k)), out=inplace)
    np.testing.assert_array_equal(_bits(inplace), _bits(expected))


class _Activations(torch.nn.Module):
    """A batch norm's affine map and its ReLU, a ReLU6, a clamp from above, a
    hard swish: each a map body's maximum or minimum of a value and a constant."""

    def __init__(self) -> None:
        super().__init__()
        self.scale = torch.nn.Parameter(torch.randn(16, 1, 1))
        self.shift = torch.nn.Parameter(torch.randn(16, 1, 1))

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        affine = x * self.scale + self.shift
        return (torch.relu(affine), torch.nn.functional.relu6(x), torch.clamp(x, max=0.5),
                torch.nn.functional.hardswish(x))


def _program(model: torch.nn.Module, inputs: tuple) -> rducc.Program:
    with torch.no_grad():
        program = rducc.compile(torch.export.export(model, inputs), opt_level=2)
        program(*inputs)  # the map bodies are compiled now
    return program


def _sources(program: rducc.Program) -> str:
    return "\n".join(map_body.compile_map(op).source for op in program.module.walk()  # type: ignore[attr-defined]
                     if op.name == "rdu.map")


def _results(program: rducc.Program, inputs: tuple) -> list[np.ndarray]:
    with torch.no_grad():
        return [np.asarray(r) for r in program(*inputs)]


@pytest.mark.usefixtures("two_threads")
def test_relu_and_clamps_run_torchs_kernel_with_numpys_bits() -> None:
    """The bodies' extremes against constants are torch's kernels (no NumPy
    maximum or minimum left), and the results are the NumPy bodies' bit for
    bit at one thread and two (zeros of both signs, NaNs and infinities
    planted), and eager's values."""
    torch.manual_seed(0)
    model = _Activations().eval()
    x = torch.randn(1, 16, 40, 40) * 3
    flat = x.view(-1)
    flat[::97] = -0.0
    flat[5::97] = 0.0
    flat[11::389] = float("nan")
    flat[13::389] = float("inf")
    flat[17::389] = -float("inf")
    with map_body.extremes_as_numpy():
        before = _program(model, (x,))
        assert "np.maximum(" in _sources(before)
    after = _program(model, (x,))
    sources = _sources(after)
    assert "np.maximum(" not in sources and "np.minimum(" not in sources
    assert "_tx.maximum_right(" in sources and "_tx.minimum_right(" in sources
    with torch.no_grad():
        expected = model(x)
    for count in (1, 2):
        torch.set_num_threads(count)
        for got, old, eager in zip(_results(after, (x,)), _results(before, (x,)), expected, strict=True):
            np.testing.assert_array_equal(_bits(got), _bits(old))
            torch.testing.assert_close(torch.from_numpy(got), eager, equal_nan=True, rtol=1e-6, atol=1e-6)
    torch.set_num_threads(2)
