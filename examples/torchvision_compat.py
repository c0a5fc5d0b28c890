"""torchvision importable beside CPU torch, without its C extension.

The installed torchvision 0.28.0 wheel is a CUDA build (`+cu130`) whose
`_C.so` needs `libc10_cuda.so` and so does not load beside torch's CPU
build; importing torchvision then fails registering fake kernels for
`torchvision::nms` and `qnms`, whose schemas only the extension defines,
and so does importing transformers (which imports torchvision when it is
installed) and timm. Importing this module defines those two schemas when
the extension does not load, so torchvision's models (pure Python) and
transformers import; torchvision's detection ops stay unavailable. Imported
by `examples/models.py` and the model zoo (`bench/zoo/models.py`).
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import torch


def define_torchvision_ops() -> torch.library.Library | None:
    """Makes torchvision importable without its C extension (its models are
    pure Python): the installed wheel is a CUDA build whose `_C.so` does not
    load beside CPU torch, and importing torchvision (which transformers and
    timm do) registers fake kernels for `torchvision::nms` and `qnms`, whose
    schemas only the extension defines. Defines those two when `_C.so` does
    not load."""
    spec = importlib.util.find_spec("torchvision")
    if spec is None or not spec.submodule_search_locations:
        return None
    library_path = next(Path(spec.submodule_search_locations[0]).glob("_C*.so"), None)
    try:
        if library_path is not None:
            torch.ops.load_library(str(library_path))
            return None
    except OSError:
        pass
    library = torch.library.Library("torchvision", "FRAGMENT")
    for op in ("nms", "qnms"):
        library.define(f"{op}(Tensor dets, Tensor scores, float iou_threshold) -> Tensor")
    return library


LIBRARY = define_torchvision_ops()
"""The fragment that defines the two schemas (None when torchvision's extension loaded)."""
