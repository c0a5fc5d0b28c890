"""Level-4 interpreter: runs the lowered, placed program (`--emit placed`) on NumPy.

Where the level-1 executor (`rducc.runtime.executor`) runs the dataflow graph,
this interpreter runs what the chip would: tier by tier, byte by byte.

- HBM and DDR buffers (the `@forward` arguments, `tier.get_global` results and
  HBM `tier.alloc`s) are plain NumPy arrays.
- SRAM is ONE `uint8` arena of the function's `tier.sram_capacity` bytes (or
  `sram_bytes`), allocated once per run. Every SRAM `tier.alloc` (each of its
  `buffers N` rotating copies, back to back from its offset) and every value
  defined in a `tier.compute` body (at its `tier.offset`) is a NumPy view into
  that arena with its own dtype and shape. A body op's result is computed with
  the kernels of `rducc.runtime.kernels`, copied into its view, and later ops
  read the view, never the Python result: a wrong or overlapping allocation
  gives wrong numbers, as it would on the chip.
- Values a body yields are written into the `outs` buffers.
- `buffers N`: each `tier.dma` or `tier.gather` INTO the buffer moves to the
  next copy (the first fills copy 0); readers (compute `ins`, DMAs out of it)
  use the copy most recently written.
- `tier.dma` copies a whole buffer, or the window at offsets on one side
  (offsets on the source: the window of the destination's shape is read;
  on the destination: the window of the source's shape is written).
- `tier.gather`: destination = source[indices] along dim 0.
- `scf.for` over `arith` index arithmetic runs as a Python loop.
- `func.return` returns copies of its buffers.
- `func.call` (of a layer `rdu-outline-layers` outlined) runs the callee,
  prepared once on its first call, on the caller's buffers.
- Fresh memory (the used part of the arena at the start of a run, each new
  HBM buffer) holds 0xFF bytes, NaN in every float type: a read of bytes that
  nothing wrote shows in the result instead of passing as zeros.

Prepare once, run many: `PlacedProgram(module)` walks `@forward` once and
turns every op into a closure over a flat value table (one Python list with
a slot per SSA value and per arena view); `run()` only checks the arguments,
creates the arena and its views (a prepared list of offsets, dtypes and
shapes), and calls the closures.

Inputs are checked up front (count, shape, dtype), and so are the weights
(`tier.get_global @name` reads `weights[name]`, or the global's inline
`initial_value`); a problem raises `RduccError` before anything runs. Inputs
and weights are read through read-only views: the program never writes into
the caller's arrays.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
from xdsl.dialects import arith, func, scf
from xdsl.dialects.builtin import IntegerAttr, ModuleOp, TensorType
from xdsl.ir import Block, Operation, SSAValue

from rducc.dialects import dataflow as rdu
from rducc.dialects.contracts import BODY_OFFSET, SRAM_CAPACITY, arg_attrs, input_label
from rducc.dialects.memory import (
    AllocOp,
    BufferType,
    ComputeOp,
    DeallocOp,
    DmaOp,
    GatherDmaOp,
    GetGlobalOp,
    GlobalOp,
    Tier,
)
from rducc.dialects.program import ENTRY, entry_function
from rducc.errors import RduccError
from rducc.runtime import kernels
from rducc.runtime.executor import Argument, check_array, describe_op, prepare_kernel

Env = list[Any]
Step = Callable[[Env], None]
Getter = Callable[[Env], np.ndarray]

_ARENA_DTYPE = np.dtype(np.uint8)
_POISON = 0xFF
"""Fresh memory (the used part of the arena, new HBM buffers) starts as 0xFF bytes:
NaN in every float type, -1 in integers, so reading bytes nothing wrote shows."""


def _poisoned(shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
    array = np.empty(shape, dtype)
    array.reshape(-1).view(_ARENA_DTYPE).fill(_POISON)
    return array


class _Rotating:
    """The N copies of a `buffers N` SRAM buffer and which one was written last."""

    __slots__ = ("copies", "written")

    def __init__(self, copies: list[np.ndarray]):
        self.copies = copies
        self.written = -1  # nothing written yet: readers see copy 0

    def current(self) -> np.ndarray:
        return self.copies[max(self.written, 0)]

    def advance(self) -> np.ndarray:
        self.written = (self.written + 1) % len(self.copies)
        return self.copies[self.written]


def _run_block(steps: Sequence[tuple[Step, Operation]], env: Env) -> None:
    """Run prepared steps in order; an error names the innermost op that raised it."""
    op = None
    try:
        for step, op in steps:
            step(env)
    except Exception as error:
        if getattr(error, "_rducc_located", False) or op is None:
            raise
        if isinstance(error, RduccError):
            located = RduccError(f"{describe_op(op)}: {error}")
            located._rducc_located = True  # type: ignore[attr-defined]
            raise located from error
        error.add_note(f"while running {describe_op(op)} of the placed program")
        error._rducc_located = True  # type: ignore[attr-defined]
        raise


def _read_only(value: np.ndarray) -> np.ndarray:
    view = value.view()
    view.flags.writeable = False
    return view


def _buffer_type(value: SSAValue) -> BufferType:
    if not isinstance(value.type, BufferType):
        raise RduccError(f"expected a '!tier.buffer' value, got {value.type}: is the program lowered (--emit placed)?")
    return value.type


def _signature(buffer: BufferType) -> tuple[tuple[int, ...], np.dtype]:
    return buffer.get_shape(), kernels.element_dtype(buffer.element_type)


def _value_name(value: SSAValue) -> str:
    return f"%{value.name_hint}" if value.name_hint else "a value"


def _window_key(
    env: Env, offsets: tuple[int, ...], window: tuple[int, ...], whole: tuple[int, ...], what: str
) -> tuple[slice, ...]:
    starts = [env[s] for s in offsets]
    for start, size, extent in zip(starts, window, whole):
        if start < 0 or start + size > extent:
            raise RduccError(
                f"the {what} window {list(window)} at offsets {starts} does not fit the "
                f"buffer {list(whole)}"
            )
    return tuple(slice(start, start + size) for start, size in zip(starts, window))


class _Callee:
    """A called function, prepared once: its argument slots, steps and results."""

    def __init__(self, arg_slots: list[int], steps: list[tuple[Step, Operation]], results: list[Getter]):
        self.arg_slots = arg_slots
        self.steps = steps
        self.results = results


class PlacedProgram:
    """A placed (level-4) module's `@forward`, prepared to run on NumPy.

    `input_types` and `output_types` are the (shape, dtype) of each argument
    and result of `@forward`, in order; `weight_names` are the globals the
    program reads (each needs an entry in `run`'s weights unless it has an
    inline value).
    """

    def __init__(self, module: ModuleOp, sram_bytes: int | None = None, entry: str = ENTRY):
        forward = entry_function(module, entry)
        self._globals = {op.sym_name.data: op for op in module.ops if isinstance(op, GlobalOp)}
        self._functions = {op.sym_name.data: op for op in module.ops if isinstance(op, func.FuncOp)}
        self._callees: dict[str, _Callee | None] = {}  # None while being prepared
        self.sram_bytes = _capacity(module, forward, sram_bytes)

        # the value table: one slot per SSA value and per arena view, numbered in one sequence
        self._size = 0
        self._arena_template: Env | None = None
        self._slots: dict[SSAValue, int] = {}
        self._views: list[tuple[int, int, int, np.dtype, tuple[int, ...]]] = []  # slot, offset, bytes, dtype, shape
        self._copies: dict[SSAValue, int] = {}  # SRAM buffer -> its number of rotating copies
        self._global_slots: dict[str, list[int]] = {}  # global name -> its get_global result slots
        self._global_types: dict[str, tuple[tuple[int, ...], np.dtype]] = {}

        block = forward.body.block
        attrs = arg_attrs(forward)
        self.inputs: list[Argument] = []
        self._input_slots: list[int] = []
        for index, arg in enumerate(block.args):
            buffer = _buffer_type(arg)
            if buffer.tier.data == Tier.SRAM:
                raise RduccError(f"argument #{index} of @{entry} is in sram: user inputs live in hbm")
            shape, dtype = _signature(buffer)
            name = input_label(attrs[index]) or arg.name_hint or f"arg{index}"
            self.inputs.append(Argument(name, shape, dtype))
            self._input_slots.append(self._define(arg))
        self.input_types = [(a.shape, a.dtype) for a in self.inputs]

        ops = list(block.ops)
        terminator = ops[-1] if ops else None
        if not isinstance(terminator, func.ReturnOp):
            raise RduccError(f"@{entry} must end in 'func.return'")
        self._steps = self._prepare_ops(ops[:-1])
        returned = list(terminator.arguments)
        self._results = [self._reader(v) for v in returned]
        self.output_types = [_signature(_buffer_type(v)) for v in returned]

        self.weights: list[Argument] = []
        for name, slots in self._global_slots.items():
            shape, dtype = self._global_types[name]
            initial = None
            global_op = self._globals[name]
            if global_op.initial_value is not None:
                initial = kernels.dense_to_array(global_op.initial_value)
                initial.flags.writeable = False
            self.weights.append(Argument(name, shape, dtype, name, initial))
        self._arena_used = max((offset + nbytes for _, offset, nbytes, _, _ in self._views), default=0)

    # ------------------------------------------------------------------
    # preparation
    # ------------------------------------------------------------------

    def _fresh(self) -> int:
        self._size += 1
        return self._size - 1

    def _define(self, value: SSAValue) -> int:
        slot = self._slots[value] = self._fresh()
        return slot

    def _use(self, value: SSAValue) -> int:
        slot = self._slots.get(value)
        if slot is None:
            raise RduccError(f"{_value_name(value)} is used before it is defined")
        return slot

    def _view(self, offset: int, value_type: Any, what: str) -> int:
        """A slot holding, during a run, the arena view of a buffer or tensor type at `offset`."""
        if isinstance(value_type, BufferType):
            shape, dtype = _signature(value_type)
        else:
            shape, dtype = kernels.tensor_signature(value_type)
        nbytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
        if self.sram_bytes is None:
            raise RduccError(
                "the program has no 'tier.sram_capacity': it is not placed (run rdu-sram-alloc, "
                "or pass sram_bytes)"
            )
        if offset < 0 or offset + nbytes > self.sram_bytes:
            raise RduccError(
                f"{what} at [{offset}, {offset + nbytes}) does not fit the SRAM arena of "
                f"{self.sram_bytes} bytes"
            )
        slot = self._fresh()
        self._views.append((slot, offset, nbytes, dtype, shape))
        return slot

    def _reader(self, value: SSAValue) -> Getter:
        """Reads a buffer: its array, or the most recently written rotating copy."""
        slot = self._use(value)
        if self._copies.get(value, 1) > 1:
            return lambda env: env[slot].current()
        return lambda env: env[slot]

    def _writer(self, value: SSAValue) -> Getter:
        """The array a DMA or gather into the buffer fills (moving to the next copy)."""
        slot = self._use(value)
        if self._copies.get(value, 1) > 1:
            return lambda env: env[slot].advance()
        return lambda env: env[slot]

    def _prepare_ops(self, ops: Sequence[Operation]) -> list[tuple[Step, Operation]]:
        steps: list[tuple[Step, Operation]] = []
        for op in ops:
            step = self._prepare_op(op)
            if step is not None:
                steps.append((step, op))
        return steps

    def _prepare_op(self, op: Operation) -> Step | None:
        if isinstance(op, GetGlobalOp):
            return self._prepare_get_global(op)
        if isinstance(op, AllocOp):
            return self._prepare_alloc(op)
        if isinstance(op, DeallocOp):
            slot = self._use(op.buffer)

            def dealloc(env: Env) -> None:
                env[slot] = None

            return dealloc
        if isinstance(op, DmaOp):
            return self._prepare_dma(op)
        if isinstance(op, GatherDmaOp):
            return self._prepare_gather(op)
        if isinstance(op, ComputeOp):
            return self._prepare_compute(op)
        if isinstance(op, scf.ForOp):
            return self._prepare_for(op)
        if isinstance(op, arith.ConstantOp | arith.AddiOp | arith.SubiOp | arith.MuliOp):
            return self._prepare_index(op)
        if isinstance(op, func.CallOp):
            return self._prepare_call(op)
        raise RduccError(
            f"the placed-program interpreter cannot run {describe_op(op)} (it runs tier ops, "
            "scf.for and index arith at the top level, rdu ops inside tier.compute)"
        )

    def _callee(self, op: func.CallOp) -> _Callee:
        """The called function, prepared on its first call (once for all calls)."""
        name = op.callee.string_value()
        if name in self._callees:
            prepared = self._callees[name]
            if prepared is None:
                raise RduccError(f"{describe_op(op)}: @{name} calls itself; recursion is not supported")
            return prepared
        callee = self._functions.get(name)
        if callee is None or not callee.body.blocks:
            raise RduccError(f"{describe_op(op)}: the module has no 'func.func @{name}' with a body")
        self._callees[name] = None
        block = callee.body.block
        arg_slots = [self._define(arg) for arg in block.args]
        ops = list(block.ops)
        if not ops or not isinstance(ops[-1], func.ReturnOp):
            raise RduccError(f"@{name} must end in 'func.return'")
        steps = self._prepare_ops(ops[:-1])
        prepared = _Callee(arg_slots, steps, [self._reader(v) for v in ops[-1].arguments])
        self._callees[name] = prepared
        return prepared

    def _prepare_call(self, op: func.CallOp) -> Step:
        """A call runs the callee's prepared steps on the caller's buffers; the
        callee's SRAM views are in the same arena (rdu-sram-alloc keeps no
        caller buffer live across a call)."""
        callee = self._callee(op)
        operands = [self._reader(v) for v in op.arguments]
        result_slots = [self._define(r) for r in op.res]

        def call(env: Env) -> None:
            for slot, get in zip(callee.arg_slots, operands):
                env[slot] = get(env)
            _run_block(callee.steps, env)
            for slot, get in zip(result_slots, callee.results):
                env[slot] = get(env)

        return call

    def _prepare_get_global(self, op: GetGlobalOp) -> None:
        name = op.global_name.root_reference.data
        if name not in self._globals:
            raise RduccError(f"{describe_op(op)} reads @{name}, which is not a 'tier.global'")
        signature = _signature(_buffer_type(op.result))
        if self._global_types.setdefault(name, signature) != signature:
            raise RduccError(f"{describe_op(op)}: @{name} is read with two different types")
        self._global_slots.setdefault(name, []).append(self._define(op.result))
        return None  # run() fills the slot before the first step

    def _prepare_alloc(self, op: AllocOp) -> Step:
        buffer = _buffer_type(op.result)
        if buffer.tier.data != Tier.SRAM:
            shape, dtype = _signature(buffer)
            slot = self._define(op.result)

            def alloc_off_chip(env: Env) -> None:
                env[slot] = _poisoned(shape, dtype)

            return alloc_off_chip
        if op.offset is None:
            raise RduccError(
                f"{describe_op(op)}: SRAM buffer {_value_name(op.result)} has no offset: the "
                "program is not placed (run rdu-sram-alloc)"
            )
        copies, start, size = op.copies, op.offset.value.data, buffer.size_in_bytes
        views = [
            self._view(start + k * size, buffer, f"SRAM buffer {_value_name(op.result)} (copy {k})")
            for k in range(copies)
        ]
        self._copies[op.result] = copies
        slot = self._define(op.result)
        if copies == 1:
            view = views[0]

            def alloc_sram(env: Env) -> None:
                env[slot] = env[view]

            return alloc_sram

        def alloc_rotating(env: Env) -> None:
            env[slot] = _Rotating([env[v] for v in views])

        return alloc_rotating

    def _prepare_dma(self, op: DmaOp) -> Step:
        src_type, dst_type = _buffer_type(op.source), _buffer_type(op.dest)
        read, write = self._reader(op.source), self._writer(op.dest)
        src_offsets = tuple(self._use(v) for v in op.src_offsets)
        dst_offsets = tuple(self._use(v) for v in op.dst_offsets)
        src_shape, dst_shape = src_type.get_shape(), dst_type.get_shape()
        if src_offsets:

            def dma_window_in(env: Env) -> None:
                key = _window_key(env, src_offsets, dst_shape, src_shape, "source")
                source = read(env)[key]
                np.copyto(write(env), source, casting="no")

            return dma_window_in
        if dst_offsets:

            def dma_window_out(env: Env) -> None:
                key = _window_key(env, dst_offsets, src_shape, dst_shape, "destination")
                source = read(env)
                np.copyto(write(env)[key], source, casting="no")

            return dma_window_out

        def dma(env: Env) -> None:
            source = read(env)
            np.copyto(write(env), source, casting="no")

        return dma

    def _prepare_gather(self, op: GatherDmaOp) -> Step:
        table, ids, write = self._reader(op.source), self._reader(op.indices), self._writer(op.dest)
        expected = _signature(_buffer_type(op.dest))

        def gather(env: Env) -> None:
            rows = kernels.gather(table(env), [ids(env)], 0)
            _check(rows, expected, op)
            np.copyto(write(env), rows, casting="no")

        return gather

    def _prepare_for(self, op: scf.ForOp) -> Step:
        if op.iter_args or op.results:
            raise RduccError(f"{describe_op(op)}: loops that carry values are not supported")
        lb, ub, step = self._use(op.lb), self._use(op.ub), self._use(op.step)
        body = op.body.block
        iv = self._define(body.args[0])
        ops = list(body.ops)
        if not ops or not isinstance(ops[-1], scf.YieldOp) or ops[-1].operands:
            raise RduccError(f"{describe_op(op)}: the loop body must end in 'scf.yield' of no values")
        steps = self._prepare_ops(ops[:-1])

        def loop(env: Env) -> None:
            for i in range(env[lb], env[ub], env[step]):
                env[iv] = i
                _run_block(steps, env)

        return loop

    def _prepare_index(self, op: Operation) -> Step:
        if isinstance(op, arith.ConstantOp):
            if not isinstance(op.value, IntegerAttr):
                raise RduccError(
                    f"{describe_op(op)}: only index and integer constants appear outside "
                    "tier.compute in a placed program"
                )
            constant = op.value.value.data
            result = self._define(op.result)

            def const(env: Env) -> None:
                env[result] = constant

            return const
        lhs, rhs = self._use(op.operands[0]), self._use(op.operands[1])
        result = self._define(op.results[0])
        if isinstance(op, arith.AddiOp):

            def addi(env: Env) -> None:
                env[result] = env[lhs] + env[rhs]

            return addi
        if isinstance(op, arith.SubiOp):

            def subi(env: Env) -> None:
                env[result] = env[lhs] - env[rhs]

            return subi

        def muli(env: Env) -> None:
            env[result] = env[lhs] * env[rhs]

        return muli

    def _prepare_compute(self, op: ComputeOp) -> Step:
        block = op.body.block
        name = op.sym_name.data
        ins = [self._reader(v) for v in op.ins]
        outs = [self._reader(v) for v in op.outs]  # compute writes the current copy
        arg_slots = [self._define(a) for a in block.args]
        out_slots = [self._fresh() for _ in op.outs]  # the output arrays, during one compute
        terminator = block.last_op
        if not isinstance(terminator, rdu.YieldOp) or len(terminator.operands) != len(op.outs):
            raise RduccError(f"{describe_op(op)}: the body must end in 'rdu.yield' of one value per output")
        yielded = list(terminator.operands)
        # an op whose value the body yields computes straight into its (first) output buffer
        first_out: dict[SSAValue, int] = {}
        for index, value in enumerate(yielded):
            if not isinstance(value.owner, Block):
                first_out.setdefault(value, index)
        steps: list[tuple[Step, Operation]] = []
        for body_op in list(block.ops)[:-1]:
            where = f'{describe_op(body_op)} in tier.compute "{name}"'
            if len(body_op.results) != 1 or not isinstance(body_op.results[0].type, TensorType):
                raise RduccError(f"{where}: body ops must have one tensor result")
            result = body_op.results[0]
            if result in first_out:
                dest = out_slots[first_out[result]]
            else:
                offset = body_op.attributes.get(BODY_OFFSET)
                if not isinstance(offset, IntegerAttr):
                    raise RduccError(
                        f"{where} has no '{BODY_OFFSET}': the program is not placed "
                        "(run rdu-sram-alloc)"
                    )
                dest = self._view(offset.value.data, result.type, f"the value of {where}")
            kernel = prepare_kernel(body_op, True)
            operands = tuple(self._use(v) for v in body_op.operands)
            expected = kernels.tensor_signature(result.type)
            step = _body_step(kernel, operands, dest, self._define(result), expected, body_op)
            steps.append((step, body_op))
        # yields not computed in place: block arguments, a value yielded twice
        copies = [
            (self._use(value), out_slots[index])
            for index, value in enumerate(yielded)
            if first_out.get(value) != index
        ]

        def compute(env: Env) -> None:
            for slot, get in zip(arg_slots, ins):
                env[slot] = get(env)
            for slot, get in zip(out_slots, outs):
                env[slot] = get(env)
            _run_block(steps, env)
            for source, out in copies:
                np.copyto(env[out], env[source], casting="no")

        return compute

    # ------------------------------------------------------------------
    # running
    # ------------------------------------------------------------------

    @property
    def weight_names(self) -> list[str]:
        """Global names the program reads, in order of first `tier.get_global`."""
        return [w.name for w in self.weights]

    def _check_arguments(
        self, inputs: Sequence[Any], weights: Mapping[str, Any] | None
    ) -> tuple[list[np.ndarray], list[np.ndarray]]:
        if isinstance(inputs, np.ndarray):
            inputs = [inputs]
        if len(inputs) != len(self.inputs):
            names = ", ".join(f"{a.name}: {a.dtype.name}{list(a.shape)}" for a in self.inputs)
            raise RduccError(
                f"@forward takes {len(self.inputs)} input{'s' if len(self.inputs) != 1 else ''} "
                f"({names}), got {len(inputs)}"
            )
        values = [
            _read_only(check_array(value, argument, f"input #{i} ('{argument.name}')"))
            for i, (value, argument) in enumerate(zip(inputs, self.inputs))
        ]
        weights = weights or {}
        missing = [w.name for w in self.weights if w.name not in weights and w.initial is None]
        if missing:
            shown = ", ".join(missing[:5]) + (f" and {len(missing) - 5} more" if len(missing) > 5 else "")
            raise RduccError(f"missing weight{'s' if len(missing) > 1 else ''}: {shown}")
        bound = [
            _read_only(check_array(weights[w.name], w, f"weight '{w.name}'"))
            if w.name in weights
            else w.initial
            for w in self.weights
        ]
        return values, bound

    def run(
        self, inputs: Sequence[np.ndarray], weights: Mapping[str, np.ndarray] | None = None
    ) -> list[np.ndarray]:
        """Outputs of @forward for these inputs; weights by global name."""
        values, bound = self._check_arguments(inputs, weights)
        kernels.start_run()
        env: Env = list(self._arena_env())
        for slot, value in zip(self._input_slots, values):
            env[slot] = value
        for weight, value in zip(self.weights, bound):
            for slot in self._global_slots[weight.name]:
                env[slot] = value
        _run_block(self._steps, env)
        return [np.array(get(env)) for get in self._results]

    __call__ = run

    def _arena_env(self) -> Env:
        """The value table with every SRAM view bound, made on the first run.

        The arena is allocated once per program and poisoned (0xFF: NaN in
        floats, -1 in integers) before its first use, so a read of SRAM that
        nothing wrote shows up; the program is deterministic, so later runs,
        which reuse the arena, read nothing stale that the first did not.
        """
        if self._arena_template is None:
            env: Env = [None] * self._size
            if self._views:
                assert self.sram_bytes is not None
                arena = np.zeros(self.sram_bytes, _ARENA_DTYPE)  # calloc: untouched pages stay free
                arena[: self._arena_used] = _POISON
                for slot, offset, nbytes, dtype, shape in self._views:
                    env[slot] = arena[offset : offset + nbytes].view(dtype).reshape(shape)
            self._arena_template = env
        return self._arena_template


def _capacity(module: ModuleOp, forward: func.FuncOp, sram_bytes: int | None) -> int | None:
    """Bytes of the SRAM arena: `sram_bytes`, else the recorded `tier.sram_capacity`."""
    if sram_bytes is not None:
        if sram_bytes < 0:
            raise RduccError(f"sram_bytes must be >= 0, got {sram_bytes}")
        return sram_bytes
    for holder in (forward, module):
        capacity = holder.attributes.get(SRAM_CAPACITY)
        if isinstance(capacity, IntegerAttr):
            return capacity.value.data
    return None  # an error only if the program uses SRAM


def _body_step(
    kernel: Callable[..., Any],
    operands: tuple[int, ...],
    dest: int,
    result: int,
    expected: tuple[tuple[int, ...], np.dtype],
    op: Operation,
) -> Step:
    """Compute one body value, copy it into its arena view (or output buffer);
    later ops read the view."""

    def body_op(env: Env) -> None:
        value = kernel(*[env[i] for i in operands])
        view = env[dest]
        _check(value, expected, op)
        np.copyto(view, value, casting="no")
        env[result] = view

    return body_op


def _check(value: Any, expected: tuple[tuple[int, ...], np.dtype], op: Operation) -> None:
    shape, dtype = expected
    if not isinstance(value, np.ndarray) or value.shape != shape or value.dtype != dtype:
        got = f"{value.dtype}{list(value.shape)}" if isinstance(value, np.ndarray) else type(value).__name__
        raise AssertionError(
            f"interpreter bug: {describe_op(op)} computed {got}, the IR says {dtype}{list(shape)}"
        )


__all__ = ["PlacedProgram"]
