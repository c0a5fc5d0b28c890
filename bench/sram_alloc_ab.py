"""rdu-sram-alloc's first fit: the segment tree against the walk, on saved modules.

Each module given is the one rdu-sram-alloc got in a compile (`bench/deep_pass_times.py
--save DIR` writes them: DIR/<depth>/NN-rdu-sram-alloc.mlir). Both placements run on
fresh parses of it in the same process, alternated, best of `--repeat`, on the process's
CPU clock (`time.process_time`, collector off): the walk (`_walk_in_order`, the rule as
it was written, every placed buffer visited in offset order) and the segment tree
(`sram_first_fit`). The printed IR of both must be the same bytes; the table says so.

Run: python bench/sram_alloc_ab.py DIR/4/10-rdu-sram-alloc.mlir DIR/8/... [--repeat 3]
"""

from __future__ import annotations

import argparse
import gc
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.parser import Parser
from xdsl.xdsl_opt_main import xDSLOptMain

import rducc.passes.rdu_sram_alloc as sram_alloc
from rducc.tools.opt import RduccOptMain

Placement = Callable[[list[sram_alloc.SramBuffer], Callable[[sram_alloc.SramBuffer], tuple[int, ...]]], int]


def walked(group: list[sram_alloc.SramBuffer], order: Callable[[sram_alloc.SramBuffer], tuple[int, ...]]) -> int:
    """The walk's placement (main's `_place_in_order`)."""
    sram_alloc._walk_in_order(sorted(group, key=order))
    return max((b.offset + b.size for b in group), default=0)


@contextmanager
def placement(chosen: Placement) -> Iterator[None]:
    kept = sram_alloc._place_in_order
    sram_alloc._place_in_order = chosen  # type: ignore[assignment]
    try:
        yield
    finally:
        sram_alloc._place_in_order = kept  # type: ignore[assignment]


def run_once(main: xDSLOptMain, text: str, chosen: Placement) -> tuple[float, str]:
    """CPU seconds of the pass on a fresh parse of `text`, and the IR it prints."""
    module: ModuleOp = Parser(main.ctx, text).parse_module()
    gc.collect()
    gc.disable()
    start = time.process_time()
    with placement(chosen):
        sram_alloc.RduSramAlloc().apply(Context(), module)
    seconds = time.process_time() - start
    gc.enable()
    return seconds, str(module)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("modules", type=Path, nargs="+")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    opt = RduccOptMain(args=[str(args.modules[0])])
    print("| module | walk CPU s | segment tree CPU s | walk / tree | same IR |")
    print("| --- | --- | --- | --- | --- |")
    for path in args.modules:
        text = path.read_text()
        best = {"walk": float("inf"), "tree": float("inf")}
        printed: dict[str, str] = {}
        for _ in range(args.repeat):
            for name, chosen in (("walk", walked), ("tree", sram_alloc._place_in_order)):
                seconds, printed[name] = run_once(opt, text, chosen)
                best[name] = min(best[name], seconds)
        same = "yes" if printed["walk"] == printed["tree"] else "NO"
        print(f"| {path} | {best['walk']:.3f} | {best['tree']:.3f} | {best['walk'] / best['tree']:.1f}x | {same} |",
              flush=True)


if __name__ == "__main__":
    main()
