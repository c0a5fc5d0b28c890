"""Option names print one way in the three tools (issue 20 item 15): with dashes,
never broken across lines in --help; typed with underscores (or as the Python
API's `opt_level`), a usage error (exit 2) says the spelling the tool takes."""

from __future__ import annotations

import re

import pytest

from rducc.targets import BUILTIN_TARGETS
from rducc.tools import cli, deploy, generate, opt, run
from rducc.tools.options import OPT_LEVEL_HELP


def _main(tool: str):
    return {"rducc": cli.main, "rducc-opt": opt.main, "rducc-run": run.main}[tool]


def _usage_error(tool: str, argv: list[str], capsys) -> str:
    with pytest.raises(SystemExit) as exit_:
        _main(tool)(argv)
    assert exit_.value.code == 2
    return capsys.readouterr().err


@pytest.mark.parametrize(("tool", "typed", "meant"), [
    ("rducc", "--report_json", "--report-json"),
    ("rducc", "--pass_pipeline", "--pass-pipeline"),
    ("rducc", "--opt-level", "-O LEVEL"),
    ("rducc", "--opt_level", "-O LEVEL"),
    ("rducc-opt", "--split_input_file", "--split-input-file"),
    ("rducc-opt", "--load_pass_plugin", "--load-pass-plugin"),
])
def test_an_underscored_option_names_its_spelling(tool, typed, meant, capsys):
    err = _usage_error(tool, ["x", typed, "1"], capsys)
    assert f"{tool}: error: unrecognized arguments: {typed}" in err
    assert f"did you mean {meant}?" in err


def test_a_wrong_argument_gets_no_hint(capsys):
    err = _usage_error("rducc-run", ["x", "--colour", "red"], capsys)
    assert "unrecognized arguments: --colour red" in err and "did you mean" not in err


@pytest.mark.parametrize("tool", ["rducc", "rducc-opt", "rducc-run"])
def test_help_never_breaks_an_option_name(tool, capsys):
    with pytest.raises(SystemExit) as exit_:
        _main(tool)(["--help"])
    assert exit_.value.code == 0
    text = capsys.readouterr().out
    assert "--load-pass-plugin" in text or tool == "rducc-run"
    broken = re.findall(r"--[\w-]*[A-Za-z]-\n\s*\S+", text)  # an option name split at a dash
    assert not broken, broken


@pytest.mark.parametrize("parser", [cli.build_parser, deploy.build_parser, generate.build_parser],
                         ids=["rducc", "rducc deploy", "rducc generate"])
def test_compiling_tools_share_their_pipeline_flags(parser, capsys):
    """-O and --target are declared once (options.add_opt_level_flag, add_target_flag):
    the same help in every tool that compiles, and the same hint for the API's spelling."""
    built = parser()
    flags = {action.option_strings[0]: action for action in built._actions if action.option_strings}
    assert flags["-O"].help == OPT_LEVEL_HELP and flags["-O"].choices == (0, 1, 2)
    assert all(name in flags["--target"].help for name in BUILTIN_TARGETS)
    with pytest.raises(SystemExit) as exit_:
        built.parse_args(["x", "--opt_level", "1"])
    assert exit_.value.code == 2
    assert "did you mean -O LEVEL?" in capsys.readouterr().err
