"""Targets as data: the chip's figures, read from a TOML or JSON file.

`load_target("sn40l")` reads a built-in target (sn40l, sn40l-8, sn40l-16,
files beside this module; dgx-h100, a GPU node for serving comparisons whose
"DDR" is host memory over PCIe); `load_target("path/to/chip.toml")` a user's own.
A file may say `inherits = "sn40l"` and override some figures; every file
inherits `base.toml`, the one place the optional figures have values when a
file leaves them out. Every figure is per socket unless its name says otherwise.

A figure is a plain number (a published one) or a table with its source and
the range it may lie in: `kernel_launch_s = { value = 5e-6, low = 1e-6,
high = 2e-5, assumed = true, source = "..." }` (`assumed` false: derived from
a published figure). Consumers read plain values (`target.kernel_launch_s`);
`target.figure(name)` gives the `Figure`, `target.ranged()` those with a range
(what `rducc-run --simulate --ranges` varies, compiler/model/ranges.py).
"""

from __future__ import annotations

import json
import math
import tomllib
from dataclasses import dataclass, field, fields, replace
from functools import cache
from pathlib import Path
from typing import Any

from rducc.errors import RduccError
from rducc.files import read_text

BUILTIN_DIR = Path(__file__).resolve().parent
BUILTIN_TARGETS = ("sn40l", "sn40l-8", "sn40l-16")
DEFAULT_TARGET = "sn40l"
"""The target a compile, a run or a module without `#rdu.target` uses when none is named."""
SRAM_ROW_BYTES = 64
"""One SRAM row (32 lanes x 2 bytes): the smallest share of a buffer one PMU
holds, and the alignment of SRAM offsets and sizes."""
COMPARISON_TARGETS = ("dgx-h100", "dgx-a100")
"""Built-in targets that are not chips rducc compiles for: GPU nodes whose
"DDR" is host memory over PCIe, for serving comparisons (docs/serving.md)."""


def check_compilable(target: Target) -> None:
    """Refuse compiling for a comparison target (a GPU node): its figures stand in
    for a chip's only so that the serving simulation can cost a deployment on it."""
    if target.source in COMPARISON_TARGETS or target.name in COMPARISON_TARGETS:
        raise RduccError(
            f"--target {target.name} is a GPU node for serving comparisons, not a chip rducc compiles for: "
            f"compile or deploy for an sn40l target and compare with "
            f"`rducc-run DIR --simulate --trace T --target {target.name}`"
        )


@dataclass(frozen=True)
class Figure:
    """One figure of a target with where it comes from and the range it may lie in."""

    value: float
    low: float
    high: float
    source: str = ""
    assumed: bool = False
    """True: no source gives it (chosen, or fitted by bench/calibrate.py); false: published or derived."""

    @property
    def ranged(self) -> bool:
        return self.low < self.high


FIGURE_KEYS = ("value", "low", "high", "source", "assumed")
"""The keys of a figure's table in a target file."""


@dataclass(frozen=True)
class Target:
    """The figures of one chip (per socket) and the system's socket count."""

    name: str
    sockets: int
    pcus: int
    pmus: int
    lanes: int
    peak_flops_bf16: float
    peak_flops_f32: float
    peak_flops_int: float
    sram_bytes: int
    pmu_bytes: int
    sram_bandwidth: float
    hbm_bytes: int
    hbm_bandwidth: float
    ddr_bytes: int
    ddr_bandwidth: float
    dma_latency_s: float
    kernel_launch_s: float
    link_bandwidth: float
    """Bytes/s one socket sends to its neighbour (one direction); assumed."""
    link_latency_s: float
    """Latency of one socket-to-socket hop of a collective step (a peer DMA's
    start-up and its flag over one link); a step pays it once a hop; assumed."""
    module_sockets: int
    """Sockets of one module, joined by direct links (a step between them: 1 hop);
    optional (base.toml: 1)."""
    cross_module_hops: int
    """Link hops of a collective step between sockets of different modules
    (through the system's switch); optional (base.toml: 1)."""
    models_in_host_memory: bool
    """Models wait in host memory and reach HBM over the host link (a GPU node),
    not in the socket's own DDR; optional (base.toml: false)."""
    kernel_looping: bool
    """Consecutive calls of one single-kernel layer run as one loop on the chip:
    launched once, DMA start-up paid once (compiler/model/kernel_looping.py). Optional
    in a target file (base.toml's value when absent)."""
    fabric_rows: int
    """Rows of the unit grid (`[fabric] rows`); 0: derived, a near-square grid of pcus + pmus sites.
    This and the figures below are optional in a target file: base.toml has their values when absent."""
    fabric_cols: int
    """Columns of the unit grid (`[fabric] cols`, even); 0: derived with `fabric_rows`."""
    pcu_stages: int
    """SIMD stages of one PCU (`[fabric] pcu_stages`): a matmul's rows in flight fill them."""
    stage_latency_s: float
    """Latency of one pipeline stage (an op's PCUs), for the pipeline fill; assumed."""
    hop_latency_s: float
    """Latency of one switch hop between neighbouring sites, for the fill; assumed."""
    reconfigure_s: float
    """Time to load the next section of a kernel that does not fit at once; assumed."""
    hbm_efficiency: float
    """Share of `hbm_bandwidth` a long DMA stream sustains (0 < e <= 1)."""
    ddr_efficiency: float
    """Share of `ddr_bandwidth` a long DMA stream sustains (0 < e <= 1)."""
    compute_efficiency: float
    """Share of a PCU's peak a stage sustains when its lanes and stages are full
    (operand stalls, reduction-tree drain, tile turnarounds); 0 < e <= 1."""
    pcu_feed_bandwidth: float
    """Bytes/s the on-chip network delivers into one PCU (its input ports): a
    stage runs no faster than its operands arrive; 0: not limited."""
    host_link_bandwidth: float
    """Bytes/s between a socket's off-chip memory and the host CPU, each way (PCIe);
    what an op run on the host (`rdu.host_call`) moves its operands and results at."""
    host_latency_s: float
    """Start-up of one op run on the host: synchronizing with the chip, starting
    the transfers and torch's dispatch."""
    host_bandwidth: float
    """Bytes/s the host's kernel of such an op reads and writes (its throughput)."""
    source: str = ""
    """How the target was named: a built-in name or the file's absolute path."""
    ranges: tuple[tuple[str, Figure], ...] = field(default=(), compare=False, repr=False)
    """The figures the file gives as tables (source and range), by name; not a figure itself."""

    def figure(self, name: str) -> Figure:
        """A figure with its source and range (a plain one: its value, a range of one point)."""
        value = getattr(self, name)
        found = dict(self.ranges).get(name)
        if found is None:
            return Figure(value, value, value, "the target file" if name in FIGURE_NAMES else "")
        return replace(found, value=value)

    def ranged(self) -> list[tuple[str, Figure]]:
        """The figures with a range to vary (low < high), in the order of Target's fields."""
        return [(name, self.figure(name)) for name, found in self.ranges if found.ranged]

    def with_value(self, name: str, value: float) -> Target:
        """The same target with one figure at another value (its range kept)."""
        changed: dict[str, Any] = {name: round(value) if name in _INTEGER_FIELDS else float(value)}
        return replace(self, **changed)

    def grid(self) -> tuple[int, int]:
        """(rows, cols) of the unit grid: the `[fabric]` figures, else the smallest
        near-square grid with an even number of columns holding pcus + pmus sites."""
        if self.fabric_rows and self.fabric_cols:
            return self.fabric_rows, self.fabric_cols
        sites = 2 * max(self.pcus, self.pmus)
        rows = max(1, int(sites**0.5))
        cols = -(-sites // rows)
        return rows, cols + cols % 2

    def bandwidth(self, tier: str) -> float:
        """Peak bytes/s of a memory tier (`sram`: all its PMUs' ports together,
        `hbm`, `ddr`): the one place a tier's bandwidth figure is read."""
        return {"sram": self.sram_bandwidth, "hbm": self.hbm_bandwidth, "ddr": self.ddr_bandwidth}[tier]

    def sustained_bandwidth(self, tier: str) -> float:
        """Bytes/s a long DMA stream sustains from a tier: its peak x its efficiency
        (`hbm_efficiency`, `ddr_efficiency`; SRAM sustains its peak)."""
        efficiency = {"hbm": self.hbm_efficiency, "ddr": self.ddr_efficiency}.get(tier, 1.0)
        return self.bandwidth(tier) * efficiency

    def copy_in_bandwidth(self) -> float:
        """Bytes/s one socket copies a model into HBM at (model switching): from its DDR
        at the DDR's sustained rate, or, where models wait in host memory (a GPU
        node), over its own host link at that link's rate x `ddr_efficiency`."""
        if self.models_in_host_memory:
            return self.host_link_bandwidth * self.ddr_efficiency
        return self.sustained_bandwidth("ddr")

    def peak_flops(self, element_type: str) -> float:
        """Peak FLOP/s of one socket for an element type name (bf16, f32, i32, ...);
        the float8 types compute at the 16-bit rate (the narrowest float datapath)."""
        if element_type in ("bf16", "f16") or element_type.startswith("f8"):
            return self.peak_flops_bf16
        if element_type.startswith("f"):
            return self.peak_flops_f32
        return self.peak_flops_int


_FLAGS = ("kernel_looping", "models_in_host_memory")
"""The true/false fields."""
_FABRIC = tuple(f.name for f in fields(Target)
                if f.name.startswith("fabric_") or f.name in ("pcu_stages", "stage_latency_s", "hop_latency_s",
                                                             "reconfigure_s", "hbm_efficiency", "ddr_efficiency",
                                                             "compute_efficiency", "pcu_feed_bandwidth"))
"""The figures of a file's `[fabric]` table."""
BASE_FILE = BUILTIN_DIR / "base.toml"
"""The values of the figures a target file may leave out: every target inherits them."""
_FIGURES = [f for f in fields(Target) if f.name not in ("source", "ranges") and f.name not in _FLAGS]
FIGURE_NAMES = tuple(f.name for f in _FIGURES if f.name != "name")
"""The numeric figures of a target (what a file may give as a table with a range)."""
_INTEGER_FIELDS = {f.name for f in _FIGURES if f.type == "int"}
_FLOAT_FIELDS = {f.name for f in _FIGURES if f.type == "float"}
_LATENCY_FIELDS = {"dma_latency_s", "kernel_launch_s", "link_latency_s", "stage_latency_s", "hop_latency_s",
                   "reconfigure_s", "host_latency_s"}
_MAY_BE_ZERO = _LATENCY_FIELDS | {"fabric_rows", "fabric_cols"}
_FRACTION_FIELDS = {"hbm_efficiency", "ddr_efficiency", "compute_efficiency"}
_ZERO_IS_NONE = {"pcu_feed_bandwidth"}
"""Rates where 0 means "not limited" (a target that does not model it)."""


MAX_FILE_BYTES = 1 << 20
"""A target file is a page of figures: 1 MiB is far more than any needs."""
MAX_INHERITS = 16
"""The longest `inherits` chain followed."""
MAX_INTEGER = 1 << 53
"""Integer figures (counts, bytes) are at most 2^53: exact as floats and within i64."""
RATE_RANGE = (1.0, 1e24)
"""Rates (FLOP/s, bytes/s) between 1 a second and 10^24 a second: an infinite or
tiny one would make every modeled time 0 or inf (and percentages nan)."""
MAX_LATENCY_S = 3600.0
MAX_SITES = 1 << 24
"""The most sites (PCUs and PMUs) a fabric may have: 16,000x the SN40L's 2,080."""


@cache
def _base_figures() -> dict[str, Any]:
    """base.toml's figures: what a target file leaves out."""
    return _flat_fabric(_read(BASE_FILE), BASE_FILE)


def _read(path: Path) -> dict[str, Any]:
    text = read_text(path, "target file", MAX_FILE_BYTES)
    try:
        if path.suffix == ".json":
            data = json.loads(text)
        else:
            data = tomllib.loads(text)
    except (tomllib.TOMLDecodeError, json.JSONDecodeError) as error:
        raise RduccError(f"target file {path}: not valid {path.suffix[1:].upper() or 'TOML'}: {error}") from None
    except (RecursionError, ValueError) as error:  # deep nesting; a huge integer literal
        raise RduccError(f"target file {path}: not valid {path.suffix[1:].upper() or 'TOML'}: "
                         f"{type(error).__name__}") from None
    if not isinstance(data, dict):
        raise RduccError(f"target file {path}: expected a table of figures")
    return data


def _resolve(spec: str) -> Path:
    if spec in BUILTIN_TARGETS + COMPARISON_TARGETS:
        return BUILTIN_DIR / f"{spec}.toml"
    path = Path(spec)
    if path.suffix in (".toml", ".json") or path.exists():
        if not path.exists():
            raise RduccError(f"target file {path}: no such file")
        return path
    raise RduccError(
        f"unknown target '{spec}': use one of {', '.join(BUILTIN_TARGETS)} or a "
        ".toml/.json target file"
    )


def _figures(spec: str, seen: tuple[Path, ...] = ()) -> tuple[dict[str, Any], Path]:
    """The file's figures merged over those of the target it inherits from. A
    cycle is found by resolved path, however each file spells the next."""
    path = _resolve(spec)
    if path.resolve() in seen:
        chain = " -> ".join(str(p) for p in (*seen, path.resolve()))
        raise RduccError(f"target file {path}: 'inherits' makes a cycle: {chain}")
    if len(seen) >= MAX_INHERITS:
        raise RduccError(f"target file {path}: 'inherits' chain longer than {MAX_INHERITS}")
    data = _read(path)
    data = _flat_fabric(data, path)
    parent = data.pop("inherits", None)
    if parent is None:
        return data, path
    if not isinstance(parent, str) or not parent:
        raise RduccError(f"target file {path}: bad 'inherits' value {parent!r}")
    if parent not in BUILTIN_TARGETS + COMPARISON_TARGETS and not Path(parent).is_absolute():
        parent = str(path.parent / parent)  # relative to the inheriting file
    base, _ = _figures(parent, (*seen, path.resolve()))
    return {**base, **data}, path


def _flat_fabric(data: dict[str, Any], path: Path) -> dict[str, Any]:
    """The `[fabric]` table's figures as top-level ones: `rows` -> `fabric_rows`,
    `pcu_stages` -> `pcu_stages` (the names of `_FABRIC`)."""
    table = data.pop("fabric", None)
    if table is None:
        return data
    if not isinstance(table, dict):
        raise RduccError(f"target file {path}: 'fabric' must be a table of figures")
    for key, value in table.items():
        name = key if key in _FABRIC else f"fabric_{key}"
        if name not in _FABRIC:
            raise RduccError(f"target file {path}: unknown key 'fabric.{key}' "
                             f"(known: {', '.join(n.removeprefix('fabric_') for n in _FABRIC)})")
        data[name] = value
    return data


def _validate(data: dict[str, Any], path: Path) -> dict[str, Any]:
    known = {f.name for f in _FIGURES} | set(_FLAGS)
    unknown = sorted(set(data) - known)
    if unknown:
        raise RduccError(f"target file {path}: unknown key '{unknown[0]}' (known: {', '.join(sorted(known))})")
    for name, default in _base_figures().items():
        data.setdefault(name, default)
    missing = [f.name for f in _FIGURES if f.name not in data]
    if missing:
        raise RduccError(f"target file {path}: missing field '{missing[0]}'")
    if not isinstance(data["name"], str) or not data["name"]:
        raise RduccError(f"target file {path}: field 'name' must be a non-empty string")
    _take_named(data)
    ranges = {}
    for name in sorted(FIGURE_NAMES):
        value = data[name]
        if isinstance(value, dict):
            ranges[name] = _ranged_figure(path, name, value)
            value = ranges[name].value
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise RduccError(f"target file {path}: field '{name}' must be a number, a table of "
                             f"{', '.join(FIGURE_KEYS)} or the name of another figure, got {value!r}")
        data[name] = _figure(path, name, value)
    data["ranges"] = tuple((name, ranges[name]) for name in FIGURE_NAMES if name in ranges)
    for name in _FLAGS:
        value = data[name]
        if not isinstance(value, bool):
            raise RduccError(f"target file {path}: field '{name}' must be true or false, got {value!r}")
    _check_together(data, path)
    _check_ends(data, data["ranges"], str(path))
    return data


def _take_named(data: dict[str, Any]) -> None:
    """A figure given as another figure's name takes that figure's value, and its range
    when it has one (base.toml: `reconfigure_s = "kernel_launch_s"`, a configuration
    load costs the target's own launch). One step only: a name naming a name stays
    a string, which `_validate` refuses."""
    named = {name: data[name] for name in FIGURE_NAMES if isinstance(data[name], str)}
    for name, other in named.items():
        if other in FIGURE_NAMES and other not in named:
            data[name] = data[other]


def _check_ends(data: dict[str, Any], ranges: tuple[tuple[str, Figure], ...], where: str) -> None:
    """Each end of a range is a value the target may take (`--ranges` costs it):
    the checks of several figures at once hold there too, the others at their value."""
    for name, figure in ranges:
        for end in ("low", "high"):
            value = getattr(figure, end)
            shown = str(value) if name in _INTEGER_FIELDS else f"{value:g}"
            _check_together({**data, name: value}, where, f" with {name} at its {end} ({shown})")


def _check_together(data: dict[str, Any], path: Path | str, where: str = "") -> None:
    """The checks that take several figures at once, on one set of values (the
    values, or one figure at an end of its range: `where` says which)."""
    def bad(problem: str) -> RduccError:
        return RduccError(f"target file {path}{where}: {problem}")

    rows, cols = data["fabric_rows"], data["fabric_cols"]
    if cols % 2 or (rows * cols and rows * cols < 2 * max(data["pcus"], data["pmus"])):
        raise bad("the [fabric] grid needs an even number of columns and a site for every PCU and PMU "
                  "(2 x max(pcus, pmus) sites)")
    if not rows * cols and 2 * max(data["pcus"], data["pmus"]) > MAX_SITES:
        raise bad(f"2 x max(pcus, pmus) sites is more than a fabric of {MAX_SITES} sites "
                  "(give the [fabric] rows and cols)")
    if data["pmu_bytes"] > data["sram_bytes"]:
        raise bad("field 'pmu_bytes' exceeds 'sram_bytes'")
    for bandwidth, efficiency in (("hbm_bandwidth", "hbm_efficiency"), ("ddr_bandwidth", "ddr_efficiency")):
        rate = data[bandwidth] * data[efficiency]
        if not RATE_RANGE[0] <= rate <= RATE_RANGE[1]:
            raise bad(f"'{bandwidth}' x '{efficiency}' ({rate:g} bytes/s) must be between "
                      f"{RATE_RANGE[0]:g} and {RATE_RANGE[1]:g} a second")


def _figure(path: Path | str, shown_name: str, value: int | float, name: str = "") -> int | float:
    """One numeric figure, checked to be finite and plausible (`name`: the field whose
    rules apply, when `shown_name` is one of its table's keys, `field.low`)."""
    name = name or shown_name

    def bad(rule: str) -> RduccError:
        shown = repr(value) if len(repr(value)) <= 40 else f"a number of {len(str(value))} digits"
        return RduccError(f"target file {path}: field '{shown_name}' must be {rule}, got {shown}")

    if isinstance(value, float) and not math.isfinite(value):
        raise bad("a finite number")
    if name in _INTEGER_FIELDS:
        if not float(value).is_integer():
            raise bad("a whole number")
        low = 0 if name in _MAY_BE_ZERO else 1
        if not low <= value <= MAX_INTEGER:
            raise bad(f"{'>= 0' if low == 0 else '> 0'} and at most 2^53 ({MAX_INTEGER})")
        return int(value)
    if name in _FRACTION_FIELDS:
        if not 0 < value <= 1:
            raise bad("> 0 and at most 1")
        return float(value)
    if name in _LATENCY_FIELDS:
        if not 0 <= value <= MAX_LATENCY_S:
            raise bad(f">= 0 and at most {MAX_LATENCY_S:g} s")
        return float(value)
    if name in _ZERO_IS_NONE and value == 0:
        return 0.0
    if value <= 0:
        raise bad("> 0")
    if not RATE_RANGE[0] <= value <= RATE_RANGE[1]:
        raise bad(f"between {RATE_RANGE[0]:g} and {RATE_RANGE[1]:g} a second")
    return float(value)


def _ranged_figure(path: Path, name: str, table: dict[str, Any]) -> Figure:
    """A figure given as a table: its value within [low, high], its source, assumed or not."""
    def bad(problem: str) -> RduccError:
        return RduccError(f"target file {path}: field '{name}': {problem}")

    unknown = sorted(set(table) - set(FIGURE_KEYS))
    if unknown:
        raise bad(f"unknown key '{unknown[0]}' (known: {', '.join(FIGURE_KEYS)})")
    missing = [key for key in FIGURE_KEYS if key not in table]
    if missing:
        raise bad(f"missing key '{missing[0]}' (a figure's table has {', '.join(FIGURE_KEYS)})")
    if not isinstance(table["source"], str) or not table["source"].strip():
        raise bad("'source' must be a non-empty string")
    if not isinstance(table["assumed"], bool):
        raise bad(f"'assumed' must be true or false, got {table['assumed']!r}")
    numbers = {}
    for key in ("value", "low", "high"):
        number = table[key]
        if isinstance(number, bool) or not isinstance(number, int | float):
            raise bad(f"'{key}' must be a number, got {number!r}")
        numbers[key] = _figure(path, f"{name}.{key}", number, name)
    value, low, high = numbers["value"], numbers["low"], numbers["high"]
    if low > high:
        raise bad(f"low {low:g} exceeds high {high:g}")
    if not low <= value <= high:
        raise bad(f"value {value:g} is outside its range [{low:g}, {high:g}]")
    return Figure(value, low, high, table["source"].strip(), table["assumed"])


def figure_values(target: Target) -> dict[str, Any]:
    """The target's figures as plain values by field name (what a program carries:
    `rdu.target`), without their sources and ranges."""
    return {f.name: getattr(target, f.name) for f in fields(Target) if f.name != "ranges"}


def with_ranges_of(target: Target, other: Target) -> Target:
    """`target` (a program's figures) with the sources and ranges of `other`'s file;
    a range that does not hold the program's value is widened to hold it."""
    ranges = []
    for name, found in other.ranges:
        value = getattr(target, name)
        ranges.append((name, Figure(value, min(found.low, value), max(found.high, value), found.source,
                                    found.assumed)))
    _check_ends(figure_values(target), tuple(ranges), other.source or other.name)
    return replace(target, ranges=tuple(ranges))


def target_of_figures(figures: dict[str, Any], where: str) -> Target:
    """A target from figures a program carries (`rdu.target`), checked as a file's are."""
    data = dict(figures)
    source = data.pop("source", "")
    return Target(**_validate(data, Path(where)), source=source if isinstance(source, str) else "")


def load_target(spec: str | Target = DEFAULT_TARGET) -> Target:
    """A built-in target by name, or a user's target file by path."""
    if isinstance(spec, Target):
        return spec
    data, path = _figures(spec)
    source = spec if spec in BUILTIN_TARGETS + COMPARISON_TARGETS else str(path.resolve())
    return Target(**_validate(data, path), source=source)


__all__ = ["Target", "Figure", "load_target", "figure_values", "with_ranges_of", "BUILTIN_TARGETS",
           "COMPARISON_TARGETS", "check_compilable"]
