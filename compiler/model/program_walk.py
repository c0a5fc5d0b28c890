"""The walk over a placed program: each kernel as it runs (a `tier.compute`
with the transfers that feed and drain it, `cost_model`'s docstring says
which), keyed to its ops; the one walk the cost model, plots and report read.
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass, field, replace

from xdsl.dialects import arith, func, scf
from xdsl.dialects.builtin import IntegerAttr, ModuleOp
from xdsl.ir import Block, Operation, SSAValue

from rducc.dialects.contracts import (
    KernelMapping,
    arg_attrs,
    hbm_share,
    is_outlined,
    is_weight,
    owned_bytes,
    table_rows,
)
from rducc.dialects.program import callees_first
from rducc.dialects.rdu.host_call import HostCallOp
from rducc.dialects.shapes import value_bytes
from rducc.dialects.tier import BufferType, ComputeOp, DmaOp, GatherDmaOp, GetGlobalOp, GlobalOp, ScatterDmaOp
from rducc.errors import RduccError
from rducc.model.kernel_looping import KernelLoop, plan_loops


def _tier_name(value: SSAValue) -> str:
    kind = value.type
    assert isinstance(kind, BufferType)
    return kind.tier.data.value




TransferOp = DmaOp | GatherDmaOp | ScatterDmaOp


def transfer_bytes(op: TransferOp) -> int:
    """Bytes one transfer moves: the window (strided or not: the SRAM side's shape,
    never the whole off-chip buffer), or the whole buffer; a gather's or a
    scatter's rows (an expert-parallel gather's: only the rows the rank's experts
    serve, `contracts.OWNED_ROWS`). A `tier.view` moves nothing: the DMA that reads it counts its window."""
    if isinstance(op, ScatterDmaOp):
        return value_bytes(op.source) // max(1, _buffer_shape(op.source)[op.axis]) * op.rows()
    if isinstance(op, GatherDmaOp):
        return owned_bytes(op, value_bytes(op.dest))
    if op.src_offsets:
        return value_bytes(op.dest)
    return value_bytes(op.source)


def _buffer_shape(value: SSAValue) -> tuple[int, ...]:
    assert isinstance(value.type, BufferType)
    return tuple(value.type.get_shape())


def transfer_key(op: TransferOp) -> str:
    return f"{_tier_name(op.source)}->{_tier_name(op.dest)}"


def transfer_parts(op: TransferOp, hbm_shares: dict[SSAValue, float]) -> list[tuple[str, int]]:
    """(tier key, bytes) of a transfer: one part, or two for a read of a DDR table
    that holds its leading rows in HBM (`tier.hbm_rows`, share `hbm_shares[source]`):
    a selected row is in HBM with that share, each row equally likely."""
    key, moved = transfer_key(op), transfer_bytes(op)
    share = hbm_shares.get(op.source, 0.0)
    if not share or not key.startswith("ddr->"):
        return [(key, moved)]
    hot = round(moved * share)
    return [("hbm->" + key.split("->")[1], hot), (key, moved - hot)]


def hbm_shares(function: func.FuncOp, globals_: dict[str, GlobalOp]) -> dict[SSAValue, float]:
    """The DDR buffers of a function whose leading rows live in HBM (`tier.hbm_rows`
    on their global, or on the outlined layer's weight argument): the share in HBM."""
    found: dict[SSAValue, float] = {}
    for arg, attrs in zip(function.args, arg_attrs(function)):
        if isinstance(arg.type, BufferType) and (share := hbm_share(attrs, _rows(arg))):
            found[arg] = share
    for op in function.walk():
        if isinstance(op, GetGlobalOp) and (table := globals_.get(op.global_name.string_value())) is not None:
            if share := hbm_share(table.attributes, _rows(op.result)):
                found[op.result] = share
    return found


def _rows(value: SSAValue) -> int:
    return table_rows(_buffer_shape(value))


def trip_count(loop: scf.ForOp) -> int:
    """Iterations of an `scf.for` with `arith.constant` bounds."""
    bounds = []
    for value in (loop.lb, loop.ub, loop.step):
        owner = value.owner
        if not isinstance(owner, arith.ConstantOp) or not isinstance(owner.value, IntegerAttr):
            raise RduccError("cost model: an scf.for whose bounds are not arith.constant cannot be costed")
        bounds.append(owner.value.value.data)
    lb, ub, step = bounds
    if step <= 0:
        raise RduccError(f"cost model: an scf.for with step {step} cannot be costed")
    return max(0, -(-(ub - lb) // step))




@dataclass
class Transfer:
    """One `tier.dma` / `tier.gather` / `tier.scatter` of a kernel and how often it runs."""

    op: TransferOp
    key: str
    bytes_once: int
    runs: int
    in_loop: bool
    weight: bool = False
    """It reads a weight (a global, or a weight argument of an outlined layer)."""

    @property
    def total(self) -> int:
        return self.bytes_once * self.runs


@dataclass
class KernelRecord:
    """One kernel of the program as it runs: its `tier.compute` with the transfers
    that feed and drain it (the module docstring says which), keyed to the ops."""

    op: ComputeOp
    tiles: int
    feeds: list[Transfer] = field(default_factory=list)
    drains: list[Transfer] = field(default_factory=list)
    calls: tuple[func.CallOp, ...] = ()
    """The `func.call`s it runs under, outermost first (empty when inline)."""
    looped: bool = False
    """A later iteration of a kernel loop (compiler/model/kernel_looping.py): no launch, no fill."""
    reloaded: bool = False
    """A looped kernel whose configuration the units do not hold when it starts (the
    kernel before it in the loop had another, compiler/model/configuration.py): it
    loads it every iteration (`reconfigure_s`)."""
    candidate: str = ""
    """The callee of several kernels of which this is a later call's kernel: looped
    (and reloaded) when that loop pays (`cost_model.settle_loops`)."""
    head: str = ""
    """The callee of several kernels of which this is the first call's kernel: it
    loops after the body's first kernel where that body is held as one
    configuration (`cost_model.settle_loops`)."""
    mapping: KernelMapping | None = None
    """The mapping it runs with where not its own: its part of a loop body's one
    configuration (compiler/model/shared_configuration.py, `cost_model.settle_loops`)."""
    held: Hashable | None = None
    """Where its loop body is held as one configuration (`cost_model.settle_loops`):
    that configuration, what the units load for this kernel (`loaded_configuration`);
    None where its own is."""


@dataclass
class ProgramWalk:
    """A placed program's kernels in the order they run (an outlined layer's at
    each call), every function's own kernels, and the runs of calls (looping)."""

    kernels: list[KernelRecord]
    loops: list[KernelLoop]
    by_function: dict[str, list[KernelRecord]]
    host_calls: list[HostCallOp] = field(default_factory=list)
    """The host calls as they run (an outlined layer's at each call)."""


@dataclass
class _Call:
    """A `func.call` in program order: its callee's kernels run here."""

    callee: str
    op: func.CallOp


class _Walker:
    """Groups the transfers of a function around its computes (see the docstring)."""

    def __init__(self, weights: frozenset[SSAValue] = frozenset(),
                 shares: dict[SSAValue, float] | None = None) -> None:
        self.kernels: list[KernelRecord | _Call | HostCallOp] = []
        self.pending: list[Transfer] = []
        self.weights = weights
        self.shares = shares or {}

    def _last_kernel(self) -> KernelRecord | None:
        last = self.kernels[-1] if self.kernels else None
        return last if isinstance(last, KernelRecord) else None

    def walk(self, block: Block, runs: int, depth: int) -> None:
        for op in block.ops:
            if isinstance(op, func.CallOp):
                if runs != 1:
                    raise RduccError("cost model: a func.call inside a tile loop is not supported")
                self.kernels.append(_Call(op.callee.string_value(), op))
            elif isinstance(op, HostCallOp):
                if runs != 1:
                    raise RduccError("cost model: an rdu.host_call inside a tile loop is not supported")
                self.kernels.append(op)
            elif isinstance(op, scf.ForOp):
                trips = trip_count(op)
                for inner in op.body.blocks:
                    self.walk(inner, runs * trips, depth + 1)
            elif isinstance(op, ComputeOp):
                kernel = KernelRecord(op, runs, feeds=self.pending)
                self.pending = []
                self.kernels.append(kernel)
            elif isinstance(op, TransferOp):
                parts = [Transfer(op, key, moved, runs, depth > 0, op.operands[0] in self.weights)
                         for key, moved in transfer_parts(op, self.shares)]
                last = self._last_kernel()
                if not isinstance(op, GatherDmaOp) and last is not None and op.source in last.op.outs:
                    last.drains.extend(parts)
                else:
                    self.pending.extend(parts)

    def finish(self) -> list[KernelRecord | _Call | HostCallOp]:
        if self.pending:
            last = self._last_kernel()
            if last is None:
                raise RduccError("cost model: the program moves data but has no tier.compute before its end")
            last.drains.extend(self.pending)
            self.pending = []
        return self.kernels


def _walk_function(function: func.FuncOp, walked: dict[str, list[KernelRecord]],
                   kernel_looping: bool, hosted: dict[str, list[HostCallOp]],
                   globals_: dict[str, GlobalOp]
                   ) -> tuple[list[KernelRecord], list[KernelLoop], list[HostCallOp]]:
    """A function's kernels as they run (its calls' callees, walked before, expanded),
    its runs of calls and its host calls as they run (`hosted`: each callee's)."""
    walker = _Walker(_weight_values(function), hbm_shares(function, globals_))
    loops: list[KernelLoop] = []
    later_iterations: set[Operation] = set()
    candidates: set[Operation] = set()
    heads: set[Operation] = set()
    for block in function.body.blocks:
        walker.walk(block, 1, 0)
        block_loops, block_later, block_candidates, block_heads = plan_loops(
            block, {name: len(k) for name, k in walked.items()}, kernel_looping)
        loops += block_loops
        later_iterations |= block_later
        candidates |= block_candidates
        heads |= block_heads
    found: list[KernelRecord] = []
    hosts: list[HostCallOp] = []
    for item in walker.finish():
        if isinstance(item, KernelRecord):
            found.append(item)
            continue
        if isinstance(item, HostCallOp):
            hosts.append(item)
            continue
        if item.callee not in walked:
            raise RduccError(f"cost model: @{item.callee} is called but is not an outlined function of the module")
        later = item.op in later_iterations
        candidate = item.callee if item.op in candidates else ""
        head = item.callee if item.op in heads else ""
        found += [replace(k, calls=(item.op, *k.calls), looped=k.looped or later, candidate=candidate or k.candidate,
                          head=head or k.head) for k in walked[item.callee]]
        hosts += hosted[item.callee]
    return found, loops, hosts


def walk_placed(module: ModuleOp, kernel_looping: bool = False) -> ProgramWalk:
    """The one walk of a lowered program (level memory or placed) that the cost
    model, the plots and the report read: each kernel as it runs, keyed to its ops."""
    walked: dict[str, list[KernelRecord]] = {}
    hosted: dict[str, list[HostCallOp]] = {}
    kernels: list[KernelRecord] = []
    loops: list[KernelLoop] = []
    host_calls: list[HostCallOp] = []
    globals_ = {op.sym_name.data: op for op in module.ops if isinstance(op, GlobalOp)}
    for function in callees_first(module):
        found, found_loops, hosts = _walk_function(function, walked, kernel_looping, hosted, globals_)
        walked[function.sym_name.data] = found
        hosted[function.sym_name.data] = hosts
        if not is_outlined(function):
            kernels += found  # an outlined layer counts at its calls
            loops += found_loops
            host_calls += hosts
    return ProgramWalk(kernels, loops, walked, host_calls)



def _weight_values(function: func.FuncOp) -> frozenset[SSAValue]:
    """The buffers of a function that hold weights: its globals, and the weight
    arguments (`rdu.weight`) of an outlined layer."""
    from rducc.dialects.tier import ViewOp

    found: set[SSAValue] = {arg for arg, a in zip(function.args, arg_attrs(function)) if is_weight(a)}
    found |= {op.results[0] for op in function.walk() if isinstance(op, GetGlobalOp)}
    found |= {op.result for op in function.walk() if isinstance(op, ViewOp) and op.source in found}
    return frozenset(found)

