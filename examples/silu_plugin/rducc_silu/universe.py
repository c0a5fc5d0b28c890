"""The `xdsl.universe` entry point: how xdsl-opt and rducc-opt find fuse-silu."""

from xdsl.universe import Universe


def _fuse_silu():
    from rducc_silu.fuse_silu import FuseSiluPass

    return FuseSiluPass


UNIVERSE = Universe(all_passes={"fuse-silu": _fuse_silu})
