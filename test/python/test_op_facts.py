"""Per-op facts (dialects/op_facts.py): every op of rducc's dialects has a dim
map, FLOPs and bytes or says it computes nothing; dim maps of a few ops; the
tiling union-find and the sharding pass read the same reshape pairing."""

from __future__ import annotations

import pytest
from xdsl.dialects import arith
from xdsl.dialects.builtin import FloatAttr, TensorType, bf16, f32, i64
from xdsl.dialects.test import TestOp as ForeignOp
from xdsl.ir import Block, Region
from xdsl.utils.test_value import create_ssa_value

from rducc.dialects import ALL_DIALECTS
from rducc.dialects.op_facts import Dim, NoCompute, OpFacts, facts_of
from rducc.dialects.rdu.dataflow import (
    ConcatOp,
    GatherOp,
    MapOp,
    MatmulOp,
    ReduceKind,
    ReduceOp,
    ReshapeOp,
    TransposeOp,
    YieldOp,
)
from rducc.errors import RduccError
from rducc.model.cost_model import op_flops
from rducc.model.kernel_model import dim_classes, make_group
from rducc.passes.rdu_partition import Split, _Unsplittable, reshape_split

REDUCED, BLOCKED, BROADCAST = Dim.REDUCED, Dim.BLOCKED, Dim.BROADCAST


def _tensor(*shape: int, element=f32) -> TensorType:
    return TensorType(element, shape)


def _value(*shape: int, element=f32):
    return create_ssa_value(_tensor(*shape, element=element))


def _op_classes() -> list[type]:
    return [op for name in sorted(ALL_DIALECTS) for op in ALL_DIALECTS[name]().operations]


@pytest.mark.parametrize("op_class", _op_classes(), ids=lambda op: op.name)
def test_every_op_has_facts_or_says_it_computes_nothing(op_class):
    if issubclass(op_class, NoCompute):
        assert not issubclass(op_class, OpFacts), f"{op_class.name} is both NoCompute and OpFacts"
        return
    assert issubclass(op_class, OpFacts), f"{op_class.name} has no op facts and does not declare NoCompute"
    for fact in ("dims_for", "flops"):
        assert getattr(op_class, fact) is not getattr(OpFacts, fact), f"{op_class.name} lacks {fact}"
    assert callable(op_class.bytes_read) and callable(op_class.bytes_written)


def test_the_walk_sees_the_dialects_and_the_collectives():
    names = {op.name for op in _op_classes()}
    assert {"rdu.matmul", "rdu.all_reduce", "rdu.send_recv", "tier.dma", "tier.compute"} <= names


def test_an_op_without_facts_is_an_error_not_zero():
    foreign = ForeignOp(operands=[_value(4)], result_types=[_tensor(4)])
    with pytest.raises(RduccError, match="no op facts"):
        facts_of(foreign)
    with pytest.raises(RduccError, match="no op facts"):
        op_flops(foreign)
    assert facts_of(YieldOp()) is None


def test_matmul_batch_broadcast_and_transposed_weight():
    lhs, rhs = _value(2, 8, 5, 16), _value(1, 32, 16)
    op = MatmulOp(lhs, rhs, _tensor(2, 8, 5, 32), transpose_rhs=True)
    dims = op.dim_map()
    assert dims.operands == ((0, 1, 2, REDUCED), (BROADCAST, 3, REDUCED))
    assert dims.sums and not dims.blocked
    assert op.flops() == 2 * 2 * 8 * 5 * 32 * 16
    assert op.bytes_read() == (2 * 8 * 5 * 16 + 32 * 16) * 4 and op.bytes_written() == 2 * 8 * 5 * 32 * 4


def test_transpose_moves_dim_perm_i_to_i():
    op = TransposeOp(_value(2, 3, 4), [2, 0, 1], _tensor(4, 2, 3))
    assert op.dim_map().operands == ((1, 2, 0),)
    assert op.flops() == 0


@pytest.mark.parametrize(
    ("source", "result", "dests", "blocked"),
    [
        ((1, 8, 16, 64), (8, 16, 64), (BLOCKED, 0, 1, 2), set()),  # a size-1 dim dropped
        ((2, 8, 16, 64), (16, 16, 64), (BLOCKED, BLOCKED, 1, 2), {0}),  # batch x heads merged
        ((4, 1, 6), (4, 6, 1), (0, BLOCKED, 1), {2}),  # size-1 dims pair with nothing
        ((4, 6), (4, 2, 3), (0, BLOCKED), {1, 2}),  # a dim split in two
    ],
)
def test_reshape_pairs_dims_it_keeps_whole_and_blocks_the_rest(source, result, dests, blocked):
    dims = ReshapeOp(_value(*source), _tensor(*result)).dim_map()
    assert dims.operands == (dests,)
    assert dims.blocked == frozenset(blocked)


@pytest.mark.parametrize(
    ("kind", "keepdim", "result", "dests", "blocked", "sums"),
    [
        (ReduceKind.SUM, False, (2, 5), (0, REDUCED, 1), set(), True),
        (ReduceKind.MAX, True, (2, 1, 5), (0, REDUCED, 2), {1}, False),
    ],
)
def test_reduce_drops_or_keeps_the_reduced_dim(kind, keepdim, result, dests, blocked, sums):
    op = ReduceOp(kind, _value(2, 3, 5), [1], keepdim, _tensor(*result))
    dims = op.dim_map()
    assert (dims.operands, dims.blocked, dims.sums) == ((dests,), frozenset(blocked), sums)
    assert op.flops() == 30


def test_concat_blocks_its_dim_on_every_input():
    op = ConcatOp([_value(2, 3), _value(2, 5)], 1, _tensor(2, 8))
    dims = op.dim_map()
    assert dims.operands == ((0, BLOCKED), (0, BLOCKED))
    assert dims.blocked == frozenset({1})


def test_gather_keeps_the_outer_dims_and_indexes_the_rest():
    # table [V=100, H=64] gathered by ids [2, 7] along dim 0 -> [2, 7, 64]
    op = GatherOp(_value(100, 64), [_value(2, 7, element=i64)], 0, _tensor(2, 7, 64))
    assert op.dim_map().operands == ((BLOCKED, 2), (0, 1))
    # along dim 1 of [3, 10, 4] by a broadcast index [1, 5] -> [3, 1, 5, 4]
    op = GatherOp(_value(3, 10, 4), [_value(1, 5, element=i64)], 1, _tensor(3, 1, 5, 4))
    assert op.dim_map().operands == ((0, BLOCKED, 3), (1, 2))


def test_map_counts_its_body_ops_and_broadcasts_its_inputs():
    block = Block(arg_types=[bf16, bf16])
    one = arith.ConstantOp(FloatAttr(1.0, bf16))
    add = arith.AddfOp(block.args[0], block.args[1])
    mul = arith.MulfOp(add.result, one.result)
    block.add_ops([one, add, mul, YieldOp(mul.result)])
    op = MapOp([_value(4, 8, element=bf16), _value(8, element=bf16)], _tensor(4, 8, element=bf16), Region(block))
    assert op.dim_map().operands == ((0, 1), (1,))
    assert op.body_ops() == 2 and op.flops() == 2 * 32


def _tiled_to(source: tuple[int, ...], result: tuple[int, ...], dim: int) -> int | None:
    """The result dim the tiling union-find moves `dim` to (None: blocked)."""
    reshape = ReshapeOp(_value(*source), _tensor(*result))
    classes = dim_classes(make_group([reshape]))
    if classes.is_blocked((reshape.input, dim)):
        return None
    root = classes.find((reshape.input, dim))
    return next(j for j in range(len(result)) if classes.find((reshape.result, j)) == root)


def _sharded_to(source: tuple[int, ...], result: tuple[int, ...], dim: int, tp: int) -> tuple | None:
    """The result split `rdu-partition` gives a split of `dim` over `tp` ranks (None: cannot)."""
    try:
        split = reshape_split(source, result, Split.whole(dim, tp))
    except _Unsplittable:
        return None
    return Split.of(split.entries).entries if split else ()


@pytest.mark.parametrize(
    ("batch", "dim", "tiled", "sharded"),
    [
        (1, 1, 0, ((0, 2, 1, 0),)),  # heads alone: both move them to result dim 0
        (1, 2, 1, ((1, 2, 1, 0),)),
        (1, 3, 2, ((2, 2, 1, 0),)),
        (2, 0, None, ((0, 2, 1, 0),)),  # batch x heads merged: tiling blocks; sharding splits the merge's leading dim
        (2, 1, None, ((0, 2, 1, 8),)),  # heads under a merged batch: the heads of each batch row (period 8)
        (2, 2, 1, ((1, 2, 1, 0),)),
        (2, 3, 2, ((2, 2, 1, 0),)),
    ],
)
def test_tiling_and_sharding_agree_on_a_batch_heads_merge(batch, dim, tiled, sharded):
    source, result = (batch, 8, 16, 64), (batch * 8, 16, 64)
    assert _tiled_to(source, result, dim) == tiled
    assert _sharded_to(source, result, dim, 2) == sharded
    if tiled is not None:  # a dim kept whole: the same answer
        assert sharded == ((tiled, 2, 1, 0),)
