"""Weights beside the program: a safetensors sidecar (no pickle anywhere).

`rducc model.pt2 -o out.mlir` writes `out.safetensors` holding every weight,
buffer and lifted constant under its global's name; the module records the
file name in `rdu.weights`. Reading needs only numpy (and ml_dtypes for
bf16): the format is an 8-byte little-endian header length, a JSON header of
{name: {dtype, shape, data_offsets}}, then the raw bytes.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path

import ml_dtypes
import numpy as np

from rducc.errors import RduccError
from rducc.files import write_atomically_streamed

_NUMPY_DTYPES: dict[str, np.dtype] = {
    "F64": np.dtype(np.float64),
    "F32": np.dtype(np.float32),
    "F16": np.dtype(np.float16),
    "BF16": np.dtype(ml_dtypes.bfloat16),
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


def save_weights(path: str | Path, tensors: Mapping) -> None:
    """Write tensors as safetensors, atomically, streamed one tensor at a time: no
    copy of all the weights is ever held in memory. Tied tensors (an LM head
    sharing the embedding) are stored under each name. Widest dtypes first, so
    every tensor is aligned in the file, as the safetensors library does."""
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

    write_atomically_streamed(str(path), write)


def load_weights(path: str | Path) -> dict[str, np.ndarray]:
    """Read a safetensors file into numpy arrays, checking its header."""
    path = Path(path)
    try:
        data = path.read_bytes()
    except OSError as error:
        raise RduccError(f"weights file {path}: {error.strerror}") from None
    if len(data) < 8:
        raise RduccError(f"weights file {path}: not a safetensors file (too short)")
    header_size = int.from_bytes(data[:8], "little")
    try:
        header = json.loads(data[8 : 8 + header_size])
    except (ValueError, UnicodeDecodeError):
        raise RduccError(f"weights file {path}: not a safetensors file (bad header)") from None
    body = memoryview(data)[8 + header_size :]
    weights: dict[str, np.ndarray] = {}
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        weights[name] = _tensor(path, name, entry, body)
    return weights


def _tensor(path: Path, name: str, entry: dict, body: memoryview) -> np.ndarray:
    dtype = _NUMPY_DTYPES.get(entry.get("dtype", ""))
    if dtype is None:
        raise RduccError(f"weights file {path}: tensor '{name}' has unsupported dtype {entry.get('dtype')}")
    start, end = entry["data_offsets"]
    shape = tuple(entry["shape"])
    count = int(np.prod(shape)) if shape else 1
    if end - start != count * dtype.itemsize or end > len(body):
        raise RduccError(f"weights file {path}: tensor '{name}' is truncated or inconsistent")
    return np.frombuffer(body[start:end], dtype=dtype).reshape(shape).copy()


def torch_to_numpy(tensor) -> np.ndarray:
    """A CPU numpy copy of a torch tensor (bf16 through ml_dtypes)."""
    import torch

    tensor = tensor.detach().cpu()
    if tensor.dtype == torch.bfloat16:
        return tensor.view(torch.int16).numpy().view(ml_dtypes.bfloat16).copy()
    return tensor.numpy().copy()


def numpy_to_torch(array: np.ndarray):
    """A torch tensor of a numpy array (bf16 through its bits)."""
    import torch

    if array.dtype == np.dtype(ml_dtypes.bfloat16):
        return torch.from_numpy(array.view(np.int16).copy()).view(torch.bfloat16)
    # np.ascontiguousarray would turn a rank-0 array into shape (1,)
    return torch.from_numpy(np.array(array, order="C", copy=True))
