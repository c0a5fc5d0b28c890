"""Outputs in a dtype or layout the program holds otherwise, converted at the program's edge.

rducc's tensors are dense and its integers signed (as the chip's): a decomposed program's
user output that is

- uint64 (`hash_tensor`'s result, `x.view(torch.uint64)`: a `view.dtype` of int64 bits) is
  returned as those int64 bits, and the caller reads them as uint64;
- sparse (`to_sparse`, `to_sparse_csr`/`_csc`/`_bsr`/`_bsc`) is returned dense, and the caller
  converts it with torch's own `Tensor.to_sparse` and the op's arguments, so its indices are
  torch's (coalesced, in row-major order) and its count of stored values is the data's.

`lower_output_edges` rewrites the graph (in place) and records each such output
(`OutputEdge`, by position among the user outputs); `rducc.Program` and `rducc-run` convert
them, as they do complex outputs. A uint64 or sparse value read inside the program is
refused: one error naming the op and its source line.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator, Mapping
from typing import Any

import torch
from torch.export import ExportedProgram
from torch.export.graph_signature import TensorArgument

from rducc.dialects.contracts import OutputEdge
from rducc.errors import RduccError
from rducc.frontend.locations import describe_location

aten = torch.ops.aten
Node = torch.fx.Node
OUTPUT_EDGES = "rducc_output_edges"
"""Key of the graph module's meta: {user output position: OutputEdge}."""
_SPARSE_LAYOUTS = {torch.sparse_coo: "sparse_coo", torch.sparse_csr: "sparse_csr", torch.sparse_csc: "sparse_csc",
                   torch.sparse_bsr: "sparse_bsr", torch.sparse_bsc: "sparse_bsc"}
_SPARSE_OPS = {
    str(op): layout for name, layout in (("to_sparse", None), ("to_sparse_csr", torch.sparse_csr),
                                    ("to_sparse_csc", torch.sparse_csc), ("to_sparse_bsr", torch.sparse_bsr),
                                    ("to_sparse_bsc", torch.sparse_bsc))
    for packet in (getattr(aten, name), getattr(aten, "_" + name)) for op in map(packet.__getattr__, packet.overloads())
}
"""The dense-to-sparse conversions (by name: a copied graph's targets are copies of the overloads), with the
layout each makes (None: its `layout` argument, COO by default)."""


def _sparse_op(node: Node) -> bool:
    return str(node.target) in _SPARSE_OPS


def _value(node: Any) -> Any:
    return node.meta.get("val") if isinstance(node, Node) else None


def _at_edge(node: Node) -> bool:
    """Whether a node's value is one the program holds only at its outputs (a sparse conversion is
    known by its op: a loaded program's fake values are all strided)."""
    value = _value(node)
    return _sparse_op(node) or (isinstance(value, torch.Tensor) and (
        value.layout != torch.strided or value.dtype == torch.uint64))


def has_output_edges(ep: ExportedProgram) -> bool:
    return any(_at_edge(node) for node in ep.graph.nodes)


def _sparse_edge(node: Node) -> OutputEdge:
    """The `Tensor.to_sparse` arguments that make what `node` (one of `_SPARSE_OPS`) makes."""
    schema = node.target._schema  # type: ignore[union-attr]
    names = [a.name for a in schema.arguments]
    bound: dict[str, Any] = dict(zip(names, node.args)) | dict(node.kwargs)
    layout = _SPARSE_OPS[str(node.target)] or bound.get("layout") or torch.sparse_coo
    block = bound.get("blocksize")
    return OutputEdge(layout=_SPARSE_LAYOUTS[layout], sparse_dim=bound.get("sparse_dim"),
                      dense_dim=bound.get("dense_dim"), blocksize=tuple(block) if block is not None else None)


def _edge_of(node: Node) -> tuple[Node, OutputEdge] | None:
    """(the dense int64 or strided value the program returns instead, the edge's conversion), or None."""
    source = node.args[0] if node.args else None
    if _sparse_op(node) and isinstance(source, Node) and not _at_edge(source):
        return source, _sparse_edge(node)
    if node.target == aten.view.dtype and isinstance(source, Node) and _value(source).dtype == torch.int64 \
            and _value(node).dtype == torch.uint64:
        return source, OutputEdge(dtype="uint64")
    return None


def _is_sparse(value: Any) -> bool:
    return isinstance(value, torch.Tensor) and value.layout != torch.strided


def _refuse(node: Node, reader: Node | None) -> RduccError:
    what = "a uint64 tensor" if _value(node).dtype == torch.uint64 else "a sparse tensor"
    where = f"read by {reader.target} inside the program" if reader is not None and reader.op != "output" \
        else "returned in a form rducc cannot convert at the edge"
    op = node.meta.get("original_aten") or node.target  # the op the user called, before decomposition
    return RduccError(
        f"{describe_location(node)}: {op} makes {what}, {where}; rducc holds tensors dense and signed "
        "inside a program and converts a sparse or uint64 result only where the program returns it"
    )


def _returned(ep: ExportedProgram) -> Iterator[tuple[int, int, Node]]:
    """(index among the outputs, position among the user outputs, node) of each user output node."""
    output = next(n for n in ep.graph.nodes if n.op == "output")
    user = 0
    for index, (spec, value) in enumerate(zip(ep.graph_signature.output_specs, output.args[0])):
        if spec.kind.name == "USER_OUTPUT":
            if isinstance(value, Node):
                yield index, user, value
            user += 1


def _return_instead(ep: ExportedProgram, index: int, node: Node) -> None:
    output = next(n for n in ep.graph.nodes if n.op == "output")
    container: Any = output.args[0]
    values = list(container)
    values[index] = node
    output.args = (type(container)(values), *output.args[1:])
    ep.graph_signature.output_specs[index].arg = TensorArgument(name=node.name)


def _lowered(ep: ExportedProgram, edges: dict[int, OutputEdge]) -> None:
    """Rewrite each user output `_edge_of` knows; erase what is left unused; refuse any other."""
    graph = ep.graph
    for index, user, node in list(_returned(ep)):
        found = _edge_of(node) if _at_edge(node) else None
        if found is not None:
            _return_instead(ep, index, found[0])
            edges[user] = found[1]
    for node in reversed(list(graph.nodes)):
        if node.op == "call_function" and _at_edge(node) and not node.users:
            graph.erase_node(node)
    for node in graph.nodes:  # a uint64 value of another kind: the importer's dtype error
        if node.op == "call_function" and _at_edge(node) and (_sparse_op(node) or _is_sparse(_value(node))
                                                               or _edge_of(node) is not None):
            raise _refuse(node, next(iter(node.users), None))
    graph.lint()
    ep.graph_module.recompile()


def without_sparse_outputs(ep: ExportedProgram) -> tuple[ExportedProgram, dict[int, OutputEdge]]:
    """Before decomposing (torch cannot decompose a sparse conversion of a loaded program): a copy of
    `ep` that returns each sparse user output dense, and those outputs' edges; `ep` itself when none."""
    if not any(_sparse_op(node) or _is_sparse(_value(node)) for node in ep.graph.nodes):
        return ep, {}
    ep = copy.deepcopy(ep)
    edges: dict[int, OutputEdge] = {}
    _lowered(ep, edges)
    return ep, edges


def lower_output_edges(ep: ExportedProgram, edges: Mapping[int, OutputEdge]) -> None:
    """After decomposing: return each uint64 user output as its int64 bits; record those and `edges`
    (`without_sparse_outputs`'s) on `ep`."""
    found = dict(edges)
    if has_output_edges(ep):
        _lowered(ep, found)
    ep.graph_module.meta[OUTPUT_EDGES] = found


def lowered_output_edges(ep: ExportedProgram) -> dict[int, OutputEdge]:
    """The user outputs (by position) `lower_output_edges` left to the edge."""
    return ep.graph_module.meta.get(OUTPUT_EDGES, {})
