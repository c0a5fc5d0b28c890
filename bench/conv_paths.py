"""Convolution paths: rducc's `kernels.conv` against eager's `F.conv{1,2,3}d`, shape by shape.

Every convolution of the zoo's convolution networks at batch 1 (the shapes
of the `rdu.conv` ops of their -O2 programs, each distinct shape once), run
by `rducc.runtime.kernels.conv` on numpy arrays (with the plan `conv_plan`
makes, as the runtime's kernel does) and by eager's `torch.nn.functional.conv{1,2,3}d`
on contiguous tensors, at one thread, best of N calls interleaved (eager,
rducc, eager, ...), each call's CPU time of the calling thread
(`time.thread_time`: both run on it at one thread; a noisy shared machine
takes the core away mid-call, which wall time would count). Each shape is
timed warm (called again and again, its code and data in the caches) and
cold (a 512x512 by 512x64 f32 GEMM before each call evicts them, as a
program's other ops do between two convolutions: oneDNN's per-call cost
doubles then). Goal (issue 19): rducc's convolution at least as fast as
eager's, median over the shapes.

Run: python bench/conv_paths.py [--quick] [--only MODEL ...] [--calls N]
"""

from __future__ import annotations

import argparse
import gc
import logging
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch
from common import Section
from zoo.models import ZOO

import rducc
from rducc.dialects.rdu import dataflow as rdu
from rducc.runtime import kernels
from rducc.runtime.dtypes import tensor_signature

CONV_NETWORKS = (
    "convnext_hf", "convnextv2", "segformer", "poolformer", "mobilevit", "wav2vec2", "resnet", "efficientnet",
    "mobilenet_v2", "regnet", "mobilenet_v1", "levit", "whisper_encoder",
)
"""The zoo models whose convolutions are timed (every zoo model with more than a patch embedding)."""

QUICK = ("convnext_hf", "segformer", "wav2vec2")

EAGER = {1: torch.nn.functional.conv1d, 2: torch.nn.functional.conv2d, 3: torch.nn.functional.conv3d}


@dataclass(frozen=True)
class ConvShape:
    """One convolution: input and weight shapes and attributes."""

    x: tuple[int, ...]
    w: tuple[int, ...]
    stride: tuple[int, ...]
    padding: tuple[int, ...]
    dilation: tuple[int, ...]
    groups: int

    def label(self) -> str:
        kind = "depthwise" if self.groups == self.x[1] and self.groups > 1 else \
            f"groups {self.groups}" if self.groups > 1 else "dense"
        return (f"x {'x'.join(map(str, self.x))}, w {'x'.join(map(str, self.w))}, stride "
                f"{','.join(map(str, self.stride))}, pad {','.join(map(str, self.padding))}, {kind}")


def zoo_shapes(names: tuple[str, ...]) -> dict[ConvShape, list[str]]:
    """Each distinct convolution of these models' -O2 programs (batch 1), with the models it is in."""
    logging.disable(logging.WARNING)
    shapes: dict[ConvShape, list[str]] = {}
    for name in names:
        model, inputs = ZOO[name].build(1)
        with torch.no_grad():
            program = rducc.compile(torch.export.export(model, inputs), opt_level=2)
        for op in program.module.walk():
            if isinstance(op, rdu.ConvOp):
                shape = ConvShape(tensor_signature(op.input.type)[0], tensor_signature(op.weight.type)[0],
                                  tuple(op.stride.get_values()), tuple(op.padding.get_values()),
                                  tuple(op.dilation.get_values()), op.groups.value.data)
                models = shapes.setdefault(shape, [])
                if name not in models:
                    models.append(name)
    return shapes


def interleaved_cpu(first: Callable[[], object], second: Callable[[], object], calls: int,
                    before: Callable[[], object] = lambda: None) -> tuple[float, float]:
    """Best CPU time of the calling thread of each function over `calls`
    alternating calls (after a warm-up), `before` run (untimed) before each,
    the garbage collector paused."""
    first(), second()
    best = [float("inf")] * 2
    gc.collect()
    gc.disable()
    try:
        for _ in range(calls):
            for index, function in enumerate((first, second)):
                before()
                start = time.thread_time()
                function()
                best[index] = min(best[index], time.thread_time() - start)
    finally:
        gc.enable()
    return best[0], best[1]


_EVICTION = [np.ones((512, 512), np.float32), np.ones((512, 64), np.float32), np.empty((512, 64), np.float32)]


def evict_caches() -> None:
    """What a program's other ops do to the caches between two convolutions:
    a GEMM over 1 MiB (BLAS code and data)."""
    np.matmul(_EVICTION[0], _EVICTION[1], out=_EVICTION[2])


def time_shape(shape: ConvShape, calls: int) -> tuple[tuple[float, float], tuple[float, float], str]:
    """Eager's and rducc's seconds for one convolution, warm and cold, and rducc's path."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal(shape.x).astype(np.float32)
    w = rng.standard_normal(shape.w).astype(np.float32)
    attributes = (shape.stride, shape.padding, shape.dilation, shape.groups)
    eager = EAGER[len(shape.x) - 2]
    expected = eager(torch.from_numpy(x), torch.from_numpy(w), None, *attributes).numpy()
    np.testing.assert_allclose(kernels.conv(x, w, *attributes), expected, rtol=1e-4, atol=1e-4)
    plan = kernels.conv_plan(shape.x, shape.w, *attributes, np.dtype(np.float32))  # as the op's kernel does
    sides = (lambda: eager(torch.from_numpy(x), torch.from_numpy(w), None, *attributes).numpy(),
             lambda: kernels.conv(x, w, *attributes, plan=plan))
    return interleaved_cpu(*sides, calls), interleaved_cpu(*sides, calls, evict_caches), plan.path


def run(quick: bool, names: tuple[str, ...] | None = None, calls: int | None = None) -> Section:
    calls = calls or (10 if quick else 50)
    names = names or (QUICK if quick else CONV_NETWORKS)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        shapes = zoo_shapes(names)
        rows, warm_ratios, cold_ratios = [], [], []
        for shape, models in shapes.items():
            (eager_s, ours_s), (eager_cold, ours_cold), path = time_shape(shape, calls)
            warm_ratios.append((ours_s / eager_s, shape.label()))
            cold_ratios.append((ours_cold / eager_cold, shape.label()))
            rows.append(f"| {shape.label()} | {', '.join(models)} | {path} | {eager_s * 1e6:.1f} | "
                        f"{ours_s * 1e6:.1f} | {ours_s / eager_s:.2f}x | {eager_cold * 1e6:.1f} | "
                        f"{ours_cold * 1e6:.1f} | {ours_cold / eager_cold:.2f}x |")
    finally:
        torch.set_num_threads(threads)
    section = Section("Convolution paths: rducc kernels.conv vs eager F.conv, the zoo's shapes",
                      "python bench/conv_paths.py" + (" --quick" if quick else ""))
    for label, ratios in (("warm", warm_ratios), ("cold", cold_ratios)):
        median = statistics.median(r for r, _ in ratios)
        worst, slowest = max(ratios)
        section.add(f"median rducc / eager conv time (1 thread, {label})", f"{median:.2f}x over {len(ratios)} shapes",
                    "<= 1.0x", median <= 1.0)
        section.add(f"worst rducc / eager conv time (1 thread, {label})", f"{worst:.2f}x ({slowest})")
    section.details += [
        f"Each distinct convolution of {', '.join(names)} at batch 1 (f32), best CPU time of {calls} interleaved "
        "calls at one thread, warm and cold (caches evicted before each call); path: the one "
        "`kernels.conv_plan` picks (pointwise GEMM, windows: one gather and one GEMM, torch: oneDNN).", "",
        "| convolution | models | path | eager us | rducc us | rducc / eager | eager us, cold | rducc us, cold | "
        "rducc / eager, cold |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- |", *rows,
    ]
    return section


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="three models, fewer calls")
    parser.add_argument("--only", nargs="+", choices=sorted(ZOO), help="just these models' convolutions")
    parser.add_argument("--calls", type=int, help="interleaved calls of each side (default 50, --quick 10)")
    args = parser.parse_args()
    start = time.perf_counter()
    section = run(args.quick, tuple(args.only) if args.only else None, args.calls)
    section.seconds = time.perf_counter() - start
    print(section.text())


if __name__ == "__main__":
    main()
