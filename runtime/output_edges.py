"""User outputs converted at the program's edge (`OutputEdge`): the int64 bits the program
writes read as uint64, or the dense tensor it writes converted to a sparse layout by torch's
own `Tensor.to_sparse` (so the indices and the count of stored values are torch's)."""

from __future__ import annotations

import numpy as np
import torch

from rducc.dialects.contracts import OutputEdge

_PARTS = {"sparse_coo": ("indices", "values"), "sparse_csr": ("crow_indices", "col_indices", "values"),
          "sparse_bsr": ("crow_indices", "col_indices", "values"),
          "sparse_csc": ("ccol_indices", "row_indices", "values"),
          "sparse_bsc": ("ccol_indices", "row_indices", "values")}
"""Each sparse layout's parts, by the name of torch's accessor for it."""


def edge_tensor(tensor: torch.Tensor, edge: OutputEdge) -> torch.Tensor:
    """The output as its caller receives it."""
    if edge.dtype == "uint64":
        return tensor.view(torch.uint64)
    if edge.sparse_dim is not None:
        return tensor.to_sparse(edge.sparse_dim)
    return tensor.to_sparse(layout=getattr(torch, edge.layout), blocksize=edge.blocksize, dense_dim=edge.dense_dim)


def edge_arrays(name: str, array: np.ndarray, edge: OutputEdge) -> dict[str, np.ndarray]:
    """The output as arrays named for a .npz: uint64 as itself (`name`); a sparse tensor as its
    parts (`name.indices`, `name.values`, ... as torch names them) and its dense shape (`name.shape`)."""
    if edge.dtype == "uint64":
        return {name: array.view(np.uint64)}
    sparse = edge_tensor(torch.from_numpy(np.ascontiguousarray(array)), edge)
    if sparse.layout == torch.sparse_coo:
        sparse = sparse.coalesce()
    parts = {f"{name}.{part}": getattr(sparse, part)().numpy() for part in _PARTS[edge.layout]}
    return parts | {f"{name}.shape": np.array(sparse.shape, dtype=np.int64)}
