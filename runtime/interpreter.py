"""Level-4 interpreter: runs the lowered, placed program (`--emit placed`) on NumPy.

Where the level-1 executor (`rducc.runtime.executor`) runs the dataflow graph,
this interpreter runs what the chip would: tier by tier, byte by byte.

- HBM and DDR buffers (the `@forward` arguments, `tier.get_global` results and
  HBM `tier.alloc`s) are plain NumPy arrays.
- SRAM is ONE `uint8` arena of the function's `tier.sram_capacity` bytes (or
  `sram_bytes`), allocated once per run. Every SRAM `tier.alloc` (each of its
  `buffers N` rotating copies, back to back from its offset) and every value
  defined in a `tier.compute` body (at its `tier.offset`) is a NumPy view into
  that arena with its own dtype and shape. A body op's result is computed by
  its registered numpy implementation (`rducc.runtime.registry`) into its
  view, and later ops read the view, never the Python result: a wrong or
  overlapping allocation gives wrong numbers, as it would on the chip.
- Values a body yields are written into the `outs` buffers.
- `buffers N`: each `tier.dma` or `tier.gather` INTO the buffer moves to the
  next copy (the first fills copy 0); readers (compute `ins`, DMAs out of it)
  use the copy most recently written.
- `tier.dma` copies a whole buffer, or the window at offsets on one side
  (offsets on the source: the window of the destination's shape is read;
  on the destination: the window of the source's shape is written), with
  `strides` a strided window.
- A whole-buffer `tier.dma` of a caller's weight or input (a read-only,
  C-contiguous array) into an SRAM buffer that only that DMA writes and whose
  bytes no other SRAM value shares while it is live (the buffer's, its
  neighbours' and its readers' verifiers pass) binds the buffer to the
  caller's array instead of copying it: the bytes are the same, readers see
  the caller's array as it is at the call (a weight changed in place or
  replaced in `Program.weights` is read by the next call, never a stale
  copy), and a full-size model no longer copies every weight into the arena
  on every call (344 MB a call for ViT-B/16). Into a wrongly placed buffer
  the DMA copies as before, so the wrong allocation still shows in the result.
- The other way round, an SRAM buffer that computes write and one whole-buffer
  `tier.dma` copies out to a fresh off-chip buffer (a model's logits), read by
  nothing else, lives in a host array of its own each run where the same
  proofs pass, and the DMA hands that array on instead of copying
  (`rducc.runtime.handed_buffers`; 16 MB a call for a 32K-token vocabulary).
- A body `rdu.reshape` changes no byte: where the placement proves no other
  value's write reaches the bytes meanwhile, its producer computes straight
  into the reshape's bytes, or its readers read its operand's bytes in its
  shape; no copy either way (`rducc.runtime.views`).
- A body `rdu.matmul` whose only use is a bias add runs with it as one
  `torch.addmm` where the placement proves its operands are not overwritten
  before the step reads them (`rducc.runtime.epilogues`).
- A body convolution PyTorch's kernel runs (`kernels.conv_plan`), with or
  without its folded bias, read through its slot alone is the kernel's own
  new array, as a layer norm below (oneDNN writes no given array).
- A body softmax, log softmax or layer norm (its reduces and maps) whose
  intermediates nothing else reads runs as one step of ATen's fused kernel
  where the placement proves its input is not overwritten meanwhile
  (`rducc.runtime.fused_norms`); a layer norm read through its slot alone is
  the kernel's own new array (ATen has no layer norm into a given array).
- A body attention chain (`q @ k^T`, a scale, bias adds, a softmax, `@ v`)
  whose intermediates nothing else reads runs at its second product as one
  step of ATen's fused scaled dot product attention; an operand whose bytes
  the placement gives to another value before then is copied aside at its
  reader's step (`rducc.runtime.fused_attention`).
- A body value of constants and shapes alone (iotas and the maps, layout
  ops and gathers over them: a window mask, a roll's indices) runs on a
  compute's first run only; a copy of it is bound or copied where other
  steps read it, and a gather whose constant index is a rotated range (a
  roll) copies two slices (`rducc.runtime.constant_values`).
- `tier.view` is the numpy view of a contiguous window of an off-chip
  buffer, reshaped: no copy.
- `tier.gather`: destination = source[indices...] (dims 0..k-1).
- `tier.scatter`: the rows `indices` of the SRAM source written into the
  same rows of the off-chip destination, in place (an input's or weight's
  read-only array is copied on this first write, so the caller's stays as
  it was and the program's result carries the update).
  A `tier.dma` into a weight's buffer, whole or a window (an optimizer's
  update written over its global, `rdu-insert-dma`'s `rewrite_whole`), gives
  the buffer a copy of its own the same way.
- `scf.for` over `arith` index arithmetic runs as a Python loop.
- `func.return` returns copies of its buffers, except an off-chip
  `tier.alloc` returned once, whose array the run made and hands over.
- `rdu.host_call` runs torch's CPU kernel on its HBM/DDR operand buffers
  and gives fresh result buffers (`rducc.runtime.host_calls`).
- `func.call` (of a layer `rdu-outline-layers` outlined) runs the callee,
  prepared once on its first call, on the caller's buffers.
- Fresh memory (the used part of the arena at the start of a run, each new
  HBM buffer whose first use is not a whole-buffer DMA into it: a window,
  a row, a loop, a call, a read) holds the poison bytes (`kernels.POISON_WORD`): NaN in every
  float type, the largest values in integers, so a read of bytes that nothing
  wrote shows in the result instead of passing as zeros, and read as an index
  it fails the bounds check instead of wrapping to the last row. (A small
  HBM buffer is a copy of one poisoned array made when the program is prepared.)

Prepare once, run many (`rducc.runtime.engine`, shared with the graph
executor): `PlacedProgram(module)` walks `@forward` once and turns every op
into a closure over a flat value table (one Python list with a slot per SSA
value and per arena view); `run()` only checks the arguments, makes the
call's `RunContext`, creates the arena and its views (a prepared list of
offsets, dtypes and shapes), and calls the closures. Values that always hold
the same array share a slot: a body value and its arena view (or output
buffer), a body argument and its one-copy buffer; a body op's step is one call
of its kernel's `into` on its operands' slots. The first run of a
`tier.compute` also checks each body op's plain kernel result against the
IR's shape and dtype; after a run of it has passed, its steps no longer do.

Inputs are checked up front (count, shape, dtype), and so are the weights
(`tier.get_global @name` reads `weights[name]`, or the global's inline
`initial_value`); a problem raises `RduccError` before anything runs. Inputs
and weights are read through read-only views: the program never writes into
the caller's arrays.
"""

from __future__ import annotations

import ctypes
import sys
from collections.abc import Callable, Sequence
from functools import partial
from typing import Any

import numpy as np
from xdsl.dialects import arith, func, scf
from xdsl.dialects.builtin import IntegerAttr, ModuleOp, TensorType
from xdsl.ir import Block, Operation, SSAValue, Use
from xdsl.utils.exceptions import VerifyException

from rducc.dialects.contracts import BODY_OFFSET, SRAM_CAPACITY
from rducc.dialects.program import ENTRY, entry_function, kernel_name
from rducc.dialects.rdu import dataflow as rdu
from rducc.dialects.streamed import streamed_views
from rducc.dialects.tier import (
    AllocOp,
    BufferType,
    ComputeOp,
    DeallocOp,
    DmaOp,
    GatherDmaOp,
    GetGlobalOp,
    ScatterDmaOp,
    Tier,
    ViewOp,
    window_strides,
)
from rducc.dialects.unchanged import unchanged
from rducc.errors import RduccError
from rducc.runtime import kernels
from rducc.runtime.constant_values import ConstantSteps, rolled_gather
from rducc.runtime.context import RunContext, RunCounter
from rducc.runtime.dtypes import element_dtype, tensor_signature
from rducc.runtime.elementwise import assign
from rducc.runtime.engine import (
    Argument,
    Env,
    Runner,
    Signature,
    Slots,
    Step,
    check_result,
    functions_of,
    globals_of,
    input_argument,
    run_steps,
    value_name,
    weight_argument,
)
from rducc.runtime.epilogues import BiasFolds, Product
from rducc.runtime.fused_attention import AttentionChain, AttentionChains
from rducc.runtime.fused_norms import Chain, LayerNormChain, NormChains
from rducc.runtime.handed_buffers import HandedBuffer, handed_dma
from rducc.runtime.in_place_maps import in_place_step, over_products
from rducc.runtime.layout_views import LayoutViews, View, fused_steps, placed_views, view_of
from rducc.runtime.ordered_maps import ordered
from rducc.runtime.registry import describe_op, handled_structurally, into_of, prepare
from rducc.runtime.released_slots import Recorder, recorded, released
from rducc.runtime.views import Placement, Views
from rducc.targets import SRAM_ROW_BYTES

_RUNNER = "placed-program interpreter"
_WHERE = "the placed program"

Getter = Callable[[Env], np.ndarray]


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


def _buffer_type(value: SSAValue) -> BufferType:
    if not isinstance(value.type, BufferType):
        raise RduccError(f"expected a '!tier.buffer' value, got {value.type}: is the program lowered (--emit placed)?")
    return value.type


def _signature(buffer: BufferType) -> Signature:
    return buffer.get_shape(), element_dtype(buffer.element_type)


def _window_key(
    env: Env, offsets: tuple[int, ...], window: tuple[int, ...], whole: tuple[int, ...], what: str,
    strides: tuple[int, ...] = (),
) -> tuple[slice, ...]:
    starts = [env[s] for s in offsets]
    steps = strides or (1,) * len(window)
    for start, size, extent, step in zip(starts, window, whole, steps):
        if start < 0 or (size and start + (size - 1) * step >= extent):
            raise RduccError(
                f"the {what} window {list(window)} at offsets {starts} does not fit the "
                f"buffer {list(whole)}"
            )
    return tuple(
        slice(start, start + (size - 1) * step + 1 if size else start, step)
        for start, size, step in zip(starts, window, steps)
    )


class _WeightAlias:
    """A whole-buffer DMA into a one-copy SRAM buffer that may bind the buffer
    to its source instead of copying (decided when its function is prepared:
    `PlacedProgram._resolve_aliases`)."""

    __slots__ = ("allowed", "dest", "op")

    def __init__(self, op: DmaOp):
        self.op = op
        self.dest = op.dest
        self.allowed = False


class _Scope:
    """One function being prepared: its SRAM buffers' byte spans (start, end,
    `tier.alloc`), its DMAs that may alias their source and its buffers that
    may hand their bytes on (`rducc.runtime.handed_buffers`)."""

    def __init__(self) -> None:
        self.allocs: list[tuple[int, int, AllocOp]] = []
        self.aliases: list[_WeightAlias] = []
        self.handed: list[HandedBuffer] = []


class _Callee:
    """A called function, prepared once: its argument slots, steps and results."""

    def __init__(self, arg_slots: list[int], steps: list[tuple[Step, Operation]], results: list[Getter]):
        self.arg_slots = arg_slots
        self.steps = steps
        self.results = results


class PlacedProgram(Runner):
    """A placed (level-4) module's `@forward`, prepared to run on NumPy.

    `input_types` and `output_types` are the (shape, dtype) of each argument
    and result of `@forward`, in order; `weight_names` are the globals the
    program reads (each needs an entry in `run`'s weights unless it has an
    inline value).
    """

    def __init__(self, module: ModuleOp, sram_bytes: int | None = None, entry: str = ENTRY):
        forward = entry_function(module, entry)
        self.entry = entry
        self._globals = globals_of(module)
        self._functions = functions_of(module)
        self._callees: dict[str, _Callee | None] = {}  # None while being prepared
        self.sram_bytes = _capacity(module, forward, sram_bytes)

        # the value table: one slot per SSA value and per arena view, numbered in one sequence
        self._table = Slots()
        self._arena_template: Env | None = None
        self._runs = RunCounter()
        self._views: list[tuple[int, int, int, np.dtype, tuple[int, ...]]] = []  # slot, offset, bytes, dtype, shape
        self._host_arrays: list[tuple[int, np.dtype, tuple[int, ...]]] = []  # slot, dtype, shape (streamed views)
        self._bound: list[tuple[int, int]] = []  # slot of a one-copy SRAM buffer, slot of its view
        self._copies: dict[SSAValue, int] = {}  # SRAM buffer -> its number of rotating copies
        self._global_slots: dict[str, list[int]] = {}  # global name -> its get_global result slots
        self._global_types: dict[str, tuple[tuple[int, ...], np.dtype]] = {}
        self._sram_views: dict[SSAValue, int] = {}  # one-copy SRAM buffer -> its arena view slot
        self._scopes: list[_Scope] = []  # the functions being prepared, innermost last
        self.weight_dmas: list[_WeightAlias] = []  # DMAs that may bind their buffer to a caller's array
        self.handed: dict[SSAValue, HandedBuffer] = {}  # SRAM buffer -> its host array's record, if it may have one
        self._live_handed: list[HandedBuffer] = []  # those allocated and not yet copied out, while preparing
        self._writing: list[HandedBuffer] = []  # those the compute being prepared writes
        self._orders: dict[Block, dict[Operation, int]] = {}
        self._handing: dict[DmaOp, list[HandedBuffer | None]] = {}  # a DMA out -> its buffer's record, once made

        block = forward.body.block
        self.inputs: list[Argument] = []
        self._input_slots: list[int] = []
        for index, arg in enumerate(block.args):
            buffer = _buffer_type(arg)
            if buffer.tier.data == Tier.SRAM:
                raise RduccError(f"argument #{index} of @{entry} is in sram: user inputs live in hbm")
            self.inputs.append(input_argument(forward, index, *_signature(buffer)))
            self._input_slots.append(self._table.define(arg))
        self.input_types = [(a.shape, a.dtype) for a in self.inputs]

        ops = list(block.ops)
        terminator = ops[-1] if ops else None
        if not isinstance(terminator, func.ReturnOp):
            raise RduccError(f"@{entry} must end in 'func.return'")
        self._steps = self._prepare_function(ops[:-1])
        returned = list(terminator.arguments)
        self._results = [self._reader(v) for v in returned]
        self._handed = [_fresh_each_run(v, returned) for v in returned]
        self.output_types = [_signature(_buffer_type(v)) for v in returned]

        self.weights: list[Argument] = [
            weight_argument(self._globals[name], *self._global_types[name]) for name in self._global_slots
        ]
        self._arena_used = max((offset + nbytes for _, offset, nbytes, _, _ in self._views), default=0)

    # ------------------------------------------------------------------
    # preparation
    # ------------------------------------------------------------------

    def _view(self, offset: int, value_type: Any, what: str) -> int:
        """A slot holding, during a run, the arena view of a buffer or tensor type at `offset`."""
        if isinstance(value_type, BufferType):
            shape, dtype = _signature(value_type)
        else:
            shape, dtype = tensor_signature(value_type)
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
        slot = self._table.fresh()
        self._views.append((slot, offset, nbytes, dtype, shape))
        for handed in self._live_handed:  # its writers' views move with it; another's overlap keeps it in the arena
            if handed in self._writing:
                handed.record(slot, offset, nbytes, dtype, shape)
            elif offset < handed.end and handed.start < offset + nbytes:
                handed.partial = True
        return slot

    def _host_array(self, value_type: Any) -> int:
        """A slot holding, during a run, a host array of the tensor type (off the SRAM arena)."""
        shape, dtype = tensor_signature(value_type)
        slot = self._table.fresh()
        self._host_arrays.append((slot, dtype, shape))
        return slot

    def _reader(self, value: SSAValue) -> Getter:
        """Reads a buffer: its array, or the most recently written rotating copy."""
        slot = self._table.use(value)
        if self._copies.get(value, 1) > 1:
            return lambda env: env[slot].current()
        return lambda env: env[slot]

    def _writer(self, value: SSAValue) -> Getter:
        """The array a DMA or gather into the buffer fills (moving to the next copy)."""
        slot = self._table.use(value)
        if self._copies.get(value, 1) > 1:
            return lambda env: env[slot].advance()
        return lambda env: env[slot]

    def _prepare_function(self, ops: Sequence[Operation]) -> list[tuple[Step, Operation]]:
        """The steps of a function's body, its weight DMAs' aliasing decided."""
        self._scopes.append(_Scope())
        try:
            steps = self._prepare_ops(ops)
        finally:
            scope = self._scopes.pop()
        with unchanged():  # the verifiers' block-wide answers (`sram_overlaps`) once, not per buffer
            self._resolve_aliases(scope)
        return steps

    def _resolve_aliases(self, scope: _Scope) -> None:
        """A DMA may bind its SRAM destination to its source when it is the one
        op that writes the buffer (the others only read it: compute `ins`,
        DMAs out of it, its dealloc) and no SRAM value shares the buffer's
        bytes while it is live: the verifiers of the buffer, of every buffer
        of the function placed on its bytes and of the kernels reading it
        pass (`_sound`). Then nothing can tell the caller's array from a copy
        of it in the arena; a wrong allocation is copied into as before, so
        it still gives wrong numbers, as on the chip."""
        verdicts: dict[Operation, bool] = {}
        for alias in scope.aliases:
            alloc = alias.dest.owner
            assert isinstance(alloc, AllocOp)
            start, end = next((a, b) for a, b, op in scope.allocs if op is alloc)
            others = [op for a, b, op in scope.allocs if a < end and start < b]
            readers = [use.operation for use in alias.dest.uses if isinstance(use.operation, ComputeOp)]
            alias.allowed = all(_only_reads(use, alias.op) for use in alias.dest.uses) and all(
                _sound(op, verdicts) for op in (*others, *readers)
            )
        for handed in scope.handed:  # the same proof for a buffer handing its bytes on, its writers checked
            others = [op for a, b, op in scope.allocs if a < handed.end and handed.start < b]
            handed.allowed = not handed.partial and handed not in self._live_handed and all(
                _sound(op, verdicts) for op in (*others, *handed.writers))
        self._live_handed = [h for h in self._live_handed if h not in scope.handed]

    def _prepare_ops(self, ops: Sequence[Operation]) -> list[tuple[Step, Operation]]:
        steps: list[tuple[Step, Operation]] = []
        for op in ops:
            step = self._prepare_op(op)
            if step is not None:
                steps.append((step, op))
        return steps

    def _prepare_op(self, op: Operation) -> Step | None:
        prepare_op = _TOP_LEVEL.get(type(op))
        if prepare_op is None:
            raise RduccError(
                f"the placed-program interpreter cannot run {describe_op(op)} (it runs tier ops, "
                "scf.for and index arith at the top level, rdu ops inside tier.compute)"
            )
        return prepare_op(self, op)

    def _prepare_dealloc(self, op: DeallocOp) -> Step | None:
        slot = self._table.use(op.buffer)
        if self._copies.get(op.buffer) == 1:
            return None  # an SRAM view stays bound: freeing it frees nothing

        def dealloc(env: Env, context: RunContext) -> None:
            env[slot] = None

        return dealloc

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
        arg_slots = [self._table.define(arg) for arg in block.args]
        ops = list(block.ops)
        if not ops or not isinstance(ops[-1], func.ReturnOp):
            raise RduccError(f"@{name} must end in 'func.return'")
        steps = self._prepare_function(ops[:-1])
        prepared = _Callee(arg_slots, steps, [self._reader(v) for v in ops[-1].arguments])
        self._callees[name] = prepared
        return prepared

    def _prepare_call(self, op: func.CallOp) -> Step:
        """A call runs the callee's prepared steps on the caller's buffers; the
        callee's SRAM views are in the same arena (rdu-sram-alloc keeps no
        caller buffer live across a call)."""
        callee = self._callee(op)
        operands = [self._reader(v) for v in op.arguments]
        result_slots = [self._table.define(r) for r in op.res]

        def call(env: Env, context: RunContext) -> None:
            for slot, get in zip(callee.arg_slots, operands):
                env[slot] = get(env)
            run_steps(callee.steps, env, context, _WHERE)
            for slot, get in zip(result_slots, callee.results):
                env[slot] = get(env)

        return call

    def _prepare_host_call(self, op: rdu.HostCallOp) -> Step:
        """A host call reads its off-chip operand buffers and gives fresh result
        buffers (its kernel checks them against the declared types)."""
        kernel = prepare(op, _RUNNER)
        operands = [self._reader(v) for v in op.inputs]
        result_slots = [self._table.define(r) for r in op.outputs]
        single = len(result_slots) == 1

        def host_call(env: Env, context: RunContext) -> None:
            value = kernel(context, *[get(env) for get in operands])
            for slot, array in zip(result_slots, (value,) if single else value):
                env[slot] = array

        return host_call

    def _prepare_get_global(self, op: GetGlobalOp) -> None:
        name = op.global_name.root_reference.data
        if name not in self._globals:
            raise RduccError(f"{describe_op(op)} reads @{name}, which is not a 'tier.global'")
        signature = _signature(_buffer_type(op.result))
        if self._global_types.setdefault(name, signature) != signature:
            raise RduccError(f"{describe_op(op)}: @{name} is read with two different types")
        self._global_slots.setdefault(name, []).append(self._table.define(op.result))
        return None  # run() fills the slot before the first step

    def _prepare_alloc(self, op: AllocOp) -> Step | None:
        buffer = _buffer_type(op.result)
        if buffer.tier.data != Tier.SRAM:
            shape, dtype = _signature(buffer)
            slot = self._table.define(op.result)
            if all(isinstance(use.operation, DeallocOp) for use in op.result.uses):
                return None  # nothing reads or writes it: never materialized

            what = f"{buffer.tier.data.value} buffer {list(shape)}"
            nbytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
            if _written_whole_first(op):
                handing = self._handing_into(op)  # the DMA into it may hand it an SRAM buffer's array

                def alloc_unpoisoned(env: Env, context: RunContext) -> None:
                    if handing[0] is None or not handing[0].allowed:
                        env[slot] = _allocate(lambda: np.empty(shape, dtype), what)

                return alloc_unpoisoned
            if nbytes > _TEMPLATE_BYTES:

                def alloc_off_chip(env: Env, context: RunContext) -> None:
                    env[slot] = _allocate(lambda: kernels.poisoned(shape, dtype), what)

                return alloc_off_chip
            poison = kernels.poisoned(shape, dtype)  # a small buffer: a copy of the poisoned one a run

            def alloc_small_off_chip(env: Env, context: RunContext) -> None:
                env[slot] = poison.copy()

            return alloc_small_off_chip
        if op.offset is None:
            raise RduccError(
                f"{describe_op(op)}: SRAM buffer {value_name(op.result)} has no offset: the "
                "program is not placed (run rdu-sram-alloc)"
            )
        copies, start, size = op.copies, op.offset.value.data, buffer.size_in_bytes
        if self._scopes:
            self._scopes[-1].allocs.append((start, start + copies * size, op))
        views = [
            self._view(start + k * size, buffer, f"SRAM buffer {value_name(op.result)} (copy {k})")
            for k in range(copies)
        ]
        self._copies[op.result] = copies
        slot = self._table.define(op.result)
        if copies == 1:  # always the same view: bound once with the arena, no step
            self._bound.append((slot, views[0]))
            self._sram_views[op.result] = views[0]
            return self._handed_alloc(op, slot, views[0])

        def alloc_rotating(env: Env, context: RunContext) -> None:
            env[slot] = _Rotating([env[v] for v in views])

        return alloc_rotating

    def _handed_alloc(self, op: AllocOp, slot: int, view: int) -> Step | None:
        """The step of a one-copy SRAM buffer that may hand its bytes on
        (`handed_buffers.handed_dma`): a new host array each run when its
        function allows it (`_resolve_aliases`); None for any other buffer."""
        block = op.parent_block()
        if block is None or not self._scopes:
            return None
        order = self._orders.get(block)
        if order is None:
            order = self._orders[block] = {o: i for i, o in enumerate(block.ops)}
        dma = handed_dma(op, order)
        if dma is None:
            return None
        shape, dtype = _signature(_buffer_type(op.result))
        handed = HandedBuffer(op, dma, op.offset.value.data if op.offset else 0, _buffer_type(op.result).size_in_bytes,
                              slot, shape, dtype)
        handed.record(view, handed.start, handed.end - handed.start, dtype, shape)
        self.handed[op.result] = handed
        self._handing.setdefault(dma, [None])[0] = handed
        self._live_handed.append(handed)
        self._scopes[-1].handed.append(handed)

        def alloc_handed(env: Env, context: RunContext) -> None:
            if handed.allowed:
                handed.bind(env)

        return alloc_handed

    def _handing_into(self, op: AllocOp) -> list[HandedBuffer | None]:
        """A holder of the record of the SRAM buffer whose DMA out may hand its
        array to the off-chip buffer `op` (filled when that buffer is
        prepared): then `op` needs no array of its own (a second array of a
        model's logits a run, 26 MB for GPT-2, kept glibc from reusing its
        pages: each run faulted them in afresh)."""
        into = [use.operation for use in op.result.uses
                if isinstance(use.operation, DmaOp) and use.operation.dest is op.result]
        return self._handing.setdefault(into[0], [None]) if len(into) == 1 else [None]

    def _handed_dma(self, handed: HandedBuffer, source_slot: int, dest_slot: int) -> Step:
        """The DMA out of a buffer that may hand its bytes on: the destination
        is the buffer's own host array when it has one, else a copy."""
        self._live_handed.remove(handed)

        def dma_handed(env: Env, context: RunContext) -> None:
            if handed.allowed:
                env[dest_slot] = env[source_slot]
            else:
                env[dest_slot][...] = env[source_slot]

        return dma_handed

    def _prepare_dma(self, op: DmaOp) -> Step:
        src_type, dst_type = _buffer_type(op.source), _buffer_type(op.dest)
        read, write = self._reader(op.source), self._writer(op.dest)
        src_offsets = tuple(self._table.use(v) for v in op.src_offsets)
        dst_offsets = tuple(self._table.use(v) for v in op.dst_offsets)
        src_shape, dst_shape = src_type.get_shape(), dst_type.get_shape()
        strides = window_strides(op)
        if src_offsets:

            def dma_window_in(env: Env, context: RunContext) -> None:
                key = _window_key(env, src_offsets, dst_shape, src_shape, "source", strides)
                source = read(env)[key]
                np.copyto(write(env), source, casting="no")

            return dma_window_in
        if dst_offsets:

            out_slot = self._table.use(op.dest)

            def dma_window_out(env: Env, context: RunContext) -> None:
                key = _window_key(env, dst_offsets, src_shape, dst_shape, "destination", strides)
                source = read(env)
                dest = write(env)
                if not dest.flags.writeable:  # the caller's weight, written in place tile by tile
                    dest = env[out_slot] = np.array(dest)
                np.copyto(dest[key], source, casting="no")

            return dma_window_out

        source_slot, dest_slot = self._table.use(op.source), self._table.use(op.dest)
        handed = self.handed.get(op.source)
        if handed is not None and handed.dma is op:
            return self._handed_dma(handed, source_slot, dest_slot)
        if self._copies.get(op.source, 1) == 1 and op.dest in self._sram_views and self._scopes:
            return self._aliasing_dma(op, source_slot, dest_slot)
        if self._copies.get(op.source, 1) == 1 and self._copies.get(op.dest, 1) == 1:

            def dma_plain(env: Env, context: RunContext) -> None:
                if not env[dest_slot].flags.writeable:  # the caller's weight, written whole in place
                    env[dest_slot] = np.array(env[source_slot])
                    return
                env[dest_slot][...] = env[source_slot]  # same element type (the verifier's) and shape

            return dma_plain

        def dma(env: Env, context: RunContext) -> None:
            write(env)[...] = read(env)

        return dma

    def _aliasing_dma(self, op: DmaOp, source_slot: int, dest_slot: int) -> Step:
        """A whole-buffer DMA into a one-copy SRAM buffer: when its function
        allows it (`_resolve_aliases`) and the source is a caller's array
        (read-only, C-contiguous: a weight or an input, which nothing writes
        during the call), the buffer is bound to it; else copied into the
        arena as any DMA."""
        alias = _WeightAlias(op)
        self._scopes[-1].aliases.append(alias)
        self.weight_dmas.append(alias)
        view_slot = self._sram_views[op.dest]

        def dma_plain(env: Env, context: RunContext) -> None:
            source = env[source_slot]
            if alias.allowed and not source.flags.writeable and source.flags.c_contiguous:
                env[dest_slot] = source
            else:  # the arena view again (an earlier call of the function may have bound the array)
                dest = env[dest_slot] = env[view_slot]
                dest[...] = source  # same element type (the verifier's) and shape

        return dma_plain

    def _prepare_view(self, op: ViewOp) -> Step:
        read, offsets = self._reader(op.source), tuple(self._table.use(v) for v in op.offsets)
        whole, sizes = _buffer_type(op.source).get_shape(), op.window_sizes
        shape = _buffer_type(op.result).get_shape()
        slot = self._table.define(op.result)

        def view(env: Env, context: RunContext) -> None:
            window = read(env)[_window_key(env, offsets, sizes, whole, "view")]
            env[slot] = window.reshape(shape)  # contiguous: a view, no copy

        return view

    def _prepare_gather(self, op: GatherDmaOp) -> Step:
        table, write = self._reader(op.source), self._writer(op.dest)
        ids = [self._reader(index) for index in op.indices]
        expected = _signature(_buffer_type(op.dest))
        wraps = op.wraps is not None

        def gather(env: Env, context: RunContext) -> None:
            rows = kernels.gather(table(env), [read(env) for read in ids], 0, wraps)
            check_result(rows, expected, op)
            np.copyto(write(env), rows, casting="no")

        return gather

    def _prepare_scatter(self, op: ScatterDmaOp) -> Step:
        read, ids = self._reader(op.source), self._reader(op.indices)
        slot, axis, rows_only = self._table.use(op.dest), op.axis, op.rows_only
        size = _buffer_type(op.dest).get_shape()[axis]

        def scatter(env: Env, context: RunContext) -> None:
            rows = np.asarray(ids(env)).astype(np.int64, copy=False)
            if rows.size and (rows.min() < 0 or rows.max() >= size):
                raise RduccError(f"tier.scatter: a row index is out of range [0, {size}) along dim {axis}")
            dest = env[slot]
            if not dest.flags.writeable:  # the caller's input or weight: write a copy
                dest = env[slot] = np.array(dest)
            key = (slice(None),) * axis + (rows,)
            dest[key] = read(env) if rows_only else read(env)[key]

        return scatter

    def _prepare_for(self, op: scf.ForOp) -> Step:
        if op.iter_args or op.results:
            raise RduccError(f"{describe_op(op)}: loops that carry values are not supported")
        lb, ub, step = self._table.use(op.lb), self._table.use(op.ub), self._table.use(op.step)
        body = op.body.block
        iv = self._table.define(body.args[0])
        ops = list(body.ops)
        if not ops or not isinstance(ops[-1], scf.YieldOp) or ops[-1].operands:
            raise RduccError(f"{describe_op(op)}: the loop body must end in 'scf.yield' of no values")
        steps = self._prepare_ops(ops[:-1])
        constant = op.step.owner
        if isinstance(constant, arith.ConstantOp) and isinstance(constant.value, IntegerAttr):
            if constant.value.value.data <= 0:  # refused before anything runs
                raise RduccError(f"{describe_op(op)}: step {constant.value.value.data} must be > 0 "
                                 "(the loop would never end)")

        def loop(env: Env, context: RunContext) -> None:
            if env[step] <= 0:
                raise RduccError(f"step {env[step]} must be > 0 (the loop would never end)")
            for i in range(env[lb], env[ub], env[step]):
                env[iv] = i
                run_steps(steps, env, context, _WHERE)

        return loop

    def _prepare_index(self, op: Operation) -> Step:
        if isinstance(op, arith.ConstantOp):
            if not isinstance(op.value, IntegerAttr):
                raise RduccError(
                    f"{describe_op(op)}: only index and integer constants appear outside "
                    "tier.compute in a placed program"
                )
            constant = op.value.value.data
            result = self._table.define(op.result)

            def const(env: Env, context: RunContext) -> None:
                env[result] = constant

            return const
        lhs, rhs = self._table.use(op.operands[0]), self._table.use(op.operands[1])
        result = self._table.define(op.results[0])
        if isinstance(op, arith.AddiOp):

            def addi(env: Env, context: RunContext) -> None:
                env[result] = env[lhs] + env[rhs]

            return addi
        if isinstance(op, arith.SubiOp):

            def subi(env: Env, context: RunContext) -> None:
                env[result] = env[lhs] - env[rhs]

            return subi

        def muli(env: Env, context: RunContext) -> None:
            env[result] = env[lhs] * env[rhs]

        return muli

    def _prepare_compute(self, op: ComputeOp) -> Step:
        """The compute's step; the arena views made for it that fall in a
        buffer it writes that may hand its bytes on are recorded with it."""
        self._writing = [self.handed[b] for b in op.outs if b in self.handed]
        try:
            return self._prepare_compute_body(op)
        finally:
            self._writing = []

    def _prepare_compute_body(self, op: ComputeOp) -> Step:
        block = op.body.block
        name = kernel_name(op)
        # a one-copy buffer is the same array all along: its body argument (or the
        # yielded value computed into it) names the buffer's slot; the current copy
        # of a rotating buffer is bound to a slot of its own on every run
        rotating: list[tuple[int, int]] = []  # (slot bound per run, rotating buffer's slot)
        for arg, buffer in zip(block.args, op.ins):
            self._bound_slot(buffer, rotating, arg)
        out_slots = [self._bound_slot(buffer, rotating) for buffer in op.outs]  # compute writes the current copy
        terminator = block.last_op
        if not isinstance(terminator, rdu.YieldOp) or len(terminator.operands) != len(op.outs):
            raise RduccError(f"{describe_op(op)}: the body must end in 'rdu.yield' of one value per output")
        yielded = list(terminator.operands)
        # an op whose value the body yields computes straight into its (first) output buffer
        first_out: dict[SSAValue, int] = {}
        for index, value in enumerate(yielded):
            if not isinstance(value.owner, Block):
                first_out.setdefault(value, index)
        first: list[tuple[Step, Operation]] = []  # the first run's steps: each result checked
        later: list[tuple[Step, Operation]] = []  # every later run's
        # a streamed view (repeated K/V heads a product reads by address) has no SRAM
        # offset: the chip never writes it; the host materializes it in an array of its own
        streamed = streamed_views(list(block.ops)[:-1], set(yielded))
        folds = BiasFolds(op)  # a product and its bias add as one addmm (rducc.runtime.epilogues)
        norms = NormChains(op, folds)  # a softmax's or layer norm's ops as one kernel (rducc.runtime.fused_norms)
        attention = AttentionChains(op, folds, norms.skipped())  # one SDPA kernel (rducc.runtime.fused_attention)
        skipped = norms.skipped() | attention.skipped()
        # reshapes that run without a copy (rducc.runtime.views); those on their operand's bytes are layout views
        # each checked against what the fused steps and the views taken before it read and write
        views = Views(op, folds.moved() | skipped | placed_views(op), fused_steps(op, folds, norms, attention))
        # layout ops as NumPy views (rducc.runtime.layout_views)
        layout = LayoutViews(op, folds, norms, views, attention)
        elided = set(views.into.values())
        verdicts: dict[Operation, bool] = {}
        aside = {(value, id(chain)): self._host_array(value.type)  # attention operands copied aside
                 for saved in attention.saves_at().values() for value, chain in saved}
        saves = attention.saves_at()
        folded = set(folds.at_add.values())
        product_of = {add: matmul for matmul, add in folds.at_product.items()}
        constants = ConstantSteps(block)  # values of constants and shapes alone, computed once
        prepared: dict[Operation, Any] = {}  # maps' kernels made ahead (in_place_maps)
        # a folded GEMM into its product's bytes, its activation in place there (rducc.runtime.in_place_maps)
        over = over_products(folds, list(block.ops)[:-1], Placement(op), partial(_in_place_form, prepared)) \
            if folds.at_add and _sound(op, verdicts) else {}
        over = {add: activation for add, activation in over.items() if activation not in skipped | folded}
        in_place = set(over.values())
        for body_op in list(block.ops)[:-1]:
            where = f'{describe_op(body_op)} in tier.compute "{name}"'
            if len(body_op.results) != 1 or not isinstance(body_op.results[0].type, TensorType):
                raise RduccError(f"{where}: body ops must have one tensor result")
            result = body_op.results[0]
            if isinstance(body_op, rdu.ReshapeOp) and body_op in views.of_source:
                # its operand's bytes, read in its shape: no step
                source = views.of_source[body_op]
                self._table.alias(result, self._view(source, result.type, f"the value of {where}"))
                continue
            if body_op in layout.source:  # a view of its operand's array, bound every run: no copy
                viewed = self._table.alias(result, self._table.fresh())
                steps = _view_steps(view_of(body_op), self._table.use(layout.source[body_op]), viewed,
                                    tensor_signature(result.type), body_op)
                if constants.is_constant(body_op):  # dropped where nothing needs it
                    steps = (constants.note(body_op, steps[0], viewed, None, later, len(later)), steps[1])
                first.append((steps[0], body_op))
                later.append((steps[1], body_op))
                continue
            own_bytes = False  # the value's step writes its own arena bytes (not an output, a host array, a reshape's)
            if result in first_out:
                dest = out_slots[first_out[result]]
            elif result in streamed and BODY_OFFSET not in body_op.attributes or body_op in layout.aside:
                dest = self._host_array(result.type)
            elif body_op in views.into_bytes:  # its reshape's bytes (or the output buffer it is yielded to)
                dest = self._view(views.into_bytes[body_op][0], result.type, f"the value of {where}")
            else:
                own_bytes = True
                offset = body_op.attributes.get(BODY_OFFSET)
                if not isinstance(offset, IntegerAttr):
                    raise RduccError(
                        f"{where} has no '{BODY_OFFSET}': the program is not placed "
                        "(run rdu-sram-alloc)"
                    )
                dest = self._view(offset.value.data, result.type, f"the value of {where}")
            if body_op in elided:  # its producer computed the bytes: the view is the value
                self._table.alias(result, dest)
                continue
            if isinstance(body_op, rdu.MapOp) and body_op in product_of:  # computed into its product's bytes
                self._table.alias(result, self._table.use(product_of[body_op].result))
                continue
            self._table.alias(result, dest)  # later ops read the view, never the Python result
            if body_op in saves:  # an attention chain's operands, copied aside before the allocator reuses them
                pairs = [(self._table.use(value), aside[value, id(chain)]) for value, chain in saves[body_op]]
                first.append((_copies_aside(pairs), body_op))
                later.append((_copies_aside(pairs), body_op))
            if body_op in folded or body_op in skipped:  # computed by a later op's fused step
                continue
            linear = None
            if isinstance(body_op, rdu.MatmulOp) and body_op in attention.at_product:
                fresh = own_bytes and _read_by_slot(result, views) and _sound(op, verdicts)
                shape = tensor_signature(result.type)[0] if fresh else None
                linear = self._attention_step(attention.at_product[body_op], dest, aside, shape)
            elif isinstance(body_op, rdu.MapOp) and body_op in norms.at_last:
                fresh = own_bytes and _read_by_slot(result, views) and _sound(op, verdicts)
                linear = self._norm_step(norms.at_last[body_op], dest, fresh)
            elif isinstance(body_op, rdu.MapOp) and body_op in folds.at_add:
                fresh = own_bytes and _read_by_slot(result, views) and _sound(op, verdicts)
                if body_op in over and own_bytes:  # into its product's bytes
                    dest = self._table.alias(result, self._view(_offset(folds.at_add[body_op]), result.type,
                                                                f"the value of {where}"))
                linear = self._linear_step(folds.at_add[body_op], folds.bias[body_op], dest, fresh)
            elif isinstance(body_op, Product) and body_op in folds.at_product:
                bias_add = folds.at_product[body_op]
                fresh = own_bytes and _read_by_slot(result, views) and _read_by_slot(bias_add.results[0], views) \
                    and _sound(op, verdicts)
                linear = self._linear_step(body_op, folds.bias[bias_add], dest, fresh)
            elif isinstance(body_op, rdu.ConvOp) and body_op.transposed is None and own_bytes \
                    and _read_by_slot(result, views) and _sound(op, verdicts):
                bias = None if body_op.bias is None else self._table.use(body_op.bias)
                linear = self._conv_step(body_op, self._table.use(body_op.input), self._table.use(body_op.weight),
                                         bias, dest, fresh=True)
            if linear is not None:
                first.append((linear, body_op))
                later.append((linear, body_op))
                continue
            kernel = prepared.pop(body_op, None) or prepare(body_op, _RUNNER)
            operands = tuple(self._table.use(v) for v in body_op.operands)
            if body_op in in_place:  # over its input's bytes, the product's
                step = in_place_step(kernel.in_place, into_of(kernel), operands[0], dest)  # type: ignore[union-attr]
                first.append((step, body_op))
                later.append((step, body_op))
                continue
            checked, step = _body_steps(kernel, operands, dest, tensor_signature(result.type), body_op)
            if isinstance(body_op, rdu.MapOp) and own_bytes and _read_by_slot(result, views) and _sound(op, verdicts):
                # into a new array in its permuted operand's memory order (rducc.runtime.ordered_maps)
                checked = ordered(into_of(kernel), checked, operands, dest, *tensor_signature(result.type),
                                  later, len(later))
            if constants.is_constant(body_op):  # computed once (rducc.runtime.constant_values)
                bindable = own_bytes and _read_by_slot(result, views) and _sound(op, verdicts)
                checked = constants.note(body_op, checked, dest, bindable, later, len(later))
            elif isinstance(body_op, rdu.GatherOp) and len(body_op.indices) == 1 \
                    and body_op.indices[0] in constants.constant:  # a roll: two slice copies
                checked = rolled_gather(checked, operands[0], operands[1], dest, body_op.dim.value.data,
                                        body_op.wraps is not None, body_op, later, len(later))
            first.append((checked, body_op))
            later.append((step, body_op))
        constants.decide()
        # yields not computed in place: block arguments, a value yielded twice
        copies = [
            (self._table.use(value), out_slots[index])
            for index, value in enumerate(yielded)
            if first_out.get(value) != index
        ]
        return _compute_step(first, later, rotating, copies)

    def _linear_step(self, matmul: Product, bias_value: SSAValue, dest: int, fresh: bool = False) -> Step | None:
        """The folded step computing the product and adding `bias_value`
        (`kernels.linear`, `kernels.conv` with its bias; `fresh`: as `_conv_step`)."""
        lhs, rhs = self._table.use(matmul.operands[0]), self._table.use(matmul.operands[1])
        bias = self._table.use(bias_value)
        if isinstance(matmul, rdu.ConvOp):
            return self._conv_step(matmul, lhs, rhs, bias, dest, fresh)
        transposed = matmul.transpose_rhs is not None

        def linear(env: Env, context: RunContext) -> None:
            kernels.linear(env[lhs], env[rhs], env[bias], transposed, env[dest])

        return linear

    @staticmethod
    def _conv_step(conv: rdu.ConvOp, source: int, weight: int, bias: int | None, dest: int,
                   fresh: bool = False) -> Step | None:
        """A convolution's step (adding its bias too where given: `kernels.conv`).

        With `fresh` (the value, in its own arena bytes, read through its slot
        alone, in a compute whose placement verifies: `_norm_step`'s
        conditions) a convolution PyTorch's kernel runs (`_fresh_conv`) binds
        the kernel's own output array to the slot every run instead of copying
        it into the arena (oneDNN writes no given array: a 1x96x56x56 result,
        1.2 MB, a copy of about a tenth of the convolution). Without a bias
        and where that does not hold, None: the op's plain kernel runs."""
        stride, padding, dilation = (tuple(a.get_values()) for a in (conv.stride, conv.padding, conv.dilation))
        groups, dtype = conv.groups.value.data, tensor_signature(conv.result.type)[1]
        plan = kernels.conv_plan(tensor_signature(conv.input.type)[0], tensor_signature(conv.weight.type)[0],
                                 stride, padding, dilation, groups, dtype)
        if fresh and _fresh_conv(conv, plan):

            def fresh_conv(env: Env, context: RunContext) -> None:
                env[dest] = kernels.conv(env[source], env[weight], stride, padding, dilation, groups, dtype, None,
                                         plan, None if bias is None else env[bias])

            return fresh_conv
        if bias is None:
            return None

        def conv_with_bias(env: Env, context: RunContext) -> None:
            kernels.conv(env[source], env[weight], stride, padding, dilation, groups, dtype, env[dest], plan,
                         env[bias])

        return conv_with_bias

    def _norm_step(self, chain: Chain, dest: int, fresh: bool = False) -> Step:
        """The last map's step computing its whole chain (`kernels.softmax`, `kernels.layer_norm`).

        With `fresh` (a layer norm whose value is read through its slot alone,
        in a compute whose placement verifies) the value is the array ATen's
        kernel returns, bound to the slot every run: ATen has no layer norm
        writing into a given array (its `out=` form computes apart and
        copies), and that copy was a third of the step (a 1.2 MB value: 143
        against 221 us). Nothing reads the value's arena bytes then, and the
        verifier proved no other value meets them while it is live."""
        source = self._table.use(chain.x)
        if isinstance(chain, LayerNormChain):
            weight, bias = (None if v is None else self._table.use(v) for v in (chain.weight, chain.bias))
            dims, eps = chain.dims, chain.eps
            if fresh:

                def fresh_layer_norm(env: Env, context: RunContext) -> None:
                    env[dest] = kernels.layer_norm(env[source], dims, None if weight is None else env[weight],
                                                   None if bias is None else env[bias], eps, None)

                return fresh_layer_norm

            def layer_norm(env: Env, context: RunContext) -> None:
                kernels.layer_norm(env[source], dims, None if weight is None else env[weight],
                                   None if bias is None else env[bias], eps, env[dest])

            return layer_norm
        dim, log = chain.dim, chain.log
        zeroed = None if chain.zeroed is None else self._table.use(chain.zeroed)

        def softmax(env: Env, context: RunContext) -> None:
            kernels.softmax(env[source], dim, log, env[dest])
            if zeroed is not None and env[zeroed].any():
                np.copyto(env[dest], 0, where=env[zeroed])

        return softmax

    def _attention_step(self, chain: AttentionChain, dest: int, aside: dict[tuple[SSAValue, int], int],
                        fresh: tuple[int, ...] | None = None) -> Step:
        """The second product's step computing its whole chain (`kernels.attention`),
        in the softmax input's batch dims; the biases summed in its shape, but
        those that are zero throughout this run: transformers materializes an
        all-visible mask under export (`arange >= 0`, 0 where True), which eager
        never passes, and the kernel reads a mask block by block (ViT-B/16: 0.1
        ms a layer); adding +-0 changes no score's softmax. An operand copied
        aside (`aside`: (value, chain's id) -> slot) is read there. With
        `fresh`, the value's shape (`_norm_step`'s conditions hold), the value is the kernel's own array,
        bound to the slot every run: its memory is in `[..., L, heads, Ev]`
        order, which the heads' merge after it (`transpose(1, 2)` and a reshape)
        reads in order, where a copy into the arena transposed it twice."""

        def read(value: SSAValue) -> int:
            key = (value, id(chain))
            return aside[key] if key in aside else self._table.use(value)

        (q, _), (k, _) = ((read(x), r) for x, r in chain.reads[:2])
        v = read(chain.v)
        q_shape, k_shape = (tensor_signature(x.type)[0] for x in (chain.q, chain.k))
        biases = [(read(b), stage) for b, stage in chain.biases]
        batch, rows = chain.shape[:-2], chain.shape[-2:]
        k_t, v_t, scale, safe, shape = not chain.k_transposed, chain.v_transposed, chain.scale, chain.safe, chain.shape

        def heads(x: np.ndarray, swap: bool) -> np.ndarray:
            x = x.swapaxes(-1, -2) if swap else x
            return x.reshape(*batch, *x.shape[-2:])

        def attention(env: Env, context: RunContext) -> None:
            masks = [env[b] if stage == shape else np.broadcast_to(env[b], stage).reshape(shape)
                     for b, stage in biases if adds_something(env[b])]
            mask = None if not masks else masks[0] if len(masks) == 1 else sum(masks[1:], masks[0])
            query = env[q].reshape(q_shape).reshape(*batch, rows[0], -1)
            key = heads(env[k].reshape(k_shape), k_t)
            if fresh is not None:
                env[dest] = kernels.attention(query, key, heads(env[v], v_t), mask, scale, safe, None).reshape(fresh)
            else:
                kernels.attention(query, key, heads(env[v], v_t), mask, scale, safe, env[dest])

        if fresh is not None:
            attention.__name__ = "fresh_attention"
        return attention

    def _bound_slot(self, buffer: SSAValue, rotating: list[tuple[int, int]], arg: SSAValue | None = None) -> int:
        """The slot a compute reads `buffer` from (`arg`, its body argument, names it too):
        the buffer's own, or for a rotating buffer a slot its current copy is bound to."""
        slot = self._table.use(buffer)
        if self._copies.get(buffer, 1) > 1:
            bound = self._table.fresh() if arg is None else self._table.define(arg)
            rotating.append((bound, slot))
            return bound
        return slot if arg is None else self._table.alias(arg, slot)

    # ------------------------------------------------------------------
    # running
    # ------------------------------------------------------------------

    def _execute(self, values: list[np.ndarray], bound: list[np.ndarray], context: RunContext) -> list[np.ndarray]:
        env: Env = list(self._arena_env())
        for slot, value in zip(self._input_slots, values):
            env[slot] = value
        for slots, value in zip(self._global_slots.values(), bound):  # self.weights' order
            for slot in slots:
                env[slot] = value
        run_steps(self._steps, env, context, _WHERE)
        return [_result(get(env), handed) for get, handed in zip(self._results, self._handed)]

    def _arena_env(self) -> Env:
        """The value table with every SRAM view bound, made on the first run.

        The arena is allocated once per program and poisoned (NaN in floats,
        out-of-range values in integers) before its first use, so a read of SRAM that
        nothing wrote shows up; the program is deterministic, so later runs,
        which reuse the arena, read nothing stale that the first did not.
        """
        if self._arena_template is None:
            env: Env = [None] * self._table.size
            if self._views:
                assert self.sram_bytes is not None
                # up to the highest byte a view reaches, never the whole capacity; calloc'd
                # and 64-byte aligned, so only the views' pages (poisoned here) are ever touched
                arena = _allocate(lambda: _aligned_zeros(self._arena_used), "SRAM arena")
                for slot, offset, nbytes, dtype, shape in self._views:
                    kernels.fill_poison(arena[offset : offset + nbytes])
                    env[slot] = arena[offset : offset + nbytes].view(dtype).reshape(shape)
                for slot, view in self._bound:
                    env[slot] = env[view]
            for slot, dtype, shape in self._host_arrays:
                env[slot] = kernels.poisoned(shape, dtype)
            self._arena_template = env
        return self._arena_template


_TEMPLATE_BYTES = 1 << 16
"""An off-chip buffer up to this size is a copy of a poisoned array made once
(one NumPy call a run); a larger one is poisoned afresh (no second copy kept)."""

_ARENA_DTYPE = np.dtype(np.uint8)


def _aligned_zeros(size: int) -> np.ndarray:
    """`size` zero bytes starting at a huge-page boundary (an SRAM row boundary
    too, as SRAM offsets are, so every view is aligned: what BLAS and oneDNN
    kernels read fastest; calloc: untouched pages stay free), advised as
    transparent huge pages (`_advise_huge_pages`)."""
    raw = np.zeros(size + _HUGE_PAGE, _ARENA_DTYPE)
    skip = -raw.ctypes.data % _HUGE_PAGE
    assert _HUGE_PAGE % SRAM_ROW_BYTES == 0
    arena = raw[skip : skip + size]
    _advise_huge_pages(arena)
    return arena


_HUGE_PAGE = 1 << 21
"""x86-64's and arm64's transparent huge page (2 MiB). Host tuning, not a chip figure."""


def _advise_huge_pages(array: np.ndarray) -> None:
    """Ask Linux to back `array`'s untouched pages with huge pages
    (`madvise(MADV_HUGEPAGE)`: where transparent huge pages are `madvise`-only,
    as on the development machine, nothing is otherwise). Every call walks the
    whole arena (tens to hundreds of MB at full size), and its 4 KiB pages' TLB
    misses cost 1-3% of the call (same-process A/B, BENCHMARKS.md). Elsewhere,
    or where the kernel refuses, nothing changes."""
    madvise = getattr(_LIBC, "madvise", None) if _LIBC is not None else None
    if madvise is None or not sys.platform.startswith("linux") or array.nbytes < _HUGE_PAGE:
        return
    madvise(ctypes.c_void_p(array.ctypes.data), ctypes.c_size_t(array.nbytes), _MADV_HUGEPAGE)


_MADV_HUGEPAGE = 14
"""Linux's `MADV_HUGEPAGE` (asm-generic/mman-common.h)."""

_LIBC = ctypes.CDLL(None) if sys.platform.startswith("linux") else None


def _written_whole_first(alloc: AllocOp) -> bool:
    """Whether the first op of the alloc's block that touches its buffer (itself
    or an op nested in it) is a whole-buffer `tier.dma` into it (no offsets
    on the destination) from another buffer: then no op can read a byte of the
    buffer before it is written, and poisoning it would catch nothing. Any
    other first use (a window or row write, a loop, a call, a read) keeps the
    poison, so a read of bytes nothing wrote still shows as NaN or fails the
    bounds check."""
    buffer, block = alloc.result, alloc.parent_block()
    if block is None:
        return False
    touching: dict[Operation, set[Operation]] = {}  # each op of the block -> its users nested in it (or itself)
    for use in buffer.uses:
        ancestor: Operation | None = use.operation
        while ancestor is not None and ancestor.parent_block() is not block:
            ancestor = ancestor.parent_op()
        if ancestor is not None:
            touching.setdefault(ancestor, set()).add(use.operation)
    op = alloc.next_op  # the buffer's uses follow its alloc: walk from it, not the whole block per alloc
    while op is not None and op not in touching:
        op = op.next_op
    if op is None:
        return False
    return (touching[op] == {op} and isinstance(op, DmaOp) and op.dest is buffer and not op.dst_offsets
            and op.source is not buffer)


def _allocate(make: Callable[[], np.ndarray], what: str) -> np.ndarray:
    """A host array for the program's memory, or one error line when the host lacks it."""
    try:
        return make()
    except MemoryError as error:
        raise RduccError(f"the {what} does not fit this machine's memory ({error})") from None


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


def adds_something(bias: np.ndarray) -> bool:
    """Whether an additive bias (an attention mask) has an element other than
    +-0 (NaN counts): one that has none adds nothing to a score's softmax."""
    return bool(bias.any())


def _compute_step(
    first: list[tuple[Step, Operation]],
    later: list[tuple[Step, Operation]],
    rotating: list[tuple[int, int]],
    copies: list[tuple[int, int]],
) -> Step:
    """A `tier.compute`: binds the current copies of its rotating buffers, runs
    its body's steps (the `first` ones until a run of them has succeeded, which
    check every result and record the slots each reads and binds, then the
    `later` ones, which let go of each bound array after its last reader:
    `rducc.runtime.released_slots`) and copies the yields not computed in
    place into their outputs."""
    current: list[list[tuple[Step, Operation]] | None] = [None]
    keep = {slot for pair in copies for slot in pair}

    def compute(env: Env, context: RunContext) -> None:
        for slot, buffer in rotating:
            env[slot] = env[buffer].current()
        steps = current[0]
        if steps is None:
            recorder = Recorder(env)
            run_steps(recorded(first, recorder), recorder, context, _WHERE)
            current[0] = released(later, recorder.releases(env, keep))  # env: the body's start
            env[:] = recorder.copy()
        else:
            run_steps(steps, env, context, _WHERE)
        for source, out in copies:
            assign(env[out], env[source])

    return compute


def _body_steps(
    kernel: Callable[..., Any],
    operands: tuple[int, ...],
    dest: int,
    expected: Signature,
    op: Operation,
) -> tuple[Step, Step]:
    """Compute one body value straight into its arena view (or output buffer),
    the slot `dest` (the value's own slot too): the kernel's `into`
    (`registry.into_of`) writes there, no temporary copied after the fact; later
    ops read the view. Two steps: the first run's, which also checks the plain
    kernel's result against the IR's shape and dtype, and every later run's
    (shapes are static: the first run's check holds for every run)."""
    into = into_of(kernel)
    own_into = getattr(kernel, "into", None) is not None

    def checked(env: Env, context: RunContext) -> None:
        args = [env[i] for i in operands]
        value = kernel(context, *args)
        check_result(value, expected, op)
        if own_into:
            into(context, env[dest], *args)
        else:  # the plain result, checked, is what `into` would assign
            env[dest][...] = value

    return checked, _into_step(into, operands, dest)


def _copies_aside(pairs: list[tuple[int, int]]) -> Step:
    """A step copying each (source slot, aside slot)'s array into the aside
    one (`elementwise.assign`: torch's copy over its pool from
    `TORCH_COPY_ELEMENTS` elements at more than one thread, as the runtime's
    other layout copies; NumPy's copy ran on the calling thread alone)."""

    def copy_aside(env: Env, context: RunContext) -> None:
        for source, kept in pairs:
            assign(env[kept], env[source])  # a layout copy: on torch's pool at more than one thread

    return copy_aside


def _view_steps(view: View, source: int, dest: int, expected: Signature, op: Operation) -> tuple[Step, Step]:
    """Bind the slot `dest` to `view` of the array in `source`
    (`rducc.runtime.layout_views`): the first run's step checks the view's
    shape and dtype against the IR, every later run's only binds it."""

    def checked(env: Env, context: RunContext) -> None:
        env[dest] = view(env[source])
        check_result(env[dest], expected, op)

    def bind(env: Env, context: RunContext) -> None:
        env[dest] = view(env[source])

    return checked, bind


def _into_step(into: Callable[..., object], operands: tuple[int, ...], dest: int) -> Step:
    """`into(context, env[dest], *operands)`, spelled out for up to three
    operands (no argument list built on every run)."""
    if len(operands) == 1:
        (a,) = operands

        def step1(env: Env, context: RunContext) -> None:
            into(context, env[dest], env[a])

        return step1
    if len(operands) == 2:
        a, b = operands

        def step2(env: Env, context: RunContext) -> None:
            into(context, env[dest], env[a], env[b])

        return step2
    if len(operands) == 3:
        a, b, c = operands

        def step3(env: Env, context: RunContext) -> None:
            into(context, env[dest], env[a], env[b], env[c])

        return step3

    def step(env: Env, context: RunContext) -> None:
        into(context, env[dest], *[env[i] for i in operands])

    return step


def _sound(op: Operation, verdicts: dict[Operation, bool]) -> bool:
    """`op` (a `tier.alloc` or `tier.compute`) passes its verifier: no SRAM
    value overlaps its buffer (or its body values) while live."""
    if op not in verdicts:
        try:
            op.verify_()
            verdicts[op] = True
        except VerifyException:
            verdicts[op] = False
    return verdicts[op]


def _in_place_form(prepared: dict[Operation, Any], op: rdu.MapOp) -> Any:
    """A map's in-place form (`.in_place` of its kernel, made once into `prepared`), or None."""
    if op not in prepared:
        prepared[op] = prepare(op, _RUNNER)
    return getattr(prepared[op], "in_place", None)


def _offset(op: Operation) -> int:
    """A placed body op's arena offset."""
    offset = op.attributes.get(BODY_OFFSET)
    if not isinstance(offset, IntegerAttr):
        raise RduccError(f"{describe_op(op)} has no '{BODY_OFFSET}': the program is not placed (run rdu-sram-alloc)")
    return offset.value.data


def _fresh_conv(conv: rdu.ConvOp, plan: kernels.ConvPlan) -> bool:
    """The convolution runs PyTorch's kernel (`kernels.conv_plan`), whose new
    output array may be the value itself (`PlacedProgram._conv_step`): its
    operands and result are of one f32/f64 type."""
    types = {tensor_signature(v.type)[1] for v in (conv.input, conv.weight, conv.result)}
    return plan.path == "torch" and len(types) == 1 and types <= {np.dtype(np.float32), np.dtype(np.float64)}


def _read_by_slot(value: SSAValue, views: Views) -> bool:
    """Every reader of the body value reads it through its slot: none is a
    reshape whose readers read its operand's arena bytes (`Views.of_source`),
    so the slot may hold an array outside the arena."""
    return not any(use.operation in views.of_source for use in value.uses)


def _fresh_each_run(value: SSAValue, returned: Sequence[SSAValue]) -> bool:
    """`value`, returned once by `@forward`, is an off-chip `tier.alloc` of one
    copy: its step makes a new array every run (`_prepare_alloc`), which the
    run can hand to the caller instead of a copy (a model's logits are tens
    of MB a call)."""
    owner = value.owner
    return isinstance(owner, AllocOp) and _buffer_type(value).tier.data != Tier.SRAM and owner.copies == 1 \
        and sum(v is value for v in returned) == 1


def _result(array: np.ndarray, handed: bool) -> np.ndarray:
    """A returned buffer's array for the caller: the array itself where it is
    one the run made (`_fresh_each_run`, and the array owns its writable
    memory: no caller's read-only weight or input, no arena view), else a copy."""
    if handed and array.flags.owndata and array.flags.writeable:
        return array
    return np.array(array)


def _only_reads(use: Use, dma: DmaOp) -> bool:
    """`use` of the buffer `dma` fills is `dma` itself or only reads the buffer."""
    user, buffer = use.operation, dma.dest
    if user is dma:
        return dma.source is not buffer
    if isinstance(user, DmaOp):
        return user.dest is not buffer
    if isinstance(user, ComputeOp):
        return buffer not in user.outs
    return isinstance(user, DeallocOp)


_TOP_LEVEL: dict[type[Operation], Callable[[PlacedProgram, Any], Step | None]] = {
    GetGlobalOp: PlacedProgram._prepare_get_global,
    AllocOp: PlacedProgram._prepare_alloc,
    DeallocOp: PlacedProgram._prepare_dealloc,
    DmaOp: PlacedProgram._prepare_dma,
    ViewOp: PlacedProgram._prepare_view,
    GatherDmaOp: PlacedProgram._prepare_gather,
    ScatterDmaOp: PlacedProgram._prepare_scatter,
    ComputeOp: PlacedProgram._prepare_compute,
    scf.ForOp: PlacedProgram._prepare_for,
    arith.ConstantOp: PlacedProgram._prepare_index,
    arith.AddiOp: PlacedProgram._prepare_index,
    arith.SubiOp: PlacedProgram._prepare_index,
    arith.MuliOp: PlacedProgram._prepare_index,
    func.CallOp: PlacedProgram._prepare_call,
    rdu.HostCallOp: PlacedProgram._prepare_host_call,
}
"""How the interpreter prepares each op it runs at the top level (outside tier.compute)."""

for _op_class in (GetGlobalOp, AllocOp, DeallocOp, DmaOp, ViewOp, GatherDmaOp, ScatterDmaOp, ComputeOp):
    handled_structurally(_op_class, "the placed-program interpreter moves buffers and runs bodies itself")


__all__ = ["PlacedProgram"]
