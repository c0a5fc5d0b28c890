"""Weights beside the program: a safetensors sidecar (no pickle anywhere).

`rducc model.pt2 -o out.mlir` writes `out.safetensors` holding every weight,
buffer and lifted constant under its global's name; the module records the
file name in `rdu.weights`. Reading needs only numpy (and ml_dtypes for
bf16 and the float8 types): the format is an 8-byte little-endian header length, a JSON header of
{name: {dtype, shape, data_offsets}}, then the raw bytes.
"""

from __future__ import annotations

import io
import json
import math
import os
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from pathlib import Path

import ml_dtypes
import numpy as np

from rducc.errors import RduccError
from rducc.files import Writer, open_regular, write_atomically_streamed

_NUMPY_DTYPES: dict[str, np.dtype] = {
    "F64": np.dtype(np.float64),
    "F32": np.dtype(np.float32),
    "F16": np.dtype(np.float16),
    "BF16": np.dtype(ml_dtypes.bfloat16),
    "F8_E4M3": np.dtype(ml_dtypes.float8_e4m3fn),
    "F8_E5M2": np.dtype(ml_dtypes.float8_e5m2),
    "I64": np.dtype(np.int64),
    "I32": np.dtype(np.int32),
    "I16": np.dtype(np.int16),
    "I8": np.dtype(np.int8),
    "U8": np.dtype(np.uint8),
    "BOOL": np.dtype(np.bool_),
}


def program_weights(program) -> dict:
    """Every weight, buffer and lifted constant of an ExportedProgram, by global
    name; empty when the model lives on the meta device (no data)."""
    import torch

    tensors: dict[str, torch.Tensor] = {}
    for spec in program.graph_signature.input_specs:
        if spec.target is None:
            continue
        value = program.state_dict.get(spec.target, program.constants.get(spec.target))
        if isinstance(value, torch.Tensor):
            if value.device.type == "meta":
                return {}
            tensors[spec.target] = value.detach()
    return tensors


def sidecar_path(mlir_path: str | Path) -> Path:
    """`out.mlir` -> `out.safetensors`."""
    return Path(mlir_path).with_suffix(".safetensors")


def _safetensors_code(tensor) -> str:
    import torch

    codes = {
        torch.float64: "F64", torch.float32: "F32", torch.float16: "F16", torch.bfloat16: "BF16",
        torch.float8_e4m3fn: "F8_E4M3", torch.float8_e5m2: "F8_E5M2",
        torch.int64: "I64", torch.int32: "I32", torch.int16: "I16", torch.int8: "I8",
        torch.uint8: "U8", torch.bool: "BOOL",
    }
    if tensor.dtype not in codes:
        raise RduccError(f"cannot store a {tensor.dtype} weight in the safetensors sidecar")
    return codes[tensor.dtype]


def _raw_bytes(tensor) -> memoryview:
    """The bytes of one tensor, row-major, without copying a contiguous tensor."""
    import torch

    flat = tensor.detach().cpu().contiguous().reshape(-1)
    return memoryview(flat.view(torch.uint8).numpy()) if flat.numel() else memoryview(b"")


def weights_writer(tensors: Mapping) -> Writer:
    """A writer of tensors as safetensors, streamed one tensor at a time: no copy
    of all the weights is ever held in memory. Tied tensors (an LM head sharing
    the embedding) are stored under each name. Widest dtypes first, so every
    tensor is aligned in the file, as the safetensors library does."""
    order = sorted(tensors, key=lambda name: (-tensors[name].element_size(), name))
    header: dict[str, dict] = {}
    offset = 0
    for name in order:
        tensor = tensors[name]
        size = tensor.numel() * tensor.element_size()
        header[name] = {"dtype": _safetensors_code(tensor), "shape": list(tensor.shape),
                        "data_offsets": [offset, offset + size]}
        offset += size
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)

    def write(stream) -> None:
        stream.write(len(text).to_bytes(8, "little"))
        stream.write(text)
        for name in order:
            stream.write(_raw_bytes(tensors[name]))

    return write


def save_weights(path: str | Path, tensors: Mapping) -> None:
    """Write tensors as safetensors, atomically (see `weights_writer`)."""
    write_atomically_streamed(str(path), weights_writer(tensors))


MAX_HEADER_BYTES = 100_000_000
"""The largest JSON header read (the safetensors library's own limit)."""
MAX_RANK = 64
_ENTRY_KEYS = {"dtype", "shape", "data_offsets"}


@dataclass(frozen=True)
class _Entry:
    """One tensor of a checked header."""

    name: str
    dtype: np.dtype
    shape: tuple[int, ...]
    start: int
    end: int


Declared = Mapping[str, tuple[tuple[int, ...], np.dtype]]
"""What a program takes: weight name -> (shape, dtype)."""


def load_weights(path: str | Path, names: Collection[str] | Declared | None = None) -> dict[str, np.ndarray]:
    """Read a safetensors file into numpy arrays (only `names`, when given), after
    checking its whole header: the rules the safetensors library enforces (types,
    known dtypes, offsets that tile the body in order with no gap or overlap),
    with exact integer arithmetic (no overflow). The file must be a regular file;
    no more is read than the header declares. When `names` maps each name to the
    (shape, dtype) the program declares, a tensor the header declares otherwise
    is refused before any tensor is read."""
    path = Path(path)
    with open_regular(path, "weights file") as stream:
        size = os.fstat(stream.fileno()).st_size
        entries = _read_header(path, stream, size)
        if isinstance(names, Mapping):
            _check_declared(entries, names)
        body_start = stream.tell()
        weights: dict[str, np.ndarray] = {}
        for entry in entries:
            if names is None or entry.name in names:
                weights[entry.name] = _read_tensor(path, stream, body_start, entry)
    return weights


def _check_declared(entries: list[_Entry], declared: Declared) -> None:
    """Each tensor the program takes has, in the header, the shape and dtype it declares."""
    for entry in entries:
        if entry.name not in declared:
            continue
        shape, dtype = declared[entry.name]
        if entry.dtype != dtype:
            raise RduccError(f"weight '{entry.name}' has dtype {entry.dtype.name}, expected {np.dtype(dtype).name} "
                             "(from the file's header; nothing read)")
        if entry.shape != tuple(shape):
            raise RduccError(f"weight '{entry.name}' has shape {list(entry.shape)}, expected {list(shape)} "
                             "(from the file's header; nothing read)")


def _bad(path: Path, problem: str) -> RduccError:
    return RduccError(f"weights file {path}: {problem}")


def _read_header(path: Path, stream: io.BufferedReader, size: int) -> list[_Entry]:
    """The checked entries of the header, sorted by offset."""
    if size < 8:
        raise _bad(path, "not a safetensors file (too short)")
    header_size = int.from_bytes(stream.read(8), "little")
    if header_size > min(MAX_HEADER_BYTES, size - 8):
        raise _bad(path, f"not a safetensors file (a header of {header_size} bytes in a file of {size})")
    try:
        header = json.loads(stream.read(header_size))
    except (ValueError, UnicodeDecodeError):
        raise _bad(path, "not a safetensors file (bad header)") from None
    except RecursionError:
        raise _bad(path, "not a safetensors file (the header nests too deeply)") from None
    if not isinstance(header, dict):
        raise _bad(path, f"the header is a JSON {type(header).__name__}, not an object of tensors")
    metadata = header.pop("__metadata__", {})
    if not isinstance(metadata, dict) or not all(isinstance(v, str) for v in metadata.values()):
        raise _bad(path, "'__metadata__' must map names to strings")
    entries = sorted((_entry(path, name, value) for name, value in header.items()),
                     key=lambda e: (e.start, e.end))
    _check_tiling(path, entries, size - 8 - header_size)
    return entries


def _entry(path: Path, name: str, value: object) -> _Entry:
    """One header entry, checked on its own."""
    where = f"tensor {name!r}"
    if not isinstance(value, dict):
        raise _bad(path, f"{where}: expected an object with dtype, shape and data_offsets")
    keys = set(value)
    if keys != _ENTRY_KEYS:
        wrong = sorted(_ENTRY_KEYS - keys) or sorted(keys - _ENTRY_KEYS)
        problem = "missing" if _ENTRY_KEYS - keys else "unexpected"
        raise _bad(path, f"{where}: {problem} field '{wrong[0]}'")
    dtype = _NUMPY_DTYPES.get(value["dtype"]) if isinstance(value["dtype"], str) else None
    if dtype is None:
        raise _bad(path, f"{where} has unsupported dtype {value['dtype']!r}")
    shape, offsets = value["shape"], value["data_offsets"]
    if not _naturals(shape) or len(shape) > MAX_RANK:
        raise _bad(path, f"{where}: shape must be a list of at most {MAX_RANK} integers >= 0, got {_short(shape)}")
    if not _naturals(offsets) or len(offsets) != 2 or offsets[0] > offsets[1]:
        raise _bad(path, f"{where}: data_offsets must be [start, end] with 0 <= start <= end, got {_short(offsets)}")
    count = math.prod(shape)  # Python integers: no overflow
    if (offsets[1] - offsets[0]) != count * dtype.itemsize:
        raise _bad(path, f"{where} is truncated or inconsistent: shape {_short(shape)} of "
                         f"{value['dtype']} needs {count * dtype.itemsize} bytes, data_offsets "
                         f"{offsets} hold {offsets[1] - offsets[0]}")
    return _Entry(name, dtype, tuple(shape), offsets[0], offsets[1])


def _naturals(value: object) -> bool:
    return isinstance(value, list) and all(type(n) is int and n >= 0 for n in value)


def _short(value: object) -> str:
    text = json.dumps(value) if not isinstance(value, str) else repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _check_tiling(path: Path, entries: list[_Entry], body: int) -> None:
    """The tensors' bytes follow one another from 0 to the end of the body."""
    position, previous = 0, None
    for entry in entries:
        if entry.start < position:
            raise _bad(path, f"tensor {entry.name!r} at bytes [{entry.start}, {entry.end}) overlaps "
                             f"tensor {previous!r} (ending at {position})")
        if entry.start > position:
            raise _bad(path, f"bytes [{position}, {entry.start}) of the body belong to no tensor")
        position, previous = entry.end, entry.name
    if position != body:
        raise _bad(path, f"the tensors cover {position} bytes of a body of {body} "
                         "(truncated, or data past the tensors)")


def _read_tensor(path: Path, stream: io.BufferedReader, body_start: int, entry: _Entry) -> np.ndarray:
    stream.seek(body_start + entry.start)
    data = bytearray(entry.end - entry.start)
    if stream.readinto(data) != len(data):
        raise _bad(path, f"tensor {entry.name!r} is truncated (the file changed while read?)")
    return np.frombuffer(data, dtype=entry.dtype).reshape(entry.shape)


def _through_bits() -> dict:
    """torch dtypes NumPy lacks (bf16, the float8s), with their ml_dtypes NumPy
    dtype: both sides convert through the bits, as signed integers of the width."""
    import torch

    return {
        torch.bfloat16: np.dtype(ml_dtypes.bfloat16),
        torch.float8_e4m3fn: np.dtype(ml_dtypes.float8_e4m3fn),
        torch.float8_e5m2: np.dtype(ml_dtypes.float8_e5m2),
    }


def _bits_dtypes(itemsize: int) -> tuple:
    """(torch, NumPy) signed integer dtypes of `itemsize` bytes."""
    import torch

    return {1: (torch.int8, np.dtype(np.int8)), 2: (torch.int16, np.dtype(np.int16))}[itemsize]


def through_bits(dtype) -> bool:
    """Whether a torch or NumPy dtype is one that NumPy or torch lacks (bf16, the
    float8s: ml_dtypes on the NumPy side), converted through the bits."""
    if isinstance(dtype, np.dtype):
        return dtype in _through_bits().values()
    return dtype in _through_bits()


def torch_to_numpy(tensor) -> np.ndarray:
    """A CPU numpy copy of a torch tensor (bf16 and float8 through ml_dtypes)."""
    tensor = tensor.detach().cpu()
    numpy_dtype = _through_bits().get(tensor.dtype)
    if numpy_dtype is not None:
        return tensor.view(_bits_dtypes(numpy_dtype.itemsize)[0]).numpy().view(numpy_dtype).copy()
    return tensor.numpy().copy()


def numpy_to_torch(array: np.ndarray):
    """A torch tensor of a numpy array (bf16 and float8 through their bits)."""
    import torch

    for torch_dtype, numpy_dtype in _through_bits().items():
        if array.dtype == numpy_dtype:
            bits = array.view(_bits_dtypes(numpy_dtype.itemsize)[1]).copy()
            return torch.from_numpy(bits).view(torch_dtype)
    # np.ascontiguousarray would turn a rank-0 array into shape (1,)
    return torch.from_numpy(np.array(array, order="C", copy=True))
