"""ATen layout ops (reshape, permute, transpose, expand, slice, select, cat,
split), embedding, index, arange and scalar reads.
"""

from __future__ import annotations

import torch
from xdsl.dialects.builtin import TensorType
from xdsl.ir import SSAValue

from rducc.dialects.rdu.dataflow import (
    BroadcastOp,
    ConcatOp,
    GatherOp,
    IotaOp,
    TransposeOp,
)
from rducc.dialects.shapes import is_float
from rducc.frontend.aten_build import cast, reshape, slice_dim
from rducc.frontend.aten_common import element_of, result_type, shape_of, slice_bounds
from rducc.frontend.converter_api import (
    GraphImporter,
    assertion_only_nodes,
    converts,
    fake_value,
    node_arguments,
    positional,
)


@converts(
    "aten.view.default",
    "aten._unsafe_view.default",
    "aten.reshape.default",
    "aten.unsqueeze.default",
    "aten.squeeze.dim",
    "aten.squeeze.dims",
    "aten.squeeze.default",
    "aten.flatten.using_ints",
)
def convert_reshape(g: GraphImporter, node: torch.fx.Node) -> SSAValue:
    return reshape(g, g.value(positional(node)[0]), result_type(node).get_shape())


def _check_scalar_read(node: torch.fx.Node) -> str | None:
    dropped = assertion_only_nodes(node.graph)
    if not any(user.op != "output" and user not in dropped for user in node.users):
        return None
    taker = _op_taking_number(node)
    if taker is not None:
        return (f"a tensor read back as a Python number and passed to {taker.target} as a Scalar: that op has no "
                "Tensor overload, and torch's decomposition of it does not keep the number a value (it computes "
                "with it in Python or branches on it)")
    return "a tensor read back as a Python number used inside the graph (data-dependent)"


def _op_taking_number(read: torch.fx.Node) -> torch.fx.Node | None:
    """The first ATen op that takes `read`'s number, directly or through Python arithmetic on it."""
    pending, seen = list(read.users), set()
    while pending:
        user = pending.pop(0)
        if user in seen or user.op != "call_function":
            continue
        seen.add(user)
        if isinstance(user.target, torch._ops.OpOverload) and user.target.namespace == "aten":
            return user
        pending += list(user.users)
    return None


@converts("aten._local_scalar_dense.default", check=_check_scalar_read)
def convert_scalar_read(g: GraphImporter, node: torch.fx.Node) -> SSAValue:
    """`tensor.item()` returned by the model: the rank-0 tensor itself (rducc.Program
    hands it back as a Python number)."""
    return reshape(g, g.value(positional(node)[0]), [])


@converts("aten.permute.default")
def convert_permute(g: GraphImporter, node: torch.fx.Node) -> SSAValue:
    value = g.value(positional(node)[0])
    perm = [d % max(len(shape_of(value)), 1) for d in positional(node)[1]]
    if perm == sorted(perm):
        return value
    return g.emit(TransposeOp(value, perm, result_type(node)))


@converts("aten.transpose.int", "aten.t.default")
def convert_transpose(g: GraphImporter, node: torch.fx.Node) -> SSAValue:
    value = g.value(positional(node)[0])
    rank = len(shape_of(value))
    if rank < 2:
        return value
    a, b = (positional(node)[1], positional(node)[2]) if len(positional(node)) > 2 else (0, 1)
    perm = list(range(rank))
    perm[a % rank], perm[b % rank] = perm[b % rank], perm[a % rank]
    return g.emit(TransposeOp(value, perm, result_type(node)))


@converts("aten.expand.default")
def convert_expand(g: GraphImporter, node: torch.fx.Node) -> SSAValue:
    value = g.value(positional(node)[0])
    if shape_of(value) == tuple(result_type(node).get_shape()):
        return value
    return g.emit(BroadcastOp(value, result_type(node)))


@converts("aten.slice.Tensor")
def convert_slice(g: GraphImporter, node: torch.fx.Node) -> SSAValue:
    args = node_arguments(node)
    value = g.value(args["self"])
    shape = shape_of(value)
    dim = args["dim"] % len(shape)
    start, end = slice_bounds(shape[dim], args["start"], args["end"])
    step = args["step"]
    size = max(0, -(-(end - start) // step))
    return slice_dim(g, value, dim, start if size else 0, size, step)


@converts("aten.select.int")
def convert_select(g: GraphImporter, node: torch.fx.Node) -> SSAValue:
    value = g.value(positional(node)[0])
    shape = shape_of(value)
    dim = positional(node)[1] % len(shape)
    index = positional(node)[2] % shape[dim]
    return reshape(g, slice_dim(g, value, dim, index, 1), result_type(node).get_shape())


@converts("aten.cat.default")
def convert_cat(g: GraphImporter, node: torch.fx.Node) -> SSAValue:
    out = result_type(node)
    rank = len(out.get_shape())
    dim = (positional(node)[1] if len(positional(node)) > 1 else 0) % max(rank, 1)
    # PyTorch lets legacy 1-D empty tensors join anything; they add nothing.
    values = [
        cast(g, g.value(v), out.element_type) for v in positional(node)[0] if fake_value(v).shape != (0,) or rank == 1
    ]
    if len(values) == 1:
        return values[0]
    return g.emit(ConcatOp(values, dim, out))


@converts("aten.split_with_sizes.default", "aten.split.Tensor")
def convert_split(g: GraphImporter, node: torch.fx.Node) -> tuple[SSAValue, ...]:
    value = g.value(positional(node)[0])
    shape = shape_of(value)
    dim = (positional(node)[2] if len(positional(node)) > 2 else 0) % len(shape)
    pieces = [tuple(f.shape)[dim] for f in fake_value(node)]
    results, start = [], 0
    for size in pieces:
        results.append(slice_dim(g, value, dim, start, size))
        start += size
    return tuple(results)


@converts("aten.embedding.default")
def convert_embedding(g: GraphImporter, node: torch.fx.Node) -> SSAValue:
    weight, indices = g.value(positional(node)[0]), g.value(positional(node)[1])
    return g.emit(GatherOp(weight, [indices], 0, result_type(node)))


def _check_index(node: torch.fx.Node) -> str | None:
    present = [i for i, index in enumerate(positional(node)[1]) if index is not None]
    if not present:
        return "no index tensor"
    if any(fake_value(positional(node)[1][i]).dtype in (torch.bool, torch.uint8) for i in present):
        return "boolean mask index (data-dependent shape; a uint8 index is a mask too)"
    return None


@converts("aten.index.Tensor", check=_check_index)
def convert_index(g: GraphImporter, node: torch.fx.Node) -> SSAValue:
    """source[..., i, j, ...]: adjacent index tensors gather in place. Non-adjacent
    ones put their broadcast dims first (PyTorch's rule): the indexed dims move
    to the front of the source and the gather is at dim 0."""
    source = g.value(positional(node)[0])
    present = [i for i, index in enumerate(positional(node)[1]) if index is not None]
    indices = [g.value(positional(node)[1][i]) for i in present]
    if present == list(range(present[0], present[-1] + 1)):
        return g.emit(GatherOp(source, indices, present[0], result_type(node), wraps=True))
    shape = shape_of(source)
    perm = present + [d for d in range(len(shape)) if d not in present]
    moved = g.emit(TransposeOp(source, perm, TensorType(element_of(source), [shape[d] for d in perm])))
    return g.emit(GatherOp(moved, indices, 0, result_type(node), wraps=True))


@converts("aten.arange.start_step", "aten.arange.default", "aten.arange.start")
def convert_arange(g: GraphImporter, node: torch.fx.Node) -> SSAValue:
    out = result_type(node)
    args = node_arguments(node)
    start = args.get("start", 0) if str(node.target) != "aten.arange.default" else 0
    step = args.get("step", 1) or 1
    if not is_float(out.element_type):
        start, step = int(start), int(step)
    else:
        start, step = float(start), float(step)
    return g.emit(IotaOp(start, step, out))
