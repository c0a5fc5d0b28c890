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
from rducc.files import write_atomically_bytes

WEIGHTS_ATTR = "rdu.weights"
"""Module attribute: the sidecar's file name, relative to the MLIR file."""

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


def save_weights(path: str | Path, tensors: Mapping) -> None:
    """Write tensors as safetensors, atomically (temp file + rename)."""
    from safetensors.torch import save

    write_atomically_bytes(str(path), save(_unshared(tensors)))


def _unshared(tensors: Mapping) -> dict:
    """Contiguous tensors, tied ones (an LM head sharing the embedding) copied apart:
    safetensors stores every name on its own."""
    seen: set[int] = set()
    result = {}
    for name, tensor in tensors.items():
        tensor = tensor.contiguous()
        pointer = tensor.untyped_storage().data_ptr()
        result[name] = tensor.clone() if pointer in seen else tensor
        seen.add(pointer)
    return result


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
