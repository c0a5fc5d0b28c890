"""`rdu-sram-alloc`: give every SRAM buffer an offset (level 4, placed).

The SRAM of a socket is one byte arena. Every `tier.alloc` in SRAM (all its
rotating copies) and every value defined inside a `tier.compute` body (values
the body yields live in its output buffers) gets an offset such that no two
buffers live at the same time overlap and everything fits the target.

A reshape, transpose or slice of a body value gets its operand's bytes (the
two values share one buffer, live until the later one's last reader): the
same elements (a slice: some of them, at an offset and with strides) read in
another shape or order, which the chip reads by address and the runtime as a
NumPy view; nothing copies them (`operand_views`, `tier.views_operand_bytes`
for the verifier and the runtime). A slice so placed keeps its whole operand
live to its own last reader, where a copy would hold only its own bytes.

A product's bias add runs in the product's epilogue (`rducc.dialects.bias_adds`:
the chip's pipeline, the runtime's `addmm`), which reads the product's
operands while it writes the add's value: those operands stay live up to the
add, so the add never takes their bytes. A function whose buffers do not fit
with these two rules is placed again without them (`PLACEMENT_RULES`).

Live ranges are intervals over the program order of @forward (a loop's body
once: every iteration reuses the same buffers); buffers of different kernels
never overlap in time, so each group of overlapping intervals is placed on
its own. Placement is greedy by size, lowest fitting offset first (a large
group's fit found in a segment tree of the bytes in use over its live
positions, `sram_first_fit`, not by walking every buffer placed), with
offsets aligned to SRAM_ROW_BYTES bytes; a group that this order fragments
beyond the capacity is placed again earliest-first, then longest-lived
first, and the first order that fits is kept (`PLACEMENT_ORDERS`). The pass records on @forward:

    tier.sram_capacity      the target's SRAM bytes (the verifiers check it)
    tier.sram_peak          highest byte used
    tier.sram_lower_bound   the largest total of (aligned) sizes live at once

A function that calls an outlined layer (`func.call`) holds no SRAM buffer
across the call (an error otherwise); the callee's buffers are placed on
their own, from offset 0, and the caller's recorded peak and lower bound
include its callees'. A buffer live around a loop or across a kernel covers
the positions of the loop's and the kernel's ops, so nothing inside them is
placed over it. `tier.alloc`'s verifier checks the plan by the same rules
(`liveness.ops_while_live`), whole-program: what a called function places
must not meet a buffer live across the call.

When the peak exceeds the capacity the error says by how much and lists the
buffers live at the busiest point.
"""

from __future__ import annotations

from bisect import bisect_left, insort
from collections.abc import Callable
from dataclasses import dataclass, field
from itertools import accumulate
from typing import ClassVar

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import IntegerAttr, ModuleOp, i64
from xdsl.ir import Operation, SSAValue

from rducc.diagnostics import LocatedError
from rducc.dialects import contracts
from rducc.dialects.bias_adds import epilogue_reads
from rducc.dialects.contracts import LOWERED_LEVELS, Level, module_target
from rducc.dialects.liveness import live_end
from rducc.dialects.program import callees_first
from rducc.dialects.rdu.dataflow import YieldOp
from rducc.dialects.shapes import value_bytes
from rducc.dialects.streamed import streamed_views
from rducc.dialects.tier import (
    OPERAND_VIEW_OPS,
    AllocOp,
    BufferType,
    ComputeOp,
    DeallocOp,
    Tier,
)
from rducc.model.kernel_model import aligned
from rducc.passes.common import RduPass
from rducc.passes.sram_first_fit import first_fit


@dataclass
class SramBuffer:
    """One thing to place: an SRAM alloc or a compute body value."""

    op: Operation
    size: int
    start: int
    end: int
    offset: int = -1
    views: list[Operation] = field(default_factory=list)
    """Body values placed on this buffer's bytes (`operand_views`)."""

    @property
    def label(self) -> str:
        value = self.op.results[0]
        name = f"%{value.name_hint}" if value.name_hint else self.op.name
        return f"{name} ({value.type}, {self.size} bytes)"


@dataclass(frozen=True)
class Rules:
    """Which body values share bytes and how long operands stay live."""

    view_ops: frozenset[str] = OPERAND_VIEW_OPS
    """The ops placed on their operand's bytes (`operand_views`)."""
    epilogues: bool = True
    """A product's operands live up to its bias add (`bias_adds.epilogue_reads`)."""


PLACEMENT_RULES: tuple[Rules, ...] = (Rules(), Rules(OPERAND_VIEW_OPS - {"rdu.slice"}, epilogues=False))
"""The rules a function's buffers are collected with, in turn: slices on their
operand's bytes and products' operands live to their bias adds first (fewer
copies at run time, maybe more bytes live); without them where that does not
fit the capacity."""


def collect_buffers(function: func.FuncOp, rules: Rules = Rules()) -> list[SramBuffer]:
    """Every SRAM buffer of the function with its live interval in program order,
    by `rules`."""
    position: dict[Operation, int] = {}
    for index, op in enumerate(function.body.walk()):
        position[op] = index
    end_of_function = len(position)
    buffers: list[SramBuffer] = []
    for op in position:
        if isinstance(op, AllocOp):
            buffer = op.result.type
            assert isinstance(buffer, BufferType)
            if buffer.tier.data != Tier.SRAM:
                continue
            frees = [position[u.operation] for u in op.result.uses if isinstance(u.operation, DeallocOp)]
            last = max(frees, default=end_of_function)
            buffers.append(SramBuffer(op, aligned(op.reserved_bytes), position[op], last))
        elif isinstance(op, ComputeOp):
            buffers.extend(_body_buffers(op, position, rules))
    return buffers


def _body_buffers(compute: ComputeOp, position: dict[Operation, int], rules: Rules) -> list[SramBuffer]:
    """The body values not yielded, each a buffer; a streamed view (the repeated K/V
    heads a product reads by address, `rducc.dialects.streamed`) is none: its source
    stays live until the view's last reader instead. Nor is a reshape, transpose or
    slice of a body value (`operand_views`): it shares its operand's buffer, live until
    the view's last reader too. A product's operands stay live up to its bias add
    (`Rules.epilogues`)."""
    block = compute.body.block
    terminator = block.last_op
    yielded = set(terminator.operands) if isinstance(terminator, YieldOp) else set()
    body = [op for op in block.ops if not isinstance(op, YieldOp)]
    views = streamed_views(body, yielded)
    ends: dict[SSAValue, int] = {}
    for op in body:
        if op.results and op.results[0] not in yielded:
            ends[op.results[0]] = live_end(op, block, position, op.results[:1])
    for product, bias_add in (epilogue_reads(body) if rules.epilogues else {}).items():
        for operand in product.operands:
            if operand in ends:
                ends[operand] = max(ends[operand], position[bias_add])
    shared = operand_views(body, yielded, frozenset(views), rules.view_ops)
    for view, source in views.items():
        owner = source.owner
        held = shared[owner].results[0] if isinstance(owner, Operation) and owner in shared else source
        if held in ends:
            ends[held] = max(ends[held], ends[view])
    for view_op, holder in shared.items():
        ends[holder.results[0]] = max(ends[holder.results[0]], ends[view_op.results[0]])
    result: dict[Operation, SramBuffer] = {}
    for op in block.ops:
        if isinstance(op, YieldOp) or not op.results or op.results[0] in yielded or op.results[0] in views:
            op.attributes.pop(contracts.BODY_OFFSET, None)
        elif op in shared:
            result[shared[op]].views.append(op)
        else:
            result[op] = SramBuffer(op, aligned(value_bytes(op.results[0])), position[op], ends[op.results[0]])
    return list(result.values())


def operand_views(body: list[Operation], yielded: set[SSAValue], streamed: frozenset[SSAValue],
                  view_ops: frozenset[str] = OPERAND_VIEW_OPS) -> dict[Operation, Operation]:
    """Reshapes, transposes and slices (`view_ops`) placed on their operand's bytes,
    each mapped to the body op whose buffer holds them (through chains of such
    views): the operand a body value with a buffer of its own, neither value
    yielded (an output buffer) nor streamed. SSA values are written once, so the
    bytes hold the operand's elements for both; the runtime reads the view as a
    NumPy view of the operand (`rducc.runtime.layout_views`), the chip by address."""
    shared: dict[Operation, Operation] = {}
    inside = set(body)
    for op in body:
        if op.name not in view_ops or op.results[0] in yielded or op.results[0] in streamed:
            continue
        source = op.operands[0]
        owner = source.owner
        if not isinstance(owner, Operation) or owner not in inside or source in yielded or source in streamed:
            continue
        if op.name != "rdu.slice" and value_bytes(source) != value_bytes(op.results[0]):
            continue
        shared[op] = shared.get(owner, owner)
    return shared


def _overlapping_groups(buffers: list[SramBuffer]) -> list[list[SramBuffer]]:
    """Split into groups whose intervals chain together; groups never coexist."""
    groups: list[list[SramBuffer]] = []
    reach = -1
    for buffer in sorted(buffers, key=lambda b: (b.start, b.end)):
        if not groups or buffer.start > reach:
            groups.append([])
        groups[-1].append(buffer)
        reach = max(reach, buffer.end)
    return groups


PLACEMENT_ORDERS: tuple[tuple[str, Callable[[SramBuffer], tuple[int, ...]]], ...] = (
    ("largest first", lambda b: (-b.size, b.start)),
    ("earliest first", lambda b: (b.start, -b.size)),
    ("longest-lived first", lambda b: (b.start - b.end, -b.size)),
)
"""The orders a group's buffers are placed in, first fit each: the first that
fits the capacity is kept (the largest-first order unless it does not fit)."""


def _place_group(group: list[SramBuffer], capacity: int) -> None:
    """Offsets for a group of buffers whose live ranges chain together: greedy,
    lowest fitting offset first, in the first of `PLACEMENT_ORDERS` whose peak
    fits `capacity` (else the order of the lowest peak). Greedy placement
    fragments: the largest-first order can need more than the most bytes live
    at once where another order does not."""
    best: tuple[int, list[int]] | None = None
    for _, order in PLACEMENT_ORDERS:
        peak = _place_in_order(group, order)
        if best is None or peak < best[0]:
            best = (peak, [b.offset for b in group])
        if peak <= capacity:
            return
    assert best is not None
    for buffer, offset in zip(group, best[1]):
        buffer.offset = offset


TREE_FROM = 512
"""The buffers in a group from which the segment tree places it (the walk, quadratic,
is cheaper below: 305 buffers 5 ms against 16, 653 about even, 2,721 217 ms against
106, CPU, a deep AdamW step's update group)."""


def _place_in_order(group: list[SramBuffer], order: Callable[[SramBuffer], tuple[int, ...]]) -> int:
    """Place `group` first fit in `order`; the highest byte used.

    Each buffer goes at the lowest offset whose bytes meet none of a buffer placed
    before it and live with it. A group of `TREE_FROM` buffers or more finds it in
    `sram_first_fit`'s segment tree (the bytes in use kept as merged intervals over
    the live positions: no walk of every placed buffer, near-linear in the buffers);
    a smaller one by the walk, cheaper there. Both give the same offsets."""
    ordered = sorted(group, key=order)
    if len(ordered) < TREE_FROM or any(b.start > b.end for b in ordered):
        _walk_in_order(ordered)
    else:
        for buffer, offset in zip(ordered, first_fit([(b.start, b.end, b.size) for b in ordered])):
            buffer.offset = offset
    return max((b.offset + b.size for b in group), default=0)


def _walk_in_order(ordered: list[SramBuffer]) -> None:
    """The same first fit by walking the placed buffers in offset order, skipping those
    not live with the new one (the rule as written; for live intervals that end before
    they start, which the segment tree cannot hold)."""
    placed: list[SramBuffer] = []  # by offset; equal offsets in placement order
    for buffer in ordered:
        offset = 0
        for other in placed:
            if other.start > buffer.end or buffer.start > other.end:
                continue  # not live at the same time
            if offset + buffer.size <= other.offset:
                break
            offset = max(offset, other.offset + other.size)
        buffer.offset = offset
        insort(placed, buffer, key=_offset)


def _offset(buffer: SramBuffer) -> int:
    return buffer.offset


def max_live(buffers: list[SramBuffer]) -> tuple[int, list[SramBuffer]]:
    """The largest total size live at one point (a buffer's start), and the buffers
    live there (the first such point): one sweep over the starts and ends."""
    spans = [b for b in buffers if b.start <= b.end]  # an empty interval is never live
    starts, ends = sorted(spans, key=_start), sorted(spans, key=_end)
    best, best_point, total, opened, closed = 0, None, 0, 0, 0
    for point in sorted({b.start for b in buffers}):
        while opened < len(starts) and starts[opened].start <= point:
            total += starts[opened].size
            opened += 1
        while closed < len(ends) and ends[closed].end < point:
            total -= ends[closed].size
            closed += 1
        if total > best:
            best, best_point = total, point
    if best_point is None:
        return 0, []
    return best, [b for b in buffers if b.start <= best_point <= b.end]


def _start(buffer: SramBuffer) -> int:
    return buffer.start


def _end(buffer: SramBuffer) -> int:
    return buffer.end


def _max_live_fast(groups: list[list[SramBuffer]]) -> tuple[int, list[SramBuffer]]:
    best, best_live = 0, []
    for group in groups:
        total, live = max_live(group)
        if total > best:
            best, best_live = total, live
    return best, best_live


def _exhausted(function: func.FuncOp, peak: int, capacity: int, live: list[SramBuffer]) -> LocatedError:
    where = next((b.op for b in live if isinstance(b.op.parent_op(), ComputeOp)), live[0].op)
    listing = "\n".join(f"  {b.label} at offset {b.offset}" for b in sorted(live, key=lambda b: -b.size))
    return LocatedError(
        where,
        f"SRAM exhausted: the buffers need {peak} bytes but the target has {capacity} "
        f"(over by {peak - capacity}); live at the peak:\n{listing}",
    )


def _calls_checked(
    function: func.FuncOp, buffers: list[SramBuffer], callee_peaks: dict[str, tuple[int, int]]
) -> list[tuple[int, int]]:
    """The (peak, lower bound) of each function `function` calls; a caller's SRAM
    buffer live across a call is an error, as the callee's offsets start at 0."""
    position = {op: index for index, op in enumerate(function.body.walk())}
    live_across = _live_across(buffers)
    found = []
    for call in position:
        if not isinstance(call, func.CallOp):
            continue
        name = call.callee.string_value()
        if name not in callee_peaks:
            raise LocatedError(call, f"rdu-sram-alloc: @{name} is not a function of this module with a body")
        if live_across(position[call]):  # the error names the first such buffer
            across = [b for b in buffers if b.start < position[call] < b.end]
            raise LocatedError(call, f"SRAM buffer {across[0].label} is live across the call of @{name}")
        found.append(callee_peaks[name])
    return found


def _live_across(buffers: list[SramBuffer]) -> Callable[[int], bool]:
    """Whether some buffer is live across a position (starts before it, ends after
    it): the latest end among the buffers started before it, by bisection."""
    by_start = sorted(buffers, key=_start)
    starts = [b.start for b in by_start]
    latest = list(accumulate((b.end for b in by_start), max))

    def across(point: int) -> bool:
        before = bisect_left(starts, point)
        return before > 0 and latest[before - 1] > point

    return across


def _placed(function: func.FuncOp, capacity: int) -> tuple[list[SramBuffer], list[list[SramBuffer]]]:
    """The function's buffers placed, with their groups: by the first of
    `PLACEMENT_RULES` that fits `capacity` (else the last)."""
    for rules in PLACEMENT_RULES:
        buffers = collect_buffers(function, rules)
        groups = _overlapping_groups(buffers)
        for group in groups:
            _place_group(group, capacity)
        if max((b.offset + b.size for b in buffers), default=0) <= capacity:
            break
    return buffers, groups


@dataclass(frozen=True)
class RduSramAlloc(RduPass):
    """Give every SRAM buffer an offset: no live overlaps, all within capacity."""

    name = "rdu-sram-alloc"
    accepts: ClassVar[tuple[Level, ...]] = LOWERED_LEVELS
    produces: ClassVar[Level] = Level.PLACED

    def rewrite(self, ctx: Context, op: ModuleOp) -> None:
        target = module_target(op, self.target)
        callee_peaks: dict[str, tuple[int, int]] = {}
        for function in callees_first(op):
            buffers, groups = _placed(function, target.sram_bytes)
            peak = max((b.offset + b.size for b in buffers), default=0)
            bound, live = _max_live_fast(groups)
            for callee_peak, callee_bound in _calls_checked(function, buffers, callee_peaks):
                peak, bound = max(peak, callee_peak), max(bound, callee_bound)
            if peak > target.sram_bytes:
                raise _exhausted(function, peak, target.sram_bytes, live or buffers)
            for buffer in buffers:
                if isinstance(buffer.op, AllocOp):
                    buffer.op.offset = IntegerAttr(buffer.offset, i64)
                else:
                    for value_op in (buffer.op, *buffer.views):
                        value_op.attributes[contracts.BODY_OFFSET] = IntegerAttr(buffer.offset, i64)
            function.attributes[contracts.SRAM_CAPACITY] = IntegerAttr(target.sram_bytes, i64)
            function.attributes[contracts.SRAM_PEAK] = IntegerAttr(peak, i64)
            function.attributes[contracts.SRAM_LOWER_BOUND] = IntegerAttr(bound, i64)
            callee_peaks[function.sym_name.data] = (peak, bound)
