"""The shared parts of the runtime's same-process A/B benches (issue 32).

An A/B compiles one full-size zoo model twice in one process, a program
before a change and one after (`programs`), checks both give the same bits
(`same_bits`), and times eager, before and after interleaved at one thread
(`runtime_norm_ab.best_times`); a change that a whole call's time at a loaded
machine does not resolve is also timed step by step (`least_steps`). A
change made where a program's steps are made is undone for the before
program while it is compiled and first run (`before`); a change inside a
kernel, which the steps look up on every call, is undone around each of the
before program's calls (`around`).

Used by `runtime_released_ab.py`, `runtime_fresh_attention_ab.py` and
`runtime_bindings_ab.py`.
"""

from __future__ import annotations

import contextlib
import gc
import time
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager

import numpy as np
import torch
from common import Section  # noqa: F401 - sets one BLAS thread before numpy loads
from xdsl.ir import Operation
from zoo.models import FULL_SIZE

import rducc
from rducc.runtime import interpreter

Context = Callable[[], AbstractContextManager[object]]
"""A factory of the context a change is undone in."""


def outputs(out: object) -> list[np.ndarray]:
    """A program's or a model's result as a list of arrays."""
    return [np.asarray(o) for o in (out if isinstance(out, (tuple, list)) else (out,))]


def programs(name: str, before: Context = contextlib.nullcontext
             ) -> tuple[torch.nn.Module, tuple, rducc.Program, rducc.Program]:
    """The model, its inputs, and its program before (compiled and first run,
    when its steps are made, inside `before()`) and after."""
    model, inputs = FULL_SIZE[name].build(1)
    with torch.no_grad():
        exported = torch.export.export(model, inputs)
        with before():
            earlier = rducc.compile(exported, opt_level=2)
            earlier(*inputs)
        later = rducc.compile(exported, opt_level=2)
    return model, inputs, earlier, later


def same_bits(first: Callable[[], object], second: Callable[[], object]) -> bool:
    """Whether two calls give the same results bit for bit."""
    return all(np.array_equal(a, b) for a, b in zip(outputs(first()), outputs(second()), strict=True))


def around(program: rducc.Program, inputs: tuple, context: Context) -> Callable[[], object]:
    """A call of `program` on `inputs` inside `context()`."""

    def call() -> object:
        with context():
            return program(*inputs)

    return call


def least_steps(programs: list[rducc.Program], inputs: tuple, calls: int, chosen: Callable[[str, str], bool],
                contexts: Sequence[Context] | None = None,
                picked: Callable[[Operation], bool] | None = None) -> list[float]:
    """Each program's steps `chosen` picks by step and op name (a step that
    binds an array of its own is named `fresh_...`), or `picked` by op where
    given: the sum over them of each step's least CPU seconds over `calls`
    calls, the programs' calls interleaved, each inside its `contexts` entry."""
    least: list[dict[tuple[int, int], float]] = [{} for _ in programs]
    plain = interpreter.run_steps
    for _ in range(calls):
        for index, program in enumerate(programs):
            runs: dict[int, int] = {}

            def timed(steps: Sequence, env: list, context: object, where: str,
                      seen: dict[tuple[int, int], float] = least[index], runs: dict[int, int] = runs) -> None:
                for step, op in steps:
                    start = time.thread_time()
                    step(env, context)
                    spent = time.thread_time() - start
                    if picked(op) if picked is not None else chosen(getattr(step, "__name__", ""), op.name):
                        key = (id(op), runs.setdefault(id(op), 0))
                        runs[id(op)] += 1
                        seen[key] = min(seen.get(key, spent), spent)

            interpreter.run_steps = timed
            gc.disable()
            try:
                with (contexts[index] if contexts else contextlib.nullcontext)():
                    program(*inputs)
            finally:
                interpreter.run_steps = plain
                gc.enable()
    return [sum(seen.values()) for seen in least]
