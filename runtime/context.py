"""The run context: what one call of a program knows besides its arrays.

A runner makes one `RunContext` per call and carries it through the engine to
every kernel (`kernel(context, *arrays)`); the kernels that need it read it:
random ops draw from the call's run number, collectives meet the other ranks
of the call's socket group. Nothing about a run lives in module globals, so
concurrent runs (the ranks of one partitioned call, each in its own thread,
or two programs) never see each other's state.
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from rducc.errors import RduccError


class SocketGroup:
    """The ranks of one tensor-parallel group, meeting at each collective."""

    def __init__(self, size: int):
        self.size = size
        self._barrier = threading.Barrier(size)
        self._slots: list[np.ndarray | None] = [None] * size

    def exchange(self, rank: int, value: np.ndarray, combine: Callable[[list[np.ndarray]], np.ndarray]) -> np.ndarray:
        """`combine` of every rank's `value` in rank order (every rank must call it).
        A rank's value may be a view of its SRAM arena: every rank combines
        before any rank goes on to overwrite it."""
        self._slots[rank] = value
        self._barrier.wait()
        result = combine(list(self._slots))  # type: ignore[arg-type]
        self._barrier.wait()
        return result

    def abort(self) -> None:
        """Release the other ranks when one fails."""
        self._barrier.abort()


@dataclass(frozen=True)
class RunContext:
    """One call of a program: its run number and, on several sockets, its group and rank.

    `run` numbers the calls of one runner (1, 2, ...): random ops draw anew on
    each call, and every rank of a partitioned call shares the call's number.
    """

    run: int
    group: SocketGroup | None = None
    rank: int = 0

    def __post_init__(self) -> None:
        size = self.group.size if self.group is not None else 1
        if not 0 <= self.rank < size:
            raise RduccError(f"rank {self.rank} is not in a group of {size} sockets")

    def socket_group(self) -> SocketGroup:
        """The group of this run's sockets; an error on a one-socket run."""
        if self.group is None:
            raise RduccError(
                "a collective ran outside a multi-socket run: run a partitioned program with "
                "rducc.runtime.sockets.run_partitioned (rducc-run and rducc.Program do)"
            )
        return self.group


class RunCounter:
    """Numbers the calls of one runner: 1, 2, ... (safe to share between threads)."""

    def __init__(self) -> None:
        self._numbers = itertools.count(1)

    def next_context(self) -> RunContext:
        """The context of a new one-socket call."""
        return RunContext(run=self.next_run())

    def next_run(self) -> int:
        return next(self._numbers)


__all__ = ["RunContext", "RunCounter", "SocketGroup"]
