"""The torch.compile backend (issue 20, item 12): a second input shape, options=,
and inputs that require grad (training: test_dynamo_training.py)."""

from __future__ import annotations

import pytest
import torch

from rducc.errors import RduccError
from rducc.tools.dynamo import rducc_backend


def _model() -> torch.nn.Module:
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(8, 4), torch.nn.ReLU()).eval()


@pytest.fixture(autouse=True)
def _fresh_dynamo():
    torch._dynamo.reset()
    yield
    torch._dynamo.reset()


def test_each_input_shape_runs_and_matches_eager():
    model = _model()
    compiled = torch.compile(model, backend="rducc")
    with torch.no_grad():
        for rows in (2, 3, 5, 3):  # the second shape makes Dynamo pass symbolic sizes
            x = torch.randn(rows, 8)
            torch.testing.assert_close(compiled(x), model(x), rtol=1e-5, atol=1e-6)


def test_options_are_honoured():
    model = _model()
    graph = torch.fx.symbolic_trace(model)
    x = torch.randn(2, 8)
    with torch.no_grad():
        plain = rducc_backend(graph, [x], options={"opt_level": 0, "target": "sn40l-8"})
        fused = rducc_backend(graph, [x])
        torch.testing.assert_close(plain(x), model(x))
    [unfused_program] = plain.programs.values()
    [fused_program] = fused.programs.values()
    assert unfused_program.mlir.count("tier.compute ") > fused_program.mlir.count("tier.compute ") == 1
    assert "sn40l-8" in unfused_program.mlir and "sn40l-8" not in fused_program.mlir


@pytest.mark.parametrize(
    "options, mode, message",
    [
        ({"target": "sn50"}, None, "unknown target 'sn50'"),
        ({"opt_level": 7}, None, "opt_level must be 0, 1 or 2, got 7"),
        ({"opt_level": True}, None, "opt_level must be 0, 1 or 2, got True"),
        ({"f64": "round"}, None, "f64 must be one of emulate, refuse, demote"),
        ({"optlevel": 1}, None, "unknown rducc backend option(s) 'optlevel'"),
        (None, "max-autotune", "the rducc backend has no mode 'max-autotune'"),
    ],
)
def test_bad_options_are_refused(options, mode, message):
    graph = torch.fx.symbolic_trace(_model())
    with pytest.raises(RduccError, match=message.replace("(", r"\(").replace(")", r"\)")):
        rducc_backend(graph, [torch.randn(2, 8)], options=options, mode=mode)


def test_bad_option_through_torch_compile():
    compiled = torch.compile(_model(), backend="rducc", options={"opt_level": 9})
    with torch.no_grad(), pytest.raises(Exception, match="opt_level must be 0, 1 or 2, got 9"):
        compiled(torch.randn(2, 8))


def test_a_graph_compiled_for_inference_refuses_inputs_that_require_grad():
    graph = torch.fx.symbolic_trace(_model())
    with torch.no_grad():
        run = rducc_backend(graph, [torch.randn(2, 8)])
    with pytest.raises(RduccError, match="requires grad .* rducc compiles inference only"):
        run(torch.randn(2, 8, requires_grad=True))
