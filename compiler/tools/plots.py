"""Pictures of a placed program: SRAM map, kernel times, kernel graph.

    write_plots(program.module, program.report, Path("plots"))

writes into the directory (created if missing):

- `sram_map.png`: every SRAM buffer of @forward (each `tier.alloc` in sram
  with all its rotating copies, and each `tier.compute` body value with a
  `tier.offset`) as a rectangle: x = its live interval in program order (as
  the SRAM allocator sees it), y = its bytes [offset, offset + size),
  coloured by the kernel it belongs to; the SRAM capacity as a line when it
  is on the scale of the peak (else it is named in the title);
- `kernel_times.png`: each kernel's modeled time as a bar (coloured by what
  bounds it), with a marker for each of its pipeline terms (compute, SRAM,
  HBM, DDR, fill + launch), log scale in microseconds;
- `kernels.dot`: the kernel graph in Graphviz dot: one node per
  `tier.compute`, per user input and per function result, an edge for every
  flow of data between them (through an HBM buffer or an SRAM buffer kept on
  chip) labelled with the bytes;
- `kernels.svg`: `dot -Tsvg kernels.dot`, only when `dot` is on PATH;
- `fabric.png`: each kernel's mapping on the target's fabric (`rdu.mapping`,
  from `rdu-map-units`, else made by the same rules): one panel per kernel and
  section (the first FABRIC_PANELS in program order, or only the kernel
  `kernel=` names), the grid of `[fabric]` sites with each PCU coloured by
  the kind of op whose stage holds it, shaded by its utilization (how busy
  the stage is while the section's slowest stage sets the pace, x the
  share of its lanes and stages its shape fills), the PMUs of each buffer in
  grey, the busiest stage's units edged in red (`fabric_views` is the data).

matplotlib is needed for the PNGs (`pip install 'rducc[plot]'`); the dot
file is written with the standard library only.
"""

from __future__ import annotations

import io
import shutil
import subprocess
import textwrap
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

from xdsl.dialects import func
from xdsl.dialects.builtin import IntegerAttr, ModuleOp
from xdsl.ir import Block, BlockArgument, Operation, SSAValue

from rducc.dialects import contracts
from rducc.dialects.contracts import arg_attrs, input_label, is_outlined, module_target
from rducc.dialects.program import find_entry, functions, kernel_name, kernel_run_name
from rducc.dialects.shapes import value_bytes
from rducc.dialects.tier import (
    AllocOp,
    ComputeOp,
    DmaOp,
    GatherDmaOp,
    ScatterDmaOp,
)
from rducc.dialects.unchanged import unchanged
from rducc.errors import RduccError
from rducc.files import Writer, bytes_writer, write_together
from rducc.model.cost_model import settle_loops
from rducc.model.kernel_timing import KernelCost, kernel_mapping
from rducc.model.mapping import body_stages, compute_body, site, utilization
from rducc.model.overlap_schedule import kernel_costs
from rducc.model.program_walk import KernelRecord, Transfer, walk_placed
from rducc.passes.rdu_sram_alloc import collect_buffers
from rducc.tools.cost_table import binary_bytes

FIGSIZE = (8, 4.5)
DPI = 100
LEGEND_MAX = 12
"""Legend entries of the SRAM map: the LEGEND_MAX - 1 largest kernels, then `others`."""


def write_plots(module: ModuleOp, report, directory: Path, kernel: str | None = None) -> list[Path]:
    """Write the SRAM map, kernel times, kernel graph (and SVG) and the fabric view
    (of every kernel, or of `kernel` alone) into `directory` (made if missing);
    return the paths written."""
    outputs = plot_outputs(module, report, directory, kernel)
    write_together(outputs, [directory])
    return [Path(path) for path, _ in outputs]


def plot_outputs(module: ModuleOp, report, directory: Path, kernel: str | None = None) -> list[tuple[str, Writer]]:
    """The pictures `write_plots` writes, drawn now and written by the caller with
    its other outputs (rducc.files.write_together): (path, writer) each."""
    try:
        import matplotlib

        matplotlib.use("Agg", force=True)
        import matplotlib.pyplot as plt
    except ImportError as error:
        raise RduccError("--plot needs matplotlib: pip install 'rducc[plot]'") from error
    from rducc.passes.rdu_outline_layers import inline_calls

    views = fabric_views(module, kernel)  # an unknown kernel refused before anything is drawn
    directory = Path(directory)
    function = _forward(inline_calls(module))  # an outlined layer drawn at each of its calls
    computes = _computes(function)
    run_names = _run_names(module)  # the inlined kernels in the same order, named by their calls
    names = dict(zip(computes, run_names)) if len(run_names) == len(computes) else {}
    dot = kernel_graph_dot(module, costed_kernels(module))
    files = {
        "sram_map.png": _drawn(lambda stream: _sram_map(plt, function, report, stream, names)),
        "kernel_times.png": _drawn(lambda stream: _kernel_times(plt, report, stream)),
        "fabric.png": _drawn(lambda stream: _fabric(plt, views, module_target(module).name, stream)),
        "kernels.dot": dot.encode(),
    }
    svg = _svg(dot)
    if svg is not None:
        files["kernels.svg"] = svg
    return [(str(directory / name), bytes_writer(data)) for name, data in files.items()]


def _drawn(draw) -> bytes:
    """The PNG bytes a drawing function writes into its stream."""
    stream = io.BytesIO()
    draw(stream)
    return stream.getvalue()


def _svg(dot_text: str) -> bytes | None:
    """`dot -Tsvg` of the kernel graph, only when `dot` is on PATH."""
    dot = shutil.which("dot")
    if dot is None:
        return None
    try:
        done = subprocess.run([dot, "-Tsvg"], input=dot_text.encode(), check=True, capture_output=True, timeout=120)
    except (OSError, subprocess.SubprocessError) as error:
        raise RduccError(f"dot -Tsvg of the kernel graph failed: {error}") from error
    return done.stdout


# --------------------------------------------------------------------------
# Shared helpers
# --------------------------------------------------------------------------


def _forward(module: ModuleOp) -> func.FuncOp:
    """@forward, else the first function that is not an outlined layer."""
    funcs = [f for f in functions(module) if not is_outlined(f)] or list(functions(module))
    if not funcs:
        raise RduccError("plots: the module has no function")
    return find_entry(module) or funcs[0]


def _computes(function: func.FuncOp) -> list[ComputeOp]:
    return [op for op in function.body.walk() if isinstance(op, ComputeOp)]


def _run_names(module: ModuleOp) -> list[str]:
    """@forward's kernels in program order with each outlined layer's at each of
    its calls (the order `inline_calls` puts them in), named by their run:
    `k0`, `layer[0].k0`, `layer[1].k0`, ... (`program.kernel_run_name`)."""
    callees = {f.sym_name.data: f for f in functions(module) if is_outlined(f)}
    names: list[str] = []
    indices: dict[func.CallOp, int] = {}

    def visit(function: func.FuncOp, calls: tuple[func.CallOp, ...]) -> None:
        for op in function.body.walk():
            if isinstance(op, ComputeOp):
                names.append(kernel_run_name(op, calls, indices))
            elif isinstance(op, func.CallOp) and op.callee.string_value() in callees:
                visit(callees[op.callee.string_value()], (*calls, op))

    visit(_forward(module), ())
    return names


def costed_kernels(module: ModuleOp) -> list[tuple[KernelRecord, KernelCost]]:
    """Each kernel as it runs (the cost model's walk, keyed to its ops) with its
    cost on the module's target, as the cost model times it."""
    target = module_target(module)
    with unchanged():  # the program is read, not rewritten: each op's IR-only answers worked out once
        records, _ = settle_loops(walk_placed(module, target.kernel_looping), target)
        return list(zip(records, kernel_costs(records, target, _sram_room(module))))


def _sram_room(module: ModuleOp) -> int | None:
    """SRAM free beside the plan's peak (largest over functions), None when unplaced."""
    every = list(functions(module))
    capacity = max((_int_attr(f, contracts.SRAM_CAPACITY) for f in every), default=0)
    peak = max((_int_attr(f, contracts.SRAM_PEAK) for f in every), default=0)
    return capacity - peak if capacity else None


def _int_attr(op: Operation, name: str) -> int:
    value = op.attributes.get(name)
    return value.value.data if isinstance(value, IntegerAttr) else 0


def _us(seconds: float) -> str:
    if seconds >= 1e-3:
        return f"{seconds * 1e3:.3g} ms"
    return f"{seconds * 1e6:.3g} us"


def _ops_label(ops: dict[str, int]) -> str:
    counts: Counter[str] = Counter()
    for name, n in ops.items():
        counts[name.split(".", 1)[-1]] += n
    return ", ".join(f"{n} {k}" for k, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))


# --------------------------------------------------------------------------
# SRAM map
# --------------------------------------------------------------------------


def _buffer_kernel(op: Operation, starts: list[tuple[int, str]], start: int, names: dict[ComputeOp, str]) -> str:
    """The kernel a buffer belongs to: its compute, else the next compute after it."""
    parent = op.parent_op()
    while parent is not None and not isinstance(parent, ComputeOp):
        parent = parent.parent_op()
    if isinstance(parent, ComputeOp):
        return names.get(parent) or kernel_name(parent)
    if isinstance(op, AllocOp):
        for use in op.result.uses:
            if isinstance(use.operation, ComputeOp):
                return names.get(use.operation) or kernel_name(use.operation)
    for position, name in starts:
        if position >= start:
            return name
    return starts[-1][1] if starts else "?"


def _sram_map(plt, function: func.FuncOp, report, path: BinaryIO,
              names: dict[ComputeOp, str] | None = None) -> BinaryIO:
    """The SRAM map of `function`: each buffer's bytes over its live range,
    coloured by kernel (`names`: each compute's run name, else its `kernel_name`)."""
    from matplotlib.patches import Patch, Rectangle

    names = names or {}
    position = {op: i for i, op in enumerate(function.body.walk())}
    starts = [(position[c], names.get(c) or kernel_name(c)) for c in _computes(function)]
    rects = []  # (x0, x1, y0, size, kernel, copies)
    for buffer in collect_buffers(function):
        op = buffer.op
        if isinstance(op, AllocOp):
            if op.offset is None:
                continue
            offset, copies = op.offset.value.data, op.copies
        else:
            if contracts.BODY_OFFSET not in op.attributes:
                continue
            offset, copies = _int_attr(op, contracts.BODY_OFFSET), 1
        kernel = _buffer_kernel(op, starts, buffer.start, names)
        rects.append((buffer.start, buffer.end + 1, offset, buffer.size, kernel, copies))

    capacity = _int_attr(function, contracts.SRAM_CAPACITY) or getattr(report, "sram_capacity_bytes", 0)
    peak = _int_attr(function, contracts.SRAM_PEAK) or max((r[2] + r[3] for r in rects), default=0)
    bound = _int_attr(function, contracts.SRAM_LOWER_BOUND) or getattr(report, "sram_lower_bound_bytes", 0)
    scale, unit = (1 << 20, "MiB") if max(peak, 1) >= (4 << 20) else ((1 << 10, "KiB") if peak >= 4096 else (1, "B"))

    area: Counter[str] = Counter()
    for x0, x1, _, size, kernel, _ in rects:
        area[kernel] += (x1 - x0) * size
    order = [name for _, name in starts]
    named = [k for k, _ in area.most_common()]
    if len(named) > LEGEND_MAX:
        named = named[: LEGEND_MAX - 1]
    named.sort(key=lambda k: order.index(k) if k in order else len(order))
    cmap = plt.get_cmap("tab20" if len(named) > 10 else "tab10")
    colours = {k: cmap(i % cmap.N) for i, k in enumerate(named)}
    greys = ("#c8c8c8", "#a8a8a8")
    others = sorted({r[4] for r in rects} - set(colours), key=lambda k: order.index(k) if k in order else 0)
    for i, k in enumerate(others):
        colours[k] = greys[i % 2]

    fig, ax = plt.subplots(figsize=FIGSIZE, dpi=DPI)
    edge = 0.3 if len(rects) < 400 else 0.1
    for x0, x1, y0, size, kernel, copies in rects:
        ax.add_patch(Rectangle((x0, y0 / scale), x1 - x0, size / scale, facecolor=colours[kernel],
                               edgecolor="black", linewidth=edge, alpha=0.9))
        if copies > 1:
            for c in range(1, copies):
                y = (y0 + size * c / copies) / scale
                ax.plot([x0, x1], [y, y], color="black", linewidth=0.4, linestyle=":")
    xmax = max((r[1] for r in rects), default=len(position)) or 1
    ymax = max(peak, 1) / scale
    title = f"SRAM map of @{function.sym_name.data}: peak {binary_bytes(peak)}, lower bound {binary_bytes(bound)}"
    if capacity and capacity <= 3 * max(peak, 1):
        ax.axhline(capacity / scale, color="red", linewidth=1.2, linestyle="--")
        ax.text(xmax, capacity / scale, f" capacity {binary_bytes(capacity)}", color="red",
                va="bottom", ha="right", fontsize=8)
        ymax = max(ymax, capacity / scale)
    elif capacity:
        title += f"\ncapacity {binary_bytes(capacity)} (off scale: peak is {peak / capacity:.2%} of it)"
    ax.axhline(peak / scale, color="black", linewidth=0.6, linestyle="-.")
    ax.set_xlim(min((r[0] for r in rects), default=0), xmax)
    ax.set_ylim(0, ymax * 1.05)
    ax.set_xlabel("program position in @forward (op index)")
    ax.set_ylabel(f"SRAM offset ({unit})")
    ax.set_title(title, fontsize=10)
    handles = [Patch(facecolor=colours[k], edgecolor="black", linewidth=0.3, label=k) for k in named]
    if others:
        handles.append(Patch(facecolor=greys[0], edgecolor="black", linewidth=0.3,
                             label=f"{len(others)} others"))
    if handles:
        ax.legend(handles=handles, fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0),
                  borderaxespad=0, title="kernel", title_fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=DPI, format="png")
    plt.close(fig)
    return path


# --------------------------------------------------------------------------
# Kernel times
# --------------------------------------------------------------------------

BOUND_COLOURS = {"compute": "#4c72b0", "sram": "#55a868", "hbm": "#dd8452", "ddr": "#c44e52", "launch": "#bdbdbd"}
TERMS = (  # (label, getter, marker, colour)
    ("compute", lambda k: k.compute_s, "o", "#1f3f7a"),
    ("sram", lambda k: k.sram_s, "s", "#2d6b3c"),
    ("hbm", lambda k: k.hbm_s, "^", "#a0521d"),
    ("ddr", lambda k: k.ddr_s, "v", "#8b1e22"),
    ("fill+launch", lambda k: k.fill_s + k.launch_s, "x", "black"),
)


def _kernel_times(plt, report, path: BinaryIO) -> BinaryIO:
    from matplotlib.artist import Artist
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    kernels = list(getattr(report, "kernels", []) or [])
    fig, ax = plt.subplots(figsize=FIGSIZE, dpi=DPI)
    n = len(kernels)
    xs = list(range(n))
    times = [k.modeled_time_s * 1e6 for k in kernels]
    ax.bar(xs, times, width=0.8 if n < 60 else 1.0,
           color=[BOUND_COLOURS.get(k.bound, "#cccccc") for k in kernels],
           edgecolor="black" if n < 60 else "none", linewidth=0.3, zorder=2)
    size = 5 if n < 60 else 2.5
    for _label, get, marker, colour in TERMS:
        points = [(x, get(k) * 1e6) for x, k in zip(xs, kernels) if get(k) > 0]
        if points:
            ax.scatter([p[0] for p in points], [p[1] for p in points], marker=marker, s=size**2,
                       color=colour, zorder=3, linewidths=1.0)
    ax.set_yscale("log")
    if n <= 30:
        ax.set_xticks(xs, [k.name for k in kernels], rotation=90 if n > 12 else 0, fontsize=7)
        if n <= 16:
            for x, k, t in zip(xs, kernels, times):
                ax.text(x, t * 1.15, k.bound, ha="center", va="bottom", fontsize=7)
    else:
        step = max(1, n // 15)
        ax.set_xticks(xs[::step], [kernels[i].name for i in xs[::step]], rotation=90, fontsize=7)
    ax.set_xlim(-0.7, n - 0.3 if n else 1)
    if times:
        low = min([t for t in times if t > 0] + [get(k) * 1e6 for _, get, _, _ in TERMS
                                                 for k in kernels if get(k) > 0])
        ax.set_ylim(low / 3, max(times) * 3)
    ax.set_ylabel("modeled time (us, log)")
    ax.set_xlabel("kernel (program order)")
    total = getattr(report, "modeled_time_s", sum(k.modeled_time_s for k in kernels))
    bounds = Counter(k.bound for k in kernels)
    ax.set_title(f"Modeled kernel times on {getattr(report, 'target', '?')}: {n} kernels, total "
                 f"{_us(total)}\nbound: " + ", ".join(f"{b} {c}" for b, c in bounds.most_common()),
                 fontsize=10)
    ax.grid(axis="y", which="major", linewidth=0.3, zorder=0)
    handles: list[Artist] = [
        Patch(facecolor=BOUND_COLOURS[b], label=f"{b}-bound") for b in BOUND_COLOURS if b in bounds
    ]
    handles += [Line2D([], [], marker=m, color=c, linestyle="none", markersize=5, label=f"{label} term")
                for label, _, m, c in TERMS]
    ax.legend(handles=handles, fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0)
    fig.tight_layout()
    fig.savefig(path, dpi=DPI, format="png")
    plt.close(fig)
    return path


# --------------------------------------------------------------------------
# Kernel graph
# --------------------------------------------------------------------------


@dataclass
class _Graph:
    nodes: dict[str, list[str]] = field(default_factory=dict)  # id -> label lines
    shapes: dict[str, str] = field(default_factory=dict)
    edges: dict[tuple[str, str], int] = field(default_factory=lambda: defaultdict(int))


_Key = tuple[tuple[func.CallOp, ...], SSAValue]
"""A value as the program runs: the calls it lives under, and the value."""


class _Scopes:
    """Follows values across calls: a callee's argument is its caller's value,
    a call's result is what the callee returns."""

    def __init__(self, module: ModuleOp) -> None:
        self.functions = {f.sym_name.data: f for f in functions(module)}

    def key(self, calls: tuple[func.CallOp, ...], value: SSAValue) -> _Key:
        while True:
            if calls and isinstance(value, BlockArgument) and value.block is self._body(calls[-1]):
                calls, value = calls[:-1], calls[-1].arguments[value.index]
            elif isinstance(value.owner, func.CallOp) and value.owner.callee.string_value() in self.functions:
                call = value.owner
                returned = self._body(call).last_op
                assert isinstance(returned, func.ReturnOp)
                calls, value = (*calls, call), returned.arguments[value.index]  # type: ignore[attr-defined]
            else:
                return calls, value

    def _body(self, call: func.CallOp) -> Block:
        return self.functions[call.callee.string_value()].body.block


def _moved(transfer: Transfer, calls: tuple[func.CallOp, ...], fill: dict[_Key, dict[str, int]],
           scopes: _Scopes) -> None:
    """Record in `fill` what a transfer carries into its destination (in place)."""
    op = transfer.op
    sources = dict(fill.get(scopes.key(calls, op.source), {}))
    if isinstance(op, ScatterDmaOp):
        sources.update(fill.get(scopes.key(calls, op.indices), {}))
    if isinstance(op, GatherDmaOp):
        for index in op.indices:
            sources.update(fill.get(scopes.key(calls, index), {}))
    moved = transfer.bytes_once * transfer.runs
    windowed = isinstance(op, ScatterDmaOp) or (isinstance(op, DmaOp) and bool(op.dst_offsets))
    dest = scopes.key(calls, op.dest)
    into = fill.setdefault(dest, {}) if windowed or transfer.runs > 1 else {}
    for source in sources:
        into[source] = into.get(source, 0) + moved
    fill[dest] = into


def _entry(record: KernelRecord) -> Operation | None:
    """The function a kernel runs in at the top: its own, or that of its outermost call."""
    op: Operation | None = record.calls[0] if record.calls else record.op
    while op is not None and not isinstance(op, func.FuncOp):
        op = op.parent_op()
    return op


def kernel_graph(module: ModuleOp, kernels: list[tuple[KernelRecord, KernelCost]]) -> _Graph:
    """Kernels (the cost model's records, with their costs), inputs and results of
    @forward, and the bytes flowing between them."""
    graph = _Graph()
    function = _forward(module)
    scopes = _Scopes(module)
    # fill[buffer] = {producer node: bytes of its data now in the buffer}
    fill: dict[_Key, dict[str, int]] = {}
    attrs = arg_attrs(function)
    for i, arg in enumerate(function.body.blocks[0].args):
        name = input_label(attrs[i]) or f"arg{i}"
        node = f"input{i}"
        graph.nodes[node] = [f"input {name}", str(arg.type)]
        graph.shapes[node] = "invhouse"
        fill[((), arg)] = {node: value_bytes(arg)}
    mine = [(record, cost) for record, cost in kernels if _entry(record) is function]
    for index, (record, cost) in enumerate(mine):
        node = f"kernel{index}"
        for transfer in record.feeds:
            _moved(transfer, record.calls, fill, scopes)
        lines = [cost.name]  # the run's name: an outlined layer's kernel by its call, layer[1].k0
        if ops := _ops_label(cost.ops_fused):
            lines.append(ops)
        lines.append(f"{cost.modeled_time_s * 1e6:.3g} us, {cost.bound}-bound")
        graph.nodes[node] = lines
        graph.shapes[node] = "box"
        for value in record.op.ins:
            for source, n in fill.get(scopes.key(record.calls, value), {}).items():
                if source != node:
                    graph.edges[(source, node)] += n
        for value in record.op.outs:
            fill[scopes.key(record.calls, value)] = {node: value_bytes(value) * record.tiles}
        for transfer in record.drains:
            _moved(transfer, record.calls, fill, scopes)
    returned = function.body.blocks[0].last_op
    for i, value in enumerate(returned.operands if isinstance(returned, func.ReturnOp) else ()):
        node = f"result{i}"
        graph.nodes[node] = [f"result {i}", str(value.type)]
        graph.shapes[node] = "house"
        for source, n in fill.get(scopes.key((), value), {}).items():
            graph.edges[(source, node)] += n
    return graph


def _quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def kernel_graph_dot(module: ModuleOp, kernels: list[tuple[KernelRecord, KernelCost]]) -> str:
    """The kernel graph as Graphviz dot text."""
    function = _forward(module)
    graph = kernel_graph(module, kernels)
    lines = [
        f"digraph {_quote(function.sym_name.data)} {{",
        "  rankdir=TB;",
        '  node [fontname="Helvetica", fontsize=10];',
        '  edge [fontname="Helvetica", fontsize=8];',
    ]
    for node, label in graph.nodes.items():
        style = ', style=filled, fillcolor="#e8eef8"' if graph.shapes[node] == "box" else ""
        label_text = "\\n".join(_quote(line)[1:-1] for line in label)
        lines.append(f'  {_quote(node)} [label="{label_text}", shape={graph.shapes[node]}{style}];')
    for (source, dest), n in graph.edges.items():
        lines.append(f"  {_quote(source)} -> {_quote(dest)} [label={_quote(binary_bytes(n))}];")
    lines.append("}")
    return "\n".join(lines) + "\n"


# --------------------------------------------------------------------------
# Fabric: each kernel's mapping
# --------------------------------------------------------------------------

FABRIC_PANELS = 12
"""Panels (kernel sections) `fabric.png` draws at most, in program order."""


@dataclass(frozen=True)
class StageView:
    """One stage of a kernel's mapping as drawn: its op, PCU sites and utilization."""

    op: int
    op_name: str
    section: int
    sites: tuple[tuple[int, int], ...]
    utilization: float
    """Busy share while the section's slowest stage sets the pace x the op's lane and stage fill."""
    busiest: bool


@dataclass(frozen=True)
class FabricView:
    """A kernel's mapping on the fabric: the grid, its stages and its buffers' PMU sites."""

    kernel: str
    grid: tuple[int, int]
    sections: int
    stages: tuple[StageView, ...]
    buffers: tuple[tuple[int, int, tuple[tuple[int, int], ...]], ...]
    """(buffer, section, PMU sites) of each buffer."""

    def units_per_op(self) -> dict[tuple[int, int], int]:
        """(section, body op index) -> PCUs its stage holds."""
        return {(s.section, s.op): len(s.sites) for s in self.stages}


def _label(compute: ComputeOp, entry: Operation | None) -> str:
    """The kernel's name, qualified by its function unless that is the entry (`layer.k0`)."""
    function = compute.parent_op()
    while function is not None and not isinstance(function, func.FuncOp):
        function = function.parent_op()
    if function is None or function is entry:
        return compute.sym_name.data
    return f"{function.sym_name.data}.{compute.sym_name.data}"


def fabric_view(compute: ComputeOp, target, label: str | None = None) -> FabricView:
    """The kernel's mapping as `fabric.png` draws it (module docstring)."""
    body = compute_body(compute)
    mapping = kernel_mapping(compute, target)
    work = {w.index: w.seconds for w in body_stages(body, target)}
    pace = {n: max((work[s.op] / s.units for s in mapping.stages if s.section == n), default=0.0)
            for n in range(mapping.sections)}
    def sites(first: int, units: int, pcu: bool) -> tuple[tuple[int, int], ...]:
        return tuple(site(u, mapping.grid, pcu) for u in range(first, first + units))

    stages = []
    for s in mapping.stages:
        op = body.ops[s.op]
        busy = work[s.op] / s.units / pace[s.section] if pace[s.section] > 0 else 0.0
        stages.append(StageView(s.op, op.name, s.section, sites(s.first, s.units, True),
                                busy * utilization(op, target), busy >= 1.0 - 1e-9 and pace[s.section] > 0))
    buffers = tuple((b.buffer, b.section, sites(b.first, b.units, False)) for b in mapping.buffers)
    return FabricView(label or compute.sym_name.data, mapping.grid, mapping.sections, tuple(stages), buffers)


def fabric_views(module: ModuleOp, kernel: str | None = None) -> list[FabricView]:
    """Every kernel's fabric view in program order (an outlined layer's once), or only
    the kernel named `kernel` (its name, or `function.name`); an error naming the
    kernels there are when none is."""
    target = module_target(module)
    entry = find_entry(module)
    computes = [op for op in module.walk() if isinstance(op, ComputeOp)]
    labelled = [(_label(c, entry), c) for c in computes]
    if kernel is not None:
        chosen = [(name, c) for name, c in labelled if kernel in (name, c.sym_name.data)][:1]
        if not chosen:
            names = ", ".join(name for name, _ in labelled[:20]) + (", ..." if len(labelled) > 20 else "")
            raise RduccError(f"--plot-kernel {kernel}: the program has no kernel of that name (it has: {names})")
        labelled = chosen
    return [fabric_view(c, target, name) for name, c in labelled]


def _fabric(plt, views: list[FabricView], target_name: str, path: BinaryIO) -> BinaryIO:
    fig = fabric_figure(plt, views, target_name)
    fig.savefig(path, dpi=DPI, format="png")
    plt.close(fig)
    return path


FABRIC_SHADE = (0.45, 0.55)
"""A stage's opacity: FABRIC_SHADE[0] + FABRIC_SHADE[1] x its utilization (an
idle stage still shows its colour; a busy one is solid)."""


def fabric_figure(plt, views: list[FabricView], target_name: str):
    """The fabric picture: a panel per kernel section (the first FABRIC_PANELS),
    its stages' PCUs coloured by op (shaded by utilization), its buffers' PMUs
    grey, the busiest stage outlined; matplotlib's constrained layout keeps
    every title, the legend and the heading inside the figure."""
    from matplotlib.patches import Patch, Rectangle

    panels = [(v, n) for v in views for n in range(v.sections)]
    shown = panels[:FABRIC_PANELS]
    columns = min(3, max(1, len(shown)))
    rows = max(1, -(-len(shown) // columns))
    fig, axes = plt.subplots(rows, columns, figsize=(4.4 * columns, 3.9 * rows + 0.9), dpi=DPI, squeeze=False,
                             layout="constrained")
    kinds = sorted({s.op_name for v, _ in shown for s in v.stages})
    cmap = plt.get_cmap("tab20" if len(kinds) > 10 else "tab10")
    colours = {k: cmap(i % cmap.N) for i, k in enumerate(kinds)}
    for ax in axes.flat[len(shown):]:
        ax.axis("off")
    for ax, (view, section) in zip(axes.flat, shown):
        _fabric_panel(ax, view, section, colours, Rectangle)
    handles = [Patch(facecolor=colours[k], label=k) for k in kinds]
    handles += [Patch(facecolor="#b0b0b0", label="PMU (buffer)"),
                Patch(fill=False, edgecolor="red", label="busiest stage")]
    more = f" (the first {len(shown)} of {len(panels)} kernel sections)" if len(panels) > len(shown) else ""
    fig.suptitle(f"Kernels on the {target_name} fabric{more}; shade = utilization", fontsize=10)
    fig.legend(handles=handles, fontsize=7, loc="outside lower center", ncol=min(6, len(handles)))
    return fig


def _fabric_panel(ax, view: FabricView, section: int, colours: dict[str, object], Rectangle) -> None:
    """One kernel section on the PCU/PMU grid, titled with its name and units (wrapped to the panel)."""
    grid_rows, grid_cols = view.grid
    ax.add_patch(Rectangle((0, 0), grid_cols, grid_rows, facecolor="#fafafa", edgecolor="#666666", linewidth=0.6))
    for _, home, sites in view.buffers:
        for row, col in sites if home == section else ():
            ax.add_patch(Rectangle((col, row), 1, 1, facecolor="#b0b0b0", linewidth=0))
    stages = [s for s in view.stages if s.section == section]
    for stage in stages:
        for row, col in stage.sites:
            ax.add_patch(Rectangle((col, row), 1, 1, facecolor=colours[stage.op_name], linewidth=0,
                                   alpha=FABRIC_SHADE[0] + FABRIC_SHADE[1] * min(1.0, stage.utilization)))
    busiest = [s for s in stages if s.busiest]
    for stage in busiest:
        for row, col in stage.sites:
            ax.add_patch(Rectangle((col, row), 1, 1, fill=False, edgecolor="red", linewidth=0.8))
    ax.set_xlim(0, grid_cols)
    ax.set_ylim(grid_rows, 0)
    ax.set_aspect("equal")
    ax.set_xticks([])
    ax.set_yticks([])
    where = f", section {section + 1} of {view.sections}" if view.sections > 1 else ""
    slowest = ", ".join(f"op {s.op} {s.op_name.split('.', 1)[-1]}" for s in busiest) or "-"
    units = (f"{sum(len(s.sites) for s in stages)} PCUs, "
             f"{sum(len(b[2]) for b in view.buffers if b[1] == section)} PMUs")
    lines = [*textwrap.wrap(f"{view.kernel}{where}", 44), units, *textwrap.wrap(f"busiest: {slowest}", 44)[:2]]
    ax.set_title("\n".join(lines), fontsize=8)


__all__ = ["FabricView", "costed_kernels", "fabric_figure", "fabric_view", "fabric_views", "kernel_graph_dot",
           "plot_outputs", "write_plots"]
