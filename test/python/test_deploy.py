"""`rducc deploy`: eight small models in one deployment directory, each run by
name and checked against eager; the HBM residency plan, code sharing, the DDR
check, manifest validation, and a failed deploy leaving DIR as it was."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import models
import numpy as np
import pytest
import torch
from torch import nn

from rducc.deploy.manifest import load_manifest
from rducc.errors import RduccError
from rducc.tools import deploy, entry, run

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "mlp.pt2"

BUDGET = 500_000
"""HBM bytes left for weights: more than the small models and one expert, less than all."""
HBM = 8 * 64_000_000_000  # sn40l-8


class Router(nn.Module):
    """Scores two experts for each row."""

    def __init__(self) -> None:
        super().__init__()
        self.gate = nn.Linear(32, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.softmax(self.gate(x), dim=-1)


class TanhNet(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc1, self.fc2 = nn.Linear(32, 16), nn.Linear(16, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc2(torch.tanh(self.fc1(x)))


class NormNet(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.norm, self.fc = nn.LayerNorm(32), nn.Linear(32, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(self.norm(x))


class Bag(nn.Module):
    """Token ids -> mean of their embeddings -> linear."""

    def __init__(self) -> None:
        super().__init__()
        self.embed, self.fc = nn.Embedding(64, 16), nn.Linear(16, 4)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        return self.fc(self.embed(ids).mean(dim=1))


def _models() -> dict[str, tuple[nn.Module, tuple[torch.Tensor, ...]]]:
    """Eight models in the order deployed: two pairs of one architecture each."""
    torch.manual_seed(0)
    x = torch.randn(4, 32)
    return {
        "router": (Router().eval(), (x,)),
        "mlp_a": models.mlp(seed=2),
        "tanh_net": (TanhNet().eval(), (x,)),
        "expert_a": models.tiny_llama(seed=4),
        "norm_net": (NormNet().eval(), (x,)),
        "bag": (Bag().eval(), (torch.randint(0, 64, (2, 5)),)),
        "expert_b": models.tiny_llama(seed=7),
        "mlp_b": models.mlp(seed=8),
    }


@pytest.fixture(scope="module")
def exported(tmp_path_factory) -> dict[str, tuple[Path, list[Path], list[np.ndarray]]]:
    """Each model saved as NAME.pt2, with its inputs as .npy files and eager's outputs."""
    folder = tmp_path_factory.mktemp("models")
    result = {}
    for name, (module, inputs) in _models().items():
        archive = folder / f"{name}.pt2"
        torch.export.save(models.export(module, inputs), archive)
        paths = []
        for i, tensor in enumerate(inputs):
            paths.append(folder / f"{name}_in{i}.npy")
            np.save(paths[-1], tensor.numpy())
        with torch.no_grad():
            expected = module(*inputs)
        result[name] = (archive, paths, [expected.numpy()])
    return result


def _deploy(argv: list[str]) -> int:
    try:
        return deploy.main(argv)
    except SystemExit as exit_:
        return int(exit_.code or 0)


@pytest.fixture(scope="module")
def compiled() -> list[object]:
    """The programs `deployed` compiled: one entry a compile_module call."""
    return []


@pytest.fixture(scope="module")
def deployed(exported, compiled, tmp_path_factory) -> Path:
    import rducc.driver

    out = tmp_path_factory.mktemp("deployments") / "coe"
    specs = [str(archive) for archive, _, _ in exported.values()]
    compile_module = rducc.driver.compile_module

    def counted(program, options=None):
        compiled.append(program)
        return compile_module(program, options)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(rducc.driver, "compile_module", counted)
        status = _deploy([*specs, "--target", "sn40l-8", "--router", "router",
                          "--hbm-reserve", str(HBM - BUDGET), "-o", str(out)])
    assert status == 0
    return out


def test_manifest_lists_every_model_with_its_files(deployed, exported):
    deployment = load_manifest(deployed)
    assert [m.name for m in deployment.models] == list(exported)
    assert (deployment.sockets, deployment.hbm_bytes, deployment.eviction) == (8, HBM, "lru")
    assert deployment.hbm_weight_budget_bytes == BUDGET == deployment.hbm_bytes - deployment.hbm_reserve_bytes
    assert sorted(p.name for p in deployed.iterdir()) == sorted(
        ["manifest.json"] + [f"{name}.{ext}" for name in exported for ext in ("mlir", "safetensors")])
    for model in deployment.models:
        assert model.weight_bytes == (deployed / model.weights).stat().st_size - _header_bytes(deployed / model.weights)
        assert model.router == (model.name == "router")


def _header_bytes(path: Path) -> int:
    return 8 + int.from_bytes(path.read_bytes()[:8], "little")


@pytest.mark.parametrize("name", ["router", "mlp_a", "tanh_net", "expert_a", "norm_net", "bag", "expert_b", "mlp_b"])
def test_each_model_runs_by_name_as_eager(name, deployed, exported, tmp_path):
    _, inputs, expected = exported[name]
    out = tmp_path / "out.npz"
    argv = [str(deployed), "--model", name, *[a for p in inputs for a in ("--input", str(p))], "--output", str(out)]
    assert run.main(argv) == 0
    got = np.load(out)
    np.testing.assert_allclose(got["output_0"], expected[0], rtol=1e-4, atol=1e-5)


def test_residency_plan_keeps_the_budget_routers_first(deployed):
    deployment = load_manifest(deployed)
    resident = [m for m in deployment.models if m.resident]
    assert sum(m.weight_bytes for m in resident) <= BUDGET
    assert any(not m.resident for m in deployment.models), "the budget should leave a model on demand"
    assert deployment.model("router").resident
    # first fit in the order given: a model left in DDR did not fit what was left at its turn
    left = BUDGET - deployment.model("router").weight_bytes
    for model in deployment.models:
        if model.router:
            continue
        assert model.resident == (model.weight_bytes <= left), model.name
        left -= model.weight_bytes if model.resident else 0


def test_same_architecture_shares_code_weights_stay_separate(deployed):
    deployment = load_manifest(deployed)
    shares = {m.name: m.shares_code_with for m in deployment.models}
    assert shares == {"router": None, "mlp_a": None, "tanh_net": None, "expert_a": None, "norm_net": None,
                      "bag": None, "expert_b": "expert_a", "mlp_b": "mlp_a"}
    assert (deployed / "expert_a.safetensors").read_bytes() != (deployed / "expert_b.safetensors").read_bytes()


def test_models_of_one_graph_compile_once(deployed, compiled):
    """Eight models, two pairs of one graph (different weights): six compiles;
    each model of a pair still runs its own weights (test_each_model_runs_by_name_as_eager)."""
    assert len(compiled) == 6
    texts = {name: (deployed / f"{name}.mlir").read_text() for name in ("expert_a", "expert_b")}
    assert texts["expert_a"].replace("expert_a.safetensors", "expert_b.safetensors") == texts["expert_b"]


class Scaled(nn.Module):
    """x times a lifted tensor constant (not a parameter or buffer: part of the code)."""

    def __init__(self, scale: list[float]) -> None:
        super().__init__()
        self.scale = torch.tensor(scale)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * self.scale


def test_the_signature_excludes_weights_not_shapes_or_constants(exported, tmp_path):
    from rducc.deploy.deployment import archive_facts

    x = torch.randn(2, 2)
    for name, scale in (("one", [1.0, 2.0]), ("two", [3.0, 4.0])):
        torch.export.save(models.export(Scaled(scale), (x,)), tmp_path / f"{name}.pt2")
    facts = {name: archive_facts(archive) for name, (archive, _, _) in exported.items()}
    assert facts["expert_a"].signature == facts["expert_b"].signature != facts["mlp_a"].signature
    assert facts["mlp_a"].signature == facts["mlp_b"].signature
    assert facts["mlp_a"].weight_bytes == 27688 and not facts["mlp_a"].on_meta
    assert archive_facts(tmp_path / "one.pt2").signature != archive_facts(tmp_path / "two.pt2").signature


def test_modeled_times_are_the_simulate_figures(deployed):
    from rducc.model.cost_model import estimate
    from rducc.targets import load_target

    deployment = load_manifest(deployed)
    target = load_target("sn40l-8")
    for model in deployment.models:
        forward = estimate(run.parse_program(deployed / model.program), target).modeled_time_s
        tokens = {"expert_a": 8, "expert_b": 8, "bag": 10}.get(model.name, 1)
        assert model.modeled.forward_s == pytest.approx(forward) and forward > 0
        assert model.modeled.tokens_per_call == tokens
        assert model.modeled.prefill_s_per_token == pytest.approx(forward / tokens)


def test_run_needs_a_known_model_name(deployed, exported, capsys):
    _, inputs, _ = exported["mlp_a"]
    assert run.main([str(deployed), "--input", str(inputs[0])]) == 1
    assert "a deployment of 8 models; choose one with --model NAME" in capsys.readouterr().err
    assert run.main([str(deployed), "--model", "mlp_c", "--input", str(inputs[0])]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "no model 'mlp_c' in the deployment; it has router, mlp_a, tanh_net" in err[0]


def test_weights_past_the_ddr_are_refused(exported, deployed, tmp_path, capsys):
    target = tmp_path / "small_ddr.toml"
    target.write_text('inherits = "sn40l-8"\nname = "small_ddr"\nddr_bytes = 100000\n')
    names = ["mlp_a", "expert_a", "expert_b"]
    total = sum(load_manifest(deployed).model(name).weight_bytes for name in names)
    out = tmp_path / "d"
    assert _deploy([str(exported[n][0]) for n in names] + ["--target", str(target), "-o", str(out)]) == 1
    err = capsys.readouterr().err
    assert (f"the weights of the 3 models total {total} bytes; target small_ddr's DDR holds 800000 bytes "
            "(8 x 100000 a socket)") in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["small_ddr.toml"]


GOOD = {
    "format": "rducc-deployment", "version": 1, "target": "sn40l-8", "sockets": 8, "ddr_bytes": 100,
    "hbm_bytes": 10, "hbm_reserve_bytes": 2, "hbm_weight_budget_bytes": 8, "eviction": "lru",
    "models": [
        {"name": name, "source": f"{name}.pt2", "program": f"{name}.mlir", "weights": f"{name}.safetensors",
         "weight_bytes": 4, "resident": True, "shares_code_with": None, "router": False,
         "modeled": {"forward_s": 1e-3, "tokens_per_call": 1, "prefill_s_per_token": 1e-3, "decode_step_s": 1e-3}}
        for name in ("a", "b")
    ],
}


def _bad(edit) -> dict:
    data = json.loads(json.dumps(GOOD))
    edit(data)
    return data


BAD_MANIFESTS = {
    "missing field": (_bad(lambda d: d.pop("sockets")), "missing field 'sockets'"),
    "wrong type": (_bad(lambda d: d["models"][0].update(weight_bytes="4")),
                   "models[0]: field 'weight_bytes' must be an integer, got \"4\""),
    "bool for a number": (_bad(lambda d: d.update(sockets=True)), "field 'sockets' must be an integer, got true"),
    "unknown format": (_bad(lambda d: d.update(format="onnx")), "format \"onnx\" is not 'rducc-deployment'"),
    "unknown version": (_bad(lambda d: d.update(version=2)), "version 2 is not supported"),
    "no format": (_bad(lambda d: d.pop("format")), "missing field 'format'"),
    "duplicate names": (_bad(lambda d: d["models"][1].update(name="a")), "model name 'a' appears twice"),
    "missing program": (_bad(lambda d: d["models"][1].update(program="gone.mlir")),
                        "model 'b': program file"),
    "program outside": (_bad(lambda d: d["models"][0].update(program="../a.mlir")),
                        "field 'program' must name a file in the deployment directory"),
    "unknown field": (_bad(lambda d: d["models"][0]["modeled"].update(extra=1)), "modeled: unknown field 'extra'"),
    "negative bytes": (_bad(lambda d: d.update(hbm_bytes=-1)), "field 'hbm_bytes' must be a finite number >= 0"),
    "shares with nobody": (_bad(lambda d: d["models"][1].update(shares_code_with="z")),
                           "shares code with 'z', which the deployment does not list"),
    "not an object": ([1, 2], "expected an object, got list"),
}


def test_a_good_manifest_loads(tmp_path):
    meta = _bad(lambda d: d["models"][1].update(weights=None))  # a model on the meta device has no weights file
    _write_manifest(tmp_path, meta)
    deployment = load_manifest(tmp_path / "manifest.json")
    assert [m.name for m in deployment.models] == ["a", "b"] and deployment.models[0].modeled.forward_s == 1e-3
    assert deployment.models[1].weights is None
    assert json.loads(deployment.to_json()) == meta


@pytest.mark.parametrize("case", BAD_MANIFESTS, ids=list(BAD_MANIFESTS))
def test_bad_manifests_are_one_error(case, tmp_path):
    data, expected = BAD_MANIFESTS[case]
    _write_manifest(tmp_path, data)
    with pytest.raises(RduccError) as error:
        load_manifest(tmp_path)
    assert expected in str(error.value) and "\n" not in str(error.value)


def _write_manifest(directory: Path, data) -> None:
    for name in ("a", "b"):
        for ext in ("mlir", "safetensors"):
            (directory / f"{name}.{ext}").write_bytes(b"")
    (directory / "manifest.json").write_text(json.dumps(data))


class ReadsBack(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        # a read-back number as elu's input scale: aten.elu has no Tensor overload and torch's
        # decomposition computes with the number in Python, so it is refused
        return torch.ops.aten.elu.default(x, 2.0, x.max().item())


def _snapshot(directory: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in directory.iterdir()}


def test_a_failed_deploy_leaves_the_directory_as_it_was(exported, tmp_path, capsys):
    out = tmp_path / "coe"
    out.mkdir()
    (out / "notes.txt").write_text("keep me\n")
    before = _snapshot(out)
    good = str(exported["mlp_a"][0])
    assert _deploy([good, "-o", str(out)]) == 1
    assert "the directory is not empty; --force replaces it" in capsys.readouterr().err
    bad = tmp_path / "reads_back.pt2"
    torch.export.save(models.export(ReadsBack(), (torch.rand(3) + 1,)), bad)
    assert _deploy([good, str(bad), "-o", str(out), "--force"]) == 1
    assert "model 'reads_back'" in capsys.readouterr().err
    assert _snapshot(out) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["coe", "reads_back.pt2"]  # no staging left behind
    inside = out / "mlp_a.pt2"
    shutil.copy(good, inside)
    assert _deploy([str(inside), "-o", str(out), "--force"]) == 1
    assert "holds the input" in capsys.readouterr().err and inside.exists()
    inside.unlink()
    assert _deploy([good, "-o", str(out), "--force"]) == 0
    assert sorted(p.name for p in out.iterdir()) == ["manifest.json", "mlp_a.mlir", "mlp_a.safetensors"]


def test_rducc_deploy_is_the_deploy_tool(monkeypatch, capsys):
    monkeypatch.setattr(sys, "argv", ["rducc", "deploy", "x.pt2"])
    assert entry.rducc() == 1
    assert capsys.readouterr().err.strip() == (
        "rducc deploy: error: no output directory given (usage: rducc deploy a.pt2 b.pt2 ... -o DIR)")


def test_models_are_named_by_stem_or_name_equals(tmp_path):
    from rducc.deploy.deployment import model_sources

    assert model_sources(["a/x.pt2", "y=b/x.pt2"]) == [("x", "a/x.pt2"), ("y", "b/x.pt2")]
    with pytest.raises(RduccError, match="two models are named 'x'"):
        model_sources(["a/x.pt2", "b/x.pt2"])


def test_hbm_reserve_is_a_fraction_or_bytes():
    from rducc.deploy.deployment import hbm_reserve_bytes

    assert hbm_reserve_bytes("0.25", 1000) == 250
    assert hbm_reserve_bytes("300", 1000) == 300
    assert hbm_reserve_bytes("1GiB", 1 << 31) == 1 << 30
    with pytest.raises(RduccError, match="more than the system's HBM"):
        hbm_reserve_bytes("2GB", 1000)
    # read exactly (issue 31, item 10): a fraction a float rounds to 1 is still a fraction
    assert hbm_reserve_bytes("0.99999999999999999", 10**12) == 10**12 - 1
    assert hbm_reserve_bytes("1e-3", 10**12) == 10**9
    for huge in ("1e400", "1e999999999", "99999999999999999999999999999999999GiB"):
        with pytest.raises(RduccError, match="more than the system's HBM"):
            hbm_reserve_bytes(huge, 10**12)


def test_an_internal_error_in_a_deploy_names_the_model(tmp_path, monkeypatch, capsys):
    """A bug while compiling a model (here: a compile that raises ValueError) is an
    internal error, exit 70, that says which model it was compiling."""
    import rducc.driver

    def broken(*args, **kwargs):
        raise ValueError("a bug")

    monkeypatch.setattr(rducc.driver, "compile_module", broken)
    assert _deploy([str(EXAMPLE), "-o", str(tmp_path / "out"), "--target", "sn40l"]) == 70
    message = capsys.readouterr().err.splitlines()[0]
    assert message.startswith("rducc deploy: internal error: ValueError: a bug")
    assert f"while deploying model 'mlp' ({EXAMPLE})" in message
    assert not (tmp_path / "out").exists()


def test_a_moved_deployment_still_loads(deployed, tmp_path):
    """The manifest names files relative to its directory: a moved deployment runs."""
    moved = tmp_path / "moved"
    shutil.copytree(deployed, moved)
    assert load_manifest(moved).directory == moved


def test_meta_device_models_of_one_graph_load_and_compile_once(tmp_path, monkeypatch):
    """Three copies of a meta-device model: sized from the archive, one load and
    one compile, three programs naming no weights file."""
    import rducc.driver
    import rducc.frontend.loader

    with torch.device("meta"):
        model, x = TanhNet().eval(), torch.zeros(4, 32)
    archive = tmp_path / "meta.pt2"
    torch.export.save(models.export(model, (x,)), archive)
    calls: list[str] = []
    for module, name in ((rducc.driver, "compile_module"), (rducc.frontend.loader, "load_exported_program")):
        original = getattr(module, name)
        monkeypatch.setattr(module, name, lambda *a, _f=original, _n=name, **k: calls.append(_n) or _f(*a, **k))
    specs = [f"m{i}={archive}" for i in range(3)]
    assert _deploy([*specs, "-o", str(tmp_path / "out")]) == 0
    assert calls == ["load_exported_program", "compile_module"]
    deployment = load_manifest(tmp_path / "out")
    assert [(m.weights, m.weight_bytes, m.shares_code_with) for m in deployment.models] == [
        (None, (32 * 16 + 16 + 16 * 4 + 4) * 4, share) for share in (None, "m0", "m0")]
    texts = {(tmp_path / "out" / f"m{i}.mlir").read_text() for i in range(3)}
    assert len(texts) == 1 and "safetensors" not in texts.pop()


def test_a_dynamic_model_deploys_with_shape_buckets(tmp_path, capsys):
    """`--shapes bag:batch=2,4 bag:seq=5`: one program file of two buckets and one
    weights file; the manifest lists each bucket's times; a request of batch 3 runs
    padded up to the batch=4 bucket (its rows never meet), as eager; the serving
    simulation costs a batch on the smallest bucket that holds its tokens."""
    from torch.export import Dim

    from rducc.deploy.serving import served_models

    torch.manual_seed(0)
    bag = Bag().eval()
    ids = torch.randint(0, 64, (2, 5))
    archive = tmp_path / "bag.pt2"
    with torch.no_grad():
        torch.export.save(torch.export.export(bag, (ids,), dynamic_shapes=({0: Dim("batch", max=8),
                                                                           1: Dim("seq", max=16)},)), archive)
    out = tmp_path / "deployed"
    assert _deploy([str(archive), "--shapes", "batch=2,4", "seq=5", "-O0", "--target", "sn40l", "-o", str(out)]) == 0
    assert "2 shape buckets" in capsys.readouterr().out
    deployment = load_manifest(out)
    (model,) = deployment.models
    assert [b.bucket for b in model.buckets] == [{"batch": 2, "seq": 5}, {"batch": 4, "seq": 5}]
    assert [b.modeled.tokens_per_call for b in model.buckets] == [10, 20]
    assert model.modeled == model.buckets[1].modeled and sorted(p.name for p in out.iterdir()) == [
        "bag.mlir", "bag.safetensors", "manifest.json"]
    small = torch.randint(0, 64, (3, 5))
    np.save(tmp_path / "ids.npy", small.numpy())
    assert run.main([str(out), "--model", "bag", "--input", str(tmp_path / "ids.npy"),
                     "--output", str(tmp_path / "y.npz")]) == 0
    with torch.no_grad():
        np.testing.assert_allclose(np.load(tmp_path / "y.npz")["output_0"], bag(small).numpy(), rtol=1e-5, atol=1e-5)
    (served,) = served_models(deployment)
    (small_call, small_step), (large_call, _) = [(b.modeled.forward_s, b.modeled.decode_step_s)
                                                 for b in model.buckets]
    assert served.batch_times(10) == (small_call, small_step)
    assert served.batch_times(12)[0] == large_call and served.batch_times(45)[0] == 3 * large_call
