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
A tool writes all its outputs with one `write_together`, at the end.

No output may be an input (`file_session`): every input read through this
module (and every file a tool will read later, `note_input`: the weights a
program names, every file of a deployment) is noted in the run's ledger with
its resolved path and its inode. An output that resolves to one of them (the
same path, a symlink to it, a hard link of it) is refused, whichever was named
first: `declare_outputs` (before any work) refuses a later read of it, and
`write_together` refuses to write it, before anything is written. Two outputs
naming one file are refused the same way.

A directory output (`rducc deploy -o DIR`) is built beside its final place
and renamed into it (`replace_directory`); a symlink to a directory is
followed, as a file's is, and stays a link.
"""

from __future__ import annotations

import errno
import io
import json
import math
import os
import shutil
import stat
import sys
import tempfile
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
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
    note_input(path, what)
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


@dataclass(frozen=True)
class _Named:
    """A file a run reads or writes: the role it plays (`--output`, `the weights
    file the program names`), the path as given, where it resolves, its inode."""

    role: str
    path: str
    resolved: Path
    inode: tuple[int, int] | None

    @classmethod
    def of(cls, role: str, path: str | Path) -> _Named:
        try:
            status = os.stat(path)
            inode: tuple[int, int] | None = (status.st_dev, status.st_ino)
        except (OSError, ValueError):
            inode = None
        return cls(role, str(path), Path(os.path.realpath(path)), inode)  # realpath: a link loop is no error

    def same_file(self, other: _Named) -> bool:
        """The same resolved path, or the same inode: `./x`, `dir/../x`, a symlink
        and a hard link of one file are all that file."""
        return self.resolved == other.resolved or (self.inode is not None and self.inode == other.inode)


@dataclass
class FileLedger:
    """What one run reads and writes (`file_session`)."""

    inputs: list[_Named] = field(default_factory=list)
    outputs: list[_Named] = field(default_factory=list)
    written: list[str] = field(default_factory=list)
    """The files written (committed by `write_together`), in order: what a tool's
    line on success names (`written_summary`)."""


def written_summary(ledger: FileLedger) -> str | None:
    """`wrote out.mlir and out.safetensors`, the files of a folder that holds
    three or more of them counted as one entry (`plots/ (5 files)`); None when
    nothing was written to a file."""
    by_folder: dict[str, list[str]] = {}
    for path in ledger.written:
        by_folder.setdefault(str(Path(path).parent), []).append(path)
    shown: list[str] = []
    for path in ledger.written:
        folder = str(Path(path).parent)
        files = by_folder[folder]
        if len(files) < 3:
            shown.append(path)
        elif path == files[0]:
            shown.append(f"{folder}/ ({len(files)} files)")
    if not shown:
        return None
    return "wrote " + (shown[0] if len(shown) == 1 else ", ".join(shown[:-1]) + f" and {shown[-1]}")


_LEDGER: ContextVar[FileLedger | None] = ContextVar("rducc_file_ledger", default=None)


@contextmanager
def file_session() -> Iterator[FileLedger]:
    """The ledger of one run (a tool's, a `deploy`'s): inside, every input noted
    and every output declared or written is checked against the others. Nested
    sessions share the outer one."""
    outer = _LEDGER.get()
    if outer is not None:
        yield outer
        return
    ledger = FileLedger()
    token = _LEDGER.set(ledger)
    try:
        yield ledger
    finally:
        _LEDGER.reset(token)


def _replaces_input(output: _Named, source: _Named) -> RduccError:
    return RduccError(f"{output.role} {output.path} is {source.role} {source.path}: writing it would "
                      "replace the input; choose another output path")


def note_input(path: str | Path, role: str) -> None:
    """Note a file the run reads (now or later): no output may be it. Refused at
    once when a declared output is it."""
    ledger = _LEDGER.get()
    if ledger is None or str(path) in ("", "-"):
        return
    source = _Named.of(role if role.startswith(("--", "the ")) else f"the {role}", path)
    if any(source.same_file(known) for known in ledger.inputs):
        return
    clash = next((output for output in ledger.outputs if output.same_file(source)), None)
    if clash is not None:
        raise _replaces_input(clash, source)
    ledger.inputs.append(source)


def declare_outputs(outputs: Iterable[tuple[str, str | None]]) -> None:
    """Declare, before any work, the files the run will write ((flag, path);
    '-' and None skipped): refused when two name one file or one is an input
    noted so far; an input read later that is one of them is refused then."""
    ledger = _LEDGER.get()
    declared: list[_Named] = []
    for role, path in outputs:
        if path in (None, "-") or is_stream(str(path)):
            continue
        output = _Named.of(role, str(path))
        twin = next((other for other in declared if other.same_file(output)), None)
        if twin is not None:
            raise RduccError(f"{role} {path} and {twin.role} {twin.path} are the same file: "
                             "give each output its own path")
        declared.append(output)
        if ledger is not None:
            source = next((known for known in ledger.inputs if output.same_file(known)), None)
            if source is not None:
                raise _replaces_input(output, source)
    if ledger is not None:
        ledger.outputs.extend(o for o in declared if not any(o.same_file(known) for known in ledger.outputs))


def check_distinct(outputs: Iterable[tuple[str, str | None]], inputs: Iterable[tuple[str, str | None]] = ()) -> None:
    """Refuse two outputs naming one file, or an output naming an input: the
    inputs are noted (`note_input`) and the outputs declared (`declare_outputs`)."""
    outputs = list(outputs)
    with file_session():
        declare_outputs(outputs)
        for role, path in inputs:
            if path not in (None, "-"):
                note_input(path, role)


def _check_not_inputs(paths: Iterable[str]) -> None:
    """Refuse, before anything is written, an output that is an input of the run."""
    ledger = _LEDGER.get()
    if ledger is None:
        return
    for path in paths:
        output = _Named.of(_role_of(ledger, path), path)
        source = next((known for known in ledger.inputs if output.same_file(known)), None)
        if source is not None:
            raise _replaces_input(output, source)


def _role_of(ledger: FileLedger, path: str) -> str:
    """How the user named an output (its flag), else `the output`."""
    named = _Named.of("", path)
    return next((output.role for output in ledger.outputs if output.same_file(named)), "the output")


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


def link_loop(path: str | Path) -> bool:
    """Whether `path` is a symbolic link that leads back to itself (no file ever)."""
    if not os.path.islink(path):
        return False
    try:
        os.stat(path)
    except OSError as error:
        return error.errno == errno.ELOOP
    return False


def check_writable(path: str) -> None:
    """Refuse, before any work is done, an output path that can never be written."""
    if path == "-":
        return
    target = Path(path)
    if link_loop(target):
        raise RduccError(f"cannot write {path}: a loop of symbolic links")
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


def json_text(data: object, what: str, indent: int = 2) -> str:
    """`data` as strict JSON text (RFC 8259: no NaN or Infinity, which strict
    readers refuse), with a final newline. A number that is not finite is one
    error naming where it is, and nothing is written."""
    try:
        return json.dumps(data, indent=indent, allow_nan=False) + "\n"
    except ValueError:
        raise RduccError(f"{what}: {_non_finite(data) or 'a number'} is not a finite number (NaN or "
                         "infinite); rducc writes only finite numbers in JSON") from None


def json_rows_text(head: dict, tables: dict[str, list], what: str) -> str:
    """Strict JSON of `head`'s fields (as `json_text` with indent 1 writes them)
    then each of `tables` as a list of one compact row a line: 10^5 rows in a
    second, where json's indenting encoder (pure Python) takes ten."""
    rows = json.JSONEncoder(allow_nan=False)
    try:
        parts = [json.dumps(head, indent=1, allow_nan=False).removesuffix("\n}") if head else "{"]
        for index, (name, table) in enumerate(tables.items()):
            body = ",\n  ".join(rows.encode(row) for row in table)
            comma = "," if head or index else ""
            listed = f"[\n  {body}\n ]" if table else "[]"
            parts.append(f"{comma}\n {json.dumps(name)}: {listed}")
    except ValueError:
        raise RduccError(f"{what}: {_non_finite({**head, **tables}) or 'a number'} is not a finite number (NaN "
                         "or infinite); rducc writes only finite numbers in JSON") from None
    return "".join(parts) + "\n}\n"


def _non_finite(data: object, where: str = "") -> str | None:
    """Where the first NaN or infinity in `data` is (`totals.makespan_s`)."""
    if isinstance(data, float) and not math.isfinite(data):
        return f"{where or 'the value'} ({data})"
    items = data.items() if isinstance(data, dict) else enumerate(data) if isinstance(data, list | tuple) else ()
    for key, value in items:
        found = _non_finite(value, f"{where}.{key}" if where and isinstance(key, str) else
                            f"{where}[{key}]" if not isinstance(key, str) else str(key))
        if found is not None:
            return found
    return None


def bytes_writer(data: bytes) -> Writer:
    """A writer of bytes already made."""
    return lambda stream: stream.write(data)


class _Staged:
    """One output being written: its final path and its filled temp file."""

    def __init__(self, path: str, final: Path, temp: str):
        self.path, self.final, self.temp = path, final, temp
        self.backup: str | None = None  # a hard link to the file it replaces
        self.committed = False


def _stage(path: str, write: Writer) -> _Staged:
    """Fill a temp file beside the output's final file (a symlink's target)."""
    final = Path(os.path.realpath(path)) if Path(path).is_symlink() else Path(path)
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


def write_together(outputs: Sequence[tuple[str, Writer]], directories: Sequence[str | Path] = ()) -> None:
    """Write several outputs as one: each to a temp file, then all renamed into
    place; if any write or rename fails, every output is as it was before.
    None may be an input of the run (`file_session`): that is refused before
    anything is written. `directories` (a --plot DIR) are made, parents too,
    only now, once everything is checked; a failure removes those it made.
    Outputs that are streams ('-', a character device, a FIFO) are written last,
    directly, once the files are committed."""
    files = [(path, write) for path, write in outputs if path != "-" and not _direct(Path(path))]
    streams = [(path, write) for path, write in outputs if (path, write) not in files]
    _check_not_inputs([path for path, _ in files])
    made: list[Path] = []
    stages: list[_Staged] = []
    try:
        for directory in directories:
            made += make_directory(directory)
        for path, write in files:
            stages.append(_stage(path, write))
        for staged in stages:
            _commit(staged)
    except OSError as error:
        _roll_back(stages)
        _remove_made(made)
        failed = next((s.path for s in stages if not s.committed), files[-1][0] if files else "?")
        raise RduccError(f"cannot write {failed}: {error.strerror}") from None
    except BaseException:
        _roll_back(stages)
        _remove_made(made)
        raise
    for staged in stages:
        if staged.backup is not None:
            Path(staged.backup).unlink(missing_ok=True)
    for path, write in streams:
        _write_direct(path, write)
    ledger = _LEDGER.get()
    if ledger is not None:
        ledger.written += [str(path) for path, _ in files]


# --------------------------------------------------------------------------
# directories
# --------------------------------------------------------------------------


def check_directory_output(path: str | Path, flag: str) -> None:
    """Refuse, before any work, a directory output (--plot DIR) that can never be
    made: a file there or above it, or no writable directory to make it in.
    Nothing is created here (`write_together` makes it at the end)."""
    target = Path(path)
    if target.exists() and not target.is_dir():
        raise RduccError(f"{flag} {path}: it is a file; {flag} takes a directory (made if missing)")
    existing = target
    while not existing.exists() and not existing.is_symlink():
        if existing.parent == existing:
            break
        existing = existing.parent
    if existing.is_symlink() and not existing.exists():
        raise RduccError(f"{flag} {path}: {existing} is a symbolic link to nothing (dangling, or a loop)")
    if not existing.is_dir():
        raise RduccError(f"{flag} {path}: {existing} is a file, not a directory")
    if existing != target and not os.access(existing, os.W_OK | os.X_OK):
        raise RduccError(f"{flag} {path}: directory {existing} is not writable")


def make_directory(path: str | Path) -> list[Path]:
    """Make a directory and its missing parents; the ones made, outermost first."""
    missing = []
    current = Path(path)
    while not current.is_dir():
        missing.append(current)
        if current.parent == current:
            break
        current = current.parent
    made = []
    try:
        for directory in reversed(missing):
            directory.mkdir()
            made.append(directory)
    except OSError:
        _remove_made(made)
        raise
    return made


def _remove_made(made: Sequence[Path]) -> None:
    """Remove the directories `make_directory` made (innermost first), if empty."""
    for directory in reversed(made):
        try:
            directory.rmdir()
        except OSError:
            pass


def directory_destination(out: str | Path) -> Path:
    """Where a directory output lands: a symbolic link's target (the link stays a
    link, as a file output's does), else the path itself."""
    path = Path(out)
    return Path(os.path.realpath(path)) if path.is_symlink() else path


def staging_directory(out: str | Path) -> Path:
    """An empty directory beside where `out` lands, to build it in."""
    final = directory_destination(out)
    try:
        return Path(tempfile.mkdtemp(dir=final.resolve().parent, prefix=f".{final.name}.", suffix=".tmp"))
    except OSError as error:
        raise RduccError(f"cannot write {out}: {error.strerror}") from None


def replace_directory(staging: Path, out: str | Path) -> None:
    """Rename the finished `staging` directory to where `out` lands, replacing
    what was there (a symlink's target: the link itself stays); the replaced
    directory is removed only once the new one is in place."""
    final = directory_destination(out)
    os.chmod(staging, 0o777 & ~_umask())
    if not final.exists():
        os.rename(staging, final)
        _written_moved(staging, out)
        return
    old = Path(tempfile.mkdtemp(dir=final.parent, prefix=f".{final.name}.", suffix=".old"))
    os.rmdir(old)
    os.rename(final, old)
    try:
        os.rename(staging, final)
    except BaseException:
        os.rename(old, final)
        raise
    shutil.rmtree(old, ignore_errors=True)
    _written_moved(staging, out)


def _written_moved(staging: Path, out: str | Path) -> None:
    """The files written into `staging` are now in `out`: the success line names them there."""
    ledger = _LEDGER.get()
    if ledger is not None:
        ledger.written = [str(Path(out) / Path(path).relative_to(staging)) if Path(path).is_relative_to(staging)
                          else path for path in ledger.written]


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask
