"""The pass-authoring API, plugins, pipelines as text, and docs/pass-authoring.md.

The guide's code blocks are the files of the example plugin; these tests
check that they are, run them, and check that each way in (a plugin file,
an installed package's entry point, `rducc.compile(passes=...)`) works.
"""

from __future__ import annotations

import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
import torch
from test_cli import RDUCC, assert_user_error, run, run_all, show
from xdsl.dialects.builtin import ModuleOp

import rducc
from rducc import api
from rducc.driver import import_exported, lower
from rducc.errors import RduccError
from rducc.model.kernel_model import best_plan, kernel_group
from rducc.pipeline import default_passes, edit_pipeline, parse_passes, pipeline_text
from rducc.plugins import load_pass_plugin
from rducc.targets import load_target

ROOT = Path(__file__).resolve().parents[2]
GUIDE = ROOT / "docs" / "pass-authoring.md"
PLUGIN_DIR = ROOT / "examples" / "silu_plugin"
FUSE_SILU = PLUGIN_DIR / "rducc_silu" / "fuse_silu.py"
FAULTY = ROOT / "test" / "plugins" / "Inputs" / "faulty_passes.py"
BIN = Path(sys.executable).parent

O0_WITH_FUSE_SILU = pipeline_text(0).replace("rdu-canonicalize,", "rdu-canonicalize,fuse-silu,", 1)


class HandWrittenSilu(torch.nn.Module):
    """A linear layer and SiLU written as x * sigmoid(x)."""

    def __init__(self) -> None:
        super().__init__()
        self.linear = torch.nn.Linear(32, 32)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.linear(x)
        return h * torch.sigmoid(h)


@pytest.fixture(scope="module")
def silu_model() -> tuple[torch.nn.Module, torch.Tensor]:
    torch.manual_seed(0)
    return HandWrittenSilu().eval(), torch.randn(4, 32)


@pytest.fixture(scope="module")
def silu_exported(silu_model) -> torch.export.ExportedProgram:
    """The model exported once for the module (its decomposition is cached with it)."""
    model, x = silu_model
    return torch.export.export(model, (x,))


@pytest.fixture(scope="module")
def silu_archive(tmp_path_factory, silu_exported) -> Path:
    path = tmp_path_factory.mktemp("silu") / "silu.pt2"
    torch.export.save(silu_exported, str(path))
    return path


def fuse_silu_pass():
    return load_pass_plugin(FUSE_SILU)["fuse-silu"]()


def in_process(capsys, tool: str, *args: object) -> subprocess.CompletedProcess[str]:
    """Run a CLI's main() here (no interpreter start-up), captured like a subprocess."""
    from rducc.tools import cli, opt

    main = cli.main if tool == "rducc" else opt.main
    code = main([str(a) for a in args])
    captured = capsys.readouterr()
    return subprocess.CompletedProcess([tool, *args], code, captured.out, captured.err)


# -- the guide ------------------------------------------------------------------


def guide_files() -> dict[str, str]:
    """Each `<!-- file: PATH -->` code block of the guide, by path."""
    blocks = re.findall(r"<!-- file: (\S+) -->\n```\w*\n(.*?)```\n", GUIDE.read_text(), re.DOTALL)
    return dict(blocks)


def test_guide_shows_the_example_files_as_they_are():
    blocks = guide_files()
    assert set(blocks) >= {
        "examples/silu_plugin/rducc_silu/fuse_silu.py",
        "examples/silu_plugin/rducc_silu/universe.py",
        "examples/silu_plugin/pyproject.toml",
        "examples/silu_plugin/measure.py",
        "test/examples/fuse-silu.mlir",
    }
    for path, text in blocks.items():
        assert (ROOT / path).read_text() == text, f"docs/pass-authoring.md's copy of {path} differs"


def test_guide_rule_is_about_thirty_lines():
    code = [line for line in FUSE_SILU.read_text().splitlines() if line.strip()]
    assert len(code) <= 40


def test_guide_measurement_prints_what_the_guide_says():
    result = subprocess.run(
        [sys.executable, str(PLUGIN_DIR / "measure.py")], capture_output=True, text=True, timeout=600
    )
    assert result.returncode == 0, show(result)
    printed = [line for line in result.stdout.splitlines() if line.startswith("-O")]
    shown = re.search(r"prints \(modeled figures, sn40l\):\n\n```\n(.*?)```", GUIDE.read_text(), re.DOTALL)
    assert shown is not None
    assert printed == shown.group(1).splitlines()
    kernels = [tuple(map(int, re.search(r"(\d+) -> (\d+) kernels", line).groups())) for line in printed]
    assert kernels[0][1] == kernels[0][0] - 1  # -O0: one kernel fewer


# -- a plugin file --------------------------------------------------------------


def silu(b, xs):
    return b.mul(xs[0], b.sigmoid(xs[0]))


@pytest.mark.parametrize("builtin", [False, True], ids=["by-hand", "F.silu"])
def test_plugin_pass_rewrites_x_times_sigmoid_into_one_silu_map(builtin, silu_model):
    """Core ATen decomposes F.silu into sigmoid and mul too: the rule applies to both."""
    model, x = silu_model
    module = import_exported(torch.export.export(_BuiltinSilu(model) if builtin else model, (x,)))
    assert len([op for op in module.walk() if isinstance(op, api.rdu.MapOp)]) == 3
    fuse_silu_pass().apply(None, module)
    module.verify()
    bias, fused = [op for op in module.walk() if isinstance(op, api.rdu.MapOp)]
    assert api.map_computes(fused, silu)
    assert list(fused.inputs) == [bias.result]


class _BuiltinSilu(torch.nn.Module):
    def __init__(self, inner: HandWrittenSilu) -> None:
        super().__init__()
        self.linear = inner.linear

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.silu(self.linear(x))


@pytest.fixture(scope="module")
def cli_with_plugin(tmp_path_factory, silu_archive) -> dict[str, object]:
    out = tmp_path_factory.mktemp("plugin-cli")
    runs = run_all({
        "plain": (RDUCC, silu_archive, "-O0", "-o", out / "plain.mlir"),
        "fused": (RDUCC, silu_archive, "--load-pass-plugin", FUSE_SILU,
                  "--pass-pipeline", O0_WITH_FUSE_SILU, "-o", out / "fused.mlir"),
    })
    return {"out": out, **runs}


def test_rducc_runs_a_plugin_pass_in_its_pipeline(cli_with_plugin):
    out = cli_with_plugin["out"]
    for result in (cli_with_plugin["plain"], cli_with_plugin["fused"]):
        assert result.returncode == 0, show(result)
    plain = (out / "plain.mlir").read_text()
    fused = (out / "fused.mlir").read_text()
    assert fused.count("tier.compute") == plain.count("tier.compute") - 1


def test_placed_program_with_plugin_pass_matches_eager(cli_with_plugin, silu_model):
    model, x = silu_model
    out = cli_with_plugin["out"]
    np.save(out / "x.npy", x.numpy())
    result = run(BIN / "rducc-run", out / "fused.mlir", "--input", out / "x.npy", "--output", out / "y.npz")
    assert result.returncode == 0, show(result)
    got = np.load(out / "y.npz")["output_0"]
    torch.testing.assert_close(torch.from_numpy(got), model(x).detach(), rtol=1e-4, atol=1e-5)


def test_a_plugin_file_named_twice_loads_once():
    from rducc.pipeline import available_passes

    same_file = FUSE_SILU.parent / ".." / "rducc_silu" / "fuse_silu.py"
    passes = available_passes([FUSE_SILU, str(same_file)])
    assert passes["fuse-silu"]() is load_pass_plugin(FUSE_SILU)["fuse-silu"]


def test_rducc_opt_runs_a_plugin_pass_with_an_option(capsys):
    graph = ROOT / "test" / "examples" / "fuse-silu.mlir"
    result = in_process(capsys, "rducc-opt", "--load-pass-plugin", FAULTY, "-p", "scale{factor=3.0}", "--split-input-file", graph)
    assert result.returncode == 0, show(result)
    assert "arith.constant 3.000000e+00" in result.stdout


@pytest.mark.parametrize(
    "plugin, message",
    [
        ("syntax_error.py", r"syntax_error\.py:6:\d+: error: pass plugin does not parse"),
        ("raises_on_load.py", r"raises_on_load\.py:6: error: pass plugin failed while loading: KeyError"),
        ("no_pass.py", r"no_pass\.py: error: the pass plugin defines no pass"),
        ("nameless_pass.py", r"nameless_pass\.py:8: error: pass class Nameless has no `name"),
        ("clashing_name.py", r"clashing_name\.py: error: the plugin's pass 'rdu-fuse' has the name of a pass"),
        ("missing.py", r"missing\.py: error: pass plugin file not found"),
    ],
)
def test_rducc_names_a_broken_plugin_file(plugin, message, silu_archive, tmp_path, capsys):
    output = tmp_path / "out.mlir"
    path = ROOT / "test" / "plugins" / "Inputs" / plugin
    result = in_process(capsys, "rducc", silu_archive, "--load-pass-plugin", path, "--pass-pipeline", "cse", "-o", output)
    assert re.search(message, assert_user_error(result)), show(result)
    assert not output.exists()


@pytest.mark.parametrize(
    "pass_name, message",
    [
        ("break-ir", r"the IR does not verify after pass 'break-ir':\n.*\.py:\d+:\d+: error: 'rdu.map' input #0"),
        ("crash", r"pass 'crash' failed at .*faulty_passes\.py:\d+: KeyError: 'maps'"),
    ],
)
def test_rducc_names_the_pass_that_broke(pass_name, message, silu_archive, tmp_path, capsys):
    output = tmp_path / "out.mlir"
    output.write_text("previous")
    result = in_process(
        capsys, "rducc", silu_archive, "--load-pass-plugin", FAULTY,
        "--pass-pipeline", O0_WITH_FUSE_SILU.replace("fuse-silu", pass_name), "-o", output,
    )
    assert re.search(message, assert_user_error(result)), show(result)
    assert output.read_text() == "previous"


def test_broken_ir_error_shows_the_op_and_its_source_line(silu_model, silu_exported):
    model, x = silu_model
    break_ir = load_pass_plugin(FAULTY)["break-ir"]()
    with pytest.raises(RduccError) as error:
        rducc.compile(silu_exported, passes=[api.after("rdu-canonicalize", break_ir)])
    text = str(error.value)
    assert "after pass 'break-ir'" in text
    assert re.search(r"test_pass_authoring\.py:\d+:\d+: error: 'rdu.map' input #0 of shape \[4, 32\]", text), text
    assert "tensor<1xf32>" in text.splitlines()[-1]


# -- an installed package (xdsl.universe) ----------------------------------------


@pytest.fixture(scope="module")
def installed_plugin(tmp_path_factory) -> Path:
    """The example package installed (no network, no deps) into a folder of its own."""
    target = tmp_path_factory.mktemp("site")
    work = tmp_path_factory.mktemp("build") / "silu_plugin"
    import shutil

    shutil.copytree(PLUGIN_DIR, work, ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__"))
    result = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation",
         "--no-index", "--target", str(target), str(work)],
        capture_output=True, text=True, timeout=600,
    )
    assert result.returncode == 0, show(result)
    return target


def run_with_path(tool: Path, site: Path, *args: object) -> subprocess.CompletedProcess[str]:
    import os

    env = {**os.environ, "PYTHONPATH": str(site)}
    return subprocess.run([str(tool), *map(str, args)], capture_output=True, text=True, env=env, timeout=600)


@pytest.mark.parametrize("tool", ["xdsl-opt", "rducc-opt"])
def test_installed_package_pass_reaches_the_opt_tools(tool, installed_plugin):
    graph = ROOT / "test" / "examples" / "fuse-silu.mlir"
    result = run_with_path(BIN / tool, installed_plugin, "-p", "fuse-silu", "--split-input-file", graph)
    assert result.returncode == 0, show(result)
    first = result.stdout.split("// -----")[0]
    assert first.count("rdu.map") == 1 and "arith.mulf" in first


def test_installed_package_pass_is_listed(installed_plugin):
    result = run_with_path(RDUCC, installed_plugin, "--list-passes")
    assert result.returncode == 0, show(result)
    section = result.stdout.split("passes of installed packages (xdsl.universe entry points):")[1]
    assert re.search(r"^  fuse-silu +Fuse x \* sigmoid\(x\)", section.split("\n\n")[0], re.MULTILINE)


# -- rducc.compile(passes=...) and pipeline edits ---------------------------------


def test_compile_inserts_a_pass_after_a_named_one(silu_model, silu_exported):
    model, x = silu_model
    plain = rducc.compile(silu_exported, opt_level=0)
    fused = rducc.compile(silu_exported, opt_level=0, passes=[api.after("rdu-canonicalize", fuse_silu_pass())])
    assert len(fused.report.kernels) == len(plain.report.kernels) - 1
    torch.testing.assert_close(fused(x), model(x), rtol=1e-4, atol=1e-5)


def test_pipeline_edits_insert_where_asked():
    marker = fuse_silu_pass()
    names = lambda passes: [p.name for p in passes]  # noqa: E731
    base = default_passes(1)
    tile = names(base).index("rdu-tile")
    assert names(edit_pipeline(base, [api.before("rdu-tile", marker)])) == names(base[:tile]) + ["fuse-silu"] + names(base[tile:])
    after = names(edit_pipeline(base, [api.after("rdu-sram-alloc", marker)]))
    assert after[after.index("rdu-sram-alloc") + 1] == "fuse-silu" and len(after) == len(base) + 1
    with pytest.raises(RduccError, match="cannot insert before 'rdu-nothing'.*rdu-canonicalize, rdu-outline-layers, rdu-split-contraction, cse"):
        edit_pipeline(base, [api.before("rdu-nothing", marker)])


def test_compile_refuses_a_mix_of_edits_and_passes(silu_model, silu_exported):
    model, x = silu_model
    with pytest.raises(RduccError, match="not a mix"):
        rducc.compile(silu_exported, passes=[fuse_silu_pass(), api.after("cse", fuse_silu_pass())])


def test_compile_with_pipeline_text_equals_the_opt_level(silu_model, silu_exported):
    model, x = silu_model
    by_text = rducc.compile(silu_exported, passes=pipeline_text(1))
    by_level = rducc.compile(silu_exported, opt_level=1)
    assert by_text.mlir == by_level.mlir


# -- pipelines as text on the command line ------------------------------------------


def test_print_pipeline_round_trips_through_pass_pipeline(tmp_path, silu_archive, capsys):
    printed = in_process(capsys, "rducc", "--print-pipeline", "-O1")
    assert printed.returncode == 0, show(printed)
    assert printed.stdout.strip() == pipeline_text(1)
    (tmp_path / "text").mkdir(), (tmp_path / "level").mkdir()
    by_text = in_process(capsys, "rducc", silu_archive, "--pass-pipeline", printed.stdout.strip(), "-o", tmp_path / "text" / "o.mlir")
    by_level = in_process(capsys, "rducc", silu_archive, "-O1", "-o", tmp_path / "level" / "o.mlir")
    assert by_text.returncode == 0 and by_level.returncode == 0, show(by_text) + show(by_level)
    assert (tmp_path / "text" / "o.mlir").read_text() == (tmp_path / "level" / "o.mlir").read_text()


def test_print_pipeline_names_the_partition_of_a_multi_socket_target(tmp_path, silu_archive, capsys):
    printed = in_process(capsys, "rducc", "--print-pipeline", "-O1", "--target", "sn40l-8")
    assert printed.returncode == 0, show(printed)
    expected = pipeline_text(1).replace("rdu-outline-layers,", "").replace(
        "rdu-canonicalize", "rdu-canonicalize,rdu-outline-layers,rdu-partition", 1)
    assert printed.stdout.strip() == expected  # layers outlined first, partitioned once
    (tmp_path / "text").mkdir(), (tmp_path / "level").mkdir()
    common = ("--target", "sn40l-8", "-o")
    by_text = in_process(capsys, "rducc", silu_archive, "--pass-pipeline", printed.stdout.strip(), *common, tmp_path / "text" / "o.mlir")
    by_level = in_process(capsys, "rducc", silu_archive, "-O1", *common, tmp_path / "level" / "o.mlir")
    assert by_text.returncode == 0 and by_level.returncode == 0, show(by_text) + show(by_level)
    assert (tmp_path / "text" / "o.mlir").read_text() == (tmp_path / "level" / "o.mlir").read_text()


@pytest.mark.parametrize(
    "args, message",
    [
        (["--pass-pipeline", "rdu-canonicalize,no-such-pass"], "unknown pass 'no-such-pass'"),
        (["--pass-pipeline", "rdu-fuse{levl=1}"], "bad options for pass 'rdu-fuse'.*levl"),
        (["--pass-pipeline", "rdu-fuse{level=1"], "bad pass pipeline"),
        (["--pass-pipeline", "cse", "-O1"], "--pass-pipeline replaces the -O pipeline"),
        (["--pass-pipeline", "cse", "--emit", "graph"], "--pass-pipeline replaces the -O pipeline"),
        (["--pass-pipeline", "rdu-canonicalize", "--report"], "need the placed program"),
    ],
)
def test_bad_pipelines_are_clear_errors(args, message, silu_archive, tmp_path, capsys):
    output = tmp_path / "out.mlir"
    result = in_process(capsys, "rducc", silu_archive, *args, "-o", output)
    assert re.search(message, assert_user_error(result)), show(result)
    assert not output.exists()


def test_rducc_opt_names_an_unknown_pass(capsys):
    result = in_process(capsys, "rducc-opt", "-p", "rdu-fusee", ROOT / "test" / "examples" / "fuse-silu.mlir")
    assert "rdu-fusee" in assert_user_error(result, "rducc-opt")


@pytest.mark.parametrize("tool", ["rducc", "rducc-opt"])
def test_list_passes_shows_every_pass_with_description_and_options(tool, capsys):
    result = in_process(capsys, tool, "--load-pass-plugin", FUSE_SILU, "--list-passes")
    assert result.returncode == 0, show(result)
    listing = result.stdout
    for name in parse_passes(pipeline_text(2)):
        assert re.search(rf"^  {name.name} +\S", listing, re.MULTILINE), name.name
    assert re.search(r"^      level: int = 2  0 = every op its own kernel", listing, re.MULTILINE)
    assert re.search(r"^      keep_on_chip: bool = true  Let a value stay in SRAM", listing, re.MULTILINE)
    assert "rdu-insert-dma{keep_on_chip=" in pipeline_text(2)  # one spelling: as --print-pipeline prints it
    plugins = listing.split("passes of plugin files (--load-pass-plugin):")[1].split("\n\n")[0]
    assert re.search(r"^  fuse-silu +Fuse x \* sigmoid\(x\)", plugins, re.MULTILINE)
    assert re.search(r"^  canonicalize ", listing.split("upstream xDSL passes:")[1], re.MULTILINE)


# -- the API's helpers -------------------------------------------------------------


@pytest.fixture(scope="module")
def graph(silu_exported) -> ModuleOp:
    return import_exported(silu_exported)


def body_ops(module: ModuleOp) -> list:
    forward = next(op for op in module.walk() if op.name == "func.func")
    return [op for op in forward.body.block.ops if op.name != "func.return"]


def test_matchers(graph):
    transpose, matmul, bias, sigmoid, mul = body_ops(graph)
    assert api.producer(matmul, 1) is transpose
    assert api.producer(matmul, 0) is None  # the user input, a block argument
    assert api.users(sigmoid.result) == [mul]
    assert api.only_user(sigmoid.result) is mul
    assert api.only_user(bias.result) is None  # sigmoid and mul both use it
    assert api.is_elementwise(bias) and not api.is_elementwise(matmul)
    assert api.map_computes(sigmoid, lambda b, xs: b.sigmoid(xs[0]))
    assert not api.map_computes(sigmoid, lambda b, xs: b.neg(xs[0]))
    assert not api.map_computes(matmul, lambda b, xs: b.sigmoid(xs[0]))
    assert not api.map_computes(sigmoid, lambda b, xs: b.mul(xs[0], xs[1]))  # arity differs
    assert sorted(map(id, api.users(bias.result))) == sorted(map(id, [sigmoid, mul]))  # matching adds no use
    assert api.kernel_of(mul) is None and api.kernels(graph) == []
    assert api.target_of(mul).name == "sn40l"


def test_kernel_of_after_fusion(silu_model, silu_exported):
    model, x = silu_model
    module = import_exported(silu_exported)
    lower(module, load_target("sn40l"), 1, emit="kernels")
    kernels = api.kernels(module)
    assert kernels
    inner = next(op for op in kernels[0].body.block.ops)
    assert api.kernel_of(inner) is kernels[0]


def test_candidate_cost_is_what_the_pipeline_models(silu_model, silu_exported):
    """At -O0 each op is its own kernel with HBM on both sides: the cost the API
    predicts for each op alone is the cost the compiled program reports."""
    model, x = silu_model
    target = load_target("sn40l")
    graph = import_exported(silu_exported)
    lower(graph, target, 0, emit="kernels")
    predicted = [api.kernel_cost(kernel, target) for kernel in api.kernels(graph)]
    reported = rducc.compile(silu_exported, opt_level=0).report.kernels
    assert [p.modeled_time_s for p in predicted] == pytest.approx([r.modeled_time_s for r in reported])
    assert [p.bytes_by_tier for p in predicted] == [r.bytes_by_tier for r in reported]


def test_candidate_cost_of_a_fused_pair_is_cheaper_and_none_when_it_cannot_fit(graph):
    _, _, bias, sigmoid, mul = body_ops(graph)
    target = load_target("sn40l")
    together = api.candidate_cost([sigmoid, mul], target)
    apart = [api.candidate_cost([sigmoid], target), api.candidate_cost([mul], target)]
    assert together.modeled_time_s < sum(c.modeled_time_s for c in apart)
    micro = load_target(str(ROOT / "test" / "passes" / "Inputs" / "micro.toml"))
    huge = torch.nn.Linear(1024, 1024)
    wide = import_exported(torch.export.export(huge, (torch.randn(256, 1024),)))
    assert api.candidate_cost(body_ops(wide), micro) is None
    assert len(body_ops(graph)) == 5  # costing copies the ops; the graph is untouched


def test_build_map_and_merge_maps_verify(graph):
    module = graph.clone()
    _, _, bias, sigmoid, mul = body_ops(module)
    merged = api.merge_maps(sigmoid, mul)
    mul.parent_block().insert_op_before(merged, mul)
    mul.result.replace_all_uses_with(merged.result)
    mul.detach(); mul.erase()
    sigmoid.detach(); sigmoid.erase()
    module.verify()
    half = api.build_map([bias.result, 0.5], bias.result.type, lambda b, xs: b.mul(xs[0], xs[1]))
    assert half.location is not None
    bias.parent_block().insert_op_after(half, bias)
    module.verify()


# -- a tiling heuristic: tile_plans and set_tiling ---------------------------------------


@dataclass(frozen=True)
class MostTiles(api.ModulePass):
    """A tiling heuristic for the tests: the most tiles that fit, instead of rdu-tile."""

    name = "most-tiles"

    def apply(self, ctx, module):
        for kernel in api.kernels(module):
            api.set_tiling(kernel, api.tile_plans(kernel)[-1])


def test_tile_plans_fit_fewest_first_and_rdu_tile_picks_the_first(silu_model, silu_exported):
    model, x = silu_model
    target = load_target(str(ROOT / "test" / "passes" / "Inputs" / "tiny.toml"))
    module = import_exported(silu_exported)
    lower(module, target, 0, emit="kernels")
    for kernel in api.kernels(module):
        plans = api.tile_plans(kernel, target)
        assert plans and [p.count for p in plans] == sorted(p.count for p in plans)
        chosen, _ = best_plan(kernel_group(kernel), target)
        assert (plans[0].count, plans[0].size) == (chosen.count, chosen.size)
    assert any(len(api.tile_plans(k, target)) > 1 for k in api.kernels(module))


def test_a_tiling_heuristic_replaces_rdu_tile_and_the_result_matches_eager(silu_model, silu_exported):
    model, x = silu_model
    pipeline = [MostTiles() if p.name == "rdu-tile" else p for p in default_passes(1)]
    program = rducc.compile(silu_exported, passes=pipeline)
    torch.testing.assert_close(program(x), model(x), rtol=1e-4, atol=1e-5)
    assert max(k.tiles for k in program.report.kernels) > 1
    usual = rducc.compile(silu_exported, opt_level=1)
    assert max(k.tiles for k in usual.report.kernels) == 1


def test_kernel_cost_follows_the_recorded_tiling(silu_model, silu_exported):
    model, x = silu_model
    module = import_exported(silu_exported)
    lower(module, load_target("sn40l"), 1, emit="kernels")
    kernel = api.kernels(module)[0]
    untiled_cost = api.kernel_cost(kernel)
    api.set_tiling(kernel, api.tile_plans(kernel)[-1])
    tiled_cost = api.kernel_cost(kernel)
    assert untiled_cost.tiles == 1 and tiled_cost.tiles == api.tile_plans(kernel)[-1].count > 1


def test_set_tiling_refuses_a_plan_that_does_not_fit(silu_model):
    model, x = silu_model
    micro = load_target(str(ROOT / "test" / "passes" / "Inputs" / "micro.toml"))
    module = import_exported(torch.export.export(torch.nn.Linear(256, 256), (torch.randn(64, 256),)))
    lower(module, load_target("sn40l"), 1, emit="kernels")
    kernel = api.kernels(module)[0]
    with pytest.raises(RduccError, match="need .* bytes of SRAM"):
        api.set_tiling(kernel, api.tile_plans(kernel)[0], micro)
