"""The optimizer's update is traced once per (optimizer, dtype, rank) and reused
for every parameter shape of that rank (`rducc.training.update_shapes`): the
reused program is the one a trace at that shape gives, op for op."""

from __future__ import annotations

import pytest
import torch

from rducc.frontend.importer import decompose
from rducc.training import update_shapes
from rducc.training.optimizers import named_optimizer, update_program


def _ops(program: torch.export.ExportedProgram) -> list[tuple]:
    """Each node's op, arguments and value (shape, dtype): the program as the importer reads it."""
    def value(node: torch.fx.Node) -> tuple:
        val = node.meta.get("val")
        return (tuple(val.shape), val.dtype) if isinstance(val, torch.Tensor) else (None, None)

    return [(node.op, str(node.target), str(node.args), value(node)) for node in program.graph.nodes
            if node.op != "output"]


@pytest.mark.parametrize(("name", "options", "unscale"), [
    ("adamw", {"weight_decay": 0.1}, 1.0),
    ("sgd", {"momentum": 0.9, "dampening": 0.1}, None),  # dynamic loss scaling: the skippable update
])
def test_reused_update_is_the_traced_one(name, options, unscale):
    spec = named_optimizer(name, options)
    for shape in [(6, 4)]:
        parameter = torch.zeros(shape)
        reused = update_shapes.decomposed_update(spec, parameter, unscale)
        traced = decompose(update_program(spec, parameter, unscale))
        assert _ops(reused) == _ops(traced), shape
        for state, tensor in reused.state_dict.items():
            assert tensor.shape == traced.state_dict[state].shape, state


@pytest.mark.parametrize(("name", "options"), [("adamw", {"lr": 3e-4}), ("sgd", {"lr": 0.1, "momentum": 0.9})])
def test_one_trace_per_rank(name, options):
    """SGD too: its `addcmul(..., value=-1)` names no shape (a keyword's number was read as a list of sizes)."""
    spec = named_optimizer(name, options)
    update_shapes.TRACES.update(traced=0, reshaped=0)
    shapes = [(16, 8), (32, 16), (8,), (16,), (32, 8)]
    for shape in shapes:
        update_shapes.decomposed_update(spec, torch.zeros(shape, dtype=torch.bfloat16))
    assert update_shapes.TRACES == {"traced": 2, "reshaped": len(shapes)}
