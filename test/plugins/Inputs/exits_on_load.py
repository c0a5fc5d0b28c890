"""A pass plugin that ends the process while loading (for the diagnostics test)."""

import sys

sys.exit(0)
