"""A mixed-type layer norm's statistics across AOT autograd's two graphs.

Under CPU autocast a layer norm reads a 16-bit input with float32 weight and
bias (autocast leaves `layer_norm` alone). ATen's CPU kernel then computes
and returns its mean and rstd in float32, but torch's meta kernel declares
them in the input's 16-bit type. `compile_training`'s joint graph keeps the
forward and the backward in one program, where the backward reads the
kernel's float32 statistics (`aten_normalization._as_kernel_saved`). The
torch.compile backend compiles AOT autograd's forward and backward graphs as
two programs, and the statistics saved between them travel in the declared
16-bit type: the backward's weight and input gradients were a bf16 rounding
off eager autocast's.

`partition_recomputing_statistics` is AOT autograd's default partitioner
after one change to the joint graph: each such layer norm backward reads
its statistics from the same layer norm computed again just before it (the
saved input, weight and bias, the forward's eps), so that the backward
program computes the kernel's float32 statistics itself, as the forward did
(the same kernel on the same values: equal to eager's saved tensors).
"""

from __future__ import annotations

import operator
from typing import Any

import torch

_LAYER_NORM = torch.ops.aten.native_layer_norm.default
_LAYER_NORM_BACKWARD = torch.ops.aten.native_layer_norm_backward.default
_SIXTEEN_BIT = (torch.bfloat16, torch.float16)


def partition_recomputing_statistics(joint: torch.fx.GraphModule, joint_inputs: Any, **options: Any) \
        -> tuple[torch.fx.GraphModule, torch.fx.GraphModule]:
    """AOT autograd's default partition of `joint`, each mixed-type layer norm's
    statistics recomputed in the backward (the module docstring)."""
    from torch._functorch.partitioners import default_partition

    if recompute_mixed_statistics(joint.graph):
        joint.recompile()
    return default_partition(joint, joint_inputs, **options)


def recompute_mixed_statistics(graph: torch.fx.Graph) -> bool:
    """Point each layer norm backward whose statistics torch declares narrower than
    its kernel computes them at a recomputation placed before it; whether any was."""
    changed = False
    for backward in [n for n in graph.nodes if n.target is _LAYER_NORM_BACKWARD]:
        forward = _forward_of(backward)
        if forward is None or not _mixed(forward):
            continue
        with graph.inserting_before(backward):
            again = graph.call_function(_LAYER_NORM, forward.args, forward.kwargs)
            again.meta.update({k: forward.meta[k] for k in ("val", "stack_trace") if k in forward.meta})  # untagged
            mean, rstd = (graph.call_function(operator.getitem, (again, index)) for index in (1, 2))
        for index, statistic in ((1, mean), (2, rstd)):
            statistic.meta["val"] = forward.meta["val"][index]
        backward.update_arg(3, mean)
        backward.update_arg(4, rstd)
        changed = True
    return changed


def _forward_of(backward: torch.fx.Node) -> torch.fx.Node | None:
    """The layer norm whose mean and rstd (its results 1 and 2) `backward` reads, or None."""
    mean, rstd = backward.args[3], backward.args[4]
    if not all(isinstance(s, torch.fx.Node) and s.target is operator.getitem for s in (mean, rstd)):
        return None
    forward = mean.args[0]  # type: ignore[union-attr]
    if forward is not rstd.args[0] or getattr(forward, "target", None) is not _LAYER_NORM:  # type: ignore[union-attr]
        return None
    return forward  # type: ignore[return-value]


def _mixed(layer_norm: torch.fx.Node) -> bool:
    """A 16-bit input with a float32 weight or bias: the kernel's float32 statistics."""
    values = [a.meta.get("val") if isinstance(a, torch.fx.Node) else None for a in layer_norm.args[:4]]
    input, affine = values[0], [v for v in values[2:] if isinstance(v, torch.Tensor)]
    return (isinstance(input, torch.Tensor) and input.dtype in _SIXTEEN_BIT and bool(affine)
            and all(v.dtype == torch.float32 for v in affine))
