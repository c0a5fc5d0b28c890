"""The modeled time of one training step split across sockets (issue 27, item 4).

`training_estimate(module, target)` times a partitioned training step
(`rdu-partition`'s dp replicas, tp ranks and pp stages) as the sockets run it:

- per pipeline stage, the forward and backward of one microbatch. On the
  imported graph (level 1, as `rdu-partition` compares splits) each op takes
  the larger of its FLOPs at peak / m and its weight reads at HBM bandwidth
  (weights are read again every microbatch), plus a DMA start-up; a collective
  of the forward or backward `collective_cost` / m, at least one link latency.
  On a lowered program each kernel takes its modeled time (`kernel_costs`) / m,
  at least its launch and fill;
- the stages under the 1F1B schedule (`pipeline_schedule.one_f_one_b`), which
  counts the bubble;
- the gradient collectives (`rdu.deferred`: an all-reduce that nothing of the
  forward or backward reads) run on the links under the backward after them:
  only what is still running when the backward of the last microbatch ends
  counts (`exposed_collective_s`, the busiest stage's);
- the optimizer's update once a step, after the pipeline drains;
- weights and optimizer state past a stage socket's HBM, read from DDR every
  microbatch.

Every figure is modeled, not measured.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp, TensorType
from xdsl.ir import Attribute, Operation

from rducc.dialects.contracts import (
    LOWERED_LEVELS,
    Phase,
    arg_attrs,
    data_parallel_of,
    global_of,
    is_deferred,
    level_of,
    microbatches_of,
    op_stage,
    partition_of,
    phase_of,
)
from rducc.dialects.program import entry_function, global_stages
from rducc.dialects.rdu.collectives import COLLECTIVE_OPS
from rducc.dialects.shapes import value_bytes
from rducc.dialects.tier import GlobalOp
from rducc.model.cost_model import collective_cost, kernel_costs, op_flops, walk_placed
from rducc.model.pipeline_schedule import OneFOneB, one_f_one_b
from rducc.targets import Target


@dataclass
class _StageTimes:
    """One stage's modeled seconds: a microbatch's forward and backward, the
    gradient collectives not hidden yet, the optimizer's update."""

    microbatch_s: float = 0.0
    queued_s: float = 0.0
    optimizer_s: float = 0.0

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
    tp, pp = partition_of(module)
    m = microbatches or microbatches_of(module)
    stages = [_StageTimes() for _ in range(pp)]
    if level_of(module) in LOWERED_LEVELS:
        _time_kernels(module, target, m, stages)
    else:
        _time_ops(module, target, m, stages)
    return TrainingEstimate(
        data_parallel_of(module), tp, pp, one_f_one_b([s.microbatch_s for s in stages], m),
        max(s.queued_s for s in stages), max(s.optimizer_s for s in stages), _spill_s(module, target, pp) * m,
    )


def _time_ops(module: ModuleOp, target: Target, m: int, stages: list[_StageTimes]) -> None:
    """Level 1: each op of the entry function on its stage."""
    function = entry_function(module)
    weights = {arg for arg, attrs in zip(function.args, arg_attrs(function)) if global_of(attrs) is not None}
    for op in function.body.block.ops:
        if isinstance(op, func.ReturnOp):
            continue
        times = stages[op_stage(op) if len(stages) > 1 else 0]
        phase = phase_of(op)
        if isinstance(op, COLLECTIVE_OPS):
            seconds = collective_cost(op, target)[0]
            if is_deferred(op):
                times.queued_s += seconds
            elif phase == Phase.OPTIMIZER:
                times.optimizer_s += seconds
            else:  # a microbatch's part of the activations, each paying the link's latency
                times.microbatch_s += max(seconds / m, target.link_latency_s)
            continue
        element = _compute_element(op)
        flops = op_flops(op)
        compute = flops / target.peak_flops(str(element)) if flops and element is not None else 0.0
        read = sum(value_bytes(v) for v in op.operands if v in weights) / target.sustained_bandwidth("hbm")
        if phase == Phase.OPTIMIZER:
            times.optimizer_s += max(compute, read)
            continue
        seconds = max(compute / m, read) + (target.dma_latency_s if flops or read else 0.0)
        times.microbatch_s += seconds
        if phase == Phase.BACKWARD:
            times.backward(seconds)


def _time_kernels(module: ModuleOp, target: Target, m: int, stages: list[_StageTimes]) -> None:
    """A lowered program: each kernel (as the cost model times it) on its stage."""
    walk = walk_placed(module, target.kernel_looping)
    for record, cost in zip(walk.kernels, kernel_costs(walk.kernels, target)):
        times = stages[op_stage(record.op) if len(stages) > 1 else 0]
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


def _spill_s(module: ModuleOp, target: Target, pp: int) -> float:
    """Weights (and optimizer state) past the HBM of the busiest stage's socket, at DDR bandwidth."""
    per_stage = [0] * pp
    homes = global_stages(module)
    for op in module.ops:
        if isinstance(op, GlobalOp):
            per_stage[min(homes.get(op.sym_name.data, 0), pp - 1)] += value_bytes(op.global_type)
    return max(max(per_stage) - target.hbm_bytes, 0) / target.sustained_bandwidth("ddr")


def _compute_element(op: Operation) -> Attribute | None:
    """The element type an op computes in: its first tensor result's."""
    for result in op.results:
        if isinstance(result.type, TensorType):
            return result.type.element_type
    return None


__all__ = ["TrainingEstimate", "training_estimate"]
