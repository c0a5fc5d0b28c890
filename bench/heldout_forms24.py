"""Held-out decode forms and families, round forms24: code no earlier round wrote.

Joins bench/heldout_decode_forms.py's tables (`register`) and runs as it does:
the Llama 3.1 8B decode step at 8B widths on the meta device (bf16, batch 1,
cache of 4,096 positions), compiled at -O2 for sn40l, sn40l-8 and sn40l-16 and
costed; goal: one looped layer (or one call a period) and the modeled time
within 2% of its reference.

Llama's math, held to `modules` (BENCHMARKS' form):
- `stacked_index_copy`: the whole stack's cache one registered buffer
  [layers, 2, 1, kv, cached + 1, dim]; each layer writes its new key and
  value at the last position by `index_copy_` on its slice (`cache[i, 0]`)
  and attends over the whole window, queries grouped by a view.
- `qkv_narrow_vmap`: q/k/v one `nn.Linear` whose output is viewed as heads
  [heads + 2 kv, dim] and cut by `narrow`; attention `torch.vmap`ped over
  the KV heads (a per-head function of [group, dim] queries).
- `positions_major`: caches laid out positions first [1, positions, kv, dim]
  (flash-attention's / vLLM's layout), extended along dim 1 and transposed
  for SDPA with `enable_gqa`; the new keys and values returned the same way.
- `transposed_weights`: every projection stored [in, out] (JAX's layout) in
  one `ParameterDict` a layer and applied by `x @ w`; SiLU written as
  `g * sigmoid(g)`; KV heads by `repeat_interleave` with `output_size`.
- `hooked_residual`: attention and MLP blocks return only their update; a
  forward hook registered on each block adds the residual.
- `nested_pairs`: the layers held two a block (a `ModuleList` of blocks,
  each a `ModuleList` of two layers): may loop one call a layer (32) or one
  a block (16).

transformers families no round ran (`FAMILIES24`, at Llama 3.1 8B's widths
with each family's own structure), each held to its own roofline reference
(`decode_reference.own_reference_s`), one loop of a layer or of a period.

Every figure is modeled from shapes, not measured on a chip.

Run: python bench/heldout_forms24.py [--quick] [--forms a,b|none] [--families x,y|none] [--layers N]
[--targets a,b] (as bench/heldout_decode_forms.py; without --forms / --families: this round's)
"""

from __future__ import annotations

import sys

import heldout_decode_forms as hdf
import llama_decode_forms as ldf  # noqa: E402
import models  # noqa: E402
import torch
from common import standalone
from torch import nn
from torch.nn import functional as F


class StackedIndexCopyLayer(nn.Module):
    """A layer writing its new key and value into its slice [2, 1, kv, cached + 1, dim] of the
    stack's one cache buffer by `index_copy_`, then attending over the whole window."""

    def __init__(self, hidden: int, intermediate: int, heads: int, kv: int, eps: float) -> None:
        super().__init__()
        self.heads, self.kv, self.dim, self.eps = heads, kv, hidden // heads, eps
        self.w = ldf.Weights(hidden, intermediate, heads, kv)

    def forward(self, x, cos, sin, window, position):
        w = self.w
        normed = ldf.rms(x, w.input_layernorm, self.eps)
        q = ldf.rope(F.linear(normed, w.q_proj).view(1, 1, self.heads, self.dim).transpose(1, 2), cos, sin)
        k = ldf.rope(F.linear(normed, w.k_proj).view(1, 1, self.kv, self.dim).transpose(1, 2), cos, sin)
        v = F.linear(normed, w.v_proj).view(1, 1, self.kv, self.dim).transpose(1, 2)
        window[0].index_copy_(2, position, k)
        window[1].index_copy_(2, position, v)
        grouped = q.reshape(1, self.kv, self.heads // self.kv, self.dim)
        attended = ldf._attend_full(grouped, window[0], window[1], self.dim)
        x = x + F.linear(attended.reshape(1, 1, -1), w.o_proj)
        normed = ldf.rms(x, w.post_attention_layernorm, self.eps)
        return x + F.linear(F.silu(F.linear(normed, w.gate_proj)) * F.linear(normed, w.up_proj), w.down_proj)


class StackedIndexCopy(ldf._Base):
    def __init__(self, config, cached: int) -> None:
        super().__init__(config)
        self.cached = cached
        self.layers = nn.ModuleList(StackedIndexCopyLayer(self.hidden, self.intermediate, self.heads, self.kv,
                                                          self.eps) for _ in range(self.layer_count))
        self.register_buffer("cache", torch.zeros(self.layer_count, 2, 1, self.kv, cached + 1, self.dim))

    def forward(self, input_ids, cos, sin):
        x = self.embed_tokens(input_ids)
        position = torch.tensor([self.cached], device=x.device)
        for index, layer in enumerate(self.layers):
            x = layer(x, cos, sin, self.cache[index], position)
        return self.head(x)


def _attend_one_head(q, keys, values):
    """One KV head's queries [group, dim] against its keys and values [positions, dim]."""
    scores = (q @ keys.transpose(0, 1)) * q.shape[-1] ** -0.5
    return torch.softmax(scores.float(), dim=-1).type_as(q) @ values


class NarrowVmapLayer(nn.Module):
    """q/k/v one `nn.Linear` viewed as heads and cut by `narrow`; attention vmapped over KV heads."""

    def __init__(self, hidden: int, intermediate: int, heads: int, kv: int, eps: float) -> None:
        super().__init__()
        self.heads, self.kv, self.dim, self.eps = heads, kv, hidden // heads, eps
        self.attn_norm = nn.Parameter(torch.ones(hidden))
        self.qkv = nn.Linear(hidden, (heads + 2 * kv) * self.dim, bias=False)
        self.o = nn.Linear(heads * self.dim, hidden, bias=False)
        self.mlp_norm = nn.Parameter(torch.ones(hidden))
        self.gate = nn.Linear(hidden, intermediate, bias=False)
        self.up = nn.Linear(hidden, intermediate, bias=False)
        self.down = nn.Linear(intermediate, hidden, bias=False)

    def forward(self, x, cos, sin, k_cache, v_cache):
        heads = self.qkv(ldf.rms(x, self.attn_norm, self.eps)).view(1, self.heads + 2 * self.kv, 1, self.dim)
        q = ldf.rope(heads.narrow(1, 0, self.heads), cos, sin)
        k = ldf.rope(heads.narrow(1, self.heads, self.kv), cos, sin)
        v = heads.narrow(1, self.heads + self.kv, self.kv)
        keys, values = torch.cat((k_cache, k), dim=2)[0], torch.cat((v_cache, v), dim=2)[0]
        grouped = q.reshape(self.kv, self.heads // self.kv, self.dim)
        attended = torch.vmap(_attend_one_head)(grouped, keys, values)  # [kv, group, dim]
        x = x + self.o(attended.reshape(1, 1, -1))
        normed = ldf.rms(x, self.mlp_norm, self.eps)
        return x + self.down(F.silu(self.gate(normed)) * self.up(normed)), k, v


class PositionsMajorLayer(nn.Module):
    """Caches [1, positions, kv, dim], extended along dim 1; SDPA with `enable_gqa` on their transposes."""

    def __init__(self, hidden: int, intermediate: int, heads: int, kv: int, eps: float) -> None:
        super().__init__()
        self.heads, self.kv, self.dim = heads, kv, hidden // heads
        self.layer = models.DecodeLayer(hidden, intermediate, heads, kv, eps)

    def forward(self, x, cos, sin, k_cache, v_cache):
        m = self.layer
        normed = m.input_layernorm(x)
        cos_t, sin_t = cos.transpose(1, 2), sin.transpose(1, 2)  # rotary over [1, 1, heads, dim]
        q = ldf.rope(m.q_proj(normed).view(1, 1, self.heads, self.dim), cos_t, sin_t)
        k = ldf.rope(m.k_proj(normed).view(1, 1, self.kv, self.dim), cos_t, sin_t)
        v = m.v_proj(normed).view(1, 1, self.kv, self.dim)
        keys, values = torch.cat((k_cache, k), dim=1), torch.cat((v_cache, v), dim=1)
        attended = F.scaled_dot_product_attention(q.transpose(1, 2), keys.transpose(1, 2), values.transpose(1, 2),
                                                  enable_gqa=True)
        x = x + m.o_proj(attended.transpose(1, 2).reshape(1, 1, -1))
        normed = m.post_attention_layernorm(x)
        return x + m.down_proj(F.silu(m.gate_proj(normed)) * m.up_proj(normed)), k, v


class _LayerStack(ldf._Base):
    """`layers` of `layer_class` called in order over per-layer caches (inputs), each giving (x, k, v)."""

    layer_class: type[nn.Module]

    def __init__(self, config) -> None:
        super().__init__(config)
        self.layers = nn.ModuleList(self.layer_class(self.hidden, self.intermediate, self.heads, self.kv, self.eps)
                                    for _ in range(self.layer_count))

    def forward(self, input_ids, cos, sin, *caches):
        x = self.embed_tokens(input_ids)
        updates = []
        for layer, k_cache, v_cache in zip(self.layers, caches[0::2], caches[1::2]):
            x, k, v = layer(x, cos, sin, k_cache, v_cache)
            updates += [k, v]
        return (self.head(x), *updates)


class QkvNarrowVmap(_LayerStack):
    layer_class = NarrowVmapLayer


class PositionsMajor(_LayerStack):
    layer_class = PositionsMajorLayer


class TransposedWeightsLayer(nn.Module):
    """Every projection stored [in, out] in one `ParameterDict`, applied by `x @ w`."""

    def __init__(self, hidden: int, intermediate: int, heads: int, kv: int, eps: float) -> None:
        super().__init__()
        self.heads, self.kv, self.dim, self.eps = heads, kv, hidden // heads, eps
        shapes = {"wq": (hidden, heads * self.dim), "wk": (hidden, kv * self.dim), "wv": (hidden, kv * self.dim),
                  "wo": (heads * self.dim, hidden), "w_gate": (hidden, intermediate), "w_up": (hidden, intermediate),
                  "w_down": (intermediate, hidden)}
        self.p = nn.ParameterDict({name: nn.Parameter(torch.randn(size) * size[0] ** -0.5)
                                   for name, size in shapes.items()})
        self.p["attn_norm"] = nn.Parameter(torch.ones(hidden))
        self.p["mlp_norm"] = nn.Parameter(torch.ones(hidden))

    def forward(self, x, cos, sin, k_cache, v_cache):
        p, group = self.p, self.heads // self.kv
        normed = ldf.rms(x, p["attn_norm"], self.eps)
        q = ldf.rope((normed @ p["wq"]).view(1, 1, self.heads, self.dim).transpose(1, 2), cos, sin)
        k = ldf.rope((normed @ p["wk"]).view(1, 1, self.kv, self.dim).transpose(1, 2), cos, sin)
        v = (normed @ p["wv"]).view(1, 1, self.kv, self.dim).transpose(1, 2)
        keys = torch.cat((k_cache, k), dim=2).repeat_interleave(group, dim=1, output_size=self.heads)
        values = torch.cat((v_cache, v), dim=2).repeat_interleave(group, dim=1, output_size=self.heads)
        x = x + ldf._attend_full(q, keys, values, self.dim).transpose(1, 2).reshape(1, 1, -1) @ p["wo"]
        normed = ldf.rms(x, p["mlp_norm"], self.eps)
        gate = normed @ p["w_gate"]
        return x + (gate * torch.sigmoid(gate) * (normed @ p["w_up"])) @ p["w_down"], k, v


class TransposedWeights(_LayerStack):
    layer_class = TransposedWeightsLayer


def _add_residual(block: nn.Module, args: tuple, output: tuple) -> tuple:
    """A forward hook: the block's input added to its update (the first of its outputs)."""
    return (args[0] + output[0], *output[1:])


class HookedAttention(nn.Module):
    """Norm + attention giving (update, k, v); the residual is added by a hook."""

    def __init__(self, hidden: int, heads: int, kv: int, eps: float) -> None:
        super().__init__()
        self.heads, self.kv, self.dim = heads, kv, hidden // heads
        self.norm = models.RMSNorm(hidden, eps)
        self.q, self.k, self.v = (nn.Linear(hidden, n * self.dim, bias=False) for n in (heads, kv, kv))
        self.o = nn.Linear(heads * self.dim, hidden, bias=False)

    def forward(self, x, cos, sin, k_cache, v_cache):
        normed = self.norm(x)
        q = ldf.rope(self.q(normed).view(1, 1, self.heads, self.dim).transpose(1, 2), cos, sin)
        k = ldf.rope(self.k(normed).view(1, 1, self.kv, self.dim).transpose(1, 2), cos, sin)
        v = self.v(normed).view(1, 1, self.kv, self.dim).transpose(1, 2)
        grouped = q.reshape(1, self.kv, self.heads // self.kv, self.dim)
        attended = ldf._attend_split(grouped, k, v, k_cache, v_cache, self.dim)
        return self.o(attended.reshape(1, 1, -1)), k, v


class HookedMlp(nn.Module):
    def __init__(self, hidden: int, intermediate: int, eps: float) -> None:
        super().__init__()
        self.norm = models.RMSNorm(hidden, eps)
        self.gate, self.up = (nn.Linear(hidden, intermediate, bias=False) for _ in range(2))
        self.down = nn.Linear(intermediate, hidden, bias=False)

    def forward(self, x):
        normed = self.norm(x)
        return (self.down(F.silu(self.gate(normed)) * self.up(normed)),)


class HookedLayer(nn.Module):
    def __init__(self, hidden: int, intermediate: int, heads: int, kv: int, eps: float) -> None:
        super().__init__()
        self.attention = HookedAttention(hidden, heads, kv, eps)
        self.mlp = HookedMlp(hidden, intermediate, eps)
        for block in (self.attention, self.mlp):
            block.register_forward_hook(_add_residual)

    def forward(self, x, cos, sin, k_cache, v_cache):
        x, k, v = self.attention(x, cos, sin, k_cache, v_cache)
        (x,) = self.mlp(x)
        return x, k, v


class HookedResidual(_LayerStack):
    layer_class = HookedLayer


class NestedPairs(ldf._Base):
    """The layers held two a block: a `ModuleList` of blocks, each a `ModuleList` of two layers."""

    def __init__(self, config) -> None:
        super().__init__(config)
        self.blocks = nn.ModuleList(
            nn.ModuleList(models.DecodeLayer(self.hidden, self.intermediate, self.heads, self.kv, self.eps)
                          for _ in range(2))
            for _ in range(self.layer_count // 2))

    def forward(self, input_ids, cos, sin, *caches):
        x = self.embed_tokens(input_ids)
        updates = []
        for number, block in enumerate(self.blocks):
            for offset, layer in enumerate(block):
                index = 2 * (2 * number + offset)
                x, k, v = layer(x, cos, sin, caches[index], caches[index + 1])
                updates += [k, v]
        return (self.head(x), *updates)


def _positions_major(caches: list[torch.Tensor]) -> tuple[torch.Tensor, ...]:
    """Each cache [1, kv, positions, dim] laid out [1, positions, kv, dim]."""
    return tuple(c.transpose(1, 2).contiguous() for c in caches)


FORMS24: dict[str, tuple[str, str, type[nn.Module]]] = {
    "stacked_index_copy": ("modules", "buffers", StackedIndexCopy),
    "qkv_narrow_vmap": ("modules", "inputs", QkvNarrowVmap),
    "positions_major": ("modules", "positions major", PositionsMajor),
    "transposed_weights": ("modules", "inputs", TransposedWeights),
    "hooked_residual": ("modules", "inputs", HookedResidual),
    "nested_pairs": ("modules", "inputs", NestedPairs),
}
"""Per form: its reference, its caches kind (`heldout_decode_forms.FORMS`), its builder."""

FORM_CALLS24 = {"nested_pairs": lambda layers: (layers, layers // 2)}
"""Forms whose looped run may be of another call count than one a layer (a block of two)."""

FAMILIES24: dict[str, tuple[str, str, dict]] = {
    "gemma": ("GemmaConfig", "GemmaForCausalLM", {"head_dim": 128}),
    "cohere2": ("Cohere2Config", "Cohere2ForCausalLM", {"tie_word_embeddings": False}),
    "olmo3": ("Olmo3Config", "Olmo3ForCausalLM", {}),
    "vaultgemma": ("VaultGemmaConfig", "VaultGemmaForCausalLM", {"head_dim": 128}),
    "nanochat": ("NanoChatConfig", "NanoChatForCausalLM", {}),
    "diffllama": ("DiffLlamaConfig", "DiffLlamaForCausalLM", {}),
    "jais2": ("Jais2Config", "Jais2ForCausalLM", {}),
    "hyperclovax": ("HyperCLOVAXConfig", "HyperCLOVAXForCausalLM", {}),
    "cwm": ("CwmConfig", "CwmForCausalLM", {}),
    "bitnet": ("BitNetConfig", "BitNetForCausalLM", {}),
    "granite_swa": ("GraniteSWAConfig", "GraniteSWAForCausalLM", {}),
    "ministral3": ("Ministral3Config", "Ministral3ForCausalLM", {}),
}
"""transformers families no earlier round ran: (config class, causal-LM class, overrides of Llama 3.1
8B's widths). Persimmon and GPTBigCode were tried and left out: transformers' own static-cache export
fails for them (a fake-tensor error in `torch.export`, before rducc)."""


def register() -> None:
    """This round's forms, cache layout and families joined to heldout_decode_forms' tables."""
    for form, (versus, caches, builder) in FORMS24.items():
        hdf.FORMS[form] = (versus, caches)
        hdf._BUILDERS[form] = builder
    hdf.FORM_CALLS.update(FORM_CALLS24)
    hdf._CACHE_LAYOUTS["positions major"] = _positions_major
    hdf.FAMILIES.update(FAMILIES24)


if __name__ == "__main__":
    register()
    hdf.SELECTED_FORMS = hdf._selected(sys.argv, "--forms", FORMS24) if "--forms" in sys.argv else tuple(FORMS24)
    hdf.SELECTED_FAMILIES = (hdf._selected(sys.argv, "--families", FAMILIES24) if "--families" in sys.argv
                             else tuple(FAMILIES24))
    hdf.parse_layers_and_targets(sys.argv)
    hdf.SCRIPT = "bench/heldout_forms24.py"
    standalone(hdf.run, __doc__)
