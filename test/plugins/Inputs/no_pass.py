"""A plugin file that defines no pass (for the diagnostics test)."""

from rducc.api import PatternPass  # noqa: F401 - imported, not defined here: not a pass of this file


def helper() -> int:
    return 1
