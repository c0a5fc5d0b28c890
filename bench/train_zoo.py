"""Training breadth: a zoo of model families trained a few steps through
`rducc.compile_training` and through `torch.compile(backend="rducc")`
(forward and backward by rducc, torch.optim in eager), each against eager
PyTorch on a copy with the same optimizer and batches.

Per model and path: whether it compiles, the largest relative loss
difference over the steps, and the smallest rtol (with atol 1e-5) at which
every parameter (and buffer, as batch norm's running statistics) after the
last step matches eager's. Small configs, random init, no downloads;
dropout is p=0 (a random mask is checked as a distribution by the tests).

Run: python bench/train_zoo.py [--steps 3] [--optimizer adamw|sgd] [--opt-level 0]
                               [--mixed-precision bf16] [--dp 2 | --tp 2]
                               [--only NAME ...] [--path rducc|dynamo|both]

Under --mixed-precision the reference is eager under CPU autocast, and the
row notes how far eager autocast's own losses are from float32 eager's (the
budget the issue sets).
"""

from __future__ import annotations

import argparse
import copy
import time
import traceback
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import torch  # noqa: E402
from common import Section
from torch import nn  # noqa: E402

import rducc

PARAM_ATOL = 1e-5


@dataclass
class Settings:
    """How every model is trained: steps, optimizer, -O, precision, the split on sn40l-8."""

    steps: int = 3
    optimizer: str = "adamw"
    opt_level: int = 0
    mixed_precision: str | None = None
    dp: int = 0
    tp: int = 0

    def compile_options(self) -> dict[str, Any]:
        options: dict[str, Any] = {"opt_level": self.opt_level}
        if self.mixed_precision:
            options["mixed_precision"] = self.mixed_precision
        if self.dp or self.tp:
            from rducc.api import after
            from rducc.passes.rdu_partition import RduPartition
            options["target"] = "sn40l-8"
            options["passes"] = [after("rdu-canonicalize", RduPartition(dp=self.dp, tp=self.tp))]
        return options


def _ids(vocab: int, shape: tuple[int, ...] = (2, 8), seed: int = 1) -> torch.Tensor:
    return torch.randint(0, vocab, shape, generator=torch.Generator().manual_seed(seed))


def _pixels(shape: tuple[int, ...], seed: int = 2) -> torch.Tensor:
    return torch.randn(shape, generator=torch.Generator().manual_seed(seed))


def _no_dropout(model: nn.Module) -> nn.Module:
    for module in model.modules():
        if isinstance(module, nn.Dropout):
            module.p = 0.0
    return model


# ---- transformers families (tiny configs, labels= gives the loss) ----

def _bert():
    from transformers import BertConfig, BertForMaskedLM
    config = BertConfig(vocab_size=64, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                        intermediate_size=64, max_position_embeddings=32, hidden_dropout_prob=0.0,
                        attention_probs_dropout_prob=0.0)
    ids = _ids(64)
    labels = ids.clone()
    labels[:, ::3] = -100
    return BertForMaskedLM(config), {"input_ids": ids, "labels": labels}


def _roberta():
    from transformers import RobertaConfig, RobertaForSequenceClassification
    config = RobertaConfig(vocab_size=64, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                           intermediate_size=64, max_position_embeddings=40, hidden_dropout_prob=0.0,
                           attention_probs_dropout_prob=0.0, num_labels=3, pad_token_id=1)
    ids = _ids(64)
    ids[ids == 1] = 2
    return RobertaForSequenceClassification(config), {"input_ids": ids, "labels": torch.tensor([0, 2])}


def _t5():
    from transformers import T5Config, T5ForConditionalGeneration
    config = T5Config(vocab_size=64, d_model=32, d_kv=8, d_ff=64, num_layers=2, num_decoder_layers=2,
                      num_heads=4, relative_attention_num_buckets=8, dropout_rate=0.0,
                      decoder_start_token_id=0, pad_token_id=0)
    return T5ForConditionalGeneration(config), {"input_ids": _ids(64), "labels": _ids(64, (2, 6), seed=3)}


def _bart():
    from transformers import BartConfig, BartForConditionalGeneration
    config = BartConfig(vocab_size=64, d_model=32, encoder_layers=2, decoder_layers=2, encoder_attention_heads=4,
                        decoder_attention_heads=4, encoder_ffn_dim=64, decoder_ffn_dim=64,
                        max_position_embeddings=32, dropout=0.0, attention_dropout=0.0, activation_dropout=0.0,
                        pad_token_id=1, bos_token_id=0, eos_token_id=2, decoder_start_token_id=2)
    ids = _ids(64)
    ids[ids == 1] = 3
    labels = _ids(64, (2, 6), seed=3)
    labels[labels == 1] = 3
    return BartForConditionalGeneration(config), {"input_ids": ids, "labels": labels}


def _causal(config_class: str, model_class: str, **options: Any):
    import transformers
    config = getattr(transformers, config_class)(vocab_size=64, hidden_size=32, intermediate_size=64,
                                                 num_hidden_layers=2, num_attention_heads=4,
                                                 max_position_embeddings=32, **options)
    ids = _ids(64)
    return getattr(transformers, model_class)(config), {"input_ids": ids, "labels": ids}


def _gpt2_config(layers: int = 2):
    from transformers import GPT2Config
    return GPT2Config(vocab_size=64, n_embd=32, n_layer=layers, n_head=4, n_positions=32, resid_pdrop=0.0,
                      embd_pdrop=0.0, attn_pdrop=0.0, bos_token_id=0, eos_token_id=0)


def _gpt2_labels():
    """GPT-2 given labels= (its Conv1D flattens the merged heads with a view)."""
    from transformers import GPT2LMHeadModel
    ids = _ids(64)
    labels = ids.clone()
    labels[:, :2] = -100
    return GPT2LMHeadModel(_gpt2_config()), {"input_ids": ids, "labels": labels}


def _gpt2_tuple():
    """GPT-2 with return_dict=False: (loss, logits, ...) in a tuple, a bool keyword input."""
    from transformers import GPT2LMHeadModel
    ids = _ids(64)
    return GPT2LMHeadModel(_gpt2_config(1)), {"input_ids": ids, "labels": ids, "return_dict": False}


def _mistral():
    return _causal("MistralConfig", "MistralForCausalLM", num_key_value_heads=2)


def _qwen2():
    return _causal("Qwen2Config", "Qwen2ForCausalLM", num_key_value_heads=2)


def _gemma2():
    return _causal("Gemma2Config", "Gemma2ForCausalLM", num_key_value_heads=2, head_dim=8,
                   sliding_window=4, attn_implementation="eager")


def _phi3():
    return _causal("Phi3Config", "Phi3ForCausalLM", num_key_value_heads=2, pad_token_id=0)


def _gpt_neox():
    return _causal("GPTNeoXConfig", "GPTNeoXForCausalLM", hidden_dropout=0.0, attention_dropout=0.0)


def _gpt_bigcode():
    from transformers import GPTBigCodeConfig, GPTBigCodeForCausalLM
    config = GPTBigCodeConfig(vocab_size=64, n_positions=32, n_embd=32, n_layer=2, n_head=4, resid_pdrop=0.0,
                              embd_pdrop=0.0, attn_pdrop=0.0, multi_query=True)
    ids = _ids(64)
    return GPTBigCodeForCausalLM(config), {"input_ids": ids, "labels": ids}


def _opt():
    from transformers import OPTConfig, OPTForCausalLM
    config = OPTConfig(vocab_size=64, hidden_size=32, ffn_dim=64, num_hidden_layers=2, num_attention_heads=4,
                       max_position_embeddings=32, word_embed_proj_dim=32, dropout=0.0, attention_dropout=0.0,
                       pad_token_id=1)
    ids = _ids(64)
    ids[ids == 1] = 3
    return OPTForCausalLM(config), {"input_ids": ids, "labels": ids}


def _mixtral():
    return _causal("MixtralConfig", "MixtralForCausalLM", num_key_value_heads=2, num_local_experts=4,
                   num_experts_per_tok=2)


def _qwen2_moe():
    return _causal("Qwen2MoeConfig", "Qwen2MoeForCausalLM", num_key_value_heads=2, num_experts=4,
                   num_experts_per_tok=2, moe_intermediate_size=32, shared_expert_intermediate_size=32)


def _whisper():
    from transformers import WhisperConfig, WhisperForConditionalGeneration
    config = WhisperConfig(vocab_size=64, num_mel_bins=8, d_model=32, encoder_layers=2, decoder_layers=2,
                           encoder_attention_heads=4, decoder_attention_heads=4, encoder_ffn_dim=64,
                           decoder_ffn_dim=64, max_source_positions=8, max_target_positions=16,
                           pad_token_id=0, bos_token_id=1, eos_token_id=2, decoder_start_token_id=1,
                           dropout=0.0, attention_dropout=0.0, activation_dropout=0.0)
    return WhisperForConditionalGeneration(config), {"input_features": _pixels((2, 8, 16)),
                                                     "labels": _ids(64, (2, 6), seed=3)}


class _ClipVisionClassifier(nn.Module):
    """CLIP's vision tower (transformers' CLIPVisionModel) with a linear head and cross_entropy."""

    def __init__(self) -> None:
        super().__init__()
        from transformers import CLIPVisionConfig, CLIPVisionModel
        config = CLIPVisionConfig(image_size=16, patch_size=4, hidden_size=32, intermediate_size=64,
                                  num_hidden_layers=2, num_attention_heads=4)
        self.tower = CLIPVisionModel(config)
        self.head = nn.Linear(32, 5)

    def forward(self, pixel_values: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        pooled = self.tower(pixel_values=pixel_values).pooler_output
        return nn.functional.cross_entropy(self.head(pooled), labels)


def _clip_vision():
    return _ClipVisionClassifier(), {"pixel_values": _pixels((2, 3, 16, 16)), "labels": torch.tensor([1, 4])}


def _swin():
    from transformers import SwinConfig, SwinForImageClassification
    config = SwinConfig(image_size=16, patch_size=2, num_channels=3, embed_dim=16, depths=[1, 1], num_heads=[2, 2],
                        window_size=4, mlp_ratio=2.0, hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0,
                        drop_path_rate=0.0, num_labels=5)
    return SwinForImageClassification(config), {"pixel_values": _pixels((2, 3, 16, 16)),
                                                 "labels": torch.tensor([1, 4])}


def _convnext():
    from transformers import ConvNextConfig, ConvNextForImageClassification
    config = ConvNextConfig(num_channels=3, num_stages=2, hidden_sizes=[8, 16], depths=[1, 1], patch_size=2,
                            image_size=16, num_labels=5, drop_path_rate=0.0)
    return ConvNextForImageClassification(config), {"pixel_values": _pixels((2, 3, 16, 16)),
                                                    "labels": torch.tensor([1, 4])}


def _resnet():
    from transformers import ResNetConfig, ResNetForImageClassification
    config = ResNetConfig(num_channels=3, embedding_size=8, hidden_sizes=[8, 16], depths=[1, 1],
                          layer_type="basic", num_labels=5)
    return ResNetForImageClassification(config), {"pixel_values": _pixels((2, 3, 16, 16)),
                                                  "labels": torch.tensor([1, 4])}


def _vit():
    from transformers import ViTConfig, ViTForImageClassification
    config = ViTConfig(image_size=16, patch_size=4, num_channels=3, hidden_size=32, num_hidden_layers=2,
                       num_attention_heads=4, intermediate_size=64, num_labels=5, hidden_dropout_prob=0.0,
                       attention_probs_dropout_prob=0.0)
    return ViTForImageClassification(config), {"pixel_values": _pixels((2, 3, 16, 16)),
                                               "labels": torch.tensor([1, 4])}


def _deit():
    from transformers import DeiTConfig, DeiTForImageClassification
    config = DeiTConfig(image_size=16, patch_size=4, num_channels=3, hidden_size=32, num_hidden_layers=2,
                        num_attention_heads=4, intermediate_size=64, num_labels=5, hidden_dropout_prob=0.0,
                        attention_probs_dropout_prob=0.0)
    return DeiTForImageClassification(config), {"pixel_values": _pixels((2, 3, 16, 16)),
                                                "labels": torch.tensor([1, 4])}


def _unet2d():
    from diffusers import UNet2DModel

    class Denoise(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.unet = UNet2DModel(sample_size=8, in_channels=3, out_channels=3, layers_per_block=1,
                                    block_out_channels=(8, 16), norm_num_groups=4,
                                    down_block_types=("DownBlock2D", "DownBlock2D"),
                                    up_block_types=("UpBlock2D", "UpBlock2D"))

        def forward(self, sample: torch.Tensor, timestep: torch.Tensor, noise: torch.Tensor) -> torch.Tensor:
            return nn.functional.mse_loss(self.unet(sample, timestep).sample, noise)  # type: ignore[operator]

    return Denoise(), {"sample": _pixels((2, 3, 8, 8)), "timestep": torch.tensor([3, 7]),
                       "noise": _pixels((2, 3, 8, 8), seed=5)}


# ---- hand-written models ----

class _BatchNormCNN(nn.Module):
    """Conv, BatchNorm (train mode: batch statistics, running statistics updated), ReLU, dropout, pooling."""

    def __init__(self) -> None:
        super().__init__()
        self.features = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(), nn.Dropout(0.0),
                                      nn.MaxPool2d(2), nn.Conv2d(8, 16, 3, padding=1, bias=False),
                                      nn.BatchNorm2d(16), nn.SiLU(), nn.AdaptiveAvgPool2d(1))
        self.head = nn.Linear(16, 5)

    def forward(self, x: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        return nn.functional.cross_entropy(self.head(self.features(x).flatten(1)), labels)


def _bn_cnn():
    return _BatchNormCNN(), {"x": _pixels((4, 3, 8, 8)), "labels": torch.tensor([0, 1, 2, 4])}


class _Recurrent(nn.Module):
    def __init__(self, kind: type[nn.Module]) -> None:
        super().__init__()
        self.embed = nn.Embedding(32, 16)
        self.rnn = kind(16, 24, batch_first=True)
        self.head = nn.Linear(24, 32)

    def forward(self, ids: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        hidden, _ = self.rnn(self.embed(ids))
        return nn.functional.cross_entropy(self.head(hidden).flatten(0, 1), labels.flatten())


def _lstm():
    return _Recurrent(nn.LSTM), {"ids": _ids(32, (2, 6)), "labels": _ids(32, (2, 6), seed=4)}


def _gru():
    return _Recurrent(nn.GRU), {"ids": _ids(32, (2, 6)), "labels": _ids(32, (2, 6), seed=4)}


class _Tied(nn.Module):
    """An embedding and an output projection sharing one weight, with a norm between."""

    def __init__(self) -> None:
        super().__init__()
        self.embed = nn.Embedding(40, 16)
        self.norm = nn.LayerNorm(16)
        self.mix = nn.Linear(16, 16)
        self.out = nn.Linear(16, 40, bias=False)
        self.out.weight = self.embed.weight

    def forward(self, ids: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        hidden = torch.tanh(self.mix(self.norm(self.embed(ids))))
        return nn.functional.cross_entropy(self.out(hidden).flatten(0, 1), labels.flatten())


def _tied():
    return _Tied(), {"ids": _ids(40, (2, 6)), "labels": _ids(40, (2, 6), seed=4)}


class _Widths(nn.Module):
    """A stack whose widths change, with a different activation after each layer."""

    def __init__(self) -> None:
        super().__init__()
        self.layers = nn.Sequential(nn.Linear(64, 128), nn.GELU(), nn.Linear(128, 32), nn.SiLU(),
                                    nn.Linear(32, 48), nn.Tanh(), nn.Linear(48, 10), nn.LeakyReLU(0.1))

    def forward(self, x: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        return nn.functional.cross_entropy(self.layers(x), labels)


def _widths():
    return _Widths(), {"x": _pixels((4, 64)), "labels": torch.tensor([0, 3, 9, 5])}


def _frozen():
    model = _Widths()
    model.layers[0].requires_grad_(False)
    model.layers[4].bias.requires_grad_(False)
    return model, {"x": _pixels((4, 64)), "labels": torch.tensor([0, 3, 9, 5])}


class _LoRA(nn.Module):
    """A frozen embedding and frozen base projections with trained low-rank adapters and head."""

    def __init__(self) -> None:
        super().__init__()
        self.embed = nn.Embedding(40, 32)
        self.base = nn.ModuleList(nn.Linear(32, 32) for _ in range(2))
        self.down = nn.ModuleList(nn.Linear(32, 4, bias=False) for _ in range(2))
        self.up = nn.ModuleList(nn.Linear(4, 32, bias=False) for _ in range(2))
        self.head = nn.Linear(32, 40)
        self.embed.requires_grad_(False)
        self.base.requires_grad_(False)
        for up in self.up:
            nn.init.normal_(up.weight, std=0.1)  # (LoRA starts it at zero; random here so every adapter trains)

    def forward(self, ids: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        hidden = self.embed(ids)
        for base, down, up in zip(self.base, self.down, self.up):
            hidden = torch.relu(base(hidden) + 2.0 * up(down(hidden)))
        return nn.functional.cross_entropy(self.head(hidden).flatten(0, 1), labels.flatten(),
                                           ignore_index=-100, label_smoothing=0.1)


def _lora():
    labels = _ids(40, (2, 6), seed=4)
    labels[0, :2] = -100
    return _LoRA(), {"ids": _ids(40, (2, 6)), "labels": labels}


class _TwoHeads(nn.Module):
    """A shared trunk called twice, a class head and a regression head; returns (loss, logits)."""

    def __init__(self) -> None:
        super().__init__()
        self.trunk = nn.Linear(16, 16)
        self.classes = nn.Linear(16, 4)
        self.value = nn.Linear(16, 1)

    def forward(self, x: torch.Tensor, labels: torch.Tensor, target: torch.Tensor) -> tuple[torch.Tensor, ...]:
        hidden = torch.tanh(self.trunk(torch.tanh(self.trunk(x))))
        logits = self.classes(hidden)
        loss = (nn.functional.cross_entropy(logits, labels, reduction="sum")
                + nn.functional.smooth_l1_loss(self.value(hidden).squeeze(-1), target))
        return loss, logits


def _two_heads():
    return _TwoHeads(), {"x": _pixels((4, 16)), "labels": torch.tensor([0, 3, 1, 2]), "target": _pixels((4,), seed=6)}


def _damped_sgd(model: nn.Module, name: str) -> torch.optim.Optimizer:
    """SGD with momentum and dampening (whatever --optimizer says): torch.optim's first step is undamped."""
    del name
    return torch.optim.SGD([p for p in model.parameters() if p.requires_grad], lr=0.05, momentum=0.9,
                           dampening=0.5, weight_decay=1e-4)


def _param_groups_adamw(model: nn.Module) -> torch.optim.Optimizer:
    """AdamW with no decay on norms and biases, as users configure it."""
    decay: list[nn.Parameter] = []
    plain: list[nn.Parameter] = []
    for name, parameter in model.named_parameters():
        if parameter.requires_grad:
            (plain if parameter.ndim < 2 or "norm" in name.lower() else decay).append(parameter)
    return torch.optim.AdamW([{"params": decay, "weight_decay": 0.1}, {"params": plain, "weight_decay": 0.0}],
                             lr=1e-3)


def _param_groups_sgd(model: nn.Module) -> torch.optim.Optimizer:
    decay: list[nn.Parameter] = []
    plain: list[nn.Parameter] = []
    for name, parameter in model.named_parameters():
        if parameter.requires_grad:
            (plain if parameter.ndim < 2 or "norm" in name.lower() else decay).append(parameter)
    return torch.optim.SGD([{"params": decay, "weight_decay": 1e-2}, {"params": plain, "lr": 0.02}],
                           lr=0.05, momentum=0.9)


def _groups_llama():
    return _causal("LlamaConfig", "LlamaForCausalLM", num_key_value_heads=2)


# ---- held-out forms, third round (issue 27): torch's own layers, other losses, optimizer options ----

class _TorchEncoder(nn.Module):
    """torch's own nn.TransformerEncoder (nn.MultiheadAttention, pre-norm, GELU) with
    a key padding mask, mean pooling over the unmasked tokens and a class head."""

    def __init__(self) -> None:
        super().__init__()
        self.embed = nn.Embedding(30, 32, padding_idx=0)
        layer = nn.TransformerEncoderLayer(32, 4, 64, dropout=0.0, activation="gelu", batch_first=True,
                                           norm_first=True)
        self.encoder = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)
        self.head = nn.Linear(32, 3)

    def forward(self, ids: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        padding = ids == 0
        hidden = self.encoder(self.embed(ids), src_key_padding_mask=padding)
        keep = (~padding).unsqueeze(-1).to(hidden.dtype)
        pooled = (hidden * keep).sum(1) / keep.sum(1)
        return nn.functional.cross_entropy(self.head(pooled), labels)


def _torch_encoder():
    ids = _ids(30, (2, 7))
    ids[ids == 0] = 1
    ids[0, 5:] = 0  # padding
    return _TorchEncoder(), {"ids": ids, "labels": torch.tensor([2, 0])}


class _AutoEncoder(nn.Module):
    """Strided convolutions with GroupNorm down, ConvTranspose2d up, a sigmoid, MSE with reduction='sum'."""

    def __init__(self) -> None:
        super().__init__()
        self.down = nn.Sequential(nn.Conv2d(3, 8, 3, stride=2, padding=1), nn.GroupNorm(2, 8), nn.Mish(),
                                  nn.Conv2d(8, 16, 3, stride=2, padding=1), nn.ELU())
        self.up = nn.Sequential(nn.ConvTranspose2d(16, 8, 4, stride=2, padding=1), nn.ReLU6(),
                                nn.ConvTranspose2d(8, 3, 4, stride=2, padding=1), nn.Sigmoid())

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return nn.functional.mse_loss(self.up(self.down(x)), torch.sigmoid(x), reduction="sum")


def _autoencoder():
    return _AutoEncoder(), {"x": _pixels((2, 3, 8, 8))}


class _Depthwise(nn.Module):
    """A depthwise-separable block (groups = channels), InstanceNorm with affine weights,
    Hardswish, average pooling; multi-label BCEWithLogits with a pos_weight."""

    def __init__(self) -> None:
        super().__init__()
        self.stem = nn.Conv2d(3, 12, 3, padding=1)
        self.depthwise = nn.Conv2d(12, 12, 3, padding=1, groups=12)
        self.pointwise = nn.Conv2d(12, 16, 1)
        self.norm = nn.InstanceNorm2d(16, affine=True)
        self.head = nn.Linear(16, 6)
        self.register_buffer("pos_weight", torch.linspace(0.5, 3.0, 6))

    def forward(self, x: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        hidden = nn.functional.hardswish(self.norm(self.pointwise(self.depthwise(torch.relu(self.stem(x))))))
        pooled = nn.functional.avg_pool2d(hidden, 2).mean((2, 3))
        return nn.functional.binary_cross_entropy_with_logits(self.head(pooled), targets, pos_weight=self.pos_weight)


def _depthwise():
    targets = (_pixels((3, 6), seed=7) > 0).float()
    return _Depthwise(), {"x": _pixels((3, 3, 8, 8)), "targets": targets}


class _Contrastive(nn.Module):
    """CLIP-style: two towers (RMSNorm, PReLU), normalized embeddings, a learned
    temperature (a scalar parameter, exp'd), the symmetric InfoNCE loss."""

    def __init__(self) -> None:
        super().__init__()
        self.image = nn.Sequential(nn.Linear(20, 32), nn.PReLU(), nn.RMSNorm(32), nn.Linear(32, 16))
        self.text = nn.Sequential(nn.Embedding(25, 16), nn.Flatten(), nn.Linear(64, 16))
        self.logit_scale = nn.Parameter(torch.tensor(2.0))

    def forward(self, images: torch.Tensor, ids: torch.Tensor) -> torch.Tensor:
        a = nn.functional.normalize(self.image(images), dim=-1)
        b = nn.functional.normalize(self.text(ids), dim=-1)
        logits = self.logit_scale.exp() * a @ b.t()
        labels = torch.arange(logits.shape[0])
        return (nn.functional.cross_entropy(logits, labels) + nn.functional.cross_entropy(logits.t(), labels)) / 2


def _contrastive():
    return _Contrastive(), {"images": _pixels((4, 20)), "ids": _ids(25, (4, 4))}


class _WeightedTokens(nn.Module):
    """Token classification: cross entropy with class weights, ignore_index and label
    smoothing together (the weighted mean over the tokens not ignored), plus a KL
    divergence to a target distribution (log_target)."""

    def __init__(self) -> None:
        super().__init__()
        self.embed = nn.Embedding(20, 24)
        self.mix = nn.Conv1d(24, 24, 3, padding=1)
        self.head = nn.Linear(24, 5)
        self.register_buffer("weights", torch.tensor([0.2, 1.0, 2.0, 0.7, 1.5]))

    def forward(self, ids: torch.Tensor, labels: torch.Tensor, prior: torch.Tensor) -> torch.Tensor:
        hidden = torch.nn.functional.silu(self.mix(self.embed(ids).transpose(1, 2))).transpose(1, 2)
        logits = self.head(hidden)
        tokens = nn.functional.cross_entropy(logits.flatten(0, 1), labels.flatten(), weight=self.weights,
                                             ignore_index=-1, label_smoothing=0.05)
        kl = nn.functional.kl_div(logits.log_softmax(-1), prior, reduction="batchmean", log_target=True)
        return tokens + 0.1 * kl


def _weighted_tokens():
    labels = _ids(5, (2, 6), seed=4)
    labels[1, 4:] = -1
    prior = torch.randn(2, 6, 5, generator=torch.Generator().manual_seed(8)).log_softmax(-1)
    return _WeightedTokens(), {"ids": _ids(20, (2, 6)), "labels": labels, "prior": prior}


class _BilinearHuber(nn.Module):
    """nn.Bilinear of two inputs, Softplus, LayerNorm without affine weights; Huber loss summed."""

    def __init__(self) -> None:
        super().__init__()
        self.pair = nn.Bilinear(8, 6, 12)
        self.norm = nn.LayerNorm(12, elementwise_affine=False)
        self.out = nn.Linear(12, 2)

    def forward(self, a: torch.Tensor, b: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        hidden = self.norm(nn.functional.softplus(self.pair(a, b)))
        return nn.functional.huber_loss(self.out(hidden), target, reduction="sum", delta=0.5)


def _bilinear_huber():
    return _BilinearHuber(), {"a": _pixels((5, 8)), "b": _pixels((5, 6), seed=3), "target": _pixels((5, 2), seed=4)}


class _FrozenNorms(nn.Module):
    """Fine-tuning with frozen batch norms: the norms in eval() (running statistics
    used, not updated) and their affine weights not trained, inside a model in train()."""

    def __init__(self) -> None:
        super().__init__()
        self.body = _BatchNormCNN()

    def train(self, mode: bool = True) -> _FrozenNorms:
        super().train(mode)
        for module in self.modules():
            if isinstance(module, nn.BatchNorm2d):
                module.eval()
                module.requires_grad_(False)
        return self

    def forward(self, x: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        return self.body(x, labels)


def _frozen_norms():
    model = _FrozenNorms()
    with torch.no_grad():
        for module in model.modules():
            if isinstance(module, nn.BatchNorm2d):
                module.running_mean.uniform_(-0.2, 0.2)
                module.running_var.uniform_(0.5, 1.5)
    return model, {"x": _pixels((4, 3, 8, 8)), "labels": torch.tensor([0, 1, 2, 4])}


def _adam_amsgrad(model: nn.Module, name: str) -> torch.optim.Optimizer:
    """torch.optim.Adam (L2 weight decay coupled into the gradient) with amsgrad, whatever --optimizer says."""
    del name
    return torch.optim.Adam([p for p in model.parameters() if p.requires_grad], lr=2e-3, betas=(0.8, 0.95),
                            eps=1e-6, weight_decay=1e-2, amsgrad=True)


def _nesterov(model: nn.Module, name: str) -> torch.optim.Optimizer:
    """SGD with Nesterov momentum and weight decay, whatever --optimizer says."""
    del name
    return torch.optim.SGD([p for p in model.parameters() if p.requires_grad], lr=0.03, momentum=0.8,
                           nesterov=True, weight_decay=1e-3)


@dataclass
class Entry:
    make: Callable[[], tuple[nn.Module, dict[str, Any]]]
    optimizer: Callable[[nn.Module, str], torch.optim.Optimizer] | None = None
    """The optimizer (default: --optimizer over the trainable parameters)."""
    clip: float | None = None
    """clip_grad_norm_ before each update."""
    recurrent: bool = False
    """nn.LSTM / nn.GRU: Dynamo traces them only with `torch._dynamo.config.allow_rnn` (its default
    False runs the whole forward in eager, with no warning)."""


def default_optimizer(model: nn.Module, name: str) -> torch.optim.Optimizer:
    parameters = [p for p in model.parameters() if p.requires_grad]
    if name == "sgd":
        return torch.optim.SGD(parameters, lr=0.05, momentum=0.9, weight_decay=1e-4)
    return torch.optim.AdamW(parameters, lr=1e-3, weight_decay=0.1)


def _groups(model: nn.Module, name: str) -> torch.optim.Optimizer:
    return _param_groups_sgd(model) if name == "sgd" else _param_groups_adamw(model)


ZOO: dict[str, Entry] = {
    "bert-mlm": Entry(_bert), "roberta-cls": Entry(_roberta), "t5": Entry(_t5), "bart": Entry(_bart),
    "mistral": Entry(_mistral), "qwen2": Entry(_qwen2), "gemma2": Entry(_gemma2), "phi3": Entry(_phi3),
    "gpt-neox": Entry(_gpt_neox), "gpt-bigcode": Entry(_gpt_bigcode), "opt": Entry(_opt),
    "mixtral": Entry(_mixtral), "qwen2-moe": Entry(_qwen2_moe), "whisper": Entry(_whisper),
    "clip-vision": Entry(_clip_vision), "swin": Entry(_swin), "convnext": Entry(_convnext),
    "resnet": Entry(_resnet), "vit": Entry(_vit), "deit": Entry(_deit), "unet2d (diffusers)": Entry(_unet2d),
    "cnn+batchnorm+dropout": Entry(_bn_cnn), "lstm": Entry(_lstm, recurrent=True), "gru": Entry(_gru, recurrent=True),
    "tied weights": Entry(_tied), "widths 64-128-32-48-10": Entry(_widths), "frozen layers": Entry(_frozen),
    "param groups (llama)": Entry(_groups_llama, optimizer=_groups),
    "clip_grad_norm_ (mlp)": Entry(_widths, clip=1.0),
    "gpt2 (labels=)": Entry(_gpt2_labels), "gpt2 (return_dict=False)": Entry(_gpt2_tuple),
    "lora (frozen base)": Entry(_lora), "(loss, logits), shared trunk": Entry(_two_heads),
    "sgd dampening (cnn+batchnorm)": Entry(_bn_cnn, optimizer=_damped_sgd),
    "nn.TransformerEncoder (padding mask)": Entry(_torch_encoder),
    "conv autoencoder (mse sum)": Entry(_autoencoder),
    "depthwise+instancenorm (bce pos_weight)": Entry(_depthwise),
    "contrastive (learned temperature)": Entry(_contrastive),
    "weighted ce+ignore+smoothing, kl": Entry(_weighted_tokens),
    "bilinear (huber sum)": Entry(_bilinear_huber),
    "frozen batch norms (eval)": Entry(_frozen_norms),
    "adam amsgrad (widths)": Entry(_widths, optimizer=_adam_amsgrad),
    "sgd nesterov (torch encoder)": Entry(_torch_encoder, optimizer=_nesterov),
}


def _loss_of(output: Any) -> torch.Tensor:
    if isinstance(output, Mapping):
        return output["loss"]
    if hasattr(output, "loss"):
        return output.loss
    if isinstance(output, tuple | list):  # (loss, logits, ...)
        return output[0]
    return output


@dataclass
class Result:
    losses: list[float]
    state: dict[str, torch.Tensor]
    fallbacks: int = 0
    noise: dict[str, torch.Tensor] | None = None
    """Under Adam: the elements whose exact gradient float32 cannot resolve (see noise_elements)."""


def noise_elements(model: nn.Module, inputs: dict, make: Callable[[nn.Module], torch.optim.Optimizer],
                   steps: int, clip: float | None) -> dict[str, torch.Tensor]:
    """The elements, by parameter, whose exact gradient's RMS (Adam's exp_avg_sq, from the same
    training in float64) is below Adam's eps: their float32 gradient is rounding noise in eager
    and in rducc alike (a key bias under softmax), which Adam turns into full steps, so eager's
    float32 value is no reference for them (test/python/training_cases.py holds them to the
    float64 result instead)."""
    exact = copy.deepcopy(model).double()
    doubled = {k: v.double() if torch.is_tensor(v) and v.is_floating_point() else v for k, v in inputs.items()}
    optimizer = make(exact)
    try:
        train_eager(exact, doubled, optimizer, steps, clip)
    except RuntimeError:  # a kernel with no float64 form (torch._grouped_mm, in Mixtral's experts): none held out
        return {}
    noise = {}
    for name, parameter in exact.named_parameters(remove_duplicate=False):
        state = optimizer.state.get(parameter, {})
        if "exp_avg_sq" in state:
            group = next(g for g in optimizer.param_groups if any(p is parameter for p in g["params"]))
            bias = 1 - group["betas"][1] ** float(state["step"])
            noise[name] = (state["exp_avg_sq"] / bias).sqrt() < group["eps"]
    return noise


def _state(model: nn.Module) -> dict[str, torch.Tensor]:
    return {name: value.detach().clone() for name, value in model.state_dict(keep_vars=True).items()}


def train_eager(model: nn.Module, inputs: dict, optimizer: torch.optim.Optimizer, steps: int,
                clip: float | None, autocast: bool = False) -> Result:
    """Train in eager (`autocast`: forward and backward under CPU autocast to bf16)."""
    losses = []
    for _ in range(steps):
        optimizer.zero_grad()
        with torch.autocast("cpu", torch.bfloat16, enabled=autocast):
            loss = _loss_of(model(**inputs))
        loss.backward()
        if clip is not None:
            nn.utils.clip_grad_norm_(model.parameters(), clip)
        optimizer.step()
        losses.append(float(loss))
    return Result(losses, _state(model))


def train_rducc(model: nn.Module, inputs: dict, optimizer: torch.optim.Optimizer, settings: Settings,
                clip: float | None) -> Result:
    options = settings.compile_options() | ({} if clip is None else {"max_grad_norm": clip})
    program = rducc.compile_training(model, inputs, optimizer=optimizer, **options)
    losses = [float(program.step(**inputs)) for _ in range(settings.steps)]
    got = program.parameters()
    return Result(losses, {name: torch.as_tensor(got[name]) for name in _state(model) if name in got})


def train_dynamo(model: nn.Module, inputs: dict, optimizer: torch.optim.Optimizer, settings: Settings,
                 clip: float | None) -> Result:
    from rducc.program import Program

    torch._dynamo.reset()
    compiled = torch.compile(model, backend="rducc", options={"opt_level": settings.opt_level})
    calls = [0]
    run_program = Program.__call__

    def counted(self: Program, *args: Any, **named: Any) -> Any:
        calls[0] += 1
        return run_program(self, *args, **named)

    Program.__call__ = counted  # count the rducc programs run
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            result = train_eager(compiled, inputs, optimizer,  # type: ignore[arg-type] # a compiled module
                                 settings.steps, clip, settings.mixed_precision is not None)
    finally:
        Program.__call__ = run_program
    if calls[0] < 2 * settings.steps:
        raise RuntimeError(f"rducc ran {calls[0]} programs in {settings.steps} steps: the graphs ran in eager")
    result.state = _state(model)
    result.fallbacks = sum("rducc:" in str(w.message) for w in caught)
    return result


def compare(got: Result, want: Result) -> tuple[float, float, str, list[str]]:
    """(largest relative loss difference, smallest rtol at atol 1e-5 the state needs, the
    tensor that needs it, names missing)."""
    loss = max(abs(a - b) / max(abs(b), 1e-12) for a, b in zip(got.losses, want.losses))
    rtol, worst, missing = 0.0, "", []
    for name, expected in want.state.items():
        if name not in got.state:
            missing.append(name)
            continue
        if not expected.is_floating_point():  # batch norm's num_batches_tracked: equal or not
            if not torch.equal(got.state[name].to(expected.dtype), expected):
                rtol, worst = float("inf"), name
            continue
        excess = ((got.state[name].float() - expected.float()).abs() - PARAM_ATOL).clamp(min=0)
        if want.noise and name in want.noise:
            excess = torch.where(want.noise[name], 0.0, excess)
        needed = float((excess / expected.float().abs().clamp(min=1e-30)).max())
        if needed > rtol:
            rtol, worst = needed, name
    return loss, rtol, worst, missing


def run_one(name: str, path: str, settings: Settings) -> str:
    entry = ZOO[name]
    torch.manual_seed(0)
    try:
        model, inputs = entry.make()
    except Exception as error:  # noqa: BLE001 - a model that cannot be built here is a row
        return f"| {name} | {path} | not built: {str(error).splitlines()[0][:120]} | | | |"
    model = _no_dropout(model.train())
    eager = copy.deepcopy(model)
    make_optimizer = entry.optimizer or default_optimizer
    optimizer, steps = settings.optimizer, settings.steps
    autocast = settings.mixed_precision is not None
    want = train_eager(eager, inputs, make_optimizer(eager, optimizer), steps, entry.clip, autocast)
    want.noise = noise_elements(model, inputs, lambda m: make_optimizer(m, optimizer), steps, entry.clip)
    budget = ""
    if autocast:
        full = copy.deepcopy(model)
        losses = train_eager(full, inputs, make_optimizer(full, optimizer), steps, entry.clip).losses
        gap = max(abs(a - b) / max(abs(b), 1e-12) for a, b in zip(want.losses, losses))
        budget = f" (eager autocast vs float32: {gap:.1e})"
    start = time.perf_counter()
    try:
        train = train_rducc if path == "rducc" else train_dynamo
        with torch._dynamo.config.patch(allow_rnn=entry.recurrent):
            got = train(model, inputs, make_optimizer(model, optimizer), settings, entry.clip)
    except Exception as error:  # noqa: BLE001 - a failure is a row
        first = (str(error).strip().splitlines() or [type(error).__name__])[0][:200]
        if "--trace" in __import__("sys").argv:
            traceback.print_exc()
        return f"| {name} | {path} | no: {type(error).__name__}: {first} | | | {time.perf_counter() - start:.0f} s |"
    seconds = time.perf_counter() - start
    loss, rtol, worst, missing = compare(got, want)
    note = f" (missing {', '.join(missing[:3])})" if missing else ""
    note += f" (worst: {worst})" if rtol > 1e-4 else ""
    noisy = sum(int(mask.sum()) for mask in (want.noise or {}).values())
    note += f" ({noisy} noise elements)" if noisy else ""
    note += budget
    note += f" ({got.fallbacks} graphs in eager)" if got.fallbacks else ""
    return f"| {name} | {path} | yes{note} | {loss:.2e} | {rtol:.2e} | {seconds:.0f} s |"


def run(quick: bool, settings: Settings | None = None, only: list[str] | None = None,
        paths: tuple[str, ...] = ("rducc", "dynamo")) -> Section:
    settings = settings or Settings()
    section = Section(f"training zoo ({settings})", "python bench/train_zoo.py")
    rows = ["| model | path | compiles | loss max rel diff | param rtol needed | time |",
            "| --- | --- | --- | --- | --- | --- |"]
    print("\n".join(rows), flush=True)
    for name in only or list(ZOO):
        for path in paths:
            rows.append(run_one(name, path, settings))
            print(rows[-1], flush=True)
    section.details += rows
    return section


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--optimizer", choices=("adamw", "sgd"), default="adamw")
    parser.add_argument("--opt-level", type=int, default=0)
    parser.add_argument("--mixed-precision", choices=("bf16",), default=None,
                        help="bf16 autocast with float32 master weights; eager runs under CPU autocast")
    parser.add_argument("--dp", type=int, default=0, help="data parallel on sn40l-8 (rducc path)")
    parser.add_argument("--tp", type=int, default=0, help="tensor parallel on sn40l-8 (rducc path)")
    parser.add_argument("--only", nargs="*")
    parser.add_argument("--path", choices=("rducc", "dynamo", "both"), default="both")
    parser.add_argument("--trace", action="store_true")
    args = parser.parse_args()
    paths = ("rducc", "dynamo") if args.path == "both" else (args.path,)
    settings = Settings(args.steps, args.optimizer, args.opt_level, args.mixed_precision, args.dp, args.tp)
    print(settings, flush=True)
    section = run(False, settings, args.only, paths)
    del section


if __name__ == "__main__":
    main()
