"""Unsigned values rducc can import exactly as signed ones.

rducc has no unsigned element types. Torch's decompositions still make a few:
`torch.eye(n)` becomes two uint8 `arange`s compared with `eq`. A uint8 ramp
whose values fit (0 <= start, end <= 256), moved only by layout ops and read
only by comparisons, compares exactly the same as an int64 ramp: such values
are imported as int64. Any other unsigned value stays a clear dtype error.
"""

from __future__ import annotations

import torch

_RAMPS = frozenset({"aten.arange.default", "aten.arange.start", "aten.arange.start_step"})
_LAYOUT = frozenset(
    {
        "aten.unsqueeze.default", "aten.view.default", "aten.reshape.default", "aten.expand.default",
        "aten.permute.default", "aten.clone.default", "aten.alias.default", "aten.squeeze.dim",
        "aten.squeeze.dims", "aten.squeeze.default", "aten.slice.Tensor", "aten.select.int",
    }
)  # fmt: skip
_COMPARISONS = frozenset(f"aten.{op}.{form}" for op in ("eq", "ne", "lt", "le", "gt", "ge") for form in ("Tensor", "Scalar"))


def _small_unsigned_ramp(node: torch.fx.Node) -> bool:
    """A uint8 arange with integer bounds whose values all fit uint8 (no wrap-around)."""
    if node.op != "call_function" or str(node.target) not in _RAMPS:
        return False
    value = node.meta.get("val")
    if not isinstance(value, torch.Tensor) or value.dtype != torch.uint8:
        return False
    bounds = [a for a in node.args if not isinstance(a, torch.fx.Node)]
    if not all(isinstance(a, int) for a in bounds):
        return False
    start = bounds[0] if len(bounds) > 1 else 0
    end = bounds[1] if len(bounds) > 1 else bounds[0]
    step = bounds[2] if len(bounds) > 2 else 1
    return 0 <= start and step > 0 and end <= 256


def _layout_closure(ramp: torch.fx.Node) -> list[torch.fx.Node] | None:
    """The ramp and every layout op moving it, if all of them end in comparisons."""
    closure, pending = [ramp], [ramp]
    while pending:
        for user in pending.pop().users:
            target = str(user.target)
            if target in _LAYOUT:
                closure.append(user)
                pending.append(user)
            elif target not in _COMPARISONS:
                return None
    return closure


def widen_exact_unsigned(ep: torch.export.ExportedProgram) -> None:
    """Retype, in place, the uint8 values that import exactly as int64 (see the module doc)."""
    for node in list(ep.graph.nodes):
        if not _small_unsigned_ramp(node):
            continue
        for member in _layout_closure(node) or []:
            fake = member.meta["val"]
            if fake.dtype == torch.uint8:
                member.meta["val"] = torch.empty_strided(fake.shape, fake.stride(), dtype=torch.int64, device="meta")
