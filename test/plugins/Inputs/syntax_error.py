"""A pass plugin that does not parse (for the diagnostics test)."""

from rducc.api import ModulePass


class Broken(ModulePass)
    name = "broken"
