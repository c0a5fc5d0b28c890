"""A product and the bias add that is its only use run as one `torch.addmm`
(issue 32, `rducc.runtime.epilogues`), where the placement proves the step
reads the product's operands before anything overwrites them.

Hand-placed kernels: one whose bias add may take the product's step into its
own bytes, one whose bias add sits on the bytes of the product's input (the
allocator reuses bytes once a value dies), where the fold runs at the product
instead. Forcing that one to run at the add (writing over the input it still
reads) does not give eager's result: the test sees such a fold.
"""

from __future__ import annotations

import numpy as np
import pytest
from test_interpreter import parse

from rducc.dialects.tier import ComputeOp
from rducc.runtime import epilogues, fused_norms, interpreter
from rducc.runtime.interpreter import PlacedProgram

_X, _W, _B, _H = "tensor<2x8xf32>", "tensor<4x8xf32>", "tensor<4xf32>", "tensor<2x4xf32>"


def _program(input_offset: int, add_offset: int) -> str:
    """x (copied to a body value at `input_offset`) @ w.T + b at `add_offset`, plus one."""
    return f"""
builtin.module {{
  func.func @forward(%xh: !tier.buffer<hbm, 2x8xf32> {{rdu.input = "x"}}, %wh: !tier.buffer<hbm, 4x8xf32> {{rdu.input = "w"}},
                     %bh: !tier.buffer<hbm, 4xf32> {{rdu.input = "b"}}) -> !tier.buffer<hbm, 2x4xf32>
      attributes {{tier.sram_capacity = 4096 : i64}} {{
    %xs = tier.alloc offset 1024 : !tier.buffer<sram, 2x8xf32>
    tier.dma %xh -> %xs : !tier.buffer<hbm, 2x8xf32> -> !tier.buffer<sram, 2x8xf32>
    %ws = tier.alloc offset 1536 : !tier.buffer<sram, 4x8xf32>
    tier.dma %wh -> %ws : !tier.buffer<hbm, 4x8xf32> -> !tier.buffer<sram, 4x8xf32>
    %bs = tier.alloc offset 2048 : !tier.buffer<sram, 4xf32>
    tier.dma %bh -> %bs : !tier.buffer<hbm, 4xf32> -> !tier.buffer<sram, 4xf32>
    %os = tier.alloc offset 2560 : !tier.buffer<sram, 2x4xf32>
    tier.compute "k0" ins(%xs, %ws, %bs : !tier.buffer<sram, 2x8xf32>, !tier.buffer<sram, 4x8xf32>,
                          !tier.buffer<sram, 4xf32>) outs(%os : !tier.buffer<sram, 2x4xf32>) {{
    ^bb0(%x: {_X}, %w: {_W}, %b: {_B}):
      %x2 = rdu.map %x {{tier.offset = {input_offset} : i64}} : ({_X}) -> {_X} {{
      ^bb0(%a0: f32):
        %k = arith.constant 1.0 : f32
        %r = arith.mulf %a0, %k : f32
        rdu.yield %r : f32
      }}
      %h = rdu.matmul %x2, %w transpose_rhs {{tier.offset = 256 : i64}} : {_X}, {_W} -> {_H}
      %y = rdu.map %b, %h {{tier.offset = {add_offset} : i64}} : ({_B}, {_H}) -> {_H} {{
      ^bb0(%a0: f32, %a1: f32):
        %r = arith.addf %a1, %a0 : f32
        rdu.yield %r : f32
      }}
      %g = rdu.map %y {{tier.offset = 512 : i64}} : ({_H}) -> {_H} {{
      ^bb0(%a0: f32):
        %k = arith.constant 1.0 : f32
        %r = arith.addf %a0, %k : f32
        rdu.yield %r : f32
      }}
      rdu.yield %g : {_H}
    }}
    %o = tier.alloc : !tier.buffer<hbm, 2x4xf32>
    tier.dma %os -> %o : !tier.buffer<sram, 2x4xf32> -> !tier.buffer<hbm, 2x4xf32>
    func.return %o : !tier.buffer<hbm, 2x4xf32>
  }}
}}
"""


RNG = np.random.default_rng(0)
X, W, B = (RNG.standard_normal(s).astype(np.float32) for s in ((2, 8), (4, 8), (4,)))
EXPECTED = X @ W.T + B + 1


def _folds(module) -> epilogues.BiasFolds:
    return epilogues.BiasFolds(next(op for op in module.walk() if isinstance(op, ComputeOp)))


def test_the_fold_runs_at_the_add_where_its_bytes_are_free() -> None:
    module = parse(_program(0, 384))
    folds = _folds(module)
    assert len(folds.at_add) == 1 and not folds.at_product
    np.testing.assert_allclose(PlacedProgram(module).run([X, W, B], {})[0], EXPECTED, rtol=1e-6, atol=1e-6)


def test_the_fold_runs_at_the_product_where_the_add_sits_on_its_input() -> None:
    module = parse(_program(0, 0))
    folds = _folds(module)
    assert not folds.at_add and len(folds.at_product) == 1
    np.testing.assert_allclose(PlacedProgram(module).run([X, W, B], {})[0], EXPECTED, rtol=1e-6, atol=1e-6)


def test_a_fold_forced_over_its_operands_bytes_is_not_eagers(monkeypatch: pytest.MonkeyPatch) -> None:
    """What the rule prevents: the GEMM writing the input it reads."""
    module = parse(_program(0, 0))

    class AtTheAdd(epilogues.BiasFolds):
        def __init__(self, compute: ComputeOp) -> None:
            super().__init__(compute)
            self.at_add.update({add: matmul for matmul, add in self.at_product.items()})
            self.at_product = {}

    monkeypatch.setattr(interpreter, "BiasFolds", AtTheAdd)
    try:
        result = PlacedProgram(module).run([X, W, B], {})[0]
    except RuntimeError:  # torch refuses an output overlapping an input
        return
    assert not np.allclose(result, EXPECTED, rtol=1e-4, atol=1e-4)


_S = "tensor<2x1xf32>"


def _softmax_of_a_folded_add(overwrite_offset: int) -> str:
    """softmax(x @ w.T + b) written as e / sum(e) (the add folded at its product:
    it sits on the input's bytes), and `%t` (b + 1) at `overwrite_offset`,
    computed after the exp map, the softmax input's last reader in program order;
    at 256 it lands on the product's bytes, where the add's value lives."""
    return f"""
builtin.module {{
  func.func @forward(%xh: !tier.buffer<hbm, 2x8xf32> {{rdu.input = "x"}},
                     %wh: !tier.buffer<hbm, 4x8xf32> {{rdu.input = "w"}},
                     %bh: !tier.buffer<hbm, 4xf32> {{rdu.input = "b"}}) -> !tier.buffer<hbm, 2x4xf32>
      attributes {{tier.sram_capacity = 4096 : i64}} {{
    %xs = tier.alloc offset 1024 : !tier.buffer<sram, 2x8xf32>
    tier.dma %xh -> %xs : !tier.buffer<hbm, 2x8xf32> -> !tier.buffer<sram, 2x8xf32>
    %ws = tier.alloc offset 1536 : !tier.buffer<sram, 4x8xf32>
    tier.dma %wh -> %ws : !tier.buffer<hbm, 4x8xf32> -> !tier.buffer<sram, 4x8xf32>
    %bs = tier.alloc offset 2048 : !tier.buffer<sram, 4xf32>
    tier.dma %bh -> %bs : !tier.buffer<hbm, 4xf32> -> !tier.buffer<sram, 4xf32>
    %os = tier.alloc offset 2560 : !tier.buffer<sram, 2x4xf32>
    tier.compute "k0" ins(%xs, %ws, %bs : !tier.buffer<sram, 2x8xf32>, !tier.buffer<sram, 4x8xf32>,
                          !tier.buffer<sram, 4xf32>) outs(%os : !tier.buffer<sram, 2x4xf32>) {{
    ^bb0(%x: {_X}, %w: {_W}, %b: {_B}):
      %x2 = rdu.map %x {{tier.offset = 0 : i64}} : ({_X}) -> {_X} {{
      ^bb0(%a0: f32):
        %k = arith.constant 1.0 : f32
        %r = arith.mulf %a0, %k : f32
        rdu.yield %r : f32
      }}
      %h = rdu.matmul %x2, %w transpose_rhs {{tier.offset = 256 : i64}} : {_X}, {_W} -> {_H}
      %y = rdu.map %b, %h {{tier.offset = 0 : i64}} : ({_B}, {_H}) -> {_H} {{
      ^bb0(%a0: f32, %a1: f32):
        %r = arith.addf %a1, %a0 : f32
        rdu.yield %r : f32
      }}
      %m = rdu.reduce max %y dims [1] keepdim {{tier.offset = 64 : i64}} : {_H} -> {_S}
      %e = rdu.map %y, %m {{tier.offset = 128 : i64}} : ({_H}, {_S}) -> {_H} {{
      ^bb0(%a0: f32, %a1: f32):
        %d = arith.subf %a0, %a1 : f32
        %r = math.exp %d : f32
        rdu.yield %r : f32
      }}
      %t = rdu.map %b {{tier.offset = {overwrite_offset} : i64}} : ({_B}) -> {_B} {{
      ^bb0(%a0: f32):
        %k = arith.constant 1.0 : f32
        %r = arith.addf %a0, %k : f32
        rdu.yield %r : f32
      }}
      %s = rdu.reduce sum %e dims [1] keepdim {{tier.offset = 96 : i64}} : {_H} -> {_S}
      %p = rdu.map %e, %s {{tier.offset = 320 : i64}} : ({_H}, {_S}) -> {_H} {{
      ^bb0(%a0: f32, %a1: f32):
        %r = arith.divf %a0, %a1 : f32
        rdu.yield %r : f32
      }}
      %g = rdu.map %p, %t : ({_H}, {_B}) -> {_H} {{
      ^bb0(%a0: f32, %a1: f32):
        %r = arith.addf %a0, %a1 : f32
        rdu.yield %r : f32
      }}
      rdu.yield %g : {_H}
    }}
    %o = tier.alloc : !tier.buffer<hbm, 2x4xf32>
    tier.dma %os -> %o : !tier.buffer<sram, 2x4xf32> -> !tier.buffer<hbm, 2x4xf32>
    func.return %o : !tier.buffer<hbm, 2x4xf32>
  }}
}}
"""


@pytest.mark.parametrize("overwrite_offset", [256, 512])
def test_a_norm_chain_reads_a_folded_add_where_its_product_holds_it(overwrite_offset: int) -> None:
    """The fold at the product keeps the add's value in the product's bytes up
    to the add's last reader in program order (the exp map); the fused softmax
    reads it later, at its last map: `NormChains` checks those bytes up to
    there (written over at 256, the chain runs unfused; at 512 it runs fused)."""
    module = parse(_softmax_of_a_folded_add(overwrite_offset))
    compute = next(op for op in module.walk() if isinstance(op, ComputeOp))
    folds = epilogues.BiasFolds(compute)
    assert len(folds.at_product) == 1
    chains = fused_norms.NormChains(compute, folds)
    assert len(chains.at_last) == (overwrite_offset != 256)
    y = X @ W.T + B
    softmax = np.exp(y - y.max(1, keepdims=True))
    expected = softmax / softmax.sum(1, keepdims=True) + B + 1
    np.testing.assert_allclose(PlacedProgram(module).run([X, W, B], {})[0], expected, rtol=1e-5, atol=1e-6)

