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


def llama31_8b_meta(seq: int = 128, layers: int = 32) -> tuple[nn.Module, tuple[torch.Tensor, ...]]:
    """Llama 3.1 8B on the meta device: every shape, no weight data."""
    from transformers import LlamaForCausalLM

    with torch.device("meta"):
        model = LogitsOnly(LlamaForCausalLM(llama31_8b_config(layers))).to(torch.bfloat16).eval()
    return model, (torch.zeros((1, seq), dtype=torch.int64, device="meta"),)


def export(model: nn.Module, inputs: tuple[torch.Tensor, ...]) -> torch.export.ExportedProgram:
    """torch.export of a model in eval mode, with static shapes."""
    with torch.no_grad():
        return torch.export.export(model, inputs)


SMALL_MODELS = {"mlp": mlp, "cnn": cnn, "tiny_llama": tiny_llama, "tiny_gpt2": tiny_gpt2}
