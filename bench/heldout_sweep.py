"""A held-out sweep of issue 30's classes, in forms the test suite does not write.

Each program is compiled at -O0 and -O2 and run against eager on its example
and on other inputs; random programs are checked by shape, dtype and moments.
Prints one line per (program, level): ok, or the first line of what failed.

    .venv/bin/python bench/heldout_sweep.py [NAME_SUBSTRING ...]
"""

from __future__ import annotations

import math
import re
import sys
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

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


@case("data", [(randn(4, 5), torch.tensor(1)), (randn(4, 5, seed=1), torch.tensor(2))],
      refuses={1: r"s.item\(\) is not 1 in `return x.narrow"})
class NarrowTensorStart(nn.Module):
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
               (randn(3, 7, seed=2), torch.tensor([1, 5]))], refuses={2: "slice"})
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


def main(argv: list[str]) -> int:
    wanted = [a for a in argv if not a.startswith("-")]
    failures = 0
    passed: dict[str, list[int]] = {}
    for c in CASES:
        if wanted and not any(w in c.name or w == c.cls for w in wanted):
            continue
        for level in (0, 2):
            verdict = run_case(c, level)
            failures += verdict != "ok"
            tally = passed.setdefault(c.cls, [0, 0])
            tally[0] += verdict == "ok"
            tally[1] += 1
            print(f"{c.cls:8} {c.name:26} -O{level} {verdict}", flush=True)
    for cls, (ok, total) in passed.items():
        print(f"{cls:8} {ok}/{total} compile and match eager ({ok / total:.0%})")
    print(f"{failures} failures")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
