"""Executed microbatches of a pipelined training step (`rdu-partition{pp=N}` of a
step compiled with `microbatches=K`): which microbatch each op works on, and
the 1F1B order the runtime runs the ops in.

A step that runs its batch in K microbatches itself (`rdu.microbatches`,
`compile_training(..., microbatches=K)`) slices every batched input along its
first dim into K equal parts; microbatch i's forward and backward are the ops
that depend on part i (`microbatch_labels`). Its gradients are summed over the
microbatches (ops reading several microbatches' values: `JOINED`) before the
one optimizer update. The stages cut each microbatch's forward alike
(`training.training_stages`), and `order_one_f_one_b` puts the block's ops in
the order of the 1F1B schedule (`pipeline_schedule.one_f_one_b_order`): the
runtime runs a block in order, so it runs stage s's forward of microbatch i
when the schedule does, and the backward of microbatch i while later
microbatches' forwards are still in the pipeline.
"""

from __future__ import annotations

import heapq

from xdsl.dialects import func
from xdsl.ir import Block, BlockArgument, Operation

from rducc.dialects.contracts import Phase, arg_attrs, is_input, op_stage, phase_of
from rducc.dialects.rdu.dataflow import SliceOp
from rducc.dialects.shapes import shape_of
from rducc.errors import RduccError
from rducc.model.pipeline_schedule import one_f_one_b_order

JOINED = -1
"""The label of an op reading values of several microbatches (the loss's sum, a gradient's)."""


def _input_part(op: Operation, inputs: set[BlockArgument], count: int) -> int | None:
    """Which of `count` equal parts along dim 0 of a user input `op` slices, or None."""
    if not isinstance(op, SliceOp) or op.input not in inputs:
        return None
    whole, part = shape_of(op.input.type), shape_of(op.result.type)
    offsets, strides = list(op.offsets.get_values()), list(op.strides.get_values())
    if not whole or whole[0] % count or part[0] != whole[0] // count or strides[0] != 1:
        return None
    if list(part[1:]) != list(whole[1:]) or any(offsets[1:]) or offsets[0] % part[0]:
        return None
    return offsets[0] // part[0]


def microbatch_labels(function: func.FuncOp, count: int, pass_name: str = "rdu-partition") -> dict[Operation, int]:
    """Microbatch of each op of `function` that works on one (a slice of a user
    input, or an op reading values of one microbatch only, with values no
    microbatch owns: weights, constants); `JOINED` for an op reading several.
    Raises `RduccError` (naming `pass_name`) when the slices do not make `count` parts."""
    block = function.body.block
    inputs = {arg for arg, attrs in zip(block.args, arg_attrs(function)) if is_input(attrs)}
    labels: dict[Operation, int] = {}
    for op in block.ops:
        part = _input_part(op, inputs, count)
        if part is not None:
            labels[op] = part
            continue
        read = {labels[v.owner] for v in op.operands if isinstance(v.owner, Operation) and v.owner in labels}
        read.discard(JOINED)
        if len(read) == 1:
            labels[op] = read.pop()
        elif read:
            labels[op] = JOINED
    found = {label for label in labels.values() if label != JOINED}
    if found != set(range(count)):
        raise RduccError(f"{pass_name}: the step runs {count} microbatches (rdu.microbatches), but its ops "
                         f"slice the batched inputs into parts {sorted(found)}; compile it with "
                         "compile_training(..., microbatches=K)")
    return labels


def _task_rank(op: Operation, label: int | None, rank: dict[tuple[int, int, str], int]) -> int | None:
    phase = phase_of(op)
    if label is None or label == JOINED or phase not in (Phase.FORWARD, Phase.BACKWARD):
        return None
    return rank[(op_stage(op) or 0, label, "forward" if phase == Phase.FORWARD else "backward")]


def order_one_f_one_b(function: func.FuncOp, stages: int, count: int) -> None:
    """Reorder `function`'s block (its ops staged, `rdu.stage`) into the 1F1B
    schedule of `stages` stages and `count` microbatches: each op of microbatch
    i runs with its stage's forward or backward task of i; an op of no single
    microbatch as soon as what it reads is made (a weight's transpose before its
    first reader, a gradient's sum after its last part); the optimizer last."""
    block = function.body.block
    labels = microbatch_labels(function, count)
    rank = {task: index for index, task in enumerate(one_f_one_b_order(stages, count))}
    ops = [op for op in block.ops if not isinstance(op, func.ReturnOp)]
    last = len(rank)
    priority: dict[Operation, int] = {}
    for op in ops:
        task = _task_rank(op, labels.get(op), rank)
        if phase_of(op) == Phase.OPTIMIZER:
            priority[op] = last
        elif task is not None:
            priority[op] = task
        else:
            priority[op] = max((priority[v.owner] for v in op.operands if v.owner in priority), default=-1)
    _reorder(block, ops, priority)


def _reorder(block: Block, ops: list[Operation], priority: dict[Operation, int]) -> None:
    """Put `ops` in `block` in a dependency order that takes the lowest priority
    first (ties in their present order): Kahn's algorithm over their operands."""
    index = {op: n for n, op in enumerate(ops)}
    waiting = {op: len({v.owner for v in op.operands if v.owner in index}) for op in ops}
    users: dict[Operation, list[Operation]] = {op: [] for op in ops}
    for op in ops:
        for producer in {v.owner for v in op.operands if v.owner in index}:
            users[producer].append(op)  # type: ignore[index]
    ready = [(priority[op], index[op], op) for op in ops if waiting[op] == 0]
    heapq.heapify(ready)
    order: list[Operation] = []
    while ready:
        _, _, op = heapq.heappop(ready)
        order.append(op)
        for user in users[op]:
            waiting[user] -= 1
            if waiting[user] == 0:
                heapq.heappush(ready, (priority[user], index[user], user))
    if len(order) != len(ops):
        raise AssertionError("the step's ops have a cycle")
    returned = block.last_op
    for op in order:
        op.detach()
        block.insert_op_before(op, returned) if returned is not None else block.add_op(op)


__all__ = ["JOINED", "microbatch_labels", "order_one_f_one_b"]
