"""`rdu-place-tiers`: decide which off-chip tier holds each global.

Weights (every `tier.global`) go to HBM hottest first (below), until HBM
is full; the rest spill to DDR, so their transfers are
visible as DDR-to-SRAM DMAs and costed at DDR bandwidth. HBM keeps room for
the activations: the most bytes live at once, in program order, of the user
inputs and the kernel outputs, each from its kernel to its last reader (the
HBM of a dead activation is reused; `rdu-insert-dma` frees each buffer after
its last reader). Values inside kernels live in SRAM and values crossing
kernels in HBM; `rdu-insert-dma` makes both explicit.

The weights one parameter of an outlined layer (`rdu-outline-layers`)
receives from its calls are placed together, in one tier, which is recorded
on the parameter (`tier.tier`) for `rdu-insert-dma`.

Residency by reads: a global's heat is the bytes its readers stream a step
(`weight_reads`: what each kernel's DMAs move of it, `kernel_model.input_reads`:
a whole read all of it, a gather of rows (an embedding lookup) the gathered
rows, an expert-parallel gather its `rdu.owned_rows` share, a window its
window; summed over the kernels and the calls of an outlined layer) per byte
it holds. Groups are placed hottest first (program order among equals), a
group that does not fit whole after the others as hot. A group whose every
row is read alike (`InputRead.by_rows`) that does not fit whole keeps as many
leading rows (runs of the last dim, `table_rows`) of each of its globals in HBM
as the HBM left holds: the global goes to DDR with `tier.hbm_rows` (also on
the outlined parameter), and the cost model reads that share of each read
from HBM (program_walk). So no weight read every step is in DDR while HBM
has room for more than a row of it.

In a pipelined program (rdu-partition, pp > 1) each stage's sockets have
their own HBM: a global counts against the stage that first reads it
(`global_homes`; the weights one outlined parameter receives from layers on
several stages, each against its own: `stage_parts`, which `rdu-place-saved`
counts by too), the activations against the stage whose ops make them
(`stage_activation_bytes`: a user input against the stages that read it).
Each stage spreads its own HBM over the groups' bytes on it; a group on
several stages keeps the least of their shares of rows. And
`tier.hbm_weight_bytes_by_stage` / `tier.ddr_weight_bytes_by_stage` record
one socket of each stage.

A global `rdu-place-saved` set to DDR (a training step's state it spilled)
stays there, and a kernel result it spilled to DDR is no HBM activation.

A model whose weights and activations exceed HBM + DDR is an error.
The result is recorded on the module: `tier.hbm_weight_bytes`,
`tier.ddr_weight_bytes` and `tier.activation_bytes`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import ClassVar

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ArrayAttr, DenseArrayBase, DictionaryAttr, IntegerAttr, ModuleOp, i64
from xdsl.ir import Attribute, Operation, SSAValue

from rducc.dialects import contracts
from rducc.dialects.contracts import (
    Level,
    arg_attrs,
    global_of,
    is_outlined,
    is_weight,
    module_target,
    op_stage,
    result_updates,
    set_hbm_rows,
    table_rows,
)
from rducc.dialects.liveness import live_end, positions
from rducc.dialects.program import callees_first, functions, global_stages
from rducc.dialects.rdu.dataflow import KernelOp
from rducc.dialects.saved import Placement, result_placement
from rducc.dialects.shapes import value_bytes
from rducc.dialects.tier import GlobalOp, Tier, TierAttr
from rducc.errors import RduccError
from rducc.model.in_place import written_in_place
from rducc.model.kernel_model import InputRead, input_reads, kernel_group
from rducc.passes.common import RduPass


def _first_use_order(module: ModuleOp) -> list[str]:
    """Global names in the order @forward's kernels first read them."""
    order: dict[str, None] = {}
    for function in functions(module):
        by_arg = {arg: name for arg, a in zip(function.args, arg_attrs(function)) if (name := global_of(a)) is not None}
        for op in function.body.block.ops:
            for operand in op.operands:
                if operand in by_arg:
                    order.setdefault(by_arg[operand])
        for name in by_arg.values():
            order.setdefault(name)
    return list(order)


def hbm_results(op: Operation, over_globals: frozenset[SSAValue] = frozenset()) -> list[SSAValue]:
    """The results of an op that live in HBM: all but those `rdu-place-saved` spilled to
    DDR and the new values written over their globals (`written_in_place`)."""
    return [r for i, r in enumerate(op.results) if result_placement(op, i) != Placement.DDR and r not in over_globals]


def peak_activation_bytes(function: func.FuncOp, callee_peaks: dict[str, int], stage: int | None = None) -> int:
    """The most activation bytes live at once in `function`'s HBM, in program
    order (`held_bytes`: the user inputs throughout, each kernel's or call's
    results from that op to their last reader, a call's callee's own peak while
    it runs). `stage`: only that pipeline stage's sockets' HBM; None: the whole
    program."""
    entry, held = held_bytes(function, callee_peaks, stage)
    return max([entry, *held])


def held_bytes(function: func.FuncOp, callee_peaks: Mapping[str, int],
               stage: int | None = None) -> tuple[int, list[int]]:
    """The activation bytes `function`'s HBM holds on entry, and while each of its
    ops runs, in program order: the user inputs throughout, each kernel's (or
    call's) results from that op to their last reader, as `rdu-insert-dma` frees
    them; a call holds its callee's own peak while it runs (an outlined layer's
    arguments are its caller's values, live across the whole call). `stage`: only
    that pipeline stage's sockets' HBM (`op_stage`: the results of its ops, the
    user inputs its ops read; an op of another stage holds nothing here); None:
    the whole program."""
    block = function.body.block
    ops = list(block.ops)
    position = positions(block)
    dead_after: dict[int, int] = {}
    over_globals = written_in_place(function)
    on_stage = [stage is None or op_stage(op) == stage for op in ops]
    for op, counted in zip(ops, on_stage):
        for result in hbm_results(op, over_globals) if counted else ():
            end = live_end(op, block, position, [result])
            dead_after[end] = dead_after.get(end, 0) + value_bytes(result)
    live = 0
    if not is_outlined(function):
        live = sum(
            value_bytes(arg) for arg, a in zip(function.args, arg_attrs(function))
            if global_of(a) is None  # a weight is placed on its own
            and (stage is None or stage in input_stages(arg))
        )
    entry, held = live, []
    for index, (op, counted) in enumerate(zip(ops, on_stage)):
        made = sum(value_bytes(r) for r in hbm_results(op, over_globals)) if counted else 0
        running = callee_peaks.get(op.callee.string_value(), 0) if isinstance(op, func.CallOp) else made
        held.append(live + running if counted else 0)
        live += made - dead_after.get(index, 0)  # a value another stage's op reads last still dies there
    return entry, held


def input_stages(arg: SSAValue) -> set[int]:
    """The pipeline stages whose sockets hold a user input: those of the ops that read
    it (`op_stage`; stage 0 when none does)."""
    return {op_stage(use.operation) for use in arg.uses} or {0}


def stage_count(function: func.FuncOp) -> int:
    """How many pipeline stages run `function`'s ops (1 when it is not pipelined)."""
    return 1 + max((op_stage(op) for op in function.body.block.ops), default=0)


def global_homes(module: ModuleOp) -> dict[str, int]:
    """Per global, the pipeline stage whose sockets' HBM holds it (that of its first
    reader, `global_stages`); empty when the step is not pipelined (every global on
    stage 0). `rdu-place-saved` and `rdu-place-tiers` both count a global so."""
    entries = [f for f in functions(module) if not is_outlined(f)]
    if max((stage_count(f) for f in entries), default=1) < 2:
        return {}
    return global_stages(module)


def stage_parts(sizes: Mapping[str, int], homes: Mapping[str, int]) -> dict[int, int]:
    """The bytes of the globals `sizes` names on each pipeline stage's sockets, each
    global on its own stage (`global_homes`): the weights one outlined parameter
    receives from layers on two stages count half on each, not all on one."""
    parts: dict[int, int] = {}
    for name, size in sizes.items():
        stage = homes.get(name, 0)
        parts[stage] = parts.get(stage, 0) + size
    return parts


def _activation_bytes(module: ModuleOp) -> int:
    """The peak of live activations over the module's entry functions."""
    peaks: dict[str, int] = {}
    for function in callees_first(module):
        peaks[function.sym_name.data] = peak_activation_bytes(function, peaks)
    return max(
        (peaks[f.sym_name.data] for f in functions(module) if not is_outlined(f)), default=0
    )


def stage_activation_bytes(module: ModuleOp) -> list[int]:
    """Per pipeline stage, the peak of live activations on its sockets' HBM over the
    module's entry functions (one entry when the program is not pipelined)."""
    peaks: dict[str, int] = {}
    for callee in callees_first(module):
        if is_outlined(callee):
            peaks[callee.sym_name.data] = peak_activation_bytes(callee, peaks)
    entries = [f for f in functions(module) if not is_outlined(f)]
    count = max((stage_count(f) for f in entries), default=1)
    return [max((peak_activation_bytes(f, peaks, stage if count > 1 else None) for f in entries), default=0)
            for stage in range(count)]


def _weight_parameters(module: ModuleOp) -> dict[tuple[str, int], list[str]]:
    """For each weight parameter of an outlined function (callee, index), the
    globals its calls pass there, in call order."""
    callees = {f.sym_name.data: f for f in functions(module) if is_outlined(f)}
    slots: dict[tuple[str, int], list[str]] = {}
    for function in functions(module):
        weights: dict[SSAValue, str] = {
            arg: name for arg, a in zip(function.args, arg_attrs(function)) if (name := global_of(a)) is not None
        }
        for call in function.body.block.ops:
            if not isinstance(call, func.CallOp) or call.callee.string_value() not in callees:
                continue
            callee = callees[call.callee.string_value()]
            for index, (operand, a) in enumerate(zip(call.arguments, arg_attrs(callee))):
                if is_weight(a) and operand in weights:
                    slots.setdefault((callee.sym_name.data, index), []).append(weights[operand])
    return slots


def _function_reads(function: func.FuncOp,
                    callee_reads: Callable[[str], dict[int, InputRead]]) -> dict[int, InputRead]:
    """For each argument of `function` something reads: the bytes one run of it reads of
    the argument (its kernels' DMAs, `input_reads`; a call's, its callee's parameter's;
    any other op's, the whole value), and whether every row is read alike."""
    index_of: dict[SSAValue, int] = {arg: i for i, arg in enumerate(function.args)}
    reads: dict[int, InputRead] = {}
    for op in function.body.block.ops:
        if isinstance(op, KernelOp):
            by_arg = input_reads(kernel_group(op))
            found = [(operand, by_arg[arg]) for arg, operand in zip(op.body.block.args, op.inputs)]
        elif isinstance(op, func.CallOp):
            callee = callee_reads(op.callee.string_value())
            found = [(operand, read) for i, operand in enumerate(op.arguments) if (read := callee.get(i)) is not None]
        else:
            found = [(operand, InputRead(value_bytes(operand), True)) for operand in op.operands]
        for operand, read in found:
            if (i := index_of.get(operand)) is not None:
                before = reads.get(i, InputRead(0, True))
                reads[i] = InputRead(before.bytes + read.bytes, before.by_rows and read.by_rows)
    return reads


def weight_reads(module: ModuleOp) -> dict[str, InputRead]:
    """Each global's reads a step: the bytes its readers stream (summed over the entry
    functions, an outlined layer's over its calls) and whether every row is read alike;
    a global nothing reads is missing. A global the step writes (an optimizer's weight,
    a cache) counts as not read alike: a write-back goes to the global's one tier, so
    it is never split between HBM and DDR."""
    bodies = {f.sym_name.data: f for f in functions(module)}
    reads: dict[str, dict[int, InputRead]] = {}

    def of(name: str) -> dict[int, InputRead]:
        if name not in reads and name in bodies:
            reads[name] = {}  # a call back into a function being read reads nothing more
            reads[name] = _function_reads(bodies[name], of)
        return reads.get(name, {})

    found: dict[str, InputRead] = {}
    for function in functions(module):
        if is_outlined(function):
            continue
        for update in result_updates(function):
            if update is not None and update.kind == "buffer":  # written a step: kept whole, in one tier
                found[update.name] = InputRead(found.get(update.name, InputRead(0, False)).bytes, False)
        for i, a in enumerate(arg_attrs(function)):
            if (name := global_of(a)) is not None and (read := of(function.sym_name.data).get(i)) is not None:
                before = found.get(name, InputRead(0, True))
                found[name] = InputRead(before.bytes + read.bytes, before.by_rows and read.by_rows)
    return found


def weights_sharing_a_parameter(module: ModuleOp) -> dict[str, list[str]]:
    """Globals that must share a tier, as one callee parameter receives them all:
    each such global names the whole group."""
    together: dict[str, list[str]] = {}
    for names in _weight_parameters(module).values():
        group = list(dict.fromkeys(n for name in names for n in together.get(name, [name])))
        for name in group:
            together[name] = group
    return together


def record_parameter_tiers(module: ModuleOp, globals_: dict[str, GlobalOp]) -> None:
    """Write on each weight parameter of an outlined function the tier of its weights
    (`tier.tier`), which `rdu-insert-dma` gives the parameter's buffer."""
    callees = {f.sym_name.data: f for f in functions(module) if is_outlined(f)}
    for (callee_name, index), names in _weight_parameters(module).items():
        callee = callees[callee_name]
        tier = globals_[names[0]].tier
        assert tier is not None and all(globals_[n].tier == tier for n in names)
        assert callee.arg_attrs is not None
        attrs = list(callee.arg_attrs.data)
        marks: dict[str, Attribute] = {contracts.PARAMETER_TIER: tier}
        if hot := contracts.hbm_rows(globals_[names[0]].attributes):
            marks[contracts.HBM_ROWS] = IntegerAttr(hot, i64)
        attrs[index] = DictionaryAttr({**attrs[index].data, **marks})
        callee.arg_attrs = ArrayAttr(attrs)


@dataclass(frozen=True)
class RduPlaceTiers(RduPass):
    """Put weights in HBM, spilling to DDR when HBM is full."""

    name = "rdu-place-tiers"
    accepts: ClassVar[tuple[Level, ...]] = (Level.KERNELS,)
    on_tensors: ClassVar[bool] = True

    def rewrite(self, ctx: Context, op: ModuleOp) -> None:
        target = module_target(op, self.target)
        globals_ = {g.sym_name.data: g for g in op.ops if isinstance(g, GlobalOp)}
        activations = _activation_bytes(op)
        stages = global_homes(op)  # pipeline stages: each its own sockets' HBM
        by_stage = stage_activation_bytes(op)
        count = max(len(by_stage), max(stages.values(), default=0) + 1)
        hbm_free = [target.hbm_bytes - (by_stage[s] if s < len(by_stage) else 0) for s in range(count)]
        hbm_by_stage = [0] * count
        ddr_by_stage = list(hbm_by_stage)
        reads = weight_reads(op)
        groups = [_Group.of(names, globals_, reads, stages) for names in _groups_by_heat(op, globals_, reads)]
        spread = _spread_fractions(groups, hbm_free)
        for index, group in enumerate(groups):
            hot_rows = group.rows_in_hbm(group.room(hbm_free, hbm_by_stage), spread.get(index))
            for name in group.names:
                table = globals_[name]
                table.tier = TierAttr(Tier.HBM if hot_rows is None else Tier.DDR)
                if hot_rows:
                    set_hbm_rows(table, hot_rows)
                in_hbm, in_ddr = table.resident_bytes()
                hbm_by_stage[stages.get(name, 0)] += in_hbm
                ddr_by_stage[stages.get(name, 0)] += in_ddr
        record_parameter_tiers(op, globals_)
        hbm_used, ddr_used = sum(hbm_by_stage), sum(ddr_by_stage)
        if max(ddr_by_stage) > target.ddr_bytes or max(by_stage) > target.hbm_bytes:
            worst = max(range(len(by_stage)), key=by_stage.__getitem__)
            where = f" (pipeline stage {worst}'s sockets)" if len(by_stage) > 1 else ""
            raise RduccError(
                f"the model does not fit {target.name}: {hbm_used + ddr_used} bytes of weights "
                f"and {by_stage[worst]} bytes of activations{where}, against {target.hbm_bytes} bytes of HBM "
                f"and {target.ddr_bytes} bytes of DDR"
            )
        op.attributes[contracts.HBM_WEIGHT_BYTES] = IntegerAttr(hbm_used, i64)
        op.attributes[contracts.DDR_WEIGHT_BYTES] = IntegerAttr(ddr_used, i64)
        op.attributes[contracts.ACTIVATION_BYTES] = IntegerAttr(activations, i64)
        if len(hbm_by_stage) > 1:  # one socket of each pipeline stage
            op.attributes[contracts.HBM_WEIGHT_BYTES_BY_STAGE] = DenseArrayBase.from_list(i64, hbm_by_stage)
            op.attributes[contracts.DDR_WEIGHT_BYTES_BY_STAGE] = DenseArrayBase.from_list(i64, ddr_by_stage)


def heat(names: list[str], globals_: dict[str, GlobalOp], reads: dict[str, InputRead]) -> float:
    """Bytes a step reads of a group of globals per byte they hold (`weight_reads`):
    1 for weights read whole once a step, the selected share for tables read by rows."""
    held = sum(value_bytes(globals_[n].global_type) for n in names)
    return sum(reads[n].bytes for n in names if n in reads) / max(held, 1)


def _groups_by_heat(module: ModuleOp, globals_: dict[str, GlobalOp], reads: dict[str, InputRead]) -> list[list[str]]:
    """The globals in placement order, each with the others of its outlined parameter:
    hottest first (`heat`), in the order the program first reads them among equals."""
    read = [n for n in _first_use_order(module) if n in globals_]
    together = weights_sharing_a_parameter(module)
    groups: list[list[str]] = []
    placed: set[str] = set()
    for first in read + [n for n in globals_ if n not in set(read)]:
        if first not in placed:
            groups.append(together.get(first, [first]))
            placed.update(groups[-1])
    return sorted(groups, key=lambda names: -heat(names, globals_, reads))


@dataclass(frozen=True)
class _Group:
    """Globals placed together (one outlined parameter's), as the placement sees them."""

    names: list[str]
    size: int
    heat: float
    parts: dict[int, int]
    """Its bytes on each pipeline stage's sockets (`stage_parts`)."""
    rows: int
    """Rows (`table_rows`) of each of its globals; 0 when they cannot keep a share of
    their rows in HBM (row counts differ, or a reader reads some rows more than others)."""
    spilled: bool
    """`rdu-place-saved` put all of them in DDR."""

    @staticmethod
    def of(names: list[str], globals_: dict[str, GlobalOp], reads: dict[str, InputRead],
           stages: dict[str, int]) -> _Group:
        tables = [globals_[n] for n in names]
        counts = {table_rows(t.global_type.get_shape()) for t in tables}
        by_rows = all(reads.get(n, InputRead(0, False)).by_rows for n in names)
        (rows,) = counts if len(counts) == 1 and by_rows else {0}
        parts = stage_parts({n: value_bytes(t.global_type) for n, t in zip(names, tables)}, stages)
        return _Group(names, sum(parts.values()), heat(names, globals_, reads), parts, rows if rows > 1 else 0,
                      all(t.tier == TierAttr(Tier.DDR) for t in tables))

    def room(self, free: list[int], used: list[int]) -> int:
        """The HBM left for it: as much of it as fits each of its stages' room alike
        (one outlined parameter's weights, its layers on several stages, keep the
        same share of rows on every stage); on one stage, that stage's room."""
        shares = [(free[s] - used[s]) / part for s, part in self.parts.items() if part]
        return int(self.size * min(shares)) if shares else free[0] - used[0]

    def rows_in_hbm(self, room: int, fraction: float | None) -> int | None:
        """None: all in HBM; 0: all in DDR; k > 0: the leading k rows of each in HBM.
        `fraction`: the share of its bytes the spread gives it (`_spread_fractions`),
        else as much as `room` holds."""
        if self.spilled:
            return 0  # spilled by rdu-place-saved, at the least modeled cost
        if fraction is None and self.size <= room:
            return None
        if not self.rows:
            return 0
        share = fraction if fraction is not None else room / self.size
        rows = int(self.rows * min(max(share, 0.0), 1.0))
        return None if rows >= self.rows else rows


def _spread_fractions(groups: list[_Group], free: list[int]) -> dict[int, float]:
    """The share of its bytes each group at the margin keeps in HBM (by index in `groups`,
    hottest first): where the groups stop fitting whole, the heat of the first that does
    not is the margin, and every group of that heat whose rows can be split keeps the
    same share, what HBM has left after the hotter ones and the margin's unsplittable
    ones that fit. A kernel reads DDR and HBM at once (its time is its busiest tier's),
    so equally hot weights each part in DDR overlap their DDR reads with their HBM
    reads; filling HBM with some of them whole and leaving the others in DDR would not.
    In a pipelined step each stage's sockets spread their own HBM over the groups'
    bytes on that stage (`_Group.parts`); a group on several stages keeps the least
    of its stages' shares (one share of rows for all its weights)."""
    fractions: dict[int, float] = {}
    for stage in {s for g in groups for s in g.parts}:
        members = [(i, g, g.parts[stage]) for i, g in enumerate(groups) if g.parts.get(stage) and not g.spilled]
        used, margin = 0, None
        for _, group, part in members:
            if used + part > free[stage]:
                margin = group.heat
                break
            used += part
        if margin is None:
            continue
        level = [(i, part) for i, g, part in members if math.isclose(g.heat, margin) and g.rows]
        taken = sum(part for _, g, part in members if g.heat > margin and not math.isclose(g.heat, margin))
        kept = _unsplit_at_margin(members, margin, free[stage] - taken)
        share = (free[stage] - taken - kept) / max(sum(part for _, part in level), 1)
        for i, _ in level:
            fractions[i] = min(share, fractions.get(i, share))
    return fractions


def _unsplit_at_margin(members: list[tuple[int, _Group, int]], margin: float, room: int) -> int:
    """Bytes (on one stage: each member's part there) the margin's groups that cannot be
    split take of `room`, whole, in order."""
    kept = 0
    for _, group, part in members:
        if math.isclose(group.heat, margin) and not group.rows and not group.spilled and kept + part <= room:
            kept += part
    return kept
