"""Held-out training round 12 (issue 27; bench/train_heldout.py imports these).

Training programs no test or bench wrote before (rounds 1-11 read first), all
by hand: a stack whose width changes layer to layer with residuals that
zero-pad (F.pad) where the width grows and slice where it shrinks, a
LayerNorm of each layer's own width; one Parameter read as two Linear weights
of different shapes (its [24, 16] self and a .view(48, 8) of it); a loss over
the masked subset of the tokens by nanmean (the others set to NaN by where);
an Euler integrator calling one submodule in a Python loop a fixed number of
times (from the input's shape) with each step's time concatenated to its
input; message passing over a fixed edge list (gather by the source nodes,
scatter_add into the destinations, scatter_reduce amax beside it, a degree
normalization); a frozen middle layer (requires_grad=False) whose output is
detached on half its channels.
Random init, dropout p=0; each model takes one input tensor (the matrix's
batch maker).
"""

from __future__ import annotations

import torch
from heldout_round9 import _ids
from torch import nn
from torch.nn import functional as F

Built = tuple[nn.Module, tuple[torch.Tensor, ...]]


class _PaddedResiduals(nn.Module):
    """Widths 12 -> 20 -> 7 -> 16 -> 5: each layer a LayerNorm of its input width, a Linear and GELU; its
    residual the input zero-padded up (F.pad) where the width grows, its first columns where it shrinks."""

    def __init__(self, widths: tuple[int, ...] = (12, 20, 7, 16, 5)) -> None:
        super().__init__()
        self.norms = nn.ModuleList(nn.LayerNorm(w) for w in widths[:-1])
        self.layers = nn.ModuleList(nn.Linear(a, b) for a, b in zip(widths, widths[1:], strict=False))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for norm, layer in zip(self.norms, self.layers, strict=True):
            out = F.gelu(layer(norm(x)))
            grow = out.shape[-1] - x.shape[-1]
            x = out + (F.pad(x, (0, grow)) if grow >= 0 else x[..., :out.shape[-1]])
        return x


def padded_residuals() -> Built:
    torch.manual_seed(0)
    return _PaddedResiduals(), (torch.randn(5, 12),)


class _ReshapedShared(nn.Module):
    """One [24, 16] Parameter read as a Linear 16 -> 24 weight and, viewed as [48, 8], as a Linear 8 -> 48
    weight on the first projection's output folded into pairs of 8; a head on both."""

    def __init__(self) -> None:
        super().__init__()
        self.shared = nn.Parameter(0.25 * torch.randn(24, 16))
        self.inp = nn.Linear(6, 16)
        self.head = nn.Linear(24 + 48, 5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.tanh(F.linear(torch.tanh(self.inp(x)), self.shared))      # (b, 24)
        folded = F.linear(h.view(h.shape[0], 3, 8), self.shared.view(48, 8))  # (b, 3, 48)
        return self.head(torch.cat([h, F.silu(folded).mean(1)], dim=1))


def reshaped_shared() -> Built:
    torch.manual_seed(0)
    return _ReshapedShared(), (torch.randn(4, 6),)


class _TokenScorer(nn.Module):
    """Per-token classes over an embedding and a small MLP; the loss keeps the tokens with an even id."""

    def __init__(self) -> None:
        super().__init__()
        self.embed = nn.Embedding(256, 12)
        self.mlp = nn.Sequential(nn.Linear(12, 20), nn.SiLU(), nn.Linear(20, 6))

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        return torch.cat([self.mlp(self.embed(ids)), (ids % 2).unsqueeze(-1).to(torch.float32)], dim=-1)


def token_scorer() -> Built:
    torch.manual_seed(0)
    return _TokenScorer(), _ids()


def nanmean_subset(out: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """Cross entropy of the tokens whose id was even (the model's last column: 0), averaged by nanmean:
    the other tokens' losses set to NaN by torch.where (their gradient must be zero, not NaN)."""
    logits, odd = out[..., :-1], out[..., -1]
    per_token = F.cross_entropy(logits.flatten(0, 1), labels.flatten(), reduction="none").view_as(odd)
    kept = torch.where(odd == 0, per_token, torch.full_like(per_token, float("nan")))
    return torch.nanmean(kept)


class _EulerLoop(nn.Module):
    """h' = f(h, t) integrated by Euler steps: one submodule called in a Python loop x.shape[1] // 2 times
    (a count fixed by the input's shape), the step's time concatenated to its input."""

    def __init__(self) -> None:
        super().__init__()
        self.field = nn.Sequential(nn.Linear(9, 16), nn.Tanh(), nn.Linear(16, 8))
        self.inp = nn.Linear(8, 8)
        self.head = nn.Linear(8, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        steps = x.shape[1] // 2
        h = self.inp(x)
        for step in range(steps):
            t = torch.full_like(h[:, :1], step / steps)
            h = h + self.field(torch.cat([h, t], dim=1)) / steps
        return self.head(h)


def euler_loop() -> Built:
    torch.manual_seed(0)
    return _EulerLoop(), (torch.randn(5, 8),)


class _MessagePassing(nn.Module):
    """Two rounds of message passing over 6 nodes a sample and a fixed edge list: messages from the
    source nodes' features (gather), summed into their destinations (scatter_add) over their in-degree,
    the largest message (scatter_reduce amax, include_self=False) beside it; nodes mean-pooled."""

    def __init__(self) -> None:
        super().__init__()
        self.inp = nn.Linear(3, 10)
        self.message = nn.ModuleList(nn.Linear(10, 10) for _ in range(2))
        self.update = nn.ModuleList(nn.Linear(30, 10) for _ in range(2))
        self.head = nn.Linear(10, 4)
        src = torch.tensor([0, 1, 2, 3, 4, 5, 0, 2, 4, 1])
        dst = torch.tensor([1, 2, 3, 4, 5, 0, 3, 5, 1, 4])
        self.register_buffer("src", src)
        self.register_buffer("dst", dst)
        self.register_buffer("degree", torch.bincount(dst, minlength=6).to(torch.float32).clamp(min=1))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.tanh(self.inp(x.view(x.shape[0], 6, 3)))                    # (b, 6, 10)
        for message, update in zip(self.message, self.update, strict=True):
            sent = message(torch.gather(h, 1, self.src.view(1, -1, 1).expand(h.shape[0], -1, h.shape[2])))
            index = self.dst.view(1, -1, 1).expand_as(sent)
            summed = torch.zeros_like(h).scatter_add(1, index, sent) / self.degree.view(1, -1, 1)
            largest = torch.zeros_like(h).scatter_reduce(1, index, sent, "amax", include_self=False)
            h = h + torch.tanh(update(torch.cat([h, summed, largest], dim=-1)))
        return self.head(h.mean(1))


def message_passing() -> Built:
    torch.manual_seed(0)
    return _MessagePassing(), (torch.randn(4, 18),)


class _FrozenMiddle(nn.Module):
    """Three blocks; the middle one (a Linear and a LayerNorm) frozen (requires_grad=False), its output
    detached on its first half of channels, so the first block learns only through the other half."""

    def __init__(self) -> None:
        super().__init__()
        self.first = nn.Sequential(nn.Linear(7, 14), nn.ReLU())
        self.middle = nn.Sequential(nn.Linear(14, 14), nn.LayerNorm(14))
        self.last = nn.Sequential(nn.Linear(14, 9), nn.GELU(), nn.Linear(9, 5))
        for parameter in self.middle.parameters():
            parameter.requires_grad_(False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        m = self.middle(self.first(x))
        return self.last(torch.cat([m[:, :7].detach(), m[:, 7:]], dim=1))


def frozen_middle() -> Built:
    torch.manual_seed(0)
    return _FrozenMiddle(), (torch.randn(6, 7),)
