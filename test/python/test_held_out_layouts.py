"""Mechanisms found by the held-out decode forms (bench/heldout_decode_forms.py), each on a
tiny module against eager:

- a projection written `torch.einsum("bsh,oh->bso", x, w)` (the weight's transpose viewed
  [1, K, N] for a bmm) is a linear layer: split by columns at tp=2, no gather
  (`DropUnitBatchOfRhs`);
- `cache[:, pos] = k` on a buffer [1, positions, heads, dim] (Meta's cache layout) is an
  update of the buffer in place: only its new row is written back (`tier.scatter`,
  `ScatterBeforeUnitReshape`);
- a k projection normed as a whole before its reshape into heads (Olmo2's k_norm), with
  more ranks than KV heads, splits by KV heads over rank pairs (rdu-partition's `LOOK_AHEAD`);
- q/k/v fused per KV group (Falcon's layout) with more ranks than groups splits by groups and,
  in each, q by heads beside k and v held whole (a repeated-blocks `#rdu.split`);
- differential attention (DiffLlama's: the values' KV heads and the output's heads chunked in
  halves, head h paired with h + heads / 2) splits q, k and v with a period of a chunk at tp=2,
  nothing gathered (rdu-partition's `_chunked_columns`); with no such split (a chunk of one KV
  head), q and k split in consecutive heads and the output's heads exchanged where the chunks
  cut them (`_exchange_point`);
- layers whose updates the parent scales by a constant of their depth are one layer whose calls
  loop: the per-layer constants are made before the first call, not as kernels between the
  calls (`hoist_constants`, `sink_to_first_use`)."""

from __future__ import annotations

import copy
import dataclasses

import numpy as np
import pytest
import torch
from test_deepseek_v3 import Logits
from torch import nn
from torch.nn import functional as F

import rducc
from rducc.api import after
from rducc.dialects.rdu.collectives import AllGatherOp, LocalPartOp
from rducc.dialects.tier import GlobalOp, ScatterDmaOp
from rducc.model.cost_model import estimate
from rducc.passes.rdu_partition import RduPartition
from rducc.targets import load_target


def _split_compile(model: nn.Module, inputs: tuple, tp: int):
    exported = torch.export.export(model, inputs)
    return rducc.compile(exported, inputs, target="sn40l-8", opt_level=0,
                         passes=[after("rdu-canonicalize", RduPartition(tp=tp))])


class EinsumMlp(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.up = nn.Parameter(torch.randn(32, 16) / 4)
        self.down = nn.Parameter(torch.randn(16, 32) / 6)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.einsum("bsi,hi->bsh", torch.relu(torch.einsum("bsh,oh->bso", x, self.up)), self.down)


def test_einsum_projections_split_as_linear_layers():
    torch.manual_seed(0)
    model, x = EinsumMlp().eval(), torch.randn(1, 1, 16)
    program = _split_compile(model, (x,), 2)
    shards = {op.sym_name.data: op.attributes.get("rdu.shard") for op in program.module.walk()
              if isinstance(op, GlobalOp)}
    assert all(shards.values()), shards  # up by columns, down by rows
    assert not any(isinstance(op, AllGatherOp) for op in program.module.walk())
    np.testing.assert_allclose(np.asarray(program(x)), model(x).detach().numpy(), rtol=1e-5, atol=1e-5)


class PositionsFirstCache(nn.Module):
    """Meta's cache layout [1, positions, heads, dim], written at a position by `index_put_`."""

    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("cache", torch.zeros(1, 6, 2, 4))

    def forward(self, k: torch.Tensor, position: torch.Tensor) -> torch.Tensor:
        self.cache[:, position] = k
        return self.cache.sum(1)


def test_index_put_on_positions_first_cache_writes_its_row_in_place():
    torch.manual_seed(1)
    model, k, position = PositionsFirstCache().eval(), torch.randn(1, 1, 2, 4), torch.tensor([3])
    eager = copy.deepcopy(model)
    program = rducc.compile(torch.export.export(model, (k, position)), (k, position))
    assert any(isinstance(op, ScatterDmaOp) for op in program.module.walk())  # the row only, in place
    for step in range(2):
        k, position = torch.randn(1, 1, 2, 4), torch.tensor([step + 1])
        np.testing.assert_allclose(np.asarray(program(k, position)), eager(k, position).numpy(), rtol=1e-6)


def test_whole_projection_norm_splits_kv_heads_over_rank_pairs():
    from transformers import Olmo2Config, Olmo2ForCausalLM

    torch.manual_seed(2)
    config = Olmo2Config(vocab_size=64, hidden_size=32, intermediate_size=64, num_hidden_layers=1,
                         num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=16,
                         pad_token_id=0, bos_token_id=0, eos_token_id=0)
    causal = Olmo2ForCausalLM(config).to(torch.bfloat16).eval()  # bf16: the norm's casts are maps too

    model, ids = Logits(causal).eval(), torch.randint(0, 64, (1, 4))
    program = _split_compile(model, (ids,), 4)  # 4 ranks, 2 KV heads: a KV head a rank pair
    shards = {op.sym_name.data: op.attributes.get("rdu.shard") for op in program.module.walk()
              if isinstance(op, GlobalOp)}
    assert str(shards["model.model.layers.0.self_attn.k_proj.weight"]) == "#rdu.split<(0, 2, 2)>"
    with torch.no_grad():
        expected = model(ids).float().numpy()
    got = torch.as_tensor(program(ids)).float().numpy()
    np.testing.assert_allclose(got, expected, rtol=0.05, atol=0.05)


def test_qkv_fused_per_group_splits_by_groups_with_more_ranks_than_groups():
    from transformers import FalconConfig, FalconForCausalLM

    torch.manual_seed(3)
    config = FalconConfig(vocab_size=64, hidden_size=64, num_hidden_layers=1, num_attention_heads=8, num_kv_heads=2,
                          new_decoder_architecture=True, parallel_attn=True, bias=False, max_position_embeddings=16)
    causal = FalconForCausalLM(config).eval()

    model, ids = Logits(causal).eval(), torch.randint(0, 64, (1, 4))
    program = _split_compile(model, (ids,), 4)  # 4 ranks, 2 groups of 4 query heads, one k and one v head
    shards = {op.sym_name.data: op.attributes.get("rdu.shard") for op in program.module.walk()
              if isinstance(op, GlobalOp)}
    assert str(shards["model.transformer.h.0.self_attention.query_key_value.weight"]) == (
        "#rdu.split<(0, 4, 1, [32:2, -8, -8])>")  # a group a rank pair: half its q heads, its k and v whole
    assert not any(isinstance(op, AllGatherOp) for op in program.module.walk())
    with torch.no_grad():
        expected = model(ids).numpy()
    np.testing.assert_allclose(np.asarray(program(ids)), expected, rtol=1e-5, atol=1e-5)


class GroupedQkvReadWhole(nn.Module):
    """q/k/v fused per KV group, viewed [groups, q heads + 2, dim], whose projection is also read whole."""

    def __init__(self) -> None:
        super().__init__()
        self.qkv = nn.Linear(16, 32, bias=False)
        self.o = nn.Linear(16, 16, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        qkv = self.qkv(x)
        grouped = qkv.view(1, 2, 4, 4)
        q, k, v = grouped[:, :, :2], grouped[:, :, 2:3], grouped[:, :, 3:]
        attended = torch.softmax((q * k).sum(-1, keepdim=True) + q, -1) * v
        return self.o(attended.reshape(1, 16)) + torch.cat([qkv, x], -1).sum(-1, keepdim=True)


def test_repeated_blocks_gather_run_by_run():
    torch.manual_seed(4)
    model, x = GroupedQkvReadWhole().eval(), torch.randn(1, 16)
    program = _split_compile(model, (x,), 4)
    shards = [str(op.attributes.get("rdu.shard")) for op in program.module.walk() if isinstance(op, GlobalOp)]
    assert shards[0] == "#rdu.split<(0, 4, 1, [8:2, -4, -4])>", shards
    gathers = [op for op in program.module.walk() if isinstance(op, AllGatherOp)]
    assert [(op.group_size, op.stride_size) for op in gathers] == [(2, 1), (2, 2)]  # q in a pair, then the runs
    np.testing.assert_allclose(np.asarray(program(x)), model(x).detach().numpy(), rtol=1e-5, atol=1e-5)


class DepthScaledStack(nn.Module):
    """Norm + MLP blocks; the parent adds each block's update scaled by 1/sqrt(2 (depth + 1))."""

    def __init__(self, layers: int = 3, width: int = 16) -> None:
        super().__init__()
        self.blocks = nn.ModuleList(nn.Sequential(nn.LayerNorm(width), nn.Linear(width, 2 * width), nn.GELU(),
                                                  nn.Linear(2 * width, width)) for _ in range(layers))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for depth, block in enumerate(self.blocks):
            x = x + (block(x) - x) * (2.0 * (depth + 1)) ** -0.5
        return x


def test_layers_scaled_by_their_depth_loop_as_one_layer():
    torch.manual_seed(4)
    model, x = DepthScaledStack().eval(), torch.randn(1, 1, 16)
    program = rducc.compile(torch.export.export(model, (x,)), (x,), target="sn40l")
    loops = estimate(program.module, load_target("sn40l")).loops
    assert [(loop.calls, loop.looped) for loop in loops] == [(3, True)], loops
    np.testing.assert_allclose(np.asarray(program(x)), model(x).detach().numpy(), rtol=1e-5, atol=1e-6)


class QkvViewedAsHeads(nn.Module):
    """q/k/v one linear viewed as heads with a unit dim after them, [1, q + 2 kv heads, 1, dim],
    and cut along the heads by `narrow` (bench/heldout_forms24.py's `qkv_narrow_vmap`)."""

    def __init__(self) -> None:
        super().__init__()
        self.qkv = nn.Linear(16, 32, bias=False)  # 4 q heads, 2 k, 2 v, of 4
        self.o = nn.Linear(16, 16, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        heads = self.qkv(x).view(1, 8, 1, 4)
        q, k, v = heads.narrow(1, 0, 4), heads.narrow(1, 4, 2), heads.narrow(1, 6, 2)
        grouped = q.reshape(1, 2, 2, 4)  # the query heads of each KV head
        attended = torch.softmax(grouped @ k.transpose(-1, -2), -1) * v
        return self.o(attended.reshape(1, 1, 16))


def test_qkv_viewed_as_heads_with_a_unit_dim_splits_by_blocks():
    """The blocks are found through a reshape that puts a unit dim after the heads
    (`_major_dim`): q split by heads beside k and v by KV heads, nothing gathered."""
    torch.manual_seed(4)
    model, x = QkvViewedAsHeads().eval(), torch.randn(1, 1, 16)
    program = _split_compile(model, (x,), 2)
    shards = {op.sym_name.data: op.attributes.get("rdu.shard") for op in program.module.walk()
              if isinstance(op, GlobalOp)}
    assert str(shards["qkv.weight"]) == "#rdu.split<(0, 2, 1, [16, 8, 8])>", shards
    assert not any(isinstance(op, AllGatherOp) for op in program.module.walk())
    with torch.no_grad():
        expected = model(x).numpy()
    np.testing.assert_allclose(np.asarray(program(x)), expected, rtol=1e-5, atol=1e-5)


class StackedCacheLayer(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.k, self.v = nn.Linear(8, 8, bias=False), nn.Linear(8, 8, bias=False)

    def forward(self, x: torch.Tensor, slot: torch.Tensor, position: torch.Tensor, by_index: bool) -> torch.Tensor:
        k, v = self.k(x).view(2, 1, 4), self.v(x).view(2, 1, 4)
        if by_index:
            slot[0].index_copy_(1, position, k)
            slot[1].index_copy_(1, position, v)
        else:
            slot[0, :, position] = k
            slot[1, :, position] = v
        keys, values = slot.unbind(0)
        scores = torch.softmax(x.view(2, 1, 4) @ keys.transpose(-1, -2), -1)
        return x + (scores @ values).reshape(1, 8)


class StackedCache(nn.Module):
    """Every layer's KV cache in one buffer [layers, 2, kv, positions, dim], each layer writing
    its rows through a view with its constant index (bench/heldout_forms24.py's `stacked_index_copy`),
    by `index_copy_` on `cache[i][0]` or by `cache[i][0, :, pos] = k` (`index_put_`), and reading
    them back by `unbind(0)`."""

    def __init__(self, by_index: bool, narrow: bool = False) -> None:
        super().__init__()
        self.by_index, self.narrow = by_index, narrow
        self.layers = nn.ModuleList(StackedCacheLayer() for _ in range(3))
        self.register_buffer("cache", torch.randn(3, 2, 2, 6, 4))

    def forward(self, x: torch.Tensor, position: torch.Tensor) -> torch.Tensor:
        for i, layer in enumerate(self.layers):
            slot = self.cache.narrow(0, i, 1)[0] if self.narrow else self.cache[i]
            x = layer(x, slot, position, self.by_index)
        return x


@pytest.mark.parametrize("narrow", [False, True], ids=["select", "narrow-sram-1000"])
def test_stacked_cache_written_per_layer_loops_one_layer_and_writes_rows_in_place(narrow: bool):
    """The stack's writes folded per slot (`rducc.frontend.stacked_writes`): one loop of the
    layer, the new rows written into the buffer in place after it; the program and the cache
    it leaves match eager over two steps (`index_copy_` on `cache[i][0]`, or on
    `cache.narrow(0, i, 1)[0][0]`, a `slice_scatter` over the stack; lit
    importer/stacked-cache-writes.py has `index_put_`'s fold). The narrow case runs on a
    target whose SRAM (1,000 bytes) the stack (1,152) does not fit: rdu-fuse weighs the kernel
    writing the rows by those rows (`rducc.model.rows_alone.rows_alone_ops`), so their
    positions stay in the scatter's kernel and it writes the rows alone (before, the scatter
    was a kernel of its own, its index an input, weighed with the whole stack: no tiling fit)."""
    torch.manual_seed(5)
    model, x = StackedCache(by_index=True, narrow=narrow).eval(), torch.randn(1, 8)
    eager = copy.deepcopy(model)
    target = load_target("sn40l")
    if narrow:
        target = dataclasses.replace(target, sram_bytes=1000, pmu_bytes=64)
    program = rducc.compile(torch.export.export(model, (x, torch.tensor([2]))), (x, torch.tensor([2])),
                            target=target)
    loops = estimate(program.module, target).loops
    assert [(loop.calls, loop.looped) for loop in loops] == [(3, True)], loops
    # the rows only, in place, from a kernel that computes them alone (the stack not loaded for them)
    assert any(isinstance(op, ScatterDmaOp) and op.rows_only for op in program.module.walk())
    for step in range(2):
        x, position = torch.randn(1, 8), torch.tensor([4 - step])
        with torch.no_grad():
            expected = eager(x, position).numpy()
        np.testing.assert_allclose(np.asarray(program(x, position)), expected, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(program.weights["cache"], eager.cache.numpy(), rtol=1e-6, atol=1e-6)


class StackedCacheAttentionLayer(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.q, self.k, self.v, self.o = (nn.Linear(8, 8, bias=False) for _ in range(4))

    def forward(self, x: torch.Tensor, slot: torch.Tensor, position: torch.Tensor) -> torch.Tensor:
        slot[0].index_copy_(1, position, self.k(x).view(2, 1, 4))
        slot[1].index_copy_(1, position, self.v(x).view(2, 1, 4))
        keys, values = slot.unbind(0)
        scores = torch.softmax(self.q(x).view(2, 1, 4) @ keys.transpose(-1, -2), -1)
        return x + self.o((scores @ values).reshape(1, 8))


class StackedCacheAttention(nn.Module):
    """`StackedCache` with its attention's queries a projection split by heads (2 KV heads of 4)."""

    def __init__(self) -> None:
        super().__init__()
        self.layers = nn.ModuleList(StackedCacheAttentionLayer() for _ in range(2))
        self.register_buffer("cache", torch.randn(2, 2, 2, 6, 4))

    def forward(self, x: torch.Tensor, position: torch.Tensor) -> torch.Tensor:
        for i, layer in enumerate(self.layers):
            x = layer(x, self.cache[i], position)
        return x


def test_stacked_cache_splits_by_kv_heads_with_its_row_write():
    """tp=2: the stacked cache splits by KV heads as each layer takes its windows, and the
    rows every layer writes after the layers are written into each rank's part (lit
    rdu-partition-stacked-cache-rows.mlir): nothing gathered; the output and the cache it
    leaves match eager."""
    torch.manual_seed(6)
    model, x = StackedCacheAttention().eval(), torch.randn(1, 8)
    eager = copy.deepcopy(model)
    program = _split_compile(model, (x, torch.tensor([2])), 2)
    shards = {op.sym_name.data: str(op.attributes.get("rdu.shard")) for op in program.module.walk()
              if isinstance(op, GlobalOp)}
    assert shards["cache"] == "#rdu.split<(2, 2, 1)>", shards
    assert not any(isinstance(op, AllGatherOp) for op in program.module.walk())
    x, position = torch.randn(1, 8), torch.tensor([4])
    with torch.no_grad():
        expected = eager(x, position).numpy()
    np.testing.assert_allclose(np.asarray(program(x, position)), expected, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(program.weights["cache"], eager.cache.numpy(), rtol=1e-6, atol=1e-6)


class DifferentialAttention(nn.Module):
    """DiffLlama's attention at tiny widths (8 query heads over 4 KV heads of 4): the values'
    KV heads chunked in halves, each tiled back and repeated to the query heads, two attention
    products, the output's heads chunked in halves and subtracted, a per-head RMS norm."""

    def __init__(self, kv_heads: int = 4) -> None:
        super().__init__()
        self.q = nn.Linear(16, 32, bias=False)
        self.k, self.v = nn.Linear(16, 4 * kv_heads, bias=False), nn.Linear(16, 4 * kv_heads, bias=False)
        self.o = nn.Linear(32, 16, bias=False)
        self.lam = nn.Parameter(torch.tensor(0.3))

    def forward(self, x: torch.Tensor, k_cache: torch.Tensor, v_cache: torch.Tensor) -> torch.Tensor:
        q = self.q(x).view(1, 1, 8, 4).transpose(1, 2)
        k = torch.cat((k_cache, self.k(x).view(1, 1, 4, 4).transpose(1, 2)), dim=2).repeat_interleave(2, dim=1)
        v = torch.cat((v_cache, self.v(x).view(1, 1, 4, 4).transpose(1, 2)), dim=2)
        scores = torch.softmax(q @ k.transpose(-1, -2) * 0.5, dim=-1)
        halves = [scores @ half.repeat(1, 2, 1, 1).repeat_interleave(2, dim=1) for half in torch.chunk(v, 2, dim=1)]
        first, second = torch.chunk(torch.cat(halves, dim=-1).transpose(1, 2), 2, dim=2)
        return self.o(F.rms_norm(first - self.lam * second, (8,)).reshape(1, 1, 32))


def test_heads_chunked_after_attention_split_with_a_period():
    """q's heads split with a period of half the heads (a rank holds head h and h + 4), k's and
    v's KV heads alike, so each chunk is split by whole heads: nothing gathered at tp=2."""
    program, shards = _attention_at_tp2(DifferentialAttention(), 4, 5)
    assert shards["q.weight"] == "#rdu.split<(0, 2, 1, 16)>" and shards["v.weight"] == "#rdu.split<(0, 2, 1, 8)>"
    assert not any(isinstance(op, AllGatherOp) for op in program.module.walk())


def _attention_at_tp2(model: nn.Module, kv_heads: int, seed: int):
    """`model` (an attention of [1, 1, 16] inputs and caches of `kv_heads` heads of 4 at 5
    positions) split at tp=2, checked against eager: (program, each weight's `rdu.shard`)."""
    torch.manual_seed(seed)
    model = model.eval()
    inputs = (torch.randn(1, 1, 16), torch.randn(1, kv_heads, 5, 4), torch.randn(1, kv_heads, 5, 4))
    program = _split_compile(model, inputs, 2)
    with torch.no_grad():
        expected = model(*inputs).numpy()
    np.testing.assert_allclose(np.asarray(program(*inputs)), expected, rtol=1e-5, atol=1e-5)
    return program, {op.sym_name.data: str(op.attributes.get("rdu.shard")) for op in program.module.walk()
                     if isinstance(op, GlobalOp)}


class DiffLlamaAttention(DifferentialAttention):
    """DiffLlama's attention as transformers writes it, at tiny widths (8 query heads over 2 KV
    heads of 4): the values repeated to the query heads, chunked in halves, the halves joined
    along the features and tiled back (`cat(chunk(v, 2, dim=1), dim=-1).repeat(1, 2, 1, 1)`),
    the output's heads chunked in halves and subtracted, a per-head RMS norm."""

    def __init__(self) -> None:
        super().__init__(kv_heads=2)

    def forward(self, x: torch.Tensor, k_cache: torch.Tensor, v_cache: torch.Tensor) -> torch.Tensor:
        q = self.q(x).view(1, 1, 8, 4).transpose(1, 2)
        k = torch.cat((k_cache, self.k(x).view(1, 1, 2, 4).transpose(1, 2)), dim=2).repeat_interleave(4, dim=1)
        v = torch.cat((v_cache, self.v(x).view(1, 1, 2, 4).transpose(1, 2)), dim=2).repeat_interleave(4, dim=1)
        v = torch.cat(torch.chunk(v, 2, dim=1), dim=-1).repeat(1, 2, 1, 1)
        first, second = torch.chunk(torch.softmax(q @ k.transpose(-1, -2) * 0.5, dim=-1) @ v, 2, dim=1)
        return self.o(F.rms_norm(first - self.lam * second, (8,)).transpose(1, 2).reshape(1, 1, 32))


def test_heads_chunked_after_attention_exchanged():
    """Two KV heads at tp=2: a chunk of the values is one KV head, so no head-pair split keeps
    the chunks (main gathered q's heads, k's and v's). q and k split in consecutive heads
    instead (rank r: query heads 4r..4r + 3 and KV head r), v whole on both ranks (each rank's
    query heads read both value heads), and the attention output's heads are exchanged where
    the chunks cut them: one all-gather, each rank keeping its part of both chunks
    (rdu-partition's `_exchange_point`); o_proj by rows."""
    program, shards = _attention_at_tp2(DiffLlamaAttention(), 2, 6)
    assert shards["q.weight"] == shards["k.weight"] == "#rdu.split<(0, 2, 1)>" and shards["v.weight"] == "None"
    assert shards["o.weight"] == "#rdu.split<(1, 2, 1)>"
    exchange = [op for op in program.module.walk() if isinstance(op, AllGatherOp | LocalPartOp)]
    assert [type(op) for op in exchange] == [AllGatherOp, LocalPartOp]
