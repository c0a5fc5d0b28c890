"""Tensor parallelism on attention with fewer KV heads than the head split
(passes/rdu_partition/): multi-query attention (one KV head) at tp=2 replicates
the k/v projections on every rank and splits the query heads, with no gather;
grouped-query attention with 2 KV heads at tp=4 splits them over pairs of
ranks. A hand-written block, Hugging Face Llama with one KV head and
GPTBigCode's multi-query attention (fused q/k/v), against eager, through the
Python API and the CLI."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import transformers

import rducc
from rducc.api import after
from rducc.dialects.contracts import Split, shard_of
from rducc.dialects.rdu.collectives import AllGatherOp
from rducc.dialects.tier import GlobalOp
from rducc.passes.rdu_partition import RduPartition
from rducc.tools.cli import main as cli_main
from rducc.tools.run import main as run_main


class MultiQueryAttention(torch.nn.Module):
    """Causal attention with `kv_heads` K/V heads shared by `heads` query heads."""

    def __init__(self, dim: int = 32, heads: int = 4, kv_heads: int = 1) -> None:
        super().__init__()
        self.heads, self.kv_heads, self.head_dim = heads, kv_heads, dim // heads
        self.q = torch.nn.Linear(dim, dim, bias=False)
        self.k = torch.nn.Linear(dim, kv_heads * self.head_dim, bias=False)
        self.v = torch.nn.Linear(dim, kv_heads * self.head_dim, bias=False)
        self.o = torch.nn.Linear(dim, dim, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        batch, length, dim = x.shape
        q = self.q(x).view(batch, length, self.heads, self.head_dim).transpose(1, 2)
        k = self.k(x).view(batch, length, self.kv_heads, self.head_dim).transpose(1, 2)
        v = self.v(x).view(batch, length, self.kv_heads, self.head_dim).transpose(1, 2)
        groups = self.heads // self.kv_heads
        k, v = k.repeat_interleave(groups, dim=1), v.repeat_interleave(groups, dim=1)
        attended = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.o(attended.transpose(1, 2).reshape(batch, length, dim))


class Logits(torch.nn.Module):
    """A causal LM's logits, without the cache."""

    def __init__(self, model: torch.nn.Module) -> None:
        super().__init__()
        self.model = model

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        return self.model(ids, use_cache=False).logits


def _compile(model, inputs, tp: int, opt_level: int = 0) -> rducc.Program:
    return rducc.compile(model, inputs, target="sn40l-8", opt_level=opt_level,
                         passes=[after("rdu-canonicalize", RduPartition(tp=tp))])


def _shards(program: rducc.Program) -> dict:
    return {g.sym_name.data: shard_of(g) for g in program.module.ops if isinstance(g, GlobalOp)}


def _gathers(program: rducc.Program) -> int:
    return sum(isinstance(op, AllGatherOp) for op in program.module.walk())


def _check(program: rducc.Program, model: torch.nn.Module, inputs: tuple) -> None:
    with torch.no_grad():
        expected = model(*inputs)
    torch.testing.assert_close(program(*inputs), expected, rtol=1e-4, atol=1e-5)


@pytest.fixture(scope="module")
def mqa_program():
    """The hand-written multi-query block at tp=2, -O0, with its inputs."""
    torch.manual_seed(0)
    model, inputs = MultiQueryAttention().eval(), (torch.randn(2, 8, 32),)
    return model, inputs, _compile(model, inputs, tp=2)


def test_hand_written_mqa_tp2_replicates_kv_and_splits_queries(mqa_program):
    model, inputs, program = mqa_program
    shards = _shards(program)
    assert shards["k.weight"] is None and shards["v.weight"] is None  # the one KV head on every rank
    assert shards["q.weight"] == Split.whole(0, 2) and shards["o.weight"] == Split.whole(1, 2)
    assert _gathers(program) == 0
    _check(program, model, inputs)


def test_hand_written_gqa_two_kv_heads_tp4():
    torch.manual_seed(1)
    model, inputs = MultiQueryAttention(kv_heads=2).eval(), (torch.randn(2, 8, 32),)
    program = _compile(model, inputs, tp=4)
    shards = _shards(program)
    assert shards["k.weight"] == Split(((0, 2, 2),)) and shards["q.weight"] == Split.whole(0, 4)
    assert _gathers(program) == 0
    _check(program, model, inputs)


def test_a_wrong_replica_of_the_kv_head_changes_the_result(mqa_program):
    """Every rank reads the whole k projection: change it and the result moves."""
    _, inputs, program = mqa_program
    original = dict(program.weights)
    expected = program(*inputs)
    weights = dict(original)
    weights["k.weight"] = np.ascontiguousarray(weights["k.weight"][::-1])
    program.weights = weights
    try:
        assert not torch.allclose(program(*inputs), expected, atol=1e-3)
    finally:
        program.weights = original


def _llama_one_kv_head() -> tuple[torch.nn.Module, tuple]:
    torch.manual_seed(3)
    config = transformers.LlamaConfig(vocab_size=64, hidden_size=32, intermediate_size=64, num_hidden_layers=1,
                                      num_attention_heads=4, num_key_value_heads=1, max_position_embeddings=32)
    return Logits(transformers.LlamaForCausalLM(config).eval()), (torch.randint(0, 64, (1, 8)),)


def test_hf_llama_one_kv_head_tp2():
    model, inputs = _llama_one_kv_head()
    program = _compile(model, inputs, tp=2, opt_level=2)
    shards = _shards(program)
    assert shards["model.model.layers.0.self_attn.k_proj.weight"] is None
    assert shards["model.model.layers.0.self_attn.q_proj.weight"] == Split.whole(0, 2)
    assert shards["model.model.layers.0.self_attn.o_proj.weight"] == Split.whole(1, 2)
    assert _gathers(program) == 0
    _check(program, model, inputs)


@pytest.mark.parametrize("multi_query", [False])
def test_gpt_bigcode_fused_qkv_split_per_head_tp2(multi_query):
    """GPTBigCode's fused `c_attn` at tp=2: with multi_query its q block splits by heads
    and its one k and one v head stay whole on every rank (`[32, -8, -8]`; through the
    CLI in test_gpt_bigcode.py), without each of q, k and v splits by heads (a view
    into heads); either way no all-gather of c_attn's output; equals eager."""
    torch.manual_seed(4)
    config = transformers.GPTBigCodeConfig(vocab_size=64, n_embd=32, n_layer=1, n_head=4, n_positions=32,
                                           multi_query=multi_query, bos_token_id=0, eos_token_id=0)
    model, inputs = Logits(transformers.GPTBigCodeForCausalLM(config).eval()), (torch.randint(0, 64, (1, 8)),)
    program = _compile(model, inputs, tp=2)
    shards = _shards(program)
    blocks = (32, -8, -8) if multi_query else 0
    for layer in range(1):
        attn = f"model.transformer.h.{layer}.attn"
        assert shards[f"{attn}.c_attn.weight"] == Split(((0, 2, 1, blocks),))
        assert shards[f"{attn}.c_attn.bias"] == Split(((0, 2, 1, blocks),))
        assert shards[f"{attn}.c_proj.weight"] == Split.whole(1, 2)
    assert _gathers(program) == 0
    _check(program, model, inputs)


def test_split_with_blocks_held_whole():
    """A rank holds its part of each split block and all of each block held whole."""
    split = Split(((1, 2, 1, (4, -2, -2)),))
    assert split.fits((3, 8)) and not split.fits((3, 10))
    assert split.part_shape((3, 8)) == [3, 6] and split.whole_shape((3, 6)) == [3, 8]
    assert split.indices((3, 8), 1) == [(1, [(2, 2), (4, 2), (6, 2)])]
    assert not Split(((1, 2, 1, (3, -2)),)).fits((3, 5))  # 2 parts do not divide a split block of 3


def test_split_with_blocks_of_their_own_parts():
    """A block `(size, p)` splits p ways over the major factor of the entry's parts:
    q's 8 columns 4 ways, k's 4 columns 2 ways (ranks 2k and 2k + 1 hold KV part k);
    every rank's part cut from a whole array joins back to it."""
    from rducc.runtime.sockets import _join, _part

    split = Split(((1, 4, 1, (8, (4, 2), (4, 2))),))
    assert Split(((1, 4, 1, (8, (4, 4), (4, 1))),)).entries == ((1, 4, 1, (8, 4, -4)),)  # the shortest spelling
    assert split.fits((3, 16)) and not Split(((1, 4, 1, (8, (4, 3))),)).fits((3, 12))
    assert split.part_shape((3, 16)) == [3, 6] and split.whole_shape((3, 6)) == [3, 16]
    assert [split.indices((3, 16), rank) for rank in (0, 1, 3)] == [
        [(1, [(0, 2), (8, 2), (12, 2)])], [(1, [(2, 2), (8, 2), (12, 2)])], [(1, [(6, 2), (10, 2), (14, 2)])]]
    whole = np.arange(48).reshape(3, 16)
    assert np.array_equal(_join([_part(whole, split, rank) for rank in range(4)], split), whole)


def test_cli_tp2_on_multi_query_attention(tmp_path):
    """`rducc m.pt2 --target sn40l-8 --tp 2` then `rducc-run`: equals eager."""
    torch.manual_seed(5)
    model, x = MultiQueryAttention().eval(), torch.randn(2, 8, 32)
    torch.export.save(torch.export.export(model, (x,)), tmp_path / "m.pt2")
    np.save(tmp_path / "x.npy", x.numpy())
    out = tmp_path / "m.mlir"
    assert cli_main([str(tmp_path / "m.pt2"), "--target", "sn40l-8", "--tp", "2", "-o", str(out)]) == 0
    assert "rdu.partition = {tp = 2" in out.read_text().replace("#rdu.partition<", "{")
    assert run_main([str(out), "--input", str(tmp_path / "x.npy"), "--output", str(tmp_path / "y.npz")]) == 0
    got = np.load(tmp_path / "y.npz")
    with torch.no_grad():
        expected = model(x).numpy()
    np.testing.assert_allclose(got[next(iter(got.keys()))], expected, rtol=1e-4, atol=1e-5)
