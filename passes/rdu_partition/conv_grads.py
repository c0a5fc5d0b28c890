"""Convolution gradients' tp splits that their dim maps cannot say.

A bias gradient beside operands read for their shapes alone
(`held_for_shapes`):

`rdu.conv_grad "bias"` is `convolution_backward`'s bias gradient: the output
gradient summed over the images and the spatial dims. Its input and weight
operands only give the kernel the convolution's shapes, which must agree with
each other (the input's channels are the weight's input channels). Under tp a
row-split convolution holds both cut along its input channels (the input's
dim 1, the weight's input-channel dim), and its dim map, which cannot say
"read, but not used", would gather them: a whole activation and weight for a
vector that does not depend on them. This rule keeps them as they are held
when they are cut alike along those dims and nothing else; the gradient's
plan comes from the output gradient alone.

A grouped convolution's gradient split by whole groups (`by_whole_groups`):
each group's output channels are made from its own input channels alone, so
a rank that holds whole groups (the output gradient's and the input's
channels, and the weight's dim 0, group-major in a direct convolution's
`[out, in / groups]` and a transposed one's `[in, out / groups]`, cut alike
into consecutive blocks of groups) computes its groups' input, weight and
bias gradients with its share of the groups: no partial sum, no collective.
The dim map reads a grouped one's channels whole, since a cut inside a group
(or across groups unequally) mixes them; such cuts are still gathered.
"""

from __future__ import annotations

from collections.abc import Sequence

from rducc.dialects.rdu.conv_grad import ConvGradOp
from rducc.dialects.split import Period, Split


def held_for_shapes(op: ConvGradOp, splits: Sequence[Split | None]) -> tuple[Split, Split] | None:
    """(input, weight) splits of a dense bias gradient's shape-only operands when
    both are cut along their input channels alone, over the same parts; else None."""
    if op.of.data != "bias" or op.groups.value.data != 1:
        return None
    _, image, weight = splits
    if image is None or weight is None:
        return None
    inputs = op.weight_channel_dims()[1]
    if image.dims() != {1} or weight.dims() != {inputs}:
        return None
    return (image, weight) if image.entries[0][1:] == weight.entries[0][1:] else None


def by_whole_groups(op: ConvGradOp, splits: Sequence[Split | None]) -> tuple[tuple[Split, ...], Split] | None:
    """(the operands' splits, the result's) of a grouped convolution gradient whose
    split operands hold whole groups, cut alike along their channels and nothing
    else (the module docstring); None where none is split so, or one is otherwise
    (the dim map's plan then: the batch, or gathered)."""
    channel_dims = (1, 1, 0)  # grad's and input's channels, the weight's group-major dim
    entries = [None if split is None else _only_entry(split, dim) for split, dim in zip(splits, channel_dims)]
    held = {entry for split, entry in zip(splits, entries) if split is not None}
    if len(held) != 1 or (first := held.pop()) is None:
        return None  # none split, one cut along another dim, or two cut unlike
    parts, stride, period = first
    if period or op.groups.value.data % parts:
        return None
    wants = tuple(Split(((dim, parts, stride, 0),)) for dim in channel_dims)
    return wants, wants[{"input": 1, "weight": 2, "bias": 2}[op.of.data]]


def _only_entry(split: Split, dim: int) -> tuple[int, int, Period] | None:
    """(parts, stride, period) of `split` when it cuts `dim` alone; else None."""
    if split.dims() != {dim}:
        return None
    _, parts, stride, period = split.entries[0]
    return parts, stride, period


__all__ = ["by_whole_groups", "held_for_shapes"]
