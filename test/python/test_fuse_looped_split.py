"""rdu-fuse's split step and kernel looping: a layer's body whose calls loop is
weighed whole as a loop iteration (no launch, no DMA start-up) before it is
split, since its parts would pay both every call (passes/rdu_fuse.py)."""

from __future__ import annotations

import pytest
from xdsl.dialects.test import TestOp

from rducc.passes import rdu_fuse
from rducc.passes.rdu_fuse import Weighed
from rducc.targets import load_target


@pytest.fixture
def weighed(monkeypatch: pytest.MonkeyPatch) -> list:
    """Four ops; whole 10 us (8.5 us as a loop iteration), cut in the middle each half 4.5 us."""
    ops = [TestOp() for _ in range(4)]

    def weigh(group, target) -> Weighed:
        if len(group) == len(ops):
            return Weighed(10e-6, (2,), 8.5e-6)
        return Weighed(4.5e-6, (1,), 4e-6) if len(group) == 2 else Weighed(2.25e-6, (), 2e-6)

    monkeypatch.setattr(rdu_fuse, "weigh", weigh)
    return ops


def test_unlooped_group_splits_when_parts_are_faster(weighed: list) -> None:
    parts = rdu_fuse.split_if_mapped_badly(weighed, load_target("sn40l"))
    assert [len(p) for p in parts] == [2, 2]


def test_looped_layer_stays_whole_when_a_loop_iteration_is_faster(weighed: list) -> None:
    parts = rdu_fuse.split_if_mapped_badly(weighed, load_target("sn40l"), looped=True)
    assert [len(p) for p in parts] == [4]

