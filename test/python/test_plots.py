"""compiler/tools/plots.py: the SRAM map and kernel-time PNGs, the kernel graph in dot."""

from __future__ import annotations

import shutil

import pytest

pytest.importorskip("matplotlib")
pydot = pytest.importorskip("pydot")

import models  # noqa: E402  (test/python/conftest.py puts examples/ on sys.path)

import rducc  # noqa: E402
from rducc.dialects.tier import ComputeOp  # noqa: E402
from rducc.dialects.contracts import mapping_of  # noqa: E402
from rducc.tools.plots import fabric_views, write_plots  # noqa: E402
from outlining import inline_calls  # noqa: E402

PNG = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def exported():
    return {name: models.export(*getattr(models, name)()) for name in ("mlp", "tiny_llama")}


def _plots(exported, name, opt_level, tmp_path):
    program = rducc.compile(exported[name], opt_level=opt_level)
    written = write_plots(program.module, program.report, tmp_path / "plots")
    running = inline_calls(program.module)  # an outlined layer's kernels at each call
    kernels = sum(isinstance(op, ComputeOp) for op in running.walk())
    return program, written, kernels


def _graph(path):
    graphs = pydot.graph_from_dot_data(path.read_text())
    assert graphs and len(graphs) == 1
    return graphs[0]


def _nodes(graph):
    return {n.get_name().strip('"') for n in graph.get_nodes()} - {"node", "edge", "graph"}


def _edges(graph):
    return {(e.get_source().strip('"'), e.get_destination().strip('"')) for e in graph.get_edges()}


@pytest.mark.parametrize("name, opt_level", [("mlp", 2), ("tiny_llama", 2), ("mlp", 0), ("tiny_llama", 1)])
def test_writes_pngs_dot_and_svg_iff_dot(exported, name, opt_level, tmp_path):
    program, written, kernels = _plots(exported, name, opt_level, tmp_path)
    directory = tmp_path / "plots"
    expected = ["sram_map.png", "kernel_times.png", "fabric.png", "kernels.dot"]
    if shutil.which("dot"):
        expected.append("kernels.svg")
    assert [p.name for p in written] == expected
    assert all(p.parent == directory and p.is_file() for p in written)
    assert (directory / "kernels.svg").exists() == bool(shutil.which("dot"))
    for png in ("sram_map.png", "kernel_times.png", "fabric.png"):
        data = (directory / png).read_bytes()
        assert data.startswith(PNG)
        assert 5_000 < len(data) < 300_000, (png, len(data))
    graph = _graph(directory / "kernels.dot")
    nodes = _nodes(graph)
    assert sum(n.startswith("kernel") for n in nodes) == kernels == len(program.report.kernels)
    assert {"input0", "result0"} <= nodes
    assert len(_edges(graph)) >= kernels  # every kernel reached, results fed


def test_mlp_O0_graph_is_a_chain_with_bytes(exported, tmp_path):
    _, _, kernels = _plots(exported, "mlp", 0, tmp_path)
    assert kernels == 8
    graph = _graph(tmp_path / "plots" / "kernels.dot")
    edges = _edges(graph)
    chain = [("input0", "kernel0")] + [(f"kernel{i}", f"kernel{i + 1}") for i in range(kernels - 1)]
    chain.append((f"kernel{kernels - 1}", "result0"))
    assert set(chain) <= edges
    labels = {(e.get_source().strip('"'), e.get_destination().strip('"')): e.get("label").strip('"')
              for e in graph.get_edges()}
    assert labels[("input0", "kernel0")] == "512 B"  # 4x32xf32
    assert labels[("kernel0", "kernel1")] == "1 KiB"  # 4x64xf32 through HBM
    node = next(n for n in graph.get_nodes() if n.get_name().strip('"') == "kernel0")
    assert "1 matmul" in node.get("label") and "us" in node.get("label")


def test_creates_nested_directory_and_rewrites(exported, tmp_path):
    program = rducc.compile(exported["mlp"], opt_level=2)
    target = tmp_path / "a" / "b"
    first = write_plots(program.module, program.report, target)
    second = write_plots(program.module, program.report, target)
    assert first == second and all(p.exists() for p in second)


def test_missing_matplotlib_is_an_rducc_error(exported, tmp_path, monkeypatch):
    import builtins

    program = rducc.compile(exported["mlp"], opt_level=2)
    real_import = builtins.__import__

    def fake_import(name, *args, **kwargs):
        if name == "matplotlib" or name.startswith("matplotlib."):
            raise ImportError("no matplotlib")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", fake_import)
    with pytest.raises(rducc.errors.RduccError, match="pip install 'rducc\\[plot\\]'"):
        write_plots(program.module, program.report, tmp_path / "p")
    assert not (tmp_path / "p" / "sram_map.png").exists()


def test_svg_from_dot_on_path(exported, tmp_path, monkeypatch):
    """With a `dot` on PATH, kernels.svg is what `dot -Tsvg` makes of kernels.dot
    (given on its standard input; its standard output is written with the others)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake = bin_dir / "dot"
    fake.write_text('#!/bin/sh\n[ "$1" = -Tsvg ] || exit 3\nprintf "<svg>"; cat; printf "</svg>"\n')
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:{__import__('os').environ['PATH']}")
    program = rducc.compile(exported["mlp"], opt_level=2)
    written = write_plots(program.module, program.report, tmp_path / "plots")
    svg = tmp_path / "plots" / "kernels.svg"
    assert written[-1] == svg
    assert svg.read_text() == f"<svg>{(tmp_path / 'plots' / 'kernels.dot').read_text()}</svg>"


def _mapped_computes(module):
    return [op for op in module.walk() if isinstance(op, ComputeOp)]


@pytest.fixture(scope="module")
def tiny_llama_O2(exported):
    return rducc.compile(exported["tiny_llama"], opt_level=2)


def test_fabric_view_is_the_mapping_attribute(tiny_llama_O2):
    """Units per op, sites and sections in the fabric view are what `rdu.mapping` records."""
    program = tiny_llama_O2
    computes = _mapped_computes(program.module)
    views = fabric_views(program.module)
    assert len(views) == len(computes) > 0
    for view, compute in zip(views, computes):
        mapping = mapping_of(compute)
        assert mapping is not None and view.grid == mapping.grid and view.sections == mapping.sections
        assert view.units_per_op() == {(s.section, s.op): s.units for s in mapping.stages}
        assert sorted(len(sites) for _, _, sites in view.buffers) == sorted(b.units for b in mapping.buffers)
        rows, cols = mapping.grid
        for stage in view.stages:
            assert all(0 <= r < rows and 0 <= c < cols and (r + c) % 2 == 0 for r, c in stage.sites)  # PCU sites
            assert 0 <= stage.utilization <= 1  # 0: an op of no FLOPs (a concat)
        for section in range(view.sections):  # each section has its busiest stage, and it is fully busy
            busiest = [s for s in view.stages if s.section == section and s.busiest]
            assert busiest


def test_plot_kernel_draws_one_kernel_or_refuses(tiny_llama_O2, tmp_path):
    program = tiny_llama_O2
    names = [v.kernel for v in fabric_views(program.module)]
    assert any("." in n for n in names)  # an outlined layer's kernel is named after its function
    [view] = fabric_views(program.module, names[-1])
    assert view.kernel == names[-1]
    with pytest.raises(rducc.errors.RduccError, match="--plot-kernel nope: the program has no kernel of that name"):
        write_plots(program.module, program.report, tmp_path / "p", "nope")
    assert not (tmp_path / "p").exists()


def test_rducc_run_simulate_plot(exported, tmp_path, capsys):
    """`rducc-run PROGRAM --simulate --plot DIR --plot-kernel k0` writes the pictures."""
    from rducc.tools import run

    placed = tmp_path / "mlp.mlir"
    rducc.compile(exported["mlp"], opt_level=2).save(placed)
    assert run.main([str(placed), "--simulate", "--plot", str(tmp_path / "p"), "--plot-kernel", "k0"]) == 0
    assert (tmp_path / "p" / "fabric.png").read_bytes().startswith(PNG)
    assert "modeled" in capsys.readouterr().out


def test_fabric_titles_fit_and_stages_are_not_pale(tiny_llama_O2):
    """fabric.png (newcomer item 4): every panel's title lies inside the figure
    and clear of the panels around it, and every stage is drawn at least
    half opaque (it was 0.2 + 0.8 x utilization: pale)."""
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt
    from matplotlib.patches import Rectangle

    from rducc.tools.plots import FABRIC_SHADE, fabric_figure

    views = fabric_views(tiny_llama_O2.module)[:4]  # two rows of panels: enough to collide, quick to draw
    fig = fabric_figure(plt, views, "sn40l")
    try:
        renderer = fig.canvas.get_renderer()
        fig.canvas.draw()
        page = fig.bbox
        drawn = [ax for ax in fig.axes if ax.axison]
        assert len(drawn) >= 2
        for ax in drawn:
            title = ax.title.get_window_extent(renderer)
            assert page.x0 <= title.x0 and title.x1 <= page.x1 and page.y0 <= title.y0 and title.y1 <= page.y1, \
                ax.title.get_text()
            for other in drawn:
                if other is not ax:
                    assert not title.overlaps(other.get_window_extent(renderer)), ax.title.get_text()
            stages = [p for p in ax.patches if isinstance(p, Rectangle) and p.get_alpha() is not None]
            assert stages and min(p.get_alpha() for p in stages) >= FABRIC_SHADE[0] >= 0.45
    finally:
        plt.close(fig)


def test_sram_map_names_each_run_of_a_layer_kernel(tiny_llama_O2):
    """The SRAM map (drawn on the inlined program) names @forward's kernels and
    each call's layer kernels apart: `k0` and `layer[0].k0`, `layer[1].k0`."""
    from rducc.passes.rdu_outline_layers import inline_calls
    from rducc.tools.plots import _computes, _forward, _run_names

    names = _run_names(tiny_llama_O2.module)
    assert len(names) == len(set(names)), names
    assert "k0" in names and "layer[0].k0" in names and "layer[1].k0" in names
    assert len(names) == len(_computes(_forward(inline_calls(tiny_llama_O2.module))))
