"""ATen resampling: nearest upsampling (1d, 2d, 3d; `.vec` and `.default`;
exact or not), bilinear upsampling and grid_sample (bilinear, nearest,
bicubic; zeros, border, reflection padding) as gathers and blends.
"""

from __future__ import annotations

from typing import Any

import torch
from xdsl.dialects.builtin import TensorType, f32, i1, i64
from xdsl.ir import SSAValue

from rducc.dialects.rdu.dataflow import (
    GatherOp,
)
from rducc.frontend.aten_build import along, cast, gather_dim, ramp, reshape, slice_dim
from rducc.frontend.aten_common import element_of, result_type, shape_of, tensor_of
from rducc.frontend.converter_api import GraphImporter, converts, node_arguments
from rducc.frontend.scalar import ScalarBuilder, opmath_type

_NEAREST = [
    f"aten.{kind}{rank}d.{form}"
    for kind in ("upsample_nearest", "_upsample_nearest_exact") for rank in (1, 2, 3) for form in ("vec", "default")
]


def _nearest_scales(node: torch.fx.Node, spatial: int) -> list[float | None]:
    """Each spatial dim's scale factor, or None: `.vec` passes a list (or None),
    `.default` one argument per dim (`scales`, or `scales_d`, `scales_h`, `scales_w`)."""
    args = node_arguments(node)
    if "scale_factors" in args:
        return list(args["scale_factors"]) if args["scale_factors"] else [None] * spatial
    return [args[name] for name in args if name.startswith("scales")]


@converts(*_NEAREST)
def convert_upsample_nearest(g: GraphImporter, node: torch.fx.Node) -> SSAValue:
    """Each spatial dim gathers source row min(floor(i * scale), size - 1) (the exact
    forms: floor((i + 0.5) * scale)), with torch's f32 scale: 1/scale_factor when
    given, else in/out."""
    value = g.value(node.args[0])
    rank = len(shape_of(value))
    spatial = int(str(node.target).split("d.")[0][-1])
    exact = "exact" in str(node.target)
    out_sizes = result_type(node).get_shape()[-spatial:]
    factors = _nearest_scales(node, spatial)
    for axis in range(spatial):
        dim = rank - spatial + axis
        size, out_size = shape_of(value)[dim], out_sizes[axis]
        factor = factors[axis]
        scale = 1.0 / factor if factor else size / out_size

        def source_row(b: ScalarBuilder, xs: list[Any], scale: float = scale, size: int = size) -> SSAValue:
            position = b.cast(xs[0], f32)
            if exact:
                position = b.add(position, b.constant(0.5, f32))
            row = b.unary("floor", b.mul(position, b.constant(scale, f32)))
            return b.minimum(b.cast(row, i64), b.constant(size - 1, i64))

        index = g.map([ramp(g, out_size)], tensor_of(i64, [out_size]), source_row)
        value = gather_dim(g, value, index, dim)
    return value


@converts("aten.upsample_bilinear2d.vec")
def convert_upsample_bilinear(g: GraphImporter, node: torch.fx.Node) -> SSAValue:
    """Per spatial dim, gathers of the two neighbouring source rows blended by
    their distances, with torch's source coordinate (align_corners or half-pixel)
    computed in f32 as its CPU kernel does."""
    args = node_arguments(node)
    value = g.value(args["input"])
    out = result_type(node)
    compute = opmath_type(out.element_type)
    value = cast(g, value, compute)
    rank = len(shape_of(value))
    factors, aligned = args["scale_factors"], bool(args["align_corners"])
    for axis in range(2):
        dim = rank - 2 + axis
        size, out_size = shape_of(value)[dim], out.get_shape()[dim]
        if aligned:
            scale = (size - 1) / (out_size - 1) if out_size > 1 else 0.0
        else:
            scale = 1.0 / factors[axis] if factors else size / out_size
        value = _blend_rows(g, value, dim, size, out_size, scale, aligned)
    return cast(g, value, out.element_type)


def _blend_rows(
    g: GraphImporter, value: SSAValue, dim: int, size: int, out_size: int, scale: float, aligned: bool
) -> SSAValue:
    """Linear interpolation of `value` along `dim` from `size` to `out_size` rows."""

    def source(b: ScalarBuilder, xs: list[Any]) -> SSAValue:
        position = b.cast(xs[0], f32)
        if aligned:
            return b.mul(position, b.constant(scale, f32))
        half = b.constant(0.5, f32)
        shifted = b.sub(b.mul(b.add(position, half), b.constant(scale, f32)), half)
        return b.maximum(shifted, b.constant(0.0, f32))

    where = g.map([ramp(g, out_size)], tensor_of(f32, [out_size]), source)
    low = g.map(
        [where],
        tensor_of(i64, [out_size]),
        lambda b, xs: b.minimum(b.cast(xs[0], i64), b.constant(size - 1, i64)),  # type: ignore[arg-type]
    )
    high = g.map([low], low.type, lambda b, xs: b.minimum(b.add(xs[0], b.constant(1, i64)), b.constant(size - 1, i64)))  # type: ignore[arg-type]
    element = element_of(value)
    weight = g.map(
        [where, low],
        tensor_of(element, [out_size]),
        lambda b, xs: b.cast(b.sub(xs[0], b.cast(xs[1], f32)), element),  # type: ignore[arg-type]
    )
    rank = len(shape_of(value))
    below, above = gather_dim(g, value, low, dim), gather_dim(g, value, high, dim)

    def blend(b: ScalarBuilder, xs: list[Any]) -> SSAValue:
        near, far, t = xs
        return b.add(b.mul(b.sub(b.constant(1.0, element), t), near), b.mul(t, far))

    assert isinstance(below.type, TensorType)
    return g.map([below, above, along(g, weight, dim, rank)], below.type, blend)


_GRID_MODES = {0: "bilinear", 1: "nearest", 2: "bicubic"}


_GRID_PADDING = {0: "zeros", 1: "border", 2: "reflection"}


_BICUBIC_A = -0.75
"""The cubic convolution constant torch's bicubic sampling and upsampling use."""


@converts("aten.grid_sampler_2d.default")
def convert_grid_sampler(g: GraphImporter, node: torch.fx.Node) -> SSAValue:
    """Sampling at the grid's (x, y), unnormalized and, for border and
    reflection padding, clipped or reflected into the input as torch does.
    Bilinear: four gathers at data-dependent corners (clamped into range,
    zeroed outside it), blended by area weights in f32 in torch's order
    (north-west, north-east, south-west, south-east). Nearest: one gather at
    the rounded (half to even) position, zero outside the input. Bicubic: the
    4x4 points around the unpadded position, each padded on its own (see
    `_grid_bicubic`)."""
    args = node_arguments(node)
    value, grid = g.value(args["input"]), g.value(args["grid"])
    batch, channels, height, width = shape_of(value)
    out = result_type(node)
    out_h, out_w = out.get_shape()[2:]
    aligned = bool(args["align_corners"])
    padding = _GRID_PADDING[args["padding_mode"]]
    compute = opmath_type(out.element_type)
    where_shape = [batch, 1, out_h, out_w]

    mode = _GRID_MODES[args["interpolation_mode"]]

    def coordinate(axis: int, size: int) -> SSAValue:
        part = reshape(g, slice_dim(g, grid, 3, axis, 1), where_shape)

        def source_index(b: ScalarBuilder, xs: list[Any]) -> SSAValue:
            one, half = b.constant(1.0, compute), b.constant(0.5, compute)
            c = b.cast(xs[0], compute)
            if aligned:
                c = b.mul(b.mul(b.add(c, one), half), b.constant(size - 1, compute))
            else:
                c = b.mul(b.sub(b.mul(b.add(c, one), b.constant(size, compute)), one), half)
            return c if mode == "bicubic" else _pad_coordinate(b, c, size, padding, aligned)

        return g.map([part], tensor_of(compute, where_shape), source_index)

    x, y = coordinate(0, width), coordinate(1, height)
    batch_index = along(g, ramp(g, batch), 0, 4)
    channel_index = along(g, ramp(g, channels), 1, 4)
    source = cast(g, value, compute)
    if mode == "nearest":
        return _grid_nearest(g, source, x, y, width, height, batch_index, channel_index, out)
    if mode == "bicubic":
        taps_x = _bicubic_taps(g, x, width, padding, aligned)
        taps_y = _bicubic_taps(g, y, height, padding, aligned)
        return _grid_bicubic(g, source, x, y, taps_x, taps_y, batch_index, channel_index, out)
    total = None
    for dy, dx in ((0, 0), (0, 1), (1, 0), (1, 1)):
        total = _grid_corner(g, source, x, y, dx, dy, width, height, batch_index, channel_index, total, out, compute)
    assert total is not None
    return total


def _pad_coordinate(b: ScalarBuilder, c: SSAValue, size: int, padding: str, aligned: bool) -> SSAValue:
    """torch's compute_coordinates: `c` reflected (reflection padding) and clipped
    into [0, size - 1] (border and reflection padding); unchanged for zeros."""
    if padding == "reflection":
        c = _reflect(b, c, 0 if aligned else -1, 2 * (size - 1) if aligned else 2 * size - 1)
    if padding != "zeros":
        c = b.minimum(b.maximum(c, b.constant(0.0, c.type)), b.constant(size - 1, c.type))
    return c


def _reflect(b: ScalarBuilder, c: SSAValue, twice_low: int, twice_high: int) -> SSAValue:
    """torch's reflect_coordinates: `c` reflected off low and high (given doubled)
    until it lies between them."""
    if twice_low == twice_high:
        return b.constant(0.0, c.type)
    low, span = b.constant(twice_low / 2, c.type), b.constant((twice_high - twice_low) / 2, c.type)
    distance = b.abs(b.sub(c, low))
    extra = b.fmod(distance, span)
    flips = b.unary("floor", b.div(distance, span))
    two = b.constant(2.0, c.type)
    even = b.compare("eq", b.sub(flips, b.mul(two, b.unary("floor", b.div(flips, two)))), b.constant(0.0, c.type))
    return b.select(even, b.add(extra, low), b.add(b.sub(span, extra), low))


def _grid_nearest(
    g: GraphImporter, source: SSAValue, x: SSAValue, y: SSAValue, width: int, height: int,
    batch_index: SSAValue, channel_index: SSAValue, out: Any,
) -> SSAValue:
    """source at the nearest (half to even) position, zero outside the input."""
    where = shape_of(x)

    def rounded(size: int) -> Any:
        def index(b: ScalarBuilder, xs: list[Any]) -> SSAValue:
            at = b.cast(b.unary("round", xs[0]), i64)
            return b.minimum(b.maximum(at, b.constant(0, i64)), b.constant(size - 1, i64))

        return index

    ix = g.map([x], tensor_of(i64, where), rounded(width))
    iy = g.map([y], tensor_of(i64, where), rounded(height))
    compute = element_of(source)
    picked = g.emit(
        GatherOp(
            source, [batch_index, channel_index, iy, ix], 0, tensor_of(compute, [*shape_of(source)[:2], *where[2:]])
        )
    )

    def keep(b: ScalarBuilder, xs: list[Any]) -> SSAValue:
        inside = b.constant(True, i1)
        for position, size in ((xs[0], width), (xs[1], height)):
            r = b.unary("round", position)
            inside = b.logical(
                "and",
                inside,
                b.logical(
                    "and",
                    b.compare("ge", r, b.constant(0.0, compute)),
                    b.compare("le", r, b.constant(size - 1, compute)),
                ),
            )
        return b.select(inside, xs[2], b.constant(0.0, compute))

    return g.map([x, y, picked], out, keep)


def _grid_corner(
    g: GraphImporter, source: SSAValue, x: SSAValue, y: SSAValue, dx: int, dy: int, width: int, height: int,
    batch_index: SSAValue, channel_index: SSAValue, total: SSAValue | None, out: Any, compute: Any,
) -> SSAValue:
    """total + weight * source[corner] for one corner of each sample's cell."""
    where = shape_of(x)

    def corner(size: int, offset: int) -> Any:
        def index(b: ScalarBuilder, xs: list[Any]) -> SSAValue:
            at = b.add(b.cast(b.unary("floor", xs[0]), i64), b.constant(offset, i64))
            return b.minimum(b.maximum(at, b.constant(0, i64)), b.constant(size - 1, i64))

        return index

    ix = g.map([x], tensor_of(i64, where), corner(width, dx))
    iy = g.map([y], tensor_of(i64, where), corner(height, dy))
    picked = g.emit(
        GatherOp(
            source, [batch_index, channel_index, iy, ix], 0, tensor_of(compute, [*shape_of(source)[:2], *where[2:]])
        )
    )

    def blend(b: ScalarBuilder, xs: list[Any]) -> SSAValue:
        px, py, v = xs[0], xs[1], xs[2]
        fx, fy = b.unary("floor", px), b.unary("floor", py)
        cx, cy = b.add(fx, b.constant(dx, compute)), b.add(fy, b.constant(dy, compute))
        wx = b.sub(px, fx) if dx else b.sub(b.add(fx, b.constant(1.0, compute)), px)
        wy = b.sub(py, fy) if dy else b.sub(b.add(fy, b.constant(1.0, compute)), py)
        inside = b.logical(
            "and",
            b.logical(
                "and", b.compare("ge", cx, b.constant(0, compute)), b.compare("lt", cx, b.constant(width, compute))
            ),
            b.logical(
                "and", b.compare("ge", cy, b.constant(0, compute)), b.compare("lt", cy, b.constant(height, compute))
            ),
        )
        term = b.select(inside, b.mul(v, b.mul(wx, wy)), b.constant(0.0, compute))
        return b.add(xs[3], term) if len(xs) > 3 else term

    inputs = [x, y, picked] + ([total] if total is not None else [])
    last = (dy, dx) == (1, 1)
    return g.map(inputs, out if last else tensor_of(compute, shape_of(picked)), blend)


def _bicubic_taps(
    g: GraphImporter, position: SSAValue, size: int, padding: str, aligned: bool
) -> list[tuple[SSAValue, SSAValue]]:
    """For k = 0..3, (padded coordinate, clamped i64 index) of the tap
    floor(position) - 1 + k: the coordinate says whether the tap is inside the
    input (zeros padding leaves it outside), the index is where to gather."""
    where, compute = shape_of(position), element_of(position)

    def clamped(b: ScalarBuilder, xs: list[Any]) -> SSAValue:
        at = b.cast(xs[0], i64)
        return b.minimum(b.maximum(at, b.constant(0, i64)), b.constant(size - 1, i64))

    taps = []
    for k in range(4):

        def padded(b: ScalarBuilder, xs: list[Any], offset: int = k - 1) -> SSAValue:
            tap = b.add(b.unary("floor", xs[0]), b.constant(float(offset), compute))
            return _pad_coordinate(b, tap, size, padding, aligned)

        coordinate = g.map([position], tensor_of(compute, where), padded)
        taps.append((coordinate, g.map([coordinate], tensor_of(i64, where), clamped)))
    return taps


def _cubic_weights(b: ScalarBuilder, t: SSAValue) -> list[SSAValue]:
    """torch's get_cubic_upsample_coefficients: the weights of the taps at
    distance 1 + t, t, 1 - t and 2 - t from a sample with fractional part t."""
    one, a = b.constant(1.0, t.type), b.constant(_BICUBIC_A, t.type)

    def near(x: SSAValue) -> SSAValue:  # ((A + 2) x - (A + 3)) x x + 1 for |x| <= 1
        inner = b.sub(b.mul(b.constant(_BICUBIC_A + 2, t.type), x), b.constant(_BICUBIC_A + 3, t.type))
        return b.add(b.mul(b.mul(inner, x), x), one)

    def far(x: SSAValue) -> SSAValue:  # ((A x - 5 A) x + 8 A) x - 4 A for 1 < |x| < 2
        inner = b.sub(b.mul(a, x), b.constant(5 * _BICUBIC_A, t.type))
        return b.sub(
            b.mul(b.add(b.mul(inner, x), b.constant(8 * _BICUBIC_A, t.type)), x), b.constant(4 * _BICUBIC_A, t.type)
        )

    rest = b.sub(one, t)
    return [far(b.add(t, one)), near(t), near(rest), far(b.add(rest, one))]


def _cubic_blend(b: ScalarBuilder, position: SSAValue, values: list[SSAValue]) -> SSAValue:
    """sum_k weight_k * value_k, in torch's order, for the fractional part of `position`."""
    weights = _cubic_weights(b, b.sub(position, b.unary("floor", position)))
    total = b.mul(weights[0], values[0])
    for weight, value in zip(weights[1:], values[1:]):
        total = b.add(total, b.mul(weight, value))
    return total


def _grid_bicubic(
    g: GraphImporter, source: SSAValue, x: SSAValue, y: SSAValue, taps_x: list[tuple[SSAValue, SSAValue]],
    taps_y: list[tuple[SSAValue, SSAValue]], batch_index: SSAValue, channel_index: SSAValue, out: Any,
) -> SSAValue:
    """torch's bicubic grid sampling (A = -0.75): for each of the 4 rows of taps,
    4 gathers blended along x (a tap outside the input reads 0), then the 4 rows
    blended along y."""
    height, width = shape_of(source)[2:]
    compute = element_of(source)
    blended_shape = [*shape_of(source)[:2], *shape_of(x)[2:]]

    def inside(b: ScalarBuilder, coordinate: SSAValue, size: int) -> SSAValue:
        return b.logical(
            "and",
            b.compare("ge", coordinate, b.constant(0.0, compute)),
            b.compare("le", coordinate, b.constant(size - 1, compute)),
        )

    def row_blend(b: ScalarBuilder, xs: list[Any]) -> SSAValue:
        position, row, columns, picked = xs[0], xs[1], xs[2:6], xs[6:10]
        row_inside = inside(b, row, height)
        values = [
            b.select(b.logical("and", row_inside, inside(b, column, width)), value, b.constant(0.0, compute))
            for column, value in zip(columns, picked)
        ]
        return _cubic_blend(b, position, values)

    rows = []
    for row, row_index in taps_y:
        picked = [
            g.emit(
                GatherOp(
                    source, [batch_index, channel_index, row_index, column_index], 0, tensor_of(compute, blended_shape)
                )
            )
            for _, column_index in taps_x
        ]
        rows.append(
            g.map([x, row, *[column for column, _ in taps_x], *picked], tensor_of(compute, blended_shape), row_blend)
        )
    return g.map([y, *rows], out, lambda b, xs: _cubic_blend(b, xs[0], xs[1:]))  # type: ignore[arg-type]
