"""A map over a permuted view computes its result in that view's memory order (issue 32).

A layout op's view (`rducc.runtime.layout_views`) reads its operand's array
in another order: transformers' ConvNeXt permutes its blocks' `[N, H, W, C]`
result back to `[N, C, H, W]` and adds it to the block's input. The map's
value lived in its arena bytes in row-major `[N, C, H, W]` order, so the add
read the view across its strides, and every op after it ran channels-first:
the next block's depthwise 7x7 convolution took PyTorch's channels-first
kernel (1.2 ms at 96x56x56, against 0.3 ms channels-last) and its layer norm
read a permuted view (a copy inside the kernel). Eager's add gives its result
its operands' memory order (TensorIterator), so its whole trunk stays
channels-last.

Where the map's value is read through its slot alone in a compute whose
placement verifies (`PlacedProgram._norm_step`'s conditions), and an operand
of the map's shape is a permutation of a C-contiguous array, the step writes
into a new array of that memory order and binds it to the slot (`ordered`);
otherwise into the arena bytes as before. The same elements are computed by
the same kernel; only where they are stored changes. The array is let go
after its last reader (`rducc.runtime.released_slots`).

Where the operands and that array are not all in one memory order
(`orders_differ`: ConvNeXt's first block of a stage adds the downsampling
convolution's channels-first value to its channels-last result), the map's
arithmetic runs as torch's kernels at one thread too
(`map_body.arithmetic_on_torch`): NumPy's ufunc iterates mixed orders 3-6x
slower than torch's TensorIterator. The same bits either way.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
from xdsl.ir import Operation

from rducc.runtime.context import RunContext
from rducc.runtime.engine import Env, Step
from rducc.runtime.map_body import arithmetic_on_torch


def memory_order(arrays: Sequence[np.ndarray], shape: tuple[int, ...]) -> tuple[int, ...] | None:
    """The dims of `shape`, outermost in memory first, of the first array of
    that shape that is a permutation of a C-contiguous array but not one
    itself; None when no array is."""
    for array in arrays:
        if array.shape != shape or array.flags.c_contiguous or array.ndim < 2:
            continue
        order = tuple(sorted(range(array.ndim), key=lambda d: -array.strides[d]))
        if array.transpose(order).flags.c_contiguous:
            return order
    return None


def orders_differ(arrays: Sequence[np.ndarray], shape: tuple[int, ...]) -> bool:
    """Whether two arrays of `shape` run over its dims (those of more than one
    element) in different memory orders."""
    orders = {tuple(sorted((d for d in range(len(shape)) if shape[d] > 1), key=lambda d: -array.strides[d]))
              for array in arrays if isinstance(array, np.ndarray) and array.shape == shape}
    return len(orders) > 1


def in_order(shape: tuple[int, ...], dtype: np.dtype, order: tuple[int, ...]) -> np.ndarray:
    """A new array of `shape` whose memory runs over its dims in `order`."""
    return np.empty([shape[d] for d in order], dtype).transpose(np.argsort(order))


def ordered(into: Callable[..., object], checked: Step, operands: tuple[int, ...], dest: int,
            shape: tuple[int, ...], dtype: np.dtype, later: list[tuple[Step, Operation]], index: int) -> Step:
    """A map's first-run step: `checked` (into the arena bytes), then, where an
    operand is permuted (`memory_order`), the map again into a new array of
    that order, bound to the slot `dest`, which the later runs' step
    (`later[index]`, replaced here) does alone; otherwise the later step stays
    the plain one. The operands' strides are the same every run."""

    def first_map(env: Env, context: RunContext) -> None:
        checked(env, context)
        order = memory_order([env[i] for i in operands], shape)
        if order is not None:
            mixed = orders_differ([*[env[i] for i in operands], in_order(shape, dtype, order)], shape)
            step = _into_new(into, operands, dest, shape, dtype, order, mixed)
            later[index] = (step, later[index][1])
            step(env, context)

    return first_map


def _into_new(into: Callable[..., object], operands: tuple[int, ...], dest: int, shape: tuple[int, ...],
              dtype: np.dtype, order: tuple[int, ...], mixed: bool) -> Step:
    """The map into a new array of `order`; where the operands and the result
    are not all in one memory order (`mixed`), its arithmetic as torch's
    kernels (`map_body.arithmetic_on_torch`)."""

    def ordered_map(env: Env, context: RunContext) -> None:
        out = in_order(shape, dtype, order)
        into(context, out, *[env[i] for i in operands])
        env[dest] = out

    def mixed_ordered_map(env: Env, context: RunContext) -> None:
        out = in_order(shape, dtype, order)
        with arithmetic_on_torch():
            into(context, out, *[env[i] for i in operands])
        env[dest] = out

    return mixed_ordered_map if mixed else ordered_map


__all__ = ["in_order", "memory_order", "ordered", "orders_differ"]
