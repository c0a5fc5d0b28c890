"""Kernel looping in the cost model: consecutive calls of one layer run as one loop.

SambaNova's kernel looping (arXiv 2410.23668, shared/TARGETS.md) runs a
sequence of calls of the same kernel (a decoder layer) as one loop on the
chip: the kernel is configured and launched once, and the next iteration's
weight DMA starts while the current iteration computes, so the launch and the
DMA start-up are paid once for the loop instead of once per layer.

The program is not changed: the runtime executes the same `func.call`s and
gives the same numbers. This module only finds the calls the chip could run
as one loop, and the cost model (`estimate`) costs them so when the target
says `kernel_looping = true`:

- a *run* is two or more `func.call`s of the same outlined callee, in one
  block, with nothing between them that does work on the chip (only
  `tier.alloc`, `tier.dealloc`, `tier.get_global`, `tier.view` (the next
  layer's window of a stacked input), `arith.constant`), on the
  same pipeline stage (`rdu.stage`), where each call reads a result of the
  call before it, at the same (result, argument) positions for every pair
  (the loop-carried layer input; checked, not assumed);
- a run of a one-kernel callee (one `tier.compute`) is *looped*: its PCU/PMU
  configuration and its SRAM plan (one function, so the same every
  iteration) stay loaded;
- a run of a callee of several kernels (a layer `rdu-fuse{level=2}` could not
  hold in one kernel: a mixture of experts on one socket, a layer on a small
  SRAM, a period of layers of several kinds) is a *candidate*: a loop whose
  body is the callee's kernels in order, each loading its configuration every
  iteration where the units do not hold it (`reconfigure_s`) in place of the
  launch and DMA start-up it saves, or none where the body is one
  configuration or the units hold its several as one
  (compiler/model/shared_configuration.py; then the first call's kernels
  after the first loop too: its calls are the run's *head*). The cost model
  loops it only when that does not cost more (`cost_model.settle_loops`, with
  the target's figures); otherwise it is not looped and says why;
- in a looped run, every call after the first runs its kernels with no
  `launch_s` and no `fill_s` (the DMA start-up and the first tile's load are
  issued during the previous iteration: its feeds stream into the buffers in
  the order the previous iteration drained them, and in-loop tiles are double
  buffered). Its compute, SRAM, HBM, DDR and link times are all still paid.
  The cost model's one timing function (`kernel_timing.kernel_time`) takes
  `looped` (and `reloaded`: a body kernel's configuration load) as inputs;
  this module only says which calls are looped or candidates.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.dialects import arith, func
from xdsl.ir import Block, Operation, SSAValue

from rducc.dialects.contracts import stage_attr
from rducc.dialects.tier import AllocOp, DeallocOp, GetGlobalOp, ViewOp

NO_CHIP_WORK = (AllocOp, DeallocOp, GetGlobalOp, ViewOp, arith.ConstantOp)
"""Ops that may stand between two calls of a loop: bookkeeping, no chip work."""

@dataclass
class KernelLoop:
    """A run of consecutive calls of one outlined layer, looped or not."""

    callee: str
    calls: int
    kernels: int
    """Kernels (`tier.compute`s) of the callee."""
    looped: bool
    reason: str = ""
    """Why the run is not looped (empty when it is)."""
    reloads: int = 0
    """Configuration loads a later iteration pays: its kernels whose configuration the
    units do not hold when they start (compiler/model/configuration.py)."""
    shared: int = 0
    """Where the body's kernels of several configurations hold one
    (compiler/model/shared_configuration.py), loaded once for the loop: how many
    it holds (0: not so)."""
    not_shared: str = ""
    """Why a body of several configurations does not hold them as one."""
    launches_saved: int = 0
    saved_s: float = 0.0
    """Launch and DMA start-up time the loop does not pay (before overlaps), less the
    configuration loads of a body of several kernels."""


def _carried(previous: func.CallOp, call: func.CallOp) -> frozenset[tuple[int, int]]:
    """(result index of `previous`, argument index of `call`) pairs: what `call` reads of it."""
    results: dict[SSAValue, int] = {result: index for index, result in enumerate(previous.res)}
    return frozenset((results[value], index) for index, value in enumerate(call.arguments) if value in results)


def _continues(run: list[func.CallOp], call: func.CallOp) -> bool:
    """Whether `call` is the next iteration of `run`: same callee and stage, fed as the others."""
    last = run[-1]
    if call.callee != last.callee or stage_attr(call) != stage_attr(last):
        return False
    fed = _carried(last, call)
    return bool(fed) and (len(run) < 2 or fed == _carried(run[-2], last))


def call_runs(block: Block) -> list[list[func.CallOp]]:
    """The runs of two or more calls of one callee in a block that could loop (see above)."""
    runs: list[list[func.CallOp]] = []
    current: list[func.CallOp] = []
    for op in block.ops:
        if isinstance(op, NO_CHIP_WORK):
            continue
        if isinstance(op, func.CallOp) and current and _continues(current, op):
            current.append(op)
            continue
        if len(current) > 1:
            runs.append(current)
        current = [op] if isinstance(op, func.CallOp) else []
    if len(current) > 1:
        runs.append(current)
    return runs


def plan_loops(block: Block, callee_kernels: dict[str, int], enabled: bool
               ) -> tuple[list[KernelLoop], set[Operation], set[Operation], set[Operation]]:
    """The block's runs as `KernelLoop`s, the calls of looped runs after the first of
    each (the later iterations: they pay no launch or fill), those of candidate
    runs (a callee of several kernels: looped when it pays, `cost_model.settle_loops`)
    and the first calls of candidate runs (whose kernels after the first loop too
    where the body is held as one configuration)."""
    loops: list[KernelLoop] = []
    later: set[Operation] = set()
    candidates: set[Operation] = set()
    heads: set[Operation] = set()
    for run in call_runs(block):
        callee = run[0].callee.string_value()
        kernels = callee_kernels.get(callee, 0)
        reason = "" if enabled else "kernel looping is off for the target"
        if not reason and kernels == 0:
            reason = f"@{callee} runs no kernel"
        loops.append(KernelLoop(callee, len(run), kernels, looped=not reason and kernels == 1, reason=reason))
        if not reason:
            (later if kernels == 1 else candidates).update(run[1:])
            if kernels > 1:
                heads.add(run[0])
    return loops, later, candidates, heads


__all__ = ["KernelLoop", "NO_CHIP_WORK", "call_runs", "plan_loops"]
