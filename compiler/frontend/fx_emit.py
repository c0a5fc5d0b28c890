"""Inserting a node into an FX graph with the fake value torch would give it.

The frontend's graph rewrites (Python numbers as tensors, mask updates, checks of
data-dependent sizes) each add ATen calls before a node they replace; the new
node takes its fake value from running the op under the graph's fake mode, and
its source location from the node it stands for, so errors and reports still
name the user's line.
"""

from __future__ import annotations

from typing import Any

import torch
from torch.fx import Node

LOCATION_KEYS = ("stack_trace", "nn_module_stack", "source_fn_stack")
"""The node metadata that says where in the user's code a node comes from."""


def emit_node(graph: torch.fx.Graph, mode: Any, anchor: Node, target: Any, *args: Any, **kwargs: Any) -> Node:
    """`target(*args, **kwargs)` inserted before `anchor`, with its fake value
    (computed under `mode`) and `anchor`'s source location."""
    with graph.inserting_before(anchor):
        node = graph.call_function(target, args, kwargs)
    fakes = torch.fx.node.map_arg((args, kwargs), lambda n: n.meta["val"])
    with mode:
        node.meta["val"] = target(*fakes[0], **fakes[1])
    for key in LOCATION_KEYS:
        if key in anchor.meta:
            node.meta[key] = anchor.meta[key]
    return node


class NodeEmitter:
    """`emit_node` bound to one graph and its fake mode: `emit(anchor, target, *args)`."""

    def __init__(self, graph: torch.fx.Graph, mode: Any) -> None:
        self.graph, self.mode = graph, mode

    def __call__(self, anchor: Node, target: Any, *args: Any, **kwargs: Any) -> Node:
        return emit_node(self.graph, self.mode, anchor, target, *args, **kwargs)
