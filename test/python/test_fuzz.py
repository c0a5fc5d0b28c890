"""A fixed-seed run of bench/fuzz.py: mutated programs, archives, weights, inputs
and target files, run through the tools in-process, never give an internal
error, a traceback, a hang or a partial output (issue 20's red-team classes)."""

from __future__ import annotations

import importlib.util
import logging
import logging.handlers
import sys
from collections import Counter
from pathlib import Path

import error_cases
import pytest
from conftest import REPO

_SPEC = importlib.util.spec_from_file_location("rducc_bench_fuzz", REPO / "bench" / "fuzz.py")
fuzz = importlib.util.module_from_spec(_SPEC)
sys.modules[_SPEC.name] = fuzz  # dataclasses look their module up
_SPEC.loader.exec_module(fuzz)

BAD = ("internal", "hang", "partial", "noisy", "accepted-garbage")
CASES = 120


@pytest.fixture(scope="module")
def seeds(tmp_path_factory) -> fuzz.Seeds:
    return fuzz.build_seeds(tmp_path_factory.mktemp("fuzz"), ("mlp",))


def test_mutated_inputs_are_refused_cleanly_or_run(seeds):
    outcomes = fuzz.fuzz(seeds, seed=20, cases=CASES, limit_s=120.0)
    bad = [o for o in outcomes if o.outcome in BAD]
    assert not bad, "\n".join(
        f"[{o.outcome}] {o.case.tool} {o.case.kind} | {o.case.mutation}\n{o.stderr[-600:]}" for o in bad)
    counts = Counter(o.outcome for o in outcomes)
    # the run reached every tool and both verdicts: refusals and real runs
    assert counts["clean"] >= CASES // 4 and counts["ok"] >= 5, fuzz.summary(outcomes)
    assert {o.case.tool for o in outcomes} == {"rducc", "rducc-opt", "rducc-run"}


def test_the_classifier_sees_what_it_must(seeds, monkeypatch):
    """The fuzzer's verdicts are not vacuous: a crash is `internal`, output left
    behind `partial`, a refusal `clean`."""
    case = fuzz.Case("x", "none", "rducc-run", [str(seeds.directory / "mlp.mlir"), "--simulate"])
    assert fuzz.run_case(case, seeds.directory, 120.0).outcome == "ok"
    missing = fuzz.Case("x", "none", "rducc-run", [str(seeds.directory / "missing.mlir"), "--simulate"])
    assert fuzz.run_case(missing, seeds.directory, 120.0).outcome == "clean"
    from rducc.tools import run

    def crash(*_):
        raise KeyError("a bug")

    monkeypatch.setattr(run, "_run", crash)
    assert fuzz.run_case(case, seeds.directory, 120.0).outcome == "internal"

    def leave_output(args):
        (seeds.directory / "out.npz").write_bytes(b"half")
        raise run.RduccError("refused after writing")

    monkeypatch.setattr(run, "_run", leave_output)
    assert fuzz.run_case(case, seeds.directory, 120.0).outcome == "partial"


def test_torch_tracebacks_stay_off_stderr(tmp_path, capfd):
    """An archive whose graph feeds a weight of the wrong shape fails in torch's
    tracer, which logs its own traceback ("failed while attempting to run meta")
    before raising: rducc reports the error as one line, and the log is kept."""
    archive = tmp_path / "edited.pt2"
    error_cases._edited_json(archive, "models/model.json",
                             lambda model: model["graph_module"]["graph"]["nodes"][2]["inputs"][1]["arg"]
                             ["as_tensor"].update(name="p_fc1_weight"))
    handler = logging.handlers.BufferingHandler(10_000)  # keeps every record
    torch_logger = logging.getLogger("torch._subclasses.fake_tensor")
    torch_logger.addHandler(handler)
    try:
        from rducc.tools.cli import main

        assert main([str(archive), "-o", str(tmp_path / "out.mlir")]) == 1
    finally:
        torch_logger.removeHandler(handler)
    assert [r for r in handler.buffer if r.exc_info] == []
    err = capfd.readouterr().err
    assert "Traceback" not in err and err.count("rducc: error:") == 1, err
    assert sorted(p.name for p in tmp_path.iterdir()) == [Path(archive).name]



def test_a_stack_trace_that_is_not_text_is_no_location():
    """Found by the fuzzer: an archive whose node `stack_trace` was edited to a
    number crashed rducc's message about torch's failure (TypeError, exit 70);
    the trace is metadata only, so it gives no location."""
    import torch.fx

    from rducc.frontend.locations import describe_location, source_line

    node = torch.fx.Graph().placeholder("x")
    node.meta["stack_trace"] = 2**63
    assert source_line(node) is None
    assert "no source location" in describe_location(node)
