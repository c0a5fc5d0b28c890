"""Derives the allow-lists of `rdu.host_call` and `rdu.pointwise_call`
(`rducc/dialects/rdu/aten_allowlist.txt`, read by `rducc.dialects.rdu.aten`).

A host call may name an ATen overload the importer routes to the host
(`host_ops.host_fallback`): of the `aten` namespace, functional,
deterministic, returning tensors, not tagged pointwise, with no converter and
no decomposition (torch's default table or rducc's `EXTRA_DECOMPOSITIONS`),
so that it reaches the importer. Of those, the list keeps the ops that are
pure functions of their tensor operands:

- at least one tensor argument, and no argument of a side type
  (`FORBIDDEN_ARGUMENT_TYPES`: a string, which may be a file name, a device,
  layout, memory format, generator, storage or stream);
- a dense CPU kernel (not a CUDA/MPS/sparse-only op) and results whose sizes
  follow from the operands' shapes (not tagged `dynamic_output_shape`);
- not in `DENIED` (reviewed: uninitialised memory, non-dense layouts,
  index checks switched off or never made, torch's own test and autograd
  internals), and not a backward op taking index tensors (`INDEX_TENSORS`:
  max-pool, embedding-bag and segment-reduce backward kernels index their
  result by them unchecked, and crash or read the heap).

A pointwise call may name any op of the same kind tagged pointwise (an
elementwise function of its operands) without a side argument.

`ADDITIONS` are reviewed entries the rules leave out: ops whose string
argument picks one of a few modes (`linalg_qr`'s `mode`), listed with the
values it may take.

`.venv/bin/python -m rducc.frontend.aten_allowlist` rewrites the file;
`test_aten_allowlist.py` fails when it is stale.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator

import torch

import rducc.frontend.importer  # noqa: F401 - registers every converter and decomposition
from rducc.dialects.rdu.aten import (
    ALLOWLIST,
    FORBIDDEN_ARGUMENT_TYPES,
    HOST,
    POINTWISE,
    NotCallable,
    argument_base_types,
    aten_overload,
)
from rducc.frontend.converter_api import CONVERTERS
from rducc.frontend.decompositions import EXTRA_DECOMPOSITIONS

DENIED: dict[str, str] = {
    # uninitialised memory: the result holds whatever the heap held
    "set.": "returns a tensor over fresh, uninitialised storage",
    "resize": "returns uninitialised memory where it grows",
    "_copy_from": "writes into a tensor it resizes (uninitialised memory)",
    "empty": "returns uninitialised memory",
    # layouts and backends a dense numpy runtime does not hold
    "sparse": "sparse layouts", "_coalesce": "sparse layouts", "indices_copy": "sparse layouts",
    "values_copy": "sparse layouts", "crow_indices": "sparse layouts", "ccol_indices": "sparse layouts",
    "col_indices": "sparse layouts", "row_indices": "sparse layouts", "_convert_indices": "sparse layouts",
    "_to_dense": "sparse layouts", "_cslt": "sparse layouts",
    "nested": "nested tensors", "jagged": "nested tensors", "padded_dense": "nested tensors",
    "to_padded_tensor": "nested tensors",
    "quantize": "quantized tensors", "int_repr": "quantized tensors", "q_per_channel": "quantized tensors",
    "_make_per_": "quantized tensors", "_dyn_quant": "packed quantized weights", "pack_": "packed weights",
    "int4pack": "packed quantized weights", "int8pack": "packed quantized weights",
    "_convert_weight": "packed quantized weights", "mkldnn": "mkldnn layouts",
    # index checks switched off, or never made
    "_unsafe": "skips torch's index checks", "_index_put_impl": "its `unsafe` flag skips index checks",
    "_reshape_alias": "does not check its strides against the storage (reads past it)",
    "ctc_loss": "does not check its targets and lengths (reads and writes past its buffers)",
    # torch's own internals
    "_test_": "torch's test op", "_foobar": "torch's test op", "_make_dual": "forward-mode autograd internals",
    "_fw_primal": "forward-mode autograd internals", "lift": "tracing internals (identity)",
    "_lazy_clone": "copy-on-write internals", "_functional_sym_constrain": "tracing internals",
    "_functional_assert": "tracing internals", "_philox": "random number keys",
    "_amp_update_scale": "mixed-precision training state", "_fused_moving_avg_obs": "quantization observers",
    "_new_zeros_with_same_feature_meta": "autograd internals",
}
"""Name fragments of reviewed ops the rules would list but a program may not call, and why."""

ADDITIONS: dict[str, dict[str, dict[str, tuple[str, ...]]]] = {
    HOST: {
        "aten::linalg_qr.default": {"mode": ("complete", "r", "reduced")},
        "aten::_linalg_eigh.default": {"UPLO": ("L", "U")},
        "aten::_linalg_svd.default": {"driver": ()},  # a CUDA solver's name; none on the CPU
        "aten::linalg_lstsq.default": {"driver": ("gels", "gelsd", "gelss", "gelsy")},
        "aten::segment_reduce.default": {"reduce": ("max", "mean", "min", "prod", "sum")},
        "aten::scatter.reduce": {"reduce": ("add", "multiply")},
        "aten::scatter.value_reduce": {"reduce": ("add", "multiply")},
        "aten::searchsorted.Scalar": {"side": ("left", "right")},
    },
    POINTWISE: {
        "aten::div.Tensor_mode": {"rounding_mode": ("floor", "trunc")},
        "aten::div.Scalar_mode": {"rounding_mode": ("floor", "trunc")},
        "aten::gelu.default": {"approximate": ("none", "tanh")},
        "aten::gelu_backward.default": {"approximate": ("none", "tanh")},
    },
}
"""Reviewed entries outside the rules: each string argument and the values it may take."""


def aten_overloads() -> Iterator[torch._ops.OpOverload]:
    """Every overload of the `aten` namespace this torch registers."""
    for qualified in sorted(torch._C._dispatch_get_all_op_names()):
        namespace, _, rest = qualified.partition("::")
        if namespace != "aten":
            continue
        name, _, overload = rest.partition(".")
        packet = getattr(torch.ops.aten, name, None)
        op = getattr(packet, overload or "default", None) if packet is not None else None
        if isinstance(op, torch._ops.OpOverload):
            yield op


def full_name(op: torch._ops.OpOverload) -> str:
    """`aten::mode.default`, as `#rdu.aten` names it."""
    return f"{op._schema.name}.{op._overloadname}"


def _callable(op: torch._ops.OpOverload) -> bool:
    try:
        aten_overload(op._schema.name, op._overloadname)
    except NotCallable:
        return False
    return all(str(r.type) == "Tensor" for r in op._schema.returns) or torch.Tag.pointwise not in op.tags


def _has_side_argument(op: torch._ops.OpOverload) -> bool:
    return any(argument_base_types(a) & FORBIDDEN_ARGUMENT_TYPES for a in op._schema.arguments)


def _has_tensor_argument(op: torch._ops.OpOverload) -> bool:
    return any("Tensor" in argument_base_types(a) for a in op._schema.arguments)


def _has_cpu_kernel(op: torch._ops.OpOverload) -> bool:
    name = op._schema.name + ("" if op._overloadname == "default" else f".{op._overloadname}")
    keys = ("CPU", "CompositeExplicitAutograd", "CompositeImplicitAutograd", "CompositeExplicitAutogradNonFunctional")
    return any(torch._C._dispatch_has_kernel_for_dispatch_key(name, key) for key in keys)


def _reaches_importer(op: torch._ops.OpOverload, decomposed: set[object]) -> bool:
    return str(op) not in CONVERTERS and str(op) not in EXTRA_DECOMPOSITIONS and op not in decomposed


INDEX_TENSORS = frozenset({"indices", "offset2bag", "maximum_indices", "bag_size", "lengths", "offsets", "targets"})
"""Tensor arguments of a backward op that index its result: torch's backward kernels
do not check them (an index past the end reads or writes past the buffer)."""


def denial(name: str) -> str | None:
    """Why a reviewed op may not be called, or None."""
    return next((reason for fragment, reason in DENIED.items() if fragment in name), None)


def _unchecked_indices(op: torch._ops.OpOverload) -> bool:
    """A backward op taking index tensors (`INDEX_TENSORS`)."""
    return "backward" in op._schema.name and any(
        a.name in INDEX_TENSORS and "Tensor" in argument_base_types(a) for a in op._schema.arguments)


def _kind(op: torch._ops.OpOverload, decomposed: set[object]) -> str | None:
    """Which list the rules put the op on, or None."""
    if not _callable(op) or _has_side_argument(op) or not _has_tensor_argument(op) or denial(full_name(op)):
        return None
    if _unchecked_indices(op):
        return None
    if torch.Tag.pointwise in op.tags:
        return POINTWISE
    if (_reaches_importer(op, decomposed) and _has_cpu_kernel(op)
            and torch.Tag.dynamic_output_shape not in op.tags and torch.Tag.data_dependent_output not in op.tags):
        return HOST
    return None


def derive() -> dict[str, dict[str, dict[str, tuple[str, ...]]]]:
    """The allow-lists: kind -> `aten::op.overload` -> string argument -> values."""
    decomposed = set(torch.export.default_decompositions().keys())
    lists: dict[str, dict[str, dict[str, tuple[str, ...]]]] = {HOST: {}, POINTWISE: {}}
    for op in aten_overloads():
        kind = _kind(op, decomposed)
        if kind is not None:
            lists[kind][full_name(op)] = {}
    for kind, entries in ADDITIONS.items():
        lists[kind].update(entries)
    return lists


def render(lists: dict[str, dict[str, dict[str, tuple[str, ...]]]]) -> str:
    """The allow-list file's text."""
    lines = [
        "# The ATen ops a program's rdu.host_call and rdu.pointwise_call may name (rducc.dialects.rdu.aten).",
        "# Generated by `python -m rducc.frontend.aten_allowlist` (rules and reviewed additions there);",
        f"# do not edit. torch {torch.__version__.split('+')[0]}.",
        "# KIND OVERLOAD [STRING_ARGUMENT=VALUE|VALUE ...]",
    ]
    for kind in (HOST, POINTWISE):
        for name in sorted(lists[kind]):
            strings = " ".join(f"{arg}={'|'.join(values)}" for arg, values in sorted(lists[kind][name].items()))
            lines.append(f"{kind} {name} {strings}".rstrip())
    return "\n".join(lines) + "\n"


def main() -> int:
    ALLOWLIST.write_text(render(derive()), encoding="utf-8")
    print(f"wrote {ALLOWLIST}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())


__all__ = ["ADDITIONS", "DENIED", "INDEX_TENSORS", "aten_overloads", "denial", "derive", "full_name", "render"]
