"""rducc's passes, one `ModulePass` a file, named after its CLI name."""

from collections.abc import Callable

from xdsl.passes import ModulePass


def _canonicalize() -> type[ModulePass]:
    from rducc.passes.rdu_canonicalize import RduCanonicalize

    return RduCanonicalize


def _partition() -> type[ModulePass]:
    from rducc.passes.rdu_partition import RduPartition

    return RduPartition


def _split_contraction() -> type[ModulePass]:
    from rducc.passes.rdu_split_contraction import RduSplitContraction

    return RduSplitContraction


def _outline_layers() -> type[ModulePass]:
    from rducc.passes.rdu_outline_layers import RduOutlineLayers

    return RduOutlineLayers


def _fuse() -> type[ModulePass]:
    from rducc.passes.rdu_fuse import RduFuse

    return RduFuse


def _merge_maps() -> type[ModulePass]:
    from rducc.passes.rdu_merge_maps import RduMergeMaps

    return RduMergeMaps


def _tile() -> type[ModulePass]:
    from rducc.passes.rdu_tile import RduTile

    return RduTile


def _place_saved() -> type[ModulePass]:
    from rducc.passes.rdu_place_saved import RduPlaceSaved

    return RduPlaceSaved


def _place_tiers() -> type[ModulePass]:
    from rducc.passes.rdu_place_tiers import RduPlaceTiers

    return RduPlaceTiers


def _insert_dma() -> type[ModulePass]:
    from rducc.passes.rdu_insert_dma import RduInsertDma

    return RduInsertDma


def _sram_alloc() -> type[ModulePass]:
    from rducc.passes.rdu_sram_alloc import RduSramAlloc

    return RduSramAlloc


def _map_units() -> type[ModulePass]:
    from rducc.passes.rdu_map_units import RduMapUnits

    return RduMapUnits


ALL_PASSES: dict[str, Callable[[], type[ModulePass]]] = {
    "rdu-canonicalize": _canonicalize,
    "rdu-partition": _partition,
    "rdu-split-contraction": _split_contraction,
    "rdu-outline-layers": _outline_layers,
    "rdu-fuse": _fuse,
    "rdu-merge-maps": _merge_maps,
    "rdu-place-saved": _place_saved,
    "rdu-tile": _tile,
    "rdu-place-tiers": _place_tiers,
    "rdu-insert-dma": _insert_dma,
    "rdu-sram-alloc": _sram_alloc,
    "rdu-map-units": _map_units,
}
"""Lazy factories by pass name, as xDSL's opt tool and universe expect."""

__all__ = ["ALL_PASSES"]
