"""Same-process A/B of round 18's runtime changes at one and two threads (issue 32).

`--change grouped`: a mixture of experts' grouped product (`kernels.grouped_matmul`)
before looped `matmul` per expert (numpy's BLAS for a group under
`threads.PARALLEL_MACS` multiply-adds, the whole result zeroed first); after,
f32/f64 experts run torch's `mm` each into their rows, as eager's
`torch._grouped_mm` does on the CPU (its bits, a one-row group included),
and only the rows no expert takes are zeroed. A kernel change: undone around
each of the before program's calls.

`--change masked-attention`: Swin-T's shifted-window layers add the scores to
the relative-position bias and the window mask summed in one map
(`s + (b0 + b1)`); before, that map was no attention chain's
(`fused_attention`) and the layer ran its products, mask and softmax apart;
after, it runs ATen's fused kernel with the summed mask, as eager's SDPA. A
change made where the steps are made: undone while the before program is
compiled and first run.

`--change tiled-windows`: a convolution whose windows tile the image (stride
the window, no padding: ConvNeXt's stem and downsampling, ViT's patches)
before gathered its window matrix (`np.take`) from the image flattened in
channels-first order (a copy first where the image is a channels-last view:
ConvNeXt's downsampling reads a permuted layer norm's output); after, the
matrix is one transposed copy of the image in its own order
(`kernels._tiled_windows`). The same matrix, so the same bits. A kernel
change: undone around each of the before program's calls.

Each chosen full-size zoo model is compiled twice in one process (before,
after); both are checked against eager (the largest difference printed: the
bits move to eager's kernels, so before and after are not the same bits);
then at each thread count eager, before and after are timed interleaved
(`runtime_threads_ab.best_clocks`: least calling-thread CPU, process CPU and
wall time over N rounds), and the changed steps (the grouped products',
the attention chains', the convolutions': each step's least calling-thread
CPU over N calls, interleaved). Run with
`OMP_WAIT_POLICY=PASSIVE` on a loaded machine.

Run: python bench/runtime_round18_ab.py --change grouped|masked-attention|tiled-windows [--only NAME ...]
     [--threads N ...] [--calls N]
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
from collections.abc import Callable, Iterator, Mapping
from functools import partial

import numpy as np
import torch
from common import Section  # noqa: F401 - sets one BLAS thread before numpy loads
from runtime_ab import around, least_steps, outputs, programs
from runtime_threads_ab import best_clocks
from zoo.models import FULL_SIZE

from rducc.runtime import fused_attention, kernels


def _grouped_loop(lhs: np.ndarray, rhs: np.ndarray, offsets: np.ndarray, dtype: np.dtype | None = None,
                  transpose_rhs: bool = False, out: np.ndarray | None = None) -> np.ndarray:
    """`kernels.grouped_matmul` before this round: the result zeroed, then
    `kernels.matmul` per expert."""
    dtype = lhs.dtype if dtype is None else np.dtype(dtype)
    result = np.zeros((lhs.shape[0], rhs.shape[2] if not transpose_rhs else rhs.shape[1]), dtype) \
        if out is None else out
    if out is not None:
        result[...] = 0
    start = 0
    for expert, end in enumerate(offsets.tolist()):
        if start == end:
            continue
        rows = result[start:end]
        if rows.shape[0]:
            kernels.matmul(lhs[start:end], rhs[expert], dtype, transpose_rhs, out=rows)
        start = end
    return result


@contextlib.contextmanager
def _grouped_before() -> Iterator[None]:
    plain = kernels.grouped_matmul
    kernels.grouped_matmul = _grouped_loop
    try:
        yield
    finally:
        kernels.grouped_matmul = plain


@contextlib.contextmanager
def _one_bias_a_map() -> Iterator[None]:
    """Before: a map adding the scores to one bias alone is a chain's."""
    plain = fused_attention._scores_plus_biases  # noqa: SLF001 - the rule this A/B undoes
    fused_attention._scores_plus_biases = lambda found, names: plain(found, names) if len(names) == 1 else None  # noqa: SLF001
    try:
        yield
    finally:
        fused_attention._scores_plus_biases = plain  # noqa: SLF001


@contextlib.contextmanager
def _gathered() -> Iterator[None]:
    """Before: every window matrix gathered from the flattened image."""
    plain = kernels._tiled_windows  # noqa: SLF001 - the function this A/B swaps
    kernels._tiled_windows = kernels._gathered_windows  # noqa: SLF001
    try:
        yield
    finally:
        kernels._tiled_windows = plain  # noqa: SLF001


Change = tuple[Callable[[], contextlib.AbstractContextManager[None]], bool, Callable[[str, str], bool], str]

CHANGES: dict[str, Change] = {
    "grouped": (_grouped_before, False, lambda step, op: op == "rdu.grouped_matmul", "mixtral_100m"),
    "masked-attention": (_one_bias_a_map, True, lambda step, op: "attention" in step, "swin_t"),
    "tiled-windows": (_gathered, False, lambda step, op: "conv" in step or op == "rdu.conv", "convnext_t"),
}
"""Each change: the context it is undone in, whether it is made where the
steps are made, the steps it changes (by step and op name) and the model it is for."""


def timing_cells(eager: Callable[[], object], call_before: Callable[[], object], call_after: Callable[[], object],
                 steps: Callable[[], list[float]], calls: int) -> str:
    """A row's timing cells: eager's, before's and after's least calling-thread
    CPU / process CPU / wall ms over `calls` interleaved rounds (eager run
    first, so torch's pool is made as a user's program makes it), after /
    before by each, after / eager, and the changed steps' ms (`steps()`)."""
    eager()
    clocks = [[t * 1e3 for t in c] for c in best_clocks([eager, call_before, call_after], calls)]
    least = steps()
    e, b, a = (" / ".join(f"{t:.1f}" for t in c) for c in clocks)
    ratios = " | ".join(f"{clocks[2][k] / clocks[1][k]:.3f}x" for k in range(3))
    return (f"{e} | {b} | {a} | {ratios} | {clocks[2][0] / clocks[0][0]:.3f}x "
            f"| {least[0] * 1e3:.2f} -> {least[1] * 1e3:.2f}")


def arguments(changes: Mapping[str, object], doc: str) -> argparse.Namespace:
    """An A/B's command line (`--change` one of `changes`, the rounds after this one reuse it), its
    first line printed."""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("--change", choices=sorted(changes), required=True)
    parser.add_argument("--only", nargs="+", choices=sorted(FULL_SIZE))
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--calls", type=int, default=9)
    args = parser.parse_args()
    logging.disable(logging.WARNING)
    print(f"change: {args.change}; OMP_WAIT_POLICY={os.environ.get('OMP_WAIT_POLICY', '(unset)')}; ms: calling "
          "thread's CPU / process CPU / wall\n")
    return args


def main(changes: dict[str, Change] = CHANGES, doc: str = __doc__) -> None:
    """The A/B of one of `changes` (round 19's reuses it)."""
    args = arguments(changes, doc)
    undo, at_prepare, changed, model_name = changes[args.change]
    only = args.only or [model_name]
    print("| model | threads | eager ms | before ms | after ms | after / before (thread CPU) | (process CPU) "
          "| (wall) | after / eager (thread CPU) | changed steps ms before -> after | off eager before, after |")
    print("| --- " * 11 + "|")
    for name in only:
        torch.set_num_threads(1)
        model, inputs, before, after = programs(name, undo if at_prepare else contextlib.nullcontext)
        call_before = partial(before, *inputs) if at_prepare else around(before, inputs, undo)
        call_after = partial(after, *inputs)
        with torch.no_grad():
            expected = outputs(model(*inputs))
            off = [max(float(np.abs(got - want).max()) for got, want in zip(outputs(call()), expected, strict=True))
                   for call in (call_before, call_after)]
            for threads in args.threads:
                torch.set_num_threads(threads)
                contexts = [contextlib.nullcontext if at_prepare else undo, contextlib.nullcontext]
                cells = timing_cells(partial(model, *inputs), call_before, call_after,
                                     partial(least_steps, [before, after], inputs, args.calls, changed, contexts),
                                     args.calls)
                print(f"| {name} | {threads} | {cells} | {off[0]:.1e}, {off[1]:.1e} |", flush=True)
        torch.set_num_threads(1)


if __name__ == "__main__":
    main()
