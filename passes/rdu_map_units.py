"""`rdu-map-units`: map every kernel onto the fabric's PCUs and PMUs.

For each `tier.compute`, its body ops become PCU stages and its buffers PMUs;
the units are allocated (integers) so the pipeline is balanced, placed on the
target's grid and the streams between them routed (hops), and a kernel whose
stages or buffers do not fit at once is split into sections
(`rducc.model.mapping` has the rules; docs/cost-model.md the worked
example). The mapping is recorded on the compute as `rdu.mapping`
(`MappingAttr`, whose verifier rejects a unit used twice or outside the
grid); the cost model times the kernel from it. A body op that does not fit
the whole chip alone is an error located at it. The IR level does not change.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp

from rducc.diagnostics import LocatedError
from rducc.dialects.contracts import LOWERED_LEVELS, KernelMapping, Level, module_target, set_mapping
from rducc.dialects.program import functions, kernel_name
from rducc.dialects.tier import ComputeOp
from rducc.dialects.unchanged import unchanged
from rducc.model.mapping import map_kernel
from rducc.passes.common import RduPass
from rducc.targets import Target


def check_capacity(compute: ComputeOp, mapping: KernelMapping, target: Target) -> None:
    """Every section within the target's PCUs and PMUs, the grid the target's."""
    pcus, pmus = mapping.pcus(), mapping.pmus()
    if pcus > target.pcus or pmus > target.pmus or mapping.grid != target.grid():
        raise LocatedError(compute, f"rdu-map-units: kernel '{kernel_name(compute)}' maps onto {pcus} PCUs and "
                           f"{pmus} PMUs of a {mapping.grid[0]}x{mapping.grid[1]} grid; the target has "
                           f"{target.pcus}, {target.pmus} and {target.grid()[0]}x{target.grid()[1]}")


@dataclass(frozen=True)
class RduMapUnits(RduPass):
    """Allocate, place and route every kernel's PCU stages and PMU buffers."""

    name = "rdu-map-units"
    accepts: ClassVar[tuple[Level, ...]] = LOWERED_LEVELS

    def rewrite(self, ctx: Context, op: ModuleOp) -> None:
        target = module_target(op, self.target)
        with unchanged():  # recording a mapping changes nothing the mapper reads
            self._map(op, target)

    @staticmethod
    def _map(op: ModuleOp, target: Target) -> None:
        for function in functions(op):
            for compute in function.walk():
                if isinstance(compute, ComputeOp):
                    mapping = map_kernel(compute, target)
                    check_capacity(compute, mapping, target)
                    set_mapping(compute, mapping)
