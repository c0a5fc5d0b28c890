"""A plugin whose pass class has no name (for the diagnostics test)."""

from dataclasses import dataclass

from rducc.api import ModulePass


@dataclass(frozen=True)
class Nameless(ModulePass):
    def apply(self, ctx, op):
        pass
