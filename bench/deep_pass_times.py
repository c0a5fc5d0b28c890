"""CPU seconds of each pass on deep training steps, by depth: which passes grow faster than the depth.

The GatedStack AdamW step (test/python/training_cases.py: width 64, batch (2, 8, 64),
-O2, sn40l; its layers outlined, so what grows with depth is the optimizer's update of
every parameter, fused into a few long kernels) is compiled at each depth given; every
pass of the pipeline is timed on the process's CPU clock (`time.process_time`, the
garbage collector off while it runs, so a full collection over the compile's heap is
not charged to the pass that happens to trigger it). The table gives each pass's seconds
at each depth and its growth from the first depth to the last beside the depth's own.

`--save DIR` also writes the module each pass gets, `DIR/<depth>/<index>-<pass>.mlir` (and
the pass's options beside it, `.spec`), for timing or comparing one pass alone on it
(`bench/sram_alloc_ab.py`). `--alone DIR` times each pass alone on the modules so saved
instead: a fresh parse each time, best of `--repeat`, the depths alternated (so a change
in the machine's load falls on every depth alike), collector off, CPU seconds.

Run: python bench/deep_pass_times.py [--depths 4 8 16 32] [--save DIR] [--passes rdu-fuse ...]
     python bench/deep_pass_times.py --alone DIR [--depths 4 8 16 32] [--repeat 2]
"""

from __future__ import annotations

import argparse
import gc
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from common import REPO

sys.path.insert(0, str(REPO / "test" / "python"))

import torch  # noqa: E402
from training_cases import GatedStack  # noqa: E402
from xdsl.context import Context  # noqa: E402
from xdsl.dialects.builtin import ModuleOp  # noqa: E402
from xdsl.passes import ModulePass  # noqa: E402

import rducc  # noqa: E402
import rducc.pipeline as pipeline  # noqa: E402


@contextmanager
def pass_clock(seconds: dict[str, float], save: Path | None) -> Iterator[None]:
    """Charge each pass its CPU seconds (collector off); with `save`, write the module it gets."""
    apply = pipeline._apply
    count = [0]

    def timed(one: ModulePass, ctx: Context, module: ModuleOp) -> None:
        if save is not None:
            save.mkdir(parents=True, exist_ok=True)
            (save / f"{count[0]:02d}-{one.name}.mlir").write_text(str(module))
            (save / f"{count[0]:02d}-{one.name}.spec").write_text(str(one.pipeline_pass_spec()))
        count[0] += 1
        gc.collect()
        gc.disable()
        start = time.process_time()
        try:
            apply(one, ctx, module)
        finally:
            seconds[one.name] = seconds.get(one.name, 0.0) + time.process_time() - start
            gc.enable()

    pipeline._apply = timed  # type: ignore[assignment]
    try:
        yield
    finally:
        pipeline._apply = apply  # type: ignore[assignment]


def pass_seconds(depth: int, save: Path | None) -> dict[str, float]:
    """CPU seconds of each pass compiling the `depth`-layer GatedStack AdamW step."""
    torch.manual_seed(0)
    seconds: dict[str, float] = {}
    with pass_clock(seconds, save / str(depth) if save else None):
        rducc.compile_training(GatedStack(depth), (torch.randn(2, 8, 64),), optimizer="adamw", lr=1e-3,
                               opt_level=2, target="sn40l")
    return seconds


def alone_seconds(saved: Path, depths: list[int], repeat: int, only: list[str]) -> dict[int, dict[str, float]]:
    """Best CPU seconds of each pass alone on the module it got at each depth."""
    from xdsl.parser import Parser

    from rducc.pipeline import parse_passes
    from rducc.tools.opt import RduccOptMain

    found: dict[int, dict[str, float]] = {depth: {} for depth in depths}
    for path in sorted((saved / str(depths[0])).glob("*.mlir")):
        name = path.stem.split("-", 1)[1]
        if only and name not in only:
            continue
        spec = path.with_suffix(".spec").read_text()
        for _ in range(repeat):
            for depth in depths:
                module_path = saved / str(depth) / path.name
                module = Parser(RduccOptMain(args=[str(module_path)]).ctx, module_path.read_text()).parse_module()
                one = parse_passes(spec)[0]
                gc.collect()
                gc.disable()
                start = time.process_time()
                one.apply(Context(), module)
                seconds = time.process_time() - start
                gc.enable()
                found[depth][name] = min(found[depth].get(name, float("inf")), seconds)
        print(name, " / ".join(f"{found[d][name]:.3f}" for d in depths), file=sys.stderr, flush=True)
    return found


def table(depths: list[int], found: dict[int, dict[str, float]], only: list[str]) -> str:
    """One row a pass: seconds at each depth, growth last / first beside the depth's."""
    names = [name for name in found[depths[0]] if not only or name in only]
    head = " / ".join(str(d) for d in depths)
    rows = [f"| pass | CPU s at {head} layers | {depths[-1]} / {depths[0]} (depth {depths[-1] / depths[0]:.0f}x) |",
            "| --- | --- | --- |"]
    for name in sorted(names, key=lambda n: -found[depths[-1]].get(n, 0.0)):
        values = [found[d].get(name, 0.0) for d in depths]
        growth = f"{values[-1] / values[0]:.1f}x" if values[0] > 0 else "-"
        rows.append(f"| {name} | {' / '.join(f'{v:.3f}' for v in values)} | {growth} |")
    return "\n".join(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--depths", type=int, nargs="+", default=[4, 8, 16, 32])
    parser.add_argument("--save", type=Path, default=None)
    parser.add_argument("--passes", nargs="*", default=[], help="only these passes in the table")
    parser.add_argument("--alone", type=Path, default=None, help="time each pass alone on the modules saved here")
    parser.add_argument("--repeat", type=int, default=2)
    args = parser.parse_args()
    if args.alone is not None:
        print(table(args.depths, alone_seconds(args.alone, args.depths, args.repeat, args.passes), args.passes))
        return
    found = {}
    for depth in args.depths:
        start = time.process_time()
        found[depth] = pass_seconds(depth, args.save)
        print(f"{depth} layers: {sum(found[depth].values()):.2f} CPU s in passes, "
              f"{time.process_time() - start:.2f} s in the whole compile", file=sys.stderr, flush=True)
    print(table(args.depths, found, args.passes))


if __name__ == "__main__":
    main()
