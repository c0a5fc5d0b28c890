"""What three passes keep where they scanned, so a deep training step costs its
depth, not its square (issue 27): each against the scan it replaces, which is
kept here as the reference.

- the mapper's sections (`mapping._sections`, which rdu-fuse asks of every
  group it weighs): the section's least PCUs and PMUs kept as it grows, not
  summed again over the section for every stage; its units (`balance`): each
  kind of stage counted once in the search's sums, not each stage;
- rdu-sram-alloc: the buffers placed kept by offset (no sort of the live ones
  per buffer), the most bytes live at once by one sweep (not a scan of every
  buffer at every start), a buffer live across a call by bisection;
- `global_stages` (rdu-place-tiers, the cost model): each op's stage asked
  once, of a first reader only, not per global operand of every reader;
- rdu-fuse's segments: a merged segment's layer key kept as it grows (not
  found again over the whole merged run for every neighbour), and the ops
  pulled back to the next segment asked by position, not of a set of the rest
  of the run made at every break;
- rdu-place-saved's questions about kernels (`shared_placements`,
  `written_in_place`): a kernel that is not only windows is known at its first
  op (no list of a long fused kernel's body per result), and a kernel's body
  arguments looked up by input once per kernel, not scanned per global it updates."""

from __future__ import annotations

import dataclasses
import random
from math import ceil
from pathlib import Path

import pytest
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation, OpResult
from xdsl.parser import Parser

import rducc.dialects.program as program
from rducc.diagnostics import LocatedError
from rducc.dialects.contracts import arg_attrs, global_of, op_stage
from rducc.dialects.program import entry_function, functions, global_stages
from rducc.dialects.rdu.dataflow import KernelOp, ReshapeOp, SliceOp
from rducc.dialects.shapes import value_bytes
from rducc.model import in_place, mapping
from rducc.model.kernel_model import kernel_group, last_reads
from rducc.model.mapping import BufferWork, StageWork, _buffer_homes, _touches, body_stages, buffer_works
from rducc.passes import rdu_fuse, rdu_insert_dma, rdu_place_saved, rdu_sram_alloc
from rducc.passes.rdu_insert_dma import write_in_place
from rducc.passes.rdu_sram_alloc import SramBuffer
from rducc.pipeline import parse_passes, run_passes
from rducc.targets import Target, load_target
from rducc.tools.opt import RduccOptMain

PASSES = Path(__file__).resolve().parents[1] / "passes"
STEP = PASSES / "rdu-place-saved-in-place.mlir"  # an SGD step with momentum: forward, backward, updates
PIPELINED = PASSES / "rdu-partition-microbatches.mlir"  # a training step, split in two pipeline stages here


def parsed(path: Path) -> ModuleOp:
    return Parser(RduccOptMain(args=[str(path)]).ctx, path.read_text()).parse_module()


# --- the mapper's sections -------------------------------------------------

def sections_by_scan(body: mapping.KernelBody, stages: list[StageWork], buffers: list[BufferWork],
                     target: Target) -> list[tuple[list[StageWork], list[BufferWork]]]:
    """The plain definition: each section's least units summed again for every stage."""
    home = _buffer_homes(body, buffers)
    used = {i for stage in stages for i in _touches(stage, home)}
    touched: dict[int, BufferWork] = {b.index: b for b in buffers if b.index not in used}
    found: list[tuple[list[StageWork], list[BufferWork]]] = []
    current: list[StageWork] = []
    for stage in stages:
        mine = _touches(stage, home)
        pmus = sum(b.least for b in mine.values())
        if stage.least > target.pcus or pmus > target.pmus:
            raise LocatedError(stage.op, f"rdu-map-units: no room for '{stage.op.name}' of kernel "
                               f"'{body.name}': it needs {stage.least} PCUs and {pmus} PMUs at once "
                               f"but the target has {target.pcus} and {target.pmus}")
        joined = {**touched, **mine}
        if current and (sum(s.least for s in current) + stage.least > target.pcus
                        or sum(b.least for b in joined.values()) > target.pmus):
            found.append((current, list(touched.values())))
            current, joined = [], dict(mine)
        current.append(stage)
        touched = joined
    if sum(b.least for b in touched.values()) > target.pmus:
        raise LocatedError(body.anchor, f"rdu-map-units: no room for the buffers of kernel '{body.name}': "
                           f"they need {sum(b.least for b in touched.values())} PMUs but the target has {target.pmus}")
    found.append((current, list(touched.values())))
    return found


def outcome(sections, *args):  # type: ignore[no-untyped-def]
    """The sections as (stage ops, buffer indices), or the error's message."""
    try:
        return [([s.index for s in members], [b.index for b in touched]) for members, touched in sections(*args)]
    except LocatedError as error:
        return str(error)


def test_sections_keep_their_units_as_the_scan_counts_them() -> None:
    """Every window of the step's ops as one kernel, on targets of few PCUs and PMUs
    (many sections, and both no-room errors): the same sections or error."""
    entry = entry_function(parsed(STEP))
    ops = [op for op in entry.body.block.ops if op is not entry.body.block.last_op]
    base, rng, compared, cuts = load_target("sn40l"), random.Random(27), 0, 0
    for start in range(len(ops)):
        for stop in range(start + 1, min(len(ops), start + 12) + 1):
            planned = rdu_fuse.group_body(ops[start:stop], base)
            if planned is None:
                continue
            body = planned[0]
            stages, buffers = body_stages(body, base), buffer_works(body, base)
            for _ in range(4):
                target = dataclasses.replace(base, pcus=rng.randint(1, 2 * sum(s.least for s in stages) + 1),
                                             pmus=rng.randint(1, 2 * sum(b.least for b in buffers) + 1))
                want = outcome(sections_by_scan, body, stages, buffers, target)
                assert outcome(mapping._sections, body, stages, buffers, target) == want
                compared += 1
                cuts += isinstance(want, list) and len(want) > 1
    assert compared > 100 and cuts > 10  # windows cut into several sections were compared


def balance_by_scan(works: list[float], least: list[int], most: list[int], budget: int) -> list[int]:
    """The plain search: every stage's units summed at every step."""

    def need(time: float) -> list[int]:
        return [min(hi, max(lo, ceil(w / time * (1 - 1e-9)))) if w > 0 else lo
                for w, lo, hi in zip(works, least, most)]

    if sum(need(float("inf"))) <= budget and all(w <= 0 for w in works):
        return list(least)
    high = max((w / lo for w, lo in zip(works, least) if w > 0 and lo > 0), default=1.0)
    low = 0.0
    if sum(most) <= budget:
        return list(most)
    for _ in range(64):
        middle = (low + high) / 2
        if middle <= 0 or sum(need(middle)) > budget:
            low = middle
        else:
            high = middle
    return need(high)


def test_balance_counts_kinds_of_stage_as_the_scan_counts_stages() -> None:
    """Drawn stages, many alike (a fused update of like parameters), some idle,
    within budgets from below the least to above the most: the same units."""
    rng = random.Random(40)
    for _ in range(200):
        kinds = [(rng.choice((0.0, 1e-7, 3e-7, 2.5e-6, rng.random() * 1e-5)), rng.randint(1, 3))
                 for _ in range(rng.randint(1, 6))]
        stages = [rng.choice(kinds) for _ in range(rng.randint(1, 40))]
        works, least = [w for w, _ in stages], [lo for _, lo in stages]
        most = [lo + rng.choice((0, 4, 50)) for lo in least]
        budget = rng.randint(max(1, sum(least) - 5), sum(most) + 5)
        assert mapping.balance(works, least, most, budget) == balance_by_scan(works, least, most, budget)


# --- rdu-sram-alloc ---------------------------------------------------------

def place_by_scan(group: list[SramBuffer], order) -> int:  # type: ignore[no-untyped-def]
    """The plain first fit: the placed buffers live with each new one, sorted by offset."""
    placed: list[SramBuffer] = []
    for buffer in sorted(group, key=order):
        busy = sorted((p for p in placed if p.start <= buffer.end and buffer.start <= p.end), key=lambda p: p.offset)
        offset = 0
        for other in busy:
            if offset + buffer.size <= other.offset:
                break
            offset = max(offset, other.offset + other.size)
        buffer.offset = offset
        placed.append(buffer)
    return max((b.offset + b.size for b in group), default=0)


def max_live_by_scan(buffers: list[SramBuffer]) -> tuple[int, list[SramBuffer]]:
    """The plain definition: the buffers live at each start, summed."""
    best, best_live = 0, []
    for point in sorted({b.start for b in buffers}):
        live = [b for b in buffers if b.start <= point <= b.end]
        total = sum(b.size for b in live)
        if total > best:
            best, best_live = total, live
    return best, best_live


def drawn_buffers(rng: random.Random, op: Operation) -> list[SramBuffer]:
    """Buffers of drawn sizes (many equal: ties) and live ranges (some empty, some long)."""
    found = []
    for _ in range(rng.randint(0, 60)):
        start = rng.randint(0, 300)
        end = start + rng.choice((0, 1, 2, 5, 20, 70, 200, -1))
        found.append(SramBuffer(op, rng.choice((64, 128, 128, 256, 1024, 4096)), start, end))
    return found


@pytest.fixture(scope="module")
def some_op() -> Operation:
    return entry_function(parsed(STEP))


def test_sram_placement_and_peak_as_the_scans(some_op: Operation) -> None:
    rng = random.Random(20)
    for _ in range(300):
        buffers = drawn_buffers(rng, some_op)
        for _, order in rdu_sram_alloc.PLACEMENT_ORDERS:
            peak = rdu_sram_alloc._place_in_order(buffers, order)
            offsets = [b.offset for b in buffers]
            assert (peak, offsets) == (place_by_scan(buffers, order), [b.offset for b in buffers])
        total, live = rdu_sram_alloc.max_live(buffers)
        want_total, want_live = max_live_by_scan(buffers)
        assert total == want_total and [id(b) for b in live] == [id(b) for b in want_live]
        across = rdu_sram_alloc._live_across(buffers)
        for point in rng.sample(range(-1, 510), 40):
            assert across(point) == any(b.start < point < b.end for b in buffers)


# --- global_stages ------------------------------------------------------------

def stages_by_scan(module: ModuleOp) -> dict[str, int]:
    """The plain definition: the stage of every reader of a global, the first one kept."""
    stages: dict[str, int] = {}
    for function in functions(module):
        by_arg = {arg: name for arg, a in zip(function.args, arg_attrs(function))
                  if (name := global_of(a)) is not None}
        for op in function.body.block.ops:
            for operand in op.operands:
                if operand in by_arg:
                    stages.setdefault(by_arg[operand], op_stage(op))
    return stages


def test_global_stages_asks_each_first_reader_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """A step split in two pipeline stages, fused: the globals' stages as the scan
    finds them, each op asked once, and only the globals' first readers."""
    module = parsed(PIPELINED)
    run_passes(module, parse_passes("rdu-partition{pp=2 target=sn40l-8},rdu-fuse{level=2},rdu-place-saved,"
                                    "rdu-tile,rdu-place-tiers"))
    want = stages_by_scan(module)
    assert set(want.values()) == {0, 1}
    asked: list[Operation] = []

    def counted(op: Operation) -> int:
        asked.append(op)
        return op_stage(op)

    monkeypatch.setattr(program, "op_stage", counted)
    assert global_stages(module) == want and list(global_stages(module)) == list(want)
    assert len(asked) == 2 * len(set(asked)) <= 2 * len(want)  # two calls: each first reader once a call


# --- rdu-insert-dma's writes in place ------------------------------------------

def test_updates_written_in_place_retype_their_function_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """An SGD step whose updates are written over their globals: the function's result
    types follow once after all its rewrites (once per update compared every result
    type and walked the module for calls: quadratic in a deep step's updates)."""
    module = parsed(STEP)
    place_saved = f'rdu-place-saved{{target="{PASSES}/Inputs/train-in-place.toml"}}'
    run_passes(module, parse_passes(f"rdu-fuse{{level=0}},{place_saved},rdu-tile,rdu-place-tiers"))
    whole, retyped = write_in_place.rewrite_whole, []

    def counted_whole(*args, **kwargs) -> bool:  # type: ignore[no-untyped-def]
        done = whole(*args, **kwargs)
        rewritten.append(done)
        return done

    rewritten: list[bool] = []
    monkeypatch.setattr(write_in_place, "rewrite_whole", counted_whole)
    monkeypatch.setattr(write_in_place, "_retype_results", lambda block: retyped.append(block))
    run_passes(module, parse_passes("rdu-insert-dma"))
    assert sum(rewritten) >= 2  # several updates written over their globals
    assert len(retyped) == len(set(map(id, retyped))) == 1  # @forward, once


# --- rdu-fuse's segments --------------------------------------------------------

def run_ops(path: Path) -> list[Operation]:
    entry = entry_function(parsed(path))
    return [op for op in entry.body.block.ops if op is not entry.body.block.last_op]


def pulled_back_by_scan(segment: list[Operation], later: list[Operation]) -> list[Operation]:
    """The plain definition: membership in the rest of the run and in the segment by scan."""
    moved: list[Operation] = []
    for op in reversed(segment):
        if isinstance(op, (*rdu_fuse.HEAVY_OPS, rdu_fuse.ReduceOp)):
            break
        used_later_only = all(use.operation in later or use.operation in moved for r in op.results for use in r.uses)
        shares_input = any(use.operation in later for v in op.operands for use in v.uses)
        independent = not any(v.owner in segment for v in op.operands)
        if not (used_later_only and (shares_input or independent)):
            break
        moved.insert(0, op)
    return moved


def test_pull_back_by_position_as_the_scan() -> None:
    """Every window of a training step's ops as the segment, the rest of the run after it."""
    ops = run_ops(PIPELINED)
    position = {op: at for at, op in enumerate(ops)}
    moved = 0
    for start in range(len(ops)):
        for stop in range(start + 1, min(len(ops), start + 12) + 1):
            segment = rdu_fuse._Segment(ops[start:stop])
            want = pulled_back_by_scan(ops[start:stop], ops[stop:])
            assert rdu_fuse._pull_back(segment, position, stop) == want
            moved += bool(want)
    assert moved > 10  # windows that pull ops back were compared


def test_merged_segments_ask_each_op_its_layer_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """A step of keyless segments merged into few: each op's layer asked once (the
    scan asked the whole merged run again for every neighbour: 254 for 47 ops)."""
    ops, target = run_ops(PIPELINED), load_target("sn40l")
    segments = rdu_fuse.pattern_segments(ops, target)
    asked: list[Operation] = []
    layer_of = rdu_fuse.layer_of

    def counted(op: Operation) -> str | None:
        asked.append(op)
        return layer_of(op)

    monkeypatch.setattr(rdu_fuse, "layer_of", counted)
    merged = rdu_fuse.merged_segments(segments, target)
    assert len(merged) < len(segments)  # neighbours were merged
    assert len(asked) == len(set(asked)) <= len(ops)


def crossing_change_by_sums(segment: list[Operation], stop: int, last_read: dict, position: dict) -> int:  # type: ignore[type-arg]
    """The plain definition: the bytes made before the cut that are read after it, less
    the values made before the segment, read in it before the cut and by nothing after."""
    start = position[segment[0]]
    end = start + stop
    made = sum(value_bytes(r) for op in segment[:stop] for r in op.results if last_read[r] >= end)
    dying = {v for op in segment[:stop] for v in op.operands
             if isinstance(v, OpResult) and position.get(v.op, end) < start and last_read.get(v, end) < end}
    return made - sum(value_bytes(v) for v in dying)


def test_crossing_changes_in_one_pass_as_the_sums() -> None:
    """Every window of two training steps' ops as the segment, every cut in it (the
    pass summed each cut on its own: quadratic in a long update segment)."""
    dying = 0
    for path in (STEP, PIPELINED):
        ops = run_ops(path)
        last_read, position = last_reads(ops), {op: at for at, op in enumerate(ops)}
        for start in range(len(ops)):
            segment = ops[start:start + 40]
            want = [crossing_change_by_sums(segment, stop, last_read, position) for stop in range(1, len(segment))]
            assert rdu_fuse.crossing_changes(segment, len(segment) - 1, last_read, position) == want
            dying += sum(w < 0 for w in want)
    assert dying > 10  # cuts where values made before the segment die were compared


# --- rdu-place-saved's questions about kernels ------------------------------------

def fused_kernels() -> tuple[ModuleOp, list[KernelOp]]:
    """A training step's ops each a kernel (a reshape's too: a kernel of windows only)."""
    module = parsed(PIPELINED)
    run_passes(module, parse_passes("rdu-fuse{level=0}"))
    entry = entry_function(module)
    return module, [op for op in entry.body.block.ops if isinstance(op, KernelOp)]


def test_kernel_questions_as_the_scans(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each kernel's arguments by input and whether it takes windows only, as the
    scans find them; `shared_placements` lists no body of a kernel that is not
    only windows (the scan listed a body per result of every kernel)."""
    module, kernels = fused_kernels()
    assert len(kernels) > 1
    for kernel in kernels:
        by_input = in_place._arguments_by_input(kernel)
        for value in kernel.inputs:
            assert by_input[value] == [a for a, v in zip(kernel.body.block.args, kernel.inputs) if v == value]
        only_windows = all(isinstance(op, SliceOp | ReshapeOp) for op in kernel_group(kernel).ops)
        assert rdu_insert_dma.takes_windows_only(kernel) == only_windows
    listed: list[KernelOp] = []

    def counted(kernel: KernelOp):  # type: ignore[no-untyped-def]
        listed.append(kernel)
        return kernel_group(kernel)

    monkeypatch.setattr(rdu_insert_dma, "kernel_group", counted)
    rdu_place_saved.shared_placements(entry_function(module))
    windows = [k for k in kernels if rdu_insert_dma.takes_windows_only(k)]
    assert windows
    assert len(listed) == sum(len(k.results) for k in windows) < sum(len(k.results) for k in kernels)
