"""Softmax and layer norm chains run as one torch CPU kernel (issue 32).

`torch.softmax` and `torch.log_softmax` decompose into a max reduce, a map
`exp(x - max)`, a sum reduce and a map that divides by the sum (or subtracts
its log), so the runtime made four passes over the scores, computing the
exponential twice. Where the program shows the chain's intermediate values
are read by the chain alone, `NormChains` runs the whole chain as one step
at the last map, into the last map's bytes, with ATen's fused CPU kernel
(`kernels.softmax`), as eager does.

A chain is recognized from what its ops compute, not from names:

- `m = rdu.reduce max x dims [d] keepdim`;
- `e = rdu.map(x, m)` computing `exp(x - m)`;
- `s = rdu.reduce sum e dims [d] keepdim`;
- the last map computing `exp(x - m) / s` or `e / s` (softmax),
  `(x - m) - log(s)` (log softmax), its result `x`'s type, or
  `select(z, 0, softmax)` with an i1 `z` (torch's `_safe_softmax`, which
  scaled dot product attention decomposes into: zero where `z` holds).

A layer norm chain: `a = reduce sum x` over x's trailing dims, `mean = a / n`,
`xc = x - mean`, `v = reduce sum (xc * xc)`, `r = rsqrt(v / n + eps)` and the
last map `xc * r`, `xc * r * w` or `xc * r * w + b` (`w`, `b` of the
normalized shape), run with `native_layer_norm` (layer norms decomposed
by ATen take this form). ATen writes a layer norm into no given array (its
`out=` form computes apart and copies), so where every reader reads the
last map's value through its slot (no reshape reads its bytes in the arena)
and the compute's placement verifies, the value is the array the kernel
returns, not copied into the arena (`PlacedProgram._norm_step`).

A chain runs as one step only when its intermediate values are read by no
op outside the chain and yielded by none (no output buffer), `x`, the last
map's result and the intermediates are f32 or f64 of one dtype, and no op
from the chain's first op up to the last map writes `x`'s bytes (the
placement's bytes, `rducc.runtime.views.Placement`): the fused step reads
`x` later than the first op would have. Where `x` is a bias add folded at its
product (`rducc.runtime.epilogues.BiasFolds.at_product`), its bytes are the
product's: the fold keeps them only up to the add's last reader in program
order, so those are the bytes checked up to the last map (checked against the
add's own bytes, a softmax of a folded linear layer read bytes another value
had overwritten). The intermediates' steps do not
run; nothing reads their bytes, and their writes do not count (the allocator
often gives the square `xc * xc` the bytes of `x`, dead to it once the
centering read it: the square never runs, so `x` stays for the fused step;
ConvNeXt's layer norms after its depthwise convolutions take this form).
Where another step reuses a layer norm's `x` bytes once the centering has
read them, the chain runs from `xc` instead (whose layer norm is x's), its
sum, mean and centering running as before.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace

from xdsl.dialects import arith
from xdsl.dialects import math as xmath
from xdsl.dialects.builtin import Float32Type, Float64Type, FloatAttr, IntegerType, TensorType
from xdsl.ir import Operation, SSAValue

from rducc.dialects.rdu import dataflow as rdu
from rducc.dialects.shapes import element_of, shape_of
from rducc.dialects.tier import ComputeOp
from rducc.runtime.epilogues import BiasFolds
from rducc.runtime.views import Placement, overlap

Expr = str | tuple[object, ...]
"""A map body's value as an expression over named map inputs."""

_SCALAR_OPS: dict[type[Operation], str] = {
    arith.SubfOp: "sub", arith.DivfOp: "div", arith.MulfOp: "mul", arith.AddfOp: "add",
    xmath.ExpOp: "exp", xmath.LogOp: "log", xmath.RsqrtOp: "rsqrt", arith.SelectOp: "select",
}
_COMMUTATIVE = frozenset({"add", "mul"})


def _op(kind: str, *operands: Expr) -> Expr:
    """The expression `kind(operands)`, a commutative op's operands in one order."""
    return (kind, *(sorted(operands, key=repr) if kind in _COMMUTATIVE else operands))


_EXP = _op("exp", _op("sub", "x", "m"))
_SOFTMAX = _op("div", _EXP, "s")
_LOG_SOFTMAX = _op("sub", _op("sub", "x", "m"), _op("log", "s"))
_SAFE_SOFTMAX = _op("select", "z", ("const", 0.0), _SOFTMAX)
"""torch's `_safe_softmax` (scaled dot product attention): zero where `z`."""


@dataclass(frozen=True)
class SoftmaxChain:
    """One recognized chain: the last map computes `softmax(x, dim)` (or its log)."""

    x: SSAValue
    dim: int
    log: bool
    zeroed: SSAValue | None
    """An i1 value broadcast to x's shape: where it holds, the result is 0."""
    intermediates: tuple[Operation, ...]
    """The max, the exp map and the sum: their steps do not run."""


def _expression(map_op: rdu.MapOp, names: dict[SSAValue, Expr]) -> Expr | None:
    """What `map_op` yields as an expression over `names` of its inputs (None
    when an input is unnamed or the body has an op other than sub, div, exp, log)."""
    block = map_op.body.block
    values: dict[SSAValue, Expr] = {}
    for arg, operand in zip(block.args, map_op.inputs):
        if operand not in names:
            return None
        values[arg] = names[operand]
    for op in list(block.ops)[:-1]:
        if isinstance(op, arith.ConstantOp) and isinstance(op.value, FloatAttr):
            values[op.result] = ("const", op.value.value.data)
            continue
        kind = _SCALAR_OPS.get(type(op))
        if kind is None or len(op.results) != 1 or any(v not in values for v in op.operands):
            return None
        values[op.results[0]] = _op(kind, *(values[v] for v in op.operands))
    terminator = block.last_op
    if not isinstance(terminator, rdu.YieldOp) or len(terminator.operands) != 1:
        return None
    return values.get(terminator.operands[0])


def _reduce_of(op: Operation | None, kind: rdu.ReduceKind, source: SSAValue) -> rdu.ReduceOp | None:
    """`op` as `reduce kind source dims [...] keepdim`, else None."""
    if not isinstance(op, rdu.ReduceOp) or op.kind.data != kind or op.input is not source \
            or op.keepdim is None:
        return None
    return op


def _wide_float(value: SSAValue, element: object) -> bool:
    return isinstance(value.type, TensorType) and isinstance(element_of(value.type), Float32Type | Float64Type) \
        and element_of(value.type) == element


def _chain_at(max_op: rdu.ReduceOp, placement: Placement) -> tuple[rdu.MapOp, SoftmaxChain] | None:
    """The softmax chain starting at `max_op` and its last map, if it is one."""
    x, m = max_op.input, max_op.result
    dim = max_op.dims.get_values()[0]
    exp_maps = [u.operation for u in m.uses if isinstance(u.operation, rdu.MapOp)
                and _expression(u.operation, {x: "x", m: "m"}) == _EXP]
    if len(exp_maps) != 1:
        return None
    exp_map = exp_maps[0]
    assert isinstance(exp_map, rdu.MapOp)
    e = exp_map.result
    sums = [r for u in e.uses if (r := _reduce_of(u.operation, rdu.ReduceKind.SUM, e)) is not None]
    if len(sums) != 1 or tuple(sums[0].dims.get_values()) != (dim,):
        return None
    s = sums[0].result
    users = {u.operation for u in s.uses}
    last = users.pop() if len(users) == 1 else None
    if not isinstance(last, rdu.MapOp) or last.result.type != x.type:
        return None
    others = [v for v in last.inputs if v not in (x, m, s, e)]
    if len(others) > 1 or (others and not isinstance(element_of(others[0].type), IntegerType)):
        return None
    found = _expression(last, {x: "x", m: "m", s: "s", e: _EXP, **dict.fromkeys(others, "z")})
    if found not in ((_SAFE_SOFTMAX,) if others else (_SOFTMAX, _LOG_SOFTMAX)):
        return None
    chain = (max_op, exp_map, sums[0])
    element = element_of(x.type)
    if not all(_wide_float(v, element) for v in (x, m, e, s, last.result)) \
            or not _read_by_chain_alone(chain, last, placement):
        return None
    return last, SoftmaxChain(x, dim, found == _LOG_SOFTMAX, others[0] if others else None, chain)


def _read_by_chain_alone(chain: tuple[Operation, ...], last: Operation, placement: Placement) -> bool:
    """The chain's intermediate values are read by the chain's ops alone and
    yielded by none: skipping their steps changes nothing another op reads."""
    inside = {*chain, last}
    values = [op.results[0] for op in chain]
    return not any(v in placement.outs or any(u.operation not in inside for u in v.uses) for v in values)


def _kept(source: SSAValue, first: Operation, last: Operation, ops: list[Operation], placement: Placement,
          held_by: Mapping[SSAValue, Operation], silent: frozenset[Operation]) -> bool:
    """Nothing after `first` up to (not including) the last map writes `source`'s
    bytes: its own, or those of the product whose step computes it (`held_by`).
    The `silent` ops' steps do not run (a chain's intermediates): they write nothing."""
    if first not in ops or last not in ops or ops.index(last) < ops.index(first):
        return False
    read = placement.written(held_by[source]) if source in held_by else placement.read(source)
    span = [step for step in ops[ops.index(first) + 1:ops.index(last)] if step not in silent]
    return read is None or not any(overlap(placement.written(step), read) for step in span)


@dataclass(frozen=True)
class LayerNormChain:
    """One recognized chain: the last map computes `layer_norm(x)` over x's
    last `dims` dims, with `eps` and the optional affine `weight`, `bias`."""

    x: SSAValue
    dims: int
    eps: float
    weight: SSAValue | None
    bias: SSAValue | None
    intermediates: tuple[Operation, ...]
    """The ops whose steps do not run: the sum, mean, centering, square, sum
    of squares and rsqrt (run from the centred value: the last three)."""


def _only_user(value: SSAValue) -> Operation | None:
    users = {use.operation for use in value.uses}
    return users.pop() if len(users) == 1 else None


def _map_of(op: Operation | None, names: dict[SSAValue, Expr], expected: Expr) -> rdu.MapOp | None:
    """`op` as a map computing `expected` over `names`, else None."""
    return op if isinstance(op, rdu.MapOp) and _expression(op, names) == expected else None


def _eps_of(rsqrt_map: rdu.MapOp, v: SSAValue, count: int) -> float | None:
    """`rsqrt(v / count + eps)`'s eps, if `rsqrt_map` computes that."""
    found = _expression(rsqrt_map, {v: "v"})
    if not isinstance(found, tuple) or found[0] != "rsqrt" or not isinstance(found[1], tuple) \
            or found[1][0] != "add":
        return None
    variance = _op("div", "v", ("const", float(count)))
    terms = list(found[1][1:])
    if variance not in terms:
        return None
    terms.remove(variance)
    eps = terms[0]
    return float(eps[1]) if isinstance(eps, tuple) and eps[0] == "const" and isinstance(eps[1], float) else None


def _affine(last: rdu.MapOp, xc: SSAValue, r: SSAValue) -> tuple[SSAValue | None, SSAValue | None] | None:
    """The last map's weight and bias when it computes `xc * r`, `xc * r * w`
    or `xc * r * w + b` (None when it computes none of these)."""
    others = [v for v in last.inputs if v is not xc and v is not r]
    normed = _op("mul", "xc", "r")
    if not others and _expression(last, {xc: "xc", r: "r"}) == normed:
        return None, None
    for order in ([0], [0, 1], [1, 0]):
        if len(order) != len(others):
            continue
        named = [others[i] for i in order]
        names: dict[SSAValue, Expr] = {xc: "xc", r: "r", **dict(zip(named, ("w", "b")))}
        scaled = _op("mul", normed, "w")
        if _expression(last, names) == (scaled if len(named) == 1 else _op("add", scaled, "b")):
            return named[0], named[1] if len(named) == 2 else None
    return None


def _layer_norm_at(total: rdu.ReduceOp, placement: Placement) -> tuple[rdu.MapOp, LayerNormChain] | None:
    """The layer norm chain starting at the sum `total` and its last map, if it is one."""
    x, a = total.input, total.result
    shape = shape_of(x.type)
    dims = list(total.dims.get_values())
    if total.kind.data != rdu.ReduceKind.SUM or total.keepdim is None \
            or dims != list(range(len(shape) - len(dims), len(shape))):
        return None
    count = 1
    for d in dims:
        count *= shape[d]
    mean_map = _map_of(_only_user(a), {a: "a"}, _op("div", "a", ("const", float(count))))
    centre = _map_of(_only_user(mean_map.result), {x: "x", mean_map.result: "mean"}, _op("sub", "x", "mean")) \
        if mean_map else None
    if mean_map is None or centre is None:
        return None
    xc = centre.result
    users = {use.operation for use in xc.uses}
    square = next((m for op in users if (m := _map_of(op, {xc: "xc"}, _op("mul", "xc", "xc")))), None)
    squares = _reduce_of(_only_user(square.result), rdu.ReduceKind.SUM, square.result) if square else None
    if square is None or squares is None or list(squares.dims.get_values()) != dims or len(users) != 2 \
            or not isinstance(rsqrt_map := _only_user(squares.result), rdu.MapOp):
        return None
    eps = _eps_of(rsqrt_map, squares.result, count)
    other_user = next(op for op in users if op is not square)
    if not isinstance(other_user, rdu.MapOp) or eps is None or other_user.result.type != x.type \
            or _only_user(rsqrt_map.result) is not other_user:
        return None
    last: rdu.MapOp = other_user
    affine = _affine(last, xc, rsqrt_map.result)
    chain: tuple[Operation, ...] = (total, mean_map, centre, square, squares, rsqrt_map)
    element = element_of(x.type)
    params = [p for p in affine or () if p is not None]
    values = [x, last.result, *params, *(op.results[0] for op in chain)]
    if affine is None or any(shape_of(p.type) != shape[len(shape) - len(dims):] for p in params) \
            or not all(_wide_float(v, element) for v in values) or not _read_by_chain_alone(chain, last, placement):
        return None
    return last, LayerNormChain(x, len(dims), eps, affine[0], affine[1], chain)


Chain = SoftmaxChain | LayerNormChain


def _from_centred(chain: LayerNormChain) -> LayerNormChain:
    """The chain run from its centred value `x - mean` (the layer norm of which
    is x's), the sum, mean and centering still run: where x's bytes are reused
    once the centering has read them, the centred value lives to the last map."""
    total, mean_map, centre, *rest = chain.intermediates
    return replace(chain, x=centre.results[0], intermediates=tuple(rest))


class NormChains:
    """The softmax and layer norm chains of one compute's body that run as one
    step each (module docstring)."""

    def __init__(self, compute: ComputeOp, folds: BiasFolds | None = None) -> None:
        """`folds`: the body's bias adds folded into their product; an add's value
        computed at its product lives in the product's bytes, which the fold
        keeps only up to the add's last reader in program order, not up to a
        chain's last map (where the fused step reads it)."""
        placement = Placement(compute)
        ops = list(compute.body.block.ops)[:-1]
        held_by: dict[SSAValue, Operation] = {} if folds is None else \
            {add.results[0]: matmul for matmul, add in folds.at_product.items()}
        self.at_last: dict[rdu.MapOp, Chain] = {}
        """Last map -> its chain: the map's step computes the whole chain into its bytes."""
        for op in ops:
            if not isinstance(op, rdu.ReduceOp):
                continue
            found: tuple[rdu.MapOp, Chain] | None = None
            if _reduce_of(op, rdu.ReduceKind.MAX, op.input) is not None and len(op.dims.get_values()) == 1:
                found = _chain_at(op, placement)
            elif op.kind.data == rdu.ReduceKind.SUM:
                found = _layer_norm_at(op, placement)
            if found is None or found[0] in self.at_last or any(step in self.skipped() for step in (op, found[0])):
                continue
            last, chain = found
            if _kept(chain.x, op, last, ops, placement, held_by, self.skipped() | set(chain.intermediates)):
                self.at_last[last] = chain
            elif isinstance(chain, LayerNormChain):
                centred = _from_centred(chain)
                centre = centred.x.owner
                silent = self.skipped() | set(centred.intermediates)
                if isinstance(centre, Operation) and _kept(centred.x, centre, last, ops, placement, held_by, silent):
                    self.at_last[last] = centred

    def skipped(self) -> frozenset[Operation]:
        """The chains' intermediate ops, whose steps do not run."""
        return frozenset(op for chain in self.at_last.values() for op in chain.intermediates)


__all__ = ["Chain", "LayerNormChain", "NormChains", "SoftmaxChain"]
