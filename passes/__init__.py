"""rducc's passes, one `ModulePass` a file, named after its CLI name."""

from collections.abc import Callable

from xdsl.passes import ModulePass

def _canonicalize() -> type[ModulePass]:
    from rducc.passes.rdu_canonicalize import RduCanonicalize

    return RduCanonicalize


def _fuse() -> type[ModulePass]:
    from rducc.passes.rdu_fuse import RduFuse

    return RduFuse


ALL_PASSES: dict[str, Callable[[], type[ModulePass]]] = {
    "rdu-canonicalize": _canonicalize,
    "rdu-fuse": _fuse,
}
"""Lazy factories by pass name, as xDSL's opt tool and universe expect."""

__all__ = ["ALL_PASSES"]
