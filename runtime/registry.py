"""Numpy implementations registered per op class.

An implementation prepares one op once: it reads the op's attributes and
returns a `Kernel`, called on every run as `kernel(context, *operand arrays)`
(`context` the call's `RunContext`) and returning the result array (a tuple
for several results). Modules register theirs with `@implements(OpClass)`;
`prepare` finds the one for an op's exact class, and an op without one is an
error (nothing falls back). Ops the engines run themselves (terminators,
regions, buffers and DMA) are named with `handled_structurally`, with who
runs them, so that every op of rducc's dialects is accounted for.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar, cast

from xdsl.ir import Operation

from rducc.diagnostics import format_location
from rducc.errors import RduccError
from rducc.registration import registering

Kernel = Callable[..., Any]
"""`kernel(context, *operands)` -> result (or a tuple of results)."""

Prepare = Callable[[Operation], Kernel]
"""Prepares one op (attributes read once) into its kernel."""

Into = Callable[..., object]
"""`into(context, out, *operands)`: writes the op's result into `out`, an array
of the result's shape and dtype that no operand overlaps (an SRAM arena view)."""

P = TypeVar("P", bound=Prepare)

_IMPLEMENTATIONS: dict[type[Operation], Prepare] = {}
_STRUCTURAL: dict[type[Operation], str] = {}


def implements(*op_classes: type[Operation]) -> Callable[[P], P]:
    """Registers the decorated function as the implementation of these op classes."""
    for op_class in op_classes:
        if op_class in _IMPLEMENTATIONS or op_class in _STRUCTURAL:
            raise AssertionError(f"'{op_class.name}' has two implementations")
    return cast("Callable[[P], P]", registering(_IMPLEMENTATIONS, op_classes, _itself))


def _itself(prepare: Prepare) -> Prepare:
    return prepare


def writing_into(kernel: Kernel, into: Into) -> Kernel:
    """`kernel`, which also computes straight into a given array with `into`
    (no temporary result to copy: `into_of`)."""
    kernel.into = into  # type: ignore[attr-defined]
    return kernel


def into_of(kernel: Kernel) -> Into:
    """How a kernel writes its result into a given array: its own `into`
    (`writing_into`), else the kernel's result assigned into `out`."""
    into = getattr(kernel, "into", None)
    if into is not None:
        return into

    def assign(context: Any, out: Any, *operands: Any) -> None:
        out[...] = kernel(context, *operands)

    return assign


def handled_structurally(op_class: type[Operation], how: str) -> None:
    """Records that an engine runs `op_class` itself (`how` says which and how)."""
    if op_class in _IMPLEMENTATIONS or op_class in _STRUCTURAL:
        raise AssertionError(f"'{op_class.name}' is registered twice")
    _STRUCTURAL[op_class] = how


def implementation_for(op_class: type[Operation]) -> Prepare | None:
    """The registered implementation of exactly this op class, or None."""
    return _IMPLEMENTATIONS.get(op_class)


def structural_role(op_class: type[Operation]) -> str | None:
    """How an engine runs this op class itself, or None when it does not."""
    return _STRUCTURAL.get(op_class)


def describe_op(op: Operation) -> str:
    """`'rdu.map' at file:line:col` (or the FX node name) for messages."""
    where = format_location(op.location)
    return f"'{op.name}'" + (f" at {where}" if where else "")


def prepare(op: Operation, runner: str) -> Kernel:
    """The kernel of `op`; `runner` names the engine in the error when there is none."""
    implementation = _IMPLEMENTATIONS.get(type(op))
    if implementation is None:
        raise RduccError(f"the {runner} cannot run {describe_op(op)}: it has no numpy implementation")
    return implementation(op)


__all__ = ["Into", "Kernel", "Prepare", "describe_op", "handled_structurally", "implementation_for", "implements",
           "into_of", "prepare", "structural_role", "writing_into"]
