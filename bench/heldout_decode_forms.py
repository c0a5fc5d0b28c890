"""Held-out decode forms and transformers families: the layer found by structure on code no test writes.

The Llama 3.1 8B decode step of bench/decode_forms.py written in forms that
neither examples/llama_decode_forms.py nor the tests write (the same math,
other code), and transformers families not costed there, at 7-8B sizes on
the meta device (bf16, batch 1, cache of 4,096 positions), compiled at -O2
for sn40l, sn40l-8 and sn40l-16 and costed as decode_forms does: one looped
layer?, modeled time, share of the aggregate-HBM roofline.

Llama's math, held to `modules` (BENCHMARKS' form) within 2%:
- `dict_loop`: no module per layer: one `ParameterDict` of every weight, a
  layer function applied by a Python loop over a list of per-layer weight
  dicts; q/k/v one matmul cut by `tensor_split`, RMS norm by
  `F.rms_norm`, rotary interleaved (pairs (2i, 2i+1)), the cache extended
  by `torch.cat`, grouped-query heads by `expand` + `reshape`.
- `complex_rope`: Meta's reference code: rotary by `view_as_complex` times a
  complex `polar` of the angles, `view_as_real`; q/k/v stacked in one weight
  [3-way, by kv groups] and `unbind`-free; caches as buffers updated by
  `index_put_` (`cache[:, :, pos] = k`), GQA by `repeat_interleave`.
- `einsum_gqa`: attention as one grouped einsum over the KV heads
  (`bkgd,bksd->bkgs`), RMS norm as `x * (mean + eps) ** -0.5`, rotary by
  rotate-half with `torch.stack` + `flatten` of the halves, the cache a
  buffer updated by `scatter_` of a 1-long index, MLP by `torch.mm` on 2-D views.
- `sdpa_functional`: the layers are `functools.partial`s of one function
  over `nn.Linear` modules held in a flat `ModuleDict`; SDPA with an
  explicit `scale`, KV heads by `repeat_interleave` after the cat;
  residual adds as `torch.add(..., alpha=1)` of two branches summed at the end.

- `sequential_state`: the layers an `nn.Sequential` passing one dict of
  state (hidden, rotary, the caches, the updates so far); each layer reads its
  cache window by its own index; q/k/v one weight laid out per KV group
  [kv, group + 2, dim] (Falcon's new decoder layout) cut by slicing.
- `reduce_moduledict`: layers in an `nn.ModuleDict` applied by
  `functools.reduce` over its values (the carry: hidden, updates so far);
  q/k/v one `nn.Linear` cut by `torch.split`, `nn.RMSNorm`, grouped
  attention by `torch.bmm` over the KV heads.
- `unbind_scan`: a scan over weights stacked by layer (q/k/v fused, gate/up
  fused and `chunk`ed) and one stacked cache [layers, 2, ...], all
  `unbind(0)` and zipped; the new keys and values stacked into one output.
- `transposed_keys`: the key cache laid out [1, kv, head_dim, positions]
  (extended along its last dim), queries grouped by a view against it,
  `@ w.t()` projections, residual adds in place (`add_`).
- `depth_scaled`: each layer's update scaled in the parent by a constant of
  its depth, `x + (layer(x) - x) / sqrt(2 (i + 1))` (not Llama's math, but
  its reads and kernels: held to `modules`).
- `dict_caches`: the caches passed and returned as one dict (a pytree).
- `functional_template`: one unregistered template layer run by
  `torch.func.functional_call` on each layer's slice of weights stacked by name.
- `plain_list`: the layers in a plain Python list (attributes `block_N`, no
  `ModuleList`), looped over one cache stacked batch first [1, layers, 2, ...]
  (`select`, `unbind`), KV heads by `unsqueeze` + `expand` + `flatten`, the new
  keys and values returned stacked the same way.
- `add_norm_folded`: each residual add folded into the norm after it (an
  `AddNorm` module: vLLM's fused add + RMS norm), so a layer returns its MLP's
  output un-added and the next layer's first norm adds it (the first adds zeros).

Other math, each held to its own roofline as `modules` is to its own on
that target (`own_reference_s`, bench/decode_reference.py, the reference
bench/decode_forms.py uses too): the busiest socket's bytes read at the
target's sustained rates (what does not fit the socket's HBM from its DDR, at
DDR's rate), plus the time `modules` spends beyond that (its launches,
pipeline fills and exposed collectives, which a stack of the same layer count
and layer structure pays alike, whatever its layers weigh). The roofline is
the busiest socket's: a KV head, its k and v projection columns and its
cache, is read whole by every socket that holds it, so with more sockets than
KV heads each is read by sockets / heads of them (`socket_bytes`); with as
many heads as sockets or more it is the aggregate-HBM roofline:
- `parallel_residual`: GPT-J's layer: attention and MLP read the same norm,
  `x + attn(n) + mlp(n)`.
- `dense_ends`: a stack whose first layer's MLP is 2x wider and whose last
  layer's is half as wide: the identical middle layers must loop
  (`layers - 2` calls).

transformers families (`FAMILIES`, at Llama 3.1 8B's widths with each
family's own structure) are held to their own roofline the same way;
one that does not compile is a row naming the error. The mixtures of
experts among them (`mixtral`, `mixtral8`, `qwen2_moe` with its shared
expert, `olmoe` top 1, `granitemoe_shared`, `qwen3_moe` 16 experts top 1)
are one looped layer on every target: on one socket the layer is several
kernels, one loop of them (docs/cost-model.md, "A mixture-of-experts layer on
one socket"; since forms18, before which their sn40l rows read NOT met). A family whose config repeats with a
period of several layers (`layer_types`, `no_rope_layers`: Exaone4 and SmolLM3
every 4th layer) may instead loop one call a period (`loop_goals`).

Every figure is modeled from shapes, not measured on a chip.

Run: python bench/heldout_decode_forms.py [--quick] [--forms a,b|none] [--families x,y|none] [--layers N]
[--targets a,b] (--quick: 4 layers; --layers overrides the layer count; --targets: of sn40l, sn40l-8, sn40l-16)
"""

from __future__ import annotations

import functools
import math
import sys
from collections.abc import Callable

import decode_forms
import llama_decode_forms as ldf  # noqa: E402
import models  # noqa: E402
import torch
from common import Section, standalone
from decode_reference import beyond_reads, kv_state, own_reference_s
from torch import nn
from torch.nn import functional as F

from rducc.frontend.importer import decompose  # noqa: E402

CACHED = decode_forms.CACHED


def _rope_interleaved(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """Rotary over interleaved pairs (2i, 2i+1), cos/sin given per rotate-half slot (first half used)."""
    half = x.shape[-1] // 2
    c, s = cos[..., :half], sin[..., :half]
    even, odd = x.unflatten(-1, (half, 2)).unbind(-1)
    return torch.stack((even * c - odd * s, even * s + odd * c), dim=-1).flatten(-2)


class DictLoop(ldf._Base):
    """A layer function over per-layer weight dicts; no module per layer."""

    def __init__(self, config) -> None:
        super().__init__(config)
        weights = {}
        qkv = (self.heads + 2 * self.kv) * self.dim
        for i in range(self.layer_count):
            w = ldf.Weights(self.hidden, self.intermediate, self.heads, self.kv)
            weights[f"l{i}_qkv"] = nn.Parameter(torch.cat((w.q_proj.detach(), w.k_proj.detach(),
                                                           w.v_proj.detach())).view(qkv, self.hidden))
            for name in ("input_layernorm", "o_proj", "post_attention_layernorm", "gate_proj", "up_proj",
                         "down_proj"):
                weights[f"l{i}_{name}"] = getattr(w, name)
        self.weights = nn.ParameterDict(weights)

    def forward(self, input_ids, cos, sin, *caches):
        layers = [{name: self.weights[f"l{i}_{name}"] for name in ("qkv", "input_layernorm", "o_proj",
                                                                    "post_attention_layernorm", "gate_proj",
                                                                    "up_proj", "down_proj")}
                  for i in range(self.layer_count)]
        x = self.embed_tokens(input_ids)
        updates = []
        for index, w in enumerate(layers):
            x, k, v = self.layer(x, w, cos, sin, caches[2 * index], caches[2 * index + 1])
            updates += [k, v]
        return (self.head(x), *updates)

    def layer(self, x, w, cos, sin, k_cache, v_cache):
        group = self.heads // self.kv
        normed = F.rms_norm(x.float(), (self.hidden,), eps=self.eps).to(x.dtype) * w["input_layernorm"]
        q, k, v = F.linear(normed, w["qkv"]).tensor_split(
            (self.heads * self.dim, (self.heads + self.kv) * self.dim), dim=-1)
        q = _rope_interleaved(q.view(1, 1, self.heads, self.dim).transpose(1, 2), cos, sin)
        k = _rope_interleaved(k.view(1, 1, self.kv, self.dim).transpose(1, 2), cos, sin)
        v = v.view(1, 1, self.kv, self.dim).transpose(1, 2)
        keys, values = torch.cat((k_cache, k), dim=2), torch.cat((v_cache, v), dim=2)
        positions = keys.shape[2]
        keys = keys[:, :, None].expand(-1, -1, group, -1, -1).reshape(1, self.heads, positions, self.dim)
        values = values[:, :, None].expand(-1, -1, group, -1, -1).reshape(1, self.heads, positions, self.dim)
        x = x + F.linear(ldf._attend_full(q, keys, values, self.dim).transpose(1, 2).reshape(1, 1, -1), w["o_proj"])
        normed = F.rms_norm(x.float(), (self.hidden,), eps=self.eps).to(x.dtype) * w["post_attention_layernorm"]
        x = x + F.linear(F.silu(F.linear(normed, w["gate_proj"])) * F.linear(normed, w["up_proj"]), w["down_proj"])
        return x, k, v


def _rope_complex(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """Meta's rotary: pairs as complex numbers times e^(i angle) (`view_as_complex`, `view_as_real`)."""
    half = x.shape[-1] // 2
    freqs = torch.complex(cos[..., :half].float(), sin[..., :half].float())
    pairs = torch.view_as_complex(x.float().reshape(*x.shape[:-1], half, 2))
    return torch.view_as_real(pairs * freqs).flatten(-2).type_as(x)


class ComplexRopeLayer(nn.Module):
    """Meta's reference layer: complex rotary, caches as buffers written by `index_put_`."""

    def __init__(self, hidden: int, intermediate: int, heads: int, kv: int, eps: float, cached: int) -> None:
        super().__init__()
        self.heads, self.kv, self.dim, self.eps, self.cached = heads, kv, hidden // heads, eps, cached
        self.wq = nn.Linear(hidden, heads * self.dim, bias=False)
        self.wk = nn.Linear(hidden, kv * self.dim, bias=False)
        self.wv = nn.Linear(hidden, kv * self.dim, bias=False)
        self.wo = nn.Linear(heads * self.dim, hidden, bias=False)
        self.w1 = nn.Linear(hidden, intermediate, bias=False)
        self.w2 = nn.Linear(intermediate, hidden, bias=False)
        self.w3 = nn.Linear(hidden, intermediate, bias=False)
        self.attention_norm = nn.Parameter(torch.ones(hidden))
        self.ffn_norm = nn.Parameter(torch.ones(hidden))
        self.register_buffer("cache_k", torch.zeros(1, cached + 1, kv, self.dim))
        self.register_buffer("cache_v", torch.zeros(1, cached + 1, kv, self.dim))

    def forward(self, x, cos, sin):
        h = ldf.rms(x, self.attention_norm, self.eps)
        q = self.wq(h).view(1, 1, self.heads, self.dim)
        k = self.wk(h).view(1, 1, self.kv, self.dim)
        v = self.wv(h).view(1, 1, self.kv, self.dim)
        cos_t, sin_t = cos.transpose(1, 2), sin.transpose(1, 2)
        q, k = _rope_complex(q, cos_t, sin_t), _rope_complex(k, cos_t, sin_t)
        position = torch.tensor([self.cached], device=x.device)
        self.cache_k[:, position] = k
        self.cache_v[:, position] = v
        group = self.heads // self.kv
        keys = self.cache_k.repeat_interleave(group, dim=2).transpose(1, 2)
        values = self.cache_v.repeat_interleave(group, dim=2).transpose(1, 2)
        scores = torch.matmul(q.transpose(1, 2), keys.transpose(2, 3)) / self.dim**0.5
        out = torch.matmul(F.softmax(scores.float(), dim=-1).type_as(q), values)
        x = x + self.wo(out.transpose(1, 2).contiguous().view(1, 1, -1))
        h = ldf.rms(x, self.ffn_norm, self.eps)
        return x + self.w2(F.silu(self.w1(h)) * self.w3(h))


class ComplexRope(ldf._Base):
    def __init__(self, config, cached: int) -> None:
        super().__init__(config)
        self.layers = nn.ModuleList(ComplexRopeLayer(self.hidden, self.intermediate, self.heads, self.kv, self.eps,
                                                     cached) for _ in range(self.layer_count))

    def forward(self, input_ids, cos, sin):
        x = self.embed_tokens(input_ids)
        for layer in self.layers:
            x = layer(x, cos, sin)
        return self.head(x)


class EinsumGqaLayer(nn.Module):
    """Grouped einsum attention, `** -0.5` RMS norm, stacked-halves rotary, cache by `scatter_`."""

    def __init__(self, hidden: int, intermediate: int, heads: int, kv: int, eps: float, cached: int) -> None:
        super().__init__()
        self.heads, self.kv, self.dim, self.eps, self.cached = heads, kv, hidden // heads, eps, cached
        self.w = ldf.Weights(hidden, intermediate, heads, kv)
        self.register_buffer("k_cache", torch.zeros(1, kv, cached + 1, self.dim))
        self.register_buffer("v_cache", torch.zeros(1, kv, cached + 1, self.dim))

    def norm(self, x, weight):
        x32 = x.float()
        return weight * (x32 * (x32.square().mean(-1, keepdim=True) + self.eps) ** -0.5).to(x.dtype)

    @staticmethod
    def rope(x, cos, sin):
        first, second = x.unflatten(-1, (2, -1)).unbind(-2)
        return x * cos + torch.stack((-second, first), dim=-2).flatten(-2) * sin

    def forward(self, x, cos, sin):
        w, group = self.w, self.heads // self.kv
        normed = self.norm(x, w.input_layernorm)
        q = self.rope(torch.einsum("bsh,oh->bso", normed, w.q_proj).view(1, self.kv, group, self.dim), cos, sin)
        k = self.rope(torch.einsum("bsh,oh->bso", normed, w.k_proj).view(1, self.kv, 1, self.dim), cos, sin)
        v = torch.einsum("bsh,oh->bso", normed, w.v_proj).view(1, self.kv, 1, self.dim)
        index = torch.full((1, self.kv, 1, self.dim), self.cached, device=x.device)
        self.k_cache.scatter_(2, index, k)
        self.v_cache.scatter_(2, index, v)
        scores = torch.einsum("bkgd,bksd->bkgs", q, self.k_cache) * self.dim**-0.5
        attended = torch.einsum("bkgs,bksd->bkgd", scores.float().softmax(-1).to(q.dtype), self.v_cache)
        x = x + torch.einsum("bsi,hi->bsh", attended.reshape(1, 1, -1), w.o_proj)
        flat = self.norm(x, w.post_attention_layernorm).view(1, -1)
        hidden = F.silu(torch.mm(flat, w.gate_proj.t())) * torch.mm(flat, w.up_proj.t())
        return x + torch.mm(hidden, w.down_proj.t()).view(1, 1, -1)


class EinsumGqa(ComplexRope):
    def __init__(self, config, cached: int) -> None:
        ldf._Base.__init__(self, config)
        self.layers = nn.ModuleList(EinsumGqaLayer(self.hidden, self.intermediate, self.heads, self.kv, self.eps,
                                                   cached) for _ in range(self.layer_count))


def _sdpa_layer(x, cos, sin, k_cache, v_cache, *, m: nn.ModuleDict, i: int, heads: int, kv: int, eps: float):
    """One layer over the `i`th modules of a flat ModuleDict; returns (x, k, v)."""
    dim = x.shape[-1] // heads
    normed = ldf.rms(x, m[f"norm1_{i}"].weight, eps)
    q = ldf.rope(m[f"q_{i}"](normed).view(1, 1, heads, dim).transpose(1, 2), cos, sin)
    k = ldf.rope(m[f"k_{i}"](normed).view(1, 1, kv, dim).transpose(1, 2), cos, sin)
    v = m[f"v_{i}"](normed).view(1, 1, kv, dim).transpose(1, 2)
    keys = torch.cat((k_cache, k), 2).repeat_interleave(heads // kv, dim=1)
    values = torch.cat((v_cache, v), 2).repeat_interleave(heads // kv, dim=1)
    attended = F.scaled_dot_product_attention(q, keys, values, scale=dim**-0.5)
    attn = m[f"o_{i}"](attended.transpose(1, 2).flatten(2))
    h = torch.add(x, attn, alpha=1)
    normed = ldf.rms(h, m[f"norm2_{i}"].weight, eps)
    mlp = m[f"down_{i}"](F.silu(m[f"gate_{i}"](normed)) * m[f"up_{i}"](normed))
    return torch.add(x, attn + mlp), k, v


class _Norm(nn.Module):
    def __init__(self, hidden: int) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.ones(hidden))


class SdpaFunctional(ldf._Base):
    """`functools.partial`s of one layer function over a flat ModuleDict."""

    def __init__(self, config) -> None:
        super().__init__(config)
        modules: dict[str, nn.Module] = {}
        for i in range(self.layer_count):
            modules.update({f"norm1_{i}": _Norm(self.hidden), f"norm2_{i}": _Norm(self.hidden),
                            f"q_{i}": nn.Linear(self.hidden, self.heads * self.dim, bias=False),
                            f"k_{i}": nn.Linear(self.hidden, self.kv * self.dim, bias=False),
                            f"v_{i}": nn.Linear(self.hidden, self.kv * self.dim, bias=False),
                            f"o_{i}": nn.Linear(self.heads * self.dim, self.hidden, bias=False),
                            f"gate_{i}": nn.Linear(self.hidden, self.intermediate, bias=False),
                            f"up_{i}": nn.Linear(self.hidden, self.intermediate, bias=False),
                            f"down_{i}": nn.Linear(self.intermediate, self.hidden, bias=False)})
        self.blocks = nn.ModuleDict(modules)

    def forward(self, input_ids, cos, sin, *caches):
        steps = [functools.partial(_sdpa_layer, m=self.blocks, i=i, heads=self.heads, kv=self.kv, eps=self.eps)
                 for i in range(self.layer_count)]
        x = self.embed_tokens(input_ids)
        updates = []
        for step, k_cache, v_cache in zip(steps, caches[0::2], caches[1::2]):
            x, k, v = step(x, cos, sin, k_cache, v_cache)
            updates += [k, v]
        return (self.head(x), *updates)


class StateLayer(nn.Module):
    """A layer of an `nn.Sequential` passing one dict of state: it reads its own cache window by
    the index it was made with; q/k/v one weight laid out per KV group [kv, group + 2, dim]
    (Falcon's new decoder layout), cut by slicing dim -2."""

    def __init__(self, index: int, hidden: int, intermediate: int, heads: int, kv: int, eps: float) -> None:
        super().__init__()
        self.index, self.heads, self.kv, self.dim, self.eps = index, heads, kv, hidden // heads, eps
        self.group = heads // kv
        self.qkv = nn.Linear(hidden, (heads + 2 * kv) * self.dim, bias=False)
        self.w = ldf.Weights(hidden, intermediate, heads, kv)
        del self.w.q_proj, self.w.k_proj, self.w.v_proj  # in `qkv`

    def forward(self, state: dict) -> dict:
        x, cos, sin, w, group = state["x"], state["cos"], state["sin"], self.w, self.group
        grouped = self.qkv(ldf.rms(x, w.input_layernorm, self.eps)).view(1, self.kv, group + 2, self.dim)
        q = ldf.rope(grouped[:, :, :group], cos, sin)
        k = ldf.rope(grouped[:, :, group:group + 1], cos, sin)
        v = grouped[:, :, group + 1:]
        k_cache, v_cache = state["caches"][2 * self.index], state["caches"][2 * self.index + 1]
        x = x + F.linear(ldf._attend_split(q, k, v, k_cache, v_cache, self.dim).reshape(1, 1, -1), w.o_proj)
        normed = ldf.rms(x, w.post_attention_layernorm, self.eps)
        x = x + F.linear(F.silu(F.linear(normed, w.gate_proj)) * F.linear(normed, w.up_proj), w.down_proj)
        return {**state, "x": x, "updates": (*state["updates"], k, v)}


class SequentialState(ldf._Base):
    def __init__(self, config) -> None:
        super().__init__(config)
        self.layers = nn.Sequential(*(StateLayer(i, self.hidden, self.intermediate, self.heads, self.kv, self.eps)
                                      for i in range(self.layer_count)))

    def forward(self, input_ids, cos, sin, *caches):
        state = self.layers({"x": self.embed_tokens(input_ids), "cos": cos, "sin": sin, "caches": caches,
                             "updates": ()})
        return (self.head(state["x"]), *state["updates"])


class ParallelLayer(nn.Module):
    """GPT-J's layer: attention and MLP read one norm, both added to the input."""

    def __init__(self, hidden: int, intermediate: int, heads: int, kv: int, eps: float) -> None:
        super().__init__()
        self.heads, self.kv, self.dim, self.eps = heads, kv, hidden // heads, eps
        self.w = ldf.Weights(hidden, intermediate, heads, kv)

    def forward(self, x, cos, sin, k_cache, v_cache):
        w = self.w
        n = ldf.rms(x, w.input_layernorm, self.eps)
        q = ldf.rope(F.linear(n, w.q_proj).view(1, 1, self.heads, self.dim).transpose(1, 2), cos, sin)
        k = ldf.rope(F.linear(n, w.k_proj).view(1, 1, self.kv, self.dim).transpose(1, 2), cos, sin)
        v = F.linear(n, w.v_proj).view(1, 1, self.kv, self.dim).transpose(1, 2)
        attended = F.scaled_dot_product_attention(q, torch.cat((k_cache, k), 2), torch.cat((v_cache, v), 2),
                                                  enable_gqa=True)
        attn = F.linear(attended.transpose(1, 2).reshape(1, 1, -1), w.o_proj)
        mlp = F.linear(F.silu(F.linear(n, w.gate_proj)) * F.linear(n, w.up_proj), w.down_proj)
        return x + attn + mlp, k, v


class Parallel(ldf._Base):
    def __init__(self, config) -> None:
        super().__init__(config)
        self.layers = nn.ModuleList(ParallelLayer(self.hidden, self.intermediate, self.heads, self.kv, self.eps)
                                    for _ in range(self.layer_count))

    def forward(self, input_ids, cos, sin, *caches):
        x = self.embed_tokens(input_ids)
        updates = []
        for index, layer in enumerate(self.layers):
            x, k, v = layer(x, cos, sin, caches[2 * index], caches[2 * index + 1])
            updates += [k, v]
        return (self.head(x), *updates)


class DenseEnds(models.LlamaDecodeStep):
    """BENCHMARKS' layers, but the first one's MLP 2x wider and the last one's half as wide."""

    def __init__(self, config) -> None:
        super().__init__(config)
        hidden, heads, kv = config.hidden_size, config.num_attention_heads, config.num_key_value_heads
        for index, width in ((0, 2 * config.intermediate_size), (-1, config.intermediate_size // 2)):
            self.layers[index] = models.DecodeLayer(hidden, width, heads, kv, config.rms_norm_eps)


class ReduceLayer(nn.Module):
    """q/k/v one `nn.Linear` cut by `torch.split`, `nn.RMSNorm` modules, grouped attention by
    `torch.bmm` over the KV heads (no repeat), the cache extended by `torch.cat`; takes and
    gives the carry (hidden, updates so far) of a `functools.reduce`."""

    def __init__(self, hidden: int, intermediate: int, heads: int, kv: int, eps: float) -> None:
        super().__init__()
        self.heads, self.kv, self.dim = heads, kv, hidden // heads
        self.attn_norm = nn.RMSNorm(hidden, eps=eps)
        self.mlp_norm = nn.RMSNorm(hidden, eps=eps)
        self.qkv = nn.Linear(hidden, (heads + 2 * kv) * self.dim, bias=False)
        self.out = nn.Linear(heads * self.dim, hidden, bias=False)
        self.gate = nn.Linear(hidden, intermediate, bias=False)
        self.up = nn.Linear(hidden, intermediate, bias=False)
        self.down = nn.Linear(intermediate, hidden, bias=False)

    def forward(self, carry: tuple, cos, sin, k_cache, v_cache) -> tuple:
        x, updates = carry
        group = self.heads // self.kv
        q, k, v = torch.split(self.qkv(self.attn_norm(x)), [self.heads * self.dim, self.kv * self.dim,
                                                            self.kv * self.dim], dim=-1)
        q = ldf.rope(q.view(1, 1, self.heads, self.dim).transpose(1, 2), cos, sin)
        k = ldf.rope(k.view(1, 1, self.kv, self.dim).transpose(1, 2), cos, sin)
        v = v.view(1, 1, self.kv, self.dim).transpose(1, 2)
        keys = torch.cat((k_cache, k), dim=2)[0]  # [kv, positions, dim]
        values = torch.cat((v_cache, v), dim=2)[0]
        scores = torch.bmm(q.reshape(self.kv, group, self.dim), keys.transpose(1, 2)) * self.dim**-0.5
        attended = torch.bmm(torch.softmax(scores.float(), dim=-1).to(q.dtype), values)
        x = x + self.out(attended.reshape(1, 1, -1))
        normed = self.mlp_norm(x)
        x = x + self.down(F.silu(self.gate(normed)) * self.up(normed))
        return x, (*updates, k, v)


class ReduceModuleDict(ldf._Base):
    """Layers in an `nn.ModuleDict` keyed by name, applied by `functools.reduce` over its values."""

    def __init__(self, config) -> None:
        super().__init__(config)
        self.blocks = nn.ModuleDict({f"block_{i:03d}": ReduceLayer(self.hidden, self.intermediate, self.heads,
                                                                   self.kv, self.eps)
                                     for i in range(self.layer_count)})

    def forward(self, input_ids, cos, sin, *caches):
        pairs = zip(self.blocks.values(), caches[0::2], caches[1::2])
        x, updates = functools.reduce(lambda carry, step: step[0](carry, cos, sin, step[1], step[2]), pairs,
                                      (self.embed_tokens(input_ids), ()))
        return (self.head(x), *updates)


_SCANNED = ("attn_norm", "qkv", "o", "mlp_norm", "gate_up", "down")


class UnbindScan(ldf._Base):
    """A scan over weights stacked by layer ([layers, ...] a kind: q/k/v fused, gate/up fused)
    and one stacked cache [layers, 2, ...], unbound along the layers and zipped; the new keys
    and values stacked into one [layers, 2, ...] result."""

    def __init__(self, config) -> None:
        super().__init__(config)
        n, h, i, d = self.layer_count, self.hidden, self.intermediate, self.dim
        shapes = {"attn_norm": (n, h), "qkv": (n, (self.heads + 2 * self.kv) * d, h), "o": (n, h, self.heads * d),
                  "mlp_norm": (n, h), "gate_up": (n, 2 * i, h), "down": (n, h, i)}
        for name, size in shapes.items():
            norm = name.endswith("norm")
            setattr(self, name, nn.Parameter(torch.ones(size) if norm else torch.randn(size) * size[-1]**-0.5))

    def forward(self, input_ids, cos, sin, kv):
        x = self.embed_tokens(input_ids)
        new = []
        for weights in zip(*(getattr(self, name).unbind(0) for name in _SCANNED), kv.unbind(0)):
            x, k, v = self._layer(x, cos, sin, *weights)
            new.append(torch.stack((k, v)))
        return self.head(x), torch.stack(new)

    def _layer(self, x, cos, sin, ln1, wqkv, wo, ln2, wgu, wd, cache):
        q, k, v = F.linear(ldf.rms(x, ln1, self.eps), wqkv).split(
            [self.heads * self.dim, self.kv * self.dim, self.kv * self.dim], dim=-1)
        q = ldf.rope(q.view(1, 1, self.heads, self.dim).transpose(1, 2), cos, sin)
        k = ldf.rope(k.view(1, 1, self.kv, self.dim).transpose(1, 2), cos, sin)
        v = v.view(1, 1, self.kv, self.dim).transpose(1, 2)
        attended = F.scaled_dot_product_attention(q, torch.cat((cache[0], k), 2), torch.cat((cache[1], v), 2),
                                                  enable_gqa=True)
        x = x + F.linear(attended.transpose(1, 2).reshape(1, 1, -1), wo)
        gate, up = F.linear(ldf.rms(x, ln2, self.eps), wgu).chunk(2, dim=-1)
        return x + F.linear(F.silu(gate) * up, wd), k, v


class TransposedKeysLayer(nn.Module):
    """The key cache laid out transposed [1, kv, head_dim, positions] (extended along its last
    dim), queries grouped by a view against it; residual adds in place (`add_`)."""

    def __init__(self, hidden: int, intermediate: int, heads: int, kv: int, eps: float) -> None:
        super().__init__()
        self.heads, self.kv, self.dim, self.eps = heads, kv, hidden // heads, eps
        self.w = ldf.Weights(hidden, intermediate, heads, kv)

    def forward(self, x, cos, sin, keys_t, v_cache):
        w, group = self.w, self.heads // self.kv
        normed = ldf.rms(x, w.input_layernorm, self.eps)
        q = ldf.rope((normed @ w.q_proj.t()).view(1, self.heads, 1, self.dim), cos, sin)
        k = ldf.rope((normed @ w.k_proj.t()).view(1, self.kv, 1, self.dim), cos, sin)
        v = (normed @ w.v_proj.t()).view(1, self.kv, 1, self.dim)
        keys_t = torch.cat((keys_t, k.transpose(-1, -2)), dim=-1)
        values = torch.cat((v_cache, v), dim=2)
        scores = q.view(1, self.kv, group, self.dim) @ keys_t / math.sqrt(self.dim)
        attended = torch.softmax(scores.float(), dim=-1).type_as(q) @ values
        x = x.clone()
        x.add_(attended.reshape(1, 1, -1) @ w.o_proj.t())
        normed = ldf.rms(x, w.post_attention_layernorm, self.eps)
        x.add_((F.silu(normed @ w.gate_proj.t()) * (normed @ w.up_proj.t())) @ w.down_proj.t())
        return x, k.transpose(-1, -2), v


class TransposedKeys(ldf._Base):
    def __init__(self, config) -> None:
        super().__init__(config)
        self.layers = nn.ModuleList(TransposedKeysLayer(self.hidden, self.intermediate, self.heads, self.kv,
                                                        self.eps) for _ in range(self.layer_count))

    def forward(self, input_ids, cos, sin, *caches):
        x = self.embed_tokens(input_ids)
        updates = []
        for layer, keys_t, values in zip(self.layers, caches[0::2], caches[1::2]):
            x, k, v = layer(x, cos, sin, keys_t, values)
            updates += [k, v]
        return (self.head(x), *updates)


def _keys_transposed(caches: list[torch.Tensor]) -> tuple[torch.Tensor, ...]:
    """Each key cache [1, kv, positions, dim] laid out [1, kv, dim, positions]; values as they are."""
    return tuple(c.transpose(-1, -2).contiguous() if i % 2 == 0 else c for i, c in enumerate(caches))


class DepthScaled(models.LlamaDecodeStep):
    """BENCHMARKS' layers, each layer's update scaled in the parent by a constant of its depth,
    `x + (layer(x) - x) / sqrt(2 (i + 1))`: the layers differ only in a constant."""

    def forward(self, input_ids, cos, sin, *caches):
        x = self.embed_tokens(input_ids)
        updates = []
        for index, layer in enumerate(self.layers):
            y, k, v = layer(x, cos, sin, caches[2 * index], caches[2 * index + 1])
            x = x + (y - x) * (2.0 * (index + 1)) ** -0.5
            updates += [k, v]
        return (self.lm_head(self.norm(x)), *updates)


class DictCaches(models.LlamaDecodeStep):
    """BENCHMARKS' layers with the caches passed and returned as one dict (a pytree) keyed by layer name."""

    def forward(self, input_ids, cos, sin, caches: dict):
        x = self.embed_tokens(input_ids)
        new = {}
        for index, layer in enumerate(self.layers):
            k_cache, v_cache = caches[f"layer{index}"]
            x, k, v = layer(x, cos, sin, k_cache, v_cache)
            new[f"layer{index}"] = (k, v)
        return self.lm_head(self.norm(x)), new


def _dict_caches(caches: list[torch.Tensor]) -> tuple[dict, ...]:
    """The per-layer caches as one dict {layerN: (key, value)}."""
    return ({f"layer{i // 2}": (caches[i], caches[i + 1]) for i in range(0, len(caches), 2)},)


class FunctionalTemplate(ldf._Base):
    """One template layer module (not registered) run by `torch.func.functional_call` on each
    layer's weights, kept stacked by name ([layers, ...] a weight) in a ParameterDict."""

    def __init__(self, config) -> None:
        super().__init__(config)
        template = models.DecodeLayer(self.hidden, self.intermediate, self.heads, self.kv, self.eps)
        self._template = [template]  # a list, so its own weights are not the model's
        self.stacked = nn.ParameterDict({
            name.replace(".", "__"): nn.Parameter(torch.stack([
                torch.ones_like(p) if p.dim() == 1 else torch.randn_like(p) * p.shape[-1]**-0.5
                for _ in range(self.layer_count)]))
            for name, p in template.named_parameters()})

    def forward(self, input_ids, cos, sin, *caches):
        x = self.embed_tokens(input_ids)
        updates = []
        for index in range(self.layer_count):
            weights = {name.replace("__", "."): p[index] for name, p in self.stacked.items()}
            x, k, v = torch.func.functional_call(self._template[0], weights,
                                                 (x, cos, sin, caches[2 * index], caches[2 * index + 1]))
            updates += [k, v]
        return (self.head(x), *updates)


class ListedLayer(nn.Module):
    """A layer over its one window of a stacked cache [1, 2, kv, positions, dim]: RMS norm
    by `rsqrt` of the mean square, KV heads by `unsqueeze` + `expand` + `flatten`, softmax
    in f32 by its `dtype` argument."""

    def __init__(self, hidden: int, intermediate: int, heads: int, kv: int, eps: float) -> None:
        super().__init__()
        self.heads, self.kv, self.dim, self.eps = heads, kv, hidden // heads, eps
        self.w = ldf.Weights(hidden, intermediate, heads, kv)

    def norm(self, x, weight):
        x32 = x.float()
        return (x32 * (x32.square().mean(-1, keepdim=True) + self.eps).rsqrt()).type_as(x) * weight

    def forward(self, x, cos, sin, cache):
        w, group = self.w, self.heads // self.kv
        normed = self.norm(x, w.input_layernorm)
        q = ldf.rope(F.linear(normed, w.q_proj).unflatten(-1, (self.heads, self.dim)).transpose(1, 2), cos, sin)
        k = ldf.rope(F.linear(normed, w.k_proj).unflatten(-1, (self.kv, self.dim)).transpose(1, 2), cos, sin)
        v = F.linear(normed, w.v_proj).unflatten(-1, (self.kv, self.dim)).transpose(1, 2)
        keys, values = (torch.cat((cached, new), dim=2) for cached, new in zip(cache.unbind(1), (k, v)))
        keys, values = (t.unsqueeze(2).expand(-1, -1, group, -1, -1).flatten(1, 2) for t in (keys, values))
        scores = torch.matmul(q, keys.transpose(2, 3)) * self.dim**-0.5
        attended = torch.softmax(scores, dim=-1, dtype=torch.float32).type_as(q) @ values
        x = x + F.linear(attended.transpose(1, 2).flatten(2), w.o_proj)
        normed = self.norm(x, w.post_attention_layernorm)
        return x + F.linear(F.silu(F.linear(normed, w.gate_proj)) * F.linear(normed, w.up_proj), w.down_proj), k, v


class PlainList(ldf._Base):
    """The layers held in a plain Python list (each also an attribute `block_N`, so its weights
    are the model's, but no `ModuleList` gives module paths `layers.N`), called in a loop over
    one stacked cache laid out batch first [1, layers, 2, kv, positions, dim]; the new keys and
    values returned stacked the same way."""

    def __init__(self, config) -> None:
        super().__init__(config)
        self.blocks = [ListedLayer(self.hidden, self.intermediate, self.heads, self.kv, self.eps)
                       for _ in range(self.layer_count)]
        for index, block in enumerate(self.blocks):
            self.add_module(f"block_{index}", block)

    def forward(self, input_ids, cos, sin, kv):
        x = self.embed_tokens(input_ids)
        new = []
        for index, block in enumerate(self.blocks):
            x, k, v = block(x, cos, sin, kv.select(1, index))
            new.append(torch.stack((k, v), dim=1))
        return self.head(x), torch.stack(new, dim=1)


def _batch_first_stack(caches: list[torch.Tensor]) -> tuple[torch.Tensor]:
    """The per-layer caches as one [1, layers, 2, kv, positions, dim] tensor."""
    return (torch.stack([torch.stack(caches[i:i + 2], dim=1) for i in range(0, len(caches), 2)], dim=1),)


class AddNorm(nn.Module):
    """A residual add folded into the norm after it (vLLM's fused add + RMS norm as a module):
    (x + delta, its norm)."""

    def __init__(self, hidden: int, eps: float) -> None:
        super().__init__()
        self.weight, self.eps = nn.Parameter(torch.ones(hidden)), eps

    def forward(self, x, delta):
        summed = x + delta
        return summed, ldf.rms(summed, self.weight, self.eps)


class AddNormLayer(nn.Module):
    """A layer that returns its MLP's output un-added: the next layer's first norm adds it
    (the first layer adds zeros). Projections `nn.Linear`, queries grouped by a view against
    the KV heads (no repeat)."""

    def __init__(self, hidden: int, intermediate: int, heads: int, kv: int, eps: float) -> None:
        super().__init__()
        self.heads, self.kv, self.dim = heads, kv, hidden // heads
        self.input_norm, self.post_norm = AddNorm(hidden, eps), AddNorm(hidden, eps)
        self.q, self.k, self.v = (nn.Linear(hidden, n * self.dim, bias=False) for n in (heads, kv, kv))
        self.o = nn.Linear(heads * self.dim, hidden, bias=False)
        self.gate, self.up = (nn.Linear(hidden, intermediate, bias=False) for _ in range(2))
        self.down = nn.Linear(intermediate, hidden, bias=False)

    def forward(self, residual, delta, cos, sin, k_cache, v_cache):
        residual, normed = self.input_norm(residual, delta)
        q = ldf.rope(self.q(normed).view(1, 1, self.heads, self.dim).transpose(1, 2), cos, sin)
        k = ldf.rope(self.k(normed).view(1, 1, self.kv, self.dim).transpose(1, 2), cos, sin)
        v = self.v(normed).view(1, 1, self.kv, self.dim).transpose(1, 2)
        keys, values = torch.cat((k_cache, k), dim=2), torch.cat((v_cache, v), dim=2)
        grouped = q.reshape(1, self.kv, self.heads // self.kv, self.dim)
        attended = ldf._attend_full(grouped, keys, values, self.dim)
        residual, normed = self.post_norm(residual, self.o(attended.reshape(1, 1, -1)))
        return residual, self.down(F.silu(self.gate(normed)) * self.up(normed)), k, v


class AddNormFolded(ldf._Base):
    def __init__(self, config) -> None:
        super().__init__(config)
        self.decoder = nn.ModuleList(AddNormLayer(self.hidden, self.intermediate, self.heads, self.kv, self.eps)
                                     for _ in range(self.layer_count))

    def forward(self, input_ids, cos, sin, *caches):
        residual = self.embed_tokens(input_ids)
        delta = torch.zeros_like(residual)
        updates = []
        for layer, k_cache, v_cache in zip(self.decoder, caches[0::2], caches[1::2]):
            residual, delta, k, v = layer(residual, delta, cos, sin, k_cache, v_cache)
            updates += [k, v]
        return (self.head(residual + delta), *updates)


FORMS: dict[str, tuple[str, str]] = {
    "dict_loop": ("modules", "inputs"), "complex_rope": ("modules", "buffers"),
    "einsum_gqa": ("modules", "buffers"), "sdpa_functional": ("modules", "inputs"),
    "sequential_state": ("modules", "inputs"),
    "parallel_residual": ("own roofline", "inputs"), "dense_ends": ("own roofline", "inputs"),
    "reduce_moduledict": ("modules", "inputs"), "unbind_scan": ("modules", "stacked"),
    "transposed_keys": ("modules", "keys transposed"), "depth_scaled": ("modules", "inputs"),
    "dict_caches": ("modules", "dict"), "functional_template": ("modules", "inputs"),
    "plain_list": ("modules", "stacked batch first"), "add_norm_folded": ("modules", "inputs"),
}
"""Per form: what it is held to (`modules` or its own roofline, `own_reference_s`), and its caches
(step inputs, buffers of `cached + 1` positions updated in place, one stacked [layers, 2, ...]
input, inputs with each key cache laid out [1, kv, head_dim, positions], one dict of them, or one
stacked [1, layers, 2, ...] input)."""

_BUILDERS = {"dict_loop": DictLoop, "complex_rope": ComplexRope, "einsum_gqa": EinsumGqa,
             "sdpa_functional": SdpaFunctional, "sequential_state": SequentialState,
             "parallel_residual": Parallel, "dense_ends": DenseEnds, "reduce_moduledict": ReduceModuleDict,
             "unbind_scan": UnbindScan, "transposed_keys": TransposedKeys, "depth_scaled": DepthScaled,
             "dict_caches": DictCaches, "functional_template": FunctionalTemplate,
             "plain_list": PlainList, "add_norm_folded": AddNormFolded}
_CACHE_LAYOUTS = {"inputs": tuple, "stacked": lambda caches: (ldf._stack(caches),),
                  "keys transposed": _keys_transposed, "dict": _dict_caches,
                  "stacked batch first": _batch_first_stack}
"""How each caches kind (`FORMS`) passes the per-layer caches as step inputs."""


def make(form: str, config, cached: int, device: str = "cpu", dtype: torch.dtype = torch.float32, seed: int = 0):
    """The decode step written as held-out `form`, and its inputs (as `llama_decode_forms.make`)."""
    import rducc

    torch.manual_seed(seed)
    token, cos, sin, *caches = models.decode_step_inputs(config, cached, device=device, dtype=dtype, seed=seed)
    builder = _BUILDERS[form]
    in_place = FORMS[form][1] == "buffers"
    with rducc.empty_weights() if device == "meta" else torch.device(device):
        model = builder(config, cached) if in_place else builder(config)
    inputs = (token, cos, sin) if in_place else (token, cos, sin, *_CACHE_LAYOUTS[FORMS[form][1]](caches))
    return model.to(dtype).eval(), inputs


LAYER_COUNT = "layer count"
"""An override that takes the layer count."""
_LLAMA_8B = dict(vocab_size=128256, hidden_size=4096, intermediate_size=14336, num_attention_heads=32,
                 num_key_value_heads=8, max_position_embeddings=8192)
FAMILIES: dict[str, tuple[str, str, dict]] = {
    "olmo": ("OlmoConfig", "OlmoForCausalLM", {}),
    "olmo2": ("Olmo2Config", "Olmo2ForCausalLM", {}),
    "qwen3": ("Qwen3Config", "Qwen3ForCausalLM", {"head_dim": 128, "tie_word_embeddings": False}),
    "granite": ("GraniteConfig", "GraniteForCausalLM", {"tie_word_embeddings": False}),
    "stablelm": ("StableLmConfig", "StableLmForCausalLM", {}),
    "starcoder2": ("Starcoder2Config", "Starcoder2ForCausalLM", {"sliding_window": None,
                                                                  "tie_word_embeddings": False}),
    "cohere": ("CohereConfig", "CohereForCausalLM", {"tie_word_embeddings": False}),
    "gptj": ("GPTJConfig", "GPTJForCausalLM", {"n_embd": 4096, "n_head": 32, "n_layer": LAYER_COUNT, "rotary_dim": 64,
                                               "n_positions": 8192, "n_inner": 14336, "num_key_value_heads": 32}),
    "falcon": ("FalconConfig", "FalconForCausalLM", {"new_decoder_architecture": True, "num_kv_heads": 8,
                                                     "parallel_attn": True, "bias": False,
                                                     "tie_word_embeddings": False}),
    "glm": ("GlmConfig", "GlmForCausalLM", {"head_dim": 128, "pad_token_id": 0, "eos_token_id": 0}),
    "exaone4": ("Exaone4Config", "Exaone4ForCausalLM", {"tie_word_embeddings": False}),
    "helium": ("HeliumConfig", "HeliumForCausalLM", {"head_dim": 128, "tie_word_embeddings": False}),
    "nemotron": ("NemotronConfig", "NemotronForCausalLM", {"head_dim": 128, "tie_word_embeddings": False}),
    "phi": ("PhiConfig", "PhiForCausalLM", {"partial_rotary_factor": 0.5, "tie_word_embeddings": False}),
    "mistral_window": ("MistralConfig", "MistralForCausalLM", {"sliding_window": 2048, "head_dim": 128}),
    "mixtral": ("MixtralConfig", "MixtralForCausalLM", {"num_local_experts": 4, "num_experts_per_tok": 2,
                                                         "sliding_window": None, "head_dim": 128}),
    "mixtral8": ("MixtralConfig", "MixtralForCausalLM", {"num_local_experts": 8, "num_experts_per_tok": 2,
                                                          "sliding_window": None, "head_dim": 128}),
    "arcee": ("ArceeConfig", "ArceeForCausalLM", {"head_dim": 128, "tie_word_embeddings": False}),
    "glm4": ("Glm4Config", "Glm4ForCausalLM", {"head_dim": 128, "pad_token_id": 0, "eos_token_id": 0}),
    "smollm3": ("SmolLM3Config", "SmolLM3ForCausalLM", {"tie_word_embeddings": False, "pad_token_id": 0}),
    "gemma3": ("Gemma3TextConfig", "Gemma3ForCausalLM", {"head_dim": 128}),
    "seed_oss": ("SeedOssConfig", "SeedOssForCausalLM", {"head_dim": 128, "tie_word_embeddings": False}),
    "ernie4_5": ("Ernie4_5Config", "Ernie4_5ForCausalLM", {"head_dim": 128, "tie_word_embeddings": False}),
    "apertus": ("ApertusConfig", "ApertusForCausalLM", {"head_dim": 128, "tie_word_embeddings": False}),
    "hunyuan_dense": ("HunYuanDenseV1Config", "HunYuanDenseV1ForCausalLM", {"head_dim": 128,
                                                                            "tie_word_embeddings": False}),
    "qwen2_moe": ("Qwen2MoeConfig", "Qwen2MoeForCausalLM", {"num_experts": 8, "num_experts_per_tok": 2,
                                                             "moe_intermediate_size": 3584,
                                                             "shared_expert_intermediate_size": 14336,
                                                             "tie_word_embeddings": False}),
    "olmoe": ("OlmoeConfig", "OlmoeForCausalLM", {"num_experts": 8, "num_experts_per_tok": 1}),
    "granitemoe_shared": ("GraniteMoeSharedConfig", "GraniteMoeSharedForCausalLM", {
        "num_local_experts": 8, "num_experts_per_tok": 2, "shared_intermediate_size": 7168,
        "tie_word_embeddings": False}),
    "qwen3_moe": ("Qwen3MoeConfig", "Qwen3MoeForCausalLM", {"num_experts": 16, "num_experts_per_tok": 1,
                                                             "moe_intermediate_size": 1792, "head_dim": 128,
                                                             "tie_word_embeddings": False}),
}
"""Per family: (config class, causal-LM class, overrides of Llama 3.1 8B's widths; `LAYER_COUNT` takes
the layer count). `mixtral` has 4 experts, `mixtral8` Mixtral 8x7B's 8 (its router as wide as the
sockets of sn40l-8). GPT-J has no grouped-query heads: its static cache is sized by `num_key_value_heads`,
so that is its head count. Exaone4 keeps its own sliding window (4,096) and pattern: three sliding-window
layers with rotary, then a global one without."""


def family_config(family: str, layers: int, small: bool = False):
    """`family`'s config at Llama 3.1 8B's widths (or tiny ones), `layers` layers."""
    import transformers

    config_class, _, overrides = FAMILIES[family]
    sizes = dict(_LLAMA_8B) if not small else dict(
        vocab_size=128, hidden_size=64, intermediate_size=128, num_attention_heads=8, num_key_value_heads=4,
        max_position_embeddings=64)
    sizes["num_hidden_layers"] = layers
    overrides = {k: (layers if v is LAYER_COUNT else v) for k, v in overrides.items()}
    if small:
        overrides = {k: v for k, v in overrides.items() if k in (
            "tie_word_embeddings", "sliding_window", "new_decoder_architecture", "parallel_attn", "bias",
            "pad_token_id", "eos_token_id")}
        if family == "gptj":
            overrides.update(n_embd=64, n_head=8, n_layer=layers, rotary_dim=4, n_positions=64, n_inner=128,
                             num_key_value_heads=8)
        if family == "falcon":
            overrides["num_kv_heads"] = 4
    return getattr(transformers, config_class)(**(sizes | overrides))


def family_decode(family: str, layers: int, small: bool = False, seed: int = 0):
    """transformers' `family` decode step with its static cache of CACHED positions (small: 64), exported:
    (wrapper, ExportedProgram, example kwargs). Small on the CPU (f32), else on the meta device (bf16)."""
    import transformers
    from transformers.integrations.executorch import TorchExportableModuleWithStaticCache

    torch.manual_seed(seed)
    config = family_config(family, layers, small)
    device, dtype = ("cpu", torch.float32) if small else ("meta", torch.bfloat16)
    with torch.device(device):
        model = getattr(transformers, FAMILIES[family][1])(config).to(dtype).eval()
    model.generation_config.use_cache = True
    model.generation_config.cache_implementation = "static"
    wrapper = TorchExportableModuleWithStaticCache(model, batch_size=1, max_cache_len=16 if small else CACHED)
    example = {"input_ids": torch.zeros(1, 1, dtype=torch.long, device=device),
               "cache_position": torch.tensor([3], device=device)}
    with torch.no_grad():
        return wrapper, torch.export.export(wrapper, (), example, strict=True), example


def _compile_form(form: str, targets: tuple[str, ...], layers: int):
    config = models.llama31_8b_config(layers)
    model, inputs = make(form, config, CACHED, device="meta", dtype=torch.bfloat16)
    leaves = tuple(torch.utils._pytree.tree_leaves(inputs))  # `dict_caches` passes a dict
    return decode_forms._lowered(decompose(models.export(model, inputs)),
                                 decode_forms.bytes_per_token(model, leaves), targets)


def _compile_family(family: str, targets: tuple[str, ...], layers: int):
    wrapper, exported, _ = family_decode(family, layers)
    return decode_forms._lowered(decompose(exported), decode_forms.hf_bytes_per_token(wrapper), targets)


def config_period(config, layers: int) -> int:
    """The period of a config's per-layer lists (`layer_types`, `no_rope_layers`, ...: each
    a list with one entry a layer): the fewest layers after which every list repeats (1: none,
    or all uniform)."""
    lists = [v for v in vars(config).values() if isinstance(v, list) and len(v) == layers]
    return next(p for p in range(1, layers + 1) if all(v[i] == v[i + p] for v in lists for i in range(layers - p)))


def loop_goals(config, layers: int) -> tuple[int, ...]:
    """The looped run's call counts that cover the stack: one call a layer, or one a whole
    period where the layers repeat with a longer period (Exaone4's and SmolLM3's four)."""
    return tuple(sorted({layers, layers // config_period(config, layers)}, reverse=True))


def _loop_calls(report) -> int:
    """The calls of the longest looped run of `@layer` calls (0: none looped)."""
    return max((loop.calls for loop in report.loops if loop.looped), default=0)


def _row(section: Section, name: str, results, expected_calls: tuple[int, ...], reference, versus: str,
         kv: tuple[int, int]) -> None:
    """One figure per target: one loop of one of `expected_calls` calls (a layer's, a period's),
    and within 2% of `reference`
    (a time per target, or `modules`' time beyond its reads per target where `versus` is the own
    roofline: `own_reference_s` of the KV state `kv`). The share printed is of the aggregate-HBM
    roofline."""
    from rducc.targets import load_target

    for target_name, report, needed, seconds in results:
        target = load_target(target_name)
        roofline_s = needed / (target.sockets * target.hbm_bandwidth)
        time_s = report.modeled_time_s
        expected = (reference[target_name] if versus == "modules"
                    else own_reference_s(needed, kv, target, reference))
        off = time_s / expected - 1
        looped = _loop_calls(report)
        section.add(f"{name} on {target_name}: looped / roofline / off",
                    f"{report.kernel_launches} launches ({decode_forms._loops(report)}); {roofline_s / time_s:.1%} "
                    f"of roofline ({time_s * 1e3:.3f} ms); {1 / time_s:,.0f} tok/s; {off:+.2%} vs {versus}",
                    f"one loop of {' or '.join(map(str, expected_calls))}, within 2%",
                    looped in expected_calls and abs(off) <= 0.02)
        print(section.figures[-1].name, section.figures[-1].value, f"[{seconds:.0f} s]", file=sys.stderr,
              flush=True)


def _selected(argv: list[str], flag: str, known) -> tuple[str, ...]:
    """The names `flag a,b` gives (removed from `argv`; `none`: none); all of `known` without it."""
    if flag not in argv:
        return tuple(known)
    at = argv.index(flag)
    named = argv[at + 1].split(",") if at + 1 < len(argv) else []
    del argv[at:at + 2]
    if named == ["none"]:
        return ()
    if not named or any(name not in known for name in named):
        sys.exit(f"heldout_decode_forms: {flag} takes none or names of {', '.join(known)}, got {named}")
    return tuple(named)


FORM_CALLS: dict[str, Callable[[int], tuple[int, ...]]] = {"dense_ends": lambda layers: (layers - 2,)}
"""Forms whose looped run is not one call a layer: the call counts it may have, given the layer count."""


def parse_layers_and_targets(argv: list[str]) -> None:
    """`--targets a,b` and `--layers N` (removed from `argv`) into TARGETS and LAYERS."""
    global TARGETS, LAYERS
    TARGETS = _selected(argv, "--targets", decode_forms.TARGETS) or decode_forms.TARGETS
    if "--layers" in argv:
        at = argv.index("--layers")
        LAYERS = int(argv[at + 1])
        del argv[at:at + 2]


SELECTED_FORMS: tuple[str, ...] = tuple(FORMS)
SELECTED_FAMILIES: tuple[str, ...] = tuple(FAMILIES)
LAYERS: int | None = None
TARGETS: tuple[str, ...] = decode_forms.TARGETS
"""The targets a run compiles for (`--targets`)."""
SCRIPT = "bench/heldout_decode_forms.py"
"""The script a run's section names in its command (a round file beside this one sets its own)."""


def run(quick: bool) -> Section:
    layers = LAYERS or (4 if quick else 32)
    command = (f"python {SCRIPT}" + " --quick" * quick + (f" --layers {LAYERS}" if LAYERS else "")
               + (f" --targets {','.join(TARGETS)}" if TARGETS != decode_forms.TARGETS else ""))
    section = Section(f"Held-out decode forms and families: 8B widths ({layers} layers), cache 4,096 (cost model)",
                      command)
    targets = TARGETS
    modules = decode_forms.compile_form("modules", targets, layers)
    times = {t: r.modeled_time_s for t, r, _, _ in modules}
    llama_kv = kv_state(models.llama31_8b_config(layers), layers, CACHED)
    beyond = beyond_reads(modules, llama_kv)
    _row(section, "modules", modules, (layers,), times, "modules", llama_kv)
    for form in SELECTED_FORMS:
        versus = FORMS[form][0]
        calls = FORM_CALLS.get(form, lambda count: (count,))(layers)
        _row(section, form, _compile_form(form, targets, layers), calls,
             times if versus == "modules" else beyond, versus, llama_kv)
    for family in SELECTED_FAMILIES:
        try:
            results = _compile_family(family, targets, layers)
        except Exception as failure:  # noqa: BLE001 - a family that does not compile is a row
            section.add(f"transformers {family}: compiles", f"{type(failure).__name__}: "
                        f"{str(failure).splitlines()[0][:200] if str(failure) else ''}", "compiles", False)
            print(section.figures[-1].name, section.figures[-1].value, file=sys.stderr, flush=True)
            continue
        config = family_config(family, layers)
        _row(section, f"transformers {family}", results, loop_goals(config, layers), beyond, "own roofline",
             kv_state(config, layers, CACHED))
    return section


if __name__ == "__main__":
    SELECTED_FORMS = _selected(sys.argv, "--forms", FORMS)
    SELECTED_FAMILIES = _selected(sys.argv, "--families", FAMILIES)
    parse_layers_and_targets(sys.argv)
    standalone(run, __doc__)
