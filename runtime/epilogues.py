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
it reads them later than the matmul would have. `rdu-sram-alloc` keeps them
live up to the add for this (`rducc.dialects.bias_adds.epilogue_reads`), so in
a program it placed the first way holds. Else it runs where the matmul
did, into the matmul's bytes, and the map's readers read its value there:
when the bias is ready by then, the map is not yielded, and nothing from the
map to its last reader writes those bytes (the allocator kept them for the
product only up to the map). The pair also needs:

- the matmul's value read by the map alone, and not yielded (an output
  buffer), a rank-2 rhs (a weight) and f32 or f64 operands and result of one
  dtype (or 16-bit operands widened to f32, below);
- the map's body one `arith.addf` of its two arguments, its other input a
  rank-1 bias of the product's last dim, its result the product's type
  (`rducc.dialects.bias_adds.bias_add_of`).

A 16-bit linear layer (issue 27) imports as a bf16 (f16) `rdu.matmul`
widened to f32 and a map `truncf(product + extf(bias))` of a 16-bit bias:
eager's `addmm` on the 16-bit operands, its f32 sum rounded once. It folds at
the add only (its value is narrower than the product's bytes), and the step
runs `torch.addmm` on the 16-bit tensors (`kernels.linear`): the widened
product on numpy's BLAS sums the f32 products in another order, and where
that sum lands on a bf16 tie it rounds the other way (one output of 1,024
in `shared_mlm`'s block, BENCHMARKS.md round 14).

A convolution (with no bias operand: an imported one carries its bias,
`rdu.conv`'s; the partitioner takes it out again where a split sums partial
products) and its bias add pair the same way (`kernels.conv` with the
bias: oneDNN adds it in the convolution's epilogue, as eager's `F.conv2d`
does; the GEMM paths add it in place): an `rdu.conv` read by the map alone,
f32 or f64 of one dtype, the bias `[C, 1, ...]` of the result's channels
(how a convolution's bias imports, broadcast over the spatial dims).
"""

from __future__ import annotations

from xdsl.dialects.builtin import Float32Type, Float64Type, TensorType
from xdsl.ir import BlockArgument, Operation, SSAValue

from rducc.dialects.bias_adds import Product, bias_add_of, widened_16_bit
from rducc.dialects.rdu import dataflow as rdu
from rducc.dialects.shapes import element_of, shape_of
from rducc.dialects.tier import ComputeOp
from rducc.runtime.views import Placement, overlap


def _wide_float(value_type: object) -> bool:
    return isinstance(value_type, TensorType) and isinstance(element_of(value_type), Float32Type | Float64Type)


def _product(product: Operation, placement: Placement) -> bool:
    """The op is a linear layer's product (a rank-2 weight) or a convolution
    (not transposed) without a bias of its own, whose value only a map reads."""
    if not isinstance(product, Product) or (isinstance(product, rdu.ConvOp)
                                            and (product.bias is not None or product.transposed is not None)):
        return False
    types = (*(v.type for v in product.operands), product.result.type)
    weight = product.rhs if isinstance(product, rdu.MatmulOp) else product.weight
    one_wide_dtype = all(_wide_float(t) for t in types) and len({element_of(t) for t in types}) == 1
    return (one_wide_dtype or widened_16_bit(product) is not None) \
        and (isinstance(product, rdu.ConvOp) or len(shape_of(weight.type)) == 2) \
        and product.result not in placement.outs and len(list(product.result.uses)) == 1


def _at_the_add(matmul: Product, bias_add: rdu.MapOp, ops: list[Operation], placement: Placement) -> bool:
    """The folded step may run where the add did, into the add's bytes: nothing
    from the product up to the add (the add's result included) writes the
    product's operands."""
    operands = [placement.read(v) for v in matmul.operands]
    span = ops[ops.index(matmul) + 1:ops.index(bias_add) + 1]
    return not any(overlap(placement.written(step), b) for step in span for b in operands if b is not None)


def _early_bias(matmul: Product, bias_add: rdu.MapOp, ops: list[Operation], placement: Placement) -> SSAValue | None:
    """The value the product's step can read the bias from: the add's other
    input when it is computed before the product, or the input buffer a
    reshape after the product reshapes into it (a convolution's `[C]` bias as
    `[C, 1, 1]`) when nothing from the product up to that reshape writes the
    buffer's bytes; else None."""
    bias = next(v for v in bias_add.inputs if v is not matmul.result)
    owner = bias.owner
    if not isinstance(owner, Operation) or owner not in ops or ops.index(owner) < ops.index(matmul):
        return bias
    if not isinstance(owner, rdu.ReshapeOp) or not isinstance(owner.input, BlockArgument):
        return None
    buffer = placement.read(owner.input)
    span = ops[ops.index(matmul):ops.index(owner) + 1]
    return None if buffer is None or any(overlap(placement.written(step), buffer) for step in span) \
        else owner.input


def _at_the_product(matmul: Product, bias_add: rdu.MapOp, ops: list[Operation], placement: Placement) -> bool:
    """The folded step may run where the product did, into the product's bytes,
    the add's value read from there: the bias is ready by then (`_early_bias`),
    the add is not yielded, and nothing from the add to its last reader writes
    those bytes."""
    if _early_bias(matmul, bias_add, ops, placement) is None:
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
        self.at_add: dict[rdu.MapOp, Product] = {}
        """Bias add -> its product: the add's step computes both into the add's bytes."""
        self.at_product: dict[Product, rdu.MapOp] = {}
        """Product -> its bias add: the product's step computes both into the
        product's bytes, where the add's value is read."""
        self.bias: dict[rdu.MapOp, SSAValue] = {}
        """Bias add -> the value its folded step reads as the bias."""
        for op in ops:
            if not isinstance(op, Product) or not _product(op, placement):
                continue
            bias_add = bias_add_of(op)
            if bias_add is None or bias_add not in ops:
                continue
            if _at_the_add(op, bias_add, ops, placement):
                self.at_add[bias_add] = op
                self.bias[bias_add] = next(v for v in bias_add.inputs if v is not op.result)
            elif bias_add.results[0].type == op.result.type and _at_the_product(op, bias_add, ops, placement) \
                    and (early := _early_bias(op, bias_add, ops, placement)) is not None:
                self.at_product[op] = bias_add
                self.bias[bias_add] = early

    def moved(self) -> frozenset[Operation]:
        """The bias adds whose value is not computed into their own bytes by
        their own step."""
        return frozenset([*self.at_add, *self.at_product.values()])


__all__ = ["BiasFolds", "Product"]
