"""Targets as data: the chip's figures, read from a TOML or JSON file.

`load_target("sn40l")` reads a built-in target (sn40l, sn40l-8, sn40l-16,
files beside this module; dgx-h100, a GPU node for serving comparisons whose
"DDR" is host memory over PCIe); `load_target("path/to/chip.toml")` a user's own.
A file may say `inherits = "sn40l"` and override some figures. Every figure
is per socket unless its name says otherwise.
"""

from __future__ import annotations

import json
import math
import tomllib
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from rducc.errors import RduccError
from rducc.files import read_text

BUILTIN_DIR = Path(__file__).resolve().parent
BUILTIN_TARGETS = ("sn40l", "sn40l-8", "sn40l-16")
COMPARISON_TARGETS = ("dgx-h100", "dgx-a100")
"""Built-in targets that are not chips rducc compiles for: GPU nodes whose
"DDR" is host memory over PCIe, for serving comparisons (docs/serving.md)."""


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
    """Start-up time of one socket-to-socket transfer; assumed."""
    kernel_looping: bool = False
    """Consecutive calls of one single-kernel layer run as one loop on the chip:
    launched once, DMA start-up paid once (runtime/kernel_looping.py). Optional
    in a target file (false when absent)."""
    fabric_rows: int = 0
    """Rows of the unit grid (`[fabric] rows`); 0: derived, a near-square grid of pcus + pmus sites."""
    fabric_cols: int = 0
    """Columns of the unit grid (`[fabric] cols`, even); 0: derived with `fabric_rows`."""
    pcu_stages: int = 6
    """SIMD stages of one PCU (`[fabric] pcu_stages`): a matmul's rows in flight fill them."""
    stage_latency_s: float = 6.25e-9
    """Latency of one pipeline stage (an op's PCUs), for the pipeline fill; assumed."""
    hop_latency_s: float = 6.25e-10
    """Latency of one switch hop between neighbouring sites, for the fill; assumed."""
    reconfigure_s: float = 5e-6
    """Time to load the next section of a kernel that does not fit at once; assumed."""
    hbm_efficiency: float = 1.0
    """Share of `hbm_bandwidth` a long DMA stream sustains (0 < e <= 1)."""
    ddr_efficiency: float = 1.0
    """Share of `ddr_bandwidth` a long DMA stream sustains (0 < e <= 1)."""
    source: str = ""
    """How the target was named: a built-in name or the file's absolute path."""

    def grid(self) -> tuple[int, int]:
        """(rows, cols) of the unit grid: the `[fabric]` figures, else the smallest
        near-square grid with an even number of columns holding pcus + pmus sites."""
        if self.fabric_rows and self.fabric_cols:
            return self.fabric_rows, self.fabric_cols
        sites = 2 * max(self.pcus, self.pmus)
        rows = max(1, int(sites**0.5))
        cols = -(-sites // rows)
        return rows, cols + cols % 2

    def peak_flops(self, element_type: str) -> float:
        """Peak FLOP/s of one socket for an element type name (bf16, f32, i32, ...)."""
        if element_type in ("bf16", "f16"):
            return self.peak_flops_bf16
        if element_type.startswith("f"):
            return self.peak_flops_f32
        return self.peak_flops_int


_FLAGS = {"kernel_looping": False}
"""Optional true/false fields, with their value when a file does not set them."""
_FABRIC = {f.name: f.default for f in fields(Target)
           if f.name.startswith("fabric_") or f.name in ("pcu_stages", "stage_latency_s", "hop_latency_s",
                                                        "reconfigure_s", "hbm_efficiency", "ddr_efficiency")}
"""Optional figures of the fabric (a file's `[fabric]` table), with their value when absent."""
_FIGURES = [f for f in fields(Target) if f.name != "source" and f.name not in _FLAGS]
_INTEGER_FIELDS = {f.name for f in _FIGURES if f.type == "int"}
_FLOAT_FIELDS = {f.name for f in _FIGURES if f.type == "float"}
_LATENCY_FIELDS = {"dma_latency_s", "kernel_launch_s", "link_latency_s", "stage_latency_s", "hop_latency_s",
                   "reconfigure_s"}
_MAY_BE_ZERO = _LATENCY_FIELDS | {"fabric_rows", "fabric_cols"}
_FRACTION_FIELDS = {"hbm_efficiency", "ddr_efficiency"}


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
    for name, default in _FABRIC.items():
        data.setdefault(name, default)
    missing = [f.name for f in _FIGURES if f.name not in data]
    if missing:
        raise RduccError(f"target file {path}: missing field '{missing[0]}'")
    if not isinstance(data["name"], str) or not data["name"]:
        raise RduccError(f"target file {path}: field 'name' must be a non-empty string")
    for name in sorted(_INTEGER_FIELDS | _FLOAT_FIELDS):
        value = data[name]
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise RduccError(f"target file {path}: field '{name}' must be a number, got {value!r}")
        data[name] = _figure(path, name, value)
    for name, default in _FLAGS.items():
        value = data.setdefault(name, default)
        if not isinstance(value, bool):
            raise RduccError(f"target file {path}: field '{name}' must be true or false, got {value!r}")
    if data["fabric_cols"] % 2 or (data["fabric_rows"] * data["fabric_cols"] and
                                   data["fabric_rows"] * data["fabric_cols"] < 2 * max(data["pcus"], data["pmus"])):
        raise RduccError(f"target file {path}: the [fabric] grid needs an even number of columns and "
                         f"a site for every PCU and PMU (2 x max(pcus, pmus) sites)")
    if data["pmu_bytes"] > data["sram_bytes"]:
        raise RduccError(f"target file {path}: field 'pmu_bytes' exceeds 'sram_bytes'")
    return data


def _figure(path: Path | str, name: str, value: int | float) -> int | float:
    """One numeric figure, checked to be finite and plausible."""
    def bad(rule: str) -> RduccError:
        shown = repr(value) if len(repr(value)) <= 40 else f"a number of {len(str(value))} digits"
        return RduccError(f"target file {path}: field '{name}' must be {rule}, got {shown}")

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
    if value <= 0:
        raise bad("> 0")
    if not RATE_RANGE[0] <= value <= RATE_RANGE[1]:
        raise bad(f"between {RATE_RANGE[0]:g} and {RATE_RANGE[1]:g} a second")
    return float(value)


def target_of_figures(figures: dict[str, Any], where: str) -> Target:
    """A target from figures a program carries (`rdu.target`), checked as a file's are."""
    data = dict(figures)
    source = data.pop("source", "")
    return Target(**_validate(data, Path(where)), source=source if isinstance(source, str) else "")


def load_target(spec: str | Target = "sn40l") -> Target:
    """A built-in target by name, or a user's target file by path."""
    if isinstance(spec, Target):
        return spec
    data, path = _figures(spec)
    source = spec if spec in BUILTIN_TARGETS + COMPARISON_TARGETS else str(path.resolve())
    return Target(**_validate(data, path), source=source)


__all__ = ["Target", "load_target", "BUILTIN_TARGETS", "COMPARISON_TARGETS"]
