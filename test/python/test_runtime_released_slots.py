"""Arrays a compute's steps bind each run are let go after their last reader
(issue 32, `rducc.runtime.released_slots`).

- the layer norms ATen allocates (`_norm_step`'s `fresh`), read by a product,
  through reshapes, a permute and residual adds, are freed before the next
  norm runs, from the second call on (the first records the plan), and the
  program gives eager's numbers call after call; with nothing let go they
  live to the call's end;
- a table read otherwise than by index voids the record: nothing is let go.
"""

from __future__ import annotations

import weakref

import numpy as np
import torch
from test_runtime_fused_norms import _eager, _NormReaders, _run_program

import rducc
from rducc.runtime import interpreter, released_slots


def _alive_at_each_norm(monkeypatch, program: rducc.Program, inputs: tuple[torch.Tensor, ...]) -> list[int]:
    """How many arrays earlier norms of the call returned are alive as each norm runs."""
    made: list[weakref.ref] = []
    alive: list[int] = []
    plain = interpreter.kernels.layer_norm

    def recording(x, dims, weight, bias, eps, out):  # type: ignore[no-untyped-def]
        alive.append(sum(ref() is not None for ref in made))
        result = plain(x, dims, weight, bias, eps, out)
        if out is None:
            made.append(weakref.ref(result))
        return result

    monkeypatch.setattr(interpreter.kernels, "layer_norm", recording)
    try:
        _run_program(program, inputs)
    finally:
        monkeypatch.setattr(interpreter.kernels, "layer_norm", plain)
    return alive


def test_fresh_norms_are_freed_after_their_last_reader(monkeypatch) -> None:
    model = _NormReaders().eval()
    generator = torch.Generator().manual_seed(0)
    inputs = (torch.randn(1, 8, 4, 4, generator=generator),)
    with torch.no_grad():
        program = rducc.compile(torch.export.export(model, inputs), opt_level=2)
    assert _alive_at_each_norm(monkeypatch, program, inputs) == [0, 1, 2]  # the first call records
    for _ in range(2):
        inputs = (torch.randn(1, 8, 4, 4, generator=generator),)
        assert _alive_at_each_norm(monkeypatch, program, inputs) == [0, 0, 0]
        for out, ref in zip(_run_program(program, inputs), _eager(model, inputs), strict=True):
            np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-5)


def test_a_table_read_as_a_whole_lets_nothing_go() -> None:
    recorder = released_slots.Recorder([None, None, None])
    recorder.step = 0
    recorder[1] = "bound"
    recorder.step = 2
    assert recorder[1] == "bound"
    assert recorder.releases([None, "view", None], keep=()) == {2: [(1, "view")]}
    assert recorder.releases([None, "view", None], keep=(1,)) == {}
    list(recorder)
    assert recorder.releases([None, "view", None], keep=()) == {}
