"""Loading saved `torch.export` programs, safely.

A model file is opened only through `torch.export.load`, which reads the
archive's weights with `weights_only` unpickling. Anything that is not an
export archive is refused with a message saying what it looks like.
"""

from __future__ import annotations

import warnings
import zipfile
from pathlib import Path

import torch

from rducc.errors import RduccError

ACCEPTED = "a torch.export archive (written by torch.export.save, usually *.pt2)"


def _describe_non_archive(path: Path) -> str:
    """A short guess at what a non-zip file is, for the error message."""
    with path.open("rb") as handle:
        head = handle.read(16)
    if head.startswith(b"\x80") and len(head) > 1 and head[1] <= 5:
        return "a plain Python pickle"
    if head.startswith(b"PK"):
        return "a truncated or damaged zip archive"
    if head.lstrip().startswith((b"builtin.module", b"module", b"func.func", b"//")):
        return "MLIR text (use rducc-opt for that)"
    return "not a zip archive"


def _check_archive(path: Path) -> None:
    """Refuse files that are missing, empty or not export archives."""
    if not path.exists():
        raise RduccError(f"{path}: no such file")
    if path.is_dir():
        raise RduccError(f"{path}: is a directory, expected {ACCEPTED}")
    if path.stat().st_size == 0:
        raise RduccError(f"{path}: file is empty, expected {ACCEPTED}")
    if not zipfile.is_zipfile(path):
        raise RduccError(f"{path}: {_describe_non_archive(path)}; rducc accepts {ACCEPTED}")
    with zipfile.ZipFile(path) as archive:
        names = archive.namelist()
        damaged = archive.testzip()
    if damaged is not None:
        raise RduccError(f"{path}: damaged zip archive (bad entry {damaged!r})")
    if any(name.endswith("/archive_format") or name == "archive_format" for name in names):
        return
    if any("/code/" in name for name in names) and any(n.endswith("data.pkl") for n in names):
        kind = "a TorchScript file (torch.jit.save)"
    elif any(name.endswith("data.pkl") for name in names):
        kind = "a torch.save checkpoint (pickled tensors or modules)"
    else:
        kind = "a zip archive that is not a torch.export archive"
    raise RduccError(f"{path}: {kind}; rducc accepts {ACCEPTED}")


def load_exported_program(path: str | Path) -> torch.export.ExportedProgram:
    """Load a saved `torch.export` program, or raise a `RduccError` saying why not."""
    path = Path(path)
    _check_archive(path)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FutureWarning)  # torch's own deprecations
            return torch.export.load(str(path))
    except Exception as error:  # torch raises many kinds for a bad archive
        reason = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        raise RduccError(f"{path}: cannot load the torch.export archive: {reason}") from error
