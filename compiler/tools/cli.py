"""`rducc model.pt2 -o out.mlir`: compile a saved torch.export program.

Errors in the input print one `rducc: error: ...` message and exit 1; the
output file is written atomically, so a failed run leaves no file behind and
never clobbers an existing one.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import traceback
import warnings
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from rducc import __version__
from rducc.dialects.contracts import Level, is_placed, set_weights_file
from rducc.errors import RduccError, RduccWarning
from rducc.files import (
    Writer,
    check_directory_output,
    check_distinct,
    check_writable,
    file_session,
    is_stream,
    json_text,
    text_writer,
    write_together,
    written_summary,
)
from rducc.targets import DEFAULT_TARGET
from rducc.tools.entry import (
    EXIT_INTERNAL,
    EXIT_OK,
    EXIT_USER_ERROR,
    broken_pipe,
    drop_stdout,
    interrupted,
)
from rducc.tools.options import ArgumentParser, add_opt_level_flag, add_pass_flags, add_target_flag

if TYPE_CHECKING:
    from rducc.training.scaling import DynamicScale


def build_parser() -> argparse.ArgumentParser:
    parser = ArgumentParser(
        prog="rducc",
        description=(
            "Compile a saved torch.export program (model.pt2) for an SN40L-class "
            "reconfigurable dataflow accelerator and write the program as MLIR text."
        ),
        epilog=(
            "Exit status: 0 on success; 1 for a problem with the input (one 'rducc: error:' "
            "line, no output file written); 2 for a command line it cannot parse; 70 for a bug in "
            "rducc; 130 when interrupted. Run a placed program with "
            "rducc-run; inspect or transform MLIR with rducc-opt; compile several models into one "
            "deployment with 'rducc deploy a.pt2 b.pt2 ... -o DIR' (rducc deploy --help); generate text "
            "with 'rducc generate CHECKPOINT_DIR --prompt TEXT' (rducc generate --help)."
        ),
    )
    parser.add_argument("input", nargs="?", help="torch.export archive (torch.export.save)")
    parser.add_argument(
        "-o", "--output", default="-", metavar="FILE",
        help="where to write the MLIR ('-' for stdout, the default)",
    )
    parser.add_argument(
        "--emit", choices=[level.value for level in Level], default=None,
        help=(
            "IR level to stop at: graph (the imported dataflow graph), kernels (fused), "
            "memory (tiled, tiers placed, explicit DMA) or placed (SRAM allocated; the default)"
        ),
    )
    add_opt_level_flag(parser, default=None)
    add_target_flag(parser, DEFAULT_TARGET)
    parser.add_argument(
        "--tp", type=int, default=None, metavar="N",
        help="multi-socket target: tensor-parallel sockets a group, passed to rdu-partition "
        "(default: the cost model picks tp and pp; with only --tp, pp is 1)",
    )
    parser.add_argument(
        "--pp", type=int, default=None, metavar="M",
        help="multi-socket target: pipeline stages, passed to rdu-partition (with only --pp, tp is 1); "
        "tp x pp must not exceed the target's sockets",
    )
    parser.add_argument(
        "--dp", type=int, default=None, metavar="D",
        help="multi-socket target, training step: data-parallel replicas, each on its share of the batch "
        "(default: the cost model picks dp, tp and pp); with --tp, each replica is a tensor-parallel group "
        "(dp x tp x pp must not exceed the sockets)",
    )
    parser.add_argument(
        "--zero", nargs="?", const=1, default=0, type=int, metavar="STAGE",
        help="with --train and --dp: ZeRO stage 1 (--zero alone: each data-parallel replica holds and updates "
        "1/dp of the optimizer state, gradients all-reduced, updated parameters all-gathered), --zero 2 "
        "(the gradients sharded too: reduce-scattered as the backward makes them) or --zero 3 (the parameters "
        "too: all-gathered before the forward's and the backward's use)",
    )
    parser.add_argument(
        "--sequence-parallel", action="store_true",
        help="with --tp N: sequence parallelism (Megatron's), the norms, residual adds and dropout between the "
        "tensor-parallel regions split along the tokens (each all-reduce a reduce-scatter, the next region's "
        "input an all-gather)",
    )
    parser.add_argument(
        "--ep", type=int, default=None, metavar="N",
        help="multi-socket target, a model with routed experts (a mixture of experts): split the experts "
        "over the N sockets of a tensor-parallel group, tokens' rows exchanged by all-to-all (tp = N; "
        "default: the cost model decides; --ep 1: never)",
    )
    parser.add_argument(
        "--pass-pipeline", metavar="PIPELINE",
        help="run this pipeline instead of the -O one, in xDSL's syntax "
        "('rdu-canonicalize,cse,my-pass{k=2},rdu-fuse{level=1},...'); --print-pipeline shows the -O one",
    )
    add_pass_flags(parser, "--pass-pipeline")
    parser.add_argument(
        "--verify-each", action="store_true",
        help="verify the IR after every pass; a pass that breaks it is named in the error",
    )
    parser.add_argument(
        "--print-pipeline",
        action="store_true",
        help="print the pipeline -O/--emit (and --target: rdu-partition for several sockets) would run,"
        " as --pass-pipeline text, and exit",
    )
    parser.add_argument(
        "--weights", metavar="FILE",
        help="where to write the weights (safetensors); default: beside the output, "
        "OUT.safetensors (none for '-o -' unless given, none for a meta-device model)",
    )
    parser.add_argument(
        "--timings", action="store_true", help="print the time of each stage to stderr"
    )
    parser.add_argument(
        "--report", action="store_true",
        help="after the compile, print what rducc did: tensor placement, SRAM/HBM/DDR use, "
        "and per kernel its fused ops, FLOPs, bytes, bound and modeled time (to stderr with -o -)",
    )
    parser.add_argument("--report-json", metavar="FILE", help="write that report as JSON, for tools")
    parser.add_argument(
        "--shapes", nargs="+", metavar="NAME=SIZES", default=None,
        help="a model exported with dynamic_shapes: compile one program per combination of these sizes "
        "of its dynamic dims (batch=1,4 seq=128,512: four programs) into one output sharing one weights "
        "file; rducc-run and rducc.Program run the one matching the inputs (docs/shapes.md); with --train "
        "one training step per combination, all sharing one state (docs/training.md)",
    )
    parser.add_argument(
        "--pad-dims", nargs="+", metavar="NAME", default=None,
        help="with --shapes: dynamic dims you vouch may be padded at the end (a sequence an attention "
        "mask covers), besides those rducc finds safe to pad itself (rows that never meet): inputs "
        "smaller than a bucket run the smallest bucket that covers them, padded with zeros, outputs cut "
        "back (docs/shapes.md)",
    )
    parser.add_argument(
        "--f64", choices=["emulate", "refuse", "demote"], default="emulate",
        help="float64 tensors, which the chip cannot compute: emulate (the default; the runtime "
        "computes them exactly, the report marks them), refuse (an error) or demote (computed "
        "in float32, the report says so)",
    )
    parser.add_argument(
        "--import-module", metavar="NAME", action="append", default=[],
        help="import the Python module NAME before loading the model: the library that registers "
        "a custom operator (torch.library.custom_op) the model calls (one whose implementation does "
        "not trace runs on the host: rducc-run needs the same flag); repeat for several",
    )
    parser.add_argument(
        "--capacity", metavar="ROWS", type=int,
        help="compile each data-dependent per-expert count (mixture-of-experts routing: torch.where, "
        "split by counts) for at most ROWS rows, each expert's rows padded to it; a count above it "
        "is a run-time error (default: the bound torch.export recorded, every token to one expert)",
    )
    parser.add_argument(
        "--no-host-ops", action="store_true",
        help="refuse operators the chip has no lowering for, instead of running them on the host "
        "CPU (rdu.host_call: torch's CPU kernel, operands and results over the host link)",
    )
    parser.add_argument(
        "--plot", metavar="DIR",
        help="write pictures to DIR: the SRAM allocation map, per-kernel modeled times, and the "
        "kernel graph (dot, and SVG when Graphviz is installed), each kernel's mapping on the fabric; "
        "needs matplotlib (rducc[plot])",
    )
    parser.add_argument("--plot-kernel", metavar="NAME",
                        help="with --plot: draw only this kernel's mapping on the fabric (k3, or layer.k0)")
    parser.add_argument(
        "-q", "--quiet", action="store_true",
        help="no progress display, even on a terminal, and no line saying what was written where"
    )
    parser.add_argument(
        "--list-ops", action="store_true", help="list the ATen operators rducc imports and exit"
    )
    parser.add_argument(
        "--debug", action="store_true", help="show Python tracebacks for every error"
    )
    _training_arguments(parser)
    parser.add_argument("--version", action="version", version=f"rducc {__version__}")
    return parser


OPTIMIZER_FLAGS = {"lr": float, "momentum": float, "dampening": float, "weight_decay": float, "eps": float}
"""`--lr 1e-4` ... : the optimizer's options, as torch.optim names them."""
OPTIMIZER_SWITCHES = ("nesterov", "amsgrad", "maximize")


def _training_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("training (docs/training.md)")
    group.add_argument("--train", action="store_true",
                       help="compile a training step: the model's forward returns the loss; the step runs "
                       "forward, backward and the optimizer, updating parameters and optimizer state in place")
    group.add_argument("--optimizer", default=None, metavar="NAME",
                       help="with --train: sgd, adam or adamw (default), or none (the step returns the loss "
                       "and the gradients)")
    for name, kind in OPTIMIZER_FLAGS.items():
        group.add_argument(f"--{name.replace('_', '-')}", dest=f"opt_{name}", type=kind, default=None,
                           metavar="X", help=f"with --train: the optimizer's {name} (torch.optim's default)")
    group.add_argument("--betas", dest="opt_betas", default=None, metavar="B1,B2",
                       help="with --train: Adam's betas (0.9,0.999)")
    for name in OPTIMIZER_SWITCHES:
        group.add_argument(f"--{name}", dest=f"opt_{name}", action="store_true", default=None,
                           help=f"with --train: the optimizer's {name}=True")
    group.add_argument("--mixed-precision", metavar="DTYPE", default=None,
                       help="with --train: compute forward and backward under autocast to bf16, with float32 "
                       "master weights and optimizer (compile_training's mixed_precision)")
    group.add_argument("--loss-scale", metavar="X|dynamic", default=None,
                       help="with --train: multiply the loss by X before the backward and unscale the gradients "
                       "(static), or 'dynamic': as torch.amp.GradScaler, skip a step whose gradients overflow and "
                       "halve the scale, grow it after --growth-interval good steps")
    group.add_argument("--init-scale", type=float, default=None, metavar="X",
                       help="with --loss-scale dynamic: the first scale (GradScaler's 65536)")
    group.add_argument("--growth-interval", type=int, default=None, metavar="N",
                       help="with --loss-scale dynamic: good steps before the scale doubles (GradScaler's 2000)")
    group.add_argument("--microbatches", type=int, default=None, metavar="K",
                       help="with --train: split each batch into K microbatches and accumulate their gradients "
                       "before one optimizer update (gradient accumulation)")
    group.add_argument("--max-grad-norm", type=float, default=None, metavar="X",
                       help="with --train: clip the gradients' total norm to X before the update "
                       "(torch.nn.utils.clip_grad_norm_)")


TRAINING_FLAGS = ("mixed_precision", "loss_scale", "init_scale", "growth_interval", "microbatches", "max_grad_norm")
"""Training flags that are not the optimizer's options."""


def _optimizer_options(args: argparse.Namespace) -> dict:
    """The optimizer options given on the command line (torch.optim's names)."""
    options = {key.removeprefix("opt_"): value for key, value in vars(args).items()
               if key.startswith("opt_") and key != "opt_level" and value is not None}  # -O is opt_level
    if "betas" in options:
        try:
            first, second = (float(v) for v in options["betas"].split(","))
        except ValueError:
            raise RduccError(f"--betas {options['betas']}: give two numbers, as --betas 0.9,0.999") from None
        options["betas"] = (first, second)
    if (options or args.optimizer is not None) and not args.train:
        flag = "--optimizer" if args.optimizer is not None else f"--{next(iter(options)).replace('_', '-')}"
        raise RduccError(f"{flag} needs --train (it sets the optimizer of a training step)")
    given = [name for name in TRAINING_FLAGS if getattr(args, name) is not None]
    if given and not args.train:
        raise RduccError(f"--{given[0].replace('_', '-')} needs --train (it sets how a training step computes)")
    _loss_scale(args)
    return options


def _loss_scale(args: argparse.Namespace) -> float | DynamicScale:
    """--loss-scale: a positive number, 'dynamic' (with --init-scale and
    --growth-interval: a torch.amp.GradScaler's settings), or 1.0 when not given."""
    dynamic_flags = [f for f in ("init_scale", "growth_interval") if getattr(args, f) is not None]
    if args.loss_scale != "dynamic" and dynamic_flags:
        raise RduccError(f"--{dynamic_flags[0].replace('_', '-')} needs --loss-scale dynamic")
    if args.loss_scale is None:
        return 1.0
    if args.loss_scale == "dynamic":
        from rducc.training.scaling import DynamicScale

        defaults = DynamicScale()
        return DynamicScale(args.init_scale if args.init_scale is not None else defaults.init_scale,
                            growth_interval=args.growth_interval if args.growth_interval is not None
                            else defaults.growth_interval).check()
    try:
        value = float(args.loss_scale)
    except ValueError:
        raise RduccError(f"--loss-scale {args.loss_scale}: give a positive number or 'dynamic'") from None
    if not 0 < value < float("inf"):
        raise RduccError(f"--loss-scale {args.loss_scale}: give a positive finite number or 'dynamic'")
    return value


def _compile_training(args: argparse.Namespace, options):
    """`--train`: the training step of the model (rducc.training)."""
    from rducc.frontend.loader import load_exported_program
    from rducc.training.clipping import check_clip
    from rducc.training.compile import compile_step, single_group
    from rducc.training.optimizers import named_optimizer
    from rducc.training.program import MIXED_PRECISION, export_for_training
    from rducc.training.scaling import DynamicScale

    settings = _optimizer_options(args)
    name = args.optimizer or "adamw"
    scale = _loss_scale(args)
    dynamic = scale if isinstance(scale, DynamicScale) else None
    static = scale if isinstance(scale, float) else 1.0
    check_clip(args.max_grad_norm, 2.0)
    clip = None if args.max_grad_norm is None else (args.max_grad_norm, 2.0)
    if args.mixed_precision is not None and args.mixed_precision not in MIXED_PRECISION:
        raise RduccError(f"--mixed-precision {args.mixed_precision} is not supported; rducc compiles "
                         f"{', '.join(MIXED_PRECISION)} (autocast with float32 master weights)")
    if name.lower() == "none":
        if settings:
            raise RduccError("--optimizer none takes no optimizer options")
        if dynamic is not None:
            raise RduccError("--loss-scale dynamic needs an optimizer (it skips the update on an overflow)")
    microbatches = args.microbatches or 1

    def groups(program):
        return None if name.lower() == "none" else single_group(named_optimizer(name, settings), program)

    with options.times.stage("load"):
        program = load_exported_program(args.input)
    if args.shapes is not None:  # one step per bucket, sharing one state (rducc.training.buckets)
        from rducc.frontend.dynamic_dims import parse_shapes_flags
        from rducc.training.buckets import compile_step_buckets
        from rducc.training.program import bucket_exporter

        return compile_step_buckets(program, parse_shapes_flags(args.shapes),
                                    bucket_exporter(program, None, args.mixed_precision, static, dynamic, microbatches),
                                    lambda ep, _: groups(ep), options, static, dynamic, clip, microbatches)
    with options.times.stage("load"):
        program = export_for_training(program, None, None, args.mixed_precision, static, dynamic, microbatches)[0]
    return compile_step(program, groups(program), options, static, dynamic, clip, microbatches)


def _weights_path(args: argparse.Namespace, has_weights: bool) -> Path | None:
    if args.weights:
        return Path(args.weights)
    if is_stream(args.output) or not has_weights:
        return None  # no OUT.safetensors beside stdout, /dev/null or a FIFO
    return _default_sidecar(args.output)


def _relative_to(weights: Path, output: str) -> str:
    """The sidecar's name as the MLIR file will find it (relative when beside it)."""
    if output != "-" and weights.resolve().parent == Path(output).resolve().parent:
        return weights.name
    return str(weights.resolve())


def _write_outputs(output: str, text: str, weights_path: Path | None, weights: dict,
                   described: tuple[list[tuple[str, Writer]], list[str]] = ([], [])) -> None:
    """The weights, the MLIR and what --report-json and --plot describe, as one:
    all written, or none replaced."""
    if output != "-" and not Path(output).resolve().parent.is_dir():
        raise RduccError(f"cannot write {output}: directory {Path(output).parent} does not exist")
    outputs = [(output, text_writer(text))]
    if weights_path is not None:
        from rducc.weights import weights_writer  # here: ml_dtypes takes seconds to import

        outputs.insert(0, (str(weights_path), weights_writer(weights)))
    extra, directories = described
    write_together(outputs + extra, directories)


def _check_outputs(args: argparse.Namespace) -> None:
    """Every output writable, no two the same file, none the input model."""
    for output in (args.output, args.weights, args.report_json):
        if output is not None:
            check_writable(output)
    default_weights = None if args.weights or is_stream(args.output) else str(_default_sidecar(args.output))
    check_distinct(
        [("-o", args.output), ("--weights", args.weights), ("the weights file", default_weights),
         ("--report-json", args.report_json)],
        [("the input model", args.input)],
    )


def _default_sidecar(output: str) -> Path:
    from rducc.weights import sidecar_path  # here: ml_dtypes takes seconds to import

    return sidecar_path(output)


class Progress:
    """Stage-by-stage progress on a terminal, once a compile has taken a while."""

    def __init__(self, enabled: bool, after_s: float | None = None):
        self.enabled = enabled
        self.after_s = float(os.environ.get("RDUCC_PROGRESS_AFTER", "2.0")) if after_s is None else after_s
        self.shown = False

    def show(self, stage: str, elapsed: float) -> None:
        if self.enabled and elapsed >= self.after_s:
            sys.stderr.write(f"\r\x1b[2Krducc: [{elapsed:6.1f} s] {stage} ...")
            sys.stderr.flush()
            self.shown = True

    def done(self) -> None:
        if self.shown:
            sys.stderr.write("\r\x1b[2K")
            sys.stderr.flush()


def _describe(module, target, args: argparse.Namespace) -> tuple[list[tuple[str, Writer]], list[str], str]:
    """--report-json and --plot's files (written with the MLIR) and --report's text,
    from the placed program."""
    from rducc.model.cost_model import estimate
    from rducc.shapes import is_bucketed
    from rducc.tools.report import compile_report, report_dict

    if is_bucketed(module):
        return _describe_buckets(module, target, args)
    report = estimate(module, target)
    outputs: list[tuple[str, Writer]] = []
    if args.report_json:
        outputs.append((args.report_json, text_writer(json_text(report_dict(module, report), "--report-json"))))
    if args.plot:
        from rducc.tools.plots import plot_outputs

        outputs += plot_outputs(module, report, Path(args.plot), args.plot_kernel)
    text = compile_report(module, report) if args.report else ""
    return outputs, [args.plot] if args.plot else [], text


def _describe_buckets(module, target, args: argparse.Namespace) -> tuple[list[tuple[str, Writer]], list[str], str]:
    """--report and --report-json of a multi-shape compile: each bucket's report."""
    from rducc.frontend.dynamic_dims import bucket_label
    from rducc.model.cost_model import estimate
    from rducc.shapes import bucket_modules, bucket_name
    from rducc.tools.report import compile_report, report_dict

    rows, texts = [], []
    for values, inner in bucket_modules(module):
        report = estimate(inner, target)
        rows.append({"bucket": values, "function": bucket_name(values), **report_dict(inner, report)})
        if args.report:
            heading = f"== bucket {bucket_label(values)} (@{bucket_name(values)}) =="
            texts.append(f"{heading}\n{compile_report(inner, report)}")
    outputs: list[tuple[str, Writer]] = []
    if args.report_json:
        outputs.append((args.report_json, text_writer(json_text({"buckets": rows}, "--report-json"))))
    return outputs, [], "\n".join(texts)


def _compile_shapes(args: argparse.Namespace, options):
    """`--shapes`: one program per combination of sizes, in one module (rducc.shapes)."""
    from rducc.frontend.dynamic_dims import parse_shapes_flags
    from rducc.shapes import compile_buckets

    return compile_buckets(args.input, parse_shapes_flags(args.shapes), options, args.pad_dims or ())


def _check_shapes_flags(args: argparse.Namespace) -> None:
    """--shapes with what it cannot be combined with, before anything is compiled."""
    if args.shapes is None:
        if args.pad_dims is not None:
            raise RduccError("--pad-dims pads an input up to a larger shape bucket: it needs --shapes")
        return
    if args.train and args.pad_dims is not None:
        raise RduccError("--pad-dims with --train: a training step runs the bucket of each batch's exact shapes "
                         "(padding a batch would change its loss and gradients); compile every size you train "
                         "with in --shapes")
    if args.plot:
        raise RduccError("--plot draws one program; with --shapes, cost each bucket with --report or "
                         "--report-json (or rducc-run --simulate)")


def _chosen_passes(args: argparse.Namespace) -> list | None:
    """The --pass-pipeline passes (plugins loaded first), or None for the -O pipeline."""
    from rducc.driver import resolve_passes

    if args.pass_pipeline is not None and (args.opt_level is not None or args.emit is not None):
        resolve_passes(None, plugin_files=args.plugins or [])  # a bad plugin is reported first
        raise RduccError("--pass-pipeline replaces the -O pipeline: drop -O and --emit")
    return resolve_passes(args.pass_pipeline, plugin_files=args.plugins or [])


def _info(args: argparse.Namespace) -> bool:
    """--list-ops, --list-passes, --print-pipeline: print and say so."""
    if args.list_ops:
        from rducc.frontend.importer import supported_ops

        print("\n".join(supported_ops()))
    elif args.list_passes:
        from rducc.tools.pass_info import list_passes, pass_groups

        print(list_passes(pass_groups(args.plugins)), end="")
    elif args.print_pipeline:
        from rducc.pipeline import pipeline_text
        from rducc.targets import load_target

        target = load_target(args.target)
        text = pipeline_text(_opt_level(args), args.emit or "placed", target.sockets, _split(args, target))
        print(text)
    else:
        return False
    return True


def _split(args: argparse.Namespace, target) -> tuple[int, int, int, int, int, int]:
    """(tp, pp, dp, ep, zero, sequence_parallel) of --tp/--pp/--dp/--ep/--zero/--sequence-parallel,
    0 for one not given; checked against the target."""
    flags = (("tp", args.tp), ("pp", args.pp), ("dp", args.dp), ("ep", args.ep))
    zero = int(getattr(args, "zero", 0) or 0)
    if zero not in (0, 1, 2, 3):
        raise RduccError(f"--zero {zero}: the ZeRO stage is 1 (optimizer state sharded), 2 (and gradients) "
                         "or 3 (and parameters)")
    sequence = int(getattr(args, "sequence_parallel", False))
    if sequence and (args.tp or 0) < 2:
        raise RduccError("--sequence-parallel splits the activations between the tensor-parallel regions: "
                         "give --tp 2 or more")
    if zero and (args.dp or 0) < 2:
        raise RduccError("--zero shards the optimizer state over the data-parallel replicas: give --dp 2 or more")
    if zero and not args.train:
        raise RduccError("--zero shards a training step's optimizer state: it needs --train")
    if all(n is None for _, n in flags):
        return 0, 0, 0, 0, 0, 0
    given = " ".join(f"--{name} {n}" for name, n in flags if n is not None)
    if any(n is not None and n < 1 for _, n in flags):
        raise RduccError(f"{given}: tp, pp, dp and ep must be >= 1")
    if target.sockets == 1:
        raise RduccError(f"{given} splits the model across sockets, but target {target.name} has one "
                         "(use --target sn40l-8 or sn40l-16)")
    if args.pass_pipeline is not None:
        raise RduccError(f"{given} sets the -O pipeline's rdu-partition; with --pass-pipeline write "
                         "rdu-partition{tp=N pp=M dp=D ep=E} in it")
    tp, pp, dp, ep = args.tp or 0, args.pp or 0, args.dp or 0, args.ep or 0
    if dp > 1 and ep > 1:
        raise RduccError(f"{given}: the experts are split over one tensor-parallel group's sockets, "
                         "without data-parallel replicas: drop --dp or --ep")
    if ep > 1 and tp and tp != ep:
        raise RduccError(f"{given}: the experts are split over the sockets of a tensor-parallel group: "
                         "--ep must equal --tp")
    if max(tp, ep, 1) * max(pp, 1) * max(dp, 1) > target.sockets:
        raise RduccError(f"{given} needs {max(tp, ep, 1) * max(pp, 1) * max(dp, 1)} sockets; target "
                         f"{target.name} has {target.sockets}")
    return tp, pp, dp, ep, zero, sequence


def _opt_level(args: argparse.Namespace) -> int:
    return 2 if args.opt_level is None else args.opt_level


def _check_level_for_report(module, args: argparse.Namespace) -> None:
    if not (args.report or args.report_json or args.plot):
        return
    if not is_placed(module):
        raise RduccError("--report, --report-json and --plot need the placed program (drop --emit)")


def _check_output_names(args: argparse.Namespace) -> None:
    """Before compiling: names the MLIR text can hold, and a --plot folder that can be one."""
    for flag, name in (("-o", args.output), ("--weights", args.weights)):
        if name is None:
            continue
        try:
            name.encode("utf-8")
        except UnicodeEncodeError:
            shown = os.fsencode(name).decode("utf-8", "backslashreplace")
            raise RduccError(
                f"{flag} {shown}: the name is not valid UTF-8; the MLIR (UTF-8 text) names its "
                "weights file: choose a UTF-8 name"
            ) from None
    check_plot_options(args.plot, args.plot_kernel)


def check_plot_options(plot: str | None, kernel: str | None) -> None:
    """--plot names a directory, or one that can be made (it is made only when the
    pictures are written, with the other outputs); --plot-kernel comes with --plot."""
    if plot is not None:
        check_directory_output(plot, "--plot")
    if kernel is not None and plot is None:
        raise RduccError("--plot-kernel needs --plot DIR")


def _run(args: argparse.Namespace) -> None:
    from rducc.frontend.loader import check_archive
    from rducc.targets import check_compilable, load_target

    if _info(args):
        return
    if args.input is None:
        raise RduccError("no input file given (usage: rducc model.pt2 -o out.mlir)")
    target = load_target(args.target)
    check_compilable(target)
    split = _split(args, target)
    if (args.report or args.report_json or args.plot) and args.emit not in (None, "placed"):
        raise RduccError("--report, --report-json and --plot need the placed program (drop --emit)")
    _optimizer_options(args)  # training flags without --train fail before torch loads
    _check_shapes_flags(args)
    passes = _chosen_passes(args)  # bad pipelines and plugins fail before torch loads
    _check_output_names(args)
    _check_outputs(args)
    if args.capacity is not None and args.capacity < 1:
        raise RduccError(f"--capacity must be at least 1 row, not {args.capacity}")
    from rducc.dialects.rdu.custom_op import import_op_modules

    import_op_modules(args.import_module)
    check_archive(args.input)  # before torch is imported: a bad file fails fast
    from rducc.dialects.rdu.host_call import host_ops_warning
    from rducc.driver import CompileOptions, StageTimes, compile_module, module_text

    progress = Progress(enabled=not args.quiet and sys.stderr.isatty())
    times = StageTimes(progress=progress.show)
    options = CompileOptions(
        target, _opt_level(args), args.emit or "placed", passes, split, args.f64, args.verify_each, times,
        host_ops=not args.no_host_ops, capacity=args.capacity,
    )
    try:
        if args.train:
            result = _compile_training(args, options)
        else:
            result = _compile_shapes(args, options) if args.shapes is not None else compile_module(args.input, options)
        module, weights = result.module, result.weights
        _check_level_for_report(module, args)
        weights_path = _weights_path(args, bool(weights))
        if weights_path is not None:
            set_weights_file(module, _relative_to(weights_path, args.output))
        with times.stage("print"):
            text = module_text(module, locations=not args.no_locations)
        extra: list[tuple[str, Writer]] = []
        directories: list[str] = []
        report_text = ""
        if args.report or args.report_json or args.plot:
            extra, directories, report_text = _describe(module, target, args)
        with times.stage("write"):
            _write_outputs(args.output, text, weights_path, weights, (extra, directories))
    finally:
        progress.done()  # clear the progress line, before any error message too
    host_warning = host_ops_warning(module)
    if host_warning is not None:
        print(f"rducc: {host_warning}", file=sys.stderr)
    if weights and args.output == "-" and weights_path is None:
        print("rducc: note: the weights were not written (the MLIR went to standard output); "
              "rducc-run needs them: pass --weights FILE, or -o FILE.mlir", file=sys.stderr)
    if report_text:
        (sys.stderr if args.output == "-" else sys.stdout).write(report_text)
    if args.timings:
        print(times.report(), file=sys.stderr)


def run_tool(tool: str, action: Callable[[], None], debug: bool, quiet: bool = False) -> int:
    """Run a CLI's work: a user error is one `TOOL: error:` line and exit 1, a bug
    a short request for a report and exit 70 (EXIT_INTERNAL); Ctrl-C one line and
    exit 130; a closed stdout (`| head`) a quiet exit 141; tracebacks only with --debug.
    On success, one line on stderr says which files were written (`TOOL: wrote
    out.safetensors and out.mlir`), unless `quiet` (-q) or none was."""
    if not debug:  # torch's and transformers' deprecation notices are not the user's
        warnings.filterwarnings("ignore", category=FutureWarning)
        warnings.filterwarnings("ignore", category=DeprecationWarning)
    try:
        with file_session() as ledger, rducc_warnings_printed(tool):  # no output may be a file the run reads
            action()
        sys.stdout.flush()  # a full disk or a closed pipe is reported here, not at exit
        summary = written_summary(ledger)
        if summary is not None and not quiet:
            print(f"{tool}: {summary}", file=sys.stderr)
    except RduccError as error:
        if debug:
            traceback.print_exc()
        print(f"{tool}: error: {error}", file=sys.stderr)
        return EXIT_USER_ERROR
    except KeyboardInterrupt:
        return interrupted(tool)
    except BrokenPipeError:
        return broken_pipe()
    except RecursionError:  # the input nests deeper than any check before it caught
        if debug:
            traceback.print_exc()
        print(f"{tool}: error: the input nests too deeply for rducc (Python's recursion limit)",
              file=sys.stderr)
        return EXIT_USER_ERROR
    except OSError as error:  # the system refused a read or write (a full disk, ...): not a bug
        if debug:
            traceback.print_exc()
        print(f"{tool}: error: {_os_problem(error)}", file=sys.stderr)
        return EXIT_USER_ERROR
    except Exception as error:  # a bug in rducc: say so, briefly
        if debug:
            traceback.print_exc()
        notes = "".join(f" ({note})" for note in getattr(error, "__notes__", ()))
        print(
            f"{tool}: internal error: {type(error).__name__}: {error}{notes}\n"
            "This is a bug in rducc; please report it with the model and the command "
            "(rerun with --debug for the traceback).",
            file=sys.stderr,
        )
        return EXIT_INTERNAL
    return EXIT_OK


@contextlib.contextmanager
def rducc_warnings_printed(tool: str) -> Iterator[None]:
    """While it lasts, each `RduccWarning` prints as one `TOOL: warning: message` line
    (other warnings as Python prints them)."""
    shown = warnings.showwarning

    def show(message: Warning | str, category: type[Warning], filename: str, lineno: int,
             file: TextIO | None = None, line: str | None = None) -> None:
        if issubclass(category, RduccWarning):
            print(f"{tool}: warning: {message}", file=sys.stderr)
        else:
            shown(message, category, filename, lineno, file, line)

    warnings.showwarning = show
    try:
        yield
    finally:
        warnings.showwarning = shown


def _os_problem(error: OSError) -> str:
    """An OSError that reached the top, as what the system said about which file."""
    reason = error.strerror or str(error)
    if error.filename is not None:
        return f"cannot use {error.filename}: {reason}"
    drop_stdout()  # what is left in its buffer could not be written at exit either
    return f"cannot write to standard output: {reason}"


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of `rducc`; returns the exit status."""
    args = build_parser().parse_args(argv)
    return run_tool("rducc", lambda: _run(args), args.debug, args.quiet)


if __name__ == "__main__":
    sys.exit(main())
