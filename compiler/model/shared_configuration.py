"""One configuration for a loop body of several: a period of k layer kinds kept loaded.

A loop body whose kernels have k > 1 configurations (compiler/model/configuration.py:
a period of layers of k kinds, each layer a kernel, e.g. three sliding-window
layers with rotary and then a global one without) loads them every iteration
where one follows another. When the units hold all k at once, the body is one
configuration, loaded with the loop's first call and kept: no load an
iteration. This module says whether the units hold them, and maps each kernel
onto its part of them; the cost model (`cost_model.settle_loops`) takes it
where the loop then costs no more, and otherwise says why not.

The rules (modeled, an assumption of this model, not a published figure):

- **Units programmed and fed alike serve every kind.** A stage or a buffer
  is keyed by what computes its value: an input by its type and reserved
  bytes, an op's result by the op's program (name, operand and result
  types, attributes but provenance, regions: `configuration.unit_signature`)
  and the keys of its operands, recursively. Two kinds share a unit range
  exactly where the same ops made the value from inputs alike (the same
  program on the same streams); a kernel's n-th stage or buffer of one key
  uses the period's n-th range of it, so the period holds, of each key, as
  many ranges as the kind that has the most. The kinds' weights and inputs
  and the work they do alike before they part (a norm, the projections)
  are programmed once; what one kind does that the other does not (rotary,
  a window's mask), and everything computed from it, takes units of its own.
- **Fit.** The period's least PCUs and PMUs (each range's least: the most of
  the kinds that use it) fit the target's `pcus` and `pmus`, so every kernel
  runs in one section; otherwise the reason.
- **Balance and placement.** The PCUs go to the period's stage ranges by
  `mapping.balance` (a range's work the most of the kinds' that use it), the
  PMUs to its buffer ranges by traffic, as `map_body` does for one kernel;
  ranges take consecutive units in order of first use. Each kernel's mapping
  is its stages' and buffers' ranges, its hops from where they are.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Hashable, Sequence
from dataclasses import dataclass

from xdsl.ir import SSAValue

from rducc.dialects.contracts import BufferUnits, KernelMapping, StageUnits
from rducc.dialects.tier import ComputeOp
from rducc.model.configuration import unit_signature
from rducc.model.mapping import KernelBody, balance, body_stages, buffer_works, compute_body, hops_of
from rducc.targets import Target


@dataclass
class _Range:
    """A run of units the period holds for one key's n-th stage or buffer."""

    least: int
    most: int
    work: float
    first: int = 0
    units: int = 0


Key = tuple[Hashable, int]
"""A range of the period: what its units are programmed with, and which of the
kernel's alike ones (0, 1, ...) it is."""


def _numbered(keys: Sequence[Hashable]) -> list[Key]:
    """Each key with its occurrence number among those before it (0, 1, ...)."""
    seen: Counter[Hashable] = Counter()
    numbered = []
    for key in keys:
        numbered.append((key, seen[key]))
        seen[key] += 1
    return numbered


def _value_keys(body: KernelBody, sizes: Sequence[int], interned: dict[Hashable, int]) -> dict[SSAValue, int]:
    """What computes each body value: an input by its type and reserved bytes (and
    which of the inputs alike it is), a result by its op's `unit_signature` and the
    keys of its operands, so two kernels' values have one key exactly when the same
    ops made them from inputs alike. Each key is interned (`interned`, shared by the
    kernels compared) as a number, so a key stays flat however deep the body."""
    keys = {value: interned.setdefault(key, len(interned)) for value, key in zip(body.inputs, _numbered(
        [("input", value.type, size) for value, size in zip(body.inputs, sizes)]))}
    for op in body.ops:
        made = (unit_signature(op), tuple(keys.get(value, -1) for value in op.operands))
        for number, result in enumerate(op.results):
            keys[result] = interned.setdefault((made, number), len(interned))
    return keys


Entry = tuple[Key, int, int, int, float]
"""(range key, stage op index or buffer index, least units, most units, work a tile)."""


def _entries(body: KernelBody, target: Target, interned: dict[Hashable, int]) -> tuple[list[Entry], list[Entry]]:
    """Each stage of `body` and each buffer with its range key: a stage's the key of
    its op's first result (`_value_keys`), a buffer's that of the value it holds."""
    buffers = buffer_works(body, target)
    keys = _value_keys(body, [b.size for b in buffers], interned)
    stages = body_stages(body, target)
    stage_keys = _numbered([keys[body.ops[s.index].results[0]] if body.ops[s.index].results
                            else unit_signature(body.ops[s.index]) for s in stages])
    buffer_keys = _numbered([keys.get(b.value, -1) for b in buffers])
    return ([(key, s.index, s.least, s.most, s.seconds) for key, s in zip(stage_keys, stages)],
            [(key, b.index, b.least, b.most, float(b.traffic)) for key, b in zip(buffer_keys, buffers)])


def _ranges(per_body: list[list[Entry]], budget: int) -> dict[Key, _Range]:
    """The period's ranges (in order of first use), each its least, most and work the
    most of the kinds that use it; given units by `balance` within `budget` when
    their least fit it (else left without)."""
    ranges: dict[Key, _Range] = {}
    for entries in per_body:
        for key, _, least, most, work in entries:
            found = ranges.setdefault(key, _Range(least, most, work))
            found.least, found.most, found.work = (max(found.least, least), max(found.most, most),
                                                   max(found.work, work))
    items = list(ranges.values())
    if sum(r.least for r in items) <= budget:
        first = 0
        for found, units in zip(items, balance([r.work for r in items], [r.least for r in items],
                                               [r.most for r in items], budget)):
            found.first, found.units, first = first, units, first + units
    return ranges


def shared_mappings(computes: Sequence[ComputeOp], target: Target) -> list[KernelMapping] | str:
    """Each of `computes` (a loop body's kernels of distinct configurations, in order)
    mapped onto its part of one configuration that holds them all (the module
    docstring's rules), or why the units do not hold them at once."""
    bodies = [compute_body(compute) for compute in computes]
    interned: dict[Hashable, int] = {}
    entries = [_entries(body, target, interned) for body in bodies]
    stages, buffers = [e[0] for e in entries], [e[1] for e in entries]
    pcu_ranges = _ranges(stages, target.pcus)
    pmu_ranges = _ranges(buffers, target.pmus)
    least_pcus = sum(r.least for r in pcu_ranges.values())
    least_pmus = sum(r.least for r in pmu_ranges.values())
    if least_pcus > target.pcus or least_pmus > target.pmus:
        return (f"its {len(computes)} configurations need {least_pcus} PCUs and {least_pmus} PMUs at once, "
                f"more than target {target.name}'s {target.pcus} and {target.pmus}")
    grid = target.grid()
    mappings = []
    for body, body_stage_keys, body_buffer_keys in zip(bodies, stages, buffers):
        stage_units = [StageUnits(index, 0, pcu_ranges[key].first, pcu_ranges[key].units, 0)
                       for key, index, *_ in body_stage_keys]
        buffer_units = [BufferUnits(index, 0, pmu_ranges[key].first, pmu_ranges[key].units)
                        for key, index, *_ in body_buffer_keys]
        hops = hops_of(body, stage_units, buffer_units, grid)
        stage_units = [StageUnits(s.op, 0, s.first, s.units, hops.get(s.op, 0)) for s in stage_units]
        mappings.append(KernelMapping(grid, 1, tuple(stage_units), tuple(buffer_units)))
    return mappings


__all__ = ["shared_mappings"]
