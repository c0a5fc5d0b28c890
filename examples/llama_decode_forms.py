"""One Llama decode step written in several ways: the same math, other code.

Every form computes what `models.LlamaDecodeStep` computes for one new token
(batch 1): embedding, `layers` pre-norm decoder layers (RMS norm, rotary
embedding given as cos/sin inputs, grouped-query attention over a KV cache of
`cached` positions and the new token, SwiGLU MLP, residual adds), the final
norm and the LM head. What differs is only how the source is written:

- `modules`: BENCHMARKS' form (`models.LlamaDecodeStep`): a `ModuleList` of
  layer modules, the residual adds inside, the query heads grouped by a reshape.
- `parent_calls`: no layer module is called: the parent's forward does every
  layer's math with `F.linear` on per-layer weights; the cache is extended by
  `torch.cat`, the KV heads repeated by `repeat_interleave`.
- `residual_in_parent`: the layers' attention and MLP are called as modules
  that return deltas; the parent does the residual adds. The caches are
  buffers updated in place (`index_copy_`), the KV heads repeated by
  `expand` + `reshape` (transformers' `repeat_kv`).
- `residual_first`: vLLM's form: each layer starts with the previous
  layer's residual add (`hidden, residual = layer(hidden, residual)`), the
  last add is in the final norm. The caches are buffers updated by slice
  assignment, the KV heads repeated by `Tensor.repeat`.
- `stacked`: one stacked cache input [layers, 2, 1, kv_heads, cached,
  head_dim], layer `i` reads `kv[i, 0]` and `kv[i, 1]`; attention by a
  grouped-query reshape.
- `norm_after`: each layer ends with the next layer's input norm (the
  final norm for the last layer); the first layer's input norm is in the parent.
- `index_heads`: BENCHMARKS' layers but the KV heads repeated by indexing
  with a head map buffer made in `__init__` (`k_cache[:, head_map]`),
  attention over all heads. Built on the meta device under
  `rducc.empty_weights()`, which keeps the map's values.
- `index_select_heads`: layer modules that compute the head map in forward
  (`arange(heads).div(group, rounding_mode="floor")`) and repeat the KV
  heads by `index_select`: the map's values are the program's own (an
  `rdu.iota` and a map), known to the compiler on any device.
- `sdpa_loop`: layers as modules called through a plain Python list of
  functions over `torch.nn.functional.scaled_dot_product_attention` with
  `enable_gqa`; the new key and value concatenated to the cache.
- `fused_qkv`: one fused q/k/v weight whose projection is cut by
  `torch.split`, gate and up fused and cut by `chunk`, the norms torch's own
  `nn.RMSNorm` modules, the cache extended by `torch.cat` and the query heads
  grouped by a reshape (`_attend_split`'s math over the concatenated keys).
- `sqrt_einsum`: a layer function called with each layer's weights; RMS
  norm written as `x / sqrt(mean + eps)`, projections as `x @ w.T`,
  attention scores and the weighted sum by `torch.einsum` over grouped query
  heads.
- `stacked_weights`: every weight of a kind stacked over the layers in one
  parameter ([layers, out, in]), a functional layer called in a loop with
  `weights[i]`; residual adds in place (`x += ...`).
- `scatter_cache`: layer modules whose cache buffers are updated by
  `scatter_` with the position index expanded over heads and head dim, the
  KV heads repeated by `unsqueeze` + `expand` + `flatten`, attention by
  `torch.matmul`.
- `gate_up_linear`: `parent_calls` with each layer's gate and up weights one
  fused parameter, the MLP `F.linear(normed, gate_up).chunk(2, -1)`.
- `helper_stacked`: layers in a `ModuleList` called through a module-level
  helper function (`run_decoder`) with the cache passed as one stacked
  tensor [2, layers, 1, kv_heads, cached, head_dim] (keys first) and
  `unbind`; each layer returns its new key and value stacked, and the step
  returns them stacked again [layers, 2, ...]; GQA by `expand` + `reshape`
  of the concatenated cache.
- `hand_norm_softmax`: layer modules whose RMS norm is written by hand with
  eps inside the mean (`rsqrt((x * x + eps).mean(-1))`, the weight applied
  in f32 before the cast back), rotary by `chunk`, softmax by hand
  (`amax`, `exp`, `sum`), the KV heads repeated by `index_select` with a map
  made by `arange(kv).repeat_interleave(group)`, residual adds by
  `torch.add`.

`make(form, config, cached, device, dtype, seed)` gives (model, inputs);
in-place forms hold a cache of `cached + 1` positions whose last one the
step writes (the others attend to the cache and the new token apart), so
every form reads the same bytes. `FORMS` lists them.
"""

from __future__ import annotations

from collections.abc import Callable

import models
import torch
from torch import nn
from torch.nn import functional as F

import rducc

FORMS = ("modules", "parent_calls", "residual_in_parent", "residual_first", "stacked", "norm_after", "sdpa_loop",
         "index_heads", "index_select_heads", "fused_qkv", "sqrt_einsum", "stacked_weights", "scatter_cache",
         "gate_up_linear", "helper_stacked", "hand_norm_softmax")
KNOWN_GAPS: dict[str, str] = {}
"""Forms the compiler does not yet give BENCHMARKS' time on every target, and why."""

META_GAPS: dict[str, str] = {}
"""Forms whose gap is only that a meta-device compile lacks values the mechanism needs."""

TIME_GAPS: dict[str, dict[str, str]] = {}
"""Per form, the targets where it loops as one layer but its modeled time is more than 2% off, and why."""


def rms(x: torch.Tensor, weight: torch.Tensor, eps: float) -> torch.Tensor:
    """Llama's RMS norm (in f32, cast back)."""
    x32 = x.float()
    x32 = x32 * torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + eps)
    return weight * x32.to(x.dtype)


def rope(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """Rotary embedding, rotate-half form."""
    half = x.shape[-1] // 2
    return x * cos + torch.cat((-x[..., half:], x[..., :half]), dim=-1) * sin


class Weights(nn.Module):
    """One layer's weights (Llama names), used by forms that do not call the layer's modules."""

    def __init__(self, hidden: int, intermediate: int, heads: int, kv_heads: int) -> None:
        super().__init__()
        dim = hidden // heads
        self.input_layernorm = nn.Parameter(torch.ones(hidden))
        self.q_proj = nn.Parameter(torch.randn(heads * dim, hidden) * hidden**-0.5)
        self.k_proj = nn.Parameter(torch.randn(kv_heads * dim, hidden) * hidden**-0.5)
        self.v_proj = nn.Parameter(torch.randn(kv_heads * dim, hidden) * hidden**-0.5)
        self.o_proj = nn.Parameter(torch.randn(hidden, heads * dim) * hidden**-0.5)
        self.post_attention_layernorm = nn.Parameter(torch.ones(hidden))
        self.gate_proj = nn.Parameter(torch.randn(intermediate, hidden) * hidden**-0.5)
        self.up_proj = nn.Parameter(torch.randn(intermediate, hidden) * hidden**-0.5)
        self.down_proj = nn.Parameter(torch.randn(hidden, intermediate) * intermediate**-0.5)


def _sizes(config) -> tuple[int, int, int, int, int, float]:
    heads, kv = config.num_attention_heads, config.num_key_value_heads
    return config.hidden_size, config.intermediate_size, heads, kv, config.hidden_size // heads, config.rms_norm_eps


class _Base(nn.Module):
    """Embedding, final norm and head shared by the forms (weights made from `config`)."""

    def __init__(self, config) -> None:
        super().__init__()
        self.hidden, self.intermediate, self.heads, self.kv, self.dim, self.eps = _sizes(config)
        self.layer_count = config.num_hidden_layers
        self.embed_tokens = nn.Embedding(config.vocab_size, self.hidden)
        self.norm = nn.Parameter(torch.ones(self.hidden))
        self.lm_head = nn.Linear(self.hidden, config.vocab_size, bias=False)

    def head(self, x: torch.Tensor) -> torch.Tensor:
        return self.lm_head(rms(x, self.norm, self.eps))


def _attend_split(q, k, v, k_cache, v_cache, dim: int):
    """Grouped queries [1, kv, group, dim] against the cache and the new key apart, softmaxed together."""
    scores = torch.cat((q @ k_cache.transpose(-1, -2), q @ k.transpose(-1, -2)), dim=-1) * dim**-0.5
    weights = torch.softmax(scores.float(), dim=-1).to(q.dtype)
    cached = k_cache.shape[-2]
    return weights[..., :cached] @ v_cache + weights[..., cached:] @ v


def _attend_full(q, keys, values, dim: int):
    """Queries [1, heads, 1, dim] against keys and values [1, heads, positions, dim]."""
    weights = torch.softmax((q @ keys.transpose(-1, -2) * dim**-0.5).float(), dim=-1).to(q.dtype)
    return weights @ values


# -- parent_calls -------------------------------------------------------------------


class ParentCalls(_Base):
    def __init__(self, config) -> None:
        super().__init__(config)
        self.layers = nn.ModuleList(Weights(self.hidden, self.intermediate, self.heads, self.kv)
                                    for _ in range(self.layer_count))

    def forward(self, input_ids, cos, sin, *caches):
        x = self.embed_tokens(input_ids)
        updates = []
        group = self.heads // self.kv
        for index in range(self.layer_count):
            w = self.layers[index]
            normed = rms(x, w.input_layernorm, self.eps)
            q = rope(F.linear(normed, w.q_proj).view(1, 1, self.heads, self.dim).transpose(1, 2), cos, sin)
            k = rope(F.linear(normed, w.k_proj).view(1, 1, self.kv, self.dim).transpose(1, 2), cos, sin)
            v = F.linear(normed, w.v_proj).view(1, 1, self.kv, self.dim).transpose(1, 2)
            keys = torch.cat((caches[2 * index], k), dim=2).repeat_interleave(group, dim=1)
            values = torch.cat((caches[2 * index + 1], v), dim=2).repeat_interleave(group, dim=1)
            attended = _attend_full(q, keys, values, self.dim)
            x = x + F.linear(attended.transpose(1, 2).reshape(1, 1, self.hidden), w.o_proj)
            normed = rms(x, w.post_attention_layernorm, self.eps)
            x = x + F.linear(F.silu(F.linear(normed, w.gate_proj)) * F.linear(normed, w.up_proj), w.down_proj)
            updates += [k, v]
        return (self.head(x), *updates)


# -- residual_in_parent ---------------------------------------------------------------


class Attention(nn.Module):
    """Norm + attention, updating its own cache buffers in place (`index_copy_`)."""

    def __init__(self, hidden: int, heads: int, kv: int, eps: float, cached: int) -> None:
        super().__init__()
        self.heads, self.kv, self.dim, self.eps, self.cached = heads, kv, hidden // heads, eps, cached
        self.input_layernorm = nn.Parameter(torch.ones(hidden))
        self.q_proj = nn.Linear(hidden, hidden, bias=False)
        self.k_proj = nn.Linear(hidden, kv * self.dim, bias=False)
        self.v_proj = nn.Linear(hidden, kv * self.dim, bias=False)
        self.o_proj = nn.Linear(hidden, hidden, bias=False)
        self.register_buffer("k_cache", torch.zeros(1, kv, cached + 1, self.dim))
        self.register_buffer("v_cache", torch.zeros(1, kv, cached + 1, self.dim))

    def forward(self, x, cos, sin):
        normed = rms(x, self.input_layernorm, self.eps)
        q = rope(self.q_proj(normed).view(1, 1, self.heads, self.dim).transpose(1, 2), cos, sin)
        k = rope(self.k_proj(normed).view(1, 1, self.kv, self.dim).transpose(1, 2), cos, sin)
        v = self.v_proj(normed).view(1, 1, self.kv, self.dim).transpose(1, 2)
        position = torch.tensor([self.cached], device=x.device)
        self.k_cache.index_copy_(2, position, k)
        self.v_cache.index_copy_(2, position, v)
        group = self.heads // self.kv
        keys = self.k_cache[:, :, None].expand(1, self.kv, group, self.cached + 1, self.dim)
        values = self.v_cache[:, :, None].expand(1, self.kv, group, self.cached + 1, self.dim)
        attended = _attend_full(q, keys.reshape(1, self.heads, self.cached + 1, self.dim),
                                values.reshape(1, self.heads, self.cached + 1, self.dim), self.dim)
        return self.o_proj(attended.transpose(1, 2).reshape(1, 1, -1))


class Mlp(nn.Module):
    """Norm + SwiGLU MLP."""

    def __init__(self, hidden: int, intermediate: int, eps: float) -> None:
        super().__init__()
        self.eps = eps
        self.post_attention_layernorm = nn.Parameter(torch.ones(hidden))
        self.gate_proj = nn.Linear(hidden, intermediate, bias=False)
        self.up_proj = nn.Linear(hidden, intermediate, bias=False)
        self.down_proj = nn.Linear(intermediate, hidden, bias=False)

    def forward(self, x):
        normed = rms(x, self.post_attention_layernorm, self.eps)
        return self.down_proj(F.silu(self.gate_proj(normed)) * self.up_proj(normed))


class HalfLayers(nn.Module):
    def __init__(self, hidden: int, intermediate: int, heads: int, kv: int, eps: float, cached: int) -> None:
        super().__init__()
        self.self_attn = Attention(hidden, heads, kv, eps, cached)
        self.mlp = Mlp(hidden, intermediate, eps)


class ResidualInParent(_Base):
    def __init__(self, config, cached: int) -> None:
        super().__init__(config)
        self.layers = nn.ModuleList(HalfLayers(self.hidden, self.intermediate, self.heads, self.kv, self.eps, cached)
                                    for _ in range(self.layer_count))

    def forward(self, input_ids, cos, sin):
        x = self.embed_tokens(input_ids)
        for layer in self.layers:
            x = x + layer.self_attn(x, cos, sin)
            x = x + layer.mlp(x)
        return self.head(x)


# -- residual_first ---------------------------------------------------------------------


class ResidualFirstLayer(nn.Module):
    """vLLM's layer: the previous residual add first; caches updated by slice assignment."""

    def __init__(self, hidden: int, intermediate: int, heads: int, kv: int, eps: float, cached: int) -> None:
        super().__init__()
        self.heads, self.kv, self.dim, self.eps, self.cached = heads, kv, hidden // heads, eps, cached
        self.w = Weights(hidden, intermediate, heads, kv)
        self.register_buffer("k_cache", torch.zeros(1, kv, cached + 1, self.dim))
        self.register_buffer("v_cache", torch.zeros(1, kv, cached + 1, self.dim))

    def forward(self, hidden, residual, cos, sin):
        w = self.w
        residual = hidden if residual is None else hidden + residual
        normed = rms(residual, w.input_layernorm, self.eps)
        q = rope(F.linear(normed, w.q_proj).view(1, 1, self.heads, self.dim).transpose(1, 2), cos, sin)
        k = rope(F.linear(normed, w.k_proj).view(1, 1, self.kv, self.dim).transpose(1, 2), cos, sin)
        v = F.linear(normed, w.v_proj).view(1, 1, self.kv, self.dim).transpose(1, 2)
        self.k_cache[:, :, self.cached:] = k
        self.v_cache[:, :, self.cached:] = v
        group = self.heads // self.kv
        keys = self.k_cache[:, :, None].repeat(1, 1, group, 1, 1).reshape(1, self.heads, self.cached + 1, self.dim)
        values = self.v_cache[:, :, None].repeat(1, 1, group, 1, 1).reshape(1, self.heads, self.cached + 1, self.dim)
        attended = _attend_full(q, keys, values, self.dim)
        hidden = F.linear(attended.transpose(1, 2).reshape(1, 1, -1), w.o_proj)
        residual = hidden + residual
        normed = rms(residual, w.post_attention_layernorm, self.eps)
        hidden = F.linear(F.silu(F.linear(normed, w.gate_proj)) * F.linear(normed, w.up_proj), w.down_proj)
        return hidden, residual


class ResidualFirst(_Base):
    def __init__(self, config, cached: int) -> None:
        super().__init__(config)
        self.layers = nn.ModuleList(
            ResidualFirstLayer(self.hidden, self.intermediate, self.heads, self.kv, self.eps, cached)
            for _ in range(self.layer_count))

    def forward(self, input_ids, cos, sin):
        hidden, residual = self.embed_tokens(input_ids), None
        for layer in self.layers:
            hidden, residual = layer(hidden, residual, cos, sin)
        return self.head(hidden + residual)


# -- stacked ------------------------------------------------------------------------------


class Stacked(models.LlamaDecodeStep):
    """BENCHMARKS' layers over one stacked cache [layers, 2, 1, kv_heads, cached, head_dim]."""

    def forward(self, input_ids, cos, sin, kv):
        x = self.embed_tokens(input_ids)
        updates = []
        for index, layer in enumerate(self.layers):
            x, k, v = layer(x, cos, sin, kv[index, 0], kv[index, 1])
            updates += [k, v]
        return (self.lm_head(self.norm(x)), *updates)


# -- norm_after -----------------------------------------------------------------------------


class NormAfterLayer(nn.Module):
    """A layer given its input already normed; it ends with the next layer's input norm."""

    def __init__(self, hidden: int, intermediate: int, heads: int, kv: int, eps: float) -> None:
        super().__init__()
        self.heads, self.kv, self.dim, self.eps = heads, kv, hidden // heads, eps
        self.w = Weights(hidden, intermediate, heads, kv)
        self.next_norm = nn.Parameter(torch.ones(hidden))

    def forward(self, x, normed, cos, sin, k_cache, v_cache):
        w, group = self.w, self.heads // self.kv
        q = rope(F.linear(normed, w.q_proj).view(1, self.kv, group, self.dim), cos, sin)
        k = rope(F.linear(normed, w.k_proj).view(1, self.kv, 1, self.dim), cos, sin)
        v = F.linear(normed, w.v_proj).view(1, self.kv, 1, self.dim)
        attended = _attend_split(q, k, v, k_cache, v_cache, self.dim)
        x = x + F.linear(attended.reshape(1, 1, -1), w.o_proj)
        normed = rms(x, w.post_attention_layernorm, self.eps)
        x = x + F.linear(F.silu(F.linear(normed, w.gate_proj)) * F.linear(normed, w.up_proj), w.down_proj)
        return x, rms(x, self.next_norm, self.eps), k, v


class NormAfter(_Base):
    def __init__(self, config) -> None:
        super().__init__(config)
        self.first_norm = nn.Parameter(torch.ones(self.hidden))
        self.layers = nn.ModuleList(NormAfterLayer(self.hidden, self.intermediate, self.heads, self.kv, self.eps)
                                    for _ in range(self.layer_count))

    def forward(self, input_ids, cos, sin, *caches):
        x = self.embed_tokens(input_ids)
        normed = rms(x, self.first_norm, self.eps)
        updates = []
        for index, layer in enumerate(self.layers):
            x, normed, k, v = layer(x, normed, cos, sin, caches[2 * index], caches[2 * index + 1])
            updates += [k, v]
        return (self.lm_head(normed), *updates)


# -- index_heads ---------------------------------------------------------------------------


class IndexHeads(ParentCalls):
    """The KV heads repeated by indexing with a head map buffer."""

    def __init__(self, config) -> None:
        super().__init__(config)
        self.register_buffer("head_map", torch.arange(self.heads) // (self.heads // self.kv), persistent=False)

    def forward(self, input_ids, cos, sin, *caches):
        x = self.embed_tokens(input_ids)
        updates = []
        for index, w in enumerate(self.layers):
            normed = rms(x, w.input_layernorm, self.eps)
            q = rope(F.linear(normed, w.q_proj).view(1, 1, self.heads, self.dim).transpose(1, 2), cos, sin)
            k = rope(F.linear(normed, w.k_proj).view(1, 1, self.kv, self.dim).transpose(1, 2), cos, sin)
            v = F.linear(normed, w.v_proj).view(1, 1, self.kv, self.dim).transpose(1, 2)
            keys = torch.cat((caches[2 * index], k), dim=2)[:, self.head_map]
            values = torch.cat((caches[2 * index + 1], v), dim=2)[:, self.head_map]
            x = x + F.linear(_attend_full(q, keys, values, self.dim).transpose(1, 2).reshape(1, 1, -1), w.o_proj)
            normed = rms(x, w.post_attention_layernorm, self.eps)
            x = x + F.linear(F.silu(F.linear(normed, w.gate_proj)) * F.linear(normed, w.up_proj), w.down_proj)
            updates += [k, v]
        return (self.head(x), *updates)


# -- index_select_heads ------------------------------------------------------------------------


class IndexSelectLayer(nn.Module):
    """A layer module that computes its head map in forward and repeats the KV heads by `index_select`."""

    def __init__(self, hidden: int, intermediate: int, heads: int, kv: int, eps: float) -> None:
        super().__init__()
        self.heads, self.kv, self.dim, self.eps = heads, kv, hidden // heads, eps
        self.w = Weights(hidden, intermediate, heads, kv)

    def forward(self, x, cos, sin, k_cache, v_cache):
        w = self.w
        head_map = torch.arange(self.heads, device=x.device).div(self.heads // self.kv, rounding_mode="floor")
        normed = rms(x, w.input_layernorm, self.eps)
        q = rope(F.linear(normed, w.q_proj).view(1, 1, self.heads, self.dim).transpose(1, 2), cos, sin)
        k = rope(F.linear(normed, w.k_proj).view(1, 1, self.kv, self.dim).transpose(1, 2), cos, sin)
        v = F.linear(normed, w.v_proj).view(1, 1, self.kv, self.dim).transpose(1, 2)
        keys = torch.cat((k_cache, k), dim=2).index_select(1, head_map)
        values = torch.cat((v_cache, v), dim=2).index_select(1, head_map)
        x = x + F.linear(_attend_full(q, keys, values, self.dim).transpose(1, 2).reshape(1, 1, -1), w.o_proj)
        normed = rms(x, w.post_attention_layernorm, self.eps)
        return x + F.linear(F.silu(F.linear(normed, w.gate_proj)) * F.linear(normed, w.up_proj), w.down_proj), k, v


class IndexSelectHeads(_Base):
    def __init__(self, config) -> None:
        super().__init__(config)
        self.layers = nn.ModuleList(IndexSelectLayer(self.hidden, self.intermediate, self.heads, self.kv, self.eps)
                                    for _ in range(self.layer_count))

    def forward(self, input_ids, cos, sin, *caches):
        x = self.embed_tokens(input_ids)
        updates = []
        for index, layer in enumerate(self.layers):
            x, k, v = layer(x, cos, sin, caches[2 * index], caches[2 * index + 1])
            updates += [k, v]
        return (self.head(x), *updates)


# -- sdpa_loop --------------------------------------------------------------------------------


class SdpaLoop(ParentCalls):
    """Per-layer weights called through a list of closures, attention by SDPA with enable_gqa."""

    def forward(self, input_ids, cos, sin, *caches):
        x = self.embed_tokens(input_ids)
        updates: list[torch.Tensor] = []
        steps: list[Callable] = [self._step(index) for index in range(self.layer_count)]
        for index, step in enumerate(steps):
            x = step(x, cos, sin, caches[2 * index], caches[2 * index + 1], updates)
        return (self.head(x), *updates)

    def _step(self, index: int) -> Callable:
        w = self.layers[index]

        def step(x, cos, sin, k_cache, v_cache, updates):
            h = x
            normed = rms(h, w.input_layernorm, self.eps)
            q = rope(F.linear(normed, w.q_proj).view(1, 1, self.heads, self.dim).transpose(1, 2), cos, sin)
            k = rope(F.linear(normed, w.k_proj).view(1, 1, self.kv, self.dim).transpose(1, 2), cos, sin)
            v = F.linear(normed, w.v_proj).view(1, 1, self.kv, self.dim).transpose(1, 2)
            attended = F.scaled_dot_product_attention(q, torch.cat((k_cache, k), 2), torch.cat((v_cache, v), 2),
                                                      enable_gqa=True)
            h = h + F.linear(attended.transpose(1, 2).reshape(1, 1, self.hidden), w.o_proj)
            normed = rms(h, w.post_attention_layernorm, self.eps)
            updates += [k, v]
            return h + F.linear(F.silu(F.linear(normed, w.gate_proj)) * F.linear(normed, w.up_proj), w.down_proj)

        return step


# -- fused_qkv --------------------------------------------------------------------------------


class FusedLayer(nn.Module):
    """q, k and v from one fused weight (`torch.split`), gate and up from another (`chunk`)."""

    def __init__(self, hidden: int, intermediate: int, heads: int, kv: int, eps: float) -> None:
        super().__init__()
        self.heads, self.kv, self.dim = heads, kv, hidden // heads
        self.input_layernorm = nn.RMSNorm(hidden, eps=eps)
        self.qkv_proj = nn.Linear(hidden, (heads + 2 * kv) * self.dim, bias=False)
        self.o_proj = nn.Linear(hidden, hidden, bias=False)
        self.post_attention_layernorm = nn.RMSNorm(hidden, eps=eps)
        self.gate_up_proj = nn.Linear(hidden, 2 * intermediate, bias=False)
        self.down_proj = nn.Linear(intermediate, hidden, bias=False)

    def forward(self, x, cos, sin, k_cache, v_cache):
        group = self.heads // self.kv
        q, k, v = self.qkv_proj(self.input_layernorm(x)).split(
            [self.heads * self.dim, self.kv * self.dim, self.kv * self.dim], dim=-1)
        q = rope(q.view(1, self.kv, group, self.dim), cos, sin)
        k = rope(k.view(1, self.kv, 1, self.dim), cos, sin)
        v = v.view(1, self.kv, 1, self.dim)
        keys, values = torch.cat((k_cache, k), dim=2), torch.cat((v_cache, v), dim=2)
        weights = torch.softmax((q @ keys.transpose(-1, -2) * self.dim**-0.5).float(), dim=-1).to(q.dtype)
        x = x + self.o_proj((weights @ values).reshape(1, 1, -1))
        gate, up = self.gate_up_proj(self.post_attention_layernorm(x)).chunk(2, dim=-1)
        return x + self.down_proj(F.silu(gate) * up), k, v


class FusedQkv(_Base):
    def __init__(self, config) -> None:
        super().__init__(config)
        self.layers = nn.ModuleList(FusedLayer(self.hidden, self.intermediate, self.heads, self.kv, self.eps)
                                    for _ in range(self.layer_count))

    def forward(self, input_ids, cos, sin, *caches):
        x = self.embed_tokens(input_ids)
        updates = []
        for index, layer in enumerate(self.layers):
            x, k, v = layer(x, cos, sin, caches[2 * index], caches[2 * index + 1])
            updates += [k, v]
        return (self.head(x), *updates)


# -- sqrt_einsum -------------------------------------------------------------------------------


def _rms_sqrt(x: torch.Tensor, weight: torch.Tensor, eps: float) -> torch.Tensor:
    """RMS norm written as a division by a square root (in f32, cast back)."""
    x32 = x.float()
    return weight * (x32 / torch.sqrt(x32.pow(2).mean(-1, keepdim=True) + eps)).to(x.dtype)


class SqrtEinsum(ParentCalls):
    """A layer function given each layer's weights; `@ w.T` projections, einsum attention."""

    def forward(self, input_ids, cos, sin, *caches):
        x = self.embed_tokens(input_ids)
        updates: list[torch.Tensor] = []
        for index, w in enumerate(self.layers):
            x, k, v = self._layer(x, cos, sin, caches[2 * index], caches[2 * index + 1], w)
            updates += [k, v]
        return (self.head(x), *updates)

    def _layer(self, x, cos, sin, k_cache, v_cache, w: Weights):
        group = self.heads // self.kv
        normed = _rms_sqrt(x, w.input_layernorm, self.eps)
        q = rope((normed @ w.q_proj.T).view(1, self.kv, group, self.dim), cos, sin)
        k = rope((normed @ w.k_proj.T).view(1, self.kv, 1, self.dim), cos, sin)
        v = (normed @ w.v_proj.T).view(1, self.kv, 1, self.dim)
        keys, values = torch.cat((k_cache, k), dim=2), torch.cat((v_cache, v), dim=2)
        scores = torch.einsum("bkgd,bkpd->bkgp", q, keys) * self.dim**-0.5
        weights = torch.softmax(scores.float(), dim=-1).to(q.dtype)
        attended = torch.einsum("bkgp,bkpd->bkgd", weights, values)
        x = x + attended.reshape(1, 1, -1) @ w.o_proj.T
        normed = _rms_sqrt(x, w.post_attention_layernorm, self.eps)
        x = x + (F.silu(normed @ w.gate_proj.T) * (normed @ w.up_proj.T)) @ w.down_proj.T
        return x, k, v


# -- stacked_weights ---------------------------------------------------------------------------

_STACKED = ("input_layernorm", "q_proj", "k_proj", "v_proj", "o_proj", "post_attention_layernorm", "gate_proj",
            "up_proj", "down_proj")


class StackedWeights(_Base):
    """Each weight kind one parameter stacked over the layers; a functional layer looped over them."""

    def __init__(self, config) -> None:
        super().__init__(config)
        one = [Weights(self.hidden, self.intermediate, self.heads, self.kv) for _ in range(self.layer_count)]
        for name in _STACKED:
            setattr(self, name, nn.Parameter(torch.stack([getattr(w, name).detach() for w in one])))

    def forward(self, input_ids, cos, sin, *caches):
        x = self.embed_tokens(input_ids)
        updates: list[torch.Tensor] = []
        for index in range(self.layer_count):
            k, v = self._layer(x, cos, sin, caches[2 * index], caches[2 * index + 1],
                               *(getattr(self, name)[index] for name in _STACKED))
            updates += [k, v]
        return (self.head(x), *updates)

    def _layer(self, x, cos, sin, k_cache, v_cache, ln1, wq, wk, wv, wo, ln2, wg, wu, wd):
        """One layer on its weights; adds its residuals to `x` in place; gives the new key and value."""
        normed = rms(x, ln1, self.eps)
        q = rope(F.linear(normed, wq).view(1, 1, self.heads, self.dim).transpose(1, 2), cos, sin)
        k = rope(F.linear(normed, wk).view(1, 1, self.kv, self.dim).transpose(1, 2), cos, sin)
        v = F.linear(normed, wv).view(1, 1, self.kv, self.dim).transpose(1, 2)
        attended = F.scaled_dot_product_attention(q, torch.cat((k_cache, k), 2), torch.cat((v_cache, v), 2),
                                                  enable_gqa=True)
        x += F.linear(attended.transpose(1, 2).reshape(1, 1, self.hidden), wo)
        normed = rms(x, ln2, self.eps)
        x += F.linear(F.silu(F.linear(normed, wg)) * F.linear(normed, wu), wd)
        return k, v


# -- scatter_cache --------------------------------------------------------------------------------


class ScatterCacheLayer(nn.Module):
    """Caches updated by `scatter_`; KV heads repeated by unsqueeze + expand + flatten."""

    def __init__(self, hidden: int, intermediate: int, heads: int, kv: int, eps: float, cached: int) -> None:
        super().__init__()
        self.heads, self.kv, self.dim, self.eps, self.cached = heads, kv, hidden // heads, eps, cached
        self.w = Weights(hidden, intermediate, heads, kv)
        self.register_buffer("k_cache", torch.zeros(1, kv, cached + 1, self.dim))
        self.register_buffer("v_cache", torch.zeros(1, kv, cached + 1, self.dim))

    def _repeated(self, cache: torch.Tensor) -> torch.Tensor:
        group = self.heads // self.kv
        return cache.unsqueeze(2).expand(-1, -1, group, -1, -1).flatten(1, 2)

    def forward(self, x, cos, sin):
        w = self.w
        normed = rms(x, w.input_layernorm, self.eps)
        q = rope(F.linear(normed, w.q_proj).view(1, 1, self.heads, self.dim).transpose(1, 2), cos, sin)
        k = rope(F.linear(normed, w.k_proj).view(1, 1, self.kv, self.dim).transpose(1, 2), cos, sin)
        v = F.linear(normed, w.v_proj).view(1, 1, self.kv, self.dim).transpose(1, 2)
        where = torch.full((1, self.kv, 1, self.dim), self.cached, dtype=torch.long, device=x.device)
        self.k_cache.scatter_(2, where, k)
        self.v_cache.scatter_(2, where, v)
        scores = torch.matmul(q, self._repeated(self.k_cache).transpose(2, 3)) * self.dim**-0.5
        weights = torch.softmax(scores.float(), dim=-1).to(q.dtype)
        attended = torch.matmul(weights, self._repeated(self.v_cache))
        x = x + F.linear(attended.transpose(1, 2).reshape(1, 1, -1), w.o_proj)
        normed = rms(x, w.post_attention_layernorm, self.eps)
        return x + F.linear(F.silu(F.linear(normed, w.gate_proj)) * F.linear(normed, w.up_proj), w.down_proj)


class ScatterCache(_Base):
    def __init__(self, config, cached: int) -> None:
        super().__init__(config)
        self.layers = nn.ModuleList(
            ScatterCacheLayer(self.hidden, self.intermediate, self.heads, self.kv, self.eps, cached)
            for _ in range(self.layer_count))

    def forward(self, input_ids, cos, sin):
        x = self.embed_tokens(input_ids)
        for layer in self.layers:
            x = layer(x, cos, sin)
        return self.head(x)


# -- gate_up_linear -------------------------------------------------------------------------------


class GateUpWeights(nn.Module):
    """One layer's weights with gate and up fused in one parameter [2 x intermediate, hidden]."""

    def __init__(self, hidden: int, intermediate: int, heads: int, kv: int) -> None:
        super().__init__()
        w = Weights(hidden, intermediate, heads, kv)
        for name in ("input_layernorm", "q_proj", "k_proj", "v_proj", "o_proj", "post_attention_layernorm",
                     "down_proj"):
            setattr(self, name, getattr(w, name))
        self.gate_up = nn.Parameter(torch.cat((w.gate_proj.detach(), w.up_proj.detach())))


class GateUpLinear(ParentCalls):
    """`parent_calls` with the MLP `F.linear` on a fused gate/up weight, chunked in two."""

    def __init__(self, config) -> None:
        super().__init__(config)
        self.layers = nn.ModuleList(GateUpWeights(self.hidden, self.intermediate, self.heads, self.kv)
                                    for _ in range(self.layer_count))

    def forward(self, input_ids, cos, sin, *caches):
        x = self.embed_tokens(input_ids)
        updates = []
        group = self.heads // self.kv
        for index, w in enumerate(self.layers):
            normed = rms(x, w.input_layernorm, self.eps)
            q = rope(F.linear(normed, w.q_proj).view(1, 1, self.heads, self.dim).transpose(1, 2), cos, sin)
            k = rope(F.linear(normed, w.k_proj).view(1, 1, self.kv, self.dim).transpose(1, 2), cos, sin)
            v = F.linear(normed, w.v_proj).view(1, 1, self.kv, self.dim).transpose(1, 2)
            keys = torch.cat((caches[2 * index], k), dim=2).repeat_interleave(group, dim=1)
            values = torch.cat((caches[2 * index + 1], v), dim=2).repeat_interleave(group, dim=1)
            x = x + F.linear(_attend_full(q, keys, values, self.dim).transpose(1, 2).reshape(1, 1, self.hidden),
                             w.o_proj)
            gate, up = F.linear(rms(x, w.post_attention_layernorm, self.eps), w.gate_up).chunk(2, dim=-1)
            x = x + F.linear(F.silu(gate) * up, w.down_proj)
            updates += [k, v]
        return (self.head(x), *updates)


# -- helper_stacked ------------------------------------------------------------------------------


class HelperLayer(nn.Module):
    """A layer given its cache windows; returns the new hidden and its new key and value stacked."""

    def __init__(self, hidden: int, intermediate: int, heads: int, kv: int, eps: float) -> None:
        super().__init__()
        self.heads, self.kv, self.dim, self.eps = heads, kv, hidden // heads, eps
        self.w = Weights(hidden, intermediate, heads, kv)

    def forward(self, x, cos, sin, k_cache, v_cache):
        w, group = self.w, self.heads // self.kv
        normed = rms(x, w.input_layernorm, self.eps)
        q = rope(F.linear(normed, w.q_proj).view(1, 1, self.heads, self.dim).transpose(1, 2), cos, sin)
        k = rope(F.linear(normed, w.k_proj).view(1, 1, self.kv, self.dim).transpose(1, 2), cos, sin)
        v = F.linear(normed, w.v_proj).view(1, 1, self.kv, self.dim).transpose(1, 2)
        keys, values = torch.cat((k_cache, k), dim=2), torch.cat((v_cache, v), dim=2)
        positions = keys.shape[2]
        keys = keys[:, :, None].expand(1, self.kv, group, positions, self.dim).reshape(1, self.heads, positions, -1)
        values = values[:, :, None].expand(1, self.kv, group, positions, self.dim).reshape(1, self.heads, positions, -1)
        x = x + F.linear(_attend_full(q, keys, values, self.dim).transpose(1, 2).reshape(1, 1, -1), w.o_proj)
        normed = rms(x, w.post_attention_layernorm, self.eps)
        x = x + F.linear(F.silu(F.linear(normed, w.gate_proj)) * F.linear(normed, w.up_proj), w.down_proj)
        return x, torch.stack((k, v))


def run_decoder(layers: nn.ModuleList, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor,
                kv: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Every layer over its windows of the stacked cache [2, layers, ...]; the new keys and
    values stacked [layers, 2, ...]."""
    k_caches, v_caches = kv.unbind(0)
    updates = []
    for layer, k_cache, v_cache in zip(layers, k_caches.unbind(0), v_caches.unbind(0)):
        x, update = layer(x, cos, sin, k_cache, v_cache)
        updates.append(update)
    return x, torch.stack(updates)


class HelperStacked(_Base):
    def __init__(self, config) -> None:
        super().__init__(config)
        self.layers = nn.ModuleList(HelperLayer(self.hidden, self.intermediate, self.heads, self.kv, self.eps)
                                    for _ in range(self.layer_count))

    def forward(self, input_ids, cos, sin, kv):
        x, updates = run_decoder(self.layers, self.embed_tokens(input_ids), cos, sin, kv)
        return self.head(x), updates


# -- hand_norm_softmax ----------------------------------------------------------------------------


class HandRMSNorm(nn.Module):
    """RMS norm by hand: eps inside the mean, the weight applied in f32 before the cast back."""

    def __init__(self, hidden: int, eps: float) -> None:
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(hidden))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x32 = x.to(torch.float32)
        return (self.weight.float() * x32 * torch.rsqrt((x32 * x32 + self.eps).mean(-1, keepdim=True))).to(x.dtype)


def _rope_chunked(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """Rotate-half rotary, the halves by `chunk`."""
    first, second = x.chunk(2, dim=-1)
    return x * cos + torch.cat((-second, first), dim=-1) * sin


class HandLayer(nn.Module):
    """Hand-written norm and softmax; KV heads repeated by index_select of a repeat_interleave'd map."""

    def __init__(self, hidden: int, intermediate: int, heads: int, kv: int, eps: float) -> None:
        super().__init__()
        self.heads, self.kv, self.dim = heads, kv, hidden // heads
        self.input_norm = HandRMSNorm(hidden, eps)
        self.q_proj = nn.Linear(hidden, heads * self.dim, bias=False)
        self.k_proj = nn.Linear(hidden, kv * self.dim, bias=False)
        self.v_proj = nn.Linear(hidden, kv * self.dim, bias=False)
        self.o_proj = nn.Linear(heads * self.dim, hidden, bias=False)
        self.mlp_norm = HandRMSNorm(hidden, eps)
        self.gate_proj = nn.Linear(hidden, intermediate, bias=False)
        self.up_proj = nn.Linear(hidden, intermediate, bias=False)
        self.down_proj = nn.Linear(intermediate, hidden, bias=False)

    def forward(self, x, cos, sin, k_cache, v_cache):
        normed = self.input_norm(x)
        q = _rope_chunked(self.q_proj(normed).view(1, 1, self.heads, self.dim).transpose(1, 2), cos, sin)
        k = _rope_chunked(self.k_proj(normed).view(1, 1, self.kv, self.dim).transpose(1, 2), cos, sin)
        v = self.v_proj(normed).view(1, 1, self.kv, self.dim).transpose(1, 2)
        head_map = torch.arange(self.kv, device=x.device).repeat_interleave(self.heads // self.kv)
        keys = torch.index_select(torch.cat((k_cache, k), dim=2), 1, head_map)
        values = torch.index_select(torch.cat((v_cache, v), dim=2), 1, head_map)
        scores = (torch.matmul(q, keys.transpose(-1, -2)) / self.dim**0.5).float()
        exp = torch.exp(scores - scores.amax(dim=-1, keepdim=True))
        weights = (exp / exp.sum(dim=-1, keepdim=True)).to(q.dtype)
        x = torch.add(x, self.o_proj(torch.matmul(weights, values).transpose(1, 2).reshape(1, 1, -1)))
        normed = self.mlp_norm(x)
        return torch.add(x, self.down_proj(F.silu(self.gate_proj(normed)) * self.up_proj(normed))), k, v


class HandNormSoftmax(_Base):
    def __init__(self, config) -> None:
        super().__init__(config)
        self.layers = nn.ModuleList(HandLayer(self.hidden, self.intermediate, self.heads, self.kv, self.eps)
                                    for _ in range(self.layer_count))

    def forward(self, input_ids, cos, sin, *caches):
        x = self.embed_tokens(input_ids)
        updates = []
        for index, layer in enumerate(self.layers):
            x, k, v = layer(x, cos, sin, caches[2 * index], caches[2 * index + 1])
            updates += [k, v]
        return (self.head(x), *updates)


# -- making them ------------------------------------------------------------------------------


def _caches(config, cached: int, device: str, dtype: torch.dtype, seed: int) -> list[torch.Tensor]:
    return list(models.decode_step_inputs(config, cached, device=device, dtype=dtype, seed=seed)[3:])


def make(form: str, config, cached: int, device: str = "cpu", dtype: torch.dtype = torch.float32,
         seed: int = 0) -> tuple[nn.Module, tuple[torch.Tensor, ...]]:
    """The decode step written as `form` (one of FORMS), and its inputs."""
    torch.manual_seed(seed)
    token, cos, sin, *caches = models.decode_step_inputs(config, cached, device=device, dtype=dtype, seed=seed)
    builders: dict[str, Callable[[], tuple[nn.Module, tuple]]] = {
        "modules": lambda: (models.LlamaDecodeStep(config), (token, cos, sin, *caches)),
        "parent_calls": lambda: (ParentCalls(config), (token, cos, sin, *caches)),
        "residual_in_parent": lambda: (ResidualInParent(config, cached), (token, cos, sin)),
        "residual_first": lambda: (ResidualFirst(config, cached), (token, cos, sin)),
        "stacked": lambda: (Stacked(config), (token, cos, sin, _stack(caches))),
        "norm_after": lambda: (NormAfter(config), (token, cos, sin, *caches)),
        "sdpa_loop": lambda: (SdpaLoop(config), (token, cos, sin, *caches)),
        "index_heads": lambda: (IndexHeads(config), (token, cos, sin, *caches)),
        "index_select_heads": lambda: (IndexSelectHeads(config), (token, cos, sin, *caches)),
        "fused_qkv": lambda: (FusedQkv(config), (token, cos, sin, *caches)),
        "sqrt_einsum": lambda: (SqrtEinsum(config), (token, cos, sin, *caches)),
        "stacked_weights": lambda: (StackedWeights(config), (token, cos, sin, *caches)),
        "scatter_cache": lambda: (ScatterCache(config, cached), (token, cos, sin)),
        "gate_up_linear": lambda: (GateUpLinear(config), (token, cos, sin, *caches)),
        "helper_stacked": lambda: (HelperStacked(config), (token, cos, sin, _stack_kv_first(caches))),
        "hand_norm_softmax": lambda: (HandNormSoftmax(config), (token, cos, sin, *caches)),
    }
    if form not in builders:
        raise ValueError(f"unknown form {form!r}; the forms: {', '.join(FORMS)}")
    with rducc.empty_weights() if device == "meta" else torch.device(device):
        model, inputs = builders[form]()
    return model.to(dtype).eval(), inputs


def _stack(caches: list[torch.Tensor]) -> torch.Tensor:
    """Per-layer key and value caches as one [layers, 2, ...] tensor."""
    return torch.stack([torch.stack(caches[i:i + 2]) for i in range(0, len(caches), 2)])


def _stack_kv_first(caches: list[torch.Tensor]) -> torch.Tensor:
    """Per-layer key and value caches as one [2, layers, ...] tensor (keys first)."""
    return torch.stack([torch.stack(caches[0::2]), torch.stack(caches[1::2])])


def tiny_config(layers: int = 3):
    """A tiny Llama config (4 heads over 2 KV heads) for tests."""
    from transformers import LlamaConfig

    return LlamaConfig(vocab_size=256, hidden_size=64, intermediate_size=128, num_hidden_layers=layers,
                       num_attention_heads=4, num_key_value_heads=2)


# -- transformers' decoders, exported for decode with their static cache ------------------------


def _hf_configs(small: bool, layers: int | None = None) -> dict[str, Callable[[], tuple]]:
    """Per family: (config, causal-LM class); small (tests) or Llama 3.1 8B's sizes (bench, meta);
    `layers` decoder layers (default: 2 small, 32 at 8B's sizes)."""
    import transformers as hf

    if small:
        sizes = dict(vocab_size=128, hidden_size=64, intermediate_size=128, num_hidden_layers=layers or 2,
                     num_attention_heads=8, num_key_value_heads=4, max_position_embeddings=64)
    else:
        sizes = dict(vocab_size=128256, hidden_size=4096, intermediate_size=14336, num_hidden_layers=layers or 32,
                     num_attention_heads=32, num_key_value_heads=8, max_position_embeddings=8192)
    neox = {k: v for k, v in sizes.items() if k != "num_key_value_heads"}
    return {
        "llama": lambda: (hf.LlamaConfig(**sizes), hf.LlamaForCausalLM),
        "mistral": lambda: (hf.MistralConfig(**sizes, sliding_window=None), hf.MistralForCausalLM),
        "qwen2": lambda: (hf.Qwen2Config(**sizes), hf.Qwen2ForCausalLM),
        "gemma2": lambda: (hf.Gemma2Config(**sizes, head_dim=sizes["hidden_size"] // sizes["num_attention_heads"]),
                           hf.Gemma2ForCausalLM),
        "phi3": lambda: (hf.Phi3Config(**sizes, pad_token_id=0), hf.Phi3ForCausalLM),
        "gpt_neox": lambda: (hf.GPTNeoXConfig(**neox), hf.GPTNeoXForCausalLM),
    }


HF_FAMILIES = ("llama", "mistral", "qwen2", "gemma2", "phi3", "gpt_neox")


def hf_decode(family: str, cached: int, small: bool = True, seed: int = 0, layers: int | None = None):
    """transformers' `family` decode step (one token at position 3) with its static KV
    cache of `cached` positions, exported: (wrapper, ExportedProgram, example kwargs).
    Small on the CPU (f32), or at Llama 3.1 8B's sizes on the meta device (bf16)."""
    from transformers.integrations.executorch import TorchExportableModuleWithStaticCache

    torch.manual_seed(seed)
    config, model_class = _hf_configs(small, layers)[family]()
    device, dtype = ("cpu", torch.float32) if small else ("meta", torch.bfloat16)
    with torch.device(device):
        model = model_class(config).to(dtype).eval()
    model.generation_config.use_cache = True
    model.generation_config.cache_implementation = "static"
    wrapper = TorchExportableModuleWithStaticCache(model, batch_size=1, max_cache_len=cached)
    example = {"input_ids": torch.zeros(1, 1, dtype=torch.long, device=device),
               "cache_position": torch.tensor([3], device=device)}
    with torch.no_grad():
        return wrapper, torch.export.export(wrapper, (), example, strict=True), example
