"""`@forward`'s results handed to the caller (issue 32): an off-chip buffer
the run allocated is given over without a copy; anything else (an input, a
weight, a buffer returned twice) is copied, so no result shares memory with
what the caller or a later call holds. A result computed in SRAM and copied
out whole lives in a host array of its own each run where its placement
verifies (`rducc.runtime.handed_buffers`): the DMA hands that array on.
Each against eager."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import rducc
from rducc.dialects.tier import AllocOp, ComputeOp
from rducc.runtime import interpreter


class _Head(torch.nn.Module):
    """A linear layer's logits, returned with the input and a weight (identities)."""

    def __init__(self) -> None:
        super().__init__()
        self.proj = torch.nn.Linear(8, 24)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        return self.proj(x).reshape(2, 3, 24), x, self.proj.weight


def test_allocated_results_are_handed_over_and_the_others_copied() -> None:
    torch.manual_seed(0)
    model = _Head().eval()
    x = torch.randn(6, 8)
    with torch.no_grad():
        expected = model(x)
        program = rducc.compile(torch.export.export(model, (x,)), opt_level=2)
    placed = program._runner  # noqa: SLF001 - the prepared interpreter
    assert isinstance(placed, interpreter.PlacedProgram)
    assert placed._handed[0]  # noqa: SLF001 - the logits' buffer is made each run
    first = program(x)
    for got, want in zip(first, expected):
        torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-6)
    weight = program.weights["proj.weight"].copy()
    for result in first:
        result.add_(1.0)  # the caller writes its results: nothing of the program's moves
    np.testing.assert_array_equal(program.weights["proj.weight"], weight)
    second = program(x)
    for got, want in zip(second, expected):
        torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-6)
    assert not np.shares_memory(first[0].numpy(), second[0].numpy())


def test_the_arena_is_huge_page_aligned_and_advised(monkeypatch: pytest.MonkeyPatch) -> None:
    """The SRAM arena starts at a 2 MiB boundary and its pages are advised as
    huge pages (Linux); the bytes are zeros as before."""
    advised: list[tuple[int, int]] = []
    monkeypatch.setattr(interpreter, "_advise_huge_pages", lambda a: advised.append((a.ctypes.data, a.nbytes)))
    arena = interpreter._aligned_zeros(3 << 20)  # noqa: SLF001
    assert arena.ctypes.data % (1 << 21) == 0 and arena.nbytes == 3 << 20 and not arena.any()
    assert advised == [(arena.ctypes.data, 3 << 20)]
    interpreter._advise_huge_pages(np.zeros(1 << 22, np.uint8))  # noqa: SLF001 - the real call runs


@pytest.fixture(scope="module")
def head() -> tuple[_Head, torch.Tensor, rducc.Program]:
    """`_Head` compiled at -O2, and its input."""
    torch.manual_seed(0)
    model = _Head().eval()
    x = torch.randn(6, 8)
    with torch.no_grad():
        program = rducc.compile(torch.export.export(model, (x,)), opt_level=2)
    return model, x, program


def test_a_result_computed_in_sram_is_handed_on_without_a_copy(head, monkeypatch: pytest.MonkeyPatch) -> None:
    """The logits' SRAM buffer is a host array of each run's own, which the
    DMA out hands on (the off-chip buffer it fills gets no array of its own):
    the result is eager's, every call's is new memory, and a caller writing
    one changes no other call's."""
    model, x, program = head
    made: list[str] = []
    allocate = interpreter._allocate  # noqa: SLF001 - each off-chip array a run makes
    monkeypatch.setattr(interpreter, "_allocate", lambda make, what: made.append(what) or allocate(make, what))
    placed = program._runner  # noqa: SLF001 - the prepared interpreter
    handed = [h for h in placed.handed.values() if h.allowed]
    assert [h.shape for h in handed] == [(2, 3, 24)], placed.handed
    with torch.no_grad():
        expected = model(x)[0]
    first = program(x)[0]
    torch.testing.assert_close(first, expected, rtol=1e-5, atol=1e-6)
    first.add_(1.0)
    second = program(x)[0]
    torch.testing.assert_close(second, expected, rtol=1e-5, atol=1e-6)
    assert not np.shares_memory(first.numpy(), second.numpy())
    assert not [what for what in made if what.endswith("[2, 3, 24]")], made


def test_a_wrongly_placed_result_buffer_stays_in_the_arena(head) -> None:
    """The logits' SRAM buffer moved onto the weight its compute reads: the
    placement no longer verifies, so the buffer keeps its arena bytes (what
    the chip would compute) and the DMA copies out of them."""
    _, x, program = head
    module = program.module.clone()
    compute = next(op for op in module.walk()
                   if isinstance(op, ComputeOp) and op.outs[0].type.get_shape() == (2, 3, 24))
    out, weight = compute.outs[0].owner, compute.ins[1].owner
    assert isinstance(out, AllocOp) and isinstance(weight, AllocOp) and weight.offset is not None
    out.offset = weight.offset
    placed = interpreter.PlacedProgram(module)
    assert [h.allowed for h in placed.handed.values()] == [False]
    placed.run([x.numpy()], program.weights)
