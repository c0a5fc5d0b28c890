"""Dynamic-shape buckets (`rducc --shapes`, `rducc.compile(..., shapes=...)`,
docs/shapes.md): a program exported with dynamic_shapes compiles once per
combination of sizes into one module sharing one weights file; every bucket
matches eager, and `rducc-run` / `BucketedProgram` pick the bucket matching the
inputs' shapes. The CLI runs in-process (`main`), as a user's command line."""

from __future__ import annotations

import json
import struct
from pathlib import Path

import numpy as np
import pytest
import torch
from torch import nn
from torch.export import Dim

import rducc
from rducc.errors import RduccError
from rducc.frontend.dynamic_dims import dynamic_dims, guard_holds
from rducc.tools.cli import main as rducc_main
from rducc.tools.run import main as run_main


class MLP(nn.Module):
    """A hand-written MLP; its batch is dynamic."""

    def __init__(self):
        super().__init__()
        self.up, self.down = nn.Linear(16, 32), nn.Linear(32, 4)

    def forward(self, x):
        return self.down(torch.nn.functional.gelu(self.up(x)))


class TwoStreams(nn.Module):
    """x is [batch, seq, 8], y [batch, 2*seq, 8]: a derived dim."""

    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(8, 8)

    def forward(self, x, y):
        return self.proj(x).sum(1) + y[:, ::2].mean(1)


class Logits(nn.Module):
    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, input_ids):
        return self.model(input_ids=input_ids, use_cache=False).logits


def _gpt2():
    from transformers import GPT2Config, GPT2LMHeadModel

    torch.manual_seed(0)
    config = GPT2Config(n_layer=1, n_embd=32, n_head=2, vocab_size=64, n_positions=32, bos_token_id=0, eos_token_id=0)
    return Logits(GPT2LMHeadModel(config).eval()).eval()


def _export(model, example, dynamic_shapes):
    with torch.no_grad():
        return torch.export.export(model.eval(), example, dynamic_shapes=dynamic_shapes)


@pytest.fixture(scope="module")
def gpt2_archive(tmp_path_factory):
    """A tiny GPT-2 exported with a dynamic batch (1..4) and sequence (2..16), saved: its Dim names are lost."""
    model = _gpt2()
    ids = torch.randint(0, 64, (2, 6))
    program = _export(model, (ids,), ({0: Dim("batch", min=1, max=4), 1: Dim("seq", min=2, max=16)},))
    path = tmp_path_factory.mktemp("gpt2") / "gpt2.pt2"
    torch.export.save(program, str(path))
    return model, path, program


def _bytes_of_weights(path: Path) -> dict:
    header = path.read_bytes()
    size = struct.unpack("<Q", header[:8])[0]
    return {k: v for k, v in json.loads(header[8 : 8 + size]).items() if k != "__metadata__"}


@pytest.fixture(scope="module")
def gpt2_buckets(gpt2_archive):
    """The archive compiled at -O2 by `rducc --shapes batch=1,2 seq=3 --pad-dims seq` (the archive's dims
    named by position; a causal model padded at the end of its sequence: the user vouches for seq)."""
    out = gpt2_archive[1].parent / "gpt2.mlir"
    assert rducc_main([str(gpt2_archive[1]), "--shapes", "batch=1,2", "seq=3", "--pad-dims", "seq", "-q",
                       "-o", str(out)]) == 0
    return out


def test_gpt2_buckets_through_the_cli_match_eager_and_share_weights(gpt2_archive, gpt2_buckets, tmp_path, capsys):
    """-O2, batch and seq dynamic: the buckets in one file, one weights file, each bucket run as eager."""
    model, out = gpt2_archive[0], gpt2_buckets
    text = out.read_text()
    for name in ("forward__batch1_seq3", "forward__batch2_seq3"):
        assert f"builtin.module @{name} attributes" in text
    assert "#rdu.bucket<batch = 2, seq = 3>" in text
    stored = _bytes_of_weights(out.with_suffix(".safetensors"))
    params = dict(model.named_parameters(remove_duplicate=False))
    assert len(stored) <= len(params)  # each weight once, not once per bucket
    assert sum(np.prod(v["shape"]) for v in stored.values()) <= sum(p.numel() for p in params.values())
    assert '#rdu.padding<["seq"], [["", "seq"]], [["", "seq", ""]]' in text
    for batch, seq in ((1, 3), (2, 3), (2, 2)):  # (2, 2): padded up to seq=3, the logits cut back
        ids = torch.randint(0, 64, (batch, seq))
        np.save(tmp_path / "ids.npy", ids.numpy())
        result = tmp_path / "y.npz"
        assert run_main([str(out), "--input", str(tmp_path / "ids.npy"), "--output", str(result), "-q"]) == 0
        with torch.no_grad():
            expected = model(ids).numpy()
        got = np.load(tmp_path / "y.npz")["output_0"]
        np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-4)
    capsys.readouterr()
    assert run_main([str(out), "--simulate", "--report-json", str(tmp_path / "r.json")]) == 0
    printed = capsys.readouterr().out
    assert printed.count("== bucket ") == 2 and "== bucket batch=2 seq=3 (@forward__batch2_seq3) ==" in printed
    rows = json.loads((tmp_path / "r.json").read_text())["buckets"]
    assert [r["bucket"] for r in rows] == [{"batch": 1, "seq": 3}, {"batch": 2, "seq": 3}]
    assert all(r["modeled_time_s"] > 0 and r["flops"] > 0 for r in rows)
    assert rows[1]["flops"] > rows[0]["flops"]


def test_an_uncovered_shape_is_one_error_listing_the_compiled_ones(gpt2_buckets, tmp_path, capsys):
    """rducc-run with inputs of a size no bucket has: exit 1, no traceback, no output file."""
    out = gpt2_buckets
    np.save(tmp_path / "ids.npy", np.zeros((2, 4), dtype=np.int64))
    capsys.readouterr()
    assert run_main([str(out), "--input", str(tmp_path / "ids.npy"), "--output", str(tmp_path / "y.npz")]) == 1
    error = capsys.readouterr().err
    assert "rducc-run: error: no compiled shape takes inputs of shape [2, 4]" in error
    assert "batch=1 seq=3 (inputs [1, 3]); batch=2 seq=3 (inputs [2, 3])" in error and "Traceback" not in error
    assert "(a call may pad seq up to a larger bucket; batch is not padded: " in error
    assert not (tmp_path / "y.npz").exists()


def test_a_dynamic_export_without_shapes_names_its_dims(gpt2_archive, tmp_path, capsys):
    archive = gpt2_archive[1]
    out = tmp_path / "none.mlir"
    assert rducc_main([str(archive), "-o", str(out)]) == 1
    error = capsys.readouterr().err
    assert "dynamic dims: batch (input_ids.0" in error and "seq (input_ids.1" in error
    assert "--shapes batch=1,4 seq=2,16" in error and "Traceback" not in error
    assert not out.exists() and not (tmp_path / "none.safetensors").exists()


def test_gpt2_bucket_at_O0_through_the_python_api(gpt2_archive):
    """The in-memory program keeps its Dim names; one bucket (seq=5) runs seq 5 exactly
    and seq 3 padded up (the causal model's pad at the end, vouched with pad_dims), as eager."""
    model, _, program = gpt2_archive
    compiled = rducc.compile(program, shapes={"batch": 1, "seq": [5]}, pad_dims=["seq"], opt_level=0)
    assert isinstance(compiled, rducc.BucketedProgram)
    assert compiled.buckets == [{"batch": 1, "seq": 5}]
    for seq in (5, 3):
        ids = torch.randint(0, 64, (1, seq))
        with torch.no_grad():
            torch.testing.assert_close(compiled(ids), model(ids), rtol=1e-4, atol=1e-4)
    assert set(compiled.report) == {"batch=1 seq=5"}
    assert all(r.modeled_time_s > 0 for r in compiled.report.values())


def test_mlp_with_a_dynamic_batch():
    """-O0 (the GPT-2 buckets above are -O2): exact buckets, and a batch padded up to a larger one."""
    torch.manual_seed(0)
    model = MLP().eval()
    compiled = rducc.compile(model, (torch.randn(2, 16),), dynamic_shapes=({0: Dim("batch", min=1, max=64)},),
                             shapes={"batch": [1, 3]}, opt_level=0)
    assert compiled.padding is not None and compiled.padding.dims == ["batch"]  # its rows never meet
    for batch in (1, 3, 2):  # 2: padded up to the batch=3 bucket, the result cut back
        x = torch.randn(batch, 16)
        with torch.no_grad():
            torch.testing.assert_close(compiled(x), model(x), rtol=1e-5, atol=1e-5)
    assert compiled.program_for(torch.randn(2, 16)) is compiled.programs[1][1]
    with pytest.raises(RduccError, match=r"of an nn.Module needs dynamic_shapes= too"):
        rducc.compile(model, (torch.randn(2, 16),), shapes={"batch": [1]})
    uncovered = r"no compiled shape takes inputs of shape \[5, 16\]: .*batch=1 \(inputs \[1, 16\]\)"
    with pytest.raises(RduccError, match=uncovered):
        compiled(torch.randn(5, 16))


def test_derived_dims_ranges_and_aliases(tmp_path, capsys):
    """y's length is 2*seq: one --shapes value sizes both inputs; INPUT.DIM names a dim;
    a size outside the Dim's range is refused before anything is compiled."""
    torch.manual_seed(0)
    model = TwoStreams().eval()
    seq = Dim("seq", min=2, max=8)
    program = _export(model, (torch.randn(2, 4, 8), torch.randn(2, 8, 8)),
                      ({0: Dim("batch", max=16), 1: seq}, {0: Dim("batch", max=16), 1: 2 * seq}))
    path = tmp_path / "two.pt2"
    torch.export.save(program, str(path))
    names = {d.name: d.places for d in dynamic_dims(torch.export.load(str(path)))}
    assert names == {"batch": ["x.0", "y.0"], "seq": ["x.1"]}
    out = tmp_path / "two.mlir"
    assert rducc_main([str(path), "--shapes", "batch=3", "x.1=2,5", "-O0", "-q", "-o", str(out)]) == 0
    x, y = torch.randn(3, 5, 8), torch.randn(3, 10, 8)
    np.save(tmp_path / "x.npy", x.numpy())
    np.save(tmp_path / "y.npy", y.numpy())
    assert run_main([str(out), "--input", str(tmp_path / "x.npy"), "--input", str(tmp_path / "y.npy"),
                     "--output", str(tmp_path / "r.npz")]) == 0
    with torch.no_grad():
        np.testing.assert_allclose(np.load(tmp_path / "r.npz")["output_0"], model(x, y).numpy(), rtol=1e-5, atol=1e-5)
    capsys.readouterr()
    assert rducc_main([str(path), "--shapes", "batch=3", "seq=9", "-o", str(tmp_path / "bad.mlir")]) == 1
    assert "seq=9 is outside the range the program was exported for (2..8)" in capsys.readouterr().err
    assert not (tmp_path / "bad.mlir").exists()


def test_guards_are_read_never_executed():
    sizes = {"x": [3, 5, 8], "y": [3, 10, 8]}
    assert guard_holds("L['x'].size()[0] == L['y'].size()[0]", sizes) is True
    assert guard_holds("L['y'].size()[1] == (2*L['x'].size()[1])", sizes) is True
    assert guard_holds("L['y'].size()[1] == 3*L['x'].size()[1] and 2 <= L['x'].size()[1]", sizes) is False
    assert guard_holds("__import__('os').system('false')", sizes) is None
    assert guard_holds("L['z'].size()[0] == 1", sizes) is None


def test_the_one_name_left_names_the_one_dim_left(tmp_path):
    """A saved archive loses Dim("tokens"): `tokens=` still names its one unnamed dynamic dim."""
    torch.manual_seed(0)
    model = MLP().eval()
    program = _export(model, (torch.randn(3, 2, 16),), ({1: Dim("tokens", min=1, max=8)},))
    path = tmp_path / "tokens.pt2"
    torch.export.save(program, str(path))
    compiled = rducc.compile(str(path), shapes={"tokens": [4]}, opt_level=0)
    assert compiled.buckets == [{"tokens": 4}]
    x = torch.randn(3, 4, 16)
    with torch.no_grad():
        torch.testing.assert_close(compiled(x), model(x), rtol=1e-5, atol=1e-5)
    with pytest.raises(RduccError, match="the program has no dynamic dim 'tokens'; its dynamic dims are batch"):
        rducc.compile(_export(model, (torch.randn(3, 2, 16),), ({0: Dim("batch"), 1: Dim("seq")},)),
                      shapes={"tokens": [1], "other": [2]})
