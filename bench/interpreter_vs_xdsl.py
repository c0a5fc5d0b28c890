"""rducc's runtime against xDSL's own interpreter, on one small matmul program.

The same product C = A @ B (f32, 16x16 by 16x16): xDSL's interpreter runs
`linalg.matmul` on memrefs (its body once per element, in Python); rducc
runs its placed program of `torch.mm` (a numpy kernel on whole tiles). Both
results are checked against numpy. The ratio shows why rducc has its own
runtime.

Run: python bench/interpreter_vs_xdsl.py [--quick]
"""

from __future__ import annotations

import numpy as np
from common import Section, best_time, standalone

import torch  # noqa: E402
from xdsl.dialects import func  # noqa: E402
from xdsl.dialects.linalg.ops import MatmulOp  # noqa: E402
from xdsl.dialects.builtin import MemRefType, ModuleOp, f32  # noqa: E402
from xdsl.interpreter import Interpreter  # noqa: E402
from xdsl.interpreters.arith import ArithFunctions  # noqa: E402
from xdsl.interpreters.func import FuncFunctions  # noqa: E402
from xdsl.interpreters.linalg import LinalgFunctions  # noqa: E402
from xdsl.interpreters.shaped_array import ShapedArray  # noqa: E402
from xdsl.interpreters.utils.ptr import TypedPtr  # noqa: E402

import rducc  # noqa: E402

SIZE = 16


def xdsl_matmul_module(size: int) -> ModuleOp:
    """func.func @matmul(A, B, C: memref<size x size x f32>) { linalg.matmul ins(A, B) outs(C) }."""
    memref = MemRefType(f32, [size, size])
    function = func.FuncOp("matmul", ((memref, memref, memref), ()))
    a, b, c = function.body.block.args
    function.body.block.add_ops([MatmulOp((a, b), (c,)), func.ReturnOp()])
    return ModuleOp([function])


def shaped(array: np.ndarray) -> ShapedArray:
    return ShapedArray(TypedPtr.new_float32(array.ravel().tolist()), list(array.shape))


class MatMul(torch.nn.Module):
    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return torch.mm(a, b)


def run(quick: bool) -> Section:
    section = Section(f"Interpreters: rducc's runtime vs xDSL's interpreter ({SIZE}x{SIZE} f32 matmul)",
                      f"python bench/interpreter_vs_xdsl.py{' --quick' if quick else ''}")
    generator = np.random.default_rng(0)
    a, b = (generator.standard_normal((SIZE, SIZE)).astype(np.float32) for _ in range(2))
    expected = a @ b

    module = xdsl_matmul_module(SIZE)
    module.verify()
    interpreter = Interpreter(module)
    for functions in (FuncFunctions(), LinalgFunctions(), ArithFunctions()):
        interpreter.register_implementations(functions)

    def xdsl_call() -> np.ndarray:
        out = shaped(np.zeros((SIZE, SIZE), np.float32))
        interpreter.call_op("matmul", (shaped(a), shaped(b), out))
        return np.array(out.data, np.float32).reshape(SIZE, SIZE)

    np.testing.assert_allclose(xdsl_call(), expected, rtol=1e-4, atol=1e-4)
    inputs = (torch.from_numpy(a), torch.from_numpy(b))
    program = rducc.compile(MatMul(), inputs)
    np.testing.assert_allclose(program(*inputs).numpy(), expected, rtol=1e-4, atol=1e-4)

    xdsl_s = best_time(xdsl_call, 1 if quick else 3)
    rducc_s = best_time(lambda: program(*inputs), 20 if quick else 100)
    section.add("xDSL interpreter, linalg.matmul on memrefs", f"{xdsl_s * 1e3:.1f} ms")
    section.add("rducc runtime, placed program of torch.mm", f"{rducc_s * 1e3:.3f} ms")
    section.add("xDSL / rducc", f"{xdsl_s / rducc_s:,.0f}x (rducc faster)")
    return section


if __name__ == "__main__":
    standalone(run, __doc__)
