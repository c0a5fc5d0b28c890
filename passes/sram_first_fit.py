"""First fit of SRAM buffers without walking every placed one (`rdu-sram-alloc`'s placement).

The rule (`rdu_sram_alloc._place_in_order`): buffers are placed one at a time in a
given order, each at the lowest offset y >= 0 whose bytes [y, y + size) meet no byte
[o, o + s) of a buffer placed before it and live at the same time (closed live
intervals [start, end] that share a position). A buffer of no bytes goes at 0.

Walking every placed buffer in offset order and skipping those not live with the new
one finds it in time proportional to the placed buffers, so a group's placement grows
as the square of its buffers (a deep training step's optimizer update chains
thousands of them). Here the bytes in use are kept in a segment tree over the
group's live starts, as merged intervals of offsets (`OffsetsInUse`):

- `own[node]`: the bytes of the buffers whose live interval covers the node's whole
  range of positions but not its parent's (the node is one of the interval's
  canonical nodes);
- `below[node]`: the bytes of every buffer stored at the node or under it.

The buffers live with a new one [a, b] are those stored under one of [a, b]'s
canonical nodes or at an ancestor of one, so the bytes they hold are the union of
`below` of the canonical nodes and `own` of their ancestors: O(log n) merged sets,
in which the lowest fitting offset is found by hopping past the first interval of a
set that meets the candidate until none does. A placement adds its bytes to O(log n)
sets. Merged intervals are the point: the live buffers stacked one on another
below the answer are one interval to hop, where the walk visits each.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Sequence


class OffsetsInUse:
    """A set of byte offsets as disjoint, non-touching half-open intervals, sorted."""

    __slots__ = ("ends", "starts")

    def __init__(self) -> None:
        self.starts: list[int] = []
        self.ends: list[int] = []

    def add(self, low: int, high: int) -> None:
        """Add [low, high), merging what it meets or touches; an empty range adds nothing."""
        if high <= low:
            return
        first = bisect_left(self.ends, low)  # the first interval ending at or after low
        last = bisect_right(self.starts, high)  # past the last starting at or before high
        if first < last:
            low, high = min(low, self.starts[first]), max(high, self.ends[last - 1])
        self.starts[first:last] = [low]
        self.ends[first:last] = [high]

    def first_free(self, offset: int, size: int) -> int:
        """The lowest offset >= `offset` whose `size` bytes this set does not meet."""
        index = bisect_right(self.ends, offset)  # the first interval ending after offset
        starts, ends = self.starts, self.ends
        while index < len(ends) and starts[index] < offset + size:
            offset = ends[index]
            index += 1
        return offset


class LiveOffsets:
    """The bytes in use over a group's live starts: `OffsetsInUse` in a segment tree."""

    def __init__(self, starts: Sequence[int]) -> None:
        """`starts`: where each interval placed or asked about starts. Two live intervals
        meet exactly when one holds the other's start (the later start is in both), so
        the leaves are the distinct starts and an interval covers those within it."""
        self.starts = sorted(set(starts))
        self.leaf = {start: index for index, start in enumerate(self.starts)}
        self.width = 1
        while self.width < len(self.starts):
            self.width *= 2
        self.own: dict[int, OffsetsInUse] = {}
        self.below: dict[int, OffsetsInUse] = {}

    def _canonical(self, start: int, end: int) -> list[int]:
        """The nodes whose ranges tile the starts within [start, end] exactly."""
        low, high = self.leaf[start] + self.width, bisect_right(self.starts, end) + self.width
        nodes = []
        while low < high:
            if low & 1:
                nodes.append(low)
                low += 1
            if high & 1:
                high -= 1
                nodes.append(high)
            low, high = low // 2, high // 2
        return nodes

    @staticmethod
    def _ancestors(nodes: list[int]) -> set[int]:
        """The strict ancestors of `nodes` (none of which is another's ancestor)."""
        found: set[int] = set()
        for node in nodes:
            node //= 2
            while node and node not in found:
                found.add(node)
                node //= 2
        return found

    def place(self, start: int, end: int, size: int) -> int:
        """The lowest offset whose `size` bytes meet none in use during [start, end],
        those bytes then marked in use there."""
        if size <= 0:
            return 0
        nodes = self._canonical(start, end)
        above = self._ancestors(nodes)
        below, own = self.below, self.own
        sets = [below[n] for n in nodes if n in below] + [own[n] for n in above if n in own]
        offset, unmoved, index = 0, 0, 0
        while unmoved < len(sets):  # until every set leaves the offset where it is
            moved = sets[index].first_free(offset, size)
            unmoved = 1 if moved != offset else unmoved + 1
            offset, index = moved, (index + 1) % len(sets)
        for node in nodes:
            own.setdefault(node, OffsetsInUse()).add(offset, offset + size)
        for node in (*nodes, *above):
            below.setdefault(node, OffsetsInUse()).add(offset, offset + size)
        return offset


def first_fit(intervals: Sequence[tuple[int, int, int]]) -> list[int]:
    """The offset of each (start, end, size), placed in the order given by the rule above.

    Every interval must have start <= end (the caller walks the placed buffers for a
    group that has one that does not)."""
    live = LiveOffsets([start for start, _, _ in intervals])
    return [live.place(start, end, size) for start, end, size in intervals]


__all__ = ["LiveOffsets", "OffsetsInUse", "first_fit"]
