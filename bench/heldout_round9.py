"""Held-out training round 9 (issue 27; bench/train_heldout.py imports these).

Training programs no test or bench wrote before (rounds 1-8 read first),
chosen for forms users train that stress the backward and the partitioner.
By hand: an MLP whose widths change layer to layer at real sizes
(512 -> 384 -> 256 -> 768 -> 10); a convolution net whose channels go up and
down (3 -> 24 -> 64 -> 16 -> 48 -> 8) with strides and batch norm; a causal
transformer with a different FFN width and head count per layer; weights
tied across non-adjacent modules (layer 0's and layer 3's Linear, the
embedding and the output head); gradients through torch.where, masked_fill
and index_put with accumulate (repeated indices) into an activation; a model
whose every other layer is frozen (requires_grad=False), with a frozen batch
norm in eval mode inside a training model and persistent and non-persistent
buffers the forward reads; one block called at two depths and one head on
two branches; a custom torch.autograd.Function with a hand-written backward;
torch.utils.checkpoint's checkpoint_sequential over convolution blocks.
transformers at tiny sizes: GPT-NeoX (partial rotary, parallel residual),
OPT (learned positions offset by 2, ReLU, pre-norm), MPNet (relative
position buckets in an encoder), DINOv2 (layer scale, CLS and patch tokens
mean-joined), RoFormer (rotary in a BERT encoder), MobileViT (convolutions
around a transformer over unfolded patches), LeViT (attention biases indexed
by offsets, batch norm in Linear layers, shrinking attention), SqueezeBERT
(grouped Conv1d in place of Linear), FNet (Fourier mixing by torch.fft).
Random init, dropout p=0; each model takes one input tensor (the matrix's
batch maker) and makes what else it needs from fixed buffers.
"""

from __future__ import annotations

import torch
from heldout_round8 import _LogitsOf  # a transformers model's logits, as round 8 wraps them
from torch import nn
from torch.nn import functional as F
from torch.utils.checkpoint import checkpoint_sequential

Built = tuple[nn.Module, tuple[torch.Tensor, ...]]


def _ids() -> tuple[torch.Tensor, ...]:
    return (torch.randint(0, 256, (2, 8)),)


class _Widths512(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        widths = [512, 384, 256, 768]
        self.layers = nn.ModuleList(nn.Linear(a, b) for a, b in zip(widths, widths[1:]))
        self.norm = nn.LayerNorm(768)
        self.head = nn.Linear(768, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for layer in self.layers:
            x = F.gelu(layer(x))
        return self.head(self.norm(x))


def widths_512() -> Built:
    torch.manual_seed(0)
    return _Widths512(), (torch.randn(4, 512),)


class _UpDownConvs(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        channels, strides = [3, 24, 64, 16, 48, 8], [1, 2, 1, 2, 1]
        self.blocks = nn.Sequential(*(nn.Sequential(nn.Conv2d(a, b, 3, s, 1, bias=False), nn.BatchNorm2d(b),
                                                    nn.ReLU6())
                                      for a, b, s in zip(channels, channels[1:], strides)))
        self.head = nn.Linear(8, 5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.blocks(x).mean((2, 3)))


def updown_convs() -> Built:
    torch.manual_seed(0)
    return _UpDownConvs(), (torch.randn(2, 3, 16, 16),)


class _Block(nn.Module):
    """A pre-norm causal block of `heads` heads and an FFN `ffn` wide."""

    def __init__(self, width: int, heads: int, ffn: int) -> None:
        super().__init__()
        self.heads = heads
        self.norm1, self.norm2 = nn.LayerNorm(width), nn.LayerNorm(width)
        self.qkv, self.out = nn.Linear(width, 3 * width), nn.Linear(width, width)
        self.up, self.down = nn.Linear(width, ffn), nn.Linear(ffn, width)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, w = x.shape
        q, k, v = self.qkv(self.norm1(x)).view(b, t, 3, self.heads, w // self.heads).permute(2, 0, 3, 1, 4)
        attended = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.out(attended.transpose(1, 2).reshape(b, t, w))
        return x + self.down(F.silu(self.up(self.norm2(x))))


class _FfnPerLayer(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.embed = nn.Embedding(256, 24)
        self.blocks = nn.ModuleList([_Block(24, 2, 40), _Block(24, 4, 96), _Block(24, 3, 16)])
        self.norm, self.head = nn.LayerNorm(24), nn.Linear(24, 256, bias=False)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        x = self.embed(ids)
        for block in self.blocks:
            x = block(x)
        return self.head(self.norm(x))


def ffn_per_layer() -> Built:
    torch.manual_seed(0)
    return _FfnPerLayer(), _ids()


class _TiedFar(nn.Module):
    """Layer 3 is layer 0's Linear (the same Parameters), the head is the embedding."""

    def __init__(self) -> None:
        super().__init__()
        self.embed = nn.Embedding(256, 16)
        self.layers = nn.ModuleList(nn.Linear(16, 16) for _ in range(4))
        self.layers[3].weight = self.layers[0].weight
        self.layers[3].bias = self.layers[0].bias
        self.norm = nn.LayerNorm(16)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        x = self.embed(ids)
        for layer in self.layers:
            x = x + torch.tanh(layer(x))
        return self.norm(x) @ self.embed.weight.t()


def tied_far() -> Built:
    torch.manual_seed(0)
    return _TiedFar(), _ids()


class _MaskedGrads(nn.Module):
    """where between two branches, masked_fill by a computed mask, index_put accumulate of
    rows (indices that repeat) into an activation."""

    def __init__(self) -> None:
        super().__init__()
        self.a, self.b, self.c = nn.Linear(8, 12), nn.Linear(8, 12), nn.Linear(12, 12)
        self.head = nn.Linear(12, 5)
        self.register_buffer("rows", torch.tensor([0, 2, 2, 5, 1, 0]))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        left, right = self.a(x), self.b(x)
        h = torch.where(left > right, left * 2.0, torch.sigmoid(right))
        h = h.masked_fill(x[:, :1] < -0.5, 0.0)
        g = self.c(h)
        picked = g[:, :6].t()
        summed = g.t().index_put((self.rows,), picked, accumulate=True)
        spread = g.new_zeros(12, g.shape[0]).index_put((self.rows,), picked * picked, accumulate=True)
        return self.head(torch.relu(summed + spread).t())


def masked_grads() -> Built:
    torch.manual_seed(0)
    return _MaskedGrads(), (torch.randn(4, 8),)


class _FrozenHalf(nn.Module):
    """Every other layer frozen; a frozen batch norm in eval mode in a training model; a
    persistent normalization buffer and a non-persistent fixed projection the forward reads."""

    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("mean", torch.linspace(-0.2, 0.2, 10))
        self.register_buffer("proj", torch.randn(10, 10) / 4, persistent=False)
        self.layers = nn.ModuleList(nn.Linear(10, 10) for _ in range(4))
        self.norm = nn.BatchNorm1d(10)
        self.head = nn.Linear(10, 5)
        for layer in self.layers[::2]:
            layer.requires_grad_(False)
        self.norm.requires_grad_(False)

    def train(self, mode: bool = True) -> _FrozenHalf:
        super().train(mode)
        self.norm.eval()
        return self

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = (x - self.mean) @ self.proj
        for layer in self.layers:
            x = F.silu(layer(x))
        return self.head(self.norm(x))


def frozen_half() -> Built:
    torch.manual_seed(0)
    model = _FrozenHalf()
    model.norm.running_mean.uniform_(-0.1, 0.1)
    model.norm.running_var.uniform_(0.5, 1.5)
    return model.train(), (torch.randn(4, 10),)


class _SharedTwice(nn.Module):
    """One block at depths 1 and 3 with another between; one head on two branches."""

    def __init__(self) -> None:
        super().__init__()
        self.stem = nn.Linear(9, 14)
        self.shared = nn.Sequential(nn.LayerNorm(14), nn.Linear(14, 14), nn.GELU())
        self.middle = nn.Linear(14, 14)
        self.branch = nn.Linear(14, 14)
        self.head = nn.Linear(14, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.stem(x)
        h = h + self.shared(h)
        h = torch.tanh(self.middle(h))
        h = h + self.shared(h)
        return 0.5 * (self.head(h) + self.head(torch.relu(self.branch(h))))


def shared_twice() -> Built:
    torch.manual_seed(0)
    return _SharedTwice(), (torch.randn(4, 9),)


class _ScaledClip(torch.autograd.Function):
    """clamp to [-1, 1] forward, a straight-through gradient halved where clipped backward."""

    @staticmethod
    def forward(ctx: torch.autograd.function.FunctionCtx, x: torch.Tensor) -> torch.Tensor:
        ctx.save_for_backward(x)
        return x.clamp(-1.0, 1.0)

    @staticmethod
    def backward(ctx: torch.autograd.function.FunctionCtx, grad: torch.Tensor) -> torch.Tensor:
        (x,) = ctx.saved_tensors  # type: ignore[attr-defined]
        return torch.where(x.abs() > 1.0, grad * 0.5, grad)


class _CustomBackward(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.a, self.b = nn.Linear(8, 16), nn.Linear(16, 5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.b(_ScaledClip.apply(self.a(x) * 3.0))


def custom_backward() -> Built:
    torch.manual_seed(0)
    return _CustomBackward(), (torch.randn(4, 8),)


class _CheckpointSequential(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.body = nn.Sequential(*(nn.Sequential(nn.Conv2d(c, d, 3, padding=1), nn.GroupNorm(2, d), nn.SiLU())
                                    for c, d in [(3, 8), (8, 12), (12, 8), (8, 6)]))
        self.head = nn.Linear(6, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = checkpoint_sequential(self.body, 2, x, use_reentrant=False)
        return self.head(x.mean((2, 3)))


def checkpoint_seq() -> Built:
    torch.manual_seed(0)
    return _CheckpointSequential(), (torch.randn(2, 3, 8, 8),)


def _drop(config: object) -> object:
    for name in ("hidden_dropout", "attention_dropout", "hidden_dropout_prob", "attention_probs_dropout_prob",
                 "dropout", "activation_dropout", "drop_path_rate", "classifier_dropout_prob"):
        if isinstance(getattr(config, name, None), float):
            setattr(config, name, 0.0)
    return config


def gpt_neox() -> Built:
    from transformers import GPTNeoXConfig, GPTNeoXForCausalLM

    torch.manual_seed(0)
    config = GPTNeoXConfig(vocab_size=256, hidden_size=16, num_hidden_layers=2, num_attention_heads=2,
                           intermediate_size=32, rotary_pct=0.5, max_position_embeddings=16,
                           use_parallel_residual=True)
    return _LogitsOf(GPTNeoXForCausalLM(_drop(config))), _ids()


def opt() -> Built:
    from transformers import OPTConfig, OPTForCausalLM

    torch.manual_seed(0)
    config = OPTConfig(vocab_size=256, hidden_size=16, num_hidden_layers=2, num_attention_heads=2, ffn_dim=32,
                       max_position_embeddings=16, word_embed_proj_dim=16, layerdrop=0.0)
    return _LogitsOf(OPTForCausalLM(_drop(config))), _ids()


def mpnet() -> Built:
    from transformers import MPNetConfig, MPNetForMaskedLM

    torch.manual_seed(0)
    config = MPNetConfig(vocab_size=256, hidden_size=16, num_hidden_layers=2, num_attention_heads=2,
                         intermediate_size=32, max_position_embeddings=20)
    return _LogitsOf(MPNetForMaskedLM(_drop(config))), (torch.randint(3, 256, (2, 8)),)


def dinov2() -> Built:
    from transformers import Dinov2Config, Dinov2ForImageClassification

    torch.manual_seed(0)
    config = Dinov2Config(image_size=8, patch_size=4, num_channels=3, hidden_size=16, num_hidden_layers=2,
                          num_attention_heads=2, mlp_ratio=2, layerscale_value=0.1, num_labels=5)
    return _LogitsOf(Dinov2ForImageClassification(_drop(config)), "pixel_values"), (torch.randn(2, 3, 8, 8),)


def roformer() -> Built:
    from transformers import RoFormerConfig, RoFormerForMaskedLM

    torch.manual_seed(0)
    config = RoFormerConfig(vocab_size=256, hidden_size=16, embedding_size=16, num_hidden_layers=2,
                            num_attention_heads=2, intermediate_size=32, max_position_embeddings=16)
    return _LogitsOf(RoFormerForMaskedLM(_drop(config))), _ids()


def mobilevit() -> Built:
    from transformers import MobileViTConfig, MobileViTForImageClassification

    torch.manual_seed(0)
    config = MobileViTConfig(image_size=32, patch_size=2, num_channels=3, hidden_sizes=[16, 16, 16],
                             neck_hidden_sizes=[8, 8, 16, 16, 16, 24, 32], num_attention_heads=2, mlp_ratio=2.0,
                             expand_ratio=2.0, num_labels=5)
    return _LogitsOf(MobileViTForImageClassification(_drop(config)), "pixel_values"), (torch.randn(2, 3, 32, 32),)


def levit() -> Built:
    from transformers import LevitConfig, LevitForImageClassification

    torch.manual_seed(0)
    config = LevitConfig(image_size=32, patch_size=16, num_channels=3, hidden_sizes=[16, 24],
                         num_attention_heads=[2, 3],
                         depths=[1, 1], key_dim=[8, 8], attention_ratio=[2, 2], mlp_ratio=[2, 2],
                         down_ops=[["Subsample", 8, 2, 4, 2, 2]], num_labels=5)
    return _LogitsOf(LevitForImageClassification(_drop(config)), "pixel_values"), (torch.randn(2, 3, 32, 32),)


def squeezebert() -> Built:
    from transformers import SqueezeBertConfig, SqueezeBertForSequenceClassification

    torch.manual_seed(0)
    config = SqueezeBertConfig(vocab_size=256, hidden_size=16, embedding_size=16, num_hidden_layers=2,
                               num_attention_heads=2, intermediate_size=32, max_position_embeddings=16,
                               q_groups=2, k_groups=2, v_groups=2, post_attention_groups=2,
                               intermediate_groups=4, output_groups=4, num_labels=5)
    return _LogitsOf(SqueezeBertForSequenceClassification(_drop(config))), _ids()


def fnet() -> Built:
    from transformers import FNetConfig, FNetForSequenceClassification

    torch.manual_seed(0)
    config = FNetConfig(vocab_size=256, hidden_size=16, num_hidden_layers=2, intermediate_size=32,
                        max_position_embeddings=16, use_tpu_fourier_optimizations=False, num_labels=5)
    return _LogitsOf(FNetForSequenceClassification(_drop(config))), _ids()


def opt_125m() -> Built:
    """OPT-125M at its library's full-size configuration (12 layers, width 768, vocabulary 50,272),
    random init; one sequence of 32 tokens."""
    from transformers import OPTConfig, OPTForCausalLM

    torch.manual_seed(0)
    return _LogitsOf(OPTForCausalLM(_drop(OPTConfig()))), (torch.randint(0, 50272, (1, 32)),)


def _agreement(got: list[torch.Tensor], reference: list[torch.Tensor]) -> tuple[float, list[float], list[float]]:
    """How far `got` is from `reference`, gradient by gradient, judged model-wide: the largest absolute
    difference of each gradient divided by the largest absolute element of all the reference's gradients
    (the model-wide figure is their maximum), and each gradient's cosine similarity to its reference (1.0
    where both are zero)."""
    scale = max(float(r.abs().max()) for r in reference) or 1.0
    differences = [float((g.double() - r.double()).abs().max()) / scale for g, r in zip(got, reference, strict=True)]
    cosines = []
    for g, r in zip(got, reference, strict=True):
        g64, r64 = g.double().flatten(), r.double().flatten()
        norms = float(g64.norm() * r64.norm())
        cosines.append(float(g64 @ r64) / norms if norms else float(g64.abs().max() == r64.abs().max()))
    return max(differences), differences, cosines


def _eager_gradients(model: nn.Module, ids: torch.Tensor, labels: torch.Tensor,
                     dtype: torch.dtype) -> tuple[float, list[torch.Tensor]]:
    """Eager's loss and trained-parameter gradients of one forward + backward of a copy of `model` in `dtype`."""
    import copy
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "test" / "python"))
    from training_cases import language_model_loss

    reference = copy.deepcopy(model).to(dtype)
    loss = language_model_loss(reference(ids), labels)
    loss.backward()
    return float(loss.detach()), [p.grad for p in reference.parameters() if p.requires_grad]


def full_size_step(level: int = 0, save: str | None = None) -> None:
    """One forward + backward of `opt_125m` through `rducc.compile_training(optimizer=None)` at -O`level`
    against eager float32 on the same batch, with eager float32 against eager float64 as the yardstick:
    the loss's relative difference; model-wide, the largest gradient difference over the largest gradient
    element of the whole model; per gradient, that difference and the cosine similarity; with compile and
    step wall times. `save` keeps rducc's gradients (torch.save) for a later look."""
    import sys
    import time
    from pathlib import Path

    import rducc

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "test" / "python"))
    from training_cases import language_model_loss

    model, (ids,) = opt_125m()
    model.train()
    labels = torch.randint(0, 256, ids.shape, generator=torch.Generator().manual_seed(1))
    loss32, eager32 = _eager_gradients(model, ids, labels, torch.float32)
    loss64, eager64 = _eager_gradients(model, ids, labels, torch.float64)
    names = [name for name, p in model.named_parameters() if p.requires_grad]
    started = time.perf_counter()
    program = rducc.compile_training(model, (ids, labels), optimizer=None, loss_fn=language_model_loss,
                                     opt_level=level)
    compiled = time.perf_counter()
    loss, *outputs = program.step(ids, labels)
    stepped = time.perf_counter()
    gradients = [torch.as_tensor(g) for g in outputs]
    if save:
        torch.save(dict(zip(names, gradients, strict=True)), save)
    loss = float(torch.as_tensor(loss))
    print(f"opt_125m -O{level}: {sum(g.numel() for g in eager32) / 1e6:.1f}M trained parameters in "
          f"{len(names)} tensors; compile {compiled - started:.0f} s, step {stepped - compiled:.1f} s", flush=True)
    print(f"loss: rducc {loss:.6f}, eager f32 {loss32:.6f} (rel diff {abs(loss - loss32) / abs(loss32):.3g}), "
          f"eager f64 {loss64:.6f} (f32 off f64 {abs(loss32 - loss64) / abs(loss64):.3g}, "
          f"rducc off f64 {abs(loss - loss64) / abs(loss64):.3g})")
    rows = {"rducc off eager f32": _agreement(gradients, eager32),
            "rducc off eager f64": _agreement(gradients, eager64),
            "eager f32 off eager f64 (yardstick)": _agreement(eager32, eager64)}
    scale = max(float(g.abs().max()) for g in eager64)
    signal = [i for i, g in enumerate(eager64) if float(g.abs().max()) > 1e-6 * scale]
    print(f"{len(names) - len(signal)} gradients are zero up to rounding (largest f64 element under 1e-6 of the "
          f"model's): the cosines are over the other {len(signal)}")
    for label, (wide, differences, cosines) in rows.items():
        worst = max(range(len(names)), key=differences.__getitem__)
        least = min(signal, key=cosines.__getitem__)
        print(f"{label}: model-wide max |diff| / max |grad| {wide:.3g} ({names[worst]}); "
              f"largest 1 - cosine {1 - cosines[least]:.3g} ({names[least]})")
    _, rducc64, rducc_cos = rows["rducc off eager f64"]
    yardstick, eager_gap, eager_cos = rows["eager f32 off eager f64 (yardstick)"]
    beyond = [i for i in range(len(names)) if rducc64[i] > 2 * yardstick
              or (i in signal and 1 - rducc_cos[i] > max(2 * (1 - eager_cos[i]), 1e-6))]
    print(f"gradients beyond the yardstick (farther from f64 than twice eager f32's model-wide figure, or a cosine "
          f"deficit over twice eager f32's and 1e-6): {len(beyond)} of {len(names)}")
    for i in beyond:
        print(f"  {names[i]}: rducc {rducc64[i]:.3g} vs eager f32 {eager_gap[i]:.3g}; "
              f"1 - cosine {1 - rducc_cos[i]:.3g} vs {1 - eager_cos[i]:.3g}")

if __name__ == "__main__":
    import argparse

    parser = argparse.ArgumentParser(description="Round 9's full-size step (the small models run through "
                                                 "bench/train_heldout.py --models round9)")
    parser.add_argument("--full-size", action="store_true", help="opt_125m: one forward + backward against eager")
    parser.add_argument("--level", type=int, default=0)
    parser.add_argument("--save-gradients", metavar="PATH", help="keep rducc's gradients (torch.save) here")
    args = parser.parse_args()
    if args.full_size:
        full_size_step(args.level, args.save_gradients)
    else:
        parser.print_help()
