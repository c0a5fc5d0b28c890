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
