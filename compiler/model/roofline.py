"""Roofline time of a kernel, or of a call of an outlined layer, on tensor-level IR.

`rdu-place-saved` weighs recomputing a saved value against spilling it before
any kernel is tiled or placed, so it cannot ask the cost model's walk of a
placed program; it asks this: a kernel's FLOPs at the peak of its result's
type or its inputs and results at HBM bandwidth, whichever is longer, plus a
launch; a collective (a tp all-reduce of a layer, say) its link time as the cost
model counts it (`kernel_timing.collective_cost`), so a recompute that runs one
again pays for it; a call costs what its callee's ops cost (the sum of its kernels' and
its nested calls' roofline times), since a call runs its callee's kernels one
after another.
"""

from __future__ import annotations

from collections.abc import Mapping

from xdsl.dialects import arith, func
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


def op_roofline_s(op: Operation, target: Target, callees: Mapping[str, func.FuncOp],
                  known: dict[str, float] | None = None) -> float:
    """The roofline time of a top-level op of a function: a kernel's own, a call's
    the sum of its callee's ops' (remembered by callee name in `known`), a call
    whose callee is not in `callees` nothing (it is not a layer of this module)."""
    if not isinstance(op, func.CallOp):
        return kernel_roofline_s(op, target)
    name = op.callee.string_value()
    known = {} if known is None else known
    if name not in known:
        callee = callees.get(name)
        known[name] = 0.0 if callee is None else sum(
            op_roofline_s(inner, target, callees, known) for inner in callee.body.block.ops
            if not isinstance(inner, func.ReturnOp | arith.ConstantOp))
    return known[name]
