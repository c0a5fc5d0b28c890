"""Held-out training round 10 (issue 27; bench/train_heldout.py imports these).

Training programs no test or bench wrote before (rounds 1-9 read first).
By hand: a stack whose width changes at every layer with a projected residual
(a Linear shortcut where widths differ, the identity where they agree); a
model frozen by parts (one Linear's bias frozen and its weight trained, a
LayerNorm's weight frozen and its bias trained); a convolutional autoencoder
whose decoder's transposed convolutions reuse the encoder's kernels (weights
tied across non-adjacent modules in another op); gradients through
torch.gather, take_along_dim, scatter_reduce (amax and mean) and where; an
orthogonal parametrization (matrix_exp) beside the old hook-style weight_norm;
LocalResponseNorm, a LayerNorm over (C, H, W), an affine InstanceNorm1d and a
GroupNorm of one group; nn.GRUCells stepped by hand with widths that change;
fake quantization with a running abs-max and a step counter that the forward
updates (a straight-through round); two heads summed in the loss with class
weights, label smoothing and ignore_index together; gradients where values tie
(max_pool2d, amax, max(dim), maximum / minimum and clamp over ReLU's zeros);
Meta's reference Llama rotary (torch.polar, view_as_complex); Conv3d with
BatchNorm3d, trilinear and bicubic interpolation; einsum "bii->bi", trace,
diag_embed, triu / tril; a trained matrix inverted by torch.linalg.solve.
transformers at tiny sizes: CodeGen (interleaved rotary on a fused qkv laid
out in model-parallel groups), MPT (ALiBi, no biases), Qwen2-MoE (top-k experts
plus a shared expert behind a sigmoid gate; batched_mm experts, and the loop
over the experts hit, `qwen2_moe_loop`), Pegasus (sinusoidal positions,
scaled embeddings; teacher forcing), Gemma2 (attention and final logit
soft-capping, sliding windows on alternate layers), ModernBERT (masked LM,
alternating global/local attention, GeGLU), PoolFormer (pooling as the token
mixer) and CvT (convolutional q/k/v projections).
diffusers: UNet1DModel (a 1-D U-Net with Fourier timestep features) and
VQModel (a vector-quantized autoencoder whose commitment loss joins the loss).
Random init, dropout p=0; each model takes one input tensor (the matrix's
batch maker) and makes what else it needs from fixed buffers.
"""

from __future__ import annotations

import torch
from heldout_round7 import needs_diffusers
from heldout_round8 import _LogitsOf
from torch import nn
from torch.nn import functional as F

Built = tuple[nn.Module, tuple[torch.Tensor, ...]]


def _ids(shape: tuple[int, ...] = (2, 8)) -> tuple[torch.Tensor, ...]:
    return (torch.randint(0, 256, shape),)


def _drop(config: object) -> object:
    for name in ("hidden_dropout", "attention_dropout", "hidden_dropout_prob", "attention_probs_dropout_prob",
                 "dropout", "activation_dropout", "drop_path_rate", "classifier_dropout_prob", "resid_pdrop",
                 "embd_pdrop", "attn_pdrop", "mlp_dropout", "embedding_dropout", "attention_probs_dropout_prob"):
        if isinstance(getattr(config, name, None), float):
            setattr(config, name, 0.0)
    return config


class _ProjectedWidths(nn.Module):
    """Pre-norm residual blocks 20 -> 36 -> 36 -> 12 -> 50 -> 7 wide: each block's shortcut is a
    Linear where its widths differ and the identity where they agree."""

    def __init__(self) -> None:
        super().__init__()
        widths = [20, 36, 36, 12, 50]
        self.norms = nn.ModuleList(nn.LayerNorm(a) for a in widths[:-1])
        self.mains = nn.ModuleList(nn.Linear(a, b) for a, b in zip(widths, widths[1:]))
        self.shortcuts = nn.ModuleList(nn.Identity() if a == b else nn.Linear(a, b, bias=False)
                                       for a, b in zip(widths, widths[1:]))
        self.head = nn.Linear(50, 7)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for norm, main, shortcut in zip(self.norms, self.mains, self.shortcuts):
            x = shortcut(x) + F.mish(main(norm(x)))
        return self.head(x)


def projected_widths() -> Built:
    torch.manual_seed(0)
    return _ProjectedWidths(), (torch.randn(4, 20),)


class _PartFrozen(nn.Module):
    """Parameters frozen within a module: the first Linear's bias (its weight trains), the norm's
    weight (its bias trains), the whole middle Linear; a Parameter that is frozen and read twice."""

    def __init__(self) -> None:
        super().__init__()
        self.a, self.b, self.c = nn.Linear(10, 16), nn.Linear(16, 16), nn.Linear(16, 5)
        self.norm = nn.LayerNorm(16)
        self.scale = nn.Parameter(torch.linspace(0.5, 1.5, 16), requires_grad=False)
        self.a.bias.requires_grad_(False)
        self.norm.weight.requires_grad_(False)
        self.b.requires_grad_(False)
        with torch.no_grad():
            self.norm.weight.uniform_(0.5, 1.5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.tanh(self.a(x)) * self.scale
        h = h + F.gelu(self.b(self.norm(h)))
        return self.c(h * self.scale)


def part_frozen() -> Built:
    torch.manual_seed(0)
    return _PartFrozen(), (torch.randn(4, 10),)


class _TiedConvAutoencoder(nn.Module):
    """Two strided convolutions down, a classifier on the code, and two transposed convolutions up
    whose kernels are the encoder's (F.conv_transpose2d with the same Parameters, in reverse order)."""

    def __init__(self) -> None:
        super().__init__()
        self.down1 = nn.Conv2d(3, 8, 3, stride=2, padding=1)
        self.down2 = nn.Conv2d(8, 12, 3, stride=2, padding=1)
        self.up_bias2, self.up_bias1 = nn.Parameter(torch.zeros(8)), nn.Parameter(torch.zeros(3))
        self.head = nn.Linear(12, 4)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        code = F.silu(self.down2(F.silu(self.down1(x))))
        up = F.silu(F.conv_transpose2d(code, self.down2.weight, self.up_bias2, stride=2, padding=1, output_padding=1))
        rebuilt = F.conv_transpose2d(up, self.down1.weight, self.up_bias1, stride=2, padding=1, output_padding=1)
        return self.head(code.mean((2, 3))), rebuilt - x


def tied_conv_autoencoder() -> Built:
    torch.manual_seed(0)
    return _TiedConvAutoencoder(), (torch.randn(2, 3, 8, 8),)


def classify_and_rebuild(outputs: tuple[torch.Tensor, torch.Tensor], labels: torch.Tensor) -> torch.Tensor:
    """Cross entropy of the code's classes plus the mean squared reconstruction error."""
    logits, residual = outputs
    return F.cross_entropy(logits, labels) + residual.pow(2).mean()


class _GatherScatter(nn.Module):
    """Gradients through gather, take_along_dim, scatter_reduce (amax and mean into a zero base,
    indices that repeat) and where on a computed mask."""

    def __init__(self) -> None:
        super().__init__()
        self.a, self.b = nn.Linear(8, 12), nn.Linear(12, 12)
        self.head = nn.Linear(12, 5)
        self.register_buffer("picks", torch.tensor([[3, 0, 7, 7, 11, 2]]))
        self.register_buffer("slots", torch.tensor([[0, 1, 1, 4, 4, 4, 2, 0, 3, 5, 5, 1]]))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.tanh(self.a(x))
        picked = torch.gather(h, 1, self.picks.expand(h.shape[0], -1))
        order = torch.argsort(h.detach(), dim=1)[:, :4]
        smallest = torch.take_along_dim(h, order, dim=1)
        slots = self.slots.expand(h.shape[0], -1)
        peaks = h.new_zeros(h.shape[0], 6).scatter_reduce(1, slots, h * 2, "amax", include_self=False)
        means = h.new_zeros(h.shape[0], 6).scatter_reduce(1, slots, h, "mean", include_self=True)
        joined = torch.cat([picked + peaks, smallest, means[:, :2]], dim=1)
        joined = torch.where(joined > 0.1, joined, 0.5 * joined.pow(2))
        return self.head(self.b(joined))


def gather_scatter() -> Built:
    torch.manual_seed(0)
    return _GatherScatter(), (torch.randn(4, 8),)


class _Parametrized(nn.Module):
    """An orthogonal Linear (nn.utils.parametrizations.orthogonal by matrix_exp), a Linear under the
    old hook-style nn.utils.weight_norm (weight_g, weight_v) and a plain head."""

    def __init__(self) -> None:
        super().__init__()
        self.rotate = nn.utils.parametrizations.orthogonal(nn.Linear(12, 12), orthogonal_map="matrix_exp")
        self.expand = nn.utils.weight_norm(nn.Linear(12, 20), dim=0)
        self.inp, self.head = nn.Linear(6, 12), nn.Linear(20, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.rotate(torch.tanh(self.inp(x)))
        return self.head(F.softplus(self.expand(h)))


def parametrized() -> Built:
    import warnings

    torch.manual_seed(0)
    # Built without autograd: hook-style weight_norm stores the weight it computes as a plain attribute,
    # and one with a grad_fn cannot be deep-copied (the bench copies the model for its references).
    with warnings.catch_warnings(), torch.no_grad():  # weight_norm's deprecation in favour of the parametrization
        warnings.simplefilter("ignore", FutureWarning)
        return _Parametrized(), (torch.randn(4, 6),)


class _OddNorms(nn.Module):
    """LocalResponseNorm across channels, F.layer_norm over (C, H, W) with its own weight, an
    affine InstanceNorm1d (no running statistics) over rows, GroupNorm with a single group."""

    def __init__(self) -> None:
        super().__init__()
        self.conv1, self.conv2 = nn.Conv2d(3, 8, 3, padding=1), nn.Conv2d(8, 6, 3, padding=1)
        self.lrn = nn.LocalResponseNorm(3, alpha=1e-2, beta=0.75, k=1.0)
        self.chw = nn.LayerNorm((8, 6, 6))
        self.group = nn.GroupNorm(1, 6)
        self.rows = nn.InstanceNorm1d(6, affine=True)
        self.head = nn.Linear(6 * 36, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.chw(self.lrn(F.relu(self.conv1(x))))
        h = self.group(F.gelu(self.conv2(h)))
        h = self.rows(h.flatten(2))
        return self.head(h.flatten(1))


def odd_norms() -> Built:
    torch.manual_seed(0)
    return _OddNorms(), (torch.randn(2, 3, 6, 6),)


class _GruCells(nn.Module):
    """Two nn.GRUCells stepped by hand (12 -> 20 -> 9 wide), the second fed by the first's state,
    per-token classes from the second's state and the first's through a skip."""

    def __init__(self) -> None:
        super().__init__()
        self.embed = nn.Embedding(256, 12)
        self.first, self.second = nn.GRUCell(12, 20), nn.GRUCell(20, 9)
        self.skip, self.out = nn.Linear(20, 9, bias=False), nn.Linear(9, 7)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        xs = self.embed(ids)
        h1, h2 = xs.new_zeros(ids.shape[0], 20), xs.new_zeros(ids.shape[0], 9)
        outputs = []
        for t in range(ids.shape[1]):
            h1 = self.first(xs[:, t], h1)
            h2 = self.second(h1, h2)
            outputs.append(self.out(h2 + self.skip(h1)))
        return torch.stack(outputs, dim=1)


def gru_cells() -> Built:
    torch.manual_seed(0)
    return _GruCells(), _ids((2, 5))


class _FakeQuant(nn.Module):
    """Quantization-aware training: each Linear's input is fake-quantized to 8 bits by a scale from
    a running abs-max buffer (updated in forward as max(decayed, current)), rounded with a
    straight-through gradient; an integer step counter the forward increments."""

    def __init__(self) -> None:
        super().__init__()
        self.layers = nn.ModuleList([nn.Linear(10, 24), nn.Linear(24, 24), nn.Linear(24, 5)])
        self.register_buffer("absmax", torch.ones(3))
        self.register_buffer("steps", torch.zeros((), dtype=torch.long))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.steps.add_(1)
        for index, layer in enumerate(self.layers):
            current = x.detach().abs().amax()
            self.absmax[index] = torch.maximum(self.absmax[index] * 0.95, current)
            scale = self.absmax[index] / 127.0
            quantized = torch.clamp(torch.round(x / scale), -127, 127) * scale
            x = layer(x + (quantized - x).detach())
            if index < 2:
                x = F.relu(x)
        return x


def fake_quant() -> Built:
    torch.manual_seed(0)
    return _FakeQuant(), (torch.randn(4, 10),)


class _TwoHeadSum(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.trunk = nn.Sequential(nn.Linear(9, 16), nn.SiLU(), nn.Linear(16, 16), nn.SiLU())
        self.coarse, self.fine = nn.Linear(16, 3), nn.Linear(16, 6)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        h = self.trunk(x)
        return self.coarse(h), self.fine(h)


def two_head_sum() -> Built:
    torch.manual_seed(0)
    return _TwoHeadSum(), (torch.randn(6, 9),)


def weighted_smoothed_heads(outputs: tuple[torch.Tensor, torch.Tensor], labels: torch.Tensor) -> torch.Tensor:
    """The fine head's cross entropy with class weights, label smoothing 0.2 and class 5 ignored,
    plus 0.3 x the coarse head's (fine class // 2) cross entropy with label smoothing 0.1."""
    coarse, fine = outputs
    weights = torch.linspace(0.5, 2.0, fine.shape[-1], dtype=fine.dtype)
    return (F.cross_entropy(fine, labels, weight=weights, label_smoothing=0.2, ignore_index=5)
            + 0.3 * F.cross_entropy(coarse, labels // 2, label_smoothing=0.1))


def codegen() -> Built:
    from transformers import CodeGenConfig, CodeGenForCausalLM

    torch.manual_seed(0)
    config = CodeGenConfig(vocab_size=256, n_embd=32, n_layer=2, n_head=4, rotary_dim=4, n_positions=16, n_ctx=16,
                           n_inner=48, bos_token_id=1, eos_token_id=2)
    return _LogitsOf(CodeGenForCausalLM(_drop(config))), _ids()


def mpt() -> Built:
    from transformers import MptConfig, MptForCausalLM

    torch.manual_seed(0)
    config = MptConfig(vocab_size=256, d_model=16, n_layers=2, n_heads=2, expansion_ratio=3, max_seq_len=16,
                       attn_config={"alibi": True, "alibi_bias_max": 8, "softmax_scale": None, "clip_qkv": None})
    return _LogitsOf(MptForCausalLM(_drop(config))), _ids()


def qwen2_moe(experts: str = "batched_mm") -> Built:
    """transformers' Qwen2-MoE; `experts` is its experts_implementation. The matrix's float64
    reference cannot run transformers' default, grouped_mm (torch._grouped_mm takes no float64), so
    the matrix trains batched_mm (experts' weights gathered per token, bmm) and "eager" (a loop over
    the experts a batch hits, found by nonzero: a shape torch.export cannot know)."""
    from transformers import Qwen2MoeConfig, Qwen2MoeForCausalLM

    torch.manual_seed(0)
    config = Qwen2MoeConfig(vocab_size=256, hidden_size=16, num_hidden_layers=2, num_attention_heads=2,
                            num_key_value_heads=1, intermediate_size=32, moe_intermediate_size=12,
                            shared_expert_intermediate_size=20, num_experts=4, num_experts_per_tok=2,
                            decoder_sparse_step=1, max_position_embeddings=16, norm_topk_prob=False,
                            output_router_logits=False, experts_implementation=experts)
    return _LogitsOf(Qwen2MoeForCausalLM(_drop(config))), _ids()


def qwen2_moe_loop() -> Built:
    return qwen2_moe("eager")


class _TeacherForced(nn.Module):
    """A transformers encoder-decoder's logits with its decoder inputs the ids shifted right."""

    def __init__(self, model: nn.Module) -> None:
        super().__init__()
        self.model = model

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        config = self.model.config
        start = torch.full_like(ids[:, :1], config.decoder_start_token_id)
        return self.model(input_ids=ids, decoder_input_ids=torch.cat([start, ids[:, :-1]], dim=1)).logits


def pegasus() -> Built:
    from transformers import PegasusConfig, PegasusForConditionalGeneration

    torch.manual_seed(0)
    config = PegasusConfig(vocab_size=256, d_model=16, encoder_layers=1, decoder_layers=1, encoder_attention_heads=2,
                           decoder_attention_heads=2, encoder_ffn_dim=32, decoder_ffn_dim=32,
                           max_position_embeddings=16, scale_embedding=True, pad_token_id=0,
                           decoder_start_token_id=0)
    return _TeacherForced(PegasusForConditionalGeneration(_drop(config))), (torch.randint(3, 256, (2, 8)),)


def gemma2() -> Built:
    from transformers import Gemma2Config, Gemma2ForCausalLM

    torch.manual_seed(0)
    config = Gemma2Config(vocab_size=256, hidden_size=16, num_hidden_layers=2, num_attention_heads=2,
                          num_key_value_heads=1, head_dim=8, intermediate_size=32, max_position_embeddings=16,
                          sliding_window=4, attn_logit_softcapping=20.0, final_logit_softcapping=10.0,
                          query_pre_attn_scalar=8)
    return _LogitsOf(Gemma2ForCausalLM(_drop(config))), _ids()


def modernbert() -> Built:
    from transformers import ModernBertConfig, ModernBertForMaskedLM

    torch.manual_seed(0)
    config = ModernBertConfig(vocab_size=256, hidden_size=16, num_hidden_layers=3, num_attention_heads=2,
                              intermediate_size=24, max_position_embeddings=16, global_attn_every_n_layers=2,
                              local_attention=4, pad_token_id=0, bos_token_id=1, eos_token_id=2, cls_token_id=1,
                              sep_token_id=2, attn_implementation="sdpa")
    return _LogitsOf(ModernBertForMaskedLM(_drop(config))), (torch.randint(3, 256, (2, 8)),)


def poolformer() -> Built:
    from transformers import PoolFormerConfig, PoolFormerForImageClassification

    torch.manual_seed(0)
    config = PoolFormerConfig(num_channels=3, pool_size=3, hidden_sizes=[8, 16], depths=[1, 1], mlp_ratio=2.0,
                              num_encoder_blocks=2, patch_sizes=[7, 3], strides=[4, 2], padding=[2, 1], num_labels=5)
    return _LogitsOf(PoolFormerForImageClassification(_drop(config)), "pixel_values"), (torch.randn(2, 3, 16, 16),)


def cvt() -> Built:
    from transformers import CvtConfig, CvtForImageClassification

    torch.manual_seed(0)
    config = CvtConfig(num_channels=3, patch_sizes=[7, 3], patch_stride=[4, 2], patch_padding=[2, 1],
                       embed_dim=[8, 16], num_heads=[1, 2], depth=[1, 2], mlp_ratio=[2.0, 2.0],
                       attention_drop_rate=[0.0, 0.0], drop_rate=[0.0, 0.0], drop_path_rate=[0.0, 0.0],
                       qkv_bias=[True, True], cls_token=[False, True], qkv_projection_method=["dw_bn", "dw_bn"],
                       kernel_qkv=[3, 3], padding_kv=[1, 1], stride_kv=[2, 2], padding_q=[1, 1], stride_q=[1, 1],
                       num_labels=5)
    return _LogitsOf(CvtForImageClassification(config), "pixel_values"), (torch.randn(2, 3, 16, 16),)


class _Unet1d(nn.Module):
    """diffusers' UNet1DModel predicting the noise of a 1-D signal at fixed per-sample timesteps."""

    def __init__(self, model: nn.Module) -> None:
        super().__init__()
        self.model = model
        self.register_buffer("timesteps", torch.tensor([3.0, 40.0]))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.model(x, self.timesteps).sample - x


def unet1d() -> Built:
    diffusers = needs_diffusers("unet1d")
    torch.manual_seed(0)
    model = diffusers.UNet1DModel(sample_size=64, in_channels=2, out_channels=2, extra_in_channels=32,
                                  block_out_channels=(16, 32, 32),
                                  down_block_types=("DownBlock1DNoSkip", "DownBlock1D", "AttnDownBlock1D"),
                                  up_block_types=("AttnUpBlock1D", "UpBlock1D", "UpBlock1DNoSkip"),
                                  mid_block_type="UNetMidBlock1D", layers_per_block=1, flip_sin_to_cos=False,
                                  use_timestep_embedding=False, time_embedding_type="fourier",
                                  out_block_type=None, act_fn=None)
    return _Unet1d(model), (torch.randn(2, 2, 64),)


class _Vq(nn.Module):
    """diffusers' VQModel: encode, quantize (nearest codebook row, straight-through), decode; the
    reconstruction error and the commitment loss."""

    def __init__(self, model: nn.Module) -> None:
        super().__init__()
        self.model = model

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        out = self.model(x, return_dict=True)
        return out.sample - x, out.commit_loss


def vq_model() -> Built:
    diffusers = needs_diffusers("vq_model")
    torch.manual_seed(0)
    model = diffusers.VQModel(in_channels=3, out_channels=3, down_block_types=("DownEncoderBlock2D",) * 2,
                              up_block_types=("UpDecoderBlock2D",) * 2, block_out_channels=(8, 16),
                              layers_per_block=1, latent_channels=4, num_vq_embeddings=16, vq_embed_dim=4,
                              norm_num_groups=4, sample_size=8)
    return _Vq(model), (torch.randn(2, 3, 8, 8),)


def rebuild_and_commit(outputs: tuple[torch.Tensor, torch.Tensor], labels: torch.Tensor) -> torch.Tensor:
    """Mean squared reconstruction error per sample weighted by 1 + label, plus the commitment loss."""
    residual, commit = outputs
    return (residual.pow(2).flatten(1).mean(1) * (1 + labels.to(residual.dtype))).mean() + commit.mean()


class _Ties(nn.Module):
    """Gradients where values tie, as ReLU's zeros make them: max_pool2d over zeroed windows,
    amax and max(dim) over rows with repeated maxima, torch.maximum / minimum of two ReLUs (equal
    where both are zero: torch splits the gradient in half), clamp by tensor bounds, abs at zero."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(2, 4, 3, padding=1)
        self.a, self.b = nn.Linear(16, 12), nn.Linear(16, 12)
        self.head = nn.Linear(12 + 12 + 4 + 4, 5)
        self.register_buffer("low", torch.linspace(-0.5, 0.0, 12))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = F.relu(self.conv(x) - 0.3)
        pooled = F.max_pool2d(h, 2).flatten(1)  # (b, 16)
        left, right = F.relu(self.a(pooled)), F.relu(self.b(pooled))
        both = torch.maximum(left, right) + torch.minimum(left, right).abs()
        clipped = torch.clamp(left - right, min=self.low, max=torch.zeros_like(self.low))
        peaks = h.amax(dim=(2, 3))
        firsts = h.flatten(2).max(dim=2).values
        return self.head(torch.cat([both, clipped, peaks, firsts], dim=1))


def ties() -> Built:
    torch.manual_seed(0)
    return _Ties(), (torch.randn(3, 2, 4, 4),)


class _ComplexRotary(nn.Module):
    """Meta's reference Llama rotary: freqs_cis by torch.polar, q/k as complex pairs by view_as_complex."""
    def __init__(self) -> None:
        super().__init__()
        self.embed = nn.Embedding(256, 16)
        self.q, self.k, self.v, self.o = (nn.Linear(16, 16, bias=False) for _ in range(4))
        freqs = 1.0 / (10000 ** (torch.arange(0, 8, 2).float() / 8))
        angles = torch.outer(torch.arange(8).float(), freqs)
        self.register_buffer("freqs_cis", torch.polar(torch.ones_like(angles), angles), persistent=False)
        self.head = nn.Linear(16, 256)

    def rotate(self, x: torch.Tensor) -> torch.Tensor:
        b, t, h, d = x.shape
        xc = torch.view_as_complex(x.float().reshape(b, t, h, d // 2, 2))
        return torch.view_as_real(xc * self.freqs_cis[:t].view(1, t, 1, d // 2)).flatten(3).type_as(x)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        x = self.embed(ids)
        b, t, _ = x.shape
        q = self.rotate(self.q(x).view(b, t, 2, 8)).transpose(1, 2)
        k = self.rotate(self.k(x).view(b, t, 2, 8)).transpose(1, 2)
        v = self.v(x).view(b, t, 2, 8).transpose(1, 2)
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True).transpose(1, 2).reshape(b, t, 16)
        return self.head(x + self.o(a))


class _Volumes(nn.Module):
    """Conv3d, BatchNorm3d in train mode, trilinear upsampling, bicubic 2-D resize with align_corners."""
    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv3d(2, 4, 3, padding=1, stride=(1, 2, 2))
        self.norm = nn.BatchNorm3d(4)
        self.conv2 = nn.Conv2d(4, 3, 3, padding=1)
        self.head = nn.Linear(3 * 8 * 8 + 4, 5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = F.gelu(self.norm(self.conv(x)))                      # (b, 4, 4, 4, 4)
        up = F.interpolate(h, scale_factor=2, mode="trilinear", align_corners=False)  # (b, 4, 8, 8, 8)
        flat = up.mean(2)                                          # (b, 4, 8, 8)
        img = F.interpolate(self.conv2(flat), size=(8, 8), mode="bicubic", align_corners=True)
        return self.head(torch.cat([img.flatten(1), h.amax((2, 3, 4))], 1))


class _Diagonals(nn.Module):
    """einsum with a repeated index (a diagonal), torch.trace, diag_embed, triu/tril masks."""
    def __init__(self) -> None:
        super().__init__()
        self.a, self.b = nn.Linear(6, 36), nn.Linear(6, 6)
        self.head = nn.Linear(6 + 1 + 6, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        m = self.a(x).view(-1, 6, 6)
        diag = torch.einsum("bii->bi", m)
        tr = torch.stack([torch.trace(mi) for mi in m]).unsqueeze(1)
        sym = torch.triu(m) + torch.tril(m, -1).transpose(1, 2) + torch.diag_embed(torch.tanh(self.b(x)))
        return self.head(torch.cat([diag, tr, sym.sum(1)], 1))


class _SolveWhitening(nn.Module):
    """A learned whitening by torch.linalg.solve of a trained matrix."""
    def __init__(self) -> None:
        super().__init__()
        self.a = nn.Linear(5, 5)
        self.m = nn.Parameter(torch.eye(5) * 2 + 0.1 * torch.randn(5, 5))
        self.head = nn.Linear(5, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.linalg.solve(self.m, self.a(x).t()).t()
        return self.head(h)


def complex_rotary() -> Built:
    torch.manual_seed(0)
    return _ComplexRotary(), _ids()


def volumes() -> Built:
    torch.manual_seed(0)
    return _Volumes(), (torch.randn(2, 2, 4, 8, 8),)


def diagonals() -> Built:
    torch.manual_seed(0)
    return _Diagonals(), (torch.randn(3, 6),)


def solve_whitening() -> Built:
    torch.manual_seed(0)
    return _SolveWhitening(), (torch.randn(4, 5),)
