"""Dynamic-shape buckets (`rducc --shapes`, `rducc.compile(..., shapes=...)`): see `rducc.shapes.buckets`,
whose `__all__` is this wing's API."""

from rducc.shapes.buckets import *  # noqa: F403 - the names buckets' __all__ lists
from rducc.shapes.buckets import __all__ as __all__
