"""Issue 30: sparse and uint64 results converted where the program returns them (`rdu.output_edges`).

`hash_tensor` is computed as the xor of the elements' 64-bit patterns (int64 inside the program,
read as uint64 at the edge); `to_sparse` in every layout is computed dense and converted by torch's
own `Tensor.to_sparse` at the edge. Each against eager, bit for bit, at -O0 and -O2 (Program), and
through the CLI (`rducc` then `rducc-run`, which writes a sparse output as its parts).
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch import nn

import rducc
from rducc.errors import RduccError


class Hashes(nn.Module):
    """hash_tensor of floats, bf16, ints and bools, over every dim, one dim and a list with keepdim
    (odd lengths: the halving pads with zero)."""

    def forward(self, x: torch.Tensor, n: torch.Tensor):
        return (torch.hash_tensor(x), torch.hash_tensor(x * 3, 1), torch.hash_tensor(x.bfloat16(), [0], keepdim=True),
                torch.hash_tensor(n), torch.hash_tensor(n > 0, 0))


class Sparse(nn.Module):
    """Dense results returned in each sparse layout, with and without sparse_dim, blocksize and dense_dim."""

    def forward(self, x: torch.Tensor):
        y = torch.relu(x)
        return (y.to_sparse(), (y * 2).to_sparse(1), y.to_sparse_csr(), y.to_sparse(layout=torch.sparse_csc),
                y.to_sparse_bsr((2, 2)), y.unsqueeze(-1).to_sparse(layout=torch.sparse_coo, dense_dim=1), x - 1)


def _inputs(seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    generator = torch.Generator().manual_seed(seed)
    x = torch.randn(4, 6, generator=generator)
    x[1] = 0.0  # a row with nothing stored
    return x, torch.randint(-9, 9, (5, 7), generator=generator)


def _same(got: torch.Tensor, want: torch.Tensor) -> None:
    assert (got.layout, got.dtype, got.shape) == (want.layout, want.dtype, want.shape), (got, want)
    if want.layout == torch.strided:
        assert torch.equal(got.view(torch.int64) if got.dtype == torch.uint64 else got,
                           want.view(torch.int64) if want.dtype == torch.uint64 else want), (got, want)
    else:
        torch.testing.assert_close(got, want, rtol=0, atol=0)


@pytest.mark.parametrize("opt_level", [0, 2])
def test_hashes_and_sparse_results_equal_eager(opt_level: int) -> None:
    x, n = _inputs(0)
    hashes = rducc.compile(Hashes(), (x, n), opt_level=opt_level)
    model = Sparse() if opt_level == 0 else torch.export.export(Sparse(), (x,))  # an ExportedProgram too
    sparse = rducc.compile(model, (x,) if opt_level == 0 else None, opt_level=opt_level)
    for seed in (0, 1):
        x, n = _inputs(seed)
        for got, want in zip(hashes(x, n), Hashes()(x, n), strict=True):
            _same(got, want)
        for got, want in zip(sparse(x), Sparse()(x), strict=True):
            _same(got, want)
    assert 'rdu.output_edges = {"0" = {dtype = "uint64"' in hashes.mlir


def test_the_cli_writes_a_sparse_result_as_its_parts_and_a_hash_as_uint64(tmp_path) -> None:
    """(torch.export.save cannot save a compressed layout: COO here, the others through Program above.)"""
    from rducc.tools.cli import main as rducc_main
    from rducc.tools.run import main as run_main

    class Both(nn.Module):
        def forward(self, x: torch.Tensor):
            return torch.relu(x).to_sparse(1), torch.hash_tensor(x, 1), torch.relu(x).to_sparse()

    x, _ = _inputs(2)
    torch.export.save(torch.export.export(Both(), (x,)), str(tmp_path / "m.pt2"))
    np.save(tmp_path / "x.npy", x.numpy())
    assert rducc_main([str(tmp_path / "m.pt2"), "-o", str(tmp_path / "m.mlir"), "-q"]) == 0
    assert run_main([str(tmp_path / "m.mlir"), "--input", str(tmp_path / "x.npy"), "--output",
                     str(tmp_path / "o.npz"), "-q"]) == 0
    got, (rows, digest, coo) = np.load(tmp_path / "o.npz"), Both()(x)
    for part in ("indices", "values"):
        np.testing.assert_array_equal(got[f"output_0.{part}"], getattr(rows, part)().numpy())
    np.testing.assert_array_equal(got["output_0.shape"], [4, 6])
    assert got["output_1"].dtype == np.uint64
    np.testing.assert_array_equal(got["output_1"], digest.numpy())
    np.testing.assert_array_equal(got["output_2.indices"], coo.indices().numpy())
    np.testing.assert_array_equal(got["output_2.values"], coo.values().numpy())


@pytest.mark.parametrize(("forward", "what"), [
    (lambda x: torch.hash_tensor(x) == torch.hash_tensor(x * 2), "aten.hash_tensor.default makes a uint64 tensor, "
     "read by aten.eq.Tensor inside the program"),
    (lambda x: x.to_sparse().to_dense() + 1, "makes a sparse tensor, read by aten.to_dense.default inside"),
])
def test_a_sparse_or_uint64_value_read_inside_is_one_clear_error(forward, what: str) -> None:
    class Inside(nn.Module):
        def forward(self, x: torch.Tensor):
            return forward(x)

    with pytest.raises(RduccError) as error:
        rducc.compile(Inside(), (torch.randn(3, 4),))
    message = str(error.value)
    assert len(message.splitlines()) == 1 and what in message and "test_output_edges.py:" in message, message


class FloatHashes(nn.Module):
    """hash_tensor of float32, float16 and bfloat16 values: torch widens each to float64 first."""

    def forward(self, x: torch.Tensor):
        return torch.hash_tensor(x, 1), torch.hash_tensor(x.half()), torch.hash_tensor(x.bfloat16() * 2, 0)


def test_a_float_hash_is_float64s_bits_under_f64_demote_and_a_float64_hash_is_refused() -> None:
    """Under --f64 demote a float32 hash still reads float64's bits (widened in integer arithmetic, no
    float64 value), subnormals, zeros, infinities and NaN included; a float64 value's bits would be
    float32's there, so that is one error naming the op and the line."""
    tiny = torch.tensor([0.0, -0.0, float("inf"), -float("inf"), float("nan"), 1e-45, -3e-40, 1e-39, 65504.0, 1e-5])
    x = torch.cat([torch.randn(2, 10, generator=torch.Generator().manual_seed(0)), tiny[None]])
    program = rducc.compile(FloatHashes(), (x,), f64="demote")
    assert "f64" not in program.mlir
    for inputs in (x, x.flip(1) * 3):
        for got, want in zip(program(inputs), FloatHashes()(inputs), strict=True):
            _same(got, want)

    class Float64Hash(nn.Module):
        def forward(self, x: torch.Tensor):
            return torch.hash_tensor(x, 1)

    with pytest.raises(RduccError, match=r"aten\.view\.dtype \(reads the bits of a float64 value .*--f64 demote.*"
                                         r"first at .*test_output_edges\.py:\d+"):
        rducc.compile(Float64Hash(), (x.double(),), f64="demote")
