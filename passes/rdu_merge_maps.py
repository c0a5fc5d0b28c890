"""`rdu-merge-maps`: merge elementwise chains inside each kernel into one map.

An `rdu.map` whose only user is another `rdu.map` of the same result shape
in the same block is folded into it: the consumer takes the producer's
inputs and runs the producer's body first. The chain then computes in one
pass over the data, with no intermediate tensor in SRAM. Shapes must match
so that no producer element is computed more than once.

Runs on kernel bodies (after `rdu-fuse`), where merging never crosses a
kernel boundary; `on_graph=true` also merges in the top-level graph.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Block, Region, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)

from rducc.dialects.contracts import Level
from rducc.dialects.rdu.dataflow import KernelOp, MapOp, YieldOp
from rducc.passes.common import require_tensor_program


def _single_map_user(producer: MapOp) -> MapOp | None:
    uses = list(producer.result.uses)
    if len(uses) != 1 or not isinstance(uses[0].operation, MapOp):
        return None
    consumer = uses[0].operation
    if consumer.parent_block() is not producer.parent_block():
        return None
    if consumer.result.type.get_shape() != producer.result.type.get_shape():
        return None
    return consumer


def merged_map(producer: MapOp, consumer: MapOp) -> MapOp:
    """One map computing `consumer(producer(...), ...)`."""
    index = next(i for i, v in enumerate(consumer.inputs) if v == producer.result)
    kept = [(i, v) for i, v in enumerate(consumer.inputs) if i != index]
    inputs = [v for _, v in kept] + list(producer.inputs)
    old_consumer, old_producer = consumer.body.block, producer.body.block
    block = Block(arg_types=[old_consumer.args[i].type for i, _ in kept] + [a.type for a in old_producer.args])
    for new, old in zip(block.args, [old_consumer.args[i] for i, _ in kept] + list(old_producer.args)):
        new.location, new.name_hint = old.location, old.name_hint
    mapping: dict[SSAValue, SSAValue] = dict(zip([old_consumer.args[i] for i, _ in kept], block.args))
    mapping.update(zip(old_producer.args, block.args[len(kept) :]))
    for op in old_producer.ops:
        if isinstance(op, YieldOp):
            mapping[old_consumer.args[index]] = mapping.get(op.values[0], op.values[0])
            continue
        block.add_op(op.clone(value_mapper=mapping))
    for op in old_consumer.ops:
        block.add_op(op.clone(value_mapper=mapping))
    merged = MapOp(inputs, consumer.result.type, Region(block))
    merged.attributes.update(consumer.attributes)
    merged.location = consumer.location
    return merged


class MergeMapIntoItsUser(RewritePattern):
    """map(map(x)) of one shape -> one map, when the inner map has no other user."""

    def __init__(self, on_graph: bool):
        self.on_graph = on_graph

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: MapOp, rewriter: PatternRewriter) -> None:
        if not self.on_graph and not isinstance(op.parent_op(), KernelOp):
            return
        consumer = _single_map_user(op)
        if consumer is None:
            return
        rewriter.replace_op(consumer, merged_map(op, consumer))
        rewriter.erase_op(op)


@dataclass(frozen=True)
class RduMergeMaps(ModulePass):
    """Merge chains of same-shape elementwise maps inside kernels into one map each."""

    name = "rdu-merge-maps"
    accepts: ClassVar[tuple[Level, ...]] = (Level.KERNELS,)
    produces: ClassVar[Level | None] = None

    on_graph: bool = False
    """Also merge maps outside kernels (in the level-1 graph)."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        require_tensor_program(op, self.name, self.accepts)
        walker = PatternRewriteWalker(MergeMapIntoItsUser(self.on_graph), apply_recursively=True)
        walker.rewrite_module(op)
