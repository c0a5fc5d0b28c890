"""Expert parallelism for `rdu-partition{ep=N}`: routed experts split across sockets.

A mixture-of-experts layer written as transformers' `batched_mm` experts (and
any model that indexes a stacked expert table by each token's chosen expert ids)
imports as

    %w = rdu.gather %table[%ids] dim 0 : tensor<E x ...>, tensor<S x i64> -> tensor<S x ...>

one row of the table for each of the S token-expert pairs, then batched matmuls
and elementwise ops on those S rows, then a reduction over each token's pairs.
With ep = tp ranks, each rank holds E / ep consecutive experts (the table split
along dim 0, `rdu.shard` on its global) and:

- **dispatch**: every rank already holds every pair's hidden state and expert id
  (the routing runs replicated, after the attention's all-reduce), so no data
  moves: a rank gathers, for every pair, its own expert of the pair's local
  index `id mod E/ep` (`local_expert_ids`) and runs the pair rows through the
  expert's matmuls. Row s of rank r is then what expert `r * E/ep + id[s] mod
  E/ep` makes of pair s: the `Experts` layout;
- **combine** (`combine`): pair s needs rank `id[s] div E/ep`'s row (its owner,
  `Experts.dest`). The S rows are cut into ep chunks (padded to a multiple of
  ep by repeating rows); `rdu.all_to_all` sends chunk j of every rank to rank j,
  which picks each of its pairs' row from the rank that owns the pair's expert
  (a gather by owner) and `rdu.all_gather` joins the chunks: every rank holds
  the S combined rows, as the replicated program did.

The layout flows from the expert gather through every op whose dim 0 is the
pairs' dim, row for row (maps, slices, reshapes that keep the S rows, batched
matmuls, a second gather of another table with the same ids); any other op
(the reduction over a token's pairs) wants its operand whole, which is the
combine. A rank's static program still runs every pair (shapes are static): it
reads S rows of its own table, E/ep experts deep, instead of S rows of the
whole table.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.dialects import arith
from xdsl.dialects.builtin import IntegerAttr, TensorType, i64
from xdsl.ir import Block, Operation, Region, SSAValue

from rducc.dialects.rdu.dataflow import GatherOp, MapOp, ReshapeOp, YieldOp


@dataclass(frozen=True)
class Experts:
    """The layout of a value whose dim 0 is the S token-expert pairs, row s on
    rank r computed by rank r's expert of pair s's local index; `dest` (replicated,
    i64, [S]) is the rank that owns each pair's expert."""

    dest: SSAValue
    rows: int


def expert_table(op: Operation, ep: int) -> int | None:
    """The expert count E when `op` gathers rows of a stacked expert table by one
    1-D id tensor (`table[ids]`, dim 0, a table of rank >= 3 whose E splits `ep`
    ways); else None."""
    if not isinstance(op, GatherOp) or op.dim.value.data != 0 or len(op.indices) != 1:
        return None
    table, ids = op.source.type, op.indices[0].type
    if not isinstance(table, TensorType) or not isinstance(ids, TensorType):
        return None
    shape = table.get_shape()
    if len(shape) < 3 or len(ids.get_shape()) != 1 or shape[0] % ep or shape[0] < ep:
        return None
    return shape[0]


def _int_map(ids: SSAValue, build: list[tuple[type, int]]) -> MapOp:
    """A map of i64 `ids` applying each (arith op, constant) in turn: x := op(x, c)."""
    block = Block(arg_types=[i64])
    value: SSAValue = block.args[0]
    for op_class, number in build:
        constant = arith.ConstantOp(IntegerAttr(number, i64))
        step = op_class(value, constant.result)
        block.add_ops([constant, step])
        value = step.results[0]
    block.add_op(YieldOp(value))
    return MapOp([ids], ids.type, Region(block))


def local_expert_ids(ids: SSAValue, experts: int, ep: int) -> tuple[MapOp, MapOp]:
    """(each pair's expert index within its owner's part, the owner rank) of the
    expert ids (negative ids counting from the end, as the gather's `wraps` allows)."""
    per_rank = experts // ep
    wrapped = [(arith.AddiOp, experts), (arith.RemSIOp, experts)]
    return (_int_map(ids, [*wrapped, (arith.RemSIOp, per_rank)]),
            _int_map(ids, [*wrapped, (arith.DivSIOp, per_rank)]))


def keeps_rows(op: Operation, value: SSAValue, rows: int) -> bool:
    """Whether `op` computes its result's row s from row s of `value` alone (the
    pairs' dim 0 kept): a reshape keeping dim 0, or an op whose dim map sends
    `value`'s dim 0 to its result's dim 0."""
    from rducc.dialects.op_facts import OpFacts

    if len(op.results) != 1 or not isinstance(op.results[0].type, TensorType):
        return False
    result = op.results[0].type.get_shape()
    if not result or result[0] != rows:
        return False
    if isinstance(op, ReshapeOp):
        return True
    if not isinstance(op, OpFacts):
        return False
    shapes = [v.type.get_shape() if isinstance(v.type, TensorType) else () for v in op.operands]
    dims = op.dims_for(shapes, [result])
    index = list(op.operands).index(value)
    return bool(shapes[index]) and shapes[index][0] == rows and dims.operands[index][0] == 0


__all__ = ["Experts", "expert_table", "keeps_rows", "local_expert_ids"]
