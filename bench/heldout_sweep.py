"""A held-out sweep of issue 30's classes, in forms the test suite does not write.

Each program is compiled at -O0 and -O2 and run against eager on its example
and on other inputs; random programs are checked by shape, dtype and moments.
Prints one line per (program, level): ok, or the first line of what failed.

    .venv/bin/python bench/heldout_sweep.py [--cli] [--since=CASE] [NAME_SUBSTRING ...]

`--cli` also runs each program through the command line (`rducc` on its saved export,
`rducc-run` on each input's .npy files) against eager. `--since=CASE`: that case and the ones
after it (`--since=ComplexLinearOfRealInput` is round 15, `--since=MixedPrecisionComplexEdge` round 16,
`--since=CenteredSpectrumOfComplex` round 17, `--since=ComplexRollPadWhere` round 18; round 22's idioms
from real code (gen27) are the class `idioms`: `bench/heldout_sweep.py idioms`).
"""

from __future__ import annotations

import contextlib
import io
import math
import re
import sys
import tempfile
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn
from torch.export import Dim

import rducc
from rducc.errors import RduccError


def _g(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def randn(*shape: int, seed: int = 0, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    return torch.randn(*shape, generator=_g(seed)).to(dtype)


@dataclass
class Case:
    name: str
    cls: str
    module: nn.Module
    inputs: list[tuple]  # the first is the example
    kwargs: dict[str, Any] = field(default_factory=dict)
    check: Callable[[Any, Any], None] | None = None  # (got, eager) for random programs
    refuses: dict[int, str] = field(default_factory=dict)
    """Inputs (by index) another data-dependent value than the example's makes one clear
    `RduccError`: what it must say (the op; the source line is checked too)."""


CASES: list[Case] = []


def case(cls: str, inputs: list[tuple], **kwargs: Any):
    def register(module_class: type) -> type:
        check = kwargs.pop("check", None)
        refuses = kwargs.pop("refuses", {})
        module = module_class().train() if kwargs.pop("train", False) else module_class().eval()
        CASES.append(Case(module_class.__name__, cls, module, inputs, kwargs, check, refuses))
        return module_class
    return register


# ----------------------------------------------------------------- complex at the edge
@case("complex", [(randn(3, 4), randn(3, 4, seed=1)), (randn(3, 4, seed=2), randn(3, 4, seed=3))])
class ComplexOfParts(nn.Module):
    def forward(self, a, b):
        return torch.complex(a, b) * (1 + 2j)


@case("complex", [(randn(5).abs(), randn(5, seed=1))])
class PolarOut(nn.Module):
    def forward(self, r, theta):
        return torch.polar(r, theta)


@case("complex", [(randn(2, 3, 4),)])
class ViewAsComplexOfOutput(nn.Module):
    def forward(self, x):
        y = torch.tanh(x).reshape(2, 6, 2)
        return torch.view_as_complex(y.contiguous())


@case("complex", [(torch.randn(3, 4, dtype=torch.complex64, generator=_g(4)),)])
class RealImagAngle(nn.Module):
    def forward(self, z):
        return z.real + 1, z.imag * 2, z.angle(), torch.abs(z)


@case("complex", [(torch.randn(4, 4, dtype=torch.complex64, generator=_g(5)),
                   torch.randn(4, 2, dtype=torch.complex64, generator=_g(6)))])
class ComplexMatmul(nn.Module):
    def forward(self, z, w):
        return z @ w


@case("complex", [(torch.randn(2, 6, dtype=torch.complex64, generator=_g(7)),)])
class ComplexReduce(nn.Module):
    def forward(self, z):
        return z.sum(-1), z.mean(0), torch.fft.ifft(z)


@case("complex", [(torch.randn(3, 4, dtype=torch.complex64, generator=_g(8)),)])
class ComplexInputLayout(nn.Module):
    def forward(self, z):
        return (z.transpose(0, 1) * 2, z[:, -2:], z.flip(-1), torch.cat([z, z.conj()], -1), z.select(-1, 0),
                z.unsqueeze(-1).sum(-1), z.sum(), z.mean(-1, keepdim=True))


@case("complex", [(randn(2, 8),)])
class IrfftRoundTrip(nn.Module):
    def forward(self, x):
        spectrum = torch.fft.rfft(x) * torch.exp(1j * torch.arange(5.0))
        return torch.fft.irfft(spectrum, n=8), spectrum.conj()


# ----------------------------------------------------------------- python numbers
@case("numbers", [(torch.tensor([2.0, 3.0]), randn(3)), (torch.tensor([-1.0, 0.5]), randn(3, seed=1))])
class ToList(nn.Module):
    def forward(self, ab, x):
        a, b = ab.tolist()
        return x * a + b


@case("numbers", [(torch.tensor(7), randn(4))])
class FloorDivMod(nn.Module):
    def forward(self, n, x):
        k = n.item()
        return k // 3, k % 3, x * (k // 2)


@case("numbers", [(randn(6),), (randn(6, seed=1),)])
class ItemArithmetic(nn.Module):
    def forward(self, x):
        top = x.max().item()
        low = x.min().item()
        return (top - low) * 0.5, top / 2.0


@case("numbers", [(torch.tensor(2.7), randn(3))])
class SymIntOfFloat(nn.Module):
    def forward(self, v, x):
        n = torch.sym_int(v.item())
        return x + n, n


@case("numbers", [(randn(4, 3), torch.tensor(3))])
class ShapeTimesItem(nn.Module):
    def forward(self, x, n):
        return x.shape[0] * n.item() + x.shape[1], x.sum() * n.item()


@case("numbers", [(torch.tensor([1.5, -2.0, 4.0]), torch.arange(4)), (torch.tensor([0.5, 2.0, -1.0]), torch.arange(4))])
class NumbersIntoIntTensor(nn.Module):
    def forward(self, v, n):
        a, b, c = v.tolist()
        return n * (a - b) / c, (n > a), torch.clamp(n.float(), min=b), a * b - c


# ----------------------------------------------------------------- data-dependent sizes
@case("data", [(randn(8),), (randn(8, seed=1),), (-randn(8, seed=2).abs(),)])
class NonzeroIndexSelect(nn.Module):
    def forward(self, x):
        idx = (x > 0).nonzero().squeeze(1)
        return x.index_select(0, idx).sum(), (x.index_select(0, idx) ** 2).sum()


@case("data", [(randn(3, 4),), (randn(3, 4, seed=1),)])
class MaskedSelectSum(nn.Module):
    def forward(self, x):
        picked = torch.masked_select(x, x > 0.2)
        return picked.sum() + picked.numel()


@case("data", [(randn(6),), (randn(6, seed=3),)])
class WhereSingleArg(nn.Module):
    def forward(self, x):
        (idx,) = torch.where(x < 0)
        return x[idx].abs().sum()


@case("data", [(randn(6, 3), torch.tensor([0, 2, 1, 0, 2, 2])),
               (randn(6, 3, seed=1), torch.tensor([1, 1, 1, 0, 0, 2]))])
class SplitFromCounts(nn.Module):
    def forward(self, x, c):
        counts = F.one_hot(c, 3).sum(0)
        order = torch.argsort(c, stable=True)
        parts = torch.split(x[order], counts.tolist())
        return torch.stack([p.sum(0) for p in parts])


@case("data", [(randn(5, 2),), (randn(5, 2, seed=4),)])
class BoolIndexPutAccumulate(nn.Module):
    def forward(self, x):
        y = x.clone()
        y[x > 0] += 1.0
        y.masked_fill_(x < -1, 0.0)
        return y


class RowMaskUpdate(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.w = nn.Parameter(torch.linspace(-1, 1, 3))

    def forward(self, x, keep):
        y = x.clone()
        rows = keep > 0.5
        y[rows] = torch.sigmoid(x[rows]) * self.w + y[rows].clamp(min=0)
        z = x.clone()
        z[~rows] = 0.0
        return y, z


case("data", [(randn(5, 3), torch.rand(5, generator=_g(1))), (randn(5, 3, seed=2), torch.rand(5, generator=_g(3)))])(
    RowMaskUpdate)


@case("data", [(torch.tensor([3, 1, 3, 2, 1]),), (torch.tensor([0, 0, 4, 4, 4]),)])
class BincountMinlength(nn.Module):
    def forward(self, c):
        return torch.bincount(c, minlength=6).float().cumsum(0)


@case("data", [(randn(4, 5), torch.tensor(1)), (randn(4, 5, seed=1), torch.tensor(2))])
class NarrowTensorStart(nn.Module):
    """A window of 3 columns at a start read with item (any start since general17; refused before)."""

    def forward(self, x, s):
        return x.narrow(1, s.item(), 3)


@case("data", [(randn(6, 2), torch.tensor([0, 1, 0, 1, 1, 0]).bool())])
class IndexPutNonzeroTuple(nn.Module):
    def forward(self, x, m):
        out = torch.zeros_like(x)
        rows = torch.nonzero(m, as_tuple=True)
        out.index_put_(rows, x[rows] * 2)
        return out


@case("data", [(torch.tensor([3, 1, 3, 2, 1, 1]),), (torch.tensor([0, 0, 4, 4, 4, 2]),)])
class UniqueCounts(nn.Module):
    def forward(self, c):
        values, counts = torch.unique(c, sorted=True, return_counts=True)
        return (values * counts).sum(), counts.max()


@case("data", [(randn(4, 2), torch.tensor([1, 0, 2, 1])), (randn(4, 2, seed=1), torch.tensor([0, 3, 0, 1]))])
class RepeatInterleaveCounts(nn.Module):
    def forward(self, x, r):
        return torch.repeat_interleave(x, r, dim=0).sum(0)


# ----------------------------------------------------------------- MoE dispatch with capacity
class _Experts(nn.Module):
    def __init__(self, n: int = 3, width: int = 4) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.router = nn.Linear(width, n)
        self.experts = nn.ModuleList(nn.Linear(width, width) for _ in range(n))


def _moe_inputs() -> list[tuple]:
    return [(randn(6, 4, seed=s),) for s in (0, 1, 2)]


@case("moe", _moe_inputs())
class SwitchScatterAdd(_Experts):
    def forward(self, x):
        choice = self.router(x).argmax(-1)
        out = torch.zeros_like(x)
        for e, expert in enumerate(self.experts):
            idx = (choice == e).nonzero().squeeze(-1)
            y = expert(x.index_select(0, idx))
            out.scatter_add_(0, idx.unsqueeze(-1).expand(-1, x.shape[1]), y)
        return out


@case("moe", _moe_inputs())
class WhereAnyRouting(_Experts):
    def forward(self, x):
        probs = self.router(x).softmax(-1)
        top, chosen = probs.topk(2, dim=-1)
        out = torch.zeros_like(x)
        for e, expert in enumerate(self.experts):
            hit = chosen == e
            (token,) = torch.where(hit.any(-1))
            weight = (top * hit).sum(-1)[token]
            out[token] += expert(x[token]) * weight[:, None]
        return out


@case("moe", _moe_inputs())
class SortSplitCat(_Experts):
    def forward(self, x):
        choice = self.router(x).argmax(-1)
        sorted_choice, order = torch.sort(choice, stable=True)
        ones = torch.ones_like(sorted_choice)
        counts = torch.zeros(3, dtype=torch.long).scatter_add_(0, sorted_choice, ones).tolist()
        chunks = x[order].split_with_sizes(counts)
        y = torch.cat([expert(c) for expert, c in zip(self.experts, chunks)])
        out = torch.empty_like(y)
        out[order] = y
        return out


@case("moe", _moe_inputs())
class MaskedRowsIndexCopy(_Experts):
    def forward(self, x):
        choice = self.router(x).argmax(-1)
        out = x.clone()
        for e, expert in enumerate(self.experts):
            mask = choice == e
            idx = mask.nonzero(as_tuple=True)[0]
            out = out.index_copy(0, idx, expert(x[mask]))
        return out


@case("moe", _moe_inputs(), refuses={1: "'cat': the pieces hold another number of rows",
                                     2: "'cat': the pieces hold another number of rows"})
class ExpertMaxPool(_Experts):
    def forward(self, x):
        choice = self.router(x).argmax(-1)
        pooled = []
        for e, expert in enumerate(self.experts):
            rows = expert(x[choice == e])
            pooled.append(torch.cat([rows, torch.zeros(1, x.shape[1])]).amax(0))
        return torch.stack(pooled)


# ----------------------------------------------------------------- narrow heads / MQA under tp
class _Attn(nn.Module):
    def __init__(self, dim: int = 32, heads: int = 4, kv_heads: int = 1, fused: bool = False) -> None:
        super().__init__()
        torch.manual_seed(1)
        self.heads, self.kv, self.hd = heads, kv_heads, dim // heads
        self.fused = fused
        if fused:
            self.qkv = nn.Linear(dim, dim + 2 * kv_heads * self.hd)
        else:
            self.q = nn.Linear(dim, dim, bias=False)
            self.kv_proj = nn.Linear(dim, 2 * kv_heads * self.hd, bias=False)
        self.o = nn.Linear(dim, dim, bias=False)


TP = dict(target="sn40l-8", split=(2, 1))


@case("tp", [(randn(1, 8, 32),)], **TP)
class MqaFusedSplit(_Attn):
    def __init__(self) -> None:
        super().__init__(fused=True)

    def forward(self, x):
        b, s, d = x.shape
        q, k, v = self.qkv(x).split([d, self.hd, self.hd], dim=-1)
        q = q.view(b, s, self.heads, self.hd).transpose(1, 2)
        k = k.unsqueeze(1).expand(b, self.heads, s, self.hd)
        v = v.unsqueeze(1).expand(b, self.heads, s, self.hd)
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.o(a.transpose(1, 2).reshape(b, s, d))


@case("tp", [(randn(2, 8, 32),)], **TP)
class MqaKvChunk(_Attn):
    def forward(self, x):
        b, s, d = x.shape
        q = self.q(x).reshape(b, s, self.heads, self.hd).permute(0, 2, 1, 3)
        k, v = self.kv_proj(x).chunk(2, dim=-1)
        scores = q @ k.unsqueeze(1).transpose(-1, -2) / math.sqrt(self.hd)
        a = scores.softmax(-1) @ v.unsqueeze(1)
        return self.o(a.permute(0, 2, 1, 3).flatten(2))


@case("tp", [(randn(1, 8, 32),)], **TP)
class GqaRepeat(_Attn):
    def __init__(self) -> None:
        super().__init__(heads=4, kv_heads=2)

    def forward(self, x):
        b, s, d = x.shape
        q = self.q(x).view(b, s, self.heads, self.hd).transpose(1, 2)
        k, v = self.kv_proj(x).view(b, s, 2, self.kv, self.hd).unbind(2)
        k = k.transpose(1, 2).repeat(1, self.heads // self.kv, 1, 1)
        v = v.transpose(1, 2).repeat(1, self.heads // self.kv, 1, 1)
        idx = torch.arange(self.heads) % self.kv * (self.heads // self.kv) + torch.arange(self.heads) // self.kv
        a = F.scaled_dot_product_attention(q, k[:, idx], v[:, idx])
        return self.o(a.transpose(1, 2).reshape(b, s, d))


@case("tp", [(randn(1, 8, 24),)], **TP)
class OddHeads(_Attn):
    def __init__(self) -> None:
        super().__init__(dim=24, heads=3, kv_heads=1)

    def forward(self, x):
        b, s, d = x.shape
        q = self.q(x).view(b, s, self.heads, self.hd).transpose(1, 2)
        k, v = self.kv_proj(x).view(b, s, 2, 1, self.hd).transpose(1, 3).unbind(2)
        a = F.scaled_dot_product_attention(q, k, v, enable_gqa=True)
        return self.o(a.transpose(1, 2).reshape(b, s, d))


@case("tp", [(randn(2, 4, 32),)], **TP)
class MqaEinsum(_Attn):
    def forward(self, x):
        b, s, d = x.shape
        q = self.q(x).view(b, s, self.heads, self.hd)
        k, v = self.kv_proj(x).split(self.hd, dim=-1)
        w = torch.einsum("bshd,btd->bhst", q, k).softmax(-1)
        a = torch.einsum("bhst,btd->bshd", w, v)
        return self.o(a.reshape(b, s, d))


# ----------------------------------------------------------------- storage views
@case("storage", [(randn(4, 6),)])
class AsStridedOfTransposed(nn.Module):
    def forward(self, x):
        t = x.t()
        return torch.as_strided(t, (3, 2), (1, 6), 1) * 2


@case("storage", [(randn(2, 4, dtype=torch.float16),)])
class Fp16AsInt32(nn.Module):
    def forward(self, x):
        return (x * 2).view(torch.int32)


@case("storage", [(randn(3, 4, dtype=torch.bfloat16),)])
class Bf16AsInt16(nn.Module):
    def forward(self, x):
        bits = x.view(torch.int16)
        return (bits & 0x7FFF).view(torch.bfloat16)


@case("storage", [(randn(2, 3),)])
class Float32AsBytes(nn.Module):
    def forward(self, x):
        return x.view(torch.uint8).to(torch.int32).sum(-1)


@case("storage", [(randn(1, 3, 4, 4).to(memory_format=torch.channels_last),)])
class ChannelsLastAsStrided(nn.Module):
    def forward(self, x):
        return x.as_strided((1, 3, 2, 2), x.stride()) + 1


@case("storage", [(randn(10),)])
class UnfoldWindows(nn.Module):
    def forward(self, x):
        return x.unfold(0, 4, 2).sum(-1), x.as_strided((4, 3), (2, 1)).prod(-1)


# ----------------------------------------------------------------- random ops (training mode)
def _moments(mean: float, var: float, tol: float = 0.1):
    def check(got: Any, _eager: Any) -> None:
        t = got if isinstance(got, torch.Tensor) else got[0]
        t = t.double()
        assert abs(t.mean().item() - mean) < tol * max(1.0, abs(mean)), (t.mean().item(), mean)
        assert abs(t.var().item() - var) < tol * 3 * max(1.0, var), (t.var().item(), var)
    return check


Z = torch.zeros(4000)


@case("random", [(Z,)], check=_moments(0.3, 0.21))
class BernoulliInPlace(nn.Module):
    def forward(self, x):
        return torch.empty_like(x).bernoulli_(0.3)


@case("random", [(Z,)], check=_moments(0.5, 0.25))
class ExponentialInPlace(nn.Module):
    def forward(self, x):
        return torch.empty_like(x).exponential_(2.0)


@case("random", [(Z,)], check=_moments(1.0, 4.0))
class NormalInPlace(nn.Module):
    def forward(self, x):
        return x.clone().normal_(1.0, 2.0)


@case("random", [(Z,)], check=_moments(0.5, 1 / 12))
class RandWithGenerator(nn.Module):
    def forward(self, x):
        return torch.rand(x.shape, generator=torch.Generator().manual_seed(1)) + x


@case("random", [(torch.ones(4000),)], check=_moments(1.0, 0.25))
class FunctionalDropoutTrain(nn.Module):
    def forward(self, x):
        return F.dropout(x, 0.2, training=True)


@case("random", [(Z,)], check=_moments(0.0, 1.0))
class RandnLikeHalf(nn.Module):
    def forward(self, x):
        return torch.randn_like(x, dtype=torch.float16).float()


@case("random", [(Z,)], check=_moments(4.5, 8.25))
class RandintLike(nn.Module):
    def forward(self, x):
        return torch.randint_like(x, 0, 10)


@case("random", [(torch.full((4000,), 0.25),)], check=_moments(0.25, 0.1875))
class BernoulliWithGenerator(nn.Module):
    def forward(self, p):
        return torch.bernoulli(p, generator=torch.Generator().manual_seed(3))


# ----------------------------------------------------------------- more held-out forms (none written by a test)
@case("data", [(randn(3, 4),), (randn(3, 4, seed=5),)])
class MaskPut2dAccumulate(nn.Module):
    def forward(self, x):
        mask = x > 0.1
        out = torch.zeros_like(x)
        return out.index_put((mask,), x[mask] * 3, accumulate=True) + out.index_put((mask,), x[mask].exp())


@case("data", [(torch.tensor([1, 4, 1, 0, 2]), randn(5)), (torch.tensor([3, 3, 0, 4, 1]), randn(5, seed=1))])
class BincountWeights(nn.Module):
    def forward(self, c, w):
        return torch.bincount(c, weights=w.abs(), minlength=5) * 2


@case("data", [(randn(4, 6), torch.tensor([1, 1, 0])), (randn(4, 6, seed=1), torch.tensor([0, 1, 1])),
               (randn(4, 6, seed=2), torch.tensor([1, 0, 0]))],
      refuses={2: r"sum_1.item\(\) is not 2 in `return x.reshape"})
class ViewSizeFromComputed(nn.Module):
    def forward(self, x, flags):
        return x.reshape(flags.sum().item() * 4, -1).softmax(-1)


@case("data", [(randn(4, 5),), (randn(4, 5, seed=3),)])
class NonzeroPairsGather(nn.Module):
    def forward(self, x):
        rc = (x > 0.5).nonzero()
        return (x[rc[:, 0], rc[:, 1]] * rc[:, 1]).sum(), x.gather(1, x.argmax(1, keepdim=True)).squeeze(1)


@case("complex", [(randn(2, 8),)])
class FftRealConcat(nn.Module):
    def forward(self, x):
        return torch.cat([torch.fft.fft(x), x, torch.ones(2, 1, dtype=torch.long)], -1)


@case("complex", [(torch.randn(3, 4, dtype=torch.complex64, generator=_g(9)),)])
class ComplexVectorNorm(nn.Module):
    def forward(self, z):
        return torch.linalg.vector_norm(z, dim=-1), z.norm(p=2, dim=0), torch.view_as_real(z).abs().amax()


@case("storage", [(randn(3, 4, dtype=torch.bfloat16),)])
class Bf16Int8RoundTrip(nn.Module):
    def forward(self, x):
        b = (x * 2).view(torch.int8)
        return b, (b.view(torch.bfloat16) + 1).float()


class AsStridedParam(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.w = nn.Parameter(torch.arange(12.0).reshape(3, 4))

    def forward(self, x):
        wt = self.w.t()
        return x @ torch.as_strided(wt, (4, 2), wt.stride(), 1)


case("storage", [(randn(2, 4),)])(AsStridedParam)


@case("storage", [(randn(2, 3, 4),)])
class Int32BitsMask(nn.Module):
    def forward(self, x):
        bits = x.view(torch.int32) & 0x7FFFFFFF
        return bits.view(torch.float32).permute(2, 0, 1)


@case("numbers", [(torch.tensor(3), torch.tensor(4), torch.tensor(0.5), randn(2)),
                  (torch.tensor(-2), torch.tensor(7), torch.tensor(1.5), randn(2, seed=1))])
class IntPlusFloat(nn.Module):
    def forward(self, a, b, c, x):
        n = a.item() + b.item()  # (int(a) makes torch.export fail: a guard on the value)
        return n, c.item() * n - 1, x * n


class TinyBertTrain(nn.Module):
    """A transformers encoder in training mode: attention and hidden dropout inside."""

    def __init__(self) -> None:
        super().__init__()
        from transformers import BertConfig, BertModel
        torch.manual_seed(0)
        config = BertConfig(vocab_size=50, hidden_size=32, num_hidden_layers=1, num_attention_heads=2,
                            intermediate_size=64, max_position_embeddings=64, hidden_dropout_prob=0.5,
                            attention_probs_dropout_prob=0.0)
        self.bert = BertModel(config, add_pooling_layer=False)

    def forward(self, ids):
        return self.bert(input_ids=ids).last_hidden_state


def _dropout_train(got: Any, eager: Any) -> None:
    """Dropout at 0.5 on the last layer's output: about half its positions are LayerNorm's
    bias-free normalization of a dropped sum; compare moments with eager's (same distribution)."""
    g, e = torch.as_tensor(got).double(), torch.as_tensor(eager).double()
    assert g.shape == e.shape and g.dtype == e.dtype
    assert abs(g.mean() - e.mean()) < 0.1 and abs(g.std() - e.std()) < 0.1, (g.mean(), e.mean(), g.std(), e.std())


case("random", [(torch.randint(0, 50, (4, 64), generator=_g(2)),)], check=_dropout_train, train=True)(TinyBertTrain)


@case("random", [(Z,)], check=_moments(0.5, 1 / 12))
class RandLikeGenerator(nn.Module):
    def forward(self, x):
        return torch.rand_like(x, generator=torch.Generator().manual_seed(5)) + x


@case("random", [(torch.ones(4000),)], check=_moments(1.0, 1.0 / 3))
class NativeDropoutTrain(nn.Module):
    def forward(self, x):
        out, keep = torch.native_dropout(x, 0.25, True)
        return out


# ----------------------------------------------------------------- dynamic shapes
def _dyn(_inputs: list[tuple], dynamic_shapes: Any, shapes: dict, pad: tuple = ()) -> dict:
    return dict(dynamic_shapes=dynamic_shapes, shapes=shapes, pad_dims=list(pad))


_seq = Dim("seq", min=2, max=64)


@case("dynamic", [(randn(1, 4, 8), randn(1, 8, 8)), (randn(1, 16, 8), randn(1, 32, 8))],
      **_dyn([], ({1: _seq}, {1: 2 * _seq}), {"seq": [4, 16]}))
class TwiceSeq(nn.Module):
    def forward(self, x, y):
        return x.repeat_interleave(2, dim=1) + y


@case("dynamic", [(randn(2, 8),), (randn(5, 8, seed=1),), (randn(8, 8, seed=2),)],
      **_dyn([], ({0: Dim("batch", min=1, max=8)},), {"batch": [2, 8]}))
class BatchBoundsMlp(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.lin = nn.Linear(8, 3)

    def forward(self, x):
        return self.lin(x).relu().log_softmax(-1)


@case("dynamic", [(randn(2, 4, 8),), (randn(2, 8, 8, seed=1),)],
      **_dyn([], ({1: Dim("seq", max=32)},), {"seq": [4, 8]}))
class SeqMeanFromShape(nn.Module):
    def forward(self, x):
        b, s, d = x.shape
        return x.reshape(b, s * d).sum(-1) / s


@case("dynamic", [(randn(2, 6),), (randn(3, 6, seed=1),)],
      **_dyn([], ({0: Dim("batch", min=2, max=16)},), {"batch": [2, 3]}))
class ViewFromShape(nn.Module):
    def forward(self, x):
        return x.view(x.size(0), 2, -1).transpose(1, 2).contiguous().view(-1, 2).sum(0)


@case("dynamic", [(randn(2, 4), randn(4, 3)), (randn(7, 4, seed=1), randn(4, 3, seed=2))],
      **_dyn([], ({0: Dim("rows", min=1, max=10)}, None), {"rows": [2, 7]}))
class DynMatmulCumsum(nn.Module):
    def forward(self, a, b):
        return (a @ b).cumsum(0)


@case("dynamic", [(randn(2, 4, 8),), (randn(3, 4, 8, seed=1),)],
      **_dyn([], ({0: Dim("batch", max=4)},), {"batch": [2, 4]}))
class BatchPaddedSoftmax(nn.Module):
    def forward(self, x):
        return x.softmax(-1).amax(1)


@case("dynamic", [(randn(2, 6, 8),), (randn(3, 10, 8, seed=1),)],
      **_dyn([], ({0: Dim.AUTO, 1: Dim("seq", min=2, max=16)},), {"batch": [2, 3], "seq": [6, 10]}))
class AutoBatchAttention(nn.Module):
    def forward(self, x):
        return F.scaled_dot_product_attention(x[:, None], x[:, None], x[:, None], is_causal=True)[:, 0]


# ----------------------------------------------------------------- round 9: new forms (general9)
@case("complex", [(randn(4).abs(), randn(4, seed=1))])
class CatComplexWithReal(nn.Module):
    def forward(self, r, theta):
        z = torch.polar(r, theta)
        return torch.cat([z, r, torch.arange(2)]), torch.stack([z.real, z.imag, r]).sum(0)


@case("complex", [(torch.complex(randn(3, 4), randn(3, 4, seed=1)),),
                  (torch.complex(randn(3, 4, seed=2), randn(3, 4, seed=3)),)])
class ComplexInputNormAndConj(nn.Module):
    def forward(self, z):
        return torch.linalg.vector_norm(z, dim=-1), (z.conj() * z).real, torch.view_as_real(z * 1j)


@case("complex", [(randn(2, 32),)])
class StftMagnitudePhase(nn.Module):
    def forward(self, x):
        spec = torch.stft(x, n_fft=8, hop_length=4, window=torch.hann_window(8), return_complex=True)
        return spec.abs().sum(-1), (spec[:, 1:-1] * spec[:, 1:-1].conj()).real.mean(), spec[:, 1:3]


@case("numbers", [(randn(5), randn(5, seed=1)), (randn(5, seed=2), randn(5, seed=3))])
class ItemChainThroughFloats(nn.Module):
    def forward(self, x, y):
        a = x.sum().item()
        b = y.abs().max().item()
        c = a * b - a / (b + 3.0)
        return c, x * c + b, c - 2 * a


@case("numbers", [(torch.tensor(5), torch.tensor(0.25), randn(6)),
                  (torch.tensor(2), torch.tensor(-1.5), randn(6, seed=1))])
class ItemIntTimesFloat(nn.Module):
    def forward(self, n, f, x):
        k, g = n.item(), f.item()
        return k * g + k // 2 - g, x * (k + g), (x > g).sum() + k


@case("numbers", [(torch.tensor([0.5, -1.0, 2.0]), randn(4)), (torch.tensor([1.0, 1.0, -3.0]), randn(4, seed=1))])
class TolistHorner(nn.Module):
    def forward(self, w, x):
        s = 0.0
        for v in w.tolist():
            s = s * 0.5 + v
        return s, x * s - s


@case("data", [(randn(10),), (randn(10, seed=5),)],
      refuses={1: "'nonzero': the input has another number of nonzero elements than the 4 compiled for"})
class NonzeroSortCumsum(nn.Module):
    def forward(self, x):
        vals = x[(x > 0).nonzero().squeeze(1)]
        ordered = vals.sort(descending=True).values
        return ordered.cumsum(0).sum() / (vals.numel() + 1), ordered.square().sum()


@case("data", [(randn(4, 6), torch.tensor([1, 0, 1, 1, 0, 1]).bool()),
               (randn(4, 6, seed=1), torch.tensor([1, 1, 0, 0, 1, 1]).bool())])
class MaskedColumnsViewPairs(nn.Module):
    def forward(self, x, keep):
        cols = x[:, keep]
        return cols.reshape(4, -1, 2).sum(-1).mean(-1), cols.t().contiguous().view(-1).sum()


@case("data", [(randn(6, 3), torch.tensor([2, 0, 2, 1, 0, 2])), (randn(6, 3, seed=1), torch.tensor([1, 1, 0, 2, 2, 2]))])
class BincountOffsetsGather(nn.Module):
    def forward(self, x, group):
        counts = torch.bincount(group, minlength=3)
        starts = counts.cumsum(0) - counts
        ordered = x[torch.argsort(group, stable=True)]
        return ordered.index_select(0, starts.clamp(max=5)), counts.float().std()


@case("moe", _moe_inputs())
class TopTwoIndexAdd(_Experts):
    def forward(self, x):
        gates = self.router(x).softmax(-1)
        weight, chosen = gates.topk(2, dim=-1)
        weight = weight / weight.sum(-1, keepdim=True)
        out = torch.zeros_like(x)
        for e, expert in enumerate(self.experts):
            token, slot = (chosen == e).nonzero(as_tuple=True)
            out.index_add_(0, token, expert(x[token]) * weight[token, slot, None])
        return out


@case("moe", _moe_inputs())
class SplitByExpertSizes(_Experts):
    def forward(self, x):
        expert = self.router(x).argmax(-1)
        order = expert.argsort(stable=True)
        sizes = (expert[:, None] == torch.arange(3)).sum(0).tolist()
        parts = x[order].split(sizes)
        y = torch.cat([e(p) for e, p in zip(self.experts, parts)])
        return y[order.argsort()]


class ParamBitsView(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.w = nn.Parameter(torch.linspace(-2, 2, 12).reshape(3, 4))

    def forward(self, x):
        halved = (self.w.view(torch.int32) - (1 << 23)).view(torch.float32)  # exponent - 1: w / 2
        return x @ halved.t(), self.w.view(torch.int16)[:, ::2].float()


case("storage", [(randn(2, 4),)])(ParamBitsView)


class ChannelsLastParamStrided(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.w = nn.Parameter(torch.arange(12.0).reshape(1, 3, 2, 2).to(memory_format=torch.channels_last))

    def forward(self, x):
        return x + self.w.as_strided((4, 3), (3, 1)), self.w.unfold(1, 2, 1).sum(-1)


case("storage", [(randn(4, 3),)])(ChannelsLastParamStrided)


class TimmBlockDropPathTrain(nn.Module):
    """A timm-style block in train mode: stochastic depth (a per-sample Bernoulli scale) and dropout."""

    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.norm, self.fc = nn.LayerNorm(16), nn.Linear(16, 16)

    def forward(self, x):
        keep = 0.5
        scale = x.new_empty(x.shape[0], 1, 1).bernoulli_(keep) / keep
        return x + F.dropout(self.fc(self.norm(x)), 0.25, training=True) * scale


def _drop_path(got: Any, eager: Any) -> None:
    """Each sample's residual branch is dropped whole or scaled by 2: about half the samples equal x."""
    g = torch.as_tensor(got)
    assert g.shape == eager.shape and g.dtype == eager.dtype
    x = randn(400, 4, 16, seed=7)
    same = (g - x).abs().amax((1, 2)) == 0
    assert 0.35 < same.double().mean() < 0.65, same.double().mean()
    ours, eagers = (g - x)[~same].double(), (eager - x)[(eager - x).abs().amax((1, 2)) != 0].double()
    assert abs(ours.mean() - eagers.mean()) < 0.05 and abs(ours.std() / eagers.std() - 1) < 0.1, (ours.std(), eagers.std())


case("random", [(randn(400, 4, 16, seed=7),)], check=_drop_path, train=True)(TimmBlockDropPathTrain)


@case("random", [(-torch.ones(4000),)], check=_moments(-(1 / 8 + 1 / 3) / 2, (1 / 3 - 1 / 8) ** 2 / 12, tol=0.02))
class RreluTrainNegative(nn.Module):
    def forward(self, x):
        return F.rrelu(x, training=True)


_batch = Dim("batch", min=1, max=8)


@case("dynamic", [(randn(2, 4, 8),), (randn(4, 8, 8, seed=1),), (randn(3, 5, 8, seed=2),)],
      **_dyn([], ({0: _batch, 1: Dim("seq", min=2, max=16)},), {"batch": [2, 4], "seq": [4, 8]}))
class TwoDimsReshapeRows(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.lin = nn.Linear(8, 6)

    def forward(self, x):
        b, s, d = x.shape
        rows = self.lin(x.reshape(b * s, d)).reshape(b, s, 3, 2)
        return rows.permute(0, 2, 1, 3).reshape(b, 3, s * 2).amax(-1)


@case("dynamic", [(randn(2, 8, 4),), (randn(2, 5, 4, seed=1),), (randn(2, 3, 4, seed=2),)],
      **_dyn([], ({1: Dim("seq", min=2, max=16)},), {"seq": [8]}))
class PaddedSeqPoolOfLinear(nn.Module):
    """seq 5 and 3 run the seq=8 bucket: the mean, softmax and max over seq read a linear's output."""

    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.lin = nn.Linear(4, 4)

    def forward(self, x):
        h = self.lin(x)
        return h.mean(1), torch.softmax(h, 1), h.reshape(2, -1).amax(1), (h * x).sum(1)


@case("dynamic", [(randn(2, 8, 4),), (randn(2, 6, 4, seed=1),)],
      **_dyn([], ({1: Dim("seq", min=2, max=16)},), {"seq": [8]}))
class PaddedSeqPositionalMax(nn.Module):
    """A positional parameter sliced to the sequence, added, then the max and argmax over seq."""

    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.pos = nn.Parameter(torch.randn(16, 4))

    def forward(self, x):
        h = x + self.pos[: x.shape[1]]
        return h.amax(1), h.argmax(1), torch.logsumexp(h, 1)


class TorchMhaPaddedBatch(nn.Module):
    """torch's own batch-first MultiheadAttention with a key padding mask: batch is found safe to pad
    (seq too, since general11: its fused attention hides the padded keys); batch 3 runs the batch=4
    bucket. (Was a plan check in test_shape_padding.py.)"""

    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.attn = nn.MultiheadAttention(8, 2, batch_first=True)

    def forward(self, x, mask):
        return self.attn(x, x, x, key_padding_mask=mask == 0, need_weights=False)[0]


_mha_dims = {0: Dim("batch", max=8), 1: Dim("seq", min=2, max=16)}
case("dynamic", [(randn(2, 6, 8), torch.ones(2, 6, dtype=torch.long)),
                 (randn(3, 6, 8, seed=1), torch.tensor([[1] * 6, [1] * 4 + [0] * 2, [1] * 5 + [0]]))],
     **_dyn([], (_mha_dims, _mha_dims), {"batch": [2, 4], "seq": [6]}))(TorchMhaPaddedBatch)


# ----------------------------------------------------------------- round 10: new forms (general10)
@case("complex", [(torch.complex(randn(3, 4), randn(3, 4, seed=1)),),
                  (torch.complex(randn(3, 4, seed=2), randn(3, 4, seed=3)),)])
class ComplexPowerAndPhase(nn.Module):
    """A complex input's power spectrum and phase, and its conjugate product with a rolled copy."""

    def forward(self, z):
        return (z * z.conj()).real.sum(-1), torch.angle(z), z * torch.roll(z, 1, -1).conj()


@case("complex", [(randn(2, 16),), (randn(2, 16, seed=1),)])
class SpectralFilterRoundTrip(nn.Module):
    """An FNet/GFNet-style global filter: rfft, a learned complex filter, irfft back."""

    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.filter = nn.Parameter(torch.randn(9, 2))

    def forward(self, x):
        spectrum = torch.fft.rfft(x, dim=-1) * torch.view_as_complex(self.filter)
        return torch.fft.irfft(spectrum, n=16, dim=-1)


@case("numbers", [(randn(3, 5),), (randn(3, 5, seed=1) * 4,)])
class ItemMaxScale(nn.Module):
    """Normalise by the largest magnitude read as a Python float; return it doubled too."""

    def forward(self, x):
        peak = x.abs().max().item()
        return x / peak, peak * 2.0, peak ** 0.5 - 1


@case("numbers", [(randn(4, 6), torch.tensor([1, 0, 1, 1])), (randn(4, 6, seed=1), torch.tensor([1, 1, 1, 0]))])
class CountTimesFloat(nn.Module):
    """An int count and a float mean read with .item(), combined: Python numbers out."""

    def forward(self, x, keep):
        n = keep.sum().item()
        m = x.mean().item()
        return x * (n * m), n * m - 1, n * 2 + 1


@case("data", [(randn(5, 4),), (randn(5, 4, seed=3),)])
class MaskedSelectReduce(nn.Module):
    """x[x > 0] reduced: the selection's size depends on the values, its sum and count do not."""

    def forward(self, x):
        picked = x[x > 0]
        return picked.sum(), (x > 0).sum(), torch.where(x > 0, x, 0).sum(0)


@case("moe", _moe_inputs())
class DenseMaskedTopOne(_Experts):
    """Switch routing written densely (every expert on every token, weighted by a one-hot of the
    winner), as several reference implementations do to avoid dynamic shapes."""

    def forward(self, x):
        probs = self.router(x).softmax(-1)
        weight, chosen = probs.max(-1)
        onehot = F.one_hot(chosen, len(self.experts)).to(x.dtype)
        outs = torch.stack([e(x) for e in self.experts], 1)
        return (outs * (onehot * weight[:, None])[..., None]).sum(1)


@case("views", [(randn(4, 5),), (randn(4, 5, seed=2),)])
class OffsetAsStridedWindows(nn.Module):
    """Overlapping windows of a contiguous input with a storage offset, and a diagonal through it."""

    def forward(self, x):
        windows = x.as_strided((3, 4), (5, 1), 1)
        diagonal = x.as_strided((4,), (6,), 0)
        return windows * 2, diagonal.sum()


@case("views", [(randn(2, 3, 4),)])
class ViewAsRealUnbind(nn.Module):
    """A real pair view of a complex made inside, unbound and recombined (the pair dim as data)."""

    def forward(self, x):
        z = torch.view_as_complex(x.reshape(2, 6, 2).contiguous()) * 1j
        re, im = torch.view_as_real(z).unbind(-1)
        return re - im, torch.view_as_real(z.conj().resolve_conj()).flatten(1)


@case("random", [(torch.ones(4000),)], check=_moments(1.0, 0.25))
class Dropout1dChannelsTrain(nn.Module):
    """F.dropout1d in training mode: whole channels dropped (4000 channels of one position)."""

    def forward(self, x):
        return F.dropout1d(x.reshape(1, 4000, 1), 0.2, training=True).reshape(-1)


@torch.library.custom_op("heldout10::scaled_softsign", mutates_args=())
def _scaled_softsign(x: torch.Tensor, scale: float) -> torch.Tensor:
    return scale * x / (1 + x.abs())


@_scaled_softsign.register_fake
def _(x: torch.Tensor, scale: float) -> torch.Tensor:
    return torch.empty_like(x)


@case("custom", [(randn(3, 4),), (randn(3, 4, seed=1),)])
class CustomOpResidual(nn.Module):
    """A torch.library custom op (traceable implementation, a fake kernel) inside a residual."""

    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.lin = nn.Linear(4, 4)

    def forward(self, x):
        return x + torch.ops.heldout10.scaled_softsign(self.lin(x), 0.5)


_seq10 = Dim("seq", min=2, max=16)


@case("dynamic", [(randn(2, 8, 4),), (randn(2, 5, 4, seed=1),), (randn(2, 3, 4, seed=2),)],
      **_dyn([], ({1: _seq10},), {"seq": [8]}))
class PaddedSeqInstanceNorm(nn.Module):
    """Normalise each channel over time (a mean and a std over a padded seq of a linear's output)."""

    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.lin = nn.Linear(4, 4)

    def forward(self, x):
        h = self.lin(x)
        var, mean = torch.var_mean(h, 1, keepdim=True, correction=0)
        return (h - mean) / torch.sqrt(var + 1e-5), h.std(1)


@case("dynamic", [(randn(2, 8, 4),), (randn(3, 5, 4, seed=1),), (randn(1, 2, 4, seed=2),)],
      **_dyn([], ({0: Dim("batch", max=8), 1: _seq10},), {"batch": [4], "seq": [8]}))
class AttentionPoolingEinsum(nn.Module):
    """Attention pooling over a padded seq (softmax of scores, an einsum contracting seq), and a mean
    over both padded dims."""

    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.score, self.value = nn.Linear(4, 1), nn.Linear(4, 4)

    def forward(self, x):
        weights = self.score(x).squeeze(-1).softmax(-1)
        pooled = torch.einsum("bs,bsd->bd", weights, self.value(x))
        return pooled, self.value(x).mean((0, 1)), x.argmax()


class HfExtendedMaskAttention(nn.Module):
    """transformers' additive extended attention mask ((1 - mask) * finfo.min), attention written out
    with matmuls, over a padded seq and batch (no --pad-dims)."""

    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.qkv, self.out = nn.Linear(8, 24), nn.Linear(8, 8)

    def forward(self, x, mask):
        b, s, _ = x.shape
        q, k, v = self.qkv(x).view(b, s, 3, 2, 4).permute(2, 0, 3, 1, 4)
        extended = (1.0 - mask[:, None, None, :].to(x.dtype)) * torch.finfo(x.dtype).min
        probs = torch.softmax(q @ k.transpose(-1, -2) / 2.0 + extended, -1)
        return self.out((probs @ v).transpose(1, 2).reshape(b, s, 8))


_hf_dims = {0: Dim("batch", max=8), 1: Dim("seq", min=2, max=16)}
case("dynamic", [(randn(2, 6, 8), torch.ones(2, 6, dtype=torch.long)),
                 (randn(3, 5, 8, seed=1), torch.tensor([[1] * 5, [1] * 3 + [0] * 2, [1] * 4 + [0]]))],
     **_dyn([], (_hf_dims, _hf_dims), {"batch": [4], "seq": [8]}))(HfExtendedMaskAttention)


class SqueezeExciteBlock(nn.Module):
    """A torchvision-style MobileNetV3 block: conv, batch norm, hardswish, squeeze-excitation
    (adaptive pool, two 1x1 convs, hardsigmoid), residual; batch padded."""

    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.conv, self.bn = nn.Conv2d(4, 4, 3, padding=1, groups=4), nn.BatchNorm2d(4)
        self.reduce, self.expand = nn.Conv2d(4, 2, 1), nn.Conv2d(2, 4, 1)
        self.bn.running_mean.uniform_(-0.5, 0.5)
        self.bn.running_var.uniform_(0.5, 1.5)

    def forward(self, x):
        h = F.hardswish(self.bn(self.conv(x)))
        scale = F.hardsigmoid(self.expand(F.relu(self.reduce(F.adaptive_avg_pool2d(h, 1)))))
        return x + h * scale


case("dynamic", [(randn(2, 4, 6, 6),), (randn(3, 4, 6, 6, seed=1),)],
     **_dyn([], ({0: Dim("batch", max=8)},), {"batch": [4]}))(SqueezeExciteBlock)


@case("dynamic", [(randn(3, 8, 4), torch.tensor([8, 5, 2])), (randn(3, 6, 4, seed=1), torch.tensor([6, 3, 1]))],
      **_dyn([], ({1: _seq10}, None), {"seq": [8]}))
class LengthMaskedMeanPool(nn.Module):
    """Padded sequences with their lengths: a mask from arange < lengths, a masked mean and max."""

    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.lin = nn.Linear(4, 4)

    def forward(self, x, lengths):
        h = torch.tanh(self.lin(x))
        keep = torch.arange(x.shape[1])[None, :] < lengths[:, None]
        mean = (h * keep[..., None]).sum(1) / keep.sum(1, keepdim=True)
        return mean, h.masked_fill(~keep[..., None], float("-inf")).amax(1)



# ----------------------------------------------------------------- round 11: op semantics (general11)
def _ints(*shape: int, low: int = -9, high: int = 10, seed: int = 0) -> torch.Tensor:
    return torch.randint(low, high, shape, generator=_g(seed))


@case("semantics", [(randn(4, 5),), (randn(4, 5, seed=1),)])
class InplaceOnViews(nn.Module):
    """In-place ops through views of a clone: a slice, the diagonal, a transposed row, a narrow."""

    def forward(self, x):
        y = x.clone()
        y[:, 1:].mul_(2)
        y.diagonal().add_(1)
        y.t()[0].zero_()
        y.narrow(0, 2, 2).clamp_(-0.5, 0.5)
        return y, x.clone().unsqueeze(0).squeeze_(0).transpose_(0, 1)


@case("semantics", [(randn(5, 4, 3), torch.tensor([0, 4, 2]), torch.tensor([[1], [0]])),
                    (randn(5, 4, 3, seed=1), torch.tensor([-1, 1, 1]), torch.tensor([[2], [1]]))])
class AdvancedIndexBroadcast(nn.Module):
    """Advanced indices that broadcast together, separated by a slice (the indexed dims move first)."""

    def forward(self, x, rows, cols):
        return x[rows[None, :], cols], x[rows, :, cols[0]], x[..., rows[:2][:, None] % 4, rows[1:] % 3]


@case("semantics", [(randn(3, 4), randn(3, 4, seed=1) > 0, randn(12, seed=2))])
class MaskedScatterRows(nn.Module):
    """masked_scatter fills the mask's true places in row-major order from the source's head."""

    def forward(self, x, mask, src):
        return x.masked_scatter(mask, src), x.masked_scatter(mask[0], src.view(3, 4))


@case("semantics", [(randn(5, 3), torch.tensor([0, 2, 0, 4]), randn(4, 3, seed=1))])
class IndexReduceModes(nn.Module):
    """index_reduce with prod, amax, amin and mean, with and without the destination's own values."""

    def forward(self, x, idx, src):
        return (x.index_reduce(0, idx, src, "prod"), x.index_reduce(0, idx, src, "amax", include_self=False),
                x.index_reduce(0, idx, src, "amin"), x.index_reduce(0, idx, src, "mean", include_self=False))


@case("semantics", [(randn(3, 6), torch.tensor([[0, 1, 0, 5], [2, 2, 2, 2], [5, 4, 3, 2]]), randn(3, 4, seed=1))])
class ScatterReduceIncludeSelf(nn.Module):
    """scatter_reduce along dim 1 with every reduction, include_self on and off."""

    def forward(self, x, idx, src):
        outs = []
        for mode in ("sum", "prod", "mean", "amax", "amin"):
            for own in (True, False):
                outs.append(x.scatter_reduce(1, idx, src, mode, include_self=own))
        return tuple(outs)


@case("semantics", [(randn(3, 4, 5).mul(0.5),), (randn(3, 4, 5, seed=1).mul(0.5),)])
class ScansAlongOddDims(nn.Module):
    """cumsum, cumprod, logcumsumexp, cummax and cummin along the first, middle and last dims."""

    def forward(self, x):
        values, indices = x.cummax(1)
        return (x.cumsum(0), x.cumprod(1), torch.logcumsumexp(x, -2), values, indices, x.cummin(0).values,
                x.flip(2).cumsum(2).flip(2))


@case("semantics", [(torch.tensor([[-1.0, 0.0, 2.0, 2.0, 5.0], [0.0, 1.0, 1.0, 3.0, 4.0]]), randn(2, 6) * 3),
                    (torch.tensor([[0.0, 0.5, 0.5, 0.5, 9.0], [-3.0, -2.0, 0.0, 0.0, 1.0]]), randn(2, 6, seed=1) * 3)])
class SearchsortedBucketize(nn.Module):
    """searchsorted (left and right, ties in the sorted rows), bucketize against one row, and a
    value exactly on a boundary."""

    def forward(self, sorted_rows, values):
        on = torch.cat([values, sorted_rows[:, 2:3]], 1)
        return (torch.searchsorted(sorted_rows, on), torch.searchsorted(sorted_rows, on, right=True),
                torch.bucketize(on, sorted_rows[0]), torch.bucketize(on, sorted_rows[1], right=True,
                                                                    out_int32=True))


@case("semantics", [(torch.tensor([[3.0, 1.0, 3.0, 2.0, 1.0, 3.0], [0.0, 0.0, -1.0, 5.0, 5.0, 0.0]]),)])
class StableSortTies(nn.Module):
    """sort and argsort with ties, stable both ways; topk values and kthvalue with ties."""

    def forward(self, x):
        values, order = torch.sort(x, dim=-1, stable=True)
        down = torch.sort(x, dim=-1, descending=True, stable=True)
        return (values, order, down.values, down.indices, torch.argsort(x, dim=0, stable=True),
                torch.topk(x, 3).values, torch.kthvalue(x, 2).values, x.msort())


@case("semantics", [(randn(4, 3), _ints(4, 3), torch.tensor([True, False, True]))])
class WhereScalarsOfOtherDtypes(nn.Module):
    """torch.where with Python scalars and tensors of other dtypes (result dtypes by promotion)."""

    def forward(self, x, n, flag):
        half = x.half()
        return (torch.where(x > 0, 1, 0.5), torch.where(flag, n, 2.5), torch.where(flag, half, 1),
                torch.where(n > 0, n, -1), torch.where(flag, n, x), torch.where(x > 0, True, flag),
                torch.where(flag, 3, n.to(torch.int8)))


@case("semantics", [(_ints(12), _ints(12, seed=1).masked_fill(_ints(12, seed=1) == 0, 3)),
                    (_ints(12, low=-100, high=100, seed=2), torch.tensor([-7, 7, -3, 3, 2, -2, 1, -1, 5, -5, 9, -9]))])
class IntDivisionNegatives(nn.Module):
    """Integer floor division, remainder, fmod and div's rounding modes with negative operands,
    and their float counterparts."""

    def forward(self, a, b):
        fa, fb = a.float() + 0.5, b.float()
        return (a // b, a % b, torch.fmod(a, b), torch.remainder(a, b), torch.div(a, b, rounding_mode="trunc"),
                torch.div(a, b, rounding_mode="floor"), a / b, fa // fb, fa % fb, torch.fmod(fa, fb),
                a % -3, -7 // b, torch.remainder(-5, b))


@case("semantics", [(_ints(6), randn(6) > 0, randn(6).half(), torch.tensor(3), torch.arange(6, dtype=torch.uint8),
                     _ints(6, seed=1).to(torch.int8))])
class PromotionAcrossIntBoolHalf(nn.Module):
    """Type promotion: int with bool, half with int and bool, a 0-d int64 with int8 (no promotion),
    uint8 with int8 (int16), and a float scalar with ints."""

    def forward(self, n, flag, h, zero_d, u8, i8):
        return (n + flag, h * n, flag + h, n / 2, i8 + zero_d, u8 + i8, i8 * 1.5, flag * flag, h + zero_d,
                u8 - 10, (flag & (n > 0)).sum(), torch.true_divide(n, n.clamp(min=1)))


@case("semantics", [(randn(3, 0), randn(3, 4), randn(0, 4))])
class EmptyTensors(nn.Module):
    """Tensors with a size-0 dim: reductions (sum 0, prod 1, mean nan), cat, a matmul over an empty
    contraction, and shape arithmetic."""

    def forward(self, e, x, rows):
        return (e.sum(1), e.prod(-1), e.mean(1), torch.cat([e, x], 1), e @ rows, torch.cat([rows, x]).shape[0] * x,
                rows.sum(0), x[:, 4:].exp(), e.numel() + x)


@case("semantics", [(torch.tensor(2.5), torch.tensor(-3), randn(3)), (torch.tensor(-0.5), torch.tensor(4), randn(3, seed=1))])
class ZeroDimTensors(nn.Module):
    """0-d inputs and outputs: arithmetic with a vector, promotion, a 0-d comparison, a 0-d result."""

    def forward(self, s, k, x):
        return s * x + k, s + k, (s > k).float(), (x.sum() * s), torch.stack([s, k.float()]), k.abs() ** 2


class NonContiguousInputs(nn.Module):
    """Inputs given as a transpose, a strided slice and an expand (not contiguous) to a matmul and
    pointwise ops."""

    def forward(self, a, b, c):
        return a @ b, a * 2 + c[: a.shape[0], : a.shape[1]], b.sum(0)


_base = randn(6, 8, seed=3)
case("semantics", [(randn(3, 5).t(), _base[::2, ::2], randn(1, 3, seed=1).expand(6, 3)),
                   (randn(3, 5, seed=2).t(), _base[1::2, 1::2], randn(6, 1, seed=4).expand(6, 3))])(NonContiguousInputs)


class ChannelsLastConvBlock(nn.Module):
    """A conv block fed a channels-last input (strides of NHWC): conv, group norm, GELU, pooling."""

    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.conv, self.norm = nn.Conv2d(4, 8, 3, padding=1), nn.GroupNorm(2, 8)

    def forward(self, x):
        h = F.gelu(self.norm(self.conv(x)))
        return F.max_pool2d(h, 2), h.mean((2, 3)), x.permute(0, 2, 3, 1).reshape(x.shape[0], -1, 4)


case("semantics", [(randn(2, 4, 6, 6).to(memory_format=torch.channels_last),),
                   (randn(2, 4, 6, 6, seed=1).to(memory_format=torch.channels_last),)])(ChannelsLastConvBlock)


@case("semantics", [(torch.tensor([3_000_000_000, -5, 2**40 + 7, 17]), randn(11))])
class Int64LargeValues(nn.Module):
    """int64 values past int32: hashing to a bucket index, products, a cumsum, and gather by them."""

    def forward(self, ids, table):
        bucket = (ids * 1_000_003 + 12_345) % table.shape[0]
        return bucket, table[bucket], ids.cumsum(0), ids * 4, ids // 3, (ids >> 3) & 0xFFFF, ids.max() - ids.min()


@case("semantics", [(torch.tensor([[1.0, float("nan"), 3.0, -1.0], [2.0, float("inf"), -float("inf"), 2.0],
                                   [-1.0, -2.0, -3.0, float("nan")]]),)])
class NanInfExtremes(nn.Module):
    """max/min/argmax propagate nan; fmax/fmin skip it; inf in amax; nan_to_num, nansum, nanmean."""

    def forward(self, x):
        m = x.max(1)
        return (m.values, m.indices, x.min(0).values, x.argmax(1), x.argmin(), x.amax(), torch.fmax(x, x.flip(0)),
                torch.maximum(x, x.flip(1)), torch.nan_to_num(x, nan=0.0, posinf=9.0), x.nansum(1),
                x.nanmean(0), torch.isnan(x).any(1), x.clamp(-1, 2), x.sort(1).values)


@case("semantics", [(randn(2, 3, 4, 5), randn(5, 6, seed=1), randn(3, 4, seed=2))])
class EinsumEllipsis(nn.Module):
    """einsum with `...`: batch dims broadcast, a contraction over the last dim, a diagonal."""

    def forward(self, x, w, m):
        return (torch.einsum("...ij,jk->...ik", x, w), torch.einsum("b...d,d->b...", x, w[:, 0]),
                torch.einsum("...ii->...i", x[..., :4, :4]), torch.einsum("...j,...j->...", x, x),
                torch.einsum("ij,...jk", m, x))


@case("semantics", [(torch.complex(randn(3, 5), randn(3, 5, seed=1)),)])
class ComplexVarStd(nn.Module):
    """var and std of a complex tensor (real results: the mean squared modulus of the deviation)."""

    def forward(self, z):
        return z.var(1), z.std(0, correction=0), torch.var_mean(z, 1)[0], z.abs().std()


class SwinWindowShift(nn.Module):
    """Swin's shifted windows: roll, window partition by view and permute, attention in each
    window, and the reverse."""

    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.qkv = nn.Linear(4, 12)

    def forward(self, x):
        b, h, w, c = x.shape
        s = torch.roll(x, shifts=(-1, -1), dims=(1, 2))
        win = s.view(b, h // 2, 2, w // 2, 2, c).permute(0, 1, 3, 2, 4, 5).reshape(-1, 4, c)
        q, k, v = self.qkv(win).chunk(3, -1)
        out = torch.softmax(q @ k.transpose(-2, -1) * c ** -0.5, -1) @ v
        out = out.view(b, h // 2, w // 2, 2, 2, c).permute(0, 1, 3, 2, 4, 5).reshape(b, h, w, c)
        return torch.roll(out, shifts=(1, 1), dims=(1, 2))


case("semantics", [(randn(2, 4, 6, 4),), (randn(2, 4, 6, 4, seed=1),)])(SwinWindowShift)


class T5RelativeBuckets(nn.Module):
    """T5's relative position buckets (log of int distances, where, min with a full tensor) feeding
    an embedding added to attention scores."""

    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.bias = nn.Embedding(8, 2)

    def forward(self, scores):
        q_len, k_len = scores.shape[-2:]
        rel = torch.arange(k_len)[None, :] - torch.arange(q_len)[:, None]
        buckets = (rel > 0).to(torch.long) * 4
        rel = torch.abs(rel)
        large = 2 + (torch.log(rel.float() / 2) / math.log(16 / 2) * 2).to(torch.long)
        large = torch.min(large, torch.full_like(large, 3))
        buckets = buckets + torch.where(rel < 2, rel, large)
        return (scores + self.bias(buckets).permute(2, 0, 1)[None]).softmax(-1), buckets


case("semantics", [(randn(1, 2, 5, 7),), (randn(1, 2, 5, 7, seed=1),)])(T5RelativeBuckets)


class LlamaComplexRope(nn.Module):
    """Meta's original Llama rotary embedding: polar frequencies, view_as_complex of the query pairs,
    a complex product, view_as_real, flatten."""

    def forward(self, q):
        b, s, h, d = q.shape
        freqs = 1.0 / (10000 ** (torch.arange(0, d, 2)[: d // 2].float() / d))
        cis = torch.polar(torch.ones(s, d // 2), torch.outer(torch.arange(s).float(), freqs))
        qc = torch.view_as_complex(q.float().reshape(b, s, h, -1, 2))
        return torch.view_as_real(qc * cis[None, :, None, :]).flatten(3).type_as(q)


case("semantics", [(randn(2, 5, 2, 8),), (randn(2, 5, 2, 8, seed=1),)])(LlamaComplexRope)


@case("semantics", [(randn(4, 4), torch.tensor([[0.0, 0.0, 1.0, 1.0], [0.5, 0.5, 2.0, 3.0], [1.0, 1.0, 1.0, 1.0]]),
                     torch.tensor([[0.0, 0.0, 2.0, 2.0], [0.5, 0.5, 1.0, 1.5]]))])
class DetrBoxOps(nn.Module):
    """DETR's generalized IoU between box sets (broadcast max/min, clamp, a degenerate box: 0/0)."""

    def forward(self, noise, a, b):
        area_a = (a[:, 2] - a[:, 0]) * (a[:, 3] - a[:, 1])
        area_b = (b[:, 2] - b[:, 0]) * (b[:, 3] - b[:, 1])
        lt, rb = torch.max(a[:, None, :2], b[:, :2]), torch.min(a[:, None, 2:], b[:, 2:])
        inter = (rb - lt).clamp(min=0).prod(-1)
        union = area_a[:, None] + area_b - inter
        iou = inter / union
        hull = (torch.max(a[:, None, 2:], b[:, 2:]) - torch.min(a[:, None, :2], b[:, :2])).clamp(min=0).prod(-1)
        return iou - (hull - union) / hull, noise.tril(-1) + noise.triu(2)


@case("semantics", [(randn(3, 8),), (randn(3, 8, seed=1),)])
class ShiftsDiffsAndWindows(nn.Module):
    """diff with prepend, roll without dims, unfold windows, repeat_interleave with a tensor of
    repeats, tril/triu with offsets."""

    def forward(self, x):
        return (torch.diff(x, dim=1, prepend=x[:, :1]), torch.roll(x, 3), x.unfold(1, 3, 2).mean(-1),
                x.repeat_interleave(torch.tensor([1, 2, 0]), dim=0), x[:, :3].tril(-1), x.triu(1)[:, ::3],
                torch.diff(x, n=2, dim=0))


@case("semantics", [(_ints(4, 6, low=0, high=50), _ints(4, 6, low=-8, high=8, seed=1))])
class BitwiseAndShifts(nn.Module):
    """Bitwise ops on int64 with negative operands: and/or/xor/not, shifts, and comparisons to bool."""

    def forward(self, a, b):
        return (a & b, a | b, a ^ b, ~b, a << 2, b >> 1, torch.bitwise_left_shift(a, b.abs() % 4),
                (a & 1).bool() ^ (b < 0), torch.logical_xor(a, b), b.sign() * a)


@case("semantics", [(randn(6, 4), torch.tensor([4, 0, 1, 1, 2, 4]))])
class IndexPutBroadcastAccumulate(nn.Module):
    """index_put with accumulate and duplicate rows, index_add along dim 1, index_copy, index_fill
    with a 0-d value and a broadcast boolean-row put."""

    def forward(self, x, rows):
        y = torch.zeros(5, 4).index_put((rows[:5],), x[:5], accumulate=True)
        z = x.clone()
        z[rows[:3], 1:3] = torch.tensor([7.0, 8.0])
        return (y, x.index_add(1, torch.tensor([0, 0, 3]), x[:, :3], alpha=0.5), z,
                x.index_copy(0, torch.tensor([5, 0]), x[:2] * 10), x.index_fill(1, torch.tensor([1, 3]), -1.0))



# ----------------------------------------------------------------- round 11: the refusals general10 left
class SdpaEncoderPaddedSeq(nn.Module):
    """A pre-norm encoder block on F.scaled_dot_product_attention with a boolean key mask, over a
    padded seq and batch (no --pad-dims), mean-pooled over the real tokens."""

    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.norm, self.qkv, self.out = nn.LayerNorm(8), nn.Linear(8, 24), nn.Linear(8, 8)

    def forward(self, x, mask):
        b, s, _ = x.shape
        q, k, v = self.qkv(self.norm(x)).view(b, s, 3, 2, 4).permute(2, 0, 3, 1, 4)
        attended = F.scaled_dot_product_attention(q, k, v, attn_mask=mask[:, None, None, :].bool())
        h = x + self.out(attended.transpose(1, 2).reshape(b, s, 8))
        keep = mask[..., None].to(h.dtype)
        return h, (h * keep).sum(1) / keep.sum(1)


case("dynamic", [(randn(2, 6, 8), torch.ones(2, 6, dtype=torch.long)),
                 (randn(3, 5, 8, seed=1), torch.tensor([[1] * 5, [1] * 3 + [0] * 2, [1] * 4 + [0]]))],
     **_dyn([], (_hf_dims, _hf_dims), {"batch": [4], "seq": [8]}))(SdpaEncoderPaddedSeq)


class MhaPaddedSeqCausal(nn.Module):
    """torch's MultiheadAttention (sequence-first) with a causal float mask over a padded seq."""

    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.attn = nn.MultiheadAttention(8, 2)

    def forward(self, x):
        s = x.shape[0]
        causal = torch.triu(torch.full((s, s), float("-inf")), diagonal=1)
        return self.attn(x, x, x, attn_mask=causal, need_weights=False)[0]


case("dynamic", [(randn(6, 2, 8),), (randn(5, 2, 8, seed=1),)],
     **_dyn([], ({0: Dim("seq", min=2, max=16)},), {"seq": [8]}))(MhaPaddedSeqCausal)


class FlatTokenCrossEntropy(nn.Module):
    """A language-model head and its loss over tokens flattened to [batch*seq, vocab], seq padded."""

    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.head = nn.Linear(8, 11)

    def forward(self, x, labels):
        logits = self.head(x)
        return F.cross_entropy(logits.view(-1, 11), labels.view(-1), ignore_index=0), logits.argmax(-1)


case("dynamic", [(randn(2, 6, 8), torch.randint(0, 11, (2, 6), generator=_g(1))),
                 (randn(2, 3, 8, seed=1), torch.randint(0, 11, (2, 3), generator=_g(2)))],
     **_dyn([], ({1: _seq10}, {1: _seq10}), {"seq": [8]}))(FlatTokenCrossEntropy)


@case("dynamic", [(randn(2, 6, 4),), (randn(2, 4, 4, seed=1),)],
      **_dyn([], ({1: _seq10},), {"seq": [8]}))
class EllipsisEinsumPaddedSeq(nn.Module):
    """A gram matrix over a padded seq by einsum with `...`, and a mean over seq laid inside features."""

    def forward(self, x):
        return torch.einsum("...sd,...se->...de", x, x.tanh()), x.transpose(1, 2).reshape(2, -1).mean(-1)


@case("data", [(randn(3, 7), torch.tensor([2, 5])), (randn(3, 7, seed=1), torch.tensor([2, 5])),
               (randn(3, 7, seed=2), torch.tensor([1, 5]))])  # (other bounds: padded since general19)
class TensorSplitByTensor(nn.Module):
    """tensor_split at positions held in a tensor (segment boundaries), each segment pooled."""

    def forward(self, x, bounds):
        return torch.stack([part.amax(1) for part in torch.tensor_split(x, bounds, dim=1)], 1)



@case("data", [(torch.tensor([4, 4, 1, 1, 1, 7, 4, 4]),), (torch.tensor([2, 2, 9, 9, 9, 3, 5, 5]),),
               (torch.tensor([1, 2, 3, 4, 5, 6, 7, 8]),)], refuses={2: "unique_consecutive"})
class RunLengthEncode(nn.Module):
    """Run-length encoding: unique_consecutive's values and counts, and each element's run."""

    def forward(self, ids):
        values, inverse, counts = torch.unique_consecutive(ids, return_inverse=True, return_counts=True)
        return values, counts, inverse, counts.cumsum(0)


# ----------------------------------------------------------------- round 12: a PyTorch corpus's forms (general12)
def _floats(*shape: int, seed: int = 0) -> torch.Tensor:
    """Distinct values (no ties for sort/arg* ops)."""
    return torch.randperm(math.prod(shape), generator=_g(seed)).float().div(7).sub(3).reshape(shape)


@case("corpus", [(_ints(3, 4).int(), randn(3, 4).half(), randn(3, 4, seed=1).bfloat16(), randn(3, 4, seed=2),
                  torch.tensor(1.5, dtype=torch.float64), _ints(3, 4, low=0, high=200, seed=3).to(torch.uint8))])
class MixedDtypeArithmetic(nn.Module):
    """Promotion among int32, half, bf16, float32, a 0-d float64 and uint8 (half with bf16 is float32)."""

    def forward(self, i32, h, b, f, d0, u8):
        return (i32 + h, h * b, b - f, i32 * d0, f + d0, u8 + i32, u8.float() / 255, i32.type_as(h) + h,
                (h + 1).to(f.dtype) * f, torch.result_type(i32, h) == torch.float16, u8 * 2, (b * d0).dtype == torch.bfloat16)


@case("corpus", [(_ints(4, 5).int(), _ints(4, 5, low=1, high=30, seed=1))])
class IntegerAndBoolMath(nn.Module):
    """int32 pow/abs/sign/clamp, bitwise not and shifts of int32, gcd/lcm, logical ops, bool reductions."""

    def forward(self, a, b):
        flag = a > 0
        return (a.pow(2), a.abs(), a.sign(), a.clamp(-3, 4), ~a, a << 2, a >> 1, torch.gcd(a.long(), b), torch.lcm(a.long() % 5, b % 7),
                torch.logical_xor(flag, b > 10), flag.sum(1), flag.all(0), flag.any(), a.max(1).values, a.min(), flag.int().sum(),
                torch.count_nonzero(a, dim=1), a.sum(dtype=torch.int32), (a % 3).prod(0), flag.float().mean(1))


@case("corpus", [(_floats(4, 6), torch.tensor([[0, 5], [1, 1], [4, 2], [3, 0]]))])
class TakeAlongDimAndGather(nn.Module):
    """take_along_dim with argsort and with dim=None, gather along the first dim by a negative dim, and an expanded index."""

    def forward(self, x, idx):
        order = x.argsort(-1)
        return (torch.take_along_dim(x, order, dim=-1), torch.take_along_dim(x, idx.flatten()[:5]),
                torch.gather(x, -2, idx[:, :1].expand(4, 6) % 4), x.gather(1, idx.clamp(max=5)),
                torch.take_along_dim(x, x.argmax(1, keepdim=True), 1))


@case("corpus", [(randn(3, 5), torch.tensor([4, 0, 2]), randn(3, 3, seed=1)),
                 (randn(3, 5, seed=2), torch.tensor([1, 3, 0]), randn(3, 3, seed=3))])
class IndexFillCopyAdd(nn.Module):
    """index_fill with a scalar, index_copy and index_add with alpha along dim 1, and their in-place forms."""

    def forward(self, x, idx, src):
        y = x.clone()
        y.index_add_(1, idx, src, alpha=-0.5)
        return (x.index_fill(1, idx[:2], -1.0), x.index_copy(1, idx, src), y, x.index_add(1, idx, src, alpha=2),
                x.t().index_fill(0, idx, 0.0))


@case("corpus", [(randn(4, 5), torch.tensor([[0, 1, 2, 3, 0], [3, 2, 1, 0, 3]]), randn(2, 5, seed=1))])
class ScatterVariants(nn.Module):
    """scatter with a scalar value, scatter(reduce='add'/'multiply'), scatter_add along dim 0, in place on a clone."""

    def forward(self, x, idx, src):
        y = x.clone()
        y.scatter_(0, idx, src, reduce="multiply")
        z = x.clone()
        z.scatter_add_(0, idx, src)
        return (x.scatter(0, idx, 2.5), x.scatter(0, idx, src, reduce="add"), y, z,
                torch.zeros(3, 5).scatter_(1, idx[:, :3] % 5, 1.0))


@case("corpus", [(randn(4, 6), randn(6) > 0), (randn(4, 6, seed=1), randn(6, seed=2) > 0)])
class MaskAssignScalar(nn.Module):
    """`y[y < 0] = 0`, columns picked by a bool mask set to a scalar, a row mask, and `+= 1` through a mask."""

    def forward(self, x, cols):
        y = x.clone()
        y[y < 0] = 0
        z = x.clone()
        z[:, cols] = 1.5
        w = x.clone()
        w[x.sum(1) > 0] += 1
        return y, z, w, torch.where(cols, x, x.new_tensor(-2.0))


@case("corpus", [(randn(5, 4, 3), torch.tensor([-1, 0, 2]))])
class NegativeAndListIndexing(nn.Module):
    """Negative ints, lists, tensors with negative entries, None, steps and ellipsis in one subscript each."""

    def forward(self, x, idx):
        return (x[-1], x[:, [2, 0]], x[[0, 2]][:, None], x[idx], x[..., None, ::2], x[1:-1:2, -2:], x[idx, :, idx],
                x[-2, idx[1:]], x[:, 1][idx])


@case("corpus", [(torch.tensor([[1, 0, 3], [2, 5, 0]]),)])
class OneHotEmbedding(nn.Module):
    """one_hot into a matmul against an embedding table, and the embedding with padding_idx (same rows)."""

    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.emb = nn.Embedding(6, 4, padding_idx=0)

    def forward(self, ids):
        hot = F.one_hot(ids, num_classes=6).float()
        return hot @ self.emb.weight, self.emb(ids), F.one_hot(ids.flatten(), 7).sum(0), hot.argmax(-1)


@case("corpus", [(randn(3, 4, 5),), (randn(3, 4, 5, seed=1),)])
class ReduceDimTuples(nn.Module):
    """Reductions over dim tuples with and without keepdim: sum, amax, mean, std, var_mean, norm, logsumexp."""

    def forward(self, x):
        var, mean = torch.var_mean(x, (1, 2), correction=2)
        return (x.sum((0, 2), keepdim=True), x.amax((-1, -2)), x.mean(dim=(1,), keepdim=True), x.std((0, 2), correction=0),
                var, mean, x.norm(p=3, dim=(1, 2)), torch.logsumexp(x, (0, 1)), x.amin((0, -1), keepdim=True),
                torch.linalg.vector_norm(x, ord=float("inf"), dim=(0, 2), keepdim=True), x.abs().prod(2).prod(1),
                torch.linalg.matrix_norm(x), x.nansum((0, 1)))


@case("corpus", [(_floats(3, 4, 5),), (_floats(3, 4, 5, seed=1),)])
class ArgReductionsKeepdim(nn.Module):
    """argmax/argmin with keepdim and flattened, max/min/median/kthvalue/mode along a dim with keepdim, aminmax."""

    def forward(self, x):
        m = x.max(1, keepdim=True)
        lo, hi = torch.aminmax(x, dim=-1)
        return (x.argmax(0, keepdim=True), x.argmin(), m.values, m.indices, x.min(-1).indices, x.median(2, keepdim=True).indices,
                x.kthvalue(2, 0, keepdim=True).values, x.round().mode(1).values, lo, hi, x.nanmedian(1).values)


@case("corpus", [(randn(3, 8),)])
class QuantileModes(nn.Module):
    """quantile with a tensor of qs along a dim in each interpolation, and nanquantile over values with NaN."""

    def forward(self, x):
        q = torch.tensor([0.1, 0.5, 0.9])
        holes = x.masked_fill(x > 1, float("nan"))
        return tuple(torch.quantile(x, q, dim=1, keepdim=True, interpolation=m)
                     for m in ("linear", "lower", "higher", "nearest", "midpoint")) + (
            torch.nanquantile(holes, 0.25, dim=1), torch.quantile(x, 0.5))


@case("complex", [(torch.randn(3, 4, dtype=torch.complex128, generator=_g(11)),)])
class Complex128Edge(nn.Module):
    """complex128 in and out: modulus, conjugate product, real view sums and a double result."""

    def forward(self, z):
        return z * z.conj(), z.abs(), torch.view_as_real(z).sum(-1), z * 2.5 - 1j, (z.real - z.imag).sum()


@case("complex", [(torch.randn(2, 5, dtype=torch.complex64, generator=_g(12)), randn(2, 5) > 0, randn(5).abs() + 0.5)])
class ComplexWhereAndDivide(nn.Module):
    """where between complex and a scalar, complex divided by a real vector, sgn, and masked_fill with a complex scalar."""

    def forward(self, z, mask, r):
        return torch.where(mask, z, 0), z / r, z.sgn(), z.masked_fill(mask, 1j), (z * r).sum(0)


@case("complex", [(randn(4, 3), randn(3))])
class ComplexRotationEinsum(nn.Module):
    """A complex rotation built from angles, applied with einsum, then magnitudes back to reals."""

    def forward(self, x, theta):
        rot = torch.exp(1j * theta)
        z = torch.complex(x, x.flip(0))
        out = torch.einsum("bi,i->bi", z, rot)
        return out.abs(), torch.view_as_real(out).flatten(1), torch.einsum("bi,ci->bc", out, out.conj()).real


@case("corpus", [(randn(4, 6),), (randn(4, 6, seed=1),)])
class InplaceSliceAssign(nn.Module):
    """A row assigned from another, `+=` into a column slice, copy_ into the last column, a strided flat view zeroed."""

    def forward(self, x):
        y = x.clone()
        y[0] = y[1]
        y[:, 2:4] += x[:, :2]
        y[..., -1].copy_(x[..., 0])
        y.view(-1)[::5] = 0
        y.unsqueeze(0)[0, 2].fill_(5)
        return y, y.sum(0)


@case("corpus", [(randn(3, 4),), (randn(3, 4, seed=1),)])
class InplaceActivationsOnViews(nn.Module):
    """relu_/sigmoid_/add_(alpha)/mul_/clamp_ through a transpose, a chunk and a select."""

    def forward(self, x):
        y = x.clone()
        y.t().relu_()
        a, b = y.chunk(2, dim=1)
        a.sigmoid_()
        b.add_(x[:, :2], alpha=3).mul_(0.5)
        y[1].clamp_(min=0.2)
        y.T.sub_(1)
        return y


@case("corpus", [(randn(3, 4), randn(4) > 0, randn(3, seed=1))])
class WhereBroadcastScalars(nn.Module):
    """where with broadcast conditions and operands, a 0-d tensor, Python scalars, then the result as an index."""

    def forward(self, x, cond, row):
        picked = torch.where(x > 0, 1, 0)
        return (torch.where(cond, x, 0.0), torch.where(cond[None, :], row[:, None], torch.tensor(2.0)),
                torch.where(cond, 1.0, -1.0), picked, x.gather(1, picked), torch.where(row > 0)[0].numel() * x,
                x.masked_fill(~cond, float("-inf")).softmax(-1))


@case("corpus", [(randn(3, 5) > 0, _ints(3, 5, low=1, high=4).int(), randn(3, 5))])
class CumulativeDtypes(nn.Module):
    """cumsum of bool (int64), of int32 (int64), with dtype=float64, cumprod of ints, diff with prepend, trapezoid."""

    def forward(self, flag, n, x):
        return (flag.cumsum(1), n.cumsum(0), x.cumsum(1, dtype=torch.float64), n.cumprod(1), torch.diff(x, dim=1, prepend=x[:, :1]),
                torch.diff(n, n=2, dim=1), torch.trapezoid(x, dim=1), torch.cumulative_trapezoid(x, dim=1), x.cummin(1).indices)


@case("corpus", [(_floats(4, 7),), (_floats(4, 7, seed=1),)])
class TopkSmallestAndRanks(nn.Module):
    """topk of the smallest, along dim 0, of ints; ranks by argsort of argsort; sort descending of ints."""

    def forward(self, x):
        n = (x * 7).long()
        small = x.topk(2, largest=False)
        ranks = x.argsort(1).argsort(1)
        return (small.values, small.indices, x.topk(3, dim=0).indices, n.topk(2).values, ranks,
                n.sort(1, descending=True).values, torch.sort(x, 0).indices, x.msort()[:2])


@case("corpus", [(randn(2, 3, 6), randn(1, 2, 5, 5, seed=1), randn(1, 2, 3, 4, 5, seed=2))])
class PadModes(nn.Module):
    """F.pad in reflect (1-D and 2-D), replicate (3-D), circular (2-D), constant with a value, and negative (cropping) pads."""

    def forward(self, x, img, vol):
        return (F.pad(x, (2, 1), mode="reflect"), F.pad(img, (1, 2, 2, 0), mode="reflect"), F.pad(vol, (1, 1, 0, 2, 1, 0), mode="replicate"),
                F.pad(img, (2, 1, 1, 3), mode="circular"), F.pad(x, (1, 1, 0, 2), value=-3.5), F.pad(img, (-1, 0, 1, -2)),
                nn.ReflectionPad2d(1)(img), nn.ZeroPad2d((0, 1, 1, 0))(img), F.pad(x, (1, 2), mode="replicate"))


@case("corpus", [(randn(1, 2, 4, 6),)])
class InterpolateModes(nn.Module):
    """interpolate: nearest, nearest-exact, bilinear with and without align_corners, bicubic, area, a 1.5 scale, sizes."""

    def forward(self, x):
        return (F.interpolate(x, scale_factor=2, mode="nearest"), F.interpolate(x, size=(5, 9), mode="nearest-exact"),
                F.interpolate(x, size=(7, 5), mode="bilinear", align_corners=True), F.interpolate(x, scale_factor=1.5, mode="bilinear"),
                F.interpolate(x, size=(6, 8), mode="bicubic", align_corners=False), F.interpolate(x, size=(2, 3), mode="area"),
                F.interpolate(x.flatten(2), size=10, mode="linear"), F.interpolate(x[:, :, None], size=(2, 5, 7), mode="trilinear"),
                nn.Upsample(scale_factor=(1, 2), mode="nearest")(x))


@case("corpus", [(randn(1, 3, 8, 8),)])
class AntialiasDownscale(nn.Module):
    """Downscaling with antialias (bilinear and bicubic), as torchvision's Resize does."""

    def forward(self, x):
        return (F.interpolate(x, size=(3, 5), mode="bilinear", antialias=True),
                F.interpolate(x, size=(4, 4), mode="bicubic", antialias=True, align_corners=False))


@case("corpus", [(randn(2, 3, 4, 5), randn(2, 3, 6, 5, seed=1), randn(4, 4, seed=2), randn(5, seed=3))])
class EinsumSpellings(nn.Module):
    """einsum with an implicit output, spaces, a trace, an outer product, a full sum, the sublist form, repeated operands."""

    def forward(self, q, k, m, v):
        return (torch.einsum("bhqd,bhkd->bhqk", q, k), torch.einsum("ij,jk", m, m), torch.einsum("ii", m),
                torch.einsum("i, j -> ij", v, v), torch.einsum("bhqd->", q), torch.einsum(m, [0, 1], m, [1, 2], [0, 2]),
                torch.einsum("bhqd,bhqd->bhq", q, q), torch.einsum("ii->i", m), torch.einsum("bhqd,d->bqh", q, v),
                torch.einsum("ij,ij,ij->i", m, m, m))


@case("corpus", [(randn(2, 3),)])
class CreationWithDtypes(nn.Module):
    """Creation ops with dtype and device arguments: arange by a float step, linspace in bf16, full of int16,
    eye of ints, new_full/new_ones/zeros_like with another dtype, logspace, a tensor literal on the input's device."""

    def forward(self, x):
        return (torch.arange(0, 1, 0.25, dtype=torch.float64), torch.linspace(-1, 1, 5, dtype=torch.bfloat16),
                torch.full((2, 3), 7, dtype=torch.int16), torch.eye(3, 4, dtype=torch.int64), x.new_full((2,), 3.5),
                x.new_ones(3, dtype=torch.int32, device=x.device), torch.zeros_like(x, dtype=torch.bool),
                torch.logspace(0, 2, 3), x + torch.tensor([1.0, 2.0, 3.0], device=x.device),
                torch.ones(2, 3, device="cpu") * x, torch.empty(2, 3).fill_(0.5) + x, torch.arange(6).view(2, 3) * x,
                torch.full_like(x, 2, dtype=torch.float16), torch.arange(5, 0, -2))


@case("corpus", [(randn(4), randn(3, seed=1))])
class GridsAndCombinations(nn.Module):
    """meshgrid with xy and ij indexing, cartesian_prod, triu_indices gathering pairs, diag_embed, block_diag, kron."""

    def forward(self, a, b):
        gx, gy = torch.meshgrid(a, b, indexing="xy")
        ix, iy = torch.meshgrid(a, b, indexing="ij")
        rows, cols = torch.triu_indices(4, 4, 1)
        return (gx * gy, ix - iy, torch.cartesian_prod(a, b), a[rows] * a[cols], torch.tril_indices(3, 4, -1),
                torch.diag_embed(b), torch.block_diag(a[None, :2], b[:, None]), torch.kron(a[:2, None], b[None]),
                torch.vander(b, 3), torch.rot90(ix, 1, (0, 1)))


@case("corpus", [(randn(2, 3, 4), randn(3, 4, seed=1))])
class MovedimUnflattenRoll(nn.Module):
    """movedim with tuples, unflatten, roll along two dims, flatten of a middle range, swapaxes, expand_as, repeat."""

    def forward(self, x, y):
        return (x.movedim((0, 1), (2, 0)), x.unflatten(2, (2, 2)), torch.roll(x, (1, -2), (1, 2)), x.flatten(0, 1),
                x.swapaxes(0, 2), y.expand_as(x) + x, y.repeat(2, 1, 2), torch.roll(y, 5), x.unsqueeze(2).tile((1, 1, 2, 1)))


@case("corpus", [(randn(3, 4), randn(3, 4, seed=1), randn(3, seed=2))])
class LossFunctionsOtherForms(nn.Module):
    """huber, smooth_l1 with beta, kl_div with log targets, BCE with pos_weight, margin ranking, cosine embedding,
    triplet margin, soft margin, multilabel margin's soft form, poisson nll."""

    def forward(self, a, b, s):
        y = torch.sign(s)
        t = (b > 0).float()
        return (F.huber_loss(a, b, delta=0.5), F.smooth_l1_loss(a, b, beta=2.0, reduction="sum"),
                F.kl_div(a.log_softmax(1), b.log_softmax(1), reduction="batchmean", log_target=True),
                F.binary_cross_entropy_with_logits(a, t, pos_weight=torch.tensor([1.0, 2.0, 0.5, 3.0])),
                F.margin_ranking_loss(a[:, 0], b[:, 0], y, margin=0.1), F.cosine_embedding_loss(a, b, y),
                F.triplet_margin_loss(a, b, a.flip(0)), F.soft_margin_loss(a, torch.sign(b)),
                F.multilabel_soft_margin_loss(a, t), F.poisson_nll_loss(a, b.abs()), F.l1_loss(a, b, reduction="none"))


@case("corpus", [(randn(5, 4), torch.tensor([0, 2, 1, 3, 2]))])
class CrossEntropyForms(nn.Module):
    """cross_entropy with class weights and label smoothing, reduction='none'/'sum', ignore_index, nll_loss of log_softmax."""

    def forward(self, logits, target):
        w = torch.tensor([1.0, 0.5, 2.0, 1.5])
        return (F.cross_entropy(logits, target, weight=w, label_smoothing=0.1), F.cross_entropy(logits, target, reduction="none"),
                F.cross_entropy(logits, target, ignore_index=2, reduction="sum"), F.nll_loss(logits.log_softmax(-1), target, weight=w),
                F.cross_entropy(logits, logits.softmax(-1)), F.cross_entropy(logits[None].transpose(1, 2), target[None]))


@case("corpus", [(randn(2, 4, 3, 3),)])
class NormalizationVariants(nn.Module):
    """normalize with p=1 along dim 0, local response norm, rms_norm with a weight, group norm without affine,
    layer norm over two dims, instance norm with running statistics (eval), renorm."""

    def forward(self, x):
        return (F.normalize(x, p=1.0, dim=0), F.local_response_norm(x, 3), F.rms_norm(x, (3, 3), torch.full((3, 3), 2.0)),
                F.group_norm(x, 2), F.layer_norm(x, (3, 3)), F.instance_norm(x, torch.zeros(4), torch.ones(4)),
                torch.renorm(x, 2, 1, 1.0), F.normalize(x.flatten(1), dim=-1))


@case("corpus", [(randn(2, 3, 5, 5),)])
class GridSampleAffine(nn.Module):
    """affine_grid of a rotation and grid_sample with bilinear/nearest, zeros/border/reflection padding."""

    def forward(self, x):
        c, s = math.cos(0.3), math.sin(0.3)
        theta = torch.tensor([[c, -s, 0.1], [s, c, -0.2]]).expand(2, 2, 3)
        grid = F.affine_grid(theta, [2, 3, 4, 6], align_corners=False)
        return (F.grid_sample(x, grid, align_corners=False), F.grid_sample(x, grid, mode="nearest", padding_mode="border", align_corners=False),
                F.grid_sample(x, grid * 1.3, padding_mode="reflection", align_corners=True))


@case("corpus", [(randn(3, 4), randn(3, 4, seed=1).abs() + 0.1)])
class PointwiseSpecials(nn.Module):
    """copysign, heaviside, hypot, logaddexp2, xlogy with zeros, float_power, lerp with a tensor weight, addcdiv, frac, ldexp."""

    def forward(self, x, y):
        return (torch.copysign(y, x), torch.heaviside(x, torch.tensor(0.5)), torch.hypot(x, y), torch.logaddexp2(x, y),
                torch.xlogy(x.clamp(min=0), y), torch.float_power(y, 2), torch.lerp(x, y, y / y.max()),
                torch.addcdiv(x, x, y, value=0.5), x.frac(), torch.ldexp(x, torch.tensor(3)), torch.sinc(x), x.logit(eps=1e-3))


@case("corpus", [(randn(1, 16, 6, 6),), (randn(1, 16, 6, 6, seed=1),)])
class MobileNetV2Block(nn.Module):
    """MobileNetV2's inverted residual: 1x1 expand, 3x3 depthwise, ReLU6, 1x1 project, batch norms (eval), residual."""

    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(1)
        self.expand = nn.Sequential(nn.Conv2d(16, 48, 1, bias=False), nn.BatchNorm2d(48), nn.ReLU6(inplace=True))
        self.depthwise = nn.Sequential(nn.Conv2d(48, 48, 3, padding=1, groups=48, bias=False), nn.BatchNorm2d(48), nn.ReLU6(inplace=True))
        self.project = nn.Sequential(nn.Conv2d(48, 16, 1, bias=False), nn.BatchNorm2d(16))
        for m in self.modules():
            if isinstance(m, nn.BatchNorm2d):
                nn.init.uniform_(m.weight, 0.5, 1.5), nn.init.normal_(m.running_mean), nn.init.uniform_(m.running_var, 0.5, 2)

    def forward(self, x):
        return x + self.project(self.depthwise(self.expand(x)))


class FunctionalBottleneck(nn.Module):
    """A ResNet bottleneck with stride 2 and a projection shortcut, written with F.conv2d on bare parameters."""

    def __init__(self) -> None:
        super().__init__()
        g = _g(7)
        self.w1 = nn.Parameter(torch.randn(4, 8, 1, 1, generator=g) * 0.3)
        self.w2 = nn.Parameter(torch.randn(4, 4, 3, 3, generator=g) * 0.2)
        self.w3 = nn.Parameter(torch.randn(16, 4, 1, 1, generator=g) * 0.3)
        self.ws = nn.Parameter(torch.randn(16, 8, 1, 1, generator=g) * 0.3)
        self.scale = nn.Parameter(torch.rand(16, generator=g) + 0.5)

    def forward(self, x):
        h = F.relu(F.conv2d(x, self.w1))
        h = F.relu(F.conv2d(h, self.w2, stride=2, padding=1))
        h = F.conv2d(h, self.w3) * self.scale.view(1, -1, 1, 1)
        return F.relu(h + F.conv2d(x, self.ws, stride=2)), F.adaptive_avg_pool2d(h, 1).flatten(1)


case("corpus", [(randn(2, 8, 7, 7),)])(FunctionalBottleneck)


@case("corpus", [(randn(1, 8, 9, 9),)])
class ConvNeXtBlockPermuted(nn.Module):
    """ConvNeXt's block: depthwise 7x7, permute to NHWC, LayerNorm on the last dim, MLP, layer scale, permute back."""

    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(2)
        self.dw = nn.Conv2d(8, 8, 7, padding=3, groups=8)
        self.norm = nn.LayerNorm(8, eps=1e-6)
        self.fc1, self.fc2 = nn.Linear(8, 32), nn.Linear(32, 8)
        self.gamma = nn.Parameter(torch.full((8,), 0.5))

    def forward(self, x):
        h = self.dw(x).permute(0, 2, 3, 1)
        h = self.fc2(F.gelu(self.fc1(self.norm(h)))) * self.gamma
        return x + h.permute(0, 3, 1, 2)


@case("corpus", [(randn(2, 3, 8, 8),)])
class VitPatchesByUnfold(nn.Module):
    """ViT written another way: patches by unfold/reshape (no conv), a class token, learned positions,
    attention with qkv chunked by reshape/unbind, tanh-GELU MLP, the class token out."""

    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(3)
        self.embed = nn.Linear(3 * 16, 12)
        self.cls = nn.Parameter(torch.randn(1, 1, 12))
        self.pos = nn.Parameter(torch.randn(1, 5, 12) * 0.1)
        self.qkv, self.proj = nn.Linear(12, 36), nn.Linear(12, 12)
        self.mlp = nn.Sequential(nn.Linear(12, 24), nn.GELU(approximate="tanh"), nn.Linear(24, 12))
        self.n1, self.n2 = nn.LayerNorm(12), nn.LayerNorm(12)

    def forward(self, img):
        b = img.shape[0]
        patches = img.unfold(2, 4, 4).unfold(3, 4, 4).permute(0, 2, 3, 1, 4, 5).reshape(b, 4, 48)
        x = torch.cat([self.cls.expand(b, -1, -1), self.embed(patches)], 1) + self.pos
        q, k, v = self.qkv(self.n1(x)).reshape(b, 5, 3, 2, 6).permute(2, 0, 3, 1, 4).unbind(0)
        att = (q @ k.transpose(-2, -1) * 6 ** -0.5).softmax(-1)
        x = x + self.proj((att @ v).transpose(1, 2).reshape(b, 5, 12))
        x = x + self.mlp(self.n2(x))
        return x[:, 0]


@case("corpus", [(randn(2, 8, 6, 6),)])
class EfficientNetGates(nn.Module):
    """SiLU, hardswish, a squeeze-excite gate with hardsigmoid, adaptive pooling to 1, and a drop-connect-free residual."""

    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(4)
        self.conv = nn.Conv2d(8, 8, 3, padding=1, groups=2)
        self.reduce, self.expand = nn.Conv2d(8, 2, 1), nn.Conv2d(2, 8, 1)

    def forward(self, x):
        h = F.hardswish(self.conv(F.silu(x)))
        gate = F.hardsigmoid(self.expand(F.silu(self.reduce(F.adaptive_avg_pool2d(h, 1)))))
        return x + h * gate, F.adaptive_max_pool2d(h, (2, 3))


@case("corpus", [(randn(1, 4, 7, 7),)])
class DenseNetTransition(nn.Module):
    """DenseNet: two BN-ReLU-conv layers each concatenated to what came before, then a transition with an
    average pool (ceil_mode, count_include_pad=False) and a max pool with ceil_mode."""

    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(5)
        self.layers = nn.ModuleList(nn.Sequential(nn.BatchNorm2d(4 + 3 * i), nn.ReLU(), nn.Conv2d(4 + 3 * i, 3, 3, padding=1))
                                    for i in range(2))
        self.trans = nn.Conv2d(10, 5, 1)

    def forward(self, x):
        feats = [x]
        for layer in self.layers:
            feats.append(layer(torch.cat(feats, 1)))
        h = self.trans(torch.cat(feats, 1))
        return (F.avg_pool2d(h, 2, ceil_mode=True, count_include_pad=False), F.avg_pool2d(h, 3, 2, padding=1, count_include_pad=False),
                F.max_pool2d(h, 2, ceil_mode=True))


@case("corpus", [(randn(2, 12, 4, 4),)])
class ShuffleNetUnit(nn.Module):
    """ShuffleNet: channel_shuffle (the op and the view/transpose spelling), pixel_unshuffle, a split in two halves."""

    def forward(self, x):
        left, right = x.chunk(2, dim=1)
        b, c, h, w = x.shape
        shuffled = x.view(b, 3, c // 3, h, w).transpose(1, 2).reshape(b, c, h, w)
        return (F.channel_shuffle(x, 4), shuffled, F.pixel_unshuffle(right, 2), torch.cat([left, right.relu()], 1),
                nn.ChannelShuffle(2)(x)[:, :3])


@case("corpus", [(randn(2, 6, 8),), (randn(2, 6, 8, seed=1),)])
class MlpMixerBlock(nn.Module):
    """MLP-Mixer: token mixing by a Linear over the transposed tokens, channel mixing, LayerNorms."""

    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(6)
        self.n1, self.n2 = nn.LayerNorm(8), nn.LayerNorm(8)
        self.tokens = nn.Sequential(nn.Linear(6, 12), nn.GELU(), nn.Linear(12, 6))
        self.channels = nn.Sequential(nn.Linear(8, 16), nn.GELU(), nn.Linear(16, 8))

    def forward(self, x):
        x = x + self.tokens(self.n1(x).transpose(1, 2)).transpose(1, 2)
        return x + self.channels(self.n2(x))


@case("corpus", [(randn(1, 8, 4, 4), randn(1, 4, 9, 9, seed=1))])
class UNetUpCropConcat(nn.Module):
    """UNet's up step: ConvTranspose2d (stride 2, output_padding), a centre crop of the skip, cat, GroupNorm, ReLU."""

    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(7)
        self.up = nn.ConvTranspose2d(8, 4, 3, stride=2, padding=1, output_padding=1)
        self.conv, self.norm = nn.Conv2d(8, 4, 3, padding=1), nn.GroupNorm(2, 4)

    def forward(self, x, skip):
        u = self.up(x)
        dy, dx = (skip.shape[2] - u.shape[2]) // 2, (skip.shape[3] - u.shape[3]) // 2
        crop = skip[:, :, dy:dy + u.shape[2], dx:dx + u.shape[3]]
        return F.relu(self.norm(self.conv(torch.cat([crop, u], 1))))


@case("corpus", [(randn(1, 4, 8, 8), randn(1, 6, 4, 4, seed=1), randn(1, 8, 2, 2, seed=2))])
class FpnTopDown(nn.Module):
    """FPN's top-down path: lateral 1x1s, nearest upsampling to the next level's size, sums, 3x3 smoothing."""

    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(8)
        self.lateral = nn.ModuleList(nn.Conv2d(c, 5, 1) for c in (4, 6, 8))
        self.smooth = nn.Conv2d(5, 5, 3, padding=1)

    def forward(self, c3, c4, c5):
        p5 = self.lateral[2](c5)
        p4 = self.lateral[1](c4) + F.interpolate(p5, size=c4.shape[-2:], mode="nearest")
        p3 = self.lateral[0](c3) + F.interpolate(p4, scale_factor=2.0)
        return [self.smooth(p) for p in (p3, p4, p5)]


@case("corpus", [(randn(2, 5, 8), torch.tensor([5, 3]))])
class GruLikeScanUnrolled(nn.Module):
    """A GRU cell unrolled by a Python loop over time, with lengths masking the update (packed-sequence free)."""

    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(9)
        self.cell = nn.GRUCell(8, 6)

    def forward(self, x, lengths):
        h = x.new_zeros(x.shape[0], 6)
        outs = []
        for t in range(x.shape[1]):
            new = self.cell(x[:, t], h)
            keep = (t < lengths).unsqueeze(1)
            h = torch.where(keep, new, h)
            outs.append(h)
        return torch.stack(outs, 1), h


@case("corpus", [(randn(2, 5, 8),)])
class LstmModule(nn.Module):
    """nn.LSTM (two layers, batch_first, bidirectional) as torch.export traces it."""

    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(10)
        self.lstm = nn.LSTM(8, 6, num_layers=2, batch_first=True, bidirectional=True)

    def forward(self, x):
        out, (h, c) = self.lstm(x)
        return out, h, c


# ----------------------------------------------------------------- round 12: random ops (statistical)
U = torch.zeros(20000)


@case("random", [(U,)], check=_moments(0.5, 25 / 12))
class UniformInPlaceRange(nn.Module):
    def forward(self, x):
        return x.clone().uniform_(-2, 3)


@case("random", [(U,)], check=_moments(math.exp(0.125), (math.exp(0.25) - 1) * math.exp(0.25)))
class LogNormalInPlace(nn.Module):
    def forward(self, x):
        return torch.empty_like(x).log_normal_(0.0, 0.5)


@case("random", [(U,)], check=_moments(1 / 0.3, 0.7 / 0.09))
class GeometricInPlace(nn.Module):
    def forward(self, x):
        return torch.empty_like(x).geometric_(0.3)


@case("random", [(U,)], check=_moments(0.5772156649, math.pi ** 2 / 6))
class GumbelFromUniform(nn.Module):
    """Gumbel noise as Gumbel-softmax code writes it: -log(-log(u)) of a uniform draw."""

    def forward(self, x):
        u = torch.rand_like(x).clamp(1e-10, 1 - 1e-7)
        return -torch.log(-torch.log(u))


@case("random", [(U,)], check=_moments(0.0, 1.0))
class RandnBf16Device(nn.Module):
    def forward(self, x):
        return torch.randn(x.shape, dtype=torch.bfloat16, device=x.device).float()


@case("random", [(torch.full((20000,), 3.0),)], check=_moments(3.0, 3.0))
class PoissonOfRates(nn.Module):
    def forward(self, rates):
        return torch.poisson(rates)


@case("random", [(torch.full((20000,), 2.0), torch.full((20000,), 0.5))], check=_moments(2.0, 0.25))
class NormalOfTensors(nn.Module):
    def forward(self, mean, std):
        return torch.normal(mean, std)


@case("random", [(U,)], check=_moments(-0.5, 33.25))
class RandintInt32Generator(nn.Module):
    def forward(self, x):
        return torch.randint(-10, 10, x.shape, dtype=torch.int32, generator=torch.Generator().manual_seed(4)).float()


def _permutation(got: Any, eager: Any) -> None:
    g = torch.as_tensor(got)
    assert g.shape == eager.shape and torch.equal(g.sort().values, eager.sort().values), "not a permutation"
    assert not torch.equal(g, torch.arange(g.numel()).float()), "the identity"


@case("random", [(torch.arange(200).float(),)], check=_permutation)
class RandpermShuffle(nn.Module):
    def forward(self, x):
        return x[torch.randperm(x.shape[0])]


def _frequencies(got: Any, eager: Any) -> None:
    counts = torch.bincount(torch.as_tensor(got).flatten(), minlength=4).double() / torch.as_tensor(got).numel()
    want = torch.tensor([0.1, 0.2, 0.3, 0.4], dtype=torch.float64)
    assert (counts - want).abs().max() < 0.02, counts


@case("random", [(torch.tensor([1.0, 2.0, 3.0, 4.0]),)], check=_frequencies)
class MultinomialWithReplacement(nn.Module):
    def forward(self, w):
        return torch.multinomial(w.expand(4, 4), 5000, replacement=True)


def _channels_dropped(got: Any, eager: Any) -> None:
    g = torch.as_tensor(got)
    per_channel = g.flatten(2)
    whole = ((per_channel == 0).all(-1) | (per_channel == 2).all(-1))
    assert whole.all(), "a channel neither dropped whole nor kept whole"
    kept = (per_channel[..., 0] == 2).double().mean().item()
    assert abs(kept - 0.5) < 0.1, kept


@case("random", [(torch.ones(8, 64, 3, 3),)], check=_channels_dropped)
class Dropout2dTrain(nn.Module):
    def forward(self, x):
        return F.dropout2d(x, 0.5, training=True)


@case("random", [(randn(20000, seed=9),)], check=_moments(0.0, 1.0))
class AlphaDropoutTrain(nn.Module):
    """alpha_dropout keeps a standard normal input's mean and variance."""

    def forward(self, x):
        return F.alpha_dropout(x, 0.2, training=True)


@case("corpus", [(randn(3, 4), torch.tensor(1.0)), (randn(3, 4, seed=1), torch.tensor(-1.0))])
class CondBranches(nn.Module):
    """torch.cond on a tensor predicate: two branches of different ops, same result shape."""

    def forward(self, x, flag):
        return torch.cond(flag.sum() > 0, lambda a: a.sin() * 2, lambda a: a.cos() - 1, (x,))


class RunningStats(nn.Module):
    """A buffer updated in forward (an EMA of the batch mean and a call counter), as a normalizer written by hand."""

    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("mean", torch.zeros(4))
        self.register_buffer("calls", torch.zeros((), dtype=torch.long))

    def forward(self, x):
        self.mean.mul_(0.9).add_(x.mean(0), alpha=0.1)
        self.calls += 1
        return x - self.mean, self.calls * 1


case("corpus", [(randn(5, 4),), (randn(5, 4, seed=1),)])(RunningStats)


class KvCacheWrite(nn.Module):
    """A static KV cache written at positions given as a tensor (index_copy_ into a buffer), then read whole."""

    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("cache", torch.zeros(1, 8, 4))

    def forward(self, kv, pos):
        self.cache.index_copy_(1, pos, kv)
        return self.cache.sum(-1), (self.cache[:, : pos.max() + 1] if False else self.cache).mean(1)


case("corpus", [(randn(1, 2, 4), torch.tensor([0, 1])), (randn(1, 2, 4, seed=1), torch.tensor([2, 3]))])(KvCacheWrite)


@case("corpus", [(randn(2, 6, 8),)])
class AutocastRegion(nn.Module):
    """A bf16 autocast region inside forward (matmuls in bf16), a float32 softmax after it."""

    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(11)
        self.lin = nn.Linear(8, 8)

    def forward(self, x):
        with torch.autocast("cpu", dtype=torch.bfloat16):
            h = self.lin(x)
            s = h @ h.transpose(1, 2)
        return s.float().softmax(-1), h.dtype == torch.bfloat16


@case("corpus", [(randn(2, 5, 8), torch.tensor([[False, False, False, True, True], [False] * 5]))])
class TorchEncoderLayerWithPadding(nn.Module):
    """nn.TransformerEncoderLayer (norm_first, GELU) with a key padding mask, and an nn.TransformerEncoder of two."""

    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(12)
        self.layer = nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, activation="gelu", batch_first=True, norm_first=True)
        self.stack = nn.TransformerEncoder(nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, batch_first=True), 2,
                                           enable_nested_tensor=False)

    def forward(self, x, pad):
        return self.layer(x, src_key_padding_mask=pad), self.stack(x, src_key_padding_mask=pad)


@case("corpus", [(randn(2, 4, 8), randn(2, 6, 8, seed=1))])
class TorchDecoderLayerCausal(nn.Module):
    """nn.TransformerDecoderLayer with a causal mask from generate_square_subsequent_mask and memory."""

    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(13)
        self.layer = nn.TransformerDecoderLayer(8, 2, 16, dropout=0.0, batch_first=True)

    def forward(self, tgt, memory):
        mask = nn.Transformer.generate_square_subsequent_mask(tgt.shape[1])
        return self.layer(tgt, memory, tgt_mask=mask, tgt_is_causal=True)


@case("corpus", [(randn(2, 5, 8), torch.tensor([[False, False, False, False, True], [False, False, True, True, True]]))])
class MhaWeightsPerHead(nn.Module):
    """nn.MultiheadAttention returning per-head weights (average_attn_weights=False), a key padding mask, kdim/vdim."""

    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(14)
        self.mha = nn.MultiheadAttention(8, 2, batch_first=True, kdim=6, vdim=4)

    def forward(self, x, pad):
        out, weights = self.mha(x, x[..., :6], x[..., :4], key_padding_mask=pad, average_attn_weights=False)
        return out, weights


@case("corpus", [(randn(2, 4, 6, 8), randn(2, 2, 6, 8, seed=1), randn(2, 2, 6, 8, seed=2), randn(6, 6, seed=3))])
class SdpaOptions(nn.Module):
    """scaled_dot_product_attention with enable_gqa, a custom scale, a float mask and a boolean mask."""

    def forward(self, q, k, v, bias):
        return (F.scaled_dot_product_attention(q, k, v, enable_gqa=True, scale=0.3),
                F.scaled_dot_product_attention(q, k.repeat_interleave(2, 1), v.repeat_interleave(2, 1), attn_mask=bias),
                F.scaled_dot_product_attention(q[:, :2], k, v, attn_mask=bias > 0))


@case("corpus", [(randn(4, 4) + 4 * torch.eye(4), randn(4, 2, seed=1))])
class LinalgSolvers(nn.Module):
    """det, slogdet, inv, solve, cholesky of a made SPD matrix, qr's reconstruction, eigvalsh, pinv, matrix_exp, cholesky_solve."""

    def forward(self, a, b):
        spd = a @ a.T + torch.eye(4)
        q, r = torch.linalg.qr(a)
        sign, logabs = torch.linalg.slogdet(a)
        return (torch.linalg.det(a), sign, logabs, torch.linalg.inv(a), torch.linalg.solve(a, b), torch.linalg.cholesky(spd),
                q @ r, torch.linalg.eigvalsh(spd), torch.linalg.pinv(a) @ a, torch.linalg.matrix_exp(a * 0.1),
                torch.cholesky_solve(b, torch.linalg.cholesky(spd)))


@case("complex", [(randn(2, 8, 6),)])
class FftnShiftFreqs(nn.Module):
    """fftn over two dims, fftshift/ifftshift, hfft/ihfft, rfftfreq and fftfreq as constants, a magnitude spectrum."""

    def forward(self, x):
        spec = torch.fft.fftshift(torch.fft.fftn(x, dim=(-2, -1)), dim=(-2, -1))
        back = torch.fft.ifftn(torch.fft.ifftshift(spec, dim=(-2, -1)), dim=(-2, -1)).real
        return (spec.abs(), back, torch.fft.hfft(x[..., :4], n=6), torch.fft.ihfft(x), torch.fft.rfftfreq(8, 0.5) * x[0, :5, 0],
                torch.fft.fftfreq(6) + x[0, 0], torch.fft.rfft(x, norm="ortho").angle())


@case("complex", [(randn(2, 64),)])
class StftIstftWindow(nn.Module):
    """stft with a Hann window (return_complex), a magnitude and phase, and istft back to the signal."""

    def forward(self, x):
        window = torch.hann_window(16)
        spec = torch.stft(x, 16, hop_length=4, window=window, return_complex=True)
        return spec.abs(), torch.istft(spec, 16, hop_length=4, window=window, length=64)


@case("corpus", [(randn(2, 3, 6, 6),)])
class UnfoldFoldIm2col(nn.Module):
    """F.unfold (im2col) with stride and dilation, a matmul as convolution, and F.fold summing overlaps back."""

    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(15)
        self.weight = nn.Parameter(torch.randn(4, 3 * 9) * 0.2)

    def forward(self, x):
        cols = F.unfold(x, 3, padding=1, stride=2)
        out = (self.weight @ cols).view(2, 4, 3, 3)
        patches = F.unfold(x, 2, dilation=2)
        return out, F.fold(patches, (6, 6), 2, dilation=2), nn.Fold((6, 6), 3, padding=1)(F.unfold(x, 3, padding=1))


@case("corpus", [(torch.tensor([1, 2, 4, 5, 4, 3, 2, 9]), torch.tensor([0, 2, 5]), randn(8, seed=1))])
class EmbeddingBagModes(nn.Module):
    """nn.EmbeddingBag with offsets in sum (per-sample weights), mean and max modes, and a 2-D input."""

    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(16)
        self.table = nn.Parameter(torch.randn(10, 3))

    def forward(self, ids, offsets, w):
        return (F.embedding_bag(ids, self.table, offsets, mode="sum", per_sample_weights=w),
                F.embedding_bag(ids, self.table, offsets, mode="mean"), F.embedding_bag(ids, self.table, offsets, mode="max"),
                F.embedding_bag(ids.view(2, 4), self.table, mode="mean"))


@case("corpus", [(randn(5, 3), randn(4, 3, seed=1))])
class DistancesAndHistograms(nn.Module):
    """cdist with p=1 and p=inf, pdist, cosine_similarity and pairwise_distance along dims, histc, bincount of a made index."""

    def forward(self, a, b):
        return (torch.cdist(a, b, p=1.0), torch.cdist(a, b, p=float("inf")), F.pdist(a), F.cosine_similarity(a[:4], b, dim=1),
                F.cosine_similarity(a[:, None], b[None], dim=-1), F.pairwise_distance(a[:4], b, p=3.0), torch.histc(a, bins=5, min=-2, max=2),
                torch.bincount((a.abs() * 2).long().flatten(), minlength=8)[:8])


@case("corpus", [(randn(2, 3, 4), randn(4, 5, seed=1), randn(2, 4, 5, seed=2), randn(3, seed=3))])
class ContractionForms(nn.Module):
    """tensordot by count and by dim lists, multi_dot, chain_matmul, baddbmm/addbmm with beta/alpha, addr, addmv, vdot, inner, outer."""

    def forward(self, x, w, bw, v):
        return (torch.tensordot(x, w, 1), torch.tensordot(x, bw, dims=([0, 2], [0, 1])), torch.linalg.multi_dot([x[0], w, w.T]),
                torch.baddbmm(x @ bw, x, bw, beta=0.5, alpha=2.0), torch.addbmm(w[:3], x, bw, beta=0.0), torch.addr(x[0], v, x[0, 0], alpha=3),
                torch.addmv(v, x[0], x[1, 0], beta=2), torch.inner(x, x[0]), torch.outer(v, v), torch.vdot(v, v * 2))


@case("corpus", [(randn(2, 5, 8).bfloat16(),)])
class Bf16ModelFloatSoftmax(nn.Module):
    """A model cast to bfloat16 (weights and activations), LayerNorm and GELU in bf16, softmax in float32 by its dtype."""

    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(17)
        self.body = nn.Sequential(nn.Linear(8, 16), nn.GELU(), nn.Linear(16, 8), nn.LayerNorm(8)).to(torch.bfloat16)

    def forward(self, x):
        h = self.body(x)
        return h, (h @ h.transpose(1, 2)).softmax(-1, dtype=torch.float32), h.float().mean()


@case("corpus", [(torch.tensor([250, 3, 128, 0], dtype=torch.uint8), torch.tensor([100, -100, 127, -128], dtype=torch.int8),
                  torch.tensor([2**31 - 1, -(2**31), 65536, 7], dtype=torch.int32))])
class IntegerWraparound(nn.Module):
    """uint8/int8/int32 arithmetic that overflows and wraps as torch's does, negation of the minimum, casts down."""

    def forward(self, u8, i8, i32):
        return (u8 + 10, u8 * 3, u8 - 5, i8 * 2, i8 + 100, -i8, i32 + 1, i32 * 65536, -i32, i32.to(torch.int16), i32.to(torch.uint8),
                (u8.to(torch.int8)), u8 // 7, i8.abs())


@case("corpus", [(randn(6, 4), torch.tensor([0, 2, 0, 5, 2, 1]), randn(6, 4, seed=1))])
class IndexPutTupleAccumulate(nn.Module):
    """index_put_ with a tuple of row and column tensors (duplicates, accumulate), and an in-place index_add over rows."""

    def forward(self, x, rows, src):
        y = torch.zeros(6, 4)
        y.index_put_((rows, rows % 4), src[:, 0], accumulate=True)
        z = x.clone()
        z[rows[:3], :2] = src[:3, :2]
        return y, z, torch.zeros(6, 4).index_add_(0, rows, src)


@case("corpus", [(randn(4, 6), randn(4, 6, seed=1))])
class FakeQuantize(nn.Module):
    """fake_quantize per tensor and per channel (as QAT code leaves them in a model), and a hand-written int8 round trip."""

    def forward(self, x, y):
        scale = torch.tensor([0.05, 0.1, 0.02, 0.2])
        q = torch.clamp(torch.round(y / 0.04) + 3, -128, 127)
        return (torch.fake_quantize_per_tensor_affine(x, 0.1, 0, -128, 127),
                torch.fake_quantize_per_channel_affine(x, scale, torch.zeros(4, dtype=torch.int32), 0, -128, 127),
                (q - 3) * 0.04, q.to(torch.int8))


@case("corpus", [(randn(3, 5), randn(3, 5, seed=1), randn(5, seed=2))])
class ClampThresholdForms(nn.Module):
    """clamp with tensor bounds (broadcast), hardtanh_/threshold/relu6 in place, clamp_min with an int, nn.Threshold."""

    def forward(self, x, lo, hi):
        y = x.clone()
        F.hardtanh_(y, -0.5, 0.5)
        z = x.clone()
        F.threshold(z, 0.1, -1.0, inplace=True)
        return (torch.clamp(x, min=lo, max=lo + hi.abs()), y, z, F.relu6(x * 4), x.clamp_min(0), nn.Threshold(0.2, 20.0)(x),
                torch.clip(x, max=hi))


@case("random", [(torch.zeros(4000, 5),)], check=lambda got, eager: _hard_one_hot(got))
class GumbelSoftmaxHard(nn.Module):
    def forward(self, logits):
        return F.gumbel_softmax(logits, tau=0.5, hard=True)


def _hard_one_hot(got: Any) -> None:
    g = torch.as_tensor(got)
    assert ((g == 0) | (g == 1)).all() and (g.sum(-1) == 1).all(), "not one-hot rows"
    share = g.mean(0)
    assert (share - 0.2).abs().max() < 0.04, share


@case("corpus", [(randn(4, 3, 5),)])
class VmapInsideForward(nn.Module):
    """torch.func.vmap over a per-sample function inside forward (export traces it batched)."""

    def forward(self, x):
        def per_sample(m):
            return (m @ m.T).trace() + m.max()

        return torch.func.vmap(per_sample)(x), torch.vmap(torch.dot, in_dims=(0, 0))(x[:, 0], x[:, 1])


@case("corpus", [(randn(2, 6, 4),)])
class RnnModules(nn.Module):
    """nn.GRU (bidirectional, batch_first) and nn.RNN (relu, two layers) as export traces them."""

    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(18)
        self.gru = nn.GRU(4, 5, batch_first=True, bidirectional=True)
        self.rnn = nn.RNN(4, 3, num_layers=2, nonlinearity="relu")

    def forward(self, x):
        out, h = self.gru(x)
        r, hr = self.rnn(x.transpose(0, 1))
        return out, h, r, hr


@case("corpus", [({"image": randn(2, 4), "mask": randn(2, 4, seed=1) > 0}, [randn(3, seed=2), randn(3, seed=3)])])
class PytreeInputsOutputs(nn.Module):
    """A dict and a list as inputs, a dict holding a tuple and a namedtuple-free list as the output."""

    def forward(self, batch, pair):
        x = batch["image"].masked_fill(batch["mask"], 0.0)
        return {"sum": x.sum(1), "parts": (x * 2, pair[0] + pair[1]), "more": [x.mean(), pair[1].max()]}


@case("corpus", [(randn(4, 3), randn(3, seed=1), randn(4, 5, seed=2))])
class DistributionsMath(nn.Module):
    """torch.distributions used for their formulas: Normal log_prob/entropy/cdf, a KL between Normals,
    Categorical log_prob/entropy, Bernoulli log_prob from logits, Independent over the last dim."""

    def forward(self, x, mu, logits):
        D = torch.distributions
        normal = D.Normal(mu, F.softplus(mu) + 0.1)
        categorical = D.Categorical(logits=logits)
        return (normal.log_prob(x), normal.entropy(), normal.cdf(x), D.kl_divergence(normal, D.Normal(mu * 0.5, 1.0)),
                categorical.log_prob(torch.tensor([0, 4, 2, 1])), categorical.entropy(),
                D.Bernoulli(logits=x).log_prob((x > 0).float()), D.Independent(normal, 1).log_prob(x))


@case("random", [(torch.zeros(20000),)], check=_moments(2.0, 0.25))
class DistributionRsample(nn.Module):
    def forward(self, x):
        return torch.distributions.Normal(x + 2.0, torch.full_like(x, 0.5)).rsample()


@case("corpus", [(randn(1, 2, 6, 6),)])
class MaxPoolIndicesUnpool(nn.Module):
    """max_pool2d with return_indices, max_unpool2d back, adaptive max pool with indices, adaptive 1-D average
    pooling to a size that does not divide the input."""

    def forward(self, x):
        pooled, idx = F.max_pool2d(x, 2, return_indices=True)
        amax, aidx = F.adaptive_max_pool2d(x, (4, 3), return_indices=True)
        return (F.max_unpool2d(pooled, idx, 2), idx, amax, aidx, F.adaptive_avg_pool1d(x.flatten(2), 5),
                nn.AdaptiveAvgPool2d((4, None))(x))


@case("corpus", [(randn(4, 5), torch.tensor([[0, 3], [1, 1]]), torch.tensor([0.5, 1.5, 2.5, 3.5]), randn(2, 3, seed=1))])
class DiagonalsAndTake(nn.Module):
    """diagonal with offsets and dims, diag of a vector with an offset, trace, take, tril with a negative
    diagonal, searchsorted with a sorter, diagflat."""

    def forward(self, x, idx, edges, v):
        order = torch.argsort(edges.flip(0))
        return (x.diagonal(1), x.diagonal(-1, 1, 0), torch.diag(v[0], 2), x[:4, :4].trace(), torch.take(x, idx),
                x.tril(-1), torch.searchsorted(edges.flip(0), v[0], sorter=order), torch.diagflat(v[1], -1),
                torch.diag_embed(v, offset=1, dim1=0, dim2=2))


@case("corpus", [(randn(3, 4),)])
class SpecialFunctions(nn.Module):
    """torch.special: entr, xlog1py, i0e/i1e, logit, log_ndtr, ndtr, expit, softmax and log_softmax with a dtype, sinc, round."""

    def forward(self, x):
        S = torch.special
        p = x.sigmoid()
        return (S.entr(p), S.xlog1py(x, p), S.i0e(x), S.i1e(x), S.logit(p, eps=1e-6), S.log_ndtr(x), S.ndtr(x), S.expit(x),
                S.softmax(x, 1, dtype=torch.float64), S.log_softmax(x, 0), S.sinc(x), S.round(x * 3), S.logsumexp(x, 1))


@case("corpus", [(randn(5, 8), torch.tensor([[1, 4], [0, 9]]))])
class EmbeddingMaxNorm(nn.Module):
    """nn.Embedding with max_norm (torch renormalizes the looked-up rows of the weight in place) and scale_grad_by_freq."""

    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(19)
        self.emb = nn.Embedding(10, 8, max_norm=1.0)

    def forward(self, x, ids):
        return self.emb(ids), x @ self.emb.weight[:8].T


@case("corpus", [(randn(6, 8), randn(6, 8, seed=1))])
class SpectralAndWeightNorm(nn.Module):
    """Linear layers under parametrizations: weight_norm and orthogonal-free spectral_norm (eval: the stored
    power-iteration vectors), and a parametrize.register_parametrization of a symmetric weight."""

    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(20)
        P = nn.utils.parametrizations
        self.a = P.weight_norm(nn.Linear(8, 8))
        self.b = P.spectral_norm(nn.Linear(8, 8))

        class Symmetric(nn.Module):
            def forward(self, w):
                return w.triu() + w.triu(1).T

        self.c = nn.Linear(8, 8)
        nn.utils.parametrize.register_parametrization(self.c, "weight", Symmetric())

    def forward(self, x, y):
        return self.a(x), self.b(y), self.c(x + y)


@case("corpus", [(randn(2, 3, 4, 5),)])
class EinopsStyleRearrange(nn.Module):
    """einops-style rearranges written with reshape/permute/flatten: 'b c h w -> b (h w) c', a head split
    'b n (h d) -> b h n d', and 'b (h w) c -> b c h w' back; a pixel shuffle by hand."""

    def forward(self, x):
        b, c, h, w = x.shape
        tokens = x.permute(0, 2, 3, 1).reshape(b, h * w, c)
        heads = tokens.reshape(b, h * w, 1, c).permute(0, 2, 1, 3)
        back = tokens.transpose(1, 2).reshape(b, c, h, w)
        shuffled = x[:, :2].reshape(b, 2, 1, 1, h, w).permute(0, 1, 4, 2, 5, 3).reshape(b, 2, h, w)
        return tokens, heads, back - x, shuffled


@case("corpus", [(randn(4, 6).bfloat16(), randn(6, 3, seed=1).bfloat16(), randn(4, 6, seed=2).half())])
class HalfPrecisionOps(nn.Module):
    """bf16 and fp16 arithmetic: a bf16 matmul, a cumsum and a sum in bf16, fp16 softmax, mean with a float32 dtype,
    a bf16 <-> fp16 cast and a comparison between them."""

    def forward(self, a, w, h):
        return (a @ w, a.cumsum(1), a.sum(0), h.softmax(-1), a.mean(1, dtype=torch.float32), a.half() + h, h.bfloat16() * a,
                (a > h).sum(), torch.addmm(a[:, :3], a, w, beta=0.5), F.layer_norm(h, (6,)), a.var(1))


@case("corpus", [(_ints(3, 4, low=0, high=5), randn(3, 4))])
class UniqueInverseCounts(nn.Module):
    """unique with return_inverse and counts used to gather and average per group, as a scatter-mean is written."""

    def forward(self, labels, x):
        values, inverse, counts = torch.unique(labels, return_inverse=True, return_counts=True)
        sums = torch.zeros(values.shape[0]).index_add_(0, inverse.flatten(), x.flatten())
        return values, inverse, counts, sums / counts, (sums / counts)[inverse]


# ----------------------------------------------------------------- round 13: held-out forms (general13)
def _perm_check(n: int):
    def check(got: Any, _eager: Any) -> None:
        t = torch.as_tensor(got)
        assert t.dtype == torch.int64 and torch.equal(t.sort().values, torch.arange(n)), t
        assert not torch.equal(t, torch.arange(n)), "not shuffled"
    return check


def _same_bits(got: Any, eager: Any) -> None:
    """uint64 hashes and sparse results: dtype, layout and every bit equal to eager's."""
    for g, e in zip(_flat(got), _flat(eager)):
        assert (g.dtype, g.layout, g.shape) == (e.dtype, e.layout, e.shape), (g, e)
        if e.layout != torch.strided:
            g, e = g.to_dense(), e.to_dense()
        assert torch.equal(g.view(torch.int64) if g.dtype == torch.uint64 else g,
                           e.view(torch.int64) if e.dtype == torch.uint64 else e), (g, e)


@case("complex", [(randn(2, 6, 8),), (randn(2, 6, 8, seed=1),)])
class GptjRotaryComplex(nn.Module):
    """Rotary embedding written with complex numbers over interleaved pairs, angles from an outer product."""

    def forward(self, x):
        freqs = 1.0 / (10000 ** (torch.arange(0, 8, 2).float() / 8))
        angles = torch.outer(torch.arange(x.shape[1]).float(), freqs)
        rot = torch.polar(torch.ones_like(angles), angles)
        pairs = torch.view_as_complex(x.reshape(*x.shape[:-1], -1, 2))
        return torch.view_as_real(pairs * rot).flatten(-2)


class _ComplexLinear(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(3)
        self.wr, self.wi = nn.Parameter(torch.randn(5, 3)), nn.Parameter(torch.randn(5, 3))


@case("complex", [(torch.randn(4, 5, dtype=torch.complex64, generator=_g(11)),)])
class ComplexEinsumParams(_ComplexLinear):
    """A complex input contracted by einsum with a complex weight made from two real parameters."""

    def forward(self, z):
        w = torch.complex(self.wr, self.wi)
        return torch.einsum("bi,io->bo", z, w), (z @ w).abs().sum(-1)


@case("complex", [(torch.randn(3, 6, dtype=torch.complex64, generator=_g(12)),)])
class ComplexPartsOut(nn.Module):
    """A complex input's parts, its conjugate's imaginary part and `view_as_real` of a rotation by j, returned."""

    def forward(self, z):
        return z.real * 2, z.imag, z.conj().imag, torch.view_as_real(z * 1j), z / z.abs().clamp_min(1e-3)


@case("complex", [(randn(2, 16), randn(5, seed=1))])
class FftConvolution(nn.Module):
    """A linear convolution computed by FFT: irfft(rfft(x, n) * rfft(k, n), n), n = len(x) + len(k) - 1."""

    def forward(self, x, k):
        n = x.shape[-1] + k.shape[-1] - 1
        return torch.fft.irfft(torch.fft.rfft(x, n) * torch.fft.rfft(k, n), n)


@case("complex", [(torch.randn(2, 4, 6, dtype=torch.complex64, generator=_g(13)),)])
class ComplexPowerSoftmax(nn.Module):
    """|z|^2 via z * conj(z), a softmax over it and a complex output scaled by it."""

    def forward(self, z):
        power = (z * z.conj()).real
        weights = power.softmax(-1)
        return weights, z * weights, power.sum((1, 2))


@case("numbers", [(randn(3, 4),), (randn(3, 4, seed=1) * 5,)])
class ItemPeakScale(nn.Module):
    """A peak read with .item(), the input scaled by it and the peak returned doubled."""

    def forward(self, x):
        peak = x.abs().max().item()
        return x / (peak + 1e-6), peak * 2


@case("numbers", [(randn(3), randn(3, seed=1), torch.tensor([0.5, -1.0, 2.0])),
                  (randn(3, seed=2), randn(3, seed=3), torch.tensor([1.5, 0.25, -3.0]))])
class TolistMixWeights(nn.Module):
    def forward(self, x, y, w):
        w0, w1, w2 = w.tolist()
        return x * w0 + y * w1 - w2, w0 + w1 * w2, w0 / w1


@case("numbers", [(randn(4, 5),), (randn(4, 5, seed=1),)])
class ItemCountArithmetic(nn.Module):
    """An integer count read with .item(): arithmetic on it returned, and a tensor scaled by it."""

    def forward(self, x):
        count = (x > 0).sum().item()
        return count * 2 + 1, x * count, count // 3, count % 4


@case("numbers", [(randn(6),), (randn(6, seed=1) + 3,)])
class StandardizeByItems(nn.Module):
    def forward(self, x):
        mean, std = x.mean().item(), x.std().item()
        return (x - mean) / std, mean / std, -mean


@case("numbers", [(randn(2, 3), torch.tensor([1, 4, 2])), (randn(2, 3, seed=1), torch.tensor([7, 0, 3]))])
class IntAndFloatItems(nn.Module):
    def forward(self, x, idx):
        top, total = idx.max().item(), x.sum().item()
        return top + total, top * 3, x * top, total ** 2, abs(total - top)


@case("data", [(randn(5, 3), randn(5, 3, seed=1)), (randn(5, 3, seed=2), randn(5, 3, seed=3))])
class NonzeroRowsMean(nn.Module):
    """Rows picked by a nonzero of a row test, summed, and their count returned (padded to capacity since
    round 15, the count read at run time: any count)."""

    def forward(self, x, y):
        rows = (x.sum(1) > 0).nonzero()[:, 0]
        return y[rows].sum(0), rows.numel()


@case("data", [(torch.tensor([0, 2, 2, 5, 1, 2]),), (torch.tensor([1, 1, 0, 4, 4, 4]),)])
class BincountMinlengthNormalized(nn.Module):
    def forward(self, ids):
        counts = torch.bincount(ids, minlength=7)
        return counts * 2, counts.float() / counts.sum(), counts.argmax()


@case("data", [(randn(4, 3), torch.tensor([1, 0, 2, 1])), (randn(4, 3, seed=1), torch.tensor([2, 1, 0, 1]))])
class RepeatRowsCumsum(nn.Module):
    """Rows repeated by a tensor of repeats (the example's total; another total is a run-time error)."""

    def forward(self, x, reps):
        return x.repeat_interleave(reps, dim=0).cumsum(0)


@case("data", [(randn(3, 4), randn(3, 4, seed=1)), (randn(3, 4, seed=2), randn(3, 4, seed=3))])
class MaskedAssignAndAccumulate(nn.Module):
    """Boolean-mask writes: clamp negatives to zero, add one where another tensor is large (accumulate)."""

    def forward(self, x, y):
        z = x.clone()
        z[x < 0] = 0.0
        z.index_put_((y > 0.5,), torch.tensor(1.0), accumulate=True)
        z[y < -1] *= -1
        return z


@case("data", [(_ints(8, low=0, high=4),), (_ints(8, low=0, high=4, seed=1),)])
class UniqueFrequencies(nn.Module):
    def forward(self, ids):
        values, counts = torch.unique(ids, return_counts=True)
        return values, counts.float() / ids.numel()


@case("moe", _moe_inputs())
class SwitchCapacityDense(_Experts):
    """Switch Transformer's dense dispatch: each token's position in its expert by a cumsum of one-hots,
    tokens past capacity dropped, dispatch and combine tensors by einsum."""

    def forward(self, x):
        probs = self.router(x).softmax(-1)
        gate, choice = probs.max(-1)
        onehot = F.one_hot(choice, 3)
        position = (onehot.cumsum(0) - 1) * onehot
        keep = (position < 2) & (onehot > 0)
        dispatch = F.one_hot(position.clamp(0, 1), 2) * keep.unsqueeze(-1)
        expert_in = torch.einsum("tec,td->ecd", dispatch.float(), x)
        expert_out = torch.stack([expert(expert_in[e]) for e, expert in enumerate(self.experts)])
        return torch.einsum("tec,ecd->td", dispatch.float() * gate[:, None, None], expert_out)


@case("moe", _moe_inputs())
class ExpertChoiceRouting(_Experts):
    """Experts choose their top tokens (expert-choice routing): gather, process, scatter-add back."""

    def forward(self, x):
        scores = self.router(x).softmax(-1).t()
        weight, idx = scores.topk(2, dim=-1)
        out = torch.zeros_like(x)
        for e, expert in enumerate(self.experts):
            y = expert(x[idx[e]]) * weight[e, :, None]
            out = out.index_add(0, idx[e], y)
        return out


@case("moe", _moe_inputs())
class SoftMoeSlots(_Experts):
    """Soft MoE: slots are softmax-over-tokens mixtures, outputs softmax-over-slots mixtures."""

    def forward(self, x):
        logits = self.router(x)
        slots = torch.einsum("ts,td->sd", logits.softmax(0), x)
        outs = torch.stack([expert(slots[e]) for e, expert in enumerate(self.experts)])
        return torch.einsum("ts,sd->td", logits.softmax(-1), outs)


@case("moe", _moe_inputs())
class SharedAndRoutedExpert(_Experts):
    """DeepSeek-style: a shared expert plus top-2 routed experts gated by normalized sigmoid scores."""

    def forward(self, x):
        scores = self.router(x).sigmoid()
        weight, choice = scores.topk(2, -1)
        weight = weight / weight.sum(-1, keepdim=True)
        out = self.experts[0](x)
        for e in (1, 2):
            token, slot = torch.where(choice == e)
            out = out.index_add(0, token, self.experts[e](x[token]) * weight[token, slot, None])
        return out


@case("storage", [(randn(3, 4),), (randn(3, 4, seed=1),)])
class SignBitTricks(nn.Module):
    """abs and negation through the float's bits: clear and flip the sign bit, read back as float."""

    def forward(self, x):
        bits = x.view(torch.int32)
        return (bits & 0x7FFFFFFF).view(torch.float32), (bits ^ -0x80000000).view(torch.float32), bits >> 23


@case("storage", [(randn(2, 4),)])
class Bf16BitsOfFloat(nn.Module):
    def forward(self, x):
        return x.bfloat16().view(torch.int16).to(torch.int32) & 0xFFFF, x.half().view(torch.int16)


@case("storage", [(randn(12),), (randn(12, seed=1),)])
class OverlappingWindowsMax(nn.Module):
    def forward(self, x):
        windows = x.as_strided((5, 4), (2, 1))
        return windows.amax(-1), windows.sum(0)


@case("storage", [(randn(3, 3),)])
class TransposedStorageStrided(nn.Module):
    def forward(self, x):
        y = x.t().contiguous()
        return y.as_strided((3, 3), (1, 3)), y.as_strided((2,), (4,), 0)


@case("storage", [(randn(2, 4),)])
class PairsAsFloat64Bits(nn.Module):
    """Two float32s read as one float64's bits (the wider view joins neighbours), then as int64."""

    def forward(self, x):
        return x.view(torch.int64) & 0xFFFF, x.view(torch.int64).shape[-1] * 1.0


@case("random", [(Z,)], check=_moments(0.5, 1 / 12))
class RandLikeFloat64(nn.Module):
    def forward(self, x):
        draw = torch.rand_like(x, dtype=torch.float64)
        assert draw.dtype == torch.float64
        return draw


@case("random", [(Z,)], check=_moments(1.0, 4.0))
class RandnShapeOfInput(nn.Module):
    def forward(self, x):
        return torch.randn(x.shape, dtype=x.dtype, device=x.device) * 2 + 1


@case("random", [(torch.ones(4000),)], check=_moments(1.0, 0.4 / 0.6), train=True)
class DropoutFortyTrain(nn.Module):
    def forward(self, x):
        return F.dropout(x, 0.4, training=self.training)


@case("random", [(Z,)], check=_moments(0.5, 0.25))
class ExponentialRateTwo(nn.Module):
    def forward(self, x):
        return torch.empty_like(x).exponential_(2.0)


@case("random", [(torch.full((4000,), 3.0),)], check=_moments(3.0, 4.0))
class NormalAroundTensor(nn.Module):
    def forward(self, mean):
        return torch.normal(mean, 2.0)


@case("random", [(torch.zeros(50),)], check=_perm_check(50))
class RandpermOfLength(nn.Module):
    def forward(self, x):
        return torch.randperm(x.shape[0])


_seq13 = Dim("seq", min=2, max=32)


@case("dynamic", [(randn(2, 6, 8),), (randn(2, 5, 8, seed=1),), (randn(2, 3, 8, seed=2),)],
      **_dyn([], ({1: _seq13},), {"seq": [8]}))
class PaddedSeqNormMlpPool(nn.Module):
    """LayerNorm, an MLP and a mean over seq, seq padded to the one bucket."""

    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(5)
        self.norm, self.up, self.down = nn.LayerNorm(8), nn.Linear(8, 16), nn.Linear(16, 8)

    def forward(self, x):
        return self.down(F.gelu(self.up(self.norm(x)))).mean(1)


@case("dynamic", [(randn(2, 6, 3),), (randn(2, 5, 3, seed=1),), (randn(2, 2, 3, seed=2),)],
      **_dyn([], ({1: _seq13},), {"seq": [8]}))
class PaddedRunningMaxChannelsFirst(nn.Module):
    """A running max and sum over a channels-first flattening of [batch, seq, 3] (seq laid inside)."""

    def forward(self, x):
        b = x.shape[0]
        flat = x.permute(0, 2, 1).reshape(b, -1)
        top = flat.cummax(1)
        return top.values.view(b, 3, -1).permute(0, 2, 1), top.indices.view(b, 3, -1), flat.cumsum(1).view(b, 3, -1)


@case("dynamic", [(randn(2, 6, 4), randn(2, 6, 5, seed=1).softmax(-1)),
                  (randn(2, 4, 4, seed=2), randn(2, 4, 5, seed=3).softmax(-1))],
      **_dyn([], ({1: _seq13}, {1: _seq13}), {"seq": [8]}))
class PaddedDistillationLoss(nn.Module):
    """Knowledge distillation: cross entropy against a teacher's probabilities over padded tokens."""

    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(6)
        self.head = nn.Linear(4, 5)

    def forward(self, x, teacher):
        logits = self.head(x)
        return F.cross_entropy(logits.flatten(0, 1), teacher.flatten(0, 1), label_smoothing=0.05)


@case("dynamic", [(randn(3, 10),), (randn(5, 10, seed=1),)],
      **_dyn([], ({0: Dim("batch", min=1, max=8)},), {"batch": [3, 5]}))
class BatchTopkFeatures(nn.Module):
    def forward(self, x):
        values, idx = x.topk(3, -1)
        return values.sum(-1), idx, x.sort(-1, descending=True).values[:, :2]


@case("dynamic", [(randn(2, 4, 6),), (randn(2, 4, 10, seed=1),)],
      **_dyn([], ({2: Dim("length", min=3, max=16)},), {"length": [6, 10]}))
class Conv1dOverLength(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(7)
        self.conv = nn.Conv1d(4, 4, 3, padding=1)

    def forward(self, x):
        return F.silu(self.conv(x)) + x


@case("corpus", [(randn(3, 8),)])
class GluVariants(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(8)
        self.up, self.down = nn.Linear(8, 16), nn.Linear(8, 8)

    def forward(self, x):
        a, b = self.up(x).chunk(2, -1)
        return F.glu(self.up(x), -1), self.down(F.silu(a) * b), self.down(F.gelu(a, approximate="tanh") * b)


@case("corpus", [(randn(1, 2, 4, 4),)])
class PixelUnshuffleConv(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(9)
        self.conv = nn.Conv2d(8, 4, 1)

    def forward(self, x):
        return F.pixel_shuffle(self.conv(F.pixel_unshuffle(x, 2)), 2)


@case("corpus", [(randn(2, 8, 4, 4), randn(2, 16, seed=1))])
class UnetResBlockTime(nn.Module):
    """A diffusion UNet's residual block: GroupNorm, SiLU, conv, a time embedding added per channel."""

    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(10)
        self.norm1, self.norm2 = nn.GroupNorm(4, 8), nn.GroupNorm(4, 8)
        self.conv1, self.conv2 = nn.Conv2d(8, 8, 3, padding=1), nn.Conv2d(8, 8, 3, padding=1)
        self.time = nn.Linear(16, 8)

    def forward(self, x, t):
        h = self.conv1(F.silu(self.norm1(x)))
        h = h + self.time(F.silu(t))[:, :, None, None]
        return x + self.conv2(F.silu(self.norm2(h)))


@case("corpus", [(randn(4, 6), randn(4, 6, seed=1))])
class ClipContrastiveLoss(nn.Module):
    def forward(self, image, text):
        a, b = F.normalize(image, dim=-1), F.normalize(text, dim=-1)
        logits = a @ b.t() / 0.07
        labels = torch.arange(a.shape[0])
        return (F.cross_entropy(logits, labels) + F.cross_entropy(logits.t(), labels)) / 2, F.cosine_similarity(image, text)


@case("corpus", [(randn(2, 5, 5),)])
class ClippedRelativeBias(nn.Module):
    """A relative-position bias: distances clipped to a window index an embedding, added to scores."""

    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(11)
        self.bias = nn.Embedding(7, 1)

    def forward(self, scores):
        pos = torch.arange(scores.shape[-1])
        rel = (pos[None, :] - pos[:, None]).clamp(-3, 3) + 3
        return (scores + self.bias(rel).squeeze(-1)).softmax(-1)


@case("corpus", [(randn(3, 4), _ints(5, 3))], check=_same_bits)
class HashesOfActivations(nn.Module):
    """Content hashes of activations and of integer ids (dedup keys), per row and whole."""

    def forward(self, x, ids):
        return torch.hash_tensor(x.tanh(), 1), torch.hash_tensor(ids), torch.hash_tensor(x.half(), [0], keepdim=True)


@case("corpus", [(randn(4, 6),)], check=_same_bits)
class SparseTopActivations(nn.Module):
    """Keep each row's top 2 activations and return them as sparse COO and CSR results."""

    def forward(self, x):
        top = x.topk(2, -1)
        kept = torch.zeros_like(x).scatter(1, top.indices, top.values)
        return kept.to_sparse(), kept.to_sparse_csr(), kept.sum(0)


# ----------------------------------------------------------------- round 14: held-out forms (general14)
@case("complex", [(randn(2, 3, 8, 8),), (randn(2, 3, 8, 8, seed=1),)])
class FourierNeuralOperatorLayer(nn.Module):
    """An FNO spectral layer: rfft2, the lowest modes mixed by a complex64 parameter, irfft2 back."""

    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(14)
        self.weight = nn.Parameter(torch.randn(3, 3, 4, 3, dtype=torch.complex64) / 9)

    def forward(self, x):
        spectrum = torch.fft.rfft2(x)
        mixed = torch.zeros_like(spectrum)
        mixed[:, :, :4, :3] = torch.einsum("bixy,ioxy->boxy", spectrum[:, :, :4, :3], self.weight)
        return torch.fft.irfft2(mixed, s=x.shape[-2:]) + x


@case("complex", [(torch.randn(3, 5, dtype=torch.complex64, generator=_g(140)),)])
class ComplexNormsByOrder(nn.Module):
    """Norms of a complex input at several orders, and its Frobenius norm."""

    def forward(self, z):
        return (torch.linalg.vector_norm(z, ord=3, dim=-1), torch.linalg.vector_norm(z, ord=float("inf"), dim=0),
                torch.linalg.norm(z), z.norm(p=1, dim=1))


@case("complex", [(torch.randn(2, 3, dtype=torch.complex64, generator=_g(141)), torch.arange(6).reshape(2, 3))])
class ComplexCatInteger(nn.Module):
    """A complex input concatenated with an integer tensor (promoted to complex), then scaled."""

    def forward(self, z, n):
        return torch.cat([z, n], 0) * (0.5 - 1j), torch.stack([z.real, n.float()], -1)


@case("complex", [(randn(2, 64),), (randn(2, 64, seed=1),)])
class StftPowerDb(nn.Module):
    """A log power spectrogram: stft with a hann window, |X|^2 in decibels, returned with the complex frames."""

    def forward(self, x):
        spec = torch.stft(x, n_fft=16, hop_length=4, window=torch.hann_window(16), return_complex=True)
        return 10 * torch.log10(spec.abs().pow(2).clamp_min(1e-10)), spec[:, :3]


@case("numbers", [(randn(4, 5),), (randn(4, 5, seed=1) * 3,)])
class ThresholdFraction(nn.Module):
    """The mean read as a number, the share of values above it, and numbers made from it returned."""

    def forward(self, x):
        threshold = x.mean().item()
        above = (x > threshold).sum().item()
        return (x > threshold).float().mean(), above / x.numel(), threshold * 2 + 1, x - threshold


@case("numbers", [(torch.tensor([7, 3, 12]), randn(3, 4)), (torch.tensor([10, 4, 2]), randn(3, 4, seed=1))])
class IntegerDivisionNumbers(nn.Module):
    """Integer reads combined by floor division, modulo and max, returned and used as tensor scalars."""

    def forward(self, n, x):
        a, b, c = n.tolist()
        q, r = (a + c) // b, (a * c) % b
        return q, r, x * q + r, max(a, b) - min(b, c), x * max(a, c), a > c


@case("numbers", [(randn(6),), (randn(6, seed=1),)])
class NormalizeByItemStats(nn.Module):
    """Standardize by a min and a range read as numbers (torch.export specializes neither)."""

    def forward(self, x):
        low, high = x.min().item(), x.max().item()
        return (x - low) / (high - low), high - low


@case("dynamic", [(randn(3, 4),), (randn(3, 4, seed=1),)])
class MaskedSelectStatistics(nn.Module):
    """The positive values picked by masked_select, reduced: a mean, a max and their count."""

    def forward(self, x):
        picked = x.masked_select(x > 0)
        return picked.mean(), picked.amax(), picked.numel()


@case("dynamic", [(randn(4, 5),), (randn(4, 5, seed=1),)])
class ArgwhereScatterBack(nn.Module):
    """Positions of values above 0.5 by argwhere; their square roots written back into zeros (padded to the
    bound torch.export records, 20: any count; the count returned is read at run time)."""

    def forward(self, x):
        where = torch.argwhere(x > 0.5)
        out = torch.zeros_like(x)
        out[where[:, 0], where[:, 1]] = x[where[:, 0], where[:, 1]].sqrt()
        return out, where.shape[0]


@case("dynamic", [(torch.tensor([0, 2, 2, 5, 1]), randn(5)), (torch.tensor([3, 3, 0, 1, 0]), randn(5, seed=1))])
class WeightedBincount(nn.Module):
    """bincount with weights and a minlength: weighted counts per bin."""

    def forward(self, n, w):
        return torch.bincount(n, weights=w, minlength=7), torch.bincount(n, minlength=7).float() / n.numel()


@case("dynamic", [(randn(2, 8), torch.tensor([5, 3])), (randn(2, 8, seed=1), torch.tensor([5, 3]))])
class SplitByLengthsTolist(nn.Module):
    """Sequences packed end to end split by lengths read with tolist, each pooled, stacked."""

    def forward(self, x, lengths):
        a, b = lengths.tolist()
        parts = x.flatten().split([a, b, 16 - a - b])
        return torch.stack([p.mean() for p in parts[:2]]), parts[0].cumsum(0)


@case("moe", [(randn(6, 8),), (randn(6, 8, seed=1),)])
class TopTwoIndexAddCombine(nn.Module):
    """Top-2 routing, experts run on every token (dense), combined by index_add of the routed rows."""

    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(15)
        self.gate = nn.Linear(8, 4, bias=False)
        self.experts = nn.Parameter(torch.randn(4, 8, 8) / 3)

    def forward(self, x):
        weights, chosen = self.gate(x).softmax(-1).topk(2, dim=-1)
        weights = weights / weights.sum(-1, keepdim=True)
        out = torch.zeros_like(x)
        for k in range(2):
            expert_out = torch.einsum("td,tde->te", x, self.experts[chosen[:, k]])
            out = out.index_add(0, torch.arange(x.shape[0]), expert_out * weights[:, k:k + 1])
        return out


@case("moe", [(randn(8, 8),), (randn(8, 8, seed=1),)])
class CapacityDroppedTokens(nn.Module):
    """Top-1 routing with a capacity of 3 tokens an expert: a token's place in its expert's queue by cumsum,
    tokens past capacity pass through unchanged (Switch's dropping, written with one_hot and a mask)."""

    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(16)
        self.gate = nn.Linear(8, 3, bias=False)
        self.experts = nn.ModuleList(nn.Linear(8, 8) for _ in range(3))

    def forward(self, x):
        probs = self.gate(x).softmax(-1)
        top, expert = probs.max(-1)
        onehot = F.one_hot(expert, 3)
        place = (onehot.cumsum(0) * onehot).sum(-1) - 1
        kept = place < 3
        outs = torch.stack([e(x) for e in self.experts], 1).gather(1, expert[:, None, None].expand(-1, 1, 8))[:, 0]
        return torch.where(kept[:, None], outs * top[:, None], x), kept.sum()


@case("storage", [(randn(3, 4),), (torch.tensor([[0.0, -0.0, 1.5, -2.0]] * 3),)])
class SignbitFromBits(nn.Module):
    """The sign bit read from the int32 bits and by signbit (negative zero counts), copysign from it."""

    def forward(self, x):
        bits = x.view(torch.int32)
        return ((bits < 0), torch.signbit(x), torch.copysign(torch.ones_like(x), x),
                (bits & 0x7FFFFFFF).view(torch.float32))


@case("storage", [(randn(4, 6),)])
class StridedWindowsWithOffset(nn.Module):
    """Overlapping windows of a row slice by as_strided with a storage offset, and a transposed contiguous flat."""

    def forward(self, x):
        rows = x[1:].contiguous()
        windows = torch.as_strided(rows, (3, 3, 2), (6, 2, 1), storage_offset=1)
        return windows.sum(-1), x.T.contiguous().view(-1)[:7]


@case("storage", [(torch.randint(-300, 300, (3, 4), generator=_g(142)).to(torch.int16),)])
class Int16BitsAsHalf(nn.Module):
    """int16 bit patterns read as float16 and as bfloat16, then widened."""

    def forward(self, n):
        return n.view(torch.float16).float(), n.view(torch.bfloat16).float()


@case("semantics", [(randn(3, 4) * 100,)])
class FrexpLdexpRoundTrip(nn.Module):
    """frexp's mantissa and exponent, ldexp back, and nextafter toward zero."""

    def forward(self, x):
        mantissa, exponent = torch.frexp(x)
        return mantissa, exponent, torch.ldexp(mantissa, exponent) - x, torch.nextafter(x, torch.zeros_like(x))


@case("semantics", [(randn(4, 6),), (randn(4, 6, seed=1),)])
class SpecialFunctionsAndMargins(nn.Module):
    """torch.special functions (erfinv of a squashed input, xlog1py, i1e), a multi-margin and a hinge loss."""

    def forward(self, x):
        y = torch.tanh(x) * 0.9
        target = torch.tensor([0, 5, 2, 3])
        return (torch.special.erfinv(y), torch.special.xlog1py(x, y.abs()), torch.special.i1e(x),
                F.multi_margin_loss(x, target, p=2, margin=0.5), F.hinge_embedding_loss(x, torch.sign(y)))


@case("semantics", [(torch.tensor([1, 5, 2, 8, 3]), torch.tensor([2, 3, 9])),
                    (torch.tensor([9, 9, 5, 0, 2]), torch.tensor([0, 1, 5]))])
class IsinMembership(nn.Module):
    def forward(self, a, b):
        return (torch.isin(a, b), torch.isin(a, b, invert=True), torch.isin(a, 5),
                torch.where(torch.isin(a, b), a, -a).cumsum(0))


@case("semantics", [(randn(3, 4), randn(3, 4, seed=1))])
class PolarAngles(nn.Module):
    """atan2 angles wrapped to [0, 2pi) with remainder, hypot radii."""

    def forward(self, y, x):
        angle = torch.remainder(torch.atan2(y, x), 2 * math.pi)
        return angle, torch.hypot(x, y), torch.atan2(y, torch.zeros_like(x))


@case("semantics", [(randn(2, 5, 4, 4), torch.randint(0, 5, (2, 4, 4), generator=_g(143)))])
class SpatialNllWithIgnore(nn.Module):
    """A segmentation loss: cross entropy over spatial targets with an ignored class and class weights."""

    def forward(self, logits, target):
        w = torch.linspace(0.5, 1.5, 5)
        return (F.cross_entropy(logits, target, weight=w, ignore_index=2),
                F.nll_loss(logits.log_softmax(1), target, reduction="none"))


@case("semantics", [(randn(3, 4), randn(3, 4, seed=1).abs() + 0.1)])
class VecdotPowersEntropy(nn.Module):
    """vecdot, a matrix power, torch.special.entr and a log-ndtr tail."""

    def forward(self, mean, var):
        return (torch.linalg.vecdot(mean, var), torch.linalg.matrix_power(mean[:, :3] / 3, 3),
                torch.special.entr(var), torch.special.log_ndtr(mean * 4))


@case("corpus", [(randn(2, 4, 6, 8),), (randn(2, 4, 6, 8, seed=1),)])
class AlibiAttention(nn.Module):
    """Attention with ALiBi biases: head slopes 2^(-8h/H) times the negative distance, causal."""

    def forward(self, q):
        heads, seq = q.shape[1], q.shape[2]
        slopes = 2.0 ** (-8.0 * torch.arange(1, heads + 1) / heads)
        distance = torch.arange(seq)[None, :] - torch.arange(seq)[:, None]
        bias = slopes[:, None, None] * distance.clamp(max=0)
        bias = bias.masked_fill(distance > 0, float("-inf"))
        return F.scaled_dot_product_attention(q, q, q, attn_mask=bias)


@case("corpus", [(randn(2, 3, 8),), (randn(2, 3, 8, seed=1),)])
class StateSpaceScan(nn.Module):
    """A diagonal linear recurrence h_t = a * h_{t-1} + b x_t unrolled over time (S4D-style), read out by c."""

    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(17)
        self.log_a = nn.Parameter(-torch.rand(3, 4))
        self.b, self.c = nn.Parameter(torch.randn(3, 4)), nn.Parameter(torch.randn(3, 4))

    def forward(self, x):
        a = self.log_a.exp()
        h = torch.zeros(x.shape[0], 3, 4)
        outs = []
        for t in range(x.shape[-1]):
            h = a * h + self.b * x[..., t:t + 1]
            outs.append((h * self.c).sum(-1))
        return torch.stack(outs, -1)


@case("corpus", [(randn(2, 8, 16),), (randn(2, 8, 16, seed=1),)])
class TokenShiftMix(nn.Module):
    """RWKV's token shift: each position mixed with the previous one by learned ratios (ZeroPad2d on time)."""

    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(18)
        self.mix = nn.Parameter(torch.rand(16))
        self.shift = nn.ZeroPad2d((0, 0, 1, -1))

    def forward(self, x):
        previous = self.shift(x)
        return x * self.mix + previous * (1 - self.mix)


@case("corpus", [(randn(1, 2, 6, 6),), (randn(1, 2, 6, 6, seed=1),)])
class DeformableOffsetsGrid(nn.Module):
    """Offsets predicted by a conv shift a sampling grid (deformable sampling with grid_sample, border padding)."""

    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(19)
        self.offset = nn.Conv2d(2, 2, 3, padding=1)

    def forward(self, x):
        ys, xs = torch.meshgrid(torch.linspace(-1, 1, 6), torch.linspace(-1, 1, 6), indexing="ij")
        grid = torch.stack([xs, ys], -1)[None] + 0.1 * self.offset(x).permute(0, 2, 3, 1).tanh()
        return F.grid_sample(x, grid, mode="bilinear", padding_mode="border", align_corners=True)


@case("corpus", [(randn(3, 10),), (randn(3, 10, seed=1),)])
class SparsemaxActivation(nn.Module):
    """Sparsemax: sort, cumulative sums, the support size by a comparison, the threshold by gather."""

    def forward(self, z):
        s, _ = z.sort(-1, descending=True)
        k = torch.arange(1, z.shape[-1] + 1, dtype=z.dtype)
        support = (1 + k * s) > s.cumsum(-1)
        size = support.sum(-1, keepdim=True)
        tau = (s.cumsum(-1).gather(-1, size - 1) - 1) / size
        return (z - tau).clamp(min=0)


def _cauchy_quartiles(got: Any, eager: Any) -> None:
    """Cauchy(0, 2) is heavy tailed: its quartiles (-2, 0, 2) are checked, not its moments."""
    t = torch.as_tensor(got).double()
    q = torch.quantile(t, torch.tensor([0.25, 0.5, 0.75], dtype=torch.float64))
    assert abs(q[0] + 2) < 0.3 and abs(q[1]) < 0.2 and abs(q[2] - 2) < 0.3, q


@case("random", [(torch.zeros(4000),)], check=_cauchy_quartiles)
class CauchyNoise(nn.Module):
    def forward(self, x):
        return x.clone().cauchy_(0.0, 2.0)


@case("random", [(torch.full((4000,), 0.25),)], check=_moments(0.25, 0.1875))
class BernoulliOfTensor(nn.Module):
    """bernoulli with per-element probabilities from the input."""

    def forward(self, p):
        return torch.bernoulli(p)


def _random_range(got: Any, eager: Any) -> None:
    t = torch.as_tensor(got)
    assert t.dtype == eager.dtype == torch.int64 and int(t.min()) == 3 and int(t.max()) == 9, (t.min(), t.max())
    counts = torch.bincount(t - 3, minlength=7).double() / t.numel()
    assert (counts - 1 / 7).abs().max() < 0.02, counts


@case("random", [(torch.zeros(7000, dtype=torch.int64),)], check=_random_range)
class RandintLikeRange(nn.Module):
    """randint_like(n, 3, 10) of an integer tensor: uniform over 3..9."""

    def forward(self, n):
        return torch.randint_like(n, 3, 10)


@case("random", [(torch.zeros(4000),)], check=_moments(2.0, 0.25))
class NormalTensorMeanStd(nn.Module):
    """torch.normal with tensor mean and std."""

    def forward(self, x):
        return torch.normal(x + 2.0, torch.full_like(x, 0.5))


@case("dynamic", [(randn(2, 6, 8),), (randn(2, 11, 8, seed=1),)],
      **_dyn([], ({1: Dim("seq", min=2, max=16)},), {"seq": [6, 11]}))
class DynamicAlibiCausal(nn.Module):
    """ALiBi-biased causal attention over a dynamic sequence length (bias built from arange of the length)."""

    def forward(self, x):
        seq = x.shape[1]
        distance = (torch.arange(seq)[None, :] - torch.arange(seq)[:, None]).float()
        bias = (0.5 * distance).masked_fill(distance > 0, float("-inf"))
        return F.scaled_dot_product_attention(x, x, x, attn_mask=bias)


@case("dynamic", [(torch.tensor([[1, 1, 1, 0], [1, 1, 0, 0]]), randn(2, 4, 8)),
                  (torch.tensor([[1, 1, 1, 1, 1, 0], [1, 0, 0, 0, 0, 0]]), randn(2, 6, 8, seed=1))],
      **_dyn([], ({1: Dim("seq", min=2, max=16)}, {1: Dim("seq", min=2, max=16)}), {"seq": [4, 6]}))
class PositionsFromPaddingMask(nn.Module):
    """Position ids from a padding mask by cumsum (left-aligned batches), embedded, masked mean-pooled."""

    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(20)
        self.pos = nn.Embedding(16, 8)

    def forward(self, mask, h):
        positions = (mask.cumsum(-1) - 1).clamp(min=0)
        h = h + self.pos(positions) * mask[..., None]
        return (h * mask[..., None]).sum(1) / mask.sum(1, keepdim=True)


# ----------------------------------------------------------------- round 15: held-out forms (general15)
def _c64(*shape: int, seed: int) -> torch.Tensor:
    return torch.randn(*shape, dtype=torch.complex64, generator=_g(seed))


@case("complex", [(randn(3, 6),), (randn(3, 6, seed=1),)])
class ComplexLinearOfRealInput(nn.Module):
    """A real input lifted to complex, a complex64 weight applied by matmul, magnitude and phase out."""

    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(150)
        self.weight = nn.Parameter(torch.randn(6, 4, dtype=torch.complex64) / 3)

    def forward(self, x):
        z = torch.complex(x, torch.roll(x, 1, -1)) @ self.weight
        return z.abs(), z.angle(), z


@case("complex", [(_c64(2, 5, seed=151),), (_c64(2, 5, seed=152),)])
class PolarOfAbsAngle(nn.Module):
    """A complex input rebuilt from its magnitude and phase by torch.polar, the phase doubled."""

    def forward(self, z):
        return torch.polar(z.abs(), z.angle()) - z, torch.polar(z.abs().sqrt(), 2 * z.angle())


@case("complex", [(randn(2, 4, 6),), (randn(2, 4, 6, seed=1),)])
class FftnIfftnFilter(nn.Module):
    """fftn over the last two dims, a real low-pass mask, ifftn back: the real part and the residual imaginary part."""

    def forward(self, x):
        spectrum = torch.fft.fftn(x, dim=(-2, -1))
        mask = (torch.fft.fftfreq(4).abs()[:, None] < 0.3) & (torch.fft.fftfreq(6).abs()[None, :] < 0.3)
        back = torch.fft.ifftn(spectrum * mask, dim=(-2, -1))
        return back.real, back.imag.abs().amax()


@case("complex", [(_c64(3, 4, seed=153),)])
class ComplexElementwiseFunctions(nn.Module):
    """exp, log, sqrt, reciprocal and tanh of a complex input."""

    def forward(self, z):
        return torch.exp(z), torch.log(z), torch.sqrt(z), z.reciprocal(), torch.tanh(z * 0.3)


@case("complex", [(torch.randn(2, 3, 4, dtype=torch.complex128, generator=_g(154)),
                   torch.randn(2, 4, 2, dtype=torch.complex128, generator=_g(155)))])
class Complex128Bmm(nn.Module):
    def forward(self, a, b):
        return torch.bmm(a, b), torch.bmm(a, b).conj().transpose(1, 2)


@case("complex", [(randn(2, 8),), (randn(2, 8, seed=1),)])
class RfftAsRealFeatures(nn.Module):
    """rfft's bins as real pairs (view_as_real) flattened into a linear layer's features."""

    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(156)
        self.proj = nn.Linear(10, 3)

    def forward(self, x):
        return self.proj(torch.view_as_real(torch.fft.rfft(x)).flatten(-2))


@case("complex", [(_c64(4, 3, seed=157), _c64(4, 3, seed=158))])
class ComplexInnerProducts(nn.Module):
    """vdot, vecdot (conjugating its first argument) and a Hermitian Gram matrix of complex inputs."""

    def forward(self, a, b):
        return torch.vdot(a[0], b[0]), torch.linalg.vecdot(a, b), a.mH @ a


@case("numbers", [(torch.tensor([9.0, 2.0]), randn(3)), (torch.tensor([16.0, 5.0]), randn(3, seed=1))])
class SymFloatMath(nn.Module):
    """Numbers read with tolist combined by a float power, a square over a float, and sym_float of a size
    (math.sqrt of a read is torch.export's own refusal: a guard on its sign)."""

    def forward(self, v, x):
        a, b = v.tolist()
        root = a ** 0.5
        return root + b, x * root, b * b / 2.0, torch.sym_float(x.shape[0]) / (root + 1.0)


@case("numbers", [(torch.tensor([4, 3]), randn(2, 3)), (torch.tensor([6, 1]), randn(2, 3, seed=1))])
class IntNumbersToTensor(nn.Module):
    """Integers read with item made into tensors by torch.tensor and full, and returned as numbers."""

    def forward(self, n, x):
        a, b = n[0].item(), n[1].item()
        return torch.tensor(a * b, dtype=torch.float32) + x, torch.full((2,), a - b), a * b + x.shape[1], -a


@case("numbers", [(randn(5),), (randn(5, seed=3) + 2,)])
class ItemFromBoolAndArgmax(nn.Module):
    """A comparison's truth and an argmax read with item, returned as numbers and used as scales."""

    def forward(self, x):
        positive = (x.sum() > 0).item()
        where = x.argmax().item()
        return positive, where, x * where, x * positive


@case("data", [(randn(6, 4),), (randn(6, 4, seed=1),)])
class NonzeroRowsLinearScatter(nn.Module):
    """Rows whose mean is positive found by nonzero, gathered, passed through a linear layer and index_add-ed back."""

    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(159)
        self.lin = nn.Linear(4, 4)

    def forward(self, x):
        rows = (x.mean(-1) > 0).nonzero()[:, 0]
        return x.index_add(0, rows, self.lin(x.index_select(0, rows)))


@case("data", [(torch.tensor([1, 1, 2, 2, 2, 0, 1, 1]),), (torch.tensor([3, 3, 3, 3, 1, 1, 0, 2]),)])
class UniqueConsecutiveRuns(nn.Module):
    """Run lengths by unique_consecutive with counts, the longest run and the mean value weighted by length."""

    def forward(self, c):
        values, counts = torch.unique_consecutive(c, return_counts=True)
        return counts.max(), (values * counts).sum() / counts.sum()


@case("data", [(randn(3, 5),), (randn(3, 5, seed=1),)],
      refuses={1: "'masked_select': the mask selects another number of elements than the 9 compiled for"})
class MaskedSelectSoftmax(nn.Module):
    """A softmax over the values masked_select picks, reduced to a peak and an entropy."""

    def forward(self, x):
        p = x.masked_select(x.abs() < 1).softmax(0)
        return p.max(), -(p * p.log()).sum()


@case("data", [(torch.tensor([2, 0, 3, 1]), randn(4)), (torch.tensor([1, 2, 0, 3]), randn(4, seed=1)),
               (torch.tensor([1, 1, 1, 1]), randn(4, seed=2))],
      refuses={2: "'repeat_interleave': the repeats sum to another length than the 6 compiled for"})
class RepeatInterleaveIndices(nn.Module):
    """repeat_interleave of counts alone (the segment id of each position), a segment sum by index_add."""

    def forward(self, counts, w):
        segment = torch.repeat_interleave(counts)
        return torch.zeros(4).index_add(0, segment, w[segment]), segment.numel()


@case("data", [(randn(4, 6),), (randn(4, 6, seed=1),)])
class CountNonzeroAsNumber(nn.Module):
    """count_nonzero of a mask read as a number and used to normalize."""

    def forward(self, x):
        n = torch.count_nonzero(x > 0).item()
        return x.clamp(min=0).sum() / max(n, 1), n


@case("moe", _moe_inputs())
class CountedSortSplit(_Experts):
    """Tokens sorted by expert, split by sizes counted with index_add, each chunk through its expert, unsorted
    by scatter (sizes from bincount(minlength).tolist() are torch.export's own refusal: its length is data)."""

    def forward(self, x):
        choice = self.router(x).argmax(-1)
        order = choice.argsort(stable=True)
        sizes = torch.zeros(3, dtype=torch.long).index_add(0, choice, torch.ones_like(choice)).tolist()
        y = torch.cat([e(c) for e, c in zip(self.experts, x[order].split(sizes))])
        return torch.zeros_like(y).scatter(0, order[:, None].expand_as(y), y)


@case("moe", _moe_inputs())
class MixtralExpertMaskLoop(_Experts):
    """Mixtral's dispatch: a one-hot expert mask permuted, torch.where per expert, index_add_ of weighted outputs."""

    def forward(self, x):
        weights, chosen = self.router(x).softmax(-1).topk(2, dim=-1)
        weights = weights / weights.sum(-1, keepdim=True)
        mask = F.one_hot(chosen, 3).permute(2, 1, 0)
        out = torch.zeros_like(x)
        for e, expert in enumerate(self.experts):
            slot, token = torch.where(mask[e])
            out.index_add_(0, token, expert(x[token]) * weights[token, slot, None])
        return out


@case("moe", _moe_inputs())
class GatheredExpertWeights(nn.Module):
    """Top-2 experts as gathered weight matrices (bmm per token), combined by scatter_add over the slot dim."""

    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(160)
        self.router = nn.Linear(4, 3)
        self.w = nn.Parameter(torch.randn(3, 4, 4) / 2)

    def forward(self, x):
        weights, chosen = self.router(x).softmax(-1).topk(2, dim=-1)
        y = torch.bmm(x[:, None, :].expand(-1, 2, -1).reshape(-1, 1, 4), self.w[chosen.flatten()]).view(-1, 2, 4)
        return (y * weights[..., None]).sum(1), torch.zeros(x.shape[0], 3).scatter_add(1, chosen, weights)


@case("storage", [(randn(1, 2, 6, 6),), (randn(1, 2, 6, 6, seed=1),)])
class UnfoldTwoDimsPatches(nn.Module):
    """Image patches by two unfolds (height then width), averaged, and their overlapping 3x3 maxima."""

    def forward(self, x):
        patches = x.unfold(2, 3, 3).unfold(3, 3, 3)
        windows = x.unfold(2, 3, 1).unfold(3, 3, 1)
        return patches.mean((-2, -1)), windows.amax((-2, -1))


@case("storage", [(randn(3, 8),)])
class AsStridedOverlapRows(nn.Module):
    """Overlapping 2-row windows of a matrix by as_strided (stride one row), a weighted sum over the window."""

    def forward(self, x):
        windows = torch.as_strided(x, (2, 2, 8), (8, 8, 1))
        return (windows * torch.tensor([0.25, 0.75])[None, :, None]).sum(1)


@case("storage", [(torch.randint(-60, 60, (3, 8), generator=_g(161)).to(torch.int8),)])
class Int8PairsAsHalf(nn.Module):
    """int8 bytes read in pairs as float16 and bfloat16 (a wider element), and a float16 read back as bytes."""

    def forward(self, n):
        half = n.view(torch.float16)
        return half.float().nan_to_num(0.0), n.view(torch.bfloat16).float().nan_to_num(0.0), half.view(torch.int8)


@case("storage", [(randn(2, 6, dtype=torch.bfloat16),)])
class Bf16BitsAsHalf(nn.Module):
    """bfloat16 bits reread as float16 (same size, other format), the sign flipped by an int16 xor."""

    def forward(self, x):
        return x.view(torch.float16).float().nan_to_num(0.0), (x.view(torch.int16) ^ -32768).view(torch.bfloat16)


@case("storage", [(randn(2, 3),)])
class Float32ByteSwap(nn.Module):
    """Each float32's bytes reversed by a uint8 view and a flip, read back as int32 bits."""

    def forward(self, x):
        return x.view(torch.uint8).view(2, 3, 4).flip(-1).reshape(2, 12).view(torch.int32)


def _ks_normal(got: Any, eager: Any) -> None:
    """A Kolmogorov-Smirnov test against N(0, 1): the statistic under 1.95/sqrt(n) (p about 1e-3 per run)."""
    t = torch.as_tensor(got).double().flatten().sort().values
    n = t.numel()
    cdf = 0.5 * (1 + torch.erf(t / math.sqrt(2)))
    d = torch.maximum(torch.arange(1, n + 1) / n - cdf, cdf - torch.arange(n) / n).max().item()
    assert d < 1.95 / math.sqrt(n) and t.dtype == torch.float64, d


@case("random", [(torch.zeros(5000, dtype=torch.float64),)], check=_ks_normal)
class RandnFloat64Ks(nn.Module):
    """randn_like of a float64 input, tested against the normal distribution."""

    def forward(self, x):
        return torch.randn_like(x)


def _alpha_kept(got: Any, eager: Any) -> None:
    """feature_alpha_dropout of ones: each (sample, channel) holds one value over its 4 positions, the
    kept value (the largest) in a share of 0.7 of them (n = 1000: 5 sigma is 0.072)."""
    g = torch.as_tensor(got)
    assert g.shape == eager.shape and (g == g[..., :1]).all(), "a channel holds more than one value"
    kept = (g[..., 0] == g.max()).double().mean().item()
    assert len(g.unique()) == 2 and abs(kept - 0.7) < 0.072, (g.unique(), kept)


@case("random", [(torch.ones(200, 5, 4),)], check=_alpha_kept, train=True)
class FeatureAlphaDropoutTrain(nn.Module):
    """F.feature_alpha_dropout with training=self.training (an nn.FeatureAlphaDropout left in training
    mode is refused by design: a model compiled for inference)."""

    def forward(self, x):
        return F.feature_alpha_dropout(x, 0.3, training=self.training)


def _rrelu_slopes(got: Any, eager: Any) -> None:
    """RReLU in training: negative inputs (-1) scaled by U(0.1, 0.3) slopes, positive inputs kept."""
    g = torch.as_tensor(got).double()
    assert torch.equal(g[1], torch.ones_like(g[1])), "positive inputs changed"
    slopes = -g[0]
    assert slopes.min() >= 0.1 and slopes.max() <= 0.3, (slopes.min(), slopes.max())
    assert abs(slopes.mean() - 0.2) < 0.005 and abs(slopes.var() - 0.04 / 12) < 0.0005, (slopes.mean(), slopes.var())


@case("random", [(torch.stack([-torch.ones(5000), torch.ones(5000)]),)], check=_rrelu_slopes, train=True)
class RreluFunctionalTrain(nn.Module):
    def forward(self, x):
        return F.rrelu(x, 0.1, 0.3, training=self.training)


@case("dynamic", [(randn(2, 4, 8),), (randn(3, 7, 8, seed=1),), (randn(3, 4, 8, seed=2),)],
      **_dyn([], ({0: Dim("batch", min=2, max=4), 1: Dim("seq", min=2, max=16)},), {"batch": [2, 3], "seq": [4, 7]}))
class FlattenTokensAndBack(nn.Module):
    """Batch and sequence flattened into tokens for a linear layer, unflattened, pooled over seq."""

    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(162)
        self.lin = nn.Linear(8, 8)

    def forward(self, x):
        b, s, d = x.shape
        return self.lin(x.reshape(b * s, d)).view(b, s, d).amax(1)


@case("dynamic", [(randn(2, 5, 4), torch.ones(2, 5)), (randn(2, 9, 4, seed=1), torch.ones(2, 9))],
      **_dyn([], ({1: Dim("seq", min=2, max=16)}, {1: Dim("seq", min=2, max=16)}), {"seq": [5, 9]}))
class RankTwoMaskRankThreeValues(nn.Module):
    """A [b, s] mask and [b, s, d] values sharing the seq dim: masked sums and the last position's values."""

    def forward(self, x, m):
        return (x * m[..., None]).sum(1) / m.sum(1, keepdim=True), x[:, -1], x.shape[1] * 2


@case("dynamic", [(randn(2, 3, 11),), (randn(2, 3, 20, seed=1),)],
      **_dyn([], ({2: Dim("length", min=6, max=32)},), {"length": [11, 20]}))
class StridedConvOverLength(nn.Module):
    """A stride-2 conv1d over a dynamic length (out length (L-3)//2+1), then a transposed conv back up."""

    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(163)
        self.down = nn.Conv1d(3, 4, 3, stride=2)
        self.up = nn.ConvTranspose1d(4, 3, 3, stride=2)

    def forward(self, x):
        return self.up(self.down(x).relu())


@case("dynamic", [(randn(1, 2, 6, 8),), (randn(1, 2, 10, 8, seed=1),)],
      **_dyn([], ({2: 2 * Dim("half", min=2, max=8)},), {"half": [3, 5]}))
class DynamicHeightPooling(nn.Module):
    """An image whose height is dynamic (twice a Dim: torch.export refuses a plain Dim, whose odd values
    max_pool2d would floor): max-pooled by 2, flattened over (height, width), a softmax over positions."""

    def forward(self, x):
        y = F.max_pool2d(x, 2)
        return y.flatten(2).softmax(-1), y.mean((2, 3))


# ----------------------------------------------------------------- round 16: held-out forms (general16)
def _c128(*shape: int, seed: int) -> torch.Tensor:
    return torch.randn(*shape, dtype=torch.complex128, generator=_g(seed))


@case("complex", [(_c64(3, 4, seed=160), _c128(3, 4, seed=161)), (_c64(3, 4, seed=162), _c128(3, 4, seed=163))])
class MixedPrecisionComplexEdge(nn.Module):
    """A complex64 and a complex128 input combined (promoted to complex128), each returned in its own dtype."""

    def forward(self, z, w):
        return z * w.conj(), (z * 2j).to(torch.complex64), w.real.float()


@case("complex", [(randn(2, 5),), (randn(2, 5, seed=1),)])
class ViewAsRealOfComplexOutput(nn.Module):
    """A complex product returned as view_as_real pairs and as the complex value itself."""

    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(164)
        self.phase = nn.Parameter(torch.randn(5))

    def forward(self, x):
        z = x * torch.exp(1j * self.phase)
        return torch.view_as_real(z), z


@case("complex", [(_c64(4, 6, seed=165),), (_c64(4, 6, seed=166),)])
class ComplexNormVariants(nn.Module):
    """linalg.norm over a dim, torch.norm(p=2, dim) (norm.ScalarOpt_dim), an inf-norm and a 1-norm of complex."""

    def forward(self, z):
        return (torch.linalg.norm(z, dim=-1), torch.norm(z, p=2, dim=0), torch.linalg.vector_norm(z, ord=float("inf")),
                torch.linalg.vector_norm(z, ord=1, dim=(0, 1)))


@case("complex", [(randn(2, 6, 8),), (randn(2, 6, 8, seed=1),)])
class Rfft2ReturnedAndFiltered(nn.Module):
    """rfft2 returned as a complex output, and irfft2 of its low-passed half spectrum back to the input's size."""

    def forward(self, x):
        spectrum = torch.fft.rfft2(x)
        keep = torch.fft.rfftfreq(8).abs()[None, :] < 0.3
        return spectrum, torch.fft.irfft2(spectrum * keep, s=x.shape[-2:])


@case("complex", [(_c64(3, 5, seed=167),), (_c64(3, 5, seed=168),)])
class IrfftOfComplexInput(nn.Module):
    """A complex input read as a half spectrum: irfft to 8 samples and hfft's real signal."""

    def forward(self, z):
        return torch.fft.irfft(z, n=8), torch.fft.hfft(z, n=8)


@case("complex", [(randn(2, 40),), (randn(2, 40, seed=1),)])
class StftComplexReturned(nn.Module):
    """stft with a Hann window returned as complex, with its power summed over frames."""

    def forward(self, x):
        spec = torch.stft(x, n_fft=16, hop_length=4, window=torch.hann_window(16), return_complex=True)
        return spec, spec.abs().square().sum(-1)


@case("complex", [(_c64(2, 3, seed=169), randn(2, 3, dtype=torch.float64), torch.arange(6).view(2, 3))])
class ComplexStackPromotes(nn.Module):
    """complex64 stacked with a float64 (complex128) and an int64 tensor (type promotion across three kinds)."""

    def forward(self, z, x, n):
        return torch.stack([z, x, n]).sum(0), torch.cat([z, n], dim=1)


@case("complex", [(randn(3, 4, 2),), (randn(3, 4, 2, seed=1),)])
class ViewAsComplexInputRotated(nn.Module):
    """Real pairs of an input viewed as complex, rotated by a complex parameter, returned as pairs again."""

    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(170)
        self.rotation = nn.Parameter(torch.randn(4, dtype=torch.complex64))

    def forward(self, x):
        z = torch.view_as_complex(x) * self.rotation
        return torch.view_as_real(z).flatten(-2), z.abs().sum()


@case("numbers", [(randn(4, 3),), (randn(4, 3, seed=1) + 0.5,)])
class ItemMeanOverCount(nn.Module):
    """A sum and a count read with item, divided in Python, the quotient scaling the input and returned."""

    def forward(self, x):
        total = x.sum().item()
        count = (x > -5).sum().item()
        mean = total / count
        return x - mean, mean, count * 2 - 1


@case("numbers", [(randn(5),), (randn(5, seed=2) * 3,)])
class SymMaxOfItems(nn.Module):
    """torch.sym_max of two numbers read with item as the scale of a normalization (Python's max of them
    is torch.export's own refusal: a guard on their order)."""

    def forward(self, x):
        scale = torch.sym_max(x.max().item(), -x.min().item())
        return x / scale, scale


@case("numbers", [(randn(6),), (randn(6, seed=1),)])
class IntOfScaledItem(nn.Module):
    """torch.sym_int of a float read with item and scaled, used as a multiplier and returned (int() of it
    is torch.export's own refusal: it cannot extract an integer from a data-dependent float)."""

    def forward(self, x):
        k = torch.sym_int(x.abs().max().item() * 10)
        return x * k, k, k % 3


@case("numbers", [(torch.tensor(3), randn(2, 6)), (torch.tensor(3), randn(2, 6, seed=1)),
                  (torch.tensor(5), randn(2, 6, seed=2)), (torch.tensor(0), randn(2, 6, seed=3))],
      refuses={3: r"the condition k\.item\(\) >= 1 does not hold"})  # (its torch._check, named since general19)
class NarrowLengthFromTensor(nn.Module):
    """narrow with a length read from a tensor (bounded by torch._check), summed over the kept columns (padded to
    the check's 6 since general18: any length it allows; 0 is its refusal)."""

    def forward(self, k, x):
        n = k.item()
        torch._check(n >= 1)
        torch._check(n <= 6)
        return x.narrow(1, 0, n).sum(1)


@case("numbers", [(torch.tensor([0.5, 1.2]), randn(6, 2)), (torch.tensor([1.1, 0.2]), randn(6, 2, seed=1)),
                  (torch.tensor([0.5, 0.4]), randn(6, 2, seed=2))],
      refuses={2: r"'slice': the size computed from max_1\.item\(\) is not 3"})
class NarrowByIntOfFloatItem(nn.Module):
    """narrow by a length computed from a float read with item (torch.sym_int of it): the example's length,
    checked (it was compiled for the example's number with no check before general16)."""

    def forward(self, x, y):
        n = torch.sym_int(x.max().item() * 3)
        torch._check(n >= 1)
        torch._check(n <= 6)
        return y.narrow(0, 0, n).sum(0)


@case("numbers", [(torch.tensor([2, 6]), randn(12)), (torch.tensor([2, 6]), randn(12, seed=1)),
                  (torch.tensor([3, 4]), randn(12, seed=2))],
      refuses={2: r"is not 2"})
class ViewSizesFromTensor(nn.Module):
    """view with row and column counts read from a tensor, then a per-row softmax."""

    def forward(self, shape, x):
        rows, cols = shape.tolist()
        torch._check(rows * cols == 12)
        return x.view(rows, cols).softmax(-1)


@case("data", [(torch.tensor([0, 3, 3, 5, 1]),), (torch.tensor([2, 2, 6, 0, 0]),), (torch.tensor([9, 1, 0, 0, 0]),)],
      refuses={2: "'bincount': the input gives another length than the 8 compiled for"})
class BincountMinlengthHistogram(nn.Module):
    """bincount with minlength above every example value (its length is minlength for such inputs), normalized."""

    def forward(self, c):
        h = torch.bincount(c, minlength=8)
        return h / h.sum(), h.argmax()


@case("data", [(randn(3, 5),), (randn(3, 5, seed=1),), (randn(3, 5, seed=4) + 1,)])
class MaskedSelectMeanAnyCount(nn.Module):
    """masked_select of a broadcast mask reduced by sum, mean and amax: any count up to the recorded bound."""

    def forward(self, x):
        picked = x.masked_select(x[:1] > 0)
        return picked.sum(), picked.mean(), picked.amax()


@case("data", [(torch.tensor([1, 2, 1]), randn(3, 4)), (torch.tensor([0, 1, 2]), randn(3, 4, seed=1)),
               (torch.tensor([3, 3, 3]), randn(3, 4, seed=2)), (torch.tensor([4, 4, 4]), randn(3, 4, seed=3))],
      refuses={3: "'repeat_interleave': the repeats sum to more than the capacity of 9 compiled for"})
class RepeatInterleaveChecked(nn.Module):
    """Rows repeated by a tensor of counts whose total torch._check bounds (a capacity of 9), pooled."""

    def forward(self, r, x):
        y = x.repeat_interleave(r, dim=0)
        torch._check(y.shape[0] <= 9)
        return y.sum(0), y.amax(0)


@case("data", [(randn(2, 5, 4), torch.tensor([[1, 1, 1, 0, 0], [1, 1, 0, 0, 0]]).bool()),
               (randn(2, 5, 4, seed=1), torch.tensor([[1, 0, 0, 0, 0], [1, 1, 0, 0, 0]]).bool()),
               (randn(2, 5, 4, seed=2), torch.tensor([[1, 1, 1, 1, 1], [1, 1, 1, 0, 1]]).bool())])
class TokenMaskLinearPutBack(nn.Module):
    """Tokens picked by a [batch, seq] mask, a linear layer, written back (index_put) and added (accumulate)."""

    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(171)
        self.lin = nn.Linear(4, 4)

    def forward(self, x, m):
        y = self.lin(x[m])
        out = torch.zeros_like(x)
        out[m] = y
        return out, x.clone().index_put_((m,), y.relu(), accumulate=True)


@case("moe", _moe_inputs())
class WhereOnRouterThreshold(nn.Module):
    """(token, expert) pairs by torch.where on router probabilities over a threshold, each pair through its
    expert's gathered weight (bmm), index_add_ back weighted by the probability."""

    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(172)
        self.router = nn.Linear(4, 3)
        self.w = nn.Parameter(torch.randn(3, 4, 4) / 2)

    def forward(self, x):
        probs = self.router(x).softmax(-1)
        token, expert = torch.where(probs > 0.3)
        y = torch.bmm(x[token, None], self.w[expert])[:, 0] * probs[token, expert, None]
        return torch.zeros_like(x).index_add_(0, token, y)


@case("moe", _moe_inputs())
class OneHotMaskIndexAddAlpha(_Experts):
    """A one-hot boolean expert mask, tokens by nonzero(as_tuple=True) per column, index_add with alpha."""

    def forward(self, x):
        mask = F.one_hot(self.router(x).argmax(-1), 3).bool()
        out = x.clone()
        for e, expert in enumerate(self.experts):
            (tokens,) = mask[:, e].nonzero(as_tuple=True)
            out.index_add_(0, tokens, expert(x[tokens]), alpha=0.5)
        return out


@case("moe", _moe_inputs())
class TopTwoScatterReduceMax(_Experts):
    """Top-2 routing whose per-expert outputs are combined by scatter_reduce amax with include_self=False."""

    def forward(self, x):
        _, chosen = self.router(x).topk(2, dim=-1)
        out = torch.zeros_like(x)
        for e, expert in enumerate(self.experts):
            token = (chosen == e).any(-1).nonzero()[:, 0]
            index = token[:, None].expand(-1, x.shape[1])
            out = out.scatter_reduce(0, index, expert(x[token]), "amax", include_self=False)
        return out


@case("moe", _moe_inputs())
class ScatterReduceMeanDispatch(_Experts):
    """Top-2 (token, slot) pairs flattened, each through its expert by a per-expert mask, averaged per token by
    scatter_reduce mean with include_self=False."""

    def forward(self, x):
        _, chosen = self.router(x).topk(2, dim=-1)
        flat = chosen.flatten()
        token = torch.arange(x.shape[0]).repeat_interleave(2)
        y = torch.zeros(flat.shape[0], x.shape[1])
        for e, expert in enumerate(self.experts):
            hit = flat == e
            y[hit] = expert(x[token[hit]])
        index = token[:, None].expand(-1, x.shape[1])
        return torch.full_like(x, 7.0).scatter_reduce(0, index, y, "mean", include_self=False)


@case("storage", [(randn(2, 3, 4, 4).contiguous(memory_format=torch.channels_last),),
                  (randn(2, 3, 4, 4, seed=1).contiguous(memory_format=torch.channels_last),)])
class AsStridedChannelsLastInput(nn.Module):
    """as_strided of a channels-last input with strides from its storage (each pixel's channels as a row)."""

    def forward(self, x):
        pixels = torch.as_strided(x, (2, 16, 3), (48, 3, 1))
        return pixels.mean(-1), pixels.amax(1)


@case("storage", [(randn(4, 8, dtype=torch.float16),), (randn(4, 8, seed=1, dtype=torch.float16),)])
class HalfPairsAsFloat32(nn.Module):
    """float16 pairs read as float32 and quadruples as int64 (wider elements), compared by bits."""

    def forward(self, x):
        return x.view(torch.float32).view(torch.int32) >> 16, x.view(torch.int64) & 0xFFFF, x.view(torch.int16).sum(-1)


@case("storage", [(randn(3, 10),), (randn(3, 10, seed=1),)])
class UnfoldWithGaps(nn.Module):
    """unfold with a step larger than its size (gaps between windows) and unfold along the first dim."""

    def forward(self, x):
        return x.unfold(1, 2, 3).sum(-1), x.unfold(0, 2, 1).prod(-1)


@case("storage", [(randn(4, 4),), (randn(4, 4, seed=1),)])
class AsStridedDiagonalOffset(nn.Module):
    """The main and first upper diagonals by as_strided (stride n+1, a storage offset of 1)."""

    def forward(self, x):
        return torch.as_strided(x, (4,), (5,)), torch.as_strided(x, (3,), (5,), 1) * 2


@case("storage", [(randn(3, 5).abs() + 0.5,), (randn(3, 5, seed=1).abs() + 0.5,)])
class ProductsLeftAsPrims(nn.Module):
    """prod over a dim, over everything in float64, and cumprod (prims torch keeps after run_decompositions)."""

    def forward(self, x):
        return x.prod(1), x.double().prod(), torch.cumprod(x, 0), torch.ops.prims.sum(x, [0])


def _ks_normal_of(mean: float, std: float, n: int = 4000):
    def check(got: Any, eager: Any) -> None:
        _ks_normal((torch.as_tensor(got).double().flatten()[:n] - mean) / std, eager)
    return check


@case("random", [(torch.zeros(4000, dtype=torch.float16),)], check=_ks_normal_of(1.0, 2.0))
class RandnHalfShifted(nn.Module):
    """randn of float16 (dtype argument) scaled and shifted: Kolmogorov-Smirnov against N(1, 4)."""

    def forward(self, x):
        return (torch.randn(x.shape, dtype=torch.float16) * 2 + 1).double()


def _kept_scaled(got: Any, eager: Any) -> None:
    """dropout(p=0.1) of ones: values 0 or 1/0.9, the kept share 0.9 (n = 20000: 6 sigma is 0.0127)."""
    g = torch.as_tensor(got)
    assert g.shape == eager.shape and set(g.unique().tolist()) <= {0.0, float(torch.tensor(1 / 0.9))}, g.unique()
    kept = (g != 0).double().mean().item()
    assert abs(kept - 0.9) < 0.0127, kept


@case("random", [(torch.ones(200, 100),)], check=_kept_scaled, train=True)
class DropoutLowRateTrain(nn.Module):
    """F.dropout with p=0.1 under training=self.training: the keep fraction and the scaled value."""

    def forward(self, x):
        return F.dropout(x, 0.1, training=self.training)


def _uniform_bf16(got: Any, eager: Any) -> None:
    """rand_like as bfloat16: in [0, 1], mean 1/2 and variance 1/12 (n = 20000)."""
    g = torch.as_tensor(got)
    assert g.dtype == torch.bfloat16 and g.shape == eager.shape
    d = g.double()
    assert d.min() >= 0 and d.max() <= 1 and abs(d.mean() - 0.5) < 0.013 and abs(d.var() - 1 / 12) < 0.006, \
        (d.mean(), d.var())


@case("random", [(torch.zeros(100, 200),)], check=_uniform_bf16)
class RandLikeBf16(nn.Module):
    def forward(self, x):
        return torch.rand_like(x, dtype=torch.bfloat16)


@case("dynamic", [(randn(2, 6, 8),), (randn(4, 12, 8, seed=1),), (randn(2, 12, 8, seed=2),)],
      **_dyn([], ({0: Dim("batch", min=1, max=4), 1: Dim("seq", min=2, max=32)},), {"batch": [2, 4], "seq": [6, 12]}))
class DynCausalMaskFromSeq(nn.Module):
    """A causal mask built from the dynamic sequence length (arange comparisons), attention over it."""

    def forward(self, x):
        s = x.shape[1]
        causal = torch.arange(s)[:, None] >= torch.arange(s)[None, :]
        return F.scaled_dot_product_attention(x[:, None], x[:, None], x[:, None], attn_mask=causal)[:, 0]


@case("dynamic", [(torch.tensor([[1, 1, 1, 0, 0]]).float(), randn(1, 5, 4)),
                  (torch.tensor([[1, 1, 1, 1, 1, 1, 0, 0, 0]]).float(), randn(1, 9, 4, seed=1))],
      **_dyn([], ({1: Dim("seq", min=2, max=16)}, {1: Dim("seq", min=2, max=16)}), {"seq": [5, 9]}))
class DynPositionsFromMaskCumsum(nn.Module):
    """Positions from a padding mask by cumsum over a dynamic sequence, embedded and added to the values."""

    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(173)
        self.pos = nn.Embedding(16, 4)

    def forward(self, m, x):
        positions = (m.cumsum(1) - 1).clamp(min=0).long()
        return (x + self.pos(positions)) * m[..., None]


@case("dynamic", [(randn(2, 3, 4),), (randn(5, 3, 4, seed=1),)],
      **_dyn([], ({0: Dim("batch", min=1, max=8)},), {"batch": [2, 5]}))
class DynBatchFlattenNormLinear(nn.Module):
    """A dynamic batch flattened by view(b, -1), layer-normed, a linear layer, and its per-batch mean returned."""

    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(174)
        self.norm = nn.LayerNorm(12)
        self.lin = nn.Linear(12, 5)

    def forward(self, x):
        y = self.lin(self.norm(x.view(x.shape[0], -1)))
        return y, y.mean(0)


# ----------------------------------------------------------------- round 17: held-out forms (general17)
@case("complex", [(_c64(4, 8, seed=180),), (_c64(4, 8, seed=181),)])
class CenteredSpectrumOfComplex(nn.Module):
    """fft2 of a complex input centred by fftshift, returned with its magnitude and phase, and ifftshift back."""

    def forward(self, z):
        s = torch.fft.fftshift(torch.fft.fft2(z), dim=(-2, -1))
        return s, s.abs(), s.angle(), torch.fft.ifft2(torch.fft.ifftshift(s, dim=(-2, -1)))


@case("complex", [(_c64(2, 3, 4, seed=182), randn(4, 5, seed=183)), (_c64(2, 3, 4, seed=184), randn(4, 5, seed=185))])
class ComplexEinsumWithRealWeight(nn.Module):
    """einsum of a complex input with its conjugate (a batched Gram matrix) and with a real weight cast by type_as."""

    def forward(self, z, w):
        return torch.einsum("bij,bkj->bik", z, z.conj()), torch.einsum("bij,jk->bik", z, w.type_as(z))


@case("complex", [(_c64(4, 6, seed=186),), (_c64(4, 6, seed=187),)])
class ViewAsRealOfSlices(nn.Module):
    """view_as_real of a column slice, of every other row and of the transpose of a complex input."""

    def forward(self, z):
        return torch.view_as_real(z[:, 1:4]).sum(-1), torch.view_as_real(z[::2]) * 2, torch.view_as_real(z.t())


@case("complex", [(randn(3, 16).abs() + 0.1, randn(3, 16, seed=1)), (randn(3, 16, seed=2).abs(), randn(3, 16, seed=3))])
class PolarSpectrumResynthesis(nn.Module):
    """Magnitudes and phases made complex by polar, phase-shifted by a parameter, irfft back to a real signal."""

    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(188)
        self.shift = nn.Parameter(torch.randn(9))

    def forward(self, mag, phase):
        spec = torch.polar(mag[:, :9], phase[:, :9] + self.shift)
        return torch.fft.irfft(spec, n=16), spec.angle().cos(), spec


@case("complex", [(_c64(3, 4, seed=189),), (_c64(3, 4, seed=190),)])
class ConjugateTransposeGram(nn.Module):
    """The adjoint (mH) of a complex input times the input (Hermitian), its trace's real part, adjoint() copied."""

    def forward(self, z):
        g = z.mH @ z
        return g, torch.diagonal(g).real.sum(), z.adjoint().contiguous()


@case("complex", [(_c64(3, 5, seed=191),), (_c64(3, 5, seed=192),)])
class ComplexScansAndProducts(nn.Module):
    """cumsum and cumprod of a complex input along a dim, and its product over the other."""

    def forward(self, z):
        return z.cumsum(1), z.cumprod(1), z.prod(0)


@case("complex", [(_c64(3, 4, seed=193),), (_c64(3, 4, seed=194),)])
class ComplexSignRsqrtSigmoid(nn.Module):
    """sgn, rsqrt, sigmoid, sin and cosh of a complex input."""

    def forward(self, z):
        return z.sgn(), torch.rsqrt(z), torch.sigmoid(z), torch.sin(z), torch.cosh(z * 0.5)


@case("complex", [(randn(4, 10),), (randn(4, 10, seed=1),)])
class IhfftOrthoRfftn(nn.Module):
    """ihfft of a real signal, an orthonormal fft of a real input and rfftn with sizes, all returned complex."""

    def forward(self, x):
        return torch.fft.ihfft(x), torch.fft.fft(x, norm="ortho"), torch.fft.rfftn(x, s=(4, 6), dim=(0, 1))


@case("numbers", [(randn(8).abs() + 0.5,), (randn(8, seed=1).abs() + 1,)])
class MathOfItems(nn.Module):
    """Powers of a variance read with item (** 0.5, ** -1, ** 0.25), scaling the input and returned (math.sqrt,
    math.log and math.exp of it are torch.export's own refusal: a guard on the data-dependent float)."""

    def forward(self, x):
        v = x.var().item()
        s = v ** 0.5
        return x / s + (v + 1.0) ** 0.25, v ** -1, s


@case("numbers", [(randn(6, 3),), (randn(6, 3, seed=3),), (randn(6, 3, seed=5),)])
class SliceEndFromIntSum(nn.Module):
    """A mask's sum read with item as a slice end (rows kept from the front, bounded by torch._check), their sum
    and the count returned, padded to the 6 rows (since general18: any count; int() of the sum is torch.export's
    own refusal: no specialized integer)."""

    def forward(self, x):
        n = (x[:, 0] > 0).sum().item()
        torch._check(n <= x.shape[0])
        return x[:n].sum(0), n


@case("numbers", [(torch.tensor(1), randn(6, 3)), (torch.tensor(1), randn(6, 3, seed=1)),
                  (torch.tensor(2), randn(6, 3, seed=2))])
class LenAndHalfShapeWithItem(nn.Module):
    """shape[0] // 2 minus an offset read with item as a narrow start; len() of the input as a divisor."""

    def forward(self, off, x):
        start = x.shape[0] // 2 - off.item()
        torch._check(start >= 0)
        torch._check(start + 2 <= len(x))
        return x.narrow(0, start, 2) / len(x)


@case("numbers", [(randn(5),), (randn(5, seed=1) + 1,)])
class FloorOfScaledItem(nn.Module):
    """math.floor of a scaled mean read with item as an integer multiplier; the float and the integer returned."""

    def forward(self, x):
        f = x.mean().item() * 4
        k = math.floor(f)
        return x * k + f, k


@case("numbers", [(torch.tensor(3), randn(2, 6)), (torch.tensor(3), randn(2, 6, seed=1)),
                  (torch.tensor(4), randn(2, 6, seed=2)), (torch.tensor(6), randn(2, 6, seed=3)),
                  (torch.tensor(0), randn(2, 6, seed=4))],
      refuses={4: r"the condition k\.item\(\) >= 1 does not hold"})  # (its torch._check, named since general19)
class TopkKFromItem(nn.Module):
    """topk with k read from a tensor (bounded by torch._check): the kept values' sum and mean index (padded to
    the check's 6 since general18: any k it allows; 0 is its refusal)."""

    def forward(self, k, x):
        n = k.item()
        torch._check(n >= 1)
        torch._check(n <= 6)
        values, indices = x.topk(n, dim=-1)
        return values.sum(-1), indices.float().mean(-1)


@case("numbers", [(randn(6),), (randn(6, seed=1) - 2,)])
class ItemPowersAndAbs(nn.Module):
    """abs(), ** 2 and a reciprocal of a minimum read with item: Python float arithmetic returned and applied."""

    def forward(self, x):
        v = x.min().item()
        return abs(v), v ** 2, x * (v ** 2) + 1 / (abs(v) + 1)


@case("data", [(randn(6, 4),), (randn(6, 4, seed=1),), (randn(6, 4, seed=2) * 2,)])
class NonzeroGatherRows(nn.Module):
    """nonzero of a row condition, then gather of those rows (the index expanded over the columns)."""

    def forward(self, x):
        rows = (x.abs().sum(1) > 3).nonzero().squeeze(1)
        picked = torch.gather(x, 0, rows[:, None].expand(-1, x.shape[1]))
        return picked.sum(0), picked.shape[0]


@case("data", [(torch.tensor([[1, 2], [1, 2], [3, 4], [1, 2], [3, 4]]),),
               (torch.tensor([[5, 1], [0, 0], [5, 1], [0, 0], [5, 1]]),),
               (torch.tensor([[0, 0], [5, 1], [5, 1], [2, 2], [5, 1]]),)],
      refuses={2: "'unique_dim': the input holds another number of distinct slices than the 2 compiled for"})
class UniqueRowsCounts(nn.Module):
    """torch.unique over rows (dim=0) with inverse and counts: each row's multiplicity, the rows' sum
    (compiled for the example's number of distinct rows, checked)."""

    def forward(self, x):
        rows, inverse, counts = torch.unique(x, dim=0, return_inverse=True, return_counts=True)
        return counts[inverse], rows.sum(0), rows.shape[0]


@case("data", [(randn(2, 3, 4), randn(2, 3, 4, seed=1)), (randn(2, 3, 4, seed=2), randn(2, 3, 4, seed=3))])
class WhereOneArg3dPutBack(nn.Module):
    """One-argument torch.where of a 3-D condition: its index tuple reads another tensor and writes it back."""

    def forward(self, x, y):
        idx = torch.where(x > 0.5)
        out = torch.zeros_like(y)
        out[idx] = y[idx] * 2
        return out, torch.stack(idx, -1).sum(0)


@case("data", [(randn(3, 5), randn(3, 5, seed=1) > 0), (randn(3, 5, seed=2), randn(3, 5, seed=3) > 0.5)])
class MaskedSelectLogsumexpStd(nn.Module):
    """masked_select by a mask input feeding logsumexp, std and a 2-norm (checked non-empty: without the check
    logsumexp's guard on an empty selection is torch.export's own refusal)."""

    def forward(self, x, m):
        v = torch.masked_select(x, m)
        torch._check(v.shape[0] > 0)
        return torch.logsumexp(v, 0), v.std(), v.norm()


@case("data", [(randn(8),), (randn(8, seed=1),)])
class NonzeroStaticPadded(nn.Module):
    """nonzero_static with a size and fill value: the padded positions read (clamped) and summed."""

    def forward(self, x):
        idx = torch.nonzero_static(x > 0, size=6, fill_value=-1)[:, 0]
        return idx, torch.where(idx >= 0, x[idx.clamp(min=0)], 0.0).sum()


@case("storage", [(randn(4, 8),), (randn(4, 8, seed=1),)])
class AsStridedOfSliceOffset(nn.Module):
    """as_strided of a sliced input (the slice's storage offset kept): overlapping windows of 3."""

    def forward(self, x):
        w = x[1:].as_strided((3, 6, 3), (8, 1, 1))
        return w.sum(-1), w.amax((0, 2))


@case("storage", [(randn(3, 8), randn(3, 8, seed=1, dtype=torch.float16)),
                  (randn(3, 8, seed=2), randn(3, 8, seed=3, dtype=torch.float16))])
class ViewDtypeOfSlices(nn.Module):
    """view(dtype) of column slices: float32 as int32 (same size) and as int16, a float16 slice as float32."""

    def forward(self, x, h):
        return x[:, 2:6].view(torch.int32) & 0x7FFFFFFF, x[:, :4].view(torch.int16).sum(-1), h[1:, :4].view(torch.int32)


@case("storage", [(randn(2, 3, 4, 5),), (randn(2, 3, 4, 5, seed=1),)])
class MovedimContiguousLinear(nn.Module):
    """Channels moved last, contiguous and viewed as rows, a linear layer, moved back; a two-dim movedim."""

    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(195)
        self.lin = nn.Linear(3, 6)

    def forward(self, x):
        y = self.lin(x.movedim(1, -1).contiguous().view(-1, 3)).view(2, 4, 5, 6).movedim(-1, 1)
        return y, x.movedim((0, 1), (2, 3)).contiguous().sum(0)


@case("storage", [(randn(2, 3, 6, 6).contiguous(memory_format=torch.channels_last),),
                  (randn(2, 3, 6, 6, seed=1).contiguous(memory_format=torch.channels_last),)])
class ChannelsLastConvModel(nn.Module):
    """A conv stack converted to channels-last (its parameters too), a channels-last input, flattened."""

    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(196)
        self.c1 = nn.Conv2d(3, 8, 3, padding=1)
        self.c2 = nn.Conv2d(8, 4, 1)
        self.to(memory_format=torch.channels_last)

    def forward(self, x):
        return self.c2(F.relu(self.c1(x))).flatten(1)


@case("storage", [(randn(3, 8),), (randn(3, 8, seed=1),)])
class UnfoldOfTransposedAndExpanded(nn.Module):
    """unfold of a transposed input (step 2) and of an expanded row (stride 0)."""

    def forward(self, x):
        return x.t().unfold(0, 2, 2).sum(-1), x[:1].expand(4, 8).unfold(1, 3, 2).mean(-1)


@case("storage", [(randn(2, 12),), (randn(2, 12, seed=1),)])
class AsStridedSlidingMatmul(nn.Module):
    """Overlapping windows by as_strided as the im2col of a 1-D convolution, times a weight matrix."""

    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(197)
        self.w = nn.Parameter(torch.randn(3, 4))

    def forward(self, x):
        return x.as_strided((2, 10, 3), (12, 1, 1)) @ self.w


def _row_bernoulli(got: Any, eager: Any) -> None:
    """bernoulli of sigmoid([-2, -0.5, 0.5, 2]) rows of 20000: each row's share within 6 sigma (0.021)."""
    g = torch.as_tensor(got).double()
    assert set(g.unique().tolist()) <= {0.0, 1.0}, g.unique()
    want = torch.sigmoid(torch.tensor([-2.0, -0.5, 0.5, 2.0], dtype=torch.float64))
    assert (g.mean(1) - want).abs().max() < 0.021, g.mean(1)


@case("random", [(torch.tensor([-2.0, -0.5, 0.5, 2.0])[:, None].expand(4, 20000).contiguous(),)], check=_row_bernoulli)
class BernoulliOfSigmoid(nn.Module):
    """bernoulli of per-row probabilities computed in the program (sigmoid of the input)."""

    def forward(self, logits):
        return torch.bernoulli(torch.sigmoid(logits))


def _without_replacement(got: Any, eager: Any) -> None:
    """Two draws without replacement of [1, 2, 3, 4] per row: distinct; the first's frequencies (n = 20000)."""
    g = torch.as_tensor(got)
    assert g.shape == eager.shape and (g[:, 0] != g[:, 1]).all(), "a row drew one index twice"
    first = torch.bincount(g[:, 0], minlength=4).double() / g.shape[0]
    assert (first - torch.tensor([0.1, 0.2, 0.3, 0.4], dtype=torch.float64)).abs().max() < 0.02, first


@case("random", [(torch.tensor([1.0, 2.0, 3.0, 4.0]).expand(20000, 4).contiguous(),)], check=_without_replacement)
class MultinomialWithoutReplacement(nn.Module):
    def forward(self, w):
        return torch.multinomial(w, 2)


def _two_normals(got: Any, eager: Any) -> None:
    """Rows N(1, 2^2) and N(-1, 0.5^2): each standardized, a Kolmogorov-Smirnov test against N(0, 1)."""
    g = torch.as_tensor(got).double()
    _ks_normal((g[0] - 1) / 2, eager)
    _ks_normal((g[1] + 1) / 0.5, eager)


@case("random", [(torch.zeros(5000),)], check=_two_normals)
class NormalScalarAndTensorOverloads(nn.Module):
    """torch.normal(mean tensor, float std) and torch.normal(float mean, std tensor)."""

    def forward(self, x):
        return torch.stack([torch.normal(x + 1.0, 2.0), torch.normal(-1.0, torch.full_like(x, 0.5))])


@case("random", [(torch.ones(8, 64, 2, 2, 2),)], check=_channels_dropped)
class Dropout3dTrain(nn.Module):
    def forward(self, x):
        return F.dropout3d(x, 0.5, training=True)


def _softmax_frequencies(got: Any, eager: Any) -> None:
    """Gumbel argmax of log([1, 2, 3, 4]) over 20000 rows: frequencies 0.1..0.4 within 6 sigma (0.021)."""
    counts = torch.bincount(torch.as_tensor(got), minlength=4).double() / torch.as_tensor(got).numel()
    assert (counts - torch.tensor([0.1, 0.2, 0.3, 0.4], dtype=torch.float64)).abs().max() < 0.021, counts


@case("random", [(torch.tensor([1.0, 2.0, 3.0, 4.0]).log().expand(20000, 4).contiguous(),)], check=_softmax_frequencies)
class GumbelArgmaxSampling(nn.Module):
    """Gumbel-max sampling by -log(-log(rand_like)): the argmax follows softmax(logits)."""

    def forward(self, logits):
        return (logits - torch.log(-torch.log(torch.rand_like(logits)))).argmax(-1)


def _int32_permutation(got: Any, eager: Any) -> None:
    g = torch.as_tensor(got)
    assert g.dtype == torch.float32 and torch.equal(g[:, 0].sort().values, torch.arange(300.0)), "not a permutation"
    assert not torch.equal(g[:, 0], torch.arange(300.0)) and torch.equal(g[:, 1], g[:, 0] * 2), "the identity"


@case("random", [(torch.arange(300.0)[:, None] * torch.tensor([1.0, 2.0]),)], check=_int32_permutation)
class RandpermInt32Rows(nn.Module):
    """Rows shuffled by randperm(dtype=torch.int32) with a generator (int32 indices)."""

    def forward(self, x):
        return x[torch.randperm(x.shape[0], dtype=torch.int32, generator=torch.Generator().manual_seed(5))]


_batch17 = Dim("batch", min=1, max=6)


@case("dynamic", [(randn(2, 4), randn(3, 4, seed=1)), (randn(5, 4, seed=2), randn(6, 4, seed=3))],
      **_dyn([], ({0: _batch17}, {0: _batch17 + 1}), {"batch": [2, 5]}))
class DynBatchPlusOne(nn.Module):
    """Two inputs of batch b and b + 1 (a derived Dim): differences and products of neighbours."""

    def forward(self, x, y):
        return y[1:] - x, y[:-1] * x


@case("dynamic", [(randn(2, 3, 4),), (randn(2, 7, 4, seed=1),)],
      **_dyn([], ({1: Dim("seq", min=2, max=12)},), {"seq": [3, 7]}))
class DynSeqDoubledByCat(nn.Module):
    """A dynamic sequence concatenated with its flip (2 * seq), new_zeros of (b, 2 * seq, 1), cumsum over it."""

    def forward(self, x):
        y = torch.cat([x, x.flip(1)], 1)
        return (y + x.new_zeros(x.shape[0], 2 * x.shape[1], 1)).cumsum(1)


@case("dynamic", [(randn(2, 5),), (randn(2, 11, seed=1),), (randn(2, 16, seed=2),)],
      **_dyn([], ({1: Dim("length", min=2, max=16)},), {"length": [5, 11, 16]}))
class DynPadToFixedLength(nn.Module):
    """F.pad of a dynamic length to 16 (pad amount 16 - length), then a linear layer over the padded axis."""

    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(198)
        self.lin = nn.Linear(16, 3)

    def forward(self, x):
        return self.lin(F.pad(x, (0, 16 - x.shape[-1])))


@case("dynamic", [(randn(1, 3, 5),), (randn(1, 3, 9, seed=1),)],
      **_dyn([], ({2: Dim("length", min=2, max=32)},), {"length": [5, 9]}))
class DynInterpolateDouble(nn.Module):
    """Linear interpolation of a dynamic length by scale_factor=2 (2 * length out), then a 3-tap conv."""

    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(199)
        self.conv = nn.Conv1d(3, 2, 3, padding=1)

    def forward(self, x):
        return self.conv(F.interpolate(x, scale_factor=2, mode="linear", align_corners=False))


@case("dynamic", [(randn(2, 5, 8),), (randn(3, 9, 8, seed=1),)],
      **_dyn([], ({0: Dim("batch", min=1, max=4), 1: Dim("seq", min=2, max=16)},), {"batch": [2, 3], "seq": [5, 9]}))
class DynHeadsReshape(nn.Module):
    """Heads by view(b, s, 2, d // 2) over a dynamic batch and sequence, SDPA, reshape back to (b, s, d)."""

    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(200)
        self.qkv = nn.Linear(8, 24)

    def forward(self, x):
        b, s, d = x.shape
        q, k, v = self.qkv(x).view(b, s, 3, 2, d // 2).permute(2, 0, 3, 1, 4)
        return F.scaled_dot_product_attention(q, k, v).transpose(1, 2).reshape(b, s, d)


@case("dynamic", [(randn(2, 6, 8),), (randn(2, 13, 8, seed=1),)],
      **_dyn([], ({1: Dim("seq", min=2, max=32)},), {"seq": [6, 13]}))
class DynSinusoidalPositions(nn.Module):
    """Sinusoidal position features of arange(seq) over a dynamic length, divided by the length."""

    def forward(self, x):
        s = x.shape[1]
        angle = torch.arange(s, dtype=torch.float32)[:, None] / s * torch.exp(-torch.arange(0, 8, 2).float())
        return x + torch.cat([angle.sin(), angle.cos()], -1)


_half17 = Dim("half", min=1, max=8)


@case("dynamic", [(randn(2, 4, 3),), (randn(2, 10, 3, seed=1),)],
      **_dyn([], ({1: 2 * _half17},), {"half": [2, 5]}))
class DynSplitHalves(nn.Module):
    """A sequence of 2 * half (a Dim in arithmetic) split in halves by shape // 2, swapped and subtracted."""

    def forward(self, x):
        a, b = x.split(x.shape[1] // 2, dim=1)
        return torch.cat([b, a], 1), a - b


# ----------------------------------------------------------------- round 18: held-out forms (general18)
@case("complex", [(_c64(3, 6, seed=210),), (_c64(3, 6, seed=211),)])
class ComplexRollPadWhere(nn.Module):
    """A complex input rolled along its rows, zero-padded on the right (F.pad) and kept where its magnitude
    passes 1 (torch.where with a complex zero)."""

    def forward(self, z):
        rolled = torch.roll(z, shifts=2, dims=1)
        return F.pad(rolled, (0, 2)), torch.where(z.abs() > 1, z, torch.zeros_like(z))


@case("complex", [(_c64(2, 5, seed=212), randn(2, 5, seed=213)), (_c64(2, 5, seed=214), randn(2, 5, seed=215))])
class ComplexGatedByRealSigmoid(nn.Module):
    """A complex input scaled by a real gate (sigmoid of a real input) and by its own real part's tanh, the
    columns unbound and stacked back in reverse order."""

    def forward(self, z, g):
        gated = z * torch.sigmoid(g) * z.real.tanh()
        return torch.stack(list(reversed(gated.unbind(1))), 1)


@case("complex", [(randn(4, 8),), (randn(4, 8, seed=1),)])
class RfftMagnitudePhaseBands(nn.Module):
    """rfft of a real signal split into two frequency bands (slices of the spectrum), each band's energy and the
    spectrum's phase differences along frequency."""

    def forward(self, x):
        spec = torch.fft.rfft(x, dim=-1)
        low, high = spec[:, :2], spec[:, 2:]
        return low.abs().pow(2).sum(-1), high.abs().pow(2).sum(-1), torch.diff(spec.angle(), dim=-1)


@case("numbers", [(torch.tensor(3), randn(2, 4)), (torch.tensor(7), randn(2, 4, seed=1)),
                  (torch.tensor(1), randn(2, 4, seed=2))])
class SymMinOfItem(nn.Module):
    """A count read with item, capped by torch.sym_min at 4, scaling the input, and returned halved."""

    def forward(self, k, x):
        n = k.item()
        torch._check(n >= 0)
        m = torch.sym_min(n, 4)
        return x * m, n * 0.5, m


@case("numbers", [(torch.tensor([2.0, -0.5]), randn(3)), (torch.tensor([0.25, 4.0]), randn(3, seed=1))])
class ItemsProductQuotient(nn.Module):
    """Two numbers read with tolist: their product as a divisor of the input, their quotient and difference
    returned as numbers."""

    def forward(self, v, x):
        a, b = v.tolist()
        return x / (a * b), a / b, a - b


@case("numbers", [(randn(3, 4), torch.tensor(-1.5)), (randn(3, 4, seed=1), torch.tensor(2.0))])
class NumelTimesNegatedItem(nn.Module):
    """The input's numel times a number read with item and negated, added to the input's mean."""

    def forward(self, x, s):
        v = -s.item()
        return x.mean() + x.numel() * v, v * 2


@case("data", [(randn(6, 3), torch.tensor(2)), (randn(6, 3, seed=1), torch.tensor(5)),
               (randn(6, 3, seed=2), torch.tensor(-2)), (randn(6, 3, seed=3), torch.tensor(0))])
class PrefixRowsStatistics(nn.Module):
    """The first n rows (n read with item, no torch._check: Python's slicing of any n), their max, mean and
    log-sum-exp over the rows kept, and their count."""

    def forward(self, x, n):
        head = x[:n.item()]
        return head.sum(0), torch.softmax(head, 0).sum(0), head.shape[0] * 1.0


@case("data", [(randn(5, 7), torch.tensor(2)), (randn(5, 7, seed=1), torch.tensor(7)),
               (randn(5, 7, seed=2), torch.tensor(1)), (randn(5, 7, seed=3), torch.tensor(8))],
      refuses={3: r"the condition k\.item\(\) <= 7 does not hold"})  # (topk's own, named since general19)
class SmallestKPerRow(nn.Module):
    """The k smallest of each row (topk, largest=False, k read with item), their mean and the mean of their
    positions."""

    def forward(self, x, k):
        values, where = x.topk(k.item(), dim=1, largest=False)
        return values.mean(1), where.float().mean(1)


@case("data", [(randn(4, 6),), (randn(4, 6, seed=1),), (randn(4, 6, seed=2).abs(),)])
class NonzeroCountAsDivisor(nn.Module):
    """The positive elements' sum over their count read from the nonzero positions' shape."""

    def forward(self, x):
        idx = (x > 0).nonzero()
        return x.clamp(min=0).sum() / max(idx.shape[0], 1)


@case("storage", [(randn(3, 4),), (randn(3, 4, seed=1),)])
class AbsByBitMask(nn.Module):
    """|x| by clearing the sign bit of its int32 view (bitwise_and), viewed back as float32."""

    def forward(self, x):
        return (x.view(torch.int32) & 0x7FFFFFFF).view(torch.float32)


@case("storage", [(randn(10),), (randn(10, seed=1),)])
class SlidingWindowsAsStrided(nn.Module):
    """Overlapping windows of 3 of a 1-D input by as_strided (stride 1), each window's max and weighted sum."""

    def forward(self, x):
        windows = x.as_strided((8, 3), (1, 1))
        return windows.amax(1), windows @ torch.tensor([0.25, 0.5, 0.25])


@case("storage", [(randn(2, 9),), (randn(2, 9, seed=1),)])
class UnfoldTransposeContiguous(nn.Module):
    """unfold (size 3, step 2) of the last dim, transposed and made contiguous, flattened."""

    def forward(self, x):
        return x.unfold(1, 3, 2).transpose(-1, -2).contiguous().flatten(1)


def _channels_dropped(p: float):
    """Dropout2d of ones: each channel all 0 or all 1 / (1 - p), about p of them 0."""
    def check(got: Any, _eager: Any) -> None:
        g = torch.as_tensor(got).double().flatten(2)
        per_channel = g[..., 0]
        assert torch.equal(g, per_channel[..., None].expand_as(g)), "a channel is not dropped whole"
        assert set(per_channel.unique().tolist()) <= {0.0, float(torch.tensor(1 / (1 - p)))}, per_channel.unique()
        dropped = (per_channel == 0).double().mean().item()
        assert abs(dropped - p) < 5 * math.sqrt(p * (1 - p) / per_channel.numel()), dropped
    return check


@case("random", [(torch.ones(40, 50, 2, 2),)], check=_channels_dropped(0.3), train=True)
class Dropout2dTrain(nn.Module):
    """nn.Dropout2d left in training mode: whole channels zeroed."""

    def __init__(self) -> None:
        super().__init__()
        self.drop = nn.Dropout2d(0.3)

    def forward(self, x):
        return self.drop(x)


def _rrelu_slopes(lower: float, upper: float):
    def check(got: Any, _eager: Any) -> None:
        slopes = torch.as_tensor(got).double() / -1.0
        assert slopes.min() >= lower - 1e-6 and slopes.max() <= upper + 1e-6, (slopes.min(), slopes.max())
        mean, var = (lower + upper) / 2, (upper - lower) ** 2 / 12
        assert abs(slopes.mean().item() - mean) < 5 * math.sqrt(var / slopes.numel()), slopes.mean()
    return check


@case("random", [(-torch.ones(4000),)], check=_rrelu_slopes(0.1, 0.3), train=True)
class RReLUTrain(nn.Module):
    """nn.RReLU(0.1, 0.3) left in training mode on negative inputs: each slope uniform on [0.1, 0.3]."""

    def __init__(self) -> None:
        super().__init__()
        self.act = nn.RReLU(0.1, 0.3)

    def forward(self, x):
        return self.act(x)


@case("random", [(torch.randn(4000, generator=_g(216)),)], check=_moments(0.0, 1.0), train=True)
class AlphaDropoutTrain(nn.Module):
    """nn.AlphaDropout(0.2) in training mode keeps a standard normal input's mean 0 and variance 1."""

    def __init__(self) -> None:
        super().__init__()
        self.drop = nn.AlphaDropout(0.2)

    def forward(self, x):
        return self.drop(x)


@case("dynamic", [(randn(2, 5, 3),), (randn(2, 11, 3, seed=1),)],
      **_dyn([], ({1: Dim("seq", min=2, max=16)},), {"seq": [5, 11]}))
class DynRollAndCumsum(nn.Module):
    """A dynamic sequence rolled by one step and differenced with itself, then a running sum over it."""

    def forward(self, x):
        return (x - torch.roll(x, 1, dims=1)).cumsum(1)


@case("dynamic", [(randn(1, 4, 6),), (randn(1, 9, 6, seed=1),)],
      **_dyn([], ({1: Dim("seq", min=2, max=16)},), {"seq": [4, 9]}))
class DynCausalMaskFromArange(nn.Module):
    """A causal mask built from arange of the dynamic length, masked_fill of scores with -inf, softmax, and
    the weighted values."""

    def forward(self, x):
        s = x.shape[1]
        scores = x @ x.transpose(1, 2) / 6 ** 0.5
        mask = torch.arange(s)[:, None] < torch.arange(s)[None, :]
        return scores.masked_fill(mask, float("-inf")).softmax(-1) @ x


@case("dynamic", [(randn(3, 4),), (randn(7, 4, seed=1),)],
      **_dyn([], ({0: Dim("batch", min=2, max=8)},), {"batch": [3, 7]}))
class DynBatchStandardize(nn.Module):
    """Standardization over a dynamic batch (mean and unbiased std over dim 0), with the batch size as a
    divisor."""

    def forward(self, x):
        centred = x - x.mean(0, keepdim=True)
        return centred / (x.std(0, keepdim=True) + 1e-5), centred.pow(2).sum(0) / x.shape[0]


@case("complex", [(torch.randn(3, 5, dtype=torch.complex128, generator=_g(21)) * 3,
                   torch.tensor([2.0, -2.0, 0.5, -0.0, 1.5])),
                  (torch.randn(3, 5, dtype=torch.complex128, generator=_g(22)) * 0.1,
                   torch.tensor([3.0, 0.0, -1.0, 0.2, -4.0]))])
class ComplexInverseOfMixed(nn.Module):
    """Round general21: the inverse circular and hyperbolic functions of complex128 values, of a real input
    made complex (on the branch cuts: real values past 1 or -1, a signed zero) and composed (asinh of a
    rotation, atanh of tanh, atan of a conjugate)."""

    def forward(self, z, r):
        w = torch.complex(r, torch.zeros_like(r))
        return (torch.acos(w), torch.asin(w), torch.atanh(w), torch.acosh(w), torch.asinh(z * 1j).sum(0),
                torch.atanh(torch.tanh(z * 0.3)), torch.atan(z.conj()))


# ----------------------------------------------------------------- round 22: idioms from real code (gen27)
def _i(values: list, dtype: torch.dtype = torch.int64) -> torch.Tensor:
    return torch.tensor(values, dtype=dtype)


_NAN, _INF = float("nan"), float("inf")


@case("idioms", [(_i([100, -100, 127, -128, 5, 90], torch.int8), _i([100, -100, 1, -1, 30, 2], torch.int8)),
                 (_i([-7, 64, 33, -128, 127, 0], torch.int8), _i([127, 64, 4, 2, -3, -128], torch.int8))])
class Int8Wraparound(nn.Module):
    """int8 sums, products and negation wrap (two's complement); a Python int keeps int8; abs(-128) is -128."""

    def forward(self, a, b):
        return a + b, a * b, a - 100, -a, a.abs(), a * 3 + b, (a + b).sum(), a.max() - a.min(), a // 2, a.cumsum(0)


@case("idioms", [(_i([0, 1, 200, 255, 128, 17], torch.uint8), _i([1, 255, 100, 1, 128, 3], torch.uint8))])
class Uint8ImageArithmetic(nn.Module):
    """Pixel arithmetic on uint8: wraparound below 0 and past 255, brightness without clamping, the float
    path clamped back, neg and bitwise not of uint8, and a sum that leaves uint8."""

    def forward(self, img, other):
        bright = (img.float() * 1.5 + 10).clamp(0, 255).to(torch.uint8)
        return (img - other, img + other, img * 2, img + 100, -img, ~img, bright, img.sum(), img // 3, img % 7,
                (img.int() - other.int()).abs().to(torch.uint8))


@case("idioms", [(_i([300, -300, 32767, -32768, 1000, 7], torch.int16), _i([200, 200, 2, 2, 1000, -9], torch.int16))])
class Int16Overflow(nn.Module):
    """int16 products past 32767 wrap; a cumprod and a prod leave int16 for int64; a 0-d int64 keeps int16."""

    def forward(self, a, b):
        return a * b, a + b, a * torch.tensor(3), a.cumprod(0), a.prod(), (a * b).to(torch.int32), a.float() * b


@case("idioms", [(_i([2**31 - 1, -2**31, 65536, 3], torch.int32), _i([2, 2, 65536, -1], torch.int32))])
class Int32Wraparound(nn.Module):
    """int32 products and sums wrap; the sum of int32 is int64 (no wrap); a hash of int32 ids."""

    def forward(self, a, b):
        return a * b, a + b, a.sum(), (a * 31 + b) % 1000, a - b, a.sum(dtype=torch.int32)


@case("idioms", [(_i([1, 2**40 + 3, -5, 123456789012]),), (_i([0, -1, 2**62, 7]),)])
class Int64HashMix(nn.Module):
    """A splitmix-style hash of int64 ids: multiplications that wrap past 2**63, xor with shifts,
    a non-negative bucket by remainder."""

    def forward(self, ids):
        h = ids * 6364136223846793005 + 1442695040888963407
        h = h ^ (h >> 33)
        h = h * -4658895280553007687
        return h, h % 1000, torch.remainder(h, 97), (h & 0xFFFF), h >> 60


@case("idioms", [(_i([2**53, 2**53 + 1, 2**53 + 2, -(2**53) - 1, 2**62 + 1, 9007199254740993]),)])
class Int64Beyond2Pow53(nn.Module):
    """int64 values a float64 cannot hold: comparisons, sort, max, argmax, equality and
    arithmetic on values that differ by 1 above 2**53."""

    def forward(self, x):
        return (x + 1, x == 2**53 + 1, x > 2**53, x.max(), x.argmax(), x.sort().values, x - x.flip(0), x.sum(),
                x // 3, x % 10, x.cumsum(0), torch.unique(x), x.max() - 1 == 2**62)


@case("idioms", [(_i([1, -1, 5, -8, 3]), _i([63, 64, 65, 70, 0]))])
class ShiftsPastTheWidth(nn.Module):
    """Bit shifts by the width and past it: torch defines a left shift by 64 or more as 0 and a right shift
    of a negative value as -1 (int64, int32, int16, int8, uint8)."""

    def forward(self, x, s):
        i32, i8, u8 = x.int(), x.to(torch.int8), x.abs().to(torch.uint8)
        return (x << s, x >> s, x << 64, x >> 70, i32 << 32, i32 >> 40, i32 << 31, i8 << 8, i8 >> 9,
                u8 << 9, u8 >> 8, x.to(torch.int16) << 17, torch.bitwise_left_shift(x, 3))


@case("idioms", [(randn(4), torch.tensor(2.5, dtype=torch.float64), torch.tensor(3), _i([1, 2, 3, 4], torch.int8),
                  torch.tensor(True), randn(4, seed=1).half())])
class ZeroDimPromotion(nn.Module):
    """0-dim tensors and Python scalars in type promotion: a 0-d float64 with float32 stays float32, a 0-d
    int64 with int8 stays int8, a 0-d float with an int tensor is the default float, a 0-d bool."""

    def forward(self, x, d, k, i8, t, h):
        return (x * d, i8 * k, i8 + d, k * 1.5, i8 * 2.5, i8 + True, t + k, t * 2.5, h * d, h + k, i8 / k,
                k / 2, i8 + x.sum(), d + k, i8 * t)


@case("idioms", [(randn(3, 4), _i([[1, 2, 3, 4], [5, 6, 7, 8], [9, 10, 11, 12]], torch.int32), randn(3, 4, seed=1).half())])
class WhereWithMixedScalars(nn.Module):
    """torch.where with a Python int and a float, an int32 tensor and a float, a half and a 0-d float32,
    bool results, and a where chain (the dtype of each by promotion)."""

    def forward(self, x, n, h):
        c = x > 0
        return (torch.where(c, 2, 3.5), torch.where(c, n, 0.5), torch.where(c, n, -1), torch.where(c, h, torch.tensor(9.0)),
                torch.where(c, False, True), torch.where(c, n, h), torch.where(n % 2 == 0, n, n.to(torch.int8)),
                torch.where(c, torch.where(n > 6, 1.0, 0), x), torch.where(c, x.double(), 1))


@case("idioms", [(torch.tensor([7.5, -7.5, -0.0, 0.0, 1.0, -1.0, 3.0, -3.0]),
                  torch.tensor([2.0, 2.0, 3.0, -3.0, 0.0, 0.0, -0.5, _INF]))])
class FloatFloorRemainderEdges(nn.Module):
    """Float floor division and remainder with negative operands, signed zeros, division by 0 (inf, nan)
    and by inf; fmod and remainder's signs differ."""

    def forward(self, a, b):
        return (a // b, a % b, torch.fmod(a, b), torch.remainder(a, b), torch.floor_divide(a, b), a / b,
                torch.div(a, b, rounding_mode="trunc"), a % -2.5, -7.5 // b, torch.remainder(a, 1.0), torch.frac(a))


@case("idioms", [(_i([7, -7, 0, 5, -1, 2**40]), _i([0, 0, 0, -2, 3, 0]))])
class IntTrueDivideByZero(nn.Module):
    """True division of ints by zero is float inf, -inf or nan; the mean of ints cast first; a guarded
    integer division (the divisor replaced where it is 0)."""

    def forward(self, a, b):
        safe = torch.where(b == 0, torch.ones_like(b), b)
        return a / b, torch.true_divide(a, b), a // safe, a % safe, a.float() / b, (a / b).isinf().sum()


@case("idioms", [(torch.tensor([[3.0, _NAN, 1.0, 2.0], [_INF, -_INF, 0.0, _NAN], [1.0, 1.0, -1.0, 5.0]]),)])
class NanInSortTopkArgmax(nn.Module):
    """nan sorts last ascending and first descending, counts as the largest in topk, argmax and max
    return its index; argmin too; msort and argsort agree."""

    def forward(self, x):
        up, down = x.sort(dim=-1, stable=True), x.sort(dim=-1, descending=True, stable=True)
        return (up.values, up.indices, down.values, down.indices, x.topk(2, -1).values, x.argmax(-1), x.argmin(-1),
                x.max(-1).values, x.max(-1).indices, x.min(0).values, x.argsort(dim=0, stable=True), x.amax(1), x.amin(0),
                x.topk(1, 0, largest=False).values)


@case("idioms", [(torch.tensor([2.0, _NAN, 1.0, 2.0, _INF, 1.0]),)])
class UniqueWithNanAndInf(nn.Module):
    """torch.unique of floats with nan and inf (nan is never equal to itself), with inverse and counts."""

    def forward(self, x):
        values, inverse, counts = torch.unique(x, return_inverse=True, return_counts=True)
        return values, inverse, counts, torch.unique(x[:4].nan_to_num(9.0))


@case("idioms", [(torch.tensor([[1.0, _NAN, 3.0], [_NAN, _NAN, 0.0], [-_INF, 2.0, _INF]]),)])
class NanAwareReductions(nn.Module):
    """median (nan wins) beside nanmedian, nansum and nanmean; logsumexp of -inf rows; max of infs;
    a softmax row of -inf everywhere (nan) beside one with a finite value."""

    def forward(self, x):
        masked = torch.tensor([[-_INF, -_INF, -_INF], [0.0, -_INF, -_INF], [1.0, 2.0, 3.0]])
        return (x.median(1).values, x.nanmedian(1).values, x.nansum(0), x.nanmean(1), torch.logsumexp(masked, 1),
                masked.softmax(1), x.clamp(-1, 1), torch.fmin(x, x.t()), x.sum(1), x.isfinite().all(1))


@case("idioms", [(randn(0, 6), randn(6, 3, seed=1))])
class EmptyBatchThroughMlp(nn.Module):
    """A batch of 0 rows through linear layers, layer norm, softmax, GELU, dropout in eval and a residual."""

    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.fc, self.norm = nn.Linear(6, 6), nn.LayerNorm(6)

    def forward(self, x, w):
        h = F.gelu(self.norm(self.fc(x))) + x
        return h @ w, (h @ w).softmax(-1), F.dropout(h, 0.1, False), h.sum(), h.mean(0), h.shape[0] + w


@case("idioms", [(randn(2, 0, 4), _i([], torch.int64), randn(5, 4, seed=1))])
class EmptyThroughIndexOps(nn.Module):
    """Empty indices and empty dims through gather, index_select, index_add, scatter, embedding,
    take_along_dim, cat with a non-empty tensor, and advanced indexing."""

    def forward(self, e, idx, table):
        return (table.index_select(0, idx), table[idx], F.embedding(idx, table), table.index_add(0, idx, table[idx]),
                torch.gather(e, 1, torch.zeros(2, 0, 4, dtype=torch.long)), torch.cat([e, e], 1),
                table.scatter(0, torch.zeros(0, 4, dtype=torch.long), table[:0]), e.transpose(0, 1).reshape(0, 8),
                torch.cat([table[:0], table]), table.new_zeros(0, 3) @ torch.ones(3, 4))


@case("idioms", [(randn(3, 0), randn(0, 2, 5))])
class EmptyScansSortsReductions(nn.Module):
    """Size-0 dims through sort, argsort, topk(0), cumsum, cumprod, flip, roll, amax over the non-empty dim,
    sum/prod/any/all/count_nonzero over the empty one (0, 1, False, True, 0), and std (nan)."""

    def forward(self, a, b):
        return (a.sort(1).values, a.argsort(1), a.topk(0, 1).values, a.cumsum(1), a.cumprod(0), a.flip(1), a.roll(1, 0),
                b.amax(1), a.sum(1), a.prod(1), (a > 0).any(1), (a > 0).all(1), torch.count_nonzero(a, 1), b.sum((1, 2)),
                a.logsumexp(1), b.max(2).values)


@case("idioms", [(randn(3, 0, 4), randn(1, 4, seed=1))])
class EmptyPointwiseAndShapes(nn.Module):
    """Pointwise ops, where, masked_fill, broadcasting and views of a tensor with a 0 dim; its numel and shape
    used as numbers."""

    def forward(self, e, b):
        return (e * b + 1, torch.where(e > 0, e, b), e.masked_fill(e < 0, 0.0), e.exp().clamp(max=1),
                e.permute(2, 0, 1).contiguous(), e.unsqueeze(1).expand(3, 2, 0, 4), b * e.numel() + e.shape[1],
                e.view(-1), e.flatten(0, 1), torch.stack([e, e], -1).shape[0] * b, F.softmax(e, 1), e.norm(dim=1))


class ExpandedAndStridedInputs(nn.Module):
    """Inputs given as expands (stride 0), a transpose and a stepped slice through cumsum, sort, gather,
    softmax, in-place work on a clone, and a matmul."""

    def forward(self, e, t, s):
        y = e.clone()
        y[:, 0] += 1
        return e.cumsum(0), t.sort(0).values, torch.gather(t, 1, e.long().abs() % t.shape[1]), s.softmax(0), y, s @ t


_strided = randn(8, 10, seed=5)
case("idioms", [(randn(1, 4).expand(3, 4), randn(4, 3, seed=1).t(), _strided[::2, 1::3][:, :3].t().contiguous().t()[:3]),
                (randn(3, 1, seed=2).expand(3, 4), randn(4, 3, seed=3).t(), _strided[1::2, ::3][:3, :3])])(
    ExpandedAndStridedInputs)


@case("idioms", [(randn(4, 6),), (randn(4, 6, seed=1),)])
class InplaceOnStridedSlices(nn.Module):
    """In-place updates through stepped and negative-start slices, an ellipsis select, a masked in-place
    update, copy_ of a broadcast row into a slice, and a chain of in-place ops on one view."""

    def forward(self, x):
        y = x.clone()
        y[1:, ::2] += 10
        y[..., -1].mul_(-1)
        y[-2:, 1:4:2] = y[:2, 0:1]
        v = y[:, 3:]
        v.sub_(1).div_(2).abs_()
        y[y < -1] *= 0.5
        y[0].copy_(torch.arange(6.0))
        return y, v


@case("idioms", [(randn(3, 4),), (randn(3, 4, seed=1),)])
class InplaceSeenThroughExpandedViews(nn.Module):
    """A view expanded from a buffer, then the buffer changed in place: the expanded view sees the change;
    an in-place add of an expanded operand; unsqueeze+expand of a row updated afterwards."""

    def forward(self, x):
        base = x.clone()
        wide = base[0].unsqueeze(0).expand(5, 4)
        seen = base.t().expand(2, 4, 3)
        base[0].add_(100)
        base.mul_(torch.tensor([1.0, 2.0, 3.0, 4.0]).expand(3, 4))
        acc = torch.zeros(3, 4)
        acc += x[:, :1].expand(3, 4)
        return wide.sum(0), seen[1], acc, base


@case("idioms", [(randn(2, 2, 5, 5), _i([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1]], torch.bool), randn(2, 5, seed=1))])
class MaskedFillBroadcast(nn.Module):
    """Attention-style masked_fill: a key mask broadcast over heads and queries, a causal mask broadcast over
    the batch, a 0-d tensor fill value, -inf fill then softmax, and masked_fill of an int tensor."""

    def forward(self, scores, keep, x):
        causal = torch.ones(5, 5, dtype=torch.bool).triu(1)
        masked = scores.masked_fill(~keep[:, None, None, :], float("-inf")).masked_fill(causal, -1e9)
        ids = torch.arange(10).view(2, 5).masked_fill(~keep, -100)
        return (masked.softmax(-1), x.masked_fill(x > 0.5, torch.tensor(0.5)), ids, x.masked_fill(keep[:1], 0),
                scores.masked_fill(keep[:, None, :, None], 2.0).sum((2, 3)))


@case("idioms", [(_i([[1, 1, 1, 0, 0], [0, 0, 1, 1, 1]]), _i([[True, False, True, True, False]], torch.bool))])
class CumsumOfBoolAndInt(nn.Module):
    """HF position ids from an attention mask (cumsum - 1, padded positions filled), cumsum and cumprod of
    bool (int64 results), of int8 (int64), of uint8 with dtype=uint8 (wraps), and logcumsumexp of a mask."""

    def forward(self, mask, flag):
        positions = (mask.cumsum(-1) - 1).masked_fill(mask == 0, 1)
        u8 = torch.full((6,), 100, dtype=torch.uint8)
        return (positions, flag.cumsum(-1), flag.cumprod(-1), mask.to(torch.int8).cumsum(0), u8.cumsum(0, dtype=torch.uint8),
                mask.bool().cumsum(1).dtype == torch.int64, mask.cumprod(1), mask.int().cumsum(1),
                flag.cumsum(1, dtype=torch.float32), mask.flip(-1).cumsum(-1).flip(-1), torch.logcumsumexp(mask.float(), 1))


@case("idioms", [(torch.tensor([5.0, 1.0, 3.0, 3.0, 9.0]), torch.tensor([[0.0, 3.0, 3.5], [9.0, 10.0, 1.0]])),
                 (torch.tensor([2.0, -1.0, 2.0, 8.0, 0.0]), torch.tensor([[2.0, -5.0, 8.0], [0.0, 1.0, 2.0]]))])
class SearchsortedWithSorter(nn.Module):
    """searchsorted of an unsorted sequence through its argsort (sorter=), left and right, side='right',
    a Python scalar value, a batch of sorted rows, and bucketize with right= on int boundaries."""

    def forward(self, seq, values):
        order = seq.argsort(stable=True)
        rows = torch.stack([seq.sort().values, seq.sort().values * 2])
        return (torch.searchsorted(seq, values, sorter=order), torch.searchsorted(seq, values, right=True, sorter=order),
                torch.searchsorted(seq, values, side="right", sorter=order), torch.searchsorted(rows, values),
                torch.searchsorted(seq.sort().values, 3.0), torch.bucketize(values, _i([0, 2, 3, 9]), right=True),
                torch.bucketize(values.long(), _i([0, 2, 3, 9])), torch.searchsorted(rows, values, out_int32=True, right=True))


@case("idioms", [(randn(3, 6), torch.tensor([0.0, 0.25, 0.5, 0.75, 1.0]))])
class HistogramByBucketize(nn.Module):
    """A histogram by bucketize (right=True) and scatter_add of ones, clamped to the last bin; quantile
    bins from searchsorted of a cumulative distribution."""

    def forward(self, x, edges):
        u = torch.sigmoid(x)
        bins = torch.bucketize(u, edges, right=True).clamp(1, 4) - 1
        hist = torch.zeros(3, 4, dtype=torch.long).scatter_add_(-1, bins, torch.ones_like(bins))
        cdf = hist.cumsum(-1).float() / hist.sum(-1, keepdim=True)
        return bins, hist, torch.searchsorted(cdf.contiguous(), torch.full((3, 1), 0.5)), u.histc(4, 0, 1)


@case("idioms", [(randn(2, 3, 5), _i([[[4, 0, 1], [2, 2, 3], [0, 4, 4]], [[1, 1, 1], [3, 0, 2], [4, 3, 0]]]))])
class GatherScatterNegativeDims(nn.Module):
    """gather, scatter, scatter_add, scatter_reduce and take_along_dim with dim=-1 and dim=-2, a scalar
    scatter value, and one-hot by scatter along -1."""

    def forward(self, x, idx):
        rows = idx[:, :, :2] % 3
        return (x.gather(-1, idx), x.gather(-2, rows.transpose(-1, -2)), x.scatter(-1, idx, 0.0),
                torch.zeros(2, 3, 5).scatter_add(-1, idx, x[..., :3]), x.scatter_reduce(-1, idx, x[..., :3] * 2, "amax"),
                torch.take_along_dim(x, idx, -1), torch.zeros(2, 3, 5).scatter_(-1, idx[..., :1], 1.0),
                x.scatter(-2, rows.transpose(-1, -2), -x[:, :2]), x.index_select(-1, idx[0, 0]))


@case("idioms", [(randn(4, 4), randn(2, 3, 3, seed=1), randn(3, 3, 2, seed=2), randn(4, seed=3))])
class EinsumRepeatedIndices(nn.Module):
    """einsum with a repeated index in one operand: a diagonal ('ii->i'), a trace ('ii->'), batched
    diagonals ('bii->bi'), 'iij->ij', a diagonal times a vector, and 'ii,i->' (a weighted trace)."""

    def forward(self, m, b, t, v):
        return (torch.einsum("ii->i", m), torch.einsum("ii->", m), torch.einsum("bii->bi", b), torch.einsum("iij->ij", t),
                torch.einsum("ii,i->i", m, v), torch.einsum("ii,i->", m, v), torch.einsum("bii->b", b),
                torch.einsum("iji->j", t[:, :, :2].transpose(1, 2).reshape(3, 2, 3)[:2, :, :2]))


@case("idioms", [(randn(2, 3, 4, 2, 3), randn(3, 1, 2, 1, seed=1))])
class FiveDimReductionsAndViews(nn.Module):
    """Rank-5 tensors: reductions over several non-adjacent dims, softmax along the middle, cumsum on
    dim 3, movedim, flatten/unflatten, a broadcast add of rank 4 and max over a dim."""

    def forward(self, x, b):
        return (x.sum((1, 3)), x.amax((0, 2, 4), keepdim=True), x.softmax(2), x.cumsum(3), x.movedim((1, 4), (4, 0)),
                x.flatten(1, 3).unflatten(1, (6, 4)), x + b, x.max(2).indices, x.std((1, 4)), x.mean(-1).transpose(0, 3))


@case("idioms", [(randn(1, 2, 2, 4, 3, 2),)])
class SixDimPermutes(nn.Module):
    """Rank-6 permutes and reshapes (3-D pixel shuffle), a 7-D broadcast, and a rank-6 einsum."""

    def forward(self, x):
        b, c, r, d, h, w = x.shape
        shuffled = x.permute(0, 1, 3, 2, 4, 5).reshape(b, c, d * r, h, w)
        big = x.unsqueeze(-1) * torch.arange(3.0)
        return shuffled, big.sum(-1), big.amax(3), torch.einsum("abcdef->afedcb", x), x.transpose(2, 5).flip(3).cumsum(4)


@case("idioms", [(randn(1, 2, 4, 6, 6),), (randn(1, 2, 4, 6, 6, seed=1),)])
class VideoConv3dBlock(nn.Module):
    """A video block on (batch, channels, time, height, width): conv3d, group norm, avg/max pool3d,
    trilinear interpolation and a per-frame (batch * time) reshape."""

    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.conv, self.norm = nn.Conv3d(2, 4, 3, padding=1), nn.GroupNorm(2, 4)

    def forward(self, x):
        h = F.silu(self.norm(self.conv(x)))
        frames = h.permute(0, 2, 1, 3, 4).reshape(-1, 4, 6, 6)
        return (F.avg_pool3d(h, 2), F.max_pool3d(h, (1, 2, 2)), F.interpolate(h, scale_factor=(1, 0.5, 0.5), mode="trilinear"),
                frames.mean((2, 3)))


@case("idioms", [(randn(4, 64).bfloat16(), randn(4, 64, seed=1).half())])
class Bf16F16Reductions(nn.Module):
    """Reductions of bfloat16 and float16 (float accumulation, rounded once): sum, mean, var, softmax,
    cumsum, norm, prod, logsumexp, max and a f16 sum past 65504 (inf)."""

    def forward(self, b, h):
        big = torch.full((8,), 30000.0, dtype=torch.float16)
        return (b.sum(-1), b.mean(0), b.var(1), b.softmax(-1), b.cumsum(-1)[:, -4:], b.norm(dim=1), b[:, :6].prod(1),
                b.logsumexp(1), b.max(1).values, h.sum(-1), h.mean(), h.float().sum(0).half(), big.sum(), big.mean(),
                h.sum(dtype=torch.float32), (b * h).sum(1))


@case("idioms", [(randn(3, 4, 4), randn(3, 4, 2, seed=1))])
class LinalgSolveInvOnBatches(nn.Module):
    """torch.linalg on batches: solve with a batch and a broadcast right side, inv, det and slogdet
    (negative determinants), matrix_power with a negative exponent, solve_triangular both sides."""

    def forward(self, a, b):
        a = a + 4 * torch.eye(4)
        sign, logabs = torch.linalg.slogdet(a)
        tri = a.tril()
        return (torch.linalg.solve(a, b), torch.linalg.solve(a, b[0]), torch.linalg.inv(a), torch.linalg.det(a),
                sign, logabs, torch.linalg.matrix_power(a, -2), torch.linalg.solve_triangular(tri, b, upper=False),
                torch.linalg.solve_triangular(tri.mT, b.mT, upper=True, left=False))


@case("idioms", [(randn(2, 5, 3),)])
class LinalgDecompositionsOnBatches(nn.Module):
    """Batched Cholesky of a Gram matrix and cholesky_solve, eigvalsh, svdvals, matrix norms (fro, nuc, 2),
    vector norms with inf orders, pinv and lstsq of a tall batch, cond."""

    def forward(self, x):
        gram = x.mT @ x + torch.eye(3)
        low = torch.linalg.cholesky(gram)
        return (low, torch.cholesky_solve(x.mT[..., :1], low), torch.linalg.eigvalsh(gram), torch.linalg.svdvals(x),
                torch.linalg.matrix_norm(x), torch.linalg.matrix_norm(x, "nuc"), torch.linalg.matrix_norm(x, 2),
                torch.linalg.vector_norm(x, float("inf"), dim=-1), torch.linalg.vector_norm(x, -float("inf"), dim=(1, 2)),
                torch.linalg.pinv(x), torch.linalg.lstsq(x, x[..., :1]).solution, torch.linalg.cond(gram))


@case("idioms", [(randn(2, 4, 4),)])
class LinalgLuAndQr(nn.Module):
    """lu_factor and lu_solve on a batch, the LU's pivots, qr's R diagonal magnitudes, householder-free
    checks (Q @ R reproduces the input), eigvals of a symmetric batch via eigh's values, det of a singular matrix."""

    def forward(self, x):
        a = x + 3 * torch.eye(4)
        lu, pivots = torch.linalg.lu_factor(a)
        q, r = torch.linalg.qr(a)
        singular = torch.stack([a[0], a[0]])[:, :, :2].repeat(1, 1, 2)
        return (torch.linalg.lu_solve(lu, pivots, a[..., :2]), pivots, r.diagonal(dim1=-2, dim2=-1).abs(), q @ r,
                torch.linalg.eigh(a + a.mT).eigenvalues, torch.linalg.det(singular), torch.linalg.cross(a[..., :3], x[..., 1:]),
                torch.linalg.multi_dot([a[0], a[1], a[0]]), torch.linalg.vecdot(a, x, dim=-1))


@case("idioms", [(randn(2, 8) * 2,), (randn(2, 8, seed=1) * 2,)])
class TopPTopKLogitsFilter(nn.Module):
    """transformers' top-p and top-k logits processors: sort descending, cumulative softmax, the removal mask
    shifted right and scattered back along -1, -inf fills, and a renormalized distribution."""

    def forward(self, logits):
        kth = torch.topk(logits, 3)[0][..., -1, None]
        top_k = logits.masked_fill(logits < kth, -float("inf"))
        sorted_logits, sorted_idx = torch.sort(logits, descending=False)
        cumulative = sorted_logits.softmax(-1).cumsum(-1)
        remove = cumulative <= 1 - 0.8
        remove[..., -1:] = 0
        remove_back = remove.scatter(-1, sorted_idx, remove)
        top_p = logits.masked_fill(remove_back, -float("inf"))
        return top_k, top_p, top_p.softmax(-1), remove_back.sum(-1)


@case("idioms", [(randn(2, 6), _i([[0, 3, 3, 5], [1, 1, 2, 4]]))])
class RepetitionPenalty(nn.Module):
    """transformers' repetition penalty: gather the scores of seen tokens (duplicates), divide the positive
    and multiply the negative ones, scatter back along -1."""

    def forward(self, scores, seen):
        score = torch.gather(scores, 1, seen)
        score = torch.where(score < 0, score * 1.3, score / 1.3)
        return scores.scatter(1, seen, score), scores.scatter(-1, seen, -score).argmax(-1)


@case("idioms", [(randn(4, 5), _i([1, -100, 4, -100])), (randn(4, 5, seed=1), _i([-100, -100, -100, -100]))])
class CrossEntropyIgnoreIndex(nn.Module):
    """cross entropy with ignore_index -100 and label smoothing, mean over the kept rows (nan when every row
    is ignored), sum and none reductions, and the shifted-label causal-LM form."""

    def forward(self, logits, labels):
        return (F.cross_entropy(logits, labels), F.cross_entropy(logits, labels, label_smoothing=0.1),
                F.cross_entropy(logits, labels, reduction="sum"), F.cross_entropy(logits, labels, reduction="none"),
                F.nll_loss(logits.log_softmax(-1)[:-1], labels[1:], ignore_index=-100), (labels != -100).sum())


@case("idioms", [(randn(3, 8) * 4,), (randn(3, 8, seed=1) * 0.01,)])
class Int8QuantizeDequantize(nn.Module):
    """Symmetric int8 quantization per row (round half to even, clamp, cast), asymmetric uint8 with a zero
    point, integer accumulation of int8 products in int32, and dequantization."""

    def forward(self, x):
        scale = x.abs().amax(-1, keepdim=True).clamp(min=1e-8) / 127
        q = (x / scale).round().clamp(-128, 127).to(torch.int8)
        lo, hi = x.amin(-1, keepdim=True), x.amax(-1, keepdim=True)
        uscale = ((hi - lo) / 255).clamp(min=1e-8)
        zero = (-lo / uscale).round().clamp(0, 255).to(torch.uint8)
        uq = (x / uscale + zero).round().clamp(0, 255).to(torch.uint8)
        acc = q.int() @ q.int().t()
        return q, q.float() * scale, uq, zero, (uq.float() - zero.float()) * uscale, acc, acc.float() * scale * scale.t()


@case("idioms", [(torch.tensor([0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 0.25, -0.0, 1.45, 2.675]),)])
class RoundingModes(nn.Module):
    """round half to even, round to decimals, floor/ceil/trunc of negatives (signed zeros), and casts to int
    (toward zero)."""

    def forward(self, x):
        return (x.round(), x.round(decimals=1), x.floor(), x.ceil(), x.trunc(), x.long(), (x * 10).int(), x.to(torch.int8),
                torch.signbit(x.ceil()), x.fix(), (x * 2).round() / 2)


@case("idioms", [(torch.tensor([-0.7, 0.7, _NAN, 0.0, -3.9, 255.9]), _i([300, -1, -129, 65536, 2**40, 127]))])
class NarrowingCasts(nn.Module):
    """Casts that narrow: float to int64 (toward zero), float to bool (nan is True), int64 to int8, uint8,
    int16 and int32 (modular), bool back to float and int, and half of an int."""

    def forward(self, f, n):
        finite = f.nan_to_num(0.0)
        return (finite.long(), f.bool(), n.to(torch.int8), n.to(torch.uint8), n.to(torch.int16), n.int(), n.bool().float(),
                n.half(), finite.to(torch.uint8)[:5], n.to(torch.int8).to(torch.int64) + n.to(torch.uint8))


@case("idioms", [(_i([0, 5, 255], torch.uint8), _i([-5, 0, 100], torch.int8), _i([1, 2, 3]))])
class ComparisonsWithOutOfRangeScalars(nn.Module):
    """Comparisons of small int tensors with Python ints outside their range (torch casts the scalar to the
    tensor's dtype first: -1 as uint8 is 255), and of ints with floats."""

    def forward(self, u, i8, n):
        return (u < -1, i8 > 200, u == 256, i8 == 2.5, n > 1.5, n == 2.0, u >= 255, i8 < -128, n != 2.5,
                torch.eq(u, 0), torch.lt(i8, 100.5))


@case("idioms", [(_i([[True, False, True], [False, False, True]], torch.bool), _i([[3, -2, 0], [1, 4, -6]]))])
class BoolArithmetic(nn.Module):
    """bool + bool (or), bool * bool (and), bool with int, sum/max/min of bool, bool to float mean, ~bool,
    logical ops of ints, and where on bool results."""

    def forward(self, b, n):
        return (b + b, b * b, b & (n > 0), b + n, b * 2.5, b.sum(0), b.max(1).values, b.min(), b.float().mean(1), ~b,
                torch.logical_and(n, b), torch.logical_not(n), b.any(0), b.all(), b | b.flip(1), (b ^ True))


@case("idioms", [(_i([12, -18, 0, 7, -9, 0]), _i([8, 12, 5, 0, -6, 0]))])
class GcdLcmAndIntPow(nn.Module):
    """gcd and lcm with negative operands and zeros, int8 powers that overflow, 2 ** n as int64, square,
    and integer abs/sign/neg."""

    def forward(self, a, b):
        i8 = a.to(torch.int8)
        return (torch.gcd(a, b), torch.lcm(a, b), i8 ** 3, i8.pow(2), 2 ** b.abs(), a.square(), a.abs(), a.sign(), -a,
                torch.pow(a, 2), (a * a).to(torch.int16) ** 2)


@case("idioms", [(_i([-3, 0, 2, 9]), randn(4))])
class ClampWithMixedBounds(nn.Module):
    """clamp of int tensors by float bounds (float results), by tensor bounds, clamp with min above max
    (every value is max), clip, clamp_min of uint8, and clamp of floats by int tensors."""

    def forward(self, n, x):
        return (n.clamp(min=0.5), n.clamp(max=1.5), n.clamp(n.flip(0), n + 1), n.clamp(5, 1), x.clamp(2.0, -2.0),
                n.clip(-1, 1), n.to(torch.uint8).clamp_min(3), x.clamp(n - 1, n + 1), torch.clamp(x, min=torch.tensor(0.0)))


@case("idioms", [(randn(4).half() * 100, randn(4, seed=1).bfloat16() * 100)])
class HalfPrecisionOverflow(nn.Module):
    """float16 overflow to inf (a product, exp), a small addend lost in float16, softmax and layer_norm
    of float16 and bfloat16, and bfloat16's range beyond float16's."""

    def forward(self, h, b):
        return (h * 1000, h.exp(), h + 1e-4, h.softmax(0), F.layer_norm(h, (4,)), b * 1e10, b.float().half(), (b * 1000).half(),
                (h + 60000) - 60000, b.softmax(0), h.sigmoid(), h.tanh())


@case("idioms", [(torch.tensor([[0.0, 0.0, 0.0], [3.0, 4.0, 0.0], [1e-20, 0.0, 0.0]]), randn(1, 3))])
class ZeroVectorNorms(nn.Module):
    """F.normalize and cosine_similarity of zero and tiny vectors (eps), var and std of one element (nan),
    std with correction 0, and pairwise_distance."""

    def forward(self, x, y):
        return (F.normalize(x, dim=-1), F.cosine_similarity(x, y.expand(3, 3)), x[:, :1].var(1), x.std(1, correction=0),
                F.pairwise_distance(x, y), x.norm(dim=1), torch.linalg.vector_norm(x, 0, dim=1), x[0].div(x[0].norm()))


@case("idioms", [(torch.tensor([[2.0, 2.0, 1.0], [0.0, 0.0, 0.0], [-1.0, 3.0, 3.0]]), _i([[4, 4, 1], [0, 7, 7]], torch.int8))])
class ArgmaxTies(nn.Module):
    """argmax/argmin and max/min over a dim on ties give the first index; all-equal rows; int8 argmax;
    keepdim forms and the flattened argmax."""

    def forward(self, x, n):
        return (x.argmax(1), x.argmin(1), x.max(1).indices, x.min(0).indices, n.argmax(1), n.max(1), n.argmin(0, keepdim=True),
                x.argmax(), x.max(0, keepdim=True).indices, torch.max(x, -1)[0])


@case("idioms", [(randn(3),)])
class ArangeLinspaceEdges(nn.Module):
    """arange with a float step (its length by ceil), a negative step, int64 starts past 2**40, linspace with
    one step, logspace, arange of float16 and an int range sized from a shape."""

    def forward(self, x):
        return (torch.arange(0, 1, 0.1), torch.arange(5, -3, -2), torch.arange(2**40, 2**40 + 3), torch.linspace(-1, 1, 1),
                torch.linspace(0, 1, 5) * x[0], torch.logspace(0, 2, 3), torch.arange(4, dtype=torch.float16),
                torch.arange(x.shape[0]) * x, torch.arange(1.5, 4.0), torch.linspace(3, 3, 4))


@case("idioms", [(randn(5, 3),), (randn(5, 3, seed=1),)])
class PairwiseDistances(nn.Module):
    """cdist (p=2, p=1, p=inf) of a set with itself (a zero diagonal), the upper triangle by triu_indices,
    pdist, and a nearest-neighbour argmin with the diagonal masked."""

    def forward(self, x):
        d = torch.cdist(x, x)
        i, j = torch.triu_indices(5, 5, 1)
        nearest = d.masked_fill(torch.eye(5, dtype=torch.bool), float("inf")).argmin(1)
        return d, torch.cdist(x, x, p=1), torch.cdist(x, x[:2], p=float("inf")), d[i, j], F.pdist(x), nearest


@case("idioms", [(randn(4, 5), _i([-1, 0, -4, 2]))])
class NegativeIndexing(nn.Module):
    """Indexing with negative values in index tensors, negative slices and steps by narrow, roll and flip
    with negative dims and shifts, select with -1, and a negative index_put."""

    def forward(self, x, idx):
        y = x.clone()
        y[idx[:2], -1] = -5.0
        return (x[idx], x[:, idx[:3]], x[-1], x[-3:-1, -2:], x.narrow(-1, -3, 2), torch.roll(x, (-1, 2), (-2, -1)),
                x.flip(-1, -2), x.select(-2, -1), y, x[idx, idx.flip(0) + 1])


@case("idioms", [(torch.tensor([[[[-_INF, 1.0, -_INF, -_INF], [2.0, -_INF, -_INF, -_INF], [0.0, 0.0, -_INF, -_INF],
                                   [-_INF, -_INF, -_INF, -_INF]]]]),)])
class PoolingOverInfinities(nn.Module):
    """max_pool2d over -inf windows (an all -inf window stays -inf), avg_pool2d with padding counted and
    not counted, adaptive pools, and max_pool with indices."""

    def forward(self, x):
        finite = x.nan_to_num(neginf=-3.0)
        values, indices = F.max_pool2d(x, 2, return_indices=True)
        return (values, indices, F.max_pool2d(x, 3, 1, 1), F.avg_pool2d(finite, 3, 1, 1), F.avg_pool2d(finite, 3, 1, 1, count_include_pad=False),
                F.adaptive_max_pool2d(x, (3, 1)), F.adaptive_avg_pool2d(finite, (3, 2)), F.lp_pool2d(finite.abs(), 2, 2))


@case("idioms", [(torch.tensor([[1.0, _NAN, 0.5, 2.0, -1.0], [_INF, 1.0, -_INF, 3.0, 0.0]]),)])
class ScansWithNanAndInf(nn.Module):
    """cummax/cummin propagate nan (and index it), cumsum of inf and -inf is nan onwards, cumprod by 0 and
    inf, logcumsumexp of infinities."""

    def forward(self, x):
        values, indices = x.cummax(1)
        return (values, indices, x.cummin(1).values, x.cummin(1).indices, x.cumsum(1), x.cumprod(1),
                torch.logcumsumexp(x.nan_to_num(0.0), 1), x.flip(1).cummax(1).values)


@case("idioms", [(torch.tensor([0.0, -0.0, 1.0, -1.0, _NAN, _INF]), torch.tensor([-0.0, 0.0, _NAN, 1.0, _NAN, _INF]))])
class NanAndSignedZeroComparisons(nn.Module):
    """nan is unequal to itself; -0.0 equals 0.0 but keeps its sign through copysign, atan2 and division;
    isclose with equal_nan; maximum/fmax; sort and unique treat the zeros as equal."""

    def forward(self, a, b):
        return (a == b, a != b, a < b, torch.isclose(a, b, equal_nan=True), torch.copysign(torch.ones(6), a), torch.atan2(a, b),
                1.0 / a, torch.maximum(a, b), torch.fmax(a, b), torch.signbit(a), a.sort(stable=True).indices,
                torch.eq(a, a).sum(), torch.hypot(a, b))


@case("idioms", [(torch.tensor([1e16, 1.0, -1e16, 3.0, 1e-300], dtype=torch.float64), randn(5))])
class Float64Precision(nn.Module):
    """float64 arithmetic a float32 path would lose: 1e16 + 1 - 1e16, a cumsum through cancellation,
    tiny values past float32's range, promotion of float32 with float64, and exp/log near 1."""

    def forward(self, d, f):
        return (d + 1 - d, d.cumsum(0), d * 1e-10, d[4] * 1e-10, f * d, (f.double() + 1e-12) - f.double(), torch.log1p(d[4:]),
                torch.expm1(d[4:]), d.sum(), d.prod(), (d[1] + 1e-15) - d[1])


@case("idioms", [(_i([3, 0, 4, 1, 4, 0]), randn(6))])
class OneHotAndBincount(nn.Module):
    """one_hot with a fixed class count, bincount with minlength and weights (a length read from the data,
    bounded by minlength here), and class frequencies."""

    def forward(self, labels, w):
        onehot = F.one_hot(labels, 6)
        return onehot, onehot.sum(0), torch.bincount(labels, minlength=6), torch.bincount(labels, w, minlength=6), onehot.float() @ torch.arange(6.0)


@case("idioms", [(_i([[5, 2, 2, 9], [0, 0, 7, -1]]), _i([3, 1, 3, 0, 2], torch.uint8), _i([True, False, True], torch.bool))])
class SortAndTopkOfInts(nn.Module):
    """sort and topk of int64 with ties (stable), sort of uint8, sort of bool, kthvalue and mode of ints,
    argsort descending stable."""

    def forward(self, n, u, b):
        return (n.sort(dim=1, stable=True), u.sort(), b.sort(stable=True).values, n.topk(2, 1).values, n.kthvalue(2, 1).values,
                n.argsort(dim=1, descending=True, stable=True), u.topk(3).values, n.msort(), n.amax(0), u.argsort(stable=True))


@case("idioms", [(randn(2, 3), randn(3, seed=1))])
class InterleaveRepeatTile(nn.Module):
    """Interleaving by stack and flatten, repeat_interleave by an int on two dims, tile, repeat with more dims,
    expand then reshape (a copy), and a strided gather back."""

    def forward(self, a, b):
        inter = torch.stack([a, a * 10], -1).flatten(-2)
        return (inter, inter[:, ::2], a.repeat_interleave(2, 0), a.repeat_interleave(3, -1), a.tile(2, 1), b.tile((2, 2)),
                a.repeat(2, 1, 2), b.expand(2, 3).reshape(-1), torch.cat([a, b[None]]).repeat_interleave(torch.tensor([1, 0, 2]), 0))


@case("idioms", [(randn(3, 4), _i([0, 2, 4, 3]))])
class LogSoftmaxMaskedRows(nn.Module):
    """log_softmax and log of a softmax over -inf masked positions (-inf results, nan on an all-masked row),
    an nll_loss gathering them, and masked mean pooling by lengths."""

    def forward(self, x, lengths):
        mask = torch.arange(4)[None, :] < lengths[:3, None]
        masked = x.masked_fill(~mask, float("-inf"))
        logp = masked.log_softmax(-1)
        pooled = (x * mask).sum(1) / mask.sum(1).clamp(min=1)
        return logp, masked.softmax(-1), logp.nan_to_num(neginf=0.0).sum(-1), pooled, mask.sum(1)


@case("idioms", [(randn(2, 3).abs() + 0.1, randn(2, 3, seed=1))])
class SpecialFunctionEdges(nn.Module):
    """Special functions at their edges: xlogy with 0 * log 0, log of 0 (-inf), sqrt and log of negatives
    (nan), rsqrt of 0 (inf), sinc at 0, logit with eps, erfinv at +-1, digamma and lgamma."""

    def forward(self, p, x):
        zero = torch.zeros(2, 3)
        return (torch.xlogy(zero, zero), torch.log(zero), torch.sqrt(x), torch.log(x), torch.rsqrt(zero), torch.sinc(x * 0),
                torch.logit(p.clamp(max=1), eps=1e-6), torch.erfinv(torch.tensor([1.0, -1.0, 0.5])), torch.special.xlog1py(x, p),
                torch.lgamma(p), torch.digamma(p), torch.special.entr(p), torch.log2(p), x.pow(0.5), x.pow(-1))


@case("idioms", [(randn(3, 5),), (randn(3, 5, seed=1),)])
class MaskedAssignOnSliceViews(nn.Module):
    """Boolean-mask assignment into a slice view (`y[:, 1:][m] = 0`), index_put through a transposed view,
    fill_ on a chain of views, and masked_scatter with a broadcast mask."""

    def forward(self, x):
        y = x.clone()
        view = y[:, 1:]
        view[view > 0] = 0.0
        z = x.clone()
        z.t()[1:3, 0] = torch.tensor([7.0, 8.0])
        w = x.clone()
        w.view(5, 3).t()[1].fill_(-1)
        keep = torch.tensor([True, False, True, False, True])
        return y, z, w, x.masked_scatter(keep.expand(3, 5), torch.arange(15.0)), view.sum()


@case("idioms", [(_i([1, -2, 100], torch.int8), _i([200, 0, 3], torch.uint8), torch.tensor([True, False, True]))])
class WhereAcrossIntKinds(nn.Module):
    """torch.where between int8 and uint8 (int16), int8 and bool, uint8 and a Python float, and a
    maximum/minimum across those dtypes."""

    def forward(self, i8, u8, c):
        return (torch.where(c, i8, u8), torch.where(c, i8, c), torch.where(c, u8, 0.5), torch.maximum(i8, u8), torch.minimum(u8, c),
                i8 + u8, u8 * i8, torch.where(c, u8, -1).dtype == torch.uint8)


@case("idioms", [(randn(2, 3, 4, 4),)])
class DiagonalsOfBatches(nn.Module):
    """diagonal with positive and negative offsets over the last dims and over the first two, diag_embed
    with an offset, diagonal_scatter, and eye-masked updates of a batch of matrices."""

    def forward(self, x):
        d = x.diagonal(-1, -2, -1)
        eye = torch.eye(4, dtype=torch.bool)
        return (d, x.diagonal(1, -2, -1), x.diagonal(0, 0, 1), torch.diag_embed(d, 1), torch.diagonal_scatter(x, x.diagonal(0, -2, -1) * 0, 0, -2, -1),
                x.masked_fill(eye, 0).sum((-2, -1)), x.diagonal(-1, -1, -2).sum(-1), torch.diag(x[0, 0], -2))


@case("idioms", [(randn(2, 4, 3), _i([[1, 0, 1, 1], [0, 0, 0, 0]], torch.bool))])
class MaskedMeanWithEmptyRows(nn.Module):
    """A masked mean where a whole row is masked out (0/0 is nan, guarded by clamp), masked max by -inf
    fill (an all-masked row is -inf), and the nan replaced by where."""

    def forward(self, x, keep):
        m = keep[..., None]
        count = m.sum(1)
        raw = (x * m).sum(1) / count
        guarded = (x * m).sum(1) / count.clamp(min=1)
        mx = x.masked_fill(~m, float("-inf")).amax(1)
        return raw, guarded, mx, torch.where(count > 0, raw, torch.zeros_like(raw)), torch.isnan(raw).any(-1)


@case("idioms", [(randn(3, 4),), (randn(3, 4, seed=1),)])
class InplaceArithmeticDtypes(nn.Module):
    """In-place ops keep the destination's dtype: an int tensor += a float (truncated), a uint8 -= wraps,
    a float16 *= a float32, a bool |= , and an int8 *= overflows."""

    def forward(self, x):
        n = torch.arange(12).view(3, 4)
        n += 2
        n *= 3
        u = torch.full((3, 4), 5, dtype=torch.uint8)
        u -= (x > 0).to(torch.uint8) * 7
        h = x.half()
        h *= x
        b = x > 0
        b |= x < -1
        i8 = (x * 50).to(torch.int8)
        i8 *= 4
        k = torch.zeros(3, 4, dtype=torch.long)
        k.add_((x * 10).long())
        return n, u, h, b, i8, k


@case("idioms", [(_i([1, -1, 5, -8, 3, 2**40]), _i([-1, -1, -2, 1, -64, 2]))])
class ShiftsByNegativeAmounts(nn.Module):
    """Shifts by negative amounts (torch: a left shift by < 0 is 0, a right shift by < 0 is 0 or -1 by
    sign) and by an int8 amount (promoted), next to ordinary shifts."""

    def forward(self, x, s):
        return (torch.bitwise_left_shift(x, s), x >> s, x.int() << s.int(), x.to(torch.int8) >> s.to(torch.int8),
                x << s.to(torch.int8), x.abs().to(torch.uint8) >> s.to(torch.uint8))


@case("idioms", [(_i([-128, -7, 127, 0], torch.int8), _i([-1, 2, -1, 5], torch.int8))])
class Int8DivisionCorners(nn.Module):
    """-128 // -1 in int8 (wraps to -128), remainder and fmod of negatives by -1 and by positive divisors, and
    truncating division."""

    def forward(self, a, b):
        return a // b, a % b, torch.fmod(a, b), torch.div(a, b, rounding_mode="trunc"), a // -1, a % 3, a / b


@case("idioms", [(_i([3, -5, 2**20], torch.int32), _i([2**53 + 1, 2**24 + 1, -(2**60) - 1]))])
class PythonScalarsAgainstIntTensors(nn.Module):
    """Python scalars with int tensors: an int past int32's range times an int32 tensor (the scalar is
    cast to int32 first), int64 values past 2**53 compared with floats and added to them (float32, the
    default dtype), and int64 to float32 rounding."""

    def forward(self, i32, big):
        return (i32 * 2**40, i32 + 2**33, big == float(2**53), big + 0.5, big > 1.5, big.float(), big * 1.0,
                big.double(), (big - 1) // 2, i32 * 3_000_000_000)


@case("idioms", [(torch.tensor([65520.0, 1e-8, 3.0e-5, -70000.0, 1.00390625, 1.01171875, _NAN, 2.0**-24]),)])
class FloatNarrowingRounding(nn.Module):
    """float32 to float16 (overflow to inf, subnormals, underflow to 0) and to bfloat16 (round to nearest
    even on ties), and back; float64 to float32 ties."""

    def forward(self, x):
        d = torch.tensor([1.0 + 2.0**-24, 1.0 + 3 * 2.0**-24, 1e-46], dtype=torch.float64)
        return x.half(), x.bfloat16(), x.half().float(), x.bfloat16().float(), d.float(), (x.bfloat16() + 1).float(), x.half().round()


@case("idioms", [(randn(2, 4096).bfloat16() + 1, randn(2, 2048, seed=1).half() + 1)])
class LongBf16Reductions(nn.Module):
    """Reductions over 4096 bfloat16 and 2048 float16 values (a bfloat16 accumulator would drift): sum,
    mean, var_mean, norm, a bf16 matmul accumulated in float, and cumsum's last value."""

    def forward(self, b, h):
        v, m = torch.var_mean(b, 1)
        return (b.sum(1), b.mean(1), v, m, b.norm(dim=1), b[:, :64] @ b[:, :64].t(), h.sum(1), h.mean(1), h.cumsum(1)[:, -1],
                b.float().sum(1).bfloat16(), h.std(1))


@case("idioms", [(torch.tensor([1.0, 3.0, 3.0, 7.0]), torch.tensor([_NAN, -_INF, _INF, 3.0, 0.5]), _i([0, 2, 4]))])
class SearchsortedOfNanAndInf(nn.Module):
    """searchsorted and bucketize of nan (past the end), -inf and inf, int boundaries searched with floats,
    and float boundaries searched with ints."""

    def forward(self, seq, values, ints):
        return (torch.searchsorted(seq, values), torch.searchsorted(seq, values, right=True), torch.bucketize(values, seq),
                torch.searchsorted(ints, values.nan_to_num(0.0)), torch.searchsorted(seq, ints), torch.bucketize(ints, seq, right=True))


@case("idioms", [(torch.tensor([[1.0, 2.0, 1.0], [1.0, 2.0, 1.0], [0.0, _NAN, 0.0], [1.0, 2.0, 1.0]]),
                  _i([3, 1, 3, 3, 2, 1, 1]))])
class UniqueRowsAndConsecutive(nn.Module):
    """unique of rows (dim=0) with inverse and counts, unique_consecutive with counts, sorted=False, and
    isin with invert."""

    def forward(self, rows, n):
        values, inverse, counts = torch.unique(rows.nan_to_num(5.0), dim=0, return_inverse=True, return_counts=True)
        runs, run_counts = torch.unique_consecutive(n, return_counts=True)
        return values, inverse, counts, runs, run_counts, torch.isin(n, _i([1, 2])), torch.isin(n, _i([3]), invert=True)


@case("idioms", [(randn(4, 4), randn(4, seed=1), randn(3, 4, seed=2))])
class EinsumManyOperands(nn.Module):
    """einsum with three operands, an index repeated across operands and in one operand ('ii,jj->ij'),
    an outer product of diagonals, a bilinear form and a repeated index kept in the output."""

    def forward(self, m, v, w):
        return (torch.einsum("ii,jj->ij", m, m), torch.einsum("i,i,i->", v, v, v), torch.einsum("ij,j,kj->ik", m, v, w),
                torch.einsum("ij,ij->j", m, m), torch.einsum("i,ij,j->", v, m, v), torch.einsum("ki,ii->ki", w, m),
                torch.einsum("ij,ji->", m, m), torch.einsum("ba,ab->b", m, m))


@case("idioms", [(randn(0, 3, 3), randn(2, 0, 4, seed=1))])
class EmptyLinalgAndEinsum(nn.Module):
    """An empty batch through inv, det and solve, einsum and bmm with a 0 dim, a matmul whose result is
    empty, and a norm over an empty batch."""

    def forward(self, a, b):
        eye = a + torch.eye(3)
        return (torch.linalg.inv(eye), torch.linalg.det(eye), torch.linalg.solve(eye, eye[..., :1]), torch.einsum("bij,bjk->bik", eye, eye),
                torch.einsum("bnk->bk", b), b.transpose(1, 2) @ b, b @ b.transpose(1, 2), torch.linalg.matrix_norm(eye))


@case("idioms", [(randn(3, 3, 3), randn(2, 4, 3, seed=1))])
class LinalgRankAndNorms(nn.Module):
    """matrix_rank (int64) of full and rank-deficient batches, matrix norms with ord 1, -1, inf, -inf and -2,
    slogdet of a singular matrix (-inf), and a batched eigh with both outputs checked as A V = V diag(w)."""

    def forward(self, a, b):
        deficient = a.clone()
        deficient[:, 2] = deficient[:, 0] + deficient[:, 1]
        sym = a + a.mT
        w, v = torch.linalg.eigh(sym)
        return (torch.linalg.matrix_rank(a), torch.linalg.matrix_rank(deficient), torch.linalg.matrix_norm(b, 1),
                torch.linalg.matrix_norm(b, -1), torch.linalg.matrix_norm(b, float("inf")), torch.linalg.matrix_norm(b, -float("inf")),
                torch.linalg.matrix_norm(a, -2), torch.linalg.slogdet(deficient[:1].round()), (sym @ v - v * w[..., None, :]).abs().amax() < 1e-4)


@case("idioms", [(randn(2, 3, 4, 4),), (randn(2, 3, 4, 4, seed=1),)])
class PaddingModesOnManyDims(nn.Module):
    """F.pad with reflect, replicate and circular on the last 2 and 3 dims, negative padding (a crop),
    constant padding with a value, and unfold/fold (im2col and back)."""

    def forward(self, x):
        cols = F.unfold(x, 2, stride=2)
        return (F.pad(x, (1, 2, 2, 1), "reflect"), F.pad(x, (1, 1, 0, 2), "replicate"), F.pad(x, (2, 1, 1, 0), "circular"),
                F.pad(x, (-1, 1, 0, -2)), F.pad(x, (1, 1), value=-3.0), F.pad(x.unsqueeze(0), (1, 1, 1, 1, 1, 1), "replicate"),
                cols, F.fold(cols, (4, 4), 2, stride=2))


@case("idioms", [(randn(2, 4, 6), _i([[0, 2, 3], [1, 1, 4]]))])
class EmbeddingBagOffsetsAndWeights(nn.Module):
    """embedding_bag with offsets (sum, mean, max; an empty bag), per-sample weights, padding_idx in
    embedding, and the include_last_offset form."""

    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.table = nn.Parameter(torch.randn(6, 3))

    def forward(self, x, ids):
        flat, offsets = ids.flatten(), _i([0, 2, 2, 5])
        return (F.embedding_bag(flat, self.table, offsets, mode="sum"), F.embedding_bag(flat, self.table, offsets, mode="mean"),
                F.embedding_bag(flat, self.table, offsets, mode="max"), F.embedding_bag(ids, self.table, mode="max"),
                F.embedding_bag(flat, self.table, offsets, mode="sum", per_sample_weights=x.flatten()[:6]),
                F.embedding(ids, self.table, padding_idx=1), F.embedding_bag(flat, self.table, _i([0, 3, 6]), include_last_offset=True))


@case("idioms", [(randn(1, 2, 4, 5), torch.tensor([[[[-1.0, -1.0], [1.0, 1.0], [0.3, -0.7]], [[1.2, 0.0], [-1.5, 0.5], [0.0, 0.0]]]]))])
class GridSampleAndInterpolate(nn.Module):
    """grid_sample with border and reflection padding, aligned and not, at grid points outside [-1, 1];
    interpolate nearest-exact, bilinear with align_corners, bicubic and area."""

    def forward(self, x, grid):
        return (F.grid_sample(x, grid, padding_mode="border", align_corners=True), F.grid_sample(x, grid, padding_mode="reflection"),
                F.grid_sample(x, grid, mode="nearest"), F.interpolate(x, size=(3, 7), mode="nearest-exact"),
                F.interpolate(x, scale_factor=1.5, mode="bilinear", align_corners=True), F.interpolate(x, size=(5, 3), mode="bicubic"),
                F.interpolate(x, size=(2, 2), mode="area"))


@case("idioms", [(randn(3, 5), torch.tensor([0.0, 0.1, 0.5, 0.99, 1.0]))])
class QuantilesAndAminmax(nn.Module):
    """quantile with every interpolation mode along a dim and flattened, nanquantile with a nan, aminmax,
    and median's lower of two middles."""

    def forward(self, x, q):
        with_nan = x.clone()
        with_nan[0, 1] = float("nan")
        lo, hi = torch.aminmax(x, dim=1)
        return (torch.quantile(x, q, dim=1), torch.quantile(x, 0.3, interpolation="lower"), torch.quantile(x, q[:3], 0, interpolation="higher"),
                torch.quantile(x, 0.5, 1, interpolation="midpoint"), torch.quantile(x, 0.7, 1, keepdim=True, interpolation="nearest"),
                torch.nanquantile(with_nan, 0.5, 1), lo, hi, x[:, :4].median(1).values, torch.aminmax(x))


@case("idioms", [(randn(2, 3), randn(3, seed=1), _i([2, -1, 0, 5]))])
class StructuredConstructions(nn.Module):
    """kron, block_diag, cartesian_prod and combinations, tensordot over two dims, rot90 with k=-1 and 2,
    vander, put_ and take with negative indices, trapezoid and cumulative_trapezoid."""

    def forward(self, a, v, n):
        y = a.clone().flatten()
        y.put_(_i([-1, 0]), torch.tensor([9.0, 8.0]))
        return (torch.kron(a, a[:1]), torch.block_diag(a, v[None], a[:, :1]), torch.cartesian_prod(v, v[:2]), torch.combinations(v, 2),
                torch.tensordot(a, a, dims=([0, 1], [0, 1])), torch.rot90(a, -1), torch.rot90(a, 2, (1, 0)), torch.vander(v, 3), y,
                a.take(_i([-1, 2, -6])), torch.trapezoid(a, dx=0.5), torch.cumulative_trapezoid(a, v, dim=1), n.kron(n[:2]))


@case("idioms", [(randn(3, 4), _i([[0, 2], [3, 3], [1, 0]]))])
class ScatterReduceLegacyAndModes(nn.Module):
    """scatter with the legacy reduce= (add, multiply), scatter_reduce mean and prod with and without the
    destination on a negative dim, and index_put with accumulate on int tensors."""

    def forward(self, x, idx):
        src = x[:, :2] + 2
        n = torch.zeros(3, 4, dtype=torch.long)
        n.index_put_((_i([0, 0, 2]), _i([1, 1, 3])), _i([5, 7, -1]), accumulate=True)
        return (x.scatter(-1, idx, src, reduce="add"), x.scatter(-1, idx, src, reduce="multiply"),
                x.scatter_reduce(-1, idx, src, "mean", include_self=False), x.scatter_reduce(-1, idx, src, "prod"),
                x.scatter(1, idx, 2.0, reduce="add"), n)


@case("idioms", [(_i([2**40, 2**30, 3, -7]), _i([2**31 - 1, 2**31 - 1, 5, 1], torch.int32), randn(300) > 0)])
class IntReductionsThatWrap(nn.Module):
    """Reductions that overflow: an int64 prod past 2**63, an int32 cumsum and sum kept int32, a bool sum into
    int8 (300 Trues wrap), an int64 sum, and abs/neg of int64's minimum."""

    def forward(self, big, i32, flags):
        low = torch.tensor([-(2**63), 5])
        return (big.prod(), i32.cumsum(0, dtype=torch.int32), i32.sum(dtype=torch.int32), i32.sum(), flags.sum(dtype=torch.int8),
                flags.sum(), big.cumprod(0), low.abs(), -low, low - 1, big * big)


@case("idioms", [(torch.tensor([3.0, _NAN, -1.0, 2.0, _NAN, -_INF]).half(), randn(6).bfloat16(), _i([5, 3, 250, 0, 255, 7], torch.uint8))])
class SixteenBitSortsAndMixes(nn.Module):
    """sort/topk/argmax of float16 with nan, where between float16 and bfloat16 (float32), diff and cumsum of
    uint8 (wraps; int64), lerp of float16, and unique of bool."""

    def forward(self, h, b, u):
        return (h.sort(stable=True, dim=0), h.topk(2).values, h.argmax(), torch.where(h > 0, h, b), torch.diff(u), u.cumsum(0),
                torch.lerp(h.nan_to_num(0.0), b.half(), 0.25), torch.unique(u > 100), h.isnan().sum(), h.nan_to_num().amax())


@case("idioms", [(randn(2, 3), randn(3, 0, seed=1))])
class DegenerateStatistics(nn.Module):
    """var with a correction at or past the count (inf, nan), std of one element, logsumexp and softmax over an
    empty dim, softmax with a float64 dtype, and mean with a dtype argument."""

    def forward(self, x, e):
        return (x.var(1, correction=3), x.var(0, correction=2), x[:, :1].std(1), e.logsumexp(1), e.softmax(1), x.softmax(1, dtype=torch.float64),
                x.mean(1, dtype=torch.float64), x.bfloat16().mean(1, dtype=torch.float32), torch.var_mean(x, 1, correction=0))


@case("idioms", [(randn(3, 4), torch.tensor(True), torch.tensor(2))])
class ZeroDimConditionsAndIndices(nn.Module):
    """A 0-d bool condition to where, a 0-d int index into a tensor (a view) and into index_select, a 0-d
    tensor as a slice-like gather, and comparisons that give 0-d results used as masks."""

    def forward(self, x, flag, k):
        return (torch.where(flag, x, -x), x[k], x.index_select(1, k.reshape(1)), x.select(0, 1) * flag, x.sum() > 0,
                torch.where(x.sum() > 0, x.amax(), x.amin()), x.gather(1, k.expand(3, 1)), x * (k == 2), x.masked_fill(flag, 1.0))


# ----------------------------------------------------------------- the sweep
def _flat(value: Any) -> list:
    return [v for v in torch.utils._pytree.tree_leaves(value)]


def _compare(got: Any, want: Any) -> None:
    got_l, want_l = _flat(got), _flat(want)
    assert len(got_l) == len(want_l), f"{len(got_l)} outputs, eager {len(want_l)}"
    for g, w in zip(got_l, want_l):
        if isinstance(w, torch.Tensor):
            g = torch.as_tensor(g)
            assert g.dtype == w.dtype, f"dtype {g.dtype} != {w.dtype}"
            torch.testing.assert_close(g, w, rtol=1e-4, atol=1e-4, equal_nan=True)
        else:
            assert type(g) is type(w) and math.isclose(float(g), float(w), rel_tol=1e-5, abs_tol=1e-5), (g, w)


def _refused(program: Any, inputs: tuple, expected: str) -> None:
    """The program refuses `inputs` with one line naming the op (`expected`) and this file's line."""
    try:
        program(*inputs)
    except RduccError as error:
        message = str(error)
        assert len(message.splitlines()) == 1 and re.search(expected, message) and "heldout_sweep.py:" in message, \
            f"unclear refusal: {message}"
        return
    raise AssertionError(f"ran inputs the program was not compiled for (expected: {expected})")


def run_case(c: Case, opt_level: int) -> str:
    try:
        program = rducc.compile(c.module, c.inputs[0], opt_level=opt_level, **c.kwargs)
    except Exception as error:  # noqa: BLE001 - the sweep reports every failure
        return f"COMPILE {type(error).__name__}: {str(error).splitlines()[0][:200]}"
    for index, inputs in enumerate(c.inputs):
        try:
            if index in c.refuses:
                _refused(program, inputs, c.refuses[index])
                continue
            with torch.no_grad():
                want = c.module(*inputs)
            got = program(*inputs)
            (c.check or _compare)(got, want)
        except Exception as error:  # noqa: BLE001
            if "-v" in sys.argv:
                traceback.print_exc()
            return f"RUN {type(error).__name__}: {str(error).splitlines()[0][:200] if str(error) else ''}"
    return "ok"


def _cli_args(c: Case, opt_level: int, pt2: str, mlir: str) -> list[str]:
    argv = [pt2, "-o", mlir, "-O", str(opt_level), "-q"]
    if "shapes" in c.kwargs:
        argv += ["--shapes", *[f"{name}={','.join(map(str, sizes))}" for name, sizes in c.kwargs["shapes"].items()]]
    if c.kwargs.get("pad_dims"):
        argv += ["--pad-dims", *c.kwargs["pad_dims"]]
    return argv


_SAME_SIZE_INT = {1: torch.int8, 2: torch.int16, 4: torch.int32, 8: torch.int64}


def _npy_leaf(value: np.ndarray, like: Any) -> Any:
    """A .npz result as eager gives it (`like`): a Python number, or a tensor (a dtype numpy lacks, read
    back as raw bytes (`V2` for bfloat16), viewed as `like`'s)."""
    if not isinstance(like, torch.Tensor):
        return value.item()
    if value.dtype.kind == "V":
        return torch.from_numpy(value.view(f"<i{value.dtype.itemsize}")).view(like.dtype)
    return torch.from_numpy(value)


def _npy_array(tensor: torch.Tensor) -> np.ndarray:
    """An input as a .npy array; a dtype numpy lacks (bfloat16, float8) as its ml_dtypes twin."""
    if tensor.dtype in (torch.bfloat16, torch.float8_e4m3fn, torch.float8_e5m2):
        import ml_dtypes

        twin = {torch.bfloat16: ml_dtypes.bfloat16, torch.float8_e4m3fn: ml_dtypes.float8_e4m3fn,
                torch.float8_e5m2: ml_dtypes.float8_e5m2}[tensor.dtype]
        return tensor.view(_SAME_SIZE_INT[tensor.element_size()]).numpy().view(twin)
    return tensor.numpy()


def run_case_cli(c: Case, opt_level: int, directory: Path) -> str:
    """The case through the command line: torch.export.save, `rducc`, then `rducc-run` on each input
    (compared with eager as `run_case` does; refusals by their one line)."""
    from rducc.tools.cli import main as rducc_main
    from rducc.tools.run import main as run_main

    pt2, mlir = str(directory / f"{c.name}.pt2"), str(directory / f"{c.name}-O{opt_level}.mlir")
    try:
        with torch.no_grad():
            exported = torch.export.export(c.module, c.inputs[0], dynamic_shapes=c.kwargs.get("dynamic_shapes"))
        torch.export.save(exported, pt2)
    except Exception as error:  # noqa: BLE001 - torch's own limits (a sparse CSR result cannot be saved)
        return f"SAVE {type(error).__name__}: {str(error).splitlines()[0][:160]}"
    with contextlib.redirect_stderr(io.StringIO()) as err:
        status = rducc_main(_cli_args(c, opt_level, pt2, mlir))
    if status != 0:
        return f"CLI COMPILE: {err.getvalue().strip().splitlines()[-1][:200]}"
    for index, inputs in enumerate(c.inputs):
        files = []
        for k, tensor in enumerate(inputs):
            files += ["--input", str(directory / f"{c.name}-{index}-{k}.npy")]
            np.save(files[-1], _npy_array(tensor))
        out = directory / f"{c.name}-{index}.npz"
        with contextlib.redirect_stderr(io.StringIO()) as err:
            status = run_main([mlir, *files, "--output", str(out), "-q"])
        if index in c.refuses:
            if status != 1 or not re.search(c.refuses[index], err.getvalue()):
                return f"CLI RUN: not refused as expected ({err.getvalue().strip()[:160]})"
            continue
        if status != 0:
            return f"CLI RUN: {err.getvalue().strip().splitlines()[-1][:200]}"
        with torch.no_grad():
            want = c.module(*inputs)
        saved = np.load(out)
        names = [name for name in saved.files if "." not in name and name.startswith("output_")]
        got = [_npy_leaf(saved[name], like) for name, like in zip(names, _flat(want))]
        try:
            (c.check or _compare)(got if len(got) > 1 else got[0], want)
        except Exception as error:  # noqa: BLE001
            return f"CLI RUN {type(error).__name__}: {str(error).splitlines()[0][:200] if str(error) else ''}"
    return "ok"


def main(argv: list[str]) -> int:
    """`--cli`: each case through `rducc` and `rducc-run` too (`run_case_cli`; a program torch.export.save
    cannot save is printed, not counted)."""
    since = [a.split("=", 1)[1] for a in argv if a.startswith("--since=")]
    wanted = [a for a in argv if not a.startswith("-")]
    failures = 0
    passed: dict[str, list[int]] = {}
    first = [c.name for c in CASES].index(since[0]) if since else 0
    for c in CASES[first:]:
        if wanted and not any(w in c.name or w == c.cls for w in wanted):
            continue
        for level in (0, 2):
            verdict = run_case(c, level)
            failures += verdict != "ok"
            tally = passed.setdefault(c.cls, [0, 0])
            tally[0] += verdict == "ok"
            tally[1] += 1
            print(f"{c.cls:8} {c.name:26} -O{level} {verdict}", flush=True)
            if "--cli" in argv:
                with tempfile.TemporaryDirectory() as directory:
                    verdict = run_case_cli(c, level, Path(directory))
                if not verdict.startswith("SAVE"):  # torch.export.save's limits are not counted
                    failures += verdict != "ok"
                    tally[0] += verdict == "ok"
                    tally[1] += 1
                print(f"{c.cls:8} {c.name:26} -O{level} cli {verdict}", flush=True)
    for cls, (ok, total) in passed.items():
        print(f"{cls:8} {ok}/{total} compile and match eager ({ok / total:.0%})")
    print(f"{failures} failures")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
