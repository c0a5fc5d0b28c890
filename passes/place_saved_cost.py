"""What `rdu-place-saved`'s choices cost, as the cost model times the kernels they change.

The planner runs on kernels not lowered yet, so it times each one as `rdu-fuse`
weighs a group (`group_body`: the mapper's view of its ops, its boundary bytes)
by the cost model's `kernel_time` (`planned_work`): the busiest of compute, SRAM
ports, HBM and DDR, plus the pipeline fill, the DMA start-up and the launch,
every figure read from the target. A collective costs its link time
(`collective_cost`), a call of an outlined layer what its callee's ops cost.

- A recompute costs the modeled time of the kernels (and collectives) it runs
  again: `ops_s`.
- A spill moves a value's bytes from HBM to DDR in the kernels that write and
  read it (`Touch`): it costs how much their modeled times grow
  (`moved_s`), which is nothing for a kernel another resource bounds, and more
  for a kernel that already moves other bytes to DDR (`move` records what is
  in DDR, so a later spill is priced on top of the earlier ones).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from xdsl.dialects import arith, func
from xdsl.ir import Operation

from rducc.dialects.rdu.collectives import COLLECTIVE_OPS
from rducc.dialects.rdu.dataflow import KernelOp, YieldOp
from rducc.dialects.shapes import value_bytes
from rducc.model.kernel_timing import (
    KernelWork,
    collective_cost,
    kernel_time,
    op_flops,
    planned_work,
    with_tiers,
)
from rducc.model.mapping import map_body
from rducc.passes.rdu_fuse import group_body
from rducc.targets import Target


@dataclass(frozen=True)
class Touch:
    """Bytes a kernel reads from (`read`) or writes to (`written`) DDR rather than HBM
    when a value is spilled, `times` times a step (a kernel of an outlined layer
    runs once a call)."""

    kernel: KernelOp
    read: int = 0
    written: int = 0
    times: int = 1


@dataclass
class PlacementPrices:
    """Modeled seconds of kernels and of moving their bytes to DDR, on `target`."""

    target: Target
    callees: Mapping[str, func.FuncOp]
    _work: dict[KernelOp, KernelWork] = field(default_factory=dict)
    _ddr: dict[KernelOp, tuple[int, int]] = field(default_factory=dict)
    """Per kernel, the bytes it reads from and writes to DDR under the spills so far."""
    _calls: dict[str, float] = field(default_factory=dict)

    def work(self, kernel: KernelOp) -> KernelWork:
        """The kernel's planned work with its boundary in HBM (the one `rdu-fuse` weighs)."""
        if kernel not in self._work:
            self._work[kernel] = self._planned(kernel)
        return self._work[kernel]

    def _planned(self, kernel: KernelOp) -> KernelWork:
        ops = [op for op in kernel.body.block.ops if not isinstance(op, YieldOp)]
        planned = group_body(ops, self.target)
        if planned is not None:
            body, moved = planned
            return planned_work(body, map_body(body, self.target), moved, self.target)
        # no tile plan fits (a kernel rdu-tile splits further): its FLOPs at peak and its bytes
        element = str(getattr(kernel.results[0].type, "element_type", "f32")) if kernel.results else "f32"
        flops = sum(op_flops(op) for op in ops if not isinstance(op, arith.ConstantOp))
        moved = {"hbm->sram": sum(value_bytes(v) for v in kernel.operands),
                 "sram->hbm": sum(value_bytes(v) for v in kernel.results)}
        return with_tiers(KernelWork(name=kernel.sym_name.data, ops_fused={}, flops=flops, bytes_by_tier={},
                                     sram_bytes=0, tiles=1, compute_s=flops / self.target.peak_flops(element),
                                     sram_s=0.0, hbm_s=0.0, ddr_s=0.0, startup_s=0.0), moved, self.target)

    def kernel_s(self, kernel: KernelOp, read: int = 0, written: int = 0) -> float:
        """The kernel's modeled seconds with `read` of its input bytes and `written` of its
        output bytes in DDR rather than HBM."""
        work = self.work(kernel)
        if read or written:
            moved = dict(work.bytes_by_tier)
            for hbm, ddr, n in (("hbm->sram", "ddr->sram", read), ("sram->hbm", "sram->ddr", written)):
                n = min(n, moved.get(hbm, 0))
                moved[hbm] = moved.get(hbm, 0) - n
                moved[ddr] = moved.get(ddr, 0) + n
            work = with_tiers(work, moved, self.target)
        return kernel_time(work, self.target).modeled_time_s

    def op_s(self, op: Operation) -> float:
        """A top-level op's modeled seconds with its values in HBM: a kernel's time, a
        collective's link time, a call's its callee's ops' (nothing for another op)."""
        if isinstance(op, KernelOp):
            return self.kernel_s(op)
        if isinstance(op, COLLECTIVE_OPS):
            return collective_cost(op, self.target)[0]
        if not isinstance(op, func.CallOp):
            return 0.0
        name = op.callee.string_value()
        if name not in self._calls:
            callee = self.callees.get(name)
            self._calls[name] = 0.0 if callee is None else self.ops_s(callee.body.block.ops)
        return self._calls[name]

    def ops_s(self, ops: Iterable[Operation]) -> float:
        """What running `ops` (again) costs: the sum of their modeled times."""
        return sum(self.op_s(op) for op in ops)

    def moved_s(self, touches: Sequence[Touch]) -> float:
        """How much the touched kernels' modeled times grow when the bytes move to DDR,
        on top of what earlier spills (`move`) put there."""
        extra: dict[KernelOp, tuple[int, int, int]] = {}
        for t in touches:
            read, written, times = extra.get(t.kernel, (0, 0, 0))
            extra[t.kernel] = (read + t.read, written + t.written, max(times, t.times))
        total = 0.0
        for kernel, (read, written, times) in extra.items():
            now_read, now_written = self._ddr.get(kernel, (0, 0))
            total += times * (self.kernel_s(kernel, now_read + read, now_written + written)
                              - self.kernel_s(kernel, now_read, now_written))
        return total

    def move(self, touches: Iterable[Touch]) -> None:
        """Record the touched bytes as in DDR from now on."""
        for t in touches:
            read, written = self._ddr.get(t.kernel, (0, 0))
            self._ddr[t.kernel] = (read + t.read, written + t.written)
