"""The one place rducc touches files: reading inputs safely, writing outputs atomically.

Reading: an input (model, weights, array, target, program) must be a regular
file. A FIFO, a device or a socket is refused before anything reads from it
(opening a FIFO would block, `/dev/zero` would never end), and what is read is
bounded by the file's size and a limit per kind of file.

Writing: a temp file beside the target, then a rename, so a failed write leaves
no partial file and never clobbers an existing one; the new file gets the mode
the umask says (not mkstemp's 0600). Where an output already exists and is
not a regular file, rducc decides as follows (README, docs/errors.md):

- a symbolic link is followed: the file it points to is replaced atomically
  and the link stays a link (the rename never replaces the link itself);
- a character device (`/dev/null`) or a FIFO is written directly, streamed:
  there is no file to replace, so nothing to make atomic;
- a block device or a socket is refused.

`write_together` writes several outputs (the MLIR and its weights sidecar) as
one: all to temp files first, then all renamed; a failure restores every one.
Two outputs naming the same file, or an output naming an input, are refused
before any work is done (`check_distinct`).
"""

from __future__ import annotations

import io
import os
import stat
import sys
import tempfile
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import BinaryIO

from rducc.errors import RduccError

Writer = Callable[[BinaryIO], object]
"""Fills a binary stream with one output's bytes."""


# --------------------------------------------------------------------------
# reading
# --------------------------------------------------------------------------


def _kind(mode: int) -> str:
    """What a non-regular file is, in words."""
    kinds = [(stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO (named pipe)"),
             (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
             (stat.S_ISSOCK, "a socket")]
    return next((name for test, name in kinds if test(mode)), "not a regular file")


def check_regular(path: str | Path, what: str) -> os.stat_result:
    """Refuse a missing or non-regular input without opening it (a FIFO would block)."""
    try:
        status = os.stat(path)
    except FileNotFoundError:
        raise RduccError(f"{what} {path}: no such file") from None
    except OSError as error:
        raise RduccError(f"{what} {path}: {error.strerror}") from None
    if not stat.S_ISREG(status.st_mode):
        raise RduccError(f"{what} {path}: {_kind(status.st_mode)}, not a regular file")
    return status


def open_regular(path: str | Path, what: str) -> io.BufferedReader:
    """Open an input for reading, refusing anything but a regular file. The open
    itself never blocks (O_NONBLOCK), and the check is on the opened file."""
    check_regular(path, what)
    try:
        handle = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as error:
        raise RduccError(f"{what} {path}: {error.strerror}") from None
    mode = os.fstat(handle).st_mode
    if not stat.S_ISREG(mode):  # swapped between the stat and the open
        os.close(handle)
        raise RduccError(f"{what} {path}: {_kind(mode)}, not a regular file")
    os.set_blocking(handle, True)
    return io.BufferedReader(io.FileIO(handle, "rb"))


def read_regular(path: str | Path, what: str, limit: int) -> bytes:
    """The bytes of a regular file of at most `limit` bytes."""
    with open_regular(path, what) as stream:
        size = os.fstat(stream.fileno()).st_size
        if size > limit:
            raise RduccError(f"{what} {path}: {size} bytes, more than the {limit} a {what} may have")
        data = stream.read(limit + 1)
    if len(data) > limit:
        raise RduccError(f"{what} {path}: more than the {limit} bytes a {what} may have")
    return data


def read_text(path: str | Path, what: str, limit: int) -> str:
    """A regular file's UTF-8 text, of at most `limit` bytes."""
    data = read_regular(path, what, limit)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise RduccError(f"{what} {path}: not UTF-8 text (byte {error.start})") from None


# --------------------------------------------------------------------------
# which outputs may be written
# --------------------------------------------------------------------------


def _same_file(a: str, b: str) -> bool:
    """Whether two paths name one file: the same resolved path, or (both existing)
    the same inode, so `./x`, `dir/../x`, a symlink and a hard link all count."""
    first, second = Path(a), Path(b)
    if first.resolve() == second.resolve():
        return True
    try:
        return os.path.samefile(first, second)
    except OSError:
        return False


def check_distinct(outputs: Iterable[tuple[str, str | None]], inputs: Iterable[tuple[str, str | None]] = ()) -> None:
    """Refuse two outputs naming one file, or an output naming an input: a rename
    would replace the input or one output the other. Each entry is (flag, path);
    '-' (stdout) and None are skipped."""
    named_outputs = [(flag, path) for flag, path in outputs if path not in (None, "-")]
    named_inputs = [(flag, path) for flag, path in inputs if path not in (None, "-")]
    for index, (flag, path) in enumerate(named_outputs):
        assert path is not None
        for other_flag, other in named_outputs[:index]:
            assert other is not None
            if _same_file(path, other):
                raise RduccError(f"{flag} {path} and {other_flag} {other} are the same file: "
                                 "give each output its own path")
        for input_flag, source in named_inputs:
            assert source is not None
            if _same_file(path, source):
                raise RduccError(f"{flag} {path} is {input_flag} {source}: writing it would "
                                 "replace the input; choose another output path")


def is_stream(path: str) -> bool:
    """Whether an output is a stream, not a file: '-', a character device, a FIFO."""
    return path == "-" or _direct(Path(path))


def _direct(path: Path) -> bool:
    """Whether an existing output is written in place (a character device or FIFO)."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return False
    return stat.S_ISCHR(mode) or stat.S_ISFIFO(mode)


def check_writable(path: str) -> None:
    """Refuse, before any work is done, an output path that can never be written."""
    if path == "-":
        return
    target = Path(path)
    if target.exists():
        mode = os.stat(target).st_mode
        if stat.S_ISDIR(mode):
            raise RduccError(f"cannot write {path}: it is a directory")
        if stat.S_ISBLK(mode) or stat.S_ISSOCK(mode):
            raise RduccError(f"cannot write {path}: it is {_kind(mode)}; rducc writes regular "
                             "files, character devices and FIFOs")
        if _direct(target):
            return
        target = target.resolve()  # a symlink: its file is replaced, the link stays
    directory = target.parent if str(target.parent) else Path(".")
    if directory.exists() and not directory.is_dir():
        raise RduccError(f"cannot write {path}: {directory} is not a directory")
    if not directory.is_dir():
        raise RduccError(f"cannot write {path}: directory {directory} does not exist")
    if not os.access(directory, os.W_OK | os.X_OK):
        raise RduccError(f"cannot write {path}: directory {directory} is not writable")


# --------------------------------------------------------------------------
# writing
# --------------------------------------------------------------------------


def write_atomically(path: str, text: str) -> None:
    """Write `text` to `path` via a temp file and rename; '-' means stdout."""
    if path == "-":
        sys.stdout.write(text)
        sys.stdout.flush()
        return
    write_atomically_bytes(path, text.encode())


def write_atomically_bytes(path: str, data: bytes) -> None:
    """Write `data` to `path` via a temp file and rename: never a partial file."""
    write_atomically_streamed(path, lambda stream: stream.write(data))


def write_atomically_streamed(path: str, write: Writer) -> None:
    """Let `write` fill a temp file beside `path` piece by piece, then rename it into
    place: never a partial file, and the whole content never in memory at once."""
    write_together([(path, write)])


def text_writer(text: str) -> Writer:
    """A writer of UTF-8 text."""
    return lambda stream: stream.write(text.encode())


class _Staged:
    """One output being written: its final path and its filled temp file."""

    def __init__(self, path: str, final: Path, temp: str):
        self.path, self.final, self.temp = path, final, temp
        self.backup: str | None = None  # a hard link to the file it replaces
        self.committed = False


def _stage(path: str, write: Writer) -> _Staged:
    """Fill a temp file beside the output's final file (a symlink's target)."""
    final = Path(path).resolve() if Path(path).is_symlink() else Path(path)
    directory = final.parent if str(final.parent) else Path(".")
    if not directory.is_dir():
        raise RduccError(f"cannot write {path}: directory {directory} does not exist")
    try:
        handle, temp = tempfile.mkstemp(dir=directory, prefix=f".{final.name}.", suffix=".tmp")
    except OSError as error:
        raise RduccError(f"cannot write {path}: {error.strerror}") from None
    try:
        umask = os.umask(0)
        os.umask(umask)
        os.fchmod(handle, 0o666 & ~umask)  # mkstemp's 0600 is not what users expect
        with os.fdopen(handle, "wb") as stream:
            write(stream)
    except OSError as error:
        os.unlink(temp)
        raise RduccError(f"cannot write {path}: {error.strerror}") from None
    except BaseException:
        os.unlink(temp)
        raise
    return _Staged(path, final, temp)


def _commit(staged: _Staged) -> None:
    """Rename the temp file over the output, keeping a hard link to what it replaces."""
    if staged.final.exists():
        backup = f"{staged.temp}.old"
        try:
            os.link(staged.final, backup)
            staged.backup = backup
        except OSError:
            staged.backup = None  # no hard links here: a later failure cannot restore it
    os.replace(staged.temp, staged.final)
    staged.committed = True


def _roll_back(stages: Sequence[_Staged]) -> None:
    """Put back what each committed output replaced; remove every temp file."""
    for staged in stages:
        if staged.committed and staged.backup is not None:
            os.replace(staged.backup, staged.final)
        elif staged.committed:
            Path(staged.final).unlink(missing_ok=True)
        else:
            Path(staged.temp).unlink(missing_ok=True)
            if staged.backup is not None:
                Path(staged.backup).unlink(missing_ok=True)


def _write_direct(path: str, write: Writer) -> None:
    """Stream into a character device or FIFO (nothing there to replace)."""
    if path == "-":
        sys.stdout.flush()
        write(sys.stdout.buffer)
        sys.stdout.buffer.flush()
        return
    try:
        with open(path, "wb") as stream:
            write(stream)
    except OSError as error:
        raise RduccError(f"cannot write {path}: {error.strerror}") from None


def write_together(outputs: Sequence[tuple[str, Writer]]) -> None:
    """Write several outputs as one: each to a temp file, then all renamed into
    place; if any write or rename fails, every output is as it was before.
    Outputs that are streams ('-', a character device, a FIFO) are written last,
    directly, once the files are committed."""
    files = [(path, write) for path, write in outputs if path != "-" and not _direct(Path(path))]
    streams = [(path, write) for path, write in outputs if (path, write) not in files]
    stages: list[_Staged] = []
    try:
        for path, write in files:
            stages.append(_stage(path, write))
        for staged in stages:
            _commit(staged)
    except OSError as error:
        _roll_back(stages)
        failed = next((s.path for s in stages if not s.committed), files[-1][0] if files else "?")
        raise RduccError(f"cannot write {failed}: {error.strerror}") from None
    except BaseException:
        _roll_back(stages)
        raise
    for staged in stages:
        if staged.backup is not None:
            Path(staged.backup).unlink(missing_ok=True)
    for path, write in streams:
        _write_direct(path, write)
