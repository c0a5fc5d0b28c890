"""Bad input, table-driven: every case of `error_cases.CASES` gets one clear message,
exit status 1, no traceback, and leaves the output it would have written alone.

Each case runs the tool's `main` in this process (fast: torch and xDSL are
imported once), in a directory that already holds the output file from an
earlier run; file-descriptor-level capture sees anything printed below Python
too. `test_console_scripts_say_the_same` runs a few cases through the
installed executables to show the in-process runs stand for them.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import error_cases
from error_cases import CASES, OUTPUT_FILE, ErrorCase

SENTINEL = b"previous output \x00\xff\n must survive a failed run\n"
OLD_MTIME_NS = 1_000_000_000
LOCATED = re.compile(r"^\S+: error: \S+:\d+:\d+: error: ")


def _main(tool: str):
    from rducc.tools import cli, deploy, generate, opt, run

    return {"rducc": cli.main, "rducc-opt": opt.main, "rducc-run": run.main, "rducc deploy": deploy.main,
            "rducc generate": generate.main}[tool]


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> dict[str, str]:
    return error_cases.make_inputs(tmp_path_factory.mktemp("error_inputs"))


def _prepare(directory: Path, case: ErrorCase) -> Path:
    """A run directory holding the output of an earlier run."""
    output = directory / OUTPUT_FILE[case.tool]
    output.write_bytes(SENTINEL)
    os.utime(output, ns=(OLD_MTIME_NS, OLD_MTIME_NS))
    return output


def _run_in_process(case: ErrorCase, files: dict[str, str]) -> int:
    try:
        return _main(case.tool)(case.command(files))
    except SystemExit as exit_:  # argparse
        return int(exit_.code or 0)


def _one_message(stderr: str, tool: str) -> str:
    lines = stderr.splitlines()
    starts = [i for i, line in enumerate(lines) if line.startswith(f"{tool}: error:")]
    assert len(starts) == 1, f"expected one '{tool}: error:' line in\n{stderr}"
    assert starts[0] == 0, f"printed before the error (torch's warnings?):\n{stderr}"
    return "\n".join(lines[starts[0]:])


@pytest.mark.parametrize("case", CASES, ids=[case.name for case in CASES])
def test_bad_input_is_one_clear_error(case, files, tmp_path, monkeypatch, capfd):
    output = _prepare(tmp_path, case)
    monkeypatch.chdir(tmp_path)
    status = _run_in_process(case, files)
    out, err = capfd.readouterr()
    assert status == 1, f"exit {status}\n{err}"
    assert "Traceback" not in err and "internal error" not in err, err
    message = _one_message(err, case.tool)
    assert case.expected in message, message
    if case.located:
        assert LOCATED.match(message), message
    assert out == ""
    # nothing written: the old output is untouched and no other file appeared
    assert sorted(p.name for p in tmp_path.iterdir()) == [output.name]
    assert output.read_bytes() == SENTINEL
    assert output.stat().st_mtime_ns == OLD_MTIME_NS


def test_the_table_has_30_distinct_cases():
    names = [case.name for case in CASES]
    assert len(set(names)) == len(names) >= 30
    commands = [(case.tool, case.args) for case in CASES]
    assert len(set(commands)) == len(commands)
    for case in CASES:
        for key in error_cases._fields(" ".join(case.args)):
            assert key in error_cases.INPUTS, (case.name, key)


def test_errors_doc_is_generated_from_the_table():
    doc = error_cases.DOC.read_text()
    assert doc == error_cases.render_doc(), (
        "docs/errors.md is stale: regenerate it with `.venv/bin/python test/python/error_cases.py`"
    )


@pytest.mark.parametrize("name", ["plain pickle", "rducc-opt: malformed MLIR", "rducc-run: wrong input shape"])
def test_console_scripts_say_the_same(name, files, tmp_path, monkeypatch, capfd):
    [case] = [c for c in CASES if c.name == name]
    executable = Path(sys.executable).parent / case.tool
    _prepare(tmp_path, case)
    result = subprocess.run([str(executable), *case.command(files)], capture_output=True,
                            text=True, cwd=tmp_path, timeout=300)
    assert result.returncode == 1, result.stderr
    assert "Traceback" not in result.stderr
    monkeypatch.chdir(tmp_path)
    assert _run_in_process(case, files) == 1
    assert _one_message(result.stderr, case.tool) == _one_message(capfd.readouterr().err, case.tool)


# --------------------------------------------------------------------------
# A bug in rducc: a report request and exit status 70
# --------------------------------------------------------------------------


def _broken() -> None:
    raise KeyError("the kernel table lost k3")


def test_internal_error_asks_for_a_report(capsys):
    from rducc.tools.cli import run_tool

    assert run_tool("rducc", _broken, debug=False) == 70
    err = capsys.readouterr().err
    assert err.startswith("rducc: internal error: KeyError: 'the kernel table lost k3'\n")
    assert "This is a bug in rducc; please report it" in err and "--debug" in err
    assert "Traceback" not in err


def test_internal_error_traceback_under_debug(capsys):
    from rducc.tools.cli import run_tool

    assert run_tool("rducc-run", _broken, debug=True) == 70
    err = capsys.readouterr().err
    assert "Traceback" in err and "_broken" in err
    assert "rducc-run: internal error: KeyError" in err
