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

A step compiled for several shapes (`rducc --train --shapes batch=2,4`) runs,
for each batch, the bucket whose inputs have exactly the batch's shapes; all
buckets read and write one state. Its `batches.npz` holds either every batch
at one shape, as above (`NAME`: [BATCHES, *shape]), or one array per input and
batch, `NAME.K` (K = 0, 1, ...: batch K, at its own shape, no BATCHES dim), so
batches of different shapes come in one file, run in K's order.
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


def _arrays(path: str) -> dict[str, np.ndarray]:
    """Every array of the `.npz` archive `path`, by name."""
    try:
        with np.load(path, allow_pickle=False) as archive:
            return {name: archive[name] for name in archive.files}
    except (OSError, ValueError, zipfile.BadZipFile, EOFError) as error:
        raise RduccError(f"--data {path}: not a .npz archive of arrays ({error})") from None


def _typed(path: str, name: str, array: np.ndarray, argument: Any, what: str) -> np.ndarray:
    """`array` as the input's dtype (bf16 and other dtypes numpy has no name for are
    stored as raw bytes), else an error naming both."""
    if array.dtype.kind == "V" and array.dtype.itemsize == np.dtype(argument.dtype).itemsize:
        array = array.view(argument.dtype)
    if array.dtype != argument.dtype:
        raise RduccError(f"--data {path}: array '{name}' has dtype {array.dtype.name}; "
                         f"{what} is {np.dtype(argument.dtype).name}")
    return array


def load_batches(path: str, declared: Sequence, microbatches: int = 1,
                 arrays: dict[str, np.ndarray] | None = None) -> tuple[list[np.ndarray], int]:
    """The arrays of `path` (or `arrays`, read from it) for the declared inputs, in
    order, and the number of batches they hold; with `microbatches` K, each array
    holds microbatches (1/K of the input's first dimension) and K in a row make one batch."""
    arrays = _arrays(path) if arrays is None else arrays
    found: list[np.ndarray] = []
    counts: dict[str, int] = {}
    for index, argument in enumerate(declared):
        what = f"input #{index} ('{argument.name}')"
        if argument.name not in arrays:
            held = ", ".join(sorted(arrays)) or "nothing"
            raise RduccError(f"--data {path}: no array '{argument.name}' for {what}; the file holds {held}")
        array = _typed(path, argument.name, arrays[argument.name], argument, what)
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


Batch = tuple[int, list[np.ndarray]]
"""One step's inputs and the step (bucket) that runs them, by its index."""


def train(steps_by_bucket: Sequence[tuple[Any, list[Any]]], batches: Sequence[Batch], steps: int,
          weights: dict[str, np.ndarray]) -> list[float]:
    """Run `steps` training steps, step i on batch i mod len(batches) by its bucket's
    (runner, result updates), writing the state back into `weights`; the losses."""
    losses: list[float] = []
    progress = Progress(steps)
    for step in range(steps):
        bucket, inputs = batches[step % len(batches)]
        runner, updates = steps_by_bucket[bucket]
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


def _check_run_flags(args: argparse.Namespace) -> None:
    """--data, --steps, --lr and --microbatches as a training run takes them."""
    if args.data is None:
        raise RduccError("--train needs --data FILE.npz (the batches: one array per input, by its name)")
    if args.input:
        raise RduccError("--train takes its batches from --data FILE.npz, not --input")
    if args.steps is not None and args.steps < 1:
        raise RduccError(f"--steps {args.steps}: the number of steps must be at least 1")
    if args.lr is not None and not 0 <= args.lr < float("inf"):
        raise RduccError(f"--lr {args.lr}: a learning rate is a finite number of at least 0 "
                         "(as torch.optim takes it)")
    if args.microbatches is not None and args.microbatches < 1:
        raise RduccError(f"--microbatches {args.microbatches}: give a whole number of at least 1")


def run_training(args: argparse.Namespace, module: ModuleOp, program_path: Path, weights_path: Path | None,
                 npz_writer: Callable[[dict[str, np.ndarray]], Any]) -> list[tuple[str, Any]]:
    """`rducc-run --train`: check the data against the step and train; the
    outputs asked for (--output, --save-weights), as (path, writer) pairs for
    `rducc.files.write_together`."""
    from rducc.runtime.sockets import declared_arguments, placed_runner

    check_training_step(module, program_path)
    _check_run_flags(args)
    runner = placed_runner(module)
    declared_inputs, declared_weights = declared_arguments(runner)
    arrays, count = load_batches(args.data, declared_inputs, args.microbatches or 1)
    weights = _state(program_path, weights_path, declared_weights, args.lr)
    batches = [(0, [array[i] for array in arrays]) for i in range(count)]
    losses = train([(runner, result_updates(entry_function(module)))], batches, args.steps or count, weights)
    return _training_outputs(args, losses, weights, npz_writer)


def run_bucketed_training(args: argparse.Namespace, buckets: Sequence[tuple[dict[str, int], ModuleOp]],
                          program_path: Path, weights_path: Path | None,
                          npz_writer: Callable[[dict[str, np.ndarray]], Any]) -> list[tuple[str, Any]]:
    """`rducc-run --train` of a step compiled for several shapes: each batch runs the
    bucket of its shapes (every batch checked first), all buckets on one state."""
    from rducc.runtime.sockets import declared_arguments, placed_runner

    for _, module in buckets:
        check_training_step(module, program_path)
    _check_run_flags(args)
    runners = [placed_runner(module) for _, module in buckets]
    declared = [declared_arguments(runner) for runner in runners]
    batches = load_bucketed_batches(args.data, [(values, inputs) for (values, _), (inputs, _) in
                                                zip(buckets, declared)], args.microbatches or 1)
    weights = _state(program_path, weights_path, [w for _, ws in declared for w in ws], args.lr)
    steps_by_bucket = [(runner, result_updates(entry_function(module))) for runner, (_, module) in
                       zip(runners, buckets)]
    losses = train(steps_by_bucket, batches, args.steps or len(batches), weights)
    return _training_outputs(args, losses, weights, npz_writer)


def load_bucketed_batches(path: str, declared: Sequence[tuple[dict[str, int], Sequence[Any]]],
                          microbatches: int = 1) -> list[Batch]:
    """The batches of `path` for a step compiled for several shapes (`declared`: each
    bucket's sizes and inputs), each with the bucket of its shapes: every batch at one
    shape (`NAME`: [BATCHES, *shape]), or one array per input and batch (`NAME.K`)."""
    from rducc.shapes import pick_bucket

    arrays = _arrays(path)
    first = declared[0][1]
    shapes = [(values, [tuple(a.shape) for a in inputs]) for values, inputs in declared]
    if all(argument.name in arrays for argument in first):  # one shape, stacked
        held = [arrays[a.name].shape[1:] for a in first]
        batch = [(s[0] * microbatches, *s[1:]) if s else s for s in held]  # K microbatches make a batch
        try:
            index = pick_bucket(shapes, [tuple(s) for s in batch]).index
        except RduccError as error:
            shown = ", ".join(str(list(s)) for s in batch)
            raise RduccError(f"--data {path}: its batches are {shown}: {error}") from None
        stacked, count = load_batches(path, declared[index][1], microbatches, arrays)
        return [(index, [array[i] for array in stacked]) for i in range(count)]
    if microbatches > 1:
        raise RduccError(f"--microbatches {microbatches}: {path} holds one array per batch (NAME.K); give whole "
                         "batches, or stack batches of one shape as NAME")
    return [_picked(path, k, batch, shapes, first) for k, batch in enumerate(_numbered(path, arrays, first))]


def _numbered(path: str, arrays: dict[str, np.ndarray], declared: Sequence[Any]) -> list[list[np.ndarray]]:
    """Batch K's array of every input (`NAME.K`, K = 0, 1, ...), typed as the input is."""
    numbers: dict[str, list[int]] = {}
    for index, argument in enumerate(declared):
        found = sorted(int(key.rsplit(".", 1)[1]) for key in arrays
                       if key.rsplit(".", 1)[0] == argument.name and key.rsplit(".", 1)[1].isdigit())
        if not found:
            held = ", ".join(sorted(arrays)) or "nothing"
            raise RduccError(f"--data {path}: no array '{argument.name}' (every batch at one shape) or "
                             f"'{argument.name}.0', '{argument.name}.1', ... (one a batch) for input #{index} "
                             f"('{argument.name}'); the file holds {held}")
        numbers[argument.name] = found
    if any(found != list(range(len(found))) for found in numbers.values()) or len(
            {len(found) for found in numbers.values()}) > 1:
        listed = "; ".join(f"'{name}.K' for K = {', '.join(map(str, found))}" for name, found in numbers.items())
        raise RduccError(f"--data {path}: every input needs one array a batch, numbered from 0 with no gap "
                         f"({listed})")
    count = len(next(iter(numbers.values())))
    return [[_typed(path, f"{a.name}.{k}", arrays[f"{a.name}.{k}"], a, f"input #{i} ('{a.name}')")
             for i, a in enumerate(declared)] for k in range(count)]


def _picked(path: str, number: int, batch: list[np.ndarray], shapes: Sequence[tuple[dict[str, int], list[tuple]]],
            declared: Sequence[Any]) -> Batch:
    """Batch `number` with the bucket of its shapes, else one error naming the batch."""
    from rducc.shapes import pick_bucket

    try:
        return pick_bucket(shapes, [a.shape for a in batch]).index, batch
    except RduccError as error:
        named = ", ".join(f"'{a.name}.{number}' {list(array.shape)}" for a, array in zip(declared, batch))
        raise RduccError(f"--data {path}: batch {number} ({named}): {error}") from None


def _state(program_path: Path, weights_path: Path | None, declared: Sequence[Any],
           lr: float | None) -> dict[str, np.ndarray]:
    """The step's state (parameters, buffers, optimizer state) read from its weights
    file, checked against what the step declares; every param group at `lr` when given."""
    from rducc.weights import load_weights

    if weights_path is None:
        raise RduccError(f"{program_path}: the program names no weights file; pass --weights FILE")
    weights = load_weights(weights_path, {w.name: (w.shape, w.dtype) for w in declared})
    if lr is not None:
        set_lr(weights, lr)
    return weights


def _training_outputs(args: argparse.Namespace, losses: list[float], weights: dict[str, np.ndarray],
                      npz_writer: Callable[[dict[str, np.ndarray]], Any]) -> list[tuple[str, Any]]:
    """--output's losses and final state, --save-weights' state: (path, writer) pairs."""
    outputs: list[tuple[str, Any]] = []
    if args.output:
        outputs.append((args.output, npz_writer({"loss": np.array(losses, dtype=np.float32)} |
                                                {f"buffer:{name}": value for name, value in weights.items()})))
    if args.save_weights:
        from rducc.weights import numpy_to_torch, weights_writer

        outputs.append((args.save_weights, weights_writer({n: numpy_to_torch(v) for n, v in weights.items()})))
    return outputs
