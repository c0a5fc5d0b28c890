"""Run every benchmark and rewrite BENCHMARKS.md with the results.

Each figure is written beside its goal and whether it is met, with the
machine, the date and the command. `--quick` (fewer layers and repeats)
takes under 5 minutes on 2 cores. Only a full run of every benchmark
rewrites BENCHMARKS.md by default; `--quick` or `--only` print their
results and write a file only when `-o` names one, so the committed
figures are never replaced by partial ones. `--only NAME ... --update`
(a full run of those benchmarks) replaces just their sections and goal rows
in BENCHMARKS.md, and the notes, leaving every other section as it is. Each
benchmark also runs alone: `python bench/NAME.py [--quick]`.

Run: python bench/run_all.py [--quick] [--only NAME ... [--update]] [-o BENCHMARKS.md]
"""

from __future__ import annotations

import argparse
import datetime
import importlib
import shlex
import sys
import time
from pathlib import Path

from common import REPO, Section, machine

BENCHMARKS = (
    "compile_llama8b", "runtime_tiny", "model_llama8b", "interpreter_vs_xdsl", "multi_socket", "decode_forms", "massive",
    "tp_families", "model_zoo", "runtime_zoo", "conv_paths", "coe", "train_llama", "train_compile_scaling",
)
"""The benchmark modules of bench/, in the order they run and appear."""

NOTES = REPO / "bench" / "notes.md"
"""Hand-written notes (what blocks an unmet goal, before/after of speed work), kept verbatim."""


def document(sections: list[Section], command: str, seconds: float) -> str:
    """BENCHMARKS.md: the header, a summary of every goal, each section, the notes."""
    when = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    lines = [
        "# rducc benchmarks", "",
        f"Written by `{command}` on {when}, in {seconds:.0f} s.", "",
        f"Machine: {machine()}.", "",
        "Every ratio is against a reference measured in the same run; modeled figures come from "
        "rducc's cost model (docs/cost-model.md), not from a chip.", "",
        "## Goals", "", "| benchmark | figure | result | goal | |", "| --- | --- | --- | --- | --- |",
    ]
    for section in sections:
        short = section.title.split(":")[0]
        lines += [f"| {short} | {f.name} | {f.value} | {f.goal} | {f.verdict} |"
                  for f in section.figures if f.goal]
    lines.append("")
    for section in sections:
        lines.append(section.markdown())
    if NOTES.exists():
        lines.append(NOTES.read_text())
    return "\n".join(lines).rstrip() + "\n"


def _goal_rows(section: Section) -> list[str]:
    short = section.title.split(":")[0]
    return [f"| {short} | {f.name} | {f.value} | {f.goal} | {f.verdict} |" for f in section.figures if f.goal]


def _goals_end(lines: list[str]) -> int:
    """The line after the goals table's last row."""
    first = next(i for i, line in enumerate(lines) if line.startswith("| ") and i > lines.index("## Goals"))
    return next((i for i in range(first, len(lines)) if not lines[i].startswith("| ")), len(lines))


def splice(document_text: str, sections: list[Section]) -> str:
    """BENCHMARKS.md with these sections and their goal rows replaced (a section not
    there yet goes before the notes), and the notes from bench/notes.md."""
    lines = document_text.rstrip("\n").split("\n")
    notes_at = next((i for i, line in enumerate(lines) if line.startswith("## Notes")), len(lines))
    lines = lines[:notes_at]
    for section in sections:
        short = f"| {section.title.split(':')[0]} |"
        rows = [i for i, line in enumerate(lines) if line.startswith(short)]
        at = rows[0] if rows else _goals_end(lines)
        lines = lines[:at] + _goal_rows(section) + [line for line in lines[at:] if not line.startswith(short)]
        body = section.markdown().rstrip("\n").split("\n") + [""]
        start = next((i for i, line in enumerate(lines) if line == f"## {section.title}"), None)
        if start is None:
            lines[len(lines):] = body
            continue
        end = next((i for i in range(start + 1, len(lines)) if lines[i].startswith("## ")), len(lines))
        lines[start:end] = body
    text = "\n".join(lines).rstrip("\n") + "\n\n"
    return text + (NOTES.read_text() if NOTES.exists() else "")


def output_path(requested: Path | None, quick: bool, only: bool) -> Path | None:
    """The file to write: the one asked for, else BENCHMARKS.md for a full run of
    every benchmark, else none (a quick or partial run never replaces it)."""
    if requested is not None:
        return requested
    return None if quick or only else REPO / "BENCHMARKS.md"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer layers and repeats (under 5 minutes)")
    parser.add_argument("--only", nargs="+", choices=BENCHMARKS, help="run just these benchmarks")
    parser.add_argument("--update", action="store_true",
                        help="with --only (no --quick): replace just those sections of BENCHMARKS.md (or -o FILE)")
    parser.add_argument("-o", "--output", type=Path, default=None,
                        help="where to write the results (default: BENCHMARKS.md for a full run, none otherwise)")
    args = parser.parse_args()
    if args.update and (args.quick or not args.only):
        parser.error("--update replaces the sections of the benchmarks --only names, from a full run (no --quick)")
    output = output_path(args.output, args.quick, bool(args.only))
    if args.update:
        output = args.output or REPO / "BENCHMARKS.md"

    command = "python bench/run_all.py" + "".join(f" {shlex.quote(a)}" for a in sys.argv[1:])
    start = time.perf_counter()
    sections = []
    for name in args.only or BENCHMARKS:
        module = importlib.import_module(name)
        began = time.perf_counter()
        section = module.run(args.quick)
        section.seconds = time.perf_counter() - began
        print(section.text(), flush=True)
        print(flush=True)
        sections.append(section)
    if output is None:
        print("BENCHMARKS.md left as it is (a partial run); -o FILE writes these results")
        return
    if args.update:
        text = splice(output.read_text(), sections)
    else:
        text = document(sections, command, time.perf_counter() - start)
    temporary = output.with_suffix(".tmp")
    temporary.write_text(text)
    temporary.replace(output)
    print(f"wrote {output}")


if __name__ == "__main__":
    main()
