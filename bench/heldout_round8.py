"""Held-out training round 8 (issue 27; bench/train_heldout.py imports these).

Training programs no test or bench wrote before (rounds 1-7 read first),
chosen for mechanisms those rounds did not train. transformers at tiny sizes:
Swin (shifted windows by torch.roll, a relative position bias table indexed
by a buffer, the shift's attention mask), Longformer (sliding-chunk local
attention by as_strided, global attention on the first token), Wav2Vec2 with
a CTC loss (a strided Conv1d feature extractor with GroupNorm, a grouped
positional convolution under weight norm, F.ctc_loss; and the same model under a
per-frame cross entropy), XLNet (relative
attention with its rel_shift), ConvBERT (span-based dynamic convolution by
unfold, grouped linear layers) and BEiT (relative position bias, layer scale,
mean pooling). By hand: embeddings with padding_idx and scale_grad_by_freq,
with and without max_norm (rows renormalized in place in the forward); one parameter
used by a float32 and a bf16 path; integer buffers the forward updates (a step
count, an id histogram) that the loss then reads; a siamese encoder under
triplet-margin, cosine-embedding and margin-ranking losses; PReLU, SELU, CELU,
GLU, Softsign, Hardtanh, LogSigmoid, the shrinks and Threshold; a sampled
softmax over logits picked by torch.gather; nn.MultiheadAttention with a
key_padding_mask and its per-head weights in the loss; Longformer-style
banded attention by Tensor.unfold; a Student-t likelihood head (lgamma); a
spatial transformer (affine_grid, grid_sample); prototypes by torch.cdist;
sort, topk, cumprod and logcumsumexp; nn.Bilinear with F.unfold / F.fold; an
LSTM with proj_size; torch's nn.TransformerDecoder with causal and padding masks.
Random init, dropout p=0; each model takes one input tensor (the matrix's
batch maker) and makes what else it needs from fixed buffers.
"""

from __future__ import annotations

import math

import torch
from torch import nn
from torch.nn import functional as F

Built = tuple[nn.Module, tuple[torch.Tensor, ...]]


class _LogitsOf(nn.Module):
    """A transformers model's logits for one keyword input."""

    def __init__(self, model: nn.Module, key: str = "input_ids") -> None:
        super().__init__()
        self.model, self.key = model, key

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.model(**{self.key: x}).logits


def swin() -> Built:
    from transformers import SwinConfig, SwinForImageClassification

    torch.manual_seed(0)
    config = SwinConfig(image_size=16, patch_size=2, num_channels=3, embed_dim=8, depths=[2, 1], num_heads=[2, 2],
                        window_size=2, mlp_ratio=2.0, drop_path_rate=0.0, num_labels=5)
    return _LogitsOf(SwinForImageClassification(config), "pixel_values"), (torch.randn(2, 3, 16, 16),)


def longformer() -> Built:
    from transformers import LongformerConfig, LongformerForSequenceClassification

    torch.manual_seed(0)
    config = LongformerConfig(vocab_size=256, hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                              intermediate_size=32, attention_window=4, max_position_embeddings=32,
                              pad_token_id=1, num_labels=5, hidden_dropout_prob=0.0,
                              attention_probs_dropout_prob=0.0)
    return _LogitsOf(LongformerForSequenceClassification(config)), (torch.randint(3, 256, (2, 8)),)


CTC_CLASSES, CTC_TARGET = 8, 4


def wav2vec2_ctc() -> Built:
    from transformers import Wav2Vec2Config, Wav2Vec2ForCTC

    torch.manual_seed(0)
    config = Wav2Vec2Config(vocab_size=CTC_CLASSES, hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                            intermediate_size=32, conv_dim=(8, 8), conv_stride=(4, 2), conv_kernel=(8, 4),
                            num_conv_pos_embeddings=4, num_conv_pos_embedding_groups=2, feat_extract_norm="group",
                            mask_time_prob=0.0, mask_feature_prob=0.0, layerdrop=0.0, hidden_dropout=0.0,
                            attention_dropout=0.0, activation_dropout=0.0, feat_proj_dropout=0.0,
                            final_dropout=0.0, pad_token_id=0)
    return _LogitsOf(Wav2Vec2ForCTC(config), "input_values"), (torch.randn(2, 160),)


def ctc(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """CTC over the frames' log-probabilities; each sample's target is CTC_TARGET non-blank
    symbols counted up from its label (repeats and all lengths fixed), blank 0."""
    steps = torch.arange(CTC_TARGET, device=labels.device)
    targets = (labels.view(-1, 1) + steps) % (CTC_CLASSES - 1) + 1
    log_probs = F.log_softmax(logits, -1).transpose(0, 1)
    frames = torch.full((logits.shape[0],), logits.shape[1], dtype=torch.long)
    lengths = torch.full((logits.shape[0],), CTC_TARGET, dtype=torch.long)
    return F.ctc_loss(log_probs, targets, frames, lengths, blank=0, reduction="mean")


def frame_loss(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """Per-frame cross entropy (the wav2vec2 model without CTC, which torch.export refuses):
    each frame's class is the label at its index in the sample's labels."""
    return F.cross_entropy(logits.flatten(0, 1), labels[:, : logits.shape[1]].flatten())


def xlnet() -> Built:
    from transformers import XLNetConfig, XLNetLMHeadModel

    torch.manual_seed(0)
    config = XLNetConfig(vocab_size=256, d_model=16, n_layer=1, n_head=2, d_inner=32, dropout=0.0, mem_len=None,
                         use_mems_train=False)
    return _LogitsOf(XLNetLMHeadModel(config)), (torch.randint(0, 256, (2, 8)),)


def convbert() -> Built:
    from transformers import ConvBertConfig, ConvBertForSequenceClassification

    torch.manual_seed(0)
    config = ConvBertConfig(vocab_size=256, hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                            intermediate_size=32, embedding_size=16, head_ratio=2, conv_kernel_size=3,
                            num_groups=2, max_position_embeddings=16, num_labels=5, hidden_dropout_prob=0.0,
                            attention_probs_dropout_prob=0.0)
    return _LogitsOf(ConvBertForSequenceClassification(config)), (torch.randint(0, 256, (2, 8)),)


def beit() -> Built:
    from transformers import BeitConfig, BeitForImageClassification

    torch.manual_seed(0)
    config = BeitConfig(image_size=8, patch_size=4, num_channels=3, hidden_size=16, num_hidden_layers=2,
                        num_attention_heads=2, intermediate_size=32, use_relative_position_bias=True,
                        use_mean_pooling=True, layer_scale_init_value=0.1, num_labels=5,
                        hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0, drop_path_rate=0.0)
    return _LogitsOf(BeitForImageClassification(config), "pixel_values"), (torch.randn(2, 3, 8, 8),)


class _Embeddings(nn.Module):
    """Two embeddings: one with padding_idx 0 (and, in `renorm_embedding`, max_norm 1: the rows a
    forward reads renormalized in place, under no_grad, before the lookup), one with padding_idx
    3 and scale_grad_by_freq over ids that repeat; the last two positions are padding."""

    def __init__(self, max_norm: float | None) -> None:
        super().__init__()
        self.words = nn.Embedding(256, 12, padding_idx=0, max_norm=max_norm)
        with torch.no_grad():
            self.words.weight.mul_(2.0)
        self.kinds = nn.Embedding(8, 12, padding_idx=3, scale_grad_by_freq=True)
        self.mix = nn.Linear(12, 12)
        self.head = nn.Linear(12, 256)
        self.register_buffer("tail", torch.arange(8) >= 6, persistent=False)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        ids = ids.masked_fill(self.tail, 0)
        h = self.words(ids) + self.kinds(ids % 8)
        return self.head(torch.tanh(self.mix(h)))


def renorm_embedding() -> Built:
    torch.manual_seed(0)
    return _Embeddings(max_norm=1.0), (torch.randint(0, 256, (2, 8)),)


def freq_embedding() -> Built:
    torch.manual_seed(0)
    return _Embeddings(max_norm=None), (torch.randint(0, 256, (2, 8)),)


class _MixedPaths(nn.Module):
    """One weight used twice: in float32 on the input, and cast to bfloat16 (with the
    activations) in a second path whose result is cast back and added."""

    def __init__(self) -> None:
        super().__init__()
        self.shared = nn.Parameter(torch.randn(16, 16) / 4)
        self.inp, self.head = nn.Linear(10, 16), nn.Linear(16, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.relu(self.inp(x))
        full = h @ self.shared.t()
        low = (h.bfloat16() @ self.shared.bfloat16().t()).float()
        return self.head(torch.tanh(full) + 0.5 * torch.sigmoid(low))


def mixed_paths() -> Built:
    torch.manual_seed(0)
    return _MixedPaths(), (torch.randn(6, 10),)


class _IntCounters(nn.Module):
    """Integer buffers the forward updates in place and then reads: a step count (an EMA of
    the batch means debiased by 1 - 0.9^steps, as Adam debiases) and a histogram of the
    token ids seen (index_add_ of ones), whose inverse square root scales each embedding."""

    def __init__(self) -> None:
        super().__init__()
        self.embed, self.proj, self.head = nn.Embedding(32, 12), nn.Linear(12, 12), nn.Linear(12, 5)
        self.register_buffer("steps", torch.zeros((), dtype=torch.long))
        self.register_buffer("seen", torch.zeros(32, dtype=torch.long))
        self.register_buffer("ema", torch.zeros(12))

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        ids = ids % 32
        self.steps += 1
        self.seen.index_add_(0, ids.flatten(), torch.ones_like(ids.flatten()))
        h = self.embed(ids) * (1 + self.seen[ids]).float().rsqrt().unsqueeze(-1)
        h = torch.tanh(self.proj(h)).mean(1)
        self.ema.mul_(0.9).add_(0.1 * h.detach().mean(0))
        debiased = self.ema / (1 - 0.9 ** self.steps.float())
        return self.head(h - debiased)


def int_counters() -> Built:
    torch.manual_seed(0)
    return _IntCounters(), (torch.randint(0, 256, (4, 6)),)


class _Siamese(nn.Module):
    """One encoder applied to an anchor, a positive (the anchor plus a fixed shift) and a
    negative (the batch rolled by one: each row's negative is another row)."""

    def __init__(self) -> None:
        super().__init__()
        self.encoder = nn.Sequential(nn.Linear(14, 24), nn.GELU(), nn.LayerNorm(24), nn.Linear(24, 8))
        self.register_buffer("jitter", 0.1 * torch.randn(1, 14, generator=torch.Generator().manual_seed(5)),
                             persistent=False)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        return self.encoder(x), self.encoder(x + self.jitter), self.encoder(x.roll(1, 0))


def metric_loss(outputs: tuple[torch.Tensor, torch.Tensor, torch.Tensor], labels: torch.Tensor) -> torch.Tensor:
    """Triplet margin (p=2, swap), cosine embedding (pairs marked similar or not by the labels)
    and margin ranking of the anchor-positive over the anchor-negative cosine similarity."""
    anchor, positive, negative = outputs
    sign = labels.to(anchor.dtype) * 2 - 1
    near, far = F.cosine_similarity(anchor, positive), F.cosine_similarity(anchor, negative)
    return (F.triplet_margin_loss(anchor, positive, negative, margin=0.5, swap=True)
            + F.cosine_embedding_loss(anchor, negative, sign, margin=0.2)
            + F.margin_ranking_loss(near, far, torch.ones_like(near), margin=0.1))


def metric_siamese() -> Built:
    torch.manual_seed(0)
    return _Siamese(), (torch.randn(6, 14),)


def activation_zoo() -> Built:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(12, 16), nn.PReLU(16, 0.2), nn.Linear(16, 16), nn.SELU(), nn.Linear(16, 16),
                          nn.CELU(0.5), nn.Linear(16, 32), nn.GLU(), nn.Softsign(), nn.Linear(16, 16),
                          nn.Hardtanh(-0.5, 0.8), nn.Linear(16, 16), nn.LogSigmoid(), nn.Softshrink(0.3),
                          nn.Linear(16, 16), nn.Tanhshrink(), nn.Hardshrink(0.05), nn.Linear(16, 16),
                          nn.Threshold(0.1, -0.2), nn.PReLU(), nn.Linear(16, 5))
    return model, (torch.randn(6, 12),)


class _SampledLM(nn.Module):
    """A small causal LM (GRU) whose logits the loss samples from (`sampled_softmax`)."""

    def __init__(self) -> None:
        super().__init__()
        self.embed, self.rnn, self.head = nn.Embedding(256, 12), nn.GRU(12, 16, batch_first=True), nn.Linear(16, 64)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        return self.head(self.rnn(self.embed(ids))[0])


def sampled_softmax(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """Every other position (index_select), the label's logit and four fixed negatives per
    position picked by torch.gather, cross entropy with the true class first."""
    positions = torch.arange(0, logits.shape[1], 2, device=logits.device)
    picked, labels = logits.index_select(1, positions), labels.index_select(1, positions)
    offsets = torch.tensor([0, 7, 19, 31, 45], device=logits.device)
    candidates = (labels.unsqueeze(-1) + offsets) % logits.shape[-1]
    chosen = picked.gather(-1, candidates)
    return F.cross_entropy(chosen.flatten(0, 1), torch.zeros(chosen.shape[0] * chosen.shape[1], dtype=torch.long))


def gathered_loss() -> Built:
    torch.manual_seed(0)
    return _SampledLM(), (torch.randint(0, 256, (2, 8)),)


class _PaddedAttention(nn.Module):
    """nn.MultiheadAttention (batch_first) with a boolean key_padding_mask (rows of lengths 8
    and 5) and a float attn_mask, its per-head weights returned for an entropy term."""

    def __init__(self) -> None:
        super().__init__()
        self.embed, self.attn = nn.Embedding(256, 16), nn.MultiheadAttention(16, 2, batch_first=True)
        self.norm, self.head = nn.LayerNorm(16), nn.Linear(16, 256)
        self.register_buffer("padding", torch.arange(8) >= torch.tensor([[8], [5]]), persistent=False)
        self.register_buffer("bias", -0.1 * (torch.arange(8)[:, None] - torch.arange(8)).abs().float(),
                             persistent=False)

    def forward(self, ids: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        h = self.embed(ids)
        out, weights = self.attn(h, h, h, key_padding_mask=self.padding, attn_mask=self.bias,
                                 need_weights=True, average_attn_weights=False)
        return self.head(self.norm(h + out)), weights


def lm_plus_entropy(outputs: tuple[torch.Tensor, torch.Tensor], labels: torch.Tensor) -> torch.Tensor:
    """Per-token cross entropy plus 0.01 x the attention weights' mean entropy (zeros at padding)."""
    logits, weights = outputs
    entropy = -(weights * weights.clamp_min(1e-9).log()).sum(-1).mean()
    return F.cross_entropy(logits.flatten(0, 1), labels.flatten()) + 0.01 * entropy


def mha_padding() -> Built:
    torch.manual_seed(0)
    return _PaddedAttention(), (torch.randint(0, 256, (2, 8)),)


class _BandedAttention(nn.Module):
    """Longformer-style local attention written by hand: keys and values padded by the window
    and cut into per-position windows by Tensor.unfold, a mask for the padding, the first
    token attending globally (and attended by all) through an added dense term."""

    def __init__(self, width: int = 16, window: int = 2, seq: int = 8) -> None:
        super().__init__()
        self.window = window
        self.embed, self.qkv = nn.Embedding(256, width), nn.Linear(width, 3 * width)
        self.out, self.head = nn.Linear(width, width), nn.Linear(width, 256)
        self.norm = nn.LayerNorm(width)
        index = torch.arange(seq)[:, None] + torch.arange(-window, window + 1)
        self.register_buffer("outside", (index < 0) | (index >= seq), persistent=False)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        h = self.embed(ids)
        q, k, v = self.qkv(h).chunk(3, -1)
        w = self.window
        keys = F.pad(k, (0, 0, w, w)).unfold(1, 2 * w + 1, 1)  # [b, t, d, 2w+1]
        values = F.pad(v, (0, 0, w, w)).unfold(1, 2 * w + 1, 1)
        scores = torch.einsum("btd,btdw->btw", q, keys) / q.shape[-1] ** 0.5
        glob = (q * k[:, :1]).sum(-1, keepdim=True) / q.shape[-1] ** 0.5
        scores = torch.cat([scores.masked_fill(self.outside, float("-inf")), glob], -1)
        probs = scores.softmax(-1)
        local = torch.einsum("btw,btdw->btd", probs[..., :-1], values) + probs[..., -1:] * v[:, :1]
        first = F.scaled_dot_product_attention(q[:, :1], k, v)
        local = torch.cat([first, local[:, 1:]], 1)
        return self.head(self.norm(h + self.out(local)))


def local_attention() -> Built:
    torch.manual_seed(0)
    return _BandedAttention(), (torch.randint(0, 256, (2, 8)),)


class _StudentTHead(nn.Module):
    """A forecaster whose head gives a Student-t's degrees of freedom, location and scale
    (softplus-positive) per series (`student_t_nll`)."""

    def __init__(self) -> None:
        super().__init__()
        self.trunk = nn.Sequential(nn.Linear(12, 24), nn.SiLU(), nn.Linear(24, 24), nn.SiLU())
        self.params = nn.Linear(24, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        raw = self.params(self.trunk(x))
        return torch.stack([2 + F.softplus(raw[:, 0]), raw[:, 1], F.softplus(raw[:, 2]) + 1e-3], -1)


def student_t_nll(params: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """The negative log-likelihood of targets (label / 2 - 1) under the predicted Student-t,
    written out as torch.distributions.StudentT.log_prob computes it (lgamma of the degrees of
    freedom, log1p). (StudentT itself is not exported: its Chi2 validates its arguments by
    default, a branch on the tensors' values, even with validate_args=False on the StudentT.)"""
    df, loc, scale = params.unbind(-1)
    y = (labels.to(params.dtype) / 2 - 1 - loc) / scale
    z = scale.log() + 0.5 * df.log() + 0.5 * math.log(math.pi) + torch.lgamma(0.5 * df) - torch.lgamma(0.5 * (df + 1))
    return (0.5 * (df + 1) * torch.log1p(y**2 / df) + z).mean()


def student_t_head() -> Built:
    torch.manual_seed(0)
    return _StudentTHead(), (torch.randn(6, 12),)


class _SpatialTransformer(nn.Module):
    """A spatial transformer: a localization net predicts an affine matrix (started at the
    identity), F.affine_grid and F.grid_sample (bilinear, border padding) resample the image."""

    def __init__(self) -> None:
        super().__init__()
        self.locate = nn.Sequential(nn.Conv2d(3, 4, 3, stride=2, padding=1), nn.ReLU(), nn.Flatten(),
                                    nn.Linear(64, 6))
        with torch.no_grad():
            self.locate[-1].weight.mul_(0.05)
            self.locate[-1].bias.copy_(torch.tensor([1.0, 0.0, 0.0, 0.0, 1.0, 0.0]))
        self.conv, self.head = nn.Conv2d(3, 6, 3, padding=1), nn.Linear(6, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        theta = self.locate(x).view(-1, 2, 3)
        grid = F.affine_grid(theta, list(x.shape), align_corners=False)
        warped = F.grid_sample(x, grid, mode="bilinear", padding_mode="border", align_corners=False)
        return self.head(F.relu(self.conv(warped)).mean((2, 3)))


def spatial_transformer() -> Built:
    torch.manual_seed(0)
    return _SpatialTransformer(), (torch.randn(2, 3, 8, 8),)


class _Prototypes(nn.Module):
    """A prototypical classifier: embeddings against learned class prototypes by torch.cdist
    (p=2), logits the negative squared distances over a learned temperature."""

    def __init__(self) -> None:
        super().__init__()
        self.embed = nn.Sequential(nn.Linear(10, 20), nn.Tanh(), nn.Linear(20, 6))
        self.prototypes = nn.Parameter(torch.randn(5, 6))
        self.log_temperature = nn.Parameter(torch.zeros(()))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return -torch.cdist(self.embed(x), self.prototypes).pow(2) / self.log_temperature.exp()


def cdist_prototypes() -> Built:
    torch.manual_seed(0)
    return _Prototypes(), (torch.randn(6, 10),)


class _ProjectedLstm(nn.Module):
    """nn.LSTM with a projection (proj_size, LSTMP) over two layers, per-token classes."""

    def __init__(self) -> None:
        super().__init__()
        self.embed = nn.Embedding(256, 10)
        self.lstm = nn.LSTM(10, 16, num_layers=2, proj_size=6, batch_first=True)
        self.head = nn.Linear(6, 7)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        return self.head(self.lstm(self.embed(ids))[0])


def lstm_projection() -> Built:
    torch.manual_seed(0)
    return _ProjectedLstm(), (torch.randint(0, 256, (2, 6)),)


class _OrderOps(nn.Module):
    """Order statistics and scans: features sorted (values, descending), the top 3 by topk, a
    cumulative product of gates and a logcumsumexp, each differentiated through."""

    def __init__(self) -> None:
        super().__init__()
        self.a, self.b, self.head = nn.Linear(8, 12), nn.Linear(8, 12), nn.Linear(12 + 3 + 12 + 12, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.a(x)
        ordered = h.sort(-1, descending=True).values
        top = h.topk(3, -1).values
        gates = torch.sigmoid(self.b(x)).cumprod(-1)
        scan = h.logcumsumexp(-1)
        return self.head(torch.cat([ordered * 0.5, top, gates, scan], -1))


def order_ops() -> Built:
    torch.manual_seed(0)
    return _OrderOps(), (torch.randn(6, 8),)


class _BilinearFold(nn.Module):
    """nn.Bilinear between two views of the input, and patches cut by F.unfold (im2col), mixed
    by a Linear and put back by F.fold (overlapping patches summed)."""

    def __init__(self) -> None:
        super().__init__()
        self.bilinear = nn.Bilinear(12, 8, 6)
        self.mix = nn.Linear(2 * 9, 2 * 9)
        self.head = nn.Linear(6 + 2 * 6 * 6, 5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        flat = x.flatten(1)
        pair = self.bilinear(flat[:, :12], flat[:, -8:])
        patches = F.unfold(x, 3, padding=1, stride=2)  # [b, 2*9, 9]
        mixed = self.mix(patches.transpose(1, 2)).transpose(1, 2)
        folded = F.fold(mixed, (6, 6), 3, padding=1, stride=2)
        return self.head(torch.cat([pair, folded.flatten(1)], 1))


def bilinear_fold() -> Built:
    torch.manual_seed(0)
    return _BilinearFold(), (torch.randn(4, 2, 6, 6),)


class _TorchDecoder(nn.Module):
    """torch's own nn.TransformerDecoder (pre-norm, GELU, batch_first) over a memory from an
    nn.TransformerEncoder, a causal tgt_mask and a memory_key_padding_mask."""

    def __init__(self) -> None:
        super().__init__()
        self.embed = nn.Embedding(256, 16)
        self.encoder = nn.TransformerEncoder(nn.TransformerEncoderLayer(16, 2, 32, 0.0, "gelu", batch_first=True,
                                                                        norm_first=True), 1,
                                             enable_nested_tensor=False)
        self.decoder = nn.TransformerDecoder(nn.TransformerDecoderLayer(16, 2, 32, 0.0, "gelu", batch_first=True,
                                                                        norm_first=True), 1)
        self.head = nn.Linear(16, 256)
        self.register_buffer("causal", nn.Transformer.generate_square_subsequent_mask(8), persistent=False)
        self.register_buffer("padding", torch.arange(8) >= torch.tensor([[8], [6]]), persistent=False)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        memory = self.encoder(self.embed(ids.flip(1)), src_key_padding_mask=self.padding)
        out = self.decoder(self.embed(ids), memory, tgt_mask=self.causal, tgt_is_causal=True,
                           memory_key_padding_mask=self.padding)
        return self.head(out)


def torch_decoder() -> Built:
    torch.manual_seed(0)
    return _TorchDecoder(), (torch.randint(0, 256, (2, 8)),)
