"""`rducc`, `rducc-opt` and `rducc-run` as processes of a warm fork server, for tests.

A fresh tool spends seconds of CPU importing torch and xDSL before it reads its
arguments; a test that runs a tool ten times pays that ten times. Here the lit
suite's fork server (test/lit_fork/server.py) is started once per test process, on
first use, and each run is still a process of its own: `test/lit_fork/<tool>` (a
small client) hands its arguments, directory, environment, umask and standard
streams to a forked copy of the warm server, which runs the tool's entry point as
the installed script would and exits with its status. What such a run does not
check is the interpreter's start (imports, a Ctrl-C while importing, what a fresh
`rducc-opt` loads): tests about those run the installed tool (`INSTALLED`).
"""

from __future__ import annotations

import atexit
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

INSTALLED = Path(sys.executable).parent
"""Where the installed console scripts are (a fresh interpreter each run)."""
FORK_DIR = Path(__file__).resolve().parents[1] / "lit_fork"

_server: dict[str, str] = {}
"""The running server's environment entries (empty until first use, or if it could not start)."""


def _stop(server: subprocess.Popen, directory: str) -> None:
    """Close the server's standard input: it stops (and removes its socket); wait for it."""
    assert server.stdin is not None
    server.stdin.close()
    server.wait()
    shutil.rmtree(directory, ignore_errors=True)


def _start() -> dict[str, str]:
    """Start the fork server once per process; the environment entries its clients need."""
    if not _server:
        directory = tempfile.mkdtemp(prefix="rducc-test-fork-")
        path = os.path.join(directory, "server")
        server = subprocess.Popen([sys.executable, str(FORK_DIR / "server.py"), path],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        assert server.stdout is not None
        assert server.stdout.readline().strip() == b"ready", "test/lit_fork/server.py did not start"
        atexit.register(_stop, server, directory)
        _server.update(RDUCC_LIT_FORK_SERVER=path, RDUCC_LIT_INSTALLED_BIN=str(INSTALLED))
    return _server


def tool(name: str) -> Path:
    """The command that runs `name` in the warm server (start it if needed): pass
    `env=tool_env(...)` to the subprocess call."""
    _start()
    return FORK_DIR / name


def tool_env(env: dict[str, str] | None = None) -> dict[str, str]:
    """`env` (default: this process's environment) plus where the server listens."""
    return {**(os.environ if env is None else env), **_start()}


def run_tool(name: str, *args: object, env: dict[str, str] | None = None,
             **kwargs) -> subprocess.CompletedProcess[str]:
    """`subprocess.run([name, *args], capture_output=True, text=True)` with the tool
    started from the warm server; other keywords (cwd, input, timeout) pass through."""
    kwargs.setdefault("timeout", 600)
    return subprocess.run([str(tool(name)), *map(str, args)], capture_output=True, text=True,
                          env=tool_env(env), **kwargs)
