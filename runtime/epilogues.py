"""Bias adds folded into their product (issue 32): one `torch.addmm`.

A linear layer imports as `rdu.matmul` and an `rdu.map` adding the bias (the
bias add is its own op, as ATen's `addmm` decomposes), so the runtime made a
second pass over every product. Where the program shows the add is the
product's only use, `BiasFolds` pairs the two and one step runs the product
with the bias in the GEMM's epilogue (`kernels.linear`, what eager's
`F.linear` runs) instead of two.

The folded step runs where the map did, into the map's bytes, when no op
from the matmul to the map, the map's own result included, writes bytes of
the matmul's operands (the placement's bytes, `rducc.runtime.views.Placement`):
it reads them later than the matmul would have. Else it runs where the matmul
did, into the matmul's bytes, and the map's readers read its value there:
when the bias is ready by then, the map is not yielded, and nothing from the
map to its last reader writes those bytes (the allocator kept them for the
product only up to the map). The pair also needs:

- the matmul's value read by the map alone, and not yielded (an output
  buffer), a rank-2 rhs (a weight) and f32 or f64 operands and result of one
  dtype;
- the map's body one `arith.addf` of its two arguments, its other input a
  rank-1 bias of the product's last dim, its result the product's type.
"""

from __future__ import annotations

from xdsl.dialects import arith
from xdsl.dialects.builtin import Float32Type, Float64Type, TensorType
from xdsl.ir import Operation

from rducc.dialects.rdu import dataflow as rdu
from rducc.dialects.shapes import element_of, shape_of
from rducc.dialects.tier import ComputeOp
from rducc.runtime.views import Placement, overlap


def _wide_float(value_type: object) -> bool:
    return isinstance(value_type, TensorType) and isinstance(element_of(value_type), Float32Type | Float64Type)


def _product(matmul: rdu.MatmulOp, placement: Placement) -> bool:
    """The matmul is a linear layer's product whose value only a map reads."""
    types = (matmul.lhs.type, matmul.rhs.type, matmul.result.type)
    return all(_wide_float(t) for t in types) and len({element_of(t) for t in types}) == 1 \
        and len(shape_of(matmul.rhs.type)) == 2 and matmul.result not in placement.outs \
        and len(list(matmul.result.uses)) == 1


def _adds_bias(bias_add: Operation, matmul: rdu.MatmulOp) -> bool:
    """`bias_add` is a map `product + bias` (either order), bias `[N]`."""
    if not isinstance(bias_add, rdu.MapOp) or len(bias_add.inputs) != 2 \
            or bias_add.results[0].type != matmul.result.type:
        return False
    others = [v for v in bias_add.inputs if v is not matmul.result]
    if len(others) != 1 or shape_of(others[0].type) != shape_of(matmul.result.type)[-1:] \
            or element_of(others[0].type) != element_of(matmul.result.type):
        return False
    block = bias_add.body.block
    body = list(block.ops)
    return len(body) == 2 and isinstance(body[0], arith.AddfOp) and isinstance(body[1], rdu.YieldOp) \
        and set(body[0].operands) == set(block.args) and body[1].operands[0] is body[0].result


def _at_the_add(matmul: rdu.MatmulOp, bias_add: rdu.MapOp, ops: list[Operation], placement: Placement) -> bool:
    """The folded step may run where the add did, into the add's bytes: nothing
    from the product up to the add (the add's result included) writes the
    product's operands."""
    operands = [placement.read(v) for v in (matmul.lhs, matmul.rhs)]
    span = ops[ops.index(matmul) + 1:ops.index(bias_add) + 1]
    return not any(overlap(placement.written(step), b) for step in span for b in operands if b is not None)


def _at_the_product(matmul: rdu.MatmulOp, bias_add: rdu.MapOp, ops: list[Operation], placement: Placement) -> bool:
    """The folded step may run where the product did, into the product's bytes,
    the add's value read from there: the bias is ready by then, the add is not
    yielded, and nothing from the add to its last reader writes those bytes."""
    bias = next(v for v in bias_add.inputs if v is not matmul.result)
    if isinstance(bias.owner, Operation) and (bias.owner not in ops or ops.index(bias.owner) > ops.index(matmul)):
        return False
    own = placement.written(matmul)
    readers = [use.operation for use in bias_add.results[0].uses]
    if own is None or bias_add.results[0] in placement.outs or not all(r in ops for r in readers):
        return False
    start = ops.index(bias_add)
    last = max((ops.index(r) for r in readers), default=start)
    return not any(overlap(placement.written(step), own) for step in ops[start + 1:last + 1])


class BiasFolds:
    """The bias adds of one compute's body that run with their product as one
    `torch.addmm` (module docstring)."""

    def __init__(self, compute: ComputeOp) -> None:
        placement = Placement(compute)
        ops = list(compute.body.block.ops)[:-1]
        self.at_add: dict[rdu.MapOp, rdu.MatmulOp] = {}
        """Bias add -> its product: the add's step computes both into the add's bytes."""
        self.at_product: dict[rdu.MatmulOp, rdu.MapOp] = {}
        """Product -> its bias add: the product's step computes both into the
        product's bytes, where the add's value is read."""
        for op in ops:
            if not isinstance(op, rdu.MatmulOp) or not _product(op, placement):
                continue
            bias_add = next(use.operation for use in op.result.uses)
            if bias_add not in ops or not _adds_bias(bias_add, op):
                continue
            assert isinstance(bias_add, rdu.MapOp)
            if _at_the_add(op, bias_add, ops, placement):
                self.at_add[bias_add] = op
            elif _at_the_product(op, bias_add, ops, placement):
                self.at_product[op] = bias_add

    def moved(self) -> frozenset[Operation]:
        """The bias adds whose value is not computed into their own bytes by
        their own step."""
        return frozenset([*self.at_add, *self.at_product.values()])


__all__ = ["BiasFolds"]
