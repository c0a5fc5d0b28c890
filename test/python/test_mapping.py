"""rdu-map-units and the mapping-driven kernel time, on kernels small enough to check by hand."""

from __future__ import annotations

import dataclasses

import pytest
from xdsl.context import Context
from xdsl.dialects import arith, builtin, func
from xdsl.dialects.builtin import ModuleOp
from xdsl.parser import Parser

from rducc.dialects.contracts import MappingAttr, mapping_of
from rducc.dialects.rdu.dataflow import Dataflow
from rducc.dialects.tier import ComputeOp, Memory
from rducc.model.cost_model import estimate
from rducc.model.mapping import balance, lane_fill, map_kernel, site, utilization
from rducc.passes.rdu_map_units import RduMapUnits
from rducc.targets import load_target

SN40L = load_target("sn40l")


def parse_module(text: str) -> ModuleOp:
    ctx = Context()
    for dialect in (builtin.Builtin, func.Func, arith.Arith, Dataflow, Memory):
        ctx.load_dialect(dialect)
    module = Parser(ctx, text).parse_module()
    module.verify()
    return module


def _gemm(m: int, k: int, n: int) -> str:
    """One kernel: x[m, k] @ w[k, n] in bf16, read from HBM and written back."""
    x, w, y = f"{m}x{k}xbf16", f"{k}x{n}xbf16", f"{m}x{n}xbf16"
    return f"""
builtin.module attributes {{rdu.level = #rdu<level memory>}} {{
  func.func @forward(%x: !tier.buffer<hbm, {x}> {{rdu.input = "x"}}, %w: !tier.buffer<hbm, {w}> {{rdu.input = "w"}}) -> !tier.buffer<hbm, {y}> {{
    %xs = tier.alloc : !tier.buffer<sram, {x}>
    %ws = tier.alloc : !tier.buffer<sram, {w}>
    %ys = tier.alloc : !tier.buffer<sram, {y}>
    %yh = tier.alloc : !tier.buffer<hbm, {y}>
    tier.dma %x -> %xs : !tier.buffer<hbm, {x}> -> !tier.buffer<sram, {x}>
    tier.dma %w -> %ws : !tier.buffer<hbm, {w}> -> !tier.buffer<sram, {w}>
    tier.compute "k0" ins(%xs, %ws : !tier.buffer<sram, {x}>, !tier.buffer<sram, {w}>) outs(%ys : !tier.buffer<sram, {y}>) {{
    ^bb0(%a: tensor<{x}>, %b: tensor<{w}>):
      %c = rdu.matmul %a, %b : tensor<{x}>, tensor<{w}> -> tensor<{y}>
      rdu.yield %c : tensor<{y}>
    }}
    tier.dma %ys -> %yh : !tier.buffer<sram, {y}> -> !tier.buffer<hbm, {y}>
    func.return %yh : !tier.buffer<hbm, {y}>
  }}
}}
"""


def _compute(module: ModuleOp) -> ComputeOp:
    return next(op for op in module.walk() if isinstance(op, ComputeOp))


def test_lane_fill_and_utilization() -> None:
    assert lane_fill(32, 32) == 1.0 and lane_fill(10, 32) == 10 / 32 and lane_fill(40, 32) == 40 / 64
    gemv, gemm = _compute(parse_module(_gemm(1, 4096, 4096))), _compute(parse_module(_gemm(512, 4096, 4096)))
    matmul = next(iter(gemv.body.block.ops))
    # a batch-1 GEMV keeps 1 of a PCU's 6 stages busy (rows in flight: 1); a large GEMM all of them
    assert utilization(matmul, SN40L) == pytest.approx(1 / 6)
    assert utilization(next(iter(gemm.body.block.ops)), SN40L) == 1.0


def _row_sum(rows: int, n: int) -> str:
    """One kernel: a keepdim sum of x[rows, n] over its last dim (an RMS norm's mean)."""
    x, y = f"{rows}x{n}xf32", f"{rows}x1xf32"
    return f"""
builtin.module attributes {{rdu.level = #rdu<level memory>}} {{
  func.func @forward(%x: !tier.buffer<sram, {x}> {{rdu.input = "x"}}) -> !tier.buffer<sram, {y}> {{
    %ys = tier.alloc : !tier.buffer<sram, {y}>
    tier.compute "k0" ins(%x : !tier.buffer<sram, {x}>) outs(%ys : !tier.buffer<sram, {y}>) {{
    ^bb0(%a: tensor<{x}>):
      %c = rdu.reduce sum %a dims [1] keepdim : tensor<{x}> -> tensor<{y}>
      rdu.yield %c : tensor<{y}>
    }}
    func.return %ys : !tier.buffer<sram, {y}>
  }}
}}
"""


def test_a_reduction_fills_its_lanes_from_its_input() -> None:
    """Summing 128 elements a row to 1: the lanes read the 128 (4 full vectors), not
    the result's 1 (which would keep 1 lane of 32 busy); a ragged 40 fills 40 of 64."""
    for n, fill in ((128, 1.0), (40, 40 / 64)):
        reduce = next(iter(_compute(parse_module(_row_sum(1, n))).body.block.ops))
        assert utilization(reduce, SN40L) == pytest.approx(fill / 2)


def test_gemm_by_hand() -> None:
    """512 x 4096 x 4096 bf16: 17.2 GFLOP; at most ceil(flops / (32 x 6 x 2)) units,
    more than 1,040, so all 1,040 PCUs at 638 TFLOP/s / 1,040 each, fully used, at
    the target's compute_efficiency (what a full stage sustains)."""
    module = parse_module(_gemm(512, 4096, 4096))
    report = estimate(module, SN40L)  # unmapped: mapped on the fly, by the same rules
    (k,) = report.kernels
    flops = 2 * 512 * 4096 * 4096
    assert k.flops == flops and k.pcus == SN40L.pcus and k.sections == 1
    assert k.compute_s == pytest.approx(flops / (SN40L.peak_flops_bf16 * SN40L.compute_efficiency))
    assert SN40L.compute_efficiency < 1  # sn40l's units are not ideal
    hbm_rate = SN40L.hbm_bandwidth * SN40L.hbm_efficiency
    assert k.hbm_s == pytest.approx(2 * (512 * 4096 + 4096 * 4096 + 512 * 4096) / hbm_rate)
    # fill: DMA start-up + one stage (depth 1) + its hops; launch; no first tile (1 tile)
    mapping = mapping_of(_mapped(module))
    assert mapping is not None
    (stage,) = mapping.stages
    pipeline = SN40L.stage_latency_s + stage.hops * SN40L.hop_latency_s
    assert k.pipeline_s == pytest.approx(pipeline)
    assert k.fill_s == pytest.approx(SN40L.dma_latency_s + pipeline)
    assert k.modeled_time_s == pytest.approx(max(k.compute_s, k.sram_s, k.hbm_s) + k.fill_s + SN40L.kernel_launch_s)


def test_gemv_is_not_costed_like_a_gemm() -> None:
    """Batch 1: 33.6 MFLOP on at most ceil(flops / 384) = 87,382 units, so 1,040, at
    1/6 utilization: 6x the time of the same FLOPs at peak (still far below its HBM time)."""
    (k,) = estimate(parse_module(_gemm(1, 4096, 4096)), SN40L).kernels
    assert k.compute_s == pytest.approx(6 * k.flops / (SN40L.peak_flops_bf16 * SN40L.compute_efficiency))
    assert k.bound == "hbm"


def test_a_stage_is_no_faster_than_the_network_feeds_it() -> None:
    """The GEMV with a PCU fed 1 GB/s: its 32 MiB of weights (and the vector) reach
    its 1,040 PCUs in bytes / (1,040 x 1e9) s, slower than its FLOPs; unlimited (0),
    the FLOPs' time again."""
    module = _gemm(1, 4096, 4096)
    slow = SN40L.with_value("pcu_feed_bandwidth", 1e9)
    (k,) = estimate(parse_module(module), slow).kernels
    assert k.compute_s == pytest.approx(2 * (4096 + 4096 * 4096) / (SN40L.pcus * 1e9))
    (free,) = estimate(parse_module(module), SN40L.with_value("pcu_feed_bandwidth", 0)).kernels
    assert free.compute_s == pytest.approx(6 * free.flops / (SN40L.peak_flops_bf16 * SN40L.compute_efficiency))


def _transposed_product(n: int, d: int) -> str:
    """One kernel: p[n, n]^T @ g[n, d] in f32 (the backward's probabilities transposed
    for the values' gradient), read from HBM and written back."""
    p, g, y = f"{n}x{n}xf32", f"{n}x{d}xf32", f"{n}x{d}xf32"
    return f"""
builtin.module attributes {{rdu.level = #rdu<level memory>}} {{
  func.func @forward(%p: !tier.buffer<hbm, {p}> {{rdu.input = "p"}}, %g: !tier.buffer<hbm, {g}> {{rdu.input = "g"}}) -> !tier.buffer<hbm, {y}> {{
    %ps = tier.alloc : !tier.buffer<sram, {p}>
    %gs = tier.alloc : !tier.buffer<sram, {g}>
    %ys = tier.alloc : !tier.buffer<sram, {y}>
    %yh = tier.alloc : !tier.buffer<hbm, {y}>
    tier.dma %p -> %ps : !tier.buffer<hbm, {p}> -> !tier.buffer<sram, {p}>
    tier.dma %g -> %gs : !tier.buffer<hbm, {g}> -> !tier.buffer<sram, {g}>
    tier.compute "k0" ins(%ps, %gs : !tier.buffer<sram, {p}>, !tier.buffer<sram, {g}>) outs(%ys : !tier.buffer<sram, {y}>) {{
    ^bb0(%a: tensor<{p}>, %b: tensor<{g}>):
      %t = rdu.transpose %a perm [1, 0] : tensor<{p}> -> tensor<{p}>
      %c = rdu.matmul %t, %b : tensor<{p}>, tensor<{g}> -> tensor<{y}>
      rdu.yield %c : tensor<{y}>
    }}
    tier.dma %ys -> %yh : !tier.buffer<sram, {y}> -> !tier.buffer<hbm, {y}>
    func.return %yh : !tier.buffer<hbm, {y}>
  }}
}}
"""


def test_a_transpose_spreads_over_pcus_like_an_elementwise_op() -> None:
    """A float32 2,048 x 2,048 transpose (16 MiB) computes nothing, but a PCU is fed at
    most pcu_feed_bandwidth: on one PCU it alone takes 82 us, more than the product
    after it on the other 1,039 (8 us). It may use a PCU per cycle of the elements it
    writes (like an elementwise op of its size), so the balance gives it PCUs until
    it is no slower than the product, and the kernel is bound by its HBM reads
    (before: 1 PCU, 83 us, bound by compute)."""
    module = parse_module(_transposed_product(2048, 128))
    mapping = map_kernel(_compute(module), SN40L)
    transpose = next(s for s in mapping.stages if s.op == 0)
    one_pcu_s = 2048 * 2048 * 4 / SN40L.pcu_feed_bandwidth
    assert transpose.units > 1
    (k,) = estimate(module, SN40L).kernels
    assert k.compute_s == pytest.approx(one_pcu_s / transpose.units, rel=0.1)
    assert k.bound == "hbm" and k.modeled_time_s < one_pcu_s / 5


def _mapped(module: ModuleOp) -> ComputeOp:
    RduMapUnits(target="sn40l").apply(Context(), module)
    return _compute(module)


def test_balance_gives_integer_units_to_the_slowest_stage() -> None:
    assert balance([512.0, 1024.0], [1, 1], [3, 6], 8) == [3, 5]
    # equal stages on 7 units: 3 each (a 7th would not make the slowest faster)
    assert balance([1.0, 1.0], [1, 1], [100, 100], 7) == [3, 3]
    assert balance([0.0, 5.0], [1, 1], [1, 9], 4) == [1, 3]
    # the slowest time is 2 (the last stage needs 2 units for it); a 3rd unit on the
    # last stage would not make the slowest faster (the others stay at 2): 1, 1, 1, 2
    assert balance([2.0, 2.0, 2.0, 4.0], [1] * 4, [6] * 4, 8) == [1, 1, 1, 2]


def test_snake_order_on_the_checkerboard() -> None:
    grid = (4, 8)  # 4 PCUs and 4 PMUs a row
    assert [site(u, grid, pcu=True) for u in (0, 3, 4, 7)] == [(0, 0), (0, 6), (1, 7), (1, 1)]
    assert [site(u, grid, pcu=False) for u in (0, 4)] == [(0, 1), (1, 6)]


def test_a_kernel_too_big_runs_in_sections_with_reconfiguration() -> None:
    module = parse_module(_gemm(64, 64, 64))
    tight = dataclasses.replace(SN40L, pmus=2, fabric_rows=2, fabric_cols=2)
    with pytest.raises(Exception, match="no room"):
        map_kernel(_compute(module), tight)
    one = estimate(module, SN40L).kernels[0]
    assert one.sections == 1 and one.reconfigure_s == 0.0


def test_mapping_attr_round_trips() -> None:
    module = parse_module(_gemm(4, 64, 64))
    mapping = map_kernel(_compute(module), SN40L)
    assert MappingAttr.of(mapping).mapping() == mapping and not mapping.problems()
