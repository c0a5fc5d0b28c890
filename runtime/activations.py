"""torch's one-pass kernels of the activations a map body spells out op by op.

A decomposed map body may compute an activation op by op (exact GELU is five
ops: two products, erf, a sum, a product; SiLU `x * (1 / (1 + exp(-x)))`
five; sigmoid four), where eager calls torch's one-pass kernel, with its own
exponential inside (SLEEF's, not `torch.exp`'s MKL one: sigmoid op by op
differs from eager's in ~2% of elements). `rducc.runtime.map_body` runs such
a computation as torch's kernel, in two places:

- a whole one-input f32 body (`map_body._known_activation`): ViT's and
  ConvNeXt's GELU maps;
- a part of a larger body that reads one input alone (`cones`): Mixtral's
  `up * silu(gate)` map is torch's SiLU then one product, as eager computes
  it, not six passes over the arrays. A map input bound to several body
  arguments (the gate read twice) is one input.

Which activation a computation is, is decided by evaluating it on `PROBE`.
Whether torch's kernel keeps the decomposition's values where the input is
not finite (inf, -inf, nan) is decided once per computation, on this CPU's
kernel (`agrees_off_finite`): torch's vectorised kernels do not always keep
the formula there (exact GELU gives nan at +inf with AVX-512, inf with AVX2).
Where it agrees, a call needs no check of its input; where it does not, a
whole body or a part of one keeps a finiteness check (`patch_off_finite`: one
pass over the input) and takes the op-by-op values where the input is not
finite, so finite inputs get eager's bits on every CPU.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import partial
from types import SimpleNamespace
from typing import Any

import numpy as np
import torch
from xdsl.ir import Block, BlockArgument, Operation, SSAValue

from rducc.dialects.rdu.dataflow import YieldOp
from rducc.runtime import elementwise
from rducc.runtime.dtypes import F32, element_dtype

KERNELS: dict[str, Callable[..., torch.Tensor]] = {
    "gelu": torch._C._nn.gelu,
    "gelu_tanh": partial(torch._C._nn.gelu, approximate="tanh"),
    "silu": torch._C._nn.silu,
    "sigmoid": torch.sigmoid,
}
"""Each activation's torch kernel (`kernel(tensor, out=None)`), the C++
binding eager calls, not the Python `torch.ops.aten` op object."""

ON_ARRAYS = SimpleNamespace(**{name: elementwise.torch_math(kernel) for name, kernel in KERNELS.items()})
"""Each activation as a body calls it (`_tk.NAME(array, out=None)`)."""

PROBE = np.concatenate([
    np.linspace(-12.0, 12.0, 4801), np.geomspace(1e-30, 1e37, 400), -np.geomspace(1e-30, 1e37, 400),
    [0.0, -0.0, np.nan],
]).astype(F32)
"""Values a one-input f32 computation is evaluated on to tell whether it is an
activation (not infinities and f32's last decade: there torch's kernels
overflow where the decomposition does not, as eager's do)."""

_OFF_FINITE = [np.full(length, value, F32)
               for value in (np.inf, -np.inf, np.nan) for length in (1, 7, 8, 15, 16, 33, 1027)]
"""Arrays of one non-finite value each, of lengths that take a vectorised
kernel's scalar tail, its vector loop and both."""

MIN_OPS = 3
"""The fewest computing ops a body part is looked at for (an activation is 4-8)."""


def matching(computation: Callable[[np.ndarray], Any]) -> str | None:
    """The activation a one-input f32 computation is on `PROBE` (to f32
    rounding: the decomposition loses up to ~4e-7 where 1 + erf(x) cancels,
    which torch's kernel does not), or None."""
    with np.errstate(all="ignore"):
        computed = np.asarray(computation(PROBE), dtype=F32)
    for name, kernel in KERNELS.items():
        expected = kernel(torch.from_numpy(PROBE)).numpy()
        if np.allclose(computed, expected, rtol=2e-6, atol=1e-6, equal_nan=True):
            return name
    return None


def agrees_off_finite(name: str, computation: Callable[[np.ndarray], Any]) -> bool:
    """Whether this CPU's kernel of activation `name` gives what `computation`
    gives on inputs that are not finite, in a vector loop and its tail."""
    with np.errstate(all="ignore"):
        for x in _OFF_FINITE:
            expected = np.broadcast_to(np.asarray(computation(x), dtype=F32), x.shape)
            if not np.array_equal(KERNELS[name](torch.from_numpy(x)).numpy(), expected, equal_nan=True):
                return False
    return True


def patch_off_finite(result: np.ndarray, x: np.ndarray, op_by_op: Callable[[np.ndarray], Any]) -> None:
    """Where `x` is not finite, `result` (a kernel's activation of `x`) takes
    `op_by_op`'s values. A finite sum of `x` (one pass) shows every input
    finite (an inf or nan makes the sum inf or nan; an overflowing sum of
    finite values only costs the look at the inputs); only otherwise are the
    inputs looked at. (Not the result's sum: a kernel may map an input that
    is not finite to a finite value the formula does not give.)"""
    off = off_finite(np.asarray(x), result.shape)
    if off is not None:
        patch(result, off, op_by_op)


def off_finite(x: np.ndarray, shape: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray] | None:
    """Where `x` broadcast to `shape` is not finite (a mask) and its values
    there, or None where every element is finite (`patch_off_finite`'s one
    pass: a finite sum)."""
    summed = torch.from_numpy(x).sum() if x.flags.writeable and min(x.strides, default=0) >= 0 else x.sum()
    if np.isfinite(float(summed)):
        return None
    x = np.broadcast_to(x, shape)
    off = ~np.isfinite(x)
    return (off, x[off]) if off.any() else None


def patch(result: np.ndarray, off: tuple[np.ndarray, np.ndarray], op_by_op: Callable[[np.ndarray], Any]) -> None:
    """`result` takes `op_by_op`'s values of the inputs `off` found (`off_finite`)."""
    where, values = off
    with np.errstate(all="ignore"):
        result[where] = op_by_op(values)


def guarded_on_arrays(name: str, op_by_op: Callable[[np.ndarray], Any]) -> Callable[..., np.ndarray]:
    """Activation `name` as a body calls it (`ON_ARRAYS`), where this CPU's
    kernel does not keep `op_by_op`'s values off the finite inputs: those
    elements take `op_by_op`'s (`patch_off_finite`)."""
    kernel = getattr(ON_ARRAYS, name)

    def run(x: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
        result = kernel(x, out=out)
        patch_off_finite(result, x, op_by_op)
        return result

    return run


@dataclass
class Cones:
    """Parts of a map body that compute an activation of one input: each
    part's last op (its root) with the activation and the body argument it
    reads, and the part's other ops (no op outside the part reads them).
    `guarded`: the roots whose kernel does not keep the part's values off the
    finite inputs, each with its call (`guarded_on_arrays`)."""

    roots: dict[Operation, tuple[str, BlockArgument]] = field(default_factory=dict)
    inside: set[Operation] = field(default_factory=set)
    guarded: dict[Operation, Callable[..., np.ndarray]] = field(default_factory=dict)


_CONSTANT = "constant"


def _sources(block: Block, first: Sequence[int]) -> dict[SSAValue, Any]:
    """Each body value's one input (the first body argument bound to it:
    `first[i]` is the index of argument i's), `_CONSTANT` for values of
    constants alone, None for values of several inputs."""
    source: dict[SSAValue, Any] = {arg: block.args[first[arg.index]] for arg in block.args}
    for op in block.ops:
        read = {source.get(v) for v in op.operands} - {_CONSTANT}
        one = read.pop() if len(read) == 1 else (None if read else _CONSTANT)
        for result in op.results:
            source[result] = one
    return source


def _read_by_others(op: Operation, arg: BlockArgument, source: dict[SSAValue, Any]) -> bool:
    """Whether `op`'s value is yielded or read by an op whose value is not of `arg` alone."""
    return any(not use.operation.results or source[use.operation.results[0]] is not arg for use in op.results[0].uses)


def _cone(root: Operation, arg: BlockArgument, source: dict[SSAValue, Any]) -> list[Operation]:
    """The ops `root`'s value is computed by from `arg` and constants, `root` included."""
    found: dict[Operation, None] = {}
    pending = [root]
    while pending:
        op = pending.pop()
        if op in found:
            continue
        found[op] = None
        pending += [v.owner for v in op.operands if isinstance(v.owner, Operation) and source[v] in (arg, _CONSTANT)]
    return list(found)


def _closed(cone: list[Operation], root: Operation) -> bool:
    """Whether no op outside `cone` reads a value of the cone but the root's
    (constants may be shared: they are bound, not computed)."""
    members = set(cone)
    return all(use.operation in members for op in cone if op is not root and op.name != "arith.constant"
               for result in op.results for use in result.uses)


def _as_block(cone: list[Operation], root: Operation, arg: BlockArgument, first: Sequence[int]) -> Block:
    """The cone as a body of one f32 argument (every body argument bound to
    `arg`'s input is that argument), yielding the root's value."""
    block = Block(arg_types=[arg.type])
    mapping: dict[SSAValue, SSAValue] = {a: block.args[0] for a in arg.block.args if first[a.index] == arg.index}
    members = set(cone)
    for op in arg.block.ops:
        if op in members:
            clone = op.clone(value_mapper=mapping)
            mapping.update(zip(op.results, clone.results, strict=True))
            block.add_op(clone)
    block.add_op(YieldOp(mapping[root.results[0]]))
    return block


def cones(block: Block, first: Sequence[int], compile_block: Callable[[Block], Callable[..., Any]]) -> Cones:
    """The parts of `block` that compute an activation of one f32 input (each
    guarded where torch's kernel does not keep their values where that input
    is not finite); each
    part is as large as it can be: its root's value is read by an op of other
    inputs or yielded. `first[i]` is the index of the first body argument
    bound to the map input argument i is bound to; `compile_block` compiles
    a part to a function of one array."""
    source = _sources(block, first)
    found = Cones()
    for op in block.ops:
        arg = source.get(op.results[0]) if len(op.results) == 1 else None
        if not isinstance(arg, BlockArgument) or op.name == "rdu.yield" or element_dtype(arg.type) != F32 \
                or element_dtype(op.results[0].type) != F32:
            continue
        if not _read_by_others(op, arg, source):
            continue  # read only by ops of this input: not a part's last op
        cone = _cone(op, arg, source)
        if len([o for o in cone if o.name != "arith.constant"]) < MIN_OPS or not _closed(cone, op):
            continue
        computation = compile_block(_as_block(cone, op, arg, first))
        name = matching(computation)
        if name is None:
            continue
        found.roots[op] = (name, arg)
        found.inside |= {o for o in cone if o is not op and o.name != "arith.constant"}
        if not agrees_off_finite(name, computation):
            found.guarded[op] = guarded_on_arrays(name, computation)
    return found


__all__ = ["KERNELS", "MIN_OPS", "ON_ARRAYS", "PROBE", "Cones", "agrees_off_finite", "cones", "guarded_on_arrays",
           "matching", "off_finite", "patch", "patch_off_finite"]
