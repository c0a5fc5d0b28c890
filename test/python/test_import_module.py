"""Issue 30: `rducc --import-module NAME` imports the library that registers a
model's custom operators before the archive is loaded: one whose implementation
traces is traced into ATen, one that does not (numpy) runs on the host, and
`rducc-run` runs it only with the same flag (a program file imports nothing);
a module that cannot be imported is one error naming it, and an archive calling
an operator no module registered says to use the flag."""

from __future__ import annotations

import sys
import zipfile
from pathlib import Path

import numpy as np
import torch

from rducc.tools.cli import main

LIBRARY = '''
import numpy as np
import torch

@torch.library.custom_op("rducc_import_test::triple", mutates_args=())
def triple(x: torch.Tensor) -> torch.Tensor:
    return x * 3

@triple.register_fake
def _(x):
    return torch.empty_like(x)

@torch.library.custom_op("rducc_import_test::softsign", mutates_args=())
def softsign(x: torch.Tensor, scale: float) -> torch.Tensor:
    a = x.numpy()  # numpy: not traceable, so it runs on the host
    return torch.from_numpy((a / (1 + np.abs(a)) * scale).astype(a.dtype))

@softsign.register_fake
def _(x, scale):
    return torch.empty_like(x)
'''


class UsesBoth(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.linear = torch.nn.Linear(6, 6)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        tripled = torch.ops.rducc_import_test.triple(self.linear(x))
        return torch.ops.rducc_import_test.softsign(tripled, 2.0).relu() + 1


def test_import_module_traces_or_hosts_the_ops_and_rducc_run_needs_it(tmp_path: Path, monkeypatch, capsys) -> None:
    from rducc.dialects.rdu import custom_op
    from rducc.tools.run import main as run_main

    (tmp_path / "rducc_import_test_ops.py").write_text(LIBRARY)
    monkeypatch.syspath_prepend(str(tmp_path))
    import rducc_import_test_ops  # noqa: F401 - the ops, to export the example archive

    torch.manual_seed(0)
    model, x = UsesBoth().eval(), torch.randn(4, 6)
    archive, program, x_file = tmp_path / "both.pt2", tmp_path / "b.mlir", tmp_path / "x.npy"
    torch.export.save(torch.export.export(model, (x,)), archive)
    np.save(x_file, x.numpy())
    assert main([str(archive), "--import-module", "rducc_import_test_ops", "-o", str(program), "--report"]) == 0
    assert "rducc_import_test.softsign.default (custom op, host compute assumed" in capsys.readouterr().out
    text = program.read_text()
    assert "triple" not in text  # traced into ATen
    assert '#rdu.custom<"rducc_import_test::softsign.default"' in text
    monkeypatch.setattr(custom_op, "_ADMITTED", {})  # a fresh rducc-run process: nothing admitted yet
    out = tmp_path / "y.npz"
    assert run_main([str(program), "--input", str(x_file), "--output", str(out)]) == 1
    error = capsys.readouterr().err.strip()
    assert error.splitlines() == [error] and "custom op rducc_import_test::softsign.default" in error
    assert "--import-module MODULE" in error and not out.exists()
    assert run_main([str(program), "--import-module", "rducc_import_test_ops", "--input", str(x_file),
                     "--output", str(out)]) == 0
    with torch.no_grad():
        np.testing.assert_allclose(np.load(out)["output_0"], model(x).numpy(), rtol=1e-5, atol=1e-6)
    capsys.readouterr()
    missing = tmp_path / "missing.mlir"
    assert main([str(archive), "--import-module", "no_such_module_for_rducc", "-o", str(missing)]) == 1
    error = capsys.readouterr().err.strip()
    assert error.splitlines() == [error] and "--import-module no_such_module_for_rducc: cannot import it" in error
    assert not missing.exists()
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
