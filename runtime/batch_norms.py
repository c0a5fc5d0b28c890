"""Inference batch norms a map body spells out, run as torch's one kernel (issue 32).

The frontend writes `_native_batch_norm_legit_no_training` as one map
(`aten_normalization.convert_batch_norm`): per channel `scale = rsqrt(var +
eps) * weight` and `shift = bias - mean * scale`, then `x * scale + shift`
(ResNet's maps add a ReLU after it). Op by op that is two passes over `x`
(a multiply, an add) and its bits are not eager's: ATen's vectorized kernel
computes the same terms but rounds them otherwise (on a 2x3x5x7 input its
bits are `fma(x, scale, fma(-mean, scale, bias))`'s; on ResNet's sizes
neither that nor the plain form gives them), so 10-40% of elements differ in
the last bit.
Eager's batch norm is one pass, `native_batch_norm`; run on the same
per-channel arrays it gives eager's bits (eager's values are the reference).

A part of a map body is such a batch norm when its ops compute, from a body
value `x` (an argument, or a value of the body: a convolution's bias added
before it) and body arguments `mean`, `var` and optional `weight` and `bias`:

- `r = rsqrt(var + eps)` (`eps` a float constant), `scale = r * weight` or `r`;
- `shift = bias - mean * scale` or `-(mean * scale)`;
- the root `x * scale + shift` (products and sums in either order);

`x` has the map's shape `[N, C, ...]` (rank 2 or more) and dtype (f32 or
f64), the other arguments that dtype and shape `[C, 1, ...]` (one rank
less), and no op outside the part reads a value of it but the root's. The
root is one call `_tb.batch_norm(x, mean, var, weight, bias, eps)`
(`ON_ARRAYS`), which writes into `out=` as a ufunc does; the ops after it (a
ReLU) run as before.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from types import SimpleNamespace

import numpy as np
import torch
from xdsl.dialects.builtin import FloatAttr
from xdsl.ir import Block, BlockArgument, Operation, SSAValue

from rducc.runtime.dtypes import F32, F64, element_dtype
from rducc.runtime.elementwise import as_torch


@dataclass(frozen=True)
class BatchNorm:
    """One batch norm a body computes: its arguments (None where absent) and eps."""

    x: SSAValue
    mean: BlockArgument
    var: BlockArgument
    weight: BlockArgument | None
    bias: BlockArgument | None
    eps: float


@dataclass
class BatchNorms:
    """The batch norms of a body: each root op's, and the ops inside them."""

    roots: dict[Operation, BatchNorm] = field(default_factory=dict)
    inside: set[Operation] = field(default_factory=set)


def _owner(value: SSAValue, name: str) -> Operation | None:
    """The op that computes `value`, if it is a `name` op."""
    owner = value.owner
    return owner if isinstance(owner, Operation) and owner.name == name else None


def _other(op: Operation | None, first: SSAValue) -> SSAValue | None:
    """The operand of a two-operand (commutative) op besides `first`, if `first` is one of them."""
    if op is None or len(op.operands) != 2 or first not in op.operands:
        return None
    a, b = op.operands
    return b if a == first else a


def _argument(value: SSAValue) -> BlockArgument | None:
    return value if isinstance(value, BlockArgument) else None


def _scale(value: SSAValue) -> tuple[BlockArgument, BlockArgument | None, float, list[Operation]] | None:
    """`rsqrt(var + eps) [* weight]`: var, weight, eps and the ops."""
    ops: list[Operation] = []
    weight: BlockArgument | None = None
    product = _owner(value, "arith.mulf")
    if product is not None:
        a, b = product.operands
        rsqrt_side, weight = (a, _argument(b)) if _owner(a, "math.rsqrt") else (b, _argument(a))
        if weight is None:
            return None
        ops.append(product)
        value = rsqrt_side
    rsqrt = _owner(value, "math.rsqrt")
    total = _owner(rsqrt.operands[0], "arith.addf") if rsqrt is not None else None
    if rsqrt is None or total is None:
        return None
    a, b = total.operands
    constant, var = (a.owner, _argument(b)) if _owner(a, "arith.constant") else (b.owner, _argument(a))
    if var is None or not isinstance(constant, Operation) or constant.name != "arith.constant" \
            or not isinstance(getattr(constant, "value", None), FloatAttr):
        return None
    return var, weight, float(constant.value.value.data), [*ops, rsqrt, total]  # type: ignore[attr-defined]


def _shift(value: SSAValue, scale: SSAValue) -> tuple[BlockArgument, BlockArgument | None, list[Operation]] | None:
    """`bias - mean * scale` or `-(mean * scale)`: mean, bias and the ops."""
    difference = _owner(value, "arith.subf")
    negation = _owner(value, "arith.negf")
    outer = difference or negation
    if outer is None:
        return None
    bias = _argument(outer.operands[0]) if difference is not None else None
    if difference is not None and bias is None:
        return None
    centre = _owner(outer.operands[-1], "arith.mulf")
    other = _other(centre, scale)
    mean = _argument(other) if other is not None else None
    if centre is None or mean is None:
        return None
    return mean, bias, [outer, centre]


def _at(root: Operation) -> tuple[BatchNorm, list[Operation]] | None:
    """The batch norm whose last op is `root` (an `arith.addf`), and its ops."""
    for product_side, shift_side in (root.operands, reversed(root.operands)):
        product = _owner(product_side, "arith.mulf")
        if product is None:
            continue
        for x, scale in (product.operands, reversed(product.operands)):
            found_scale, found_shift = _scale(scale), _shift(shift_side, scale)
            if found_scale is None or found_shift is None:
                continue
            var, weight, eps, scale_ops = found_scale
            mean, bias, shift_ops = found_shift
            return BatchNorm(x, mean, var, weight, bias, eps), [root, product, *shift_ops, *scale_ops]
    return None


def static_shapes(block: Block, shapes: Sequence[tuple[int, ...]]) -> dict[SSAValue, tuple[int, ...]]:
    """Each body value's shape: its argument's (`shapes`), or its operands' broadcast."""
    found: dict[SSAValue, tuple[int, ...]] = {arg: tuple(shape) for arg, shape in zip(block.args, shapes, strict=True)}
    for op in block.ops:
        if len(op.results) == 1:
            found[op.results[0]] = tuple(np.broadcast_shapes(*(found.get(v, ()) for v in op.operands)))
    return found


def _shapes_fit(norm: BatchNorm, static: dict[SSAValue, tuple[int, ...]], shape: tuple[int, ...],
                dtype: np.dtype) -> bool:
    """`x` of the map's shape `[N, C, ...]`, the others `[C, 1, ...]`, all of the map's f32/f64 dtype."""
    if dtype not in (F32, F64) or len(shape) < 2 or static.get(norm.x) != tuple(shape):
        return False
    channels = (shape[1], *[1] * (len(shape) - 2))
    params = [a for a in (norm.mean, norm.var, norm.weight, norm.bias) if a is not None]
    return all(static[a] == channels for a in params) \
        and all(element_dtype(a.type) == dtype for a in (norm.x, *params))


def _closed(ops: list[Operation], root: Operation) -> bool:
    """No op outside `ops` reads a value of them but the root's (constants are bound, not computed)."""
    members = set(ops)
    return all(use.operation in members for op in ops if op is not root and op.name != "arith.constant"
               for result in op.results for use in result.uses)


def batch_norms(block: Block, shapes: Sequence[tuple[int, ...]], shape: tuple[int, ...], dtype: np.dtype,
                taken: set[Operation]) -> BatchNorms:
    """The batch norms `block` computes (module docstring) on arguments of
    `shapes` into a map of `shape` and `dtype`, none of whose ops is in `taken`."""
    found = BatchNorms()
    static = static_shapes(block, shapes)
    for op in block.ops:
        if op.name != "arith.addf" or element_dtype(op.results[0].type) != dtype:
            continue
        match = _at(op)
        if match is None:
            continue
        norm, ops = match
        if not _shapes_fit(norm, static, shape, dtype) or not _closed(ops, op) or taken & set(ops):
            continue
        found.roots[op] = norm
        found.inside |= set(ops) - {op}
    return found


def _per_channel(array: np.ndarray | None) -> torch.Tensor | None:
    """An optional `[C, 1, ...]` array as the 1-d tensor ATen's kernel reads (a view where it can be)."""
    return None if array is None else as_torch(array.ravel())


_UNSAVED = {dtype: (torch.empty(0, dtype=dtype), torch.empty(0, dtype=dtype))
            for dtype in (torch.float32, torch.float64)}
"""The saved mean and inverse std `native_batch_norm.out` writes at inference: empty, left empty."""


def batch_norm(x: np.ndarray, mean: np.ndarray, var: np.ndarray, weight: np.ndarray | None,
               bias: np.ndarray | None, eps: float, out: np.ndarray | None = None) -> np.ndarray:
    """torch's inference batch norm of `x` (`[N, C, ...]`) with `[C, 1, ...]`
    arrays: eager's kernel on the same values, eager's bits. Into `out` where
    `x` and `out` are both C-contiguous and apart (ATen's kernel takes its
    contiguous path then, as eager's does on `x`; an output of another memory
    order than `x`'s takes another path, with other bits): else torch's own
    result, copied into `out`."""
    w, b = _per_channel(weight), _per_channel(bias)
    m, v = as_torch(mean.ravel()), as_torch(var.ravel())
    if out is not None and x.flags.c_contiguous and out.flags.c_contiguous and out.flags.writeable \
            and not np.may_share_memory(out, x):
        torch.native_batch_norm(as_torch(x), w, b, m, v, False, 0.0, eps,
                                out=(torch.from_numpy(out), *_UNSAVED[m.dtype]))
        return out
    result = torch.native_batch_norm(as_torch(x), w, b, m, v, False, 0.0, eps)[0].numpy()
    if out is None:
        return result
    out[...] = result
    return out


ON_ARRAYS = SimpleNamespace(batch_norm=batch_norm)
"""The kernel as a body calls it (`_tb.batch_norm(x, mean, var, weight, bias, eps, out=None)`)."""

__all__ = ["ON_ARRAYS", "BatchNorm", "BatchNorms", "batch_norm", "batch_norms", "static_shapes"]
