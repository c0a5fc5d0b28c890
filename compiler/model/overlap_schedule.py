"""The schedule of a program's kernels and their collectives: overlap counted, not assumed.

A kernel runs on the chip's pipeline (its compute, SRAM, HBM and DDR,
`kernel_timing.kernel_time`); its collectives (all-reduce, all-gather, ...)
run on the socket-to-socket links after its pipeline has produced their
input. Two lanes, the chip and the links, each doing one thing at a time, and
the program's order:

- a kernel's collectives start when its pipeline ends and the links are free
  (after the previous collective);
- a kernel that reads nothing the collectives before it produce (a buffer a
  pending collective's kernel writes: its compute's outs or what its drains
  write) starts as soon as the chip is free: its whole pipeline runs beside
  those collectives (the other half of a split matmul, an independent branch);
- a kernel that does read such a value starts when that value is ready (the
  collective's end), but its weights do not depend on it: during the wait it
  loads the part of its `prefetch_bytes` (weights read before its tile loop)
  that the wait covers and the program's SRAM plan leaves room for
  (`room_bytes`), which takes that load off its HBM time
  (`kernel_timing._hidden_s`);
- values are compared only between kernels of one function activation (the
  same `func.call`s): across calls of an outlined layer the callee's buffers
  are the same SSA values for different data. The first kernel of a layer
  call's activation waits for the collectives that make the call's operands
  (the entry function's buffers it passes; a collective inside a call makes
  that call's results and operands, which it may write), and a kernel of the
  entry function for those that make what it reads: so a layer call runs
  beside a collective it does not read (ZeRO stage 3's gather of the next
  layer's weights, `rdu_partition.prefetch`) when the SRAM plan's free room
  holds what the pending collectives land in SRAM (their kernels' outs);
  without room, or between nested calls of one call, it waits for every
  collective before it.

The program's time is when the last lane ends. Each kernel's share of it
(`KernelCost.modeled_time_s`) is how far its pipeline and collectives moved
that end; `overlap_s` is its pipeline + link time less that share: the time
the schedule ran beside something else. Nothing is hidden that the schedule
does not place side by side.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from xdsl.dialects import func
from xdsl.ir import SSAValue

from rducc.dialects.program import kernel_run_name
from rducc.dialects.shapes import value_bytes
from rducc.model.kernel_timing import KernelCost, KernelWork, Overlap, kernel_time, kernel_work
from rducc.model.program_walk import KernelRecord
from rducc.targets import Target


@dataclass(frozen=True)
class Placed:
    """One kernel in the schedule: its pipeline and its collectives' start and end (s)."""

    start_s: float
    end_s: float
    link_start_s: float
    link_end_s: float
    prefetch_hidden_s: float
    """Its weight load done while it waited for a collective."""
    independent: bool
    """It read nothing a pending collective produced: it ran beside them."""


def _inputs(record: KernelRecord) -> set[SSAValue]:
    """The buffers a kernel reads: its compute's ins and its feeds' sources."""
    return {*record.op.ins, *(t.op.source for t in record.feeds)}


def _outputs(record: KernelRecord) -> set[SSAValue]:
    """The buffers a kernel writes: its compute's outs and its drains' destinations."""
    return {*record.op.outs, *(t.op.dest for t in record.drains)}


class _Lanes:
    """The chip and the links as the kernels are placed on them, in program order."""

    def __init__(self, room_bytes: int | None) -> None:
        self.chip_free = 0.0
        self.link_free = 0.0
        self.finish = 0.0
        self.activation: tuple[func.CallOp, ...] | None = None
        self.ready: dict[SSAValue, float] = {}
        """When each value written by a kernel of the current layer call's activation is ready."""
        self.outer: dict[SSAValue, float] = {}
        """When each value of the entry function is ready (a kernel's output there; a
        call's results and operands, after the collectives inside the call)."""
        self.room_bytes = room_bytes
        self.landing: list[tuple[float, int]] = []
        """Per collective placed: when it ends and the SRAM bytes it lands in."""

    def wait_for(self, record: KernelRecord) -> tuple[float, bool]:
        """When the kernel's inputs are ready, and whether it waits for no collective."""
        if record.calls != self.activation:
            previous, self.activation, self.ready = self.activation, record.calls, {}
            nested = bool(previous and record.calls and previous[0] is record.calls[0])
            if nested or not self._room_beside_pending():
                return self.link_free, self.link_free <= self.chip_free
            reads = set(record.calls[0].operands) if record.calls else _inputs(record)
            ready = max((self.outer.get(v, 0.0) for v in reads), default=0.0)
            return ready, ready <= self.chip_free
        known = self.ready if record.calls else self.outer
        ready = max((known.get(v, 0.0) for v in _inputs(record)), default=0.0)
        return ready, ready <= self.chip_free

    def _room_beside_pending(self) -> bool:
        """Whether the SRAM plan's free room holds what the collectives still running
        when the chip is next free land in (nothing pending: trivially)."""
        pending = sum(n for end, n in self.landing if end > self.chip_free)
        return pending == 0 or (self.room_bytes is not None and pending <= self.room_bytes)

    def placed(self, record: KernelRecord, link_s: float, link_end: float) -> None:
        """Record when the kernel's outputs are ready (and, for a collective inside a
        layer call, that call's results and operands)."""
        known = self.ready if record.calls else self.outer
        for value in _outputs(record):
            known[value] = link_end
        if link_s <= 0:
            return
        self.landing.append((link_end, sum(value_bytes(v) for v in record.op.outs)))
        if record.calls:
            call = record.calls[0]
            for value in (*call.results, *call.operands):
                self.outer[value] = max(self.outer.get(value, 0.0), link_end)


def schedule(records: list[KernelRecord], target: Target, room_bytes: int | None = None
             ) -> tuple[list[KernelCost], list[Placed]]:
    """Each kernel's cost with the overlap its place in the schedule gives (the
    module docstring's rules), and its place."""
    works: dict[object, KernelWork] = {}
    lanes = _Lanes(room_bytes)
    costs: list[KernelCost] = []
    placed: list[Placed] = []
    indices: dict[func.CallOp, int] = {}  # each function's calls indexed once, not once a run
    for record in records:
        if record.op not in works:
            works[record.op] = kernel_work(record, target)
        work = works[record.op]
        alone = kernel_time(work, target, record.looped, reloaded=record.reloaded)
        ready, independent = lanes.wait_for(record)
        wait = max(0.0, ready - lanes.chip_free)
        cost = alone
        if wait > 0 and room_bytes is not None:
            cost = kernel_time(work, target, record.looped, Overlap(wait, room_bytes), record.reloaded)
        pipeline_s = cost.modeled_time_s - cost.link_s
        start = max(lanes.chip_free, ready)
        end = start + pipeline_s
        link_start = max(end, lanes.link_free) if cost.link_s > 0 else end
        link_end = link_start + cost.link_s
        finish = max(lanes.finish, end, link_end)
        share = finish - lanes.finish
        # layer[1].k0: a call's run
        name = kernel_run_name(record.op, record.calls, indices) if record.calls else cost.name
        costs.append(replace(cost, name=name, modeled_time_s=share, overlap_s=alone.modeled_time_s - share))
        placed.append(Placed(start, end, link_start, link_end, cost.overlap_s if wait > 0 else 0.0, independent))
        lanes.chip_free, lanes.finish = end, finish
        if cost.link_s > 0:
            lanes.link_free = link_end
        lanes.placed(record, cost.link_s, link_end)
    return costs, placed


def kernel_costs(records: list[KernelRecord], target: Target, room_bytes: int | None = None) -> list[KernelCost]:
    """Each kernel's cost in run order, with the overlap the schedule gives
    (`schedule`; weight loads during a wait only when `room_bytes`, free SRAM, is known)."""
    return schedule(records, target, room_bytes)[0]


__all__ = ["Placed", "kernel_costs", "schedule"]
