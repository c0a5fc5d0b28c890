"""The pass pipelines, in one place.

    -O0   every op its own kernel (the unfused baseline)
    -O1   pattern fusion (matmul + epilogue, norm + matmul, attention chain)
    -O2   fusion up to whole decoder layers, as much as fits (the default)

Each pipeline runs the levels of the architecture in order:

    graph   --rdu-canonicalize, cse, rdu-fuse, rdu-merge-maps-->  kernels
    kernels --rdu-tile, rdu-place-tiers, rdu-insert-dma-->   memory
    memory  --rdu-sram-alloc-->                             placed
"""

from __future__ import annotations

from xdsl.dialects.builtin import ModuleOp, StringAttr
from xdsl.passes import ModulePass, PassPipeline

from rducc.passes import ALL_PASSES
from rducc.passes.common import TARGET_ATTR
from rducc.targets import Target, target_spec

LEVELS = ("graph", "kernels", "memory", "placed")
"""IR levels, in pipeline order; `--emit` stops at one of them."""

STAGES: dict[str, list[str]] = {
    "kernels": ["rdu-canonicalize", "cse", "rdu-fuse{level=%(opt)d}", "rdu-merge-maps"],
    "memory": ["rdu-tile", "rdu-place-tiers", "rdu-insert-dma{keep_on_chip=%(keep)s}"],
    "placed": ["rdu-sram-alloc"],
}
"""The passes that take the IR to each level from the one before it."""


def pipeline_text(opt_level: int = 2, emit: str = "placed") -> str:
    """The pipeline as xDSL pipeline text, e.g. for `rducc-opt -p`."""
    if opt_level not in (0, 1, 2):
        raise ValueError(f"opt level must be 0, 1 or 2, got {opt_level}")
    if emit not in LEVELS:
        raise ValueError(f"emit level must be one of {', '.join(LEVELS)}, got {emit}")
    passes: list[str] = []
    for level in LEVELS[1 : LEVELS.index(emit) + 1]:
        keep = "false" if opt_level == 0 else "true"  # -O0 is the unfused baseline
        passes.extend(p % {"opt": opt_level, "keep": keep} for p in STAGES[level])
    return ",".join(passes)


def available_passes() -> dict:
    """rducc's passes plus the upstream ones the pipelines use."""
    from xdsl.transforms import get_all_passes

    return {**get_all_passes(), **ALL_PASSES}


def build_pipeline(text: str, callback=None) -> PassPipeline:
    return PassPipeline.parse_spec(available_passes(), text, callback)


def run_pipeline(
    module: ModuleOp, target: Target, opt_level: int = 2, emit: str = "placed", callback=None
) -> None:
    """Lower an imported module in place to the `emit` level for `target`."""
    from xdsl.context import Context

    module.attributes[TARGET_ATTR] = StringAttr(target_spec(target))
    text = pipeline_text(opt_level, emit)
    if text:
        build_pipeline(text, callback).apply(Context(), module)


__all__ = ["LEVELS", "pipeline_text", "run_pipeline", "ModulePass"]
