"""Which batch norm's float32 rounding moves a held-out model's gradients (issue 27, tbn27).

One eager step of `levit_timm` or `googlenet_aux` (bench/heldout_round15.py, the matrix's first batch,
seed 100) in float64, then again with a chosen set of batch norms (`native_batch_norm` forward and
`native_batch_norm_backward`, ATen's kernels) computed in float32 (inputs rounded, results widened);
the largest gradient difference from the float64 step, relative to each tensor's largest float64
gradient (batch norm biases whose exact gradient is 0 left out). Groups: the batch norms normalizing
at most K values per channel, the others; `--each`: every forward batch norm alone.

    .venv/bin/python bench/train_norm_rounding.py levit 2
    .venv/bin/python bench/train_norm_rounding.py googlenet 2 8 32 128
    .venv/bin/python bench/train_norm_rounding.py levit --each
"""

from __future__ import annotations

import copy
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode

sys.path.insert(0, str(Path(__file__).parent))
sys.path.insert(0, str(Path(__file__).parent.parent / "test" / "python"))
import heldout_round15 as round15  # noqa: E402
from training_cases import Case, batches  # noqa: E402

aten = torch.ops.aten
NORMS = {aten.native_batch_norm.default: 0, aten.native_batch_norm_backward.default: 1}
"""The batch norm ops and the index of the input whose values per channel they normalize."""


class Float32Norms(TorchDispatchMode):
    """In a float64 run, the batch norms `chosen(op, values per channel, forward call index)` picks in float32."""

    def __init__(self, chosen: Callable[[Any, int, int], bool]) -> None:
        super().__init__()
        self.chosen, self.calls = chosen, 0

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        if func in NORMS:
            values = args[NORMS[func]].numel() // args[NORMS[func]].shape[1]
            index = self.calls
            self.calls += func is aten.native_batch_norm.default
            if self.chosen(func, values, index):
                narrow = [a.float() if isinstance(a, torch.Tensor) and a.dtype == torch.float64 else a for a in args]
                return tuple(o.double() if isinstance(o, torch.Tensor) else o for o in func(*narrow))
        return func(*args, **(kwargs or {}))


def _case(name: str) -> tuple[torch.nn.Module, Callable[..., torch.Tensor], torch.Tensor, torch.Tensor]:
    if name == "levit":
        model, (example,) = round15.levit()
        loss, classes = torch.nn.functional.cross_entropy, 5
    else:
        model, (example,) = round15.googlenet_aux()
        loss, classes = round15.googlenet_loss, round15.GOOGLENET_CLASSES
    x, y = batches(Case(None, None, classes), example, 1, seed=100)[0]  # type: ignore[arg-type]
    return model.train(), loss, x, y


def gradients(model: torch.nn.Module, loss: Callable[..., torch.Tensor], x: torch.Tensor, y: torch.Tensor,
              chosen: Callable[[Any, int, int], bool]) -> dict[str, torch.Tensor]:
    wide = copy.deepcopy(model).double()
    with Float32Norms(chosen):
        loss(wide(x.double()), y).backward()
    return {n: p.grad for n, p in wide.named_parameters() if p.grad is not None}


def main() -> None:
    name, rest = sys.argv[1], sys.argv[2:]
    model, loss, x, y = _case(name)
    exact = gradients(model, loss, x, y, lambda *_: False)

    def worst(chosen: Callable[[Any, int, int], bool]) -> float:
        got = gradients(model, loss, x, y, chosen)
        return max(((got[n] - g).abs().max() / g.abs().max()).item() for n, g in exact.items()
                   if g.abs().max() > 0 and not n.endswith("bn.bias"))

    if rest == ["--each"]:
        calls = Float32Norms(lambda *_: False)
        with calls:
            loss(copy.deepcopy(model).double()(x.double()), y)
        for index in range(calls.calls):
            print(f"{name}: forward batch norm {index} alone in float32: {worst(lambda f, v, i: i == index and f is aten.native_batch_norm.default):.1e}")
        return
    for k in map(int, rest):
        small = worst(lambda f, v, i: v <= k)
        others = worst(lambda f, v, i: v > k)
        print(f"{name}: batch norms over <= {k} values per channel in float32: {small:.1e}; the others: {others:.1e}")


if __name__ == "__main__":
    main()
