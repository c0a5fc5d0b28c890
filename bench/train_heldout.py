"""Held-out training models (issue 27): forms no test writes, trained a few
steps of SGD and of AdamW in float32 through `rducc.compile_training` against
eager PyTorch and torch.optim on the same batches, on one socket and at dp=2 /
tp=2 on sn40l-8, with the float32 matrix's verdict (`bench/train_matrix.py`:
losses within rtol 1e-5 at every step, parameters within rtol 1e-4 after the
last, `training_cases.assert_matches`) and, here, every floating buffer the
forward updates (batch norm's running statistics, an EMA) held to the same bar.

    .venv/bin/python bench/train_heldout.py [--models widths_37,...] [--optimizers sgd,adamw]
        [--levels 2] [--splits 1,dp2,tp2] [--steps 4] [--dynamo-only --levels 0]

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

import train_matrix  # noqa: E402
from training_cases import Case, language_model_loss  # noqa: E402


class _Logits(nn.Module):
    """A transformers model's logits for `input_ids` (optionally with decoder inputs shifted right)."""

    def __init__(self, model: nn.Module, seq2seq: bool = False) -> None:
        super().__init__()
        self.model, self.seq2seq = model, seq2seq

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        if self.seq2seq:
            return self.model(input_ids=ids, decoder_input_ids=self.model._shift_right(ids)).logits
        return self.model(input_ids=ids).logits


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
}


def main(argv: list[str] | None = None) -> Any:
    train_matrix.CASES.update(HELD_OUT)
    train_matrix.HELD_OUT.update(HELD_OUT)
    train_matrix.CHECK_BUFFERS = True
    defaults = ["--models", ",".join(HELD_OUT), "--precisions", "fp32", "--levels", "2", "--steps", "4",
                "--no-dynamo"]
    given = sys.argv[1:] if argv is None else argv
    if "--dynamo-only" in given:
        defaults.remove("--no-dynamo")
    return train_matrix.main(defaults + given)


if __name__ == "__main__":
    main()
