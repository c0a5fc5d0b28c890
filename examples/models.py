"""Small models for rducc's examples, tests and benchmarks.

Every model is built from a config with a fixed seed (no downloads), so a
test can export it, compile it and compare against PyTorch eager.
"""

from __future__ import annotations

import torch
from torch import nn


class MLP(nn.Module):
    """linear -> relu -> linear -> gelu -> linear."""

    def __init__(self, features: int = 32, hidden: int = 64, classes: int = 10):
        super().__init__()
        self.fc1 = nn.Linear(features, hidden)
        self.fc2 = nn.Linear(hidden, hidden)
        self.fc3 = nn.Linear(hidden, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = torch.relu(self.fc1(x))
        x = nn.functional.gelu(self.fc2(x))
        return self.fc3(x)


class SmallCNN(nn.Module):
    """conv(stride, padding) -> batch_norm -> relu -> max_pool -> conv -> adaptive avg -> linear."""

    def __init__(self, channels: int = 3, classes: int = 10):
        super().__init__()
        self.conv1 = nn.Conv2d(channels, 8, 3, stride=2, padding=1)
        self.bn1 = nn.BatchNorm2d(8)
        self.conv2 = nn.Conv2d(8, 16, 3, padding=1)
        self.bn2 = nn.BatchNorm2d(16)
        self.fc = nn.Linear(16, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = nn.functional.max_pool2d(torch.relu(self.bn1(self.conv1(x))), 2)
        x = torch.relu(self.bn2(self.conv2(x)))
        x = nn.functional.adaptive_avg_pool2d(x, 1)
        return self.fc(torch.flatten(x, 1))


class LogitsOnly(nn.Module):
    """Wraps a Hugging Face causal LM so that forward returns `.logits` only."""

    def __init__(self, model: nn.Module):
        super().__init__()
        self.model = model

    def forward(self, input_ids: torch.Tensor) -> torch.Tensor:
        return self.model(input_ids=input_ids, use_cache=False).logits


def _randomize_norms(model: nn.Module, seed: int) -> None:
    """Give batch-norm statistics non-trivial values so numerics tests mean something."""
    generator = torch.Generator().manual_seed(seed)
    for module in model.modules():
        if isinstance(module, nn.BatchNorm2d):
            shape = module.running_mean.shape
            module.running_mean.copy_(torch.randn(shape, generator=generator) * 0.1)
            module.running_var.copy_(torch.rand(shape, generator=generator) + 0.5)


def mlp(seed: int = 0) -> tuple[nn.Module, tuple[torch.Tensor, ...]]:
    torch.manual_seed(seed)
    return MLP().eval(), (torch.randn(4, 32),)


def cnn(seed: int = 0) -> tuple[nn.Module, tuple[torch.Tensor, ...]]:
    torch.manual_seed(seed)
    model = SmallCNN().eval()
    with torch.no_grad():
        _randomize_norms(model, seed)
    return model, (torch.randn(2, 3, 16, 16),)


def tiny_llama(seed: int = 0, seq: int = 8) -> tuple[nn.Module, tuple[torch.Tensor, ...]]:
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(seed)
    config = LlamaConfig(
        vocab_size=256, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=128,
    )
    model = LogitsOnly(LlamaForCausalLM(config)).eval()
    return model, (torch.randint(0, config.vocab_size, (1, seq)),)


def _tiny_llama8_config(layers: int = 2):
    """tiny_llama's shape with 8 heads and 8 KV heads: splits 8 ways (sn40l-8, tp=8)."""
    from transformers import LlamaConfig

    return LlamaConfig(
        vocab_size=256, hidden_size=128, intermediate_size=256, num_hidden_layers=layers,
        num_attention_heads=8, num_key_value_heads=8, max_position_embeddings=128,
    )


def tiny_llama8(seed: int = 0, seq: int = 8) -> tuple[nn.Module, tuple[torch.Tensor, ...]]:
    """A tiny Llama (HF) whose heads and KV heads divide by 8."""
    from transformers import LlamaForCausalLM

    torch.manual_seed(seed)
    config = _tiny_llama8_config()
    model = LogitsOnly(LlamaForCausalLM(config)).eval()
    return model, (torch.randint(0, config.vocab_size, (1, seq)),)


def tiny_llama8_decode(seed: int = 0, cached: int = 16, layers: int = 2) -> tuple[nn.Module, tuple[torch.Tensor, ...]]:
    """LlamaDecodeStep at tiny_llama8's size (8 heads, 8 KV heads), with a random KV cache."""
    torch.manual_seed(seed)
    config = _tiny_llama8_config(layers)
    return LlamaDecodeStep(config).eval(), decode_step_inputs(config, cached, seed=seed)


def tiny_gpt2(seed: int = 0, seq: int = 8) -> tuple[nn.Module, tuple[torch.Tensor, ...]]:
    from transformers import GPT2Config, GPT2LMHeadModel

    torch.manual_seed(seed)
    config = GPT2Config(
        vocab_size=256, n_positions=64, n_embd=64, n_layer=2, n_head=4,
        bos_token_id=0, eos_token_id=0,
    )
    model = LogitsOnly(GPT2LMHeadModel(config)).eval()
    return model, (torch.randint(0, config.vocab_size, (1, seq)),)


def llama31_8b_config(layers: int = 32):
    """The exact Llama 3.1 8B architecture (bf16), optionally with fewer layers."""
    from transformers import LlamaConfig

    return LlamaConfig(
        vocab_size=128256, hidden_size=4096, intermediate_size=14336,
        num_hidden_layers=layers, num_attention_heads=32, num_key_value_heads=8,
        max_position_embeddings=131072, rms_norm_eps=1e-5, rope_theta=500000.0,
        rope_scaling={
            "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
            "original_max_position_embeddings": 8192, "rope_type": "llama3",
        },
        tie_word_embeddings=False, torch_dtype=torch.bfloat16,
    )


def llama31_70b_config(layers: int = 80):
    """The exact Llama 3.1 70B architecture (bf16), optionally with fewer layers."""
    config = llama31_8b_config(layers)
    config.hidden_size, config.intermediate_size = 8192, 28672
    config.num_attention_heads, config.num_key_value_heads = 64, 8
    return config


def llama31_405b_config(layers: int = 126):
    """The exact Llama 3.1 405B architecture (bf16), optionally with fewer layers."""
    config = llama31_8b_config(layers)
    config.hidden_size, config.intermediate_size = 16384, 53248
    config.num_attention_heads, config.num_key_value_heads = 128, 8
    return config


LLAMA31_CONFIGS = {"8b": llama31_8b_config, "70b": llama31_70b_config, "405b": llama31_405b_config}
"""Llama 3.1 architectures by size, each `config(layers)`."""


def llama31_decode_meta(size: str, cached: int = 4096, layers: int | None = None):
    """A Llama 3.1 decode step (8b, 70b or 405b) on the meta device (bf16), KV cache of `cached`."""
    make = LLAMA31_CONFIGS[size]
    config = make() if layers is None else make(layers)
    with torch.device("meta"):
        model = LlamaDecodeStep(config).to(torch.bfloat16).eval()
    return model, decode_step_inputs(config, cached, device="meta", dtype=torch.bfloat16)


def llama31_8b_meta(seq: int = 128, layers: int = 32) -> tuple[nn.Module, tuple[torch.Tensor, ...]]:
    """Llama 3.1 8B on the meta device: every shape, no weight data."""
    from transformers import LlamaForCausalLM

    with torch.device("meta"):
        model = LogitsOnly(LlamaForCausalLM(llama31_8b_config(layers))).to(torch.bfloat16).eval()
    return model, (torch.zeros((1, seq), dtype=torch.int64, device="meta"),)


class RMSNorm(nn.Module):
    """Llama's RMS norm, computed in f32 and cast back."""

    def __init__(self, hidden: int, eps: float):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(hidden))
        self.eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x32 = x.float()
        x32 = x32 * torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + self.eps)
        return self.weight * x32.to(x.dtype)


def _rotate(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """Rotary embedding of one position (Llama's rotate_half form)."""
    half = x.shape[-1] // 2
    rotated = torch.cat((-x[..., half:], x[..., :half]), dim=-1)
    return x * cos + rotated * sin


class DecodeLayer(nn.Module):
    """One Llama decoder layer for one new token, attending to a KV cache passed in.

    Grouped-query attention without copying the cache: the query's heads are
    grouped per KV head (a reshape, since there is one query position), the
    scores against the cache and against the new key are computed apart and
    softmaxed together. Returns the hidden state and the new key and value
    (the cache update the caller writes back).
    """

    def __init__(self, hidden: int, intermediate: int, heads: int, kv_heads: int, eps: float):
        super().__init__()
        self.heads, self.kv_heads, self.head_dim = heads, kv_heads, hidden // heads
        self.input_layernorm = RMSNorm(hidden, eps)
        self.q_proj = nn.Linear(hidden, heads * self.head_dim, bias=False)
        self.k_proj = nn.Linear(hidden, kv_heads * self.head_dim, bias=False)
        self.v_proj = nn.Linear(hidden, kv_heads * self.head_dim, bias=False)
        self.o_proj = nn.Linear(heads * self.head_dim, hidden, bias=False)
        self.post_attention_layernorm = RMSNorm(hidden, eps)
        self.gate_proj = nn.Linear(hidden, intermediate, bias=False)
        self.up_proj = nn.Linear(hidden, intermediate, bias=False)
        self.down_proj = nn.Linear(intermediate, hidden, bias=False)

    def forward(self, x, cos, sin, k_cache, v_cache):
        kv, group, dim = self.kv_heads, self.heads // self.kv_heads, self.head_dim
        normed = self.input_layernorm(x)  # [1, 1, hidden]
        q = _rotate(self.q_proj(normed).view(1, kv, group, dim), cos, sin)
        k = _rotate(self.k_proj(normed).view(1, kv, 1, dim), cos, sin)
        v = self.v_proj(normed).view(1, kv, 1, dim)
        scale = dim**-0.5
        scores = torch.cat((q @ k_cache.transpose(-1, -2), q @ k.transpose(-1, -2)), dim=-1) * scale
        weights = torch.softmax(scores.float(), dim=-1).to(q.dtype)
        cached = k_cache.shape[-2]
        attended = weights[..., :cached] @ v_cache + weights[..., cached:] @ v  # [1, kv, group, dim]
        x = x + self.o_proj(attended.reshape(1, 1, self.heads * dim))
        normed = self.post_attention_layernorm(x)
        x = x + self.down_proj(nn.functional.silu(self.gate_proj(normed)) * self.up_proj(normed))
        return x, k, v


class LlamaDecodeStep(nn.Module):
    """A Llama decode step: one token, batch 1, with a KV cache of every layer as inputs.

    Inputs: the token id [1, 1], the rotary cos and sin of its position
    [1, 1, 1, head_dim], then each layer's key and value cache
    [1, kv_heads, cached, head_dim]. Outputs: the logits [1, 1, vocab], then
    each layer's new key and value [1, kv_heads, 1, head_dim].
    """

    def __init__(self, config):
        super().__init__()
        hidden, eps = config.hidden_size, config.rms_norm_eps
        self.embed_tokens = nn.Embedding(config.vocab_size, hidden)
        self.layers = nn.ModuleList(
            DecodeLayer(hidden, config.intermediate_size, config.num_attention_heads,
                        config.num_key_value_heads, eps)
            for _ in range(config.num_hidden_layers)
        )
        self.norm = RMSNorm(hidden, eps)
        self.lm_head = nn.Linear(hidden, config.vocab_size, bias=False)

    def forward(self, input_ids, cos, sin, *caches):
        x = self.embed_tokens(input_ids)
        updates = []
        for index, layer in enumerate(self.layers):
            x, k, v = layer(x, cos, sin, caches[2 * index], caches[2 * index + 1])
            updates += [k, v]
        return (self.lm_head(self.norm(x)), *updates)


class StackedCacheDecodeStep(LlamaDecodeStep):
    """LlamaDecodeStep with the KV cache held as two stacked inputs, indexed per layer.

    Inputs: the token id, cos and sin, then the key cache and the value cache,
    each [layers, 1, kv_heads, cached, head_dim]; layer i reads `k_cache[i]`.
    Outputs as LlamaDecodeStep's: the logits, then each layer's new key and value.
    """

    def forward(self, input_ids, cos, sin, k_cache, v_cache):
        x = self.embed_tokens(input_ids)
        updates = []
        for index, layer in enumerate(self.layers):
            x, k, v = layer(x, cos, sin, k_cache[index], v_cache[index])
            updates += [k, v]
        return (self.lm_head(self.norm(x)), *updates)


def stacked_cache_inputs(inputs: tuple[torch.Tensor, ...]) -> tuple[torch.Tensor, ...]:
    """decode_step_inputs with the per-layer caches stacked into a key and a value cache."""
    token, cos, sin, *caches = inputs
    return (token, cos, sin, torch.stack(caches[0::2]), torch.stack(caches[1::2]))


def decode_step_inputs(
    config, cached: int, device: str = "cpu", dtype=torch.float32, seed: int = 0, theta: float = 500000.0
):
    """Inputs of LlamaDecodeStep: token, rotary cos/sin at position `cached` (plain
    RoPE of base `theta`), and the caches (random, or empty on the meta device)."""
    generator = torch.Generator().manual_seed(seed)
    dim = config.hidden_size // config.num_attention_heads
    inverse = 1.0 / (theta ** (torch.arange(0, dim, 2, dtype=torch.float32) / dim))
    angles = torch.cat((cached * inverse, cached * inverse)).view(1, 1, 1, dim)
    shape = (1, config.num_key_value_heads, cached, dim)
    if device == "meta":
        caches = [torch.empty(shape, dtype=dtype, device="meta") for _ in range(2 * config.num_hidden_layers)]
        token = torch.zeros((1, 1), dtype=torch.int64, device="meta")
    else:
        caches = [torch.randn(shape, generator=generator).to(dtype) for _ in range(2 * config.num_hidden_layers)]
        token = torch.randint(0, config.vocab_size, (1, 1), generator=generator)
    return (token, angles.cos().to(dtype).to(device), angles.sin().to(dtype).to(device), *caches)


def tiny_llama_decode(seed: int = 0, cached: int = 16) -> tuple[nn.Module, tuple[torch.Tensor, ...]]:
    """LlamaDecodeStep at tiny_llama's size, with `cached` positions of random KV cache."""
    from transformers import LlamaConfig

    torch.manual_seed(seed)
    config = LlamaConfig(
        vocab_size=256, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2,
    )
    return LlamaDecodeStep(config).eval(), decode_step_inputs(config, cached, seed=seed)


def llama31_8b_decode_meta(cached: int = 4096, layers: int = 32) -> tuple[nn.Module, tuple[torch.Tensor, ...]]:
    """Llama 3.1 8B's decode step on the meta device (bf16), with a KV cache of `cached` positions."""
    config = llama31_8b_config(layers)
    with torch.device("meta"):
        model = LlamaDecodeStep(config).to(torch.bfloat16).eval()
    return model, decode_step_inputs(config, cached, device="meta", dtype=torch.bfloat16)


def tiny_llama_decode_stacked(seed: int = 0, cached: int = 16, layers: int = 2):
    """StackedCacheDecodeStep at tiny_llama's size, with `cached` positions of random KV cache."""
    from transformers import LlamaConfig

    torch.manual_seed(seed)
    config = LlamaConfig(
        vocab_size=256, hidden_size=64, intermediate_size=128, num_hidden_layers=layers,
        num_attention_heads=4, num_key_value_heads=2,
    )
    return StackedCacheDecodeStep(config).eval(), stacked_cache_inputs(decode_step_inputs(config, cached, seed=seed))


def llama31_8b_decode_stacked_meta(cached: int = 4096, layers: int = 32):
    """StackedCacheDecodeStep of Llama 3.1 8B on the meta device (bf16), KV cache of `cached` positions."""
    config = llama31_8b_config(layers)
    with torch.device("meta"):
        model = StackedCacheDecodeStep(config).to(torch.bfloat16).eval()
    return model, stacked_cache_inputs(decode_step_inputs(config, cached, device="meta", dtype=torch.bfloat16))


def llama31_8b_static_cache_meta(cached: int = 4096, layers: int = 32):
    """transformers' own Llama 3.1 8B decode step with its static KV cache (bf16, meta
    device, batch 1, `cached` positions), exported by torch.export: the wrapper and
    the program, whose caches are buffers it updates in place (`index_copy_`)."""
    from transformers import LlamaForCausalLM
    from transformers.integrations.executorch import TorchExportableModuleWithStaticCache

    with torch.device("meta"):
        model = LlamaForCausalLM(llama31_8b_config(layers)).to(torch.bfloat16).eval()
    model.generation_config.use_cache = True
    model.generation_config.cache_implementation = "static"
    wrapper = TorchExportableModuleWithStaticCache(model, batch_size=1, max_cache_len=cached)
    example = {"input_ids": torch.zeros(1, 1, dtype=torch.long, device="meta"),
               "cache_position": torch.tensor([0], device="meta")}
    with torch.no_grad():
        return wrapper, torch.export.export(wrapper, (), example, strict=True)


def export(model: nn.Module, inputs: tuple[torch.Tensor, ...]) -> torch.export.ExportedProgram:
    """torch.export of a model in eval mode, with static shapes."""
    with torch.no_grad():
        return torch.export.export(model, inputs)


SMALL_MODELS = {
    "mlp": mlp, "cnn": cnn, "tiny_llama": tiny_llama, "tiny_gpt2": tiny_gpt2,
    "tiny_llama_decode": tiny_llama_decode,
}
