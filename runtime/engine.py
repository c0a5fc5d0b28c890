"""The execution engine both runners share: prepare once, run many.

A runner (the graph executor, `rducc.runtime.executor`, and the placed-program
interpreter, `rducc.runtime.interpreter`) walks its entry function once and
turns every op into a `Step`, a closure over a flat value table (`Env`: one
Python list, a slot per SSA value, numbered by `Slots`). A call then checks
its arguments (`check_arguments`: one checker, one message format), makes its
`RunContext` and runs the steps in order (`run_steps`), which names the
innermost op in any error. `kernel_step` is the step of one op with a
registered numpy implementation (`rducc.runtime.registry`); with `check` it
compares each result with the IR's shape and element type.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np
from xdsl.dialects import func
from xdsl.dialects.builtin import DictionaryAttr, ModuleOp
from xdsl.ir import Attribute, BlockArgument, Operation, SSAValue

from rducc.dialects.contracts import input_label
from rducc.dialects.tier import GlobalOp
from rducc.errors import RduccError
from rducc.runtime import implementations as _implementations  # noqa: F401 - registers every op's kernel
from rducc.runtime.context import RunContext, RunCounter
from rducc.runtime.dtypes import BF16, dense_to_array
from rducc.runtime.map_body import arithmetic_for_threads
from rducc.runtime.registry import Kernel, describe_op
from rducc.runtime.subnormals import pool_flushing
from rducc.runtime.threads import single_threaded_numpy_blas

Env = list[Any]
"""The value table of one run: a slot per SSA value (and per view or buffer)."""

Step = Callable[[Env, RunContext], None]
"""One prepared op: reads its operands' slots, writes its results' slots."""

Signature = tuple[tuple[int, ...], np.dtype]
"""(shape, dtype) of a tensor or buffer."""


class Slots:
    """Numbers the value table: one slot per SSA value, and fresh ones on demand."""

    def __init__(self) -> None:
        self._slots: dict[SSAValue, int] = {}
        self.size = 0

    def fresh(self) -> int:
        """A new slot no value names (an arena view, a scratch array)."""
        self.size += 1
        return self.size - 1

    def define(self, value: SSAValue) -> int:
        """The new slot of `value`."""
        slot = self._slots[value] = self.fresh()
        return slot

    def alias(self, value: SSAValue, slot: int) -> int:
        """`value` names `slot` too: it always holds the same array as the slot
        (a kernel body's argument and its buffer, a body value and its view)."""
        self._slots[value] = slot
        return slot

    def use(self, value: SSAValue) -> int:
        """The slot of a defined value; an error for one used before its definition."""
        slot = self._slots.get(value)
        if slot is None:
            raise RduccError(f"{value_name(value)} is used before it is defined")
        return slot


def value_name(value: SSAValue) -> str:
    """`%name` of a value for messages ("a value" when it has no name)."""
    return f"%{value.name_hint}" if value.name_hint else "a value"


def run_steps(steps: Sequence[tuple[Step, Operation]], env: Env, context: RunContext, where: str) -> None:
    """Run prepared steps in order; an error names the innermost op that raised it."""
    for step, op in steps:
        try:
            step(env, context)
        except Exception as error:
            _locate(error, op, where)


def _locate(error: Exception, op: Operation, where: str) -> None:
    """Re-raise `error` naming `op`, unless an op nested in it is named already."""
    if getattr(error, "_rducc_located", False):
        raise error
    if isinstance(error, RduccError):
        located = RduccError(f"{describe_op(op)}: {error}")
        located._rducc_located = True  # type: ignore[attr-defined]
        raise located from error
    error.add_note(f"while running {describe_op(op)} in {where}")
    error._rducc_located = True  # type: ignore[attr-defined]
    raise error


def check_result(value: Any, expected: Signature, op: Operation, index: int = 0) -> None:
    """A kernel's result must have the IR's shape and dtype (else a runtime bug)."""
    shape, dtype = expected
    if not isinstance(value, np.ndarray) or value.shape != shape or value.dtype != dtype:
        got = f"{value.dtype}{list(value.shape)}" if isinstance(value, np.ndarray) else type(value).__name__
        raise AssertionError(
            f"runtime bug: {describe_op(op)} result #{index} is {got}, the IR says {dtype}{list(shape)}"
        )


def kernel_step(
    kernel: Kernel,
    operands: tuple[int, ...],
    results: tuple[int, ...],
    expected: tuple[Signature, ...],
    op: Operation,
    check: bool,
    release: tuple[int, ...] = (),
) -> Step:
    """The step of one op: its kernel on the operand slots into the result slots,
    each result checked (with `check`), then the `release` slots cleared."""
    single = len(results) == 1

    def step(env: Env, context: RunContext) -> None:
        value = kernel(context, *[env[i] for i in operands])
        values = (value,) if single else value
        for index, (slot, result) in enumerate(zip(results, values)):
            env[slot] = result
            if check:
                check_result(result, expected[index], op, index)
        for slot in release:
            env[slot] = None

    return step


# --------------------------------------------------------------------------
# the entry function and its arguments
# --------------------------------------------------------------------------


def functions_of(module: ModuleOp) -> dict[str, func.FuncOp]:
    """Every `func.func` of the module by name (the callees of `func.call`)."""
    return {op.sym_name.data: op for op in module.ops if isinstance(op, func.FuncOp)}


def globals_of(module: ModuleOp) -> dict[str, GlobalOp]:
    """Every `tier.global` of the module by name."""
    return {op.sym_name.data: op for op in module.ops if isinstance(op, GlobalOp)}


def argument_attributes(function: func.FuncOp, index: int) -> Mapping[str, Attribute]:
    """The attribute dictionary of argument `index` (empty when it has none)."""
    attrs = function.arg_attrs.data if function.arg_attrs is not None else ()
    entry = attrs[index] if index < len(attrs) else None
    return entry.data if isinstance(entry, DictionaryAttr) else {}


def input_argument(function: func.FuncOp, index: int, shape: tuple[int, ...], dtype: np.dtype) -> Argument:
    """A user input of the entry function, named by its `rdu.input` label."""
    arg: BlockArgument = function.body.block.args[index]
    name = input_label(argument_attributes(function, index)) or arg.name_hint or f"arg{index}"
    return Argument(name, shape, dtype)


def weight_argument(global_op: GlobalOp, shape: tuple[int, ...], dtype: np.dtype) -> Argument:
    """A weight: read by its global's name, or its inline `initial_value`."""
    name = global_op.sym_name.data
    initial = None
    if global_op.initial_value is not None:
        initial = dense_to_array(global_op.initial_value)
        initial.flags.writeable = False
    return Argument(name, shape, dtype, name, initial)


@dataclass(frozen=True)
class Argument:
    """One argument of the entry function: a user input or a weight (by global name)."""

    name: str
    shape: tuple[int, ...]
    dtype: np.dtype
    global_name: str | None = None
    initial: np.ndarray | None = None

    def describe(self) -> str:
        return f"{self.name}: {self.dtype.name}{list(self.shape)}"


def _read_only(value: np.ndarray) -> np.ndarray:
    view = value.view()
    view.flags.writeable = False
    return view


def check_array(value: Any, argument: Argument, what: str) -> np.ndarray:
    """`value` as a read-only array of the argument's dtype and shape, else an error."""
    if isinstance(value, np.generic):
        value = np.asarray(value)
    if not isinstance(value, np.ndarray):
        hint = " (convert torch tensors with rducc.runtime.executor.to_numpy)" if type(
            value
        ).__name__ == "Tensor" else ""
        raise RduccError(f"{what} is a {type(value).__name__}, expected a numpy array{hint}")
    if value.dtype != argument.dtype:
        raise RduccError(
            f"{what} has dtype {value.dtype.name}, expected {argument.dtype.name}"
            + (" (ml_dtypes.bfloat16)" if argument.dtype == BF16 else "")
        )
    if value.shape != argument.shape:
        raise RduccError(f"{what} has shape {list(value.shape)}, expected {list(argument.shape)}")
    return _read_only(value)


def check_input_count(given: int, expected_inputs: Sequence[Argument], entry: str = "forward") -> None:
    """An error unless `given` inputs is the entry function's count of inputs."""
    if given != len(expected_inputs):
        count = len(expected_inputs)
        names = ", ".join(a.describe() for a in expected_inputs)
        raise RduccError(f"@{entry} takes {count} input{'s' if count != 1 else ''} ({names}), got {given}")


def check_arguments(
    inputs: Sequence[Any] | np.ndarray,
    weights: Mapping[str, Any] | None,
    expected_inputs: Sequence[Argument],
    expected_weights: Sequence[Argument],
    entry: str = "forward",
) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """The inputs and the weights (in `expected_weights`' order) as read-only
    arrays, checked before anything runs: count, dtypes, shapes, missing weights."""
    if isinstance(inputs, np.ndarray):
        inputs = [inputs]
    check_input_count(len(inputs), expected_inputs, entry)
    values = [
        check_array(value, argument, f"input #{i} ('{argument.name}')")
        for i, (value, argument) in enumerate(zip(inputs, expected_inputs))
    ]
    weights = weights or {}
    missing = [w.name for w in expected_weights if w.name not in weights and w.initial is None]
    if missing:
        shown = ", ".join(missing[:5]) + (f" and {len(missing) - 5} more" if len(missing) > 5 else "")
        raise RduccError(f"missing weight{'s' if len(missing) > 1 else ''}: {shown}")
    bound = [
        check_array(weights[w.name], w, f"weight '{w.name}'") if w.name in weights else w.initial
        for w in expected_weights
    ]
    return values, bound  # type: ignore[return-value]



class Runner(ABC):
    """What both engines share: an entry function's arguments (user inputs and
    weights), the one argument check, and the numbering of their calls."""

    entry: str
    inputs: list[Argument]
    weights: list[Argument]
    _runs: RunCounter

    @cached_property
    def weight_names(self) -> list[str]:
        """Global names of the weights `run` needs, in order."""
        return [w.name for w in self.weights]

    def run(
        self,
        inputs: Sequence[np.ndarray],
        weights: Mapping[str, np.ndarray] | None = None,
        context: RunContext | None = None,
    ) -> list[np.ndarray]:
        """Outputs of the entry function for these inputs; weights by global name.
        `context` (a fresh one-socket run when None) is the call's run number, group and rank."""
        values, bound = self._checked(inputs, weights)
        single_threaded_numpy_blas()  # the runtime's threads are torch's pool (runtime/threads.py)
        arithmetic_for_threads()
        with np.errstate(all="ignore"), pool_flushing():  # inf and NaN are values, as in torch: no warnings
            return self._execute(values, bound, context or self._runs.next_context())

    def _checked(
        self, inputs: Sequence[np.ndarray] | np.ndarray, weights: Mapping[str, np.ndarray] | None
    ) -> tuple[list[np.ndarray], list[np.ndarray]]:
        """The checked inputs and weights; the weights of the last call are reused
        when every one is the same array object (a Program passes its own each call)."""
        given = weights or {}
        identity = tuple(map(id, map(given.get, self.weight_names)))
        cached = getattr(self, "_last_weights", None)
        if cached is not None and cached[0] == identity and cached[1] is given:
            values, _ = check_arguments(inputs, None, self.inputs, [], self.entry)
            return values, cached[2]
        values, bound = check_arguments(inputs, weights, self.inputs, self.weights, self.entry)
        self._last_weights = (identity, given, bound)
        return values, bound

    __call__ = run

    @abstractmethod
    def _execute(self, values: list[np.ndarray], bound: list[np.ndarray], context: RunContext) -> list[np.ndarray]:
        """Run the prepared program on checked inputs and bound weights."""

__all__ = [
    "Argument", "Env", "Runner", "Signature", "Slots", "Step", "argument_attributes", "check_arguments",
    "check_result", "functions_of", "globals_of", "input_argument", "kernel_step", "run_steps",
    "value_name", "weight_argument",
]
