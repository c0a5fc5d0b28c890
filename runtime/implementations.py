"""The numpy implementation of every executable `rdu` op (and tensor `arith.constant`).

Each `@implements(Op)` function reads the op's attributes once and returns
its kernel, `kernel(context, *arrays)`, which calls a tensor kernel of
`rducc.runtime.kernels` (or the compiled body of an `rdu.map`). The
collectives are in `rducc.runtime.collectives`; ops the engines run
themselves are named at the end of this file (and in the engines).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from xdsl.dialects import arith
from xdsl.dialects.builtin import DenseIntOrFPElementsAttr
from xdsl.ir import Operation

from rducc.dialects.rdu import dataflow as rdu
from rducc.dialects.tier import GlobalOp
from rducc.errors import RduccError
from rducc.runtime import collectives as _collectives  # noqa: F401 - registers the collectives
from rducc.runtime import host_calls as _host_calls  # noqa: F401 - registers rdu.host_call
from rducc.runtime import kernels
from rducc.runtime.dtypes import compute_dtype, dense_to_array, tensor_signature
from rducc.runtime.elementwise import assign
from rducc.runtime.map_body import compile_map
from rducc.runtime.registry import Kernel, describe_op, handled_structurally, implements, writing_into


def _ints(attr: Any) -> tuple[int, ...]:
    return tuple(attr.get_values())


def _constant(value: np.ndarray) -> Kernel:
    """A kernel returning one prepared, read-only array."""
    value.flags.writeable = False
    return lambda context: value


@implements(rdu.MapOp)
def _map(op: Operation) -> Kernel:
    run_map = compile_map(op)
    kernel = writing_into(lambda context, *inputs: run_map(*inputs), run_map.kernel_into)  # type: ignore[attr-defined]
    kernel.in_place = run_map.in_place  # type: ignore[attr-defined]
    return kernel


@implements(rdu.MatmulOp)
def _matmul(op: Operation) -> Kernel:
    assert isinstance(op, rdu.MatmulOp)
    dtype = tensor_signature(op.result.type)[1]
    transpose_rhs = op.transpose_rhs is not None
    return writing_into(lambda context, lhs, rhs: kernels.matmul(lhs, rhs, dtype, transpose_rhs),
                        lambda context, out, lhs, rhs: kernels.matmul(lhs, rhs, dtype, transpose_rhs, out))


@implements(rdu.GroupedMatmulOp)
def _grouped_matmul(op: Operation) -> Kernel:
    assert isinstance(op, rdu.GroupedMatmulOp)
    dtype = tensor_signature(op.result.type)[1]
    transpose_rhs = op.transpose_rhs is not None
    return writing_into(
        lambda context, lhs, rhs, offsets: kernels.grouped_matmul(lhs, rhs, offsets, dtype, transpose_rhs),
        lambda context, out, lhs, rhs, offsets: kernels.grouped_matmul(lhs, rhs, offsets, dtype, transpose_rhs, out))


@implements(rdu.ReduceOp)
def _reduce(op: Operation) -> Kernel:
    assert isinstance(op, rdu.ReduceOp)
    kind, dims, keepdim = op.kind.data.value, _ints(op.dims), op.keepdim is not None

    def into(context: Any, out: np.ndarray, x: np.ndarray) -> None:
        result = kernels.reduce(x, kind, dims, keepdim, out)
        if result is not out:
            out[...] = result

    return writing_into(lambda context, x: kernels.reduce(x, kind, dims, keepdim), into)


@implements(rdu.ScanOp)
def _scan(op: Operation) -> Kernel:
    assert isinstance(op, rdu.ScanOp)
    kind, dim = op.kind.data.value, op.dim.value.data
    return lambda context, x: kernels.scan(x, kind, dim)


@implements(rdu.ConvOp)
def _conv(op: Operation) -> Kernel:
    assert isinstance(op, rdu.ConvOp)
    stride, padding, dilation = _ints(op.stride), _ints(op.padding), _ints(op.dilation)
    groups, dtype = op.groups.value.data, tensor_signature(op.result.type)[1]
    if op.transposed is not None:
        return _conv_transpose(op, dtype)
    x_shape, w_shape = tensor_signature(op.input.type)[0], tensor_signature(op.weight.type)[0]
    plan = kernels.conv_plan(tuple(x_shape), tuple(w_shape), stride, padding, dilation, groups,
                             compute_dtype(dtype))  # the path, once, from the op's shapes
    return writing_into(
        lambda context, x, weight, bias=None: kernels.conv(x, weight, stride, padding, dilation, groups, dtype,
                                                           plan=plan, bias=bias),
        lambda context, out, x, weight, bias=None: kernels.conv(x, weight, stride, padding, dilation, groups, dtype,
                                                                out, plan, bias))


def _conv_transpose(op: rdu.ConvOp, dtype: np.dtype) -> Kernel:
    """A transposed convolution's kernel: ATen's, with its bias (`kernels.conv_transpose`)."""
    stride, padding, dilation, extra, groups = op.geometry()
    geometry = kernels.ConvGeometry(stride, padding, dilation, True, extra, groups)
    return writing_into(
        lambda context, x, weight, bias=None: kernels.conv_transpose(x, weight, bias, geometry, dtype),
        lambda context, out, x, weight, bias=None: kernels.conv_transpose(x, weight, bias, geometry, dtype, out))


@implements(rdu.PoolOp)
def _pool(op: Operation) -> Kernel:
    assert isinstance(op, rdu.PoolOp)
    kind, window, stride = op.kind.data.value, _ints(op.window), _ints(op.stride)
    padding, dilation, ceil_mode = _ints(op.padding), _ints(op.dilation), op.ceil_mode is not None

    def into(context: Any, out: np.ndarray, x: np.ndarray) -> None:
        out[...] = kernels.pool(x, kind, window, stride, padding, dilation, ceil_mode)

    return writing_into(lambda context, x: kernels.pool(x, kind, window, stride, padding, dilation, ceil_mode), into)


def _into_reshaped(context: Any, out: np.ndarray, x: np.ndarray) -> None:
    """`out` holds x's elements in row-major order (a reshape written into memory)."""
    assign(out.reshape(x.shape), x)  # out is contiguous: its reshape is a view


def _into_assigned(context: Any, out: np.ndarray, x: np.ndarray) -> None:
    """`out` holds x broadcast to its shape (the assignment broadcasts)."""
    assign(out, x)


@implements(rdu.ReshapeOp)
def _reshape(op: Operation) -> Kernel:
    shape = tensor_signature(op.results[0].type)[0]
    return writing_into(lambda context, x: kernels.reshape(x, shape), _into_reshaped)


@implements(rdu.BroadcastOp)
def _broadcast(op: Operation) -> Kernel:
    shape = tensor_signature(op.results[0].type)[0]
    return writing_into(lambda context, x: kernels.broadcast(x, shape), _into_assigned)


@implements(rdu.TransposeOp)
def _transpose(op: Operation) -> Kernel:
    assert isinstance(op, rdu.TransposeOp)
    perm = _ints(op.perm)

    def into(context: Any, out: np.ndarray, x: np.ndarray) -> None:
        assign(out, x.transpose(perm))

    return writing_into(lambda context, x: kernels.transpose(x, perm), into)


@implements(rdu.SliceOp)
def _slice(op: Operation) -> Kernel:
    assert isinstance(op, rdu.SliceOp)
    offsets, strides = _ints(op.offsets), _ints(op.strides)
    sizes = tensor_signature(op.result.type)[0]
    index = kernels.slice_index(offsets, strides, sizes)

    def into(context: Any, out: np.ndarray, x: np.ndarray) -> None:
        assign(out, x[index])

    return writing_into(lambda context, x: kernels.slice_(x, offsets, strides, sizes), into)


@implements(rdu.ConcatOp)
def _concat(op: Operation) -> Kernel:
    assert isinstance(op, rdu.ConcatOp)
    dim = op.dim.value.data

    def into(context: Any, out: np.ndarray, *inputs: np.ndarray) -> None:
        np.concatenate(inputs, axis=dim, out=out)  # no operand overlaps out

    return writing_into(lambda context, *inputs: kernels.concat(inputs, dim), into)


@implements(rdu.GatherOp)
def _gather(op: Operation) -> Kernel:
    assert isinstance(op, rdu.GatherOp)
    dim, wraps = op.dim.value.data, op.wraps is not None
    return lambda context, source, *indices: kernels.gather(source, indices, dim, wraps)


@implements(rdu.ScatterOp)
def _scatter(op: Operation) -> Kernel:
    assert isinstance(op, rdu.ScatterOp)
    dim, reduce = op.dim.value.data, op.reduce.data if op.reduce is not None else None
    return lambda context, x, index, source: kernels.scatter(x, index, source, dim, reduce)


@implements(rdu.IotaOp)
def _iota(op: Operation) -> Kernel:
    assert isinstance(op, rdu.IotaOp)
    shape, dtype = tensor_signature(op.result.type)
    start, step = op.start.value.data, op.step.value.data
    return _constant(kernels.iota(shape[0], start, step, dtype))


@implements(rdu.ArgsortOp)
def _argsort(op: Operation) -> Kernel:
    assert isinstance(op, rdu.ArgsortOp)
    dim, descending = op.dim.value.data, op.descending is not None
    return lambda context, x: kernels.argsort(x, dim, descending)


def _affine(op: rdu.LayerNormOp | rdu.LayerNormGradOp, params: tuple[Any, ...]) -> tuple[Any, Any]:
    """(weight, bias) of a layer norm op's trailing operands, None where the layer has none."""
    rest = iter(params)
    weight = next(rest) if op.with_weight is not None else None
    return weight, next(rest) if op.with_bias is not None else None


@implements(rdu.LayerNormOp)
def _layer_norm(op: Operation) -> Kernel:
    assert isinstance(op, rdu.LayerNormOp)
    dims, eps, part = op.normalized.value.data, op.eps.value.data, op.part.data
    return lambda context, x, *params: kernels.layer_norm_part(x, dims, *_affine(op, params), eps, part)


@implements(rdu.LayerNormGradOp)
def _layer_norm_grad(op: Operation) -> Kernel:
    assert isinstance(op, rdu.LayerNormGradOp)
    dims, of = op.normalized.value.data, op.of.data
    return lambda context, grad, x, mean, rstd, *params: kernels.layer_norm_gradient(
        grad, x, mean, rstd, dims, *_affine(op, params), of)


@implements(rdu.ConvGradOp)
def _conv_grad(op: Operation) -> Kernel:
    assert isinstance(op, rdu.ConvGradOp)
    geometry = kernels.ConvGeometry(op.window("stride"), op.window("padding"), op.window("dilation"),
                                    op.transposed is not None, op.window("output_padding"), op.groups.value.data)
    of, dtype = op.of.data, tensor_signature(op.result.type)[1]
    return lambda context, grad, x, weight: kernels.conv_gradient(grad, x, weight, geometry, of, dtype)


@implements(rdu.RandomOp)
def _random(op: Operation) -> Kernel:
    """Draws from the op's seed and the call's run number: the same on every rank."""
    assert isinstance(op, rdu.RandomOp)
    shape, dtype = tensor_signature(op.result.type)
    distribution, seed = op.distribution.data, op.seed.value.data
    return lambda context: kernels.random(shape, dtype, distribution, seed, context.run)


@implements(arith.ConstantOp)
def _tensor_constant(op: Operation) -> Kernel:
    assert isinstance(op, arith.ConstantOp)
    if not isinstance(op.value, DenseIntOrFPElementsAttr):
        raise RduccError(f"{describe_op(op)}: only tensor constants can appear outside map bodies")
    return _constant(dense_to_array(op.value))


handled_structurally(rdu.YieldOp, "the terminator of map, kernel and tier.compute bodies")
handled_structurally(rdu.RemFOp, "a scalar op of map bodies: compiled by rducc.runtime.map_body")
handled_structurally(rdu.PointwiseCallOp, "a scalar op of map bodies: torch's kernel, called by rducc.runtime.map_body")
handled_structurally(GlobalOp, "a declaration: its value is a weight the runner binds by name")


__all__: list[str] = []


@implements(rdu.CheckOp)
def _check(op: Operation) -> Kernel:
    """The input, once the condition holds everywhere; else the op's message as the error."""
    assert isinstance(op, rdu.CheckOp)
    message = op.message.data  # it names the torch op and its source line

    def check(context: Any, value: np.ndarray, condition: np.ndarray) -> np.ndarray:
        if not bool(np.all(condition)):
            raise RduccError(message)
        return value.copy()

    return check
