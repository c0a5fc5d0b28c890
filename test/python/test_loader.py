"""`rducc.frontend.loader.load_exported_program`: good archives load, anything else is refused
with a `RduccError` that says what the file is, and no pickle code ever runs."""

from __future__ import annotations

import io
import json
import os
import pickle
import re
import shutil
import struct
import subprocess
import sys
import warnings
import zipfile
from pathlib import Path

import pytest
import torch
from forked_tools import run_tool
from torch import nn

import rducc
from rducc.errors import RduccError
from rducc.frontend.loader import ACCEPTED, load_exported_program

RDUCC = Path(sys.executable).parent / "rducc"
EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "mlp.pt2"
ENV = {
    key: value
    for key, value in os.environ.items()
    if key not in {"TORCH_FORCE_WEIGHTS_ONLY_LOAD", "TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD"}
}


class Hostile:
    """Unpickling this creates `marker`: proof that a loader ran pickle code."""

    def __init__(self, marker: Path):
        self.marker = str(marker)

    def __reduce__(self):
        return (open, (self.marker, "w"))


class Tiny(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + 1


def tiny_mlp() -> tuple[nn.Module, torch.Tensor]:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4)).eval()
    return model, torch.randn(3, 8)


def rewrite_archive(source: Path, target: Path, replace: dict[str, bytes] | None = None,
                    compression: int = zipfile.ZIP_STORED, add: dict[str, bytes] | None = None) -> None:
    """Copy a zip member by member, replacing members whose names end with a key, then
    appending the members in `add` (names below the archive's root folder)."""
    replace = replace or {}
    with zipfile.ZipFile(source) as src:
        names = src.namelist()
        for suffix in replace:
            assert sum(name.endswith(suffix) for name in names) == 1, (suffix, names)
        with zipfile.ZipFile(target, "w", compression) as out:
            for name in names:
                data = next((v for k, v in replace.items() if name.endswith(k)), None)
                out.writestr(name, src.read(name) if data is None else data)
            root = names[0].split("/")[0]
            for name, data in (add or {}).items():
                out.writestr(f"{root}/{name}", data)


def member_data_offset(data: bytes, member: str) -> int:
    """Where a member's (possibly compressed) bytes start inside the zip."""
    info = zipfile.ZipFile(io.BytesIO(data)).getinfo(member)
    name_len, extra_len = struct.unpack("<HH", data[info.header_offset + 26:info.header_offset + 30])
    return info.header_offset + 30 + name_len + extra_len


def run_rducc(*args: object) -> subprocess.CompletedProcess[str]:
    """`rducc` in a process forked from the warm server (forked_tools); the
    AOTInductor test below runs the installed script."""
    return run_tool("rducc", *args, env=ENV)


# --------------------------------------------------------------------------
# Fixtures
# --------------------------------------------------------------------------


@pytest.fixture(scope="module")
def good(tmp_path_factory):
    """A small seeded MLP, its input, and its archive."""
    model, x = tiny_mlp()
    path = tmp_path_factory.mktemp("good") / "tiny.pt2"
    with torch.no_grad():
        torch.export.save(torch.export.export(model, (x,)), str(path))
    return model, x, path


@pytest.fixture(scope="module")
def bad_files(tmp_path_factory, good) -> dict[str, Path]:
    _, _, archive = good
    d = tmp_path_factory.mktemp("bad")
    files: dict[str, Path] = {"missing": d / "missing.pt2"}

    files["empty"] = d / "empty.pt2"
    files["empty"].write_bytes(b"")

    files["directory"] = d / "dir.pt2"
    files["directory"].mkdir()

    files["pickle"] = d / "plain.pt2"
    files["pickle"].write_bytes(pickle.dumps({"a": 1, "b": [2.0, 3.0]}))

    files["pickle_protocol_2"] = d / "plain2.pt2"
    files["pickle_protocol_2"].write_bytes(pickle.dumps({"a": 1}, protocol=2))

    torch.manual_seed(0)
    files["checkpoint"] = d / "checkpoint.pt2"
    torch.save(nn.Linear(4, 3).state_dict(), files["checkpoint"])

    files["torchscript"] = d / "script.pt2"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.jit.save(torch.jit.script(Tiny()), str(files["torchscript"]))

    files["random"] = d / "random.pt2"
    files["random"].write_bytes(bytes((i * 197 + 89) % 256 for i in range(4096)))

    data = archive.read_bytes()
    files["truncated"] = d / "truncated.pt2"
    files["truncated"].write_bytes(data[: len(data) // 2])

    files["other_zip"] = d / "other.zip"
    with zipfile.ZipFile(files["other_zip"], "w") as z:
        z.writestr("notes/readme.txt", "hello")

    files["mlir"] = d / "model.mlir"
    files["mlir"].write_text("func.func @forward() {\n  func.return\n}\n")

    # A member whose bytes no longer match its CRC.
    damaged = bytearray(data)
    member = next(n for n in zipfile.ZipFile(archive).namelist() if n.endswith("weights/weight_0"))
    start = member_data_offset(data, member)
    damaged[start:start + 16] = bytes(b ^ 0xFF for b in damaged[start:start + 16])
    files["damaged_member"] = d / "damaged.pt2"
    files["damaged_member"].write_bytes(damaged)

    files["bad_model_json"] = d / "bad_json.pt2"
    rewrite_archive(archive, files["bad_model_json"], {"models/model.json": b"{not json"})
    return files


# --------------------------------------------------------------------------
# Good archives
# --------------------------------------------------------------------------


def test_good_archive_loads_and_runs(good):
    model, x, path = good
    program = load_exported_program(path)
    assert isinstance(program, torch.export.ExportedProgram)
    assert set(program.state_dict) == {"0.weight", "0.bias", "2.weight", "2.bias"}
    for name, value in model.state_dict().items():
        assert torch.equal(program.state_dict[name], value), name
    with torch.no_grad():
        torch.testing.assert_close(program.module()(x), model(x), rtol=0, atol=0)


def test_path_may_be_a_string(good):
    _, _, path = good
    assert set(load_exported_program(str(path)).state_dict) == {"0.weight", "0.bias", "2.weight", "2.bias"}


def test_bundled_example_loads():
    assert EXAMPLE.is_file(), f"{EXAMPLE} is missing: run examples/make_example.py"
    program = load_exported_program(EXAMPLE)
    shapes = {name: tuple(t.shape) for name, t in program.state_dict.items()}
    assert shapes == {"fc1.weight": (64, 32), "fc1.bias": (64,), "fc2.weight": (64, 64),
                      "fc2.bias": (64,), "fc3.weight": (10, 64), "fc3.bias": (10,)}
    [x] = [n for n in program.graph.nodes if n.op == "placeholder" and n.name == "x"]
    assert tuple(x.meta["val"].shape) == (4, 32)


def test_archive_under_another_name_loads(good, tmp_path):
    model, x, path = good
    renamed = tmp_path / "renamed.model"
    shutil.copy(path, renamed)
    with torch.no_grad():
        torch.testing.assert_close(load_exported_program(renamed).module()(x), model(x))


def test_rewritten_archive_still_loads(good, tmp_path):
    """The rewrite helper itself yields loadable archives, so the tests below that
    use it fail because of what they put in, not because of the rewrite."""
    model, x, path = good
    for compression in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):
        copy = tmp_path / f"copy{compression}.pt2"
        rewrite_archive(path, copy, compression=compression)
        with torch.no_grad():
            torch.testing.assert_close(load_exported_program(copy).module()(x), model(x))


# --------------------------------------------------------------------------
# Bad files
# --------------------------------------------------------------------------

BAD = {
    "missing": "no such file",
    "empty": "file is empty",
    "directory": "is a directory",
    "pickle": "a plain Python pickle",
    "pickle_protocol_2": "a plain Python pickle",
    "checkpoint": "a torch.save checkpoint",
    "torchscript": "a TorchScript file",
    "random": "not a zip archive",
    "truncated": "a truncated or damaged zip archive",
    "other_zip": "a zip archive that is not a torch.export archive",
    "mlir": "MLIR text (use rducc-opt for that)",
    "damaged_member": "damaged zip archive (bad entry",
    "bad_model_json": "cannot load the torch.export archive",
}
SAYS_WHAT_IS_ACCEPTED = {"empty", "directory", "pickle", "pickle_protocol_2", "checkpoint",
                         "torchscript", "random", "truncated", "other_zip", "mlir"}


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_file_is_refused_with_a_description(case, bad_files):
    path = bad_files[case]
    with pytest.raises(RduccError) as excinfo:
        load_exported_program(path)
    message = str(excinfo.value)
    assert excinfo.type is RduccError
    assert message.startswith(f"{path}: "), message
    assert BAD[case] in message, message
    if case in SAYS_WHAT_IS_ACCEPTED:
        assert ACCEPTED in message
    assert "\n" not in message


def test_every_bad_file_has_a_case(bad_files):
    assert set(bad_files) == set(BAD)


def test_bad_files_are_left_alone(bad_files):
    before = {name: p.read_bytes() for name, p in bad_files.items() if p.is_file()}
    for path in bad_files.values():
        with pytest.raises(RduccError):
            load_exported_program(path)
    assert {name: p.read_bytes() for name, p in bad_files.items() if p.is_file()} == before
    assert not bad_files["missing"].exists()


def test_tail_of_an_archive_is_refused(good, tmp_path):
    _, _, path = good
    data = path.read_bytes()
    tail = tmp_path / "tail.pt2"
    tail.write_bytes(data[len(data) // 2:])
    assert zipfile.is_zipfile(tail)  # the end-of-archive record survives
    with pytest.raises(RduccError, match="damaged"):
        load_exported_program(tail)


def test_corrupt_compressed_member_is_refused(good, tmp_path):
    _, _, path = good
    deflated = tmp_path / "deflated.pt2"
    rewrite_archive(path, deflated, compression=zipfile.ZIP_DEFLATED)
    data = bytearray(deflated.read_bytes())
    [member] = [n for n in zipfile.ZipFile(deflated).namelist() if n.endswith("models/model.json")]
    info = zipfile.ZipFile(deflated).getinfo(member)
    assert info.compress_size < info.file_size // 2  # really compressed, so the damage hits zlib
    start = member_data_offset(bytes(data), member) + 10
    data[start:start + 40] = b"\xff" * 40
    broken = tmp_path / "broken.pt2"
    broken.write_bytes(data)
    with pytest.raises(RduccError, match="damaged"):
        load_exported_program(broken)


# --------------------------------------------------------------------------
# Hostile pickles: never executed
# --------------------------------------------------------------------------


def test_hostile_payload_is_live(tmp_path):
    """Guard for the tests below: the payload really does create its marker."""
    marker = tmp_path / "marker"
    pickle.loads(pickle.dumps(Hostile(marker))).close()
    assert marker.exists()


def test_hostile_pickle_in_process(tmp_path):
    marker = tmp_path / "pwned"
    evil = tmp_path / "model.pt2"
    evil.write_bytes(pickle.dumps(Hostile(marker)))
    with pytest.raises(RduccError, match="plain Python pickle"):
        load_exported_program(evil)
    assert not marker.exists()


def test_hostile_pickle_via_cli(tmp_path):
    marker = tmp_path / "pwned"
    evil = tmp_path / "model.pt2"
    evil.write_bytes(pickle.dumps(Hostile(marker)))
    result = run_rducc(evil, "-o", tmp_path / "out.mlir")
    assert result.returncode == 1, result.stderr
    assert "rducc: error:" in result.stderr and "pickle" in result.stderr
    assert "Traceback" not in result.stderr
    assert not marker.exists()
    assert not (tmp_path / "out.mlir").exists()


def test_hostile_checkpoint_via_cli(tmp_path):
    """A torch.save-style zip whose data.pkl is hostile."""
    marker = tmp_path / "pwned"
    buffer = io.BytesIO()
    torch.save({"w": torch.zeros(2)}, buffer)
    plain = tmp_path / "plain_checkpoint.pt2"
    plain.write_bytes(buffer.getvalue())
    evil = tmp_path / "checkpoint.pt2"
    rewrite_archive(plain, evil, {"data.pkl": pickle.dumps(Hostile(marker))})
    result = run_rducc(evil, "-o", tmp_path / "out.mlir")
    assert result.returncode == 1, result.stderr
    assert "torch.save checkpoint" in result.stderr
    assert not marker.exists()


def test_hostile_sample_inputs_in_a_real_archive(good, tmp_path):
    _, _, path = good
    marker = tmp_path / "pwned"
    evil = tmp_path / "evil.pt2"
    rewrite_archive(path, evil, {"data/sample_inputs/model.pt": pickle.dumps(Hostile(marker))})
    result = run_rducc(evil, "-o", tmp_path / "out.mlir")
    assert result.returncode == 1, result.stderr
    assert not marker.exists()
    assert "Traceback" not in result.stderr


def test_hostile_pickled_weight_in_a_real_archive(good, tmp_path):
    _, _, path = good
    marker = tmp_path / "pwned"
    with zipfile.ZipFile(path) as archive:
        [config_name] = [n for n in archive.namelist() if n.endswith("weights/model_weights_config.json")]
        config = json.loads(archive.read(config_name))
    entry = config["config"]["0.weight"]
    entry["use_pickle"] = True
    evil = tmp_path / "evil.pt2"
    rewrite_archive(path, evil, {
        "weights/model_weights_config.json": json.dumps(config).encode(),
        f"weights/{entry['path_name']}": pickle.dumps(Hostile(marker)),
    })
    result = run_rducc(evil, "-o", tmp_path / "out.mlir")
    assert result.returncode == 1, result.stderr
    assert not marker.exists()


# --------------------------------------------------------------------------
# Hostile archive members: refused before torch sees the archive (issue 20, items 1-3)
# --------------------------------------------------------------------------

CONSTANTS_CONFIG = "data/constants/model_constants_config.json"


def with_opaque_constant(archive: Path, target: Path, marker: Path, *, member: bool = True) -> Path:
    """`archive` plus a constant stored as an opaque object: torch would `pickle.loads` it."""
    with zipfile.ZipFile(archive) as src:
        [name] = [n for n in src.namelist() if n.endswith(CONSTANTS_CONFIG)]
        config = json.loads(src.read(name))
    config["config"]["evil"] = {"path_name": "opaque_obj_0", "is_param": False,
                                "use_pickle": True, "tensor_meta": None}
    extra = {"data/constants/opaque_obj_0": pickle.dumps(Hostile(marker))} if member else {}
    rewrite_archive(archive, target, {CONSTANTS_CONFIG: json.dumps(config).encode()}, add=extra)
    return target


def shared_library(tmp_path: Path, marker: Path) -> bytes:
    """A real shared library whose constructor creates `marker` when it is loaded."""
    if shutil.which("cc") is None:
        pytest.skip("no C compiler to build the shared-library payload")
    source = tmp_path / "payload.c"
    source.write_text('#include <stdio.h>\n__attribute__((constructor)) static void run(void) '
                      f'{{ FILE *f = fopen("{marker}", "w"); if (f) fclose(f); }}\n')
    library = tmp_path / "payload.so"
    subprocess.run(["cc", "-shared", "-fPIC", "-o", str(library), str(source)], check=True)
    return library.read_bytes()


@pytest.fixture
def torch_never_loads(monkeypatch):
    """Fail the test if rducc hands the archive to torch.export.load."""
    def refuse(*args, **kwargs):
        raise AssertionError("torch.export.load was called on a hostile archive")
    monkeypatch.setattr(torch.export, "load", refuse)


def test_opaque_constant_payload_is_live(good, tmp_path):
    """Guard: without rducc's check, torch.export.load itself runs the payload."""
    _, _, path = good
    marker = tmp_path / "pwned"
    evil = with_opaque_constant(path, tmp_path / "evil.pt2", marker)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            torch.export.load(str(evil))
        except Exception:
            pass
    assert marker.exists()


def test_shared_library_payload_is_live(tmp_path):
    """Guard: loading the payload library creates its marker."""
    marker = tmp_path / "pwned"
    library = tmp_path / "copy.so"
    library.write_bytes(shared_library(tmp_path, marker))
    subprocess.run([sys.executable, "-c", f"import ctypes; ctypes.CDLL({str(library)!r})"], check=True)
    assert marker.exists()


def test_opaque_constant_is_refused(good, tmp_path, torch_never_loads):
    _, _, path = good
    marker = tmp_path / "pwned"
    evil = with_opaque_constant(path, tmp_path / "evil.pt2", marker)
    with pytest.raises(RduccError, match=r"opaque_obj_0' is a pickled Python object, which rducc refuses"):
        load_exported_program(evil)
    assert not marker.exists()


class DrawsWithAGenerator(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.rand(x.shape, generator=torch.Generator().manual_seed(1)) + x


def test_a_generator_constant_loads_with_a_fresh_generator_in_its_place(tmp_path):
    """A pickled torch.Generator constant (known by its first global, nothing unpickled) is replaced by rducc's
    own fresh generator before torch loads the archive: a hostile pickle dressed as one never runs."""
    saved = tmp_path / "draws.pt2"
    torch.export.save(torch.export.export(DrawsWithAGenerator(), (torch.zeros(4000),)), saved)
    marker = tmp_path / "pwned"
    disguised = tmp_path / "disguised.pt2"
    rewrite_archive(saved, disguised, {"data/constants/opaque_obj_0": pickle.dumps(
        (torch.Generator(), Hostile(marker)), protocol=2)})
    for path in (saved, disguised):
        values = rducc.compile(load_exported_program(path))(torch.zeros(4000))
        assert values.min() >= 0 and values.max() < 1 and abs(values.mean().item() - 0.5) < 0.023
    assert not marker.exists()


def test_a_generator_constant_too_large_for_one_is_refused_unread(tmp_path):
    """A member dressed as a pickled generator but inflating past what one takes (a zip bomb's
    shape) is refused as any other pickle, before it is read."""
    saved = tmp_path / "draws.pt2"
    torch.export.save(torch.export.export(DrawsWithAGenerator(), (torch.zeros(4),)), saved)
    bulky = tmp_path / "bulky.pt2"
    rewrite_archive(saved, bulky, {"data/constants/opaque_obj_0": pickle.dumps(
        (torch.Generator(), b"\0" * (1 << 17)), protocol=2)})
    with pytest.raises(RduccError, match="opaque_obj_0"):
        load_exported_program(bulky)


def test_opaque_constant_named_only_in_the_config_is_refused(good, tmp_path, torch_never_loads):
    _, _, path = good
    evil = with_opaque_constant(path, tmp_path / "evil.pt2", tmp_path / "pwned", member=False)
    with pytest.raises(RduccError, match=r"constant 'evil' is stored as 'opaque_obj_0'") as excinfo:
        load_exported_program(evil)
    assert str(excinfo.value).startswith(f"{evil}: ")


def test_pickled_weight_is_refused_before_torch(good, tmp_path, torch_never_loads):
    _, _, path = good
    with zipfile.ZipFile(path) as archive:
        [name] = [n for n in archive.namelist() if n.endswith("weights/model_weights_config.json")]
        config = json.loads(archive.read(name))
    config["config"]["0.weight"]["use_pickle"] = True
    evil = tmp_path / "evil.pt2"
    rewrite_archive(path, evil, {"weights/model_weights_config.json": json.dumps(config).encode()})
    with pytest.raises(RduccError, match=r"weight '0.weight' is stored as a pickle \(use_pickle\)"):
        load_exported_program(evil)


def test_opaque_constant_via_cli(good, tmp_path):
    _, _, path = good
    marker = tmp_path / "pwned"
    evil = with_opaque_constant(path, tmp_path / "evil.pt2", marker)
    result = run_rducc(evil, "-o", tmp_path / "out.mlir")
    assert result.returncode == 1, result.stderr
    assert result.stderr.startswith(f"rducc: error: {evil}: archive member"), result.stderr
    assert "pickled Python object" in result.stderr and "Traceback" not in result.stderr
    assert not marker.exists()
    assert not (tmp_path / "out.mlir").exists()


def test_aotinductor_library_is_refused(good, tmp_path, torch_never_loads):
    _, _, path = good
    marker = tmp_path / "pwned"
    evil = tmp_path / "evil.pt2"
    rewrite_archive(path, evil, add={"data/aotinductor/model/model.so": shared_library(tmp_path, marker),
                                     "data/aotinductor/model/model_metadata.json": b"{}"})
    with pytest.raises(RduccError, match=r"data/aotinductor/model/\S+ is AOTInductor compiled code"):
        load_exported_program(evil)
    assert not marker.exists()


def test_aotinductor_library_via_cli_leaves_nothing_behind(good, tmp_path):
    _, _, path = good
    marker, scratch = tmp_path / "pwned", tmp_path / "scratch"
    scratch.mkdir()
    evil = tmp_path / "evil.pt2"
    rewrite_archive(path, evil, add={"data/aotinductor/model/model.so": shared_library(tmp_path, marker)})
    result = subprocess.run([str(RDUCC), str(evil), "-o", str(tmp_path / "out.mlir")], capture_output=True,
                            text=True, env={**ENV, "TMPDIR": str(scratch)}, timeout=600)
    assert result.returncode == 1, result.stderr
    assert "AOTInductor compiled code" in result.stderr and "Traceback" not in result.stderr
    assert not marker.exists()
    assert list(scratch.iterdir()) == []


@pytest.mark.parametrize("member", ["data/aotinductor/model/../../../../../slipped",
                                    "../slipped", "data/../../slipped", "data\\..\\..\\slipped"])
def test_member_climbing_out_is_refused(good, tmp_path, torch_never_loads, member):
    _, _, path = good
    evil = tmp_path / "evil.pt2"
    rewrite_archive(path, evil, add={member: b"written outside the extraction folder"})
    with pytest.raises(RduccError, match=r"has an unsafe name \(absolute or with '\.\.'\)"):
        load_exported_program(evil)
    assert not any(tmp_path.parent.glob("**/slipped"))


def test_absolute_member_is_refused(good, tmp_path, torch_never_loads):
    _, _, path = good
    evil = tmp_path / "evil.pt2"
    rewrite_archive(path, evil)
    with zipfile.ZipFile(evil, "a") as archive:
        archive.writestr(zipfile.ZipInfo("/tmp/slipped"), b"x")
    with pytest.raises(RduccError, match=r"'/tmp/slipped' has an unsafe name"):
        load_exported_program(evil)


@pytest.mark.parametrize("member", ["data/executorch/program.pte", "data/weights/model.pt",
                                    "data/constants/custom_obj_0"])
def test_member_torch_export_save_does_not_write_is_refused(good, tmp_path, torch_never_loads, member):
    _, _, path = good
    evil = tmp_path / "evil.pt2"
    rewrite_archive(path, evil, add={member: pickle.dumps(Hostile(tmp_path / "pwned"))})
    with pytest.raises(RduccError, match=re.escape(member)):
        load_exported_program(evil)


# --------------------------------------------------------------------------
# torch's own logging stays out of rducc's output
# --------------------------------------------------------------------------


def test_unreadable_archive_reports_without_torch_traceback(tmp_path):
    archive = tmp_path / "hollow.pt2"
    with zipfile.ZipFile(archive, "w") as z:
        z.writestr("hollow/archive_format", "pt2")
    result = run_rducc(archive, "-o", tmp_path / "out.mlir")
    assert result.returncode == 1, result.stderr
    assert f"rducc: error: {archive}: cannot load the torch.export archive" in result.stderr
    assert "Traceback" not in result.stderr
    assert "warnings above" not in result.stderr


def test_archive_under_another_name_compiles_quietly(good, tmp_path):
    _, _, path = good
    renamed = tmp_path / "renamed.model"
    shutil.copy(path, renamed)
    result = run_rducc(renamed, "-o", tmp_path / "out.mlir")
    assert result.returncode == 0, result.stderr
    assert "func.func @forward" in (tmp_path / "out.mlir").read_text()
    assert result.stderr == f"rducc: wrote {tmp_path / 'out.safetensors'} and {tmp_path / 'out.mlir'}\n"
