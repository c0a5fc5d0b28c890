"""Loading saved `torch.export` programs, safely.

A model file is opened only through `torch.export.load`, and every unpickling
it does is forced to `weights_only` (torch.export.load itself passes
`weights_only=False` for sample inputs and for weights marked `use_pickle`;
the TORCH_FORCE_WEIGHTS_ONLY_LOAD override closes that). Anything that is not
an export archive is refused with a message saying what it looks like.

Before torch sees an archive, its members are checked against what
`torch.export.save` writes (`_check_members`): torch would otherwise extract and
`dlopen` AOTInductor code (`data/aotinductor/`), follow `../` in member names when
extracting, and call plain `pickle.loads` on opaque-object constants.
"""

from __future__ import annotations

import json
import logging
import os
import re
import warnings
import zipfile
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from rducc.errors import RduccError
from rducc.files import check_regular

if TYPE_CHECKING:
    import torch

ACCEPTED = "a torch.export archive (written by torch.export.save, usually *.pt2)"


OTHER_FORMATS = {
    ".onnx": "an ONNX model",
    ".gguf": "a GGUF model",
    ".tflite": "a TensorFlow Lite model",
    ".h5": "a Keras/HDF5 model",
    ".pb": "a TensorFlow graph",
    ".safetensors": "a safetensors weights file",
}
"""Non-zip formats recognised by their extension, for the error message."""


def _looks_like_safetensors(head: bytes) -> bool:
    return len(head) > 9 and head[8:10] in (b'{"', b"{ ") and int.from_bytes(head[:8], "little") < 1 << 32


def _describe_non_archive(path: Path) -> str:
    """A short guess at what a non-zip file is, for the error message."""
    try:
        with path.open("rb") as handle:
            head = handle.read(16)
    except OSError as error:
        raise RduccError(f"{path}: cannot read: {error.strerror}") from None
    if head.startswith(b"\x80") and len(head) > 1 and head[1] <= 5:
        return "a plain Python pickle"
    if _looks_like_safetensors(head):
        return "a safetensors weights file (weights only, no program)"
    if path.suffix.lower() in OTHER_FORMATS:
        return f"{OTHER_FORMATS[path.suffix.lower()]} ({path.suffix} file), not a zip archive"
    if head.startswith(b"PK"):
        return "a truncated or damaged zip archive"
    if head.lstrip().startswith((b"builtin.module", b"module", b"func.func", b"//")):
        return "MLIR text (use rducc-opt for that)"
    return "not a zip archive"


def check_archive(path: str | Path) -> None:
    """Refuse files that are missing, empty or not export archives (no torch needed)."""
    path = Path(path)
    if not path.exists():
        raise RduccError(f"{path}: no such file")
    if path.is_dir():
        raise RduccError(f"{path}: is a directory, expected {ACCEPTED}")
    check_regular(path, "model")  # a FIFO would block, a device never end
    if path.stat().st_size == 0:
        raise RduccError(f"{path}: file is empty, expected {ACCEPTED}")
    if not zipfile.is_zipfile(path):
        raise RduccError(f"{path}: {_describe_non_archive(path)}; rducc accepts {ACCEPTED}")
    try:
        with zipfile.ZipFile(path) as archive:
            names = archive.namelist()
            _check_inflated_sizes(path, archive.infolist())  # before anything is inflated
            damaged = archive.testzip()
    except (zipfile.BadZipFile, zlib.error, OSError, EOFError, NotImplementedError) as error:
        raise RduccError(f"{path}: damaged zip archive ({error})") from None
    if damaged is not None:
        raise RduccError(f"{path}: damaged zip archive (bad entry {damaged!r})")
    if any(name.endswith("/archive_format") or name == "archive_format" for name in names):
        _check_members(path, names)
        return
    if any("/code/" in name for name in names) and any(n.endswith("data.pkl") for n in names):
        kind = "a TorchScript file (torch.jit.save)"
    elif any(name.endswith("data.pkl") for name in names):
        kind = "a torch.save checkpoint (pickled tensors or modules)"
    else:
        kind = "a zip archive that is not a torch.export archive"
    raise RduccError(f"{path}: {kind}; rducc accepts {ACCEPTED}")


MAX_INFLATED_BYTES = 256 << 20
"""The most a compressed member may inflate to. torch.export.save stores tensors
uncompressed (their size is their size in the file); what it compresses is the
program's JSON and small configs, which are megabytes even for large models."""
MAX_RATIO = 200
"""...and at most this many times its compressed size beyond 1 MiB (text compresses
about 10x; a zip bomb 1000x or more)."""


def _check_inflated_sizes(path: Path, members: list[zipfile.ZipInfo]) -> None:
    """Refuse members that would inflate past what is plausible, by their declared
    sizes (zipfile never inflates past the declared size, and the CRC check then
    fails on a member that lies)."""
    for info in members:
        if info.compress_type == zipfile.ZIP_STORED:
            if info.file_size != info.compress_size:
                raise RduccError(f"{path}: damaged zip archive (member {info.filename!r} is stored "
                                 f"as {info.compress_size} bytes but declares {info.file_size})")
            continue
        limit = min(MAX_INFLATED_BYTES, max(1 << 20, MAX_RATIO * info.compress_size))
        if info.file_size > limit:
            raise RduccError(f"{path}: archive member {info.filename!r} inflates from "
                             f"{info.compress_size} to {info.file_size} bytes, more than the {limit} "
                             "rducc allows (a zip bomb?)")


_EXPORT_MEMBERS = re.compile(
    r"(archive_format|archive_version|byteorder|version|\.data/version|\.data/serialization_id"
    r"|models/\w+\.json|data/sample_inputs/\w+\.pt|extra/[\w.-]+"
    r"|data/weights/\w+_weights_config\.json|data/weights/weight_\d+"
    r"|data/constants/\w+_constants_config\.json|data/constants/tensor_\d+)"
)
"""Members (below the archive's root folder) that `torch.export.save` writes and rducc reads."""

_AOTINDUCTOR_DIR = "data/aotinductor/"
_PICKLED_OBJECT = re.compile(r"data/constants/(opaque|custom)_obj_\d+")
_PAYLOAD_CONFIG = re.compile(r"data/(weights|constants)/\w+_\1_config\.json")
_TENSOR_FILE = {"weights": re.compile(r"weight_\d+"), "constants": re.compile(r"tensor_\d+")}
_REFUSED = "which rducc refuses to load"
_PICKLE_RISK = "(unpickling it can run code)"


def _unsafe_member_name(name: str) -> bool:
    """Absolute, backslashed, drive-lettered or `..`-climbing names escape an extraction folder."""
    parts = name.split("/")
    return name.startswith("/") or "\\" in name or ":" in parts[0] or ".." in parts


def _member_problem(member: str, root: str) -> str | None:
    """Why rducc refuses one member, given the archive's root folder, or None."""
    if _unsafe_member_name(member):
        return (f"archive member {member!r} has an unsafe name (absolute or with '..'), "
                "which could write outside the extraction folder; refused")
    if not member.startswith(root):
        return f"archive member {member!r} lies outside the archive's folder {root!r}"
    relative = member[len(root):]
    if relative.startswith(_AOTINDUCTOR_DIR):
        return (f"archive member {member!r} is AOTInductor compiled code, {_REFUSED} "
                "(torch would extract and run it); save the program with torch.export.save")
    if _PICKLED_OBJECT.fullmatch(relative):
        return f"archive member {member!r} is a pickled Python object, {_REFUSED} {_PICKLE_RISK}"
    if not _EXPORT_MEMBERS.fullmatch(relative):
        return f"unexpected archive member {member!r}: not part of what torch.export.save writes"
    return None


def _payload_problem(kind: str, config: object) -> str | None:
    """Why rducc refuses a weights/constants config (pickled entries, odd file names), or None."""
    entries = config.get("config") if isinstance(config, dict) else None
    if not isinstance(entries, dict):
        return f"not a torch.export {kind} config"
    singular = kind.rstrip("s")
    for name, entry in entries.items():
        stored = entry.get("path_name") if isinstance(entry, dict) else None
        if not isinstance(stored, str) or not _TENSOR_FILE[kind].fullmatch(stored):
            return (f"{singular} {name!r} is stored as {stored!r}, not as tensor bytes "
                    f"(opaque and custom objects are pickles), {_REFUSED} {_PICKLE_RISK}")
        if entry.get("use_pickle") is not False:
            return f"{singular} {name!r} is stored as a pickle (use_pickle), {_REFUSED} {_PICKLE_RISK}"
    return None


def _check_payload_configs(path: Path, names: list[str], root: str) -> None:
    """Refuse weights or constants that torch would unpickle instead of reading as bytes."""
    with zipfile.ZipFile(path) as archive:
        for member in names:
            config = _PAYLOAD_CONFIG.fullmatch(member[len(root):])
            if config is None:
                continue
            try:
                parsed = json.loads(archive.read(member))
            except (ValueError, UnicodeDecodeError):
                raise RduccError(f"{path}: archive member {member!r} is not valid JSON") from None
            problem = _payload_problem(config.group(1), parsed)
            if problem:
                raise RduccError(f"{path}: {member}: {problem}")


_OP_TARGET = re.compile(rb'"target":\s*"torch\.ops\.(\w+)\.(\w+)\.(\w+)"')
_TORCH_NAMESPACES = frozenset({"aten", "prims", "quantized_decomposed", "higher_order", "_operator"})


def _is_registered(namespace: str, name: str, variant: str) -> bool:
    import torch

    try:
        return getattr(getattr(getattr(torch.ops, namespace), name), variant) is not None
    except (AttributeError, RuntimeError):
        return False


def check_operators_registered(path: Path) -> None:
    """Refuse an archive calling a custom operator this process does not define, naming
    it and its package (torch's own load fails with a deserialization error)."""
    with zipfile.ZipFile(path) as archive:
        programs = [n for n in archive.namelist() if re.search(r"(^|/)models/\w+\.json$", n)]
        targets = {match.groups() for member in programs for match in _OP_TARGET.finditer(archive.read(member))}
    for namespace, name, variant in sorted(targets):
        names = (namespace.decode(), name.decode(), variant.decode())
        if names[0] not in _TORCH_NAMESPACES and not _is_registered(*names):
            raise RduccError(
                f"{path}: the program calls the custom operator {names[0]}::{names[1]}.{names[2]}, which is "
                f"not registered in this process: it is defined by the package that registers the "
                f"'{names[0]}' namespace; import it (for example `import {names[0]}`) before loading the archive"
            )


def _check_members(path: Path, names: list[str]) -> None:
    """Refuse an export archive holding anything beyond the program, its tensors and sample inputs."""
    root = names[0].split("/")[0] + "/" if "/" in names[0] else ""
    for member in names:
        problem = _member_problem(member, root)
        if problem:
            raise RduccError(f"{path}: {problem}")
    _check_payload_configs(path, names, root)

_FORCE_SAFE = "TORCH_FORCE_WEIGHTS_ONLY_LOAD"
_FORCE_UNSAFE = "TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD"


@contextmanager
def _weights_only_everywhere() -> Iterator[None]:
    """Make every torch.load inside the block use weights_only, whatever it passes."""
    saved = {key: os.environ.pop(key, None) for key in (_FORCE_SAFE, _FORCE_UNSAFE)}
    os.environ[_FORCE_SAFE] = "1"
    try:
        yield
    finally:
        del os.environ[_FORCE_SAFE]
        os.environ.update({k: v for k, v in saved.items() if v is not None})


class _Records(logging.Handler):
    """Keeps log records instead of printing them."""

    def __init__(self) -> None:
        super().__init__()
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


TRACEBACK_LOGGERS = ("torch.export", "torch._export", "torch._subclasses.fake_tensor")
"""torch's loggers that print a traceback to stderr before raising (fake_tensor:
"failed while attempting to run meta for ..."): rducc reports the exception."""


@contextmanager
def captured_torch_logs() -> Iterator[list[logging.LogRecord]]:
    """torch.export logs its own tracebacks to stderr; capture them instead."""
    handler = _Records()
    loggers = [logging.getLogger(name) for name in TRACEBACK_LOGGERS]
    saved = [(logger, logger.handlers[:], logger.propagate) for logger in loggers]
    for logger in loggers:
        logger.handlers, logger.propagate = [handler], False
    try:
        yield handler.records
    finally:
        for logger, handlers, propagate in saved:
            logger.handlers, logger.propagate = handlers, propagate


def load_exported_program(path: str | Path) -> torch.export.ExportedProgram:
    """Load a saved `torch.export` program, or raise a `RduccError` saying why not."""
    import torch
    import torch.ao.quantization.fx._decomposed  # noqa: F401  (quantized_decomposed ops an archive may hold)

    path = Path(path)
    check_archive(path)
    check_operators_registered(path)
    with captured_torch_logs() as records:
        try:
            with warnings.catch_warnings(), _weights_only_everywhere():
                warnings.simplefilter("ignore", FutureWarning)  # torch's own deprecations
                program = torch.export.load(str(path))
        except Exception as error:  # torch raises many kinds for a bad archive
            logged = [r.exc_info[1] for r in records if r.exc_info and r.exc_info[1] is not None]
            cause = logged[0] if logged else error
            text = str(cause).strip()
            reason = text.splitlines()[0] if text else type(cause).__name__
            raise RduccError(f"{path}: cannot load the torch.export archive: {reason}") from error
    check_weights_match_graph(path, program)
    return program


def check_weights_match_graph(path: Path, program: torch.export.ExportedProgram) -> None:
    """Every parameter, buffer and constant the archive stores has the dtype and
    shape the graph declares for it (the archive's weights config and its graph
    are separate JSON members: an edited one would otherwise fail deep in torch's
    tracer, or run with the wrong tensor)."""
    import torch

    signature = program.graph_signature
    names = {**signature.inputs_to_parameters, **signature.inputs_to_buffers,
             **signature.inputs_to_lifted_tensor_constants}
    for node in program.graph.nodes:
        target = names.get(node.name) if node.op == "placeholder" else None
        declared = node.meta.get("val") if target is not None else None
        value = program.state_dict.get(target, program.constants.get(target)) if target else None
        if not isinstance(value, torch.Tensor) or not isinstance(declared, torch.Tensor):
            continue
        if not all(isinstance(d, int) for d in declared.shape):
            continue  # a symbolic size: checked where the program is traced
        if tuple(value.shape) != tuple(declared.shape) or value.dtype != declared.dtype:
            raise RduccError(
                f"{path}: the archive's weight {target!r} is {_typed(value)} but its graph declares "
                f"{_typed(declared)} (the archive was edited or damaged)"
            )


def _typed(tensor: torch.Tensor) -> str:
    return f"{str(tensor.dtype).removeprefix('torch.')}{list(tensor.shape)}"
