"""Roofline time of a kernel on tensor-level IR.

`rdu-place-saved` weighs recomputing a saved value against spilling it before
any kernel is tiled or placed; it times a kernel as `rdu-fuse` weighs a group
and asks this where no tile plan fits: a kernel's FLOPs at the peak of its
result's type or its inputs and results at HBM bandwidth, whichever is longer,
plus a launch; and a collective (a tp all-reduce of a layer, say) its link time
as the cost model counts it (`kernel_timing.collective_cost`), so a recompute
that runs one again pays for it.
"""

from __future__ import annotations

from xdsl.dialects import arith
from xdsl.ir import Operation

from rducc.dialects.op_facts import facts_of
from rducc.dialects.rdu.collectives import COLLECTIVE_OPS
from rducc.dialects.rdu.dataflow import KernelOp, YieldOp
from rducc.dialects.shapes import value_bytes
from rducc.model.kernel_timing import collective_cost
from rducc.targets import Target


def kernel_roofline_s(kernel: Operation, target: Target) -> float:
    """A kernel's roofline time: its FLOPs at the peak of its result's type, or its
    inputs and results at HBM bandwidth, whichever is longer, plus a launch; a
    collective, its link time."""
    if isinstance(kernel, COLLECTIVE_OPS):
        return collective_cost(kernel, target)[0]
    flops = 0
    body = kernel.body.block.ops if isinstance(kernel, KernelOp) else ()
    for op in body:
        facts = facts_of(op) if not isinstance(op, YieldOp | arith.ConstantOp) else None
        flops += facts.flops() if facts is not None else 0
    element = str(getattr(kernel.results[0].type, "element_type", "f32")) if kernel.results else "f32"
    moved = sum(value_bytes(v) for v in (*kernel.operands, *kernel.results))
    return max(flops / target.peak_flops(element), moved / target.sustained_bandwidth("hbm")) \
        + target.kernel_launch_s
