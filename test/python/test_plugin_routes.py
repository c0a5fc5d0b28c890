"""One pass reached two ways: the example package's entry point (as after
`pip install ./examples/silu_plugin`) and its source file (--load-pass-plugin).

The install is simulated: the package folder (or a copy of it, as pip would
put in site-packages) goes on sys.path and `importlib.metadata.entry_points`
also returns its `xdsl.universe` entry point.
"""

from __future__ import annotations

import importlib.metadata
import shutil
import sys
from pathlib import Path

import pytest

from rducc.errors import RduccError
from rducc.pipeline import available_passes

ROOT = Path(__file__).resolve().parents[2]
PLUGIN_DIR = ROOT / "examples" / "silu_plugin"
FUSE_SILU = PLUGIN_DIR / "rducc_silu" / "fuse_silu.py"
GRAPH = ROOT / "test" / "examples" / "fuse-silu.mlir"


def _install(monkeypatch, site: Path) -> None:
    """`site` on sys.path and its package's xdsl.universe entry point discovered."""
    monkeypatch.syspath_prepend(str(site))
    for name in [m for m in sys.modules if m == "rducc_silu" or m.startswith("rducc_silu.")]:
        monkeypatch.delitem(sys.modules, name)
    found = importlib.metadata.entry_points
    extra = importlib.metadata.EntryPoint("rducc_silu", "rducc_silu.universe:UNIVERSE", "xdsl.universe")

    def entry_points(**selection):
        points = found(**selection)
        if selection.get("group") == "xdsl.universe":
            return importlib.metadata.EntryPoints([*points, extra])
        return points

    monkeypatch.setattr(importlib.metadata, "entry_points", entry_points)


@pytest.fixture(params=["editable", "copied"])
def installed(request, monkeypatch, tmp_path) -> None:
    """The package installed in place (editable) or copied (a plain pip install)."""
    site = PLUGIN_DIR
    if request.param == "copied":
        site = tmp_path / "site"
        shutil.copytree(PLUGIN_DIR / "rducc_silu", site / "rducc_silu",
                        ignore=shutil.ignore_patterns("__pycache__"))
    _install(monkeypatch, site)


def test_installed_pass_and_its_file_are_one_pass(installed):
    passes = available_passes([FUSE_SILU])
    assert passes["fuse-silu"]().name == "fuse-silu"


def test_rducc_opt_runs_the_pass_reached_both_ways(installed, capsys):
    from rducc.tools.opt import main

    status = main(["--load-pass-plugin", str(FUSE_SILU), "-p", "fuse-silu", "--split-input-file", str(GRAPH)])
    captured = capsys.readouterr()
    assert status == 0, captured.err
    assert captured.out.split("// -----")[0].count("rdu.map") == 1


def test_listed_once(installed, capsys):
    from rducc.tools.pass_info import pass_groups

    groups = pass_groups([str(FUSE_SILU)])
    assert [group for group, passes in groups.items() if "fuse-silu" in passes] == [
        "passes of plugin files (--load-pass-plugin)"
    ]


def test_another_class_of_the_same_name_still_clashes(installed, tmp_path):
    other = tmp_path / "other_silu.py"
    other.write_text(FUSE_SILU.read_text().replace('"""', '"""Edited. ', 1))
    with pytest.raises(RduccError, match="has the name of a pass that exists already"):
        available_passes([other])
