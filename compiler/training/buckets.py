"""Training steps per shape bucket: a training model exported with
`dynamic_shapes` (a dynamic batch, a dynamic sequence) compiled once per
combination of sizes (`rducc train.pt2 --train --shapes batch=2,4`,
`compile_training(..., dynamic_shapes=..., shapes=...)`) into ONE module that
shares ONE state: every bucket's step reads and writes the same parameters,
buffers and optimizer state (the same global names, one weights file), so a
step at any bucket updates the weights and moments the next step reads,
whichever bucket that is.

Each bucket is checked against the ranges and guards torch recorded
(`rducc.shapes.planned_buckets`), exported again at its sizes by the caller's
`export_bucket` (from the user's nn.Module, or from the exported program's own
module, as inference specializes a bucket), and compiled by `compile_step`.
The buckets' modules are nested in one module as inference's are
(`rducc.shapes.bundle`), so `rducc-run` and the cost report see one bucket at
a time. A batch runs the bucket whose inputs have exactly its shapes: padding
up to a larger bucket would change the loss and its gradients, so a training
step is never padded.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
from xdsl.dialects.builtin import ModuleOp

from rducc.driver import CompileOptions
from rducc.errors import RduccError
from rducc.frontend.dynamic_dims import bucket_label, concrete_inputs
from rducc.shapes import Bucket, ShapesSpec, bucket_name, bundle, planned_buckets, shared_weights
from rducc.training.compile import ParamGroup, TrainingStep, compile_step
from rducc.training.scaling import DynamicScale

Exported = tuple[torch.export.ExportedProgram, torch.nn.Module | None, bool]
"""A bucket's static program, the nn.Module it was exported from (None: from an
exported program) and whether that module is rducc's `TrainingForward` (names `model.*`)."""

ExportBucket = Callable[[tuple, dict[str, Any]], Exported]
"""Exports the training forward at one bucket's inputs (args, kwargs; zeros of its sizes)."""

GroupsOf = Callable[[torch.export.ExportedProgram, torch.nn.Module | None], list[ParamGroup] | None]
"""The optimizer's param groups over a bucket's program (None: no optimizer)."""


@dataclass
class StepBuckets:
    """Every bucket's training step, the one module holding them and their one shared state."""

    module: ModuleOp
    buckets: list[Bucket[TrainingStep]]
    weights: dict[str, torch.Tensor]
    """Parameters, buffers and optimizer state by global name, once: every bucket reads and writes them."""
    forward: torch.nn.Module | None
    """The nn.Module the buckets were exported from (a torch.optim optimizer's parameters are named by it)."""
    wrapped: bool
    """Whether it is `TrainingForward` (the model's names are `model.*` in the program)."""


def compile_step_buckets(
    source: torch.export.ExportedProgram, shapes: ShapesSpec, export_bucket: ExportBucket, groups_of: GroupsOf,
    options: CompileOptions, loss_scale: float = 1.0, dynamic: DynamicScale | None = None,
    clip: tuple[float, float] | None = None, microbatches: int = 1,
) -> StepBuckets:
    """One training step per combination of `shapes`' sizes of `source`'s dynamic
    dims (every bucket checked before any is compiled), sharing one state."""
    dims, combos = planned_buckets(source, shapes)
    buckets: list[Bucket[TrainingStep]] = []
    forward: torch.nn.Module | None = None
    wrapped = False
    for values in combos:
        args, kwargs = concrete_inputs(source, dims, values)
        try:
            with options.times.stage("specialize"):
                exported, module, wrapped = export_bucket(args, kwargs)
            forward = forward or module
            step = compile_step(exported, groups_of(exported, module), options, loss_scale, dynamic, clip,
                                microbatches)
        except RduccError as error:
            raise RduccError(f"shapes: at {bucket_label(values)}: {error}") from None
        if buckets:
            _check_same_training(buckets[0], values, step)
        buckets.append(Bucket(values, bucket_name(values), step))
    weights = shared_weights(buckets)
    return StepBuckets(bundle(buckets), buckets, weights, forward, wrapped)


def _check_same_training(first: Bucket[TrainingStep], values: dict[str, int], step: TrainingStep) -> None:
    """Every bucket trains the same parameters (one state, one `state_dict()`)."""
    if step.trained != first.result.trained:
        only = sorted(set(step.trained) ^ set(first.result.trained)) or step.trained
        raise RduccError(f"shapes: the step at {bucket_label(values)} trains other parameters than the step at "
                         f"{bucket_label(first.values)} ({', '.join(only)}): the buckets share one state, so "
                         "each must train the same parameters")


def bucket_example(example_inputs: tuple | dict[str, Any] | None, args: tuple,
                   kwargs: dict[str, Any]) -> tuple | dict[str, Any]:
    """A bucket's example inputs in the form the caller gave theirs: a dict of
    keyword inputs keeps its values that are not tensors (compiled into the step)."""
    if isinstance(example_inputs, dict) or (example_inputs is None and kwargs and not args):
        return {**(example_inputs or {}), **kwargs}
    if kwargs:
        raise RduccError("shapes: the exported training forward takes keyword inputs; give example_inputs "
                         "as a dict of them")
    return tuple(args)


def wrapper_dynamic_shapes(dynamic_shapes: Any, arg_names: list[str], inputs: tuple,
                           named: dict[str, Any]) -> Any:
    """The user's `dynamic_shapes` (torch.export's: a tuple, one entry per
    positional input, the loss target included; or a dict by the forward's
    argument names and keywords) for rducc's `TrainingForward`, whose forward
    is `forward(*inputs, **named)`."""
    if dynamic_shapes is None:
        return None
    positional: list[Any]
    keywords: dict[str, Any] = {}
    if isinstance(dynamic_shapes, tuple | list):
        positional = list(dynamic_shapes)
    elif isinstance(dynamic_shapes, dict):
        positional = [None] * len(inputs)
        for key, dims in dynamic_shapes.items():
            if key in named:
                keywords[key] = dims
            elif key in arg_names[:len(inputs)]:
                positional[arg_names.index(key)] = dims
            else:
                raise RduccError(f"dynamic_shapes names '{key}', which is no input the model's forward takes "
                                 f"({', '.join(arg_names[:len(inputs)] + list(named)) or 'none'}); with a loss_fn "
                                 "give a tuple, one entry per input, the target last")
    else:
        raise RduccError("dynamic_shapes must be a tuple or a dict (torch.export's), "
                         f"not {type(dynamic_shapes).__name__}")
    if len(positional) != len(inputs):
        raise RduccError(f"dynamic_shapes has {len(positional)} entries for {len(inputs)} positional inputs "
                         "(one each, the loss target included)")
    wrapped: dict[str, Any] = {}
    if inputs:
        wrapped["inputs"] = tuple(positional)
    if named:
        wrapped["named"] = {key: keywords.get(key) for key in named}
    return wrapped


__all__ = ["ExportBucket", "Exported", "GroupsOf", "StepBuckets", "bucket_example", "compile_step_buckets",
           "wrapper_dynamic_shapes"]
