"""Vocab-parallel embedding (passes/rdu_partition/, `_partition_vocab_lookup`):
a table tied to the LM head is split by vocabulary rows over the ranks, the
output layer reads its rows (column-parallel logits) and the embedding lookup
gathers the rows each rank owns, zero elsewhere, all-reduced. A hand-written
tied model (ids of any shape) and transformers' Gemma2 (tied by default)
against eager at tp=2 on sn40l-8."""

from __future__ import annotations

import torch
import transformers

import rducc
from rducc.api import after
from rducc.dialects.contracts import Split, shard_of
from rducc.dialects.rdu.collectives import AllGatherOp
from rducc.dialects.tier import GlobalOp
from rducc.passes.rdu_partition import RduPartition


class TiedLM(torch.nn.Module):
    """Embedding, one MLP and an LM head that reads the embedding's table."""

    def __init__(self, vocab: int = 32, dim: int = 16) -> None:
        super().__init__()
        self.embed = torch.nn.Embedding(vocab, dim)
        self.up = torch.nn.Linear(dim, 2 * dim, bias=False)
        self.down = torch.nn.Linear(2 * dim, dim, bias=False)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        x = self.embed(ids)
        x = x + self.down(torch.relu(self.up(x)))
        return x @ self.embed.weight.t()


class Logits(torch.nn.Module):
    """A causal LM's logits, without the cache."""

    def __init__(self, model: torch.nn.Module) -> None:
        super().__init__()
        self.model = model

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        return self.model(ids, use_cache=False).logits


def _compile(model: torch.nn.Module, inputs: tuple) -> rducc.Program:
    return rducc.compile(model, inputs, target="sn40l-8", opt_level=0,
                         passes=[after("rdu-canonicalize", RduPartition(tp=2))])


def _table_split_and_matches(model: torch.nn.Module, inputs: tuple, table: str) -> None:
    """`table` is held split by vocabulary rows, never all-gathered whole, and the logits match eager."""
    program = _compile(model, inputs)
    globals_ = {g.sym_name.data: g for g in program.module.ops if isinstance(g, GlobalOp)}
    assert shard_of(globals_[table]) == Split.whole(0, 2)
    whole = globals_[table].global_type.get_shape()  # per rank now: half the rows
    assert not any(isinstance(op, AllGatherOp) and op.result.type.get_shape() == (2 * whole[0], *whole[1:])
                   for op in program.module.walk())
    with torch.no_grad():
        expected = model(*inputs)
    torch.testing.assert_close(program(*inputs), expected, rtol=1e-4, atol=1e-5)


def test_tied_table_splits_by_vocab_rows():
    torch.manual_seed(0)
    model = TiedLM().eval()
    ids = torch.tensor([[0, 15, 16], [31, 7, 20]])  # rows of both ranks' parts, edges included (the lit test: 1-d ids)
    _table_split_and_matches(model, (ids,), "embed.weight")


def test_transformers_gemma2_tied_embedding_is_vocab_parallel():
    config = transformers.Gemma2Config(vocab_size=64, hidden_size=32, intermediate_size=64, num_hidden_layers=1,
                                       num_attention_heads=2, num_key_value_heads=2, head_dim=16,
                                       max_position_embeddings=32, tie_word_embeddings=True)
    torch.manual_seed(0)
    model = Logits(transformers.Gemma2ForCausalLM(config)).eval()
    ids = torch.tensor([[1, 40, 7, 63]])
    _table_split_and_matches(model, (ids,), "model.lm_head.weight")  # the tied table torch.export keeps



class TiedBlocks(torch.nn.Module):
    """A tied embedding and LM head around two identical residual MLP blocks (outlined
    as one layer: the lookup and the logits are kernels of their own)."""

    def __init__(self, vocab: int, dim: int) -> None:
        super().__init__()
        self.embed = torch.nn.Embedding(vocab, dim)
        self.blocks = torch.nn.ModuleList(torch.nn.Sequential(torch.nn.Linear(dim, 2 * dim), torch.nn.ReLU(),
                                                              torch.nn.Linear(2 * dim, dim)) for _ in range(2))

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        x = self.embed(ids)
        for block in self.blocks:
            x = x + block(x)
        return x @ self.embed.weight.t()


def test_split_lookup_reads_its_rows_by_indexed_dma():
    """At -O2 the rank-local index is a kernel before the lookup's (rdu-fuse's
    `index_cuts`), so each rank reads its row by indexed DMA (`tier.gather` of
    its table part) instead of streaming the part through the lookup's kernel."""
    from rducc.dialects.tier import GatherDmaOp

    torch.manual_seed(0)
    model = TiedBlocks(vocab=4096, dim=64).eval()  # a 1 MB table: cheaper by rows than whole
    ids = torch.tensor([[0, 2047, 2048, 4095]])
    program = rducc.compile(model, (ids,), target="sn40l-8", split=(2, 1))
    gathers = [op for op in program.module.walk() if isinstance(op, GatherDmaOp)]
    assert any(tuple(op.source.type.get_shape()) == (2048, 64) for op in gathers), gathers
    with torch.no_grad():
        expected = model(ids)
    torch.testing.assert_close(program(ids), expected, rtol=1e-4, atol=1e-5)
