"""Outlining a training step's layers, phase by phase (for `rdu-outline-layers`).

torch's joint export (`_export_forward_backward`) keeps no module path on its
nodes, so a training step's ops carry no `rdu.layer`; they carry their phase
(`#rdu<phase forward>`, `backward`, `optimizer`). Each phase's ops repeat once
per decoder layer (the backward's in reverse layer order), so the layers are
found by structure, phase by phase: the ops of one phase, in block order, are
cut into units at their period (`rducc.passes.layer_periods`: the shortest
period covering the most ops, the boundary rotated to where the fewest values
cross). The units of a phase are compared op by op as module-path layers are
(`match_layer`); the group most units match is outlined into a function of its
own, `@layer_forward`, `@layer_backward` or `@layer_optimizer`, called once per
unit, and each call carries the phase of its ops. What the backward reads from
the forward (saved values) becomes a result of a forward call and an argument
of a backward call, so `rdu-place-saved` sees saved values as call results.
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp, StringAttr, SymbolRefAttr
from xdsl.ir import Operation, SSAValue

from rducc.dialects import contracts
from rducc.dialects.contracts import Phase, phase_of, set_layer, set_phase
from rducc.errors import RduccError
from rducc.passes.layer_periods import best_period, rotated_start, signatures
from rducc.passes.rdu_outline_layers import (
    Layer,
    Outlining,
    activation_values,
    argument_kind,
    largest_group,
)

PHASES = (Phase.FORWARD, Phase.BACKWARD, Phase.OPTIMIZER)


def callee_name(phase: Phase) -> str:
    """The outlined function of a phase's layers: `layer_forward`, ..."""
    return f"layer_{phase.value}"


def is_training_step(function: func.FuncOp) -> bool:
    """Whether the importer marked `function`'s ops with training phases."""
    return any(phase_of(op) is not None for op in function.body.block.ops)


def phase_units(ops: Sequence[Operation]) -> list[list[Operation]]:
    """`ops` (one phase's top-level ops, in block order) cut into their repeated
    units, or [] when nothing repeats twice."""
    stretch = best_period(signatures(ops))
    if stretch is None:
        return []
    start = rotated_start(ops, stretch)
    count = (stretch.end - start) // stretch.period
    return [list(ops[start + k * stretch.period : start + (k + 1) * stretch.period]) for k in range(count)]


def outline_phase(module: ModuleOp, function: func.FuncOp, phase: Phase) -> int:
    """Outline the largest group of matching units of `phase` into `@layer_<phase>`;
    the number of calls made (0: none)."""
    ops = [op for op in function.body.block.ops if phase_of(op) == phase]
    units = phase_units(ops)
    if len(units) < 2:
        return 0
    layers = [Layer(f"{phase.value}.layers.{n}", unit) for n, unit in enumerate(units)]
    for layer in layers:
        for op in layer.ops:
            set_layer(op, layer.key)
    first, matches = largest_group(layers, function)
    if not matches:
        _unmark(layers)
        return 0
    activations = activation_values(function)
    kinds = [argument_kind(v, function, activations) for v in first.inputs()]
    first_results = [r for op in first.ops for r in op.results]
    outputs = [
        r for r in first_results
        if first.used_after(r) or any(layer.used_after(v.forward[r]) for layer, v in matches)
    ]
    outlining = Outlining.of_first(first, outputs, len(matches) + 1)
    replaced: dict[SSAValue, SSAValue] = dict(zip(outputs, outlining.calls[0].res))
    for layer, values in matches:
        outlining.replace(layer, values, replaced)
    _name(outlining, callee_name(phase), phase)
    outlining.install(module, function, kinds)
    _unmark([layer for layer in layers if layer is not first and all(layer is not m for m, _ in matches)])
    return len(matches) + 1


def _unmark(layers: Sequence[Layer]) -> None:
    """Drop the structural marks of units left inline."""
    for layer in layers:
        for op in layer.ops:
            if op.parent is not None:
                op.attributes.pop(contracts.LAYER, None)


def _name(outlining: Outlining, name: str, phase: Phase) -> None:
    """Give the callee and its calls the phase's name; each call its phase."""
    outlining.callee.sym_name = StringAttr(name)
    for call in outlining.calls:
        call.callee = SymbolRefAttr(name)
        set_phase(call, phase)


def outline_training_step(module: ModuleOp, function: func.FuncOp) -> dict[Phase, int]:
    """Outline each phase's repeated layers; the calls made per phase."""
    taken = {f.sym_name.data for f in module.ops if isinstance(f, func.FuncOp)}
    for name in (callee_name(phase) for phase in PHASES):
        if name in taken:
            raise RduccError(f"rdu-outline-layers: the module already has a function @{name} "
                             f"that is not an outlined layer (no {contracts.CALLS}); rename it")
    return {phase: outline_phase(module, function, phase) for phase in PHASES}


__all__ = ["PHASES", "callee_name", "is_training_step", "outline_phase", "outline_training_step", "phase_units"]
