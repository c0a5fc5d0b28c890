"""The `xdsl.universe` entry point: lets the stock `xdsl-opt` see rducc."""

from xdsl.universe import Universe

from rducc.dialects import ALL_DIALECTS
from rducc.passes import ALL_PASSES

RDUCC_UNIVERSE = Universe(all_dialects=ALL_DIALECTS, all_passes=ALL_PASSES)
