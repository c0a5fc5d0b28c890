"""A convolution's bias gradient beside operands read for their shapes alone.

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
"""

from __future__ import annotations

from collections.abc import Sequence

from rducc.dialects.rdu.conv_grad import ConvGradOp
from rducc.dialects.split import Split


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


__all__ = ["held_for_shapes"]
