"""Held-out training models (issue 27): forms no test writes, trained a few
steps of SGD and of AdamW in float32 through `rducc.compile_training` against
eager PyTorch and torch.optim on the same batches, on one socket and at dp=2 /
tp=2 on sn40l-8, with the float32 matrix's verdict (`bench/train_matrix.py`:
losses within rtol 1e-5 at every step, parameters within rtol 1e-4 after the
last, `training_cases.assert_matches`) and, here, every floating buffer the
forward updates (batch norm's running statistics, an EMA) held to the same bar.

    .venv/bin/python bench/train_heldout.py [--models widths_37,...] [--optimizers sgd,adamw]
        [--levels 2] [--splits 1,dp2,tp2] [--steps 4] [--dynamo-only --levels 0]
        [--microbatches 2 --max-grad-norm 0.5]

`--optimizers` also takes `sgd_nesterov` (training_cases') and `adamw_groups`
(decay on matrices only, a second group with its own lr: `decay_groups`);
`--microbatches K --max-grad-norm C` accumulate each batch's gradients over K
chunks and clip them before the update, in eager (`training_cases.Around`) as
through `compile_training(microbatches=K, max_grad_norm=C)`.

The models (small configs, random init, dropout p=0; transformers at tiny sizes):
- widths_37: an MLP 37 -> 128 -> 19 -> 64 -> 3 (SiLU, ReLU, ELU; a width per layer).
- mobilenet_block: a MobileNetV3-style inverted residual (bias-free convolutions,
  batch norm in train mode, hardswish, a depthwise convolution, a
  squeeze-excitation gate with hardsigmoid, a residual).
- convnext_block: a timm-style ConvNeXt block (patchify stem, 7x7 depthwise
  convolution, channels-last LayerNorm, pointwise Linear + GELU, layer scale).
- frozen_tied_lm: a language model whose output head is its embedding (tied)
  and whose first block and final norm are frozen (requires_grad=False).
- gated_loop: a hand-written gated recurrence unrolled over the sequence
  (sigmoid gates, tanh, shared weights every step), a loss with ignore_index
  and label smoothing.
- ema_buffers: batch norm (running statistics) and a buffer the forward
  updates in place (an EMA of the activations) and then reads.
- t5: transformers' T5 (encoder-decoder, relative position bias, tied
  embeddings, decoder inputs shifted right).
- qwen2: transformers' Qwen2 (q/k/v biases, grouped-query attention, tied embeddings).
- mistral_window: transformers' Mistral with a sliding window shorter than the sequence.
- albert: transformers' ALBERT (one layer's weights shared by every layer,
  factorized embeddings), sequence classification.
- falcon: transformers' Falcon (multi-query attention, attention and MLP in
  parallel off one LayerNorm, rotary positions).
- skip_unet: a U-Net (strided convolutions down, transposed convolutions up,
  GroupNorm, SiLU, skip features concatenated along channels), pixel-averaged classes.
- width_stages: token stages whose width, head count and MLP width change from
  stage to stage (24/3 heads, 40/5 heads, 16/2 heads; nn.MultiheadAttention),
  joined by linear projections.
- gemma: transformers' Gemma (GeGLU with tanh GELU, RMSNorm times 1 + weight,
  embeddings scaled by sqrt(width), one key/value head, tied embeddings).
- phi: transformers' Phi (partial rotary, attention and MLP in parallel off one
  LayerNorm, q/k LayerNorm, biases, gelu_new).
- bloom: transformers' BLOOM (ALiBi position biases, a LayerNorm after the embedding, fused qkv).
- distilbert: transformers' DistilBERT (sinusoidal positions, no token types), sequence classification.
- qwen3: transformers' Qwen3 (per-head q/k RMSNorm, head_dim wider than width / heads, GQA, tied embeddings).
- deberta_v2: transformers' DeBERTa-v2 (disentangled relative attention, c2p and
  p2c, log position buckets, no absolute positions), sequence classification.
- resnet_layout: torchvision's resnet18 layout at small widths (a 7x7 stride-2
  stem, a max pool, basic blocks with a strided 1x1 shortcut, batch norm in train mode).
- audio_encoder: a Whisper-like encoder (Conv1d stem with GELU, the second
  strided, fixed sinusoidal positions, pre-norm nn.TransformerEncoder).
- shared_mlm: a masked language model: one block's weights applied three
  times, tied input/output embeddings, padding_idx, einsum attention with a
  key padding mask; cross entropy over every third position (-100 elsewhere).
- two_heads: a frozen backbone (requires_grad=False) under a trained trunk with
  two heads; label-smoothed cross entropy plus 0.5 x BCE-with-logits.
- weight_norm_up: weight-normalized convolutions
  (nn.utils.parametrizations.weight_norm), LeakyReLU, nearest F.interpolate, pixel_shuffle.
- linear_attention: causal linear attention (elu + 1 features, running sums by
  cumsum), a hand-written RMSNorm, a SwiGLU MLP, per-token classes.
Round 4:
- gptj: transformers' GPT-J (rotary on the first 4 of each head's dims, rotated
  in interleaved pairs; attention and MLP in parallel off one LayerNorm).
- persimmon: transformers' Persimmon (squared ReLU, q/k LayerNorm, partial rotary, fused qkv).
- mamba: transformers' Mamba (its PyTorch path: causal depthwise Conv1d,
  selective scan as a loop over the sequence, no attention).
- gpt_neo: transformers' GPT-Neo (global and local attention layers, window 3).
- mobilebert: transformers' MobileBERT (bottlenecks, NoNorm, stacked FFNs), sequence classification.
- funnel: transformers' Funnel Transformer base (the sequence mean-pooled
  between blocks, relative positional attention), sequence classification.
- segformer: transformers' SegFormer (overlapping patch convolutions, attention
  over a strided-convolution-reduced sequence, Mix-FFN with a depthwise convolution).
- wavenet: dilated causal Conv1d (F.pad on the left), gated tanh x sigmoid
  units, residual and skip sums; the last residual convolution reaches no loss.
- spectral_critic: spectral-normalized convolutions and Linear (a power
  iteration on buffers each forward), ReflectionPad2d, bilinear interpolate,
  avg_pool2d with ceil_mode.
- dlrm: DLRM-style nn.EmbeddingBag tables (sum, mean, max) of id bags, a bottom
  MLP, pairwise dot interactions (bmm, triu_indices), a top MLP.
- switch_moe: a hand-written top-2 mixture of experts (softmax router, topk,
  scatter into a dense gate) returning (logits, load-balancing loss).
- tied_shapes: one weight used as a Linear's, as a Conv1d kernel (unsqueezed)
  and transposed as a second projection.
- perceiver: a learned latent array expanded over the batch cross-attends to
  the inputs (nn.MultiheadAttention with kdim = vdim != embed_dim).
- selective_scan: a Mamba-like selective state space layer written by hand
  (softplus step sizes, exp(dt A) decay, a loop over the sequence).
Round 5 (theld14):
- electra_rtd: transformers' ELECTRA discriminator (factorized embeddings),
  per-token binary cross entropy (replaced-token detection).
- stablelm: transformers' StableLM (partial rotary 0.25, per-head q/k
  LayerNorm, parallel residual, qkv biases).
- cohere: transformers' Cohere (logit scale, interleaved rotary, bias-free
  LayerNorm, attention and MLP in parallel, tied embeddings).
- lstm_cells: two nn.LSTMCells stepped by hand over the sequence, widths 12 -> 20 -> 16.
- efficient_channels_last: EfficientNet-style MBConv blocks (SiLU,
  squeeze-excitation, batch norm in train mode, kernels 3 and 5, widths
  8 -> 16 -> 16 -> 24), weights and input channels-last.
Round 6 (theld15):
- convnext_v2: transformers' ConvNeXt-V2 (global response normalization,
  channels-last LayerNorm, stages 8 -> 16 wide), image classification, train mode.
- shuffle_units: ShuffleNetV2 units as torchvision writes them (channel split by
  chunk, channel shuffle by view / transpose / view, depthwise convolutions,
  batch norm in train mode; a stride-2 unit with two branches), widths 8 -> 24 -> 24.
- checkpointed_widths: pre-norm residual MLP blocks under
  torch.utils.checkpoint(use_reentrant=False), widths 20 -> 36 -> 12 -> 28
  joined by projections; cross entropy with label smoothing 0.1.
- bigru_tagger: a two-layer bidirectional nn.GRU (batch_first) over embeddings,
  per-token tags.
- mixtral_style_moe: a hand-written top-2 MoE as Mixtral routes it (softmax over
  all experts, top-2 renormalized, one-hot dispatch into a dense gate, SwiGLU
  experts mixed by one three-operand einsum, a hand-written RMSNorm), a frozen
  embedding (requires_grad=False) whose weights start the trained output head.

Round 7 (theld16; bench/heldout_round7.py): diffusers' UNet2DModel (a noise
prediction loss weighted per sample), UNet2DConditionModel (cross attention to a
learned text context), AutoencoderKL (reparameterized posterior, reconstruction
plus KL) and DiT (adaLN-zero, class and timestep conditioning): diffusers is a
local probe, not a dependency; naming one of these without it exits with one
message. transformers' BART (teacher forcing), BERT masked LM (ignore_index
labels, the tied decoder with its own bias), CLIP (symmetric contrastive loss,
logit_scale), Whisper (mel encoder, teacher-forced decoder), RWKV and Mixtral
(its router's load-balancing loss added to the loss). By hand: in-place ops on
activations and masks through torch.where (inplace_masks); GroupNorm,
InstanceNorm2d with running statistics and BatchNorm1d with momentum=None
(train_norms); scaled_dot_product_attention with a boolean mask, a learned float
mask and is_causal with a scale (sdpa_masks); one weight sliced by layers of
changing widths and a Linear called twice (shared_slices); a loss of five
terms with five reductions (multi_term); grouped, dilated, circular- and
replicate-padded convolutions, a grouped transposed convolution, PixelUnshuffle
(grouped_convs); a vector quantizer with the straight-through estimator
(vq_straight_through).

Round 8 (theld17; bench/heldout_round8.py, `--models round8`): transformers'
Swin (shifted windows by torch.roll, an indexed relative position bias),
Longformer (sliding-chunk attention; refused: transformers branches on
`.item()`), Wav2Vec2 under F.ctc_loss (refused: torch.export has no static
shape for `_ctc_loss`) and under a per-frame loss, XLNet (relative attention),
ConvBERT (span-based dynamic convolution), BEiT (relative position bias, layer
scale). By hand: embeddings with padding_idx and scale_grad_by_freq, with
max_norm (refused: the forward writes the trained weight) and without; one
weight in a float32 and a bf16 path; integer buffers the forward updates and
reads; triplet / cosine-embedding / margin-ranking losses on a siamese
encoder; an activation zoo (PReLU, SELU, CELU, GLU, shrinks, Threshold); a
sampled softmax by torch.gather; nn.MultiheadAttention with a
key_padding_mask and its weights in the loss; banded attention by
Tensor.unfold; a Student-t likelihood (lgamma); a spatial transformer
(affine_grid, grid_sample); prototypes by torch.cdist; sort / topk / cumprod /
logcumsumexp; nn.Bilinear with F.unfold / F.fold; an LSTM with proj_size;
torch's nn.TransformerDecoder with causal and padding masks.

Round 9 (theld18; bench/heldout_round9.py, `--models round9`): by hand, an MLP
512 -> 384 -> 256 -> 768 -> 10, convolutions whose channels go up and down
(3 -> 24 -> 64 -> 16 -> 48 -> 8, strided, batch norm), a causal transformer with
a different FFN width and head count per layer, Linear weights tied across
non-adjacent layers (and the embedding as the head), gradients through
torch.where / masked_fill / index_put(accumulate=True), every other layer frozen
with a frozen eval-mode batch norm and persistent and non-persistent buffers,
one block called at two depths, a custom autograd.Function, and
checkpoint_sequential; transformers' GPT-NeoX, OPT, MPNet, DINOv2, RoFormer,
MobileViT, LeViT, SqueezeBERT and FNet. `opt_125m` (OPT-125M at full size) is
run on its own: `python bench/heldout_round9.py --full-size`.

Round 10 (tround10; bench/heldout_round10.py, `--models round10`): by hand, a
stack whose width changes at every layer with a projected residual, parameters
frozen within a module (a bias, a norm's weight), an autoencoder whose
transposed convolutions reuse the encoder's kernels, gradients through gather /
take_along_dim / scatter_reduce (amax, mean) / where, an orthogonal
parametrization beside hook-style weight_norm, LocalResponseNorm / LayerNorm
over (C, H, W) / affine InstanceNorm1d / one-group GroupNorm, GRUCells stepped
by hand, fake quantization with a running abs-max buffer and a step counter,
two heads summed under class weights + label smoothing + ignore_index,
gradients where ReLU's zeros tie (max_pool2d, amax, maximum / minimum, clamp),
complex rotary (view_as_complex), Conv3d / trilinear / bicubic, diagonals,
torch.linalg.solve of a trained matrix;
transformers' CodeGen, MPT, Qwen2-MoE (batched_mm experts; `qwen2_moe_loop`,
the experts loop by nonzero, refused), Pegasus, Gemma2, ModernBERT,
PoolFormer and CvT; diffusers' UNet1DModel and VQModel.

Round 11 (theld20; bench/heldout_round11.py, `--models round11`): by hand, a
learned whitening by the Cholesky factor of a trained covariance, attention
written wholly in einsum with a learned relative bias, buffers the forward
updates by lerp_ / copy_ and then reads, an MLP autoencoder decoding by its
encoder's weights transposed, six torch losses summed, adaptive pooling to
sizes that do not divide the input, index_select / index_add / masked_scatter /
repeat_interleave, InfoNCE with a learned temperature, cummax / flip / roll, a
mixture-density likelihood, atan2 / hypot / expm1 / log1p / erf / a trained
exponent; transformers' RegNet, EfficientNet, MobileNetV2, Starcoder2, OLMo2,
Granite, Nemotron, ESM, WavLM (per-frame loss), RecurrentGemma and mBART.

Round 12 (theld21; bench/heldout_round12.py, `--models round12`), by hand:
widths that change layer to layer with zero-padded / sliced residuals, one
Parameter read as two Linear weights of different shapes (.view), a loss over
a masked subset by nanmean, an Euler integrator calling one submodule in a
Python loop, message passing by gather / scatter_add / scatter_reduce over a
fixed edge list, a frozen middle layer detached on half its channels.

Round 13 (theld22; bench/heldout_round13.py, `--models round13`): transformers'
DeepSeek-V2 (latent attention, shared experts), Cohere2, Swin-V2, Nystromformer,
Switch Transformers, LFM2, GPT-OSS and Llama 4 text; by hand, an MLP-Mixer with a
residual through permute to a grid, a shared layer applied a data-chosen number
of times per row (bucketize, where), distillation from a frozen teacher with
three weighted losses, an ArcFace margin (acos), mixup with probability
targets, focal + Dice, weight-standardized convolutions with a hypernetwork
head, EmbeddingBag with learned per_sample_weights, a bfloat16 middle block, a
bidirectional ReLU nn.RNN, a gradient penalty by autograd.grad in the forward.

Round 14 (tnew23; bench/heldout_round14.py, `--models round14`): transformers'
FocalNet, Hiera, Mamba2 and Gemma 3 text; diffusers' SD3 MMDiT and
AutoencoderTiny; by hand, ModuleDict activations / ParameterDict scales /
ParameterList biases over changing widths, max_unpool2d at max_pool2d's
indices, a gradient-reversal autograd.Function (refused by design), an
ensemble by vmap of functional_call, KAN B-spline layers, Gaussian NLL +
multilabel margin + Huber (torch's F.gaussian_nll_loss refused by
torch.export), baddbmm / tensordot / kron / block_diag / pdist (torch.cov
refused by torch.export), nested Sequentials sharing a submodule with
in-place activations, MoCo's EMA'd frozen encoder and key queue,
preallocated outputs filled by slice assignment.

Round 15 (tnew24; bench/heldout_round15.py, `--models round15`): the first
with torchvision's and timm's own classes (bench-only: `.venv/bin/pip install
--no-deps torchvision==0.28.0 timm`): torchvision's GoogLeNet with auxiliary
heads in train mode, SqueezeNet 1.1, MNASNet, ShuffleNetV2, EfficientNet of
mixed FusedMBConv / MBConv, RegNet; timm's ConvMixer, CoaT, LeViT and
MobileViT-v2; by hand, a tied autoencoder over changing widths, a neural ODE
by RK4 (one field called 4 x steps times), nested torch.utils.checkpoint
(and its reentrant form), CTC, triplet-with-distance + cosine embedding +
KL(log_target) losses, buffers updated in the forward (a counter, a running
max, a ring written at the counter's slot).

Round 16 (tnew25; bench/heldout_round16.py, `--models round16`): transformers
models computing their own loss from labels= (MarianMT, LongT5 local attention,
SigLIP's sigmoid loss, ViT-MAE pre-training), Jamba, xLSTM, Perceiver on bytes;
diffusers' Flux transformer; by hand, dict-returning blocks over a list of
widths with in-place activations, dataclass / NamedTuple / dict outputs under
three weighted losses, float64 parameters mid-stack, a weight and its transpose,
a frozen sub-module mid-stack (also under --max-grad-norm), torch.where-masked
per-token losses.

Round 17 (tnew27; bench/heldout_round17.py, `--models round17`): transformers'
Falcon-H1, Qwen3-Next, NLLB-MoE (own loss plus router losses), Parakeet (own
CTC), DINOv3 ViT, AST, ProphetNet; diffusers' Sana transformer; by hand, stages
in a ModuleDict with one Linear tied across equal widths and a checkpointed
stage, SDPA with a float mask from a learned bias table, parameters used twice
in one op, in-place ops on views, a complex64 buffer, Conv3d / LPPool / Softmin,
a per-pixel NLL + weighted BCE + multi-margin loss.

Not in CI (each cell compiles a step); CI checks the mechanisms these runs
fixed (test_training_heldout.py).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import torch
from torch import nn

sys.path.insert(0, str(Path(__file__).resolve().parent))

import heldout_round7 as round7  # noqa: E402
import heldout_round8 as round8  # noqa: E402
import heldout_round9 as round9  # noqa: E402
import heldout_round10 as round10  # noqa: E402
import heldout_round11 as round11  # noqa: E402
import heldout_round12 as round12  # noqa: E402
import heldout_round13 as round13  # noqa: E402
import heldout_round14 as round14  # noqa: E402
import heldout_round15 as round15  # noqa: E402
import heldout_round16 as round16  # noqa: E402
import heldout_round17 as round17  # noqa: E402
import train_matrix  # noqa: E402
from training_cases import OPTIMIZERS, Case, language_model_loss  # noqa: E402


class _Logits(nn.Module):
    """A transformers model's logits for `input_ids` (optionally with decoder inputs shifted right)."""

    def __init__(self, model: nn.Module, seq2seq: bool = False, key: str = "input_ids") -> None:
        super().__init__()
        self.model, self.seq2seq, self.key = model, seq2seq, key

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        if self.seq2seq:
            return self.model(input_ids=ids, decoder_input_ids=self.model._shift_right(ids)).logits
        return self.model(**{self.key: ids}).logits


def _ids(shape: tuple[int, ...] = (1, 8)) -> torch.Tensor:
    return torch.randint(0, 256, shape)


class _Widths(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.a, self.b = nn.Linear(37, 128), nn.Linear(128, 19)
        self.c, self.d = nn.Linear(19, 64), nn.Linear(64, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.d(nn.functional.elu(self.c(torch.relu(self.b(nn.functional.silu(self.a(x)))))))


def widths_37() -> tuple[nn.Module, tuple[torch.Tensor, ...]]:
    torch.manual_seed(0)
    return _Widths(), (torch.randn(5, 37),)


class _MobileNetBlock(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 8, 3, stride=2, padding=1, bias=False), nn.BatchNorm2d(8),
                                  nn.Hardswish())
        self.expand = nn.Sequential(nn.Conv2d(8, 16, 1, bias=False), nn.BatchNorm2d(16), nn.Hardswish())
        self.depthwise = nn.Sequential(nn.Conv2d(16, 16, 3, padding=1, groups=16, bias=False),
                                       nn.BatchNorm2d(16), nn.Hardswish())
        self.squeeze = nn.Sequential(nn.AdaptiveAvgPool2d(1), nn.Conv2d(16, 4, 1), nn.ReLU(),
                                     nn.Conv2d(4, 16, 1), nn.Hardsigmoid())
        self.project = nn.Sequential(nn.Conv2d(16, 8, 1, bias=False), nn.BatchNorm2d(8))
        self.head = nn.Linear(8, 5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.stem(x)
        e = self.depthwise(self.expand(h))
        h = h + self.project(e * self.squeeze(e))
        return self.head(nn.functional.adaptive_avg_pool2d(h, 1).flatten(1))


def mobilenet_block() -> tuple[nn.Module, tuple[torch.Tensor, ...]]:
    torch.manual_seed(0)
    return _MobileNetBlock(), (torch.randn(2, 3, 16, 16),)


class _ConvNeXtBlock(nn.Module):
    def __init__(self, dim: int = 16) -> None:
        super().__init__()
        self.stem = nn.Conv2d(3, dim, 4, stride=4)
        self.stem_norm = nn.LayerNorm(dim, eps=1e-6)
        self.dwconv = nn.Conv2d(dim, dim, 7, padding=3, groups=dim)
        self.norm = nn.LayerNorm(dim, eps=1e-6)
        self.pw1, self.pw2 = nn.Linear(dim, 4 * dim), nn.Linear(4 * dim, dim)
        self.gamma = nn.Parameter(torch.full((dim,), 0.1))
        self.head_norm, self.head = nn.LayerNorm(dim), nn.Linear(dim, 5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.stem_norm(self.stem(x).permute(0, 2, 3, 1)).permute(0, 3, 1, 2)
        y = self.dwconv(h).permute(0, 2, 3, 1)  # channels last
        y = self.gamma * self.pw2(nn.functional.gelu(self.pw1(self.norm(y))))
        h = h + y.permute(0, 3, 1, 2)
        return self.head(self.head_norm(h.mean((2, 3))))


def convnext_block() -> tuple[nn.Module, tuple[torch.Tensor, ...]]:
    torch.manual_seed(0)
    return _ConvNeXtBlock(), (torch.randn(2, 3, 16, 16),)


class _FrozenTiedLM(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.embed = nn.Embedding(256, 32)
        self.blocks = nn.ModuleList(
            nn.Sequential(nn.LayerNorm(32), nn.Linear(32, 64), nn.GELU(), nn.Linear(64, 32)) for _ in range(2))
        self.norm = nn.LayerNorm(32)
        self.head = nn.Linear(32, 256, bias=False)
        self.head.weight = self.embed.weight
        for parameter in [*self.blocks[0].parameters(), *self.norm.parameters()]:
            parameter.requires_grad_(False)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        h = self.embed(ids)
        for block in self.blocks:
            h = h + block(h)
        return self.head(self.norm(h))


def frozen_tied_lm() -> tuple[nn.Module, tuple[torch.Tensor, ...]]:
    torch.manual_seed(0)
    model = _FrozenTiedLM()
    with torch.no_grad():  # the frozen norm is not the identity
        model.norm.weight.uniform_(0.5, 1.5)
        model.norm.bias.uniform_(-0.1, 0.1)
    return model, (_ids((1, 8)),)


class _GatedLoop(nn.Module):
    def __init__(self, width: int = 16, classes: int = 7) -> None:
        super().__init__()
        self.embed = nn.Embedding(256, width)
        self.gate_x, self.gate_h = nn.Linear(width, 2 * width), nn.Linear(width, 2 * width, bias=False)
        self.cand_x, self.cand_h = nn.Linear(width, width), nn.Linear(width, width, bias=False)
        self.out = nn.Linear(width, classes)
        self.width = width

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        xs = self.embed(ids)
        h = xs.new_zeros(ids.shape[0], self.width)
        outputs = []
        for t in range(ids.shape[1]):
            update, reset = torch.sigmoid(self.gate_x(xs[:, t]) + self.gate_h(h)).chunk(2, dim=-1)
            candidate = torch.tanh(self.cand_x(xs[:, t]) + self.cand_h(reset * h))
            h = (1 - update) * h + update * candidate
            outputs.append(self.out(h))
        return torch.stack(outputs, dim=1)


def gated_loop() -> tuple[nn.Module, tuple[torch.Tensor, ...]]:
    torch.manual_seed(0)
    return _GatedLoop(), (_ids((2, 6)),)


def smoothed_ignoring_loss(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """Per-token cross entropy, class 0 ignored (padding), label smoothing 0.1."""
    return nn.functional.cross_entropy(logits.flatten(0, 1), labels.flatten(), ignore_index=0,
                                       label_smoothing=0.1)


class _EmaBuffers(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.inp, self.norm = nn.Linear(12, 24), nn.BatchNorm1d(24)
        self.out = nn.Linear(24, 4)
        self.register_buffer("ema", torch.zeros(24))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.relu(self.norm(self.inp(x)))
        self.ema.mul_(0.9).add_(0.1 * h.detach().mean(0))
        return self.out(h - self.ema)


def ema_buffers() -> tuple[nn.Module, tuple[torch.Tensor, ...]]:
    torch.manual_seed(0)
    return _EmaBuffers(), (torch.randn(6, 12),)


def t5() -> tuple[nn.Module, tuple[torch.Tensor, ...]]:
    from transformers import T5Config, T5ForConditionalGeneration

    torch.manual_seed(0)
    config = T5Config(vocab_size=256, d_model=32, d_kv=8, d_ff=64, num_layers=2, num_decoder_layers=1,
                      num_heads=4, relative_attention_num_buckets=8, relative_attention_max_distance=16,
                      dropout_rate=0.0, decoder_start_token_id=0, pad_token_id=0)
    return _Logits(T5ForConditionalGeneration(config), seq2seq=True), (_ids((1, 8)),)


def qwen2() -> tuple[nn.Module, tuple[torch.Tensor, ...]]:
    from transformers import Qwen2Config, Qwen2ForCausalLM

    torch.manual_seed(0)
    config = Qwen2Config(vocab_size=256, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=32,
                         tie_word_embeddings=True)
    return _Logits(Qwen2ForCausalLM(config)), (_ids((1, 8)),)


def mistral_window() -> tuple[nn.Module, tuple[torch.Tensor, ...]]:
    from transformers import MistralConfig, MistralForCausalLM

    torch.manual_seed(0)
    config = MistralConfig(vocab_size=256, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                           num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=32,
                           sliding_window=4)
    return _Logits(MistralForCausalLM(config)), (_ids((1, 8)),)


def albert() -> tuple[nn.Module, tuple[torch.Tensor, ...]]:
    from transformers import AlbertConfig, AlbertForSequenceClassification

    torch.manual_seed(0)
    config = AlbertConfig(vocab_size=256, embedding_size=16, hidden_size=32, num_hidden_layers=3,
                          num_attention_heads=4, intermediate_size=48, max_position_embeddings=16,
                          num_labels=5, hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0,
                          classifier_dropout_prob=0.0)
    return _Logits(AlbertForSequenceClassification(config)), (_ids((2, 8)),)



def falcon() -> tuple[nn.Module, tuple[torch.Tensor, ...]]:
    from transformers import FalconConfig, FalconForCausalLM

    torch.manual_seed(0)
    config = FalconConfig(vocab_size=256, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                          multi_query=True, parallel_attn=True, new_decoder_architecture=False, bias=True,
                          alibi=False, hidden_dropout=0.0, attention_dropout=0.0, max_position_embeddings=32)
    return _Logits(FalconForCausalLM(config)), (_ids((2, 8)),)


class _SkipUNet(nn.Module):
    """Two down levels (strided convolution, GroupNorm, SiLU), a bottleneck, and two
    up levels (transposed convolution) that concatenate the matching down level's
    features along channels; a 1x1 convolution to classes, averaged over pixels."""

    def __init__(self, classes: int = 4) -> None:
        super().__init__()

        def block(cin: int, cout: int, stride: int = 1) -> nn.Sequential:
            return nn.Sequential(nn.Conv2d(cin, cout, 3, stride=stride, padding=1), nn.GroupNorm(2, cout), nn.SiLU())

        self.inc, self.down1, self.down2 = block(3, 6), block(6, 10, 2), block(10, 14, 2)
        self.mid = block(14, 14)
        self.up2 = nn.ConvTranspose2d(14, 10, 2, stride=2)
        self.dec2 = block(20, 10)
        self.up1 = nn.ConvTranspose2d(10, 6, 2, stride=2)
        self.dec1 = block(12, 6)
        self.out = nn.Conv2d(6, classes, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        a = self.inc(x)
        b = self.down1(a)
        c = self.mid(self.down2(b))
        d = self.dec2(torch.cat([self.up2(c), b], dim=1))
        e = self.dec1(torch.cat([self.up1(d), a], dim=1))
        return self.out(e).mean((2, 3))


def skip_unet() -> tuple[nn.Module, tuple[torch.Tensor, ...]]:
    torch.manual_seed(0)
    return _SkipUNet(), (torch.randn(2, 3, 8, 8),)


class _Stage(nn.Module):
    """A pre-norm attention block of its own width and head count, and an MLP."""

    def __init__(self, width: int, heads: int, hidden: int) -> None:
        super().__init__()
        self.norm1, self.norm2 = nn.LayerNorm(width), nn.LayerNorm(width)
        self.attn = nn.MultiheadAttention(width, heads, batch_first=True)
        self.mlp = nn.Sequential(nn.Linear(width, hidden), nn.GELU(), nn.Linear(hidden, width))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.norm1(x)
        x = x + self.attn(h, h, h, need_weights=False)[0]
        return x + self.mlp(self.norm2(x))


class _WidthStages(nn.Module):
    """Token stages whose width, head count and MLP width change from stage to
    stage (24 wide, 3 heads; 40 wide, 5 heads; 16 wide, 2 heads), joined by linear
    projections; mean-pooled classes."""

    def __init__(self, classes: int = 6) -> None:
        super().__init__()
        self.embed = nn.Embedding(256, 24)
        self.stages = nn.ModuleList([_Stage(24, 3, 56), _Stage(40, 5, 72), _Stage(16, 2, 20)])
        self.joins = nn.ModuleList([nn.Linear(24, 40), nn.Linear(40, 16)])
        self.head = nn.Linear(16, classes)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        x = self.embed(ids)
        for i, stage in enumerate(self.stages):
            x = stage(x)
            if i < len(self.joins):
                x = self.joins[i](x)
        return self.head(x.mean(1))


def width_stages() -> tuple[nn.Module, tuple[torch.Tensor, ...]]:
    torch.manual_seed(0)
    return _WidthStages(), (torch.randint(0, 256, (2, 6)),)



def gemma() -> tuple[nn.Module, tuple[torch.Tensor, ...]]:
    from transformers import GemmaConfig, GemmaForCausalLM

    torch.manual_seed(0)
    config = GemmaConfig(vocab_size=256, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=1, head_dim=8, max_position_embeddings=32)
    return _Logits(GemmaForCausalLM(config)), (_ids((1, 8)),)


def phi() -> tuple[nn.Module, tuple[torch.Tensor, ...]]:
    from transformers import PhiConfig, PhiForCausalLM

    torch.manual_seed(0)
    config = PhiConfig(vocab_size=256, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                       num_attention_heads=4, partial_rotary_factor=0.5, max_position_embeddings=32,
                       resid_pdrop=0.0, embd_pdrop=0.0, attention_dropout=0.0, qk_layernorm=True)
    return _Logits(PhiForCausalLM(config)), (_ids((1, 8)),)


def bloom() -> tuple[nn.Module, tuple[torch.Tensor, ...]]:
    from transformers import BloomConfig, BloomForCausalLM

    torch.manual_seed(0)
    config = BloomConfig(vocab_size=256, hidden_size=32, n_layer=2, n_head=4, hidden_dropout=0.0,
                         attention_dropout=0.0)
    return _Logits(BloomForCausalLM(config)), (_ids((2, 8)),)


def distilbert() -> tuple[nn.Module, tuple[torch.Tensor, ...]]:
    from transformers import DistilBertConfig, DistilBertForSequenceClassification

    torch.manual_seed(0)
    config = DistilBertConfig(vocab_size=256, dim=32, n_layers=2, n_heads=4, hidden_dim=48,
                              max_position_embeddings=16, num_labels=5, dropout=0.0, attention_dropout=0.0,
                              seq_classif_dropout=0.0, sinusoidal_pos_embds=True)
    return _Logits(DistilBertForSequenceClassification(config)), (_ids((2, 8)),)


def qwen3() -> tuple[nn.Module, tuple[torch.Tensor, ...]]:
    from transformers import Qwen3Config, Qwen3ForCausalLM

    torch.manual_seed(0)
    config = Qwen3Config(vocab_size=256, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=2, head_dim=16, max_position_embeddings=32,
                         tie_word_embeddings=True)
    return _Logits(Qwen3ForCausalLM(config)), (_ids((1, 8)),)


def deberta_v2() -> tuple[nn.Module, tuple[torch.Tensor, ...]]:
    from transformers import DebertaV2Config, DebertaV2ForSequenceClassification

    torch.manual_seed(0)
    config = DebertaV2Config(vocab_size=256, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                             intermediate_size=48, max_position_embeddings=16, relative_attention=True,
                             position_buckets=8, max_relative_positions=16, pos_att_type=["p2c", "c2p"],
                             num_labels=5, hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0,
                             pooler_dropout=0.0, type_vocab_size=0, position_biased_input=False)
    return _Logits(DebertaV2ForSequenceClassification(config)), (_ids((2, 8)),)


class _BasicBlock(nn.Module):
    """torchvision's ResNet BasicBlock: two 3x3 convolutions with batch norm, a 1x1 strided shortcut."""

    def __init__(self, cin: int, cout: int, stride: int) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.downsample = (nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))
                           if stride != 1 or cin != cout else None)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        identity = x if self.downsample is None else self.downsample(x)
        out = torch.relu(self.bn1(self.conv1(x)))
        return torch.relu(self.bn2(self.conv2(out)) + identity)


class _ResNetStem(nn.Module):
    """torchvision's resnet18 layout at small widths: a 7x7 stride-2 stem, batch norm, a 3x3
    stride-2 max pool, two stages of basic blocks (the second strided), average pool, a linear head."""

    def __init__(self, classes: int = 5) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, 7, 2, 3, bias=False)
        self.bn1 = nn.BatchNorm2d(8)
        self.maxpool = nn.MaxPool2d(3, 2, 1)
        self.layer1 = nn.Sequential(_BasicBlock(8, 8, 1), _BasicBlock(8, 8, 1))
        self.layer2 = nn.Sequential(_BasicBlock(8, 16, 2), _BasicBlock(16, 16, 1))
        self.fc = nn.Linear(16, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.maxpool(torch.relu(self.bn1(self.conv1(x))))
        x = self.layer2(self.layer1(x))
        return self.fc(torch.flatten(nn.functional.adaptive_avg_pool2d(x, 1), 1))


def resnet_layout() -> tuple[nn.Module, tuple[torch.Tensor, ...]]:
    torch.manual_seed(0)
    return _ResNetStem(), (torch.randn(2, 3, 24, 24),)


class _AudioEncoder(nn.Module):
    """A Whisper-like encoder: two Conv1d over mel frames (GELU, the second strided), fixed
    sinusoidal positions, pre-norm nn.TransformerEncoderLayers, mean-pooled classes."""

    def __init__(self, mels: int = 8, width: int = 32, classes: int = 6) -> None:
        super().__init__()
        self.conv1 = nn.Conv1d(mels, width, 3, padding=1)
        self.conv2 = nn.Conv1d(width, width, 3, stride=2, padding=1)
        position = torch.arange(8).unsqueeze(1) * torch.exp(-torch.arange(0, width, 2) * (4.0 / width))
        self.register_buffer("positions", torch.cat([position.sin(), position.cos()], dim=1), persistent=False)
        layer = nn.TransformerEncoderLayer(width, 4, 64, dropout=0.0, activation="gelu", batch_first=True,
                                           norm_first=True)
        self.encoder = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)
        self.norm, self.head = nn.LayerNorm(width), nn.Linear(width, classes)

    def forward(self, mel: torch.Tensor) -> torch.Tensor:
        h = nn.functional.gelu(self.conv2(nn.functional.gelu(self.conv1(mel)))).transpose(1, 2)
        h = self.encoder(h + self.positions[: h.shape[1]])
        return self.head(self.norm(h).mean(1))


def audio_encoder() -> tuple[nn.Module, tuple[torch.Tensor, ...]]:
    torch.manual_seed(0)
    return _AudioEncoder(), (torch.randn(2, 8, 16),)


class _SharedMLM(nn.Module):
    """A masked language model: one transformer block's weights applied three times (a
    universal transformer), input and output embeddings tied, an embedding with a padding
    row, attention written with einsum and a key padding mask from the ids (ids below 16
    are padding)."""

    def __init__(self, vocab: int = 256, width: int = 32, heads: int = 4) -> None:
        super().__init__()
        self.embed = nn.Embedding(vocab, width, padding_idx=0)
        self.qkv, self.proj = nn.Linear(width, 3 * width), nn.Linear(width, width)
        self.norm1, self.norm2, self.final = nn.LayerNorm(width), nn.LayerNorm(width), nn.LayerNorm(width)
        self.mlp = nn.Sequential(nn.Linear(width, 2 * width), nn.GELU(approximate="tanh"), nn.Linear(2 * width, width))
        self.bias = nn.Parameter(torch.zeros(vocab))
        self.heads = heads

    def block(self, x: torch.Tensor, keep: torch.Tensor) -> torch.Tensor:
        b, t, w = x.shape
        q, k, v = self.qkv(self.norm1(x)).view(b, t, 3, self.heads, w // self.heads).unbind(2)
        scores = torch.einsum("bqhd,bkhd->bhqk", q, k) / (w // self.heads) ** 0.5
        scores = scores.masked_fill(~keep[:, None, None, :], torch.finfo(scores.dtype).min)
        x = x + self.proj(torch.einsum("bhqk,bkhd->bqhd", scores.softmax(-1), v).reshape(b, t, w))
        return x + self.mlp(self.norm2(x))

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        keep = ids >= 16
        x = self.embed(ids)
        for _ in range(3):
            x = self.block(x, keep)
        return self.final(x) @ self.embed.weight.t() * self.embed.embedding_dim ** -0.5 + self.bias


def shared_mlm() -> tuple[nn.Module, tuple[torch.Tensor, ...]]:
    torch.manual_seed(0)
    ids = torch.randint(16, 256, (2, 8))
    ids[1, 6:] = 0  # padding
    return _SharedMLM(), (ids,)


def masked_lm_loss(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """Cross entropy over the masked positions only: labels of positions not chosen
    (every third token from the first kept) are -100, the ignore_index."""
    chosen = torch.arange(labels.shape[1], device=labels.device) % 3 == 1
    targets = torch.where(chosen, labels, torch.full_like(labels, -100))
    return nn.functional.cross_entropy(logits.flatten(0, 1), targets.flatten(), ignore_index=-100)


class _TwoHeads(nn.Module):
    """A frozen backbone (an embedding bag-like mean of embeddings and a Linear, requires_grad
    False) under a trainable trunk with two heads: classes and a per-class score."""

    def __init__(self, classes: int = 4) -> None:
        super().__init__()
        self.backbone = nn.Sequential(nn.Linear(10, 24), nn.Tanh(), nn.Linear(24, 24))
        self.backbone.requires_grad_(False)
        self.trunk = nn.Sequential(nn.Linear(24, 32), nn.Mish(), nn.LayerNorm(32))
        self.classes, self.scores = nn.Linear(32, classes), nn.Linear(32, classes)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        h = self.trunk(self.backbone(x))
        return self.classes(h), self.scores(h)


def two_heads() -> tuple[nn.Module, tuple[torch.Tensor, ...]]:
    torch.manual_seed(0)
    return _TwoHeads(), (torch.randn(6, 10),)


def two_head_loss(outputs: tuple[torch.Tensor, torch.Tensor], labels: torch.Tensor) -> torch.Tensor:
    """Label-smoothed cross entropy on the class head plus a binary cross entropy of the score
    head against the one-hot labels (weighted 0.5)."""
    classes, scores = outputs
    one_hot = nn.functional.one_hot(labels, classes.shape[-1]).to(scores.dtype)
    return (nn.functional.cross_entropy(classes, labels, label_smoothing=0.05)
            + 0.5 * nn.functional.binary_cross_entropy_with_logits(scores, one_hot))


class _WeightNormUp(nn.Module):
    """A decoder with weight-normalized convolutions (torch.nn.utils.parametrizations.weight_norm:
    the weight is g * v / |v|), LeakyReLU, nearest upsampling by F.interpolate and a pixel shuffle."""

    def __init__(self, classes: int = 3) -> None:
        super().__init__()
        norm = nn.utils.parametrizations.weight_norm
        self.inp = norm(nn.Conv2d(3, 8, 3, padding=1))
        self.mid = norm(nn.Conv2d(8, 16, 3, padding=1))
        self.out = nn.Conv2d(4, classes, 3, padding=1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = nn.functional.leaky_relu(self.inp(x), 0.2)
        h = nn.functional.interpolate(h, scale_factor=2, mode="nearest")
        h = nn.functional.pixel_shuffle(nn.functional.leaky_relu(self.mid(h), 0.2), 2)
        return self.out(h).mean((2, 3))


def weight_norm_up() -> tuple[nn.Module, tuple[torch.Tensor, ...]]:
    torch.manual_seed(0)
    return _WeightNormUp(), (torch.randn(2, 3, 6, 6),)


class _LinearAttention(nn.Module):
    """Causal linear attention (elu + 1 features, running sums by cumsum over the sequence),
    RMSNorm written by hand, a SwiGLU MLP, per-token classes."""

    def __init__(self, vocab: int = 256, width: int = 24, classes: int = 9) -> None:
        super().__init__()
        self.embed = nn.Embedding(vocab, width)
        self.q, self.k, self.v = (nn.Linear(width, width, bias=False) for _ in range(3))
        self.gate, self.up, self.down = nn.Linear(width, 48), nn.Linear(width, 48), nn.Linear(48, width)
        self.scale = nn.Parameter(torch.ones(width))
        self.head = nn.Linear(width, classes)

    def rms(self, x: torch.Tensor) -> torch.Tensor:
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * self.scale

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        x = self.embed(ids)
        h = self.rms(x)
        q, k = nn.functional.elu(self.q(h)) + 1, nn.functional.elu(self.k(h)) + 1
        kv = torch.cumsum(k.unsqueeze(-1) * self.v(h).unsqueeze(-2), dim=1)
        normalizer = torch.cumsum(k, dim=1)
        x = x + (q.unsqueeze(-2) @ kv).squeeze(-2) / (q * normalizer).sum(-1, keepdim=True)
        x = x + self.down(nn.functional.silu(self.gate(x)) * self.up(x))
        return self.head(x)


def linear_attention() -> tuple[nn.Module, tuple[torch.Tensor, ...]]:
    torch.manual_seed(0)
    return _LinearAttention(), (_ids((2, 6)),)


# Round 4 (theld13): forms neither this bench, bench/train_zoo.py nor the tests train.

def gptj() -> tuple[nn.Module, tuple[torch.Tensor, ...]]:
    from transformers import GPTJConfig, GPTJForCausalLM

    torch.manual_seed(0)
    config = GPTJConfig(vocab_size=256, n_embd=32, n_layer=2, n_head=4, rotary_dim=4, n_positions=32,
                        resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0)
    return _Logits(GPTJForCausalLM(config)), (_ids((1, 8)),)


def persimmon() -> tuple[nn.Module, tuple[torch.Tensor, ...]]:
    from transformers import PersimmonConfig, PersimmonForCausalLM

    torch.manual_seed(0)
    config = PersimmonConfig(vocab_size=256, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                             num_attention_heads=4, max_position_embeddings=32, partial_rotary_factor=0.5,
                             qk_layernorm=True, hidden_dropout=0.0, attention_dropout=0.0)
    return _Logits(PersimmonForCausalLM(config)), (_ids((1, 8)),)


def mamba() -> tuple[nn.Module, tuple[torch.Tensor, ...]]:
    from transformers import MambaConfig, MambaForCausalLM

    torch.manual_seed(0)
    config = MambaConfig(vocab_size=256, hidden_size=16, state_size=4, num_hidden_layers=2, expand=2,
                         conv_kernel=3, time_step_rank=4, use_mambapy=False)
    return _Logits(MambaForCausalLM(config)), (_ids((1, 6)),)


def gpt_neo() -> tuple[nn.Module, tuple[torch.Tensor, ...]]:
    from transformers import GPTNeoConfig, GPTNeoForCausalLM

    torch.manual_seed(0)
    config = GPTNeoConfig(vocab_size=256, hidden_size=32, num_layers=2, num_heads=4,
                          attention_types=[[["global", "local"], 1]], window_size=3, max_position_embeddings=32,
                          intermediate_size=64, resid_dropout=0.0, embed_dropout=0.0, attention_dropout=0.0)
    return _Logits(GPTNeoForCausalLM(config)), (_ids((1, 8)),)


def mobilebert() -> tuple[nn.Module, tuple[torch.Tensor, ...]]:
    from transformers import MobileBertConfig, MobileBertForSequenceClassification

    torch.manual_seed(0)
    config = MobileBertConfig(vocab_size=256, hidden_size=32, embedding_size=16, num_hidden_layers=2,
                              num_attention_heads=4, intermediate_size=32, intra_bottleneck_size=16,
                              true_hidden_size=16, num_feedforward_networks=2, max_position_embeddings=16,
                              num_labels=5, hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0,
                              classifier_dropout=0.0)
    return _Logits(MobileBertForSequenceClassification(config)), (_ids((2, 8)),)


def funnel() -> tuple[nn.Module, tuple[torch.Tensor, ...]]:
    from transformers import FunnelConfig, FunnelForSequenceClassification

    torch.manual_seed(0)
    config = FunnelConfig(vocab_size=256, block_sizes=[1, 1], num_decoder_layers=1, d_model=32, n_head=4,
                          d_head=8, d_inner=48, max_position_embeddings=16, num_labels=5, hidden_dropout=0.0,
                          attention_dropout=0.0, activation_dropout=0.0)
    return _Logits(FunnelForSequenceClassification(config)), (_ids((2, 8)),)


def segformer() -> tuple[nn.Module, tuple[torch.Tensor, ...]]:
    from transformers import SegformerConfig, SegformerForImageClassification

    torch.manual_seed(0)
    config = SegformerConfig(num_channels=3, num_encoder_blocks=2, depths=[1, 1], sr_ratios=[2, 1],
                             hidden_sizes=[8, 16], patch_sizes=[3, 3], strides=[2, 2], num_attention_heads=[1, 2],
                             mlp_ratios=[2, 2], hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0,
                             classifier_dropout_prob=0.0, drop_path_rate=0.0, num_labels=5)
    return _Logits(SegformerForImageClassification(config), key="pixel_values"), (torch.randn(2, 3, 16, 16),)


class _Wavenet(nn.Module):
    """WaveNet-style: dilated causal Conv1d (left padding by F.pad, dilation 1, 2, 4), gated
    tanh x sigmoid units, residual and skip paths summed, per-step classes."""

    def __init__(self, channels: int = 12, classes: int = 8) -> None:
        super().__init__()
        self.inp = nn.Conv1d(1, channels, 1)
        self.dilated = nn.ModuleList(nn.Conv1d(channels, 2 * channels, 2, dilation=d) for d in (1, 2, 4))
        self.res = nn.ModuleList(nn.Conv1d(channels, channels, 1) for _ in range(3))
        self.skip = nn.ModuleList(nn.Conv1d(channels, channels, 1) for _ in range(3))
        self.out = nn.Conv1d(channels, classes, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h, skips = self.inp(x.unsqueeze(1)), 0
        for conv, res, skip in zip(self.dilated, self.res, self.skip):
            filt, gate = conv(nn.functional.pad(h, (conv.dilation[0], 0))).chunk(2, dim=1)
            z = torch.tanh(filt) * torch.sigmoid(gate)
            h, skips = h + res(z), skips + skip(z)
        return self.out(torch.relu(skips)).transpose(1, 2)


def wavenet() -> tuple[nn.Module, tuple[torch.Tensor, ...]]:
    torch.manual_seed(0)
    return _Wavenet(), (torch.randn(2, 10),)


class _SpectralCritic(nn.Module):
    """A GAN critic: spectral-normalized convolutions (nn.utils.parametrizations.spectral_norm: a
    power-iteration step on buffers u, v each forward in train mode), reflection padding, bilinear
    upsampling, average pooling with ceil_mode, LeakyReLU."""

    def __init__(self, classes: int = 3) -> None:
        super().__init__()
        sn = nn.utils.parametrizations.spectral_norm
        self.pad = nn.ReflectionPad2d(1)
        self.c1, self.c2 = sn(nn.Conv2d(3, 8, 3)), sn(nn.Conv2d(8, 12, 3, stride=2))
        self.head = sn(nn.Linear(12, classes))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = nn.functional.leaky_relu(self.c1(self.pad(x)), 0.2)
        h = nn.functional.interpolate(h, scale_factor=2, mode="bilinear", align_corners=False)
        h = nn.functional.avg_pool2d(nn.functional.leaky_relu(self.c2(h), 0.2), 3, stride=2, ceil_mode=True)
        return self.head(h.mean((2, 3)))


def spectral_critic() -> tuple[nn.Module, tuple[torch.Tensor, ...]]:
    torch.manual_seed(0)
    return _SpectralCritic(), (torch.randn(2, 3, 7, 7),)


class _Dlrm(nn.Module):
    """DLRM-style: three nn.EmbeddingBag tables (sum, mean, max) over id bags, a bottom MLP of
    the ids' scaled values, pairwise dot interactions (bmm, upper triangle by triu_indices), a top MLP."""

    def __init__(self, width: int = 8, classes: int = 2) -> None:
        super().__init__()
        self.bags = nn.ModuleList(nn.EmbeddingBag(256, width, mode=m) for m in ("sum", "mean", "max"))
        self.bottom = nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, width))
        self.top = nn.Sequential(nn.Linear(width + 6, 16), nn.ReLU(), nn.Linear(16, classes))

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        dense = self.bottom(ids.to(self.bottom[0].weight.dtype) / 255.0)
        features = torch.stack([dense, *(bag(ids[:, 2 * i:2 * i + 2]) for i, bag in enumerate(self.bags))], 1)
        products = features @ features.transpose(1, 2)
        rows, cols = torch.triu_indices(4, 4, 1)
        return self.top(torch.cat([dense, products[:, rows, cols]], dim=1))


def dlrm() -> tuple[nn.Module, tuple[torch.Tensor, ...]]:
    torch.manual_seed(0)
    return _Dlrm(), (_ids((4, 6)),)


class _SwitchMoE(nn.Module):
    """Top-2 mixture of experts written by hand: a router's softmax, torch.topk, the two
    weights renormalized and scattered into a dense (tokens, experts) gate, every expert run
    on every token; returns (logits, load-balancing loss) as Switch Transformer computes it."""

    def __init__(self, width: int = 16, experts: int = 4, classes: int = 6) -> None:
        super().__init__()
        self.embed = nn.Embedding(256, width)
        self.router = nn.Linear(width, experts, bias=False)
        self.experts = nn.ModuleList(nn.Sequential(nn.Linear(width, 24), nn.GELU(), nn.Linear(24, width))
                                     for _ in range(experts))
        self.norm, self.head = nn.LayerNorm(width), nn.Linear(width, classes)

    def forward(self, ids: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        x = self.embed(ids)
        probs = self.router(x).softmax(-1)
        top, index = probs.topk(2, dim=-1)
        gate = torch.zeros_like(probs).scatter(-1, index, top / top.sum(-1, keepdim=True))
        outputs = torch.stack([expert(x) for expert in self.experts], dim=-2)
        x = x + (gate.unsqueeze(-1) * outputs).sum(-2)
        chosen = nn.functional.one_hot(index[..., 0], probs.shape[-1]).float()
        balance = probs.shape[-1] * (chosen.mean((0, 1)) * probs.mean((0, 1))).sum()
        return self.head(self.norm(x)), balance


def switch_moe() -> tuple[nn.Module, tuple[torch.Tensor, ...]]:
    torch.manual_seed(0)
    return _SwitchMoE(), (_ids((2, 6)),)


def moe_loss(outputs: tuple[torch.Tensor, torch.Tensor], labels: torch.Tensor) -> torch.Tensor:
    """Per-token cross entropy plus 0.01 x the router's load-balancing loss."""
    logits, balance = outputs
    return nn.functional.cross_entropy(logits.flatten(0, 1), labels.flatten()) + 0.01 * balance


class _TiedShapes(nn.Module):
    """One weight used at three shapes: a Linear's (24, 16) weight, the same tensor viewed as a
    Conv1d kernel (24, 16, 1) over the sequence, and its transpose as a second projection back."""

    def __init__(self, classes: int = 5) -> None:
        super().__init__()
        self.embed = nn.Embedding(256, 16)
        self.shared = nn.Linear(16, 24)
        self.norm, self.head = nn.LayerNorm(16), nn.Linear(16, classes)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        x = self.embed(ids)
        up = torch.tanh(self.shared(x))
        conv = nn.functional.conv1d(x.transpose(1, 2), self.shared.weight.unsqueeze(-1), padding=0).transpose(1, 2)
        down = nn.functional.linear(up * torch.sigmoid(conv), self.shared.weight.t())
        return self.head(self.norm(x + down)).mean(1)


def tied_shapes() -> tuple[nn.Module, tuple[torch.Tensor, ...]]:
    torch.manual_seed(0)
    return _TiedShapes(), (_ids((3, 5)),)


class _Perceiver(nn.Module):
    """Perceiver-style: a learned latent array expanded over the batch cross-attends to the
    inputs (nn.MultiheadAttention with kdim = vdim = 12 != 24), self-attention over the latents,
    latents mean-pooled to classes."""

    def __init__(self, latents: int = 4, width: int = 24, classes: int = 5) -> None:
        super().__init__()
        self.embed = nn.Embedding(256, 12)
        self.latents = nn.Parameter(torch.randn(latents, width) * 0.5)
        self.cross = nn.MultiheadAttention(width, 2, kdim=12, vdim=12, batch_first=True)
        self.norm = nn.LayerNorm(width)
        self.self_attn = nn.TransformerEncoderLayer(width, 3, 32, dropout=0.0, batch_first=True)
        self.head = nn.Linear(width, classes)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        x = self.embed(ids)
        q = self.latents.unsqueeze(0).expand(ids.shape[0], -1, -1)
        z = self.norm(q + self.cross(q, x, x, need_weights=False)[0])
        return self.head(self.self_attn(z).mean(1))


def perceiver() -> tuple[nn.Module, tuple[torch.Tensor, ...]]:
    torch.manual_seed(0)
    return _Perceiver(), (_ids((2, 7)),)


class _SelectiveScan(nn.Module):
    """A Mamba-like selective state space layer written by hand: a causal depthwise Conv1d,
    SiLU, input-dependent step sizes (softplus), A = -exp(A_log), a state updated by a loop over
    the sequence (exp(dt A) h + dt B x), read out by C, a D skip, a SiLU gate; per-token classes."""

    def __init__(self, width: int = 12, state: int = 4, classes: int = 7) -> None:
        super().__init__()
        self.embed = nn.Embedding(256, width)
        self.in_proj = nn.Linear(width, 2 * width)
        self.conv = nn.Conv1d(width, width, 3, groups=width, padding=2)
        self.x_proj = nn.Linear(width, 1 + 2 * state, bias=False)
        self.dt_proj = nn.Linear(1, width)
        self.A_log = nn.Parameter(torch.log(torch.arange(1, state + 1).float()).repeat(width, 1))
        self.D = nn.Parameter(torch.ones(width))
        self.out = nn.Linear(width, classes)
        self.state = state

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        u, gate = self.in_proj(self.embed(ids)).chunk(2, dim=-1)
        t = ids.shape[1]
        u = nn.functional.silu(self.conv(u.transpose(1, 2))[..., :t].transpose(1, 2))
        dt, b, c = self.x_proj(u).split([1, self.state, self.state], dim=-1)
        dt = nn.functional.softplus(self.dt_proj(dt))
        a = -torch.exp(self.A_log)
        h = u.new_zeros(u.shape[0], u.shape[2], self.state)
        ys = []
        for i in range(t):
            h = torch.exp(dt[:, i, :, None] * a) * h + dt[:, i, :, None] * b[:, i, None, :] * u[:, i, :, None]
            ys.append((h * c[:, i, None, :]).sum(-1))
        y = torch.stack(ys, dim=1) + u * self.D
        return self.out(y * nn.functional.silu(gate))


def selective_scan() -> tuple[nn.Module, tuple[torch.Tensor, ...]]:
    torch.manual_seed(0)
    return _SelectiveScan(), (_ids((2, 5)),)


# Round 5 (theld14)


def electra_rtd() -> tuple[nn.Module, tuple[torch.Tensor, ...]]:
    from transformers import ElectraConfig, ElectraForPreTraining

    torch.manual_seed(0)
    config = ElectraConfig(vocab_size=256, embedding_size=16, hidden_size=32, num_hidden_layers=2,
                           num_attention_heads=4, intermediate_size=48, max_position_embeddings=16,
                           hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
    return _Logits(ElectraForPreTraining(config)), (_ids((2, 8)),)


def replaced_token_loss(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """ELECTRA's discriminator loss: binary cross entropy per token (replaced or not)."""
    return nn.functional.binary_cross_entropy_with_logits(logits, labels.to(logits.dtype))


def stablelm() -> tuple[nn.Module, tuple[torch.Tensor, ...]]:
    from transformers import StableLmConfig, StableLmForCausalLM

    torch.manual_seed(0)
    config = StableLmConfig(vocab_size=256, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                            num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=32,
                            partial_rotary_factor=0.25, qk_layernorm=True, use_parallel_residual=True,
                            use_qkv_bias=True, hidden_dropout=0.0, attention_dropout=0.0)
    return _Logits(StableLmForCausalLM(config)), (_ids((2, 8)),)


def cohere() -> tuple[nn.Module, tuple[torch.Tensor, ...]]:
    from transformers import CohereConfig, CohereForCausalLM

    torch.manual_seed(0)
    config = CohereConfig(vocab_size=256, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                          num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=32,
                          logit_scale=0.25, use_qk_norm=False, tie_word_embeddings=True)
    return _Logits(CohereForCausalLM(config)), (_ids((2, 8)),)


class _CellStack(nn.Module):
    """A language model of two nn.LSTMCells stepped by hand over the sequence, widths 12 -> 20 ->
    16 (the second cell reads the first's hidden state), the states starting at zero, the second
    cell's outputs projected to the vocabulary."""

    def __init__(self, vocab: int = 256) -> None:
        super().__init__()
        self.embed = nn.Embedding(vocab, 12)
        self.first, self.second = nn.LSTMCell(12, 20), nn.LSTMCell(20, 16)
        self.out = nn.Linear(16, vocab)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        x = self.embed(ids)
        h1 = c1 = x.new_zeros(ids.shape[0], 20)
        h2 = c2 = x.new_zeros(ids.shape[0], 16)
        outputs = []
        for t in range(ids.shape[1]):
            h1, c1 = self.first(x[:, t], (h1, c1))
            h2, c2 = self.second(h1, (h2, c2))
            outputs.append(h2)
        return self.out(torch.stack(outputs, dim=1))


def lstm_cells() -> tuple[nn.Module, tuple[torch.Tensor, ...]]:
    torch.manual_seed(0)
    return _CellStack(), (_ids((2, 6)),)


class _MBConv(nn.Module):
    """EfficientNet's MBConv: 1x1 expansion, depthwise kxk (stride), squeeze-excitation with SiLU
    and a sigmoid gate, 1x1 projection, batch norms in train mode, a residual where the shapes
    match (stochastic depth off, as at evaluation-free fine-tuning)."""

    def __init__(self, cin: int, cout: int, expand: int, kernel: int, stride: int) -> None:
        super().__init__()
        wide = cin * expand
        self.expand = nn.Sequential(nn.Conv2d(cin, wide, 1, bias=False), nn.BatchNorm2d(wide), nn.SiLU())
        self.depthwise = nn.Sequential(nn.Conv2d(wide, wide, kernel, stride, kernel // 2, groups=wide, bias=False),
                                       nn.BatchNorm2d(wide), nn.SiLU())
        self.reduce, self.restore = nn.Conv2d(wide, max(1, cin // 4), 1), nn.Conv2d(max(1, cin // 4), wide, 1)
        self.project = nn.Sequential(nn.Conv2d(wide, cout, 1, bias=False), nn.BatchNorm2d(cout))
        self.residual = stride == 1 and cin == cout

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.depthwise(self.expand(x))
        h = h * torch.sigmoid(self.restore(nn.functional.silu(self.reduce(h.mean((2, 3), keepdim=True)))))
        h = self.project(h)
        return x + h if self.residual else h


class _EfficientChannelsLast(nn.Module):
    """An EfficientNet-style stack whose widths change block to block (8 -> 16 -> 16 -> 24),
    kernels 3 and 5, computed channels-last (the input converted in the graph, the weights
    channels-last too)."""

    def __init__(self, classes: int = 5) -> None:
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 8, 3, 2, 1, bias=False), nn.BatchNorm2d(8), nn.SiLU())
        self.blocks = nn.Sequential(_MBConv(8, 16, 4, 3, 2), _MBConv(16, 16, 4, 3, 1), _MBConv(16, 24, 6, 5, 2))
        self.head = nn.Linear(24, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.blocks(self.stem(x.contiguous(memory_format=torch.channels_last)))
        return self.head(nn.functional.adaptive_avg_pool2d(h, 1).flatten(1))


def efficient_channels_last() -> tuple[nn.Module, tuple[torch.Tensor, ...]]:
    torch.manual_seed(0)
    return _EfficientChannelsLast().to(memory_format=torch.channels_last), (torch.randn(2, 3, 16, 16),)



def convnext_v2() -> tuple[nn.Module, tuple[torch.Tensor, ...]]:
    from transformers import ConvNextV2Config, ConvNextV2ForImageClassification

    torch.manual_seed(0)
    config = ConvNextV2Config(num_channels=3, patch_size=2, hidden_sizes=[8, 16], depths=[1, 1], num_stages=2,
                              image_size=16, num_labels=5, drop_path_rate=0.0)
    return _Logits(ConvNextV2ForImageClassification(config), key="pixel_values"), (torch.randn(2, 3, 16, 16),)


def _channel_shuffle(x: torch.Tensor, groups: int) -> torch.Tensor:
    """torchvision's channel_shuffle: (N, g, C/g, H, W) transposed to (N, C/g, g, H, W)."""
    n, c, h, w = x.size()
    x = x.view(n, groups, c // groups, h, w)
    return torch.transpose(x, 1, 2).contiguous().view(n, -1, h, w)


class _ShuffleUnit(nn.Module):
    """torchvision's ShuffleNetV2 InvertedResidual: stride 1 splits the channels in two (one half
    passes through), stride 2 runs both branches on the whole input; then a channel shuffle."""

    def __init__(self, cin: int, cout: int, stride: int) -> None:
        super().__init__()
        half = cout // 2
        self.stride = stride
        self.branch1 = nn.Sequential()
        if stride > 1:
            self.branch1 = nn.Sequential(nn.Conv2d(cin, cin, 3, stride, 1, groups=cin, bias=False),
                                         nn.BatchNorm2d(cin), nn.Conv2d(cin, half, 1, bias=False),
                                         nn.BatchNorm2d(half), nn.ReLU(inplace=True))
        wide = cin if stride > 1 else half
        self.branch2 = nn.Sequential(nn.Conv2d(wide, half, 1, bias=False), nn.BatchNorm2d(half),
                                     nn.ReLU(inplace=True),
                                     nn.Conv2d(half, half, 3, stride, 1, groups=half, bias=False),
                                     nn.BatchNorm2d(half), nn.Conv2d(half, half, 1, bias=False), nn.BatchNorm2d(half),
                                     nn.ReLU(inplace=True))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.stride == 1:
            x1, x2 = x.chunk(2, dim=1)
            out = torch.cat((x1, self.branch2(x2)), dim=1)
        else:
            out = torch.cat((self.branch1(x), self.branch2(x)), dim=1)
        return _channel_shuffle(out, 2)


class _ShuffleUnits(nn.Module):
    def __init__(self, classes: int = 4) -> None:
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 8, 3, 1, 1, bias=False), nn.BatchNorm2d(8), nn.ReLU(inplace=True))
        self.units = nn.Sequential(_ShuffleUnit(8, 24, 2), _ShuffleUnit(24, 24, 1))
        self.head = nn.Linear(24, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.units(self.stem(x)).mean([2, 3]))


def shuffle_units() -> tuple[nn.Module, tuple[torch.Tensor, ...]]:
    torch.manual_seed(0)
    return _ShuffleUnits(), (torch.randn(2, 3, 8, 8),)


class _CheckpointedWidths(nn.Module):
    """Pre-norm residual MLP blocks, each under non-reentrant activation checkpointing, at widths
    that change block to block (20 -> 36 -> 12 -> 28), joined by linear projections."""

    def __init__(self, widths: tuple[int, ...] = (20, 36, 12, 28), classes: int = 6) -> None:
        super().__init__()
        self.norms = nn.ModuleList(nn.LayerNorm(w) for w in widths)
        self.ups = nn.ModuleList(nn.Linear(w, 2 * w + 3) for w in widths)
        self.downs = nn.ModuleList(nn.Linear(2 * w + 3, w) for w in widths)
        self.joins = nn.ModuleList(nn.Linear(a, b) for a, b in zip(widths, widths[1:]))
        self.head = nn.Linear(widths[-1], classes)

    def block(self, index: int, x: torch.Tensor) -> torch.Tensor:
        return x + self.downs[index](nn.functional.gelu(self.ups[index](self.norms[index](x))))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for index in range(len(self.norms)):
            x = torch.utils.checkpoint.checkpoint(self.block, index, x, use_reentrant=False)
            if index < len(self.joins):
                x = self.joins[index](x)
        return self.head(x)


def checkpointed_widths() -> tuple[nn.Module, tuple[torch.Tensor, ...]]:
    torch.manual_seed(0)
    return _CheckpointedWidths(), (torch.randn(5, 20),)


def label_smoothed(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    return nn.functional.cross_entropy(logits, labels, label_smoothing=0.1)


class _BiGruTagger(nn.Module):
    def __init__(self, vocab: int = 256, tags: int = 7) -> None:
        super().__init__()
        self.embed = nn.Embedding(vocab, 12)
        self.gru = nn.GRU(12, 10, num_layers=2, batch_first=True, bidirectional=True)
        self.tag = nn.Linear(20, tags)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        return self.tag(self.gru(self.embed(ids))[0])


def bigru_tagger() -> tuple[nn.Module, tuple[torch.Tensor, ...]]:
    torch.manual_seed(0)
    return _BiGruTagger(), (_ids((2, 6)),)


class _MixtralStyleMoE(nn.Module):
    """Mixtral's routing written by hand: softmax over every expert, the top 2 renormalized to sum
    to one, each token's gate scattered into a dense (tokens, experts) matrix by one_hot, every
    expert (SwiGLU) run on every token and mixed by einsum; an RMSNorm before, a residual; the
    embedding frozen and its transpose the output head's initial value (a trained copy)."""

    def __init__(self, vocab: int = 256, width: int = 16, experts: int = 4, hidden: int = 24) -> None:
        super().__init__()
        self.embed = nn.Embedding(vocab, width)
        self.embed.weight.requires_grad_(False)
        self.norm = nn.Parameter(torch.ones(width))
        self.router = nn.Linear(width, experts, bias=False)
        self.gate = nn.Parameter(torch.randn(experts, width, hidden) / width ** 0.5)
        self.up = nn.Parameter(torch.randn(experts, width, hidden) / width ** 0.5)
        self.down = nn.Parameter(torch.randn(experts, hidden, width) / hidden ** 0.5)
        self.head = nn.Linear(width, vocab, bias=False)
        self.head.weight.data.copy_(self.embed.weight.data / 4)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        x = self.embed(ids)
        h = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * self.norm
        weights = torch.softmax(self.router(h), dim=-1)
        top, chosen = torch.topk(weights, 2, dim=-1)
        top = top / top.sum(-1, keepdim=True)
        dense = (nn.functional.one_hot(chosen, weights.shape[-1]).to(h.dtype) * top.unsqueeze(-1)).sum(-2)
        inner = nn.functional.silu(torch.einsum("btw,ewh->bteh", h, self.gate)) * torch.einsum(
            "btw,ewh->bteh", h, self.up)
        mixed = torch.einsum("bteh,ehw,bte->btw", inner, self.down, dense)
        return self.head(x + mixed)


def mixtral_style_moe() -> tuple[nn.Module, tuple[torch.Tensor, ...]]:
    torch.manual_seed(0)
    return _MixtralStyleMoE(), (_ids((2, 6)),)


CE = nn.functional.cross_entropy
HELD_OUT: dict[str, Case] = {
    "widths_37": Case(widths_37, CE, 3),
    "mobilenet_block": Case(mobilenet_block, CE, 5),
    "convnext_block": Case(convnext_block, CE, 5),
    "frozen_tied_lm": Case(frozen_tied_lm, language_model_loss, 256, per_token=True),
    "gated_loop": Case(gated_loop, smoothed_ignoring_loss, 7, per_token=True),
    "ema_buffers": Case(ema_buffers, CE, 4),
    "t5": Case(t5, language_model_loss, 256, per_token=True),
    "qwen2": Case(qwen2, language_model_loss, 256, per_token=True),
    "mistral_window": Case(mistral_window, language_model_loss, 256, per_token=True),
    "albert": Case(albert, CE, 5),
    "falcon": Case(falcon, language_model_loss, 256, per_token=True),
    "skip_unet": Case(skip_unet, CE, 4),
    "width_stages": Case(width_stages, CE, 6),
    "gemma": Case(gemma, language_model_loss, 256, per_token=True),
    "phi": Case(phi, language_model_loss, 256, per_token=True),
    "bloom": Case(bloom, language_model_loss, 256, per_token=True),
    "distilbert": Case(distilbert, CE, 5),
    "qwen3": Case(qwen3, language_model_loss, 256, per_token=True),
    "deberta_v2": Case(deberta_v2, CE, 5),
    "resnet_layout": Case(resnet_layout, CE, 5),
    "audio_encoder": Case(audio_encoder, CE, 6),
    "shared_mlm": Case(shared_mlm, masked_lm_loss, 256, per_token=True),
    "two_heads": Case(two_heads, two_head_loss, 4),
    "weight_norm_up": Case(weight_norm_up, CE, 3),
    "linear_attention": Case(linear_attention, language_model_loss, 9, per_token=True),
    "gptj": Case(gptj, language_model_loss, 256, per_token=True),
    "persimmon": Case(persimmon, language_model_loss, 256, per_token=True),
    "mamba": Case(mamba, language_model_loss, 256, per_token=True),
    "gpt_neo": Case(gpt_neo, language_model_loss, 256, per_token=True),
    "mobilebert": Case(mobilebert, CE, 5),
    "funnel": Case(funnel, CE, 5),
    "segformer": Case(segformer, CE, 5),
    "wavenet": Case(wavenet, language_model_loss, 8, per_token=True),
    "spectral_critic": Case(spectral_critic, CE, 3),
    "dlrm": Case(dlrm, CE, 2),
    "switch_moe": Case(switch_moe, moe_loss, 6, per_token=True),
    "tied_shapes": Case(tied_shapes, CE, 5),
    "perceiver": Case(perceiver, CE, 5),
    "selective_scan": Case(selective_scan, language_model_loss, 7, per_token=True),
    "electra_rtd": Case(electra_rtd, replaced_token_loss, 2, per_token=True),
    "stablelm": Case(stablelm, language_model_loss, 256, per_token=True),
    "cohere": Case(cohere, language_model_loss, 256, per_token=True),
    "lstm_cells": Case(lstm_cells, language_model_loss, 256, per_token=True),
    "efficient_channels_last": Case(efficient_channels_last, CE, 5),
    "convnext_v2": Case(convnext_v2, CE, 5),
    "shuffle_units": Case(shuffle_units, CE, 4),
    "checkpointed_widths": Case(checkpointed_widths, label_smoothed, 6),
    "bigru_tagger": Case(bigru_tagger, language_model_loss, 7, per_token=True),
    "mixtral_style_moe": Case(mixtral_style_moe, language_model_loss, 256, per_token=True),
    "unet2d": Case(round7.unet2d, round7.snr_weighted_mse, 3),
    "unet2d_cond": Case(round7.unet2d_cond, round7.snr_weighted_mse, 3),
    "autoencoder_kl": Case(round7.autoencoder_kl, round7.vae_loss, 3),
    "dit": Case(round7.dit, round7.snr_weighted_mse, 3),
    "bart": Case(round7.bart, language_model_loss, 256, per_token=True),
    "bert_mlm": Case(round7.bert_mlm, masked_lm_loss, 256, per_token=True),
    "clip": Case(round7.clip, round7.contrastive_loss, 2),
    "whisper": Case(round7.whisper, round7.transcript_loss, 64, per_token=True),
    "rwkv": Case(round7.rwkv, language_model_loss, 256, per_token=True),
    "mixtral_aux": Case(round7.mixtral_aux, round7.lm_plus_aux, 256, per_token=True),
    "inplace_masks": Case(round7.inplace_masks, CE, 5),
    "train_norms": Case(round7.train_norms, CE, 4),
    "sdpa_masks": Case(round7.sdpa_masks, language_model_loss, 256, per_token=True),
    "shared_slices": Case(round7.shared_slices, CE, 5),
    "multi_term": Case(round7.multi_term, round7.multi_term_loss, 6),
    "grouped_convs": Case(round7.grouped_convs, CE, 5),
    "vq_straight_through": Case(round7.vq_straight_through, round7.vq_loss, 3),
    "swin": Case(round8.swin, CE, 5),
    "longformer": Case(round8.longformer, CE, 5),
    "wav2vec2_ctc": Case(round8.wav2vec2_ctc, round8.ctc, round8.CTC_CLASSES - 1),
    "wav2vec2_frames": Case(round8.wav2vec2_ctc, round8.frame_loss, round8.CTC_CLASSES, per_token=True),
    "xlnet": Case(round8.xlnet, language_model_loss, 256, per_token=True),
    "convbert": Case(round8.convbert, CE, 5),
    "beit": Case(round8.beit, CE, 5),
    "renorm_embedding": Case(round8.renorm_embedding, language_model_loss, 256, per_token=True),
    "freq_embedding": Case(round8.freq_embedding, language_model_loss, 256, per_token=True),
    "mixed_paths": Case(round8.mixed_paths, CE, 4),
    "int_counters": Case(round8.int_counters, CE, 5),
    "metric_siamese": Case(round8.metric_siamese, round8.metric_loss, 2),
    "activation_zoo": Case(round8.activation_zoo, CE, 5),
    "gathered_loss": Case(round8.gathered_loss, round8.sampled_softmax, 256, per_token=True),
    "mha_padding": Case(round8.mha_padding, round8.lm_plus_entropy, 256, per_token=True),
    "local_attention": Case(round8.local_attention, language_model_loss, 256, per_token=True),
    "student_t_head": Case(round8.student_t_head, round8.student_t_nll, 5),
    "spatial_transformer": Case(round8.spatial_transformer, CE, 4),
    "cdist_prototypes": Case(round8.cdist_prototypes, CE, 5),
    "lstm_projection": Case(round8.lstm_projection, language_model_loss, 7, per_token=True),
    "order_ops": Case(round8.order_ops, CE, 4),
    "bilinear_fold": Case(round8.bilinear_fold, CE, 5),
    "torch_decoder": Case(round8.torch_decoder, language_model_loss, 256, per_token=True),
    "widths_512": Case(round9.widths_512, CE, 10),
    "updown_convs": Case(round9.updown_convs, CE, 5),
    "ffn_per_layer": Case(round9.ffn_per_layer, language_model_loss, 256, per_token=True),
    "tied_far": Case(round9.tied_far, language_model_loss, 256, per_token=True),
    "masked_grads": Case(round9.masked_grads, CE, 5),
    "frozen_half": Case(round9.frozen_half, CE, 5),
    "shared_twice": Case(round9.shared_twice, CE, 4),
    "custom_backward": Case(round9.custom_backward, CE, 5),
    "checkpoint_seq": Case(round9.checkpoint_seq, CE, 4),
    "gpt_neox": Case(round9.gpt_neox, language_model_loss, 256, per_token=True),
    "opt": Case(round9.opt, language_model_loss, 256, per_token=True),
    "mpnet": Case(round9.mpnet, language_model_loss, 256, per_token=True),
    "dinov2": Case(round9.dinov2, CE, 5),
    "roformer": Case(round9.roformer, language_model_loss, 256, per_token=True),
    "mobilevit": Case(round9.mobilevit, CE, 5),
    "levit": Case(round9.levit, CE, 5),
    "squeezebert": Case(round9.squeezebert, CE, 5),
    "fnet": Case(round9.fnet, CE, 5),
    "opt_125m": Case(round9.opt_125m, language_model_loss, 256, per_token=True),
    "projected_widths": Case(round10.projected_widths, CE, 7),
    "part_frozen": Case(round10.part_frozen, CE, 5),
    "tied_conv_autoencoder": Case(round10.tied_conv_autoencoder, round10.classify_and_rebuild, 4),
    "gather_scatter": Case(round10.gather_scatter, CE, 5),
    "parametrized": Case(round10.parametrized, CE, 4),
    "odd_norms": Case(round10.odd_norms, CE, 4),
    "gru_cells": Case(round10.gru_cells, language_model_loss, 7, per_token=True),
    "fake_quant": Case(round10.fake_quant, CE, 5),
    "two_head_sum": Case(round10.two_head_sum, round10.weighted_smoothed_heads, 6),
    "codegen": Case(round10.codegen, language_model_loss, 256, per_token=True),
    "mpt": Case(round10.mpt, language_model_loss, 256, per_token=True),
    "qwen2_moe": Case(round10.qwen2_moe, language_model_loss, 256, per_token=True),
    "qwen2_moe_loop": Case(round10.qwen2_moe_loop, language_model_loss, 256, per_token=True),
    "ties": Case(round10.ties, CE, 5),
    "complex_rotary": Case(round10.complex_rotary, language_model_loss, 256, per_token=True),
    "volumes": Case(round10.volumes, CE, 5),
    "diagonals": Case(round10.diagonals, CE, 4),
    "solve_whitening": Case(round10.solve_whitening, CE, 3),
    "pegasus": Case(round10.pegasus, language_model_loss, 256, per_token=True),
    "gemma2": Case(round10.gemma2, language_model_loss, 256, per_token=True),
    "modernbert": Case(round10.modernbert, masked_lm_loss, 256, per_token=True),
    "poolformer": Case(round10.poolformer, CE, 5),
    "cvt": Case(round10.cvt, CE, 5),
    "unet1d": Case(round10.unet1d, round7.snr_weighted_mse, 3),
    "vq_model": Case(round10.vq_model, round10.rebuild_and_commit, 3),
    "cholesky_whitening": Case(round11.cholesky_whitening, CE, 4),
    "einsum_attention": Case(round11.einsum_attention, language_model_loss, 256, per_token=True),
    "ema_norm": Case(round11.ema_norm, CE, 5),
    "transposed_decoder": Case(round11.transposed_decoder, round10.classify_and_rebuild, 3),
    "six_losses": Case(round11.six_losses_model, round11.six_losses, 4),
    "adaptive_pools": Case(round11.adaptive_pools, CE, 4),
    "index_ops": Case(round11.index_ops, CE, 4),
    "info_nce": Case(round11.info_nce, round11.info_nce_loss, 6),
    "scans": Case(round11.scans, language_model_loss, 256, per_token=True),
    "mixture_density": Case(round11.mixture_density, round11.mixture_nll, 9),
    "elementwise": Case(round11.elementwise, CE, 4),
    "regnet": Case(round11.regnet, CE, 5),
    "efficientnet": Case(round11.efficientnet, CE, 5),
    "mobilenet_v2": Case(round11.mobilenet_v2, CE, 5),
    "starcoder2": Case(round11.starcoder2, language_model_loss, 256, per_token=True),
    "olmo2": Case(round11.olmo2, language_model_loss, 256, per_token=True),
    "granite": Case(round11.granite, language_model_loss, 256, per_token=True),
    "nemotron": Case(round11.nemotron, language_model_loss, 256, per_token=True),
    "esm": Case(round11.esm, masked_lm_loss, 256, per_token=True),
    "wavlm": Case(round11.wavlm, round8.frame_loss, 12, per_token=True),
    "recurrent_gemma": Case(round11.recurrent_gemma, language_model_loss, 256, per_token=True),
    "mbart": Case(round11.mbart, language_model_loss, 256, per_token=True),
    "padded_residuals": Case(round12.padded_residuals, CE, 5),
    "reshaped_shared": Case(round12.reshaped_shared, CE, 5),
    "nanmean_subset": Case(round12.token_scorer, round12.nanmean_subset, 6, per_token=True),
    "euler_loop": Case(round12.euler_loop, CE, 4),
    "message_passing": Case(round12.message_passing, CE, 4),
    "frozen_middle": Case(round12.frozen_middle, CE, 5),
    "deepseek_v2": Case(round13.deepseek_v2, language_model_loss, 256, per_token=True),
    "cohere2": Case(round13.cohere2, language_model_loss, 256, per_token=True),
    "swinv2": Case(round13.swinv2, CE, 5),
    "nystromformer": Case(round13.nystromformer, CE, 5),
    "switch_transformers": Case(round13.switch_transformers, language_model_loss, 256, per_token=True),
    "lfm2": Case(round13.lfm2, language_model_loss, 256, per_token=True),
    "gpt_oss": Case(round13.gpt_oss, language_model_loss, 256, per_token=True),
    "llama4": Case(round13.llama4, language_model_loss, 256, per_token=True),
    "mixer_permuted": Case(round13.mixer_permuted, CE, 5),
    "adaptive_depth": Case(round13.adaptive_depth, CE, 4),
    "distill_heads": Case(round13.distill_heads, round13.distill_loss, 5),
    "arcface": Case(round13.arcface, round13.arcface_loss, 6),
    "mixup_soft": Case(round13.mixup_soft, round13.mixup_loss, 5),
    "focal_dice": Case(round13.focal_dice, round13.focal_dice_loss, 2, per_token=True),
    "standardized_hyper": Case(round13.standardized_hyper, CE, 5),
    "bag_weights": Case(round13.bag_weights, CE, 5),
    "bf16_middle": Case(round13.bf16_middle, CE, 4),
    "relu_rnn": Case(round13.relu_rnn, language_model_loss, 7, per_token=True),
    "gradient_penalty": Case(round13.gradient_penalty, round13.penalized_loss, 3),
    "focalnet": Case(round14.focalnet, CE, 5),
    "hiera": Case(round14.hiera, CE, 5),
    "mamba2": Case(round14.mamba2, language_model_loss, 256, per_token=True),
    "gemma3_text": Case(round14.gemma3_text, language_model_loss, 256, per_token=True),
    "sd3_mmdit": Case(round14.sd3_mmdit, round14.reconstruction_mse, 3),
    "autoencoder_tiny": Case(round14.autoencoder_tiny, round14.reconstruction_mse, 3),
    "param_containers": Case(round14.param_containers, CE, 5),
    "unpool_segnet": Case(round14.unpool_segnet, CE, 4),
    "gradient_reversal": Case(round14.gradient_reversal, round14.class_and_domain, 4),
    "vmap_ensemble": Case(round14.vmap_ensemble, CE, 5),
    "kan_splines": Case(round14.kan_splines, CE, 5),
    "three_losses": Case(round14.three_losses, round14.gaussian_margin_huber, 4),
    "gaussian_nll": Case(round14.three_losses, round14.torch_gaussian_margin_huber, 4),
    "algebra_mix": Case(round14.algebra_mix, CE, 5),
    "algebra_torch_cov": Case(round14.algebra_torch_cov, CE, 5),
    "nested_shared": Case(round14.nested_shared, CE, 5),
    "moco_queue": Case(round14.moco_queue, round14.positive_first, 2),
    "prealloc_fill": Case(round14.prealloc_fill, CE, 4),
    "googlenet_aux": Case(round15.googlenet_aux, round15.googlenet_loss, round15.GOOGLENET_CLASSES),
    "squeezenet": Case(round15.squeezenet, CE, 5),
    "mnasnet": Case(round15.mnasnet, CE, 5),
    "shufflenet_v2": Case(round15.shufflenet_v2, CE, 5),
    "efficientnet_mixed": Case(round15.efficientnet_mixed, CE, 5),
    "regnet_tv": Case(round15.regnet, CE, 5),
    "convmixer": Case(round15.convmixer, CE, 5),
    "coat": Case(round15.coat, CE, 5),
    "levit_timm": Case(round15.levit, CE, 5),
    "mobilevit_v2": Case(round15.mobilevit_v2, CE, 5),
    "tied_autoencoder": Case(round15.tied_autoencoder, round15.classes_and_reconstruction, 5),
    "rk4_field": Case(round15.rk4_field, CE, 4),
    "nested_checkpoint": Case(round15.nested_checkpoint, CE, 5),
    "reentrant_checkpoint": Case(round15.reentrant_checkpoint, CE, 5),
    "ctc_head": Case(round15.ctc_head, round15.ctc, 5),
    "metric_losses": Case(round15.metric_losses_model, round15.metric_losses, 5),
    "buffer_stats": Case(round15.buffer_stats, CE, 4),
    **round16.CASES,
    **round17.CASES,
}
ROUND_7 = [name for name in HELD_OUT if name in round7.__dict__]
"""Round 7's models (`--models round7`)."""
ROUND_8 = [name for name, case in HELD_OUT.items() if case.build.__module__ == round8.__name__]
"""Round 8's models (`--models round8`)."""
ROUND_9 = [name for name, case in HELD_OUT.items() if case.build.__module__ == round9.__name__ and name != "opt_125m"]
"""Round 9's models (`--models round9`; opt_125m, the full-size one, is named on its own)."""
ROUND_10 = [name for name, case in HELD_OUT.items() if case.build.__module__ == round10.__name__]
"""Round 10's models (`--models round10`)."""
ROUND_11 = [name for name, case in HELD_OUT.items() if case.build.__module__ == round11.__name__]
"""Round 11's models (`--models round11`)."""
ROUND_12 = [name for name, case in HELD_OUT.items() if case.build.__module__ == round12.__name__]
"""Round 12's models (`--models round12`)."""
ROUND_13 = [name for name, case in HELD_OUT.items() if case.build.__module__ == round13.__name__]
"""Round 13's models (`--models round13`)."""
ROUND_14 = [name for name, case in HELD_OUT.items() if case.build.__module__ == round14.__name__]
"""Round 14's models (`--models round14`)."""
ROUND_15 = [name for name, case in HELD_OUT.items() if case.build.__module__ == round15.__name__]
"""Round 15's models (`--models round15`; the torchvision / timm ones need those installed)."""
ROUND_16 = list(round16.CASES)
"""Round 16's models (`--models round16`)."""
ROUND_17 = list(round17.CASES)
"""Round 17's models (`--models round17`)."""


def decay_groups(params: Any) -> torch.optim.Optimizer:
    """AdamW as users configure it: weight decay 0.1 on matrices only; vectors (biases, norms,
    scales) in a second group without decay and with their own learning rate (3e-3)."""
    params = list(params)
    return torch.optim.AdamW([{"params": [p for p in params if p.ndim >= 2], "weight_decay": 0.1},
                              {"params": [p for p in params if p.ndim < 2], "weight_decay": 0.0, "lr": 3e-3}],
                             lr=1e-3)


HELD_OUT_OPTIMIZERS = {"adamw_groups": decay_groups}
"""Optimizers only these runs use (`--optimizers adamw_groups`; `sgd_nesterov` is training_cases')."""


def main(argv: list[str] | None = None) -> Any:
    round15.torchvision_first_if_installed()
    OPTIMIZERS.update(HELD_OUT_OPTIMIZERS)
    train_matrix.CASES.update(HELD_OUT)
    train_matrix.HELD_OUT.update(HELD_OUT)
    train_matrix.CHECK_BUFFERS = True
    defaults = ["--models", ",".join(HELD_OUT), "--precisions", "fp32", "--levels", "2", "--steps", "4",
                "--no-dynamo"]
    given = list(sys.argv[1:] if argv is None else argv)
    rounds = {"round7": ROUND_7, "round8": ROUND_8, "round9": ROUND_9, "round10": ROUND_10, "round11": ROUND_11,
              "round12": ROUND_12, "round13": ROUND_13, "round14": ROUND_14, "round15": ROUND_15,
              "round16": ROUND_16, "round17": ROUND_17}
    if "--models" in given and given[given.index("--models") + 1] in rounds:
        given[given.index("--models") + 1] = ",".join(rounds[given[given.index("--models") + 1]])
    if "--dynamo-only" in given:
        defaults.remove("--no-dynamo")
    return train_matrix.main(defaults + given)


if __name__ == "__main__":
    main()
