"""One kernel's modeled time (`cost_model`'s docstring has the rules): its
work resource by resource (`kernel_work`, from its mapping: `mapping.py`
beside it), and the one timing of it (`kernel_time`), with its collectives'
link time.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields, replace

from xdsl.dialects import arith
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation

from rducc.dialects.contracts import KernelMapping, is_partitioned, mapping_of, spmd_ranks
from rducc.dialects.op_facts import facts_of, tensor_bytes
from rducc.dialects.precision import compute_element
from rducc.dialects.program import kernel_name
from rducc.dialects.rdu import dataflow as rdu
from rducc.dialects.shapes import value_bytes
from rducc.dialects.tier import ComputeOp
from rducc.dialects.unchanged import remembered
from rducc.model.mapping import KernelBody, body_stages, buffer_works, compute_body, depths, map_kernel
from rducc.model.program_walk import KernelRecord
from rducc.targets import Target

TIME_KEYS = ("compute", "sram", "hbm", "ddr")
"""The pipeline's resources, in the order ties are broken for `bound`."""


class TierTotals:
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
class KernelCost(_KernelFacts, TierTotals):
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


def _tier_bytes(bytes_by_tier: dict[str, int], tier: str) -> int:
    return sum(n for key, n in bytes_by_tier.items() if tier in key.split("->"))



def op_flops(op: Operation) -> int:
    """FLOPs of one body op on one tile: the op's own count (`OpFacts.flops`; the
    module docstring lists the rules); 0 for an op that declares it computes
    nothing; an error for an op with no facts."""
    facts = facts_of(op)
    return facts.flops() if facts is not None else 0


def peak_seconds(op: Operation, target: Target) -> float:
    """Seconds of `op_flops` at the target's peak in the element type the op computes
    in (`compute_element`: a contraction of widened bf16 values at the bf16 peak)."""
    flops = op_flops(op)
    element = compute_element(op)
    return flops / target.peak_flops(str(element)) if flops and element is not None else 0.0


def op_sram_bytes(op: Operation) -> int:
    """SRAM bytes one body op reads and writes on one tile: tensor operands + results."""
    facts = facts_of(op)
    if facts is None:
        return sum(tensor_bytes(v) for v in (*op.operands, *op.results))
    return facts.bytes_read() + facts.bytes_written()



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
    port = target.bandwidth("sram") / target.pmus
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


def _body_counts(compute: ComputeOp) -> tuple[dict[str, int], int, int]:
    """A kernel body's ops by name, FLOPs and SRAM bytes on one tile (not its yield nor constants)."""
    ops: Counter[str] = Counter()
    flops = sram = 0
    for op in compute.body.block.ops:
        if isinstance(op, rdu.YieldOp | arith.ConstantOp):
            continue
        ops[op.name] += 1
        flops += op_flops(op)
        sram += op_sram_bytes(op)
    return dict(ops), flops, sram


def kernel_work(record: KernelRecord, target: Target) -> KernelWork:
    """A kernel's FLOPs, bytes and per-resource seconds on `target` (the module docstring's rules)."""
    tiles = record.tiles
    ops, flops_a_tile, sram_a_tile = remembered(("body counts", record.op), lambda: _body_counts(record.op))
    flops = flops_a_tile * tiles
    sram = sram_a_tile * tiles
    by_tier: Counter[str] = Counter()
    for transfer in (*record.feeds, *record.drains):
        by_tier[transfer.key] += transfer.total
    sram += 2 * by_tier.get("sram->sram", 0)
    mapping = record.mapping or kernel_mapping(record.op, target)
    mapped = mapped_times(remembered(("compute body", record.op), lambda: compute_body(record.op)), mapping, tiles,
                          target)
    first: Counter[str] = Counter()
    if tiles > 1:
        for transfer in record.feeds:
            if transfer.in_loop:
                first[transfer.key.split("->")[0]] += transfer.bytes_once
    first_s = first_tile_seconds(first, target)
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
        sram_s=mapped.sram_s + 2 * by_tier.get("sram->sram", 0) / target.bandwidth("sram"),
        hbm_s=_tier_bytes(by_tier, "hbm") / target.sustained_bandwidth("hbm"),
        ddr_s=_tier_bytes(by_tier, "ddr") / target.sustained_bandwidth("ddr"),
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


def planned_work(body: KernelBody, mapping: KernelMapping, target: Target) -> KernelWork:
    """The work of a kernel not lowered yet (a group of ops `rdu-fuse` weighs), before
    its bytes have tiers: compute, SRAM ports and pipeline fill from its mapping, no
    bytes moved (`with_bytes` gives it its tiers' bytes)."""
    mapped = mapped_times(body, mapping, body.tiles, target)
    ops = Counter(op.name for op in body.ops if not isinstance(op, rdu.YieldOp | arith.ConstantOp))
    return KernelWork(
        name=body.name, ops_fused=dict(ops), flops=sum(op_flops(op) for op in body.ops if op.name in ops),
        bytes_by_tier={}, sram_bytes=0, tiles=body.tiles, compute_s=mapped.compute_s,
        sram_s=mapped.sram_s, hbm_s=0.0, ddr_s=0.0, startup_s=0.0, pipeline_s=mapped.pipeline_s,
        reconfigure_s=(mapping.sections - 1) * target.reconfigure_s, pcus=mapping.pcus(), pmus=mapping.pmus(),
        sections=mapping.sections)


def first_tile_seconds(first_bytes: Mapping[str, int], target: Target) -> dict[str, float]:
    """Per source tier, the seconds a tile loop's first tile takes to load its bytes
    there (`first_bytes`): paid in the kernel's fill, before its pipeline runs, and
    not again in that tier's time (`KernelWork.first_tile_s`)."""
    return {tier: n / target.sustained_bandwidth(tier) for tier, n in first_bytes.items() if n}


def with_bytes(work: KernelWork, bytes_by_tier: dict[str, int], target: Target,
               first_bytes: Mapping[str, int] | None = None) -> KernelWork:
    """`work` (a kernel not lowered yet) moving `bytes_by_tier`, each tier's bytes at its
    sustained bandwidth, one DMA start-up when it moves any; `first_bytes`: per source
    tier, what the first tile of its tile loop loads, paid in the fill as `kernel_work`
    pays a lowered kernel's (none apart when not given)."""
    first_s = first_tile_seconds(first_bytes or {}, target)
    return replace(work, bytes_by_tier=bytes_by_tier,
                   hbm_s=_tier_bytes(bytes_by_tier, "hbm") / target.sustained_bandwidth("hbm"),
                   ddr_s=_tier_bytes(bytes_by_tier, "ddr") / target.sustained_bandwidth("ddr"),
                   startup_s=(target.dma_latency_s if bytes_by_tier else 0.0) + max(first_s.values(), default=0.0),
                   first_tile_s=first_s)


def planned_cost(body: KernelBody, mapping: KernelMapping, bytes_by_tier: dict[str, int],
                 target: Target, looped: bool = False) -> KernelCost:
    """The cost of a kernel not lowered yet (a group of ops `rdu-fuse` weighs), by
    `kernel_time` like any other: its `planned_work` moving `bytes_by_tier`
    (`with_bytes`). `looped`: as a later iteration of a kernel loop (no launch, no
    DMA start-up)."""
    return kernel_time(with_bytes(planned_work(body, mapping, target), bytes_by_tier, target), target, looped)


def _hidden_s(work: KernelWork, target: Target, overlap: Overlap | None, looped: bool = False) -> float:
    """What the kernel's weight reads during the previous kernel's collectives take
    off its busiest resource (0 when it is bound by compute or SRAM rather than HBM).

    The links and the DMA engines are separate, and the next kernel's weights do
    not depend on a collective, so while the previous kernel's link time L runs,
    this one reads ahead the part of its `prefetch_bytes` P (weights loaded
    before its tile loop) that the wait covers and the free SRAM holds:
    `min(P, L x hbm_bandwidth, room_bytes)` bytes, the rest after the wait. Its
    HBM time shrinks by those bytes / hbm_bandwidth (nothing without room).
    """
    if overlap is None or overlap.link_s <= 0:
        return 0.0
    bandwidth = target.sustained_bandwidth("hbm")
    early = min(work.prefetch_bytes, overlap.link_s * bandwidth, max(0, overlap.room_bytes)) / bandwidth
    if early <= 0:
        return 0.0
    times = work.times(looped)
    return max(times.values()) - max(times["compute"], times["sram"], times["hbm"] - early, times["ddr"])


def kernel_time(work: KernelWork, target: Target, looped: bool = False, overlap: Overlap | None = None,
                reloaded: bool = False) -> KernelCost:
    """The one timing of a kernel: its pipeline bound by the busiest resource,
    plus fill, launch and link time.

    `looped`: a later iteration of a kernel loop pays no launch and no fill
    (compiler/model/kernel_looping.py); `reloaded`: a looped kernel whose configuration
    the units do not hold (compiler/model/configuration.py), it loads it every
    iteration (one `reconfigure_s`).
    `overlap`: the previous kernel's collectives, behind which its weight reads
    may run (`_hidden_s`: `overlap_s`).
    """
    times = work.times(looped)
    fill = (0.0 if looped else work.startup_s) + work.pipeline_s
    launch = 0.0 if looped else target.kernel_launch_s
    busiest = max(TIME_KEYS, key=lambda k: times[k])  # max keeps the first on a tie
    bound = "launch" if launch > times[busiest] else busiest
    if work.link_s > max(launch, times[busiest]):
        bound = "link"
    hidden = _hidden_s(work, target, overlap, looped)
    reconfigure = work.reconfigure_s + (target.reconfigure_s if reloaded else 0.0)
    return KernelCost(
        **{f.name: getattr(work, f.name) for f in fields(_KernelFacts)},
        bound=bound,
        compute_s=work.compute_s,
        sram_s=work.sram_s,
        hbm_s=work.hbm_s,
        ddr_s=work.ddr_s,
        fill_s=fill,
        launch_s=launch,
        modeled_time_s=times[busiest] + fill + launch + reconfigure + work.link_s - hidden,
        reconfigure_s=reconfigure,
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


def _hops(a: int, b: int, target: Target) -> int:
    """Link hops between sockets a and b: 1 inside a module, `cross_module_hops` between modules."""
    same = a // max(1, target.module_sockets) == b // max(1, target.module_sockets)
    return 1 if same else max(1, target.cross_module_hops)


def ring_step_hops(n: int, target: Target, sockets: Sequence[int] | None = None) -> int:
    """Link hops of one ring step over n sockets (`sockets`, the group's; default
    0..n-1): the ring's slowest pair, 1 hop while the group is inside one module,
    `cross_module_hops` once the ring leaves one."""
    group = list(sockets) if sockets is not None else list(range(n))
    return max(_hops(group[0], other, target) for other in group)


def doubling_hops(n: int, target: Target, sockets: Sequence[int] | None = None) -> list[int]:
    """Link hops of each recursive-doubling step over n sockets (a power of two;
    `sockets`, the group's, default 0..n-1): step k pairs the group's members 2^k
    apart, its hops those of its slowest pair."""
    group = list(sockets) if sockets is not None else list(range(n))
    return [max(_hops(group[i], group[i ^ (1 << k)], target) for i in range(n))
            for k in range(n.bit_length() - 1)]


def collective_sockets(op: Operation) -> tuple[int, ...]:
    """The sockets of rank 0's replica group of a collective (`op.groups` over the
    partitioned module's SPMD ranks; a rank is its stage-0 socket)."""
    from rducc.dialects.rdu.collectives import GROUPED_OPS, group_of

    assert isinstance(op, GROUPED_OPS)
    module = op.get_toplevel_object()
    ranks = op.group_size * op.stride_size
    if isinstance(module, ModuleOp) and is_partitioned(module) and spmd_ranks(module) % ranks == 0:
        ranks = spmd_ranks(module)
    return group_of(op.groups(ranks), 0)


def collective_cost(op: Operation, target: Target) -> tuple[float, int]:
    """(seconds, bytes one socket sends) of one collective, from the target's link
    figures and topology.

    B = the input's bytes on one socket, n = the group, W = link_bandwidth, a
    step's latency = its hops x link_latency_s (`ring_step_hops`,
    `doubling_hops` over the sockets of the op's replica group,
    `collective_sockets`: 1 hop inside a module of `module_sockets`,
    `cross_module_hops` between modules: dp's groups of ranks tp apart leave a
    module where tp's consecutive ones stay in it). all_reduce: the faster of a ring,
    2(n-1) steps of B/n, and recursive doubling (a tree of pairs), log2(n)
    steps of B (n a power of two); all_gather: (n-1) ring steps of B, or
    the doubling steps' latencies and (n-1) B; reduce_scatter: (n-1) ring
    steps of B/n; send_recv: one one-hop step of B; all_to_all: a pairwise
    exchange, (n-1) steps each sending B/n to one peer, at the ring's hops a
    step; local_part (a rank's part of a value it holds whole): nothing sent.
    """
    from rducc.dialects.rdu.collectives import (
        AllGatherOp,
        AllReduceOp,
        AllToAllOp,
        LocalPartOp,
        ReduceScatterOp,
        SendRecvOp,
    )

    size = value_bytes(op.operands[0])
    if isinstance(op, LocalPartOp):
        return 0.0, 0
    if isinstance(op, SendRecvOp):
        return collective_seconds("send_recv", size, 2, target)
    assert isinstance(op, AllGatherOp | AllReduceOp | ReduceScatterOp | AllToAllOp)
    kinds = {AllReduceOp: "all_reduce", AllGatherOp: "all_gather", ReduceScatterOp: "reduce_scatter",
             AllToAllOp: "all_to_all"}
    return collective_seconds(kinds[type(op)], size, op.group_size, target, collective_sockets(op))


COLLECTIVE_KINDS = ("all_reduce", "all_gather", "reduce_scatter", "all_to_all", "send_recv")


def collective_seconds(kind: str, size: int, n: int, target: Target,
                       sockets: Sequence[int] | None = None) -> tuple[float, int]:
    """(seconds, bytes one socket sends) of a collective of `kind` (`COLLECTIVE_KINDS`)
    whose input is `size` bytes on each of `n` sockets (`sockets`, the group's;
    default 0..n-1): `collective_cost`'s rules, also for a collective that is not
    in the IR yet (a split the cost model weighs)."""
    latency, bandwidth = target.link_latency_s, target.link_bandwidth
    if kind == "send_recv":
        return latency + size / bandwidth, size
    if n <= 1:
        return 0.0, 0
    if kind == "all_to_all":
        return (n - 1) * (ring_step_hops(n, target, sockets) * latency + size / n / bandwidth), (n - 1) * size // n
    doubling = (n & (n - 1)) == 0
    step = ring_step_hops(n, target, sockets) * latency
    tree = doubling_hops(n, target, sockets) if doubling else []
    if kind == "all_reduce":
        ring = (2 * (n - 1) * (step + size / n / bandwidth), 2 * (n - 1) * size // n)
        if not doubling:
            return ring
        return min(ring, (sum(h * latency + size / bandwidth for h in tree), len(tree) * size))
    if kind == "all_gather":
        ring = ((n - 1) * (step + size / bandwidth), (n - 1) * size)
        return min(ring, (sum(tree) * latency + (n - 1) * size / bandwidth, (n - 1) * size)) if doubling else ring
    if kind == "reduce_scatter":
        return (n - 1) * (step + size / n / bandwidth), (n - 1) * size // n
    raise ValueError(f"unknown collective kind {kind!r}; one of {', '.join(COLLECTIVE_KINDS)}")


def kernel_link_cost(compute: Operation, tiles: int, target: Target) -> tuple[float, int]:
    """Link time and bytes of the collectives in a kernel's body, run once a tile."""
    from rducc.dialects.rdu.collectives import COLLECTIVE_OPS

    seconds, sent = 0.0, 0
    for op in remembered(("collectives", compute),
                         lambda: tuple(op for op in compute.walk() if isinstance(op, COLLECTIVE_OPS))):
        op_s, op_bytes = collective_cost(op, target)
        seconds, sent = seconds + op_s * tiles, sent + op_bytes * tiles
    return seconds, sent


