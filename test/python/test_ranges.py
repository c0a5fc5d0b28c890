"""Target figures with sources and ranges; headlines as ranges and the tornado table."""

from __future__ import annotations

import json
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from rducc.dialects.contracts import TargetAttr
from rducc.driver import import_exported, lower, module_text
from rducc.errors import RduccError
from rducc.model.cost_model import estimate
from rducc.targets import Figure, load_target, with_ranges_of

ROOT = Path(__file__).resolve().parents[2]

PUBLISHED = {"sockets", "pcus", "pmus", "sram_bytes", "hbm_bytes", "ddr_bytes"}
"""The sn40l figures a source gives outright (shared/TARGETS.md): plain numbers. The
published BF16 peak is a derived table, so `--ranges` varies compute (down to a
throttled clock)."""


def _target_file(tmp_path: Path, line: str, table: str = "") -> Path:
    path = tmp_path / "chip.toml"
    path.write_text(f'inherits = "sn40l"\nname = "chip"\n{line}\n' + (f"[fabric]\n{table}\n" if table else ""))
    return path


def test_every_unpublished_sn40l_figure_has_a_source_and_a_range() -> None:
    target = load_target("sn40l")
    given = dict(target.ranges)
    numeric = [f for f in ("lanes", "peak_flops_bf16", "peak_flops_f32", "peak_flops_int", "pmu_bytes", "sram_bandwidth",
                           "hbm_bandwidth", "ddr_bandwidth", "dma_latency_s", "kernel_launch_s", "link_bandwidth",
                           "link_latency_s", "fabric_rows", "fabric_cols", "pcu_stages", "stage_latency_s",
                           "hop_latency_s", "reconfigure_s", "hbm_efficiency", "ddr_efficiency",
                           "host_link_bandwidth", "host_latency_s", "host_bandwidth", "module_sockets",
                           "cross_module_hops", "compute_efficiency", "pcu_feed_bandwidth")]
    assert set(given) == set(numeric)
    assert not PUBLISHED & set(given)
    for name, figure in given.items():
        assert figure.source.startswith(("assumed", "derived")), name
        assert figure.assumed == figure.source.startswith("assumed"), name
        assert figure.low <= getattr(target, name) <= figure.high, name
    # consumers read plain values; the accessor gives the Figure
    assert isinstance(target.kernel_launch_s, float) and isinstance(target.lanes, int)
    assert target.figure("kernel_launch_s") == given["kernel_launch_s"]
    assert target.figure("pcus") == Figure(target.pcus, target.pcus, target.pcus, "the target file")
    # a program carries plain figures, and its target compares equal
    assert TargetAttr.of(target).target() == target
    assert not TargetAttr.of(target).target().ranges
    assert load_target("sn40l-16").ranges == target.ranges


def test_a_figure_table_in_a_user_file(tmp_path: Path) -> None:
    path = _target_file(tmp_path, 'kernel_launch_s = { value = 2e-6, low = 1e-6, high = 4e-6, assumed = true, '
                                  'source = "assumed: mine" }',
                        'hop_latency_s = { value = 1e-9, low = 1e-9, high = 1e-9, assumed = false, '
                        'source = "derived" }')
    target = load_target(str(path))
    assert target.kernel_launch_s == 2e-6 and target.hop_latency_s == 1e-9
    assert target.figure("kernel_launch_s") == Figure(2e-6, 1e-6, 4e-6, "assumed: mine", True)
    assert "hop_latency_s" not in dict(target.ranged())  # a range of one point is not varied
    plain = _target_file(tmp_path, "kernel_launch_s = 3e-6")
    assert load_target(str(plain)).figure("kernel_launch_s").low == 3e-6  # a plain number: published


BAD = [
    ("value = 5e-6, low = 6e-6, high = 9e-6, assumed = true, source = \"s\"",
     "field 'kernel_launch_s': value 5e-06 is outside its range [6e-06, 9e-06]"),
    ("value = 5e-6, low = 6e-6, high = 1e-6, assumed = true, source = \"s\"",
     "field 'kernel_launch_s': low 6e-06 exceeds high 1e-06"),
    ("value = 5e-6, low = 1e-6, high = 9e-6, assumed = true, source = \"s\", why = 1",
     "field 'kernel_launch_s': unknown key 'why'"),
    ("value = 5e-6, low = 1e-6, high = 9e-6, assumed = true",
     "field 'kernel_launch_s': missing key 'source'"),
    ("value = 5e-6, low = 1e-6, high = 9e-6, assumed = true, source = \"\"",
     "field 'kernel_launch_s': 'source' must be a non-empty string"),
    ("value = 5e-6, low = 1e-6, high = 9e-6, assumed = \"yes\", source = \"s\"",
     "field 'kernel_launch_s': 'assumed' must be true or false"),
    ("value = 5e-6, low = -1e-6, high = 9e-6, assumed = true, source = \"s\"",
     "field 'kernel_launch_s.low' must be >= 0"),
    ("value = 5e-6, low = 1e-6, high = \"x\", assumed = true, source = \"s\"",
     "field 'kernel_launch_s': 'high' must be a number"),
]


@pytest.mark.parametrize(("table", "message"), BAD)
def test_a_bad_figure_table_is_one_line_naming_file_key_and_problem(tmp_path: Path, table: str,
                                                                     message: str) -> None:
    path = _target_file(tmp_path, f"kernel_launch_s = {{ {table} }}")
    with pytest.raises(RduccError) as error:
        load_target(str(path))
    text = str(error.value)
    assert "\n" not in text and text.startswith(f"target file {path}: ") and message in text


def test_a_bad_range_inside_fabric(tmp_path: Path) -> None:
    path = _target_file(tmp_path, "", 'hbm_efficiency = { value = 0.9, low = 0.8, high = 1.2, assumed = true, '
                                      'source = "s" }')
    with pytest.raises(RduccError, match=r"field 'hbm_efficiency.high' must be > 0 and at most 1, got 1.2"):
        load_target(str(path))


def test_a_programs_target_takes_the_ranges_of_its_file() -> None:
    target = load_target("sn40l")
    plain = replace(TargetAttr.of(target).target(), kernel_launch_s=50e-6)  # outside the file's range
    ranged = with_ranges_of(plain, target)
    figure = ranged.figure("kernel_launch_s")
    assert figure.value == 50e-6 and figure.low == target.figure("kernel_launch_s").low and figure.high == 50e-6


@pytest.fixture(scope="module")
def mlp_placed(exported_small):
    target = load_target("sn40l")
    module = import_exported(exported_small["mlp"][2])
    lower(module, target, 2)
    return module, target


def test_the_tornado_follows_the_swings_of_two_cost_model_runs(mlp_placed) -> None:
    module, target = mlp_placed
    report = estimate(module, target)
    ranges = report.ranges(module, target, {"time": lambda r: r.modeled_time_s})
    (headline,) = ranges.headlines
    expected = {}
    for name, figure in target.ranged():
        at_low = estimate(module, replace(target, **{name: type(getattr(target, name))(figure.low)}))
        at_high = estimate(module, replace(target, **{name: type(getattr(target, name))(figure.high)}))
        expected[name] = abs(at_high.modeled_time_s - at_low.modeled_time_s)
    assert {s.figure: s.swing for s in headline.tornado} == pytest.approx(expected)
    swings = [s.swing for s in headline.tornado]
    assert swings == sorted(swings, reverse=True) and swings[0] > 0
    assert headline.most_sensitive == max(expected, key=lambda n: expected[n])
    assert headline.value == report.modeled_time_s
    ends = [v for s in headline.tornado for v in (s.at_low, s.at_high)]
    assert headline.low == min(ends + [headline.value]) and headline.high == max(ends + [headline.value])
    assert headline.low < headline.value < headline.high


def test_rducc_run_ranges(mlp_placed, tmp_path: Path, capsys) -> None:
    from rducc.tools.run import main

    module, target = mlp_placed
    program = tmp_path / "placed.mlir"
    program.write_text(module_text(module))
    report = tmp_path / "report.json"
    assert main([str(program), "--simulate", "--ranges", "--report", str(report)]) == 0
    printed = capsys.readouterr().out
    data = json.loads(report.read_text())["ranges"]
    time = data["headlines"][0]
    assert time["most_sensitive"] == time["tornado"][0]["figure"]
    assert f"most sensitive to {time['most_sensitive']}" in printed
    assert "tornado: modeled time (us)" in printed and "tornado: runs/s" in printed
    assert time["low"] < time["value"] < time["high"]
    assert main([str(program), "--ranges"]) == 1
    assert "--ranges needs --simulate or --report" in capsys.readouterr().err


def test_calibration_residuals_and_writing_the_fitted_values(tmp_path: Path) -> None:
    sys.path.insert(0, str(ROOT / "bench"))
    import calibrate

    bound = calibrate.Published("x", 2.0, 13.0, "a paper", "2x to 13x")
    assert bound.residual(5.0) == 0 and bound.residual(1.0) == pytest.approx(-0.6931, abs=1e-4)
    assert bound.residual(26.0) == pytest.approx(0.6931, abs=1e-4)
    target = load_target("sn40l")
    for name in calibrate.FITTED:
        points = calibrate.grid(name, target)
        figure = target.figure(name)
        assert points[0] == pytest.approx(figure.low) and points[-1] == pytest.approx(figure.high)
    copy = tmp_path / "sn40l.toml"
    copy.write_text((ROOT / "compiler" / "targets" / "sn40l.toml").read_text())
    calibrate.write_values({"kernel_launch_s": 2.5e-6, "hbm_efficiency": 0.93}, copy)
    written = load_target(str(copy))
    assert written.kernel_launch_s == 2.5e-6 and written.hbm_efficiency == 0.93
    assert written.reconfigure_s == 2.5e-6  # tied: a configuration load costs a launch
    assert written.figure("kernel_launch_s").low == target.figure("kernel_launch_s").low
    assert written.ranges != target.ranges and written.dma_latency_s == target.dma_latency_s


def test_a_program_ranges_its_report(exported_small) -> None:
    import rducc

    program = rducc.compile(exported_small["mlp"][2])
    ranges = program.ranges({"tokens/s": lambda r: 1 / r.modeled_time_s})
    (headline,) = ranges.headlines
    assert headline.value == pytest.approx(1 / program.report.modeled_time_s)
    assert headline.low < headline.value < headline.high and headline.most_sensitive == "kernel_launch_s"


# --------------------------------------------------------------------------
# issue 31 item 8: each end of a range is checked as a value
# --------------------------------------------------------------------------

ENDS = [  # (line, fabric table, the end named, a fragment of the problem)
    ('pcus = { value = 1040, low = 1040, high = 9007199254740992, assumed = true, source = "s" }', "",
     "with pcus at its high (9007199254740992)", "a site for every PCU and PMU"),
    ('pmus = { value = 1040, low = 1040, high = 2000, assumed = true, source = "s" }', "",
     "with pmus at its high (2000)", "a site for every PCU and PMU"),
    ('sram_bytes = { value = 520000000, low = 1, high = 520000000, assumed = true, source = "s" }', "",
     "with sram_bytes at its low (1)", "field 'pmu_bytes' exceeds 'sram_bytes'"),
    ("", 'rows = { value = 40, low = 2, high = 40, assumed = true, source = "s" }',
     "with fabric_rows at its low (2)", "a site for every PCU and PMU"),
    ("", 'hbm_efficiency = { value = 0.9, low = 1e-300, high = 1, assumed = true, source = "s" }',
     "with hbm_efficiency at its low (1e-300)", "'hbm_bandwidth' x 'hbm_efficiency'"),
    ("", 'ddr_efficiency = { value = 0.9, low = 1e-300, high = 1, assumed = true, source = "s" }',
     "with ddr_efficiency at its low (1e-300)", "'ddr_bandwidth' x 'ddr_efficiency' (1e-289 bytes/s) must be between 1"),
]


@pytest.mark.parametrize(("line", "table", "end", "problem"), ENDS)
def test_each_end_of_a_range_gets_the_checks_a_value_gets(tmp_path: Path, line: str, table: str, end: str,
                                                           problem: str) -> None:
    """A range end the loader would refuse as a plain value is refused as an end,
    naming the end; and the same number given as the plain value is refused too."""
    path = _target_file(tmp_path, line, table)
    with pytest.raises(RduccError) as error:
        load_target(str(path))
    text = str(error.value)
    assert "\n" not in text and text.startswith(f"target file {path} {end}: ") and problem in text
    name = end.split()[1]
    plain_value = end.split("(")[1].rstrip(")")
    key = name.removeprefix("fabric_") if table else name
    plain = f"{key} = {plain_value}"
    path = _target_file(tmp_path, "" if table else plain, plain if table else "")
    with pytest.raises(RduccError, match=re_escape(problem)):
        load_target(str(path))


def re_escape(text: str) -> str:
    import re

    return re.escape(text)


def test_a_tiny_efficiency_as_a_plain_value_is_refused(tmp_path: Path) -> None:
    path = _target_file(tmp_path, "", "hbm_efficiency = 1e-13")
    with pytest.raises(RduccError, match=r"'hbm_bandwidth' x 'hbm_efficiency' \(0.16 bytes/s\) must be between 1"):
        load_target(str(path))


def test_a_programs_figures_with_a_files_ranges_are_checked_at_each_end(tmp_path: Path) -> None:
    """The program's plain figures under another file's ranges: an end that does not
    hold beside the program's own figures is refused (pmu_bytes above sram_bytes)."""
    program = replace(TargetAttr.of(load_target("sn40l")).target(), pmu_bytes=400_000)
    path = _target_file(tmp_path, "pmu_bytes = 1000\nsram_bytes = { value = 520000000, low = 2000, "
                                  'high = 520000000, assumed = true, source = "s" }')
    with pytest.raises(RduccError, match=r"with sram_bytes at its low \(2000\): field 'pmu_bytes' exceeds"):
        with_ranges_of(program, load_target(str(path)))


def test_a_program_is_not_costed_on_less_sram_than_its_plan_needs(mlp_placed) -> None:
    module, target = mlp_placed
    small = replace(target, sram_bytes=1, pmu_bytes=1)
    with pytest.raises(RduccError, match=r"the program's SRAM plan needs \d+ bytes at its peak, more than target "
                                         r"sn40l's sram_bytes \(1\)"):
        estimate(module, small)
    ranged = replace(target, pmu_bytes=1, ranges=(("sram_bytes", Figure(target.sram_bytes, 2, target.sram_bytes,
                                                                         "s", True)),))
    with pytest.raises(RduccError, match=r"\(with sram_bytes at its low, 2, of target sn40l's ranges\)"):
        estimate(module, target).ranges(module, ranged)


def _strict(text: str):
    """json.loads refusing NaN and Infinity (what strict readers do)."""
    def refuse(name: str):
        raise ValueError(f"non-standard JSON constant {name}")

    return json.loads(text, parse_constant=refuse)


def test_rducc_run_refuses_a_range_end_and_writes_nothing(mlp_placed, tmp_path: Path, capsys) -> None:
    from rducc.tools.run import main

    module, _ = mlp_placed
    program = tmp_path / "placed.mlir"
    program.write_text(module_text(module))
    chip = _target_file(tmp_path, "", 'hbm_efficiency = { value = 0.9, low = 1e-300, high = 1, assumed = true, '
                                      'source = "s" }')
    report = tmp_path / "report.json"
    assert main([str(program), "--simulate", "--ranges", "--target", str(chip), "--report", str(report)]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "with hbm_efficiency at its low (1e-300)" in err
    assert not report.exists()
    good = _target_file(tmp_path, "", 'hbm_efficiency = { value = 0.9, low = 0.01, high = 1, assumed = true, '
                                      'source = "s" }')
    assert main([str(program), "--simulate", "--ranges", "--target", str(good), "--report", str(report)]) == 0
    data = _strict(report.read_text())
    swings = [s for h in data["ranges"]["headlines"] for s in h["tornado"]]
    assert any(s["figure"] == "hbm_efficiency" and s["swing"] > 0 for s in swings)


def test_json_reports_are_strict() -> None:
    from rducc.files import json_rows_text, json_text

    with pytest.raises(RduccError, match=r"--report: totals.makespan_s \(inf\) is not a finite number"):
        json_text({"totals": {"makespan_s": float("inf")}}, "--report")
    with pytest.raises(RduccError, match=r"report: events\[1\].end_s \(nan\) is not a finite number"):
        json_rows_text({"a": 1}, {"events": [{"end_s": 1.0}, {"end_s": float("nan")}]}, "report")
    assert _strict(json_rows_text({"a": 1}, {"events": [{"end_s": 1.0}], "none": []}, "report")) == {
        "a": 1, "events": [{"end_s": 1.0}], "none": []}
