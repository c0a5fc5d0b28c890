"""Issue 30: sizes torch.export leaves to the data, compiled for the example's
values and checked at run time (`rducc.frontend.data_sizes`).

Each form matches eager at -O0 and -O2 on the example and on other inputs
that give the same sizes; inputs that give another size are one RduccError
naming the torch op and the source line, never a result of another size.
`tensor_split` by a tensor of split points is padded instead (its slices'
bounds are read at run time: `rducc.frontend.capacity`): any split points.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
import torch
from data_sized_op import positives
from torch import nn

import rducc
from rducc.errors import RduccError


class Bincount(nn.Module):
    def forward(self, x: torch.Tensor, w: torch.Tensor):
        return torch.bincount(x, minlength=6), torch.bincount(x, weights=w, minlength=3) * 2


class MaskSelect(nn.Module):
    """Boolean masks selecting rows and elements, the positions of nonzeros, and their number
    taken as a value (`sum * count`: the example's count, as the op making it is checked)."""

    def forward(self, x: torch.Tensor, mask: torch.Tensor):
        rows, picked = x[mask] * 2, torch.masked_select(x, x > 0)
        found = torch.nonzero(mask)
        return rows, picked, found, x.sum(0) * found.shape[0]


class MaskPut(nn.Module):
    """`x[mask] = rows` (one row per selected element), accumulated, and through `_index_put_impl_`."""

    def forward(self, x: torch.Tensor, mask: torch.Tensor, rows: torch.Tensor):
        y = x.clone()
        y[mask] = rows
        added = torch.index_put(x, (mask,), rows, accumulate=True)
        impl = torch.ops.aten._index_put_impl_(x.clone(), (mask,), rows, True, False)
        return y, added, impl


class ReadSizes(nn.Module):
    """Sizes and starts read with `.item()`, with arithmetic on them."""

    def forward(self, x: torch.Tensor, sizes: torch.Tensor):
        rows, start = sizes[0].item(), sizes[1].item()
        return x.view(rows, -1) + 1, x.narrow(1, start, 2) * 3, x.new_zeros(rows * 2)


class SplitByCounts(nn.Module):
    """Mixture-of-experts dispatch: tokens sorted by expert, split by per-expert counts."""

    def __init__(self, experts: int = 3, width: int = 4) -> None:
        super().__init__()
        self.experts = nn.ModuleList(nn.Linear(width, width) for _ in range(experts))

    def forward(self, tokens: torch.Tensor, choice: torch.Tensor):
        order = torch.argsort(choice, stable=True)
        counts = (choice[:, None] == torch.arange(len(self.experts))).sum(0)
        groups = tokens[order].split(counts.tolist())
        out = torch.cat([expert(group) for expert, group in zip(self.experts, groups)])
        return torch.zeros_like(out).index_copy(0, order, out)


class RunsAndSplits(nn.Module):
    """unique_consecutive flat and along a dim (inverse, counts), and tensor_split by a tensor of
    indices (traced as slices whose bounds are read with .item())."""

    def forward(self, x: torch.Tensor, cuts: torch.Tensor):
        flat = torch.unique_consecutive(x, return_inverse=True, return_counts=True)
        rows = torch.unique_consecutive(x, dim=0, return_counts=True)
        parts = torch.tensor_split(x.float(), cuts, dim=1)
        return flat, rows, [part.sum(1) for part in parts]


class OlderUnique(nn.Module):
    """torch's older `_unique` overload (`torch._unique`: values and inverse, no counts), by
    position and by keyword, and its default (no inverse) of a 2-D input."""

    def forward(self, x: torch.Tensor):
        values, inverse = torch._unique(x, True, True)
        keyword = torch._unique(x.flip(0), sorted=True, return_inverse=True)
        return values * 2, inverse, keyword, torch._unique(x.view(2, -1))[0].float().mean()


def _generator() -> torch.Generator:
    return torch.Generator().manual_seed(30)


def _rows(*shape: int) -> torch.Tensor:
    return torch.randn(*shape, generator=_generator())


MASK = torch.tensor([True, False, True, True, False, False, True, False])
SAME_COUNT = torch.tensor([False, True, True, False, True, False, False, True])
OTHER_COUNT = torch.tensor([True, True, True, True, False, False, True, False])

Case = tuple[Callable[[], nn.Module], tuple, tuple, tuple, str]
"""(module, example inputs, other inputs of the same sizes, inputs of another size, the op the error names)"""
CASES: dict[str, Case] = {
    "bincount": (Bincount, (torch.tensor([0, 1, 1, 3, 2, 1, 7, 0]), _rows(8)),
                 (torch.tensor([7, 7, 2, 0, 0, 1, 1, 1]), _rows(8) + 1),
                 (torch.tensor([0, 1, 1, 3, 2, 1, 8, 0]), _rows(8)), "bincount"),
    "mask_select": (MaskSelect, (_rows(8, 5), MASK), (_rows(8, 5), SAME_COUNT),
                    (_rows(8, 5), OTHER_COUNT), "index"),
    "mask_put": (MaskPut, (_rows(8, 5), MASK.clone(), _rows(4, 5)), (_rows(8, 5) * 2, SAME_COUNT.clone(), _rows(4, 5)),
                 (_rows(8, 5), OTHER_COUNT.clone(), _rows(4, 5)), "index_put"),
    "read_sizes": (ReadSizes, (_rows(8, 5), torch.tensor([4, 1])), (_rows(8, 5) - 1, torch.tensor([4, 1])),
                   (_rows(8, 5), torch.tensor([5, 1])), "view"),
    "runs_and_splits": (RunsAndSplits, (torch.tensor([[3, 1, 1], [3, 1, 1], [2, 2, 0]]), torch.tensor([1, 2])),
                        (torch.tensor([[5, 0, 0], [5, 0, 0], [1, 2, 2]]), torch.tensor([1, 2])),
                        (torch.tensor([[3, 1, 1], [3, 0, 1], [2, 2, 0]]), torch.tensor([1, 2])),
                        "unique_consecutive"),
    "older_unique": (OlderUnique, (torch.tensor([4, 1, 2, 4, 1, 9]),), (torch.tensor([0, 0, -3, 7, 7, 5]),),
                     (torch.tensor([4, 1, 2, 4, 1, 1]),), "_unique"),
    # per-expert counts other than the example's fit the capacity (test_capacity.py); a token routed
    # to no expert leaves the split's sizes short of its input, an error
    "moe_split": (SplitByCounts, (_rows(6, 4), torch.tensor([2, 0, 1, 2, 2, 0])),
                  (_rows(6, 4) + 1, torch.tensor([0, 2, 2, 1, 0, 2])),
                  (_rows(6, 4), torch.tensor([2, 2, 1, 3, 2, 0])), "split_with_sizes"),
}


def _assert_matches(got, want) -> None:
    got_leaves, want_leaves = torch.utils._pytree.tree_leaves(got), torch.utils._pytree.tree_leaves(want)
    assert len(got_leaves) == len(want_leaves)
    for g, w in zip(got_leaves, want_leaves):
        assert g.dtype == w.dtype and g.shape == w.shape
        torch.testing.assert_close(g, w, rtol=1e-5, atol=1e-5)


class AllCases(nn.Module):
    """Every case in one program (one export and compile for all)."""

    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.cases = nn.ModuleList(make() for make, *_ in CASES.values())

    def forward(self, *xs: torch.Tensor) -> tuple[object, ...]:
        results, start = [], 0
        for module, (_, example, *_) in zip(self.cases, CASES.values()):
            results.append(module(*xs[start:start + len(example)]))
            start += len(example)
        return tuple(results)


def _inputs(replaced: str | None = None, kind: int = 1) -> tuple[torch.Tensor, ...]:
    """Every case's example inputs (`kind` 1), or `replaced`'s of that kind (2: same sizes, 3: others)."""
    return tuple(t for name, case in CASES.items() for t in case[kind if name == replaced else 1])


@pytest.mark.parametrize("opt_level", [0, 2])
def test_data_sizes_match_eager_and_other_sizes_are_errors(opt_level: int) -> None:
    module = AllCases().eval()
    program = rducc.compile(module, _inputs(), opt_level=opt_level)
    same = tuple(t for case in CASES.values() for t in case[2])
    for inputs in (_inputs(), same):
        _assert_matches(program(*inputs), module(*inputs))
    for name, (*_, op) in CASES.items():
        with pytest.raises(RduccError) as error:
            program(*_inputs(name, 3))
        message = str(error.value)
        assert len(message.splitlines()) == 1, name
        assert f"'{op}': " in message and "test_data_sizes.py:" in message and "compiled for" in message, name
    inputs = list(_inputs())
    at = sum(len(case[1]) for case in list(CASES.values())[:list(CASES).index("runs_and_splits")])
    for cuts in ([2, 2], [0, 3], [2, 1], [-1, 5]):  # other split points: the slices' bounds read at run time,
        inputs[at + 1] = torch.tensor(cuts)  # as Python slices (empty, reversed, negative, past the end)
        _assert_matches(program(*inputs), module(*inputs))


def test_a_size_op_without_a_static_form_stays_one_clear_error() -> None:
    class Positives(nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return positives(x) * 2

    with pytest.raises(RduccError, match=r"test_data_sizes.py.*data-dependent shape on 'positives'"):
        rducc.compile(Positives(), (torch.tensor([3.0, -1.0, 2.0]),), opt_level=0)


class SizesOnly(nn.Module):
    """Data-dependent results read only by their sizes, taken as numbers: bincount's length and
    unique's count."""

    def forward(self, c: torch.Tensor, y: torch.Tensor):
        return y * torch.bincount(c).shape[0], y / torch.unique(c).shape[0]


def test_a_result_read_only_by_its_size_is_still_checked() -> None:
    """The result's check must run although only its size is used (it was dead code, and another input
    gave the example's size silently): another length is one error naming the op and its line."""
    program = rducc.compile(torch.export.export(SizesOnly(), (torch.tensor([0, 2, 1]), torch.ones(3))), opt_level=0)
    torch.testing.assert_close(program(torch.tensor([2, 0, 1]), torch.ones(3)),
                               SizesOnly()(torch.tensor([2, 0, 1]), torch.ones(3)))
    with pytest.raises(RduccError, match=r"'bincount': the input gives another length than the 3 compiled for"):
        program(torch.tensor([0, 5, 1]), torch.ones(3))
    with pytest.raises(RduccError, match=r"test_data_sizes\.py:\d+:\d+: '_unique2': the input holds another "
                                         r"number of distinct values than the 3 compiled for"):
        program(torch.tensor([0, 0, 2]), torch.ones(3))
