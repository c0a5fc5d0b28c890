"""Backward ops of joint (training) graphs, against eager.

Each module here calls the ATen backward overload itself in its forward, so
the op reaches rducc as it does in a joint graph (torch.export keeps it;
Core ATen keeps what torch does not decompose) without depending on the
training importer. rducc's own decompositions (`rducc.frontend.aten_backward`:
convolution, average and max pooling, nearest upsampling, CPU flash attention,
bilinear and nearest grid_sample)
and torch's (`torch_fallbacks`: norms, activations, softmax, embedding) are
both checked, in float32 and bfloat16, at -O0 and (some) -O2.
"""

from __future__ import annotations

import pytest
import torch

import rducc
from rducc.errors import RduccError

aten = torch.ops.aten


class Call(torch.nn.Module):
    """A module whose forward calls `function` on its inputs."""

    def __init__(self, function):
        super().__init__()
        self.function = function

    def forward(self, *inputs):
        return self.function(*inputs)


def _check(function, inputs, opt_level=0, rtol=1e-4, atol=1e-5):
    """Compile `function` with rducc and compare every result with eager."""
    expected = function(*inputs)
    program = rducc.compile(Call(function), tuple(inputs), opt_level=opt_level)
    actual = program(*inputs)
    expected = expected if isinstance(expected, tuple | list) else (expected,)
    actual = actual if isinstance(actual, tuple | list) else (actual,)
    assert len(actual) == len(expected)
    for want, got in zip(expected, actual):
        if want is None:
            assert got is None
            continue
        assert got.shape == want.shape and got.dtype == want.dtype, (got.shape, want.shape, got.dtype, want.dtype)
        torch.testing.assert_close(got.float(), want.float(), rtol=rtol, atol=atol)


def _bf16_tolerance(dtype):
    return dict(rtol=2e-2, atol=2e-2) if dtype == torch.bfloat16 else {}


# --------------------------------------------------------------------------
# convolution_backward (rducc's decomposition: two convolutions and a sum)
# --------------------------------------------------------------------------

CONVOLUTIONS = [
    # batch, in, out, spatial sizes, kernel, stride, padding, dilation, groups, transposed, output padding
    (2, 4, 6, (9, 9), 3, 2, 1, 1, 2, False, 0),
    (2, 4, 6, (10,), 3, 3, 2, 2, 1, False, 0),
    (1, 4, 4, (7, 7), 3, 1, 1, 1, 4, False, 0),  # depthwise
    (2, 3, 5, (8, 6), 1, 1, 0, 1, 1, False, 0),  # pointwise
    (2, 4, 6, (5, 5), 3, 2, 1, 1, 2, True, 1),  # transposed, output padding
    (1, 2, 4, (4, 5, 5), 2, 2, 0, 1, 1, False, 0),  # 3d
    (2, 2, 3, (11, 7), (4, 2), (3, 2), (2, 0), (1, 2), 1, False, 0),  # per-dim geometry
]


def _convolution_case(case, dtype=torch.float32):
    batch, cin, cout, sizes, kernel, stride, padding, dilation, groups, transposed, extra = case
    spatial = len(sizes)

    def per_dim(v):
        return list(v) if isinstance(v, tuple) else [v] * spatial

    kernel, stride, padding, dilation, extra = map(per_dim, (kernel, stride, padding, dilation, extra))
    generator = torch.Generator().manual_seed(hash(str(case)) % 1000)
    x = torch.randn(batch, cin, *sizes, generator=generator).to(dtype)
    shape = (cin, cout // groups) if transposed else (cout, cin // groups)
    w = torch.randn(*shape, *kernel, generator=generator).to(dtype)
    y = aten.convolution(x, w, None, stride, padding, dilation, transposed, extra, groups)
    g = torch.randn(y.shape, generator=generator).to(dtype)
    return (stride, padding, dilation, transposed, extra, groups), (g, x, w)


@pytest.mark.parametrize("case", CONVOLUTIONS, ids=lambda c: f"{len(c[3])}d-g{c[8]}{'-T' if c[9] else ''}")
def test_convolution_backward_matches_eager(case):
    (stride, padding, dilation, transposed, extra, groups), inputs = _convolution_case(case)
    bias = [inputs[2].shape[1] * groups if transposed else inputs[2].shape[0]]
    _check(lambda g, x, w: aten.convolution_backward(g, x, w, bias, stride, padding, dilation, transposed, extra,
                                                     groups, [True, True, True]), inputs)


def test_convolution_backward_output_mask_and_bf16_at_O2():
    (stride, padding, dilation, transposed, extra, groups), inputs = _convolution_case(CONVOLUTIONS[0],
                                                                                       torch.bfloat16)
    _check(lambda g, x, w: aten.convolution_backward(g, x, w, None, stride, padding, dilation, transposed, extra,
                                                     groups, [False, True, False])[1],
           inputs, opt_level=2, rtol=2e-2, atol=5e-2)
    _check(lambda g, x, w: aten.convolution_backward(g, x, w, None, stride, padding, dilation, transposed, extra,
                                                     groups, [True, False, False])[0],
           inputs, opt_level=2, rtol=2e-2, atol=5e-2)


# --------------------------------------------------------------------------
# pooling and upsampling backward (window matrices, scatter by indices)
# --------------------------------------------------------------------------

AVG_POOLS = [
    # kernel, stride, padding, ceil_mode, count_include_pad, divisor_override, input size
    ([3, 3], [2, 2], [1, 1], False, True, None, (9, 9)),
    ([3, 3], [2, 2], [1, 1], True, False, None, (10, 9)),
    ([3, 3], [1, 1], [1, 1], False, False, None, (8, 8)),  # poolformer's pooling
    ([2, 3], [2, 1], [0, 1], True, True, 5, (7, 6)),
    ([2], [], [0], False, True, None, (6, 6)),  # stride defaults to the kernel
]


@pytest.mark.parametrize("case", AVG_POOLS, ids=lambda c: f"k{c[0]}-s{c[1]}-ceil{int(c[3])}-pad{int(c[4])}-d{c[5]}")
def test_avg_pool2d_backward_matches_eager(case):
    kernel, stride, padding, ceil_mode, include_pad, divisor, size = case
    x = torch.randn(2, 3, *size)
    y = aten.avg_pool2d(x, kernel, stride, padding, ceil_mode, include_pad, divisor)
    _check(lambda g, x: aten.avg_pool2d_backward(g, x, kernel, stride, padding, ceil_mode, include_pad, divisor),
           (torch.randn(y.shape), x))


def test_pooling_backward_3d_and_adaptive_match_eager():
    x3 = torch.randn(1, 2, 5, 6, 7)
    y3 = aten.avg_pool3d(x3, [2, 3, 2], [2, 2, 1], [1, 1, 0], True, False)
    x2 = torch.randn(2, 3, 10, 7)
    inputs = (torch.randn(y3.shape), x3, torch.randn(2, 3, 4, 3), x2, torch.randn(1, 2, 2, 4, 3))

    def backward(g3, x3, ga, x2, ga3):
        return (aten.avg_pool3d_backward(g3, x3, [2, 3, 2], [2, 2, 1], [1, 1, 0], True, False, None),
                aten._adaptive_avg_pool2d_backward(ga, x2),  # 10 -> 4 and 7 -> 3: overlapping windows
                aten._adaptive_avg_pool3d_backward(ga3, x3))

    _check(backward, inputs)


def test_pooling_backward_bf16_matches_eager():
    x = torch.randn(2, 3, 10, 7).to(torch.bfloat16)
    y = aten.avg_pool2d(x, [3, 3], [2, 2], [1, 1], True, False)
    inputs = (torch.randn(y.shape).to(torch.bfloat16), x, torch.randn(2, 3, 4, 3).to(torch.bfloat16))

    def backward(g, x, ga):
        return (aten.avg_pool2d_backward(g, x, [3, 3], [2, 2], [1, 1], True, False, None),
                aten._adaptive_avg_pool2d_backward(ga, x))

    _check(backward, inputs, **_bf16_tolerance(torch.bfloat16))


def test_max_pooling_backward_by_rduccs_own_indices():
    """The indices come from rducc's max pooling in the same program."""
    x2, x3 = torch.randn(2, 3, 9, 8), torch.randn(1, 2, 6, 5, 7)
    y2, _ = aten.max_pool2d_with_indices(x2, [3, 3], [2, 2], [1, 1], [1, 1], True)
    y3, _ = aten.max_pool3d_with_indices(x3, [2, 2, 3], [2, 1, 2], [0, 1, 1], [1, 1, 1], False)
    ya, _ = aten.adaptive_max_pool2d(x2, [4, 3])

    def backward(x2, g2, x3, g3, ga):
        _, i2 = aten.max_pool2d_with_indices(x2, [3, 3], [2, 2], [1, 1], [1, 1], True)
        _, i3 = aten.max_pool3d_with_indices(x3, [2, 2, 3], [2, 1, 2], [0, 1, 1], [1, 1, 1], False)
        _, ia = aten.adaptive_max_pool2d(x2, [4, 3])
        return (aten.max_pool2d_with_indices_backward(g2, x2, [3, 3], [2, 2], [1, 1], [1, 1], True, i2),
                aten.max_pool3d_with_indices_backward(g3, x3, [2, 2, 3], [2, 1, 2], [0, 1, 1], [1, 1, 1], False, i3),
                aten.adaptive_max_pool2d_backward(ga, x2, ia))

    _check(backward, (x2, torch.randn(y2.shape), x3, torch.randn(y3.shape), torch.randn(ya.shape)))


def test_upsampling_backward_matches_eager():
    g, g1, g3 = torch.randn(2, 3, 10, 9), torch.randn(2, 3, 10), torch.randn(1, 2, 4, 6, 4)

    def backward(g, g1, g3):
        return (aten.upsample_nearest2d_backward(g, [10, 9], [2, 3, 4, 3]),  # integer scale 3 on w, 2.5 on h
                aten.upsample_nearest2d_backward(g, [10, 9], [2, 3, 5, 4], 2.0, 2.25),
                aten._upsample_nearest_exact2d_backward(g, [10, 9], [2, 3, 4, 6]),
                aten.upsample_nearest1d_backward(g1, [10], [2, 3, 4]),  # torch's table
                aten.upsample_nearest3d_backward(g3, [4, 6, 4], [1, 2, 2, 3, 2]),
                aten.upsample_bilinear2d_backward(g, [10, 9], [2, 3, 4, 5], False),
                aten.upsample_bilinear2d_backward(g, [10, 9], [2, 3, 4, 5], True))

    _check(backward, (g, g1, g3))


def test_grid_sample_backward_matches_eager():
    """Bilinear and nearest grid_sample's input and grid gradients, with grid points outside the
    input (zeros padding), clipped (border) and folded back (reflection), corners aligned or not;
    the input's gradient left out (output_mask) as where a spatial transformer samples the data."""
    torch.manual_seed(0)
    x, grad = torch.randn(2, 3, 5, 6), torch.randn(2, 3, 4, 7)
    grid = torch.rand(2, 4, 7, 2) * 3 - 1.5

    def backward(grad, x, grid):
        return (*aten.grid_sampler_2d_backward(grad, x, grid, 0, 0, False, [True, True]),
                aten.grid_sampler_2d_backward(grad, x, grid, 0, 1, True, [False, True])[1],
                aten.grid_sampler_2d_backward(grad, x, grid, 0, 2, False, [False, True])[1],
                aten.grid_sampler_2d_backward(grad, x, grid, 1, 2, True, [True, False])[0])

    _check(backward, (grad, x, grid))


# --------------------------------------------------------------------------
# attention backward (rducc's decomposition from the saved log-sum-exp)
# --------------------------------------------------------------------------


@pytest.mark.parametrize("causal, mask, scale, dtype, kv_heads", [
    (False, None, None, torch.float32, 4),
    (True, None, None, torch.float32, 2),  # grouped-query attention
    (True, None, 0.3, torch.float32, 4),
    (False, "-inf", None, torch.float32, 4),
    (False, "float", None, torch.float32, 4),
    (True, None, None, torch.bfloat16, 4),
])
def test_flash_attention_backward_matches_eager(causal, mask, scale, dtype, kv_heads):
    generator = torch.Generator().manual_seed(3)
    q = torch.randn(2, 4, 6, 8, generator=generator).to(dtype)
    k = torch.randn(2, kv_heads, 7 if not causal else 6, 8, generator=generator).to(dtype)
    v = torch.randn(2, kv_heads, k.shape[2], 8, generator=generator).to(dtype)
    g = torch.randn(2, 4, 6, 8, generator=generator).to(dtype)
    inputs = [q, k, v, g]
    if mask == "-inf":  # a boolean mask as sdpa hands it to the flash kernel
        keep = torch.rand(6, k.shape[2], generator=generator) > 0.3
        keep[:, 0] = True  # every row attends somewhere
        inputs.append(torch.zeros(6, k.shape[2]).masked_fill(~keep, float("-inf")).to(dtype))
    elif mask == "float":
        inputs.append(torch.randn(2, 1, 6, k.shape[2], generator=generator).to(dtype))

    def attention_backward(q, k, v, g, *masks):
        attn_mask = masks[0] if masks else None
        out, lse = aten._scaled_dot_product_flash_attention_for_cpu(q, k, v, 0.0, causal, attn_mask=attn_mask,
                                                                    scale=scale)
        return aten._scaled_dot_product_flash_attention_for_cpu_backward(g, q, k, v, out, lse, 0.0, causal,
                                                                         attn_mask=attn_mask, scale=scale)

    _check(attention_backward, tuple(inputs), **_bf16_tolerance(dtype))


def test_attention_backward_with_dropout_is_one_clear_error():
    q = torch.randn(1, 2, 4, 8)

    def attention_backward(q):
        out, lse = aten._scaled_dot_product_flash_attention_for_cpu(q, q, q, 0.0, False)
        return aten._scaled_dot_product_flash_attention_for_cpu_backward(q, q, q, q, out, lse, 0.1, False)

    with pytest.raises(RduccError, match="dropout_p=0.1 in training"):
        rducc.compile(Call(attention_backward), (q,), opt_level=0)


# --------------------------------------------------------------------------
# the backward ops torch's own table decomposes (rducc's torch_fallbacks)
# --------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_activation_and_softmax_backward_match_eager(dtype):
    generator = torch.Generator().manual_seed(5)
    g, x = (torch.randn(4, 16, generator=generator).to(dtype) for _ in range(2))
    s = torch.softmax(x.float(), -1).to(dtype)
    ls = torch.log_softmax(x.float(), -1).to(dtype)

    def backward(g, x, s, ls):
        return (aten.gelu_backward(g, x), aten.gelu_backward(g, x, approximate="tanh"), aten.silu_backward(g, x),
                aten.threshold_backward(g, x, 0.0), aten.sigmoid_backward(g, s), aten.tanh_backward(g, s),
                aten._softmax_backward_data(g, s, -1, dtype), aten._log_softmax_backward_data(g, ls, -1, dtype),
                aten.hardswish_backward(g, x), aten.leaky_relu_backward(g, x, 0.1, False),
                aten.elu_backward(g, 1.0, 1.0, 1.0, False, x))

    _check(backward, (g, x, s, ls), **_bf16_tolerance(dtype))


def test_normalization_backward_matches_eager():
    generator = torch.Generator().manual_seed(6)
    x = torch.randn(2, 6, 4, 4, generator=generator)
    w, b = torch.randn(6, generator=generator), torch.randn(6, generator=generator)
    g = torch.randn(2, 6, 4, 4, generator=generator)
    xl, wl, bl = torch.randn(3, 5, 8, generator=generator), torch.randn(8, generator=generator), torch.randn(8)
    gl = torch.randn(3, 5, 8, generator=generator)
    rm, rv = torch.zeros(6), torch.ones(6)

    def backward(x, w, b, g, xl, wl, bl, gl, rm, rv):
        _, mean, rstd = aten.native_layer_norm(xl, [8], wl, bl, 1e-5)
        layer = aten.native_layer_norm_backward(gl, xl, [8], mean, rstd, wl, bl, [True, True, True])
        _, gmean, grstd = aten.native_group_norm(x, w, b, 2, 6, 16, 3, 1e-5)
        group = aten.native_group_norm_backward(g, x, gmean, grstd, w, 2, 6, 16, 3, [True, True, True])
        _, bmean, binvstd = aten.native_batch_norm(x, w, b, rm.clone(), rv.clone(), True, 0.1, 1e-5)
        batch = aten.native_batch_norm_backward(g, x, w, rm, rv, bmean, binvstd, True, 1e-5, [True, True, True])
        return (*layer, *group, *batch)

    _check(backward, (x, w, b, g, xl, wl, bl, gl, rm, rv), rtol=1e-4, atol=1e-4)


def test_embedding_dense_backward_accumulates_repeated_ids():
    ids = torch.tensor([[1, 3, 3, 0], [3, 7, 1, 0]])
    g = torch.randn(2, 4, 5)

    def backward(g, ids):
        return (aten.embedding_dense_backward(g, ids, 8, -1, False),
                aten.embedding_dense_backward(g, ids, 8, 0, False))  # padding index 0 gets no gradient

    _check(backward, (g, ids))


def test_grouped_mm_fallback_backward_of_transformers_matches_its_loop():
    """A mixture of experts' grouped matmul: 3 experts, rows sorted by expert, one
    expert with no rows, the last rows past every offset."""
    import transformers.integrations.moe  # noqa: F401  (registers transformers::grouped_mm_fallback*)

    generator = torch.Generator().manual_seed(9)
    x, w = torch.randn(7, 5, generator=generator), torch.randn(3, 5, 4, generator=generator)
    g, offs = torch.randn(7, 4, generator=generator), torch.tensor([2, 2, 6])
    _check(lambda x, w, offs, g: torch.ops.transformers.grouped_mm_fallback_backward(x, w, offs, g), (x, w, offs, g))
