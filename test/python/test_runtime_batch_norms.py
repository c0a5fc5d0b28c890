"""A map body's inference batch norm as torch's kernel (`rducc.runtime.batch_norms`,
issue 32): one call of `native_batch_norm` on the same per-channel arrays,
eager's bits (op by op, 10-40% of elements differ from eager's in the last
bit), at one thread and two; a body that only looks like one keeps its ops."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import rducc
from rducc.runtime import map_body


class _Norms(torch.nn.Module):
    """Batch norms with and without their affine terms, 2-d and 4-d, one with
    a ReLU and one with an add after it, one of a convolution with a bias (its
    add in the batch norm's body), and a near batch norm a user wrote:
    `x * (rsqrt(v + eps) * w) + (b - m * w)`, whose shift does not read its
    scale (not a batch norm: it keeps its ops)."""

    def __init__(self) -> None:
        super().__init__()
        self.affine = torch.nn.BatchNorm2d(8)
        self.plain = torch.nn.BatchNorm2d(8, affine=False)
        self.flat = torch.nn.BatchNorm1d(8)
        for norm in (self.affine, self.plain, self.flat):
            norm.running_mean.normal_()
            norm.running_var.uniform_(0.5, 2.0)
            if norm.affine:
                norm.weight.data.normal_()
                norm.bias.data.normal_()
        self.conv = torch.nn.Conv2d(8, 8, 1)
        self.terms = torch.nn.ParameterList(torch.nn.Parameter(torch.rand(8, 1, 1) + 0.5) for _ in range(4))

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> tuple[torch.Tensor, ...]:
        v, w, b, m = self.terms
        return (torch.relu(self.affine(x)), self.plain(x) + 1.0, self.flat(y),
                x * (torch.rsqrt(v + 1e-5) * w) + (b - m * w), self.affine(self.conv(x)))


def _program(model: torch.nn.Module, inputs: tuple) -> rducc.Program:
    with torch.no_grad():
        program = rducc.compile(torch.export.export(model, inputs), opt_level=2)
        program(*inputs)  # the map bodies are compiled now
    return program


def _sources(program: rducc.Program) -> list[str]:
    return [map_body.compile_map(op).source for op in program.module.walk()  # type: ignore[attr-defined]
            if op.name == "rdu.map"]


@pytest.fixture(scope="module")
def case() -> tuple[torch.nn.Module, tuple, rducc.Program]:
    torch.manual_seed(0)
    model = _Norms().eval()
    inputs = (torch.randn(2, 8, 12, 12), torch.randn(4, 8))
    return model, inputs, _program(model, inputs)


@pytest.mark.parametrize("threads", [1, 2])
def test_batch_norms_give_eagers_bits(case: tuple, threads: int) -> None:
    """Each batch norm is one kernel call (none left op by op; the near batch
    norm is none) and its result is eager's bit for bit (op by op, 10-40% of
    elements were not; the near batch norm keeps its values)."""
    model, inputs, after = case
    assert sum(s.count("_tb.batch_norm(") for s in _sources(after)) == 4
    with map_body.batch_norms_op_by_op():
        assert not any("_tb.batch_norm(" in s for s in _sources(after))
    saved = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        with torch.no_grad():
            expected = [t.numpy() for t in model(*inputs)]
            got = [np.asarray(r) for r in after(*inputs)]
    finally:
        torch.set_num_threads(saved)
    for result, eager in zip(got[:3], expected[:3], strict=True):
        np.testing.assert_array_equal(result.view(np.uint32), eager.view(np.uint32))
    for result, eager in zip(got[3:], expected[3:], strict=True):  # (a convolution's bits are not eager's)
        np.testing.assert_allclose(result, eager, rtol=1e-5, atol=1e-5)


def test_layouts_other_than_c_contiguous_give_eagers_bits() -> None:
    """An input in channels-last memory, and a strided view: torch's own
    result for that layout (eager's), copied into the map's bytes."""
    from rducc.runtime.batch_norms import batch_norm

    torch.manual_seed(1)
    mean, var, weight, bias = torch.randn(8), torch.rand(8) + 0.5, torch.randn(8), torch.randn(8)
    for x in (torch.randn(2, 8, 9, 9).contiguous(memory_format=torch.channels_last),
              torch.randn(2, 8, 9, 18)[..., ::2]):
        expected = torch.batch_norm(x, weight, bias, mean, var, False, 0.0, 1e-5, True).contiguous().numpy()
        per_channel = [t.numpy().reshape(8, 1, 1) for t in (mean, var, weight, bias)]
        out = np.full(x.shape, 7.0, np.float32)
        assert batch_norm(x.numpy(), *per_channel, 1e-5, out=out) is out
        np.testing.assert_array_equal(out.view(np.uint32), expected.view(np.uint32))
