"""Dynamic-shape buckets: one program exported with `dynamic_shapes`, compiled
once per combination of sizes into ONE module that shares ONE weights file.

    module attributes {rdu.level = #rdu<level placed>, rdu.target = ..., rdu.weights = "out.safetensors"} {
      builtin.module @forward__batch1_seq128 attributes {rdu.bucket = #rdu.bucket<batch = 1, seq = 128>, ...} {
        tier.global ... func.func @forward(...) ...
      }
      builtin.module @forward__batch4_seq128 attributes {rdu.bucket = #rdu.bucket<batch = 4, seq = 128>, ...} {...}
    }

Each nested module is a whole placed program, compiled by the normal pipeline
from the program specialized to its sizes (`rducc.frontend.dynamic_dims`);
every pass, the cost model and the runtime see one of them at a time
(`bucket_modules`). The weights are the same tensors in every bucket: they are
written once. `pick_bucket` chooses the bucket whose inputs have the given shapes.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Generic, Protocol, TypeVar

import torch
from xdsl.dialects.builtin import ModuleOp, StringAttr

from rducc.dialects.contracts import LEVEL, TARGET, WEIGHTS, bucket_of, set_bucket
from rducc.driver import CompileOptions, CompileResult, StageTimes, compile_module
from rducc.errors import RduccError
from rducc.frontend.dynamic_dims import (
    DynamicDim,
    bucket_label,
    buckets_of,
    check_bucket,
    dynamic_dims,
    specialize,
)
from rducc.frontend.loader import load_exported_program
from rducc.shapes.padding import (
    PaddedCall,
    PadPlan,
    choose_bucket,
    padding_plan,
    record_plan,
    specialize_masked,
)
from rducc.targets import load_target

ShapesSpec = Mapping[str, Sequence[int] | int]
"""{dim name: sizes}: `{"batch": [1, 4], "seq": [128, 512]}` (the CLI's `--shapes batch=1,4 seq=128,512`)."""


class Compiled(Protocol):
    """What a bucket's compile gives: its placed module and its weights by global name
    (a `CompileResult`; a training step's `rducc.training.compile.TrainingStep`)."""

    @property
    def module(self) -> ModuleOp: ...

    @property
    def weights(self) -> dict[str, torch.Tensor]: ...


Result = TypeVar("Result", bound=Compiled)


@dataclass
class Bucket(Generic[Result]):
    """One compiled size of each dynamic dim."""

    values: dict[str, int]
    name: str
    """The nested module's symbol, `forward__batch1_seq128`."""
    result: Result


@dataclass
class BucketsResult:
    """Every bucket compiled, the one module holding them all and the shared weights."""

    module: ModuleOp
    buckets: list[Bucket[CompileResult]]
    weights: dict[str, torch.Tensor]
    dims: list[DynamicDim]
    padding: PadPlan
    """The dims a call may pad up to a larger bucket (`rducc.shapes.padding`)."""


def bucket_name(values: Mapping[str, int]) -> str:
    """The nested module's symbol for a bucket: `forward__batch1_seq128`."""
    parts = "_".join(f"{re.sub(r'[^A-Za-z0-9_]', '_', name)}{size}" for name, size in values.items())
    return f"forward__{parts}"


def _sizes(spec: ShapesSpec) -> dict[str, list[int]]:
    """The spec with every dim's sizes as a list of ints (a single int allowed)."""
    sizes: dict[str, list[int]] = {}
    for name, given in spec.items():
        values = [given] if isinstance(given, int) else list(given)
        if not values or not all(isinstance(v, int) and not isinstance(v, bool) for v in values):
            raise RduccError(f"shapes: '{name}' needs whole-number sizes, got {given!r}")
        sizes[str(name)] = values
    return sizes


def compile_buckets(
    source: torch.export.ExportedProgram | str | Path, shapes: ShapesSpec, options: CompileOptions | None = None,
    pad_dims: Sequence[str] = (),
) -> BucketsResult:
    """Compile `source` (exported with dynamic_shapes) once per combination of
    `shapes`' sizes: every bucket is checked (ranges and torch's guards) before
    any is compiled, then each is specialized and compiled by the normal pipeline.
    Which dims a call may pad is read from the program (`padding_plan`;
    `pad_dims`: dims the caller vouches for)."""
    options = options or CompileOptions()
    times = options.times
    if isinstance(source, str | Path):
        with times.stage("load"):
            source = load_exported_program(source)
    dims, combos = planned_buckets(source, shapes)
    with times.stage("padding"):
        plan = padding_plan(source, dims, pad_dims)
    target = load_target(options.target)
    buckets = []
    for values in combos:
        with times.stage("specialize"):
            static = specialize_masked(source, dims, values, plan) if plan.masks else specialize(source, dims, values)
        try:
            result = compile_module(static, replace(options, target=target, times=times or StageTimes()))
        except RduccError as error:
            raise RduccError(f"shapes: at {bucket_label(values)}: {error}") from None
        buckets.append(Bucket(values, bucket_name(values), result))
    weights = shared_weights(buckets)
    module = bundle(buckets)
    record_plan(module, plan)
    return BucketsResult(module, buckets, weights, dims, plan)


def planned_buckets(source: torch.export.ExportedProgram,
                    shapes: ShapesSpec) -> tuple[list[DynamicDim], list[dict[str, int]]]:
    """The program's dynamic dims and every combination of `shapes`' sizes, each
    checked against the ranges and guards torch recorded, before any is compiled."""
    dims = dynamic_dims(source)
    if not dims:
        raise RduccError("shapes: the program has static shapes (it was exported without dynamic_shapes); "
                         "compile it without --shapes")
    combos = buckets_of(dims, _sizes(shapes))
    for values in combos:
        check_bucket(source, dims, values)
    return dims, combos


def shared_weights(buckets: Sequence[Bucket[Any]]) -> dict[str, torch.Tensor]:
    """The weights of every bucket, each once: the same name must be the same tensor."""
    weights: dict[str, torch.Tensor] = {}
    for bucket in buckets:
        for name, tensor in bucket.result.weights.items():
            known = weights.get(name)
            if known is None:
                weights[name] = tensor
            elif not _same(known, tensor):
                where = bucket_label(bucket.values)
                raise RduccError(f"shapes: the weight '{name}' differs between buckets (at {where}: "
                                 f"{list(tensor.shape)} {tensor.dtype}); the buckets must share their weights")
    return weights


def _same(a: torch.Tensor, b: torch.Tensor) -> bool:
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    if a.device.type == "meta" or b.device.type == "meta":
        return True
    return bool(torch.equal(a, b))


def bundle(buckets: Sequence[Bucket[Any]]) -> ModuleOp:
    """One module holding each bucket's module, named and marked with its sizes;
    the outer module carries the level and the target they share."""
    first = buckets[0].result.module
    outer = ModuleOp([])
    for key in (LEVEL, TARGET):
        if key in first.attributes:
            outer.attributes[key] = first.attributes[key]
    for bucket in buckets:
        inner = bucket.result.module
        for key in (LEVEL, TARGET):  # said once, on the outer module
            if inner.attributes.get(key) == outer.attributes.get(key):
                inner.attributes.pop(key, None)
        set_bucket(inner, bucket.values)
        inner.properties["sym_name"] = StringAttr(bucket.name)
        outer.body.block.add_op(inner)
    return outer


def is_bucketed(module: ModuleOp) -> bool:
    """Whether `module` holds the buckets of a multi-shape compile."""
    return any(isinstance(op, ModuleOp) and bucket_of(op) is not None for op in module.ops)


def bucket_ops(module: ModuleOp) -> list[tuple[dict[str, int], ModuleOp]]:
    """Each bucket's sizes and its inner module as it is in `module` (no copy: to read, not to run),
    in the order they were compiled."""
    found = []
    for op in module.ops:
        values = bucket_of(op) if isinstance(op, ModuleOp) else None
        if values is not None:
            found.append((values, op))
    return found


def bucket_modules(module: ModuleOp) -> list[tuple[dict[str, int], ModuleOp]]:
    """Each bucket's sizes and its program as a module of its own (a copy, naming
    the outer module's weights file), in the order they were compiled."""
    found = []
    for values, op in bucket_ops(module):
        alone = op.clone()
        for key in (LEVEL, TARGET, WEIGHTS):
            if key in module.attributes and key not in alone.attributes:
                alone.attributes[key] = module.attributes[key]
        found.append((values, alone))
    return found


def input_shapes(module: ModuleOp, runner: Any = None) -> list[tuple[int, ...]]:
    """The shapes of a bucket's user inputs, as its entry function declares them
    (read from `runner`, the module's placed runner, when one is at hand)."""
    from rducc.runtime.sockets import declared_arguments, placed_runner

    return [tuple(a.shape) for a in declared_arguments(runner or placed_runner(module))[0]]


def pick_bucket(
    buckets: Sequence[tuple[dict[str, int], Sequence[tuple[int, ...]]]], shapes: Sequence[tuple[int, ...]],
    plan: PadPlan | None = None,
) -> PaddedCall:
    """The bucket (of these sizes and inputs' shapes) a call with inputs of
    `shapes` runs: the one whose inputs have exactly these shapes, else the
    smallest that covers them padding only the dims `plan` allows; else one
    error listing the compiled shapes and what may be padded."""
    call = choose_bucket(buckets, [tuple(s) for s in shapes], plan)
    if call is not None:
        return call
    given = ", ".join(str(list(s)) for s in shapes)
    hidden = len(plan.validity_dims()) if plan is not None else 0  # never given by the caller
    compiled = "; ".join(f"{bucket_label(values)} (inputs "
                         f"{', '.join(str(list(s)) for s in declared[:len(declared) - hidden])})"
                         for values, declared in buckets)
    padding = ""
    if plan is not None:
        allowed = f"a call may pad {', '.join(plan.dims)} up to a larger bucket" if plan.dims else ""
        refused = "; ".join(f"{name} is not padded: {why}" for name, why in plan.refused.items())
        padding = " (" + "; ".join(p for p in (allowed, refused) if p) + ")" if allowed or refused else ""
    raise RduccError(f"no compiled shape takes inputs of shape {given}: the program was compiled for {compiled}; "
                     f"compile the size you need with --shapes{padding}")


__all__ = [
    "Bucket",
    "BucketsResult",
    "Compiled",
    "ShapesSpec",
    "bucket_modules",
    "bucket_name",
    "bucket_ops",
    "bundle",
    "compile_buckets",
    "input_shapes",
    "is_bucketed",
    "pick_bucket",
    "planned_buckets",
    "shared_weights",
]
