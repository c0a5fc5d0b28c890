"""Held-out training round 17 (issue 27; bench/train_heldout.py imports `CASES` from here).

Training programs no round, zoo row or test trained before (rounds 1-16, train_zoo, the tests grepped for each).
transformers: Falcon-H1 (Mamba2 mixer and attention in parallel in every layer, muP multipliers; `falcon_h1`),
Qwen3-Next (gated DeltaNet linear attention layers beside gated full attention, a routed MoE with a shared expert;
`qwen3_next`), NLLB-MoE computing its own loss from `labels=` with the router's z-loss and load-balancing loss added
(`nllb_moe_aux`), Parakeet's Conformer encoder computing its own CTC loss from `labels=` (`parakeet_ctc`; torch.export
refuses its `masked_select`) and under round 15's static-length CTC over its logits (`parakeet_frames`), DINOv3's
ViT (2-D rotary positions, register tokens, layer scale; `dinov3_vit`), the Audio Spectrogram Transformer
(`ast_audio`) and ProphetNet (n-stream self-attention predicting two future tokens, its own loss; `prophetnet`).
diffusers: Sana's transformer (ReLU linear attention, GLUMBConv feed-forward, caption cross-attention;
`sana_blocks`). By hand: stages in an nn.ModuleDict looked up by name from a width plan, one Linear tied across
every stage of equal width, per-stage gains in a ParameterDict and biases in a ParameterList, one stage under
torch.utils.checkpoint (`stage_dict`); F.scaled_dot_product_attention with dropout_p=0 and a float additive mask
gathered from a learned relative-bias table by an int64 buffer of offsets (`sdpa_bias_table`); parameters used
twice in one op (W @ W, addcmul(b, g, g), einsum over one weight twice, maximum(W, W.T); `param_twice`); in-place
ops on views of activations (a slice `mul_`, a `narrow` `tanh_`, a diagonal `add_`, a transposed row `sub_`, an
unflattened half `relu_`; `view_inplace`); a complex64 buffer (unit phasors) multiplied with activations made complex,
`.abs()` and `.real` back to float, and an int32 buffer of indices (`complex_phasor`); Conv3d, AvgPool3d, LPPool2d /
LPPool1d and Softmin weights (`lp_pools`); a per-pixel segmentation loss (nll_loss over (N, C, H, W) with class
weights and ignore_index) plus a BCE on probabilities with per-element weights and multi_margin_loss p=2
(`seg_losses`). Random init, dropout 0; one input tensor per model.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import torch
from heldout_round7 import _generator_buffer, needs_diffusers
from heldout_round8 import _LogitsOf
from heldout_round10 import _drop, _ids
from heldout_round13 import _causal_lm
from heldout_round14 import reconstruction_mse
from heldout_round15 import CTC_CLASSES, ctc
from heldout_round16 import _OwnLoss, own_loss
from torch import nn
from torch.nn import functional as F
from torch.utils.checkpoint import checkpoint

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "test" / "python"))
from training_cases import Case, language_model_loss  # noqa: E402

Built = tuple[nn.Module, tuple[torch.Tensor, ...]]
CE = F.cross_entropy


def falcon_h1() -> Built:
    """Falcon-H1: every layer a Mamba2 mixer (its PyTorch path) and attention side by side on one norm, muP
    multipliers on the embedding, attention, SSM and MLP."""
    return _causal_lm("FalconH1Config", "FalconH1ForCausalLM", head_dim=4, mamba_d_ssm=16, mamba_n_heads=4,
                      mamba_d_head=4, mamba_n_groups=1, mamba_d_state=4, mamba_d_conv=4, mamba_expand=1,
                      mamba_chunk_size=4, mamba_rms_norm=True, embedding_multiplier=2.0, lm_head_multiplier=0.5,
                      attention_in_multiplier=0.8, attention_out_multiplier=1.2, ssm_in_multiplier=0.9,
                      ssm_out_multiplier=1.1)


def qwen3_next() -> Built:
    """Qwen3-Next: a gated DeltaNet layer (its PyTorch chunked path) then a gated full-attention layer, each with a
    4-expert top-2 MoE and a gated shared expert; experts by batched_mm (the float64 reference)."""
    return _causal_lm("Qwen3NextConfig", "Qwen3NextForCausalLM", head_dim=4, linear_num_value_heads=2,
                      linear_num_key_heads=2, linear_key_head_dim=4, linear_value_head_dim=4, linear_conv_kernel_dim=4,
                      num_experts=4, num_experts_per_tok=2, moe_intermediate_size=8,
                      shared_expert_intermediate_size=8, decoder_sparse_step=1,
                      layer_types=["linear_attention", "full_attention"], experts_implementation="batched_mm")


class _AuxOwnLoss(_OwnLoss):
    """_OwnLoss with the router's logits asked for: the model adds its z-loss and load-balancing loss."""

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        labels = torch.where(ids % 7 == 0, torch.full_like(ids, -100), ids.flip(1))
        return self.model(input_ids=ids, labels=labels, output_router_logits=True).loss


class _ShiftedOwnLoss(_OwnLoss):
    """_OwnLoss with the decoder's inputs shifted right here (start token 0, -100 as padding 0): ProphetNet's own
    shift asserts `torch.all(shifted >= 0).item()`, a data-dependent branch torch.export refuses."""

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        labels = torch.where(ids % 7 == 0, torch.full_like(ids, -100), ids.flip(1))
        shifted = torch.cat([torch.zeros_like(labels[:, :1]), labels[:, :-1].clamp_min(0)], 1)
        return self.model(input_ids=ids, decoder_input_ids=shifted, labels=labels).loss


def nllb_moe_aux() -> Built:
    from transformers import NllbMoeConfig, NllbMoeForConditionalGeneration

    torch.manual_seed(0)
    config = NllbMoeConfig(vocab_size=256, d_model=16, encoder_layers=2, decoder_layers=2, encoder_attention_heads=2,
                           decoder_attention_heads=2, encoder_ffn_dim=32, decoder_ffn_dim=32, num_experts=4,
                           expert_capacity=16, encoder_sparse_step=2, decoder_sparse_step=2,
                           router_z_loss_coef=0.01, router_aux_loss_coef=0.01, max_position_embeddings=32,
                           pad_token_id=0, decoder_start_token_id=2, eos_token_id=2, scale_embedding=True,
                           encoder_layerdrop=0.0, decoder_layerdrop=0.0)
    config.router_dtype, config.moe_token_dropout = "float32", 0.0
    return _AuxOwnLoss(NllbMoeForConditionalGeneration(_drop(config))), _ids()


class _OwnCTC(nn.Module):
    """Parakeet's own CTC loss from `labels=`: 4 target tokens per utterance, derived from the features' signs
    (ids 1..7, the blank 0 never a target), the last one -100 (padding) for the second utterance."""

    def __init__(self, model: nn.Module) -> None:
        super().__init__()
        self.model = model

    def forward(self, features: torch.Tensor) -> torch.Tensor:
        bits = (features[:, :4, :3] > 0).long()
        labels = 1 + bits[..., 0] + 2 * bits[..., 1] + 4 * bits[..., 2] % 7
        labels = torch.where(torch.arange(4) + torch.arange(2).view(2, 1) >= 4, torch.full_like(labels, -100),
                             labels)
        mask = torch.ones(features.shape[:2], dtype=torch.long)
        return self.model(input_features=features, attention_mask=mask, labels=labels).loss


def parakeet_ctc() -> Built:
    from transformers import ParakeetCTCConfig, ParakeetEncoderConfig, ParakeetForCTC

    torch.manual_seed(0)
    encoder = ParakeetEncoderConfig(hidden_size=16, num_hidden_layers=1, num_attention_heads=2, intermediate_size=32,
                                    conv_kernel_size=3, subsampling_factor=2, subsampling_conv_channels=4,
                                    num_mel_bins=8, max_position_embeddings=64, dropout=0.0, dropout_positions=0.0,
                                    layerdrop=0.0, activation_dropout=0.0, attention_dropout=0.0)
    config = ParakeetCTCConfig(vocab_size=9, encoder_config=encoder.to_dict(), pad_token_id=8,
                               ctc_loss_reduction="mean")
    return _OwnCTC(ParakeetForCTC(config)), (torch.randn(2, 24, 8),)


def parakeet_frames() -> Built:
    """Parakeet's Conformer (relative-position attention, depthwise convolution module, half-step FFNs, a strided
    convolution subsampler) under round 15's CTC over its frame logits (static target lengths)."""
    model, inputs = parakeet_ctc()
    return _LogitsOf(model.model, "input_features"), inputs


class _PooledHead(nn.Module):
    """A backbone's pooler output (or its first token) under a Linear head."""

    def __init__(self, model: nn.Module, width: int, classes: int, key: str = "pixel_values") -> None:
        super().__init__()
        self.model, self.head, self.key = model, nn.Linear(width, classes), key

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = self.model(**{self.key: x})
        pooled = out.pooler_output if out.pooler_output is not None else out.last_hidden_state[:, 0]
        return self.head(pooled)


def dinov3_vit() -> Built:
    from transformers import DINOv3ViTConfig, DINOv3ViTModel

    torch.manual_seed(0)
    # pos_embed_rescale=None: its default 2.0 draws a random log-uniform rescale of the rotary coordinates every
    # training forward (an augmentation, like dropout; rducc's draws are not eager's stream)
    config = DINOv3ViTConfig(image_size=16, patch_size=4, hidden_size=16, intermediate_size=32, num_hidden_layers=2,
                             num_attention_heads=2, num_register_tokens=2, layerscale_value=0.5, drop_path_rate=0.0,
                             use_gated_mlp=True, pos_embed_rescale=None)
    return _PooledHead(DINOv3ViTModel(_drop(config)), 16, 5), (torch.randn(2, 3, 16, 16),)


def ast_audio() -> Built:
    from transformers import ASTConfig, ASTForAudioClassification

    torch.manual_seed(0)
    config = ASTConfig(hidden_size=16, num_hidden_layers=1, num_attention_heads=2, intermediate_size=32,
                       patch_size=4, frequency_stride=4, time_stride=4, max_length=16, num_mel_bins=12, num_labels=5)
    return _LogitsOf(ASTForAudioClassification(_drop(config)), "input_values"), (torch.randn(2, 16, 12),)


def prophetnet() -> Built:
    from transformers import ProphetNetConfig, ProphetNetForConditionalGeneration

    torch.manual_seed(0)
    config = ProphetNetConfig(vocab_size=256, hidden_size=16, encoder_ffn_dim=32, decoder_ffn_dim=32,
                              num_encoder_layers=1, num_decoder_layers=1, num_encoder_attention_heads=2,
                              num_decoder_attention_heads=2, ngram=2, num_buckets=8, relative_max_distance=16,
                              max_position_embeddings=16, pad_token_id=0, decoder_start_token_id=0, eos_token_id=2,
                              eps=0.1)
    return _ShiftedOwnLoss(ProphetNetForConditionalGeneration(_drop(config))), _ids()


class _SanaFlow(nn.Module):
    """Sana's flow-matching step: latents noised at fixed t, a caption stand-in (embedded fixed ids); the
    predicted velocity minus (noise - x)."""

    def __init__(self, transformer: nn.Module, shape: tuple[int, ...]) -> None:
        super().__init__()
        self.transformer = transformer
        self.text = nn.Embedding(32, 12)
        self.register_buffer("ids", torch.arange(2 * 3).view(2, 3) % 32, persistent=False)
        self.register_buffer("t", torch.tensor([0.3, 0.8]).view(2, 1, 1, 1), persistent=False)
        _generator_buffer(self, "noise", shape, 31)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        noisy = (1 - self.t) * x + self.t * self.noise
        velocity = self.transformer(hidden_states=noisy, encoder_hidden_states=self.text(self.ids),
                                    timestep=self.t.flatten() * 1000).sample
        return velocity - (self.noise - x)


def sana_blocks() -> Built:
    diffusers = needs_diffusers("sana_blocks")
    torch.manual_seed(0)
    model = diffusers.SanaTransformer2DModel(in_channels=4, out_channels=4, num_attention_heads=2,
                                             attention_head_dim=8, num_layers=1, num_cross_attention_heads=2,
                                             cross_attention_head_dim=8, cross_attention_dim=16, caption_channels=12,
                                             mlp_ratio=2.0, sample_size=8, patch_size=2, norm_elementwise_affine=False)
    return _SanaFlow(model, (2, 4, 8, 8)), (torch.randn(2, 4, 8, 8),)


class _Stage(nn.Module):
    """Linear to the stage's width (or the shared Linear, for stages of equal width) and a GELU MLP residual."""

    def __init__(self, width_in: int, width: int, shared: nn.Linear | None) -> None:
        super().__init__()
        self.proj = nn.Linear(width_in, width) if width_in != width else nn.Identity()
        self.mix = shared if shared is not None else nn.Linear(width, width)
        self.norm = nn.LayerNorm(width)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.proj(x)
        return h + F.gelu(self.mix(self.norm(h)))


class _StageDict(nn.Module):
    """Stages in an nn.ModuleDict named by a width plan a12 -> b20 -> c20 -> d9 -> e20 -> f20: every stage of width
    20 shares ONE mix Linear (tied across the stack); per-stage gains in a ParameterDict, per-stage biases in a
    ParameterList; stage c runs under torch.utils.checkpoint (non-reentrant)."""

    PLAN = (("a", 12), ("b", 20), ("c", 20), ("d", 9), ("e", 20), ("f", 20))

    def __init__(self, classes: int = 5) -> None:
        super().__init__()
        shared = nn.Linear(20, 20)
        self.stages = nn.ModuleDict()
        self.gains = nn.ParameterDict()
        self.biases = nn.ParameterList()
        width_in = 7
        for name, width in self.PLAN:
            self.stages[name] = _Stage(width_in, width, shared if width == 20 else None)
            self.gains[name] = nn.Parameter(torch.linspace(0.8, 1.2, width))
            self.biases.append(nn.Parameter(torch.zeros(width)))
            width_in = width
        self.head = nn.Linear(width_in, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for index, (name, _) in enumerate(self.PLAN):
            stage = self.stages[name]
            x = checkpoint(stage, x, use_reentrant=False) if name == "c" else stage(x)
            x = x * self.gains[name] + self.biases[index]
        return self.head(x)


def stage_dict() -> Built:
    torch.manual_seed(0)
    return _StageDict(), (torch.randn(6, 7),)


class _SdpaBiasTable(nn.Module):
    """Token attention by F.scaled_dot_product_attention(dropout_p=0) with a FLOAT additive mask: a learned
    per-head relative-bias table gathered by an int64 buffer of clipped offsets, plus -1e4 above the diagonal."""

    def __init__(self, tokens: int = 8, width: int = 16, heads: int = 2) -> None:
        super().__init__()
        self.heads = heads
        self.embed = nn.Embedding(256, width)
        self.qkv, self.out = nn.Linear(width, 3 * width), nn.Linear(width, width)
        self.table = nn.Parameter(torch.randn(heads, 7) / 4)
        offsets = (torch.arange(tokens).view(1, -1) - torch.arange(tokens).view(-1, 1)).clamp(-3, 3) + 3
        self.register_buffer("offsets", offsets, persistent=False)
        self.register_buffer("future", torch.triu(torch.full((tokens, tokens), -1e4), 1), persistent=False)
        self.head = nn.Linear(width, 6)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        h = self.embed(ids)
        q, k, v = self.qkv(h).unflatten(-1, (3, self.heads, -1)).permute(2, 0, 3, 1, 4)
        mask = self.table[:, self.offsets] + self.future
        attended = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=0.0)
        return self.head(h + self.out(attended.transpose(1, 2).flatten(2)))


def sdpa_bias_table() -> Built:
    torch.manual_seed(0)
    return _SdpaBiasTable(), _ids()


class _ParamTwice(nn.Module):
    """Parameters used twice in one op: x @ (W @ W), addcmul(b, g, g), einsum("ij,jk->ik", W, W) and
    torch.maximum(W, W.T), each on a square weight W."""

    def __init__(self) -> None:
        super().__init__()
        self.inp = nn.Linear(6, 10)
        self.weight = nn.Parameter(torch.randn(10, 10) / 4)
        self.bias, self.gain = nn.Parameter(torch.zeros(10)), nn.Parameter(torch.linspace(0.5, 1.0, 10))
        self.head = nn.Linear(10, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.tanh(self.inp(x))
        h = torch.tanh(h @ (self.weight @ self.weight) + torch.addcmul(self.bias, self.gain, self.gain))
        h = h + torch.tanh(h @ torch.einsum("ij,jk->ik", self.weight, self.weight).t())
        return self.head(h @ torch.maximum(self.weight, self.weight.t()))


def param_twice() -> Built:
    torch.manual_seed(0)
    return _ParamTwice(), (torch.randn(6, 6),)


class _ViewInplace(nn.Module):
    """In-place ops on VIEWS of activations: the first 4 columns `mul_` by a gate, a `narrow` window `tanh_`,
    each (12 x 12) block's diagonal `add_` a parameter, row 1 of the transposed activation `sub_` 0.1, the first
    half of an unflatten `relu_`."""

    def __init__(self) -> None:
        super().__init__()
        self.inp = nn.Linear(8, 12)
        self.pair = nn.Linear(12, 144)
        self.diag = nn.Parameter(torch.linspace(-0.2, 0.2, 12))
        self.gate = nn.Linear(8, 4)
        self.head = nn.Linear(12, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.inp(x)
        h[:, :4].mul_(torch.sigmoid(self.gate(x)))
        h.narrow(1, 5, 4).tanh_()
        square = self.pair(h).view(-1, 12, 12)
        square.diagonal(dim1=-2, dim2=-1).add_(self.diag)
        h = h + square.mean(-1)
        h.t()[1].sub_(0.1)
        h.unflatten(1, (2, 6))[:, 0].relu_()
        return self.head(h)


def view_inplace() -> Built:
    torch.manual_seed(0)
    return _ViewInplace(), (torch.randn(6, 8),)


class _ComplexPhasor(nn.Module):
    """A complex64 buffer of unit phasors beside float parameters: activations made complex (real, imaginary
    halves), multiplied by the phasors, back to float by `.abs()` and `.real`; an int32 buffer of indices
    permutes the features (index_select)."""

    def __init__(self) -> None:
        super().__init__()
        self.inp = nn.Linear(9, 16)
        angles = torch.linspace(0, 3.0, 8)
        self.register_buffer("phasors", torch.polar(torch.ones(8), angles), persistent=False)
        self.register_buffer("order", torch.randperm(16, generator=torch.Generator().manual_seed(3)).int(),
                             persistent=False)
        self.head = nn.Linear(16, 5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.tanh(self.inp(x))
        turned = torch.complex(h[:, :8], h[:, 8:]) * self.phasors
        h = torch.cat([turned.abs(), turned.real], 1)
        return self.head(h.index_select(1, self.order))


def complex_phasor() -> Built:
    torch.manual_seed(0)
    return _ComplexPhasor(), (torch.randn(6, 9),)


class _LpPools(nn.Module):
    """Conv3d over (N, 2, 4, 8, 8), AvgPool3d, LPPool2d (p=2) over the merged depth, LPPool1d (p=3) over rows;
    Softmin weights over the pooled features, addcmul of the two paths."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv3d(2, 6, 3, padding=1)
        self.avg = nn.AvgPool3d(2)
        self.lp2 = nn.LPPool2d(2, 2)
        self.lp1 = nn.LPPool1d(3, 2)
        self.softmin = nn.Softmin(dim=-1)
        self.head = nn.Linear(12, 5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.avg(F.softplus(self.conv(x)))               # (N, 6, 2, 4, 4)
        planes = self.lp2(h.flatten(1, 2))                   # (N, 12, 2, 2)
        rows = self.lp1(h.flatten(2).mean(1, keepdim=True).expand(-1, 12, -1))  # (N, 12, 16)
        weights = self.softmin(rows)
        return self.head(torch.addcmul(planes.flatten(2).mean(-1), weights.mean(-1), rows.mean(-1), value=0.5))


def lp_pools() -> Built:
    torch.manual_seed(0)
    return _LpPools(), (torch.randn(3, 2, 4, 8, 8),)


class _SegHead(nn.Module):
    """A per-pixel classifier (two convolutions, 4 classes) and an image-level score column (a 5th channel)."""

    def __init__(self) -> None:
        super().__init__()
        self.body = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.Conv2d(8, 5, 1))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.body(x)


def seg_losses_model() -> Built:
    torch.manual_seed(0)
    return _SegHead(), (torch.randn(3, 3, 6, 6),)


def seg_losses(out: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """nll_loss over log_softmax of (N, 4, H, W) against a pixel map (label + row) % 4 with class weights and
    every pixel on (row + column) % 5 == 0 ignored (-100); BCE on the sigmoid of the 5th channel's mean against
    label parity, weighted per sample; multi_margin_loss (p=2, margin 0.5, class weights) on the pooled logits."""
    logits, score = out[:, :4], out[:, 4].mean((1, 2))
    rows = torch.arange(out.shape[2], device=out.device).view(1, -1, 1)
    cols = torch.arange(out.shape[3], device=out.device).view(1, 1, -1)
    target = (labels.view(-1, 1, 1) + rows + 0 * cols) % 4
    target = torch.where((rows + cols) % 5 == 0, torch.full_like(target, -100), target)
    weight = torch.tensor([0.5, 1.0, 1.5, 2.0], dtype=out.dtype, device=out.device)
    seg = F.nll_loss(F.log_softmax(logits, 1), target, weight=weight, ignore_index=-100)
    parity = (labels % 2).to(out.dtype)
    bce = F.binary_cross_entropy(torch.sigmoid(score), parity, weight=1 + labels.to(out.dtype) / 4)
    margin = F.multi_margin_loss(logits.mean((2, 3)), labels % 4, p=2, margin=0.5, weight=weight)
    return seg + 0.5 * bce + 0.3 * margin


CASES: dict[str, Any] = {
    "falcon_h1": Case(falcon_h1, language_model_loss, 256, per_token=True),
    "qwen3_next": Case(qwen3_next, language_model_loss, 256, per_token=True),
    "nllb_moe_aux": Case(nllb_moe_aux, own_loss, 256, per_token=True),
    "parakeet_ctc": Case(parakeet_ctc, own_loss, 2),
    "parakeet_frames": Case(parakeet_frames, ctc, CTC_CLASSES),
    "dinov3_vit": Case(dinov3_vit, CE, 5),
    "ast_audio": Case(ast_audio, CE, 5),
    "prophetnet": Case(prophetnet, own_loss, 256, per_token=True),
    "sana_blocks": Case(sana_blocks, reconstruction_mse, 3),
    "stage_dict": Case(stage_dict, CE, 5),
    "sdpa_bias_table": Case(sdpa_bias_table, language_model_loss, 6, per_token=True),
    "param_twice": Case(param_twice, CE, 4),
    "view_inplace": Case(view_inplace, CE, 4),
    "complex_phasor": Case(complex_phasor, CE, 5),
    "lp_pools": Case(lp_pools, CE, 5),
    "seg_losses": Case(seg_losses_model, seg_losses, 4),
}
"""Round 17's models (`--models round17`)."""
