"""`rducc.empty_weights()`: build a full-size model without its weights' memory.

`with torch.device("meta")` makes every tensor a model's `__init__` creates a
meta tensor: shapes without values. That is what a compile for the cost model
needs of the weights (gigabytes), but it also erases the values of the small
integer tensors a module computes for itself and never loads from a checkpoint:
a grouped-query head map `register_buffer("head_map", arange(heads) // group,
persistent=False)`, position ids, a permutation. The compiler reads such values
(rdu-partition gathers a head map's KV heads per rank when it can see the map is
rank-local); on meta there is nothing to read, so the compile of a meta model
would differ from the compile of the real one.

Under `empty_weights()` every tensor factory (`torch.empty`, `zeros`, `randn`,
`arange`, `tensor`, ... the ones `torch.device(...)` redirects) that is not
given a device makes a meta tensor, except an integer or bool tensor of at most
`REAL_LIMIT` elements, which is made on the CPU with its values; what the
module computes from those (`// group`) stays real. This is accelerate's
`init_empty_weights` rule (buffers stay real) narrowed to the index tensors a
program reads as structure, so that float buffers (KV caches) stay meta with
the weights. Exported, such a tensor is a real constant the importer inlines.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from torch.overrides import TorchFunctionMode
from torch.utils._device import _device_constructors

REAL_LIMIT = 1 << 20
"""Integer tensors of at most this many elements are made with their values."""


def _index_tensor(result: Any) -> bool:
    return (isinstance(result, torch.Tensor) and not result.is_floating_point() and not result.is_complex()
            and result.numel() <= REAL_LIMIT)


class empty_weights(TorchFunctionMode):  # noqa: N801 - used as `with rducc.empty_weights():`, like torch.device
    """Tensor factories make meta tensors, small integer ones real CPU tensors (module docstring)."""

    def __torch_function__(self, func: Callable[..., Any], types: Any, args: tuple = (),
                           kwargs: dict[str, Any] | None = None) -> Any:
        kwargs = dict(kwargs or {})
        if func not in _device_constructors() or kwargs.get("device") is not None:
            return func(*args, **kwargs)
        result = func(*args, **{**kwargs, "device": "meta"})
        return func(*args, **{**kwargs, "device": "cpu"}) if _index_tensor(result) else result
