"""Loading saved `torch.export` programs, safely.

A model file is opened only through `torch.export.load`, and every unpickling
it does is forced to `weights_only` (torch.export.load itself passes
`weights_only=False` for sample inputs and for weights marked `use_pickle`;
the TORCH_FORCE_WEIGHTS_ONLY_LOAD override closes that). Anything that is not
an export archive is refused with a message saying what it looks like.

Before torch sees an archive, its members are checked against what
`torch.export.save` writes (`_check_members`): torch would otherwise extract and
`dlopen` AOTInductor code (`data/aotinductor/`), follow `../` in member names when
extracting, and call plain `pickle.loads` on opaque-object constants. The one
opaque object rducc takes is a `torch.Generator` (a model drawing with
`generator=torch.Generator().manual_seed(...)`), known by its pickle's first
global (read from the opcodes; nothing runs): rducc's draws are its own, so the
archive is loaded with a fresh generator of rducc's own pickling in its place.
"""

from __future__ import annotations

import io
import json
import logging
import os
import pickle
import pickletools
import re
import sys
import warnings
import zipfile
import zlib
from collections.abc import Iterator
from contextlib import contextmanager, redirect_stderr
from pathlib import Path
from typing import TYPE_CHECKING, Any

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
            export = any(name.endswith("/archive_format") or name == "archive_format" for name in names)
            if export:  # names, configs and sizes, before the tensors are read
                _check_members(path, archive)
            damaged = archive.testzip()
    except (zipfile.BadZipFile, zlib.error, OSError, EOFError, NotImplementedError) as error:
        raise RduccError(f"{path}: damaged zip archive ({error})") from None
    if damaged is not None:
        raise RduccError(f"{path}: damaged zip archive (bad entry {damaged!r})")
    if export:
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
_TENSOR_MEMBER = re.compile(r"data/(weights/weight|constants/tensor)_\d+")
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


def _payload_problem(kind: str, config: object, generators: frozenset[str] = frozenset()) -> str | None:
    """Why rducc refuses a weights/constants config (pickled entries, odd file names), or None
    (`generators`: the files of this folder that pickle a `torch.Generator`, taken)."""
    entries = config.get("config") if isinstance(config, dict) else None
    if not isinstance(entries, dict):
        return f"not a torch.export {kind} config"
    singular = kind.rstrip("s")
    for name, entry in entries.items():
        stored = entry.get("path_name") if isinstance(entry, dict) else None
        if stored in generators and entry.get("tensor_meta") is None:
            continue
        if not isinstance(stored, str) or not _TENSOR_FILE[kind].fullmatch(stored):
            return (f"{singular} {name!r} is stored as {stored!r}, not as tensor bytes "
                    f"(opaque and custom objects are pickles), {_REFUSED} {_PICKLE_RISK}")
        if entry.get("use_pickle") is not False:
            return f"{singular} {name!r} is stored as a pickle (use_pickle), {_REFUSED} {_PICKLE_RISK}"
    return None


def _check_payload_configs(path: Path, archive: zipfile.ZipFile, root: str) -> None:
    """Refuse weights or constants that torch would unpickle instead of reading as
    bytes, and tensor members larger than the tensors stored in them need."""
    for member in archive.namelist():
        config = _PAYLOAD_CONFIG.fullmatch(member[len(root):])
        if config is None:
            continue
        try:
            parsed = json.loads(archive.read(member))
        except (ValueError, UnicodeDecodeError):
            raise RduccError(f"{path}: archive member {member!r} is not valid JSON") from None
        folder = f"{root}data/{config.group(1)}/"
        generators = frozenset(m[len(folder):] for m in archive.namelist()
                               if m.startswith(folder) and _generator_member(archive, m, root))
        problem = _payload_problem(config.group(1), parsed, generators)
        if problem:
            raise RduccError(f"{path}: {member}: {problem}")
        _check_tensor_sizes(path, archive, f"{root}data/{config.group(1)}/", parsed["config"])


_ITEMSIZE = {1: 1, 2: 1, 3: 2, 4: 4, 5: 8, 6: 2, 7: 4, 8: 8, 9: 4, 10: 8, 11: 16, 12: 1, 13: 2,
             28: 2, 29: 1, 30: 1, 31: 1, 32: 1, 33: 1, 34: 4, 35: 8}
"""Bytes per element of torch.export's serialized ScalarType codes (16, the widest, for others)."""


def _ints(value: object) -> list[int] | None:
    """The integers of a serialized `[{"as_int": n}, ...]` (None when one is symbolic)."""
    items = value if isinstance(value, list) else [value]
    ints = [item.get("as_int") if isinstance(item, dict) else None for item in items]
    return ints if all(type(n) is int and n >= 0 for n in ints) else None  # type: ignore[return-value]


def _bytes_needed(meta: object) -> int | None:
    """The bytes of storage a serialized tensor_meta reaches (None when it cannot tell)."""
    if not isinstance(meta, dict):
        return None
    sizes, strides, offset = _ints(meta.get("sizes")), _ints(meta.get("strides")), _ints(meta.get("storage_offset"))
    if sizes is None or strides is None or offset is None or len(offset) != 1 or len(sizes) != len(strides):
        return None
    itemsize = _ITEMSIZE.get(meta.get("dtype"), 16)  # type: ignore[arg-type]
    if 0 in sizes:
        return 0
    return (offset[0] + sum((n - 1) * stride for n, stride in zip(sizes, strides)) + 1) * itemsize


MAX_SPARE_BYTES = 1 << 20
"""What a tensor member may hold beyond twice what its tensors reach (a saved view keeps its storage)."""


def _check_tensor_sizes(path: Path, archive: zipfile.ZipFile, folder: str, entries: dict) -> None:
    """Each tensor member is no larger than the tensors stored in it need, by the
    sizes the zip and the config declare: nothing is read."""
    needed: dict[str, int] = {}
    for entry in entries.values():
        reach = _bytes_needed(entry.get("tensor_meta"))
        name = entry["path_name"]
        needed[name] = max(needed.get(name, 0), reach if reach is not None else 1 << 62)
    for name, reach in needed.items():
        try:
            size = archive.getinfo(folder + name).file_size
        except KeyError:
            continue  # torch reports a missing member itself
        if size > 2 * reach + MAX_SPARE_BYTES:
            raise RduccError(f"{path}: archive member {folder + name!r} holds {size} bytes, but the tensors "
                             f"stored in it need {reach}; refused before reading it")


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
                f"'{names[0]}' namespace; import it before loading the archive (rducc --import-module "
                f"{names[0]}, or `import {names[0]}` before rducc.compile)"
            )


def _check_members(path: Path, archive: zipfile.ZipFile) -> None:
    """Refuse an export archive holding anything beyond the program, its tensors and
    sample inputs, or a member larger than rducc reads."""
    names = archive.namelist()
    root = names[0].split("/")[0] + "/" if "/" in names[0] else ""
    for member in names:
        problem = _member_problem(member, root)
        if problem and not _generator_member(archive, member, root):
            raise RduccError(f"{path}: {problem}")
    for info in archive.infolist():
        if not _TENSOR_MEMBER.fullmatch(info.filename[len(root):]) and info.file_size > MAX_INFLATED_BYTES:
            raise RduccError(f"{path}: archive member {info.filename!r} holds {info.file_size} bytes, more "
                             f"than the {MAX_INFLATED_BYTES} rducc reads of a program's text or sample inputs")
    _check_payload_configs(path, archive, root)

_GENERATOR_GLOBAL = "torch._C Generator"
_GENERATOR_PICKLE_BYTES = 1 << 16
"""The most a pickled generator constant may inflate to (a torch.Generator's pickle,
its Mersenne Twister state included, is about 5.5 KB): a larger member is refused
before it is read, as any other pickle."""


def _generator_member(archive: zipfile.ZipFile, member: str, root: str) -> bool:
    """Whether `member` is an opaque-object constant pickling a `torch.Generator`: by the first
    global its opcodes name (`pickletools` reads them; nothing is unpickled)."""
    if _unsafe_member_name(member) or not member.startswith(root) or \
            not _PICKLED_OBJECT.fullmatch(member[len(root):]) or \
            archive.getinfo(member).file_size > _GENERATOR_PICKLE_BYTES:
        return False
    try:
        first = next((arg for op, arg, _ in pickletools.genops(archive.read(member)) if op.name == "GLOBAL"), None)
    except Exception:  # a malformed pickle: refused as any other
        return False
    return first == _GENERATOR_GLOBAL


def _with_fresh_generators(path: Path) -> Path | io.BytesIO:
    """The archive as torch should load it: each pickled generator constant replaced by rducc's own
    pickle of a fresh `torch.Generator()` (its seed and state unused: rducc draws its own numbers)."""
    import torch

    with zipfile.ZipFile(path) as archive:
        names = archive.namelist()
        root = names[0].split("/")[0] + "/" if "/" in names[0] else ""
        generators = {m for m in names if _generator_member(archive, m, root)}
        if not generators:
            return path
        copy = io.BytesIO()
        with zipfile.ZipFile(copy, "w") as out:
            for info in archive.infolist():
                data = pickle.dumps(torch.Generator()) if info.filename in generators else archive.read(info)
                out.writestr(info, data)
    copy.seek(0)
    return copy


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
def captured_torch_logs(*more: str) -> Iterator[list[logging.LogRecord]]:
    """torch logs its own tracebacks to stderr (TRACEBACK_LOGGERS); capture them
    instead (and those of the `more` loggers)."""
    handler = _Records()
    loggers = [logging.getLogger(name) for name in (*TRACEBACK_LOGGERS, *more)]
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
                # torch's deprecations and unpickler notes ("Detected pickle protocol 4")
                # would precede rducc's one-line error, or clutter a good compile
                warnings.simplefilter("ignore")
                source = _with_fresh_generators(path)
                program = torch.export.load(str(source) if isinstance(source, Path) else source)
        except Exception as error:  # torch raises many kinds for a bad archive
            logged = [r.exc_info[1] for r in records if r.exc_info and r.exc_info[1] is not None]
            cause = logged[0] if logged else error
            raise RduccError(f"{path}: cannot load the torch.export archive: {_load_failure(cause)}") from error
    check_weights_match_graph(path, program)
    return program


def _load_failure(cause: BaseException) -> str:
    """Why torch could not load an archive, in one line."""
    text = str(cause).strip()
    if text.startswith("Weights only load failed"):
        _, marker, rest = text.partition("WeightsUnpickler error:")
        detail = " ".join(rest.strip().split("\n\n")[0].split()) if marker else ""
        return ("a pickle inside it uses what torch's weights-only unpickler refuses"
                + (f" ({detail})" if detail else "") + "; rducc unpickles only with weights_only")
    return text.splitlines()[0] if text else type(cause).__name__


def _user_frame(error: BaseException) -> str:
    """` at FILE:LINE` of the innermost frame of `error`'s traceback outside torch and rducc, or ''."""
    import traceback

    from rducc.frontend.forward_gradients import user_location

    return user_location(traceback.extract_tb(error.__traceback__))


def export_model(model: torch.nn.Module, example_inputs: tuple, grad: bool = False,
                 kwargs: dict | None = None, dynamic_shapes: Any = None) -> torch.export.ExportedProgram:
    """`torch.export.export(model, example_inputs)` under no_grad (with `grad`, for a
    training step: with autograd on), or a `RduccError` saying why not: a shape
    that depends on the tensors' values is named as such."""
    import torch
    from torch.fx.experimental.symbolic_shapes import GuardOnDataDependentSymNode

    from rducc.frontend.torch_corrections import corrected_kernels

    printed = io.StringIO()  # torch prints the partial graph of a failed export to stderr
    with captured_torch_logs("torch.fx.experimental.symbolic_shapes"):
        try:
            with torch.set_grad_enabled(grad), redirect_stderr(printed), corrected_kernels():
                exported = torch.export.export(model, example_inputs, kwargs=kwargs, dynamic_shapes=dynamic_shapes)
            sys.stderr.write(printed.getvalue())  # what a successful export printed (warnings)
            return exported
        except GuardOnDataDependentSymNode as error:
            first = str(error).strip().splitlines()[0]
            raise RduccError(
                f"torch.export cannot export the model: a shape or a branch depends on the tensors' values"
                f"{_user_frame(error)} ({first}); rducc compiles static shapes only{_item_number_hint(first)}"
            ) from None
        except Exception as error:  # torch raises many kinds: say it was the export
            text = str(error).strip()
            first = text.splitlines()[0] if text else type(error).__name__
            _refuse_gradient_in_forward(text, model, example_inputs, kwargs, grad, dynamic_shapes)
            raise RduccError(f"torch.export cannot export the model{_user_frame(error)}: {first}") from error


_ITEM_FLOAT = re.compile(r"\bzuf\d+\b")
"""How torch.export names a float read from a tensor by `.item()` (an unbacked float symbol)."""


def _item_number_hint(guard: str) -> str:
    """What to write instead when the refused check is on a float read by `.item()`:
    the function it was passed to tests the Python number (F.hardtanh's min_val <= max_val,
    F.softshrink's lambd >= 0, F.rrelu's and torch.nan_to_num's arguments), which torch.export
    cannot do for a value it does not know; the same computation on the tensor exports."""
    if not _ITEM_FLOAT.search(guard):
        return ""
    return ("; the check is on a float read from a tensor by .item(), which the function it is passed to "
            "tests in Python (F.hardtanh, F.softshrink, F.rrelu, torch.nan_to_num do): pass the tensor itself "
            "to tensor ops instead (torch.clamp(x, low, high) with tensor bounds for hardtanh, torch.where for "
            "softshrink, rrelu's mean slope and nan_to_num)")


def _refuse_gradient_in_forward(text: str, model: torch.nn.Module, example_inputs: tuple, kwargs: dict | None,
                                grad: bool, dynamic_shapes: Any) -> None:
    """Where the export failed on a tensor computed outside its trace, one error naming the gradient the
    forward takes itself (`forward_gradients`), if that was the cause."""
    from rducc.frontend.forward_gradients import UNTRACED_SYMPTOM, gradient_call

    if UNTRACED_SYMPTOM not in text:
        return
    call = gradient_call(model, example_inputs, kwargs, grad, dynamic_shapes)
    if call is not None:
        raise RduccError(
            f"the forward takes a gradient itself ({call}): torch.export does not trace autograd's engine, so "
            "rducc cannot compile a gradient inside the forward (a gradient penalty needs the gradient of a "
            "gradient); compute it outside the compiled program") from None


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
