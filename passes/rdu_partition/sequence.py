"""Sequence parallelism for `rdu-partition{tp=N sequence_parallel=true}` (Megatron's).

Under tp alone a transformer layer's norms, residual adds and dropout run on
the whole activations on every rank, between two all-reduces of the partial
sums the row-split weights make. Sequence parallelism splits that work along
the tokens instead. It is three rules of the general ops, not of one model:

- **a partial sum of activations read by an elementwise op is reduce-scattered
  along its token dim** (the dim before the features; `token_split`): the op
  then runs on the rank's tokens, and so does whatever follows it elementwise
  or row by row (a norm's sums over the features keep the token split). A
  partial sum is an activation's when a matmul made it from a weight (its
  contraction over the weight's split rows: o_proj, down_proj; or, in the
  backward, `dY W^T` over a column-split weight), kept through the sums,
  reshapes and transposes that stay partial; a weight's gradient (summed over
  the tokens, `X^T dY`) is not one: it is all-reduced as before;
- **a matmul of a weight reads its input whole**: a token-split input is
  all-gathered first, then the weight splits by columns or rows as under tp
  (q/k/v, gate/up, the output layer; in the backward, `dY W` of a row-split
  weight). That is the forward's reduce-scatter's transpose;
- **a replicated value beside a token-split one is cut by `rdu.local_part`**
  (each rank takes its tokens, nothing sent: the embedding's output meeting the
  first residual add);

and one for outlined layers: the activation a layer's call passes to the next
call of the same layer (the residual stream, forward and backward) is taken
split along its tokens (`carried_arguments`), so each layer's first norm is
split too and nothing is gathered between calls.

Each all-reduce of N bytes becomes a reduce-scatter and an all-gather of
N / tp bytes a rank each (the same bytes on the links, Megatron's count), and
the norms' work and the activations they save are 1/tp a rank.
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects import func
from xdsl.ir import Operation

from rducc.dialects.contracts import Phase, phase_of
from rducc.dialects.rdu.dataflow import MapOp
from rducc.dialects.rdu.layer_norm import LayerNormGradOp, LayerNormOp
from rducc.dialects.split import Split


def token_split(shape: Sequence[int], tp: int) -> Split | None:
    """The split of an activation of `shape` along its tokens over `tp` ranks: the
    dim before the features (the sequence of `[batch, seq, hidden]`, the rows of
    `[tokens, hidden]`), else an earlier one tp divides; None when none does."""
    for dim in range(len(shape) - 2, -1, -1):
        if shape[dim] % tp == 0 and shape[dim] >= tp:
            return Split.whole(dim, tp)
    return None


def reads_by_token(op: Operation) -> bool:
    """Whether `op` may run on a reduce-scattered operand's tokens: an elementwise
    map of the forward or the backward (a residual add, a norm's scaling, the
    norm's backward) or a layer norm run as its kernel (`rdu.layer_norm`,
    `rdu.layer_norm_grad`: row by row), not the optimizer's update of a gradient."""
    return isinstance(op, MapOp | LayerNormOp | LayerNormGradOp) and phase_of(op) != Phase.OPTIMIZER


def carried_arguments(calls: Sequence[func.CallOp], tp: int, shapes: Sequence[Sequence[int]]
                      ) -> list[Split | None]:
    """Per argument of a layer called by `calls`: its token split when some call
    passes it a result of another call of the same layer (the residual stream
    carried from layer to layer, or its gradient through the backward layers),
    else None."""
    name = calls[0].callee.string_value() if calls else ""
    carried: list[Split | None] = []
    for index, shape in enumerate(shapes):
        fed = any(isinstance(owner := call.operands[index].owner, func.CallOp)
                  and owner.callee.string_value() == name for call in calls)
        carried.append(token_split(shape, tp) if fed and len(shape) >= 2 else None)
    return carried
