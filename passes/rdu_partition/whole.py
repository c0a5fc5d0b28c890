"""tp's whole weights: each parameter `rdu-partition` leaves whole on every rank of a
tp group (no `rdu.shard`: a norm's scale, a bias added after an all-reduce, a
projection whose columns split into no whole heads) is marked with the op that
first reads it whole (`contracts.set_whole_reader`), through layout ops and casts
and into outlined layers' calls, so the report can say what every socket holds in
full, and why (compiler/tools/report.py)."""

from __future__ import annotations

from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp, StringAttr
from xdsl.ir import BlockArgument, Operation, SSAValue

from rducc.diagnostics import format_location
from rducc.dialects.contracts import arg_attrs, global_of, set_whole_reader, shard_of
from rducc.dialects.program import entry_function, functions
from rducc.dialects.rdu.dataflow import BroadcastOp, MapOp, ReshapeOp, TransposeOp
from rducc.dialects.tier import GlobalOp

_PASSING = (ReshapeOp, TransposeOp, BroadcastOp)
"""Ops that only move a weight's elements: its reader is the op after them."""


def note_whole_weights(module: ModuleOp) -> None:
    """Mark each parameter global with no split with the op that first reads it whole."""
    entry = entry_function(module)
    callees = {f.sym_name.data: f for f in functions(module)}
    args = {name: arg for arg, attrs in zip(entry.args, arg_attrs(entry)) if (name := global_of(attrs))}
    for op in module.ops:
        kind = op.attributes.get("kind")
        if (not isinstance(op, GlobalOp) or not isinstance(kind, StringAttr) or kind.data != "parameter"
                or shard_of(op) is not None or (arg := args.get(op.sym_name.data)) is None):
            continue
        reader = first_reader(arg, callees)
        if reader is not None:
            set_whole_reader(op, reader.name, format_location(reader.location) or "")


def first_reader(value: SSAValue, callees: dict[str, func.FuncOp], depth: int = 8) -> Operation | None:
    """The first op in program order that reads `value` for its elements: past layout
    ops and casts (one-operand maps), into the callee of an outlined layer's call."""
    users = {use.operation: use.index for use in value.uses}
    block = value.block if isinstance(value, BlockArgument) else value.owner.parent_block()
    if block is None or depth == 0:
        return None
    for op in block.ops:
        if op not in users:
            continue
        found: Operation | None = op
        if isinstance(op, func.CallOp) and (callee := callees.get(op.callee.string_value())) is not None:
            found = first_reader(callee.args[users[op]], callees, depth - 1)
        elif isinstance(op, _PASSING) or (isinstance(op, MapOp) and len(op.inputs) == 1):
            found = first_reader(op.results[0], callees, depth - 1)
        if found is not None:
            return found
    return None
