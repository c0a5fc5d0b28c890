"""Held-out training round 7 (issue 27; bench/train_heldout.py imports these).

Seventeen training programs no test or bench wrote before, chosen for
mechanisms rounds 1-6 did not train. Four are diffusers models (UNet2DModel,
UNet2DConditionModel with cross attention, AutoencoderKL, DiT): diffusers is a
local held-out probe here, not a dependency; those builders exit with a clear
message when it is absent (`needs_diffusers`). Random init, tiny configs,
dropout p=0; each model takes one input tensor (the matrix's batch maker) and
makes whatever else it needs (timesteps, text ids, noise) from fixed buffers.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn
from torch.nn import functional as F

Built = tuple[nn.Module, tuple[torch.Tensor, ...]]


def needs_diffusers(model: str) -> Any:
    """The diffusers module, or exit naming the model and why diffusers is optional."""
    try:
        import diffusers
    except ImportError:
        raise SystemExit(f"bench/train_heldout.py: model {model} needs diffusers, a local held-out probe that "
                         "is not a dependency of rducc (pip install diffusers), or leave it out of --models") from None
    return diffusers


def _generator_buffer(module: nn.Module, name: str, shape: tuple[int, ...], seed: int) -> None:
    module.register_buffer(name, torch.randn(shape, generator=torch.Generator().manual_seed(seed)), persistent=False)


class _Denoiser(nn.Module):
    """A diffusion training step's model side: x noised at fixed timesteps (DDPM's
    sqrt(a) x + sqrt(1 - a) noise), the UNet's noise prediction minus the noise."""

    def __init__(self, unet: nn.Module, shape: tuple[int, ...], context: nn.Module | None = None) -> None:
        super().__init__()
        self.unet, self.context = unet, context
        _generator_buffer(self, "noise", shape, 7)
        self.register_buffer("timesteps", torch.tensor([10, 700])[: shape[0]], persistent=False)
        self.register_buffer("alpha", torch.tensor([0.98, 0.3])[: shape[0]].view(-1, 1, 1, 1), persistent=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        noisy = self.alpha.sqrt() * x + (1 - self.alpha).sqrt() * self.noise
        extra = {} if self.context is None else {"encoder_hidden_states": self.context()}
        return self.unet(noisy, self.timesteps, **extra).sample - self.noise


class _TextContext(nn.Module):
    """A stand-in text encoder: fixed token ids embedded, one LayerNorm (the cross-attention context)."""

    def __init__(self, batch: int, width: int) -> None:
        super().__init__()
        self.embed, self.norm = nn.Embedding(32, width), nn.LayerNorm(width)
        self.register_buffer("ids", torch.arange(batch * 5).view(batch, 5) % 32, persistent=False)

    def forward(self) -> torch.Tensor:
        return self.norm(self.embed(self.ids))


def snr_weighted_mse(residual: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """Per-sample mean squared noise error, weighted per sample by 1 + label (min-SNR-style weights)."""
    return (residual.pow(2).flatten(1).mean(1) * (1 + labels.to(residual.dtype))).mean()


def unet2d() -> Built:
    diffusers = needs_diffusers("unet2d")
    torch.manual_seed(0)
    unet = diffusers.UNet2DModel(sample_size=8, in_channels=3, out_channels=3, layers_per_block=1,
                                 block_out_channels=(8, 16), down_block_types=("DownBlock2D", "AttnDownBlock2D"),
                                 up_block_types=("AttnUpBlock2D", "UpBlock2D"), norm_num_groups=4,
                                 attention_head_dim=8)
    return _Denoiser(unet, (2, 3, 8, 8)), (torch.randn(2, 3, 8, 8),)


def unet2d_cond() -> Built:
    diffusers = needs_diffusers("unet2d_cond")
    torch.manual_seed(0)
    unet = diffusers.UNet2DConditionModel(sample_size=8, in_channels=4, out_channels=4, layers_per_block=1,
                                          block_out_channels=(8, 16),
                                          down_block_types=("CrossAttnDownBlock2D", "DownBlock2D"),
                                          up_block_types=("UpBlock2D", "CrossAttnUpBlock2D"),
                                          cross_attention_dim=12, attention_head_dim=4, norm_num_groups=4)
    return _Denoiser(unet, (2, 4, 8, 8), _TextContext(2, 12)), (torch.randn(2, 4, 8, 8),)


class _Vae(nn.Module):
    """A VAE step: encode, sample the posterior with a fixed noise (reparameterized), decode; returns
    the reconstruction error and the KL term per sample."""

    def __init__(self, vae: nn.Module, latent: tuple[int, ...]) -> None:
        super().__init__()
        self.vae = vae
        _generator_buffer(self, "eps", latent, 11)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        posterior = self.vae.encode(x).latent_dist
        z = posterior.mean + posterior.std * self.eps
        return self.vae.decode(z).sample - x, posterior.kl()


def vae_loss(outputs: tuple[torch.Tensor, torch.Tensor], labels: torch.Tensor) -> torch.Tensor:
    """Reconstruction (L1 mean plus MSE summed over pixels, divided by the element count) plus 1e-3 KL,
    the KL weighted per sample by 1 + label. (Divided by the batch size alone, as round 7 first had it,
    the gradient is 192 times larger and SGD at the matrix's lr 0.05, momentum 0.9 diverges in eager
    itself: float32 NaN from step 5, float64 from step 6.)"""
    residual, kl = outputs
    recon = residual.abs().mean() + F.mse_loss(residual, torch.zeros_like(residual), reduction="sum") / residual.numel()
    return recon + 1e-3 * (kl * (1 + labels.to(kl.dtype))).mean()


def autoencoder_kl() -> Built:
    diffusers = needs_diffusers("autoencoder_kl")
    torch.manual_seed(0)
    vae = diffusers.AutoencoderKL(in_channels=3, out_channels=3, down_block_types=("DownEncoderBlock2D",) * 2,
                                  up_block_types=("UpDecoderBlock2D",) * 2, block_out_channels=(8, 16),
                                  layers_per_block=1, latent_channels=2, norm_num_groups=4, sample_size=8)
    return _Vae(vae, (2, 2, 4, 4)), (torch.randn(2, 3, 8, 8),)


class _DiT(nn.Module):
    """DiT's training step: patchified latents, adaLN-zero conditioned on fixed timesteps and class
    labels (class dropout off), the predicted noise (learned-sigma half dropped) minus the noise."""

    def __init__(self, dit: nn.Module) -> None:
        super().__init__()
        self.dit = dit
        for module in dit.modules():
            if hasattr(module, "dropout_prob"):
                module.dropout_prob = 0.0
        _generator_buffer(self, "noise", (2, 4, 8, 8), 13)
        self.register_buffer("timesteps", torch.tensor([3, 600]), persistent=False)
        self.register_buffer("classes", torch.tensor([1, 4]), persistent=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        noisy = 0.8 * x + 0.6 * self.noise
        out = self.dit(noisy, timestep=self.timesteps, class_labels=self.classes).sample
        return out[:, :4] - self.noise


def dit() -> Built:
    diffusers = needs_diffusers("dit")
    torch.manual_seed(0)
    model = diffusers.DiTTransformer2DModel(num_attention_heads=2, attention_head_dim=8, in_channels=4,
                                            out_channels=8, num_layers=2, sample_size=8, patch_size=2,
                                            num_embeds_ada_norm=10)
    return _DiT(model), (torch.randn(2, 4, 8, 8),)


class _Seq2Seq(nn.Module):
    """transformers' BART with teacher forcing: decoder inputs are the ids shifted right."""

    def __init__(self, model: nn.Module) -> None:
        super().__init__()
        self.model = model

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        from transformers.models.bart.modeling_bart import shift_tokens_right

        config = self.model.config
        decoder_ids = shift_tokens_right(ids, config.pad_token_id, config.decoder_start_token_id)
        return self.model(input_ids=ids, decoder_input_ids=decoder_ids).logits


def bart() -> Built:
    from transformers import BartConfig, BartForConditionalGeneration

    torch.manual_seed(0)
    config = BartConfig(vocab_size=256, d_model=16, encoder_layers=1, decoder_layers=1, encoder_attention_heads=2,
                        decoder_attention_heads=2, encoder_ffn_dim=32, decoder_ffn_dim=32,
                        max_position_embeddings=32, dropout=0.0, attention_dropout=0.0, activation_dropout=0.0)
    return _Seq2Seq(BartForConditionalGeneration(config)), (torch.randint(3, 256, (2, 8)),)


class _LogitsOf(nn.Module):
    def __init__(self, model: nn.Module) -> None:
        super().__init__()
        self.model = model

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        return self.model(input_ids=ids).logits


def bert_mlm() -> Built:
    from transformers import BertConfig, BertForMaskedLM

    torch.manual_seed(0)
    config = BertConfig(vocab_size=256, hidden_size=16, num_hidden_layers=2, num_attention_heads=2,
                        intermediate_size=32, max_position_embeddings=16, hidden_dropout_prob=0.0,
                        attention_probs_dropout_prob=0.0)
    return _LogitsOf(BertForMaskedLM(config)), (torch.randint(0, 256, (2, 8)),)


class _Clip(nn.Module):
    """CLIP's image-text similarity logits (logit_scale.exp() times cosine similarities) for a
    batch of images and fixed captions."""

    def __init__(self, model: nn.Module) -> None:
        super().__init__()
        self.model = model
        self.register_buffer("captions", torch.tensor([[5, 9, 17, 2, 0, 0], [7, 3, 11, 30, 21, 2]]),
                             persistent=False)

    def forward(self, pixels: torch.Tensor) -> torch.Tensor:
        return self.model(input_ids=self.captions, pixel_values=pixels).logits_per_image


def contrastive_loss(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """CLIP's symmetric cross entropy (image to text and text to image), pairs given by the labels."""
    return (F.cross_entropy(logits, labels) + F.cross_entropy(logits.t(), labels)) / 2


def clip() -> Built:
    from transformers import CLIPConfig, CLIPModel

    torch.manual_seed(0)
    config = CLIPConfig(text_config={"vocab_size": 32, "hidden_size": 16, "intermediate_size": 32,
                                     "num_hidden_layers": 1, "num_attention_heads": 2,
                                     "max_position_embeddings": 8, "eos_token_id": 2},
                        vision_config={"hidden_size": 16, "intermediate_size": 32, "num_hidden_layers": 1,
                                       "num_attention_heads": 2, "image_size": 8, "patch_size": 4},
                        projection_dim=12)
    return _Clip(CLIPModel(config)), (torch.randn(2, 3, 8, 8),)


class _Whisper(nn.Module):
    """Whisper with teacher forcing: mel frames into the encoder, fixed decoder ids, the decoder's logits."""

    def __init__(self, model: nn.Module) -> None:
        super().__init__()
        self.model = model
        self.register_buffer("decoder_ids", torch.tensor([[1, 5, 9, 4, 2, 7], [1, 8, 3, 3, 6, 2]]),
                             persistent=False)

    def forward(self, mel: torch.Tensor) -> torch.Tensor:
        return self.model(input_features=mel, decoder_input_ids=self.decoder_ids).logits


def transcript_loss(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """Per-token cross entropy of the decoder's logits; targets the first mel row's labels."""
    return F.cross_entropy(logits.flatten(0, 1), labels[:, 0, : logits.shape[1]].flatten())


def whisper() -> Built:
    from transformers import WhisperConfig, WhisperForConditionalGeneration

    torch.manual_seed(0)
    config = WhisperConfig(vocab_size=64, num_mel_bins=8, d_model=16, encoder_layers=1, decoder_layers=1,
                           encoder_attention_heads=2, decoder_attention_heads=2, encoder_ffn_dim=32,
                           decoder_ffn_dim=32, max_source_positions=8, max_target_positions=16,
                           pad_token_id=0, bos_token_id=1, eos_token_id=2, decoder_start_token_id=1,
                           suppress_tokens=None, begin_suppress_tokens=None)
    return _Whisper(WhisperForConditionalGeneration(config)), (torch.randn(2, 8, 16),)


def rwkv() -> Built:
    from transformers import RwkvConfig, RwkvForCausalLM

    torch.manual_seed(0)
    config = RwkvConfig(vocab_size=256, hidden_size=16, num_hidden_layers=2, attention_hidden_size=16,
                        intermediate_size=32, context_length=16)
    return _LogitsOf(RwkvForCausalLM(config)), (torch.randint(0, 256, (2, 6)),)


class _MixtralAux(nn.Module):
    """transformers' Mixtral returning its logits and its router's load-balancing loss. Its experts
    run as transformers chose (grouped_mm); torch's CPU grouped_mm has no float64 kernel, so the
    float64 reference (training_cases._train_exact) runs transformers' eager expert loop, the same math."""

    def __init__(self, model: nn.Module) -> None:
        super().__init__()
        self.model, self.experts = model, model.config._experts_implementation

    def forward(self, ids: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        float64 = self.model.lm_head.weight.dtype == torch.float64
        self.model.config._experts_implementation = "eager" if float64 else self.experts
        out = self.model(input_ids=ids, output_router_logits=True)
        return out.logits, out.aux_loss


def lm_plus_aux(outputs: tuple[torch.Tensor, torch.Tensor], labels: torch.Tensor) -> torch.Tensor:
    logits, aux = outputs
    return F.cross_entropy(logits.flatten(0, 1), labels.flatten()) + 0.02 * aux


def mixtral_aux() -> Built:
    from transformers import MixtralConfig, MixtralForCausalLM

    torch.manual_seed(0)
    config = MixtralConfig(vocab_size=256, hidden_size=16, intermediate_size=24, num_hidden_layers=1,
                           num_attention_heads=2, num_key_value_heads=1, num_local_experts=4,
                           num_experts_per_tok=2, max_position_embeddings=16, router_aux_loss_coef=0.02)
    return _MixtralAux(MixtralForCausalLM(config)), (torch.randint(0, 256, (2, 6)),)


class _InPlaceMasks(nn.Module):
    """In-place ops on activations in the forward (masked_fill_, a slice's *=, add_, relu_, clamp_,
    sub_) and gradients through torch.where and a comparison mask."""

    def __init__(self) -> None:
        super().__init__()
        self.a, self.b, self.c = nn.Linear(12, 20), nn.Linear(12, 20), nn.Linear(20, 5)
        self.scale = nn.Parameter(torch.linspace(0.5, 1.5, 20))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.a(x)
        h.masked_fill_(x[:, :1] < -1.0, 0.0)
        h[:, :4] *= 2.0
        h.add_(self.b(x))
        h.relu_()
        g = h * self.scale
        g.clamp_(-2.0, 2.0)
        g.sub_(0.1)
        return self.c(torch.where(g > 0, g, 0.1 * g))


def inplace_masks() -> Built:
    torch.manual_seed(0)
    return _InPlaceMasks(), (torch.randn(6, 12),)


class _TrainNorms(nn.Module):
    """Normalizations in train mode beside batch norm: GroupNorm, InstanceNorm2d with affine weights
    and running statistics, and BatchNorm1d with momentum=None (a cumulative average by
    num_batches_tracked)."""

    def __init__(self) -> None:
        super().__init__()
        self.conv1, self.gn = nn.Conv2d(3, 12, 3, padding=1), nn.GroupNorm(3, 12)
        self.conv2 = nn.Conv2d(12, 8, 3, stride=2, padding=1)
        self.inorm = nn.InstanceNorm2d(8, affine=True, track_running_stats=True)
        self.bn = nn.BatchNorm1d(8, momentum=None)
        self.head = nn.Linear(8, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = F.silu(self.gn(self.conv1(x)))
        h = F.gelu(self.inorm(self.conv2(h)))
        return self.head(self.bn(h.amax((2, 3))))


def train_norms() -> Built:
    torch.manual_seed(0)
    return _TrainNorms(), (torch.randn(3, 3, 8, 8),)


class _SdpaMasks(nn.Module):
    """F.scaled_dot_product_attention three ways: a boolean padding mask, a learned additive float
    mask (a relative bias that trains through the mask), and is_causal with an explicit scale."""

    def __init__(self, width: int = 16, heads: int = 2, seq: int = 6) -> None:
        super().__init__()
        self.heads = heads
        self.embed, self.qkv, self.out = nn.Embedding(256, width), nn.Linear(width, 3 * width), nn.Linear(width, width)
        self.bias = nn.Parameter(torch.randn(heads, seq, seq) * 0.1)
        self.head = nn.Linear(width, 256)
        self.register_buffer("keep", (torch.arange(seq) < seq - 1).view(1, 1, 1, seq), persistent=False)

    def _split(self, h: torch.Tensor) -> tuple[torch.Tensor, ...]:
        b, t, _ = h.shape
        return tuple(part.view(b, t, self.heads, -1).transpose(1, 2) for part in self.qkv(h).chunk(3, -1))

    def _merge(self, h: torch.Tensor) -> torch.Tensor:
        return self.out(h.transpose(1, 2).flatten(2))

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        h = self.embed(ids)
        q, k, v = self._split(h)
        h = h + self._merge(F.scaled_dot_product_attention(q, k, v, attn_mask=self.keep, dropout_p=0.0))
        q, k, v = self._split(h)
        h = h + self._merge(F.scaled_dot_product_attention(q, k, v, attn_mask=self.bias))
        q, k, v = self._split(h)
        h = h + self._merge(F.scaled_dot_product_attention(q, k, v, is_causal=True, scale=0.3))
        return self.head(h)


def sdpa_masks() -> Built:
    torch.manual_seed(0)
    return _SdpaMasks(), (torch.randint(0, 256, (2, 6)),)


class _SharedSlices(nn.Module):
    """One weight matrix shared by layers of different widths (each layer a top-left slice of it),
    and a nested block calling one Linear twice."""

    def __init__(self, widths: tuple[int, ...] = (10, 24, 16, 8), classes: int = 5) -> None:
        super().__init__()
        self.widths = widths
        self.shared = nn.Parameter(torch.randn(max(widths), max(widths)) / max(widths) ** 0.5)
        self.biases = nn.ParameterList(nn.Parameter(torch.zeros(w)) for w in widths[1:])
        self.twice = nn.Linear(widths[-1], widths[-1])
        self.head = nn.Linear(widths[-1], classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for index, (a, b) in enumerate(zip(self.widths, self.widths[1:])):
            x = torch.tanh(F.linear(x, self.shared[:b, :a], self.biases[index]))
        x = x + self.twice(F.gelu(self.twice(x)))
        return self.head(x)


def shared_slices() -> Built:
    torch.manual_seed(0)
    return _SharedSlices(), (torch.randn(5, 10),)


class _ThreeOutputs(nn.Module):
    """A trunk with three heads: class logits, a probability per class (sigmoid), a regression."""

    def __init__(self) -> None:
        super().__init__()
        self.trunk = nn.Sequential(nn.Linear(14, 24), nn.Mish(), nn.Linear(24, 24), nn.Softplus())
        self.classes, self.probs, self.reg = nn.Linear(24, 6), nn.Linear(24, 6), nn.Linear(24, 3)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        h = self.trunk(x)
        return self.classes(h), torch.sigmoid(self.probs(h)), self.reg(h)


CLASS_WEIGHTS = torch.tensor([1.0, 2.0, 0.5, 1.5, 1.0, 3.0])


def multi_term_loss(outputs: tuple[torch.Tensor, ...], labels: torch.Tensor) -> torch.Tensor:
    """Five terms, five reductions: class-weighted NLL (a weighted mean), label-smoothed cross
    entropy (mean), binary cross entropy of probabilities summed over classes, Huber summed then
    divided by the batch, KL divergence in log space (batchmean, log_target)."""
    logits, probs, reg = outputs
    log_probs = F.log_softmax(logits, -1)
    one_hot = F.one_hot(labels, 6).to(probs.dtype)
    target = torch.stack([labels.to(reg.dtype), labels.to(reg.dtype) ** 2 / 10, -labels.to(reg.dtype)], 1)
    smooth_target = F.log_softmax(one_hot * 3.0, -1)
    return (F.nll_loss(log_probs, labels, weight=CLASS_WEIGHTS.to(logits.dtype))
            + 0.5 * F.cross_entropy(logits, labels, label_smoothing=0.2)
            + F.binary_cross_entropy(probs, one_hot, reduction="sum") / len(labels)
            + F.huber_loss(reg, target, reduction="sum", delta=0.5) / len(labels)
            + 0.1 * F.kl_div(log_probs, smooth_target, reduction="batchmean", log_target=True))


def multi_term() -> Built:
    torch.manual_seed(0)
    return _ThreeOutputs(), (torch.randn(6, 14),)


class _GroupedConvs(nn.Module):
    """Convolutions beyond dense and depthwise: groups=4 with dilation 2 and circular padding, a
    replicate-padded convolution, a grouped transposed convolution with output_padding, PixelUnshuffle."""

    def __init__(self) -> None:
        super().__init__()
        self.stem = nn.Conv2d(3, 16, 3, padding=1, padding_mode="reflect")
        self.grouped = nn.Conv2d(16, 16, 3, padding=2, dilation=2, groups=4, padding_mode="circular")
        self.replicate = nn.Conv2d(16, 8, 3, padding=1, padding_mode="replicate", bias=False)
        self.unshuffle = nn.PixelUnshuffle(2)
        self.up = nn.ConvTranspose2d(32, 8, 3, stride=2, padding=1, output_padding=1, groups=2)
        self.head = nn.Linear(8, 5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = F.relu6(self.stem(x))
        h = h + F.leaky_relu(self.grouped(h), 0.2)
        h = self.up(self.unshuffle(self.replicate(h)))
        return self.head(h.mean((2, 3)))


def grouped_convs() -> Built:
    torch.manual_seed(0)
    return _GroupedConvs(), (torch.randn(2, 3, 8, 8),)


class _VectorQuantizer(nn.Module):
    """VQ-VAE: an encoder, the nearest codebook entry by argmin of squared distances, the
    straight-through estimator z + (q - z).detach(), a decoder; returns the reconstruction error
    and the codebook and commitment losses."""

    def __init__(self, codes: int = 12, dim: int = 6) -> None:
        super().__init__()
        self.encoder = nn.Sequential(nn.Linear(16, 24), nn.GELU(), nn.Linear(24, dim))
        self.codebook = nn.Embedding(codes, dim)
        self.decoder = nn.Sequential(nn.Linear(dim, 24), nn.GELU(), nn.Linear(24, 16))

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        z = self.encoder(x)
        distances = (z.pow(2).sum(-1, keepdim=True) - 2 * z @ self.codebook.weight.t()
                     + self.codebook.weight.pow(2).sum(-1))
        q = self.codebook(distances.argmin(-1))
        codebook = F.mse_loss(q, z.detach())
        commitment = F.mse_loss(z, q.detach())
        return self.decoder(z + (q - z).detach()) - x, codebook, commitment


def vq_loss(outputs: tuple[torch.Tensor, torch.Tensor, torch.Tensor], labels: torch.Tensor) -> torch.Tensor:
    residual, codebook, commitment = outputs
    weights = 1 + labels.to(residual.dtype)
    return (residual.pow(2).mean(-1) * weights).mean() + codebook + 0.25 * commitment


def vq_straight_through() -> Built:
    torch.manual_seed(0)
    return _VectorQuantizer(), (torch.randn(8, 16),)
