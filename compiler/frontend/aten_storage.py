"""Views of a tensor's storage: `view.dtype` (its bits read as another type) and
the `prims` reductions torch's decomposition leaves (`prims.prod`, `prims.xor_sum`) and its view prims
(`transpose`, `squeeze`, `broadcast_in_dim`, `split_dim`, `view_of`) as the ATen views they are.

`x.view(dtype)` of the same element size is a bitcast of every element (an
`arith.bitcast` in an `rdu.map`; bool is the byte 0 or 1). Of another element
size, the last dim is regrouped as the bytes of the storage are (little endian,
as every host torch runs on): a narrower type splits each element into its
integer parts, low bits first; a wider one joins that many consecutive
elements. Both go through the unsigned integers of each width, so every bit
pattern (NaN payloads included) survives.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import torch
from xdsl.dialects import arith
from xdsl.dialects.builtin import IntegerType, i1
from xdsl.ir import SSAValue

from rducc.errors import RduccError
from rducc.frontend.aten_common import element_of, result_type
from rducc.frontend.converter_api import GraphImporter, converts, fake_value, positional
from rducc.frontend.decompositions import decomposes
from rducc.frontend.types import demoting_f64

aten = torch.ops.aten
_UNSIGNED = {1: torch.uint8, 2: torch.uint16, 4: torch.uint32, 8: torch.uint64}
_SIGNED = {1: torch.int8, 2: torch.int16, 4: torch.int32, 8: torch.int64}


def _check_same_size(node: torch.fx.Node) -> str | None:
    source, dtype = positional(node)[:2]
    if fake_value(source).dtype.itemsize != dtype.itemsize:
        return "of another element size (rducc decomposes it first; this form is unexpected)"
    if demoting_f64() and torch.float64 in (fake_value(source).dtype, dtype):
        return ("reads the bits of a float64 value (view(dtype), hash_tensor), which --f64 demote computes in "
                "float32: they would be float32's bits; compile with --f64 emulate")
    return None


@converts("aten.view.dtype", check=_check_same_size)
def convert_view_dtype(g: GraphImporter, node: torch.fx.Node) -> SSAValue:
    """The same bits, read as an element type of the same size."""
    source = positional(node)[0]
    value, kind = g.value(source), result_type(node)
    target, origin = kind.element_type, element_of(value)

    def bitcast(b: Any, xs: list[Any]) -> SSAValue:
        x = xs[0]
        if target == i1:  # a byte read as bool: true unless zero
            return b.compare("ne", x, b.constant(0, origin))
        if origin == i1:
            return b.emit(arith.ExtUIOp(x, IntegerType(8)) if isinstance(target, IntegerType)
                          else arith.BitcastOp(b.emit(arith.ExtUIOp(x, IntegerType(8))), target))
        if isinstance(origin, IntegerType) and isinstance(target, IntegerType):
            return x  # the same width: the same integer, read by its element type
        return b.emit(arith.BitcastOp(x, target))

    return g.map([value], kind, bitcast)


@decomposes("aten.view.dtype")
def view_dtype(self: torch.Tensor, dtype: torch.dtype) -> Any:
    """Another element size: the last dim split into, or joined from, integer parts."""
    size, wanted = self.dtype.itemsize, dtype.itemsize
    if size == wanted:
        return NotImplemented  # the converter's bitcast
    bits = aten.view.dtype(self, _SIGNED[size]).to(torch.int64)
    if size > wanted:  # each element becomes size // wanted parts, low bits first
        parts = size // wanted
        shifts = torch.arange(parts, dtype=torch.int64) * (8 * wanted)
        pieces = (bits.unsqueeze(-1) >> shifts) & ((1 << (8 * wanted)) - 1)
        narrow = _from_unsigned(pieces, wanted).reshape(*self.shape[:-1], self.shape[-1] * parts)
        return aten.view.dtype(narrow, dtype)
    parts = wanted // size
    pieces = (bits & ((1 << (8 * size)) - 1)).reshape(*self.shape[:-1], self.shape[-1] // parts, parts)
    shifts = torch.arange(parts, dtype=torch.int64) * (8 * size)
    joined = (pieces << shifts).sum(-1)  # disjoint bits: the sum is the bitwise or (mod 2**64)
    return aten.view.dtype(_from_unsigned(joined, wanted), dtype)


def _from_unsigned(values: torch.Tensor, width: int) -> torch.Tensor:
    """int64 holding unsigned `width`-byte values, as the signed integer of those bits."""
    if width == 8:
        return values
    top = 1 << (8 * width)
    return torch.where(values >= top // 2, values - top, values).to(_SIGNED[width])


@decomposes("prims.prod.default")
def prims_prod(inp: torch.Tensor, dims: Sequence[int] | None, *, output_dtype: torch.dtype | None = None) -> Any:
    """The product over `dims` (all of them when None), one dim at a time from the last."""
    result = inp if output_dtype is None else inp.to(output_dtype)
    for dim in sorted({d % max(inp.dim(), 1) for d in (range(inp.dim()) if dims is None else dims)},
                      reverse=True):
        result = aten.prod.dim_int(result, dim)
    return result


@decomposes("prims.xor_sum.default")
def prims_xor_sum(inp: torch.Tensor, dims: Sequence[int] | None, *, output_dtype: torch.dtype | None = None) -> Any:
    """The xor of the (integer or bool) elements over `dims` (all of them when None), one dim at a
    time from the last, each by halves (`_xor_along`)."""
    result = inp if output_dtype is None else inp.to(output_dtype)
    for dim in sorted({d % max(inp.dim(), 1) for d in (range(inp.dim()) if dims is None else dims)},
                      reverse=True):
        result = _xor_along(result, dim).squeeze(dim)
    return result


@decomposes("prims.transpose.default")
def prims_transpose(a: torch.Tensor, permutation: Sequence[int]) -> Any:
    """The view of `a` with its dims in `permutation`'s order: a permute."""
    return aten.permute.default(a, list(permutation))


@decomposes("prims.squeeze.default")
def prims_squeeze(a: torch.Tensor, dimensions: Sequence[int]) -> Any:
    """`a` without the size-1 `dimensions`."""
    return aten.squeeze.dims(a, list(dimensions))


@decomposes("prims.broadcast_in_dim.default")
def prims_broadcast_in_dim(a: torch.Tensor, shape: Sequence[int], broadcast_dimensions: Sequence[int]) -> Any:
    """`a` expanded to `shape`, its dims laid at `broadcast_dimensions` (size 1 in the others first)."""
    placed = [1] * len(shape)
    for own, at in enumerate(broadcast_dimensions):
        placed[at] = a.shape[own]
    return aten.expand.default(aten.reshape.default(a, placed), list(shape))


@decomposes("prims.split_dim.default")
def prims_split_dim(a: torch.Tensor, dim: int, outer_length: int) -> Any:
    """`dim` split into (outer_length, the rest)."""
    shape = list(a.shape)
    return aten.reshape.default(a, [*shape[:dim], outer_length, shape[dim] // outer_length, *shape[dim + 1:]])


@decomposes("prims.view_of.default")
def prims_view_of(a: torch.Tensor) -> Any:
    """A view of all of `a`: in a functional program, `a` as it is."""
    return aten.alias.default(a)


@decomposes("aten.resize.default")
def resize(self: torch.Tensor, size: Sequence[int], *, memory_format: Any = None) -> Any:
    """`resize_`/`resize_as_` of a contiguous tensor to as many elements or fewer: its first elements in
    row-major order (the storage a contiguous tensor keeps), laid out contiguously in the new shape.
    More elements would read uninitialized memory, and a strided tensor its storage's order: refused."""
    count = math.prod(size)
    if count > self.numel() or not self.is_contiguous():
        why = (f"to {count} elements from {self.numel()} (the new ones would be uninitialized memory)"
               if count > self.numel() else "of a strided tensor (the result would be its storage's order)")
        raise RduccError(f"resize {why}; rducc resizes a contiguous tensor to as many elements or fewer")
    return self.reshape(-1)[:count].reshape(list(size))


def _xor_along(bits: torch.Tensor, dim: int) -> torch.Tensor:
    """The xor of `bits` along `dim` (kept, of size 1): halves xored until one is left (a zero
    appended to an odd count; none left of an empty dim is zero)."""
    count = bits.shape[dim]
    if count == 0:
        return torch.zeros([*bits.shape[:dim], 1, *bits.shape[dim + 1:]], dtype=bits.dtype)
    while count > 1:
        if count % 2:
            bits = torch.cat([bits, torch.zeros_like(bits.narrow(dim, 0, 1))], dim)
            count += 1
        count //= 2
        bits = torch.bitwise_xor(bits.narrow(dim, 0, count), bits.narrow(dim, count, count))
    return bits


def _float64_bits(x: torch.Tensor) -> torch.Tensor:
    """The 64 bits of float32 `x` widened to float64 (as int64), in integer arithmetic: no float64
    value in the program (the chip computes none; `--f64 demote` would make it float32). Normal
    numbers rebias the exponent; a subnormal is normalized by its top bit (read from the exponent of
    its mantissa as a float32, exact below 2**24); inf and NaN keep their mantissa (NaN made quiet)."""
    bits = aten.view.dtype(x, torch.int32).to(torch.int64) & 0xFFFFFFFF
    sign, exponent, mantissa = (bits >> 31) << 63, (bits >> 23) & 0xFF, bits & 0x7FFFFF
    normal = ((exponent + 896) << 52) | (mantissa << 29)
    top = ((aten.view.dtype(mantissa.to(torch.float32), torch.int32).to(torch.int64) >> 23) & 0xFF) - 127
    subnormal = ((top + 874) << 52) | ((mantissa << (52 - top)) & ((1 << 52) - 1))
    special = (2047 << 52) | (torch.where(mantissa != 0, mantissa | 0x400000, mantissa) << 29)
    wide = torch.where(exponent == 255, special, torch.where(exponent == 0, subnormal, normal))
    return sign | torch.where((exponent == 0) & (mantissa == 0), torch.zeros_like(wide), wide)


@decomposes("aten.hash_tensor.default")
def hash_tensor(self: torch.Tensor, dim: Sequence[int] = (), *, keepdim: bool = False, mode: int = 0) -> Any:
    """torch's mode 0: each element widened to float64 (a float) or int64 (an integer or bool), its
    64 bits xor-reduced over `dim` (every dim when empty), read as uint64 (which the program returns
    as its int64 bits: `rducc.frontend.output_edges`)."""
    if mode != 0:
        raise RduccError(f"hash_tensor with mode={mode}; torch defines mode 0 (an xor reduction) only")
    if self.dtype == torch.float64:
        bits = aten.view.dtype(self, torch.int64)
    else:
        bits = _float64_bits(self.float()) if self.dtype.is_floating_point else self.to(torch.int64)
    rank = self.dim()
    dims = sorted({d % max(rank, 1) for d in (dim or range(rank))}) if rank else []
    for axis in dims:
        bits = _xor_along(bits, axis)
    if dims and not keepdim:
        bits = bits.squeeze(dims)
    return aten.view.dtype(bits, torch.uint64)


__all__ = ["convert_view_dtype", "hash_tensor", "prims_prod", "resize", "view_dtype"]


# --------------------------------------------------------------------------
# The other prims torch's decomposition keeps: their ATen twins
# --------------------------------------------------------------------------

_UNARY_TWINS = (
    "abs", "acos", "acosh", "asin", "asinh", "atan", "atanh", "ceil", "cos", "cosh", "digamma", "erf", "erfc",
    "erfinv", "exp", "exp2", "expm1", "floor", "lgamma", "log", "log10", "log1p", "log2", "neg", "reciprocal",
    "round", "rsqrt", "sign", "signbit", "sin", "sinh", "sqrt", "tan", "tanh", "trunc", "bitwise_not",
)
_BINARY_TWINS = {
    "add": "add", "atan2": "atan2", "bitwise_and": "bitwise_and", "bitwise_or": "bitwise_or",
    "bitwise_xor": "bitwise_xor", "eq": "eq", "fmax": "fmax", "fmin": "fmin", "fmod": "fmod", "ge": "ge",
    "gt": "gt", "hypot": "hypot", "le": "le", "lt": "lt", "maximum": "maximum", "minimum": "minimum",
    "mul": "mul", "ne": "ne", "nextafter": "nextafter", "pow": "pow", "remainder": "remainder", "sub": "sub",
    "shift_left": "bitwise_left_shift", "shift_right_arithmetic": "bitwise_right_shift",
}
"""Elementwise prims and the ATen op that computes the same (prims name -> aten name)."""


def _unary_twin(name: str) -> Any:
    def twin(a: torch.Tensor) -> torch.Tensor:
        return getattr(aten, name).default(a)

    return twin


def _binary_twin(name: str) -> Any:
    def twin(a: Any, b: Any) -> torch.Tensor:
        return getattr(torch, name)(a, b)

    return twin


for _name in _UNARY_TWINS:
    decomposes(f"prims.{_name}.default")(_unary_twin(_name))
for _prim, _aten in _BINARY_TWINS.items():
    decomposes(f"prims.{_prim}.default")(_binary_twin(_aten))


@decomposes("prims.div.default")
def prims_div(a: Any, b: Any) -> torch.Tensor:
    """True division of floats, truncating division of integers (as prims defines it)."""
    floating = any(isinstance(v, torch.Tensor) and (v.is_floating_point() or v.is_complex()) or isinstance(v, float)
                   for v in (a, b))
    return torch.div(a, b) if floating else torch.div(a, b, rounding_mode="trunc")


@decomposes("prims.sum.default")
def prims_sum(inp: torch.Tensor, dims: Sequence[int] | None, *, output_dtype: torch.dtype | None = None) -> Any:
    return aten.sum.dim_IntList(inp, list(range(inp.dim())) if dims is None else list(dims), dtype=output_dtype)


@decomposes("prims.amax.default")
def prims_amax(inp: torch.Tensor, dims: Sequence[int] | None, *, output_dtype: torch.dtype | None = None) -> Any:
    return aten.amax.default(inp, list(range(inp.dim())) if dims is None else list(dims))


@decomposes("prims.amin.default")
def prims_amin(inp: torch.Tensor, dims: Sequence[int] | None, *, output_dtype: torch.dtype | None = None) -> Any:
    return aten.amin.default(inp, list(range(inp.dim())) if dims is None else list(dims))


@decomposes("prims.var.default")
def prims_var(inp: torch.Tensor, dims: Sequence[int] | None, correction: float = 1, *,
              output_dtype: torch.dtype | None = None) -> Any:
    return aten.var.correction(inp, None if dims is None else list(dims), correction=correction)


@decomposes("prims.where.default")
def prims_where(pred: torch.Tensor, a: Any, b: Any) -> Any:
    return torch.where(pred, a, b)


@decomposes("prims.rev.default")
def prims_rev(a: torch.Tensor, dims: Sequence[int]) -> Any:
    return aten.flip.default(a, list(dims))


@decomposes("prims.clone.default")
def prims_clone(a: torch.Tensor, *, memory_format: Any = None) -> Any:
    return aten.clone.default(a)
