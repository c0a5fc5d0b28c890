"""Issue 30: `rducc --import-module NAME` imports the library that registers a
model's custom operator before the archive is loaded; a module that cannot be
imported is one error naming it, and an archive calling an operator no module
registered says to use the flag."""

from __future__ import annotations

import sys
import zipfile
from pathlib import Path

import torch

from rducc.tools.cli import main

LIBRARY = '''
import torch

@torch.library.custom_op("rducc_import_test::triple", mutates_args=())
def triple(x: torch.Tensor) -> torch.Tensor:
    return x * 3

@triple.register_fake
def _(x):
    return torch.empty_like(x)
'''


class UsesTriple(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.ops.rducc_import_test.triple(x) + 1


def test_import_module_registers_the_op_and_a_missing_one_is_an_error(tmp_path: Path, monkeypatch, capsys) -> None:
    (tmp_path / "rducc_import_test_ops.py").write_text(LIBRARY)
    monkeypatch.syspath_prepend(str(tmp_path))
    archive = tmp_path / "triple.pt2"
    import rducc_import_test_ops  # noqa: F401 - the op, to export the example archive

    torch.export.save(torch.export.export(UsesTriple(), (torch.randn(2, 3),)), archive)
    assert main([str(archive), "--import-module", "rducc_import_test_ops", "-o", str(tmp_path / "t.mlir")]) == 0
    assert "rducc_import_test" not in (tmp_path / "t.mlir").read_text()  # traced into ATen
    capsys.readouterr()
    out = tmp_path / "missing.mlir"
    assert main([str(archive), "--import-module", "no_such_module_for_rducc", "-o", str(out)]) == 1
    error = capsys.readouterr().err.strip()
    assert error.splitlines() == [error] and "--import-module no_such_module_for_rducc: cannot import it" in error
    assert not out.exists()
    sys.modules.pop("rducc_import_test_ops", None)


def test_an_unregistered_op_says_to_import_its_module(tmp_path: Path, capsys) -> None:
    class Doubles(torch.nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return torch.ops.aten.mul.Tensor(x, 2)

    archive = tmp_path / "a.pt2"
    torch.export.save(torch.export.export(Doubles(), (torch.randn(2),)), archive)
    renamed = tmp_path / "renamed.pt2"
    with zipfile.ZipFile(archive) as source, zipfile.ZipFile(renamed, "w") as target:
        for item in source.infolist():
            data = source.read(item)
            if item.filename.endswith(".json"):
                data = data.replace(b"torch.ops.aten.mul.Tensor", b"torch.ops.kernels_nobody_has.mul.Tensor")
            target.writestr(item, data)
    assert main([str(renamed), "-o", str(tmp_path / "r.mlir")]) == 1
    error = capsys.readouterr().err
    assert "kernels_nobody_has::mul.Tensor" in error and "rducc --import-module kernels_nobody_has" in error
