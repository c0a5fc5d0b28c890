"""The modeled speed and memory of a training step (issue 27, item 6).

A placed training step (its kernels carry `#rdu<phase ...>`, set by the
importer and `rdu-place-saved`) costs as any program (`estimate`); this
module splits the modeled step time by phase and names what the step moves:

- **forward**, **backward**, **optimizer**: each kernel's modeled time, in
  the phase of its `tier.compute` (a kernel in an outlined layer: the phase
  of the call it runs under), less the two parts below;
- **collectives**: the kernels' socket-to-socket time (`KernelCost.link_s`);
- **DDR traffic**: what DDR adds beyond a kernel's other resources,
  `max(0, ddr_s - max(compute_s, sram_s, hbm_s))` (a kernel bound by DDR
  waits that long for it);
- **host**: ops run on the host CPU (`rdu.host_call`).

The phases add up to the step time. Tokens a step = the elements of the
first integer user input (token ids), else the leading dim of the first
user input (samples). N = the elements of the globals of kind "parameter".
Model FLOPs = 6 x N x tokens (the forward's 2 N and the backward's 4 N per
token), MFU = model FLOPs / step time / (peak x sockets), with the peak of
the parameters' element type and the sockets the program was split over.
Every figure is modeled, not measured; `training_ranges` gives the step
time, tokens/s and MFU as low..high over the target's assumed figures.

The split estimate: `training_estimate(module, target)` times a partitioned
training step (`rdu-partition`'s dp replicas, tp ranks and pp stages) as the
sockets run it (`rdu-partition` compares splits by it; the report prints its
summary):

- per pipeline stage, the forward and backward of one microbatch. On the
  imported graph (level 1, as `rdu-partition` compares splits) each op takes
  the larger of its FLOPs at peak / m and its weight reads at HBM bandwidth
  (weights are read again every microbatch), plus a DMA start-up; a collective
  of the forward or backward `collective_cost` / m, at least one link latency.
  On a lowered program each kernel takes its modeled time (`kernel_costs`) / m,
  at least its launch and fill, the loops as the cost model settles them
  (`settle_loops`: a loop's later kernels, and a loop body held as one
  configuration after its first kernel, launch nothing; `TrainingEstimate.launches`
  counts each stage's launches, in all `Report.kernel_launches`). A step that runs its microbatches itself
  (`rdu.microbatches` = m, their ops all in the program) times every op whole
  (each is one microbatch's) and takes a stage's mean over the m;
- the stages under the 1F1B schedule (`pipeline_schedule.one_f_one_b`), which
  counts the bubble;
- the gradient collectives (`rdu.deferred`: an all-reduce that nothing of the
  forward or backward reads) run on the links under the backward after them:
  only what is still running when the backward of the last microbatch ends
  counts (`exposed_collective_s`, the busiest stage's);
- the optimizer's update once a step, after the pipeline drains;
- weights and optimizer state past a stage socket's HBM, read from DDR every
  microbatch.

The memory table: bytes per class (weights, activations, gradients,
optimizer state) and tier. Weights and optimizer state are the globals
(`rdu.memory_class`, `rdu-place-saved`) in the tier `rdu-place-tiers` gave
them; activations (saved values) and gradients are `rdu.training_memory`
(their placement: sram, hbm, ddr or recomputed).
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field

from xdsl.dialects import func
from xdsl.dialects.builtin import IntegerAttr, IntegerType, ModuleOp, StringAttr, TensorType
from xdsl.ir import Operation, SSAValue

from rducc.dialects.contracts import (
    ACTIVATION_BYTES,
    HBM_WEIGHT_BYTES,
    LOWERED_LEVELS,
    Phase,
    arg_attrs,
    data_parallel_of,
    executed_microbatches,
    global_of,
    input_label,
    is_deferred,
    is_outlined,
    level_of,
    microbatches_of,
    op_stage,
    partition_of,
    phase_of,
    result_roles,
    shard_of,
)
from rducc.dialects.program import entry_function, functions, global_stages
from rducc.dialects.rdu.collectives import COLLECTIVE_OPS
from rducc.dialects.saved import MEMORY_CLASSES, memory_class_of, training_memory
from rducc.dialects.shapes import value_bytes
from rducc.dialects.tier import BufferType, GlobalOp
from rducc.dialects.unchanged import unchanged
from rducc.model.cost_model import (
    KernelCost,
    Report,
    collective_cost,
    estimate,
    kernel_costs,
    settle_loops,
    sram_room_bytes,
    walk_placed,
)
from rducc.model.kernel_timing import op_flops, peak_seconds
from rducc.model.pipeline_schedule import OneFOneB, one_f_one_b
from rducc.model.program_walk import ProgramWalk
from rducc.model.ranges import Ranges, headline_ranges
from rducc.targets import Target

PHASES = ("forward", "backward", "optimizer", "collectives", "DDR traffic", "host", "unmarked")
STEP_TIME = "step time (ms)"
TOKENS_PER_S = "tokens/s"
MFU = "MFU (%)"


@dataclass
class TrainingSpeed:
    """A training step's modeled time by phase, throughput and memory by class and tier."""

    target: str
    step_s: float
    phase_s: dict[str, float]
    tokens: int
    unit: str
    """"tokens" (token ids) or "samples"."""
    parameters: int
    model_flops: float
    peak_flops: float
    sockets: int
    memory: dict[str, dict[str, int]] = field(default_factory=dict)
    ddr_bytes: int = 0
    """Bytes a step moves to or from DDR (modeled)."""
    ddr_by_pair: dict[str, int] = field(default_factory=dict)
    hbm_globals: int = 0
    """Bytes of weights and optimizer state `rdu-place-tiers` put in HBM."""
    hbm_activations: int = 0
    """The most activation bytes live in HBM at once (`tier.activation_bytes`)."""
    hbm_capacity: int = 0

    @property
    def tokens_per_s(self) -> float:
        return self.tokens / self.step_s if self.step_s > 0 else 0.0

    @property
    def mfu(self) -> float:
        denominator = self.step_s * self.peak_flops * self.sockets
        return self.model_flops / denominator if denominator > 0 else 0.0

    def to_dict(self) -> dict:
        return asdict(self) | {"tokens_per_s": self.tokens_per_s, "mfu": self.mfu}

    def table(self) -> str:
        """The readable summary: time by phase, throughput and MFU, memory by class and tier."""
        lines = [f"training step on {self.target} (modeled, not measured)"]
        lines.append(f"  step time      {self.step_s * 1e3:,.3f} ms")
        for name in PHASES:
            seconds = self.phase_s.get(name, 0.0)
            if seconds > 0 or name in ("forward", "backward", "optimizer"):
                share = seconds / self.step_s if self.step_s > 0 else 0.0
                lines.append(f"    {name:<12} {seconds * 1e3:12,.3f} ms  {share:6.1%}")
        lines.append(f"  {self.unit:<14} {self.tokens:,} a step: {self.tokens_per_s:,.1f} {self.unit}/s")
        lines.append(
            f"  MFU            {self.mfu:.1%}: 6 x {self.parameters:,} parameters x {self.tokens:,} {self.unit} = "
            f"{self.model_flops:.4g} FLOP / step time / ({self.peak_flops:.4g} FLOP/s x {self.sockets} sockets)"
        )
        pairs = ", ".join(f"{k} {_bytes(n)}" for k, n in sorted(self.ddr_by_pair.items()))
        lines.append(f"  DDR traffic    {_bytes(self.ddr_bytes)} a step" + (f" ({pairs})" if pairs else ""))
        most = self.hbm_globals + self.hbm_activations
        lines.append(f"  HBM at most    {_bytes(most)} of {_bytes(self.hbm_capacity)}: {_bytes(self.hbm_globals)} of "
                     f"weights and optimizer state, {_bytes(self.hbm_activations)} of activations live at once")
        lines.append("  memory (bytes placed in each tier, not all live at once; recomputed: not kept)")
        header = f"    {'':<16}{'sram':>14}{'hbm':>14}{'ddr':>14}{'recomputed':>14}"
        lines.append(header)
        for cls in MEMORY_CLASSES:
            row = self.memory.get(cls, {})
            lines.append(f"    {cls:<16}" + "".join(f"{_bytes(row.get(t, 0)):>14}"
                                                   for t in ("sram", "hbm", "ddr", "recompute")))
        return "\n".join(lines)


def _bytes(n: int) -> str:
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= scale:
            return f"{n / scale:,.2f} {unit}"
    return f"{n} B"


def is_training(module: ModuleOp) -> bool:
    """Whether the module is a training step: its entry function names a loss result,
    or its kernels carry training phases."""
    for function in functions(module):
        if is_outlined(function):
            continue
        roles = result_roles(function)
        if roles and roles[0] is not None and roles[0].kind == "loss":
            return True
    return any(phase_of(op) is not None for op in module.walk() if op.name in ("tier.compute", "rdu.kernel"))


def _entry(module: ModuleOp) -> func.FuncOp:
    return next(f for f in functions(module) if not is_outlined(f))


def tokens_a_step(module: ModuleOp) -> tuple[int, str]:
    """The tokens (elements of the first integer user input) or samples (the first
    user input's leading dim) one step trains on: one replica's input (the
    program's shapes are one rank's) times the data-parallel replicas."""
    function = _entry(module)
    inputs = [a.type for a, attrs in zip(function.args, arg_attrs(function)) if input_label(attrs) is not None]
    shapes = [(tuple(t.get_shape()), t.element_type) for t in inputs if isinstance(t, BufferType | TensorType)]
    for shape, element in shapes:
        if isinstance(element, IntegerType) and element.width.data > 1:
            count = data_parallel_of(module)
            for d in shape:
                count *= d
            return count, "tokens"
    if shapes and shapes[0][0]:
        return shapes[0][0][0] * data_parallel_of(module), "samples"
    return 1, "samples"


def _parameters(module: ModuleOp) -> tuple[int, str]:
    """The parameter count N of the whole model and the element type of most
    parameter bytes. A parameter split over ranks (`rdu.shard`) counts whole:
    MFU's model FLOPs are the model's, not one socket's part."""
    count = 0
    by_type: dict[str, int] = {}
    for op in module.ops:
        if isinstance(op, GlobalOp) and _kind(op) == "parameter":
            shape = op.global_type.get_shape()
            split = shard_of(op)
            count += math.prod(split.whole_shape(shape) if split is not None else shape)
            element = str(op.global_type.element_type)
            by_type[element] = by_type.get(element, 0) + value_bytes(op.global_type)
    return count, max(by_type, key=lambda k: by_type[k]) if by_type else "bf16"


def _kind(op: GlobalOp) -> str:
    kind = op.attributes.get("kind")
    return kind.data if isinstance(kind, StringAttr) else ""


def memory_table(module: ModuleOp) -> dict[str, dict[str, int]]:
    """Bytes per class (weights, activations, gradients, optimizer state) and tier."""
    table: dict[str, dict[str, int]] = {cls: {"sram": 0, "hbm": 0, "ddr": 0, "recompute": 0}
                                        for cls in MEMORY_CLASSES}
    for op in module.ops:
        if isinstance(op, GlobalOp):
            tier = op.tier.data.value if op.tier is not None else "hbm"
            table[memory_class_of(op)][tier] += value_bytes(op.global_type)
    for key, n in training_memory(module).items():
        cls, _, where = key.partition(".")
        if cls in table and where in table[cls]:
            table[cls][where] += n
    return table


def _compute_phase(record_op: Operation, calls: tuple[Operation, ...]) -> str:
    for holder in (record_op, *calls):
        phase = phase_of(holder)
        if phase is not None:
            return phase.value
    return "unmarked"


def _split(cost: KernelCost) -> tuple[float, float, float]:
    """(own time, collectives, DDR stall) of one kernel, adding up to its modeled time."""
    stall = max(0.0, cost.ddr_s - max(cost.compute_s, cost.sram_s, cost.hbm_s))
    link = cost.link_s
    own = max(0.0, cost.modeled_time_s - link - stall)
    stall = min(stall, cost.modeled_time_s - link)
    return own, link, max(0.0, stall)


def training_speed(module: ModuleOp, target: Target, report: Report | None = None) -> TrainingSpeed:
    """The modeled step of a placed training program on `target` (module docstring)."""
    with unchanged():  # the program is read, not rewritten: each op's IR-only answers worked out once
        return _training_speed(module, target, report)


def _training_speed(module: ModuleOp, target: Target, report: Report | None) -> TrainingSpeed:
    walk = walk_placed(module, target.kernel_looping)
    report = report if report is not None else estimate(module, target, walk)
    phase_s = dict.fromkeys(PHASES, 0.0)
    for record, cost in zip(walk.kernels, report.kernels):
        own, link, stall = _split(cost)
        phase_s[_compute_phase(record.op, record.calls)] += own
        phase_s["collectives"] += link
        phase_s["DDR traffic"] += stall
    phase_s["host"] += report.host_s
    tokens, unit = tokens_a_step(module)
    parameters, element = _parameters(module)
    tp, pp = partition_of(module)
    dp = data_parallel_of(module)
    ddr_pairs = {k: n for k, n in report.bytes_by_tier.items() if "ddr" in k}
    return TrainingSpeed(
        target=report.target, step_s=report.modeled_time_s, phase_s={k: v for k, v in phase_s.items() if v > 0},
        tokens=tokens, unit=unit, parameters=parameters, model_flops=6.0 * parameters * tokens,
        peak_flops=target.peak_flops(element), sockets=dp * tp * pp, memory=memory_table(module),
        ddr_bytes=sum(ddr_pairs.values()), ddr_by_pair=ddr_pairs,
        hbm_globals=_int(module, HBM_WEIGHT_BYTES), hbm_activations=_int(module, ACTIVATION_BYTES),
        hbm_capacity=target.hbm_bytes,
    )


@dataclass
class _StageTimes:
    """One stage's modeled seconds: a microbatch's forward and backward, the
    gradient collectives not hidden yet, the optimizer's update."""

    microbatch_s: float = 0.0
    queued_s: float = 0.0
    optimizer_s: float = 0.0
    launches: int = 0
    """Kernels it launches (a lowered program's): a loop's, and a held loop body's, once."""

    def backward(self, seconds: float) -> None:
        """Backward work of the last microbatch: queued collectives run under it."""
        self.queued_s = max(0.0, self.queued_s - seconds)


@dataclass(frozen=True)
class TrainingEstimate:
    """The modeled time of one training step of a partitioned module."""

    dp: int
    tp: int
    pp: int
    schedule: OneFOneB
    exposed_collective_s: float
    """Gradient collectives still running when the backward ends (the busiest stage's)."""
    optimizer_s: float
    spill_s: float
    """Weights and optimizer state past a stage socket's HBM, read from DDR."""
    launches: tuple[int, ...] = ()
    """Kernels each stage launches in a step's program (a lowered one; empty at level
    1): the cost model's settled loops' (`settle_loops`), so a loop, and a loop body
    held as one configuration, is launched once on its stage, as `Report.kernel_launches` counts."""

    @property
    def step_s(self) -> float:
        return self.schedule.step_s + self.exposed_collective_s + self.optimizer_s + self.spill_s

    def summary(self) -> str:
        """One line: the split, the step time and where it goes."""
        s = self.schedule
        return (f"training step (modeled): dp={self.dp} tp={self.tp} pp={self.pp}, {s.microbatches} microbatches "
                f"(1F1B): {self.step_s * 1e3:.4g} ms; pipeline {s.step_s * 1e3:.4g} ms of which bubble "
                f"{s.bubble_fraction:.1%}, exposed gradient collectives {self.exposed_collective_s * 1e3:.4g} ms, "
                f"optimizer {self.optimizer_s * 1e3:.4g} ms")


def training_estimate(module: ModuleOp, target: Target, microbatches: int = 0) -> TrainingEstimate:
    """One step's modeled time (the module docstring's rules); `microbatches`
    overrides the module's own (`rdu.partition`'s microbatches)."""
    with unchanged():  # the program is read, not rewritten: each op's IR-only answers worked out once
        return _training_estimate(module, target, microbatches)


def _training_estimate(module: ModuleOp, target: Target, microbatches: int) -> TrainingEstimate:
    tp, pp = partition_of(module)
    executed = executed_microbatches(module)
    m = microbatches or (executed if executed > 1 else microbatches_of(module))
    share = 1 if executed > 1 else m  # a step that runs its microbatches: each op is one microbatch's already
    stages = [_StageTimes() for _ in range(pp)]
    if level_of(module) in LOWERED_LEVELS:
        _time_kernels(module, target, share, stages)
    else:
        _time_ops(module, target, share, stages)
    if executed > 1:  # the stage ran every microbatch's ops: one microbatch's time is their mean
        for times in stages:
            times.microbatch_s /= executed
    return TrainingEstimate(
        data_parallel_of(module), tp, pp, one_f_one_b([s.microbatch_s for s in stages], m),
        max(s.queued_s for s in stages), max(s.optimizer_s for s in stages), _spill_s(module, target, pp) * m,
        tuple(s.launches for s in stages) if level_of(module) in LOWERED_LEVELS else (),
    )


def _level_one_ops(
    function: func.FuncOp, weights: set[SSAValue], callees: dict[str, func.FuncOp]
) -> Iterator[tuple[Operation, Operation, set[SSAValue]]]:
    """The ops `function` runs, a call of an outlined layer (`@layer_forward`, ...)
    replaced by its callee's ops, once a call: (op, the entry function's op it
    runs in, the values there that are weights)."""
    for top in function.body.block.ops:
        if isinstance(top, func.ReturnOp):
            continue
        callee = callees.get(top.callee.string_value()) if isinstance(top, func.CallOp) else None
        if callee is None:
            yield top, top, weights
            continue
        inner: set[SSAValue] = {arg for arg, value in zip(callee.args, top.operands) if value in weights}
        for op, _, read in _level_one_ops(callee, inner, callees):
            yield op, top, read


def _time_ops(module: ModuleOp, target: Target, m: int, stages: list[_StageTimes]) -> None:
    """Level 1: each op of the entry function (an outlined layer's, once a call) on its stage."""
    function = entry_function(module)
    globals_read: set[SSAValue] = {arg for arg, attrs in zip(function.args, arg_attrs(function))
                                   if global_of(attrs) is not None}
    callees = {f.sym_name.data: f for f in functions(module) if is_outlined(f)}
    for op, top, weights in _level_one_ops(function, globals_read, callees):
        times = stages[op_stage(top) if len(stages) > 1 else 0]
        phase = phase_of(op) or phase_of(top)
        if isinstance(op, COLLECTIVE_OPS):
            seconds = collective_cost(op, target)[0]
            if is_deferred(op):
                times.queued_s += seconds
            elif phase == Phase.OPTIMIZER:
                times.optimizer_s += seconds
            else:  # a microbatch's part of the activations, each paying the link's latency
                times.microbatch_s += max(seconds / m, target.link_latency_s)
            continue
        compute, read, busy = _compute_and_read(op, target, weights)
        if phase == Phase.OPTIMIZER:
            times.optimizer_s += max(compute, read)
            continue
        seconds = max(compute / m, read) + (target.dma_latency_s if busy else 0.0)
        times.microbatch_s += seconds
        if phase == Phase.BACKWARD:
            times.backward(seconds)


def _compute_and_read(op: Operation, target: Target, weights: set[SSAValue]) -> tuple[float, float, bool]:
    """Level 1: an op's FLOPs at peak and its reads of `weights` at HBM bandwidth, in
    seconds, and whether it computes or reads at all (it then pays a DMA start-up)."""
    compute = peak_seconds(op, target)
    weight_bytes = sum(value_bytes(v) for v in op.operands if v in weights)
    return compute, weight_bytes / target.sustained_bandwidth("hbm"), bool(op_flops(op) or weight_bytes)


def op_seconds(op: Operation, target: Target, weights: set[SSAValue]) -> tuple[float, bool]:
    """One op's level-1 seconds, as `training_estimate` counts it for one microbatch
    of one (the larger of its compute at peak and its reads of `weights`, plus a DMA
    start-up; a collective by the link model), and whether it is a collective."""
    if isinstance(op, COLLECTIVE_OPS):
        return collective_cost(op, target)[0], True
    compute, read, busy = _compute_and_read(op, target, weights)
    return max(compute, read) + (target.dma_latency_s if busy else 0.0), False


def _time_kernels(module: ModuleOp, target: Target, m: int, stages: list[_StageTimes]) -> None:
    """A lowered program: each kernel (as the cost model times it) on its stage."""
    records, _ = settle_loops(walk_placed(module, target.kernel_looping), target)
    for record, cost in zip(records, kernel_costs(records, target, sram_room_bytes(module))):
        placed = record.calls[0] if record.calls else record.op  # an outlined layer's kernel: its call's stage
        times = stages[op_stage(placed) if len(stages) > 1 else 0]
        times.launches += not record.looped
        body = [op for op in record.op.body.walk() if phase_of(op) is not None]
        if body and all(phase_of(op) == Phase.OPTIMIZER for op in body):
            times.optimizer_s += cost.modeled_time_s
            continue
        queued = sum(collective_cost(op, target)[0] for op in body if is_deferred(op)) * record.tiles
        rest = max(cost.modeled_time_s - queued, 0.0)
        seconds = max(rest / m, cost.launch_s + cost.fill_s)
        times.queued_s += queued
        times.microbatch_s += seconds
        if any(phase_of(op) == Phase.BACKWARD for op in body):
            times.backward(seconds)


def spill_seconds(global_bytes: int, target: Target) -> float:
    """One microbatch's DDR spill of a socket holding `global_bytes` of weights and
    optimizer state: what is past its HBM, read from DDR at DDR's sustained
    bandwidth (the split chooser charges a candidate by this rule too)."""
    return max(global_bytes - target.hbm_bytes, 0) / target.sustained_bandwidth("ddr")


def _spill_s(module: ModuleOp, target: Target, pp: int) -> float:
    """Weights (and optimizer state) past the HBM of the busiest stage's socket, at DDR bandwidth."""
    per_stage = [0] * pp
    homes = global_stages(module)
    for op in module.ops:
        if isinstance(op, GlobalOp):
            per_stage[min(homes.get(op.sym_name.data, 0), pp - 1)] += value_bytes(op.global_type)
    return spill_seconds(max(per_stage), target)


def _int(module: ModuleOp, name: str) -> int:
    value = module.attributes.get(name)
    return value.value.data if isinstance(value, IntegerAttr) else 0


def training_ranges(module: ModuleOp, target: Target, speed: TrainingSpeed) -> Ranges:
    """Step time, tokens/s and MFU as ranges over the target's ranged figures (the
    model FLOPs and the peak fixed at `speed`'s: only the modeled time varies)."""
    denominator = speed.peak_flops * speed.sockets

    def step_ms(report: Report) -> float:
        return report.modeled_time_s * 1e3

    def tokens_per_s(report: Report) -> float:
        return speed.tokens / report.modeled_time_s if report.modeled_time_s > 0 else 0.0

    def mfu(report: Report) -> float:
        return 100 * speed.model_flops / (report.modeled_time_s * denominator) if report.modeled_time_s > 0 else 0.0

    headlines = {STEP_TIME: step_ms, TOKENS_PER_S: tokens_per_s, MFU: mfu}
    walks: dict[bool, ProgramWalk] = {}  # one walk of the module per kernel-looping setting, not one a variant

    def costed(varied: Target) -> Report:
        if varied.kernel_looping not in walks:
            walks[varied.kernel_looping] = walk_placed(module, varied.kernel_looping)
        return estimate(module, varied, walks[varied.kernel_looping])

    return headline_ranges(costed, target, headlines)


__all__ = ["MFU", "PHASES", "STEP_TIME", "TOKENS_PER_S", "TrainingEstimate", "TrainingSpeed", "is_training",
           "memory_table", "op_seconds", "spill_seconds", "tokens_a_step", "training_estimate", "training_ranges",
           "training_speed"]
