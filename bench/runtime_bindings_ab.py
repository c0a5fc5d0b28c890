"""Same-process A/B of the fused kernels called through torch's C++ bindings (issue 32, round 16).

The runtime's fused layer norm, softmax and activation kernels called torch
through the Python op objects (`torch.ops.aten.native_layer_norm`,
`torch.ops.aten._softmax.out`, `torch.ops.aten.gelu.out`, ...), which run
more Python than eager's calls (`torch.layer_norm`, `torch._softmax`,
`torch._C._nn.gelu`): the same CPU kernels, but after a large product has
pushed that code and its data out of the caches a layer norm's call took
30-40 us longer (a ViT-B/16 layer norm: 190-220 us against 255-285 us at one
thread). Now they call the bindings (`kernels.layer_norm`, `kernels.softmax`,
`map_body._ACTIVATIONS`). This compiles each chosen full-size zoo model
twice in one process, before (the old calls, restored around each of its
calls and while it is compiled) and after, checks both give the same result
bit for bit, and times eager, before and after interleaved at one thread
(CPU time of the calling thread, best of N calls, the garbage collector
paused); then the changed steps alone (each step's least CPU time over N
calls of each program, interleaved).

Run: python bench/runtime_bindings_ab.py [--only NAME ...] [--calls N]
"""

from __future__ import annotations

import argparse
import contextlib
import logging
from collections.abc import Iterator
from functools import partial

import numpy as np
import torch
from common import Section  # noqa: F401 - sets one BLAS thread before numpy loads
from runtime_ab import around, least_steps, programs, same_bits
from runtime_norm_ab import best_times
from zoo.models import FULL_SIZE

from rducc.runtime import kernels, map_body
from rducc.runtime.subnormals import subnormals_as_zero


def _old_layer_norm(x: np.ndarray, dims: int, weight: np.ndarray | None, bias: np.ndarray | None, eps: float,
                    out: np.ndarray | None) -> np.ndarray:
    """`kernels.layer_norm` before: through `torch.ops.aten`."""
    shape = list(x.shape[x.ndim - dims:])
    params = [None if p is None else torch.from_numpy(p) for p in (weight, bias)]
    if out is None:
        return torch.ops.aten.native_layer_norm(torch.from_numpy(x), shape, *params, eps)[0].numpy()
    if np.may_share_memory(x, out):
        np.copyto(out, torch.ops.aten.native_layer_norm(torch.from_numpy(x), shape, *params, eps)[0].numpy())
        return out
    stats = torch.empty((*x.shape[:x.ndim - dims], *[1] * dims), dtype=torch.from_numpy(x).dtype)
    torch.ops.aten.native_layer_norm.out(torch.from_numpy(x), shape, *params, eps,
                                         out0=torch.from_numpy(out), out1=stats, out2=torch.empty_like(stats))
    return out


def _old_softmax(x: np.ndarray, dim: int, log: bool, out: np.ndarray) -> np.ndarray:
    """`kernels.softmax` before: through `torch.ops.aten`."""
    kernel = torch.ops.aten._log_softmax if log else torch.ops.aten._softmax
    with subnormals_as_zero():
        if np.may_share_memory(x, out):
            np.copyto(out, kernel(torch.from_numpy(x), dim, False).numpy(), casting="no")
        else:
            kernel.out(torch.from_numpy(x), dim, False, out=torch.from_numpy(out))
    return out


_OLD_ACTIVATIONS = {
    "gelu": lambda t, out: torch.ops.aten.gelu.out(t, out=out),
    "gelu_tanh": lambda t, out: torch.ops.aten.gelu.out(t, approximate="tanh", out=out),
    "silu": lambda t, out: torch.ops.aten.silu.out(t, out=out),
    "sigmoid": lambda t, out: torch.ops.aten.sigmoid.out(t, out=out),
}


@contextlib.contextmanager
def _old_calls() -> Iterator[None]:
    """The kernels as before (the activations are chosen when a map's step is made)."""
    saved = kernels.layer_norm, kernels.softmax, dict(map_body._ACTIVATIONS)
    kernels.layer_norm, kernels.softmax = _old_layer_norm, _old_softmax  # type: ignore[assignment]
    map_body._ACTIVATIONS.update(_OLD_ACTIVATIONS)
    try:
        yield
    finally:
        kernels.layer_norm, kernels.softmax = saved[0], saved[1]  # type: ignore[assignment]
        map_body._ACTIVATIONS.update(saved[2])


def _changed(step: str, op: str) -> bool:
    """The steps that call a changed kernel: layer norms, softmaxes and maps (activations)."""
    return "layer_norm" in step or step == "softmax" or (op == "rdu.map" and step.startswith("step"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="+", choices=sorted(FULL_SIZE),
                        default=["vit_b_16", "convnext_t", "gpt2_small"])
    parser.add_argument("--calls", type=int, default=9)
    args = parser.parse_args()
    logging.disable(logging.WARNING)
    torch.set_num_threads(1)
    print("| model | eager ms | before ms | after ms | before / eager | after / eager | after / before | same bits "
          "| changed steps ms before -> after |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for name in args.only:
        model, inputs, before, after = programs(name, _old_calls)
        with torch.no_grad():
            old = around(before, inputs, _old_calls)
            same = same_bits(old, partial(after, *inputs))
            times = best_times([partial(model, *inputs), old, partial(after, *inputs)], args.calls)
            steps = least_steps([before, after], inputs, args.calls, _changed, [_old_calls, contextlib.nullcontext])
        e, b, a = (t * 1e3 for t in times)
        print(f"| {name} | {e:.1f} | {b:.1f} | {a:.1f} | {b / e:.3f}x | {a / e:.3f}x | {a / b:.3f}x | {same} "
              f"| {steps[0] * 1e3:.2f} -> {steps[1] * 1e3:.2f} |", flush=True)


if __name__ == "__main__":
    main()
