"""`rdu-partition{tp=N pp=M}`: split the model across the target's sockets.

Runs on the imported graph (level 1), right after `rdu-canonicalize`, on
every `func.func` of the module. The result is one SPMD program:

- **Tensor parallelism (tp)**: every socket of a tp group runs the same
  program on its own shard. Each value has a layout: replicated, a `Split`
  (along one or more dims, each over a factor of the rank: rank r holds part
  `(r // stride) % parts`; one dim over every rank is the common case; a
  weight with fewer output columns than ranks stays whole, as does a layer's
  router whose split would cost more collective time where its columns meet
  than running it whole costs: `_whole_is_cheaper`, the one price of such a
  choice, also of a whole operand cut beside a split weight in a training
  step, `_cuts_beside_weight`), a
  partial sum over every rank, or one over groups of a factor of the ranks
  (a sum along a dim split over that factor: a KV head's gradient summed over
  its query heads with more ranks than KV heads, `GroupPartial`,
  partials.py, all-reduced over its replica groups). A split dim may have a period (batch x heads
  merged by a reshape keeps the heads of every batch row split:
  `reshape_split`). Layouts start at the weights: a linear layer whose input is
  replicated splits its weight by output columns (q/k/v, gate/up, lm_head),
  over every rank, or, when the reshape into heads cannot take that many parts
  (more ranks than KV heads), over the largest major factor it can (rank r
  holds KV head r // 2 at tp=16 with 8 KV heads, replicated over the pair,
  while the reshape of q splits the KV heads over that factor and the query
  heads under each over the rest; a projection into a single head, the one
  KV head of multi-query attention, is not split by columns at all, since that
  would cut a head's features: every rank holds it whole and broadcasts it to
  its own query heads, through the scale SDPA applies to k);
  one whose input is split along the contraction dim splits its weight by rows
  (o_proj, down_proj) and gives a partial sum, which `rdu.all_reduce` makes
  whole where it is used. A grouped expert product (`rdu.grouped_matmul`)
  is a linear layer of every expert at once: its [E, N, K] table splits
  along N or K for all E experts (a slice of each expert's ffn dim a rank),
  its rows and offsets whole. Splits flow through elementwise, layout, reduce and
  batched-matmul ops (attention heads follow the q/k/v columns; the KV cache,
  a user input, is split by heads, and so is a stacked cache read by one slice
  a layer, `k_cache[i]`, or a cache buffer written at a position by
  `rdu.scatter`, with its written-back update). A window of a stacked argument
  (a slice and its reshape: `kv[i, 0]`, `w[i]` of a stacked weight) read only
  by calls of an outlined layer is left to its call, which splits it as the
  layer takes that argument, and the stacked argument under it the first time
  (every later window of it follows the same split). An outlined layer is
  partitioned once, when the walk reaches its first call, from the layouts its
  calls pass it (`callee_seeds`; a value the caller computes for every call, as
  the caller holds it then: `_LayersAtCalls`); a training step's layer may
  return a partial sum, which the caller adds up before it all-reduces it. A linear layer whose result is
  sliced into consecutive blocks (a fused q/k/v or gate/up projection) splits its
  columns per block, each block across the ranks (with a period when the blocks
  are equal, by their sizes when not: grouped-query q, k and v; a block of a
  single head, multi-query k and v of GPTBigCode's `c_attn`, is held whole by
  every rank while q's block splits by heads, `[64, -16, -16]`; with more
  ranks than KV heads each block splits into its own parts, the most that
  keep whole heads: `[4096, 1024:8, 1024:8]` at tp=16, q 16 ways, k and v
  8 ways, a KV head a pair of ranks, `_blocks_by_heads`; q/k/v fused per KV
  group, viewed [groups, q heads + 2, head_dim] and sliced along the middle
  dim, with more ranks than groups: runs of blocks, a group over a rank pair,
  its q block split between the pair and its k and v whole on both, `[512:2,
  -128, -128]` at tp=16 over 8 groups, `_repeated_blocks`), and each
  slice's offset moves to its block's part (`_plan_periodic_slice`). A projection
  viewed as heads whose heads a slice downstream cuts across ranks (DiffLlama's
  differential attention: the values' KV heads and the attention output's heads
  chunked in halves, head h paired with h + heads / 2) splits with a period of a
  chunk, a rank holding its share of each, over fewer parts with each KV head over
  a group of ranks where the repeat to the query heads widens it back
  (`_chunked_columns`): every chunk split by whole heads, nothing gathered; or, where the
  cost model prices it lower (`_exchange_pays`: an all-gather against the head-pair
  split's extra reads of each KV head and its cache), or no such split exists, q and k
  split in consecutive heads (a KV head on one rank) and the attention output's heads
  exchanged where the chunks cut them: all-gathered, each rank keeping its part of every
  chunk (`rdu.local_part` of a periodic split, `_exchange_point`). A split weight or input keeps its full
  shape in the weights file and the caller's arrays: `rdu.shard` (`#rdu.split`)
  on the `tier.global` (or the argument) says which part each rank takes, and
  the IR types are one rank's shapes. An op whose operands cannot stay split
  is replicated (`rdu.all_gather` of its split operands): correct, slower.
  A weight computed from weights (weight_norm's `g * v / |v|`) is partitioned
  when its reader wants it, its weights split as that reader takes it (`_flush`).
  A result that stays split is joined by the caller (`rdu.result_shards` on
  the function). A parameter left whole on every rank is marked with the op
  that first reads it whole (`rdu.whole_reader`, whole.py), for the report.
- **Pipeline parallelism (pp)**: decoder layers (`rdu.layer`) go to `pp`
  stages of consecutive layers; every op carries its stage (`rdu.stage`) and a
  value used in another stage crosses by `rdu.send_recv`. Stage s of tp rank r
  runs on socket `s * tp + r`.

Without options the pass models every split the target's sockets allow
(`tp * pp <= sockets`, powers of two) with the cost model's level-1 estimate
(`rducc.model.cost_model.partition_estimate`) and keeps the fastest. Given
`tp`, a decoder layer that `tp` cannot split (heads or hidden sizes it does not
divide) is an error at its source line, and so is `tp * pp` above the sockets.
The module records the choice as `rdu.partition = {tp = N, pp = M}`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from math import prod
from typing import Any, ClassVar

import numpy as np
from xdsl.context import Context
from xdsl.dialects import arith, func
from xdsl.dialects.builtin import (
    ArrayAttr,
    BFloat16Type,
    DenseArrayBase,
    DictionaryAttr,
    Float16Type,
    FunctionType,
    IntegerAttr,
    ModuleOp,
    StringAttr,
    TensorType,
    f32,
    i1,
    i64,
)
from xdsl.ir import Attribute, Block, BlockArgument, Operation, Region, SSAValue
from xdsl.rewriter import Rewriter
from xdsl.traits import SymbolTable
from xdsl.transforms.dead_code_elimination import is_trivially_dead

from rducc.diagnostics import LocatedError
from rducc.dialects.contracts import (
    TENSOR_LEVELS,
    WEIGHT,
    Level,
    Phase,
    arg_attrs,
    executed_microbatches,
    global_of,
    is_input,
    is_outlined,
    is_partitioned,
    layer_of,
    module_target,
    phase_of,
    result_roles,
    result_shards,
    result_updates,
    set_expert_parallel,
    set_layer,
    set_owned_rows,
    set_partition,
    set_phase,
    set_result_shards,
    set_shard,
    set_split_choice,
    set_stage,
    shard_of,
)
from rducc.dialects.op_facts import Dest, Dim, DimMap, OpFacts, tensor_bytes
from rducc.dialects.program import entry_function, functions
from rducc.dialects.rdu.collectives import (
    AllGatherOp,
    AllReduceOp,
    AllToAllOp,
    Groups,
    LocalPartOp,
    ReduceScatterOp,
    SendRecvOp,
    strided_groups,
)
from rducc.dialects.rdu.conv_grad import ConvGradOp
from rducc.dialects.rdu.dataflow import (
    BroadcastOp,
    ConcatOp,
    ConvOp,
    GatherOp,
    GroupedMatmulOp,
    IotaOp,
    KernelOp,
    MapOp,
    MatmulOp,
    ReduceKind,
    ReduceOp,
    ReshapeOp,
    ScatterOp,
    SliceOp,
    TransposeOp,
    YieldOp,
)
from rducc.dialects.shapes import num_elements, reshape_groups
from rducc.dialects.split import (
    Period,
    Split,
    SplitBlock,
    block_of,
    block_part,
    block_parts,
    block_size,
    block_starts,
    run_parts,
    whole_length,
)
from rducc.dialects.tier import GlobalOp
from rducc.errors import RduccError
from rducc.model.kernel_timing import collective_seconds, peak_seconds
from rducc.model.pipeline_schedule import default_microbatches
from rducc.passes.common import RduPass
from rducc.passes.rdu_partition.conv_bias import take_out_conv_bias
from rducc.passes.rdu_partition.conv_grads import by_whole_groups, held_for_shapes
from rducc.passes.rdu_partition.experts import Experts, expert_table, keeps_rows, local_expert_ids
from rducc.passes.rdu_partition.grouped_convs import whole_groups
from rducc.passes.rdu_partition.index_map import known_values, rank_local
from rducc.passes.rdu_partition.microbatches import microbatch_labels, order_one_f_one_b
from rducc.passes.rdu_partition.partials import GroupPartial, combined, disjoint, linear_in
from rducc.passes.rdu_partition.prefetch import prefetch_parameter_gathers
from rducc.passes.rdu_partition.sequence import carried_arguments, reads_by_token, token_split
from rducc.passes.rdu_partition.training import (
    adopt,
    batch_size,
    batch_splits,
    choose_training_split,
    ddp_gradient,
    fill_value,
    is_training_step,
    mark_deferred,
    optimizer_state_args,
    parameter_results,
    ramp_length,
    training_stages,
    widening_cast,
    zero_dim,
)
from rducc.passes.rdu_partition.vocab import in_part, local_index, rank_offset, where
from rducc.passes.rdu_partition.whole import note_whole_weights
from rducc.targets import Target

Layout = Split | str | Experts | GroupPartial | None
"""None: replicated; a `Split`; PARTIAL: a partial sum over every rank; `Experts`:
rows of token-expert pairs, each rank's by its own experts (expert parallelism);
`GroupPartial`: a partial sum over groups of a factor of the ranks (partials.py)."""
PARTIAL = "partial"

CalleeLayouts = tuple[list[Layout], list[Layout]]
"""An outlined layer's layout per argument and per result, once partitioned."""


_CHAIN_OPS = (TransposeOp, ReshapeOp, BroadcastOp, SliceOp)
"""Layout ops through which a whole value can be split after the fact, back to the argument it reads."""


def _chain_op(op: Operation) -> bool:
    """A layout op (`_CHAIN_OPS`) or a map of one operand (the scale SDPA applies to k):
    an op whose result can be split after the fact by splitting its one input."""
    return isinstance(op, _CHAIN_OPS) or (isinstance(op, MapOp) and len(op.operands) == 1)


def _uncast(value: SSAValue) -> SSAValue:
    """The value a precision cast reads (a map of one operand whose body only
    converts, as autocast's bf16 copy of a float32 master weight), else `value`."""
    owner = value.owner
    while (isinstance(owner, MapOp) and len(owner.operands) == 1
           and all(isinstance(op, arith.TruncFOp | arith.ExtFOp) for op in list(owner.body.block.ops)[:-1])):
        value = owner.operands[0]
        owner = value.owner
    return value


class _Unsplittable(Exception):
    """A reshape cannot keep a split."""


Digit = tuple[int, int, int]
"""A split seen on the flat index of a reshape's group of dims: (inner, parts,
stride): part `(flat // inner) % parts` goes to rank part `(r // stride) % parts`."""


def _strides_within(shape: Sequence[int], group: Sequence[int]) -> dict[int, int]:
    """Per dim of a reshape group, the product of the group's sizes after it."""
    inner, strides = 1, {}
    for dim in reversed(group):
        strides[dim] = inner
        inner *= shape[dim]
    return strides


def _digits(shape: Sequence[int], group: Sequence[int], split: Split) -> list[Digit]:
    """The split's entries on the dims of `group` as digits of the group's flat index."""
    strides = _strides_within(shape, group)
    digits = []
    for dim, parts, stride, period in split.entries:
        if dim in strides:
            if isinstance(period, tuple):
                raise _Unsplittable  # unequal blocks do not regroup through a reshape of their dim
            length = period or shape[dim]
            digits.append((length // parts * strides[dim], parts, stride))
    return digits


def _place(digit: Digit, shape: Sequence[int], group: Sequence[int]) -> list[tuple[int, Digit]]:
    """Where a digit lands on the result dims of a group, innermost first: whole in
    the dim that holds its low end, or, when that dim holds only a factor, that
    factor there and the rest in the dims outside it (the outer part of the
    rank's factor: `stride` times the inner parts). Raises `_Unsplittable`."""
    inner, parts, stride = digit
    strides = _strides_within(shape, group)
    placed: list[tuple[int, Digit]] = []
    for dim in reversed(group):
        if parts == 1:
            break
        if not strides[dim] <= inner < strides[dim] * shape[dim]:
            continue
        if inner % strides[dim] or shape[dim] % (inner // strides[dim]):
            raise _Unsplittable
        room = shape[dim] // (inner // strides[dim])
        here = parts if room % parts == 0 else room
        if parts % here:
            raise _Unsplittable
        placed.append((dim, (inner, here, stride)))
        inner, parts, stride = inner * here, parts // here, stride * here
    if parts != 1:
        raise _Unsplittable
    return placed


def _merge(digits: list[Digit]) -> Digit:
    """One digit of several on one dim: adjacent in the index and in the rank, else `_Unsplittable`."""
    inner, parts, stride = min(digits)
    for outer_inner, outer_parts, outer_stride in sorted(digits)[1:]:
        if outer_inner != inner * parts or outer_stride != stride * parts:
            raise _Unsplittable
        parts *= outer_parts
    return inner, parts, stride


def reshape_split(source: Sequence[int], result: Sequence[int], split: Split) -> Split | None:
    """The split of a reshape's result when its input is split so (raises `_Unsplittable`).

    Per group of dims the reshape merges or splits (`reshape_groups`), each
    split dim is a digit of the group's flat index (which part of the index a
    rank holds); the digit lands on the result dim that holds it, with a period
    when the dim has more outside it (batch x heads merged: the heads of every
    batch row split), or spread over consecutive dims that each hold a factor
    of its parts, never cutting a head's features: a digit lands on the
    result's innermost dim, when the group has other result dims before it,
    only in whole rows of the source's innermost dim (heads x features merged,
    `[16, 1, 8] -> [2, 64]` with the 8 heads of each batch row split: each
    rank's heads whole). Digits that meet on one dim must be adjacent, in order."""
    try:
        groups = reshape_groups(source, result)
    except ValueError:
        raise _Unsplittable from None
    entries: list[tuple[int, int, int, Period]] = []
    for group_src, group_res in groups:
        kept = _kept_blocks(split, group_src, group_res)
        if kept is not None:  # unequal blocks on a dim the reshape keeps whole
            entries.append(kept)
            continue
        landed: dict[int, list[Digit]] = {}
        cut = _cut_runs(result, split, group_src, group_res)
        if cut is not None:  # repeated blocks, each run a dim of its own: the blocks on it, the runs outside it
            entries.append(cut[0])
            for dim, piece in _place(cut[1], result, group_res) if cut[1][1] > 1 else ():
                landed.setdefault(dim, []).append(piece)
        for digit in _digits(source, group_src, split) if cut is None else ():
            for dim, piece in _place(digit, result, group_res):
                if dim == len(result) - 1 and dim != group_res[0] and piece[0] % source[-1]:
                    raise _Unsplittable  # it would cut the source's innermost dim (a head's features)
                landed.setdefault(dim, []).append(piece)
        strides = _strides_within(result, group_res)
        for dim, digits in landed.items():
            inner, parts, stride = _merge(digits)
            period = inner // strides[dim] * parts
            entries.append((dim, parts, stride, 0 if period == result[dim] else period))
    return Split.of(entries)


def head_sizes(function: func.FuncOp) -> set[int]:
    """The features of one attention head: the innermost size of each reshape
    that cuts its input's last dim into several heads (`[.., 32] -> [.., 4, 8]`)."""
    sizes: set[int] = set()
    for op in function.walk():
        if isinstance(op, ReshapeOp):
            source, result = _shape(op.input), _shape(op.result)
            if len(result) >= 2 and result[-2] > 1 and source[-1] > result[-1] and source[-1] % result[-1] == 0:
                sizes.add(result[-1])
    return sizes


_NOT_MEETING = (MatmulOp, GroupedMatmulOp, ConvOp, ReshapeOp, SliceOp, TransposeOp, BroadcastOp, ConcatOp)
"""Users that take a split of the dim they read without a collective: a contraction
over it (a partial sum: the row split of the next linear layer) or a layout op."""

LOOK_AHEAD = 12
"""Ops a projection's look-ahead to its slices and reshapes into heads passes
(`_head_size`, `_slice_spans`, `_reshapes_keep`): maps of its shape and
reshapes that keep its columns. A norm over the whole projection before the
heads (Olmo2's q/k norm: cast, scale by the rsqrt, cast back, weight) is four
maps deep, a cast or bias more on the way."""

CHUNK_LOOK_AHEAD = 48
"""Ops a projection's look-ahead to the slices that cut its split passes (`_ranks_kept`):
from a q projection through attention to the chunks of its output heads."""


def _one_head_reshape(source: Sequence[int], result: Sequence[int], heads: set[int]) -> bool:
    """Whether the reshape makes its input's last dim, of one head's features, a
    head of its own (the one KV head of multi-query attention): it keeps the last
    dim and adds a dim of size 1 for the head, beside it (`[.., 8] -> [.., 1, 8]`)
    or, when rdu-canonicalize folded the heads' transpose into the reshape, before
    the tokens (`[16, 8] -> [2, 1, 8, 8]`, `[8, 8] -> [1, 1, 8, 8]`). A unit dim
    only in front is a batch of one (`[8, 8] -> [1, 8, 8]`), not a head."""
    if len(result) <= len(source) or not source or not source[-1] == result[-1] in heads:
        return False
    return result[-2] == 1 or _unit_dims(result[1:-1]) > _unit_dims(source[1:-1])


def _unit_dims(shape: Sequence[int]) -> int:
    """How many dims of `shape` have size 1."""
    return sum(size == 1 for size in shape)


def _kept_blocks(split: Split, group_src: Sequence[int], group_res: Sequence[int]
                 ) -> tuple[int, int, int, Period] | None:
    """A dim split in unequal blocks that a reshape keeps whole (a group of one dim
    on each side), moved to its result dim; None otherwise."""
    if len(group_src) != 1 or len(group_res) != 1:
        return None
    entry = next((e for e in split.entries if e[0] == group_src[0] and isinstance(e[3], tuple)), None)
    return (group_res[0], entry[1], entry[2], entry[3]) if entry is not None else None


def _cut_runs(result: Sequence[int], split: Split, group_src: Sequence[int],
              group_res: Sequence[int]) -> tuple[tuple[int, int, int, Period], Digit] | None:
    """A dim split in repeated blocks (q/k/v fused per KV group) that a reshape cuts
    into runs: `[.., 6144] -> [.., 8, 6, 128]`, runs of 768 in blocks [512:2, -128,
    -128] over 16 ranks. The blocks move to the result dim that one run spans, in its
    rows (`(d, 2, 1, [4, -1, -1])`: a rank's part of a group's query heads, its k and
    v whole); the runs split over the major factor of the ranks are a digit of the
    group's flat index for `_place` (the 8 groups, `(768, 8, 2)`). None when the
    group's source has no such dim; raises `_Unsplittable` when no result dim spans
    one run in whole rows of the blocks."""
    if len(group_src) != 1:
        return None
    entry = next((e for e in split.entries if e[0] == group_src[0] and isinstance(e[3], tuple)), None)
    if entry is None:
        return None
    _, parts, stride, blocks = entry
    assert isinstance(blocks, tuple)
    run, inner = sum(map(block_size, blocks)), run_parts(blocks, parts)
    strides = _strides_within(result, group_res)
    dim = next((d for d in group_res if strides[d] * result[d] == run), None)
    if dim is None or any(block_size(b) % strides[dim] for b in blocks):
        raise _Unsplittable
    rows = tuple(block_of(block_size(b) // strides[dim], block_parts(b, parts), inner) for b in blocks)
    return (dim, inner, stride, rows), (run, parts // inner, stride * inner)


def _slice_split(op: SliceOp, split: Split, shape: Sequence[int]) -> Split | None:
    """The split of a slice's result when its input (of `shape`) is split with a
    period or in blocks: the same in each block it takes whole (contiguous when
    it takes one). Raises `_Unsplittable` when it cuts a block."""
    sizes = _shape(op.result)
    offsets, strides = op.offsets.get_values(), op.strides.get_values()
    entries: list[tuple[int, int, int, Period]] = []
    for dim, parts, stride, period in split.entries:
        whole = offsets[dim] == 0 and strides[dim] == 1 and sizes[dim] == shape[dim]
        if whole:
            entries.append((dim, parts, stride, period))
        elif isinstance(period, tuple):
            one_run = sum(map(block_size, period)) == shape[dim]
            taken = _blocks_taken(period, offsets[dim], sizes[dim]) if strides[dim] == 1 and one_run else None
            if taken is None:
                raise _Unsplittable  # it cuts a block, or takes from repeated blocks
            own = run_parts(taken, parts)
            if len(taken) == 1 and own > 1:  # one block: split its own parts
                entries.append((dim, own, stride * (parts // own), 0))
            elif own > 1:  # else only blocks held whole: whole along dim
                entries.append((dim, own, stride * (parts // own),
                                tuple(block_of(block_size(b), block_parts(b, parts), own) for b in taken)))
        elif period and strides[dim] == 1 and offsets[dim] % period == 0 and sizes[dim] % period == 0:
            entries.append((dim, parts, stride, 0 if sizes[dim] == period else period))
        else:
            raise _Unsplittable
    return Split.of(entries)


def _major_dim(result: Sequence[int], columns: int) -> int | None:
    """The dim of a reshape's `result` that is the major index of `columns` cut into
    (n, ..., c): the first dim of more than one whose trailing dims hold exactly the
    columns (`[.., 48, 128]` or, with a unit dim between, `[1, 48, 1, 128]` of 6,144
    fused q/k/v columns: dim of the 48 heads); None when the trailing dims do not
    hold the columns."""
    return next((dim for dim in range(len(result) - 1) if result[dim] > 1 and prod(result[dim:]) == columns), None)


def _cuts(op: SliceOp, shape: Sequence[int]) -> list[tuple[int, int, int]]:
    """The (dim, offset, size) of each dim a slice of a value of `shape` cuts; a strided
    dim is cut at offset -1 (no block)."""
    sizes, offsets, strides = _shape(op.result), op.offsets.get_values(), op.strides.get_values()
    return [(dim, offsets[dim] if strides[dim] == 1 else -1, sizes[dim]) for dim in range(len(shape))
            if sizes[dim] != shape[dim] or offsets[dim] or strides[dim] != 1]


def _consecutive_blocks(spans: set[tuple[int, int]], columns: int) -> list[int] | None:
    """The sizes of the blocks the (offset, size) spans cut [0, columns) into, when
    they tile it exactly, in order; else None."""
    blocks, at = [], 0
    for offset, size in sorted(spans):
        if offset != at:
            return None
        blocks.append(size)
        at += size
    return blocks if at == columns else None


def _blocks_taken(blocks: tuple[SplitBlock, ...], offset: int, size: int) -> tuple[SplitBlock, ...] | None:
    """The blocks a slice [offset, offset + size) takes whole, or None when it cuts one."""
    starts = block_starts(blocks)
    if offset not in starts:
        return None
    first = starts.index(offset)
    taken, total = [], 0
    for block in blocks[first:]:
        if total == size:
            break
        taken.append(block)
        total += block_size(block)
    return tuple(taken) if total == size else None


def _position(op: Operation) -> int:
    """The index of `op` in its block."""
    parent = op.parent_block()
    assert parent is not None
    return next(i for i, other in enumerate(parent.ops) if other is op)


def _part_starts(blocks: tuple[SplitBlock, ...], parts: int) -> list[int]:
    """Where each block's part starts in one rank's part of a dim split in these blocks."""
    starts, at = [], 0
    for block in blocks:
        starts.append(at)
        at += block_part(block, parts)
    return starts


def _cast_map(value: SSAValue, result: TensorType, cast: type[arith.ExtFOp] | type[arith.TruncFOp]) -> MapOp:
    """`rdu.map` of one float cast (`arith.extf` or `arith.truncf`) of `value` to `result`."""
    block = Block(arg_types=[value.type.element_type])  # type: ignore[attr-defined]
    converted = cast(block.args[0], result.element_type)
    block.add_ops([converted, YieldOp(converted.result)])
    return MapOp([value], result, Region(block))


def _entry_on(split: Split | None, dim: int) -> tuple[int, int, int, Period] | None:
    """The entry of `split` along `dim`, or None."""
    return next((entry for entry in split.entries if entry[0] == dim), None) if split is not None else None


def _channels_split(splits: Sequence[Split | None]) -> bool:
    """Whether a convolution's input channels (dim 1) or its weight's channels (dims 0, 1) are split."""
    image, weight = splits[:2]
    return _entry_on(image, 1) is not None or any(_entry_on(weight, dim) is not None for dim in (0, 1))


def _rank_groups(op: ConvOp | ConvGradOp, channels: int) -> None:
    """A rank's convolution's (or convolution gradient's) groups, `channels` the
    whole input's: a direct convolution's, its input channels over its weight's
    channels a group (whole groups a rank: fewer groups; each group's channels
    split: as many); a transposed one's or a gradient's (split by whole groups
    alone, `conv_grads.by_whole_groups`), its input channels over one group's."""
    if isinstance(op, ConvOp) and op.transposed is None:
        op.groups = IntegerAttr(_shape(op.input)[1] // _shape(op.weight)[1], i64)
    elif op.groups.value.data != 1:  # a dense one's channels split as a contraction's: one group still
        op.groups = IntegerAttr(_shape(op.input)[1] // (channels // op.groups.value.data), i64)


def _shape(value: SSAValue) -> tuple[int, ...]:
    assert isinstance(value.type, TensorType)
    return tuple(value.type.get_shape())


def _same_place(op: Operation, anchor: Operation) -> None:
    """Give an op the partitioner inserts the layer and training phase of `anchor`."""
    if (layer := layer_of(anchor)) is not None:
        set_layer(op, layer)
    if (phase := phase_of(anchor)) is not None:
        set_phase(op, phase)


def _erase_made_dead(used: Sequence[Operation]) -> None:
    """Erase the ops of `used` (read before the walk) that no op reads now and that
    have no effect (every rdu op but the collectives is Pure), then the ops that only
    those read: a view of a partial sum whose readers read the same view of the
    reduced sum instead (`_view_of_reduced`). Ops dead before the walk stay."""
    stack = list(used)
    while stack:
        op = stack.pop()
        if op.parent is None or not is_trivially_dead(op):
            continue
        operands = list(op.operands)
        Rewriter.erase_op(op)
        stack.extend(value.owner for value in operands if isinstance(value.owner, Operation))


def _per_rank(tensor: TensorType, full: Sequence[int], split: Split | None) -> TensorType:
    return TensorType(tensor.element_type, split.part_shape(full) if split else list(full))


@dataclass
class _TensorPartitioner:
    """Rewrites one function for `tp` ranks (see the module docstring).

    Ops are visited in order; each op's rule (`_plan`) says which layout it
    needs of each operand and which its result gets, or None (replicate).
    `materialize` moves an operand there: an all-reduce for a partial sum,
    all-gathers for a split value needed whole, or, for a whole value
    needed split, sharding the argument it comes from (through a chain of
    transposes/reshapes used once). `full` keeps each retyped value's full
    shape; `made` shares one collective among the users of a value.
    """

    module: ModuleOp
    function: func.FuncOp
    tp: int
    strict: bool
    data_parallel: bool = False
    """The `tp` ranks are data-parallel replicas: the user inputs split along
    the batch, the weights whole (no column or row splits)."""
    training: bool = False
    """A training step: a weight read by several ops (forward, backward, the
    optimizer's update) may be split by the first that wants it split, as long
    as no op has read it whole yet (the later ones take it split, or gather it)."""
    layout: dict[SSAValue, Layout] = field(default_factory=dict)
    full: dict[SSAValue, tuple[int, ...]] = field(default_factory=dict)
    made: dict[tuple[SSAValue, Layout], SSAValue] = field(default_factory=dict)
    replicated_ops: int = 0
    heads: set[int] = field(default_factory=set)
    """The head sizes of the function's attention (`head_sizes`), read before any op is retyped."""
    callees: dict[str, CalleeLayouts] = field(default_factory=dict)
    """The layouts of the outlined layers partitioned already, by name: a call
    passes each argument in its callee's layout and gets its results in theirs."""
    attrs: list[dict[str, Attribute]] = field(default_factory=list)
    """The function's argument attributes, written back once at the end (a
    function of a 126-layer model has over a thousand arguments)."""
    globals_by_name: dict[str, GlobalOp] = field(default_factory=dict)
    experts: bool = False
    """Expert parallelism: stacked expert tables split along the experts over the
    `tp` ranks, pairs combined by `rdu.all_to_all` (passes/rdu_partition/experts.py)."""
    expert_ids: dict[tuple[SSAValue, int], tuple[SSAValue, SSAValue]] = field(default_factory=dict)
    seeds: list[Layout] = field(default_factory=list)
    """An outlined layer's argument layouts fixed before its walk (`callee_seeds`):
    what its callers pass split already (a forward layer's saved values and split
    weights, read by the backward layer; the weights and gradients the optimizer
    layer updates), so the layer keeps them split rather than gathering them."""
    rank_scale: int = 1
    """The partitioned ranks are a factor of the program's: this pass's rank i is
    every program rank r with `(r // rank_scale) % tp == i` (dp x tp: the tp
    pass 1, the dp pass tp; `partition_module`)."""
    program_ranks: int = 0
    """The program's SPMD ranks (0: `tp`, the ranks this pass splits over)."""
    zero: int = 0
    """Data parallel, the ZeRO stage (training.py): 1, the optimizer state split
    over the replicas, gradients all-reduced whole, each replica updating its part,
    updated parameters all-gathered; 2, the gradients reduce-scattered to the part
    where the backward makes them instead (the whole gradient never held); 3, the
    parameters held split too, all-gathered for the forward and the backward
    (`_shard_parameters`)."""
    zero_wants: dict[SSAValue, Split] = field(default_factory=dict)
    """ZeRO: the split of each gradient value its state's update takes (`_trace_gradient`)."""
    sequence_parallel: bool = False
    """Sequence parallelism (tp): partial sums of activations reduce-scattered along
    their tokens where elementwise ops read them, all-gathered before a weight's
    matmul (passes/rdu_partition/sequence.py)."""
    token_partials: set[SSAValue] = field(default_factory=set)
    """Sequence parallelism: the partial sums that are activations (`_mark_token_partial`)."""
    token_splits: set[SSAValue] = field(default_factory=set)
    """Sequence parallelism: the values split along their tokens (reduce-scattered,
    carried between layer calls, and what elementwise and layout ops make of them)."""
    rounds_to: dict[SSAValue, Attribute] = field(default_factory=dict)
    """Partial sums of bf16 or f16 values held in f32 until they are summed
    over the ranks, by the 16-bit type they are rounded to then (`_widen_partial`)."""
    master: bool | None = None
    """Whether the step trains float32 master weights (`_master_weights`, read once)."""
    at_calls: _LayersAtCalls | None = None
    """tp: the outlined layers not partitioned yet, each partitioned at its first call."""
    weight_made: dict[SSAValue, bool] = field(default_factory=dict)
    """`_from_weights`, by value."""
    pairing: bool = False
    """Inside `_paired_period`'s look-ahead at the other projection (which does not look back)."""
    exchanges: dict[Operation, tuple[Split, Split]] = field(default_factory=dict)
    """tp: ops after attention whose result's consecutive split (the query heads') a slice cuts,
    exchanged there to a split with a period that every slice keeps (`_exchange_point`),
    each with (its consecutive split, that periodic split); chosen where the exchange
    costs less than the head-pair split's extra reads (`_exchange_pays`)."""
    priced: dict[Operation, bool] = field(default_factory=dict)
    """Whether each exchange point's exchange was taken, priced once (`_exchange_pays`)."""
    pricing: str = ""
    """Inside `_exchange_pays`' look at a projection's split: "pairs", the head-pair split
    (`_chunked_columns` as without exchanges), or "exchange", with the tentative one."""
    deferred: dict[Operation, None] = field(default_factory=dict)
    """tp: ops computing a weight from weights (`_defers`), in program order, not
    partitioned yet: their reader's split is pushed back to the weights (`_flush`)."""
    reading: dict[SSAValue, set[Layout]] = field(default_factory=dict)
    """The operands of the op being partitioned, each with the layouts the op wants
    it in (`_partition_op`): an argument it also reads in another layout (a Gram
    matrix `w @ w.mT`, one operand whole, the other split) is not split in place."""

    def __post_init__(self) -> None:
        self.attrs = arg_attrs(self.function)
        self.globals_by_name = {g.sym_name.data: g for g in self.module.ops if isinstance(g, GlobalOp)}

    # -- ranks of a 2-D mesh (dp x tp) ------------------------------------------

    def _groups(self, parts: int, stride: int) -> Groups | None:
        """The replica groups, over the program's ranks, of this pass's `parts` ranks
        `stride` apart; None when the pass's ranks are the program's (the op's
        `group` and `stride` say it)."""
        ranks = self.program_ranks or self.tp
        if ranks == self.tp:
            return None
        return strided_groups(parts, stride * self.rank_scale, ranks)

    def _gather_op(self, value: SSAValue, dim: int, parts: int, result_type: TensorType, stride: int) -> AllGatherOp:
        groups = self._groups(parts, stride)
        return AllGatherOp(value, dim, parts, result_type, 1 if groups else stride, groups)

    def _program_split(self, split: Split, held: Split | None) -> Split:
        """`split` (over this pass's ranks) over the program's, beside the split
        `held` an earlier pass gave the same value (dp after tp). One dim may take
        both (batch x heads: tp's heads in every period, dp's blocks of the whole
        dim; a rank holds the indices both give it, `runtime.sockets._window`)."""
        scaled = [(dim, parts, stride * self.rank_scale, period) for dim, parts, stride, period in split.entries]
        shared = held.dims() & split.dims() if held is not None else set()
        if held is not None and any(isinstance(period, tuple) for dim, _, _, period in (*held.entries, *scaled)
                                    if dim in shared):
            raise RduccError(f"rdu-partition: a value split as {held.describe()} by tp cannot also be split "
                             f"as {split.describe()} by dp")  # a dim of unequal blocks takes one split
        combined = Split.of([*(held.entries if held is not None else ()), *scaled])
        assert combined is not None
        return combined

    # -- layouts and shapes ---------------------------------------------------

    def layout_of(self, value: SSAValue) -> Layout:
        return self.layout.get(value)

    def split_of(self, value: SSAValue) -> Split | None:
        layout = self.layout.get(value)
        return layout if isinstance(layout, Split) else None

    def full_shape(self, value: SSAValue) -> tuple[int, ...]:
        return self.full.get(value) or _shape(value)

    # -- moving a value to the layout an op needs ------------------------------

    def feasible(self, value: SSAValue, want: Layout, cut: bool = False) -> bool:
        """Whether `value` can be moved to `want` (`materialize`); `cut`: a replicated
        value may be cut to its part (`_cuts_beside_weight`)."""
        held = self.layout_of(value)
        if isinstance(held, GroupPartial):  # all-reduced over its groups, then gathered when wanted whole
            return want is None or want == held.split
        have = self.split_of(value)
        if have == want or want is None or self._exchanged_to(value, want):
            return True
        if have is None and isinstance(want, Split) and (self._made_locally(value, want) or self._local_parts(want, cut)
                                                         or self._weight_part(value, want)):
            return True
        return have is None and isinstance(want, Split) and self._shard_chain(value, want) is not None

    def _shard_chain(self, value: SSAValue, want: Split, via: Operation | None = None
                     ) -> list[tuple[Operation, Split]] | None:
        """How a replicated value can be split as `want` after the fact: it is a
        shardable argument, or a transpose/reshape/broadcast used once of one (a
        KV cache transposed for QK^T, a weight broadcast over the batch). The
        layout ops from the argument out, each with the split of its result;
        None when it cannot. `via`: the op of the chain that reads `value`."""
        full = self.full_shape(value)
        if not want.valid(self.tp) or not want.fits(full) or self._read_otherwise(value, want):
            return None
        if self._shardable_arg(value, want, via) or self._split_already(value, want):
            return []
        owner = value.owner
        if not isinstance(owner, Operation) or not _chain_op(owner) or not self._only_unseen_users(value, via):
            return None
        source, have = owner.operands[0], self.layout_of(owner.operands[0])
        if have is None and self._split_by_broadcast(owner, want):
            return [(owner, want)]
        source_want = self._source_split(owner, want)
        if source_want is None or (have is not None and not self._split_already(source, source_want)):
            return None
        chain = self._shard_chain(source, source_want, owner)
        return None if chain is None else [*chain, (owner, want)]

    def _read_otherwise(self, value: SSAValue, want: Split) -> bool:
        """Whether the op being partitioned reads `value` in a layout other than `want`
        too: splitting it in place (or the argument it comes from) would split that read."""
        return any(layout != want for layout in self.reading.get(value, ()))

    def _split_already(self, value: SSAValue, want: Split) -> bool:
        """Whether `value` is an argument split as `want` already (a stacked cache or
        weight an earlier call's window split): another window of it can be split too."""
        return isinstance(value, BlockArgument) and self.layout.get(value) == want

    def _split_by_broadcast(self, op: Operation, want: Split) -> bool:
        """Whether `op` broadcasts its input along every dim of `want` (a scatter's
        position index spread over the heads): each rank broadcasts to its part."""
        if not isinstance(op, BroadcastOp):
            return False
        dests = op.dims_for([self.full_shape(op.input)], [self.full_shape(op.result)]).operands[0]
        return all(dim not in dests for dim in want.dims())

    def _source_split(self, op: Operation, want: Split) -> Split | None:
        """The split of a layout op's input that gives its result the split `want`
        (a broadcast weight of a batched matmul, a slice of a stacked cache: only
        along dims it keeps whole)."""
        if isinstance(op, MapOp):
            return want  # a map of one operand (a scale): elementwise
        if isinstance(op, TransposeOp | BroadcastOp | SliceOp):
            dests = op.dims_for([self.full_shape(op.input)], [self.full_shape(op.result)]).operands[0]
            if any(dim not in dests for dim in want.dims()):
                return None
            return want.moved(dests.index)
        if not isinstance(op, ReshapeOp):
            return None
        source, result = self.full_shape(op.input), self.full_shape(op.result)
        try:
            back = reshape_split(result, source, want)
            return back if back is not None and reshape_split(source, result, back) == want else None
        except _Unsplittable:
            return None

    def _shardable_arg(self, value: SSAValue, want: Split, via: Operation | None = None) -> bool:
        """Whether an argument can be split as `want`: a weight with no initial
        value, or an input, read by one op, or only by slices that keep the split
        dims whole (a stacked KV cache, `k_cache[i]` per layer) and whose results
        no op has taken whole yet (but `via`, the chain's own)."""
        if not isinstance(value, BlockArgument) or value.block is not self.function.body.block:
            return False
        others = [use.operation for use in value.uses if use.operation is not via]
        if (len(list(value.uses)) != 1
                and not all(self._slice_keeps(op, want) or self._rows_written_into(op, value, want) for op in others)
                and not self._only_unseen_users(value, via)):
            return False
        reference = global_of(self._arg_attrs(value))
        if reference is not None:
            target = self._global(reference)
            return target is not None and target.initial_value is None and shard_of(target) is None
        return is_input(self._arg_attrs(value)) or WEIGHT in self._arg_attrs(value)

    def _rows_written_into(self, op: Operation, value: SSAValue, want: Split) -> bool:
        """Whether a user of an argument to split as `want` is a scatter the walk has not
        reached of rows into it along a dim `want` keeps whole (a stacked cache's rows of
        every layer written after the layers): it takes the argument's split."""
        return (isinstance(op, ScatterOp) and op.input == value and op.reduce is None and not self._seen(op)
                and op.dim.value.data not in want.dims())

    def _only_unseen_users(self, value: SSAValue, via: Operation | None) -> bool:
        """Whether `value` is used once, or (in a training step) only by ops the walk
        has not reached yet besides `via`: splitting it changes no op that took it whole."""
        users = [use.operation for use in value.uses]
        if len(users) == 1:
            return True
        return self.training and not any(self._seen(op) for op in users if op is not via)

    def _slice_keeps(self, op: Operation, want: Split) -> bool:
        """Whether a user of an argument to split as `want` is a slice that keeps
        the split dims whole and, if seen already, whose result no op has used yet."""
        if not isinstance(op, SliceOp) or self._slice_result_split(op, want) is None:
            return False
        return op.result not in self.layout or not any(self._seen(use.operation) for use in op.result.uses)

    def _seen(self, op: Operation) -> bool:
        """Whether the walk has given `op` its layouts."""
        return any(result in self.layout for result in op.results)

    def _slice_result_split(self, op: SliceOp, source: Split) -> Split | None:
        """The split of a slice's result when its input is split as `source` (None: a split dim is cut)."""
        dests = op.dims_for([self.full_shape(op.input)], [_shape(op.result)]).operands[0]
        if any(not isinstance(dests[dim], int) for dim in source.dims()):
            return None
        return source.moved(lambda dim: dest if isinstance(dest := dests[dim], int) else None)

    def materialize(self, value: SSAValue, want: Layout, before: Operation) -> SSAValue:
        """`value` in layout `want` (call `feasible` first): collectives or a sharded argument."""
        have = self.layout_of(value)
        if have == want:
            return value
        if (value, want) in self.made:
            return self.made[(value, want)]
        result = value
        if (have == PARTIAL and (self.zero >= 2 or self.sequence_parallel) and isinstance(want, Split)
                and self._scatters_to(value, want)):
            result = self._reduce_scatter(value, want, before)
            have = want
        elif have == PARTIAL:
            result = self._view_of_reduced(value) or self._insert(
                AllReduceOp(value, self.tp, self._groups(self.tp, 1)), before, None)
            have = None
        elif isinstance(have, GroupPartial):
            result = self._all_reduce_groups(value, have, before)
            have = have.split
            if isinstance(have, Split) and want != have:
                result = self._gather(result, have, before)
                have = None
        elif isinstance(have, Experts):
            result = self._combine(value, have, before)
            have = None
        elif isinstance(have, Split) and (want is None or self._exchanged_to(value, want)):
            result = self._gather(value, have, before)  # an exchange: gathered, then the rank's periodic part
            have = None
        if isinstance(want, Split) and have is None:
            if result is value and self._shard_chain(value, want) is not None:
                result = self._shard_through_chain(value, want)
            elif result is value and self._made_locally(value, want):
                result = self._make_locally(value, want, before)
            else:  # the parts of the whole value (all-reduced first when it was a partial sum)
                result = self._take_parts(result, want, before)
        if value in self.rounds_to:
            result = self._rounded(value, result)
        self.made[(value, want)] = result
        return result

    def _exchanged_to(self, value: SSAValue, want: Layout) -> bool:
        """Whether `value` is an exchange point held as its consecutive split and `want`
        is the periodic split its slices keep (`exchanges`)."""
        point = self._exchange_at(value)
        return point is not None and point == (self.split_of(value), want)

    def _exchange_at(self, value: SSAValue) -> tuple[Split, Split] | None:
        """The exchange (`exchanges`) of the op that makes `value`, if any."""
        return self.exchanges.get(value.owner) if isinstance(value.owner, Operation) else None

    def _view_of_reduced(self, value: SSAValue) -> SSAValue | None:
        """A reshape or transpose of a partial sum wanted whole: the same layout op of
        its source made whole (`materialize`: one all-reduce for every view of it, a
        backward's input gradient read as [b, s, d], as [b*s, d] and transposed),
        not one all-reduce a view; None when `value` is not such a view."""
        owner = value.owner
        if not isinstance(owner, ReshapeOp | TransposeOp) or self.layout_of(owner.input) != PARTIAL:
            return None
        whole = self.materialize(owner.input, None, owner)
        result_type = TensorType(whole.type.element_type, _shape(value))  # type: ignore[attr-defined]
        view = (ReshapeOp(whole, result_type) if isinstance(owner, ReshapeOp)
                else TransposeOp(whole, owner.perm.get_values(), result_type))
        return self._insert_after(view, value)  # after the view: its source's all-reduce is before it

    def _all_reduce_groups(self, value: SSAValue, have: GroupPartial, before: Operation) -> SSAValue:
        """`rdu.all_reduce` of a partial sum over groups of ranks (`GroupPartial`) over
        its replica groups, named explicitly: the whole value, held as `have.split`."""
        ranks = self.program_ranks or self.tp
        groups = strided_groups(have.parts, have.stride * self.rank_scale, ranks)
        result = self._insert(AllReduceOp(value, have.parts, groups), before, have.split)
        self.full[result] = self.full_shape(value)
        return result

    def _scatters_to(self, value: SSAValue, want: Split) -> bool:
        """Whether a partial sum can be reduce-scattered straight to `want`: one dim
        split over every rank, no period."""
        if len(want.entries) != 1:
            return False
        ((dim, parts, stride, period),) = want.entries
        return parts == self.tp and stride == 1 and not period and want.fits(self.full_shape(value))

    def _reduce_scatter(self, value: SSAValue, want: Split, before: Operation) -> SSAValue:
        """`rdu.reduce_scatter` of a partial sum to this rank's part `want` (ZeRO's gradient)."""
        ((dim, parts, _, _),) = want.entries
        element = value.type.element_type  # type: ignore[attr-defined]
        shape = list(self.full_shape(value))
        shape[dim] //= parts
        groups = self._groups(parts, 1)
        result = self._insert(ReduceScatterOp(value, dim, parts, TensorType(element, shape), 1, groups), before, want)
        self.full[result] = self.full_shape(value)
        return result

    def _gather(self, value: SSAValue, split: Split, before: Operation) -> SSAValue:
        """All-gathers joining each split dim of `value` (over the ranks that hold its parts);
        a dim split with a period is gathered as the inner dim of (runs, period) reshapes."""
        result = value
        element = value.type.element_type  # type: ignore[attr-defined]
        shape = list(_shape(value))
        for dim, parts, stride, period in split.entries:
            whole = [*shape[:dim], whole_length(shape[dim], parts, period), *shape[dim + 1:]]
            if isinstance(period, tuple) and sum(map(block_size, period)) < whole[dim]:
                result = self._gather_runs(result, dim, parts, stride, period, before)
            elif isinstance(period, tuple):
                result = self._gather_blocks(result, dim, parts, stride, period, before)
            elif period:
                runs = [*shape[:dim], whole[dim] // period, period // parts, *shape[dim + 1:]]
                result = self._insert(ReshapeOp(result, TensorType(element, runs)), before, None)
                runs[dim + 1] = period
                result = self._insert(self._gather_op(result, dim + 1, parts, TensorType(element, runs), stride),
                                      before, None)
                result = self._insert(ReshapeOp(result, TensorType(element, whole)), before, None)
            else:
                result = self._insert(self._gather_op(result, dim, parts, TensorType(element, whole), stride),
                                      before, None)
            shape = whole
        return result

    def _gather_runs(self, value: SSAValue, dim: int, parts: int, stride: int, blocks: tuple[SplitBlock, ...],
                     before: Operation) -> SSAValue:
        """A dim split in repeated blocks, gathered: reshaped to (runs held, one run's
        part), each run's blocks gathered (`_gather_blocks`, over the minor ranks), the
        runs all-gathered over the major ones, and reshaped back to the whole dim."""
        element = value.type.element_type  # type: ignore[attr-defined]
        shape, inner = list(_shape(value)), run_parts(blocks, parts)
        own = tuple(block_of(block_size(b), block_parts(b, parts), inner) for b in blocks)
        run = sum(map(block_size, blocks))
        held = shape[dim] // sum(block_part(b, inner) for b in own)
        runs = [*shape[:dim], held, shape[dim] // held, *shape[dim + 1:]]
        result = self._insert(ReshapeOp(value, TensorType(element, runs)), before, None)
        result = self._gather_blocks(result, dim + 1, inner, stride, own, before)
        groups = parts // inner
        if groups > 1:
            runs[dim], runs[dim + 1] = held * groups, run
            result = self._insert(self._gather_op(result, dim, groups, TensorType(element, runs), stride * inner),
                                  before, None)
        whole = [*shape[:dim], held * groups * run, *shape[dim + 1:]]
        return self._insert(ReshapeOp(result, TensorType(element, whole)), before, None)

    def _gather_blocks(self, value: SSAValue, dim: int, parts: int, stride: int, blocks: tuple[SplitBlock, ...],
                       before: Operation) -> SSAValue:
        """A dim split in unequal blocks, gathered: each block's part sliced out,
        all-gathered over the ranks that hold its parts (a block held whole is
        taken as it is), and the whole blocks joined in order."""
        element = value.type.element_type  # type: ignore[attr-defined]
        shape = list(_shape(value))
        wholes = []
        for start, size in zip(_part_starts(blocks, parts), blocks):
            offsets = [0] * len(shape)
            offsets[dim] = start
            part = [*shape[:dim], block_part(size, parts), *shape[dim + 1:]]
            piece = self._insert(SliceOp(value, offsets, [1] * len(shape), TensorType(element, part)), before, None)
            whole = [*shape[:dim], block_size(size), *shape[dim + 1:]]
            own = block_parts(size, parts)
            wholes.append(piece if own == 1 else self._insert(
                self._gather_op(piece, dim, own, TensorType(element, whole), stride * (parts // own)), before, None))
        joined = ConcatOp(wholes, dim, TensorType(element, [*shape[:dim], sum(map(block_size, blocks)),
                                                            *shape[dim + 1:]]))
        last = max(wholes, key=lambda piece: _position(piece.owner))  # type: ignore[arg-type]
        return self._insert_after(joined, last)

    def _insert_after(self, op: Operation, value: SSAValue) -> SSAValue:
        """Insert `op` right after the op that defines `value` (a collective just inserted)."""
        producer = value.owner
        assert isinstance(producer, Operation)
        op.location = producer.location
        _same_place(op, producer)
        parent = producer.parent_block()
        assert parent is not None
        parent.insert_op_after(op, producer)
        self.layout[op.results[0]] = None
        return op.results[0]

    def _insert(self, op: Operation, before: Operation, layout: Layout) -> SSAValue:
        """Insert a collective of `op.operands[0]` just after the op that defines it
        (in its layer), or before its user `before` when it is an argument."""
        producer = op.operands[0].owner
        anchor = producer if isinstance(producer, Operation) else before
        op.location = anchor.location
        _same_place(op, anchor)
        parent = before.parent_block()
        assert parent is not None
        if anchor is producer:
            parent.insert_op_after(op, producer)
        else:
            parent.insert_op_before(op, before)
        self.layout[op.results[0]] = layout
        return op.results[0]

    def _arg_attrs(self, arg: BlockArgument) -> dict[str, Attribute]:
        return self.attrs[arg.index]

    def _global(self, name: str) -> GlobalOp | None:
        return self.globals_by_name.get(name)

    def _made_locally(self, value: SSAValue, want: Split) -> bool:
        """Whether each rank can make its part of the replicated `value` as `want`
        itself, with no exchange: `value` is a map or broadcast of replicated
        operands none of which reaches a dim of `want` (they broadcast along it:
        a fill, a causal mask spread over the batch, the same for every example)."""
        owner = value.owner
        if (not isinstance(owner, MapOp | BroadcastOp) or self.layout_of(value) is not None
                or not want.valid(self.tp) or not want.fits(self.full_shape(value))):
            return False
        if any(self.layout_of(v) is not None for v in owner.operands):
            return False
        dims = owner.dims_for([self.full_shape(v) for v in owner.operands], [self.full_shape(value)])
        return all(dim not in dests for dests in dims.operands for dim in want.dims())

    def _local_parts(self, want: Split, cut: bool = False) -> bool:
        """Data parallel, sequence parallel or `cut`: whether a replicated value can be
        cut to `want` by `rdu.local_part` (each rank takes its part; plain splits, no periods)."""
        return ((self.data_parallel or self.sequence_parallel or cut) and want.valid(self.tp)
                and all(not period for *_, period in want.entries))

    def _cuts_beside_weight(self, op: Operation, wants: Sequence[Layout], result: Layout) -> bool:
        """tp training: whether `op` reads a weight held split as it wants it, so a
        replicated operand it wants split is cut to each rank's part (free) rather than
        the weight gathered, where that pays (`_whole_is_cheaper`): the update of that
        weight from its whole gradient (its result split: no collective); the input
        gradient of a linear layer split by output columns whose output was gathered
        in the forward (a skip projection added to a row-split layer's whole output),
        a partial sum whose all-reduce is weighed against gathering the split operands
        and running the product whole."""
        held = [value for value, want in zip(op.operands, wants)
                if isinstance(want, Split) and self.split_of(value) == want]
        if not (self.training and not self.data_parallel and any(self._weight_behind(v) is not None for v in held)):
            return False
        summed = result == PARTIAL or isinstance(result, GroupPartial)
        return not summed or not self._whole_is_cheaper(op, held, ("all_reduce", tensor_bytes(op.results[0])))

    def _groups_cut(self, op: Operation, wants: Sequence[Layout]) -> bool:
        """Whether `op` is a grouped convolution that takes whole groups of a replicated
        input (`_split_groups`): each rank cuts its channels of it (free)."""
        return (isinstance(op, ConvOp) and op.groups.value.data != 1 and self.split_of(op.input) is None
                and isinstance(wants[0], Split))

    def _weight_part(self, value: SSAValue, want: Split) -> bool:
        """tp: whether a replicated value computed from the weights alone (weight_norm's
        `g * v / |v|`, a spectral norm's `W / sigma`; not a weight itself, which the
        usual rules split or keep whole) can be cut to `want` by `rdu.local_part`:
        every rank makes it whole, with no exchange, and takes its part (plain splits)."""
        return (not self.data_parallel and not self._is_weight(_uncast(value)) and self._from_weights(value)
                and want.valid(self.tp)
                and want.fits(self.full_shape(value)) and all(not period for *_, period in want.entries))

    def _from_weights(self, value: SSAValue) -> bool:
        """Whether `value` is a weight or is computed from weights and constants only
        (no input, no activation: the same on every rank of every step's forward)."""
        known = self.weight_made
        stack = [value]
        while stack:  # depth first, without recursion: an activation's ancestors are the whole graph
            top = stack[-1]
            owner = top.owner
            if top in known:
                stack.pop()
            elif self._is_weight(top) or not isinstance(owner, Operation) or not owner.operands or isinstance(
                    owner, func.CallOp) or any(known.get(v) is False for v in owner.operands):
                known[top] = self._is_weight(top)
                stack.pop()
            elif pending := [v for v in owner.operands if v not in known]:
                stack.extend(pending)
            else:
                known[top] = all(known[v] for v in owner.operands)
                stack.pop()
        return known[value]

    def _defers(self, op: Operation) -> bool:
        """tp: whether `op` computes a weight from weights (weight_norm's `g * v / |v|`,
        a spectral norm's `W / sigma`; a map or a sum, not a precision cast or a layout
        op): partitioned when a reader wants its result, split as that reader wants
        (`_flush`), not whole on every rank before it is cut (`_weight_part`)."""
        if (self.data_parallel or not isinstance(op, MapOp | ReduceOp) or not op.operands
                or phase_of(op) == Phase.OPTIMIZER or _uncast(op.results[0]) is not op.results[0]):
            return False
        return self._from_weights(op.results[0])

    def _undefer(self, op: Operation) -> None:
        """Partition the deferred ops `op` reads (`_flush`), each as `op`'s plan wants
        it (a matmul's computed weight split by columns or rows); whole for other readers."""
        pending = [index for index, v in enumerate(op.operands) if v.owner in self.deferred]
        if not pending:
            return
        wants: list[Layout] = [None] * len(op.operands)
        if isinstance(op, MatmulOp | GroupedMatmulOp | MapOp):
            try:
                plan = self._plan_as_whole(op)
            except LocatedError:
                plan = None
            wants = plan[0] if plan is not None else wants
        for index in pending:
            value, want = op.operands[index], wants[index]
            if value.owner in self.deferred:
                self._flush(value, want if isinstance(want, Split) else None)

    def _flush(self, value: SSAValue, want: Split | None) -> None:
        """Partition the deferred ops `value` is computed by, in program order, after
        splitting the weights they read as `want` reaches them back through them (by
        their dim maps; a sum's reduced dims and a broadcast operand's dims dropped):
        weight_norm's `v` split as the computed weight, its gain by the rows it scales;
        a norm over a split dim is then a partial sum, all-reduced (a vector, not a gather
        of the weight), and the backward follows the split weights. When one of those
        weights cannot be split (read by ops already partitioned), none is: the ops run
        whole and the reader cuts its part (`_weight_part`)."""
        ops: list[Operation] = []
        stack = [value]
        while stack:
            owner = stack.pop().owner
            if isinstance(owner, Operation) and owner in self.deferred and owner not in ops:
                ops.append(owner)
                stack.extend(owner.operands)
        ops.sort(key=_position)
        prefer: dict[SSAValue, Split] = {value: want} if want is not None else {}
        for op in reversed(ops):
            split = prefer.get(op.results[0])
            if split is None or not isinstance(op, OpFacts):
                continue
            shapes = [self.full_shape(v) for v in op.operands]
            for operand, dests in zip(op.operands, op.dims_for(shapes, [self.full_shape(op.results[0])]).operands):
                if (wanted := self._restrict(split, operand, dests)) is not None:
                    prefer.setdefault(operand, wanted)
        leaves = {leaf: split for leaf, split in prefer.items()
                  if leaf.owner not in ops and self.layout_of(leaf) != split}
        if all(self.layout_of(leaf) is None and self._shard_chain(leaf, split) is not None
               for leaf, split in leaves.items()):  # all or none: one left whole would be gathered
            for leaf, split in leaves.items():
                self._shard_through_chain(leaf, split)
        for op in ops:
            del self.deferred[op]
            self._partition_op(op)

    def _take_parts(self, value: SSAValue, want: Split, before: Operation) -> SSAValue:
        """`rdu.local_part` of the replicated `value` along each dim of `want`."""
        result = value
        element = value.type.element_type  # type: ignore[attr-defined]
        shape = list(self.full_shape(value))
        for dim, parts, stride, period in want.entries:
            groups = self._groups(parts, stride)
            if isinstance(period, int) and period:  # each run of `period` cut alike: a local part of (runs, period)
                runs = [*shape[:dim], shape[dim] // period, period // parts, *shape[dim + 1:]]
                result = self._insert(ReshapeOp(result, TensorType(element, [*runs[:dim + 1], period,
                                                                             *runs[dim + 2:]])), before, None)
                result = self._insert(LocalPartOp(result, dim + 1, parts, TensorType(element, runs),
                                                  1 if groups else stride, groups), before, None)
                shape[dim] //= parts
                result = self._insert(ReshapeOp(result, TensorType(element, shape)), before, None)
                continue
            shape[dim] //= parts
            result = self._insert(LocalPartOp(result, dim, parts, TensorType(element, shape), 1 if groups else stride,
                                              groups), before, None)
            if self.zero == 1 and phase_of(before) == Phase.OPTIMIZER:  # ZeRO 1: the update cuts the whole
                set_phase(result.owner, Phase.OPTIMIZER)  # type: ignore[arg-type]  # gradient it holds
        self.full[result] = self.full_shape(value)
        self.layout[result] = want
        return result

    def _make_locally(self, value: SSAValue, want: Split, before: Operation) -> SSAValue:
        """One rank's part of `value` as `want` (see `_made_locally`): a copy of its
        map or broadcast at the rank's shape, just before `before`."""
        owner = value.owner
        full = self.full_shape(value)
        rank_type = _per_rank(value.type, full, want)  # type: ignore[arg-type]
        if isinstance(owner, BroadcastOp):
            part: Operation = BroadcastOp(owner.input, rank_type)
        else:
            assert isinstance(owner, MapOp)
            part = MapOp(list(owner.inputs), rank_type, owner.body.clone())
        part.location = before.location
        _same_place(part, before)
        parent = before.parent_block()
        assert parent is not None
        parent.insert_op_before(part, before)
        self.full[part.results[0]] = full
        self.layout[part.results[0]] = want
        return part.results[0]

    def _shard_through_chain(self, value: SSAValue, want: Split) -> SSAValue:
        chain = self._shard_chain(value, want)
        assert chain is not None
        if not chain:
            return self._shard_arg(value, want)
        first, first_want = chain[0]
        if not self._split_by_broadcast(first, first_want):
            root = self._source_split(first, first_want)
            assert root is not None
            self._shard_arg(first.operands[0], root, first)
        for op, split in chain:
            self._set_result(op, split)
        return chain[-1][0].results[0]

    def _shard_arg(self, arg: SSAValue, split: Split, via: Operation | None = None) -> SSAValue:
        assert isinstance(arg, BlockArgument)
        if self._split_already(arg, split):
            return arg
        full = self.full_shape(arg)
        set_shard(self.attrs[arg.index], self._program_split(split, shard_of(self.attrs[arg.index])))
        reference = global_of(self.attrs[arg.index])
        per_rank = _per_rank(arg.type, full, split)
        if reference is not None:
            target = self._global(reference)
            assert target is not None
            target.global_type = per_rank
            set_shard(target.attributes, self._program_split(split, shard_of(target)))
        new = Rewriter.replace_value_with_new_type(arg, per_rank)
        self.full[new] = full
        self.layout[new] = split
        for use in list(new.uses):  # the slices of a stacked cache the walk has passed
            if use.operation is not via and isinstance(use.operation, SliceOp) and use.operation.result in self.layout:
                self._set_result(use.operation, self._slice_result_split(use.operation, split))
        return new

    # -- the rules, one per op kind ---------------------------------------------

    def partition(self) -> list[Layout]:
        """Partition the function; the layout of each of its results."""
        try:
            return self._partition_ops()
        finally:
            self.function.arg_attrs = ArrayAttr(DictionaryAttr(a) for a in self.attrs)

    def _partition_ops(self) -> list[Layout]:
        block = self.function.body.block
        self.heads = head_sizes(self.function)
        if self.data_parallel:
            executed = executed_microbatches(self.module) if self.function is entry_function(self.module) else 1
            for arg, split in batch_splits(self.function, self.tp, executed):
                self._shard_arg(arg, split)
        for arg, seed in zip(list(self.function.args), self.seeds):
            if isinstance(seed, Split) and seed.valid(self.tp) and seed.fits(self.full_shape(arg)):
                full = self.full_shape(arg)
                sharded = self._shard_arg(arg, seed)
                if self.sequence_parallel and not self._is_weight(sharded) and seed == token_split(full, self.tp):
                    self.token_splits.add(sharded)
        if self.zero:
            self._shard_optimizer_state()
        ops = list(block.ops)  # not the parameters' all-gathers stage 3 inserts: made in their layouts
        used = [op for op in ops if any(result.uses for result in op.results)]
        if self.zero >= 3:
            self._shard_parameters()
        for op in ops:
            if isinstance(op, func.ReturnOp):
                while self.deferred:
                    self._flush(next(iter(self.deferred)).results[0], None)
                layouts = self._results(op)
                _erase_made_dead(used)
                return layouts
            if self._defers(op):
                self.deferred[op] = None
                continue
            self._undefer(op)
            self._partition_op(op)
        return []

    def _shard_optimizer_state(self) -> None:
        """ZeRO: split each optimizer state argument over the replicas along its
        `zero_dim` (beside the dims tp split already); one that no dim divides stays
        whole. In an outlined `@layer_optimizer` the gradients arrive as arguments:
        those the update reads beside a state are taken split (the caller
        reduce-scatters them, `_partition_call`)."""
        states, parameters = self._optimizer_roles()
        for arg in states:
            held = shard_of(self.attrs[arg.index])
            dim = zero_dim(_shape(arg), self.tp, held.dims() if held is not None else ())
            if dim is None:
                continue
            want = Split.whole(dim, self.tp)
            for use in list(arg.uses):
                for value in list(use.operation.operands):
                    if _shape(value) != _shape(arg) or value in states or value in parameters:
                        continue
                    if not isinstance(value, BlockArgument):
                        self._trace_gradient(value, want)
                    elif is_outlined(self.function) and self.layout_of(value) is None:
                        self._shard_arg(value, want)  # a gradient passed in by the caller
            self._shard_arg(arg, want)

    def _shard_parameters(self) -> None:
        """ZeRO stage 3: each trained parameter argument held split like its state
        (`zero_dim`); the optimizer updates that part (its result written back
        split), every other reader takes it whole from an all-gather inserted just
        before its first reader of each phase (one for the forward, one again for
        the backward: the gathered weight is not kept between them)."""
        for arg in self._trained_parameters():
            held = shard_of(self.attrs[arg.index])
            dim = zero_dim(_shape(arg), self.tp, held.dims() if held is not None else ())
            if dim is None:
                continue  # no dim divides: held whole, as its state is
            want = Split.whole(dim, self.tp)
            readers: dict[Phase | None, list[tuple[Operation, int]]] = {}
            for use in [] if is_outlined(self.function) else list(arg.uses):  # a layer's: only the update reads
                phase = phase_of(use.operation)
                if phase != Phase.OPTIMIZER:
                    readers.setdefault(phase, []).append((use.operation, use.index))
            split = self._shard_arg(arg, want)
            for uses in readers.values():
                first = min((user for user, _ in uses), key=_position)
                whole = self._gather(split, want, first)
                self.layout[whole] = None
                self.full[whole] = self.full_shape(split)
                for user, index in uses:
                    user.operands[index] = whole

    def _trained_parameters(self) -> list[BlockArgument]:
        """The parameter arguments the optimizer updates: the entry's (a parameter
        global whose new value the step returns), an outlined layer's by what its
        first call passes them."""
        entry = entry_function(self.module)
        updated = {u.name for u in result_updates(entry) if u is not None and u.kind == "buffer"}
        kinds = {g.sym_name.data: g.attributes.get("kind") for g in self.module.ops if isinstance(g, GlobalOp)}
        trained = {arg for arg, attrs in zip(entry.args, arg_attrs(entry))
                   if (name := global_of(attrs)) in updated and isinstance(kind := kinds.get(name or ""), StringAttr)
                   and kind.data == "parameter"}
        if self.function is entry:
            return [arg for arg in entry.args if arg in trained]
        call = next((op for op in entry.body.block.ops if isinstance(op, func.CallOp)
                     and op.callee.string_value() == self.function.sym_name.data), None)
        if call is None or phase_of(call) != Phase.OPTIMIZER:
            return []
        return [self.function.args[i] for i, value in enumerate(call.operands) if value in trained]

    def _optimizer_roles(self) -> tuple[list[BlockArgument], set[SSAValue]]:
        """(the optimizer state arguments, the parameter arguments) of the function:
        the entry's by their globals (`optimizer_state_args`); an outlined layer's
        by what its first call passes them (the entry's state and parameter arguments)."""
        entry = entry_function(self.module)
        if self.function is entry:
            return list(optimizer_state_args(self.module, entry)), set()
        call = next((op for op in entry.body.block.ops if isinstance(op, func.CallOp)
                     and op.callee.string_value() == self.function.sym_name.data), None)
        if call is None:
            return [], set()
        states = set(optimizer_state_args(self.module, entry))
        weights = {arg for arg, attrs in zip(entry.args, arg_attrs(entry)) if global_of(attrs) is not None}
        args = list(self.function.args)
        found = [args[i] for i, value in enumerate(call.operands) if value in states]
        return found, {args[i] for i, value in enumerate(call.operands) if value in weights and value not in states}

    def _parameter_results(self) -> list[bool]:
        """Per result: whether it is a parameter's new value (ZeRO gathers those);
        an outlined layer's when its first call returns it as one."""
        entry = entry_function(self.module)
        if self.function is entry:
            return parameter_results(self.module, entry)
        call = next((op for op in entry.body.block.ops if isinstance(op, func.CallOp)
                     and op.callee.string_value() == self.function.sym_name.data), None)
        updated = parameter_results(self.module, entry)
        if call is None:
            return []
        return [any(isinstance(use.operation, func.ReturnOp) and use.index < len(updated) and updated[use.index]
                    for use in result.uses) for result in call.results]

    def _trace_gradient(self, value: SSAValue, want: Split) -> None:
        """Record that the state update reads `value` split as `want`, and so the
        same-shaped operands of the maps and the input of the reshapes that make
        it (a clipped, unscaled gradient back to the backward's partial sum):
        `_set_result` reduce-scatters the partial sum there, so that the clip's
        norm is computed on each replica's part and all-reduced as one scalar."""
        if value in self.zero_wants:
            return
        self.zero_wants[value] = want
        owner = value.owner
        if isinstance(owner, MapOp):
            for operand in owner.operands:
                if not isinstance(operand, BlockArgument) and _shape(operand) == _shape(value):
                    self._trace_gradient(operand, want)
        elif isinstance(owner, ReshapeOp):
            source = self._source_split(owner, want)
            if source is not None and source.valid(self.tp):
                self._trace_gradient(owner.input, source)

    def _scatter_early(self, op: Operation, result: SSAValue) -> None:
        """ZeRO: a partial sum the optimizer takes split (`zero_wants`) and only
        optimizer ops read is reduce-scattered where it is made (stage 2), or
        all-reduced there and held whole, each replica's part cut for the update
        (stage 1); its readers (the clip's norm among them) then work on the
        replica's part."""
        want = self.zero_wants.get(result)
        if (want is None or self._rank_rounded(result) or not self._scatters_to(result, want)
                or not all(phase_of(use.operation) == Phase.OPTIMIZER for use in result.uses)):
            return
        users = [(use.operation, use.index) for use in list(result.uses)]
        if self.zero >= 2:
            part = self._reduce_scatter(result, want, op)
            if result in self.rounds_to:
                part = self._rounded(result, part)
        else:
            part = self._take_parts(self.materialize(result, None, op), want, users[0][0])
        for user, index in users:
            user.operands[index] = part

    def arg_layouts(self) -> list[Layout]:
        """The layout each argument of the function is taken in (a split weight or input)."""
        return [self.layout_of(arg) for arg in self.function.args]

    def _window_for_calls(self, op: Operation) -> bool:
        """Whether `op` is a static window of an argument (a slice, or a reshape of
        one: `kv[i, 0]` of a stacked cache, `w[i]` of a stacked weight) read only by
        outlined layers' calls: the walk leaves it to the call, which splits it and
        the argument under it as the callee takes it (`_shard_chain`)."""
        if not isinstance(op, SliceOp | ReshapeOp) or self._seen(op):
            return False
        source: SSAValue = op.operands[0]
        while isinstance(source.owner, SliceOp | ReshapeOp):
            source = source.owner.operands[0]
        if not isinstance(source, BlockArgument) or source.block is not self.function.body.block:
            return False
        return all(self._read_by_calls(use.operation) for use in op.results[0].uses)

    def _read_by_calls(self, op: Operation) -> bool:
        """A call of a partitioned layer, or a window op read only by such calls."""
        if isinstance(op, func.CallOp):
            name = op.callee.string_value()
            return name in self.callees or (self.at_calls is not None and name in self.at_calls.waiting)
        return isinstance(op, SliceOp | ReshapeOp) and all(self._read_by_calls(use.operation)
                                                             for use in op.results[0].uses)

    def _partition_call(self, op: func.CallOp, callee: CalleeLayouts) -> None:
        """A call of an outlined layer partitioned once: each operand moved to the
        layout its callee takes that argument in (the caller's own weight sharded
        the same way), each result in the layout the callee gives it."""
        wants, results = callee
        returned = self._callee_outputs(op) if PARTIAL in results else []
        for index, (value, want) in enumerate(zip(list(op.operands), wants)):
            have = self.layout_of(value)
            if isinstance(want, Split) and isinstance(have, Split) and have != want:
                value = self.materialize(value, None, op)  # another split: whole first
            op.operands[index] = self.materialize(value, want, op)
        for old, layout in zip(list(op.results), results):
            full = _shape(old)
            new: SSAValue = old
            held = _summed(layout)
            if isinstance(held, Split):
                new = Rewriter.replace_value_with_new_type(old, _per_rank(old.type, full, held))  # type: ignore[arg-type]
            elif layout == PARTIAL and returned[old.index] != old.type:  # kept in f32 (`_widen_partial`)
                new = Rewriter.replace_value_with_new_type(old, returned[old.index])
                self.rounds_to[new] = old.type.element_type  # type: ignore[attr-defined]
            self.full[new] = full
            self.layout[new] = layout
            if (self.sequence_parallel and phase_of(op) != Phase.OPTIMIZER and isinstance(layout, Split)
                    and layout == token_split(full, self.tp)):
                self.token_splits.add(new)
            if self.zero and layout == PARTIAL:  # a gradient an outlined backward layer returns
                self._scatter_early(op, new)

    def _callee_outputs(self, op: func.CallOp) -> list[Attribute]:
        """The result types of `op`'s callee, partitioned."""
        callee = SymbolTable.lookup_symbol(self.module, op.callee)
        assert isinstance(callee, func.FuncOp)
        return list(callee.function_type.outputs.data)

    def _partition_op(self, op: Operation) -> None:
        if isinstance(op, func.CallOp) and self.at_calls is not None:
            self.replicated_ops += self.at_calls.partition(op.callee.string_value(),
                                                           [self.layout_of(v) for v in op.operands])
        if isinstance(op, func.CallOp) and (callee := self.callees.get(op.callee.string_value())) is not None:
            self._partition_call(op, callee)
            return
        if self._window_for_calls(op):
            return  # its layout is the one its call takes it in (`_partition_call`)
        if not op.results or not all(isinstance(r.type, TensorType) for r in op.results):
            self._replicate(op)
            return
        if isinstance(op, ConvOp) and op.bias is not None and self._sums_over_ranks(op):
            self._partition_summed_conv(op)
            return
        if self._keeps_partial(op):
            self._set_result(op, PARTIAL)
            return
        if self._partition_group_linear(op):
            return
        if self.sequence_parallel:
            self._sequence_operands(op)
        if isinstance(op, GatherOp) and (self._partition_take_along(op) or self._partition_split_take(op)
                                         or self._partition_local_map(op) or self._partition_vocab_lookup(op)):
            return
        if isinstance(op, ReduceOp) and self._partition_split_extreme(op):
            return
        if isinstance(op, ScatterOp) and (self._partition_split_scatter(op) or self._partition_local_scatter(op)):
            return
        if self.zero and isinstance(op, ReshapeOp | TransposeOp) and self.layout_of(op.operands[0]) == PARTIAL:
            self._set_result(op, PARTIAL)  # ZeRO: a partial gradient reshaped stays partial (made whole later)
            return
        if self.experts and self._partition_experts(op):
            return
        plan = self._plan_as_whole(op)
        if plan is None:
            self._replicate(op)
            return
        wants, result_layout = plan
        self.reading = {}
        for value, want in zip(op.operands, wants):
            self.reading.setdefault(value, set()).add(want)
        cut = self._cuts_beside_weight(op, wants, result_layout) or self._groups_cut(op, wants)
        if not all(self.feasible(v, w, cut) for v, w in zip(op.operands, wants)):
            self.reading = {}
            self._replicate(op)
            return
        for index, (value, want) in enumerate(zip(list(op.operands), wants)):
            op.operands[index] = self.materialize(value, want, op)
        self.reading = {}
        if isinstance(op, SliceOp):
            self._rank_offsets(op)
        if isinstance(op, ConvOp | ConvGradOp):
            _rank_groups(op, self.full_shape(op.input)[1])
        self._set_result(op, result_layout)

    def _sums_over_ranks(self, op: ConvOp) -> bool:
        """Whether the rule for `op` makes each rank's result a partial sum (its
        input channels split: a row split, or a grouped one's every group cut alike)."""
        plan = self._plan_as_whole(op)
        return plan is not None and (plan[1] == PARTIAL or isinstance(plan[1], GroupPartial))

    def _partition_summed_conv(self, op: ConvOp) -> None:
        """A biased convolution whose ranks' results are partial sums: its bias
        taken out (`conv_bias.take_out_conv_bias`: the convolution in f32, then a
        map adding the bias and rounding once), so the add follows the all-reduce
        and counts the bias once; each op partitioned in turn."""
        for part in take_out_conv_bias(op):
            self._partition_op(part)

    def _keeps_partial(self, op: Operation) -> bool:
        """Whether `op` is linear in operands that are all partial sums, so its result
        is the partial sum of the whole result (the sum over the ranks commutes with
        it) and one all-reduce after it replaces one per operand: a reshape or
        transpose of a partial sum, or an elementwise sum or difference of partial
        sums (a backward layer's input gradients through q, k and v, or gate and up,
        each a partial sum of the rows of a split weight, added before one all-reduce;
        a bf16 sum computed in f32 and rounded back counts: its rounding is the one
        Megatron's local sum before its all-reduce has). Never an op whose result
        has more bytes than one of its partial operands (a gradient cast up to f32
        for the optimizer: its all-reduce stays on the narrower operand), but a
        replica's 16-bit gradient cast up to its float32 master weight's
        (`_rank_rounded`: DDP all-reduces the float32 `.grad`)."""
        tensors = [v for v in op.operands if isinstance(v.type, TensorType)]
        if not tensors or len(op.results) != 1 or any(self.layout_of(v) != PARTIAL for v in tensors):
            return False
        if tensor_bytes(op.results[0]) > min(tensor_bytes(v) for v in tensors) and not (
                widening_cast(op) and self._rank_rounded(tensors[0])):
            return False
        if isinstance(op, ReshapeOp | TransposeOp):
            return True
        if not isinstance(op, MapOp) or len(tensors) != len(op.operands) or any(v in self.rounds_to for v in tensors):
            return False  # a map's body reads a partial sum kept in f32 (`_widen_partial`) at its 16-bit type
        linear = ("arith.addf", "arith.subf", "arith.negf", "arith.extf", "arith.truncf", "rdu.yield")
        body = list(op.body.block.ops)
        return len(body) > 1 and all(inner.name in linear for inner in body)

    def _set_result(self, op: Operation, layout: Layout) -> None:
        result: SSAValue = op.results[0]
        full = _shape(result)
        held = _summed(layout)
        if isinstance(held, Split):
            result = Rewriter.replace_value_with_new_type(result, _per_rank(result.type, full, held))  # type: ignore[arg-type]
        elif layout == PARTIAL:
            result = self._widen_partial(op, result)
        self.full[result] = full
        self.layout[result] = layout
        if self.zero and layout == PARTIAL:
            self._scatter_early(op, result)
        if self.sequence_parallel and layout == PARTIAL:
            self._mark_token_partial(op, result)
        if self.sequence_parallel and isinstance(layout, Split) and any(v in self.token_splits for v in op.operands):
            self.token_splits.add(result)

    # -- sequence parallelism (passes/rdu_partition/sequence.py) ----------------

    # -- partial sums of 16-bit floats kept in f32 ------------------------------

    def _widen_partial(self, op: Operation, result: SSAValue) -> SSAValue:
        """A mixed-precision training step's partial sum of a 16-bit float
        that a matmul, a convolution (a weight's gradient over the batch) or
        a sum makes (or a reshape or transpose of one; a tp split's `rdu.conv_grad`),
        retyped f32: its users see it rounded to its 16-bit type once, after
        the all-reduce (or reduce-scatter) in f32 (`_rounded`), as eager
        autocast's one kernel rounds the whole sum once, and as mixed
        precision reduces gradients in f32. Rounding each rank's part to bf16
        first put one more bf16 rounding into every dp gradient and tp partial
        sum (out of eager autocast's own distance from float32). A model
        trained in 16 bits (no float32 master weights) and inference keep
        16-bit all-reduces. Not in an outlined layer whose partial results
        its caller reduce-scatters (ZeRO 2: its signature is the callers'),
        nor at dp for a gradient only cast up to f32 (`_rank_rounded`)."""
        element = result.type.element_type  # type: ignore[attr-defined]
        if (not isinstance(element, BFloat16Type | Float16Type) or not self._master_weights()
                or (self.zero >= 2 and is_outlined(self.function)) or self._rank_rounded(result)):
            return result
        if isinstance(op, ReshapeOp | TransposeOp):
            if op.operands[0] not in self.rounds_to:
                return result
        elif isinstance(op, ReduceOp) and op.kind.data == ReduceKind.SUM:
            source = op.input
            wide_input = _cast_map(source, TensorType(f32, _shape(source)), arith.ExtFOp)
            _same_place(wide_input, op)
            wide_input.location = op.location
            op.parent_block().insert_op_before(wide_input, op)  # type: ignore[union-attr]
            self.layout[wide_input.results[0]] = self.layout_of(source)
            self.full[wide_input.results[0]] = self.full_shape(source)
            op.operands[0] = wide_input.results[0]
        elif not isinstance(op, MatmulOp | ConvOp) and not (isinstance(op, ConvGradOp) and not self.data_parallel):
            return result  # a replica's convolution gradient is its kernel's, rounded (DDP's)
        wide = Rewriter.replace_value_with_new_type(result, TensorType(f32, _shape(result)))
        if result in self.zero_wants:
            self.zero_wants[wide] = self.zero_wants.pop(result)
        self.rounds_to[wide] = element
        return wide

    def _rank_rounded(self, value: SSAValue) -> bool:
        """Data parallel, mixed precision: whether the partial sum `value` is a
        16-bit gradient that only becomes a float32 master weight's
        (`training.ddp_gradient`). Each replica rounds its own, as each DDP rank's
        kernel rounds its local gradient; the all-reduce takes it after the cast
        up, in float32, as DDP all-reduces `.grad` (times 1/dp, in the loss's
        1/batch: exact for a power-of-two dp). Also where the forward couples the
        rows (batch norm's statistics all-reduced, as SyncBatchNorm): DDP with
        SyncBatchNorm rounds each rank's weight gradient just the same, and a
        whole batch's kernel has no parallel form (torch's bf16 convolution
        backward adds the images into its 16-bit sum one by one on some CPUs)."""
        return self.data_parallel and self._widened(value) and ddp_gradient(value)

    def _master_weights(self) -> bool:
        """Whether this is a mixed-precision training step: its trained
        parameters are float32 (the master weights), so its 16-bit values are
        autocast's compute copies. A parameter is trained when the step writes
        it back (an optimizer's update) or returns its gradient (a
        gradients-only step, `optimizer=None`)."""
        if self.master is None:
            entry = entry_function(self.module)
            named = {u.name for u in result_updates(entry) if u is not None and u.kind == "buffer"} | {
                r.name for r in result_roles(entry) if r is not None and r.kind == "gradient" and r.of == "parameter"}
            trained = [g.global_type.element_type for g in self.module.ops if isinstance(g, GlobalOp)
                       and g.sym_name.data in named and isinstance(kind := g.attributes.get("kind"), StringAttr)
                       and kind.data == "parameter"]
            self.master = self.training and bool(trained) and all(t == f32 for t in trained)
        return self.master

    def _rounded(self, wide: SSAValue, made: SSAValue) -> SSAValue:
        """`made` (the f32 partial sum `wide` all-reduced or reduce-scattered) rounded to `wide`'s 16-bit type."""
        if made is wide or made.type.element_type != f32:  # type: ignore[attr-defined]
            return made
        cast = _cast_map(made, TensorType(self.rounds_to[wide], _shape(made)), arith.TruncFOp)
        layout = self.layout_of(made)
        rounded = self._insert_after(cast, made)
        self.layout[rounded] = layout
        self.full[rounded] = self.full_shape(made)
        return rounded

    def _mark_token_partial(self, op: Operation, result: SSAValue) -> None:
        """Record `result` as a partial sum of activations: a matmul's of a weight
        (split rows contracted), or a sum, reshape or transpose of such partial sums."""
        if isinstance(op, MatmulOp):
            if self._weight_behind(op.rhs) is not None:
                self.token_partials.add(result)
        else:
            partials = [v for v in op.operands if self.layout_of(v) == PARTIAL]
            if partials and all(v in self.token_partials for v in partials):
                self.token_partials.add(result)

    def _sequence_operands(self, op: Operation) -> None:
        """Move `op`'s operands as sequence parallelism wants them before its rule
        runs: a partial sum of activations an elementwise op reads reduce-scattered
        along its tokens; a token-split operand of a matmul (or of a reshape or
        transpose only matmuls read) all-gathered: matmuls take whole tokens."""
        if reads_by_token(op):
            for index, value in enumerate(list(op.operands)):
                if value in self.token_partials and self.layout_of(value) == PARTIAL:
                    want = token_split(self.full_shape(value), self.tp)
                    if want is not None:
                        op.operands[index] = self.materialize(value, want, op)
                        self.token_splits.add(op.operands[index])
        elif isinstance(op, MatmulOp) or (isinstance(op, ReshapeOp | TransposeOp) and self._read_by_matmuls(op)):
            for index, value in enumerate(list(op.operands)):
                if value in self.token_splits:
                    op.operands[index] = self.materialize(value, None, op)

    def _read_by_matmuls(self, op: Operation) -> bool:
        """Whether only matmuls read `op`'s result, directly or through reshapes and
        transposes (and the return: a value a forward layer saves for its backward's matmuls)."""
        users = [use.operation for use in op.results[0].uses]
        return any(not isinstance(user, func.ReturnOp) for user in users) and all(
            isinstance(user, MatmulOp | func.ReturnOp)
            or (isinstance(user, ReshapeOp | TransposeOp) and self._read_by_matmuls(user)) for user in users)

    def _replicate(self, op: Operation) -> None:
        if any(self.layout_of(v) is not None for v in op.operands):
            self.replicated_ops += 1
        for index, value in enumerate(list(op.operands)):
            if isinstance(value.type, TensorType):
                op.operands[index] = self.materialize(value, None, op)
        for result in op.results:
            self.layout[result] = None

    def _plan(self, op: Operation) -> tuple[list[Layout], Layout] | None:
        """(layout wanted of each operand, layout of the result), or None: replicate.

        The op's dim map (on full shapes) says where each split dim goes; a
        reshape regroups dims (`reshape_split`); a linear layer on a replicated
        input splits its weight by columns; a broadcast may widen a split."""
        splits = [self.split_of(v) for v in op.operands]
        if all(s is None for s in splits) and not isinstance(op, MatmulOp | GroupedMatmulOp | ConvOp):
            return [None] * len(splits), None
        if isinstance(op, ConvGradOp) and (kept := held_for_shapes(op, splits)) is not None:
            return self._plan_beside_shapes(op, splits[0], kept)
        if isinstance(op, ConvGradOp) and op.groups.value.data != 1 \
                and (grouped := by_whole_groups(op, splits)) is not None:
            return [*grouped[0]], grouped[1]
        if not isinstance(op, OpFacts) or not (op.SHARDS or self._moves_batch(op)):
            return None
        if isinstance(op, ScatterOp) and (summed := self._plan_scatter_sum(op, splits)) is not None:
            return summed
        if isinstance(op, ReshapeOp):
            return self._plan_reshape(op, splits[0]) if splits[0] is not None else None
        if isinstance(op, SliceOp) and (point := self._exchange_at(op.input)) is not None and splits[0] == point[0]:
            return self._plan_periodic_slice(op, point[1])  # the exchange: each rank's part of every chunk
        if isinstance(op, SliceOp) and splits[0] is not None and splits[0].contiguous() is False:
            return self._plan_periodic_slice(op, splits[0])
        if isinstance(op, ConcatOp) and (joined := self._joined_split(op, splits)) is not None:
            return [splits[0]] * len(splits), joined
        if isinstance(op, ConcatOp) and (blocks := self._blocks_joined(op, splits)) is not None:
            return list(splits), blocks
        dims = op.dims_for([self.full_shape(v) for v in op.operands], [_shape(r) for r in op.results])
        if isinstance(op, ConvOp) and op.groups.value.data != 1 and _channels_split(splits):
            return self._plan_grouped_conv(op, splits, dims)
        pieces: list[tuple[int, int, int, Period]] = []
        for split, dests in zip(splits, dims.operands):
            for dim, parts, stride, period in split.entries if split else ():
                dest = dests[dim]
                if dest is Dim.REDUCED:
                    return self._plan_partial(op, splits, dims) if op.SHARDS else None
                if not isinstance(dest, int):
                    return None
                pieces.append((dest, parts, stride, period))
        result = self._union(pieces)
        if isinstance(result, bool):
            return None
        if result is None and isinstance(op, MatmulOp | GroupedMatmulOp):
            taken, columns = self._column_split(op, self.full_shape(op.rhs), op.rhs_n_dim, len(_shape(op.result)))
            return taken + [None] * (len(op.operands) - len(taken)), columns  # a grouped product's offsets: whole
        if result is None and isinstance(op, ConvOp):
            return self._conv_channel_split(op)
        if isinstance(op, BroadcastOp) and result is not None:
            result = self._widen(op, result)
        wants: list[Layout] = [self._restrict(result, v, dests) for v, dests in zip(op.operands, dims.operands)]
        return wants, result

    def _plan_beside_shapes(self, op: ConvGradOp, grad: Split | None, kept: tuple[Split, Split]
                            ) -> tuple[list[Layout], Layout] | None:
        """A bias gradient whose input and weight, read for their shapes alone, stay
        cut as they are held (`conv_grads.held_for_shapes`): its result follows the
        output gradient's split by the dim map (none: whole); None where that cannot."""
        if grad is None:
            return [None, *kept], None
        dests = op.dims_for([self.full_shape(v) for v in op.operands], [_shape(op.result)]).operands[0]
        pieces = [(dests[dim], parts, stride, period) for dim, parts, stride, period in grad.entries]
        if not all(isinstance(dest, int) for dest, *_ in pieces):
            return None
        result = self._union(pieces)  # type: ignore[arg-type]
        return None if isinstance(result, bool) else ([grad, *kept], result)

    def _joined_split(self, op: ConcatOp, splits: Sequence[Split | None]) -> Split | None:
        """A concatenation of copies of one value split along the joined dim (KV heads
        tiled by `cat([k] * g)`, a `repeat`): each rank joins its parts, the result
        split with the value's length as its period (`Split.joined`); None otherwise
        (blocks of different values, a fused q/k/v gradient, keep the concat's old rule)."""
        dim = op.dim.value.data
        first = splits[0]
        if first is None or dim not in first.dims() or any(v is not op.operands[0] for v in op.operands):
            return None
        return first.joined(dim, self.full_shape(op.operands[0])[dim])

    def _blocks_joined(self, op: ConcatOp, splits: Sequence[Split | None]) -> Split | None:
        """A concatenation of different values split along the joined dim (the
        gradients of q, k and v joined into a fused projection's, the inverse of
        `_plan_periodic_slice`'s slices): each rank joins its parts, the result split
        in blocks, one per operand (equal blocks: their size the period; unequal:
        `Split`'s tuple of blocks, a block split as the most-split operand or into
        fewer parts of its own: k's and v's over rank pairs beside q's). Every
        operand split along the dim, every other dim split alike; None otherwise."""
        dim = op.dim.value.data
        others = {Split.of(e for e in s.entries if e[0] != dim) if s else None for s in splits}
        along = [next((e for e in s.entries if e[0] == dim), None) if s else None for s in splits]
        if len(others) != 1 or not all(along) or any(e is not None and e[3] for e in along):
            return None  # an operand whole along the dim (a block every rank holds) keeps the old rule
        parts, stride = max((e[1], -e[2]) for e in along if e is not None)
        stride = -stride
        blocks: list[SplitBlock] = []
        for value, entry in zip(op.operands, along):
            own = entry[1] if entry is not None else 1
            if parts % own or entry is None or entry[2] != stride * (parts // own):
                return None
            blocks.append(block_of(self.full_shape(value)[dim], own, parts))
        first = blocks[0]
        period: Period = first if len(set(blocks)) == 1 and isinstance(first, int) and first > 0 else tuple(blocks)
        joined = Split.of([*(e for e in (others.pop() or Split(())).entries), (dim, parts, stride, period)])
        return joined if joined is not None and joined.valid(self.tp) else None

    def _partition_take_along(self, op: GatherOp) -> bool:
        """A gather of every dim of its table (torch.gather: `take_along`) whose table
        is split along a dim that a ramp `0..n-1` indexes (rows of a cross-entropy's
        log-probabilities): each rank indexes its own rows with a ramp of its part's
        length and the other indices' part, and its result is split the same way.
        False (nothing done) when the op is not so."""
        table = self.split_of(op.source)
        full = self.full_shape(op.source)
        if (table is None or op.dim.value.data != 0 or len(op.indices) != len(full) or len(table.entries) != 1
                or any(self.layout_of(v) is not None and not isinstance(self.layout_of(v), Split)
                       for v in op.indices)):
            return False
        ((dim, parts, stride, period),) = table.entries
        ramp = op.indices[dim]
        if period or ramp_length(ramp, dim) != full[dim] or self.layout_of(ramp) is not None:
            return False
        split = Split(((dim, parts, stride, 0),))
        wants = [split if self.full_shape(v)[dim] == full[dim] else None for v in op.indices]
        if not all(self.feasible(v, w) for index, (v, w) in enumerate(zip(op.indices, wants)) if index != dim):
            return False
        for index, (value, want) in enumerate(zip(list(op.indices), wants)):
            if index != dim:
                op.operands[1 + index] = self.materialize(value, want, op)
        op.operands[1 + dim] = self._local_ramp(ramp, dim, full[dim] // parts, op)
        self._set_result(op, split)
        return True

    # -- vocab-parallel reductions and indexing (passes/rdu_partition/vocab.py) --

    def _whole_split(self, value: SSAValue) -> tuple[int, int] | None:
        """(dim, part) when `value` is split along one dim over every rank, in
        contiguous parts (no period, no stride); else None."""
        split = self.split_of(value)
        if split is None or len(split.entries) != 1:
            return None
        ((dim, parts, stride, period),) = split.entries
        if parts != self.tp or stride != 1 or period:
            return None
        return dim, self.full_shape(value)[dim] // parts

    def _partition_split_extreme(self, op: ReduceOp) -> bool:
        """A max or min over dims one of which is split (log_softmax's max over the
        vocabulary): each rank reduces its part (keeping the dims), the per-rank
        results are all-gathered along the split dim and reduced again. False
        (nothing done) when the op is not so."""
        split = self._whole_split(op.input)
        kind = op.kind.data
        dims = list(op.dims.get_values())
        if split is None or kind not in (ReduceKind.MAX, ReduceKind.MIN) or split[0] not in dims:
            return False
        dim = split[0]
        element = op.input.type.element_type  # type: ignore[attr-defined]
        kept = [1 if d in dims else n for d, n in enumerate(_shape(op.input))]
        local = self._emit(ReduceOp(kind, op.input, dims, True, TensorType(element, kept)), op)
        kept[dim] = self.tp
        gathered = self._emit(AllGatherOp(local, dim, self.tp, TensorType(element, kept)), op)
        op.operands[0] = gathered
        if op.keepdim is not None:
            op.dims = DenseArrayBase.from_list(i64, [dim])
        self._set_result(op, None)
        return True

    def _vocab_indices(self, index: SSAValue, part: int, before: Operation) -> tuple[SSAValue, SSAValue]:
        """(the index within this rank's part where it lies there, else 0; whether it lies there)."""
        ramp, mine = rank_offset(part, self.tp)
        self._emit(ramp, before)
        offset = self._emit(mine, before)
        local = self._emit(local_index(index, offset), before)
        inside = self._emit(in_part(local, part), before)
        return self._emit(where(inside, local, 0), before), inside

    def _partition_local_map(self, op: GatherOp) -> bool:
        """A gather by one 1-d index along a dim its source is split along (over every
        rank, or over the major factor `parts` of `parts x stride` ranks: a KV head per
        rank pair), by a map whose values are known and send each rank's block of
        output positions into that rank's block of the source (grouped-query heads:
        head h reads KV head h // group): each rank gathers from its own block by its
        part of the map less its block's first index, and the result is split over
        every rank along the dim (index_map.py). False (nothing done) when not so."""
        source = self.split_of(op.source)
        dim = op.dim.value.data
        if (source is None or len(source.entries) != 1 or len(op.indices) != 1
                or self.layout_of(op.indices[0]) is not None):
            return False
        ((split_dim, parts, stride, period),) = source.entries
        index = op.indices[0]
        if split_dim != dim or period or parts * stride != self.tp or len(_shape(index)) != 1:
            return False
        values = known_values(index, self.function, self.module)
        if values is None or not rank_local(values, self.full_shape(op.source)[dim], parts, stride):
            return False
        mine = self._emit(self._local_part(index, self.tp, 1, len(values) // self.tp), op)
        ramp = self._emit(IotaOp(0, self.full_shape(op.source)[dim] // parts, TensorType(i64, [parts])), op)
        offset = self._emit(self._local_part(ramp, parts, stride, 1), op)
        op.operands[1] = self._emit(local_index(mine, offset), op)
        self._set_result(op, Split(((dim, self.tp, 1, 0),)))
        return True

    def _local_part(self, value: SSAValue, parts: int, stride: int, length: int) -> LocalPartOp:
        """This rank's part (`length` long) of the 1-d `value` split `parts` ways, `stride` ranks apart."""
        groups = self._groups(parts, stride)
        return LocalPartOp(value, 0, parts, TensorType(i64, [length]), 1 if groups else stride, groups)

    def _partition_split_take(self, op: GatherOp) -> bool:
        """A gather of every dim of its table (torch.gather: a cross-entropy's
        log-probabilities at the labels) whose table is split over every rank along
        a dim indexed by an index that is not a ramp (the labels into the
        vocabulary): each rank gathers where the index lies in its part and gives
        0 elsewhere, a partial sum of the whole result. False when the op is not so."""
        split = self._whole_split(op.source)
        full = self.full_shape(op.source)
        if (split is None or op.dim.value.data != 0 or len(op.indices) != len(full) or op.wraps is not None
                or any(self.layout_of(v) is not None for v in op.indices)):
            return False
        dim, part = split
        if ramp_length(op.indices[dim], dim) is not None:
            return False  # a ramp along the split dim: `_partition_take_along`'s
        safe, inside = self._vocab_indices(op.indices[dim], part, op)
        op.operands[1 + dim] = safe
        self._set_result(op, None)
        self._zero_outside(op, inside)
        return True

    def _partition_vocab_lookup(self, op: GatherOp) -> bool:
        """An embedding lookup (a gather by one index tensor along a dim) of a table
        split over every rank along that dim, or of a weight an unseen output layer
        will take split by those rows (a table tied to the LM head, split here
        first): each rank gathers the rows it owns (`index - offset` where it lies in
        its part, row 0 elsewhere) and zeroes the others, a partial sum of the whole
        result (Megatron's vocab-parallel embedding). False when the op is not so."""
        dim = op.dim.value.data
        if len(op.indices) != 1 or op.wraps is not None or self.layout_of(op.indices[0]) is not None:
            return False
        if self.layout_of(op.source) is None and self._tied_to_output_layer(op.source, dim):
            self._shard_arg(op.source, Split.whole(dim, self.tp))
        split = self._whole_split(op.source)
        if split is None or split[0] != dim:
            return False
        index = op.indices[0]
        safe, inside = self._vocab_indices(index, split[1], op)
        op.operands[1] = safe
        self._set_result(op, None)
        rest = len(_shape(op.result)) - dim - len(_shape(index))
        mask = self._emit(ReshapeOp(inside, TensorType(i1, [1] * dim + list(_shape(index)) + [1] * rest)), op)
        self._zero_outside(op, mask)
        return True

    def _zero_outside(self, op: GatherOp, inside: SSAValue) -> None:
        """Zero `op`'s result where `inside` is false (rows another rank owns),
        after `op`, for every reader: the whole result is then a partial sum."""
        masked = where(inside, op.result, 0)
        masked.location = op.location
        _same_place(masked, op)
        parent = op.parent_block()
        assert parent is not None
        parent.insert_op_after(masked, op)
        op.result.replace_uses_with_if(masked.result, lambda use: use.operation is not masked)
        self.full[masked.result] = _shape(masked.result)
        self.layout[masked.result] = PARTIAL

    def _tied_to_output_layer(self, table: SSAValue, dim: int) -> bool:
        """Whether `table` is a shardable weight (no initial value, not split yet)
        whose rows along `dim` (0) a matmul the walk has not reached reads as its
        output columns (`transpose_rhs`: an LM head tied to the embedding), over
        every rank in whole rows."""
        if dim != 0 or not self._is_weight(table) or self.full_shape(table)[0] % self.tp:
            return False
        assert isinstance(table, BlockArgument)
        reference = global_of(self._arg_attrs(table))
        if reference is not None:
            target = self._global(reference)
            if target is None or target.initial_value is not None or shard_of(target) is not None:
                return False
        return any(isinstance(use.operation, MatmulOp) and use.index == 1 and use.operation.transpose_rhs is not None
                   and not self._seen(use.operation) for use in table.uses)

    def _partition_split_scatter(self, op: ScatterOp) -> bool:
        """A scatter into a constant fill along a dim that the values of its shape
        are split along (the one-hot of a cross-entropy's labels, the gradient of
        the split log-probabilities): each rank scatters into its part of the fill
        the writes whose index lies there; a write outside it goes to position 0
        as the fill's value (one write a row) or as 0 added (scatter-add). The
        result is split as those values are. False when the op is not so."""
        dim = op.dim.value.data
        fill = fill_value(op.input)
        full = self.full_shape(op.input)
        adds = op.reduce is not None and op.reduce.data == ReduceKind.SUM
        one_write = op.reduce is None and _shape(op.index)[dim] == 1
        if (fill is None or not (adds or one_write) or any(self.layout_of(v) is not None for v in op.operands)
                or full[dim] % self.tp or not self._split_alike(full, dim, op.result)):
            return False
        want = Split.whole(dim, self.tp)
        if not self._made_locally(op.input, want):
            return False
        safe, inside = self._vocab_indices(op.index, full[dim] // self.tp, op)
        source = self._emit(where(inside, op.source, 0 if adds else fill), op)
        op.operands[0] = self.materialize(op.input, want, op)
        op.operands[1] = safe
        op.operands[2] = source
        self._set_result(op, want)
        return True

    def _partition_local_scatter(self, op: ScatterOp) -> bool:
        """A scatter-add into zeros whose rows (the source along the scattered dim) are
        split over every rank, by a replicated index whose values are known and send
        each rank's rows into one block of the result, rank r's into block r // s of
        `tp // s` (the backward of a gather by a grouped-query head map, `arange(heads)
        // group`: the query heads' gradients added into their KV heads'): each rank
        adds its rows into its own block, by its part of the index rebased to the
        block. The result is split so, and with s > 1 (more ranks than blocks) the
        s ranks of a block hold a partial sum of it (`GroupPartial`). False (nothing
        done) when the op is not so."""
        dim = op.dim.value.data
        if (op.reduce is None or op.reduce.data != ReduceKind.SUM or fill_value(op.input) != 0
                or self.layout_of(op.input) is not None or self.layout_of(op.index) is not None
                or self.split_of(op.source) != Split.whole(dim, self.tp) or self._widened(op.result)):
            return False
        length = self.full_shape(op.input)[dim]
        values = known_values(op.index, self.function, self.module)
        parts = self._local_blocks(values, self.full_shape(op.index), dim, length) if values is not None else None
        if parts is None:
            return False
        stride = self.tp // parts
        want = Split(((dim, parts, stride, 0),))
        if not self._made_locally(op.input, want):
            return False
        mine = self.materialize(op.index, Split.whole(dim, self.tp), op)
        ramp = self._emit(IotaOp(0, length // parts, TensorType(i64, [parts])), op)
        offset = self._emit(self._local_part(ramp, parts, stride, 1), op)
        offset = self._emit(ReshapeOp(offset, TensorType(i64, [1] * len(_shape(mine)))), op)
        op.operands[1] = self._emit(local_index(mine, offset), op)
        op.operands[0] = self.materialize(op.input, want, op)
        self._set_result(op, GroupPartial(want, stride, 1) if stride > 1 else want)
        return True

    def _local_blocks(self, values: Sequence[int], shape: Sequence[int], dim: int, length: int) -> int | None:
        """The most blocks (a factor of tp, > 1) of a dim of `length` such that the
        index `values` (of `shape`, along `dim`) sends each rank's rows along `dim` (the
        index split over every rank) into the block its rank holds (`rank_local`); None if none."""
        rows = np.moveaxis(np.asarray(values, dtype=np.int64).reshape(shape), dim, 0).reshape(shape[dim], -1)
        if (rows != rows[:, :1]).any():
            return None  # a row's index differs across the other dims
        column = tuple(int(v) for v in rows[:, 0])
        candidates = [p for p in range(min(self.tp, length), 1, -1) if self.tp % p == 0 and length % p == 0]
        return next((p for p in candidates if rank_local(column, length, p, self.tp // p)), None)

    def _split_alike(self, full: Sequence[int], dim: int, result: SSAValue) -> bool:
        """Whether a value of shape `full` is split over every rank along `dim` alone
        in the function already (the log-probabilities a one-hot gradient meets),
        and, when `result` is a weight's gradient (`_updates_weights`), no weight of
        that shape is held otherwise (an embedding's scattered gradient stays as its
        weight is). Optimizer state (read by the update alone) follows its parameter
        and does not count: an embedding tied to the split LM head has its gradient
        scattered split too. A one-hot the shape of a whole weight (16 tokens of a
        64-word vocabulary beside a one-head 16 x 64 K/V projection) is no gradient."""
        alike = (dim, full[dim] // self.tp)
        if self._updates_weights(result) and any(
               self._is_weight(arg) and self.full_shape(arg) == tuple(full) and self._whole_split(arg) != alike
               and not all(phase_of(use.operation) == Phase.OPTIMIZER for use in arg.uses)
               for arg in self.function.args):
            return False
        return any(isinstance(layout, Split) and self.full.get(value) == tuple(full)
                   and self._whole_split(value) == alike for value, layout in self.layout.items())

    def _updates_weights(self, value: SSAValue, depth: int = LOOK_AHEAD) -> bool:
        """Whether `value` reaches an optimizer's update or the step's results through
        maps and reshapes alone, `depth` deep (a weight's gradient: an embedding's
        scattered rows, added to a tied head's); not a value a matmul reads first
        (a cross entropy's one-hot, a gradient of the logits)."""
        for use in value.uses:
            user = use.operation
            if isinstance(user, func.ReturnOp) or phase_of(user) == Phase.OPTIMIZER:
                return True
            if depth and isinstance(user, MapOp | ReshapeOp) and self._updates_weights(user.results[0], depth - 1):
                return True
        return False

    def _local_ramp(self, ramp: SSAValue, dim: int, length: int, before: Operation) -> SSAValue:
        """`0..length-1` shaped as `ramp` with `length` along `dim` (a rank's own rows)."""
        shape = list(_shape(ramp))
        shape[dim] = length
        iota = IotaOp(0, 1, TensorType(i64, [length]))
        reshaped = ReshapeOp(iota.result, TensorType(i64, shape))
        for new in (iota, reshaped):
            new.location = before.location
            _same_place(new, before)
            parent = before.parent_block()
            assert parent is not None
            parent.insert_op_before(new, before)
            self.layout[new.results[0]] = None
        return reshaped.result

    # -- expert parallelism (passes/rdu_partition/experts.py) -------------------

    def _partition_experts(self, op: Operation) -> bool:
        """An expert gather (`table[ids]`) takes the rank's own experts; an op keeping
        the pairs' rows of `Experts` operands keeps the layout. False: not such an op
        (its `Experts` operands are combined when it wants them whole)."""
        experts = [self.layout_of(v) for v in op.operands if isinstance(self.layout_of(v), Experts)]
        if (count := expert_table(op, self.tp)) is not None and not experts:
            return self._expert_gather(op, count)  # type: ignore[arg-type]
        if not experts or any(e != experts[0] for e in experts):
            return False
        layout = experts[0]
        assert isinstance(layout, Experts)
        if not all(keeps_rows(op, v, layout.rows) for v in op.operands if self.layout_of(v) == layout):
            return False
        for index, value in enumerate(list(op.operands)):
            if self.layout_of(value) != layout:
                op.operands[index] = self.materialize(value, None, op)
        self._set_result(op, layout)
        return True

    def _expert_gather(self, op: GatherOp, count: int) -> bool:
        """Rows of a stacked expert table, the table split along its experts: each
        rank gathers, for every pair, its own expert of the pair's local index."""
        want = Split.whole(0, self.tp)
        if self.layout_of(op.source) is not None or not self.feasible(op.source, want):
            return False
        ids = self.materialize(op.indices[0], None, op)
        if (ids, count) not in self.expert_ids:
            local, dest = local_expert_ids(ids, count, self.tp)
            for made, hint in ((local, "expert_local"), (dest, "expert_owner")):
                self._emit(made, op).name_hint = hint
            self.expert_ids[(ids, count)] = (local.result, dest.result)
        local_ids, dest_ids = self.expert_ids[(ids, count)]
        op.operands[0] = self.materialize(op.source, want, op)
        op.operands[1] = local_ids
        rows = _shape(op.result)[0]
        set_owned_rows(op, -(-rows // self.tp), rows)
        self._set_result(op, Experts(dest_ids, rows))
        return True

    def _emit(self, op: Operation, before: Operation) -> SSAValue:
        """Insert `op` (replicated) just before `before`, in its layer."""
        op.location = before.location
        _same_place(op, before)
        parent = before.parent_block()
        assert parent is not None
        parent.insert_op_before(op, before)
        self.layout[op.results[0]] = None
        return op.results[0]

    def _padded_rows(self, value: SSAValue, rows: int, padded: int, before: Operation) -> SSAValue:
        """`value` with its `rows` rows (dim 0) repeated up to `padded` rows."""
        if padded == rows:
            return value
        shape = list(_shape(value))
        pieces = [value] * (padded // rows)
        if rest := padded % rows:
            pieces.append(self._emit(SliceOp(value, [0] * len(shape), [1] * len(shape),
                                             TensorType(value.type.element_type, [rest, *shape[1:]])),  # type: ignore[attr-defined]
                                     before))
        return self._emit(ConcatOp(pieces, 0, TensorType(value.type.element_type, [padded, *shape[1:]])),  # type: ignore[attr-defined]
                          before)

    def _combine(self, value: SSAValue, layout: Experts, before: Operation) -> SSAValue:
        """Each pair's row from the rank owning its expert, on every rank: the rows cut
        in `tp` chunks (padded), `rdu.all_to_all` of the chunks, each rank picking its
        chunk's rows by owner, `rdu.all_gather` of the chunks."""
        ranks, rows = self.tp, layout.rows
        chunk = -(-rows // ranks)
        shape = list(_shape(value))
        element = value.type.element_type  # type: ignore[attr-defined]
        padded = self._padded_rows(value, rows, chunk * ranks, before)
        chunks = self._emit(ReshapeOp(padded, TensorType(element, [ranks, chunk, *shape[1:]])), before)
        exchanged = self._emit(AllToAllOp(chunks, 0, 0, ranks, chunks.type), before)
        owners = self._padded_rows(layout.dest, rows, chunk * ranks, before)
        owners = self._emit(ReshapeOp(owners, TensorType(i64, [ranks, chunk])), before)
        mine = self._emit(LocalPartOp(owners, 0, ranks, TensorType(i64, [1, chunk])), before)
        mine = self._emit(ReshapeOp(mine, TensorType(i64, [chunk])), before)
        ramp = self._emit(IotaOp(0, 1, TensorType(i64, [chunk])), before)
        picked = self._emit(GatherOp(exchanged, [mine, ramp], 0, TensorType(element, [chunk, *shape[1:]])), before)
        joined = self._emit(AllGatherOp(picked, 0, ranks, TensorType(element, [chunk * ranks, *shape[1:]])), before)
        if chunk * ranks == rows:
            return joined
        return self._emit(SliceOp(joined, [0] * len(shape), [1] * len(shape), TensorType(element, shape)), before)

    def _moves_batch(self, op: Operation) -> bool:
        """Data parallel: an op of one result not marked `SHARDS` still carries a split
        along the dims its dim map sends whole to a result dim (each result slice
        along such a dim reads only the operands' slice, as tiling relies on too)."""
        return self.data_parallel and len(op.results) == 1

    def _plan_scatter_sum(self, op: ScatterOp, splits: list[Split | None]
                          ) -> tuple[list[Layout], Layout] | None:
        """A scatter-add into zeros (an embedding's or index's gradient) whose rows
        (index and source along the scattered dim) are split: each rank adds its
        rows into its own zeros, a partial sum of the whole."""
        dim = op.dim.value.data
        _, index_split, source_split = splits
        if (op.reduce is None or op.reduce.data != ReduceKind.SUM or splits[0] is not None
                or index_split is None or index_split != source_split or index_split.dims() != {dim}
                or fill_value(op.input) != 0 or self.layout_of(op.input) is not None):
            return None
        return [None, index_split, source_split], PARTIAL

    def _plan_periodic_slice(self, op: SliceOp, split: Split) -> tuple[list[Layout], Layout] | None:
        """A slice of a value split with a period (a fused q/k/v projection's columns,
        each block split across the ranks) that takes whole blocks of the periodic
        dims: its result is split the same way in each block it takes (contiguously
        when it takes one); other dims as the dim map says."""
        try:
            return [split], _slice_split(op, split, self.full_shape(op.input))
        except _Unsplittable:
            return None

    def _rank_offsets(self, op: SliceOp) -> None:
        """One rank's offsets of a slice of a value split with a period: a block's
        start moves to where that block's part starts in the rank's part."""
        split = self.split_of(op.input)
        offsets = list(op.offsets.get_values())
        for dim, parts, _, period in split.entries if split else ():
            if isinstance(period, tuple):  # a block's start moves past the parts of the blocks before it
                offsets[dim] = _part_starts(period, parts)[block_starts(period).index(offsets[dim])]
            elif period:
                offsets[dim] = offsets[dim] // period * (period // parts)
        op.offsets = DenseArrayBase.from_list(i64, offsets)

    def _plan_partial(
        self, op: Operation, splits: list[Split | None], dims: DimMap
    ) -> tuple[list[Layout], Layout] | None:
        """A split along a summed dim: each operand split over every rank along its
        reduced dim (the split one, else its only one) gives a partial sum."""
        if not dims.sums:
            return None
        grouped = self._plan_group_partial(op, splits, dims)
        if grouped is not None:
            return grouped
        if isinstance(op, MatmulOp | GroupedMatmulOp):
            self._check_rows_split(op, splits[0], len(self.full_shape(op.lhs)) - 1, self.full_shape(op.lhs))
        wants: list[Layout] = []
        period = self._summed_period(splits, dims)
        ordinal = self._split_summed_ordinal(splits, dims)
        for index, split in enumerate(splits):
            reduced = dims.reduced(index)
            on = [d for d in reduced if split is not None and d in split.dims()]
            if not on and reduced:  # the summed axis the split operand is split along, not the first one
                on = [reduced[ordinal if ordinal < len(reduced) else 0]]
            wants.append(Split(((on[0], self.tp, 1, period),)) if reduced else None)  # none: whole
        return wants, PARTIAL

    @staticmethod
    def _split_summed_ordinal(splits: list[Split | None], dims: DimMap) -> int:
        """Which of its summed dims (0: the first) the first operand split along one
        is split along: an operand left whole is split along the same summed axis
        (a layer norm's weight gradient over [batch, tokens] with its gradient
        split by tokens splits the input and the statistics by tokens too)."""
        for index, split in enumerate(splits):
            reduced = dims.reduced(index)
            on = [d for d in reduced if split is not None and d in split.dims()]
            if on:
                return reduced.index(on[0])
        return 0

    def _summed_period(self, splits: list[Split | None], dims: DimMap) -> Period:
        """The period an operand's summed dim is split over every rank with (the heads
        of a tiled repeat, `_paired_period`; the blocks of a fused q/k/v projection,
        each split over every rank: no rank's sum counts a block another holds too),
        which the other operands' take too; 0: none."""
        for index, split in enumerate(splits):
            for dim, parts, stride, period in split.entries if split is not None else ():
                if dim in dims.reduced(index) and (parts, stride) == (self.tp, 1) and (
                        isinstance(period, int) or all(block_parts(b, parts) == parts for b in period)):
                    return period
        return 0

    def _plan_group_partial(
        self, op: Operation, splits: list[Split | None], dims: DimMap
    ) -> tuple[list[Layout], Layout] | None:
        """A sum along a dim split over a factor of the ranks, not over all of them (a
        KV head's gradient summed over its query heads, split within the rank pair
        that holds the head): a partial sum over that factor's groups, the other split
        dims kept (`GroupPartial`); every operand split over the factor along its
        reduced dim, with its period (the copies of a tiled repeat's KV head a rank
        holds: every copy is in one part). None when the summed split is over every rank (`_plan_partial`'s
        partial sum over all) or the op is not so; not for a 16-bit sum of a
        mixed-precision step (its partial sums are widened to f32, `_widen_partial`); only
        in a training step (inference keeps `_check_rows_split`'s diagnostic)."""
        factors: set[tuple[int, int]] = set()
        pieces: list[tuple[int, int, int, Period]] = []
        for split, dests in zip(splits, dims.operands):
            for dim, parts, stride, period in split.entries if split else ():
                dest = dests[dim]
                if dest is Dim.REDUCED and isinstance(period, int):  # a period: each index in one part
                    factors.add((parts, stride))
                elif isinstance(dest, int):
                    pieces.append((dest, parts, stride, period))
                else:
                    return None
        if len(factors) != 1 or self.data_parallel or not self.training or self._widened(op.results[0]):
            return None
        ((parts, stride),) = factors
        result = self._union(pieces)
        if parts == self.tp or isinstance(result, bool) or not disjoint(result, parts, stride, self.tp):
            return None
        wants: list[Layout] = []
        for index, (split, value, dests) in enumerate(zip(splits, op.operands, dims.operands)):
            reduced = dims.reduced(index)
            on = [d for d in reduced if split is not None and d in split.dims()]
            if len(on) > 1 or (not on and len(reduced) != 1):
                return None
            kept = self._restrict(result, value, dests)
            period = split.period(on[0]) if split is not None and on else 0
            wants.append(Split.of([*(kept.entries if kept else ()), ((on or reduced)[0], parts, stride, period)]))
        return wants, GroupPartial(result, parts, stride)

    def _widened(self, value: SSAValue) -> bool:
        """Whether a partial sum `value` would be widened to f32 (`_widen_partial`: a
        16-bit float in a mixed-precision training step)."""
        element = value.type.element_type  # type: ignore[attr-defined]
        return isinstance(element, BFloat16Type | Float16Type) and self._master_weights()

    def _partition_group_linear(self, op: Operation) -> bool:
        """An op linear in operands that are one same partial sum over groups of ranks
        (`GroupPartial`, `linear_in`), its other operands equal over those groups:
        planned as if the partial ones were whole (held as their split), the result
        the same partial sum, or one over more ranks when the op also sums along a
        dim split over another factor (the input gradient through the KV weights, by
        rows a KV head a rank pair: a partial sum over every rank). False (nothing
        done) when the op is not so: its partial operands are all-reduced first."""
        layouts = [self.layout_of(v) for v in op.operands]
        partial = [i for i, layout in enumerate(layouts) if isinstance(layout, GroupPartial)]
        if not partial or len(op.results) != 1:
            return False
        group = layouts[partial[0]]
        assert isinstance(group, GroupPartial)
        if any(layouts[i] != group for i in partial) or not linear_in(op, partial):
            return False
        plan = self._plan_as_whole(op)
        if plan is None or any(plan[0][i] != group.split for i in partial):
            return False
        wants, result = plan
        others = [i for i in range(len(op.operands)) if i not in partial]
        if not all(isinstance(want := wants[i], Split | None) and disjoint(want, group.parts, group.stride, self.tp)
                   and self.feasible(op.operands[i], want) for i in others):
            return False
        layout = self._with_factor(result, group)
        if layout is None:
            return False
        for i in others:
            op.operands[i] = self.materialize(op.operands[i], wants[i], op)
        if isinstance(op, SliceOp):
            self._rank_offsets(op)
        if isinstance(op, ConvOp | ConvGradOp):
            _rank_groups(op, self.full_shape(op.input)[1])
        self._set_result(op, layout)
        return True

    def _plan_as_whole(self, op: Operation) -> tuple[list[Layout], Layout] | None:
        """`_plan` of `op` with each operand that is a partial sum over groups of ranks
        taken as its sum, held as its split (what one all-reduce over its groups
        makes of it, `materialize`); None where a rule refuses them so."""
        saved = {v: layout for v in op.operands if isinstance(layout := self.layout_of(v), GroupPartial)}
        if not saved:
            return self._plan(op)
        for value, layout in saved.items():
            self.layout[value] = layout.split
        try:
            return self._plan(op)
        except LocatedError:
            return None
        finally:
            self.layout.update(saved)

    def _with_factor(self, result: Layout, group: GroupPartial) -> Layout:
        """The layout of an op's result planned as `result` when its operands were
        whole, given that they are partial sums over `group`'s factor (None: none)."""
        if isinstance(result, GroupPartial):
            factor = combined((group.parts, group.stride), (result.parts, result.stride))
            if factor is None:
                return None
            if factor[0] == self.tp:
                return PARTIAL if result.split is None else None
            return GroupPartial(result.split, *factor) if disjoint(result.split, *factor, self.tp) else None
        if (result is None or isinstance(result, Split)) and disjoint(result, group.parts, group.stride, self.tp):
            return GroupPartial(result, group.parts, group.stride)
        return None

    def _widen(self, op: BroadcastOp, moved: Split) -> Split | None:
        """A dim broadcast from 1 beside a dim split over part of the ranks, split over
        the rest, whose ranks hold the same input: free, and what lets repeated KV heads
        meet query heads split every way. Right after a dim split over a major factor
        (stride s > 1, heads interleaved by `repeat_interleave`): over the minor s ranks,
        in consecutive blocks. Right before a dim split over a minor factor (heads tiled
        by `k.repeat(1, g, 1, 1)`: query head h reads KV head h % kv): over the major
        factor above it, with that factor as period, so that a reshape merging the two
        dims gives the heads a rank's KV head serves (`(0, tp, 1, tp)`)."""
        source, result = self.full_shape(op.input), _shape(op.result)
        offset = len(result) - len(source)
        entries = list(moved.entries)

        def broadcast(new: int) -> bool:
            return 0 <= new < len(result) and (new < offset or source[new - offset] == 1) and new not in moved.dims()

        for dim, parts, stride, period in moved.entries:
            wider: tuple[int, int, int, int] | None = None
            if stride > 1 and broadcast(dim + 1) and result[dim + 1] % stride == 0:
                wider = (dim + 1, stride, 1, 0)
            rest = self.tp // (stride * parts)
            if wider is None and rest > 1 and period in (0, result[dim]) and broadcast(dim - 1) \
                    and result[dim - 1] % rest == 0:
                wider = (dim - 1, rest, stride * parts, 0 if result[dim - 1] == rest else rest)
            if wider is not None and (split := Split.of([*entries, wider])) is not None and split.valid(self.tp):
                entries.append(wider)
        return Split.of(entries)

    def _restrict(self, split: Split | None, value: SSAValue, dests: Sequence[Dest]) -> Split | None:
        """The part of a result split an operand must have: each result dim at the
        operand dim that becomes it (by the dim map), unless the operand broadcasts there."""
        if split is None:
            return None
        shape = self.full_shape(value)

        def operand_dim(dim: int) -> int | None:
            return next((d for d, dest in enumerate(dests) if dest == dim and shape[d] != 1), None)

        return split.moved(operand_dim)

    def _union(self, pieces: Iterable[tuple[int, int, int, Period]]) -> Split | None | bool:
        """One split of these result entries; False when they conflict."""
        by_dim: dict[int, tuple[int, int, int]] = {}
        for dim, *rest in pieces:
            if by_dim.setdefault(dim, tuple(rest)) != tuple(rest):  # type: ignore[arg-type]
                return False
        split = Split.of((dim, *rest) for dim, rest in by_dim.items())
        return False if split is not None and not split.valid(self.tp) else split

    def _check_rows_split(self, op: MatmulOp | GroupedMatmulOp, left: Split | None, k_lhs: int,
                          lhs: tuple[int, ...]) -> None:
        """A weight split by rows needs its input split over every rank (a partial
        sum of a factor of the ranks would be counted twice)."""
        weight = self._weight_behind(op.rhs)
        if not self.strict or layer_of(op) is None or weight is None or left is None:
            return
        if left.on(k_lhs) != (self.tp, 1) or len(left.entries) != 1 or isinstance(left.period(k_lhs), tuple):
            raise LocatedError(op, f"tp={self.tp} does not divide the heads: the {lhs[k_lhs]} input rows of weight "
                                   f"@{self._weight_name(weight)} arrive with {left.describe()}, not split "
                                   f"{self.tp} ways")

    def _column_split(self, op: MatmulOp | GroupedMatmulOp, rhs: tuple[int, ...], n_rhs: int, rank: int):
        """A linear layer on a replicated input: split its weight by output columns
        (replicated when it has fewer than the ranks: a one-column gate), over
        every rank, or over the largest factor of the ranks whose reshapes into
        heads keep it (a KV head, replicated over the rest: GQA with more ranks than KV heads)."""
        if self.data_parallel or not self._from_weights(op.rhs) or rhs[n_rhs] < self.tp:
            return [None, None], None  # data parallel, or fewer output columns than ranks (a gate): replicated
        if layer_of(op) is not None and self._columns_met(op.result, rank - 1) and self._whole_is_cheaper(
                op, [op.rhs], ("all_reduce", tensor_bytes(op.result) // self.tp)):
            return [None, None], None  # a layer's router: its few columns meet at once (softmax, top-k)
        if rhs[n_rhs] % self.tp:
            if self.strict and layer_of(op) is not None and self._is_weight(_uncast(op.rhs)):
                name = self._weight_name(_uncast(op.rhs))
                raise LocatedError(op, f"tp={self.tp} does not divide the {rhs[n_rhs]} output columns of "
                                       f"weight @{name} (heads or hidden size)")
            return [None, None], None
        repeated = self._repeated_blocks(op.result, rhs[n_rhs], rank)
        if repeated is not None:  # q/k/v fused per KV group, more ranks than groups
            return [None, Split(((n_rhs, *repeated),))], Split(((rank - 1, *repeated),))
        period = self._block_size(op.result, rhs[n_rhs])
        parts = self._column_parts(op.result, rhs[n_rhs], rank, period)
        if isinstance(period, tuple) and parts < self.tp:
            mixed = self._blocks_by_heads(op.result, period, rank)
            if mixed is not None:  # grouped- or multi-query q/k/v: q split by heads, k and v by their fewer heads
                return [None, Split(((n_rhs, self.tp, 1, mixed),))], Split(((rank - 1, self.tp, 1, mixed),))
            period = 0  # unequal blocks over fewer than every rank (more ranks than KV heads): in one piece
            parts = self._column_parts(op.result, rhs[n_rhs], rank, period)
        if parts == 1:
            return [None, None], None  # one head (multi-query K/V): replicated on every rank
        stride = self._replica_stride(op.result, Split(((rank - 1, parts, self.tp // parts, period),)))
        if not period:
            parts, stride, period = (self._chunked_columns(op.result, Split(((rank - 1, parts, stride, 0),)))
                                     or (parts, stride, period))
            if parts == 1:
                return [None, None], None  # every head on every rank, up to the exchange point
        if not period and not self.pairing:
            period = self._paired_period(op, Split(((rank - 1, parts, stride, 0),)))
        return [None, Split(((n_rhs, parts, stride, period),))], Split(((rank - 1, parts, stride, period),))

    def _chunked_columns(self, value: SSAValue, columns: Split) -> tuple[int, int, int] | None:
        """(parts, stride, period) of a projection's column split that the slices
        downstream of it keep, when its consecutive split is cut by one: heads chunked
        after attention (DiffLlama's `chunk(2, dim=heads)` of the attention output, head
        h paired with h + heads / 2; its values' KV heads chunked alike). The most parts
        first, then the longest period: a rank holds its share of every chunk, so each
        chunk is split by whole heads and nothing is gathered. Fewer parts than
        `columns`' only where the split widens back to as many ranks on its way
        (`_ranks_kept`: KV heads repeated to their query heads, each KV head held by
        a group of ranks). None when no slice cuts the consecutive split, or no
        period keeps every slice (heads a chunk that the ranks do not divide); None
        too for columns no reshape views as heads (the chunks are of heads).

        The other candidate: the consecutive split kept (None), the heads exchanged where
        the chunks cut them after attention (`_exchange_point`: the output all-gathered,
        each rank keeping its part of every chunk), taken where no head-pair split keeps
        the chunks or where it costs less than the head-pair split's extra reads of the KV
        projections and their caches (`_exchange_pays`, the target's collective and HBM
        figures); priced once a point, by its first projection, which the others follow."""
        head = self._head_size(value)
        if head is None or self._ranks_kept(value, columns):
            return None  # columns not viewed as heads, or no slice cuts them (or only an exchange point)
        pairs = self._head_pairs(value, columns, head)
        if self.pricing:
            return pairs  # no head pairs: gathered where cut, and what follows whole (as the exchange gathers)
        matmuls: list[Operation] = []
        point = self._exchange_point(value, columns, matmuls)
        if point is None:
            return pairs
        cut = point[0].owner
        assert isinstance(cut, Operation)
        if cut not in self.priced:  # once a point, by its first projection: the others not partitioned yet
            self.priced[cut] = pairs is None or self._exchange_pays(point, matmuls)
        if self.priced[cut]:
            self.exchanges[cut] = point[1:]
            return None  # kept consecutive: the heads are exchanged where the chunks cut them
        return pairs

    def _head_pairs(self, value: SSAValue, columns: Split, head: int) -> tuple[int, int, int] | None:
        """(parts, stride, period) of `_chunked_columns`' split: the most parts, then the
        longest period, that every slice keeps. With an exchange point downstream, also the
        replicas' other strides (KV heads chunked, tiled and repeated to consecutive query
        heads: rank r holds KV heads (r // stride) % parts of each chunk), whichever reaches
        the exchange point as the query heads do (`_ranks_kept`); or every head whole."""
        ((dim, parts, stride, _),) = columns.entries
        length = self.full_shape(value)[dim]
        for fewer in (p for p in range(parts, 1, -1) if parts % p == 0):
            spreads = [stride] if fewer == parts else [self.tp // fewer] + (
                [s for s in range(1, self.tp // fewer) if self.tp % (fewer * s) == 0] if self.exchanges else [])
            for spread, period in ((s, p) for s in spreads for p in range(length - fewer * head, 0, -fewer * head)):
                trial = Split(((dim, fewer, spread, period),))
                if length % period == 0 and trial.valid(self.tp) and self._reshapes_keep(value, trial) \
                        and self._ranks_kept(value, trial) >= parts:
                    return fewer, spread, period
        return (1, self.tp, 0) if self._reaches_exchange(value) else None  # whole: every head for every rank

    def _reaches_exchange(self, value: SSAValue, depth: int = CHUNK_LOOK_AHEAD,
                          seen: set[SSAValue] | None = None) -> bool:
        """Whether `value` reaches an exchange point (`exchanges`) through its users, `depth` deep."""
        seen = set() if seen is None else seen
        if self._exchange_at(value) is not None:
            return True
        if value in seen or not depth:
            return False
        seen.add(value)
        return any(self._reaches_exchange(result, depth - 1, seen) for use in value.uses
                   for result in use.operation.results)

    def _ranks_kept(self, value: SSAValue, split: Split, depth: int = CHUNK_LOOK_AHEAD,
                    seen: set[tuple[SSAValue, Split]] | None = None) -> int:
        """The most ranks `value` held as `split`, or a value it reaches through the ops
        that carry the split (`_carried`: layout ops, maps, reductions and matmuls along
        dims they keep, broadcasts that widen it; `depth` deep), is split over; 0 when a
        slice on the way cuts a split dim across parts (`_slice_split`)."""
        seen = set() if seen is None else seen
        widest = int(np.prod([parts for _, parts, _, _ in split.entries]))
        if (point := self._exchange_at(value)) is not None:
            return widest if split == point[0] else 0  # exchanged there: it must come as the query heads do
        if (value, split) in seen or not depth:
            return widest
        seen.add((value, split))
        for use in value.uses:
            user = use.operation
            try:
                carried = self._carried_through(user, use.index, split)
            except _Unsplittable:
                return 0
            if carried is not None:
                reached = self._ranks_kept(user.results[0], carried, depth - 1, seen)
                if not reached:
                    return 0
                widest = max(widest, reached)
        return widest

    def _carried_through(self, user: Operation, index: int, split: Split) -> Split | None:
        """The split of `user`'s result when its operand `index` is held as `split`
        (`_carried`; a slice's by `_slice_split`, raising `_Unsplittable` where it cuts)."""
        if isinstance(user, SliceOp):
            return _slice_split(user, split, self.full_shape(user.input))
        return self._carried(user, index, split)

    def _exchange_point(self, value: SSAValue, split: Split, matmuls: list[Operation], depth: int = CHUNK_LOOK_AHEAD,
                        seen: set[tuple[SSAValue, Split]] | None = None) -> tuple[SSAValue, Split, Split] | None:
        """(value, its split, the periodic split its slices keep) where a projection's
        consecutive `split`, carried as `_ranks_kept` carries it, is first cut by a slice
        after an attention matmul (appended to `matmuls` on the way): the output heads
        chunked and subtracted (DiffLlama's head h minus head h + heads / 2). There the
        heads can be exchanged (all-gathered, each rank keeping its part of every chunk)
        instead of splitting the projections in head pairs. None when nothing cuts it
        there or no period keeps the slices."""
        seen = set() if seen is None else seen
        if (value, split) in seen or not depth:
            return None
        seen.add((value, split))
        for use in value.uses:
            user = use.operation
            try:
                carried = self._carried_through(user, use.index, split)
            except _Unsplittable:
                periodic = self._kept_period(value, split) if matmuls else None
                return None if periodic is None else (value, split, periodic)
            if carried is None:
                continue
            crossed = [*matmuls, user] if isinstance(user, MatmulOp) else matmuls
            found = self._exchange_point(user.results[0], carried, crossed, depth - 1, seen)
            if found is not None:
                matmuls[:] = crossed
                return found
        return None

    def _kept_period(self, value: SSAValue, split: Split) -> Split | None:
        """The consecutive one-dim `split` of `value` with the longest period that every
        slice of `value` keeps (each chunk split by whole parts alike); None when none does."""
        if len(split.entries) != 1 or split.entries[0][3]:
            return None
        ((dim, parts, stride, _),) = split.entries
        length = self.full_shape(value)[dim]
        for period in range(length - parts, 0, -parts):
            trial = Split(((dim, parts, stride, period),))
            if length % period == 0 and trial.valid(self.tp) and all(
                    self._slice_keeps_split(use.operation, trial) for use in value.uses):
                return trial
        return None

    def _slice_keeps_split(self, op: Operation, split: Split) -> bool:
        """Whether `op` is not a slice, or a slice that `split` of its input keeps."""
        if not isinstance(op, SliceOp):
            return True
        try:
            _slice_split(op, split, self.full_shape(op.input))
        except _Unsplittable:
            return False
        return True

    def _exchange_pays(self, point: tuple[SSAValue, Split, Split], matmuls: Sequence[Operation]) -> bool:
        """Whether exchanging the heads at `point` (an all-gather of the value held split,
        each rank keeping its periodic part) is the better split of the projections behind
        the attention matmuls on the way (q, k and its cache, v and its). Not where the
        exchange leaves one of them cut (gathered); yes where the head-pair split does and
        the exchange does not; else where the exchange's exposed time costs less than the
        head-pair split's extra HBM reads: a projection split over fewer parts in head
        pairs than with the exchange reads (1 / fewer - 1 / more) of its weight and cache
        more on every rank. The exchange's time (the target's collective figures) is
        exposed past what the weights read after it (o_proj's) take to load: the cost
        model's schedule loads them while the kernel waits for the exchange (`_weights_after`)."""
        chunked, split, _ = point
        priced = [(read, self._priced_parts(projection, {}),
                   self._priced_parts(projection, {chunked.owner: point[1:]}))  # type: ignore[dict-item]
                  for projection, read in self._attention_projections(matmuls)]
        if not priced or not all(kept for _, _, (_, kept) in priced):
            return False
        if not all(kept for _, (_, kept), _ in priced):
            return True
        target = module_target(self.module)
        parts = int(np.prod([p for _, p, _, _ in split.entries]))
        exchange = collective_seconds("all_gather", self._full_bytes(chunked) // parts, parts, target)[0]
        hidden = self._weights_after(chunked) / self.tp / target.sustained_bandwidth("hbm")
        extra = sum(read * (1 / pairs - 1 / exchanged) for read, (pairs, _), (exchanged, _) in priced)
        return extra / target.sustained_bandwidth("hbm") > max(0.0, exchange - hidden)

    def _weights_after(self, value: SSAValue, depth: int = CHUNK_LOOK_AHEAD, seen: set[SSAValue] | None = None) -> int:
        """The bytes (whole) of the weights of the linear layers `value` reaches through
        its users (o_proj after the attention output's heads), `depth` deep: what the
        kernels reading an exchanged value load while they wait for it (the cost model's
        overlap schedule, compiler/model/overlap_schedule.py), a rank its tp-th share."""
        seen = set() if seen is None else seen
        if value in seen or not depth:
            return 0
        seen.add(value)
        total = 0
        for use in value.uses:
            user = use.operation
            if isinstance(user, MatmulOp):
                weight = self._weight_behind(user.rhs) if self._from_weights(user.rhs) else None
                total += self._full_bytes(weight) if weight is not None else 0
                continue
            total += sum(self._weights_after(result, depth - 1, seen) for result in user.results)
        return total

    def _priced_parts(self, projection: MatmulOp, exchanges: dict[Operation, tuple[Split, Split]]
                      ) -> tuple[int, bool]:
        """(parts, kept): over how many parts `projection`'s columns split given these
        `exchanges` (`_column_split`, deciding nothing; 1: whole), and whether no slice
        cuts that split on its way (`_ranks_kept`; (0, False) when it cannot split)."""
        saved, self.exchanges, self.pricing = self.exchanges, exchanges, "exchange" if exchanges else "pairs"
        try:
            _, columns = self._column_split(projection, self.full_shape(projection.rhs), projection.rhs_n_dim,
                                            len(_shape(projection.result)))
            if columns is None:
                return 1, True
            return int(np.prod([p for _, p, _, _ in columns.entries])), bool(self._ranks_kept(projection.result,
                                                                                               columns))
        except LocatedError:
            return 0, False
        finally:
            self.exchanges, self.pricing = saved, ""

    def _attention_projections(self, matmuls: Iterable[Operation]) -> list[tuple[MatmulOp, int]]:
        """The projections behind the operands of `matmuls` (through any ops but other
        matmuls), each with the bytes it and the inputs met on the way (its cache: a
        layer's window of a stacked one) hold whole."""
        found: dict[MatmulOp, int] = {}
        for matmul in matmuls:
            for operand in matmul.operands:
                projections: list[MatmulOp] = []
                inputs = self._inputs_behind(operand, projections, CHUNK_LOOK_AHEAD, set())
                for projection in projections:
                    weight = self._weight_behind(projection.rhs)
                    found.setdefault(projection, inputs + (self._full_bytes(weight) if weight is not None else 0))
        return list(found.items())

    def _inputs_behind(self, value: SSAValue, projections: list[MatmulOp], depth: int, seen: set[SSAValue]) -> int:
        """The bytes of the inputs `value` is computed from, up to the projections (linear
        layers of weights, appended to `projections`) and other matmuls; `depth` deep."""
        if value in seen or not depth:
            return 0
        seen.add(value)
        owner = value.owner
        if isinstance(value, BlockArgument) or (isinstance(owner, SliceOp) and isinstance(owner.input, BlockArgument)):
            return self._full_bytes(value)  # a cache, or a layer's window of a stacked one
        if isinstance(owner, MatmulOp):
            if self._from_weights(owner.rhs) and owner not in projections:
                projections.append(owner)
            return 0
        assert isinstance(owner, Operation)
        return sum(self._inputs_behind(v, projections, depth - 1, seen) for v in owner.operands
                   if isinstance(v.type, TensorType))

    def _full_bytes(self, value: SSAValue) -> int:
        """The bytes of `value` whole (every rank's parts)."""
        return tensor_bytes(value) * num_elements(self.full_shape(value)) // max(1, num_elements(_shape(value)))

    def _replica_stride(self, value: SSAValue, columns: Split) -> int:
        """The stride of a projection's column split over fewer parts than ranks (its
        heads replicated over the rest): the major factor (rank r holds KV head
        r // (tp // kv), what heads interleaved by `repeat_interleave` read), or the
        minor one (KV head r % kv) when only that widens to more ranks on its way to
        the matmuls (`_widest`): heads tiled by `k.repeat(1, g, 1, 1)`, read by query
        head h as KV head h % kv, which the tiling spreads over the ranks above it; or
        when only that reaches an exchange point as the query heads do (`exchanges`)."""
        ((dim, parts, stride, period),) = columns.entries
        if stride == 1:
            return stride
        minor = Split(((dim, parts, 1, period),))
        if self.exchanges and not self._ranks_kept(value, columns) and self._ranks_kept(value, minor):
            return 1  # only the minor factor reaches an exchange point as the query heads do
        return 1 if self._widest(value, minor) > self._widest(value, columns) else stride

    def _widest(self, value: SSAValue, split: Split, depth: int = LOOK_AHEAD) -> int:
        """The most ranks `value` held as `split` is split over, or a value it reaches
        through ops that carry the split (`_carried`, up to the matmuls), `depth` deep."""
        widest = int(np.prod([parts for _, parts, _, _ in split.entries]))
        for use in value.uses if depth else ():
            if not isinstance(use.operation, MatmulOp) and (carried := self._carried(
                    use.operation, use.index, split)) is not None:
                widest = max(widest, self._widest(use.operation.results[0], carried, depth - 1))
        return widest

    def _paired_period(self, op: MatmulOp | GroupedMatmulOp, columns: Split) -> int:
        """The period of a projection's column split that the operand it meets in a
        matmul arrives with (0: consecutive blocks, when those already meet or no
        period does). Heads repeated by tiling (`k.repeat(1, g, 1, 1)`, `cat([k] * g)`:
        query head h reads KV head h % kv_heads) arrive split with a period, so the
        query heads take the same one: a rank holds the heads its KV heads serve."""
        ((dim, parts, stride, _),) = columns.entries
        length = self.full_shape(op.result)[dim]
        for matmul, index, mine in self._reached_matmuls(op.result, columns):
            theirs = self._partner_arrival(matmul, 1 - index, op)
            if theirs is None or self._meets(matmul, index, mine, theirs):
                continue
            for period in range(parts, length, parts):
                if length % period == 0:
                    trial = Split(((dim, parts, stride, period),))
                    if any(self._meets(m, i, s, theirs) for m, i, s in self._reached_matmuls(op.result, trial)
                           if m is matmul and i == index):
                        return period
        return 0

    def _partner_arrival(self, matmul: Operation, index: int, mine: Operation) -> Split | None:
        """The split operand `index` of `matmul` arrives with from the projection it is
        a layout of (one it is already split as, or the split that projection takes)."""
        value = matmul.operands[index]
        while (value not in self.layout and isinstance(value.owner, (*_CHAIN_OPS, MapOp, ConcatOp))
               and value.owner.operands):  # a map of no operand (a constant, an iota) arrives from nothing
            value = value.owner.operands[0]
        if value in self.layout:
            return self._carried_to(value, self.split_of(value), matmul, index)
        source = value.owner
        if not isinstance(source, MatmulOp) or source is mine or not self._is_weight(_uncast(source.rhs)):
            return None
        self.pairing = True
        try:
            _, split = self._column_split(source, self.full_shape(source.rhs), source.rhs_n_dim,
                                          len(_shape(source.result)))
        except LocatedError:
            return None
        finally:
            self.pairing = False
        return self._carried_to(value, split, matmul, index) if isinstance(split, Split) else None

    def _carried_to(self, value: SSAValue, split: Split | None, matmul: Operation, index: int) -> Split | None:
        """The split `value` held as `split` reaches operand `index` of `matmul` with."""
        if split is None:
            return None
        return next((s for m, i, s in self._reached_matmuls(value, split) if m is matmul and i == index), None)

    def _reached_matmuls(self, value: SSAValue, split: Split, depth: int = LOOK_AHEAD
                         ) -> Iterable[tuple[Operation, int, Split]]:
        """The matmuls `value` held as `split` reaches through ops that carry the split
        (by their dim maps: reshapes, transposes, broadcasts, maps, slices), each with
        the operand index and the split it arrives with there."""
        for use in value.uses:
            user = use.operation
            if isinstance(user, MatmulOp):
                yield user, use.index, split
                continue
            carried = self._carried(user, use.index, split) if depth else None
            if carried is not None:
                yield from self._reached_matmuls(user.results[0], carried, depth - 1)

    def _carried(self, op: Operation, index: int, split: Split) -> Split | None:
        """The split of `op`'s result when its operand `index` is split so and it
        follows that operand (None: it does not carry it)."""
        if not isinstance(op, OpFacts) or len(op.results) != 1 or not isinstance(op.results[0].type, TensorType):
            return None
        source, result = self.full_shape(op.operands[index]), self.full_shape(op.results[0])
        if isinstance(op, ConcatOp) and op.dim.value.data in split.dims():
            return self._joined_split(op, [split] * len(op.operands))  # the other blocks split alike
        if isinstance(op, ReshapeOp):
            try:
                return reshape_split(source, result, split)
            except _Unsplittable:
                return None
        shapes = [self.full_shape(v) if isinstance(v.type, TensorType) else () for v in op.operands]
        dests = op.dims_for(shapes, [result]).operands[index]
        if any(not isinstance(dests[dim], int) for dim in split.dims()):
            return None
        moved = split.moved(lambda dim: dests[dim])  # type: ignore[arg-type, return-value]
        return self._widen(op, moved) if isinstance(op, BroadcastOp) and moved is not None else moved

    def _meets(self, matmul: Operation, index: int, mine: Split, theirs: Split) -> bool:
        """Whether operands `index` and `1 - index` of `matmul`, split as `mine` and
        `theirs`, are split alike on the dims they share (its batch dims)."""
        assert isinstance(matmul, OpFacts)
        shapes = [self.full_shape(v) for v in matmul.operands]
        dims = matmul.dims_for(shapes, [self.full_shape(matmul.results[0])]).operands

        def landed(split: Split, dests: Sequence[Dest]) -> set[tuple[Dest, int, int, Period]]:
            return {(dests[dim], parts, stride, period) for dim, parts, stride, period in split.entries}

        return landed(mine, dims[index]) == landed(theirs, dims[1 - index])

    def _columns_met(self, value: SSAValue, dim: int, depth: int = LOOK_AHEAD) -> bool:
        """Whether a user of `value` (or of a map of its shape, `depth` deep) needs its
        `dim` whole: reduces it (a softmax's max and sum, a norm) or orders along it
        (top-k), which a split of that dim pays a collective for."""
        for use in value.uses:
            user = use.operation
            facts = user if isinstance(user, OpFacts) else None
            if facts is None or len(user.results) != 1 or isinstance(user, _NOT_MEETING):
                continue
            shapes = [self.full_shape(v) if isinstance(v.type, TensorType) else () for v in user.operands]
            dest = facts.dims_for(shapes, [_shape(user.results[0])]).operands[use.index][dim]
            if not isinstance(dest, int):
                return True
            if isinstance(user, MapOp) and depth and _shape(user.results[0]) == self.full_shape(value) \
                    and self._columns_met(user.results[0], dest, depth - 1):
                return True
        return False

    def _whole_is_cheaper(self, op: Operation, operands: Sequence[SSAValue], collective: tuple[str, int]) -> bool:
        """Whether every rank running `op` whole costs less time than the `collective`
        (kind, bytes each rank puts in) a split of it pays, by the target's figures
        (`_whole_seconds`). A layer's router against the all-reduce of its result's
        share where its split columns meet (`_column_split`); a whole operand cut
        beside a split weight against the product's all-reduce (`_cuts_beside_weight`)."""
        kind, size = collective
        target = module_target(self.module)
        return self._whole_seconds(op, operands) < collective_seconds(kind, size, self.tp, target)[0]

    def _whole_seconds(self, op: Operation, operands: Sequence[SSAValue]) -> float:
        """What every rank running `op` whole costs beyond its share: the rest of its
        FLOPs at peak, the HBM time of reading `operands` whole rather than a rank's
        part, and the all-gather of each one held split."""
        target = module_target(self.module)
        rest = 1 - 1 / self.tp
        whole = peak_seconds(op, target) * rest
        for value in operands:
            part = tensor_bytes(value)
            whole += part * num_elements(self.full_shape(value)) // num_elements(_shape(value)) * rest / \
                target.sustained_bandwidth("hbm")
            if (split := self.split_of(value)) is not None:
                parts = int(np.prod([parts for _, parts, _, _ in split.entries]))
                whole += collective_seconds("all_gather", part, parts, target)[0]
        return whole

    def _conv_channel_split(self, op: ConvOp) -> tuple[list[Layout], Layout]:
        """A convolution of a weight on a replicated input: split its output channels
        (the weight's dim 0, a transposed one's dim 1; the result's channel dim 1, the
        bias's one dim) over every rank, as a linear layer's columns; each rank's
        convolution keeps its slice of the bias (torch's kernel with it, no
        collective). The next convolution reads them split, contracts its input
        channels per rank and gives a partial sum (`_plan_partial`, the row split).
        A grouped one splits by whole groups where that pays (`_split_groups`).
        Replicated when data parallel, or the channels do not divide."""
        outputs = op.weight_channel_dims()[0]
        bias: list[Layout] = [Split.whole(0, self.tp)] if op.bias is not None else []
        whole: tuple[list[Layout], Layout] = ([None] * len(op.operands), None)
        if self.data_parallel or not self._is_weight(_uncast(op.weight)):
            return whole
        if op.groups.value.data != 1:
            return self._split_groups(op) or whole
        if self.full_shape(op.weight)[outputs] % self.tp:
            return whole
        return [None, Split.whole(outputs, self.tp), *bias], Split.whole(1, self.tp)

    def _split_groups(self, op: ConvOp) -> tuple[list[Layout], Layout] | None:
        """A grouped convolution on a replicated input split by whole groups
        (`grouped_convs.whole_groups`: each rank cuts its input channels, no
        collective) where that pays: the collectives its split channels cost
        (`_groups_meeting` in its phase; in a training step, when the input is an
        activation, also the all-gather of the input's gradient, which the
        backward's transposed convolution makes split while what made the input
        needs it whole) must cost less than running it whole on every rank
        (`_whole_seconds`; its input and weight gradients' convolutions as many
        FLOPs again each); None: whole. A depthwise one's 2 x kernel FLOPs an
        output cost less than moving its input or output over the links, so it
        stays whole wherever those meet at their size (a ConvNeXt block's layer
        norm over channels, a residual add with the replicated stream, the next
        dense convolution's sum, its input's gradient) and splits where they do
        not: its result reaches the step's result split, or meets only as a far
        smaller value (pooled into a head), its input needing no gradient."""
        split = whole_groups(op, self.full_shape(op.weight), self.tp)
        if split is None:
            return None
        meetings = [m for m in [self._groups_meeting(op.result, 1, phase_of(op))] if m is not None]
        convolutions = 1
        if self.training and phase_of(op) == Phase.FORWARD:
            convolutions += 1  # the weight gradient's
            if not isinstance(_uncast(op.input), BlockArgument):  # an activation (a cast input's: none)
                convolutions += 1  # the input gradient's, made split: gathered for what made the input
                meetings.append(("all_gather", tensor_bytes(op.input) // self.tp))
        target = module_target(self.module)
        met = sum(collective_seconds(kind, size, self.tp, target)[0] for kind, size in meetings)
        if met >= convolutions * self._whole_seconds(op, [op.input, op.weight]):
            return None
        wants, result = split
        return list[Layout](wants), result

    def _groups_meeting(self, value: SSAValue, dim: int, phase: Phase | None, depth: int = LOOK_AHEAD
                        ) -> tuple[str, int] | None:
        """The costliest collective (kind, bytes a rank puts in) that `value` split
        along `dim` meets among its users in `phase`, followed through ops that
        carry the dim (maps, transposes, reshapes, reductions over other dims),
        `depth` deep: an op that reads the dim whole (a norm or reduction over it)
        or a map that adds a replicated activation to it, the all-gather of `value`;
        a contraction or sum over it (a dense convolution or matmul: its row split),
        the all-reduce of its result. None: it meets none (it reaches the step's result)."""
        found: list[tuple[str, int]] = []
        for use in value.uses:
            user = use.operation
            facts = user if isinstance(user, OpFacts) else None
            if facts is None or len(user.results) != 1 or phase_of(user) != phase:
                continue
            shapes = [self.full_shape(v) if isinstance(v.type, TensorType) else () for v in user.operands]
            dest = facts.dims_for(shapes, [_shape(user.results[0])]).operands[use.index][dim]
            if isinstance(user, MatmulOp | GroupedMatmulOp | ConvOp | ReduceOp) and dest is Dim.REDUCED:
                found.append(("all_reduce", tensor_bytes(user.results[0])))
            elif not isinstance(dest, int) or (isinstance(user, MapOp) and self._beside_replicated(user, value)):
                found.append(("all_gather", tensor_bytes(value) // self.tp))
            elif depth and isinstance(user, MapOp | TransposeOp | ReshapeOp | ReduceOp):
                found.extend(filter(None, [self._groups_meeting(user.results[0], dest, phase, depth - 1)]))
        return max(found, key=lambda meeting: meeting[1], default=None)

    def _beside_replicated(self, op: MapOp, value: SSAValue) -> bool:
        """Whether map `op` reads, beside `value`, a replicated activation of its shape
        (a residual stream): the split is gathered there rather than that cut."""
        shape = self.full_shape(value)
        return any(other is not value and self.split_of(other) is None and self.full_shape(other) == shape
                   and not self._from_weights(other) for other in op.operands)

    def _plan_grouped_conv(self, op: ConvOp, splits: list[Split | None], dims: DimMap
                           ) -> tuple[list[Layout], Layout] | None:
        """A grouped convolution with its channels split: each group's input channels
        make its own output channels and nothing else. Whole groups a rank (the input
        channels and the weight's output channels cut alike into consecutive blocks of
        groups): each rank convolves its own groups, its result split by output
        channels (and its bias with them), no collective. Every group's input
        channels split alike (their period one group's width, the weight along its per-group channels: a
        data-parallel weight gradient's batch inside each group): a partial sum
        (`_plan_partial`). Any other cut mixes groups: None (gathered). A
        transposed one (weight `[in, out / groups, ...]`, its dim 0 the input
        channels, group-major as a direct one's output channels) splits by whole
        groups alone: its input channels and its weight's dim 0 cut alike, its
        result and bias by its output channels."""
        image, weight = splits[:2]
        groups, width = op.groups.value.data, self.full_shape(op.input)[1] // op.groups.value.data
        along = _entry_on(image, 1)
        rows, columns = _entry_on(weight, 1), _entry_on(weight, 0)
        if op.transposed is not None and (rows is not None or (along is not None and along[3])):
            return None  # a group's output channels cut, or its input channels: not whole groups
        if (along is not None and along[3] == width) or (along is None and columns is None and rows is not None):
            held = image if along is not None else Split(((1, rows[1], rows[2], width),)) if rows else None
            plan = self._plan_partial(op, [held, weight], dims)
            cut = _entry_on(plan[0][0], 1) if plan is not None and isinstance(plan[0][0], Split) else None
            return plan if cut is not None and cut[3] == width else None  # else a cut across groups
        entry = along or columns
        if (entry is None or rows is not None or entry[3] or groups % entry[1]
                or (along is not None and columns is not None and along[1:] != columns[1:])
                or any(dim > 1 for dim in (image.dims() if image else ()))):
            return None
        channels = (1, entry[1], entry[2], 0)
        result = Split.of([*(e for e in (image.entries if image else ()) if e[0] == 0), channels])
        if result is None or not result.valid(self.tp):
            return None
        outputs = Split(((0, entry[1], entry[2], 0),))  # the weight's output channels, and the bias's
        return [result, outputs, *([outputs] if op.bias is not None else [])], result

    def _column_parts(self, value: SSAValue, columns: int, rank: int, period: Period) -> int:
        """The most parts (a factor of tp) the columns split into, per block, that
        every block and the reshapes of `value` keep; tp when none does."""
        sizes = tuple(map(block_size, period)) if isinstance(period, tuple) else (period or columns,)
        if self._one_head(value):
            return 1  # one head (multi-query k/v): no split of its features
        head = self._head_size(value) or 1
        fallback = 1 if head > 1 and min(sizes) // head < self.tp else self.tp
        return next((p for p in range(self.tp, 1, -1) if self.tp % p == 0 and all(b % (p * head) == 0 for b in sizes)
                     and self._reshapes_keep(value, Split(((rank - 1, p, self.tp // p, period),)))), fallback)

    def _blocks_by_heads(self, value: SSAValue, blocks: tuple[SplitBlock, ...], rank: int
                         ) -> tuple[SplitBlock, ...] | None:
        """The blocks of a fused projection each split into the most parts (a factor
        of tp) that divide it by whole heads, when some block splits over every rank
        and the slices and reshapes of `value` keep that: q split tp ways beside k
        and v split over their KV heads (a pair of ranks a KV head with more ranks
        than KV heads; a block of one head, multi-query k and v, held whole); else None."""
        head = self._head_size(value)
        if head is None:
            return None
        own = [max(p for p in range(1, self.tp + 1) if self.tp % p == 0 and block_size(b) % (p * head) == 0)
               for b in blocks]
        if max(own) != self.tp or len(set(own)) == 1:
            return None
        mixed = tuple(block_of(block_size(b), p, self.tp) for b, p in zip(blocks, own))
        return mixed if self._reshapes_keep(value, Split(((rank - 1, self.tp, 1, mixed),))) else None

    def _repeated_blocks(self, value: SSAValue, columns: int, rank: int) -> tuple[int, int, Period] | None:
        """(parts, stride, blocks) of a projection whose columns are runs of blocks
        (`_run_blocks`: q/k/v fused per KV group) with more ranks than runs: the runs
        over the largest factor of the ranks that divides them, each block over the
        most of the rest that keeps whole heads (`[512:2, -128, -128]`: 8 groups over
        16 ranks, a group's query heads over a pair of ranks, its k and v whole on
        both); None when the runs are as many as the ranks (a run a rank, in one
        piece), no block splits, or the reshapes and slices of `value` do not keep it."""
        blocks = self._run_blocks(value, columns)
        if blocks is None:
            return None
        runs = columns // sum(blocks)
        if runs >= self.tp:
            return None
        groups = max(g for g in range(1, runs + 1) if runs % g == 0 and self.tp % g == 0)
        inner, head = self.tp // groups, self._head_size(value) or 1
        if any(size % head for size in blocks):
            return None  # blocks that cut a head (rotate-half's halves): not q, k and v
        own = [max(p for p in range(1, inner + 1) if inner % p == 0 and size % (p * head) == 0) for size in blocks]
        parts = groups * max(own)
        split = Split(((rank - 1, parts, self.tp // parts, tuple(block_of(b, p, parts) for b, p in zip(blocks, own))),))
        if max(own) == 1 or not split.valid(self.tp) or not self._reshapes_keep(value, split):
            return None
        return split.entries[0][1:]

    def _run_blocks(self, value: SSAValue, columns: int) -> tuple[int, ...] | None:
        """The block sizes of one run, when a reshape of `value` cuts its columns into
        runs, a dim of its own each, that its slices cut into the same consecutive
        blocks (q/k/v fused per KV group: `[.., 6144] -> [.., 8, 6, 128]`, sliced
        [0:4], [4:5], [5:6] along the 6: blocks of 512, 128 and 128 columns in each run
        of 768), each block whole rows of the dims inside; None otherwise."""
        for use in value.uses:
            reshape = use.operation
            if not isinstance(reshape, ReshapeOp):
                continue
            source, result = self.full_shape(value), _shape(reshape.result)
            try:
                group = next(res for src, res in reshape_groups(source, result) if src == [len(source) - 1])
            except (ValueError, StopIteration):
                continue
            cuts = {min(cut for cut in _cuts(slice_op.operation, result) if cut[0] in group)
                    for slice_op in reshape.result.uses if isinstance(slice_op.operation, SliceOp)
                    and any(cut[0] in group for cut in _cuts(slice_op.operation, result))}
            dims = {dim for dim, _, _ in cuts}  # the outermost dim each slice cuts (rotary's halves inside a head)
            if len(dims) != 1 or dims & {group[0], group[-1]} or not dims <= set(group):
                continue
            (dim,) = dims
            blocks = _consecutive_blocks({(offset, size) for _, offset, size in cuts}, result[dim])
            row = _strides_within(result, group)[dim]
            if blocks is not None and len(blocks) > 1 and columns > result[dim] * row:
                return tuple(size * row for size in blocks)
        return None

    def _head_size(self, value: SSAValue, depth: int = LOOK_AHEAD) -> int | None:
        """The features of one head, when a reshape of `value` or of a slice of it (through
        maps of its shape) cuts its last dim into heads (`[.., 32] -> [.., 4, 8]`: 8): in a
        fused q/k/v projection every block splits by whole heads, one of a single head
        (multi-query k and v) not at all."""
        source = self.full_shape(value)
        for use in value.uses:
            user = use.operation
            if isinstance(user, ReshapeOp):
                inner = _shape(user.result)[-1]
                if inner < source[-1] and source[-1] % inner == 0:
                    return inner
            if depth and (isinstance(user, SliceOp) or (isinstance(user, MapOp) and _shape(user.results[0]) == source)
                          or (isinstance(user, ReshapeOp) and _shape(user.result)[-1] == source[-1])):
                found = self._head_size(user.results[0], depth - 1)
                if found:
                    return found
        return None

    def _one_head(self, value: SSAValue) -> bool:
        """Whether a reshape of `value` (through maps of its shape) makes all its
        columns one head's features (`_one_head_reshape`: the one KV head of
        multi-query attention), which no split of the columns may cut."""
        for use in value.uses:
            user = use.operation
            source = self.full_shape(value)
            if isinstance(user, ReshapeOp) and _one_head_reshape(source, _shape(user.result), self.heads):
                return True
            if isinstance(user, MapOp) and _shape(user.results[0]) == self.full_shape(value) and self._one_head(
                    user.results[0]):
                return True
        return False

    def _block_size(self, value: SSAValue, columns: int) -> Period:
        """How a fused projection's columns are sliced into blocks (q, k and v of
        one linear; gate and up), through maps and reshapes that keep the columns,
        when its slices take whole consecutive blocks that cover the columns: the
        period of equal blocks, the sizes of unequal ones (grouped-query q, k, v),
        or 0 when none is (then the columns split in one piece)."""
        spans = self._slice_spans(value, columns)
        if not spans:
            return 0
        blocks = _consecutive_blocks(spans, columns)
        if blocks is None or len(blocks) < 2 or self.tp > min(blocks):
            return 0
        return blocks[0] if len(set(blocks)) == 1 else tuple(blocks)

    def _slice_spans(self, value: SSAValue, columns: int, depth: int = LOOK_AHEAD, dim: int = -1,
                     unit: int = 1) -> set[tuple[int, int]] | None:
        """The (offset, size) of the columns each slice of `value` takes (through maps
        and reshapes that keep the columns, and a reshape that cuts them into (n, c),
        or (n, 1, .., c) with unit dims between (`_major_dim`), and the transposes
        after it: fused k and v viewed [b, s, 2 kv, d], moved to [b, 2 kv, s, d] and
        cut by `split`, a slice along that dim a block of c columns a unit); `dim`:
        where the columns' major index is, `unit` the columns one index of it spans;
        None when a slice is strided."""
        spans: set[tuple[int, int]] = set()
        shape = _shape(value)
        at = dim % len(shape)
        for use in value.uses:
            user = use.operation
            inner: set[tuple[int, int]] | None = set()
            if isinstance(user, SliceOp):
                offset, stride = user.offsets.get_values()[at], user.strides.get_values()[at]
                size = _shape(user.result)[at]
                if size == shape[at]:
                    continue
                if stride != 1:
                    return None
                spans.add((offset * unit, size * unit))
            elif not depth:
                continue
            elif isinstance(user, MapOp) and (_shape(user.results[0]) == shape or (
                    unit == 1 and at == len(shape) - 1 and _shape(user.results[0])[-1:] == (columns,))):
                inner = self._slice_spans(user.results[0], columns, depth - 1, at - len(shape), unit)
            elif isinstance(user, TransposeOp):
                inner = self._slice_spans(user.result, columns, depth - 1, list(user.perm.get_values()).index(at),
                                          unit)
            elif isinstance(user, ReshapeOp) and unit == 1 and at == len(shape) - 1:
                result = _shape(user.result)
                if result[-1:] == (columns,):
                    inner = self._slice_spans(user.result, columns, depth - 1)
                elif (major := _major_dim(result, columns)) is not None:  # the rows may regroup
                    inner = self._slice_spans(user.result, columns, depth - 1, major, prod(result[major + 1:]))
            if inner is None:
                return None
            spans |= inner
        return spans

    def _reshapes_keep(self, value: SSAValue, split: Split, depth: int = LOOK_AHEAD) -> bool:
        """Whether the reshapes that `value` reaches (through maps of its shape) keep `split`;
        a split in blocks or with a period also through its slices and the reshapes after them."""
        for use in value.uses:
            user = use.operation
            if isinstance(user, ReshapeOp):
                try:
                    reshaped = reshape_split(self.full_shape(value), _shape(user.result), split)
                except _Unsplittable:
                    return False
                if depth and reshaped is not None and not split.contiguous() and not self._reshapes_keep(
                        user.result, reshaped, depth - 1):
                    return False
            elif isinstance(user, MapOp) and depth and _shape(user.results[0]) == self.full_shape(value):
                if not self._reshapes_keep(user.results[0], split, depth - 1):
                    return False
            elif isinstance(user, SliceOp) and depth and not split.contiguous():
                try:
                    taken = _slice_split(user, split, self.full_shape(value))
                except _Unsplittable:
                    continue  # a slice that cuts a block takes the gathered value
                if taken is not None and not self._reshapes_keep(user.result, taken, depth - 1):
                    return False
        return True

    def _weight_behind(self, value: SSAValue) -> SSAValue | None:
        """The weight argument `value` is, or is a transpose/broadcast of (a batched
        matmul's weight), else None."""
        value = _uncast(value)
        while isinstance(value.owner, TransposeOp | BroadcastOp):
            value = _uncast(value.owner.input)
        return value if self._is_weight(value) else None

    def _is_weight(self, value: SSAValue) -> bool:
        """A weight argument: one naming a `tier.global`, or an outlined layer's `rdu.weight`."""
        if not isinstance(value, BlockArgument) or value.block is not self.function.body.block:
            return False
        attrs = self._arg_attrs(value)
        return global_of(attrs) is not None or WEIGHT in attrs

    def _weight_name(self, value: SSAValue) -> str:
        assert isinstance(value, BlockArgument)
        name = global_of(self._arg_attrs(value))
        if name is not None:
            return name
        return f"{self.function.sym_name.data}'s argument {value.name_hint or value.index}"

    def _plan_reshape(self, op: ReshapeOp, split: Split) -> tuple[list[Layout], Layout] | None:
        source, result = self.full_shape(op.input), _shape(op.result)
        try:
            return [split], reshape_split(source, result, split)
        except _Unsplittable:
            if self.strict and layer_of(op) is not None:
                raise LocatedError(
                    op, f"tp={self.tp} does not divide the heads: the reshape {list(source)} -> "
                        f"{list(result)} cannot keep {split.describe()}"
                ) from None
            return None

    def _results(self, ret: func.ReturnOp) -> list[Layout]:
        layouts: list[Layout] = []
        gathered = self._parameter_results() if 0 < self.zero < 3 else []  # stage 3: written back split
        gathered += [False] * (len(ret.operands) - len(gathered))
        # ZeRO 2: the caller reduce-scatters; tp in a training step: the caller all-reduces where it needs
        # it whole, after adding up the partial sums of several calls (the input gradients through k and v)
        keeps_partial = is_outlined(self.function) and (self.zero >= 2 or (self.training and not self.data_parallel))
        for index, value in enumerate(list(ret.operands)):
            layout = self.layout_of(value)
            if isinstance(layout, GroupPartial) and not keeps_partial and not gathered[index]:
                ret.operands[index] = self.materialize(value, layout.split, ret)  # summed, returned split
            elif ((layout == PARTIAL and not keeps_partial) or isinstance(layout, Experts)
                    or (gathered[index] and self.layout_of(value) is not None)):  # ZeRO: every replica's whole
                ret.operands[index] = self.materialize(value, None, ret)
            layouts.append(self.layout_of(ret.operands[index]))
        return layouts


def partition_tensors(module: ModuleOp, function: func.FuncOp, tp: int, strict: bool,
                      data_parallel: bool = False, callees: dict[str, CalleeLayouts] | None = None,
                      experts: bool = False, rank_scale: int = 1, program_ranks: int = 0,
                      zero: int = 0, sequence_parallel: bool = False, training: bool | None = None,
                      at_calls: _LayersAtCalls | None = None, caller: Sequence[Layout] = ()) -> int:
    """Rewrite `function` as the program of one of `tp` ranks (data-parallel
    replicas with `data_parallel`; the routed experts split over the ranks with
    `experts`); returns the replicated op count. `callees`: the outlined layers
    partitioned already (this function's, when it is one, added). `rank_scale`,
    `program_ranks`: the `tp` ranks are the factor `(r // rank_scale) % tp` of
    the program's `program_ranks` (dp x tp, `partition_module`); `zero`: the
    ZeRO stage over the data-parallel ranks (0: none); `sequence_parallel`: activations
    between the tp regions split along their tokens (sequence.py); `training`: whether
    the module is a training step (None: found by `is_training_step`); `at_calls`: tp's
    outlined layers partitioned at their first call, `caller` (this one's) the layouts
    its first call's operands have in its caller (`_LayersAtCalls`)."""
    known = callees if callees is not None else {}
    seeds = callee_seeds(module, function, known) if is_outlined(function) and not data_parallel else []
    if caller:
        seeds = _computed_by_callers(module, function, seeds, caller)
    if sequence_parallel and is_outlined(function):
        seeds = _with_carried(module, function, tp, seeds, known)
    training = is_training_step(module) if training is None else training
    partitioner = _TensorPartitioner(module, function, tp, strict, data_parallel, training,
                                     callees=known, experts=experts, seeds=seeds, rank_scale=rank_scale,
                                     program_ranks=program_ranks, zero=zero, sequence_parallel=sequence_parallel,
                                     at_calls=at_calls)
    held = result_shards(function)
    results = partitioner.partition()
    if callees is not None and is_outlined(function):
        callees[function.sym_name.data] = (partitioner.arg_layouts(), results)
    block = function.body.block
    ret = block.last_op
    outputs = [v.type for v in ret.operands] if isinstance(ret, func.ReturnOp) else []
    function.function_type = FunctionType.from_lists([a.type for a in block.args], outputs)
    held += [None] * (len(results) - len(held))
    set_result_shards(function, (partitioner._program_split(lay, was) if isinstance(lay, Split) else was
                                 for lay, was in zip(results, held)))
    return partitioner.replicated_ops


@dataclass
class _LayersAtCalls:
    """tp's outlined layers not partitioned yet (`waiting`), each partitioned when
    its caller's walk reaches its first call (`partition`), knowing the layouts the
    caller holds the call's operands in: a value the caller computes itself for
    every call (a backward layer's key or value gradient, summed over the query
    heads each KV head serves, however the heads were repeated) is taken in the
    split the caller made it in, which no layer partitioned before says
    (`callee_seeds`); partitioned first, the layer took it whole, and the caller
    all-gathered it and the layer the weight it multiplies."""

    module: ModuleOp
    tp: int
    options: dict[str, Any]
    """`partition_tensors`' keyword options."""
    callees: dict[str, CalleeLayouts]
    waiting: dict[str, func.FuncOp]

    def partition(self, name: str, caller: list[Layout]) -> int:
        """Partition layer `name` if it waits; its replicated op count."""
        function = self.waiting.pop(name, None)
        if function is None:
            return 0
        return partition_tensors(self.module, function, self.tp, callees=self.callees, at_calls=self,
                                 caller=caller, **self.options)

    def rest(self) -> int:
        """Partition the layers no walk called, in `layers_first` order."""
        return sum(self.partition(function.sym_name.data, [])
                   for function in layers_first(list(self.waiting.values())))


def _partition_tp(module: ModuleOp, tp: int, **options: Any) -> int:
    """Partition every function of `module` `tp` ways: the callers in order, each
    outlined layer at its first call (`_LayersAtCalls`); the replicated op count."""
    listed = list(functions(module))
    at_calls = _LayersAtCalls(module, tp, options, {}, {f.sym_name.data: f for f in listed if is_outlined(f)})
    replicated = sum(partition_tensors(module, function, tp, callees=at_calls.callees, at_calls=at_calls, **options)
                     for function in listed if not is_outlined(function))
    return replicated + at_calls.rest()


def _computed_by_callers(module: ModuleOp, function: func.FuncOp, seeds: list[Layout],
                         caller: Sequence[Layout]) -> list[Layout]:
    """`seeds` with each position no layer partitioned before fixes, where every
    call passes a value its caller computes (not the caller's argument, not a
    layer's result), taken as `caller` (the first call's) holds it, when split."""
    calls = _calls_to(module, function.sym_name.data)
    computed = [all(not isinstance(v, BlockArgument) and not isinstance(v.owner, func.CallOp)
                    for v in (call.operands[i] for call in calls)) for i in range(len(caller))]
    held = [_summed(layout) for layout in caller]
    return [split if seed is None and made and isinstance(split, Split) else seed
            for seed, split, made in zip(seeds, held, computed)]


def _with_carried(module: ModuleOp, function: func.FuncOp, tp: int, seeds: list[Layout],
                  callees: dict[str, CalleeLayouts]) -> list[Layout]:
    """Sequence parallelism: `seeds` with the activation each call of `function`
    passes to the next call (the residual stream) taken split along its tokens, and
    an argument some calls pass split along its tokens and the others whole (the
    first layer's input, made whole by the embedding) taken split."""
    shapes = [_shape(arg) for arg in function.args]
    calls = _calls_to(module, function.sym_name.data)
    carried = carried_arguments(calls, tp, shapes)
    seeds = seeds + [None] * (len(shapes) - len(seeds))
    for index, shape in enumerate(shapes):
        tokens = token_split(shape, tp) if len(shape) >= 2 else None
        if seeds[index] is None and tokens is not None:
            passed = {_layout_at_call(call.operands[index], callees) for call in calls}
            if passed == {None, tokens}:
                seeds[index] = tokens
    return [seed if seed is not None else split for seed, split in zip(seeds, carried)]


def _calls_to(module: ModuleOp, name: str) -> list[func.CallOp]:
    """The calls of function `name` in the module's functions, in order."""
    return [op for function in functions(module) for op in function.body.block.ops
            if isinstance(op, func.CallOp) and op.callee.string_value() == name]


def _summed(layout: Layout) -> Layout:
    """The layout of a value once summed over the groups of ranks it is a partial sum over (`GroupPartial`)."""
    return layout.split if isinstance(layout, GroupPartial) else layout


def _layout_at_call(value: SSAValue, callees: dict[str, CalleeLayouts]) -> Layout:
    """The layout a caller's `value` has once the outlined layers in `callees` are
    partitioned: a result of a call of one of them is in the layout its callee
    returns it in; an argument of the caller passed to such a call, in the layout
    that callee takes it in (the first such call); else None (unknown: replicated)."""
    owner = value.owner
    if isinstance(owner, func.CallOp) and (known := callees.get(owner.callee.string_value())) is not None:
        return known[1][value.index]  # type: ignore[attr-defined]
    if not isinstance(value, BlockArgument):
        return None
    for use in value.uses:
        user = use.operation
        if isinstance(user, func.CallOp) and (known := callees.get(user.callee.string_value())) is not None:
            return known[0][use.index]
    return None


def callee_seeds(module: ModuleOp, function: func.FuncOp, callees: dict[str, CalleeLayouts]) -> list[Layout]:
    """The argument layouts an outlined layer's calls pass it in, from the layers
    partitioned before it (`callees`): a backward layer takes its forward layer's
    saved values and weights split as the forward made them, the optimizer layer
    its weights and their gradients split as the forward and backward hold them
    (tensor parallelism through the backward: its matmuls take the transposed
    splits of the forward's; a partial sum over groups of ranks as one all-reduce
    over them makes it: a KV weight's gradient, by KV heads). A position whose
    calls disagree is left replicated."""
    calls = _calls_to(module, function.sym_name.data)
    if not calls:
        return []
    seeds: list[Layout] = []
    for index in range(len(function.args)):
        layouts = {_summed(_layout_at_call(call.operands[index], callees)) for call in calls}
        seeds.append(layouts.pop() if len(layouts) == 1 else None)
    return seeds


def layer_keys(block: Block) -> list[str]:
    """The decoder layers (`rdu.layer`) of a block, in order of first appearance."""
    keys: list[str] = []
    for op in block.ops:
        key = layer_of(op)
        if key is not None and key not in keys:
            keys.append(key)
    return keys


def assign_stages(function: func.FuncOp, pp: int, training: bool = False,
                  callees: dict[str, func.FuncOp] | None = None, microbatches: int = 1) -> None:
    """Give every op its pipeline stage and send each value used in another stage.
    Decoder layers (`rdu.layer`) go to stages in order; a training step (a joint
    graph keeps no module names; its outlined layers' calls are named by phase,
    `forward.layers.0`, `backward.layers.0`, ...) is cut by `training_stages`,
    each outlined layer's call (in `callees`) whole on one stage. A step that
    runs `microbatches` itself has each microbatch cut alike and its ops put
    in 1F1B order (`microbatches.order_one_f_one_b`)."""
    block = function.body.block
    keys = layer_keys(block)
    if training:
        labels = microbatch_labels(function, microbatches) if microbatches > 1 else None
        _send_across(block, training_stages(block, pp, callees, labels))
        if labels is not None:
            order_one_f_one_b(function, pp, microbatches)
        return
    if pp > len(keys):
        raise RduccError(
            f"rdu-partition: pp={pp} needs at least {pp} decoder layers (rdu.layer); "
            f"@{function.sym_name.data} has {len(keys)}"
        )
    stage_of_layer = {key: index * pp // len(keys) for index, key in enumerate(keys)}
    stage: dict[Operation, int] = {}
    for op in block.ops:
        if isinstance(op, func.ReturnOp):
            continue
        key = layer_of(op)
        producers = [stage[v.owner] for v in op.operands if v.owner in stage]
        stage[op] = stage_of_layer[key] if key is not None else max(producers, default=0)
    _send_across(block, stage)


def _send_across(block: Block, stage: dict[Operation, int]) -> None:
    """Mark each op with its stage and send every value used in another stage (`rdu.send_recv`)."""
    sent: dict[tuple[SSAValue, int], SSAValue] = {}
    for op in list(block.ops):
        if op not in stage:
            continue
        set_stage(op, stage[op])
        for index, value in enumerate(list(op.operands)):
            source = stage.get(value.owner)  # type: ignore[arg-type]
            if source is None or source == stage[op]:
                continue
            if (value, stage[op]) not in sent:
                send = SendRecvOp(value, source, stage[op])
                send.location = op.location
                if (phase := phase_of(op)) is not None:
                    set_phase(send, phase)
                set_stage(send, stage[op])
                block.insert_op_before(send, op)
                sent[(value, stage[op])] = send.result
            op.operands[index] = sent[(value, stage[op])]


def partition_module(module: ModuleOp, tp: int, pp: int, strict: bool = True, dp: int = 1,
                     microbatches: int = 1, ep: int = 1, zero: int = 0,
                     sequence_parallel: bool = False) -> int:
    """Partition every function of `module` (tp ranks, pp stages, dp data-parallel
    replicas, with `zero` (the ZeRO stage) their optimizer state (stage 2: and
    gradients; 3: and parameters) sharded over them; a pipelined
    training step's 1F1B `microbatches`; the routed experts split over the ep =
    tp ranks); the replicated op count."""
    if zero:
        _check_zero(module, dp)
    if dp > 1 and ep > 1:
        raise RduccError(f"rdu-partition: dp={dp} with ep={ep} is not supported: expert parallelism "
                         "splits the experts over the sockets of one tensor-parallel group, without replicas")
    if ep > 1 and ep != tp:
        raise RduccError(f"rdu-partition: ep={ep} must equal tp={tp}: the routed experts are split over "
                         "the sockets of a tensor-parallel group")
    if ep > 1 and not has_experts(module, ep):
        raise RduccError(f"rdu-partition: ep={ep} finds no routed experts to split: no stacked expert table "
                         f"(a weight of rank >= 3 indexed by expert ids) whose expert count divides {ep} ways")
    replicated = 0
    training = is_training_step(module)  # once: it walks the whole module
    if tp > 1:
        replicated += _partition_tp(module, tp, strict=strict, experts=ep > 1, program_ranks=tp * dp,
                                    sequence_parallel=sequence_parallel, training=training)
        note_whole_weights(module)
    if dp > 1:  # over tp's program: replica r // tp of rank r, dp's groups tp ranks apart
        replicas: dict[str, CalleeLayouts] = {}
        for function in layers_first(functions(module)):
            replicated += partition_tensors(module, function, dp, strict, data_parallel=True, callees=replicas,
                                            rank_scale=tp, program_ranks=tp * dp, zero=zero, training=training)
    if zero >= 3 and pp == 1:
        prefetch_parameter_gathers(entry_function(module))
    executed = executed_microbatches(module)
    if executed > 1:  # the step runs its microbatches itself: they are 1F1B's
        microbatches = executed
    for function in functions(module):
        if pp > 1 and not is_outlined(function):
            outlined = {f.sym_name.data: f for f in functions(module) if is_outlined(f)}
            assign_stages(function, pp, training, outlined,
                          executed if function is entry_function(module) else 1)
        if training:
            mark_deferred(function)
    set_partition(module, tp, pp, dp, microbatches if pp > 1 else 1, zero)
    if ep > 1:
        set_expert_parallel(module, ep)
    return replicated


ZERO_STAGES = (0, 1, 2, 3)
"""The ZeRO stages rdu-partition builds (0: none)."""

CHOSEN_ZERO = 2
"""The stage of the split chooser's ZeRO candidates (costed with reduce-scattered gradients)."""


def _check_zero(module: ModuleOp, dp: int) -> None:
    """ZeRO needs replicas and optimizer state (globals the step writes back that
    only the optimizer reads)."""
    if dp < 2:
        raise RduccError(f"rdu-partition: zero shards the optimizer state over the data-parallel replicas: "
                         f"it needs dp >= 2, got dp={dp}")
    if not optimizer_state_args(module, entry_function(module)):
        raise RduccError("rdu-partition: zero shards the optimizer state, but this step has none "
                         "(no optimizer, or one without state such as SGD without momentum)")


def _split_step(module: ModuleOp, tp: int, sequence_parallel: bool = False) -> int:
    """A training step's tensors partitioned tp ways, as `partition_module` splits them
    at tp alone (the split chooser's profile: what tp divides and the collectives it
    inserts, once a tp; with or without sequence parallelism)."""
    return _partition_tp(module, tp, strict=True, program_ranks=tp, sequence_parallel=sequence_parallel)


def has_experts(module: ModuleOp, ep: int) -> bool:
    """Whether `module` gathers rows of a stacked expert table that splits `ep` ways."""
    return any(expert_table(op, ep) is not None for op in module.walk())


def layers_first(found: Iterable[func.FuncOp]) -> list[func.FuncOp]:
    """The functions, outlined layers (`rdu.calls`) first: each is partitioned once,
    before the functions that call it, whatever the number of calls."""
    listed = list(found)
    outlined = [f for f in listed if is_outlined(f)]
    order = {name: at for at, name in enumerate(_call_order(listed))}
    outlined.sort(key=lambda f: order.get(f.sym_name.data, len(order)))
    return outlined + [f for f in listed if not is_outlined(f)]


def _call_order(listed: Sequence[func.FuncOp]) -> list[str]:
    """The callees of the functions' calls in order of their first call (a training
    step's forward layer, then its backward layer, then its optimizer layer)."""
    order: list[str] = []
    for function in listed:
        for op in function.body.block.ops:
            if isinstance(op, func.CallOp) and op.callee.string_value() not in order:
                order.append(op.callee.string_value())
    return order


def candidate_splits(sockets: int) -> list[tuple[int, int]]:
    """(tp, pp) pairs, powers of two, with tp * pp <= sockets."""
    powers = [1 << i for i in range(sockets.bit_length()) if 1 << i <= sockets]
    return [(tp, pp) for tp in powers for pp in powers if tp * pp <= sockets]


def choose_split(module: ModuleOp, target_spec: str = "", ep: int = 0) -> tuple[int, int, int]:
    """The (tp, pp, ep) with the least modeled time (level-1 estimate) among those
    that partition; `ep` 0: with and without expert parallelism (ep = tp) where
    the model has routed experts, 1: without, N: with, at tp = N."""
    return chosen_split(module, target_spec, ep)[:3]


def chosen_split(module: ModuleOp, target_spec: str = "", ep: int = 0
                 ) -> tuple[int, int, int, ModuleOp | None]:
    """`choose_split`'s (tp, pp, ep) and the partitioned copy of `module` it modeled
    for them (None: one socket, nothing partitioned).

    Every candidate is weighed, but one is partitioned only when its lower bound
    could beat the best so far (`_split_bound`), so the partitions done stay
    few: the pp = 1 splits are tried first (tp = 1, then the largest tp down),
    then the pipelined ones, least bound first. Ties go to the earlier candidate
    of `candidate_splits`."""
    from rducc.model.cost_model import partition_estimate_parts, stage_weight_bytes

    target = module_target(module, target_spec)
    trials = [(tp, pp, experts) for tp, pp in sorted(candidate_splits(target.sockets), key=lambda split: split[1])
              for experts in _expert_choices(module, tp, ep)]
    rank = {trial: index for index, trial in enumerate(trials)}
    best: tuple[float, int, int, int, int, ModuleOp] | None = None
    alone: dict[tuple[int, int], tuple[float, int]] = {}  # (tp, ep) at pp = 1: in-HBM seconds, weight bytes
    alone_first = sorted((t for t in trials if t[1] == 1), key=lambda t: (t[0] > 1, -t[0]))
    pipelined = [t for t in trials if t[1] > 1]
    for tp, pp, experts in alone_first + sorted(
            pipelined, key=lambda t: (_split_bound(t, alone, target), rank[t])):
        if best is not None and (_split_bound((tp, pp, experts), alone, target), rank[(tp, pp, experts)]) > best[:2]:
            continue  # cannot beat the best (nor tie it as an earlier candidate): not partitioned
        trial = module.clone()
        try:
            partition_module(trial, tp, pp, strict=True, ep=experts)
        except RduccError:
            continue
        in_hbm, spilled = partition_estimate_parts(trial, target)
        seconds = in_hbm + spilled
        if pp == 1:
            alone[(tp, experts)] = (in_hbm, max(stage_weight_bytes(trial), default=0))
        if best is None or (seconds, rank[(tp, pp, experts)]) < best[:2]:
            best = (seconds, rank[(tp, pp, experts)], tp, pp, experts, trial)
    return (best[2], best[3], best[4], best[5]) if best is not None else (1, 1, 1, None)


def _split_bound(trial: tuple[int, int, int], alone: dict[tuple[int, int], tuple[float, int]],
                 target: Target) -> float:
    """A lower bound on the modeled seconds of split `trial` (tp, pp, ep) from the pp = 1
    splits modeled (`alone`: per (tp, ep), the in-HBM part of `partition_estimate_parts`
    and one socket's weight bytes); 0 where none applies.

    Each rank holds and computes at least 1/tp of every op, so without experts a
    split is no faster than the unsplit in-HBM part / tp. A pipelined split runs a
    token's stages one after another, no faster than the same tp and ep at pp = 1's
    in-HBM part, and its fullest stage holds at least 1/pp of that split's weights a
    socket: what of them is past HBM is read from DDR."""
    tp, pp, experts = trial
    bounds = [alone[(1, 1)][0] / tp] if experts == 1 and (1, 1) in alone else []
    if pp > 1 and (tp, experts) in alone:
        in_hbm, weights = alone[(tp, experts)]
        bounds.append(in_hbm + max(weights // pp - target.hbm_bytes, 0) / target.bandwidth("ddr"))
    return max(bounds, default=0.0)


def _expert_choices(module: ModuleOp, tp: int, ep: int) -> list[int]:
    """The ep values to model at `tp` (see `choose_split`)."""
    if ep:
        return [ep] if ep == 1 or ep == tp else []
    return [1, tp] if tp > 1 and has_experts(module, tp) else [1]


@dataclass(frozen=True)
class RduPartition(RduPass):
    """Split the model across sockets: tensor parallelism (tp), pipeline stages (pp)
    and, for a training step, data-parallel replicas (dp)."""

    name = "rdu-partition"
    accepts: ClassVar[tuple[Level, ...]] = TENSOR_LEVELS
    on_tensors: ClassVar[bool] = True

    tp: int = 0
    """Sockets per tensor-parallel group; 0: chosen by the cost model (with pp)."""

    pp: int = 0
    """Pipeline stages; 0: chosen by the cost model (1 when tp is given)."""

    dp: int = 0
    """Data-parallel replicas, each on its share of the batch; 0: chosen by the
    cost model for a training step (1 for inference, or when tp or pp is given)."""

    microbatches: int = 0
    """A pipelined training step's 1F1B microbatches; 0: the most that divide the
    replica's batch, up to 4 a stage (`default_microbatches`)."""

    zero: int = 0
    """The ZeRO stage of a training step with dp > 1 (passes/rdu_partition/training.py;
    0: none). 1: each replica holds and updates 1/dp of the optimizer state, the
    gradients all-reduced whole, the updated parameters all-gathered; 2: the
    gradients also sharded, reduce-scattered where the backward makes them; 3:
    the parameters too, all-gathered before their first reader in the forward
    and again in the backward, updated and written back split. Without a split
    given, the cost model weighs stage-2 candidates anyway."""

    sequence_parallel: bool = False
    """Sequence parallelism (Megatron's; needs tp >= 2 given): the norms, residual adds
    and dropout between the tensor-parallel regions run split along the tokens,
    each all-reduce a reduce-scatter and the next region's input an all-gather
    (passes/rdu_partition/sequence.py)."""

    ep: int = 0
    """Expert parallelism: the routed experts' stacked tables split over the ep
    sockets of a tensor-parallel group (ep = tp; passes/rdu_partition/experts.py);
    1: never; 0: chosen by the cost model (with tp and pp) for a model with routed
    experts. With ep alone, tp = ep."""

    def rewrite(self, ctx: Context, op: ModuleOp) -> None:
        if is_partitioned(op):
            raise RduccError("rdu-partition: the module is partitioned already")
        if any(isinstance(inner, KernelOp) for inner in op.walk()):
            raise RduccError("rdu-partition works on the imported graph: run it before rdu-fuse")
        if self.tp < 0 or self.pp < 0 or self.dp < 0 or self.ep < 0:
            raise RduccError(f"rdu-partition: tp, pp, dp and ep must be >= 1, got tp={self.tp} pp={self.pp} "
                             f"dp={self.dp} ep={self.ep}")
        if self.microbatches < 0:
            raise RduccError(f"rdu-partition: microbatches must be >= 1, got {self.microbatches}")
        if self.zero not in ZERO_STAGES:
            raise RduccError(f"rdu-partition: zero={int(self.zero)} is not a ZeRO stage: 1 (optimizer "
                             "state sharded), 2 (and gradients) or 3 (and parameters)")
        if self.zero and self.dp < 2:
            raise RduccError(f"rdu-partition: zero shards the optimizer state over the data-parallel replicas: "
                             f"it needs dp >= 2, got dp={self.dp}")
        if self.sequence_parallel and self.tp < 2:
            raise RduccError(f"rdu-partition: sequence_parallel splits the activations between the tensor-parallel "
                             f"regions: it needs tp >= 2, got tp={self.tp}")
        target = module_target(op, self.target)
        training = is_training_step(op)
        chosen = self.tp == 0 and self.pp == 0 and self.dp == 0
        ep = max(self.ep, 1)
        if chosen and training:
            dp, tp, pp, microbatches, choice = choose_training_split(
                op, target,
                lambda trial, d, t, p, m, z, s: partition_module(trial, t, p, strict=True, dp=d, microbatches=m,
                                                                 ep=ep, zero=CHOSEN_ZERO if z else 0,
                                                                 sequence_parallel=s),
                _split_step)
            if not is_partitioned(op):
                set_partition(op, tp, pp, dp, microbatches)  # one socket: nothing to split
            set_split_choice(op, choice.table().splitlines())
            return
        elif chosen:
            dp, microbatches = 1, 1
            tp, pp, ep, trial = chosen_split(op, self.target, self.ep)
            if self.ep > 1 and ep != self.ep:
                raise RduccError(f"rdu-partition: ep={self.ep} does not partition this model: tp = ep = "
                                 f"{self.ep} sockets must split its experts and its heads")
            if trial is not None and tp * pp <= target.sockets:
                adopt(op, trial)  # the chooser's partitioned copy: not partitioned again
                return
        else:
            dp, tp, pp = max(self.dp, 1), max(self.tp or self.ep, 1), max(self.pp, 1)
            microbatches = self._microbatches(op, dp, pp) if training else 1
        if dp * tp * pp > target.sockets:
            needs = f"tp={tp} x pp={pp}" + (f" x dp={dp}" if dp > 1 else "")
            raise RduccError(
                f"rdu-partition: {needs} needs {dp * tp * pp} sockets; target {target.name} has {target.sockets}"
            )
        partition_module(op, tp, pp, dp=dp, microbatches=self.microbatches or microbatches, ep=ep, zero=self.zero,
                         sequence_parallel=self.sequence_parallel)
        if self.tp > 1 and not splits_anything(op):
            raise RduccError(
                f"rdu-partition: tp={self.tp} splits nothing in this model: no weight or input has a "
                f"dimension (output columns, heads, convolution channels) that divides {self.tp} ways, so "
                f"every socket would run the whole model; use a tp that divides the model's hidden sizes"
            )


    def _microbatches(self, op: ModuleOp, dp: int, pp: int) -> int:
        """The 1F1B microbatches of a forced split: the option's, which must divide
        a replica's batch, else `default_microbatches`."""
        executed = executed_microbatches(op)
        if executed > 1:
            if self.microbatches not in (0, executed):
                raise RduccError(f"rdu-partition: microbatches={self.microbatches}, but the step runs its batch "
                                 f"in {executed} microbatches itself (rdu.microbatches); give microbatches="
                                 f"{executed} or leave it out")
            return executed
        batch = (batch_size(entry_function(op)) or 1) // dp
        if self.microbatches and (pp == 1 or batch % self.microbatches):
            raise RduccError(f"rdu-partition: microbatches={self.microbatches} needs pp > 1 and must divide "
                             f"the batch of {batch} each replica runs")
        return self.microbatches or default_microbatches(batch, pp)


def splits_anything(module: ModuleOp) -> bool:
    """Whether a function argument (a weight or an input) of `module` is split across ranks."""
    return any(
        shard_of(attrs) is not None
        for function in functions(module)
        for attrs in arg_attrs(function)
    )


__all__ = [
    "RduPartition", "partition_module", "splits_anything", "choose_split", "candidate_splits", "reshape_split",
    "expert_parallel", "has_experts", "CHOSEN_ZERO", "ZERO_STAGES",
]
