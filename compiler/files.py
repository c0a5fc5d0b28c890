"""Writing output files atomically: a temp file beside the target, then a rename.

A failed write leaves no partial file and never clobbers an existing one; the
new file gets the mode the umask says (not mkstemp's 0600).
"""

from __future__ import annotations

import os
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO

from rducc.errors import RduccError


def check_writable(path: str) -> None:
    """Refuse, before any work is done, an output path that can never be written."""
    if path == "-":
        return
    target = Path(path)
    directory = target.parent if str(target.parent) else Path(".")
    if target.is_dir():
        raise RduccError(f"cannot write {path}: it is a directory")
    if directory.exists() and not directory.is_dir():
        raise RduccError(f"cannot write {path}: {directory} is not a directory")
    if not directory.is_dir():
        raise RduccError(f"cannot write {path}: directory {directory} does not exist")
    if not os.access(directory, os.W_OK | os.X_OK):
        raise RduccError(f"cannot write {path}: directory {directory} is not writable")


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


def write_atomically_streamed(path: str, write: Callable[[BinaryIO], object]) -> None:
    """Let `write` fill a temp file beside `path` piece by piece, then rename it into
    place: never a partial file, and the whole content never in memory at once."""
    target = Path(path)
    directory = target.parent if str(target.parent) else Path(".")
    if not directory.is_dir():
        raise RduccError(f"cannot write {path}: directory {directory} does not exist")
    try:
        handle, temp = tempfile.mkstemp(dir=directory, prefix=f".{target.name}.", suffix=".tmp")
    except OSError as error:
        raise RduccError(f"cannot write {path}: {error.strerror}") from None
    try:
        umask = os.umask(0)
        os.umask(umask)
        os.fchmod(handle, 0o666 & ~umask)  # mkstemp's 0600 is not what users expect
        with os.fdopen(handle, "wb") as stream:
            write(stream)
        os.replace(temp, target)
    except OSError as error:
        os.unlink(temp)
        raise RduccError(f"cannot write {path}: {error.strerror}") from None
    except BaseException:
        os.unlink(temp)
        raise
