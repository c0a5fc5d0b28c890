"""`torch.compile(model, backend="rducc")`: the TorchDynamo backend.

Registered through torch's `torch_dynamo_backends` entry point. Dynamo hands
over each captured FX graph with example inputs; rducc exports it, compiles
it and returns the Program, which runs the placed program in rducc's runtime.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import torch


def rducc_backend(graph: torch.fx.GraphModule, example_inputs: Sequence[Any], **options: Any) -> Callable[..., Any]:
    """Compile one Dynamo graph with rducc (options: target, opt_level)."""
    from rducc.program import compile as rducc_compile

    inputs = tuple(example_inputs)
    program = rducc_compile(
        graph,
        inputs,
        target=options.get("target", "sn40l"),
        opt_level=int(options.get("opt_level", 2)),
    )

    def run(*args: Any) -> Any:
        return program(*args)

    return run
