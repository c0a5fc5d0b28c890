"""Kernel looping in the cost model (compiler/model/kernel_looping.py): consecutive calls
of a one-kernel layer, each fed by the one before, launch once; anything else
does not loop; the runtime runs the same program either way."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch
from torch import nn
from xdsl.dialects import func
from xdsl.dialects.builtin import IntegerAttr, i64

import rducc
from rducc.api import after
from rducc.dialects.tier import ComputeOp
from rducc.errors import RduccError
from rducc.model.cost_model import estimate
from rducc.runtime.interpreter import PlacedProgram
from rducc.dialects.program import functions
from rducc.passes.rdu_partition import RduPartition
from rducc.targets import load_target
from rducc.tools.cost_table import cost_table

SN40L = load_target("sn40l")
NO_LOOP = dataclasses.replace(SN40L, kernel_looping=False)
SN40L_8 = load_target("sn40l-8")


class Block(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(16, 16)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + torch.relu(self.fc(x))


class Stack(nn.Module):
    """Three identical layers; `between` puts an op of its own after the first."""

    def __init__(self, between: bool = False) -> None:
        super().__init__()
        self.layers = nn.ModuleList(Block() for _ in range(3))
        self.between = between

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for index, layer in enumerate(self.layers):
            x = layer(x)
            if self.between and index == 0:
                x = x * 2.0
        return x


@pytest.fixture(scope="module")
def stacks() -> dict[bool, tuple[nn.Module, torch.Tensor, rducc.Program]]:
    torch.manual_seed(0)
    x = torch.randn(4, 16)
    built = {}
    for between in (False, True):
        model = Stack(between).eval()
        built[between] = (model, x, rducc.compile(model, (x,), opt_level=2))
    return built


def _forward(module) -> func.FuncOp:
    return next(f for f in functions(module) if f.sym_name.data == "forward")


def _calls(module) -> list[func.CallOp]:
    return [op for op in _forward(module).body.block.ops if isinstance(op, func.CallOp)]


def test_three_calls_launch_once_with_looping(stacks) -> None:
    _, _, program = stacks[False]
    module = program.module
    assert len(_calls(module)) == 3 and not any(isinstance(op, ComputeOp) for op in _forward(module).walk())
    looped, plain = estimate(module, SN40L), estimate(module, NO_LOOP)
    assert len(looped.kernels) == len(plain.kernels) == 3  # the one-kernel layer, once a call
    assert looped.kernel_launches == 1 and looped.launches_saved == 2
    assert plain.kernel_launches == 3 and plain.launches_saved == 0
    assert [k.looped for k in looped.kernels] == [False, True, True]
    assert sum(k.launch_s for k in looped.kernels) == pytest.approx(SN40L.kernel_launch_s)
    assert sum(k.launch_s for k in plain.kernels) == pytest.approx(3 * SN40L.kernel_launch_s)
    (loop,) = looped.loops
    assert (loop.callee, loop.calls, loop.kernels, loop.looped, loop.launches_saved) == ("layer", 3, 1, True, 2)
    first = plain.kernels[0]
    # a later iteration saves the launch and the DMA start-up; its pipeline fill
    # (stage and hop latencies, rdu-map-units) is paid every iteration
    assert loop.saved_s == pytest.approx(2 * (first.launch_s + first.fill_s - first.pipeline_s))
    assert plain.modeled_time_s - looped.modeled_time_s == pytest.approx(loop.saved_s)
    (off,) = plain.loops
    assert not off.looped and "off" in off.reason
    # the same bytes and FLOPs: only launch and DMA start-up go
    assert looped.bytes_by_tier == plain.bytes_by_tier and looped.flops == plain.flops
    roofline_s = looped.hbm_bytes / SN40L.hbm_bandwidth
    assert roofline_s < looped.modeled_time_s < plain.modeled_time_s
    assert "3 calls of @layer as one loop: 2 launches saved" in cost_table(looped)


@pytest.mark.parametrize("unfed, loop_calls", [((1,), [2]), ((1, 2), [])], ids=["second", "second-and-third"])
def test_a_call_not_fed_by_the_previous_one_is_not_looped(stacks, unfed, loop_calls) -> None:
    """A call that reads the first call's input rather than the previous call's
    result starts a new run (the program still verifies: same types)."""
    module = stacks[False][2].module.clone()
    calls = _calls(module)
    carried = list(calls[1].arguments).index(calls[0].res[0])  # where a layer reads its input
    for index in unfed:
        calls[index].operands[carried] = calls[0].arguments[carried]
    module.verify()
    report = estimate(module, SN40L)
    assert [loop.calls for loop in report.loops] == loop_calls
    assert report.kernel_launches == 3 - sum(calls - 1 for calls in loop_calls)
    assert [k.looped for k in report.kernels][:2] == [False, False]  # the first two never share a loop


@pytest.mark.parametrize("staged, loop_calls", [((1,), []), ((1, 2), [2])], ids=["middle", "last-two"])
def test_calls_on_different_pipeline_stages_do_not_share_a_loop(stacks, staged, loop_calls) -> None:
    module = stacks[False][2].module.clone()
    calls = _calls(module)
    for index in staged:
        calls[index].attributes["rdu.stage"] = IntegerAttr(1, i64)
    assert [loop.calls for loop in estimate(module, SN40L).loops] == loop_calls


def test_an_op_between_calls_breaks_the_run(stacks) -> None:
    module = stacks[True][2].module
    kinds = [op.name for op in _forward(module).body.block.ops if op.name in ("func.call", "tier.compute")]
    assert kinds == ["func.call", "tier.compute", "func.call", "func.call"]  # x * 2 is a kernel between
    report = estimate(module, SN40L)
    (loop,) = report.loops
    assert (loop.calls, loop.launches_saved) == (2, 1)
    assert [k.looped for k in report.kernels] == [False, False, False, True]
    assert report.kernel_launches == 3


def test_a_layer_of_several_kernels_loops_only_when_its_configuration_loads_pay(exported_small) -> None:
    """At -O1 tiny Llama's layer is several kernels of as many configurations. Where
    the units cannot hold them side by side (60 PMUs: they need 67), a loop over them
    loads each one's configuration every iteration in place of its launch: at the top
    of the load's range (20 us) a load costs more than the launch and DMA start-up it
    saves, so every kernel keeps its launch. On sn40l's units they are held as one
    configuration (compiler/model/shared_configuration.py): no load an iteration, at
    any load's cost, and the loop is launched once."""
    program = rducc.compile(exported_small["tiny_llama"][2], opt_level=1)
    plain = estimate(program.module, NO_LOOP)
    top = SN40L.figure("reconfigure_s").high
    costly = estimate(program.module, dataclasses.replace(SN40L, reconfigure_s=top, pmus=60))
    (loop,) = costly.loops
    assert loop.calls == 2 and loop.kernels > 1 and top > SN40L.kernel_launch_s + SN40L.dma_latency_s
    assert not loop.looped and "costs more than the launches" in loop.reason
    assert "not one configuration" in loop.not_shared and "more than target sn40l's 1040 and 60" in loop.not_shared
    assert costly.kernel_launches == len(costly.kernels) and costly.launches_saved == 0
    assert costly.modeled_time_s == plain.modeled_time_s
    held = estimate(program.module, dataclasses.replace(SN40L, reconfigure_s=top))
    for report in (program.report, held):
        (loop,) = report.loops
        assert loop.looped and loop.shared == loop.kernels and loop.reloads == 0
        assert report.launches_saved == 2 * loop.kernels - 1
        assert report.kernel_launches == len(report.kernels) - report.launches_saved
        assert 0 < loop.saved_s and report.modeled_time_s < plain.modeled_time_s
        assert all(k.reconfigure_s == 0 and k.launch_s == 0 for k in report.kernels if k.looped)


def test_tiny_llama_runs_the_same_program_with_looping_on_and_off(exported_small) -> None:
    model, inputs, exported = exported_small["tiny_llama"]
    looping, plain = rducc.compile(exported, target=SN40L), rducc.compile(exported, target=NO_LOOP)
    strip = lambda text: "\n".join(line for line in text.splitlines() if "rdu.target" not in line)  # noqa: E731
    assert strip(looping.mlir) == strip(plain.mlir)
    np.testing.assert_array_equal(looping(*inputs).numpy(), plain(*inputs).numpy())
    with torch.no_grad():
        torch.testing.assert_close(looping(*inputs), model(*inputs), rtol=1e-4, atol=1e-4)
    assert looping.report.launches_saved == 1 and plain.report.launches_saved == 0
    assert looping.report.modeled_time_s < plain.report.modeled_time_s
    feed = [i.numpy() for i in inputs]
    ran = PlacedProgram(looping.module).run(feed, looping.weights)
    np.testing.assert_array_equal(ran[0], plain(*inputs).numpy())


def test_looping_keeps_collectives_behind_the_next_iterations_weight_reads(exported_small) -> None:
    """tp=2 tiny Llama on sn40l-8: the layer's all-reduces still hide behind the
    next call's weight reads when that call is a loop iteration. (HBM 100x slower:
    tiny Llama's few weights make its mapped layer compute-bound on sn40l-8 itself,
    and reads that are not the bottleneck hide nothing.)"""
    slow_hbm = dataclasses.replace(SN40L_8, hbm_bandwidth=SN40L_8.hbm_bandwidth / 100)
    program = rducc.compile(exported_small["tiny_llama"][2], target=slow_hbm,
                            passes=[after("rdu-canonicalize", RduPartition(tp=2))])
    looped, plain = program.report, estimate(program.module, dataclasses.replace(slow_hbm, kernel_looping=False))
    assert looped.launches_saved == 1
    second = next(k for k in looped.kernels if k.looped)
    assert second.link_s > 0 and second.overlap_s > 0
    assert second.overlap_s == pytest.approx(plain.kernels[looped.kernels.index(second)].overlap_s)
    assert looped.modeled_time_s < plain.modeled_time_s


def test_kernel_looping_must_be_true_or_false(tmp_path) -> None:
    path = tmp_path / "chip.toml"
    path.write_text('inherits = "sn40l"\nname = "chip"\nkernel_looping = 1\n')
    with pytest.raises(RduccError, match="'kernel_looping' must be true or false"):
        load_target(str(path))
    path.write_text('inherits = "sn40l"\nname = "chip"\nkernel_looping = false\n')
    assert load_target(str(path)).kernel_looping is False and SN40L.kernel_looping is True
