"""Issue 30: forms of the generality classes that bench/heldout_sweep.py found refused
or wrong, each checked against eager (at -O0 or -O2) on inputs other than the example.

- Python numbers read with `.tolist()`/`.item()` and handed to tensor ops (`x * a + b`,
  an integer tensor times a float, `n > a`, `clamp(min=b)`): computed in the program as
  rank-0 tensors in the dtype torch computes the op in (`rducc.frontend.python_numbers`).
- Pointwise updates through a boolean mask (`y[mask] += 1`, `y[rows] = f(x[rows]) * w`):
  a `where` over the whole tensor, right for every mask, not only for the example's
  count (`rducc.frontend.masked_updates`).
- Rows picked by a boolean mask of two dims (`h[attention_mask.bool()]`) reduced by
  mean, amax, sum and a softmax-weighted contraction: padded to the recorded bound
  (`rducc.frontend.capacity`), right for every count, not only the example's.
- `torch.unique(sorted=True)` with counts and inverse (and `sorted=False`, which torch's
  CPU kernel sorts too), `repeat_interleave` by a tensor of repeats: compiled for the
  example's number of values (checked at run time: another is one error naming the op),
  as bincount is (`rducc.frontend.data_sizes`).
- Round 14: Python numbers combined by `max`/`min` and compared (`a > c`); a complex tensor
  made whole (`zeros_like(z)`, `full(..., 1j)`) and written through a slice (`w[:, :2] = ...`);
  tokens split twice by the same per-expert counts (JetMoE's two expert linears: the second
  split's input is the first's pieces joined, its length the counts' sum), padded to capacity.
- Round 15: complex `log`, `sqrt`, `tanh` (pair forms); numbers made into tensors by `full`,
  `torch.tensor`, `new_full`; positions by `argwhere` written back through both index columns
  (`out[w[:, 0], w[:, 1]] = ...`) with their count returned and used as a Scalar: padded to
  capacity, the count read at run time.
- Round 16: integers computed from floats read with `.item()` (`torch.sym_int(x.max().item() * 10)`)
  used as values (computed for every input) and as sizes (the example's, checked); complex64 and
  complex128 inputs combined, one result converted back by `.to`.
- Round 17: complex rsqrt, sigmoid, circular and hyperbolic functions, scans and products, and views
  with no pair rule of their own (each part alone); a window at a start read with `.item()`; `masked_select`
  reduced by var/std/norms and `torch.where`'s positions stacked, padded to capacity; `unique(dim=0)`.
- Round general21: complex asin, acos, atan, asinh, acosh, atanh (Kahan's forms), at -O0 and -O2.
- Complex `scatter_reduce`/`index_reduce` with 'prod' (polar form), include_self both ways, a zero,
  repeated indices, at -O0 and -O2.
- Layout ops and reductions on a complex model input (`z.sum(-1)`, `z.transpose`,
  `z[:, -2:]`, `z.flip(-1)`, `cat`) count its dims as torch does, not as its real pair's.
"""

from __future__ import annotations

import pytest
import torch
from torch import nn

import rducc
from rducc.dialects.rdu.checks import CheckOp
from rducc.errors import RduccError


def _randn(*shape: int, seed: int, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed), dtype=dtype)


def _assert_matches(got: object, want: object) -> None:
    got_leaves, want_leaves = torch.utils._pytree.tree_leaves(got), torch.utils._pytree.tree_leaves(want)
    assert len(got_leaves) == len(want_leaves)
    for g, w in zip(got_leaves, want_leaves):
        if isinstance(w, torch.Tensor):
            assert g.dtype == w.dtype, (g.dtype, w.dtype)
            torch.testing.assert_close(g, w, rtol=1e-5, atol=1e-5)
        else:
            assert type(g) is type(w) and g == pytest.approx(w, rel=1e-6), (g, w)


class NumbersIntoTensorOps(nn.Module):
    def forward(self, v: torch.Tensor, x: torch.Tensor, n: torch.Tensor):
        a, b, c = v.tolist()
        top = x.max().item()
        k = n[0].item() + n[-1].item()  # an int a tensor op takes as a value, not a size
        return x * a + b, n * (a - b) / c, n > a, torch.clamp(n.float(), min=b), x / top, a * b - c, x * k


class MaskedUpdates(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.w = nn.Parameter(torch.linspace(-1, 1, 3))

    def forward(self, x: torch.Tensor, keep: torch.Tensor):
        y = x.clone()
        rows = keep > 0.5
        y[rows] = torch.sigmoid(x[rows]) * self.w + y[rows].clamp(min=0)
        z = x.clone()
        z[x > 0] += 1.0
        u = x.clone()
        u.index_put_((x < -0.5,), x[x < -0.5] * 3, accumulate=True)
        return y, z, u


class ComplexInputLayout(nn.Module):
    def forward(self, z: torch.Tensor):
        return (z.sum(-1), z.transpose(0, 1) * 2, z[:, -2:], z.flip(-1), torch.cat([z, z.conj()], -1),
                z.select(-1, 0), z.mean(-1, keepdim=True))


class MaskedTokenRows(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.proj = nn.Linear(4, 4)

    def forward(self, h: torch.Tensor, attention_mask: torch.Tensor):
        rows = self.proj(h[attention_mask.bool()])
        return rows.mean(0), rows.amax(0), rows.softmax(0).T @ rows, rows.sum(0)


_TOKEN_MASKS = [torch.tensor([[1, 1, 1, 0, 0], [1, 1, 0, 0, 0]]), torch.tensor([[1, 1, 1, 1, 1], [1, 0, 0, 0, 0]]),
                torch.tensor([[0, 0, 0, 0, 0], [1, 1, 1, 1, 1]]), torch.ones(2, 5, dtype=torch.long)]


class UniqueAndRepeats(nn.Module):
    def forward(self, c: torch.Tensor, x: torch.Tensor, r: torch.Tensor):
        values, inverse, counts = torch.unique(c, sorted=True, return_inverse=True, return_counts=True)
        unordered = torch.unique(c.flip(0), sorted=False)  # torch's CPU kernel sorts it too
        return values * counts, inverse, torch.repeat_interleave(x, r, dim=0).cumsum(0), unordered - 1


class CountAndConjugateParts(nn.Module):
    """Round 13's refusals: the count of rows a nonzero picks returned as a number (`rows.numel()`, a
    size of a data-dependent result), and `z.conj().imag` (torch's lazily negated view, `_neg_view`)."""

    def forward(self, x: torch.Tensor, z: torch.Tensor):
        rows = (x.sum(1) > 0).nonzero()[:, 0]
        return x[rows].sum(0), rows.numel(), z.conj().imag, z.conj().real


class NumbersMaxMinCompare(nn.Module):
    def forward(self, n: torch.Tensor, x: torch.Tensor):
        a, b, c = n.tolist()
        return max(a, b) - min(b, c), x * max(a, c), a > c, (a + c) // b


class ComplexFilledAndWritten(nn.Module):
    def forward(self, z: torch.Tensor):
        w = torch.zeros_like(z)
        w[:, :2] = z[:, 1:3] * 2j
        return w + torch.full(z.shape, 1j), torch.ones_like(z).select_scatter(z[:, 0], 1, 3)


class SplitTwiceByCounts(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.gate = nn.Linear(4, 3)
        self.up, self.down = nn.Parameter(torch.randn(3, 4, 6)), nn.Parameter(torch.randn(3, 6, 4))

    def forward(self, x: torch.Tensor):
        expert = self.gate(x).argmax(-1)
        order = expert.argsort()
        sizes = torch.zeros(x.shape[0], 3).scatter(1, expert[:, None], 1).long().sum(0).tolist()
        hidden = torch.cat([p @ self.up[e] for e, p in enumerate(x[order].split(sizes))]).relu()
        out = torch.cat([p @ self.down[e] for e, p in enumerate(hidden.split(sizes))])
        return torch.zeros_like(x).index_copy(0, order, out)


class ComplexRootsAndLogs(nn.Module):
    """Round 15: complex log, sqrt and tanh (pair forms; sqrt's branch cut and signed zeros as torch's); the
    inverse circular and hyperbolic functions (Kahan's forms, each branch cut's side as torch's)."""

    def forward(self, z: torch.Tensor):
        return (torch.log(z), torch.sqrt(z), torch.tanh(z * 0.5), torch.sqrt(z.conj()), *_inverses(z))


def _inverses(z: torch.Tensor) -> tuple[torch.Tensor, ...]:
    return torch.asin(z), torch.acos(z), torch.atan(z), torch.asinh(z), torch.acosh(z), torch.atanh(z)


_COMPLEX_EDGES = torch.tensor([-4 + 0j, 0j, 3 + 4j, -1e-3 + 2e-3j, 1e4 - 1e-4j, -2 - 1e-20j, 2j, complex(-0.0, -2),
                               complex(2, -0.0), 0.5 + 0j], dtype=torch.complex64)
"""Branch cuts (either side, by the zero's sign), the origin, tiny and large values."""


class NumbersFillTensors(nn.Module):
    """Round 15: numbers read with `.item()` made into tensors (`torch.tensor`, `full`, `full_like`, `new_full`)."""

    def forward(self, n: torch.Tensor, x: torch.Tensor):
        a, b = n[0].item(), n[1].item()
        return (torch.tensor(a * b, dtype=torch.float32) + x, torch.full((2,), a - b), torch.full_like(x, a / b),
                x.new_full((3,), a > b), a * b + x.shape[1])


class ArgwhereWrittenBack(nn.Module):
    """Round 15: positions by argwhere written back through both index columns, their count returned
    and used as a Scalar: padded to the recorded bound, right for every count."""

    def forward(self, x: torch.Tensor):
        where = torch.argwhere(x > 0.5)
        out = torch.zeros_like(x)
        out[where[:, 0], where[:, 1]] = x[where[:, 0], where[:, 1]].sqrt()
        return out, where.shape[0], x * where.shape[0], where.shape[0] * 2 + 1


class NumbersFromFloatItems(nn.Module):
    """Round 16: integers computed from floats read with `.item()` (`torch.sym_int`): as a value, any
    input's (it was the example's before general16); as a size, the example's, checked."""

    def forward(self, x: torch.Tensor, y: torch.Tensor):
        k = torch.sym_int(x.abs().max().item() * 10)
        n = torch.sym_int(x.max().item() * 3)
        torch._check(n >= 1)
        torch._check(n <= 6)
        return y * k, y.narrow(0, 0, n).sum(0), k


class ComplexOfTwoPrecisions(nn.Module):
    """Round 16: complex64 and complex128 inputs combined, one result converted back by `.to`
    (its `_assert_tensor_metadata` on a complex value is dropped, as the importer drops it)."""

    def forward(self, z: torch.Tensor, w: torch.Tensor):
        return z * w.conj(), (z * 2j).to(torch.complex64), w.real.float()


class ComplexFunctionsAndScans(nn.Module):
    """Round 17: complex rsqrt, sigmoid, cos, sinh (the circular and hyperbolic table: sin and cosh are its other
    rows), tan, log10, log1p, expm1, z ** w, ==, isfinite (pair forms), cumsum, cumprod and prod (in polar form),
    a mean and a sum with a dtype, views with no pair rule of their own (diagonal, unfold, chunk's split) and
    scatter_add of complex into complex on each part."""

    def forward(self, z: torch.Tensor):
        gram, w = z.mH @ z, z.flip(0)
        index = torch.tensor([[0, 2, 2, 1], [3, 3, 0, 1], [1, 1, 1, 1]])
        return (torch.rsqrt(z), torch.sigmoid(z), torch.cos(z), torch.sinh(z), torch.tan(z * 0.5), z.cumsum(1),
                z.cumprod(1), z.prod(0), torch.diagonal(gram), z.unfold(1, 2, 1).sum(-1), torch.cat(z.chunk(2, 1)[::-1]),
                torch.log10(z), torch.log1p(z), torch.expm1(z), z == w.flip(0), torch.isfinite(z / w.real),
                w.scatter_add(1, index, z), torch.pow(z, w), z.mean(), z.sum(dtype=torch.complex128), *_inverses(z))


class CountedRowsAndWindows(nn.Module):
    """Round 17: a window at a start read with `.item()` (any start, a negative one from the end), `masked_select`
    reduced by std, var and norms and `torch.where`'s positions stacked and summed (padded to capacity: any count), unique rows with
    counts and inverse (the example's number of rows, checked); `masked_select` of a row broadcast against the
    whole mask (torch records the row's count as the bound: the broadcast's is the capacity)."""

    def forward(self, off: torch.Tensor, x: torch.Tensor, m: torch.Tensor, rows: torch.Tensor):
        start = off.item()
        picked = torch.masked_select(x, m)
        torch._check(picked.shape[0] > 0)
        _, inverse, counts = torch.unique(rows, dim=0, return_inverse=True, return_counts=True)
        return (x.narrow(1, start, 2), picked.std(), picked.var(), picked.norm(), torch.linalg.vector_norm(picked, 1),
                torch.stack(torch.where(x > 0.5), -1).sum(0), counts[inverse], torch.masked_select(x[0], m).sum())


def _counted_inputs(seed: int, start: int, rows: list[list[int]]) -> tuple[torch.Tensor, ...]:
    x = _randn(3, 5, seed=seed)
    return torch.tensor(start), x, _randn(3, 5, seed=seed + 1) > -0.3, torch.tensor(rows)


def _numbers_inputs(seed: int) -> tuple[torch.Tensor, ...]:
    return _randn(3, seed=seed) * 2, _randn(4, seed=seed + 1), torch.arange(-2, 2) + seed


def _masked_inputs(seed: int) -> tuple[torch.Tensor, ...]:
    return _randn(5, 3, seed=seed), torch.rand(5, generator=torch.Generator().manual_seed(seed + 1))


CASES = {
    "numbers": (NumbersIntoTensorOps, [_numbers_inputs(s) for s in (0, 2)]),
    "masked_updates": (MaskedUpdates, [_masked_inputs(s) for s in (0, 3, 6)]),
    "masked_token_rows": (MaskedTokenRows, [(_randn(2, 5, 4, seed=s), mask) for s, mask in enumerate(_TOKEN_MASKS)]),
    "unique_and_repeats": (UniqueAndRepeats, [
        (torch.tensor([[3, 1, 3], [2, 1, 1]]), _randn(4, 2, seed=0), torch.tensor([1, 0, 2, 1])),
        (torch.tensor([[0, 9, 4], [4, 4, 9]]), _randn(4, 2, seed=1), torch.tensor([0, 3, 0, 1]))]),
    "complex_input_layout": (ComplexInputLayout, [(_randn(3, 4, seed=s, dtype=torch.complex64),) for s in (0, 1)]),
    "numbers_max_min_compare": (NumbersMaxMinCompare, [(torch.tensor([7, 3, 12]), _randn(2, 3, seed=0)),
                                                       (torch.tensor([10, 4, 2]), _randn(2, 3, seed=1))]),
    "complex_filled_and_written": (ComplexFilledAndWritten,
                                   [(_randn(2, 4, seed=s, dtype=torch.complex64),) for s in (0, 1)]),
    "split_twice_by_counts": (SplitTwiceByCounts, [(_randn(8, 4, seed=s),) for s in (0, 1, 2, 3)]),
    "complex_roots_and_logs": (ComplexRootsAndLogs, [(_COMPLEX_EDGES,), (_randn(10, seed=1, dtype=torch.complex64),)]),
    "numbers_fill_tensors": (NumbersFillTensors, [(torch.tensor([4, 3]), _randn(2, 3, seed=0)),
                                                  (torch.tensor([1, 6]), _randn(2, 3, seed=1))]),
    "argwhere_written_back": (ArgwhereWrittenBack, [(_randn(4, 5, seed=s),) for s in (0, 1)]
                              + [(torch.zeros(4, 5),), (torch.ones(4, 5),)]),
    "count_and_conjugate_parts": (CountAndConjugateParts, [
        (torch.tensor([[1.0, 2.0], [-3.0, 0.5], [2.0, -1.0]]), _randn(3, seed=s, dtype=torch.complex64)) for s in (0, 1)]),
    "numbers_from_float_items": (NumbersFromFloatItems, [(torch.tensor([0.5, 1.2]), _randn(6, 2, seed=0)),
                                                         (torch.tensor([1.1, 0.2]), _randn(6, 2, seed=1))]),
    "complex_of_two_precisions": (ComplexOfTwoPrecisions, [(_randn(3, 4, seed=s, dtype=torch.complex64),
                                                            _randn(3, 4, seed=s + 1, dtype=torch.complex128))
                                                           for s in (0, 2)]),
    "complex_functions_and_scans": (ComplexFunctionsAndScans,
                                    [(_randn(3, 4, seed=s, dtype=torch.complex64),) for s in (0, 1)]),
    "counted_rows_and_windows": (CountedRowsAndWindows, [
        _counted_inputs(0, 1, [[1, 2], [3, 4], [1, 2], [1, 2]]), _counted_inputs(3, 3, [[0, 0], [0, 0], [5, 1], [0, 0]]),
        _counted_inputs(6, -2, [[2, 2], [1, 1], [1, 1], [2, 2]])]),
}


LEVELS = {"numbers": 0, "masked_updates": 2, "masked_token_rows": 0, "unique_and_repeats": 2,
          "complex_input_layout": 0, "count_and_conjugate_parts": 2, "numbers_max_min_compare": 0,
          "complex_filled_and_written": 0, "split_twice_by_counts": 0, "complex_roots_and_logs": 2,
          "numbers_fill_tensors": 0, "argwhere_written_back": 0, "numbers_from_float_items": 2,
          "complex_of_two_precisions": 0, "complex_functions_and_scans": 0, "counted_rows_and_windows": 2}
"""One -O level per case, to keep the suite fast (each mechanism is the frontend's, the same
at every level); bench/heldout_sweep.py runs every form at -O0 and -O2."""


@pytest.mark.parametrize(("name", "opt_level"), sorted(LEVELS.items()))
def test_heldout_form_matches_eager(name: str, opt_level: int) -> None:
    assert set(LEVELS) == set(CASES)
    module_class, inputs = CASES[name]
    torch.manual_seed(0)
    module = module_class().eval()
    program = rducc.compile(module, inputs[0], opt_level=opt_level)
    for args in inputs:
        with torch.no_grad():
            _assert_matches(program(*args), module(*args))
    if name == "masked_token_rows":  # padded to the bound: checks that the count fits, none of the example's count
        text = str(program.module)
        assert "capacity of 10 compiled for" in text and "example's value" not in text
    if name == "unique_and_repeats":
        c, x, r = inputs[0]
        with pytest.raises(RduccError, match=r"'_unique2': the input holds another number of distinct values "
                                             r"than the 3 compiled for"):
            program(torch.tensor([[1, 2, 3], [4, 5, 6]]), x, r)
        with pytest.raises(RduccError, match="'repeat_interleave': the repeats sum to another length than the 4"):
            program(c, x, torch.tensor([1, 1, 1, 2]))
    if name in ("count_and_conjugate_parts", "argwhere_written_back"):  # a returned count is read at run time
        assert "example's value" not in str(program.module)
        other = (torch.ones(3, 2), inputs[0][1]) if name == "count_and_conjugate_parts" else (torch.ones(4, 5),)
        with torch.no_grad():
            _assert_matches(program(*other), module(*other))
    if name == "split_twice_by_counts":  # padded to capacity, right for every routing, not only the example's
        assert "a split size exceeds the capacity of 8 compiled for" in str(program.module)
        with torch.no_grad():
            routes = {tuple(torch.bincount(module.gate(x).argmax(-1), minlength=3).tolist()) for (x,) in inputs}
        assert len(routes) > 2, "the inputs must route other counts than the example's"
    if name == "numbers_from_float_items":  # the size is the example's: another one is one error naming the op
        with pytest.raises(RduccError, match=r"'slice': the size computed from max_\d\.item\(\) is not 3 in "
                                             r"`return y \* k, y\.narrow\(0, 0, n\)\.sum\(0\), k`"):
            program(torch.tensor([0.5, 0.4]), inputs[0][1])
    if name == "counted_rows_and_windows":  # the window and the selections hold for any count; rows do not
        assert len({int(x.gt(0.5).sum()) for _, x, _, _ in inputs} | {int(m.sum()) for _, _, m, _ in inputs}) > 2
        off, x, m, _ = inputs[0]
        with pytest.raises(RduccError, match="'unique_dim': the input holds another number of distinct slices"):
            program(off, x, m, torch.tensor([[1, 2], [3, 4], [5, 6], [1, 2]]))
        for outside in (4, -6):  # eager's narrow raises; the window is never clamped into range
            with pytest.raises(RduccError, match=r"'slice': the start read with \.item\(\) puts the window of 2 "
                                                 "outside the 5 elements along dim 1"):
                program(torch.tensor(outside), x, m, inputs[0][3])
        # `torch._check(picked.shape[0] > 0)`, recorded as `>= 1` and `0 <` (the counts' upper bounds restated
        # are the capacity's, `masked_select(x[0], m)`'s short of its broadcast count): one check
        kept = [op for op in program.module.walk() if isinstance(op, CheckOp) and "does not hold" in str(op)]
        assert len(kept) == 1, [str(op) for op in kept]
        with pytest.raises(RduccError, match=r"the condition \w+\.shape\[0\] >= 1 does not hold"):
            program(off, x, torch.zeros_like(m), inputs[0][3])
    if name == "masked_updates":  # no count compiled for the example, no condition torch's range of a mask's
        # count restates (`index.shape[0] <= 5` for a mask of 5): nothing to check at run time
        assert not any(isinstance(op, CheckOp) for op in program.module.walk())
        counts = {int((keep > 0.5).sum()) for _, keep in inputs} | {int((x > 0).sum()) for x, _ in inputs}
        assert len(counts) > 2, "the inputs must select other counts than the example's"



class ComplexScatterReduces(nn.Module):
    """Issue 30: complex scatter_reduce and index_reduce with 'prod' (polar form: moduli multiplied, angles summed),
    include_self both ways, repeated indices, a position no index writes; 'sum' and 'mean' on each part. With
    `eager_index`, index_reduce is written as the scatter_reduce it means (torch's CPU kernel has no complex
    index_reduce): the reference."""

    def __init__(self, eager_index: bool = False) -> None:
        super().__init__()
        self.eager_index = eager_index

    def _index_reduce(self, z: torch.Tensor, index: torch.Tensor, w: torch.Tensor, include_self: bool) -> torch.Tensor:
        if self.eager_index:
            return z.scatter_reduce(0, index[:, None].expand(w.shape), w, "prod", include_self=include_self)
        return z.index_reduce(0, index, w, "prod", include_self=include_self)

    def forward(self, z: torch.Tensor, w: torch.Tensor):
        rows, slots = torch.tensor([0, 2, 0, 0]), torch.tensor([[0, 2, 2], [0, 0, 1], [2, 0, 2], [0, 0, 0]])
        return (z.scatter_reduce(1, slots, w[:, :3], "prod"), z.scatter_reduce(1, slots, w[:, :3], "prod",
                                                                               include_self=False),
                self._index_reduce(z, rows, w, True), self._index_reduce(z, rows, w, False),
                z.scatter_reduce(1, slots, w[:, :3], "mean", include_self=False), z.scatter_reduce(0, slots, w, "sum"))


def _with_zeros(z: torch.Tensor) -> torch.Tensor:
    z = z.clone()
    z[0, 0], z[3, 1] = 0, 0
    return z


@pytest.mark.parametrize("opt_level", [0, 2])
def test_complex_scatter_reduce_prod_matches_eager(opt_level: int) -> None:
    inputs = [(_randn(4, 4, seed=s, dtype=torch.complex64), _randn(4, 4, seed=s + 1, dtype=torch.complex64))
              for s in (0, 2)]
    inputs.append(tuple(map(_with_zeros, inputs[0])))
    program = rducc.compile(ComplexScatterReduces(), inputs[0], opt_level=opt_level)
    for args in inputs:
        _assert_matches(program(*args), ComplexScatterReduces(eager_index=True)(*args))

