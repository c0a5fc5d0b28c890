"""`scaled_dot_product_attention` in a joint graph, differentiated and rounded
as eager's CPU kernel rounds it (issue 27, bf16 mixed precision).

Eager runs attention on the CPU as one fused kernel, forward and backward
(`_scaled_dot_product_flash_attention_for_cpu` and its `_backward`); autograd
would put that opaque pair in the joint graph, so the joint graph
differentiates attention's math instead (`attention_as_eager`, a stand-in the
trace calls in place of the op: `compile._DIFFERENTIATED_AS`). In float32 the
math is the kernel's arithmetic. In 16-bit the kernel keeps everything inside
in float32 and rounds at a few points only, and so does `_FlashRounded`:

- forward: the scores `q @ k^T * scale (+ mask)` in float32 (16-bit inputs,
  float32 sums), `exp(scores - row max)` in float32 (the kernel's: below),
  rounded to 16 bits for the product with V (float32 sums), the row sum of
  the unrounded exponentials in float32, the output `(p @ v) * (1 / sum)` rounded once;
  the log-sum-exp kept in float32 for the backward;
- backward: the probabilities again from the log-sum-exp (float32),
  `dsum = rowsum(grad_out * out)` in float32, `grad_v = p16^T @ grad_out`,
  `grad_s = p * (grad_out @ v^T - dsum)` in float32 rounded to 16 bits, then
  `grad_q = scale * grad_s16 @ k` and `grad_k = scale * grad_s16^T @ q`; each
  gradient rounded once, except that the kernel adds `grad_k` and `grad_v`
  up into their 16-bit result, one query head (grouped-query attention: the
  query heads a key head serves) and, within it, one block of query rows
  (`_query_block`) at a time, a rounding each. Those additions are spelled
  out up to `ROUNDED_ADDITIONS` of them; above, attention is float32 math
  rounded once (autograd's gradient of it), so that a joint graph does not
  grow with the sequence and the grouping, and splits by heads as the plain
  math does (docs/training.md, "bf16 attention: the size rule").

Computing attention op by op in bf16, as autocast's other ops, rounds the
scores, the softmax, the probabilities and each gradient in turn: tiny
Llama, GPT-2 and ViT trained out of eager autocast's own distance from
float32. What autocast casts the inputs to is autocast's own decision, asked
from torch (`_autocast_lowers_attention`), not a list restated here.

The forward's exponential is the kernel's: on 16-bit inputs its vector
loop takes torch's fast approximation `fexp_u20` over the keys in whole
vectors (16 lanes with AVX-512, 8 with AVX2: asked of the kernel,
`_fast_exp_lanes`) and libm's `exp` over the rest of the row (`kernel_exp`);
its backward takes the exact `exp`. Not reproduced: the online softmax over
blocks of 512 keys (one block here), over which the kernel also adds
`grad_q` up in 16 bits.
"""

from __future__ import annotations

import contextlib
import functools
import math
from typing import Any

import torch

from rducc.training.plain_masks import Values, eager_passes_no_mask

_SIXTEEN_BIT = (torch.bfloat16, torch.float16)


def attention_math(query: torch.Tensor, key: torch.Tensor, value: torch.Tensor, attn_mask: Any = None,
                   dropout_p: float = 0.0, is_causal: bool = False, scale: float | None = None,
                   enable_gqa: bool = False) -> torch.Tensor:
    """`scaled_dot_product_attention` as its math, as torch documents it."""
    length, source = query.size(-2), key.size(-2)
    factor = 1 / math.sqrt(query.size(-1)) if scale is None else scale
    key, value = _grouped(query, key, value, enable_gqa)
    scores = query @ key.transpose(-2, -1) * factor
    if is_causal:
        keep = torch.ones(length, source, dtype=torch.bool, device=query.device).tril()
        scores = scores.masked_fill(keep.logical_not(), float("-inf"))
    if attn_mask is not None:
        if attn_mask.dtype == torch.bool:
            scores = scores.masked_fill(attn_mask.logical_not(), float("-inf"))
        else:
            scores = scores + attn_mask
    weights = torch.softmax(scores, dim=-1)
    if dropout_p > 0.0:
        weights = torch.nn.functional.dropout(weights, dropout_p, training=True)
    return weights @ value


def _grouped(query: torch.Tensor, key: torch.Tensor, value: torch.Tensor,
             enable_gqa: bool) -> tuple[torch.Tensor, torch.Tensor]:
    """Key and value repeated to the query's heads (grouped-query attention)."""
    if enable_gqa:
        key, value = _repeated_heads(query, key), _repeated_heads(query, value)
    return key, value


def _repeated_heads(query: torch.Tensor, source: torch.Tensor) -> torch.Tensor:
    """A key or value with its heads repeated to the query's, each head of
    `source` serving that many query heads in a row (`repeat_interleave`), by
    expand and reshape: the same values, and a gradient summed over each group."""
    if source.dim() < 3 or source.size(-3) == query.size(-3):
        return source
    group = query.size(-3) // source.size(-3)
    *lead, heads, length, width = source.shape
    return source.unsqueeze(-3).expand(*lead, heads, group, length, width).reshape(*lead, heads * group, length, width)


@functools.cache
def _autocast_lowers_attention(device: str, dtype: torch.dtype) -> bool:
    """Whether autocast on `device` computes `scaled_dot_product_attention` in
    `dtype` (casting its inputs), as torch's autocast op lists say: asked of
    torch with a tiny call, outside any trace (`prepare_autocast`)."""
    probe = torch.zeros(1, 1, 1, 2)
    with torch.autocast(device, dtype=dtype):
        return bool(torch.ops.aten.scaled_dot_product_attention.default(probe, probe, probe).dtype == dtype)


def prepare_autocast(regions: list[tuple[str, torch.dtype]]) -> None:
    """Ask autocast, before the joint graph is traced, what it does with
    attention in each of the program's autocast regions (device, dtype), and
    the CPU kernel which exponential it takes on 16-bit inputs (`_fast_exp_lanes`)."""
    for device, dtype in regions:
        _autocast_lowers_attention(device, dtype)
    for dtype in _SIXTEEN_BIT:
        _fast_exp_lanes(dtype)


def _autocast_dtype(device: str) -> torch.dtype | None:
    """The dtype autocast casts attention's inputs to where the trace is, or None."""
    if device != "cpu" or not torch.is_autocast_enabled(device):
        return None
    dtype = torch.get_autocast_dtype(device)
    return dtype if _autocast_lowers_attention(device, dtype) else None


def attention_as_eager(query: torch.Tensor, key: torch.Tensor, value: torch.Tensor, attn_mask: Any = None,
                       dropout_p: float = 0.0, is_causal: bool = False, scale: float | None = None,
                       enable_gqa: bool = False) -> torch.Tensor:
    """`scaled_dot_product_attention` for the joint graph: autocast's casts,
    then float32 math (float32 inputs), the fused kernel's roundings (16-bit
    inputs, `_FlashRounded`), or float32 math rounded once: with dropout or a
    float mask that requires grad (where eager runs the math backend, which
    computes 16-bit inputs in float32 and rounds the output once), and above
    `ROUNDED_ADDITIONS` (the size rule)."""
    cast = _autocast_dtype(query.device.type)
    if cast is not None:
        query, key, value = (t.to(cast) if t.is_floating_point() else t for t in (query, key, value))
        if attn_mask is not None and attn_mask.is_floating_point():
            attn_mask = attn_mask.to(cast)
    if query.dtype not in _SIXTEEN_BIT:
        return attention_math(query, key, value, attn_mask, dropout_p, is_causal, scale, enable_gqa)
    factor = 1 / math.sqrt(query.size(-1)) if scale is None else scale
    if (dropout_p > 0.0 or query.dim() != 4 or _mask_is_learned(attn_mask)
            or _rounded_additions(query, key) > ROUNDED_ADDITIONS):
        # repeated in 16 bits: each query head's key/value gradient rounded, then summed (docs/training.md)
        key, value = _grouped(query, key, value, enable_gqa)
        with _without_autocast(query):
            widened = attention_math(query.float(), key.float(), value.float(),
                                     attn_mask.float() if _is_float(attn_mask) else attn_mask,
                                     dropout_p, is_causal, factor)
        return widened.to(query.dtype)
    mask = None
    if attn_mask is not None:
        # the kernel adds a boolean mask as 0 / -inf (sdpa converts it first)
        mask = (torch.zeros(attn_mask.shape, device=query.device).masked_fill(attn_mask.logical_not(), float("-inf"))
                if attn_mask.dtype == torch.bool else attn_mask)
    result: torch.Tensor = _FlashRounded.apply(query, key, value, mask, is_causal, factor)
    return result


def _without_autocast(tensor: torch.Tensor) -> contextlib.AbstractContextManager[Any]:
    """Autocast off on `tensor`'s device, where that device has autocast (a
    meta-device trace, as full-size models compile, has none)."""
    device = tensor.device.type
    if not torch.amp.is_autocast_available(device):
        return contextlib.nullcontext()
    return torch.autocast(device, enabled=False)


def _is_float(value: Any) -> bool:
    return isinstance(value, torch.Tensor) and value.is_floating_point()


def _mask_is_learned(attn_mask: Any) -> bool:
    """Whether a float mask needs its gradient (a learned bias table, ALiBi slopes): eager then runs the math
    backend (float32 inside, the output rounded once), which differentiates the mask; the fused kernel's
    stand-in (`_FlashRounded`) gives the mask no gradient."""
    return _is_float(attn_mask) and bool(attn_mask.requires_grad)


def _query_block(length: int) -> int:
    """The rows of queries the CPU kernel takes at a time (its q split size)."""
    return 256 if length >= 768 else 64 if length >= 192 else 32


def _scores(query: torch.Tensor, key: torch.Tensor, mask: torch.Tensor | None, is_causal: bool,
            factor: float) -> torch.Tensor:
    """`q @ k^T * scale (+ mask)` (float32 operands), with -inf above the diagonal when causal."""
    scores = (query @ key.transpose(-2, -1)) * factor
    if mask is not None:
        scores = scores + mask.float()
    if is_causal:
        length, source = scores.shape[-2:]
        above = torch.ones(length, source, dtype=torch.bool, device=query.device).tril().logical_not()
        scores = scores.masked_fill(above, float("-inf"))
    return scores


class _FlashRounded(torch.autograd.Function):
    """Attention on 16-bit inputs with float32 inside and the CPU flash
    kernel's roundings, forward and backward (the module docstring). Key and
    value may have fewer heads than the query (grouped-query attention): each
    serves `heads // kv_heads` query heads in a row, as `repeat_interleave`."""

    @staticmethod
    def forward(ctx: Any, query: torch.Tensor, key: torch.Tensor, value: torch.Tensor,
                mask: torch.Tensor | None, is_causal: bool, factor: float) -> torch.Tensor:
        with _without_autocast(query):
            key32, value32 = (t.float() for t in _grouped(query, key, value, True))
            scores = _scores(query.float(), key32, mask, is_causal, factor)
            peak = scores.amax(-1, keepdim=True)
            peak = torch.where(peak == float("-inf"), 0.0, peak)  # a row masked whole
            exponentials = kernel_exp(scores - peak, query.dtype)
            total = exponentials.sum(-1, keepdim=True)
            total = torch.where(total == 0, 1.0, total)
            rounded = exponentials.to(query.dtype).float()
            output = ((rounded @ value32) * (1 / total)).to(query.dtype)
            log_sum = peak + torch.log(total)
        ctx.save_for_backward(query, key, value, mask, output, log_sum)
        ctx.is_causal, ctx.factor = is_causal, factor
        return output

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor | None, ...]:
        query, key, value, mask, output, log_sum = ctx.saved_tensors
        dtype, factor = query.dtype, ctx.factor
        with _without_autocast(query):
            query32, key32, value32 = (t.float() for t in (query, *_grouped(query, key, value, True)))
            grad32 = grad.to(dtype).float()
            row_dot = (grad32 * output.float()).sum(-1, keepdim=True)
            weights = torch.exp(_scores(query32, key32, mask, ctx.is_causal, factor) - log_sum)
            grad_scores = (weights * (grad32 @ value32.transpose(-2, -1) - row_dot)).to(dtype).float()
            grad_query = ((grad_scores @ key32) * factor).to(dtype)
            weights16 = weights.to(dtype).float()
            grad_key = _accumulated(grad_scores, query32, key, factor)
            grad_value = _accumulated(weights16, grad32, value, None)
        return grad_query, grad_key, grad_value, None, None, None


_LOG2E = 1.44269502162933349609375  # float32 0x3fb8aa3b
_LN_FLT_MIN = -87.33654022216796875  # float32 0xc2aeac50: below it the result is 0
_FEXP_CUBIC = (0.00010703434948458272, 0.30354260500649682, -0.22433836478672356, -0.079204240219773236)


def fexp_u20(x: torch.Tensor) -> torch.Tensor:
    """torch's fast float32 exponential (`Vectorized<float>::fexp_u20`, x86):
    `2 ** (x log2 e)`, the power of the fraction `f` taken as `f - cubic(f)`
    and the result's bits built as the integer `trunc(2**23 (x log2 e -
    cubic(f) + 127))`; 0 below ln(FLT_MIN). The kernel's Horner steps are
    fused multiply-adds (one rounding); here two: at most one float32 ulp
    apart, never a bf16 one."""
    scaled = x.clamp(min=_LN_FLT_MIN) * _LOG2E
    fraction = scaled - torch.floor(scaled)
    c0, c1, c2, c3 = _FEXP_CUBIC
    cubic = ((fraction * c3 + c2) * fraction + c1) * fraction + c0
    bits = ((scaled - cubic) * 2.0**23 + 127 * 2.0**23).to(torch.int32)
    return torch.where(x < _LN_FLT_MIN, 0.0, bits.view(torch.float32))


def kernel_exp(x: torch.Tensor, dtype: torch.dtype = torch.bfloat16) -> torch.Tensor:
    """`exp(x)` (float32, x <= 0: scores less their row max) over the keys as
    the CPU flash kernel takes it on `dtype` inputs: its vector loop
    (`fexp_u20`) over the keys in whole vectors of `_fast_exp_lanes`, libm's
    `exp` over the rest of the row (its blocks of 512 keys are whole vectors)."""
    lanes, keys = _fast_exp_lanes(dtype), x.size(-1)
    vectorized = keys - keys % lanes if lanes else 0
    if vectorized == 0:
        return torch.exp(x)
    if vectorized == keys:
        return fexp_u20(x)
    in_vectors = torch.arange(keys, device=x.device) < vectorized
    return torch.where(in_vectors, fexp_u20(x), torch.exp(x))


@functools.cache
def _fast_exp_lanes(dtype: torch.dtype) -> int:
    """The lanes of the CPU flash kernel's vectorised exponential on `dtype`
    inputs where it is `fexp_u20` (16 with AVX-512, 8 with AVX2), else 0
    (libm's `exp`). Asked of the kernel: a row of `n` zero scores has the
    log-sum-exp log(n) while `n` is under the lanes (all libm), and
    log(n * fexp_u20(0)) from the first whole vector."""
    from torch._subclasses.fake_tensor import unset_fake_temporarily

    with unset_fake_temporarily(), torch.no_grad():
        for keys in range(1, 65):
            zeros = torch.zeros(1, 1, keys, 8, dtype=dtype)
            log_sum = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu(zeros[:, :, :1], zeros, zeros)[1]
            if abs(log_sum.item() - math.log(keys)) > 1e-6:
                fast = keys * fexp_u20(torch.zeros(1)).item()
                return keys if abs(log_sum.item() - math.log(fast)) < 1e-6 else 0
    return 0


ROUNDED_ADDITIONS = 16
"""The most 16-bit additions (query blocks x query heads a key head serves)
`_FlashRounded` spells out one by one, as the kernel rounds them; above,
attention is float32 math rounded once (`attention_as_eager`;
docs/training.md, "bf16 attention: the size rule"), so that a joint graph
does not grow with the sequence and the grouping."""


def _rounded_additions(query: torch.Tensor, key: torch.Tensor) -> int:
    """The 16-bit additions the kernel makes into a key's (or value's)
    gradient: query blocks x the query heads a key head serves."""
    length = query.size(-2)
    return -(-length // _query_block(length)) * (query.size(-3) // key.size(-3))


def _accumulated(left: torch.Tensor, right: torch.Tensor, source: torch.Tensor,
                 factor: float | None) -> torch.Tensor:
    """A key's or value's gradient, `left^T @ right (* factor)` summed over
    the query rows and the query heads each head of `source` serves, as the
    kernel sums it into its 16-bit result: for each query head it serves, in
    order, for each block of that head's query rows (`_query_block`), that
    part in float32 added to the sum so far and rounded."""
    heads, length = left.shape[-3:-1]
    kv_heads, step = source.size(-3), _query_block(length)
    group = heads // kv_heads
    products = _block_products(left, right, step)
    parts = products[0] if len(products) == 1 else torch.cat(products, -4)  # [..., blocks, heads, source, dim]
    parts = (parts if factor is None else parts * factor).unflatten(-3, (kv_heads, group))
    total: torch.Tensor | None = None
    for head in parts.unbind(-3):  # each query head a key head serves, in turn
        for within in head.unbind(-4):  # each block of its query rows
            total = within.to(source.dtype) if total is None else (total.float() + within).to(source.dtype)
    assert total is not None
    return total


def _block_products(left: torch.Tensor, right: torch.Tensor, step: int) -> list[torch.Tensor]:
    """`left^T @ right` of each block of `step` rows: one batched product over
    the whole blocks ([..., heads, blocks, columns of left, columns of right]),
    and one of the shorter last block, if any."""
    length = left.size(-2)
    whole = length - length % step
    products = []
    if whole:
        blocked = [t[..., :whole, :].unflatten(-2, (whole // step, step)) for t in (left, right)]
        products.append((blocked[0].transpose(-2, -1) @ blocked[1]).transpose(-3, -4))
    if whole < length:
        products.append((left[..., whole:, :].transpose(-2, -1) @ right[..., whole:, :]).unsqueeze(-4))
    return products


_SDPA = torch.ops.aten.scaled_dot_product_attention.default


def group_repeated_heads(graph: torch.fx.Graph) -> bool:
    """Each attention in `graph` whose key and value are another tensor's heads
    repeated (transformers' `repeat_kv`: unsqueeze, expand, reshape) and
    which eager calls with no mask reads that tensor with `enable_gqa=True`
    instead; True if any changed.

    The same math; but eager, given no mask, calls the fused kernel with
    `enable_gqa`, whose backward adds each query head's key and value
    gradient into the 16-bit result in turn (`_accumulated`), while under
    torch.export transformers builds every mask and repeats the heads, whose
    backward sums 16-bit gradients. Where eager keeps the mask (a sliding
    window shorter than the keys, padding) it repeats the heads itself, and
    the attention stays as it is: which masks eager drops is asked of their
    values at compile time (`plain_masks.eager_passes_no_mask`)."""
    changed = False
    values: Values = {}
    for node in list(graph.nodes):
        if node.target is not _SDPA or node.kwargs.get("enable_gqa", False) or len(node.args) < 3:
            continue
        key, value = (_repeated_source(arg) for arg in node.args[1:3])
        if key is None or value is None or key[1] != value[1] or not eager_passes_no_mask(node, values):
            continue
        with graph.inserting_before(node):
            sources = [_squeezed(graph, source) for source, _ in (key, value)]
        repeats = node.args[1:3]
        node.args = (node.args[0], *sources, *node.args[3:])
        node.kwargs = {**node.kwargs, "enable_gqa": True}
        for repeated in repeats:
            _erase_unused(graph, repeated)
        changed = True
    return changed


def _repeated_source(node: Any) -> tuple[torch.fx.Node, int] | None:
    """(the [..., heads, 1, length, dim] tensor, repeats) when `node` is that
    tensor expanded along its unit dim and reshaped to [..., heads * repeats, length, dim]."""
    reshapes = (torch.ops.aten.reshape.default, torch.ops.aten.view.default, torch.ops.aten._unsafe_view.default)
    if not isinstance(node, torch.fx.Node) or node.target not in reshapes:
        return None
    expanded = node.args[0]
    if not isinstance(expanded, torch.fx.Node) or expanded.target is not torch.ops.aten.expand.default:
        return None
    source = expanded.args[0]
    if not isinstance(source, torch.fx.Node):
        return None
    shapes = [n.meta.get("val") for n in (source, expanded, node)]
    tensors = [s for s in shapes if isinstance(s, torch.Tensor)]
    if len(tensors) != 3:
        return None
    before, wide, after = (tuple(t.shape) for t in tensors)
    if len(before) != 5 or before[2] != 1 or wide[:2] + wide[3:] != before[:2] + before[3:]:
        return None
    if after != (before[0], before[1] * wide[2], *before[3:]):
        return None
    return source, int(wide[2])


def _squeezed(graph: torch.fx.Graph, source: torch.fx.Node) -> torch.fx.Node:
    """`source` ([..., heads, 1, length, dim]) without its unit dim."""
    if source.target is torch.ops.aten.unsqueeze.default and source.args[1] in (2, -3):
        return source.args[0]  # type: ignore[return-value]
    squeezed = graph.call_function(torch.ops.aten.squeeze.dim, (source, 2))
    squeezed.meta["val"] = source.meta["val"].squeeze(2)
    return squeezed


def _erase_unused(graph: torch.fx.Graph, node: Any) -> None:
    """`node` and the chain of inputs it alone read, once nothing reads them."""
    while isinstance(node, torch.fx.Node) and not node.users and node.op == "call_function":
        inputs = node.all_input_nodes
        graph.erase_node(node)
        node = inputs[0] if len(inputs) == 1 else None
