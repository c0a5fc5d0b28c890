"""The f64 policy: sn40l computes bf16, f16, f32 and integers, never f64.

A model that computes in f64 is compiled under one of two policies:

- `emulate` (the default): f64 stays f64. rducc's runtime computes it
  exactly, the compile report says how many values are f64 and that the chip
  cannot compute them (they are emulated), and the cost model times them at
  the f32 rate. Never a silent wrong answer: the numbers are exact, the
  report says they would not run on the chip as they are.
- `refuse`: an f64 tensor anywhere in the program is an error naming the
  first one and its source line.

Complex dtypes are refused under both (the importer has no complex types).
"""

from __future__ import annotations

import torch
from xdsl.dialects.builtin import Float64Type, ModuleOp, TensorType

from rducc.errors import RduccError

POLICIES = ("emulate", "refuse")


def _is_f64(value: object) -> bool:
    values = value if isinstance(value, tuple | list) else [value]
    return any(isinstance(v, torch.Tensor) and v.dtype == torch.float64 for v in values)


def check_f64(ep: torch.export.ExportedProgram, policy: str) -> None:
    """Under `refuse`, raise on the first f64 input, weight or intermediate."""
    if policy not in POLICIES:
        raise RduccError(f"unknown f64 policy '{policy}' (choose from {', '.join(POLICIES)})")
    if policy == "emulate":
        return
    from rducc.importer import describe_location

    for node in ep.graph.nodes:
        if _is_f64(node.meta.get("val")):
            where = node.name if node.op == "placeholder" else describe_location(node)
            raise RduccError(
                f"{where}: '{node.name}' is float64, which the target cannot compute "
                "(--f64 refuse); cast the model to float32, or compile with --f64 emulate "
                "to have rducc's runtime compute it exactly"
            )


def f64_value_count(module: ModuleOp) -> int:
    """How many tensor values of the program (arguments and results) are f64."""
    count = 0
    for op in module.walk():
        values = [*op.results, *(arg for region in op.regions for block in region.blocks for arg in block.args)]
        for value in values:
            element = getattr(value.type, "element_type", None)
            if isinstance(value.type, TensorType) and isinstance(element, Float64Type):
                count += 1
    return count


def emulation_note(module: ModuleOp) -> str | None:
    """The report's line about f64 values, or None when there are none."""
    count = f64_value_count(module)
    if not count:
        return None
    return (
        f"f64   {count} tensor values are float64, which the chip cannot compute: "
        "emulated (rducc's runtime computes them exactly; the cost model times them "
        "at the f32 rate)"
    )
