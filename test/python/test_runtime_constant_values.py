"""Values of constants and shapes alone computed once, rolls as slice copies
(`rducc.runtime.constant_values`, issue 32): after a compute's first run the
constant ops no longer run (a value some other op reads is a kept copy,
bound), a gather whose constant index is a rotated range copies two slices,
the bits stay eager's, and a value of a buffer (which the user can change)
is never kept."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator

import numpy as np
import pytest
import torch

import rducc
from rducc.runtime import constant_values, interpreter


class _ShiftedWindows(torch.nn.Module):
    """A mask of `arange`s and comparisons (Swin's), two rolls, and a value of
    a buffer beside an `arange` (not constant: the user can change it)."""

    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("offset", torch.zeros(12))

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        rows = torch.arange(12)
        groups = (rows >= 8).to(torch.int64) + (rows >= 10).to(torch.int64)
        mask = (groups[:, None] - groups[None, :]).to(torch.float32)
        mask = mask.masked_fill(mask != 0, -100.0).masked_fill(mask == 0, 0.0)
        rolled = torch.roll(x, shifts=(-5, 3), dims=(1, 2))
        return rolled + mask, torch.roll(self.offset + rows.to(torch.float32), 1, 0), mask * 2


@pytest.fixture(scope="module")
def compiled() -> Iterator[tuple[torch.nn.Module, torch.Tensor, rducc.Program]]:
    """The model, its input and its program (one compile for the module's tests)."""
    torch.manual_seed(0)
    model = _ShiftedWindows().eval()
    x = torch.randn(3, 12, 12)
    with torch.no_grad():
        yield model, x, rducc.compile(torch.export.export(model, (x,)), opt_level=2)


def _steps_of_a_call(program: rducc.Program, x: torch.Tensor) -> Counter[tuple[str, str]]:
    """(step name, op name) of each step one call runs."""
    seen: Counter[tuple[str, str]] = Counter()
    plain = interpreter.run_steps

    def counting(steps: list, env: list, context: object, where: str) -> None:
        seen.update((getattr(step, "__name__", ""), op.name) for step, op in steps)
        plain(steps, env, context, where)

    interpreter.run_steps = counting
    try:
        with torch.no_grad():
            program(x)
    finally:
        interpreter.run_steps = plain
    return seen


def _results(program: rducc.Program, x: torch.Tensor) -> list[np.ndarray]:
    with torch.no_grad():
        return [np.asarray(r) for r in program(x)]


def test_constants_run_once_and_rolls_copy_slices(compiled: tuple) -> None:
    """From the second call no iota runs and no gather gathers (the rolls copy
    slices), a constant value read elsewhere is bound or copied; the results
    are eager's bit for bit, call after call, at one thread and two."""
    model, x, program = compiled
    first = _results(program, x)
    later = _steps_of_a_call(program, x)
    assert not [key for key in later if key[1] == "rdu.iota" and key[0] not in ("_noop", "constant")], later
    assert later[("rolled_gather", "rdu.gather")] == 3, later
    assert later[("constant", "rdu.map")] >= 1, later  # kept and bound
    assert later[("copied_constant", "rdu.map")] == 1, later  # `mask * 2`, yielded: kept and copied into its output
    with torch.no_grad():
        expected = [t.numpy() for t in model(x)]
    for count in (1, 2):
        torch.set_num_threads(count)
        for got in (first, _results(program, x), _results(program, x)):
            for value, eager in zip(got, expected, strict=True):
                np.testing.assert_array_equal(value, eager)
    torch.set_num_threads(1)


def test_a_buffer_is_not_a_constant(compiled: tuple) -> None:
    """A value of a buffer and an `arange` (rolled: a value other ops read)
    follows the buffer as the user changes it between calls: nothing of it
    is kept."""
    _, x, after = compiled
    _results(after, x)
    (name,) = [n for n in after.weights if "offset" in n]
    after.weights[name] = np.full(12, 5.0, np.float32)
    try:
        np.testing.assert_array_equal(_results(after, x)[1], np.roll(np.arange(12, dtype=np.float32) + 5.0, 1))
    finally:
        after.weights[name] = np.zeros(12, np.float32)
    np.testing.assert_array_equal(_results(after, x)[1], np.roll(np.arange(12, dtype=np.float32), 1))


@pytest.mark.parametrize(("index", "size", "wraps", "found"), [
    ([3, 4, 0, 1, 2], 5, False, (3, 5)),  # torch.roll by 2
    ([1, 2, 3], 5, False, (1, 3)),  # a slice
    ([-2, -1, 0], 5, True, (3, 3)),  # negative rows counting from the end
    ([0, 1, 2, 3, 4], 5, False, (0, 5)),
    ([4, 0, 1, 2, 3, 4], 5, False, None),  # longer than the dim
    ([0, 2, 4], 5, False, None),  # a stride
    ([2, 1, 0], 5, False, None),  # reversed
    ([-1, 0], 5, False, None),  # a negative row without `wraps`
    ([[0, 1], [2, 3]], 5, False, None),  # not 1-d
])
def test_rotated_range(index: list, size: int, wraps: bool, found: tuple[int, int] | None) -> None:
    assert constant_values.rotated_range(np.array(index, np.int64), size, wraps) == found
