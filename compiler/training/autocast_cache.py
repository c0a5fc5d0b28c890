"""Autocast's weight cache in a training step's autocast regions.

Eager autocast casts a trained parameter (a float32 leaf that requires grad)
to the compute dtype once per autocast region and reuses that cast for every
op that wants it (`cached_cast`, ATen's autocast_mode.cpp): a weight shared
by several layers, or a layer applied several times, is one bf16 tensor, so
autograd sums its uses' gradients in bf16 and converts the sum to float32
once. Tracing disables that cache (make_fx's `disable_autocast_cache`), so
the joint graph casts the parameter once per use and sums the gradients in
float32: another rounding than eager autocast's (a layer applied four times,
held-out round 13's `adaptive_depth`: its weight gradient 1e-3 off eager's).

`shared_autocast_casts` puts the cache back into the exported program before
the joint graph is traced: in each autocast region, a trained parameter that
autocast casts more than once (for two or more ops, or several times within
one: `nn.RNN`'s op casts its weights at every step) is cast once,
explicitly, and those ops read the cast (autocast leaves an input already in
its dtype alone). Which ops autocast casts it for, and how often, is asked of
autocast itself, each op run once on the region's fake values
(`_casting_uses`), not a list restated here.

`shared_autocast_casts_in_graph` does the same for the torch.compile
backend, on the graph Dynamo hands over (torch-level calls, before AOT
autograd traces its joint graph with the same cache off): the autocast
state each node runs under is the one at compile time (an autocast the
user entered around the compiled call) with the graph's own
`_enter_autocast` / `_exit_autocast` regions on top; casts are shared
within one outermost region, as eager's cache is (it is cleared when the
outermost autocast exits).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any, NamedTuple

import torch
from torch.utils._python_dispatch import TorchDispatchMode

_AUTOCAST = torch.ops.higher_order.wrap_with_autocast
_TO_COPY = torch.ops.aten._to_copy.default


def shared_autocast_casts(ep: torch.export.ExportedProgram) -> torch.export.ExportedProgram:
    """`ep` (a copy, changed in place) with autocast's weight cache written
    out in each enabled autocast region (the module docstring)."""
    for node in ep.graph.nodes:
        if node.target is _AUTOCAST and node.args[2] and isinstance(node.args[1], torch.dtype):
            device, dtype, body = str(node.args[0]), node.args[1], getattr(ep.graph_module, node.args[4].target)
            if _share_casts(body, device, dtype):
                body.recompile()
    return ep


def _share_casts(body: torch.fx.GraphModule, device: str, dtype: torch.dtype) -> bool:
    """Cast each trained parameter of `body` that autocast casts more than
    once (for several ops, or several times in one) once, those ops reading
    the cast; whether anything changed."""
    anchor = [n for n in body.graph.nodes if n.op == "placeholder"][-1]  # the casts follow the inputs, in order
    for parameter in _trained_parameters(body):
        uses = _casting_uses(parameter, device, dtype)
        if sum(uses.values()) < 2:
            continue
        with body.graph.inserting_after(anchor):
            anchor = body.graph.call_function(_TO_COPY, (parameter,), {"dtype": dtype})
        anchor.meta["val"] = _cast_value(parameter.meta["val"], dtype)
        for use in uses:
            use.replace_input_with(parameter, anchor)
    return anchor.op != "placeholder"


def _trained_parameters(body: torch.fx.GraphModule) -> list[torch.fx.Node]:
    """The region's float32 inputs that require grad: the leaves autocast caches."""
    return [node for node in body.graph.nodes if node.op == "placeholder"
            and isinstance(value := node.meta.get("val"), torch.Tensor)
            and value.requires_grad and value.dtype == torch.float32]


def _casting_uses(parameter: torch.fx.Node, device: str, dtype: torch.dtype) -> dict[torch.fx.Node, int]:
    """The ops reading `parameter` for which autocast casts it to `dtype`, with
    how many times each casts it (an `nn.RNN` op casts its weights once per
    step): each run on its inputs' fake values under autocast, watching."""
    found = {}
    for user in parameter.users:
        if isinstance(user.target, torch._ops.OpOverload):
            casts = _casts_made(user, "val", parameter.meta["val"], device, dtype)
            if casts:
                found[user] = casts
    return found


def _casts_made(node: torch.fx.Node, key: str, value: torch.Tensor, device: str, dtype: torch.dtype) -> int:
    """How many times autocast to `dtype` on `device` casts `value` when
    `node` (a call_function or call_method) runs on its inputs' fake values
    (`node.meta[key]`); 0 for a node that does not run on them alone."""
    args, kwargs = torch.fx.node.map_arg((node.args, node.kwargs), lambda n: n.meta.get(key))
    if node.op == "call_method":
        call, args = getattr(args[0], str(node.target)), args[1:]
    elif callable(node.target):
        call = node.target
    else:
        return 0
    with _watching_casts(value, dtype) as casts, _autocast_without_cache(device, dtype), torch.no_grad():
        try:
            call(*args, **kwargs)
        except Exception:  # an op that does not run on its fake values alone: not shared
            return 0
    return len(casts)


class _Region(NamedTuple):
    """The autocast a node of a Dynamo graph runs under: `scope` names the
    outermost region (one cache), None where autocast is off."""

    scope: object
    device: str
    dtype: torch.dtype


def shared_autocast_casts_in_graph(graph: torch.fx.GraphModule) -> torch.fx.GraphModule:
    """`graph` (a Dynamo graph, changed in place) with autocast's weight cache
    written out: in each outermost autocast region, a trained float32
    parameter autocast casts more than once is cast once, explicitly, before
    its first such use, and those uses read the cast (the module docstring)."""
    regions = _regions(graph)
    changed = False
    for parameter in [n for n in graph.graph.nodes if n.op == "placeholder" and _trained(n.meta.get("example_value"))]:
        casts_by_region: dict[_Region, dict[torch.fx.Node, int]] = {}
        for user in parameter.users:
            region = regions.get(user)
            if region is not None and user.op in ("call_function", "call_method"):
                casts = _casts_made(user, "example_value", parameter.meta["example_value"], region.device,
                                    region.dtype)
                if casts:
                    casts_by_region.setdefault(region, {})[user] = casts
        for region, uses in casts_by_region.items():
            if sum(uses.values()) > 1:
                _read_one_cast(graph.graph, parameter, sorted(uses, key=_position(graph.graph)), region.dtype)
                changed = True
    if changed:
        graph.recompile()
    return graph


def _trained(value: Any) -> bool:
    """A float32 tensor that requires grad: a leaf autocast caches."""
    return isinstance(value, torch.Tensor) and value.requires_grad and value.dtype == torch.float32


def _regions(graph: torch.fx.GraphModule) -> dict[torch.fx.Node, _Region]:
    """The autocast each node runs under where one is on (and its cache): the
    compile-time state (`torch.is_autocast_enabled`), with the graph's
    `_enter_autocast` / `_exit_autocast` calls pushed and popped over it."""
    ambient: list[tuple[_Region | None, bool]] = [
        (_Region("ambient", device, torch.get_autocast_dtype(device)), torch.is_autocast_cache_enabled())
        for device in ("cpu", "cuda") if torch.is_autocast_enabled(device)]
    stack = ambient[:1]
    found: dict[torch.fx.Node, _Region] = {}
    for node in graph.graph.nodes:
        if node.target is torch.amp.autocast_mode._enter_autocast:
            device, dtype, enabled, cache = (list(node.args) + [None] * 4)[:4]
            scope = stack[0][0].scope if stack and stack[0][0] is not None else node
            on = enabled is not False and isinstance(dtype, torch.dtype)
            stack.append((_Region(scope, str(device), dtype) if on else None,
                          torch.is_autocast_cache_enabled() if cache is None else bool(cache)))
        elif node.target is torch.amp.autocast_mode._exit_autocast and stack:
            stack.pop()
        elif stack and stack[-1][0] is not None and stack[-1][1]:
            found[node] = stack[-1][0]
    return found


def _position(graph: torch.fx.Graph) -> Callable[[torch.fx.Node], int]:
    """A sort key: each node's place in `graph`."""
    order = {node: index for index, node in enumerate(graph.nodes)}
    return order.__getitem__


def _read_one_cast(graph: torch.fx.Graph, parameter: torch.fx.Node, users: list[torch.fx.Node],
                   dtype: torch.dtype) -> None:
    """One cast of `parameter` to `dtype` before the first of `users`, which read it."""
    with graph.inserting_before(users[0]):
        cast = graph.call_function(_TO_COPY, (parameter,), {"dtype": dtype})
    cast.meta["example_value"] = _cast_value(parameter.meta["example_value"], dtype)
    for user in users:
        user.replace_input_with(parameter, cast)


@contextlib.contextmanager
def _autocast_without_cache(device: str, dtype: torch.dtype) -> Iterator[None]:
    """Autocast to `dtype` on `device`, its cache off (each cast seen)."""
    enabled = torch.is_autocast_cache_enabled()
    torch.set_autocast_cache_enabled(False)
    try:
        with torch.autocast(device, dtype=dtype):
            yield
    finally:
        torch.set_autocast_cache_enabled(enabled)


class _CastWatch(TorchDispatchMode):
    """Records each cast of one tensor to one dtype while active."""

    def __init__(self, value: torch.Tensor, dtype: torch.dtype) -> None:
        super().__init__()
        self.value, self.dtype, self.casts = value, dtype, list[torch.Tensor]()

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        kwargs = kwargs or {}
        if func is _TO_COPY and args and args[0] is self.value and kwargs.get("dtype") == self.dtype:
            self.casts.append(args[0])
        return func(*args, **kwargs)


@contextlib.contextmanager
def _watching_casts(value: torch.Tensor, dtype: torch.dtype) -> Iterator[list[torch.Tensor]]:
    """The casts of `value` to `dtype` made inside, in `value`'s fake mode."""
    fake_mode = getattr(value, "fake_mode", None)
    with fake_mode if fake_mode is not None else contextlib.nullcontext(), _CastWatch(value, dtype) as watch:
        yield watch.casts


def _cast_value(value: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """The fake value of `value` cast to `dtype` (the inserted cast's meta)."""
    fake_mode = getattr(value, "fake_mode", None)
    with fake_mode if fake_mode is not None else contextlib.nullcontext():
        return value.to(dtype)
