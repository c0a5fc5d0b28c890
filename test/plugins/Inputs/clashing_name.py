"""A plugin whose pass takes the name of one of rducc's (for the diagnostics test)."""

from dataclasses import dataclass

from rducc.api import ModulePass


@dataclass(frozen=True)
class MyFuse(ModulePass):
    """Shadows rducc's own fusion pass: refused."""

    name = "rdu-fuse"

    def apply(self, ctx, op):
        pass
