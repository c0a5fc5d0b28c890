"""Held-out training round 16 (issue 27; bench/train_heldout.py imports `CASES` from here).

Training programs no round, zoo row or test trained before (rounds 1-15, train_zoo, the tests grepped for each).
transformers: models that compute their OWN loss from `labels=` (the loss the step minimizes is the model's:
`own_loss`): MarianMT (sinusoidal positions, scaled embeddings, labels shifted right into the decoder's inputs, -100
positions ignored; `marian_labels`), LongT5 with local attention (blocked keys within a radius, relative buckets;
`longt5_local`), SigLIP (a text and a vision tower, the pairwise sigmoid loss; `siglip_pairs`) and ViT-MAE
pre-training (random masking by argsort of a noise buffer, a decoder, the normalized-pixel loss over the masked
patches; `vit_mae`); Jamba (Mamba layers interleaved with attention and a routed MoE; `jamba`), Zamba2 (Mamba2
layers and one shared attention block at two depths with per-depth LoRA adapters; `zamba2`) and Perceiver on raw
bytes (latents cross-attending to the sequence; `perceiver_bytes`). diffusers: Flux's transformer (double-stream and
single-stream blocks, 3-axis rotary ids; `flux_blocks`, a flow-matching velocity loss). By hand: blocks built in a
loop over a list of widths, each returning a dict, with in-place activations (`width_dicts`); a backbone returning a
dataclass under heads returning a NamedTuple, the top module a dict, a loss of three weighted heads (soft-target
cross entropy with label smoothing and class weights, BCE, a regression masked by torch.where; `dataclass_heads`);
parameters and a buffer created in float64 in the middle of a float32 stack (`float64_middle`); one weight used as a
Linear's, as its transpose and inside an einsum bilinear score (`transpose_shared`); a frozen sub-module (LayerNorm,
Linear, BatchNorm1d in train mode) in the middle of the stack (`frozen_mid`, also run with gradient clipping in the
step: `--max-grad-norm`); per-token losses masked by torch.where and normalized by the mask's count
(`where_tokens`); gradient clipping by hooks on every parameter and on an activation (`clamp_hooks`, refused by
name). Random init, dropout 0; one input tensor per model.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

import torch
from heldout_round7 import _generator_buffer, needs_diffusers
from heldout_round8 import _LogitsOf
from heldout_round10 import _drop, _ids
from heldout_round13 import _causal_lm
from heldout_round14 import reconstruction_mse
from torch import nn
from torch.nn import functional as F

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "test" / "python"))
from training_cases import Case, language_model_loss  # noqa: E402

Built = tuple[nn.Module, tuple[torch.Tensor, ...]]
CE = F.cross_entropy


class _OwnLoss(nn.Module):
    """A transformers seq2seq model's own loss: `labels=` the input reversed, every position whose token is a
    multiple of 7 ignored (-100); the model shifts the labels right into its decoder's inputs. `mask`: an
    all-ones attention_mask given too (LongT5's local attention under torch.export reads one: without it,
    transformers' `_split_into_blocks` gets None there, "'NoneType' object has no attribute 'shape'")."""

    def __init__(self, model: nn.Module, mask: bool = False) -> None:
        super().__init__()
        self.model, self.mask = model, mask

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        labels = torch.where(ids % 7 == 0, torch.full_like(ids, -100), ids.flip(1))
        mask = {"attention_mask": torch.ones_like(ids)} if self.mask else {}
        return self.model(input_ids=ids, labels=labels, **mask).loss


def own_loss(loss: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """The model's own loss (it made its labels itself; the batch's labels are not read)."""
    return loss


def marian_labels() -> Built:
    from transformers import MarianConfig, MarianMTModel

    torch.manual_seed(0)
    config = MarianConfig(vocab_size=256, d_model=16, encoder_layers=1, decoder_layers=1, encoder_attention_heads=2,
                          decoder_attention_heads=2, encoder_ffn_dim=32, decoder_ffn_dim=32,
                          max_position_embeddings=16, pad_token_id=0, decoder_start_token_id=0, eos_token_id=2,
                          scale_embedding=True)
    return _OwnLoss(MarianMTModel(_drop(config))), _ids()


def longt5_local() -> Built:
    from transformers import LongT5Config, LongT5ForConditionalGeneration

    torch.manual_seed(0)
    config = LongT5Config(vocab_size=256, d_model=16, d_kv=8, d_ff=32, num_layers=1, num_decoder_layers=1,
                          num_heads=2, local_radius=2, encoder_attention_type="local",
                          relative_attention_num_buckets=8, relative_attention_max_distance=16, dropout_rate=0.0,
                          decoder_start_token_id=0, pad_token_id=0, eos_token_id=2)
    return _OwnLoss(LongT5ForConditionalGeneration(config), mask=True), _ids()


class _SiglipPairs(nn.Module):
    """SigLIP's own pairwise sigmoid loss (`return_loss=True`) of the images against fixed captions (a buffer of
    token ids, one per image)."""

    def __init__(self, model: nn.Module) -> None:
        super().__init__()
        self.model = model
        self.register_buffer("ids", (torch.arange(2 * 6).view(2, 6) * 5) % 256, persistent=False)

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        return self.model(input_ids=self.ids, pixel_values=images, return_loss=True).loss


def siglip_pairs() -> Built:
    from transformers import SiglipConfig, SiglipModel, SiglipTextConfig, SiglipVisionConfig

    torch.manual_seed(0)
    text = SiglipTextConfig(vocab_size=256, hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                            num_attention_heads=2, max_position_embeddings=8, projection_size=16)
    vision = SiglipVisionConfig(hidden_size=16, intermediate_size=32, num_hidden_layers=1, num_attention_heads=2,
                                image_size=16, patch_size=4)
    config = SiglipConfig(text_config=text.to_dict(), vision_config=vision.to_dict())
    return _SiglipPairs(SiglipModel(config)), (torch.randn(2, 3, 16, 16),)


class _MaskedAutoencoder(nn.Module):
    """ViT-MAE pre-training's own loss: the patches kept are chosen by argsort of a fixed noise buffer (the
    model's random masking made reproducible), the loss over the masked patches' normalized pixels."""

    def __init__(self, model: nn.Module, patches: int) -> None:
        super().__init__()
        self.model = model
        _generator_buffer(self, "noise", (2, patches), 23)

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        return self.model(pixel_values=images, noise=self.noise).loss


def vit_mae() -> Built:
    from transformers import ViTMAEConfig, ViTMAEForPreTraining

    torch.manual_seed(0)
    config = ViTMAEConfig(image_size=16, patch_size=4, hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                          intermediate_size=32, decoder_hidden_size=16, decoder_num_hidden_layers=1,
                          decoder_num_attention_heads=2, decoder_intermediate_size=32, mask_ratio=0.5,
                          norm_pix_loss=True)
    return _MaskedAutoencoder(ViTMAEForPreTraining(_drop(config)), 16), (torch.randn(2, 3, 16, 16),)


def jamba() -> Built:
    """Jamba: a Mamba layer (its PyTorch path: no CUDA kernels), then attention with a 2-expert top-1 MoE; its
    experts by batched_mm (the harness's float64 reference cannot run grouped_mm, round 10's qwen2_moe)."""
    return _causal_lm("JambaConfig", "JambaForCausalLM", num_experts=2, num_experts_per_tok=1,
                      experts_implementation="batched_mm",
                      expert_layer_period=2, expert_layer_offset=1, attn_layer_period=2, attn_layer_offset=1,
                      mamba_d_state=4, mamba_d_conv=4, mamba_expand=2, mamba_dt_rank=4, use_mamba_kernels=False)


def zamba2() -> Built:
    """Zamba2: Mamba2 layers and ONE shared attention block applied at two depths (its input the hidden state
    concatenated with the embeddings), each depth with its own LoRA adapters on q/k/v; rotary positions."""
    return _causal_lm("Zamba2Config", "Zamba2ForCausalLM", num_hidden_layers=3, num_attention_heads=2,
                      attention_head_dim=16, mamba_d_state=4, mamba_d_conv=4, mamba_expand=2, mamba_headdim=8,
                      mamba_ngroups=1, n_mamba_heads=4, chunk_size=4, layers_block_type=["mamba", "hybrid", "hybrid"],
                      hybrid_layer_ids=[1, 2], num_mem_blocks=1, use_shared_attention_adapter=True, adapter_rank=4,
                      use_mem_rope=True)


def perceiver_bytes() -> Built:
    from transformers import PerceiverConfig, PerceiverForSequenceClassification

    torch.manual_seed(0)
    config = PerceiverConfig(num_latents=6, d_latents=16, d_model=16, num_blocks=1, num_self_attends_per_block=1,
                             num_self_attention_heads=2, num_cross_attention_heads=2, vocab_size=262,
                             max_position_embeddings=16, num_labels=5)
    return _LogitsOf(PerceiverForSequenceClassification(_drop(config)), "inputs"), _ids()


class _FluxVelocity(nn.Module):
    """Flux's flow-matching step: packed latent tokens noised at fixed t, a stand-in text stream (embedded fixed
    ids) and pooled vector, 3-axis position ids for both streams; the predicted velocity minus (noise - x)."""

    def __init__(self, transformer: nn.Module, tokens: int, channels: int) -> None:
        super().__init__()
        self.transformer = transformer
        self.text, self.pool = nn.Embedding(32, 12), nn.Linear(12, 10)
        self.register_buffer("ids", torch.arange(2 * 3).view(2, 3) % 32, persistent=False)
        self.register_buffer("t", torch.tensor([0.3, 0.8]).view(2, 1, 1), persistent=False)
        grid = torch.stack(torch.meshgrid(torch.arange(4), torch.arange(tokens // 4), indexing="ij"), -1)
        self.register_buffer("img_ids", torch.cat([torch.zeros(tokens, 1), grid.view(tokens, 2).float()], 1),
                             persistent=False)
        self.register_buffer("txt_ids", torch.zeros(3, 3), persistent=False)
        _generator_buffer(self, "noise", (2, tokens, channels), 29)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        context = self.text(self.ids)
        noisy = (1 - self.t) * x + self.t * self.noise
        velocity = self.transformer(hidden_states=noisy, encoder_hidden_states=context,
                                    pooled_projections=self.pool(context.mean(1)), timestep=self.t.flatten(),
                                    img_ids=self.img_ids, txt_ids=self.txt_ids).sample
        return velocity - (self.noise - x)


def flux_blocks() -> Built:
    diffusers = needs_diffusers("flux_blocks")
    torch.manual_seed(0)
    model = diffusers.FluxTransformer2DModel(patch_size=1, in_channels=8, num_layers=1, num_single_layers=1,
                                             attention_head_dim=8, num_attention_heads=2, joint_attention_dim=12,
                                             pooled_projection_dim=10, guidance_embeds=False, axes_dims_rope=(2, 2, 4))
    return _FluxVelocity(model, 8, 8), (torch.randn(2, 8, 8),)


class _DictBlock(nn.Module):
    """Linear to the next width shifted in place (`add_`), an in-place activation module (ReLU or Hardtanh,
    inplace=True) and at some positions `leaky_relu_` after it, a gate by `sigmoid_`; returns {"hidden",
    "gate"}."""

    def __init__(self, width_in: int, width_out: int, index: int) -> None:
        super().__init__()
        self.proj, self.gate = nn.Linear(width_in, width_out), nn.Linear(width_in, 1)
        self.act = nn.ReLU(inplace=True) if index % 2 == 0 else nn.Hardtanh(-0.8, 0.9, inplace=True)
        self.index = index

    def forward(self, x: torch.Tensor) -> dict[str, torch.Tensor]:
        h = self.act(self.proj(x).add_(0.05))
        if self.index % 3 == 1:
            F.leaky_relu_(h, 0.1)
        gate = self.gate(x).sigmoid_()
        return {"hidden": h * gate, "gate": gate}


class _WidthDicts(nn.Module):
    """Blocks built in a loop over the widths 11 -> 27 -> 6 -> 19 -> 14; each block's dict read by key; the mean
    gates (a tuple accumulated in the loop) scale the head's input."""

    def __init__(self, widths: tuple[int, ...] = (11, 27, 6, 19, 14), classes: int = 5) -> None:
        super().__init__()
        self.blocks = nn.ModuleList()
        for index, (a, b) in enumerate(zip(widths, widths[1:], strict=False)):
            self.blocks.append(_DictBlock(a, b, index))
        self.head = nn.Linear(widths[-1], classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        gates: tuple[torch.Tensor, ...] = ()
        for block in self.blocks:
            out = block(x)
            x, gates = out["hidden"], (*gates, out["gate"])
        return self.head(x * torch.cat(gates, 1).mean(1, keepdim=True))


def width_dicts() -> Built:
    torch.manual_seed(0)
    return _WidthDicts(), (torch.randn(6, 11),)


@dataclass
class _Features:
    pooled: torch.Tensor
    tokens: torch.Tensor


class _HeadOutputs(NamedTuple):
    classes: torch.Tensor
    parity: torch.Tensor
    value: torch.Tensor


class _Backbone(nn.Module):
    """A Conv1d over (batch, 4, 9) and a GELU MLP; returns a dataclass of pooled features and tokens."""

    def __init__(self) -> None:
        super().__init__()
        self.conv, self.mlp = nn.Conv1d(4, 12, 3, padding=1), nn.Sequential(nn.Linear(12, 16), nn.GELU())

    def forward(self, x: torch.Tensor) -> _Features:
        tokens = self.mlp(self.conv(x).transpose(1, 2))
        return _Features(pooled=tokens.mean(1), tokens=tokens)


class _Heads(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.classes, self.parity, self.value = nn.Linear(16, 5), nn.Linear(16, 1), nn.Linear(16, 1)

    def forward(self, features: _Features) -> _HeadOutputs:
        return _HeadOutputs(self.classes(features.pooled), self.parity(features.tokens.amax(1)),
                            self.value(features.pooled).squeeze(-1))


class _DataclassHeads(nn.Module):
    """Returns a dict {"classes", "parity", "value"} built from a NamedTuple of heads over a dataclass of
    features."""

    def __init__(self) -> None:
        super().__init__()
        self.backbone, self.heads = _Backbone(), _Heads()

    def forward(self, x: torch.Tensor) -> dict[str, torch.Tensor]:
        return self.heads(self.backbone(x))._asdict()


def dataclass_heads() -> Built:
    torch.manual_seed(0)
    return _DataclassHeads(), (torch.randn(4, 4, 9),)


def weighted_heads(out: dict[str, torch.Tensor], labels: torch.Tensor) -> torch.Tensor:
    """1.0 x cross entropy against probability targets (the one-hot label mixed with its neighbour, 0.8 / 0.2)
    with label smoothing 0.1 and class weights; 0.5 x BCE-with-logits of the label's parity; 0.3 x the squared
    error of the value head against label / 4, over the samples whose label is below 3 only (torch.where),
    divided by their count (at least 1)."""
    classes = out["classes"]
    soft = 0.8 * F.one_hot(labels, 5).to(classes.dtype) + 0.2 * F.one_hot((labels + 1) % 5, 5).to(classes.dtype)
    weight = torch.linspace(0.5, 1.5, 5, device=classes.device)
    parity = (labels % 2).to(classes.dtype)
    keep = labels < 3
    squared = (out["value"] - labels.to(classes.dtype) / 4).pow(2)
    value = torch.where(keep, squared, torch.zeros_like(squared)).sum() / keep.sum().clamp_min(1)
    return (F.cross_entropy(classes, soft, weight=weight, label_smoothing=0.1)
            + 0.5 * F.binary_cross_entropy_with_logits(out["parity"].squeeze(-1), parity) + 0.3 * value)


class _Float64Middle(nn.Module):
    """float32 Linear 8 -> 14, then a Linear 14 -> 10 and a scale vector CREATED in float64 (and a float64
    buffer added), the activations cast to float64 and back; float32 head."""

    def __init__(self) -> None:
        super().__init__()
        self.inp = nn.Linear(8, 14)
        self.middle = nn.Linear(14, 10, dtype=torch.float64)
        self.scale = nn.Parameter(torch.linspace(0.5, 1.5, 10, dtype=torch.float64))
        self.register_buffer("offset", torch.linspace(-0.1, 0.1, 10, dtype=torch.float64))
        self.head = nn.Linear(10, 5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.tanh(self.inp(x)).double()
        h = torch.tanh(self.middle(h)) * self.scale + self.offset
        return self.head(h.to(x.dtype))  # to the input's dtype: the harness's float64 reference runs it too


def float64_middle() -> Built:
    torch.manual_seed(0)
    return _Float64Middle(), (torch.randn(6, 8),)


class _TransposeShared(nn.Module):
    """One weight W (16 x 24) used three ways: F.linear(x, W) (24 -> 16), h @ W (16 -> 24, its transpose) as the
    way back, and einsum("bi,ij,bj->b") as a bilinear score of the two; a residual and a head."""

    def __init__(self) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.randn(16, 24) / 5)
        self.inp, self.head = nn.Linear(7, 24), nn.Linear(24, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        a = torch.tanh(self.inp(x))
        h = torch.relu(F.linear(a, self.weight))
        back = a + h @ self.weight
        score = torch.einsum("bi,ij,bj->b", h, self.weight, back)
        return self.head(back) * torch.sigmoid(score).unsqueeze(-1)


def transpose_shared() -> Built:
    torch.manual_seed(0)
    return _TransposeShared(), (torch.randn(6, 7),)


class _FrozenMid(nn.Module):
    """Linear 9 -> 20, a FROZEN sub-module (LayerNorm, Linear 20 -> 14, BatchNorm1d in train mode: its running
    statistics still update) in the middle, trained Linear 14 -> 20 -> 6 after."""

    def __init__(self) -> None:
        super().__init__()
        self.inp = nn.Linear(9, 20)
        self.frozen = nn.Sequential(nn.LayerNorm(20), nn.Linear(20, 14), nn.BatchNorm1d(14))
        self.frozen.requires_grad_(False)
        self.out = nn.Sequential(nn.Linear(14, 20), nn.SiLU(), nn.Linear(20, 6))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.out(torch.relu(self.frozen(torch.relu(self.inp(x)))))


def frozen_mid() -> Built:
    torch.manual_seed(0)
    return _FrozenMid(), (torch.randn(8, 9),)


class _TokenTagger(nn.Module):
    """Per-token tags and a per-token confidence logit (an extra last column)."""

    def __init__(self) -> None:
        super().__init__()
        self.embed = nn.Embedding(256, 12)
        self.mix = nn.Conv1d(12, 12, 3, padding=1)
        self.out = nn.Linear(12, 7)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        h = self.embed(ids)
        h = h + torch.tanh(self.mix(h.transpose(1, 2))).transpose(1, 2)
        return self.out(h)


def where_tokens() -> Built:
    torch.manual_seed(0)
    return _TokenTagger(), _ids()


def where_masked_tokens(out: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """Per-token cross entropy (label smoothing 0.05, reduction none) over 6 tags, tag 0 padding: masked by
    torch.where, plus the confidence column's BCE against "the tag is right" where not padding, each divided by
    the non-padding count (at least 1)."""
    logits, confidence = out[..., :6], out[..., 6]
    tags = labels % 6
    keep = tags != 0
    per_token = F.cross_entropy(logits.flatten(0, 1), tags.flatten(), reduction="none",
                                label_smoothing=0.05).view_as(tags)
    right = (logits.argmax(-1) == tags).to(out.dtype)
    bce = F.binary_cross_entropy_with_logits(confidence, right, reduction="none")
    count = keep.sum().clamp_min(1)
    zero = torch.zeros_like(per_token)
    return torch.where(keep, per_token, zero).sum() / count + 0.2 * torch.where(keep, bce, zero).sum() / count


class _ClampHooks(nn.Module):
    """Gradient clipping by hooks, a form users write: every parameter's gradient clamped to [-0.02, 0.02] by
    `register_hook` at construction, and the hidden activation's gradient clamped in the forward. rducc refuses
    it by name (torch.export drops gradient hooks); the torch.compile backend runs it."""

    def __init__(self) -> None:
        super().__init__()
        self.inp, self.out = nn.Linear(6, 12), nn.Linear(12, 4)
        for parameter in self.parameters():
            parameter.register_hook(lambda grad: grad.clamp(-0.02, 0.02))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.tanh(self.inp(x))
        if h.requires_grad:
            h.register_hook(lambda grad: grad.clamp(-0.01, 0.01))
        return self.out(h)


def clamp_hooks() -> Built:
    torch.manual_seed(0)
    return _ClampHooks(), (torch.randn(6, 6),)


CASES: dict[str, Any] = {
    "marian_labels": Case(marian_labels, own_loss, 256, per_token=True),
    "longt5_local": Case(longt5_local, own_loss, 256, per_token=True),
    "siglip_pairs": Case(siglip_pairs, own_loss, 2),
    "vit_mae": Case(vit_mae, own_loss, 2),
    "jamba": Case(jamba, language_model_loss, 256, per_token=True),
    "zamba2": Case(zamba2, language_model_loss, 256, per_token=True),
    "perceiver_bytes": Case(perceiver_bytes, CE, 5),
    "flux_blocks": Case(flux_blocks, reconstruction_mse, 3),
    "width_dicts": Case(width_dicts, CE, 5),
    "dataclass_heads": Case(dataclass_heads, weighted_heads, 5),
    "float64_middle": Case(float64_middle, CE, 5),
    "transpose_shared": Case(transpose_shared, CE, 4),
    "frozen_mid": Case(frozen_mid, CE, 6),
    "where_tokens": Case(where_tokens, where_masked_tokens, 6, per_token=True),
    "clamp_hooks": Case(clamp_hooks, CE, 4),
}
"""Round 16's models (`--models round16`)."""
