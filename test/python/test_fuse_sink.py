"""rdu-fuse's sink_to_first_use: one pass with order keys, the same result as
re-numbering the block before every move (the plain definition)."""

from __future__ import annotations

import pytest
from xdsl.dialects import func

from rducc.dialects.program import functions
from rducc.dialects.rdu.host_call import HostCallOp
from rducc.driver import import_exported
from rducc.passes import rdu_fuse


def sink_by_renumbering(function: func.FuncOp) -> int:
    """The definition: each non-activation op, last first, just before its first
    user unless that is a call, positions recomputed before every move. Returns the
    number of moves."""
    block = function.body.block
    activations = rdu_fuse._activation_ops(block, function)
    ops = [op for op in block.ops if not isinstance(op, func.ReturnOp) and op not in activations]
    moves = 0
    for op in reversed(ops):
        users = [use.operation for r in op.results for use in r.uses]
        if not users or any(u.parent_block() is not block for u in users):
            continue
        position = {o: i for i, o in enumerate(block.ops)}
        first_user = min(users, key=lambda u: position[u])
        if isinstance(first_user, func.CallOp | HostCallOp):
            continue  # a call is a kernel boundary: nothing fuses with it
        if position[first_user] > position[op] + 1:
            op.detach()
            block.insert_op_before(op, first_user)
            moves += 1
    return moves


def _order(function: func.FuncOp) -> list[str]:
    return [f"{op.name} {[r.name_hint for r in op.results]}" for op in function.body.block.ops]


@pytest.mark.parametrize("name", ["tiny_llama", "tiny_gpt2", "tiny_llama_decode"])
def test_sink_matches_the_definition(exported_small, name: str) -> None:
    module = import_exported(exported_small[name][2])
    reference = module.clone()
    moves = sink_by_renumbering(next(functions(reference)))
    function = next(functions(module))
    before = _order(function)
    rdu_fuse.sink_to_first_use(function)
    assert moves > 0, "the model gives the sink nothing to move: the test would prove nothing"
    assert _order(function) != before
    assert _order(function) == _order(next(functions(reference)))
    module.verify()
