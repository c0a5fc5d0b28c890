"""`rducc deploy a.pt2 b.pt2 ... --target sn40l-8 -o DIR` (also `rducc-deploy`):
several models compiled for one system, with an HBM residency plan.

DIR gets NAME.mlir and NAME.safetensors per model and manifest.json
(docs/deployment.md). The directory is built beside DIR and renamed into
place, so a failed deploy leaves DIR as it was; a DIR that is not empty is
refused unless --force. Bad input is one `rducc deploy: error:` line, exit 1.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from rducc import __version__
from rducc.tools.options import ArgumentParser, add_opt_level_flag, add_target_flag

TOOL = "rducc deploy"


def build_parser() -> argparse.ArgumentParser:
    parser = ArgumentParser(
        prog=TOOL,
        description="Compile several torch.export programs for one system: each model's program and "
        "weights, their weights in DDR, an HBM residency plan and a manifest (docs/deployment.md).",
    )
    parser.add_argument("models", nargs="*", metavar="[NAME=]MODEL.pt2",
                        help="the models; NAME defaults to the file's stem")
    parser.add_argument("-o", "--output", metavar="DIR", help="the deployment directory to write (required)")
    add_target_flag(parser, "sn40l-8")
    add_opt_level_flag(parser, default=2)
    parser.add_argument("--router", action="append", default=[], metavar="NAME",
                        help="this model's output picks the expert (repeatable); routers are resident first")
    parser.add_argument("--hbm-reserve", default=None, metavar="FRACTION|BYTES",
                        help="HBM kept free for activations and KV caches: a fraction of the system's HBM "
                        "(default 0.25) or bytes (16000000000, 16GB, 16GiB)")
    parser.add_argument("--shapes", nargs="+", default=[], metavar="[MODEL:]NAME=SIZES",
                        help="a model exported with dynamic_shapes: the sizes of its dynamic dims to compile, one "
                        "program (bucket) per combination, in one program file sharing one weights file "
                        "(classifier:batch=1,8 classifier:seq=128,512; MODEL may be left out with one model)")
    parser.add_argument("--pad-dims", nargs="+", default=[], metavar="[MODEL:]NAME",
                        help="dynamic dims of a --shapes model you vouch may be padded up to a larger bucket "
                        "(a sequence an attention mask covers), besides those rducc finds safe (docs/shapes.md)")
    parser.add_argument("--force", action="store_true", help="replace an -o directory that is not empty")
    parser.add_argument("-q", "--quiet", action="store_true", help="no line saying what was written where")
    parser.add_argument("--debug", action="store_true", help="show Python tracebacks for every error")
    parser.add_argument("--version", action="version", version=f"rducc {__version__}")
    return parser


def _run(args: argparse.Namespace) -> None:
    from rducc.deploy.deployment import DeployOptions, deploy
    from rducc.deploy.manifest import DEFAULT_HBM_RESERVE
    from rducc.errors import RduccError

    if not args.output:
        raise RduccError("no output directory given (usage: rducc deploy a.pt2 b.pt2 ... -o DIR)")
    reserve = args.hbm_reserve if args.hbm_reserve is not None else str(DEFAULT_HBM_RESERVE)
    options = DeployOptions(args.target, args.opt_level, reserve, args.router, args.force,
                            *_shape_flags(args))
    deployment = deploy(args.models, args.output, options)
    print(summary(deployment))


def _shape_flags(args: argparse.Namespace) -> tuple[dict[str, dict[str, list[int]]], dict[str, list[str]]]:
    """--shapes and --pad-dims by model."""
    from rducc.deploy.deployment import model_sources, per_model_flags
    from rducc.frontend.dynamic_dims import parse_shapes_flags

    if not args.shapes and not args.pad_dims:
        return {}, {}
    names = [name for name, _ in model_sources(args.models)]
    shapes = {model: parse_shapes_flags(items) for model, items in per_model_flags("--shapes", args.shapes,
                                                                                   names).items()}
    return shapes, per_model_flags("--pad-dims", args.pad_dims, names)


def summary(deployment) -> str:
    """One line per model: weights, resident or on demand, shared code, modeled time."""
    lines = [f"rducc deploy: {len(deployment.models)} models for {deployment.target} in {deployment.directory}; "
             f"HBM budget for weights {deployment.hbm_weight_budget_bytes:,} of {deployment.hbm_bytes:,} bytes"]
    for model in deployment.models:
        where = "resident" if model.resident else "on demand"
        shared = f", code of {model.shares_code_with}" if model.shares_code_with else ""
        router = ", router" if model.router else ""
        buckets = f", {len(model.buckets)} shape buckets" if model.buckets else ""
        lines.append(f"  {model.name:<20} {model.weight_bytes:>16,} B  {where:<9}  "
                     f"{model.modeled.forward_s * 1e3:10.4f} ms{shared}{router}{buckets}")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of `rducc deploy` / `rducc-deploy`; returns the exit status."""
    from rducc.tools.cli import run_tool

    args = build_parser().parse_args(argv)
    return run_tool(TOOL, lambda: _run(args), args.debug, args.quiet)


if __name__ == "__main__":
    sys.exit(main())
