"""Same-process A/B of the runtime's transcendentals and float sums as torch's kernels (issue 27).

A map body's math ops (`math.exp`, `math.tanh`, ...) ran NumPy's ufuncs and
`rdu.reduce sum` NumPy's `add.reduce` (f32 summed in f64); they now run
torch's CPU kernels on the whole arrays (`elementwise.torch_math`,
`kernels._torch_sum`), and a bf16 product rounded to bf16 torch's matmul
(`kernels._torch_matmul`; before: widened to f32, OpenBLAS, rounded), which
give eager's values bit for bit. This times,
at one thread (torch and BLAS), each kernel both ways on the same arrays:
before (the NumPy body / `add.reduce`, built here as the runtime built it)
and after (the runtime's own), best thread CPU time of interleaved calls,
and prints after / before and how many elements each differs from eager's op.

Run: python bench/runtime_math_ab.py [--calls N] [--sizes 4096 262144 ...]
"""

from __future__ import annotations

# ruff: noqa: B023 - every timed lambda is called in the iteration that made it
import argparse
from collections.abc import Callable

import ml_dtypes
import numpy as np
import torch
from common import Section  # noqa: F401 - sets one BLAS thread before numpy loads
from runtime_norm_ab import best_times
from xdsl.dialects import arith
from xdsl.dialects import math as xmath
from xdsl.dialects.builtin import FloatAttr, TensorType, f32
from xdsl.ir import Block, Region

from rducc.dialects.rdu import dataflow as rdu
from rducc.runtime import kernels, map_body

_MATH = {"exp": (xmath.ExpOp, "exp"), "tanh": (xmath.TanhOp, "tanh"), "log": (xmath.LogOp, "log"),
         "sin": (xmath.SinOp, "sin"), "sqrt": (xmath.SqrtOp, "sqrt")}


def _map(make: Callable, size: int) -> rdu.MapOp:
    outer = Block(arg_types=[TensorType(f32, [size])])
    body = Block(arg_types=[f32])
    ops = make(body.args[0])
    body.add_ops([*ops, rdu.YieldOp(ops[-1].results[0])])
    return rdu.MapOp(list(outer.args), TensorType(f32, [size]), Region(body))


def _sigmoid(a):  # noqa: ANN001, ANN202 - an xDSL value
    one = arith.ConstantOp(FloatAttr(1.0, f32))
    neg = arith.NegfOp(a)
    exp = xmath.ExpOp(neg.result)
    add = arith.AddfOp(one.result, exp.result)
    return [one, neg, exp, add, arith.DivfOp(one.result, add.result)]


def _both(op: rdu.MapOp, swaps: dict[str, Callable]) -> tuple[Callable, Callable]:
    """The map compiled with NumPy's ufuncs (before) and as the runtime compiles it now (after)."""
    after = map_body.compile_map(op)
    saved = {name: map_body._EMITTERS[name] for name in swaps}
    sigmoid = map_body._ACTIVATIONS.pop("sigmoid")
    map_body._EMITTERS.update(swaps)
    try:
        before = map_body.compile_map(op)
    finally:
        map_body._EMITTERS.update(saved)
        map_body._ACTIVATIONS["sigmoid"] = sigmoid
    return before, after


def _old_sum(x: np.ndarray, axes: tuple[int, ...]) -> np.ndarray:
    return np.add.reduce(x, axis=axes, dtype=np.float64).astype(np.float32)


def _differ(got: np.ndarray, want: torch.Tensor) -> int:
    return int((torch.from_numpy(np.ascontiguousarray(got)) != want).sum())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=15)
    parser.add_argument("--sizes", type=int, nargs="+", default=[4096, 262144, 4194304])
    args = parser.parse_args()
    torch.set_num_threads(1)
    print("| kernel | elements | before us | after us | after / before | before: elements off eager | after |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for size in args.sizes:
        x = torch.randn(size, generator=torch.Generator().manual_seed(0)) * 4
        for name, (op_class, torch_name) in [*_MATH.items(), ("sigmoid body", (None, "sigmoid"))]:
            source = (x.abs() + 1e-3) if name in ("log", "sqrt") else x
            array = source.numpy()
            make = _sigmoid if op_class is None else (lambda a, op_class=op_class: [op_class(a)])
            swaps = {"math.exp": map_body._float_op("np.exp", 1)} if op_class is None else \
                {f"math.{name}": map_body._float_op(f"np.{name}", 1)}
            before, after = _both(_map(make, size), swaps)
            want = getattr(torch, torch_name)(source)
            out = np.empty(size, np.float32)
            b, a = best_times([lambda: before.into(out, array), lambda: after.into(out, array)], args.calls)
            print(f"| {name} | {size:,} | {b * 1e6:.0f} | {a * 1e6:.0f} | {a / b:.2f}x | "
                  f"{_differ(before(array), want)} | {_differ(after(array), want)} |", flush=True)
        rows = x.reshape(-1, 64).numpy()
        for axes in [(1,), (0,)]:
            want = torch.from_numpy(rows).sum(axes)
            b, a = best_times([lambda axes=axes: _old_sum(rows, axes),
                               lambda axes=axes: kernels.reduce(rows, "sum", axes)], args.calls)
            print(f"| f32 sum over dim {axes[0]} of [{rows.shape[0]:,}, 64] | {size:,} | {b * 1e6:.0f} | "
                  f"{a * 1e6:.0f} | {a / b:.2f}x | {_differ(_old_sum(rows, axes), want)} | "
                  f"{_differ(kernels.reduce(rows, 'sum', axes), want)} |", flush=True)
    matmul_rows(args.calls)


def _old_bf16_matmul(lhs: np.ndarray, rhs: np.ndarray) -> np.ndarray:
    return kernels.saturated(np.matmul(lhs.astype(np.float32), rhs.astype(np.float32)), lhs.dtype).astype(lhs.dtype)


def matmul_rows(calls: int) -> None:
    """bf16 x bf16 -> bf16 products (a linear layer's shapes) both ways."""
    bf16 = np.dtype(ml_dtypes.bfloat16)
    for m, k, n in [(8, 64, 128), (512, 768, 768), (2048, 768, 3072)]:
        generator = torch.Generator().manual_seed(1)
        lhs, rhs = torch.randn(m, k, generator=generator).bfloat16(), torch.randn(k, n, generator=generator).bfloat16()
        a, b = (t.view(torch.int16).numpy().view(bf16) for t in (lhs, rhs))
        want = lhs @ rhs
        before, after = best_times([lambda: _old_bf16_matmul(a, b), lambda: kernels.matmul(a, b)], calls)

        def off(got: np.ndarray) -> int:
            return int((torch.from_numpy(got.view(np.int16)).view(torch.bfloat16) != want).sum())

        print(f"| bf16 matmul [{m}, {k}] x [{k}, {n}] | {m * n:,} | {before * 1e6:.0f} | {after * 1e6:.0f} | "
              f"{after / before:.2f}x | {off(_old_bf16_matmul(a, b))} | {off(kernels.matmul(a, b))} |", flush=True)


if __name__ == "__main__":
    main()
