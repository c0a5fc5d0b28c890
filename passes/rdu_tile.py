"""`rdu-tile`: choose each kernel's tiling so its live tiles fit in SRAM.

A kernel runs as a loop over tiles of one parallel dimension (see
`rducc.model.kernel_model`): its tiled inputs double-buffered, its untiled inputs
resident, its output tiles and the peak of its intermediate values all in
SRAM at once. The pass picks the fewest tiles that fit (tile sizes aligned to
the target's lane width where the dimension allows) and records the plan on
the kernel as `rdu.tile_plan = #rdu.tile_plan<tiles = T, size = t, in = [...],
out = [...], working_set = B>`:

    tiles = T            number of tiles (1: no loop)
    size = t             extent of the tiled dim in one tile
    in / out             the tiled dim of each input / output (-1: untiled)
    working_set = B      bytes of SRAM the kernel needs at once

A kernel that writes rows alone into a buffer it reads for nothing else
(`rducc.model.rows_alone`: every layer's rows of a KV cache stacked over the
layers) is weighed by those rows, not by the buffer it will never load: when they
fit it stays untiled, so `rdu-insert-dma` can lower it so.

A kernel that fits no tiling is an error located at its first op.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp

from rducc.diagnostics import LocatedError
from rducc.dialects.contracts import Level, TilePlanAttr, module_target, set_tile_plan
from rducc.dialects.program import find_entry, kernel_name
from rducc.dialects.rdu.dataflow import KernelOp, ScatterOp
from rducc.model.kernel_model import TilePlan, WorkingSet, best_plan, kernel_group, untiled, working_set
from rducc.model.rows_alone import rows_alone_group, rows_alone_outputs
from rducc.passes.common import RduPass
from rducc.targets import Target


def record_plan(kernel: KernelOp, plan: TilePlan, found: WorkingSet) -> None:
    """Record a tiling on the kernel, as the `rdu.tile_plan` rdu-insert-dma reads."""
    group = kernel_group(kernel)
    set_tile_plan(kernel, TilePlanAttr.of(
        plan.count,
        plan.size,
        [plan.tiled.get(v, -1) for v in group.inputs],
        [plan.tiled.get(v, -1) for v in group.outputs],
        found.total_bytes,
    ))


def _untileable(kernel: KernelOp, target: Target) -> LocatedError:
    group = kernel_group(kernel)
    whole = working_set(group, untiled(), target)
    first = next(iter(kernel.body.block.ops), kernel)
    return LocatedError(
        first,
        f"kernel {kernel_name(kernel)} cannot be tiled to fit {target.name}: untiled it needs "
        f"{whole.total_bytes} bytes of SRAM (inputs {whole.input_bytes}, outputs "
        f"{whole.output_bytes}, intermediates {whole.intermediate_peak}) and {whole.pmus} "
        f"PMUs, against {target.sram_bytes} bytes and {target.pmus} PMUs, and no parallel "
        "dimension splits it small enough",
    )


def tile_kernel(kernel: KernelOp, target: Target, rows_alone: list[ScatterOp] | None = None) -> None:
    """Choose and record the tiling of one kernel, or raise a located error; `rows_alone`:
    its scatters that will write their rows alone (the kernel untiled when those fit)."""
    if rows_alone:
        group = rows_alone_group(kernel_group(kernel), rows_alone)
        alone = working_set(group, untiled(), target)
        if alone.fits(target):
            record_plan(kernel, untiled(), alone)
            return
    found = best_plan(kernel_group(kernel), target)
    if found is None:
        raise _untileable(kernel, target)
    record_plan(kernel, *found)


@dataclass(frozen=True)
class RduTile(RduPass):
    """Choose per-kernel tile sizes so each kernel's live tiles fit in SRAM."""

    name = "rdu-tile"
    accepts: ClassVar[tuple[Level, ...]] = (Level.KERNELS,)
    on_tensors: ClassVar[bool] = True

    def rewrite(self, ctx: Context, op: ModuleOp) -> None:
        target = module_target(op, self.target)
        entry = find_entry(op)
        alone = rows_alone_outputs(entry) if entry is not None else {}
        for kernel in [o for o in op.walk() if isinstance(o, KernelOp)]:
            tile_kernel(kernel, target, alone.get(kernel))
