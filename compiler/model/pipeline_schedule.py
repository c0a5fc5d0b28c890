"""The 1F1B microbatch schedule of a pipelined training step, and its bubble.

A training step split into `pp` pipeline stages runs its batch as `m`
microbatches. In 1F1B (one forward, one backward) each stage, once the
pipeline is full, alternates the forward of one microbatch with the backward
of an earlier one, so at most `pp` microbatches' activations are alive on a
stage. With `t_s` the time stage s takes for one microbatch's forward and
backward, the step's pipeline time is

    T = sum_s t_s + (m - 1) * max_s t_s

(the first microbatch crosses every stage, forward and back; the other m - 1
follow at the pace of the slowest stage). With equal stages this is the
familiar (m + pp - 1) * t. The work itself is m * max_s t_s on the busiest
stage; the rest, sum_s t_s - max_s t_s, is the bubble: stages idle while the
pipeline fills and drains, (pp - 1) / (m + pp - 1) of the step for equal
stages. Pure arithmetic on the stage times the caller models.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class OneFOneB:
    """A 1F1B schedule: per-microbatch forward + backward seconds of each stage, m microbatches."""

    stage_s: tuple[float, ...]
    microbatches: int

    def __post_init__(self) -> None:
        if not self.stage_s or self.microbatches < 1:
            raise ValueError("a schedule needs at least one stage and one microbatch")

    @property
    def stages(self) -> int:
        return len(self.stage_s)

    @property
    def step_s(self) -> float:
        """The pipeline's time for the whole batch: sum_s t_s + (m - 1) max_s t_s."""
        return sum(self.stage_s) + (self.microbatches - 1) * max(self.stage_s)

    @property
    def bubble_s(self) -> float:
        """Idle time of the busiest stage: the step less its m microbatches of work."""
        return self.step_s - self.microbatches * max(self.stage_s)

    @property
    def bubble_fraction(self) -> float:
        return self.bubble_s / self.step_s if self.step_s > 0 else 0.0


def one_f_one_b(stage_s: Sequence[float], microbatches: int) -> OneFOneB:
    """The 1F1B schedule of stages taking `stage_s` seconds a microbatch (forward and backward)."""
    return OneFOneB(tuple(stage_s), microbatches)


Task = tuple[int, int, str]
"""One unit of 1F1B work: (stage, microbatch, "forward" or "backward")."""


def stage_tasks(stage: int, stages: int, microbatches: int) -> list[Task]:
    """Stage `stage`'s 1F1B sequence: the forwards that fill the pipeline below
    it (stages - stage - 1 of them), then one forward and one backward in turn,
    then the backwards that drain it."""
    warmup = min(stages - stage - 1, microbatches)
    order: list[Task] = [(stage, i, "forward") for i in range(warmup)]
    for i in range(microbatches - warmup):
        order += [(stage, warmup + i, "forward"), (stage, i, "backward")]
    order += [(stage, i, "backward") for i in range(microbatches - warmup, microbatches)]
    return order


def one_f_one_b_order(stages: int, microbatches: int, backward_cost: float = 2.0) -> list[Task]:
    """Every stage's 1F1B tasks in the order they start when a forward takes one
    unit and a backward `backward_cost` units: stage s runs its `stage_tasks` in
    turn, a forward after the stage before has run that microbatch's forward,
    a backward after the stage after has run its backward. The runtime runs a
    pipelined step's ops in this order (rdu-partition orders them so)."""
    sequences = [stage_tasks(s, stages, microbatches) for s in range(stages)]
    done: dict[Task, float] = {}
    start: dict[Task, float] = {}
    free = [0.0] * stages
    position = [0] * stages
    while any(position[s] < len(sequences[s]) for s in range(stages)):
        progressed = False
        for s in range(stages):
            if position[s] == len(sequences[s]):
                continue
            task = sequences[s][position[s]]
            _, i, kind = task
            before = (s - 1, i, "forward") if kind == "forward" else (s + 1, i, "backward")
            needs = ([(s, i, "forward")] if kind == "backward" else []) + (
                [before] if 0 <= before[0] < stages else [])
            if any(n not in done for n in needs):
                continue
            start[task] = max([free[s], *(done[n] for n in needs)])
            done[task] = free[s] = start[task] + (1.0 if kind == "forward" else backward_cost)
            position[s] += 1
            progressed = True
        if not progressed:
            raise AssertionError("the 1F1B sequences deadlock")  # not for stage_tasks' sequences
    return sorted(start, key=lambda task: (start[task], task[0]))


def default_microbatches(local_batch: int, stages: int) -> int:
    """The microbatches a pipelined step runs its batch in when none is given: the
    most that divide the batch, up to 4 per stage (beyond that the bubble is
    under 1/5 and each microbatch's fixed costs dominate); 1 without stages."""
    if stages <= 1:
        return 1
    return max(m for m in range(1, min(local_batch, 4 * stages) + 1) if local_batch % m == 0)


__all__ = ["OneFOneB", "Task", "default_microbatches", "one_f_one_b", "one_f_one_b_order", "stage_tasks"]
