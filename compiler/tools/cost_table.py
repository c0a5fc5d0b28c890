"""The cost model's report as text (`rducc-run --simulate`, `rducc --report`):
one row a kernel, then the totals; and the number formatters the tools share.
"""

from __future__ import annotations

from collections import Counter

from rducc.model.cost_model import HostCallCost, Report
from rducc.model.kernel_looping import KernelLoop
from rducc.model.kernel_timing import KernelCost

LAYOUT_OPS = frozenset({"rdu.reshape", "rdu.transpose", "rdu.broadcast", "rdu.slice", "rdu.concat"})
"""Layout ops, counted together in a kernel's `ops fused`."""


def cost_table(report: Report) -> str:
    """The cost report as a readable text table, one row per kernel, then the totals."""
    header = ("kernel", "tiles", "PCUs", "PMUs", "ops fused", "FLOPs", "HBM B", "DDR B", "SRAM B", "bound",
              "modeled us", "share")
    rows = [
        (
            k.name,
            str(k.tiles),
            _units(k.pcus, k.sections),
            str(k.pmus),
            _ops_summary(k.ops_fused),
            si(k.flops),
            si(k.hbm_bytes),
            si(k.ddr_bytes),
            si(k.sram_bytes),
            k.bound,
            f"{k.modeled_time_s * 1e6:.2f}",
            f"{k.share * 100:.1f}%",
        )
        for k in report.kernels
    ]
    rows.append(
        (
            "total",
            str(sum(k.tiles for k in report.kernels)),
            str(max((k.pcus for k in report.kernels), default=0)),
            str(max((k.pmus for k in report.kernels), default=0)),
            _ops_summary(sum((Counter(k.ops_fused) for k in report.kernels), Counter())),
            si(report.flops),
            si(report.hbm_bytes),
            si(report.ddr_bytes),
            si(sum(k.sram_bytes for k in report.kernels)),
            _bound_summary(report.kernels),
            f"{report.modeled_time_s * 1e6:.2f}",
            "100.0%" if report.kernels else "-",
        )
    )
    widths = [max(len(r[i]) for r in (header, *rows)) for i in range(len(header))]
    left = {0, 4, 9}

    def line(cells: tuple[str, ...]) -> str:
        return "  ".join(
            c.ljust(w) if i in left else c.rjust(w) for i, (c, w) in enumerate(zip(cells, widths))
        ).rstrip()

    rule = "  ".join("-" * w for w in widths)
    out = [f"cost model: target {report.target}, {len(report.kernels)} kernels", line(header), rule]
    out += [line(r) for r in rows[:-1]]
    out += [rule, line(rows[-1]), ""]
    seconds = report.modeled_time_s
    rate = report.flops / seconds if seconds > 0 else 0.0
    out.append(f"modeled time      {seconds * 1e6:.2f} us ({seconds * 1e3:.4f} ms)")
    out.append(f"FLOPs             {report.flops} ({si(rate)}FLOP/s achieved)")
    for loop in report.loops:
        out.append(_loop_line(loop))
    out += _host_lines(report.host_calls)
    link_s = sum(k.link_s for k in report.kernels)
    if link_s:
        sent = sum(k.link_bytes for k in report.kernels)
        hidden = sum(k.overlap_s for k in report.kernels)
        out.append(f"socket links      {link_s * 1e6:.2f} us ({hidden * 1e6:.2f} us of it behind the next kernels' "
                   f"weight reads), {sent} B sent a socket (collectives, send/recv)")
    for key in sorted(report.bytes_by_tier):
        out.append(f"bytes {key:<11} {report.bytes_by_tier[key]} ({si(report.bytes_by_tier[key])}B)")
    out.append(
        f"SRAM              peak {report.sram_peak_bytes}, lower bound {report.sram_lower_bound_bytes}, "
        f"capacity {report.sram_capacity_bytes} bytes"
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
        kind = " (custom op, host compute assumed at the target's host_bandwidth)" if h.custom else ""
        lines.append(f"  {h.name}{kind}: {h.bytes_to_host} B to the host, {h.bytes_from_host} B back, "
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
    plural = "s" if loop.reloads != 1 else ""
    loads = f", less {loop.reloads} configuration load{plural} an iteration" if loop.reloads else ""
    held = ("" if not loop.shared else "; one configuration, loaded once" if loop.shared == 1
            else f"; its {loop.shared} configurations held as one, loaded once")
    why_not = f"; {loop.not_shared}" if loop.not_shared else ""
    return (f"{head} as one loop: {loop.launches_saved} launch{'es' if loop.launches_saved != 1 else ''} saved "
            f"({loop.saved_s * 1e6:.2f} us of launch and DMA start-up{loads}){held}{why_not}")


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


def si(value: float) -> str:
    """3 significant digits with an SI prefix: 1.23G, 456k, 7."""
    for scale, prefix in ((1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(value) >= scale:
            return f"{value / scale:.3g}{prefix}"
    return f"{value:.3g}" if isinstance(value, float) else str(value)



def megabytes(value: int) -> str:
    """`0.36 MB` from 100 kB up, else `27,688 B` (the `--report` tables)."""
    return f"{value / 1e6:,.2f} MB" if value >= 1e5 else f"{value:,} B"


def binary_bytes(n: float) -> str:
    """3 significant digits in GiB, MiB or KiB, else whole bytes (the plots' labels)."""
    for scale, unit in ((1 << 30, "GiB"), (1 << 20, "MiB"), (1 << 10, "KiB")):
        if n >= scale:
            return f"{n / scale:.3g} {unit}"
    return f"{int(n)} B"
