"""Which configuration a kernel loads, and which kernels of a loop body load theirs.

A kernel's configuration is its mapped body, what its units are programmed
with: the body's ops in order with their operands, types and attributes (the
SRAM offsets `rdu-sram-alloc` gave its own values among these), its tile
count, its mapping onto the fabric (`rdu.mapping`: which PCUs run each stage,
which PMUs hold each buffer) and the types of the buffers it reads and
writes. It is derived from the kernel itself, never from a name: the
kernel's label (`k0`) and where its ops came from (`rdu.layer`) are no part
of it, so two kernels that do the same thing on the same units have one
configuration, whatever layer they were cut from. Where its operands are
(the HBM windows its DMAs read, the SRAM offsets of the buffers it is handed)
is no part of it either: a loop hands each iteration its own, as it hands
each layer its weights.

In a loop (compiler/model/kernel_looping.py) a later iteration's kernel
loads its configuration only when the units do not hold it already: when
the kernel that ran just before it (the body's previous kernel, or across
the back edge the body's last) had another configuration, or ran in several
sections (its last section's configuration is loaded then, not its first).
Nothing else runs on the units between two kernels of one body, nor between
two calls of a loop (only bookkeeping stands there), so nothing else
overwrites them. Where the units hold a body's several configurations side
by side, none is loaded (compiler/model/shared_configuration.py).
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence

from xdsl.ir import Attribute, Block, Operation, SSAValue

from rducc.dialects.contracts import LAYER
from rducc.dialects.tier import ComputeOp
from rducc.dialects.unchanged import remembered

PROVENANCE = frozenset({LAYER})
"""Attributes that say where an op came from, not what the units do."""


def configuration_of(compute: ComputeOp) -> Hashable:
    """The kernel's configuration: equal for two kernels exactly when their units
    are programmed alike (the module docstring says what counts)."""
    return remembered(("configuration", compute), lambda: _configuration(compute))


def _configuration(compute: ComputeOp) -> Hashable:
    numbers: dict[SSAValue, int] = {}
    buffers = tuple(value.type for value in (*compute.ins, *compute.outs))
    return (len(compute.ins), buffers, _attributes(compute), _block(compute.body.block, numbers))


def _attributes(op: Operation) -> tuple[tuple[str, Attribute], ...]:
    """An op's attributes and properties but its label and provenance, in name order."""
    named = {**op.attributes, **{f"property:{k}": v for k, v in op.properties.items() if k != "sym_name"}}
    return tuple(sorted((k, v) for k, v in named.items() if k not in PROVENANCE))


def _block(block: Block, numbers: dict[SSAValue, int]) -> Hashable:
    """A block's arguments' types and its ops in order, each value by the order it was defined in."""
    for arg in block.args:
        numbers[arg] = len(numbers)
    return (tuple(arg.type for arg in block.args), tuple(_op(op, numbers) for op in block.ops))


def _op(op: Operation, numbers: dict[SSAValue, int]) -> Hashable:
    operands = tuple(numbers.get(value, -1) for value in op.operands)
    regions = tuple(tuple(_block(block, numbers) for block in region.blocks) for region in op.regions)
    for result in op.results:
        numbers[result] = len(numbers)
    return (op.name, operands, tuple(r.type for r in op.results), _attributes(op), regions)


def unit_signature(op: Operation) -> Hashable:
    """What a unit running `op` as a stage is programmed with, wherever its operands
    come from: its name, operand and result types, attributes but provenance and
    regions (compiler/model/shared_configuration.py)."""
    numbers: dict[SSAValue, int] = {}
    regions = tuple(tuple(_block(block, numbers) for block in region.blocks) for region in op.regions)
    return (op.name, tuple(v.type for v in op.operands), tuple(r.type for r in op.results), _attributes(op), regions)


def body_reloads(body: Sequence[ComputeOp], sections: Sequence[int]) -> list[bool]:
    """For each kernel of a loop body (in order; `sections`, each one's on the target),
    whether a later iteration loads its configuration: the kernel before it (the last,
    for the first) left another one loaded (a different configuration, or the last
    section of one of several)."""
    return [sections[index - 1] > 1 or configuration_of(body[index - 1]) != configuration_of(compute)
            for index, compute in enumerate(body)]


__all__ = ["PROVENANCE", "body_reloads", "configuration_of", "unit_signature"]
