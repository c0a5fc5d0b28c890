"""Level-1 executor: runs `func.func @forward` of an imported module on NumPy.

Prepare once, run many. `GraphExecutor(module)` walks `@forward` once and
turns it into a flat list of steps over a value table (a Python list indexed
by SSA value, `rducc.runtime.engine`): each step is an op's registered numpy
implementation (`rducc.runtime.registry`) with its attributes already bound
(map bodies already compiled), the table slots of its operands and results,
and the slots whose last use it is (`dialects.liveness`; cleared after the step, so peak memory
follows the live values, not the whole graph). `run()` then only checks the
arguments, makes the call's `RunContext` and calls the steps in order.

`rdu.kernel` is prepared the same way, recursively: its body becomes a
sub-program called as one step. Top-level `arith.constant` (dense tensors)
becomes a prepared array.

`run(inputs, weights)` takes the user inputs in `@forward`'s order and the
weights by global name (`tier.global` symbol, which is the `torch.export`
input-spec target, i.e. the `state_dict` / `constants` key). A global with an
inline `initial_value` needs no entry in `weights`. Wrong input count, shape
or dtype and missing weights raise `RduccError` before anything runs (the
checker the interpreter uses too); the program reads them through read-only
views.

With `check=True` (the default) every step's result is checked against the
IR's shape and element type, which catches kernel bugs where they happen; it
costs one tuple comparison per op.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Block, Operation

from rducc.dialects.contracts import global_of
from rducc.dialects.liveness import last_read, live_end, positions
from rducc.dialects.program import ENTRY, entry_function
from rducc.dialects.rdu import dataflow as rdu
from rducc.errors import RduccError
from rducc.runtime.context import RunContext, RunCounter
from rducc.runtime.dtypes import tensor_signature
from rducc.runtime.engine import (
    Argument,
    Runner,
    Slots,
    Step,
    argument_attributes,
    functions_of,
    globals_of,
    input_argument,
    kernel_step,
    run_steps,
    weight_argument,
)
from rducc.runtime.registry import Kernel, describe_op, handled_structurally, prepare
from rducc.weights import torch_to_numpy

_RUNNER = "level-1 executor"

handled_structurally(rdu.KernelOp, "the level-1 executor runs its body as a sub-program")


class _Program:
    """A block prepared into steps over a value table; callable on a context and
    its arguments, returning the values its terminator (`func.return` or
    `rdu.yield`) passes on."""

    def __init__(self, block: Block, what: str, check: bool, callee: Callable[[func.CallOp], Kernel] | None = None):
        self.what = what
        self.check = check
        self._callee = callee
        self.slots = Slots()
        self.arg_slots = tuple(self.slots.define(arg) for arg in block.args)
        ops = list(block.ops)
        if not ops or ops[-1].name not in ("func.return", "rdu.yield"):
            raise RduccError(f"{what}: the block must end in 'func.return' or 'rdu.yield'")
        *body, terminator = ops
        prepared = [self._prepare(op) for op in body]
        self.result_slots = tuple(self.slots.use(v) for v in terminator.operands)
        release = _last_uses(block, self.slots, self.result_slots)
        self.steps: list[tuple[Step, Operation]] = [
            (kernel_step(kernel, operands, results, _signatures(op), op, check, release[index]), op)
            for index, (kernel, operands, results, op) in enumerate(prepared)
        ]

    def _prepare(self, op: Operation) -> tuple[Kernel, tuple[int, ...], tuple[int, ...], Operation]:
        if isinstance(op, func.CallOp) and self._callee is not None:
            kernel = self._callee(op)
        elif isinstance(op, rdu.KernelOp):
            kernel = _sub_program(_Program(op.body.block, describe_op(op), self.check), len(op.results))
        else:
            kernel = prepare(op, _RUNNER)
        operands = tuple(self.slots.use(v) for v in op.operands)
        results = tuple(self.slots.define(r) for r in op.results)
        return kernel, operands, results, op

    def __call__(self, context: RunContext, *args: np.ndarray) -> tuple[np.ndarray, ...]:
        env: list[Any] = [None] * self.slots.size
        for slot, value in zip(self.arg_slots, args):
            env[slot] = value
        run_steps(self.steps, env, context, self.what)
        return tuple(env[s] for s in self.result_slots)


def _signatures(op: Operation) -> tuple[tuple[tuple[int, ...], np.dtype], ...]:
    return tuple(tensor_signature(r.type) for r in op.results)


def _last_uses(block: Block, slots: Slots, keep: tuple[int, ...]) -> list[tuple[int, ...]]:
    """Per op of the block (before its terminator), the slots of the values it
    reads or defines for the last time (`dialects.liveness`: a value lives to the
    last op of the block that reads it, or holds a reader in a region), never the
    block's results."""
    position = positions(block)
    release: list[list[int]] = [[] for _ in range(len(position) - 1)]
    for value in [*block.args, *(r for op in block.ops for r in op.results)]:
        owner = value.owner
        if isinstance(owner, Operation):
            end: int | None = live_end(owner, block, position, [value])
        else:
            end = last_read([value], block, position)
        slot = slots.use(value)
        if end is not None and end < len(release) and slot not in keep:
            release[end].append(slot)
    return [tuple(r) for r in release]


def _sub_program(program: _Program, results: int) -> Kernel:
    """A prepared block as a kernel: its one result, or the tuple of them."""
    if results == 1:
        return lambda context, *inputs: program(context, *inputs)[0]
    return program


class GraphExecutor(Runner):
    """Runs a level-1 (or level-2, with `rdu.kernel`) module's `@forward` on NumPy."""

    def __init__(self, module: ModuleOp, entry: str = ENTRY, check: bool = True):
        globals_ = globals_of(module)
        forward = entry_function(module, entry)
        block = forward.body.block
        self.entry = entry
        self.inputs: list[Argument] = []
        self.weights: list[Argument] = []
        for index, arg in enumerate(block.args):
            shape, dtype = tensor_signature(arg.type)
            ref = global_of(argument_attributes(forward, index))
            if ref is not None:
                global_op = globals_.get(ref)
                if global_op is None:
                    raise RduccError(f"argument #{index} names @{ref}, which is not a 'tier.global'")
                self.weights.append(weight_argument(global_op, shape, dtype))
                continue
            if self.weights:
                raise RduccError(
                    f"argument #{index} is a user input after a weight; @{entry} must take "
                    "its user inputs first"
                )
            self.inputs.append(input_argument(forward, index, shape, dtype))
        self._functions = functions_of(module)
        self._callees: dict[str, Kernel] = {}
        self._check = check
        self._runs = RunCounter()
        self.program = _Program(block, f"@{entry}", check, self._callee)

    def _callee(self, call: func.CallOp) -> Kernel:
        """A called function (an outlined layer) as a kernel, prepared once for all its calls."""
        name = call.callee.string_value()
        if name not in self._callees:
            callee = self._functions.get(name)
            if callee is None or not callee.body.blocks:
                raise RduccError(f"{describe_op(call)}: the module has no 'func.func @{name}' with a body")
            program = _Program(callee.body.block, f"@{name}", self._check, self._callee)
            self._callees[name] = _sub_program(program, len(call.res))
        return self._callees[name]

    def _execute(self, values: list[np.ndarray], bound: list[np.ndarray], context: RunContext) -> list[np.ndarray]:
        return [_owned(r) for r in self.program(context, *values, *bound)]


def _owned(value: np.ndarray) -> np.ndarray:
    """A result the caller may keep and modify: views (of inputs, weights or
    broadcasts) become contiguous copies."""
    if value.base is not None or not value.flags.writeable:
        return np.array(value)
    return value


# --------------------------------------------------------------------------
# torch interop (imports torch lazily)
# --------------------------------------------------------------------------


def to_numpy(tensor: Any) -> np.ndarray:
    """A torch tensor as a NumPy array of the same dtype (bf16 as ml_dtypes.bfloat16)."""
    return torch_to_numpy(tensor)


def weights_of(program: Any) -> dict[str, np.ndarray]:
    """Every tensor of a `torch.export` program's `state_dict` and `constants`,
    by name (the names `tier.global` uses)."""
    import torch

    tensors = {**program.state_dict, **program.constants}
    return {
        name: to_numpy(value)
        for name, value in tensors.items()
        if isinstance(value, torch.Tensor)
    }


__all__ = ["GraphExecutor", "describe_op", "to_numpy", "weights_of"]
