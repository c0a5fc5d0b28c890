"""fuse-silu: rewrite x * sigmoid(x) into one elementwise map, silu(x)."""

from dataclasses import dataclass

from rducc.api import (
    PatternPass, PatternRewriter, RewritePattern, build_map, map_computes, op_type_rewrite_pattern, rdu,
)


def sigmoid(b, xs):
    return b.sigmoid(xs[0])


def multiply(b, xs):
    return b.mul(xs[0], xs[1])


def silu(b, xs):
    return b.mul(xs[0], b.sigmoid(xs[0]))


class FuseSilu(RewritePattern):
    """mul(x, sigmoid(x)), either order, of x's own shape -> one map: silu(x)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: rdu.MapOp, rewriter: PatternRewriter) -> None:
        if not map_computes(op, multiply):
            return
        for x, s in (op.inputs, op.inputs[::-1]):
            if map_computes(s.owner, sigmoid) and s.owner.inputs[0] == x and x.type == op.result.type:
                rewriter.replace_op(op, build_map([x], op.result.type, silu, op.location))
                return  # the sigmoid map, now unused, is erased by the rewriter


@dataclass(frozen=True)
class FuseSiluPass(PatternPass):
    """Fuse x * sigmoid(x) into one elementwise silu map (an example plugin)."""

    name = "fuse-silu"

    def patterns(self):
        return [FuseSilu()]
