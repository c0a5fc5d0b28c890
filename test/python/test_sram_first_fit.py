"""rdu-sram-alloc's segment-tree first fit (`rducc.passes.sram_first_fit`) gives the offsets
of the rule it implements, on random buffer sets: each buffer, in the order given, at the
lowest offset whose bytes meet none of an earlier buffer live at the same time.

The reference here is the rule as a definition, written apart from the pass's walk: the
candidates are 0 and the top of every earlier live buffer, and the answer is the least
candidate that meets none of them. Sizes include 0 and sizes that are not multiples of
anything; live intervals are short, long and single positions; many starts are shared.
"""

from __future__ import annotations

import random

from rducc.passes import rdu_sram_alloc
from rducc.passes.rdu_sram_alloc import SramBuffer
from rducc.passes.sram_first_fit import OffsetsInUse, first_fit

Interval = tuple[int, int, int]  # (start, end, size): live over positions start..end, both included


def reference_first_fit(intervals: list[Interval]) -> list[int]:
    """Each interval's offset by the definition: the least candidate meeting no earlier live one."""
    placed: list[tuple[int, int, int, int]] = []  # (start, end, low, high)
    offsets = []
    for start, end, size in intervals:
        live = [(low, high) for s, e, low, high in placed if s <= end and start <= e]
        fits = [c for c in [0, *(high for _, high in live)] if all(c + size <= low or c >= high for low, high in live)]
        offset = min(fits)
        placed.append((start, end, offset, offset + size))
        offsets.append(offset)
    return offsets


def drawn_intervals(rng: random.Random, count: int, span: int) -> list[Interval]:
    """`count` intervals over `span` positions: drawn sizes (ties, zeros, odd sizes), lengths and starts."""
    found = []
    for _ in range(count):
        start = rng.randint(0, span)
        end = start + rng.choice((0, 0, 1, 2, 5, 20, span // 3, span))
        size = rng.choice((0, 1, 7, 64, 64, 128, 256, 1000, 4096, rng.randint(1, 5000)))
        found.append((start, end, size))
    return found


def test_first_fit_gives_the_rule_s_offsets_on_random_sets() -> None:
    rng = random.Random(22)
    for case in range(300):
        intervals = drawn_intervals(rng, rng.randint(0, 70), rng.choice((3, 40, 300)))
        if case % 2:  # the pass's usual order: largest first
            intervals.sort(key=lambda i: (-i[2], i[0]))
        assert first_fit(intervals) == reference_first_fit(intervals), intervals


def test_a_group_large_enough_for_the_tree_gets_the_walk_s_offsets() -> None:
    """`_place_in_order` on a group past `TREE_FROM` (the tree) and the walk, every order."""
    rng = random.Random(7)
    intervals = drawn_intervals(rng, rdu_sram_alloc.TREE_FROM + 100, 2000)
    for _, order in rdu_sram_alloc.PLACEMENT_ORDERS:
        tree = [SramBuffer(None, size, start, end) for start, end, size in intervals]  # type: ignore[arg-type]
        walked = [SramBuffer(None, size, start, end) for start, end, size in intervals]  # type: ignore[arg-type]
        peak = rdu_sram_alloc._place_in_order(tree, order)
        rdu_sram_alloc._walk_in_order(sorted(walked, key=order))
        assert [b.offset for b in tree] == [b.offset for b in walked]
        assert peak == max(b.offset + b.size for b in walked)
    ordered = sorted(intervals, key=lambda i: (-i[2], i[0]))
    assert first_fit(ordered) == reference_first_fit(ordered)


def test_offsets_in_use_merge_what_they_meet_or_touch() -> None:
    used = OffsetsInUse()
    for low, high in ((10, 20), (30, 40), (20, 25), (50, 50), (5, 8), (24, 31)):
        used.add(low, high)
    assert (used.starts, used.ends) == ([5, 10], [8, 40])
    assert used.first_free(0, 5) == 0 and used.first_free(0, 6) == 40 and used.first_free(8, 2) == 8
