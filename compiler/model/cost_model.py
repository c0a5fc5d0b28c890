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
  Cin / groups = weight dim 1 and the kernel dims = weight dims 2..;
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
  FLOPs a tile / (its PCUs x peak_flops(T) / pcus x utilization);
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

One walk, one timing: `walk_placed` returns each kernel as it runs as a
`KernelRecord` keyed to its ops (compute, transfers, the calls it runs
under, whether it is a later loop iteration); `kernel_work` turns a record
into per-resource seconds on the target, and `kernel_time` (the one place a
kernel's time is computed) combines them with looping and overlap.

An op run on the host CPU (`rdu.host_call`, an ATen op with no chip
lowering) is no kernel: it is a `HostCallCost` of its own, the host round
trip modeled from the target's host figures (all assumed, with ranges):
`link_s` = (operand bytes + result bytes) / host_link_bandwidth (they cross
the host link, PCIe, one way each), `compute_s` = the same bytes /
host_bandwidth (the host kernel's throughput), `modeled_time_s` =
host_latency_s + link_s + compute_s. Nothing overlaps it: the chip waits.
`Report.host_calls` lists them (at each call of an outlined layer that makes
them), and `Report.modeled_time_s` adds them to the kernels' time.

Kernels run one after another, but a kernel's weight reads may run during
the previous kernel's collectives (`kernel_time` with an `Overlap`: its
`overlap_s` is taken off its time): `Report.modeled_time_s` = sum of the kernels'
modeled times; `share` = kernel time / total; `flops` and
`bytes_by_tier` are sums over the kernels. `sram_peak_bytes`,
`sram_lower_bound_bytes` and `sram_capacity_bytes` are `@forward`'s
`tier.sram_peak`, `tier.sram_lower_bound` and `tier.sram_capacity` (the
largest over functions if there are several; 0 when the program is not
placed yet).
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field, fields, replace

from xdsl.dialects import arith, func, scf
from xdsl.dialects.builtin import IntegerAttr, ModuleOp, TensorType
from xdsl.ir import Attribute, Block, Operation, SSAValue

from rducc.diagnostics import format_location
from rducc.dialects import contracts
from rducc.dialects.contracts import (
    LOWERED_LEVELS,
    KernelMapping,
    arg_attrs,
    is_outlined,
    is_weight,
    level_of,
    mapping_of,
)
from rducc.dialects.op_facts import facts_of, tensor_bytes
from rducc.dialects.program import callees_first, functions, global_stages, kernel_name
from rducc.dialects.rdu import dataflow as rdu
from rducc.dialects.rdu.host_call import HostCallOp
from rducc.dialects.shapes import value_bytes
from rducc.dialects.tier import BufferType, ComputeOp, DmaOp, GatherDmaOp, ScatterDmaOp
from rducc.errors import RduccError
from rducc.model.kernel_looping import KernelLoop, plan_loops
from rducc.model.mapping import KernelBody, body_stages, buffer_works, compute_body, depths, map_kernel
from rducc.model.ranges import Ranges, headline_ranges
from rducc.targets import Target

TIME_KEYS = ("compute", "sram", "hbm", "ddr")
"""The pipeline's resources, in the order ties are broken for `bound`."""

LAYOUT_OPS = frozenset({"rdu.reshape", "rdu.transpose", "rdu.broadcast", "rdu.slice", "rdu.concat"})


class _TierTotals:
    """Bytes that touched HBM or DDR, in either direction (needs `bytes_by_tier`)."""

    bytes_by_tier: dict[str, int]

    @property
    def hbm_bytes(self) -> int:
        return _tier_bytes(self.bytes_by_tier, "hbm")

    @property
    def ddr_bytes(self) -> int:
        return _tier_bytes(self.bytes_by_tier, "ddr")


@dataclass
class _KernelFacts:
    """What a kernel is, whatever its timing: its name, ops, FLOPs, bytes and tiles."""

    name: str
    ops_fused: dict[str, int]
    flops: int
    bytes_by_tier: dict[str, int]
    sram_bytes: int
    tiles: int


@dataclass
class KernelCost(_KernelFacts, _TierTotals):
    """The modeled cost of one kernel (a `tier.compute` with its transfers)."""

    bound: str
    compute_s: float
    sram_s: float
    hbm_s: float
    ddr_s: float
    fill_s: float
    launch_s: float
    modeled_time_s: float
    share: float = 0.0
    link_s: float = 0.0
    """Socket-to-socket time of the kernel's collectives (in modeled_time_s)."""
    link_bytes: int = 0
    """Bytes one socket sends over its links for them."""
    prefetch_bytes: int = 0
    """HBM bytes of weights it loads before its tile loop: what it can read during
    the previous kernel's collectives (they do not depend on them)."""
    overlap_s: float = 0.0
    """Time taken off modeled_time_s: its weight reads done during the previous
    kernel's collectives (`kernel_time` with an `Overlap`)."""
    looped: bool = False
    """A later iteration of a kernel loop (compiler/model/kernel_looping.py): no launch, no fill."""
    reconfigure_s: float = 0.0
    """Loading its sections after the first (`rdu-map-units`; in modeled_time_s)."""
    pipeline_s: float = 0.0
    """The pipeline's own fill in fill_s: depth x stage latency + hops x hop latency."""
    pcus: int = 0
    """PCUs its mapping uses (the most of any section)."""
    pmus: int = 0
    """PMUs its mapping uses (the most of any section)."""
    sections: int = 1
    """Sections it runs in, one after another (1: it fits the chip at once)."""


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


def host_call_cost(op: HostCallOp, target: Target) -> HostCallCost:
    """The host round trip of one host call on `target` (the module docstring)."""
    to_host, from_host = op.bytes_read(), op.bytes_written()
    moved = to_host + from_host
    link_s = moved / target.host_link_bandwidth
    compute_s = moved / target.host_bandwidth
    return HostCallCost(op.overload, format_location(op.location) or "", to_host, from_host, link_s, compute_s,
                        target.host_latency_s, target.host_latency_s + link_s + compute_s)


@dataclass
class Report(_TierTotals):
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

    def table(self) -> str:
        """A readable text table, one row per kernel, then the totals."""
        header = ("kernel", "tiles", "PCUs", "PMUs", "ops fused", "FLOPs", "HBM B", "DDR B", "SRAM B", "bound",
                  "modeled us", "share")
        rows = [
            (
                k.name,
                str(k.tiles),
                _units(k.pcus, k.sections),
                str(k.pmus),
                _ops_summary(k.ops_fused),
                _si(k.flops),
                _si(k.hbm_bytes),
                _si(k.ddr_bytes),
                _si(k.sram_bytes),
                k.bound,
                f"{k.modeled_time_s * 1e6:.2f}",
                f"{k.share * 100:.1f}%",
            )
            for k in self.kernels
        ]
        rows.append(
            (
                "total",
                str(sum(k.tiles for k in self.kernels)),
                str(max((k.pcus for k in self.kernels), default=0)),
                str(max((k.pmus for k in self.kernels), default=0)),
                _ops_summary(sum((Counter(k.ops_fused) for k in self.kernels), Counter())),
                _si(self.flops),
                _si(self.hbm_bytes),
                _si(self.ddr_bytes),
                _si(sum(k.sram_bytes for k in self.kernels)),
                _bound_summary(self.kernels),
                f"{self.modeled_time_s * 1e6:.2f}",
                "100.0%" if self.kernels else "-",
            )
        )
        widths = [max(len(r[i]) for r in (header, *rows)) for i in range(len(header))]
        left = {0, 4, 9}

        def line(cells: tuple[str, ...]) -> str:
            return "  ".join(
                c.ljust(w) if i in left else c.rjust(w) for i, (c, w) in enumerate(zip(cells, widths))
            ).rstrip()

        rule = "  ".join("-" * w for w in widths)
        out = [f"cost model: target {self.target}, {len(self.kernels)} kernels", line(header), rule]
        out += [line(r) for r in rows[:-1]]
        out += [rule, line(rows[-1]), ""]
        seconds = self.modeled_time_s
        rate = self.flops / seconds if seconds > 0 else 0.0
        out.append(f"modeled time      {seconds * 1e6:.2f} us ({seconds * 1e3:.4f} ms)")
        out.append(f"FLOPs             {self.flops} ({_si(rate)}FLOP/s achieved)")
        for loop in self.loops:
            out.append(_loop_line(loop))
        out += _host_lines(self.host_calls)
        link_s = sum(k.link_s for k in self.kernels)
        if link_s:
            sent = sum(k.link_bytes for k in self.kernels)
            hidden = sum(k.overlap_s for k in self.kernels)
            out.append(f"socket links      {link_s * 1e6:.2f} us ({hidden * 1e6:.2f} us of it behind the next kernels' "
                       f"weight reads), {sent} B sent a socket (collectives, send/recv)")
        for key in sorted(self.bytes_by_tier):
            out.append(f"bytes {key:<11} {self.bytes_by_tier[key]} ({_si(self.bytes_by_tier[key])}B)")
        out.append(
            f"SRAM              peak {self.sram_peak_bytes}, lower bound {self.sram_lower_bound_bytes}, "
            f"capacity {self.sram_capacity_bytes} bytes"
        )
        return "\n".join(out)


def _host_lines(calls: list[HostCallCost]) -> list[str]:
    """One line a host call: the op, its bytes each way and its modeled round trip."""
    if not calls:
        return []
    total = sum(h.modeled_time_s for h in calls)
    lines = [f"host ops          {len(calls)} run on the host CPU, {total * 1e6:.2f} us modeled (host link, "
             "host compute, start-up; assumed figures)"]
    for h in calls:
        lines.append(f"  {h.name}: {h.bytes_to_host} B to the host, {h.bytes_from_host} B back, "
                     f"{h.modeled_time_s * 1e6:.2f} us ({h.link_s * 1e6:.2f} link, {h.compute_s * 1e6:.2f} compute, "
                     f"{h.latency_s * 1e6:.2f} start-up)" + (f" at {h.where}" if h.where else ""))
    return lines


def _units(pcus: int, sections: int) -> str:
    """PCUs a kernel's mapping uses; `x N` when it runs in N sections."""
    return f"{pcus} x{sections}" if sections > 1 else str(pcus)


def _loop_line(loop: KernelLoop) -> str:
    head = f"kernel looping    {loop.calls} calls of @{loop.callee}"
    if not loop.looped:
        return f"{head} not looped: {loop.reason}"
    return (f"{head} as one loop: {loop.launches_saved} launch{'es' if loop.launches_saved != 1 else ''} saved "
            f"({loop.saved_s * 1e6:.2f} us of launch and DMA start-up)")


def _tier_bytes(bytes_by_tier: dict[str, int], tier: str) -> int:
    return sum(n for key, n in bytes_by_tier.items() if tier in key.split("->"))


_SHORT = {
    "rdu.matmul": "mm", "rdu.map": "map", "rdu.reduce": "red", "rdu.scan": "scan",
    "rdu.conv": "conv", "rdu.pool": "pool", "rdu.gather": "gather", "rdu.iota": "iota",
    "rdu.random": "rand", "rdu.argsort": "sort",
}


def _ops_summary(ops: dict[str, int]) -> str:
    """`12: 2 mm, 7 map, 3 layout` (layout ops counted together)."""
    short: Counter[str] = Counter()
    for name, count in ops.items():
        short["layout" if name in LAYOUT_OPS else _SHORT.get(name, name)] += count
    parts = [f"{n} {k}" for k, n in sorted(short.items(), key=lambda kv: (-kv[1], kv[0]))]
    return f"{sum(short.values())}: {', '.join(parts)}" if parts else "0"


def _bound_summary(kernels: list[KernelCost]) -> str:
    counts = Counter(k.bound for k in kernels)
    return " ".join(f"{b}:{n}" for b, n in counts.most_common())


def _si(value: float) -> str:
    """3 significant digits with an SI prefix: 1.23G, 456k, 7."""
    for scale, prefix in ((1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(value) >= scale:
            return f"{value / scale:.3g}{prefix}"
    return f"{value:.3g}" if isinstance(value, float) else str(value)


# --------------------------------------------------------------------------
# Shapes, bytes and FLOPs
# --------------------------------------------------------------------------


def _tier_name(value: SSAValue) -> str:
    kind = value.type
    assert isinstance(kind, BufferType)
    return kind.tier.data.value


def _compute_element(op: Operation) -> Attribute | None:
    """The element type an op computes in: its first tensor operand's, else its result's."""
    for value in (*op.operands, *op.results):
        if isinstance(value.type, TensorType):
            return value.type.element_type
    return None


def op_flops(op: Operation) -> int:
    """FLOPs of one body op on one tile: the op's own count (`OpFacts.flops`; the
    module docstring lists the rules); 0 for an op that declares it computes
    nothing; an error for an op with no facts."""
    facts = facts_of(op)
    return facts.flops() if facts is not None else 0


def op_sram_bytes(op: Operation) -> int:
    """SRAM bytes one body op reads and writes on one tile: tensor operands + results."""
    facts = facts_of(op)
    if facts is None:
        return sum(tensor_bytes(v) for v in (*op.operands, *op.results))
    return facts.bytes_read() + facts.bytes_written()


TransferOp = DmaOp | GatherDmaOp | ScatterDmaOp


def transfer_bytes(op: TransferOp) -> int:
    """Bytes one transfer moves: the window (strided or not: the SRAM side's shape,
    never the whole off-chip buffer), or the whole buffer; a gather's or a
    scatter's rows. A `tier.view` moves nothing: the DMA that reads it counts its window."""
    if isinstance(op, ScatterDmaOp):
        return value_bytes(op.source) // max(1, _buffer_shape(op.source)[op.axis]) * op.rows()
    if isinstance(op, GatherDmaOp) or op.src_offsets:
        return value_bytes(op.dest)
    return value_bytes(op.source)


def _buffer_shape(value: SSAValue) -> tuple[int, ...]:
    assert isinstance(value.type, BufferType)
    return tuple(value.type.get_shape())


def transfer_key(op: TransferOp) -> str:
    return f"{_tier_name(op.source)}->{_tier_name(op.dest)}"


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


# --------------------------------------------------------------------------
# Walking the program: one record per kernel as it runs, keyed to its ops
# --------------------------------------------------------------------------


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

    def __init__(self, weights: frozenset[SSAValue] = frozenset()) -> None:
        self.kernels: list[KernelRecord | _Call | HostCallOp] = []
        self.pending: list[Transfer] = []
        self.weights = weights

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
                transfer = Transfer(op, transfer_key(op), transfer_bytes(op), runs, depth > 0,
                                    op.operands[0] in self.weights)
                last = self._last_kernel()
                if not isinstance(op, GatherDmaOp) and last is not None and op.source in last.op.outs:
                    last.drains.append(transfer)
                else:
                    self.pending.append(transfer)

    def finish(self) -> list[KernelRecord | _Call | HostCallOp]:
        if self.pending:
            last = self._last_kernel()
            if last is None:
                raise RduccError("cost model: the program moves data but has no tier.compute before its end")
            last.drains.extend(self.pending)
            self.pending = []
        return self.kernels


def _walk_function(function: func.FuncOp, walked: dict[str, list[KernelRecord]],
                   kernel_looping: bool, hosted: dict[str, list[HostCallOp]]
                   ) -> tuple[list[KernelRecord], list[KernelLoop], list[HostCallOp]]:
    """A function's kernels as they run (its calls' callees, walked before, expanded),
    its runs of calls and its host calls as they run (`hosted`: each callee's)."""
    walker = _Walker(_weight_values(function))
    loops: list[KernelLoop] = []
    later_iterations: set[Operation] = set()
    for block in function.body.blocks:
        walker.walk(block, 1, 0)
        block_loops, block_later = plan_loops(block, {name: len(k) for name, k in walked.items()}, kernel_looping)
        loops += block_loops
        later_iterations |= block_later
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
        found += [replace(k, calls=(item.op, *k.calls), looped=k.looped or later) for k in walked[item.callee]]
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
    for function in callees_first(module):
        found, found_loops, hosts = _walk_function(function, walked, kernel_looping, hosted)
        walked[function.sym_name.data] = found
        hosted[function.sym_name.data] = hosts
        if not is_outlined(function):
            kernels += found  # an outlined layer counts at its calls
            loops += found_loops
            host_calls += hosts
    return ProgramWalk(kernels, loops, walked, host_calls)


# --------------------------------------------------------------------------
# Timing a kernel
# --------------------------------------------------------------------------


@dataclass
class KernelWork(_KernelFacts):
    """What one kernel does on a target, resource by resource, before its
    pipeline overlaps them (`kernel_time` combines them)."""

    compute_s: float
    sram_s: float
    hbm_s: float
    ddr_s: float
    startup_s: float
    """DMA latency and the first tile's load: the fill a looped iteration does not pay."""
    first_tile_s: dict[str, float] = field(default_factory=dict)
    """Per source tier (hbm, ddr, sram), the first tile's load in `startup_s`: the
    part of that tier's time done before the pipeline runs, so not counted again."""
    pipeline_s: float = 0.0
    """The pipeline's own fill: depth x stage latency + hops x hop latency, each section."""
    reconfigure_s: float = 0.0
    """(sections - 1) x the target's `reconfigure_s`."""
    pcus: int = 0
    pmus: int = 0
    sections: int = 1
    link_s: float = 0.0
    link_bytes: int = 0
    prefetch_bytes: int = 0
    """HBM bytes of weights loaded before its tile loop (see `KernelCost`)."""

    def times(self, looped: bool = False) -> dict[str, float]:
        """The pipeline's resources (TIME_KEYS) and their seconds while it runs: a
        tier's time less its first tile's load, which the fill paid before (not when
        `looped`: a later loop iteration pays no fill, so the whole of it)."""
        early = {} if looped else self.first_tile_s
        return {"compute": self.compute_s, "sram": self.sram_s, "hbm": self.hbm_s - early.get("hbm", 0.0),
                "ddr": self.ddr_s - early.get("ddr", 0.0)}


@dataclass(frozen=True)
class Overlap:
    """The previous kernel's collectives, which this kernel's weight reads may run under."""

    link_s: float
    room_bytes: int
    """SRAM free beside everything live (capacity less the plan's peak)."""


def _bandwidth(target: Target, tier: str) -> float:
    return {"hbm": target.hbm_bandwidth, "ddr": target.ddr_bandwidth, "sram": target.sram_bandwidth}[tier]


def kernel_mapping(compute: ComputeOp, target: Target) -> KernelMapping:
    """The kernel's mapping: the one `rdu-map-units` recorded, else (unmapped IR, or
    a mapping for another grid) the mapping made now by the same rules."""
    mapping = mapping_of(compute)
    if mapping is None or mapping.grid != target.grid():
        mapping = map_kernel(compute, target)
    return mapping


@dataclass(frozen=True)
class MappedTimes:
    """A kernel's compute, SRAM-port and pipeline-fill seconds from its mapping."""

    compute_s: float
    sram_s: float
    pipeline_s: float


def mapped_times(body: KernelBody, mapping: KernelMapping, tiles: int, target: Target) -> MappedTimes:
    """Sections run one after another; in each, the slowest stage (work a tile /
    its PCUs, x tiles), the busiest buffer's PMU ports (traffic a tile x tiles /
    (its PMUs x sram_bandwidth / pmus)) and the fill (the most of depth x
    stage_latency_s + hops x hop_latency_s over its stages)."""
    buffers = {b.index: b for b in buffer_works(body, target)}
    work = {w.index: w for w in body_stages(body, target)}
    port = target.sram_bandwidth / target.pmus
    depth = depths(body, mapping)
    compute_s = sram_s = pipeline_s = 0.0
    for section in range(mapping.sections):
        stages = [s for s in mapping.stages if s.section == section]
        works = [(work.get(s.op), s.units) for s in stages]
        compute_s += max((w.seconds * tiles / units for w, units in works if w is not None), default=0.0)
        sram_s += max((buffers[b.buffer].traffic * tiles / (b.units * port)
                       for b in mapping.buffers if b.section == section), default=0.0)
        pipeline_s += max((depth.get(s.op, 1) * target.stage_latency_s + s.hops * target.hop_latency_s
                           for s in stages), default=0.0)
    return MappedTimes(compute_s, sram_s, pipeline_s)


def _efficiency(target: Target, tier: str) -> float:
    return {"hbm": target.hbm_efficiency, "ddr": target.ddr_efficiency}.get(tier, 1.0)


def kernel_work(record: KernelRecord, target: Target) -> KernelWork:
    """A kernel's FLOPs, bytes and per-resource seconds on `target` (the module docstring's rules)."""
    tiles = record.tiles
    ops: Counter[str] = Counter()
    flops = 0
    sram = 0
    for op in record.op.body.block.ops:
        if isinstance(op, rdu.YieldOp | arith.ConstantOp):
            continue
        ops[op.name] += 1
        flops += op_flops(op) * tiles
        sram += op_sram_bytes(op) * tiles
    by_tier: Counter[str] = Counter()
    for transfer in (*record.feeds, *record.drains):
        by_tier[transfer.key] += transfer.total
    sram += 2 * by_tier.get("sram->sram", 0)
    mapping = kernel_mapping(record.op, target)
    mapped = mapped_times(compute_body(record.op), mapping, tiles, target)
    first: Counter[str] = Counter()
    if tiles > 1:
        for transfer in record.feeds:
            if transfer.in_loop:
                first[transfer.key.split("->")[0]] += transfer.bytes_once
    first_s = {tier: n / (_bandwidth(target, tier) * _efficiency(target, tier)) for tier, n in first.items()}
    startup = target.dma_latency_s if (record.feeds or record.drains) else 0.0
    link_s, link_bytes = kernel_link_cost(record.op, tiles, target)
    return KernelWork(
        name=kernel_name(record.op),
        ops_fused=dict(ops),
        flops=flops,
        bytes_by_tier=dict(sorted(by_tier.items())),
        sram_bytes=sram,
        tiles=tiles,
        compute_s=mapped.compute_s,
        sram_s=mapped.sram_s + 2 * by_tier.get("sram->sram", 0) / target.sram_bandwidth,
        hbm_s=_tier_bytes(by_tier, "hbm") / (target.hbm_bandwidth * target.hbm_efficiency),
        ddr_s=_tier_bytes(by_tier, "ddr") / (target.ddr_bandwidth * target.ddr_efficiency),
        startup_s=startup + max(first_s.values(), default=0.0),
        first_tile_s=first_s,
        pipeline_s=mapped.pipeline_s,
        reconfigure_s=(mapping.sections - 1) * target.reconfigure_s,
        pcus=mapping.pcus(),
        pmus=mapping.pmus(),
        sections=mapping.sections,
        link_s=link_s,
        link_bytes=link_bytes,
        prefetch_bytes=sum(t.total for t in record.feeds if t.weight and not t.in_loop and t.key == "hbm->sram"),
    )


def planned_cost(body: KernelBody, mapping: KernelMapping, bytes_by_tier: dict[str, int],
                 target: Target) -> KernelCost:
    """The cost of a kernel not lowered yet (a group of ops `rdu-fuse` weighs), by
    `kernel_time` like any other: compute, SRAM ports and pipeline fill from its
    mapping, its tiers' bytes (`bytes_by_tier`, each whole) at their bandwidths,
    one DMA start-up, no first tile apart."""
    mapped = mapped_times(body, mapping, body.tiles, target)
    ops = Counter(op.name for op in body.ops if not isinstance(op, rdu.YieldOp | arith.ConstantOp))
    work = KernelWork(
        name=body.name, ops_fused=dict(ops), flops=sum(op_flops(op) for op in body.ops if op.name in ops),
        bytes_by_tier=bytes_by_tier, sram_bytes=0, tiles=body.tiles, compute_s=mapped.compute_s,
        sram_s=mapped.sram_s, hbm_s=_tier_bytes(bytes_by_tier, "hbm") / (target.hbm_bandwidth * target.hbm_efficiency),
        ddr_s=_tier_bytes(bytes_by_tier, "ddr") / (target.ddr_bandwidth * target.ddr_efficiency),
        startup_s=target.dma_latency_s if bytes_by_tier else 0.0, pipeline_s=mapped.pipeline_s,
        reconfigure_s=(mapping.sections - 1) * target.reconfigure_s, pcus=mapping.pcus(), pmus=mapping.pmus(),
        sections=mapping.sections)
    return kernel_time(work, target)


def _hidden_s(work: KernelWork, target: Target, overlap: Overlap | None, looped: bool = False) -> float:
    """What the kernel's weight reads during the previous kernel's collectives take
    off its busiest resource (0 when it is bound by compute or SRAM rather than HBM).

    The links and the DMA engines are separate, and the next kernel's weights do
    not depend on a collective, so when the previous kernel has link time L and
    this one loads `prefetch_bytes` P of weights before its tile loop with room
    for them in SRAM (`P <= room_bytes`), its HBM time shrinks by
    `min(L, P / hbm_bandwidth)`. Otherwise the two run one after the other.
    """
    if overlap is None or overlap.link_s <= 0 or not 0 < work.prefetch_bytes <= overlap.room_bytes:
        return 0.0
    early = min(overlap.link_s, work.prefetch_bytes / (target.hbm_bandwidth * target.hbm_efficiency))
    times = work.times(looped)
    return max(times.values()) - max(times["compute"], times["sram"], times["hbm"] - early, times["ddr"])


def kernel_time(work: KernelWork, target: Target, looped: bool = False, overlap: Overlap | None = None) -> KernelCost:
    """The one timing of a kernel: its pipeline bound by the busiest resource,
    plus fill, launch and link time.

    `looped`: a later iteration of a kernel loop pays no launch and no fill
    (compiler/model/kernel_looping.py). `overlap`: the previous kernel's collectives,
    behind which its weight reads may run (`_hidden_s`: `overlap_s`).
    """
    times = work.times(looped)
    fill = (0.0 if looped else work.startup_s) + work.pipeline_s
    launch = 0.0 if looped else target.kernel_launch_s
    busiest = max(TIME_KEYS, key=lambda k: times[k])  # max keeps the first on a tie
    bound = "launch" if launch > times[busiest] else busiest
    if work.link_s > max(launch, times[busiest]):
        bound = "link"
    hidden = _hidden_s(work, target, overlap, looped)
    return KernelCost(
        **{f.name: getattr(work, f.name) for f in fields(_KernelFacts)},
        bound=bound,
        compute_s=work.compute_s,
        sram_s=work.sram_s,
        hbm_s=work.hbm_s,
        ddr_s=work.ddr_s,
        fill_s=fill,
        launch_s=launch,
        modeled_time_s=times[busiest] + fill + launch + work.reconfigure_s + work.link_s - hidden,
        reconfigure_s=work.reconfigure_s,
        pipeline_s=work.pipeline_s,
        pcus=work.pcus,
        pmus=work.pmus,
        sections=work.sections,
        link_s=work.link_s,
        link_bytes=work.link_bytes,
        prefetch_bytes=work.prefetch_bytes,
        overlap_s=hidden,
        looped=looped,
    )


def kernel_costs(records: list[KernelRecord], target: Target, room_bytes: int | None = None) -> list[KernelCost]:
    """Each kernel's cost in run order: each compute's work found once, timed with
    its looping and, when `room_bytes` (free SRAM) is known, behind the previous
    kernel's collectives."""
    works: dict[ComputeOp, KernelWork] = {}
    costs: list[KernelCost] = []
    previous_link_s = 0.0
    for record in records:
        if record.op not in works:
            works[record.op] = kernel_work(record, target)
        work = works[record.op]
        overlap = Overlap(previous_link_s, room_bytes) if room_bytes is not None else None
        costs.append(kernel_time(work, target, record.looped, overlap))
        previous_link_s = work.link_s
    return costs


def collective_cost(op: Operation, target: Target) -> tuple[float, int]:
    """(seconds, bytes one socket sends) of one collective, from the target's link figures.

    B = the input's bytes on one socket, n = the group, L = link_latency_s,
    W = link_bandwidth. all_reduce: the faster of a ring, 2(n-1) steps of
    B/n, and recursive doubling, log2(n) steps of B (n a power of two);
    all_gather: (n-1) steps of B, or log2(n) start-ups and (n-1) B;
    reduce_scatter: (n-1) steps of B/n; send_recv: one step of B.
    """
    from rducc.dialects.rdu.collectives import AllGatherOp, AllReduceOp, ReduceScatterOp, SendRecvOp

    latency, bandwidth = target.link_latency_s, target.link_bandwidth
    size = value_bytes(op.operands[0])
    if isinstance(op, SendRecvOp):
        return latency + size / bandwidth, size
    assert isinstance(op, AllGatherOp | AllReduceOp | ReduceScatterOp)
    n = op.group_size
    if n <= 1:
        return 0.0, 0
    doubling = (n & (n - 1)) == 0
    steps = n.bit_length() - 1
    if isinstance(op, AllReduceOp):
        ring = (2 * (n - 1) * (latency + size / n / bandwidth), 2 * (n - 1) * size // n)
        if not doubling:
            return ring
        return min(ring, (steps * (latency + size / bandwidth), steps * size))
    if isinstance(op, AllGatherOp):
        ring = ((n - 1) * (latency + size / bandwidth), (n - 1) * size)
        return min(ring, (steps * latency + (n - 1) * size / bandwidth, (n - 1) * size)) if doubling else ring
    if isinstance(op, ReduceScatterOp):
        return (n - 1) * (latency + size / n / bandwidth), (n - 1) * size // n
    return 0.0, 0


def kernel_link_cost(compute: Operation, tiles: int, target: Target) -> tuple[float, int]:
    """Link time and bytes of the collectives in a kernel's body, run once a tile."""
    from rducc.dialects.rdu.collectives import COLLECTIVE_OPS

    seconds, sent = 0.0, 0
    for op in compute.walk():
        if isinstance(op, COLLECTIVE_OPS):
            op_s, op_bytes = collective_cost(op, target)
            seconds, sent = seconds + op_s * tiles, sent + op_bytes * tiles
    return seconds, sent


def partition_estimate(module: ModuleOp, target: Target) -> float:
    """A quick modeled time of a partitioned graph (level 1), to compare splits.

    Each op: the larger of its FLOPs at peak and the bytes of the weights and
    inputs it reads (function arguments) at HBM bandwidth; each collective:
    `collective_cost`; each host call: `host_call_cost`. Stages run one after another (one token through the
    pipeline). Weights past one socket's HBM are read at DDR bandwidth.
    """
    from rducc.dialects.rdu.collectives import COLLECTIVE_OPS

    seconds = 0.0
    for function in functions(module):
        args = set(function.args)
        for op in function.body.block.ops:
            if isinstance(op, COLLECTIVE_OPS):
                seconds += collective_cost(op, target)[0]
                continue
            if isinstance(op, HostCallOp):
                seconds += host_call_cost(op, target).modeled_time_s
                continue
            element = _compute_element(op)
            flops = op_flops(op)
            compute = flops / target.peak_flops(str(element)) if flops and element is not None else 0.0
            read = sum(value_bytes(v) for v in op.operands if v in args and isinstance(v.type, TensorType))
            seconds += max(compute, read / target.hbm_bandwidth)
    per_stage: Counter[int] = Counter()
    stages = global_stages(module)
    from rducc.dialects.tier import GlobalOp

    for op in module.ops:
        if isinstance(op, GlobalOp):
            per_stage[stages.get(op.sym_name.data, 0)] += value_bytes(op.global_type)
    spill = max((b - target.hbm_bytes for b in per_stage.values()), default=0)
    return seconds + max(spill, 0) / target.ddr_bandwidth


def _weight_values(function: func.FuncOp) -> frozenset[SSAValue]:
    """The buffers of a function that hold weights: its globals, and the weight
    arguments (`rdu.weight`) of an outlined layer."""
    from rducc.dialects.tier import GetGlobalOp, ViewOp

    found: set[SSAValue] = {arg for arg, a in zip(function.args, arg_attrs(function)) if is_weight(a)}
    found |= {op.results[0] for op in function.walk() if isinstance(op, GetGlobalOp)}
    found |= {op.result for op in function.walk() if isinstance(op, ViewOp) and op.source in found}
    return frozenset(found)


def _int_attr(op: Operation, name: str) -> int:
    value = op.attributes.get(name)
    return value.value.data if isinstance(value, IntegerAttr) else 0


def estimate(module: ModuleOp, target: Target) -> Report:
    """Model the time of a lowered program (level memory or placed) on `target`.

    Shapes only: no weights or inputs are needed. Raises `RduccError` for a
    module that is not lowered to tier.compute yet.
    """
    level = level_of(module)
    if level is not None and level not in LOWERED_LEVELS:
        raise RduccError(
            f"cost model: the module is at level '{level}'; lower it to 'memory' or 'placed' first"
        )
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
    kernels = kernel_costs(walk.kernels, target, capacity - peak if capacity else None)
    loops = walk.loops
    _count_savings(loops, walk.by_function, target)
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


def _count_savings(loops: list[KernelLoop], by_function: dict[str, list[KernelRecord]], target: Target) -> None:
    """Each looped run's launches saved and launch + fill time not paid (in place)."""
    for loop in loops:
        if loop.looped:
            (record,) = by_function[loop.callee]
            loop.launches_saved = loop.calls - 1
            work = kernel_work(record, target)
            saved = kernel_time(work, target).modeled_time_s - kernel_time(work, target, looped=True).modeled_time_s
            loop.saved_s = loop.launches_saved * saved


__all__ = [
    "HostCallCost",
    "host_call_cost",
    "KernelCost",
    "Report",
    "estimate",
    "collective_cost",
    "kernel_costs",
    "kernel_time",
    "kernel_work",
    "walk_placed",
    "KernelRecord",
    "KernelWork",
    "Overlap",
    "ProgramWalk",
    "Transfer",
    "partition_estimate",
    "op_flops",
    "op_sram_bytes",
    "transfer_bytes",
    "trip_count",
]
