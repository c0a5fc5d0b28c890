"""`rducc-run step.mlir --train --steps N --data batches.npz`: train with a
compiled training step (`rducc model.pt2 --train ... -o step.mlir`).

`batches.npz` holds one array per input of the step, named by the input's
label (`rducc-run --simulate` and the MLIR's `rdu.input` show them), each of
shape (BATCHES, *input shape). Step i runs on batch i mod BATCHES and writes
the parameters and optimizer state back (the step's `rdu.result_updates`);
each step's loss is printed (`step 3/20: loss 2.301`), with a progress line on
a terminal. `--output FILE.npz` writes the losses (`loss`) and the final
state (`buffer:NAME`); `--save-weights FILE` writes the trained state as a
weights file `rducc-run --weights FILE` reads, to continue training.
`--lr LR` sets every param group's learning rate for the run (program state:
a schedule across runs needs no compiling again).
"""

from __future__ import annotations

import argparse
import sys
import time
import zipfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from xdsl.dialects.builtin import ModuleOp

from rducc.dialects.contracts import result_roles, result_updates
from rducc.dialects.program import entry_function
from rducc.errors import RduccError


def check_training_step(module: ModuleOp, path: Path) -> None:
    """The program is a training step: its first result is the loss."""
    roles = result_roles(entry_function(module))
    if not roles or roles[0] is None or roles[0].kind != "loss":
        raise RduccError(f"{path}: not a training step (its first result is not a loss); "
                         "compile one with rducc model.pt2 --train -o step.mlir")


def load_batches(path: str, declared: Sequence, microbatches: int = 1) -> tuple[list[np.ndarray], int]:
    """The arrays of `path` for the declared inputs, in order, and the number of
    batches they hold; with `microbatches` K, each array holds microbatches
    (1/K of the input's first dimension) and K in a row make one batch."""
    try:
        with np.load(path, allow_pickle=False) as archive:
            arrays = {name: archive[name] for name in archive.files}
    except (OSError, ValueError, zipfile.BadZipFile, EOFError) as error:
        raise RduccError(f"--data {path}: not a .npz archive of arrays ({error})") from None
    found: list[np.ndarray] = []
    counts: dict[str, int] = {}
    for index, argument in enumerate(declared):
        what = f"input #{index} ('{argument.name}')"
        if argument.name not in arrays:
            held = ", ".join(sorted(arrays)) or "nothing"
            raise RduccError(f"--data {path}: no array '{argument.name}' for {what}; the file holds {held}")
        array = arrays[argument.name]
        if array.dtype.kind == "V" and array.dtype.itemsize == np.dtype(argument.dtype).itemsize:
            array = array.view(argument.dtype)
        if array.dtype != argument.dtype:
            raise RduccError(f"--data {path}: array '{argument.name}' has dtype {array.dtype.name}; "
                             f"{what} is {np.dtype(argument.dtype).name}")
        shape = tuple(argument.shape)
        if microbatches > 1:
            array, shape = _grouped(path, array, argument, what, microbatches)
        if tuple(array.shape[1:]) != shape or array.ndim == 0 or array.shape[0] == 0:
            raise RduccError(f"--data {path}: array '{argument.name}' has shape {list(array.shape)}; {what} is "
                             f"{list(argument.shape)}, so the file needs shape [BATCHES, "
                             f"{', '.join(str(d) for d in argument.shape)}]")
        counts[argument.name] = array.shape[0]
        found.append(array)
    if len(set(counts.values())) > 1:
        listed = ", ".join(f"'{n}' {c}" for n, c in counts.items())
        raise RduccError(f"--data {path}: the arrays hold different numbers of batches ({listed})")
    return found, next(iter(counts.values()), 1)


def _grouped(path: str, array: np.ndarray, argument: Any, what: str, k: int) -> tuple[np.ndarray, tuple]:
    """`array` of microbatches [N, B/k, ...] as [N/k, B, ...] batches (k microbatches in a row each)."""
    shape = tuple(argument.shape)
    if not shape or shape[0] % k:
        raise RduccError(f"--microbatches {k}: {what} has shape {list(shape)}, whose first dimension does not "
                         f"split into {k} microbatches")
    micro = (shape[0] // k, *shape[1:])
    if array.ndim == 0 or tuple(array.shape[1:]) != micro or array.shape[0] % k:
        raise RduccError(f"--data {path}: array '{argument.name}' has shape {list(array.shape)}; with "
                         f"--microbatches {k} it holds microbatches of {what} (shape {list(shape)}), so the file "
                         f"needs shape [{k} x STEPS, {', '.join(str(d) for d in micro)}]")
    return array.reshape(array.shape[0] // k, *shape), shape


class Progress:
    """`[#####-----] 5/10 steps, 0.42 s/step` on a terminal's stderr."""

    def __init__(self, total: int, stream=None):
        self.total = total
        self.stream = stream if stream is not None else sys.stderr
        self.enabled = self.stream.isatty()
        self.started = time.monotonic()

    def update(self, done: int) -> None:
        if not self.enabled:
            return
        width = 20
        filled = width * done // self.total
        rate = (time.monotonic() - self.started) / max(done, 1)
        self.stream.write(f"\r\x1b[2Krducc-run: [{'#' * filled}{'-' * (width - filled)}] {done}/{self.total} "
                          f"steps, {rate:.2f} s/step")
        self.stream.flush()

    def finish(self) -> None:
        if self.enabled:
            self.stream.write("\r\x1b[2K")
        elapsed = time.monotonic() - self.started
        self.stream.write(f"rducc-run: {self.total} training steps in {elapsed:.1f} s "
                          f"({elapsed / max(self.total, 1):.3f} s a step)\n")
        self.stream.flush()


def train(module: ModuleOp, runner, batches: list[np.ndarray], count: int, steps: int,
          weights: dict[str, np.ndarray]) -> list[float]:
    """Run `steps` training steps, writing the state back into `weights`; the losses."""
    updates = result_updates(entry_function(module))
    losses: list[float] = []
    progress = Progress(steps)
    for step in range(steps):
        inputs = [array[step % count] for array in batches]
        results = runner.run(inputs, weights)
        for update, value in zip(updates, results):
            if update is not None and update.kind == "buffer":
                weights[update.name] = np.array(value)
        loss = float(np.asarray(results[0]).astype(np.float64))
        losses.append(loss)
        print(f"step {step + 1}/{steps}: loss {loss:.6g}", flush=True)
        progress.update(step + 1)
    progress.finish()
    return losses


def set_lr(weights: dict[str, np.ndarray], lr: float) -> None:
    """`--lr`: every param group's learning rate (the globals `optimizer.lr.GROUP`) set to `lr`."""
    from rducc.training.optimizers import is_lr_global

    names = [name for name in weights if is_lr_global(name)]
    if not names:
        raise RduccError("--lr: the step updates no parameters (compiled with --optimizer none), so it has no "
                         "learning rate")
    for name in names:
        weights[name] = np.array(lr, dtype=weights[name].dtype)


def run_training(args: argparse.Namespace, module: ModuleOp, program_path: Path, weights_path: Path | None,
                 npz_writer: Callable[[dict[str, np.ndarray]], Any]) -> list[tuple[str, Any]]:
    """`rducc-run --train`: check the data against the step and train; the
    outputs asked for (--output, --save-weights), as (path, writer) pairs for
    `rducc.files.write_together`."""
    from rducc.runtime.sockets import declared_arguments, placed_runner
    from rducc.weights import load_weights

    check_training_step(module, program_path)
    if args.data is None:
        raise RduccError("--train needs --data FILE.npz (the batches: one array per input, by its name)")
    if args.input:
        raise RduccError("--train takes its batches from --data FILE.npz, not --input")
    if args.steps is not None and args.steps < 1:
        raise RduccError(f"--steps {args.steps}: the number of steps must be at least 1")
    if args.lr is not None and not 0 <= args.lr < float("inf"):
        raise RduccError(f"--lr {args.lr}: a learning rate is a finite number of at least 0 "
                         "(as torch.optim takes it)")
    runner = placed_runner(module)
    declared_inputs, declared_weights = declared_arguments(runner)
    if args.microbatches is not None and args.microbatches < 1:
        raise RduccError(f"--microbatches {args.microbatches}: give a whole number of at least 1")
    batches, count = load_batches(args.data, declared_inputs, args.microbatches or 1)
    if weights_path is None:
        raise RduccError(f"{program_path}: the program names no weights file; pass --weights FILE")
    weights = load_weights(weights_path, {w.name: (w.shape, w.dtype) for w in declared_weights})
    if args.lr is not None:
        set_lr(weights, args.lr)
    losses = train(module, runner, batches, count, args.steps or count, weights)
    outputs: list[tuple[str, Any]] = []
    if args.output:
        outputs.append((args.output, npz_writer({"loss": np.array(losses, dtype=np.float32)} |
                                                {f"buffer:{name}": value for name, value in weights.items()})))
    if args.save_weights:
        from rducc.weights import numpy_to_torch, weights_writer

        outputs.append((args.save_weights, weights_writer({n: numpy_to_torch(v) for n, v in weights.items()})))
    return outputs
