"""Training steps: the phase of each kernel and the values the backward saves.

A training step's entry function returns the loss first, then the gradients
(no optimizer; `rdu.result_roles` names them) or the in-place updates of
parameters and optimizer state (`rdu.result_updates`). Its phases are defined by the dataflow, not by names:

- **forward**: every op the loss (result 0) depends on;
- **optimizer**: an op outside the forward that reads updated state (a weight
  argument whose global a result writes back) other than as a matmul or
  convolution operand, and whose results reach only update results or other
  optimizer ops;
- **backward**: every other op.

An op (or one inside a kernel) that already carries `rdu.phase` keeps it: a
kernel takes the latest phase of its ops. A **saved value** is a result of a
forward op that an op of another phase reads: what the backward needs from
the forward. A **gradient** is a backward result read by the optimizer, or
returned as a gradient (a result after the loss that updates nothing).

Contract attributes (written by `rdu-place-saved`, read by `rdu-insert-dma`,
the cost model and the report):

    rdu.phase = #rdu<phase forward>         (`contracts.PHASE`) on a kernel, call
                                            and tier.compute
    rdu.saved = ["hbm", "", "ddr"]          on a kernel: per result, where a saved
                                            value or gradient lives ("": neither)
    rdu.recomputes = "k3"                   on a kernel: the forward kernel it
                                            recomputes for the backward
    rdu.training_memory = {...}             module: bytes of activations and
                                            gradients per placement
    rdu.memory_class = "optimizer state"    on a tier.global the step writes back
                                            that is not a parameter
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from xdsl.dialects import func
from xdsl.dialects.builtin import ArrayAttr, DictionaryAttr, IntegerAttr, ModuleOp, StringAttr, TensorType, i64
from xdsl.ir import Attribute, BlockArgument, Operation, SSAValue
from xdsl.utils.str_enum import StrEnum

from rducc.dialects.contracts import (
    MEMORY_CLASS,
    PHASE,
    RECOMPUTES,
    SAVED,
    TRAINING_MEMORY,
    Phase,
    arg_attrs,
    global_of,
    phase_of,
    result_roles,
    result_updates,
)
from rducc.dialects.rdu.dataflow import ConvOp, KernelOp, MatmulOp, YieldOp
from rducc.dialects.shapes import value_bytes

PHASE_ORDER = (Phase.FORWARD, Phase.BACKWARD, Phase.OPTIMIZER)


class Placement(StrEnum):
    """Where a saved value (or gradient) lives between its producer and its last reader."""

    SRAM = "sram"
    """Produced and read inside one kernel: it never leaves the chip."""
    HBM = "hbm"
    DDR = "ddr"
    RECOMPUTE = "recompute"
    """Not kept: the backward runs its producer again (activation checkpointing)."""


MEMORY_CLASSES = ("weights", "activations", "gradients", "optimizer state")
MEMORY_TIERS = ("sram", "hbm", "ddr")


def copy_phase(source: Operation, dest: Operation) -> None:
    """Carry a kernel's phase onto the op that replaces it (its `tier.compute`)."""
    if PHASE in source.attributes:
        dest.attributes[PHASE] = source.attributes[PHASE]


def saved_of(op: Operation) -> list[str]:
    """Per result of a kernel, its placement ("" when it is neither saved nor a gradient)."""
    attr = op.attributes.get(SAVED)
    if not isinstance(attr, ArrayAttr):
        return [""] * len(op.results)
    return [a.data if isinstance(a, StringAttr) else "" for a in attr.data]


def set_saved(op: Operation, placements: Sequence[str]) -> None:
    op.attributes[SAVED] = ArrayAttr([StringAttr(p) for p in placements])


def result_placement(op: Operation, index: int) -> str:
    """The placement `rdu-place-saved` chose for result `index` of `op` ("" if none)."""
    placements = saved_of(op)
    return placements[index] if index < len(placements) else ""


def set_training_memory(module: ModuleOp, table: dict[str, dict[str, int]]) -> None:
    """Record the bytes of each class of values (activations, gradients) per placement."""
    entries: dict[str, Attribute] = {
        f"{cls}.{where}": IntegerAttr(n, i64) for cls, row in table.items() for where, n in row.items()
    }
    module.attributes[TRAINING_MEMORY] = DictionaryAttr(entries)


def memory_class_of(global_: Operation) -> str:
    """The class of a global's bytes in a training step: "optimizer state" or "weights"."""
    attr = global_.attributes.get(MEMORY_CLASS)
    return attr.data if isinstance(attr, StringAttr) else "weights"


def set_memory_class(global_: Operation, name: str) -> None:
    global_.attributes[MEMORY_CLASS] = StringAttr(name)


def training_memory(module: Operation) -> dict[str, int]:
    """The module's `rdu.training_memory`, flat (`"weights.hbm": bytes`); empty if absent."""
    attr = module.attributes.get(TRAINING_MEMORY)
    if not isinstance(attr, DictionaryAttr):
        return {}
    return {k: v.value.data for k, v in attr.data.items() if isinstance(v, IntegerAttr)}


@dataclass
class SavedValue:
    """A forward result that ops of a later phase read."""

    value: SSAValue
    producer: Operation
    index: int
    later_readers: list[Operation]
    gradient: bool = False
    """A gradient rather than an activation (a backward result the optimizer reads)."""

    @functools.cached_property
    def bytes(self) -> int:
        """Its value's bytes (asked for again and again by `rdu-place-saved`'s planner)."""
        return value_bytes(self.value)


@dataclass
class TrainingStep:
    """The phases and saved values of a training step's entry function."""

    function: func.FuncOp
    phases: dict[Operation, Phase]
    saved: list[SavedValue]
    gradients: list[SavedValue]
    state_globals: set[str] = field(default_factory=set)
    """Globals the step writes back (parameters and optimizer state)."""


def _top(op: Operation, block_ops: set[Operation]) -> Operation | None:
    while op is not None and op not in block_ops:
        op = op.parent_op()  # type: ignore[assignment]
    return op


def _recorded_phase(op: Operation) -> Phase | None:
    """The latest phase recorded on `op` or any op inside it."""
    found = [p for inner in op.walk() if (p := phase_of(inner)) is not None]
    return max(found, key=PHASE_ORDER.index) if found else None


def _reads_state_elementwise(op: Operation, state_args: set[SSAValue]) -> bool:
    """Whether `op` reads one of `state_args` other than as a matmul or conv operand."""
    operands = {v for v in op.operands if v in state_args}
    if not operands:
        return False
    if not isinstance(op, KernelOp):
        return not isinstance(op, MatmulOp | ConvOp)
    inner = {arg for arg, v in zip(op.body.block.args, op.inputs) if v in state_args}
    return any(not isinstance(use.operation, MatmulOp | ConvOp) for arg in inner for use in arg.uses)


def _forward_ops(returned: SSAValue, block_ops: set[Operation]) -> set[Operation]:
    forward: set[Operation] = set()
    stack = [returned]
    while stack:
        value = stack.pop()
        if isinstance(value, BlockArgument):
            continue
        op = _top(value.owner, block_ops)  # type: ignore[arg-type]
        if op is None or op in forward:
            continue
        forward.add(op)
        stack.extend(op.operands)
    return forward


def _state_args(function: func.FuncOp, updated: set[str]) -> set[SSAValue]:
    return {arg for arg, a in zip(function.args, arg_attrs(function)) if global_of(a) in updated}


def _is_loss(value: SSAValue) -> bool:
    kind = value.type
    return isinstance(kind, TensorType) and kind.get_shape() == () and "f" in str(kind.element_type)


def training_step(function: func.FuncOp) -> TrainingStep | None:
    """The phases and saved values of `function`, or None when it is not a training
    step (no scalar float result first, or no op of a later phase reads the forward)."""
    block = function.body.block
    terminator = block.last_op
    if not isinstance(terminator, func.ReturnOp) or len(terminator.operands) < 2:
        return None
    roles = result_roles(function)
    if roles and (roles[0] is None or roles[0].kind != "loss"):
        return None
    if not roles and not _is_loss(terminator.operands[0]):
        return None
    ops = [op for op in block.ops if op is not terminator]
    block_ops = set(ops)
    updates = result_updates(function)
    updated = {u.name for u in updates if u is not None and u.kind == "buffer"}
    state = _state_args(function, updated)
    forward = _forward_ops(terminator.operands[0], block_ops)
    update_values = {v for v, u in zip(terminator.operands, updates or []) if u is not None}
    phases: dict[Operation, Phase] = {}
    for op in reversed(ops):  # users before producers
        recorded = _recorded_phase(op)
        if recorded is not None:
            phases[op] = recorded
        elif op in forward:
            phases[op] = Phase.FORWARD
        elif _reads_state_elementwise(op, state) and all(
            (u.operation is terminator and r in update_values)
            or phases.get(_top(u.operation, block_ops) or op) == Phase.OPTIMIZER
            for r in op.results for u in r.uses
        ):
            phases[op] = Phase.OPTIMIZER
        else:
            phases[op] = Phase.BACKWARD
    saved = _values_read_later(ops, phases, block_ops, Phase.FORWARD)
    if not saved and not any(p != Phase.FORWARD for p in phases.values()):
        return None
    gradients = _values_read_later(ops, phases, block_ops, Phase.BACKWARD, until=Phase.OPTIMIZER)
    if roles:
        returned_gradients = {v for v, r in zip(terminator.operands, roles) if r is not None and r.kind == "gradient"}
    else:
        returned_gradients = {
            v for i, (v, u) in enumerate(zip(terminator.operands, updates or [None] * len(terminator.operands)))
            if i > 0 and u is None
        }
    for op in ops:
        if phases[op] != Phase.BACKWARD:
            continue
        for index, result in enumerate(op.results):
            if result in returned_gradients and not any(g.value is result for g in gradients):
                gradients.append(SavedValue(result, op, index, [], gradient=True))
    for g in gradients:
        g.gradient = True
    return TrainingStep(function, phases, saved, gradients, updated)


def _values_read_later(ops: Iterable[Operation], phases: dict[Operation, Phase], block_ops: set[Operation],
                       phase: Phase, until: Phase | None = None) -> list[SavedValue]:
    """Results of `phase` ops read by ops of a later phase (or only `until`)."""
    found = []
    for op in ops:
        if phases[op] != phase:
            continue
        for index, result in enumerate(op.results):
            readers = []
            for use in result.uses:
                top = _top(use.operation, block_ops)
                if top is None or isinstance(use.operation, YieldOp):
                    continue
                later = phases.get(top)
                if later is not None and later != phase and (until is None or later == until):
                    readers.append(top)
            if readers:
                found.append(SavedValue(result, op, index, list(dict.fromkeys(readers))))
    return found


__all__ = [
    "MEMORY_CLASS", "MEMORY_CLASSES", "MEMORY_TIERS", "PHASE_ORDER", "RECOMPUTES", "SAVED",
    "TRAINING_MEMORY", "Placement", "SavedValue", "TrainingStep", "copy_phase", "memory_class_of",
    "result_placement", "saved_of", "set_memory_class", "set_saved",
    "set_training_memory", "training_memory", "training_step",
]
