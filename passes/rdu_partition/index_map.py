"""Gathers by an index map whose values are known, split per rank (passes/rdu_partition).

`k[:, head_map]` repeats grouped-query KV heads by a map (`arange(heads) // group`).
The map's values are known when it is an integer buffer the importer inlined
(one made in `__init__`: on the meta device only when built under
`rducc.empty_weights()`, which keeps integer tensors real), or when the program
computes it from nothing but compile-time values (`torch.arange(heads) // group`
in `forward`: an `rdu.iota`, then maps and layout ops), which is evaluated here
by the runtime's own kernels. When the source is split along the gathered dim
and the map sends each rank's block of output positions into that same rank's
block of the source, each rank gathers its own block with the map rebased to
its part: no all-gather of the source. A map whose values are not known (a
buffer with no values, an index read from an input) or that crosses rank
blocks is left to the general rule (the source gathered whole).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from xdsl.dialects import arith, func
from xdsl.dialects.builtin import ArrayAttr, DenseIntOrFPElementsAttr, DictionaryAttr, ModuleOp
from xdsl.ir import BlockArgument, OpResult, SSAValue

from rducc.dialects.contracts import global_of
from rducc.dialects.program import functions
from rducc.dialects.rdu import dataflow as rdu
from rducc.dialects.shapes import num_elements, shape_of
from rducc.dialects.tier import GlobalOp

EVALUATED_OPS = (rdu.IotaOp, rdu.MapOp, rdu.ReshapeOp, rdu.TransposeOp, rdu.BroadcastOp, rdu.SliceOp, rdu.ConcatOp,
                 rdu.GatherOp, arith.ConstantOp)
"""Ops whose result is a function of their operands and attributes alone (the same
on every rank): an index computed from them and constants is known at compile time."""

EVALUATED_LIMIT = 1 << 16
"""Only values of at most this many elements are evaluated (an index map, not data)."""


def _arg_global(function: func.FuncOp, arg: BlockArgument, module: ModuleOp) -> GlobalOp | None:
    """The `tier.global` an argument of `function` reads (its `rdu.global`), or None."""
    attrs = function.arg_attrs
    if not isinstance(attrs, ArrayAttr) or arg.index >= len(attrs.data):
        return None
    entry = attrs.data[arg.index]
    name = global_of(entry.data) if isinstance(entry, DictionaryAttr) else None
    if name is None:
        return None
    return next((g for g in module.ops if isinstance(g, GlobalOp) and g.sym_name.data == name), None)


def _global_values(found: GlobalOp | None) -> tuple[int, ...] | None:
    value = found.initial_value if found is not None else None
    if not isinstance(value, DenseIntOrFPElementsAttr):
        return None
    values = value.get_values()
    return tuple(int(v) for v in values) if all(isinstance(v, int) for v in values) else None


def _computed(value: SSAValue, function: func.FuncOp, module: ModuleOp) -> np.ndarray | None:
    """The array `value` holds when its op is one of EVALUATED_OPS whose operands
    are all known (recursively), evaluated by the runtime's kernel for the op; else None."""
    op = value.owner if isinstance(value, OpResult) else None
    if (not isinstance(op, EVALUATED_OPS) or len(op.results) != 1
            or num_elements(shape_of(value.type)) > EVALUATED_LIMIT):
        return None
    operands = [_array(operand, function, module) for operand in op.operands]
    if any(operand is None for operand in operands):
        return None
    # Imported here: the runtime's kernels (and torch under them) cost seconds to
    # load, and most partitions evaluate no map.
    from rducc.runtime import implementations as _implementations  # noqa: F401 - registers the kernels
    from rducc.runtime.registry import prepare

    try:
        return np.asarray(prepare(op, "compile-time evaluation")(None, *operands))
    except Exception:  # a kernel that needs a run's context or fails: not known
        return None


def _array(value: SSAValue, function: func.FuncOp, module: ModuleOp) -> np.ndarray | None:
    if isinstance(value, OpResult):
        return _computed(value, function, module)
    known = known_values(value, function, module)
    return None if known is None else np.asarray(known, dtype=np.int64).reshape(shape_of(value.type))


def known_values(value: SSAValue, function: func.FuncOp, module: ModuleOp) -> tuple[int, ...] | None:
    """The flat integer values of `value` when known at compile time: an argument
    reading a global with an inline value, an argument of an outlined layer
    that every call passes such a value with the same values, or a small result
    computed from such values and ramps alone (`_computed`). Else None."""
    if isinstance(value, OpResult):
        array = _computed(value, function, module)
        if array is None or not np.issubdtype(array.dtype, np.integer):
            return None
        return tuple(int(v) for v in array.reshape(-1))
    if not isinstance(value, BlockArgument) or value.block is not function.body.block:
        return None
    direct = _global_values(_arg_global(function, value, module))
    if direct is not None:
        return direct
    name = function.sym_name.data
    seen: set[tuple[int, ...] | None] = set()
    for caller in functions(module):
        for op in caller.body.block.ops:
            if isinstance(op, func.CallOp) and op.callee.string_value() == name:
                passed = op.operands[value.index]
                seen.add(known_values(passed, caller, module) if caller is not function else None)
    return seen.pop() if len(seen) == 1 else None


def rank_local(values: Sequence[int], source_length: int, parts: int, stride: int = 1) -> bool:
    """Whether the map sends each rank's block of output positions (the output
    split in `parts * stride` equal blocks, one a rank) into the source block that
    rank holds (the source dim split in `parts` equal blocks, rank r holding block
    `r // stride`). Negative indices (counted from the end) are not rebased: such
    a map is not taken."""
    ranks = parts * stride
    if ranks < 2 or not values or len(values) % ranks or source_length % parts:
        return False
    out_part, part = len(values) // ranks, source_length // parts
    return all(0 <= v < source_length and v // part == position // out_part // stride
               for position, v in enumerate(values))
