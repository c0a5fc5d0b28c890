"""Level-1 executor: runs `func.func @forward` of an imported module on NumPy.

Prepare once, run many. `GraphExecutor(module)` walks `@forward` once and
turns it into a flat list of steps over a value table (a Python list indexed
by SSA value): each step is a kernel from `rducc.runtime.kernels` with its
attributes already bound (map bodies already compiled), the table slots of
its operands and results, and the slots whose last use it is (cleared after
the step, so peak memory follows the live values, not the whole graph).
`run()` then only fills the table and calls the steps in order.

`rdu.kernel` is prepared the same way, recursively: its body becomes a
sub-program called as one step. Top-level `arith.constant` (dense tensors)
becomes a prepared array.

`run(inputs, weights)` takes the user inputs in `@forward`'s order and the
weights by global name (`tier.global` symbol, which is the `torch.export`
input-spec target, i.e. the `state_dict` / `constants` key). A global with an
inline `initial_value` needs no entry in `weights`. Wrong input count, shape
or dtype and missing weights raise `RduccError` before anything runs.

With `check=True` (the default) every step's result is checked against the
IR's shape and element type, which catches kernel bugs where they happen; it
costs one tuple comparison per op.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

import numpy as np
from xdsl.dialects import arith, func
from xdsl.dialects.builtin import (
    DenseIntOrFPElementsAttr,
    ModuleOp,
)
from xdsl.ir import Block, Operation, SSAValue

from rducc.dialects import dataflow as rdu
from rducc.dialects.collectives import COLLECTIVE_OPS
from rducc.dialects.contracts import arg_attrs, global_of, input_label
from rducc.dialects.memory import GlobalOp
from rducc.dialects.program import ENTRY, entry_function
from rducc.diagnostics import format_location
from rducc.errors import RduccError
from rducc.runtime import kernels

Kernel = Callable[..., Any]


def describe_op(op: Operation) -> str:
    """`'rdu.map' at file:line:col` (or the FX node name) for messages."""
    where = format_location(op.location)
    return f"'{op.name}'" + (f" at {where}" if where else "")


def _ints(attr: Any) -> tuple[int, ...]:
    return tuple(attr.get_values())


def _prepare_kernel(op: Operation, check: bool) -> Kernel:
    """The NumPy kernel of one op, attributes bound (`check` for rdu.kernel bodies)."""
    if isinstance(op, rdu.MapOp):
        return kernels.compile_map(op)
    if isinstance(op, rdu.MatmulOp):
        return partial(
            kernels.matmul,
            dtype=kernels.tensor_signature(op.result.type)[1],
            transpose_rhs=getattr(op, "transpose_rhs", None) is not None,
        )
    if isinstance(op, rdu.ReduceOp):
        return partial(
            kernels.reduce,
            kind=op.kind.data.value,
            dims=_ints(op.dims),
            keepdim=op.keepdim is not None,
        )
    if isinstance(op, rdu.ScanOp):
        return partial(kernels.scan, kind=op.kind.data.value, dim=op.dim.value.data)
    if isinstance(op, rdu.ConvOp):
        return partial(
            kernels.conv,
            stride=_ints(op.stride),
            padding=_ints(op.padding),
            dilation=_ints(op.dilation),
            groups=op.groups.value.data,
            dtype=kernels.tensor_signature(op.result.type)[1],
        )
    if isinstance(op, rdu.PoolOp):
        return partial(
            kernels.pool,
            kind=op.kind.data.value,
            window=_ints(op.window),
            stride=_ints(op.stride),
            padding=_ints(op.padding),
            dilation=_ints(op.dilation),
            ceil_mode=op.ceil_mode is not None,
        )
    if isinstance(op, rdu.ReshapeOp):
        return partial(kernels.reshape, shape=kernels.tensor_signature(op.result.type)[0])
    if isinstance(op, rdu.TransposeOp):
        return partial(kernels.transpose, perm=_ints(op.perm))
    if isinstance(op, rdu.BroadcastOp):
        return partial(kernels.broadcast, shape=kernels.tensor_signature(op.result.type)[0])
    if isinstance(op, rdu.SliceOp):
        return partial(
            kernels.slice_,
            offsets=_ints(op.offsets),
            strides=_ints(op.strides),
            sizes=kernels.tensor_signature(op.result.type)[0],
        )
    if isinstance(op, rdu.ConcatOp):
        dim = op.dim.value.data
        return lambda *inputs: kernels.concat(inputs, dim)
    if isinstance(op, rdu.GatherOp):
        dim = op.dim.value.data
        return lambda source, *indices: kernels.gather(source, indices, dim)
    if isinstance(op, rdu.ScatterOp):
        return partial(kernels.scatter, dim=op.dim.value.data, reduce=op.reduce.data if op.reduce is not None else None)
    if isinstance(op, rdu.IotaOp):
        shape, dtype = kernels.tensor_signature(op.result.type)
        start, step = op.start.value.data, op.step.value.data  # type: ignore[union-attr]
        value = kernels.iota(shape[0], start, step, dtype)
        value.flags.writeable = False
        return lambda: value
    if isinstance(op, rdu.ArgsortOp):
        return partial(kernels.argsort, dim=op.dim.value.data, descending=op.descending is not None)
    if isinstance(op, rdu.RandomOp):
        shape, dtype = kernels.tensor_signature(op.result.type)
        distribution, seed = op.distribution.data, op.seed.value.data
        return lambda: kernels.random(shape, dtype, distribution, seed)
    if isinstance(op, arith.ConstantOp):
        if not isinstance(op.value, DenseIntOrFPElementsAttr):
            raise RduccError(f"{describe_op(op)}: only tensor constants can appear outside map bodies")
        value = kernels.dense_to_array(op.value)
        value.flags.writeable = False
        return lambda: value
    if isinstance(op, COLLECTIVE_OPS):
        from rducc.runtime.sockets import collective_kernel

        return collective_kernel(op)
    if isinstance(op, rdu.KernelOp):
        program = _Program(op.body.block, describe_op(op), check)
        if len(op.results) == 1:
            return lambda *inputs: program(*inputs)[0]
        return program
    raise RduccError(
        f"the level-1 executor cannot run {describe_op(op)} (it runs rdu ops, "
        "rdu.kernel and tensor arith.constant)"
    )


@dataclass(frozen=True)
class _Step:
    """One op: kernel, operand slots, result slots, slots to free afterwards."""

    kernel: Kernel
    operands: tuple[int, ...]
    results: tuple[int, ...]
    release: tuple[int, ...]
    expected: tuple[tuple[tuple[int, ...], np.dtype], ...]
    op: Operation


class _Program:
    """A block compiled to steps over a value table; callable on its arguments.

    Returns the tuple of values its terminator (`func.return` or `rdu.yield`)
    passes on.
    """

    def __init__(self, block: Block, what: str, check: bool = True,
                 callees: Callable[[func.CallOp], Kernel] | None = None):
        self.what = what
        self.check = check
        slots: dict[SSAValue, int] = {}

        def slot(value: SSAValue) -> int:
            if value not in slots:
                slots[value] = len(slots)
            return slots[value]

        self.arg_slots = tuple(slot(arg) for arg in block.args)
        ops = list(block.ops)
        if not ops or ops[-1].name not in ("func.return", "rdu.yield"):
            raise RduccError(f"{what}: the block must end in 'func.return' or 'rdu.yield'")
        *body, terminator = ops
        prepared = []
        for op in body:
            if isinstance(op, func.CallOp) and callees is not None:
                kernel = callees(op)
            else:
                kernel = _prepare_kernel(op, check)
            operands = tuple(slots[v] for v in op.operands)
            results = tuple(slot(r) for r in op.results)
            expected = tuple(kernels.tensor_signature(r.type) for r in op.results)
            prepared.append((kernel, operands, results, expected, op))
        self.result_slots = tuple(slots[v] for v in terminator.operands)
        self.size = len(slots)

        # free each value right after its last use (never the block's results)
        last_use: dict[int, int] = {}
        for index, (_, operands, results, _, _) in enumerate(prepared):
            for s in (*operands, *results):
                last_use[s] = index
        keep = set(self.result_slots)
        release: dict[int, list[int]] = {}
        for s, index in last_use.items():
            if s not in keep:
                release.setdefault(index, []).append(s)
        self.steps = [
            _Step(kernel, operands, results, tuple(release.get(index, ())), expected, op)
            for index, (kernel, operands, results, expected, op) in enumerate(prepared)
        ]

    def __call__(self, *args: np.ndarray) -> tuple[np.ndarray, ...]:
        env: list[Any] = [None] * self.size
        for s, value in zip(self.arg_slots, args):
            env[s] = value
        step = None
        try:
            for step in self.steps:
                result = step.kernel(*[env[i] for i in step.operands])
                if len(step.results) == 1:
                    env[step.results[0]] = result
                    if self.check:
                        _check_result(step, 0, result)
                else:
                    for index, (s, value) in enumerate(zip(step.results, result)):
                        env[s] = value
                        if self.check:
                            _check_result(step, index, value)
                for s in step.release:
                    env[s] = None
        except RduccError as error:
            assert step is not None
            raise RduccError(f"{describe_op(step.op)}: {error}") from error
        except Exception as error:
            if step is not None:
                error.add_note(f"while running {describe_op(step.op)} in {self.what}")
            raise
        return tuple(env[s] for s in self.result_slots)


def _check_result(step: _Step, index: int, value: Any) -> None:
    shape, dtype = step.expected[index]
    if not isinstance(value, np.ndarray) or value.shape != shape or value.dtype != dtype:
        got = (
            f"{value.dtype}{list(value.shape)}" if isinstance(value, np.ndarray) else type(value).__name__
        )
        raise AssertionError(
            f"executor bug: {describe_op(step.op)} result #{index} is {got}, the IR says "
            f"{dtype}{list(shape)}"
        )


@dataclass(frozen=True)
class _Argument:
    """One argument of @forward: a user input or a weight (by global name)."""

    name: str
    shape: tuple[int, ...]
    dtype: np.dtype
    global_name: str | None = None
    initial: np.ndarray | None = None


def _describe(shape: Sequence[int], dtype: np.dtype) -> str:
    return f"{dtype.name}{list(shape)}"


def _check_array(value: Any, argument: _Argument, what: str) -> np.ndarray:
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
            + (" (ml_dtypes.bfloat16)" if argument.dtype == kernels.BF16 else "")
        )
    if value.shape != argument.shape:
        raise RduccError(
            f"{what} has shape {list(value.shape)}, expected {list(argument.shape)}"
        )
    return value


class GraphExecutor:
    """Runs a level-1 (or level-2, with `rdu.kernel`) module's `@forward` on NumPy."""

    def __init__(self, module: ModuleOp, entry: str = ENTRY, check: bool = True):
        globals_ = {op.sym_name.data: op for op in module.ops if isinstance(op, GlobalOp)}
        forward = entry_function(module, entry)
        attrs = arg_attrs(forward)
        block = forward.body.block
        self.inputs: list[_Argument] = []
        self.weights: list[_Argument] = []
        for index, arg in enumerate(block.args):
            shape, dtype = kernels.tensor_signature(arg.type)
            name = global_of(attrs[index])
            if name is not None:
                global_op = globals_.get(name)
                if global_op is None:
                    raise RduccError(f"argument #{index} names @{name}, which is not a 'tier.global'")
                initial = None
                if global_op.initial_value is not None:
                    initial = kernels.dense_to_array(global_op.initial_value)
                    initial.flags.writeable = False
                self.weights.append(_Argument(name, shape, dtype, name, initial))
                continue
            if self.weights:
                raise RduccError(
                    f"argument #{index} is a user input after a weight; @{entry} must take "
                    "its user inputs first"
                )
            label = input_label(attrs[index])
            self.inputs.append(_Argument(label or arg.name_hint or f"arg{index}", shape, dtype))
        self._functions = {op.sym_name.data: op for op in module.ops if isinstance(op, func.FuncOp)}
        self._callees: dict[str, Kernel] = {}
        self._check = check
        self.program = _Program(block, f"@{entry}", check, self._callee)
        self._bound: dict[str, np.ndarray] = {}

    def _callee(self, call: func.CallOp) -> Kernel:
        """A called function (an outlined layer) as a kernel, prepared once for all its calls."""
        name = call.callee.string_value()
        if name not in self._callees:
            callee = self._functions.get(name)
            if callee is None or not callee.body.blocks:
                raise RduccError(f"{describe_op(call)}: the module has no 'func.func @{name}' with a body")
            program = _Program(callee.body.block, f"@{name}", self._check, self._callee)
            single = len(call.res) == 1
            self._callees[name] = (lambda *args: program(*args)[0]) if single else program
        return self._callees[name]

    @property
    def weight_names(self) -> list[str]:
        """Global names of the weights `run` needs, in argument order."""
        return [w.name for w in self.weights]

    def _arguments(
        self, inputs: Sequence[Any], weights: Mapping[str, Any] | None
    ) -> list[np.ndarray]:
        if isinstance(inputs, np.ndarray):
            inputs = [inputs]
        if len(inputs) != len(self.inputs):
            names = ", ".join(
                f"{a.name}: {_describe(a.shape, a.dtype)}" for a in self.inputs
            )
            raise RduccError(
                f"@forward takes {len(self.inputs)} input{'s' if len(self.inputs) != 1 else ''} "
                f"({names}), got {len(inputs)}"
            )
        values = [
            _check_array(value, argument, f"input #{i} ('{argument.name}')")
            for i, (value, argument) in enumerate(zip(inputs, self.inputs))
        ]
        weights = weights or {}
        missing = [
            w.name for w in self.weights if w.name not in weights and w.initial is None
        ]
        if missing:
            shown = ", ".join(missing[:5]) + (f" and {len(missing) - 5} more" if len(missing) > 5 else "")
            raise RduccError(f"missing weight{'s' if len(missing) > 1 else ''}: {shown}")
        for w in self.weights:
            if w.name in weights:
                values.append(_check_array(weights[w.name], w, f"weight '{w.name}'"))
            else:
                values.append(w.initial)
        return values

    def run(
        self, inputs: Sequence[np.ndarray], weights: Mapping[str, np.ndarray] | None = None
    ) -> list[np.ndarray]:
        """Outputs of @forward for these inputs; weights by global name."""
        arguments = self._arguments(inputs, weights)
        kernels.start_run()
        results = self.program(*arguments)
        passed = {id(a) for a in arguments}
        return [np.array(r) if id(r) in passed else _owned(r) for r in results]

    __call__ = run


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
    import torch

    tensor = tensor.detach().cpu()
    if tensor.dtype == torch.bfloat16:
        return tensor.contiguous().view(torch.int16).numpy().view(kernels.BF16).copy()
    return tensor.contiguous().numpy().copy()


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


# Shared with the level-4 interpreter (rducc.runtime.interpreter): the kernel of
# one rdu op with its attributes bound, and the argument checks.
prepare_kernel = _prepare_kernel
Argument = _Argument
check_array = _check_array


__all__ = ["GraphExecutor", "describe_op", "to_numpy", "weights_of"]
