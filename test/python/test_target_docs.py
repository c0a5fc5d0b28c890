"""docs/targets.md (issue 32, newcomer item 3): its worked custom chip loads and
compiles, and its field table names exactly the fields a target file has."""

from __future__ import annotations

import re
from dataclasses import fields
from pathlib import Path

import pytest

import rducc
from rducc.errors import RduccError
from rducc.targets import BASE_FILE, BUILTIN_DIR, Target, load_target

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "targets.md"
CHIP = ROOT / "examples" / "targets" / "half_chip.toml"


def test_the_worked_chip_loads_inherits_and_compiles(tmp_path):
    chip, sn40l = load_target(str(CHIP)), load_target("sn40l")
    assert (chip.name, chip.sockets, chip.pcus, chip.sram_bytes, chip.hbm_bytes) == (
        "half-chip", 2, 520, 260_000_000, 32_000_000_000)
    assert chip.ddr_bytes == sn40l.ddr_bytes and chip.kernel_looping  # inherited from sn40l
    assert chip.figure("hbm_bandwidth").low == 0.7e12 and chip.figure("hbm_bandwidth").assumed
    program = rducc.compile(ROOT / "examples" / "mlp.pt2", target=str(CHIP), opt_level=1)
    assert program.report.modeled_time_s > 0
    assert 'name = "half-chip"' in program.mlir
    ranges = program.ranges()
    assert any(s.figure == "kernel_launch_s" and s.swing > 0 for s in ranges.headlines[0].tornado)


def test_the_doc_shows_the_worked_chip_as_it_is():
    body = re.search(r"```toml\n(.*?)```", DOC.read_text(), re.S).group(1)
    figures = [line for line in CHIP.read_text().splitlines() if line and not line.startswith("#")]
    assert [line for line in body.splitlines() if line] == figures


def test_the_field_table_names_every_field_of_a_target_file():
    documented = set(re.findall(r"^\| `(?:\[fabric\] )?([a-z_0-9]+)` \|", DOC.read_text(), re.M))
    fabric = set(re.findall(r"^\| `\[fabric\] ([a-z_0-9]+)` \|", DOC.read_text(), re.M))
    base = BASE_FILE.read_text()
    in_file = {f.name.removeprefix("fabric_") for f in fields(Target) if f.name not in ("source", "ranges")}
    assert documented == in_file
    assert fabric == set(re.findall(r"^([a-z_]+) =", base.split("[fabric]")[1], re.M))


def _own_chip(tmp_path: Path, launch: str, reconfigure: str | None) -> Path:
    """sn40l's figures as a user's own file (inheriting base.toml only), with its own
    launch and, when given, its own configuration load."""
    lines = []
    for line in (BUILTIN_DIR / "sn40l.toml").read_text().splitlines():
        if line.startswith("reconfigure_s ="):
            line = f"reconfigure_s = {reconfigure}" if reconfigure is not None else ""
        lines.append({"name =": 'name = "own-chip"', "kernel_launch_s =": f"kernel_launch_s = {launch}"}.get(
            next((key for key in ("name =", "kernel_launch_s =") if line.startswith(key)), ""), line))
    path = tmp_path / "own-chip.toml"
    path.write_text("\n".join(lines) + "\n")
    return path


def test_a_configuration_load_costs_the_targets_own_launch_by_default(tmp_path):
    """A file that leaves `reconfigure_s` out gets its own `kernel_launch_s` (base.toml
    names it; docs/cost-model.md, "What a configuration load costs"), with its range;
    the field table says so; a name that is no figure is refused."""
    chip = load_target(str(_own_chip(tmp_path, "{ value = 3e-6, low = 1e-6, high = 9e-6, assumed = true, "
                                                'source = "assumed: a launch" }', None)))
    assert chip.reconfigure_s == chip.kernel_launch_s == 3e-6
    assert (chip.figure("reconfigure_s").low, chip.figure("reconfigure_s").high) == (1e-6, 9e-6)
    assert load_target(str(_own_chip(tmp_path, "4e-6", "2e-6"))).reconfigure_s == 2e-6
    row = next(line for line in DOC.read_text().splitlines() if line.startswith("| `[fabric] reconfigure_s`"))
    assert "no (`kernel_launch_s`)" in row
    with pytest.raises(RduccError, match="field 'reconfigure_s' must be a number, .* or the name of another figure"):
        load_target(str(_own_chip(tmp_path, "4e-6", '"launch"')))
