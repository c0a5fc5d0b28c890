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
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from rducc.runtime.context import RunContext
from rducc.runtime.engine import Env, Step


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


def in_order(shape: tuple[int, ...], dtype: np.dtype, order: tuple[int, ...]) -> np.ndarray:
    """A new array of `shape` whose memory runs over its dims in `order`."""
    return np.empty([shape[d] for d in order], dtype).transpose(np.argsort(order))


def ordered(into: Callable[..., object], plain: Step, operands: tuple[int, ...], dest: int,
            shape: tuple[int, ...], dtype: np.dtype) -> Step:
    """A map's step: into a new array in the memory order of its permuted
    operand (`memory_order`), bound to the slot `dest`; `plain` (into the arena
    bytes) where no operand is permuted."""

    def ordered_map(env: Env, context: RunContext) -> None:
        args = [env[i] for i in operands]
        order = memory_order(args, shape)
        if order is None:
            plain(env, context)
            return
        out = in_order(shape, dtype, order)
        into(context, out, *args)
        env[dest] = out

    return ordered_map


__all__ = ["in_order", "memory_order", "ordered"]
