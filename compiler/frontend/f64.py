"""The f64 policy: sn40l computes bf16, f16, f32 and integers, never f64.

A model that computes in f64 is compiled under one of three policies:

- `emulate` (the default): f64 stays f64. rducc's runtime computes it
  exactly, the compile report says how many values are f64 and that the chip
  cannot compute them (they are emulated), and the cost model times them at
  the f32 rate. Never a silent wrong answer: the numbers are exact, the
  report says they would not run on the chip as they are.
- `refuse`: an f64 tensor anywhere in the program is an error naming the
  first one and its source line.
- `demote`: every f64 tensor is computed in f32 (its inputs, weights and
  intermediates are f32 in the MLIR; `rducc.Program` takes and returns f64
  tensors, cast at its boundary); the report says how many values were
  demoted. Results differ from f64 by f32 rounding.

complex128 values are float64 pairs (`complex_pairs`) and follow the same policy.
"""

from __future__ import annotations

import torch
from xdsl.dialects.builtin import Float64Type, ModuleOp, TensorType
from xdsl.ir import SSAValue

from rducc.dialects.contracts import Phase, f64_demoted, phase_of
from rducc.errors import RduccError
from rducc.frontend.locations import describe_location

POLICIES = ("emulate", "refuse", "demote")

def _is_f64(value: object) -> bool:
    values = value if isinstance(value, tuple | list) else [value]
    return any(isinstance(v, torch.Tensor) and v.dtype == torch.float64 for v in values)


def check_f64(ep: torch.export.ExportedProgram, policy: str) -> None:
    """Under `refuse`, raise on the first f64 input, weight or intermediate."""
    if policy not in POLICIES:
        raise RduccError(f"unknown f64 policy '{policy}' (choose from {', '.join(POLICIES)})")
    if policy in ("emulate", "demote"):
        return
    for node in ep.graph.nodes:
        if _is_f64(node.meta.get("val")):
            where = node.name if node.op == "placeholder" else describe_location(node)
            raise RduccError(
                f"{where}: '{node.name}' is float64, which the target cannot compute "
                "(--f64 refuse); cast the model to float32, or compile with --f64 emulate "
                "to have rducc's runtime compute it exactly"
            )


def f64_node_count(ep: torch.export.ExportedProgram) -> int:
    """How many values (inputs, weights, results) of the graph are f64."""
    return sum(_is_f64(node.meta.get("val")) for node in ep.graph.nodes)


def demote_weights(tensors: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """The weights under `demote`: f64 ones as f32."""
    return {name: t.float() if t.dtype == torch.float64 else t for name, t in tensors.items()}


def f64_value_count(module: ModuleOp) -> int:
    """How many tensor values of the program (arguments and results) are f64.
    Not the 0-d values of a training step's optimizer: Adam's bias corrections
    and step size, float64 from the step count as torch.optim computes them
    (Python numbers on the host; `training.optimizers`), are the host's work
    for the chip, not the model's."""
    count = 0
    for op in module.walk():
        values = [*op.results, *(arg for region in op.regions for block in region.blocks for arg in block.args)]
        if phase_of(op) == Phase.OPTIMIZER:
            values = [value for value in values if not _scalar(value)]
        for value in values:
            element = getattr(value.type, "element_type", None)
            if isinstance(value.type, TensorType) and isinstance(element, Float64Type):
                count += 1
    return count


def _scalar(value: SSAValue) -> bool:
    return isinstance(value.type, TensorType) and not value.type.get_shape()


def emulation_note(module: ModuleOp) -> str | None:
    """The report's line about f64 values, or None when there are none."""
    demoted = f64_demoted(module)
    if demoted:
        return (
            f"f64   {demoted} values of the model were float64, which the chip cannot compute: "
            "demoted (computed in float32, --f64 demote; results carry f32 rounding)"
        )
    count = f64_value_count(module)
    if not count:
        return None
    return (
        f"f64   {count} tensor values are float64, which the chip cannot compute: "
        "emulated (rducc's runtime computes them exactly; the cost model times them "
        "at the f32 rate)"
    )
