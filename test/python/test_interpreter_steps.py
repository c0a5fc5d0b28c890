"""What a body op costs the placed-program interpreter beyond its numpy work.

A body op's step reads its operands' slots and calls the kernel's `into` on its
arena view: no argument list, no wrapper frames, no per-call check (the first
run's steps check every result, later runs' do not). Counted in Python calls
(`sys.setprofile`), never in time: the counts do not depend on the machine.
A reduction rounds its accumulated result straight into its view.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

import ml_dtypes
import numpy as np
import pytest
import torch
from test_interpreter import parse
from xdsl.dialects.builtin import ModuleOp

from rducc.runtime import interpreter, kernels
from rducc.runtime.interpreter import PlacedProgram

_MAP = """
      %v{i} = rdu.map %v{j} {{tier.offset = {offset} : i64}} : (tensor<4xf32>) -> tensor<4xf32> {{
      ^bb{i}(%a: f32):
        %half = arith.constant 0.5 : f32
        %p = arith.mulf %a, %half : f32
        rdu.yield %p : f32
      }}"""


def _halvings(count: int) -> ModuleOp:
    """A placed program whose one kernel halves its input `count` times, one
    `rdu.map` a time (the values alternate between two arena offsets)."""
    maps = "".join(_MAP.format(i=i, j=i - 1, offset=128 + 64 * (i % 2)) for i in range(1, count + 1))
    text = f"""
builtin.module {{
  func.func @forward(%x: !tier.buffer<hbm, 4xf32> {{rdu.input = "x"}}) -> !tier.buffer<hbm, 4xf32>
      attributes {{tier.sram_capacity = 256 : i64}} {{
    %xs = tier.alloc offset 0 : !tier.buffer<sram, 4xf32>
    %ys = tier.alloc offset 64 : !tier.buffer<sram, 4xf32>
    %y = tier.alloc : !tier.buffer<hbm, 4xf32>
    tier.dma %x -> %xs : !tier.buffer<hbm, 4xf32> -> !tier.buffer<sram, 4xf32>
    tier.compute "k0" ins(%xs : !tier.buffer<sram, 4xf32>) outs(%ys : !tier.buffer<sram, 4xf32>) {{
    ^bb0(%v0: tensor<4xf32>):{maps}
      rdu.yield %v{count} : tensor<4xf32>
    }}
    tier.dma %ys -> %y : !tier.buffer<sram, 4xf32> -> !tier.buffer<hbm, 4xf32>
    func.return %y : !tier.buffer<hbm, 4xf32>
  }}
}}
"""
    return parse(text)


BF16 = np.dtype(ml_dtypes.bfloat16)
X = np.array([1.0, 2.0, -4.0, 8.0], np.float32)


def _python_calls(function: Callable[[], Any]) -> int:
    """The Python functions `function()` calls (every frame entered, its own excepted)."""
    calls = [0]

    def count(frame: Any, event: str, arg: Any) -> None:
        calls[0] += event == "call"

    sys.setprofile(count)
    try:
        function()
    finally:
        sys.setprofile(None)
    return calls[0]


def test_a_map_step_is_two_python_calls() -> None:
    """At one torch thread, four more maps in the kernel cost a run two Python
    calls each: the step and the compiled body (no operand list, wrapper or
    check; a body's arithmetic is numpy's ufunc there, `map_body.arithmetic_for_threads`)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        counts = {}
        for count in (2, 6):
            program = PlacedProgram(_halvings(count))
            for _ in range(2):  # the first run checks each result
                np.testing.assert_array_equal(program.run([X])[0], X * np.float32(0.5**count))
            counts[count] = _python_calls(lambda program=program: program.run([X]))
    finally:
        torch.set_num_threads(threads)
    assert (counts[6] - counts[2]) / 4 == 2, counts


def test_results_are_checked_until_a_run_succeeds(monkeypatch: pytest.MonkeyPatch) -> None:
    """The first run compares each plain kernel result with the IR's type; a
    run that failed leaves the check in place, and after a run that passed the
    steps call the kernel's `into` alone."""
    plain_calls, wrong = [0], [True]
    prepare = interpreter.prepare

    def prepare_spied(op: Any, runner: str) -> Any:
        kernel = prepare(op, runner)

        def spied(context: Any, *operands: np.ndarray) -> np.ndarray:
            plain_calls[0] += 1
            value = kernel(context, *operands)
            return value[:2] if wrong[0] else value

        spied.into = kernel.into  # type: ignore[attr-defined]
        return spied

    monkeypatch.setattr(interpreter, "prepare", prepare_spied)
    program = PlacedProgram(_halvings(2))
    for _ in range(2):
        with pytest.raises(AssertionError, match=r"runtime bug: 'rdu.map' result #0 is float32\[2\], the IR says"):
            program.run([X])
    wrong[0] = False
    np.testing.assert_array_equal(program.run([X])[0], X / 4)
    checked = plain_calls[0]
    wrong[0] = True  # no longer called: the wrong result cannot show
    np.testing.assert_array_equal(program.run([X * 2])[0], X / 2)
    assert plain_calls[0] == checked


@pytest.mark.parametrize("kind", ["sum", "prod", "max", "min"])
@pytest.mark.parametrize("dtype", [np.float32, np.float16, BF16], ids=str)
def test_reduce_rounds_straight_into_its_view(kind: str, dtype: Any) -> None:
    """A reduction's `into` rounds the accumulated result into the view once:
    what the plain kernel returns (f32 sums accumulate in f64)."""
    rng = np.random.default_rng(3)
    x = rng.standard_normal((3, 5, 4)).astype(dtype)
    out = np.full((3, 1, 4), np.nan, dtype)
    assert kernels.reduce(x, kind, (1,), True, out) is out
    np.testing.assert_array_equal(out, kernels.reduce(x, kind, (1,), True))


def test_an_f32_sum_into_its_view_is_torchs() -> None:
    """An f32 sum written into its view adds as eager's `aten.sum` does (in f32,
    torch's order: both ones lost here), not in f64 (which would give 2)."""
    x = np.array([1e8, 1.0, 1.0, -1e8], np.float32)
    out = np.full((), np.nan, np.float32)
    kernels.reduce(x, "sum", (0,), False, out)
    assert out == torch.sum(torch.from_numpy(x)).item() == 0.0


ROW = """
builtin.module {
  func.func @forward(%x: !tier.buffer<hbm, 2x4xf32> {rdu.input = "x"},
                    %ids: !tier.buffer<hbm, 1xi64> {rdu.input = "ids"})
      -> !tier.buffer<hbm, 2x4xf32> attributes {tier.sram_capacity = 128 : i64} {
    %x_sram = tier.alloc offset 0 : !tier.buffer<sram, 2x4xf32>
    %ids_sram = tier.alloc offset 64 : !tier.buffer<sram, 1xi64>
    %y = tier.alloc : !tier.buffer<hbm, 2x4xf32>
    tier.dma %x -> %x_sram : !tier.buffer<hbm, 2x4xf32> -> !tier.buffer<sram, 2x4xf32>
    tier.dma %ids -> %ids_sram : !tier.buffer<hbm, 1xi64> -> !tier.buffer<sram, 1xi64>
    tier.scatter %x_sram -> %y[%ids_sram] dim 0
        : !tier.buffer<sram, 2x4xf32>, !tier.buffer<sram, 1xi64> -> !tier.buffer<hbm, 2x4xf32>
    func.return %y : !tier.buffer<hbm, 2x4xf32>
  }
}
"""


def test_every_run_allocates_fresh_poisoned_hbm() -> None:
    """A small HBM buffer is a copy of one poisoned array: the row a run does
    not write is poison, not what the previous run wrote there."""
    program = PlacedProgram(parse(ROW))
    x = np.arange(8, dtype=np.float32).reshape(2, 4)
    for row in (0, 1, 0):
        (y,) = program.run([x, np.array([row], np.int64)])
        np.testing.assert_array_equal(y[row], x[row])
        assert np.isnan(y[1 - row]).all()
