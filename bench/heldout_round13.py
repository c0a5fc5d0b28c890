"""Held-out training round 13 (issue 27; bench/train_heldout.py imports these).

Training programs no test or bench wrote before (rounds 1-12 and train_zoo read first).
transformers' families not trained before: DeepSeek-V2 (multi-head latent attention: low-rank
q and kv projections, a decoupled rotary part; a MoE layer with shared experts), Cohere2
(sliding-window layers interleaved with a global layer without rotary), Swin-V2 (cosine
attention with a clamped learned logit scale, a continuous position bias from an MLP over
log-spaced coordinates, post-norm), Nystromformer (landmark attention by segment means and an
iterative Moore-Penrose pseudo-inverse, a depthwise convolution over the values), Switch
Transformers (T5 with top-1 routed experts under an expert capacity, teacher forced), LFM2
(gated short causal convolutions beside attention), GPT-OSS (attention sinks, clamped SwiGLU
experts, sliding layers), Llama 4 text (chunked attention, no-rotary layers, a sigmoid-routed
MoE with a shared expert, q/k L2 norm).
By hand: an MLP-Mixer whose token mixing runs on the transpose and whose residual goes through
a reshape / permute to a grid and a depthwise convolution there (`mixer_permuted`); one shared
layer applied a number of times per row that the data chooses (`torch.bucketize` of the row's
norm, `torch.where` keeping the rows that stopped: `adaptive_depth`); distillation from a frozen
teacher with two student heads, three losses weighted (`distill_heads`); an ArcFace margin
loss through `acos` / `cos` on normalized features and class centres (`arcface`); mixup inside
the batch with cross entropy on probability targets (`mixup_soft`); a per-pixel focal + Dice
loss (`focal_dice`); weight-standardized convolutions (BiT) with a hypernetwork producing each
sample's head (`standardized_hyper`); EmbeddingBag with learned per_sample_weights
(`bag_weights`); a middle block whose parameters are bfloat16 (`bf16_middle`); a two-layer
bidirectional ReLU nn.RNN (`relu_rnn`); a gradient penalty by torch.autograd.grad with
create_graph inside the forward (`gradient_penalty`).
Random init, dropout p=0; each model takes one input tensor (the matrix's batch maker).
"""

from __future__ import annotations

import torch
from heldout_round8 import _LogitsOf
from heldout_round10 import _drop, _ids, _TeacherForced
from torch import nn
from torch.nn import functional as F

Built = tuple[nn.Module, tuple[torch.Tensor, ...]]
_LM = {"vocab_size": 256, "hidden_size": 16, "intermediate_size": 32, "num_hidden_layers": 2,
       "num_attention_heads": 4, "num_key_value_heads": 2, "max_position_embeddings": 16, "pad_token_id": 0,
       "bos_token_id": 1, "eos_token_id": 2}
"""The tiny causal LM every transformers family here starts from."""


def _causal_lm(config_name: str, model_name: str, **options: object) -> Built:
    import transformers

    torch.manual_seed(0)
    config = getattr(transformers, config_name)(**{**_LM, **options})
    return _LogitsOf(getattr(transformers, model_name)(_drop(config))), _ids()


def deepseek_v2() -> Built:
    """DeepSeek-V2; its experts batched_mm (the matrix's float64 reference cannot run grouped_mm, round 10's
    qwen2_moe)."""
    return _causal_lm("DeepseekV2Config", "DeepseekV2ForCausalLM", num_attention_heads=2, num_key_value_heads=2,
                      kv_lora_rank=8, q_lora_rank=12, qk_rope_head_dim=4, qk_nope_head_dim=4, v_head_dim=6,
                      head_dim=4, n_routed_experts=4, n_shared_experts=1, num_experts_per_tok=2,
                      moe_intermediate_size=8, first_k_dense_replace=1, topk_method="greedy",
                      norm_topk_prob=True, routed_scaling_factor=1.5, experts_implementation="batched_mm")


def cohere2() -> Built:
    return _causal_lm("Cohere2Config", "Cohere2ForCausalLM", sliding_window=3, logit_scale=0.5,
                      num_hidden_layers=3, layer_types=["sliding_attention", "sliding_attention", "full_attention"])


def swinv2() -> Built:
    from transformers import Swinv2Config, Swinv2ForImageClassification

    torch.manual_seed(0)
    config = Swinv2Config(image_size=16, patch_size=2, embed_dim=8, depths=[2, 1], num_heads=[2, 4], window_size=4,
                          mlp_ratio=2.0, drop_path_rate=0.0, num_labels=5)
    return _LogitsOf(Swinv2ForImageClassification(config), "pixel_values"), (torch.randn(2, 3, 16, 16),)


def nystromformer() -> Built:
    from transformers import NystromformerConfig, NystromformerForSequenceClassification

    torch.manual_seed(0)
    config = NystromformerConfig(vocab_size=256, hidden_size=16, num_hidden_layers=2, num_attention_heads=2,
                                 intermediate_size=32, max_position_embeddings=16, segment_means_seq_len=8,
                                 num_landmarks=4, conv_kernel_size=3, num_labels=5, pad_token_id=0)
    return _LogitsOf(NystromformerForSequenceClassification(_drop(config))), _ids()


class _MaskedTeacherForced(_TeacherForced):
    """Round 10's teacher forcing with the encoder's attention mask given (all ones): transformers' Switch
    Transformers encoder builds its own only outside tracing (`not is_torchdynamo_compiling()`) and
    indexes None under torch.export."""

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        start = torch.full_like(ids[:, :1], self.model.config.decoder_start_token_id)
        return self.model(input_ids=ids, attention_mask=torch.ones_like(ids),
                          decoder_input_ids=torch.cat([start, ids[:, :-1]], dim=1)).logits


def switch_transformers() -> Built:
    from transformers import SwitchTransformersConfig, SwitchTransformersForConditionalGeneration

    torch.manual_seed(0)
    config = SwitchTransformersConfig(vocab_size=256, d_model=16, d_kv=8, d_ff=32, num_layers=2,
                                      num_decoder_layers=2, num_heads=2, num_experts=4, expert_capacity=5,
                                      encoder_sparse_step=1, decoder_sparse_step=2, router_jitter_noise=0.0,
                                      relative_attention_num_buckets=8, relative_attention_max_distance=16,
                                      dropout_rate=0.0, pad_token_id=0, decoder_start_token_id=0)
    return _MaskedTeacherForced(SwitchTransformersForConditionalGeneration(config)), _ids()


def lfm2() -> Built:
    return _causal_lm("Lfm2Config", "Lfm2ForCausalLM", num_hidden_layers=3,
                      layer_types=["conv", "full_attention", "conv"], conv_L_cache=3, block_multiple_of=8,
                      block_auto_adjust_ff_dim=True)


def gpt_oss() -> Built:
    return _causal_lm("GptOssConfig", "GptOssForCausalLM", intermediate_size=12, head_dim=4, num_local_experts=4,
                      num_experts_per_tok=2, sliding_window=3, swiglu_limit=1.5,
                      layer_types=["sliding_attention", "full_attention"],
                      rope_parameters={"rope_type": "default", "rope_theta": 10000.0},
                      experts_implementation="batched_mm")


def llama4() -> Built:
    return _causal_lm("Llama4TextConfig", "Llama4ForCausalLM", intermediate_size=12, intermediate_size_mlp=24,
                      head_dim=4, num_local_experts=3, num_experts_per_tok=1, attention_chunk_size=4,
                      moe_layers=[1], no_rope_layers=[1, 0], layer_types=["chunked_attention", "full_attention"],
                      attn_temperature_tuning=True, floor_scale=4, attn_scale=0.1,
                      experts_implementation="batched_mm")


class _MixerPermuted(nn.Module):
    """MLP-Mixer on 4 x 4 patches of an 8 x 8 image: token mixing by a Linear over the transposed
    tokens, channel mixing by a Linear; a third residual reshapes the tokens to their grid, permutes
    to channels-first, runs a depthwise 3 x 3 convolution and permutes back."""

    def __init__(self, width: int = 12, tokens: int = 16) -> None:
        super().__init__()
        self.patch = nn.Linear(3 * 2 * 2, width)
        self.token_norm, self.channel_norm = nn.LayerNorm(width), nn.LayerNorm(width)
        self.token_mlp = nn.Sequential(nn.Linear(tokens, 24), nn.GELU(), nn.Linear(24, tokens))
        self.channel_mlp = nn.Sequential(nn.Linear(width, 20), nn.GELU(), nn.Linear(20, width))
        self.grid = nn.Conv2d(width, width, 3, padding=1, groups=width)
        self.head = nn.Linear(width, 5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b = x.shape[0]
        patches = x.view(b, 3, 4, 2, 4, 2).permute(0, 2, 4, 1, 3, 5).reshape(b, 16, 12)
        t = self.patch(patches)                                                     # (b, 16, w)
        t = t + self.token_mlp(self.token_norm(t).transpose(1, 2)).transpose(1, 2)
        grid = t.reshape(b, 4, 4, -1).permute(0, 3, 1, 2)
        t = t + F.silu(self.grid(grid)).permute(0, 2, 3, 1).reshape(b, 16, -1)
        t = t + self.channel_mlp(self.channel_norm(t))
        return self.head(t.mean(1))


def mixer_permuted() -> Built:
    torch.manual_seed(0)
    return _MixerPermuted(), (torch.randn(4, 3, 8, 8),)


class _AdaptiveDepth(nn.Module):
    """One shared residual layer applied to each row as many times (0-4) as the bucket of its input's norm
    says (torch.bucketize against fixed boundaries); rows that stopped keep their state by torch.where."""

    def __init__(self) -> None:
        super().__init__()
        self.inp = nn.Linear(10, 14)
        self.layer = nn.Sequential(nn.LayerNorm(14), nn.Linear(14, 14), nn.Tanh())
        self.head = nn.Linear(14, 4)
        self.register_buffer("bounds", torch.tensor([2.5, 3.0, 3.4, 3.8]))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        depth = torch.bucketize(x.norm(dim=1), self.bounds).unsqueeze(1)            # (b, 1) in 0..4
        h = self.inp(x)
        for step in range(self.bounds.numel()):
            h = torch.where(depth > step, h + self.layer(h), h)
        return self.head(h)


def adaptive_depth() -> Built:
    torch.manual_seed(0)
    return _AdaptiveDepth(), (torch.randn(8, 10),)


class _DistillHeads(nn.Module):
    """A trained student with a class head and a feature head beside a frozen teacher (requires_grad=False);
    the output packs student logits, teacher logits, student features and teacher features."""

    def __init__(self) -> None:
        super().__init__()
        self.teacher = nn.Sequential(nn.Linear(9, 24), nn.GELU(), nn.Linear(24, 16))
        self.teacher_head = nn.Linear(16, 5)
        self.student = nn.Sequential(nn.Linear(9, 12), nn.ReLU())
        self.student_head, self.student_features = nn.Linear(12, 5), nn.Linear(12, 16)
        for parameter in [*self.teacher.parameters(), *self.teacher_head.parameters()]:
            parameter.requires_grad_(False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        features = self.teacher(x)
        s = self.student(x)
        return torch.cat([self.student_head(s), self.teacher_head(features), self.student_features(s), features], 1)


def distill_heads() -> Built:
    torch.manual_seed(0)
    return _DistillHeads(), (torch.randn(6, 9),)


def distill_loss(out: torch.Tensor, labels: torch.Tensor, temperature: float = 2.0) -> torch.Tensor:
    """0.5 x cross entropy + 0.4 x T^2 KL(teacher || student at temperature T) + 0.1 x feature MSE."""
    student, teacher, student_features, teacher_features = out.split([5, 5, 16, 16], dim=1)
    soft = F.kl_div(F.log_softmax(student / temperature, -1), F.softmax(teacher / temperature, -1),
                    reduction="batchmean")
    return 0.5 * F.cross_entropy(student, labels) + 0.4 * temperature ** 2 * soft + 0.1 * F.mse_loss(
        student_features, teacher_features)


class _CosineClassifier(nn.Module):
    """Normalized embeddings against normalized class centres: the cosines (the loss adds ArcFace's margin)."""

    def __init__(self) -> None:
        super().__init__()
        self.embed = nn.Sequential(nn.Linear(8, 16), nn.SiLU(), nn.Linear(16, 10))
        self.centres = nn.Parameter(torch.randn(6, 10))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.normalize(self.embed(x), dim=1) @ F.normalize(self.centres, dim=1).t()


def arcface() -> Built:
    torch.manual_seed(0)
    return _CosineClassifier(), (torch.randn(6, 8),)


def arcface_loss(cosines: torch.Tensor, labels: torch.Tensor, scale: float = 8.0,
                 margin: float = 0.3) -> torch.Tensor:
    """ArcFace: the true class's angle (acos of its cosine) widened by a margin, cos of it, scaled logits."""
    theta = torch.acos(cosines.clamp(-1 + 1e-6, 1 - 1e-6))
    target = F.one_hot(labels, cosines.shape[1]).to(cosines.dtype)
    return F.cross_entropy(scale * torch.cos(theta + margin * target), labels)


class _MixupNet(nn.Module):
    """A small conv net on each image mixed with the batch's reversed image (mixup, lam 0.7, inside the model)."""

    def __init__(self) -> None:
        super().__init__()
        self.features = nn.Sequential(nn.Conv2d(3, 6, 3, padding=1), nn.BatchNorm2d(6), nn.ReLU(),
                                      nn.Conv2d(6, 8, 3, stride=2), nn.ReLU())
        self.head = nn.Linear(8, 5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        mixed = 0.7 * x + 0.3 * x.flip(0)
        return self.head(self.features(mixed).mean((2, 3)))


def mixup_soft() -> Built:
    torch.manual_seed(0)
    return _MixupNet(), (torch.randn(4, 3, 8, 8),)


def mixup_loss(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """Cross entropy on probability targets: 0.7 one-hot of each label + 0.3 one-hot of the reversed batch's,
    label-smoothed 0.05."""
    classes = logits.shape[1]
    target = 0.7 * F.one_hot(labels, classes) + 0.3 * F.one_hot(labels.flip(0), classes)
    return F.cross_entropy(logits, target.to(logits.dtype), label_smoothing=0.05)


class _PixelLogits(nn.Module):
    """Per-pixel, per-channel mask logits from a two-layer convolution with a residual."""

    def __init__(self) -> None:
        super().__init__()
        self.a = nn.Conv2d(3, 8, 3, padding=1)
        self.b = nn.Conv2d(8, 3, 3, padding=1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.b(F.gelu(self.a(x)))


def focal_dice() -> Built:
    torch.manual_seed(0)
    return _PixelLogits(), (torch.randn(2, 3, 6, 6),)


def focal_dice_loss(logits: torch.Tensor, labels: torch.Tensor, gamma: float = 2.0) -> torch.Tensor:
    """Binary focal loss ((1 - p_t)^gamma x BCE, alpha 0.25) plus soft Dice over each sample's mask."""
    target = labels.to(logits.dtype)
    p = torch.sigmoid(logits)
    bce = F.binary_cross_entropy_with_logits(logits, target, reduction="none")
    p_t = p * target + (1 - p) * (1 - target)
    alpha = 0.25 * target + 0.75 * (1 - target)
    focal = (alpha * (1 - p_t).pow(gamma) * bce).mean()
    inter = (p * target).flatten(1).sum(1)
    dice = 1 - (2 * inter + 1) / (p.flatten(1).sum(1) + target.flatten(1).sum(1) + 1)
    return focal + dice.mean()


class _StandardizedConv(nn.Conv2d):
    """BiT's weight-standardized convolution: the kernel centred and scaled per output channel each forward."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        w = self.weight
        mean = w.mean(dim=(1, 2, 3), keepdim=True)
        var = w.var(dim=(1, 2, 3), keepdim=True, unbiased=False)
        return F.conv2d(x, (w - mean) / torch.sqrt(var + 1e-5), self.bias, self.stride, self.padding)


class _StandardizedHyper(nn.Module):
    """Weight-standardized convolutions with GroupNorm, pooled; a hypernetwork maps the pooled features to
    each sample's own head weights ([5, 8] per sample, applied by bmm) beside a shared head."""

    def __init__(self) -> None:
        super().__init__()
        self.body = nn.Sequential(_StandardizedConv(3, 8, 3, padding=1), nn.GroupNorm(2, 8), nn.ReLU(),
                                  _StandardizedConv(8, 8, 3, stride=2, padding=1), nn.GroupNorm(4, 8), nn.ReLU())
        self.hyper = nn.Linear(8, 5 * 8)
        self.shared = nn.Linear(8, 5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        f = self.body(x).mean((2, 3))                                                  # (b, 8)
        own = self.hyper(f).view(-1, 5, 8)
        return self.shared(f) + 0.1 * torch.bmm(own, f.unsqueeze(2)).squeeze(2)


def standardized_hyper() -> Built:
    torch.manual_seed(0)
    return _StandardizedHyper(), (torch.randn(3, 3, 8, 8),)


class _BagWeights(nn.Module):
    """nn.EmbeddingBag (sum) of each row's ids weighted per id by a learned score of a second embedding
    (per_sample_weights), and a max bag beside it."""

    def __init__(self) -> None:
        super().__init__()
        self.bag = nn.EmbeddingBag(256, 12, mode="sum")
        self.max_bag = nn.EmbeddingBag(256, 6, mode="max")
        self.score_embed = nn.Embedding(256, 4)
        self.score = nn.Linear(4, 1)
        self.head = nn.Linear(18, 5)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        weights = torch.sigmoid(self.score(self.score_embed(ids))).squeeze(-1)       # (b, t)
        return self.head(torch.cat([self.bag(ids, per_sample_weights=weights), self.max_bag(ids)], dim=1))


def bag_weights() -> Built:
    torch.manual_seed(0)
    return _BagWeights(), _ids((4, 6))


class _Bf16Middle(nn.Module):
    """A float32 input layer and head around a middle Linear + LayerNorm whose parameters are bfloat16:
    activations cast down into it (to its weight's dtype) and back up out of it; torch.optim updates the
    middle in bfloat16."""

    def __init__(self) -> None:
        super().__init__()
        self.inp = nn.Linear(8, 16)
        self.middle = nn.Sequential(nn.Linear(16, 16), nn.LayerNorm(16)).to(torch.bfloat16)
        self.head = nn.Linear(16, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.relu(self.inp(x))
        return self.head(h + self.middle(h.to(self.middle[0].weight.dtype)).to(h.dtype))


def bf16_middle() -> Built:
    torch.manual_seed(0)
    return _Bf16Middle(), (torch.randn(6, 8),)


class _ReluRnn(nn.Module):
    """A two-layer bidirectional nn.RNN with ReLU (not tanh) over embeddings, per-token tags."""

    def __init__(self) -> None:
        super().__init__()
        self.embed = nn.Embedding(256, 10)
        self.rnn = nn.RNN(10, 8, num_layers=2, nonlinearity="relu", bidirectional=True, batch_first=True)
        self.head = nn.Linear(16, 7)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        return self.head(self.rnn(self.embed(ids))[0])


def relu_rnn() -> Built:
    torch.manual_seed(0)
    return _ReluRnn(), _ids((2, 6))


class _GradientPenalty(nn.Module):
    """A critic's scores and, appended, the norm of its gradient with respect to its input taken by
    torch.autograd.grad(create_graph=True) inside the forward (WGAN-GP)."""

    def __init__(self) -> None:
        super().__init__()
        self.critic = nn.Sequential(nn.Linear(6, 16), nn.Tanh(), nn.Linear(16, 3))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.detach().requires_grad_(True)
        scores = self.critic(x)
        (grad,) = torch.autograd.grad(scores.sum(), x, create_graph=True)
        return torch.cat([scores, grad.norm(dim=1, keepdim=True)], dim=1)


def gradient_penalty() -> Built:
    torch.manual_seed(0)
    return _GradientPenalty(), (torch.randn(5, 6),)


def penalized_loss(out: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """Cross entropy of the scores plus 0.5 x (||grad|| - 1)^2."""
    return F.cross_entropy(out[:, :3], labels) + 0.5 * (out[:, 3] - 1).pow(2).mean()
