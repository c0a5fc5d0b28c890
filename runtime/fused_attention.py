"""Attention chains run as one torch CPU kernel (issue 32).

`F.scaled_dot_product_attention` (and attention written out by hand)
decomposes into a product of the queries and the keys, a scale, an additive
mask or bias, a softmax (`_safe_softmax`: zero rows where every score is
-inf) and a product with the values: at full size the runtime made the
scores, read them five times (mask, max, exponential, sum, the
`_safe_softmax` row check) and wrote them three times, where eager runs
ATen's one fused kernel (`_scaled_dot_product_flash_attention_for_cpu`,
blocked, the scores never whole). Where the program shows the chain's
values are read by the chain alone, `AttentionChains` runs it as one step at
the second product, into its bytes, with that kernel (`kernels.attention`).

A chain is recognized from what its ops compute, not from names:

- `s = rdu.matmul q, k` (`k` as `[..., E, S]`, or `[..., S, E]` with
  `transpose_rhs`); `q` or `k` a map computing `x * c` read by the product
  alone (through reshapes; SDPA's decomposition scales each by the root of
  its scale) is read as `x`, `c` taken into the kernel's scale;
- reshapes keeping the last two dims `[L, S]` and maps of one chain value
  computing `s * c`, `s / c` (a constant `c`), `s + b` or `s * c + b` (`b`
  any value, broadcast to the map's shape, or several summed left to right in
  the map, `s + (b0 + b1)`: Swin's relative-position bias and shifted-window
  mask), no scale after an add (it would scale the bias too);
- a softmax over the last dim (`rducc.runtime.fused_norms`), plain or
  `_safe_softmax` whose zero-row mask is `not(any(not(x == -inf)))` of the
  softmax's input over that dim;
- reshapes of the probabilities, read by `o = rdu.matmul p, v` alone; `v`
  read before reshapes read by the product alone that regroup only its batch
  dims (the kernel reads it in the scores' batch dims, strides and all, as
  eager's SDPA reads Swin's transposed heads).

The kernel computes `softmax(q @ k^T * scale + mask) @ v` with the mask the
sum of the biases in the softmax input's shape (a bias zero throughout a run
left out of that run's call: `interpreter.adds_something`); a row whose mask is -inf
throughout is zero (`_safe_softmax`, as ATen's kernel gives) or NaN (a plain
softmax, written after the kernel), as the decomposed chain gives. The
chain runs as one step when its values are f32 or f64 of one dtype and no
intermediate value is read outside the chain or yielded; the intermediates'
steps do not run. The kernel reads `q`, `k` and the biases at the second
product: one whose bytes (or those of a value it is a layout view of) an op
from its first reader up to the second product writes (the allocator reuses
them once that reader is done) is copied aside at its reader's step
(`AttentionChain.saved`) and read from there.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, replace

from xdsl.dialects import arith
from xdsl.dialects.builtin import FloatAttr, IntegerAttr
from xdsl.ir import Operation, SSAValue

from rducc.dialects.rdu import dataflow as rdu
from rducc.dialects.shapes import element_of, shape_of
from rducc.dialects.tier import ComputeOp
from rducc.runtime.epilogues import BiasFolds
from rducc.runtime.fused_norms import SoftmaxChain, _chain_at, _expression, _kept, _wide_float
from rducc.runtime.layout_views import LAYOUT_OPS
from rducc.runtime.views import Placement

Shape = tuple[int, ...]


@dataclass(frozen=True)
class AttentionChain:
    """One recognized chain: the second product computes
    `softmax(q @ k^T * scale + sum(biases)) @ v` (module docstring)."""

    q: SSAValue
    k: SSAValue
    """The first product's operands (their shapes); the kernel reads `reads`' first two."""
    k_transposed: bool
    """`k` is `[..., S, E]` (the first product's `transpose_rhs`), else `[..., E, S]`."""
    v: SSAValue
    """The second product's operand, before reshapes read by it alone that
    regroup only its batch dims (`_unmerged`: no copy of a strided view)."""
    v_transposed: bool
    scale: float
    biases: tuple[tuple[SSAValue, Shape], ...]
    """Each bias and the shape of the map adding it (it broadcasts to that shape)."""
    shape: Shape
    """The softmax input's shape: the kernel runs in it (`[..., L, S]`)."""
    safe: bool
    """`_safe_softmax`: a row masked throughout is zero (else NaN)."""
    intermediates: tuple[Operation, ...]
    """The first product, the scale and bias maps, the reshapes, the softmax's
    ops and its row check: their steps do not run."""
    reads: tuple[tuple[SSAValue, Operation], ...] = ()
    """What the fused step reads that a skipped op read first, with that op: the
    queries and keys (before a scale the chain takes, as SDPA's decomposition
    scales each by the root of its scale), then each bias."""
    saved: tuple[tuple[SSAValue, Operation], ...] = ()
    """Operands whose bytes another op writes before the second product (the
    allocator reuses them once the first product or the add has read them),
    each with that reader: copied aside at the reader's step."""

    def late(self) -> tuple[Operation, ...]:
        """The intermediates whose operands the fused step reads at the second
        product (those whose operands are copied aside are read at their own step)."""
        early = {reader for _, reader in self.saved} - {reader for read in self.reads if read not in self.saved
                                                          for reader in read[1:]}
        return tuple(op for op in self.intermediates if op not in early)


def _count(shape: Shape) -> int:
    return math.prod(shape)


def _same_rows(shape: Shape, rows: Shape) -> bool:
    """`shape` is `[..., L, S]` with `rows` as its last two dims."""
    return len(shape) >= 2 and shape[-2:] == rows


def _scale_of(found: object) -> float | None:
    """`c` when `found` is `s * c`, `1 / c` when it is `s / c`, else None."""
    if not isinstance(found, tuple) or len(found) != 3:
        return None
    kind, *operands = found
    constants = [o[1] for o in operands if isinstance(o, tuple) and o[0] == "const"]
    if kind == "mul" and "s" in operands and len(constants) == 1:
        return float(constants[0])
    if kind == "div" and operands[0] == "s" and len(constants) == 1 and constants[0] != 0.0:
        return 1.0 / float(constants[0])
    return None


@dataclass(frozen=True)
class _Scores:
    """The walk from the softmax input back to the first product: the scale and
    biases met, the ops passed, whether a scale was met (no add may come before it)."""

    scale: float
    biases: tuple[tuple[SSAValue, Shape], ...]
    ops: tuple[Operation, ...]
    scaled: bool = False


def _scores_of(value: SSAValue, rows: Shape, walk: _Scores) -> tuple[rdu.MatmulOp, _Scores] | None:
    """The first product whose scores `value` is, through reshapes, scales and
    bias adds (`walk`: those met so far, from the softmax's input), else None."""
    op = value.owner
    if not isinstance(op, Operation) or not _same_rows(shape_of(value.type), rows):
        return None
    if isinstance(op, rdu.MatmulOp):
        return op, walk
    if isinstance(op, rdu.ReshapeOp):
        return _scores_of(op.input, rows, replace(walk, ops=(*walk.ops, op)))
    if not isinstance(op, rdu.MapOp):
        return None
    if len(op.inputs) == 1:
        scale = _scale_of(_expression(op, {op.inputs[0]: "s"}))
        return None if scale is None else _scores_of(
            op.inputs[0], rows, _Scores(walk.scale * scale, walk.biases, (*walk.ops, op), True))
    inputs = tuple(op.inputs)
    if len(set(inputs)) != len(inputs) or walk.scaled:  # a scale after an add scales the bias
        return None
    for source in inputs:
        others = [x for x in inputs if x is not source]
        names = {x: f"b{i}" for i, x in enumerate(others)}
        found = _expression(op, {source: "s", **names}) if shape_of(source.type) == shape_of(value.type) else None
        split = _scores_plus_biases(found, set(names.values()))
        if split is None:
            continue
        scores, terms = split
        scale = 1.0 if scores == "s" else _scale_of(scores)  # `s * c + b` as one map
        if scale is None:
            continue
        biases = tuple((others[int(name[1:])], shape_of(value.type)) for name in terms)
        chain = _scores_of(source, rows, _Scores(walk.scale * scale, (*walk.biases, *biases),
                                                 (*walk.ops, op), scale != 1.0 or scores != "s"))
        if chain is not None:
            return chain
    return None


def _scores_plus_biases(found: object, names: set[str]) -> tuple[object, tuple[str, ...]] | None:
    """`found` as `scores + B`, B every name of `names` once summed from left to
    right (`(b0 + b1) + b2`; the fused step adds the biases in that order:
    Swin's relative-position bias and window mask are one map's `s + (b0 + b1)`),
    split into the scores' expression and B's names in that order; else None."""
    if not isinstance(found, tuple) or len(found) != 3 or found[0] != "add":
        return None
    for scores, bias in (found[1:], found[2:0:-1]):
        terms = _left_sum(bias, names)
        if terms is not None and sorted(terms) == sorted(names):
            return scores, terms
    return None


def _left_sum(expr: object, names: set[str]) -> tuple[str, ...] | None:
    """The names whose left-to-right sum `expr` is (`b0`, `b0 + b1`,
    `(b0 + b1) + b2`, ...), each an element of `names`; else None."""
    if isinstance(expr, str):
        return (expr,) if expr in names else None
    if not isinstance(expr, tuple) or len(expr) != 3 or expr[0] != "add":
        return None
    for head, last in (expr[1:], expr[2:0:-1]):
        if isinstance(last, str) and last in names:
            before = _left_sum(head, names)
            if before is not None:
                return (*before, last)
    return None


def _body_ops(map_op: rdu.MapOp) -> list[Operation]:
    return list(map_op.body.block.ops)[:-1]


def _yielded(map_op: rdu.MapOp) -> Operation | None:
    """The op whose value `map_op`'s body yields."""
    terminator = map_op.body.block.last_op
    owner = terminator.operands[0].owner if isinstance(terminator, rdu.YieldOp) and terminator.operands else None
    return owner if isinstance(owner, Operation) else None


def _yields_not(op: Operation | None, of: SSAValue) -> bool:
    """`op` is `xori of, true` and the map yields it."""
    return isinstance(op, arith.XOrIOp) and of in op.operands and any(
        isinstance(c := o.owner, arith.ConstantOp) and isinstance(c.value, IntegerAttr) and c.value.value.data != 0
        for o in op.operands if o is not of)


def _is_finite_below(map_op: Operation, x: SSAValue) -> bool:
    """`map_op` computes `not(x == -inf)` of `x` alone."""
    if not isinstance(map_op, rdu.MapOp) or list(map_op.inputs) != [x]:
        return False
    arg = map_op.body.block.args[0]
    compares = [o for o in _body_ops(map_op) if isinstance(o, arith.CmpfOp)]
    if len(compares) != 1 or compares[0].predicate.value.data != 1 or arg not in compares[0].operands:  # oeq
        return False
    other = next((o for o in compares[0].operands if o is not arg), None)
    constant = None if other is None else other.owner
    if not isinstance(constant, arith.ConstantOp) or not isinstance(constant.value, FloatAttr) \
            or constant.value.value.data != -math.inf:
        return False
    return _yields_not(_yielded(map_op), compares[0].result)


def _is_not(map_op: Operation, source: SSAValue) -> bool:
    """`map_op` computes `not(source)` of `source` alone."""
    if not isinstance(map_op, rdu.MapOp) or list(map_op.inputs) != [source]:
        return False
    return _yields_not(_yielded(map_op), map_op.body.block.args[0])


def _row_check(zeroed: SSAValue, x: SSAValue, dim: int) -> tuple[Operation, ...] | None:
    """The ops computing `zeroed = not(any(not(x == -inf), dim))`, if it is that."""
    outer = zeroed.owner
    if not isinstance(outer, rdu.MapOp) or len(outer.inputs) != 1:
        return None
    any_op = outer.inputs[0].owner
    if not isinstance(any_op, rdu.ReduceOp) or any_op.kind.data != rdu.ReduceKind.ANY \
            or any_op.keepdim is None or tuple(any_op.dims.get_values()) != (dim,):
        return None
    inner = any_op.input.owner
    if not _is_not(outer, any_op.result) or not isinstance(inner, Operation) or not _is_finite_below(inner, x):
        return None
    return inner, any_op, outer


def _through_reshapes(value: SSAValue) -> tuple[Operation, list[Operation]] | None:
    """The one reader of `value` past reshapes read alone, and those reshapes."""
    reshapes: list[Operation] = []
    while True:
        users = {u.operation for u in value.uses}
        if len(users) != 1:
            return None
        user = users.pop()
        if not isinstance(user, rdu.ReshapeOp):
            return user, reshapes
        reshapes.append(user)
        value = user.result


def _attention_at(max_op: rdu.ReduceOp, placement: Placement) -> tuple[rdu.MatmulOp, AttentionChain] | None:
    """The attention chain whose softmax starts at `max_op`, and its second product."""
    found = _chain_at(max_op, placement)
    if found is None:
        return None
    last, softmax = found
    shape = shape_of(softmax.x.type)
    if softmax.log or softmax.dim != len(shape) - 1 or len(shape) < 2:
        return None
    check: tuple[Operation, ...] = ()
    if softmax.zeroed is not None:
        row_check = _row_check(softmax.zeroed, softmax.x, softmax.dim)
        if row_check is None:
            return None
        check = row_check
    read = _through_reshapes(last.result)
    scores = _scores_of(softmax.x, shape[-2:], _Scores(1.0, (), ()))
    if read is None or scores is None:
        return None
    second, after = read
    first, walk = scores
    if not isinstance(second, rdu.MatmulOp) or second.lhs is not (after[-1].results[0] if after else last.result):
        return None
    return _checked(first, second, walk, softmax, last, (*check, *after))


def _checked(first: rdu.MatmulOp, second: rdu.MatmulOp, walk: _Scores, softmax: SoftmaxChain, last: rdu.MapOp,
             others: tuple[Operation, ...]) -> tuple[rdu.MatmulOp, AttentionChain] | None:
    """The chain when its operands' shapes and dtypes fit the kernel."""
    shape = shape_of(softmax.x.type)
    rows, batch = shape[-2:], _count(shape[:-2])
    q, k, v = first.lhs, first.rhs, second.rhs
    k_transposed, v_transposed = first.transpose_rhs is not None, second.transpose_rhs is not None
    q_shape, k_shape, v_shape = (shape_of(x.type) for x in (q, k, v))
    k_rows = k_shape[-2:] if k_transposed else k_shape[-2:][::-1]
    v_rows = v_shape[-2:][::-1] if v_transposed else v_shape[-2:]
    element = element_of(softmax.x.type)
    p_shape = shape_of(second.lhs.type)
    if any(len(s) < 2 or _count(s[:-2]) != batch for s in (q_shape, k_shape, v_shape, p_shape)) \
            or p_shape[-2:] != rows \
            or q_shape[-2] != rows[0] or k_rows[0] != rows[1] or k_rows[1] != q_shape[-1] or v_rows[0] != rows[1] \
            or not all(_wide_float(x, element) for x in (q, k, v, second.result, *(b for b, _ in walk.biases))):
        return None
    (q_from, q_scale, q_ops), (k_from, k_scale, k_ops) = _unscaled(q, first), _unscaled(k, first)
    v_from, v_ops = _unmerged(v, second)
    skipped = tuple(dict.fromkeys((*q_ops, *k_ops, first, *walk.ops, *softmax.intermediates, last, *others,
                                   *v_ops)))
    adders = [next(op for op in walk.ops if isinstance(op, rdu.MapOp) and b in op.inputs) for b, _ in walk.biases]
    reads = ((q_from, q_ops[-1] if q_ops else first), (k_from, k_ops[-1] if k_ops else first),
             *((b, adder) for (b, _), adder in zip(walk.biases, adders)), *([(v_from, v_ops[-1])] if v_ops else []))
    return second, AttentionChain(q, k, k_transposed, v_from, v_transposed, walk.scale * q_scale * k_scale,
                                  tuple(walk.biases), shape, softmax.zeroed is not None, skipped, reads)


def _unscaled(value: SSAValue, first: Operation) -> tuple[SSAValue, float, tuple[Operation, ...]]:
    """`value`'s array before a scale read by the product alone (through
    reshapes), the scale, and the scale's and reshapes' ops; else `value`, 1."""
    path: list[Operation] = []
    current, reader = value, first
    while {use.operation for use in current.uses} == {reader}:
        owner = current.owner
        if isinstance(owner, rdu.ReshapeOp):
            path.append(owner)
            current, reader = owner.input, owner
            continue
        if isinstance(owner, rdu.MapOp) and len(owner.inputs) == 1 and owner.inputs[0].type == owner.result.type:
            scale = _scale_of(_expression(owner, {owner.inputs[0]: "s"}))
            if scale is not None:
                return owner.inputs[0], scale, (*path, owner)
        break
    return value, 1.0, ()


def _unmerged(value: SSAValue, reader: Operation) -> tuple[SSAValue, tuple[Operation, ...]]:
    """`value`'s array before reshapes read by `reader` alone (each by the next)
    that keep its last two dims, regrouping only its batch dims (Swin's values
    `[windows, heads, S, E]` as `[windows * heads, S, E]` for a batched
    product: a copy where the heads are a transposed view), and those reshapes;
    else `value` and none. The kernel reads it in the scores' batch dims."""
    path: list[Operation] = []
    current, by = value, reader
    rows = shape_of(value.type)[-2:]
    while {use.operation for use in current.uses} == {by} and isinstance(owner := current.owner, rdu.ReshapeOp) \
            and shape_of(owner.input.type)[-2:] == rows:
        path.append(owner)
        current, by = owner.input, owner
    return current, tuple(path)


def _read_by_chain_alone(chain: AttentionChain, second: Operation, placement: Placement) -> bool:
    """No intermediate value is read outside the chain or yielded."""
    inside = {*chain.intermediates, second}
    return not any(r in placement.outs or any(u.operation not in inside for u in r.uses)
                   for op in chain.intermediates for r in op.results)


class AttentionChains:
    """The attention chains of one compute's body that run as one step each
    (module docstring)."""

    def __init__(self, compute: ComputeOp, folds: BiasFolds, skipped: frozenset[Operation]) -> None:
        """`folds`: the body's bias adds folded into their product (an add's value
        lives in the product's bytes); `skipped`: the norm chains' intermediate
        ops (`rducc.runtime.fused_norms`), whose steps do not run."""
        placement = Placement(compute)
        ops = list(compute.body.block.ops)[:-1]
        held_by: Mapping[SSAValue, Operation] = {add.results[0]: matmul for matmul, add in folds.at_product.items()}
        folded = {*folds.at_add, *folds.at_product, *folds.at_add.values(), *folds.at_product.values()}
        self.at_product: dict[rdu.MatmulOp, AttentionChain] = {}
        """Second product -> its chain: the product's step computes the whole chain into its bytes."""
        for op in ops:
            found = _attention_at(op, placement) if isinstance(op, rdu.ReduceOp) \
                and op.kind.data == rdu.ReduceKind.MAX else None
            if found is None:
                continue
            second, chain = found
            members = {*chain.intermediates, second}
            if members & (folded | self.skipped() | set(self.at_product)) \
                    or not _read_by_chain_alone(chain, second, placement):
                continue
            silent = frozenset(skipped | self.skipped() | set(chain.intermediates))
            saved = tuple((value, reader) for value, reader in chain.reads
                          if not all(_kept(held, reader, second, ops, placement, held_by, silent)
                                     for held in _layout_sources(value)))
            self.at_product[second] = replace(chain, saved=saved)

    def late_reads(self) -> dict[Operation, tuple[Operation, ...]]:
        """Each second product, the ops whose operands its fused step reads there."""
        return {second: chain.late() for second, chain in self.at_product.items()}

    def saves_at(self) -> dict[Operation, list[tuple[SSAValue, AttentionChain]]]:
        """Each op at whose step an operand of a chain is copied aside, those operands."""
        found: dict[Operation, list[tuple[SSAValue, AttentionChain]]] = {}
        for chain in self.at_product.values():
            for value, reader in chain.saved:
                found.setdefault(reader, []).append((value, chain))
        return found

    def skipped(self) -> frozenset[Operation]:
        """The chains' intermediate ops, whose steps do not run."""
        return frozenset(op for chain in self.at_product.values() for op in chain.intermediates)


def _layout_sources(value: SSAValue) -> list[SSAValue]:
    """`value` and the values it is a layout op of, transitively: a reshape or
    transpose the runtime runs as a view reads its operand's bytes
    (`rducc.runtime.views`, `rducc.runtime.layout_views`)."""
    chain = [value]
    while isinstance(owner := chain[-1].owner, LAYOUT_OPS):
        chain.append(owner.operands[0])
    return chain


__all__ = ["AttentionChain", "AttentionChains"]
