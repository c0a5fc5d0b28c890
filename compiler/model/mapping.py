"""KernelMapping a kernel onto the fabric: ops to PCU stages, buffers to PMUs.

`map_kernel(compute, target)` is what `rdu-map-units` records on each
`tier.compute` and what the cost model uses for a kernel that carries no
mapping (a hand-written program, or one lowered without the pass). Both
read the kernel through a `KernelBody`; `map_body` maps any body, so
`rdu-fuse` weighs a group of ops before it is a kernel by the same rules
(its ops whole, their work spread over its tile plan's tiles). The rules,
which docs/cost-model.md states with a worked example:

- **Stages.** Every body op with `PCU_STAGES > 0` (not a reshape, not a
  constant) is one pipeline stage needing at least `PCU_STAGES` PCUs. Its
  work on one tile is `flops / (unit_rate x utilization)` seconds a PCU, with
  `unit_rate = peak_flops(T) / pcus` (a PCU's share of the socket's peak) and
  `utilization = lane_fill x row_fill x fma / 2`: `lane_fill = n / (ceil(n /
  lanes) x lanes)` for n the result's last dim, a reduction's input's last
  dim (how full the last lane vector is: a reduction's lanes read its
  input), `row_fill = min(1, rows / pcu_stages)` for a matmul or conv (rows =
  its result's elements / n: a batch-1 GEMV keeps 1 of the 6 stages busy) and 1
  otherwise, `fma = 2` for a matmul or conv (a multiply-add a lane and stage a
  cycle) and 1 otherwise (one op), times the target's `compute_efficiency`
  (what a full stage still loses). A stage is also no faster than the
  on-chip network feeds it: its work is at least `bytes read /
  pcu_feed_bandwidth` seconds a PCU (when the target gives that figure). A
  stage may use at most `ceil(items / (lanes x pcu_stages x fma))` PCUs (a
  cycle of work each), `items` the larger of its flops and the elements it
  writes: an op that moves data and computes nothing (a transpose, a concat,
  a slice) passes an element a lane and stage a cycle, so it spreads over PCUs
  like an elementwise op of the same size.
- **Buffers.** The compute's ins, its outs (their reserved bytes, double
  buffers included) and its body values not yielded each take at least
  `ceil(bytes / pmu_bytes)` PMUs and at most `ceil(bytes / 64)` (a 64-byte
  row each); their traffic on a tile is the bytes the body ops read from and
  write to them.
- **Sections.** Stages are taken in body order into a section while the
  section's least PCUs and PMUs (each buffer it touches counted once) fit the
  target's `pcus` and `pmus`; the next stage that does not fit starts a new
  section (a reconfiguration, `reconfigure_s`). A stage that does not fit alone
  is the no-room error.
- **Balance.** In each section, units are integers, each stage between its
  least and most; the PCUs go to the stages so that the slowest stage (work /
  units) is as fast as the section's PCUs allow (the smallest T with
  sum over stages of clamp(ceil(work / T)) <= pcus); PMUs go to the buffers the
  same way by traffic.
- **Placement.** The grid is `rows x cols` sites (`Target.grid`), a PCU where
  row + column is even and a PMU elsewhere. Units are numbered in snake order
  (row 0 left to right, row 1 right to left, ...), PCUs and PMUs apart; each
  section's stages take consecutive PCUs from 0 in body order, its buffers
  consecutive PMUs from 0.
- **Routing.** A stream runs from the middle unit of its producer's range (a
  stage, or the PMUs of an input buffer) to the middle unit of its consumer's;
  its hops are the Manhattan distance between the two sites. A stage records
  the hops of its longest path from the kernel's inputs (`StageUnits.hops`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from math import ceil

from xdsl.dialects import arith
from xdsl.dialects.builtin import TensorType
from xdsl.ir import Operation, SSAValue

from rducc.diagnostics import LocatedError
from rducc.dialects.contracts import BufferUnits, KernelMapping, StageUnits
from rducc.dialects.op_facts import elements, facts_of, tensor_bytes
from rducc.dialects.precision import compute_element
from rducc.dialects.program import kernel_name
from rducc.dialects.rdu import dataflow as rdu
from rducc.dialects.shapes import value_bytes
from rducc.dialects.streamed import streamed_views, updated_in_place
from rducc.dialects.tier import AllocOp, ComputeOp
from rducc.dialects.unchanged import remembered
from rducc.targets import SRAM_ROW_BYTES, Target

SYSTOLIC = (rdu.MatmulOp, rdu.ConvOp)
"""Ops that multiply-add on a PCU's lanes x stages (fma 2, rows fill the stages)."""


@dataclass(frozen=True)
class StageWork:
    """One op's stage: its least and most PCUs and its seconds on one PCU for one tile."""

    op: Operation
    index: int
    least: int
    most: int
    seconds: float


@dataclass(frozen=True)
class BufferWork:
    """One buffer: its value, bytes, least and most PMUs and bytes of traffic a tile."""

    value: SSAValue
    index: int
    size: int
    least: int
    most: int
    traffic: int


@dataclass(frozen=True)
class KernelBody:
    """What the mapper reads of a kernel: a `tier.compute`'s body (`compute_body`),
    or a run of dataflow ops fusion may make one (`group_body`, before tiling)."""

    name: str
    anchor: Operation
    """Where an error about the kernel as a whole is located."""
    ops: tuple[Operation, ...]
    """The body ops in order (a stage's `op` is its index here; a terminator may be last)."""
    inputs: tuple[SSAValue, ...]
    """The values the ops read from outside (a compute's block arguments)."""
    yielded: tuple[SSAValue, ...]
    """The values written out, one per output buffer."""
    sizes: tuple[int, ...]
    """Reserved bytes of each input, then of each output (double buffers included)."""
    bytes_of: Callable[[SSAValue], int] = tensor_bytes
    """Bytes of a body value on one tile (buffer size and traffic)."""
    tiles: int = 1
    """Tiles the ops' work is spread over (a group's ops are whole: its tile plan's count)."""


def compute_body(compute: ComputeOp) -> KernelBody:
    """The mapper's view of a lowered kernel (its body is one tile)."""
    block = compute.body.block
    terminator = block.last_op
    yielded = tuple(terminator.operands) if isinstance(terminator, rdu.YieldOp) else ()
    sizes = tuple(_reserved(v) for v in (*compute.ins, *compute.outs))
    return KernelBody(kernel_name(compute), compute, tuple(block.ops), tuple(block.args), yielded, sizes)


def lane_fill(n: int, lanes: int) -> float:
    """How full the lane vectors of a last dim of n elements are."""
    return n / (ceil(n / lanes) * lanes) if n > 0 else 1.0


def lane_shape(op: Operation) -> tuple[int, ...]:
    """The shape whose last dim the op's lanes run along: a reduction's input (its
    lanes read the reduced dim, or the kept last dim, a vector a cycle), any
    other op's first tensor result."""
    value = op.input if isinstance(op, rdu.ReduceOp) else next(
        (r for r in op.results if isinstance(r.type, TensorType)), None)
    return tuple(value.type.get_shape()) if value is not None and isinstance(value.type, TensorType) else ()


@dataclass(frozen=True)
class OpWork:
    """What an op's stage depends on before the target's figures: its least PCUs
    (`PCU_STAGES`), FLOPs, the items it spreads over (the larger of its FLOPs and
    the elements it writes), whether it multiply-adds (`SYSTOLIC`), its lane dims
    (`lane_shape`), the element type it computes in and the bytes it reads."""

    stages: int
    flops: int
    items: int
    systolic: bool
    dims: tuple[int, ...]
    element: str
    bytes_read: int


def op_work(op: Operation) -> OpWork | None:
    """The op's `OpWork`, or None for an op that takes no PCU (reshape, constant);
    once per op inside an `unchanged()` block."""
    if isinstance(op, rdu.YieldOp | arith.ConstantOp):
        return None
    return remembered(("op work", op), lambda: _op_work(op))


def _op_work(op: Operation) -> OpWork | None:
    facts = facts_of(op)
    stages = facts.PCU_STAGES if facts is not None else 0
    if facts is None or stages <= 0:
        return None
    flops = facts.flops()
    items = max(flops, sum(elements(r) for r in op.results if isinstance(r.type, TensorType)))
    element = compute_element(op)
    return OpWork(stages, flops, items, isinstance(op, SYSTOLIC), lane_shape(op),
                  str(element) if element is not None else "f32", facts.bytes_read())


def utilization(op: Operation, target: Target) -> float:
    """The share of a PCU's peak the op keeps busy (module docstring)."""
    return _utilization(lane_shape(op), isinstance(op, SYSTOLIC), target)


def _utilization(dims: tuple[int, ...], systolic: bool, target: Target) -> float:
    n = dims[-1] if dims else 1
    elements = 1
    for d in dims:
        elements *= d
    fill = lane_fill(n, target.lanes)
    if systolic:
        return fill * min(1.0, (elements // max(n, 1)) / target.pcu_stages)
    return fill / 2


def stage_work(op: Operation, index: int, target: Target) -> StageWork | None:
    """The op's stage, or None for an op that takes no PCU (reshape, constant)."""
    work = op_work(op)
    if work is None:
        return None
    fma = 2 if work.systolic else 1
    most = max(work.stages, ceil(work.items / (target.lanes * target.pcu_stages * fma)))
    unit_rate = target.peak_flops(work.element) / target.pcus  # a PCU's share of the peak in its element type
    seconds = work.flops / (unit_rate * _utilization(work.dims, work.systolic, target) * target.compute_efficiency) \
        if work.flops else 0.0
    return StageWork(op, index, work.stages, most, max(seconds, _feed_seconds(work, target)))


def _feed_seconds(work: OpWork, target: Target) -> float:
    """Seconds one PCU takes to receive the op's operands over the on-chip network
    (`pcu_feed_bandwidth`; 0 when the target does not limit it): a stage runs no
    faster than its operands arrive."""
    return work.bytes_read / target.pcu_feed_bandwidth if target.pcu_feed_bandwidth else 0.0


def streamed(body: KernelBody) -> dict[SSAValue, SSAValue]:
    """The body's streamed views with their sources (`rducc.dialects.streamed`; once
    per body's ops and outputs inside an `unchanged()` block)."""
    return remembered(("streamed views", body.ops, body.yielded), lambda: streamed_views(body.ops, set(body.yielded)))


def _addresses_only(op: Operation, views: dict[SSAValue, SSAValue]) -> bool:
    """A layout op whose result is a streamed view: the PMUs' address generation, no PCU."""
    facts = facts_of(op)
    return facts is not None and facts.READS_BY_ADDRESS and bool(op.results) and op.results[0] in views


def body_stages(body: KernelBody, target: Target) -> list[StageWork]:
    """The body's stages, each op's work spread over `body.tiles` (seconds and most PCUs a tile);
    a layout op that streams a view (`streamed`) takes none."""
    views = streamed(body)
    found = [w for i, op in enumerate(body.ops)
             if not _addresses_only(op, views) and (w := stage_work(op, i, target)) is not None]
    if body.tiles <= 1:
        return found
    return [StageWork(w.op, w.index, w.least, max(w.least, ceil(w.most / body.tiles)), w.seconds / body.tiles)
            for w in found]


def _is_view(op: Operation) -> bool:
    """An op that takes no PCU (a reshape): its result is its operand's PMUs read another way."""
    facts = facts_of(op)
    return facts is not None and facts.PCU_STAGES == 0 and len(op.operands) == 1


def kernel_buffers(body: KernelBody) -> list[SSAValue]:
    """The kernel's buffers in mapping order: its inputs, its outputs (as the values
    yielded into them), body values not yielded (a view's result, a streamed view's
    too, is no buffer of its own)."""
    yielded, views = set(body.yielded), streamed(body)
    values = [r for op in body.ops if not isinstance(op, rdu.YieldOp | arith.ConstantOp) and not _is_view(op)
              for r in op.results if r not in yielded and r not in views and isinstance(r.type, TensorType)]
    return [*body.inputs, *body.yielded, *values]


def _reserved(value: SSAValue) -> int:
    owner = value.owner
    return owner.reserved_bytes if isinstance(owner, AllocOp) else value_bytes(value)


def _buffer_traffic(body: KernelBody) -> tuple[list[SSAValue], list[int], list[int]]:
    """The body's buffers (`kernel_buffers`), their bytes and their traffic on one tile."""
    buffers = kernel_buffers(body)
    in_place = updated_in_place(body.ops, body.inputs)
    sizes = [0 if v in in_place and i >= len(body.inputs) else size
             for i, (v, size) in enumerate(zip(buffers, (*body.sizes, *(body.bytes_of(v) for v in
                                                                          buffers[len(body.sizes):]))))]
    bare = [BufferWork(v, i, size, 0, 0, 0) for i, (v, size) in enumerate(zip(buffers, sizes))]
    home = _buffer_homes(body, bare)
    traffic = [0] * len(buffers)
    for op in body.ops:
        if isinstance(op, rdu.YieldOp | arith.ConstantOp):
            continue
        for value in (*op.operands, *op.results):
            if value in home and isinstance(value.type, TensorType):
                traffic[home[value].index] += body.bytes_of(value)
    return buffers, sizes, traffic


def buffer_works(body: KernelBody, target: Target) -> list[BufferWork]:
    """Each buffer's bytes, PMU bounds and traffic on one tile; an output updated in
    place (`updated_in_place`: a KV cache's new row) holds no bytes of its own, it
    is its input's PMUs."""
    buffers, sizes, traffic = remembered(("buffer traffic", body), lambda: _buffer_traffic(body))
    least = [max(1, ceil(size / target.pmu_bytes)) for size in sizes]
    return [BufferWork(v, i, size, low, max(low, ceil(size / SRAM_ROW_BYTES)), traffic[i])
            for i, (v, size, low) in enumerate(zip(buffers, sizes, least))]


def balance(works: Sequence[float], least: Sequence[int], most: Sequence[int], budget: int) -> list[int]:
    """Integer units, each between its least and most, so that max(work / units) is
    smallest within `budget` (the least T with sum(clamp(ceil(work / T))) <= budget).

    The search's sums count each distinct (work, least, most) once, times how many
    stages have it: a fused optimizer kernel's updates of many like-shaped
    parameters are a few kinds of stage, however deep the model."""
    kinds = Counter(zip(works, least, most))

    def units(w: float, lo: int, hi: int, time: float) -> int:
        # The rounding slack is relative (a share of work / time), so stages whose
        # work / units tie at T round alike: an absolute slack lets the search stop
        # just under T, where a stage of larger work / T takes a unit it does not need.
        return min(hi, max(lo, ceil(w / time * (1 - 1e-9)))) if w > 0 else lo

    def needed(time: float) -> int:
        return sum(n * units(w, lo, hi, time) for (w, lo, hi), n in kinds.items())

    if needed(float("inf")) <= budget and all(w <= 0 for w in works):
        return list(least)
    high = max((w / lo for w, lo in zip(works, least) if w > 0 and lo > 0), default=1.0)
    low = 0.0
    if sum(most) <= budget:
        return list(most)
    for _ in range(64):
        middle = (low + high) / 2
        if middle <= 0 or needed(middle) > budget:
            low = middle
        else:
            high = middle
    return [units(w, lo, hi, high) for w, lo, hi in zip(works, least, most)]


def _touches(stage: StageWork, home: dict[SSAValue, BufferWork]) -> dict[int, BufferWork]:
    return {b.index: b for v in (*stage.op.operands, *stage.op.results) if (b := home.get(v)) is not None}


def _buffer_homes(body: KernelBody, buffers: list[BufferWork]) -> dict[SSAValue, BufferWork]:
    """Each value a body op reads or writes, to the buffer it lives in (yielded: its output;
    a streamed view: its source's; a result updated in place: its input's)."""
    home = {b.value: b for b in buffers}  # a value yielded that is also an input: its output
    for result, source in updated_in_place(body.ops, body.inputs).items():
        if source in home:
            home[result] = home[source]
    views = streamed(body)
    for op in body.ops:
        if _is_view(op) and op.operands[0] in home and op.results[0] not in home:
            home[op.results[0]] = home[op.operands[0]]
        elif op.results and op.results[0] in views and views[op.results[0]] in home:
            home.setdefault(op.results[0], home[views[op.results[0]]])
    return home


def _sections(body: KernelBody, stages: list[StageWork], buffers: list[BufferWork],
              target: Target) -> list[tuple[list[StageWork], list[BufferWork]]]:
    """Stages in body order cut where the least PCUs or PMUs would not fit (module
    docstring); buffers no stage touches (read by a reshape only) go to section 0."""
    home = _buffer_homes(body, buffers)
    touches = [_touches(stage, home) for stage in stages]
    used = {i for mine in touches for i in mine}
    touched: dict[int, BufferWork] = {b.index: b for b in buffers if b.index not in used}
    found: list[tuple[list[StageWork], list[BufferWork]]] = []
    current: list[StageWork] = []
    pcus, pmus = 0, sum(b.least for b in touched.values())  # the section's least units, kept as it grows
    for stage, mine in zip(stages, touches):
        needs = sum(b.least for b in mine.values())
        if stage.least > target.pcus or needs > target.pmus:
            raise LocatedError(stage.op, f"rdu-map-units: no room for '{stage.op.name}' of kernel "
                               f"'{body.name}': it needs {stage.least} PCUs and {needs} PMUs at once "
                               f"but the target has {target.pcus} and {target.pmus}")
        new = [b for i, b in mine.items() if i not in touched]
        if current and (pcus + stage.least > target.pcus or pmus + sum(b.least for b in new) > target.pmus):
            found.append((current, list(touched.values())))
            current, touched, pcus, pmus = [], {}, 0, 0
            new = list(mine.values())
        current.append(stage)
        touched.update((b.index, b) for b in new)
        pcus, pmus = pcus + stage.least, pmus + sum(b.least for b in new)
    if pmus > target.pmus:
        raise LocatedError(body.anchor, f"rdu-map-units: no room for the buffers of kernel '{body.name}': "
                           f"they need {pmus} PMUs but the target has {target.pmus}")
    found.append((current, list(touched.values())))
    return found


def site(unit: int, grid: tuple[int, int], pcu: bool) -> tuple[int, int]:
    """(row, col) of PCU (or PMU) number `unit` in snake order on a checkerboard grid."""
    per_row = grid[1] // 2
    row, j = divmod(unit, per_row)
    if row % 2:
        j = per_row - 1 - j
    return row, 2 * j + (row % 2 if pcu else 1 - row % 2)


def _middle(first: int, units: int, grid: tuple[int, int], pcu: bool) -> tuple[int, int]:
    return site(first + units // 2, grid, pcu)


def hops_of(body: KernelBody, stages: list[StageUnits], buffers: list[BufferUnits],
          grid: tuple[int, int]) -> dict[int, int]:
    """Per stage op index, the hops of its longest path from the kernel's inputs."""
    where: dict[SSAValue, tuple[int, int]] = {}
    longest: dict[SSAValue, int] = {}
    for b in buffers:
        if b.buffer < len(body.inputs):
            where[body.inputs[b.buffer]] = _middle(b.first, b.units, grid, pcu=False)
            longest[body.inputs[b.buffer]] = 0
    result: dict[int, int] = {}
    by_op = {s.op: s for s in stages}
    for index, op in enumerate(body.ops):
        inputs = [v for v in op.operands if v in longest]
        stage = by_op.get(index)
        if stage is None:  # no PCU: its result is where its input was
            for r in op.results:
                source = inputs[0] if inputs else None
                longest[r] = longest[source] if source is not None else 0
                if source is not None and source in where:
                    where[r] = where[source]
            continue
        here = _middle(stage.first, stage.units, grid, pcu=True)
        hops = max((longest[v] + (abs(here[0] - where[v][0]) + abs(here[1] - where[v][1]) if v in where else 0)
                    for v in inputs), default=0)
        result[index] = hops
        for r in op.results:
            where[r], longest[r] = here, hops
    return result


def map_kernel(compute: ComputeOp, target: Target) -> KernelMapping:
    """The kernel's mapping on `target` (module docstring); LocatedError when an op has no room."""
    return map_body(compute_body(compute), target)


def map_body(body: KernelBody, target: Target) -> KernelMapping:
    """The mapping of a kernel body on `target` (module docstring); LocatedError when an op has no room."""
    stages = body_stages(body, target)
    buffers = buffer_works(body, target)
    grid = target.grid()
    stage_units: list[StageUnits] = []
    buffer_units: list[BufferUnits] = []
    sections = _sections(body, stages, buffers, target)
    for number, (members, touched) in enumerate(sections):
        pcus = balance([s.seconds for s in members], [s.least for s in members], [s.most for s in members],
                       target.pcus)
        pmus = balance([float(b.traffic) for b in touched], [b.least for b in touched],
                       [b.most for b in touched], target.pmus)
        first = 0
        for stage, units in zip(members, pcus):
            stage_units.append(StageUnits(stage.index, number, first, units, 0))
            first += units
        first = 0
        for buffer, units in zip(touched, pmus):
            buffer_units.append(BufferUnits(buffer.index, number, first, units))
            first += units
    hops: dict[int, int] = {}
    for number in range(len(sections)):
        hops |= hops_of(body, [s for s in stage_units if s.section == number],
                      [b for b in buffer_units if b.section == number], grid)
    stage_units = [StageUnits(s.op, s.section, s.first, s.units, hops.get(s.op, 0)) for s in stage_units]
    return KernelMapping(grid, len(sections), tuple(stage_units), tuple(buffer_units))


__all__ = ["KernelBody", "balance", "body_stages", "buffer_works", "compute_body", "depths", "hops_of",
           "kernel_buffers", "lane_fill", "lane_shape", "map_body", "map_kernel", "op_work", "site", "stage_work",
           "utilization"]


def depths(body: KernelBody, mapping: KernelMapping) -> dict[int, int]:
    """Per stage op index, the stages on its longest path from the kernel's inputs
    (itself included; an op with no PCU adds none)."""
    stage_ops = {s.op for s in mapping.stages}
    longest: dict[SSAValue, int] = {}
    found: dict[int, int] = {}
    for index, op in enumerate(body.ops):
        depth = max((longest.get(v, 0) for v in op.operands), default=0) + (index in stage_ops)
        if index in stage_ops:
            found[index] = depth
        for r in op.results:
            longest[r] = depth
    return found
