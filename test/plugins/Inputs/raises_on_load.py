"""A pass plugin that raises while it is being loaded (for the diagnostics test)."""

from rducc.api import ModulePass  # noqa: F401

SETTINGS = {"tile": 4}
TILE = SETTINGS["tiles"]
