"""The host fallback: ATen ops the chip has no lowering for run on the host CPU
(`rdu.host_call`, torch's CPU kernel), between kernels, with the host round
trip in the cost model; `host_ops=False` / `--no-host-ops` refuse them.

Every host op is torch's own kernel on the operands rducc computed, so the
results are compared with eager on the same inputs (an op fed by an on-chip
matmul is compared where its answer is unique: eigenvalues, |eigenvectors|).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from data_sized_op import positives
from test_mapping import parse_module

import rducc
from rducc.api import after
from rducc.errors import RduccError, UnsupportedOpsError
from rducc.passes.rdu_partition import RduPartition
from rducc.runtime.executor import GraphExecutor
from rducc.tools.cost_table import cost_table
from rducc.tools.report import report_dict


class Mixed(torch.nn.Module):
    """Host ops between on-chip ops: svd, eigh, qr, pinv, mode, histc,
    masked_scatter, segment_reduce, histogramdd (histc rducc decomposes itself)."""

    def forward(self, a, sym, x, mask, src, data, lengths, h):
        a = a * 2
        u, s, vh = torch.linalg.svd(a, full_matrices=False)
        w, v = torch.linalg.eigh(sym @ sym.T)
        q, r = torch.linalg.qr(a)
        p = torch.linalg.pinv(a)
        mv, mi = torch.mode(x, dim=1)
        hist = torch.histc(x, bins=4, min=0.0, max=4.0)
        ms = torch.masked_scatter(x, mask, src)
        seg = torch.segment_reduce(data, "sum", lengths=lengths)
        hv, _ = torch.mode(h, dim=0)
        hdd, edges = torch.histogramdd(data, bins=[3, 2])  # a list of tensors back: the bin edges
        return (u @ torch.diag(s) @ vh + 1, w * 0.5, v.abs(), (q @ r).sum(0), p * 2, mv + 1, mi, hist * 1,
                ms - 1, seg + 1, hv * 2, hdd + 1, edges[0] * 2, edges[1])


def _inputs() -> tuple[torch.Tensor, ...]:
    generator = torch.Generator().manual_seed(0)
    return (
        torch.randn(5, 3, generator=generator),
        torch.randn(4, 4, generator=generator),
        torch.randint(0, 4, (3, 6), generator=generator).float(),
        torch.rand(3, 6, generator=generator) > 0.5,
        torch.randn(18, generator=generator),
        torch.randn(6, 2, generator=generator),
        torch.tensor([2, 1, 3]),
        torch.randint(0, 3, (5, 4), generator=generator).to(torch.bfloat16),
    )


HOST_OPS = {
    "aten._linalg_svd.default": 1, "aten._linalg_eigh.default": 1, "aten.linalg_qr.default": 1,
    "aten.linalg_pinv.atol_rtol_tensor": 1, "aten.mode.default": 2, "aten.masked_scatter.default": 1,
    "aten.segment_reduce.default": 1, "aten._histogramdd_bin_edges.default": 1,
    "aten._histogramdd_from_bin_cts.default": 1,
}


@pytest.fixture(scope="module")
def mixed() -> torch.export.ExportedProgram:
    return torch.export.export(Mixed(), _inputs())


@pytest.fixture(scope="module")
def compiled(mixed: torch.export.ExportedProgram) -> dict[int, rducc.Program]:
    return {level: rducc.compile(mixed, opt_level=level) for level in (0, 2)}


class Small(torch.nn.Module):
    """A linear layer, an SVD and a mode between: the tp=2 and CLI cases."""

    def __init__(self) -> None:
        super().__init__()
        self.l1 = torch.nn.Linear(16, 32)
        self.l2 = torch.nn.Linear(32, 16)

    def forward(self, x):
        h = self.l1(x).relu()
        _, s, _ = torch.linalg.svd(h, full_matrices=False)
        v, i = torch.mode(h.round(), dim=1)
        return self.l2(h * s.sum()), v, i


@pytest.fixture(scope="module")
def small() -> tuple[Small, torch.Tensor, torch.export.ExportedProgram]:
    torch.manual_seed(0)
    model, x = Small(), torch.randn(4, 16)
    return model, x, torch.export.export(model, (x,))


def _assert_matches(got, expected) -> None:
    for index, (g, e) in enumerate(zip(got, expected)):
        assert g.dtype == e.dtype and g.shape == e.shape, index
        torch.testing.assert_close(g.float(), e.float(), rtol=1e-4, atol=1e-4, msg=f"output #{index}")


@pytest.mark.parametrize("opt_level", [0, 2])
def test_host_ops_among_chip_ops_match_eager(compiled: dict[int, rducc.Program], opt_level: int) -> None:
    program = compiled[opt_level]
    assert program.host_ops == HOST_OPS
    _assert_matches(program(*_inputs()), Mixed()(*_inputs()))
    report = program.report
    assert [h.name for h in report.host_calls].count("aten.mode.default") == 2
    target = program.target
    for cost in report.host_calls:  # the round trip, from the target's host figures
        moved = cost.bytes_to_host + cost.bytes_from_host
        assert moved > 0
        assert cost.modeled_time_s == pytest.approx(
            target.host_latency_s + moved / target.host_link_bandwidth + moved / target.host_bandwidth)
    kernels = sum(k.modeled_time_s for k in report.kernels)
    assert report.modeled_time_s == pytest.approx(kernels + report.host_s)
    data = report_dict(program.module, report)
    assert {h["name"] for h in data["host_calls"]} == set(HOST_OPS)
    assert "host ops          10 run on the host CPU" in cost_table(report)


def test_host_figures_are_ranged(compiled: dict[int, rducc.Program]) -> None:
    ranges = compiled[2].ranges()
    swings = {s.figure for s in ranges.headlines[0].tornado if s.swing > 0}
    assert {"host_latency_s", "host_bandwidth", "host_link_bandwidth"} <= swings


def test_tp2_runs_host_ops_on_every_rank(small) -> None:
    model, x, exported = small
    program = rducc.compile(exported, target="sn40l-8", opt_level=0,
                            passes=[after("rdu-canonicalize", RduPartition(tp=2, pp=1))])
    _assert_matches(program(x), model(x))
    assert program.host_ops == {"aten._linalg_svd.default": 1, "aten.mode.default": 1}


class Layer(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.linear = torch.nn.Linear(8, 8)

    def forward(self, x):
        h = self.linear(x)
        v, _ = torch.mode(h.round(), dim=1)
        return h + v[:, None]


class Stack(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.layers = torch.nn.ModuleList([Layer() for _ in range(3)])

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        return x


def test_host_ops_in_an_outlined_layer_run_at_each_call() -> None:
    torch.manual_seed(0)
    model, x = Stack(), torch.randn(4, 8)
    program = rducc.compile(model, (x,), opt_level=2)
    assert any(op.name == "func.func" and op.sym_name.data == "layer" for op in program.module.ops)
    _assert_matches([program(x)], [model(x)])
    assert program.host_ops == {"aten.mode.default": 3}
    assert len(program.report.host_calls) == 3


def test_host_ops_off_keeps_the_operator_error(small) -> None:
    with pytest.raises(UnsupportedOpsError, match=r"aten._linalg_svd.default: 1 use.*\n.*aten.mode.default"):
        rducc.compile(small[2], host_ops=False)


def test_rducc_warns_once_and_refuses_with_no_host_ops(small, tmp_path: Path,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    from rducc.tools.cli import main

    archive, out = tmp_path / "small.pt2", tmp_path / "out.mlir"
    torch.export.save(small[2], archive)
    assert main([str(archive), "-o", str(out), "-q", "-O0"]) == 0
    err = capsys.readouterr().err.splitlines()
    assert err == ["rducc: warning: 2 ops run on the host CPU (no chip lowering; operands and results cross the "
                   "host link): aten._linalg_svd.default x1, aten.mode.default x1"]
    assert 'rdu.host_call #rdu.aten<"aten::mode.default"' in out.read_text()
    out.unlink()
    assert main([str(archive), "--no-host-ops", "-o", str(out)]) == 1
    err = capsys.readouterr().err
    assert "rducc: error: the model uses 2 operators rducc cannot import" in err and "Traceback" not in err
    assert not out.exists()


def test_data_dependent_shapes_stay_refused() -> None:
    """An op of data-dependent result size with no static form (a custom op here; nonzero, masks,
    `unique` and `unique_consecutive` compile for the example's size, checked at run time:
    test_data_sizes.py) is not sent to the host: its result's size is not known."""
    class Positives(torch.nn.Module):
        def forward(self, x):
            return positives(x) * 2

    exported = torch.export.export(Positives(), (torch.tensor([[1.0, 0.0], [2.0, 2.0]]),))
    with pytest.raises(RduccError, match="data-dependent shape"):
        rducc.compile(exported)


MISDECLARED = """
builtin.module {
  func.func @forward(%x: tensor<3x4xf32> {rdu.input = "x"}) -> tensor<3xi32> {
    %v, %i = rdu.host_call #rdu.aten<"aten::mode.default", {dim = 1 : i64}>(%x) tensors ["self"]
        : (tensor<3x4xf32>) -> (tensor<3xf32>, tensor<3xi32>)
    func.return %i : tensor<3xi32>
  }
}
"""


def test_a_host_result_unlike_its_declared_type_is_an_error() -> None:
    executor = GraphExecutor(parse_module(MISDECLARED))
    with pytest.raises(RduccError, match=r"'rdu.host_call'.*result #1 is int64\[3\], but the program declares "
                                         r"int32\[3\]"):
        executor.run([np.zeros((3, 4), np.float32)], {})


FAILING = """
builtin.module {
  func.func @forward(%x: tensor<3x4xf32> {rdu.input = "x"}) -> tensor<3x4xf32> {
    %y = rdu.host_call #rdu.aten<"aten::addmv.default">(%x, %x, %x) tensors ["self", "mat", "vec"]
        : (tensor<3x4xf32>, tensor<3x4xf32>, tensor<3x4xf32>) -> tensor<3x4xf32>
    func.return %y : tensor<3x4xf32>
  }
}
"""


def test_a_failing_host_kernel_is_an_error() -> None:
    executor = GraphExecutor(parse_module(FAILING))
    with pytest.raises(RduccError, match=r"the host kernel of aten.addmv.default failed: "):
        executor.run([np.zeros((3, 4), np.float32)], {})
