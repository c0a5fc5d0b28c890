"""The one registration decorator the tables of rducc use: converters by ATen
overload, decompositions, complex-pair rules, and the runtime's op
implementations all record a function under some keys and return it unchanged.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, MutableMapping
from typing import TypeVar

F = TypeVar("F")
K = TypeVar("K")
V = TypeVar("V")


def registering(table: MutableMapping[K, V], keys: Iterable[K], entry: Callable[[F], V]) -> Callable[[F], F]:
    """A decorator that records `entry(function)` under each of `keys` in `table`."""
    keys = tuple(keys)

    def register(function: F) -> F:
        for key in keys:
            table[key] = entry(function)
        return function

    return register


__all__ = ["registering"]
