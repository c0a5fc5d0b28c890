"""ResNet-50's max pool (3x3/2, padding 1, of a ReLU's 1x64x112x112 float32
output) with its taps as NumPy's `np.maximum` against the runtime's choice
(`kernels._separable_max_pool`: `torch.maximum` on torch's pool at more than
one thread, after its NaN / -0.0 check), A/B in one process: the least
calling-thread and process CPU over N calls at each thread count, and whether
the bits agree. CPU time, not wall: the development machine is shared.

Run: OMP_WAIT_POLICY=PASSIVE python bench/runtime_max_pool_ab.py [--calls N]
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

import numpy as np
import torch

from rducc.runtime import kernels


def least_cpu(function: Callable[[], object], calls: int) -> tuple[float, float]:
    """The least calling-thread and process CPU of `calls` calls, ms."""
    thread = process = float("inf")
    for _ in range(calls):
        t0, p0 = time.thread_time(), time.process_time()
        function()
        thread, process = min(thread, time.thread_time() - t0), min(process, time.process_time() - p0)
    return thread * 1e3, process * 1e3


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=40)
    args = parser.parse_args()
    x = np.maximum(np.random.default_rng(0).standard_normal((1, 64, 112, 112)).astype(np.float32), 0)
    geometry = kernels.PoolWindow((3, 3), (2, 2), (1, 1), (1, 1), False)
    print("| threads | NumPy's taps: thread / process ms | runtime's: thread / process ms | check ms | same bits |")
    print("| --- | --- | --- | --- | --- |")
    for threads in (1, 2):
        torch.set_num_threads(threads)
        numpy_taps = least_cpu(lambda: kernels._separable_max_pool(x, geometry, threaded=False), args.calls)
        runtime = least_cpu(lambda: kernels._separable_max_pool(x, geometry), args.calls)
        check = least_cpu(lambda: kernels._maximum_on_torch(x), args.calls)
        same = np.array_equal(kernels._separable_max_pool(x, geometry).view(np.uint32),
                              kernels._separable_max_pool(x, geometry, threaded=False).view(np.uint32))
        print(f"| {threads} | {numpy_taps[0]:.3f} / {numpy_taps[1]:.3f} | {runtime[0]:.3f} / {runtime[1]:.3f} "
              f"| {check[0]:.3f} | {same} |")


if __name__ == "__main__":
    main()
