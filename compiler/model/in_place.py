"""Which updates of globals a training step writes over the global's own buffer.

One rule, asked by the planner (`rdu-place-saved`, `rdu-place-tiers`: such a
new value holds no bytes of its own) and by the lowering (`rdu-insert-dma`'s
`write_in_place.rewrite_whole` rewrites exactly these): the new value of a
global (`rdu.result_updates` of kind "buffer") made by a kernel or call of
the function's block, returned once, of the global's type, when the global's
old value has no reader after that op, and

- a kernel's tiles write over the tiles they read (`tiles_over`): the kernel
  is untiled or does not read the old value, or loads it whole before its
  tile loop, or it is
  tiled along the same dim as the new value (tile i reads and then writes
  only its own slab of that dim, whatever window it reads in the others);
- a call's callee writes its returned value over the argument the call
  passes the old value in, by the same rule inside the callee, and no other
  argument of that call is the same buffer.
"""

from __future__ import annotations

from collections import Counter

from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Block, BlockArgument, Operation, OpResult, SSAValue

from rducc.dialects.contracts import arg_attrs, global_of, result_updates, tile_plan_of
from rducc.dialects.liveness import positions
from rducc.dialects.rdu.dataflow import KernelOp
from rducc.dialects.unchanged import remembered, unchanged
from rducc.model.kernel_model import candidate_loops, gathered_inputs, kernel_group


def tiles_over(kernel: KernelOp, old: SSAValue, index: int) -> bool:
    """Whether `kernel`'s output `index` may be written tile by tile over the
    buffer of its input `old`: every tile reads `old` only in the slab of the
    tiled dim it writes (or `old` whole before the loop). Under the recorded
    `rdu.tile_plan`, or, before `rdu-tile`, under every plan it may record."""
    args = remembered(("arguments by input", kernel), lambda: _arguments_by_input(kernel)).get(old, [])
    group = remembered(("kernel group", kernel), lambda: kernel_group(kernel))
    if not args:
        return True  # read only by kernels before this one
    if len(args) != 1 or args[0] in remembered(("gathered inputs", kernel), lambda: gathered_inputs(group)):
        return False
    position = args[0].index
    plan = tile_plan_of(kernel)
    if plan is not None:
        if plan.tiles.data == 1:
            return True
        read, written = plan.tiled_in.data[position].data, plan.tiled_out.data[index].data
        return read in (-1, written)
    output = group.outputs[index]
    loops = remembered(("candidate loops", kernel), lambda: candidate_loops(group))
    return all(dims.get(args[0], -1) in (-1, dims[output]) for _, dims in loops)


def _arguments_by_input(kernel: KernelOp) -> dict[SSAValue, list[BlockArgument]]:
    """Each input of `kernel` to the body arguments it is passed in, in order."""
    found: dict[SSAValue, list[BlockArgument]] = {}
    for arg, value in zip(kernel.body.block.args, kernel.inputs):
        found.setdefault(value, []).append(arg)
    return found


def overwrites(block: Block, new: SSAValue, old: SSAValue) -> bool:
    """Whether `new`, returned by `block`, is written over the buffer of `old` (the
    module docstring's rule, without its "returned once" and type conditions)."""
    producer = new.owner
    if not isinstance(producer, KernelOp | func.CallOp) or producer.parent_block() is not block:
        return False
    position = remembered(("positions", block), lambda: positions(block))
    tops = [_top_in(use.operation, block) for use in old.uses]
    if any(top is not None and position[top] > position[producer] for top in tops):
        return False
    assert isinstance(new, OpResult)
    index = new.index
    if isinstance(producer, KernelOp):
        return tiles_over(producer, old, index)
    return _call_overwrites(producer, index, old)


def _call_overwrites(call: func.CallOp, index: int, old: SSAValue) -> bool:
    """Whether the callee of `call` writes its result `index` over the argument `call` passes `old` in."""
    passed = [i for i, value in enumerate(call.arguments) if value == old]
    module = call.get_toplevel_object()
    if len(passed) != 1 or not isinstance(module, ModuleOp):
        return False
    callee = remembered(("functions by name", module), lambda: _functions_by_name(module)).get(
        call.callee.string_value())
    if callee is None or not isinstance(returned := callee.body.block.last_op, func.ReturnOp):
        return False
    inner = returned.arguments[index]
    return (list(returned.arguments).count(inner) == 1 and inner.type == callee.body.block.args[passed[0]].type
            and overwrites(callee.body.block, inner, callee.body.block.args[passed[0]]))


def _functions_by_name(module: ModuleOp) -> dict[str, func.FuncOp]:
    """The module's functions by name (the first of a name)."""
    found: dict[str, func.FuncOp] = {}
    for op in module.ops:
        if isinstance(op, func.FuncOp):
            found.setdefault(op.sym_name.data, op)
    return found


def written_in_place(function: func.FuncOp) -> frozenset[SSAValue]:
    """The new values of globals that `function` writes over the global's own
    buffer (the module docstring's rule): they hold no bytes of their own. Each
    kernel's dims and each block's order are found once (`unchanged`)."""
    with unchanged():
        return _written_in_place(function)


def _written_in_place(function: func.FuncOp) -> frozenset[SSAValue]:
    block = function.body.block
    terminator = block.last_op
    if not isinstance(terminator, func.ReturnOp):
        return frozenset()
    old = {name: arg for arg, attrs in zip(function.args, arg_attrs(function))
           if (name := global_of(attrs)) is not None}
    returned = list(terminator.arguments)
    times_returned = Counter(returned)
    found = set()
    for value, update in zip(returned, result_updates(function)):
        if update is None or update.kind != "buffer" or update.name not in old or times_returned[value] != 1:
            continue
        before = old[update.name]
        if value.type == before.type and overwrites(block, value, before):
            found.add(value)
    return frozenset(found)


def _top_in(op: Operation | None, block: Block) -> Operation | None:
    """`op`, or the op of `block` it is nested in."""
    while op is not None and op.parent_block() is not block:
        op = op.parent_op()
    return op


__all__ = ["overwrites", "tiles_over", "written_in_place"]
