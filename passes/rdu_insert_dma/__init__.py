"""`rdu-insert-dma`: make every byte's movement explicit (level 3, memory).

Values cross kernels in HBM, unless a value is read only by the next kernel
and it fits the SRAM beside both kernels' working sets (`keep_on_chip`, off
at -O0, the unfused baseline; see `kept_on_chip`). A kept value stays in an
SRAM buffer of its whole shape: an untiled kernel's output buffer, or one a
tiled kernel writes tile by tile (`tier.dma %o_t -> %kept[%off, ...]`, an
SRAM-to-SRAM copy the cost model counts as SRAM traffic); the next kernel
reads it in place when it does not tile it, else copies its windows into its
tile buffers. Each tiled `rdu.kernel` becomes, in @forward:

    %out  = tier.alloc : !tier.buffer<hbm, ...>          output crossing kernels
    %x_t  = tier.alloc buffers 2 : !tier.buffer<sram, ...>   tiled input, double-buffered
    %w_s  = tier.alloc : !tier.buffer<sram, ...>          untiled input, resident
    %o_t  = tier.alloc : !tier.buffer<sram, ...>          output tile
    tier.dma %w -> %w_s                                   untiled inputs, once
    scf.for %i = %c0 to %cT step %c1 {                    (no loop when T = 1)
      tier.dma %x[%off, ...] -> %x_t                      tile in
      tier.compute "k3" ins(%x_t, %w_s) outs(%o_t) {...}  the kernel body on tiles
      tier.dma %o_t -> %out[%off, ...]                    tile out
    }
    tier.dealloc ...

A table read only by an embedding gather stays off chip: `tier.gather`
brings in just the indexed rows. Weights come from `tier.get_global` in the
tier `rdu-place-tiers` chose; user inputs and results are HBM buffers.

An update of a buffer or input that replaces some of its rows (a static KV
cache's `index_copy_`) is written back in place, those rows only, with
`tier.scatter` (passes/rdu_insert_dma/write_in_place.py says when).

An `rdu.host_call` (an op run on the host CPU) stays between kernels, on the
off-chip buffers of its operands, and gives HBM buffers: nothing of it is in
SRAM, so the kernel before it writes its operands to HBM.

An outlined layer (`rdu-outline-layers`) is lowered once, before its
callers: every argument stays an argument (weights in the tier recorded on
the parameter, other values in HBM), and each `func.call` of it becomes a
call on its arguments' buffers. No value stays in SRAM across a call.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import ClassVar

from xdsl.context import Context
from xdsl.dialects import arith, func, scf
from xdsl.dialects.builtin import (
    ArrayAttr,
    DenseArrayBase,
    DictionaryAttr,
    FunctionType,
    IndexType,
    IntegerAttr,
    LocationAttr,
    ModuleOp,
    TensorType,
    i64,
)
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue
from xdsl.rewriter import Rewriter

from rducc.diagnostics import LocatedError
from rducc.dialects import contracts
from rducc.dialects.contracts import (
    Level,
    TilePlanAttr,
    arg_attrs,
    global_of,
    is_input,
    is_outlined,
    module_target,
    owned_rows,
    set_owned_rows,
    set_tiles,
    tile_plan_of,
)
from rducc.dialects.liveness import last_read
from rducc.dialects.program import callees_first, functions, kernel_name
from rducc.dialects.rdu.dataflow import GatherOp, HostCallOp, KernelOp, ReshapeOp, SliceOp, YieldOp
from rducc.dialects.saved import Placement, copy_phase, result_placement
from rducc.dialects.shapes import value_bytes
from rducc.dialects.tier import (
    AllocOp,
    BufferType,
    ComputeOp,
    DeallocOp,
    DmaOp,
    GatherDmaOp,
    GetGlobalOp,
    GlobalOp,
    Tier,
    TierAttr,
    ViewOp,
    is_contiguous_window,
)
from rducc.errors import RduccError
from rducc.model.kernel_model import (
    Group,
    TilePlan,
    Window,
    aligned,
    candidate_loops,
    gathered_inputs,
    kernel_group,
    slice_window,
    windowed_inputs,
    working_set,
)
from rducc.passes.common import RduPass
from rducc.passes.rdu_insert_dma.write_in_place import whole_positions, write_back_in_place
from rducc.targets import Target


def _tensor(value: SSAValue) -> TensorType:
    assert isinstance(value.type, TensorType)
    return value.type


def _tiled_shape(tensor: TensorType, dim: int, size: int) -> list[int]:
    shape = list(tensor.get_shape())
    if dim >= 0:
        shape[dim] = size
    return shape


def _buffer(tier: Tier, tensor: TensorType, dim: int = -1, size: int = 0) -> BufferType:
    return BufferType(tier, _tiled_shape(tensor, dim, size), tensor.element_type)


@dataclass
class _Emitter:
    """Appends ops to a block, at one location."""

    block: Block
    location: LocationAttr

    def emit(self, op: Operation) -> Operation:
        op.location = self.location
        self.block.add_op(op)
        return op

    def index(self, value: int) -> SSAValue:
        return self.emit(arith.ConstantOp(IntegerAttr(value, IndexType()))).results[0]


@dataclass
class _KernelPlan:
    """A kernel's recorded tiling, with the tiled dim of every body value."""

    count: int
    size: int
    tiled: dict[SSAValue, int] = field(default_factory=dict)


def _plan_attr(kernel: KernelOp) -> TilePlanAttr:
    """The kernel's `rdu.tile_plan`, or a located error when rdu-tile has not run."""
    plan = tile_plan_of(kernel)
    if plan is None:
        raise LocatedError(kernel, f"kernel {kernel_name(kernel)} has no '{contracts.TILE_PLAN}': run rdu-tile first")
    return plan


def _recorded_plan(kernel: KernelOp, group: Group) -> _KernelPlan:
    """The tiling rdu-tile recorded, matched to a parallel class of the body."""
    recorded = _plan_attr(kernel)
    count, size = recorded.tiles.data, recorded.size.data
    if count == 1:
        return _KernelPlan(1, 0)
    wanted = list(recorded.outputs)
    for extent, dims in candidate_loops(group):
        if extent == count * size and [dims.get(v, -1) for v in group.outputs] == wanted:
            return _KernelPlan(count, size, dims)
    raise LocatedError(kernel, f"kernel {kernel_name(kernel)}: its recorded tiling matches no parallel dimension")


def _window(rank: int, dim: int, offset: SSAValue, zero: SSAValue) -> list[SSAValue]:
    return [offset if d == dim else zero for d in range(rank)]


def _loaded_type(value: SSAValue, plan: _KernelPlan, windows: Mapping[SSAValue, Window]) -> TensorType:
    """The tensor of an input as it sits in SRAM: its window (or whole), tiled."""
    tensor = _tensor(value)
    window = windows.get(value)
    if window is not None:
        tensor = TensorType(tensor.element_type, window.sizes)
    return TensorType(tensor.element_type, _tiled_shape(tensor, plan.tiled.get(value, -1), plan.size))


def _rebase_slices(block: Block, windows: Mapping[SSAValue, Window]) -> None:
    """Make each slice of a windowed input (a block argument now holding only its
    window) index the window instead of the whole input."""
    for op in block.ops:
        if isinstance(op, SliceOp) and op.input in windows:
            offsets, strides = windows[op.input].rebased(op)
            op.offsets = DenseArrayBase.from_list(i64, offsets)
            op.strides = DenseArrayBase.from_list(i64, strides)


def _compute_body(
    kernel: KernelOp,
    group: Group,
    plan: _KernelPlan,
    gathered: dict[SSAValue, GatherOp],
    loaded: list[SSAValue],
    windows: Mapping[SSAValue, Window],
) -> Region:
    """The kernel body on tiles: loaded inputs (or their windows) and gathered rows are
    block arguments."""
    hoisted = list(gathered.values())
    arg_types = [_loaded_type(v, plan, windows) for v in loaded] + [
        TensorType(
            _tensor(g.results[0]).element_type,
            _tiled_shape(_tensor(g.results[0]), plan.tiled.get(g.results[0], -1), plan.size),
        )
        for g in hoisted
    ]
    block = Block(arg_types=arg_types)
    mapping: dict[SSAValue, SSAValue] = dict(zip(loaded, block.args[: len(loaded)]))
    mapping.update(zip((g.results[0] for g in hoisted), block.args[len(loaded) :]))
    for old_value, new_value in mapping.items():
        new_value.name_hint = old_value.name_hint
    for op in kernel.body.block.ops:
        if op in hoisted:
            continue
        block.add_op(op.clone(value_mapper=mapping))
    _rebase_slices(block, {mapping[v]: w for v, w in windows.items() if v in mapping})
    for value, dim in plan.tiled.items():
        new = mapping.get(value)
        if new is None or new in block.args:
            continue
        tensor = _tensor(new)
        Rewriter.replace_value_with_new_type(new, TensorType(tensor.element_type, _tiled_shape(tensor, dim, plan.size)))
    return Region(block)


def _sram_name(value: SSAValue) -> str | None:
    """`%x_sram` for the SRAM copy of `%x`."""
    return f"{value.name_hint}_sram" if value.name_hint else None


def _is_sram(value: SSAValue) -> bool:
    return isinstance(value.type, BufferType) and value.type.tier.data == Tier.SRAM


def _alloc(
    out: _Emitter, tier: Tier, value: SSAValue, dim: int, size: int, copies: int = 1, window: Window | None = None
) -> SSAValue:
    tensor = _tensor(value) if window is None else TensorType(_tensor(value).element_type, window.sizes)
    buffer = out.emit(AllocOp(_buffer(tier, tensor, dim, size), buffers=copies)).results[0]
    if tier == Tier.SRAM:
        buffer.name_hint = _sram_name(value)
    return buffer


def _output_tier(kernel: KernelOp, index: int) -> Tier:
    """Where a kernel's output crossing kernels lives: HBM, or DDR when
    `rdu-place-saved` spilled it (a saved value or gradient of a training step)."""
    return Tier.DDR if result_placement(kernel, index) == Placement.DDR else Tier.HBM


def lower_kernel(
    kernel: KernelOp, env: dict[SSAValue, SSAValue], out: _Emitter, keep: frozenset[int] = frozenset()
) -> list[SSAValue]:
    """Emit the memory-level program of one kernel.

    Inputs whose value is already an SRAM buffer (kept on chip by the kernel
    before) are read in place; outputs whose index is in `keep` stay in their
    SRAM buffer for the next kernel. Returns, per output, the buffer holding it.
    """
    group = kernel_group(kernel)
    plan = _recorded_plan(kernel, group)
    gathered = gathered_inputs(group)
    outer: dict[SSAValue, SSAValue] = {arg: env[value] for arg, value in zip(kernel.body.block.args, kernel.inputs)}
    loaded = [v for v in group.inputs if v not in gathered]
    looped = plan.count > 1

    def dim(value: SSAValue) -> int:
        return plan.tiled.get(value, -1)

    def copies(value: SSAValue) -> int:
        return 2 if looped and dim(value) >= 0 else 1

    def in_place(value: SSAValue) -> bool:
        return _is_sram(outer[value]) and not (looped and dim(value) >= 0)

    windows = {v: w for v, w in windowed_inputs(group).items() if v in loaded and not in_place(v)}
    sram_in = {
        v: outer[v] if in_place(v) else _alloc(out, Tier.SRAM, v, dim(v), plan.size, copies(v), windows.get(v))
        for v in loaded
    }
    sram_gathered = {
        g: _alloc(out, Tier.SRAM, g.results[0], dim(g.results[0]), plan.size, copies(g.results[0]))
        for g in gathered.values()
    }
    hbm_out = {i: _alloc(out, _output_tier(kernel, i), v, -1, 0) for i, v in enumerate(group.outputs) if i not in keep}
    kept_whole = {i: _alloc(out, Tier.SRAM, group.outputs[i], -1, 0) for i in sorted(keep) if looped}
    sram_out = [_alloc(out, Tier.SRAM, v, dim(v), plan.size) for v in group.outputs]
    drained = {**hbm_out, **kept_whole}

    def gather_dmas(emitter: _Emitter, tiled: bool) -> None:
        for table, gather in gathered.items():
            if any(dim(index) >= 0 for index in gather.indices) == tiled:
                dma = GatherDmaOp(outer[table], [sram_in[index] for index in gather.indices],
                                  sram_gathered[gather], gather.wraps is not None)
                if (owned := owned_rows(gather)) is not None:
                    set_owned_rows(dma, *owned)
                emitter.emit(dma)

    def dma_in(emitter: _Emitter, value: SSAValue, offset: SSAValue | None, zero: SSAValue | None = None) -> None:
        """The DMA of an input (its tile at `offset` when tiled), only its window when it has one."""
        window = windows.get(value)
        rank = len(_tensor(value).get_shape())
        if window is None and offset is None:
            emitter.emit(DmaOp(outer[value], sram_in[value]))
            return
        starts = list(window.offsets) if window is not None else [0] * rank
        offsets = [
            offset if d == dim(value) and offset is not None
            else zero if starts[d] == 0 and zero is not None else emitter.index(starts[d])
            for d in range(rank)
        ]
        emitter.emit(DmaOp(outer[value], sram_in[value], src_offsets=offsets,
                           strides=window.strides if window is not None else ()))

    for v in loaded:
        if dim(v) < 0 and not in_place(v):
            dma_in(out, v, None)
    gather_dmas(out, tiled=False)
    body = _compute_body(kernel, group, plan, gathered, loaded, windows)
    compute = ComputeOp(kernel.sym_name.data, [*sram_in.values(), *sram_gathered.values()], sram_out, body)
    copy_phase(kernel, compute)
    set_tiles(compute, plan.count)
    if looped:
        zero, one, count = out.index(0), out.index(1), out.index(plan.count)
        step = out.index(plan.size)
        loop_block = Block(arg_types=[IndexType()])
        inner = _Emitter(loop_block, out.location)
        offset = inner.emit(arith.MuliOp(loop_block.args[0], step)).results[0]
        for v in loaded:
            if dim(v) >= 0:
                dma_in(inner, v, offset, zero)
        gather_dmas(inner, tiled=True)
        inner.emit(compute)
        for i, v in enumerate(group.outputs):
            window = _window(len(_tensor(v).get_shape()), dim(v), offset, zero)
            inner.emit(DmaOp(sram_out[i], drained[i], dst_offsets=window))
        inner.emit(scf.YieldOp())
        out.emit(scf.ForOp(zero, count, one, [], Region(loop_block)))
    else:
        out.emit(compute)
        for i, buffer in hbm_out.items():
            out.emit(DmaOp(sram_out[i], buffer))
    results = [kept_whole.get(i, sram_out[i]) if i in keep else hbm_out[i] for i in range(len(group.outputs))]
    consumed = [outer[v] for v in loaded if _is_sram(outer[v]) and not in_place(v)]
    resident_tables = [outer[t] for t in gathered if _is_sram(outer[t])]
    for buffer in [*sram_in.values(), *consumed, *resident_tables, *sram_gathered.values(), *sram_out]:
        if buffer not in results:
            out.emit(DeallocOp(buffer))
    return results


@dataclass(frozen=True)
class Room:
    """SRAM bytes and whole PMUs: left free beside a kernel, or taken by kept values."""

    bytes: int = 0
    pmus: int = 0

    def __add__(self, other: Room) -> Room:
        return Room(self.bytes + other.bytes, self.pmus + other.pmus)

    def __sub__(self, other: Room) -> Room:
        return Room(self.bytes - other.bytes, self.pmus - other.pmus)

    def holds(self, other: Room) -> bool:
        return other.bytes <= self.bytes and other.pmus <= self.pmus


def _free_beside(kernel: KernelOp, target: Target) -> Room:
    """What the SRAM has left beside the kernel's recorded working set."""
    group = kernel_group(kernel)
    plan = _recorded_plan(kernel, group)
    pmus = working_set(group, TilePlan(plan.size, plan.count, plan.tiled), target).pmus
    return Room(target.sram_bytes - _plan_attr(kernel).working_set.data, target.pmus - pmus)


def kept_on_chip(
    kernel: KernelOp, following: Operation | None, target: Target, used: Room = Room()
) -> tuple[frozenset[int], Room]:
    """Outputs of `kernel` that only the next kernel reads and that fit the SRAM
    beside both kernels' working sets: they need not go to HBM.

    A kept value occupies an SRAM buffer of its whole shape from `kernel` to
    the end of `following`. Where a kernel holds the whole value anyway (an
    untiled kernel's output, an input the next kernel keeps resident) that
    buffer is already in its recorded `working_set`; where it tiles the value,
    the whole buffer (its bytes and whole PMUs) comes on top of its tile
    buffers. `used` is what values kept from the kernel before already take
    beside `kernel`'s working set. Outputs are taken largest first while both
    kernels still fit the target. Returns the kept outputs' indices and what
    they take beside `following`'s working set.
    """
    if not isinstance(following, KernelOp):
        return frozenset(), Room()
    before_tiled = _plan_attr(kernel).tiles.data > 1
    after_tiled = _plan_attr(following).tiles.data > 1
    candidates = [
        (i, result) for i, result in enumerate(kernel.outputs)
        if result.uses and all(use.operation is following for use in result.uses)
    ]
    if not (before_tiled or after_tiled):
        return frozenset(i for i, _ in candidates), Room()  # both hold every such value whole
    room_before = _free_beside(kernel, target) - used
    room_after = _free_beside(following, target)
    tile_in = _plan_attr(following).inputs
    kept: set[int] = set()
    taken_after = Room()
    for i, result in sorted(candidates, key=lambda item: -value_bytes(item[1])):
        whole_bytes = aligned(value_bytes(result))
        whole = Room(whole_bytes, -(-whole_bytes // target.pmu_bytes))
        extra_before = whole if before_tiled else Room()
        read_tiled = after_tiled and any(tile_in[j] >= 0 for j, v in enumerate(following.inputs) if v == result)
        extra_after = whole if read_tiled else Room()
        if room_before.holds(extra_before) and room_after.holds(extra_after):
            room_before -= extra_before
            room_after -= extra_after
            taken_after += extra_after
            kept.add(i)
    return frozenset(kept), taken_after


def _viewable(buffer: SSAValue) -> bool:
    """An off-chip buffer a `tier.view` may alias: its function frees it (if ever)
    only after the last reader of any view of it (`_free_after_last_use`)."""
    return isinstance(buffer.type, BufferType) and buffer.type.tier.data != Tier.SRAM


def _aliases(buffer: SSAValue) -> list[SSAValue]:
    """`buffer` and every view of it (and of those)."""
    found = [buffer]
    for value in found:
        found += [use.operation.result for use in value.uses if isinstance(use.operation, ViewOp)]
    return found


def _view_of(value: SSAValue, kernel: KernelOp) -> tuple[SSAValue, Window | None] | None:
    """(kernel input, window) when a kernel output is only a window of an input:
    the input, or one stride-1 slice of it, then reshapes; None otherwise."""
    window: Window | None = None
    while isinstance(value.owner, ReshapeOp):
        value = value.owner.input
    if isinstance(value.owner, SliceOp):
        window = slice_window(value.owner)
        value = value.owner.input
        if any(s != 1 for s in window.strides):
            return None
    if not isinstance(value.owner, Block) or value.owner is not kernel.body.block:
        return None
    return value, window


def takes_windows_only(kernel: KernelOp) -> bool:
    """Whether every op of the kernel's body is a slice or a reshape; asked op by op
    up to the first other one (a long fused kernel answers at its first op)."""
    return all(isinstance(op, SliceOp | ReshapeOp | YieldOp) for op in kernel.body.block.ops)


def viewed_input(kernel: KernelOp, index: int) -> SSAValue | None:
    """The kernel input that result `index` is a contiguous window of, when the
    kernel only takes such windows: `lower_views` makes the result a `tier.view`
    of that input's buffer (when it is off chip), so the result lives in the
    input's tier, whatever its own placement says. None otherwise."""
    if not takes_windows_only(kernel):
        return None
    found = _view_of(kernel_group(kernel).outputs[index], kernel)
    if found is None:
        return None
    arg, window = found
    whole = tuple(_tensor(arg).get_shape())
    if window is not None and not is_contiguous_window(whole, window.sizes):
        return None
    return kernel.inputs[kernel.body.block.args.index(arg)]


def lower_views(kernel: KernelOp, env: dict[SSAValue, SSAValue], out: _Emitter) -> bool:
    """A kernel that only takes contiguous windows of off-chip inputs (a layer's
    `k_cache[i]` of a stacked cache) becomes `tier.view`s: no kernel, no copy; the
    kernels that read the windows DMA just them. Returns whether it did."""
    if not takes_windows_only(kernel):
        return False
    yielded = kernel_group(kernel).outputs
    if any(isinstance(use.operation, func.ReturnOp) for result in kernel.outputs for use in result.uses):
        return False  # a result is a copy, not a view of an input
    views: list[tuple[SSAValue, SSAValue, Window]] = []
    for value in yielded:
        found = _view_of(value, kernel)
        if found is None:
            return False
        arg, window = found
        source = env[kernel.inputs[kernel.body.block.args.index(arg)]]
        whole = tuple(_tensor(arg).get_shape())
        window = window or Window((0,) * len(whole), whole, (1,) * len(whole))
        if not _viewable(source) or not is_contiguous_window(whole, window.sizes):
            return False
        views.append((source, value, window))
    for result, (source, value, window) in zip(kernel.outputs, views):
        assert isinstance(source.type, BufferType)
        offsets = [out.index(o) for o in window.offsets]
        view = out.emit(ViewOp(source, offsets, window.sizes, _buffer(source.type.tier.data, _tensor(value))))
        env[result] = view.results[0]
        env[result].name_hint = result.name_hint
    return True


def _global_buffer(globals_: dict[str, GlobalOp], name: str, out: _Emitter) -> SSAValue:
    """A `tier.get_global` of global `name` (`globals_`: the module's by name, made once
    per function: a scan of the module per global was quadratic in a deep step)."""
    target = globals_.get(name)
    if target is None or target.tier is None:
        raise RduccError(f"global @{name} has no tier: run rdu-place-tiers first")
    buffer = BufferType(target.tier.data, list(target.global_type.get_shape()), target.global_type.element_type)
    return out.emit(GetGlobalOp(name, buffer)).results[0]


def _free_after_last_use(block: Block, keep: set[SSAValue]) -> None:
    """Dealloc each HBM activation buffer (an alloc's, or a call's result) after
    the last op that reads it or a `tier.view` of it."""
    ops = list(block.ops)
    index = {op: i for i, op in enumerate(ops)}
    for op in ops:
        if not isinstance(op, AllocOp | func.CallOp | HostCallOp):
            continue
        for buffer in op.results:
            if buffer in keep or not isinstance(buffer.type, BufferType) or buffer.type.tier.data == Tier.SRAM:
                continue
            end = last_read(_aliases(buffer), block, index)
            last = op if end is None else ops[end]
            if isinstance(last.next_op, DeallocOp) and last.next_op.buffer == buffer:
                continue
            free = DeallocOp(buffer)
            free.location = op.location
            block.insert_op_after(free, last)


def lower_function(module: ModuleOp, function: func.FuncOp, target: Target | None) -> None:
    """Rewrite @forward over buffers: HBM inputs and results, explicit DMA.

    With a `target`, values passed between neighbouring kernels stay in SRAM
    when they can (see `kept_on_chip`); without, every one goes through HBM.
    """
    old = function.body.block
    attrs = arg_attrs(function)
    outlined = is_outlined(function)
    user = [(arg, a) for arg, a in zip(old.args, attrs) if outlined or is_input(a)]
    block = Block(arg_types=[_buffer(_parameter_tier(a), _tensor(arg)) for arg, a in user])
    out = _Emitter(block, function.location)
    env: dict[SSAValue, SSAValue] = {}
    for (arg, _), new in zip(user, block.args):
        env[arg] = new
        new.name_hint = arg.name_hint
    globals_ = {g.sym_name.data: g for g in module.ops if isinstance(g, GlobalOp)}
    for arg, a in zip(old.args, attrs):
        reference = global_of(a)
        if reference is not None:
            env[arg] = _global_buffer(globals_, reference, out)
            env[arg].name_hint = arg.name_hint
    results: list[SSAValue] = []
    used = Room()  # what values kept from the kernel before take beside this one's working set
    for op in old.ops:
        out.location = op.location
        if isinstance(op, KernelOp) and lower_views(op, env, out):
            continue
        if isinstance(op, KernelOp):
            keep: frozenset[int] = frozenset()
            if target is not None:
                keep, used = kept_on_chip(op, op.next_op, target, used)
            for result, buffer in zip(op.outputs, lower_kernel(op, env, out, keep)):
                env[result] = buffer
                if not _is_sram(buffer):
                    buffer.name_hint = result.name_hint
        elif isinstance(op, func.CallOp):
            _lower_call(module, op, env, out)
        elif isinstance(op, HostCallOp):
            _lower_host_call(op, env, out)
        elif isinstance(op, func.ReturnOp):
            results = [env[v] for v in op.arguments]
        else:
            raise LocatedError(op, f"'{op.name}' is outside any kernel: run rdu-fuse before rdu-insert-dma")
    _free_after_last_use(block, set(results))
    out.location = function.location
    out.emit(func.ReturnOp(*results))
    function.body.detach_block(old)
    old.erase(safe_erase=False)
    function.body.add_block(block)
    function.function_type = FunctionType.from_lists([a.type for a in block.args], [r.type for r in results])
    function.arg_attrs = ArrayAttr([DictionaryAttr(a) for _, a in user])


def _parameter_tier(attrs: Mapping[str, Attribute]) -> Tier:
    """The tier of an argument's buffer: HBM, or the `tier.tier` rdu-place-tiers
    recorded on a weight parameter of an outlined layer."""
    tier = attrs.get(contracts.PARAMETER_TIER)
    return tier.data if isinstance(tier, TierAttr) else Tier.HBM


def _lower_call(module: ModuleOp, call: func.CallOp, env: dict[SSAValue, SSAValue], out: _Emitter) -> None:
    """A call of an outlined layer (lowered already) on the buffers of its arguments."""
    callee = next(
        (f for f in functions(module) if f.sym_name.data == call.callee.string_value()), None
    )
    if callee is None or not is_outlined(callee):
        raise LocatedError(
            call, f"rdu-insert-dma lowers calls of outlined layers only, not @{call.callee.string_value()}"
        )
    new = out.emit(func.CallOp(call.callee, [env[v] for v in call.arguments], callee.function_type.outputs.data))
    new.attributes.update(call.attributes)
    for result, buffer in zip(call.res, new.results):
        env[result] = buffer
        buffer.name_hint = result.name_hint


def _lower_host_call(call: HostCallOp, env: dict[SSAValue, SSAValue], out: _Emitter) -> None:
    """A host call on the off-chip buffers of its operands, giving HBM result
    buffers: its operands and results cross the host link, never SRAM."""
    results = [_buffer(Tier.HBM, _tensor(r)) for r in call.outputs]
    new = out.emit(HostCallOp(call.callee, [env[v] for v in call.inputs], call.tensor_names(), results,
                              call.pair_operand_names(), call.pair_result_indices()))
    new.attributes.update(call.attributes)
    for result, buffer in zip(call.outputs, new.results):
        env[result] = buffer
        buffer.name_hint = result.name_hint


@dataclass(frozen=True)
class RduInsertDma(RduPass):
    """Lower kernels to tile loops with explicit DMA between tiers (double-buffered)."""

    name = "rdu-insert-dma"
    accepts: ClassVar[tuple[Level, ...]] = (Level.KERNELS,)
    on_tensors: ClassVar[bool] = True
    produces: ClassVar[Level] = Level.MEMORY

    keep_on_chip: bool = True
    """Let a value stay in SRAM between two neighbouring kernels when both fit."""

    def rewrite(self, ctx: Context, op: ModuleOp) -> None:
        target = module_target(op, self.target) if self.keep_on_chip else None
        over = whole_positions(op)  # the planner's rule, asked of the kernels before they are lowered
        for function in callees_first(op):
            lower_function(op, function, target)
        write_back_in_place(op, over)


__all__ = ["RduInsertDma", "lower_kernel"]
