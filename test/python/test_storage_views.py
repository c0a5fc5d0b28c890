"""Issue 30: storage views. `view.dtype` reads the same bits as another type
(of the same, a smaller or a larger element size), `as_strided` reads the real
storage of a channels-last input or parameter, the `prims` reductions
`run_decompositions()` keeps compile, and `resize_`/`resize_as_` to as many
elements or fewer reads a contiguous tensor's first elements. Each against eager at -O0 and -O2.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest
import torch
from torch import nn

import rducc
from rducc.errors import UnsupportedOpsError


class Fn(nn.Module):
    def __init__(self, fn: Callable[..., object]) -> None:
        super().__init__()
        self.fn = fn

    def forward(self, *xs: torch.Tensor) -> object:
        return self.fn(*xs)


class StridedWeight(nn.Module):
    """A channels-last parameter read through `as_strided` with its own strides."""

    def __init__(self) -> None:
        super().__init__()
        weight = torch.randn(2, 3, 2, 2, generator=torch.Generator().manual_seed(3))
        self.weight = nn.Parameter(weight.to(memory_format=torch.channels_last))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        w = self.weight
        hwc = w.as_strided((2, 2, 2, 3), (w.stride(0), w.stride(2), w.stride(3), w.stride(1)))
        return x * hwc


def _floats(*shape: int, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    return torch.randn(*shape, generator=torch.Generator().manual_seed(30)).to(dtype)


def _channels_last() -> torch.Tensor:
    return _floats(2, 3, 4, 4).to(memory_format=torch.channels_last)


PRIMS = torch.ops.prims

CASES: dict[str, tuple[nn.Module, tuple[torch.Tensor, ...]]] = {
    "f32_as_i32": (Fn(lambda x: x.view(torch.int32) & 0x7FFFFF), (_floats(4, 3),)),
    "i32_as_f32": (Fn(lambda x: x.view(torch.float32) * 2), (torch.arange(0x3F000000, 0x3F000000 + 12 * 999, 999,
                                                                         dtype=torch.int32).reshape(4, 3),)),
    "f32_as_i16": (Fn(lambda x: x.view(torch.int16) + 1), (_floats(3, 4),)),
    "f32_as_u8": (Fn(lambda x: x.view(torch.uint8).to(torch.int32)), (_floats(2, 3),)),
    "f16_as_f32": (Fn(lambda x: x.view(torch.float32)), (_floats(3, 4, dtype=torch.float16),)),
    "f64_as_i32": (Fn(lambda x: x.view(torch.int32)), (_floats(2, 3, dtype=torch.float64),)),
    "bf16_as_i16": (Fn(lambda x: x.view(torch.int16) >> 3), (_floats(5, dtype=torch.bfloat16),)),
    "i8_as_u8_as_bool": (Fn(lambda x: (x.view(torch.uint8).to(torch.int32), x.clamp(0, 1).view(torch.bool))),
                         (torch.tensor([-128, -1, 0, 1, 127], dtype=torch.int8),)),
    "as_strided_channels_last_input": (Fn(lambda x: x.as_strided((2, 4, 4, 3), (x.stride(0), x.stride(2), x.stride(3),
                                                                                x.stride(1))) + 1),
                                       (_channels_last(),)),
    "as_strided_transposed_input": (Fn(lambda x: torch.as_strided(x, (2, 2), (2, 1))), (_floats(3, 5).t(),)),
    "as_strided_channels_last_weight": (StridedWeight(), (_floats(2, 2, 2, 3),)),
    "prims_prod": (Fn(lambda x: (torch.ops.prims.prod(x, [1]), torch.ops.prims.prod(x, [0, 2]))), (_floats(3, 4, 2),)),
    "prims_twins": (Fn(lambda x, n: (PRIMS.sum(x, [1]), PRIMS.var(x, [0], 1.0), PRIMS.amax(x, [1]),
                                     PRIMS.where(x > 0, x, PRIMS.neg(x)), PRIMS.rev(x, [0]),
                                     PRIMS.div(n, n.flip(0) + 10), PRIMS.shift_left(n, n.abs() % 4),
                                     PRIMS.fmax(x, x * 0))),
                    (_floats(3, 4), torch.tensor([-7, 5, 9, -3]))),
    "prims_views": (Fn(lambda x, s: (PRIMS.transpose(x, [2, 0, 1]) * 2, PRIMS.squeeze(s, [0, 2]) + 1,
                                     PRIMS.broadcast_in_dim(s.reshape(3), [2, 3, 4], [1]) - x,
                                     PRIMS.split_dim(x, 2, 2) * 3, PRIMS.view_of(s))),
                    (_floats(2, 3, 4), _floats(1, 3, 1))),
    "resize_to_fewer": (Fn(lambda x, other: (x.clone().resize_as_(other) * 2, x.clone().resize_(2, 2))),
                        (_floats(3, 4), _floats(2, 6))),
}


class AllCases(nn.Module):
    """Every case in one program (one export and compile for all)."""

    def __init__(self) -> None:
        super().__init__()
        self.cases = nn.ModuleList(module for module, _ in CASES.values())

    def forward(self, *xs: torch.Tensor) -> tuple[object, ...]:
        results, start = [], 0
        for module, (_, inputs) in zip(self.cases, CASES.values()):
            results.append(module(*xs[start:start + len(inputs)]))
            start += len(inputs)
        return tuple(results)


@pytest.mark.parametrize("opt_level", [0, 2])
def test_storage_views_match_eager(opt_level: int) -> None:
    inputs = tuple(t for _, case_inputs in CASES.values() for t in case_inputs)
    module = AllCases()
    got, want = rducc.compile(module, inputs, opt_level=opt_level)(*inputs), module(*inputs)
    for name, g_case, w_case in zip(CASES, got, want):
        got_leaves, want_leaves = torch.utils._pytree.tree_leaves(g_case), torch.utils._pytree.tree_leaves(w_case)
        assert len(got_leaves) == len(want_leaves), name
        for g, w in zip(got_leaves, want_leaves):
            assert g.dtype == w.dtype and g.shape == w.shape, name
            exact = not w.is_floating_point() or not name.startswith("prims")  # bits are bits; a sum's order is not
            torch.testing.assert_close(g, w, rtol=0 if exact else None, atol=0 if exact else None, equal_nan=True,
                                       msg=name)


@pytest.mark.parametrize("opt_level", [0, 2])
def test_prims_xor_sum_is_the_xor_of_each_slice(opt_level: int) -> None:
    """`prims.xor_sum` (eager has no kernel for it: inductor's only) against numpy's xor reduction,
    over one dim, two, an odd and an even count, of bools and of an empty dim."""
    ints = torch.tensor([[1, 2, 7, -9, 0], [3, 5, 8, 64, -1]], dtype=torch.int32)
    fn = Fn(lambda n, e: (PRIMS.xor_sum(n, [0]), PRIMS.xor_sum(n, [1]), PRIMS.xor_sum(n, [0, 1]),
                          PRIMS.xor_sum(n[:, :4] > 2, [1]), PRIMS.xor_sum(e, [0])))
    empty = torch.zeros(0, 3, dtype=torch.int64)
    got = rducc.compile(fn, (ints, empty), opt_level=opt_level)(ints, empty)
    values = ints.numpy()
    want = (np.bitwise_xor.reduce(values, 0), np.bitwise_xor.reduce(values, 1), np.bitwise_xor.reduce(values.ravel()),
            np.bitwise_xor.reduce(values[:, :4] > 2, 1), np.zeros(3, np.int64))
    for g, w in zip(got, want, strict=True):
        assert g.numpy().dtype == w.dtype and g.numpy().tolist() == w.tolist()


@pytest.mark.parametrize("opt_level", [0, 2])
def test_as_strided_of_a_storage_the_program_does_not_hold_is_one_clear_error(opt_level: int) -> None:
    every_other = _floats(3, 10)[:, ::2]  # a view with gaps: its storage is not the input's values
    with pytest.raises(UnsupportedOpsError, match=r"aten\.as_strided\.default \(input that is a view of a storage "
                                                  r"no node of the graph holds.*test_storage_views\.py"):
        rducc.compile(Fn(lambda x: torch.as_strided(x, (2, 2), (2, 1))), (every_other,), opt_level=opt_level)


def test_a_resize_past_the_tensor_or_of_a_strided_one_is_one_clear_error() -> None:
    """More elements would be uninitialized memory; a strided tensor's resize reads its storage's order."""
    from rducc.errors import RduccError

    for fn, example, why in ((lambda x: x.clone().resize_(5, 5), _floats(3, 4), "to 25 elements from 12"),
                             (lambda x: x.t().resize_(2, 2), _floats(3, 4), "of a strided tensor")):
        with pytest.raises(RduccError, match=rf"test_storage_views.py:\d+.*resize {why}"):
            rducc.compile(Fn(fn), (example,), opt_level=0)
