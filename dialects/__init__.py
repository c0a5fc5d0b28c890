"""rducc's dialects: `rdu` (dataflow, tensor level) and `tier` (memory tiers)."""

from rducc.dialects.rdu.dataflow import Dataflow
from rducc.dialects.tier import Memory

ALL_DIALECTS = {"rdu": lambda: Dataflow, "tier": lambda: Memory}
"""Lazy factories by dialect name, as xDSL's context and universe expect."""

__all__ = ["ALL_DIALECTS", "Dataflow", "Memory"]
