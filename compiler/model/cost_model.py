"""The cost model: a placed program's modeled time on a target, from shapes only.

`estimate(module, target)` walks `@forward` of a program lowered to level 3
(memory) or 4 (placed) and returns a `Report`: one `KernelCost` per kernel
and the totals. No data is read or computed, so a model on the meta device
(Llama 3.1 8B) estimates as fast as a small one. Every figure below can be
checked by hand from the shapes in the printed MLIR and the target's figures
(`compiler/targets/*.toml`); docs/cost-model.md says the same with a worked
example.

What a kernel is
----------------
One `tier.compute` together with the transfers that feed and drain it, in
program order of `@forward`:

- feeds: every `tier.dma` / `tier.gather` after the previous kernel's
  compute (and its drains) up to this compute, including those inside this
  compute's `scf.for` tile loop before it;
- drains: every `tier.dma` or `tier.scatter` after the compute whose source
  is one of the compute's `outs` buffers (the tile or result written back);
- transfers after the last compute that drain nothing belong to the last
  kernel.

Loops multiply. An op inside `scf.for` runs `trip` times, with
`trip = max(0, ceil((ub - lb) / step))` from the loop's `arith.constant`
bounds; nested loops multiply their trips. `tiles` of a kernel is the
product of the trips of the loops around its compute (1 with no loop).

Bytes moved
-----------
A `tier.dma` moves the window or the whole buffer: the byte size of the
destination buffer type when the window is on the source side
(`%hbm[%i, %c0] -> %sram`), else the byte size of the source buffer type.
A `tier.gather` moves its destination (the gathered rows); a `tier.scatter`
its rows (the source's bytes / its size along `dim` x the rows). Byte size =
product of the shape x element bytes (f64 8, f32 4, f16/bf16 2, iN N/8, ui8 1, i1 1).
Each transfer's bytes x the trips of its loops are added to
`bytes_by_tier["SRC->DST"]`: `hbm->sram`, `ddr->sram`, `sram->hbm`,
`sram->ddr`, `sram->sram` (any other pair gets its own key the same way).

- `hbm_bytes` = every key with `hbm` on either side; `ddr_bytes` likewise.
- `sram_bytes` (SRAM traffic) = for every body op of the compute except
  `rdu.yield` and `arith.constant`: bytes of its tensor operands + bytes of
  its tensor results, summed, x `tiles`; plus 2 x `sram->sram` DMA bytes (a
  PMU-to-PMU copy reads and writes SRAM). DMAs to or from HBM/DDR are not
  counted as SRAM traffic (they are bound by the off-chip side).

FLOPs (per body op, per tile; the kernel's FLOPs are the sum x `tiles`)
-----------------------------------------------------------------------
Each op carries its count (`flops()`, dialects/op_facts.py); an op with none is an error.
- `rdu.matmul`: 2 x M x N x K x batch, with `[..., M, N]` the result,
  K = the lhs's last dim and batch = product of the result's leading dims;
- `rdu.conv`: 2 x out_elems x (Cin / groups) x prod(kernel dims), with
  Cin / groups = weight dim 1 and the kernel dims = weight dims 2.. (a
  transposed one's: 2 x in_elems x (Cout / groups = weight dim 1) x
  prod(kernel dims)), plus out_elems for a bias;
- `rdu.map`: out_elems x (number of `arith.*` / `math.*` / `rdu.remf` ops in its body,
  not counting `arith.constant`; a transcendental such as `math.erf` or
  `math.exp`, a cast, a compare or a select counts 1 like an add; an
  `rdu.pointwise_call`, a special function imported generically, counts an
  assumed `ASSUMED_ALU_OPS` (24, dialects/rdu/pointwise.py: a rational approximation));
- `rdu.reduce`, `rdu.scan`: input elems;
- `rdu.pool`: out_elems x prod(window);
- `rdu.iota`, `rdu.random`: out_elems;
- `rdu.argsort`: out_elems x ceil(log2(n)) for n elements along the sorted dim;
- `rdu.scatter`: index elems with `reduce`, else 0 (a write);
- layout ops (`rdu.reshape`, `rdu.transpose`, `rdu.broadcast`, `rdu.slice`,
  `rdu.concat`), `rdu.gather`, the collectives and `arith.constant`: 0.

Times (seconds; figures of one socket: the compiler places a program on one)
---------------------------------------------------------------------------
From the kernel's mapping onto the fabric (`rdu.mapping` from `rdu-map-units`,
else made on the fly by the same rules, compiler/model/mapping.py, which has them):
- `compute_s` = sum over sections of tiles x the slowest stage's
  FLOPs a tile / (its PCUs x peak_flops(T) / pcus x utilization x
  compute_efficiency), each stage at least its operand bytes / (its PCUs x
  pcu_feed_bandwidth) (the on-chip network feeding it);
- `sram_s` = sum over sections of the busiest buffer's traffic x tiles /
  (its PMUs x sram_bandwidth / pmus), + 2 x `sram->sram` bytes / sram_bandwidth;
- `hbm_s` = hbm_bytes / (hbm_bandwidth x hbm_efficiency); `ddr_s` likewise;
- `pipeline_s` = sum over sections of the most of depth x stage_latency_s +
  hops x hop_latency_s over its stages;
- `fill_s` = `dma_latency_s` (when the kernel has any transfer) + when
  tiles > 1 the first tile's load (per source tier, one iteration's bytes of
  the in-loop feeds / that tier's bandwidth x efficiency; the largest) +
  `pipeline_s`;
- `reconfigure_s` = (sections - 1) x the target's reconfigure_s;
- `modeled_time_s` = max(compute_s, sram_s, hbm_s - first_hbm, ddr_s -
  first_ddr) + fill_s + launch_s + reconfigure_s: the first tile's load is in
  fill_s, so it is taken off its tier's time (counted once);
- `bound` = the name of the largest of those four (the first on a tie), or
  `launch` when launch_s exceeds all four.

Totals
------
A `func.call` of a layer that `rdu-outline-layers` outlined runs the
callee's kernels at the call: the callee is costed once and its kernels are
counted once per call (the report lists them at each call, as if inline);
the callee is not counted on its own. With the target's `kernel_looping`,
a run of consecutive calls of a one-kernel callee, each fed by the one
before, is one loop on the chip: every call after the first pays no
`launch_s` and no `fill_s` (`compiler/model/kernel_looping.py` has the rule;
`Report.loops` lists the runs, `kernel_launches` and `launches_saved` count).
A run of a callee of several kernels loops, a kernel paying a
`reconfigure_s` every later iteration where the kernel before it (across the
loop's back edge too) left another configuration loaded
(compiler/model/configuration.py), only where that costs no more than
calling them (`settle_loops`). A body of one configuration, or of several
the units hold side by side (compiler/model/shared_configuration.py, taken
where it costs no more), loads none an iteration and is launched once.

One walk, one timing: `walk_placed` (program_walk.py) returns each kernel as it runs as a
`KernelRecord` keyed to its ops (compute, transfers, the calls it runs
under, whether it is a later loop iteration); `kernel_work` turns a record
into per-resource seconds on the target, and `kernel_time` (kernel_timing.py, the one place a
kernel's time is computed) combines them with looping and overlap.

An op run on the host CPU (`rdu.host_call`, an ATen op with no chip
lowering or a user's custom op that does not trace, `HostCallCost.custom`)
is no kernel: it is a `HostCallCost` of its own, the host round trip
modeled from the target's host figures (all assumed, with ranges):
`link_s` = (operand bytes + result bytes) / host_link_bandwidth (they cross
the host link, PCIe, one way each), `compute_s` = the same bytes /
host_bandwidth (the host kernel's throughput), `modeled_time_s` =
host_latency_s + link_s + compute_s. Nothing overlaps it: the chip waits.
`Report.host_calls` lists them (at each call of an outlined layer that makes
them), and `Report.modeled_time_s` adds them to the kernels' time.

Kernels and their collectives are placed in a schedule of two lanes, the
chip and the socket links (compiler/model/overlap_schedule.py): a kernel
that reads nothing a pending collective produces runs beside it; one that
does waits for it, loading its weights meanwhile when the SRAM plan has
room. A kernel's `modeled_time_s` is how far it moved the schedule's end
and its `overlap_s` what ran beside something else, so nothing is hidden
that the schedule does not place side by side: `Report.modeled_time_s` = sum of the kernels'
modeled times (the schedule's end); `share` = kernel time / total; `flops` and
`bytes_by_tier` are sums over the kernels. `sram_peak_bytes`,
`sram_lower_bound_bytes` and `sram_capacity_bytes` are `@forward`'s
`tier.sram_peak`, `tier.sram_lower_bound` and `tier.sram_capacity` (the
largest over functions if there are several; 0 when the program is not
placed yet).
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Hashable, Mapping
from dataclasses import asdict, dataclass, field, replace

from xdsl.dialects import func
from xdsl.dialects.builtin import IntegerAttr, ModuleOp, TensorType
from xdsl.ir import Operation, SSAValue

from rducc.diagnostics import format_location
from rducc.dialects import contracts
from rducc.dialects.contracts import LOWERED_LEVELS, level_of, owned_bytes, owned_rows
from rducc.dialects.program import functions, global_stages
from rducc.dialects.rdu import dataflow as rdu
from rducc.dialects.rdu.host_call import HostCallOp
from rducc.dialects.shapes import value_bytes
from rducc.dialects.tier import ComputeOp, GlobalOp
from rducc.dialects.unchanged import unchanged
from rducc.errors import RduccError
from rducc.model.configuration import body_reloads, configuration_of
from rducc.model.kernel_looping import KernelLoop
from rducc.model.kernel_timing import (
    KernelCost,
    TierTotals,
    collective_cost,
    kernel_mapping,
    kernel_time,
    kernel_work,
    peak_seconds,
)
from rducc.model.overlap_schedule import kernel_costs
from rducc.model.program_walk import KernelRecord, ProgramWalk, walk_placed
from rducc.model.ranges import Ranges, headline_ranges
from rducc.model.shared_configuration import shared_mappings
from rducc.targets import Target


@dataclass
class HostCallCost:
    """The modeled host round trip of one `rdu.host_call` (the module docstring)."""

    name: str
    """The ATen overload it runs (`aten._linalg_svd.default`)."""
    where: str
    """Its source location, when it has one."""
    bytes_to_host: int
    bytes_from_host: int
    link_s: float
    compute_s: float
    latency_s: float
    modeled_time_s: float
    share: float = 0.0
    custom: bool = False
    """A user's custom op (`#rdu.custom`): its host compute is the same assumption
    (host_bandwidth), since nothing is known of its kernel."""


def host_call_cost(op: HostCallOp, target: Target) -> HostCallCost:
    """The host round trip of one host call on `target` (the module docstring)."""
    to_host, from_host = op.bytes_read(), op.bytes_written()
    moved = to_host + from_host
    link_s = moved / target.host_link_bandwidth
    compute_s = moved / target.host_bandwidth
    return HostCallCost(op.overload, format_location(op.location) or "", to_host, from_host, link_s, compute_s,
                        target.host_latency_s, target.host_latency_s + link_s + compute_s, custom=op.is_custom)


@dataclass
class Report(TierTotals):
    """The modeled cost of a whole program: its kernels and the totals."""

    target: str
    modeled_time_s: float
    flops: int
    bytes_by_tier: dict[str, int]
    sram_peak_bytes: int
    sram_lower_bound_bytes: int
    sram_capacity_bytes: int
    kernels: list[KernelCost] = field(default_factory=list)
    loops: list[KernelLoop] = field(default_factory=list)
    """Runs of consecutive calls of one layer, looped or not (kernel looping)."""
    host_calls: list[HostCallCost] = field(default_factory=list)
    """The ops run on the host CPU, in program order, and their modeled round trips."""

    @property
    def host_s(self) -> float:
        """Modeled seconds of the host round trips (in modeled_time_s)."""
        return sum(h.modeled_time_s for h in self.host_calls)

    @property
    def kernel_launches(self) -> int:
        """Kernels launched: every kernel but the later iterations of a loop."""
        return sum(not k.looped for k in self.kernels)

    @property
    def launches_saved(self) -> int:
        return sum(loop.launches_saved for loop in self.loops)

    def to_dict(self) -> dict:
        """JSON-ready: the attributes as keys, kernels as a list of dicts, and the
        launch counts (`kernel_launches`, `launches_saved`)."""
        return asdict(self) | {"kernel_launches": self.kernel_launches, "launches_saved": self.launches_saved}

    def to_json(self, indent: int | None = 2) -> str:
        return json.dumps(self.to_dict(), indent=indent)

    def ranges(self, module: ModuleOp, target: Target, headlines: Mapping[str, Callable[[Report], float]] | None = None
               ) -> Ranges:
        """This report's headlines (modeled time, runs/s, or those named) as ranges over
        the target's ranged figures, with the tornado table (compiler/model/ranges.py):
        `module` and `target` are the ones it was estimated from."""
        return headline_ranges(lambda varied: estimate(module, varied), target, headlines, base=self)



def stage_weight_bytes(module: ModuleOp) -> list[int]:
    """Bytes of weights one socket of each pipeline stage holds."""
    stages = global_stages(module)
    totals = [0] * (max(stages.values(), default=0) + 1)
    for op in module.ops:
        if isinstance(op, GlobalOp):
            totals[stages.get(op.sym_name.data, 0)] += value_bytes(op.global_type)
    return totals


def partition_estimate(module: ModuleOp, target: Target) -> float:
    """A quick modeled time of a partitioned graph (level 1), to compare splits:
    `partition_estimate_parts`' two parts added."""
    return sum(partition_estimate_parts(module, target))


def partition_estimate_parts(module: ModuleOp, target: Target) -> tuple[float, float]:
    """`partition_estimate` in two parts: the ops with every weight in HBM, and the
    weights past one socket's HBM read at DDR bandwidth (what a split that holds
    fewer weights a socket may not pay: the first part alone is the lower bound the
    split chooser prunes by).

    Each op: the larger of its FLOPs at peak and the bytes of the weights and
    inputs it reads (function arguments) at HBM bandwidth; each collective:
    `collective_cost`; each host call: `host_call_cost`; each call of an
    outlined layer: the layer's ops, costed once and counted a call. Stages run
    one after another (one token through the pipeline). Weights past one
    socket's HBM are read at DDR bandwidth.
    """
    by_name = {f.sym_name.data: f for f in functions(module)}
    called = {op.callee.string_value() for f in by_name.values() for op in f.body.block.ops
              if isinstance(op, func.CallOp)}
    costed: dict[tuple[str, tuple[bool, ...] | None], float] = {}

    def function_seconds(function: func.FuncOp, reads: tuple[bool, ...] | None) -> float:
        """The function's ops; `reads`: which arguments are read from memory (None: all;
        a layer's argument its caller computed is not)."""
        key = (function.sym_name.data, reads)
        if key not in costed:
            costed[key] = 0.0  # a recursive call costs nothing more
            args: set[SSAValue] = {a for a in function.args if reads is None or reads[a.index]}
            costed[key] = _ops_seconds(function, args, target, call_seconds)
        return costed[key]

    def call_seconds(call: func.CallOp, caller_args: set[SSAValue]) -> float:
        callee = by_name.get(call.callee.string_value())
        reads = tuple(v in caller_args for v in call.operands)
        return function_seconds(callee, reads) if callee is not None else 0.0

    seconds = sum(function_seconds(f, None) for name, f in by_name.items() if name not in called)
    spill = max((b - target.hbm_bytes for b in stage_weight_bytes(module)), default=0)
    return seconds, max(spill, 0) / target.bandwidth("ddr")


def _ops_seconds(function: func.FuncOp, args: set[SSAValue], target: Target,
                 call_seconds: Callable[[func.CallOp, set[SSAValue]], float]) -> float:
    """`partition_estimate` of one function's ops, `args` the arguments read from
    memory (a call: `call_seconds` of it, given them)."""
    from rducc.dialects.rdu.collectives import COLLECTIVE_OPS

    seconds = 0.0
    for op in function.body.block.ops:
        if isinstance(op, func.CallOp):
            seconds += call_seconds(op, args)
            continue
        if isinstance(op, COLLECTIVE_OPS):
            seconds += collective_cost(op, target)[0]
            continue
        if isinstance(op, HostCallOp):
            seconds += host_call_cost(op, target).modeled_time_s
            continue
        compute = peak_seconds(op, target)
        read = sum(_read_bytes(op, v) for v in op.operands if v in args and isinstance(v.type, TensorType))
        seconds += max(compute, read / target.bandwidth("hbm"))
    return seconds


def _read_bytes(op: Operation, operand: SSAValue) -> int:
    """Bytes `op` reads of an operand from memory at level 1: all of it, but of an
    expert-parallel gather's table only the rows the rank's experts serve."""
    if isinstance(op, rdu.GatherOp) and operand == op.source and owned_rows(op) is not None:
        return owned_bytes(op, value_bytes(op.result))
    return value_bytes(operand)


def sram_room_bytes(module: ModuleOp) -> int | None:
    """The SRAM the program's plan leaves free at its peak (`tier.sram_capacity -
    tier.sram_peak`, the largest over its functions); None when it has no plan."""
    peak = capacity = 0
    for function in functions(module):
        peak = max(peak, _int_attr(function, contracts.SRAM_PEAK))
        capacity = max(capacity, _int_attr(function, contracts.SRAM_CAPACITY))
    return capacity - peak if capacity else None


def _int_attr(op: Operation, name: str) -> int:
    value = op.attributes.get(name)
    return value.value.data if isinstance(value, IntegerAttr) else 0


def estimate(module: ModuleOp, target: Target, walk: ProgramWalk | None = None) -> Report:
    """Model the time of a lowered program (level memory or placed) on `target`.

    Shapes only: no weights or inputs are needed. Raises `RduccError` for a
    module that is not lowered to tier.compute yet. `walk`: the module's
    `walk_placed` with `target.kernel_looping`, when made already (a range
    costs one module on many variants of a target: one walk, not one each).
    """
    with unchanged():  # the program is read, not rewritten: each op's IR-only answers worked out once
        return _estimate(module, target, walk)


def _estimate(module: ModuleOp, target: Target, walk: ProgramWalk | None) -> Report:
    level = level_of(module)
    if level is not None and level not in LOWERED_LEVELS:
        raise RduccError(
            f"cost model: the module is at level '{level}'; lower it to 'memory' or 'placed' first"
        )
    if walk is None:
        walk = walk_placed(module, target.kernel_looping)
    peak = bound = capacity = 0
    for function in functions(module):
        peak = max(peak, _int_attr(function, contracts.SRAM_PEAK))
        bound = max(bound, _int_attr(function, contracts.SRAM_LOWER_BOUND))
        capacity = max(capacity, _int_attr(function, contracts.SRAM_CAPACITY))
    if not walk.kernels and any(isinstance(op, rdu.KernelOp) for op in module.walk()):
        raise RduccError("cost model: the module has rdu.kernel ops; lower it to 'memory' or 'placed' first")
    if peak > target.sram_bytes:
        raise RduccError(f"cost model: the program's SRAM plan needs {peak} bytes at its peak, more than "
                         f"target {target.name}'s sram_bytes ({target.sram_bytes}); compile it for that target")
    records, loops = settle_loops(walk, target)  # this report's own, counted for `target`
    kernels = kernel_costs(records, target, sram_room_bytes(module))
    hosts = [host_call_cost(op, target) for op in walk.host_calls]
    total = sum(k.modeled_time_s for k in kernels) + sum(h.modeled_time_s for h in hosts)
    for k in kernels:
        k.share = k.modeled_time_s / total if total > 0 else 0.0
    for h in hosts:
        h.share = h.modeled_time_s / total if total > 0 else 0.0
    by_tier: Counter[str] = Counter()
    for k in kernels:
        by_tier.update(k.bytes_by_tier)
    return Report(
        target=target.name,
        modeled_time_s=total,
        flops=sum(k.flops for k in kernels),
        bytes_by_tier=dict(sorted(by_tier.items())),
        sram_peak_bytes=peak,
        sram_lower_bound_bytes=bound,
        sram_capacity_bytes=capacity,
        kernels=kernels,
        loops=loops,
        host_calls=hosts,
    )


def body_loads(body: list[KernelRecord], target: Target) -> list[bool]:
    """For each kernel of a loop body (a callee's, in order), whether a later iteration
    loads its configuration on `target` (`configuration.body_reloads`: only where the
    kernel before it, across the back edge too, left another one loaded)."""
    return body_reloads([record.op for record in body], [loaded_sections(record, target) for record in body])


def _loop_gain_s(body: list[KernelRecord], loads: list[bool], target: Target) -> float:
    """What a later iteration of a loop over these kernels (a callee's, in order)
    saves against calling them: their launches and fills, less the configuration
    loads (`reconfigure_s`) of the kernels `loads` marks."""
    gain = 0.0
    for record, load in zip(body, loads):
        work = kernel_work(record, target)
        gain += (kernel_time(work, target).modeled_time_s
                 - kernel_time(work, target, looped=True, reloaded=load).modeled_time_s)
    return gain


def _calls_s(body: list[KernelRecord], loads: list[bool], calls: int, target: Target, held: bool = False) -> float:
    """The time of `calls` looped calls of these kernels (a callee's, in order): the
    first as called (`held`, a body held as one configuration: its first kernel
    only), each later one looped, `loads` marking its kernels that load their
    configuration."""
    works = [kernel_work(record, target) for record in body]
    first = works[:1] if held else works
    looped = works[1:] if held else []
    return (sum(kernel_time(work, target).modeled_time_s for work in first)
            + sum(kernel_time(work, target, looped=True).modeled_time_s for work in looped)
            + (calls - 1) * sum(kernel_time(work, target, looped=True, reloaded=load).modeled_time_s
                                for work, load in zip(works, loads)))


def _shared_body(loop: KernelLoop, body: list[KernelRecord], loads: list[bool], target: Target
                 ) -> list[KernelRecord] | None:
    """The body's kernels on their parts of one configuration that holds its several
    (compiler/model/shared_configuration.py) where the units hold them at once and its
    calls, looped with no configuration load, cost no more than the best of looping
    them as they are (`loads`) and calling them (`loop.shared` set); else None,
    `loop.not_shared` saying why."""
    distinct: dict[Hashable, ComputeOp] = {}
    for record in body:
        distinct.setdefault(configuration_of(record.op), record.op)
    mappings = shared_mappings(list(distinct.values()), target)
    if isinstance(mappings, str):
        loop.not_shared = f"not one configuration: {mappings}"
        return None
    part = dict(zip(distinct, mappings))  # a kernel alike another runs on the same units
    shared = [replace(record, mapping=part[configuration_of(record.op)]) for record in body]
    looped_s = _calls_s(body, loads, loop.calls, target)
    called_s = loop.calls * sum(kernel_time(kernel_work(record, target), target).modeled_time_s for record in body)
    shared_s = _calls_s(shared, [False] * len(body), loop.calls, target, held=True)
    if shared_s > min(looped_s, called_s):
        versus = (f"loading {sum(loads)} configurations an iteration" if looped_s <= called_s
                  else "calling them unlooped")
        loop.not_shared = (f"not one configuration: on their parts of the units its {len(body)} kernels take "
                           f"{(shared_s - min(looped_s, called_s)) * 1e6:.2f} us more over {loop.calls} calls "
                           f"than {versus}")
        return None
    loop.shared = len(distinct)
    return shared


def held_configuration(body: list[KernelRecord]) -> Hashable:
    """The one configuration a loop body held as one loads (`settle_loops`): its
    kernels' own where they are one, else theirs together on their parts of the units."""
    distinct = tuple(dict.fromkeys(configuration_of(record.op) for record in body))
    return distinct[0] if len(distinct) == 1 else ("held", distinct)


def loaded_configuration(record: KernelRecord) -> Hashable:
    """The configuration the units load to run this kernel: its loop body's where that
    is held as one (`KernelRecord.held`, from `settle_loops`), else its own."""
    return record.held if record.held is not None else configuration_of(record.op)


def loaded_sections(record: KernelRecord, target: Target) -> int:
    """The sections the units load it in on `target`: its mapping's (its part of a
    held body's, which fits at once), as the cost model times it (`kernel_work`)."""
    return (record.mapping or kernel_mapping(record.op, target)).sections


def settle_loops(walk: ProgramWalk, target: Target) -> tuple[list[KernelRecord], list[KernelLoop]]:
    """The walk's kernels and runs with each candidate loop (a callee of several
    kernels, compiler/model/kernel_looping.py) looped when a later iteration costs
    no more looped than called, on `target`; otherwise not looped, saying why. A
    body of several configurations runs as one that holds them all where that
    costs no more (`_shared_body`: each kernel's record carries its part's
    mapping, and no iteration loads one); otherwise a looped kernel is `reloaded`
    where the units do not hold its configuration (`body_loads`). A body of one
    configuration, or held as one, is launched once: its first call's kernels
    after the first loop too (`KernelRecord.head`). Each looped run's launches
    saved and launch + fill time not paid, less its configuration loads, are
    counted."""
    loops = [replace(loop) for loop in walk.loops]  # this report's own
    shared_bodies: dict[str, list[KernelRecord]] = {}
    tried: set[str] = set()
    paying: set[str] = set()
    reloading: set[Operation] = set()
    held: dict[str, Operation] = {}  # a callee held as one configuration: its first kernel
    for loop in loops:
        if loop.reason:
            continue
        body = walk.by_function[loop.callee]
        loads = body_loads(body, target)
        if len(body) > 1 and loop.callee not in tried:  # already one configuration, or held as one
            tried.add(loop.callee)
            found = _shared_body(loop, body, loads, target) if any(loads) else body
            if found is not None:
                shared_bodies[loop.callee] = found
        if loop.callee in shared_bodies:
            body, loads = shared_bodies[loop.callee], [False] * len(body)
            loop.shared = len({configuration_of(record.op) for record in body})
        loop.reloads = sum(loads)
        if not loop.looped and _loop_gain_s(body, loads, target) < 0:
            if shared_bodies.pop(loop.callee, None) is not None:  # the loop not taken: no part of the units
                loop.shared, body = 0, walk.by_function[loop.callee]
                loads = body_loads(body, target)
                loop.reloads = sum(loads)
            loop.reason = (f"@{loop.callee} is {len(body)} kernels: loading {loop.reloads} configurations every "
                           f"iteration ({loop.reloads} x {target.reconfigure_s * 1e6:.2f} us) costs more than the "
                           f"launches and DMA start-ups a loop saves "
                           f"({(_loop_gain_s(body, [False] * len(body), target)) * 1e6:.2f} us)")
            continue
        if not loop.looped:
            loop.looped = True
            paying.add(loop.callee)
        reloading |= {record.op for record, load in zip(body, loads) if load}
        loop.launches_saved = (loop.calls - 1) * len(body)
        loop.saved_s = (loop.calls - 1) * _loop_gain_s(body, loads, target)
        if loop.shared:  # one configuration from its first kernel on: the first call's others loop too
            held[loop.callee] = body[0].op
            loop.launches_saved += len(body) - 1
            loop.saved_s += _loop_gain_s(body[1:], loads[1:], target)
    mapped = {record.op: record.mapping for body in shared_bodies.values() for record in body}
    holding: dict[Operation, Hashable] = {}
    for callee, body in shared_bodies.items():
        if callee in held:  # the body's one configuration, worked out once (not once a kernel)
            holding.update(dict.fromkeys((record.op for record in body), held_configuration(body)))
    kernels = [replace(k, mapping=mapped.get(k.op, k.mapping), held=holding.get(k.op),
                       looped=k.looped or (k.head in held and k.op is not held[k.head])) for k in walk.kernels]
    kernels = [replace(k, looped=True, reloaded=k.op in reloading) if k.candidate in paying
               else replace(k, reloaded=k.op in reloading) if k.looped else k for k in kernels]
    return kernels, loops
