"""A training step as one level-1 program: the joint graph, then the optimizer.

The joint graph (forward and backward, imported with its loss and gradient
results) and the optimizer's update of each parameter (`optimizers.update_program`)
become one `@forward`: the update's ops are appended to the joint graph's function
(phase `optimizer`; traced once per optimizer, dtype and rank, `update_shapes`),
reading the parameters, the optimizer state (new
globals, `optimizer.STATE.PARAMETER`), each param group's learning rate (a
global read, never written: `optimizer.lr.GROUP`) and the gradients the
backward computed. The step then returns the loss first, then the new value of every
buffer the forward updates (batch norm's running statistics), of every
trained parameter and of every optimizer state (`rdu.result_updates`): the
gradients stay inside the program.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import torch
from xdsl.dialects import func
from xdsl.dialects.builtin import ArrayAttr, DictionaryAttr, FunctionType, ModuleOp, NameLoc, NoneAttr, StringAttr
from xdsl.ir import SSAValue

from rducc.dialects.contracts import (
    Phase,
    ResultRole,
    Update,
    arg_attrs,
    global_of,
    result_roles,
    result_updates,
    set_result_roles,
    set_result_updates,
    weight_arg,
)
from rducc.dialects.program import entry_function
from rducc.dialects.saved import set_memory_class
from rducc.dialects.tier import GlobalOp
from rducc.frontend.importer import decompose, import_into
from rducc.frontend.types import tensor_type_of
from rducc.training.clipping import clip_program
from rducc.training.optimizers import LR, Trained, lr_global, lr_value, state_global
from rducc.training.scaling import GROWTH_TRACKER, SCALE, DynamicScale, scale_update_program
from rducc.training.update_shapes import decomposed_update


def _state_global(module: ModuleOp, forward: func.FuncOp, symbol: str, tensor: torch.Tensor,
                  attrs: list[DictionaryAttr]) -> SSAValue:
    """A new global for optimizer state `symbol` and the `@forward` argument that reads it
    (its bytes the report's optimizer state, read-only ones such as the learning rate too)."""
    value_type = tensor_type_of(tensor, what=f"optimizer state '{symbol}'")
    global_ = GlobalOp(symbol, value_type, kind="buffer")
    set_memory_class(global_, "optimizer state")
    module.body.block.insert_op_before(global_, forward)
    block = forward.body.block
    attrs.append(DictionaryAttr(weight_arg(symbol)))
    return block.insert_arg(value_type, len(block.args))


def _user_names(ep: torch.export.ExportedProgram, kind: str) -> list[str]:
    specs = ep.graph_signature.input_specs if kind == "USER_INPUT" else ep.graph_signature.output_specs
    return [s.arg.name for s in specs if s.kind.name == kind]


class _Times(torch.nn.Module):
    def __init__(self, factor: float):
        super().__init__()
        self.factor = factor

    def forward(self, value: torch.Tensor) -> torch.Tensor:
        return value * self.factor


def _append_times(block, value: SSAValue, example: torch.Tensor, factor: float) -> SSAValue:
    """`value * factor`, appended to `block` (phase optimizer)."""
    program = decompose(torch.export.export(_Times(factor), (torch.zeros_like(example),), strict=False))
    name = _user_names(program, "USER_INPUT")[0]
    values = import_into(program, block, {name: value}, Phase.OPTIMIZER)
    return values[_user_names(program, "USER_OUTPUT")[0]]


def _append_scale_update(module: ModuleOp, forward: func.FuncOp, settings: DynamicScale, loss: SSAValue,
                         gradients: list[tuple[SSAValue, torch.Tensor]], weights: Mapping[str | None, SSAValue],
                         attrs: list[DictionaryAttr]) -> tuple[dict[str, SSAValue], dict[str, SSAValue]]:
    """The found_inf check and the scale's update (`scaling.ScaleUpdate`), on
    the loss and `gradients` (value, example); returns its user outputs
    (`loss`, `inverse`, `found_inf`) and its updated buffers (`scale`, `tracker`)."""
    if SCALE not in weights:
        raise AssertionError(f"dynamic loss scaling needs the loss scaled by the global '{SCALE}'")
    examples = [example for _, example in gradients]
    update = decompose(scale_update_program(settings, torch.zeros(()), examples))
    tracker = _state_global(module, forward, GROWTH_TRACKER, torch.zeros(()), attrs)
    inputs = _user_names(update, "USER_INPUT")
    bindings = {"scale": weights[SCALE], "tracker": tracker, inputs[0]: loss}
    bindings |= {name: value for name, (value, _) in zip(inputs[1:], gradients)}
    values = import_into(update, forward.body.block, bindings, Phase.OPTIMIZER)
    outputs = dict(zip(("loss", "inverse", "found_inf"), (values[n] for n in _user_names(update, "USER_OUTPUT"))))
    return outputs, {SCALE: values["scale"], GROWTH_TRACKER: values["tracker"]}


def _append_clip(block, gradients: dict[str, SSAValue], names: Sequence[str], parameters: Mapping[str, torch.Tensor],
                 clip: tuple[float, float], unscale: float) -> dict[str, SSAValue]:
    """The gradients of `names`, unscaled and clipped together (`clipping.GradientClip`), appended to `block`."""
    program = decompose(clip_program(clip[0], clip[1], [parameters[name] for name in names], unscale))
    inputs = _user_names(program, "USER_INPUT")
    values = import_into(program, block, {i: gradients[n] for i, n in zip(inputs, names)}, Phase.OPTIMIZER)
    return dict(zip(names, (values[o] for o in _user_names(program, "USER_OUTPUT"))))


def append_optimizer(
    module: ModuleOp, groups: Sequence[Trained], parameters: dict[str, torch.Tensor], unscale: float = 1.0,
    dynamic: DynamicScale | None = None, clip: tuple[float, float] | None = None,
) -> dict[str, torch.Tensor]:
    """Append the optimizer's update of every parameter in `groups` (torch.optim's
    arithmetic, `optimizers.update_program`) to the joint graph's `@forward` in
    `module` (see the module docstring). Returns the optimizer state's globals
    with the values the update starts from. `unscale` multiplies each gradient
    first (the inverse of a static loss scale); `dynamic`: dynamic loss
    scaling (`scaling`: the loss was multiplied by the global `grad_scale`);
    `clip`: (max_norm, norm_type) of clip_grad_norm_ over every trained
    parameter's gradient before the updates (`clipping`)."""
    forward = entry_function(module)
    block = forward.body.block
    returned = block.last_op
    assert isinstance(returned, func.ReturnOp)
    results = list(returned.arguments)
    roles = result_roles(forward) or [None] * len(results)
    updates = result_updates(forward) or [None] * len(results)
    gradients = {role.name: value for role, value in zip(roles, results)
                 if role is not None and role.kind == "gradient" and role.of == "parameter"}
    weights = {global_of(attrs): arg for arg, attrs in zip(block.args, arg_attrs(forward)) if global_of(attrs)}
    attrs = list(forward.arg_attrs.data) if forward.arg_attrs else [DictionaryAttr({}) for _ in block.args]
    returned.detach()
    returned.erase()

    outputs = [value for value, role in zip(results, roles) if role is None or role.kind == "loss"]
    new_updates: list[Update | None] = [u for u, role in zip(updates, roles) if role is None or role.kind == "loss"]
    new_roles: list[ResultRole | None] = [role for role in roles if role is None or role.kind == "loss"]
    initial: dict[str, torch.Tensor] = {}
    state_outputs: list[tuple[SSAValue, str]] = []
    scaling: dict[str, SSAValue] = {}
    if dynamic is not None:
        covered = [(gradients[n], parameters[n]) for group in groups for n in group.names]
        scaling, updated = _append_scale_update(module, forward, dynamic, outputs[0], covered, weights, attrs)
        outputs[0] = scaling["loss"]
        initial[GROWTH_TRACKER] = torch.zeros(())
        state_outputs += [(value, symbol) for symbol, value in updated.items()]
    elif unscale != 1.0:  # static loss scaling: the step returns the unscaled loss
        outputs[0] = _append_times(block, outputs[0], torch.zeros(()), unscale)
    if clip is not None:
        if dynamic is not None:
            raise AssertionError("clipping under dynamic loss scaling is refused before the step is built")
        covered_names = [n for group in groups for n in group.names]
        gradients |= _append_clip(block, gradients, covered_names, parameters, clip, unscale)
        unscale = 1.0  # the clipped gradients are unscaled already
    for group in groups:
        lr = lr_global(group.group)
        initial[lr] = lr_value(group.spec.hyper["lr"])
        lr_arg = _state_global(module, forward, lr, initial[lr], attrs)  # read by every update, never written
        for name in group.names:
            update = decomposed_update(group.spec, parameters[name], None if dynamic else unscale)
            bindings: dict[str, SSAValue] = {"p0": weights[name], LR: lr_arg}
            for state in group.spec.program_state_names():
                symbol = state_global(state, name)
                initial[symbol] = update.state_dict[f"s0_{state}"]
                bindings[f"s0_{state}"] = _state_global(module, forward, symbol, initial[symbol], attrs)
            gradient_input, *scale_inputs = _user_names(update, "USER_INPUT")
            bindings[gradient_input] = gradients[name]
            if dynamic is not None:
                bindings |= dict(zip(scale_inputs, (scaling["inverse"], scaling["found_inf"])))
            new_values = import_into(update, block, bindings, Phase.OPTIMIZER)
            outputs.append(new_values["p0"])
            new_updates.append(Update("buffer", name))
            state_outputs += [(new_values[f"s0_{state}"], state_global(state, name))
                              for state in group.spec.program_state_names()]
    outputs += [value for value, _ in state_outputs]
    new_updates += [Update("buffer", symbol) for _, symbol in state_outputs]
    new_roles += [None] * (len(outputs) - len(new_roles))
    ret = func.ReturnOp(*outputs)
    ret.location = NameLoc(StringAttr("output"), NoneAttr())
    block.add_op(ret)
    forward.function_type = FunctionType.from_lists([a.type for a in block.args], [v.type for v in outputs])
    forward.arg_attrs = ArrayAttr(attrs)
    set_result_updates(forward, new_updates)
    set_result_roles(forward, new_roles)
    return initial
