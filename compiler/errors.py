"""Errors that are the user's to fix: printed as one message, exit status 1."""

from __future__ import annotations


class RduccError(Exception):
    """A problem with the user's input (file, model, flags), not a bug in rducc.

    The CLIs print `rducc: error: <message>` for these, with no traceback.
    """


class UnsupportedOpsError(RduccError):
    """The model uses operators (or forms of them) that rducc cannot import."""


class RduccWarning(UserWarning):
    """Something the user may not have meant, that still compiles: the CLIs print
    `rducc: warning: <message>` for these (Python's warning machinery elsewhere)."""
