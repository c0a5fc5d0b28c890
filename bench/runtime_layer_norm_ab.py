"""Same-process A/B of a layer norm's backward as ATen's fused kernel (issue 27).

The joint graph keeps `native_layer_norm_backward` whole and the runtime runs
it, and the statistics the forward saves, as torch's kernels
(`rdu.layer_norm_grad`, `rdu.layer_norm_stat`); before, torch's
decomposition of the backward (float32 sums and products) ran as rducc's maps
and reductions. This compiles one bf16 training step (gradients only) of a
block of two layer norms, a linear layer and GELU twice in one process,
before (the backward decomposed: `LAYER_NORM_AS_EAGER` emptied; the forward's
statistics are the kernel's in both) and after, counts the gradient elements
each gives off eager autocast's, and times eager, before and after
interleaved at one thread (torch's and BLAS's; CPU time of the calling thread, best of N calls,
the garbage collector paused), printing after / before.

Run: python bench/runtime_layer_norm_ab.py [--calls N]
"""

from __future__ import annotations

import argparse
import copy
import functools
import logging
from collections.abc import Callable

import torch
from common import Section  # noqa: F401 - sets one BLAS thread before numpy loads
from runtime_norm_ab import best_times
from torch import nn

import rducc
import rducc.frontend.decompositions as decompositions
import rducc.training.compile as training_compile


class _Block(nn.Module):
    def __init__(self, width: int) -> None:
        super().__init__()
        self.first, self.second = nn.LayerNorm(width), nn.LayerNorm(width)
        self.up, self.head = nn.Linear(width, width), nn.Linear(width, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = x + nn.functional.gelu(self.up(self.first(x)))
        return self.head(self.second(h)).flatten(0, 1)


def _step(model: nn.Module, batch: tuple[torch.Tensor, torch.Tensor], kept_whole: bool) -> rducc.TrainingProgram:
    saved = training_compile.LAYER_NORM_AS_EAGER, decompositions.LAYER_NORM_AS_EAGER
    if not kept_whole:
        training_compile.LAYER_NORM_AS_EAGER = decompositions.LAYER_NORM_AS_EAGER = ()
    try:
        return rducc.compile_training(copy.deepcopy(model), batch, optimizer=None, mixed_precision="bf16",
                                      loss_fn=nn.functional.cross_entropy, opt_level=2)
    finally:
        training_compile.LAYER_NORM_AS_EAGER, decompositions.LAYER_NORM_AS_EAGER = saved


def _eager(model: nn.Module, batch: tuple[torch.Tensor, torch.Tensor]) -> Callable[[], list[torch.Tensor]]:
    def run() -> list[torch.Tensor]:
        model.zero_grad()
        with torch.autocast("cpu", torch.bfloat16):
            loss = nn.functional.cross_entropy(model(batch[0]), batch[1])
        loss.backward()
        return [p.grad for p in model.parameters()]
    return run


def _off(program: rducc.TrainingProgram, batch: tuple[torch.Tensor, torch.Tensor],
         expected: dict[str, torch.Tensor]) -> int:
    """Gradient elements of one step off eager autocast's."""
    _, *gradients = program.step(*batch)
    return sum(int((torch.as_tensor(g) != expected[n.removeprefix("model.")]).sum())
               for n, g in zip(program.trained, gradients, strict=True))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=7)
    args = parser.parse_args()
    logging.disable(logging.WARNING)
    torch.set_num_threads(1)
    print("| rows x width | gradient elements | eager ms | before ms | after ms | after / before "
          "| before: elements off eager | after |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for rows, width in [(2 * 8, 64), (4 * 128, 768)]:
        torch.manual_seed(0)
        model = _Block(width)
        generator = torch.Generator().manual_seed(1)
        batch = (torch.randn(rows // 8, 8, width, generator=generator),
                 torch.randint(0, 8, (rows,), generator=generator))
        eager = _eager(model, batch)
        eager()
        expected = {n: p.grad.clone() for n, p in model.named_parameters()}
        before, after = _step(model, batch, False), _step(model, batch, True)
        off = [_off(before, batch, expected), _off(after, batch, expected)]
        times = best_times([eager, functools.partial(before.step, *batch), functools.partial(after.step, *batch)],
                           args.calls)
        count = sum(p.numel() for p in model.parameters())
        print(f"| {rows} x {width} | {count:,} | {times[0] * 1e3:.2f} | {times[1] * 1e3:.2f} | {times[2] * 1e3:.2f} "
              f"| {times[2] / times[1]:.2f}x | {off[0]} | {off[1]} |", flush=True)


if __name__ == "__main__":
    main()
