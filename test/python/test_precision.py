"""The element type a contraction computes in (`rducc.dialects.precision`): a float32
matmul of values widened from bf16 is priced at the bf16 peak, through views and
across a kernel boundary; one operand truly float32 keeps it at the float32 peak."""

from __future__ import annotations

import pytest
from xdsl.dialects.builtin import BFloat16Type, Float32Type, ModuleOp

from rducc.dialects.precision import compute_element
from rducc.dialects.rdu.dataflow import MatmulOp
from rducc.model.cost_model import estimate
from rducc.model.kernel_timing import peak_seconds
from test_mapping import SN40L, parse_module

M = K = N = 512


def _widen(name: str, shape: str) -> str:
    """A map that widens `%name` (bf16) to float32: `%name_f`."""
    return f"""%{name}_f = rdu.map %{name} : (tensor<{shape}xbf16>) -> tensor<{shape}xf32> {{
      ^bb0(%s: bf16):
        %e = arith.extf %s : bf16 to f32
        rdu.yield %e : f32
      }}"""


def _graph(wide_rhs: bool) -> str:
    """Tensor level: x (bf16, widened) @ w^T, w widened from bf16 (`wide_rhs`) or a float32 input."""
    w_type = "bf16" if wide_rhs else "f32"
    rhs = _widen("w", f"{N}x{K}") if wide_rhs else f"%w_f = rdu.reshape %w : tensor<{N}x{K}xf32> -> tensor<{N}x{K}xf32>"
    return f"""
builtin.module {{
  func.func @forward(%x: tensor<{M}x{K}xbf16>, %w: tensor<{N}x{K}x{w_type}>) -> tensor<{M}x{N}xf32> {{
      {_widen("x", f"{M}x{K}")}
      {rhs}
      %wt = rdu.transpose %w_f perm [1, 0] : tensor<{N}x{K}xf32> -> tensor<{K}x{N}xf32>
      %y = rdu.matmul %x_f, %wt : tensor<{M}x{K}xf32>, tensor<{K}x{N}xf32> -> tensor<{M}x{N}xf32>
      func.return %y : tensor<{M}x{N}xf32>
  }}
}}
"""


def _kernels(wide_rhs: bool) -> str:
    """Lowered: kernel k0 widens x (and w when `wide_rhs`) into SRAM buffers; k1 multiplies them."""
    x, w, y = f"{M}x{K}", f"{K}x{N}", f"{M}x{N}xf32"
    w_in = "bf16" if wide_rhs else "f32"
    widen_w = _widen("b", w) if wide_rhs else f"%b_f = rdu.reshape %b : tensor<{w}xf32> -> tensor<{w}xf32>"
    return f"""
builtin.module attributes {{rdu.level = #rdu<level memory>}} {{
  func.func @forward(%x: !tier.buffer<sram, {x}xbf16> {{rdu.input = "x"}},
                     %w: !tier.buffer<sram, {w}x{w_in}> {{rdu.input = "w"}}) -> !tier.buffer<sram, {y}> {{
    %xf = tier.alloc : !tier.buffer<sram, {x}xf32>
    %wf = tier.alloc : !tier.buffer<sram, {w}xf32>
    %ys = tier.alloc : !tier.buffer<sram, {y}>
    tier.compute "k0" ins(%x, %w : !tier.buffer<sram, {x}xbf16>, !tier.buffer<sram, {w}x{w_in}>)
        outs(%xf, %wf : !tier.buffer<sram, {x}xf32>, !tier.buffer<sram, {w}xf32>) {{
    ^bb0(%a: tensor<{x}xbf16>, %b: tensor<{w}x{w_in}>):
      {_widen("a", x)}
      {widen_w}
      rdu.yield %a_f, %b_f : tensor<{x}xf32>, tensor<{w}xf32>
    }}
    tier.compute "k1" ins(%xf, %wf : !tier.buffer<sram, {x}xf32>, !tier.buffer<sram, {w}xf32>)
        outs(%ys : !tier.buffer<sram, {y}>) {{
    ^bb0(%a: tensor<{x}xf32>, %b: tensor<{w}xf32>):
      %c = rdu.matmul %a, %b : tensor<{x}xf32>, tensor<{w}xf32> -> tensor<{y}>
      rdu.yield %c : tensor<{y}>
    }}
    func.return %ys : !tier.buffer<sram, {y}>
  }}
}}
"""


def _matmul(module: ModuleOp) -> MatmulOp:
    return next(op for op in module.walk() if isinstance(op, MatmulOp))


@pytest.mark.parametrize("wide_rhs", [True, False])
def test_a_matmul_of_widened_bf16_computes_in_bf16(wide_rhs: bool) -> None:
    """Both operands widened (one through a transpose): bf16, at the bf16 peak; the
    weight a float32 input: float32, at the float32 peak."""
    matmul = _matmul(parse_module(_graph(wide_rhs)))
    peak = SN40L.peak_flops_bf16 if wide_rhs else SN40L.peak_flops_f32
    assert isinstance(compute_element(matmul), BFloat16Type if wide_rhs else Float32Type)
    assert peak_seconds(matmul, SN40L) == pytest.approx(2 * M * N * K / peak)


@pytest.mark.parametrize("wide_rhs", [True, False])
def test_a_kernel_argument_widened_by_another_kernel_is_priced_as_bf16(wide_rhs: bool) -> None:
    """k1's operands are buffers k0 wrote from widened bf16: k1 computes at the bf16
    peak; with the weight a float32 input, at the float32 peak."""
    module = parse_module(_kernels(wide_rhs))
    assert isinstance(compute_element(_matmul(module)), BFloat16Type if wide_rhs else Float32Type)
    k1 = next(k for k in estimate(module, SN40L).kernels if k.name == "k1")
    peak = SN40L.peak_flops_bf16 if wide_rhs else SN40L.peak_flops_f32
    assert k1.compute_s == pytest.approx(k1.flops / (peak * SN40L.compute_efficiency))


def _across_calls(wide: bool) -> str:
    """@widen returns x widened from bf16 (or x times itself, float32 math, when not
    `wide`); @forward passes it to @product, whose matmul reads it as an argument."""
    t16, t32 = f"tensor<{M}x{K}xbf16>", f"tensor<{M}x{K}xf32>"
    body = _widen("x", f"{M}x{K}") if wide else f"""%w = rdu.map %x : ({t16}) -> {t32} {{
      ^bb0(%s: bf16):
        %e = arith.extf %s : bf16 to f32
        %p = arith.mulf %e, %e : f32
        rdu.yield %p : f32
      }}
      %x_f = rdu.reshape %w : {t32} -> {t32}"""
    return f"""
builtin.module {{
  func.func private @widen(%x: {t16}) -> {t32} {{
      {body}
      func.return %x_f : {t32}
  }}
  func.func private @product(%a: {t32}) -> tensor<{M}x{M}xf32> {{
      %y = rdu.matmul %a, %a transpose_rhs : {t32}, {t32} -> tensor<{M}x{M}xf32>
      func.return %y : tensor<{M}x{M}xf32>
  }}
  func.func @forward(%x: {t16}) -> tensor<{M}x{M}xf32> {{
      %w = func.call @widen(%x) : ({t16}) -> {t32}
      %y = func.call @product(%w) : ({t32}) -> tensor<{M}x{M}xf32>
      func.return %y : tensor<{M}x{M}xf32>
  }}
}}
"""


@pytest.mark.parametrize("wide", [True, False])
def test_a_widened_value_is_followed_across_calls(wide: bool) -> None:
    """A value one function widens and returns, another takes as its argument: bf16;
    squared in float32 on the way, float32."""
    matmul = _matmul(parse_module(_across_calls(wide)))
    assert isinstance(compute_element(matmul), BFloat16Type if wide else Float32Type)
