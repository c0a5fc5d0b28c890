"""`rducc-run out.mlir --input a.npy ...`: run a placed program (iree-run-module style).

The program runs in rducc's numpy runtime, reading its weights from the
safetensors sidecar that `rducc` wrote beside it. `--simulate` runs the cost
model on shapes alone (no inputs or weights needed); `--report-json FILE`
writes the report as JSON, as `rducc --report-json` does: the program's cost
report, or a serving simulation's (`--trace`) every request (`--report` is
the same flag's earlier name). `--ranges` adds the headlines as ranges over the
target's assumed figures and the tornado table (compiler/model/ranges.py). Bad input
is one `rducc-run: error:` message, exit 1.
"""

from __future__ import annotations

import argparse
import io
import math
import os
import sys
import threading
import time
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from xdsl.dialects.builtin import DictionaryAttr, IntegerAttr, ModuleOp

from rducc import __version__
from rducc.deploy.serving import DEFAULT_MAX_BATCH, EVICTION_POLICIES
from rducc.dialects.contracts import (
    PARTITION,
    arg_attrs,
    complex_inputs,
    complex_outputs,
    f64_demoted,
    input_label,
    is_placed,
    module_target,
    output_edges,
    partition_of,
    weights_file,
)
from rducc.dialects.unchanged import unchanged
from rducc.errors import RduccError
from rducc.targets import Target
from rducc.tools.cost_table import cost_table
from rducc.tools.options import ArgumentParser
from rducc.weights import load_weights

if TYPE_CHECKING:
    from rducc.files import Writer
    from rducc.runtime.engine import Argument


def build_parser() -> argparse.ArgumentParser:
    parser = ArgumentParser(
        prog="rducc-run",
        description="Run a placed rducc program (rducc model.pt2 -o out.mlir) on .npy inputs.",
    )
    parser.add_argument("program", help="placed MLIR written by rducc, or a deployment directory (rducc deploy)")
    parser.add_argument("--model", metavar="NAME", help="the model of a deployment directory to run")
    parser.add_argument(
        "--input", action="append", default=[], metavar="[LABEL=]FILE.npy",
        help="one input array per @forward argument, in order, or by its label (the model's argument "
             "name: --input mask=m.npy); repeat the flag",
    )
    parser.add_argument("--output", metavar="FILE.npz",
                        help="write the results (output_0, output_1, ...; buffer:NAME, input:LABEL: "
                             "what the model updates in place); '-' for stdout")
    parser.add_argument("--weights", metavar="FILE", help="weights file (default: the one the program names)")
    parser.add_argument("--simulate", action="store_true", help="cost the program from shapes only; no data")
    parser.add_argument("--report-json", "--report", dest="report_json", metavar="FILE.json",
                        help="write the report of what was simulated or run as JSON: the program's cost report, "
                             "or with --trace every request's figures (--report is this flag's earlier name)")
    parser.add_argument("--target", metavar="NAME|FILE", help="cost for this target (default: the program's)")
    parser.add_argument("--import-module", metavar="NAME", action="append", default=[],
                        help="import the Python module NAME, which registers a custom operator the program "
                             "runs on the host (rdu.host_call of #rdu.custom); repeat for several")
    serving = parser.add_argument_group("serving simulation (PROGRAM is a deployment directory; docs/serving.md)")
    serving.add_argument("--trace", metavar="FILE.jsonl", help="with --simulate: serve this request trace")
    serving.add_argument("--eviction", choices=EVICTION_POLICIES, help="HBM eviction (default: the manifest's)")
    serving.add_argument("--max-batch", type=int, default=DEFAULT_MAX_BATCH, metavar="N",
                         help=f"requests batched per model ({DEFAULT_MAX_BATCH})")
    parser.add_argument("--ranges", action="store_true",
                        help="with --simulate/--report-json: each headline as low..high over the target's assumed "
                             "figures, and the tornado table (the figures by the swing they cause)")
    parser.add_argument("--plot", metavar="DIR", help="with --simulate: write the pictures `rducc --plot` "
                        "writes (SRAM map, kernel times, kernel graph, each kernel's mapping on the fabric); "
                        "with --trace: the serving timeline, DIR/timeline.png")
    parser.add_argument("--plot-kernel", metavar="NAME", help="with --plot: draw only this kernel on the fabric")
    training = parser.add_argument_group("training (PROGRAM is a training step: rducc model.pt2 --train; "
                                         "docs/training.md)")
    training.add_argument("--train", action="store_true",
                          help="train: run the step on every batch of --data, printing each step's loss")
    training.add_argument("--data", metavar="FILE.npz",
                          help="the batches: one array per input, named by its label, shape [BATCHES, *input]; "
                          "for a step compiled for several shapes (rducc --train --shapes) also one array per "
                          "input and batch, LABEL.K (K = 0, 1, ...), each at its batch's own shape")
    training.add_argument("--steps", type=int, metavar="N", help="steps to run (default: one per batch; "
                          "batches repeat when N is larger)")
    training.add_argument("--save-weights", metavar="FILE", help="write the trained parameters and optimizer "
                          "state (safetensors; --weights FILE continues from them)")
    training.add_argument("--lr", type=float, metavar="LR",
                          help="the learning rate of every param group for this run (the step reads it as state: "
                          "no compiling again; --save-weights keeps it)")
    training.add_argument("--microbatches", type=int, metavar="K",
                          help="--data holds microbatches: each step takes K in a row (a step compiled with "
                          "rducc --train --microbatches K accumulates their gradients before its one update)")
    parser.add_argument("-q", "--quiet", action="store_true", help="no line saying what was written where")
    parser.add_argument("--debug", action="store_true", help="show Python tracebacks")
    parser.add_argument("--version", action="version", version=f"rducc-run {__version__}")
    return parser


def parse_program(path: Path) -> ModuleOp:
    """Parse and verify a placed program, reporting problems as RduccError."""
    from xdsl.utils.exceptions import DiagnosticException, ParseError

    from rducc.diagnostics import (
        LocatedParser,
        check_mlir_text,
        compact_dense_literals,
        describe_verify_failure,
        format_parse_error,
        parse_guarded,
    )
    from rducc.dialects.program import check_buckets, check_loop_steps
    from rducc.files import read_regular
    from rducc.tools.opt import RduccOptMain

    try:
        text = read_regular(path, "program", MAX_PROGRAM_BYTES).decode()
    except UnicodeDecodeError:
        raise RduccError(f"{path}: not MLIR text (a binary file); rducc-run takes the .mlir rducc wrote") from None
    check_mlir_text(text, str(path))
    text = compact_dense_literals(text)  # long dense literals read by numpy, not xDSL
    context = RduccOptMain(args=[str(path)]).ctx
    try:
        parser = LocatedParser(context, text, str(path))
        module = parse_guarded(parser.parse_module, str(path), text, lambda: parser.pos)
    except ParseError as error:
        raise RduccError(format_parse_error(error)) from None
    try:
        with unchanged():  # verifiers read the IR: a block's SRAM sweep is worked out once
            module.verify()
    except DiagnosticException as error:
        raise RduccError(f"{path}: the program does not verify:\n{describe_verify_failure(module, error)}") from None
    check_loop_steps(module)  # xDSL's verifier accepts a step of 0
    check_buckets(module)  # one bucket per size, each named
    if not is_placed(module):
        raise RduccError(f"{path}: not a placed program (compile it with rducc, which emits one by default)")
    return module


def _labelled(item: str) -> tuple[str | None, str]:
    """An --input as (label, path): `LABEL=FILE` names the input (a file of that very name is a path)."""
    label, sign, path = item.partition("=")
    if not sign or not label or Path(item).exists() or not label.isidentifier():
        return None, item
    return label, path


def _input_labels(module: ModuleOp) -> list[str]:
    """The user inputs' labels, in @forward's order (a bucketed program's first bucket's, without the
    hidden validity inputs that follow them)."""
    from rducc.dialects.program import entry_function
    from rducc.shapes import bucket_ops, is_bucketed
    from rducc.shapes.padding import plan_of

    hidden = 0
    if is_bucketed(module):
        plan = plan_of(module)
        hidden = len(plan.validity_dims()) if plan else 0
        module = bucket_ops(module)[0][1]  # read in place: copying a bucket costs as much as half its parse
    labels = [label for label in map(input_label, arg_attrs(entry_function(module))) if label is not None]
    return labels[: len(labels) - hidden]


def bind_input_files(given: Sequence[tuple[str | None, str]], labels: Sequence[str]) -> list[str]:
    """The --input files in @forward's order: those without a label first, in order, then each
    labelled one at its label's place; an unknown label, an input given twice or one left out
    between given ones is an error naming it."""
    if all(label is None for label, _ in given):
        return [path for _, path in given]
    slots: list[str | None] = [path for label, path in given if label is None]
    positional = len(slots)
    slots += [None] * max(len(labels) - len(slots), 0)
    for label, path in given:
        if label is None:
            continue
        if label not in labels:
            raise RduccError(f"--input {label}={path}: the program has no input labelled '{label}'; its inputs "
                             f"are {', '.join(labels) or 'none'}")
        at = labels.index(label)
        if slots[at] is not None:
            raise RduccError(f"--input {label}={path}: input '{label}' is given twice "
                             f"({'by position and by label' if at < positional else 'by label'})")
        slots[at] = path
    missing = [labels[i] for i, path in enumerate(slots) if path is None]
    if missing:
        raise RduccError(f"--input: no file for input{'s' * (len(missing) > 1)} {', '.join(missing)} "
                         f"(give each by position or as LABEL=FILE.npy)")
    return [path for path in slots if path is not None]


MAX_PROGRAM_BYTES = 1 << 31
"""The largest program text read (weights live in the sidecar, not in the text)."""


def _load_input(path: str, index: int, expected: Argument, f64_demoted: bool, is_complex: bool = False) -> np.ndarray:
    """One .npy array, its header checked against the program's input #`index` and
    the file's size before any data is read (a header may claim 10^12 elements);
    never a pickle. A complex input (`rdu.complex_inputs`) is a complex array, read as its pair."""
    from rducc.files import open_regular
    from rducc.runtime.dtypes import complex_dtype_of, complex_to_pair

    if is_complex:
        wanted = replace(expected, shape=expected.shape[:-1], dtype=complex_dtype_of(expected.dtype))
        return complex_to_pair(_load_input(path, index, wanted, False))

    with open_regular(path, "input") as stream:
        if stream.read(2) == b"PK":
            raise RduccError(f"input {path}: a .npz archive; --input takes one .npy array per argument")
        stream.seek(0)
        try:
            shape, dtype = _npy_header(stream)
        except (OSError, ValueError, SyntaxError) as error:
            raise RduccError(f"input {path}: not a .npy array ({error})") from None
        if dtype.hasobject:
            raise RduccError(f"input {path}: not a .npy array (an object array, a pickle, "
                             "which rducc-run refuses: allow_pickle=False)")
        _check_declared(path, index, expected, shape, dtype, f64_demoted)
        declared = math.prod(shape) * dtype.itemsize
        held = os.fstat(stream.fileno()).st_size - stream.tell()
        if declared != held:
            raise RduccError(f"input {path}: the header declares shape {list(shape)} of {dtype} "
                             f"({declared} bytes) but the file holds {held}")
        stream.seek(0)
        try:
            array = np.load(stream, allow_pickle=False)
        except (OSError, ValueError) as error:
            raise RduccError(f"input {path}: not a .npy array ({error})") from None
    return _as_declared(array, expected.dtype, f64_demoted)


def _check_declared(path: str, index: int, expected: Argument, shape: tuple[int, ...], dtype: np.dtype,
                    f64_demoted: bool) -> None:
    """The shape and dtype a .npy header declares are the program's input's."""
    what = f"input #{index} ('{expected.name}')"
    readable = dtype == expected.dtype or (dtype.kind == "V" and dtype.itemsize == expected.dtype.itemsize) or (
        f64_demoted and dtype == np.float64 and expected.dtype == np.float32)
    if not readable:
        raise RduccError(f"{what} has dtype {dtype.name}, expected {expected.dtype.name} (the header of {path})")
    if tuple(shape) != expected.shape:
        raise RduccError(f"{what} has shape {list(shape)}, expected {list(expected.shape)} "
                         f"(the header of {path}; its data was not read)")


def _npy_header(stream) -> tuple[tuple[int, ...], np.dtype]:
    """The shape and dtype a .npy header declares."""
    version = np.lib.format.read_magic(stream)
    if version == (1, 0):
        shape, _, dtype = np.lib.format.read_array_header_1_0(stream)
    elif version == (2, 0):
        shape, _, dtype = np.lib.format.read_array_header_2_0(stream)
    else:
        raise ValueError(f".npy format version {version} is not supported")
    return shape, dtype


def _as_declared(array: np.ndarray, dtype: np.dtype, f64_demoted: bool) -> np.ndarray:
    """bf16 and float8 arrays come back from .npy files as raw voids: read them as such.
    A program compiled with `--f64 demote` takes its float64 inputs as float32:
    a float64 array for such an input is rounded to float32 (as `rducc.Program` does)."""
    if array.dtype.kind == "V" and array.dtype.itemsize == np.dtype(dtype).itemsize:
        return array.view(dtype)
    if f64_demoted and array.dtype == np.float64 and dtype == np.float32:
        return array.astype(np.float32)
    return array


def _weights_file(module: ModuleOp, program: Path, override: str | None) -> Path | None:
    if override:
        return Path(override)
    named = weights_file(module)
    if named is None:
        return None
    path = Path(named)
    return path if path.is_absolute() else program.parent / path


def _needs_weights(module: ModuleOp) -> bool:
    return any(op.name == "tier.global" and op.initial_value is None for op in module.ops)


def _named_results(module: ModuleOp, results: list[np.ndarray]) -> dict[str, np.ndarray]:
    """The results by name: `output_0`, `output_1`, ... for the user outputs, then
    `buffer:NAME` / `input:LABEL` for the new value of each buffer or input the
    model updates in place (`rdu.result_updates`)."""
    from rducc.dialects.contracts import result_updates
    from rducc.dialects.program import entry_function
    from rducc.runtime.dtypes import pair_to_complex
    from rducc.runtime.output_edges import edge_arrays

    updates = result_updates(entry_function(module)) or [None] * len(results)
    complex_positions, edges = set(complex_outputs(module)), output_edges(module)
    named: dict[str, np.ndarray] = {}
    user = 0
    for index, (update, result) in enumerate(zip(updates, results)):
        if update is None:
            result = pair_to_complex(result) if user in complex_positions else result
            if user in edges:
                named |= edge_arrays(f"output_{index}", result, edges[user])
                user += 1
                continue
            user += 1
        named[f"{update.kind}:{update.name}" if update else f"output_{index}"] = result
    return named


def _npz_writer(results: dict[str, np.ndarray]) -> Writer:
    """The results as a .npz; bf16 and float8 arrays as raw bytes (void, which numpy
    reads back without ml_dtypes: view them as the ml_dtypes type)."""
    from rducc.files import bytes_writer
    from rducc.weights import through_bits

    raw = {name: array.view(np.dtype(f"V{array.dtype.itemsize}")) if through_bits(array.dtype) else array
           for name, array in results.items()}
    buffer = io.BytesIO()
    # numpy's stub types **kwds as if one could be its `allow_pickle: bool`
    np.savez(buffer, **raw)  # type: ignore[arg-type]
    return bytes_writer(buffer.getvalue())  # '-': the .npz on stdout, for a pipe


class Ticker:
    """A long run's progress on stderr: once it has run `after_s` seconds, and only
    on a terminal, a line with the time so far and how to stop it (Ctrl-C: one
    `rducc-run: interrupted` line, exit status 130)."""

    def __init__(self, stream=None, after_s: float | None = None, every_s: float = 1.0):
        self.stream = stream if stream is not None else sys.stderr
        default = float(os.environ.get("RDUCC_PROGRESS_AFTER", "2.0"))
        self.after_s, self.every_s = default if after_s is None else after_s, every_s
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._tick, daemon=True)
        self.shown = False

    def __enter__(self) -> Ticker:
        if self.stream.isatty():
            self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()
        if self.shown:
            self.stream.write("\r\x1b[2K")
            self.stream.flush()

    def _tick(self) -> None:
        start = time.monotonic()
        if self._stop.wait(self.after_s):
            return
        while not self._stop.is_set():
            elapsed = time.monotonic() - start
            self.stream.write(f"\r\x1b[2Krducc-run: running, {elapsed:.0f} s so far (Ctrl-C stops it)")
            self.stream.flush()
            self.shown = True
            self._stop.wait(self.every_s)


def _print_results(results: dict[str, np.ndarray]) -> None:
    """Each result's shape and dtype, then its values; a scalar as one line,
    `result[0]: 3.5 (float32)`."""
    for name, result in results.items():
        label = f"result[{name.removeprefix('output_')}]" if name.startswith("output_") else f"updated {name}"
        if result.ndim == 0:
            print(f"{label}: {np.array2string(result, precision=6)} ({result.dtype})")
            continue
        shape = "x".join(str(d) for d in result.shape)
        print(f"{label}: {shape}x{result.dtype}")
        print(np.array2string(result, threshold=64, precision=6))


def _serve(args: argparse.Namespace) -> None:
    """`rducc-run DIR --simulate --trace FILE`: the serving simulation (rducc.deploy.serving)."""
    from rducc.deploy.serving import simulate_deployment
    from rducc.files import check_writable, declare_outputs, note_input
    from rducc.tools.cli import check_plot_options

    if not args.simulate:
        raise RduccError("--trace needs --simulate (a serving simulation; nothing runs)")
    if args.plot_kernel is not None:
        raise RduccError("--plot-kernel draws a compiled program's kernel; a serving simulation (--trace) has none")
    check_plot_options(args.plot, None)
    timeline = None if args.plot is None else str(Path(args.plot) / "timeline.png")
    if args.report_json is not None:
        check_writable(args.report_json)
    declare_outputs([("--report-json", args.report_json), ("--plot", timeline)])
    note_input(args.trace, "--trace")
    print(simulate_deployment(args.program, args.trace, args.target, args.eviction, args.max_batch,
                              timeline, args.report_json).table())


def _program_path(args: argparse.Namespace) -> Path:
    """The program to run: the file given, or --model NAME's of a deployment directory."""
    if Path(args.program).is_dir():
        from rducc.deploy.deployment import deployed_program

        return deployed_program(args.program, args.model)
    if args.model is not None:
        raise RduccError(f"--model {args.model}: {args.program} is a program, not a deployment directory")
    return Path(args.program)


def _run(args: argparse.Namespace) -> None:
    """Check every output and note every input first; read, cost and run; then
    write every output at once (rducc.files.write_together)."""
    from rducc.files import check_writable, declare_outputs, write_together

    if args.trace:
        return _serve(args)
    _check_training_flags(args)
    for output in (args.output, args.report_json, args.save_weights):
        if output is not None:
            check_writable(output)
    declare_outputs([("--output", args.output), ("--report-json", args.report_json),
                     ("--save-weights", args.save_weights)])
    labelled = [_labelled(item) for item in args.input]
    args.input = [path for _, path in labelled]
    _note_named_inputs(args)
    _check_plot(args)
    if args.ranges and not (args.simulate or args.report_json):
        raise RduccError("--ranges needs --simulate or --report-json (it ranges the cost model's headlines)")
    program_path = _program_path(args)
    module = parse_program(program_path)
    from rducc.dialects.rdu.custom_op import import_op_modules

    import_op_modules(args.import_module)  # a program file never imports code itself
    args.input = bind_input_files(labelled, _input_labels(module))
    weights_path = _weights_file(module, program_path, args.weights)
    _note_program_weights(module, program_path)
    target = module_target(module, args.target or "")
    from rducc.shapes import is_bucketed

    if is_bucketed(module):
        return _run_buckets(args, module, program_path, weights_path, target)
    outputs, directories, printed = _cost_outputs(args, module, target)
    if args.simulate:
        write_together(outputs, directories)
        print(printed)
        return
    if args.train:
        from rducc.tools.train_run import run_training

        outputs += run_training(args, module, program_path, weights_path, _npz_writer)
        write_together(outputs, directories)
        return
    results = _execute(args, module, program_path, weights_path)
    if args.output:
        outputs.append((args.output, _npz_writer(results)))
    write_together(outputs, directories)
    if not args.output:
        _print_results(results)


def _run_buckets(args: argparse.Namespace, module: ModuleOp, program_path: Path, weights_path: Path | None,
                 target: Target) -> None:
    """A program compiled for several shapes (`rducc --shapes`): --simulate and
    --report-json cost every bucket; a run picks the bucket the inputs' shapes match."""
    from rducc.files import json_text, text_writer, write_together
    from rducc.frontend.dynamic_dims import bucket_label
    from rducc.runtime.sockets import placed_runner
    from rducc.shapes import bucket_modules, bucket_name, input_shapes, pick_bucket
    from rducc.shapes.padding import plan_of, validity_inputs

    if args.plot:
        raise RduccError(f"--plot takes a program of one shape; {program_path} holds several (rducc --shapes): "
                         "cost them with --simulate or --report-json")
    buckets = bucket_modules(module)
    outputs: list = []
    if args.simulate or args.report_json:
        rows, printed = [], []
        for values, inner in buckets:
            data, text = _cost_data(args, inner, target)
            rows.append({"bucket": values, "function": bucket_name(values), **data})
            printed.append(f"== bucket {bucket_label(values)} (@{bucket_name(values)}) ==\n{text}")
        if args.report_json:
            outputs.append((args.report_json, text_writer(json_text({"buckets": rows}, "--report-json"))))
        if args.simulate:
            write_together(outputs)
            print("\n\n".join(printed))
            return
    if args.train:  # each batch runs the bucket of its shapes, all on one state
        from rducc.tools.train_run import run_bucketed_training

        outputs += run_bucketed_training(args, buckets, program_path, weights_path, _npz_writer)
        write_together(outputs)
        return
    shapes = [_npy_shape(path) for path in args.input]
    runners = [placed_runner(inner) for _, inner in buckets]  # built once: read for shapes, then run
    declared = [(values, input_shapes(inner, runner)) for (values, inner), runner in zip(buckets, runners)]
    call = pick_bucket(declared, shapes, plan_of(module))
    chosen = buckets[call.index][1]
    exact = [tuple(s) for s in shapes] == [tuple(s) for s in declared[call.index][1]]
    padded = None if exact else declared[call.index][1]
    plan = plan_of(module)
    hidden = validity_inputs(plan, call.real) if plan else []  # masked reductions' validity inputs
    results = _execute(args, chosen, program_path, weights_path, padded, plan.fills if plan else (), hidden,
                       runners[call.index])
    if padded is not None:
        results = _cut_results(chosen, results, plan_of(module), call)
    if args.output:
        outputs.append((args.output, _npz_writer(results)))
    write_together(outputs)
    if not args.output:
        _print_results(results)


def _cut_results(module: ModuleOp, results: dict[str, np.ndarray], plan, call) -> dict[str, np.ndarray]:
    """A padded run's user outputs (`output_N`) cut back to the inputs' real sizes."""
    from rducc.shapes.padding import cut_outputs

    names = [name for name in results if name.startswith("output_")]
    cut = cut_outputs([results[name] for name in names], plan, call)
    return {**results, **dict(zip(names, cut))}


def _npy_shape(path: str) -> tuple[int, ...]:
    """The shape an input `.npy` declares (its header only)."""
    from rducc.files import open_regular

    with open_regular(path, "--input") as stream:
        try:
            return _npy_header(stream)[0]
        except ValueError as error:
            raise RduccError(f"--input {path}: not a .npy file ({error})") from None


def _note_program_weights(module: ModuleOp, program_path: Path) -> None:
    """The weights file and the target file the program names are inputs even when
    they are not read (--simulate, --weights; the target file only for --ranges):
    no output may replace them (the program needs them)."""
    from rducc.files import note_input
    from rducc.targets import BUILTIN_TARGETS, COMPARISON_TARGETS

    named = _weights_file(module, program_path, None)
    if named is not None:
        note_input(named, "the weights file the program names")
    source = module_target(module).source
    if source and source not in BUILTIN_TARGETS + COMPARISON_TARGETS and Path(source).is_file():
        note_input(source, "the target file the program names")


def _note_named_inputs(args: argparse.Namespace) -> None:
    """The inputs named on the command line, before anything is read."""
    from rducc.files import note_input

    named = [("the program", args.program), ("--weights", args.weights), ("--target", args.target),
             ("--data", args.data)]
    for role, path in named + [("--input", path) for path in args.input]:
        if path is not None and (role != "--target" or Path(path).exists()):
            note_input(path, role)


def _cost_outputs(args: argparse.Namespace, module: ModuleOp, target: Target) -> tuple[list, list[str], str]:
    """--report-json's JSON and --plot's pictures (to write), and --simulate's tables
    (to print), from the cost model."""
    if not (args.simulate or args.report_json):
        return [], [], ""
    from rducc.files import json_text, text_writer
    from rducc.model.cost_model import estimate

    data, printed = _cost_data(args, module, target)
    outputs = []
    if args.report_json:
        outputs.append((args.report_json, text_writer(json_text(data, "--report-json"))))
    if args.plot:
        from rducc.tools.plots import plot_outputs

        outputs += plot_outputs(module, estimate(module, target), Path(args.plot), args.plot_kernel)
    return outputs, [args.plot] if args.plot else [], printed


def _cost_data(args: argparse.Namespace, module: ModuleOp, target: Target) -> tuple[dict, str]:
    """--report-json's data and --simulate's tables of one placed program."""
    from rducc.model.cost_model import estimate

    report = estimate(module, target)
    ranges = report.ranges(module, _ranged_target(target)) if args.ranges else None
    training = _training(module, target, report, args.ranges)
    note = sockets_note(module, target) if args.target else None
    if note is not None:
        print(f"rducc-run: warning: {note}", file=sys.stderr)
    data = report.to_dict() | ({"ranges": ranges.to_dict()} if ranges is not None else {})
    if note is not None:
        data["note"] = note
    if training is not None:
        data["training"] = training[0].to_dict() | (
            {"ranges": training[1].to_dict()} if training[1] is not None else {})
    printed = cost_table(report) + (f"\n\n{ranges.table()}" if ranges is not None else "")
    if note is not None:
        printed += f"\nnote              {note}"
    if training is not None:
        printed += f"\n\n{training[0].table()}" + (f"\n\n{training[1].table()}" if training[1] is not None else "")
    return data, printed


def sockets_note(module: ModuleOp, target: Target) -> str | None:
    """Why a program costed on a target with more sockets than it was split for
    gives fewer sockets' figures (newcomer item 7: `--simulate --target sn40l-16`
    of a one-socket program), or None when it uses them all. A placed program's
    split is fixed when it is compiled: the cost model cannot spread it."""
    tp, pp = partition_of(module)
    split = module.attributes.get(PARTITION)
    dp = split.data.get("dp") if isinstance(split, DictionaryAttr) else None
    used = tp * pp * (dp.value.data if isinstance(dp, IntegerAttr) else 1)
    if target.sockets <= used:
        return None
    compiled = module_target(module)
    which = f"{used} socket{'s' if used != 1 else ''}"
    return (f"the program was compiled for {which} ({compiled.name}, tp={tp} pp={pp}); on {target.name} it runs "
            f"on {which} of its {target.sockets}: the figures are those of {which}, not of the whole {target.name}; "
            f"compile it with `rducc --target {target.name}` (and --tp/--pp) to use every socket")


def _training(module: ModuleOp, target: Target, report: Any, ranged: bool) -> tuple[Any, Any] | None:
    """A training step's modeled speed by phase, and its headlines' ranges (compiler/model/training_speed.py)."""
    from rducc.model.training_speed import is_training, training_ranges, training_speed

    if not is_training(module):
        return None
    speed = training_speed(module, target, report)
    ranged_target = _ranged_target(target)
    wanted = ranged and bool(list(ranged_target.ranged()))  # else the cost report's ranges said so already
    return speed, training_ranges(module, ranged_target, speed) if wanted else None


def _execute(args: argparse.Namespace, module: ModuleOp, program_path: Path,
             weights_path: Path | None, padded: Sequence[tuple[int, ...]] | None = None,
             fills: Sequence[str] = (), hidden: Sequence[np.ndarray] = (), runner: Any = None,
             ) -> dict[str, np.ndarray]:
    """Run the program on the --input arrays and its weights: the results by name
    (`padded`: the bucket's input shapes, which the smaller inputs are padded up to, each with its
    `fills` value, zeros when none; `hidden`: the validity inputs that follow the user's; `runner`:
    the module's placed runner when one is already built)."""
    from rducc.runtime.engine import check_input_count
    from rducc.runtime.sockets import declared_arguments, placed_runner

    runner = runner or placed_runner(module)  # every socket's program when partitioned
    declared_inputs, declared_weights = declared_arguments(runner)
    check_input_count(len(args.input) + len(hidden), declared_inputs)
    demoted = f64_demoted(module) > 0
    complex_labels = set(complex_inputs(module))
    if padded is not None:  # read each input at its own shape, then pad it to the bucket's
        declared_inputs = [replace(a, shape=tuple(_npy_shape(p)) + ((2,) if a.name in complex_labels else ()))
                           for p, a in zip(args.input, declared_inputs)]
    inputs = [_load_input(p, i, a, demoted, a.name in complex_labels)
              for i, (p, a) in enumerate(zip(args.input, declared_inputs))] + list(hidden)
    if padded is not None:
        from rducc.shapes.padding import pad_arrays

        inputs = pad_arrays(inputs, padded, fills)
    if weights_path is None and _needs_weights(module):
        raise RduccError(
            f"{program_path}: the program names no weights file (a model built on the meta "
            "device has none: cost it with --simulate); pass --weights FILE"
        )
    # read no more than the program declares, each weight checked against its header first
    wanted = {w.name: (w.shape, w.dtype) for w in declared_weights}
    weights = load_weights(weights_path, wanted) if weights_path is not None else {}
    with Ticker():
        return _named_results(module, runner.run(inputs, weights))


def _ranged_target(target: Target) -> Target:
    """The program's target with the sources and ranges of its file (a program carries
    plain figures: `rdu.target`); as it is when it names no file or already has them."""
    from rducc.targets import load_target, with_ranges_of

    if target.ranges or not target.source:
        return target
    return with_ranges_of(target, load_target(target.source))


def _check_training_flags(args: argparse.Namespace) -> None:
    """--data, --steps, --save-weights, --microbatches and --lr belong to --train."""
    for flag, value in (("--data", args.data), ("--steps", args.steps), ("--save-weights", args.save_weights),
                        ("--microbatches", args.microbatches), ("--lr", args.lr)):
        if value is not None and not args.train:
            raise RduccError(f"{flag} needs --train (it trains with a training step)")


def _check_plot(args: argparse.Namespace) -> None:
    """--plot (and --plot-kernel) only with --simulate, into a directory."""
    from rducc.tools.cli import check_plot_options

    if args.plot is not None and not args.simulate:
        raise RduccError("--plot needs --simulate (the pictures are of the cost model's view)")
    check_plot_options(args.plot, args.plot_kernel)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of `rducc-run`; returns the exit status."""
    from rducc.tools.cli import run_tool

    args = build_parser().parse_args(argv)
    return run_tool("rducc-run", lambda: _run(args), args.debug, args.quiet)


if __name__ == "__main__":
    sys.exit(main())
