"""The model zoo: real architectures from transformers (language, speech and vision).

Each entry builds a small config with random weights (no downloads: configs
in code) in eval mode, with inputs of a given
batch size. `ZOO` lists them all; `QUICK` is the subset CI runs. Other
benchmarks import this module (`bench/zoo/models.py`) for the same models.

    from zoo.models import ZOO
    model, inputs = ZOO["resnet"].build(batch=2)
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

Inputs = tuple[torch.Tensor, ...]
SEQ = 8
"""Tokens of a text model's input."""
IMAGE = 64
"""Side of an image model's input."""


@dataclass(frozen=True)
class ZooModel:
    """One architecture: where it comes from and how to build it at a batch size."""

    name: str
    source: str  # the library that defines it
    make: Callable[[], nn.Module]
    inputs: Callable[[int], Inputs]
    decoder: bool = False  # a causal LM: also compiled at tp=2 on sn40l-8

    def build(self, batch: int = 1, seed: int = 0) -> tuple[nn.Module, Inputs]:
        """The model (eval mode, weights from `seed`) and inputs of `batch` rows."""
        torch.manual_seed(seed)
        model = self.make().eval()
        _randomize_norms(model, seed)
        torch.manual_seed(seed + 1)
        return model, self.inputs(batch)


def _randomize_norms(model: nn.Module, seed: int) -> None:
    """Batch-norm statistics away from (0, 1), so that folding them is checked."""
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for module in model.modules():
            if isinstance(module, nn.modules.batchnorm._BatchNorm) and module.running_mean is not None:
                shape = module.running_mean.shape
                module.running_mean.copy_(torch.randn(shape, generator=generator) * 0.1)
                module.running_var.copy_(torch.rand(shape, generator=generator) + 0.5)


class FirstOutput(nn.Module):
    """Calls a Hugging Face model with keyword inputs and returns one tensor of
    its output (`logits`, `last_hidden_state`): a plain tensor to compare."""

    def __init__(self, model: nn.Module, names: tuple[str, ...], key: str, **extra: Any):
        super().__init__()
        self.model, self.names, self.key, self.extra = model, names, key, extra

    def forward(self, *inputs: torch.Tensor) -> torch.Tensor:
        return self.model(**dict(zip(self.names, inputs)), **self.extra)[self.key]


# --------------------------------------------------------------------------
# inputs
# --------------------------------------------------------------------------


def tokens(batch: int, vocab: int = 256) -> Inputs:
    return (torch.randint(0, vocab, (batch, SEQ)),)


def images(batch: int, side: int = IMAGE) -> Inputs:
    return (torch.randn(batch, 3, side, side),)


# --------------------------------------------------------------------------
# transformers
# --------------------------------------------------------------------------

_DECODER = dict(
    vocab_size=256, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
    num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=128,
)
"""A small decoder: 2 layers, 4 heads, 2 KV heads (tp=2 splits both)."""


def _causal(config_class: str, model_class: str, **overrides: Any) -> Callable[[], nn.Module]:
    def make() -> nn.Module:
        import transformers

        config = getattr(transformers, config_class)(**{**_DECODER, **overrides})
        model = getattr(transformers, model_class)(config)
        return FirstOutput(model, ("input_ids",), "logits", use_cache=False)

    return make


def _encoder(config_class: str, model_class: str, names: tuple[str, ...], key: str = "last_hidden_state",
             **config: Any) -> Callable[[], nn.Module]:
    def make() -> nn.Module:
        import transformers

        model = getattr(transformers, model_class)(getattr(transformers, config_class)(**config))
        return FirstOutput(model, names, key)

    return make


_BERT = dict(vocab_size=256, hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
             intermediate_size=128, max_position_embeddings=64)


def _whisper_encoder() -> nn.Module:
    from transformers import WhisperConfig, WhisperModel

    config = WhisperConfig(vocab_size=256, d_model=64, encoder_layers=2, decoder_layers=1,
                           encoder_attention_heads=4, decoder_attention_heads=4, encoder_ffn_dim=128,
                           decoder_ffn_dim=128, num_mel_bins=16, max_source_positions=16,
                           pad_token_id=0, bos_token_id=0, eos_token_id=0, decoder_start_token_id=0)
    return FirstOutput(WhisperModel(config).get_encoder(), ("input_features",), "last_hidden_state")


def _t5_encoder() -> nn.Module:
    from transformers import T5Config, T5EncoderModel

    config = T5Config(vocab_size=256, d_model=64, d_kv=16, d_ff=128, num_layers=2, num_heads=4)
    return FirstOutput(T5EncoderModel(config), ("input_ids",), "last_hidden_state")


TRANSFORMERS = [
    ZooModel("llama", "transformers", _causal("LlamaConfig", "LlamaForCausalLM"), tokens, True),
    ZooModel("mistral", "transformers", _causal("MistralConfig", "MistralForCausalLM", sliding_window=None),
             tokens, True),
    ZooModel("qwen2", "transformers", _causal("Qwen2Config", "Qwen2ForCausalLM"), tokens, True),
    ZooModel("qwen3", "transformers", _causal("Qwen3Config", "Qwen3ForCausalLM", head_dim=16), tokens, True),
    ZooModel("gemma", "transformers", _causal("GemmaConfig", "GemmaForCausalLM", head_dim=16), tokens, True),
    ZooModel("gemma2", "transformers", _causal("Gemma2Config", "Gemma2ForCausalLM", head_dim=16), tokens, True),
    ZooModel("phi3", "transformers", _causal("Phi3Config", "Phi3ForCausalLM", pad_token_id=0), tokens, True),
    ZooModel("olmo", "transformers", _causal("OlmoConfig", "OlmoForCausalLM", pad_token_id=0), tokens, True),
    ZooModel("granite", "transformers", _causal("GraniteConfig", "GraniteForCausalLM"), tokens, True),
    ZooModel("starcoder2", "transformers", _causal("Starcoder2Config", "Starcoder2ForCausalLM"), tokens, True),
    ZooModel("stablelm", "transformers", _causal("StableLmConfig", "StableLmForCausalLM"), tokens, True),
    ZooModel("mixtral", "transformers", _causal("MixtralConfig", "MixtralForCausalLM", num_local_experts=4,
                                                num_experts_per_tok=2), tokens, True),
    ZooModel("gpt2", "transformers", _causal("GPT2Config", "GPT2LMHeadModel", n_embd=64, n_layer=2, n_head=4,
                                             n_positions=64, bos_token_id=0, eos_token_id=0), tokens, True),
    ZooModel("gpt_neox", "transformers", _causal("GPTNeoXConfig", "GPTNeoXForCausalLM"), tokens, True),
    ZooModel("opt", "transformers", _causal("OPTConfig", "OPTForCausalLM", ffn_dim=128, word_embed_proj_dim=64,
                                            pad_token_id=1), tokens, True),
    ZooModel("bloom", "transformers", _causal("BloomConfig", "BloomForCausalLM", n_layer=2, n_head=4), tokens, True),
    ZooModel("bert", "transformers", _encoder("BertConfig", "BertModel", ("input_ids",), **_BERT), tokens),
    ZooModel("roberta", "transformers", _encoder("RobertaConfig", "RobertaModel", ("input_ids",), pad_token_id=1,
                                                 **{**_BERT, "max_position_embeddings": 80}), tokens),
    ZooModel("distilbert", "transformers", _encoder("DistilBertConfig", "DistilBertModel", ("input_ids",),
                                                    vocab_size=256, dim=64, n_layers=2, n_heads=4, hidden_dim=128,
                                                    max_position_embeddings=64), tokens),
    ZooModel("albert", "transformers", _encoder("AlbertConfig", "AlbertModel", ("input_ids",), embedding_size=32,
                                                **_BERT), tokens),
    ZooModel("electra", "transformers", _encoder("ElectraConfig", "ElectraModel", ("input_ids",), embedding_size=32,
                                                 **_BERT), tokens),
    ZooModel("t5_encoder", "transformers", _t5_encoder, tokens),
    ZooModel("vit", "transformers", _encoder("ViTConfig", "ViTModel", ("pixel_values",), image_size=32, patch_size=8,
                                             hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                                             intermediate_size=128), lambda b: images(b, 32)),
    ZooModel("whisper_encoder", "transformers", _whisper_encoder, lambda b: (torch.randn(b, 16, 32),)),
    ZooModel("wav2vec2", "transformers", _encoder(
        "Wav2Vec2Config", "Wav2Vec2Model", ("input_values",), hidden_size=64, num_hidden_layers=2,
        num_attention_heads=4, intermediate_size=128, conv_dim=(32, 32, 32), conv_stride=(5, 2, 2),
        conv_kernel=(10, 3, 3), num_conv_pos_embeddings=16, num_conv_pos_embedding_groups=4),
        lambda b: (torch.randn(b, 800),)),
    ZooModel("convnext_hf", "transformers", _encoder("ConvNextConfig", "ConvNextModel", ("pixel_values",),
                                                     hidden_sizes=[16, 32, 64, 128], depths=[1, 1, 1, 1]), images),
]


# --------------------------------------------------------------------------
# vision: transformers' own convolutional and vision-transformer families
# (torchvision and timm are not installed: no CPU build of torchvision 0.28
# loads beside torch 2.13.0, and timm needs torchvision)
# --------------------------------------------------------------------------


def _vision(config_class: str, model_class: str, **config: Any) -> Callable[[], nn.Module]:
    return _encoder(config_class, model_class, ("pixel_values",), **config)


_SMALL_VIT = dict(image_size=32, patch_size=8, hidden_size=64, num_hidden_layers=2, num_attention_heads=4)
_STAGES = dict(hidden_sizes=[16, 32, 64, 128], depths=[1, 1, 1, 1])

VISION = [
    ZooModel("resnet", "transformers", _vision("ResNetConfig", "ResNetModel", embedding_size=16, **_STAGES), images),
    ZooModel("regnet", "transformers", _vision("RegNetConfig", "RegNetModel", embedding_size=16, groups_width=8,
                                               **_STAGES), images),
    ZooModel("mobilenet_v1", "transformers", _vision("MobileNetV1Config", "MobileNetV1Model", depth_multiplier=0.25,
                                                     image_size=IMAGE), images),
    ZooModel("mobilenet_v2", "transformers", _vision("MobileNetV2Config", "MobileNetV2Model", depth_multiplier=0.35,
                                                     image_size=IMAGE), images),
    ZooModel("efficientnet", "transformers", _vision("EfficientNetConfig", "EfficientNetModel", width_coefficient=0.25,
                                                     depth_coefficient=0.25, image_size=IMAGE, hidden_dim=320), images),
    ZooModel("convnextv2", "transformers", _vision("ConvNextV2Config", "ConvNextV2Model", **_STAGES), images),
    ZooModel("poolformer", "transformers", _vision("PoolFormerConfig", "PoolFormerModel", **_STAGES), images),
    ZooModel("mobilevit", "transformers", _vision("MobileViTConfig", "MobileViTModel", image_size=IMAGE,
                                                  hidden_sizes=[32, 40, 48], neck_hidden_sizes=[8, 8, 16, 16, 24, 32, 64]),
             images),
    ZooModel("segformer", "transformers", _vision("SegformerConfig", "SegformerModel", hidden_sizes=[16, 32, 40, 64],
                                                  depths=[1, 1, 1, 1], num_attention_heads=[1, 2, 2, 4]), images),
    ZooModel("levit", "transformers", _vision("LevitConfig", "LevitModel", image_size=IMAGE, hidden_sizes=[32, 48, 64],
                                              num_attention_heads=[1, 2, 2], depths=[1, 1, 1], key_dim=[8, 8, 8]),
             images),
    ZooModel("swin", "transformers", _vision("SwinConfig", "SwinModel", image_size=32, patch_size=4, embed_dim=16,
                                             depths=[1, 1], num_heads=[2, 4], window_size=4), lambda b: images(b, 32)),
    ZooModel("deit", "transformers", _vision("DeiTConfig", "DeiTModel", intermediate_size=128, **_SMALL_VIT),
             lambda b: images(b, 32)),
    ZooModel("beit", "transformers", _vision("BeitConfig", "BeitModel", intermediate_size=128, **_SMALL_VIT),
             lambda b: images(b, 32)),
    ZooModel("dinov2", "transformers", _vision("Dinov2Config", "Dinov2Model", mlp_ratio=2, **_SMALL_VIT),
             lambda b: images(b, 32)),
]


ZOO: dict[str, ZooModel] = {m.name: m for m in (*TRANSFORMERS, *VISION)}
"""Every zoo model by name."""

QUICK = ("llama", "bert", "convnext_hf")
"""The subset CI runs (test/python/test_model_zoo.py): small and fast."""


# --------------------------------------------------------------------------
# the sizes users run: each library's own default configuration (10-125 M
# parameters), for the runtime's speed at real sizes (bench/runtime_zoo.py)
# --------------------------------------------------------------------------

FULL_IMAGE = 224
"""Side of a full-size vision model's input (the configs' own image size)."""
FULL_SEQ = 128
"""Tokens of the full-size decoder's input."""


def _gpt2_small() -> nn.Module:
    """GPT-2 small (124 M parameters): transformers' default GPT2Config."""
    import transformers

    return FirstOutput(transformers.GPT2LMHeadModel(transformers.GPT2Config()), ("input_ids",), "logits",
                       use_cache=False)


MIXTRAL_100M = dict(vocab_size=32000, hidden_size=512, intermediate_size=1024, num_hidden_layers=5,
                    num_attention_heads=8, num_key_value_heads=4, num_local_experts=8, num_experts_per_tok=2,
                    max_position_embeddings=512, tie_word_embeddings=False)
"""A Mixtral of about 100 M parameters (transformers' MixtralConfig defaults
otherwise: 8 experts, top 2, its own default experts path), for the runtime at
a size users run: Mixtral 8x7B's default config is 47 B."""


def _mixtral_100m() -> nn.Module:
    import transformers

    model = transformers.MixtralForCausalLM(transformers.MixtralConfig(**MIXTRAL_100M))
    return FirstOutput(model, ("input_ids",), "logits", use_cache=False)


def _mixtral_tokens(batch: int) -> Inputs:
    return (torch.randint(0, MIXTRAL_100M["vocab_size"], (batch, FULL_SEQ)),)


def _full_images(batch: int) -> Inputs:
    return images(batch, FULL_IMAGE)


def _gpt2_tokens(batch: int) -> Inputs:
    return (torch.randint(0, 50257, (batch, FULL_SEQ)),)


FULL_SIZE: dict[str, ZooModel] = {m.name: m for m in (
    ZooModel("resnet50", "transformers ResNetConfig() (ResNet-50)", _vision("ResNetConfig", "ResNetModel"),
             _full_images),
    ZooModel("vit_b_16", "transformers ViTConfig() (ViT-B/16)", _vision("ViTConfig", "ViTModel"), _full_images),
    ZooModel("swin_t", "transformers SwinConfig() (Swin-T)", _vision("SwinConfig", "SwinModel"), _full_images),
    ZooModel("convnext_t", "transformers ConvNextConfig() (ConvNeXt-T)", _vision("ConvNextConfig", "ConvNextModel"),
             _full_images),
    ZooModel("gpt2_small", "transformers GPT2Config() (GPT-2 small, 128 tokens)", _gpt2_small, _gpt2_tokens),
    ZooModel("mixtral_100m", "transformers MixtralConfig, ~100 M parameters (MIXTRAL_100M, 128 tokens)",
             _mixtral_100m, _mixtral_tokens),
)}
"""Models at their library's own default configuration (the architectures
torchvision's resnet50, vit_b_16, swin_t and convnext_tiny define, as
transformers defines them: torchvision has no build that loads beside this
torch), batch 1."""
