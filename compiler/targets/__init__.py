"""Targets as data: the chip's figures, read from a TOML or JSON file.

`load_target("sn40l")` reads a built-in target (sn40l, sn40l-8, sn40l-16,
files beside this module); `load_target("path/to/chip.toml")` a user's own.
A file may say `inherits = "sn40l"` and override some figures. Every figure
is per socket unless its name says otherwise.
"""

from __future__ import annotations

import json
import tomllib
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from rducc.errors import RduccError

BUILTIN_DIR = Path(__file__).resolve().parent
BUILTIN_TARGETS = ("sn40l", "sn40l-8", "sn40l-16")


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
_MAY_BE_ZERO = {"dma_latency_s", "kernel_launch_s", "link_latency_s", "stage_latency_s", "hop_latency_s",
                   "reconfigure_s", "fabric_rows", "fabric_cols"}


def _read(path: Path) -> dict[str, Any]:
    try:
        text = path.read_text()
    except OSError as error:
        raise RduccError(f"target file {path}: {error.strerror}") from None
    try:
        if path.suffix == ".json":
            data = json.loads(text)
        else:
            data = tomllib.loads(text)
    except (tomllib.TOMLDecodeError, json.JSONDecodeError) as error:
        raise RduccError(f"target file {path}: not valid {path.suffix[1:].upper() or 'TOML'}: {error}") from None
    if not isinstance(data, dict):
        raise RduccError(f"target file {path}: expected a table of figures")
    return data


def _resolve(spec: str) -> Path:
    if spec in BUILTIN_TARGETS:
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


def _figures(spec: str, seen: tuple[str, ...] = ()) -> tuple[dict[str, Any], Path]:
    """The file's figures merged over those of the target it inherits from."""
    path = _resolve(spec)
    data = _read(path)
    data = _flat_fabric(data, path)
    parent = data.pop("inherits", None)
    if parent is None:
        return data, path
    if not isinstance(parent, str) or parent in seen:
        raise RduccError(f"target file {path}: bad 'inherits' value {parent!r}")
    if parent not in BUILTIN_TARGETS and not Path(parent).is_absolute():
        parent = str(path.parent / parent)  # relative to the inheriting file
    base, _ = _figures(parent, (*seen, spec))
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
        if name in _INTEGER_FIELDS and (not float(value).is_integer()):
            raise RduccError(f"target file {path}: field '{name}' must be a whole number, got {value!r}")
        minimum_ok = value >= 0 if name in _MAY_BE_ZERO else value > 0
        if not minimum_ok:
            bound = ">= 0" if name in _MAY_BE_ZERO else "> 0"
            raise RduccError(f"target file {path}: field '{name}' must be {bound}, got {value!r}")
        data[name] = int(value) if name in _INTEGER_FIELDS else float(value)
    for name, default in _FLAGS.items():
        value = data.setdefault(name, default)
        if not isinstance(value, bool):
            raise RduccError(f"target file {path}: field '{name}' must be true or false, got {value!r}")
    for name in ("hbm_efficiency", "ddr_efficiency"):
        if data[name] > 1:
            raise RduccError(f"target file {path}: field '{name}' must be <= 1, got {data[name]!r}")
    if data["fabric_cols"] % 2 or (data["fabric_rows"] * data["fabric_cols"] and
                                   data["fabric_rows"] * data["fabric_cols"] < 2 * max(data["pcus"], data["pmus"])):
        raise RduccError(f"target file {path}: the [fabric] grid needs an even number of columns and "
                         f"a site for every PCU and PMU (2 x max(pcus, pmus) sites)")
    if data["pmu_bytes"] > data["sram_bytes"]:
        raise RduccError(f"target file {path}: field 'pmu_bytes' exceeds 'sram_bytes'")
    return data


def load_target(spec: str | Target = "sn40l") -> Target:
    """A built-in target by name, or a user's target file by path."""
    if isinstance(spec, Target):
        return spec
    data, path = _figures(spec)
    source = spec if spec in BUILTIN_TARGETS else str(path.resolve())
    return Target(**_validate(data, path), source=source)


__all__ = ["Target", "load_target", "BUILTIN_TARGETS"]
