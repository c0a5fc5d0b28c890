"""Analyses the passes share (tiling plans, working sets)."""
