"""A fork server for the lit suite's `rducc-opt`, `rducc`, `rducc-run` and `filecheck`
RUN lines, and its `%python` scripts (lit.cfg.py starts it).

Most RUN lines start `rducc-opt`, and a fresh Python spends more CPU importing
xDSL, rducc's dialects and passes (and torch, for some) than most tests spend
compiling. This server imports them once; the tools on the suite's PATH
(lit_fork/client) send it their arguments, directory, environment and standard
streams, and a forked copy of the warm server runs the tool's own entry point
(rducc.tools.entry) on them, as the installed script would, and the server
reports its exit status. `filecheck` runs in a light server beside it, forked
before the warm imports: a fork's cost grows with the forking process's memory.
The servers exit when their standard input closes (the lit process that started
them ended). RDUCC_LIT_CPU_LOG=FILE appends each request's CPU seconds and
command line to FILE.
"""

from __future__ import annotations

import atexit
import builtins
import gc
import io
import marshal
import os
import resource
import runpy
import select
import signal
import socket
import sys
import tempfile
import traceback
from collections.abc import Callable

MESSAGE_BYTES = 1 << 20
"""The largest request: arguments and environment, marshalled (client)."""


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


def warm_torch() -> None:
    """Import what exporting, decomposing and importing a PyTorch program, or
    loading a `.pt2` archive, imports on first use (torch.export's tracer and
    archive format, aot_autograd, sympy, rducc's frontend): about 1.5 s of CPU
    that each `%python` script and `rducc` run would spend again."""
    import torch._dynamo  # noqa: F401
    import torch._export.serde.serialize  # noqa: F401
    import torch._functorch.aot_autograd  # noqa: F401
    import torch._functorch.partitioners  # noqa: F401
    import torch.export._trace  # noqa: F401
    import torch.export.pt2_archive._package  # noqa: F401

    import rducc.driver  # noqa: F401
    import rducc.frontend.importer  # noqa: F401


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


def run_filecheck() -> object:
    """`filecheck` (the `filecheck` package's script: its `main` on sys.argv, its
    exit status; the messages and the stdin it reads are the client's streams)."""
    from filecheck.main import main

    return main()


def fresh_standard_streams() -> None:
    """sys.stdin, sys.stdout and sys.stderr made again on the client's streams (fds
    0-2), as a fresh interpreter makes them: the server's own were made for ITS
    streams (a file's seekability, which `reconfigure` then relies on; a pipe's
    buffering), and the client's may be another kind."""
    for fd, name in enumerate(("stdin", "stdout", "stderr")):
        old = getattr(sys, name)
        interactive = os.isatty(fd)
        binary = io.open(fd, "rb" if fd == 0 else "wb", closefd=False)
        setattr(sys, name, io.TextIOWrapper(binary, encoding=old.encoding, errors=old.errors, newline="\n",
                                            line_buffering=interactive or fd == 2))


def run_tool(request: dict, streams: list[int]) -> None:
    """In the forked child: become the tool the client was started as (`rducc-opt`,
    `rducc`, `rducc-run`, `filecheck`, `python-fork`) in its directory,
    environment, umask and streams; exit as that process would."""
    for target, fd in enumerate(streams):
        os.dup2(fd, target)
        os.close(fd)
    fresh_standard_streams()
    os.chdir(request["cwd"])
    os.umask(request.get("umask", 0o22))
    os.environ.clear()
    os.environ.update(request["env"])
    tempfile.tempdir = None  # found again from this environment's TMPDIR, as a fresh process would
    sys.argv = request["argv"]
    tool = os.path.basename(sys.argv[0])
    try:
        code = exit_code(run_named(tool))
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


def run_named(tool: str) -> object:
    """Run `tool` (the client's name) on sys.argv; what its entry point returns."""
    if tool == PYTHON:
        return run_python(sys.argv[1:])
    if tool == FILECHECK:
        return run_filecheck()
    from rducc.tools import entry

    return getattr(entry, tool.replace("-", "_"))()


FILECHECK = "filecheck"
"""The tool the light server (`light_path`) runs: it needs none of torch or xDSL,
and a fork copies the page tables of the whole forking process (tens of ms of
system time from the warm server, about 2 from one that imported only FileCheck)."""


def light_path(path: str) -> str:
    """The light server's socket beside the server's `path` (the client's rule too)."""
    return path + "-" + FILECHECK


TORCH_TOOLS = (PYTHON, "rducc")
"""The tools the torch server (`torch_path`) runs: `%python` scripts export models,
and `rducc` loads `.pt2` archives; they need torch.export's modules (`warm_torch`),
which the warm server leaves out: a fork's cost grows with the forking process's
memory, and most RUN lines (`rducc-opt`) never export."""


def torch_path(path: str) -> str:
    """The torch server's socket beside the server's `path` (the client's rule too)."""
    return path + "-torch"


_RUNNING: dict[int, tuple[socket.socket, list[str]]] = {}
"""Each running request's child: the connection its exit status goes back on, and
its command line (for RDUCC_LIT_CPU_LOG)."""


def reap(*_: object) -> None:
    """Wait for every child that has ended (so that its CPU time counts as the
    server's) and send each request's exit status to its client."""
    while True:
        try:
            pid, status, usage = os.wait4(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if not pid:
            return
        finish(pid, status, usage)


def finish(pid: int, status: int, usage: resource.struct_rusage) -> None:
    """Child `pid` ended: its request's exit status goes back to the client."""
    connection, argv = _RUNNING.pop(pid, (None, []))
    if connection is None:
        return
    log_cpu(usage, argv)
    code = os.waitstatus_to_exitcode(status)
    try:
        connection.sendall(str(code if code >= 0 else 128 - code).encode())
    except OSError:
        pass  # the client is gone
    connection.close()


def log_cpu(usage: resource.struct_rusage, argv: list[str]) -> None:
    """With RDUCC_LIT_CPU_LOG=FILE, append the request's CPU seconds (user + system)
    and command line to FILE: which RUN lines cost the suite's time."""
    log = os.environ.get("RDUCC_LIT_CPU_LOG")
    if log:
        with open(log, "a") as out:
            out.write(f"{usage.ru_utime + usage.ru_stime:.3f}\t{' '.join(argv)}\n")


def start(connection: socket.socket, listener: socket.socket) -> None:
    """Receive one request and run it in a child of the server; `reap` sends its
    exit status back when the child ends (one fork a request)."""
    try:
        message, streams, _, _ = socket.recv_fds(connection, MESSAGE_BYTES, 3)
        request = marshal.loads(message)
    except (OSError, ValueError, EOFError, TypeError):
        connection.close()
        return
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGCHLD})  # no reap before the child is recorded
    try:
        pid = os.fork()
        if pid == 0:
            try:
                signal.signal(signal.SIGCHLD, signal.SIG_DFL)
                signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGCHLD})
                for other in (listener, connection, *(c for c, _ in _RUNNING.values())):
                    other.close()
                run_tool(request, streams)
            finally:
                os._exit(70)
        _RUNNING[pid] = (connection, request["argv"])
    finally:
        for fd in streams:
            os.close(fd)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGCHLD})


def listening(path: str) -> socket.socket:
    """A listening socket bound to `path` (clients queue on it from now on)."""
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    listener.bind(path)
    listener.listen(64)
    return listener


def answer(listener: socket.socket) -> None:
    """Answer requests on `listener` until standard input closes."""
    signal.signal(signal.SIGCHLD, reap)
    while 0 not in select.select([listener, 0], [], [])[0]:
        connection, _ = listener.accept()
        start(connection, listener)
    listener.close()


def wait_for_children() -> None:
    """Wait for every child still running (answering its client)."""
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    while True:
        try:
            finish(*os.wait4(-1, 0))
        except ChildProcessError:
            return


def serve_light(listener: socket.socket) -> None:
    """The light server (in a child forked before `warm`): FileCheck alone."""
    import filecheck.main  # noqa: F401

    gc.collect()
    gc.freeze()
    answer(listener)
    wait_for_children()


def serve_torch(listener: socket.socket) -> None:
    """The torch server (in a child forked after `warm`): `TORCH_TOOLS`, with
    torch.export's modules imported (`warm_torch`) when the first request comes:
    a test process that runs none pays nothing."""
    if 0 not in select.select([listener, 0], [], [])[0]:
        warm_torch()
        gc.collect()
        gc.freeze()
        answer(listener)
    listener.close()
    wait_for_children()


def serve_in_child(listener: socket.socket, answer: Callable[[socket.socket], None]) -> None:
    """Fork a server answering on `listener` with `answer` (it exits when done); this process
    closes its copy of the listener."""
    if os.fork() == 0:
        try:
            answer(listener)
        finally:
            os._exit(0)
    listener.close()


def serve(path: str) -> None:
    """Answer requests on the socket `path` (in a directory of its own, removed
    at the end) until standard input closes; `filecheck`'s on `light_path(path)`,
    in a small process of their own, and `TORCH_TOOLS`' on `torch_path(path)`, in
    a warmer one."""
    serve_in_child(listening(light_path(path)), serve_light)
    warm()
    gc.collect()
    gc.freeze()  # a child's collections skip the warm objects: no copy of their pages
    serve_in_child(listening(torch_path(path)), serve_torch)
    listener = listening(path)
    try:
        print("ready", flush=True)
        answer(listener)
    finally:
        listener.close()
        wait_for_children()  # the light and torch servers' too, before their sockets' directory goes
        for socket_path in (path, light_path(path), torch_path(path)):
            if os.path.exists(socket_path):
                os.unlink(socket_path)
        os.rmdir(os.path.dirname(path))


if __name__ == "__main__":
    serve(sys.argv[1])
    os._exit(0)  # skip finalizing torch and xDSL: seconds of CPU at the end of every lit run
