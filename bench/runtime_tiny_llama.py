"""Runtime speed: tiny Llama forward through rducc's Program against eager.

Goal (issue 4): a call of the compiled, placed program in rducc's numpy
runtime takes at most 1.5x PyTorch eager's forward of the same model,
measured in the same process (best of N calls each, after one warm-up).

Run: python bench/runtime_tiny_llama.py [--calls 20] [-O 2]
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "examples"))
warnings.filterwarnings("ignore", category=FutureWarning)

import torch  # noqa: E402

import models  # noqa: E402
import rducc  # noqa: E402


def best_time(function, calls: int) -> float:
    function()
    best = float("inf")
    for _ in range(calls):
        start = time.perf_counter()
        function()
        best = min(best, time.perf_counter() - start)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=20)
    parser.add_argument("-O", dest="opt_level", type=int, default=2)
    args = parser.parse_args()

    torch.set_num_threads(1)
    model, inputs = models.tiny_llama()
    program = rducc.compile(models.export(model, inputs), opt_level=args.opt_level)
    with torch.no_grad():
        expected = model(*inputs)
    torch.testing.assert_close(program(*inputs), expected, rtol=1e-4, atol=1e-5)

    with torch.no_grad():
        eager = best_time(lambda: model(*inputs), args.calls)
    ours = best_time(lambda: program(*inputs), args.calls)
    ratio = ours / eager
    print(f"tiny Llama (2 layers, hidden 64, seq 8), -O{args.opt_level}, best of {args.calls} calls, 1 thread")
    print(f"PyTorch eager forward   {eager * 1e3:8.3f} ms")
    print(f"rducc Program call      {ours * 1e3:8.3f} ms")
    print(f"ratio rducc / eager = {ratio:.2f}x  ({'meets' if ratio <= 1.5 else 'misses'} the <= 1.5x goal)")


if __name__ == "__main__":
    main()
