"""Answers about a program while nothing rewrites it.

The cost model asks the same questions of the same ops many times: a range's
estimates (two a ranged figure) map every kernel again, and `rdu-fuse` weighs
each op in many candidate groups. Inside `unchanged()`, an answer that
depends only on the IR (an op's compute element, the module's functions and
calls by callee, a body's streamed views, an op's work before the target's
figures) is computed once, keyed by the ops it is about (their identity), and
reused; the block promises that nothing rewrites the IR asked about while it
runs (a pass rewrites after its block ends). The answers are dropped when
the outermost block ends, so none outlives the IR it was computed from;
outside every block, each question is answered afresh.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

T = TypeVar("T")

_ANSWERS: list[dict[Hashable, Any]] = []
"""The open block's answers (empty: no block open, nothing remembered)."""
_AFRESH: list[bool] = []
"""Non-empty inside `afresh()`: no block remembers."""


@contextmanager
def unchanged() -> Iterator[None]:
    """A block in which the IR is read and not rewritten (module docstring); nested
    blocks share the outermost one's answers."""
    if _ANSWERS or _AFRESH:
        yield
        return
    _ANSWERS.append({})
    try:
        yield
    finally:
        _ANSWERS.clear()


def remembered(key: Hashable, answer: Callable[[], T]) -> T:
    """`answer()`, computed once per `key` inside an `unchanged()` block (every call outside one)."""
    if not _ANSWERS:
        return answer()
    answers = _ANSWERS[0]
    if key not in answers:
        answers[key] = answer()
    found: T = answers[key]
    return found


@contextmanager
def afresh() -> Iterator[None]:
    """Every question answered afresh inside, `unchanged()` blocks included: the
    reference the remembered answers are checked and timed against."""
    _AFRESH.append(True)
    try:
        yield
    finally:
        _AFRESH.pop()


def holding() -> bool:
    """Whether an `unchanged()` block is open."""
    return bool(_ANSWERS)


__all__ = ["afresh", "holding", "remembered", "unchanged"]
