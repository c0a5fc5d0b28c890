"""docs/targets.md (issue 32, newcomer item 3): its worked custom chip loads and
compiles, and its field table names exactly the fields a target file has."""

from __future__ import annotations

import re
from dataclasses import fields
from pathlib import Path

import rducc
from rducc.targets import BASE_FILE, Target, load_target

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
