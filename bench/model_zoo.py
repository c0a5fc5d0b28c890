"""The model zoo (issue 17): 30+ real architectures at -O0 and -O2 against eager.

Runs every model of `bench/zoo/models.py` at batch 1 and 2 (`bench/zoo/run.py`:
export, Core ATen op counts, -O0 and -O2 on sn40l, tp=2 on sn40l-8 for causal
LMs, each against eager) and writes docs/models.md, the status table. A full
run rewrites docs/models.md; `--quick` (batch 1, the CI subset `QUICK`) only
prints, unless `-o FILE` names a file.

Run: python bench/model_zoo.py [--quick] [--only NAME ...] [-o docs/models.md]
"""

from __future__ import annotations

import argparse
import datetime
import logging
import shlex
import sys
import time
from pathlib import Path

from common import REPO, Section, machine
from zoo.models import QUICK, ZOO  # noqa: E402
from zoo.run import Row, markdown, run_zoo, summary  # noqa: E402

MODELS_MD = REPO / "docs" / "models.md"


def _progress(row: Row) -> None:
    cells = ", ".join(f"{key} {outcome.cell()}" for key, outcome in row.outcomes.items())
    print(f"  {row.model.name} batch {row.batch}: {cells}", file=sys.stderr, flush=True)


def zoo_rows(names: list[str], quick: bool) -> list[Row]:
    logging.disable(logging.WARNING)  # transformers' config warnings
    return run_zoo(names, batches=(1,) if quick else (1, 2), progress=_progress)


def section_of(rows: list[Row], command: str) -> Section:
    section = Section("Model zoo: -O0 and -O2 against eager (docs/models.md)", command)
    for label, value in summary(rows).items():
        section.add(label, value)
    failed = sorted({r.model.name for r in rows if not r.passed})
    section.details.append("models with a failure: " + (", ".join(failed) or "none") + " (docs/models.md says why)")
    return section


def run(quick: bool) -> Section:
    """The benchmark entry of bench/run_all.py: a full run rewrites docs/models.md."""
    command = f"python bench/model_zoo.py{' --quick' if quick else ''}"
    start = time.perf_counter()
    rows = zoo_rows(list(QUICK if quick else ZOO), quick)
    if not quick:
        write(rows, command, time.perf_counter() - start, MODELS_MD)
    return section_of(rows, command)


def write(rows: list[Row], command: str, seconds: float, path: Path) -> None:
    when = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    text = markdown(rows, command, when, machine(), seconds)
    temporary = path.with_suffix(".tmp")
    temporary.write_text(text)
    temporary.replace(path)
    print(f"wrote {path}", file=sys.stderr)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="batch 1 of the CI subset only")
    parser.add_argument("--only", nargs="+", choices=sorted(ZOO), help="just these models")
    parser.add_argument("-o", "--output", type=Path, default=None,
                        help="where to write the table (default: docs/models.md for a full run, none otherwise)")
    args = parser.parse_args()
    command = "python bench/model_zoo.py" + "".join(f" {shlex.quote(a)}" for a in sys.argv[1:])
    start = time.perf_counter()
    names = args.only or list(QUICK if args.quick else ZOO)
    rows = zoo_rows(names, args.quick)
    output = args.output if args.output else (None if args.quick or args.only else MODELS_MD)
    if output is not None:
        write(rows, command, time.perf_counter() - start, output)
    print(section_of(rows, command).text())


if __name__ == "__main__":
    main()
