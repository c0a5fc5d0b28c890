"""Indices outside the table are errors at run time, as in eager, never a
silent numpy wrap to the last row (issue 20 item 5, issue 17 item 8).

Each family of indexing op runs at -O0 and -O2 on indices eager accepts
(negative ones included where eager takes them: advanced indexing, take,
index_put, index_fill) and must match eager; on indices eager refuses it must
raise an RduccError naming the op. Fresh memory read as an index fails the
bounds check too (the poison bytes are out of range in every integer type).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest
import torch

import rducc
from rducc.errors import RduccError
from rducc.runtime import kernels

TABLE = torch.arange(20.0).reshape(5, 4)


class Indexing(torch.nn.Module):
    def __init__(self, fn: Callable[[torch.Tensor, torch.Tensor], torch.Tensor]):
        super().__init__()
        self.fn = fn
        self.register_buffer("table", TABLE.clone())

    def forward(self, index: torch.Tensor) -> torch.Tensor:
        return self.fn(self.table, index)


FAMILIES: dict[str, tuple[Callable[[torch.Tensor, torch.Tensor], torch.Tensor], bool]] = {
    # name: (the op, whether eager takes a negative index)
    "embedding": (lambda t, i: torch.nn.functional.embedding(i, t), False),
    "index_select": (lambda t, i: torch.index_select(t, 0, i), False),
    "gather": (lambda t, i: torch.gather(t, 0, i.reshape(-1, 1).expand(-1, 4)), False),
    "index": (lambda t, i: t[i], True),
    "index_2d": (lambda t, i: t[i, i.clamp(-4, 3)], True),
    "take": (lambda t, i: torch.take(t, i * 4), True),
    "index_put": (lambda t, i: t.index_put((i,), torch.tensor(-1.0)), True),
    "index_fill": (lambda t, i: t.index_fill(0, i, -1.0), True),
    "scatter": (lambda t, i: t.scatter(0, i.reshape(-1, 1), torch.ones(len(i), 1)), False),
    "scatter_add": (lambda t, i: t.scatter_add(0, i.reshape(-1, 1), torch.ones(len(i), 1)), False),
    "index_add": (lambda t, i: t.index_add(0, i, torch.ones(len(i), 4)), False),
    "index_copy": (lambda t, i: t.index_copy(0, i, torch.ones(len(i), 4)), False),
    "embedding_bag": (lambda t, i: torch.nn.functional.embedding_bag(i, t, torch.tensor([0, 1])), False),
}
EXAMPLE = torch.tensor([3, 1, 2])
NEGATIVE = torch.tensor([0, -1, -5])
PAST_THE_END = torch.tensor([0, 5, 1])
BELOW = torch.tensor([0, -6, 1])


@pytest.fixture(scope="module")
def exported() -> dict[str, torch.export.ExportedProgram]:
    """Each family exported once, compiled at both levels."""
    return {name: torch.export.export(Indexing(fn), (EXAMPLE,)) for name, (fn, _) in FAMILIES.items()}


@pytest.fixture(scope="module", params=[0, 2], ids=["O0", "O2"])
def programs(request, exported) -> dict[str, rducc.Program]:
    return {name: rducc.compile(program, opt_level=request.param) for name, program in exported.items()}


def _eager(name: str, index: torch.Tensor) -> torch.Tensor:
    return FAMILIES[name][0](TABLE, index)


@pytest.mark.parametrize("name", FAMILIES)
def test_in_range_indices_match_eager(programs, name: str) -> None:
    index = NEGATIVE if FAMILIES[name][1] else EXAMPLE
    torch.testing.assert_close(programs[name](index), _eager(name, index))


@pytest.mark.parametrize("name", FAMILIES)
@pytest.mark.parametrize("index", [PAST_THE_END, BELOW], ids=["past_the_end", "below"])
def test_out_of_range_indices_are_errors_as_in_eager(programs, name: str, index: torch.Tensor) -> None:
    _errors_as_in_eager(programs[name], name, index)


@pytest.mark.parametrize("name", FAMILIES)
def test_negative_indices_as_in_eager(programs, name: str) -> None:
    _errors_as_in_eager(programs[name], name, NEGATIVE)


def _errors_as_in_eager(program: rducc.Program, name: str, index: torch.Tensor) -> None:
    """An RduccError where eager raises; eager's result where it does not."""
    try:
        expected = _eager(name, index)
    except (IndexError, RuntimeError):
        with pytest.raises(RduccError, match=r"out of (bounds|range)"):
            program(index)
    else:
        torch.testing.assert_close(program(index), expected)


@pytest.mark.parametrize("dtype", [np.int16, np.int32, np.int64])
def test_poison_read_as_an_index_fails_the_bounds_check(dtype) -> None:
    never_written = kernels.poisoned((3,), np.dtype(dtype))
    with pytest.raises(RduccError, match=r"never written: the bytes are the poison"):
        kernels.gather(TABLE.numpy(), [never_written], 0, wraps=True)


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_poison_is_nan_in_floats(dtype) -> None:
    assert np.isnan(kernels.poisoned((4,), np.dtype(dtype))).all()
