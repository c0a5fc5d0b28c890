"""A training step as one level-1 program: the joint graph, then the optimizer.

The joint graph (forward and backward, imported with its loss and gradient
results) and the optimizer's update (`optimizers.update_program`) become one
`@forward`: the update's ops are appended to the joint graph's function
(phase `optimizer`), reading the parameters and the optimizer state (new
globals, `optimizer.STATE.PARAMETER`) and the gradients the backward
computed. The step then returns the loss first, then the new value of every
buffer the forward updates (batch norm's running statistics), of every
trained parameter and of every optimizer state (`rdu.result_updates`): the
gradients stay inside the program.
"""

from __future__ import annotations

from collections.abc import Sequence

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
from rducc.dialects.tier import GlobalOp
from rducc.dialects.program import entry_function
from rducc.frontend.importer import decompose, import_into
from rducc.frontend.types import tensor_type_of
from rducc.training.optimizers import Trained, state_global


def _update_bindings(update: torch.export.ExportedProgram) -> tuple[dict[str, str], list[str]]:
    """The update program's buffers by target (`p0`, `s0_exp_avg`) and its gradient inputs' names."""
    buffers = {str(s.target): str(s.target) for s in update.graph_signature.input_specs if s.target is not None}
    gradients = [s.arg.name for s in update.graph_signature.input_specs if s.kind.name == "USER_INPUT"]  # type: ignore[union-attr]
    return buffers, gradients


def append_optimizer(
    module: ModuleOp, update: torch.export.ExportedProgram, groups: Sequence[Trained]
) -> dict[str, torch.Tensor]:
    """Append the optimizer's update (`update`, not yet decomposed) to the joint
    graph's `@forward` in `module` (see the module docstring). Returns the
    optimizer state's globals with the values the update program starts from."""
    update = decompose(update)
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
    names = [name for group in groups for name in group.names]
    states = [(i, state, name) for group in groups for name in group.names for state in group.spec.state_names()
              for i in [names.index(name)]]

    bindings: dict[str, SSAValue] = {}
    for index, name in enumerate(names):
        bindings[f"p{index}"] = weights[name]
    initial: dict[str, torch.Tensor] = {}
    attrs = list(forward.arg_attrs.data) if forward.arg_attrs else [DictionaryAttr({}) for _ in block.args]
    for index, state, name in states:
        tensor = update.state_dict[f"s{index}_{state}"]
        symbol = state_global(state, name)
        value_type = tensor_type_of(tensor, what=f"optimizer state '{symbol}'")
        module.body.block.insert_op_before(GlobalOp(symbol, value_type, kind="buffer"), forward)
        bindings[f"s{index}_{state}"] = block.insert_arg(value_type, len(block.args))
        attrs.append(DictionaryAttr(weight_arg(symbol)))
        initial[symbol] = tensor
    _, gradient_inputs = _update_bindings(update)
    for index, input_name in enumerate(gradient_inputs):
        bindings[input_name] = gradients[names[index]]

    returned.detach()
    returned.erase()
    new_values = import_into(update, block, bindings, Phase.OPTIMIZER)

    kept = [(value, role, change) for value, role, change in zip(results, roles, updates)
            if role is None or role.kind == "loss"]
    outputs = [value for value, _, _ in kept]
    new_roles: list[ResultRole | None] = [role for _, role, _ in kept]
    new_updates: list[Update | None] = [change for _, _, change in kept]
    for index, name in enumerate(names):
        outputs.append(new_values[f"p{index}"])
        new_roles.append(None)
        new_updates.append(Update("buffer", name))
    for index, state, name in states:
        outputs.append(new_values[f"s{index}_{state}"])
        new_roles.append(None)
        new_updates.append(Update("buffer", state_global(state, name)))
    ret = func.ReturnOp(*outputs)
    ret.location = NameLoc(StringAttr("output"), NoneAttr())
    block.add_op(ret)
    forward.function_type = FunctionType.from_lists([a.type for a in block.args], [v.type for v in outputs])
    forward.arg_attrs = ArrayAttr(attrs)
    set_result_updates(forward, new_updates)
    set_result_roles(forward, new_roles)
    return initial
