"""What a group of ops is to the kernel model, as a hashable key.

`rdu-fuse` weighs candidate kernels (a tile plan, a mapping, a modeled
time) thousands of times in a model's graph, and a graph whose repeated
layers are not outlined (a training step's joint graph: forward layers,
then the backward of each) asks the same questions once per layer.
`group_signature` names a group by everything those answers read: each
op's name, properties, attributes (but its layer and location), result
types and regions; how the ops read one another's values; and of each
value from outside, its type and whether the group holds every reader of
it (a window or a gather reads an input only when it does); of each
result, whether something outside reads it. Two groups with one signature
get one answer (`GroupMemo`), so the cost is per distinct group, not per
group.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, field
from typing import Generic, TypeVar

from xdsl.ir import Block, Operation, SSAValue

from rducc.dialects import contracts
from rducc.dialects.unchanged import remembered

_IGNORED = frozenset({contracts.LAYER})
T = TypeVar("T")


@dataclass
class _Encoder:
    """Numbers values as the group defines or first reads them."""

    members: frozenset[Operation]
    inside: dict[SSAValue, int] = field(default_factory=dict)
    outside: dict[SSAValue, int] = field(default_factory=dict)

    def ref(self, value: SSAValue) -> tuple[str, int]:
        if value in self.inside:
            return ("in", self.inside[value])
        return ("out", self.outside.setdefault(value, len(self.outside)))

    def define(self, value: SSAValue) -> None:
        self.inside[value] = len(self.inside)

    def block(self, block: Block) -> tuple[Hashable, ...]:
        for arg in block.args:
            self.define(arg)
        return (tuple(a.type for a in block.args), tuple(self.op(o) for o in block.ops))

    def op(self, op: Operation) -> tuple[Hashable, ...]:
        operands = tuple(self.ref(v) for v in op.operands)
        attributes = tuple(sorted((k, v) for k, v in op.attributes.items() if k not in _IGNORED))
        regions = tuple(tuple(self.block(b) for b in r.blocks) for r in op.regions)
        for result in op.results:
            self.define(result)
        return (op.name, tuple(sorted(op.properties.items())), attributes,
                tuple(r.type for r in op.results), operands, regions)


def _top(op: Operation, members: frozenset[Operation]) -> bool:
    """Whether `op`, or an op holding it, is one of `members`."""
    current: Operation | None = op
    while current is not None:
        if current in members:
            return True
        current = current.parent_op()
    return False


def _op_signature(op: Operation) -> tuple[Hashable, tuple[SSAValue, ...]]:
    """The op alone encoded (`_Encoder.op`), and the values it reads from outside itself
    in the order the encoding first reads them (its operands, then what its regions read)."""
    encoder = _Encoder(frozenset((op,)))
    return encoder.op(op), tuple(encoder.outside)


def group_signature(ops: Sequence[Operation]) -> Hashable:
    """The group's key (see the module docstring): each op's own encoding (once per op
    inside an `unchanged()` block) with the group's numbering of the values it reads."""
    members = frozenset(ops)
    encoder = _Encoder(members)
    body = []
    for op in ops:
        alone, reads = remembered(("op signature", op), lambda: _op_signature(op))  # noqa: B023 - called now
        body.append((alone, tuple(encoder.ref(v) for v in reads)))
        for result in op.results:
            encoder.define(result)
    outside = tuple(
        (value.type, all(_top(use.operation, members) for use in value.uses))
        for value in encoder.outside
    )
    read_after = tuple(any(not _top(use.operation, members) for use in r.uses) for op in ops for r in op.results)
    return (tuple(body), outside, read_after)


@dataclass
class GroupMemo(Generic[T]):
    """Answers about groups, each computed once per signature."""

    compute: Callable[[Sequence[Operation]], T]
    answers: dict[Hashable, T] = field(default_factory=dict)

    def __call__(self, ops: Sequence[Operation]) -> T:
        key = group_signature(ops)
        if key not in self.answers:
            self.answers[key] = self.compute(ops)
        return self.answers[key]
