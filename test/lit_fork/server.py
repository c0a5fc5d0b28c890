"""A fork server for the lit suite's `rducc-opt`, `rducc` and `rducc-run` RUN lines,
and its `%python` scripts (lit.cfg.py starts it).

Most RUN lines start `rducc-opt`, and a fresh Python spends more CPU importing
xDSL, rducc's dialects and passes (and torch, for some) than most tests spend
compiling. This server imports them once; the tools on the suite's PATH
(lit_fork/client) send it their arguments, directory, environment and standard
streams, and a forked copy of the warm server runs the tool's own entry point
(rducc.tools.entry) on them, as the installed script would, and reports its exit
status. The server exits when its standard input closes (the lit process that
started it ended).
"""

from __future__ import annotations

import atexit
import builtins
import gc
import json
import os
import runpy
import select
import signal
import socket
import sys
import tempfile
import traceback

MESSAGE_BYTES = 1 << 20
"""The largest request: arguments and environment, as JSON."""


def warm() -> None:
    """Import what every `rducc-opt` run imports, its dialects and passes (loaded
    lazily, by name), and what some runs load on demand (torch, the runtime's
    kernels: host-call and pointwise verifiers, index maps evaluated)."""
    from xdsl.universe import Universe

    import rducc.runtime.implementations  # noqa: F401
    import rducc.tools.cli  # noqa: F401
    import rducc.tools.opt  # noqa: F401
    from rducc.dialects import ALL_DIALECTS
    from rducc.passes import ALL_PASSES

    for dialect in [*Universe.get_multiverse().all_dialects.values(), *ALL_DIALECTS.values()]:
        dialect()
    for make in ALL_PASSES.values():
        make()


def exit_code(status: object) -> int:
    """What Python's own `sys.exit(status)` ends the process with."""
    if status is None:
        return 0
    if isinstance(status, int):
        return status & 0xFF
    print(status, file=sys.stderr)
    return 1


PYTHON = "python-fork"
"""The client's name for lit's `%python` (a script, or `-c CODE`): run in the warm
server, it skips the fresh interpreter's imports (torch, xDSL: seconds a RUN line)."""


def run_python(args: list[str]) -> object:
    """Run `python SCRIPT ARGS...` or `python -c CODE ARGS...` as that interpreter
    would (`__main__`, sys.argv, sys.path[0]); any other command line (options)
    execs the real interpreter, in this process, on the same streams."""
    if args and args[0] == "-c" and len(args) >= 2:
        sys.argv = ["-c", *args[2:]]
        sys.path[0] = ""
        exec(compile(args[1], "<string>", "exec"), {"__name__": "__main__", "__builtins__": builtins})
        return None
    if args and not args[0].startswith("-"):
        sys.argv = list(args)
        sys.path[0] = os.path.dirname(os.path.abspath(args[0]))
        runpy.run_path(args[0], run_name="__main__")
        return None
    os.execv(sys.executable, [sys.executable, *args])


def run_tool(request: dict, streams: list[int]) -> None:
    """In the forked child: become the tool the client was started as (`rducc-opt`,
    `rducc`, `rducc-run`) in its directory, environment, umask and streams; exit as
    that process would."""
    from rducc.tools import entry

    for target, fd in enumerate(streams):
        os.dup2(fd, target)
        os.close(fd)
    os.chdir(request["cwd"])
    os.umask(request.get("umask", 0o22))
    os.environ.clear()
    os.environ.update(request["env"])
    tempfile.tempdir = None  # found again from this environment's TMPDIR, as a fresh process would
    sys.argv = request["argv"]
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    tool = os.path.basename(sys.argv[0])
    try:
        if tool == PYTHON:
            code = exit_code(run_python(sys.argv[1:]))
        else:
            code = exit_code(getattr(entry, tool.replace("-", "_"))())
    except SystemExit as stop:
        code = exit_code(stop.code)
    except BaseException:  # what an uncaught exception does to a fresh interpreter
        traceback.print_exc()
        code = 1
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except OSError:
            code = 120
    os._exit(code)


def handle(connection: socket.socket) -> None:
    """In a child of the server: run one request in a grandchild and send back its exit status."""
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    message, streams, _, _ = socket.recv_fds(connection, MESSAGE_BYTES, 3)
    request = json.loads(message)
    pid = os.fork()
    if pid == 0:
        connection.close()
        run_tool(request, streams)
    for fd in streams:
        os.close(fd)
    code = os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])
    connection.sendall(str(code if code >= 0 else 128 - code).encode())


def reap(*_: object) -> None:
    """Wait for every child that has ended (so that its CPU time counts as the server's)."""
    try:
        while os.waitpid(-1, os.WNOHANG)[0]:
            pass
    except ChildProcessError:
        pass


def serve(path: str) -> None:
    """Answer requests on the socket `path` (in a directory of its own, removed
    at the end) until standard input closes."""
    warm()
    gc.collect()
    gc.freeze()  # a child's collections skip the warm objects: no copy of their pages
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    listener.bind(path)
    try:
        listener.listen(64)
        signal.signal(signal.SIGCHLD, reap)
        print("ready", flush=True)
        while 0 not in select.select([listener, 0], [], [])[0]:
            connection, _ = listener.accept()
            if os.fork() == 0:
                listener.close()
                try:
                    handle(connection)
                finally:
                    os._exit(0)
            connection.close()
    finally:
        listener.close()
        os.unlink(path)
        os.rmdir(os.path.dirname(path))
    while True:
        try:
            os.wait()
        except ChildProcessError:
            break


if __name__ == "__main__":
    serve(sys.argv[1])
    os._exit(0)  # skip finalizing torch and xDSL: seconds of CPU at the end of every lit run
