"""Convolution and pooling: `rdu.conv` and `rdu.pool` where they fit, window
gathers where they do not.

- A 16-bit convolution is one `rdu.conv`, bias and transposed form included
  (ATen's kernel at run time: eager autocast's bits).
- A wider (f32, f64) one is one `rdu.conv` too, transposed form included
  (ATen's kernel: eager's bits), its bias an `rdu.map` after it. Before, a
  transposed one was a direct convolution of the input spread with zeros by
  a weight computed from the parameter (swapped and flipped), which tensor
  parallelism could not split by the parameter's channels.
- Pooling that `rdu.pool` cannot express (max pooling whose indices are used,
  average pooling with ceil_mode, adaptive pooling whose output size does not
  divide the input) gathers each output's window from the flattened spatial
  plane: an `rdu.gather` by an i64 `[*out, K]` index of window slots built
  from `rdu.iota` ramps, with a validity mask for slots outside the input (or
  past the end of an adaptive window); then a reduction over the slots.
- A 16-bit `convolution_backward` (a bf16 training step's) is one
  `rdu.conv_grad` per gradient read, torch's own kernel at run time (its bits
  depend on the CPU: `rducc.dialects.rdu.conv_grad`); other types are
  decomposed into convolutions (`rducc.frontend.aten_backward`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from math import prod
from typing import Any

import torch
from xdsl.dialects.builtin import TensorType, i1, i64
from xdsl.ir import Attribute, SSAValue

from rducc.dialects.rdu.conv_grad import CONV_GRADIENTS, ConvGradOp
from rducc.dialects.rdu.dataflow import ConvOp, GatherOp, PoolKind, PoolOp, ReduceKind
from rducc.dialects.shapes import is_float
from rducc.frontend.aten_build import along, cast, ramp, reduce, reshape
from rducc.frontend.aten_common import element_of, fake_type, result_type, shape_of, tensor_of, used_outputs
from rducc.frontend.converter_api import GraphImporter, converts, fake_value, node_arguments, positional
from rducc.frontend.scalar import ScalarBuilder, opmath_type


def _per_dim(values: Any, spatial: int, default: int) -> list[int]:
    if values is None or (isinstance(values, Sequence) and len(values) == 0):
        return [default] * spatial
    if isinstance(values, int):
        return [values] * spatial
    values = list(values)
    return values * spatial if len(values) == 1 else values


# --------------------------------------------------------------------------
# Convolution
# --------------------------------------------------------------------------


@converts("aten.convolution.default")
def convert_convolution(g: GraphImporter, node: torch.fx.Node) -> SSAValue:
    """One `rdu.conv`. A result narrower than its opmath type (bf16, f16) is
    ATen's kernel's: the bias is the op's operand (the kernel adds it to the
    f32 sums before their one rounding; an add after the rounded convolution
    would round twice). A wider result (f32, f64) has the bias added after
    the convolution by an `rdu.map` (no rounding between them; the runtime
    folds the pair into one step where it can, `rducc.runtime.epilogues`).
    Either way a transposed convolution is the op's transposed form (its
    weight as the parameter is, so tp splits it by the parameter's channels)."""
    args = node_arguments(node)
    value, weight = g.value(args["input"]), g.value(args["weight"])
    spatial = len(shape_of(value)) - 2
    out = result_type(node)
    stride = _per_dim(args["stride"], spatial, 1)
    padding = _per_dim(args["padding"], spatial, 0)
    dilation = _per_dim(args["dilation"], spatial, 1)
    groups = args["groups"]
    bias = None if args["bias"] is None else g.value(args["bias"])
    extra = _per_dim(args["output_padding"], spatial, 0) if args["transposed"] else None
    if opmath_type(out.element_type) != out.element_type:
        bias = None if bias is None else cast(g, bias, element_of(value))
        return g.emit(ConvOp(value, weight, stride, padding, dilation, groups, out, bias, extra))
    conv = g.emit(ConvOp(value, weight, stride, padding, dilation, groups, out, output_padding=extra))
    if bias is None:
        return conv
    channels = reshape(g, bias, [out.get_shape()[1]] + [1] * spatial)
    return g.map([conv, channels], out, lambda b, xs: b.add(xs[0], b.cast(xs[1], out.element_type)))  # type: ignore[arg-type]


@converts("aten.convolution_backward.default")
def convert_convolution_backward(g: GraphImporter, node: torch.fx.Node) -> tuple[SSAValue | None, ...]:
    """(input, weight, bias gradients), each one `rdu.conv_grad`: torch's
    kernel, as eager's backward runs it; a result not asked for (the output
    mask) or not read is None. Reached by the 16-bit ones, which
    `aten_backward.convolution_backward` leaves whole."""
    args = node_arguments(node)
    grad, value, weight = (g.value(args[k]) for k in ("grad_output", "input", "weight"))
    spatial = len(shape_of(value)) - 2
    stride, padding, dilation, extra = (_per_dim(args[k], spatial, default) for k, default in
                                        (("stride", 1), ("padding", 0), ("dilation", 1), ("output_padding", 0)))
    used, fakes = used_outputs(node), fake_value(node)
    return tuple(
        g.emit(ConvGradOp(of, grad, value, weight, stride, padding, dilation, extra, args["groups"],
                          bool(args["transposed"]), fake_type(fakes[index])))
        if index in used and args["output_mask"][index] else None
        for index, of in enumerate(CONV_GRADIENTS)
    )


# --------------------------------------------------------------------------
# Pooling windows gathered by index
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class _Axis:
    """One spatial dim of a pooling: which input row slot k of output o reads.

    A regular window starts at o * stride - padding and steps by dilation; an
    adaptive one spans [floor(o * size / out), ceil((o + 1) * size / out)), its
    slots past the end unused (`width` is the widest window)."""

    size: int
    out: int
    width: int
    stride: int = 1
    padding: int = 0
    dilation: int = 1
    adaptive: bool = False

    def row(self, b: ScalarBuilder, o: SSAValue, k: SSAValue) -> SSAValue:
        if self.adaptive:
            start = b.floor_div(b.mul(o, b.constant(self.size, i64)), b.constant(self.out, i64))
            return b.add(start, k)
        start = b.sub(b.mul(o, b.constant(self.stride, i64)), b.constant(self.padding, i64))
        return b.add(start, b.mul(k, b.constant(self.dilation, i64)))

    def inside(self, b: ScalarBuilder, o: SSAValue, row: SSAValue) -> SSAValue:
        if self.adaptive:
            end = b.floor_div(
                b.add(b.mul(b.add(o, b.constant(1, i64)), b.constant(self.size, i64)), b.constant(self.out - 1, i64)),
                b.constant(self.out, i64),
            )
            return b.compare("lt", row, end)
        return b.logical(
            "and", b.compare("ge", row, b.constant(0, i64)), b.compare("lt", row, b.constant(self.size, i64))
        )


def _adaptive_axes(sizes: Sequence[int], outs: Sequence[int]) -> list[_Axis]:
    axes = []
    for size, out in zip(sizes, outs):
        width = max(-(-((o + 1) * size) // out) - (o * size) // out for o in range(out)) if out else 1
        axes.append(_Axis(size, out, width, adaptive=True))
    return axes


def _plane_strides(axes: Sequence[_Axis]) -> list[int]:
    """Row-major strides of the flattened spatial plane."""
    return [prod(a.size for a in axes[i + 1 :]) for i in range(len(axes))]


def _slot_position(
    b: ScalarBuilder, axes: Sequence[_Axis], outs: Sequence[SSAValue], slots: Sequence[SSAValue]
) -> tuple[SSAValue, SSAValue]:
    """(flat position in the plane, whether it is a real element) of one window slot."""
    flat, valid = b.constant(0, i64), b.constant(True, i1)
    for axis, o, k, stride in zip(axes, outs, slots, _plane_strides(axes)):
        row = axis.row(b, o, k)
        valid = b.logical("and", valid, axis.inside(b, o, row))
        flat = b.add(flat, b.mul(row, b.constant(stride, i64)))
    return flat, valid


def _window_index(g: GraphImporter, axes: Sequence[_Axis]) -> tuple[SSAValue, SSAValue]:
    """(i64 [*out, K] flat positions, clamped to 0 where unused; i1 [*out, K] validity)."""
    spatial = len(axes)
    outs = [along(g, ramp(g, a.out), i, 2 * spatial) for i, a in enumerate(axes)]
    slots = [along(g, ramp(g, a.width), spatial + i, 2 * spatial) for i, a in enumerate(axes)]
    grid = [a.out for a in axes] + [a.width for a in axes]

    def position(b: ScalarBuilder, xs: list[Any]) -> SSAValue:
        flat, valid = _slot_position(b, axes, xs[:spatial], xs[spatial:])
        return b.select(valid, flat, b.constant(0, i64))

    def validity(b: ScalarBuilder, xs: list[Any]) -> SSAValue:
        return _slot_position(b, axes, xs[:spatial], xs[spatial:])[1]

    window_shape = [a.out for a in axes] + [prod(a.width for a in axes)]
    index = reshape(g, g.map([*outs, *slots], tensor_of(i64, grid), position), window_shape)
    valid = reshape(g, g.map([*outs, *slots], tensor_of(i1, grid), validity), window_shape)
    return index, valid


def _gather_windows(
    g: GraphImporter, value: SSAValue, axes: Sequence[_Axis], compute: Attribute, fill: float
) -> tuple[SSAValue, SSAValue]:
    """([*lead, *out, K] window slots in `compute`, `fill` where unused; the validity mask)."""
    spatial = len(axes)
    shape = list(shape_of(value))
    lead = shape[: len(shape) - spatial]
    index, valid = _window_index(g, axes)
    flat = reshape(g, value, lead + [prod(shape[len(lead) :])])
    windows = g.emit(GatherOp(flat, [index], len(lead), tensor_of(element_of(value), lead + list(shape_of(index)))))
    masked = g.map(
        [windows, valid], tensor_of(compute, shape_of(windows)),
        lambda b, xs: b.select(xs[1], b.cast(xs[0], compute), b.constant(fill, compute)),  # type: ignore[arg-type]
    )
    return masked, valid


def _lowest(element: Attribute) -> float:
    if is_float(element):
        return float("-inf")
    return -(2 ** (element.width.data - 1))  # type: ignore[attr-defined]


def _max_with_indices(
    g: GraphImporter, value: SSAValue, axes: Sequence[_Axis], out: TensorType, want_indices: bool
) -> tuple[SSAValue, SSAValue | None]:
    """Max over each window, and the flat plane position of its first maximum."""
    compute = opmath_type(out.element_type)
    windows, _ = _gather_windows(g, value, axes, compute, _lowest(compute))
    rank = len(shape_of(windows)) - 1
    values = cast(g, reduce(g, ReduceKind.MAX, windows, [rank], False), out.element_type)
    if not want_indices:
        return values, None
    best = reduce(g, ReduceKind.ARGMAX, windows, [rank], False, i64)
    spatial = len(axes)
    lead = rank - spatial
    outs = [along(g, ramp(g, a.out), lead + i, rank) for i, a in enumerate(axes)]
    widths = [a.width for a in axes]

    def position(b: ScalarBuilder, xs: list[Any]) -> SSAValue:
        slot, rest = xs[0], xs[1:]
        slots = [
            b.remainder(b.floor_div(slot, b.constant(prod(widths[i + 1 :]), i64)), b.constant(w, i64))
            for i, w in enumerate(widths)
        ]
        return _slot_position(b, axes, rest, slots)[0]

    return values, g.map([best, *outs], tensor_of(i64, shape_of(best)), position)


def _window_average(
    g: GraphImporter, value: SSAValue, axes: Sequence[_Axis], out: TensorType, divisor: SSAValue | float | None
) -> SSAValue:
    """Sum of each window's real elements divided by `divisor` (a tensor, a
    number, or None for the count of real elements)."""
    compute = opmath_type(out.element_type)
    windows, valid = _gather_windows(g, value, axes, compute, 0.0)
    rank = len(shape_of(windows)) - 1
    total = reduce(g, ReduceKind.SUM, windows, [rank], False)
    if divisor is None:
        divisor = reduce(g, ReduceKind.SUM, cast(g, valid, compute), [len(axes)], False)
    if isinstance(divisor, SSAValue):
        return g.map([total, divisor], out, lambda b, xs: b.div(xs[0], b.cast(xs[1], compute)))  # type: ignore[arg-type]
    scale = float(divisor)
    return g.map([total], out, lambda b, xs: b.div(xs[0], b.constant(scale, compute)))  # type: ignore[arg-type]


# --------------------------------------------------------------------------
# Pooling converters
# --------------------------------------------------------------------------


def _regular_axes(
    value: torch.Tensor,
    out: Sequence[int],
    window: Sequence[int],
    stride: Sequence[int],
    padding: Sequence[int],
    dilation: Sequence[int],
) -> list[_Axis]:
    sizes = value.shape[-len(window) :]
    return [
        _Axis(int(n), int(o), k, s, p, d) for n, o, k, s, p, d in zip(sizes, out, window, stride, padding, dilation)
    ]


@converts("aten.max_pool2d_with_indices.default", "aten.max_pool3d_with_indices.default")
def convert_max_pool(g: GraphImporter, node: torch.fx.Node) -> tuple[SSAValue | None, ...]:
    """rdu.pool max, or, when the indices are used, a window gather reduced by
    max and argmax (the index is the flat position in the input's spatial plane)."""
    args = node_arguments(node)
    spatial = 3 if "3d" in str(node.target) else 2
    window = _per_dim(args["kernel_size"], spatial, 1)
    stride = _per_dim(args["stride"], spatial, 1) if args["stride"] else window
    padding = _per_dim(args["padding"], spatial, 0)
    dilation = _per_dim(args["dilation"], spatial, 1)
    out = fake_type(fake_value(node)[0])
    value = g.value(args["self"])
    if 1 in used_outputs(node):
        axes = _regular_axes(fake_value(args["self"]), out.get_shape()[-spatial:], window, stride, padding, dilation)
        return _max_with_indices(g, value, axes, out, True)
    pooled = g.emit(PoolOp(PoolKind.MAX, value, window, stride, padding, dilation, bool(args["ceil_mode"]), out))
    return pooled, None


@converts("aten.avg_pool2d.default", "aten.avg_pool3d.default")
def convert_avg_pool(g: GraphImporter, node: torch.fx.Node) -> SSAValue:
    """rdu.pool avg (zero padding, divided by the full window), rescaled for
    divisor_override, or divided by the share of real elements in each window
    for count_include_pad=False (the same pooling of ones). With ceil_mode, a
    window gather divided as torch does: by divisor_override, the real
    elements, or the window clipped to the padded input."""
    args = node_arguments(node)
    spatial = 3 if "3d" in str(node.target) else 2
    window = _per_dim(args["kernel_size"], spatial, 1)
    stride = _per_dim(args["stride"], spatial, 1) if args["stride"] else window
    padding = _per_dim(args["padding"], spatial, 0)
    out = result_type(node)
    value = g.value(args["self"])
    divisor, exclude_pad = args["divisor_override"], any(padding) and not args["count_include_pad"]
    if args["ceil_mode"]:
        axes = _regular_axes(
            fake_value(args["self"]), out.get_shape()[-spatial:], window, stride, padding, [1] * spatial
        )
        if divisor is None and args["count_include_pad"]:
            divisor = _padded_window_sizes(g, axes)
        return _window_average(g, value, axes, out, divisor)

    def pool(source: SSAValue, result: TensorType) -> SSAValue:
        return g.emit(PoolOp(PoolKind.AVG, source, window, stride, padding, [1] * spatial, False, result))

    if divisor is None and not exclude_pad:
        return pool(value, out)
    compute = opmath_type(out.element_type)
    wide = tensor_of(compute, out.get_shape())
    average = pool(cast(g, value, compute), wide)
    if divisor is not None:
        scale = prod(window) / divisor
        return g.map([average], out, lambda b, xs: b.mul(xs[0], b.constant(scale, compute)))  # type: ignore[arg-type]
    ones_shape = [1] * (len(shape_of(value)) - spatial) + list(shape_of(value)[-spatial:])
    ones = g.map([], tensor_of(compute, ones_shape), lambda b, xs: b.constant(1, compute))
    share = pool(ones, tensor_of(compute, ones_shape[:-spatial] + list(out.get_shape()[-spatial:])))
    return g.map([average, share], out, lambda b, xs: b.div(xs[0], xs[1]))  # type: ignore[arg-type]


def _padded_window_sizes(g: GraphImporter, axes: Sequence[_Axis]) -> SSAValue:
    """i64 [*out]: each window's size clipped to the padded input (torch's
    count_include_pad divisor under ceil_mode)."""
    spatial = len(axes)
    outs = [along(g, ramp(g, a.out), i, spatial) for i, a in enumerate(axes)]

    def size(b: ScalarBuilder, xs: list[Any]) -> SSAValue:
        total = b.constant(1, i64)
        for axis, o in zip(axes, xs):
            start = b.sub(b.mul(o, b.constant(axis.stride, i64)), b.constant(axis.padding, i64))
            end = b.minimum(b.add(start, b.constant(axis.width, i64)), b.constant(axis.size + axis.padding, i64))
            total = b.mul(total, b.sub(end, start))
        return total

    return g.map(outs, tensor_of(i64, [a.out for a in axes]), size)


@converts("aten._adaptive_avg_pool2d.default", "aten._adaptive_avg_pool3d.default")
def convert_adaptive_avg_pool(g: GraphImporter, node: torch.fx.Node) -> SSAValue:
    """rdu.pool avg when the output size divides the input, else a gather of
    each adaptive window averaged over its real elements."""
    value = g.value(positional(node)[0])
    out_sizes = list(positional(node)[1])
    spatial = len(out_sizes)
    sizes = shape_of(value)[-spatial:]
    out = result_type(node)
    if any(size % o for size, o in zip(sizes, out_sizes)):
        return _window_average(g, value, _adaptive_axes(sizes, out_sizes), out, None)
    window = [size // o for size, o in zip(sizes, out_sizes)]
    return g.emit(PoolOp(PoolKind.AVG, value, window, window, [0] * spatial, [1] * spatial, False, out))


@converts("aten.adaptive_max_pool2d.default", "aten.adaptive_max_pool3d.default")
def convert_adaptive_max_pool(g: GraphImporter, node: torch.fx.Node) -> tuple[SSAValue | None, ...]:
    """rdu.pool max when the output size divides the input and the indices are
    unused, else a gather of each adaptive window reduced by max and argmax."""
    value = g.value(positional(node)[0])
    out_sizes = list(positional(node)[1])
    spatial = len(out_sizes)
    sizes = shape_of(value)[-spatial:]
    out = fake_type(fake_value(node)[0])
    want_indices = 1 in used_outputs(node)
    if want_indices or any(size % o for size, o in zip(sizes, out_sizes)):
        return _max_with_indices(g, value, _adaptive_axes(sizes, out_sizes), out, want_indices)
    window = [size // o for size, o in zip(sizes, out_sizes)]
    return g.emit(PoolOp(PoolKind.MAX, value, window, window, [0] * spatial, [1] * spatial, False, out)), None


__all__ = ["convert_convolution", "convert_max_pool", "convert_avg_pool"]
