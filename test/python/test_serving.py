"""The serving simulation (rducc.deploy.serving): hand-built models, no compiling.

Every expected time is computed here from the target's figures (bandwidth,
efficiency, sockets, DMA latency) and the models' modeled times."""

from __future__ import annotations

import json
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from rducc.deploy.manifest import load_manifest
from rducc.deploy.serving import (
    Memory,
    Request,
    ServedModel,
    read_trace,
    served_models,
    simulate,
)
from rducc.errors import RduccError
from rducc.targets import load_target
from rducc.tools import run

GB = 10**9
PREFILL_S, DECODE_S = 1e-4, 2e-3


@pytest.fixture(scope="module")
def sn40l() -> Memory:
    return Memory.of_target(load_target("sn40l-8"))


def model(name: str, resident: bool = False, weight_bytes: int = 16 * GB, router: bool = False) -> ServedModel:
    return ServedModel(name, weight_bytes, resident, PREFILL_S, DECODE_S, router)


def request(ident: str, name: str, arrival: float, prompt: int = 100, output: int = 10,
            router: str | None = None) -> Request:
    return Request(ident, name, prompt, output, arrival, router)


def copy_s(target_name: str, weight_bytes: int) -> float:
    """DDR -> HBM time from the target file's figures: every socket copies its share."""
    t = load_target(target_name)
    return weight_bytes / (t.ddr_bandwidth * t.ddr_efficiency * t.sockets) + t.dma_latency_s


def test_resident_model_starts_at_once_a_missing_one_after_its_copy(sn40l: Memory) -> None:
    models = [model("a", resident=True), model("b")]
    report = simulate(models, [request("1", "a", 0.0), request("2", "b", 1.0)], sn40l)
    first, second = report.results
    assert first.ttft_s == pytest.approx(100 * PREFILL_S)
    assert first.hbm_hit and not second.hbm_hit
    assert second.ttft_s == pytest.approx(copy_s("sn40l-8", 16 * GB) + 100 * PREFILL_S)
    assert second.tpot_s == pytest.approx(DECODE_S)
    assert second.finish_s == pytest.approx(second.first_token_s + 9 * DECODE_S)
    assert report.switching_s == pytest.approx(copy_s("sn40l-8", 16 * GB))


def _half_budget(memory: Memory) -> int:
    return memory.hbm_weight_budget_bytes // 2


def _evicted(sn40l: Memory, policy: str, order: list[tuple[str, float]]) -> list[str]:
    size = _half_budget(sn40l)
    models = [model(name, weight_bytes=size) for name in "abc"]
    requests = [request(str(i), name, at) for i, (name, at) in enumerate(order)]
    report = simulate(models, requests, sn40l, eviction=policy)
    return [e.model for e in report.events if e.kind == "evict"]


@pytest.mark.parametrize(("policy", "order", "evicted"), [
    ("lru", [("a", 0), ("b", 1), ("a", 2), ("c", 3)], ["b"]),
    ("fifo", [("a", 0), ("b", 1), ("a", 2), ("c", 3)], ["a"]),
    ("lru", [("a", 0), ("a", 1), ("b", 2), ("c", 3)], ["a"]),
    ("lfu", [("a", 0), ("a", 1), ("b", 2), ("c", 3)], ["b"]),
])
def test_eviction_policy_picks_its_victim(sn40l: Memory, policy: str, order, evicted: list[str]) -> None:
    assert _evicted(sn40l, policy, order) == evicted


def test_requests_for_one_model_are_batched(sn40l: Memory) -> None:
    models = [model("a", resident=True)]
    requests = [request(str(i), "a", 0.0, prompt=100 + i, output=5 + i) for i in range(3)]
    report = simulate(models, requests, sn40l, max_batch=8)
    batches = [e for e in report.events if e.kind == "compute"]
    assert [b.requests for b in batches] == [3]
    prefill = (100 + 101 + 102) * PREFILL_S  # one prefill of the batch's prompt tokens
    assert [r.first_token_s for r in report.results] == pytest.approx([prefill] * 3)
    # a batched decode step costs one step: each request's own steps after prefill
    assert [r.finish_s for r in report.results] == pytest.approx([prefill + (4 + i) * DECODE_S for i in range(3)])
    assert batches[0].end_s == pytest.approx(prefill + 6 * DECODE_S)
    smaller = simulate(models, requests, sn40l, max_batch=2)
    assert [e.requests for e in smaller.events if e.kind == "compute"] == [2, 1]
    assert smaller.results[2].first_token_s == pytest.approx((100 + 101) * PREFILL_S + 5 * DECODE_S + 102 * PREFILL_S)


def test_router_runs_before_the_expert(sn40l: Memory) -> None:
    models = [model("router", resident=True, router=True), model("expert", resident=True)]
    router = ServedModel("router", GB, True, 3 * PREFILL_S, DECODE_S, True)
    report = simulate([router, models[1]], [request("1", "expert", 0.5, router="router")], sn40l)
    (result,) = report.results
    assert result.ttft_s == pytest.approx(100 * 3 * PREFILL_S + 100 * PREFILL_S)
    assert [e.model for e in report.events if e.kind == "compute"] == ["router", "expert"]
    assert report.uses == 2 and report.hit_rate == 1.0


def test_hbm_hit_rate_counts_every_model_use(sn40l: Memory) -> None:
    models = [model("a", resident=True), model("b")]
    requests = [request("1", "a", 0.0), request("2", "b", 0.0), request("3", "b", 10.0)]
    report = simulate(models, requests, sn40l)
    assert [r.hbm_hit for r in report.results] == [True, False, True]
    assert report.hit_rate == pytest.approx(2 / 3)
    assert report.totals()["copies"] == 1


def test_gpu_node_switches_slower_over_pcie(sn40l: Memory) -> None:
    gpu = Memory.of_target(load_target("dgx-h100"))
    assert gpu.copy_s(16 * GB) == pytest.approx(copy_s("dgx-h100", 16 * GB))
    assert gpu.copy_s(16 * GB) > sn40l.copy_s(16 * GB)
    models, requests = [model("a")], [request("1", "a", 0.0)]
    assert simulate(models, requests, gpu).switching_s > simulate(models, requests, sn40l).switching_s


def test_a_model_larger_than_the_hbm_budget_is_refused(sn40l: Memory) -> None:
    with pytest.raises(RduccError, match="does not fit the HBM weight budget"):
        simulate([model("big", weight_bytes=sn40l.hbm_weight_budget_bytes + 1)], [request("1", "big", 0)], sn40l)


MODELS = [model("a", resident=True), model("r", router=True)]


@pytest.mark.parametrize(("line", "message"), [
    ("not json", "not a JSON object"),
    ('[1, 2]', "expected a JSON object per line"),
    ('{"model": "zz", "prompt_tokens": 1, "output_tokens": 1, "arrival_s": 0}', "unknown model 'zz'"),
    ('{"model": "a", "prompt_tokens": -3, "output_tokens": 1, "arrival_s": 0}', "'prompt_tokens' must be"),
    ('{"model": "a", "prompt_tokens": 3, "output_tokens": 0, "arrival_s": 0}', "'output_tokens' must be"),
    ('{"model": "a", "prompt_tokens": 3, "output_tokens": 1, "arrival_s": -1}', "'arrival_s' must be"),
    ('{"model": "a", "prompt_tokens": 3, "output_tokens": 1, "arrival_s": 0, "router": "a"}', "not a router"),
    ('{"model": "auto", "prompt_tokens": 3, "output_tokens": 1, "arrival_s": 0}', "name the expert"),
    ('{"model": "a", "prompt": 3}', "unknown field 'prompt'"),
])
def test_bad_trace_line_is_named(tmp_path: Path, line: str, message: str) -> None:
    good = '{"model": "a", "prompt_tokens": 3, "output_tokens": 1, "arrival_s": 0}'
    path = tmp_path / "trace.jsonl"
    path.write_text(f"{good}\n\n{line}\n")
    with pytest.raises(RduccError, match=f"trace {path}:3: .*{message}"):
        read_trace(path, MODELS)


def test_trace_is_sorted_by_arrival(tmp_path: Path) -> None:
    path = tmp_path / "trace.jsonl"
    lines = [{"id": name, "model": "a", "prompt_tokens": 1, "output_tokens": 1, "arrival_s": at}
             for name, at in (("late", 2.0), ("early", 1.0), ("tie", 2.0))]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    assert [r.id for r in read_trace(path, MODELS)] == ["early", "late", "tie"]


def _manifest(names: list[str]) -> dict:
    return {
        "format": "rducc-deployment", "version": 1, "target": "sn40l-8", "sockets": 8,
        "ddr_bytes": 12 * 10**12, "hbm_bytes": 512 * GB, "hbm_reserve_bytes": 128 * GB,
        "hbm_weight_budget_bytes": 384 * GB, "eviction": "lru",
        "models": [{"name": name, "source": f"{name}.pt2", "program": f"{name}.mlir",
                    "weights": f"{name}.safetensors", "weight_bytes": 100 * GB, "resident": name == "r",
                    "shares_code_with": None, "router": name == "r",
                    "modeled": {"forward_s": 0.01, "tokens_per_call": 100, "prefill_s_per_token": PREFILL_S,
                                "decode_step_s": DECODE_S}} for name in names],
    }


def _load(tmp_path: Path, manifest: dict) -> list[ServedModel]:
    (tmp_path / "manifest.json").write_text(json.dumps(manifest))
    return served_models(load_manifest(tmp_path, check_files=False))


def test_manifest_fields_are_read_and_checked(tmp_path: Path) -> None:
    """The simulation reads a manifest through the one reader (rducc.deploy.manifest)."""
    models = _load(tmp_path, _manifest(["r", "x"]))
    assert models == [ServedModel("r", 100 * GB, True, PREFILL_S, DECODE_S, True),
                      ServedModel("x", 100 * GB, False, PREFILL_S, DECODE_S, False)]
    broken = _manifest(["x"])
    broken["models"][0]["modeled"]["decode_step_s"] = -1
    with pytest.raises(RduccError, match=r"modeled: field 'decode_step_s' must be a finite number >= 0, got -1"):
        _load(tmp_path, broken)


def test_cli_simulates_a_deployment_on_both_targets(tmp_path: Path, capsys) -> None:
    """Only manifest.json is read: the programs and weights it names need not exist."""
    deployment = tmp_path / "deploy"
    deployment.mkdir()
    (deployment / "manifest.json").write_text(json.dumps(_manifest(["r", "x", "y"])))
    trace = tmp_path / "requests.jsonl"
    trace.write_text("".join(json.dumps({"model": name, "router": "r", "prompt_tokens": 50, "output_tokens": 4,
                                         "arrival_s": i * 0.01}) + "\n" for i, name in enumerate("xyx")))
    report_path = tmp_path / "report.json"
    argv = [str(deployment), "--simulate", "--trace", str(trace), "--report-json", str(report_path)]
    assert run.main(argv) == 0
    table = capsys.readouterr().out
    assert "HBM hit rate" in table and "r>x" in table
    sn40l = json.loads(report_path.read_text())
    assert sn40l["totals"]["copies"] == 2
    assert sn40l["totals"]["switching_s"] == pytest.approx(2 * copy_s("sn40l-8", 100 * GB))
    assert run.main([*argv, "--target", "dgx-h100"]) == 0
    gpu = json.loads(report_path.read_text())
    assert gpu["totals"]["switching_s"] == pytest.approx(2 * copy_s("dgx-h100", 100 * GB))
    assert gpu["totals"]["switching_s"] > sn40l["totals"]["switching_s"]
    assert run.main([str(deployment), "--trace", str(trace)]) == 1
    assert "--trace needs --simulate" in capsys.readouterr().err


def test_memory_of_target_uses_the_reserve() -> None:
    target = load_target("sn40l-8")
    memory = Memory.of_target(replace(target, sockets=2), reserve_fraction=0.5)
    assert memory.hbm_weight_budget_bytes == target.hbm_bytes  # half of two sockets' HBM


def test_worked_example_in_the_docs_is_what_it_prints(capsys) -> None:
    """docs/serving.md shows the output of the example deployment: it must stay true."""
    root = Path(__file__).resolve().parents[2]
    example = root / "examples" / "serving"
    assert run.main([str(example / "coe"), "--simulate", "--trace", str(example / "requests.jsonl")]) == 0
    doc = (root / "docs" / "serving.md").read_text()
    printed = capsys.readouterr().out.splitlines()
    assert len(printed) > 15
    assert all(line in doc for line in printed)


def test_plot_draws_the_timeline(tmp_path: Path, sn40l: Memory) -> None:
    from rducc.deploy.serving import write_timeline

    report = simulate([model("a", resident=True), model("b")], [request("1", "a", 0.0), request("2", "b", 0.0)],
                      sn40l)
    path = tmp_path / "timeline.png"
    write_timeline(report, path)
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


# --------------------------------------------------------------------------
# issue 31 item 9: a model copied in stays until its requests ran; bounds; speed
# --------------------------------------------------------------------------


def _one_expert_room(sn40l: Memory, router_bytes: int, expert_bytes: int) -> Memory:
    """A budget that holds the router and one expert, not two."""
    return replace(sn40l, hbm_weight_budget_bytes=router_bytes + expert_bytes + expert_bytes // 2)


def _check_copies_serve_their_requests(report) -> None:
    """Copies never exceed model uses, and a model copied in is computed before it
    is evicted (the requests that fetched it run first)."""
    assert report.totals()["copies"] <= report.uses
    pending: set[str] = set()  # copied in, not yet computed
    for event in report.events:
        if event.kind == "copy":
            pending.add(event.model)
        elif event.kind == "compute":
            pending.discard(event.model)
        else:
            assert event.model not in pending, f"{event.model} evicted at {event.start_s} before it ran"


@pytest.mark.parametrize("policy", ["lru", "fifo", "lfu"])
def test_an_expert_copied_in_is_not_evicted_before_its_requests_run(sn40l: Memory, policy: str) -> None:
    """The issue's case: a router and on-demand experts, HBM room for one expert;
    14 routed requests (28 model uses) arriving faster than they run."""
    router = ServedModel("router", GB, True, PREFILL_S, DECODE_S, True)
    experts = [model(f"e{i}") for i in range(4)]
    memory = _one_expert_room(sn40l, GB, 16 * GB)
    requests = [request(str(i), f"e{(i * 7) % 4}", i * 0.001, router="router") for i in range(14)]
    report = simulate([router, *experts], requests, memory, eviction=policy)
    assert report.uses == 28
    _check_copies_serve_their_requests(report)
    assert report.totals()["evictions"] <= report.totals()["copies"]


@pytest.mark.parametrize("seed", range(12))
def test_copies_never_exceed_uses_on_random_traces(sn40l: Memory, seed: int) -> None:
    """Random routed and plain traces, budgets of one to three experts, every policy."""
    import random

    rng = random.Random(seed)
    size = 16 * GB
    experts = [model(f"e{i}", resident=rng.random() < 0.3) for i in range(rng.randint(2, 7))]
    router = ServedModel("router", GB, True, PREFILL_S * rng.choice([0.1, 1, 10]), DECODE_S, True)
    memory = replace(sn40l, hbm_weight_budget_bytes=GB + size * rng.randint(1, 3) + size // 3)
    requests = []
    for i in range(rng.randint(5, 60)):
        routed = rng.random() < 0.7
        requests.append(request(str(i), rng.choice(experts).name, rng.uniform(0, 0.2), rng.randint(1, 400),
                                rng.randint(1, 40), "router" if routed else None))
    requests.sort(key=lambda r: r.arrival_s)
    for policy in ("lru", "fifo", "lfu"):
        report = simulate([router, *experts], requests, memory, eviction=policy, max_batch=rng.randint(1, 8))
        _check_copies_serve_their_requests(report)
        assert len(report.results) == len(requests)
        assert all(r.first_token_s >= r.arrival_s for r in report.results)


def test_a_model_behind_a_stream_of_requests_is_not_starved(sn40l: Memory) -> None:
    """Requests for `a` keep arriving; `b`'s request, ahead of most of them in line,
    gets its copy: `a` is evicted for it once `a`'s older requests ran."""
    memory = replace(sn40l, hbm_weight_budget_bytes=24 * GB)
    requests = [request("b0", "b", 0.0005)] + [request(f"a{i}", "a", i * 0.001) for i in range(200)]
    requests.sort(key=lambda r: r.arrival_s)
    report = simulate([model("a", resident=True), model("b")], requests, memory)
    b = next(r for r in report.results if r.id == "b0")
    last_a = max(r.finish_s for r in report.results if r.model == "a")
    assert b.finish_s < last_a / 2


def _trace_of(count: int, experts: int) -> list[Request]:
    return [request(str(i), f"e{i % experts}", 0.0, prompt=8, output=2, router="router" if i % 2 else None)
            for i in range(count)]


def test_scheduler_work_grows_linearly_with_the_backlog(sn40l: Memory) -> None:
    """A backlog ten times longer takes about ten times the work (Python function
    calls, counted: a machine's load cannot change them), far from the 100x a
    scan of the backlog per event gives (10^5 requests: bench/serving_scale.py)."""
    router = ServedModel("router", GB, True, PREFILL_S, DECODE_S, True)
    experts = [model(f"e{i}") for i in range(5)]
    memory = _one_expert_room(sn40l, GB, 16 * GB)

    def calls(count: int) -> int:
        counted = [0]

        def count_call(frame, event, arg) -> None:
            if event == "call":
                counted[0] += 1

        trace = _trace_of(count, 5)
        sys.setprofile(count_call)
        try:
            report = simulate([router, *experts], trace, memory, max_batch=8)
        finally:
            sys.setprofile(None)
        assert len(report.results) == count
        _check_copies_serve_their_requests(report)
        return counted[0]

    small, large = calls(1_000), calls(10_000)
    assert 9 * small < large < 14 * small, (small, large)


@pytest.mark.parametrize(("field", "text", "message"), [
    ("arrival_s", "1e8", "'arrival_s' must be a number of seconds from 0 to 1e\\+07, got 100000000.0"),
    ("arrival_s", "1" + "0" * 400, "'arrival_s' must be a number of seconds from 0 to 1e\\+07, got a number of over"),
    ("arrival_s", "1" * 5000, "not a JSON object \\(a number too long to read\\)"),
    ("prompt_tokens", "9" * 400, "'prompt_tokens' must be a whole number from 1 to 16777216, got a number of over"),
    ("id", "9" * 4500, "not a JSON object \\(a number too long to read\\)"),
])
def test_huge_numbers_in_a_trace_are_named(tmp_path: Path, field: str, text: str, message: str) -> None:
    values = {"model": '"a"', "prompt_tokens": "3", "output_tokens": "1", "arrival_s": "0"} | {field: text}
    path = tmp_path / "trace.jsonl"
    path.write_text("{" + ", ".join(f'"{k}": {v}' for k, v in values.items()) + "}\n")
    with pytest.raises(RduccError, match=f"trace {path}:1: {message}"):
        read_trace(path, MODELS)


@pytest.mark.parametrize(("change", "message"), [
    (lambda m: m.update(hbm_bytes=10**400), "field 'hbm_bytes' must be at most 2\\^53"),
    (lambda m: m["models"][0].update(weight_bytes=2**60), "field 'weight_bytes' must be at most 2\\^53"),
    (lambda m: m["models"][0]["modeled"].update(decode_step_s=0), "'decode_step_s' must be a time from 1e-12 s"),
    (lambda m: m["models"][0]["modeled"].update(prefill_s_per_token=1e6), "'prefill_s_per_token' must be a time"),
])
def test_manifest_numbers_past_their_bounds_are_named(tmp_path: Path, change, message: str) -> None:
    manifest = _manifest(["x"])
    change(manifest)
    with pytest.raises(RduccError, match=message):
        _load(tmp_path, manifest)


def test_a_manifest_number_too_long_to_read_is_named(tmp_path: Path) -> None:
    text = json.dumps(_manifest(["x"])).replace('"sockets": 8', '"sockets": ' + "8" * 5000)
    (tmp_path / "manifest.json").write_text(text)
    with pytest.raises(RduccError, match="not a JSON deployment manifest \\(a number too long to read\\)"):
        load_manifest(tmp_path, check_files=False)
