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

A kernel that fits no tiling is an error located at its first op.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass

from rducc.diagnostics import LocatedError
from rducc.dialects.contracts import Level, TilePlanAttr, module_target, set_tile_plan
from rducc.dialects.program import kernel_name
from rducc.dialects.rdu.dataflow import KernelOp
from rducc.model.kernel_model import TilePlan, WorkingSet, best_plan, kernel_group, untiled, working_set
from rducc.passes.common import require_tensor_program
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


def tile_kernel(kernel: KernelOp, target: Target) -> None:
    """Choose and record the tiling of one kernel, or raise a located error."""
    found = best_plan(kernel_group(kernel), target)
    if found is None:
        raise _untileable(kernel, target)
    record_plan(kernel, *found)


@dataclass(frozen=True)
class RduTile(ModulePass):
    """Choose per-kernel tile sizes so each kernel's live tiles fit in SRAM."""

    name = "rdu-tile"
    accepts: ClassVar[tuple[Level, ...]] = (Level.KERNELS,)
    produces: ClassVar[Level | None] = None

    target: str = ""
    """Target name or file; default: the module's rdu.target, else sn40l."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        require_tensor_program(op, self.name, self.accepts)
        target = module_target(op, self.target)
        for kernel in [o for o in op.walk() if isinstance(o, KernelOp)]:
            tile_kernel(kernel, target)
