"""Option names as rducc, rducc-opt and rducc-run print them: with dashes
(`--pass-pipeline`), never broken across lines in `--help`; an option typed
with underscores (`--report_json`, `--opt-level`) is refused with the spelling
the tool takes."""

from __future__ import annotations

import argparse
import re
import textwrap
from typing import NoReturn

from rducc.targets import BUILTIN_TARGETS

ALIASES = {"--opt-level": "-O LEVEL", "--opt_level": "-O LEVEL"}
"""Spellings from the Python API (`opt_level=`) and the option each tool takes for them."""

_OPTION = re.compile(r"(?<![\w-])--?[A-Za-z][\w-]*")


class HelpFormatter(argparse.HelpFormatter):
    """argparse's help, wrapped at spaces only: `--pass-pipeline` stays one word."""

    def _split_lines(self, text: str, width: int) -> list[str]:
        return textwrap.wrap(" ".join(text.split()), width, break_on_hyphens=False)

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        return textwrap.fill(" ".join(text.split()), width, initial_indent=indent,
                             subsequent_indent=indent, break_on_hyphens=False)


def spelling_hint(parser: argparse.ArgumentParser, message: str) -> str:
    """'; did you mean --report-json?' when `message` names an option the parser
    takes under another spelling (underscores for dashes, an API keyword)."""
    known = parser._option_string_actions
    for word in _OPTION.findall(message):
        name = word.split("=")[0]
        dashed = name.replace("_", "-")
        if name in known:
            continue
        if dashed in known:
            return f"; did you mean {dashed}? (options are spelled with dashes)"
        if name in ALIASES:
            return f"; did you mean {ALIASES[name]}?"
    return ""


class ArgumentParser(argparse.ArgumentParser):
    """The tools' parser: `HelpFormatter`, and usage errors with a spelling hint."""

    def __init__(self, *args, **kwargs) -> None:
        kwargs.setdefault("formatter_class", HelpFormatter)
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> NoReturn:
        super().error(message + spelling_hint(self, message))


def spelled_as_documented(parser: argparse.ArgumentParser) -> None:
    """Give a parser made elsewhere (xDSL's, for rducc-opt) the same help and hints."""
    parser.formatter_class = HelpFormatter
    parser.__class__ = ArgumentParser


def add_pass_flags(parser: argparse.ArgumentParser, pipeline_flag: str) -> None:
    """The flags `rducc` and `rducc-opt` share, declared once, with one help text:
    pass plugin files, the pass listing and source locations. `pipeline_flag` is
    the tool's flag that takes a pipeline (`--pass-pipeline`, `-p`)."""
    parser.add_argument(
        "--load-pass-plugin", dest="plugins", action="append", metavar="FILE", default=[],
        help=f"load the passes a Python file defines, for {pipeline_flag} (repeatable)",
    )
    parser.add_argument(
        "--list-passes", action="store_true",
        help=f"list every pass {pipeline_flag} can name, with its description and options, and exit",
    )
    parser.add_argument(
        "--no-locations", action="store_true",
        help="do not print loc(...) source locations on ops (printed by default where the IR has them)",
    )


OPT_LEVEL_HELP = "0: every op its own kernel; 1: pattern fusion; 2: fusion up to whole layers (default)"


def add_opt_level_flag(parser: argparse.ArgumentParser, default: int | None) -> None:
    """`-O LEVEL`, declared once for every tool that compiles (`rducc`, `rducc deploy`,
    `rducc generate`). `default=None` lets the caller tell an unset level from 2."""
    parser.add_argument("-O", dest="opt_level", type=int, choices=(0, 1, 2), default=default,
                        metavar="LEVEL", help=OPT_LEVEL_HELP)


def add_target_flag(parser: argparse.ArgumentParser, default: str) -> None:
    """`--target NAME|FILE`, declared once for every tool that compiles; the help names
    the tool's own default first."""
    others = ", ".join(name for name in BUILTIN_TARGETS if name != default)
    parser.add_argument("--target", default=default, metavar="NAME|FILE",
                        help=f"{default} (default), {others}, or a .toml/.json target file")
