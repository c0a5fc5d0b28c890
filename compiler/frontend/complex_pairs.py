"""Complex numbers as pairs of reals, before import.

rducc's IR has no complex element type (nor has the chip): a decomposed
program's complex tensors are rewritten, in its FX graph, into real tensors
with a trailing dim of 2 (real, imaginary), the layout `view_as_real` gives.
`view_as_complex` and `view_as_real` become nothing; complex arithmetic
(`mul`, `div`, `add`, `sub`, `abs`, `angle`, `conj`, `polar`, `reciprocal`, `exp`, `exp2`, `expm1`, `log`,
`log2`, `log10`, `log1p`, `sqrt`, `rsqrt`, `tanh`, `tan`, `sin`, `cos`, `sinh`, `cosh`, `asin`, `acos`, `atan`,
`asinh`, `acosh`, `atanh`, `sigmoid`, `pow` by a
real number or a tensor, `==`/`!=`, `isfinite`/`isnan`/`isinf`, `where`, `mm`/`bmm` as real matmuls,
`torch.complex`, `prod`/`cumprod` and `scatter_reduce`/`index_reduce` with 'prod' in polar form (with
'sum'/'mean' on each part), `cumsum`, `logcumsumexp`, `linalg_matrix_exp` through the real block matrix
[[A, -B], [B, A]]), layout ops, sums and means act on the pair; an op a host call may run (on the host
allow-list, not pointwise: `linalg_qr`, `_linalg_svd`, `_linalg_eigh`, `linalg_eig`, ...) runs torch's complex
kernel whole on the host, its complex operands and results crossing as pairs (`rdu.host_call`'s `pairs`, marked
here with `HOST_PAIRS`); an op
with no rule of its own acts on each part alone where that is what it means: a view by its schema (`diagonal`,
`unfold`, `split`'s pieces; not `as_strided` or `view(dtype)`, which read storage), an op that moves or zeroes
elements (`roll`, `tril`, `gather`, ...) and one that places or adds every complex operand through real
indices (`scatter_add`, `index_add`, `index_put`, ...). A variance (`var`, `std`, their
`_mean` forms) is that of the real parts plus that of the imaginary parts; the
FFTs (`_fft_r2c`, `_fft_c2c`, `_fft_c2r`) are DFTs: a product with cos/sin matrices along each transformed dim (exact,
O(n^2) per dim, which is what a dataflow chip's matmul units run anyway).

Complex weights (parameters, buffers, constants) are stored as their
`view_as_real` pairs. Complex model inputs and outputs are pairs at the
program's edge too: `complex_edges` records which user inputs (by label) and
which user outputs (by position) are complex, and `rducc.Program` and
`rducc-run` convert complex arrays to and from their pairs. A complex op with
no pair form is refused naming it.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable, Sequence
from typing import Any

import torch
from torch.export import ExportedProgram

from rducc.dialects.rdu.aten import HOST, NotCallable, admitted
from rducc.errors import UnsupportedOpsError
from rducc.frontend.converter_api import IGNORED_TARGETS, node_arguments
from rducc.frontend.locations import describe_location
from rducc.registration import registering

aten = torch.ops.aten
Node = torch.fx.Node


def _args(node: Node) -> tuple[Any, ...]:
    """The node's positional arguments, as its ATen schema types them."""
    return tuple(node.args)


def _is_complex(value: Any) -> bool:
    return isinstance(value, torch.Tensor) and value.is_complex()


def has_complex(ep: ExportedProgram) -> bool:
    """Whether any value of the program is complex."""
    return any(_is_complex(node.meta.get("val")) for node in ep.graph.nodes)


class _Builder:
    """Inserts real ops before `anchor`, each with its fake value and `anchor`'s source."""

    def __init__(self, graph: torch.fx.Graph, anchor: Node, mode: Any) -> None:
        self.graph, self.anchor, self.mode = graph, anchor, mode

    def __call__(self, target: Any, *args: Any, **kwargs: Any) -> Node:
        with self.graph.inserting_before(self.anchor):
            node = self.graph.call_function(target, args, kwargs)
        values = torch.fx.node.map_arg((args, kwargs), lambda n: n.meta["val"])
        with self.mode:
            node.meta["val"] = target(*values[0], **values[1])
        for key in ("stack_trace", "nn_module_stack"):
            if key in self.anchor.meta:
                node.meta[key] = self.anchor.meta[key]
        return node

    # pairs
    def real(self, pair: Node) -> Node:
        return self(aten.select.int, pair, -1, 0)

    def imag(self, pair: Node) -> Node:
        return self(aten.select.int, pair, -1, 1)

    def pack(self, real: Node, imag: Node) -> Node:
        parts = [self(aten.unsqueeze.default, part, -1) for part in (real, imag)]
        return self(aten.cat.default, parts, -1)

    def rank(self, node: Node) -> int:
        """`node`'s rank as torch sees it (a complex input, read as its pair, without the pair's 2)."""
        return node.meta["val"].dim() - (1 if node.meta.get(_READ_AS_PAIR) else 0)


_READ_AS_PAIR = "rducc_complex_input_pair"
"""The meta key marking a complex input placeholder whose value is now its real pair."""

Rule = Callable[[_Builder, Node, dict[Node, Node]], Node]
RULES: dict[Any, Rule] = {}


def _rule(*targets: Any) -> Callable[[Rule], Rule]:
    """Register `function` as the pair rewrite of each of `targets`."""
    return registering(RULES, targets, _itself)


def _itself(function: Rule) -> Rule:
    return function


def _dim(dim: int, rank: int) -> int:
    """A complex tensor's dim as the pair's (the trailing 2 is not counted in `rank`)."""
    return dim % rank if rank else 0


# --------------------------------------------------------------------------
# Views and layout
# --------------------------------------------------------------------------


@_rule(aten.view_as_complex.default)
def _view_as_complex(b: _Builder, node: Node, pairs: dict[Node, Node]) -> Node:
    return _args(node)[0]


@_rule(aten.view_as_real.default)
def _view_as_real(b: _Builder, node: Node, pairs: dict[Node, Node]) -> Node:
    """The pair; a complex placeholder's pair is the placeholder itself, which reads as
    complex to its users: they get a (no-op) view of it instead."""
    pair = pairs[_args(node)[0]]
    return b(aten.view.default, pair, list(pair.meta["val"].shape)) if pair in pairs else pair


@_rule(aten.clone.default, aten.alias.default, aten.resolve_conj.default, aten.lift_fresh_copy.default)
def _same(b: _Builder, node: Node, pairs: dict[Node, Node]) -> Node:
    return pairs[_args(node)[0]]


@_rule(aten._conj.default, aten.conj_physical.default, aten._conj_physical.default)
def _conj(b: _Builder, node: Node, pairs: dict[Node, Node]) -> Node:
    pair = pairs[_args(node)[0]]
    return b.pack(b.real(pair), b(aten.neg.default, b.imag(pair)))


@_rule(aten.neg.default)
def _neg(b: _Builder, node: Node, pairs: dict[Node, Node]) -> Node:
    return b(aten.neg.default, pairs[_args(node)[0]])


@_rule(aten.view.default, aten._unsafe_view.default, aten.reshape.default)
def _view(b: _Builder, node: Node, pairs: dict[Node, Node]) -> Node:
    return b(aten.reshape.default, pairs[_args(node)[0]], [*node.meta["val"].shape, 2])


@_rule(aten.expand.default)
def _expand(b: _Builder, node: Node, pairs: dict[Node, Node]) -> Node:
    return b(aten.expand.default, pairs[_args(node)[0]], [*node.meta["val"].shape, 2])


@_rule(aten.permute.default)
def _permute(b: _Builder, node: Node, pairs: dict[Node, Node]) -> Node:
    rank = len(_args(node)[1])
    return b(aten.permute.default, pairs[_args(node)[0]], [_dim(d, rank) for d in _args(node)[1]] + [rank])


@_rule(aten.transpose.int)
def _transpose(b: _Builder, node: Node, pairs: dict[Node, Node]) -> Node:
    rank = b.rank(node)
    return b(aten.transpose.int, pairs[_args(node)[0]], _dim(_args(node)[1], rank), _dim(_args(node)[2], rank))


@_rule(aten.select.int)
def _select(b: _Builder, node: Node, pairs: dict[Node, Node]) -> Node:
    source = _args(node)[0]
    return b(aten.select.int, pairs[source], _dim(_args(node)[1], b.rank(source)), _args(node)[2])


@_rule(aten.slice.Tensor)
def _slice(b: _Builder, node: Node, pairs: dict[Node, Node]) -> Node:
    source, dim, *rest = _args(node)
    return b(aten.slice.Tensor, pairs[source], _dim(dim, b.rank(source)), *rest)


@_rule(aten.unsqueeze.default)
def _unsqueeze(b: _Builder, node: Node, pairs: dict[Node, Node]) -> Node:
    return b(aten.unsqueeze.default, pairs[_args(node)[0]], _dim(_args(node)[1], b.rank(node)))


@_rule(aten.squeeze.dims, aten.squeeze.dim)
def _squeeze(b: _Builder, node: Node, pairs: dict[Node, Node]) -> Node:
    source = _args(node)[0]
    dims = _args(node)[1] if isinstance(_args(node)[1], list | tuple) else [_args(node)[1]]
    return b(aten.squeeze.dims, pairs[source], [_dim(d, b.rank(source)) for d in dims])


@_rule(aten.index_select.default)
def _index_select(b: _Builder, node: Node, pairs: dict[Node, Node]) -> Node:
    source, dim, index = _args(node)[:3]
    return b(aten.index_select.default, pairs[source], _dim(dim, b.rank(source)), index)


@_rule(aten.index.Tensor)
def _index(b: _Builder, node: Node, pairs: dict[Node, Node]) -> Node:
    """Indices read the leading dims; the pair's trailing 2 comes along whole."""
    source, indices = _args(node)[:2]
    return b(aten.index.Tensor, pairs[source], indices)


@_rule(aten.repeat.default)
def _repeat(b: _Builder, node: Node, pairs: dict[Node, Node]) -> Node:
    source, repeats = _args(node)[:2]
    return b(aten.repeat.default, pairs[source], [*repeats, 1])


@_rule(aten.cat.default)
def _cat(b: _Builder, node: Node, pairs: dict[Node, Node]) -> Node:
    """Real or integer operands (type promotion) join as (x, 0) in the result's real dtype."""
    dim = _args(node)[1] if len(_args(node)) > 1 else 0
    real_dtype = _REAL_OF[node.meta["val"].dtype]

    def pair(value: Node) -> Node:
        if value in pairs:
            return b(aten._to_copy.default, pairs[value], dtype=real_dtype)
        real = b(aten._to_copy.default, value, dtype=real_dtype)
        return b.pack(real, b(aten.zeros_like.default, real))

    return b(aten.cat.default, [pair(v) for v in _args(node)[0]], _dim(dim, b.rank(node)))


@_rule(aten.constant_pad_nd.default)
def _pad(b: _Builder, node: Node, pairs: dict[Node, Node]) -> Node:
    """The pair dim (last) is not padded; a complex pad value pads each part with its own."""
    source, pad, *rest = _args(node)
    value = complex(rest[0]) if rest else 0j
    if value == 0:
        return b(aten.constant_pad_nd.default, pairs[source], [0, 0, *pad], 0.0)
    real = b(aten.constant_pad_nd.default, b.real(pairs[source]), list(pad), value.real)
    imag = b(aten.constant_pad_nd.default, b.imag(pairs[source]), list(pad), value.imag)
    return b.pack(real, imag)


@_rule(aten.flip.default)
def _flip(b: _Builder, node: Node, pairs: dict[Node, Node]) -> Node:
    source, dims = _args(node)[:2]
    return b(aten.flip.default, pairs[source], [_dim(d, b.rank(source)) for d in dims])


_OVER_DIMS: dict[Any, Any] = {aten.sum.default: aten.sum.dim_IntList, aten.mean.default: aten.mean.dim}


@_rule(aten.sum.dim_IntList, aten.mean.dim, *_OVER_DIMS)
def _sum(b: _Builder, node: Node, pairs: dict[Node, Node]) -> Node:
    source = _args(node)[0]
    rank = b.rank(source)
    dims = _args(node)[1] if len(_args(node)) > 1 and _args(node)[1] else list(range(rank))
    keepdim = _args(node)[2] if len(_args(node)) > 2 else node.kwargs.get("keepdim", False)
    real_dtype = _REAL_OF[node.meta["val"].dtype]  # (a dtype argument, `z.sum(dtype=torch.complex128)`)
    target = _OVER_DIMS.get(node.target, node.target)
    return b(target, pairs[source], [_dim(d, rank) for d in dims], keepdim, dtype=real_dtype)


@_rule(aten.var.correction)
def _var(b: _Builder, node: Node, pairs: dict[Node, Node]) -> Node:
    """A complex variance is real: the mean squared modulus of the deviation, the variance of the
    real parts plus that of the imaginary parts (same dims and correction)."""
    source = _args(node)[0]
    rank = b.rank(source)
    dims = _args(node)[1] if len(_args(node)) > 1 and _args(node)[1] is not None else list(range(rank))
    kwargs = {key: value for key, value in node.kwargs.items() if key in ("correction", "keepdim")}
    spread = b(aten.var.correction, pairs[source], [_dim(d, rank) for d in dims], **kwargs)
    return b(aten.sum.dim_IntList, spread, [-1])


def _split_moments(graph: torch.fx.Graph, mode: Any) -> None:
    """Each `var_mean`/`std_mean` of a complex tensor as its own `var`/`std` and `mean` (whose pair
    rules apply); the results' getitems read them."""
    for node in list(graph.nodes):
        if node.target not in _MOMENTS or not _is_complex(_args(node)[0].meta.get("val")):
            continue
        source, dims = _args(node)[0], (_args(node)[1] if len(_args(node)) > 1 else None)
        keepdim = node.kwargs.get("keepdim", False)
        b = _Builder(graph, node, mode)
        spread = b(aten.var.correction, source, dims, correction=node.kwargs.get("correction"), keepdim=keepdim)
        if node.target is aten.std_mean.correction:
            spread = b(aten.sqrt.default, spread)
        rank = source.meta["val"].dim()
        mean = b(aten.mean.dim, source, list(range(rank)) if dims is None else dims, keepdim)
        for user in list(node.users):
            user.replace_all_uses_with((spread, mean)[user.args[1]])
            graph.erase_node(user)
        graph.erase_node(node)


_MOMENTS = (aten.var_mean.correction, aten.std_mean.correction)


# --------------------------------------------------------------------------
# Arithmetic
# --------------------------------------------------------------------------


def _parts(b: _Builder, value: Any, pairs: dict[Node, Node]) -> tuple[Any, Any]:
    """(real, imag) of an operand: a complex node's pair, a real tensor or number (imag None)."""
    if isinstance(value, Node) and value in pairs:
        pair = pairs[value]
        return b.real(pair), b.imag(pair)
    if isinstance(value, complex):
        return value.real, value.imag
    return value, None


def _times(b: _Builder, x: Any, y: Any) -> Any:
    if x is None or y is None:
        return None
    if isinstance(x, Node) or isinstance(y, Node):
        return b(aten.mul.Tensor, x, y) if isinstance(x, Node) else b(aten.mul.Tensor, y, x)
    return x * y


def _plus(b: _Builder, x: Any, y: Any, sign: float = 1.0) -> Any:
    """x + sign * y, with None as zero."""
    if y is None:
        return x
    if x is None:
        return b(aten.mul.Tensor, y, sign) if isinstance(y, Node) else sign * y
    if isinstance(x, Node):
        return b(aten.add.Tensor, x, y, alpha=sign) if isinstance(y, Node) else b(aten.add.Tensor, x, sign * y)
    return b(aten.add.Tensor, b(aten.mul.Tensor, y, sign), x) if isinstance(y, Node) else x + sign * y


def _as_tensor(b: _Builder, value: Any, like: Node) -> Node:
    """A real part that may be a number or None as a tensor of `like`'s dtype (a number or None
    filled in `like`'s shape; a tensor as it is, for the caller to expand: never through
    `like * 0`, which is NaN where `like` is infinite or NaN, and the other part is not)."""
    dtype = like.meta["val"].dtype
    if isinstance(value, Node):
        return value if value.meta["val"].dtype == dtype else b(aten._to_copy.default, value, dtype=dtype)
    return b(aten.full_like.default, like, 0.0 if value is None else value)


def _pack_parts(b: _Builder, node: Node, real: Any, imag: Any) -> Node:
    """The pair of a complex result from parts that may be numbers or None, broadcast to its shape."""
    shape = list(node.meta["val"].shape)
    like = next(v for v in (real, imag) if isinstance(v, Node))
    real, imag = _as_tensor(b, real, like), _as_tensor(b, imag, like)
    real, imag = (b(aten.expand.default, v, shape) if list(v.meta["val"].shape) != shape else v for v in (real, imag))
    return b.pack(real, imag)


@_rule(aten.mul.Tensor, aten.mul.Scalar)
def _mul(b: _Builder, node: Node, pairs: dict[Node, Node]) -> Node:
    """The complex product; a real operand is promoted to x + 0i first, as torch does, so an
    infinite or NaN part meets its zero (inf * 0 is NaN in eager's result too)."""
    (ar, ai), (br, bi) = (_parts(b, v, pairs) for v in _args(node)[:2])
    ai, bi = (0.0 if part is None else part for part in (ai, bi))
    real = _plus(b, _times(b, ar, br), _times(b, ai, bi), -1.0)
    imag = _plus(b, _times(b, ar, bi), _times(b, ai, br))
    return _pack_parts(b, node, real, imag)


@_rule(aten.add.Tensor, aten.add.Scalar, aten.sub.Tensor, aten.sub.Scalar)
def _add(b: _Builder, node: Node, pairs: dict[Node, Node]) -> Node:
    alpha: float = node.kwargs.get("alpha", _args(node)[2] if len(_args(node)) > 2 else 1)  # type: ignore[assignment]
    sign = -alpha if node.target in (aten.sub.Tensor, aten.sub.Scalar) else alpha
    (ar, ai), (br, bi) = (_parts(b, v, pairs) for v in _args(node)[:2])
    return _pack_parts(b, node, _plus(b, ar, br, sign), _plus(b, ai, bi, sign))


@_rule(aten.div.Tensor, aten.div.Scalar)
def _div(b: _Builder, node: Node, pairs: dict[Node, Node]) -> Node:
    """a / b = a * conj(b) / |b|^2 (a real divisor divides both parts)."""
    (ar, ai), (br, bi) = (_parts(b, v, pairs) for v in _args(node)[:2])
    if bi is None:
        inverse = b(aten.reciprocal.default, br) if isinstance(br, Node) else 1.0 / br
        return _pack_parts(b, node, _times(b, ar, inverse), _times(b, ai, inverse))
    norm = _plus(b, _times(b, br, br), _times(b, bi, bi))
    real = _plus(b, _times(b, ar, br), _times(b, ai, bi))
    imag = _plus(b, _times(b, ai, br), _times(b, ar, bi), -1.0)
    return _pack_parts(b, node, b(aten.div.Tensor, real, norm), b(aten.div.Tensor, imag, norm))


def _reciprocal_parts(b: _Builder, real: Node, imag: Node) -> tuple[Node, Node]:
    """1 / z = conj(z) / |z|^2."""
    norm = b(aten.add.Tensor, b(aten.mul.Tensor, real, real), b(aten.mul.Tensor, imag, imag))
    return b(aten.div.Tensor, real, norm), b(aten.div.Tensor, b(aten.neg.default, imag), norm)


@_rule(aten.reciprocal.default)
def _reciprocal(b: _Builder, node: Node, pairs: dict[Node, Node]) -> Node:
    pair = pairs[_args(node)[0]]
    return b.pack(*_reciprocal_parts(b, b.real(pair), b.imag(pair)))


def _product(b: _Builder, x: tuple[Node, Node], y: tuple[Node, Node]) -> tuple[Node, Node]:
    (xr, xi), (yr, yi) = x, y
    real = b(aten.sub.Tensor, b(aten.mul.Tensor, xr, yr), b(aten.mul.Tensor, xi, yi))
    return real, b(aten.add.Tensor, b(aten.mul.Tensor, xr, yi), b(aten.mul.Tensor, xi, yr))


MAX_POWER_BY_PRODUCTS = 8
"""Integer exponents up to this size are products of z (exact where torch's are)."""


@_rule(aten.pow.Tensor_Scalar)
def _pow(b: _Builder, node: Node, pairs: dict[Node, Node]) -> Node:
    """z ** p for a real number p: products of z for a small nonzero integer p (then
    the reciprocal for a negative one), else |z|^p (cos p theta, sin p theta)."""
    source, exponent = _args(node)[:2]
    if isinstance(exponent, complex):
        raise _refuse(node, "a complex exponent")
    pair = pairs[source]
    real, imag = b.real(pair), b.imag(pair)
    if float(exponent).is_integer() and 0 < abs(exponent) <= MAX_POWER_BY_PRODUCTS:
        power = (real, imag)
        for _ in range(int(abs(exponent)) - 1):
            power = _product(b, power, (real, imag))
        result = b.pack(*power)
        if exponent > 0:
            return result
        norm = b(aten.add.Tensor, b(aten.mul.Tensor, power[0], power[0]), b(aten.mul.Tensor, power[1], power[1]))
        return b.pack(b(aten.div.Tensor, power[0], norm), b(aten.div.Tensor, b(aten.neg.default, power[1]), norm))
    square = b(aten.add.Tensor, b(aten.mul.Tensor, real, real), b(aten.mul.Tensor, imag, imag))
    scale = b(aten.pow.Tensor_Scalar, square, exponent / 2)
    angle = b(aten.mul.Tensor, b(aten.atan2.default, imag, real), exponent)
    return b.pack(b(aten.mul.Tensor, scale, b(aten.cos.default, angle)),
                  b(aten.mul.Tensor, scale, b(aten.sin.default, angle)))


@_rule(aten.where.self)
def _where(b: _Builder, node: Node, pairs: dict[Node, Node]) -> Node:
    """where(c, x, y) on both parts (a real operand's imaginary part is 0)."""
    condition, *operands = _args(node)[:3]
    chosen = [_pack_parts(b, node, *_parts(b, value, pairs)) for value in operands]
    return b(aten.where.self, b(aten.unsqueeze.default, condition, -1), *chosen)


@_rule(aten.mm.default, aten.bmm.default)
def _matmul(b: _Builder, node: Node, pairs: dict[Node, Node]) -> Node:
    """(Ar + i Ai)(Br + i Bi) = (Ar Br - Ai Bi) + i (Ar Bi + Ai Br): real matmuls (a real
    operand has no imaginary part)."""
    (ar, ai), (br, bi) = (_parts(b, v, pairs) for v in _args(node)[:2])

    def product(x: Any, y: Any) -> Any:
        return None if x is None or y is None else b(node.target, x, y)

    real = _plus(b, product(ar, br), product(ai, bi), -1.0)
    imag = _plus(b, product(ar, bi), product(ai, br))
    return _pack_parts(b, node, real, imag)


@_rule(aten.complex.default)
def _complex(b: _Builder, node: Node, pairs: dict[Node, Node]) -> Node:
    """torch.complex(real, imag): the pair itself."""
    return _pack_parts(b, node, *_args(node)[:2])


_REAL_OF = {torch.complex64: torch.float32, torch.complex128: torch.float64, torch.complex32: torch.float16}
_COMPLEX_OF = {real: complex_ for complex_, real in _REAL_OF.items()}


@_rule(aten.scalar_tensor.default)
def _scalar_tensor(b: _Builder, node: Node, pairs: dict[Node, Node]) -> Node:
    """A complex number as a rank-0 pair."""
    value = complex(_args(node)[0])
    real_dtype = _REAL_OF[node.meta["val"].dtype]
    return b.pack(*(b(aten.scalar_tensor.default, part, dtype=real_dtype) for part in (value.real, value.imag)))


@_rule(aten.full.default, aten.full_like.default, aten.zeros_like.default, aten.ones_like.default,
       aten.empty.memory_format, aten.empty_like.default, aten.zeros.default, aten.ones.default)
def _filled(b: _Builder, node: Node, pairs: dict[Node, Node]) -> Node:
    """A complex tensor of one value (`zeros_like(z)`, `full(..., 1j)`): each part filled with its own
    (an empty one is zeros: its values are undefined)."""
    target = node.target
    value = complex(_args(node)[1] if target in (aten.full.default, aten.full_like.default) else
                    1 if target in (aten.ones_like.default, aten.ones.default) else 0)
    shape, real_dtype = list(node.meta["val"].shape), _REAL_OF[node.meta["val"].dtype]
    parts = (b(aten.full.default, shape, part, dtype=real_dtype) for part in (value.real, value.imag))
    return b.pack(*parts)


def _pair_of(b: _Builder, value: Node, pairs: dict[Node, Node], real_dtype: torch.dtype) -> Node:
    """A complex node's pair, or a real tensor as (x, 0), in `real_dtype`."""
    if value in pairs:
        pair = pairs[value]
        return pair if pair.meta["val"].dtype == real_dtype else b(aten._to_copy.default, pair, dtype=real_dtype)
    real = b(aten._to_copy.default, value, dtype=real_dtype)
    return b.pack(real, b(aten.zeros_like.default, real))


@_rule(aten.copy.default)
def _copy(b: _Builder, node: Node, pairs: dict[Node, Node]) -> Node:
    """`copy(z, w)`: w's pair (a real w as (w, 0)) broadcast to z's shape, in z's dtype."""
    real_dtype = _REAL_OF[node.meta["val"].dtype]
    pair = _pair_of(b, _args(node)[1], pairs, real_dtype)
    shape = [*node.meta["val"].shape, 2]
    return pair if list(pair.meta["val"].shape) == shape else b(aten.expand.default, pair, shape)


@_rule(aten.slice_scatter.default, aten.select_scatter.default)
def _scatter_into(b: _Builder, node: Node, pairs: dict[Node, Node]) -> Node:
    """`z[..., a:b] = w` (and `z[..., i] = w`): the pairs scattered along the same dim (the pair's 2 whole)."""
    base, source, dim, *rest = _args(node)
    real_dtype = _REAL_OF[node.meta["val"].dtype]
    into, part = _pair_of(b, base, pairs, real_dtype), _pair_of(b, source, pairs, real_dtype)
    return b(node.target, into, part, _dim(dim, b.rank(node)), *rest)


@_rule(aten._to_copy.default)
def _to_copy(b: _Builder, node: Node, pairs: dict[Node, Node]) -> Node:
    """real -> complex: (x, 0); complex -> complex: both parts cast; complex -> real: the real part."""
    source, target = _args(node)[0], node.meta["val"].dtype
    if source not in pairs:
        real = b(aten._to_copy.default, source, dtype=_REAL_OF[target])
        return b.pack(real, b(aten.zeros_like.default, real))
    pair = pairs[source]
    if target.is_complex:
        return b(aten._to_copy.default, pair, dtype=_REAL_OF[target])
    return b(aten._to_copy.default, b.real(pair), dtype=target)


@_rule(aten.abs.default)
def _abs(b: _Builder, node: Node, pairs: dict[Node, Node]) -> Node:
    pair = pairs[_args(node)[0]]
    real, imag = b.real(pair), b.imag(pair)
    return b(aten.sqrt.default, b(aten.add.Tensor, b(aten.mul.Tensor, real, real), b(aten.mul.Tensor, imag, imag)))


@_rule(aten.linalg_vector_norm.default)
def _vector_norm(b: _Builder, node: Node, pairs: dict[Node, Node]) -> Node:
    """A complex vector norm is the real norm of the magnitudes |z| (any ord, dim, keepdim)."""
    magnitude = _abs(b, node, pairs)
    rest = _args(node)[1:]
    kwargs: dict[str, Any] = dict(node.kwargs)
    if kwargs.get("dtype") is not None:
        kwargs["dtype"] = _REAL_OF.get(kwargs["dtype"], kwargs["dtype"])
    return b(aten.linalg_vector_norm.default, magnitude, *rest, **kwargs)


@_rule(aten.angle.default)
def _angle(b: _Builder, node: Node, pairs: dict[Node, Node]) -> Node:
    pair = pairs[_args(node)[0]]
    return b(aten.atan2.default, b.imag(pair), b.real(pair))


@_rule(aten.polar.default)
def _polar(b: _Builder, node: Node, pairs: dict[Node, Node]) -> Node:
    magnitude, angle = _args(node)[:2]
    return _pack_parts(
        b, node, b(aten.mul.Tensor, magnitude, b(aten.cos.default, angle)),
        b(aten.mul.Tensor, magnitude, b(aten.sin.default, angle)),
    )


def _exp_parts(b: _Builder, real: Node, imag: Node) -> tuple[Node, Node]:
    """exp(a + ib) = e^a (cos b + i sin b)."""
    scale = b(aten.exp.default, real)
    return b(aten.mul.Tensor, scale, b(aten.cos.default, imag)), b(aten.mul.Tensor, scale, b(aten.sin.default, imag))


@_rule(aten.exp.default)
def _exp(b: _Builder, node: Node, pairs: dict[Node, Node]) -> Node:
    pair = pairs[_args(node)[0]]
    return b.pack(*_exp_parts(b, b.real(pair), b.imag(pair)))


@_rule(aten.log.default)
def _log(b: _Builder, node: Node, pairs: dict[Node, Node]) -> Node:
    """log z = log|z| + i angle(z) (the principal branch, as torch's)."""
    return b.pack(b(aten.log.default, _abs(b, node, pairs)), _angle(b, node, pairs))


@_rule(aten.pow.Tensor_Tensor)
def _pow_tensor(b: _Builder, node: Node, pairs: dict[Node, Node]) -> Node:
    """z ** w = exp(w log z) (a real base or exponent has no imaginary part)."""
    base, exponent = _args(node)[:2]
    (br, bi), (er, ei) = _parts(b, base, pairs), _parts(b, exponent, pairs)
    if bi is None:
        br = b(aten._to_copy.default, br, dtype=_REAL_OF[node.meta["val"].dtype])
        bi = b(aten.zeros_like.default, br)
    log_real, log_imag = b(aten.log.default, _modulus(b, br, bi)), b(aten.atan2.default, bi, br)
    real = _plus(b, _times(b, log_real, er), _times(b, log_imag, ei), -1.0)
    imag = _plus(b, _times(b, log_real, ei), _times(b, log_imag, er))
    real, imag = _as_tensor(b, real, log_real), _as_tensor(b, imag, log_real)
    shape = list(node.meta["val"].shape)
    real, imag = _exp_parts(b, *(b(aten.expand.default, v, shape) for v in (real, imag)))
    return b.pack(real, imag)


_LOG_BASES: dict[Any, float] = {aten.log2.default: 2.0, aten.log10.default: 10.0}


@_rule(*_LOG_BASES)
def _log_base(b: _Builder, node: Node, pairs: dict[Node, Node]) -> Node:
    """log_k z = log z / ln k (both parts)."""
    return b(aten.mul.Tensor, _log(b, node, pairs), 1.0 / math.log(_LOG_BASES[node.target]))


@_rule(aten.log1p.default)
def _log1p(b: _Builder, node: Node, pairs: dict[Node, Node]) -> Node:
    """log(1 + z)."""
    pair = pairs[_args(node)[0]]
    real, imag = b(aten.add.Scalar, b.real(pair), 1.0), b.imag(pair)
    return b.pack(b(aten.log.default, _modulus(b, real, imag)), b(aten.atan2.default, imag, real))


@_rule(aten.expm1.default, aten.exp2.default)
def _exp_variants(b: _Builder, node: Node, pairs: dict[Node, Node]) -> Node:
    """expm1 z = exp z - 1; exp2 z = exp(z ln 2)."""
    pair = pairs[_args(node)[0]]
    real, imag = b.real(pair), b.imag(pair)
    if node.target is aten.exp2.default:
        real, imag = (b(aten.mul.Tensor, part, math.log(2.0)) for part in (real, imag))
    real, imag = _exp_parts(b, real, imag)
    return b.pack(b(aten.sub.Scalar, real, 1.0) if node.target is aten.expm1.default else real, imag)


_COMPARISONS = (aten.eq.Tensor, aten.eq.Scalar, aten.ne.Tensor, aten.ne.Scalar)


@_rule(*_COMPARISONS)
def _equal(b: _Builder, node: Node, pairs: dict[Node, Node]) -> Node:
    """z == w where both parts are equal (a real operand's imaginary part is 0); != its negation."""
    (ar, ai), (br, bi) = (_parts(b, v, pairs) for v in _args(node)[:2])

    def same(x: Any, y: Any) -> Node:
        x, y = (0.0 if v is None else v for v in (x, y))
        if not isinstance(x, Node):
            x, y = y, x
        if not isinstance(x, Node):
            return b(aten.full.default, list(node.meta["val"].shape), float(x) == float(y), dtype=torch.bool)
        return b(aten.eq.Tensor if isinstance(y, Node) else aten.eq.Scalar, x, y)

    equal = b(aten.logical_and.default, same(ar, br), same(ai, bi))
    equal = b(aten.expand.default, equal, list(node.meta["val"].shape))
    return equal if node.target in (aten.eq.Tensor, aten.eq.Scalar) else b(aten.logical_not.default, equal)


_PART_TESTS: dict[Any, Any] = {aten.isfinite.default: aten.logical_and.default,
                               aten.isnan.default: aten.logical_or.default, aten.isinf.default: aten.logical_or.default}


@_rule(*_PART_TESTS)
def _part_test(b: _Builder, node: Node, pairs: dict[Node, Node]) -> Node:
    """isfinite where both parts are, isnan and isinf where either is."""
    pair = pairs[_args(node)[0]]
    return b(_PART_TESTS[node.target], b(node.target, b.real(pair)), b(node.target, b.imag(pair)))


def _modulus(b: _Builder, real: Node, imag: Node) -> Node:
    return b(aten.sqrt.default, b(aten.add.Tensor, b(aten.mul.Tensor, real, real), b(aten.mul.Tensor, imag, imag)))


@_rule(aten.sqrt.default)
def _sqrt(b: _Builder, node: Node, pairs: dict[Node, Node]) -> Node:
    pair = pairs[_args(node)[0]]
    return b.pack(*_sqrt_parts(b, b.real(pair), b.imag(pair)))


@_rule(aten.rsqrt.default)
def _rsqrt(b: _Builder, node: Node, pairs: dict[Node, Node]) -> Node:
    """1 / sqrt(z), the principal root's reciprocal."""
    pair = pairs[_args(node)[0]]
    return b.pack(*_reciprocal_parts(b, *_sqrt_parts(b, b.real(pair), b.imag(pair))))


def _sqrt_parts(b: _Builder, real: Node, imag: Node) -> tuple[Node, Node]:
    """The principal square root, without cancellation: t = sqrt((|z| + |a|) / 2) is the larger part,
    b / 2t the other (the imaginary part takes b's sign, -0 included, as C's csqrt)."""
    larger = b(aten.sqrt.default, b(aten.mul.Scalar, b(aten.add.Tensor, _modulus(b, real, imag),
                                                        b(aten.abs.default, real)), 0.5))
    zero = b(aten.eq.Scalar, larger, 0.0)
    other = b(aten.div.Tensor, imag, b(aten.where.self, zero, b(aten.add.Scalar, larger, 1.0),
                                       b(aten.mul.Scalar, larger, 2.0)))
    right = b(aten.ge.Scalar, real, 0.0)
    return (b(aten.where.self, right, larger, b(aten.abs.default, other)),
            b(aten.where.self, right, other, b(aten.copysign.Tensor, larger, imag)))


@_rule(aten.tanh.default)
def _tanh(b: _Builder, node: Node, pairs: dict[Node, Node]) -> Node:
    pair = pairs[_args(node)[0]]
    return b.pack(*_tanh_parts(b, b.real(pair), b.imag(pair)))


@_rule(aten.tan.default)
def _tan(b: _Builder, node: Node, pairs: dict[Node, Node]) -> Node:
    """tan z = -i tanh(iz), iz = -b + ia."""
    pair = pairs[_args(node)[0]]
    real, imag = _tanh_parts(b, b(aten.neg.default, b.imag(pair)), b.real(pair))
    return b.pack(imag, b(aten.neg.default, real))


def _tanh_parts(b: _Builder, real: Node, imag: Node) -> tuple[Node, Node]:
    """tanh(a + ib) = (sinh 2a + i sin 2b) / (cosh 2a + cos 2b), both scaled by 2e (e = exp(-2|a|), which
    never overflows): (sign(a) (1 - e^2) + i 2e sin 2b) / (1 + e^2 + 2e cos 2b)."""
    twice_imag = b(aten.mul.Scalar, imag, 2.0)
    e = b(aten.exp.default, b(aten.mul.Scalar, b(aten.abs.default, real), -2.0))
    squared, twice_e = b(aten.mul.Tensor, e, e), b(aten.mul.Scalar, e, 2.0)
    denominator = b(aten.add.Tensor, b(aten.add.Scalar, squared, 1.0),
                    b(aten.mul.Tensor, twice_e, b(aten.cos.default, twice_imag)))
    numerator = b(aten.mul.Tensor, b(aten.sign.default, real), b(aten.rsub.Scalar, squared, 1.0))
    return (b(aten.div.Tensor, numerator, denominator),
            b(aten.div.Tensor, b(aten.mul.Tensor, twice_e, b(aten.sin.default, twice_imag)), denominator))


_CIRCULAR: dict[Any, tuple[Any, Any, Any, Any, float]] = {  # f(a + ib) = f1(a) g1(b) + i sign f2(a) g2(b)
    aten.sin.default: (aten.sin.default, aten.cosh.default, aten.cos.default, aten.sinh.default, 1.0),
    aten.cos.default: (aten.cos.default, aten.cosh.default, aten.sin.default, aten.sinh.default, -1.0),
    aten.sinh.default: (aten.sinh.default, aten.cos.default, aten.cosh.default, aten.sin.default, 1.0),
    aten.cosh.default: (aten.cosh.default, aten.cos.default, aten.sinh.default, aten.sin.default, 1.0),
}


@_rule(*_CIRCULAR)
def _circular(b: _Builder, node: Node, pairs: dict[Node, Node]) -> Node:
    """sin, cos, sinh and cosh by their addition formulas (sin(a + ib) = sin a cosh b + i cos a sinh b, ...)."""
    pair = pairs[_args(node)[0]]
    real, imag = b.real(pair), b.imag(pair)
    f1, g1, f2, g2, sign = _CIRCULAR[node.target]
    first = b(aten.mul.Tensor, b(f1, real), b(g1, imag))
    second = b(aten.mul.Tensor, b(aten.mul.Tensor, b(f2, real), b(g2, imag)), sign)
    return b.pack(first, second)


def _roots_about_one(b: _Builder, real: Node, imag: Node) -> tuple[tuple[Node, Node], tuple[Node, Node]]:
    """sqrt(1 - z) and sqrt(1 + z), the roots Kahan's asin and acos are built from (the zero's sign, kept
    by `neg`, picks each branch cut's side)."""
    return (_sqrt_parts(b, b(aten.rsub.Scalar, real, 1.0), b(aten.neg.default, imag)),
            _sqrt_parts(b, b(aten.add.Scalar, real, 1.0), imag))


def _asin_parts(b: _Builder, real: Node, imag: Node) -> tuple[Node, Node]:
    """asin z with s = sqrt(1 - z), t = sqrt(1 + z): atan2(a, Re(s t)) + i asinh(Im(conj(s) t)), free of
    cancellation (W. Kahan, "Branch cuts for complex elementary functions", 1987)."""
    (sr, si), (tr, ti) = _roots_about_one(b, real, imag)
    product = b(aten.sub.Tensor, b(aten.mul.Tensor, sr, tr), b(aten.mul.Tensor, si, ti))
    across = b(aten.sub.Tensor, b(aten.mul.Tensor, sr, ti), b(aten.mul.Tensor, si, tr))
    return b(aten.atan2.default, real, product), b(aten.asinh.default, across)


def _atanh_parts(b: _Builder, real: Node, imag: Node) -> tuple[Node, Node]:
    """atanh z = log1p(4a / ((1 - a)^2 + b^2)) / 4 + i atan2(2b, (1 - a)(1 + a) - b^2) / 2 (the real part
    without cancellation near 0; the imaginary part's branch cut side from b's sign)."""
    rest = b(aten.rsub.Scalar, real, 1.0)
    squared = b(aten.mul.Tensor, imag, imag)
    below = b(aten.add.Tensor, b(aten.mul.Tensor, rest, rest), squared)
    ratio = b(aten.div.Tensor, b(aten.mul.Scalar, real, 4.0), below)
    across = b(aten.sub.Tensor, b(aten.mul.Tensor, rest, b(aten.add.Scalar, real, 1.0)), squared)
    return (b(aten.mul.Scalar, b(aten.log1p.default, ratio), 0.25),
            b(aten.mul.Scalar, b(aten.atan2.default, b(aten.mul.Scalar, imag, 2.0), across), 0.5))


def _rotated(parts: Callable[[_Builder, Node, Node], tuple[Node, Node]]) -> Callable[..., tuple[Node, Node]]:
    """f(z) = -i g(iz), iz = -b + ia: asinh from asin, atan from atanh."""
    def rotated(b: _Builder, real: Node, imag: Node) -> tuple[Node, Node]:
        inner_real, inner_imag = parts(b, b(aten.neg.default, imag), real)
        return inner_imag, b(aten.neg.default, inner_real)
    return rotated


def _acos_parts(b: _Builder, real: Node, imag: Node) -> tuple[Node, Node]:
    """acos z = 2 atan2(Re s, Re t) + i asinh(Im(conj(t) s)), s = sqrt(1 - z), t = sqrt(1 + z) (Kahan)."""
    (sr, si), (tr, ti) = _roots_about_one(b, real, imag)
    across = b(aten.sub.Tensor, b(aten.mul.Tensor, tr, si), b(aten.mul.Tensor, ti, sr))
    return b(aten.mul.Scalar, b(aten.atan2.default, sr, tr), 2.0), b(aten.asinh.default, across)


def _acosh_parts(b: _Builder, real: Node, imag: Node) -> tuple[Node, Node]:
    """acosh z = asinh(Re(conj(s) t)) + 2i atan2(Im s, Re t), s = sqrt(z - 1), t = sqrt(z + 1) (Kahan)."""
    sr, si = _sqrt_parts(b, b(aten.sub.Scalar, real, 1.0), imag)
    tr, ti = _sqrt_parts(b, b(aten.add.Scalar, real, 1.0), imag)
    product = b(aten.add.Tensor, b(aten.mul.Tensor, sr, tr), b(aten.mul.Tensor, si, ti))
    return b(aten.asinh.default, product), b(aten.mul.Scalar, b(aten.atan2.default, si, tr), 2.0)


_INVERSES: dict[Any, Callable[[_Builder, Node, Node], tuple[Node, Node]]] = {
    aten.asin.default: _asin_parts, aten.acos.default: _acos_parts, aten.asinh.default: _rotated(_asin_parts),
    aten.atanh.default: _atanh_parts, aten.atan.default: _rotated(_atanh_parts), aten.acosh.default: _acosh_parts,
}


@_rule(*_INVERSES)
def _inverse(b: _Builder, node: Node, pairs: dict[Node, Node]) -> Node:
    """The inverse circular and hyperbolic functions, on the principal branches torch's (C's) are on."""
    pair = pairs[_args(node)[0]]
    return b.pack(*_INVERSES[node.target](b, b.real(pair), b.imag(pair)))


@_rule(aten.sigmoid.default)
def _sigmoid(b: _Builder, node: Node, pairs: dict[Node, Node]) -> Node:
    """1 / (1 + exp(-z))."""
    pair = pairs[_args(node)[0]]
    real, imag = _exp_parts(b, b(aten.neg.default, b.real(pair)), b(aten.neg.default, b.imag(pair)))
    return b.pack(*_reciprocal_parts(b, b(aten.add.Scalar, real, 1.0), imag))


@_rule(aten.cumsum.default)
def _cumsum(b: _Builder, node: Node, pairs: dict[Node, Node]) -> Node:
    """Both parts summed along the dim (a complex dtype argument as its real dtype)."""
    source, dim = _args(node)[:2]
    real_dtype = _REAL_OF[node.meta["val"].dtype]
    pair = pairs[source]
    return b(aten.cumsum.default, pair, _dim(dim, b.rank(source)), dtype=real_dtype)


def _to_polar(b: _Builder, pair: Node) -> tuple[Node, Node]:
    """A pair's (modulus, angle): a product of complex values is the product of their moduli
    turned by the sum of their angles (a zero has modulus 0, whatever its angle)."""
    real, imag = b.real(pair), b.imag(pair)
    return _modulus(b, real, imag), b(aten.atan2.default, imag, real)


def _from_polar(b: _Builder, size: Node, turn: Node) -> Node:
    """The pair of size * e^(i turn)."""
    return b.pack(b(aten.mul.Tensor, size, b(aten.cos.default, turn)),
                  b(aten.mul.Tensor, size, b(aten.sin.default, turn)))


@_rule(aten.prod.dim_int, aten.prod.default, aten.cumprod.default)
def _prod(b: _Builder, node: Node, pairs: dict[Node, Node]) -> Node:
    """In polar form: the product of the moduli and the sum of the angles (along the dim, running for cumprod)."""
    source, *rest = _args(node)
    modulus, angle = _to_polar(b, pairs[source])
    real_dtype = _REAL_OF[node.meta["val"].dtype]
    if node.target is aten.prod.default:
        size, turn = b(aten.prod.default, modulus, dtype=real_dtype), b(aten.sum.default, angle, dtype=real_dtype)
    else:
        dim = _dim(rest[0], b.rank(source))
        keepdim = rest[1] if len(rest) > 1 else node.kwargs.get("keepdim", False)
        keep = [keepdim] if node.target is aten.prod.dim_int else []
        summed = aten.cumsum.default if node.target is aten.cumprod.default else aten.sum.dim_IntList
        size = b(node.target, modulus, dim, *keep, dtype=real_dtype)
        turn = b(summed, angle, dim if summed is aten.cumsum.default else [dim], *keep, dtype=real_dtype)
    return _from_polar(b, size, turn)


@_rule(aten.scatter_reduce.two)
def _scatter_reduce(b: _Builder, node: Node, pairs: dict[Node, Node]) -> Node:
    """scatter_reduce (and index_reduce, decomposed to it) of complex values: 'sum' and 'mean' on each
    part (a mean divides both by the same count); 'prod' in polar form, the moduli reduced by 'prod' and
    the angles by 'sum' with the same index and include_self (without it, the written positions start
    from modulus 1 and angle 0, as torch's start from 1). 'amax'/'amin' are refused: complex numbers
    have no order (torch refuses them too)."""
    base, dim, index, source, reduce = _args(node)[:5]
    include_self = node.kwargs.get("include_self", True)  # keyword-only in the schema
    if reduce in ("sum", "mean"):
        return _per_part(b, node, pairs)
    if reduce != "prod":
        raise _refuse(node, f"reduce='{reduce}' on complex values, which have no order; torch refuses it too")
    real_dtype = _REAL_OF[node.meta["val"].dtype]
    (size, turn), (factor, step) = (_to_polar(b, _pair_of(b, v, pairs, real_dtype)) for v in (base, source))
    return _from_polar(b, b(aten.scatter_reduce.two, size, dim, index, factor, "prod", include_self=include_self),
                       b(aten.scatter_reduce.two, turn, dim, index, step, "sum", include_self=include_self))


@_rule(aten.logcumsumexp.default)
def _logcumsumexp(b: _Builder, node: Node, pairs: dict[Node, Node]) -> Node:
    """log(sum_{k<=n} exp(z_k)) along the dim, stable: each prefix n shifted by the largest real
    part M_n among its terms (0 where that is infinite), over an [n, k] mask of k <= n, as the real
    converter's O(n^2) form: M_n + log|s_n| + i angle(s_n), s_n = sum_{k<=n} e^(a_k - M_n) e^(i b_k);
    the imaginary part on torch's branch (`_torch_branch`)."""
    source, dim = _args(node)[:2]
    pair, rank = pairs[source], b.rank(source)
    if rank == 0 or node.meta["val"].numel() == 0:
        return pair  # one term, or none: the terms themselves
    dim = _dim(dim, rank)
    real, imag = b.real(pair), b.imag(pair)
    terms_real, terms_imag = (b(aten.unsqueeze.default, part, dim) for part in (real, imag))  # [.., 1(n), k, ..]
    length = int(node.meta["val"].shape[dim])
    index = b(aten.arange.default, length)
    upto = b(aten.le.Tensor, b(aten.unsqueeze.default, index, 0), b(aten.unsqueeze.default, index, 1))
    upto = b(aten.reshape.default, upto, [1] * dim + [length, length] + [1] * (rank - dim - 1))
    masked = b(aten.where.self, upto, terms_real, b(aten.full_like.default, terms_real, float("-inf")))
    peak = b(aten.amax.default, masked, [dim + 1], True)
    infinite = b(aten.eq.Scalar, b(aten.abs.default, peak), float("inf"))
    shift = b(aten.where.self, infinite, b(aten.zeros_like.default, peak), peak)
    weight = b(aten.exp.default, b(aten.sub.Tensor, masked, shift))
    total_real, total_imag = (b(aten.sum.dim_IntList, b(aten.mul.Tensor, weight, b(wave, terms_imag)), [dim + 1])
                              for wave in (aten.cos.default, aten.sin.default))
    shift = b(aten.squeeze.dim, shift, dim + 1)
    result_real = b(aten.add.Tensor, shift, b(aten.log.default, _modulus(b, total_real, total_imag)))
    angle = b(aten.atan2.default, total_imag, total_real)
    return b.pack(result_real, _torch_branch(b, real, imag, result_real, angle, upto, dim))


def _wrapped(b: _Builder, angle: Node) -> Node:
    """`angle` plus the multiple of 2 pi that brings it into [-pi, pi]."""
    turns = b(aten.round.default, b(aten.div.Tensor, angle, 2 * math.pi))
    return b(aten.sub.Tensor, angle, b(aten.mul.Tensor, turns, 2 * math.pi))


def _shifted_on(b: _Builder, value: Node, dim: int, first: float) -> Node:
    """`value` moved one place along `dim`, `first` in the place it leaves."""
    length = int(value.meta["val"].shape[dim])
    head = b(aten.full_like.default, b(aten.slice.Tensor, value, dim, 0, 1), first)
    return b(aten.cat.default, [head, b(aten.slice.Tensor, value, dim, 0, length - 1)], dim)


def _torch_branch(b: _Builder, real: Node, imag: Node, result_real: Node, angle: Node, upto: Node,
                  dim: int) -> Node:
    """The running result's imaginary part as torch's kernel carries it, not wrapped into (-pi, pi]:
    each step adds log1p(exp(smaller - larger)) (an angle within pi/2) to the larger operand by
    real part, the new term (`dominant`: its real part at least the sum's before it) or the sum
    so far. So it is the last dominant term's b_j plus that step's angle, then each later step's
    angle difference wrapped into [-pi, pi] (phase unwrapping: a running sum); the last dominant
    j <= n is a max over the [n, k] mask `upto` of k <= n. A sum of nothing but -inf terms is
    torch's start, -inf + 0i."""
    dominant = b(aten.ge.Tensor, real, _shifted_on(b, result_real, dim, float("-inf")))
    steps = b(aten.cumsum.default, _wrapped(b, b(aten.sub.Tensor, angle, _shifted_on(b, angle, dim, 0.0))), dim)
    base = b(aten.sub.Tensor, b(aten.add.Tensor, imag, _wrapped(b, b(aten.sub.Tensor, angle, imag))), steps)
    rank, length = real.meta["val"].dim(), int(real.meta["val"].shape[dim])
    places = b(aten.reshape.default, b(aten.arange.default, length), [length] + [1] * (rank - dim - 1))
    candidates = b(aten.where.self, dominant, b(aten.expand.default, places, list(real.meta["val"].shape)),
                   b(aten.full_like.default, real, -1, dtype=torch.int64))
    candidates = b(aten.where.self, upto, b(aten.unsqueeze.default, candidates, dim),
                   b(aten.full_like.default, upto, -1, dtype=torch.int64))
    last = b(aten.clamp_min.default, b(aten.amax.default, candidates, [dim + 1]), 0)
    unwrapped = b(aten.add.Tensor, steps, b(aten.gather.default, base, dim, last))
    nothing = b(aten.eq.Scalar, result_real, float("-inf"))
    return b(aten.where.self, nothing, b(aten.zeros_like.default, unwrapped), unwrapped)


@_rule(aten.linalg_matrix_exp.default)
def _matrix_exp(b: _Builder, node: Node, pairs: dict[Node, Node]) -> Node:
    """exp(A + iB) from the real block matrix [[A, -B], [B, A]] (the same algebra: its exponential is
    [[E_r, -E_i], [E_i, E_r]] for exp(A + iB) = E_r + i E_i), whose exponential is a real matrix's
    (torch's own kernel on the host, `rdu.host_call`, as a real matrix's is)."""
    pair = pairs[_args(node)[0]]
    real, imag = b.real(pair), b.imag(pair)
    block = b(aten.cat.default, [b(aten.cat.default, [real, b(aten.neg.default, imag)], -1),
                                 b(aten.cat.default, [imag, real], -1)], -2)
    exponential = b(aten.linalg_matrix_exp.default, block)
    n = int(node.meta["val"].shape[-1])
    left = b(aten.slice.Tensor, exponential, -1, 0, n)
    return b.pack(b(aten.slice.Tensor, left, -2, 0, n), b(aten.slice.Tensor, left, -2, n, 2 * n))


# --------------------------------------------------------------------------
# Factorizations on the host, on the complex values
# --------------------------------------------------------------------------


HOST_PAIRS = "rducc_host_pairs"
"""Meta key of a node run on the host on complex values (`rdu.host_call`'s `pairs`): (the tensor
arguments read as complex from their pairs, the result positions written as pairs)."""


def _runs_on_the_host(node: Node) -> bool:
    """Whether `node` is an ATen op a host call may run (on the host allow-list, not pointwise) with
    complex64/complex128 operands or results: torch's complex kernel runs it whole on the host
    (a complex QR, SVD, eigendecomposition; the eigenvalues of a real matrix)."""
    target = node.target
    if not isinstance(target, torch._ops.OpOverload) or target.namespace != "aten":
        return False
    if torch.Tag.pointwise in target.tags:
        return False
    try:
        admitted(HOST, f"{target._schema.name}.{target._overloadname}")
    except NotCallable:
        return False
    value = node.meta.get("val")
    values = list(value) if isinstance(value, tuple | list) else [value]
    operands = [v.meta.get("val") for v in node.all_input_nodes]
    if not all(isinstance(v, torch.Tensor) for v in values):
        return False
    if any(isinstance(v, torch.Tensor) and v.dtype == torch.complex32 for v in (*values, *operands)):
        return False  # torch's kernels take no complex32; no pair of f16 crosses a host call
    return isinstance(value, torch.Tensor) or all(user.target is operator.getitem for user in node.users)


def _host_call_on_pairs(b: _Builder, node: Node, pairs: dict[Node, Node]) -> list[Node]:
    """`node` on its operands' pairs, marked (`HOST_PAIRS`) to run on the host with complex operands
    and results crossing as pairs; its complex results' pairs are its (or its `getitem`s') pairs.
    Returns the nodes it replaces."""
    target = node.target
    assert isinstance(target, torch._ops.OpOverload)  # `_runs_on_the_host`
    paired = [name for name, v in node_arguments(node).items() if isinstance(v, Node) and v in pairs]
    args, kwargs = torch.fx.node.map_arg((node.args, node.kwargs), lambda v: pairs.get(v, v))
    with b.graph.inserting_before(b.anchor):
        host = b.graph.call_function(target, args, kwargs)
    for key in ("stack_trace", "nn_module_stack"):
        if key in node.meta:
            host.meta[key] = node.meta[key]
    value = node.meta["val"]
    values = [value] if isinstance(value, torch.Tensor) else list(value)
    with b.mode:
        fakes = [torch.view_as_real(torch.empty(v.shape, dtype=v.dtype)) if _is_complex(v) else v for v in values]
    host.meta["val"] = fakes[0] if isinstance(value, torch.Tensor) else type(value)(fakes)
    host.meta[HOST_PAIRS] = (paired, [i for i, v in enumerate(values) if _is_complex(v)])
    results = {node: host} if isinstance(value, torch.Tensor) else {
        user: b(operator.getitem, host, user.args[1]) for user in node.users}
    for old, new in results.items():
        if _is_complex(old.meta.get("val")):
            pairs[old] = new
        else:
            old.replace_all_uses_with(new)
    return [node, *(old for old in results if old is not node)]


# --------------------------------------------------------------------------
# FFT as DFT matrices
# --------------------------------------------------------------------------


def _trig(b: _Builder, rows: int, cols: int, length: int, forward: bool,
          dtype: torch.dtype = torch.float32) -> tuple[Node, Node]:
    """cos and sin of -+2 pi j k / length for j < rows, k < cols, in f32: the phase
    reduced exactly (j k mod length, in integers), and exact zeros where the angle is
    a multiple of pi (sin) or an odd multiple of pi / 2 (cos), as an FFT's twiddles are."""
    j = b(aten.arange.default, rows, dtype=torch.int64)
    k = b(aten.arange.default, cols, dtype=torch.int64)
    product = b(aten.mul.Tensor, b(aten.unsqueeze.default, j, 1), b(aten.unsqueeze.default, k, 0))
    phase = b(aten.remainder.Scalar, product, length)
    if forward:
        phase = b(aten.remainder.Scalar, b(aten.rsub.Scalar, phase, length), length)
    theta = b(aten.mul.Tensor, b(aten._to_copy.default, phase, dtype=dtype), 2 * math.pi / length)
    on_axis = b(aten.eq.Scalar, b(aten.remainder.Scalar, b(aten.mul.Tensor, phase, 2), length), 0)
    quarter = b(aten.eq.Scalar, b(aten.remainder.Scalar, b(aten.mul.Tensor, phase, 4), length), 0)
    off_axis = b(aten.logical_and.default, quarter, b(aten.logical_not.default, on_axis))
    zero = b(aten.full.default, [], 0.0)
    sin = b(aten.where.self, on_axis, zero, b(aten.sin.default, theta))
    cos = b(aten.where.self, off_axis, zero, b(aten.cos.default, theta))
    return cos, sin


def _along(b: _Builder, value: Node, dim: int, matrix: Node) -> Node:
    """`value` times `matrix` [n, m] along `dim` (n becomes m there)."""
    rank = b.rank(value)
    order = [d for d in range(rank) if d != dim] + [dim]
    moved = b(aten.permute.default, value, order)
    shape = list(moved.meta["val"].shape)
    flat = b(aten.reshape.default, moved, [-1, shape[-1]])
    product = b(aten.mm.default, flat, matrix)
    out = b(aten.reshape.default, product, shape[:-1] + [matrix.meta["val"].shape[1]])
    back = [order.index(d) for d in range(rank)]
    return b(aten.permute.default, out, back)


def _dft(b: _Builder, real: Node, imag: Node | None, dim: int, size: int, forward: bool) -> tuple[Node, Node]:
    """sum_j x_j e^(-+ 2 pi i j k / n) along `dim` (size outputs), with x = real + i imag."""
    length = real.meta["val"].shape[dim]
    cos, sin = _trig(b, length, size, length, forward, real.meta["val"].dtype)
    out_real, out_imag = _along(b, real, dim, cos), _along(b, real, dim, sin)
    if imag is not None:
        out_real = b(aten.sub.Tensor, out_real, _along(b, imag, dim, sin))
        out_imag = b(aten.add.Tensor, out_imag, _along(b, imag, dim, cos))
    return out_real, out_imag


def _normalized(b: _Builder, parts: Sequence[Node], mode: int, count: int) -> list[Node]:
    """torch's fft norm modes: 0 none, 1 by 1/sqrt(n), 2 by 1/n (n the transformed elements)."""
    scale = {0: 1.0, 1: 1.0 / math.sqrt(count), 2: 1.0 / count}[mode]
    return list(parts) if scale == 1.0 else [b(aten.mul.Tensor, p, scale) for p in parts]


def _dims(node: Node, source: Node, b: _Builder) -> list[int]:
    rank = b.rank(source)
    return [d % rank for d in _args(node)[1]]


@_rule(aten._fft_r2c.default)
def _fft_r2c(b: _Builder, node: Node, pairs: dict[Node, Node]) -> Node:
    source, _, mode, onesided = _args(node)[:4]
    dims = _dims(node, source, b)
    last = source.meta["val"].shape[dims[-1]]
    real, imag = _dft(b, source, None, dims[-1], last // 2 + 1 if onesided else last, True)
    for dim in dims[:-1]:
        real, imag = _dft(b, real, imag, dim, real.meta["val"].shape[dim], True)
    count = math.prod(source.meta["val"].shape[d] for d in dims)
    return b.pack(*_normalized(b, (real, imag), mode, count))


@_rule(aten._fft_c2c.default)
def _fft_c2c(b: _Builder, node: Node, pairs: dict[Node, Node]) -> Node:
    source, _, mode, forward = _args(node)[:4]
    pair = pairs[source]
    real, imag = b.real(pair), b.imag(pair)
    dims = _dims(node, source, b)
    for dim in dims:
        real, imag = _dft(b, real, imag, dim, real.meta["val"].shape[dim], forward)
    count = math.prod(source.meta["val"].shape[d] for d in dims)
    return b.pack(*_normalized(b, (real, imag), mode, count))


@_rule(aten._fft_c2r.default)
def _fft_c2r(b: _Builder, node: Node, pairs: dict[Node, Node]) -> Node:
    """The inverse of a one-sided transform: the Hermitian half counted twice
    (bins 0 and n/2 once, their imaginary parts ignored, as pocketfft does)."""
    source, _, mode, length = _args(node)[:4]
    pair = pairs[source]
    real, imag = b.real(pair), b.imag(pair)
    dims = _dims(node, source, b)
    for dim in dims[:-1]:
        real, imag = _dft(b, real, imag, dim, real.meta["val"].shape[dim], False)
    half = length // 2 + 1
    real, imag = (b(aten.slice.Tensor, v, dims[-1], 0, half) for v in (real, imag))
    cos, sin = _trig(b, half, length, length, False)
    weight = _weights(b, [1.0 if k == 0 or 2 * k == length else 2.0 for k in range(half)])
    cos, sin = b(aten.mul.Tensor, cos, weight), b(aten.mul.Tensor, sin, weight)
    out = b(aten.sub.Tensor, _along(b, real, dims[-1], cos), _along(b, imag, dims[-1], sin))
    count = math.prod(node.meta["val"].shape[d] for d in dims)
    return _normalized(b, (out,), mode, count)[0]


def _weights(b: _Builder, weights: list[float]) -> Node:
    """A column [len(weights), 1] of 1s and 2s: 2 - (k == 0) - (k == n/2)."""
    count = len(weights)
    twos = b(aten.full.default, [count, 1], 2.0)
    ones_at = [k for k, w in enumerate(weights) if w == 1.0]
    index = b(aten.unsqueeze.default, b(aten.arange.default, count, dtype=torch.int64), 1)
    for k in ones_at:
        twos = b(aten.sub.Tensor, twos, b(aten._to_copy.default, b(aten.eq.Scalar, index, k), dtype=torch.float32))
    return twos


# --------------------------------------------------------------------------
# The rewrite
# --------------------------------------------------------------------------


_LINEAR_OF_SELF = frozenset({aten.roll.default, aten.tril.default, aten.triu.default, aten.diag_embed.default,
                             aten.gather.default, aten.take_along_dim.default, aten.repeat_interleave.self_int,
                             aten.diagonal_copy.default, aten.unfold_copy.default, aten.embedding.default})
"""Ops that are not views but move, copy or zero their first argument's elements (or sum them with real
weights): each part of a complex argument goes through them alone."""

_LINEAR_IN_ALL = frozenset({aten.scatter_add.default, aten.scatter.src, aten.index_add.default,
                            aten.index_copy.default, aten.index_put.default, aten.masked_scatter.default})
"""Ops that place (or add) the elements of every complex operand they take, with real indices or masks:
each part goes through them with the other operands' same part."""

_STORAGE_VIEWS = frozenset({aten.as_strided.default, aten.view.dtype, aten.view_as_real.default,
                            aten.view_as_complex.default, aten.real.default, aten.imag.default})
"""Views whose meaning depends on the element's size or storage, not only on its position."""


def _acts_per_part(node: Node, pairs: dict[Node, Node]) -> bool:
    """Whether `node` reads only its first argument complex and is a view of it (by its schema) or in
    `_LINEAR_OF_SELF`, with a result of the same complex dtype: real and imaginary parts go through it alone."""
    target, source = node.target, (_args(node) or (None,))[0]
    if not isinstance(target, torch._ops.OpOverload) or not isinstance(source, Node) or source not in pairs:
        return False
    value: Any = node.meta.get("val")
    if not _is_complex(value) or value.dtype != _COMPLEX_OF.get(pairs[source].meta["val"].dtype):
        return False
    others = [v for v in node.all_input_nodes if v is not source]
    if target in _LINEAR_IN_ALL:  # every complex operand of the result's dtype (no promotion inside)
        return all(v in pairs or not _is_complex(v.meta.get("val")) for v in others)
    if any(v in pairs for v in others):
        return False
    return (target.is_view and target not in _STORAGE_VIEWS) or target in _LINEAR_OF_SELF


def _per_part(b: _Builder, node: Node, pairs: dict[Node, Node]) -> Node:
    """`node`'s op on the real parts and on the imaginary parts of its complex operands, packed
    (see `_acts_per_part`)."""
    def part(which: int) -> Node:
        args, kwargs = torch.fx.node.map_arg(
            (node.args, node.kwargs),
            lambda v: b(aten.select.int, pairs[v], -1, which) if v in pairs else v)
        return b(node.target, *args, **kwargs)

    return b.pack(part(0), part(1))


def _splits_per_part(node: Node, pairs: dict[Node, Node]) -> bool:
    """A view giving several complex tensors (`split`, `chunk`, `unbind`), read by `getitem`s only."""
    target, source = node.target, (_args(node) or (None,))[0]
    value = node.meta.get("val")
    return (isinstance(target, torch._ops.OpOverload) and target.is_view and isinstance(source, Node)
            and source in pairs and isinstance(value, list | tuple) and bool(value) and all(map(_is_complex, value))
            and not any(v in pairs for v in node.all_input_nodes if v is not source)
            and all(user.target is operator.getitem for user in node.users))


def _split_per_part(b: _Builder, node: Node, pairs: dict[Node, Node]) -> list[Node]:
    """The view of the real parts and of the imaginary parts; each `getitem` user's pair packs their
    pieces. Returns the users (now read through `pairs`)."""
    source, *rest = _args(node)
    pair = pairs[source]
    real, imag = (b(node.target, part, *rest, **node.kwargs) for part in (b.real(pair), b.imag(pair)))
    users = list(node.users)
    for user in users:
        index = user.args[1]
        pairs[user] = b.pack(b(operator.getitem, real, index), b(operator.getitem, imag, index))
    return users


def _refuse(node: Node, what: str) -> UnsupportedOpsError:
    return UnsupportedOpsError(
        f"the model uses 1 operator rducc cannot import:\n  {node.target} ({what}): 1 use, "
        f"first at {describe_location(node)}"
    )


_WEIGHT_KINDS = ("PARAMETER", "BUFFER", "CONSTANT_TENSOR")


def _weight_pairs(ep: ExportedProgram, mode: Any) -> dict[Node, Node]:
    """Complex parameters, buffers and constants stored as their `view_as_real`
    pairs (in the program's state and the placeholder's value): {placeholder: itself}."""
    specs = {spec.arg.name: spec for spec in ep.graph_signature.input_specs if spec.target is not None}
    pairs: dict[Node, Node] = {}
    for node in ep.graph.nodes:
        spec = specs.get(node.name)
        if node.op != "placeholder" or spec is None or spec.kind.name not in _WEIGHT_KINDS:
            continue
        if not _is_complex(node.meta.get("val")):
            continue
        store = ep.state_dict if spec.target in ep.state_dict else ep.constants
        value = store[spec.target]
        real = torch.view_as_real(value.detach()).clone()
        store[spec.target] = torch.nn.Parameter(real, requires_grad=False) if spec.kind.name == "PARAMETER" else real
        with mode:
            node.meta["val"] = torch.empty_strided(real.shape, real.stride(), dtype=real.dtype, device=real.device)
        pairs[node] = node
    return pairs


COMPLEX_EDGES = "rducc_complex_edges"
"""Key of the graph module's meta: (complex input labels, complex user output positions)."""


def complex_edges(ep: ExportedProgram) -> tuple[list[str], list[int]]:
    """The user inputs (placeholder names) and user outputs (positions) `lower_complex` made pairs."""
    return ep.graph_module.meta.get(COMPLEX_EDGES, ([], []))


def _input_pairs(ep: ExportedProgram, mode: Any) -> dict[Node, Node]:
    """Complex user inputs read as their `view_as_real` pairs: {placeholder: itself}."""
    users = {spec.arg.name for spec in ep.graph_signature.input_specs if spec.kind.name == "USER_INPUT"}
    pairs: dict[Node, Node] = {}
    for node in ep.graph.nodes:
        value = node.meta.get("val")
        if node.op == "placeholder" and node.name in users and _is_complex(value):
            with mode:
                real = torch.view_as_real(torch.empty(value.shape, dtype=value.dtype))
                node.meta["val"] = torch.empty(real.shape, dtype=real.dtype)
            node.meta[_READ_AS_PAIR] = True
            pairs[node] = node
    return pairs


def _output_pairs(ep: ExportedProgram, output: Node, pairs: dict[Node, Node]) -> list[int]:
    """Complex user outputs returned as their pairs; their positions among the user outputs."""
    specs = ep.graph_signature.output_specs
    container: Any = output.args[0]
    values = list(container)
    positions: list[int] = []
    user = 0
    for index, (spec, value) in enumerate(zip(specs, values)):
        if spec.kind.name != "USER_OUTPUT":
            continue
        if isinstance(value, Node) and value in pairs:
            values[index] = pairs[value]
            positions.append(user)
        user += 1
    output.args = (type(container)(values), *output.args[1:])
    return positions


def _gives_complex(node: Node) -> bool:
    """Whether `node` gives several values, a complex one among them (`linalg_eig` of a real matrix)."""
    value = node.meta.get("val")
    return isinstance(value, tuple | list) and any(map(_is_complex, value))


def lower_complex(ep: ExportedProgram) -> None:
    """Rewrite every complex value of `ep`'s graph (in place) as a real pair."""
    graph = ep.graph
    mode = next(n.meta["val"].fake_mode for n in graph.nodes if isinstance(n.meta.get("val"), torch.Tensor)
                and hasattr(n.meta["val"], "fake_mode"))
    _split_moments(graph, mode)
    pairs = _weight_pairs(ep, mode)
    inputs = _input_pairs(ep, mode)
    pairs.update(inputs)
    outputs: list[int] = []
    replaced: list[Node] = []
    for node in list(graph.nodes):
        complex_in = any(isinstance(a, Node) and a in pairs for a in node.all_input_nodes)
        complex_out = _is_complex(node.meta.get("val"))
        if node in pairs or (not complex_in and not complex_out and not _gives_complex(node)):
            continue
        if node.op == "output":
            outputs = _output_pairs(ep, node, pairs)
            continue
        if str(node.target) in IGNORED_TARGETS and not node.users:  # an assertion (`.to`'s metadata check)
            graph.erase_node(node)
            continue
        if _splits_per_part(node, pairs):
            replaced += [node, *_split_per_part(_Builder(graph, node, mode), node, pairs)]
            continue
        rule = RULES.get(node.target) or (_per_part if _acts_per_part(node, pairs) else None)
        if rule is None and _runs_on_the_host(node):
            replaced += _host_call_on_pairs(_Builder(graph, node, mode), node, pairs)
            continue
        if rule is None:
            raise _refuse(node, "on complex values, which rducc computes as pairs of reals; no pair form yet")
        result = rule(_Builder(graph, node, mode), node, pairs)
        if complex_out:
            pairs[node] = result
        else:
            node.replace_all_uses_with(result)
        replaced.append(node)
    for node in reversed(replaced):
        if not node.users:
            graph.erase_node(node)
    graph.lint()
    ep.graph_module.meta[COMPLEX_EDGES] = ([n.name for n in inputs], outputs)
