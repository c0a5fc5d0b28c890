"""How the tools end: exit statuses, Ctrl-C (also while starting), a closed or
full standard output, `rducc-run --output -` (issue 20, items 11 and 15)."""

from __future__ import annotations

import errno
import io
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from rducc.tools import entry
from rducc.tools.cli import run_tool

BIN = Path(sys.executable).parent
EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "mlp.pt2"
TINY = "func.func @f(%x: i32) -> i32 {\n  func.return %x : i32\n}\n"


def _raises(error: BaseException):
    def action() -> None:
        raise error

    return action


@pytest.mark.parametrize(
    "error, status, message",
    [
        (KeyError("lost"), entry.EXIT_INTERNAL, "rducc: internal error: KeyError"),
        (KeyboardInterrupt(), entry.EXIT_INTERRUPTED, "rducc: interrupted\n"),
        (OSError(errno.ENOSPC, "No space left on device"), entry.EXIT_USER_ERROR,
         "rducc: error: cannot write to standard output: No space left on device\n"),
        (BrokenPipeError(errno.EPIPE, "Broken pipe"), entry.EXIT_BROKEN_PIPE, ""),
    ],
)
def test_each_ending_has_its_status(error, status, message, capsys):
    assert run_tool("rducc", _raises(error), debug=False) == status
    err = capsys.readouterr().err
    assert err.startswith(message) if message else err == ""
    assert "Traceback" not in err


def test_statuses_are_distinct():
    codes = [entry.EXIT_OK, entry.EXIT_USER_ERROR, entry.EXIT_USAGE, entry.EXIT_INTERNAL,
             entry.EXIT_INTERRUPTED, entry.EXIT_BROKEN_PIPE]
    assert len(set(codes)) == len(codes)


def test_ctrl_c_while_importing_is_one_line(monkeypatch, capsys):
    def interrupted_import(name: str):
        raise KeyboardInterrupt

    monkeypatch.setattr(entry.importlib, "import_module", interrupted_import)
    assert entry.rducc_opt() == 130
    assert capsys.readouterr().err == "rducc-opt: interrupted\n"


def test_ctrl_c_in_the_installed_tool_is_one_line():
    """SIGINT while the tool runs: it waits on a stdin pipe nobody writes, so the
    signal lands during start-up or the read, never after the tool has finished."""
    process = subprocess.Popen([str(BIN / "rducc-opt")], stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                               stderr=subprocess.PIPE, text=True)
    time.sleep(1.0)
    assert process.poll() is None, "rducc-opt finished without its input"
    process.send_signal(signal.SIGINT)
    _, err = process.communicate(timeout=120)
    assert process.returncode == 130, err
    assert err == "rducc-opt: interrupted\n"


@pytest.fixture(scope="module")
def placed(tmp_path_factory) -> Path:
    """The example compiled (in this process), with its weights beside it."""
    from rducc.tools import cli

    path = tmp_path_factory.mktemp("placed") / "out.mlir"
    assert cli.main([str(EXAMPLE), "-o", str(path), "-q"]) == 0
    return path


def _closed_stdout(*args: object) -> tuple[int, str]:
    """Run a tool whose stdout's reader has gone (`| head` that has read enough)."""
    process = subprocess.Popen([str(a) for a in args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert process.stdout is not None and process.stderr is not None
    process.stdout.close()
    err = process.stderr.read()
    return process.wait(timeout=120), err


def test_closed_pipe_is_a_quiet_exit(tmp_path, placed):
    program = tmp_path / "tiny.mlir"
    program.write_text(TINY)
    assert _closed_stdout(BIN / "rducc-opt", program) == (entry.EXIT_BROKEN_PIPE, "")
    assert _closed_stdout(BIN / "rducc-run", placed, "--simulate") == (entry.EXIT_BROKEN_PIPE, "")


def test_stdout_on_a_full_disk_is_one_error(tmp_path):
    program = tmp_path / "tiny.mlir"
    program.write_text(TINY)
    with open("/dev/full", "w") as full:
        result = subprocess.run([str(BIN / "rducc-opt"), str(program)], stdout=full,
                                stderr=subprocess.PIPE, text=True, timeout=300)
    assert result.returncode == 1, result.stderr
    assert result.stderr == "rducc-opt: error: cannot write to standard output: No space left on device\n"


def test_run_output_dash_writes_npz_to_stdout(placed, tmp_path, monkeypatch, capfdbinary):
    from rducc.tools import run

    monkeypatch.chdir(tmp_path)
    x = np.random.default_rng(0).standard_normal((4, 32)).astype(np.float32)
    np.save("x.npy", x)
    assert run.main([str(placed), "--input", "x.npy", "--output", "y.npz"]) == 0
    capfdbinary.readouterr()
    assert run.main([str(placed), "--input", "x.npy", "--output", "-"]) == 0
    out = capfdbinary.readouterr().out
    assert not (tmp_path / "-").exists()
    np.testing.assert_array_equal(np.load(io.BytesIO(out))["output_0"], np.load("y.npz")["output_0"])


def test_mlir_on_stdout_says_the_weights_were_not_written(capsys):
    from rducc.tools import cli

    assert cli.main([str(EXAMPLE), "-q"]) == 0  # -o - is the default
    captured = capsys.readouterr()
    assert captured.out.startswith("builtin.module")
    assert "rducc: note: the weights were not written" in captured.err and "--weights FILE" in captured.err


def test_rducc_opt_starts_without_the_slow_imports(tmp_path):
    """The lit suite starts rducc-opt about a hundred times: ml_dtypes (seconds on a
    loaded machine) and torch are for compiling and running, not for rducc-opt."""
    program = tmp_path / "tiny.mlir"
    program.write_text(TINY)
    code = (
        "import sys; from rducc.tools import opt; status = opt.main([sys.argv[1]]); "
        "print(status, sorted(m for m in ('ml_dtypes', 'torch') if m in sys.modules))"
    )
    result = subprocess.run([sys.executable, "-c", code, str(program)], capture_output=True, text=True, timeout=120)
    assert result.stdout.splitlines()[-1] == "0 []", result.stdout + result.stderr
