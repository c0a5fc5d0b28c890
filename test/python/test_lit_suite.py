"""Runs the lit/FileCheck suite under pytest, so one command runs every test."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

TEST_DIR = Path(__file__).resolve().parents[1]


def test_lit_suite() -> None:
    lit = Path(sys.executable).parent / "lit"
    result = subprocess.run(
        [str(lit), "-v", "--order=lexical", str(TEST_DIR)],
        capture_output=True,
        text=True,
        timeout=900,
    )
    summary = result.stdout[-4000:] + result.stderr[-2000:]
    assert result.returncode == 0, f"lit failed:\n{summary}"
    assert "Passed:" in result.stdout and "Failed" not in result.stdout, summary


def test_check_roundtrip_refuses_a_print_that_changes(tmp_path, monkeypatch, capfd) -> None:
    """`rducc-opt --check-roundtrip` (what the lit tests use instead of `| rducc-opt`)
    is an error when the program prints differently once parsed again."""
    from rducc.tools import opt

    source = tmp_path / "f.mlir"
    source.write_text("func.func @f() {\n  func.return\n}\n")
    assert opt.main(["--check-roundtrip", str(source)]) == 0
    assert "func.func @f()" in capfd.readouterr().out
    printed = opt.RduccOptMain._printed
    calls = iter(range(100))
    monkeypatch.setattr(opt.RduccOptMain, "_printed",
                        lambda self, prog: printed(self, prog) + ("" if next(calls) == 0 else "// drift\n"))
    assert opt.main(["--check-roundtrip", str(source)]) == 1
    err = capfd.readouterr().err
    assert "rducc-opt: error: the program prints differently once parsed again" in err and "drift" in err


def test_loading_every_pass_leaves_torch_unloaded() -> None:
    """Each `rducc-opt` a user or script starts (the lit suite's run in a warm fork
    server, test/lit_fork) pays its imports; a pass whose module imports torch (or
    the runtime's kernels) costs every such run seconds, so passes load those lazily."""
    script = ("import sys\n"
              "from rducc.passes import ALL_PASSES\n"
              "for make in ALL_PASSES.values():\n"
              "    make()\n"
              "print(sorted(m for m in ('torch', 'ml_dtypes', 'rducc.runtime.implementations') if m in sys.modules))\n")
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]", result.stdout
