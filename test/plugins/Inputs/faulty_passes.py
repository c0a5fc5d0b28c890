"""Passes with bugs of the kinds a pass author makes (for the diagnostics test).

- `break-ir` gives every sigmoid map a result shape its input cannot
  broadcast to: the IR no longer verifies.
- `crash` looks up a key that is not there.
- `scale{factor=F}` multiplies every map's result by F: valid IR, an option.
- `exit` calls sys.exit(0) (a false success unless caught).
"""

from dataclasses import dataclass

from xdsl.dialects.builtin import TensorType

from rducc.api import (
    ModulePass, PatternPass, PatternRewriter, RewritePattern, build_map, map_computes,
    op_type_rewrite_pattern, rdu,
)


class ShrinkSigmoid(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: rdu.MapOp, rewriter: PatternRewriter) -> None:
        if map_computes(op, lambda b, xs: b.sigmoid(xs[0])) and op.result.type.get_shape() != (1,):
            wrong = TensorType(op.result.type.element_type, [1])
            rewriter.replace_op(op, build_map(list(op.inputs), wrong, lambda b, xs: b.sigmoid(xs[0]), op.location))


@dataclass(frozen=True)
class BreakIr(PatternPass):
    """Leaves IR that does not verify."""

    name = "break-ir"

    def patterns(self):
        return [ShrinkSigmoid()]


@dataclass(frozen=True)
class Crash(ModulePass):
    """Raises a KeyError."""

    name = "crash"

    def apply(self, ctx, op):
        counts = {}
        counts["maps"] += 1


@dataclass(frozen=True)
class Scale(ModulePass):
    """Multiply the result of every top-level map by a factor."""

    name = "scale"

    factor: float = 2.0
    """The factor."""

    def apply(self, ctx, op):
        for map_op in [o for o in op.walk() if isinstance(o, rdu.MapOp)]:
            scaled = build_map([map_op.result], map_op.result.type, lambda b, xs: b.mul(xs[0], b.constant(self.factor, xs[0].type)), map_op.location)
            map_op.parent_block().insert_op_after(scaled, map_op)
            map_op.result.replace_uses_with_if(scaled.result, lambda use: use.operation is not scaled)


@dataclass(frozen=True)
class Exit(ModulePass):
    """Calls sys.exit(0), which must not pass for a successful compile."""

    name = "exit"

    def apply(self, ctx, op):
        import sys

        sys.exit(0)
