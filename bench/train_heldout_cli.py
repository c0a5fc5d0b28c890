"""Held-out training models (bench/train_heldout.py) through the command line
(issue 27): the model and its loss exported with torch.export and saved,
`rducc MODEL.pt2 --train --optimizer adamw --lr LR -o step.mlir`, then
`rducc-run step.mlir --train --steps N --data batches.npz --output out.npz`;
the losses it prints and the parameters and buffers it writes against eager
torch.optim.AdamW on the same batches (losses within rtol 1e-5, parameters and
buffers within rtol 1e-4, atol 1e-5).

    .venv/bin/python bench/train_heldout_cli.py [--models resnet_layout,linear_attention] [--steps 4]
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import io
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch
from torch import nn

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "test" / "python"))

from train_heldout import HELD_OUT  # noqa: E402
from training_cases import _no_dropout, batches  # noqa: E402

from rducc.tools import cli, run  # noqa: E402

LR = 1e-3


class _WithLoss(nn.Module):
    """The model and its loss: forward(x, labels) returns the loss, as `rducc --train` takes it."""

    def __init__(self, model: nn.Module, loss) -> None:
        super().__init__()
        self.model, self.loss = model, loss

    def forward(self, x: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        return self.loss(self.model(x), labels)


def check(name: str, steps: int, directory: Path) -> str:
    """One model through the CLI: the verdict and the largest differences."""
    case = HELD_OUT[name]
    model, example = case.build()
    wrapped = _WithLoss(_no_dropout(model.train()), case.loss)
    eager = copy.deepcopy(wrapped)
    data = batches(case, example[0], steps, seed=100)
    torch.export.save(torch.export.export(copy.deepcopy(wrapped), data[0]), str(directory / "train.pt2"))
    assert cli.main([str(directory / "train.pt2"), "--train", "--optimizer", "adamw", "--lr", str(LR), "-q",
                     "-o", str(directory / "step.mlir")]) == 0
    np.savez(directory / "batches.npz", x=np.stack([x.numpy() for x, _ in data]),
             labels=np.stack([y.numpy() for _, y in data]))
    errors = io.StringIO()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(errors):
        status = run.main([str(directory / "step.mlir"), "--train", "--steps", str(steps), "--data",
                           str(directory / "batches.npz"), "--output", str(directory / "out.npz")])
    if status != 0:
        return f"FAIL rducc-run: {errors.getvalue().strip().splitlines()[-1][:160]} | | "
    optimizer = torch.optim.AdamW(eager.parameters(), lr=LR)
    expected = []
    for x, y in data:
        optimizer.zero_grad()
        loss = eager(x, y)
        loss.backward()
        optimizer.step()
        expected.append(loss.item())
    with np.load(directory / "out.npz") as out:
        losses = out["loss"]
        state = {key.removeprefix("buffer:"): out[key] for key in out.files if key.startswith("buffer:")}
    loss_diff = float(np.max(np.abs(losses - expected) / np.abs(expected)))
    tensors = {**dict(eager.named_parameters()), **{n: b for n, b in eager.named_buffers() if b.is_floating_point()}}
    worst, ok = 0.0, loss_diff <= 1e-5
    for key, want in tensors.items():
        got = state.get(key)
        if got is None:
            continue  # a buffer the step does not update
        want_np = want.detach().numpy()
        worst = max(worst, float(np.max(np.abs(got - want_np))))
        ok = ok and bool(np.allclose(got, want_np, rtol=1e-4, atol=1e-5))
    return f"{'ok' if ok else 'FAIL'} | {loss_diff:.3g} | {worst:.3g}"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", default="resnet_layout,linear_attention")
    parser.add_argument("--steps", type=int, default=4)
    args = parser.parse_args(argv)
    print(f"# AdamW lr {LR}, {args.steps} steps, rducc --train then rducc-run --train (-O2, sn40l)")
    print("| model | verdict | loss max rel diff | param/buffer max abs diff | s |")
    print("| --- | --- | --- | --- | --- |")
    for name in args.models.split(","):
        start = time.time()
        with tempfile.TemporaryDirectory() as directory:
            try:
                verdict = check(name, args.steps, Path(directory))
            except Exception as error:  # noqa: BLE001 - a table row per model
                verdict = f"FAIL {type(error).__name__}: {(str(error).splitlines() or [''])[0][:120]} | | "
        print(f"| {name} | {verdict} | {time.time() - start:.0f} |", flush=True)


if __name__ == "__main__":
    main()
