"""What a new user trips on (issue 32, newcomer items 6 and 7): one JSON flag
for rducc-run's report, no torch notices from `rducc.compile`, a scalar
result printed as a number, one line on success saying what was written
(silenced by -q), source locations in the bundled example that name no
machine's folders, README saying how long the tests take, and a warning when
a one-socket program is costed on a target with more sockets."""

from __future__ import annotations

import json
import re
import warnings
from pathlib import Path

import numpy as np
import pytest
import torch

import rducc
from rducc.tools import opt, run

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "mlp.pt2"


@pytest.fixture(scope="module")
def compiled(tmp_path_factory) -> tuple[Path, list[warnings.WarningMessage]]:
    """The bundled example compiled for one sn40l socket and saved (MLIR and
    weights), with every warning the compile raised."""
    path = tmp_path_factory.mktemp("newcomer") / "mlp.mlir"
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        rducc.compile(str(EXAMPLE)).save(path)
    return path, caught


@pytest.fixture(scope="module")
def program(compiled) -> Path:
    return compiled[0]


def test_compile_prints_no_torch_notices(compiled) -> None:
    """`rducc.compile` raises no FutureWarning (torch's own internals warned
    on every compile)."""
    caught = compiled[1]
    assert not [w for w in caught if issubclass(w.category, FutureWarning)], [str(w.message) for w in caught]


def test_report_json_is_one_flag(program: Path, tmp_path: Path, capsys) -> None:
    """rducc-run's cost report JSON is `--report-json`, as in rducc (and as the
    serving simulation's); `--report` is the same flag, its earlier name."""
    for flag in ("--report-json", "--report"):
        path = tmp_path / f"{flag.strip('-')}.json"
        assert run.main([str(program), "--simulate", flag, str(path)]) == 0
        assert json.loads(path.read_text())["kernels"]
    entries = [line for line in run.build_parser().format_help().splitlines() if line.startswith("  --report")]
    assert entries == ["  --report-json FILE.json, --report FILE.json"], entries  # one flag, one entry
    capsys.readouterr()


def test_a_scalar_result_prints_as_a_number(capsys) -> None:
    run._print_results({"output_0": np.array(3.5, np.float32), "output_1": np.ones((2,), np.float32)})
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "result[0]: 3.5 (float32)"
    assert lines[1] == "result[1]: 2xfloat32"


def test_tools_say_what_they_wrote_unless_quiet(program: Path, tmp_path: Path, capsys) -> None:
    report = tmp_path / "r.json"
    assert run.main([str(program), "--simulate", "--report-json", str(report)]) == 0
    assert capsys.readouterr().err == f"rducc-run: wrote {report}\n"
    assert run.main([str(program), "--simulate", "--report-json", str(report), "-q"]) == 0
    assert capsys.readouterr().err == ""
    copy = tmp_path / "copy.mlir"
    assert opt.main([str(program), "-o", str(copy)]) == 0
    assert capsys.readouterr().err == f"rducc-opt: wrote {copy}\n"
    assert opt.main([str(program), "-o", str(copy), "--quiet"]) == 0
    assert capsys.readouterr().err == ""
    assert opt.main([str(program)]) == 0  # to stdout: no file, no line
    assert capsys.readouterr().err == ""


def test_a_folder_of_outputs_is_one_entry() -> None:
    from rducc.files import FileLedger, written_summary

    ledger = FileLedger(written=["out.mlir", "out.safetensors", *(f"plots/{n}.png" for n in "abc")])
    assert written_summary(ledger) == "wrote out.mlir, out.safetensors and plots/ (3 files)"
    assert written_summary(FileLedger()) is None


def test_bundled_example_locations_name_no_machine() -> None:
    """examples/mlp.pt2's source locations are relative (`examples/models.py`,
    `torch/nn/modules/linear.py`), not the building machine's absolute paths."""
    exported = torch.export.load(str(EXAMPLE))
    files = {m for n in exported.graph.nodes for m in re.findall(r'File "([^"]+)"', n.meta.get("stack_trace") or "")}
    assert "examples/models.py" in files and files, files
    assert not [f for f in files if f.startswith("/")], files


def test_readme_says_how_long_the_tests_take() -> None:
    text = (ROOT / "README.md").read_text()
    assert re.search(r"On 2 cores it takes\s+about \d+ minutes", text)


def test_costing_on_more_sockets_warns_and_notes(program: Path, tmp_path: Path, capsys) -> None:
    """Newcomer item 7: `--simulate --target sn40l-16` of a one-socket program
    says, on stderr and in the report, that the figures are one socket's."""
    report = tmp_path / "r.json"
    assert run.main([str(program), "--simulate", "--target", "sn40l-16", "--report-json", str(report)]) == 0
    out, err = capsys.readouterr()
    warning = err.splitlines()[0]
    assert warning.startswith("rducc-run: warning: the program was compiled for 1 socket (sn40l")
    assert "on sn40l-16 it runs on 1 socket of its 16" in warning and "--tp/--pp" in warning
    assert "\nnote              the program was compiled for 1 socket" in out
    assert "1 socket of its 16" in json.loads(report.read_text())["note"]
    assert run.main([str(program), "--simulate", "--target", "sn40l"]) == 0  # the program's own: no warning
    assert "warning" not in capsys.readouterr().err
