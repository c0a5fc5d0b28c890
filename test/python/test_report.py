"""`rducc --report`, `--report-json` and the progress display."""

from __future__ import annotations

import json
import os
import pty
import subprocess
from pathlib import Path

import pytest
import torch
from forked_tools import run_tool, tool, tool_env


def _run(*args: object, **kwargs) -> subprocess.CompletedProcess[str]:
    """`rducc` in a process forked from the warm server (forked_tools)."""
    return run_tool("rducc", *args, **kwargs)


@pytest.fixture(scope="module")
def llama_archive(tmp_path_factory, exported_small) -> Path:
    path = tmp_path_factory.mktemp("llama") / "tiny_llama.pt2"
    torch.export.save(exported_small["tiny_llama"][2], str(path))
    return path


def test_report_of_the_bundled_example(repo, tmp_path) -> None:
    result = _run(repo / "examples" / "mlp.pt2", "-o", tmp_path / "out.mlir", "--report", "--report-json", tmp_path / "r.json")
    assert result.returncode == 0, result.stderr
    text = result.stdout
    assert text.startswith("rducc report: target sn40l, 1 kernels (times are modeled, not measured)")
    for line in ("weights                        hbm        6", "values inside kernels          sram",
                 "SRAM  peak 30,464 B of 520.00 MB", "HBM   weights 27,688 B", "DDR   weights 0 B"):
        assert line in text, (line, text)
    # tiles, then the PCUs and PMUs of the kernel's mapping (rdu-map-units), then the ops
    assert "k0          1   155   511  6: 3 map, 3 mm" in text and "launch" in text
    data = json.loads((tmp_path / "r.json").read_text())
    for key in ("modeled_time_s", "flops", "bytes_by_tier", "sram_peak_bytes", "sram_lower_bound_bytes",
                "kernels", "tensor_classes", "hbm_weight_bytes", "sram_capacity_bytes"):
        assert key in data
    assert data["kernels"][0]["bound"] == "launch" and data["hbm_weight_bytes"] == 27688


def test_report_of_tiny_llama(llama_archive, tmp_path) -> None:
    result = _run(llama_archive, "-O1", "-o", "-", "--report")
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("builtin.module")  # the MLIR on stdout, the report on stderr
    report = result.stderr
    # the kernels of the one outlined decoder layer at each of its 2 calls, and those around them
    assert "rducc report: target sn40l, 12 kernels" in report
    assert report.count("\nk") + report.count("\nlayer[") >= 12 and "total" in report
    # the layer's kernels are named by their function and call: layer[0].k0, layer[1].k0
    assert report.count("\nlayer[0].k") >= 1 and report.count("\nlayer[1].k") >= 1


def test_report_needs_the_placed_program(repo, tmp_path) -> None:
    result = _run(repo / "examples" / "mlp.pt2", "--emit", "graph", "--report", "-o", tmp_path / "g.mlir")
    assert result.returncode == 1
    assert "need the placed program" in result.stderr and "Traceback" not in result.stderr
    assert not (tmp_path / "g.mlir").exists()


def _stderr_on_a_terminal(*args: object) -> str:
    """Run rducc with its stderr on a pseudo-terminal; return what it wrote there."""
    leader, follower = pty.openpty()
    env = tool_env({**os.environ, "RDUCC_PROGRESS_AFTER": "0"})
    process = subprocess.Popen([str(tool("rducc")), *map(str, args)], stderr=follower, stdout=subprocess.DEVNULL,
                               env=env)
    os.close(follower)
    chunks = []
    while True:
        try:
            chunk = os.read(leader, 4096)
        except OSError:
            break
        if not chunk:
            break
        chunks.append(chunk)
    process.wait(timeout=600)
    os.close(leader)
    assert process.returncode == 0
    return b"".join(chunks).decode()


def test_progress_on_a_terminal(repo, tmp_path) -> None:
    shown = _stderr_on_a_terminal(repo / "examples" / "mlp.pt2", "-o", tmp_path / "out.mlir")
    for stage in ("load", "decompose", "import", "rdu-fuse", "rdu-sram-alloc", "write"):
        assert f"] {stage} ..." in shown, (stage, shown)
    quiet = _stderr_on_a_terminal(repo / "examples" / "mlp.pt2", "-q", "-o", tmp_path / "out.mlir")
    assert "rducc: [" not in quiet


def test_no_progress_when_not_a_terminal(repo, tmp_path) -> None:
    result = _run(repo / "examples" / "mlp.pt2", "-q", "-o", tmp_path / "out.mlir",
                  env={**os.environ, "RDUCC_PROGRESS_AFTER": "0"})
    assert result.returncode == 0 and result.stderr == ""
