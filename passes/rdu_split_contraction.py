"""`rdu-split-contraction`: split a matmul too large to tile into partial products.

`rdu-tile` tiles a kernel along one parallel dim: a matmul `[.., M, K] x
[.., K, N]` tiled along M keeps its whole rhs (K x N) in SRAM, tiled along N
its whole lhs (M x K). A training step's backward has matmuls where both are
too large: the gradient of a language model's hidden states through its
output layer contracts over the vocabulary (`[4096, 128256] x [128256,
4096]`: 1 GB each side in bf16, against 520 MB of SRAM). Such a matmul (one
no tile plan fits, alone, into half the SRAM: fusion adds its neighbours)
becomes `c` matmuls over consecutive chunks of K
(`rdu.slice` of both operands), each small enough that the operand it keeps
whole takes at most a quarter of the SRAM, summed by `rdu.map`s:

    %p0 = rdu.matmul (slice lhs [.., 0:k]),  (slice rhs [0:k, ..])   -> f32
    %p1 = rdu.matmul (slice lhs [.., k:2k]), (slice rhs [k:2k, ..])  -> f32
    %s  = rdu.map %p0, %p1 { addf }  ...  then one truncf to the result type

Partial products of 16-bit operands are f32 (the matmul accumulates there, as
one matmul would), summed in f32 and rounded once. Every new op takes the
matmul's attributes (its phase, layer) and location. Matmuls that fit are
left alone, so a program whose matmuls all tile is unchanged.
"""

from __future__ import annotations

from dataclasses import dataclass
from math import ceil
from typing import ClassVar

from xdsl.context import Context
from xdsl.dialects import arith
from xdsl.dialects.builtin import BFloat16Type, Float16Type, Float32Type, ModuleOp, TensorType, f32
from xdsl.ir import Block, Operation, Region, SSAValue

from rducc.dialects.contracts import Level
from rducc.dialects.program import functions
from rducc.dialects.rdu.dataflow import MapOp, MatmulOp, SliceOp, YieldOp
from rducc.dialects.shapes import byte_width
from rducc.model.kernel_model import best_plan, make_group
from rducc.passes.common import RduPass
from rducc.targets import Target

RESIDENT_SHARE = 4
"""A chunk's operand kept whole may take 1/RESIDENT_SHARE of the target's SRAM."""


FUSION_ROOM = 2
"""A matmul is split unless it tiles alone into 1/FUSION_ROOM of the SRAM: fusion
adds its neighbours (a transpose, an epilogue, a second output) to its kernel."""


def chunk_count(matmul: MatmulOp, target: Target) -> int:
    """How many chunks of K the matmul needs (1: it tiles as it is)."""
    roomy = target.with_value("sram_bytes", target.sram_bytes // FUSION_ROOM)
    if best_plan(make_group([matmul]), roomy) is not None:
        return 1
    lhs, rhs = _shape(matmul.lhs), _shape(matmul.rhs)
    m, k, n = lhs[-2], lhs[-1], rhs[matmul.rhs_n_dim]
    batch = 1
    for d in _shape(matmul.result)[:-2]:
        batch *= d
    resident = batch * min(m, n) * k * byte_width(_element(matmul.lhs))
    chunks = ceil(resident / (target.sram_bytes / RESIDENT_SHARE))
    return min(max(chunks, 2), k)


def _shape(value: SSAValue) -> tuple[int, ...]:
    kind = value.type
    assert isinstance(kind, TensorType)
    return tuple(kind.get_shape())


def _element(value: SSAValue):  # noqa: ANN202 - an xDSL element type
    kind = value.type
    assert isinstance(kind, TensorType)
    return kind.element_type


def _slice(value: SSAValue, dim: int, start: int, size: int) -> SliceOp:
    shape = list(_shape(value))
    offsets = [0] * len(shape)
    offsets[dim] = start
    shape[dim] = size
    return SliceOp(value, offsets, [1] * len(shape), TensorType(_element(value), shape))


def _binary_map(a: SSAValue, b: SSAValue, result: TensorType) -> MapOp:
    element = result.element_type
    block = Block(arg_types=[element, element])
    add = arith.AddfOp(block.args[0], block.args[1])
    block.add_ops([add, YieldOp(add.result)])
    return MapOp([a, b], result, Region(block))


def _cast_map(value: SSAValue, result: TensorType) -> MapOp:
    block = Block(arg_types=[_element(value)])
    cast = arith.TruncFOp(block.args[0], result.element_type)
    block.add_ops([cast, YieldOp(cast.result)])
    return MapOp([value], result, Region(block))


def split_matmul(matmul: MatmulOp, chunks: int, lanes: int) -> list[Operation]:
    """The ops computing `matmul` as `chunks` partial products over K, summed."""
    k = _shape(matmul.lhs)[-1]
    size = ceil(ceil(k / chunks) / lanes) * lanes
    result = matmul.result.type
    assert isinstance(result, TensorType)
    narrow = isinstance(result.element_type, BFloat16Type | Float16Type)
    partial_type = TensorType(f32, result.get_shape()) if narrow else result
    new: list[Operation] = []
    total: SSAValue | None = None
    for start in range(0, k, size):
        width = min(size, k - start)
        lhs = _slice(matmul.lhs, len(_shape(matmul.lhs)) - 1, start, width)
        rhs = _slice(matmul.rhs, matmul.rhs_k_dim, start, width)
        product = MatmulOp(lhs.result, rhs.result, partial_type, matmul.transpose_rhs is not None)
        new += [lhs, rhs, product]
        if total is None:
            total = product.result
        else:
            summed = _binary_map(total, product.result, partial_type)
            new.append(summed)
            total = summed.result
    assert total is not None
    if narrow:
        new.append(_cast_map(total, result))
    hint = matmul.result.name_hint or "mm"
    for index, op in enumerate(new):
        op.attributes.update(matmul.attributes)
        op.location = matmul.location
        op.results[0].name_hint = f"{hint}_k{index}"
    return new


@dataclass(frozen=True)
class RduSplitContraction(RduPass):
    """Split matmuls no tile plan fits into partial products over chunks of K."""

    name = "rdu-split-contraction"
    accepts: ClassVar[tuple[Level, ...]] = (Level.GRAPH,)
    on_tensors: ClassVar[bool] = True

    def rewrite(self, ctx: Context, op: ModuleOp) -> None:
        target = self.target_of(op)
        for function in functions(op):
            for matmul in [o for o in function.body.block.ops if isinstance(o, MatmulOp)]:
                if not isinstance(_element(matmul.lhs), BFloat16Type | Float16Type | Float32Type):
                    continue
                chunks = chunk_count(matmul, target)
                if chunks < 2:
                    continue
                new = split_matmul(matmul, chunks, target.lanes)
                block = matmul.parent_block()
                assert block is not None
                block.insert_ops_before(new, matmul)
                matmul.result.replace_all_uses_with(new[-1].results[0])
                block.erase_op(matmul)
