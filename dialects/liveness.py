"""Liveness: where in a block a value is last read.

One rule for every pass, analysis and verifier that asks how long a value
lives (`rdu-place-tiers`' activation peak, `rdu-insert-dma`'s deallocs,
`rdu-sram-alloc`'s live intervals, the SRAM overlap verifiers of `tier.alloc`
and `tier.compute`, the kernel model's peak of intermediates): a value
is read by the op of the block that uses it directly or holds the use in one
of its regions (a tile loop, a kernel body), and lives from its definition to
the last such op. Positions are the caller's (block order, or the order of a
whole function's walk), so the ranges it gives compare with its own.

A buffer lives from its allocation to its free (or the end of its block):
`ops_while_live` gives every op that runs meanwhile, the bodies of later loops
and kernels included (a loop runs its body on every trip while the buffer is
live around it).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping

from xdsl.ir import Block, Operation, SSAValue


def in_block(op: Operation, block: Block | None) -> Operation | None:
    """The op of `block` that is `op` or holds it in a region; None when `op` is outside."""
    current: Operation | None = op
    while current is not None and current.parent_block() is not block:
        current = current.parent_op()
    return current


def positions(block: Block) -> dict[Operation, int]:
    """Each op of `block` with its index."""
    return {op: index for index, op in enumerate(block.ops)}


class BlockOrder(Mapping[Operation, int]):
    """`positions(block)` kept across rewrites that insert and erase ops but move none
    (the relative order of the ops already there holds): worked out once, and again
    only when asked about an op inserted since (an erased op keeps a stale entry no
    one asks about). A pass that asks order questions per rewrite holds one, where
    `positions` per question walks the whole block each time."""

    def __init__(self, block: Block) -> None:
        self.block = block
        self._at = positions(block)

    def __getitem__(self, op: Operation) -> int:
        at = self._at.get(op)
        if at is None and op.parent_block() is self.block:
            self._at = positions(self.block)
            at = self._at[op]
        if at is None:
            raise KeyError(op)
        return at

    def __iter__(self) -> Iterator[Operation]:
        return iter(self._at)

    def __len__(self) -> int:
        return len(self._at)


def last_read(values: Iterable[SSAValue], block: Block | None, position: Mapping[Operation, int]) -> int | None:
    """The position of the last op of `block` that reads any of `values`; None when
    none does. Readers without a position (outside the ops the caller counts) are left out."""
    readers = [position[top] for value in values for use in value.uses
               if (top := in_block(use.operation, block)) is not None and top in position]
    return max(readers, default=None)


def live_end(op: Operation, block: Block | None, position: Mapping[Operation, int],
             results: Iterable[SSAValue] | None = None) -> int:
    """Where `op`'s results (or the given ones of them) stop being live: the
    position of their last reader in `block`, or `op`'s own when nothing reads them."""
    last = last_read(op.results if results is None else results, block, position)
    return position[op] if last is None else last


def ops_while_live(op: Operation, frees: Callable[[Operation], bool]) -> Iterator[Operation]:
    """Every op that runs after `op` while what it defines is live, in program
    order: the later ops of its block and every op nested in them (loop and
    kernel bodies), up to the first later op of the block that `frees` it."""
    current = op.next_op
    while current is not None and not frees(current):
        yield from current.walk()
        current = current.next_op


__all__ = ["BlockOrder", "in_block", "last_read", "live_end", "ops_while_live", "positions"]
