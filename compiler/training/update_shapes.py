"""The optimizer's update of a parameter, traced once per (optimizer, dtype,
rank) and reused for every shape of that rank.

torch.optim's single-tensor update (`optimizers.update_program`) is the same
elementwise program for every parameter: only the shapes on its values differ.
Exporting and decomposing it costs about a second a trace, and a step traced it
once per distinct parameter shape (a small UNet: a hundred traces). Here the
update is traced and decomposed once for a prototype of the parameter's rank
(dims 2, 3, 5, ...: no dim of 0 or 1 for export to specialize on), and for each
other shape its graph is copied and its values' shapes propagated again with
fake tensors of the parameter's shape (`torch.fx`'s `FakeTensorProp`), which
takes milliseconds. A graph that names a shape in an op's arguments (a view, an
expand: not elementwise after all) is traced for the shape itself, as before.
"""

from __future__ import annotations

import torch
from torch._subclasses.fake_tensor import FakeTensor

from rducc.frontend.importer import decompose
from rducc.training.optimizers import LR, OptimizerSpec, initial_state, update_program

PROTOTYPE_DIMS = (2, 3, 5, 7, 11, 13, 17, 19)
"""The dims of the prototype a rank's update is traced at (distinct, none 0 or 1)."""

_PROTOTYPES: dict[tuple[OptimizerSpec, int, torch.dtype, str, float | None], torch.export.ExportedProgram] = {}

TRACES = {"traced": 0, "reshaped": 0}
"""How many updates were traced and how many reused a traced one (for the compile-time bench)."""


def decomposed_update(spec: OptimizerSpec, parameter: torch.Tensor, unscale: float | None = 1.0
                      ) -> torch.export.ExportedProgram:
    """The decomposed update of `parameter` (`update_program`'s, for its shape
    and dtype), from its rank's prototype where the update is elementwise."""
    rank = parameter.dim()
    shape = tuple(parameter.shape)
    if rank == 0 or rank > len(PROTOTYPE_DIMS) or 0 in shape:
        return _traced(spec, parameter, unscale)
    key = (spec, rank, parameter.dtype, parameter.device.type, unscale)
    prototype_shape = PROTOTYPE_DIMS[:rank]
    if key not in _PROTOTYPES:
        example = torch.zeros(prototype_shape, dtype=parameter.dtype, device=parameter.device)
        _PROTOTYPES[key] = _traced(spec, example, unscale)
    prototype = _PROTOTYPES[key]
    if shape == prototype_shape:
        return prototype
    reshaped = _with_shape(prototype, prototype_shape, spec, parameter)
    if reshaped is None:
        return _traced(spec, parameter, unscale)
    TRACES["reshaped"] += 1
    return reshaped


def _traced(spec: OptimizerSpec, parameter: torch.Tensor, unscale: float | None) -> torch.export.ExportedProgram:
    TRACES["traced"] += 1
    return decompose(update_program(spec, parameter, unscale))


def _names_a_shape(graph: torch.fx.Graph) -> bool:
    """Whether an op of `graph` takes a list of ints (a shape, dims): then it is
    not the same program at another shape."""
    def shaped(value: object) -> bool:
        if isinstance(value, list | tuple):
            return bool(value) and all(isinstance(v, int) for v in value) or any(shaped(v) for v in value)
        return False

    return any(shaped(value) for node in graph.nodes if node.op == "call_function"
               for value in (*node.args, *node.kwargs.values()))  # each argument (addcmul's value=-1 is no shape)


def _with_shape(prototype: torch.export.ExportedProgram, prototype_shape: tuple[int, ...], spec: OptimizerSpec,
                parameter: torch.Tensor) -> torch.export.ExportedProgram | None:
    """`prototype` with every value of the prototype's shape given `parameter`'s
    (a copy; None where the update is not elementwise: an op names a shape, or
    a value has a shape other than the parameter's or a scalar's)."""
    if _names_a_shape(prototype.graph):
        return None
    values = [node.meta.get("val") for node in prototype.graph.nodes if node.op != "output"
              and (node.users or node.meta.get("val") is not None)]  # not a check's (no value, no reader)
    if any(not isinstance(v, torch.Tensor) or tuple(v.shape) not in ((), prototype_shape) for v in values):
        return None
    graph = torch.fx.Graph()
    graph.output(graph.graph_copy(prototype.graph, {}))
    shape = tuple(parameter.shape)
    made: dict[tuple[torch.dtype, torch.device], torch.Tensor] = {}
    mode = next(v.fake_mode for v in values if isinstance(v, FakeTensor))  # the program's own
    with mode:
        for node in graph.nodes:
            value = node.meta.get("val")
            if isinstance(value, torch.Tensor) and tuple(value.shape) == prototype_shape:
                key = (value.dtype, value.device)  # an elementwise op of the parameter's shape: its shape
                if key not in made:
                    made[key] = torch.empty(shape, dtype=value.dtype, device=value.device)
                node.meta = {**node.meta, "val": made[key]}
    module = torch.fx.GraphModule(prototype.graph_module, graph)
    state = {"p0": torch.zeros_like(parameter, memory_format=torch.contiguous_format)}
    state |= {name: initial_state(name.removeprefix("s0_"), parameter)
              for name in prototype.state_dict if name.startswith("s0_")}
    state[LR] = prototype.state_dict[LR]  # the group's learning rate: a scalar, whatever the shape
    return prototype._update(module, prototype.graph_signature, state_dict=state)


__all__ = ["PROTOTYPE_DIMS", "TRACES", "decomposed_update"]
