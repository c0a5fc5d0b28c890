"""The overlap schedule (compiler/model/overlap_schedule.py): a collective runs
beside a kernel only where the schedule places them side by side."""

from __future__ import annotations

import pytest
from test_mapping import parse_module

from rducc.model.cost_model import estimate
from rducc.model.kernel_timing import collective_cost
from rducc.model.overlap_schedule import schedule
from rducc.model.program_walk import walk_placed
from rducc.targets import load_target

TARGET = load_target("sn40l-8")


def _two_kernels(second_reads_first: bool) -> str:
    """k0: x @ w0 then an all-reduce over 8 sockets; k1: (k0's result or y) @ w1."""
    a, w, y = "16x4096xbf16", "4096x4096xbf16", "16x4096xbf16"
    k1_in = "%ys" if second_reads_first else "%zs"
    return f"""
builtin.module attributes {{rdu.level = #rdu<level memory>}} {{
  func.func @forward(%x: !tier.buffer<hbm, {a}> {{rdu.input = "x"}}, %z: !tier.buffer<hbm, {a}> {{rdu.input = "z"}},
                     %w0: !tier.buffer<hbm, {w}> {{rdu.input = "w0"}}, %w1: !tier.buffer<hbm, {w}> {{rdu.input = "w1"}})
      -> (!tier.buffer<hbm, {y}>, !tier.buffer<hbm, {y}>) {{
    %xs = tier.alloc : !tier.buffer<sram, {a}>
    %zs = tier.alloc : !tier.buffer<sram, {a}>
    %w0s = tier.alloc : !tier.buffer<sram, {w}>
    %w1s = tier.alloc : !tier.buffer<sram, {w}>
    %ys = tier.alloc : !tier.buffer<sram, {y}>
    %vs = tier.alloc : !tier.buffer<sram, {y}>
    %yh = tier.alloc : !tier.buffer<hbm, {y}>
    %vh = tier.alloc : !tier.buffer<hbm, {y}>
    tier.dma %x -> %xs : !tier.buffer<hbm, {a}> -> !tier.buffer<sram, {a}>
    tier.dma %w0 -> %w0s : !tier.buffer<hbm, {w}> -> !tier.buffer<sram, {w}>
    tier.compute "k0" ins(%xs, %w0s : !tier.buffer<sram, {a}>, !tier.buffer<sram, {w}>) outs(%ys : !tier.buffer<sram, {y}>) {{
    ^bb0(%p: tensor<{a}>, %q: tensor<{w}>):
      %c = rdu.matmul %p, %q : tensor<{a}>, tensor<{w}> -> tensor<{y}>
      %r = rdu.all_reduce %c group 8 : tensor<{y}> -> tensor<{y}>
      rdu.yield %r : tensor<{y}>
    }}
    tier.dma %ys -> %yh : !tier.buffer<sram, {y}> -> !tier.buffer<hbm, {y}>
    tier.dma %z -> %zs : !tier.buffer<hbm, {a}> -> !tier.buffer<sram, {a}>
    tier.dma %w1 -> %w1s : !tier.buffer<hbm, {w}> -> !tier.buffer<sram, {w}>
    tier.compute "k1" ins({k1_in}, %w1s : !tier.buffer<sram, {a}>, !tier.buffer<sram, {w}>) outs(%vs : !tier.buffer<sram, {y}>) {{
    ^bb0(%p: tensor<{a}>, %q: tensor<{w}>):
      %c = rdu.matmul %p, %q : tensor<{a}>, tensor<{w}> -> tensor<{y}>
      rdu.yield %c : tensor<{y}>
    }}
    tier.dma %vs -> %vh : !tier.buffer<sram, {y}> -> !tier.buffer<hbm, {y}>
    func.return %yh, %vh : !tier.buffer<hbm, {y}>, !tier.buffer<hbm, {y}>
  }}
}}
"""


@pytest.mark.parametrize("second_reads_first", [False, True])
def test_a_collective_runs_beside_only_the_kernel_that_does_not_wait_for_it(second_reads_first: bool) -> None:
    """k0's all-reduce (L s on the links) and k1 (P1 s on the chip): k1 reading
    something else starts when k0's pipeline ends and runs beside the all-reduce
    (the program takes P0 + max(P1, L)); k1 reading k0's result waits for it
    (P0 + L + P1; no SRAM room is known here, so no weight read runs early)."""
    module = parse_module(_two_kernels(second_reads_first))
    walk = walk_placed(module)
    costs, placed = schedule(walk.kernels, TARGET)
    link = collective_cost(next(op for op in module.walk() if op.name == "rdu.all_reduce"), TARGET)[0]
    assert link > 0 and costs[0].link_s == pytest.approx(link)
    p0 = placed[0].end_s - placed[0].start_s
    p1 = placed[1].end_s - placed[1].start_s
    total = sum(c.modeled_time_s for c in costs)
    assert estimate(module, TARGET).modeled_time_s == pytest.approx(total)
    assert placed[0].link_start_s == pytest.approx(placed[0].end_s)  # the collective follows its kernel
    if second_reads_first:
        assert not placed[1].independent and placed[1].start_s == pytest.approx(placed[0].link_end_s)
        assert total == pytest.approx(p0 + link + p1) and costs[1].overlap_s == pytest.approx(0, abs=1e-15)
    else:
        assert placed[1].independent and placed[1].start_s == pytest.approx(placed[0].end_s)
        assert total == pytest.approx(p0 + max(p1, link))
        assert costs[1].overlap_s == pytest.approx(min(p1, link))


def test_a_ring_step_between_modules_pays_the_switch_hops() -> None:
    """sn40l-8 is 4 modules of 2 sockets: an all-reduce over 2 sockets (one module)
    is one 1-hop step; over 8, recursive doubling's first step is 1 hop and the
    next two cross modules (cross_module_hops each)."""
    from xdsl.dialects.builtin import TensorType, bf16
    from xdsl.dialects.test import TestOp

    from rducc.dialects.rdu.collectives import AllReduceOp

    value = TestOp(result_types=[TensorType(bf16, [1, 64])]).results[0]
    hop, size = TARGET.link_latency_s, 128 / TARGET.link_bandwidth
    assert collective_cost(AllReduceOp(value, 2), TARGET)[0] == pytest.approx(min(hop + size, 2 * (hop + size / 2)))
    cross = TARGET.cross_module_hops * hop
    assert TARGET.cross_module_hops == 2
    assert collective_cost(AllReduceOp(value, 8), TARGET)[0] == pytest.approx(
        min(hop + 2 * cross + 3 * size, 14 * (cross + size / 8)))
    flat = TARGET.with_value("module_sockets", 1).with_value("cross_module_hops", 1)
    assert collective_cost(AllReduceOp(value, 8), flat)[0] == pytest.approx(3 * (hop + size))


def _gather_then_layer_calls() -> str:
    """k0 all-gathers a weight (8 parts) into %g; @layer (one matmul) is called first on
    %w1, which the gather does not make, then on %g (ZeRO stage 3's prefetch order)."""
    a, w, part = "16x4096xbf16", "4096x4096xbf16", "512x4096xbf16"
    return f"""
builtin.module attributes {{rdu.level = #rdu<level memory>}} {{
  func.func @forward(%x: !tier.buffer<hbm, {a}> {{rdu.input = "x"}}, %p: !tier.buffer<hbm, {part}> {{rdu.input = "p"}},
                     %w1: !tier.buffer<hbm, {w}> {{rdu.input = "w1"}}) -> !tier.buffer<hbm, {a}> {{
    %ps = tier.alloc : !tier.buffer<sram, {part}>
    %gs = tier.alloc : !tier.buffer<sram, {w}>
    %g = tier.alloc : !tier.buffer<hbm, {w}>
    tier.dma %p -> %ps : !tier.buffer<hbm, {part}> -> !tier.buffer<sram, {part}>
    tier.compute "k0" ins(%ps : !tier.buffer<sram, {part}>) outs(%gs : !tier.buffer<sram, {w}>) {{
    ^bb0(%q: tensor<{part}>):
      %r = rdu.all_gather %q dim 0 group 8 : tensor<{part}> -> tensor<{w}>
      rdu.yield %r : tensor<{w}>
    }}
    tier.dma %gs -> %g : !tier.buffer<sram, {w}> -> !tier.buffer<hbm, {w}>
    %y0 = func.call @layer(%x, %w1) : (!tier.buffer<hbm, {a}>, !tier.buffer<hbm, {w}>) -> !tier.buffer<hbm, {a}>
    %y1 = func.call @layer(%y0, %g) : (!tier.buffer<hbm, {a}>, !tier.buffer<hbm, {w}>) -> !tier.buffer<hbm, {a}>
    func.return %y1 : !tier.buffer<hbm, {a}>
  }}
  func.func private @layer(%h: !tier.buffer<hbm, {a}>, %v: !tier.buffer<hbm, {w}> {{rdu.weight}})
      -> !tier.buffer<hbm, {a}> attributes {{rdu.outlined_from = "layers.0", rdu.calls = 2 : i64}} {{
    %hs = tier.alloc : !tier.buffer<sram, {a}>
    %vs = tier.alloc : !tier.buffer<sram, {w}>
    %os = tier.alloc : !tier.buffer<sram, {a}>
    %o = tier.alloc : !tier.buffer<hbm, {a}>
    tier.dma %h -> %hs : !tier.buffer<hbm, {a}> -> !tier.buffer<sram, {a}>
    tier.dma %v -> %vs : !tier.buffer<hbm, {w}> -> !tier.buffer<sram, {w}>
    tier.compute "k1" ins(%hs, %vs : !tier.buffer<sram, {a}>, !tier.buffer<sram, {w}>) outs(%os : !tier.buffer<sram, {a}>) {{
    ^bb0(%m: tensor<{a}>, %n: tensor<{w}>):
      %c = rdu.matmul %m, %n : tensor<{a}>, tensor<{w}> -> tensor<{a}>
      rdu.yield %c : tensor<{a}>
    }}
    tier.dma %os -> %o : !tier.buffer<sram, {a}> -> !tier.buffer<hbm, {a}>
    func.return %o : !tier.buffer<hbm, {a}>
  }}
}}
"""


@pytest.mark.parametrize("room", [2**30, 0])
def test_a_layer_call_runs_beside_a_gather_it_does_not_read(room: int) -> None:
    """The first call of @layer reads %x and %w1, not the weight k0 gathers: with SRAM
    room for the gather's landing buffer it starts when k0's pipeline ends and runs
    beside the gather; the second call reads %g and waits for it. Without room the
    first call waits too (the old, serial order)."""
    module = parse_module(_gather_then_layer_calls())
    walk = walk_placed(module)
    assert [len(k.calls) for k in walk.kernels] == [0, 1, 1]
    costs, placed = schedule(walk.kernels, TARGET, room)
    gather = placed[0]
    assert gather.link_end_s > gather.end_s  # the gather takes link time
    if room:
        assert placed[1].independent and placed[1].start_s == pytest.approx(gather.end_s)
    else:
        assert not placed[1].independent and placed[1].start_s == pytest.approx(gather.link_end_s)
    assert placed[2].start_s >= gather.link_end_s - 1e-15  # the second call reads the gathered weight
