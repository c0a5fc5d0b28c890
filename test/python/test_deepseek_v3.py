"""transformers' DeepseekV3 (MLA attention, routed experts with grouped top-k
routing, a shared expert, dense first layers) at a small config runs through
rducc's runtime equal to eager, split 4 ways over sn40l-8's sockets.

The experts run with transformers' `batched_mm` experts implementation (each
token's top-k experts' weights gathered and multiplied batched: static shapes,
which torch.export keeps; the eager default loops over the experts a batch
hits, a data-dependent loop export cannot capture)."""

from __future__ import annotations

import pytest
import torch

import rducc
from rducc.dialects.contracts import partition_of
from rducc.pipeline import pipeline_text


class Logits(torch.nn.Module):
    """The causal LM's logits alone, without a cache."""

    def __init__(self, model: torch.nn.Module):
        super().__init__()
        self.model = model

    def forward(self, input_ids: torch.Tensor) -> torch.Tensor:
        return self.model(input_ids=input_ids, use_cache=False).logits


def tiny_deepseek_v3(seed: int = 0) -> tuple[torch.nn.Module, tuple[torch.Tensor, ...]]:
    """DeepseekV3ForCausalLM with one dense and one MoE layer: 16 routed experts in
    4 groups (top-2 groups, 4 experts a token), MLA with low-rank q and kv."""
    from transformers import DeepseekV3Config, DeepseekV3ForCausalLM

    config = DeepseekV3Config(
        vocab_size=128, hidden_size=64, intermediate_size=128, moe_intermediate_size=32,
        num_hidden_layers=2, first_k_dense_replace=1, num_attention_heads=4, num_key_value_heads=4,
        n_routed_experts=16, n_shared_experts=1, num_experts_per_tok=4, n_group=4, topk_group=2,
        q_lora_rank=32, kv_lora_rank=16, qk_rope_head_dim=8, qk_nope_head_dim=16, v_head_dim=16,
        max_position_embeddings=64,
    )
    config._experts_implementation = "batched_mm"
    torch.manual_seed(seed)
    model = DeepseekV3ForCausalLM(config).eval()
    with torch.no_grad():  # a router that prefers some experts, so the top-k is not a tie
        model.model.layers[1].mlp.gate.e_score_correction_bias.normal_(0, 0.1)
    return Logits(model).eval(), (torch.randint(0, config.vocab_size, (1, 6)),)


@pytest.fixture(scope="module")
def deepseek():
    model, inputs = tiny_deepseek_v3()
    with torch.no_grad():
        exported = torch.export.export(model, inputs)
        expected = model(*inputs)
    return exported, inputs, expected


def _mutating(ep: torch.export.ExportedProgram) -> set[str]:
    return {str(n.target) for n in ep.graph.nodes if n.op == "call_function"
            and isinstance(n.target, torch._ops.OpOverload) and n.target._schema.is_mutable}


def test_tiny_deepseek_v3_tp4_matches_eager(deepseek, monkeypatch):
    """4-way tensor parallel on sn40l-8 (the attention heads and the shared and dense
    MLPs split; the cost model alone keeps a model this small on one socket).

    Decomposed as the full 61-layer model is, one trace per distinct node
    (`decompose_repeated`, its threshold lowered here): DeepseekV3 writes its key
    states with `copy_` into two slices of a `new_empty` and its routing uses
    `scatter_` and `div_`, which are made functional first, not by a whole retrace."""
    from rducc.frontend import decompositions, local_decompose

    exported, inputs, expected = deepseek
    assert {"aten.copy_.default", "aten.scatter_.value", "aten.div_.Tensor"} <= _mutating(exported)
    monkeypatch.setattr(local_decompose, "REPEATED_MIN", 0)
    monkeypatch.setattr(decompositions, "_run", lambda *a: pytest.fail("retraced the whole program"))
    assert not _mutating(decompositions.decompose(exported))
    program = rducc.compile(exported, target="sn40l-8", passes=pipeline_text(2, sockets=8, split=(4, 1)))
    assert partition_of(program.module) == (4, 1)
    torch.testing.assert_close(program(*inputs), expected, rtol=1e-4, atol=1e-5)
