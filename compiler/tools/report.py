"""`rducc --report`: what the compiler did, as a table after the compile.

Where each class of tensor lives (weights in HBM or DDR, values crossing
kernels in HBM or kept on chip, values inside kernels in SRAM), SRAM peak
against capacity, HBM and DDR use, and the cost model's per-kernel table
(fused ops, FLOPs, bytes, bound, modeled time, share); for a training step,
its time by phase, tokens/s, MFU and the bytes of weights, activations,
gradients and optimizer state per tier (compiler/model/training_speed.py). Every
time is modeled.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from xdsl.dialects.builtin import DenseArrayBase, IntegerAttr, ModuleOp

from rducc.dialects import contracts
from rducc.dialects.contracts import (
    data_parallel_of,
    f64_demoted,
    is_partitioned,
    module_target,
    partition_of,
    split_choice_of,
    spmd_ranks,
    whole_reader,
)
from rducc.dialects.shapes import value_bytes
from rducc.dialects.tier import AllocOp, ComputeOp, GlobalOp, Tier
from rducc.frontend.f64 import emulation_note, f64_value_count
from rducc.model.training_speed import is_training, training_estimate, training_speed
from rducc.passes.rdu_partition.training import is_training_step
from rducc.tools.cost_table import cost_table, megabytes


@dataclass(frozen=True)
class TensorClass:
    """One class of tensors: how many, in which tier, how many bytes."""

    name: str
    tier: str
    count: int
    bytes: int


def _attr(op, name: str) -> int:
    value = op.attributes.get(name)
    return value.value.data if isinstance(value, IntegerAttr) else 0


def tensor_classes(module: ModuleOp) -> list[TensorClass]:
    """Where weights, activations between kernels and kernel values live."""
    globals_ = [op for op in module.ops if isinstance(op, GlobalOp)]
    classes = []
    for index, tier in enumerate((Tier.HBM, Tier.DDR)):  # an expert table may hold its leading rows in HBM
        held = [g.resident_bytes()[index] for g in globals_ if g.tier is not None]
        classes.append(TensorClass("weights", tier.value, sum(1 for n in held if n), sum(held)))
    computes = [op for op in module.walk() if isinstance(op, ComputeOp)]
    hbm = [op for op in module.walk() if isinstance(op, AllocOp) and op.result.type.tier.data == Tier.HBM]
    classes.append(TensorClass("activations between kernels", "hbm", len(hbm), sum(op.reserved_bytes for op in hbm)))
    kept = [
        o
        for c in computes
        for o in c.outs
        if any(u.operation is not c and isinstance(u.operation, ComputeOp) for u in o.uses)
    ]
    if kept:
        kept_bytes = sum(v.owner.reserved_bytes for v in kept)  # type: ignore[union-attr]
        classes.append(TensorClass("activations kept on chip", "sram", len(kept), kept_bytes))
    inner = [op for c in computes for op in c.body.block.ops if op.results and op.name != "rdu.yield"]
    classes.append(
        TensorClass("values inside kernels", "sram", len(inner), sum(value_bytes(op.results[0]) for op in inner))
    )
    return classes


def socket_use(module: ModuleOp) -> list[dict[str, int]]:
    """Per pipeline stage of a partitioned program: its sockets and the HBM and DDR
    weight bytes each of them holds (every tp rank of a stage holds equal shards)."""
    tp, pp = partition_of(module)
    ranks = spmd_ranks(module)
    by_stage = {}
    for tier, total, per_stage in (("hbm", contracts.HBM_WEIGHT_BYTES, contracts.HBM_WEIGHT_BYTES_BY_STAGE),
                                   ("ddr", contracts.DDR_WEIGHT_BYTES, contracts.DDR_WEIGHT_BYTES_BY_STAGE)):
        attr = module.attributes.get(per_stage)
        assert attr is None or isinstance(attr, DenseArrayBase)
        by_stage[tier] = list(attr.get_values()) if attr is not None else [_attr(module, total)]
    stages = max(pp, len(by_stage["hbm"]))
    return [
        {"stage": s, "first_socket": s * ranks, "last_socket": s * ranks + ranks - 1,
         "hbm_weight_bytes": by_stage["hbm"][s] if s < len(by_stage["hbm"]) else 0,
         "ddr_weight_bytes": by_stage["ddr"][s] if s < len(by_stage["ddr"]) else 0}
        for s in range(stages)
    ]


@dataclass(frozen=True)
class WholeWeights:
    """Parameters tp leaves whole on every socket of its group, by the op that reads them whole first."""

    reader: str
    count: int
    bytes: int
    first: str
    """The first such parameter's global and the reader's source line."""


def whole_weights(module: ModuleOp) -> list[WholeWeights]:
    """The parameters `rdu-partition` left whole under tp (`rdu.whole_reader`), grouped by reader, largest first."""
    groups: dict[str, list[GlobalOp]] = {}
    for op in module.ops:
        if isinstance(op, GlobalOp) and (read := whole_reader(op)) is not None:
            groups.setdefault(read[0], []).append(op)
    found = []
    for reader, held in groups.items():
        where = whole_reader(held[0])[1].rsplit("/", 1)[-1]  # type: ignore[index]  # the file's name and line
        first = f"@{held[0].sym_name.data}" + (f" at {where}" if where else "")
        found.append(WholeWeights(reader, len(held), sum(value_bytes(g.global_type) for g in held), first))
    return sorted(found, key=lambda group: -group.bytes)


def _whole_lines(module: ModuleOp) -> list[str]:
    """One line per group of parameters tp holds whole on every socket (bytes, and the op that reads them whole)."""
    groups = whole_weights(module)
    if not groups:
        return []
    tp, _ = partition_of(module)
    total = sum(group.bytes for group in groups)
    lines = [f"  not split by tp={tp}: {sum(g.count for g in groups)} parameters, {megabytes(total)} held whole by "
             "every socket of a group, by the op that first reads them whole:"]
    lines += [f"    {g.reader}: {g.count} parameter{'s' if g.count > 1 else ''}, {megabytes(g.bytes)} (first "
              f"{g.first})" for g in groups]
    return lines


def _socket_lines(module: ModuleOp) -> list[str]:
    if not is_partitioned(module):
        return []
    tp, pp = partition_of(module)
    dp = data_parallel_of(module)
    split = f"tp={tp} x pp={pp}" + (f" x dp={dp}" if dp > 1 else "")
    lines = [f"sockets  {split}: {spmd_ranks(module) * pp} sockets; one socket of each stage holds"
             " (its SRAM plan: the kernels of its stage in the plan above)"]
    for use in socket_use(module):
        lines.append(
            f"  stage {use['stage']} (sockets {use['first_socket']}-{use['last_socket']}): HBM weights "
            f"{megabytes(use['hbm_weight_bytes'])}, DDR weights {megabytes(use['ddr_weight_bytes'])}"
        )
    lines += _whole_lines(module)
    if is_training_step(module):
        lines.append("  " + training_estimate(module, module_target(module)).summary())
    lines += ["  " + line for line in split_choice_of(module)]
    return lines


def compile_report(module: ModuleOp, report: Any) -> str:
    """The readable report: tensor placement, memory use, then the kernel table."""
    forward = next(op for op in module.ops if op.name == "func.func")
    peak, capacity = _attr(forward, contracts.SRAM_PEAK), _attr(forward, contracts.SRAM_CAPACITY)
    lines = [
        f"rducc report: target {report.target}, {len(report.kernels)} kernels (times are modeled, not measured)",
        "",
    ]
    lines.append("tensors")
    for cls in tensor_classes(module):
        lines.append(f"  {cls.name:<30} {cls.tier:<5} {cls.count:>6}  {megabytes(cls.bytes):>14}")
    lines.append("")
    share = f" ({peak / capacity:.1%})" if capacity else ""
    lines.append(
        f"SRAM  peak {megabytes(peak)} of {megabytes(capacity)}{share}; max-live lower bound "
        f"{megabytes(_attr(forward, contracts.SRAM_LOWER_BOUND))}"
    )
    lines.append(
        f"HBM   weights {megabytes(_attr(module, contracts.HBM_WEIGHT_BYTES))}, activations at most "
        f"{megabytes(_attr(module, contracts.ACTIVATION_BYTES))}"
    )
    lines.append(f"DDR   weights {megabytes(_attr(module, contracts.DDR_WEIGHT_BYTES))}")
    lines += _socket_lines(module)
    note = emulation_note(module)
    if note:
        lines.append(note)
    lines.append("")
    lines.append(cost_table(report))
    if is_training(module):
        lines.append("")
        lines.append(training_speed(module, module_target(module), report).table())
    return "\n".join(lines) + "\n"


def report_dict(module: ModuleOp, report: Any) -> dict[str, Any]:
    """The report for tools: the cost report plus tensor placement and memory use."""
    forward = next(op for op in module.ops if op.name == "func.func")
    data = report.to_dict()
    data["tensor_classes"] = [cls.__dict__ for cls in tensor_classes(module)]
    data["hbm_weight_bytes"] = _attr(module, contracts.HBM_WEIGHT_BYTES)
    data["ddr_weight_bytes"] = _attr(module, contracts.DDR_WEIGHT_BYTES)
    data["activation_bytes"] = _attr(module, contracts.ACTIVATION_BYTES)
    data["sram_capacity_bytes"] = _attr(forward, contracts.SRAM_CAPACITY)
    data["f64_emulated_values"] = f64_value_count(module)
    data["f64_demoted_values"] = f64_demoted(module)
    data["sockets"] = socket_use(module)
    data["whole_under_tp"] = [group.__dict__ for group in whole_weights(module)]
    if is_training(module):
        data["training"] = training_speed(module, module_target(module), report).to_dict()
    return data
