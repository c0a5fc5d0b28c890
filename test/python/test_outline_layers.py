"""rdu-outline-layers end to end: tiny Llama's two decoder layers compile to one
@layer called twice; the program still matches eager, and its reports are
those of the same program with the calls inlined (-O2) or compiled without
outlining (-O0, where outlining changes no kernel)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch
from xdsl.dialects import func

import rducc
from rducc.dialects.tier import ComputeOp
from rducc.dialects.program import functions
from rducc.driver import import_exported
from rducc.pipeline import parse_passes, pipeline_text, run_passes
from rducc.model import kernel_timing, overlap_schedule
from rducc.model.cost_model import Report, estimate
from rducc.runtime.executor import GraphExecutor, to_numpy, weights_of
from rducc.runtime.interpreter import PlacedProgram
from rducc.targets import load_target

from outlining import inline_calls

SN40L = load_target("sn40l")


def _compile(program: torch.export.ExportedProgram, opt_level: int, outline: bool) -> rducc.Program:
    text = pipeline_text(opt_level)
    if not outline:
        text = text.replace("rdu-outline-layers,", "")
    return rducc.compile(program, opt_level=opt_level, passes=text)


def _totals(report: Report) -> tuple:
    return (report.modeled_time_s, report.flops, report.bytes_by_tier, report.sram_peak_bytes,
            report.sram_lower_bound_bytes, len(report.kernels))


@pytest.fixture(scope="module")
def tiny_llama(exported_small):
    model, inputs, program = exported_small["tiny_llama"]
    return model, inputs, program


@pytest.fixture(scope="module")
def outlined_o2(tiny_llama) -> rducc.Program:
    return _compile(tiny_llama[2], 2, outline=True)


def test_two_layers_become_one_callee_and_two_calls(outlined_o2):
    text = outlined_o2.mlir
    assert text.count("func.call @layer(") == 2
    assert text.count("func.func private @layer(") == 1
    assert 'rdu.outlined_from = "model.model.layers.0", rdu.calls = 2' in text
    callee = next(f for f in functions(outlined_o2.module) if f.sym_name.data == "layer")
    forward = next(f for f in functions(outlined_o2.module) if f.sym_name.data == "forward")
    assert any(isinstance(op, ComputeOp) for op in callee.walk())  # the layer is lowered once, in @layer
    assert not any(isinstance(op, func.CallOp) for op in callee.walk())
    assert sum(isinstance(op, ComputeOp) for op in forward.walk()) == 2  # the prologue and the LM head


def test_kernels_are_named_by_the_function_they_live_in(outlined_o2):
    """@layer's kernels are `layer[0].k0`, `layer[1].k0`, ... (the function and
    the call they run under) beside @forward's `k0`, in the report and in the
    kernel graph: every name once (before, @forward's and the layer's were
    both `k0`, then each call's `layer.k0` repeated)."""
    from rducc.tools.plots import costed_kernels, kernel_graph_dot

    callee = next(f for f in functions(outlined_o2.module) if f.sym_name.data == "layer")
    forward = next(f for f in functions(outlined_o2.module) if f.sym_name.data == "forward")
    calls = sum(isinstance(op, func.CallOp) for op in forward.walk())
    assert calls == 2
    in_layer = {f"layer[{call}].{op.sym_name.data}" for call in range(calls)
                for op in callee.walk() if isinstance(op, ComputeOp)}
    names = [kernel.name for kernel in estimate(outlined_o2.module, SN40L).kernels]
    assert in_layer and in_layer <= set(names)
    assert "k0" in names and "k1" in names
    assert len(names) == len(set(names)), names
    dot = kernel_graph_dot(outlined_o2.module, costed_kernels(outlined_o2.module))
    assert all(f'label="{name}\\n' in dot for name in in_layer | {"k0", "k1"}), dot


def test_run_names_index_each_functions_calls_once(outlined_o2):
    """Naming every run of the layer's kernels with one cache (`kernel_run_name(...,
    indices)`, as the cost model's schedule does) indexes @forward's calls once, by
    one walk of it, not one walk a run (quadratic in depth: the 80-layer 70B step's
    walk never finished), and gives the names `call_index` alone gives."""
    from rducc.dialects.program import call_index, call_indices, kernel_run_name
    from rducc.model.program_walk import walk_placed

    module = outlined_o2.module
    forward = next(f for f in functions(module) if f.sym_name.data == "forward")
    calls = [op for op in forward.walk() if isinstance(op, func.CallOp)]
    assert [call_indices(forward)[call] for call in calls] == [call_index(call) for call in calls] == [0, 1]
    runs = [r for r in walk_placed(module).kernels if r.calls]
    shared: dict[func.CallOp, int] = {}
    assert [kernel_run_name(r.op, r.calls, shared) for r in runs] == [kernel_run_name(r.op, r.calls) for r in runs]
    assert set(shared) == set(calls) and len(runs) >= len(calls)


def test_outlined_o2_matches_eager(tiny_llama, outlined_o2):
    model, inputs, _ = tiny_llama
    with torch.no_grad():
        want = model(*inputs)
    torch.testing.assert_close(outlined_o2(*inputs), want, rtol=1e-4, atol=1e-4)


def test_outlined_o2_reports_equal_its_inlined_program(tiny_llama, outlined_o2, monkeypatch):
    _, inputs, _ = tiny_llama
    inlined = inline_calls(outlined_o2.module)
    costed = []
    original = kernel_timing.kernel_work  # what the schedule asks of each kernel
    monkeypatch.setattr(overlap_schedule, "kernel_work",
                        lambda kernel, target: costed.append(kernel) or original(kernel, target))
    # kernel looping off: the calls then cost what the inline kernels cost (looping: test_kernel_looping.py)
    unlooped = dataclasses.replace(SN40L, kernel_looping=False)
    outlined_report = estimate(outlined_o2.module, unlooped)
    computes = sum(isinstance(op, ComputeOp) for op in outlined_o2.module.walk())
    assert len(costed) == computes < len(outlined_report.kernels)  # the callee is costed once, not per call
    assert _totals(outlined_report) == _totals(estimate(inlined, unlooped))
    feed = [i.numpy() for i in inputs]
    ran = PlacedProgram(outlined_o2.module).run(feed, outlined_o2.weights)
    ran_inlined = PlacedProgram(inlined).run(feed, outlined_o2.weights)
    np.testing.assert_array_equal(ran[0], ran_inlined[0])


def test_o0_reports_equal_the_non_outlined_program(tiny_llama):
    _, inputs, program = tiny_llama
    outlined, plain = _compile(program, 0, outline=True), _compile(program, 0, outline=False)
    assert "func.call @layer(" in outlined.mlir and "func.call" not in plain.mlir
    # kernel looping off: the calls then cost what the inline kernels cost; on, the calls'
    # kernels may loop (a loop of several kernels, when it pays: test_kernel_looping.py)
    unlooped = dataclasses.replace(SN40L, kernel_looping=False)
    assert _totals(estimate(outlined.module, unlooped)) == _totals(estimate(plain.module, unlooped))
    assert outlined.report.modeled_time_s <= plain.report.modeled_time_s
    torch.testing.assert_close(outlined(*inputs), plain(*inputs), rtol=0, atol=0)


def test_level1_executor_runs_the_calls(tiny_llama):
    """The graph executor (levels 1 and 2) runs an outlined @layer per call."""
    model, inputs, program = tiny_llama
    module = import_exported(program)
    run_passes(module, parse_passes("rdu-canonicalize,rdu-outline-layers,cse,rdu-fuse{level=2}"))
    assert sum(isinstance(op, func.CallOp) for op in module.walk()) == 2
    out = GraphExecutor(module).run([to_numpy(i) for i in inputs], weights_of(program))[0]
    with torch.no_grad():
        want = model(*inputs).numpy()
    np.testing.assert_allclose(out, want, rtol=1e-4, atol=1e-5)
