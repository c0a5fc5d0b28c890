"""Expert parallelism (`rdu-partition{ep=N}`, `rducc --ep N`): the routed experts'
stacked tables split over the sockets of a tensor-parallel group, each pair's
row combined from the socket owning its expert by `rdu.all_to_all`
(passes/rdu_partition/experts.py).

Numerics against eager on transformers' DeepseekV3 (MLA, grouped top-k routing,
a shared expert) and Mixtral at small configs, random init; the all-to-all's
kernel against its definition on threads standing for sockets; its modeled cost
by the target's topology; the chooser taking ep when the experts do not fit a
socket's HBM."""

from __future__ import annotations

import dataclasses
import threading

import numpy as np
import pytest
import torch
from test_deepseek_v3 import Logits

import rducc
from rducc.dialects.contracts import expert_parallel, partition_of
from rducc.dialects.tier import GlobalOp
from rducc.errors import RduccError


def moe_deepseek_v3(seed: int = 0) -> tuple[torch.nn.Module, tuple[torch.Tensor, ...]]:
    """DeepseekV3ForCausalLM of one MoE layer: 16 routed experts in 4 groups (top-2
    groups, 4 experts a token), a shared expert, MLA with low-rank q and kv."""
    from transformers import DeepseekV3Config, DeepseekV3ForCausalLM

    config = DeepseekV3Config(
        vocab_size=64, hidden_size=32, intermediate_size=64, moe_intermediate_size=16,
        num_hidden_layers=1, first_k_dense_replace=0, num_attention_heads=4, num_key_value_heads=4,
        n_routed_experts=16, n_shared_experts=1, num_experts_per_tok=4, n_group=4, topk_group=2,
        q_lora_rank=16, kv_lora_rank=16, qk_rope_head_dim=8, qk_nope_head_dim=8, v_head_dim=8,
        max_position_embeddings=64,
    )
    config._experts_implementation = "batched_mm"
    torch.manual_seed(seed)
    model = DeepseekV3ForCausalLM(config).eval()
    with torch.no_grad():  # a router that prefers some experts, so the top-k is not a tie
        model.model.layers[0].mlp.gate.e_score_correction_bias.normal_(0, 0.1)
    return Logits(model).eval(), (torch.randint(0, config.vocab_size, (1, 3)),)


def tiny_mixtral(seed: int = 0) -> tuple[torch.nn.Module, tuple[torch.Tensor, ...]]:
    """MixtralForCausalLM, 2 layers of 8 experts (top-2), batched_mm experts, one
    token: 2 token-expert pairs, fewer than the sockets (the combine pads them)."""
    from transformers import MixtralConfig, MixtralForCausalLM

    config = MixtralConfig(num_hidden_layers=2, hidden_size=32, intermediate_size=48, num_attention_heads=4,
                           num_key_value_heads=2, num_local_experts=8, num_experts_per_tok=2, vocab_size=96,
                           max_position_embeddings=64, use_cache=False)
    config._experts_implementation = "batched_mm"
    torch.manual_seed(seed)
    model = MixtralForCausalLM(config).eval()

    class Logits(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.model = model

        def forward(self, input_ids: torch.Tensor) -> torch.Tensor:
            return self.model(input_ids=input_ids).logits

    return Logits().eval(), (torch.randint(0, config.vocab_size, (1, 1)),)


def _expert_tables(program: rducc.Program) -> dict[str, list[int]]:
    return {g.sym_name.data: list(g.global_type.get_shape()) for g in program.module.walk()
            if isinstance(g, GlobalOp) and "experts" in g.sym_name.data and "shared" not in g.sym_name.data}


def _exported(factory) -> tuple[torch.export.ExportedProgram, tuple[torch.Tensor, ...], torch.Tensor]:
    model, inputs = factory()
    with torch.no_grad():
        return torch.export.export(model, inputs), inputs, model(*inputs)


@pytest.fixture(scope="module")
def mixtral():
    return _exported(tiny_mixtral)


@pytest.fixture(scope="module")
def deepseek():
    return _exported(moe_deepseek_v3)


def _owned_rows(program: rducc.Program) -> list[tuple[tuple[int, int], int | None, int]]:
    """((owned, rows), bytes the cost model counts for an indexed DMA (None: the gather
    runs on chip, its table loaded whole), bytes of the gathered rows) of every gather
    that records the rows a socket's experts serve."""
    from rducc.dialects.contracts import owned_rows
    from rducc.dialects.rdu.dataflow import GatherOp
    from rducc.dialects.shapes import value_bytes
    from rducc.dialects.tier import GatherDmaOp
    from rducc.model.program_walk import transfer_bytes

    return [(owned, transfer_bytes(op) if isinstance(op, GatherDmaOp) else None,
             value_bytes(op.dest if isinstance(op, GatherDmaOp) else op.results[0]))
            for op in program.module.walk()
            if isinstance(op, GatherOp | GatherDmaOp) and (owned := owned_rows(op)) is not None]


SMALL_HBM = 87_332
"""A socket's HBM for the tiny DeepseekV3 at ep=2: its 27,816 bytes of activations and
59,516 of its 67,648 bytes of weights read whole (the router's 2,048 whole: split, its
columns would cost collectives where the top-k meets them; the up table's 32,768 bytes a
socket, the down table's 16,384); the embedding table (8,192 bytes, 3 of its 64 rows read
a step) is the coldest."""


@pytest.mark.parametrize("name,ep,experts,hbm", [("deepseek", 2, 16, SMALL_HBM), ("mixtral", 4, 8, None)],
                         ids=["deepseek_v3-ep2-small-hbm", "mixtral-ep4"])
def test_expert_parallel_matches_eager(request, name: str, ep: int, experts: int, hbm: int | None) -> None:
    """Each socket holds experts / ep of every expert table; the pairs' rows cross by
    one all-to-all a MoE layer; the logits are eager's. Each expert gather records the
    pairs a socket's experts serve, spread evenly: ceil(pairs / ep) of them (DeepseekV3:
    3 tokens x top-4 = 12 pairs, 6 a socket at ep=2; Mixtral: 1 token x top-2, 1 a
    socket at ep=4), which is all the cost model reads of the table when the gather is
    an indexed DMA (test/passes/rdu-insert-dma-experts.mlir; these tables are small
    enough to load whole).

    With a small HBM (DeepseekV3), residency by reads: every weight here is read whole
    (these small expert tables too) but the embedding table, of which a step reads only
    the token's rows: it is the coldest, placed last (a row of it in HBM at most, from
    what rounding leaves). The weights read whole do not all fit: each that can keeps
    one share of its rows (runs of its last dim) in HBM (`tier.hbm_rows`), the rest in
    DDR. The cost model reads the table's DDR share
    and the token's rows of the embedding from DDR, the rest from HBM; the numerics do
    not change."""
    from rducc.dialects.contracts import hbm_rows, table_rows
    from rducc.model.cost_model import estimate
    from rducc.model.switching import resident_bytes
    from rducc.targets import load_target

    exported, inputs, expected = request.getfixturevalue(name)
    target = load_target("sn40l-8")
    if hbm is not None:
        target = dataclasses.replace(target, name="experts-hbm", hbm_bytes=hbm)
    program = rducc.compile(exported, target=target, opt_level=1, split=(0, 0, 0, ep))
    assert partition_of(program.module) == (ep, 1)
    assert expert_parallel(program.module) == ep
    tables = _expert_tables(program)
    assert tables and all(shape[0] == experts // ep for shape in tables.values()), tables
    assert str(program.module).count("rdu.all_to_all") >= 1
    gathers = _owned_rows(program)
    pairs = {"deepseek": 12, "mixtral": 2}[name]
    assert gathers and all(owned == (-(-pairs // ep), pairs) for owned, _, _ in gathers), gathers
    assert all(counted is None or counted == whole * owned // rows < whole
               for (owned, rows), counted, whole in gathers), gathers
    globals_ = [g for g in program.module.walk() if isinstance(g, GlobalOp)]
    split = {g.sym_name.data: hbm_rows(g.attributes) for g in globals_ if hbm_rows(g.attributes)}
    read = estimate(program.module, target).bytes_by_tier
    if hbm is None:
        assert not split and "ddr->sram" not in read, (split, read)
    else:
        embedding = "model.model.embed_tokens.weight"
        tables = {g.sym_name.data: g for g in globals_}
        kept = {name: rows / table_rows(tables[name].global_type.get_shape()) for name, rows in split.items()}
        experts = [n for n in kept if ".experts." in n]
        assert len(experts) == 2 and len({kept[n] for n in experts}) == 1, kept  # one share for the margin
        assert all(share < 1 for share in kept.values()) and kept.get(embedding, 0) < min(kept.values()) + 0.02, kept
        whole = sum(g.resident_bytes()[1] for g in globals_ if g.sym_name.data in split and g.sym_name.data != embedding)
        rows = 3 * 32 * 4  # the token's 3 embedding rows, in HBM by the embedding's share
        in_ddr = sum(g.resident_bytes()[1] for g in globals_)
        assert resident_bytes(program.module)[1] == in_ddr and whole < in_ddr, (whole, in_ddr)
        assert read["ddr->sram"] == whole + rows - round(rows * kept.get(embedding, 0)), read  # each DDR part once
    torch.testing.assert_close(program(*inputs), expected, rtol=1e-4, atol=1e-5)


def test_all_to_all_kernel_sends_part_j_to_rank_j() -> None:
    """Rank r's result is part r (along split_dim) of every rank's input, joined
    along concat_dim in rank order, for 3 ranks on threads."""
    from rducc.runtime.collectives import all_to_all
    from rducc.runtime.context import RunContext, SocketGroup

    ranks, group = 3, SocketGroup(3)
    inputs = [np.arange(6 * 4, dtype=np.float32).reshape(6, 4) + 100 * r for r in range(ranks)]
    results: dict[int, np.ndarray] = {}

    def run(rank: int) -> None:
        results[rank] = all_to_all(inputs[rank], 0, 1, ranks, RunContext(run=1, group=group, rank=rank))

    threads = [threading.Thread(target=run, args=(r,)) for r in range(ranks)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for rank in range(ranks):
        want = np.concatenate([inputs[j][2 * rank: 2 * rank + 2] for j in range(ranks)], axis=1)
        np.testing.assert_array_equal(results[rank], want)


def test_all_to_all_cost_follows_the_topology() -> None:
    """(n-1) pairwise steps of B/n each: one hop a step inside a module, the
    target's cross-module hops once the group leaves it."""
    from xdsl.dialects.builtin import TensorType, bf16
    from xdsl.utils.test_value import create_ssa_value

    from rducc.dialects.rdu.collectives import AllToAllOp
    from rducc.model.kernel_timing import collective_cost
    from rducc.targets import load_target

    target = load_target("sn40l-16")
    value = create_ssa_value(TensorType(bf16, [16, 1024]))
    size = 16 * 1024 * 2
    for n in (2, 16):
        seconds, sent = collective_cost(AllToAllOp(value, 0, 0, n, value.type), target)
        hops = 1 if n <= target.module_sockets else target.cross_module_hops
        assert sent == (n - 1) * size // n
        assert seconds == pytest.approx((n - 1) * (hops * target.link_latency_s + size / n / target.link_bandwidth))


def test_the_chooser_splits_the_experts_when_they_do_not_fit(mixtral) -> None:
    """With a socket's HBM too small for the experts whole (and a slow DDR behind
    it), the cost model picks ep = tp, each socket holding its part of the experts;
    ep=1 keeps every expert on every socket."""
    from rducc.passes.rdu_partition import choose_split
    from rducc.targets import load_target

    exported = mixtral[0]
    imported = rducc.compile(exported, target="sn40l-8", passes="rdu-canonicalize")
    small = dataclasses.replace(load_target("sn40l-8"), name="small-hbm", hbm_bytes=60_000,
                                ddr_bandwidth=1e6)
    module = imported.module.clone()
    from rducc.dialects.contracts import set_target

    set_target(module, small)
    tp, pp, ep = choose_split(module)
    assert ep == tp > 1, (tp, pp, ep)
    assert choose_split(module, ep=1)[2] == 1


def test_ep_that_finds_no_experts_is_one_error(deepseek) -> None:
    from rducc.passes.rdu_partition import partition_module

    exported = deepseek[0]
    module = rducc.compile(exported, target="sn40l-8", passes="rdu-canonicalize").module
    with pytest.raises(RduccError, match="ep=4 must equal tp=2"):
        partition_module(module.clone(), 2, 1, ep=4)
    with pytest.raises(RduccError, match="ep=32 finds no routed experts"):
        partition_module(module.clone(), 32, 1, ep=32)
