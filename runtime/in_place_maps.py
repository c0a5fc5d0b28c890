"""A linear layer's activation computed in place over the product's bytes (issue 32).

A linear layer followed by an activation (ConvNeXt's and ViT's `fc1` then
exact GELU) is a product, its bias add and a one-input map. The runtime runs
the product with the bias in the GEMM's epilogue at the add, into the add's
bytes (`rducc.runtime.epilogues`: `at_add`), so the product's own bytes are
never written; and the SRAM plan, seeing the product die at the add, places
the activation's value on exactly those bytes (17 of ConvNeXt-T's 18 GELUs).
The activation then wrote memory no step had touched this call, while the
bytes the GEMM had just written were read once and dropped.

Where that holds (`over_products`), the folded GEMM writes the product's
bytes instead of the add's, and the activation runs over them in place
(`.in_place` of the map's kernel: torch's kernel with `out=` its input):
one region written and read back instead of two, the add's bytes never
touched (33 MB a ConvNeXt-T call less written; its GELU steps were not
measurably faster on a loaded machine: BENCHMARKS.md, runtime25).
Conditions, from the compute's placement (`Placement`):

- the add is folded at the add (`BiasFolds.at_add`) with a product of a
  rank-2 weight (`rdu.matmul`), and its value is read, through reshapes
  each read once, by one map of one input whose kernel has an in-place form
  (`map_body._torch_body`: a one-input f32 activation);
- that map's bytes are the product's bytes, and neither the add's value nor
  the map's is yielded;
- nothing between the product and the map writes those bytes (the plan
  gives them to no other value then: the GEMM reads its operands, live up
  to the add, while it writes them).

The GEMM writes the product's bytes only where its add's value was to be in
the add's own bytes (not an output's, not a reshape's). The map's step
checks at each run that its input's array is the bytes it writes, in the
same order (the reshapes were views); else (a reshape copied the value
elsewhere) it computes into its bytes from there as before. The
same kernels compute the same elements, so the bits are the same (where the
input is not finite, the op-by-op values are read before the kernel
overwrites them).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator

import numpy as np
from xdsl.ir import Operation, SSAValue

from rducc.dialects.rdu import dataflow as rdu
from rducc.runtime.context import RunContext
from rducc.runtime.engine import Env, Step
from rducc.runtime.epilogues import BiasFolds
from rducc.runtime.views import Placement, overlap

InPlace = Callable[[np.ndarray], None]
"""A one-input map's values computed over its input (`map_body._torch_body`'s `.in_place`)."""

Into = Callable[..., object]
"""A map's kernel writing into a given array (`registry.into_of`)."""

_ENABLED = {"in_place": True}


@contextlib.contextmanager
def into_own_bytes() -> Iterator[None]:
    """Inside, programs prepared run every folded linear layer into its add's
    bytes and every map into its own from there (the steps before this
    module): the reference a test or an A/B compares against."""
    _ENABLED["in_place"] = False
    try:
        yield
    finally:
        _ENABLED["in_place"] = True


def activation_reading(add: rdu.MapOp) -> rdu.MapOp | None:
    """The one-input map reading `add`'s value through reshapes each read
    once (the add's value included), or None."""
    value: SSAValue = add.results[0]
    while True:
        uses = list(value.uses)
        if len(uses) != 1:
            return None
        reader = uses[0].operation
        if isinstance(reader, rdu.ReshapeOp):
            value = reader.result
            continue
        return reader if isinstance(reader, rdu.MapOp) and len(reader.operands) == 1 else None


def over_products(folds: BiasFolds, ops: list[Operation], placement: Placement,
                  in_place_of: Callable[[rdu.MapOp], InPlace | None]) -> dict[rdu.MapOp, rdu.MapOp]:
    """Each bias add whose folded GEMM may write its product's bytes, with
    the activation map computed in place there (module docstring).
    `in_place_of`: a map's in-place form, or None."""
    found: dict[rdu.MapOp, rdu.MapOp] = {}
    if not _ENABLED["in_place"]:
        return found
    for add, product in folds.at_add.items():
        activation = activation_reading(add)
        if not isinstance(product, rdu.MatmulOp) or activation is None or activation not in ops \
                or add.results[0] in placement.outs or activation.results[0] in placement.outs:
            continue
        held = placement.written(product)
        if held is None or placement.written(activation) != held:
            continue
        between = ops[ops.index(product) + 1:ops.index(activation)]
        if any(overlap(placement.written(op), held) for op in between if op.results):
            continue
        if in_place_of(activation) is not None:
            found[add] = activation
    return found


def _same_bytes(x: np.ndarray, out: np.ndarray) -> bool:
    """Whether `x` and `out` are the same C-contiguous bytes (one element order)."""
    return x.flags.c_contiguous and out.flags.c_contiguous and x.nbytes == out.nbytes \
        and x.__array_interface__["data"][0] == out.__array_interface__["data"][0]


def in_place_step(in_place: InPlace, into: Into, operand: int, dest: int) -> Step:
    """The activation map's step: over its bytes (the slot `dest`) in place
    where its input (the slot `operand`) is those bytes, else `into` from
    the input as before."""

    def in_place_activation(env: Env, context: RunContext) -> None:
        x, out = env[operand], env[dest]
        if isinstance(x, np.ndarray) and _same_bytes(x, out):
            in_place(out)
        else:
            into(context, out, x)

    return in_place_activation


__all__ = ["InPlace", "activation_reading", "in_place_step", "into_own_bytes", "over_products"]
