"""Which split of a training step across sockets is fastest, modeled without partitioning the step.

`rdu-partition` with no split given weighs every candidate (dp data-parallel
replicas, tp tensor-parallel ranks, pp pipeline stages, dp x tp together,
each dp with and without ZeRO-style sharded optimizer state, each tp with
sequence parallelism where it may win: `needs_sequence`) from one walk
of the imported step (`StepProfile`), then partitions the step once, for the
winner. The walk costs each op once; an outlined layer (`@layer_forward`,
`@layer_backward`, `@layer_optimizer`) once, counted at each of its calls.

The profile, from the level-1 graph:

- each op's FLOPs at the peak of its element type and the weight bytes it
  reads (a function argument holding a global), with its phase (`rdu.phase`;
  a call: the call's); dp divides every forward and backward op (each
  replica runs its share of the batch);
- what tp splits is `rdu-partition`'s fact, not restated here: per tp, the
  step partitioned tp ways once (`layers`: its outlined layers; `entries`:
  per op of the entry function, the ops one rank runs for it), so each op's
  FLOPs and weight reads on one rank (the embedding's backward and the
  vocabulary-parallel loss included), its results' bytes (what a pipeline
  cut sends) and the collectives the split inserts (their bytes on one
  rank), timed by the target's collective model
  (`kernel_timing.collective_seconds`: ring or recursive doubling over the
  target's link figures and topology). Without `entries` (a profile built
  without the partitioner), tp divides the entry's matmuls and a weight
  matmul pays one all-reduce of its smaller activation side
  (`tp_collectives`);
- each backward op's (or layer call's) gradients: its results the optimizer
  reads, in bytes on one rank at each tp;
- the parameters (globals of kind parameter), the trained ones (written back
  by the step: their gradients), the optimizer state (other globals the step
  writes back: Adam's moments) and the saved activations (forward results
  read by the backward), in bytes.

A candidate's modeled step time:

- **pipeline**: per stage, one microbatch's forward and backward: each op
  `max(FLOPs / peak / m, weight bytes / HBM bandwidth) + DMA start-up` (weights
  are read again each microbatch; `training_speed`'s level-1 rule) and each
  activation collective its time / m, at least one link latency; the stages
  are `rdu-partition`'s cut (`training_stages`: the forward's units cut
  into pp runs of about equal FLOPs, the backward's and the optimizer's on
  the stage of the values and weights they read), with a `send_recv` of
  each value read on another stage, once to each stage, charged there as
  `training_estimate` charges it (the optimizer's once a step); then the
  1F1B schedule (`pipeline_schedule`), which counts the bubble;
- **gradient sync** (dp > 1): each gradient, where the backward makes it,
  all-reduced over the dp replicas (a dp group: the ranks tp apart, its ring
  over those sockets by the target's topology), or, with ZeRO,
  reduce-scattered (each replica keeps the shard it updates), as
  rdu-partition compiles them: queued on the links and run under the
  backward work that follows on its stage (its collectives aside); what is
  still queued when the backward ends is exposed (`training_estimate`'s
  rule). ZeRO's all-gather of the updated parameters is the optimizer's;
- **optimizer**: its ops once a step, on one rank of the tp split and, with
  ZeRO, divided by dp (each replica updates its shard), and ZeRO's
  parameter all-gathers;
- **DDR spill**: the weights and optimizer state one socket holds (its
  stage's and shard's) past its HBM, read from DDR every microbatch at DDR's
  sustained bandwidth (`training_speed.spill_seconds`, the rule
  `training_estimate` charges the partitioned step by); and the saved
  activations (one rank's, as `rdu-partition` splits them at the candidate's
  tp, of the microbatches 1F1B keeps in flight) past the HBM the weights,
  gradients and optimizer state leave, written to DDR in the forward and
  read back in the backward (`activation_spill`). A candidate whose socket
  holds more than its HBM and DDR is refused.

**Sequence parallelism** (tp > 1) is weighed beside a split without it only
where that split spills saved activations to DDR or does not fit
(`needs_sequence`); its profile is the step split with sequence parallelism
(`StepProfile.sequence`: what one rank runs, the reduce-scatters and
all-gathers that replace the all-reduces, and the saved activations a rank
holds). Elsewhere it saves memory nobody needs, and its modeled time is the
split's within the level-1 model's precision, so the split without it stays.

Every figure is modeled from the target's figures; `CandidateEstimate.row`
is one line of the report's table, `SplitChoice.table` the table with the
reason the winner won.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp, TensorType
from xdsl.ir import BlockArgument, Operation, OpResult, SSAValue

from rducc.dialects.contracts import (
    Phase,
    arg_attrs,
    executed_microbatches,
    global_of,
    is_input,
    phase_of,
    result_updates,
)
from rducc.dialects.program import entry_function, functions
from rducc.dialects.rdu.collectives import AllGatherOp, AllReduceOp, AllToAllOp, ReduceScatterOp, SendRecvOp
from rducc.dialects.rdu.dataflow import ConvOp, MatmulOp
from rducc.dialects.shapes import value_bytes
from rducc.dialects.tier import GlobalOp
from rducc.model.kernel_timing import collective_seconds, peak_seconds
from rducc.model.pipeline_schedule import OneFOneB, default_microbatches, one_f_one_b
from rducc.model.training_speed import spill_seconds
from rducc.targets import Target

_COLLECTIVE_KINDS: dict[type, str] = {
    AllReduceOp: "all_reduce", AllGatherOp: "all_gather", ReduceScatterOp: "reduce_scatter", AllToAllOp: "all_to_all",
}


@dataclass(frozen=True)
class Work:
    """One op: its FLOPs at peak on one socket (s), the weight bytes it reads,
    and whether tp divides it (a matmul of the entry function)."""

    compute_s: float
    weight_bytes: int
    by_tp: bool = False


@dataclass(frozen=True)
class Collective:
    """A collective a split inserts: its kind, its input's bytes on one rank, the group
    (0: the candidate's tp; `by_tp`: `size` is the whole value's, a rank sends size / tp)."""

    kind: str
    size: int
    group: int
    by_tp: bool = False
    over_dp: bool = False
    """Over the candidate's dp replicas (a dp group: the ranks tp apart), not its tp ranks."""


@dataclass
class Body:
    """An outlined layer (or the entry's ops) as one rank runs it: its ops and collectives."""

    work: list[Work] = field(default_factory=list)
    collectives: list[Collective] = field(default_factory=list)
    per_rank: bool = False
    """Split by `rdu-partition` already: tp divides nothing more (else: its matmuls)."""


@dataclass(frozen=True)
class SplitEntry:
    """The entry function of a step `rdu-partition` split tp ways: per op of the unsplit
    entry (the return left out, in order), the ops one rank runs for it (the op as
    split and the collectives and local parts the partition put before it)."""

    ops: Sequence[Sequence[Operation]]
    function: func.FuncOp


@dataclass
class Unit:
    """An op or a layer call of the entry function, in program order."""

    phase: str
    body: Body
    """The unit at tp = 1."""
    callee: str = ""
    reads: tuple[bool, ...] = ()
    """Per argument of a call: whether the caller passes a weight (read from HBM)."""
    gradients: dict[int, int] = field(default_factory=dict)
    """Per tp (1 included): the bytes on one rank of the gradients it makes (its
    results the optimizer reads), each all-reduced over dp (ZeRO: reduce-scattered)
    where it is made, as `rdu-partition` syncs them."""
    split: dict[int, Body] = field(default_factory=dict)
    results: dict[int, tuple[int, ...]] = field(default_factory=dict)
    """Per tp > 1: its results' bytes on one rank as `rdu-partition` splits them (what a
    pipeline cut sends; absent: the whole value's, a weight-shaped one divided by tp)."""
    """Per tp: what one rank runs for it as `rdu-partition` splits the step (a call:
    the ops the partition puts around it, its layer's are `StepProfile.layers`')."""
    sources: tuple[tuple[int, int, int, bool], ...] = ()
    """Each value it reads that an earlier unit makes, once: (that unit's index, the
    result's index, its bytes, whether dp splits it, else tp: `_sources`). A
    pipeline cut between the two sends it (`rdu-partition`'s `send_recv`, once to
    each stage that reads it)."""


@dataclass
class StepProfile:
    """What one walk of a training step's imported graph gives the split chooser (module docstring)."""

    units: list[Unit]
    layers: dict[int, dict[str, Body] | None]
    """Per tp: each outlined layer's body partitioned tp ways (None: that tp does not split the layers)."""
    batch: int
    parameter_bytes: int
    trained_bytes: int
    state_bytes: int
    saved_bytes: int
    layer_calls: int
    """Calls of the outlined backward layer (the layers the gradient sync overlaps); 1 when none."""
    gradient_sizes: tuple[int, ...] = ()
    """Bytes of each trained parameter's gradient: one collective each, as rdu-partition syncs them."""
    cuts: Mapping[int, Sequence[int]] = field(default_factory=dict)
    """Per pp: each unit's stage as `rdu-partition` cuts the step (`training_stages`);
    a pp not here is cut by `_stages`' own rule."""
    executed: int = 1
    """The microbatches the step runs itself (`rdu.microbatches`; 1F1B's count at
    pp > 1): each unit is one microbatch's, so none is divided by the count again."""
    saved_on_rank: dict[int, int] = field(default_factory=dict)
    """Per tp > 1: the saved activations' bytes on one rank of the step split tp ways
    (absent: `saved_bytes` / tp)."""
    sequence: StepProfile | None = None
    """The profile of the step split with sequence parallelism at each tp (None: not weighed)."""

    def bodies(self, unit: Unit, tp: int) -> list[Body] | None:
        """What the unit runs on one of tp ranks (None: tp does not split its layer)."""
        if tp == 1:
            return [unit.body]
        around = [unit.split[tp]] if tp in unit.split else []
        if not unit.callee:
            return around or [unit.body]
        found = self.layers.get(tp)
        layer = None if found is None else found.get(unit.callee)
        return None if layer is None else [layer, *around]


@dataclass(frozen=True)
class Candidate:
    """A split: dp replicas x tp ranks x pp stages, ZeRO-sharded optimizer state or not."""

    dp: int
    tp: int
    pp: int
    zero: bool = False
    sequence_parallel: bool = False
    """tp > 1 with sequence parallelism (passes/rdu_partition/sequence.py)."""

    @property
    def sockets(self) -> int:
        return self.dp * self.tp * self.pp

    def name(self) -> str:
        return (f"dp={self.dp} tp={self.tp} pp={self.pp}" + (" zero" if self.zero else "")
                + (" sp" if self.sequence_parallel else ""))

    def without_sequence(self) -> Candidate:
        """The same split without sequence parallelism."""
        return Candidate(self.dp, self.tp, self.pp, self.zero)


@dataclass(frozen=True)
class CandidateEstimate:
    """A candidate's modeled step (seconds) by part, and one socket's bytes."""

    candidate: Candidate
    microbatches: int
    schedule: OneFOneB | None
    gradient_sync_s: float = 0.0
    """Gradient (and ZeRO parameter) collectives not hidden under the backward."""
    optimizer_s: float = 0.0
    spill_s: float = 0.0
    socket_bytes: dict[str, int] = field(default_factory=dict)
    """One socket's weights, gradients, optimizer state and activations (the busiest stage's)."""
    activations_in_ddr: int = 0
    """One socket's saved activations past what its HBM holds beside the weights,
    gradients and optimizer state (written to DDR and read back: `spill_s`)."""
    overflows: bool = False
    """A socket's bytes are more than its HBM and DDR hold (refused)."""
    refused: str = ""
    """Why the candidate cannot run or be compiled (empty: it can); with a
    schedule, it was modeled but rdu-partition does not compile it."""

    @property
    def step_s(self) -> float:
        if self.schedule is None:
            return float("inf")
        return self.schedule.step_s + self.gradient_sync_s + self.optimizer_s + self.spill_s

    def row(self, hbm_bytes: int) -> str:
        """One line of the candidates' table."""
        if self.schedule is None:
            return f"{self.candidate.name():<20} -- {self.refused}"
        held = sum(self.socket_bytes.values())
        s = self.schedule
        line = (f"{self.candidate.name():<20} {_time(self.step_s):>10}: pipeline {_time(s.step_s)} "
                f"(m={s.microbatches}, bubble {s.bubble_fraction:.0%}), gradient sync {_time(self.gradient_sync_s)}, "
                f"optimizer {_time(self.optimizer_s)}, DDR spill {_time(self.spill_s)}; a socket holds "
                f"{_bytes(held)} of {_bytes(hbm_bytes)} HBM")
        return line + (f" -- not compiled: {self.refused}" if self.refused else "")


@dataclass(frozen=True)
class SplitChoice:
    """Every candidate's estimate, fastest first, and the one chosen."""

    estimates: tuple[CandidateEstimate, ...]
    chosen: CandidateEstimate
    hbm_bytes: int

    def table(self) -> str:
        lines = [f"split candidates (modeled, fastest first; chosen: {self.chosen.candidate.name()}):"]
        lines += ["  " + e.row(self.hbm_bytes) for e in self.estimates]
        lines.append("  " + self.reason())
        return "\n".join(lines)

    def reason(self) -> str:
        """Why the chosen candidate won: its margin over the next one compiled, part by
        part (and a faster candidate's, modeled but not compiled, named)."""
        chosen = self.chosen
        modeled = [e for e in self.estimates if e is not chosen and e.schedule is not None]
        compiled = [e for e in modeled if not e.refused]
        if not compiled:
            text = f"{chosen.candidate.name()}: the only candidate that runs"
        else:
            runner = compiled[0]
            ours, theirs = _parts(chosen), _parts(runner)
            biggest = max(theirs, key=lambda k: theirs[k] - ours[k])
            text = (f"{chosen.candidate.name()} beats {runner.candidate.name()} by "
                    f"{_time(runner.step_s - chosen.step_s)}, most of it {biggest} "
                    f"({_time(ours[biggest])} against {_time(theirs[biggest])})")
        faster = [e for e in modeled if e.refused and e.step_s < chosen.step_s]
        if faster:
            text += (f"; {faster[0].candidate.name()} is modeled faster ({_time(faster[0].step_s)}) but "
                     f"not compiled ({faster[0].refused})")
        return text


def _bytes(n: int) -> str:
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= scale:
            return f"{n / scale:,.2f} {unit}"
    return f"{n} B"


def _time(seconds: float) -> str:
    """Seconds as ms, or us below a millisecond."""
    return f"{seconds * 1e3:,.2f} ms" if seconds >= 1e-3 else f"{seconds * 1e6:.2f} us"


def _parts(estimate: CandidateEstimate) -> dict[str, float]:
    schedule = estimate.schedule
    return {"pipeline (compute, weight reads, activation collectives, bubble)": schedule.step_s if schedule else 0.0,
            "gradient sync": estimate.gradient_sync_s, "optimizer": estimate.optimizer_s,
            "DDR spill": estimate.spill_s}


# -- the profile -------------------------------------------------------------


def _weight_args(function: func.FuncOp) -> set[SSAValue]:
    return {arg for arg, attrs in zip(function.args, arg_attrs(function)) if global_of(attrs) is not None}


def _is_matmul(op: Operation) -> bool:
    return isinstance(op, MatmulOp | ConvOp)


def op_work(op: Operation, weights: set[SSAValue], target: Target) -> Work:
    """One op's FLOPs at peak and the weight bytes it reads (`weights`: the arguments that hold them)."""
    compute = peak_seconds(op, target)
    read = sum(value_bytes(v) for v in op.operands if v in weights)
    return Work(compute, read, _is_matmul(op))


def _weight_matmul(op: Operation, weights: set[SSAValue]) -> bool:
    return _is_matmul(op) and any(v in weights for v in op.operands)


def tp_collectives(ops: Sequence[Operation], weights: set[SSAValue]) -> dict[Operation, list[Collective]]:
    """The collectives tp gives the forward's weight matmuls of a function that is not
    an outlined layer (group 0: the candidate's tp), as `rdu-partition` splits them
    (Megatron-style): a weight matmul whose input is replicated splits its output
    columns (its result is split; the backward all-reduces the gradient of its input,
    once an input, when that input is computed); one whose input is split contracts
    over the split and all-reduces its result. A split no matmul contracts (an output
    layer's logits) stays split through the loss (vocab-parallel cross entropy,
    passes/rdu_partition/vocab.py): per row, the ranks' maxima all-gathered, the
    sum of exps and the label's log-probability all-reduced in the forward, and the
    sum of the logits' gradient in the backward (f32, one number a row each); its
    weight's gradient comes out split as the weight."""
    origins: dict[SSAValue, frozenset[Operation]] = {}
    columns: list[Operation] = []
    closed: set[Operation] = set()
    made: dict[Operation, list[Collective]] = {}
    grads: set[SSAValue] = set()
    for op in ops:
        if _phase(op) != Phase.FORWARD.value or isinstance(op, func.CallOp):
            continue
        inputs = [v for v in op.operands if v not in weights]
        split = frozenset().union(*(origins[v] for v in inputs if v in origins))
        if _weight_matmul(op, weights) and split:
            made.setdefault(op, []).append(Collective("all_reduce", value_bytes(op.results[0]), 0))
            closed |= split
        elif _weight_matmul(op, weights):
            columns.append(op)
            origins.update((r, frozenset([op])) for r in op.results)
            for v in inputs:
                if not isinstance(v, BlockArgument) and v not in grads:
                    grads.add(v)
                    made.setdefault(op, []).append(Collective("all_reduce", value_bytes(v), 0))
        elif split:
            origins.update((r, split) for r in op.results)
    for op in columns:
        if op not in closed:
            logits = op.results[0].type
            shape = logits.get_shape() if isinstance(logits, TensorType) else ()
            rows = 4 * math.prod(shape[:-1])  # one f32 a row
            made.setdefault(op, []).extend(
                [Collective("all_gather", rows, 0)] + [Collective("all_reduce", rows, 0)] * 3)
    return made


def body_of(function: func.FuncOp, target: Target, weights: set[SSAValue] | None = None) -> Body:
    """A function's ops and collectives as one rank runs them (its weight arguments:
    `weights`, else every argument holding a global)."""
    held = _weight_args(function) if weights is None else weights
    body = Body()
    for op in function.body.block.ops:
        if isinstance(op, func.ReturnOp | func.CallOp):
            continue
        kind = _COLLECTIVE_KINDS.get(type(op))
        if kind is not None:
            assert isinstance(op, AllReduceOp | AllGatherOp | ReduceScatterOp | AllToAllOp)
            body.collectives.append(Collective(kind, value_bytes(op.operands[0]), op.group_size))
        elif not isinstance(op, SendRecvOp):
            body.work.append(op_work(op, held, target))
    return body


def _phase(op: Operation) -> str:
    phase = phase_of(op)
    return phase.value if phase is not None else Phase.FORWARD.value


def _batch(function: func.FuncOp) -> int:
    for arg, attrs in zip(function.args, arg_attrs(function)):
        if is_input(attrs) and isinstance(arg.type, TensorType) and arg.type.get_shape():
            return arg.type.get_shape()[0]
    return 1


def _global_bytes(module: ModuleOp, function: func.FuncOp) -> tuple[int, list[int], int]:
    """(parameter bytes, each trained parameter's bytes, optimizer state bytes)."""
    updated = {u.name for u in result_updates(function) if u is not None and u.kind == "buffer"}
    parameters = state = 0
    trained: list[int] = []
    for op in module.ops:
        if not isinstance(op, GlobalOp):
            continue
        kind = op.attributes.get("kind")
        size = value_bytes(op.global_type)
        if kind is not None and getattr(kind, "data", "") == "parameter":
            parameters += size
            if op.sym_name.data in updated or not updated:
                trained.append(size)
        elif op.sym_name.data in updated:
            state += size
    return parameters, trained, state


def _saved_bytes(units: Sequence[tuple[Operation, str]]) -> int:
    """Bytes of forward results read by ops (or calls) of another phase."""
    total = 0
    for op, phase in units:
        if phase != Phase.FORWARD.value:
            continue
        for result in op.results:
            if any(_phase(use.operation) != Phase.FORWARD.value for use in result.uses
                   if not isinstance(use.operation, func.ReturnOp)):
                total += value_bytes(result)
    return total


def step_profile(module: ModuleOp, target: Target,
                 layers: Mapping[int, Mapping[str, func.FuncOp] | None] | None = None,
                 cuts: Mapping[int, Sequence[int]] | None = None,
                 entries: Mapping[int, SplitEntry] | None = None) -> StepProfile:
    """The profile of an imported (level-1) training step; `layers`: per tp, the
    outlined layers partitioned tp ways, `cuts`: per pp, each op's stage, and
    `entries`: per tp, the entry function split (`rdu-partition` gives all three;
    without `entries`, tp divides the entry's matmuls and adds `tp_collectives`)."""
    entry = entry_function(module)
    batch = _batch(entry)
    weights = _weight_args(entry)
    weight_shapes = {tuple(v.type.get_shape()) for v in weights if isinstance(v.type, TensorType)}
    callees = {f.sym_name.data: f for f in functions(module) if f is not entry}
    at_one = {name: body_of(f, target, set()) for name, f in callees.items()}
    ops = [op for op in entry.body.block.ops if not isinstance(op, func.ReturnOp)]
    phased = [(op, _phase(op)) for op in ops]
    order = {op: index for index, op in enumerate(ops)}
    units: list[Unit] = []
    under_tp = tp_collectives(ops, weights)
    for op, phase in phased:
        if isinstance(op, func.CallOp):
            name = op.callee.string_value()
            reads = tuple(v in weights for v in op.arguments)
            body = _with_reads(at_one.get(name, Body()), callees.get(name), reads, target)
            units.append(Unit(phase, body, name, reads))
        else:
            collectives = under_tp.get(op, []) + _loss_all_reduces(op, phase, batch)
            units.append(Unit(phase, Body([op_work(op, weights, target)], collectives)))
        units[-1].sources = _sources(op, order, weight_shapes)
        units[-1].gradients[1] = _gradient_bytes(op)
    split_layers: dict[int, dict[str, Body] | None] = {}
    for tp, found in (layers or {}).items():
        split_layers[tp] = None if found is None else {
            name: _with_reads(body_of(f, target, set()), f, _reads_of(units, name), target, per_rank=True)
            for name, f in found.items()}
    saved_on_rank = {}
    for tp, entry_split in (entries or {}).items():
        _add_split(units, entry_split, tp, target)
        split_ops = [op for op in entry_split.function.body.block.ops if not isinstance(op, func.ReturnOp)]
        saved_on_rank[tp] = _saved_bytes([(op, _phase(op)) for op in split_ops])
    parameters, trained, state = _global_bytes(module, entry)
    backward_calls = [u for u in units if u.callee and u.phase == Phase.BACKWARD.value]
    return StepProfile(units, split_layers, batch, parameters, sum(trained), state, _saved_bytes(phased),
                       max(1, len(backward_calls)), tuple(trained), dict(cuts or {}),
                       executed_microbatches(module), saved_on_rank)


def _loss_all_reduces(op: Operation, phase: str, batch: int) -> list[Collective]:
    """A forward op that reduces a batched value to a scalar (the loss's sum, its
    count of labels): dp replicas each hold part of the batch, so `rdu-partition`
    all-reduces its result over them."""
    if phase != Phase.FORWARD.value or batch < 2 or isinstance(op, func.CallOp):
        return []
    batched = any(isinstance(v.type, TensorType) and v.type.get_shape()[:1] == (batch,) for v in op.operands)
    return [Collective("all_reduce", value_bytes(r), 0, over_dp=True) for r in op.results
            if batched and isinstance(r.type, TensorType) and not r.type.get_shape()]


def _sources(op: Operation, order: Mapping[Operation, int], weight_shapes: set[tuple[int, ...]]
             ) -> tuple[tuple[int, int, int, bool], ...]:
    """The values `op` reads that an op of the entry function makes (`Unit.sources`);
    dp splits each but a scalar and a value of a weight's shape (or its transpose's:
    a gradient), which every replica holds whole and tp splits as the weight."""
    found: dict[SSAValue, tuple[int, int, int, bool]] = {}
    for value in op.operands:
        owner = value.owner
        if isinstance(owner, Operation) and isinstance(value, OpResult) and owner in order and value not in found:
            shape = tuple(value.type.get_shape()) if isinstance(value.type, TensorType) else ()
            batched = bool(shape) and shape not in weight_shapes and shape[::-1] not in weight_shapes
            found[value] = (order[owner], value.index, value_bytes(value), batched)
    return tuple(found.values())


def _reads_of(units: Sequence[Unit], callee: str) -> tuple[bool, ...]:
    return next((u.reads for u in units if u.callee == callee), ())


def _with_reads(body: Body, callee: func.FuncOp | None, reads: tuple[bool, ...], target: Target,
                per_rank: bool = False) -> Body:
    """A layer's body with the weight bytes its caller passes (`reads`) charged to the ops reading them."""
    if callee is None:
        return body
    weights: set[SSAValue] = {arg for arg, read in zip(callee.args, reads) if read}
    found = body_of(callee, target, weights)
    found.per_rank = per_rank
    return found


def _add_split(units: Sequence[Unit], entry: SplitEntry, tp: int, target: Target) -> None:
    """Give each unit what one of tp ranks runs for it (`Unit.split`): the split ops'
    FLOPs and weight reads, the collectives the partition put before them, and the
    loss's all-reduces over dp (not tp's to insert)."""
    weights = _weight_args(entry.function)
    for unit, ops in zip(units, entry.ops, strict=True):
        body = Body(per_rank=True)
        for op in ops:
            kind = _COLLECTIVE_KINDS.get(type(op))
            if kind is not None:
                assert isinstance(op, AllReduceOp | AllGatherOp | ReduceScatterOp | AllToAllOp)
                body.collectives.append(Collective(kind, value_bytes(op.operands[0]), op.group_size))
            elif not isinstance(op, func.CallOp | SendRecvOp):
                body.work.append(op_work(op, weights, target))
        body.collectives += [c for c in unit.body.collectives if c.over_dp]
        unit.split[tp] = body
        unit.gradients[tp] = _gradient_bytes(ops[-1]) if ops else 0
        if ops:
            unit.results[tp] = tuple(value_bytes(r) for r in ops[-1].results)


def _gradient_bytes(op: Operation) -> int:
    """Bytes of the gradients a backward op (or layer call) makes: its tensor results
    an optimizer op reads (a partial sum over dp replicas until they are synced)."""
    if _phase(op) != Phase.BACKWARD.value:
        return 0
    return sum(value_bytes(r) for r in op.results
               if isinstance(r.type, TensorType) and r.type.get_shape()
               and any(_phase(use.operation) == Phase.OPTIMIZER.value for use in r.uses))


# -- a candidate's estimate -------------------------------------------------


def _unit_seconds(profile: StepProfile, unit: Unit, c: Candidate, m: int, target: Target
                  ) -> tuple[float, float] | None:
    """One microbatch of a forward or backward unit on one rank, and its part not in
    collectives (what runs under the gradient sync); None: tp does not split its layer."""
    bodies = profile.bodies(unit, c.tp)
    if bodies is None:
        return None
    bandwidth = target.sustained_bandwidth("hbm")
    seconds = 0.0
    for body in bodies:
        for work in body.work:
            share = _tp_share(body, unit, work, c.tp)
            compute = work.compute_s / c.dp / share
            read = work.weight_bytes / share
            if compute or read:
                seconds += max(compute / m, read / bandwidth) + target.dma_latency_s
    busy = seconds
    for coll in (coll for body in bodies for coll in body.collectives):
        if coll.over_dp:
            if c.dp > 1:
                ranks = [replica * c.tp for replica in range(c.dp)]
                seconds += max(collective_seconds(coll.kind, coll.size, c.dp, target, ranks)[0] / m,
                               target.link_latency_s)
            continue
        group = coll.group or c.tp
        if group > 1:
            size = coll.size // c.dp // (c.tp if coll.by_tp else 1)
            seconds += max(collective_seconds(coll.kind, size, group, target)[0] / m, target.link_latency_s)
    return seconds, busy


def _tp_share(body: Body, unit: Unit, work: Work, tp: int) -> int:
    """What tp still divides an op's work by: the ranks, for a matmul of the entry
    function not split by `rdu-partition` in the profile; else 1 (split already)."""
    return tp if work.by_tp and not body.per_rank and not unit.callee else 1


def _optimizer_seconds(profile: StepProfile, unit: Unit, c: Candidate, target: Target) -> float | None:
    """The unit's update once a step on one rank: its shard under ZeRO, and the
    collectives the tp split puts in the optimizer, as `training_estimate` times them."""
    bodies = profile.bodies(unit, c.tp)
    if bodies is None:
        return None
    bandwidth = target.sustained_bandwidth("hbm")
    seconds = 0.0
    for body in bodies:
        for w in body.work:
            share = (c.tp if not body.per_rank and not unit.callee else 1) * (c.dp if c.zero else 1)
            seconds += max(w.compute_s / share, w.weight_bytes / share / bandwidth)
        seconds += sum(collective_seconds(coll.kind, coll.size // (c.dp if c.zero else 1), coll.group or c.tp,
                                          target)[0] for coll in body.collectives if not coll.over_dp)
    return seconds


def _stages(profile: StepProfile, pp: int) -> list[int] | None:
    """Each unit's pipeline stage: `rdu-partition`'s cut (`StepProfile.cuts`), else the
    forward's units cut into pp runs of about equal FLOPs (a unit on the stage its
    middle falls in), the backward's in reverse, the optimizer's in order (None:
    fewer forward units than pp)."""
    forward = [u for u in profile.units if u.phase == Phase.FORWARD.value]
    if pp > 1 and sum(1 for u in forward if u.body.work) < pp:
        return None
    if pp in profile.cuts:
        return list(profile.cuts[pp])
    total = sum(w.compute_s for u in forward for w in u.body.work) or 1.0
    stage: list[int] = []
    done = 0.0
    others = {phase: [u for u in profile.units if u.phase == phase]
              for phase in (Phase.BACKWARD.value, Phase.OPTIMIZER.value)}
    seen = {phase: 0 for phase in others}
    for unit in profile.units:
        if unit.phase == Phase.FORWARD.value:  # where its middle falls, as `training_stages` cuts the step
            own = sum(w.compute_s for w in unit.body.work)
            stage.append(min(pp - 1, int((2 * done + own) * pp / (2 * total))))
            done += own
            continue
        group = others.get(unit.phase, [])
        index = seen.get(unit.phase, 0)
        seen[unit.phase] = index + 1
        position = index * pp // max(len(group), 1)
        stage.append(pp - 1 - position if unit.phase == Phase.BACKWARD.value else position)
    return stage


def estimate_candidate(profile: StepProfile, c: Candidate, target: Target) -> CandidateEstimate:
    """A candidate's modeled step (module docstring)."""
    if c.sequence_parallel:
        if profile.sequence is None or c.tp not in profile.sequence.saved_on_rank:
            return CandidateEstimate(c, 1, None, refused=f"tp={c.tp} with sequence parallelism does not split "
                                                         "this step")
        profile = profile.sequence
    if profile.batch % c.dp:
        return CandidateEstimate(c, 1, None, refused=f"dp={c.dp} does not divide the batch of {profile.batch}")
    executed = profile.executed
    m = executed if executed > 1 else default_microbatches(profile.batch // c.dp, c.pp)
    share = 1 if executed > 1 else m  # what an op's compute is divided by for one microbatch
    stages = _stages(profile, c.pp)
    if stages is None:
        return CandidateEstimate(c, m, None, refused=f"pp={c.pp}: the forward has fewer units than stages")
    microbatch = [0.0] * c.pp
    backward = [0.0] * c.pp
    optimizer = [0.0] * c.pp
    queued = [0.0] * c.pp
    synced = c.dp > 1 and any(unit.gradients.get(c.tp) for unit in profile.units)
    for unit, stage in zip(profile.units, stages):
        if unit.phase == Phase.OPTIMIZER.value:
            update = _optimizer_seconds(profile, unit, c, target)
            if update is None:
                return CandidateEstimate(c, m, None, refused=f"tp={c.tp} does not split the outlined layer "
                                                             f"@{unit.callee}")
            optimizer[stage] += update
            continue
        timed = _unit_seconds(profile, unit, c, share, target)
        if timed is None:
            return CandidateEstimate(c, m, None, refused=f"tp={c.tp} does not split the outlined layer @{unit.callee}")
        seconds, busy = timed
        microbatch[stage] += seconds
        if unit.phase == Phase.BACKWARD.value:
            backward[stage] += seconds
            queued[stage] = max(0.0, queued[stage] - busy)  # the queued gradient syncs run under its work
        if synced and (made := unit.gradients.get(c.tp, 0)):
            sync, gather = _gradient_collectives(made, c, target)
            queued[stage] += sync
            optimizer[stage] += gather  # ZeRO's all-gather of the updated parameters, in the optimizer
    sent: set[tuple[int, int, int]] = set()
    for unit, stage in zip(profile.units, stages):  # a send_recv of each value read on another stage
        for source, index, size, batched in unit.sources:
            if stages[source] == stage or (source, index, stage) in sent:
                continue
            sent.add((source, index, stage))
            # dp splits an activation; tp what rdu-partition splits (else a weight-shaped value, as the weight)
            split = profile.units[source].results.get(c.tp)
            size = split[index] if split is not None and index < len(split) else size // (1 if batched else c.tp)
            hop = collective_seconds("send_recv", size // (c.dp if batched else 1), 2, target)[0]
            if unit.phase == Phase.OPTIMIZER.value:
                optimizer[stage] += hop
            else:  # as training_estimate charges it: a microbatch's part, at least the link's latency
                microbatch[stage] += max(hop / share, target.link_latency_s)
                if unit.phase == Phase.BACKWARD.value:
                    backward[stage] += max(hop / share, target.link_latency_s)
    if executed > 1:  # every microbatch's units ran on their stage: one microbatch's time is their mean
        microbatch = [t / executed for t in microbatch]
        backward = [t / executed for t in backward]
    if synced:
        sync = max(queued)
    else:
        sync = max(_gradient_sync_s(profile, c, backward[s], target) for s in range(c.pp))
    held = socket_bytes(profile, c, m)
    spill = spill_seconds(held["weights"] + held["optimizer state"], target) * m  # as training_estimate charges it
    spilled, traffic = activation_spill(held, m, min(c.pp, m), target)
    estimate = CandidateEstimate(c, m, one_f_one_b(microbatch, m), sync, max(optimizer),
                                 spill + traffic / target.sustained_bandwidth("ddr"), held, spilled)
    if sum(held.values()) > target.hbm_bytes + target.ddr_bytes:
        room = _bytes(target.hbm_bytes + target.ddr_bytes)
        return dataclasses.replace(estimate, overflows=True, refused=f"a socket holds {_bytes(sum(held.values()))}, "
                                                                     f"more than its HBM and DDR ({room})")
    return estimate


def activation_spill(held: Mapping[str, int], m: int, in_flight: int, target: Target) -> tuple[int, int]:
    """(bytes, DDR traffic a step): a socket's saved activations (`held`, of the
    `in_flight` microbatches 1F1B keeps) past the HBM its weights, gradients and
    optimizer state leave, and the bytes moved to spill them: each microbatch's
    share written to DDR in the forward and read back in the backward."""
    room = max(target.hbm_bytes - held["weights"] - held["gradients"] - held["optimizer state"], 0)
    over = max(held["activations"] - room, 0)
    return over, 2 * over * m // max(in_flight, 1)


def _gradient_collectives(gradient_bytes: int, c: Candidate, target: Target) -> tuple[float, float]:
    """A unit's gradients (bytes on one rank) synced over the dp replicas (a dp group:
    the ranks tp apart): all-reduced, or with ZeRO reduce-scattered; and with ZeRO
    the updated parameters' all-gather (seconds; 0 without)."""
    group = [replica * c.tp for replica in range(c.dp)]
    if not c.zero:
        return collective_seconds("all_reduce", gradient_bytes, c.dp, target, group)[0], 0.0
    return (collective_seconds("reduce_scatter", gradient_bytes, c.dp, target, group)[0],
            collective_seconds("all_gather", gradient_bytes // c.dp, c.dp, target, group)[0])


def _gradient_sync_s(profile: StepProfile, c: Candidate, backward_s: float, target: Target) -> float:
    """The gradient collectives of one stage's parameters not hidden under its backward,
    for a profile whose units name no gradients (`Unit.gradients`): one collective a
    trained parameter, ready evenly through the backward."""
    if c.dp == 1:
        return 0.0
    sizes = [size // c.tp for size in profile.gradient_sizes or (profile.trained_bytes,)]
    group = [replica * c.tp for replica in range(c.dp)]  # a dp group: the ranks tp apart
    if c.zero:
        reduce = sum(collective_seconds("reduce_scatter", size, c.dp, target, group)[0] for size in sizes) / c.pp
        gather = sum(collective_seconds("all_gather", size // c.dp, c.dp, target, group)[0]
                     for size in sizes) / c.pp
    else:
        reduce = sum(collective_seconds("all_reduce", size, c.dp, target, group)[0] for size in sizes) / c.pp
        gather = 0.0
    layers = max(profile.layer_calls, len(profile.gradient_sizes))  # the gradients come ready one after another
    exposed = max(reduce - backward_s * (layers - 1) / layers, reduce / layers)
    return exposed + gather


def socket_bytes(profile: StepProfile, c: Candidate, m: int) -> dict[str, int]:
    """One socket's bytes (module docstring): its stage's and shard's share."""
    split = c.tp * c.pp
    shard = c.dp if c.zero else 1
    in_flight = min(c.pp, m) / m
    saved = profile.saved_on_rank.get(c.tp, profile.saved_bytes // c.tp)  # one rank's, as rdu-partition splits them
    return {
        "weights": profile.parameter_bytes // split,
        "gradients": profile.trained_bytes // split // shard,
        "optimizer state": profile.state_bytes // split // shard,
        "activations": int(saved / (c.dp * c.pp) * in_flight),
    }


def candidates(sockets: int, batch: int) -> list[Candidate]:
    """Powers of two using every socket (dp x tp x pp = sockets; dp dividing the
    batch is checked by the estimate), each dp > 1 also with ZeRO, and one socket."""
    powers = [1 << i for i in range(sockets.bit_length()) if sockets % (1 << i) == 0]
    found = [Candidate(1, 1, 1)]
    for dp in powers:
        for tp in powers:
            for pp in powers:
                if dp * tp * pp != sockets or (dp, tp, pp) == (1, 1, 1):
                    continue
                found.append(Candidate(dp, tp, pp))
                if dp > 1:
                    found.append(Candidate(dp, tp, pp, zero=True))
    return found


def needs_sequence(plain: CandidateEstimate | None) -> bool:
    """Whether sequence parallelism is weighed beside the split `plain` estimates:
    where without it the saved activations spill to DDR or the socket's bytes do
    not fit at all. Elsewhere it saves only memory nobody needs (its modeled time
    is the split's within the level-1 model's precision: the same bytes on the
    links, the norms' work a DMA start-up each), so the split without it is kept."""
    return plain is not None and (plain.activations_in_ddr > 0 or plain.overflows)


def choose(profile: StepProfile, target: Target, runs: Callable[[Candidate], str]) -> SplitChoice:
    """Every candidate's estimate, fastest first; chosen: the fastest that `runs`
    (which returns why a candidate cannot be compiled, or ""). With a sequence-parallel
    profile (`StepProfile.sequence`), a tp > 1 candidate is weighed with sequence
    parallelism too where its split without it `needs_sequence`."""
    estimates = []
    plain: dict[Candidate, CandidateEstimate] = {}
    found = candidates(target.sockets, profile.batch)
    if profile.sequence is not None:  # each tp > 1 with sequence parallelism too, weighed after the split without
        found += [dataclasses.replace(c, sequence_parallel=True) for c in found if c.tp > 1]
    for candidate in found:
        if candidate.zero and not profile.state_bytes:
            continue  # no optimizer state to shard
        if candidate.sequence_parallel and not needs_sequence(plain.get(candidate.without_sequence())):
            continue
        estimate = estimate_candidate(profile, candidate, target)
        plain[candidate] = estimate
        if not estimate.refused and (why := runs(candidate)):
            estimate = dataclasses.replace(estimate, refused=why)
        estimates.append(estimate)
    ordered = sorted(estimates, key=lambda e: (e.step_s, e.candidate.sockets, e.candidate.zero,
                                               e.candidate.sequence_parallel))
    runnable = [e for e in ordered if not e.refused]
    chosen = runnable[0] if runnable else CandidateEstimate(Candidate(1, 1, 1), 1, None)
    return SplitChoice(tuple(ordered), chosen, target.hbm_bytes)


__all__ = ["Candidate", "CandidateEstimate", "SplitChoice", "SplitEntry", "StepProfile", "activation_spill",
           "candidates", "needs_sequence", "choose", "estimate_candidate", "socket_bytes", "step_profile"]
