"""Does the Adam spread rule (`training_cases.float32_spread`) hide a real mismatch?

Eager float32 training stands in for rducc with a bug injected into its
gradients; the float32 verdict (`training_cases.assert_matches`) is asked
with and without the spread's widening. Prints the largest spreads, how many
elements the widening loosens more than twofold, and per injected bug whether
the loss check and the parameter check (with and without the widening) catch it.

    .venv/bin/python bench/train_spread_audit.py [--model tiny_llama] [--dp2] [--steps 20]

`--dp2`: the batch doubled, as the matrix's dp=2 cells train (where the spread
was first needed). Eager only: a few seconds a model.
"""

from __future__ import annotations

import argparse
import copy
import sys
from collections.abc import Callable
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "test" / "python"))

from training_cases import (  # noqa: E402
    CASES,
    LOSS_ATOL,
    LOSS_RTOL,
    OPTIMIZERS,
    PARAM_ATOL,
    PARAM_RTOL,
    SPREAD_FACTOR,
    History,
    _no_dropout,
    _train_exact,
    assert_matches,
    batches,
    float32_spread,
)

Bug = Callable[[torch.nn.Module, int], None]


def _train(model: torch.nn.Module, case, data: list, bug: Bug | None = None) -> tuple[list[float], dict]:
    model = copy.deepcopy(model)
    optimizer = OPTIMIZERS["adamw"](model.parameters())
    losses = []
    for step, (x, y) in enumerate(data):
        optimizer.zero_grad()
        loss = case.loss(model(x), y)
        loss.backward()
        if bug:
            bug(model, step)
        optimizer.step()
        losses.append(loss.item())
    return losses, {n: p.detach().clone() for n, p in model.named_parameters()}


def _noise(relative: float) -> Bug:
    generator = torch.Generator().manual_seed(7)

    def bug(model: torch.nn.Module, step: int) -> None:
        for parameter in model.parameters():
            if parameter.grad is not None:
                size = parameter.grad.abs().mean() * relative
                parameter.grad.add_(size * torch.randn(parameter.grad.shape, generator=generator))
    return bug


def _rare_row_dropped(data: list) -> Bug:
    def bug(model: torch.nn.Module, step: int) -> None:
        tables = [p for n, p in model.named_parameters() if p.dim() == 2 and ("embed" in n or "wte" in n)]
        if step != 3 or not tables or data[step][0].is_floating_point():
            return
        counts = torch.bincount(data[step][0].flatten(), minlength=tables[0].shape[0])
        rows = (counts == 1).nonzero().flatten()
        if len(rows):
            tables[0].grad[rows[0]] = 0
    return bug


def _scaled_once(model: torch.nn.Module, step: int) -> None:
    if step == 5:
        for parameter in model.parameters():
            if parameter.grad is not None:
                parameter.grad.mul_(0.999)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="tiny_llama", choices=sorted(CASES))
    parser.add_argument("--dp2", action="store_true")
    parser.add_argument("--steps", type=int, default=20)
    args = parser.parse_args()
    case = CASES[args.model]
    model, example = case.build()
    model = _no_dropout(model.train())
    x = torch.cat([example[0], example[0]]) if args.dp2 else example[0]
    data = batches(case, x, args.steps)
    initial = {n: p.detach().clone() for n, p in model.named_parameters()}
    losses, reference = _train(model, case, data)
    spread = float32_spread(copy.deepcopy(model), case.loss, "adamw", data, reference)
    exact, unresolved = _train_exact(copy.deepcopy(model), case.loss, "adamw", data)
    largest = sorted(((s.max().item(), n) for n, s in spread.items()), reverse=True)[:3]
    print("largest spreads:", ", ".join(f"{n} {v:.2g}" for v, n in largest))
    bar = {n: PARAM_ATOL + PARAM_RTOL * reference[n].abs() for n in reference}
    loosened = sum(int((SPREAD_FACTOR * s > bar[n]).sum()) for n, s in spread.items())
    total = sum(p.numel() for p in reference.values())
    print(f"elements whose bar the widening loosens more than twofold: {loosened} of {total}")
    moved = max((SPREAD_FACTOR * s / ((reference[n] - initial[n]).abs() + 1e-12)).max().item()
                for n, s in spread.items())
    print(f"largest widening over the element's own movement in training: {moved:.3g}")
    bugs: dict[str, Bug] = {
        "gradient noise 1e-6 of mean |g|": _noise(1e-6), "gradient noise 1e-4": _noise(1e-4),
        "gradient noise 1e-3": _noise(1e-3), "a rare token's embedding row dropped at step 3": _rare_row_dropped(data),
        "all gradients x0.999 at step 5": _scaled_once,
    }
    for label, bug in bugs.items():
        bugged_losses, bugged = _train(model, case, data, bug)
        loss_caught = not torch.allclose(torch.tensor(bugged_losses), torch.tensor(losses), rtol=LOSS_RTOL,
                                         atol=LOSS_ATOL)
        verdicts = []
        for widened in (False, True):
            history = History(losses, losses, bugged, reference, None, None, exact, unresolved,  # type: ignore[arg-type]
                              1e-3, args.steps, spread if widened else {})
            try:
                assert_matches(history)
                verdicts.append("passes")
            except AssertionError:
                verdicts.append("caught")
        print(f"{label}: losses {'caught' if loss_caught else 'pass'}; parameters without widening {verdicts[0]}, "
              f"with it {verdicts[1]}")


if __name__ == "__main__":
    main()
