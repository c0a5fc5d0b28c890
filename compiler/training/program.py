"""`rducc.compile_training(model, example_inputs, optimizer=...) -> TrainingProgram`.

    program = rducc.compile_training(model, (x, y), optimizer=torch.optim.AdamW(model.parameters(), lr=1e-4))
    for x, y in batches:
        loss = program.step(x, y)        # forward, backward and the update, on the placed program
    program.state_dict()                 # torch.optim's state, loadable into the optimizer
    program.parameters()                 # the trained parameters, by the model's names

The parameters, buffers and optimizer state are the program's state (its
weights), updated in place by every step; nothing runs through PyTorch.
"""

from __future__ import annotations

import inspect
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.utils._pytree as pytree
from torch.export.graph_signature import OutputKind

from rducc.dialects.rdu.custom_op import import_op_modules
from rducc.driver import CompileOptions, PassesLike, resolve_passes
from rducc.errors import RduccError
from rducc.frontend.loader import export_model, load_exported_program
from rducc.program import BucketedProgram, Program
from rducc.shapes import ShapesSpec, bucket_modules
from rducc.targets import DEFAULT_TARGET, Target, load_target
from rducc.training.buckets import (
    ExportBucket,
    Exported,
    GroupsOf,
    StepBuckets,
    bucket_example,
    compile_step_buckets,
    wrapper_dynamic_shapes,
)
from rducc.training.clipping import check_clip
from rducc.training.compile import (
    LossFn,
    ParamGroup,
    TrainingForward,
    TrainingStep,
    canonical_names,
    check_microbatches,
    compile_step,
    parameter_names,
    single_group,
)
from rducc.training.cumulative_norm import cumulative_averages_traced
from rducc.training.custom_functions import CustomBackwardError, custom_backwards_refused
from rducc.training.gradient_hooks import gradient_hooks_refused
from rducc.training.optimizers import (
    LR,
    MOMENTUM_STARTED,
    OptimizerSpec,
    initial_state,
    lr_global,
    named_optimizer,
    state_global,
    torch_group,
    torch_optimizer_groups,
)
from rducc.training.scaling import GROWTH_TRACKER, SCALE, DynamicScale, dynamic_scale_of
from rducc.weights import numpy_to_torch, torch_to_numpy

OptimizerLike = str | torch.optim.Optimizer | None


SCALING_STATE = (SCALE, GROWTH_TRACKER)
"""Program state of dynamic loss scaling, not the model's."""

MIXED_PRECISION = {"bf16": torch.bfloat16}
"""`mixed_precision=` names: the dtype autocast computes in."""


def export_for_training(
    model: Any, example_inputs: tuple | dict | None, loss_fn: LossFn | None, mixed_precision: str | None = None,
    loss_scale: float = 1.0, dynamic: DynamicScale | None = None, microbatches: int = 1,
    input_names: Sequence[str] = (), dynamic_shapes: Any = None,
) -> tuple[torch.export.ExportedProgram, torch.nn.Module | None, bool]:
    """The program to differentiate, the nn.Module it was exported from (None:
    given exported) and whether it is wrapped in `TrainingForward` (names `model.*`).
    `dynamic_shapes` (torch.export's, for the model's inputs) exports an nn.Module
    with dynamic dims (`compile_training(..., shapes=...)`)."""
    if isinstance(model, str | Path):
        model = load_exported_program(model)
    if isinstance(model, torch.export.ExportedProgram):
        if not _wrapper_needed(loss_fn, mixed_precision, loss_scale, dynamic, microbatches) \
                and not _returns_mapping_with_loss(model):
            return (_loss_only(model) if _returns_loss_first(model) else model), None, False
        ep, wrapped = _rewrapped(model, example_inputs, loss_fn, mixed_precision, loss_scale, dynamic, microbatches)
        return ep, None, wrapped
    if not isinstance(model, torch.nn.Module):
        raise RduccError("rducc.compile_training takes an nn.Module, an ExportedProgram or a path, "
                         f"not {type(model).__name__}")
    if example_inputs is None:
        raise RduccError("rducc.compile_training of an nn.Module needs example_inputs (a tuple of tensors)")
    named = example_inputs if isinstance(example_inputs, dict) else {}
    inputs = () if named else example_inputs if isinstance(example_inputs, tuple) else (example_inputs,)
    check_microbatches(microbatches, [*inputs, *named.values()])
    _check_positional_tensors(model, inputs)
    constants = {key: value for key, value in named.items() if not isinstance(value, torch.Tensor)}
    named = {key: value for key, value in named.items() if key not in constants}
    wrapped = _wrapper_needed(loss_fn, mixed_precision, loss_scale, dynamic, microbatches) or bool(constants)
    module = TrainingForward(model, loss_fn, _compute_dtype(mixed_precision), loss_scale, dynamic,
                             microbatches, input_names, constants) if wrapped else model
    exported: torch.export.ExportedProgram | None = None
    try:
        with custom_backwards_refused(), gradient_hooks_refused(model), cumulative_averages_traced(model):
            exported = export_model(module, inputs, grad=True, kwargs=named,
                                    dynamic_shapes=_dynamic_shapes_of(module, model, dynamic_shapes, inputs, named))
    except CustomBackwardError:
        raise
    except RduccError:
        if wrapped:
            raise  # else a model output torch cannot export (transformers' cache beside its loss): try its loss
    if exported is not None and not wrapped and _returns_loss_first(exported):
        return _loss_only(exported), model, False
    if exported is None or (not wrapped and _returns_mapping_with_loss(exported)):  # transformers' given labels
        module = TrainingForward(model, input_names=input_names, constants=constants)
        with custom_backwards_refused(), gradient_hooks_refused(model), cumulative_averages_traced(model):
            exported = export_model(module, inputs, grad=True, kwargs=named,
                                    dynamic_shapes=_dynamic_shapes_of(module, model, dynamic_shapes, inputs, named))
    return exported, module, isinstance(module, TrainingForward)


def _wrapper_needed(loss_fn: LossFn | None, mixed_precision: str | None, loss_scale: float,
                    dynamic: DynamicScale | None, microbatches: int) -> bool:
    """Whether the loss is computed by rducc's `TrainingForward` around the model."""
    return (loss_fn is not None or mixed_precision is not None or loss_scale != 1.0 or dynamic is not None
            or microbatches != 1)


def _dynamic_shapes_of(module: torch.nn.Module, model: torch.nn.Module, dynamic_shapes: Any, inputs: tuple,
                       named: dict[str, Any]) -> Any:
    """The user's `dynamic_shapes` for the module exported: as given for the model
    itself, in `TrainingForward`'s form around it."""
    if dynamic_shapes is None or module is model:
        return dynamic_shapes
    try:
        names = list(inspect.signature(model.forward).parameters)
    except (TypeError, ValueError):
        names = []
    return wrapper_dynamic_shapes(dynamic_shapes, names, inputs, named)


def _check_positional_tensors(model: torch.nn.Module, inputs: tuple) -> None:
    """Positional example inputs are tensors (torch's joint export takes tensor
    inputs only); a number or flag goes by keyword, compiled into the step."""
    for index, value in enumerate(inputs):
        if not isinstance(value, torch.Tensor):
            try:
                name = list(inspect.signature(model.forward).parameters)[index]
            except (IndexError, TypeError, ValueError):
                name = "its name"
            raise RduccError(f"example input #{index} is a {type(value).__name__} ({value!r}), not a tensor; "
                             f"pass it by keyword ({name}={value!r}, in a dict of inputs): it is then "
                             "compiled into the step")


def _loss_only(ep: torch.export.ExportedProgram) -> torch.export.ExportedProgram:
    """A copy of `ep` returning only its first user output, the loss (what
    `_returns_loss_first` found): the other outputs and the ops only they
    need are dropped; parameter and input names stay the model's."""
    from torch.export.experimental import _copy_graph_module_and_signature

    graph_module, signature = _copy_graph_module_and_signature(ep)
    output = next(n for n in graph_module.graph.nodes if n.op == "output")
    users = [i for i, spec in enumerate(signature.output_specs) if spec.kind == OutputKind.USER_OUTPUT]
    keep = [i for i in range(len(signature.output_specs)) if i not in users[1:]]
    output.args = ([output.args[0][i] for i in keep],)
    signature.output_specs[:] = [signature.output_specs[i] for i in keep]
    graph_module.graph.eliminate_dead_code()
    graph_module.recompile()
    result = ep._update(graph_module, signature)
    result.module_call_graph[0].signature.out_spec = pytree.tree_structure(torch.zeros(()))
    return result


def _compute_dtype(mixed_precision: str | None) -> torch.dtype | None:
    if mixed_precision is not None and mixed_precision not in MIXED_PRECISION:
        raise RduccError(f"mixed_precision '{mixed_precision}' is not supported; rducc compiles "
                         f"{', '.join(MIXED_PRECISION)} (autocast with float32 master weights)")
    return MIXED_PRECISION[mixed_precision] if mixed_precision else None


def _returns_mapping_with_loss(ep: torch.export.ExportedProgram) -> bool:
    """Whether the program returns a mapping with a `loss` beside other items (transformers' ModelOutput)."""
    context = getattr(ep.call_spec.out_spec, "context", None)
    return isinstance(context, list) and "loss" in context and len(context) > 1


def _returns_loss_first(ep: torch.export.ExportedProgram) -> bool:
    """Whether the program returns a tuple or list of several outputs whose
    first is a floating-point scalar, the loss (`(loss, logits)`, as
    transformers' models return with return_dict=False)."""
    spec = ep.call_spec.out_spec
    if getattr(spec, "type", None) not in (tuple, list) or spec.num_children < 2:
        return False
    output = next(n for n in ep.graph.nodes if n.op == "output")
    user = [node for spec, node in zip(ep.graph_signature.output_specs, output.args[0])
            if spec.kind == OutputKind.USER_OUTPUT]
    value = user[0].meta.get("val") if user and isinstance(user[0], torch.fx.Node) else None
    return isinstance(value, torch.Tensor) and value.dim() == 0 and value.is_floating_point()


def _rewrapped(ep: torch.export.ExportedProgram, example_inputs: tuple | dict | None, loss_fn: LossFn | None,
               mixed_precision: str | None, loss_scale: float, dynamic: DynamicScale | None,
               microbatches: int) -> tuple[torch.export.ExportedProgram, bool]:
    """An exported program (a .pt2) exported again inside `TrainingForward`
    (mixed precision, loss scaling, microbatches), from its own example inputs
    when none are given: `ep.module()` runs the same ATen ops, and autocast
    applies to them as to the model's; and whether it is wrapped (names `model.*`).
    Exported with nothing to wrap, it is `ep` at these inputs' sizes (a shape bucket)."""
    if example_inputs is None:
        args, kwargs = ep.example_inputs or ((), {})
        example_inputs = kwargs if kwargs else tuple(args)
    check_microbatches(microbatches, [*(example_inputs.values() if isinstance(example_inputs, dict)
                                        else example_inputs)])
    module = ep.module(check_guards=False)
    if microbatches > 1:  # the graph runs on a part of the batch: no check of the exported input shapes
        module._forward_pre_hooks.clear()
    for name, parameter in ep.named_parameters():  # requires_grad as exported (frozen layers stay frozen)
        module.get_parameter(name).requires_grad_(parameter.requires_grad)
    try:
        names = [s.arg.name for s in ep.graph_signature.input_specs if s.kind.name == "USER_INPUT"]
        exported, _, wrapped = export_for_training(module, example_inputs, loss_fn, mixed_precision, loss_scale,
                                                   dynamic, microbatches,
                                                   names if isinstance(example_inputs, tuple) else ())
        return exported, wrapped
    except RduccError as error:
        if microbatches == 1:
            raise
        raise RduccError(f"microbatches {microbatches}: the exported program does not run on a part of its batch "
                         f"({str(error).removeprefix('torch.export cannot export the model')}); export it with a "
                         "dynamic batch dimension (torch.export.Dim) or compile the nn.Module with "
                         "rducc.compile_training(..., microbatches=K)") from None


def _groups(optimizer: OptimizerLike, options: dict[str, Any], ep: torch.export.ExportedProgram,
            module: torch.nn.Module | None) -> list[ParamGroup] | None:
    if optimizer is None:
        return None
    if isinstance(optimizer, str):
        return single_group(named_optimizer(optimizer, options), ep)
    if options:
        raise RduccError("optimizer options go to the torch.optim optimizer itself, not to compile_training")
    if module is None:
        raise RduccError("a torch.optim optimizer needs the nn.Module its parameters belong to, "
                         "not an exported program")
    names = {id(p): name for name, p in module.named_parameters()}
    groups = []
    for spec, params in torch_optimizer_groups(optimizer):
        unknown = [p for p in params if id(p) not in names]
        if unknown:
            raise RduccError(f"the optimizer holds {len(unknown)} tensor(s) that are not parameters of the model")
        groups.append(ParamGroup(spec, [names[id(p)] for p in params]))
    return groups


def _split(target: Target, passes: PassesLike | None, **given: int) -> tuple[int, int, int, int, int]:
    """(tp, pp, dp, ep, zero) of compile_training's keywords, checked as `rducc
    --train` checks --tp/--pp/--dp/--zero; all 0 when none is given."""
    named = " ".join(f"{name}={n}" for name, n in given.items() if n)
    if not named:
        return 0, 0, 0, 0, 0
    if any(not isinstance(n, int) or n < 0 for n in given.values()):
        raise RduccError(f"{named}: dp, tp, pp and zero must be whole numbers >= 0 (0: the cost model picks)")
    if given["zero"] not in (0, 1, 2, 3):
        raise RduccError(f"zero={given['zero']}: the ZeRO stage is 1 (optimizer state sharded), 2 (and gradients) "
                         "or 3 (and parameters)")
    if given["zero"] and given["dp"] < 2:
        raise RduccError(f"zero={given['zero']} shards the optimizer state over the data-parallel replicas: "
                         "give dp=2 or more")
    if target.sockets == 1:
        raise RduccError(f"{named} splits the step across sockets, but target {target.name} has one "
                         "(use target='sn40l-8' or 'sn40l-16')")
    if passes is not None:
        raise RduccError(f"{named} sets the -O pipeline's rdu-partition; with passes= put "
                         "RduPartition(dp=..., tp=..., pp=..., zero=...) in it instead")
    sockets = max(given["dp"], 1) * max(given["tp"], 1) * max(given["pp"], 1)
    if sockets > target.sockets:
        raise RduccError(f"{named} needs {sockets} sockets; target {target.name} has {target.sockets}")
    return given["tp"], given["pp"], given["dp"], 0, given["zero"]


def compile_training(
    model: Any,
    example_inputs: tuple | None = None,
    *,
    optimizer: OptimizerLike = "adamw",
    loss_fn: LossFn | None = None,
    target: str | Target = DEFAULT_TARGET,
    opt_level: int = 2,
    passes: PassesLike | None = None,
    verify_each: bool = False,
    mixed_precision: str | None = None,
    loss_scale: float | str | torch.amp.GradScaler = 1.0,
    microbatches: int = 1,
    max_grad_norm: float | None = None,
    grad_norm_type: float = 2.0,
    dp: int = 0,
    tp: int = 0,
    pp: int = 0,
    zero: int = 0,
    import_modules: Sequence[str] = (),
    shapes: ShapesSpec | None = None,
    dynamic_shapes: Any = None,
    **optimizer_options: Any,
) -> TrainingProgram:
    """Compile one training step of `model` and return the runnable TrainingProgram.

    `model`'s forward returns the loss (a scalar), or `loss_fn(model(*inputs[:-1]),
    inputs[-1])` is the loss. `optimizer` is a name (`sgd`, `adam`, `adamw`, with
    torch.optim's options as keywords: `lr=1e-4, weight_decay=0.1`), a
    `torch.optim` optimizer over the model's parameters (its param groups and
    hyperparameters; its state, if any, is loaded), or None (the step returns
    the loss and the gradients, and updates nothing). Parameters that do not
    require grad are frozen: not updated, as torch.optim leaves them.
    `mixed_precision="bf16"` computes the forward and backward under CPU
    autocast to bf16 with float32 parameters (the master weights) and
    optimizer; `loss_scale` multiplies the loss before the backward and
    divides the gradients by it before the update (static loss scaling);
    `loss_scale="dynamic"` or a `torch.amp.GradScaler` (its settings) scales
    dynamically, as GradScaler does: a step whose gradients hold inf or nan
    updates nothing and halves the scale, which grows after growth_interval
    good steps (`grad_scale` reads it). `step()` returns the unscaled loss.
    `microbatches=k` splits each batch along its first dimension into k
    microbatches and accumulates their gradients (each microbatch's loss / k)
    before the one update, as eager gradient accumulation does; `step()`
    returns the mean of their losses. `max_grad_norm` clips the gradients of
    the trained parameters together before the update, as
    `torch.nn.utils.clip_grad_norm_(parameters, max_grad_norm, grad_norm_type)`
    between `backward()` and `step()`.
    On a multi-socket target `dp`, `tp` and `pp` force the split as `rducc
    --train --dp D --tp N --pp M` does (0: the cost model picks), and `zero=S`
    is the ZeRO stage over the dp replicas (`--zero S`: 1 shards the optimizer
    state, 2 the gradients too, 3 the parameters too). `import_modules` names the Python modules
    that register the custom ops the step runs on the host (as `rducc.compile`'s);
    such an op trains through the autograd formula torch.library registers for it
    (`register_autograd`), and one without is refused, named, by torch's joint graph.

    A model exported with `dynamic_shapes` (an ExportedProgram or a path; an
    nn.Module is exported here with `dynamic_shapes=`, torch.export's argument
    for the step's inputs, the loss target included) is compiled once per
    combination of `shapes`' sizes (`{"batch": [2, 4], "seq": [16, 64]}`, as
    `rducc --train --shapes batch=2,4 seq=16,64`): a `BucketedTrainingProgram`,
    whose steps share one state (parameters, buffers, optimizer state) and whose
    `step()` runs the bucket of the batch's shapes (docs/training.md).
    """
    import_op_modules(import_modules, "import_modules")  # the custom ops the step's host calls may run
    check_clip(max_grad_norm, grad_norm_type)
    clip = None if max_grad_norm is None else (float(max_grad_norm), float(grad_norm_type))
    dynamic = dynamic_scale_of(loss_scale)
    static = 1.0 if dynamic is not None or isinstance(loss_scale, torch.amp.GradScaler) else loss_scale
    if not isinstance(static, float | int) or not static > 0 or static == float("inf"):
        raise RduccError(f"loss_scale {loss_scale}: give a positive finite number or 'dynamic'")
    chosen = load_target(target)
    split = _split(chosen, passes, dp=dp, tp=tp, pp=pp, zero=zero)
    custom = resolve_passes(passes, opt_level)
    options = CompileOptions(chosen, opt_level, passes=custom, verify_each=verify_each, split=split)
    torch_optimizer = optimizer if isinstance(optimizer, torch.optim.Optimizer) else None
    program: TrainingProgram
    if shapes is not None:
        buckets = _step_buckets(model, example_inputs, shapes, dynamic_shapes, loss_fn, mixed_precision, float(static),
                                dynamic, microbatches, lambda ep, module: _groups(optimizer, optimizer_options, ep,
                                                                                  module), options, clip)
        program = BucketedTrainingProgram(buckets, chosen, prefix="model." if buckets.wrapped else "",
                                          loss_scale=float(static), constants=_constants(buckets.forward),
                                          optimizer=torch_optimizer)
    else:
        ep, module, wrapped = export_for_training(model, example_inputs, loss_fn, mixed_precision, float(static),
                                                  dynamic, microbatches, dynamic_shapes=dynamic_shapes)
        step = compile_step(ep, _groups(optimizer, optimizer_options, ep, module), options, float(static), dynamic,
                            clip, microbatches)
        program = TrainingProgram(step, chosen, prefix="model." if wrapped else "", loss_scale=float(static),
                                  constants=_constants(module), optimizer=torch_optimizer)
    if isinstance(optimizer, torch.optim.Optimizer) and optimizer.state:
        program.load_state_dict(optimizer.state_dict())
    return program


def _constants(module: torch.nn.Module | None) -> dict[str, Any]:
    """The keyword inputs that are not tensors, compiled into the step (`TrainingForward.constants`)."""
    return module.constants if isinstance(module, TrainingForward) else {}


def _step_buckets(model: Any, example_inputs: tuple | dict | None, shapes: ShapesSpec, dynamic_shapes: Any,
                  loss_fn: LossFn | None, mixed_precision: str | None, loss_scale: float, dynamic: DynamicScale | None,
                  microbatches: int, groups_of: GroupsOf, options: CompileOptions,
                  clip: tuple[float, float] | None) -> StepBuckets:
    """`compile_training(..., shapes=...)`: one step per bucket of the model's dynamic dims, one shared state."""
    if isinstance(model, torch.nn.Module):
        if dynamic_shapes is None:
            raise RduccError("compile_training(model, example_inputs, shapes=...) of an nn.Module needs "
                             "dynamic_shapes= too (torch.export's, for the step's inputs: which dims are dynamic, "
                             "e.g. ({0: Dim('batch')}, {0: Dim('batch')}) for (x, target))")
        source = export_for_training(model, example_inputs, loss_fn, mixed_precision, loss_scale, dynamic,
                                     microbatches, dynamic_shapes=dynamic_shapes)[0]

        def export_bucket(args: tuple, kwargs: dict[str, Any]) -> Exported:
            return export_for_training(model, bucket_example(example_inputs, args, kwargs), loss_fn, mixed_precision,
                                       loss_scale, dynamic, microbatches)

        return compile_step_buckets(source, shapes, export_bucket, groups_of, options, loss_scale, dynamic, clip,
                                    microbatches)
    if dynamic_shapes is not None:
        raise RduccError("dynamic_shapes= exports an nn.Module; an exported program has its dynamic dims already")
    if isinstance(model, str | Path):
        model = load_exported_program(model)
    if not isinstance(model, torch.export.ExportedProgram):
        raise RduccError("rducc.compile_training takes an nn.Module, an ExportedProgram or a path, "
                         f"not {type(model).__name__}")
    return compile_step_buckets(model, shapes, bucket_exporter(model, loss_fn, mixed_precision, loss_scale, dynamic,
                                                               microbatches),
                                groups_of, options, loss_scale, dynamic, clip, microbatches)


def bucket_exporter(ep: torch.export.ExportedProgram, loss_fn: LossFn | None = None,
                    mixed_precision: str | None = None, loss_scale: float = 1.0, dynamic: DynamicScale | None = None,
                    microbatches: int = 1) -> ExportBucket:
    """How a bucket of `ep` (exported with dynamic_shapes) is exported for training: `ep`'s
    own module exported again at the bucket's inputs (inside `TrainingForward` when
    something wraps the loss), as a static `ep` is for mixed precision (`_rewrapped`)."""
    def export_bucket(args: tuple, kwargs: dict[str, Any]) -> Exported:
        exported, wrapped = _rewrapped(ep, bucket_example(None, args, kwargs), loss_fn, mixed_precision, loss_scale,
                                       dynamic, microbatches)
        return exported, None, wrapped

    return export_bucket


def _model_order(step: TrainingStep) -> list[int]:
    """The program's gradient results (`step.trained`, program order) in the order `model.parameters()`
    lists their parameters: a tied weight is read through one of its names, not always the first."""
    names = canonical_names(step.exported, parameter_names(step.exported), step.trained)
    order = [step.trained.index(name) for name in names if name in step.trained]
    return order + [i for i in range(len(step.trained)) if i not in order]


class TrainingProgram:
    """A compiled training step and its state (parameters, buffers, optimizer state)."""

    def __init__(self, step: TrainingStep, target: Target, prefix: str = "", loss_scale: float = 1.0,
                 constants: dict[str, Any] | None = None, optimizer: torch.optim.Optimizer | None = None,
                 program: Program | None = None):
        self.module = step.module
        self.groups = step.groups
        self._gradient_order = _model_order(step)
        self.trained = [step.trained[i] for i in self._gradient_order]
        """The parameters that get gradients, by the names the program reads them through, in the
        order `model.parameters()` lists them (the gradients' order with no optimizer)."""
        self.target = target
        self.aliases = step.aliases
        self.prefix = prefix
        self.loss_scale = loss_scale
        self.dynamic = step.dynamic
        self.constants = dict(constants or {})
        """Keyword inputs that are not tensors (`return_dict=False`), compiled into the step."""
        if program is None:
            weights = {name: torch_to_numpy(t) for name, t in step.weights.items()}
            program = Program(step.module, weights, target, step.exported.call_spec.in_spec, None)
        self._program = program
        """The placed step a batch runs (with its state, `weights`)."""
        self._started = False
        """Whether a step has run (or a state with SGD momentum was loaded)."""
        self.optimizer = optimizer
        """The torch.optim optimizer the step was compiled from (None: a named one): each step reads its
        param groups' current learning rates (`torch.optim.lr_scheduler` changes them), `_follow_optimizer`."""

    @property
    def weights(self) -> dict[str, np.ndarray]:
        """The program's state by global name (parameters, buffers, `optimizer.STATE.PARAMETER`)."""
        return self._program.weights

    def step(self, *batch: torch.Tensor, **named: torch.Tensor) -> Any:
        """Run one training step on this batch; return the loss (with no
        optimizer: the loss and the gradients of the trained parameters, in the
        order `model.parameters()` lists them)."""
        for key, value in self.constants.items():
            if key in named and named.pop(key) != value:
                raise RduccError(f"input '{key}': the step was compiled with {key}={value!r}, a value that is "
                                 "part of the program; compile again to change it")
        self._follow_optimizer()
        result = self._program_for(batch, named)(*batch, **named)
        self._started = True
        if self.optimizer is not None:  # the step ran optimizer.step(): torch's schedulers check that it was called
            self.optimizer._opt_called = True  # type: ignore[attr-defined]
        if self.groups or not isinstance(result, tuple):
            return result  # with an optimizer the step unscales its loss itself
        result = (result[0], *(result[1 + i] for i in self._gradient_order))  # no optimizer: loss, gradients
        return tuple(value / self.loss_scale for value in result) if self.loss_scale != 1.0 else result

    __call__ = step

    def _program_for(self, batch: tuple, named: dict[str, Any]) -> Program:
        """The placed step this batch runs."""
        return self._program

    def _follow_optimizer(self) -> None:
        """Take the torch.optim optimizer's current learning rates (a scheduler's);
        refuse a change to any other hyperparameter, compiled into the step."""
        if self.optimizer is None:
            return
        current = torch_optimizer_groups(self.optimizer)
        if len(current) != len(self.groups):
            raise RduccError(f"the optimizer now has {len(current)} param groups; the step was compiled with "
                             f"{len(self.groups)}; compile again to change them")
        for number, (ours, (spec, _)) in enumerate(zip(self.groups, current)):
            for key, value in spec.options:
                if key != LR and value != ours.spec.hyper[key]:
                    raise RduccError(f"param group {number}: the optimizer's {key} is now {value}, the step was "
                                     f"compiled with {ours.spec.hyper[key]}; only lr is read at each step (a "
                                     f"schedule may change it); compile again to change {key}")
            self.set_lr(spec.hyper[LR], number)

    def lr(self, group: int = 0) -> float:
        """Param group `group`'s learning rate, as the next step reads it."""
        self._follow_optimizer()
        symbol = lr_global(group)
        return float(self.weights[symbol]) if symbol in self.weights else float(self.groups[group].spec.hyper[LR])

    def set_lr(self, lr: float, group: int | None = None) -> None:
        """Set the learning rate of param group `group` (None: every group) for the
        following steps, without compiling again (the program reads it as state); the
        torch.optim optimizer the step follows takes it too, so its next step keeps it."""
        for number in range(len(self.groups)) if group is None else [group]:
            if self.optimizer is not None:
                self.optimizer.param_groups[number][LR] = float(lr)
            symbol = lr_global(number)
            if symbol in self.weights:  # a group with no trained parameter has no update
                self.weights[symbol] = np.array(float(lr), dtype=np.float64)

    def parameters(self) -> dict[str, torch.Tensor]:
        """Every parameter and buffer of the model as the program holds it now, by
        name (a tied parameter under each of its names)."""
        return {name.removeprefix(self.prefix): numpy_to_torch(self.weights[self.aliases.get(name, name)])
                for name in self.weights if not name.startswith("optimizer.") and name not in SCALING_STATE}

    @property
    def grad_scale(self) -> float | None:
        """The current loss scale under dynamic loss scaling (`GradScaler.get_scale()`), else None."""
        return float(self.weights[SCALE]) if SCALE in self.weights else None

    def scaler_state_dict(self) -> dict[str, Any]:
        """Dynamic loss scaling's state in `torch.amp.GradScaler.state_dict()`'s format ({} without it)."""
        if self.dynamic is None:
            return {}
        return {"scale": self.grad_scale, "growth_factor": self.dynamic.growth_factor,
                "backoff_factor": self.dynamic.backoff_factor, "growth_interval": self.dynamic.growth_interval,
                "_growth_tracker": int(self.weights[GROWTH_TRACKER])}

    def _has_state(self, spec: OptimizerSpec, name: str) -> bool:
        if name not in self.trained or not spec.state_names():
            return False
        if spec.name == "sgd":
            return self._started
        return float(self.weights[state_global("step", name)]) > 0

    def state_dict(self) -> dict[str, Any]:
        """The optimizer's state in torch.optim's format (`Optimizer.state_dict()`)."""
        self._follow_optimizer()
        state: dict[int, dict[str, torch.Tensor]] = {}
        groups: list[dict[str, Any]] = []
        index = 0
        for group in self.groups:
            indices = []
            for name in group.names:
                if self._has_state(group.spec, name):
                    state[index] = {s: numpy_to_torch(np.array(self.weights[state_global(s, name)]))
                                    for s in group.spec.state_names()}
                indices.append(index)
                index += 1
            groups.append({**torch_group(group.spec, indices), LR: self.lr(len(groups))})
        return {"state": state, "param_groups": groups}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Load torch.optim's state (`Optimizer.state_dict()`): the optimizer state and
        each group's learning rate; its other hyperparameters must be the compiled ones."""
        loaded = state_dict.get("param_groups", [])
        if len(loaded) != len(self.groups):
            raise RduccError(f"the state has {len(loaded)} param groups; the program was compiled "
                             f"with {len(self.groups)}")
        for number, (ours, theirs) in enumerate(zip(self.groups, loaded)):
            _check_group(number, ours, theirs)
        for number, theirs in enumerate(loaded):
            if LR in theirs:
                self.set_lr(float(theirs[LR]), number)
        state = state_dict.get("state", {})
        index = 0
        for group in self.groups:
            for name in group.names:
                self._load_state(group.spec, name, state.get(index, {}))
                index += 1

    def _load_state(self, spec: OptimizerSpec, name: str, entry: dict[str, Any]) -> None:
        if name not in self.trained:
            return
        for state in spec.state_names():
            symbol = state_global(state, name)
            value = entry.get(state)
            if value is None:
                value = initial_state(state, numpy_to_torch(self.weights[name]))
            elif tuple(value.shape) != self.weights[symbol].shape:
                raise RduccError(f"state '{state}' of parameter '{name}' has shape {list(value.shape)}, "
                                 f"the program's is {list(self.weights[symbol].shape)}")
            self.weights[symbol] = torch_to_numpy(value.detach().to(numpy_to_torch(self.weights[symbol]).dtype))
            if spec.name == "sgd" and state == "momentum_buffer" and entry.get(state) is not None:
                self._started = True
        if MOMENTUM_STARTED in spec.program_state_names():  # torch.optim's buffer is None before the first step
            started = torch.tensor(float(entry.get("momentum_buffer") is not None))
            self.weights[state_global(MOMENTUM_STARTED, name)] = torch_to_numpy(started)

    def load_parameters(self, tensors: dict[str, torch.Tensor]) -> None:
        """Replace parameters and buffers (a model's `state_dict()`, by the
        program's names). A tied weight under any of its names is the tensor
        the program reads (`named_parameters()` lists it once, by the name
        the program may not read it through)."""
        for name, tensor in tensors.items():
            name = self.prefix + name
            if name in self.weights:
                for held in {name, self.aliases.get(name, name)}:
                    self.weights[held] = torch_to_numpy(tensor.detach())

    @property
    def mlir(self) -> str:
        return self._program.mlir

    def simulate(self):
        """The cost report of one step, from shapes alone."""
        return self._program.simulate()

    def save(self, path: str | Path) -> None:
        """The step's MLIR to `path`, its state (parameters and optimizer state) beside it."""
        self._program.save(path)


def _check_group(number: int, ours: ParamGroup, theirs: dict[str, Any]) -> None:
    expected = torch_group(ours.spec, range(len(ours.names)))
    if len(theirs.get("params", [])) != len(ours.names):
        raise RduccError(f"param group {number} of the state has {len(theirs.get('params', []))} parameters; "
                         f"the program's has {len(ours.names)}")
    for key, value in ours.spec.hyper.items():
        if key == LR:  # program state, loaded
            continue
        given = theirs.get(key, expected.get(key))
        if isinstance(given, torch.Tensor):
            given = given.tolist()
        if isinstance(value, tuple):
            given = tuple(given) if given is not None else given
        if given != value:
            raise RduccError(f"param group {number}: the state's {key} is {given}, the program was compiled "
                             f"with {value}; compile again to change it")


class BucketedTrainingProgram(TrainingProgram):
    """A training step compiled for several shapes (`compile_training(...,
    shapes=...)`): one placed step a bucket, in one module, all reading and
    writing ONE state (parameters, buffers, optimizer state: `weights`,
    `state_dict()`). `step()` runs the bucket whose inputs have exactly the
    batch's shapes; a batch of another shape is one error listing the compiled ones."""

    def __init__(self, buckets: StepBuckets, target: Target, prefix: str = "", loss_scale: float = 1.0,
                 constants: dict[str, Any] | None = None, optimizer: torch.optim.Optimizer | None = None):
        shared = {name: torch_to_numpy(t) for name, t in buckets.weights.items()}
        alone = [module for _, module in bucket_modules(buckets.module)]  # each a whole step again
        programs = [(b.values, Program(module, shared, target, b.result.exported.call_spec.in_spec, None))
                    for b, module in zip(buckets.buckets, alone)]
        super().__init__(buckets.buckets[0].result, target, prefix, loss_scale, constants, optimizer, programs[0][1])
        self.module = buckets.module
        """The module holding every bucket's step (`rducc.shapes.buckets`)."""
        self._buckets = BucketedProgram(buckets.module, programs, shared, target)

    @property
    def buckets(self) -> list[dict[str, int]]:
        """Each bucket's size of each dynamic dim, in compile order."""
        return self._buckets.buckets

    def _program_for(self, batch: tuple, named: dict[str, Any]) -> Program:
        return self._buckets.program_for(*batch, **named)

    @property
    def mlir(self) -> str:
        return self._buckets.mlir

    def simulate(self) -> dict[str, Any]:
        """Each bucket's cost report of one step, by its label (`batch=2 seq=16`), from shapes alone."""
        return self._buckets.simulate()

    def save(self, path: str | Path) -> None:
        """Every bucket's step to `path`, the one shared state beside it."""
        self._buckets.save(path)
