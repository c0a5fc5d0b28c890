"""`rdu-place-tiers`: decide which off-chip tier holds each global.

Weights (every `tier.global`) go to HBM in the order @forward first reads
them, until HBM is full; the rest spill to DDR, so their transfers are
visible as DDR-to-SRAM DMAs and costed at DDR bandwidth. HBM keeps room for
the activations: the user inputs and every kernel output, counted as if all
were live at once (an upper bound). Values inside kernels live in SRAM and
values crossing kernels in HBM; `rdu-insert-dma` makes both explicit.

In a pipelined program (rdu-partition, pp > 1) each stage's sockets have
their own HBM: a global counts against the stage that first reads it, and
`tier.hbm_weight_bytes_by_stage` / `tier.ddr_weight_bytes_by_stage` record
one socket of each stage.

A model whose weights and activations exceed HBM + DDR is an error.
The result is recorded on the module: `tier.hbm_weight_bytes`,
`tier.ddr_weight_bytes` and `tier.activation_bytes`.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import DenseArrayBase, IntegerAttr, ModuleOp, SymbolRefAttr, TensorType, i64
from xdsl.passes import ModulePass

from rducc.dialects.dataflow import KernelOp
from rducc.dialects.memory import GlobalOp, Tier, TierAttr
from rducc.dialects.shapes import byte_width
from rducc.errors import RduccError
from rducc.passes.common import functions, module_target, require_tensor_program
from rducc.passes.rdu_partition import global_stages


def tensor_type_bytes(tensor: TensorType) -> int:
    size = byte_width(tensor.element_type)
    for dim in tensor.get_shape():
        size *= dim
    return size


def _first_use_order(module: ModuleOp) -> list[str]:
    """Global names in the order @forward's kernels first read them."""
    order: dict[str, None] = {}
    for function in functions(module):
        attrs = function.arg_attrs.data if function.arg_attrs else []
        by_arg = {
            arg: a.data["rdu.global"].root_reference.data
            for arg, a in zip(function.args, attrs)
            if isinstance(a.data.get("rdu.global"), SymbolRefAttr)
        }
        for op in function.body.block.ops:
            for operand in op.operands:
                if operand in by_arg:
                    order.setdefault(by_arg[operand])
        for name in by_arg.values():
            order.setdefault(name)
    return list(order)


def _activation_bytes(module: ModuleOp) -> int:
    total = 0
    for function in functions(module):
        for op in function.body.block.ops:
            if isinstance(op, KernelOp):
                total += sum(tensor_type_bytes(r.type) for r in op.outputs)  # type: ignore[arg-type]
        attrs = function.arg_attrs.data if function.arg_attrs else [None] * len(function.args)
        for arg, arg_attrs in zip(function.args, attrs):
            if arg_attrs is not None and "rdu.global" in arg_attrs.data:
                continue  # a weight, placed on its own
            total += tensor_type_bytes(arg.type) if isinstance(arg.type, TensorType) else 0
    return total


@dataclass(frozen=True)
class RduPlaceTiers(ModulePass):
    """Put weights in HBM, spilling to DDR when HBM is full."""

    name = "rdu-place-tiers"

    target: str = ""
    """Target name or file; default: the module's rdu.target, else sn40l."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        require_tensor_program(op, self.name)
        target = module_target(op, self.target)
        globals_ = {g.sym_name.data: g for g in op.ops if isinstance(g, GlobalOp)}
        activations = _activation_bytes(op)
        hbm_free = target.hbm_bytes - activations
        hbm_used = ddr_used = 0
        stages = global_stages(op)  # pipeline stages: each its own sockets' HBM
        hbm_by_stage = [0] * (max(stages.values(), default=0) + 1)
        ddr_by_stage = list(hbm_by_stage)
        read = [n for n in _first_use_order(op) if n in globals_]
        for name in read + [n for n in globals_ if n not in set(read)]:
            size, stage = tensor_type_bytes(globals_[name].global_type), stages.get(name, 0)
            if hbm_by_stage[stage] + size <= hbm_free:
                globals_[name].tier = TierAttr(Tier.HBM)
                hbm_used += size
                hbm_by_stage[stage] += size
            else:
                globals_[name].tier = TierAttr(Tier.DDR)
                ddr_used += size
                ddr_by_stage[stage] += size
        if max(ddr_by_stage) > target.ddr_bytes or activations > target.hbm_bytes:
            raise RduccError(
                f"the model does not fit {target.name}: {hbm_used + ddr_used} bytes of weights "
                f"and {activations} bytes of activations, against {target.hbm_bytes} bytes of HBM "
                f"and {target.ddr_bytes} bytes of DDR"
            )
        op.attributes["tier.hbm_weight_bytes"] = IntegerAttr(hbm_used, i64)
        op.attributes["tier.ddr_weight_bytes"] = IntegerAttr(ddr_used, i64)
        op.attributes["tier.activation_bytes"] = IntegerAttr(activations, i64)
        if len(hbm_by_stage) > 1:  # one socket of each pipeline stage
            op.attributes["tier.hbm_weight_bytes_by_stage"] = DenseArrayBase.from_list(i64, hbm_by_stage)
            op.attributes["tier.ddr_weight_bytes_by_stage"] = DenseArrayBase.from_list(i64, ddr_by_stage)
