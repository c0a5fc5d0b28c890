"""The console scripts' entry points and the exit statuses every tool uses.

This module imports nothing heavy, so a Ctrl-C while the tools start (importing
torch and xDSL takes a second or more) is the same one line and exit status as
a Ctrl-C during the work, not a Python traceback.
"""

from __future__ import annotations

import importlib
import os
import signal
import sys
import threading

EXIT_OK = 0
EXIT_USER_ERROR = 1
"""A problem with the input: one `TOOL: error:` message, no output written."""
EXIT_USAGE = 2
"""A command line argparse cannot parse (its usage message), as Unix tools do."""
EXIT_INTERNAL = 70
"""A bug in rducc (sysexits' EX_SOFTWARE): `TOOL: internal error:` and a report request."""
EXIT_INTERRUPTED = 130
"""Ctrl-C (128 + SIGINT), as a shell reports an interrupted command."""
EXIT_BROKEN_PIPE = 141
"""The reader of standard output went away (`rducc-run ... | head`): 128 + SIGPIPE,
what a shell reports for a Unix tool stopped by SIGPIPE; nothing is printed."""


def interrupted(tool: str) -> int:
    """Say so in one line; the exit status of an interrupted command."""
    print(f"{tool}: interrupted", file=sys.stderr)
    return EXIT_INTERRUPTED


def drop_stdout() -> None:
    """Send later writes to stdout (and Python's flush at exit) to /dev/null, once
    stdout cannot be written (its reader has gone, its disk is full)."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):  # no real stdout (captured)
        pass


def broken_pipe() -> int:
    """Stop quietly once stdout's reader has gone, as Unix tools do."""
    drop_stdout()
    return EXIT_BROKEN_PIPE


def _ctrl_c_stops() -> None:
    """Ctrl-C raises KeyboardInterrupt even when the parent started the tool with
    SIGINT ignored (Python keeps an inherited SIG_IGN: a test runner's worker,
    a script's child), so a long run always stops on Ctrl-C as documented."""
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, signal.default_int_handler)


def _start(tool: str, module: str, argv: list[str] | None = None) -> int:
    _ctrl_c_stops()
    try:
        return importlib.import_module(module).main(argv)
    except KeyboardInterrupt:
        return interrupted(tool)
    except BrokenPipeError:
        return broken_pipe()


def rducc() -> int:
    """`rducc`: rducc.tools.cli.main; `rducc deploy ...`: rducc.tools.deploy.main;
    `rducc generate ...`: rducc.tools.generate.main."""
    if sys.argv[1:2] == ["deploy"]:
        return _start("rducc deploy", "rducc.tools.deploy", sys.argv[2:])
    if sys.argv[1:2] == ["generate"]:
        return _start("rducc generate", "rducc.tools.generate", sys.argv[2:])
    return _start("rducc", "rducc.tools.cli")


def rducc_deploy() -> int:
    """`rducc-deploy`: rducc.tools.deploy.main (the same as `rducc deploy`)."""
    return _start("rducc deploy", "rducc.tools.deploy")


def rducc_opt() -> int:
    """`rducc-opt`: rducc.tools.opt.main."""
    return _start("rducc-opt", "rducc.tools.opt")


def rducc_run() -> int:
    """`rducc-run`: rducc.tools.run.main."""
    return _start("rducc-run", "rducc.tools.run")
