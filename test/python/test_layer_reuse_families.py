"""Layer reuse by structure on transformers' own decoders: Llama, Qwen2, Mistral
(sliding window), Gemma, Phi and GPT-2 with its attention scaled by 1/(layer
index + 1) (a per-layer constant) each compile to one `@layer` called once per
layer, and match eager."""

from __future__ import annotations

import re

import pytest
import torch
import transformers
from torch import nn

import rducc

LAYERS = 3
_DECODER = dict(vocab_size=128, hidden_size=32, intermediate_size=64, num_hidden_layers=LAYERS,
                num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64)
FAMILIES = {
    "llama": ("LlamaConfig", "LlamaForCausalLM", {}),
    "qwen2": ("Qwen2Config", "Qwen2ForCausalLM", {}),
    "mistral": ("MistralConfig", "MistralForCausalLM", {"sliding_window": 4}),
    "gemma": ("GemmaConfig", "GemmaForCausalLM", {"head_dim": 8}),
    "phi": ("PhiConfig", "PhiForCausalLM", {}),
    "gpt2_layer_scaled": ("GPT2Config", "GPT2LMHeadModel", {
        "n_embd": 32, "n_layer": LAYERS, "n_head": 4, "n_positions": 64, "bos_token_id": 0,
        "eos_token_id": 0, "scale_attn_by_inverse_layer_idx": True}),
}


class Logits(nn.Module):
    def __init__(self, model: nn.Module) -> None:
        super().__init__()
        self.model = model

    def forward(self, input_ids: torch.Tensor) -> torch.Tensor:
        return self.model(input_ids=input_ids, use_cache=False).logits


@pytest.fixture(scope="module", params=sorted(FAMILIES))
def compiled(request):
    config_class, model_class, overrides = FAMILIES[request.param]
    torch.manual_seed(0)
    config = getattr(transformers, config_class)(**{**_DECODER, **overrides})
    model = Logits(getattr(transformers, model_class)(config)).eval()
    tokens = torch.randint(0, 128, (1, 8))
    with torch.no_grad():
        exported = torch.export.export(model, (tokens,))
    return model, tokens, rducc.compile(exported, opt_level=0)


def test_one_layer_function_called_per_layer(compiled) -> None:
    _, _, program = compiled
    assert re.findall(r"func\.func (?:private )?@(\w+)", program.mlir) == ["forward", "layer"]
    assert program.mlir.count("func.call @layer(") == LAYERS


def test_matches_eager(compiled) -> None:
    model, tokens, program = compiled
    with torch.no_grad():
        expected = model(tokens)
    torch.testing.assert_close(program(tokens), expected, rtol=1e-4, atol=1e-4)
