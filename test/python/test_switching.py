"""Model switching as a prediction (compiler/model/switching.py): from the program's
residency plan and each target's DDR / host-link figures, not the paper's ratios."""

from __future__ import annotations

import pytest
from test_mapping import parse_module

from rducc.errors import RduccError
from rducc.model.switching import copy_bandwidth, switch_time
from rducc.targets import load_target

W, E = "4096x4096xbf16", "1024x4096xbf16"


def plan(n: int) -> str:
    """One kernel `y = x @ w` of [1, 4096] by a [4096, n] weight in HBM, beside a
    [1024, 4096] table the plan leaves in DDR."""
    w, y = f"4096x{n}xbf16", f"1x{n}xbf16"
    return f"""
builtin.module attributes {{rdu.level = #rdu<level memory>}} {{
  tier.global @w in hbm : tensor<{w}>
  tier.global @e in ddr : tensor<{E}>
  func.func @forward(%x: !tier.buffer<hbm, 1x4096xbf16> {{rdu.input = "x"}}) -> !tier.buffer<hbm, {y}> {{
    %w = tier.get_global @w : !tier.buffer<hbm, {w}>
    %xs = tier.alloc : !tier.buffer<sram, 1x4096xbf16>
    %ws = tier.alloc : !tier.buffer<sram, {w}>
    %ys = tier.alloc : !tier.buffer<sram, {y}>
    %yh = tier.alloc : !tier.buffer<hbm, {y}>
    tier.dma %x -> %xs : !tier.buffer<hbm, 1x4096xbf16> -> !tier.buffer<sram, 1x4096xbf16>
    tier.dma %w -> %ws : !tier.buffer<hbm, {w}> -> !tier.buffer<sram, {w}>
    tier.compute "k0" ins(%xs, %ws : !tier.buffer<sram, 1x4096xbf16>, !tier.buffer<sram, {w}>) outs(%ys : !tier.buffer<sram, {y}>) {{
    ^bb0(%a: tensor<1x4096xbf16>, %b: tensor<{w}>):
      %c = rdu.matmul %a, %b : tensor<1x4096xbf16>, tensor<{w}> -> tensor<{y}>
      rdu.yield %c : tensor<{y}>
    }}
    tier.dma %ys -> %yh : !tier.buffer<sram, {y}> -> !tier.buffer<hbm, {y}>
    func.return %yh : !tier.buffer<hbm, {y}>
  }}
}}
"""


PLAN = plan(4096)


def test_switch_time_is_the_plans_hbm_bytes_over_each_targets_copy_path() -> None:
    """8 MiB of weights in HBM (copied at a switch), 8 MiB left in DDR (not), one kernel
    to configure; sn40l-8 copies from DDR, a DGX from host memory over each GPU's PCIe."""
    module = parse_module(plan(1024))  # its kernel fits a GPU's units too
    rdu, h100, a100 = (load_target(n) for n in ("sn40l-8", "dgx-h100", "dgx-a100"))
    switch = switch_time(module, rdu)
    assert switch.hbm_bytes_per_socket == 4096 * 1024 * 2 and switch.stays_in_ddr_bytes == 1024 * 4096 * 2
    assert switch.copy_bandwidth == rdu.ddr_bandwidth * rdu.ddr_efficiency and switch.kernels == 1
    assert switch.switch_s == pytest.approx(4096 * 1024 * 2 / switch.copy_bandwidth + rdu.dma_latency_s
                                            + rdu.reconfigure_s)
    # a GPU node: each GPU over its own PCIe link (datasheet), not the paper's node figure
    assert copy_bandwidth(h100) == h100.host_link_bandwidth * h100.ddr_efficiency != h100.ddr_bandwidth
    gpu = switch_time(module, h100)
    assert gpu.copy_s == pytest.approx(4096 * 1024 * 2 / (64e9 * h100.ddr_efficiency))
    # the prediction: PCIe Gen5 x16 a GPU against DDR a socket is a few x, not the paper's 15x
    assert 1 < gpu.copy_s / switch.copy_s < 15
    assert switch_time(module, a100).copy_s == pytest.approx(2 * gpu.copy_s)  # Gen4 is half of Gen5


def test_a_program_for_other_units_is_named_not_a_traceback() -> None:
    """A program whose kernel has no room on a target's units (its 32 MiB weight on a
    DGX A100's 108 SMs) is an error naming the target, not a mapping traceback."""
    with pytest.raises(RduccError, match="model switching: the program's kernels do not fit target dgx-a100"):
        switch_time(parse_module(PLAN), load_target("dgx-a100"))


def _kernel(name: str, a: str, b: str, out: str, n: int) -> str:
    """A one-matmul kernel `out = a @ b` of [1, 4096] by [4096, n]."""
    return f"""
    tier.compute "{name}" ins(%{a}, %{b} : !tier.buffer<sram, 1x4096xbf16>, !tier.buffer<sram, 4096x{n}xbf16>) outs(%{out} : !tier.buffer<sram, 1x{n}xbf16>) {{
    ^bb0(%a: tensor<1x4096xbf16>, %b: tensor<4096x{n}xbf16>):
      %c = rdu.matmul %a, %b : tensor<1x4096xbf16>, tensor<4096x{n}xbf16> -> tensor<1x{n}xbf16>
      rdu.yield %c : tensor<1x{n}xbf16>
    }}"""


REPEATED = f"""
builtin.module attributes {{rdu.level = #rdu<level memory>}} {{
  tier.global @w in hbm : tensor<{W}>
  tier.global @n in hbm : tensor<4096x1024xbf16>
  func.func @forward(%x: !tier.buffer<hbm, 1x4096xbf16> {{rdu.input = "x"}}) -> !tier.buffer<hbm, 1x1024xbf16> {{
    %w = tier.get_global @w : !tier.buffer<hbm, {W}>
    %n = tier.get_global @n : !tier.buffer<hbm, 4096x1024xbf16>
    %xs = tier.alloc : !tier.buffer<sram, 1x4096xbf16>
    %ws = tier.alloc : !tier.buffer<sram, {W}>
    %ns = tier.alloc : !tier.buffer<sram, 4096x1024xbf16>
    %ys = tier.alloc : !tier.buffer<sram, 1x4096xbf16>
    %zs = tier.alloc : !tier.buffer<sram, 1x4096xbf16>
    %os = tier.alloc : !tier.buffer<sram, 1x1024xbf16>
    %oh = tier.alloc : !tier.buffer<hbm, 1x1024xbf16>
    tier.dma %x -> %xs : !tier.buffer<hbm, 1x4096xbf16> -> !tier.buffer<sram, 1x4096xbf16>
    tier.dma %w -> %ws : !tier.buffer<hbm, {W}> -> !tier.buffer<sram, {W}>
    tier.dma %n -> %ns : !tier.buffer<hbm, 4096x1024xbf16> -> !tier.buffer<sram, 4096x1024xbf16>
    {_kernel("k0", "xs", "ws", "ys", 4096)}
    {_kernel("k1", "ys", "ws", "zs", 4096)}
    {_kernel("k2", "zs", "ns", "os", 1024)}
    tier.dma %os -> %oh : !tier.buffer<sram, 1x1024xbf16> -> !tier.buffer<hbm, 1x1024xbf16>
    func.return %oh : !tier.buffer<hbm, 1x1024xbf16>
  }}
}}
"""


def test_a_switch_loads_each_distinct_configuration_once_and_none_the_units_hold() -> None:
    """Three kernels, the first two one configuration (the same matmul on the same
    types): a switch pays two configuration loads, not three. Switched to from PLAN,
    whose one kernel is that matmul too (the units hold it), one; PLAN switched to
    from this program (its last kernel another matmul), one, and from PLAN, none."""
    module, plan, target = parse_module(REPEATED), parse_module(PLAN), load_target("sn40l")
    switch = switch_time(module, target)
    assert switch.configure_s == pytest.approx(2 * target.reconfigure_s)  # the per-kernel rule: 3
    assert (switch.kernels, switch.loads) == (3, 2)
    assert switch_time(module, target, after=plan).loads == 1
    assert switch_time(plan, target, after=module).loads == 1
    assert switch_time(plan, target, after=plan).loads == 0
