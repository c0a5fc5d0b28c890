"""Run the model zoo: every model compiled at -O0 and -O2 against eager.

For each model of `zoo.models.ZOO` and each batch size: export, Core ATen
decomposition (the op counts before and after), compile at -O0 and -O2 for
one sn40l socket, run the Program against eager (max abs error), and for a
causal LM also compile at tp=2 on sn40l-8 and run it. A failure at any stage
is a row with its one-line error, never a crash of the zoo. `markdown()`
writes the table of docs/models.md.
"""

from __future__ import annotations

import time
import traceback
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch
from common import best_time

import rducc
from rducc.errors import RduccError
from rducc.frontend.importer import decompose
from rducc.passes.rdu_partition import RduPartition
from rducc.pipeline import after

from .models import ZOO, ZooModel

RTOL, ATOL = 1e-3, 1e-4
"""A run matches eager when max |ours - eager| <= ATOL + RTOL * max |eager|."""


@dataclass
class Outcome:
    """One compile-and-run of a model: ok, a mismatch, or the error that stopped it."""

    status: str  # ok, mismatch, error
    error: float | None = None
    message: str = ""
    compile_s: float | None = None
    ratio: float | None = None  # Program / eager, best of a few calls, one thread
    modeled_s: float | None = None

    def cell(self) -> str:
        if self.status == "ok":
            return "ok"
        if self.status == "mismatch":
            return f"mismatch ({self.error:.1e})"
        return f"error: {_shorten(self.message)}"


@dataclass
class Row:
    """A model at one batch size: its op counts and the outcome of each compile."""

    model: ZooModel
    batch: int
    ops_exported: int | None = None
    ops_core: int | None = None
    outcomes: dict[str, Outcome] = field(default_factory=dict)  # "O0", "O2", "tp2"

    @property
    def passed(self) -> bool:
        return bool(self.outcomes) and all(o.status == "ok" for o in self.outcomes.values())


def _shorten(message: str, limit: int = 140) -> str:
    line = message.strip().splitlines()[0] if message.strip() else "?"
    line = line.replace("|", "\\|")
    return line if len(line) <= limit else line[: limit - 3] + "..."


def one_line(error: BaseException) -> str:
    """An exception as one line: rducc's own message, else its type and first line."""
    if isinstance(error, RduccError):  # its lines (the refused operators, one a line) joined
        lines = [line.strip() for line in str(error).strip().splitlines() if line.strip()]
        return " ".join(lines) if lines else type(error).__name__
    where = traceback.extract_tb(error.__traceback__)[-1] if error.__traceback__ else None
    at = f" (at {where.name})" if where else ""
    first = str(error).strip().splitlines()[0] if str(error).strip() else ""
    return f"{type(error).__name__}: {first}{at}"


def _flat(value: Any) -> list[torch.Tensor]:
    leaves, _ = torch.utils._pytree.tree_flatten(value)
    return [leaf for leaf in leaves if isinstance(leaf, torch.Tensor)]


def max_error(ours: Any, eager: Any) -> tuple[float, bool]:
    """Max abs difference over every output tensor, and whether it is within tolerance."""
    worst, within = 0.0, True
    for got, want in zip(_flat(ours), _flat(eager), strict=True):
        if got.shape != want.shape:
            return float("inf"), False
        if want.numel() == 0:
            continue
        got64, want64 = got.double(), want.double()
        difference = (got64 - want64).abs()
        difference = torch.where(torch.isnan(got64) & torch.isnan(want64), 0.0, difference)
        error = float(difference.max())
        worst = max(worst, error)
        within &= error <= ATOL + RTOL * float(want64.abs().max())
    return worst, within


def compile_and_check(exported: torch.export.ExportedProgram, model: torch.nn.Module, inputs: tuple,
                      expected: Any, timed: bool, **options: Any) -> Outcome:
    """Compile with `options`, run, compare with eager; any exception is the outcome."""
    try:
        start = time.perf_counter()
        program = rducc.compile(exported, **options)
        seconds = time.perf_counter() - start
        ours = program(*inputs)
        error, within = max_error(ours, expected)
        outcome = Outcome("ok" if within else "mismatch", error, compile_s=seconds)
        if timed:
            with torch.no_grad():
                eager_s = best_time(lambda: model(*inputs), 3)
            outcome.ratio = best_time(lambda: program(*inputs), 3) / eager_s
            outcome.modeled_s = program.report.modeled_time_s
        return outcome
    except Exception as error:  # noqa: BLE001 - every failure is a row
        return Outcome("error", message=one_line(error))


def run_model(entry: ZooModel, batch: int, tp: bool = True) -> Row:
    """Export, decompose, compile at -O0 and -O2 (and tp=2 for a decoder), each checked."""
    row = Row(entry, batch)
    try:
        model, inputs = entry.build(batch)
        with torch.no_grad():
            expected = model(*inputs)
            exported = torch.export.export(model, inputs)
        row.ops_exported = _count_ops(exported)
        row.ops_core = _count_ops(decompose(exported))
    except Exception as error:  # noqa: BLE001
        row.outcomes["O0"] = Outcome("error", message="export: " + one_line(error))
        return row
    row.outcomes["O0"] = compile_and_check(exported, model, inputs, expected, False, opt_level=0)
    row.outcomes["O2"] = compile_and_check(exported, model, inputs, expected, True, opt_level=2)
    if entry.decoder and tp:
        split = [after("rdu-canonicalize", RduPartition(tp=2, pp=1))]
        row.outcomes["tp2"] = compile_and_check(exported, model, inputs, expected, False, target="sn40l-8",
                                                opt_level=2, passes=split)
    return row


def _count_ops(exported: torch.export.ExportedProgram) -> int:
    return sum(1 for node in exported.graph.nodes if node.op == "call_function")


def run_zoo(names: Iterable[str], batches: Sequence[int] = (1, 2), tp: bool = True,
            progress: Callable[[Row], None] | None = None) -> list[Row]:
    """Every named model at every batch size."""
    torch.set_num_threads(1)
    rows = []
    for name in names:
        for batch in batches:
            row = run_model(ZOO[name], batch, tp)
            rows.append(row)
            if progress is not None:
                progress(row)
    return rows


def _cell(value: float | None, text: Callable[[float], str]) -> str:
    return "-" if value is None else text(value)


def table(rows: Sequence[Row]) -> list[str]:
    """The status table: one line per model and batch size."""
    lines = [
        "| model | source | batch | ops: export -> Core ATen | -O0 | -O2 | max error (-O2) | compile s (-O2) "
        "| Program / eager (-O2) | modeled ms (-O2, sn40l) | tp=2 on sn40l-8 |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for row in rows:
        o0, o2, tp2 = (row.outcomes.get(k) for k in ("O0", "O2", "tp2"))
        ops = "-" if row.ops_exported is None else f"{row.ops_exported} -> {row.ops_core}"
        lines.append(
            f"| {row.model.name} | {row.model.source} | {row.batch} | {ops} "
            f"| {o0.cell() if o0 else '-'} | {o2.cell() if o2 else '-'} "
            f"| {_cell(o2.error if o2 else None, lambda v: f'{v:.1e}')} "
            f"| {_cell(o2.compile_s if o2 else None, lambda v: f'{v:.1f}')} "
            f"| {_cell(o2.ratio if o2 else None, lambda v: f'{v:.2f}x')} "
            f"| {_cell(o2.modeled_s if o2 else None, lambda v: f'{v * 1e3:.4f}')} "
            f"| {tp2.cell() if tp2 else ('-' if not row.model.decoder else 'not run')} |"
        )
    return lines


def summary(rows: Sequence[Row]) -> dict[str, str]:
    """How many model-batch pairs pass each column, as `passed/tried`."""
    counts = {}
    for key, label in (("O0", "-O0"), ("O2", "-O2"), ("tp2", "tp=2 on sn40l-8")):
        tried = [r.outcomes[key] for r in rows if key in r.outcomes]
        counts[label] = f"{sum(o.status == 'ok' for o in tried)}/{len(tried)}"
    models = {r.model.name for r in rows}
    failing = {r.model.name for r in rows if not r.passed}
    counts["models passing every check"] = f"{len(models - failing)}/{len(models)}"
    return counts


def markdown(rows: Sequence[Row], command: str, when: str, machine: str, seconds: float) -> str:
    """docs/models.md: what was run, the summary, the table, the failures."""
    lines = [
        "# Model zoo", "",
        f"Written by `{command}` on {when} in {seconds:.0f} s ({machine}).", "",
        "Every model of `bench/zoo/models.py` (transformers language, speech and vision architectures at small "
        "configs, random weights, no downloads), at batch 1 and 2: exported with `torch.export`, "
        "decomposed to Core ATen (the op counts), compiled by `rducc.compile` at -O0 and -O2 for one "
        "sn40l socket, run in rducc's runtime and compared with eager (ok: max |ours - eager| <= "
        f"{ATOL:g} + {RTOL:g} x max |eager|); causal LMs also at tp=2 on sn40l-8. Program / eager is "
        "the best of 3 calls each at one thread (`bench/runtime_zoo.py` measures it carefully); the "
        "modeled time is the cost model's, not a chip's.", "",
        "| | passed |", "| --- | --- |",
        *[f"| {label} | {value} |" for label, value in summary(rows).items()], "",
        *table(rows), "",
    ]
    failures = sorted({(r.model.name, k, o.message) for r in rows for k, o in r.outcomes.items()
                       if o.status == "error"})
    if failures:
        lines += ["## Failures", "", "| model | compile | error |", "| --- | --- | --- |"]
        lines += [f"| {name} | {key} | {message.replace('|', '/')} |" for name, key, message in failures]
        lines.append("")
    return "\n".join(lines)
