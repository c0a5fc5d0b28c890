"""Held-out training round 14 (issue 27; bench/train_heldout.py imports these).

Training programs no test or bench wrote before (rounds 1-13, train_zoo and the zoo rows read first).
transformers' families not trained before: FocalNet (focal modulation: a gated hierarchy of depthwise
convolutions, a global context by mean, a 1x1 modulator), Hiera (mask-unit attention over unrolled
tokens, query pooling by max over strided units), Mamba2 (the chunked SSD scan of its PyTorch path:
segment sums by cumsum and a lower-triangular mask, a gated RMSNorm) and Gemma 3 text (interleaved
sliding and global layers with their own rotary bases, q/k RMSNorm, soft embedding scaling).
diffusers' models not trained before: SD3's MMDiT (joint attention over image patches and a text
context, AdaLayerNormZero on both streams, AdaLayerNormContinuous out) and AutoencoderTiny (TAESD:
residual conv blocks, a tanh latent clamp, nearest upsampling) -- diffusers is a local probe as in
round 7. By hand: a Python list of layers whose widths change layer to layer, each with its own
activation from a ModuleDict (Mish, Softsign, Hardtanh, Tanhshrink, LogSigmoid) and its own scale
from a ParameterDict, a ParameterList of per-layer biases (`param_containers`); SegNet-style max
pooling with indices undone by `max_unpool2d` (`unpool_segnet`); a gradient-reversal
autograd.Function (DANN: identity forward, -lambda x grad backward, ctx holding a float) under a
domain head beside a class head (`gradient_reversal`); a model ensemble run by `torch.func.vmap` of
`functional_call` over stacked module state (`vmap_ensemble`); a KAN layer (B-spline bases of each
input on a fixed grid buffer by the Cox-de Boor recursion, learned spline coefficients) stacked with
changing widths (`kan_splines`); Gaussian NLL + multilabel margin + Huber on one head (`three_losses`;
`gaussian_nll` with torch's F.gaussian_nll_loss); `baddbmm` / `tensordot` / `kron` / `block_diag` /
`F.pdist` and a covariance in one forward (`algebra_mix` by hand, `algebra_torch_cov` by torch.cov);
in-place activations on the forward's own tensors inside nn.Sequential of nn.Sequential with one
shared submodule (`nested_shared`); MoCo v2's momentum encoder (frozen parameters the forward moves
by an EMA in torch.no_grad) and key queue (`moco_queue`); outputs preallocated and filled by slice
assignment, then in-place ops on views (`prealloc_fill`).
Random init, dropout p=0; each model takes one input tensor (the matrix's batch maker).
"""

from __future__ import annotations

import copy
import math

import torch
from heldout_round7 import _generator_buffer, needs_diffusers
from heldout_round8 import _LogitsOf
from heldout_round10 import _drop, _ids
from torch import nn
from torch.nn import functional as F

Built = tuple[nn.Module, tuple[torch.Tensor, ...]]


def focalnet() -> Built:
    from transformers import FocalNetConfig, FocalNetForImageClassification

    torch.manual_seed(0)
    config = FocalNetConfig(image_size=16, patch_size=2, embed_dim=8, hidden_sizes=[8, 16], depths=[1, 1],
                            focal_levels=[2, 2], focal_windows=[3, 3], drop_path_rate=0.0, use_layerscale=True,
                            layerscale_value=0.5, normalize_modulator=True, use_post_layernorm_in_modulation=True,
                            num_labels=5)
    return _LogitsOf(FocalNetForImageClassification(config), "pixel_values"), (torch.randn(2, 3, 16, 16),)


def hiera() -> Built:
    from transformers import HieraConfig, HieraForImageClassification

    torch.manual_seed(0)
    config = HieraConfig(embed_dim=8, image_size=[32, 32], patch_size=[3, 3], patch_stride=[2, 2],
                         patch_padding=[1, 1], depths=[1, 1, 1], num_heads=[1, 2, 2], num_query_pool=2,
                         query_stride=[2, 2], masked_unit_size=[4, 4], masked_unit_attention=[True, True, False],
                         num_labels=5)
    return _LogitsOf(HieraForImageClassification(config), "pixel_values"), (torch.randn(2, 3, 32, 32),)


def mamba2() -> Built:
    from transformers import Mamba2Config, Mamba2ForCausalLM

    torch.manual_seed(0)
    config = Mamba2Config(num_heads=4, head_dim=8, vocab_size=256, hidden_size=16, state_size=8, num_hidden_layers=2,
                          expand=2, conv_kernel=3, n_groups=2, chunk_size=4, pad_token_id=0, use_cache=False)
    return _LogitsOf(Mamba2ForCausalLM(config)), _ids()


def gemma3_text() -> Built:
    from transformers import Gemma3ForCausalLM, Gemma3TextConfig

    torch.manual_seed(0)
    config = Gemma3TextConfig(vocab_size=256, hidden_size=16, intermediate_size=32, num_hidden_layers=3,
                              num_attention_heads=4, num_key_value_heads=2, head_dim=8, max_position_embeddings=16,
                              sliding_window=3, layer_types=["sliding_attention", "sliding_attention",
                                                             "full_attention"],
                              query_pre_attn_scalar=8, final_logit_softcapping=30.0, pad_token_id=0)
    return _LogitsOf(Gemma3ForCausalLM(_drop(config))), _ids()


class _JointDenoiser(nn.Module):
    """SD3's flow-matching step with a stand-in text encoder: fixed token ids embedded as the joint
    stream, their mean projected as the pooled conditioning; noised latents x (1 - t) + noise t at fixed
    t, the MMDiT's velocity minus (noise - x)."""

    def __init__(self, transformer: nn.Module) -> None:
        super().__init__()
        self.transformer = transformer
        self.text = nn.Embedding(32, 12)
        self.pool = nn.Linear(12, 10)
        self.register_buffer("ids", torch.arange(2 * 5).view(2, 5) % 32, persistent=False)
        self.register_buffer("t", torch.tensor([0.2, 0.9]).view(2, 1, 1, 1), persistent=False)
        _generator_buffer(self, "noise", (2, 4, 8, 8), 17)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        context = self.text(self.ids)
        noisy = (1 - self.t) * x + self.t * self.noise
        velocity = self.transformer(hidden_states=noisy, encoder_hidden_states=context,
                                    pooled_projections=self.pool(context.mean(1)),
                                    timestep=1000 * self.t.flatten()).sample
        return velocity - (self.noise - x)


def sd3_mmdit() -> Built:
    diffusers = needs_diffusers("sd3_mmdit")
    torch.manual_seed(0)
    model = diffusers.SD3Transformer2DModel(sample_size=8, patch_size=2, in_channels=4, num_layers=2,
                                            attention_head_dim=8, num_attention_heads=2, joint_attention_dim=12,
                                            caption_projection_dim=16, pooled_projection_dim=10, out_channels=4,
                                            pos_embed_max_size=8, qk_norm="rms_norm")
    return _JointDenoiser(model), (torch.randn(2, 4, 8, 8),)


class _TinyVae(nn.Module):
    """TAESD round trip: encode (tanh-clamped latents), decode, the reconstruction minus the input."""

    def __init__(self, vae: nn.Module) -> None:
        super().__init__()
        self.vae = vae

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.vae.decode(self.vae.encode(x).latents).sample - x


def autoencoder_tiny() -> Built:
    diffusers = needs_diffusers("autoencoder_tiny")
    torch.manual_seed(0)
    vae = diffusers.AutoencoderTiny(encoder_block_out_channels=(8, 8), decoder_block_out_channels=(8, 8),
                                    num_encoder_blocks=(1, 1), num_decoder_blocks=(1, 1), latent_channels=2)
    return _TinyVae(vae), (torch.randn(2, 3, 8, 8),)


def reconstruction_mse(residual: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """Mean squared residual, weighted per sample by 1 + label."""
    return (residual.pow(2).flatten(1).mean(1) * (1 + labels.to(residual.dtype))).mean()


class _ParamContainers(nn.Module):
    """A Python list of Linear layers 10 -> 18 -> 7 -> 22 -> 12, each followed by its own activation
    (a ModuleDict by name), scaled by its own ParameterDict entry and shifted by a ParameterList bias."""

    ACTIVATIONS = ("mish", "softsign", "hardtanh", "tanhshrink", "logsigmoid")

    def __init__(self, widths: tuple[int, ...] = (10, 18, 7, 22, 12), classes: int = 5) -> None:
        super().__init__()
        self.layers = nn.ModuleList(nn.Linear(a, b) for a, b in zip(widths, widths[1:], strict=False))
        self.act = nn.ModuleDict({"mish": nn.Mish(), "softsign": nn.Softsign(), "hardtanh": nn.Hardtanh(-0.5, 0.7),
                                  "tanhshrink": nn.Tanhshrink(), "logsigmoid": nn.LogSigmoid()})
        self.scale = nn.ParameterDict({f"s{i}": nn.Parameter(torch.full((w,), 1.0 + 0.1 * i))
                                       for i, w in enumerate(widths[1:])})
        self.shift = nn.ParameterList(nn.Parameter(0.01 * torch.randn(w)) for w in widths[1:])
        self.head = nn.Linear(widths[-1], classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for i, layer in enumerate(self.layers):
            act = self.act[self.ACTIVATIONS[i % len(self.ACTIVATIONS)]]
            x = act(layer(x)) * self.scale[f"s{i}"] + self.shift[i]
        return self.head(x)


def param_containers() -> Built:
    torch.manual_seed(0)
    return _ParamContainers(), (torch.randn(6, 10),)


class _UnpoolSegNet(nn.Module):
    """SegNet: convolutions and max pools that return their indices, the decoder undoing each pool by
    max_unpool2d at those indices; per-image classes from the decoded map."""

    def __init__(self, classes: int = 4) -> None:
        super().__init__()
        self.enc1 = nn.Sequential(nn.Conv2d(3, 6, 3, padding=1), nn.BatchNorm2d(6), nn.ReLU())
        self.enc2 = nn.Sequential(nn.Conv2d(6, 10, 3, padding=1), nn.ReLU())
        self.dec2 = nn.Sequential(nn.Conv2d(10, 6, 3, padding=1), nn.ReLU())
        self.dec1 = nn.Conv2d(6, classes, 3, padding=1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h, i1 = F.max_pool2d(self.enc1(x), 2, return_indices=True)
        h, i2 = F.max_pool2d(self.enc2(h), 2, return_indices=True)
        h = self.dec2(F.max_unpool2d(h, i2, 2))
        return self.dec1(F.max_unpool2d(h, i1, 2)).mean((2, 3))


def unpool_segnet() -> Built:
    torch.manual_seed(0)
    return _UnpoolSegNet(), (torch.randn(2, 3, 8, 8),)


class _ReverseGradient(torch.autograd.Function):
    """DANN's gradient reversal: the identity forward, -strength x the gradient backward."""

    @staticmethod
    def forward(ctx: torch.autograd.function.FunctionCtx, x: torch.Tensor, strength: float) -> torch.Tensor:
        ctx.strength = strength  # type: ignore[attr-defined]
        return x.view_as(x)

    @staticmethod
    def backward(ctx: torch.autograd.function.FunctionCtx, grad: torch.Tensor) -> tuple[torch.Tensor, None]:
        return -ctx.strength * grad, None  # type: ignore[attr-defined]


class _GradientReversal(nn.Module):
    """A feature extractor under a class head and, through the gradient reversal, a domain head."""

    def __init__(self) -> None:
        super().__init__()
        self.features = nn.Sequential(nn.Linear(9, 16), nn.ReLU(), nn.Linear(16, 12), nn.Tanh())
        self.classes = nn.Linear(12, 4)
        self.domain = nn.Sequential(nn.Linear(12, 8), nn.ReLU(), nn.Linear(8, 2))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        f = self.features(x)
        return torch.cat([self.classes(f), self.domain(_ReverseGradient.apply(f, 0.3))], dim=1)


def gradient_reversal() -> Built:
    torch.manual_seed(0)
    return _GradientReversal(), (torch.randn(6, 9),)


def class_and_domain(out: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """Cross entropy of the classes plus cross entropy of the domain (label parity)."""
    return F.cross_entropy(out[:, :4], labels) + F.cross_entropy(out[:, 4:], labels % 2)


class _VmapEnsemble(nn.Module):
    """Three copies of a small MLP whose stacked parameters (torch.func.stack_module_state) are this
    module's own; the forward runs them all by vmap over functional_call and averages the logits."""

    def __init__(self, members: int = 3) -> None:
        super().__init__()
        made = [nn.Sequential(nn.Linear(7, 12), nn.GELU(), nn.Linear(12, 5)) for _ in range(members)]
        stacked, _ = torch.func.stack_module_state(made)
        self.names = list(stacked)
        self.stacked = nn.ParameterList(nn.Parameter(stacked[name].detach().clone()) for name in self.names)
        self.base = [copy.deepcopy(made[0]).to("meta")]  # a list: not a submodule, no parameters of its own

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        def member(params: tuple[torch.Tensor, ...], x: torch.Tensor) -> torch.Tensor:
            return torch.func.functional_call(self.base[0], dict(zip(self.names, params, strict=True)), (x,))

        return torch.vmap(member, in_dims=(0, None))(tuple(self.stacked), x).mean(0)


def vmap_ensemble() -> Built:
    torch.manual_seed(0)
    return _VmapEnsemble(), (torch.randn(6, 7),)


class _KanLayer(nn.Module):
    """A Kolmogorov-Arnold layer: each input's cubic B-spline bases on a fixed uniform grid (a buffer;
    Cox-de Boor recursion) times learned coefficients, plus a SiLU base branch."""

    def __init__(self, inputs: int, outputs: int, intervals: int = 4, order: int = 3) -> None:
        super().__init__()
        step = 2.0 / intervals
        grid = torch.arange(-order, intervals + order + 1) * step - 1.0
        self.register_buffer("grid", grid.expand(inputs, -1).contiguous())
        self.order = order
        self.base = nn.Linear(inputs, outputs)
        self.coefficients = nn.Parameter(0.1 * torch.randn(outputs, inputs, intervals + order))

    def bases(self, x: torch.Tensor) -> torch.Tensor:
        g, x = self.grid, x.unsqueeze(-1)
        b = ((x >= g[:, :-1]) & (x < g[:, 1:])).to(x.dtype)
        for k in range(1, self.order + 1):
            b = ((x - g[:, : -(k + 1)]) / (g[:, k:-1] - g[:, : -(k + 1)]) * b[..., :-1]
                 + (g[:, k + 1:] - x) / (g[:, k + 1:] - g[:, 1:-k]) * b[..., 1:])
        return b                                                                   # (batch, inputs, bases)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.base(F.silu(x)) + torch.einsum("bik,oik->bo", self.bases(x), self.coefficients)


class _KanSplines(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.layers = nn.Sequential(_KanLayer(6, 9), nn.LayerNorm(9), _KanLayer(9, 5, intervals=3, order=2))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.layers(torch.tanh(x))


def kan_splines() -> Built:
    torch.manual_seed(0)
    return _KanSplines(), (torch.randn(8, 6),)


class _ThreeHeads(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.trunk = nn.Sequential(nn.Linear(8, 16), nn.SiLU())
        self.mean, self.log_var = nn.Linear(16, 3), nn.Linear(16, 3)
        self.tags = nn.Linear(16, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.trunk(x)
        return torch.cat([self.mean(h), self.log_var(h), self.tags(h)], dim=1)


def three_losses() -> Built:
    torch.manual_seed(0)
    return _ThreeHeads(), (torch.randn(6, 8),)


def _margin_huber(out: torch.Tensor, labels: torch.Tensor) -> tuple[torch.Tensor, ...]:
    """The three heads, a regression target made from the label, and multilabel margin over four tags (the
    label's tag then the tag after it, -1 ending the list) plus Huber (delta 0.5) of the mean."""
    mean, log_var, tags = out[:, :3], out[:, 3:6], out[:, 6:]
    target = (labels.to(out.dtype) / 4).unsqueeze(1).expand(-1, 3)
    multi = torch.stack([labels, (labels + 1) % 4, torch.full_like(labels, -1), torch.full_like(labels, -1)], 1)
    return mean, log_var, target, F.multilabel_margin_loss(tags, multi) + F.huber_loss(mean, target, delta=0.5)


def gaussian_margin_huber(out: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """A Gaussian NLL written out (variance exp(log_var), the constant included) plus `_margin_huber`'s two."""
    mean, log_var, target, rest = _margin_huber(out, labels)
    nll = 0.5 * (log_var + (mean - target).pow(2) / log_var.exp() + math.log(2 * math.pi)).mean()
    return nll + rest


def torch_gaussian_margin_huber(out: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """The same loss with torch's F.gaussian_nll_loss, whose `torch.any(var < 0)` check is a branch on the
    tensors' values (torch.export refuses it; the bench records the refusal)."""
    mean, log_var, target, rest = _margin_huber(out, labels)
    return F.gaussian_nll_loss(mean, target, log_var.exp(), full=True) + rest


class _AlgebraMix(nn.Module):
    """baddbmm with a learned bias, tensordot, a Kronecker-factored weight, a block-diagonal mixing matrix,
    the batch covariance (by hand, or torch.cov) and the features' pairwise distances (F.pdist), into a head.
    Every contraction is over features, none over the batch (dp=2 halves it)."""

    def __init__(self, torch_cov: bool = False) -> None:
        super().__init__()
        self.torch_cov = torch_cov
        self.a, self.b = nn.Parameter(0.3 * torch.randn(2, 3)), nn.Parameter(0.3 * torch.randn(3, 2))
        self.right = nn.Parameter(0.3 * torch.randn(4, 6, 3))
        self.bias = nn.Parameter(torch.zeros(4, 1, 3))
        self.core = nn.Parameter(0.3 * torch.randn(3, 6, 5))
        self.blocks = nn.ParameterList([nn.Parameter(0.5 * torch.randn(2, 2)), nn.Parameter(0.5 * torch.randn(3, 3))])
        self.head = nn.Linear(5 + 5 + 10, 5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:                            # x (b, 6)
        h = torch.tanh(x @ torch.kron(self.a, self.b))                            # (b, 6)
        mixed = torch.baddbmm(self.bias, h.unsqueeze(0).expand(4, -1, -1), self.right)  # (4, b, 3)
        t = torch.tensordot(mixed.mean(0), self.core, dims=([1], [0])).mean(1)     # (b, 5)
        f = t @ torch.block_diag(*self.blocks)                                    # (b, 5)
        centred = f - f.mean(0)
        cov = torch.cov(f.t()) if self.torch_cov else centred.t() @ centred / (f.shape[0] - 1)  # (5, 5)
        distances = F.pdist(f.t())                                                # (10,): between features
        b = f.shape[0]
        return self.head(torch.cat([f, cov.diagonal().expand(b, -1), distances.expand(b, -1)], dim=1))


def algebra_mix() -> Built:
    torch.manual_seed(0)
    return _AlgebraMix(), (torch.randn(6, 6),)


def algebra_torch_cov() -> Built:
    """`algebra_mix` with torch.cov for the covariance: torch.export refuses its aten.equal (the bench records it)."""
    torch.manual_seed(0)
    return _AlgebraMix(torch_cov=True), (torch.randn(6, 6),)


class _NestedShared(nn.Module):
    """nn.Sequential of nn.Sequential stages; one LayerNorm + Linear submodule shared by two stages; in-place
    ReLU modules and the forward's own mul_ / add_ / relu_ on activations it made."""

    def __init__(self) -> None:
        super().__init__()
        shared = nn.Sequential(nn.LayerNorm(14), nn.Linear(14, 14))
        self.stages = nn.Sequential(
            nn.Sequential(nn.Linear(8, 14), nn.ReLU(inplace=True)),
            nn.Sequential(shared, nn.ReLU(inplace=True), nn.Linear(14, 14)),
            nn.Sequential(nn.Sequential(shared, nn.Hardswish(inplace=True)), nn.Linear(14, 14)))
        self.head = nn.Linear(14, 5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.stages[0](x)
        g = self.stages[1](h)
        g.mul_(0.5).add_(h).relu_()
        return self.head(self.stages[2](g).add_(g))


def nested_shared() -> Built:
    torch.manual_seed(0)
    return _NestedShared(), (torch.randn(6, 8),)


class _MocoQueue(nn.Module):
    """MoCo v2: a trained query encoder; a key encoder whose parameters (requires_grad=False) the forward
    moves toward the query encoder's by an EMA under torch.no_grad (p_k = 0.9 p_k + 0.1 p_q) before using
    them; a queue of past keys (a buffer) the forward shifts and refills with this batch's keys (copy_ of a
    concatenation). Output: each query's logits against its own key and the queue (positives at 0)."""

    def __init__(self, width: int = 8, queue: int = 10) -> None:
        super().__init__()
        self.query = nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, width))
        self.key = copy.deepcopy(self.query)
        for parameter in self.key.parameters():
            parameter.requires_grad_(False)
        self.register_buffer("queue", F.normalize(torch.randn(queue, width), dim=1))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        q = F.normalize(self.query(x), dim=1)
        with torch.no_grad():
            for p_k, p_q in zip(self.key.parameters(), self.query.parameters(), strict=True):
                p_k.mul_(0.9).add_(p_q.detach(), alpha=0.1)
            k = F.normalize(self.key(x.flip(1)), dim=1)
        logits = torch.cat([(q * k).sum(1, keepdim=True), q @ self.queue.clone().t()], dim=1) / 0.2
        with torch.no_grad():
            self.queue.copy_(torch.cat([k, self.queue[: -k.shape[0]]]))
        return logits


def moco_queue() -> Built:
    torch.manual_seed(0)
    return _MocoQueue(), (torch.randn(4, 6),)


def positive_first(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """InfoNCE: the positive is column 0 for every query (the labels are not read)."""
    return F.cross_entropy(logits, torch.zeros_like(labels))


class _PreallocFill(nn.Module):
    """Per-group outputs written into a preallocated zeros tensor by slice assignment in a Python loop
    (groups of widths 3, 5 and 2 from layers of their own widths), then in-place ops on views of it:
    `out.narrow(1, 2, 5).add_(shift)`, `out[:, :4] *= 2` and `out[:, 4:].sigmoid_()`."""

    def __init__(self, groups: tuple[int, ...] = (3, 5, 2)) -> None:
        super().__init__()
        self.groups = groups
        self.layers = nn.ModuleList(nn.Sequential(nn.Linear(7, 4 + 3 * i), nn.GELU(), nn.Linear(4 + 3 * i, width))
                                    for i, width in enumerate(groups))
        self.shift = nn.Parameter(0.1 * torch.randn(5))
        self.head = nn.Linear(sum(groups), 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = x.new_zeros(x.shape[0], sum(self.groups))
        start = 0
        for layer, width in zip(self.layers, self.groups, strict=True):
            out[:, start:start + width] = layer(x)
            start += width
        out.narrow(1, 2, 5).add_(self.shift)
        out[:, :4] *= 2
        out[:, 4:].sigmoid_()
        return self.head(out)


def prealloc_fill() -> Built:
    torch.manual_seed(0)
    return _PreallocFill(), (torch.randn(5, 7),)
