"""GPTBigCode (multi-query attention, one fused `c_attn` for q, k and v) in the suite
(issue 30): tensor parallelism tp=2 on sn40l-8 through the CLI (`rducc --tp 2`,
then `rducc-run`: the q block of c_attn split by heads, the one k and v head
whole on each rank, no all-gather; test_partition_mqa.py checks the same
without multi-query through the Python API), and two SGD training steps through `rducc.compile_training`,
each against eager on a tiny config."""

from __future__ import annotations

import copy
from pathlib import Path

import numpy as np
import torch
import transformers
from torch import nn

import rducc
from rducc.tools.cli import main as cli_main
from rducc.tools.run import main as run_main


class Logits(nn.Module):
    def __init__(self, model: nn.Module) -> None:
        super().__init__()
        self.model = model

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        return self.model(ids, use_cache=False).logits


def _tiny_bigcode(seed: int) -> nn.Module:
    torch.manual_seed(seed)
    config = transformers.GPTBigCodeConfig(vocab_size=64, n_embd=16, n_layer=1, n_head=2, n_positions=8,
                                           multi_query=True, attn_pdrop=0.0, resid_pdrop=0.0, embd_pdrop=0.0,
                                           bos_token_id=0, eos_token_id=0)
    return Logits(transformers.GPTBigCodeForCausalLM(config))


def _ids(seed: int, shape: tuple[int, int] = (2, 6)) -> torch.Tensor:
    return torch.randint(0, 64, shape, generator=torch.Generator().manual_seed(seed))


def test_cli_tp2_on_gpt_bigcode_matches_eager(tmp_path: Path) -> None:
    model, ids = _tiny_bigcode(0).eval(), _ids(1)
    archive, program = tmp_path / "bigcode.pt2", tmp_path / "bigcode.mlir"
    with torch.no_grad():
        torch.export.save(torch.export.export(model, (ids,)), archive)
    np.save(tmp_path / "ids.npy", _ids(2).numpy())
    assert cli_main([str(archive), "--target", "sn40l-8", "--tp", "2", "-O0", "-o", str(program)]) == 0
    text = program.read_text()
    assert "rdu.partition = {tp = 2" in text.replace("#rdu.partition<", "{")
    # the fused c_attn: its q block split by heads, its one k and one v head whole on each rank
    for name in ("c_attn.weight", "c_attn.bias"):
        line = next(line for line in text.splitlines() if f"tier.global @model.transformer.h.0.attn.{name}" in line)
        assert "rdu.shard = #rdu.split<(0, 2, 1, [16, -8, -8])>" in line, line
    assert "all_gather" not in text
    assert run_main([str(program), "--input", str(tmp_path / "ids.npy"), "--output", str(tmp_path / "y.npz")]) == 0
    got = np.load(tmp_path / "y.npz")
    with torch.no_grad():
        want = model(_ids(2)).numpy()
    np.testing.assert_allclose(got[got.files[0]], want, rtol=1e-4, atol=1e-5)


def test_two_sgd_steps_on_gpt_bigcode_match_eager() -> None:
    model = _tiny_bigcode(3).train()
    reference, initial = copy.deepcopy(model), copy.deepcopy(model)

    def loss_fn(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        return nn.functional.cross_entropy(logits.flatten(0, 1), labels.flatten())

    batches = [(_ids(10 + step), _ids(20 + step)) for step in range(2)]
    program = rducc.compile_training(model, batches[0], optimizer=torch.optim.SGD(model.parameters(), lr=0.1),
                                     loss_fn=loss_fn, opt_level=2)
    eager = torch.optim.SGD(reference.parameters(), lr=0.1)
    for ids, labels in batches:
        got = program.step(ids, labels)
        eager.zero_grad()
        loss = loss_fn(reference(ids), labels)
        loss.backward()
        eager.step()
        torch.testing.assert_close(torch.as_tensor(got).reshape(()), loss.detach(), rtol=1e-5, atol=1e-6)
    parameters, before = program.parameters(), dict(initial.named_parameters())
    for name, expected in reference.named_parameters():
        torch.testing.assert_close(parameters[name], expected.detach(), rtol=1e-4, atol=1e-5)
    attention = "model.transformer.h.0.attn.c_attn.weight"
    assert not torch.allclose(parameters[attention], before[attention].detach()), "the steps must train c_attn"
