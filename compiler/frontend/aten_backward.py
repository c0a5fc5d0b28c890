"""Backward ops that survive Core ATen decomposition in a joint (training)
graph, rewritten exactly into forward ops rducc converts.

Each is a decomposition (`@decomposes`), not a new `rdu` op: the backward of
a convolution is two convolutions and a sum, the backward of average pooling
two matmuls by window matrices, the backward of attention matmuls and maps.
Those are the ops the chip runs well (PCU matmul/conv pipelines), and their
dims, FLOPs, tiling, sharding and runtime kernels already exist, so the cost
model and the partitioner see a backward as what it computes. torch's own
table decomposes most other `*_backward` overloads (gelu, silu, threshold,
layer/group/batch norm, softmax data, embedding_dense, the other upsamplings)
and rducc's `torch_fallbacks` applies it; what torch keeps is here:

- `convolution_backward` (1 to 3 spatial dims, any stride, padding, dilation,
  groups, transposed or not, any output mask): the input gradient is the
  transposed convolution of the output gradient by the weight (the direct one
  for a transposed convolution); the weight gradient is a convolution of the
  input by the output gradient with batch and channels swapped (stride and
  dilation exchanged, groups kept), over the input rows the forward's windows
  reach (a stride's leftover rows sliced off, or padded less), so its result
  is the kernel's taps; the bias gradient a sum. A bf16/f16 one stays whole,
  for `rdu.conv_grad` (torch's kernel).
- `avg_pool{2,3}d_backward`, `_adaptive_avg_pool{2,3}d_backward`: every
  average pool is separable (its window is a box, its divisor a product of
  one count per dim, also with padding excluded, ceil_mode or adaptive
  windows), so the gradient is one matmul per spatial dim by the
  [out, in] window matrix (1 / count where the input is in the output's
  window), built from `arange` (no constant data).
- `upsample_nearest2d_backward`, `_upsample_nearest_exact2d_backward`: the
  same matmuls by the 0/1 matrix of each output's source index.
- `max_pool{2,3}d_with_indices_backward`, `adaptive_max_pool{2,3}d_backward`:
  a scatter-add of the output gradient at the forward's indices.
- `transformers.grouped_mm_fallback_backward` (a mixture of experts' grouped
  matmul, whose implementation loops over `offs.tolist()`): every expert's
  product and a one-hot of each row's expert.
- `_embedding_bag_backward` (nn.EmbeddingBag's weight gradient, sum, mean
  or max): an accumulating index_put of each index's bag gradient (a
  scatter-add at the maxima's rows for max);
  `_embedding_bag_per_sample_weights_backward` (the gradient of learned
  per_sample_weights): each index's row dotted with its bag's gradient.
- `grid_sampler_2d_backward` (bilinear and nearest; bicubic stays refused):
  a scatter-add of the output gradient times each corner's weight for the
  input, the corner values' differences summed over channels times the
  source position's derivative (zero on and past a clipped border) for the grid.
- `_scaled_dot_product_flash_attention_for_cpu_backward`: the probabilities
  recomputed (softmax of the scores, as flash attention recomputes them),
  then the four matmuls of attention's backward, in float32 for 16-bit
  inputs as torch's CPU kernel accumulates.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import torch

from rducc.errors import RduccError
from rducc.frontend.decompositions import decomposes

aten = torch.ops.aten


# --------------------------------------------------------------------------
# Convolution
# --------------------------------------------------------------------------


def _weight_gradient(
    input: torch.Tensor, grad: torch.Tensor, kernel: Sequence[int], stride: Sequence[int],
    padding: Sequence[int], dilation: Sequence[int], groups: int,
) -> torch.Tensor:
    """d(loss)/d(weight) of the direct convolution `grad = conv(input, weight)`:
    the convolution of the input (channels as batch, batch as channels) by the
    output gradient (as a weight of N input channels per group), with stride and
    dilation exchanged, over the padded input's rows the forward's windows reach
    (`_reached`), so that its result is the kernel's size: no tap is computed
    that the weight has not. Shape [O, C / groups, *kernel]."""
    batch, channels = input.shape[:2]
    outputs = grad.shape[1]
    spatial = len(kernel)
    per_group, out_per_group = channels // groups, outputs // groups
    input, padding = _reached(input, grad.shape[2:], kernel, stride, padding, dilation)
    # input [N, G, Cg, *S] -> [Cg, G * N, *S]
    images = input.reshape(batch, groups, per_group, *input.shape[2:])
    images = images.permute(2, 1, 0, *range(3, 3 + spatial)).reshape(per_group, groups * batch, *input.shape[2:])
    # grad [N, G, Og, *So] -> [G * Og, N, *So]
    filters = grad.reshape(batch, groups, out_per_group, *grad.shape[2:])
    filters = filters.permute(1, 2, 0, *range(3, 3 + spatial)).reshape(outputs, batch, *grad.shape[2:])
    result = aten.convolution(images, filters, None, list(dilation), list(padding), list(stride), False,
                              [0] * spatial, groups)
    # [Cg, O, *K] -> [O, Cg, *K]
    return result.permute(1, 0, *range(2, 2 + spatial))


def _reached(input: torch.Tensor, out: Sequence[int], kernel: Sequence[int], stride: Sequence[int],
             padding: Sequence[int], dilation: Sequence[int]) -> tuple[torch.Tensor, list[int]]:
    """The input and the padding the weight gradient's convolution reads: the padded
    input's rows the forward's windows reach, `dilation x (kernel - 1) + stride x
    (out - 1) + 1` a dim. A stride can leave up to `stride - 1` rows past the last
    window (3x3 stride 2 padding 1 on 8 rows: the high side's padding row): the
    convolution over them would give taps past the kernel, computed and cut off.
    Those rows of the input are sliced off; where some are padding, the input is
    padded explicitly, less on the high side, and the convolution pads nothing."""
    spatial = len(kernel)
    sizes = list(input.shape[2:])
    over = [n + 2 * p - (d * (k - 1) + s * (o - 1) + 1)
            for n, o, k, s, p, d in zip(sizes, out, kernel, stride, padding, dilation)]
    cut = [max(0, extra - p) for extra, p in zip(over, padding)]
    for dim, rows in enumerate(cut):
        if rows:
            input = aten.slice(input, 2 + dim, 0, sizes[dim] - rows)
    high = [min(extra, p) for extra, p in zip(over, padding)]
    if not any(high):
        return input, list(padding)
    pads = [side for p, h in zip(reversed(padding), reversed(high)) for side in (p, p - h)]
    return aten.constant_pad_nd(input, pads, 0.0), [0] * spatial


HALF_CONV_GRADIENTS = (torch.bfloat16, torch.float16)
"""The element types whose convolution gradients are converted whole, as torch's kernel."""


def _output_padding(size: int, out: int, kernel: int, stride: int, padding: int, dilation: int) -> int:
    """The output padding a transposed convolution needs to give back `size` from `out`."""
    return size + 2 * padding - dilation * (kernel - 1) - 1 - stride * (out - 1)


@decomposes("aten.convolution_backward.default")
def convolution_backward(
    grad_output: torch.Tensor, input: torch.Tensor, weight: torch.Tensor, bias_sizes: Any,
    stride: Sequence[int], padding: Sequence[int], dilation: Sequence[int], transposed: bool,
    output_padding: Sequence[int], groups: int, output_mask: Sequence[bool],
) -> tuple[torch.Tensor | None, torch.Tensor | None, torch.Tensor | None]:
    """The gradients of a convolution (see the module's docstring), those `output_mask` asks for.
    A 16-bit one is left whole (`rdu.conv_grad`: torch's kernel, whose rounding
    depends on the CPU, so no decomposition is eager's everywhere)."""
    if grad_output.dtype in HALF_CONV_GRADIENTS:
        return NotImplemented
    spatial = weight.dim() - 2
    stride, padding, dilation = (_per_dim(v, spatial) for v in (stride, padding, dilation))
    kernel = list(weight.shape[2:])
    grad_input = grad_weight = grad_bias = None
    if transposed:  # forward: grad_output-shaped = conv_transpose(input, weight)
        if output_mask[0]:
            grad_input = aten.convolution(grad_output, weight, None, stride, padding, dilation, False,
                                          [0] * spatial, groups)
        if output_mask[1]:
            grad_weight = _weight_gradient(grad_output, input, kernel, stride, padding, dilation, groups)
    else:
        if output_mask[0]:
            extra = [_output_padding(input.shape[2 + d], grad_output.shape[2 + d], kernel[d], stride[d],
                                     padding[d], dilation[d]) for d in range(spatial)]
            grad_input = aten.convolution(grad_output, weight, None, stride, padding, dilation, True, extra, groups)
        if output_mask[1]:
            grad_weight = _weight_gradient(input, grad_output, kernel, stride, padding, dilation, groups)
    if output_mask[2]:
        grad_bias = grad_output.sum([0, *range(2, 2 + spatial)])
    return grad_input, grad_weight, grad_bias


def _per_dim(value: Sequence[int] | int, spatial: int) -> list[int]:
    values = [value] if isinstance(value, int) else list(value)
    return values * spatial if len(values) == 1 else values


# --------------------------------------------------------------------------
# Average pooling
# --------------------------------------------------------------------------


def _window_matrix(starts: torch.Tensor, ends: torch.Tensor, counts: torch.Tensor, size: int) -> torch.Tensor:
    """[out, in]: 1 / count[o] where starts[o] <= i < ends[o], else 0."""
    positions = torch.arange(size, device=starts.device).unsqueeze(0)
    inside = (positions >= starts.unsqueeze(1)) & (positions < ends.unsqueeze(1))
    return inside.to(torch.float32) / counts.unsqueeze(1).to(torch.float32)


def _pool_window(out: int, size: int, kernel: int, stride: int, padding: int, divisor: str) -> torch.Tensor:
    """The window matrix of one dim of avg_pool, torch's windows, divided by the
    window's size with padding (`padded`), without (`valid`) or not at all (`none`)."""
    starts = torch.arange(out) * stride - padding
    ends = torch.clamp(starts + kernel, max=size + padding)
    padded_counts = ends - starts
    starts, ends = torch.clamp(starts, min=0), torch.clamp(ends, max=size)
    counts = {"padded": padded_counts, "valid": ends - starts, "none": torch.ones_like(starts)}[divisor]
    return _window_matrix(starts, ends, counts, size)


def _adaptive_window(out: int, size: int) -> torch.Tensor:
    """The window matrix of one dim of adaptive average pooling."""
    index = torch.arange(out)
    starts = torch.div(index * size, out, rounding_mode="floor")
    ends = torch.div((index + 1) * size + out - 1, out, rounding_mode="floor")
    return _window_matrix(starts, ends, ends - starts, size)


def _spread(grad: torch.Tensor, windows: Sequence[torch.Tensor]) -> torch.Tensor:
    """The gradient over the input: each of the trailing dims of `grad` multiplied by
    its [out, in] window matrix (a matmul per dim, in float32 for 16-bit grads)."""
    spatial = len(windows)
    result = grad.to(torch.float32) if grad.dtype in (torch.float16, torch.bfloat16) else grad
    for index, window in enumerate(windows):
        dim = result.dim() - spatial + index
        moved = result.movedim(dim, -1)
        rows = moved.reshape(-1, moved.shape[-1])  # one [rows, out] x [out, in] product, no batched copy of the window
        result = torch.mm(rows, window.to(result.dtype)).reshape(*moved.shape[:-1], window.shape[1]).movedim(-1, dim)
    return result


def _avg_pool_backward(
    spatial: int, grad_output: torch.Tensor, input: torch.Tensor, kernel_size: Sequence[int],
    stride: Sequence[int], padding: Sequence[int], count_include_pad: bool, divisor_override: int | None,
) -> torch.Tensor:
    kernel = _per_dim(kernel_size, spatial)
    strides = _per_dim(stride, spatial) if len(stride) else kernel
    pads = _per_dim(padding, spatial)
    sizes, outs = input.shape[-spatial:], grad_output.shape[-spatial:]
    divisor = "none" if divisor_override is not None else "padded" if count_include_pad else "valid"
    windows = [_pool_window(outs[d], sizes[d], kernel[d], strides[d], pads[d], divisor) for d in range(spatial)]
    result = _spread(grad_output, windows)
    if divisor_override is not None:
        result = result / divisor_override
    return result.to(grad_output.dtype)


@decomposes("aten.avg_pool2d_backward.default")
def avg_pool2d_backward(
    grad_output: torch.Tensor, input: torch.Tensor, kernel_size: Sequence[int], stride: Sequence[int],
    padding: Sequence[int], ceil_mode: bool, count_include_pad: bool, divisor_override: int | None = None,
) -> torch.Tensor:
    """The gradient of avg_pool2d (any padding, ceil_mode, count_include_pad, divisor_override)."""
    return _avg_pool_backward(2, grad_output, input, kernel_size, stride, padding, count_include_pad,
                              divisor_override)


@decomposes("aten.avg_pool3d_backward.default")
def avg_pool3d_backward(
    grad_output: torch.Tensor, input: torch.Tensor, kernel_size: Sequence[int], stride: Sequence[int],
    padding: Sequence[int], ceil_mode: bool, count_include_pad: bool, divisor_override: int | None = None,
) -> torch.Tensor:
    """The gradient of avg_pool3d (as avg_pool2d_backward, over three dims)."""
    return _avg_pool_backward(3, grad_output, input, kernel_size, stride, padding, count_include_pad,
                              divisor_override)


def _adaptive_backward(spatial: int, grad_output: torch.Tensor, input: torch.Tensor) -> torch.Tensor:
    dims = range(input.dim() - spatial, input.dim())
    windows = [_adaptive_window(grad_output.shape[d], input.shape[d]) for d in dims]
    return _spread(grad_output, windows).to(grad_output.dtype)


@decomposes("aten._adaptive_avg_pool2d_backward.default")
def adaptive_avg_pool2d_backward(grad_output: torch.Tensor, input: torch.Tensor) -> torch.Tensor:
    """The gradient of adaptive_avg_pool2d (any input and output sizes)."""
    return _adaptive_backward(2, grad_output, input)


@decomposes("aten._adaptive_avg_pool3d_backward.default")
def adaptive_avg_pool3d_backward(grad_output: torch.Tensor, input: torch.Tensor) -> torch.Tensor:
    """The gradient of adaptive_avg_pool3d (any input and output sizes)."""
    return _adaptive_backward(3, grad_output, input)


# --------------------------------------------------------------------------
# Max pooling (by the forward's indices) and nearest upsampling
# --------------------------------------------------------------------------


def _scatter_by_indices(grad_output: torch.Tensor, input: torch.Tensor, indices: torch.Tensor,
                        spatial: int) -> torch.Tensor:
    """Each output's gradient added at the input position its index names (an
    index counts within one channel's flattened spatial plane, as max pooling's)."""
    planes = grad_output.shape[: grad_output.dim() - spatial]
    rows = math.prod(planes)
    plane_size = math.prod(input.shape[input.dim() - spatial:])
    zeros = torch.zeros(rows, plane_size, dtype=grad_output.dtype, device=grad_output.device)
    result = zeros.scatter_add(1, indices.reshape(rows, -1), grad_output.reshape(rows, -1))
    return result.reshape(input.shape)


@decomposes("aten.max_pool2d_with_indices_backward.default")
def max_pool2d_with_indices_backward(
    grad_output: torch.Tensor, input: torch.Tensor, kernel_size: Any, stride: Any, padding: Any,
    dilation: Any, ceil_mode: bool, indices: torch.Tensor,
) -> torch.Tensor:
    """The gradient of max_pool2d: added at the forward's argmax positions."""
    return _scatter_by_indices(grad_output, input, indices, 2)


@decomposes("aten.max_pool3d_with_indices_backward.default")
def max_pool3d_with_indices_backward(
    grad_output: torch.Tensor, input: torch.Tensor, kernel_size: Any, stride: Any, padding: Any,
    dilation: Any, ceil_mode: bool, indices: torch.Tensor,
) -> torch.Tensor:
    """The gradient of max_pool3d: added at the forward's argmax positions."""
    return _scatter_by_indices(grad_output, input, indices, 3)


@decomposes("aten.adaptive_max_pool2d_backward.default")
def adaptive_max_pool2d_backward(grad_output: torch.Tensor, input: torch.Tensor, indices: torch.Tensor) \
        -> torch.Tensor:
    """The gradient of adaptive_max_pool2d: added at the forward's argmax positions."""
    return _scatter_by_indices(grad_output, input, indices, 2)


@decomposes("aten.adaptive_max_pool3d_backward.default")
def adaptive_max_pool3d_backward(grad_output: torch.Tensor, input: torch.Tensor, indices: torch.Tensor) \
        -> torch.Tensor:
    """The gradient of adaptive_max_pool3d: added at the forward's argmax positions."""
    return _scatter_by_indices(grad_output, input, indices, 3)


def _nearest_window(out: int, size: int, scale: float | None, exact: bool) -> torch.Tensor:
    """[out, in]: 1 where input i is the one nearest upsampling copies to output o
    (torch's source index: floor(o * s), or floor((o + 0.5) * s) when exact)."""
    ratio = 1.0 / scale if scale is not None and scale > 0 else size / out
    positions = torch.arange(out, dtype=torch.float32)
    source = torch.floor((positions + 0.5) * ratio if exact else positions * ratio).to(torch.int64)
    source = torch.clamp(source, max=size - 1)
    return (source.unsqueeze(1) == torch.arange(size).unsqueeze(0)).to(torch.float32)


def _nearest_backward(grad_output: torch.Tensor, input_size: Sequence[int], scales: Sequence[float | None],
                      exact: bool) -> torch.Tensor:
    spatial = len(scales)
    outs, sizes = grad_output.shape[-spatial:], list(input_size)[-spatial:]
    windows = [_nearest_window(outs[d], sizes[d], scales[d], exact) for d in range(spatial)]
    return _spread(grad_output, windows).to(grad_output.dtype)


@decomposes("aten.upsample_nearest2d_backward.default")
def upsample_nearest2d_backward(grad_output: torch.Tensor, output_size: Sequence[int], input_size: Sequence[int],
                                scales_h: float | None = None, scales_w: float | None = None) -> torch.Tensor:
    """The gradient of nearest upsampling: each input gathers the outputs copied from it."""
    return _nearest_backward(grad_output, input_size, [scales_h, scales_w], exact=False)


@decomposes("aten._upsample_nearest_exact2d_backward.default")
def upsample_nearest_exact2d_backward(grad_output: torch.Tensor, output_size: Sequence[int],
                                      input_size: Sequence[int], scales_h: float | None = None,
                                      scales_w: float | None = None) -> torch.Tensor:
    """The gradient of nearest-exact upsampling (source index rounded half up)."""
    return _nearest_backward(grad_output, input_size, [scales_h, scales_w], exact=True)


# --------------------------------------------------------------------------
# Attention
# --------------------------------------------------------------------------


@decomposes("aten._scaled_dot_product_flash_attention_for_cpu_backward.default")
def flash_attention_backward(
    grad_out: torch.Tensor, query: torch.Tensor, key: torch.Tensor, value: torch.Tensor, out: torch.Tensor,
    logsumexp: torch.Tensor, dropout_p: float, is_causal: bool, attn_mask: torch.Tensor | None = None,
    scale: float | None = None,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """dq, dk, dv of attention from the saved output, the probabilities
    recomputed as softmax(q k^T * scale + mask) (flash attention's recompute).
    The saved `logsumexp` is not read: torch's decomposition of the CPU flash
    forward returns the probabilities in its place, not a log-sum-exp."""
    if dropout_p > 0:
        raise RduccError(
            f"attention with dropout_p={dropout_p} in training: its random mask is drawn inside torch's fused "
            "kernel and not saved for the backward; use attention dropout 0 (attn_pdrop / attention_dropout)"
        )
    dtype = query.dtype
    wide = torch.float32 if dtype in (torch.float16, torch.bfloat16) else dtype
    groups = query.shape[-3] // key.shape[-3]  # grouped-query attention: each KV head serves `groups` heads
    q, k, v, o, g = (t.to(wide) for t in (query, _repeat_heads(key, groups), _repeat_heads(value, groups), out,
                                          grad_out))
    factor = scale if scale is not None else 1.0 / math.sqrt(query.shape[-1])
    scores = torch.matmul(q, k.transpose(-2, -1)) * factor
    if is_causal:
        rows, cols = scores.shape[-2], scores.shape[-1]
        keep = torch.ones(rows, cols, dtype=torch.bool, device=scores.device).tril()
        scores = torch.where(keep, scores, float("-inf"))
    if attn_mask is not None:
        scores = (torch.where(attn_mask, scores, float("-inf")) if attn_mask.dtype == torch.bool
                  else scores + attn_mask.to(wide))
    probabilities = torch.softmax(scores, -1)
    grad_value = torch.matmul(probabilities.transpose(-2, -1), g)
    grad_probabilities = torch.matmul(g, v.transpose(-2, -1))
    row_dot = (g * o).sum(-1, keepdim=True)
    grad_scores = probabilities * (grad_probabilities - row_dot) * factor
    grad_query = torch.matmul(grad_scores, k)
    grad_key = torch.matmul(grad_scores.transpose(-2, -1), q)
    return grad_query.to(dtype), _sum_heads(grad_key, groups).to(dtype), _sum_heads(grad_value, groups).to(dtype)


def _repeat_heads(tensor: torch.Tensor, groups: int) -> torch.Tensor:
    """[B, Hk, S, E] -> [B, Hk * groups, S, E], each head repeated `groups` times in place."""
    if groups == 1:
        return tensor
    batch, heads, length, width = tensor.shape
    return tensor.unsqueeze(2).expand(batch, heads, groups, length, width).reshape(batch, heads * groups, length, width)


def _sum_heads(grad: torch.Tensor, groups: int) -> torch.Tensor:
    """The gradient of `_repeat_heads`: each KV head's share summed over its group."""
    if groups == 1:
        return grad
    batch, heads, length, width = grad.shape
    return grad.reshape(batch, heads // groups, groups, length, width).sum(2)


# --------------------------------------------------------------------------
# transformers' grouped matmul (mixture-of-experts), whose backward loops over values
# --------------------------------------------------------------------------


@decomposes("transformers.grouped_mm_fallback_backward.default")
def grouped_mm_fallback_backward(input: torch.Tensor, weight: torch.Tensor, offs: torch.Tensor,
                                 grad_output: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """The gradients of transformers' grouped matmul (rows sorted by expert, `offs`
    the cumulative row counts; rows past the last offset take no part), without its
    loop over `offs.tolist()`: each row's input gradient is its expert's product,
    chosen from every expert's, and each expert's weight gradient sums its rows."""
    experts = weight.shape[0]
    rows = torch.arange(input.shape[0], device=input.device, dtype=offs.dtype)
    expert = (offs.unsqueeze(0) <= rows.unsqueeze(1)).sum(1)  # [S]: the expert of each row (experts: none)
    member = (expert.unsqueeze(1) == torch.arange(experts, device=input.device)).to(input.dtype)  # [S, E]
    every = torch.matmul(grad_output.unsqueeze(0), weight.transpose(1, 2))  # [E, S, I]
    grad_input = (every * member.t().unsqueeze(2)).sum(0)
    grad_weight = torch.matmul((input.unsqueeze(0) * member.t().unsqueeze(2)).transpose(1, 2), grad_output)
    return grad_input, grad_weight


__all__ = [
    "adaptive_avg_pool2d_backward", "adaptive_avg_pool3d_backward", "adaptive_max_pool2d_backward",
    "adaptive_max_pool3d_backward", "avg_pool2d_backward", "avg_pool3d_backward", "convolution_backward",
    "flash_attention_backward", "grouped_mm_fallback_backward", "max_pool2d_with_indices_backward",
    "max_pool3d_with_indices_backward", "upsample_nearest2d_backward", "upsample_nearest_exact2d_backward",
]


# --------------------------------------------------------------------------
# Embedding bags
# --------------------------------------------------------------------------


@decomposes("aten._embedding_bag_backward.default")
def embedding_bag_backward(
    grad: torch.Tensor, indices: torch.Tensor, offsets: torch.Tensor, offset2bag: torch.Tensor,
    bag_size: torch.Tensor, maximum_indices: torch.Tensor, num_weights: int, scale_grad_by_freq: bool,
    mode: int, sparse: bool, per_sample_weights: torch.Tensor | None, padding_idx: int = -1,
) -> torch.Tensor:
    """The dense weight gradient of `_embedding_bag` (nn.EmbeddingBag, F.embedding_bag), as
    torch's CPU kernel: sum and mean add each index's bag gradient (times its per-sample
    weight; over the bag's size for mean) into its row, the padding row left out; max adds
    each non-empty bag's gradient at the rows its maxima came from (`maximum_indices`)."""
    if sparse or scale_grad_by_freq:
        raise RduccError(
            "nn.EmbeddingBag(sparse=True) trains a sparse weight gradient; rducc trains dense gradients only "
            "(give sparse=False)" if sparse else
            "nn.EmbeddingBag(scale_grad_by_freq=True) in training: torch's CPU kernel divides each index's "
            "gradient by the count of another index (its position in the sorted indices), which rducc does "
            "not reproduce; give scale_grad_by_freq=False")
    width = grad.shape[1]
    zeros = grad.new_zeros(num_weights, width)
    if mode == 2:
        nonempty = (bag_size > 0).unsqueeze(1)
        rows = torch.where(nonempty, maximum_indices, torch.zeros_like(maximum_indices))
        return zeros.scatter_add(0, rows, torch.where(nonempty, grad, torch.zeros_like(grad)))
    offset2bag = _bag_of_each_index(indices, offsets, offset2bag)
    contributions = grad.index_select(0, offset2bag)
    if mode == 1:
        sizes = bag_size.index_select(0, offset2bag).clamp(min=1).to(grad.dtype)
        contributions = contributions / sizes.unsqueeze(1)
    if per_sample_weights is not None:
        contributions = contributions * per_sample_weights.to(grad.dtype).unsqueeze(1)
    if padding_idx >= 0:
        kept = (indices != padding_idx).unsqueeze(1)
        contributions = torch.where(kept, contributions, torch.zeros_like(contributions))
    return aten.index_put(zeros, [indices], contributions, accumulate=True)


def _bag_of_each_index(indices: torch.Tensor, offsets: torch.Tensor, offset2bag: torch.Tensor) -> torch.Tensor:
    """The bag of each index: the forward's `offset2bag`, or, where its fast sum path left it empty, the
    last bag starting at or before the index's position (empty bags share their start with the next)."""
    if offset2bag.numel() == indices.numel():
        return offset2bag
    positions = torch.arange(indices.numel(), device=indices.device).unsqueeze(1)
    return (offsets.unsqueeze(0) <= positions).sum(1) - 1


@decomposes("aten._embedding_bag_per_sample_weights_backward.default")
def embedding_bag_per_sample_weights_backward(
    grad: torch.Tensor, weight: torch.Tensor, indices: torch.Tensor, offsets: torch.Tensor,
    offset2bag: torch.Tensor, mode: int, padding_idx: int = -1,
) -> torch.Tensor:
    """The gradient of `_embedding_bag`'s per_sample_weights (mode sum, the only one torch takes them
    in), as torch's CPU kernel: each index's weight row dotted with its bag's output gradient, zero for
    the padding row."""
    bags = _bag_of_each_index(indices, offsets, offset2bag)
    products = (grad.index_select(0, bags) * weight.index_select(0, indices).to(grad.dtype)).sum(1)
    if padding_idx >= 0:
        products = torch.where(indices != padding_idx, products, torch.zeros_like(products))
    return products


# --------------------------------------------------------------------------
# Batch norm in training mode: the statistics its backward reads
# --------------------------------------------------------------------------


def _statistics_as_eager(op: torch._ops.OpOverload) -> Any:
    """torch's decomposition of the training-mode batch norm `op`, with the saved
    mean and inverse std (what `native_batch_norm_backward` reads) in the dtype
    eager's CPU kernel gives them: the weight's. Under autocast a bf16 input
    meets float32 weights (batch norm is not autocast); eager keeps the
    statistics in float32, while torch's decomposition rounds them to the
    input's bf16 on the CPU, so the backward's normalized input, and the
    weight's gradient, were a bf16 rounding off eager's. The decomposition runs
    on the input in its computation dtype (it computes in that anyway) and the
    output is rounded to the input's dtype once, as before."""

    def decomposed(input: torch.Tensor, weight: torch.Tensor | None, *rest: Any) -> Any:
        from torch._decomp import decomposition_table
        from torch._prims_common import get_computation_dtype

        decomposition = decomposition_table[op]
        if weight is None or weight.dtype == input.dtype or input.device.type != "cpu":
            return decomposition(input, weight, *rest)
        output, mean, invstd, *updates = decomposition(input.to(get_computation_dtype(input.dtype)), weight, *rest)
        return (output.to(input.dtype), mean.to(weight.dtype), invstd.to(weight.dtype), *updates)

    return decomposed


for _name in ("_native_batch_norm_legit_functional", "_native_batch_norm_legit", "native_batch_norm"):
    decomposes(f"aten.{_name}.default")(_statistics_as_eager(getattr(aten, _name).default))


@decomposes("aten._weight_norm_interface_backward.default")
def weight_norm_interface_backward(
    grad_w: torch.Tensor, saved_v: torch.Tensor, saved_g: torch.Tensor, saved_norms: torch.Tensor, dim: int
) -> tuple[torch.Tensor, torch.Tensor]:
    """The gradients of `torch.nn.utils.parametrizations.weight_norm`'s v and g: torch's
    decomposition of the same gradient, `_weight_norm_differentiable_backward` (no
    host call, so tp splits it by the weight's rows as the forward's matmul)."""
    return torch.ops.aten._weight_norm_differentiable_backward(grad_w, saved_v, saved_g, saved_norms, dim)


# --------------------------------------------------------------------------
# grid_sample (bilinear and nearest)
# --------------------------------------------------------------------------


def _grid_source(coordinate: torch.Tensor, size: int, padding_mode: int,
                 aligned: bool) -> tuple[torch.Tensor, torch.Tensor]:
    """torch's `apply_get_grad` (GridSamplerKernel.cpp): the source position of a
    normalized grid coordinate and its derivative by the coordinate. Border and
    reflection padding clip into [0, size - 1] with a zero derivative on and past
    the borders; reflection first folds the position back by `span`, its
    derivative's sign flipping on each odd fold and for a negative offset."""
    scale = (size - 1) / 2 if aligned else size / 2
    position = (coordinate + 1) * scale - (0.0 if aligned else 0.5)
    grad = torch.full_like(position, scale)
    if padding_mode == 2:
        low, span = (0.0, size - 1.0) if aligned else (-0.5, float(size))
        if span <= 0:
            return torch.zeros_like(position), torch.zeros_like(position)
        offset = position - low
        folds = (offset.abs() / span).floor()
        extra = offset.abs() - folds * span
        odd = torch.remainder(folds, 2) == 1
        position = torch.where(odd, span - extra, extra) + low
        grad = grad * torch.where(odd, -1.0, 1.0) * torch.where(offset < 0, -1.0, 1.0)
    if padding_mode in (1, 2):
        inside = (position > 0) & (position < size - 1)
        position = position.clamp(0, size - 1)
        grad = torch.where(inside, grad, 0.0)
    return position, grad


def _grid_corner(input: torch.Tensor, x: torch.Tensor, y: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Each sample's flat index into its input plane at integer position (x, y) (0 outside)
    and whether it is inside, both [N, 1, oH * oW]."""
    height, width = input.shape[2:]
    inside = (x >= 0) & (x < width) & (y >= 0) & (y < height)
    index = torch.where(inside, y * width + x, 0).to(torch.int64)
    return index.flatten(1).unsqueeze(1), inside.flatten(1).unsqueeze(1)


def _grid_corners(x: torch.Tensor, y: torch.Tensor, bilinear: bool) -> list[tuple[torch.Tensor, ...]]:
    """The (x, y, weight) a sample reads: the four corners around it with torch's
    weights (north-west, north-east, south-west, south-east), or the rounded point."""
    if not bilinear:
        return [(x.round(), y.round(), torch.ones_like(x))]
    west, north = x.floor(), y.floor()
    w, n = x - west, y - north
    e, s = 1 - w, 1 - n
    return [(west, north, s * e), (west + 1, north, s * w), (west, north + 1, n * e), (west + 1, north + 1, n * w)]


def _grid_gradient(values: list[torch.Tensor], grad: torch.Tensor, x: torch.Tensor, y: torch.Tensor,
                   gx: torch.Tensor, gy: torch.Tensor) -> torch.Tensor:
    """Bilinear sampling's gradient by the grid, [N, oH, oW, 2], in torch's CPU kernel's order."""
    nw, ne, sw, se = values
    shape = (x.shape[0], 1, -1)
    w, n = (x - x.floor()).reshape(shape), (y - y.floor()).reshape(shape)
    e, s = 1 - w, 1 - n
    grad_x = (((ne - nw) * s + (se - sw) * n) * grad).sum(1).reshape(x.shape) * gx
    grad_y = (((sw - nw) * e + (se - ne) * w) * grad).sum(1).reshape(y.shape) * gy
    return torch.stack([grad_x, grad_y], -1)


@decomposes("aten.grid_sampler_2d_backward.default")
def grid_sampler_2d_backward(
    grad_output: torch.Tensor, input: torch.Tensor, grid: torch.Tensor, interpolation_mode: int,
    padding_mode: int, align_corners: bool, output_mask: Sequence[bool],
) -> Any:
    """The gradients of bilinear and nearest grid_sample as torch's CPU kernel computes
    them: the input's a scatter-add of each sample's gradient times its corner weights
    at the corners inside the input; the grid's (bilinear, `_grid_gradient`) the channel
    sum of the sample's gradient times the corner values' differences, times the source
    position's derivative (`_grid_source`); zero for nearest. Bicubic is left to the
    importer (refused)."""
    if interpolation_mode not in (0, 1):
        return NotImplemented
    compute = torch.promote_types(grad_output.dtype, torch.float32)
    batch, channels, height, width = input.shape
    source = input.to(compute).reshape(batch, channels, height * width)
    grad = grad_output.to(compute).flatten(2)
    x, gx = _grid_source(grid[..., 0].to(compute), width, padding_mode, align_corners)
    y, gy = _grid_source(grid[..., 1].to(compute), height, padding_mode, align_corners)
    grad_input = torch.zeros_like(source) if output_mask[0] else None
    values = []
    for cx, cy, weight in _grid_corners(x, y, interpolation_mode == 0):
        index, inside = _grid_corner(input, cx, cy)
        index = index.expand(batch, channels, -1)
        if grad_input is not None:
            part = grad * torch.where(inside, weight.flatten(1).unsqueeze(1), 0.0)
            grad_input = grad_input.scatter_add(2, index, part)
        values.append(torch.where(inside, source.gather(2, index), 0.0))
    result_input = grad_input.reshape(input.shape).to(input.dtype) if grad_input is not None else None
    if not output_mask[1]:
        return result_input, None
    if interpolation_mode == 1:
        return result_input, torch.zeros_like(grid)
    return result_input, _grid_gradient(values, grad, x, y, gx, gy).to(grid.dtype)
