"""rducc: a PyTorch 2 compiler for SN40L-class dataflow accelerators."""

__version__ = "0.1.0"
