"""Tiny decoder families from transformers (random init, no downloads), for
tensor-parallel checks at batch 1, 2 and 4 (test/python/test_tp_families.py,
bench/tp_families.py).

Each config has 8 query heads over 4 KV heads where the family has grouped
queries (so tp=8 has more ranks than KV heads), hidden 64, 2 layers (so pp=2
has a layer a stage) and a vocabulary of 128.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from torch import nn

from models import LogitsOnly

VOCAB = 128
_LLAMA_LIKE = dict(vocab_size=VOCAB, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                   num_attention_heads=8, num_key_value_heads=4, max_position_embeddings=64)


def _config(family: str) -> tuple[Any, type]:
    """The config and the causal-LM class of a family."""
    import transformers as hf

    llama_like: dict[str, Callable[[], tuple[Any, type]]] = {
        "llama": lambda: (hf.LlamaConfig(**_LLAMA_LIKE), hf.LlamaForCausalLM),
        "mistral": lambda: (hf.MistralConfig(**_LLAMA_LIKE, sliding_window=None), hf.MistralForCausalLM),
        "qwen2": lambda: (hf.Qwen2Config(**_LLAMA_LIKE), hf.Qwen2ForCausalLM),
        "qwen3": lambda: (hf.Qwen3Config(**_LLAMA_LIKE, head_dim=8), hf.Qwen3ForCausalLM),
        "gemma": lambda: (hf.GemmaConfig(**_LLAMA_LIKE, head_dim=8), hf.GemmaForCausalLM),
        "gemma2": lambda: (hf.Gemma2Config(**_LLAMA_LIKE, head_dim=8), hf.Gemma2ForCausalLM),
        "phi3": lambda: (hf.Phi3Config(**_LLAMA_LIKE, pad_token_id=0), hf.Phi3ForCausalLM),
        "stablelm": lambda: (hf.StableLmConfig(**_LLAMA_LIKE), hf.StableLmForCausalLM),
        "olmo": lambda: (hf.OlmoConfig(**_LLAMA_LIKE, pad_token_id=0), hf.OlmoForCausalLM),
        "granite": lambda: (hf.GraniteConfig(**_LLAMA_LIKE), hf.GraniteForCausalLM),
        "phi": lambda: (hf.PhiConfig(**_LLAMA_LIKE), hf.PhiForCausalLM),
        "gpt2": lambda: (hf.GPT2Config(vocab_size=VOCAB, n_embd=64, n_layer=2, n_head=8, n_positions=64),
                         hf.GPT2LMHeadModel),
        "gpt_neox": lambda: (hf.GPTNeoXConfig(vocab_size=VOCAB, hidden_size=64, num_hidden_layers=2,
                                              num_attention_heads=8, intermediate_size=128,
                                              max_position_embeddings=64), hf.GPTNeoXForCausalLM),
        "opt": lambda: (hf.OPTConfig(vocab_size=VOCAB, hidden_size=64, num_hidden_layers=2, num_attention_heads=8,
                                     ffn_dim=128, max_position_embeddings=64, word_embed_proj_dim=64),
                        hf.OPTForCausalLM),
        "falcon": lambda: (hf.FalconConfig(vocab_size=VOCAB, hidden_size=64, num_hidden_layers=2,
                                           num_attention_heads=8, new_decoder_architecture=True, num_kv_heads=4),
                           hf.FalconForCausalLM),
    }
    return llama_like[family]()


FAMILIES = ("llama", "mistral", "qwen2", "qwen3", "gemma", "gemma2", "phi3", "stablelm", "olmo", "granite",
            "phi", "gpt2", "gpt_neox", "opt", "falcon")


def decoder(family: str, batch: int = 1, seq: int = 8, seed: int = 0) -> tuple[nn.Module, tuple[torch.Tensor, ...]]:
    """A tiny `family` causal LM returning logits, and token ids of shape [batch, seq]."""
    torch.manual_seed(seed)
    config, model_class = _config(family)
    model = LogitsOnly(model_class(config)).eval()
    return model, (torch.randint(0, VOCAB, (batch, seq)),)
