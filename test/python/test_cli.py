"""End-to-end tests of the `rducc` and `rducc-opt` console scripts.

Every test runs the tools in a process of their own, as a user would: forked
from a warm server that has imported torch and xDSL once (forked_tools), and,
for one compile and one `rducc-opt`, the installed executables (next to
`sys.executable`) in a fresh interpreter. Runs that share inputs are started
together in module-scoped fixtures, so the suite compiles once per input but
not once per assertion.
"""

from __future__ import annotations

import inspect
import os
import pickle
import re
import stat
import subprocess
import sys
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import torch
from forked_tools import tool as forked_tool
from forked_tools import tool_env
from torch import nn

from rducc import __version__

BIN = Path(sys.executable).parent
RDUCC = BIN / "rducc"
RDUCC_OPT = BIN / "rducc-opt"
ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "mlp.pt2"

STAGES = ("load", "decompose", "import", "verify", "print", "write", "total")

# The environment the tools run in: the caller's, minus knobs that would change
# what is being tested (forced torch.load modes, warning filters).
ENV = {
    key: value
    for key, value in os.environ.items()
    if key not in {"TORCH_FORCE_WEIGHTS_ONLY_LOAD", "TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD",
                   "PYTHONWARNINGS"}
}


def run(tool: Path, *args: object, cwd: Path | None = None, umask: int | None = None,
        fresh: bool = False) -> subprocess.CompletedProcess[str]:
    """Run one console script (BIN's `tool`) and capture everything it prints: in a
    process forked from the warm server, or with `fresh`, the installed script."""
    command = str(tool) if fresh else str(forked_tool(Path(tool).name))
    return subprocess.run(
        [command, *map(str, args)],
        capture_output=True, text=True, cwd=cwd, env=ENV if fresh else tool_env(ENV), timeout=600,
        preexec_fn=None if umask is None else (lambda: os.umask(umask)),
    )


def run_all(jobs: dict[str, tuple], fresh: tuple[str, ...] = ()) -> dict[str, subprocess.CompletedProcess[str]]:
    """Run several `(tool, *args)` jobs concurrently (those named in `fresh` as the
    installed script); results by job name."""
    with ThreadPoolExecutor(max_workers=max(2, os.cpu_count() or 2)) as pool:
        futures = {name: pool.submit(run, *job, fresh=name in fresh) for name, job in jobs.items()}
        return {name: future.result() for name, future in futures.items()}


def show(result: subprocess.CompletedProcess[str]) -> str:
    return f"rc={result.returncode}\n--- stdout\n{result.stdout[:3000]}\n--- stderr\n{result.stderr}"


def error_message(result: subprocess.CompletedProcess[str], tool: str = "rducc") -> str:
    """The single `<tool>: error:` message of a failed run (with its continuation lines)."""
    lines = result.stderr.splitlines()
    starts = [i for i, line in enumerate(lines) if line.startswith(f"{tool}: error:")]
    assert len(starts) == 1, f"expected exactly one '{tool}: error:' line\n{show(result)}"
    return "\n".join(lines[starts[0]:])


def assert_user_error(result: subprocess.CompletedProcess[str], tool: str = "rducc") -> str:
    """Exit status 1, one error message, no traceback, no 'internal error'."""
    assert result.returncode == 1, show(result)
    assert "Traceback" not in result.stderr, show(result)
    assert "internal error" not in result.stderr, show(result)
    return error_message(result, tool)


# --------------------------------------------------------------------------
# Models built by the tests
# --------------------------------------------------------------------------


class UsesUnsupportedOps(nn.Module):
    """Three tensors read back as Python numbers (`.item()`) and used as elu's scale:
    data-dependent, which rducc refuses (a number read back enters tensor ops as a
    0-dim tensor, but `elu` has no tensor form, and torch's decomposition of it
    multiplies the scale by alpha in Python)."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        peak = x.abs().max().item()  # marker: item-1
        floor = x.min().item()  # marker: item-2
        middle = x.mean().item()  # marker: item-3
        elu = torch.ops.aten.elu.default
        return elu(x, 2.0, floor) - elu(x, 2.0, peak) + elu(x, 2.0, middle)


def source_line_of(function, marker: str) -> int:
    """The line number of the line in `function` that carries `# marker: <marker>`."""
    lines, start = inspect.getsourcelines(function)
    hits = [start + i for i, line in enumerate(lines) if line.rstrip().endswith(f"# marker: {marker}")]
    assert len(hits) == 1, marker
    return hits[0]


class Hostile:
    """Unpickling this creates `marker`: proof that a loader ran pickle code."""

    def __init__(self, marker: Path):
        self.marker = str(marker)

    def __reduce__(self):
        return (open, (self.marker, "w"))


# --------------------------------------------------------------------------
# Fixtures
# --------------------------------------------------------------------------


@pytest.fixture(scope="module")
def example() -> Path:
    assert EXAMPLE.is_file(), f"{EXAMPLE} is missing: run examples/make_example.py"
    return EXAMPLE


@pytest.fixture(scope="module")
def compiled(tmp_path_factory, example):
    """The bundled example compiled five ways, concurrently (to a file by the
    installed `rducc` in a fresh interpreter: its start-up is part of what is tested)."""
    out = tmp_path_factory.mktemp("compiled")
    runs = run_all({
        "file": (RDUCC, example, "-o", out / "out.mlir"),
        "stdout": (RDUCC, example, "-o", "-"),
        "default": (RDUCC, example),
        "no_locations": (RDUCC, example, "--no-locations", "-o", out / "plain.mlir"),
        "timings": (RDUCC, example, "--timings", "-o", out / "timed.mlir"),
    }, fresh=("file",))
    for name, result in runs.items():
        assert result.returncode == 0, f"{name}: {show(result)}"
    return out, runs


@pytest.fixture(scope="module")
def unsupported_model(tmp_path_factory) -> Path:
    torch.manual_seed(0)
    path = tmp_path_factory.mktemp("unsupported") / "unsupported.pt2"
    with torch.no_grad():
        program = torch.export.export(UsesUnsupportedOps().eval(), (torch.randn(4, 8),))
    torch.export.save(program, str(path))
    return path


# --------------------------------------------------------------------------
# Successful compiles
# --------------------------------------------------------------------------


def test_compile_to_file(compiled):
    out, runs = compiled
    text = (out / "out.mlir").read_text()
    assert runs["file"].stdout == ""
    # the default: -O2 for sn40l, the fully placed program
    assert text.startswith('builtin.module attributes {rdu.level = #rdu<level placed>, rdu.target = #rdu.target<{name = "sn40l"')
    assert re.search(r"\n\} loc\(unknown\)\n\Z", text), text[-200:]
    assert "func.func @forward(" in text
    assert "loc(" in text
    # Source locations point at the model's Python source, not at torch internals.
    assert re.search(r'loc\("[^"]*models\.py":\d+:\d+\)', text), text[:2000]
    assert "site-packages/torch" not in text
    for name, shape in [("fc1.weight", "64x32"), ("fc2.weight", "64x64"), ("fc3.bias", "10")]:
        assert f"tier.global @{name} in hbm : tensor<{shape}xf32>" in text
    assert "-> !tier.buffer<hbm, 4x10xf32>" in text
    assert "tier.compute" in text and "tier.alloc offset" in text


def test_output_file_reparses_with_rducc_opt(compiled):
    out, _ = compiled
    result = run(RDUCC_OPT, out / "out.mlir", fresh=True)
    assert result.returncode == 0, show(result)
    assert "func.func @forward(" in result.stdout
    assert "rdu.matmul" in result.stdout


def test_no_locations_output_round_trips_through_rducc_opt(compiled):
    out, _ = compiled
    text = (out / "plain.mlir").read_text()
    assert "loc(" not in text
    assert "func.func @forward(" in text
    result = run(RDUCC_OPT, out / "plain.mlir")
    assert result.returncode == 0, show(result)
    assert result.stdout.rstrip() == text.rstrip()


def test_no_locations_differs_only_in_locations(compiled):
    out, _ = compiled
    with_locs = (out / "out.mlir").read_text()
    without = (out / "plain.mlir").read_text()
    stripped = re.sub(r" loc\((?:[^()]|\([^()]*\))*\)", "", with_locs)
    # each output names its own weights sidecar
    assert 'rdu.weights = "out.safetensors"' in stripped and 'rdu.weights = "plain.safetensors"' in without
    assert stripped.replace("out.safetensors", "plain.safetensors") == without


def _without_weights(text: str) -> str:
    """The MLIR less its `rdu.weights` attribute (each file names its own sidecar;
    stdout names none)."""
    return re.sub(r', rdu\.weights = "[^"]*"', "", text)


def test_dash_o_dash_writes_to_stdout(compiled):
    out, runs = compiled
    assert runs["stdout"].stdout == _without_weights((out / "out.mlir").read_text())
    assert not (out / "-").exists()
    assert not Path("-").exists()


def test_stdout_is_the_default_output(compiled):
    out, runs = compiled
    assert runs["default"].stdout == _without_weights((out / "out.mlir").read_text())


def test_timings_go_to_stderr(compiled):
    out, runs = compiled
    result = runs["timings"]
    assert result.stdout == ""
    assert _without_weights((out / "timed.mlir").read_text()) == _without_weights((out / "out.mlir").read_text())
    assert "rducc: time by stage" in result.stderr
    for stage in STAGES:
        assert re.search(rf"^\s+{stage}\s+\d+\.\d{{3}} s$", result.stderr, re.M), (stage, result.stderr)
    assert "time by stage" not in runs["file"].stderr


def test_compile_leaves_no_temp_files(compiled):
    out, _ = compiled
    assert sorted(p.name for p in out.iterdir()) == [
        "out.mlir", "out.safetensors", "plain.mlir", "plain.safetensors", "timed.mlir", "timed.safetensors",
    ]


def test_successful_compile_prints_one_line_saying_what_it_wrote(compiled, example, tmp_path):
    # torch's deprecation notices (FutureWarning from run_decompositions) are not the user's;
    # the one line says which files were written (newcomer item 6), and -q silences it
    out, runs = compiled
    for name, stem in (("file", "out"), ("no_locations", "plain")):
        assert runs[name].stderr == f"rducc: wrote {out / stem}.safetensors and {out / stem}.mlir\n", \
            f"{name}: {show(runs[name])}"
    quiet = run(RDUCC, example, "-q", "-o", tmp_path / "quiet.mlir")
    assert quiet.returncode == 0 and quiet.stderr == "", show(quiet)
    for name in ("stdout", "default"):  # only the note that the weights went nowhere
        lines = runs[name].stderr.splitlines()
        assert len(lines) == 1 and lines[0].startswith("rducc: note: the weights were not written"), show(runs[name])


def test_output_file_mode_follows_umask(tmp_path, example):
    result = run(RDUCC, example, "--no-locations", "-o", tmp_path / "out.mlir", umask=0o022)
    assert result.returncode == 0, show(result)
    assert stat.S_IMODE((tmp_path / "out.mlir").stat().st_mode) == 0o644


# --------------------------------------------------------------------------
# Flags that do not compile
# --------------------------------------------------------------------------


def help_entries(text: str) -> dict[str, str]:
    """argparse's option list: each flag spelling to its whole entry (flags and description)."""
    entries: list[list[str]] = []
    for line in text.split("options:", 1)[1].splitlines():
        if re.match(r"^  -", line):
            entries.append([line])
        elif entries and line.strip():
            entries[-1].append(line)
    by_flag = {}
    for lines in entries:
        entry = " ".join(part.strip() for part in lines)
        for flag in re.findall(r"(?:^|, )(-[-\w]+)", entry.split("  ")[0]):
            by_flag[flag] = entry
    return by_flag


def test_help_documents_every_flag():
    result = run(RDUCC, "--help")
    assert result.returncode == 0, show(result)
    assert result.stdout.startswith("usage: rducc")
    entries = help_entries(result.stdout)
    described = {
        "-o": "where to write the MLIR", "--output": "'-' for stdout",
        "--emit": "graph", "-O": "whole layers", "--target": "sn40l-16", "--weights": "safetensors",
        "--report": "modeled time", "--report-json": "JSON", "--plot": "SRAM allocation map",
        "-q": "progress", "--quiet": "progress",
        "--no-locations": "loc(", "--timings": "stderr",
        "--list-ops": "ATen operators", "--debug": "traceback", "--version": "version",
        "--pass-pipeline": "instead of the -O one", "--load-pass-plugin": "Python file",
        "--verify-each": "after every pass", "--list-passes": "description and options",
        "--print-pipeline": "would run", "--plot-kernel": "fabric",
        "--f64": "refuse", "--no-host-ops": "host CPU", "--import-module": "custom operator",
        "--tp": "tensor-parallel", "--pp": "pipeline stages", "--dp": "data-parallel", "--zero": "ZeRO stage 1",
        "--sequence-parallel": "tokens",
        "--ep": "experts", "--shapes": "dynamic_shapes", "--pad-dims": "vouch", "--capacity": "per-expert count",
        "--max-grad-norm": "clip_grad_norm_",
        "--train": "training step", "--optimizer": "adamw", "--lr": "lr", "--momentum": "momentum",
        "--dampening": "dampening", "--weight-decay": "weight_decay", "--eps": "eps", "--betas": "betas",
        "--nesterov": "nesterov", "--amsgrad": "amsgrad", "--maximize": "maximize",
        "--mixed-precision": "bf16", "--loss-scale": "GradScaler", "--init-scale": "first scale",
        "--growth-interval": "good steps", "--microbatches": "accumulate",
        "--help": "help",
    }
    for flag, words in described.items():
        assert flag in entries, (flag, sorted(entries))
        assert words in entries[flag], (flag, entries[flag])
    assert set(entries) == set(described) | {"-h"}
    assert "input" in result.stdout.split("options:")[0]


def test_run_help_documents_import_module():
    """rducc-run's --import-module (a custom op the program runs on the host), in its help."""
    result = run(BIN / "rducc-run", "--help")
    assert result.returncode == 0, show(result)
    entry = help_entries(result.stdout)["--import-module"]
    assert "custom operator" in entry and "on the host" in entry


def test_tp_and_pp_flags_reach_rdu_partition(tmp_path):
    """--tp/--pp set the -O pipeline's rdu-partition: the program records the split and
    --print-pipeline shows it."""
    out = tmp_path / "out.mlir"
    jobs = {
        "tp": (RDUCC, EXAMPLE, "--target", "sn40l-8", "--tp", "2", "-o", out),
        "pipeline": (RDUCC, "--print-pipeline", "--target", "sn40l-16", "--tp", "8", "--pp", "2"),
        "experts": (RDUCC, "--print-pipeline", "--target", "sn40l-16", "--ep", "8"),
    }
    results = run_all(jobs)
    assert results["tp"].returncode == 0, show(results["tp"])
    assert "rdu.partition = {tp = 2 : i64, pp = 1 : i64}" in out.read_text()
    assert "rdu-canonicalize,rdu-outline-layers,rdu-partition{tp=8 pp=2}," in results["pipeline"].stdout
    assert "rdu-partition{ep=8}," in results["experts"].stdout


def test_version():
    result = run(RDUCC, "--version")
    assert result.returncode == 0, show(result)
    assert result.stdout.strip() == f"rducc {__version__}"


def test_list_ops():
    result = run(RDUCC, "--list-ops")
    assert result.returncode == 0, show(result)
    ops = result.stdout.splitlines()
    for op in ("aten.addmm.default", "aten.relu.default", "aten.gelu.default"):
        assert op in ops
    assert ops == sorted(set(ops))
    assert all(re.fullmatch(r"(aten|prims|quantized_decomposed|transformers)\.\w+\.\w+", op) for op in ops), ops
    assert "aten.nonzero.default" in ops  # a data-dependent size: compiled for the example's, checked at run time
    assert "aten._unique.default" in ops  # torch._unique: compiled as unique(sorted=True) for the example's count
    assert "aten.unique_dim_consecutive.default" not in ops  # no form of its own (torch.export refuses it)
    assert result.stderr == ""


def test_unknown_emit_level_is_rejected(example):
    result = run(RDUCC, example, "--emit", "silicon")
    assert result.returncode == 2, show(result)
    assert "invalid choice: 'silicon'" in result.stderr
    assert result.stdout == ""


# --------------------------------------------------------------------------
# Bad inputs (the table of cases is test_errors.py; these look closer)
# --------------------------------------------------------------------------

def test_unsupported_ops_are_all_listed_with_counts_and_first_use(tmp_path, unsupported_model):
    message = assert_user_error(run(RDUCC, unsupported_model, "-o", tmp_path / "out.mlir"))
    file = UsesUnsupportedOps.forward.__code__.co_filename
    lines = {source_line_of(UsesUnsupportedOps.forward, f"item-{i}") for i in (1, 2, 3)}
    first_line = source_line_of(UsesUnsupportedOps.forward, "item-1")

    header, *rows = message.splitlines()
    entry = re.compile(r"  (aten\.\w+\.\w+(?: \(.*\))?): (\d+) uses?, first at (.+?):(\d+):(\d+): (.*)")
    parsed = {}
    for row in rows:
        match = entry.fullmatch(row)
        assert match, f"malformed row {row!r} in\n{message}"
        name, count, where, line, _, code = match.groups()
        parsed[name] = (int(count), where, int(line), code)
    assert header == (f"rducc: error: the model uses {len(parsed)} operator"
                      f"{'s' if len(parsed) > 1 else ''} rducc cannot import:")

    item = ("aten._local_scalar_dense.default (a tensor read back as a Python number and passed to "
            "aten.elu.default as a Scalar: that op has no Tensor overload, and torch's decomposition of it does "
            "not keep the number a value (it computes with it in Python or branches on it))")
    assert parsed[item] == (3, file, first_line, "peak = x.abs().max().item()  # marker: item-1")
    assert list(parsed) == sorted(parsed)
    for _, where, line, _ in parsed.values():
        assert where == file and line in lines

    # Every read-back in the decomposed graph is counted.
    graph = torch.export.load(str(unsupported_model)).run_decompositions().graph
    reads = Counter(str(node.target) for node in graph.nodes if node.op == "call_function")
    assert reads["aten._local_scalar_dense.default"] == 3 == sum(count for count, *_ in parsed.values())


def test_debug_shows_the_traceback(tmp_path):
    plain = tmp_path / "plain_pickle.pt2"
    plain.write_bytes(pickle.dumps({"weights": [1.0, 2.0]}))
    result = run(RDUCC, "--debug", plain)
    assert result.returncode == 1, show(result)
    assert "Traceback" in result.stderr
    assert "RduccError" in result.stderr
    assert error_message(result).startswith("rducc: error:")


def test_hostile_pickle_is_never_unpickled(tmp_path):
    marker = tmp_path / "pwned"
    payload = pickle.dumps(Hostile(marker))
    evil = tmp_path / "model.pt2"
    evil.write_bytes(payload)
    result = run(RDUCC, evil, "-o", tmp_path / "out.mlir")
    assert "pickle" in assert_user_error(result)
    assert not marker.exists()
    assert not (tmp_path / "out.mlir").exists()
    # The payload is live: unpickling it for real does create the marker.
    pickle.loads(payload).close()
    assert marker.exists()


# --------------------------------------------------------------------------
# rducc-opt
# --------------------------------------------------------------------------


def test_rducc_opt_in_place(compiled, tmp_path):
    out, _ = compiled
    text = (out / "plain.mlir").read_text()
    path = tmp_path / "in_place.mlir"
    path.write_text(text)
    result = run(RDUCC_OPT, path, "-o", path)
    assert result.returncode == 0, show(result)
    assert path.read_text().rstrip() == text.rstrip()


# --------------------------------------------------------------------------
# Opt levels and targets
# --------------------------------------------------------------------------


def _kernel_count(text: str) -> int:
    return text.count("tier.compute ")


def test_opt_levels_and_targets(compiled, tmp_path):
    # every level on one socket, and the multi-socket targets at -O2 (each run is a process
    # that loads torch: the 9 combinations took 36 s of CI); -O2 on sn40l is the default,
    # the `compiled` fixture's --no-locations run
    combinations = [(level, "sn40l") for level in (0, 1)] + [(2, "sn40l-8"), (2, "sn40l-16")]
    runs = run_all({
        f"O{level}-{target}": (RDUCC, EXAMPLE, f"-O{level}", "--target", target, "--no-locations", "-o", tmp_path / f"O{level}-{target}.mlir")
        for level, target in combinations
    })
    for name, result in runs.items():
        assert result.returncode == 0, (name, show(result))
    outputs = [tmp_path / "O0-sn40l.mlir", tmp_path / "O1-sn40l.mlir", compiled[0] / "plain.mlir"]
    kernels = [_kernel_count(path.read_text()) for path in outputs]
    assert kernels[0] > kernels[1] > kernels[2] == 1
    for target in ("sn40l-8", "sn40l-16"):
        assert f'rdu.target = #rdu.target<{{name = "{target}"' in (tmp_path / f"O2-{target}.mlir").read_text()


def _target_file(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def test_own_target_file_is_used(tmp_path):
    # a chip with 12 KB of SRAM: fc2's 16 KB weight must stream in tiles
    target = _target_file(tmp_path, "small.json", '{"inherits": "sn40l", "name": "small", "sram_bytes": 12000, "pmu_bytes": 500, "pmus": 24}')
    out = tmp_path / "out.mlir"
    result = run(RDUCC, EXAMPLE, "-O0", "--target", target, "--no-locations", "-o", out)
    assert result.returncode == 0, show(result)
    text = out.read_text()
    assert "scf.for" in text and "buffers 2" in text
    assert "tier.sram_capacity = 12000" in text


@pytest.mark.parametrize("seen", ["hello\nworld\n", "hello\nthere\n"])
def test_filecheck_in_the_fork_server_is_the_installed_script(tmp_path, seen: str) -> None:
    """The lit suite's `filecheck` RUN lines run in the fork server's light process
    (test/lit_fork): the client's stdin read, the same exit status and messages as
    the installed script, on the client's streams whatever the server's own were (a
    server started with its stderr on a file, as under pytest's capture, once made
    FileCheck's `reconfigure` fail to seek on the client's pipe)."""
    checks = tmp_path / "checks.txt"
    checks.write_text("// CHECK: hello\n// CHECK-NEXT: world\n")
    command = [str(checks), "--input-file", "-"]
    forked = subprocess.run([str(forked_tool("filecheck")), *command], input=seen, capture_output=True,
                            text=True, env=tool_env(), timeout=120)
    installed = subprocess.run([str(Path(sys.executable).parent / "filecheck"), *command], input=seen,
                               capture_output=True, text=True, timeout=120)
    assert (forked.returncode, forked.stdout, forked.stderr) == (
        installed.returncode, installed.stdout, installed.stderr)
    assert installed.returncode == (0 if seen.endswith("world\n") else 1)
