"""The Python API (rducc.compile, Program), the torch.compile backend, and
`rducc` + `rducc-run` from files, all against PyTorch eager."""

from __future__ import annotations

import copy
import json
import subprocess
import sys

import numpy as np
import pytest
import torch
from forked_tools import run_tool

import rducc
from rducc.errors import RduccError

F32 = {"rtol": 1e-4, "atol": 1e-5}


def _eager(model: torch.nn.Module, inputs: tuple) -> torch.Tensor:
    with torch.no_grad():
        return model(*inputs)


@pytest.mark.parametrize("opt_level", [0, 1, 2])
@pytest.mark.parametrize("name", ["mlp", "cnn", "tiny_llama", "tiny_gpt2"])
def test_compile_matches_eager(exported_small, name: str, opt_level: int) -> None:
    model, inputs, program = exported_small[name]
    compiled = rducc.compile(program, opt_level=opt_level)
    got = compiled(*inputs)
    torch.testing.assert_close(got, _eager(model, inputs), **F32)


def test_compile_on_random_inputs(exported_small) -> None:
    model, inputs, program = exported_small["tiny_llama"]
    compiled = rducc.compile(program)
    for seed in range(2):
        ids = torch.randint(0, 256, inputs[0].shape, generator=torch.Generator().manual_seed(seed))
        torch.testing.assert_close(compiled(ids), _eager(model, (ids,)), **F32)


def test_compile_bf16_mlp() -> None:
    import models

    model, inputs = models.mlp()
    model = copy.deepcopy(model).to(torch.bfloat16)
    x = inputs[0].to(torch.bfloat16)
    got = rducc.compile(model, (x,))(x)
    assert got.dtype == torch.bfloat16
    # the importer rounds like torch's CPU kernels (f32 math, one rounding per op)
    torch.testing.assert_close(got, _eager(model, (x,)), rtol=2**-7, atol=2**-7)


def test_compile_takes_module_path_and_program(exported_small, repo, tmp_path) -> None:
    model, inputs, program = exported_small["mlp"]
    expected = _eager(model, inputs)
    from_module = rducc.compile(model, inputs, opt_level=1)
    from_path = rducc.compile(repo / "examples" / "mlp.pt2")
    torch.testing.assert_close(from_module(*inputs), expected, **F32)
    torch.testing.assert_close(from_path(*inputs), expected, **F32)


def test_outputs_keep_the_model_structure() -> None:
    class TwoHeads(torch.nn.Module):
        def forward(self, x):
            return {"sum": x + 1, "pair": (x * 2, torch.relu(x))}

    x = torch.randn(3, 4)
    got = rducc.compile(TwoHeads(), (x,))(x)
    assert set(got) == {"sum", "pair"} and isinstance(got["pair"], tuple)
    torch.testing.assert_close(got["pair"][1], torch.relu(x))
    torch.testing.assert_close(got["sum"], x + 1)


def test_program_mlir_report_simulate_and_save(exported_small, tmp_path) -> None:
    model, inputs, program = exported_small["mlp"]
    compiled = rducc.compile(program, target="sn40l-8")
    assert compiled.mlir.startswith('builtin.module attributes {rdu.level = #rdu<level placed>, rdu.target = #rdu.target<{name = "sn40l-8"')
    report = compiled.report
    for key in ("modeled_time_s", "flops", "bytes_by_tier", "sram_peak_bytes", "sram_lower_bound_bytes", "kernels"):
        assert hasattr(report, key) and key in report.to_dict()
    assert report.modeled_time_s > 0 and report.flops > 0 and report.kernels
    assert compiled.simulate().flops == report.flops
    compiled.save(tmp_path / "out.mlir")
    assert (tmp_path / "out.mlir").exists() and (tmp_path / "out.safetensors").exists()


def test_compile_rejects_bad_models() -> None:
    with pytest.raises(RduccError, match="needs example_inputs"):
        rducc.compile(torch.nn.Linear(2, 2))
    with pytest.raises(RduccError, match="not int"):
        rducc.compile(3)  # type: ignore[arg-type]


class _CountsPositives(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.ones(int((x > 0).sum()))  # a size read from the data


class _BranchesOnASize(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        kept = x[x > 0]
        return kept * 2 if kept.shape[0] > 3 else kept


@pytest.mark.parametrize("model", [_CountsPositives(), _BranchesOnASize()], ids=["size", "branch"])
def test_an_export_failing_on_data_dependent_shapes_says_so(model, capfd) -> None:
    """Named as data-dependent at the user's line (issue 20 item 15), nothing
    else printed (torch prints the partial graph and a symbolic-shapes warning)."""
    with pytest.raises(RduccError, match=r"a shape or a branch depends on the tensors' values at \S+test_api.py:\d+ "
                                         r"\(.*\); rducc compiles static shapes only"):
        rducc.compile(model, (torch.randn(8),))
    assert capfd.readouterr().err == ""


class _HardtanhOfItems(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.hardtanh(x, x.min().item() / 2, x.max().item() / 2)


def test_a_number_read_by_item_that_torch_export_refuses_gets_a_rewrite(capfd) -> None:
    """F.hardtanh checks min_val <= max_val in Python, which torch.export cannot do on
    `.item()` numbers (so are F.softshrink, F.rrelu, torch.nan_to_num): the error names
    the user's line and the tensor form that exports."""
    with pytest.raises(RduccError, match=r"values at \S+test_api.py:\d+ .* read from a tensor by .item\(\).*"
                                         r"torch.clamp\(x, low, high\) with tensor bounds"):
        rducc.compile(_HardtanhOfItems(), (torch.randn(8),))
    assert capfd.readouterr().err == ""


def test_custom_pipeline_replaces_the_default(exported_small) -> None:
    model, inputs, program = exported_small["mlp"]
    text = "rdu-canonicalize,cse,rdu-fuse{level=0},rdu-tile,rdu-place-tiers,rdu-insert-dma,rdu-sram-alloc"
    compiled = rducc.compile(program, passes=text)
    assert compiled.mlir.count("tier.compute ") == 8  # level 0: one kernel per op
    torch.testing.assert_close(compiled(*inputs), _eager(model, inputs), **F32)


def test_torch_compile_backend(exported_small) -> None:
    model, inputs, _ = exported_small["mlp"]
    torch._dynamo.reset()
    compiled = torch.compile(model, backend="rducc")
    with torch.no_grad():
        got = compiled(*inputs)
    torch.testing.assert_close(got, _eager(model, inputs), **F32)


def _run(tool: str, *args: object) -> subprocess.CompletedProcess[str]:
    """The tool as a process of its own, forked from a warm server (forked_tools)."""
    return run_tool(tool, *args)


@pytest.mark.parametrize("name", ["mlp", "tiny_gpt2"])
def test_rducc_then_rducc_run_from_files(exported_small, tmp_path, name: str) -> None:
    model, inputs, program = exported_small[name]
    archive = tmp_path / f"{name}.pt2"
    torch.export.save(program, str(archive))
    for index, tensor in enumerate(inputs):
        np.save(tmp_path / f"in{index}.npy", tensor.numpy())
    compiled = _run("rducc", archive, "-O1", "-o", tmp_path / "out.mlir")
    assert compiled.returncode == 0, compiled.stderr
    # rducc-run is its own process: no PyTorch model exists there
    ran = _run("rducc-run", tmp_path / "out.mlir", *[f"--input={tmp_path / f'in{i}.npy'}" for i in range(len(inputs))],
               "--output", tmp_path / "out.npz", "--report", tmp_path / "report.json")
    assert ran.returncode == 0, ran.stderr
    got = np.load(tmp_path / "out.npz")["output_0"]
    np.testing.assert_allclose(got, _eager(model, inputs).numpy(), **F32)
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["modeled_time_s"] > 0 and report["kernels"]


def test_a_target_built_in_python_travels_in_the_mlir(exported_small, tmp_path) -> None:
    """A target that exists only in this process (no file, no built-in name) is
    written into the .mlir with all its figures: rducc-run, another process,
    simulates and runs the program on that target, and the figures match."""
    import dataclasses

    from rducc.targets import load_target

    model, inputs, program = exported_small["mlp"]
    target = dataclasses.replace(load_target("sn40l"), name="made-in-python", sram_bytes=60_000,
                                 pmu_bytes=500, pmus=200, hbm_bandwidth=1.25e12, source="")
    compiled = rducc.compile(program, target=target)
    compiled.save(tmp_path / "out.mlir")
    np.save(tmp_path / "x.npy", inputs[0].numpy())
    ran = _run("rducc-run", tmp_path / "out.mlir", "--input", tmp_path / "x.npy", "--output", tmp_path / "y.npz",
               "--report", tmp_path / "report.json")
    assert ran.returncode == 0, ran.stderr
    np.testing.assert_allclose(np.load(tmp_path / "y.npz")["output_0"], _eager(model, inputs).numpy(), **F32)
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["target"] == "made-in-python"
    assert report["sram_capacity_bytes"] == 60_000
    assert report["modeled_time_s"] == pytest.approx(compiled.report.modeled_time_s)


def test_rducc_run_simulate_needs_no_data(exported_small, tmp_path) -> None:
    out = tmp_path / "out.mlir"  # compiled here: `rducc` to a file is test_rducc_then_rducc_run_from_files
    rducc.compile(exported_small["mlp"][2]).save(out)
    (tmp_path / "out.safetensors").unlink()
    result = _run("rducc-run", out, "--simulate")
    assert result.returncode == 0, result.stderr
    assert "modeled" in result.stdout.lower()
    other = _run("rducc-run", out, "--simulate", "--target", "sn40l-16")
    assert other.returncode == 0 and "target sn40l-16" in other.stdout, other.stderr


def test_rducc_run_takes_bf16_npy(tmp_path) -> None:
    import ml_dtypes
    import models

    model, inputs = models.mlp()
    model = copy.deepcopy(model).to(torch.bfloat16)
    x = inputs[0].to(torch.bfloat16)
    torch.export.save(models.export(model, (x,)), str(tmp_path / "bf16.pt2"))
    # numpy writes bf16 arrays as raw 2-byte voids; rducc-run reads them back as bf16
    np.save(tmp_path / "x.npy", x.view(torch.int16).numpy().view(ml_dtypes.bfloat16))
    assert _run("rducc", tmp_path / "bf16.pt2", "-o", tmp_path / "out.mlir").returncode == 0
    ran = _run("rducc-run", tmp_path / "out.mlir", "--input", tmp_path / "x.npy", "--output", tmp_path / "y.npz")
    assert ran.returncode == 0, ran.stderr
    got = np.load(tmp_path / "y.npz")["output_0"].view(ml_dtypes.bfloat16)
    expected = _eager(model, (x,)).view(torch.int16).numpy().view(ml_dtypes.bfloat16)
    np.testing.assert_array_equal(got, expected)  # bit for bit, as in eager


class _Uint8Model(torch.nn.Module):
    """A uint8 image through a uint8 lookup table, dequantized, scaled and quantized back."""

    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("table", (torch.arange(256) * 7 % 256).to(torch.uint8))
        self.scale = torch.nn.Parameter(torch.linspace(0.5, 1.5, 6))

    def forward(self, image: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        qd = torch.ops.quantized_decomposed
        looked_up = self.table[image.long()]
        real = qd.dequantize_per_tensor(looked_up, 0.1, 128, 0, 255, torch.uint8) * self.scale
        return qd.quantize_per_tensor(real, 0.1, 128, 0, 255, torch.uint8), looked_up + image


def test_rducc_run_takes_and_gives_uint8_npy(tmp_path) -> None:
    """A uint8 model input, weight and outputs through the files: rducc, then
    rducc-run reading a uint8 .npy and writing uint8 results, bit for bit."""
    import torch.ao.quantization.fx._decomposed  # noqa: F401  (registers quantized_decomposed)

    model = _Uint8Model().eval()
    image = torch.randint(0, 256, (4, 6), generator=torch.Generator().manual_seed(8)).to(torch.uint8)
    with torch.no_grad():
        torch.export.save(torch.export.export(model, (image,)), str(tmp_path / "u8.pt2"))
        expected = model(image)
    np.save(tmp_path / "image.npy", image.numpy())
    compiled = _run("rducc", tmp_path / "u8.pt2", "-o", tmp_path / "out.mlir")
    assert compiled.returncode == 0, compiled.stderr
    assert "tensor<4x6xui8>" in (tmp_path / "out.mlir").read_text()
    ran = _run("rducc-run", tmp_path / "out.mlir", "--input", tmp_path / "image.npy", "--output", tmp_path / "out.npz")
    assert ran.returncode == 0, ran.stderr
    results = np.load(tmp_path / "out.npz")
    for index, tensor in enumerate(expected):
        got = results[f"output_{index}"]
        assert got.dtype == np.uint8
        np.testing.assert_array_equal(got, tensor.numpy())


def test_api_module_is_reachable_from_the_package_as_readme_writes_it():
    """README writes `passes=[rducc.api.after(...)]` after a plain `import rducc`."""
    code = "import rducc; print(callable(rducc.api.after), callable(rducc.api.before))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["True", "True"]
