"""A grouped convolution on a replicated input, split by whole groups.

Each group's output channels are made from its own input channels alone, so a
rank that takes consecutive whole groups of a replicated input (its slice of
the input channels, no collective), the weight's matching rows (dim 0: a
direct convolution's `[out, in / groups]` and a transposed one's
`[in, out / groups]` are both group-major there) and the bias's slice computes
its groups' output channels whole: the result split by channels, nothing
summed, nothing gathered in the forward. The backward follows from the same
layouts (`_plan_grouped_conv`, `conv_grads.by_whole_groups`: the input
gradient's transposed convolution and the weight gradient a group a rank).

Where it pays is the partitioner's question (`_split_groups`): a depthwise
convolution does 2 x kernel FLOPs an output, so running it whole on every
rank costs about what reading its input does, while a split whose channels
meet at once (a layer norm over channels right after it, as in a ConvNeXt
block, a residual add with the replicated stream, or in a training step the
input's gradient, which what made the replicated input wants whole) pays an
all-gather over the links, an order of magnitude slower than HBM; the split
is taken only where the collectives it meets cost less than the whole
convolutions (forward and gradients) would.
"""

from __future__ import annotations

from rducc.dialects.rdu.dataflow import ConvOp
from rducc.dialects.split import Split


def whole_groups(op: ConvOp, weight_shape: tuple[int, ...], tp: int) -> tuple[list[Split], Split] | None:
    """(the operands' splits, the result's) of grouped `op` on a replicated input, its
    groups over `tp` ranks in consecutive blocks; None when `tp` does not divide
    the groups or the weight's dim 0 (then it runs whole on every rank)."""
    groups = op.groups.value.data
    if groups == 1 or groups % tp or weight_shape[0] % tp:
        return None
    rows = Split.whole(0, tp)  # the weight's group-major dim, and the bias's one
    return [Split.whole(1, tp), rows, *([rows] if op.bias is not None else [])], Split.whole(1, tp)


__all__ = ["whole_groups"]
