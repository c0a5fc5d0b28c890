"""`rdu-place-saved`: where a training step keeps what the backward needs.

On a training step (`rducc.dialects.saved`: the loss first; the forward is
what the loss depends on) every saved value (a forward kernel's result read
by the backward or the optimizer) and every gradient (a backward result the
optimizer reads, or returned) gets a placement, recorded per kernel result
as `rdu.saved`:

- `sram`: forward and backward ops fused into one kernel read it there: it
  never leaves the chip (counted, nothing to decide);
- `hbm`: the default, when the step's HBM demand fits;
- `ddr`: spilled (`rdu-insert-dma` gives the kernel's result a DDR buffer;
  its readers DMA it from there);
- `recompute`: the forward kernel is cloned just before its first backward
  reader, which reads the clone's result (activation checkpointing), with
  the forward kernels it needs (at most `RECOMPUTE_CHAIN_LIMIT`), back to
  values the backward has anyway: weights, user inputs, saved values kept in
  memory (which then stay: a recompute's inputs are never recomputed). A
  forward call of an outlined layer is run again the same way, from its
  own operands (the layer's input and weights, held in HBM until the clone
  runs), giving all its saved results at once but the one another forward
  call reads (the next layer's input, which that layer's clone reads): the
  new call's callee is the layer cut to those results (`callee_cone`,
  `@layer_forward_recompute`), so the output and what only it needs (a
  down projection and its tp all-reduce) do not run again.

The HBM demand of a step is its globals (weights, optimizer state) plus the
peak of live activations (each kernel result from its kernel to its last
reader, gradients included). In a pipelined step (rdu-partition, pp > 1)
each stage's sockets have their own HBM, counted apart as `rdu-place-tiers`
counts them (`_Demand`): a global against the stage that first reads it, a
kernel result against its op's stage (`op_stage`), a user input against the
stages that read it. While a stage's demand exceeds the target's HBM, the
pass takes, at the stage that exceeds it most, the candidate of least modeled
cost per byte among those that free bytes at that stage's current peak:

- a value between kernels (a saved value, a gradient, or any other kernel
  result, such as the backward's large temporaries) to DDR: what it adds to
  the modeled time of the kernels that write it there and read it back
  (`_Pricer`: each timed as the cost model times it, `Traffic.seconds`, with
  its bytes at DDR rather than HBM bandwidth; a kernel bound by its compute
  hides them), the kernels inside outlined layers included (a call's result
  in DDR is the callee's kernel result, which the callee's own kernels read
  back from there; a call's operand in DDR is the callee's parameter, read
  from there by each of its kernels), once per call; a gradient the step
  returns too, never the loss, nor a value only the next kernel reads (kept
  on chip when it takes at most a quarter of the SRAM);
- a recompute: its chain's modeled time (`kernel_seconds`: per kernel, as the
  cost model times it before tiling, the DMA start-up, pipeline fill and launch
  included, and the link time of the collectives in its body, which run again;
  per layer call, its callee's kernels');
- a global to DDR: what it adds to the kernels that read it, write its
  update in place and read that update back, priced the same way
  (`rdu-place-tiers` keeps the tier), with the others one outlined parameter
  receives (`rdu-place-tiers` gives them one tier); once the step fits, the
  spilled globals it does not need go back (`_keep_globals`), and so do the
  spilled values (`_keep_values`, the costliest first).

A kernel's DDR bytes add up and its other resources do not, so what a spill
adds never falls as the plan spills more: a spill or a global is priced
against what was in DDR before the plan, and again against what the plan has
put there when it is taken (`_repriced`), going back in the order at its new
price if that rose (the greedy choice stays cheapest per byte as placed).

A value an outlined layer holds (the results of its calls at one index, or
the operands of its calls at one index: an outlined phase's layers, such as
the optimizer's updates) has one placement for all its calls, as the callee
decides it: a spill of one spills them all, marks the callee's kernel result
`ddr` and its parameter `tier.tier = ddr` (`rdu-insert-dma` types them so),
and is not taken when the slot also holds a value that cannot go to DDR, nor
when the callee returns the value at two indices (one kernel result, two
slots). A recompute of a call's results keeps them in HBM, the callee's
tier, so the calls of one callee may differ in that (some recomputed, some
kept), but a group with a member in DDR is not recomputed and a group with
a recomputed member does not spill. A call whose saved results include such
a blocked value (a slot the callee spills for every call, the layer's output
a later recompute reads) is recomputed for the rest (`_narrowed`: the callee
cut to them, costed by that cut), the blocked value kept where it is.
A view kernel's result (a reshape or contiguous slice, which `rdu-insert-dma`
makes a `tier.view` of its input's buffer: a bias gradient, the summed rows
reshaped) lives where its input lives, so the two share one
placement too (`shared_placements`): the tier each call passes at an index
of an outlined layer is one fact, the callee's parameter's.

The plan is made with recomputes and with spills alone, and the one that fits
and adds least modeled time is kept (`cheaper_plan`): a choice taken cheapest per
byte at the peak is no least total (a recompute may free bytes where the spills
the step needs anyway free them too). A plan that takes every recompute before
any spill is weighed as well when the mixed plan stops short of fitting. A spill
of a value is charged the saving it takes from the recomputes still open that it
closes or narrows (`_closing_charge`): for each, what freeing the bytes it would
still free costs after the spill (the call cut to them, or their spills) beyond
what it costs before (the recompute's price for them pro rata, or their spills),
so a value a layer call's recompute gives, spilled at nothing while the cut costs
as much, costs what the recompute does per byte, and at a tie the recompute comes
first. The charge is an estimate made as a spill comes up, which can steer the
greedy to a plan its own price finds dearer (the 80-layer 70B step at pp=2: a
weight group in DDR where slot spills the step could afford were cheaper), so when
a charge was made the plan made without it and the recomputes-first plan are
weighed too. Each plan is priced from its final placements
(`plan_price`), not its choices' prices summed as taken: every kernel its DDR
values and globals touch, timed with all its DDR bytes at once (`_Pricer.price`),
and the recomputes kept (a layer call's cut to what it still gives), their
kernels reading what is in DDR from there.

Both rounds count the step's peak as `rdu-place-tiers` does: a layer call holds
its callee's own peak while it runs (`_CalleeHeld`: the callee's activations, as
`held_bytes` counts them, less the results the plan puts in DDR, which the callee
then writes there), so the first round sees what the layers hold, not only what
passes between them. If the program with its recomputes in place (their clones,
which hold their cut callee's peak, and the longer lives of their inputs) still
exceeds HBM, a second round plans again on that program by the same rule: spills
and recomputes, each where it costs less per byte freed. Every figure comes from
the target; the costs are modeled, not measured.

Every kernel and call gets `rdu.phase`; globals the step writes back that
are not parameters are marked `rdu.memory_class = "optimizer state"`. The
module gets `rdu.training_memory`: the bytes of activations and gradients by
placement, and the spilled new values of weights and optimizer state (the
updates the step writes back, `update_classes`) under their class (the
report adds the globals' final tiers).

The planner drops a candidate once it is closed for good (`_applies`: None)
and keeps the live-bytes profile per position up to date as placements
change (`_Liveness.place`), rather than rescanning every candidate and
recounting every value after each choice.
"""

from __future__ import annotations

import bisect
from collections.abc import Container, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np
from xdsl.context import Context
from xdsl.dialects import arith, func
from xdsl.dialects.builtin import ArrayAttr, DictionaryAttr, ModuleOp, StringAttr
from xdsl.ir import Block, BlockArgument, Operation, OpResult, SSAValue

from rducc.dialects.contracts import (
    OUTLINED_FROM,
    PARAMETER_TIER,
    Level,
    Phase,
    arg_attrs,
    calls_of,
    global_of,
    is_outlined,
    op_stage,
    result_updates,
    set_outlined,
    set_phase,
)
from rducc.dialects.program import callees_first, functions
from rducc.dialects.rdu.dataflow import KernelOp, YieldOp
from rducc.dialects.saved import (
    RECOMPUTES,
    SAVED,
    Placement,
    SavedValue,
    TrainingStep,
    result_placement,
    saved_of,
    set_memory_class,
    set_saved,
    set_training_memory,
    training_memory,
    training_step,
)
from rducc.dialects.shapes import value_bytes
from rducc.dialects.tier import GlobalOp, Tier, TierAttr
from rducc.dialects.unchanged import unchanged
from rducc.model.in_place import written_in_place
from rducc.model.kernel_model import make_group
from rducc.model.kernel_timing import kernel_link_cost
from rducc.model.roofline import kernel_roofline_s
from rducc.passes.common import RduPass
from rducc.passes.rdu_fuse import Traffic, group_traffic, weigh
from rducc.passes.rdu_insert_dma import viewed_input
from rducc.passes.rdu_place_tiers import (
    global_homes,
    hbm_results,
    held_bytes,
    input_stages,
    peak_activation_bytes,
    stage_count,
    stage_parts,
    weights_sharing_a_parameter,
)
from rducc.targets import Target


@dataclass
class _Candidate:
    """One way to free HBM: its modeled extra seconds per step and what it frees."""

    cost_s: float
    freed: int
    saved: SavedValue | None = None
    placement: Placement = Placement.DDR
    global_names: tuple[str, ...] = ()
    chain: tuple[Operation, ...] = ()
    """For a recompute: the forward kernels and layer calls it runs again, producers first."""
    also: tuple[SavedValue, ...] = ()
    """For a recompute of a layer call: its other saved results the same clone gives."""

    @property
    def values(self) -> tuple[SavedValue, ...]:
        """The saved values the candidate places."""
        return () if self.saved is None else (self.saved, *self.also)

    @property
    def cost_per_byte(self) -> float:
        return self.cost_s / max(self.freed, 1)


def _hbm_seconds(target: Target, n: int) -> float:
    return n / target.sustained_bandwidth("hbm")


def _ddr_extra_seconds(target: Target, n: int) -> float:
    """What moving `n` bytes at DDR rather than HBM bandwidth adds."""
    return n / target.sustained_bandwidth("ddr") - _hbm_seconds(target, n)


def _global_sizes(module: ModuleOp) -> dict[str, int]:
    return {g.sym_name.data: value_bytes(g.global_type) for g in module.ops if isinstance(g, GlobalOp)}


class _CalleeHeld:
    """What an outlined function's HBM holds while a call of it runs (`held_bytes`, as
    `rdu-place-tiers` counts a call), less the results its caller's plan puts in DDR:
    a spilled slot of a layer's calls is its callee's kernel result in DDR
    (`_mark_callee_result`), which its own peak no longer holds."""

    def __init__(self, callee: func.FuncOp, peaks: Mapping[str, int]):
        _, held = held_bytes(callee, peaks)
        self.held = np.array(held or [0], dtype=np.int64)
        returned = callee.body.block.last_op
        over_globals = written_in_place(callee)
        counted = frozenset(r for op in callee.body.block.ops for r in hbm_results(op, over_globals))
        order = {op: i for i, op in enumerate(callee.body.block.ops)}
        self.returns: list[tuple[int, int] | None] = []
        """Per returned index, from which of the callee's positions its bytes are held
        (a kernel's result from its kernel, a call's after it) and how many."""
        for value in returned.operands if returned is not None else ():
            if isinstance(value, OpResult) and value in counted:
                start = order[value.op] + (1 if isinstance(value.op, func.CallOp) else 0)
                self.returns.append((start, value_bytes(value)))
            else:
                self.returns.append(None)

    def peak(self, in_ddr: Iterable[int]) -> int:
        """The most it holds at once with the results at indices `in_ddr` in DDR."""
        held = self.held.copy()
        for start, size in {self.returns[i] for i in in_ddr if self.returns[i] is not None}:  # type: ignore[misc]
            held[start:] -= size
        return max(0, int(held.max()))


def callee_holds(module: ModuleOp) -> dict[str, _CalleeHeld]:
    """Per outlined function, what a call of it holds (`_CalleeHeld`)."""
    peaks = callee_peaks(module)
    return {f.sym_name.data: _CalleeHeld(f, peaks) for f in callees_first(module) if is_outlined(f)}


class _Liveness:
    """The HBM peak of a function's activations under a set of placements, per pipeline
    stage (`op_stage`: each stage's sockets have their own HBM; one stage when the step
    is not pipelined); a call holds its callee's own peak while it runs, less the
    results the placements put in DDR (`_CalleeHeld`)."""

    def __init__(self, function: func.FuncOp, step: TrainingStep, in_place: frozenset[SSAValue] = frozenset(),
                 callees: Mapping[str, _CalleeHeld] | None = None):
        block = function.body.block
        self.ops = list(block.ops)
        self.position = {op: i for i, op in enumerate(self.ops)}
        self.stages = stage_count(function)
        self.inputs = np.zeros(self.stages, dtype=np.int64)
        for arg, attrs in zip(function.args, arg_attrs(function)):
            if global_of(attrs) is None:
                for stage in input_stages(arg):
                    self.inputs[stage] += value_bytes(arg)
        self.phases = step.phases
        self.stage: dict[SSAValue, int] = {}
        """Per kernel result, the stage whose HBM holds it (its op's)."""
        self.intervals: dict[SSAValue, tuple[int, int, int]] = {}
        """Per value, the first and last positions it may hold HBM at, and its bytes: a
        call's results from the op after it (while it runs, its callee's peak holds
        them, as `peak_activation_bytes` counts a call)."""
        self.delta = np.zeros((self.stages, len(self.ops) + 2), dtype=np.int64)
        """Per stage and position, the bytes that start holding HBM there less those that
        stopped just before."""
        self.callees = callees or {}
        self.inner: dict[func.CallOp, int] = {}
        """Per call of an outlined function, what its callee holds while it runs, as counted in `delta`."""
        for at, op in enumerate(self.ops):
            stage = op_stage(op) if self.stages > 1 else 0
            start = at + (1 if isinstance(op, func.CallOp) else 0)
            for result in op.results:
                readers = [self._top(use.operation) for use in result.uses]
                end = max((self.position[r] for r in readers if r is not None), default=at)
                size = 0 if result in in_place else value_bytes(result)  # the global's bytes, counted apart
                self.intervals[result] = (start, end, size)
                self.stage[result] = stage
            if isinstance(op, func.CallOp) and op.callee.string_value() in self.callees:
                self._hold_callee(op, {})
        self.counted: dict[SSAValue, list[tuple[int, int]]] = {}
        """The spans each value is counted at in `delta`."""

    def _hold_callee(self, call: func.CallOp, placements: Mapping[SSAValue, Placement]) -> None:
        """Count what `call`'s callee holds while it runs, its results in DDR under
        `placements` taken off (`_CalleeHeld.peak`)."""
        held = self.callees[call.callee.string_value()]
        inner = held.peak(i for i, r in enumerate(call.results) if placements.get(r) == Placement.DDR)
        at = self.position[call]
        row = self.delta[op_stage(call) if self.stages > 1 else 0]
        change = inner - self.inner.get(call, 0)
        row[at] += change
        row[at + 1] -= change
        self.inner[call] = inner

    def _top(self, op: Operation | None) -> Operation | None:
        while op is not None and op not in self.position:
            op = op.parent_op()
        return op

    def spans(self, value: SSAValue, placement: Placement | None,
               recomputed: dict[SSAValue, SavedValue]) -> list[tuple[int, int]]:
        """The [start, end] positions `value` holds HBM under `placement`."""
        start, end, _ = self.intervals[value]
        if placement == Placement.DDR:
            return []
        if placement != Placement.RECOMPUTE:
            return [(start, end)] if start <= end else []
        saved = recomputed[value]
        later = [self.position[r] for r in saved.later_readers]
        earlier = [self.position[t] for u in value.uses
                   if (t := self._top(u.operation)) is not None and t not in saved.later_readers]
        forward = (start, max(earlier, default=self.position[saved.producer]))
        return [span for span in (forward, (min(later), max(later))) if span[0] <= span[1]]

    def place(self, values: Iterable[SSAValue], placements: dict[SSAValue, Placement],
              recomputed: dict[SSAValue, SavedValue]) -> None:
        """Count `values` at their placements now (each once: a value counted before
        is taken off at its old spans first)."""
        for value in values:
            if value not in self.intervals:
                continue  # an argument: counted apart
            size = self.intervals[value][2]
            row = self.delta[self.stage[value]]
            for start, end in self.counted.get(value, ()):
                row[start] -= size
                row[end + 1] += size
            spans = self.spans(value, placements.get(value), recomputed)
            for start, end in spans:
                row[start] += size
                row[end + 1] -= size
            self.counted[value] = spans
            if isinstance(value, OpResult) and value.op in self.inner:
                self._hold_callee(value.op, placements)  # type: ignore[arg-type]

    def peaks(self) -> list[tuple[int, int]]:
        """Per stage, the most bytes live at once and the (first) position where that
        happens, under the placements counted (`place`)."""
        found = []
        for stage in range(self.stages):
            live = self.inputs[stage] + np.cumsum(self.delta[stage])
            at = int(np.argmax(live))
            found.append((int(live[at]), at) if live[at] > self.inputs[stage] else (int(self.inputs[stage]), 0))
        return found

    def hold(self, value: SSAValue, readers: list[Operation], placements: dict[SSAValue, Placement],
             recomputed: dict[SSAValue, SavedValue]) -> None:
        """`value` is read again by ops placed before `readers` (a recompute's clone): it
        stays in HBM until the last of them."""
        if value not in self.intervals:
            return  # an argument: counted apart
        start, end, size = self.intervals[value]
        self.intervals[value] = (start, max(end, *(self.position[r] for r in readers)), size)
        self.place([value], placements, recomputed)

    def frees_at(self, value: SSAValue, placement: Placement, saved: SavedValue, at: _At) -> bool:
        """Whether placing `value` so takes it off the HBM live at `at` (a stage's position)."""
        if self.stage.get(value, 0) != at.stage:
            return False
        held = self.spans(value, None, {})
        after = self.spans(value, placement, {value: saved})
        covers = any(s <= at.position <= e for s, e in held)
        return covers and not any(s <= at.position <= e for s, e in after)


@dataclass(frozen=True)
class _At:
    """Where a step's HBM demand exceeds HBM the most: a pipeline stage and a position
    in program order."""

    stage: int
    position: int


class _Demand:
    """A step's HBM demand per pipeline stage: the globals it holds in HBM (each on its
    stage, `global_homes`) plus its activations' peak, as `rdu-place-tiers` counts it."""

    def __init__(self, module: ModuleOp, sizes: dict[str, int], liveness: _Liveness, hbm_bytes: int):
        self.sizes = sizes
        self.stage_of = global_homes(module)
        self.liveness = liveness
        self.hbm_bytes = hbm_bytes

    def on_stages(self, names: Iterable[str]) -> list[int]:
        """Per stage, the bytes of the globals `names` (`stage_parts`)."""
        parts = stage_parts({n: self.sizes[n] for n in names}, self.stage_of)
        return [parts.get(stage, 0) for stage in range(self.liveness.stages)]

    def globals_in_hbm(self, ddr_globals: Container[str]) -> list[int]:
        """Per stage, the bytes of the globals not in `ddr_globals`."""
        return self.on_stages(n for n in self.sizes if n not in ddr_globals)

    def worst(self, ddr_globals: Container[str]) -> _At | None:
        """The stage whose demand exceeds HBM the most and its activations' peak there;
        None when every stage fits."""
        excess = [(held + peak - self.hbm_bytes, _At(stage, at)) for stage, (held, (peak, at))
                  in enumerate(zip(self.globals_in_hbm(ddr_globals), self.liveness.peaks()))]
        over, at = max(excess, key=lambda e: e[0])
        return at if over > 0 else None

    def spare(self, ddr_globals: Container[str]) -> list[int]:
        """Per stage, the HBM its globals in HBM and its activations' peak leave."""
        return [self.hbm_bytes - held - peak for held, (peak, _) in
                zip(self.globals_in_hbm(ddr_globals), self.liveness.peaks())]


RECOMPUTE_CHAIN_LIMIT = 8
"""The most forward kernels and layer calls one recompute may run again."""


def recompute_chain(saved: SavedValue, kept: set[SSAValue], phases: dict[Operation, Phase]) -> list[Operation] | None:
    """The forward kernels and calls of outlined layers, producers first, that compute
    `saved` again from values the backward has anyway (arguments, and the saved values
    in `kept`); None when there is no such chain of at most `RECOMPUTE_CHAIN_LIMIT` ops."""
    chain: list[Operation] = []
    seen: set[Operation] = set()

    def reachable(value: SSAValue) -> bool:
        if isinstance(value, BlockArgument) or value in kept:
            return True
        op = value.owner
        if op in seen:
            return True
        if not isinstance(op, KernelOp | func.CallOp) or (isinstance(op, func.CallOp) and _callee(op) is None):
            return False
        if phases.get(op) != Phase.FORWARD or len(chain) >= RECOMPUTE_CHAIN_LIMIT:
            return False
        seen.add(op)
        if not all(reachable(v) for v in op.operands):
            return False
        chain.append(op)
        return True

    return chain if reachable(saved.value) and chain else None


def chain_inputs(chain: list[Operation]) -> set[SSAValue]:
    """The values a recompute chain reads from outside itself."""
    inside = set(chain)
    return {v for op in chain for v in op.operands if not (isinstance(v.owner, Operation) and v.owner in inside)}


def _temporaries(step: TrainingStep, in_place: frozenset[SSAValue] = frozenset()) -> list[SavedValue]:
    """Kernel results crossing kernels that are neither saved values nor gradients, and
    the results of calls of outlined layers (an outlined phase's layers: the optimizer's
    updates, say) that a kernel of the callee returns (`_callee_producer`); not the new
    values written over their globals (`in_place`), which hold no bytes of their own."""
    known = {s.value for s in (*step.saved, *step.gradients)} | in_place
    found = []
    for op in step.phases:
        if not isinstance(op, KernelOp | func.CallOp):
            continue
        for result in op.results:
            if _callee_holds_unplaced(result):
                continue
            readers = list(dict.fromkeys(u.operation for u in result.uses))
            if result not in known and readers:
                found.append(SavedValue(result, op, result.index, readers))
    return found


_CALLEES: dict[int, dict[str, func.FuncOp]] = {}
"""The outlined functions of the module being rewritten, by name (`RduPlaceSaved.rewrite`
fills it and clears it): the planner asks for a call's callee for every member of every
value group it weighs, and a scan of the module's ops (a global per weight) each time
grew with the cube of the depth."""


def _callee(call: func.CallOp) -> func.FuncOp | None:
    module = call.parent_op()
    while module is not None and not isinstance(module, ModuleOp):
        module = module.parent_op()
    if module is None:
        return None
    name = call.callee.string_value()
    known = _CALLEES.get(id(module))
    if known is not None:
        return known.get(name)
    return next((f for f in functions(module) if f.sym_name.data == name and is_outlined(f)), None)


def _callee_producer(call: func.CallOp, index: int) -> tuple[KernelOp, int] | None:
    """The kernel of the outlined callee that makes the call's result `index` (and which
    of its results), when the callee returns a kernel result there: a DDR placement of
    it is the callee's, so it holds for every call of the callee."""
    callee = _callee(call)
    if callee is None:
        return None
    terminator = callee.body.block.last_op
    if not isinstance(terminator, func.ReturnOp) or index >= len(terminator.arguments):
        return None
    value = terminator.arguments[index]
    if not isinstance(value, OpResult) or not isinstance(value.op, KernelOp):
        return None
    if sum(1 for v in terminator.arguments if v is value) > 1:
        return None  # one kernel result returned twice: its placement is not one result's
    return value.op, value.index


def shared_placements(function: func.FuncOp) -> dict[SSAValue, list[SSAValue]]:
    """Values that must share a placement, transitively:

    - the results of every call of a callee at one index (the callee's kernel
      writes them) and the operands of every call of a callee at one index (the
      callee's parameter reads them, in one tier);
    - a view kernel's result and the input it is a window of (`viewed_input`:
      `rdu-insert-dma` makes it a `tier.view` of the input's buffer, so it lives
      where the input lives, whatever its own placement says).

    Each such value names its whole group."""
    parent: dict[SSAValue, SSAValue] = {}
    seen: dict[SSAValue, None] = {}  # in order: the groups come out the same each run

    def find(value: SSAValue) -> SSAValue:
        while parent.get(value, value) is not value:
            value = parent[value]
        return value

    def join(a: SSAValue, b: SSAValue) -> None:
        seen.update({a: None, b: None})
        ra, rb = find(a), find(b)
        if ra is not rb:
            parent[rb] = ra

    first: dict[tuple[str, str, int], SSAValue] = {}
    for op in function.body.block.ops:
        if isinstance(op, KernelOp):
            for index, result in enumerate(op.results):
                if (source := viewed_input(op, index)) is not None:
                    join(source, result)
        if not isinstance(op, func.CallOp):
            continue
        name = op.callee.string_value()
        slots = [("out", i, r) for i, r in enumerate(op.results)] + [("in", i, v) for i, v in enumerate(op.arguments)]
        for kind, index, value in slots:
            join(first.setdefault((name, kind, index), value), value)
    groups: dict[SSAValue, list[SSAValue]] = {}
    for value in seen:
        groups.setdefault(find(value), []).append(value)
    return {v: members for members in groups.values() if len(members) > 1 for v in members}


_UNPLACED: dict[SSAValue, bool] = {}
"""`_callee_holds_unplaced`'s answers while one plan is made (`plan_placements` clears it):
the planner asks again for every member of a group each time it weighs a candidate."""


def _callee_holds_unplaced(value: SSAValue) -> bool:
    """Whether `value` is a call's result that no kernel of the callee returns (the
    callee passes a parameter through, or returns one kernel result twice): no DDR
    placement of the callee's can hold it, so it cannot be spilled."""
    if value in _UNPLACED:
        return _UNPLACED[value]
    owner = value.owner
    unplaced = (isinstance(owner, func.CallOp) and isinstance(value, OpResult)
                and _callee_producer(owner, value.index) is None)
    if _CALLEES:  # remembered only inside a run of the pass
        _UNPLACED[value] = unplaced
    return unplaced


def _kept_on_chip(saved: SavedValue, target: Target) -> bool:
    """Whether `rdu-insert-dma` likely keeps the value on chip (at -O1 and -O2): only
    the op right after its producer reads it, and it takes at most a quarter of the
    SRAM. A spill of it would gain nothing."""
    readers = {u.operation for u in saved.value.uses}
    follower = saved.producer.next_op
    return (len(readers) == 1 and follower is not None and follower in readers
            and saved.bytes <= target.sram_bytes / 4)


def _is_loss(saved: SavedValue) -> bool:
    """The step's first result: a scalar the caller reads every step, in HBM."""
    terminator = saved.producer.parent_block().last_op  # type: ignore[union-attr]
    return terminator is not None and terminator.operands[0] is saved.value


def _layer_results(step: TrainingStep) -> dict[func.CallOp, list[SavedValue]]:
    """Per forward call of an outlined layer, the saved results a clone of the call
    can give the backward: all but those another forward call reads (the layer's
    output, the next layer's input: a recompute of the next layer reads it)."""
    found: dict[func.CallOp, list[SavedValue]] = {}
    for saved in step.saved:
        if isinstance(saved.producer, func.CallOp) and _callee(saved.producer) is not None and not any(
                isinstance(u.operation, func.CallOp) and step.phases.get(u.operation) == Phase.FORWARD
                for u in saved.value.uses):
            found.setdefault(saved.producer, []).append(saved)
    return found


def kernel_seconds(kernel: KernelOp, target: Target) -> float:
    """A kernel's modeled seconds as the cost model times it, before it is tiled: its
    ops weighed as `rdu-fuse` weighs a group (`weigh`: compute and SRAM ports from
    its mapping, its boundary bytes at HBM bandwidth, the DMA start-up, the pipeline
    fill and the launch) and the link time of the collectives in its body
    (`_link_s`); its roofline time when no tile plan fits (`rdu-tile` splits it
    further, where the start-up and fill are small beside its work)."""
    ops = [op for op in kernel.body.block.ops if not isinstance(op, YieldOp)]
    seconds = weigh(ops, target).seconds if ops else float("inf")
    return seconds + _link_s(kernel, target) if seconds != float("inf") else kernel_roofline_s(kernel, target)


def _link_s(kernel: KernelOp, target: Target) -> float:
    """The link time of the collectives in a kernel's body (a tp all-gather fused
    with the projection that reads it), run once, which the cost model adds to the
    kernel's time (`kernel_link_cost`) and `weigh` leaves out: a recompute runs them
    again."""
    return kernel_link_cost(kernel, 1, target)[0]


_TRAFFIC: dict[KernelOp, tuple[Traffic | None, dict[int, int], dict[int, int]]] = {}
"""Each kernel's `Traffic` and where its operands and results are in it, while one run
of the pass lasts (`RduPlaceSaved.rewrite` clears it): the planner's rounds and plans
price the same kernels, which it does not rewrite."""

_Endpoint = tuple[KernelOp, bool, int]
"""A kernel, whether it writes (else reads) the value, and at which result (else operand)."""


def _writer(value: SSAValue) -> _Endpoint | None:
    """The kernel that writes `value` to DDR when it is there: its own kernel, or for a
    call's result the callee's kernel that returns it (`_callee_producer`); None for an
    argument or a result no kernel writes."""
    owner = value.owner
    if not isinstance(value, OpResult):
        return None
    if isinstance(owner, KernelOp):
        return owner, True, value.index
    if isinstance(owner, func.CallOp) and (producer := _callee_producer(owner, value.index)) is not None:
        return producer[0], True, producer[1]
    return None


class _Pricer:
    """The modeled seconds of the kernels a placement touches, each timed as the cost
    model times it (`Traffic.seconds`: `kernel_time` of the kernel as `rdu-fuse`
    weighs it) with the bytes it moves of each DDR value at DDR and the rest at HBM.

    A value in DDR is written there by its kernel and read from there by each kernel
    reading it. Inside an outlined layer too: a call's result in DDR is the callee's
    kernel result, written there and read back there by the callee's kernels that
    read it; a call's operand in DDR is the callee's parameter, which each of the
    callee's kernels reading it reads from there. A callee's kernel runs once per call.
    A global in DDR is read there by the kernels reading the step's argument (and the
    callees' parameters it is passed to), its update written there when the update is
    written in place (`written_in_place`) and read back from there by the kernels that
    read the update (AdamW's new moments, read by its weight's update). A kernel whose
    tile plan has more than one tile (`rdu-tile` makes it a loop) is timed as the cost
    model times the loop (`Traffic.seconds(tile_loop=True)`): its bytes at their tiers'
    bandwidths under its compute, the first tile's loads in its fill, by their tier
    (`first_tile_reads`)."""

    def __init__(self, function: func.FuncOp, target: Target, in_place: frozenset[SSAValue] = frozenset()):
        self.function = function
        self.target = target
        self.calls: dict[str, int] = {}
        for op in function.body.block.ops:
            if isinstance(op, func.CallOp) and _callee(op) is not None:
                self.calls[op.callee.string_value()] = self.calls.get(op.callee.string_value(), 0) + 1
        self.args: dict[str, list[SSAValue]] = {}
        for arg, attrs in zip(function.args, arg_attrs(function)):
            if (name := global_of(attrs)) is not None:
                self.args.setdefault(name, []).append(arg)
        self.updates: dict[str, list[SSAValue]] = {}
        terminator = function.body.block.last_op
        if isinstance(terminator, func.ReturnOp):
            for value, update in zip(terminator.arguments, result_updates(function)):
                if update is not None and value in in_place:
                    self.updates.setdefault(update.name, []).append(value)
        self.seconds_known: dict[tuple[KernelOp, frozenset[int], frozenset[int]], float] = {}
        self.ends_known: dict[SSAValue, tuple[_Endpoint, ...]] = {}
        module = function.parent_op()
        owners = functions(module) if isinstance(module, ModuleOp) else [function]
        self.rank = {op: i for i, op in enumerate(op for f in owners for op in f.body.block.ops)
                     if isinstance(op, KernelOp)}
        """Each kernel's place in the program: the kernels are priced in this order, so
        that a price is one sum, however the values and globals asked about are held
        (a set of names iterates in the order of the process's hash seed)."""

    def in_order(self, kernels: Iterable[KernelOp]) -> list[KernelOp]:
        """`kernels` in program order (`rank`)."""
        return sorted(kernels, key=lambda kernel: self.rank.get(kernel, len(self.rank)))

    def runs(self, kernel: KernelOp) -> int:
        """How often `kernel` runs a step: once, or once per call of the callee holding it."""
        parent = kernel.parent_op()
        if parent is self.function:
            return 1
        return self.calls.get(parent.sym_name.data, 0) if isinstance(parent, func.FuncOp) else 0

    def endpoints(self, value: SSAValue) -> tuple[_Endpoint, ...]:
        """The kernels that write `value` to DDR and read it from there, when it is in DDR."""
        if value not in self.ends_known:
            self.ends_known[value] = tuple(dict.fromkeys(self._endpoints(value)))
        return self.ends_known[value]

    def _endpoints(self, value: SSAValue) -> Iterable[_Endpoint]:
        writer = _writer(value)
        if writer is not None:
            yield writer
            kernel, _, index = writer
            if kernel.results[index] is not value:  # a call's result: the callee's kernels read it back too
                yield from self._readers(kernel.results[index])
        yield from self._readers(value)

    def _readers(self, value: SSAValue) -> Iterable[_Endpoint]:
        for use in value.uses:
            if isinstance(use.operation, KernelOp):
                yield use.operation, False, use.index
            elif isinstance(use.operation, func.CallOp) and (callee := _callee(use.operation)) is not None:
                for inner in callee.body.block.args[use.index].uses:
                    if isinstance(inner.operation, KernelOp):
                        yield inner.operation, False, inner.index

    def global_endpoints(self, name: str) -> Iterable[_Endpoint]:
        """The kernels that read global `name`, write its update in place and read the
        update back (an optimizer's new moments, read by its weight's update: they read
        the global's buffer), when it is in DDR."""
        for arg in self.args.get(name, ()):
            yield from self._readers(arg)
        for update in self.updates.get(name, ()):
            yield from self._endpoints(update)

    def sets(self, values: Iterable[SSAValue], globals_: Iterable[str]) -> dict[KernelOp, tuple[set[int], set[int]]]:
        """Per kernel, the operands it reads and the results it writes in DDR."""
        found: dict[KernelOp, tuple[set[int], set[int]]] = {}
        ends = [e for v in values for e in self.endpoints(v)]
        ends += [e for name in globals_ for e in self.global_endpoints(name)]
        for kernel, writes, index in ends:
            reads_, writes_ = found.setdefault(kernel, (set(), set()))
            (writes_ if writes else reads_).add(index)
        return {kernel: found[kernel] for kernel in self.in_order(found)}

    def add_to(self, sets: dict[KernelOp, tuple[set[int], set[int]]], values: Iterable[SSAValue],
               globals_: Iterable[str] = ()) -> None:
        """Add what `values` and `globals_` in DDR put there to `sets` (`sets`' form)."""
        for kernel, (reads, writes) in self.sets(values, globals_).items():
            old_reads, old_writes = sets.setdefault(kernel, (set(), set()))
            old_reads.update(reads)
            old_writes.update(writes)

    def kernel_s(self, kernel: KernelOp, reads: Iterable[int] = (), writes: Iterable[int] = ()) -> float:
        """`kernel`'s modeled seconds with the operands `reads` and results `writes` in DDR."""
        key = (kernel, frozenset(reads), frozenset(writes))
        if key not in self.seconds_known:
            self.seconds_known[key] = self._kernel_s(kernel, key[1], key[2])
        return self.seconds_known[key]

    def _kernel_s(self, kernel: KernelOp, reads: frozenset[int], writes: frozenset[int]) -> float:
        if kernel not in _TRAFFIC:
            ops = [op for op in kernel.body.block.ops if not isinstance(op, YieldOp)]
            group = make_group(ops)
            terminator = kernel.body.block.last_op
            assert isinstance(terminator, YieldOp)
            inputs = {v: at for at, v in enumerate(group.inputs)}
            outputs = {v: at for at, v in enumerate(group.outputs)}
            _TRAFFIC[kernel] = (
                group_traffic(ops, self.target) if ops else None,
                {i: inputs[a] for i, a in enumerate(kernel.body.block.args) if a in inputs},
                {i: outputs[v] for i, v in enumerate(terminator.operands) if v in outputs})
        traffic, at_input, at_output = _TRAFFIC[kernel]
        if traffic is None:  # no tile plan fits: its roofline time, each DDR byte at DDR rather than HBM
            moved = sum(value_bytes(kernel.operands[i]) for i in reads)
            moved += sum(value_bytes(kernel.results[i]) for i in writes)
            return kernel_roofline_s(kernel, self.target) + _ddr_extra_seconds(self.target, moved)
        ins = {at_input[i] for i in reads if i in at_input}
        outs = {at_output[i] for i in writes if i in at_output}
        return traffic.seconds(self.target, ins, outs, tile_loop=True)

    def price(self, values: Iterable[SSAValue], globals_: Iterable[str],
              before: tuple[Iterable[SSAValue], Iterable[str]] = ((), ())) -> float:
        """The seconds the kernels take with `values` and `globals_` in DDR more than
        with `before`'s in DDR (each kernel timed with all of its DDR bytes at once)."""
        now, then = self.sets(values, globals_), self.sets(*before)
        seconds = 0.0
        for kernel in self.in_order({**now, **then}):
            runs = self.runs(kernel)
            if runs:
                seconds += runs * (self.kernel_s(kernel, *now.get(kernel, ((), ())))
                                   - self.kernel_s(kernel, *then.get(kernel, ((), ()))))
        return seconds

    def added(self, values: Iterable[SSAValue], globals_: Iterable[str],
              base: dict[KernelOp, tuple[set[int], set[int]]]) -> float:
        """What putting `values` and `globals_` in DDR adds to the kernels they touch,
        over the DDR sets of `base` (`sets`)."""
        seconds = 0.0
        for kernel, (reads, writes) in self.sets(values, globals_).items():
            runs = self.runs(kernel)
            if runs:
                old_reads, old_writes = base.get(kernel, (set(), set()))
                seconds += runs * (self.kernel_s(kernel, reads | old_reads, writes | old_writes)
                                   - self.kernel_s(kernel, old_reads, old_writes))
        return seconds

    def op_s(self, op: Operation, ddr_params: Container[int] = ()) -> float:
        """A callee's op run again by a recompute, its kernels reading the callee's
        parameters at `ddr_params` from DDR (nothing it writes goes there)."""
        if not isinstance(op, KernelOp):
            return kernel_roofline_s(op, self.target)
        block = op.parent_block()
        reads = [i for i, v in enumerate(op.operands)
                 if isinstance(v, BlockArgument) and v.block is block and v.index in ddr_params]
        return self.rerun_s(op, reads)

    def rerun_s(self, kernel: KernelOp, reads: Iterable[int] = ()) -> float:
        """A kernel run again by a recompute, reading its operands `reads` from DDR:
        its time (`kernel_s`) and its collectives' link time (`_link_s`)."""
        return self.kernel_s(kernel, reads) + _link_s(kernel, self.target)


@dataclass
class _ConeCosts:
    """The modeled seconds of running top-level ops again (`op_s`: a kernel's
    `kernel_seconds`, a collective's link time, a call's its callee's ops'), and of a
    recompute of a layer call for some of its results (the callee's ops those results
    need, `callee_cone`), remembered per callee and set of results."""

    target: Target
    callees: Mapping[str, func.FuncOp]
    known: dict[str, float] = field(default_factory=dict)
    cones: dict[tuple[str, tuple[int, ...]], float] = field(default_factory=dict)

    def op_s(self, op: Operation) -> float:
        """A top-level op's modeled seconds (nothing for a call of no layer of this module)."""
        if isinstance(op, KernelOp):
            return kernel_seconds(op, self.target)
        if not isinstance(op, func.CallOp):
            return kernel_roofline_s(op, self.target)  # a collective: its link time, as the cost model's
        name = op.callee.string_value()
        if name not in self.known:
            callee = self.callees.get(name)
            self.known[name] = 0.0 if callee is None else sum(
                self.op_s(inner) for inner in callee.body.block.ops
                if not isinstance(inner, func.ReturnOp | arith.ConstantOp))
        return self.known[name]

    def __call__(self, call: func.CallOp, indices: Sequence[int]) -> float:
        callee = _callee(call)
        assert callee is not None
        key = (callee.sym_name.data, tuple(sorted(indices)))
        if key not in self.cones:
            self.cones[key] = sum(self.op_s(op) for op in callee_cone(callee, key[1]))
        return self.cones[key]


def _recompute_candidates(step: TrainingStep, target: Target, costs: _ConeCosts | None = None) -> list[_Candidate]:
    """A recompute per saved value a forward kernel makes (its chain back to values the
    backward has), and one per forward call of an outlined layer: the call alone run
    again from its operands (which then stay in HBM until it runs: a mask or rotary
    table the layers share is not recomputed), giving all the saved results
    `_layer_results` names. Each costs the modeled seconds of the ops it runs again
    (`_ConeCosts.op_s`: a call, its callee's ops those results need)."""
    kept = {s.value for s in step.saved}
    module = step.function.parent_op()
    costs = costs or _ConeCosts(target, _CALLEES.get(id(module), {}))
    found: list[_Candidate] = []
    for saved in step.saved:
        if isinstance(saved.producer, func.CallOp):
            continue
        chain = recompute_chain(saved, kept - {saved.value}, step.phases)
        if chain is not None:
            cost = sum(costs.op_s(op) for op in chain)
            found.append(_Candidate(cost, saved.bytes, saved, Placement.RECOMPUTE, chain=tuple(chain)))
    for call, values in _layer_results(step).items():
        found.append(_call_candidate(call, values, costs))
    return found


def _call_candidate(call: func.CallOp, values: Sequence[SavedValue], costs: _ConeCosts) -> _Candidate:
    """A recompute of layer call `call` for `values` (some of its saved results)."""
    return _Candidate(costs(call, [s.index for s in values]), sum(s.bytes for s in values), values[0],
                      Placement.RECOMPUTE, chain=(call,), also=tuple(values[1:]))


def callee_cone(callee: func.FuncOp, indices: Sequence[int]) -> list[Operation]:
    """The ops of outlined `callee` (in order, its return excepted) that its results at
    `indices` depend on: what a recompute of a call for those results runs again. A
    layer's output, which the next layer's input keeps, is not among them, and with it
    go the ops only it needs (a Llama layer's down projection and its tp all-reduce).
    An op without results (a write) is always kept."""
    block = callee.body.block
    terminator = block.last_op
    assert isinstance(terminator, func.ReturnOp)
    needed: set[Operation] = {op for op in block.ops if not op.results and op is not terminator}
    stack = [terminator.arguments[i] for i in indices]
    stack += [v for op in needed for v in op.operands]
    while stack:
        value = stack.pop()
        if not isinstance(value, OpResult) or value.op in needed or value.op.parent_block() is not block:
            continue
        needed.add(value.op)
        stack.extend(value.op.operands)
        stack.extend(v for inner in value.op.walk() for v in inner.operands)  # values a region reads from outside
    return [op for op in block.ops if op in needed]


def _candidates(step: TrainingStep, target: Target, sizes: dict[str, int], temporaries: list[SavedValue],
                costs: _ConeCosts, pricer: _Pricer, before: _Before, shared: dict[SSAValue, list[SSAValue]],
                together: dict[str, list[str]] | None = None) -> list[_Candidate]:
    """Every recompute, spill and global to DDR that may free HBM, cheapest per byte
    first; a spill or a global priced by what it adds to the kernels that move its
    bytes (`_Pricer.added`, over what is in DDR `before`; a value a callee holds
    with its group's other values, its share of the group's)."""
    found: list[_Candidate] = _recompute_candidates(step, target, costs)
    base = pricer.sets(before.values, before.globals)
    for saved in (*step.saved, *step.gradients, *temporaries):
        if not _kept_on_chip(saved, target) and not _is_loss(saved) \
                and not _callee_holds_unplaced(saved.value):
            group = shared.get(saved.value, [saved.value])
            found.append(_Candidate(pricer.added(group, (), base) / len(group), saved.bytes, saved))
    for names in _global_groups(sizes, together or {}):
        found.append(_Candidate(pricer.added((), names, base), sum(sizes[n] for n in names), global_names=names))
    return sorted(found, key=_order)


def _global_groups(sizes: dict[str, int], together: dict[str, list[str]]) -> list[tuple[str, ...]]:
    """The globals the step reads, each with those one outlined parameter receives with
    it (`weights_sharing_a_parameter`: `rdu-place-tiers` gives them one tier, so they
    go to DDR together or not at all)."""
    groups: list[tuple[str, ...]] = []
    seen: set[str] = set()
    for name in sizes:
        if name not in seen:
            groups.append(tuple(n for n in together.get(name, [name]) if n in sizes))
            seen.update(groups[-1])
    return groups


def _order(candidate: _Candidate, recompute_first: bool = False) -> tuple[bool, float, bool, int]:
    """Candidates are weighed cheapest per byte first (to 9 significant digits), at a
    tie a recompute before a spill (a spill charged the saving of the recompute it
    narrows costs per byte what the recompute does, `_closing_charge`), then the larger
    first; `recompute_first`: every recompute before any spill."""
    spill = candidate.placement != Placement.RECOMPUTE
    return recompute_first and spill, float(f"{candidate.cost_per_byte:.9g}"), spill, -candidate.freed


@dataclass
class _Plan:
    placements: dict[SSAValue, Placement]
    recomputed: dict[SSAValue, SavedValue]
    ddr_globals: set[str]
    chains: dict[SSAValue, tuple[Operation, ...]] = field(default_factory=dict)
    temporaries: list[SavedValue] = field(default_factory=list)
    costs: _ConeCosts | None = None
    """What a layer call's recompute for some of its results costs (`_narrowed`)."""
    pricer: _Pricer | None = None
    """What its placements in DDR cost the kernels that move their bytes (`plan_price`)."""
    in_ddr: dict[KernelOp, tuple[set[int], set[int]]] = field(default_factory=dict)
    """Per kernel, the operands and results its placements put in DDR so far (`_Pricer.sets`)."""
    cost_s: float = 0.0
    """The modeled seconds it adds to the step (`plan_price`)."""
    fits: bool = True
    """Whether the step's demand fits HBM under it (else nothing more frees HBM at the peak)."""
    recompute_first: bool = False
    """Its candidates are weighed every recompute before any spill (`_order`)."""
    charge: bool = True
    """A spill is charged the saving of the recomputes it closes (`_closing_charge`)."""
    charged: bool = False
    """Some spill was priced with such a charge (the plan then differs from the uncharged one)."""
    home: dict[str, int] = field(default_factory=dict)
    """Per global, the pipeline stage whose HBM holds it (`_Demand`)."""
    recomputes_of: dict[SSAValue, list[_Candidate]] = field(default_factory=dict)
    """Per value, the recompute candidates that give it or read it (`_index_recomputes`):
    those a spill of it closes or narrows."""

    def order(self, candidate: _Candidate) -> tuple[bool, float, bool, int]:
        return _order(candidate, self.recompute_first)


def plan_placements(step: TrainingStep, module: ModuleOp, target: Target, recompute: bool = True,
                    second: bool = False, recompute_first: bool = False, charge: bool = True) -> _Plan:
    """Placements that fit the step's demand in HBM at the least modeled cost: while
    the demand (globals in HBM + the peak of live activations) exceeds HBM, the
    cheapest candidate per byte that frees bytes at the peak (module docstring);
    `second`: the plan is the second round's (both rounds plan by one rule and one
    liveness; the flag tells them apart to those who watch the rounds);
    `recompute_first`: every recompute weighed before any spill; `charge`: a spill
    is charged the saving of the recomputes it closes (`_closing_charge`)."""
    sizes = _global_sizes(module)
    used = {global_of(a) for a in arg_attrs(step.function)} - {None}
    sizes = {n: s for n, s in sizes.items() if n in used}
    in_place = written_in_place(step.function)
    temporaries = _temporaries(step, in_place)
    placements = {
        s.value: Placement.DDR if result_placement(s.producer, s.index) == Placement.DDR else Placement.HBM
        for s in (*step.saved, *step.gradients, *temporaries)
    }
    spilled = {g.sym_name.data for g in module.ops if isinstance(g, GlobalOp) and g.tier == TierAttr(Tier.DDR)}
    costs = _ConeCosts(target, _CALLEES.get(id(module), {}))
    pricer = _Pricer(step.function, target, in_place)
    plan = _Plan(placements, {}, spilled & set(sizes), {}, temporaries, costs, pricer,
                 recompute_first=recompute_first, charge=charge)
    pinned: set[SSAValue] = set()
    liveness = _Liveness(step.function, step, in_place, callee_holds(module))
    shared = shared_placements(step.function)
    _UNPLACED.clear()
    before = _Before(frozenset(v for v, p in placements.items() if p == Placement.DDR), frozenset(plan.ddr_globals))
    together = weights_sharing_a_parameter(module)
    candidates = sorted((c for c in _candidates(step, target, sizes, temporaries, costs, pricer, before, shared,
                                                together) if recompute or c.placement != Placement.RECOMPUTE),
                        key=plan.order)
    plan.in_ddr = pricer.sets(before.values, before.globals)
    plan.recomputes_of = _index_recomputes(candidates)
    liveness.place(liveness.intervals, placements, plan.recomputed)
    demand = _Demand(module, sizes, liveness, target.hbm_bytes)
    plan.home = demand.stage_of
    while (at := demand.worst(plan.ddr_globals)) is not None:
        chosen = _first_open(candidates, plan, pinned, liveness, at, shared)
        if chosen is None:
            plan.fits = False
            break  # nothing frees HBM at the peak: rdu-place-tiers says what does not fit
        _take(chosen, plan, pinned, liveness, shared)
    if plan.fits:
        _keep_globals(plan, demand, before.globals, together)
        _keep_values(plan, demand, before.values, shared)
    plan.cost_s = plan_price(plan, step, target, sizes, before)
    return plan


def _keep_values(plan: _Plan, demand: _Demand, fixed: frozenset[SSAValue],
                 shared: dict[SSAValue, list[SSAValue]]) -> None:
    """Take back the values the plan spilled that the fitted step does not need in DDR
    (one taken while the peak was elsewhere, or whose kernel's DDR time another spill
    of it hid): each group of shared placements, the costliest first
    (`_Pricer.added`), back to HBM while every stage's demand still fits."""
    assert plan.pricer is not None
    liveness = demand.liveness
    groups: dict[SSAValue, list[SSAValue]] = {}
    for value, placement in plan.placements.items():
        members = shared.get(value, [value])
        if placement == Placement.DDR and value not in fixed and members[0] not in groups:
            groups[members[0]] = [v for v in members if v in plan.placements]
    found = [(plan.pricer.added(group, (), {}), group) for group in groups.values()
             if not any(v in fixed for v in group)]
    for _, group in sorted(found, key=lambda priced: -priced[0]):
        for value in group:
            plan.placements[value] = Placement.HBM
        liveness.place(group, plan.placements, plan.recomputed)
        if demand.worst(plan.ddr_globals) is not None:
            for value in group:
                plan.placements[value] = Placement.DDR
            liveness.place(group, plan.placements, plan.recomputed)


def _keep_globals(plan: _Plan, demand: _Demand, fixed: frozenset[str], together: dict[str, list[str]]) -> None:
    """Take back the globals the plan spilled that the fitted step does not need in DDR
    (each taken cheapest per byte while the peak was higher, a small group before the
    large one that alone frees enough): each group, largest first, back to HBM while
    each stage's globals in HBM and activations' peak still fit its HBM."""
    sizes = demand.sizes
    spare = demand.spare(plan.ddr_globals)
    spilled = {n: size for n, size in sizes.items() if n in plan.ddr_globals and n not in fixed}  # the step's order
    for names in sorted(_global_groups(spilled, together),
                        key=lambda group: -sum(sizes[n] for n in group)):
        parts = demand.on_stages(names)
        if len(names) == len(together.get(names[0], names)) and all(p <= room for p, room in zip(parts, spare)):
            plan.ddr_globals.difference_update(names)
            spare = [room - p for p, room in zip(parts, spare)]


def _take(chosen: _Candidate, plan: _Plan, pinned: set[SSAValue], liveness: _Liveness,
          shared: dict[SSAValue, list[SSAValue]]) -> None:
    """Place as `chosen` says, and count its values there (`_Liveness.place`)."""
    placements = plan.placements
    if chosen.saved is None:
        plan.ddr_globals.update(chosen.global_names)
        if plan.pricer is not None:
            plan.pricer.add_to(plan.in_ddr, (), chosen.global_names)
        return
    value = chosen.saved.value
    placements[value] = chosen.placement
    changed = [value]
    if chosen.placement == Placement.DDR:  # a value a callee holds: all it holds there
        for other in shared.get(value, []):
            placements[other] = Placement.DDR
            changed.append(other)
    if chosen.placement == Placement.DDR:  # a recompute it replaces is dropped
        plan.recomputed.pop(value, None)
        plan.chains.pop(value, None)
    if chosen.placement == Placement.RECOMPUTE:
        for saved in chosen.values:  # a layer call's clone gives all its saved results at once
            placements[saved.value] = Placement.RECOMPUTE
            plan.recomputed[saved.value] = saved
            plan.chains[saved.value] = chosen.chain
            changed.append(saved.value)
    liveness.place(changed, placements, plan.recomputed)
    if chosen.placement == Placement.DDR and plan.pricer is not None:
        plan.pricer.add_to(plan.in_ddr, changed)
    if chosen.placement == Placement.RECOMPUTE:
        inputs = chain_inputs(list(chosen.chain))
        pinned.update(inputs)  # the recompute reads them: they stay
        for input_ in inputs:  # a layer's inputs the backward did not read (its mask, its rotary tables)
            liveness.hold(input_, [r for s in chosen.values for r in s.later_readers], placements,
                          plan.recomputed)


def plan_price(plan: _Plan, step: TrainingStep, target: Target, sizes: dict[str, int],
               before: _Before) -> float:
    """The modeled seconds a plan adds to the step, from its final placements (not
    the candidates' prices summed as taken): the kernels that move the bytes of the
    values and globals it put in DDR, each timed with all its DDR bytes at once
    against as it was `before` (`_Pricer.price`: callees' kernels included, once per
    call); and each recompute it keeps, the ops it runs again (a layer call's, the
    cut of its callee to the results it still gives), reading what is in DDR there."""
    assert plan.pricer is not None
    pricer = plan.pricer
    ddr = [v for v, p in plan.placements.items() if p == Placement.DDR]
    seconds = pricer.price(ddr, plan.ddr_globals, (before.values, before.globals))
    in_ddr = set(ddr) | {a for name in plan.ddr_globals for a in pricer.args.get(name, ())}
    jobs: dict[tuple[Operation, ...], list[int]] = {}
    for value, saved in plan.recomputed.items():
        jobs.setdefault(plan.chains[value], []).append(saved.index)
    for chain, indices in jobs.items():
        call = chain[0]
        if len(chain) == 1 and isinstance(call, func.CallOp) and (callee := _callee(call)) is not None:
            params = {i for i, v in enumerate(call.operands) if v in in_ddr}
            seconds += sum(pricer.op_s(op, params) if isinstance(op, KernelOp) or plan.costs is None
                           else plan.costs.op_s(op) for op in callee_cone(callee, sorted(indices)))
            continue
        for op in chain:
            if isinstance(op, KernelOp):
                seconds += pricer.rerun_s(op, [i for i, v in enumerate(op.operands) if v in in_ddr])
            elif plan.costs is not None:
                seconds += plan.costs.op_s(op)
    return seconds


@dataclass(frozen=True)
class _Before:
    """What was in DDR before a plan (a first round's placements, seen by the second):
    what `plan_price` does not charge again."""

    values: frozenset[SSAValue]
    globals: frozenset[str]


def cheaper_plan(step: TrainingStep, module: ModuleOp, target: Target, second: bool = False) -> _Plan:
    """The plan that fits HBM and adds the least modeled time (`plan_price`, the cost
    model's own kernel times) among the greedy's plans: with recomputes, and of spills
    alone. Each is taken cheapest per byte freed at the peak, which is no least total:
    a recompute may free bytes where a spill the step needs anyway frees them too.

    A spill that closes a recompute is charged the saving it takes from it
    (`_closing_charge`), an estimate made as the spill comes up: on a 2-layer 70B step
    it keeps cheap slot spills from closing the layer calls' recomputes (5.9 ms priced
    against 24.3 ms uncharged), on the 80-layer one at pp=2 it steers the greedy off
    those spills, which the step could afford, onto a weight group in DDR (61.0 ms
    priced against 41.5 ms uncharged, the cost model agreeing with both to 0.1%). So
    when a charge was made, the plan made without it and the plan that takes every
    recompute before any spill are weighed too; the latter also when the plan with
    recomputes does not fit (cheap spills of a layer's slot close the calls'
    recomputes, and those recomputes close the spills of their slots, so a mixed plan
    can stop short of fitting where recomputing first fits: `_blocked`,
    `_spill_closed`)."""
    mixed = plan_placements(step, module, target, True, second)
    plans = [mixed]
    if mixed.recomputed:
        plans.append(plan_placements(step, module, target, False, second))
    if mixed.charged:
        plans.append(plan_placements(step, module, target, True, second, charge=False))
    if mixed.charged or not mixed.fits:
        plans.append(plan_placements(step, module, target, True, second, recompute_first=True))
    return min(plans, key=lambda plan: (not plan.fits, plan.cost_s))


def _first_open(candidates: list[_Candidate], plan: _Plan, pinned: set[SSAValue], liveness: _Liveness, at: _At,
                shared: dict[SSAValue, list[SSAValue]]) -> _Candidate | None:
    """The first (cheapest per byte) candidate that frees HBM at position `at`, taken
    out of `candidates`, with every candidate closed for good (`_applies`: None)
    dropped on the way: a later choice scans only what may still apply, not every
    candidate again. A layer call's recompute closed by some of its values
    (`_blocked`) comes back without them (`_narrowed`), in its place by cost."""
    index = 0
    while index < len(candidates):
        candidate = candidates[index]
        verdict = _applies(candidate, plan, pinned, liveness, at, shared)
        if verdict is None:
            del candidates[index]
            narrower = _narrowed(candidate, plan, pinned, shared)
            if narrower is not None:
                at_order = bisect.bisect_right(candidates, plan.order(narrower), key=plan.order)
                candidates.insert(at_order, narrower)
                index = min(index, at_order)
            continue
        if verdict:
            del candidates[index]
            now = _repriced(candidate, plan, pinned, shared)
            if now is None:
                return candidate
            at_order = bisect.bisect_right(candidates, plan.order(now), key=plan.order)
            candidates.insert(at_order, now)
            continue
        index += 1
    return None


def _repriced(candidate: _Candidate, plan: _Plan, pinned: set[SSAValue],
              shared: dict[SSAValue, list[SSAValue]]) -> _Candidate | None:
    """A spill or a global to DDR priced again now, when that costs more than its price:
    over what the plan has put in DDR since it was priced (a kernel's DDR bytes add up,
    its other resources do not: what a spill adds never falls as the plan spills more),
    plus the saving of the recomputes a spill of a value closes (`_closing_charge`), so
    that it is weighed at what it costs now; None when its price holds."""
    if candidate.placement == Placement.RECOMPUTE or plan.pricer is None:
        return None
    closing = 0.0
    if candidate.saved is None:
        cost = plan.pricer.added((), candidate.global_names, plan.in_ddr)
    else:
        group = shared.get(candidate.saved.value, [candidate.saved.value])
        cost = plan.pricer.added(group, (), plan.in_ddr) / len(group)
        closing = _closing_charge(group, plan, pinned, shared) / len(group) if plan.charge else 0.0
        plan.charged |= closing > 0
    if cost + closing <= candidate.cost_s + abs(candidate.cost_s) * 1e-6 + 1e-15:  # a price may be below 0
        return None
    return _Candidate(cost + closing, candidate.freed, candidate.saved, candidate.placement,
                      candidate.global_names)


def _index_recomputes(candidates: Iterable[_Candidate]) -> dict[SSAValue, list[_Candidate]]:
    """Per value, the recompute candidates that give it or whose chain reads it."""
    found: dict[SSAValue, list[_Candidate]] = {}
    for candidate in candidates:
        if candidate.placement == Placement.RECOMPUTE:
            for value in {s.value for s in candidate.values} | chain_inputs(list(candidate.chain)):
                found.setdefault(value, []).append(candidate)
    return found


def _closing_charge(group: Sequence[SSAValue], plan: _Plan, pinned: set[SSAValue],
                    shared: dict[SSAValue, list[SSAValue]]) -> float:
    """The saving lost to the recompute candidates still open that a spill of `group`
    (values sharing one placement) closes or narrows (`_lost_saving`, per recompute). A
    spill of a value a layer call's recompute gives frees bytes the recompute frees
    anyway while its cut costs as much; one of a recompute's input leaves its values
    to their spills."""
    spilled = set(group)
    affected: dict[int, _Candidate] = {}
    for value in group:
        for recompute in plan.recomputes_of.get(value, ()):
            affected.setdefault(id(recompute), recompute)
    prices: dict[SSAValue, float] = {}
    charge = 0.0
    for recompute in affected.values():
        now = _as_it_stands(recompute, plan, pinned, shared)
        if now is not None:
            charge += _lost_saving(now, spilled, plan, pinned, shared, prices)
    return charge


def _as_it_stands(candidate: _Candidate, plan: _Plan, pinned: set[SSAValue],
                  shared: dict[SSAValue, list[SSAValue]]) -> _Candidate | None:
    """A recompute candidate as the plan's placements leave it: itself while open, its
    call cut to the values not blocked (`_narrowed`), or None when closed."""
    if not _recompute_closed(candidate, plan, pinned, shared):
        return candidate
    return _narrowed(candidate, plan, pinned, shared)


def _lost_saving(recompute: _Candidate, spilled: set[SSAValue], plan: _Plan, pinned: set[SSAValue],
                 shared: dict[SSAValue, list[SSAValue]], prices: dict[SSAValue, float]) -> float:
    """What freeing the bytes `recompute` frees beyond `spilled` costs once `spilled` is
    in DDR (the cheaper of its call cut to them and their spills; their spills when it
    reads a spilled value), beyond what it costs now (the cheaper of the recompute's
    price for them, its cost pro rata of its bytes, and their spills): nothing lost on
    a recompute that costs more than spilling its values."""
    lost = [s for s in recompute.values if s.value in spilled]
    reads_spilled = not spilled.isdisjoint(chain_inputs(list(recompute.chain)))
    if not lost and not reads_spilled:
        return 0.0
    rest = [s for s in recompute.values if s.value not in spilled]
    pro_rata = recompute.cost_s * sum(s.bytes for s in rest) / max(recompute.freed, 1)
    cut = float("inf")
    call = recompute.chain[0]
    if rest and not reads_spilled and isinstance(call, func.CallOp) and plan.costs is not None:
        cut = _call_candidate(call, rest, plan.costs).cost_s
    if cut <= pro_rata:
        return 0.0  # the cut costs no more than the recompute's price for what it still frees
    spills = 0.0
    for saved in sorted(rest, key=lambda s: -s.bytes):  # the largest first: the sum passes both soonest
        spills += _spill_price(saved, recompute, plan, pinned, shared, prices)
        if spills >= cut:
            return cut - pro_rata  # both prices below the spills: the cut's against the recompute's
    return max(0.0, min(spills, cut) - min(spills, pro_rata))


def _spill_price(saved: SavedValue, recompute: _Candidate, plan: _Plan, pinned: set[SSAValue],
                 shared: dict[SSAValue, list[SSAValue]], prices: dict[SSAValue, float]) -> float:
    """What spilling `saved` costs now (its share of its group's, `_Pricer.added`, kept
    in `prices` by the group's first value); a value that cannot go to DDR at the
    recompute's price per byte (nothing lost on it)."""
    group = shared.get(saved.value, [saved.value])
    movable = plan.pricer is not None and not _is_loss(saved) and not _callee_holds_unplaced(saved.value) \
        and not any(v not in plan.placements or v in pinned for v in group)
    if not movable:
        return saved.bytes * recompute.cost_per_byte
    assert plan.pricer is not None
    if group[0] not in prices:
        prices[group[0]] = plan.pricer.added(group, (), plan.in_ddr) / len(group)
    return prices[group[0]]


def _applies(candidate: _Candidate, plan: _Plan, pinned: set[SSAValue], liveness: _Liveness, at: _At,
             shared: dict[SSAValue, list[SSAValue]]) -> bool | None:
    """Whether the candidate frees HBM at position `at` (True), not there (False), or is
    closed for good (None: what closes it never reopens; placements only move from HBM
    to a recompute or DDR and from a recompute to DDR, and pinned values stay pinned)."""
    if candidate.saved is None:  # a global frees HBM on the stage that holds it
        if set(candidate.global_names) <= plan.ddr_globals:
            return None
        return any(plan.home.get(n, 0) == at.stage for n in candidate.global_names if n not in plan.ddr_globals)
    value = candidate.saved.value
    now = plan.placements[value]
    if candidate.placement == Placement.RECOMPUTE:
        return _recompute_applies(candidate, plan, pinned, liveness, at, shared)
    # to DDR: from HBM, or from a recompute whose forward part still holds HBM at the peak
    if _spill_closed(candidate, plan, pinned, shared):
        return None
    held = liveness.spans(value, now, plan.recomputed)
    return liveness.stage.get(value, 0) == at.stage and any(start <= at.position <= end for start, end in held)


def _spill_closed(candidate: _Candidate, plan: _Plan, pinned: set[SSAValue],
                  shared: dict[SSAValue, list[SSAValue]]) -> bool:
    """Whether a spill of a value is closed for good: the value is in DDR already, or a
    callee holds it with a value that cannot go to DDR (an input, a weight, a value a
    recompute reads or gives)."""
    assert candidate.saved is not None
    value = candidate.saved.value
    if plan.placements[value] == Placement.DDR:
        return True
    return any(v not in plan.placements or v in plan.recomputed or v in pinned or _callee_holds_unplaced(v)
               for v in shared.get(value, [value]) if v is not value)


def _recompute_applies(candidate: _Candidate, plan: _Plan, pinned: set[SSAValue], liveness: _Liveness, at: _At,
                       shared: dict[SSAValue, list[SSAValue]]) -> bool | None:
    """Whether a recompute frees HBM at position `at` (True), not there (False), or is
    closed for good (None, `_recompute_closed`)."""
    if _recompute_closed(candidate, plan, pinned, shared):
        return None
    return any(liveness.frees_at(s.value, Placement.RECOMPUTE, s, at) for s in candidate.values)


def _recompute_closed(candidate: _Candidate, plan: _Plan, pinned: set[SSAValue],
                      shared: dict[SSAValue, list[SSAValue]]) -> bool:
    """Whether a recompute is closed for good: the chain's inputs must be in HBM, none of
    its values `_blocked`, and a kernel's value not one a callee or a view shares."""
    inputs = chain_inputs(list(candidate.chain))
    if any(plan.placements.get(v, Placement.HBM) != Placement.HBM for v in inputs):
        return True
    for saved in candidate.values:
        if _blocked(saved, plan, pinned, shared):
            return True
        if len(shared.get(saved.value, ())) > 1 and not isinstance(saved.producer, func.CallOp):
            return True  # a kernel's result a callee reads at a parameter it shares, or a view's
    return False


def _blocked(saved: SavedValue, plan: _Plan, pinned: set[SSAValue], shared: dict[SSAValue, list[SSAValue]]) -> bool:
    """Whether no recompute can give `saved`: it is not in HBM, a recompute reads it
    (pinned), or a value it shares its placement with is in DDR (a call's result at an
    index the callee writes to DDR for every call: the clone's result would be in HBM)."""
    value = saved.value
    if plan.placements[value] != Placement.HBM or value in pinned:
        return True
    return any(plan.placements.get(v) == Placement.DDR for v in shared.get(value, ()))


def _narrowed(candidate: _Candidate, plan: _Plan, pinned: set[SSAValue],
              shared: dict[SSAValue, list[SSAValue]]) -> _Candidate | None:
    """A layer call's recompute closed by some of its values (`_blocked`: one slot of
    the callee spilled, the layer's output a later recompute reads) made without them:
    the call cut to the rest (`callee_cone`), costed by that cut, the blocked values
    kept where they are. None for a kernel's recompute, a call's whose inputs left HBM,
    or when no value is blocked or none is left."""
    call = candidate.chain[0] if candidate.placement == Placement.RECOMPUTE and len(candidate.chain) == 1 else None
    if not isinstance(call, func.CallOp) or _callee(call) is None or plan.costs is None:
        return None
    if any(plan.placements.get(v, Placement.HBM) != Placement.HBM for v in call.operands):
        return None
    left = [s for s in candidate.values if not _blocked(s, plan, pinned, shared)]
    if not left or len(left) == len(candidate.values):
        return None
    return _call_candidate(call, left, plan.costs)


def _recompute_all(plan: _Plan, phases: dict[Operation, Phase],
                   cut: dict[tuple[str, tuple[int, ...]], func.FuncOp]) -> None:
    """Run every chosen recompute, earliest first: a kernel or call one recompute
    cloned is reused by a later one that runs it again (a layer's rotary tables); a
    callee cut to some results (`cut`, kept across both rounds) is made once."""
    jobs: dict[tuple[Operation, ...], list[SavedValue]] = {}
    for value, saved in plan.recomputed.items():
        jobs.setdefault(plan.chains[value], []).append(saved)
    cloned: dict[Operation, Operation] = {}
    for chain, values in sorted(jobs.items(), key=lambda job: _first_reader_index(job[1])):
        call = chain[0]
        if len(chain) == 1 and isinstance(call, func.CallOp) and _callee(call) is not None:
            _recompute_call(call, values, phases, cut)
        else:
            _recompute(values, chain, phases, cloned)


def _recompute_call(call: func.CallOp, values: list[SavedValue], phases: dict[Operation, Phase],
                    cut: dict[tuple[str, tuple[int, ...]], func.FuncOp]) -> None:
    """Run layer call `call` again right before the values' first later reader, as a call
    of its callee cut to the ops those values need (`callee_cone`, made once per callee
    and set of results in `cut`); the later readers read the new call's results."""
    indices = tuple(sorted({saved.index for saved in values}))
    callee = _recompute_callee(call, indices, cut)
    block = call.parent_block()
    assert block is not None
    first_op = min((op for saved in values for op in saved.later_readers), key=block.get_operation_index)
    clone = func.CallOp(callee.sym_name.data, list(call.arguments),
                        [call.results[i].type for i in indices] if callee is not _callee(call)
                        else [r.type for r in call.results])
    clone.attributes.update({k: v for k, v in call.attributes.items() if k not in ("callee", SAVED)})
    clone.attributes[RECOMPUTES] = StringAttr(call.callee.string_value())
    clone.location = call.location
    set_phase(clone, Phase.BACKWARD)
    block.insert_op_before(clone, first_op)
    phases[clone] = Phase.BACKWARD
    position = {index: i for i, index in enumerate(indices)} if callee is not _callee(call) \
        else {i: i for i in range(len(call.results))}
    for index, at in position.items():
        clone.results[at].name_hint = call.results[index].name_hint
    _read_clone(values, {s.value: clone.results[position[s.index]] for s in values}, block)


def _recompute_callee(call: func.CallOp, indices: tuple[int, ...],
                      cut: dict[tuple[str, tuple[int, ...]], func.FuncOp]) -> func.FuncOp:
    """The callee a recompute of `call` for its results at `indices` calls: a copy of
    the call's callee (`@layer_forward_recompute`, outlined too) holding only the ops
    those results need and returning only them; the callee itself when they are all its
    results (a cut that returns fewer does not write the others, such as a slot the
    callee spills for every call)."""
    callee = _callee(call)
    assert callee is not None
    name = callee.sym_name.data
    if (name, indices) in cut:
        found = cut[(name, indices)]
        set_outlined(found, _source(found), calls_of(found) + 1)
        return found
    ops = [op for op in callee.body.block.ops if not isinstance(op, func.ReturnOp)]
    keep = {ops.index(op) for op in callee_cone(callee, indices)}
    if len(keep) == len(ops) and len(indices) == len(call.results):
        return callee
    copy = callee.clone()
    copied = [op for op in copy.body.block.ops if not isinstance(op, func.ReturnOp)]
    old_return = copy.body.block.last_op
    assert isinstance(old_return, func.ReturnOp)
    copy.body.block.insert_op_before(func.ReturnOp(*[old_return.arguments[i] for i in indices]), old_return)
    copy.body.block.erase_op(old_return)
    for index in reversed(range(len(copied))):
        if index not in keep:
            copy.body.block.erase_op(copied[index])
    _unspill_inner(copy)
    if copy.res_attrs is not None:
        copy.res_attrs = ArrayAttr([copy.res_attrs.data[i] for i in indices])
    copy.update_function_type()
    module = callee.parent_op()
    assert isinstance(module, ModuleOp)
    taken = {f.sym_name.data for f in functions(module)}
    copy.sym_name = StringAttr(next(n for k in range(len(taken) + 1)
                                    if (n := f"{name}_recompute" + (f"_{k}" if k else "")) not in taken))
    set_outlined(copy, _source(callee), 1)
    module.body.block.insert_op_after(copy, callee)
    _CALLEES.setdefault(id(module), {})[copy.sym_name.data] = copy
    cut[(name, indices)] = copy
    return copy


def _unspill_inner(callee: func.FuncOp) -> None:
    """A cut callee's kernel results that it no longer returns stay on its own path:
    a DDR mark the whole callee's slot had (a blocked value spilled for every call,
    which the cut still computes on the way to the rest) is dropped."""
    terminator = callee.body.block.last_op
    returned = set(terminator.operands) if terminator is not None else set()
    for kernel in callee.body.block.ops:
        marks = saved_of(kernel) if isinstance(kernel, KernelOp) and SAVED in kernel.attributes else None
        if marks is None:
            continue
        kept = [m if m != Placement.DDR.value or r in returned else "" for m, r in zip(marks, kernel.results)]
        if kept != marks:
            set_saved(kernel, kept)


def _source(callee: func.FuncOp) -> str:
    """The layer an outlined function was outlined from (`rdu.outlined_from`)."""
    source = callee.attributes.get(OUTLINED_FROM)
    return source.data if isinstance(source, StringAttr) else ""


def _read_clone(values: list[SavedValue], clones: dict[SSAValue, SSAValue], block: Block) -> None:
    """The values' later readers (ops of `block`, or ops inside them) read `clones`' instead."""
    for saved in values:
        readers = set(saved.later_readers)
        for use in list(saved.value.uses):
            top: Operation | None = use.operation
            while top is not None and top.parent_block() is not block:
                top = top.parent_op()
            if top in readers:
                use.operation.operands[use.index] = clones[saved.value]


def _first_reader_index(values: list[SavedValue]) -> int:
    block = values[0].producer.parent_block()
    assert block is not None
    return min(block.get_operation_index(op) for saved in values for op in saved.later_readers)


def _clone_for_backward(op: Operation) -> Operation:
    """A copy of forward kernel or layer call `op` that runs in the backward."""
    clone = op.clone()
    if isinstance(op, KernelOp):
        assert isinstance(clone, KernelOp)
        clone.sym_name = StringAttr(f"{op.sym_name.data}r")
        clone.attributes[RECOMPUTES] = StringAttr(op.sym_name.data)
    else:
        assert isinstance(op, func.CallOp)
        clone.attributes[RECOMPUTES] = StringAttr(op.callee.string_value())
    clone.attributes.pop(SAVED, None)
    set_phase(clone, Phase.BACKWARD)
    return clone


def _recompute(values: list[SavedValue], chain: tuple[Operation, ...], phases: dict[Operation, Phase],
               cloned: dict[Operation, Operation]) -> None:
    """Clone the chain before the values' first later reader (reusing a clone of an op
    `cloned` holds that runs before it); the later readers read the clone's results."""
    block = values[0].producer.parent_block()
    assert block is not None
    first_op = min((op for saved in values for op in saved.later_readers), key=block.get_operation_index)
    clones: dict[SSAValue, SSAValue] = {}
    for op in chain:
        earlier = cloned.get(op)
        if earlier is not None and block.get_operation_index(earlier) < block.get_operation_index(first_op):
            clones.update(zip(op.results, earlier.results))
            continue
        clone = _clone_for_backward(op)
        for index, operand in enumerate(clone.operands):
            if operand in clones:
                clone.operands[index] = clones[operand]
        block.insert_op_before(clone, first_op)
        phases[clone] = Phase.BACKWARD
        cloned[op] = clone
        clones.update(zip(op.results, clone.results))
    _read_clone(values, clones, block)


def _inner_saved_bytes(step: TrainingStep) -> int:
    """Bytes of forward values read by later ops inside the same kernel (kept in SRAM):
    inside a kernel of a later phase, the results of ops the loss depends on."""
    loss = step.function.body.block.last_op
    assert loss is not None
    forward: set[Operation] = set()
    stack = [loss.operands[0]]
    while stack:
        value = stack.pop()
        if isinstance(value, BlockArgument):
            owner = value.block.parent_op()
            if isinstance(owner, KernelOp):
                stack.append(owner.inputs[value.index])
            continue
        op = value.owner
        assert isinstance(op, Operation)
        if op in forward:
            continue
        forward.add(op)
        if isinstance(op, KernelOp) and isinstance(value, OpResult):
            terminator = op.body.block.last_op
            assert terminator is not None
            stack.append(terminator.operands[value.index])
        else:
            stack.extend(op.operands)
    total = 0
    for kernel, phase in step.phases.items():
        if not isinstance(kernel, KernelOp) or phase == Phase.FORWARD:
            continue
        for op in kernel.body.block.ops:
            if op in forward:
                for result in op.results:
                    if any(u.operation not in forward and not isinstance(u.operation, YieldOp) for u in result.uses):
                        total += value_bytes(result)
    return total


def _record(module: ModuleOp, step: TrainingStep, plan: _Plan) -> None:
    by_producer: dict[Operation, list[str]] = {}
    spilled = [t for t in plan.temporaries if plan.placements[t.value] == Placement.DDR]
    for saved in (*step.saved, *step.gradients, *spilled):
        marks = by_producer.setdefault(saved.producer, [""] * len(saved.producer.results))
        marks[saved.index] = plan.placements[saved.value].value
    for producer, marks in by_producer.items():
        set_saved(producer, marks)
    for saved in (*step.saved, *step.gradients, *spilled):
        if plan.placements[saved.value] == Placement.DDR:
            _mark_callee_result(saved)
    for op, phase in step.phases.items():
        set_phase(op, phase)
    table = {cls: {"sram": 0, "hbm": 0, "ddr": 0, "recompute": 0} for cls in ("activations", "gradients")}
    for saved in (*step.saved, *step.gradients):
        table["gradients" if saved.gradient else "activations"][plan.placements[saved.value].value] += saved.bytes
    classes = update_classes(module, step.function)
    for spilled_value in spilled:
        cls = classes.get(spilled_value.value, "activations")
        table.setdefault(cls, {"sram": 0, "hbm": 0, "ddr": 0, "recompute": 0})["ddr"] += spilled_value.bytes
    table["activations"]["sram"] += _inner_saved_bytes(step)
    set_training_memory(module, table)
    globals_ = {g.sym_name.data: g for g in module.ops if isinstance(g, GlobalOp)}
    for name in step.state_globals:
        if name in globals_ and _kind(globals_[name]) != "parameter":
            set_memory_class(globals_[name], "optimizer state")
    for name in plan.ddr_globals:
        globals_[name].tier = TierAttr(Tier.DDR)


def update_classes(module: ModuleOp, function: func.FuncOp) -> dict[SSAValue, str]:
    """The new value of each global the step writes back (`rdu.result_updates`), by the
    global's class: "weights" for a parameter, "optimizer state" for the rest. Such a
    value (an optimizer's update of a weight, or of Adam's moments) is a buffer of its
    own from its kernel to the step's end, where it is written back: a spill of it is
    counted with its state, not with the activations."""
    terminator = function.body.block.last_op
    if not isinstance(terminator, func.ReturnOp):
        return {}
    globals_ = {g.sym_name.data: g for g in module.ops if isinstance(g, GlobalOp)}
    found: dict[SSAValue, str] = {}
    for value, update in zip(terminator.arguments, result_updates(function)):
        if update is not None and update.kind == "buffer" and update.name in globals_:
            found[value] = "weights" if _kind(globals_[update.name]) == "parameter" else "optimizer state"
    return found


def _mark_callee_result(saved: SavedValue) -> None:
    """A value spilled to DDR that a callee holds: the callee's kernel that returns it
    writes it there, and the callee's parameter that reads it is a DDR buffer
    (`rdu-insert-dma` types the callee's result and parameter, so every call's)."""
    if isinstance(saved.producer, func.CallOp):
        producer = _callee_producer(saved.producer, saved.index)
        assert producer is not None
        kernel, index = producer
        marks = saved_of(kernel)
        marks[index] = Placement.DDR.value
        set_saved(kernel, marks)
    for use in saved.value.uses:
        if isinstance(use.operation, func.CallOp) and (callee := _callee(use.operation)) is not None:
            assert callee.arg_attrs is not None
            attrs = list(callee.arg_attrs.data)
            attrs[use.index] = DictionaryAttr({**attrs[use.index].data, PARAMETER_TIER: TierAttr(Tier.DDR)})
            callee.arg_attrs = ArrayAttr(attrs)


def _kind(global_: GlobalOp) -> str:
    kind = global_.attributes.get("kind")
    return kind.data if isinstance(kind, StringAttr) else ""


@dataclass(frozen=True)
class RduPlaceSaved(RduPass):
    """Place a training step's saved values and gradients: SRAM, HBM, DDR or recompute."""

    name = "rdu-place-saved"
    accepts: ClassVar[tuple[Level, ...]] = (Level.KERNELS,)
    on_tensors: ClassVar[bool] = True

    def rewrite(self, ctx: Context, op: ModuleOp) -> None:
        _CALLEES[id(op)] = {f.sym_name.data: f for f in functions(op) if is_outlined(f)}
        try:
            self._place(op)
        finally:
            _CALLEES.pop(id(op), None)
            _UNPLACED.clear()
            _TRAFFIC.clear()

    def _place(self, op: ModuleOp) -> None:
        target = self.target_of(op)
        for function in functions(op):
            if is_outlined(function):
                continue
            step = training_step(function)
            if step is None:
                continue
            with unchanged():  # the plans read the IR; `_record` and the recomputes rewrite it after
                plan = cheaper_plan(step, op, target)
            _record(op, step, plan)
            cut: dict[tuple[str, tuple[int, ...]], func.FuncOp] = {}
            _recompute_all(plan, step.phases, cut)
            if max(_hbm_demand(op, function)) > target.hbm_bytes:
                _second_round(op, function, target, cut)


def _hbm_demand(module: ModuleOp, function: func.FuncOp) -> list[int]:
    """Per pipeline stage, its globals in HBM + the peak of its live activations, as
    `rdu-place-tiers` counts them (one entry when the step is not pipelined)."""
    used = {global_of(a) for a in arg_attrs(function)}
    count = stage_count(function)
    held = stage_parts({g.sym_name.data: value_bytes(g.global_type) for g in module.ops
                        if isinstance(g, GlobalOp) and g.sym_name.data in used and g.tier != TierAttr(Tier.DDR)},
                       global_homes(module))
    peaks = callee_peaks(module)
    return [held.get(stage, 0) + peak_activation_bytes(function, peaks, stage if count > 1 else None)
            for stage in range(count)]


def callee_peaks(module: ModuleOp) -> dict[str, int]:
    """Per outlined function, the most activation bytes it holds at once while a call
    of it runs (`peak_activation_bytes`, as `rdu-place-tiers` counts them)."""
    peaks: dict[str, int] = {}
    for callee in callees_first(module):
        if is_outlined(callee):
            peaks[callee.sym_name.data] = peak_activation_bytes(callee, peaks)
    return peaks


def _second_round(module: ModuleOp, function: func.FuncOp, target: Target,
                  cut: dict[tuple[str, tuple[int, ...]], func.FuncOp]) -> None:
    """A second round, on the program with its recomputes in place (their clones and
    the longer lives of their inputs are real values now): the same planner and cost
    rule as the first, spills and recomputes, each chosen where it costs less per byte
    freed (a value the first round kept, a layer call not yet run again)."""
    step = training_step(function)
    if step is None:
        return
    before = {s.value: result_placement(s.producer, s.index)
              for s in (*step.saved, *step.gradients, *_temporaries(step, written_in_place(function)))}
    with unchanged():
        plan = cheaper_plan(step, module, target, second=True)
    memory = training_memory(module)
    classes = update_classes(module, function)
    for saved in (*step.saved, *step.gradients, *plan.temporaries):
        now = plan.placements[saved.value]
        if now == Placement.HBM or before.get(saved.value) == now.value:
            continue
        marks = saved_of(saved.producer)
        marks[saved.index] = now.value
        set_saved(saved.producer, marks)
        if now == Placement.DDR:
            _mark_callee_result(saved)
        cls = "gradients" if saved.gradient else classes.get(saved.value, "activations")
        memory[f"{cls}.{now.value}"] = memory.get(f"{cls}.{now.value}", 0) + saved.bytes
        if saved in step.saved or saved in step.gradients:
            memory[f"{cls}.hbm"] = max(0, memory.get(f"{cls}.hbm", 0) - saved.bytes)
    table: dict[str, dict[str, int]] = {}
    for key, n in memory.items():
        cls, _, where = key.partition(".")
        table.setdefault(cls, {})[where] = n
    set_training_memory(module, table)
    globals_ = {g.sym_name.data: g for g in module.ops if isinstance(g, GlobalOp)}
    for name in plan.ddr_globals:
        globals_[name].tier = TierAttr(Tier.DDR)
    _recompute_all(plan, step.phases, cut)
