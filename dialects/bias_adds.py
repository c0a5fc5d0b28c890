"""A product's bias add: the map a product's epilogue computes (issue 32).

A linear layer imports as `rdu.matmul` and an `rdu.map` adding the bias, a
convolution with a bias as `rdu.conv` and such a map: the chip runs the add
in the product's pipeline, the runtime as one `torch.addmm` or convolution
with the bias (`rducc.runtime.epilogues`). Either way the product's operands
are read while the add's value is written, so `rdu-sram-alloc` keeps them
live up to the add (`epilogue_reads`): the add's value then never takes their
bytes, and the runtime computes the pair into the add's own bytes, where a
reshape placed on them reads it as a view (ConvNeXt's and Swin's fc1).
"""

from __future__ import annotations

from xdsl.dialects import arith
from xdsl.dialects.builtin import BFloat16Type, Float16Type, Float32Type
from xdsl.ir import Attribute, Operation, SSAValue

from rducc.dialects.rdu import dataflow as rdu
from rducc.dialects.shapes import element_of, shape_of

Product = rdu.MatmulOp | rdu.ConvOp
"""An op whose bias add may run in its epilogue."""


def bias_shape(product: Product) -> tuple[int, ...]:
    """The bias's shape: `[N]` of a product, `[C, 1, ...]` of a convolution."""
    shape = tuple(shape_of(product.result.type))
    return shape[-1:] if isinstance(product, rdu.MatmulOp) else (shape[1],) + (1,) * (len(shape) - 2)


def adds_bias(bias_add: Operation, product: Product) -> bool:
    """`bias_add` is a map `product + bias` (either order), bias `[N]` (`[C, 1, ...]`):
    of the product's type, or a 16-bit add rounded once (`_adds_16_bit_bias`)."""
    if not isinstance(bias_add, rdu.MapOp) or len(bias_add.inputs) != 2 \
            or shape_of(bias_add.results[0].type) != shape_of(product.result.type):
        return False
    others = [v for v in bias_add.inputs if v is not product.result]
    if len(others) != 1 or tuple(shape_of(others[0].type)) != bias_shape(product):
        return False
    if bias_add.results[0].type != product.result.type:
        return _adds_16_bit_bias(bias_add, product, others[0])
    if element_of(others[0].type) != element_of(product.result.type):
        return False
    block = bias_add.body.block
    body = list(block.ops)
    return len(body) == 2 and isinstance(body[0], arith.AddfOp) and isinstance(body[1], rdu.YieldOp) \
        and set(body[0].operands) == set(block.args) and body[1].operands[0] is body[0].result


def widened_16_bit(product: Product) -> Attribute | None:
    """The operands' element type of a linear layer's product of bf16 (f16)
    operands widened to f32 (eager's 16-bit `addmm` before its one rounding),
    else None."""
    low = {element_of(v.type) for v in product.operands}
    element = low.pop() if len(low) == 1 else None
    return element if isinstance(product, rdu.MatmulOp) and isinstance(element, BFloat16Type | Float16Type) \
        and isinstance(element_of(product.result.type), Float32Type) else None


def _adds_16_bit_bias(bias_add: rdu.MapOp, product: Product, bias: SSAValue) -> bool:
    """A 16-bit linear layer's add as eager's `addmm` rounds it (issue 27): the
    product of 16-bit operands widened to f32, the bias and the result of those
    operands' type, the body `truncf(product + extf(bias))` (either order)."""
    low = widened_16_bit(product)
    if low is None or element_of(bias.type) != low or element_of(bias_add.results[0].type) != low:
        return False
    block = bias_add.body.block
    body = list(block.ops)
    if len(body) != 4 or not isinstance(body[0], arith.ExtFOp) or not isinstance(body[1], arith.AddfOp) \
            or not isinstance(body[2], arith.TruncFOp) or not isinstance(body[3], rdu.YieldOp):
        return False
    widened_bias, product_arg = block.args[list(bias_add.inputs).index(bias)], \
        block.args[list(bias_add.inputs).index(product.result)]
    return body[0].input is widened_bias and set(body[1].operands) == {body[0].result, product_arg} \
        and body[2].input is body[1].result and body[3].operands[0] is body[2].result


def bias_add_of(product: Operation) -> rdu.MapOp | None:
    """The map adding a bias to `product`'s value when it is the value's only
    reader, in the same block (the pair one step: the add in the product's
    epilogue); else None."""
    if not isinstance(product, Product):
        return None
    readers = [use.operation for use in product.result.uses]
    if len(readers) != 1 or readers[0].parent_block() is not product.parent_block() \
            or not adds_bias(readers[0], product):
        return None
    reader = readers[0]
    assert isinstance(reader, rdu.MapOp)
    return reader


def epilogue_reads(ops: list[Operation]) -> dict[Operation, Operation]:
    """Each product of `ops` with a bias add (`bias_add_of`) -> that add: where
    the pair reads the product's operands."""
    return {op: add for op in ops if (add := bias_add_of(op)) is not None}


__all__ = ["Product", "adds_bias", "bias_add_of", "bias_shape", "epilogue_reads", "widened_16_bit"]
