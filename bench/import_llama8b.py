"""Import time of the exact Llama 3.1 8B config (meta device, bf16) against torch.

Goal (issue 2): rducc's import of the decomposed program (Core ATen FX graph to
verified level-1 IR) takes no longer than torch's own `torch.export.export` +
`run_decompositions()` of the same model, measured in the same process.

Run: python bench/import_llama8b.py [--layers N] [--seq S]
"""

from __future__ import annotations

import argparse
import platform
import sys
import time
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "examples"))
warnings.filterwarnings("ignore", category=FutureWarning)

import models  # noqa: E402

from rducc.driver import StageTimes, module_text, verify  # noqa: E402
from rducc.importer import import_program  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--layers", type=int, default=32)
    parser.add_argument("--seq", type=int, default=128)
    args = parser.parse_args()

    model, inputs = models.llama31_8b_meta(seq=args.seq, layers=args.layers)
    start = time.perf_counter()
    program = models.export(model, inputs)
    exported = time.perf_counter()
    program = program.run_decompositions()
    decomposed = time.perf_counter()

    times = StageTimes()
    with times.stage("import"):
        module = import_program(program)
    with times.stage("verify"):
        verify(module)
    with times.stage("print"):
        text = module_text(module)

    torch_seconds = decomposed - start
    rducc_seconds = times.seconds["import"] + times.seconds["verify"]
    nodes = sum(1 for _ in program.graph.nodes)
    print(f"Llama 3.1 8B config, {args.layers} layers, seq {args.seq}, meta device, bf16")
    print(f"machine: {platform.machine()}, {platform.python_implementation()} {platform.python_version()}")
    print(f"FX nodes after decomposition: {nodes}; IR text: {len(text) / 1e6:.1f} MB")
    print(f"torch.export.export            {exported - start:7.2f} s")
    print(f"run_decompositions()           {decomposed - exported:7.2f} s")
    print(f"rducc import + verify          {rducc_seconds:7.2f} s")
    print(f"rducc print (with locations)   {times.seconds['print']:7.2f} s")
    ratio = rducc_seconds / torch_seconds
    verdict = "meets" if ratio <= 1.0 else "misses"
    print(f"ratio rducc / torch = {ratio:.3f}x  ({verdict} the <= 1.0x goal)")


if __name__ == "__main__":
    main()
