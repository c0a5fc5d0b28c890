"""The cost model (compiler/model/cost_model.py): figures checked by hand from shapes,
tiling, fusion levels, DDR spill, the JSON form, and Llama 3.1 8B on meta."""

from __future__ import annotations

import dataclasses
import json
import time

import pytest
from xdsl.dialects import scf
from xdsl.dialects.builtin import ModuleOp

from rducc.dialects.tier import BufferType, ComputeOp, DmaOp, GatherDmaOp, GlobalOp
from rducc.dialects.shapes import byte_width
from rducc.driver import import_exported, lower
from rducc.errors import RduccError
from rducc.model.cost_model import Report, estimate
from rducc.model.kernel_timing import KernelCost
from rducc.model.program_walk import trip_count
from rducc.targets import load_target
from rducc.tools.cost_table import cost_table

from outlining import inline_calls

SN40L = load_target("sn40l")
SMALL = dataclasses.replace(SN40L, name="small", sram_bytes=12_000, pmu_bytes=500, pmus=24)
NO_HBM = dataclasses.replace(SN40L, name="tiny-hbm", hbm_bytes=20_000)

# the MLP of examples/models.py: batch 4, 32 -> 64 -> 64 -> 10, f32
B, F, H, C = 4, 32, 64, 10
F32 = 4


@pytest.fixture(scope="module")
def imported(exported_small) -> dict[str, ModuleOp]:
    return {name: import_exported(exported_small[name][2]) for name in ("mlp", "cnn", "tiny_llama")}


def _placed(imported, name: str, target, level: int) -> ModuleOp:
    module = imported[name].clone()
    lower(module, target, level)
    return module


def _forward_attr(module: ModuleOp, name: str) -> int:
    forward = next(op for op in module.ops if op.name == "func.func")
    return forward.attributes[name].value.data


def _global_bytes(op: GlobalOp) -> int:
    tensor = op.global_type
    size = byte_width(tensor.element_type)
    for dim in tensor.get_shape():
        size *= dim
    return size


def test_mlp_o2_one_kernel_by_hand(imported) -> None:
    module = _placed(imported, "mlp", SN40L, 2)
    report = estimate(module, SN40L)
    assert len(report.kernels) == 1
    k = report.kernels[0]
    assert k.tiles == 1
    # rdu-merge-maps folded bias+relu and bias+gelu into one map each
    assert k.ops_fused == {"rdu.matmul": 3, "rdu.map": 3}

    matmul_flops = 2 * B * (F * H + H * H + H * C)
    # bias adds (1 op/elem), relu (maximumf), gelu (mulf, mulf, erf, addf, mulf)
    map_flops = B * H * 1 + B * H * 1 + B * H * 1 + B * H * 5 + B * C * 1
    assert k.flops == matmul_flops + map_flops == report.flops

    weights = F * H + H + H * H + H + H * C + C
    assert k.bytes_by_tier == {"hbm->sram": F32 * (B * F + weights), "sram->hbm": F32 * B * C}
    sram = F32 * (
        (B * F + H * F + B * H)      # matmul 1: x, fc1.weight, result
        + (H + B * H + B * H)        # + bias, relu (one map)
        + (B * H + H * H + B * H)    # matmul 2
        + (H + B * H + B * H)        # + bias, gelu (one map)
        + (B * H + C * H + B * C)    # matmul 3
        + (C + B * C + B * C)        # + bias
    )
    assert k.sram_bytes == sram

    # the mapping (rdu-map-units) sets the compute and SRAM-port times: the slowest
    # stage with the PCUs it got, the busiest buffer with its PMUs (test_mapping.py
    # checks those formulas by hand); never faster than the whole chip at peak
    assert k.compute_s >= k.flops / SN40L.peak_flops_f32
    assert k.sram_s >= sram / SN40L.sram_bandwidth
    assert 0 < k.pcus <= SN40L.pcus and 0 < k.pmus <= SN40L.pmus and k.sections == 1
    assert k.hbm_s == F32 * (B * F + weights + B * C) / (SN40L.hbm_bandwidth * SN40L.hbm_efficiency)
    assert k.ddr_s == 0.0
    assert 0 < k.pipeline_s < 1e-6
    assert k.fill_s == SN40L.dma_latency_s + k.pipeline_s  # one tile: no first tile to load
    assert k.launch_s == SN40L.kernel_launch_s
    slowest = max(k.compute_s, k.sram_s, k.hbm_s, k.ddr_s)
    assert k.modeled_time_s == pytest.approx(slowest + k.fill_s + k.launch_s)
    assert k.bound == "launch"  # a 56 kFLOP kernel: the 5 us launch dominates
    assert k.share == 1.0 and report.modeled_time_s == k.modeled_time_s
    assert report.sram_peak_bytes == _forward_attr(module, "tier.sram_peak")
    assert report.sram_lower_bound_bytes == _forward_attr(module, "tier.sram_lower_bound")
    assert report.sram_capacity_bytes == SN40L.sram_bytes


def test_tiled_kernel_bytes_multiply_by_trip_count(imported) -> None:
    module = _placed(imported, "mlp", SMALL, 0)
    report = estimate(module, SMALL)
    loops = [op for op in module.walk() if isinstance(op, scf.ForOp)]
    tiled = [k for k in report.kernels if k.tiles > 1]
    assert len(loops) == len(tiled) == 1
    k = tiled[0]
    assert k.tiles == trip_count(loops[0]) and H % k.tiles == 0
    assert k.ops_fused == {"rdu.matmul": 1}
    rows = H // k.tiles  # fc2.weight streams in windows of `rows` rows

    resident, window, out_tile = B * H * F32, rows * H * F32, B * rows * F32
    assert k.bytes_by_tier == {
        "hbm->sram": resident + k.tiles * window,
        "sram->hbm": k.tiles * out_tile,
    }
    assert k.flops == k.tiles * 2 * B * rows * H == 2 * B * H * H
    assert k.sram_bytes == k.tiles * (resident + window + out_tile)
    first_tile = window / (SMALL.hbm_bandwidth * SMALL.hbm_efficiency)
    assert k.fill_s == pytest.approx(SMALL.dma_latency_s + first_tile + k.pipeline_s)
    # the first tile is in the fill, so the pipeline's HBM time is the rest (not counted twice)
    steady = max(k.compute_s, k.sram_s, k.hbm_s - first_tile)
    assert k.modeled_time_s == pytest.approx(steady + k.fill_s + k.launch_s + k.reconfigure_s)
    # the same fc2 matmul untiled on the full chip: same FLOPs and HBM bytes, one tile
    untiled = estimate(_placed(imported, "mlp", SN40L, 0), SN40L).kernels
    same = next(u for u in untiled if u.name == k.name)
    assert same.tiles == 1 and same.flops == k.flops
    assert sum(same.bytes_by_tier.values()) == sum(k.bytes_by_tier.values())
    assert report.flops == sum(x.flops for x in report.kernels)
    assert report.sram_capacity_bytes == SMALL.sram_bytes


def test_fusion_moves_fewer_hbm_bytes_and_is_faster(imported) -> None:
    o0 = estimate(_placed(imported, "tiny_llama", SN40L, 0), SN40L)
    o2 = estimate(_placed(imported, "tiny_llama", SN40L, 2), SN40L)
    assert len(o2.kernels) < len(o0.kernels)
    assert o2.hbm_bytes < o0.hbm_bytes
    assert o2.modeled_time_s < o0.modeled_time_s
    assert sum(k.share for k in o0.kernels) == pytest.approx(1.0)
    assert sum(k.share for k in o2.kernels) == pytest.approx(1.0)


def test_ddr_spill_is_costed_at_ddr_bandwidth(imported) -> None:
    module = _placed(imported, "mlp", NO_HBM, 2)
    report = estimate(module, NO_HBM)
    spilled = module.attributes["tier.ddr_weight_bytes"].value.data
    ddr_globals = sum(  # a global in DDR may keep its leading rows in HBM (tier.hbm_rows)
        g.resident_bytes()[1] for g in module.ops
        if isinstance(g, GlobalOp) and g.tier is not None and g.tier.data.value == "ddr"
    )
    assert spilled == ddr_globals > 0
    assert report.bytes_by_tier["ddr->sram"] == spilled
    assert report.ddr_bytes == spilled
    ddr_s = sum(k.ddr_s for k in report.kernels)
    assert ddr_s == pytest.approx(spilled / (NO_HBM.ddr_bandwidth * NO_HBM.ddr_efficiency)) and ddr_s > 0
    unspilled = estimate(_placed(imported, "mlp", SN40L, 2), SN40L)
    assert "ddr->sram" not in unspilled.bytes_by_tier
    assert report.hbm_bytes + report.ddr_bytes == unspilled.hbm_bytes
    assert report.modeled_time_s > unspilled.modeled_time_s


def test_json_round_trip(imported) -> None:
    report = estimate(_placed(imported, "tiny_llama", SN40L, 2), SN40L)
    data = json.loads(report.to_json())
    for key in ("modeled_time_s", "flops", "bytes_by_tier", "sram_peak_bytes",
                "sram_lower_bound_bytes", "kernels", "target", "sram_capacity_bytes"):
        assert key in data
    assert set(data) == {f.name for f in dataclasses.fields(Report)} | {"kernel_launches", "launches_saved"}
    assert (data["kernel_launches"], data["launches_saved"]) == (report.kernel_launches, report.launches_saved)
    assert data["kernel_launches"] == len(report.kernels) - data["launches_saved"]
    assert data == report.to_dict()
    assert data["modeled_time_s"] == report.modeled_time_s
    kernel_keys = {f.name for f in dataclasses.fields(KernelCost)}
    assert all(set(k) == kernel_keys for k in data["kernels"])
    assert [k["name"] for k in data["kernels"]] == [k.name for k in report.kernels]
    table = cost_table(report)
    assert "total" in table and all(k.name in table for k in report.kernels)


def _runs(op) -> int:
    """How often an op runs: the product of the trip counts of its loops."""
    count, parent = 1, op.parent_op()
    while parent is not None:
        if isinstance(parent, scf.ForOp):
            count *= trip_count(parent)
        parent = parent.parent_op()
    return count


def _moved(op) -> int:
    """Bytes one transfer moves, from its buffer types."""
    side = op.dest if isinstance(op, GatherDmaOp) or op.src_offsets else op.source
    kind = side.type
    assert isinstance(kind, BufferType)
    size = byte_width(kind.element_type)
    for dim in kind.get_shape():
        size *= dim
    return size


@pytest.mark.parametrize("target", [SN40L, SMALL], ids=lambda t: t.name)
@pytest.mark.parametrize("level", [0, 1, 2])
@pytest.mark.parametrize("name", ["mlp", "cnn", "tiny_llama"])
def test_every_transfer_and_tile_is_costed_once(imported, name: str, level: int, target) -> None:
    outlined = _placed(imported, name, target, level)
    # kernel looping off: an outlined layer then costs what it costs inline (looping: test_kernel_looping.py)
    unlooped = dataclasses.replace(target, kernel_looping=False)
    report = estimate(outlined, unlooped)
    module = inline_calls(outlined)  # an outlined layer's transfers and computes, once per call
    # inlined, `layer.k0` (kernel_name: the layer's own k0) becomes @forward's k0
    unqualified = [dataclasses.replace(k, name=k.name.rpartition(".")[2]) for k in report.kernels]
    assert dataclasses.replace(report, loops=[], kernels=unqualified) == estimate(module, unlooped)
    transfers = [op for op in module.walk() if isinstance(op, DmaOp | GatherDmaOp)]
    computes = [op for op in module.walk() if isinstance(op, ComputeOp)]
    assert sum(report.bytes_by_tier.values()) == sum(_moved(op) * _runs(op) for op in transfers)
    assert [k.name for k in unqualified] == [c.sym_name.data for c in computes]
    assert [k.tiles for k in report.kernels] == [_runs(c) for c in computes]
    assert report.modeled_time_s == pytest.approx(sum(k.modeled_time_s for k in report.kernels))
    for k in report.kernels:
        assert k.modeled_time_s >= k.launch_s + max(k.compute_s, k.sram_s, k.hbm_s, k.ddr_s)
        assert k.bound in ("compute", "sram", "hbm", "ddr", "launch")


def test_unlowered_module_is_an_error(imported) -> None:
    with pytest.raises(RduccError, match="lower it"):
        estimate(imported["mlp"], SN40L)


def test_llama31_8b_meta_estimates_without_data(llama8b_meta, capsys) -> None:
    module = import_exported(llama8b_meta)
    lower(module, SN40L, 2)
    start = time.perf_counter()
    report = estimate(module, SN40L)
    seconds = time.perf_counter() - start
    with capsys.disabled():
        print(f"\n{cost_table(report)}\n(estimated in {seconds:.2f} s)")
    assert seconds < 5

    globals_ = [g for g in module.ops if isinstance(g, GlobalOp)]
    weight_bytes = sum(_global_bytes(g) for g in globals_)
    assert weight_bytes > 16e9  # bf16 weights: 8.03 G parameters x 2 bytes
    # the embedding table stays in HBM: tier.gather reads only the 128 rows used
    table = next(g for g in globals_ if "embed_tokens" in g.sym_name.data)
    hidden = table.global_type.get_shape()[1]
    read = weight_bytes - _global_bytes(table) + 128 * hidden * 2
    assert report.hbm_bytes >= read > 14.9e9
    assert report.bytes_by_tier["hbm->sram"] >= read
    assert report.ddr_bytes == 0

    # the embedding with the rotary tables and mask, 32 calls of the one outlined decoder layer, LM head
    assert len(report.kernels) == 34
    assert len([op for op in module.walk() if isinstance(op, ComputeOp)]) == 3
    assert all(k.bound == "hbm" for k in report.kernels[1:])  # seq-128 prefill streams weights
    assert report.kernels[0].modeled_time_s < 0.01 * report.modeled_time_s  # the prologue is small
    assert report.modeled_time_s >= report.hbm_bytes / SN40L.hbm_bandwidth
    non_embedding_params = (weight_bytes - _global_bytes(table)) // 2
    assert report.flops >= 2 * 128 * non_embedding_params
    lm_head = report.kernels[-1]
    assert lm_head.tiles > 1 and lm_head.fill_s > SN40L.dma_latency_s
