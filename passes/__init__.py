"""rducc's passes, one `ModulePass` a file, named after its CLI name."""

from collections.abc import Callable

from xdsl.passes import ModulePass

ALL_PASSES: dict[str, Callable[[], type[ModulePass]]] = {}
"""Lazy factories by pass name, as xDSL's opt tool and universe expect."""

__all__ = ["ALL_PASSES"]
