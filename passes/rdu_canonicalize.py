"""`rdu-canonicalize`: tidy the imported graph before fusion.

Applies the `rdu` dialect's canonicalization patterns
(`rducc.dialects.rdu.canonicalization`, attached to their ops through xDSL's
`HasCanonicalizationPatternsTrait`, so the stock `canonicalize` sees them too)
and removes dead ops (every rdu op is Pure). Unlike `canonicalize`, it leaves
the ops of other dialects (the `arith` bodies of maps) as they are.

Run `cse` after it to merge duplicates (the pipelines do).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Block, Operation, OpResult, SSAValue
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
)

from rducc.dialects.contracts import TENSOR_LEVELS, Level
from rducc.dialects.rdu.canonicalization import CANONICALIZATION_PATTERNS
from rducc.dialects.rdu.dataflow import RduCanonicalization
from rducc.passes.common import RduPass


class ApplyRduPatterns(RewritePattern):
    """An rdu op's own canonicalization patterns (its `RduCanonicalization` trait)."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        trait = op.get_trait(RduCanonicalization)
        if trait is not None:
            GreedyRewritePatternApplier(list(trait.get_patterns(type(op)))).match_and_rewrite(op, rewriter)


def folds_across(source: SSAValue, consumer: Operation, read_as: SSAValue) -> bool:
    """Whether a pattern here rewrites `consumer` by looking through the op that
    defines `source`, were `consumer` to read `source` where it reads `read_as`
    (a fold across a boundary, such as a call's). Asked of the patterns
    themselves, on copies: they rewrite `consumer` reading `source`'s op, and
    not `consumer` reading an opaque value of the same type."""
    if not isinstance(source, OpResult):
        return False
    return _rewrites(consumer, {read_as: source}) and not _rewrites(consumer, {})


def _rewrites(consumer: Operation, reads: dict[SSAValue, OpResult]) -> bool:
    """Whether a pattern rewrites a copy of `consumer` in a scratch block whose
    operands are opaque values, but those in `reads`, which read a copy of their
    source's op (itself on opaque values)."""
    scratch = Block()
    mapping: dict[SSAValue, SSAValue] = {}

    def opaque(value: SSAValue) -> SSAValue:
        if value not in mapping:
            mapping[value] = scratch.insert_arg(value.type, len(scratch.args))
        return mapping[value]

    for read_as, source in reads.items():
        producer = source.op
        copy = producer.clone(value_mapper={v: opaque(v) for v in producer.operands})
        scratch.add_op(copy)
        mapping[read_as] = copy.results[source.index]
    probe = consumer.clone(value_mapper={v: opaque(v) for v in consumer.operands})
    scratch.add_op(probe)
    try:
        return any(_rewritten_by(pattern(), probe) for pattern in CANONICALIZATION_PATTERNS)
    finally:
        for op in reversed(list(scratch.ops)):
            scratch.erase_op(op, safe_erase=False)


def _rewritten_by(pattern: RewritePattern, op: Operation) -> bool:
    rewriter = PatternRewriter(op)
    pattern.match_and_rewrite(op, rewriter)
    return rewriter.has_done_action


@dataclass(frozen=True)
class RduCanonicalize(RduPass):
    """Fold no-op and chained layout ops, transposes into matmuls, fills into maps; drop dead ops."""

    name = "rdu-canonicalize"
    accepts: ClassVar[tuple[Level, ...]] = TENSOR_LEVELS

    def rewrite(self, ctx: Context, op: ModuleOp) -> None:
        PatternRewriteWalker(ApplyRduPatterns(), apply_recursively=True).rewrite_module(op)
