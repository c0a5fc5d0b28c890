"""What rducc covers of Core ATen, and what it does not yet.

`python -m rducc.coverage > docs/aten-coverage.md` writes the coverage
document from the code: the supported overloads come from the importer's
converter table, the missing ones from `MISSING_OPS` below (a test checks
that none of them is supported and that each gives the unsupported-operator
error).
"""

from __future__ import annotations

from functools import lru_cache

import torch

from rducc.importer import supported_ops

MISSING_OPS: dict[str, str] = {
    # reductions and scans
    # data movement and indexing
    "aten.nonzero.default": "indexing: data-dependent shape",
    "aten.masked_scatter.default": "indexing: data-dependent positions",
    # convolution, pooling, resampling
    # creation
    # random and quantization
    "aten.rand.default": "random: no random generator in the runtime",
    "aten.randn.default": "random: no random generator in the runtime",
    "aten.native_dropout.default": "random: training-mode dropout",
    "aten.randperm.default": "random: no random generator in the runtime",
    "aten.rand_like.default": "random: no random generator in the runtime",
    # other
    "aten.erfinv.default": "elementwise: no inverse error function in map bodies yet",
    "aten._fft_r2c.default": "spectral: no FFT",
    "aten._fft_c2r.default": "spectral: no FFT (complex dtypes)",
    "aten._cdist_forward.default": "distance: not yet decomposed",
    "aten._pdist_forward.default": "distance: not yet decomposed",
    "aten._local_scalar_dense.default": "a tensor read back as a Python number (data-dependent)",
}
"""ATen overloads rducc does not import yet, with what is missing for each."""

PARTIAL_FORMS: dict[str, str] = {
    "aten.convolution.default": "transposed convolution is refused (the op is named with the reason)",
    "aten.max_pool2d_with_indices.default": "refused when the indices are used",
    "aten.max_pool3d_with_indices.default": "refused when the indices are used",
    "aten.adaptive_max_pool2d.default": "refused when the indices are used or the output size does not divide the input",
    "aten._adaptive_avg_pool2d.default": "refused when the output size does not divide the input",
    "aten.avg_pool2d.default": "ceil_mode is refused",
    "aten.avg_pool3d.default": "ceil_mode is refused",
    "aten.index.Tensor": "boolean masks and non-adjacent index tensors are refused",
    "aten._native_batch_norm_legit_no_training.default": "refused when the saved mean/invstd are used",
    "aten.as_strided.default": "refused on an input that is a view of a larger storage",
    "aten._embedding_bag_forward_only.default": "1-D indices with offsets only; refused when its other outputs are used",
    "aten.grid_sampler_2d.default": "bilinear with zeros padding only (nearest, bicubic, border and reflection padding are refused)",
    "aten.index_put.default": "one 1-D integer index only (more index tensors or a boolean mask are refused)",
    "aten.scatter.src": "refused when the index is smaller than the input outside the scatter dim",
    "aten.scatter.value": "refused when the index is smaller than the input outside the scatter dim",
    "aten.scatter_add.default": "refused when the index is smaller than the input outside the scatter dim",
    "aten.scatter_reduce.two": "refused for reduce='mean' and when the index is smaller than the input outside the scatter dim",
}
"""Supported overloads with forms that are refused, each with a clear reason."""

OTHER_GAPS: dict[str, str] = {
    "torch.eye": "decomposes through a uint8 arange; rducc has no unsigned types, so it is a clear dtype error",
    "uint8 and other unsigned dtypes": "no unsigned element types (a clear dtype error naming the value)",
    "quantize/dequantize to uint8": "quantized_decomposed ops are imported for int8, int16 and int32 results; uint8 is a clear dtype error",
    "complex dtypes": "refused (a clear dtype error); f64 is emulated or refused, see README (--f64)",
    "dynamic shapes": "refused with a clear error naming the first dynamic node",
    "Python scalars among a model's outputs": "refused with a clear error (`output #N is a constant`); tensors in tuples, named tuples and dicts keep their structure",
}
"""Gaps that are not one missing overload."""


def _overload(name: str) -> torch._ops.OpOverload | None:
    namespace, op, overload = name.split(".")
    packet = getattr(getattr(torch.ops, namespace), op, None)
    return getattr(packet, overload, None) if packet is not None else None


def is_core_aten(name: str) -> bool:
    """Whether torch tags the overload as Core ATen (`torch.Tag.core`)."""
    overload = _overload(name)
    return overload is not None and torch.Tag.core in overload.tags


@lru_cache(maxsize=1)
def core_aten_supported() -> tuple[str, ...]:
    """The supported overloads that torch tags as Core ATen."""
    return tuple(name for name in supported_ops() if is_core_aten(name))


def coverage_markdown() -> str:
    """docs/aten-coverage.md, generated from the converter table and MISSING_OPS."""
    supported = supported_ops()
    core = set(core_aten_supported())
    lines = [
        "# Core ATen coverage",
        "",
        "Generated by `python -m rducc.coverage > docs/aten-coverage.md`; a test",
        "(`test/python/test_aten_coverage.py`) fails when this file and the code disagree.",
        "",
        f"rducc imports **{len(supported)}** distinct overloads. **{len(core)}** of them",
        "carry torch's `core` tag; most of the others are ops that torch's default",
        "decomposition (`ExportedProgram.run_decompositions()`, which rducc runs) keeps",
        "as they are, such as `aten.signbit.default`, `aten.var_mean.correction` or",
        "`aten.linalg_vector_norm.default`, and a few are aliases (`aten.reshape.default`)",
        "that programs decomposed elsewhere may hold; four are PT2E's `quantized_decomposed`",
        "quantize/dequantize ops. `rducc --list-ops` prints the same list;",
        "`test/python/test_aten_coverage.py` runs each family through the whole pipeline",
        "at -O0 and -O2 against eager.",
        "",
        "## Not supported yet",
        "",
        "Each of these gives the unsupported-operator error",
        "(`rducc: error: the model uses N operators rducc cannot import: ...`), naming",
        "the op, its use count and the source line of its first use.",
        "",
        "| overload | what is missing |",
        "| --- | --- |",
        *(f"| `{name}` | {reason} |" for name, reason in sorted(MISSING_OPS.items())),
        "",
        "## Supported with refused forms",
        "",
        "| overload | refused forms |",
        "| --- | --- |",
        *(f"| `{name}` | {reason} |" for name, reason in sorted(PARTIAL_FORMS.items())),
        "",
        "## Other gaps",
        "",
        "| what | status |",
        "| --- | --- |",
        *(f"| {name} | {reason} |" for name, reason in OTHER_GAPS.items()),
        "",
        "## Supported",
        "",
        "| overload | Core ATen tag |",
        "| --- | --- |",
        *(f"| `{name}` | {'core' if name in core else ''} |" for name in supported),
        "",
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    print(coverage_markdown(), end="")
