"""Files as rducc reads and writes them (issue 20, items 6-10), below the CLI:
the weights header check against the safetensors library's own, the MLIR and
its weights written as one pair, outputs that are links or FIFOs. The CLI's
messages for the same inputs are rows of the error table (error_cases.py)."""

from __future__ import annotations

import os
import stat
import threading
from pathlib import Path

import numpy as np
import pytest
from safetensors import SafetensorError
from safetensors.numpy import load_file, save_file

import error_cases
from rducc.errors import RduccError
from rducc.files import write_atomically_bytes, write_together
from rducc.weights import load_weights


@pytest.mark.parametrize("key", sorted(error_cases._BAD_HEADERS))
def test_every_refused_header_is_one_safetensors_refuses(key, tmp_path):
    """The checks are the library's rules: what rducc refuses, safetensors refuses too."""
    path = tmp_path / "bad.safetensors"
    error_cases._safetensors(path, *error_cases._BAD_HEADERS[key])
    with pytest.raises(RduccError, match=f"weights file {path}"):
        load_weights(path)
    if key != "w_metadata":  # the Rust reader ignores __metadata__'s value types
        with pytest.raises((SafetensorError, ValueError, OverflowError)):
            load_file(path)


def test_a_file_the_library_writes_reads_back(tmp_path):
    path = tmp_path / "good.safetensors"
    arrays = {"b": np.arange(6, dtype=np.int64).reshape(2, 3), "a": np.ones(3, np.float32),
              "empty": np.zeros((0, 4), np.float16), "scalar": np.array(2.5, np.float64)}
    save_file(arrays, path)
    loaded = load_weights(path)
    assert sorted(loaded) == sorted(arrays)
    for name, array in arrays.items():
        np.testing.assert_array_equal(loaded[name], array)
        assert loaded[name].dtype == array.dtype and loaded[name].flags.writeable
    assert sorted(load_weights(path, {"a"})) == ["a"]  # only what the program declares


def _old(path: Path, text: bytes) -> None:
    path.write_bytes(text)


def test_a_failed_rename_restores_the_pair(tmp_path, monkeypatch):
    """The sidecar is committed first; when the MLIR's rename then fails, the old
    sidecar comes back (before: the new weights stayed beside the old MLIR)."""
    weights, mlir = tmp_path / "out.safetensors", tmp_path / "out.mlir"
    _old(weights, b"old weights")
    _old(mlir, b"old mlir")
    real_replace = os.replace

    def failing(source, destination):
        if Path(destination) == mlir:
            raise OSError(28, "No space left on device")
        return real_replace(source, destination)

    monkeypatch.setattr(os, "replace", failing)
    import torch

    from rducc.tools.cli import _write_outputs

    with pytest.raises(RduccError, match="cannot write .*out.mlir: No space left on device"):
        _write_outputs(str(mlir), "new mlir", weights, {"w": torch.ones(2)})
    monkeypatch.setattr(os, "replace", real_replace)
    assert weights.read_bytes() == b"old weights" and mlir.read_bytes() == b"old mlir"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.mlir", "out.safetensors"]


def test_a_failed_write_replaces_neither(tmp_path):
    weights, mlir = tmp_path / "w.safetensors", tmp_path / "new.mlir"
    _old(weights, b"old weights")

    def broken(stream):
        stream.write(b"half")
        raise RduccError("printing failed")

    with pytest.raises(RduccError, match="printing failed"):
        write_together([(str(weights), lambda s: s.write(b"new")), (str(mlir), broken)])
    assert weights.read_bytes() == b"old weights" and not mlir.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["w.safetensors"]


def test_a_symlinked_output_keeps_its_link(tmp_path):
    real = tmp_path / "real.mlir"
    _old(real, b"old")
    link = tmp_path / "link.mlir"
    link.symlink_to(real)
    write_atomically_bytes(str(link), b"new")
    assert link.is_symlink() and real.read_bytes() == b"new"


def test_a_fifo_output_is_written_in_place(tmp_path):
    fifo = tmp_path / "out.fifo"
    os.mkfifo(fifo)
    received: list[bytes] = []
    reader = threading.Thread(target=lambda: received.append(fifo.read_bytes()))
    reader.start()
    write_atomically_bytes(str(fifo), b"streamed")
    reader.join(timeout=30)
    assert received == [b"streamed"]
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)  # not replaced by a regular file


def _dense_module(values: np.ndarray, element: str) -> str:
    shape = "x".join(str(d) for d in values.shape)
    body = np.array2string(values, separator=", ", threshold=values.size + 1, max_line_width=10**9,
                           floatmode="unique").replace("\n", "")
    return (f"func.func @f() -> tensor<{shape}x{element}> {{\n  %c = arith.constant dense<{body}> : "
            f"tensor<{shape}x{element}>\n  func.return %c : tensor<{shape}x{element}>\n}}\n")


def _parse(text: str):
    from xdsl.parser import Parser

    from rducc.tools.opt import RduccOptMain

    return Parser(RduccOptMain(args=["x.mlir"]).ctx, text, "x.mlir").parse_module()


@pytest.mark.parametrize("element", ["f32", "f16", "i32", "i8"])
def test_long_dense_literals_parse_to_the_same_values(element):
    """The hex rewrite of a long literal gives exactly the attribute xDSL's own
    parser gives (it is only faster and smaller)."""
    from rducc.diagnostics import compact_dense_literals

    rng = np.random.default_rng(1)
    dtype = {"f32": np.float32, "f16": np.float16, "i32": np.int32, "i8": np.int8}[element]
    if element.startswith("f"):
        values = (rng.standard_normal((100, 120)) * 100).astype(dtype)
    else:
        values = rng.integers(np.iinfo(dtype).min, np.iinfo(dtype).max, (100, 120), dtype=dtype)
    text = _dense_module(values, element)
    compacted = compact_dense_literals(text)
    assert compacted != text and 'dense<"0x' in compacted
    assert compacted.count("\n") == text.count("\n")
    assert _parse(compacted).is_structurally_equivalent(_parse(text))


def test_a_malformed_long_literal_is_left_to_the_parser():
    from rducc.diagnostics import compact_dense_literals

    text = _dense_module(np.zeros((60, 120), np.float32), "f32")
    ragged = text.replace("], [", ", 0.0], [", 1)  # one row longer than the type says
    assert compact_dense_literals(ragged) == ragged
    wrong_count = text.replace("tensor<60x120xf32>", "tensor<60x121xf32>")
    assert compact_dense_literals(wrong_count) == wrong_count


_REPEATED_TYPES = """builtin.module {
  func.func @f(%x: tensor<4x8xf32>, %y: tensor<4x8xf32>, %z: tensor<4x8xf32 >) -> tensor<4x8xf32> {
    %a = tier.alloc : !tier.buffer<hbm, 4x8xf32>
    %b = tier.alloc offset 0 : !tier.buffer<sram, 4x8xf32>
    %c = tier.alloc offset 0 : !tier.buffer<sram, 4x8xf32>
    %d = tier.alloc : !tier.buffer<hbm , 4x8xf32 >
    func.return %x : tensor<4x8xf32>
  }
}"""


def _located(text: str):
    from rducc.diagnostics import LocatedParser
    from rducc.tools.opt import RduccOptMain

    return LocatedParser(RduccOptMain(args=["x.mlir"]).ctx, text, "x.mlir").parse_module()


def test_a_type_spelt_again_is_read_once_to_the_same_module():
    """rducc's parser reads each distinct type text once (a placed program repeats a few thousand
    times): the module is xDSL's own, the repeats are the very attribute read first, and a text
    spelt differently (spaces) is read on its own to an equal one."""
    from xdsl.dialects import func

    module = _located(_REPEATED_TYPES)
    assert str(module) == str(_parse(_REPEATED_TYPES))
    body = next(op for op in module.ops if isinstance(op, func.FuncOp)).body.block
    x, y, z = body.args
    assert x.type is y.type and z.type == x.type
    a, b, c, d = (op.results[0].type for op in list(body.ops)[:4])
    assert b is c and d == a and a != b


@pytest.mark.parametrize("wrong, message", [
    ("!tier.buffer<sram, 4x8xf32>\n    %d", "Expected shape type"),  # the second sram buffer
    ("tensor<4x8xf32 >)", "Expected shape type"),
])
def test_a_wrong_later_spelling_of_a_type_read_before_is_still_refused(wrong, message):
    """The memo only skips a text read before: a later spelling that differs is read, and refused,
    by xDSL at its own place."""
    from xdsl.utils.exceptions import ParseError

    broken = _REPEATED_TYPES.replace(wrong, wrong.replace("4x8xf32", "4x8xf33", 1), 1)
    assert broken != _REPEATED_TYPES
    with pytest.raises(ParseError, match=message) as error:
        _located(broken)
    with pytest.raises(ParseError) as theirs:
        _parse(broken)
    assert str(error.value) == str(theirs.value)


class _Terminal:
    """A stream that says it is a terminal, keeping what is written."""

    def __init__(self):
        self.text = ""

    def isatty(self) -> bool:
        return True

    def write(self, text: str) -> None:
        self.text += text

    def flush(self) -> None:
        pass


def test_a_long_run_shows_its_progress_on_a_terminal():
    import time

    from rducc.tools.run import Ticker

    terminal = _Terminal()
    with Ticker(terminal, after_s=0.05, every_s=0.05):
        deadline = time.monotonic() + 60  # a busy machine may start the ticker late
        while "so far" not in terminal.text and time.monotonic() < deadline:
            time.sleep(0.05)
    assert "rducc-run: running, 0 s so far (Ctrl-C stops it)" in terminal.text
    assert terminal.text.endswith("\r\x1b[2K")  # the line is cleared at the end
    quiet = _Terminal()
    with Ticker(quiet, after_s=5.0):
        pass  # a short run shows nothing
    assert quiet.text == ""


def test_ctrl_c_stops_a_loop_of_10_12_trips(tmp_path):
    """A loop that would run for days shows its progress on a terminal and stops
    on SIGINT: the line cleared, one `interrupted` line, exit status 130."""
    import pty
    import signal
    import subprocess
    import sys
    import time

    import rducc

    placed = tmp_path / "placed.mlir"
    rducc.compile(str(error_cases.EXAMPLE)).save(placed)
    text = placed.read_text()
    loop = ("    %lo = arith.constant 0 : index\n    %hi = arith.constant 1000000000000 : index\n"
            "    %st = arith.constant 1 : index\n    scf.for %i = %lo to %hi step %st {\n    }\n")
    ret = text.index("    func.return")
    (tmp_path / "long.mlir").write_text(text[:ret] + loop + text[ret:])
    np.save(tmp_path / "x.npy", np.zeros((4, 32), np.float32))
    tool = Path(sys.executable).parent / "rducc-run"
    master, terminal = pty.openpty()
    process = subprocess.Popen([str(tool), "long.mlir", "--input", "x.npy"], cwd=tmp_path,
                               stderr=terminal, stdout=subprocess.DEVNULL,
                               env={**os.environ, "RDUCC_PROGRESS_AFTER": "0.5"})
    os.close(terminal)
    shown, deadline = b"", time.monotonic() + 240
    while b"so far (Ctrl-C stops it)" not in shown and time.monotonic() < deadline:
        shown += os.read(master, 1024)
    assert b"rducc-run: running" in shown, shown
    process.send_signal(signal.SIGINT)
    assert process.wait(timeout=60) == 130
    rest = b""
    try:
        while chunk := os.read(master, 1024):
            rest += chunk
    except OSError:  # the terminal closed with the process
        pass
    os.close(master)
    assert rest.decode().split("\x1b[2K")[-1].strip() == "rducc-run: interrupted", rest


def test_the_sram_arena_touches_only_what_the_program_uses(tmp_path):
    """A buffer placed near the end of the 520 MB SRAM costs its own bytes, not the
    arena up to its offset (before: 550 MB resident for a 512-byte buffer)."""
    import subprocess
    import sys

    import rducc

    placed = tmp_path / "placed.mlir"
    rducc.compile(str(error_cases.EXAMPLE)).save(placed)
    text = placed.read_text()
    offset = text.split("%x_sram = tier.alloc offset ")[1].split(" ")[0]
    far = text.replace(f"%x_sram = tier.alloc offset {offset} ", "%x_sram = tier.alloc offset 510000000 ")
    (tmp_path / "far.mlir").write_text(far)
    x = np.random.default_rng(0).standard_normal((4, 32)).astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    measured = ("import resource, sys\nfrom rducc.tools.run import main\nstatus = main(sys.argv[1:])\n"
                "print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)\nsys.exit(status)")
    peaks = {}
    for name in ("placed", "far"):
        result = subprocess.run([sys.executable, "-c", measured, f"{name}.mlir", "--input", "x.npy",
                                 "--output", f"{name}.npz"], cwd=tmp_path, check=True, capture_output=True,
                                text=True, timeout=300)
        peaks[name] = int(result.stdout.split()[-1])
    np.testing.assert_array_equal(np.load(tmp_path / "far.npz")["output_0"],
                                  np.load(tmp_path / "placed.npz")["output_0"])
    assert peaks["far"] < peaks["placed"] + 50_000, peaks  # KiB


def test_output_to_dev_null_writes_in_place_and_no_sidecar(capfd):
    """`-o /dev/null` streams into the device (an atomic rename would replace it)
    and puts no `/dev/null.safetensors` beside it."""
    from rducc.tools.cli import main

    assert main([str(error_cases.EXAMPLE), "-o", "/dev/null", "-q"]) == 0
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode)
    assert not Path("/dev/null.safetensors").exists()
    assert capfd.readouterr().err == ""
