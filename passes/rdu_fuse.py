"""`rdu-fuse`: group the dataflow ops of @forward into `rdu.kernel`s.

Kernels are contiguous runs of the (topologically ordered) function body, so
every grouping is legal. `level` picks the policy:

- 0: every op its own kernel (the unfused baseline), but a 16-bit linear
  layer's widened product and its bias add, one ATen `addmm` (`unfused_segments`);
- 1: pattern fusion: a matmul/conv with its prologue (a normalization feeding
  it) and epilogue (bias, activation, residual add); sibling matmuls reading
  the same input (q/k/v, gate/up); the attention chain (QK^T, scale, mask,
  softmax, .V); elementwise and layout ops with their neighbours;
- 2: level 1, then adjacent kernels merged while the result fits, up to a
  whole decoder layer (kernels never straddle two layers, so every layer of
  a model compiles to the same kernel shape).

No kernel is formed whose working set cannot fit the target (SRAM bytes,
PMUs, PCU stages) even when tiled; see `rducc.model.kernel_model`. A kernel
grows op by op (level 1) and neighbour by neighbour (level 2); whether it
still fits is settled by a bound on its untiled working set kept as it grows
(`GrowingGroup`), the tile-plan search asked only where the bound leaves it
open, so a long run of fusable ops costs its length, not its square.

**Fusion consults the mapper** (levels 1 and 2). Each group formed is mapped
onto the fabric by the rules `rdu-map-units` applies (`rducc.model.mapping`,
`map_body`: the group's ops whole, its work spread over the tiles of its tile
plan, its buffers one tile's bytes) and timed by the cost model's
`kernel_time` (`Traffic.seconds`: what crosses its boundary read from and
written to HBM). A group *maps badly* when the mapper finds no room for it or
when it split in two is modeled faster than whole: a stage starved of the
PCUs the other stages hold, or a reconfiguration between sections that costs
more than a second kernel, shows there. Such a group is split, at the best
of these op boundaries: where each later section of its mapping starts (the
split removes the section) and around the op where the stages' work reaches
half of the group's (the split balances the stages); each part is weighed
again. A group that maps well stays fused (docs/cost-model.md, "Fusion and
the mapper").

**Where a full kernel closes** (level 2, `closing_tail`): when the next group
does not fit, the kernel takes that group's leading ops (up to its first matmul
or conv) that leave the fewest bytes crossing, fewer than at the group's start,
when it still fits: a post-norm and its residual add end their own layer's
kernel, where -O1 starts the next group with them.

**What a kernel makes again** (`recompute_in_readers`): a value one kernel
computes from the function's arguments alone by cheap ops (RECOMPUTED) that
another kernel reads, the reader computes itself, before its first use (the
first kernel places its own so too), where it still maps; not an index it
gathers or scatters by. So the kernels of an outlined period's repeated
layers are alike, not the first making the tables CSE left it to share.

**A row write is weighed by its rows** (`planned_group`): a scatter that the
kernel will lower to a write of its rows alone (`rducc.model.rows_alone.rows_alone_ops`,
the rule `rdu-tile` and `rdu-insert-dma` apply once it is a kernel) holds no buffer, so
a stacked cache larger than SRAM does not push the scatter out of the kernel that
computes its rows and their positions (out, its index would be a kernel input, no
row list, and the kernel would move the whole stack).

A contiguous window of a function argument that a segment only passes on (a
layer's `k_cache[i]` of a stacked cache, sliced before the layer's call) is
a kernel of its own (`split_off_windows`), which `rdu-insert-dma` makes a
`tier.view`: the window is never copied, its reader DMAs just it.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Container, Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from xdsl.context import Context
from xdsl.dialects import arith, func
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Block, BlockArgument, Operation, OpResult, Region, SSAValue

from rducc.diagnostics import LocatedError
from rducc.dialects.bias_adds import Product, bias_add_of, widened_16_bit
from rducc.dialects.contracts import (
    TENSOR_LEVELS,
    KernelMapping,
    Level,
    arg_attrs,
    calls_of,
    is_input,
    layer_of,
    module_target,
    owned_bytes,
    set_layer,
    stage_attr,
)
from rducc.dialects.program import functions
from rducc.dialects.rdu.dataflow import (
    BroadcastOp,
    ConvOp,
    GatherOp,
    HostCallOp,
    IotaOp,
    KernelOp,
    MapOp,
    MatmulOp,
    ReduceKind,
    ReduceOp,
    ReshapeOp,
    ScatterOp,
    SliceOp,
    YieldOp,
)
from rducc.dialects.shapes import value_bytes
from rducc.dialects.streamed import replaced_bytes, updated_in_place
from rducc.dialects.tier import is_contiguous_window
from rducc.dialects.unchanged import unchanged
from rducc.model.group_signature import group_signature
from rducc.model.kernel_model import (
    Group,
    GrowingGroup,
    TilePlan,
    Window,
    best_plan,
    gathered_inputs,
    input_bytes,
    last_reads,
    make_group,
    scaled_bytes,
    shape,
    windowed_inputs,
)
from rducc.model.kernel_timing import KernelWork, kernel_time, planned_work, with_bytes
from rducc.model.mapping import KernelBody, body_stages, map_body
from rducc.model.rows_alone import rows_alone_group, rows_alone_ops
from rducc.passes.common import RduPass
from rducc.targets import Target

HEAVY_OPS = (MatmulOp, ConvOp)


def stage_of(op: Operation) -> int:
    """The pipeline stage of an op (`rdu.stage`, from rdu-partition); 0 when not pipelined."""
    return stage_attr(op) or 0


@dataclass
class _Segment:
    """A run of ops being grown into a kernel, with what -O1's rules need."""

    ops: list[Operation]

    def heavy_ops(self) -> list[Operation]:
        return [op for op in self.ops if isinstance(op, HEAVY_OPS)]

    def has_softmax_after_heavy(self) -> bool:
        heavy = self.heavy_ops()
        if not heavy:
            return False
        after = self.ops[self.ops.index(heavy[-1]) + 1 :]
        return any(isinstance(op, ReduceOp) and op.kind.data == ReduceKind.MAX for op in after)

    def defines(self, value: SSAValue) -> bool:
        return value.owner in self.ops


def _joins_heavy(segment: _Segment, op: Operation) -> bool:
    """-O1: may a matmul/conv join this segment?"""
    heavy = segment.heavy_ops()
    if not heavy:
        return True
    if isinstance(op, MatmulOp) and any(
        isinstance(h, MatmulOp) and h.lhs == op.lhs for h in heavy
    ):
        return True  # siblings reading one input: q/k/v, gate/up
    consumes_segment = any(segment.defines(v) for v in op.operands)
    return consumes_segment and segment.has_softmax_after_heavy()  # attention .V


def _joins_reduce(segment: _Segment, op: ReduceOp) -> bool:
    """-O1: may a reduction join? Yes before any matmul, or inside a softmax."""
    if not segment.heavy_ops():
        return True
    if op.kind.data == ReduceKind.MAX:
        return True
    return segment.has_softmax_after_heavy()  # softmax's sum, masking's any/all


def _pull_back(segment: _Segment, position: Mapping[Operation, int], start: int) -> list[Operation]:
    """Trailing ops that belong with what follows (the run's ops from `start` on, by
    their `position` in the run): used only there, and either independent of this
    segment (a weight's transpose) or reading a value that the following ops read
    too (the `x * x` that starts a norm of `x`). Membership is asked of `position`
    and sets, so a break costs the ops it looks at, not the rest of the run."""
    members = set(segment.ops)

    def later(op: Operation) -> bool:
        return position.get(op, -1) >= start

    moved: list[Operation] = []
    moving: set[Operation] = set()
    for op in reversed(segment.ops):
        if isinstance(op, (*HEAVY_OPS, ReduceOp)):
            break
        results_used_later_only = all(
            later(use.operation) or use.operation in moving
            for r in op.results
            for use in r.uses
        )
        shares_input = any(
            later(use.operation) for v in op.operands for use in v.uses
        )
        independent = not any(v.owner in members for v in op.operands)
        if not (results_used_later_only and (shares_input or independent)):
            break
        moved.insert(0, op)
        moving.add(op)
    return moved


def _activation_ops(block: Block, function: func.FuncOp) -> set[Operation]:
    """Ops whose values depend on a user input (the rest prepare weights or masks)."""
    dependent: set[SSAValue] = {arg for arg, a in zip(block.args, arg_attrs(function)) if is_input(a)}
    ops: set[Operation] = set()
    for op in block.ops:
        if any(v in dependent for v in op.operands):
            ops.add(op)
            dependent.update(op.results)
    return ops


def sink_to_first_use(function: func.FuncOp) -> None:
    """Move each op that does not depend on the user inputs (a weight's transpose,
    a mask) down to just before its first user, so it fuses with that user. An op
    whose first user is a call (an outlined layer, a host call: a kernel boundary)
    stays where it is: it cannot fuse with the call, and moved between two calls
    of a layer (a per-layer constant made before the stack) it would be a kernel
    between them, and the calls would not loop.

    One pass from the end: the order of the block is kept as sortable keys
    (`_before` gives a moved op a key just below its new successor's), so
    finding a first user never re-numbers the block.
    """
    block = function.body.block
    activations = _activation_ops(block, function)
    order = {op: (index, _LAST) for index, op in enumerate(block.ops)}
    ops = [op for op in block.ops if not isinstance(op, func.ReturnOp) and op not in activations]
    for moved, op in enumerate(reversed(ops)):
        users = [use.operation for r in op.results for use in r.uses]
        if not users or any(u.parent_block() is not block for u in users):
            continue
        first_user = min(users, key=order.__getitem__)
        if isinstance(first_user, func.CallOp | HostCallOp):
            continue
        if op.next_op is not first_user:
            op.detach()
            block.insert_op_before(op, first_user)
            order[op] = _before(order[first_user], moved)


_LAST = float("inf")


def _before(key: tuple, moved: int) -> tuple:
    """A key between `key` and its predecessor, above every key given before it for
    the same successor (`moved` grows): ops inserted before the same op later sit
    nearer to it, as `insert_op_before` places them."""
    return (*key[:-1], moved, _LAST)


_ANSWERS: dict[Hashable, Any] = {}
"""Answers about groups of the rdu-fuse run in progress, by what is asked, the
target and the group's signature (`group_signature`): a graph of repeated
layers that are not outlined (a training step's) asks each once per distinct
group, not once per layer. Cleared when a run starts and ends."""


def _remembered(question: str, ops: Sequence[Operation], target: Target, answer: Callable[[], Any]) -> Any:
    key = (question, id(target), group_signature(ops))
    if key not in _ANSWERS:
        _ANSWERS[key] = answer()
    return _ANSWERS[key]


def _fits(ops: Sequence[Operation], target: Target) -> bool:
    return bool(_remembered("fits", ops, target, lambda: best_plan(planned_group(ops), target) is not None))


def planned_group(ops: Sequence[Operation]) -> Group:
    """The group of `ops` as its kernel runs: without the scatters that write their rows
    alone (`rows_alone_ops`: the buffer never held, so a stack larger than SRAM keeps
    its row write with the ops computing the rows and their positions)."""
    return rows_alone_group(make_group(ops), rows_alone_ops(ops))


@dataclass
class _Growing:
    """`pattern_segments`' segment in progress, as a `GrowingGroup` of the run's ops:
    whether it still fits with one op more, asked of `_fits` only when the group's
    bound leaves it open, so a long segment costs its length, not its square."""

    ops: Sequence[Operation]
    target: Target
    last_read: dict[SSAValue, float]
    position: dict[Operation, int]
    group: GrowingGroup

    @classmethod
    def over(cls, ops: Sequence[Operation], target: Target) -> _Growing:
        position = {op: at for at, op in enumerate(ops)}
        return cls(ops, target, last_reads(ops), position, GrowingGroup({}, {}, 0))

    def restart(self, segment: Sequence[Operation]) -> None:
        """Follow a new segment (a run of `ops`) from its first op."""
        start = self.position[segment[0]] if segment else 0
        self.group = GrowingGroup(self.last_read, self.position, start)
        for op in segment:
            self.group.add(op, self.target)

    def fits_with(self, segment: Sequence[Operation], after: Sequence[Operation]) -> bool:
        """Whether `segment` (the group followed) and the ops `after` it fit as one
        kernel: `_fits`'s answer, from the bound where it settles it. The group
        followed is then both."""
        for op in after:
            self.group.add(op, self.target)
        if self.group.bound(self.target).fits(self.target):
            return True
        if self.group.stages_exceed(self.target):
            return False
        return _fits([*segment, *after], self.target)


def pattern_segments(ops: Sequence[Operation], target: Target) -> list[list[Operation]]:
    """-O1 segmentation."""
    segments: list[list[Operation]] = []
    current = _Segment([])
    growing = _Growing.over(ops, target)
    for index, op in enumerate(ops):
        joins = True
        if isinstance(op, HEAVY_OPS):
            joins = _joins_heavy(current, op)
        elif isinstance(op, ReduceOp):
            joins = _joins_reduce(current, op)
        if current.ops and stage_of(op) != stage_of(current.ops[0]):
            joins = False  # a kernel runs on one pipeline stage's sockets
        if joins and current.ops and not growing.fits_with(current.ops, [op]):
            joins = False
        grown = joins and bool(current.ops)  # `fits_with` grew the group followed by `op`
        if not joins and current.ops:
            pulls = isinstance(op, (*HEAVY_OPS, ReduceOp)) and stage_of(op) == stage_of(current.ops[0])
            moved = _pull_back(current, growing.position, index) if pulls else []
            kept = current.ops[: len(current.ops) - len(moved)]
            if kept:
                segments.append(kept)
            current = _Segment(moved)
        current.ops.append(op)
        if not grown:
            growing.restart(current.ops)
    if current.ops:
        segments.append(current.ops)
    return segments


def _is_window_op(op: Operation, windows: set[SSAValue]) -> bool:
    """A stride-1 slice taking a contiguous window of an argument (or of such a window),
    or a reshape of one."""
    if isinstance(op, ReshapeOp):
        return op.input in windows
    if not isinstance(op, SliceOp) or op.input not in windows:
        return False
    return all(s == 1 for s in op.strides.get_values()) and is_contiguous_window(shape(op.input), shape(op.result))


def split_off_windows(segment: list[Operation], arguments: Sequence[SSAValue]) -> list[list[Operation]]:
    """The segment, with the contiguous windows of `arguments` it only passes on to
    later ops split off as a segment of their own, first (they read arguments only)."""
    members, windows = set(segment), set(arguments)
    kept: list[Operation] = []
    for op in segment:
        if _is_window_op(op, windows):
            kept.append(op)
            windows.update(op.results)
    changed = True
    while changed:  # drop windows the segment itself computes on (those it DMAs as windows)
        chosen = set(kept)
        dropped = [
            op for op in kept
            if any(use.operation in members and use.operation not in chosen for r in op.results for use in r.uses)
        ]
        kept = [op for op in kept if op not in dropped]
        changed = bool(dropped)
    if not kept or len(kept) == len(segment):
        return [segment]
    return [kept, [op for op in segment if op not in set(kept)]]


def _segment_key(ops: Sequence[Operation]) -> str | None:
    return next((key for op in ops if (key := layer_of(op)) is not None), None)


def merged_segments(segments: list[list[Operation]], target: Target) -> list[list[Operation]]:
    """-O2: merge neighbours of the same layer while the result fits (`segments`: the
    consecutive parts of one run of ops, as `pattern_segments` gives them). Where a
    neighbour does not fit, the kernel closes where the fewest bytes cross
    (`closing_tail`)."""
    merged: list[list[Operation]] = []
    merged_key: str | None = None  # the last merged segment's key: it keeps its first part's
    growing = _Growing.over([op for segment in segments for op in segment], target)
    for segment in segments:
        key = _segment_key(segment)
        same_stage = merged and stage_of(merged[-1][0]) == stage_of(segment[0])
        if same_stage and merged_key == key:
            if growing.fits_with(merged[-1], segment):
                merged[-1] += segment
                continue
            taken = closing_tail(merged[-1], segment, growing)
            merged[-1], segment = merged[-1] + segment[:taken], segment[taken:]
        merged.append(list(segment))
        merged_key = key
        growing.restart(segment)
    return merged


def closing_tail(kernel: list[Operation], segment: list[Operation], growing: _Growing) -> int:
    """How many leading ops of `segment` (which does not fit with `kernel`, the kernel
    before it) the kernel takes: the cut, before the segment's first matmul or conv,
    where the fewest bytes cross from the ops before it to the ops after, when that is
    fewer than cross at the segment's start and the kernel still fits with them (0
    otherwise). A post-norm ends its own layer's kernel so (the norm and residual add
    after a layer's last matmul, which -O1 starts the next group with), and each
    kernel of a stack of such layers starts where its layer does."""
    heavy = next((at for at, op in enumerate(segment) if isinstance(op, HEAVY_OPS)), len(segment) - 1)
    best, fewest = 0, 0
    for stop, change in enumerate(crossing_changes(segment, heavy, growing.last_read, growing.position), 1):
        if change < fewest:
            best, fewest = stop, change
    if not best:
        return 0
    growing.restart(kernel)
    return best if growing.fits_with(kernel, segment[:best]) else 0


def crossing_changes(segment: Sequence[Operation], stops: int, last_read: dict[SSAValue, float],
                     position: dict[Operation, int]) -> list[int]:
    """For each stop from 1 to `stops`: the bytes of the run's values that cross a cut
    before `segment[stop]` less those that cross one before `segment[0]` (`last_read`,
    `position`: in the run). One pass over the segment (each cut summed on its own
    was quadratic in a long update segment's ops): a result of the segment's ops
    counts as made while the cut is at or before its last reader; a value made
    before the segment and read in it counts as dying from the first cut after both
    its first reader here and its last."""
    start = position[segment[0]] if segment else 0
    made = dying = 0
    made_until: dict[int, int] = {}  # stop -> bytes made that stop crossing there
    dying_from: dict[int, int] = {}  # stop -> bytes that start dying there
    seen: set[SSAValue] = set()
    changes = []
    for stop in range(1, stops + 1):
        op = segment[stop - 1]
        made -= made_until.pop(stop, 0)
        dying += dying_from.pop(stop, 0)
        for result in op.results:
            read = last_read[result]
            if read >= start + stop:
                size = value_bytes(result)
                made += size
                if read != float("inf"):
                    gone = math.floor(read - start) + 1
                    made_until[gone] = made_until.get(gone, 0) + size
        for value in op.operands:
            if value in seen or not isinstance(value, OpResult) or value not in last_read:
                continue
            if value.op not in position or position[value.op] >= start:
                continue
            seen.add(value)
            read = last_read[value]
            if read == float("inf"):
                continue
            from_stop = max(stop, math.floor(read - start) + 1)
            if from_stop == stop:
                dying += value_bytes(value)
            else:
                dying_from[from_stop] = dying_from.get(from_stop, 0) + value_bytes(value)
        changes.append(made - dying)
    return changes


def group_body(ops: Sequence[Operation], target: Target) -> tuple[KernelBody, dict[str, int]] | None:
    """The mapper's view of the ops as one kernel (one tile of its tile plan) and the
    bytes crossing its boundary, all at HBM; None when no tile plan fits the target."""
    found = _group_plan(ops, target)
    if found is None:
        return None
    body, reads, writes, _ = found
    moved = {"hbm->sram": sum(reads), "sram->hbm": sum(writes)}
    return body, {k: n for k, n in moved.items() if n}


def _group_plan(ops: Sequence[Operation], target: Target
                ) -> tuple[KernelBody, tuple[int, ...], tuple[int, ...], tuple[int, ...]] | None:
    """`group_body`'s body, with the bytes it reads of each of the group's inputs and
    writes of each of its outputs (`make_group`'s order), and the bytes its first tile
    reads of each input (`first_tile_reads`)."""
    whole = make_group(ops)
    group = planned_group(ops)
    found = best_plan(group, target)
    if found is None:
        return None
    plan = found[0]
    windows, gathered = windowed_inputs(group), gathered_inputs(group)
    # as rdu-insert-dma lowers it: a gathered table is no buffer, its gather no stage,
    # the gathered rows an input its indexed DMA fills
    rows = [gather.results[0] for gather in gathered.values()]
    inputs = [*(v for v in group.inputs if v not in gathered), *rows]
    doubled = [2 if plan.count > 1 and v in plan.tiled else 1 for v in inputs]
    sizes = [scaled_bytes(v, plan, windows) * n for v, n in zip(inputs, doubled)]
    sizes += [scaled_bytes(v, plan) for v in group.outputs]
    # every input and output of the whole group, in its order (`Traffic`); a buffer whose
    # rows are written alone is not read
    reads = tuple(0 if v not in group.inputs
                  else owned_bytes(gathered[v], value_bytes(gathered[v].results[0])) if v in gathered
                  else input_bytes(v, windows)
                  for v in whole.inputs)
    in_place = updated_in_place(ops, whole.inputs)
    writes = tuple(replaced_bytes(v) if v in in_place else value_bytes(v) for v in whole.outputs)
    hoisted = set(gathered.values())
    body = KernelBody(f"group at {ops[0].name}", ops[0], tuple(op for op in group.ops if op not in hoisted),
                      tuple(inputs), tuple(group.outputs), tuple(sizes), lambda v: scaled_bytes(v, plan), plan.count)
    return body, reads, writes, first_tile_reads(whole.inputs, plan, windows, gathered)


def first_tile_reads(inputs: Sequence[SSAValue], plan: TilePlan, windows: dict[SSAValue, Window],
                     gathered: dict[SSAValue, GatherOp]) -> tuple[int, ...]:
    """Per input, the bytes the first tile of a tile loop loads of it (`rdu-insert-dma`:
    a tiled input's window, DMA'd in the loop; a gathered table's rows for the tile):
    0 for an input loaded once before the loop, and for every input of a kernel of one
    tile. The cost model pays them in the kernel's fill (`KernelWork.first_tile_s`)."""
    if plan.count <= 1:
        return (0,) * len(inputs)
    read = [gathered[v].results[0] if v in gathered else v for v in inputs]
    return tuple(scaled_bytes(v, plan, windows) if v in plan.tiled else 0 for v in read)


@dataclass(frozen=True)
class Traffic:
    """A group as one kernel before its bytes have tiers: its work on the target
    (`planned_work`) and the bytes it reads of each input and writes of each output,
    in `make_group`'s order. `seconds` times it, as the cost model's `kernel_time`,
    with some of them in DDR: one timing of a kernel for `rdu-fuse`'s weighing and
    for `rdu-place-saved`'s price of a placement."""

    work: KernelWork
    reads: tuple[int, ...]
    writes: tuple[int, ...]
    first: tuple[int, ...] = ()
    """Per input, the bytes the first tile of its tile loop reads (`first_tile_reads`)."""

    def seconds(self, target: Target, ddr_reads: Container[int] = (), ddr_writes: Container[int] = (),
                looped: bool = False, tile_loop: bool = False) -> float:
        """Its modeled seconds with the inputs at `ddr_reads` and the outputs at
        `ddr_writes` (positions) in DDR, the rest in HBM. `tile_loop`: as the cost
        model times the kernel `rdu-tile` lowers (`kernel_work`), its first tile's
        loads in its fill, by their tier (`first_tile_reads`); without it, each tier's
        bytes whole at its bandwidth (`rdu-fuse`'s weighing of a group)."""
        moved = {"hbm->sram": 0, "ddr->sram": 0, "sram->hbm": 0, "sram->ddr": 0}
        first = {"hbm": 0, "ddr": 0}
        for at, n in enumerate(self.reads):
            moved["ddr->sram" if at in ddr_reads else "hbm->sram"] += n
            if tile_loop and self.first:
                first["ddr" if at in ddr_reads else "hbm"] += self.first[at]
        for at, n in enumerate(self.writes):
            moved["sram->ddr" if at in ddr_writes else "sram->hbm"] += n
        tiers = {k: n for k, n in moved.items() if n}
        return kernel_time(with_bytes(self.work, tiers, target, first), target, looped).modeled_time_s


def group_traffic(ops: Sequence[Operation], target: Target) -> Traffic | None:
    """The ops' `Traffic` as one kernel; None when no tile plan fits or the mapper finds no room."""
    mapped = _mapped(ops, target)
    return None if mapped is None else mapped[2]


def _mapped(ops: Sequence[Operation], target: Target) -> tuple[KernelBody, KernelMapping, Traffic] | None:
    """The ops as one kernel: its body, its mapping and its `Traffic` (remembered)."""
    found: tuple[KernelBody, KernelMapping, Traffic] | None = _remembered(
        "mapped", ops, target, lambda: _map_group(ops, target))
    return found


def _map_group(ops: Sequence[Operation], target: Target) -> tuple[KernelBody, KernelMapping, Traffic] | None:
    planned = _group_plan(ops, target)
    if planned is None:
        return None
    body, reads, writes, first = planned
    try:
        mapping = map_body(body, target)
    except LocatedError:
        return None
    return body, mapping, Traffic(planned_work(body, mapping, target), reads, writes, first)


@dataclass(frozen=True)
class Weighed:
    """A group as the mapper and the cost model see it: its modeled seconds (inf when
    it does not fit or has no room), the same as a later iteration of a kernel loop
    (no launch, no DMA start-up), and the op boundaries worth splitting it at."""

    seconds: float
    boundaries: tuple[int, ...]
    looped_seconds: float = float("inf")


def weigh(ops: Sequence[Operation], target: Target) -> Weighed:
    """The group's modeled time as one kernel and its candidate split points (module docstring)."""
    found: Weighed = _remembered("weigh", ops, target, lambda: _weigh(ops, target))
    return found


def _weigh(ops: Sequence[Operation], target: Target) -> Weighed:
    mapped = _mapped(ops, target)
    if mapped is None:
        return Weighed(float("inf"), (len(ops) // 2,))
    body, mapping, traffic = mapped
    starts = [min(s.op for s in mapping.stages if s.section == n) for n in range(1, mapping.sections)]
    return Weighed(traffic.seconds(target), (*starts, *balance_points(body, target), *index_cuts(ops)),
                   traffic.seconds(target, looped=True))


def index_cuts(ops: Sequence[Operation]) -> tuple[int, ...]:
    """The boundaries before each gather that reads its table by an indexed DMA only
    once the ops computing its indices are a kernel before it (`gathered_inputs` of
    the ops from it on, not of the whole): a rank-local row of a vocab-parallel
    lookup, an index clamped or offset in the model's code."""
    whole = set(gathered_inputs(make_group(ops)).values())
    return tuple(at for at, op in enumerate(ops) if isinstance(op, GatherOp) and op not in whole and at > 0
                 and op in gathered_inputs(make_group(ops[at:])).values())


def balance_points(body: KernelBody, target: Target) -> tuple[int, ...]:
    """The boundaries before and after the op where the stages' work reaches half the group's."""
    works = body_stages(body, target)
    total = sum(w.seconds for w in works)
    done = 0.0
    for work in works:
        done += work.seconds
        if done >= total / 2:
            return (work.index, work.index + 1)
    return (len(body.ops) // 2,)


def split_if_mapped_badly(ops: list[Operation], target: Target, looped: bool = False) -> list[list[Operation]]:
    """The group, or its parts when it maps badly (module docstring), each part weighed again.

    `looped`: the group is the whole body of a layer whose calls run as one kernel
    loop while it stays one kernel (`kernel_looping.py`): every call but the first
    pays no launch and no DMA start-up, and split it would pay both for each part
    every call. So the whole is weighed as a loop iteration against its parts."""
    if len(ops) < 2:
        return [ops]
    whole = weigh(ops, target)
    whole_s = whole.looped_seconds if looped else whole.seconds
    best: tuple[float, int] | None = None
    for cut in sorted({b for b in whole.boundaries if 0 < b < len(ops)}):
        seconds = weigh(ops[:cut], target).seconds + weigh(ops[cut:], target).seconds
        if best is None or seconds < best[0]:
            best = (seconds, cut)
    if best is None or not best[0] < whole_s:
        return [ops]
    cut = best[1]
    return split_if_mapped_badly(ops[:cut], target) + split_if_mapped_badly(ops[cut:], target)


RECOMPUTED = (MapOp, ReshapeOp, BroadcastOp, IotaOp, arith.ConstantOp)
"""Ops cheap enough that a kernel recomputes their value from the function's
arguments rather than reading it from another kernel (`recompute_in_readers`)."""


def recomputed_chain(value: OpResult, block: Block, order: dict[Operation, int]) -> list[Operation] | None:
    """The ops that compute `value` from `block`'s arguments alone (or from nothing),
    in block order (`order`), when each is one of RECOMPUTED; None otherwise."""
    chain: set[Operation] = set()
    pending: list[SSAValue] = [value]
    while pending:
        read = pending.pop()
        if isinstance(read, BlockArgument):
            if read.owner is not block:
                return None
            continue
        assert isinstance(read, OpResult)
        op = read.op
        if op in chain:
            continue
        if not isinstance(op, RECOMPUTED) or op.parent is not block:
            return None
        chain.add(op)
        pending.extend(op.operands)
    return sorted(chain, key=order.__getitem__)


def _indexes(value: SSAValue, segment: Sequence[Operation]) -> bool:
    """Whether `segment` gathers or scatters by `value`: an index a kernel reads as an
    input is an indexed DMA's rows; one it computes, a stage the table streams
    through (`index_cuts` made it another kernel's for that)."""
    members = set(segment)
    return any(isinstance(use.operation, GatherOp | ScatterOp) for use in value.uses if use.operation in members)


def _is_window_kernel(segment: Sequence[Operation]) -> bool:
    """A segment of windows of arguments alone (`split_off_windows`: a `tier.view`)."""
    return all(isinstance(op, ReshapeOp | SliceOp) for op in segment)


def _place_before_first_reader(chain: list[Operation], segment: list[Operation], block: Block) -> None:
    """Move `chain` (ops of `segment`, or new ones) to just before the first other op of
    `segment` that reads one of its results, in the segment and in the block: where a
    kernel recomputes it, and where the kernel that computed it first does too, so
    that kernels of one layer's ops are alike op for op."""
    members = set(chain)
    rest = [op for op in segment if op not in members]
    results = {r for op in chain for r in op.results}
    first = next((at for at, op in enumerate(rest) if any(v in results for v in op.operands)), None)
    if first is None:
        return
    for op in chain:
        if op.parent is not None:
            op.detach()
        block.insert_op_before(op, rest[first])
    segment[:] = [*rest[:first], *chain, *rest[first:]]


def _clone_into(chain: list[Operation], segment: list[Operation], block: Block) -> list[Operation]:
    """Clones of `chain` placed before their first reader in `segment`, which reads them."""
    mapper: dict[SSAValue, SSAValue] = {}
    clones = [op.clone(value_mapper=mapper) for op in chain]
    members = set(segment)
    for value in list(mapper):
        value.replace_uses_with_if(mapper[value], lambda use: use.operation in members)
    _place_before_first_reader(clones, segment, block)
    return clones


def _undo_clones(clones: list[Operation], chain: list[Operation]) -> None:
    for clone, op in zip(reversed(clones), reversed(chain)):
        for new, old in zip(clone.results, op.results):
            new.replace_all_uses_with(old)
        clone.detach()
        clone.erase()


def recompute_in_readers(segments: list[list[Operation]], block: Block, target: Target) -> list[list[Operation]]:
    """The segments, each reading no value another segment computes from the function's
    arguments alone by cheap ops (RECOMPUTED: a rotary table's reshape, an `arange`, a
    mask made from an input): it recomputes the value itself, where it still maps, in
    place of a write to HBM by one kernel and a read by the other. So the kernels of a
    period of layers that CSE left one mask or table to share are alike, each layer's
    its own. An original no segment reads any more is dropped. A chain with a value
    the function returns (an optimizer's step count) is left: its kernel writes it
    anyway, and the update is written over its global there (`rdu-insert-dma`)."""
    home = {op: n for n, segment in enumerate(segments) for op in segment}
    order = {op: at for at, op in enumerate(block.ops)}
    returned = set(block.last_op.operands) if block.last_op is not None else set()
    cloned: dict[SSAValue, list[Operation]] = {}
    for n, segment in enumerate(segments):
        reads = dict.fromkeys(v for op in segment for v in op.operands
                              if isinstance(v, OpResult) and home.get(v.op, n) != n)
        for value in reads:
            chain = None if _indexes(value, segment) else recomputed_chain(value, block, order)
            if chain is None or any(home.get(op, n) == n for op in chain) or any(
                    _is_window_kernel(segments[home[op]]) for op in chain) or any(
                    r in returned for op in chain for r in op.results):
                continue  # a value the function returns (a global's update) is written anyway
            clones = _clone_into(chain, segment, block)
            if weigh(segment, target).seconds == float("inf"):
                _undo_clones(clones, chain)
                segment[:] = [op for op in segment if op not in set(clones)]
                continue
            cloned[value] = chain
            for clone, op in zip(clones, chain, strict=True):  # a later reader's chain may run through a clone
                home[clone], order[clone] = n, order[op]
    for n, segment in enumerate(segments):  # the originals, placed as their clones are
        for read in dict.fromkeys(v for op in segment for v in op.operands if v in cloned):
            if all(home.get(op) == n for op in cloned[read]):
                _place_before_first_reader(cloned[read], segment, block)
    chained = {op for chain in cloned.values() for op in chain}
    dead = [op for op in reversed(list(block.ops)) if op in chained and not any(r.uses for r in op.results)]
    for op in dead:
        op.detach()
        op.erase()
    gone = set(dead)
    return [kept for segment in segments if (kept := [op for op in segment if op not in gone])]


def outline_kernel(ops: Sequence[Operation], name: str) -> KernelOp:
    """Move `ops` into a new `rdu.kernel` placed where the first of them was."""
    group = make_group(ops)
    block = Block(arg_types=[v.type for v in group.inputs])
    kernel = KernelOp(name, group.inputs, [v.type for v in group.outputs], Region(block))
    kernel.location = ops[0].location
    key = _segment_key(ops)
    if key is not None:
        set_layer(kernel, key)
    members = set(ops)
    first = ops[0]
    parent = first.parent_block()
    assert parent is not None
    parent.insert_op_before(kernel, first)
    for result, new in zip(group.outputs, kernel.outputs):
        result.replace_uses_with_if(new, lambda use: use.operation not in members)
        new.name_hint = result.name_hint
    for value, arg in zip(group.inputs, block.args):
        value.replace_uses_with_if(arg, lambda use: use.operation in members)
        arg.name_hint = value.name_hint
    for op in ops:
        op.detach()
        block.add_op(op)
    terminator = YieldOp(*group.outputs)
    terminator.location = ops[-1].location
    block.add_op(terminator)
    return kernel


@dataclass(frozen=True)
class RduFuse(RduPass):
    """Group dataflow ops into kernels (level 0: none, 1: patterns, 2: whole layers)."""

    name = "rdu-fuse"
    accepts: ClassVar[tuple[Level, ...]] = TENSOR_LEVELS
    on_tensors: ClassVar[bool] = True
    produces: ClassVar[Level] = Level.KERNELS

    level: int = 2
    """0 = every op its own kernel; 1 = pattern fusion; 2 = up to whole layers."""

    def check_options(self) -> None:
        if self.level not in (0, 1, 2):
            raise ValueError(f"rdu-fuse: level must be 0, 1 or 2, got {self.level}")

    def rewrite(self, ctx: Context, op: ModuleOp) -> None:
        target = module_target(op, self.target)
        _ANSWERS.clear()
        try:
            self._fuse(op, target)
        finally:
            _ANSWERS.clear()

    def _fuse(self, op: ModuleOp, target: Target) -> None:
        for function in functions(op):
            if self.level > 0:
                sink_to_first_use(function)
            segments: list[list[Operation]] = []
            runs = runs_between_calls(function.body.block)
            looped = target.kernel_looping and calls_of(function) > 1 and len(runs) == 1
            with unchanged():  # the function's groups are weighed before any is outlined
                for run in runs:
                    for segment in self.segments(run, target, looped):
                        segments += split_off_windows(segment, function.args) if self.level > 0 else [segment]
            if self.level > 0:
                segments = recompute_in_readers(segments, function.body.block, target)
            for index, segment in enumerate(segments):
                outline_kernel(segment, f"k{index}")

    def segments(self, body: list[Operation], target: Target, looped: bool = False) -> list[list[Operation]]:
        """The kernels to form from a run of ops, by level. `looped`: the run is the
        body of a layer whose calls loop when it is one kernel (`split_if_mapped_badly`)."""
        if self.level == 0:
            return unfused_segments(body)
        segments = pattern_segments(body, target)
        if self.level == 2:
            segments = merged_segments(segments, target)
        looped = looped and len(segments) == 1
        return [part for segment in segments for part in split_if_mapped_badly(segment, target, looped)]


def unfused_segments(body: list[Operation]) -> list[list[Operation]]:
    """-O0's kernels: every op its own, but a 16-bit linear layer's product widened
    to f32 and its bias add (`bias_adds.widened_16_bit`: one ATen `addmm`, eager's
    16-bit GEMM rounded once, imported as two ops), one kernel when the add follows
    the product. In one kernel the runtime runs the pair as that `addmm`
    (`rducc.runtime.epilogues`); apart, the f32 product summed in another order
    than eager's rounds a bf16 tie the other way. f32 and f64 products stay alone."""
    segments: list[list[Operation]] = []
    for op in body:
        product = segments[-1][0] if segments else None
        if product is not None and len(segments[-1]) == 1 and isinstance(product, Product) \
                and widened_16_bit(product) is not None and bias_add_of(product) is op:
            segments[-1].append(op)
        else:
            segments.append([op])
    return segments


def runs_between_calls(block: Block) -> list[list[Operation]]:
    """The block's dataflow ops in runs that no `func.call` (an outlined layer,
    lowered on its own) nor `rdu.host_call` (run on the host, a kernel
    boundary of its own) interrupts: a kernel never spans either."""
    runs: list[list[Operation]] = [[]]
    for op in block.ops:
        if isinstance(op, func.CallOp | HostCallOp):
            runs.append([])
        elif not isinstance(op, func.ReturnOp | KernelOp):
            runs[-1].append(op)
    return [run for run in runs if run]
