"""ZeRO stage 3 prefetch: each parameter's all-gather one layer call early.

Stage 3 holds each trained parameter split over the data-parallel replicas and
all-gathers it just before its first reader of each phase (`_shard_parameters`).
When that reader is a call of an outlined layer, the gather moves to just before
the previous call of the same phase (the previous layer's, in the order the step
runs them: the backward's layers last to first), so that the links gather layer
i+1's weights while layer i computes. The cost model's schedule places them side
by side (`compiler/model/overlap_schedule.py`: a layer call's kernels wait only for
the collectives that make its operands); the gathered weight holds HBM from the
gather to its last reader, one layer call longer, which `rdu-place-tiers` counts
with the other values it holds. Only without pipeline stages (pp = 1): a stage cut
orders calls by stage, not by the layer the gather serves.
"""

from __future__ import annotations

from xdsl.dialects import func
from xdsl.ir import Block, BlockArgument, Operation

from rducc.dialects.contracts import phase_of
from rducc.dialects.rdu.collectives import AllGatherOp


def prefetch_parameter_gathers(function: func.FuncOp) -> int:
    """Move each all-gather of an argument of `function` whose first reader is a
    layer call to just before the previous layer call of its phase; how many moved."""
    block = function.body.block
    moved = 0
    for gather in [op for op in block.ops if isinstance(op, AllGatherOp)]:
        if not isinstance(gather.operands[0], BlockArgument):
            continue
        first = _first_reader(gather, block)
        if not isinstance(first, func.CallOp):
            continue
        earlier = _previous_call(gather, phase_of(first))
        if earlier is None:
            continue
        gather.detach()
        block.insert_op_before(gather, earlier)
        moved += 1
    return moved


def _first_reader(op: Operation, block: Block) -> Operation | None:
    readers = [use.operation for result in op.results for use in result.uses]
    tops = [r for r in readers if r.parent_block() is block]
    return min(tops, key=block.get_operation_index) if tops and len(tops) == len(readers) else None


def _previous_call(op: Operation, phase: object) -> func.CallOp | None:
    """The nearest call before `op` in its block when it is of `phase` (the previous
    layer's); None when there is none or it is of another phase (the first layer)."""
    earlier = op.prev_op
    while earlier is not None:
        if isinstance(earlier, func.CallOp):
            return earlier if phase_of(earlier) == phase else None
        earlier = earlier.prev_op
    return None
