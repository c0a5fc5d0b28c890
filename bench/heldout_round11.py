"""Held-out training round 11 (issue 27; bench/train_heldout.py imports these).

Training programs no test or bench wrote before (rounds 1-10 read first).
By hand: a learned whitening by the Cholesky factor of a trained covariance
(torch.linalg.cholesky, solve_triangular, vector_norm); multi-head attention
written wholly in einsum (projections by "btc,chd->bthd", a learned relative
bias by "bhqd,qkd->bhqk"); buffers the forward updates by lerp_ / copy_ (an EMA
of batch mean and variance that then normalizes, a count); an MLP
autoencoder whose decoder is its encoder's weights transposed, with a
bottleneck Parameter read twice; a loss of six torch losses (Huber,
KL with log targets, Poisson NLL, multi-margin, hinge embedding,
multilabel soft margin); adaptive pooling to sizes that do not divide the
input (avg 7 -> 3, max 9 -> 4 in 1-D); index_add / index_select /
masked_scatter / repeat_interleave; InfoNCE with a learned temperature;
cummax / flip / roll; a mixture-density likelihood (logsumexp of Gaussians);
atan2 / hypot / expm1 / log1p / erf.
transformers at tiny sizes: RegNet, EfficientNet and MobileNetV2 (train-mode
batch norm), Starcoder2, OLMo2 (q/k norms after the projections), Granite
(embedding / residual / attention / logit multipliers), Nemotron (squared ReLU,
LayerNorm1p, partial rotary), ESM (masked LM, rotary, token dropout off),
WavLM (gated relative position bias; per-frame loss), RecurrentGemma (RG-LRU
recurrence, a causal Conv1d, local attention) and mBART (teacher forced).
Random init, dropout p=0; each model takes one input tensor (the matrix's
batch maker) and makes what else it needs from fixed buffers.
"""

from __future__ import annotations

import torch
from heldout_round8 import _LogitsOf
from heldout_round10 import _drop, _ids, _TeacherForced
from torch import nn
from torch.nn import functional as F

Built = tuple[nn.Module, tuple[torch.Tensor, ...]]


class _CholeskyWhitening(nn.Module):
    """Features whitened by a learned covariance: L = cholesky(A A^T + eps I) of a trained A, the
    features solved against L (solve_triangular), then scaled by their vector norms."""

    def __init__(self) -> None:
        super().__init__()
        self.inp = nn.Linear(7, 6)
        self.factor = nn.Parameter(torch.eye(6) + 0.2 * torch.randn(6, 6))
        self.head = nn.Linear(7, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.tanh(self.inp(x))
        cov = self.factor @ self.factor.mT + 0.1 * torch.eye(6, dtype=h.dtype)
        lower = torch.linalg.cholesky(cov)
        white = torch.linalg.solve_triangular(lower, h.mT, upper=False).mT
        norms = torch.linalg.vector_norm(white, dim=1, keepdim=True)
        return self.head(torch.cat([white / (1 + norms), norms], dim=1))


def cholesky_whitening() -> Built:
    torch.manual_seed(0)
    return _CholeskyWhitening(), (torch.randn(5, 7),)


class _EinsumAttention(nn.Module):
    """Causal multi-head attention written in einsum only: q/k/v by "btc,chd->bthd", scores plus a
    learned relative bias "bhqd,qkd->bhqk", mixing "bhqk,bkhd->bqhd", output "bqhd,hdc->bqc"."""

    def __init__(self, width: int = 24, heads: int = 3, seq: int = 8) -> None:
        super().__init__()
        head = width // heads
        self.embed = nn.Embedding(256, width)
        self.q, self.k, self.v = (nn.Parameter(0.2 * torch.randn(width, heads, head)) for _ in range(3))
        self.o = nn.Parameter(0.2 * torch.randn(heads, head, width))
        self.rel = nn.Parameter(0.1 * torch.randn(seq, seq, head))
        self.norm = nn.LayerNorm(width)
        self.head = nn.Linear(width, 256)
        self.register_buffer("causal", torch.ones(seq, seq, dtype=torch.bool).tril())

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        x = self.embed(ids)
        t = ids.shape[1]
        q, k, v = (torch.einsum("btc,chd->bthd", x, w) for w in (self.q, self.k, self.v))
        scores = torch.einsum("bqhd,bkhd->bhqk", q, k) + torch.einsum("bqhd,qkd->bhqk", q, self.rel[:t, :t])
        scores = scores.masked_fill(~self.causal[:t, :t], float("-inf")) * q.shape[-1] ** -0.5
        mixed = torch.einsum("bhqk,bkhd->bqhd", scores.softmax(-1), v)
        return self.head(self.norm(x + torch.einsum("bqhd,hdc->bqc", mixed, self.o)))


def einsum_attention() -> Built:
    torch.manual_seed(0)
    return _EinsumAttention(), _ids()


class _EmaNorm(nn.Module):
    """A hand-written batch norm whose running mean / variance buffers the forward updates by lerp_
    and whose normalization uses those updated buffers (not the batch's), plus a float count by copy_."""

    def __init__(self) -> None:
        super().__init__()
        self.a, self.b = nn.Linear(9, 14), nn.Linear(14, 5)
        self.register_buffer("mean", torch.zeros(14))
        self.register_buffer("var", torch.ones(14))
        self.register_buffer("seen", torch.zeros(()))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.a(x)
        with torch.no_grad():
            self.mean.lerp_(h.mean(0), 0.3)
            self.var.lerp_(h.var(0), 0.3)
            self.seen.copy_(self.seen + x.shape[0])
        h = (h - self.mean) * torch.rsqrt(self.var + 1e-5)
        return self.b(F.gelu(h)) * (1 + 0.01 * self.seen.clamp(max=10))


def ema_norm() -> Built:
    torch.manual_seed(0)
    return _EmaNorm(), (torch.randn(6, 9),)


class _TransposedDecoder(nn.Module):
    """An MLP autoencoder 16 -> 10 -> 6 whose decoder is the encoder's weights transposed (F.linear
    with .t()), a bottleneck gain Parameter read on the way down and on the way up, a classifier on the code."""

    def __init__(self) -> None:
        super().__init__()
        self.e1, self.e2 = nn.Linear(16, 10), nn.Linear(10, 6)
        self.gain = nn.Parameter(torch.linspace(0.5, 1.5, 6))
        self.d1_bias, self.d2_bias = nn.Parameter(torch.zeros(10)), nn.Parameter(torch.zeros(16))
        self.head = nn.Linear(6, 3)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        code = torch.tanh(self.e2(F.silu(self.e1(x)))) * self.gain
        up = F.silu(F.linear(code * self.gain, self.e2.weight.t(), self.d1_bias))
        rebuilt = F.linear(up, self.e1.weight.t(), self.d2_bias)
        return self.head(code), rebuilt - x


def transposed_decoder() -> Built:
    torch.manual_seed(0)
    return _TransposedDecoder(), (torch.randn(5, 16),)


class _SixLosses(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.trunk = nn.Sequential(nn.Linear(8, 20), nn.Tanh())
        self.heads = nn.Linear(20, 4 * 6)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.heads(self.trunk(x)).view(-1, 6, 4)


def six_losses_model() -> Built:
    torch.manual_seed(0)
    return _SixLosses(), (torch.randn(6, 8),)


def six_losses(out: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """Huber, KL (log targets), Poisson NLL, multi-margin, hinge embedding and multilabel soft margin,
    each on one of the six heads, with their own reductions."""
    one_hot = F.one_hot(labels, 4).to(out.dtype)
    sign = one_hot * 2 - 1
    targets = torch.log_softmax(one_hot * 3, dim=1)
    return (F.huber_loss(out[:, 0], one_hot, delta=0.5)
            + F.kl_div(F.log_softmax(out[:, 1], 1), targets, reduction="batchmean", log_target=True)
            + F.poisson_nll_loss(out[:, 2], one_hot + 0.5, log_input=True)
            + F.multi_margin_loss(out[:, 3], labels, margin=0.7)
            + F.hinge_embedding_loss(out[:, 4], sign, margin=0.8, reduction="sum") / out.shape[0]
            + F.multilabel_soft_margin_loss(out[:, 5], one_hot))


class _AdaptivePools(nn.Module):
    """Adaptive pooling to sizes that do not divide the input (overlapping windows): avg 7x7 -> 3x3,
    max 9 -> 4 over a 1-D signal, and a strided Conv1d between them."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(2, 6, 3, padding=1)
        self.conv1d = nn.Conv1d(6, 5, 3, padding=1)
        self.head = nn.Linear(6 * 9 + 5 * 4, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = F.gelu(self.conv(x))                      # (b, 6, 7, 7)
        a = F.adaptive_avg_pool2d(h, 3).flatten(1)    # (b, 54)
        s = F.relu(self.conv1d(h.flatten(2)[..., :9]))  # (b, 5, 9)
        m = F.adaptive_max_pool1d(s, 4).flatten(1)    # (b, 20)
        return self.head(torch.cat([a, m], dim=1))


def adaptive_pools() -> Built:
    torch.manual_seed(0)
    return _AdaptivePools(), (torch.randn(3, 2, 7, 7),)


class _IndexOps(nn.Module):
    """index_select of rows, index_add into slots (repeated indices), masked_scatter of trained
    values into a computed mask's places, repeat_interleave of a per-group scale."""

    def __init__(self) -> None:
        super().__init__()
        self.a = nn.Linear(6, 12)
        self.fill = nn.Linear(6, 12)
        self.group_scale = nn.Parameter(torch.linspace(0.5, 2.0, 4))
        self.head = nn.Linear(12 + 5, 4)
        self.register_buffer("rows", torch.tensor([5, 0, 3, 3, 11, 7, 2]))
        self.register_buffer("slots", torch.tensor([0, 1, 4, 4, 2, 0, 3]))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.tanh(self.a(x))                                          # (b, 12)
        picked = h.index_select(1, self.rows)                              # (b, 7)
        gathered = h.new_zeros(h.shape[0], 5).index_add(1, self.slots, picked, alpha=0.5)
        mask = h > 0
        filled = h.masked_scatter(mask, self.fill(x))                      # trained values, in order
        scaled = filled * self.group_scale.repeat_interleave(3)
        return self.head(torch.cat([scaled, gathered], dim=1))


def index_ops() -> Built:
    torch.manual_seed(0)
    return _IndexOps(), (torch.randn(4, 6),)


class _InfoNce(nn.Module):
    """Two views of a sample (the input and a fixed rotation of it) through one encoder, L2-normalized,
    a learned log temperature; the model returns the similarity logits (the loss is cross entropy
    against the diagonal, taken from the labels' shape)."""

    def __init__(self) -> None:
        super().__init__()
        self.encoder = nn.Sequential(nn.Linear(10, 24), nn.GELU(), nn.Linear(24, 12))
        self.log_temperature = nn.Parameter(torch.tensor(2.0))
        self.register_buffer("rotation", torch.linalg.qr(torch.randn(10, 10)).Q)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        a = F.normalize(self.encoder(x), dim=-1)
        b = F.normalize(self.encoder(x @ self.rotation), dim=-1)
        return a @ b.t() * self.log_temperature.exp()


def info_nce() -> Built:
    torch.manual_seed(0)
    return _InfoNce(), (torch.randn(6, 10),)


def info_nce_loss(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """Symmetric InfoNCE: each row's positive is its own index (the labels only size nothing here)."""
    target = torch.arange(logits.shape[0])
    return 0.5 * (F.cross_entropy(logits, target) + F.cross_entropy(logits.t(), target)) + 0 * labels.sum()


class _Scans(nn.Module):
    """cummax over the sequence (its gradient goes to the running argmax), flip and roll of features."""

    def __init__(self) -> None:
        super().__init__()
        self.embed = nn.Embedding(256, 10)
        self.mix = nn.Linear(30, 10)
        self.head = nn.Linear(10, 256)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        h = torch.tanh(self.embed(ids))
        peaks = torch.cummax(h, dim=1).values
        backwards = torch.flip(torch.cumsum(torch.flip(h, [1]), 1), [1]) / 8
        shifted = torch.roll(h, shifts=(1, -2), dims=(1, 2))
        return self.head(F.silu(self.mix(torch.cat([peaks, backwards, shifted], dim=-1))))


def scans() -> Built:
    torch.manual_seed(0)
    return _Scans(), _ids()


class _MixtureDensity(nn.Module):
    """A mixture density network: per sample, 3 Gaussians' weights, means and log-scales over 2-D targets."""

    def __init__(self) -> None:
        super().__init__()
        self.trunk = nn.Sequential(nn.Linear(5, 16), nn.Softplus())
        self.out = nn.Linear(16, 3 * (1 + 2 + 2))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.out(self.trunk(x))


def mixture_density() -> Built:
    torch.manual_seed(0)
    return _MixtureDensity(), (torch.randn(6, 5),)


def mixture_nll(out: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """Negative log likelihood of 2-D targets (the label as a point on a circle) under the mixture."""
    logits, means, log_scales = out[:, :3], out[:, 3:9].view(-1, 3, 2), out[:, 9:].view(-1, 3, 2)
    angle = labels.to(out.dtype) * 0.7
    target = torch.stack([angle.cos(), angle.sin()], dim=1).unsqueeze(1)
    log_prob = (-0.5 * ((target - means) * torch.exp(-log_scales)).pow(2) - log_scales - 0.9189385332046727).sum(-1)
    return -torch.logsumexp(F.log_softmax(logits, -1) + log_prob, dim=-1).mean()


class _Elementwise(nn.Module):
    """atan2 of two projections, hypot, expm1, log1p of a softplus, erf, a pow with a trained exponent."""

    def __init__(self) -> None:
        super().__init__()
        self.a, self.b = nn.Linear(6, 10), nn.Linear(6, 10)
        self.power = nn.Parameter(torch.full((10,), 1.5))
        self.head = nn.Linear(50, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        a, b = self.a(x), self.b(x)
        parts = [torch.atan2(a, b), torch.hypot(a, b), torch.expm1(0.3 * a), torch.log1p(F.softplus(b)),
                 torch.erf(a) * torch.hypot(a, b).pow(self.power)]
        return self.head(torch.cat(parts, dim=1))


def elementwise() -> Built:
    torch.manual_seed(0)
    return _Elementwise(), (torch.randn(4, 6),)


def regnet() -> Built:
    from transformers import RegNetConfig, RegNetForImageClassification

    torch.manual_seed(0)
    config = RegNetConfig(num_channels=3, embedding_size=8, hidden_sizes=[8, 16], depths=[1, 1], groups_width=4,
                          layer_type="y", num_labels=5)
    return _LogitsOf(RegNetForImageClassification(config), "pixel_values"), (torch.randn(2, 3, 16, 16),)


def efficientnet() -> Built:
    from transformers import EfficientNetConfig, EfficientNetForImageClassification

    torch.manual_seed(0)
    config = EfficientNetConfig(num_channels=3, image_size=16, width_coefficient=0.25, depth_coefficient=0.3,
                                kernel_sizes=[3, 5], in_channels=[32, 16], out_channels=[16, 24],
                                depthwise_padding=[], strides=[1, 2], num_repeats=[1, 1], expand_ratios=[1, 6],
                                hidden_dim=320, dropout_rate=0.0, drop_connect_rate=0.0, num_labels=5)
    return _LogitsOf(EfficientNetForImageClassification(config), "pixel_values"), (torch.randn(2, 3, 16, 16),)


def mobilenet_v2() -> Built:
    from transformers import MobileNetV2Config, MobileNetV2ForImageClassification

    torch.manual_seed(0)
    config = MobileNetV2Config(num_channels=3, image_size=16, depth_multiplier=0.25, min_depth=4,
                               classifier_dropout_prob=0.0, num_labels=5)
    return _LogitsOf(MobileNetV2ForImageClassification(config), "pixel_values"), (torch.randn(2, 3, 16, 16),)


def starcoder2() -> Built:
    from transformers import Starcoder2Config, Starcoder2ForCausalLM

    torch.manual_seed(0)
    config = Starcoder2Config(vocab_size=256, hidden_size=16, intermediate_size=32, num_hidden_layers=2,
                              num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=16,
                              sliding_window=4, use_bias=True, residual_dropout=0.0, embedding_dropout=0.0,
                              bos_token_id=1, eos_token_id=2)
    return _LogitsOf(Starcoder2ForCausalLM(_drop(config))), _ids()


def olmo2() -> Built:
    from transformers import Olmo2Config, Olmo2ForCausalLM

    torch.manual_seed(0)
    config = Olmo2Config(vocab_size=256, hidden_size=16, intermediate_size=32, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=16, pad_token_id=0,
                         bos_token_id=1, eos_token_id=2)
    return _LogitsOf(Olmo2ForCausalLM(_drop(config))), _ids()


def granite() -> Built:
    from transformers import GraniteConfig, GraniteForCausalLM

    torch.manual_seed(0)
    config = GraniteConfig(vocab_size=256, hidden_size=16, intermediate_size=32, num_hidden_layers=2,
                           num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=16,
                           embedding_multiplier=6.0, residual_multiplier=0.3, attention_multiplier=0.2,
                           logits_scaling=4.0, tie_word_embeddings=True)
    return _LogitsOf(GraniteForCausalLM(_drop(config))), _ids()


def nemotron() -> Built:
    from transformers import NemotronConfig, NemotronForCausalLM

    torch.manual_seed(0)
    config = NemotronConfig(vocab_size=256, hidden_size=16, intermediate_size=32, num_hidden_layers=2,
                            num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=16,
                            partial_rotary_factor=0.5, pad_token_id=0, bos_token_id=1, eos_token_id=2)
    return _LogitsOf(NemotronForCausalLM(_drop(config))), _ids()


def esm() -> Built:
    from transformers import EsmConfig, EsmForMaskedLM

    torch.manual_seed(0)
    config = EsmConfig(vocab_size=256, hidden_size=16, num_hidden_layers=2, num_attention_heads=2,
                       intermediate_size=32, max_position_embeddings=16, position_embedding_type="rotary",
                       token_dropout=False, pad_token_id=1, mask_token_id=255, emb_layer_norm_before=False)
    return _LogitsOf(EsmForMaskedLM(_drop(config))), _ids()


def wavlm() -> Built:
    from transformers import WavLMConfig, WavLMForCTC

    torch.manual_seed(0)
    config = WavLMConfig(vocab_size=12, hidden_size=16, num_hidden_layers=2, num_attention_heads=2,
                         intermediate_size=32, conv_dim=(8, 8), conv_stride=(4, 2), conv_kernel=(8, 4),
                         num_conv_pos_embeddings=4, num_conv_pos_embedding_groups=2, feat_extract_norm="group",
                         num_buckets=8, max_bucket_distance=20, mask_time_prob=0.0, mask_feature_prob=0.0,
                         layerdrop=0.0, hidden_dropout=0.0, attention_dropout=0.0, activation_dropout=0.0,
                         feat_proj_dropout=0.0, final_dropout=0.0, pad_token_id=0)
    return _LogitsOf(WavLMForCTC(config), "input_values"), (torch.randn(2, 160),)


def recurrent_gemma() -> Built:
    from transformers import RecurrentGemmaConfig, RecurrentGemmaForCausalLM

    torch.manual_seed(0)
    config = RecurrentGemmaConfig(vocab_size=256, hidden_size=16, intermediate_size=32, num_hidden_layers=3,
                                  num_attention_heads=2, num_key_value_heads=1, lru_width=16, attention_window_size=4,
                                  conv1d_width=3, block_types=("recurrent", "attention"), logits_soft_cap=20.0,
                                  pad_token_id=0, bos_token_id=1, eos_token_id=2)
    return _LogitsOf(RecurrentGemmaForCausalLM(_drop(config))), _ids()


def mbart() -> Built:
    from transformers import MBartConfig, MBartForConditionalGeneration

    torch.manual_seed(0)
    config = MBartConfig(vocab_size=256, d_model=16, encoder_layers=1, decoder_layers=1, encoder_attention_heads=2,
                         decoder_attention_heads=2, encoder_ffn_dim=32, decoder_ffn_dim=32,
                         max_position_embeddings=16, scale_embedding=True, pad_token_id=1,
                         decoder_start_token_id=2)
    return _TeacherForced(MBartForConditionalGeneration(_drop(config))), (torch.randint(3, 256, (2, 8)),)
