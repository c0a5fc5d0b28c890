"""No output may be a file the run reads (issue 31 items 4 and 5): the ledger in
rducc.files. Every tool, every kind of input (named, or read because the
program or the deployment names it), every way of naming one file (the path,
a symlink, a hard link): one error line, exit 1, nothing written or touched.
And outputs are made only at the end: a --plot directory is not created by a
run that fails, and `rducc deploy -o LINK` follows the link."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import numpy as np
import pytest

from rducc.errors import RduccError
from rducc.files import declare_outputs, file_session, note_input, text_writer, write_together
from rducc.tools import cli, deploy, opt, run

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "mlp.pt2"


@pytest.fixture(scope="module")
def deployment(tmp_path_factory) -> Path:
    """A deployment of the example twice, as `a` and `b` (one compile)."""
    directory = tmp_path_factory.mktemp("dep") / "deployed"
    assert deploy.main([f"a={EXAMPLE}", f"b={EXAMPLE}", "--target", "sn40l", "-o", str(directory)]) == 0
    return directory


@pytest.fixture()
def work(deployment: Path, tmp_path: Path) -> Path:
    """A private copy of the deployment, an input for it, a trace and a target file."""
    copy = tmp_path / "dep"
    shutil.copytree(deployment, copy)
    np.save(tmp_path / "x.npy", np.random.default_rng(0).standard_normal((4, 32)).astype(np.float32))
    (tmp_path / "trace.jsonl").write_text(json.dumps({"model": "a", "prompt_tokens": 4, "output_tokens": 2,
                                                      "arrival_s": 0}) + "\n")
    (tmp_path / "chip.toml").write_text('inherits = "sn40l"\nname = "chip"\n')
    return tmp_path


def _state(directory: Path) -> dict[str, tuple[bytes, int]]:
    """Every file under `directory` (links as links): its bytes and its mtime."""
    state = {}
    for path in sorted(directory.rglob("*")):
        if path.is_symlink():
            state[str(path)] = (os.readlink(path).encode(), 0)
        elif path.is_file():
            state[str(path)] = (path.read_bytes(), path.stat().st_mtime_ns)
        else:
            state[str(path)] = (b"<dir>", 0)
    return state


def _refused(tool, argv: list[str], directory: Path, capsys, message: str) -> None:
    """One error line naming the problem, exit 1, nothing under `directory` changed."""
    before = _state(directory)
    assert tool.main(argv) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "error: " in err and message in err, err
    assert _state(directory) == before


# --------------------------------------------------------------------------
# rducc-run: the program, the weights it names, a deployment's files
# --------------------------------------------------------------------------


def test_output_is_the_weights_file_the_program_names(work: Path, capsys) -> None:
    program, weights = work / "dep" / "a.mlir", work / "dep" / "a.safetensors"
    _refused(run, [str(program), "--input", str(work / "x.npy"), "--output", str(weights)], work, capsys,
             f"--output {weights} is the weights file the program names")
    _refused(run, [str(program), "--simulate", "--report", str(weights)], work, capsys,
             "is the weights file the program names")


def test_the_weights_the_program_names_stay_an_input_under_weights(work: Path, capsys) -> None:
    """--weights reads another file; the program's own stays its input all the same."""
    other = work / "other.safetensors"
    shutil.copy(work / "dep" / "a.safetensors", other)
    program = str(work / "dep" / "a.mlir")
    _refused(run, [program, "--input", str(work / "x.npy"), "--weights", str(other), "--output",
                   str(work / "dep" / "a.safetensors")], work, capsys, "is the weights file the program names")
    _refused(run, [program, "--input", str(work / "x.npy"), "--weights", str(other), "--output", str(other)], work,
             capsys, f"is --weights {other}")


def test_an_output_that_is_a_loop_of_links(work: Path, capsys) -> None:
    loop = work / "loop.json"
    loop.symlink_to(loop.name)
    _refused(run, [str(work / "dep" / "a.mlir"), "--simulate", "--report", str(loop)], work, capsys,
             "a loop of symbolic links")
    _refused(opt, [str(work / "dep" / "a.mlir"), "-o", str(loop)], work, capsys, "a loop of symbolic links")
    _refused(deploy, [str(EXAMPLE), "-o", str(loop)], work, capsys, "a loop of symbolic links")


def test_output_is_the_program(work: Path, capsys) -> None:
    program = work / "dep" / "a.mlir"
    _refused(run, [str(program), "--input", str(work / "x.npy"), "--output", str(program)], work, capsys,
             "writing it would replace the input")


@pytest.mark.parametrize("link", ["symlink", "hardlink", "dotted"])
def test_each_name_of_an_input_is_that_input(work: Path, capsys, link: str) -> None:
    weights = work / "dep" / "a.safetensors"
    other = work / "other.npz"
    if link == "symlink":
        other.symlink_to(weights)
    elif link == "hardlink":
        os.link(weights, other)
    else:
        other = work / "dep" / ".." / "dep" / "a.safetensors"
    _refused(run, [str(work / "dep" / "a.mlir"), "--input", str(work / "x.npy"), "--output", str(other)], work,
             capsys, "writing it would replace the input")


def test_output_is_a_file_of_the_deployment_run(work: Path, capsys) -> None:
    dep = work / "dep"
    for victim in ("manifest.json", "b.safetensors", "b.mlir"):
        _refused(run, [str(dep), "--model", "a", "--input", str(work / "x.npy"), "--output", str(dep / victim)],
                 work, capsys, "writing it would replace the input")


def test_output_is_the_target_file(work: Path, capsys) -> None:
    chip = work / "chip.toml"
    _refused(run, [str(work / "dep" / "a.mlir"), "--simulate", "--target", str(chip), "--report", str(chip)], work,
             capsys, "writing it would replace the input")


def test_output_is_the_target_file_the_program_names(work: Path, capsys) -> None:
    """A program compiled for a target file names it (`rdu.target`, read by --ranges):
    no output may replace it, with --ranges or without."""
    chip, program = work / "chip.toml", work / "p.mlir"
    assert cli.main([str(EXAMPLE), "--target", str(chip), "-o", str(program), "-q"]) == 0
    for extra in ([], ["--ranges"]):
        _refused(run, [str(program), "--simulate", *extra, "--report", str(chip)], work, capsys,
                 "is the target file the program names")


def test_a_good_run_writes_its_output(work: Path, capsys) -> None:
    out = work / "y.npz"
    assert run.main([str(work / "dep" / "a.mlir"), "--input", str(work / "x.npy"), "--output", str(out)]) == 0
    assert np.load(out)["output_0"].shape == (4, 10)


# --------------------------------------------------------------------------
# the serving simulation
# --------------------------------------------------------------------------


@pytest.mark.parametrize("victim", ["dep/manifest.json", "dep/a.safetensors", "dep/b.mlir", "trace.jsonl",
                                    "chip.toml"])
def test_report_json_is_an_input_of_the_simulation(work: Path, capsys, victim: str) -> None:
    argv = [str(work / "dep"), "--simulate", "--trace", str(work / "trace.jsonl"), "--target", str(work / "chip.toml"),
            "--report-json", str(work / victim)]
    _refused(run, argv, work, capsys, "writing it would replace the input")


def test_report_json_hard_linked_to_the_manifest(work: Path, capsys) -> None:
    os.link(work / "dep" / "manifest.json", work / "report.json")
    argv = [str(work / "dep"), "--simulate", "--trace", str(work / "trace.jsonl"), "--report-json",
            str(work / "report.json")]
    _refused(run, argv, work, capsys, "--report-json")


def test_a_good_simulation_writes_its_report_and_timeline(work: Path, capsys) -> None:
    argv = [str(work / "dep"), "--simulate", "--trace", str(work / "trace.jsonl"), "--report-json",
            str(work / "r.json"), "--plot", str(work / "p" / "q")]
    assert run.main(argv) == 0
    assert json.loads((work / "r.json").read_text())["totals"]["requests"] == 1
    assert (work / "p" / "q" / "timeline.png").read_bytes()[:4] == b"\x89PNG"


# --------------------------------------------------------------------------
# rducc, rducc-opt, rducc deploy
# --------------------------------------------------------------------------


def test_rducc_report_json_is_the_target_file(work: Path, capsys) -> None:
    chip = work / "chip.toml"
    _refused(cli, [str(EXAMPLE), "--target", str(chip), "-o", str(work / "o.mlir"), "--report-json", str(chip)],
             work, capsys, "writing it would replace the input")


def test_rducc_opt_output_is_its_plugin(work: Path, capsys) -> None:
    """rducc-opt edits its input in place when -o names it (test_cli), but no other
    input: a pass plugin it loads is refused."""
    program = work / "dep" / "a.mlir"
    plugin = work / "plugin.py"
    plugin.write_text("from xdsl.passes import ModulePass\n\n\nclass Nothing(ModulePass):\n"
                      "    name = 'nothing'\n\n    def apply(self, ctx, op):\n        pass\n")
    _refused(opt, ["--load-pass-plugin", str(plugin), str(program), "-o", str(plugin)], work, capsys,
             f"-o {plugin} is the pass plugin {plugin}")


def test_deploy_follows_a_link_to_its_directory(work: Path, capsys) -> None:
    """-o LINK --force with LINK a (relative) symlink to a deployment: the deployment
    is replaced where the link points, the link stays, no `.LINK.*.old` is left."""
    (work / "links").mkdir()
    link = work / "links" / "current"
    link.symlink_to(Path("..") / "dep")
    assert deploy.main([f"c={EXAMPLE}", "--target", "sn40l", "-o", str(link), "--force"]) == 0
    assert link.is_symlink() and os.readlink(link) == str(Path("..") / "dep")
    assert sorted(p.name for p in (work / "dep").iterdir()) == ["c.mlir", "c.safetensors", "manifest.json"]
    assert sorted(p.name for p in (work / "links").iterdir()) == ["current"]
    assert not [p for p in work.iterdir() if p.name.startswith((".dep.", ".current."))]


def test_deploy_through_a_dangling_link_makes_its_target(work: Path, capsys) -> None:
    link = work / "next"
    link.symlink_to("made")
    assert deploy.main([f"c={EXAMPLE}", "--target", "sn40l", "-o", str(link)]) == 0
    assert link.is_symlink() and (work / "made" / "manifest.json").is_file()


# --------------------------------------------------------------------------
# --plot DIR: made only at the end, never by a run that fails
# --------------------------------------------------------------------------


def test_plot_directory_is_not_made_by_a_failing_run(work: Path, capsys) -> None:
    plots = work / "a" / "b" / "plots"
    program = str(work / "dep" / "a.mlir")
    _refused(run, [program, "--simulate", "--plot", str(plots), "--plot-kernel", "nope"], work, capsys, "nope")
    (work / "bad.jsonl").write_text('{"model": "zz"}\n')
    _refused(run, [str(work / "dep"), "--simulate", "--trace", str(work / "bad.jsonl"), "--plot", str(plots)], work,
             capsys, "unknown model 'zz'")
    _refused(cli, [str(EXAMPLE), "-o", str(work / "o.mlir"), "--plot", str(plots), "--plot-kernel", "nope"], work,
             capsys, "nope")
    assert not (work / "a").exists() and not (work / "o.mlir").exists()


def test_plot_under_a_file_is_refused_first(work: Path, capsys) -> None:
    (work / "file").write_text("x")
    _refused(run, [str(work / "dep" / "a.mlir"), "--simulate", "--plot", str(work / "file" / "p")], work, capsys,
             "is a file, not a directory")


def test_rducc_writes_its_outputs_and_plots_together(work: Path, capsys) -> None:
    plots = work / "new" / "plots"
    argv = [str(EXAMPLE), "-o", str(work / "o.mlir"), "--report-json", str(work / "r.json"), "--plot", str(plots)]
    assert cli.main(argv) == 0
    assert (work / "o.mlir").is_file() and (work / "o.safetensors").is_file() and (work / "r.json").is_file()
    assert (plots / "sram_map.png").is_file() and (plots / "kernels.dot").is_file()


# --------------------------------------------------------------------------
# the ledger itself
# --------------------------------------------------------------------------


def test_the_ledger_refuses_in_either_order(tmp_path: Path) -> None:
    source = tmp_path / "in.txt"
    source.write_text("keep")
    with file_session():
        declare_outputs([("--out", str(source))])
        with pytest.raises(RduccError, match=f"--out {source} is the thing {source}: writing it would replace"):
            note_input(source, "the thing")
    with file_session():
        note_input(source, "the thing")
        with pytest.raises(RduccError, match="writing it would replace the input"):
            write_together([(str(tmp_path / "new.txt"), text_writer("new")),
                            (str(tmp_path / "." / "in.txt"), text_writer("gone"))])
        assert not (tmp_path / "new.txt").exists()  # nothing written: not even the other output
    assert source.read_text() == "keep"
    write_together([(str(source), text_writer("replaced"))])  # outside a run, as the user asks
    assert source.read_text() == "replaced"
