"""What a group of ops needs on chip, and how it can be tiled to fit.

Shared by fusion (may these ops become one kernel?) and tiling (which tile
size?). A group is a sequence of dataflow ops with the values it reads from
outside (inputs) and the values used after it (outputs).

Tiling splits one *parallel dimension* of the whole group into tiles. The
candidates come from a union-find over tensor dimensions: each op joins the
dims of its operands and result that move together and blocks the ones that
do not, as the op's own dim map says (`OpFacts.dim_map`,
dialects/op_facts.py: a map's aligned dims, a matmul's M with its lhs rows and
N with its rhs columns, a transpose's permuted dims; reduced dims, a matmul's
K, a concat's dim, a reshape's merged dims blocked). A class with no blocked
member that appears once in every output is a loop the whole group can run
tile by tile.

The working set of a plan is what must sit in SRAM at once (each buffer
rounded up to the allocator's alignment, `SRAM_ROW_BYTES`): every input
(tiled inputs double-buffered when there is more than one tile), every
output tile, and the peak of the intermediate values live at one point.
Feasibility also counts whole PMUs (each buffer occupies
ceil(bytes / pmu_bytes) of them) and one PCU stage per compute op.

An input read only through static slices (`windowed_inputs`) comes on chip as
the window those slices read, not whole: its working set and its DMA are the
window's (`k_cache[i]` of a stacked cache moves one layer's cache).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from math import ceil

from xdsl.dialects.builtin import DenseArrayBase, IntegerType, TensorType
from xdsl.ir import Operation, SSAValue

from rducc.dialects.contracts import owned_bytes
from rducc.dialects.liveness import live_end
from rducc.dialects.op_facts import Dim as Fate
from rducc.dialects.op_facts import facts_of
from rducc.dialects.rdu.dataflow import GatherOp, KernelOp, SliceOp, YieldOp
from rducc.dialects.shapes import broadcast_shapes, value_bytes
from rducc.dialects.streamed import streamed_views, updated_in_place
from rducc.dialects.unchanged import remembered
from rducc.targets import SRAM_ROW_BYTES, Target

Dim = tuple[SSAValue, int]

def aligned(size: int) -> int:
    """`size` rounded up to the SRAM alignment (a whole number of SRAM rows)."""
    return -(-size // SRAM_ROW_BYTES) * SRAM_ROW_BYTES




def shape(value: SSAValue) -> tuple[int, ...]:
    tensor = value.type
    assert isinstance(tensor, TensorType)
    return tuple(tensor.get_shape())


# --------------------------------------------------------------------------
# Groups
# --------------------------------------------------------------------------


@dataclass
class Group:
    """An ordered run of ops with its boundary values."""

    ops: list[Operation]
    inputs: list[SSAValue]
    outputs: list[SSAValue]

    @cached_property
    def members(self) -> frozenset[Operation]:
        """The ops as a set, for membership tests (the list is for order)."""
        return frozenset(self.ops)


def make_group(ops: Sequence[Operation]) -> Group:
    """The group of `ops`: inputs defined outside, outputs used outside."""
    members = set(ops)
    inputs: dict[SSAValue, None] = {}
    outputs: dict[SSAValue, None] = {}
    for op in ops:
        for operand in op.operands:
            if operand.owner not in members:
                inputs.setdefault(operand)
        for result in op.results:
            if any(use.operation not in members for use in result.uses):
                outputs.setdefault(result)
    return Group(list(ops), list(inputs), list(outputs))


def kernel_group(kernel: KernelOp) -> Group:
    """The group of a kernel's body: its block arguments in, its yields out."""
    body = [op for op in kernel.body.block.ops if not isinstance(op, YieldOp)]
    terminator = kernel.body.block.last_op
    assert isinstance(terminator, YieldOp)
    return Group(body, list(kernel.body.block.args), list(terminator.values))


# --------------------------------------------------------------------------
# Dimension classes
# --------------------------------------------------------------------------


@dataclass
class DimClasses:
    """Union-find over (value, dim) with blocked classes."""

    parent: dict[Dim, Dim] = field(default_factory=dict)
    blocked: set[Dim] = field(default_factory=set)

    def find(self, dim: Dim) -> Dim:
        root = self.parent.setdefault(dim, dim)
        if root != dim:
            root = self.find(root)
            self.parent[dim] = root
        return root

    def join(self, a: Dim, b: Dim) -> None:
        ra, rb = self.find(a), self.find(b)
        if ra == rb:
            return
        self.parent[ra] = rb
        if ra in self.blocked:
            self.blocked.discard(ra)
            self.blocked.add(rb)

    def block(self, dim: Dim) -> None:
        self.blocked.add(self.find(dim))

    def block_all(self, value: SSAValue) -> None:
        for d in range(len(shape(value))):
            self.block((value, d))

    def is_blocked(self, dim: Dim) -> bool:
        return self.find(dim) in self.blocked


def _add_op(classes: DimClasses, op: Operation) -> None:
    """Join the dims the op's dim map moves together; block the ones it does not."""
    facts = facts_of(op)
    if facts is None:  # a constant: never tiled
        for value in (*op.operands, *op.results):
            if isinstance(value.type, TensorType):
                classes.block_all(value)
        return
    if not op.results:
        return
    result = op.results[0]
    dims = facts.dim_map()
    for value, dests in zip(op.operands, dims.operands):
        for d, dest in enumerate(dests):
            if isinstance(dest, int):
                classes.join((value, d), (result, dest))
            elif dest is not Fate.BROADCAST:
                classes.block((value, d))
    for j in dims.blocked:
        classes.block((result, j))


def dim_classes(group: Group) -> DimClasses:
    classes = DimClasses()
    for op in group.ops:
        _add_op(classes, op)
    return classes


# --------------------------------------------------------------------------
# Plans
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class TilePlan:
    """One parallel dim split into `count` tiles of `size`; count 1 is no loop."""

    size: int
    count: int
    tiled: dict[SSAValue, int]
    """The tiled dim of every value that has one."""


def _values(group: Group) -> list[SSAValue]:
    seen: dict[SSAValue, None] = {v: None for v in group.inputs}
    for op in group.ops:
        for r in op.results:
            if isinstance(r.type, TensorType):
                seen.setdefault(r)
    return list(seen)


def _gathered_table_dims(group: Group) -> set[tuple[SSAValue, int]]:
    """The dims of each gathered input's rows that come from its table, not from its
    indices: an indexed DMA (`tier.gather`) reads whole table rows, so a tile loop
    may cut the rows only along the indices' dims."""
    dims: set[tuple[SSAValue, int]] = set()
    for gather in gathered_inputs(group).values():
        window = broadcast_shapes([shape(index) for index in gather.indices])
        rows = gather.results[0]
        first = len(window) if window is not None else 0
        dims.update((rows, d) for d in range(first, len(shape(rows))))
    return dims


def candidate_loops(group: Group) -> list[tuple[int, dict[SSAValue, int]]]:
    """(extent, value -> dim) of every class the whole group can be tiled along (not
    one that cuts a gathered input's rows along its table's dims)."""
    classes = dim_classes(group)
    whole_rows = _gathered_table_dims(group)
    members: dict[Dim, dict[SSAValue, int]] = {}
    doubled: set[Dim] = set()
    for value in _values(group):
        for d in range(len(shape(value))):
            root = classes.find((value, d))
            if value in members.setdefault(root, {}):
                doubled.add(root)
            members[root][value] = d
    loops = []
    for root, dims in members.items():
        if root in classes.blocked or root in doubled or any(item in whole_rows for item in dims.items()):
            continue
        if not all(v in dims for v in group.outputs):
            continue
        extent = shape(root[0])[root[1]]
        if extent > 1:
            loops.append((extent, dims))
    loops.sort(key=lambda loop: (-loop[0], sorted(str(shape(v)) for v in loop[1])))
    return loops


def divisors(n: int) -> list[int]:
    """Every divisor of n, largest first."""
    small = [d for d in range(1, int(n**0.5) + 1) if n % d == 0]
    return sorted({*small, *(n // d for d in small)}, reverse=True)


def tile_sizes(extent: int, lanes: int) -> list[int]:
    """Tile sizes to try, largest first: divisors, lane multiples before others."""
    divisors_ = divisors(extent)
    aligned = [d for d in divisors_ if d % lanes == 0 or d == extent]
    return aligned + [d for d in divisors_ if d not in aligned]


@dataclass(frozen=True)
class Window:
    """The part of an input a kernel reads: element `offsets + i * strides` for i < `sizes`."""

    offsets: tuple[int, ...]
    sizes: tuple[int, ...]
    strides: tuple[int, ...]

    def element_count(self) -> int:
        count = 1
        for size in self.sizes:
            count *= size
        return count

    def rebased(self, slice_op: SliceOp) -> tuple[list[int], list[int]]:
        """The offsets and strides of `slice_op` (a reader of this window) within the window."""
        offsets = [(o - w) // s for o, w, s in zip(_slice_ints(slice_op.offsets), self.offsets, self.strides)]
        strides = [t // s for t, s in zip(_slice_ints(slice_op.strides), self.strides)]
        return offsets, strides


def _slice_ints(attr: DenseArrayBase[IntegerType]) -> tuple[int, ...]:
    return tuple(int(v) for v in attr.get_values())


def slice_window(op: SliceOp) -> Window:
    """The window one static slice reads of its input."""
    return Window(_slice_ints(op.offsets), shape(op.result), _slice_ints(op.strides))


def _slice_window(users: Sequence[SliceOp], whole: tuple[int, ...]) -> Window:
    """The window a set of slices reads: one slice's own (strides included), else their
    bounding box (stride 1)."""
    if len(users) == 1:
        return slice_window(users[0])
    starts = [min(_slice_ints(op.offsets)[d] for op in users) for d in range(len(whole))]
    ends = [
        max(_slice_ints(op.offsets)[d] + (shape(op.result)[d] - 1) * _slice_ints(op.strides)[d] + 1 for op in users)
        for d in range(len(whole))
    ]
    return Window(tuple(starts), tuple(e - b for b, e in zip(starts, ends)), (1,) * len(whole))


def windowed_inputs(group: Group) -> dict[SSAValue, Window]:
    """Inputs read only by static `rdu.slice`s that together read less than the whole
    value, with the window they read: only that window need come on chip."""
    result: dict[SSAValue, Window] = {}
    for value in group.inputs:
        users = [use.operation for use in value.uses]
        if not users or not all(isinstance(op, SliceOp) and op in group.members for op in users):
            continue
        whole = shape(value)
        window = _slice_window([op for op in users if isinstance(op, SliceOp)], whole)
        partial = window.sizes != whole or any(stride != 1 for stride in window.strides)
        if window.element_count() > 0 and partial:
            result[value] = window
    return result


def input_bytes(value: SSAValue, windows: dict[SSAValue, Window]) -> int:
    """Bytes of an input on chip: its window's when it has one, else the whole value."""
    window = windows.get(value)
    full = value_bytes(value)
    if window is None:
        return full
    count = 1
    for size in shape(value):
        count *= size
    return full // max(count, 1) * window.element_count()


def scaled_bytes(value: SSAValue, plan: TilePlan, windows: dict[SSAValue, Window] | None = None) -> int:
    """Bytes of one tile of `value` under `plan` (its window's when it has one)."""
    full = input_bytes(value, windows or {})
    if value in plan.tiled:
        return full // plan.count
    return full


def gathered_inputs(group: Group) -> dict[SSAValue, GatherOp]:
    """Inputs read only as the source of a gather from dim 0 (any number of
    index tensors) whose indices are inputs too.

    Such a source stays off chip, however large (an embedding table; the
    logits a loss reads each row's target from, `logits[rows, targets]`): an
    indexed DMA (`tier.gather`) brings in just the gathered elements, so the
    kernel tiles like its indices and result.
    """
    inputs = set(group.inputs)
    result: dict[SSAValue, GatherOp] = {}
    for value in group.inputs:
        users = [use.operation for use in value.uses if use.operation in group.members]
        if len(users) == 1 and isinstance(users[0], GatherOp):
            gather = users[0]
            if (
                gather.source == value
                and gather.dim.value.data == 0
                and all(index in inputs and index != value for index in gather.indices)
            ):
                result[value] = gather
    return result


@dataclass(frozen=True)
class InputRead:
    """What one run of a kernel reads of an input from off chip, as `rdu-insert-dma`
    moves it: `bytes`, and whether every row (run of its last dim) is read alike
    (`by_rows`: read whole, by a gather along dim 0 whose selections are each equally
    likely, or by a window spanning all but the last dim), so that a share of its rows
    held in HBM serves that share of the read."""

    bytes: int
    by_rows: bool


def input_reads(group: Group) -> dict[SSAValue, InputRead]:
    """Each input's `InputRead`: a gathered input's rows (an expert-parallel gather's
    owned share of them, `gathered_inputs`), a windowed input's window
    (`windowed_inputs`), else the whole value."""
    gathered = gathered_inputs(group)
    windows = windowed_inputs(group)
    reads: dict[SSAValue, InputRead] = {}
    for value in group.inputs:
        if (gather := gathered.get(value)) is not None:
            moved = owned_bytes(gather, value_bytes(gather.results[0]))
            reads[value] = InputRead(min(moved, value_bytes(value)), True)
        elif (window := windows.get(value)) is not None:
            leading = shape(value)[:-1]
            spans = window.sizes[:-1] == leading and all(stride == 1 for stride in window.strides[:-1])
            reads[value] = InputRead(input_bytes(value, windows), spans)
        else:
            reads[value] = InputRead(value_bytes(value), True)
    return reads


@dataclass(frozen=True)
class WorkingSet:
    """Bytes and PMUs a plan keeps in SRAM at once, and the PCU stages it needs."""

    input_bytes: int
    output_bytes: int
    intermediate_peak: int
    pmus: int
    stages: int

    @property
    def total_bytes(self) -> int:
        return self.input_bytes + self.output_bytes + self.intermediate_peak

    def fits(self, target: Target) -> bool:
        return (
            self.total_bytes <= target.sram_bytes
            and self.pmus <= target.pmus
            and self.stages <= target.pcus
        )


def _pmus(nbytes: int, target: Target) -> int:
    return ceil(nbytes / target.pmu_bytes) if nbytes else 0


def _pcu_stages(op: Operation) -> int:
    """The op's PCU stages (`OpFacts.PCU_STAGES`: a reshape needs none); a constant takes one."""
    facts = facts_of(op)
    return facts.PCU_STAGES if facts is not None else 1


def working_set(group: Group, plan: TilePlan, target: Target) -> WorkingSet:
    gathered = gathered_inputs(group)
    windows = windowed_inputs(group)
    buffers: list[int] = []
    read_bytes = 0
    for value in group.inputs:
        if value in gathered:
            rows = gathered[value].results[0]
            copies = 2 if plan.count > 1 and rows in plan.tiled else 1
            nbytes = aligned(scaled_bytes(rows, plan) * copies)
        else:
            copies = 2 if plan.count > 1 and value in plan.tiled else 1
            nbytes = aligned(scaled_bytes(value, plan, windows) * copies)
        read_bytes += nbytes
        buffers.append(nbytes)
    outputs = set(group.outputs)
    output_bytes = sum(aligned(scaled_bytes(v, plan)) for v in group.outputs)
    in_place = updated_in_place(group.ops, group.inputs)  # in their inputs' PMUs (SRAM bytes still counted)
    buffers.extend(0 if v in in_place else aligned(scaled_bytes(v, plan)) for v in group.outputs)
    peak = _intermediate_peak(group, plan, outputs, set(gathered.values()))
    stages = sum(_pcu_stages(op) for op in group.ops)
    pmus = sum(_pmus(b, target) for b in buffers) + _pmus(peak, target)
    return WorkingSet(read_bytes, output_bytes, peak, pmus, stages)


def _intermediate_peak(
    group: Group, plan: TilePlan, outputs: set[SSAValue], hoisted: set[Operation]
) -> int:
    """Largest total of body values live at once (outputs live in their own buffers).

    A streamed view (`rducc.dialects.streamed`: the repeated K/V heads a product
    reads by address) holds no bytes of its own; its source stays live until the
    view's last reader instead."""
    position = {op: i for i, op in enumerate(group.ops)}
    live_until = remembered(("live ranges", tuple(group.ops), frozenset(outputs), frozenset(hoisted)),
                            lambda: _live_until(group.ops, position, outputs, hoisted))
    peak, live = 0, 0
    ends: dict[int, int] = {}
    for op in group.ops:
        index = position[op]
        for r in op.results:
            if r in live_until:
                live += aligned(scaled_bytes(r, plan))
                ends[live_until[r]] = ends.get(live_until[r], 0) + aligned(scaled_bytes(r, plan))
        peak = max(peak, live)
        live -= ends.pop(index, 0)
    return peak


def _live_until(ops: Sequence[Operation], position: dict[Operation, int], outputs: set[SSAValue],
                hoisted: set[Operation]) -> dict[SSAValue, int]:
    """Each body value's last reader's position (`_intermediate_peak`), whatever the tile plan."""
    streamed = streamed_views(ops, outputs)
    live_until: dict[SSAValue, int] = {}
    for op in ops:
        for r in op.results:
            if r in outputs or r in streamed or op in hoisted or not isinstance(r.type, TensorType):
                continue
            live_until[r] = live_end(op, op.parent_block(), position, [r])
    for view, source in streamed.items():
        if source in live_until:
            view_end = live_end(view.owner, view.owner.parent_block(), position, [view])  # type: ignore[arg-type]
            live_until[source] = max(live_until[source], view_end)
    return live_until


@dataclass
class GrowingGroup:
    """A contiguous run of ops grown one op at a time at its end (`rdu-fuse`'s
    segments), with a bound on its untiled working set kept as it grows, so that
    asking whether each longer run fits costs one op's work, not the run's.

    `bound` is never below `working_set(make_group(ops), untiled(), target)` in any
    field, so when it fits the run fits untiled and `best_plan` finds a plan: every
    input whole (a window or a gather's rows read less; a gather's rows are added
    besides its table), every result that something after the run reads an output
    in its own PMUs, every other result live at once (the peak holds no value
    twice, and no output). Its stages are the run's exactly: when they do not fit,
    no plan does (`stages_exceed`). `last_read` gives each result's last reader's
    place in the ops it is grown from (`last_reads`); outside them: infinity."""

    last_read: dict[SSAValue, float]
    position: dict[Operation, int]
    start: int
    end: int = field(init=False)
    inputs: set[SSAValue] = field(default_factory=set)
    input_bytes: int = 0
    input_pmus: int = 0
    outputs: set[SSAValue] = field(default_factory=set)
    output_pmus: int = 0
    result_bytes: int = 0
    output_bytes: int = 0
    stages: int = 0

    def __post_init__(self) -> None:
        self.end = self.start - 1  # the place of its last op, none yet

    def add(self, op: Operation, target: Target) -> None:
        """Grow the run by `op`, the op after its last."""
        self.end += 1
        inside = range(self.start, self.end + 1)
        for value in dict.fromkeys(op.operands):
            owner = value.owner
            if not (isinstance(owner, Operation) and self.position.get(owner, -1) in inside):
                self._read(value, target)
            elif value in self.outputs and self.last_read[value] <= self.end:
                self.outputs.discard(value)
                self.output_pmus -= _pmus(aligned(value_bytes(value)), target)
                self.output_bytes -= aligned(value_bytes(value))
        if isinstance(op, GatherOp):  # its rows, should the table be read by an indexed DMA
            self._hold(op.results[0], target)
        for result in op.results:
            self.result_bytes += aligned(value_bytes(result))
            if self.last_read[result] > self.end:
                self.outputs.add(result)
                self.output_pmus += _pmus(aligned(value_bytes(result)), target)
                self.output_bytes += aligned(value_bytes(result))
        self.stages += _pcu_stages(op)

    def _read(self, value: SSAValue, target: Target) -> None:
        if value not in self.inputs:
            self.inputs.add(value)
            self._hold(value, target)

    def _hold(self, value: SSAValue, target: Target) -> None:
        self.input_bytes += aligned(value_bytes(value))
        self.input_pmus += _pmus(aligned(value_bytes(value)), target)

    def bound(self, target: Target) -> WorkingSet:
        peak = self.result_bytes - self.output_bytes
        return WorkingSet(self.input_bytes, self.output_bytes, peak,
                          self.input_pmus + self.output_pmus + _pmus(peak, target), self.stages)

    def stages_exceed(self, target: Target) -> bool:
        return self.stages > target.pcus


def last_reads(ops: Sequence[Operation]) -> dict[SSAValue, float]:
    """Each result of `ops`: the place in `ops` of its last reader, infinity when an op
    not among them reads it (nested in one of them included) or one reads it before it."""
    position = {op: i for i, op in enumerate(ops)}
    found: dict[SSAValue, float] = {}
    for at, op in enumerate(ops):
        for result in op.results:
            places = [position.get(use.operation, -1) for use in result.uses]
            found[result] = max(places, default=at) if min(places, default=at) >= at else float("inf")
    return found


def untiled() -> TilePlan:
    return TilePlan(size=0, count=1, tiled={})


def best_plan(group: Group, target: Target) -> tuple[TilePlan, WorkingSet] | None:
    """The plan with the fewest tiles whose working set fits, or None."""
    whole = untiled()
    whole_set = working_set(group, whole, target)
    if whole_set.fits(target):
        return whole, whole_set
    best: tuple[TilePlan, WorkingSet] | None = None
    for extent, dims in candidate_loops(group):
        for size in tile_sizes(extent, target.lanes):
            if size == extent:
                continue
            plan = TilePlan(size=size, count=extent // size, tiled=dims)
            found = working_set(group, plan, target)
            if found.fits(target):
                if best is None or plan.count < best[0].count:
                    best = (plan, found)
                break
    return best


def describe(values: Iterable[SSAValue]) -> str:
    return ", ".join(str(v.type) for v in values)
